/* xbar_equiv: the C crossbar core (golden model) and the Verilated RTL in
 * lock-step on the same inputs, over randomised configurations. Every cycle
 * every output field is compared (xbar_lockstep: valid, data and source of
 * each output, credits and their queues): same flits, same order, same cycle.
 * Also runs the iSLIP-1 reset ramp (t+1 matches in cycle t) on both sides.
 * inject=rrm gives the C model the known-wrong RRM pointer update: the
 * comparison must then find mismatches and the test exits 1. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "models/nvswitch/xbar_core.h"
#include "models/nvswitch/xbar_lockstep.h"
#include "models/nvswitch/xbar_ref.h"
#include "sim/sim.h"
#include "xbar_rtl.h"
#include "xbar_stim.h"

static const sim_param_def equiv_params[] = {
    SIM_PARAM_INT("configs", "12", "", 1, 100000, "randomised configurations"),
    SIM_PARAM_INT("cycles", "4000", "cycles", 10, 1e9, "cycles per configuration (then a drain)"),
    SIM_PARAM_INT("ports", "0", "", 0, 64, "0 = random among the prebuilt Verilated sizes; else 2..64 (Verilated on first use if not prebuilt)"),
    SIM_PARAM_INT("depth", "0", "flits", 0, 64, "credits per VOQ; 0 = random 1..32"),
    SIM_PARAM_INT("iters", "0", "", 0, 4, "iSLIP iterations; 0 = random 1..4"),
    SIM_PARAM_DOUBLE("load", "-1", "flits/cycle", -1, 1, "offered load per input; -1 = random 0.05..1"),
    SIM_PARAM_ENUM("pattern", "random", "random|" XBAR_PATTERN_NAMES, "destinations; random = pick per configuration"),
    SIM_PARAM_DOUBLE("mcast", "-1", "", -1, 1, "fraction of multicast flits; -1 = random 0..0.3"),
    SIM_PARAM_ENUM("core", "fast", "fast|ref", "the C core compared with the RTL: fast (xbar_core.c) or the plain reference (xbar_ref.c)"),
    SIM_PARAM_ENUM("inject", "none", "none|rrm", "rrm: the C model moves grant pointers on every grant (known wrong)"),
    SIM_PARAM_BOOL("ramp", "1", "also run the iSLIP-1 reset ramp for every Verilated size"),
    SIM_PARAM_INT("thr_cycles", "20000", "cycles", 0, 1e9,
                  "16-port uniform-load throughput, C and RTL run separately (0 = skip)"),
    SIM_PARAM_END,
};

typedef struct equiv_cfg {
    unsigned ports, depth, iters, latency, fanout_read;
    bool ref;               /* the C side is the reference core (core=ref) */
    double load, mcast;
    enum xbar_pattern pattern;
    uint64_t seed;
} equiv_cfg;

typedef struct equiv_tv {   /* the C model's view in the waves, next to the RTL's */
    sim_trace_var in_valid, out_valid, credit, match, cycle;
    sim_trace_var gptr[XBAR_MAX_PORTS], aptr[XBAR_MAX_PORTS], out_data[XBAR_MAX_PORTS], backlog[XBAR_MAX_PORTS];
    sim_trace_var mismatches;
} equiv_tv;

typedef struct equiv_result {
    uint64_t cycles, mismatches, copies, delivered, score_errors, credit_errors;
    char first[200];
} equiv_result;

/* The C side of a pair: the fast core or the reference, seen through its ops. */
typedef struct equiv_c { const xbar_core_ops *ops; void *impl; } equiv_c;

static equiv_c c_core_new(const xbar_core_cfg *cc, bool ref)
{
    if (ref) return (equiv_c){ &xbar_ref_ops, xbar_ref_new(cc) };
    return (equiv_c){ &xbar_core_tl_ops, xbar_core_new(cc) };
}

/* What the waves show of the C side, whichever core it is. */
static uint64_t c_cycle(const equiv_c *c)
{
    return c->ops == &xbar_ref_ops ? xbar_ref_cycle(c->impl) : xbar_core_cycle(c->impl);
}
static int c_grant_ptr(const equiv_c *c, int p)
{
    return c->ops == &xbar_ref_ops ? xbar_ref_grant_ptr(c->impl, p) : xbar_alloc_grant_ptr(xbar_core_allocator(c->impl), p);
}
static int c_accept_ptr(const equiv_c *c, int p)
{
    return c->ops == &xbar_ref_ops ? xbar_ref_accept_ptr(c->impl, p) : xbar_alloc_accept_ptr(xbar_core_allocator(c->impl), p);
}
static uint32_t c_queue_len(const equiv_c *c, int i, int q)
{
    return c->ops == &xbar_ref_ops ? xbar_ref_queue_len(c->impl, i, q) : xbar_core_queue_len(c->impl, i, q);
}

static xbar_lockstep *make_pair(const equiv_cfg *e, bool rrm, equiv_c *c_out, xbar_rtl **r_out, char *why, size_t n)
{
    xbar_core_cfg cc;
    xbar_core_cfg_default(&cc, (int)e->ports);
    cc.depth = (int)e->depth;
    cc.iters = (int)e->iters;
    cc.latency = (int)e->latency;
    cc.fanout_read = (int)e->fanout_read;
    cc.inject = rrm ? XBAR_INJECT_RRM : XBAR_INJECT_NONE;
    if (xbar_core_cfg_check(&cc, why, n) != 0) return NULL;
    equiv_c c = c_core_new(&cc, e->ref);
    xbar_rtl_cfg rc = { .ports = e->ports, .iters = e->iters, .latency = e->latency, .depth = e->depth,
                        .fanout_read = e->fanout_read };
    xbar_rtl *r = xbar_rtl_new(&rc, why, n);
    if (!c.impl || !r) {
        if (c.impl) c.ops->free(c.impl);
        xbar_rtl_free(r);
        return NULL;
    }
    *c_out = c;
    *r_out = r;
    return xbar_lockstep_new(c.ops, c.impl, &xbar_rtl_core_ops, r, (int)e->ports);
}

static void trace_c_side(sim_trace *tr, const equiv_tv *tv, uint64_t t_ps, uint64_t period_ps, const equiv_c *c,
                         const xbar_in *in, const xbar_out *out, const xbar_lockstep *ls, unsigned n)
{
    if (!tr) return;
    sim_trace_emit_u64_at(tr, t_ps, tv->cycle, c_cycle(c) - 1);
    sim_trace_emit_u64_at(tr, t_ps, tv->in_valid, in->valid);
    sim_trace_emit_u64_at(tr, t_ps, tv->out_valid, out->valid);
    sim_trace_emit_u64_at(tr, t_ps, tv->credit, out->credit);
    sim_trace_emit_u64_at(tr, t_ps, tv->match, out->match_in);
    sim_trace_emit_u64_at(tr, t_ps, tv->mismatches, ls->mismatches);
    for (unsigned p = 0; p < n; p++)
        sim_trace_emit_u64_at(tr, t_ps, tv->out_data[p], (out->valid >> p) & 1 ? out->out_data[p] : 0);
    /* Pointers and queue lengths are read after the step, i.e. the state of
     * the next cycle: stamp them there, as the RTL's registers show them. */
    for (unsigned p = 0; p < n; p++) {
        sim_trace_emit_u64_at(tr, t_ps + period_ps, tv->gptr[p], (uint64_t)c_grant_ptr(c, (int)p));
        sim_trace_emit_u64_at(tr, t_ps + period_ps, tv->aptr[p], (uint64_t)c_accept_ptr(c, (int)p));
        uint64_t held = 0;
        for (unsigned q = 0; q < n; q++) held += c_queue_len(c, (int)p, (int)q);
        sim_trace_emit_u64_at(tr, t_ps + period_ps, tv->backlog[p], held);
    }
}

/* One configuration: random traffic with credits, then a drain. */
static void run_config(sim_test_ctx *cx, const equiv_cfg *e, bool rrm, sim_trace *tr, uint64_t t0_ps, uint64_t cycles,
                       equiv_result *res)
{
    char why[256];
    equiv_c c;
    xbar_rtl *r = NULL;
    xbar_lockstep *ls = make_pair(e, rrm, &c, &r, why, sizeof why);
    if (!ls) sim_input_error("xbar_equiv: %s", why);
    const uint64_t period = 1000;
    equiv_tv tv = { 0 };
    if (tr) {
        xbar_rtl_trace_open(r, tr, "rtl", NULL, t0_ps, period);
        sim_trace_push_scope(tr, "c_model");
        tv.cycle = sim_trace_add_var(tr, "cycle", 32);
        tv.in_valid = sim_trace_add_var(tr, "in_valid", e->ports);
        tv.out_valid = sim_trace_add_var(tr, "out_valid", e->ports);
        tv.credit = sim_trace_add_var(tr, "credit", e->ports);
        tv.match = sim_trace_add_var(tr, "match", e->ports);
        tv.mismatches = sim_trace_add_var(tr, "mismatches", 32);
        for (unsigned p = 0; p < e->ports; p++) {
            sim_trace_push_scopef(tr, "port%u", p);
            tv.out_data[p] = sim_trace_add_var(tr, "out_data", 64);
            tv.gptr[p] = sim_trace_add_var(tr, "grant_ptr", 8);
            tv.aptr[p] = sim_trace_add_var(tr, "accept_ptr", 8);
            tv.backlog[p] = sim_trace_add_var(tr, "held", 16);
            sim_trace_pop_scope(tr);
        }
        sim_trace_pop_scope(tr);
        sim_trace_pop_scope(tr);        /* config<k> */
        sim_trace_freeze(tr);           /* hierarchy complete: values now go out at their own times */
    }
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = e->ports, .depth = e->depth, .load = e->load, .pattern = e->pattern,
                         .mcast_frac = e->mcast, .mcast_fanout = 2 + (unsigned)(e->seed % 3), .hot_frac = 0.3, .seed = e->seed };
    xbar_stim_init(&st, &sc);
    xbar_score sb;
    xbar_score_init(&sb, e->ports);
    xbar_in in;
    xbar_out out;
    uint64_t t = 0, drain_limit = cycles + 20000, idle_since = UINT64_MAX;
    for (; t < drain_limit; t++) {
        if (t == cycles) st.stopped = true;
        /* drained: nothing queued, every credit home (every copy popped), and
         * the output pipeline (latency cycles after the last pop) empty */
        bool idle = t >= cycles && !xbar_stim_backlog(&st) && xbar_stim_all_credits_home(&st);
        if (!idle) idle_since = UINT64_MAX;
        else if (idle_since == UINT64_MAX) idle_since = t;
        if (idle && t >= idle_since + e->latency + 1) break;
        xbar_stim_inputs(&st, &in);
        xbar_score_presented(&sb, &in);
        xbar_lockstep_step(ls, &in, &out);
        xbar_stim_credits(&st, &out);
        xbar_score_outputs(&sb, &out, t);
        trace_c_side(tr, &tv, t0_ps + t * period, period, &c, &in, &out, ls, e->ports);
        if ((t & 1023) == 0) sim_progress(cx, 0, "config ports=%u cycle %" PRIu64, e->ports, t);
    }
    res->cycles = ls->cycles_compared;
    res->mismatches = ls->mismatches;
    res->copies = sb.expected_copies;
    res->delivered = sb.delivered;
    res->score_errors = xbar_score_missing(&sb) + sb.duplicated + sb.out_of_order + sb.unknown + sb.wrong_src;
    res->credit_errors = st.credit_errors + (xbar_rtl_overflow(r) ? 1 : 0) + (xbar_stim_all_credits_home(&st) ? 0 : 1);
    res->first[0] = 0;
    if (ls->n_kept) xbar_lockstep_describe(ls, 0, res->first, sizeof res->first);
    xbar_score_free(&sb);
    xbar_stim_free(&st);
    xbar_lockstep_free(ls);   /* frees both cores */
}

/* iSLIP-1 from reset, every VOQ backlogged (broadcast flits fill them in
 * cycle 0): cycle 1+t must match t+1 pairs for t < N, on both sides. */
static void run_ramp(unsigned n, bool rrm, bool ref, uint64_t *mism, uint64_t *ramp_bad, char *first, size_t fn)
{
    equiv_cfg e = { .ports = n, .depth = 8, .iters = 1, .latency = 1, .load = 1, .pattern = XBAR_PAT_BACKLOG, .seed = 1, .ref = ref };
    char why[256];
    equiv_c c;
    xbar_rtl *r = NULL;
    xbar_lockstep *ls = make_pair(&e, rrm, &c, &r, why, sizeof why);
    if (!ls) sim_input_error("xbar_equiv: %s", why);
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = n, .depth = 8, .load = 1, .pattern = XBAR_PAT_BACKLOG, .seed = 1 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    for (unsigned t = 0; t < 3 * n + 2; t++) {
        xbar_stim_inputs(&st, &in);
        xbar_lockstep_step(ls, &in, &out);
        xbar_stim_credits(&st, &out);
        unsigned want = t == 0 ? 0 : (t - 1 < n ? t : n);
        unsigned got_c = (unsigned)__builtin_popcountll(out.match_in);
        unsigned got_r = (unsigned)__builtin_popcountll(ls->out_b.match_in);
        if (got_c != want || got_r != want) {
            if (!*ramp_bad) snprintf(first, fn, "N=%u ramp cycle %u: C %u, RTL %u matches, want %u", n, t - 1, got_c, got_r, want);
            (*ramp_bad)++;
        }
    }
    *mism += ls->mismatches;
    xbar_stim_free(&st);
    xbar_lockstep_free(ls);
}

/* One core alone (not in lock-step) under uniform traffic at full load:
 * delivered flits per output per cycle after a warm-up of cycles/10. */
static double uniform_throughput(const xbar_core_ops *ops, void *impl, unsigned n, unsigned depth, uint64_t cycles)
{
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = n, .depth = depth, .load = 1.0, .pattern = XBAR_PAT_UNIFORM, .seed = 77 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    uint64_t got = 0, warm = cycles / 10;
    for (uint64_t t = 0; t < cycles; t++) {
        xbar_stim_inputs(&st, &in);
        ops->step(impl, &in, &out);
        xbar_stim_credits(&st, &out);
        if (t >= warm) got += (uint64_t)__builtin_popcountll(out.valid);
    }
    xbar_stim_free(&st);
    ops->free(impl);
    return (double)got / (double)(cycles - warm) / n;
}

static void equiv_run(sim_test_ctx *cx)
{
    const sim_params *p = cx->params;
    const bool rrm = sim_param_enum(p, "inject") == 1;
    const bool ref = sim_param_enum(p, "core") == 1;
    const unsigned n_cfg = (unsigned)sim_param_int(p, "configs");
    const uint64_t cycles = (uint64_t)sim_param_int(p, "cycles");
    const xbar_rtl_variant *vars;
    size_t nv = xbar_rtl_variants(&vars);
    const unsigned fixed_ports = (unsigned)sim_param_int(p, "ports");
    if (fixed_ports == 1) sim_input_error("xbar_equiv: ports=1: allowed 0 (random among the prebuilt sizes) or 2..64");
    bool prebuilt = false;
    for (size_t i = 0; i < nv; i++) prebuilt |= vars[i].ports == fixed_ports;
    /* A size nothing prebuilds: its latency-1 variants, Verilated on first use. */
    const xbar_rtl_variant built[2] = { { fixed_ports, 1, 64, 4, 64, 0 }, { fixed_ports, 1, 64, 4, 64, 1 } };
    if (fixed_ports && !prebuilt) {
        vars = built;
        nv = 2;
    }
    const unsigned depth_p = (unsigned)sim_param_int(p, "depth"), iters_p = (unsigned)sim_param_int(p, "iters");
    const double load_p = sim_param_double(p, "load"), mcast_p = sim_param_double(p, "mcast");
    const int pattern_p = sim_param_enum(p, "pattern");
    const bool ramp = sim_param_bool(p, "ramp");
    const uint64_t thr_cycles = (uint64_t)sim_param_int(p, "thr_cycles");
    sim_test_configured(cx);
    sim_rng rng;
    sim_rng_seed_stream(&rng, cx->seed, 0xe9);
    cJSON *list = cJSON_CreateArray();
    uint64_t total_cycles = 0, total_mism = 0, score_err = 0, credit_err = 0, copies = 0;
    char first[400] = "";
    uint64_t t0 = 0;
    for (unsigned k = 0; k < n_cfg; k++) {
        const xbar_rtl_variant *v;
        do v = &vars[sim_rng_below(&rng, nv)];
        while (fixed_ports ? v->ports != fixed_ports : (k == 0 && (v->ports != vars[0].ports || v->fanout_read)));
        /* configuration 0 (the one in the waves) always has the smallest
         * Verilated size, so waves/xbar_equiv.gtkw names fit every seed */
        equiv_cfg e = { .ports = v->ports, .latency = v->latency, .fanout_read = v->fanout_read, .ref = ref };
        e.depth = depth_p ? depth_p : 1 + (unsigned)sim_rng_below(&rng, 32);
        e.iters = iters_p ? iters_p : 1 + (unsigned)sim_rng_below(&rng, 4);
        e.load = load_p >= 0 ? load_p : 0.05 + 0.95 * sim_rng_double(&rng);
        e.mcast = mcast_p >= 0 ? mcast_p : 0.3 * sim_rng_double(&rng);
        e.pattern = pattern_p > 0 ? (enum xbar_pattern)(pattern_p - 1) : (enum xbar_pattern)sim_rng_below(&rng, 4);
        e.seed = sim_rng_u64(&rng);
        equiv_result res;
        sim_trace *tr = k == 0 ? cx->trace : NULL;   /* waves: the first configuration */
        if (tr) sim_trace_push_scopef(tr, "config%u", k);   /* popped by run_config */
        run_config(cx, &e, rrm, tr, t0, cycles, &res);
        t0 += (res.cycles + 10) * 1000;
        total_cycles += res.cycles;
        total_mism += res.mismatches;
        score_err += res.score_errors;
        credit_err += res.credit_errors;
        copies += res.copies;
        if (!first[0] && res.first[0])
            snprintf(first, sizeof first, "config %u (ports=%u iters=%u depth=%u): %s", k, e.ports, e.iters, e.depth, res.first);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "ports", e.ports);
        cJSON_AddNumberToObject(o, "depth", e.depth);
        cJSON_AddNumberToObject(o, "iters", e.iters);
        cJSON_AddNumberToObject(o, "latency", e.latency);
        cJSON_AddNumberToObject(o, "fanout_read", e.fanout_read);
        cJSON_AddNumberToObject(o, "load", e.load);
        cJSON_AddNumberToObject(o, "mcast", e.mcast);
        cJSON_AddStringToObject(o, "pattern", (const char *[]){ "uniform", "hotspot", "transpose", "permutation", "backlog" }[e.pattern]);
        cJSON_AddNumberToObject(o, "cycles_compared", (double)res.cycles);
        cJSON_AddNumberToObject(o, "mismatches", (double)res.mismatches);
        cJSON_AddNumberToObject(o, "copies_delivered", (double)res.delivered);
        cJSON_AddItemToArray(list, o);
        if (!cx->quiet)
            fprintf(stderr, "xbar_equiv: config %u ports=%u depth=%u iters=%u L=%u fanout_read=%u load=%.2f mcast=%.2f pattern=%d: %" PRIu64
                            " cycles, %" PRIu64 " mismatches\n",
                    k, e.ports, e.depth, e.iters, e.latency, e.fanout_read, e.load, e.mcast, e.pattern, res.cycles, res.mismatches);
    }
    uint64_t ramp_bad = 0, ramp_mism = 0;
    char ramp_first[160] = "";
    if (ramp) {
        for (size_t i = 0; i < nv; i++)
            if (vars[i].latency == 1 && !vars[i].fanout_read && (i == 0 || vars[i].ports != vars[i - 1].ports))
                run_ramp(vars[i].ports, rrm, ref, &ramp_mism, &ramp_bad, ramp_first, sizeof ramp_first);
    }
    if (thr_cycles) {
        /* The same configuration in C and in RTL, each alone, same traffic seed. */
        const unsigned depth = 32, iters = iters_p ? iters_p : 1;
        xbar_core_cfg cc;
        xbar_core_cfg_default(&cc, 16);
        cc.depth = (int)depth;
        cc.iters = (int)iters;
        cc.fanout_read = 0;
        cc.inject = rrm ? XBAR_INJECT_RRM : XBAR_INJECT_NONE;
        xbar_rtl_cfg rc = { .ports = 16, .iters = iters, .latency = 1, .depth = depth };
        char why[256];
        xbar_rtl *r = xbar_rtl_new(&rc, why, sizeof why);
        if (!r) sim_input_error("xbar_equiv: %s", why);
        equiv_c c = c_core_new(&cc, ref);
        double thr_c = uniform_throughput(c.ops, c.impl, 16, depth, thr_cycles);
        double thr_r = uniform_throughput(&xbar_rtl_core_ops, r, 16, depth, thr_cycles);
        sim_report_metric(cx->report, "uniform16_throughput_c", thr_c);
        sim_report_metric(cx->report, "uniform16_throughput_rtl", thr_r);
        sim_check(cx->report, "uniform16_same_throughput", thr_c == thr_r,
                  "16 ports, VOQ depth %u, iSLIP-%u, uniform load 1.0, %" PRIu64 " cycles: RTL %.5f, C %.5f flits/output/cycle",
                  depth, iters, thr_cycles, thr_r, thr_c);
        /* Against published figures, not the other implementation: iSLIP's
         * grant pointers desynchronise and reach 100% under uniform saturated
         * load with unbounded VOQs (McKeown 1999); RRM (what inject=rrm turns
         * the C core into) stays near 63% (McKeown 1999; 0.60 here), a FIFO
         * switch at 2 - sqrt(2) = 0.586 (Karol 1987). Here 32-flit VOQs fed
         * by a FIFO source hold iSLIP-1 to ~0.92-0.94, so the line sits at 0.8:
         * well clear of both failure modes, below what finite VOQs allow. */
        if (thr_cycles >= 2000)
            sim_check(cx->report, "uniform16_islip_throughput", thr_r >= 0.8 && thr_c >= 0.8,
                      "RTL %.4f, C %.4f flits/output/cycle >= 0.8 (iSLIP desynchronises: 1.0 with unbounded VOQs; RRM 0.63, "
                      "FIFO 0.586)", thr_r, thr_c);
    }
    sim_report_metric(cx->report, "mismatches", (double)(total_mism + ramp_mism));
    sim_report_metric(cx->report, "cycles_compared", (double)total_cycles);
    sim_report_metric(cx->report, "copies_compared", (double)copies);
    sim_report_metric_json(cx->report, "configurations", list);
    sim_check(cx->report, "lockstep_equal", total_mism + ramp_mism == 0, "%" PRIu64 " mismatching fields in %" PRIu64 " cycles%s%s",
              total_mism + ramp_mism, total_cycles, first[0] ? "; first: " : "", first);
    sim_check(cx->report, "scoreboard_clean", score_err == 0,
              "%" PRIu64 " lost, duplicated, reordered or unknown copies of %" PRIu64 " (C model's outputs)", score_err, copies);
    sim_check(cx->report, "credits_conserved", credit_err == 0, "%" PRIu64 " credit errors (unknown credit, overrun, not home after drain)",
              credit_err);
    if (ramp)
        sim_check(cx->report, "islip1_reset_ramp", ramp_bad == 0, "%s",
                  ramp_bad ? ramp_first : "t+1 matches in cycle t for t < N, then N, in C and RTL, every Verilated N");
}

SIM_TEST(xbar_equiv, "C crossbar core vs Verilated RTL in lock-step over randomised configurations (inject=rrm must fail)",
         equiv_params, "configs=6 cycles=1500 thr_cycles=5000", equiv_run)
