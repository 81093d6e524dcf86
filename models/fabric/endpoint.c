/* The fabric's endpoint (kind "endpoint"): a Bernoulli source per packet slot
 * and a sink that checks per-flow order and measures latency. */
#include "models/fabric/endpoint.h"
#include "sim/pdes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SOURCE_QUEUE_PKTS 64

struct fabric_endpoint {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, index, n;          /* endpoint index among n */
    fabric_endpoint_cfg cfg;
    sim_fabric_port port;
    bool connected;
    sim_pkt_pool pool;
    sim_rng rng;
    char name[TOPO_NAME_MAX + 1];
    /* source */
    sim_pkt **q;                       /* FIFO ring of queued packets */
    uint32_t q_head, q_len, q_cap;
    double slot_ps;                    /* wire time of one packet at the link rate */
    double log_no_arrival;             /* log1p(-load): the geometric skip's divisor, once (not per packet) */
    uint64_t next_slot;                /* the next arrival slot (index; time = floor(idx * slot_ps)) */
    bool source_done;
    uint64_t walk;                     /* alltoall position */
    uint64_t *seq_to, *sent_to;        /* per destination */
    sim_process proc;
    sim_time_ps wake_ps;               /* a pending wake-up (SIM_TIME_MAX: none) */
    /* sink */
    uint64_t *expect_from, *recv_from, *win_bytes_from;
    fabric_endpoint_stats st;
    double link_GBps;                  /* its link's rate, from the topology (a replica has no port) */
    uint64_t replica_backlog;          /* a replica: its rank's source backlog (sim_fabric_gather) */
};

/* floor(slot * slot_ps): the product is >= 0, so the conversion's truncation is the floor (no libm call). */
static sim_time_ps slot_time(const fabric_endpoint *ep, uint64_t slot) { return (sim_time_ps)((double)slot * ep->slot_ps); }

/* Next arrival slot after `from` (inclusive): geometric skip = Bernoulli(load) per slot. */
static uint64_t next_arrival(fabric_endpoint *ep, uint64_t from)
{
    if (ep->cfg.load >= 1) return from;
    double u = 1.0 - sim_rng_double(&ep->rng);   /* (0, 1] */
    return from + (uint64_t)(log(u) / ep->log_no_arrival);   /* >= 0: truncation = floor */
}

static uint32_t wire_of(const fabric_endpoint *ep, uint32_t payload) { return payload + ep->port.link->overhead_bytes; }

static void enqueue(fabric_endpoint *ep, uint32_t dst, uint32_t payload, sim_time_ps created)
{
    sim_pkt *k = sim_pkt_alloc(&ep->pool);
    k->src = ep->index;
    k->dst = dst;
    k->payload_bytes = payload;
    k->wire_bytes = wire_of(ep, payload);
    k->flow = (uint64_t)ep->index * ep->n + dst;
    k->seq = ep->seq_to[dst]++;
    k->created_ps = created;
    ep->sent_to[dst]++;
    ep->st.made_pkts++;
    ep->q[(ep->q_head + ep->q_len++) % ep->q_cap] = k;
}

static uint32_t pick_dst(fabric_endpoint *ep)
{
    if (ep->cfg.dst_map) return ep->cfg.dst_map[ep->index];
    return sim_pattern_next(ep->cfg.pattern, ep->index, &ep->rng, &ep->walk);
}

/* Makes the packets whose arrival slots have come, while the queue has room. */
static void generate(fabric_endpoint *ep, sim_time_ps now)
{
    while (!ep->source_done && ep->q_len < ep->q_cap) {
        sim_time_ps t = slot_time(ep, ep->next_slot);
        if (t >= ep->cfg.stop_ps) { ep->source_done = true; break; }
        if (t > now) break;
        enqueue(ep, pick_dst(ep), ep->cfg.pkt_bytes, t);
        ep->next_slot = next_arrival(ep, ep->next_slot + 1);
    }
}

static void wake(fabric_endpoint *ep, sim_time_ps at)
{
    sim_time_ps now = sim_now(ep->k);
    if (at <= now) at = now + 1;   /* wake_at needs a delay > 0 */
    if (ep->wake_ps != SIM_TIME_MAX && ep->wake_ps > now && ep->wake_ps <= at) return;   /* one already comes first */
    ep->wake_ps = at;
    sim_process_wake_at(ep->k, &ep->proc, at - now);
}

static void pump(fabric_endpoint *ep)
{
    sim_time_ps now = sim_now(ep->k);
    if (!ep->connected) return;
    generate(ep, now);
    while (ep->q_len) {
        sim_time_ps free_ps = sim_link_tx_free_ps(ep->port.out);
        if (free_ps > now) { wake(ep, free_ps); return; }
        sim_pkt *k = ep->q[ep->q_head];
        topo_hop h = topo_route_next(sim_fabric_routes(ep->f), ep->node, -1, k->dst, k->flow);
        k->vc = h.vc;
        bool sent;
        if (ep->port.out_credit_types) {
            unsigned type = h.vc < ep->port.out_credit_types ? h.vc : 0;
            uint32_t cr = sim_fabric_credits(k->wire_bytes, ep->port.out_credit_bytes);
            k->injected_ps = now;
            sent = sim_link_try_send(ep->port.out, k, k->wire_bytes, type, cr);
            if (!sent) return;   /* the credit callback pumps again */
        } else {
            k->injected_ps = now;
            sim_link_send(ep->port.out, k, k->wire_bytes);
            sent = true;
        }
        ep->q_head = (ep->q_head + 1) % ep->q_cap;
        ep->q_len--;
        ep->st.sent_pkts++;
        generate(ep, now);
    }
    if (!ep->source_done) wake(ep, slot_time(ep, ep->next_slot));
}

static void proc_fn(void *ctx)
{
    fabric_endpoint *ep = ctx;
    if (ep->wake_ps <= sim_now(ep->k)) ep->wake_ps = SIM_TIME_MAX;
    pump(ep);
}

static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)l, (void)type, (void)credits;
    pump(ctx);
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    fabric_endpoint *ep = ctx;
    sim_pkt *k = msg;
    sim_time_ps now = sim_link_arrival_ps(l);
    k->hops++;
    ep->st.received_pkts++;
    if (k->dst != ep->index) sim_fatal("%s: received a packet for endpoint %u (misrouted)", ep->name, k->dst);
    if (k->src < ep->n) {
        ep->recv_from[k->src]++;
        if (k->seq < ep->expect_from[k->src]) ep->st.out_of_order++;
        else ep->expect_from[k->src] = k->seq + 1;
    }
    double lat_ns = (double)(now - k->created_ps) / 1000.0;
    ep->st.last_latency_ns = lat_ns;
    ep->st.last_hops = k->hops;
    if (now >= ep->cfg.warmup_ps && now < ep->cfg.end_ps) {
        ep->st.win_pkts++;
        ep->st.win_wire_bytes += k->wire_bytes;
        ep->st.win_payload_bytes += k->payload_bytes;
        ep->st.win_hops += k->hops;
        if (k->src < ep->n) ep->win_bytes_from[k->src] += k->wire_bytes;
        /* whole ps: the histograms' sums are exact, so merging ranks' histograms in any order gives one result */
        if (ep->cfg.latency_hist) sim_hist_add(ep->cfg.latency_hist, (double)(now - k->created_ps));
        if (ep->cfg.net_latency_hist) sim_hist_add(ep->cfg.net_latency_hist, (double)(now - k->injected_ps));
    }
    sim_pkt_free(k);
}

static void *ep_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    static const fabric_endpoint_cfg defaults = { .load = 0, .pkt_bytes = 256, .end_ps = SIM_TIME_MAX, .stop_ps = 0 };
    const fabric_endpoint_cfg *cfg = sim_fabric_kind_cfg(f, "endpoint");
    if (!cfg) cfg = &defaults;
    if (cfg->load < 0 || cfg->load > 1) { snprintf(why, why_n, "load=%g: allowed 0..1", cfg->load); return NULL; }
    if (cfg->pkt_bytes < 1 || cfg->pkt_bytes > (1u << 24)) { snprintf(why, why_n, "pkt_bytes=%u: allowed 1..16777216", cfg->pkt_bytes); return NULL; }
    if (cfg->pattern && cfg->pattern->n != t->n_endpoints) {
        snprintf(why, why_n, "the pattern is for %u endpoints, the topology has %u", cfg->pattern->n, t->n_endpoints);
        return NULL;
    }
    unsigned connected = 0;
    double link_GBps = 0;
    for (unsigned q = 0; q < t->nodes[node].nports; q++)
        if (t->nodes[node].port_link[q] >= 0) connected++, link_GBps = t->links[t->nodes[node].port_link[q]].GBps;
    if (connected > 1) {
        /* Multi-port terminals (a GPU with 18 NVLinks) are the gpu kind's (the collectives issue). */
        snprintf(why, why_n, "%u links: the endpoint kind (a traffic port) takes one link; give each link its own endpoint",
                 connected);
        return NULL;
    }
    fabric_endpoint *ep = calloc(1, sizeof *ep);
    ep->f = f;
    ep->k = sim_fabric_node_kernel(f, node);
    ep->node = node;
    ep->index = (uint32_t)t->nodes[node].endpoint;
    ep->n = t->n_endpoints;
    ep->cfg = *cfg;
    ep->link_GBps = link_GBps;
    ep->log_no_arrival = log1p(-cfg->load);
    snprintf(ep->name, sizeof ep->name, "%s", t->nodes[node].name);
    sim_pkt_pool_init(&ep->pool, ep->name);
    sim_rng_seed(&ep->rng, sim_fabric_node_seed(f, node));
    ep->q_cap = cfg->source_queue_pkts ? cfg->source_queue_pkts : DEFAULT_SOURCE_QUEUE_PKTS;
    ep->q = calloc(ep->q_cap, sizeof *ep->q);
    ep->seq_to = calloc(ep->n, sizeof *ep->seq_to);
    ep->sent_to = calloc(ep->n, sizeof *ep->sent_to);
    ep->expect_from = calloc(ep->n, sizeof *ep->expect_from);
    ep->recv_from = calloc(ep->n, sizeof *ep->recv_from);
    ep->win_bytes_from = calloc(ep->n, sizeof *ep->win_bytes_from);
    ep->wake_ps = SIM_TIME_MAX;
    bool sends = (cfg->pattern || cfg->dst_map) && cfg->load > 0;
    if (sends && cfg->dst_map) sends = cfg->dst_map[ep->index] < ep->n && cfg->dst_map[ep->index] != ep->index;
    else if (sends) sends = sim_pattern_sends(cfg->pattern, ep->index);
    ep->source_done = !sends;
    sim_method_init(&ep->proc, ep->k, ep->name, proc_fn, ep);
    sim_dont_initialize(&ep->proc);
    return ep;
}

static void ep_connect(void *comp, const sim_fabric_port *p)
{
    fabric_endpoint *ep = comp;
    if (ep->connected) sim_fatal("%s: the endpoint component has one port; %s is a second", ep->name, p->name);
    ep->port = *p;
    ep->connected = true;
    ep->slot_ps = (double)wire_of(ep, ep->cfg.pkt_bytes) * 1000.0 / p->link->GBps;
    sim_link_set_receiver(p->in, on_recv, ep);
    sim_link_set_credit_callback(p->out, on_credit, ep);
}

static void ep_start(void *comp)
{
    fabric_endpoint *ep = comp;
    if (!ep->connected) sim_fatal("%s: endpoint without a connected port", ep->name);
    if (!ep->source_done) {
        ep->next_slot = next_arrival(ep, 0);
        wake(ep, slot_time(ep, ep->next_slot));
    }
}

static int ep_check(const void *comp, bool drained, char *why, size_t why_n)
{
    const fabric_endpoint *ep = comp;
    if (ep->pool.live != ep->q_len) {
        snprintf(why, why_n, "%llu packets of its pool are out but %u are queued: %llu are in the network",
                 (unsigned long long)ep->pool.live, ep->q_len, (unsigned long long)(ep->pool.live - ep->q_len));
        if (drained) return -1;
    }
    if (ep->st.made_pkts != ep->st.sent_pkts + ep->q_len) {
        snprintf(why, why_n, "made %llu != sent %llu + queued %u", (unsigned long long)ep->st.made_pkts,
                 (unsigned long long)ep->st.sent_pkts, ep->q_len);
        return -1;
    }
    if (drained && ep->q_len) {
        snprintf(why, why_n, "%u packets still queued at the source after the drain", ep->q_len);
        return -1;
    }
    return 0;
}

static void ep_reset_stats(void *comp)
{
    fabric_endpoint *ep = comp;
    ep->st.win_pkts = ep->st.win_wire_bytes = ep->st.win_payload_bytes = ep->st.win_hops = 0;
    memset(ep->win_bytes_from, 0, ep->n * sizeof *ep->win_bytes_from);
}

static void ep_held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const fabric_endpoint *ep = comp;
    for (uint32_t i = 0; i < ep->q_len; i++) fn(ep->q[(ep->q_head + i) % ep->q_cap], ctx);
}

static void ep_free(void *comp)
{
    fabric_endpoint *ep = comp;
    sim_pkt_pool_free(&ep->pool);   /* the fabric gave back its queue and what the network held */
    free(ep->q);
    free(ep->seq_to);
    free(ep->sent_to);
    free(ep->expect_from);
    free(ep->recv_from);
    free(ep->win_bytes_from);
    free(ep);
}

void fabric_endpoint_send_one(fabric_endpoint *ep, uint32_t dst, uint32_t payload_bytes)
{
    if (dst >= ep->n || dst == ep->index) sim_fatal("%s: send_one to endpoint %u (allowed 0..%u, not itself)", ep->name, dst, ep->n - 1);
    if (ep->q_len == ep->q_cap) sim_fatal("%s: send_one with a full source queue", ep->name);
    enqueue(ep, dst, payload_bytes, sim_now(ep->k));
    pump(ep);
}

void fabric_endpoint_get_stats(const fabric_endpoint *ep, fabric_endpoint_stats *s) { *s = ep->st; }
uint32_t fabric_endpoint_index(const fabric_endpoint *ep) { return ep->index; }
const uint64_t *fabric_endpoint_sent_to(const fabric_endpoint *ep) { return ep->sent_to; }
const uint64_t *fabric_endpoint_received_from(const fabric_endpoint *ep) { return ep->recv_from; }
const uint64_t *fabric_endpoint_win_bytes_from(const fabric_endpoint *ep) { return ep->win_bytes_from; }
double fabric_endpoint_link_GBps(const fabric_endpoint *ep) { return ep->link_GBps; }
uint64_t fabric_endpoint_backlog(const fabric_endpoint *ep) { return ep->connected ? ep->q_len : ep->replica_backlog; }

/* A run over ranks: the statistics, the backlog and the per-peer counts, in that order. */
static void ep_pack_stats(const void *comp, sim_pdes_buf *b)
{
    const fabric_endpoint *ep = comp;
    uint64_t backlog = ep->q_len;
    sim_pdes_buf_put(b, &ep->st, sizeof ep->st);
    sim_pdes_buf_put(b, &backlog, sizeof backlog);
    sim_pdes_buf_put(b, ep->sent_to, ep->n * sizeof *ep->sent_to);
    sim_pdes_buf_put(b, ep->recv_from, ep->n * sizeof *ep->recv_from);
    sim_pdes_buf_put(b, ep->win_bytes_from, ep->n * sizeof *ep->win_bytes_from);
}

static void ep_unpack_stats(void *comp, const unsigned char *d, size_t len)
{
    fabric_endpoint *ep = comp;
    const size_t per_peer = ep->n * sizeof(uint64_t);
    if (len != sizeof ep->st + sizeof(uint64_t) + 3 * per_peer) sim_fatal("%s: %zu bytes of gathered statistics", ep->name, len);
    memcpy(&ep->st, d, sizeof ep->st);
    d += sizeof ep->st;
    memcpy(&ep->replica_backlog, d, sizeof ep->replica_backlog);
    d += sizeof ep->replica_backlog;
    memcpy(ep->sent_to, d, per_peer);
    memcpy(ep->recv_from, d + per_peer, per_peer);
    memcpy(ep->win_bytes_from, d + 2 * per_peer, per_peer);
}

static const sim_fabric_kind endpoint_kind = {
    .name = "endpoint",
    .build = ep_build,
    .ingress = NULL,   /* a sink absorbs at line rate: no flow control into it */
    .connect = ep_connect,
    .start = ep_start,
    .check = ep_check,
    .reset_stats = ep_reset_stats,
    .held = ep_held,
    .free = ep_free,
    .partitionable = true,   /* its kernel is its node's; its links neither defer nor count marks */
    .pack_stats = ep_pack_stats,
    .unpack_stats = ep_unpack_stats,
};

void fabric_endpoint_register(void) { sim_fabric_kind_register(&endpoint_kind); }
