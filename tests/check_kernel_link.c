/* Links: latency, bandwidth serialisation (exact ps), in-order delivery,
 * credits spent and returned with the credit latency, the credit_returned
 * event, stall accounting, utilisation, hold_credits, sim_link_check
 * (conservation holds, and a violation is detected), deferred delivery
 * (messages waiting for the receiver's own activation, in order, with their
 * arrival times), the count of marked messages in flight, and order keys
 * (same-time deliveries in key order, whatever the send order). */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_fixture.h"
#include "sim/sim.h"

static void recv_log(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    log_add(k, ctx, (uint64_t)(uintptr_t)msg);
}

static sim_link *mk(const char *name, sim_time_ps lat, double bw, sim_time_ps clat, unsigned types, uint32_t credits)
{
    sim_link_cfg cfg = { 0 };
    cfg.name = name;
    cfg.latency_ps = lat;
    cfg.bandwidth_GBps = bw;
    cfg.credit_latency_ps = clat;
    cfg.credit_types = types;
    for (unsigned i = 0; i < types; i++) cfg.credits[i] = credits;
    sim_link *l = sim_link_new(k, &cfg);
    sim_link_set_receiver(l, recv_log, "rx");
    return l;
}

START_TEST(test_latency_only)
{
    sim_link *l = mk("l", 7000, 0, 0, 0, 0);
    sim_link_send(l, (void *)1, 4096);               /* infinite bandwidth: size does not matter */
    sim_link_send(l, (void *)2, 1);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@7000 rx@7000");
    ck_assert_uint_eq(g_log[0].val, 1);
    ck_assert_uint_eq(g_log[1].val, 2);
    char why[256];
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    sim_link_free(l);
}
END_TEST

START_TEST(test_bandwidth_back_to_back)
{
    /* 16 GB/s = 16 bytes/ns: 64 B take 4 ns on the wire, then 10 ns latency */
    sim_link *l = mk("l", 10000, 16, 0, 0, 0);
    for (uintptr_t i = 1; i <= 3; i++) sim_link_send(l, (void *)i, 64);
    ck_assert_uint_eq(sim_link_tx_free_ps(l), 12000);
    ck_assert_uint_eq(sim_link_in_flight(l), 3);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@14000 rx@18000 rx@22000");
    for (unsigned i = 0; i < 3; i++) ck_assert_uint_eq(g_log[i].val, i + 1);
    ck_assert_uint_eq(l->busy_ps, 12000);
    ck_assert_uint_eq(l->bytes_delivered, 192);
    sim_link_free(l);
}
END_TEST

START_TEST(test_bandwidth_fractional_exact)
{
    /* 3 GB/s: 333.33 ps per byte. Arrivals are rounded up to whole ps, but
     * the serialiser keeps the fraction, so 3000 one-byte messages end at
     * exactly 1 us (no drift). */
    sim_link *l = mk("l", 1000, 3, 0, 0, 0);
    for (uintptr_t i = 0; i < 3000; i++) sim_link_send(l, (void *)i, 1);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(g_log_n, 3000);
    ck_assert_uint_eq(g_log[0].t, 334 + 1000);
    ck_assert_uint_eq(g_log[1].t, 667 + 1000);
    ck_assert_uint_eq(g_log[2].t, 1000 + 1000);
    ck_assert_uint_eq(g_log[2999].t, SIM_US(1) + 1000);
    for (unsigned i = 0; i < 3000; i++) ck_assert_uint_eq(g_log[i].val, i);   /* in order */
    sim_link_free(l);
}
END_TEST

/* A gap: the serialiser idles, then starts at the send time. */
static sim_link *gl;
static sim_event gap_ev;
static sim_process gap_proc;
static void gap_send(void *ctx)
{
    (void)ctx;
    sim_link_send(gl, (void *)9, 32);
}

START_TEST(test_bandwidth_idle_gap)
{
    gl = mk("l", 500, 8, 0, 0, 0);                   /* 32 B = 4 ns */
    sim_link_send(gl, (void *)1, 32);
    sim_event_init(&gap_ev, k, "gap");
    sim_method_init(&gap_proc, k, "gap", gap_send, NULL);
    sim_sensitive(&gap_proc, &gap_ev);
    sim_dont_initialize(&gap_proc);
    sim_event_notify_at(&gap_ev, SIM_NS(100));
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@4500 rx@104500");
    ck_assert_uint_eq(gl->busy_ps, 8000);
    /* utilisation over [0, 104.5 ns]: 8 ns busy */
    ck_assert(fabs(sim_link_utilisation(gl) - 8000.0 / 104500.0) < 1e-12);
    sim_link_free(gl);
}
END_TEST

/* Utilisation counts only the wire time up to now: a burst queued at 99 ns
 * for 100 ns is not "busy" before it is on the wire. */
START_TEST(test_utilisation_counts_only_elapsed_wire_time)
{
    gl = mk("l", 0, 1, 0, 0, 0);                     /* 1 B/ns */
    sim_link_send(gl, (void *)0, 1);                 /* busy 0..1 ns */
    sim_run(k, SIM_NS(99));
    for (int i = 0; i < 100; i++) sim_link_send(gl, (void *)0, 1);   /* busy 99..199 ns */
    sim_run(k, SIM_NS(100));
    ck_assert_uint_eq(sim_now(k), SIM_NS(100));
    ck_assert(fabs(sim_link_utilisation(gl) - 2.0 / 100.0) < 1e-9);
    sim_run(k, SIM_NS(199));
    ck_assert(fabs(sim_link_utilisation(gl) - 101.0 / 199.0) < 1e-9);
    sim_link_free(gl);
    /* a reset mid-burst: the rest of the burst belongs to the new window */
    teardown();
    setup();
    gl = mk("l", 0, 1, 0, 0, 0);
    for (int i = 0; i < 100; i++) sim_link_send(gl, (void *)0, 1);   /* busy 0..100 ns */
    sim_run(k, SIM_NS(50));
    sim_link_reset_stats(gl);
    sim_run(k, SIM_NS(150));
    ck_assert(fabs(sim_link_utilisation(gl) - 50.0 / 100.0) < 1e-9);
    sim_link_free(gl);
}
END_TEST

/* ---------------------------------------------------------------- credits */

/* Sender: a process statically sensitive to credit_returned that sends
 * messages 1..n while it has credits. The receiver returns one credit per
 * message when it gets it. */
typedef struct sender {
    sim_link *l;
    sim_process p;
    uintptr_t next, last;
    unsigned fails;
} sender;

static sender snd;

static void sender_fn(void *ctx)
{
    sender *s = ctx;
    log_add(k, "tx", s->next);
    while (s->next <= s->last) {
        if (!sim_link_try_send(s->l, (void *)s->next, 16, 0, 1)) {
            s->fails++;
            return;
        }
        s->next++;
    }
}

static void recv_return(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    log_add(k, ctx, (uint64_t)(uintptr_t)msg);
    sim_link_return_credits(l, 0, 1);
}

static unsigned credit_cb_n;
static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t n)
{
    (void)ctx;
    (void)l;
    ck_assert_uint_eq(type, 0);
    credit_cb_n += n;
}

START_TEST(test_credits_spent_and_returned)
{
    /* 2 credits, 16 B at 16 GB/s = 1 ns, latency 10 ns, credits back in 5 ns */
    sim_link *l = mk("l", 10000, 16, 5000, 1, 2);
    sim_link_set_receiver(l, recv_return, "rx");
    sim_link_set_credit_callback(l, on_credit, NULL);
    credit_cb_n = 0;
    memset(&snd, 0, sizeof snd);
    snd.l = l;
    snd.next = 1;
    snd.last = 4;
    sim_method_init(&snd.p, k, "snd", sender_fn, &snd);
    sim_sensitive(&snd.p, &l->credit_returned);
    sim_run(k, 0);
    ck_assert_uint_eq(sim_link_credits(l, 0), 0);
    ck_assert_uint_eq(l->pool[0].outstanding, 2);
    ck_assert(l->stalled);
    ck_assert_uint_eq(l->credit_stalls, 1);
    char why[256];
    ck_assert_int_eq(sim_link_check(l, false, why, sizeof why), 0);
    ck_assert_int_ne(sim_link_check(l, true, why, sizeof why), 0);     /* not drained yet */
    ck_assert_ptr_nonnull(strstr(why, "in flight"));
    sim_run(k, SIM_TIME_MAX);
    /* msg1 arrives 11 ns, its credit at 16 ns: msg3 sent at 16 ns arrives 27 ns;
     * msg2 arrives 12 ns, credit 17 ns: msg4 arrives 28 ns */
    ck_assert_str_eq(log_str(), "tx@0 rx@11000 rx@12000 tx@16000 tx@17000 rx@27000 rx@28000 tx@32000 tx@33000");
    ck_assert_uint_eq(snd.fails, 2);
    ck_assert_uint_eq(l->stall_ps, 17000);          /* blocked 0..16 ns, then 16..17 ns */
    ck_assert_uint_eq(l->credits_returned_total, 4);
    ck_assert_uint_eq(credit_cb_n, 4);
    ck_assert_uint_eq(sim_link_credits(l, 0), 2);
    ck_assert_uint_eq(l->pool[0].outstanding, 0);
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    sim_link_free(l);
}
END_TEST

START_TEST(test_credit_types_independent_and_hold)
{
    sim_link_cfg cfg = { 0 };
    cfg.name = "l";
    cfg.latency_ps = 1000;
    cfg.credit_latency_ps = 2000;
    cfg.credit_types = 3;
    cfg.credits[0] = 4;
    cfg.credits[1] = 1;
    cfg.credits[2] = SIM_LINK_INFINITE_CREDITS;
    sim_link *l = sim_link_new(k, &cfg);
    sim_link_set_receiver(l, recv_log, "rx");
    trigger_count returned;
    trigger_count_init(&returned, k, &l->credit_returned);
    sim_link_hold_credits(l, 0, 3);                  /* preloaded receiver buffer */
    ck_assert_uint_eq(sim_link_credits(l, 0), 1);
    char why[256];
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    ck_assert(sim_link_try_send(l, (void *)1, 8, 0, 1));
    ck_assert(!sim_link_try_send(l, (void *)2, 8, 0, 1));   /* type 0 exhausted */
    ck_assert(sim_link_try_send(l, (void *)3, 8, 1, 1));    /* type 1 unaffected */
    ck_assert(!sim_link_can_send(l, 1, 1));
    for (int i = 0; i < 100; i++) ck_assert(sim_link_try_send(l, (void *)4, 8, 2, 5));   /* unlimited */
    ck_assert(sim_link_can_send(l, 0, 0));          /* zero credits: always */
    sim_link_return_credits(l, 0, 3);                /* the held ones come back after 2 ns */
    sim_run(k, 1999);
    ck_assert_uint_eq(sim_link_credits(l, 0), 0);
    ck_assert_int_eq(sim_link_check(l, false, why, sizeof why), 0);   /* 3 returning counted */
    sim_run(k, 2000);
    ck_assert_uint_eq(sim_link_credits(l, 0), 3);
    ck_assert_uint_eq(returned.n, 1);
    sim_link_return_credits(l, 0, 1);
    sim_link_return_credits(l, 1, 1);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(sim_link_credits(l, 0), 4);
    ck_assert_uint_eq(sim_link_credits(l, 1), 1);
    ck_assert_uint_eq(sim_link_credits(l, 2), SIM_LINK_INFINITE_CREDITS);
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    ck_assert_uint_eq(l->msgs_delivered, 102);
    sim_link_free(l);
}
END_TEST

START_TEST(test_check_detects_violations)
{
    sim_link *l = mk("bad", 1000, 0, 1000, 1, 4);
    ck_assert(sim_link_try_send(l, (void *)1, 8, 0, 1));
    sim_run(k, SIM_TIME_MAX);
    char why[256] = "";
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    /* a leaked credit (the receiver never returned it) */
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    l->pool[0].outstanding--;                     /* simulate a credit counter that lost one */
    ck_assert_int_ne(sim_link_check(l, true, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "credit type 0"));
    ck_assert_ptr_nonnull(strstr(why, "bad"));
    l->pool[0].outstanding++;
    /* a lost message */
    l->msgs_delivered--;
    ck_assert_int_ne(sim_link_check(l, false, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "sent 1, delivered 0"));
    sim_link_free(l);
}
END_TEST

/* Returning more credits than were spent is a broken protocol: abort. */
START_TEST(test_return_too_many_aborts)
{
    sim_link *l = mk("l", 1000, 0, 1000, 1, 2);
    sim_link_return_credits(l, 0, 1);
}
END_TEST

START_TEST(test_stall_accounting_with_reset)
{
    sim_link *l = mk("l", 1000, 0, 1000, 1, 1);
    ck_assert(sim_link_try_send(l, (void *)1, 8, 0, 1));
    ck_assert(!sim_link_try_send(l, (void *)2, 8, 0, 1));   /* stall starts at 0 */
    sim_run(k, SIM_NS(10));
    ck_assert(!sim_link_try_send(l, (void *)2, 8, 0, 1));   /* still the same stall */
    ck_assert_uint_eq(l->credit_stalls, 1);
    sim_link_reset_stats(l);                                  /* window starts at 10 ns */
    sim_run(k, SIM_NS(25));
    sim_link_return_credits(l, 0, 1);                         /* back at 26 ns */
    sim_run(k, SIM_NS(30));
    ck_assert(sim_link_try_send(l, (void *)2, 8, 0, 1));
    ck_assert_uint_eq(l->stall_ps, SIM_NS(20));               /* 10..30 ns, inside the window */
    ck_assert(!l->stalled);
    sim_link_free(l);
}
END_TEST

/* ---------------------------------------------------------------- randomised
 * A sender at random times sends random-size messages over a 4 GB/s link
 * (exactly 250 ps per byte) with two credit types; the receiver returns the
 * credits on arrival. Every arrival time is checked against
 * max(wire free, send time) + 250 * bytes + latency, every message arrives
 * once and in order, and conservation holds throughout while the in-flight
 * and credit rings wrap and grow. */
typedef struct rmsg { uint64_t id; sim_time_ps expect_ps; unsigned type; } rmsg;
static rmsg rmsgs[3000];
static uint64_t r_sent, r_recv;
static sim_time_ps r_wire_free;
static sim_link *rl;
static sim_process r_proc;
static sim_rng r_rng;

static void r_recv_fn(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)ctx;
    (void)bytes;
    rmsg *m = msg;
    ck_assert_uint_eq(m->id, r_recv);                 /* in order, none lost or duplicated */
    ck_assert_uint_eq(sim_now(k), m->expect_ps);
    r_recv++;
    sim_link_return_credits(l, m->type, 1);
}

static void r_send_fn(void *ctx)
{
    (void)ctx;
    char why[256];
    ck_assert_msg(sim_link_check(rl, false, why, sizeof why) == 0, "%s", why);
    unsigned n = (unsigned)sim_rng_below(&r_rng, 6);
    for (unsigned i = 0; i < n && r_sent < 3000; i++) {
        unsigned type = (unsigned)sim_rng_below(&r_rng, 2);
        uint32_t bytes = 1 + (uint32_t)sim_rng_below(&r_rng, 64);
        rmsg *m = &rmsgs[r_sent];
        if (!sim_link_try_send(rl, m, bytes, type, 1)) continue;
        sim_time_ps start = r_wire_free > sim_now(k) ? r_wire_free : sim_now(k);
        r_wire_free = start + 250 * bytes;
        m->id = r_sent++;
        m->expect_ps = r_wire_free + 3000;
        m->type = type;
    }
    if (r_sent < 3000) sim_next_trigger_at(k, 1 + sim_rng_below(&r_rng, 4000));
}

START_TEST(test_random_traffic_against_reference)
{
    sim_link_cfg cfg = { 0 };
    cfg.name = "r";
    cfg.latency_ps = 3000;
    cfg.bandwidth_GBps = 4;
    cfg.credit_latency_ps = 700;
    cfg.credit_types = 2;
    cfg.credits[0] = 20;
    cfg.credits[1] = 40;
    rl = sim_link_new(k, &cfg);
    sim_link_set_receiver(rl, r_recv_fn, NULL);
    sim_rng_seed(&r_rng, 99);
    r_sent = r_recv = 0;
    r_wire_free = 0;
    sim_method_init(&r_proc, k, "snd", r_send_fn, NULL);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(r_sent, 3000);
    ck_assert_uint_eq(r_recv, 3000);
    char why[256];
    ck_assert_msg(sim_link_check(rl, true, why, sizeof why) == 0, "%s", why);
    ck_assert_uint_eq(sim_link_credits(rl, 0), 20);
    ck_assert_uint_eq(sim_link_credits(rl, 1), 40);
    ck_assert_uint_gt(rl->q_cap, 16);                 /* the ring grew while wrapped */
    ck_assert_uint_gt(rl->credit_stalls, 0);          /* and the sender did run out of credits */
    sim_link_free(rl);
}
END_TEST

/* SIM_LINK_SAME_LATENCY, the delivered event (next delta after a batch) and a
 * sender pacing itself to the wire with sim_link_tx_free_ps. */
static sim_process dwatch, pacer;
static int paced;
static void dwatch_fn(void *ctx)
{
    (void)ctx;
    log_add(k, "delivered", 0);
}

static void pacer_fn(void *ctx)
{
    sim_link *l = ctx;
    ck_assert_uint_eq(sim_link_tx_free_ps(l), sim_now(k));   /* woken exactly when the wire is free */
    sim_link_send(l, (void *)(uintptr_t)paced, 10);
    if (++paced < 3) sim_next_trigger_at(k, sim_link_tx_free_ps(l) - sim_now(k));
}

START_TEST(test_delivered_event_same_latency_and_pacing)
{
    sim_link *l = mk("l", 2000, 2, SIM_LINK_SAME_LATENCY, 1, 8);   /* 10 B = 5 ns */
    ck_assert_uint_eq(l->cfg.credit_latency_ps, 2000);
    sim_method_init(&dwatch, k, "dw", dwatch_fn, NULL);
    sim_sensitive(&dwatch, &l->delivered);
    sim_dont_initialize(&dwatch);
    paced = 0;
    sim_method_init(&pacer, k, "pacer", pacer_fn, l);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@7000 delivered@7000 rx@12000 delivered@12000 rx@17000 delivered@17000");
    for (unsigned i = 0; i < 6; i += 2) ck_assert_uint_eq(g_log[i + 1].delta, g_log[i].delta + 1);   /* next delta */
    ck_assert(fabs(sim_link_utilisation(l) - 15000.0 / 17000.0) < 1e-12);
    sim_link_free(l);
}
END_TEST

/* `delivered` is notified only while someone waits on it (link.h): a process
 * waiting once (next_trigger) is still woken by it in the next delta. */
static sim_process dyn_waiter;
static sim_link *dyn_link;
static void dyn_waiter_fn(void *ctx)
{
    (void)ctx;
    log_add(k, "w", 0);
    if (sim_now(k) == 0) {
        sim_link_send(dyn_link, (void *)(uintptr_t)1, 10);
        sim_next_trigger(k, &dyn_link->delivered);
    } else {
        sim_next_trigger_at(k, SIM_NS(100));   /* waits on something else from now on */
        sim_link_send(dyn_link, (void *)(uintptr_t)2, 10);
    }
}

START_TEST(test_delivered_only_with_waiters)
{
    dyn_link = mk("l", 2000, 2, 0, 0, 0);   /* 10 B = 5 ns */
    sim_method_init(&dyn_waiter, k, "w", dyn_waiter_fn, NULL);
    sim_run(k, SIM_NS(20));
    ck_assert_str_eq(log_str(), "w@0 rx@7000 w@7000 rx@14000");
    ck_assert_uint_eq(g_log[2].delta, g_log[1].delta + 1);
    ck_assert(!sim_event_has_waiters(&dyn_link->delivered));
    ck_assert(!sim_event_pending(&dyn_link->delivered));
    sim_link_free(dyn_link);
}
END_TEST

/* ---- deferred delivery -------------------------------------------------- */
static bool defer_all;            /* the predicate also accepts even messages */
static unsigned defer_calls;
static sim_time_ps arrivals[16];
static size_t n_arrivals;

static bool defer_odd(void *ctx, sim_link *l, const void *msg)
{
    (void)ctx;
    (void)l;
    defer_calls++;
    return defer_all || ((uintptr_t)msg & 1u);
}

static void recv_arrival(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    recv_log(ctx, l, msg, bytes);
    arrivals[n_arrivals++] = sim_link_arrival_ps(l);
}

static void cb_take(void *obj, uint64_t tag)
{
    (void)tag;
    sim_link_take_arrived(obj);
}
static void cb_defer_until(void *obj, uint64_t tag) { sim_link_defer_until(obj, tag); }
static void cb_rejudge(void *obj, uint64_t tag)
{
    (void)tag;
    defer_all = true;
    sim_link_rejudge(obj);
}

/* 1 GB/s, 1 ns latency: 1-byte messages sent at 0 arrive at 2, 3, 4, 5 ns. */
static sim_link *mk_deferred(void)
{
    defer_all = false;
    defer_calls = 0;
    n_arrivals = 0;
    sim_link *l = mk("d", 1000, 1, 0, 0, 0);
    sim_link_set_receiver(l, recv_arrival, "rx");
    sim_link_set_deferrable(l, defer_odd);
    return l;
}

/* Picked-up delivery: the receiver is told every arrival time at the send,
 * takes the messages itself (in order, as of their arrival, through the time
 * it names), and the link never wakes a process for them. */
static sim_time_ps told[8];
static size_t n_told;
static void note_sent(void *ctx, sim_link *l, sim_time_ps arrive_ps)
{
    (void)ctx, (void)l;
    told[n_told++] = arrive_ps;
}
static void cb_pick_up(void *obj, uint64_t through) { sim_link_pick_up(obj, through); }

START_TEST(test_pickup_told_then_taken_in_order)
{
    n_arrivals = 0;
    n_told = 0;
    sim_link *l = mk("p", 1000, 1, 0, 0, 0);   /* 1 GB/s, 1 ns: 1-byte messages sent at 0 arrive at 2, 3, 4 ns */
    sim_link_set_receiver(l, recv_arrival, "rx");
    ck_assert(sim_link_set_pickup(l, note_sent));
    sim_link_send(l, (void *)1, 1);
    sim_link_send(l, (void *)2, 1);
    sim_link_send(l, (void *)3, 1);
    ck_assert_uint_eq(n_told, 3);
    ck_assert_uint_eq(told[0], 2000);
    ck_assert_uint_eq(told[2], 4000);
    ck_assert_uint_eq(sim_link_next_arrival_ps(l), 2000);
    sim_schedule_callback(k, 3500, 0, cb_pick_up, l, 2999);   /* only the one before 3 ns */
    sim_schedule_callback(k, 5000, 0, cb_pick_up, l, 5000);
    uint64_t ev0 = sim_event_count(k);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(sim_event_count(k), ev0);   /* no delivery process ran */
    ck_assert_str_eq(log_str(), "rx@3500 rx@5000 rx@5000");
    sim_time_ps want[] = { 2000, 3000, 4000 };
    ck_assert_uint_eq(n_arrivals, 3);
    for (size_t i = 0; i < 3; i++) ck_assert_uint_eq(arrivals[i], want[i]);
    ck_assert_uint_eq(sim_link_next_arrival_ps(l), SIM_TIME_MAX);
    char why[160];
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    /* refused where it cannot hold: after the first send, on a deferring link, on a sending half */
    ck_assert(!sim_link_set_pickup(l, note_sent));
    sim_link *d = mk("d", 1000, 1, 0, 0, 0);
    sim_link_set_deferrable(d, defer_odd);
    ck_assert(!sim_link_set_pickup(d, note_sent));
    sim_link *h = mk("h", 1000, 1, 0, 0, 0);
    sim_link_make_sending_half(h);
    ck_assert(!sim_link_set_pickup(h, note_sent));
    sim_link_free(d);
    sim_link_free(h);
    sim_link_free(l);
}
END_TEST

START_TEST(test_deferred_wait_then_in_order)
{
    sim_link *l = mk_deferred();
    sim_link_defer_until(l, SIM_NS(10));
    sim_link_send(l, (void *)1, 1);   /* waits */
    sim_link_send(l, (void *)3, 1);   /* waits */
    sim_link_send(l, (void *)4, 1);   /* not deferrable: delivered at 4 ns, after 1 and 3 */
    sim_link_send(l, (void *)5, 1);   /* waits for the take at 6 ns */
    sim_link_send(l, (void *)7, 5);   /* arrives at 10 ns, the promised time itself: not deferred, its own event */
    ck_assert_uint_eq(defer_calls, 5);
    sim_schedule_callback(k, 4500, 0, cb_take, l, 0);
    sim_schedule_callback(k, 6000, 0, cb_take, l, 0);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@4000 rx@4000 rx@4000 rx@6000 rx@10000");
    sim_time_ps want[] = { 2000, 3000, 4000, 5000, 10000 };
    ck_assert_uint_eq(n_arrivals, 5);
    for (size_t i = 0; i < 5; i++) ck_assert_uint_eq(arrivals[i], want[i]);
    ck_assert_uint_eq(g_log[3].val, 5);
    ck_assert_uint_eq(l->msgs_deferred, 1);
    char why[160];
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    sim_link_free(l);
}
END_TEST

START_TEST(test_deferred_earlier_promise_arms_event)
{
    sim_link *l = mk_deferred();
    sim_link_defer_until(l, SIM_NS(10));
    sim_link_send(l, (void *)1, 1);                        /* arrives at 2 ns */
    sim_link_send(l, (void *)3, 1);                        /* arrives at 3 ns */
    sim_schedule_callback(k, 500, 0, cb_defer_until, l, 2500);   /* 3 no longer waits */
    sim_run(k, SIM_TIME_MAX);
    /* nobody takes 1, so it goes with 3 at 3 ns (a receiver keeping its promise would have taken it by 2.5 ns) */
    ck_assert_str_eq(log_str(), "rx@3000 rx@3000");
    ck_assert_uint_eq(arrivals[0], 2000);
    ck_assert_uint_eq(arrivals[1], 3000);
    sim_link_free(l);
}
END_TEST

START_TEST(test_deferred_rejudge)
{
    sim_link *l = mk_deferred();
    sim_link_defer_until(l, SIM_NS(10));
    sim_link_send(l, (void *)2, 1);   /* not deferrable when sent: event at 2 ns */
    sim_link_send(l, (void *)4, 1);
    sim_schedule_callback(k, 500, 0, cb_rejudge, l, 0);   /* now it is: both wait */
    sim_schedule_callback(k, 7000, 0, cb_take, l, 0);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(defer_calls, 4);                    /* once when sent, once per message in flight */
    ck_assert_str_eq(log_str(), "rx@7000 rx@7000");
    ck_assert_uint_eq(arrivals[0], 2000);
    ck_assert_uint_eq(arrivals[1], 3000);
    ck_assert_uint_eq(l->msgs_deferred, 2);
    sim_link_free(l);
}
END_TEST

START_TEST(test_deferred_rejudge_asks_only_the_rest)
{
    sim_link *l = mk_deferred();
    sim_link_defer_until(l, SIM_NS(10));
    sim_link_send(l, (void *)1, 1);   /* deferrable when sent */
    sim_link_send(l, (void *)2, 1);   /* not yet */
    sim_schedule_callback(k, 500, 0, cb_rejudge, l, 0);
    sim_schedule_callback(k, 7000, 0, cb_take, l, 0);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(defer_calls, 3);                    /* the accepted one is not asked again */
    ck_assert_str_eq(log_str(), "rx@7000 rx@7000");
    ck_assert_uint_eq(l->msgs_deferred, 2);
    sim_link_free(l);
}
END_TEST

/* Marked messages: counted from their send until they are handed to the
 * receiver (inside recv the one being delivered no longer counts), a marked
 * one waiting for a deferring receiver still counts, unmarked ones never do,
 * and sim_link_check finds a count that disagrees with the wire. */
static uint32_t marked_seen[16];
static size_t n_marked_seen;
static void recv_marked(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    recv_arrival(ctx, l, msg, bytes);
    marked_seen[n_marked_seen++] = sim_link_marked_in_flight(l);
}

START_TEST(test_marked_in_flight)
{
    sim_link *l = mk_deferred();
    sim_link_set_receiver(l, recv_marked, "rx");
    n_marked_seen = 0;
    sim_link_defer_until(l, SIM_NS(10));
    sim_link_send_marked(l, (void *)2, 1);   /* arrives at 2 ns */
    sim_link_send(l, (void *)4, 1);          /* 3 ns, unmarked */
    sim_link_send_marked(l, (void *)5, 1);   /* 4 ns, deferrable: waits */
    sim_link_send_marked(l, (void *)6, 1);   /* 5 ns, not deferrable: its event delivers 5 first, in order */
    ck_assert_uint_eq(sim_link_marked_in_flight(l), 3);
    ck_assert_uint_eq(sim_link_in_flight(l), 4);
    char why[160];
    ck_assert_int_eq(sim_link_check(l, false, why, sizeof why), 0);
    l->marked_in_flight++;                   /* a count that disagrees with the wire */
    ck_assert_int_ne(sim_link_check(l, false, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "marked"));
    l->marked_in_flight--;
    sim_run(k, SIM_NS(4) + 500);
    ck_assert_uint_eq(n_marked_seen, 2);
    ck_assert_uint_eq(marked_seen[0], 2);    /* 2 delivered: 5 and 6 still on the way */
    ck_assert_uint_eq(marked_seen[1], 2);    /* 4 was not marked */
    ck_assert_uint_eq(sim_link_marked_in_flight(l), 2);   /* 5 has arrived but waits: still counted */
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@2000 rx@3000 rx@5000 rx@5000");
    ck_assert_uint_eq(marked_seen[2], 1);
    ck_assert_uint_eq(marked_seen[3], 0);
    ck_assert_uint_eq(sim_link_marked_in_flight(l), 0);
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    sim_link_free(l);
}
END_TEST

/* Parts: the index given to sim_link_send_part is what sim_link_part reads in
 * recv, per message in order; plain sends read 0; a credited part send that
 * lacks credits sends nothing. */
static void recv_part(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)ctx;
    (void)bytes;
    log_add(k, "rx", ((uint64_t)(uintptr_t)msg << 16) | sim_link_part(l));
}

START_TEST(test_parts_carried_to_receiver)
{
    sim_link *l = mk("l", 1000, 0, 0, 1, 2);
    sim_link_set_receiver(l, recv_part, NULL);
    sim_link_send_part(l, (void *)1, 16, 7);
    sim_link_send(l, (void *)2, 16);
    ck_assert(sim_link_try_send_part(l, (void *)3, 16, 0, 1, 0xbeef));
    ck_assert(sim_link_try_send_part(l, (void *)4, 16, 0, 1, 65535));
    ck_assert(!sim_link_try_send_part(l, (void *)5, 16, 0, 1, 9));
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str(), "rx@1000 rx@1000 rx@1000 rx@1000");
    ck_assert_uint_eq(g_log[0].val, (1u << 16) | 7);
    ck_assert_uint_eq(g_log[1].val, 2u << 16);
    ck_assert_uint_eq(g_log[2].val, (3u << 16) | 0xbeef);
    ck_assert_uint_eq(g_log[3].val, (4u << 16) | 65535);
    sim_link_return_credits(l, 0, 2);
    sim_run(k, SIM_TIME_MAX);
    char why[256];
    ck_assert_int_eq(sim_link_check(l, true, why, sizeof why), 0);
    sim_link_free(l);
}
END_TEST

/* Same-time deliveries of keyed links fire after unkeyed ones, in key order,
 * whatever order their senders sent in; 40 links take the merge path. */
START_TEST(test_order_keys_define_same_time_order)
{
    static const uint32_t keys[] = { 9, 3, 0, 5 };
    static const char *const names[] = { "k9", "k3", "u", "k5" };
    for (int round = 0; round < 2; round++) {
        sim_link *l[4];
        for (int i = 0; i < 4; i++) {
            l[i] = mk(names[i], 1000, 0, 0, 0, 0);
            sim_link_set_receiver(l[i], recv_log, (void *)names[i]);
            sim_link_set_order_key(l[i], keys[i]);
        }
        for (int j = 0; j < 4; j++) {   /* round 0: k9 k3 u k5; round 1 the reverse */
            int i = round ? 3 - j : j;
            sim_link_send(l[i], (void *)(uintptr_t)i, 8);
        }
        sim_run(k, SIM_TIME_MAX);
        ck_assert_str_eq(log_str(), round ? "u@2000 k3@2000 k5@2000 k9@2000" : "u@1000 k3@1000 k5@1000 k9@1000");
        log_reset();
        for (int i = 0; i < 4; i++) sim_link_free(l[i]);
    }
    enum { N = 40 };
    sim_link *many[N];
    for (uint32_t i = 0; i < N; i++) {
        uint32_t key = 1 + 2 * ((i * 17) % N);   /* a permutation of 1, 3, ... 79 */
        many[i] = mk("many", 500, 0, 0, 0, 0);
        sim_link_set_order_key(many[i], key);
        sim_link_send(many[i], (void *)(uintptr_t)key, 8);
    }
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(g_log_n, N);
    for (int i = 1; i < N; i++) ck_assert_uint_lt(g_log[i - 1].val, g_log[i].val);
    for (int i = 0; i < N; i++) sim_link_free(many[i]);
}
END_TEST

START_TEST(test_order_key_after_send_aborts)
{
    sim_link *l = mk("l", 1000, 0, 0, 0, 0);
    sim_link_send(l, (void *)1, 8);
    sim_link_set_order_key(l, 7);
}
END_TEST

static Suite *link_suite(void)
{
    Suite *s = suite_create("link");
    TCase *tc = tcase_create("timing");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_latency_only);
    tcase_add_test(tc, test_bandwidth_back_to_back);
    tcase_add_test(tc, test_bandwidth_fractional_exact);
    tcase_add_test(tc, test_bandwidth_idle_gap);
    tcase_add_test(tc, test_utilisation_counts_only_elapsed_wire_time);
    tcase_add_test(tc, test_delivered_event_same_latency_and_pacing);
    tcase_add_test(tc, test_delivered_only_with_waiters);
    tcase_add_test(tc, test_parts_carried_to_receiver);
    suite_add_tcase(s, tc);
    tc = tcase_create("credits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_credits_spent_and_returned);
    tcase_add_test(tc, test_credit_types_independent_and_hold);
    tcase_add_test(tc, test_check_detects_violations);
    tcase_add_test_raise_signal(tc, test_return_too_many_aborts, SIGABRT);
    tcase_add_test(tc, test_stall_accounting_with_reset);
    tcase_add_test(tc, test_random_traffic_against_reference);
    suite_add_tcase(s, tc);
    tc = tcase_create("deferred");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_deferred_wait_then_in_order);
    tcase_add_test(tc, test_pickup_told_then_taken_in_order);
    tcase_add_test(tc, test_deferred_earlier_promise_arms_event);
    tcase_add_test(tc, test_deferred_rejudge);
    tcase_add_test(tc, test_deferred_rejudge_asks_only_the_rest);
    tcase_add_test(tc, test_marked_in_flight);
    suite_add_tcase(s, tc);
    tc = tcase_create("order");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_order_keys_define_same_time_order);
    tcase_add_test_raise_signal(tc, test_order_key_after_send_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(link_suite()); }
