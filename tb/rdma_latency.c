/* rdma_latency: one RDMA message between two NICs through one switch, like
 * perftest's ib_write_lat / ib_read_lat / ib_send_lat and, for a large
 * message, ib_*_bw. transport=ib: ib_rnic components (RC queue pairs on IB
 * ports with per-VL credits, models/network) and an ib_switch; transport=roce:
 * roce_nic components with RC queue pairs and an eth_switch (PFC on, ECN off;
 * the wire bytes are RoCE v2's). Every packet, ACK and READ response is
 * simulated. The measured times are checked
 * against a prediction from the configuration alone (the breakdown below):
 *   write/send, one way: tx + sum(ser of each packet on hop 1) + lat + switch + ser(last) + lat + rx
 *   read, round trip:    tx + (request one way, 1 packet) + rx + (responses one way) + rx
 * ser = wire bytes / link rate, wire bytes = payload + the preset's overhead (IB: LRH, BTH,
 * ICRC, VCRC = 26 B; RoCE v2: Ethernet, IP, UDP, BTH, ICRC, FCS, preamble, gap = 82 B) + RETH 16 (a WRITE's first packet, a READ request) + AETH 4 (a READ response's
 * first and last). docs/models/network.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "models/network/ib_rnic.h"
#include "models/network/network.h"
#include "models/network/roce.h"
#include "sim/sim.h"

static const sim_param_def rdma_params[] = {
    SIM_PARAM_ENUM("transport", "ib", "ib|roce|tcp", "ib: RC over InfiniBand; roce: RC over RoCE v2 (PFC on); tcp: TCP over Ethernet (op=send)"),
    SIM_PARAM_ENUM("link", "auto", "auto|ib-hdr|ib-ndr|ib-xdr|roce-100g|roce-200g|roce-400g|eth-25g|eth-100g|eth-200g|eth-400g",
                   "link preset of both links (auto: ib-ndr for ib, roce-400g for roce, eth-100g for tcp)"),
    SIM_PARAM_INT("mss", "1460", "B", 536, 9000, "tcp: segment payload (1460: a 1500-byte MTU)"),
    SIM_PARAM_DOUBLE("host_stack_ns", "5000", "ns", 0, 1e8,
                     "tcp: the host stack's CPU time per message on each side (syscall, copy, interrupt) [assumed; the seed: 10-100 us for Ethernet]"),
    SIM_PARAM_ENUM("op", "auto", "auto|write|read|send", "RDMA WRITE, RDMA READ (a round trip) or SEND (auto: write, send for tcp)"),
    SIM_PARAM_INT("bytes", "8", "B", 1, 1 << 30, "the message whose time is latency_us"),
    SIM_PARAM_INT("large_bytes", "4194304", "B", 1, 1 << 30, "the message whose rate is GBps (run on its own)"),
    SIM_PARAM_INT("mtu", "4096", "B", 256, 4096, "RDMA (ib, roce) MTU: 256, 512, 1024, 2048, 4096"),
    SIM_PARAM_DOUBLE("latency_ns", "100", "ns", 0, 1e6, "one-way wire latency of each link (the preset's: 100)"),
    SIM_PARAM_DOUBLE("switch_ns", "100", "ns", 0, 1e6, "switch port to port after the last byte in (store and forward) [assumed]"),
    SIM_PARAM_DOUBLE("nic_tx_ns", "300", "ns", 0, 1e6, "NIC: post (doorbell) to the first packet ready (WQE and data fetch over PCIe) [assumed]"),
    SIM_PARAM_DOUBLE("nic_rx_ns", "200", "ns", 0, 1e6, "NIC: last byte in to the QP (parse, data written to memory, completion) [assumed]"),
    SIM_PARAM_INT("vl_buffer_bytes", "65536", "B", 4352, 1 << 20, "ib: receive buffer per VL on every port"),
    SIM_PARAM_END,
};

typedef struct run_result { sim_time_ps time_ps; uint64_t events, retransmitted, acks, naks, data_pkts; bool ok; char why[400]; } run_result;

/* One message 0 -> 1 on a fresh hca0 - sw0 - hca1 system; its time (one way, or round trip for READ). */
static void run_once(sim_test_ctx *c, sim_kernel *k, sim_trace *tr, const char *link, double latency_ns, const ib_rnic_cfg *base,
                     const ib_switch_cfg *sc, rc_op op, uint64_t bytes, run_result *r)
{
    char err[512];
    topo *t = topo_new(link, err, sizeof err);
    if (!t || topo_add_node(t, "nic0", "ib_rnic", NULL, err, sizeof err) < 0 || topo_add_node(t, "sw0", "ib_switch", NULL, err, sizeof err) < 0 ||
        topo_add_node(t, "nic1", "ib_rnic", NULL, err, sizeof err) < 0 ||
        topo_add_link(t, "nic0", "sw0", link, latency_ns, -1, err, sizeof err) < 0 ||
        topo_add_link(t, "sw0", "nic1", link, latency_ns, -1, err, sizeof err) < 0 || topo_finish(t, err, sizeof err))
        sim_fatal("rdma_latency: topology: %s", err);
    rnic_msg m = { .src = 0, .dst = 1, .op = op, .bytes = bytes, .post_ps = 0 };
    ib_rnic_cfg nc = *base;
    nc.msgs = &m;
    nc.n_msgs = 1;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = tr, .kind_cfg = { { "ib_rnic", &nc }, { "ib_switch", sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("rdma_latency: %s", err);
    const ib_rnic *src = sim_fabric_component(f, 0), *dst = sim_fabric_component(f, 2);
    /* periodic FC packets never stop: run until the message is done, then a little more for the last ACK and credits */
    sim_time_ps step = SIM_US(1);
    while (sim_now(k) < SIM_US(1000000)) {
        const rnic_msg_times *ts = ib_rnic_msg_times(src, 0);
        if (ts->requester_done_ps) break;
        sim_fabric_run(f, sim_now(k) + step);
        sim_progress(c, 0.5, "%.1f us simulated", (double)sim_now(k) / 1e6);
    }
    sim_fabric_run(f, sim_now(k) + SIM_US(5));
    const rnic_msg_times *ts = ib_rnic_msg_times(src, 0), *td = ib_rnic_msg_times(dst, 0);
    r->time_ps = op == RC_READ ? ts->requester_done_ps - ts->posted_ps : td->responder_done_ps - ts->posted_ps;
    const rc_stats *qs = rc_stats_get(ib_rnic_qp(src, 1)), *qd = rc_stats_get(ib_rnic_qp(dst, 0));
    r->retransmitted = qs->retransmitted_pkts + qd->retransmitted_pkts;
    r->acks = qd->acks;
    r->naks = qd->naks;
    r->data_pkts = qs->data_pkts + qd->data_pkts;
    r->events = sim_event_count(k);
    int bad = sim_fabric_check(f, true, r->why, sizeof r->why);
    r->ok = !bad && ts->requester_done_ps && (op == RC_READ || td->responder_done_ps) && qs->completed == 1;
    if (!bad && !r->ok) snprintf(r->why, sizeof r->why, "the message did not complete once at both ends");
    sim_fabric_free(f);
    topo_free(t);
}

/* The same over RoCE v2: roce_nic - eth_switch - roce_nic, the flow one RC message. */
static void run_once_roce(sim_test_ctx *c, sim_kernel *k, sim_trace *tr, const char *link, double latency_ns, const roce_nic_cfg *base,
                          const eth_switch_cfg *sc, rc_op op, uint64_t bytes, uint32_t mtu, run_result *r)
/* (with base->tcp: one message on a TCP connection instead of a QP) */
{
    char err[512];
    topo *t = topo_new(link, err, sizeof err);
    if (!t || topo_add_node(t, "nic0", "roce_nic", NULL, err, sizeof err) < 0 || topo_add_node(t, "sw0", "eth_switch", NULL, err, sizeof err) < 0 ||
        topo_add_node(t, "nic1", "roce_nic", NULL, err, sizeof err) < 0 ||
        topo_add_link(t, "nic0", "sw0", link, latency_ns, -1, err, sizeof err) < 0 ||
        topo_add_link(t, "sw0", "nic1", link, latency_ns, -1, err, sizeof err) < 0 || topo_finish(t, err, sizeof err))
        sim_fatal("rdma_latency: topology: %s", err);
    roce_flow fl = { .src = 0, .dst = 1, .prio = 3, .payload_bytes = mtu, .bytes = bytes, .op = op };
    roce_nic_cfg nc = *base;
    nc.flows = &fl;
    nc.n_flows = 1;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = tr, .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("rdma_latency: %s", err);
    const roce_nic *src = sim_fabric_component(f, 0), *dst = sim_fabric_component(f, 2);
    while (sim_now(k) < SIM_US(1000000) && !roce_nic_flow_acked_ps(src, 0)) {
        sim_fabric_run(f, sim_now(k) + SIM_US(1));
        sim_progress(c, 0.5, "%.1f us simulated", (double)sim_now(k) / 1e6);
    }
    sim_fabric_run(f, SIM_TIME_MAX);   /* Ethernet has no periodic frames: everything drains */
    r->time_ps = op == RC_READ ? roce_nic_flow_acked_ps(src, 0) : roce_nic_flow_done_ps(dst, 0);
    uint64_t completed;
    if (base->tcp) {
        const tcp_stats *ts = tcp_stats_get(roce_nic_flow_conn(src, 0)), *td = tcp_stats_get(roce_nic_flow_conn(dst, 0));
        r->retransmitted = ts->retransmitted_segs;
        r->acks = td->acks;
        r->naks = 0;
        r->data_pkts = ts->segs;
        completed = ts->completed;
    } else {
        const rc_stats *qs = rc_stats_get(roce_nic_flow_qp(src, 0)), *qd = rc_stats_get(roce_nic_flow_qp(dst, 0));
        r->retransmitted = qs->retransmitted_pkts + qd->retransmitted_pkts;
        r->acks = qd->acks;
        r->naks = qd->naks;
        r->data_pkts = qs->data_pkts + qd->data_pkts;
        completed = qs->completed;
    }
    r->events = sim_event_count(k);
    int bad = sim_fabric_check(f, true, r->why, sizeof r->why);
    r->ok = !bad && roce_nic_flow_acked_ps(src, 0) && (op == RC_READ || roce_nic_flow_done_ps(dst, 0)) && completed == 1;
    if (!bad && !r->ok) snprintf(r->why, sizeof r->why, "the message did not complete once at both ends");
    sim_fabric_free(f);
    topo_free(t);
}

/* The prediction from the configuration: one way of a message's packets
 * over two store-and-forward hops of equal rate (a two-stage tandem: a packet
 * starts on hop 2 when it is in and the switch pipeline is done, and hop 2 is
 * free). *ser_ns: the serialisation the last packet's arrival waited for. */
static double one_way_ns(rc_op op, bool response, bool tcp, uint64_t bytes, uint32_t mtu, uint32_t ovh, double GBps, double lat_ns,
                         double sw_ns, double *ser_ns)
{
    uint64_t n = (bytes + mtu - 1) / mtu;
    double end1 = 0, end2 = 0, last = 0;
    for (uint64_t i = 0; i < n; i++) {
        rc_hdr h = { .opcode = response ? RC_READ_RESP : RC_DATA, .op = (uint8_t)op, .offset = i * mtu, .last = i + 1 == n,
                     .payload_bytes = (uint32_t)(i + 1 == n ? bytes - i * mtu : mtu) };
        last = (tcp ? h.payload_bytes + ovh - ROCE_TCP_FRAMING_LESS_BYTES : ib_rnic_wire_bytes(&h, ovh)) / GBps;
        end1 += last;
        double start2 = fmax(end1 + lat_ns + sw_ns, end2);
        end2 = start2 + last;
    }
    *ser_ns = end2 - 2 * lat_ns - sw_ns + lat_ns;   /* all but the wires' and the switch's latency */
    return end2 + lat_ns;
}

static void rdma_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const unsigned transport = (unsigned)sim_param_enum(p, "transport");
    const bool roce = transport == 1, tcp = transport == 2;
    const char *link = sim_param_str(p, "link");
    if (!strcmp(link, "auto")) link = roce ? "roce-400g" : tcp ? "eth-100g" : "ib-ndr";
    const bool ib_link = !strncmp(link, "ib-", 3), roce_link = !strncmp(link, "roce-", 5);
    if ((transport == 0) != ib_link || (roce && !roce_link))
        sim_input_error("rdma_latency: link=%s does not carry transport=%s; allowed: %s", link, sim_param_str(p, "transport"),
                        roce ? "roce-100g, roce-200g, roce-400g" : tcp ? "eth-* or roce-* (Ethernet)" : "ib-hdr, ib-ndr, ib-xdr");
    const unsigned op_choice = (unsigned)sim_param_enum(p, "op");
    const rc_op op = op_choice == 0 ? (tcp ? RC_SEND : RC_WRITE) : op_choice == 1 ? RC_WRITE : op_choice == 2 ? RC_READ : RC_SEND;
    const uint64_t bytes = (uint64_t)sim_param_int(p, "bytes"), large = (uint64_t)sim_param_int(p, "large_bytes");
    const uint32_t mtu = (uint32_t)sim_param_int(p, "mtu");
    const double lat_ns = sim_param_double(p, "latency_ns"), sw_ns = sim_param_double(p, "switch_ns");
    const double tx_ns = sim_param_double(p, "nic_tx_ns"), rx_ns = sim_param_double(p, "nic_rx_ns");
    uint32_t vl_buf = 65536;
    if (roce) sim_param_not_applicable(p, "vl_buffer_bytes", "transport=roce: Ethernet has no VL credits (PFC on a shared buffer)");
    else vl_buf = (uint32_t)sim_param_int(p, "vl_buffer_bytes");
    if (mtu & (mtu - 1)) sim_input_error("rdma_latency: mtu=%u; allowed 256, 512, 1024, 2048, 4096 (IBA MTUs)", mtu);
    uint32_t seg = mtu;
    double host_ns = 0;
    if (tcp) {
        if (op != RC_SEND) sim_input_error("rdma_latency: transport=tcp carries op=send (a message), not an RDMA %s", sim_param_str(p, "op"));
        sim_param_not_applicable(p, "mtu", "transport=tcp: segments are mss bytes");
        seg = (uint32_t)sim_param_int(p, "mss");
        host_ns = sim_param_double(p, "host_stack_ns");
    } else {
        sim_param_not_applicable(p, "mss", "transport=%s: RDMA packets are mtu bytes", sim_param_str(p, "transport"));
        sim_param_not_applicable(p, "host_stack_ns", "transport=%s: RDMA bypasses the kernel", sim_param_str(p, "transport"));
    }
    sim_test_configured(c);
    network_register_kinds();
    const topo_preset *pr = topo_preset_find(link);
    const double GBps = topo_preset_GBps(pr);
    const uint32_t ovh = pr->overhead_bytes;

    ib_rnic_cfg nc = { .rc = RC_CFG_DEFAULT, .sl = 0, .tx_ns = tx_ns, .rx_ns = rx_ns, .queue_pkts = 2 };
    ib_port_cfg_default(&nc.port, 2, vl_buf);
    nc.rc.mtu = mtu;
    ib_switch_cfg sc = { .pipeline_ns = sw_ns };
    ib_port_cfg_default(&sc.port, 2, vl_buf);

    /* the prediction, configuration only */
    double ser_ns, ser_large_ns, ser_req_ns = 0, req_ns = 0;
    double rx_total_ns = rx_ns, lat_pred_ns, large_pred_ns;
    if (op == RC_READ) {
        rc_hdr rq = { .opcode = RC_READ_REQ, .op = RC_READ };
        double rq_ser = ib_rnic_wire_bytes(&rq, ovh) / GBps;
        ser_req_ns = 2 * rq_ser;
        req_ns = rq_ser + lat_ns + sw_ns + rq_ser + lat_ns;
        rx_total_ns = 2 * rx_ns;
    }
    lat_pred_ns = tx_ns + req_ns + rx_total_ns + 2 * host_ns + one_way_ns(op, op == RC_READ, tcp, bytes, seg, ovh, GBps, lat_ns, sw_ns, &ser_ns);
    large_pred_ns = tx_ns + req_ns + rx_total_ns + 2 * host_ns + one_way_ns(op, op == RC_READ, tcp, large, seg, ovh, GBps, lat_ns, sw_ns, &ser_large_ns);
    /* TCP: the prediction holds while the message fits the initial window (RFC 6928: 10 segments); beyond, slow start paces it */
    const uint64_t init_window_bytes = (uint64_t)10 * seg;
    const bool lat_predicted = !tcp || bytes <= init_window_bytes, large_predicted = !tcp || large <= init_window_bytes;
    const unsigned hops = op == RC_READ ? 4 : 2;

    roce_nic_cfg rn = { .cnp_prio = 6, .queue_pkts = 2, .rc = !tcp, .rcc = nc.rc, .tx_ns = tx_ns, .rx_ns = rx_ns, .tcp = tcp,
                        .tcpc = TCP_CFG_DEFAULT, .host_ns = host_ns };
    eth_switch_cfg es;
    eth_switch_cfg_default(&es);
    es.pipeline_ns = sw_ns;
    es.pfc = true;
    run_result small, big;
    sim_kernel *k2 = sim_kernel_new();
    if (roce || tcp) {
        run_once_roce(c, c->k, c->trace, link, lat_ns, &rn, &es, op, bytes, seg, &small);   /* waves: the latency run */
        run_once_roce(c, k2, NULL, link, lat_ns, &rn, &es, op, large, seg, &big);
    } else {
        run_once(c, c->k, c->trace, link, lat_ns, &nc, &sc, op, bytes, &small);
        run_once(c, k2, NULL, link, lat_ns, &nc, &sc, op, large, &big);
    }
    sim_kernel_free(k2);
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = small.events + big.events;

    const double lat_meas_ns = (double)small.time_ps / 1000.0, large_meas_ns = (double)big.time_ps / 1000.0;
    const double GBps_meas = large_meas_ns > 0 ? (double)large / large_meas_ns : 0, goodput_GBps = GBps * seg / (seg + ovh - (tcp ? ROCE_TCP_FRAMING_LESS_BYTES : 0));
    sim_report *rep = c->report;
    sim_report_metric(rep, "latency_us", lat_meas_ns / 1000.0);
    sim_report_metric(rep, "GBps", GBps_meas);
    sim_report_metric(rep, "predicted_latency_us", lat_pred_ns / 1000.0);
    sim_report_metric(rep, "predicted_GBps", (double)large / large_pred_ns);
    sim_report_metric(rep, "link_goodput_GBps", goodput_GBps);
    cJSON *b = cJSON_CreateObject();   /* where the time goes (configuration: the prediction the run is checked against) */
    cJSON_AddNumberToObject(b, "nic_processing", tx_ns + rx_total_ns);
    cJSON_AddNumberToObject(b, "serialisation", ser_ns + ser_req_ns);
    cJSON_AddNumberToObject(b, "switch", sw_ns * (op == RC_READ ? 2 : 1));
    cJSON_AddNumberToObject(b, "propagation", lat_ns * hops);
    cJSON_AddNumberToObject(b, "host_stack", 2 * host_ns);   /* RDMA: kernel bypass, none; TCP: both hosts' stacks */
    sim_report_metric_json(rep, "breakdown_ns", b);
    sim_report_metric(rep, "data_packets", (double)(small.data_pkts + big.data_pkts));
    sim_report_metric(rep, "acks", (double)(small.acks + big.acks));
    sim_report_metric(rep, "retransmitted_pkts", (double)(small.retransmitted + big.retransmitted));
    if (!c->quiet)
        fprintf(stderr, "rdma_latency: %s %llu B: %.3f us (%s); %llu B: %.2f GB/s of %.2f goodput\n", sim_param_str(p, "op"),
                (unsigned long long)bytes, lat_meas_ns / 1000.0, op == RC_READ ? "round trip" : "one way", (unsigned long long)large,
                GBps_meas, goodput_GBps);

    sim_check(rep, "conservation", small.ok && big.ok, "%s", !small.ok ? small.why : !big.ok ? big.why : "every packet, credit and message accounted for");
    sim_check(rep, "lossless_no_retransmission", small.retransmitted + big.retransmitted == 0 && small.naks + big.naks == 0,
              "%llu packets retransmitted, %llu NAKs on a lossless IB path", (unsigned long long)(small.retransmitted + big.retransmitted),
              (unsigned long long)(small.naks + big.naks));
    /* the ps of each hop's rounding and the NIC delays', and the 8-byte FC packets that may go ahead of a
     * data packet on each hop: one per ACK the sender frees, and the periodic ones of every VL */
    const double fc_ns = IB_FC_WIRE_BYTES / GBps;
    const topo_link tl = { .preset = pr, .GBps = GBps, .latency_ns = lat_ns };
    const double period_ns = ib_fc_period_bound_ns(&tl), pkts = ceil((double)bytes / mtu);
    const double periodic = lat_pred_ns < period_ns ? 0 : nc.port.vls * (1 + lat_pred_ns / period_ns);   /* the first go at link up */
    const double fc_allow = roce || tcp ? 0 : fc_ns * hops * (floor(pkts / nc.rc.ack_every) + periodic);   /* Ethernet: no credit frames */
    const double tol_ns = 0.001 * (2 * hops + 4) + fc_allow;
    if (lat_predicted)
        sim_check(rep, "latency_as_predicted", fabs(lat_meas_ns - lat_pred_ns) <= tol_ns,
              "%.4f ns measured vs %.4f ns from the configuration (NIC %g + %g, %u hops of %g ns, switch %g; +-%.3f ns: rounding "
              "and FC packets ahead)", lat_meas_ns, lat_pred_ns, tx_ns, rx_total_ns, hops, lat_ns, sw_ns, tol_ns);
    /* the large message: pipelined at the wire's rate unless credits or the window stall it (they do not with these buffers) */
    if (large_predicted)
        sim_check(rep, "large_message_as_predicted", fabs(large_meas_ns - large_pred_ns) <= 0.005 * large_pred_ns,
              "%.1f ns measured vs %.1f ns predicted (+-0.5%%)", large_meas_ns, large_pred_ns);
    sim_check(rep, "not_above_link_goodput", GBps_meas <= goodput_GBps * (1 + 1e-9), "%.3f GB/s vs %.3f goodput of the link", GBps_meas,
              goodput_GBps);
}

SIM_TEST(rdma_latency, "one RDMA WRITE/READ/SEND between two RC NICs through an IB switch: latency, large-message rate, per-layer breakdown",
         rdma_params, "large_bytes=262144", rdma_run)
