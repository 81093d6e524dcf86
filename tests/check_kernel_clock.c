/* Clock domains: handlers once per edge in registration order, cycle numbers,
 * phase, idle handlers dropping out (and the domain then scheduling nothing),
 * sim_clock_wake restarting on the next edge, two domains side by side. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_fixture.h"
#include "sim/sim.h"

typedef struct hctx {
    const char *name;
    uint64_t active_until;       /* returns false at this cycle */
    sim_clock_handler *wake;     /* optional: wakes this handler at cycle wake_at */
    uint64_t wake_at;
} hctx;

static bool handler(void *ctx, uint64_t cycle)
{
    hctx *h = ctx;
    log_add(k, h->name, cycle);
    if (h->wake && cycle == h->wake_at) sim_clock_wake(h->wake);
    return cycle < h->active_until;
}

/* "a0@0 b0@0 a1@1000 ..." with cycle numbers */
static const char *cyc_log(void)
{
    static char buf[8192];
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < g_log_n && off < sizeof buf - 64; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s%llu@%llu", i ? " " : "", g_log[i].who,
                                (unsigned long long)g_log[i].val, (unsigned long long)g_log[i].t);
    return buf;
}

START_TEST(test_handlers_in_order_once_per_edge)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 1000, 0);
    sim_clock_handler ha, hb;
    hctx a = { "a", 100, NULL, 0 }, b = { "b", 100, NULL, 0 };
    sim_clock_add(d, &ha, "a", handler, &a);
    sim_clock_add(d, &hb, "b", handler, &b);
    sim_run(k, 3500);
    ck_assert_str_eq(cyc_log(), "a0@0 b0@0 a1@1000 b1@1000 a2@2000 b2@2000 a3@3000 b3@3000");
    ck_assert_uint_eq(d->edges, 4);
    ck_assert_uint_eq(sim_clock_cycle(d), 4);             /* the next edge */
    ck_assert_uint_eq(sim_clock_edge_time(d, 7), 7000);
    sim_clock_free(d);
}
END_TEST

START_TEST(test_phase_and_cycle_numbers)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 800, 300);
    sim_clock_handler ha;
    hctx a = { "a", 2, NULL, 0 };
    sim_clock_add(d, &ha, "a", handler, &a);
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 1900);    /* idle at cycle 2: nothing more scheduled */
    ck_assert_str_eq(cyc_log(), "a0@300 a1@1100 a2@1900");
    ck_assert_uint_eq(sim_clock_edge_time(d, 2), 1900);
    sim_clock_free(d);
}
END_TEST

START_TEST(test_idle_handlers_drop_out_and_domain_stops)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 1000, 0);
    sim_clock_handler ha, hb;
    hctx a = { "a", 1, NULL, 0 }, b = { "b", 3, NULL, 0 };
    sim_clock_add(d, &ha, "a", handler, &a);
    sim_clock_add(d, &hb, "b", handler, &b);
    /* terminates with no limit: an all-idle domain schedules nothing */
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 3000);
    ck_assert_str_eq(cyc_log(), "a0@0 b0@0 a1@1000 b1@1000 b2@2000 b3@3000");
    ck_assert_uint_eq(d->edges, 4);
    ck_assert_uint_eq(d->n_active, 0);
    ck_assert_uint_eq(sim_next_time(k), SIM_TIME_MAX);
    sim_clock_free(d);
}
END_TEST

/* A wake from outside: the next edge at or after now (an edge at now that has
 * not run counts; one that already ran does not). */
static sim_clock_handler *to_wake;
static sim_event poke;
static sim_process poker;
static void poke_fn(void *ctx)
{
    (void)ctx;
    log_add(k, "poke", 0);
    sim_clock_wake(to_wake);
}

START_TEST(test_wake_restarts_on_next_edge)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 1000, 0);
    sim_clock_handler ha;
    hctx a = { "a", 1, NULL, 0 };
    sim_clock_add(d, &ha, "a", handler, &a);
    to_wake = &ha;
    sim_event_init(&poke, k, "poke");
    sim_method_init(&poker, k, "poker", poke_fn, NULL);
    sim_sensitive(&poker, &poke);
    sim_dont_initialize(&poker);
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 1000);
    /* poke between edges: resumes at the next edge */
    a.active_until = 6;
    sim_event_notify_at(&poke, 4500 - sim_now(k));
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 6000);
    ck_assert_str_eq(cyc_log(), "a0@0 a1@1000 poke0@4500 a5@5000 a6@6000");
    /* poke at 6000 after the edge ran (idle again): next edge is 7000, not 6000 again */
    log_reset();
    a.active_until = 7;
    sim_event_notify_delta(&poke);
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 7000);
    ck_assert_str_eq(cyc_log(), "poke0@6000 a7@7000");
    /* poke exactly at an edge time that has not run: runs at that edge */
    log_reset();
    a.active_until = 9;
    poke.priority = -1;
    sim_event_notify_at(&poke, 2000);
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 9000);
    ck_assert_str_eq(cyc_log(), "poke0@9000 a9@9000");
    ck_assert_uint_eq(d->edges, 6);
    sim_clock_free(d);
}
END_TEST

/* A handler woken by another handler of the same domain during an edge runs
 * from the next edge, whichever of the two was registered first. */
START_TEST(test_wake_from_handler_next_edge)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 1000, 0);
    sim_clock_handler ha, hb, hc;
    hctx a = { "a", 0, NULL, 0 }, b = { "b", 5, NULL, 0 }, c = { "c", 0, NULL, 0 };
    b.wake = &ha;                 /* registered before b */
    b.wake_at = 2;
    sim_clock_add(d, &ha, "a", handler, &a);
    sim_clock_add(d, &hb, "b", handler, &b);
    sim_clock_add(d, &hc, "c", handler, &c);
    sim_run(k, 2500);
    ck_assert_str_eq(cyc_log(), "a0@0 b0@0 c0@0 b1@1000 b2@2000");
    log_reset();
    a.active_until = 3;
    sim_run(k, 3500);
    ck_assert_str_eq(cyc_log(), "a3@3000 b3@3000");
    /* now b wakes c, registered after it: c must not run in the same edge either */
    log_reset();
    b.wake = &hc;
    b.wake_at = 4;
    c.active_until = 5;
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(cyc_log(), "b4@4000 b5@5000 c5@5000");
    sim_clock_free(d);
}
END_TEST

START_TEST(test_two_domains)
{
    sim_clock_domain *d1 = sim_clock_new(k, "fast", 1000, 0);
    sim_clock_domain *d2 = sim_clock_new(k, "slow", 1500, 500);
    sim_clock_handler h1, h2;
    hctx a = { "f", 4, NULL, 0 }, b = { "s", 2, NULL, 0 };
    sim_clock_add(d1, &h1, "f", handler, &a);
    sim_clock_add(d2, &h2, "s", handler, &b);
    ck_assert_uint_eq(sim_run(k, SIM_TIME_MAX), 4000);
    /* per domain: right cycles at the right times; merged: time order */
    char f[256] = "", s[256] = "";
    for (size_t i = 0; i < g_log_n; i++) {
        char *dst = g_log[i].who[0] == 'f' ? f : s;
        snprintf(dst + strlen(dst), 256 - strlen(dst), "%llu@%llu ", (unsigned long long)g_log[i].val,
                 (unsigned long long)g_log[i].t);
        if (i) ck_assert_uint_le(g_log[i - 1].t, g_log[i].t);
    }
    ck_assert_str_eq(f, "0@0 1@1000 2@2000 3@3000 4@4000 ");
    ck_assert_str_eq(s, "0@500 1@2000 2@3500 ");
    sim_clock_free(d1);
    sim_clock_free(d2);
}
END_TEST

/* Clock handlers see signal values committed in earlier deltas/times and
 * their own writes only after the update: a 2-stage shift register clocked
 * by a domain behaves like flip-flops. */
static sim_signal q1, q2;
static bool shift(void *ctx, uint64_t cycle)
{
    (void)ctx;
    sim_signal_write(&q2, sim_signal_read(&q1));
    sim_signal_write(&q1, cycle + 10);
    log_add(k, "q2", sim_signal_read(&q2));
    return cycle < 4;
}

START_TEST(test_handler_signal_semantics)
{
    sim_clock_domain *d = sim_clock_new(k, "clk", 1000, 0);
    sim_clock_handler h;
    sim_signal_init(&q1, k, "q1", 8, 0);
    sim_signal_init(&q2, k, "q2", 8, 0);
    sim_clock_add(d, &h, "shift", shift, NULL);
    sim_run(k, SIM_TIME_MAX);
    /* q2 at edge n (before update) = q1 written at edge n-2 */
    ck_assert_uint_eq(g_log_n, 5);
    ck_assert_uint_eq(g_log[0].val, 0);
    ck_assert_uint_eq(g_log[1].val, 0);
    ck_assert_uint_eq(g_log[2].val, 10);
    ck_assert_uint_eq(g_log[3].val, 11);
    ck_assert_uint_eq(g_log[4].val, 12);
    sim_clock_free(d);
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("clock");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_handlers_in_order_once_per_edge);
    tcase_add_test(tc, test_phase_and_cycle_numbers);
    tcase_add_test(tc, test_idle_handlers_drop_out_and_domain_stops);
    tcase_add_test(tc, test_wake_restarts_on_next_edge);
    tcase_add_test(tc, test_wake_from_handler_next_edge);
    tcase_add_test(tc, test_two_domains);
    tcase_add_test(tc, test_handler_signal_semantics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(clock_suite()); }
