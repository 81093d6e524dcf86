/* The InfiniBand switch and link layer (models/network): two HCAs stream into
 * one through an ib_switch on two VLs. One packet's latency is the sum of its
 * wait for credits, its hops and the pipeline; VL arbitration weights 3:1 give the
 * output's bytes 3:1; a high-priority VL takes the wire; a VL whose consumer
 * is stuck fills its buffers without slowing the other VL (no head-of-line
 * blocking across VLs); nothing is lost and credits stay within the buffers.
 * Bad arbitration and SL->VL strings are refused with a reason. */
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
    ib_flow flows[2];
    ib_hca_cfg hc;
    ib_switch_cfg sc;
} rig;

static char err[1024];

/* h0 -> h2 on SL0 (VL0), h1 -> h2 on SL1 (VL1), through s0; low/high: the switch's tables. */
static rig *rig_new_n(const char *low, const char *high, unsigned limit_of_high, uint8_t stall_mask, uint64_t warmup_pkts,
                      uint64_t pkts0, uint64_t pkts1)
{
    network_register_kinds();
    rig *R = calloc(1, sizeof *R);
    R->k = sim_kernel_new();
    R->t = topo_new("ib-ndr", err, sizeof err);
    ck_assert_ptr_nonnull(R->t);
    const char *sp[] = { "ports=3", NULL };
    ck_assert_int_ge(topo_add_node(R->t, "s0", "ib_switch", sp, err, sizeof err), 0);
    for (unsigned h = 0; h < 3; h++) {
        char n[8], e[8];
        snprintf(n, sizeof n, "h%u", h);
        snprintf(e, sizeof e, "s0.p%u", h);
        ck_assert_int_ge(topo_add_node(R->t, n, "ib_hca", NULL, err, sizeof err), 0);
        ck_assert_msg(topo_add_link(R->t, n, e, NULL, -1, -1, err, sizeof err) >= 0, "%s", err);
    }
    ck_assert_msg(topo_finish(R->t, err, sizeof err) == 0, "%s", err);
    R->flows[0] = (ib_flow){ .src = 0, .dst = 2, .sl = 0, .payload_bytes = MTU, .packets = pkts0 };
    R->flows[1] = (ib_flow){ .src = 1, .dst = 2, .sl = 1, .payload_bytes = MTU, .packets = pkts1 };
    ib_port_cfg_default(&R->hc.port, 2, 65536);
    R->hc.flows = R->flows;
    R->hc.n_flows = 2;
    R->hc.stall_vl_mask = stall_mask;
    R->hc.warmup_pkts = warmup_pkts;
    ib_port_cfg_default(&R->sc.port, 2, 65536);
    R->sc.pipeline_ns = 100;
    ck_assert_msg(ib_arb_parse(low, 2, &R->sc.port.low, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(ib_arb_parse(high, 2, &R->sc.port.high, err, sizeof err) == 0, "%s", err);
    R->sc.port.limit_of_high = limit_of_high;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .kind_cfg = { { "ib_hca", &R->hc }, { "ib_switch", &R->sc } } };
    R->f = sim_fabric_new(R->k, R->t, &fc, err, sizeof err);
    ck_assert_msg(R->f, "%s", err);
    return R;
}

static rig *rig_new(const char *low, const char *high, unsigned limit_of_high, uint8_t stall_mask, uint64_t warmup_pkts)
{
    return rig_new_n(low, high, limit_of_high, stall_mask, warmup_pkts, UINT64_MAX, UINT64_MAX);
}

static void rig_free(rig *R)
{
    sim_fabric_free(R->f);
    topo_free(R->t);
    sim_kernel_free(R->k);
    free(R);
}

static ib_hca *hca(rig *R, unsigned h) { return sim_fabric_component(R->f, (uint32_t)topo_node_find(R->t, h ? (h == 1 ? "h1" : "h2") : "h0")); }
static ib_switch *sw(rig *R) { return sim_fabric_component(R->f, (uint32_t)topo_node_find(R->t, "s0")); }

static void run_checked(rig *R, sim_time_ps until)
{
    sim_fabric_run(R->f, until);
    char why[512] = "";
    ck_assert_msg(sim_fabric_check(R->f, false, why, sizeof why) == 0, "%s", why);
}

/* What the output wire carries of payload at most: line rate x payload share, less FC packets. */
static double rate_goodput(void)
{
    const topo_preset *p = topo_preset_find("ib-ndr");
    return topo_preset_GBps(p) * MTU / (MTU + p->overhead_bytes);
}

static double share0(rig *R)
{
    ib_hca *s = hca(R, 2);
    double b0 = (double)ib_hca_flow_window_bytes(s, 0), b1 = (double)ib_hca_flow_window_bytes(s, 1);
    return b0 / (b0 + b1);
}

START_TEST(weights_share_3_to_1)
{
    /* 1024 B payload = 1050 B = 17 blocks: weight 51 is 3 packets, 17 is 1 */
    rig *R = rig_new("0:51,1:17", "", 255, 0, 500);
    run_checked(R, SIM_US(200));
    double sh = share0(R);
    ck_assert_msg(fabs(sh - 0.75) < 0.01, "VL0 share %.4f, expected 0.75 (weights 51:17 blocks = 3:1 packets)", sh);
    const ib_hca_stats *st = ib_hca_stats_get(hca(R, 2));
    double gp = (double)st->window_payload_bytes / ((double)(st->last_arrival_ps - st->window_start_ps) / 1000.0);
    ck_assert_msg(fabs(gp - rate_goodput()) / rate_goodput() < 0.01, "output goodput %.3f GB/s, line %.3f", gp, rate_goodput());
    /* the switch input buffers never exceed a VL's buffer */
    for (unsigned p = 0; p < 2; p++)
        for (unsigned v = 0; v < 2; v++)
            ck_assert_uint_le(ib_port_stats_get(ib_switch_port(sw(R), p)).max_used_blocks[v], 1024);
    rig_free(R);
}
END_TEST

START_TEST(weights_equal_share_half)
{
    rig *R = rig_new("0:17,1:17", "", 255, 0, 500);
    run_checked(R, SIM_US(200));
    ck_assert_msg(fabs(share0(R) - 0.5) < 0.01, "VL0 share %.4f, expected 0.5", share0(R));
    rig_free(R);
}
END_TEST

START_TEST(high_priority_takes_the_wire)
{
    /* VL1 high, unbounded limit: VL0 (low) gets only what VL1 leaves, which is nothing */
    rig *R = rig_new("0:17", "1:17", 255, 0, 500);
    run_checked(R, SIM_US(200));
    ck_assert_msg(share0(R) < 0.01, "VL0 (low priority) share %.4f with VL1 high priority, unbounded", share0(R));
    rig_free(R);
    /* limit 0: one high packet, then a low one if waiting: 1:1 */
    R = rig_new("0:17", "1:17", 0, 0, 500);
    run_checked(R, SIM_US(200));
    ck_assert_msg(fabs(share0(R) - 0.5) < 0.01, "VL0 share %.4f with limit_of_high 0 (one packet each)", share0(R));
    rig_free(R);
}
END_TEST

START_TEST(full_vl_does_not_block_the_other)
{
    /* the sink never frees VL1: VL1 fills the sink's buffer, then the switch's
     * input buffer from h1, then h1 stops; VL0 must get the whole output */
    rig *R = rig_new("0:17,1:17", "", 255, 0x2, 2000);
    run_checked(R, SIM_US(200));
    ib_hca *s = hca(R, 2);
    const ib_hca_stats *st = ib_hca_stats_get(s);
    double win_ns = (double)(st->last_arrival_ps - st->window_start_ps) / 1000.0;
    double gp0 = (double)ib_hca_flow_window_bytes(s, 0) / win_ns;
    ck_assert_msg(gp0 > 0.99 * rate_goodput(), "VL0 goodput %.3f GB/s with VL1 stuck, line %.3f", gp0, rate_goodput());
    ck_assert_uint_eq(ib_hca_flow_window_bytes(s, 1), 0);
    /* VL1: exactly the sink's buffer of packets held there (64 KB / 17 blocks = 60), the switch's input VL1 full too */
    ck_assert_uint_eq(ib_hca_flow_received(s, 1), 1024 / 17);
    ck_assert_uint_eq(st->held, 1024 / 17);
    const ib_port *in1 = ib_switch_port(sw(R), 1);
    ck_assert_uint_ge(ib_port_used_blocks(in1, 1), 1024 - 16);
    ck_assert_uint_eq(ib_port_used_blocks(in1, 0), 0);
    /* h1 is stalled on credits for most of the run, h0 hardly */
    ck_assert_uint_gt(ib_port_stats_get(ib_hca_port(hca(R, 1))).credit_stall_ps, SIM_US(150));
    rig_free(R);
}
END_TEST

START_TEST(zero_load_latency_through_switch)
{
    /* one packet h0 -> h2: it waits for the switch's initial FC packet (8 B + latency), then
     * two hops of serialisation + latency and the pipeline (store and forward) */
    rig *R = rig_new_n("0:17,1:17", "", 255, 0, 0, 1, 0);
    run_checked(R, SIM_US(20));
    const topo_preset *p = topo_preset_find("ib-ndr");
    double GBps = topo_preset_GBps(p), lat_ns = p->latency_ns;
    double expect_ns = IB_FC_WIRE_BYTES / GBps + lat_ns + 2 * ((MTU + p->overhead_bytes) / GBps + lat_ns) + R->sc.pipeline_ns;
    const ib_hca_stats *st = ib_hca_stats_get(hca(R, 2));
    ck_assert_uint_eq(st->received, 1);
    double got_ns = (double)st->last_arrival_ps / 1000.0;
    ck_assert_msg(fabs(got_ns - expect_ns) < 0.01, "arrival at %.3f ns, expected %.3f", got_ns, expect_ns);
    char why[512] = "";
    ck_assert_msg(sim_fabric_check(R->f, true, why, sizeof why) == 0, "%s", why);   /* 20 us: no periodic FC packet in flight */
    rig_free(R);
}
END_TEST

/* 2 leaves x 2 HCAs, 2 spines, all IB: every HCA sends to every other (the
 * leaf uplinks carry two flows each way, ECMP by flow); small buffers keep
 * every hop credit-limited. Everything arrives once and in order, and at
 * the end every buffer is empty, every credit back and every wire quiet. */
START_TEST(leafspine_all_to_all_lossless)
{
    network_register_kinds();
    sim_kernel *k = sim_kernel_new();
    topo *t = topo_new("ib-hdr", err, sizeof err);
    const char *sp[] = { "ports=4", NULL };
    for (unsigned i = 0; i < 4; i++) {
        char n[8];
        snprintf(n, sizeof n, "h%u", i);
        ck_assert_int_ge(topo_add_node(t, n, "ib_hca", NULL, err, sizeof err), 0);
    }
    ck_assert_int_ge(topo_add_node(t, "leaf0", "ib_switch", sp, err, sizeof err), 0);
    ck_assert_int_ge(topo_add_node(t, "leaf1", "ib_switch", sp, err, sizeof err), 0);
    ck_assert_int_ge(topo_add_node(t, "spine0", "ib_switch", sp, err, sizeof err), 0);
    ck_assert_int_ge(topo_add_node(t, "spine1", "ib_switch", sp, err, sizeof err), 0);
    const char *links[][2] = { { "h0", "leaf0" }, { "h1", "leaf0" }, { "h2", "leaf1" }, { "h3", "leaf1" }, { "leaf0", "spine0" },
                               { "leaf0", "spine1" }, { "leaf1", "spine0" }, { "leaf1", "spine1" } };
    for (unsigned i = 0; i < 8; i++) ck_assert_msg(topo_add_link(t, links[i][0], links[i][1], NULL, 50, -1, err, sizeof err) >= 0, "%s", err);
    ck_assert_msg(topo_finish(t, err, sizeof err) == 0, "%s", err);
    ib_flow flows[12];
    unsigned nf = 0;
    for (uint32_t a = 0; a < 4; a++)
        for (uint32_t b = 0; b < 4; b++)
            if (a != b) flows[nf++] = (ib_flow){ .src = a, .dst = b, .sl = (uint8_t)(nf % 4), .payload_bytes = 2048, .packets = 300 };
    ib_hca_cfg hc = { .flows = flows, .n_flows = nf, .queue_pkts = 4 };
    ib_port_cfg_default(&hc.port, 4, 8192);
    ib_switch_cfg sc = { .pipeline_ns = 100 };
    ib_port_cfg_default(&sc.port, 4, 4400);   /* two 2 KB packets per VL */
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .kind_cfg = { { "ib_hca", &hc }, { "ib_switch", &sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s", err);
    uint64_t want = 300ull * nf, got = 0;
    for (unsigned step = 0; step < 2000 && got < want; step++) {
        sim_fabric_run(f, sim_now(k) + SIM_US(5));
        got = 0;
        for (unsigned e = 0; e < 4; e++) got += ib_hca_stats_get(sim_fabric_component(f, t->endpoint_node[e]))->received;
    }
    ck_assert_uint_eq(got, want);
    for (unsigned e = 0; e < 4; e++) {
        ib_hca *h = sim_fabric_component(f, t->endpoint_node[e]);
        ck_assert_uint_eq(ib_hca_stats_get(h)->out_of_order, 0);
        for (unsigned i = 0; i < nf; i++)
            if (flows[i].dst == e) ck_assert_uint_eq(ib_hca_flow_received(h, i), 300);
    }
    /* let the last FC packets land: then nothing is in flight anywhere */
    for (unsigned step = 0; step < 1000; step++) {
        uint64_t in_flight = 0;
        for (uint32_t l = 0; l < t->n_links; l++) in_flight += sim_link_in_flight(sim_fabric_link(f, l, 0)) + sim_link_in_flight(sim_fabric_link(f, l, 1));
        if (!in_flight) break;
        sim_fabric_run(f, sim_now(k) + SIM_NS(10));
    }
    char why[512] = "";
    ck_assert_msg(sim_fabric_check(f, true, why, sizeof why) == 0, "%s", why);
    /* every port has all its credits back: what its peer advertises is the whole buffer (at most 2048 blocks) */
    for (uint32_t n = 0; n < t->n_nodes; n++)
        for (unsigned q = 0; q < t->nodes[n].nports; q++) {
            if (t->nodes[n].port_link[q] < 0) continue;
            unsigned pp;
            int peer = topo_peer(t, n, q, &pp);
            const ib_port *me = t->nodes[n].kind->forwards ? ib_switch_port(sim_fabric_component(f, n), q)
                                                          : ib_hca_port(sim_fabric_component(f, n));
            uint32_t peer_buf = t->nodes[peer].kind->forwards ? sc.port.vl_buffer_bytes : hc.port.vl_buffer_bytes;
            for (unsigned v = 0; v < 4; v++) ck_assert_uint_eq(ib_port_credits(me, v), ib_adv_blocks(peer_buf));
        }
    sim_fabric_free(f);
    topo_free(t);
    sim_kernel_free(k);
}
END_TEST

START_TEST(bad_tables_refused)
{
    ib_arb_table t;
    uint8_t m[IB_SLS];
    ck_assert_int_eq(ib_arb_parse("0:3,2:1", 2, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "VL 2"));
    ck_assert_int_eq(ib_arb_parse("0:300", 2, &t, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "weight 300"));
    ck_assert_int_eq(ib_arb_parse("0-3", 2, &t, err, sizeof err), -1);
    ck_assert_int_eq(ib_sl2vl_parse("0,1,4", 4, m, err, sizeof err), -1);
    ck_assert_int_eq(ib_sl2vl_parse("0,1", 2, m, err, sizeof err), 0);
    ck_assert_uint_eq(m[15], 1);
    ib_port_cfg c;
    ib_port_cfg_default(&c, 2, 65536);
    ck_assert_int_eq(ib_arb_parse("0:10", 2, &c.low, err, sizeof err), 0);
    ck_assert_int_eq(ib_port_cfg_check(&c, err, sizeof err), -1);   /* SL1 -> VL1 has no weight */
    ck_assert_ptr_nonnull(strstr(err, "VL 1"));
}
END_TEST

/* The generators give their nodes the network kinds of the link preset's family once those kinds are registered
 * (sim/topo_gen.c); kinds=generic keeps endpoint/switch, kinds=network insists, other presets stay generic. */
static void expect_kinds(const char *spec, const char *preset, const char *ep, const char *sw)
{
    topo *t = topo_from_string(spec, preset, err, sizeof err);
    ck_assert_msg(t != NULL, "%s on %s: %s", spec, preset, err);
    for (uint32_t i = 0; i < t->n_nodes; i++)
        ck_assert_str_eq(t->nodes[i].kind->name, t->nodes[i].endpoint >= 0 ? ep : sw);
    topo_free(t);
}

START_TEST(generators_take_network_kinds)
{
    network_register_kinds();   /* (unregistered, auto stays generic: fabric_traffic on ib-ndr shows it) */
    expect_kinds("leafspine:2,2,2", "ib-ndr", "ib_rnic", "ib_switch");
    expect_kinds("fattree:4", "ib-hdr", "ib_rnic", "ib_switch");
    expect_kinds("star:4", "roce-400g", "roce_nic", "eth_switch");
    expect_kinds("ring:4", "eth-100g", "roce_nic", "eth_switch");
    expect_kinds("leafspine:2,2,2,kinds=generic", "roce-400g", "endpoint", "switch");
    expect_kinds("torus2d:3x3,kinds=network", "ib-xdr", "ib_rnic", "ib_switch");
    expect_kinds("star:4", "nvlink4", "endpoint", "switch");   /* no network kinds for NVLink */
    ck_assert_ptr_null(topo_from_string("star:4,kinds=network", "nvlink4", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "no network kinds"));
    ck_assert_ptr_null(topo_from_string("star:4,kinds=other", "ib-ndr", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "allowed: auto, generic, network"));
    ck_assert_ptr_null(topo_from_string("star:kinds=network", "ib-ndr", err, sizeof err));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ib");
    TCase *tc = tcase_create("switch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, weights_share_3_to_1);
    tcase_add_test(tc, weights_equal_share_half);
    tcase_add_test(tc, high_priority_takes_the_wire);
    tcase_add_test(tc, full_vl_does_not_block_the_other);
    tcase_add_test(tc, zero_load_latency_through_switch);
    tcase_add_test(tc, leafspine_all_to_all_lossless);
    tcase_add_test(tc, bad_tables_refused);
    tcase_add_test(tc, generators_take_network_kinds);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
