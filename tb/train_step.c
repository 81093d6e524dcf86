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
#include "sim/sim.h"
#include "tb/train_common.h"

static const sim_param_def train_params[] = {
    TRAIN_SHAPE_PARAMS("1"),
    SIM_PARAM_INT("global_batch", "0", "", 0, 1 << 24,
                  "sequences per step (all DP replicas); 0: 2 x pp micro-batches per replica (microbatch x dp x 2 pp), enough to fill the pipeline"),
    SIM_PARAM_INT("dp", "2", "", 1, 1 << 16, "data-parallel replicas (tp x pp x dp = the topology's GPUs)"),
    SIM_PARAM_INT("nodes", "1", "", 1, 1024, "servers of the topo= preset"),
    SIM_PARAM_ENUM("fidelity", "flow", "flow|packet", "communication model on every tier (packet: not modelled yet for train_step)"),
    SIM_PARAM_INT("top", "8", "", 1, 64, "rows of the bottleneck table"),
    SIM_PARAM_END,
};

static void train_step_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    train_setup s;
    train_setup_read(c, &s);
    if (sim_param_enum(p, "fidelity") == 1)
        sim_input_error("train_step: fidelity=packet is not modelled yet for a whole training step; allowed: fidelity=flow");
    uint64_t chunk_bytes = (uint64_t)sim_param_int(p, "chunk_bytes");
    unsigned top = (unsigned)sim_param_int(p, "top");
    sim_test_configured(c);

    train_run *r = train_run_step(c, c->k, &s, chunk_bytes, false, 0);
    char why[512] = "";
    bool conserved = train_run_conserved(r, why, sizeof why);
    train_report(c, &s, train_run_sched(r), train_run_net(r), train_run_step_ps(r), top, conserved, why);
    train_run_free(r);
    train_setup_free(&s);
}

SIM_TEST(train_step, "one training step with 3D parallelism: compute from a roofline, every TP/PP/DP communication simulated on the cluster's links; breakdown, MFU, bottleneck, timeline",
         train_params, "", train_step_run)
