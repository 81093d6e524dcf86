/* Kind "ib_switch": an IB port (ib_port.h) on every port, routing from the
 * fabric's tables (topo_route_next: the same routes the generic switch
 * takes), store and forward with a fixed pipeline. A packet keeps its blocks
 * in the input port's VL buffer until it starts on its output wire, so every
 * VL of every input is credit-limited on its own and nothing is ever dropped.
 * Output queues are per VL: a VL without credits downstream waits while the
 * others go (no head-of-line blocking across VLs). */
#include "models/network/network.h"

#include "sim/ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pipe_entry {
    sim_time_ps ready_ps;
    sim_pkt *pkt;
    uint8_t in_port, in_vl, out_port, out_vl;
} pipe_entry;

struct ib_switch {
    sim_fabric *f;
    sim_kernel *k;
    const topo *t;
    const topo_routes *routes;
    uint32_t node;
    ib_switch_cfg cfg;
    sim_time_ps pipeline_ps;
    ib_port *ports[TOPO_MAX_PORTS];
    char name[TOPO_NAME_MAX + 1];
    pipe_entry *pipe; size_t p_head, p_len, p_cap;
    sim_process proc;
    sim_event wake;
    ib_switch_stats st;
};

static void on_rx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl)
{
    ib_switch *s = owner;
    if (pkt->dst == SIM_PKT_GROUP) sim_fatal("%s: multicast is not modelled in the IB switch", s->name);
    unsigned in = ib_port_number(p);
    topo_hop h = topo_route_next(s->routes, s->node, (int)in, pkt->dst, pkt->flow);
    if (!s->ports[h.port]) sim_fatal("%s: route to endpoint %u leaves by unconnected port %u", s->name, pkt->dst, h.port);
    unsigned out_vl = ib_port_config(s->ports[h.port])->sl2vl[pkt->tc & (IB_SLS - 1)];
    if (s->p_len == s->p_cap) {
        s->pipe = sim_ring_grow(s->pipe, sizeof *s->pipe, s->p_head, s->p_len, &s->p_cap, 64);
        s->p_head = 0;
    }
    sim_time_ps now = sim_now(s->k);
    s->pipe[(s->p_head + s->p_len) & (s->p_cap - 1)] =
        (pipe_entry){ now + s->pipeline_ps, pkt, (uint8_t)in, (uint8_t)vl, h.port, (uint8_t)out_vl };
    s->p_len++;
    s->st.received++;
    s->st.in_pipeline = s->p_len;
    if (s->p_len == 1) sim_event_notify_at(&s->wake, s->pipeline_ps);
}

/* The pipeline's end: entries leave in arrival order (a constant delay keeps it). */
static void run(void *ctx)
{
    ib_switch *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->p_len && s->pipe[s->p_head].ready_ps <= now) {
        pipe_entry e = s->pipe[s->p_head];
        s->p_head = (s->p_head + 1) & (s->p_cap - 1);
        s->p_len--;
        ib_port_enqueue(s->ports[e.out_port], e.pkt, e.out_vl, (uint32_t)e.in_port << 8 | e.in_vl);
    }
    s->st.in_pipeline = s->p_len;
    if (s->p_len) sim_event_notify_at(&s->wake, s->pipe[s->p_head].ready_ps - now);
}

/* A packet started on its output wire: its blocks leave the input buffer. */
static void on_tx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag)
{
    (void)p, (void)vl;
    ib_switch *s = owner;
    s->st.forwarded++;
    ib_port_release(s->ports[tag >> 8], tag & 0xff, ib_blocks(pkt->wire_bytes));
}

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    static ib_switch_cfg defaults;
    static bool init;
    const ib_switch_cfg *c = sim_fabric_kind_cfg(f, "ib_switch");
    if (!c) {
        if (!init) {
            ib_port_cfg_default(&defaults.port, 2, 65536);
            defaults.pipeline_ns = 100;
            init = true;
        }
        c = &defaults;
    }
    if (ib_port_cfg_check(&c->port, why, why_n)) return NULL;
    if (!(c->pipeline_ns >= 0)) { snprintf(why, why_n, "pipeline_ns=%g; allowed >= 0", c->pipeline_ns); return NULL; }
    const topo *t = sim_fabric_topo(f);
    const topo_node *n = &t->nodes[node];
    for (unsigned q = 0; q < n->nports; q++) {
        if (n->port_link[q] < 0) continue;
        const topo_link *l = &t->links[n->port_link[q]];
        if (!l->preset || strncmp(l->preset->name, "ib-", 3)) {
            snprintf(why, why_n, "port %u: link preset %s is not InfiniBand; allowed: ib-hdr, ib-ndr, ib-xdr", q,
                     l->preset ? l->preset->name : "(none)");
            return NULL;
        }
    }
    ib_switch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->f = f;
    s->k = sim_fabric_node_kernel(f, node);
    s->t = t;
    s->routes = sim_fabric_routes(f);
    s->node = node;
    s->cfg = *c;
    s->pipeline_ps = (sim_time_ps)(c->pipeline_ns * 1000.0 + 0.5);
    snprintf(s->name, sizeof s->name, "%s", n->name);
    sim_event_init(&s->wake, s->k, "ib_switch.wake");
    sim_method_init(&s->proc, s->k, s->name, run, s);
    sim_sensitive(&s->proc, &s->wake);
    sim_dont_initialize(&s->proc);
    return s;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    ib_switch *s = comp;
    sim_trace *tr = sim_fabric_trace(s->f);
    char scope[16];
    snprintf(scope, sizeof scope, "p%u", p->port);
    sim_trace_push_scope(tr, s->name);
    s->ports[p->port] = ib_port_new(s->k, p, &s->cfg.port, p->name, on_rx, on_tx, s, tr, scope);
    sim_trace_pop_scope(tr);
}

static void start(void *comp)
{
    ib_switch *s = comp;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) ib_port_start(s->ports[i]);
}

static void add_blocks(sim_pkt *k, void *ctx) { *(uint64_t *)ctx += ib_blocks(k->wire_bytes); }

static int check(const void *comp, bool drained, char *why, size_t why_n)
{
    const ib_switch *s = comp;
    uint64_t queued = 0, used_blocks = 0, queued_blocks = 0;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) {
        if (!s->ports[i]) continue;
        if (ib_port_check(s->ports[i], drained, why, why_n)) return -1;
        for (unsigned v = 0; v < s->cfg.port.vls; v++) {
            queued += ib_port_queued(s->ports[i], v);
            used_blocks += ib_port_used_blocks(s->ports[i], v);
        }
    }
    if (s->st.received != s->st.forwarded + s->p_len + queued) {
        snprintf(why, why_n, "%s: received %llu, forwarded %llu, in the pipeline %zu, queued %llu", s->name,
                 (unsigned long long)s->st.received, (unsigned long long)s->st.forwarded, s->p_len, (unsigned long long)queued);
        return -1;
    }
    /* the input buffers hold exactly the blocks of the packets inside */
    for (size_t i = 0; i < s->p_len; i++) queued_blocks += ib_blocks(s->pipe[(s->p_head + i) & (s->p_cap - 1)].pkt->wire_bytes);
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) ib_port_for_each_held(s->ports[i], add_blocks, &queued_blocks);
    if (queued_blocks != used_blocks) {
        snprintf(why, why_n, "%s: input buffers hold %llu blocks, the packets inside take %llu", s->name,
                 (unsigned long long)used_blocks, (unsigned long long)queued_blocks);
        return -1;
    }
    return 0;
}

static void held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const ib_switch *s = comp;
    for (size_t i = 0; i < s->p_len; i++) fn(s->pipe[(s->p_head + i) & (s->p_cap - 1)].pkt, ctx);
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) ib_port_for_each_held(s->ports[i], fn, ctx);
}

static void reset(void *comp)
{
    ib_switch *s = comp;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++)
        if (s->ports[i]) ib_port_reset_stats(s->ports[i]);
}

static void switch_free(void *comp)
{
    ib_switch *s = comp;
    for (unsigned i = 0; i < TOPO_MAX_PORTS; i++) ib_port_free(s->ports[i]);
    free(s->pipe);
    free(s);
}

ib_switch_stats ib_switch_stats_get(const ib_switch *s) { return s->st; }
const ib_port *ib_switch_port(const ib_switch *s, unsigned port) { return port < TOPO_MAX_PORTS ? s->ports[port] : NULL; }

void ib_switch_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "ib_switch", .build = build, .ingress = NULL, .connect = connect, .start = start, .check = check,
        .reset_stats = reset, .held = held, .free = switch_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
