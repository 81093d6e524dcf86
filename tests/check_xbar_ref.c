/* The reference crossbar core (models/nvswitch/xbar_ref.c): cycle rules
 * checked against hand-derived timelines, and the random tester (gem5
 * Ruby's idea) that runs the fast core and the reference side by side on
 * many random configurations and random traffic, cycle by cycle, and
 * requires the same outputs, the same matching and the same queue state.
 * A planted difference (the known-wrong RRM pointer update in either core)
 * must make it fail. More configurations or another seed:
 * XBAR_REF_CONFIGS=n XBAR_REF_SEED=s build/check_xbar_ref. */
#include "tb/nvs/nvs_experiment.h"
#include "models/nvswitch/xbar_core.h"
#include "models/nvswitch/xbar_lockstep.h"
#include "models/nvswitch/xbar_ref.h"
#include "sim/rng.h"
#include "sim/sim.h"
#include "check_upstream.h"

#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_simrun.h"
#include "check_run.h"

/* ck_assert costs a syscall per call: hot loops test with plain ifs. */
#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

static xbar_ref *ref_make(int n, xbar_queue_kind q, int depth, int latency, int fanout)
{
    xbar_core_cfg cfg;
    xbar_core_cfg_default(&cfg, n);
    cfg.queue = q;
    cfg.depth = depth;
    cfg.latency = latency;
    cfg.fanout_read = fanout;
    xbar_ref *r = xbar_ref_new(&cfg);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* ---- the rules, on hand-derived timelines ------------------------------ */

/* Every VOQ backlogged from cycle 0 (broadcast flits every cycle, fan-out
 * read off): iSLIP-1 matches t+1 pairs in allocation cycle t for t < N. */
START_TEST(ref_reset_ramp)
{
    const int sizes[] = { 2, 3, 8, 17, 64 };
    for (int k = 0; k < 5; k++) {
        const int n = sizes[k], L = 1 + k % 3;
        xbar_ref *r = ref_make(n, XBAR_QUEUE_VOQ, 0, L, 0);
        xbar_in in;
        xbar_out out;
        memset(&in, 0, sizeof in);
        in.valid = xbar_mask_all(n);
        for (int i = 0; i < n; i++) in.in[i].dest_mask = xbar_mask_all(n);
        long delivered = 0;
        for (int s = 0; s < 3 * n + L + 1; s++) {
            xbar_ref_step(r, &in, &out);
            const int want = s == 0 ? 0 : (s - 1 < n ? s : n);
            REQUIRE(xbar_ref_last_matches(r) == want, "N=%d step %d: %d matches, want %d", n, s, xbar_ref_last_matches(r), want);
            REQUIRE(__builtin_popcountll(out.match_in) == want, "N=%d step %d: match_in", n, s);
            if (s >= 1 + L && s < 1 + L + n) delivered += __builtin_popcountll(out.valid);
            REQUIRE(s >= 1 + L || !out.valid, "N=%d: output before cycle 1+L", n);
        }
        ck_assert_int_eq(delivered, (long)n * (n + 1) / 2);
        xbar_ref_free(r);
    }
}
END_TEST

/* One flit presented in cycle 5: driven in 5 + 1 + L, its credit in 5 + 2. */
START_TEST(ref_zero_load_timing)
{
    for (int q = 0; q <= 1; q++)
        for (int L = 1; L <= 4; L++) {
            xbar_ref *r = ref_make(6, (xbar_queue_kind)q, 4, L, 0);
            xbar_in in;
            xbar_out out;
            memset(&in, 0, sizeof in);
            for (int t = 0; t < 20; t++) {
                in.valid = t == 5 ? 1ULL << 2 : 0;
                in.in[2].data = 0xabc;
                in.in[2].dest_mask = 1ULL << 4;
                xbar_ref_step(r, &in, &out);
                REQUIRE(out.valid == (t == 6 + L ? 1ULL << 4 : 0), "%s L=%d cycle %d: valid %#llx", q ? "fifo" : "voq", L, t,
                        (unsigned long long)out.valid);
                if (out.valid) REQUIRE(out.out_data[4] == 0xabc && out.out_src[4] == 2, "data/src");
                REQUIRE(out.credit == (t == 7 ? 1ULL << 2 : 0), "cycle %d: credit %#llx", t, (unsigned long long)out.credit);
                if (out.credit) REQUIRE(out.credit_queue[2] == (q ? 0 : 4), "credit_queue");
            }
            xbar_ref_free(r);
        }
}
END_TEST

/* A broadcast flit from input 0 to outputs 1..3 of a 4-port switch, idle
 * otherwise. Allocation in cycle 1: outputs 1, 2, 3 all grant input 0, which
 * accepts output 1 (a[0] = 0). Fan-out read: outputs 2 and 3 join, so all
 * three copies leave in cycle 2, the VOQ (0,1) credit and credit_extra bits
 * 2, 3 in cycle 2. Without it the copies are matched in cycles 1, 2, 3
 * (a[0] moves past each accepted output). A FIFO input returns one credit,
 * in the cycle after the last copy leaves the buffer. */
START_TEST(ref_multicast_fanout_read)
{
    for (int q = 0; q <= 1; q++)
        for (int fan = 0; fan <= 1; fan++) {
            xbar_ref *r = ref_make(4, (xbar_queue_kind)q, 2, 1, fan);
            xbar_in in;
            xbar_out out;
            memset(&in, 0, sizeof in);
            uint64_t seen = 0;
            int credits = 0;
            for (int t = 0; t < 8; t++) {
                in.valid = t == 0 ? 1 : 0;
                in.in[0].data = 77;
                in.in[0].dest_mask = 0xe;
                xbar_ref_step(r, &in, &out);
                const uint64_t want = fan ? (t == 2 ? 0xe : 0) : (t >= 2 && t <= 4 ? 1ULL << (t - 1) : 0);
                REQUIRE(out.valid == want, "%s fan=%d cycle %d: valid %#llx, want %#llx", q ? "fifo" : "voq", fan, t,
                        (unsigned long long)out.valid, (unsigned long long)want);
                seen |= out.valid;
                if (q == XBAR_QUEUE_FIFO) {
                    REQUIRE(out.credit == ((fan ? t == 2 : t == 4) ? 1ULL : 0), "fifo fan=%d cycle %d: credit", fan, t);
                    REQUIRE(out.credit_extra[0] == 0, "fifo: credit_extra");
                } else {
                    REQUIRE(out.credit == (t >= 2 && t <= (fan ? 2 : 4) ? 1ULL : 0), "voq fan=%d cycle %d: credit", fan, t);
                    if (out.credit) REQUIRE(out.credit_queue[0] == t - 1, "voq: credit_queue %d", out.credit_queue[0]);
                    REQUIRE(out.credit_extra[0] == (fan && t == 2 ? 0xcULL : 0), "voq fan=%d cycle %d: credit_extra", fan, t);
                }
                credits += __builtin_popcountll(out.credit) + __builtin_popcountll(out.credit_extra[0]);
                if (t == 1) REQUIRE(xbar_ref_last_fanout(r) == (fan ? 2 : 0), "fan-outs in cycle 1");
            }
            ck_assert_uint_eq(seen, 0xe);
            ck_assert_int_eq(credits, q == XBAR_QUEUE_FIFO ? 1 : 3);
            ck_assert_uint_eq(xbar_ref_backlog(r), 0);
            xbar_ref_free(r);
        }
}
END_TEST

/* Fan-out splitting: a copy left behind by a busy output leaves as soon as
 * its output is free, whatever the input's match reads. 3 ports, iSLIP-1.
 * Cycle 0: input 0 presents U0a to output 1. Cycle 1: (0,1) matched (g[1]=1,
 * a[0]=2); input 0 presents M to {1,2}, input 1 presents U1 to 1. Cycle 2:
 * output 1 grants input 1 (g[1]=1), output 2 grants input 0, both accepted
 * (a[0]=0, g[1]=2); input 0 presents U0b to output 0. Cycle 3: outputs 0 and
 * 1 grant input 0, which accepts output 0 (a[0]=0) and reads U0b; output 1
 * is left unmatched and takes M's copy from VOQ (0,1): input 0 drives two
 * different flits in cycle 4, the copy's slot returned in credit_extra. */
START_TEST(ref_fanout_splitting)
{
    xbar_ref *r = ref_make(3, XBAR_QUEUE_VOQ, 4, 1, 1);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    const struct { uint64_t valid, dm0, dm1; } pres[3] = { { 1, 2, 0 }, { 3, 6, 2 }, { 1, 1, 0 } };
    const uint64_t want_valid[6] = { 0, 0, 2, 6, 3, 0 };
    const uint64_t want_data[6][3] = { { 0 }, { 0 }, { 0, 10, 0 }, { 0, 20, 11 }, { 12, 11, 0 }, { 0 } };
    const uint64_t want_credit[6] = { 0, 0, 1, 3, 1, 0 };
    for (int t = 0; t < 6; t++) {
        in.valid = t < 3 ? pres[t].valid : 0;
        in.in[0].data = 10 + (uint64_t)t; /* U0a = 10, M = 11, U0b = 12 */
        in.in[0].dest_mask = t < 3 ? pres[t].dm0 : 0;
        in.in[1].data = 20;
        in.in[1].dest_mask = t < 3 ? pres[t].dm1 : 0;
        xbar_ref_step(r, &in, &out);
        REQUIRE(out.valid == want_valid[t], "cycle %d: valid %#llx, want %#llx", t, (unsigned long long)out.valid,
                (unsigned long long)want_valid[t]);
        for (int j = 0; j < 3; j++)
            if (out.valid >> j & 1) REQUIRE(out.out_data[j] == want_data[t][j], "cycle %d output %d: data %llu", t, j, (unsigned long long)out.out_data[j]);
        REQUIRE(out.credit == want_credit[t], "cycle %d: credit %#llx", t, (unsigned long long)out.credit);
        REQUIRE(out.credit_extra[0] == (t == 4 ? 2u : 0u), "cycle %d: credit_extra %#llx", t, (unsigned long long)out.credit_extra[0]);
        if (t == 3) REQUIRE(xbar_ref_last_fanout(r) == 1 && xbar_ref_last_matches(r) == 1, "cycle 3: one match, one fan-out read");
    }
    REQUIRE(out.out_src[1] == 0, "the split copy comes from input 0");
    ck_assert_uint_eq(xbar_ref_backlog(r), 0);
    xbar_ref_free(r);
}
END_TEST

/* Inputs 0 and 1 both send to output 0 in cycle 0 (depth 1): output 0
 * grants input 0 in cycle 1, so VOQ (1,0) is still full when input 1
 * presents again in cycle 1, ignoring its credit: the core aborts. */
START_TEST(ref_overflow_aborts)
{
    xbar_ref *r = ref_make(4, XBAR_QUEUE_VOQ, 1, 1, 0);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    in.valid = 3;
    in.in[0].dest_mask = in.in[1].dest_mask = 1;
    xbar_ref_step(r, &in, &out);
    in.valid = 2;
    xbar_ref_step(r, &in, &out); /* aborts */
}
END_TEST

START_TEST(ref_bad_config_rejected)
{
    xbar_core_cfg cfg;
    xbar_core_cfg_default(&cfg, 1);
    ck_assert_ptr_null(xbar_ref_new(&cfg));
    xbar_core_cfg_default(&cfg, 8);
    cfg.latency = 0;
    ck_assert_ptr_null(xbar_ref_new(&cfg));
    xbar_core_cfg_default(&cfg, 8);
    cfg.alloc = XBAR_ALLOC_WAVEFRONT;
    cfg.inject = XBAR_INJECT_RRM;
    ck_assert_ptr_null(xbar_ref_new(&cfg));
}
END_TEST

/* ---- the random tester -------------------------------------------------- */

typedef struct rt_cfg {
    xbar_core_cfg core;
    xbar_inject inject_fast, inject_ref; /* core.inject is ignored: each side its own */
    double load;       /* chance an idle input starts a packet in a cycle */
    double mcast;      /* chance a packet is multicast */
    double hot;        /* chance a unicast packet goes to output 0 */
    double gap;        /* chance a packet's next flit waits a cycle */
    int pkt_max;       /* packet length 1..pkt_max flits */
    int runs;          /* the fast core takes unicast packets whole (xbar_core_present_run) */
    int cycles;        /* then a drain */
} rt_cfg;

static void rt_describe(const rt_cfg *c, uint64_t seed, char *buf, size_t n)
{
    snprintf(buf, n,
             "seed %" PRIu64 ": ports=%d %s alloc=%s iters=%d depth=%d shared=%d L=%d fanout_read=%d inject fast/ref=%d/%d "
             "load=%.2f mcast=%.2f hot=%.2f gap=%.2f pkt_max=%d runs=%d cycles=%d",
             seed, c->core.ports, c->core.queue == XBAR_QUEUE_FIFO ? "fifo" : "voq", xbar_alloc_name(c->core.alloc),
             c->core.iters, c->core.depth, c->core.shared, c->core.latency, c->core.fanout_read, c->inject_fast, c->inject_ref,
             c->load, c->mcast, c->hot, c->gap, c->pkt_max, c->runs, c->cycles);
}

/* Every configuration the fast core accepts is fair game; small switches
 * are drawn more often (contention is denser there and runs are cheaper). */
static rt_cfg rt_random_cfg(sim_rng *g)
{
    rt_cfg c;
    memset(&c, 0, sizeof c);
    const int size_class = (int)sim_rng_below(g, 10);
    const int n = size_class < 5 ? 2 + (int)sim_rng_below(g, 7) : size_class < 8 ? 9 + (int)sim_rng_below(g, 16) : 25 + (int)sim_rng_below(g, 40);
    xbar_core_cfg_default(&c.core, n);
    c.core.queue = sim_rng_below(g, 4) == 0 ? XBAR_QUEUE_FIFO : XBAR_QUEUE_VOQ;
    c.core.alloc = (xbar_alloc_kind)sim_rng_below(g, 4);
    c.core.iters = c.core.alloc == XBAR_ALLOC_WAVEFRONT ? 1 : 1 + (int)sim_rng_below(g, sim_rng_below(g, 10) ? 4 : (uint64_t)n);
    if (c.core.alloc == XBAR_ALLOC_ISLIP && sim_rng_below(g, 8) == 0) c.inject_fast = c.inject_ref = XBAR_INJECT_RRM; /* the same wrong rule in both */
    c.core.depth = sim_rng_below(g, 5) == 0 ? 0 : 1 + (int)sim_rng_below(g, 16);
    c.core.shared = c.core.queue == XBAR_QUEUE_VOQ && sim_rng_below(g, 4) == 0;
    if (c.core.shared && c.core.depth) c.core.depth = n + (int)sim_rng_below(g, 2 * (uint64_t)n); /* a broadcast fits */
    c.core.latency = sim_rng_below(g, 8) == 0 ? 5 + (int)sim_rng_below(g, 40) : 1 + (int)sim_rng_below(g, 3);
    if (sim_rng_below(g, 50) == 0) c.core.latency = 1024; /* the longest pipeline allowed */
    c.core.fanout_read = (int)sim_rng_below(g, 2);
    c.core.seed = sim_rng_u64(g);
    c.load = 0.02 + 0.98 * sim_rng_double(g);
    c.mcast = sim_rng_below(g, 3) == 0 ? 0 : 0.5 * sim_rng_double(g);
    c.hot = sim_rng_below(g, 3) == 0 ? 0.5 * sim_rng_double(g) : 0;
    c.gap = sim_rng_below(g, 2) ? 0 : 0.3 * sim_rng_double(g);
    c.pkt_max = 1 + (int)sim_rng_below(g, 12);
    c.runs = c.core.queue == XBAR_QUEUE_VOQ && !c.core.shared && (int)sim_rng_below(g, 2);
    c.cycles = n > 24 ? 300 + (int)sim_rng_below(g, 500) : 500 + (int)sim_rng_below(g, 2000);
    return c;
}

/* One (input, output) pair's copies in flight, in presentation order. */
typedef struct rt_pair { uint64_t *data; size_t head, len, cap; } rt_pair;

static void pair_push(rt_pair *p, uint64_t d)
{
    if (p->len == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 8;
        uint64_t *nd = malloc(cap * sizeof *nd);
        for (size_t k = 0; k < p->len; k++) nd[k] = p->data[(p->head + k) % p->cap];
        free(p->data);
        p->data = nd;
        p->head = 0;
        p->cap = cap;
    }
    p->data[(p->head + p->len++) % p->cap] = d;
}

typedef struct rt_result {
    uint64_t mismatches;   /* differing fields and state, fast vs reference */
    uint64_t errors;       /* scoreboard and credit errors (on the reference's outputs) */
    uint64_t copies;       /* copies delivered */
    uint64_t run_flits;    /* flits the fast core took as presentation runs */
    uint64_t fanouts;      /* fan-out reads */
    char first[400];
} rt_result;

static void rt_note(rt_result *res, uint64_t cycle, const char *what, long a, long b)
{
    if (!res->mismatches)
        snprintf(res->first, sizeof res->first, "cycle %" PRIu64 " %s: ref=%ld fast=%ld", cycle, what, a, b);
    res->mismatches++;
}

static void rt_error(rt_result *res, uint64_t cycle, const char *what, int i, int j)
{
    if (!res->errors && !res->mismatches)
        snprintf(res->first, sizeof res->first, "cycle %" PRIu64 " %s (input %d, output %d)", cycle, what, i, j);
    res->errors++;
}

/* The fast core and the reference on the same traffic. The upstream honours
 * the reference's credits; the scoreboard checks the reference's outputs
 * (each copy once, in order per pair); every cycle the fast core's outputs,
 * matching, fan-out count, backlog, pipeline and allocator pointers must be
 * the reference's (queue lengths too, every cycle for N <= 16). Stops at
 * the first cycle that differs. */
static rt_result rt_run(const rt_cfg *c, uint64_t seed)
{
    rt_result res;
    memset(&res, 0, sizeof res);
    const int n = c->core.ports, depth = c->core.depth, L = c->core.latency;
    const int voq = c->core.queue == XBAR_QUEUE_VOQ, shared = c->core.shared;
    xbar_core_cfg cf = c->core, cr = c->core;
    cf.inject = c->inject_fast;
    cr.inject = c->inject_ref;
    xbar_core *fast = xbar_core_new(&cf);
    xbar_ref *ref = xbar_ref_new(&cr);
    ck_assert_ptr_nonnull(fast);
    ck_assert_ptr_nonnull(ref);
    xbar_lockstep *ls = xbar_lockstep_new(&xbar_ref_ops, ref, &xbar_core_tl_ops, fast, n);
    ls->compare_match = true;
    const xbar_alloc *fa = xbar_core_allocator(fast);

    /* Upstream: credits per pool (private VOQ: per output; FIFO, shared: column 0). */
    int credit[XBAR_MAX_PORTS][XBAR_MAX_PORTS];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) credit[i][j] = depth;
    rt_pair *pairs = calloc((size_t)n * (size_t)n, sizeof *pairs);
    uint64_t pkt_dm[XBAR_MAX_PORTS] = { 0 }, next_data[XBAR_MAX_PORTS] = { 0 };
    int pkt_left[XBAR_MAX_PORTS] = { 0 }, in_run[XBAR_MAX_PORTS] = { 0 };
    sim_rng g;
    sim_rng_seed(&g, seed);
    for (int i = 0; i < n; i++) next_data[i] = sim_rng_u64(&g);
    xbar_in in, in_fast;
    xbar_out out, out_fast;
    memset(&in, 0, sizeof in);
    const uint64_t limit = (uint64_t)c->cycles + 100000;
    uint64_t t = 0, quiet = 0;
    for (; quiet < (uint64_t)L + 3; t++) {
        if (t >= limit) {
            rt_error(&res, t, "no drain", -1, -1);
            break;
        }
        in.valid = 0;
        uint64_t by_run = 0;
        for (int i = 0; i < n; i++) {
            if (!pkt_left[i]) { /* idle: maybe a new packet */
                if (t >= (uint64_t)c->cycles || !sim_rng_bernoulli(&g, c->load)) continue;
                if (sim_rng_bernoulli(&g, c->mcast)) {
                    pkt_dm[i] = sim_rng_u64(&g) & xbar_mask_all(n);
                    if (!pkt_dm[i]) pkt_dm[i] = xbar_mask_all(n);
                } else {
                    pkt_dm[i] = 1ULL << (sim_rng_bernoulli(&g, c->hot) ? 0 : sim_rng_below(&g, (uint64_t)n));
                }
                pkt_left[i] = 1 + (int)sim_rng_below(&g, (uint64_t)c->pkt_max);
                if (sim_rng_below(&g, 2)) next_data[i] = sim_rng_u64(&g); /* else it continues the last packet's tags */
                const uint64_t dm = pkt_dm[i];
                const int j = __builtin_ctzll(dm);
                if (c->runs && pkt_left[i] >= 2 && !(dm & (dm - 1)) && (!depth || credit[i][j] >= pkt_left[i])) {
                    /* the whole packet's credits now, as a store-and-forward upstream spends them */
                    REQUIRE(xbar_core_present_run(fast, i, next_data[i], dm, (uint32_t)pkt_left[i]),
                            "fast core refused a run it has room for: cycle %" PRIu64 " input %d", t, i);
                    if (depth) credit[i][j] -= pkt_left[i];
                    in_run[i] = 1;
                    res.run_flits += (uint64_t)pkt_left[i];
                }
            }
            const uint64_t dm = pkt_dm[i];
            if (!in_run[i]) {
                if (sim_rng_bernoulli(&g, c->gap)) continue;
                if (!upstream_take(credit[i], dm, depth, voq, shared)) continue;
            } else {
                by_run |= 1ULL << i;
            }
            in.valid |= 1ULL << i;
            in.in[i].data = next_data[i]++;
            in.in[i].dest_mask = dm;
            for (uint64_t d = dm; d; d &= d - 1) pair_push(&pairs[i * n + __builtin_ctzll(d)], in.in[i].data);
            if (!--pkt_left[i]) in_run[i] = 0;
        }
        in_fast = in;
        in_fast.valid &= ~by_run; /* those flits are in the fast core's run already */

        xbar_ref_step(ref, &in, &out);
        xbar_core_step(fast, &in_fast, &out_fast);
        if (xbar_lockstep_compare(ls, &out, &out_fast) && !res.mismatches) {
            xbar_lockstep_describe(ls, 0, res.first, sizeof res.first);
            res.mismatches += ls->mismatches;
        }
        if (xbar_ref_last_matches(ref) != xbar_core_last_matches(fast))
            rt_note(&res, t, "matches", xbar_ref_last_matches(ref), xbar_core_last_matches(fast));
        if (xbar_ref_last_fanout(ref) != xbar_core_last_fanout(fast))
            rt_note(&res, t, "fan-out reads", xbar_ref_last_fanout(ref), xbar_core_last_fanout(fast));
        if (xbar_ref_backlog(ref) != xbar_core_backlog(fast))
            rt_note(&res, t, "backlog", (long)xbar_ref_backlog(ref), (long)xbar_core_backlog(fast));
        if (xbar_ref_in_flight(ref) != xbar_core_in_flight(fast))
            rt_note(&res, t, "in flight", (long)xbar_ref_in_flight(ref), (long)xbar_core_in_flight(fast));
        for (int p = 0; p < n; p++) {
            if (xbar_ref_grant_ptr(ref, p) != xbar_alloc_grant_ptr(fa, p))
                rt_note(&res, t, "grant pointer", xbar_ref_grant_ptr(ref, p), xbar_alloc_grant_ptr(fa, p));
            if (xbar_ref_accept_ptr(ref, p) != xbar_alloc_accept_ptr(fa, p))
                rt_note(&res, t, "accept pointer", xbar_ref_accept_ptr(ref, p), xbar_alloc_accept_ptr(fa, p));
        }
        for (int i = 0; (n <= 16 || (t & 15) == 0) && i < n; i++)
            for (int q = 0; q < (voq ? n : 1); q++)
                if (xbar_ref_queue_len(ref, i, q) != xbar_core_queue_len(fast, i, q))
                    rt_note(&res, t, "queue length", (long)xbar_ref_queue_len(ref, i, q), (long)xbar_core_queue_len(fast, i, q));
        if (res.mismatches) break;
        res.fanouts += (uint64_t)xbar_ref_last_fanout(ref);

        /* Scoreboard and credits, on the reference's outputs. */
        for (uint64_t m = out.valid; m; m &= m - 1) {
            const int j = __builtin_ctzll(m), i = out.out_src[j];
            rt_pair *p = i < n ? &pairs[i * n + j] : NULL;
            if (!p || !p->len) rt_error(&res, t, "copy never presented (or duplicated)", i, j);
            else if (p->data[p->head] != out.out_data[j]) rt_error(&res, t, "copy out of order", i, j);
            else {
                p->head = (p->head + 1) % p->cap;
                p->len--;
                res.copies++;
            }
        }
        for (uint64_t m = out.credit; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            credit[i][voq && !shared ? out.credit_queue[i] : 0]++;
        }
        for (int i = 0; i < n; i++)
            for (uint64_t d = out.credit_extra[i]; d; d &= d - 1) {
                if (!voq) rt_error(&res, t, "credit_extra from a FIFO core", i, __builtin_ctzll(d));
                credit[i][shared ? 0 : __builtin_ctzll(d)]++;
            }
        if (!c->core.fanout_read)
            for (int i = 0; i < n; i++)
                if (out.credit_extra[i]) rt_error(&res, t, "credit_extra without fan-out read", i, -1);
        for (int i = 0; depth && i < n; i++)
            for (int q = 0; q < n; q++)
                if (credit[i][q] > depth) rt_error(&res, t, "more credits than slots", i, q);
        if (res.errors) break;
        bool idle = t >= (uint64_t)c->cycles && !xbar_ref_backlog(ref) && !xbar_ref_in_flight(ref);
        for (int i = 0; i < n; i++) idle &= !pkt_left[i];
        quiet = idle ? quiet + 1 : 0;
    }
    if (!res.mismatches && !res.errors) {
        for (int k = 0; k < n * n; k++)
            if (pairs[k].len) rt_error(&res, t, "copies never delivered", k / n, k % n);
        for (int i = 0; depth && i < n; i++)
            for (int q = 0; q < (voq && !shared ? n : 1); q++)
                if (credit[i][q] != depth) rt_error(&res, t, "credits not home after the drain", i, q);
    }
    for (int k = 0; k < n * n; k++) free(pairs[k].data);
    free(pairs);
    xbar_lockstep_free(ls);
    return res;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* Many random configurations, each with its own traffic: the fast core must
 * be the reference, cycle by cycle, and conserve every copy and credit. */
START_TEST(random_fast_equals_ref)
{
    const long configs = env_long("XBAR_REF_CONFIGS", 250);
    const uint64_t seed0 = (uint64_t)env_long("XBAR_REF_SEED", 2026);
    sim_rng g;
    sim_rng_seed(&g, seed0);
    uint64_t copies = 0, run_flits = 0, fanouts = 0, cfg_kind[2][4] = { { 0 } };
    for (long k = 0; k < configs; k++) {
        rt_cfg c = rt_random_cfg(&g);
        const uint64_t seed = sim_rng_u64(&g);
        rt_result res = rt_run(&c, seed);
        char what[400];
        rt_describe(&c, seed, what, sizeof what);
        REQUIRE(!res.mismatches && !res.errors, "config %ld (%s): %" PRIu64 " mismatches, %" PRIu64 " errors; first: %s", k, what,
                res.mismatches, res.errors, res.first);
        copies += res.copies;
        run_flits += res.run_flits;
        fanouts += res.fanouts;
        cfg_kind[c.core.queue][c.core.alloc]++;
    }
    /* the draw must have reached what it is meant to test */
    for (int q = 0; q < 2; q++)
        for (int a = 0; a < 4; a++) ck_assert_msg(configs < 100 || cfg_kind[q][a] > 0, "no %s/%s configuration drawn", q ? "fifo" : "voq", xbar_alloc_name((xbar_alloc_kind)a));
    ck_assert_msg(configs < 100 || (run_flits > 10000 && fanouts > 1000 && copies > 1000000),
                  "thin coverage: %" PRIu64 " copies, %" PRIu64 " run flits, %" PRIu64 " fan-out reads", copies, run_flits, fanouts);
    fprintf(stderr, "check_xbar_ref: %ld configurations (seed %" PRIu64 "): %" PRIu64 " copies, %" PRIu64 " run flits, %" PRIu64
                    " fan-out reads, fast == ref\n",
            configs, seed0, copies, run_flits, fanouts);
}
END_TEST

/* A planted difference must fail the tester, in either core: the RRM
 * pointer update (inject=rrm) in the fast core alone, then in the reference
 * alone, on contended iSLIP configurations. */
START_TEST(random_tester_catches_planted_rrm)
{
    sim_rng g;
    sim_rng_seed(&g, 99);
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < 12; k++) {
            rt_cfg c = rt_random_cfg(&g);
            c.core.alloc = XBAR_ALLOC_ISLIP;
            c.core.queue = XBAR_QUEUE_VOQ; /* a unicast FIFO head requests one output: every grant is accepted */
            c.core.iters = 1 + k % 4;
            if (c.core.ports < 4) c.core.ports = 4 + k;
            c.load = 0.6 + 0.4 * sim_rng_double(&g);
            c.hot = 0;
            c.cycles = 1500;
            (side ? &c.inject_ref : &c.inject_fast)[0] = XBAR_INJECT_RRM;
            const uint64_t seed = sim_rng_u64(&g);
            rt_result res = rt_run(&c, seed);
            char what[400];
            rt_describe(&c, seed, what, sizeof what);
            REQUIRE(res.mismatches > 0, "RRM planted in the %s core went unnoticed: %s", side ? "reference" : "fast", what);
            REQUIRE(strstr(res.first, "cycle ") != NULL, "mismatch not described: %s", res.first);
        }
}
END_TEST

/* ---- the reference inside the switch component -------------------------- */

static nvs_uniform_cfg ucfg(int n, xbar_queue_kind q, xbar_alloc_kind a, int depth, double load, int pkt_flits, bool saf)
{
    nvs_uniform_cfg c;
    memset(&c, 0, sizeof c);
    xbar_core_cfg_default(&c.net.sw.core, n);
    c.net.sw.core.queue = q;
    c.net.sw.core.alloc = a;
    c.net.sw.core.iters = 2;
    c.net.sw.core.depth = depth;
    c.net.sw.core.fanout_read = 1;
    c.net.sw.core.seed = 3;
    c.net.sw.saf = saf;
    c.net.sw.credit_batch = 1;
    c.net.port_GBps = 25;
    c.net.flit_bytes = 16;
    c.net.link_latency_ns = 1;
    c.load = load;
    c.pattern = TRAFFIC_UNIFORM;
    c.pkt_flits = pkt_flits;
    c.cycles = 4000;
    c.warmup = 500;
    c.seed = 5;
    c.record_latency = true;
    return c;
}

static nvs_uniform_result urun(const nvs_uniform_cfg *c)
{
    nvs_uniform_result r;
    char why[256] = "";
    sim_kernel *k = sim_kernel_new();
    int rc = nvs_run_uniform(k, c, &r, why, sizeof why);
    sim_kernel_free(k);
    ck_assert_msg(rc == 0, "run refused: %s", why);
    ck_assert_msg(r.cons.dropped == 0 && r.cons.duplicated == 0 && r.cons.out_of_order == 0, "conservation");
    return r;
}

/* model=tl core=ref: the switch on the reference gives the results of the
 * switch on the fast core (whose runs, packet mode and egress shortcuts the
 * reference does not have), to the last kernel event. */
START_TEST(switch_on_ref_equals_switch_on_fast)
{
    for (int k = 0; k < 6; k++) {
        nvs_uniform_cfg c = ucfg(k == 5 ? 32 : 5 + 2 * k, k == 4 ? XBAR_QUEUE_FIFO : XBAR_QUEUE_VOQ, (xbar_alloc_kind)(k % 4),
                                 k == 2 ? 0 : 24, 0.5 + 0.1 * k, 1 + 3 * (k % 3), k % 2);
        c.net.sw.core.shared = k == 3;
        c.net.sw.core.latency = 1 + k % 3;
        c.net.sw.credit_batch = 1 + k % 4;
        if (k == 1) c.pattern = TRAFFIC_HOTSPOT, c.hotspot_frac = 0.3;
        nvs_uniform_result a = urun(&c);
        c.net.sw.c_core = NVS_C_CORE_REF;
        nvs_uniform_result b = urun(&c);
        ck_assert_msg(a.cons.copies_delivered > 1000, "config %d moved only %" PRIu64, k, a.cons.copies_delivered);
        ck_assert_msg(a.sim_events == b.sim_events && a.sim_time_ps == b.sim_time_ps, "config %d: kernel events or end time differ", k);
        ck_assert_msg(a.throughput == b.throughput && a.latency_avg_cycles == b.latency_avg_cycles &&
                          a.latency_p99_cycles == b.latency_p99_cycles && a.backlog_end == b.backlog_end,
                      "config %d: results differ (throughput %.6f vs %.6f)", k, a.throughput, b.throughput);
        ck_assert_msg(!memcmp(a.per_input, b.per_input, sizeof a.per_input) && !memcmp(a.per_output, b.per_output, sizeof a.per_output),
                      "config %d: per-port throughputs differ", k);
        ck_assert_uint_eq(a.cons.copies_delivered, b.cons.copies_delivered);
    }
}
END_TEST

/* core= through simrun: bad names and core with model=rtl are input errors. */
static char outdir[64];


START_TEST(core_param_checked)
{
    char out[4096];
    snprintf(outdir, sizeof outdir, "/tmp/check_xbar_ref.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(outdir));
    ck_assert_int_eq(check_simrun(outdir, "nvswitch_uniform core=slow", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "fast|ref") != NULL, "%s", out);
    ck_assert_int_eq(check_simrun(outdir, "nvswitch_fanout model=rtl core=ref", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "core=ref") != NULL && strstr(out, "model=rtl") != NULL, "%s", out);
    ck_assert_int_eq(check_simrun(outdir, "nvswitch_uniform core=ref ports=6 cycles=2000 warmup=200", out, sizeof out), 0);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", outdir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("xbar_ref");
    TCase *tc = tcase_create("ref");
    tcase_add_test(tc, ref_reset_ramp);
    tcase_add_test(tc, ref_zero_load_timing);
    tcase_add_test(tc, ref_multicast_fanout_read);
    tcase_add_test(tc, ref_fanout_splitting);
    tcase_add_test_raise_signal(tc, ref_overflow_aborts, SIGABRT);
    tcase_add_test(tc, ref_bad_config_rejected);
    tcase_add_test(tc, random_fast_equals_ref);
    tcase_add_test(tc, random_tester_catches_planted_rrm);
    tcase_add_test(tc, switch_on_ref_equals_switch_on_fast);
    tcase_add_test(tc, core_param_checked);
    tcase_set_timeout(tc, 240);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
