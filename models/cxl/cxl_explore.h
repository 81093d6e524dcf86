/* Exhaustive breadth-first exploration of small CXL.cache systems with the
 * same step functions the timed model runs. A global state is every agent's
 * line states, the home agent's lines, the golden values and every message in
 * flight per agent and direction. Delivery is nondeterministic: any message in
 * flight may be delivered next, except that a snoop may not pass an earlier GO
 * (H2D Rsp) to the same line and agent (snoop-pushes-GO, CXL 3.0 3.2.2.1).
 * Devices may issue every D2H request; host cores the cacheable subset. */
#ifndef CXL_EXPLORE_H
#define CXL_EXPLORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/cxl/cxl_proto.h"

typedef struct cxl_explore_cfg {
    unsigned devices, cores, lines, values;
    unsigned inject;               /* enum cxl_inject */
    uint32_t dev_ops;              /* bit mask of enum cxl_core_op devices may issue */
    uint64_t max_states;           /* stop (and report incomplete) beyond this */
    FILE *log;                     /* histories of violations (NULL = quiet) */
    unsigned max_histories;        /* how many violation histories to print */
} cxl_explore_cfg;

typedef struct cxl_explore_result {
    uint64_t states, transitions, violations, deadlocks;
    unsigned max_depth;
    bool complete;                 /* the whole reachable space was visited */
    unsigned tr_covered, tr_total; /* FSM transitions exercised / defined */
    char first_violation[256];
    unsigned first_violation_depth;
    uint64_t states_at_depth[512]; /* new states found per BFS level */
} cxl_explore_result;

#define CXL_ALL_DEV_OPS ((1u << CXL_N_CORE_OP) - 1u)

void cxl_explore_run(const cxl_explore_cfg *cfg, cxl_explore_result *res);

#endif
