/* nvswitch benchmark: simulated port-cycles per wall-second at 64 ports and
 * full load (every input offers a flit every cycle, uniform destinations).
 *   core:      the C crossbar core alone, stepped by a credit-respecting driver
 *   component: the whole kernel experiment (endpoints, links with credits,
 *              the nvswitch component's clock handler, sinks)
 * Writes the "nvswitch" object into reports/bench.json (sim_bench_write).
 * Usage: nvswitch_bench [bench.json path] [cycles] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cJSON.h"
#include "models/nvswitch/nvs_experiment.h"
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

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "reports/bench.json";
    uint64_t cycles = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
    const int n = 64;
    double core_thr, core_cpu_rate;
    double core_rate = bench_core(n, 64, cycles, &core_thr, &core_cpu_rate);

    /* The component: store-and-forward packets of a header + 256 B in 16 B
     * flits (17 flits), credits returned per packet's worth, 64-flit VOQs. */
    nvs_uniform_cfg u;
    memset(&u, 0, sizeof u);
    xbar_core_cfg_default(&u.net.sw.core, n);
    u.net.sw.core.depth = 64;
    u.net.sw.core.fanout_read = 1;
    u.net.sw.saf = true;
    u.net.sw.credit_batch = 17;
    u.net.port_GBps = 25;
    u.net.flit_bytes = 16;
    u.net.link_latency_ns = 1;
    u.load = 1.0;
    u.pattern = TRAFFIC_UNIFORM;
    u.pkt_flits = 17;
    u.cycles = cycles / 2;
    u.warmup = u.cycles / 10;
    u.seed = 1;
    u.record_latency = false;
    nvs_uniform_result res;
    char why[256];
    sim_kernel *k = sim_kernel_new();
    double c0 = cpu_now();
    if (nvs_run_uniform(k, &u, &res, why, sizeof why) != 0) {
        fprintf(stderr, "nvswitch_bench: %s\n", why);
        return 2;
    }
    double comp_cpu_s = cpu_now() - c0; /* includes building and the drain: a lower bound on the rate */
    sim_kernel_free(k);
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
    printf("nvswitch: component %.1f M port-cycles/s wall, %.1f M per CPU-s (throughput %.3f); core alone %.1f M wall, %.1f M per CPU-s (throughput %.3f)\n",
           comp_rate / 1e6, (double)res.switch_cycles * n / comp_cpu_s / 1e6, res.throughput, core_rate / 1e6,
           core_cpu_rate / 1e6, core_thr);
    if (sim_bench_write(path, "nvswitch", o) != 0) return 1;
    return 0;
}
