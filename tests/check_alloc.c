/* Unit tests of the crossbar allocators and the C crossbar core: the iSLIP
 * reset ramp, the pointer rules, PIM determinism, matching validity, the
 * multicast bookkeeping, pipeline timing and the lock-step comparator. */
#include "models/nvswitch/xbar_alloc.h"
#include "models/nvswitch/xbar_core.h"
#include "models/nvswitch/xbar_lockstep.h"
#include "sim/rng.h"
#include "check_upstream.h"
#include "check_run.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ck_assert costs a syscall per call (Check marks every point), so hot loops
 * test with plain ifs and only call into Check on failure. */
#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

static xbar_core *core_make(int n, xbar_queue_kind q, xbar_alloc_kind a, int iters, int depth, int latency,
                            int fanout, xbar_inject inj)
{
    xbar_core_cfg cfg;
    xbar_core_cfg_default(&cfg, n);
    cfg.queue = q;
    cfg.alloc = a;
    cfg.iters = iters;
    cfg.depth = depth;
    cfg.latency = latency;
    cfg.fanout_read = fanout;
    cfg.inject = inj;
    cfg.seed = 7;
    xbar_core *c = xbar_core_new(&cfg);
    ck_assert_ptr_nonnull(c);
    return c;
}

/* Every VOQ backlogged from the first allocation (an all-ones multicast flit
 * presented at every input every cycle, fan-out read off): iSLIP-1 matches
 * t+1 pairs in allocation cycle t for t < N, then N; the first N cycles
 * deliver N(N+1)/2 cells. */
static void ramp_check(int n, int latency)
{
    xbar_core *c = core_make(n, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 0, latency, 0, XBAR_INJECT_NONE);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    in.valid = xbar_mask_all(n);
    for (int i = 0; i < n; i++) in.in[i].dest_mask = xbar_mask_all(n);
    long delivered = 0;
    for (int s = 0; s < 3 * n + latency + 1; s++) {
        for (int i = 0; i < n; i++) in.in[i].data = ((uint64_t)i << 32) | (uint64_t)s;
        xbar_core_step(c, &in, &out);
        int m = xbar_core_last_matches(c);
        /* step 0 sees empty queues; allocation cycle t = step t+1 */
        int expect = s == 0 ? 0 : (s - 1 < n ? s : n);
        REQUIRE(m == expect, "N=%d step %d: %d matches, expected %d", n, s, m, expect);
        REQUIRE(__builtin_popcountll(out.match_in) == m, "match_in");
        if (s >= 1 + latency && s < 1 + latency + n) delivered += __builtin_popcountll(out.valid);
        REQUIRE(s >= 1 + latency || out.valid == 0, "early output");
    }
    ck_assert_int_eq(delivered, (long)n * (n + 1) / 2);
    xbar_core_free(c);
}

START_TEST(islip1_reset_ramp)
{
    ramp_check(16, 1);
    ramp_check(64, 1);
    ramp_check(5, 3);
    ramp_check(2, 1);
    ramp_check(37, 2);
}
END_TEST

START_TEST(islip4_starts_at_4)
{
    xbar_core *c = core_make(16, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 4, 0, 1, 0, XBAR_INJECT_NONE);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    in.valid = xbar_mask_all(16);
    for (int i = 0; i < 16; i++) in.in[i].dest_mask = xbar_mask_all(16);
    xbar_core_step(c, &in, &out);
    xbar_core_step(c, &in, &out);
    ck_assert_int_eq(xbar_core_last_matches(c), 4);
    xbar_core_free(c);
}
END_TEST

/* Grant pointers move only when the grant is accepted; RRM moves them anyway. */
START_TEST(islip_pointer_only_on_accept)
{
    for (int rrm = 0; rrm <= 1; rrm++) {
        xbar_alloc *a = xbar_alloc_islip_new(4, 1, rrm);
        uint64_t rin[4] = { 0x3, 0, 0, 0 }, rout[4] = { 0x1, 0x1, 0, 0 };
        int8_t im[4], om[4];
        ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 1);
        ck_assert_int_eq(im[0], 0);
        ck_assert_int_eq(om[0], 0);
        ck_assert_int_eq(om[1], -1);
        ck_assert_int_eq(xbar_alloc_grant_ptr(a, 0), 1);
        ck_assert_int_eq(xbar_alloc_accept_ptr(a, 0), 1);
        /* output 1 granted input 0, which declined */
        ck_assert_int_eq(xbar_alloc_grant_ptr(a, 1), rrm ? 1 : 0);
        xbar_alloc_free(a);
    }
}
END_TEST

/* Matches made in iteration 2 leave every pointer alone. */
START_TEST(islip_pointer_only_in_iteration1)
{
    xbar_alloc *a = xbar_alloc_islip_new(4, 2, 0);
    /* inputs 0 and 1 both request outputs 0 and 1 */
    uint64_t rin[4] = { 0x3, 0x3, 0, 0 }, rout[4] = { 0x3, 0x3, 0, 0 };
    int8_t im[4], om[4];
    ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 2);
    ck_assert_int_eq(im[0], 0); /* iteration 1 */
    ck_assert_int_eq(im[1], 1); /* iteration 2 */
    ck_assert_int_eq(xbar_alloc_grant_ptr(a, 0), 1);
    ck_assert_int_eq(xbar_alloc_accept_ptr(a, 0), 1);
    ck_assert_int_eq(xbar_alloc_grant_ptr(a, 1), 0);
    ck_assert_int_eq(xbar_alloc_accept_ptr(a, 1), 0);
    /* Next cycle: output 0 now prefers input 1, output 1 still input 0 */
    ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 2);
    ck_assert_int_eq(im[1], 0);
    ck_assert_int_eq(im[0], 1);
    xbar_alloc_free(a);
}
END_TEST

/* Random request matrices: every allocator returns a matching that is a
 * subset of the requests; wavefront and iSLIP-N are maximal. */
START_TEST(matchings_valid)
{
    sim_rng r;
    sim_rng_seed(&r, 99);
    const int ns[] = { 2, 3, 7, 16, 33, 64 };
    for (unsigned ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        int n = ns[ni];
        xbar_alloc *al[5] = {
            xbar_alloc_islip_new(n, 1, 0), xbar_alloc_islip_new(n, n, 0), xbar_alloc_pim_new(n, 2, 5),
            xbar_alloc_wavefront_new(n), xbar_alloc_rr_new(n, n),
        };
        const int maximal[5] = { 0, 1, 0, 1, 1 };
        for (int trial = 0; trial < 300; trial++) {
            uint64_t rin[64] = { 0 }, rout[64] = { 0 };
            double p = sim_rng_double(&r);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    if (sim_rng_bernoulli(&r, p)) {
                        rin[i] |= 1ULL << j;
                        rout[j] |= 1ULL << i;
                    }
            for (int k = 0; k < 5; k++) {
                int8_t im[64], om[64];
                int m = xbar_alloc_run(al[k], rin, rout, im, om), cnt = 0;
                uint64_t fi = 0, fo = 0;
                for (int i = 0; i < n; i++) {
                    if (im[i] < 0) continue;
                    cnt++;
                    REQUIRE(rin[i] >> im[i] & 1, "%s matched an unrequested pair", al[k]->ops->name);
                    REQUIRE(om[(int)im[i]] == i, "%s: in/out match disagree", al[k]->ops->name);
                    fi |= 1ULL << i;
                    fo |= 1ULL << im[i];
                }
                for (int j = 0; j < n; j++)
                    REQUIRE(om[j] < 0 || im[(int)om[j]] == j, "%s: out/in match disagree", al[k]->ops->name);
                REQUIRE(cnt == m, "%s: count %d != %d", al[k]->ops->name, cnt, m);
                if (maximal[k])
                    for (int i = 0; i < n; i++)
                        REQUIRE((fi >> i & 1) || !(rin[i] & ~fo), "%s not maximal", al[k]->ops->name);
            }
        }
        for (int k = 0; k < 5; k++) xbar_alloc_free(al[k]);
    }
}
END_TEST

START_TEST(pim_deterministic_per_seed)
{
    const int n = 16;
    xbar_alloc *a = xbar_alloc_pim_new(n, 1, 42), *b = xbar_alloc_pim_new(n, 1, 42), *c = xbar_alloc_pim_new(n, 1, 43);
    uint64_t rin[64], rout[64];
    for (int i = 0; i < n; i++) rin[i] = rout[i] = xbar_mask_all(n);
    int differ = 0;
    long total = 0;
    const int cycles = 20000;
    for (int t = 0; t < cycles; t++) {
        int8_t ia[64], oa[64], ib[64], ob[64], ic[64], oc[64];
        int ma = xbar_alloc_run(a, rin, rout, ia, oa);
        int mb = xbar_alloc_run(b, rin, rout, ib, ob);
        xbar_alloc_run(c, rin, rout, ic, oc);
        REQUIRE(ma == mb && !memcmp(ia, ib, (size_t)n), "same seed, different PIM match at %d", t);
        if (memcmp(ia, ic, n)) differ = 1;
        total += ma;
    }
    ck_assert_msg(differ, "seeds 42 and 43 gave identical PIM schedules");
    /* Saturated PIM-1: E[matches]/N = 1-(1-1/N)^N = 0.6439 for N=16. */
    double thr = (double)total / cycles / n;
    ck_assert_msg(thr > 0.634 && thr < 0.654, "PIM-1 saturated N=16: %.4f, expected ~0.644", thr);
    xbar_alloc_free(a);
    xbar_alloc_free(b);
    xbar_alloc_free(c);
}
END_TEST

START_TEST(wavefront_rotates_priority)
{
    xbar_alloc *a = xbar_alloc_wavefront_new(4);
    uint64_t rin[4], rout[4];
    for (int i = 0; i < 4; i++) rin[i] = rout[i] = 0xf;
    int8_t im[4], om[4];
    for (int t = 0; t < 8; t++) {
        ck_assert_int_eq(xbar_alloc_grant_ptr(a, 0), t % 4);
        ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 4);
        for (int i = 0; i < 4; i++) ck_assert_int_eq(im[i], (i + t) % 4); /* the priority diagonal */
    }
    xbar_alloc_free(a);
}
END_TEST

START_TEST(rr_separable_pointers)
{
    xbar_alloc *a = xbar_alloc_rr_new(4, 1);
    /* inputs 0,1 both want only output 2 */
    uint64_t rin[4] = { 0x4, 0x4, 0, 0 }, rout[4] = { 0, 0, 0x3, 0 };
    int8_t im[4], om[4];
    ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 1);
    ck_assert_int_eq(om[2], 0);
    ck_assert_int_eq(xbar_alloc_grant_ptr(a, 2), 1);
    ck_assert_int_eq(xbar_alloc_accept_ptr(a, 0), 3);
    ck_assert_int_eq(xbar_alloc_accept_ptr(a, 1), 0); /* loser keeps its pointer */
    ck_assert_int_eq(xbar_alloc_run(a, rin, rout, im, om), 1);
    ck_assert_int_eq(om[2], 1); /* round robin between the two */
    xbar_alloc_free(a);
}
END_TEST

/* An uncontended flit presented in cycle t leaves in t+1+L, credit in t+2. */
START_TEST(core_timing)
{
    for (int L = 1; L <= 4; L++) {
        xbar_core *c = core_make(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 4, L, 0, XBAR_INJECT_NONE);
        xbar_in in;
        xbar_out out;
        memset(&in, 0, sizeof in);
        int seen = -1, cred = -1;
        for (int t = 0; t < 10; t++) {
            in.valid = t == 0 ? 1ULL << 3 : 0;
            in.in[3].data = 0xabc;
            in.in[3].dest_mask = 1ULL << 5;
            xbar_core_step(c, &in, &out);
            if (out.valid) {
                ck_assert_int_eq(seen, -1);
                seen = t;
                ck_assert_uint_eq(out.valid, 1ULL << 5);
                ck_assert_uint_eq(out.out_data[5], 0xabc);
                ck_assert_int_eq(out.out_src[5], 3);
            }
            if (out.credit) {
                cred = t;
                ck_assert_uint_eq(out.credit, 1ULL << 3);
                ck_assert_int_eq(out.credit_queue[3], 5);
            }
        }
        ck_assert_int_eq(seen, 1 + L);
        ck_assert_int_eq(cred, 2);
        xbar_core_free(c);
    }
}
END_TEST

/* Multicast with and without fan-out read: each destination gets one copy;
 * with fan-out read all copies leave together and the extra slots come back
 * in credit_extra. */
START_TEST(multicast_bookkeeping)
{
    for (int fan = 0; fan <= 1; fan++) {
        xbar_core *c = core_make(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 2, 1, fan, XBAR_INJECT_NONE);
        xbar_in in;
        xbar_out out;
        memset(&in, 0, sizeof in);
        uint64_t got = 0, credited = 0;
        int first = -1, last = -1, credit_events = 0;
        for (int t = 0; t < 12; t++) {
            in.valid = t == 0 ? 1ULL << 2 : 0;
            in.in[2].data = 77;
            in.in[2].dest_mask = 0x2a; /* outputs 1, 3, 5 */
            xbar_core_step(c, &in, &out);
            if (t == 0) ck_assert_uint_eq(xbar_core_backlog(c), 3);
            for (uint64_t m = out.valid; m; m &= m - 1) {
                int j = __builtin_ctzll(m);
                ck_assert(!(got >> j & 1));
                got |= 1ULL << j;
                ck_assert_uint_eq(out.out_data[j], 77);
                ck_assert_int_eq(out.out_src[j], 2);
                if (first < 0) first = t;
                last = t;
            }
            if (out.credit) {
                credit_events++;
                ck_assert_uint_eq(out.credit, 1ULL << 2);
                credited |= 1ULL << out.credit_queue[2];
            }
            credited |= out.credit_extra[2];
            for (int i = 0; i < 8; i++)
                if (i != 2 || !fan) ck_assert_uint_eq(out.credit_extra[i], 0);
        }
        ck_assert_uint_eq(got, 0x2a);
        ck_assert_uint_eq(credited, 0x2a);
        ck_assert_uint_eq(xbar_core_backlog(c), 0);
        if (fan) {
            ck_assert_int_eq(first, 2);
            ck_assert_int_eq(last, 2);
            ck_assert_int_eq(credit_events, 1);
        } else {
            ck_assert_int_eq(first, 2);
            ck_assert_int_eq(last, 4); /* one input read per cycle */
            ck_assert_int_eq(credit_events, 3);
        }
        xbar_core_free(c);
    }
}
END_TEST

/* Fan-out splitting: input 1 sends a multicast flit to outputs 1 and 2
 * every cycle while input 0 sends unicast to output 2 every cycle, so output
 * 2 is shared and its copies fall behind. The copies to output 1 must still
 * leave one per cycle, in order, without a gap (each copy leaves as its
 * output frees, whichever flit the input's match reads), while output 2
 * serves both inputs at its full rate; every slot comes back. */
START_TEST(multicast_copies_split)
{
    const int L = 1, flits = 24;
    xbar_core *c = core_make(3, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 0, L, 1, XBAR_INJECT_NONE);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    uint64_t next1 = 100, next2_from1 = 100, next2_from0 = 0;
    int first1 = -1, last1 = -1, got1 = 0, got2 = 0, busy2 = 0, freed = 0;
    for (int t = 0; t < 4 * flits; t++) {
        in.valid = t < flits ? 3 : 0;
        in.in[0].data = (uint64_t)t;
        in.in[0].dest_mask = 1u << 2;
        in.in[1].data = 100 + (uint64_t)t;
        in.in[1].dest_mask = (1u << 1) | (1u << 2);
        xbar_core_step(c, &in, &out);
        if (out.valid >> 1 & 1) {
            ck_assert_int_eq(out.out_src[1], 1);
            ck_assert_uint_eq(out.out_data[1], next1++);
            if (first1 < 0) first1 = t;
            last1 = t;
            got1++;
        }
        if (out.valid >> 2 & 1) {
            if (out.out_src[2] == 1) ck_assert_uint_eq(out.out_data[2], next2_from1++);
            else ck_assert_uint_eq(out.out_data[2], next2_from0++);
            got2++;
            busy2 += t < 2 * flits + L + 1;
        }
        freed += __builtin_popcountll(out.credit);
        for (int i = 0; i < 3; i++) freed += __builtin_popcountll(out.credit_extra[i]);
    }
    ck_assert_int_eq(got1, flits);
    ck_assert_int_eq(first1, 1 + L);
    ck_assert_msg(last1 - first1 == flits - 1, "copies to output 1 took %d cycles for %d flits", last1 - first1 + 1, flits);
    ck_assert_int_eq(got2, 2 * flits);
    ck_assert_int_eq(busy2, 2 * flits); /* output 2 never idle while it had work: 2*flits copies in 2*flits cycles */
    ck_assert_int_eq(freed, 3 * flits);
    ck_assert_uint_eq(xbar_core_backlog(c), 0);
    xbar_core_free(c);
}
END_TEST

/* Random uni- and multicast traffic from credit-respecting upstreams into
 * every configuration: every copy arrives exactly once, in order per
 * (source, destination), and every credit comes back. Packets of pkt_len
 * flits to one destination set, with consecutive data words, exercise the
 * core's run-length queues (runs extended, split by other packets, drained
 * while still being written). */
typedef struct pairq { uint32_t *seq; uint32_t head, tail; } pairq;

static void stress(int n, xbar_queue_kind qk, xbar_alloc_kind ak, int iters, int depth, int shared, int L,
                   int fan, double load, double mcast_p, int pkt_len, uint64_t seed)
{
    xbar_core_cfg cfg;
    xbar_core_cfg_default(&cfg, n);
    cfg.queue = qk;
    cfg.alloc = ak;
    cfg.iters = iters;
    cfg.depth = depth;
    cfg.shared = shared;
    cfg.latency = L;
    cfg.fanout_read = fan;
    cfg.seed = seed;
    xbar_core *c = xbar_core_new(&cfg);
    ck_assert_ptr_nonnull(c);
    const int voq = qk == XBAR_QUEUE_VOQ;
    const int cycles = 3000;
    int credits[64][64]; /* upstream view; FIFO / shared: column 0 */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) credits[i][j] = depth;
    pairq *pq = calloc((size_t)n * n, sizeof *pq);
    for (int k = 0; k < n * n; k++) pq[k].seq = malloc(sizeof(uint32_t) * cycles);
    uint32_t next_seq[64] = { 0 };
    uint64_t pkt_dm[64] = { 0 };
    int pkt_left[64] = { 0 };
    sim_rng r;
    sim_rng_seed(&r, seed);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    long sent_copies = 0, recv_copies = 0;
    for (int t = 0; t < cycles || xbar_core_backlog(c) || xbar_core_in_flight(c) || t < cycles + L + 2; t++) {
        REQUIRE(t < 1000000, "no drain");
        in.valid = 0;
        for (int i = 0; t < cycles && i < n; i++) {
            if (!sim_rng_bernoulli(&r, load)) continue;
            if (!pkt_left[i]) {
                if (sim_rng_bernoulli(&r, mcast_p)) {
                    pkt_dm[i] = sim_rng_u64(&r) & xbar_mask_all(n);
                    if (!pkt_dm[i]) pkt_dm[i] = 1;
                } else {
                    pkt_dm[i] = 1ULL << sim_rng_below(&r, (uint64_t)n);
                }
                pkt_left[i] = pkt_len;
            }
            const uint64_t dm = pkt_dm[i];
            if (!upstream_take(credits[i], dm, depth, voq, shared)) continue;
            pkt_left[i]--;
            uint32_t s = next_seq[i]++;
            in.valid |= 1ULL << i;
            in.in[i].data = ((uint64_t)i << 32) | s;
            in.in[i].dest_mask = dm;
            for (uint64_t d = dm; d; d &= d - 1) {
                pairq *p = &pq[i * n + __builtin_ctzll(d)];
                p->seq[p->tail++] = s;
                sent_copies++;
            }
        }
        xbar_core_step(c, &in, &out);
        for (uint64_t m = out.valid; m; m &= m - 1) {
            int j = __builtin_ctzll(m);
            int i = out.out_src[j];
            REQUIRE((int)(out.out_data[j] >> 32) == i, "source mismatch");
            pairq *p = &pq[i * n + j];
            REQUIRE(p->head < p->tail, "duplicate or phantom copy %d->%d", i, j);
            REQUIRE((uint32_t)out.out_data[j] == p->seq[p->head], "%d->%d out of order", i, j);
            p->head++;
            recv_copies++;
        }
        for (uint64_t m = out.credit; m; m &= m - 1) {
            int i = __builtin_ctzll(m);
            if (voq && !shared) credits[i][out.credit_queue[i]]++;
            else credits[i][0]++;
        }
        for (int i = 0; i < n; i++) {
            if (!out.credit_extra[i]) continue;
            REQUIRE(voq, "credit_extra from a FIFO core");
            if (shared) credits[i][0] += __builtin_popcountll(out.credit_extra[i]);
            else
                for (uint64_t d = out.credit_extra[i]; d; d &= d - 1) credits[i][__builtin_ctzll(d)]++;
        }
        if (!fan) for (int i = 0; i < n; i++) REQUIRE(out.credit_extra[i] == 0, "credit_extra without fan-out read");
    }
    ck_assert_int_eq(sent_copies, recv_copies);
    ck_assert_uint_eq(xbar_core_backlog(c), 0);
    ck_assert_uint_eq(xbar_core_in_flight(c), 0);
    for (int i = 0; depth && i < n; i++)
        for (int j = 0; j < ((voq && !shared) ? n : 1); j++) ck_assert_int_eq(credits[i][j], depth);
    for (int k = 0; k < n * n; k++) free(pq[k].seq);
    free(pq);
    xbar_core_free(c);
}

START_TEST(conservation_all_configs)
{
    int run = 0;
    for (int qk = 0; qk <= 1; qk++)
        for (int ak = 0; ak <= 3; ak++)
            for (int fan = 0; fan <= 1; fan++) {
                stress(7, (xbar_queue_kind)qk, (xbar_alloc_kind)ak, 2, 4, 0, 1 + run % 3, fan, 0.7, 0.3, 1, 100 + run);
                stress(16, (xbar_queue_kind)qk, (xbar_alloc_kind)ak, 1, 0, 0, 2, fan, 0.6, 0.05, 1, 200 + run);
                stress(9, (xbar_queue_kind)qk, (xbar_alloc_kind)ak, 1, 6, 0, 1 + run % 2, fan, 0.9, 0.2, 5 + run % 13, 400 + run);
                if (qk == XBAR_QUEUE_VOQ)
                    stress(5, XBAR_QUEUE_VOQ, (xbar_alloc_kind)ak, 3, 12, 1, 1, fan, 0.8, 0.4, 1 + run % 4, 300 + run);
                run++;
            }
}
END_TEST

/* Presentation runs: a core handed whole packets with
 * xbar_core_present_run must drive exactly what a core handed the same
 * flits one per cycle drives, every cycle, and report the same queue
 * lengths. Packets reserve their credits whole (as store-and-forward
 * upstreams do) or flit by flit (then they are presented per flit to both);
 * multicast and over-long runs are refused and presented per flit. */
static void runs_vs_flits(int n, xbar_alloc_kind ak, int depth, int L, int fan, double mcast_p, uint64_t seed)
{
    xbar_core *a = core_make(n, XBAR_QUEUE_VOQ, ak, 1 + (int)(seed % 3), depth, L, fan, XBAR_INJECT_NONE);
    xbar_core *b = core_make(n, XBAR_QUEUE_VOQ, ak, 1 + (int)(seed % 3), depth, L, fan, XBAR_INJECT_NONE);
    int credits[64][64];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) credits[i][j] = depth ? depth : 1 << 30;
    uint64_t pkt_dm[64] = { 0 }, data[64] = { 0 };
    int pkt_left[64] = { 0 }, whole[64] = { 0 }, started[64] = { 0 };
    for (int i = 0; i < n; i++) data[i] = (uint64_t)i << 40;
    sim_rng r;
    sim_rng_seed(&r, seed);
    xbar_in ia, ib;
    xbar_out oa, ob;
    memset(&ia, 0, sizeof ia);
    memset(&ib, 0, sizeof ib);
    const int cycles = 2500;
    long runs = 0;
    for (int t = 0; t < cycles || xbar_core_backlog(a) || xbar_core_in_flight(a); t++) {
        REQUIRE(t < 100000, "no drain");
        ia.valid = ib.valid = 0;
        for (int i = 0; i < n; i++) {
            if (!pkt_left[i]) { /* a new packet, maybe */
                if (t >= cycles || !sim_rng_bernoulli(&r, 0.5)) continue;
                pkt_dm[i] = sim_rng_bernoulli(&r, mcast_p) ? (sim_rng_u64(&r) & xbar_mask_all(n)) | 1 : 1ULL << sim_rng_below(&r, (uint64_t)n);
                pkt_left[i] = 1 + (int)sim_rng_below(&r, 20);
                whole[i] = sim_rng_bernoulli(&r, 0.7);
                started[i] = 0;
                if (sim_rng_bernoulli(&r, 0.5)) data[i] = (uint64_t)i << 40 | sim_rng_u64(&r) >> 30; /* else continues the last */
            }
            const uint64_t dm = pkt_dm[i];
            const int need = whole[i] ? (started[i] ? 0 : pkt_left[i]) : 1;
            int ok = 1;
            for (uint64_t d = dm; d; d &= d - 1) ok &= credits[i][__builtin_ctzll(d)] >= need;
            if (!ok) continue;
            for (uint64_t d = dm; d; d &= d - 1) credits[i][__builtin_ctzll(d)] -= need;
            ia.valid |= 1ULL << i;
            ia.in[i].data = data[i];
            ia.in[i].dest_mask = dm;
            if (!started[i] && whole[i] && xbar_core_present_run(b, i, data[i], dm, (uint32_t)pkt_left[i])) {
                started[i] = 2; /* b has the rest */
                runs++;
            } else if (started[i] != 2) {
                ib.valid |= 1ULL << i;
                ib.in[i] = ia.in[i];
            }
            if (!started[i]) started[i] = 1;
            data[i]++;
            pkt_left[i]--;
        }
        xbar_core_step(a, &ia, &oa);
        xbar_core_step(b, &ib, &ob);
        REQUIRE(oa.valid == ob.valid && oa.credit == ob.credit && oa.match_in == ob.match_in, "cycle %d: outputs differ", t);
        for (uint64_t m = oa.valid; m; m &= m - 1) {
            const int j = __builtin_ctzll(m);
            REQUIRE(oa.out_data[j] == ob.out_data[j] && oa.out_src[j] == ob.out_src[j], "cycle %d: output %d differs", t, j);
        }
        for (uint64_t m = oa.credit; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            REQUIRE(oa.credit_queue[i] == ob.credit_queue[i], "cycle %d: credit queue of input %d differs", t, i);
            credits[i][oa.credit_queue[i]]++;
        }
        for (int i = 0; i < n; i++) {
            REQUIRE(oa.credit_extra[i] == ob.credit_extra[i], "cycle %d: credit_extra of input %d differs", t, i);
            for (uint64_t d = oa.credit_extra[i]; d; d &= d - 1) credits[i][__builtin_ctzll(d)]++;
            for (int j = 0; j < n; j++)
                REQUIRE(xbar_core_queue_len(a, i, j) == xbar_core_queue_len(b, i, j), "cycle %d: VOQ %d,%d length differs", t, i, j);
        }
        REQUIRE(xbar_core_backlog(a) == xbar_core_backlog(b), "cycle %d: backlog differs", t);
    }
    ck_assert_int_gt(runs, 100); /* the comparison saw runs */
    xbar_core_free(a);
    xbar_core_free(b);
}

START_TEST(runs_equal_flit_by_flit)
{
    uint64_t seed = 900;
    for (int ak = 0; ak <= 3; ak++) {
        runs_vs_flits(8, (xbar_alloc_kind)ak, 24, 1, 0, 0.0, seed++);
        runs_vs_flits(5, (xbar_alloc_kind)ak, 40, 2, 1, 0.2, seed++);
        runs_vs_flits(16, (xbar_alloc_kind)ak, 0, 3, 1, 0.1, seed++);
        runs_vs_flits(16, (xbar_alloc_kind)ak, 20, 1, 0, 0.0, seed++);
    }
}
END_TEST

/* Read watches and run ends (xbar_core_watch_add, _watch_fired,
 * _run_last) against a reference that replays every VOQ from the outputs:
 * a watch fires exactly with the credit of the read that reaches it, also
 * when re-armed by one the last step already made, and a flit is flagged
 * exactly when it ends its VOQ run (the next flit in the VOQ, if any yet,
 * does not continue it). Packets go flit by flit or as runs, some
 * multicast, with and without fan-out read. Latency 1: a read's credit and
 * its flit come out of the same step. */
typedef struct ref_flit { uint64_t data, seq; int mc; } ref_flit;
enum { REF_CAP = 1024 };
typedef struct ref_voq { ref_flit f[REF_CAP]; uint32_t head, len; uint64_t reads, target; } ref_voq;

static void ref_push(ref_voq *q, uint64_t data, uint64_t seq, uint64_t dm)
{
    REQUIRE(q->len < REF_CAP, "reference VOQ full");
    q->f[(q->head + q->len++) % REF_CAP] = (ref_flit){ data, seq, (dm & (dm - 1)) != 0 };
}

/* The read of VOQ q (i, j) reported by out: checks the flit driven on output
 * j, its run-end flag and the watch; re-arms a fired watch. */
static void ref_read(xbar_core *c, ref_voq *q, const xbar_out *o, int i, int j, int fired, sim_rng *r, int t)
{
    REQUIRE(q->len, "cycle %d: read of empty VOQ %d,%d", t, i, j);
    const ref_flit e = q->f[q->head];
    q->head = (q->head + 1) % REF_CAP;
    q->len--;
    REQUIRE(o->valid >> j & 1 && o->out_data[j] == e.data && o->out_src[j] == i, "cycle %d: output %d: not VOQ %d,%d's head", t, j, i, j);
    const ref_flit *next = q->len ? &q->f[q->head] : NULL;
    const int last = !next || next->data != e.data + 1 || next->seq != e.seq + 1 || next->mc != e.mc;
    REQUIRE((int)(xbar_core_run_last(c) >> j & 1) == last, "cycle %d: output %d: run end flag %d, reference %d", t, j, !last, last);
    q->reads++;
    REQUIRE(fired == (q->reads == q->target), "cycle %d: VOQ %d,%d: fired %d after %llu reads, armed for %llu", t, i, j, fired,
            (unsigned long long)q->reads, (unsigned long long)q->target);
    if (!fired) return;
    const uint32_t k = 1 + (uint32_t)sim_rng_below(r, 4);
    q->target += k;
    xbar_core_watch_add(c, i, j, k);
}

static void watch_check(int n, int fan, double mcast_p, uint64_t seed)
{
    xbar_core *c = core_make(n, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 0, 1, fan, XBAR_INJECT_NONE);
    static ref_voq ref[8][8];
    memset(ref, 0, sizeof ref);
    sim_rng r;
    sim_rng_seed(&r, seed);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            ref[i][j].target = 1 + sim_rng_below(&r, 4);
            xbar_core_watch_add(c, i, j, (uint32_t)ref[i][j].target);
        }
    uint64_t pkt_dm[8] = { 0 }, data[8] = { 0 }, seq[8] = { 0 };
    int pkt_left[8] = { 0 }, as_run[8] = { 0 };
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    /* the flits and runs presented in the last step: the reference sees them after that step's reads */
    uint64_t wrote_valid = 0, wrote_dm[8], wrote_data[8], wrote_seq[8], run_valid = 0, wrote_runs = 0;
    uint64_t run_data[8], run_dm[8], wrote_run_data[8], wrote_run_dm[8];
    int run_len[8], wrote_run_len[8];
    long fires = 0, lasts = 0;
    for (int t = 0; t < 3000; t++) {
        in.valid = 0;
        run_valid = 0;
        for (int i = 0; i < n; i++) {
            if (as_run[i] && --as_run[i]) continue; /* the run is still being presented */
            if (!pkt_left[i]) {
                if (!sim_rng_bernoulli(&r, 0.4)) continue;
                const bool mc = sim_rng_bernoulli(&r, mcast_p);
                pkt_dm[i] = mc ? (sim_rng_u64(&r) & xbar_mask_all(n)) | 1 : 1ULL << sim_rng_below(&r, (uint64_t)n);
                pkt_left[i] = 1 + (int)sim_rng_below(&r, 6);
                data[i] = (uint64_t)i << 40 | (sim_rng_bernoulli(&r, 0.3) ? data[i] : sim_rng_u64(&r) >> 30);
                if (!mc && sim_rng_bernoulli(&r, 0.5) && xbar_core_present_run(c, i, data[i], pkt_dm[i], (uint32_t)pkt_left[i])) {
                    run_valid |= 1ULL << i; /* written whole in this step */
                    as_run[i] = run_len[i] = pkt_left[i];
                    run_data[i] = data[i];
                    run_dm[i] = pkt_dm[i];
                    data[i] += (uint64_t)pkt_left[i];
                    pkt_left[i] = 0;
                    continue;
                }
            }
            in.valid |= 1ULL << i;
            in.in[i].data = data[i]++;
            in.in[i].dest_mask = pkt_dm[i];
            pkt_left[i]--;
        }
        xbar_core_step(c, &in, &out);
        const uint64_t fired = xbar_core_watch_fired(c);
        const uint64_t *fired_extra = xbar_core_watch_fired_extra(c);
        REQUIRE(!(fired & ~out.credit), "cycle %d: a watch fired without a credit", t);
        for (uint64_t m = out.credit; m; m &= m - 1) {
            const int i = __builtin_ctzll(m), j = out.credit_queue[i];
            const int f = (int)(fired >> i & 1);
            ref_read(c, &ref[i][j], &out, i, j, f, &r, t);
            fires += f;
        }
        for (int i = 0; i < n; i++) {
            REQUIRE(!fired_extra || !(fired_extra[i] & ~out.credit_extra[i]), "cycle %d: a fan-out watch fired without a credit", t);
            for (uint64_t m = out.credit_extra[i]; m; m &= m - 1) {
                const int j = __builtin_ctzll(m);
                ref_read(c, &ref[i][j], &out, i, j, fired_extra ? (int)(fired_extra[i] >> j & 1) : 0, &r, t);
            }
        }
        lasts += __builtin_popcountll(xbar_core_run_last(c));
        for (uint64_t m = wrote_valid; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            for (uint64_t d = wrote_dm[i]; d; d &= d - 1) ref_push(&ref[i][__builtin_ctzll(d)], wrote_data[i], wrote_seq[i], wrote_dm[i]);
        }
        for (uint64_t m = wrote_runs; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            for (int f = 0; f < wrote_run_len[i]; f++)
                ref_push(&ref[i][__builtin_ctzll(wrote_run_dm[i])], wrote_run_data[i] + (uint64_t)f, wrote_seq[i] + (uint64_t)f, wrote_run_dm[i]);
        }
        wrote_valid = in.valid;
        wrote_runs = run_valid;
        for (uint64_t m = in.valid; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            wrote_dm[i] = in.in[i].dest_mask;
            wrote_data[i] = in.in[i].data;
            wrote_seq[i] = seq[i]++;
        }
        for (uint64_t m = run_valid; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            wrote_seq[i] = seq[i];
            seq[i] += (uint64_t)run_len[i];
            wrote_run_data[i] = run_data[i];
            wrote_run_dm[i] = run_dm[i];
            wrote_run_len[i] = run_len[i];
        }
    }
    ck_assert_int_gt(fires, 500);
    ck_assert_int_gt(lasts, 300);
    xbar_core_free(c);
}

START_TEST(watch_and_run_last)
{
    watch_check(4, 0, 0.0, 31);
    watch_check(6, 1, 0.2, 32);
    watch_check(8, 0, 0.3, 33);
    watch_check(8, 1, 0.1, 34);
}
END_TEST

/* A flit presented while the input's run lasts breaks the contract: abort. */
START_TEST(flit_during_run_aborts)
{
    xbar_core *c = core_make(4, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 16, 1, 0, XBAR_INJECT_NONE);
    xbar_in in;
    xbar_out out;
    memset(&in, 0, sizeof in);
    ck_assert(xbar_core_present_run(c, 1, 100, 1ULL << 2, 5));
    xbar_core_step(c, &in, &out);
    in.valid = 1ULL << 1;
    in.in[1].data = 7;
    in.in[1].dest_mask = 1;
    xbar_core_step(c, &in, &out); /* aborts */
}
END_TEST

/* The comparator: identical cores never differ, RRM injected must. */
START_TEST(lockstep_detects_rrm)
{
    for (int inj = 0; inj <= 1; inj++) {
        xbar_core *a = core_make(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 8, 1, 0, XBAR_INJECT_NONE);
        xbar_core *b = core_make(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 8, 1, 0, inj ? XBAR_INJECT_RRM : XBAR_INJECT_NONE);
        xbar_lockstep *ls = xbar_lockstep_new(&xbar_core_tl_ops, a, &xbar_core_tl_ops, b, 8);
        sim_rng r;
        xbar_in in;
        xbar_out out;
        memset(&in, 0, sizeof in);
        int cr[8][8];
        sim_rng_seed(&r, 5);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++) cr[i][j] = 8;
        for (int t = 0; t < 2000; t++) {
            in.valid = 0;
            for (int i = 0; i < 8; i++) {
                int j = (int)sim_rng_below(&r, 8);
                if (!sim_rng_bernoulli(&r, 0.8) || !cr[i][j]) continue;
                cr[i][j]--;
                in.valid |= 1ULL << i;
                in.in[i].data = (uint64_t)t * 8 + (uint64_t)i;
                in.in[i].dest_mask = 1ULL << j;
            }
            xbar_lockstep_step(ls, &in, &out);
            for (uint64_t m = out.credit; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                cr[i][out.credit_queue[i]]++;
            }
            if (inj && ls->mismatches) break; /* b's queues now differ from a's credit view */
        }
        ck_assert_uint_gt(ls->cycles_compared, 0);
        if (inj) {
            ck_assert_uint_gt(ls->mismatches, 0);
            char buf[160];
            xbar_lockstep_describe(ls, 0, buf, sizeof buf);
            ck_assert_ptr_nonnull(strstr(buf, "cycle "));
        } else {
            ck_assert_uint_eq(ls->mismatches, 0);
            ck_assert_uint_eq(ls->cycles_compared, 2000);
        }
        xbar_lockstep_free(ls);
    }
}
END_TEST

START_TEST(bad_config_rejected)
{
    xbar_core_cfg cfg;
    char why[128];
    xbar_core_cfg_default(&cfg, 1);
    ck_assert_int_ne(xbar_core_cfg_check(&cfg, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "ports=1"));
    ck_assert_ptr_null(xbar_core_new(&cfg));
    xbar_core_cfg_default(&cfg, 65);
    ck_assert_ptr_null(xbar_core_new(&cfg));
    xbar_core_cfg_default(&cfg, 8);
    cfg.latency = 0;
    ck_assert_ptr_null(xbar_core_new(&cfg));
    xbar_core_cfg_default(&cfg, 8);
    cfg.alloc = XBAR_ALLOC_PIM;
    cfg.inject = XBAR_INJECT_RRM;
    ck_assert_ptr_null(xbar_core_new(&cfg));
    ck_assert_int_eq(xbar_alloc_parse("wavefront"), XBAR_ALLOC_WAVEFRONT);
    ck_assert_int_eq(xbar_alloc_parse("slip"), -1);
    ck_assert_int_eq(xbar_queue_parse("fifo"), XBAR_QUEUE_FIFO);
    ck_assert_int_eq(xbar_inject_parse("rrm"), XBAR_INJECT_RRM);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, islip1_reset_ramp);
    tcase_add_test(tc, islip4_starts_at_4);
    tcase_add_test(tc, islip_pointer_only_on_accept);
    tcase_add_test(tc, islip_pointer_only_in_iteration1);
    tcase_add_test(tc, matchings_valid);
    tcase_add_test(tc, pim_deterministic_per_seed);
    tcase_add_test(tc, wavefront_rotates_priority);
    tcase_add_test(tc, rr_separable_pointers);
    tcase_add_test(tc, core_timing);
    tcase_add_test(tc, multicast_bookkeeping);
    tcase_add_test(tc, multicast_copies_split);
    tcase_add_test(tc, conservation_all_configs);
    tcase_add_test(tc, runs_equal_flit_by_flit);
    tcase_add_test(tc, watch_and_run_last);
    tcase_add_test_raise_signal(tc, flit_during_run_aborts, SIGABRT);
    tcase_add_test(tc, lockstep_detects_rrm);
    tcase_add_test(tc, bad_config_rejected);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
