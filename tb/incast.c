/* incast: N senders each write flow_bytes to one receiver through one
 * Ethernet switch, RDMA RC over RoCE v2 (models/network: roce_nic with RC
 * queue pairs, eth_switch), in the mode the parameters pick: PFC on or off
 * (lossy: tail drop, and RC's go-back-N and timeouts recover), ECN with DCQCN
 * at the NICs on or off. Every message must arrive exactly once in every mode.
 * Prediction (configuration only): the receiver's port is the bottleneck, so
 * with PFC and without ECN the last byte is in after total bytes / its payload
 * goodput plus one path's latency (within 10 %), and no faster in any mode. */
#include "tb/roce_common.h"

#include <cjson/cJSON.h>

#define MAX_SENDERS 64

static const sim_param_def incast_params[] = {
    ROCE_COMMON_PARAMS,
    SIM_PARAM_ENUM("transport", "roce", "roce|ib|tcp", "roce: RDMA RC over RoCE v2 (ib and tcp incast are not modelled yet: refused)"),
    SIM_PARAM_INT("senders", "8", "", 2, MAX_SENDERS, "incast senders N"),
    SIM_PARAM_BOOL("pfc", "1", "PFC on the switch (0: lossy, tail drop)"),
    SIM_PARAM_BOOL("ecn", "1", "RED/ECN marking at the switch and DCQCN at the NICs"),
    SIM_PARAM_INT("flow_bytes", "1048576", "B", 1, 1 << 30, "bytes each sender writes (one RC WRITE)"),
    SIM_PARAM_INT("buffer_bytes", "1048576", "B", 16384, 1000000000, "shared buffer of the switch"),
    SIM_PARAM_DOUBLE("rto_us", "100", "us", 1, 1e6, "RC retransmission timeout"),
    SIM_PARAM_INT("window_pkts", "256", "", 1, 65536, "RC: PSNs outstanding at most per QP"),
    SIM_PARAM_END,
};

static void incast_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    if (sim_param_enum(p, "transport") != 0)
        sim_input_error("incast: transport=%s is not modelled yet (an IB incast needs RC on ib_rnic flows, TCP an Ethernet NIC "
                        "carrying it); allowed now: transport=roce", sim_param_str(p, "transport"));
    const char *link = sim_param_str(p, "link");
    const unsigned mtu = (unsigned)sim_param_int(p, "mtu"), n = (unsigned)sim_param_int(p, "senders");
    const bool pfc = sim_param_bool(p, "pfc"), ecn = sim_param_bool(p, "ecn");
    const uint64_t flow_bytes = (uint64_t)sim_param_int(p, "flow_bytes");
    eth_switch_cfg sc;
    roce_switch_cfg_read(p, &sc);
    sc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
    sc.pfc = pfc;
    sc.ecn = ecn;
    roce_nic_cfg nc = { .cnp_prio = 6, .queue_pkts = 2, .dcqcn = ecn, .rc = true, .rcc = RC_CFG_DEFAULT };
    roce_dcqcn_cfg_read(p, &nc.dc);
    nc.rcc.rto_ps = (sim_time_ps)(sim_param_double(p, "rto_us") * 1e6 + 0.5);
    nc.rcc.window_pkts = (uint32_t)sim_param_int(p, "window_pkts");
    if (!ecn) roce_ecn_params_not_applicable(p, "ecn=0: no marking, no DCQCN");
    if (!pfc) roce_pfc_params_not_applicable(p, "pfc=0: lossy, no PAUSE frames");
    if (ecn && sc.kmax_bytes <= sc.kmin_bytes)
        sim_input_error("incast: kmin_bytes=%g kmax_bytes=%g; allowed kmin_bytes < kmax_bytes", sc.kmin_bytes, sc.kmax_bytes);
    sim_test_configured(c);

    network_register_kinds();
    char err[512], name[32], end[32], ports[24];
    snprintf(ports, sizeof ports, "ports=%u", n + 1);
    topo *t = topo_new(link, err, sizeof err);
    int ok = t && topo_add_node(t, "sw0", "eth_switch", (const char *const[]){ ports, NULL }, err, sizeof err) >= 0;
    for (unsigned i = 0; ok && i <= n; i++) {   /* h0..h(n-1) senders on sw0.p0.., r on the last port */
        if (i < n) snprintf(name, sizeof name, "h%u", i);
        else snprintf(name, sizeof name, "r");
        snprintf(end, sizeof end, "sw0.p%u", i);
        ok = topo_add_node(t, name, "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, name, end, link, -1, -1, err, sizeof err) >= 0;
    }
    if (!ok || topo_finish(t, err, sizeof err)) sim_fatal("incast: topology: %s", err);
    const uint32_t r_node = 1 + n, r_ep = (uint32_t)t->nodes[r_node].endpoint;
    roce_flow flows[MAX_SENDERS];
    for (unsigned i = 0; i < n; i++)
        flows[i] = (roce_flow){ .src = (uint32_t)t->nodes[1 + i].endpoint, .dst = r_ep, .prio = 3, .payload_bytes = mtu, .bytes = flow_bytes };
    nc.flows = flows;
    nc.n_flows = n;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", &sc } } };
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("incast: %s", err);
    const roce_nic *r = sim_fabric_component(f, r_node);

    /* until every flow's last byte is in and acknowledged (or a bound far beyond the prediction) */
    const topo_preset *pr = topo_preset_find(link);
    const double G = roce_goodput_GBps(pr, mtu), ideal_ns = (double)flow_bytes * n / G;
    const sim_time_ps bound = (sim_time_ps)(ideal_ns * 1000.0 * 200) + SIM_US(100000);
    sim_time_ps step = (sim_time_ps)(ideal_ns * 1000.0 / 20) + SIM_US(1);
    unsigned done = 0;
    while (sim_now(c->k) < bound) {
        done = 0;
        bool idle = true;
        for (unsigned i = 0; i < n; i++) {
            done += roce_nic_flow_done_ps(r, i) != 0;
            idle = idle && rc_idle(roce_nic_flow_qp(sim_fabric_component(f, 1 + i), i));
        }
        if (done == n && idle) break;
        sim_fabric_run(f, sim_now(c->k) + step);
        sim_progress(c, (double)done / n, "%u of %u flows in, %.1f us", done, n, (double)sim_now(c->k) / 1e6);
    }
    sim_fabric_run(f, sim_now(c->k) + SIM_US(5));   /* the last ACKs and XONs */

    sim_time_ps last_ps = 0;
    double gput[MAX_SENDERS];
    uint64_t retx_bytes = 0, cnps = 0, responder_done = 0, requester_done = 0, failed = 0;
    for (unsigned i = 0; i < n; i++) {
        sim_time_ps d = roce_nic_flow_done_ps(r, i);
        if (d > last_ps) last_ps = d;
        double start_ns = flows[i].start_us * 1000.0;
        gput[i] = d ? (double)flow_bytes / ((double)d / 1000.0 - start_ns) : 0;
        const roce_nic *h = sim_fabric_component(f, 1 + i);
        const rc_stats *qs = rc_stats_get(roce_nic_flow_qp(h, i)), *qr = rc_stats_get(roce_nic_flow_qp(r, i));
        retx_bytes += qs->retransmitted_bytes;
        requester_done += qs->completed;
        responder_done += qr->responder_completed;
        failed += rc_failed(roce_nic_flow_qp(h, i));
        cnps += roce_nic_stats_get(r)->cnps_sent * (i == 0);
    }
    eth_switch *sw = sim_fabric_component(f, 0);
    eth_switch_stats ss = eth_switch_stats_get(sw);
    cJSON *map = cJSON_CreateArray();
    uint64_t pauses = 0;
    for (unsigned q = 0; q <= n; q++) {
        const eth_port *ep = eth_switch_port(sw, q);
        if (!ep) continue;
        roce_pause_row(map, "sw0", ep, "paused_us");
        pauses += eth_port_stats_get(ep).pause_sent;
    }
    for (uint32_t i = 1; i < t->n_nodes; i++) roce_pause_row(map, t->nodes[i].name, roce_nic_port(sim_fabric_component(f, i)), "paused_us");
    char why[400] = "";
    bool conserved = sim_fabric_check(f, true, why, sizeof why) == 0;
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);

    const double completion_ns = (double)last_ps / 1000.0, goodput = completion_ns > 0 ? (double)flow_bytes * n / completion_ns : 0;
    const double path_ns = 2 * t->links[0].latency_ns + sc.pipeline_ns + 2.0 * (mtu + pr->overhead_bytes) / topo_preset_GBps(pr);
    sim_report *rep = c->report;
    sim_report_metric(rep, "goodput_GBps", goodput);
    sim_report_metric(rep, "completion_us", completion_ns / 1000.0);
    sim_report_metric(rep, "fairness", roce_jain(gput, n));
    sim_report_metric(rep, "drops", (double)ss.dropped);
    sim_report_metric(rep, "retransmitted_bytes", (double)retx_bytes);
    sim_report_metric(rep, "pause_frames", (double)pauses);
    sim_report_metric_json(rep, "paused_us", map);
    sim_report_metric(rep, "max_queue_bytes", (double)ss.max_shared_used_bytes);
    sim_report_metric(rep, "cnps", (double)cnps);
    sim_report_metric(rep, "link_goodput_GBps", G);
    sim_report_metric(rep, "predicted_completion_us", (ideal_ns + path_ns) / 1000.0);
    if (!c->quiet)
        fprintf(stderr, "incast: %u x %llu B, pfc=%d ecn=%d: %.1f us, %.2f GB/s of %.2f, %llu dropped, %llu B retransmitted\n", n,
                (unsigned long long)flow_bytes, pfc, ecn, completion_ns / 1000.0, goodput, G, (unsigned long long)ss.dropped,
                (unsigned long long)retx_bytes);

    sim_check(rep, "delivered_exactly_once", done == n && responder_done == n && requester_done == n && !failed,
              "%u of %u flows in, %llu completed at the receiver and %llu acknowledged at the senders (each once), %llu QPs failed", done, n,
              (unsigned long long)responder_done, (unsigned long long)requester_done, (unsigned long long)failed);
    sim_check(rep, "conservation", conserved, "%s", conserved ? "packets, buffers and queue pairs consistent after the drain" : why);
    if (pfc) sim_check(rep, "lossless_with_pfc", ss.dropped == 0, "%llu dropped with PFC on", (unsigned long long)ss.dropped);
    else
        sim_check(rep, "losses_recovered", ss.dropped == 0 || retx_bytes >= ss.dropped * (uint64_t)mtu / 2,
                  "%llu dropped, %llu B retransmitted (go-back-N resends at least what was lost)", (unsigned long long)ss.dropped,
                  (unsigned long long)retx_bytes);
    sim_check(rep, "not_faster_than_bottleneck", completion_ns >= ideal_ns, "%.1f us vs %.1f us for all bytes through the receiver's port",
              completion_ns / 1000.0, ideal_ns / 1000.0);
    if (pfc && !ecn)
        sim_check(rep, "completion_as_predicted", completion_ns <= 1.1 * (ideal_ns + path_ns),
                  "%.1f us vs %.1f us predicted (total / the hot port's goodput + a path; +10%%)", completion_ns / 1000.0,
                  (ideal_ns + path_ns) / 1000.0);
    sim_fabric_free(f);
    topo_free(t);
}

SIM_TEST(incast, "N RDMA WRITEs into one receiver over RoCE v2 (PFC on/off, ECN/DCQCN on/off): goodput, completion, fairness, "
         "drops and retransmissions, pauses; every message exactly once", incast_params, "flow_bytes=262144", incast_run)
