/* Shared by the training-step tests (train_step, comm_wall): the parameters
 * read into a workload, a schedule configuration and a rank -> GPU layout on
 * the cluster's topology; one step simulated at flow level; the report of a
 * step (breakdown, checks, bytes per tier, bottleneck, Chrome trace,
 * timeline picture). */
#ifndef TB_TRAIN_COMMON_H
#define TB_TRAIN_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "models/training/schedule.h"
#include "models/training/workload.h"
#include "sim/flownet.h"
#include "sim/runner.h"
#include "sim/topo.h"

/* The parameters both tests take (train_step adds nodes, dp, global_batch;
 * comm_wall sweeps them); overlap_default: "1" for a step as trained, "0" for
 * the wall before its remedies. */
#define TRAIN_SHAPE_PARAMS(overlap_default)                                                                                        \
    SIM_PARAM_ENUM("model", "gpt3-13b", TRAIN_MODEL_CHOICES, "transformer preset, or custom with layers/hidden/heads/kv_heads/ffn/seq/vocab"), \
    SIM_PARAM_INT("layers", "40", "", 1, 1024, "custom: transformer layers"),                                                       \
    SIM_PARAM_INT("hidden", "5120", "", 64, 1 << 17, "custom: hidden size"),                                                       \
    SIM_PARAM_INT("heads", "40", "", 1, 1024, "custom: attention heads"),                                                          \
    SIM_PARAM_INT("kv_heads", "40", "", 1, 1024, "custom: key/value heads (GQA; = heads without)"),                                \
    SIM_PARAM_INT("ffn", "20480", "", 64, 1 << 20, "custom: MLP width"),                                                           \
    SIM_PARAM_INT("seq", "2048", "", 16, 1 << 20, "custom: sequence length"),                                                      \
    SIM_PARAM_INT("vocab", "51200", "", 16, 1 << 22, "custom: vocabulary"),                                                        \
    SIM_PARAM_INT("microbatch", "1", "", 1, 4096, "sequences per micro-batch"),                                                    \
    SIM_PARAM_ENUM("dtype", "bf16", TRAIN_DTYPE_CHOICES, "training precision (fp8: H100's fp8 tensor cores, 16-bit gradients)"),   \
    SIM_PARAM_BOOL("recompute", "0", "activation recomputation (a forward again in every backward)"),                              \
    SIM_PARAM_INT("tp", "2", "", 1, 1024, "tensor-parallel size"),                                                                 \
    SIM_PARAM_INT("pp", "2", "", 1, 1024, "pipeline stages"),                                                                      \
    SIM_PARAM_ENUM("mapping", "megatron", TRAIN_MAPPING_CHOICES,                                                                   \
                   "ranks onto GPUs: megatron (TP fastest, inside a node; then DP; PP slowest), tp_across_nodes, dp_inside_node"), \
    SIM_PARAM_INT("interleave", "1", "", 1, 64, "virtual stages per GPU (Megatron's interleaved 1F1B)"),                           \
    SIM_PARAM_DOUBLE("bucket_mb", "25", "MB", 0.001, 1e6, "DP gradient bucket (PyTorch DDP's 25 MB)"),                             \
    SIM_PARAM_BOOL("overlap", overlap_default, "DP all-reduce of a bucket as soon as it is full, during the backward"),           \
    SIM_PARAM_BOOL("zero", "0", "ZeRO-1: reduce-scatter the gradients, all-gather the parameters after the optimizer"),           \
    SIM_PARAM_STRING("topo", "dgx-h100", "the cluster: dgx-h100, dgx-a100 (with nodes) or a JSON file of nvgpu and switch nodes"), \
    SIM_PARAM_ENUM("gpu", "auto", "auto|" TRAIN_GPU_CHOICES, "GPU peaks (auto: a100 on dgx-a100, else h100)"),                    \
    SIM_PARAM_DOUBLE("mfu_matmul", "0.75", "", 0.01, 1, "achieved fraction of peak in matmuls (input)"),                          \
    SIM_PARAM_DOUBLE("mem_efficiency", "0.8", "", 0.01, 1, "achieved fraction of HBM bandwidth in memory-bound ops (input)"),      \
    SIM_PARAM_INT("chunk_bytes", "4194304", "bytes", 4096, 1 << 30, "flow level: bytes per chunk flow of a collective")

enum train_mapping { TRAIN_MAP_MEGATRON = 0, TRAIN_MAP_TP_ACROSS_NODES, TRAIN_MAP_DP_INSIDE_NODE };
#define TRAIN_MAPPING_CHOICES "megatron|tp_across_nodes|dp_inside_node"

/* Which GPU (endpoint) holds TP rank t of DP replica d in pipeline stage s. */
typedef struct train_layout {
    unsigned tp, pp, dp;
    enum train_mapping mapping;
    const uint32_t *gpu_ep;   /* the topology's nvgpu endpoints, in endpoint order */
    unsigned n_gpus;
} train_layout;
uint32_t train_layout_ep(const train_layout *L, unsigned stage, unsigned d, unsigned t);

typedef struct train_setup {
    train_model m;
    train_gpu g;
    enum train_dtype dt;
    train_compute_cfg cc;
    train_sched_cfg sc;
    train_layout lay;
    unsigned microbatch;
    uint64_t global_batch;
    bool recompute;
    train_layer_work layer, output;
    double layer_fwd_ns, layer_bwd_ns, output_fwd_ns, output_bwd_ns;
    char spec[320];                  /* topo=, with ":nodes=N" for a preset */
    unsigned nodes, gpus_per_node;   /* of the topology: GPU i is in node i / gpus_per_node */
    topo *t;
    topo_routes *routes;
    uint32_t *gpu_ep;
} train_setup;

/* The parameters as read: a sweep (comm_wall) copies and changes them per point. */
typedef struct train_knobs {
    train_model m;
    unsigned microbatch, tp, pp, dp, interleave, nodes;
    uint64_t global_batch;
    enum train_dtype dt;
    bool recompute, overlap, zero;
    enum train_mapping mapping;
    train_compute_cfg cc;
    double bucket_mb;
    char topo[256], gpu[16];
} train_knobs;

/* Reads every workload, parallelism and topology parameter; sweep: not
 * nodes, dp and global_batch (the sweep sets them: 1 here). */
void train_knobs_read(sim_test_ctx *c, train_knobs *k, bool sweep);
/* Checks the knobs (bad combinations: exit 2 naming what is allowed) and
 * builds the topology, the layout over its first `gpus` GPUs (0: all) and
 * the schedule's inputs; grad_bytes per gradient element on the wire (0: the
 * dtype's; 1: fp8-compressed); check_unused: refuse parameters the
 * configuration does not use (before sim_test_configured only). */
void train_setup_build(sim_test_ctx *c, train_setup *s, const train_knobs *k, unsigned gpus, unsigned grad_bytes, bool check_unused);
/* The GPUs of one node of k's topology (k.nodes ignored). */
unsigned train_gpus_per_node(sim_test_ctx *c, const train_knobs *k);
/* train_knobs_read then train_setup_build: train_step's. */
void train_setup_read(sim_test_ctx *c, train_setup *s);
void train_setup_free(train_setup *s);

/* One step of s at flow level on kernel k (every TP, PP and DP
 * communication as coll_flow collectives over sim/flownet), run to the end.
 * hierarchical: each DP collective as NCCL's hierarchical one -- inside each
 * node, across nodes on 1/k of the bytes, inside again (k GPUs of the group
 * per node). progress: the fraction of the test's work done before it (for the progress line). */
typedef struct train_run train_run;
train_run *train_run_step(sim_test_ctx *c, sim_kernel *k, const train_setup *s, uint64_t chunk_bytes, bool hierarchical,
                          double progress);
sim_time_ps train_run_step_ps(const train_run *r);          /* 0: it did not finish */
const train_sched *train_run_sched(const train_run *r);
sim_flownet *train_run_net(train_run *r);
/* The models' own checks (schedule, collectives, flows): true, or false with why. */
bool train_run_conserved(const train_run *r, char *why, size_t why_n);
void train_run_free(train_run *r);

/* Metrics, checks, the printed breakdown and bottleneck table, the Chrome
 * trace (reports/<test>_trace.json) and the timeline PNG of a finished step
 * (step_ps 0: it did not finish). conserved/why: the models' own checks. */
void train_report(sim_test_ctx *c, const train_setup *s, const train_sched *sch, sim_flownet *net, sim_time_ps step_ps, unsigned top,
                  bool conserved, const char *why);

#endif
