/* Flow-level collectives (models/collective/coll_flow.h) against the
 * packet-level engine on one DGX H100: the same ring, channels and chunks,
 * the same topology; all_reduce, all_gather and reduce_scatter times agree
 * within a band at sizes where bandwidth dominates (Simple's fence as the
 * flow level's fence_ns: two small writes GPU -> switch -> GPU), concurrent collectives
 * on disjoint groups do not slow each other (no shared link), two on one
 * group share it, and a point-to-point send takes its size over the
 * channels' goodput. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/collective/coll_flow.h"
#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "sim/flownet.h"

static char err[2048];

static double packet_us(enum coll_op op, uint64_t bytes)
{
    fabric_register_kinds();
    collective_register_kinds();
    topo *t = topo_from_string("dgx-h100", "nvlink4", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    sim_kernel *k = sim_kernel_new();
    nvgpu_cfg gc = NVGPU_CFG_DEFAULT;
    gc.burst_pkts = 8;
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "nvgpu", &gc }, { "switch", &sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s", err);
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.check = false;
    coll_comm *cm = coll_comm_new(f, &cc, err, sizeof err);
    ck_assert_msg(cm, "%s", err);
    uint64_t count = bytes / 4;
    coll_result r;
    ck_assert_msg(coll_run(cm, op, count, &r, err, sizeof err) == 0, "%s", err);
    double us = (double)r.time_ps / 1e6;
    coll_comm_free(cm);
    sim_fabric_free(f);
    sim_kernel_free(k);
    topo_free(t);
    return us;
}

typedef struct flow_env { topo *t; topo_routes *r; sim_kernel *k; sim_flownet *net; coll_flow *e; } flow_env;
typedef struct done_at { sim_kernel *k; sim_time_ps ps; unsigned n; } done_at;
static void on_done(void *arg)
{
    done_at *d = arg;
    d->ps = sim_now(d->k);
    d->n++;
}

/* fence: the packet engine's Simple fence (the comparison with it), else none */
static flow_env flow_make_fenced(bool fence)
{
    fabric_register_kinds();
    collective_register_kinds();
    flow_env v;
    v.t = topo_from_string("dgx-h100", "nvlink4", err, sizeof err);
    ck_assert_msg(v.t, "%s", err);
    v.r = topo_routes_new(v.t, TOPO_ROUTE_ECMP, err, sizeof err);
    ck_assert_msg(v.r, "%s", err);
    v.k = sim_kernel_new();
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_flownet_cfg nc = { 128, sc.pipeline_ns };   /* NVLink packets: 128-byte payloads */
    v.net = sim_flownet_new(v.k, v.t, v.r, &nc, err, sizeof err);
    ck_assert_msg(v.net, "%s", err);
    coll_flow_cfg cc = COLL_FLOW_CFG_DEFAULT;
    /* the packet engine's Simple fence: a write response back and the flag, each one small write GPU -> switch -> GPU */
    const topo_link *l = &v.t->links[v.t->nodes[v.t->endpoint_node[0]].port_link[0]];
    if (fence) cc.fence_ns = 2 * (2 * l->latency_ns + sc.pipeline_ns + 2 * (128.0 + l->overhead_bytes) / l->GBps);
    v.e = coll_flow_new(v.k, v.net, v.t, v.r, &cc);
    return v;
}

static flow_env flow_make(void) { return flow_make_fenced(false); }

static void flow_free(flow_env *v)
{
    ck_assert_msg(coll_flow_check(v->e, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_flownet_check(v->net, true, err, sizeof err) == 0, "%s", err);
    coll_flow_free(v->e);
    sim_flownet_free(v->net);
    sim_kernel_free(v->k);
    topo_routes_free(v->r);
    topo_free(v->t);
}

static const uint32_t all8[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };

static double flow_us(enum coll_op op, uint64_t bytes)
{
    flow_env v = flow_make_fenced(true);
    done_at d = { v.k, 0, 0 };
    ck_assert_msg(coll_flow_start(v.e, op, all8, 8, bytes, on_done, &d, err, sizeof err) == 0, "%s", err);
    sim_run(v.k, SIM_TIME_MAX);
    ck_assert_uint_eq(d.n, 1);
    /* every NVLink direction GPU -> switch carried the same bytes: the steering kept each ring on its links */
    double lo = INFINITY, hi = 0;
    for (uint32_t c = 0; c < 2 * v.t->n_links; c++) {
        const topo_link *l = &v.t->links[c / 2];
        bool from_gpu = (c & 1) ? v.t->nodes[l->b].endpoint >= 0 : v.t->nodes[l->a].endpoint >= 0;
        if (!from_gpu) continue;
        double b = sim_flownet_channel_bytes(v.net, c);
        lo = fmin(lo, b), hi = fmax(hi, b);
    }
    ck_assert_msg(lo >= 0.99 * hi, "GPU uplinks carried %.0f .. %.0f bytes", lo, hi);
    flow_free(&v);
    return (double)d.ps / 1e6;
}

START_TEST(test_matches_packet_level)
{
    static const uint64_t sizes[] = { 16u << 20, 64u << 20 };
    for (unsigned i = 0; i < 2; i++)
        for (unsigned op = 0; op < 3; op++) {
            double p = packet_us((enum coll_op)op, sizes[i]), fl = flow_us((enum coll_op)op, sizes[i]);
            double d = fabs(fl - p) / p;
            fprintf(stderr, "%s %llu B: packet %.2f us, flow %.2f us (%+.2f %%)\n", coll_op_name((enum coll_op)op),
                    (unsigned long long)sizes[i], p, fl, 100 * (fl - p) / p);
            ck_assert_msg(d <= 0.02, "%s %llu B: flow level %.2f us vs packet level %.2f us", coll_op_name((enum coll_op)op),
                          (unsigned long long)sizes[i], fl, p);
        }
}
END_TEST

/* One collective at flow level, chunked (stream_above_flows 0) or streamed (1: always). */
static double flow_mode_us(enum coll_op op, uint64_t bytes, bool streamed)
{
    fabric_register_kinds();
    collective_register_kinds();
    flow_env v = flow_make_fenced(true);
    coll_flow_free(v.e);
    coll_flow_cfg cc = COLL_FLOW_CFG_DEFAULT;
    const topo_link *l = &v.t->links[v.t->nodes[v.t->endpoint_node[0]].port_link[0]];
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    cc.fence_ns = 2 * (2 * l->latency_ns + sc.pipeline_ns + 2 * (128.0 + l->overhead_bytes) / l->GBps);
    cc.stream_above_flows = streamed ? 1 : 0;
    v.e = coll_flow_new(v.k, v.net, v.t, v.r, &cc);
    done_at d = { v.k, 0, 0 };
    ck_assert_msg(coll_flow_start(v.e, op, all8, 8, bytes, on_done, &d, err, sizeof err) == 0, "%s", err);
    sim_run(v.k, SIM_TIME_MAX);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_uint_eq(coll_flow_stats_get(v.e)->streamed, streamed ? 1 : 0);
    flow_free(&v);
    return (double)d.ps / 1e6;
}

/* The streamed ring (a connection's steps as one flow) against the chunked one, from latency-bound to bandwidth-bound sizes. */
START_TEST(test_streamed_matches_chunked)
{
    static const uint64_t sizes[] = { 64u << 10, 1u << 20, 16u << 20, 64u << 20 };
    for (unsigned i = 0; i < 4; i++)
        for (unsigned op = 0; op < 3; op++) {
            double ch = flow_mode_us((enum coll_op)op, sizes[i], false), st = flow_mode_us((enum coll_op)op, sizes[i], true);
            fprintf(stderr, "%s %llu B: chunked %.2f us, streamed %.2f us (%+.2f %%)\n", coll_op_name((enum coll_op)op),
                    (unsigned long long)sizes[i], ch, st, 100 * (st - ch) / ch);
            /* latency-bound: within 3 %; bandwidth-bound the streamed ring is at the links' bound, the chunked one
             * pays 7-9 % more in per-step waits (measured 0.91-0.93 of the bound, as the packet engine): at most 10 % */
            ck_assert_msg(st <= ch * 1.03 && st >= ch * 0.90, "%s %llu B: streamed %.2f us vs chunked %.2f us", coll_op_name((enum coll_op)op),
                          (unsigned long long)sizes[i], st, ch);
        }
}
END_TEST

static double alone_ps(const uint32_t *group, uint64_t bytes)
{
    flow_env v = flow_make();
    done_at a = { v.k, 0, 0 };
    ck_assert_int_eq(coll_flow_start(v.e, COLL_ALL_REDUCE, group, 4, bytes, on_done, &a, err, sizeof err), 0);
    sim_run(v.k, SIM_TIME_MAX);
    flow_free(&v);
    return (double)a.ps;
}

START_TEST(test_concurrent_groups)
{
    const uint64_t B = 16u << 20;
    double alone_a = alone_ps(all8, B), alone_b = alone_ps(all8 + 4, B);
    /* GPUs 0..3 and 4..7 at the same time: disjoint links and units, each as alone */
    flow_env v = flow_make();
    done_at a = { v.k, 0, 0 }, b = { v.k, 0, 0 };
    coll_flow_start(v.e, COLL_ALL_REDUCE, all8, 4, B, on_done, &a, err, sizeof err);
    coll_flow_start(v.e, COLL_ALL_REDUCE, all8 + 4, 4, B, on_done, &b, err, sizeof err);
    sim_run(v.k, SIM_TIME_MAX);
    ck_assert_msg(fabs((double)a.ps - alone_a) <= 1e-6 * alone_a && fabs((double)b.ps - alone_b) <= 1e-6 * alone_b,
                  "alone %.0f / %.0f ps, side by side %.0f / %.0f", alone_a, alone_b, (double)a.ps, (double)b.ps);
    flow_free(&v);
    /* two on the same group share its links: about twice as long */
    v = flow_make();
    a.k = b.k = v.k, a.n = b.n = 0;
    coll_flow_start(v.e, COLL_ALL_REDUCE, all8, 4, B, on_done, &a, err, sizeof err);
    coll_flow_start(v.e, COLL_ALL_REDUCE, all8, 4, B, on_done, &b, err, sizeof err);
    sim_run(v.k, SIM_TIME_MAX);
    ck_assert_msg((double)a.ps > 1.8 * alone_a && (double)b.ps < 2.1 * alone_a, "alone %.0f ps, shared %.0f / %.0f", alone_a, (double)a.ps,
                  (double)b.ps);
    flow_free(&v);
}
END_TEST

START_TEST(test_send)
{
    /* 64 MiB from GPU 0 to GPU 1 over 18 NVLinks: 18 x 25 x 128/144 GB/s */
    flow_env v = flow_make();
    done_at d = { v.k, 0, 0 };
    const uint64_t B = 64u << 20;
    ck_assert_int_eq(coll_flow_send(v.e, 0, 1, B, on_done, &d, err, sizeof err), 0);
    sim_run(v.k, SIM_TIME_MAX);
    double want_us = B / (18 * 25.0 * 128 / 144) / 1000.0;
    ck_assert_msg(fabs((double)d.ps / 1e6 - want_us) < 0.02 * want_us, "send %.2f us, goodput predicts %.2f us", (double)d.ps / 1e6,
                  want_us);
    uint32_t twice[2] = { 3, 3 };
    ck_assert_int_eq(coll_flow_start(v.e, COLL_ALL_REDUCE, twice, 2, B, on_done, &d, err, sizeof err), -1);
    flow_free(&v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_flow");
    TCase *tc = tcase_create("flow_level");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_matches_packet_level);
    tcase_add_test(tc, test_streamed_matches_chunked);
    tcase_add_test(tc, test_concurrent_groups);
    tcase_add_test(tc, test_send);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
