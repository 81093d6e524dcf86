/* Shared by the training-step tests (train_step): the parameters read into a
 * workload, a schedule configuration and a rank -> GPU layout on the
 * cluster's topology, and the report of a step (breakdown, checks, bytes
 * per tier, bottleneck, Chrome trace, timeline picture). */
#ifndef TB_TRAIN_COMMON_H
#define TB_TRAIN_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "models/training/schedule.h"
#include "models/training/workload.h"
#include "sim/flownet.h"
#include "sim/runner.h"
#include "sim/topo.h"

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
    char spec[256];
    topo *t;
    topo_routes *routes;
    uint32_t *gpu_ep;
} train_setup;

/* Reads and checks every workload, parallelism and topology parameter
 * (bad combinations: exit 2 naming what is allowed), builds the topology. */
void train_setup_read(sim_test_ctx *c, train_setup *s);
void train_setup_free(train_setup *s);

/* Metrics, checks, the printed breakdown and bottleneck table, the Chrome
 * trace (reports/<test>_trace.json) and the timeline PNG of a finished step
 * (step_ps 0: it did not finish). conserved/why: the models' own checks. */
void train_report(sim_test_ctx *c, const train_setup *s, const train_sched *sch, sim_flownet *net, sim_time_ps step_ps, unsigned top,
                  bool conserved, const char *why);

#endif
