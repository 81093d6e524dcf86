/* rtl_bench: speed of the Verilated crossbar driven from C (make bench).
 * Writes the object "rtl_switch" into reports/bench.json:
 *   cycles_per_s         16-port switch, uniform traffic at full load, no tracing
 *   cycles_per_s_traced  the same with every RTL port sampled into an FST
 * Usage: rtl_bench [cycles] [bench.json] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "sim/sim.h"
#include "xbar_rtl.h"
#include "xbar_stim.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Cycles per second of the bare loop: stimulus + bridge step + credits. */
static double run(unsigned ports, unsigned iters, uint64_t cycles, sim_trace *tr, uint64_t *delivered)
{
    xbar_rtl_cfg rc = { .ports = ports, .iters = iters, .latency = 1, .depth = 16 };
    char why[256];
    xbar_rtl *x = xbar_rtl_new(&rc, why, sizeof why);
    if (!x) {
        fprintf(stderr, "rtl_bench: %s\n", why);
        exit(2);
    }
    if (tr) xbar_rtl_trace_open(x, tr, "rtl", NULL, 0, 1000);
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = ports, .depth = 16, .load = 1.0, .pattern = XBAR_PAT_UNIFORM, .seed = 1 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    uint64_t got = 0;
    double t0 = now_s();
    for (uint64_t c = 0; c < cycles; c++) {
        xbar_stim_inputs(&st, &in);
        xbar_rtl_step(x, &in, &out);
        xbar_stim_credits(&st, &out);
        got += (uint64_t)__builtin_popcountll(out.valid);
    }
    double dt = now_s() - t0;
    xbar_stim_free(&st);
    xbar_rtl_free(x);
    *delivered = got;
    return (double)cycles / dt;
}

int main(int argc, char **argv)
{
    uint64_t cycles = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    const char *json = argc > 2 ? argv[2] : "reports/bench.json";
    uint64_t got = 0, got_tr = 0;
    double cps = run(16, 1, cycles, NULL, &got);
    printf("rtl_bench: 16 ports, iSLIP-1, uniform load 1.0: %.3f M cycles/s (throughput %.4f flits/port/cycle)\n",
           cps / 1e6, (double)got / (double)cycles / 16.0);
    double cps4 = run(16, 4, cycles, NULL, &got);
    printf("rtl_bench: 16 ports, iSLIP-4: %.3f M cycles/s (throughput %.4f)\n", cps4 / 1e6, (double)got / (double)cycles / 16.0);

    uint64_t tcycles = cycles / 10 ? cycles / 10 : 1;
    sim_trace *tr = sim_trace_open(NULL, "build_rtl_bench.fst");
    double cps_tr = tr ? run(16, 1, tcycles, tr, &got_tr) : 0;
    sim_trace_close(tr);
    remove("build_rtl_bench.fst");
    printf("rtl_bench: traced: %.3f M cycles/s\n", cps_tr / 1e6);

    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ports", 16);
    cJSON_AddNumberToObject(o, "cycles", (double)cycles);
    cJSON_AddNumberToObject(o, "cycles_per_s", cps);
    cJSON_AddNumberToObject(o, "cycles_per_s_iters4", cps4);
    cJSON_AddNumberToObject(o, "cycles_per_s_traced", cps_tr);
    if (sim_bench_write(json, "rtl_switch", o) != 0) return 1;
    return 0;
}
