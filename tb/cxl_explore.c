/* cxl_explore: exhaustive breadth-first exploration of a small CXL.cache
 * system (devices + host cores, a few lines, a few data values) with the same
 * step functions the timed model runs. Fails on any invariant break (SWMR,
 * data value, directory inclusion, ordering rules, tracker mismatch,
 * unhandled message) or deadlock, printing the history that led there. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "models/cxl/cxl_explore.h"
#include "sim/sim.h"

static const sim_param_def explore_params[] = {
    SIM_PARAM_INT("devices", "1", "", 1, 4, "CXL devices (each a DCOH)"),
    SIM_PARAM_INT("cores", "1", "", 0, 3, "host CPU caches (peers of the devices)"),
    SIM_PARAM_INT("lines", "1", "", 1, 2, "cache lines"),
    SIM_PARAM_INT("values", "2", "", 2, 4, "distinct data values per line"),
    SIM_PARAM_ENUM("inject", "none", "none|go_during_snoop|no_fwd_data|e_with_sharers|skip_bogus",
                   "seeded protocol bug (the checkers must catch it)"),
    SIM_PARAM_STRING("ops", "all", "device ops to explore: all, or a comma list of load,load_any,store,write_full,evict,"
                                   "evict_nodata,rdcurr,clflush,itomwr,wrcur,wrinv,wowrinv,wowrinvf"),
    SIM_PARAM_INT("max_states", "20000000", "", 1000, 200000000, "stop (and fail) beyond this many states"),
    SIM_PARAM_END,
};

uint32_t cxl_parse_ops(const char *s, const char *test);
uint32_t cxl_parse_ops(const char *s, const char *test)
{
    if (!strcmp(s, "all")) return CXL_ALL_DEV_OPS;
    uint32_t mask = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        unsigned op;
        for (op = 0; op < CXL_N_CORE_OP; op++)
            if (!strcmp(tok, cxl_core_op_name(op))) break;
        if (op == CXL_N_CORE_OP)
            sim_input_error("%s: ops=%s: unknown op '%s'; allowed: all or a comma list of load,load_any,store,write_full,"
                            "evict,evict_nodata,rdcurr,clflush,itomwr,wrcur,wrinv,wowrinv,wowrinvf",
                            test, s, tok);
        mask |= 1u << op;
    }
    return mask;
}

static void explore_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    cxl_explore_cfg cfg = { 0 };
    cfg.devices = (unsigned)sim_param_int(p, "devices");
    cfg.cores = (unsigned)sim_param_int(p, "cores");
    cfg.lines = (unsigned)sim_param_int(p, "lines");
    cfg.values = (unsigned)sim_param_int(p, "values");
    cfg.inject = (unsigned)sim_param_enum(p, "inject");
    cfg.dev_ops = cxl_parse_ops(sim_param_str(p, "ops"), "cxl_explore");
    cfg.max_states = (uint64_t)sim_param_int(p, "max_states");
    cfg.log = stderr;
    cfg.max_histories = 1;
    if (cfg.devices + cfg.cores > 6)
        sim_input_error("cxl_explore: devices=%u + cores=%u = %u agents; allowed at most 6", cfg.devices, cfg.cores,
                        cfg.devices + cfg.cores);
    sim_param_not_applicable(p, "seed", "the search is exhaustive: nothing is random");
    sim_test_configured(c);
    cxl_explore_result r;
    cxl_explore_run(&cfg, &r);
    if (c->trace) {   /* the search as waves: new states per BFS level, 1 ns per level */
        sim_trace_push_scope(c->trace, "cxl_explore");
        sim_trace_var tv_new = sim_trace_add_var(c->trace, "new_states", 64);
        sim_trace_var tv_depth = sim_trace_add_var(c->trace, "depth", 32);
        sim_trace_var tv_viol = sim_trace_add_var(c->trace, "violation", 1);   /* first violating level (text in the report) */
        sim_trace_pop_scope(c->trace);
        sim_trace_freeze(c->trace);   /* no sim_run here: write the header, then stamp each level */
        for (unsigned d = 0; d <= r.max_depth + 1 && d < 512; d++) {
            sim_trace_emit_u64_at(c->trace, SIM_NS(d), tv_new, r.states_at_depth[d]);
            sim_trace_emit_u64_at(c->trace, SIM_NS(d), tv_depth, d);
            sim_trace_emit_u64_at(c->trace, SIM_NS(d), tv_viol, r.violations && d == r.first_violation_depth);
        }
    }
    sim_report *rep = c->report;
    sim_report_metric(rep, "states", (double)r.states);
    sim_report_metric(rep, "transitions", (double)r.transitions);
    sim_report_metric(rep, "max_depth", (double)r.max_depth);
    sim_report_metric(rep, "violations", (double)r.violations);
    sim_report_metric(rep, "deadlocks", (double)r.deadlocks);
    sim_report_metric(rep, "transitions_covered", (double)r.tr_covered);
    sim_report_metric(rep, "transitions_total", (double)r.tr_total);
    sim_check(rep, "explored_completely", r.complete, "%" PRIu64 " states (limit %" PRIu64 ")", r.states, cfg.max_states);
    sim_check(rep, "no_violations", r.violations == 0, "%" PRIu64 " violating transitions%s%s", r.violations,
              r.violations ? "; first: " : "", r.first_violation);
    sim_check(rep, "no_deadlocks", r.deadlocks == 0, "%" PRIu64 " states with work pending and no message deliverable",
              r.deadlocks);

    /* A system small enough to count by hand, from the documented read flow
     * (docs/models/cxl.md: D2H RdShared -> home -> H2D GO and H2D Data, two
     * messages that may arrive in either order): one device, no core, one
     * line, loads only. States: idle (line I), the request in flight, then the
     * four delivered/not-delivered combinations of GO and Data (the last is the
     * device holding the line) = 6. Transitions: issue, home, the four edges
     * of the GO/Data diamond, and the load that then hits = 7. Longest path:
     * issue, home, GO, Data = 4 levels. A model that sent a message too many
     * or too few, or stayed busy after the GO, changes these. */
    cxl_explore_cfg tiny = { .devices = 1, .cores = 0, .lines = 1, .values = 2, .inject = cfg.inject,
                             .dev_ops = 1u << OP_LOAD, .max_states = 1000, .log = NULL, .max_histories = 0 };
    cxl_explore_result tr;
    cxl_explore_run(&tiny, &tr);
    sim_check(rep, "small_system_counts_as_derived", tr.complete && tr.states == 6 && tr.transitions == 7 && tr.max_depth == 4,
              "1 device, 1 line, loads: %" PRIu64 " states, %" PRIu64 " transitions, depth %u (derived by hand: 6, 7, 4)",
              tr.states, tr.transitions, tr.max_depth);
}

SIM_TEST(cxl_explore, "exhaustive BFS of a small CXL.cache system: states, violations, deadlocks", explore_params,
         "devices=2 cores=1", explore_run)
