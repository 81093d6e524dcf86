/* nvswitch benchmark: simulated port-cycles per wall-second at 64 ports and
 * full load (every input offers a flit every cycle, uniform destinations).
 *   core:      the C crossbar core alone, stepped by a credit-respecting driver
 *   component: the whole kernel experiment (endpoints, links with credits,
 *              the nvswitch component's clock handler, sinks)
 *   memory:    the component with latencies recorded (as nvswitch_uniform
 *              records them) at RSS_SHORT and RSS_LONG cycles, each in a
 *              process of its own, its peak RSS (ru_maxrss) taken by wait4:
 *              memory must not grow with simulated time, so the two must
 *              agree within RSS_AGREE; the program exits 1 if they do not.
 * Writes the "nvswitch" object into reports/bench.json (sim_bench_write).
 * Usage: nvswitch_bench [bench.json path] [cycles]
 *        nvswitch_bench --component CYCLES   (one memory run; what the bench forks) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cJSON.h"
#include "tb/nvs/nvs_experiment.h"
#include "models/nvswitch/xbar_core.h"
#include "sim/sim.h"

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of this process: on a shared machine the wall clock also counts
 * other people's work, so both are reported. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The core alone: per (input, output) credit counters like the upstream's. */
static double bench_core(int n, int depth, uint64_t cycles, double *thr, double *cpu_rate)
{
    xbar_core_cfg cfg;
    xbar_core_cfg_default(&cfg, n);
    cfg.depth = depth;
    xbar_core *c = xbar_core_new(&cfg);
    static uint16_t cred[64][64];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) cred[i][j] = (uint16_t)depth;
    /* A xorshift64* stream inline (Lemire's multiply-shift for the range),
     * so the loop times the core more than the PRNG. */
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    uint64_t delivered = 0;
    double t0 = wall_now(), c0 = cpu_now();
    for (uint64_t t = 0; t < cycles; t++) {
        in.valid = 0;
        for (int i = 0; i < n; i++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            int j = (int)(((x * 0x2545F4914F6CDD1DULL) >> 32) * (uint64_t)n >> 32);
            if (!cred[i][j]) continue;
            cred[i][j]--;
            in.valid |= 1ULL << i;
            in.in[i].data = t;
            in.in[i].dest_mask = 1ULL << j;
        }
        xbar_core_step(c, &in, &out);
        delivered += (uint64_t)__builtin_popcountll(out.valid);
        for (uint64_t m = out.credit; m; m &= m - 1) {
            int i = __builtin_ctzll(m);
            cred[i][out.credit_queue[i]]++;
        }
    }
    double dt = wall_now() - t0;
    *cpu_rate = (double)cycles * n / (cpu_now() - c0);
    *thr = (double)delivered / ((double)cycles * n);
    xbar_core_free(c);
    return (double)cycles * n / dt;
}

/* The component: store-and-forward packets of a header + 256 B in 16 B
 * flits (17 flits), credits returned per packet's worth, 64-flit VOQs. */
static void component_cfg(nvs_uniform_cfg *u, int n, uint64_t cycles, bool record_latency)
{
    memset(u, 0, sizeof *u);
    xbar_core_cfg_default(&u->net.sw.core, n);
    u->net.sw.core.depth = 64;
    u->net.sw.core.fanout_read = 1;
    u->net.sw.saf = true;
    u->net.sw.credit_batch = 17;
    u->net.port_GBps = 25;
    u->net.flit_bytes = 16;
    u->net.link_latency_ns = 1;
    u->load = 1.0;
    u->pattern = TRAFFIC_UNIFORM;
    u->pkt_flits = 17;
    u->cycles = cycles;
    u->warmup = u->cycles / 10;
    u->seed = 1;
    u->record_latency = record_latency;
}

static int run_component(const nvs_uniform_cfg *u, nvs_uniform_result *res)
{
    char why[256];
    sim_kernel *k = sim_kernel_new();
    int rc = nvs_run_uniform(k, u, res, why, sizeof why);
    if (rc != 0) fprintf(stderr, "nvswitch_bench: %s\n", why);
    sim_kernel_free(k);
    return rc;
}

#define RSS_SHORT 200000ULL
#define RSS_LONG 2000000ULL
#define RSS_AGREE 0.20   /* issue 16: the two peaks agree within 20 % */

/* Peak RSS in MB of `self --component cycles`, a process of its own (so no
 * other run's memory counts); 0 if it failed. Forked before this process
 * allocates anything: the copy that execs is small. */
static double component_peak_rss_mb(const char *self, uint64_t cycles, double *wall_s)
{
    char arg[32];
    snprintf(arg, sizeof arg, "%" PRIu64, cycles);
    double t0 = wall_now();
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        execl(self, self, "--component", arg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "nvswitch_bench: the %" PRIu64 "-cycle memory run failed (status %d)\n", cycles, status);
        return 0;
    }
    *wall_s = wall_now() - t0;
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
    const int n = 64;
    if (argc == 3 && strcmp(argv[1], "--component") == 0) {
        nvs_uniform_cfg u;
        component_cfg(&u, n, strtoull(argv[2], NULL, 10), true);
        nvs_uniform_result res;
        if (run_component(&u, &res) != 0) return 2;
        printf("component %s cycles: throughput %.4f, %" PRIu64 " latency samples, backlog %" PRIu64 " copies\n", argv[2],
               res.throughput, (uint64_t)res.latency_samples, (uint64_t)res.backlog_end);
        return 0;
    }
    const char *path = argc > 1 ? argv[1] : "reports/bench.json";
    uint64_t cycles = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;

    double wall_short = 0, wall_long = 0;
    const double rss_short = component_peak_rss_mb("/proc/self/exe", RSS_SHORT, &wall_short);
    const double rss_long = component_peak_rss_mb("/proc/self/exe", RSS_LONG, &wall_long);
    if (rss_short <= 0 || rss_long <= 0) return 1;
    const double rss_ratio = rss_long / rss_short;
    const bool rss_agree = rss_ratio <= 1 + RSS_AGREE && rss_ratio >= 1 / (1 + RSS_AGREE);

    double core_thr, core_cpu_rate;
    double core_rate = bench_core(n, 64, cycles, &core_thr, &core_cpu_rate);

    nvs_uniform_cfg u;
    component_cfg(&u, n, cycles / 2, false);
    nvs_uniform_result res;
    double c0 = cpu_now();
    if (run_component(&u, &res) != 0) return 2;
    double comp_cpu_s = cpu_now() - c0; /* includes building and the drain: a lower bound on the rate */
    double comp_rate = (double)res.switch_cycles * n / res.wall_s;

    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "port_cycles_per_s", comp_rate);
    cJSON_AddNumberToObject(o, "core_port_cycles_per_s", core_rate);
    cJSON_AddNumberToObject(o, "port_cycles_per_cpu_s", (double)res.switch_cycles * n / comp_cpu_s);
    cJSON_AddNumberToObject(o, "core_port_cycles_per_cpu_s", core_cpu_rate);
    cJSON_AddNumberToObject(o, "ports", n);
    cJSON_AddNumberToObject(o, "component_throughput", res.throughput);
    cJSON_AddNumberToObject(o, "core_throughput", core_thr);
    cJSON_AddNumberToObject(o, "target_port_cycles_per_s", 50e6);
    cJSON_AddStringToObject(o, "component_config", "64 ports, voq depth 64, islip-1, load 1.0 uniform, saf 17-flit packets, credit_batch 17");
    cJSON_AddStringToObject(o, "core_config", "64 ports, voq depth 64, islip-1, a flit offered at every input every cycle");
    cJSON_AddNumberToObject(o, "peak_rss_mb_200k", rss_short);
    cJSON_AddNumberToObject(o, "peak_rss_mb_2M", rss_long);
    cJSON_AddNumberToObject(o, "peak_rss_ratio_2M_to_200k", rss_ratio);
    cJSON_AddBoolToObject(o, "peak_rss_agree", rss_agree);
    cJSON_AddStringToObject(o, "peak_rss_config",
                            "the component config with latencies recorded, 200000 and 2000000 cycles, one process each (ru_maxrss); "
                            "must agree within 20 %");
    printf("nvswitch: peak RSS of the component with latencies recorded: %.1f MB at %llu cycles (%.1f s), %.1f MB at %llu "
           "cycles (%.1f s): ratio %.3f (must be within 1/%.2f..%.2f)\n",
           rss_short, RSS_SHORT, wall_short, rss_long, RSS_LONG, wall_long, rss_ratio, 1 + RSS_AGREE, 1 + RSS_AGREE);
    printf("nvswitch: component %.1f M port-cycles/s wall, %.1f M per CPU-s (throughput %.3f); core alone %.1f M wall, %.1f M per CPU-s (throughput %.3f)\n",
           comp_rate / 1e6, (double)res.switch_cycles * n / comp_cpu_s / 1e6, res.throughput, core_rate / 1e6,
           core_cpu_rate / 1e6, core_thr);
    if (sim_bench_write(path, "nvswitch", o) != 0) return 1;
    if (!rss_agree) {
        fprintf(stderr, "nvswitch_bench: peak RSS grows with simulated time: %.1f MB at %llu cycles vs %.1f MB at %llu (ratio %.3f, "
                        "allowed within 20 %%)\n", rss_long, RSS_LONG, rss_short, RSS_SHORT, rss_ratio);
        return 1;
    }
    return 0;
}
