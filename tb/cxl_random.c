/* cxl_random: a Ruby-style random tester for the CXL.cache model. Devices and
 * host cores issue random accesses (every D2H request type the state allows)
 * to a few lines packed into few sets (forcing replacements), with a random
 * extra delay per message (jitter) to expose GO/data/snoop races. Every
 * checker of the timed system is on; any violation fails the run and prints
 * the history of the line. inject= seeds a protocol bug the checkers must
 * catch. bench=1 writes {"ops_per_s",...} to reports/bench.json. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "models/cxl/cxl_sys.h"
#include "sim/sim.h"

static const sim_param_def random_params[] = {
    SIM_PARAM_INT("devices", "2", "", 1, 8, "CXL devices"),
    SIM_PARAM_INT("cores", "2", "", 0, 8, "host CPU caches"),
    SIM_PARAM_INT("lines", "8", "", 1, 65536, "distinct lines the accesses touch"),
    SIM_PARAM_INT("sets", "2", "", 1, 4096, "sets of every cache (small: forces replacements)"),
    SIM_PARAM_INT("ways", "2", "", 1, 16, "ways of every cache"),
    SIM_PARAM_INT("ops", "200000", "", 1, 1e10, "accesses to complete (all agents together)"),
    SIM_PARAM_DOUBLE("jitter", "20", "ns", 0, 1e6, "largest random extra delay per message"),
    SIM_PARAM_INT("outstanding", "4", "", 1, 16, "accesses in flight per agent"),
    SIM_PARAM_ENUM("inject", "none", "none|go_during_snoop|no_fwd_data|e_with_sharers|skip_bogus",
                   "seeded protocol bug (the checkers must catch it)"),
    SIM_PARAM_BOOL("bench", "0", "write the \"cxl_random\" object (ops_per_s) into reports/bench.json"),
    SIM_PARAM_END,
};

typedef struct rnd {
    cxl_sys *s;
    sim_test_ctx *c;
    sim_rng rng;
    unsigned na, lines, values;
    uint64_t target, issued, done;
    unsigned outstanding;
    unsigned inflight[CXL_MAX_AGENTS];
} rnd;

/* Weighted choice of an access legal in the line's state. */
static unsigned pick_op(rnd *r, unsigned st, bool core)
{
    static const struct { uint8_t op, w; } from_i[] = {
        { OP_LOAD, 30 }, { OP_LOAD_ANY, 6 }, { OP_STORE, 25 }, { OP_WRITE_FULL, 5 }, { OP_RDCURR, 5 }, { OP_CLFLUSH, 4 },
        { OP_ITOMWR, 4 }, { OP_WRCUR, 4 }, { OP_WRINV, 4 }, { OP_WOWRINV, 4 }, { OP_WOWRINVF, 4 },
    };
    static const struct { uint8_t op, w; } from_v[] = {
        { OP_LOAD, 35 }, { OP_LOAD_ANY, 5 }, { OP_STORE, 35 }, { OP_WRITE_FULL, 5 }, { OP_EVICT, 14 }, { OP_EVICT_NODATA, 6 },
    };
    for (;;) {
        unsigned op;
        if (st == DS_I) {
            unsigned tot = 0;
            for (unsigned i = 0; i < sizeof from_i / sizeof from_i[0]; i++) tot += from_i[i].w;
            unsigned x = (unsigned)sim_rng_below(&r->rng, tot), i = 0;
            while (x >= from_i[i].w) x -= from_i[i++].w;
            op = from_i[i].op;
        } else {
            unsigned tot = 0;
            for (unsigned i = 0; i < sizeof from_v / sizeof from_v[0]; i++) tot += from_v[i].w;
            unsigned x = (unsigned)sim_rng_below(&r->rng, tot), i = 0;
            while (x >= from_v[i].w) x -= from_v[i++].w;
            op = from_v[i].op;
        }
        cxl_dline probe = { .st = (uint8_t)st };
        if (cxl_dev_op_legal(&probe, op, core)) return op;
    }
}

static void issue_one(rnd *r, unsigned a)
{
    if (r->issued >= r->target) return;
    /* now and then a device empties its cache and sends CacheFlushed */
    if (!cxl_sys_is_core(r->s, a) && sim_rng_below(&r->rng, 400) == 0 && cxl_sys_issue(r->s, a, 0, OP_CACHE_FLUSH, 0)) {
        r->issued++;
        r->inflight[a]++;
        return;
    }
    for (unsigned tries = 0; tries < 16; tries++) {
        uint32_t line = (uint32_t)sim_rng_below(&r->rng, r->lines);
        if (cxl_sys_busy(r->s, a, line)) continue;
        unsigned st = cxl_sys_line_state(r->s, a, line);
        if (!cxl_dstate_stable(st)) continue;
        unsigned op = pick_op(r, st, cxl_sys_is_core(r->s, a));
        uint8_t v = (uint8_t)sim_rng_below(&r->rng, r->values);
        if (op == OP_WOWRINV) v = (uint8_t)(1 + sim_rng_below(&r->rng, r->values - 1));
        if (cxl_sys_issue(r->s, a, line, op, v)) {
            r->issued++;
            r->inflight[a]++;
            return;
        }
    }
}

static void on_done(void *ctx, unsigned agent, uint32_t line, unsigned op, unsigned req, sim_time_ps issued_ps,
                    const cxl_path *path)
{
    (void)line;
    (void)op;
    (void)req;
    (void)issued_ps;
    (void)path;
    rnd *r = ctx;
    r->done++;
    if ((r->done & 0xffff) == 0) sim_progress(r->c, (double)r->done / (double)r->target, "%" PRIu64 " ops", r->done);
    r->inflight[agent]--;
    /* top up to `outstanding` (issues refused while the device flushed are made now) */
    for (unsigned i = r->inflight[agent]; i < r->outstanding; i++) issue_one(r, agent);
    /* an agent left with nothing in flight (every try refused) restarts here */
    for (unsigned a = 0; a < r->na; a++)
        if (!r->inflight[a]) issue_one(r, a);
}

static void random_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    cxl_sys_cfg cfg;
    cxl_sys_cfg_defaults(&cfg);
    cxl_sys_cfg_agents_from_params(&cfg, p, "cxl_random");
    cfg.dev_sets = cfg.core_sets = (unsigned)sim_param_int(p, "sets");
    cfg.dev_ways = cfg.core_ways = (unsigned)sim_param_int(p, "ways");
    cfg.jitter_ns = sim_param_double(p, "jitter");
    cfg.inject = (unsigned)sim_param_enum(p, "inject");
    cfg.seed = c->seed;
    cfg.values = 256;
    cfg.history = true;
    cfg.trace_lines = c->trace ? (cfg.lines < 8 ? cfg.lines : 8) : 0;
    cfg.llc_lines = 256;
    cfg.log = stderr;
    cfg.watchdog_ns = 200000;
    /* few credits: exercise back-pressure too */
    cfg.credits_req = 4;
    cfg.credits_rsp = 4;
    cfg.credits_data = 4;
    cfg.cqids = 8;
    cfg.uqids = 16;
    rnd r = { 0 };
    r.c = c;
    r.lines = cfg.lines;
    r.values = cfg.values;
    r.target = (uint64_t)sim_param_int(p, "ops");
    r.outstanding = (unsigned)sim_param_int(p, "outstanding");
    const bool bench = sim_param_bool(p, "bench");
    sim_test_configured(c);
    sim_rng_seed_stream(&r.rng, c->seed, 0x7e57);
    r.s = cxl_sys_new(c->k, &cfg, c->trace);
    r.na = cfg.devices + cfg.cores;
    cxl_sys_set_done(r.s, on_done, &r);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned a = 0; a < r.na; a++)
        for (unsigned i = 0; i < r.outstanding; i++) issue_one(&r, a);
    sim_run(c->k, SIM_TIME_MAX);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

    cxl_sys_stats st;
    cxl_sys_stats_get(r.s, &st);
    char why[256] = "drained: trackers free, links conserve, directory == caches, memory == golden";
    unsigned f = cxl_sys_final_check(r.s, why, sizeof why);
    /* a run that stops with accesses pending and nothing left to do is a deadlock */
    uint64_t deadlocks = st.deadlocks + (cxl_sys_outstanding(r.s) && !st.deadlocks ? 1 : 0);
    sim_report *rep = c->report;
    sim_report_metric(rep, "ops", (double)r.done);
    sim_report_metric(rep, "loads_checked", (double)st.loads_checked);
    sim_report_metric(rep, "violations", (double)st.violations);
    sim_report_metric(rep, "deadlocks", (double)deadlocks);
    sim_report_metric(rep, "transitions_covered", st.tr_covered);
    sim_report_metric(rep, "transitions_total", st.tr_total);
    sim_report_metric(rep, "snoops", (double)st.snoops);
    sim_report_metric(rep, "hits", (double)st.hits);
    sim_report_metric(rep, "ops_per_s", wall > 0 ? (double)r.done / wall : 0);
    cJSON *reqs = cJSON_CreateObject();
    for (unsigned i = 0; i < CXL_N_D2H_REQ; i++)
        cJSON_AddNumberToObject(reqs, cxl_op_name(CXL_D2H_REQ, i), (double)st.req_ops[i]);
    sim_report_metric_json(rep, "requests_sent", reqs);
    cJSON *msgs = cJSON_CreateObject();
    static const char *const chn[CXL_N_CHAN] = { "d2h_req", "d2h_rsp", "d2h_data", "h2d_req", "h2d_rsp", "h2d_data", "mem_rd", "mem_data" };
    for (unsigned i = 0; i < CXL_N_CHAN; i++) cJSON_AddNumberToObject(msgs, chn[i], (double)st.msgs[i]);
    sim_report_metric_json(rep, "messages", msgs);
    sim_check(rep, "ops_completed", r.done == r.target, "%" PRIu64 " of %" PRIu64 " accesses completed", r.done, r.target);
    sim_check(rep, "no_violations", st.violations == 0, "%" PRIu64 " violations%s%s", st.violations,
              st.violations ? "; first: " : "", cxl_sys_first_violation(r.s));
    sim_check(rep, "no_deadlocks", deadlocks == 0, "%" PRIu64 " accesses stuck (watchdog %.0f ns)", deadlocks, cfg.watchdog_ns);
    sim_check(rep, "quiescent_consistent", f == 0, "%s", why);
    /* Message counts the protocol flow fixes per request (CXL 3.0 §3.2.4;
     * docs/models/cxl.md): every read that returns data (RdCurr, RdOwn,
     * RdShared, RdAny) gets exactly one H2D Data message and nothing else
     * does; every H2D snoop gets exactly one D2H response. */
    uint64_t reads = st.req_ops[RdCurr] + st.req_ops[RdOwn] + st.req_ops[RdShared] + st.req_ops[RdAny];
    sim_check(rep, "messages_per_request", st.msgs[CXL_H2D_DATA] == reads && st.msgs[CXL_D2H_RSP] == st.msgs[CXL_H2D_REQ],
              "%" PRIu64 " H2D Data for %" PRIu64 " data reads (1 each); %" PRIu64 " snoop responses for %" PRIu64 " snoops (1 each)",
              st.msgs[CXL_H2D_DATA], reads, st.msgs[CXL_D2H_RSP], st.msgs[CXL_H2D_REQ]);
    if (bench) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddNumberToObject(b, "ops_per_s", wall > 0 ? (double)r.done / wall : 0);
        cJSON_AddNumberToObject(b, "ops", (double)r.done);
        cJSON_AddNumberToObject(b, "wall_s", wall);
        cJSON_AddNumberToObject(b, "violations", (double)st.violations);
        cJSON_AddNumberToObject(b, "seed", (double)c->seed);
        char path[512];
        snprintf(path, sizeof path, "%s/reports/bench.json", c->out_dir);
        sim_mkdir_parents(path);
        if (sim_bench_write(path, "cxl_random", b)) sim_check(rep, "bench_written", false, "could not write %s", path);
    }
    cxl_sys_free(r.s);
}

SIM_TEST(cxl_random, "Ruby-style random tester of the CXL.cache model with always-on checkers", random_params,
         "ops=100000", random_run)
