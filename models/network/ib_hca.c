/* Kind "ib_hca": a source and sink on one IB port. The source keeps
 * queue_pkts packets per VL at the port, so it offers line rate and the link
 * layer (credits, arbitration) decides what goes; the sink checks per-flow
 * order and frees each packet's blocks on arrival (a consumer at line rate),
 * except on stalled VLs, whose packets it keeps (a stuck consumer). */
#include "models/network/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ib_hca {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, index;
    ib_hca_cfg cfg;
    ib_port *port;
    const topo_link *link;
    sim_pkt_pool pool;
    char name[TOPO_NAME_MAX + 1];
    unsigned rr[IB_MAX_VLS];          /* per VL: next flow to look at */
    uint64_t *sent, *recv, *win_bytes, *expect;   /* per flow */
    sim_pkt **held; size_t n_held, cap_held;       /* stalled VLs' packets */
    ib_hca_stats st;
};

static const ib_hca_cfg *cfg_of(sim_fabric *f)
{
    static ib_hca_cfg defaults;
    static bool init;
    const ib_hca_cfg *c = sim_fabric_kind_cfg(f, "ib_hca");
    if (c) return c;
    if (!init) {
        ib_port_cfg_default(&defaults.port, 2, 65536);
        init = true;
    }
    return &defaults;
}

static void refill(ib_hca *h)
{
    for (unsigned v = 0; v < h->cfg.port.vls; v++) {
        unsigned want = h->cfg.queue_pkts ? h->cfg.queue_pkts : 2;
        while (ib_port_queued(h->port, v) < want) {
            int pick = -1;
            for (unsigned i = 0; i < h->cfg.n_flows && pick < 0; i++) {
                unsigned fl = (h->rr[v] + i) % h->cfg.n_flows;
                const ib_flow *f = &h->cfg.flows[fl];
                if (f->src == h->index && h->cfg.port.sl2vl[f->sl & (IB_SLS - 1)] == v && h->sent[fl] < f->packets) pick = (int)fl;
            }
            if (pick < 0) break;
            const ib_flow *f = &h->cfg.flows[pick];
            h->rr[v] = ((unsigned)pick + 1) % h->cfg.n_flows;
            sim_pkt *k = sim_pkt_alloc(&h->pool);
            k->src = h->index;
            k->dst = f->dst;
            k->tc = f->sl;
            k->payload_bytes = f->payload_bytes;
            k->wire_bytes = f->payload_bytes + h->link->overhead_bytes;
            k->flow = (uint64_t)pick;
            k->seq = h->sent[pick]++;
            k->created_ps = sim_now(h->k);
            h->st.made++;
            ib_port_enqueue(h->port, k, v, 0);
        }
    }
}

static void on_tx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag)
{
    (void)p, (void)pkt, (void)vl, (void)tag;
    ib_hca *h = owner;
    h->st.sent++;
    refill(h);
}

static void on_rx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl)
{
    ib_hca *h = owner;
    if (pkt->dst != h->index) sim_fatal("%s: packet for endpoint %u arrived at endpoint %u", h->name, pkt->dst, h->index);
    if (pkt->flow >= h->cfg.n_flows) sim_fatal("%s: packet of unknown flow %llu", h->name, (unsigned long long)pkt->flow);
    unsigned fl = (unsigned)pkt->flow;
    if (pkt->seq != h->expect[fl]) h->st.out_of_order++;
    h->expect[fl] = pkt->seq + 1;
    h->recv[fl]++;
    h->st.received++;
    h->st.received_payload_bytes += pkt->payload_bytes;
    sim_time_ps now = sim_now(h->k);
    if (h->st.received == h->cfg.warmup_pkts + 1) h->st.window_start_ps = now;
    else if (h->st.received > h->cfg.warmup_pkts + 1) {
        h->st.window_payload_bytes += pkt->payload_bytes;
        h->win_bytes[fl] += pkt->payload_bytes;
    }
    h->st.last_arrival_ps = now;
    if (h->cfg.stall_vl_mask & (1u << vl)) {
        if (h->n_held == h->cap_held) {
            h->cap_held = h->cap_held ? 2 * h->cap_held : 64;
            h->held = realloc(h->held, h->cap_held * sizeof *h->held);
            if (!h->held) sim_fatal("out of memory");
        }
        h->held[h->n_held++] = pkt;
        h->st.held = h->n_held;
        return;
    }
    uint32_t blocks = ib_blocks(pkt->wire_bytes);
    sim_pkt_free(pkt);
    ib_port_release(p, vl, blocks);
}

static bool ib_preset(const topo_link *l) { return l->preset && !strncmp(l->preset->name, "ib-", 3); }

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    const ib_hca_cfg *c = cfg_of(f);
    if (ib_port_cfg_check(&c->port, why, why_n)) return NULL;
    const topo_node *n = &t->nodes[node];
    if (n->nports != 1 || n->port_link[0] < 0) { snprintf(why, why_n, "an ib_hca has one connected port"); return NULL; }
    const topo_link *l = &t->links[n->port_link[0]];
    if (!ib_preset(l)) { snprintf(why, why_n, "link preset %s is not InfiniBand; allowed: ib-hdr, ib-ndr, ib-xdr", l->preset ? l->preset->name : "(none)"); return NULL; }
    for (unsigned i = 0; i < c->n_flows; i++) {
        const ib_flow *fl = &c->flows[i];
        if (fl->src != (uint32_t)n->endpoint) continue;
        if (fl->payload_bytes < 256 || fl->payload_bytes > 4096) { snprintf(why, why_n, "flow %u: mtu=%u; allowed 256..4096", i, fl->payload_bytes); return NULL; }
        if (fl->dst >= t->n_endpoints || fl->dst == fl->src) { snprintf(why, why_n, "flow %u: destination %u; allowed another endpoint", i, fl->dst); return NULL; }
        if (fl->sl >= IB_SLS) { snprintf(why, why_n, "flow %u: SL %u; allowed 0..15", i, fl->sl); return NULL; }
        uint32_t need = ib_blocks(fl->payload_bytes + l->overhead_bytes);
        if (ib_adv_blocks(c->port.vl_buffer_bytes) < need) {
            snprintf(why, why_n, "vl_buffer_bytes=%u holds less than one %u-byte packet (%u blocks of 64 B = %u B)", c->port.vl_buffer_bytes,
                     fl->payload_bytes + l->overhead_bytes, need, need * IB_BLOCK_BYTES);
            return NULL;
        }
    }
    ib_hca *h = calloc(1, sizeof *h);
    if (!h) sim_fatal("out of memory");
    h->f = f;
    h->k = sim_fabric_node_kernel(f, node);
    h->node = node;
    h->index = (uint32_t)n->endpoint;
    h->cfg = *c;
    h->link = l;
    snprintf(h->name, sizeof h->name, "%s", n->name);
    sim_pkt_pool_init(&h->pool, h->name);
    size_t nf = c->n_flows ? c->n_flows : 1;
    h->sent = calloc(nf, sizeof *h->sent);
    h->recv = calloc(nf, sizeof *h->recv);
    h->win_bytes = calloc(nf, sizeof *h->win_bytes);
    h->expect = calloc(nf, sizeof *h->expect);
    if (!h->sent || !h->recv || !h->win_bytes || !h->expect) sim_fatal("out of memory");
    return h;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    ib_hca *h = comp;
    sim_trace *tr = sim_fabric_trace(h->f);
    char scope[16];
    snprintf(scope, sizeof scope, "p%u", p->port);
    sim_trace_push_scope(tr, h->name);
    h->port = ib_port_new(h->k, p, &h->cfg.port, p->name, on_rx, on_tx, h, tr, scope);
    sim_trace_pop_scope(tr);
}

static void start(void *comp)
{
    ib_hca *h = comp;
    ib_port_start(h->port);
    refill(h);
}

static int check(const void *comp, bool drained, char *why, size_t why_n)
{
    const ib_hca *h = comp;
    if (ib_port_check(h->port, drained, why, why_n)) return -1;
    uint64_t queued = 0;
    for (unsigned v = 0; v < h->cfg.port.vls; v++) queued += ib_port_queued(h->port, v);
    if (h->st.made != h->st.sent + queued) {
        snprintf(why, why_n, "%s: made %llu packets, sent %llu, queued %llu", h->name, (unsigned long long)h->st.made,
                 (unsigned long long)h->st.sent, (unsigned long long)queued);
        return -1;
    }
    if (h->st.out_of_order) {
        snprintf(why, why_n, "%s: %llu packets out of order", h->name, (unsigned long long)h->st.out_of_order);
        return -1;
    }
    return 0;
}

static void held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const ib_hca *h = comp;
    if (h->port) ib_port_for_each_held(h->port, fn, ctx);
    for (size_t i = 0; i < h->n_held; i++) fn(h->held[i], ctx);
}

static void reset(void *comp) { ib_port_reset_stats(((ib_hca *)comp)->port); }

static void hca_free(void *comp)
{
    ib_hca *h = comp;
    ib_port_free(h->port);
    sim_pkt_pool_free(&h->pool);
    free(h->sent), free(h->recv), free(h->win_bytes), free(h->expect), free(h->held);
    free(h);
}

const ib_hca_stats *ib_hca_stats_get(const ib_hca *h) { return &h->st; }
uint64_t ib_hca_flow_sent(const ib_hca *h, unsigned flow) { return flow < h->cfg.n_flows ? h->sent[flow] : 0; }
uint64_t ib_hca_flow_received(const ib_hca *h, unsigned flow) { return flow < h->cfg.n_flows ? h->recv[flow] : 0; }
uint64_t ib_hca_flow_window_bytes(const ib_hca *h, unsigned flow) { return flow < h->cfg.n_flows ? h->win_bytes[flow] : 0; }
const ib_port *ib_hca_port(const ib_hca *h) { return h->port; }

void ib_hca_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "ib_hca", .build = build, .ingress = NULL, .connect = connect, .start = start, .check = check,
        .reset_stats = reset, .held = held, .free = hca_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
