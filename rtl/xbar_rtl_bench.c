/* rtl_bench: speed of the Verilated crossbar driven from C (make bench).
 * Writes the object "rtl_switch" into reports/bench.json:
 *   cycles_per_s          16-port switch (iSLIP-1, VOQ depth 32), uniform traffic at full
 *                         load with credits, no tracing: the bare loop (stimulus, bridge
 *                         step, credits), cycles per CPU second of the loop
 *   cycles_per_s_wall     the same per wall-clock second (lower on a loaded machine)
 *   cycles_per_s_traced   the bare loop with every RTL port sampled into an FST
 *   model_rtl_overhead    bare cycles/s divided by nvswitch_uniform's switch cycles/s with
 *                         model=rtl (the kernel, links, traffic and endpoints around the RTL)
 *   model_both_overhead   the same with model=both (C core + RTL in lock-step)
 *   model_tl_cycles_per_s the C core in the same component, for reference
 *   model_rtl_overhead_floor  bare cycles/s over model_tl_cycles_per_s: the overhead the
 *                         component would show around a core that cost nothing (its
 *                         kernel, links, traffic and endpoints alone)
 *   model_rtl_vs_parts    model=rtl's time per cycle over the sum of its parts measured
 *                         alone (model=tl's component + the bare loop): above 1 is time the
 *                         co-simulation adds beyond the component and the RTL themselves
 *   model_rtl_variant     the Verilated variant these ran ("ports:latency:iters:fanout_read")
 *   model_rtl_overhead_packets (_floor_packets)  the same with 17-flit store-and-forward
 *                         packets (the nvswitch bench's workload); the fields above use
 *                         1-flit cells, one link message and credit per flit
 *   ports64               the same bare loop, model=tl and model=rtl at 64 ports (NVSwitch 3's
 *                         radix; a variant Verilated on first use unless prebuilt)
 * Usage: rtl_bench [cycles] [bench.json] [bare | component=tl|rtl|both [ports]]
 * With "bare", only the bare loop runs and nothing is written (for profiling:
 * valgrind --tool=callgrind build/bin/rtl_bench 20000 - bare); "component=..."
 * runs one component alone, likewise. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "tb/nvs/nvs_experiment.h"
#include "sim/sim.h"
#include "xbar_rtl.h"
#include "xbar_stim.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct loop_speed {
    double cpu_cps, wall_cps, throughput;
    char variant[48]; /* ports:latency:iters:fanout_read of the model that ran */
} loop_speed;

/* The bare loop: stimulus + bridge step + credits. */
static loop_speed run_bare(unsigned ports, unsigned iters, uint64_t cycles, sim_trace *tr)
{
    xbar_rtl_cfg rc = { .ports = ports, .iters = iters, .latency = 1, .depth = 32 };
    char why[256];
    xbar_rtl *x = xbar_rtl_new(&rc, why, sizeof why);
    if (!x) {
        fprintf(stderr, "rtl_bench: %s\n", why);
        exit(2);
    }
    if (tr) {
        xbar_rtl_trace_open(x, tr, "rtl", NULL, 0, 1000);
        sim_trace_freeze(tr);
    }
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = ports, .depth = 32, .load = 1.0, .pattern = XBAR_PAT_UNIFORM, .seed = 1 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    uint64_t got = 0;
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
    for (uint64_t c = 0; c < cycles; c++) {
        xbar_stim_inputs(&st, &in);
        xbar_rtl_step(x, &in, &out);
        xbar_stim_credits(&st, &out);
        got += (uint64_t)__builtin_popcountll(out.valid);
    }
    loop_speed s = { (double)cycles / (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0), (double)cycles / (clock_s(CLOCK_MONOTONIC) - w0),
                     (double)got / (double)cycles / ports, "" };
    const xbar_rtl_variant *v = xbar_rtl_variant_of(x);
    snprintf(s.variant, sizeof s.variant, "%u:%u:%u:%u", v->ports, v->latency, v->iters_max, v->fanout_read);
    xbar_stim_free(&st);
    xbar_rtl_free(x);
    return s;
}

static void *rtl_core_new(const xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops, char *why, size_t why_n)
{
    return xbar_rtl_core_new(cfg, trace, ops, why, why_n);
}

/* nvswitch_uniform's experiment with a given core: switch cycles per CPU second.
 * cells: 1-flit packets, each a link message with its credit (the worst case
 * for the surroundings' per-message cost); otherwise NVLink-sized packets
 * (256 B payload: 17 flits), store-and-forward, credits returned per packet,
 * as the nvswitch bench runs the component. */
static double run_component_w(nvs_model model, unsigned ports, uint64_t cycles, bool cells, double *throughput)
{
    nvs_uniform_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    xbar_core_cfg_default(&cfg.net.sw.core, (int)ports);
    cfg.net.sw.core.depth = 32;
    cfg.net.sw.core.iters = 1;
    cfg.net.sw.core.fanout_read = 0;
    cfg.net.sw.model = model;
    cfg.net.sw.credit_batch = cells ? 1 : 17;
    cfg.net.sw.saf = !cells;
    cfg.net.port_GBps = 25;
    cfg.net.flit_bytes = 16;
    cfg.net.link_latency_ns = 10;
    cfg.load = 1.0;
    cfg.pattern = TRAFFIC_UNIFORM;
    cfg.pkt_flits = cells ? 1 : 17;
    cfg.cycles = cycles;
    cfg.warmup = cycles / 10;
    cfg.seed = 1;
    sim_kernel *k = sim_kernel_new();
    nvs_uniform_result r;
    char why[256];
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    if (nvs_run_uniform(k, &cfg, &r, why, sizeof why) != 0) {
        fprintf(stderr, "rtl_bench: %s\n", why);
        exit(2);
    }
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    sim_kernel_free(k);
    *throughput = r.throughput;
    return (double)r.switch_cycles / cpu;
}

static double run_component(nvs_model model, unsigned ports, uint64_t cycles, double *throughput)
{
    return run_component_w(model, ports, cycles, true, throughput);
}

int main(int argc, char **argv)
{
    uint64_t cycles = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    const char *json = argc > 2 ? argv[2] : "reports/bench.json";
    nvswitch_register_rtl(rtl_core_new);

    if (argc > 3 && strncmp(argv[3], "component=", 10) == 0) { /* profiling: one component run only */
        double thr;
        const char *m = argv[3] + 10;
        nvs_model model = strcmp(m, "rtl") == 0 ? NVS_MODEL_RTL : strcmp(m, "both") == 0 ? NVS_MODEL_BOTH : NVS_MODEL_TL;
        const unsigned ports = argc > 4 ? (unsigned)atoi(argv[4]) : 16;
        printf("rtl_bench: component model=%s ports=%u: %.3f M cycles/s CPU\n", m, ports, run_component(model, ports, cycles, &thr) / 1e6);
        return 0;
    }
    loop_speed bare = run_bare(16, 1, cycles, NULL);
    printf("rtl_bench: bare loop, 16 ports, iSLIP-1, uniform load 1.0: %.3f M cycles/s CPU, %.3f M cycles/s wall "
           "(throughput %.4f)\n", bare.cpu_cps / 1e6, bare.wall_cps / 1e6, bare.throughput);
    if (argc > 3 && strcmp(argv[3], "bare") == 0) return 0;
    loop_speed bare4 = run_bare(16, 4, cycles / 2, NULL);
    printf("rtl_bench: bare loop, iSLIP-4 model: %.3f M cycles/s CPU (throughput %.4f)\n", bare4.cpu_cps / 1e6, bare4.throughput);

    uint64_t tcycles = cycles / 20 ? cycles / 20 : 1;
    char fst[] = "/tmp/rtl_bench_XXXXXX.fst";
    int fd = mkstemps(fst, 4);
    sim_trace *tr = fd >= 0 ? sim_trace_open(NULL, fst) : NULL;
    loop_speed traced = { 0, 0, 0, "" };
    if (tr) traced = run_bare(16, 1, tcycles, tr);
    sim_trace_close(tr);
    if (fd >= 0) remove(fst);
    printf("rtl_bench: traced: %.3f M cycles/s CPU\n", traced.cpu_cps / 1e6);

    uint64_t ccycles = cycles / 5 ? cycles / 5 : 1;
    double thr_tl, thr_rtl, thr_both;
    double cps_tl = run_component(NVS_MODEL_TL, 16, ccycles, &thr_tl);
    double cps_rtl = run_component(NVS_MODEL_RTL, 16, ccycles, &thr_rtl);
    double cps_both = run_component(NVS_MODEL_BOTH, 16, ccycles, &thr_both);
    printf("rtl_bench: nvswitch_uniform component (16 ports, load 1.0): tl %.3f, rtl %.3f, both %.3f M cycles/s CPU; "
           "throughput tl %.4f rtl %.4f both %.4f\n", cps_tl / 1e6, cps_rtl / 1e6, cps_both / 1e6, thr_tl, thr_rtl, thr_both);
    printf("rtl_bench: overhead vs the bare Verilated loop (variant %s): model=rtl %.2fx, model=both %.2fx; "
           "floor (model=tl) %.2fx; model=rtl over its parts %.2f\n", bare.variant, bare.cpu_cps / cps_rtl, bare.cpu_cps / cps_both,
           bare.cpu_cps / cps_tl, (1 / cps_rtl) / (1 / cps_tl + 1 / bare.cpu_cps));

    /* The same with NVLink-sized store-and-forward packets: the RTL does the
     * same work per cycle (a flit per input), the surroundings one message
     * per packet instead of per flit. */
    double thr_tl_p, thr_rtl_p;
    double cps_tl_p = run_component_w(NVS_MODEL_TL, 16, ccycles, false, &thr_tl_p);
    double cps_rtl_p = run_component_w(NVS_MODEL_RTL, 16, ccycles, false, &thr_rtl_p);
    printf("rtl_bench: 17-flit store-and-forward packets: tl %.3f, rtl %.3f M cycles/s CPU (throughput %.4f, %.4f); "
           "model=rtl overhead %.2fx, floor %.2fx\n", cps_tl_p / 1e6, cps_rtl_p / 1e6, thr_tl_p, thr_rtl_p,
           bare.cpu_cps / cps_rtl_p, bare.cpu_cps / cps_tl_p);

    /* 64 ports: the RTL's share grows with N^2 (allocator, crossbar), the
     * component's with N. The first run Verilates the variant (not timed). */
    const uint64_t c64 = cycles / 20 ? cycles / 20 : 1;
    loop_speed bare64 = run_bare(64, 1, c64, NULL);
    double thr64_tl, thr64_rtl;
    double cps64_tl = run_component(NVS_MODEL_TL, 64, c64, &thr64_tl);
    double cps64_rtl = run_component(NVS_MODEL_RTL, 64, c64, &thr64_rtl);
    printf("rtl_bench: 64 ports (variant %s): bare %.4f, component tl %.4f, rtl %.4f M cycles/s CPU; "
           "model=rtl overhead %.2fx, floor %.2fx, over its parts %.2f; throughput tl %.4f rtl %.4f\n", bare64.variant,
           bare64.cpu_cps / 1e6, cps64_tl / 1e6, cps64_rtl / 1e6, bare64.cpu_cps / cps64_rtl, bare64.cpu_cps / cps64_tl,
           (1 / cps64_rtl) / (1 / cps64_tl + 1 / bare64.cpu_cps), thr64_tl, thr64_rtl);

    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ports", 16);
    cJSON_AddNumberToObject(o, "cycles", (double)cycles);
    cJSON_AddNumberToObject(o, "cycles_per_s", bare.cpu_cps);
    cJSON_AddNumberToObject(o, "cycles_per_s_wall", bare.wall_cps);
    cJSON_AddNumberToObject(o, "cycles_per_s_iters4_model", bare4.cpu_cps);
    cJSON_AddNumberToObject(o, "cycles_per_s_traced", traced.cpu_cps);
    cJSON_AddNumberToObject(o, "model_tl_cycles_per_s", cps_tl);
    cJSON_AddNumberToObject(o, "model_rtl_cycles_per_s", cps_rtl);
    cJSON_AddNumberToObject(o, "model_both_cycles_per_s", cps_both);
    cJSON_AddNumberToObject(o, "model_rtl_overhead", bare.cpu_cps / cps_rtl);
    cJSON_AddNumberToObject(o, "model_both_overhead", bare.cpu_cps / cps_both);
    cJSON_AddNumberToObject(o, "model_rtl_overhead_floor", bare.cpu_cps / cps_tl);
    cJSON_AddNumberToObject(o, "model_rtl_vs_parts", (1 / cps_rtl) / (1 / cps_tl + 1 / bare.cpu_cps));
    cJSON_AddStringToObject(o, "model_rtl_variant", bare.variant);
    cJSON_AddNumberToObject(o, "model_rtl_cycles_per_s_packets", cps_rtl_p);
    cJSON_AddNumberToObject(o, "model_rtl_overhead_packets", bare.cpu_cps / cps_rtl_p);
    cJSON_AddNumberToObject(o, "model_rtl_overhead_floor_packets", bare.cpu_cps / cps_tl_p);
    cJSON *o64 = cJSON_AddObjectToObject(o, "ports64");
    cJSON_AddNumberToObject(o64, "cycles", (double)c64);
    cJSON_AddStringToObject(o64, "model_rtl_variant", bare64.variant);
    cJSON_AddNumberToObject(o64, "cycles_per_s", bare64.cpu_cps);
    cJSON_AddNumberToObject(o64, "model_tl_cycles_per_s", cps64_tl);
    cJSON_AddNumberToObject(o64, "model_rtl_cycles_per_s", cps64_rtl);
    cJSON_AddNumberToObject(o64, "model_rtl_overhead", bare64.cpu_cps / cps64_rtl);
    cJSON_AddNumberToObject(o64, "model_rtl_overhead_floor", bare64.cpu_cps / cps64_tl);
    cJSON_AddNumberToObject(o64, "model_rtl_vs_parts", (1 / cps64_rtl) / (1 / cps64_tl + 1 / bare64.cpu_cps));
    cJSON_AddNumberToObject(o, "target_cycles_per_s", 1e6);
    if (sim_bench_write(json, "rtl_switch", o) != 0) return 1;
    return 0;
}
