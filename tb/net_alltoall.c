/* net_alltoall: every host writes msg_bytes to every other host (one RDMA RC
 * WRITE per ordered pair) over a generated topology whose nodes take the
 * network kinds of the link preset (sim/topo_gen.c: ib-* -> ib_rnic +
 * ib_switch, roce-* and eth-* -> roce_nic + eth_switch; docs/topology.md). The
 * test only picks the kinds' settings; it never names a kind per node.
 * Prediction (configuration only): a host's link carries its (N-1) messages
 * out and (N-1) in, so nothing finishes before (N-1) msg_bytes / the link's
 * payload goodput; every message must complete exactly once at both ends, and
 * the lossless fabrics (IB; Ethernet with PFC) drop nothing. */
#include <time.h>

#include "models/network/ib_rnic.h"
#include "tb/roce_common.h"

#define A2A_LINKS "roce-100g|roce-200g|roce-400g|eth-25g|eth-100g|eth-200g|eth-400g|ib-hdr|ib-ndr|ib-xdr"

static const sim_param_def a2a_params[] = {
    SIM_PARAM_STRING("topo", "leafspine:4,2,4", "a generator (leafspine:L,S,H, fattree:K, star:N, ...); its nodes take the link's network kinds"),
    SIM_PARAM_ENUM("link", "roce-400g", A2A_LINKS, "link preset of every link: ib-* InfiniBand (ib_rnic, ib_switch), others Ethernet (roce_nic, eth_switch)"),
    SIM_PARAM_INT("msg_bytes", "65536", "B", 1, 1 << 30, "bytes every host writes to every other host"),
    SIM_PARAM_INT("mtu", "4096", "B", 256, 4096, "RDMA MTU (payload per packet)"),
    SIM_PARAM_ENUM("routing", "ecmp", TOPO_ROUTING_CHOICES, "routing tables (a flow keeps one path)"),
    SIM_PARAM_BOOL("pfc", "1", "Ethernet: PFC on the switches (0: lossy, tail drop)"),
    SIM_PARAM_BOOL("ecn", "1", "Ethernet: RED/ECN marking and DCQCN at the NICs"),
    SIM_PARAM_INT("buffer_bytes", "4194304", "B", 16384, 1000000000, "Ethernet: shared buffer of every switch"),
    SIM_PARAM_INT("vl_buffer_bytes", "65536", "B", 4352, 1 << 20, "InfiniBand: receive buffer per VL on every port"),
    SIM_PARAM_DOUBLE("rto_us", "1000", "us", 1, 1e7, "RC retransmission timeout (a ConnectX's default is far longer; a short one resends spuriously under congestion)"),
    SIM_PARAM_STRING("nic", "auto", "NIC preset (tx/rx processing; simrun list-presets), auto: 300 / 200 ns [assumed]; its link must be link="),
    SIM_PARAM_STRING("switch", "auto", "switch preset (radix, pipeline_ns; simrun list-presets), auto: 100 ns IB, 300 ns Ethernet [assumed]; its link must be link="),
    SIM_PARAM_END,
};

typedef struct a2a_totals {
    uint64_t done_req, done_resp, failed, data_pkts, retx_pkts, acks, cnps, drops, pauses;
    sim_time_ps last_ps;
} a2a_totals;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sums the messages' completions and the packets (data from the requesters' QPs, ACK/NAK from the responders'). */
static void a2a_sum(const sim_fabric *f, const topo *t, bool ib, const rnic_msg *msgs, unsigned n_msgs, a2a_totals *s)
{
    memset(s, 0, sizeof *s);
    for (unsigned i = 0; i < n_msgs; i++) {
        const void *src = sim_fabric_component(f, t->endpoint_node[msgs[i].src]);
        const void *dst = sim_fabric_component(f, t->endpoint_node[msgs[i].dst]);
        const rc_qp *qs, *qd;
        sim_time_ps rd;
        if (ib) {
            qs = ib_rnic_qp(src, msgs[i].dst);
            qd = ib_rnic_qp(dst, msgs[i].src);
            rd = ib_rnic_msg_times(dst, i)->responder_done_ps;
            s->done_req += ib_rnic_msg_times(src, i)->requester_done_ps != 0;
        } else {
            qs = roce_nic_flow_qp(src, i);
            qd = roce_nic_flow_qp(dst, i);
            rd = roce_nic_flow_done_ps(dst, i);
            s->done_req += roce_nic_flow_acked_ps(src, i) != 0;
        }
        s->done_resp += rd != 0;
        if (rd > s->last_ps) s->last_ps = rd;
        if (qs) {
            const rc_stats *st = rc_stats_get(qs);
            s->data_pkts += st->data_pkts;
            s->retx_pkts += st->retransmitted_pkts;
            s->failed += rc_failed(qs);
        }
        if (qd) s->acks += rc_stats_get(qd)->acks + rc_stats_get(qd)->naks;
    }
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        const void *comp = sim_fabric_component(f, v);
        if (!ib && t->nodes[v].endpoint >= 0) s->cnps += roce_nic_stats_get(comp)->cnps_sent;
        if (!ib && t->nodes[v].endpoint < 0) {
            eth_switch_stats ss = eth_switch_stats_get(comp);
            s->drops += ss.dropped;
            for (unsigned q = 0; q < t->nodes[v].nports; q++) {
                const eth_port *ep = eth_switch_port(comp, q);
                if (ep) s->pauses += eth_port_stats_get(ep).pause_sent;
            }
        }
    }
}


static void a2a_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *spec = sim_param_str(p, "topo"), *link = sim_param_str(p, "link");
    const uint64_t msg_bytes = (uint64_t)sim_param_int(p, "msg_bytes");
    const unsigned mtu = (unsigned)sim_param_int(p, "mtu");
    const enum topo_routing routing = (enum topo_routing)sim_param_enum(p, "routing");
    const topo_preset *pr = topo_preset_find(link);
    const bool ib = topo_preset_family(pr) == TOPO_FAMILY_IB;
    if (mtu & (mtu - 1)) sim_input_error("net_alltoall: mtu=%u; allowed: 256, 512, 1024, 2048, 4096", mtu);
    bool pfc = true, ecn = false;
    uint32_t vl_buf = 0;
    eth_switch_cfg esc;
    eth_switch_cfg_default(&esc);
    if (ib) {
        vl_buf = (uint32_t)sim_param_int(p, "vl_buffer_bytes");
        const char *why = "link=%s is InfiniBand: lossless by credits, no PFC, ECN or shared Ethernet buffer";
        sim_param_not_applicable(p, "pfc", why, link);
        sim_param_not_applicable(p, "ecn", why, link);
        sim_param_not_applicable(p, "buffer_bytes", why, link);
    } else {
        pfc = sim_param_bool(p, "pfc");
        ecn = sim_param_bool(p, "ecn");
        esc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
        esc.pfc = pfc;
        esc.ecn = ecn;
        sim_param_not_applicable(p, "vl_buffer_bytes", "link=%s is Ethernet: no virtual lanes", link);
    }
    const net_device_preset *nicp = net_device_param(p, "nic", false, link), *swp = net_device_param(p, "switch", true, link);
    const sim_time_ps rto_ps = (sim_time_ps)(sim_param_double(p, "rto_us") * 1e6 + 0.5);
    sim_test_configured(c);

    network_register_kinds();
    topo *t = topo_from_string_or_exit(spec, link);
    const char *want_ep = ib ? "ib_rnic" : "roce_nic";
    for (uint32_t e = 0; e < t->n_endpoints; e++)
        if (strcmp(t->nodes[t->endpoint_node[e]].kind->name, want_ep))
            sim_input_error("net_alltoall: topo=%s: node %s is a %s; allowed: a generator whose hosts take the network kind %s "
                            "(not kinds=generic, not a file naming other kinds)",
                            spec, t->nodes[t->endpoint_node[e]].name, t->nodes[t->endpoint_node[e]].kind->name, want_ep);
    for (uint32_t v = 0; swp && v < t->n_nodes; v++)
        if (t->nodes[v].endpoint < 0 && t->nodes[v].nports > swp->radix)
            sim_input_error("net_alltoall: topo=%s: switch %s has %u ports, switch=%s has %u; allowed: a topology within the preset's radix", spec,
                            t->nodes[v].name, t->nodes[v].nports, swp->name, swp->radix);
    const unsigned n = t->n_endpoints, n_msgs = n * (n - 1);
    rnic_msg *msgs = calloc(n_msgs, sizeof *msgs);
    roce_flow *flows = calloc(n_msgs, sizeof *flows);
    if (!msgs || !flows) sim_fatal("out of memory");
    for (unsigned a = 0, i = 0; a < n; a++)   /* a's messages in post order: a+1, a+2, ... (rotated: not all to host 0 first) */
        for (unsigned d = 1; d < n; d++, i++) {
            msgs[i] = (rnic_msg){ .src = a, .dst = (a + d) % n, .op = RC_WRITE, .bytes = msg_bytes, .post_ps = 0 };
            flows[i] = (roce_flow){ .src = a, .dst = (a + d) % n, .prio = 3, .payload_bytes = mtu, .bytes = msg_bytes, .op = RC_WRITE };
        }
    ib_rnic_cfg ic = { .rc = RC_CFG_DEFAULT, .sl = 0, .tx_ns = 300, .rx_ns = 200, .queue_pkts = 2, .msgs = msgs, .n_msgs = n_msgs };
    ic.rc.mtu = mtu;
    ib_switch_cfg isc = { .pipeline_ns = 100 };
    roce_nic_cfg nc = { .flows = flows, .n_flows = n_msgs, .dcqcn = ecn, .cnp_prio = 6, .queue_pkts = 2, .rc = true, .rcc = RC_CFG_DEFAULT,
                        .tx_ns = 300, .rx_ns = 200 };
    dcqcn_cfg_default(&nc.dc);
    ic.rc.rto_ps = nc.rcc.rto_ps = rto_ps;
    if (nicp) ic.tx_ns = nc.tx_ns = nicp->tx_ns, ic.rx_ns = nc.rx_ns = nicp->rx_ns;
    if (swp) isc.pipeline_ns = esc.pipeline_ns = swp->pipeline_ns;
    if (ib) {
        ib_port_cfg_default(&ic.port, 1, vl_buf);
        ib_port_cfg_default(&isc.port, 1, vl_buf);
    }
    sim_fabric_cfg fc = { .routing = routing, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "ib_rnic", &ic }, { "ib_switch", &isc }, { "roce_nic", &nc }, { "eth_switch", &esc } } };
    char err[512];
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("net_alltoall: topo=%s: %s", spec, err);

    /* the bound: every host's link carries (N-1) messages each way */
    const double G = roce_goodput_GBps(pr, mtu), ideal_ns = (double)msg_bytes * (n - 1) / G;
    const sim_time_ps bound = (sim_time_ps)(ideal_ns * 1000.0 * 200) + SIM_US(100000);
    const sim_time_ps step = (sim_time_ps)(ideal_ns * 1000.0 / 10) + SIM_US(2);
    a2a_totals s;
    double w0 = wall_now();
    for (;;) {
        a2a_sum(f, t, ib, msgs, n_msgs, &s);
        if ((s.done_req == n_msgs && s.done_resp == n_msgs) || s.failed || sim_now(c->k) >= bound) break;
        sim_fabric_run(f, sim_now(c->k) + step);
        sim_progress(c, (double)s.done_req / n_msgs, "%llu of %u messages done, %.1f us", (unsigned long long)s.done_req, n_msgs,
                     (double)sim_now(c->k) / 1e6);
    }
    /* the last ACKs, XONs and credits (IB's periodic FC packets never stop: a bounded tail) */
    sim_fabric_run(f, sim_now(c->k) + SIM_US(20));
    if (ib) sim_fabric_run_until_quiet(f, SIM_NS(20), 1000);   /* IB's flow-control packets: an instant between them */
    double wall_s = wall_now() - w0;
    a2a_sum(f, t, ib, msgs, n_msgs, &s);
    char why[512] = "";
    bool conserved = sim_fabric_check(f, true, why, sizeof why) == 0;
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);

    const double completion_ns = (double)s.last_ps / 1000.0;
    sim_report *rep = c->report;
    sim_report_metric(rep, "completion_us", completion_ns / 1000.0);
    sim_report_metric(rep, "goodput_GBps", completion_ns > 0 ? (double)msg_bytes * n_msgs / completion_ns : 0);
    sim_report_metric(rep, "per_host_GBps", completion_ns > 0 ? (double)msg_bytes * (n - 1) / completion_ns : 0);
    sim_report_metric(rep, "link_goodput_GBps", G);
    sim_report_metric(rep, "bound_completion_us", ideal_ns / 1000.0);
    sim_report_metric(rep, "hosts", n);
    sim_report_metric(rep, "switches", t->n_nodes - n);
    sim_report_metric(rep, "messages", n_msgs);
    sim_report_metric(rep, "data_pkts", (double)s.data_pkts);
    sim_report_metric(rep, "retransmitted_pkts", (double)s.retx_pkts);
    sim_report_metric(rep, "ack_pkts", (double)s.acks);
    sim_report_metric(rep, "cnp_pkts", (double)s.cnps);
    sim_report_metric(rep, "drops", (double)s.drops);
    sim_report_metric(rep, "pause_frames", (double)s.pauses);
    sim_report_metric(rep, "wall_s", wall_s);
    sim_report_metric(rep, "pkts_per_s", wall_s > 0 ? (double)s.data_pkts / wall_s : 0);
    sim_report_sim_json(c->report, "kinds", cJSON_CreateString(ib ? "ib_rnic+ib_switch" : "roce_nic+eth_switch"));
    if (!c->quiet)
        fprintf(stderr, "net_alltoall: %u hosts x %u msgs of %llu B on %s: %.1f us (bound %.1f), %llu data packets in %.2f s wall\n", n, n - 1,
                (unsigned long long)msg_bytes, link, completion_ns / 1000.0, ideal_ns / 1000.0, (unsigned long long)s.data_pkts, wall_s);

    sim_check(rep, "delivered_exactly_once", s.done_req == n_msgs && s.done_resp == n_msgs && !s.failed,
              "%llu of %u messages in at their responders and %llu acknowledged at their requesters, %llu QPs failed",
              (unsigned long long)s.done_resp, n_msgs, (unsigned long long)s.done_req, (unsigned long long)s.failed);
    sim_check(rep, "conservation", conserved, "%s", conserved ? "packets, buffers, credits and queue pairs consistent after the drain" : why);
    if (ib || pfc)   /* (a retransmission here is a timeout under congestion: reported, not a loss) */
        sim_check(rep, "lossless", s.drops == 0, "%llu dropped on a lossless fabric (%s); %llu packets retransmitted after timeouts",
                  (unsigned long long)s.drops, ib ? "IB credits" : "PFC", (unsigned long long)s.retx_pkts);
    sim_check(rep, "not_faster_than_host_links", completion_ns >= ideal_ns,
              "%.1f us vs %.1f us for (N-1) messages through a host's link", completion_ns / 1000.0, ideal_ns / 1000.0);
    sim_fabric_free(f);
    topo_free(t);
    free(msgs);
    free(flows);
}

SIM_TEST(net_alltoall, "all-to-all RDMA WRITEs over a generated InfiniBand or RoCE fabric (the generator's nodes take the network kinds "
         "of link=): completion, packets, every message exactly once, lossless", a2a_params, "", a2a_run)
