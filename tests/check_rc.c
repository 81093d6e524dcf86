/* The RC transport engine (models/network/rc.h) between two queue pairs over
 * a lossy wire of its own (one packet per slot each way, a fixed latency, a
 * drop rule): exactly-once, in-order completions; go-back-N after one lost
 * packet retransmits one round trip's worth; a lost tail is recovered by the
 * timeout; a lost READ response is asked for again; random loss both ways
 * loses nothing; a dead wire fails the QP after retry_cnt timeouts. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "models/network/rc.h"
#include "sim/rng.h"
#include "transport_wire.h"

#define SLOT_PS WIRE_SLOT_PS
#define LAT_SLOTS WIRE_LAT_SLOTS
#define MAX_MSGS 64

typedef struct side {
    rc_qp *qp;
    uint32_t done_order[MAX_MSGS], n_done;          /* requester completions, in order */
    uint32_t resp_done[MAX_MSGS], n_resp;           /* responder completions */
    uint64_t done_bytes[MAX_MSGS];
} side;

typedef wire_drop_fn drop_fn;

static void on_done(void *ctx, uint32_t msg, rc_op op, bool requester, uint64_t bytes)
{
    (void)op;
    side *s = ctx;
    if (requester) {
        s->done_order[s->n_done] = msg;
        s->done_bytes[s->n_done++] = bytes;
    } else {
        s->resp_done[s->n_resp++] = msg;
    }
}

static bool qp_next(void *q, sim_time_ps now, void *h) { return rc_next_packet(q, now, h); }
static void qp_receive(void *q, sim_time_ps now, const void *h) { rc_receive(q, now, h); }
static void qp_timer(void *q, sim_time_ps now) { rc_timer(q, now); }
static bool qp_idle(const void *q) { return rc_idle(q); }
static bool qp_failed(const void *q) { return rc_failed(q); }

/* Runs until both QPs are idle, one fails, or limit_ps; returns the time. */
static sim_time_ps run(side *a, side *b, drop_fn drop, void *dctx, sim_time_ps limit_ps)
{
    wire_end ea = { a->qp, qp_next, qp_receive, qp_timer, qp_idle, qp_failed }, eb = { b->qp, qp_next, qp_receive, qp_timer, qp_idle, qp_failed };
    return wire_run(&ea, &eb, sizeof(rc_hdr), drop, dctx, limit_ps);
}

static void make(side *a, side *b, const rc_cfg *cfg)
{
    memset(a, 0, sizeof *a);
    memset(b, 0, sizeof *b);
    a->qp = rc_qp_new(cfg, "a", on_done, a);
    b->qp = rc_qp_new(cfg, "b", on_done, b);
}

static void finish(side *a, side *b)
{
    char why[256];
    ck_assert_msg(rc_check(a->qp, why, sizeof why) == 0, "%s", why);
    ck_assert_msg(rc_check(b->qp, why, sizeof why) == 0, "%s", why);
    rc_qp_free(a->qp);
    rc_qp_free(b->qp);
}

static const uint64_t mixed_bytes[] = { 1 << 20, 10000, 200000, 3, 65536 };
static const rc_op mixed_ops[] = { RC_WRITE, RC_SEND, RC_READ, RC_WRITE, RC_READ };

/* Posts the mixed workload and checks every message completed once, in order, with its bytes. */
static void post_mixed(side *a)
{
    for (unsigned i = 0; i < 5; i++) ck_assert_uint_eq(rc_post(a->qp, mixed_ops[i], mixed_bytes[i]), i);
}

static void check_mixed(const side *a, const side *b)
{
    ck_assert_uint_eq(a->n_done, 5);
    for (unsigned i = 0; i < 5; i++) {
        ck_assert_uint_eq(a->done_order[i], i);
        ck_assert_uint_eq(a->done_bytes[i], mixed_bytes[i]);
    }
    ck_assert_uint_eq(b->n_resp, 3);   /* the WRITEs and the SEND, once each; READs are one-sided */
    ck_assert_uint_eq(b->resp_done[0], 0);
    ck_assert_uint_eq(b->resp_done[1], 1);
    ck_assert_uint_eq(b->resp_done[2], 3);
}

START_TEST(test_lossless)
{
    rc_cfg cfg = RC_CFG_DEFAULT;
    cfg.mtu = 1024;
    side a, b;
    make(&a, &b, &cfg);
    post_mixed(&a);
    sim_time_ps t = run(&a, &b, NULL, NULL, SIM_US(100000));
    check_mixed(&a, &b);
    const rc_stats *s = rc_stats_get(a.qp);
    ck_assert_uint_eq(s->retransmitted_pkts, 0);
    ck_assert_uint_eq(s->timeouts, 0);
    ck_assert_uint_eq(rc_stats_get(b.qp)->naks, 0);
    /* one packet a slot each way: the forward packets (WRITE/SEND data, 2 read requests) bound the time from below */
    uint64_t fwd = (1 << 20) / 1024 + (10000 + 1023) / 1024 + 1 + 2;
    ck_assert_uint_ge(t / SLOT_PS, fwd);
    ck_assert_uint_le(t / SLOT_PS, fwd + (200000 + 65536) / 1024 + 4 * (LAT_SLOTS + 2));
    finish(&a, &b);
}
END_TEST

static bool drop_nth(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    const rc_hdr *h = hdr;
    (void)t;
    (void)h;
    const uint64_t *n = ctx;
    return dir == 0 && nth == *n;
}

START_TEST(test_one_loss_goes_back_one_round_trip)
{
    rc_cfg cfg = RC_CFG_DEFAULT;
    cfg.mtu = 1024;
    side a, b;
    make(&a, &b, &cfg);
    rc_post(a.qp, RC_WRITE, 512 * 1024);
    uint64_t lost = 100;
    run(&a, &b, drop_nth, &lost, SIM_US(100000));
    ck_assert_uint_eq(a.n_done, 1);
    ck_assert_uint_eq(b.n_resp, 1);
    const rc_stats *s = rc_stats_get(a.qp);
    ck_assert_uint_eq(rc_stats_get(b.qp)->naks, 1);
    ck_assert_uint_eq(s->go_back, 1);
    ck_assert_uint_eq(s->timeouts, 0);
    /* the NAK comes back one round trip (2 x (latency + a slot)) after the lost packet's successor left */
    ck_assert_msg(s->retransmitted_pkts >= 2 * LAT_SLOTS && s->retransmitted_pkts <= 2 * LAT_SLOTS + 6,
                  "retransmitted %llu packets for a round trip of %d slots", (unsigned long long)s->retransmitted_pkts,
                  2 * (LAT_SLOTS + 1));
    finish(&a, &b);
}
END_TEST

START_TEST(test_tail_loss_needs_the_timeout)
{
    rc_cfg cfg = RC_CFG_DEFAULT;
    cfg.mtu = 1024;
    cfg.rto_ps = SIM_US(50);
    side a, b;
    make(&a, &b, &cfg);
    rc_post(a.qp, RC_WRITE, 8 * 1024);
    uint64_t lost = 7;   /* the last packet: nothing after it shows the gap */
    sim_time_ps t = run(&a, &b, drop_nth, &lost, SIM_US(100000));
    ck_assert_uint_eq(a.n_done, 1);
    ck_assert_uint_eq(rc_stats_get(a.qp)->timeouts, 1);
    ck_assert_uint_eq(rc_stats_get(b.qp)->naks, 0);
    ck_assert_uint_ge(t, cfg.rto_ps);
    finish(&a, &b);
}
END_TEST

static bool drop_read_response(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    const rc_hdr *h = hdr;
    (void)t;
    (void)nth;
    unsigned *left = ctx;
    if (dir == 1 && h->opcode == RC_READ_RESP && h->offset == 40 * 1024 && *left) {
        (*left)--;
        return true;
    }
    return false;
}

START_TEST(test_lost_read_response_is_asked_again)
{
    rc_cfg cfg = RC_CFG_DEFAULT;
    cfg.mtu = 1024;
    side a, b;
    make(&a, &b, &cfg);
    rc_post(a.qp, RC_READ, 100 * 1024);
    unsigned left = 1;
    run(&a, &b, drop_read_response, &left, SIM_US(100000));
    ck_assert_uint_eq(a.n_done, 1);
    ck_assert_uint_eq(a.done_bytes[0], 100 * 1024);
    ck_assert_uint_eq(rc_stats_get(a.qp)->read_reqs, 2);   /* the first, and one from the missing offset */
    ck_assert_uint_eq(rc_stats_get(a.qp)->go_back, 1);
    ck_assert_uint_eq(rc_stats_get(b.qp)->data_pkts, 100 + 60);   /* every response, then 40 KB .. 100 KB again */
    finish(&a, &b);
}
END_TEST

static bool drop_random(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    const rc_hdr *h = hdr;
    (void)t;
    (void)dir;
    (void)nth;
    (void)h;
    return sim_rng_double(ctx) < 0.01;
}

START_TEST(test_random_loss_both_ways)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rc_cfg cfg = RC_CFG_DEFAULT;
        cfg.mtu = 1024;
        cfg.rto_ps = SIM_US(30);
        side a, b;
        make(&a, &b, &cfg);
        post_mixed(&a);
        sim_rng rng;
        sim_rng_seed(&rng, seed);
        run(&a, &b, drop_random, &rng, SIM_US(1000000));
        ck_assert_msg(!rc_failed(a.qp), "seed %llu: the QP failed", (unsigned long long)seed);
        check_mixed(&a, &b);
        ck_assert_uint_gt(rc_stats_get(a.qp)->retransmitted_pkts + rc_stats_get(a.qp)->read_reqs, 2);
        finish(&a, &b);
    }
}
END_TEST

static bool drop_after(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    const rc_hdr *h = hdr;
    (void)t;
    (void)dir;
    (void)h;
    return nth >= *(const uint64_t *)ctx;
}

START_TEST(test_dead_wire_fails_the_qp)
{
    rc_cfg cfg = RC_CFG_DEFAULT;
    cfg.mtu = 1024;
    cfg.rto_ps = SIM_US(10);
    side a, b;
    make(&a, &b, &cfg);
    rc_post(a.qp, RC_WRITE, 64 * 1024);
    uint64_t after = 10;
    run(&a, &b, drop_after, &after, SIM_US(100000));
    ck_assert(rc_failed(a.qp));
    ck_assert_uint_eq(rc_stats_get(a.qp)->timeouts, cfg.retry_cnt + 1);
    ck_assert_uint_eq(a.n_done, 0);
    finish(&a, &b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rc");
    TCase *tc = tcase_create("transport");
    tcase_add_test(tc, test_lossless);
    tcase_add_test(tc, test_one_loss_goes_back_one_round_trip);
    tcase_add_test(tc, test_tail_loss_needs_the_timeout);
    tcase_add_test(tc, test_lost_read_response_is_asked_again);
    tcase_add_test(tc, test_random_loss_both_ways);
    tcase_add_test(tc, test_dead_wire_fails_the_qp);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
