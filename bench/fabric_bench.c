/* The "fabric" object of reports/bench.json (issue 17): fattree:8 (128
 * endpoints, 80 switches), 400 GbE links, uniform load 0.7, 4 KB packets,
 * trace off. Runs `simrun fabric_traffic` as child processes -- a short and a
 * 10x longer run, each its own process so its peak RSS (wait4) is its own --
 * and reads each report's hops_per_wall_s and pkts_per_wall_s: the packet-link
 * traversals and packets delivered in the measurement window per wall second
 * of the whole run (set-up, warm-up and drain included: a lower bound).
 * On a shared machine wall time counts other jobs' time too, so it also gives
 * rates per CPU second of the child (ru_utime + ru_stime from wait4): for the
 * whole run, and for the simulation loop alone as the difference of the two
 * runs ((hops_long - hops_short) / (cpu_long - cpu_short): set-up, the
 * zero-load run and the report cost the same in both and cancel).
 * Instructions per hop (the machine's own noise removed; this VM has no
 * hardware counters for perf) come from callgrind, by hand:
 *   valgrind --tool=callgrind --toggle-collect='sim_run*' build/bin/simrun --quiet fabric_traffic trace=0
 *     topo=fattree:8 link=eth-400g pattern=uniform load=0.7 pkt_bytes=4096 duration_us=100 warmup_us=10
 * and the instruction total over the report's window hops x duration / (duration - warmup).
 *   fabric_bench SIMRUN BENCH_JSON [DURATION_US]
 * Fails (exit 1) if a run fails or memory is not flat in run length (the
 * long run's peak RSS more than 20 % above the short one's). */
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define RSS_AGREE 0.20

typedef struct run_result { double hops_per_s, pkts_per_s, wall_s, cpu_s, hops, peak_rss_mb, sim_us; bool pass; } run_result;

static double metric(const cJSON *rep, const char *name)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rep, "metrics"), name);
    if (!cJSON_IsNumber(m)) {
        fprintf(stderr, "fabric_bench: the fabric_traffic report has no metric '%s'\n", name);
        return -1;
    }
    return m->valuedouble;
}

static int run_once(const char *simrun, const char *out_dir, double duration_us, run_result *r)
{
    char dur[64], warm[64];
    snprintf(dur, sizeof dur, "duration_us=%g", duration_us);
    snprintf(warm, sizeof warm, "warmup_us=%g", duration_us / 10);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl(simrun, simrun, "--quiet", "--out", out_dir, "fabric_traffic", "trace=0", "topo=fattree:8", "link=eth-400g",
              "pattern=uniform", "load=0.7", "pkt_bytes=4096", "routing=ecmp", dur, warm, (char *)NULL);
        fprintf(stderr, "fabric_bench: cannot run %s: %s\n", simrun, strerror(errno));
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        fprintf(stderr, "fabric_bench: the %g us run failed (status %d)\n", duration_us, status);
        return -1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/reports/fabric_traffic.json", out_dir);
    cJSON *rep = sim_json_read_file(path);
    if (!rep) {
        fprintf(stderr, "fabric_bench: cannot read %s\n", path);
        return -1;
    }
    r->hops_per_s = metric(rep, "hops_per_wall_s");
    r->pkts_per_s = metric(rep, "pkts_per_wall_s");
    r->wall_s = metric(rep, "wall_s");
    r->pass = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "pass"));
    r->peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
    r->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
               1e-6 * (double)ru.ru_stime.tv_usec;
    r->hops = r->hops_per_s * r->wall_s;  /* the window's packet hops */
    r->sim_us = duration_us;
    cJSON_Delete(rep);
    if (r->hops_per_s <= 0 || r->pkts_per_s <= 0 || r->wall_s <= 0) return -1;
    if (!r->pass) fprintf(stderr, "fabric_bench: a check of the %g us run failed\n", duration_us);
    return r->pass ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fabric_bench SIMRUN BENCH_JSON [DURATION_US]\n");
        return 2;
    }
    const double duration_us = argc > 3 ? atof(argv[3]) : 50;
    if (!(duration_us > 0)) {
        fprintf(stderr, "fabric_bench: DURATION_US must be > 0 (got '%s')\n", argv[3]);
        return 2;
    }
    char tmpl[] = "/tmp/fabric_bench.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) return 1;
    run_result shortr = { 0 }, longr = { 0 };
    if (run_once(argv[1], dir, duration_us, &shortr) != 0) return 1;
    if (run_once(argv[1], dir, 10 * duration_us, &longr) != 0) return 1;
    const double ratio = longr.peak_rss_mb / shortr.peak_rss_mb;
    const bool flat = ratio <= 1 + RSS_AGREE;

    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "pkt_hops_per_s", longr.hops_per_s);
    cJSON_AddNumberToObject(o, "pkts_per_s", longr.pkts_per_s);
    /* per CPU second: whole child process (a lower bound), and the loop alone (difference of the two runs) */
    const double d_cpu = longr.cpu_s - shortr.cpu_s, d_hops = longr.hops - shortr.hops;
    const double hops_per_cpu_s = longr.cpu_s > 0 ? longr.hops / longr.cpu_s : 0;
    const double loop_hops_per_cpu_s = d_cpu > 0 ? d_hops / d_cpu : 0;
    cJSON_AddNumberToObject(o, "pkt_hops_per_cpu_s", hops_per_cpu_s);
    cJSON_AddNumberToObject(o, "loop_pkt_hops_per_cpu_s", loop_hops_per_cpu_s);
    cJSON_AddNumberToObject(o, "cpu_s", longr.cpu_s);
    cJSON_AddNumberToObject(o, "cpu_s_short", shortr.cpu_s);
    cJSON_AddNumberToObject(o, "pkt_hops", longr.hops);
    cJSON_AddNumberToObject(o, "peak_rss_mb", longr.peak_rss_mb);
    cJSON_AddNumberToObject(o, "peak_rss_mb_short", shortr.peak_rss_mb);
    cJSON_AddNumberToObject(o, "peak_rss_ratio_long_to_short", ratio);
    cJSON_AddBoolToObject(o, "peak_rss_flat", flat);
    cJSON_AddNumberToObject(o, "target_pkt_hops_per_s", 10e6);
    cJSON_AddNumberToObject(o, "wall_s", longr.wall_s);
    cJSON_AddNumberToObject(o, "sim_us", longr.sim_us);
    cJSON_AddStringToObject(o, "config", "fattree:8 (128 endpoints, 80 switches), eth-400g, uniform load 0.7, 4096 B payload, "
                                         "ecmp, trace off; rates from the longer run; peak RSS of each run (ru_maxrss)");
    printf("fabric: %.2f M packet hops/s wall, %.2f M per CPU s (loop alone %.2f M); %.2f M packets/s (%.0f us simulated in "
           "%.2f s wall, %.2f s CPU); peak RSS %.1f MB (%.0f us) vs %.1f MB "
           "(%.0f us): %s\n",
           longr.hops_per_s / 1e6, hops_per_cpu_s / 1e6, loop_hops_per_cpu_s / 1e6, longr.pkts_per_s / 1e6, longr.sim_us,
           longr.wall_s, longr.cpu_s,
           longr.peak_rss_mb, longr.sim_us, shortr.peak_rss_mb, shortr.sim_us, flat ? "flat" : "NOT flat");
    int rc = sim_bench_write(argv[2], "fabric", o) == 0 && flat ? 0 : 1;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "fabric_bench: could not remove %s\n", dir);
    return rc;
}
