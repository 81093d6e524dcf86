/* The TCP-like transport engine (models/network/tcp.h) between two ends over
 * a lossy wire of its own (tests/transport_wire.h): the initial window of
 * RFC 6928 (10 segments in the first round trip), slow start, exactly-once
 * in-order delivery; one loss in a full window costs one fast retransmit of
 * that segment alone (no go-back-N) and halves the window; a lost tail needs
 * the timeout; random loss both ways loses nothing; a dead wire fails the
 * connection after max_retries + 1 timeouts, each twice the one before. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "models/network/tcp.h"
#include "sim/rng.h"
#include "transport_wire.h"

typedef struct side { tcp_conn *c; unsigned done, recv_done; uint64_t done_bytes, recv_bytes; } side;

static void on_done(void *ctx, uint32_t msg, bool sender, uint64_t bytes)
{
    (void)msg;
    side *s = ctx;
    if (sender) s->done++, s->done_bytes += bytes;
    else s->recv_done++, s->recv_bytes += bytes;
}

static bool c_next(void *c, sim_time_ps now, void *h) { return tcp_next_segment(c, now, h); }
static void c_receive(void *c, sim_time_ps now, const void *h) { tcp_receive(c, now, h); }
static void c_timer(void *c, sim_time_ps now) { tcp_timer(c, now); }
static bool c_idle(const void *c) { return tcp_idle(c); }
static bool c_failed(const void *c) { return tcp_failed(c); }

static sim_time_ps run(side *a, side *b, wire_drop_fn drop, void *ctx, sim_time_ps limit)
{
    wire_end ea = { a->c, c_next, c_receive, c_timer, c_idle, c_failed }, eb = { b->c, c_next, c_receive, c_timer, c_idle, c_failed };
    return wire_run(&ea, &eb, sizeof(tcp_seg), drop, ctx, limit);
}

static void make(side *a, side *b, const tcp_cfg *cfg)
{
    memset(a, 0, sizeof *a);
    memset(b, 0, sizeof *b);
    a->c = tcp_conn_new(cfg, "a", on_done, a);
    b->c = tcp_conn_new(cfg, "b", on_done, b);
}

static void finish(side *a, side *b)
{
    char why[256];
    ck_assert_msg(tcp_check(a->c, why, sizeof why) == 0, "%s", why);
    ck_assert_msg(tcp_check(b->c, why, sizeof why) == 0, "%s", why);
    tcp_conn_free(a->c);
    tcp_conn_free(b->c);
}

static tcp_cfg cfg_for_tests(void)
{
    tcp_cfg c = TCP_CFG_DEFAULT;
    c.min_rto_ps = SIM_US(10);
    c.init_rto_ps = SIM_US(10);
    return c;
}

/* Records when data segments 0..63 left (dir 0). */
typedef struct sends { sim_time_ps at[64]; } sends;
static bool record(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    (void)hdr;
    sends *s = ctx;
    if (dir == 0 && nth < 64) s->at[nth] = t;
    return false;
}

START_TEST(test_initial_window_and_slow_start)
{
    tcp_cfg cfg = cfg_for_tests();
    side a, b;
    make(&a, &b, &cfg);
    tcp_post(a.c, 1000000);
    sends s = { { 0 } };
    run(&a, &b, record, &s, SIM_US(100000));
    ck_assert_uint_eq(a.done, 1);
    ck_assert_uint_eq(b.recv_done, 1);
    ck_assert_uint_eq(b.recv_bytes, 1000000);
    /* 10 segments back to back, then nothing until the first ACK is back: one round trip of 2 x (latency + a slot) */
    for (unsigned i = 0; i < 10; i++) ck_assert_uint_eq(s.at[i], (sim_time_ps)i * WIRE_SLOT_PS);
    const sim_time_ps rtt = 2 * (WIRE_LAT_SLOTS + 1) * WIRE_SLOT_PS;
    ck_assert_uint_ge(s.at[10], rtt);
    ck_assert_uint_le(s.at[10], rtt + 2 * WIRE_SLOT_PS);   /* the ACK of segments 0 and 1 (delayed ACK: every 2nd) */
    const tcp_stats *st = tcp_stats_get(a.c);
    ck_assert_uint_eq(st->retransmitted_segs, 0);
    ck_assert_uint_gt(st->max_cwnd_bytes, 40 * cfg.mss);   /* grew in slow start */
    ck_assert_uint_eq(st->segs, (1000000 + cfg.mss - 1) / cfg.mss);
    finish(&a, &b);
}
END_TEST

static bool drop_nth(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    (void)t, (void)hdr;
    return dir == 0 && nth == *(const uint64_t *)ctx;
}

START_TEST(test_one_loss_one_fast_retransmit)
{
    tcp_cfg cfg = cfg_for_tests();
    side a, b;
    make(&a, &b, &cfg);
    tcp_post(a.c, 2000000);
    uint64_t lost = 300;   /* well into the transfer: a full window behind it sends the duplicate ACKs */
    run(&a, &b, drop_nth, &lost, SIM_US(100000));
    ck_assert_uint_eq(a.done, 1);
    ck_assert_uint_eq(b.recv_bytes, 2000000);
    const tcp_stats *st = tcp_stats_get(a.c);
    ck_assert_uint_eq(st->fast_retransmits, 1);
    ck_assert_uint_eq(st->timeouts, 0);
    ck_assert_uint_eq(st->retransmitted_segs, 1);   /* the hole alone: the receiver kept what came after it */
    ck_assert_uint_ge(st->dup_acks_received, 3);
    ck_assert_uint_gt(tcp_stats_get(b.c)->out_of_order_received, 3);
    finish(&a, &b);
}
END_TEST

START_TEST(test_tail_loss_needs_the_timeout)
{
    tcp_cfg cfg = cfg_for_tests();
    side a, b;
    make(&a, &b, &cfg);
    tcp_post(a.c, 5 * 1460);
    uint64_t lost = 4;   /* the last segment: no later one makes duplicate ACKs */
    sim_time_ps t = run(&a, &b, drop_nth, &lost, SIM_US(100000));
    ck_assert_uint_eq(a.done, 1);
    const tcp_stats *st = tcp_stats_get(a.c);
    ck_assert_uint_eq(st->timeouts, 1);
    ck_assert_uint_eq(st->fast_retransmits, 0);
    ck_assert_uint_ge(t, cfg.min_rto_ps);
    finish(&a, &b);
}
END_TEST

static bool drop_random(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    (void)dir, (void)nth, (void)t, (void)hdr;
    return sim_rng_double(ctx) < 0.01;
}

START_TEST(test_random_loss_both_ways)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        tcp_cfg cfg = cfg_for_tests();
        side a, b;
        make(&a, &b, &cfg);
        for (unsigned i = 0; i < 8; i++) tcp_post(a.c, 1 + i * 77777);
        sim_rng rng;
        sim_rng_seed(&rng, seed);
        run(&a, &b, drop_random, &rng, SIM_US(10000000));
        ck_assert_msg(!tcp_failed(a.c), "seed %llu: failed", (unsigned long long)seed);
        ck_assert_uint_eq(a.done, 8);
        ck_assert_uint_eq(b.recv_done, 8);
        uint64_t total = 0;
        for (unsigned i = 0; i < 8; i++) total += 1 + i * 77777;
        ck_assert_uint_eq(b.recv_bytes, total);
        ck_assert_uint_eq(a.done_bytes, total);
        ck_assert_uint_gt(tcp_stats_get(a.c)->retransmitted_segs, 0);
        finish(&a, &b);
    }
}
END_TEST

static bool drop_after(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx)
{
    (void)dir, (void)t, (void)hdr;
    return nth >= *(const uint64_t *)ctx;
}

START_TEST(test_dead_wire_fails_with_backoff)
{
    tcp_cfg cfg = cfg_for_tests();
    cfg.max_retries = 3;
    side a, b;
    make(&a, &b, &cfg);
    tcp_post(a.c, 1000000);
    uint64_t after = 50;
    sim_time_ps t = run(&a, &b, drop_after, &after, SIM_US(100000));
    ck_assert(tcp_failed(a.c));
    ck_assert_uint_eq(tcp_stats_get(a.c)->timeouts, 4);
    ck_assert_uint_ge(t, 15 * cfg.min_rto_ps);   /* RTO, 2 RTO, 4 RTO, 8 RTO */
    ck_assert_uint_lt(t, 17 * cfg.min_rto_ps);
    ck_assert_uint_eq(a.done, 0);
    finish(&a, &b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tcp");
    TCase *tc = tcase_create("transport");
    tcase_add_test(tc, test_initial_window_and_slow_start);
    tcase_add_test(tc, test_one_loss_one_fast_retransmit);
    tcase_add_test(tc, test_tail_loss_needs_the_timeout);
    tcase_add_test(tc, test_random_loss_both_ways);
    tcase_add_test(tc, test_dead_wire_fails_with_backoff);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
