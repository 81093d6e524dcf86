/* The two switch experiments (shared by tb/nvswitch_*.c, the unit tests and
 * the benchmarks): N endpoints (models/traffic) joined to one nvswitch
 * (models/nvswitch) through links, run on a kernel, measured, then drained
 * so conservation can be checked exactly. Test code: it composes two models
 * (the library tb_nvs_experiment). */
#ifndef NVS_EXPERIMENT_H
#define NVS_EXPERIMENT_H

#include "models/nvswitch/nvswitch.h"
#include "models/traffic/endpoints.h"
#include "models/traffic/traffic.h"
#include "sim/kernel.h"
#include "sim/trace.h"

#include <stdbool.h>
#include <stdint.h>

/* Flits a packet may have: what both the switch and the endpoints take. */
#define NVS_EXP_MAX_FLITS (NVS_MAX_FLITS < TEP_MAX_FLITS ? NVS_MAX_FLITS : TEP_MAX_FLITS)

typedef struct nvs_net_cfg {
    nvswitch_cfg sw;          /* core config, model, saf, credit_batch */
    double port_GBps;         /* per port and direction */
    int flit_bytes;
    double link_latency_ns;   /* one way, each link */
} nvs_net_cfg;

typedef struct nvs_uniform_cfg {
    nvs_net_cfg net;
    double load;              /* offered flits per cycle per input */
    traffic_pattern pattern;
    double hotspot_frac;
    int pkt_flits;
    uint64_t cycles, warmup;
    uint64_t seed;
    bool record_latency;
    sim_trace *trace;
    uint32_t src_soft_pkts, src_hard_pkts; /* the sources' caps (tep_cfg): 0 = defaults */
} nvs_uniform_cfg;

typedef struct nvs_conservation {
    uint64_t copies_sent, copies_delivered;
    uint64_t dropped, duplicated, out_of_order;
    bool links_ok;
    bool drained;             /* every copy delivered, nothing left inside the switch */
    char links_why[256];
} nvs_conservation;

typedef struct nvs_uniform_result {
    double throughput, throughput_min_input, throughput_max_input;
    double per_input[64], per_output[64];
    double latency_avg_cycles, latency_p99_cycles, latency_min_cycles;
    uint64_t latency_samples;
    uint64_t backlog_end;     /* flit copies generated and not delivered at the end of the run */
    uint64_t source_cap_hits; /* source picks that may differ from an unbounded source's (tep.source_cap_hits) */
    double offered;
    nvs_conservation cons;
    uint64_t mismatches, cycles_compared;
    char first_mismatch[160];
    uint64_t switch_cycles;   /* core cycles stepped */
    sim_time_ps period_ps;
    double wall_s;            /* measured run (without drain) */
    sim_time_ps sim_time_ps;
    uint64_t sim_events;
} nvs_uniform_result;

typedef struct nvs_fanout_cfg {
    nvs_net_cfg net;
    int src, fanout;
    uint64_t bytes;
    bool multicast;
    uint32_t max_payload;
    double background;        /* offered load of the other ports, uniform destinations */
    uint64_t seed;
    sim_trace *trace;
} nvs_fanout_cfg;

typedef struct nvs_fanout_result {
    double completion_ns;
    double per_dest_GBps_min, per_dest_GBps_avg;
    double src_link_util;
    uint64_t copies_delivered;   /* destinations holding the whole message */
    uint64_t src_bytes_on_wire;
    nvs_conservation cons;
    uint64_t mismatches, cycles_compared;
    char first_mismatch[160];
    bool completed;
    sim_time_ps sim_time_ps;
    uint64_t sim_events;
} nvs_fanout_result;

/* Both return 0, or -1 with a message (bad configuration, unavailable model). */
int nvs_run_uniform(sim_kernel *k, const nvs_uniform_cfg *cfg, nvs_uniform_result *res, char *why, size_t why_n);
int nvs_run_fanout(sim_kernel *k, const nvs_fanout_cfg *cfg, nvs_fanout_result *res, char *why, size_t why_n);

/* The clock period for a port rate: one flit per cycle. */
sim_time_ps nvs_period_ps(int flit_bytes, double port_GBps);

/* The multicast speed-up the offered load allows for nvs_run_fanout (rules,
 * "Multicast fan-out read"), computed from the configuration alone: the
 * source link carries one flit per cycle; each of the ports-1 background
 * sources offers `background` flits per cycle spread uniformly over all
 * `ports` outputs, so a destination output has b = background*(ports-1)/ports
 * of its cycle taken and 1-b left for the message. Multicast sends each
 * message flit once at min(1, 1-b) per cycle; unicast copies share the source
 * link, min(1/fanout, 1-b) per destination. Returns the ratio of the two
 * rates, 0 when the outputs have nothing left (b >= 1). */
double nvs_fanout_ideal_speedup(int ports, int fanout, double background);

/* Saturation throughput of an N x N switch with FIFO input queues under
 * uniform i.i.d. destinations (Karol, Hluchyj & Morgan 1987, Table I; 2 - sqrt(2)
 * as N -> inf). N = 1..11 are the exact Markov-chain values (chain on the
 * head-of-line destination counts, solved to 1e-15; they match Table I to 1e-4);
 * beyond, 2 - sqrt(2) + 0.2457/N + 0.1204/N^2, fitted to N = 10, 11. *err gets
 * the value's own uncertainty (0 for the exact ones; 1e-4 for the fit, which
 * reproduces N = 8 to 1e-5 and a 1e6-cycle simulation at N = 16, 0.6016). */
double nvs_karol_saturation(int n, double *err);

#endif

/* The switch and network parameters both tests declare (NVS_NET_PARAMS), read
 * into a configuration. Bad combinations end in sim_input_error (exit 2). */
#include "sim/params.h"
#define NVS_NET_PARAMS(ports_def, depth_def)                                                                          \
    SIM_PARAM_INT("ports", ports_def, "", 2, 64, "switch ports N (any value 2..64)"),                                  \
    SIM_PARAM_ENUM("queue", "voq", "voq|fifo", "input buffering: virtual output queues or one FIFO per input"),        \
    SIM_PARAM_ENUM("alloc", "islip", "islip|pim|wavefront|rr", "switch allocator"),                                   \
    SIM_PARAM_INT("iters", "1", "", 1, 64, "allocator iterations (islip, pim, rr)"),                                   \
    SIM_PARAM_INT("depth", depth_def, "flits", 0, 1 << 20, "flits per queue (shared=1: per input); 0 = unbounded"),   \
    SIM_PARAM_BOOL("shared", "0", "VOQs of an input share one buffer of `depth` flits"),                              \
    SIM_PARAM_ENUM("model", "tl", NVS_MODEL_CHOICES, "crossbar core: C model, Verilated RTL, or both in lock-step"),  \
    SIM_PARAM_ENUM("core", "fast", NVS_C_CORE_CHOICES, "model=tl|both: the C core, fast or the plain reference"),      \
    SIM_PARAM_BOOL("fanout_read", "1", "multicast: one buffer read drives every free destination output (0: copies leave one per cycle)"), \
    SIM_PARAM_INT("pipeline_cycles", "1", "cycles", 1, 1024, "fixed pipeline latency L: matched in t, out in t+L"),   \
    SIM_PARAM_ENUM("switching", "wormhole", "wormhole|saf", "links carry flits (cut-through) or whole packets"),      \
    SIM_PARAM_INT("credit_batch", "1", "flits", 1, 1 << 16, "freed slots returned to the upstream together"),        \
    SIM_PARAM_DOUBLE("link_latency_ns", "1", "ns", 0, 1e6, "one-way latency of every link (flits and credits)"),     \
    SIM_PARAM_ENUM("preset", "none", "none|" NVLINK_PRESET_CHOICES, "NVLink generation: sets port_GBps per link"),    \
    SIM_PARAM_DOUBLE("port_GBps", "25", "GB/s", 0.001, 1e6, "per port and direction (NVLink2-4: 25)"),               \
    SIM_PARAM_INT("flit_bytes", "16", "B", 1, 4096, "flit size; the clock runs one flit per port per cycle")

int nvs_net_from_params(const sim_params *p, nvs_net_cfg *net, uint64_t seed, char *why, size_t why_n);
