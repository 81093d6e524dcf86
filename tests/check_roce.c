/* RoCE v2 over Ethernet (models/network): DCQCN's reaction-point rules by
 * hand; a 2:1 incast through one eth_switch with PFC (nothing lost, each
 * sender paused for the half of the time its share leaves it), without PFC
 * (tail drops, seen by the receiver as sequence gaps), with a headroom too
 * small for the link (the drop is counted, never silent), and with ECN alone
 * (DCQCN holds the queue under Kmax, no pause after the start). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/network/network.h"
#include "check_run.h"

#define MTU 1024u

typedef struct rig {
    sim_kernel *k;
    topo *t;
    sim_fabric *f;
    roce_flow flows[2];
    roce_nic_cfg nc;
    eth_switch_cfg sc;
} rig;

static char err[1024];

/* h0 -> h2 and h1 -> h2 through s0 (a 2:1 incast), every link `link` with latency_ns (<0: the preset's). */
static rig *rig_new(bool pfc, bool ecn, uint32_t headroom_bytes, double latency_ns)
{
    network_register_kinds();
    rig *R = calloc(1, sizeof *R);
    R->k = sim_kernel_new();
    R->t = topo_new("roce-100g", err, sizeof err);
    ck_assert_ptr_nonnull(R->t);
    const char *sp[] = { "ports=3", NULL };
    ck_assert_int_ge(topo_add_node(R->t, "s0", "eth_switch", sp, err, sizeof err), 0);
    for (unsigned h = 0; h < 3; h++) {
        char n[8], e[8];
        snprintf(n, sizeof n, "h%u", h);
        snprintf(e, sizeof e, "s0.p%u", h);
        ck_assert_int_ge(topo_add_node(R->t, n, "roce_nic", NULL, err, sizeof err), 0);
        ck_assert_msg(topo_add_link(R->t, n, e, NULL, latency_ns, -1, err, sizeof err) >= 0, "%s", err);
    }
    ck_assert_msg(topo_finish(R->t, err, sizeof err) == 0, "%s", err);
    for (unsigned i = 0; i < 2; i++)
        R->flows[i] = (roce_flow){ .src = i, .dst = 2, .prio = 3, .payload_bytes = MTU, .bytes = UINT64_MAX };
    R->nc = (roce_nic_cfg){ .flows = R->flows, .n_flows = 2, .dcqcn = ecn, .cnp_prio = 6, .queue_pkts = 2 };
    dcqcn_cfg_default(&R->nc.dc);
    eth_switch_cfg_default(&R->sc);
    R->sc.pfc = pfc;
    R->sc.ecn = ecn;
    R->sc.buffer_bytes = 1u << 20;
    R->sc.headroom_bytes = headroom_bytes;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .seed = 1, .kind_cfg = { { "roce_nic", &R->nc }, { "eth_switch", &R->sc } } };
    R->f = sim_fabric_new(R->k, R->t, &fc, err, sizeof err);
    ck_assert_msg(R->f, "%s", err);
    return R;
}

static void rig_free(rig *R)
{
    sim_fabric_free(R->f);
    topo_free(R->t);
    sim_kernel_free(R->k);
    free(R);
}

static roce_nic *nic(rig *R, unsigned h) { return sim_fabric_component(R->f, 1 + h); }
static eth_switch *sw(rig *R) { return sim_fabric_component(R->f, 0); }

static double paused_us(const eth_port *p)
{
    eth_port_stats st = eth_port_stats_get(p);
    uint64_t ps = 0;
    for (unsigned i = 0; i < ETH_PRIOS; i++) ps += st.paused_ps[i];
    return (double)ps / 1e6;
}

/* Zhu et al. 2015: a cut takes Rc(1 - alpha/2) and remembers Rc as the target;
 * alpha = (1-g)alpha + g; timer events: F fast-recovery halvings towards the
 * target, then additive increase of the target by R_AI. */
START_TEST(dcqcn_reaction_point_rules)
{
    dcqcn_cfg c;
    dcqcn_cfg_default(&c);
    ck_assert_double_eq_tol(c.g, 1.0 / 256, 1e-12);
    dcqcn_rp r;
    dcqcn_rp_init(&r, 100.0);
    dcqcn_rp_cnp(&r, &c, 0);
    ck_assert_double_eq_tol(r.rc_Gbps, 50.0, 1e-9);   /* alpha starts at 1 */
    ck_assert_double_eq_tol(r.rt_Gbps, 100.0, 1e-9);
    ck_assert_double_eq_tol(r.alpha, 1.0, 1e-12);
    dcqcn_rp_cnp(&r, &c, 0);
    ck_assert_double_eq_tol(r.rc_Gbps, 25.0, 1e-9);
    ck_assert_double_eq_tol(r.rt_Gbps, 50.0, 1e-9);
    double rc = 25, rt = 50, alpha = 1;
    for (unsigned i = 1; i <= 8; i++) {   /* 55 us steps without CNP */
        dcqcn_rp_timers(&r, &c, SIM_US(55) * i);
        alpha *= 1 - c.g;
        if (i >= c.fast_recovery_steps) rt += c.rai_Gbps;   /* t_count reached F: additive */
        rc = (rt + rc) / 2;
        ck_assert_double_eq_tol(r.alpha, alpha, 1e-12);
        ck_assert_double_eq_tol(r.rt_Gbps, rt, 1e-9);
        ck_assert_double_eq_tol(r.rc_Gbps, rc, 1e-9);
    }
    /* the byte counter counts too: B bytes are one more increase event */
    dcqcn_rp_sent(&r, &c, (uint32_t)c.byte_counter_bytes);
    ck_assert_uint_eq(r.bc_count, 1);
    rt += c.rai_Gbps;
    rc = (rt + rc) / 2;
    ck_assert_double_eq_tol(r.rc_Gbps, rc, 1e-9);
    /* hyper increase once both counters passed F */
    r.bc_count = c.fast_recovery_steps + 1;
    r.t_count = c.fast_recovery_steps + 1;
    double rt0 = r.rt_Gbps, rc0 = r.rc_Gbps;
    dcqcn_rp_sent(&r, &c, (uint32_t)c.byte_counter_bytes);   /* bc = F+2, t = F+1: i = 1 */
    ck_assert_double_eq_tol(r.rt_Gbps, rt0 + c.rhai_Gbps, 1e-9);
    ck_assert_double_eq_tol(r.rc_Gbps, (rt0 + c.rhai_Gbps + rc0) / 2, 1e-9);
}
END_TEST

/* PFC on, ECN off: a 2:1 incast loses nothing; each sender gets half of the hot
 * port, so its transmitter is paused for about half the time. */
START_TEST(pfc_incast_lossless_and_paused_half)
{
    rig *R = rig_new(true, false, 0, -1);
    sim_fabric_run(R->f, SIM_US(200));
    double p0 = paused_us(roce_nic_port(nic(R, 0))), r0 = (double)roce_nic_stats_get(nic(R, 2))->received_payload_bytes;
    sim_fabric_run(R->f, SIM_US(1200));
    double frac = (paused_us(roce_nic_port(nic(R, 0))) - p0) / 1000.0;
    double got_GBps = ((double)roce_nic_stats_get(nic(R, 2))->received_payload_bytes - r0) / 1e6;
    const topo_preset *pr = topo_preset_find("roce-100g");
    double G = topo_preset_GBps(pr) * MTU / (MTU + pr->overhead_bytes);
    eth_switch_stats st = eth_switch_stats_get(sw(R));
    ck_assert_uint_eq(st.dropped, 0);
    ck_assert_uint_eq(roce_nic_stats_get(nic(R, 2))->lost, 0);
    ck_assert_msg(fabs(frac - 0.5) < 0.1, "h0 paused %.3f of the time; its share leaves it 0.5", frac);
    ck_assert_msg(got_GBps > 0.98 * G, "hot port %.3f GB/s of %.3f", got_GBps, G);
    ck_assert_uint_gt(eth_port_stats_get(eth_switch_port(sw(R), 0)).pause_sent, 0);
    ck_assert_msg(sim_fabric_check(R->f, false, err, sizeof err) == 0, "%s", err);
    uint32_t h;
    ck_assert_uint_le(eth_switch_max_headroom_used(sw(R), &h), h);
    rig_free(R);
}
END_TEST

/* Lossy (PFC off, ECN off): the egress's dynamic threshold tail-drops, the
 * receiver sees every drop as a gap; the hot port stays busy. */
START_TEST(lossy_incast_drops_are_gaps)
{
    rig *R = rig_new(false, false, 0, -1);
    sim_fabric_run(R->f, SIM_US(500));
    eth_switch_stats st = eth_switch_stats_get(sw(R));
    const roce_nic_stats *rx = roce_nic_stats_get(nic(R, 2));
    ck_assert_uint_gt(st.dropped, 0);
    ck_assert_uint_eq(eth_port_stats_get(eth_switch_port(sw(R), 0)).pause_sent, 0);
    /* a drop is a gap once a later packet of its flow arrived: those still in the
     * switch (its buffer) or on the wires (a few) have not yet */
    uint64_t inside = st.shared_used_bytes / (MTU + 82) + 8;
    ck_assert_msg(rx->lost <= st.dropped && rx->lost + inside >= st.dropped, "lost %llu, dropped %llu", (unsigned long long)rx->lost,
                  (unsigned long long)st.dropped);
    ck_assert_uint_le(st.max_shared_used_bytes, R->sc.buffer_bytes);
    ck_assert_msg(sim_fabric_check(R->f, false, err, sizeof err) == 0, "%s", err);
    rig_free(R);
}
END_TEST

/* A headroom smaller than what a long cable holds: packets beyond it are
 * dropped and counted as headroom drops (a configuration error to report). */
START_TEST(short_headroom_is_counted)
{
    rig *R = rig_new(true, false, 4 * (MTU + 82), 5000.0);
    sim_fabric_run(R->f, SIM_US(300));
    eth_switch_stats st = eth_switch_stats_get(sw(R));
    ck_assert_uint_gt(st.headroom_drops, 0);
    ck_assert_uint_eq(st.dropped, st.headroom_drops);
    rig_free(R);
    /* the Mellanox rule covers the same cable */
    R = rig_new(true, false, 0, 5000.0);
    sim_fabric_run(R->f, SIM_US(300));
    ck_assert_uint_eq(eth_switch_stats_get(sw(R)).dropped, 0);
    rig_free(R);
}
END_TEST

/* ECN + DCQCN with PFC on: after the start the queue stays under Kmax and far
 * under XOFF, so no PAUSE is sent once the rates settled; CNPs flowed. */
START_TEST(dcqcn_keeps_queue_under_kmax)
{
    rig *R = rig_new(true, true, 0, -1);
    sim_fabric_run(R->f, SIM_US(1000));
    uint64_t pauses0 = eth_port_stats_get(eth_switch_port(sw(R), 0)).pause_sent;
    double qmax = 0;
    for (unsigned i = 0; i < 2000; i++) {
        sim_fabric_run(R->f, SIM_US(1000) + SIM_NS(500) * (i + 1));
        double q = (double)eth_port_queued_bytes(eth_switch_port(sw(R), 2), 3);
        if (q > qmax) qmax = q;
    }
    ck_assert_msg(qmax <= R->sc.kmax_bytes, "queue reached %.0f B, Kmax %.0f", qmax, R->sc.kmax_bytes);
    ck_assert_uint_eq(eth_port_stats_get(eth_switch_port(sw(R), 0)).pause_sent, pauses0);
    ck_assert_uint_gt(roce_nic_stats_get(nic(R, 2))->cnps_sent, 0);
    ck_assert_uint_gt(roce_nic_flow_rp(nic(R, 0), 0)->cuts, 0);
    ck_assert_msg(sim_fabric_check(R->f, false, err, sizeof err) == 0, "%s", err);
    rig_free(R);
}
END_TEST

/* A ring of five switches, every host sending two hops on: each ring link
 * carries two flows at line rate, so every ring ingress passes XOFF, and with
 * the routes all going one way round the pauses close a cycle; the watchdog
 * sees no progress with packets held and names the cycle of paused ports. */
#define R_N 5   /* two hops on is the short way round: every route goes clockwise */
START_TEST(pfc_ring_deadlock_detected)
{
    network_register_kinds();
    sim_kernel *k = sim_kernel_new();
    topo *t = topo_new("roce-100g", err, sizeof err);
    const char *sp[] = { "ports=3", NULL };
    char a[16], b[16];
    for (unsigned i = 0; i < R_N; i++) {
        snprintf(a, sizeof a, "s%u", i);
        ck_assert_int_ge(topo_add_node(t, a, "eth_switch", sp, err, sizeof err), 0);
    }
    for (unsigned i = 0; i < R_N; i++) {   /* p0: to the next switch, p1: from the previous, p2: the host */
        snprintf(a, sizeof a, "s%u.p0", i);
        snprintf(b, sizeof b, "s%u.p1", (i + 1) % R_N);
        ck_assert_msg(topo_add_link(t, a, b, NULL, -1, -1, err, sizeof err) >= 0, "%s", err);
    }
    for (unsigned i = 0; i < R_N; i++) {
        snprintf(a, sizeof a, "h%u", i);
        snprintf(b, sizeof b, "s%u.p2", i);
        ck_assert_int_ge(topo_add_node(t, a, "roce_nic", NULL, err, sizeof err), 0);
        ck_assert_msg(topo_add_link(t, a, b, NULL, -1, -1, err, sizeof err) >= 0, "%s", err);
    }
    ck_assert_msg(topo_finish(t, err, sizeof err) == 0, "%s", err);
    roce_flow flows[R_N];
    for (unsigned i = 0; i < R_N; i++)
        flows[i] = (roce_flow){ .src = (uint32_t)t->nodes[R_N + i].endpoint, .dst = (uint32_t)t->nodes[R_N + (i + 2) % R_N].endpoint,
                                .prio = 3, .payload_bytes = MTU, .bytes = UINT64_MAX };
    roce_nic_cfg nc = { .flows = flows, .n_flows = R_N, .cnp_prio = 6, .queue_pkts = 2 };
    dcqcn_cfg_default(&nc.dc);
    eth_switch_cfg sc;
    eth_switch_cfg_default(&sc);
    sc.ecn = false;
    sc.buffer_bytes = 1u << 20;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .seed = 1, .allow_route_cycles = true,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", &sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s", err);
    uint64_t last = UINT64_MAX, held = 0;
    int stalled = 0, len = 0;
    char cycle[512] = "";
    for (unsigned w = 1; w <= 200 && !len; w++) {   /* the watchdog: every 20 us */
        sim_fabric_run(f, SIM_US(20) * w);
        uint64_t fwd = eth_fabric_progress(f, &held);
        stalled = fwd == last && held ? stalled + 1 : 0;
        last = fwd;
        if (stalled >= 3) len = eth_pfc_cycle(f, cycle, sizeof cycle);
    }
    ck_assert_msg(len == R_N, "cycle of %d switches: '%s' (held %llu)", len, cycle, (unsigned long long)held);
    ck_assert_ptr_nonnull(strstr(cycle, "s0.p0"));
    ck_assert_msg(sim_fabric_check(f, false, err, sizeof err) == 0, "%s", err);
    sim_fabric_free(f);
    topo_free(t);
    sim_kernel_free(k);
}
END_TEST

START_TEST(bad_config_refused)
{
    eth_switch_cfg c;
    eth_switch_cfg_default(&c);
    c.kmax_bytes = c.kmin_bytes;
    ck_assert_int_ne(eth_switch_cfg_check(&c, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "kmin"));
    dcqcn_cfg d;
    dcqcn_cfg_default(&d);
    d.g = 0;
    ck_assert_int_ne(dcqcn_cfg_check(&d, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "dcqcn_g"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("roce");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, dcqcn_reaction_point_rules);
    tcase_add_test(tc, pfc_incast_lossless_and_paused_half);
    tcase_add_test(tc, lossy_incast_drops_are_gaps);
    tcase_add_test(tc, short_headroom_is_counted);
    tcase_add_test(tc, dcqcn_keeps_queue_under_kmax);
    tcase_add_test(tc, pfc_ring_deadlock_detected);
    tcase_add_test(tc, bad_config_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
