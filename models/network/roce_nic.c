/* Kind "roce_nic": a RoCE v2 NIC on one Ethernet port (roce.h).
 * Sender: each flow of this NIC has a rate limiter (DCQCN's reaction point:
 * Rc paces the flow's packets, wire bytes at Rc); the NIC keeps queue_pkts
 * packets per priority at the port, which honours PFC, so a paused priority
 * stops the flows behind it. Receiver: per-flow sequence check (a gap counts
 * as lost: no retransmission here) and, with DCQCN, the notification point:
 * an ECN-marked packet makes a CNP back to the sender at most once per
 * cnp_interval_us per flow. CNPs are 16 B payload (BTH + reserved) frames.
 * With cfg.rc each flow is one RC WRITE on a queue pair per flow at each end
 * (rc.h): the limiter paces the requester's packets (first sends and
 * retransmissions alike), the responder's ACKs and NAKs go at once on the
 * flow's priority, and the requester's timeout runs on the NIC's wake-ups.
 * A READ's responses come from its responder, which with DCQCN paces them with
 * a limiter of its own for the flow (the requester sends their CNPs back).
 * With cfg.tcp each flow is one message on a TCP connection (tcp.h) instead,
 * the same way, and the host stack's per-message CPU time on each side. */
#include "models/network/roce_nic_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CNP_PAYLOAD_BYTES 16u


/* A sender timer may now be due as early as t. */
static void timer_at(roce_nic *n, sim_time_ps t)
{
    if (t < n->tmr_ps) n->tmr_ps = t;
}

static void resp_mark(roce_nic *n, unsigned fl)
{
    if (n->resp_flag[fl]) return;
    n->resp_flag[fl] = 1;
    n->resp_ready[n->n_resp_ready++] = fl;
}

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

static void on_rc_done(void *ctx, uint32_t msg, rc_op op, bool requester, uint64_t bytes)
{
    (void)msg, (void)op, (void)bytes;
    qp_owner *o = ctx;
    if (requester) o->n->acked_ps[o->flow] = sim_now(o->n->k);
    else o->n->done_ps[o->flow] = sim_now(o->n->k);
}

static void on_tcp_done(void *ctx, uint32_t msg, bool sender, uint64_t bytes)
{
    (void)msg, (void)bytes;
    qp_owner *o = ctx;
    sim_time_ps host = (sim_time_ps)(o->n->cfg.host_ns * 1000.0 + 0.5);   /* the receiving host's stack */
    if (sender) o->n->acked_ps[o->flow] = sim_now(o->n->k);
    else o->n->done_ps[o->flow] = sim_now(o->n->k) + host;
}

static tcp_conn *make_conn(roce_nic *n, unsigned flow, const char *role)
{
    tcp_cfg c = n->cfg.tcpc;
    c.mss = n->cfg.flows[flow].payload_bytes;
    char name[TOPO_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s.%s%u", n->name, role, flow);
    n->owners[flow] = (qp_owner){ n, flow };
    return tcp_conn_new(&c, name, on_tcp_done, &n->owners[flow]);
}

/* A TCP segment of flow fl (data to its receiver, an ACK back to its sender). */
static sim_pkt *tcp_packet(roce_nic *n, tcp_conn *tc, const roce_flow *fl, unsigned flow, sim_time_ps now)
{
    tcp_seg g;
    if (!tcp_next_segment(tc, now, &g)) sim_fatal("%s: flow %u's connection offered a segment and had none", n->name, flow);
    sim_pkt *k = sim_pkt_alloc(&n->pool);
    memcpy(sim_pkt_ext(k), &g, sizeof g);
    k->src = n->index;
    k->dst = g.ack ? fl->src : fl->dst;
    k->tc = fl->prio;
    k->payload_bytes = g.len;
    k->wire_bytes = g.len + n->link->overhead_bytes - ROCE_TCP_FRAMING_LESS_BYTES;
    k->flow = flow;
    k->seq = g.seq;
    k->created_ps = now;
    return k;
}

/* Requester packets go to the flow's receiver, responder packets (ACK, NAK, READ responses) back to its sender. */
static bool from_requester(const rc_hdr *h) { return h->opcode == RC_DATA || h->opcode == RC_READ_REQ; }

static rc_qp *make_qp(roce_nic *n, unsigned flow, const char *role)
{
    rc_cfg c = n->cfg.rcc;
    c.mtu = n->cfg.flows[flow].payload_bytes;
    char name[TOPO_NAME_MAX + 32];
    snprintf(name, sizeof name, "%s.%s%u", n->name, role, flow);
    n->owners[flow] = (qp_owner){ n, flow };
    return rc_qp_new(&c, name, on_rc_done, &n->owners[flow]);
}

/* An RC packet of flow fl from its QP (its header in the packet's extension). */
static void rc_take(roce_nic *n, unsigned fl, const rc_hdr *h, sim_time_ps now);
static void tcp_take(roce_nic *n, unsigned fl, const tcp_seg *g, sim_time_ps now);

static sim_pkt *rc_packet(roce_nic *n, rc_qp *q, const roce_flow *fl, unsigned flow, sim_time_ps now)
{
    rc_hdr h;
    if (!rc_next_packet(q, now, &h)) sim_fatal("%s: flow %u's QP offered a packet and had none", n->name, flow);
    sim_pkt *k = sim_pkt_alloc(&n->pool);
    memcpy(sim_pkt_ext(k), &h, sizeof h);
    k->src = n->index;
    k->dst = from_requester(&h) ? fl->dst : fl->src;
    k->tc = fl->prio;
    k->payload_bytes = h.payload_bytes;
    k->wire_bytes = h.payload_bytes + n->link->overhead_bytes + rc_extra_header_bytes(&h);
    k->flow = flow;
    k->seq = h.psn;
    k->created_ps = now;
    return k;
}

static sim_time_ps pace_ps(uint32_t wire_bytes, double Gbps) { return (sim_time_ps)(wire_bytes * 8.0 / Gbps * 1000.0 + 0.5); }

static void trace_rate(roce_nic *n)
{
    if (n->tr && n->n_tx) sim_trace_u64(n->tr, n->tv_rate, (uint64_t)(n->tx[0].rp.rc_Gbps * 1000.0));
}

/* Timers, then every flow the limiter and the port's queue let go; sleeps until the next of either. */
static void run(void *ctx)
{
    roce_nic *n = ctx;
    sim_time_ps now = sim_now(n->k), next = SIM_TIME_MAX;
    unsigned want = n->cfg.queue_pkts ? n->cfg.queue_pkts : 2;
    /* the senders' timers (DCQCN's, the RTOs) only when one may be due: each is exact whenever it runs */
    const bool timers = now >= n->tmr_ps;
    if (timers) n->tmr_ps = SIM_TIME_MAX;
    if (n->cfg.dcqcn && timers) {
        for (unsigned i = 0; i < n->n_tx; i++) {
            dcqcn_rp_timers(&n->tx[i].rp, &n->cfg.dc, now);
            timer_at(n, dcqcn_rp_next_ps(&n->tx[i].rp));
        }
        for (unsigned i = 0; i < n->n_rd; i++) {
            dcqcn_rp_timers(&n->rd[i].rp, &n->cfg.dc, now);
            timer_at(n, dcqcn_rp_next_ps(&n->rd[i].rp));
        }
    }
    trace_rate(n);
    while (n->rxq_len && n->rxq[n->rxq_head].due_ps <= now) {
        struct rx_wait w = n->rxq[n->rxq_head];
        n->rxq_head = (n->rxq_head + 1) % n->rxq_cap;
        n->rxq_len--;
        if (n->cfg.tcp) tcp_take(n, w.flow, &w.seg, now);
        else rc_take(n, w.flow, &w.h, now);
    }
    if (n->rxq_len && n->rxq[n->rxq_head].due_ps < next) next = n->rxq[n->rxq_head].due_ps;
    /* the receiving ends' answers at once, in flow order (a run drains them all, so only those that took a packet have any) */
    if (n->n_resp_ready > 1) qsort(n->resp_ready, n->n_resp_ready, sizeof *n->resp_ready, cmp_unsigned);
    for (unsigned r = 0; r < n->n_resp_ready; r++) {
        unsigned f = n->resp_ready[r];
        n->resp_flag[f] = 0;
        if (n->cfg.tcp)   /* the receivers' ACKs */
            while (n->rx_tc[f] && tcp_has_segment(n->rx_tc[f])) {
                n->st.made++;
                eth_port_enqueue(n->port, tcp_packet(n, n->rx_tc[f], &n->cfg.flows[f], f, now), n->cfg.flows[f].prio, 0);
            }
        if (n->cfg.rc && n->rd_of[f] < 0)   /* the responders' ACKs/NAKs (and READ responses without DCQCN) */
            while (n->rx_qp[f] && rc_has_packet(n->rx_qp[f])) {
                n->st.made++;
                eth_port_enqueue(n->port, rc_packet(n, n->rx_qp[f], &n->cfg.flows[f], f, now), n->cfg.flows[f].prio, 0);
            }
    }
    n->n_resp_ready = 0;
    if (n->cfg.tcp && timers)   /* the senders' timeouts */
        for (unsigned i = 0; i < n->n_tx; i++) {
            tcp_timer(n->tx[i].tc, now);
            timer_at(n, tcp_timer_due(n->tx[i].tc));
        }
    if (n->cfg.rc && timers)   /* the requesters' timeouts */
        for (unsigned i = 0; i < n->n_tx; i++) {
            rc_timer(n->tx[i].qp, now);
            timer_at(n, rc_timer_due(n->tx[i].qp));
        }
    /* READ responses under DCQCN: each responder QP's packets at its limiter's rate, as the port's queue takes them */
    for (unsigned i = 0; i < n->n_rd; i++) {
        struct rd_slot *d = &n->rd[i];
        const roce_flow *fl = &n->cfg.flows[d->flow];
        rc_qp *q = n->rx_qp[d->flow];
        if (!q || !rc_has_packet(q)) continue;
        if (d->next_ps > now) {
            if (d->next_ps < next) next = d->next_ps;
            continue;
        }
        if (eth_port_queued(n->port, fl->prio) >= want) continue;   /* woken by on_tx */
        sim_pkt *k = rc_packet(n, q, fl, d->flow, now);
        d->next_ps = now + pace_ps(k->wire_bytes, d->rp.rc_Gbps);
        dcqcn_rp_sent(&d->rp, &n->cfg.dc, k->wire_bytes);
        n->st.made++;
        eth_port_enqueue(n->port, k, fl->prio, 0);
        if (rc_has_packet(q) && d->next_ps < next) next = d->next_ps;
    }
    /* Priorities whose port queue is full: their flows wait for on_tx, which wakes us when the queue moves, so once
     * every priority in use is full the rest of the round can neither send nor need an earlier wake-up. */
    uint8_t full = 0;
    for (unsigned q = 0; q < ETH_PRIOS; q++)
        if ((n->used_prios >> q & 1) && eth_port_queued(n->port, (uint8_t)q) >= want) full |= (uint8_t)(1u << q);
    for (unsigned j = 0; j < n->n_tx && full != n->used_prios; j++) {
        tx_flow *t = &n->tx[(n->rr + j) % n->n_tx];
        const roce_flow *fl = &n->cfg.flows[t->index];
        if (n->cfg.rc ? !rc_has_packet(t->qp) : n->cfg.tcp ? !tcp_has_segment(t->tc) : t->sent_bytes >= fl->bytes) continue;
        if (t->next_ps > now) {
            if (t->next_ps < next) next = t->next_ps;
            continue;
        }
        if (eth_port_queued(n->port, fl->prio) >= want) continue;   /* woken by on_tx */
        sim_pkt *k;
        if (n->cfg.rc) {
            k = rc_packet(n, t->qp, fl, t->index, now);
            timer_at(n, rc_timer_due(t->qp));
        } else if (n->cfg.tcp) {
            k = tcp_packet(n, t->tc, fl, t->index, now);
            timer_at(n, tcp_timer_due(t->tc));
        } else {
            k = sim_pkt_alloc(&n->pool);
            uint32_t pay = fl->payload_bytes;
            if (fl->bytes != UINT64_MAX && fl->bytes - t->sent_bytes < pay) pay = (uint32_t)(fl->bytes - t->sent_bytes);
            k->src = n->index;
            k->dst = fl->dst;
            k->tc = fl->prio;
            k->payload_bytes = pay;
            k->wire_bytes = pay + n->link->overhead_bytes;
            k->flow = t->index;
            k->seq = t->seq++;
            k->created_ps = now;
        }
        t->sent_bytes += k->payload_bytes;
        t->next_ps = now + pace_ps(k->wire_bytes, n->cfg.dcqcn ? t->rp.rc_Gbps : n->line_Gbps);
        if (n->cfg.dcqcn) dcqcn_rp_sent(&t->rp, &n->cfg.dc, k->wire_bytes);
        n->st.made++;
        eth_port_enqueue(n->port, k, fl->prio, 0);
        if (eth_port_queued(n->port, fl->prio) >= want) full |= (uint8_t)(1u << fl->prio);
        if (t->next_ps < next) next = t->next_ps;
    }
    n->rr = n->n_tx ? (n->rr + 1) % n->n_tx : 0;
    if (n->tmr_ps < next) next = n->tmr_ps;
    if (next != SIM_TIME_MAX) sim_event_notify_at(&n->wake, next - now);
}

static void on_tx(void *owner, eth_port *p, sim_pkt *pkt, uint32_t tag)
{
    (void)p, (void)tag;
    roce_nic *n = owner;
    if (!(pkt->flags & ETH_PKT_F_CNP)) n->st.sent++;
    sim_event_notify_at(&n->wake, 0);
}

static void send_cnp(roce_nic *n, const sim_pkt *data)
{
    sim_pkt *k = sim_pkt_alloc(&n->pool);
    k->src = n->index;
    k->dst = data->src;
    k->tc = n->cfg.cnp_prio;
    k->flags = ETH_PKT_F_CNP;
    k->payload_bytes = 0;
    k->wire_bytes = CNP_PAYLOAD_BYTES + n->link->overhead_bytes;
    k->flow = data->flow;
    k->created_ps = sim_now(n->k);
    n->st.cnps_sent++;
    eth_port_enqueue(n->port, k, n->cfg.cnp_prio, 0);
}

/* An RC packet to its QP: the requester's (ACK, NAK, READ response) or the responder's (made on its first packet). */
static void rc_take(roce_nic *n, unsigned fl, const rc_hdr *h, sim_time_ps now)
{
    if (!from_requester(h)) {
        int slot = n->tx_of[fl];
        if (slot < 0) sim_fatal("%s: a response for flow %u, which it does not send", n->name, fl);
        rc_receive(n->tx[slot].qp, now, h);
        timer_at(n, rc_timer_due(n->tx[slot].qp));
    } else {
        if (!n->rx_qp[fl]) n->rx_qp[fl] = make_qp(n, fl, "rx");
        rc_receive(n->rx_qp[fl], now, h);
        resp_mark(n, fl);
    }
    sim_event_notify_at(&n->wake, 0);   /* what it answers, or sends next */
}

static void tcp_take(roce_nic *n, unsigned fl, const tcp_seg *g, sim_time_ps now)
{
    if (g->ack) {
        int slot = n->tx_of[fl];
        if (slot < 0) sim_fatal("%s: an ACK for flow %u, which it does not send", n->name, fl);
        tcp_receive(n->tx[slot].tc, now, g);
        timer_at(n, tcp_timer_due(n->tx[slot].tc));
    } else {
        if (!n->rx_tc[fl]) n->rx_tc[fl] = make_conn(n, fl, "rx");
        tcp_receive(n->rx_tc[fl], now, g);
        resp_mark(n, fl);
    }
    sim_event_notify_at(&n->wake, 0);
}

/* The NIC's receive processing: the QP (or connection) has the packet rx_ns after its last byte. */
static void rx_wait(roce_nic *n, unsigned fl, const void *hdr, sim_time_ps now)
{
    if (n->rxq_len == n->rxq_cap) {
        uint32_t cap = n->rxq_cap ? 2 * n->rxq_cap : 64;
        struct rx_wait *q = malloc(cap * sizeof *q);
        if (!q) sim_fatal("out of memory");
        for (uint32_t i = 0; i < n->rxq_len; i++) q[i] = n->rxq[(n->rxq_head + i) % n->rxq_cap];
        free(n->rxq);
        n->rxq = q;
        n->rxq_head = 0;
        n->rxq_cap = cap;
    }
    struct rx_wait *w = &n->rxq[(n->rxq_head + n->rxq_len++) % n->rxq_cap];
    w->due_ps = now + (sim_time_ps)(n->cfg.rx_ns * 1000.0 + 0.5);
    w->flow = fl;
    if (n->cfg.tcp) memcpy(&w->seg, hdr, sizeof w->seg);
    else memcpy(&w->h, hdr, sizeof w->h);
    sim_event_notify_at(&n->wake, w->due_ps - now);
}

/* The notification point: an ECN-marked data packet makes a CNP back to the packet's sender, at most one per flow per interval. */
static void notify(roce_nic *n, const sim_pkt *pkt, unsigned fl, sim_time_ps now)
{
    if (!pkt->ecn) return;
    n->st.ecn_marked++;
    sim_time_ps gap = (sim_time_ps)(n->cfg.dc.cnp_interval_us * 1e6 + 0.5);
    if (n->cfg.dcqcn && (n->last_cnp_ps[fl] == SIM_TIME_MAX || now >= n->last_cnp_ps[fl] + gap)) {
        n->last_cnp_ps[fl] = now;
        send_cnp(n, pkt);
    }
}

static void on_rx(void *owner, eth_port *p, sim_pkt *pkt)
{
    (void)p;
    roce_nic *n = owner;
    if (pkt->dst != n->index) sim_fatal("%s: packet for endpoint %u arrived at endpoint %u", n->name, pkt->dst, n->index);
    if (pkt->flow >= n->cfg.n_flows) sim_fatal("%s: packet of unknown flow %llu", n->name, (unsigned long long)pkt->flow);
    unsigned fl = (unsigned)pkt->flow;
    sim_time_ps now = sim_now(n->k);
    if (pkt->flags & ETH_PKT_F_CNP) {   /* reaction point */
        int slot = n->tx_of[fl];
        if (slot < 0 && n->rd_of[fl] < 0) sim_fatal("%s: CNP for flow %u, which it does not send", n->name, fl);
        n->st.cnps_received++;
        if (n->cfg.dcqcn) {   /* the flow's limiter: the requester's, or the responder's of a READ */
            dcqcn_rp *rp = slot >= 0 ? &n->tx[slot].rp : &n->rd[n->rd_of[fl]].rp;
            dcqcn_rp_timers(rp, &n->cfg.dc, now);
            dcqcn_rp_cnp(rp, &n->cfg.dc, now);
            timer_at(n, dcqcn_rp_next_ps(rp));
            /* the packet already scheduled keeps its time; later ones go at the new rate */
            trace_rate(n);
            sim_event_notify_at(&n->wake, 0);
        }
        sim_pkt_free(pkt);
        return;
    }
    if (n->cfg.tcp) {   /* the connections keep the order and recover losses */
        const tcp_seg *g = sim_pkt_ext_const(pkt);
        bool ack = g->ack;
        if (n->cfg.rx_ns > 0) rx_wait(n, fl, g, now);
        else tcp_take(n, fl, g, now);
        if (ack) {
            sim_pkt_free(pkt);
            return;
        }
    } else if (n->cfg.rc) {   /* the QPs keep the order and recover losses */
        const rc_hdr *h = sim_pkt_ext_const(pkt);
        bool to_requester = !from_requester(h);
        if (n->cfg.rx_ns > 0) rx_wait(n, fl, h, now);
        else rc_take(n, fl, h, now);
        if (to_requester) {   /* ACK, NAK, READ response: the data the requester counts is the QP's */
            if (h->opcode == RC_READ_RESP) {
                n->rx_bytes[fl] += pkt->payload_bytes;
                notify(n, pkt, fl, now);   /* a READ's data: its CNPs go back to the responder */
            }
            sim_pkt_free(pkt);
            return;
        }
    } else {
        if (pkt->seq < n->expect[fl]) n->st.out_of_order++;
        else if (pkt->seq > n->expect[fl]) n->st.lost += pkt->seq - n->expect[fl];
        if (pkt->seq >= n->expect[fl]) n->expect[fl] = pkt->seq + 1;
    }
    n->st.received++;
    n->st.received_payload_bytes += pkt->payload_bytes;
    n->rx_bytes[fl] += pkt->payload_bytes;
    notify(n, pkt, fl, now);
    sim_pkt_free(pkt);
}

static bool eth_preset(const topo_link *l)
{
    return l->preset && (!strncmp(l->preset->name, "eth-", 4) || !strncmp(l->preset->name, "roce-", 5));
}

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    static roce_nic_cfg defaults;
    const roce_nic_cfg *c = sim_fabric_kind_cfg(f, "roce_nic");
    if (!c) {
        dcqcn_cfg_default(&defaults.dc);
        c = &defaults;
    }
    if (c->dcqcn && dcqcn_cfg_check(&c->dc, why, why_n)) return NULL;
    if (c->cnp_prio >= ETH_PRIOS) { snprintf(why, why_n, "cnp_prio=%u; allowed 0..7", c->cnp_prio); return NULL; }
    if (c->rc && c->tcp) { snprintf(why, why_n, "rc and tcp together; allowed one transport"); return NULL; }
    if (!(c->tx_ns >= 0) || !(c->rx_ns >= 0) || !(c->host_ns >= 0)) { snprintf(why, why_n, "tx_ns=%g rx_ns=%g host_ns=%g; allowed >= 0", c->tx_ns, c->rx_ns, c->host_ns); return NULL; }
    const topo_node *tn = &t->nodes[node];
    if (tn->nports != 1 || tn->port_link[0] < 0) { snprintf(why, why_n, "a roce_nic has one connected port"); return NULL; }
    const topo_link *l = &t->links[tn->port_link[0]];
    if (!eth_preset(l)) {
        snprintf(why, why_n, "link preset %s is not Ethernet; allowed: eth-*, roce-*", l->preset ? l->preset->name : "(none)");
        return NULL;
    }
    for (unsigned i = 0; i < c->n_flows; i++) {
        const roce_flow *fl = &c->flows[i];
        if (fl->src != (uint32_t)tn->endpoint) continue;
        if (fl->payload_bytes < 256 || fl->payload_bytes > 4096) { snprintf(why, why_n, "flow %u: mtu=%u; allowed 256..4096", i, fl->payload_bytes); return NULL; }
        if (fl->dst >= t->n_endpoints || fl->dst == fl->src) { snprintf(why, why_n, "flow %u: destination %u; allowed another endpoint", i, fl->dst); return NULL; }
        if (fl->prio >= ETH_PRIOS) { snprintf(why, why_n, "flow %u: priority %u; allowed 0..7", i, fl->prio); return NULL; }
        if (!(fl->start_us >= 0)) { snprintf(why, why_n, "flow %u: start_us=%g; allowed >= 0", i, fl->start_us); return NULL; }
        if (c->rc && (fl->bytes == UINT64_MAX || !fl->bytes)) { snprintf(why, why_n, "flow %u: an RC message needs 1 or more bytes, not endless", i); return NULL; }
        if (c->tcp && (fl->bytes == UINT64_MAX || !fl->bytes)) { snprintf(why, why_n, "flow %u: a TCP message needs 1 or more bytes, not endless", i); return NULL; }
        if (!c->rc && fl->op != RC_WRITE && !(c->tcp && fl->op == RC_SEND)) { snprintf(why, why_n, "flow %u: SEND and READ need rc (queue pairs); tcp sends only", i); return NULL; }
        if (c->tcp && fl->op != RC_SEND) { snprintf(why, why_n, "flow %u: TCP carries a SEND (a message), not an RDMA WRITE or READ", i); return NULL; }
    }
    roce_nic *n = calloc(1, sizeof *n);
    if (!n) sim_fatal("out of memory");
    n->f = f;
    n->k = sim_fabric_node_kernel(f, node);
    n->node = node;
    n->index = (uint32_t)tn->endpoint;
    n->cfg = *c;
    n->link = l;
    n->line_Gbps = l->GBps * 8;
    snprintf(n->name, sizeof n->name, "%s", tn->name);
    if (c->rc || c->tcp) sim_pkt_pool_init_ext(&n->pool, n->name, sizeof(rc_hdr) > sizeof(tcp_seg) ? sizeof(rc_hdr) : sizeof(tcp_seg));
    else sim_pkt_pool_init(&n->pool, n->name);
    size_t nf = c->n_flows ? c->n_flows : 1;
    n->rx_qp = calloc(nf, sizeof *n->rx_qp);
    n->rx_tc = calloc(nf, sizeof *n->rx_tc);
    if (!n->rx_tc) sim_fatal("out of memory");
    n->owners = calloc(nf, sizeof *n->owners);
    n->done_ps = calloc(nf, sizeof *n->done_ps);
    n->acked_ps = calloc(nf, sizeof *n->acked_ps);
    if (!n->rx_qp || !n->owners || !n->done_ps || !n->acked_ps) sim_fatal("out of memory");
    n->tx = calloc(nf, sizeof *n->tx);
    n->tx_of = malloc(nf * sizeof *n->tx_of);
    n->rx_bytes = calloc(nf, sizeof *n->rx_bytes);
    n->expect = calloc(nf, sizeof *n->expect);
    n->last_cnp_ps = malloc(nf * sizeof *n->last_cnp_ps);
    if (!n->tx || !n->tx_of || !n->rx_bytes || !n->expect || !n->last_cnp_ps) sim_fatal("out of memory");
    n->resp_ready = malloc(nf * sizeof *n->resp_ready);
    n->resp_flag = calloc(nf, 1);
    if (!n->resp_ready || !n->resp_flag) sim_fatal("out of memory");
    n->tmr_ps = 0;   /* the first run looks at every timer */
    n->rd_of = malloc(nf * sizeof *n->rd_of);
    if (!n->rd_of) sim_fatal("out of memory");
    for (unsigned i = 0; i < nf; i++) n->rd_of[i] = -1;
    for (unsigned i = 0; c->rc && c->dcqcn && i < c->n_flows; i++)
        if (c->flows[i].dst == n->index && c->flows[i].op == RC_READ) n->n_rd++;
    n->rd = calloc(n->n_rd ? n->n_rd : 1, sizeof *n->rd);
    if (!n->rd) sim_fatal("out of memory");
    for (unsigned i = 0, j = 0; j < n->n_rd; i++)
        if (c->flows[i].dst == n->index && c->flows[i].op == RC_READ) {
            n->rd[j] = (struct rd_slot){ .flow = i };
            dcqcn_rp_init(&n->rd[j].rp, n->line_Gbps);
            n->rd_of[i] = (int)j++;
        }
    for (unsigned i = 0; i < nf; i++) n->tx_of[i] = -1, n->last_cnp_ps[i] = SIM_TIME_MAX;
    for (unsigned i = 0; i < c->n_flows; i++) {
        if (c->flows[i].src != n->index) continue;
        tx_flow *tf = &n->tx[n->n_tx];
        tf->index = i;
        dcqcn_rp_init(&tf->rp, n->line_Gbps);
        tf->next_ps = (sim_time_ps)(c->flows[i].start_us * 1e6 + (c->rc || c->tcp ? c->tx_ns * 1000.0 : 0) + (c->tcp ? c->host_ns * 1000.0 : 0) + 0.5);
        if (c->rc) {
            tf->qp = make_qp(n, i, "tx");
            rc_post(tf->qp, c->flows[i].op, c->flows[i].bytes);
        }
        if (c->tcp) {
            tf->tc = make_conn(n, i, "tx");
            tcp_post(tf->tc, c->flows[i].bytes);
        }
        n->used_prios |= (uint8_t)(1u << c->flows[i].prio);
        n->tx_of[i] = (int)n->n_tx++;
    }
    sim_event_init(&n->wake, n->k, "roce_nic.wake");
    sim_method_init(&n->proc, n->k, n->name, run, n);
    sim_sensitive(&n->proc, &n->wake);
    sim_dont_initialize(&n->proc);
    return n;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    roce_nic *n = comp;
    sim_trace *tr = sim_fabric_trace(n->f);
    char scope[16];
    snprintf(scope, sizeof scope, "p%u", p->port);
    sim_trace_push_scope(tr, n->name);
    n->port = eth_port_new(n->k, p, ETH_SCHED_STRICT, p->name, on_rx, on_tx, n, tr, scope);
    if (tr && n->n_tx) {
        n->tr = tr;
        n->tv_rate = sim_trace_add_var(tr, "rate_Mbps", 32);
        trace_rate(n);
    }
    sim_trace_pop_scope(tr);
}

static void start(void *comp)
{
    roce_nic *n = comp;
    sim_time_ps first = SIM_TIME_MAX, now = sim_now(n->k);
    for (unsigned i = 0; i < n->n_tx; i++)
        if (n->tx[i].next_ps < first) first = n->tx[i].next_ps;
    if (first != SIM_TIME_MAX) sim_event_notify_at(&n->wake, first > now ? first - now : 0);
}

void roce_nic_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "roce_nic", .build = build, .ingress = NULL, .connect = connect, .start = start, .check = roce_nic_check,
        .reset_stats = roce_nic_reset, .held = roce_nic_held, .free = roce_nic_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
