/* The flow-level network (sim/flownet.h) on star topologies whose answers
 * follow from the link figures alone: one flow's time is bytes over the
 * payload rate plus the path's latency; two flows into one port share it
 * half and half; a flow that joins late takes half until it is done and the
 * other then gets the whole link back (work-conserving: 3 B in 3 B / rate);
 * every channel carries each crossing flow's bytes; conservation holds. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "sim/flownet.h"
#include "sim/kernel.h"
#include "sim/topo.h"

#define MTU 4096u
static char err[512];

typedef struct net { topo *t; topo_routes *r; sim_kernel *k; sim_flownet *fn; double cap_GBps, lat_ns; } net;
typedef struct done_at { sim_kernel *k; sim_time_ps ps; unsigned calls; } done_at;

static void on_done(void *arg)
{
    done_at *d = arg;
    d->ps = sim_now(d->k);
    d->calls++;
}

static net make(const char *spec)
{
    net n;
    n.t = topo_from_string(spec, "ib-ndr", err, sizeof err);
    ck_assert_msg(n.t, "%s", err);
    n.r = topo_routes_new(n.t, TOPO_ROUTE_ECMP, err, sizeof err);
    ck_assert_msg(n.r, "%s", err);
    n.k = sim_kernel_new();
    sim_flownet_cfg c = { MTU, 100.0 };
    n.fn = sim_flownet_new(n.k, n.t, n.r, &c, err, sizeof err);
    ck_assert_msg(n.fn, "%s", err);
    const topo_link *l = &n.t->links[0];
    /* the figures every link of a star has: payload rate and the two-hop latency */
    n.cap_GBps = l->GBps * MTU / (MTU + l->overhead_bytes);
    n.lat_ns = 2 * l->latency_ns + (MTU + l->overhead_bytes) / l->GBps + 100.0;
    return n;
}

static void finish(net *n)
{
    ck_assert_msg(sim_flownet_check(n->fn, true, err, sizeof err) == 0, "%s", err);
    sim_flownet_free(n->fn);
    sim_kernel_free(n->k);
    topo_routes_free(n->r);
    topo_free(n->t);
}

static void near_ns(sim_time_ps got_ps, double want_ns)
{
    ck_assert_msg(fabs((double)got_ps / 1000.0 - want_ns) < 0.003, "done at %.3f ns, predicted %.3f ns", (double)got_ps / 1000.0, want_ns);
}

START_TEST(test_one_flow)
{
    net n = make("star:2");
    const uint64_t B = 1 << 20;
    done_at d = { n.k, 0, 0 };
    ck_assert_int_eq(sim_flownet_start(n.fn, 0, 1, 7, B, NULL, on_done, &d), 0);
    sim_run(n.k, SIM_TIME_MAX);
    ck_assert_uint_eq(d.calls, 1);
    near_ns(d.ps, B / n.cap_GBps + n.lat_ns);
    /* both links of the path carried it, busy for the drain */
    unsigned carrying = 0;
    for (uint32_t c = 0; c < 2 * n.t->n_links; c++) {
        double b = sim_flownet_channel_bytes(n.fn, c);
        if (b == 0) continue;
        carrying++;
        ck_assert(fabs(b - B) < 1e-3);
        ck_assert(fabs((double)sim_flownet_channel_busy_ps(n.fn, c) / 1000.0 - B / n.cap_GBps) < 0.003);
    }
    ck_assert_uint_eq(carrying, 2);
    ck_assert_int_eq(sim_flownet_start(n.fn, 1, 1, 0, B, NULL, on_done, &d), -1);   /* to itself: no path */
    finish(&n);
}
END_TEST

START_TEST(test_two_share_a_port)
{
    net n = make("star:3");
    const uint64_t B = 1 << 20;
    done_at a = { n.k, 0, 0 }, b = { n.k, 0, 0 };
    sim_flownet_start(n.fn, 0, 2, 1, B, NULL, on_done, &a);
    sim_flownet_start(n.fn, 1, 2, 2, B, NULL, on_done, &b);
    sim_run(n.k, SIM_TIME_MAX);
    near_ns(a.ps, 2 * B / n.cap_GBps + n.lat_ns);
    near_ns(b.ps, 2 * B / n.cap_GBps + n.lat_ns);
    ck_assert_uint_eq(sim_flownet_stats_get(n.fn)->recomputes, 2);   /* one for both starts, one when both end */
    finish(&n);
}
END_TEST

static void start_b(void *obj, uint64_t tag)
{
    (void)tag;
    void **args = obj;
    sim_flownet_start(args[0], 1, 2, 2, 1 << 20, NULL, on_done, args[1]);
}

START_TEST(test_late_joiner)
{
    net n = make("star:3");
    const double B = 1 << 20;
    done_at a = { n.k, 0, 0 }, b = { n.k, 0, 0 };
    sim_flownet_start(n.fn, 0, 2, 1, 2 * (uint64_t)B, NULL, on_done, &a);
    void *args[2] = { n.fn, &b };
    double t1_ns = B / n.cap_GBps / 2;
    sim_schedule_callback(n.k, (sim_time_ps)(t1_ns * 1000.0), 0, start_b, args, 0);
    sim_run(n.k, SIM_TIME_MAX);
    /* b: from t1 at half the rate; a: 3 B at the full rate in all */
    near_ns(b.ps, t1_ns + 2 * B / n.cap_GBps + n.lat_ns);
    near_ns(a.ps, 3 * B / n.cap_GBps + n.lat_ns);
    finish(&n);
}
END_TEST

START_TEST(test_zero_bytes_and_conservation)
{
    net n = make("star:4");
    done_at d = { n.k, 0, 0 };
    sim_flownet_start(n.fn, 0, 3, 0, 0, NULL, on_done, &d);
    for (unsigned i = 0; i < 3; i++) sim_flownet_start(n.fn, i, (i + 1) % 4, i, 12345 * (i + 1), NULL, on_done, &d);
    sim_run(n.k, SIM_US(1));
    ck_assert_msg(sim_flownet_check(n.fn, false, err, sizeof err) == 0, "%s", err);
    sim_run(n.k, SIM_TIME_MAX);
    ck_assert_uint_eq(d.calls, 4);
    const sim_flownet_stats *s = sim_flownet_stats_get(n.fn);
    ck_assert_uint_eq(s->started, 4);
    ck_assert_uint_eq(s->delivered, 4);
    ck_assert(fabs(s->bytes_drained - 12345.0 * 6) < 1e-6);
    ck_assert_uint_eq(s->peak_active, 3);
    finish(&n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("flownet");
    TCase *tc = tcase_create("flownet");
    tcase_add_test(tc, test_one_flow);
    tcase_add_test(tc, test_two_share_a_port);
    tcase_add_test(tc, test_late_joiner);
    tcase_add_test(tc, test_zero_bytes_and_conservation);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
