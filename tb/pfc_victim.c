/* pfc_victim: congestion spreading by PFC (models/network, docs/models/network.md).
 * Two eth_switches: leaf0 holds h0 and the victim's sender v, leaf1 holds
 * h1..h(N-1), the hot receiver r and the victim's receiver vr; one uplink
 * joins them. N senders h0..h(N-1) send without end to r (incast), v sends
 * without end to vr: the victim never touches r's port, but shares leaf0's
 * uplink (its egress FIFO and the PFC pause of it) with h0.
 * Run twice, both with PFC: ecn=0 (PFC alone) and ecn=1 (RED marking and
 * DCQCN at the NICs).
 * Predictions (configuration only), with G the payload goodput of a link:
 *   fair (max-min): every incast sender G/N; the victim the rest of the
 *   uplink, G (N-1)/N.
 *   ecn=0: r's port is oversubscribed N:1, its ingress queues pass XOFF and
 *   leaf1 pauses the uplink; leaf0's uplink FIFO then fills and leaf0 pauses
 *   h0 and v alike. The uplink carries h0 and v in equal parts and h0 drains
 *   at G/N, so the victim gets about G/N: victim_share = 1/(N-1).
 *   ecn=1: DCQCN cuts the incast flows to about G/N before the queue reaches
 *   XOFF (Kmax << XOFF), so the uplink is not paused after the start and the
 *   victim gets about its fair rate (victim_share >= 0.85).
 * Metrics: victim_GBps and victim_share per mode ("pfc1_ecn0", "pfc1_ecn1"),
 * the pause-time map pause_us (per port: time its transmitter was paused,
 * PAUSE frames it sent, in the measurement window) per mode, h0_GBps and
 * h1_GBps (an incast sender behind the uplink, one on the hot switch), drops. */
#include "tb/roce_common.h"

#include <cjson/cJSON.h>

#define MAX_SENDERS 16

static const sim_param_def pfc_victim_params[] = {
    ROCE_COMMON_PARAMS,
    SIM_PARAM_INT("senders", "4", "", 3, MAX_SENDERS, "incast senders N (h0 on leaf0, h1.. on leaf1)"),
    SIM_PARAM_DOUBLE("duration_us", "40000", "us", 100, 1e6, "simulated time per mode"),
    SIM_PARAM_DOUBLE("warmup_us", "30000", "us", 0, 1e6, "rates are measured after this (DCQCN recovers from the start's over-cut by additive increase: tens of ms)"),
    SIM_PARAM_INT("buffer_bytes", "4194304", "B", 16384, 1000000000, "shared buffer of each switch"),
    SIM_PARAM_END,
};

/* ECN-mode band: DCQCN keeps the victim at its fair rate but for its sawtooth
 * and the start's transient; PFC-mode band around 1/(N-1): the equal mix of
 * h0 and v on the paused uplink is a mean (which of them fills the FIFO when
 * a pause ends varies). */
#define ECN_SHARE_MIN 0.85
#define PFC_SHARE_TOL 0.35

typedef struct mode_result {
    double victim_GBps, victim_share, incast_GBps, h0_GBps, h1_GBps;
    uint64_t drops, headroom_drops, lost, pauses_sent, cnps;
    uint64_t max_headroom, headroom;
    cJSON *pause_map;
    bool conserved;
    char why[400];
} mode_result;

static uint64_t total_time_ps, total_events;

static void run_mode(sim_kernel *k_in, sim_trace *tr, uint64_t seed, const char *link, unsigned mtu, unsigned n,
                     double duration_us, double warmup_us, const eth_switch_cfg *sc_in, const roce_nic_cfg *nc_in, mode_result *m)
{
    char err[512], name[32], end[48];
    topo *t = topo_new(link, err, sizeof err);
    int ok = t && topo_add_node(t, "leaf0", "eth_switch", (const char *const[]){ "ports=3", NULL }, err, sizeof err) >= 0 &&
             topo_add_node(t, "leaf1", "eth_switch", (const char *const[]){ "ports=20", NULL }, err, sizeof err) >= 0 &&
             topo_add_link(t, "leaf0.p2", "leaf1.p0", link, -1, -1, err, sizeof err) >= 0;
    for (unsigned i = 0; ok && i < n; i++) {   /* h0 on leaf0.p0, h_i on leaf1.p_i */
        snprintf(name, sizeof name, "h%u", i);
        if (i == 0) snprintf(end, sizeof end, "leaf0.p0");
        else snprintf(end, sizeof end, "leaf1.p%u", i);
        ok = topo_add_node(t, name, "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, name, end, link, -1, -1, err, sizeof err) >= 0;
    }
    ok = ok && topo_add_node(t, "v", "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, "v", "leaf0.p1", link, -1, -1, err, sizeof err) >= 0 &&
         topo_add_node(t, "r", "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, "r", "leaf1.p18", link, -1, -1, err, sizeof err) >= 0 &&
         topo_add_node(t, "vr", "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, "vr", "leaf1.p19", link, -1, -1, err, sizeof err) >= 0 &&
         topo_finish(t, err, sizeof err) == 0;
    if (!ok) sim_fatal("pfc_victim: topology: %s", err);
    /* nodes: leaf0, leaf1, h0..h(n-1), v, r, vr */
    uint32_t v_node = 2 + n, r_node = 3 + n, vr_node = 4 + n;
    roce_flow flows[MAX_SENDERS + 1];
    for (unsigned i = 0; i < n; i++)
        flows[i] = (roce_flow){ .src = (uint32_t)t->nodes[2 + i].endpoint, .dst = (uint32_t)t->nodes[r_node].endpoint, .prio = 3,
                                .payload_bytes = mtu, .bytes = UINT64_MAX };
    flows[n] = (roce_flow){ .src = (uint32_t)t->nodes[v_node].endpoint, .dst = (uint32_t)t->nodes[vr_node].endpoint, .prio = 3,
                            .payload_bytes = mtu, .bytes = UINT64_MAX };
    roce_nic_cfg nc = *nc_in;
    nc.flows = flows;
    nc.n_flows = n + 1;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = tr, .seed = seed,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", sc_in } } };
    sim_kernel *k = k_in ? k_in : sim_kernel_new();
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("pfc_victim: %s", err);
    roce_nic *r = sim_fabric_component(f, r_node), *vr = sim_fabric_component(f, vr_node);
    sim_fabric_run(f, (sim_time_ps)(warmup_us * 1e6));
    sim_fabric_reset_stats(f);   /* the pause-time map and frame counts: the measurement window */
    uint64_t v0 = roce_nic_flow_rx_bytes(vr, n), r0 = roce_nic_stats_get(r)->received_payload_bytes;
    uint64_t h00 = roce_nic_flow_rx_bytes(r, 0), h10 = roce_nic_flow_rx_bytes(r, 1);
    sim_fabric_run(f, (sim_time_ps)(duration_us * 1e6));
    double win_ns = (duration_us - warmup_us) * 1000.0;
    m->victim_GBps = (double)(roce_nic_flow_rx_bytes(vr, n) - v0) / win_ns;
    m->incast_GBps = (double)(roce_nic_stats_get(r)->received_payload_bytes - r0) / win_ns;
    m->h0_GBps = (double)(roce_nic_flow_rx_bytes(r, 0) - h00) / win_ns;   /* the incast sender behind the uplink */
    m->h1_GBps = (double)(roce_nic_flow_rx_bytes(r, 1) - h10) / win_ns;   /* one on the hot switch */
    m->pause_map = cJSON_CreateArray();
    m->drops = m->headroom_drops = m->pauses_sent = 0;
    m->max_headroom = 0;
    m->headroom = UINT32_MAX;
    for (uint32_t s = 0; s < 2; s++) {
        eth_switch *sw = sim_fabric_component(f, s);
        eth_switch_stats ss = eth_switch_stats_get(sw);
        m->drops += ss.dropped;
        m->headroom_drops += ss.headroom_drops;
        uint32_t h;
        uint64_t mh = eth_switch_max_headroom_used(sw, &h);
        if (mh > m->max_headroom) m->max_headroom = mh;
        if (h < m->headroom) m->headroom = h;
        for (unsigned q = 0; q < TOPO_MAX_PORTS; q++) {
            const eth_port *p = eth_switch_port(sw, q);
            if (!p) continue;
            roce_pause_row(m->pause_map, t->nodes[s].name, p, "pause_us");
            m->pauses_sent += eth_port_stats_get(p).pause_sent;
        }
    }
    m->lost = m->cnps = 0;
    for (uint32_t i = 2; i < t->n_nodes; i++) {
        roce_nic *nic = sim_fabric_component(f, i);
        roce_pause_row(m->pause_map, t->nodes[i].name, roce_nic_port(nic), "pause_us");
        m->lost += roce_nic_stats_get(nic)->lost;
        m->cnps += roce_nic_stats_get(nic)->cnps_sent;
    }
    char why[380] = "";
    m->conserved = sim_fabric_check(f, false, why, sizeof why) == 0;
    snprintf(m->why, sizeof m->why, "%s", m->conserved ? "packets and buffer accounts consistent in every component" : why);
    total_time_ps += sim_now(k);
    total_events += sim_event_count(k);
    sim_fabric_free(f);
    topo_free(t);
    if (!k_in) sim_kernel_free(k);
}

static void pfc_victim_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *link = sim_param_str(p, "link");
    unsigned mtu = (unsigned)sim_param_int(p, "mtu"), n = (unsigned)sim_param_int(p, "senders");
    double duration_us = sim_param_double(p, "duration_us"), warmup_us = sim_param_double(p, "warmup_us");
    eth_switch_cfg sc;
    roce_switch_cfg_read(p, &sc);
    sc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
    sc.pfc = true;
    roce_nic_cfg nc = { .cnp_prio = 6, .queue_pkts = 2 };
    roce_dcqcn_cfg_read(p, &nc.dc);
    if (warmup_us >= duration_us) sim_input_error("pfc_victim: warmup_us=%g; allowed < duration_us (%g)", warmup_us, duration_us);
    if (sc.kmax_bytes <= sc.kmin_bytes)
        sim_input_error("pfc_victim: kmin_bytes=%g kmax_bytes=%g; allowed kmin_bytes < kmax_bytes", sc.kmin_bytes, sc.kmax_bytes);
    sim_test_configured(c);

    network_register_kinds();
    const topo_preset *pr = topo_preset_find(link);
    double G = roce_goodput_GBps(pr, mtu), fair = G * (n - 1) / n, pfc_pred_share = 1.0 / (n - 1);
    static const char *const mode_names[2] = { "pfc1_ecn0", "pfc1_ecn1" };
    mode_result m[2];
    for (unsigned e = 0; e < 2; e++) {
        eth_switch_cfg s = sc;
        s.ecn = e == 1;
        nc.dcqcn = e == 1;
        bool traced = e == 0;   /* waves/pfc_victim.fst: the PFC-only run (pauses spreading) */
        run_mode(traced ? c->k : NULL, traced ? c->trace : NULL, c->seed, link, mtu, n, duration_us, warmup_us, &s, &nc, &m[e]);
        m[e].victim_share = m[e].victim_GBps / fair;
        sim_progress(c, (e + 1) / 2.0, "mode %s", mode_names[e]);
    }
    sim_report *rep = c->report;
    cJSON *vg = cJSON_CreateObject(), *vs = cJSON_CreateObject(), *ig = cJSON_CreateObject(), *pm = cJSON_CreateObject(),
          *pf = cJSON_CreateObject(), *cn = cJSON_CreateObject(), *h0 = cJSON_CreateObject(), *h1 = cJSON_CreateObject();
    for (unsigned e = 0; e < 2; e++) {
        cJSON_AddNumberToObject(vg, mode_names[e], m[e].victim_GBps);
        cJSON_AddNumberToObject(vs, mode_names[e], m[e].victim_share);
        cJSON_AddNumberToObject(ig, mode_names[e], m[e].incast_GBps);
        cJSON_AddNumberToObject(h0, mode_names[e], m[e].h0_GBps);
        cJSON_AddNumberToObject(h1, mode_names[e], m[e].h1_GBps);
        cJSON_AddNumberToObject(pf, mode_names[e], (double)m[e].pauses_sent);
        cJSON_AddNumberToObject(cn, mode_names[e], (double)m[e].cnps);
        cJSON_AddItemToObject(pm, mode_names[e], m[e].pause_map);
    }
    sim_report_metric_json(rep, "victim_GBps", vg);
    sim_report_metric_json(rep, "victim_share", vs);
    sim_report_metric_json(rep, "incast_GBps", ig);
    sim_report_metric_json(rep, "h0_GBps", h0);
    sim_report_metric_json(rep, "h1_GBps", h1);
    sim_report_metric_json(rep, "pause_frames", pf);
    sim_report_metric_json(rep, "cnps", cn);
    sim_report_metric(rep, "victim_fair_GBps", fair);
    sim_report_metric(rep, "predicted_share_pfc_only", pfc_pred_share);
    sim_report_metric(rep, "link_goodput_GBps", G);
    sim_report_metric(rep, "drops", (double)(m[0].drops + m[1].drops));
    sim_report_metric_json(rep, "pause_us", pm);

    for (unsigned e = 0; e < 2; e++) {
        char nm[64];
        snprintf(nm, sizeof nm, "conservation_%s", mode_names[e]);
        sim_check(rep, nm, m[e].conserved, "%s", m[e].why);
        snprintf(nm, sizeof nm, "lossless_%s", mode_names[e]);
        sim_check(rep, nm, m[e].drops == 0 && m[e].lost == 0, "PFC on: %llu dropped (%llu for want of headroom: max use %llu B of %llu B), %llu lost",
                  (unsigned long long)m[e].drops, (unsigned long long)m[e].headroom_drops, (unsigned long long)m[e].max_headroom,
                  (unsigned long long)m[e].headroom, (unsigned long long)m[e].lost);
    }
    double s0 = m[0].victim_share, s1 = m[1].victim_share;
    sim_check(rep, "pfc_spreads_to_victim", s0 < 0.6 && fabs(s0 - pfc_pred_share) <= PFC_SHARE_TOL * pfc_pred_share,
              "ecn=0: victim share %.3f, predicted 1/(N-1) = %.3f (+-%.0f%%), and well below its fair rate (< 0.6)", s0,
              pfc_pred_share, PFC_SHARE_TOL * 100);
    sim_check(rep, "ecn_recovers_victim", s1 >= ECN_SHARE_MIN, "ecn=1: victim share %.3f (limit >= %.2f)", s1, ECN_SHARE_MIN);
    sim_check(rep, "incast_uses_hot_port", m[0].incast_GBps >= 0.9 * G && m[1].incast_GBps >= 0.85 * G,
              "incast goodput %.3f / %.3f GB/s of %.3f (>= 90%% PFC only, >= 85%% with DCQCN)", m[0].incast_GBps, m[1].incast_GBps, G);
    c->sim_time_ps = total_time_ps;
    c->sim_events = total_events;
}

SIM_TEST(pfc_victim, "PFC congestion spreading: a victim flow sharing an uplink with an incast, PFC alone vs PFC + ECN/DCQCN",
         pfc_victim_params, "", pfc_victim_run)
