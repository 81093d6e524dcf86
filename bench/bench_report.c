/* Runs the kernel_ring benchmark side by side: our kernel and SystemC, timed
 * and delta, median of 3 runs each, and writes the "kernel_ring" object of
 * reports/bench.json. usage: bench_report BIN_DIR [N K T] */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/report.h"

typedef struct run_result {
    double rate_mps;           /* million events per second */
    unsigned long long simtime_ps;
    long events;
    double peak_rss_mb;
    int ok;
} run_result;

/* Runs argv, captures its one output line and its peak RSS. */
static run_result run_once(char *const argv[])
{
    run_result r = { 0 };
    int fd[2];
    if (pipe(fd)) return r;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    char buf[1024] = "";
    size_t got = 0;
    ssize_t n;
    while ((n = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)n;
    buf[got] = 0;
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    const char *rate = strstr(buf, "rate="), *sim = strstr(buf, "simtime_ps="), *ev = strstr(buf, "events=");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && rate && sim && ev) {
        r.rate_mps = atof(rate + 5);
        r.simtime_ps = strtoull(sim + 11, NULL, 10);
        r.events = atol(ev + 7);
        r.peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
        r.ok = 1;
    } else {
        fprintf(stderr, "bench: %s failed: %s\n", argv[0], buf);
    }
    return r;
}

static int by_rate(const void *a, const void *b)
{
    double x = ((const run_result *)a)->rate_mps, y = ((const run_result *)b)->rate_mps;
    return (x > y) - (x < y);
}

static run_result median3(const char *bin, const char *mode, const char *n, const char *k, const char *t)
{
    run_result rs[3];
    for (int i = 0; i < 3; i++) {
        char *argv[] = { (char *)bin, (char *)mode, (char *)n, (char *)k, (char *)t, NULL };
        rs[i] = run_once(argv);
        if (!rs[i].ok) return rs[i];
    }
    qsort(rs, 3, sizeof rs[0], by_rate);
    return rs[1];
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 5) {
        fprintf(stderr, "usage: bench_report BIN_DIR [N K T]\n");
        return 2;
    }
    const char *n = argc == 5 ? argv[2] : "1024", *k = argc == 5 ? argv[3] : "10000000", *t = argc == 5 ? argv[4] : "64";
    char ours[4096], theirs[4096];
    snprintf(ours, sizeof ours, "%s/ring_kernel", argv[1]);
    snprintf(theirs, sizeof theirs, "%s/ring_systemc", argv[1]);
    int have_systemc = access(theirs, X_OK) == 0;

    run_result kt = median3(ours, "timed", n, k, t), kd = median3(ours, "delta", n, k, t);
    if (!kt.ok || !kd.ok) return 1;
    run_result st = { 0 }, sd = { 0 };
    if (have_systemc) {
        st = median3(theirs, "timed", n, k, t);
        sd = median3(theirs, "delta", n, k, t);
    } else {
        fprintf(stderr, "bench: %s not built (no SystemC); only our kernel is measured\n", theirs);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", atof(n));
    cJSON_AddNumberToObject(o, "k", atof(k));
    cJSON_AddNumberToObject(o, "t", atof(t));
    cJSON_AddNumberToObject(o, "events_per_s_timed", kt.rate_mps * 1e6);
    cJSON_AddNumberToObject(o, "events_per_s_delta", kd.rate_mps * 1e6);
    cJSON_AddNumberToObject(o, "peak_rss_mb", kt.peak_rss_mb > kd.peak_rss_mb ? kt.peak_rss_mb : kd.peak_rss_mb);
    cJSON_AddNumberToObject(o, "simtime_ps_timed", (double)kt.simtime_ps);
    int pass = 1;
    if (st.ok && sd.ok) {
        double rt = kt.rate_mps / st.rate_mps, rd = kd.rate_mps / sd.rate_mps;
        int equal = kt.simtime_ps == st.simtime_ps && kd.simtime_ps == sd.simtime_ps && kt.events == st.events &&
                    kd.events == sd.events;
        cJSON_AddNumberToObject(o, "systemc_events_per_s_timed", st.rate_mps * 1e6);
        cJSON_AddNumberToObject(o, "systemc_events_per_s_delta", sd.rate_mps * 1e6);
        cJSON_AddNumberToObject(o, "ratio_timed", rt);
        cJSON_AddNumberToObject(o, "ratio_delta", rd);
        cJSON_AddBoolToObject(o, "simtime_equal", equal);
        cJSON_AddNumberToObject(o, "systemc_simtime_ps_timed", (double)st.simtime_ps);
        pass = equal && rt >= 3.0 && rd >= 6.0;
        printf("kernel_ring N=%s T=%s K=%s (median of 3)\n", n, t, k);
        printf("  timed: ours %7.1f M events/s  SystemC %6.1f M/s  ratio %5.2fx (target >= 3)\n", kt.rate_mps,
               st.rate_mps, rt);
        printf("  delta: ours %7.1f M events/s  SystemC %6.1f M/s  ratio %5.2fx (target >= 6)\n", kd.rate_mps,
               sd.rate_mps, rd);
        printf("  simulated end time: ours %llu ps, SystemC %llu ps (timed); delta %llu / %llu ps: %s\n", kt.simtime_ps,
               st.simtime_ps, kd.simtime_ps, sd.simtime_ps, equal ? "equal" : "DIFFERENT");
        printf("  peak RSS %.1f MB\n", kt.peak_rss_mb);
    } else {
        printf("kernel_ring: ours %.1f M/s timed, %.1f M/s delta (SystemC not measured)\n", kt.rate_mps, kd.rate_mps);
        pass = 0;
    }
    cJSON_AddBoolToObject(o, "targets_met", pass);
    if (sim_bench_write("reports/bench.json", "kernel_ring", o)) return 1;
    return 0;
}
