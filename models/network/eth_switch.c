/* Kind "eth_switch": a shared-buffer Ethernet switch for RoCE v2 (roce.h).
 *
 * A packet is admitted when its last byte arrived and counted against its
 * (ingress port, priority) until it starts on its output wire: in the shared
 * buffer while that ingress is below the dynamic XOFF threshold
 * alpha x (free shared bytes), beyond it in the ingress's headroom. With PFC,
 * an ingress past XOFF (or using headroom) sends a PAUSE of pause_quanta back
 * up its link, renewed every half pause time while it stays past XON
 * (XOFF - xon_offset_bytes, headroom empty), and an XON when it falls below:
 * the HPCC ns-3 switch MMU's rules. A packet that finds its headroom full is
 * dropped and counted (a configuration error: the headroom did not cover the
 * link). Lossy (pfc off): tail drop when the shared buffer is full or the
 * egress queue is past alpha x free. After the pipeline delay a packet joins
 * its egress priority queue, where RED marks it (ECN) by that queue's bytes. */
#include "models/network/roce.h"

#include "sim/rng.h"
#include "sim/ring.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pipe_entry {
    sim_time_ps ready_ps;
    sim_pkt *pkt;
    uint32_t tag;
    uint8_t out_port;
} pipe_entry;

typedef struct ingress_acct {
    uint64_t shared_bytes, headroom_bytes, max_headroom_bytes;
    bool paused;
    sim_time_ps pause_sent_ps;
} ingress_acct;

struct eth_switch {
    sim_fabric *f;
    sim_kernel *k;
    const topo_routes *routes;
    uint32_t node;
    eth_switch_cfg cfg;
    sim_time_ps pipeline_ps;
    eth_port *ports[TOPO_MAX_PORTS];
    uint32_t headroom[TOPO_MAX_PORTS];
    sim_time_ps refresh_ps[TOPO_MAX_PORTS];   /* half a PAUSE's time at the port's rate */
    ingress_acct in[TOPO_MAX_PORTS][ETH_PRIOS];
    uint64_t shared_used, headroom_used;
    char name[TOPO_NAME_MAX + 1];
    pipe_entry *pipe; size_t p_head, p_len, p_cap;
    sim_rng rng;
    sim_process proc;
    sim_event wake;
    eth_switch_stats st;
};

void eth_switch_cfg_default(eth_switch_cfg *c)
{
    *c = (eth_switch_cfg){ .buffer_bytes = 4u << 20, .pfc = true, .dt_alpha = 1.0 / 8, .xon_offset_bytes = 3072,
                           .headroom_bytes = 0, .pause_quanta = ETH_PAUSE_MAX_QUANTA, .ecn = true, .kmin_bytes = 5000,
                           .kmax_bytes = 200000, .pmax = 0.01, .sched = ETH_SCHED_STRICT, .pipeline_ns = 300,
                           .mtu_bytes = 9216 };
}

int eth_switch_cfg_check(const eth_switch_cfg *c, char *why, size_t why_n)
{
    if (c->buffer_bytes < 16384) { snprintf(why, why_n, "buffer_bytes=%llu; allowed >= 16384", (unsigned long long)c->buffer_bytes); return -1; }
    if (!(c->dt_alpha > 0 && c->dt_alpha <= 64)) { snprintf(why, why_n, "dt_alpha=%g; allowed (0, 64]", c->dt_alpha); return -1; }
    if (c->ecn && !(c->kmin_bytes >= 0 && c->kmax_bytes > c->kmin_bytes)) {
        snprintf(why, why_n, "kmin_bytes=%g kmax_bytes=%g; allowed 0 <= kmin < kmax", c->kmin_bytes, c->kmax_bytes);
        return -1;
    }
    if (c->ecn && !(c->pmax > 0 && c->pmax <= 1)) { snprintf(why, why_n, "pmax=%g; allowed (0, 1]", c->pmax); return -1; }
    if (!(c->pipeline_ns >= 0)) { snprintf(why, why_n, "pipeline_ns=%g; allowed >= 0", c->pipeline_ns); return -1; }
    if (c->pfc && !c->pause_quanta) { snprintf(why, why_n, "pause_quanta=0; allowed 1..65535"); return -1; }
    return 0;
}

uint32_t eth_headroom_bytes(const eth_switch_cfg *c, const topo_link *l)
{
    /* Mellanox: MTU of sender + MTU of receiver + 3840 B + what the cable holds both ways */
    return 2 * c->mtu_bytes + 3840 + (uint32_t)ceil(2 * l->GBps * l->latency_ns);
}

static uint64_t xoff_bytes(const eth_switch *s)
{
    uint64_t free_b = s->shared_used < s->cfg.buffer_bytes ? s->cfg.buffer_bytes - s->shared_used : 0;
    return (uint64_t)(s->cfg.dt_alpha * (double)free_b);
}

static void pause_ingress(eth_switch *s, unsigned in, unsigned prio, uint16_t quanta)
{
    ingress_acct *a = &s->in[in][prio];
    a->paused = quanta != 0;
    a->pause_sent_ps = sim_now(s->k);
    eth_port_send_pfc(s->ports[in], prio, quanta);
}

/* PFC state of one ingress priority after its bytes changed. */
static void pfc_update(eth_switch *s, unsigned in, unsigned prio)
{
    if (!s->cfg.pfc) return;
    ingress_acct *a = &s->in[in][prio];
    uint64_t thr = xoff_bytes(s);
    if (!a->paused && (a->headroom_bytes || a->shared_bytes >= thr)) {
        pause_ingress(s, in, prio, s->cfg.pause_quanta);
        if (s->p_len == 0) sim_event_notify_at(&s->wake, s->refresh_ps[in]);
    } else if (a->paused && !a->headroom_bytes && a->shared_bytes + s->cfg.xon_offset_bytes <= thr)
        pause_ingress(s, in, prio, 0);
}

/* Renews pauses about to run out; returns the next renewal due (SIM_TIME_MAX: none). */
static sim_time_ps refresh_pauses(eth_switch *s, sim_time_ps now)
{
    sim_time_ps next = SIM_TIME_MAX;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) {
        if (!s->ports[i]) continue;
        for (unsigned p = 0; p < ETH_PRIOS; p++) {
            ingress_acct *a = &s->in[i][p];
            if (!a->paused) continue;
            pfc_update(s, i, p);   /* maybe XON by now (the free space grew) */
            if (!a->paused) continue;
            if (a->pause_sent_ps + s->refresh_ps[i] <= now) pause_ingress(s, i, p, s->cfg.pause_quanta);
            sim_time_ps due = a->pause_sent_ps + s->refresh_ps[i];
            if (due < next) next = due;
        }
    }
    return next;
}

static void on_rx(void *owner, eth_port *p, sim_pkt *pkt)
{
    eth_switch *s = owner;
    if (pkt->dst == SIM_PKT_GROUP) sim_fatal("%s: multicast is not modelled in the Ethernet switch", s->name);
    unsigned in = eth_port_number(p), prio = pkt->tc & (ETH_PRIOS - 1);
    topo_hop h = topo_route_next(s->routes, s->node, (int)in, pkt->dst, pkt->flow);
    if (!s->ports[h.port]) sim_fatal("%s: route to endpoint %u leaves by unconnected port %u", s->name, pkt->dst, h.port);
    s->st.received++;
    uint32_t b = pkt->wire_bytes;
    ingress_acct *a = &s->in[in][prio];
    uint32_t in_headroom = 0;
    if (s->cfg.pfc) {
        if (a->shared_bytes + b <= xoff_bytes(s) && s->shared_used + b <= s->cfg.buffer_bytes && !a->headroom_bytes) {
            a->shared_bytes += b;
            s->shared_used += b;
        } else if (a->headroom_bytes + b <= s->headroom[in]) {
            a->headroom_bytes += b;
            s->headroom_used += b;
            in_headroom = b;
            if (a->headroom_bytes > a->max_headroom_bytes) a->max_headroom_bytes = a->headroom_bytes;
        } else {   /* the headroom did not absorb what was in flight: a configuration error */
            s->st.headroom_drops++;
            s->st.dropped++;
            sim_pkt_free(pkt);
            return;
        }
        pfc_update(s, in, prio);
    } else {
        uint64_t qb = eth_port_queued_bytes(s->ports[h.port], prio);
        if (s->shared_used + b > s->cfg.buffer_bytes || qb + b > xoff_bytes(s)) {
            s->st.dropped++;
            sim_pkt_free(pkt);
            return;
        }
        a->shared_bytes += b;
        s->shared_used += b;
    }
    if (s->shared_used > s->st.max_shared_used_bytes) s->st.max_shared_used_bytes = s->shared_used;
    if (s->p_len == s->p_cap) {
        s->pipe = sim_ring_grow(s->pipe, sizeof *s->pipe, s->p_head, s->p_len, &s->p_cap, 64);
        s->p_head = 0;
    }
    sim_time_ps now = sim_now(s->k);
    uint32_t tag = (uint32_t)in << 24 | prio << 20 | in_headroom;
    s->pipe[(s->p_head + s->p_len) & (s->p_cap - 1)] = (pipe_entry){ now + s->pipeline_ps, pkt, tag, h.port };
    s->p_len++;
    if (s->p_len == 1) sim_event_notify_at(&s->wake, s->pipeline_ps);
}

/* RED on the egress queue: no mark below Kmin, probability rising to Pmax at Kmax, always above. */
static void ecn_mark(eth_switch *s, sim_pkt *pkt, uint64_t queue_bytes)
{
    if (!s->cfg.ecn || (pkt->flags & ETH_PKT_F_CNP)) return;
    double q = (double)queue_bytes, pr;
    if (q <= s->cfg.kmin_bytes) return;
    if (q >= s->cfg.kmax_bytes) pr = 1;
    else pr = s->cfg.pmax * (q - s->cfg.kmin_bytes) / (s->cfg.kmax_bytes - s->cfg.kmin_bytes);
    if (sim_rng_bernoulli(&s->rng, pr)) {
        if (!pkt->ecn) s->st.marked++;
        pkt->ecn = 1;
    }
}

static void run(void *ctx)
{
    eth_switch *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->p_len && s->pipe[s->p_head].ready_ps <= now) {
        pipe_entry e = s->pipe[s->p_head];
        s->p_head = (s->p_head + 1) & (s->p_cap - 1);
        s->p_len--;
        unsigned prio = (e.tag >> 20) & 0xf;
        ecn_mark(s, e.pkt, eth_port_queued_bytes(s->ports[e.out_port], prio));
        eth_port_enqueue(s->ports[e.out_port], e.pkt, prio, e.tag);
    }
    sim_time_ps next = s->cfg.pfc ? refresh_pauses(s, now) : SIM_TIME_MAX;
    if (s->p_len && s->pipe[s->p_head].ready_ps < next) next = s->pipe[s->p_head].ready_ps;
    if (next != SIM_TIME_MAX) sim_event_notify_at(&s->wake, next > now ? next - now : 0);
}

/* A packet started on its output wire: it leaves the buffer (headroom first). */
static void on_tx(void *owner, eth_port *p, sim_pkt *pkt, uint32_t tag)
{
    (void)p;
    eth_switch *s = owner;
    unsigned in = tag >> 24, prio = (tag >> 20) & 0xf;
    uint32_t hb = tag & 0xfffff, sb = pkt->wire_bytes - hb;
    ingress_acct *a = &s->in[in][prio];
    if (a->headroom_bytes < hb || a->shared_bytes < sb || s->shared_used < sb)
        sim_fatal("%s: ingress %u priority %u releases more than it holds", s->name, in, prio);
    a->headroom_bytes -= hb;
    s->headroom_used -= hb;
    a->shared_bytes -= sb;
    s->shared_used -= sb;
    s->st.forwarded++;
    pfc_update(s, in, prio);
}

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    static eth_switch_cfg defaults;
    static bool init;
    const eth_switch_cfg *c = sim_fabric_kind_cfg(f, "eth_switch");
    if (!c) {
        if (!init) eth_switch_cfg_default(&defaults), init = true;
        c = &defaults;
    }
    if (eth_switch_cfg_check(c, why, why_n)) return NULL;
    const topo *t = sim_fabric_topo(f);
    const topo_node *n = &t->nodes[node];
    eth_switch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    for (unsigned q = 0; q < n->nports; q++) {
        if (n->port_link[q] < 0) continue;
        const topo_link *l = &t->links[n->port_link[q]];
        if (!l->preset || (strncmp(l->preset->name, "eth-", 4) && strncmp(l->preset->name, "roce-", 5))) {
            snprintf(why, why_n, "port %u: link preset %s is not Ethernet; allowed: eth-*, roce-*", q, l->preset ? l->preset->name : "(none)");
            free(s);
            return NULL;
        }
        s->headroom[q] = c->headroom_bytes ? c->headroom_bytes : eth_headroom_bytes(c, l);
        double quantum_ps = ETH_PAUSE_QUANTUM_BITS / 8.0 / l->GBps * 1000.0;
        s->refresh_ps[q] = (sim_time_ps)(c->pause_quanta * quantum_ps / 2);
        if (!s->refresh_ps[q]) s->refresh_ps[q] = 1;
    }
    s->f = f;
    s->k = sim_fabric_node_kernel(f, node);
    s->routes = sim_fabric_routes(f);
    s->node = node;
    s->cfg = *c;
    s->pipeline_ps = (sim_time_ps)(c->pipeline_ns * 1000.0 + 0.5);
    snprintf(s->name, sizeof s->name, "%s", n->name);
    sim_rng_seed(&s->rng, sim_fabric_node_seed(f, node));
    sim_event_init(&s->wake, s->k, "eth_switch.wake");
    sim_method_init(&s->proc, s->k, s->name, run, s);
    sim_sensitive(&s->proc, &s->wake);
    sim_dont_initialize(&s->proc);
    return s;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    eth_switch *s = comp;
    sim_trace *tr = sim_fabric_trace(s->f);
    char scope[16];
    snprintf(scope, sizeof scope, "p%u", p->port);
    sim_trace_push_scope(tr, s->name);
    s->ports[p->port] = eth_port_new(s->k, p, s->cfg.sched, p->name, on_rx, on_tx, s, tr, scope);
    sim_trace_pop_scope(tr);
}

static void add_bytes(sim_pkt *k, void *ctx) { *(uint64_t *)ctx += k->wire_bytes; }

static int check(const void *comp, bool drained, char *why, size_t why_n)
{
    const eth_switch *s = comp;
    uint64_t queued = 0, held_bytes = 0, acct = 0;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) {
        if (!s->ports[i]) continue;
        if (eth_port_check(s->ports[i], drained, why, why_n)) return -1;
        for (unsigned p = 0; p < ETH_PRIOS; p++) {
            queued += eth_port_queued(s->ports[i], p);
            acct += s->in[i][p].shared_bytes + s->in[i][p].headroom_bytes;
        }
        eth_port_for_each_held(s->ports[i], add_bytes, &held_bytes);
    }
    for (size_t i = 0; i < s->p_len; i++) held_bytes += s->pipe[(s->p_head + i) & (s->p_cap - 1)].pkt->wire_bytes;
    if (s->st.received != s->st.forwarded + s->st.dropped + s->p_len + queued) {
        snprintf(why, why_n, "%s: received %llu, forwarded %llu, dropped %llu, in the pipeline %zu, queued %llu", s->name,
                 (unsigned long long)s->st.received, (unsigned long long)s->st.forwarded, (unsigned long long)s->st.dropped,
                 s->p_len, (unsigned long long)queued);
        return -1;
    }
    if (acct != held_bytes || acct != s->shared_used + s->headroom_used) {
        snprintf(why, why_n, "%s: ingress accounts hold %llu bytes, the buffer %llu, the packets inside take %llu", s->name,
                 (unsigned long long)acct, (unsigned long long)(s->shared_used + s->headroom_used), (unsigned long long)held_bytes);
        return -1;
    }
    if (s->shared_used > s->cfg.buffer_bytes) {
        snprintf(why, why_n, "%s: shared buffer holds %llu of %llu bytes", s->name, (unsigned long long)s->shared_used,
                 (unsigned long long)s->cfg.buffer_bytes);
        return -1;
    }
    return 0;
}

static void held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const eth_switch *s = comp;
    for (size_t i = 0; i < s->p_len; i++) fn(s->pipe[(s->p_head + i) & (s->p_cap - 1)].pkt, ctx);
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) eth_port_for_each_held(s->ports[i], fn, ctx);
}

static void reset(void *comp)
{
    eth_switch *s = comp;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) eth_port_reset_stats(s->ports[i]);
}

static void switch_free(void *comp)
{
    eth_switch *s = comp;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) eth_port_free(s->ports[i]);
    free(s->pipe);
    free(s);
}

eth_switch_stats eth_switch_stats_get(const eth_switch *s)
{
    eth_switch_stats st = s->st;
    st.in_pipeline = s->p_len;
    st.shared_used_bytes = s->shared_used;
    st.headroom_used_bytes = s->headroom_used;
    return st;
}
const eth_port *eth_switch_port(const eth_switch *s, unsigned port) { return port < TOPO_MAX_PORTS ? s->ports[port] : NULL; }

uint64_t eth_switch_max_headroom_used(const eth_switch *s, uint32_t *headroom_bytes)
{
    uint64_t m = 0;
    uint32_t h = 0;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) {
        if (!s->ports[i]) continue;
        if (!h || s->headroom[i] < h) h = s->headroom[i];
        for (unsigned p = 0; p < ETH_PRIOS; p++)
            if (s->in[i][p].max_headroom_bytes > m) m = s->in[i][p].max_headroom_bytes;
    }
    if (headroom_bytes) *headroom_bytes = h;
    return m;
}

void eth_switch_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "eth_switch", .build = build, .ingress = NULL, .connect = connect, .start = NULL, .check = check,
        .reset_stats = reset, .held = held, .free = switch_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
