/* incast: N senders each send flow_bytes to one receiver through a switch,
 * over the transport the parameters pick (models/network):
 *   roce: RDMA RC WRITEs over RoCE v2 (roce_nic with RC queue pairs, eth_switch), PFC on or off (lossy: tail
 *         drop, and RC's go-back-N and timeouts recover), ECN with DCQCN at the NICs on or off;
 *   ib:   RDMA RC WRITEs over InfiniBand (ib_rnic, ib_switch): per-VL credits, lossless by construction;
 *   tcp:  one message per sender on a TCP connection (roce_nic with tcp, eth_switch), PFC on or off.
 * Every message must arrive exactly once in every mode. With more senders than one switch's radix (64) takes
 * beside the receiver, the senders sit on two edge switches, each with one uplink to the receiver's switch.
 * Prediction (configuration only): the receiver's port is the bottleneck, so on a lossless fabric without
 * DCQCN the last byte is in after total bytes / its payload goodput plus one path's latency (within 10 %),
 * and no faster in any mode. */
#include "models/network/ib_rnic.h"
#include "tb/roce_common.h"

#include <cjson/cJSON.h>
#include <time.h>

#define MAX_SENDERS 64

static const sim_param_def incast_params[] = {
    SIM_PARAM_ENUM("link", "auto", "auto|roce-100g|roce-200g|roce-400g|eth-25g|eth-100g|eth-200g|eth-400g|ib-hdr|ib-ndr|ib-xdr",
                   "link preset of every link (auto: roce-100g for roce, ib-ndr for ib, eth-100g for tcp)"),
    ROCE_SWITCH_PARAMS,
    SIM_PARAM_ENUM("transport", "roce", "roce|ib|tcp", "roce: RDMA RC over RoCE v2; ib: RDMA RC over InfiniBand (credits); tcp: TCP over Ethernet"),
    SIM_PARAM_ENUM("op", "write", "write|read", "RDMA (roce, ib): each sender WRITEs to the receiver, or the receiver READs from each sender "
                   "(the responses converge on its port; with ecn=1 the senders' DCQCN limiters pace them)"),
    SIM_PARAM_INT("senders", "8", "", 2, MAX_SENDERS, "incast senders N (above 63: on two edge switches)"),
    SIM_PARAM_BOOL("pfc", "1", "Ethernet (roce, tcp): PFC on the switch (0: lossy, tail drop)"),
    SIM_PARAM_BOOL("ecn", "1", "roce: RED/ECN marking at the switch and DCQCN at the NICs"),
    SIM_PARAM_INT("flow_bytes", "1048576", "B", 1, 1 << 30, "bytes each sender sends (one RC WRITE, or one TCP message)"),
    SIM_PARAM_INT("buffer_bytes", "1048576", "B", 16384, 1000000000, "Ethernet: shared buffer of the switch"),
    SIM_PARAM_INT("vl_buffer_bytes", "65536", "B", 4352, 1 << 20, "ib: receive buffer per VL on every port"),
    SIM_PARAM_DOUBLE("rto_us", "100", "us", 1, 1e6, "RC retransmission timeout; tcp: the RTO floor"),
    SIM_PARAM_INT("window_pkts", "256", "", 1, 65536, "RC: PSNs outstanding at most per QP"),
    SIM_PARAM_DOUBLE("host_stack_ns", "5000", "ns", 0, 1e8, "tcp: the host stack's CPU time per message on each side [assumed; as rdma_latency]"),
    SIM_PARAM_END,
};

enum incast_tr { TR_ROCE, TR_IB, TR_TCP };

/* Sender i is node 1 + i (with op=read the responder, the receiver r its flows' requester), the receiver 1 + n, the receiver's switch 0, the edge switches (tiered) n + 2, n + 3. */
typedef struct incast_sys {
    enum incast_tr tr;
    bool read;
    unsigned n, edges;
    uint64_t flow_bytes;
    uint32_t r_ep;
    topo *t;
    sim_fabric *f;
} incast_sys;

static topo *incast_topo(const char *link, unsigned n, bool ib, unsigned *edges)
{
    char err[512], name[32], end[32], ports[24];
    const char *sw_kind = ib ? "ib_switch" : "eth_switch", *nic_kind = ib ? "ib_rnic" : "roce_nic";
    *edges = n + 1 > TOPO_MAX_PORTS ? 2 : 0;
    const unsigned half = (n + 1) / 2;
    snprintf(ports, sizeof ports, "ports=%u", *edges ? 3 : n + 1);
    topo *t = topo_new(link, err, sizeof err);
    int ok = t && topo_add_node(t, "sw0", sw_kind, (const char *const[]){ ports, NULL }, err, sizeof err) >= 0;
    for (unsigned i = 0; ok && i <= n; i++) {   /* h0..h(n-1) senders, r the receiver on sw0's last port */
        if (i < n) snprintf(name, sizeof name, "h%u", i);
        else snprintf(name, sizeof name, "r");
        ok = topo_add_node(t, name, nic_kind, NULL, err, sizeof err) >= 0;
    }
    for (unsigned e = 0; ok && e < *edges; e++) {
        snprintf(name, sizeof name, "e%u", e);
        snprintf(ports, sizeof ports, "ports=%u", half + 1);
        ok = topo_add_node(t, name, sw_kind, (const char *const[]){ ports, NULL }, err, sizeof err) >= 0;
    }
    for (unsigned i = 0; ok && i <= n; i++) {
        if (i < n) snprintf(name, sizeof name, "h%u", i);
        else snprintf(name, sizeof name, "r");
        if (i == n) snprintf(end, sizeof end, "sw0.p%u", *edges ? 2 : n);
        else if (*edges) snprintf(end, sizeof end, "e%u.p%u", i / half, i % half);
        else snprintf(end, sizeof end, "sw0.p%u", i);
        ok = topo_add_link(t, name, end, link, -1, -1, err, sizeof err) >= 0;
    }
    for (unsigned e = 0; ok && e < *edges; e++) {   /* each edge's uplink on its port after its senders */
        snprintf(name, sizeof name, "e%u.p%u", e, half);
        snprintf(end, sizeof end, "sw0.p%u", e);
        ok = topo_add_link(t, name, end, link, -1, -1, err, sizeof err) >= 0;
    }
    if (!ok || topo_finish(t, err, sizeof err)) sim_fatal("incast: topology: %s", err);
    return t;
}

/* One flow's state at both ends, whatever the transport. */
typedef struct flow_state {
    sim_time_ps done_ps;          /* last byte in order at the receiver (0: not yet) */
    bool sender_done, receiver_done, failed, idle;
    uint64_t retx_bytes, data_pkts, acks;   /* data packets the sender sent (first and again), ACKs/NAKs its receiver sent */
} flow_state;

static void flow_state_get(const incast_sys *s, unsigned i, flow_state *st)
{
    const void *h = sim_fabric_component(s->f, 1 + i), *r = sim_fabric_component(s->f, 1 + s->n);
    memset(st, 0, sizeof *st);
    if (s->read) {   /* r requests, sender i responds: done when r's READ has all its data, once */
        const rc_qp *qr = s->tr == TR_IB ? ib_rnic_qp(r, (uint32_t)i) : roce_nic_flow_qp(r, i);
        const rc_qp *qh = s->tr == TR_IB ? ib_rnic_qp(h, s->r_ep) : roce_nic_flow_qp(h, i);
        st->done_ps = s->tr == TR_IB ? ib_rnic_msg_times(r, i)->requester_done_ps : roce_nic_flow_acked_ps(r, i);
        st->sender_done = qh != NULL && !rc_failed(qh);
        st->receiver_done = qr && rc_stats_get(qr)->completed == 1;
        st->failed = (qr && rc_failed(qr)) || (qh && rc_failed(qh));
        st->idle = (!qr || rc_idle(qr)) && (!qh || rc_idle(qh));
        /* a repeated READ request is answered again: what the responder sent beyond the message */
        const uint64_t sent = qh ? rc_stats_get(qh)->data_bytes : 0;
        st->retx_bytes = sent > s->flow_bytes ? sent - s->flow_bytes : 0;
        st->data_pkts = qh ? rc_stats_get(qh)->data_pkts : 0;
        st->acks = qr ? rc_stats_get(qr)->read_reqs : 0;
        return;
    }
    if (s->tr == TR_IB) {
        const rc_qp *qs = ib_rnic_qp(h, s->r_ep), *qr = ib_rnic_qp(r, (uint32_t)i);
        st->done_ps = ib_rnic_msg_times(r, i)->responder_done_ps;
        st->sender_done = qs && rc_stats_get(qs)->completed == 1;
        st->receiver_done = qr && rc_stats_get(qr)->responder_completed == 1;
        st->failed = qs && rc_failed(qs);
        st->idle = !qs || rc_idle(qs);
        st->retx_bytes = qs ? rc_stats_get(qs)->retransmitted_bytes : 0;
        st->data_pkts = qs ? rc_stats_get(qs)->data_pkts : 0;
        st->acks = qr ? rc_stats_get(qr)->acks + rc_stats_get(qr)->naks : 0;
    } else if (s->tr == TR_TCP) {
        const tcp_conn *cs = roce_nic_flow_conn(h, i), *cr = roce_nic_flow_conn(r, i);
        st->done_ps = roce_nic_flow_done_ps(r, i);
        st->sender_done = cs && tcp_stats_get(cs)->completed == 1;
        st->receiver_done = cr && tcp_stats_get(cr)->receiver_completed == 1;
        st->failed = cs && tcp_failed(cs);
        st->idle = !cs || tcp_idle(cs);
        st->retx_bytes = cs ? tcp_stats_get(cs)->retransmitted_bytes : 0;
        st->data_pkts = cs ? tcp_stats_get(cs)->segs : 0;
        st->acks = cr ? tcp_stats_get(cr)->acks : 0;
    } else {
        const rc_qp *qs = roce_nic_flow_qp(h, i), *qr = roce_nic_flow_qp(r, i);
        st->done_ps = roce_nic_flow_done_ps(r, i);
        st->sender_done = qs && rc_stats_get(qs)->completed == 1;
        st->receiver_done = qr && rc_stats_get(qr)->responder_completed == 1;
        st->failed = qs && rc_failed(qs);
        st->idle = !qs || rc_idle(qs);
        st->retx_bytes = qs ? rc_stats_get(qs)->retransmitted_bytes : 0;
        st->data_pkts = qs ? rc_stats_get(qs)->data_pkts : 0;
        st->acks = qr ? rc_stats_get(qr)->acks + rc_stats_get(qr)->naks : 0;
    }
}


/* The switches' side: drops, pause frames and the per-port map (IB: no PAUSE; its credit stalls in the map). */
typedef struct switch_totals { uint64_t drops, pauses, max_queue_bytes; } switch_totals;

static cJSON *switch_map(const incast_sys *s, switch_totals *st)
{
    cJSON *map = cJSON_CreateArray();
    memset(st, 0, sizeof *st);
    for (uint32_t v = 0; v < s->t->n_nodes; v++) {
        const topo_node *tn = &s->t->nodes[v];
        const void *comp = sim_fabric_component(s->f, v);
        if (s->tr == TR_IB) {
            const ib_port *ports[TOPO_MAX_PORTS];
            unsigned np = 0;
            if (tn->endpoint >= 0) ports[np++] = ib_rnic_port(comp);
            else
                for (unsigned q = 0; q < tn->nports; q++)
                    if (ib_switch_port(comp, q)) ports[np++] = ib_switch_port(comp, q);
            for (unsigned q = 0; q < np; q++) {
                ib_port_stats ps = ib_port_stats_get(ports[q]);
                uint64_t used = 0;
                for (unsigned vl = 0; vl < IB_MAX_VLS; vl++) used += (uint64_t)ps.max_used_blocks[vl] * 64;
                if (tn->endpoint < 0 && used > st->max_queue_bytes) st->max_queue_bytes = used;
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "node", tn->name);
                cJSON_AddNumberToObject(o, "port", q);
                cJSON_AddNumberToObject(o, "paused_us", (double)ps.credit_stall_ps / 1e6);   /* waiting for credits */
                cJSON_AddNumberToObject(o, "fc_packets_sent", (double)ps.fc_sent);
                cJSON_AddItemToArray(map, o);
            }
            continue;
        }
        if (tn->endpoint >= 0) {
            roce_pause_row(map, tn->name, roce_nic_port(comp), "paused_us");
            continue;
        }
        eth_switch_stats ss = eth_switch_stats_get(comp);
        st->drops += ss.dropped;
        if (ss.max_shared_used_bytes > st->max_queue_bytes) st->max_queue_bytes = ss.max_shared_used_bytes;
        for (unsigned q = 0; q < tn->nports; q++) {
            const eth_port *ep = eth_switch_port(comp, q);
            if (!ep) continue;
            roce_pause_row(map, tn->name, ep, "paused_us");
            st->pauses += eth_port_stats_get(ep).pause_sent;
        }
    }
    return map;
}

static void incast_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const enum incast_tr tr = (enum incast_tr)sim_param_enum(p, "transport");
    const char *link = sim_param_str(p, "link");
    if (!strcmp(link, "auto")) link = tr == TR_IB ? "ib-ndr" : tr == TR_TCP ? "eth-100g" : "roce-100g";
    const topo_preset *pr = topo_preset_find(link);
    const bool ib_link = topo_preset_family(pr) == TOPO_FAMILY_IB;
    if (ib_link != (tr == TR_IB))
        sim_input_error("incast: link=%s with transport=%s; allowed: ib-hdr|ib-ndr|ib-xdr for ib, roce-*|eth-* for roce and tcp", link,
                        sim_param_str(p, "transport"));
    const unsigned mtu = (unsigned)sim_param_int(p, "mtu"), n = (unsigned)sim_param_int(p, "senders");
    const uint64_t flow_bytes = (uint64_t)sim_param_int(p, "flow_bytes");
    bool read = false;
    if (tr == TR_TCP) sim_param_not_applicable(p, "op", "transport=tcp: one message per sender (a send), no RDMA READ");
    else read = sim_param_enum(p, "op") == 1;
    bool pfc = true, ecn = false;
    eth_switch_cfg sc;
    roce_switch_cfg_read(p, &sc);
    const double pipeline_ns = sc.pipeline_ns;
    const sim_time_ps rto_ps = (sim_time_ps)(sim_param_double(p, "rto_us") * 1e6 + 0.5);
    roce_nic_cfg nc = { .cnp_prio = 6, .queue_pkts = 2, .rcc = RC_CFG_DEFAULT, .tcpc = TCP_CFG_DEFAULT };
    roce_dcqcn_cfg_read(p, &nc.dc);
    ib_rnic_cfg ic = { .rc = RC_CFG_DEFAULT, .sl = 0, .queue_pkts = 2 };
    ib_switch_cfg isc = { .pipeline_ns = pipeline_ns };
    if (tr == TR_IB) {
        const char *why = "transport=ib: InfiniBand is lossless by credits (no PFC, no shared Ethernet buffer, no ECN/DCQCN)";
        sim_param_not_applicable(p, "pfc", "%s", why);
        sim_param_not_applicable(p, "ecn", "%s", why);
        sim_param_not_applicable(p, "buffer_bytes", "%s", why);
        sim_param_not_applicable(p, "dt_alpha", "%s", why);
        sim_param_not_applicable(p, "egress_sched", "%s: the IB port's VL arbitration serves", why);
        roce_ecn_params_not_applicable(p, why);
        roce_pfc_params_not_applicable(p, why);
        if (mtu & (mtu - 1)) sim_input_error("incast: transport=ib mtu=%u; allowed: 256, 512, 1024, 2048, 4096", mtu);
        const uint32_t vl_buf = (uint32_t)sim_param_int(p, "vl_buffer_bytes");
        ib_port_cfg_default(&ic.port, 1, vl_buf);
        ib_port_cfg_default(&isc.port, 1, vl_buf);
        ic.rc.mtu = mtu;
        ic.rc.rto_ps = rto_ps;
        ic.rc.window_pkts = (uint32_t)sim_param_int(p, "window_pkts");
    } else {
        sim_param_not_applicable(p, "vl_buffer_bytes", "transport=%s: Ethernet has no virtual lanes", sim_param_str(p, "transport"));
        pfc = sim_param_bool(p, "pfc");
        if (tr == TR_TCP) {
            const char *why = "transport=tcp: ECN for TCP (DCTCP) is not modelled; DCQCN is RDMA's";
            sim_param_not_applicable(p, "ecn", "%s", why);
            roce_ecn_params_not_applicable(p, why);
            sim_param_not_applicable(p, "window_pkts", "transport=tcp: the window is TCP's cwnd/rwnd, not RC's PSNs");
            nc.tcp = true;
            nc.tcpc.min_rto_ps = rto_ps;
            nc.host_ns = sim_param_double(p, "host_stack_ns");
        } else {
            ecn = sim_param_bool(p, "ecn");
            nc.rc = true;
            nc.rcc.rto_ps = rto_ps;
            nc.rcc.window_pkts = (uint32_t)sim_param_int(p, "window_pkts");
            if (!ecn) roce_ecn_params_not_applicable(p, "ecn=0: no marking, no DCQCN");
        }
        sc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
        sc.pfc = pfc;
        sc.ecn = ecn;
        nc.dcqcn = ecn;
        if (!pfc) roce_pfc_params_not_applicable(p, "pfc=0: lossy, no PAUSE frames");
        if (ecn && sc.kmax_bytes <= sc.kmin_bytes)
            sim_input_error("incast: kmin_bytes=%g kmax_bytes=%g; allowed kmin_bytes < kmax_bytes", sc.kmin_bytes, sc.kmax_bytes);
    }
    if (tr != TR_TCP) sim_param_not_applicable(p, "host_stack_ns", "transport=%s: RDMA bypasses the host stack", sim_param_str(p, "transport"));
    sim_test_configured(c);

    network_register_kinds();
    incast_sys s = { .tr = tr, .n = n, .read = read, .flow_bytes = flow_bytes };
    s.t = incast_topo(link, n, tr == TR_IB, &s.edges);
    s.r_ep = (uint32_t)s.t->nodes[1 + n].endpoint;
    roce_flow flows[MAX_SENDERS];
    rnic_msg msgs[MAX_SENDERS];
    for (unsigned i = 0; i < n; i++) {
        uint32_t src = (uint32_t)s.t->nodes[1 + i].endpoint;
        flows[i] = (roce_flow){ .src = read ? s.r_ep : src, .dst = read ? src : s.r_ep, .prio = 3, .payload_bytes = mtu, .bytes = flow_bytes,
                                .op = tr == TR_TCP ? RC_SEND : read ? RC_READ : RC_WRITE };
        msgs[i] = (rnic_msg){ .src = read ? s.r_ep : src, .dst = read ? src : s.r_ep, .op = read ? RC_READ : RC_WRITE, .bytes = flow_bytes,
                              .post_ps = 0 };
    }
    nc.flows = flows;
    nc.n_flows = n;
    ic.msgs = msgs;
    ic.n_msgs = n;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", &sc }, { "ib_rnic", &ic }, { "ib_switch", &isc } } };
    char err[512];
    s.f = sim_fabric_new(c->k, s.t, &fc, err, sizeof err);
    if (!s.f) sim_input_error("incast: %s", err);

    /* until every flow's last byte is in and acknowledged (or a bound far beyond the prediction) */
    const double G = roce_goodput_GBps(pr, mtu), ideal_ns = (double)flow_bytes * n / G;
    const sim_time_ps bound = (sim_time_ps)(ideal_ns * 1000.0 * 200) + SIM_US(100000);
    sim_time_ps step = (sim_time_ps)(ideal_ns * 1000.0 / 20) + SIM_US(1);
    unsigned done = 0;
    flow_state st[MAX_SENDERS];
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    while (sim_now(c->k) < bound) {
        done = 0;
        bool idle = true;
        for (unsigned i = 0; i < n; i++) {
            flow_state_get(&s, i, &st[i]);
            done += st[i].done_ps != 0;
            idle = idle && st[i].idle;
        }
        if (done == n && idle) break;
        sim_fabric_run(s.f, sim_now(c->k) + step);
        sim_progress(c, (double)done / n, "%u of %u flows in, %.1f us", done, n, (double)sim_now(c->k) / 1e6);
    }
    sim_fabric_run(s.f, sim_now(c->k) + SIM_US(5));   /* the last ACKs and XONs (IB: credits) */
    if (tr == TR_IB) sim_fabric_run_until_quiet(s.f, SIM_NS(20), 1000);   /* IB's flow-control packets: an instant between them */
    clock_gettime(CLOCK_MONOTONIC, &w1);
    const double wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);

    sim_time_ps last_ps = 0;
    double gput[MAX_SENDERS];
    uint64_t retx_bytes = 0, sender_done = 0, receiver_done = 0, failed = 0, cnps = 0, data_pkts = 0, acks = 0;
    done = 0;
    for (unsigned i = 0; i < n; i++) {
        flow_state_get(&s, i, &st[i]);
        sim_time_ps d = st[i].done_ps;
        done += d != 0;
        if (d > last_ps) last_ps = d;
        gput[i] = d ? (double)flow_bytes / ((double)d / 1000.0 - flows[i].start_us * 1000.0) : 0;
        retx_bytes += st[i].retx_bytes;
        data_pkts += st[i].data_pkts;
        acks += st[i].acks;
        sender_done += st[i].sender_done;
        receiver_done += st[i].receiver_done;
        failed += st[i].failed;
    }
    if (tr != TR_IB) cnps = roce_nic_stats_get(sim_fabric_component(s.f, 1 + n))->cnps_sent;
    uint64_t rd_cnps_in = 0, rd_cuts = 0;   /* op=read, ecn=1: the responders' limiters */
    for (unsigned i = 0; read && ecn && i < n; i++) {
        const roce_nic *h = sim_fabric_component(s.f, 1 + i);
        rd_cnps_in += roce_nic_stats_get(h)->cnps_received;
        const dcqcn_rp *rp = roce_nic_flow_rp(h, i);
        rd_cuts += rp ? rp->cuts : 0;
    }
    switch_totals sw;
    cJSON *map = switch_map(&s, &sw);
    char why[400] = "";
    bool conserved = sim_fabric_check(s.f, true, why, sizeof why) == 0;
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);

    /* one path: every hop's serialisation and latency, every switch's pipeline; TCP adds the host stack at both ends */
    const unsigned hops = s.edges ? 3 : 2;
    const unsigned wire = tr == TR_TCP ? mtu + pr->overhead_bytes - ROCE_TCP_FRAMING_LESS_BYTES : mtu + pr->overhead_bytes;
    const double path_ns = hops * s.t->links[0].latency_ns + (hops - 1) * pipeline_ns + hops * (double)wire / topo_preset_GBps(pr) +
                           (tr == TR_TCP ? 2 * nc.host_ns : 0);
    const double completion_ns = (double)last_ps / 1000.0, goodput = completion_ns > 0 ? (double)flow_bytes * n / completion_ns : 0;
    sim_report *rep = c->report;
    sim_report_metric(rep, "goodput_GBps", goodput);
    sim_report_metric(rep, "completion_us", completion_ns / 1000.0);
    sim_report_metric(rep, "fairness", roce_jain(gput, n));
    sim_report_metric(rep, "drops", (double)sw.drops);
    sim_report_metric(rep, "retransmitted_bytes", (double)retx_bytes);
    sim_report_metric(rep, "pause_frames", (double)sw.pauses);
    sim_report_metric_json(rep, "paused_us", map);
    sim_report_metric(rep, "max_queue_bytes", (double)sw.max_queue_bytes);
    sim_report_metric(rep, "cnps", (double)cnps);
    sim_report_metric(rep, "link_goodput_GBps", G);
    sim_report_metric(rep, "predicted_completion_us", (ideal_ns + path_ns) / 1000.0);
    /* speed: data packets through the whole path per wall second of the run (ACKs and CNPs apart) */
    sim_report_metric(rep, "data_pkts", (double)data_pkts);
    sim_report_metric(rep, "ack_pkts", (double)acks);
    sim_report_metric(rep, "wall_s", wall_s);
    sim_report_metric(rep, "pkts_per_s", wall_s > 0 ? (double)data_pkts / wall_s : 0);
    if (s.edges) sim_report_sim_json(rep, "edge_switches", cJSON_CreateNumber(s.edges));
    if (!c->quiet)
        fprintf(stderr, "incast: %s %u x %llu B on %s, pfc=%d ecn=%d: %.1f us, %.2f GB/s of %.2f, %llu dropped, %llu B retransmitted\n",
                sim_param_str(p, "transport"), n, (unsigned long long)flow_bytes, link, pfc, ecn, completion_ns / 1000.0, goodput, G,
                (unsigned long long)sw.drops, (unsigned long long)retx_bytes);

    sim_check(rep, "delivered_exactly_once", done == n && receiver_done == n && sender_done == n && !failed,
              "%u of %u flows in, %llu completed at the receiver and %llu acknowledged at the senders (each once), %llu %s failed", done, n,
              (unsigned long long)receiver_done, (unsigned long long)sender_done, (unsigned long long)failed,
              tr == TR_TCP ? "connections" : "QPs");
    sim_check(rep, "conservation", conserved, "%s", conserved ? "packets, buffers, credits and queue pairs consistent after the drain" : why);
    if (pfc) sim_check(rep, tr == TR_IB ? "lossless_by_credits" : "lossless_with_pfc", sw.drops == 0, "%llu dropped with %s",
                       (unsigned long long)sw.drops, tr == TR_IB ? "IB credits" : "PFC on");
    else
        sim_check(rep, "losses_recovered", sw.drops == 0 || retx_bytes >= sw.drops * (uint64_t)mtu / 2,
                  "%llu dropped, %llu B retransmitted (the transport resends at least what was lost)", (unsigned long long)sw.drops,
                  (unsigned long long)retx_bytes);
    sim_check(rep, "not_faster_than_bottleneck", completion_ns >= ideal_ns, "%.1f us vs %.1f us for all bytes through the receiver's port",
              completion_ns / 1000.0, ideal_ns / 1000.0);
    if (pfc && !ecn && tr != TR_TCP)
        sim_check(rep, "completion_as_predicted", completion_ns <= 1.1 * (ideal_ns + path_ns),
                  "%.1f us vs %.1f us predicted (total / the hot port's goodput + a path; +10%%)", completion_ns / 1000.0,
                  (ideal_ns + path_ns) / 1000.0);
    if (read && ecn)
        sim_check(rep, "dcqcn_paces_read_responses", cnps > 0 && rd_cnps_in == cnps && rd_cuts > 0,
                  "the requester sent %llu CNPs for marked READ responses, the responders took %llu and cut their rate %llu times",
                  (unsigned long long)cnps, (unsigned long long)rd_cnps_in, (unsigned long long)rd_cuts);
    sim_fabric_free(s.f);
    topo_free(s.t);
}

SIM_TEST(incast, "N senders into one receiver over RoCE v2 RC (PFC on/off, ECN/DCQCN on/off), InfiniBand RC or TCP: goodput, completion, "
         "fairness, drops and retransmissions, pauses; every message exactly once", incast_params, "flow_bytes=262144", incast_run)
