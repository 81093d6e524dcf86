/* cxl_latency: directed CXL.cache coherence scenarios with an exact per-hop
 * breakdown. A setup phase puts the line where the scenario needs it (using
 * the protocol itself), then one access is measured. With nothing else in
 * flight the measured latency must equal the sum of the hops recorded along
 * the critical path (each added by the component that spent the time), and
 * the analytic formula of the scenario (docs/models/cxl.md). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "models/cxl/cxl_sys.h"
#include "sim/sim.h"

static const sim_param_def latency_params[] = {
    SIM_PARAM_ENUM("scenario", "host_m",
                   "miss|host_hit|host_m|peer_m|shared_upgrade|dirty_evict|wrinv|rdcurr_m|clflush|race_go_snoop",
                   "miss: device load, line uncached (memory); host_hit: device load, line S in a host core (LLC hit); "
                   "host_m: device store (RdOwn), line M in a host core; peer_m: device store, line M in another device; "
                   "shared_upgrade: device store to its S line also S in a core; dirty_evict: device evicts an M line; "
                   "wrinv: device WrInv, line S in a core; rdcurr_m: device RdCurr, line M in a core; "
                   "clflush: device CLFlush, line M in a core; race_go_snoop: dev0 and, race_ns later, dev1 store "
                   "to an uncached line: dev1's SnpInv must follow dev0's GO (snoop-pushes-GO); dev1 is measured"),
    SIM_PARAM_DOUBLE("race_ns", "1", "ns", 0, 100, "race_go_snoop: how much later dev1 issues its store"),
    CXL_SYS_TIMING_PARAMS,
    SIM_PARAM_DOUBLE("core_ns", "2", "ns", 0, 10000, "host core cache lookup / fill"),
    SIM_PARAM_END,
};

typedef struct lat_ctx {
    bool measuring, done;
    unsigned agent;             /* the access measured */
    sim_time_ps latency_ps;
    cxl_path path;
    unsigned req;
} lat_ctx;

static void lat_done(void *ctx, unsigned agent, uint32_t line, unsigned op, unsigned req, sim_time_ps issued_ps,
                     const cxl_path *path)
{
    (void)agent;
    (void)line;
    (void)op;
    lat_ctx *lc = ctx;
    if (!lc->measuring || agent != lc->agent) return;
    extern sim_kernel *cxl_latency_kernel;
    lc->done = true;
    lc->req = req;
    lc->latency_ps = sim_now(cxl_latency_kernel) - issued_ps;
    if (path) lc->path = *path;
}
sim_kernel *cxl_latency_kernel;

enum { DEV0 = 0, DEV1 = 1, CORE0 = 2 };

static void settle(sim_test_ctx *c, cxl_sys *s, unsigned agent, unsigned op)
{
    if (!cxl_sys_issue(s, agent, 0, op, 7)) sim_fatal("cxl_latency: setup issue refused");
    sim_run(c->k, SIM_TIME_MAX);
    if (cxl_sys_outstanding(s)) sim_fatal("cxl_latency: setup did not complete");
}

static void latency_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    cxl_latency_kernel = c->k;
    cxl_sys_cfg cfg;
    cxl_sys_cfg_defaults(&cfg);
    cfg.devices = 2;
    cfg.cores = 1;
    cfg.lines = 4;
    cxl_sys_cfg_timing_from_params(&cfg, p, "cxl_latency");
    cfg.core_ns = sim_param_double(p, "core_ns");
    const char *sc = sim_param_str(p, "scenario");
    const double race = sim_param_double(p, "race_ns");
    if (strcmp(sc, "race_go_snoop") != 0) sim_param_not_applicable(p, "race_ns", "it applies to scenario=race_go_snoop only");
    sim_test_configured(c);
    cfg.llc_lines = 1024;
    cfg.track_paths = true;
    cfg.history = true;
    cfg.trace_lines = 1;
    cfg.log = stderr;
    cfg.seed = c->seed;
    cxl_sys *s = cxl_sys_new(c->k, &cfg, c->trace);
    lat_ctx lc = { 0 };
    cxl_sys_set_done(s, lat_done, &lc);
    unsigned mop;
    /* the analytic formula, in terms of one-flit (S1) and two-flit (S2) messages */
    double L = cfg.link_ns, H = cfg.home_ns, C = cfg.core_snoop_ns, D = cfg.dev_ns, M = cfg.mem_ns, LLC = cfg.llc_ns;
    /* a 68 B flit (2 B protocol ID + 4 x 16 B slots + 2 B CRC) on 128b/130b lanes */
    double flit_ns = 68.0 / (cfg.lanes * cfg.gts / 8.0 * 128.0 / 130.0);
    /* the link rounds a flit up to a whole ps; the packer starts the next flit when the wire is free */
    double S1 = ceil(flit_ns * 1000.0 - 1e-6) / 1000.0, S2 = 2 * S1;
    double expect;
    const char *formula;
    if (!strcmp(sc, "miss")) {
        mop = OP_LOAD;
        expect = D + S1 + L + H + M + S2 + L + D;
        formula = "2L + S1 + S2 + H + M + 2D";
    } else if (!strcmp(sc, "host_hit")) {
        settle(c, s, CORE0, OP_LOAD);
        mop = OP_LOAD;
        expect = D + S1 + L + H + LLC + S2 + L + D;
        formula = "2L + S1 + S2 + H + LLC + 2D";
    } else if (!strcmp(sc, "host_m")) {
        settle(c, s, CORE0, OP_STORE);
        mop = OP_STORE;
        expect = D + S1 + L + H + C + S2 + L + D;
        formula = "2L + S1 + S2 + H + C + 2D";
    } else if (!strcmp(sc, "peer_m")) {
        settle(c, s, DEV1, OP_STORE);
        mop = OP_STORE;
        expect = D + S1 + L + H + S1 + L + D + S2 + L + S2 + L + D;
        formula = "4L + 2 S1 + 2 S2 + H + 3D";
    } else if (!strcmp(sc, "shared_upgrade")) {
        settle(c, s, DEV0, OP_LOAD);
        settle(c, s, CORE0, OP_LOAD);
        mop = OP_STORE;
        expect = D + S1 + L + H + C + LLC + S2 + L + D;
        formula = "2L + S1 + S2 + H + C + LLC + 2D";
    } else if (!strcmp(sc, "dirty_evict")) {
        settle(c, s, DEV0, OP_STORE);
        mop = OP_EVICT;
        expect = D + S1 + L + H + S1 + L + D;
        formula = "2L + 2 S1 + H + 2D (device done when GO_WritePull arrives and the data leaves)";
    } else if (!strcmp(sc, "wrinv")) {
        settle(c, s, CORE0, OP_LOAD);
        mop = OP_WRINV;
        expect = D + S1 + L + H + C + S1 + L + D + S2 + L + S1 + L + D;
        formula = "4L + 3 S1 + S2 + H + C + 3D";
    } else if (!strcmp(sc, "rdcurr_m")) {
        settle(c, s, CORE0, OP_STORE);
        mop = OP_RDCURR;
        expect = D + S1 + L + H + C + S2 + L + D;
        formula = "2L + S1 + S2 + H + C + 2D";
    } else if (!strcmp(sc, "race_go_snoop")) {
        mop = OP_STORE;
        /* dev1 waits at the home for dev0's transaction (miss to memory); its SnpInv to dev0
         * leaves behind dev0's GO and data (in the second data flit), dev0 answers RspIFwdM */
        expect = (D + S1 + L + H + M - race) + 3 * (S2 + L) + 2 * D;
        formula = "(dev0's D + S1 + L + H + M - race_ns) + 3 (S2 + L) + 2D";
        if (race >= D + S1 + L + H + M - (D + S1 + L + H)) sim_input_error("cxl_latency: race_ns=%g must be below mem_ns=%g", race, M);
    } else {   /* clflush */
        settle(c, s, CORE0, OP_STORE);
        mop = OP_CLFLUSH;
        expect = D + S1 + L + H + C + S1 + L + D;
        formula = "2L + 2 S1 + H + C + 2D";
    }
    cxl_sys_reset_link_stats(s);
    lc.measuring = true;
    if (!strcmp(sc, "race_go_snoop")) {
        lc.agent = DEV1;
        if (!cxl_sys_issue(s, DEV0, 0, OP_STORE, 0)) sim_fatal("cxl_latency: race issue refused");
        sim_run(c->k, sim_now(c->k) + (sim_time_ps)(race * 1000.0 + 0.5));
        if (!cxl_sys_issue(s, DEV1, 0, OP_STORE, 0)) sim_fatal("cxl_latency: race issue refused");
    } else {
        lc.agent = DEV0;
        if (!cxl_sys_issue(s, DEV0, 0, mop, 9)) sim_fatal("cxl_latency: measured issue refused");
    }
    sim_run(c->k, SIM_TIME_MAX);

    sim_report *rep = c->report;
    double lat_ns = lc.latency_ps / 1000.0;
    sim_time_ps sum_ps = 0;
    unsigned crossings = 0;
    cJSON *hops = cJSON_CreateArray();
    for (unsigned i = 0; i < lc.path.n; i++) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "name", lc.path.hop[i].name);
        cJSON_AddNumberToObject(h, "ns", lc.path.hop[i].ps / 1000.0);
        cJSON_AddItemToArray(hops, h);
        sum_ps += lc.path.hop[i].ps;
        if (lc.path.hop[i].link) crossings++;
    }
    sim_report_metric(rep, "latency_ns", lat_ns);
    sim_report_metric_json(rep, "hops", hops);
    sim_report_metric(rep, "link_crossings", crossings);
    sim_report_metric(rep, "expected_ns", expect);
    sim_report_metric(rep, "flit_ns", flit_ns);
    sim_report_metric_json(rep, "request", cJSON_CreateString(lc.req < CXL_N_D2H_REQ ? cxl_op_name(CXL_D2H_REQ, lc.req) : "hit"));
    sim_report_metric_json(rep, "formula", cJSON_CreateString(formula));
    cxl_sys_stats st;
    cxl_sys_stats_get(s, &st);
    sim_report_metric(rep, "snoops", (double)st.snoops);
    sim_report_metric(rep, "violations", (double)st.violations);
    if (!c->quiet) {
        printf("  critical path (%s):\n", formula);
        for (unsigned i = 0; i < lc.path.n; i++)
            printf("    %-14s %9.3f ns%s\n", lc.path.hop[i].name, lc.path.hop[i].ps / 1000.0, lc.path.hop[i].link ? "  (link)" : "");
    }
    sim_check(rep, "completed", lc.done, "the measured access completed");
    sim_check(rep, "latency_is_sum_of_hops", lc.done && sum_ps == lc.latency_ps,
              "measured end-to-end %.3f ns, sum of %u recorded hops %.3f ns", lat_ns, lc.path.n, sum_ps / 1000.0);
    sim_check(rep, "latency_matches_formula", lc.done && fabs(lat_ns - expect) < 0.0005,
              "measured %.3f ns, %s = %.3f ns", lat_ns, formula, expect);
    sim_check(rep, "no_violations", st.violations == 0, "%" PRIu64 " coherence violations%s%s", st.violations,
              st.violations ? ": " : "", cxl_sys_first_violation(s));
    char why[256] = "all drained";
    unsigned f = cxl_sys_final_check(s, why, sizeof why);
    sim_check(rep, "quiescent_consistent", f == 0, "%s", why);
    cxl_sys_free(s);
}

SIM_TEST(cxl_latency, "directed CXL.cache coherence latency scenarios with a per-hop breakdown", latency_params,
         "scenario=host_m", latency_run)
