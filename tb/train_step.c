/* train_step: one training step of a transformer with 3D parallelism on a
 * modelled cluster (issue 21). Compute is the workload's input model
 * (models/training/workload.h: a roofline of the GPU preset); the step's
 * schedule (1F1B, interleaved) runs as events (schedule.h), and every TP
 * all-reduce, PP send and DP all-reduce it asks for runs on the collective
 * engine over the topology's links -- for every DP replica and TP rank at
 * once, so they contend where they share links. Fidelity: flow level on
 * every tier (coll_flow over sim/flownet: max-min fair sharing of the routed
 * links, validated against the packet engine by check_coll_flow). Reports the
 * step's breakdown per parallelism (what it cost and what of it was exposed),
 * bubble, MFU, tokens/s, bytes per tier, the busiest links with their tier,
 * a Chrome trace and a timeline picture. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cJSON.h"
#include "models/collective/coll_flow.h"
#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "models/training/schedule.h"
#include "models/training/workload.h"
#include "sim/flownet.h"
#include "sim/sim.h"
#include "sim/tier.h"
#include "tb/train_common.h"

static const sim_param_def train_params[] = {
    SIM_PARAM_ENUM("model", "gpt3-13b", TRAIN_MODEL_CHOICES, "transformer preset, or custom with layers/hidden/heads/kv_heads/ffn/seq/vocab"),
    SIM_PARAM_INT("layers", "40", "", 1, 1024, "custom: transformer layers"),
    SIM_PARAM_INT("hidden", "5120", "", 64, 1 << 17, "custom: hidden size"),
    SIM_PARAM_INT("heads", "40", "", 1, 1024, "custom: attention heads"),
    SIM_PARAM_INT("kv_heads", "40", "", 1, 1024, "custom: key/value heads (GQA; = heads without)"),
    SIM_PARAM_INT("ffn", "20480", "", 64, 1 << 20, "custom: MLP width"),
    SIM_PARAM_INT("seq", "2048", "", 16, 1 << 20, "custom: sequence length"),
    SIM_PARAM_INT("vocab", "51200", "", 16, 1 << 22, "custom: vocabulary"),
    SIM_PARAM_INT("microbatch", "1", "", 1, 4096, "sequences per micro-batch"),
    SIM_PARAM_INT("global_batch", "8", "", 1, 1 << 24, "sequences per step (all DP replicas)"),
    SIM_PARAM_ENUM("dtype", "bf16", TRAIN_DTYPE_CHOICES, "training precision (fp8: H100's fp8 tensor cores, 16-bit gradients)"),
    SIM_PARAM_BOOL("recompute", "0", "activation recomputation (a forward again in every backward)"),
    SIM_PARAM_INT("tp", "2", "", 1, 1024, "tensor-parallel size"),
    SIM_PARAM_INT("pp", "2", "", 1, 1024, "pipeline stages"),
    SIM_PARAM_INT("dp", "2", "", 1, 1 << 16, "data-parallel replicas (tp x pp x dp = the topology's GPUs)"),
    SIM_PARAM_ENUM("mapping", "megatron", TRAIN_MAPPING_CHOICES,
                   "ranks onto GPUs: megatron (TP fastest, inside a node; then DP; PP slowest), tp_across_nodes, dp_inside_node"),
    SIM_PARAM_INT("interleave", "1", "", 1, 64, "virtual stages per GPU (Megatron's interleaved 1F1B)"),
    SIM_PARAM_DOUBLE("bucket_mb", "25", "MB", 0.001, 1e6, "DP gradient bucket (PyTorch DDP's 25 MB)"),
    SIM_PARAM_BOOL("overlap", "1", "DP all-reduce of a bucket as soon as it is full, during the backward"),
    SIM_PARAM_BOOL("zero", "0", "ZeRO-1: reduce-scatter the gradients, all-gather the parameters after the optimizer"),
    SIM_PARAM_STRING("topo", "dgx-h100", "the cluster: dgx-h100 (or a JSON file of nvgpu and switch nodes)"),
    SIM_PARAM_INT("nodes", "1", "", 1, 1024, "servers of the topo= preset"),
    SIM_PARAM_ENUM("gpu", "auto", "auto|" TRAIN_GPU_CHOICES, "GPU peaks (auto: a100 on dgx-a100, else h100)"),
    SIM_PARAM_DOUBLE("mfu_matmul", "0.75", "", 0.01, 1, "achieved fraction of peak in matmuls (input)"),
    SIM_PARAM_DOUBLE("mem_efficiency", "0.8", "", 0.01, 1, "achieved fraction of HBM bandwidth in memory-bound ops (input)"),
    SIM_PARAM_ENUM("fidelity", "flow", "flow|packet", "communication model on every tier (packet: not modelled yet for train_step)"),
    SIM_PARAM_INT("chunk_bytes", "4194304", "bytes", 4096, 1 << 30, "flow level: bytes per chunk flow of a collective"),
    SIM_PARAM_INT("top", "8", "", 1, 64, "rows of the bottleneck table"),
    SIM_PARAM_END,
};

typedef struct backend {
    coll_flow *e;
    const train_layout *lay;
    bool zero;
    uint64_t started[TRAIN_COMM_KINDS];
} backend;

typedef struct join { unsigned left; train_comm_done_fn done; void *arg; } join;

static void join_one(void *a)
{
    join *j = a;
    if (--j->left) return;
    j->done(j->arg);
    free(j);
}

/* Every DP replica (TP, PP) or every TP rank (DP) does the same at once: one join over all of them. */
static void comm_start(void *ctx, enum train_comm_kind kind, unsigned stage, unsigned peer, uint64_t bytes, train_comm_done_fn done,
                       void *arg)
{
    backend *b = ctx;
    const train_layout *L = b->lay;
    char why[256];
    uint32_t group[1024];
    join *j = malloc(sizeof *j);
    if (!j) sim_fatal("out of memory");
    *j = (join){ 0, done, arg };
    b->started[kind]++;
    int rc = 0;
    if (kind == TRAIN_COMM_TP) {
        j->left = L->dp;
        for (unsigned d = 0; d < L->dp && !rc; d++) {
            for (unsigned t = 0; t < L->tp; t++) group[t] = train_layout_ep(L, stage, d, t);
            rc = coll_flow_start(b->e, COLL_ALL_REDUCE, group, L->tp, bytes, join_one, j, why, sizeof why);
        }
    } else if (kind == TRAIN_COMM_PP) {
        /* Megatron's scatter/gather: each TP rank sends its 1/tp of the activations to its peer */
        j->left = L->dp * L->tp;
        for (unsigned d = 0; d < L->dp && !rc; d++)
            for (unsigned t = 0; t < L->tp && !rc; t++)
                rc = coll_flow_send(b->e, train_layout_ep(L, stage, d, t), train_layout_ep(L, peer, d, t), bytes / L->tp, join_one, j, why,
                                    sizeof why);
    } else {
        enum coll_op op = kind == TRAIN_COMM_DP_GATHER ? COLL_ALL_GATHER : b->zero ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
        j->left = L->tp;
        for (unsigned t = 0; t < L->tp && !rc; t++) {
            for (unsigned d = 0; d < L->dp; d++) group[d] = train_layout_ep(L, stage, d, t);
            uint64_t n = bytes - bytes % L->dp;   /* a whole number of elements per rank */
            rc = coll_flow_start(b->e, op, group, L->dp, n ? n : L->dp, join_one, j, why, sizeof why);
        }
    }
    if (rc) sim_fatal("train_step: %s communication of stage %u: %s", train_comm_kind_name(kind), stage, why);
}

static void train_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    train_setup s;
    train_setup_read(c, &s);
    if (sim_param_enum(p, "fidelity") == 1)
        sim_input_error("train_step: fidelity=packet is not modelled yet for a whole training step; allowed: fidelity=flow");
    uint64_t chunk_bytes = (uint64_t)sim_param_int(p, "chunk_bytes");
    unsigned top = (unsigned)sim_param_int(p, "top");
    sim_test_configured(c);

    sim_flownet_cfg nc = { 128, FABRIC_SWITCH_CFG_DEFAULT.pipeline_ns };   /* NVLink's 128-byte payloads; a switch's pipeline */
    char err[512];
    sim_flownet *net = sim_flownet_new(c->k, s.t, s.routes, &nc, err, sizeof err);
    if (!net) sim_input_error("train_step: %s", err);
    coll_flow_cfg cc = COLL_FLOW_CFG_DEFAULT;
    cc.chunk_bytes = chunk_bytes;
    coll_flow *e = coll_flow_new(c->k, net, s.t, s.routes, &cc);
    backend be = { e, &s.lay, s.sc.zero, { 0 } };
    train_comm_backend tb = { comm_start, &be };
    train_sched *sch = train_sched_new(c->k, &s.sc, &tb, err, sizeof err);
    if (!sch) sim_input_error("train_step: %s", err);

    train_sched_start(sch);
    sim_time_ps step = 0;
    while (!train_sched_done(sch)) {
        sim_time_ps before = sim_now(c->k);
        sim_run(c->k, before + SIM_US(1000));
        if (sim_now(c->k) == before && sim_next_time(c->k) == SIM_TIME_MAX) break;   /* nothing left to do */
        sim_progress(c, 0, "%.1f ms simulated", (double)sim_now(c->k) / 1e9);
    }
    bool finished = train_sched_done(sch);
    if (finished) step = train_sched_step_ps(sch);
    sim_run(c->k, SIM_TIME_MAX);   /* the flows' last deliveries */
    sim_flownet_sync(net);

    char why[512] = "";
    int cons = train_sched_check(sch, why, sizeof why);
    if (!cons) cons = coll_flow_check(e, why, sizeof why);
    if (!cons) cons = sim_flownet_check(net, true, why, sizeof why);
    train_report(c, &s, sch, net, step, top, finished && !cons, why);

    train_sched_free(sch);
    coll_flow_free(e);
    sim_flownet_free(net);
    train_setup_free(&s);
}

SIM_TEST(train_step, "one training step with 3D parallelism: compute from a roofline, every TP/PP/DP communication simulated on the cluster's links; breakdown, MFU, bottleneck, timeline",
         train_params, "", train_run)
