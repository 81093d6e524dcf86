/* Kind "pcie_switch": one upstream port (the one whose side of the tree
 * holds a host) and N downstream ports, each a full pcie_port with its own
 * credits, Ack/Nak and replay. Routing: memory requests (MRd, MWr) by
 * address, a downstream port owning the BAR windows of every device below
 * it and the upstream port everything else; completions by requester ID
 * (bus number) the same way. A request from one downstream port for a BAR
 * below another turns here (peer-to-peer) and never reaches the host.
 *
 * Store-and-forward: a TLP is routed once its port's receive buffer
 * delivered all of it, and offered to the egress port switch_ns later. It
 * keeps its ingress credits (pcie_port_hold_credits) until the egress
 * transmitter takes it, which that port does only with credits of its link
 * partner: a full egress backs up into the ingress buffer and from there
 * into the sender's credits, as in a switch with per-port buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/server/server_impl.h"
#include "sim/ring.h"

typedef struct sw_hold { uint8_t in_port; uint16_t data_credits; } sw_hold;
typedef struct sw_holdq { sw_hold *v; size_t head, len, cap; } sw_holdq;   /* per egress class, in submit order */
typedef struct sw_fwd { pcie_tlp t; uint8_t in_port, out_port; sim_time_ps ready_ps; } sw_fwd;

typedef struct sw_port {
    struct server_switch *s;
    unsigned index;
    pcie_port *port;
    char name[16];
    sw_holdq held[PCIE_FC_CLASSES];   /* TLPs queued at this egress: whose ingress credits they hold */
} sw_port;

struct server_switch {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node;
    const server_cfg *cfg;
    unsigned gen, lanes, nports, up;
    int16_t route[SERVER_MAX_NODES];  /* node -> downstream port below which it sits, -1: not below */
    sw_port *ports;
    sw_fwd *fwd; size_t fwd_head, fwd_len, fwd_cap;   /* the forwarding delay line: ready times never decrease */
    sim_event fwd_ev;
    sim_process fwd_proc;
    uint64_t p2p_tlps, up_tlps, down_tlps, misrouted;
    sim_trace *tr;
    sim_trace_var tv_fwd, tv_p2p;
};

static void trace_sw(server_switch *s)
{
    sim_trace_u64(s->tr, s->tv_fwd, s->fwd_len);
    sim_trace_u64(s->tr, s->tv_p2p, s->p2p_tlps);
}

/* The egress of TLP t: the downstream port of its destination, else upstream. */
static unsigned route_of(const server_switch *s, const pcie_tlp *t)
{
    int64_t n = t->type == PCIE_TLP_CPLD ? (int64_t)server_rid_node(t->req_id) : server_bar_node(t->addr);
    return n >= 0 && s->route[n] >= 0 ? (unsigned)s->route[n] : s->up;
}

static void fwd_run(void *ctx)
{
    server_switch *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->fwd_len && s->fwd[s->fwd_head].ready_ps <= now) {
        sw_fwd *e = &s->fwd[s->fwd_head];
        sw_port *out = &s->ports[e->out_port];
        unsigned cls = e->t.fc_class;
        sw_holdq *q = &out->held[cls];
        if (q->len == q->cap) {
            q->v = sim_ring_grow(q->v, sizeof *q->v, q->head, q->len, &q->cap, 64);
            q->head = 0;
        }
        q->v[(q->head + q->len++) % q->cap] = (sw_hold){ e->in_port, e->t.data_credits };
        pcie_tlp t = e->t;
        s->fwd_head = (s->fwd_head + 1) % s->fwd_cap;
        s->fwd_len--;
        pcie_port_submit(out->port, &t);
    }
    trace_sw(s);
    if (s->fwd_len) sim_event_notify_at(&s->fwd_ev, s->fwd[s->fwd_head].ready_ps - now);
}

static void sw_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    sw_port *in = ctx;
    server_switch *s = in->s;
    unsigned out = route_of(s, t);
    if (out == in->index) {   /* back out where it came from: no device there owns it (Unsupported Request) */
        s->misrouted++;
        pcie_port_release_held(p, t->fc_class, t->data_credits);
        return;
    }
    if (in->index != s->up && out != s->up) s->p2p_tlps++;
    else if (out == s->up) s->up_tlps++;
    else s->down_tlps++;
    if (s->fwd_len == s->fwd_cap) {
        s->fwd = sim_ring_grow(s->fwd, sizeof *s->fwd, s->fwd_head, s->fwd_len, &s->fwd_cap, 64);
        s->fwd_head = 0;
    }
    sim_time_ps ready = pcie_port_rx_now(p) + server_ns_ps(s->cfg->switch_ns);
    s->fwd[(s->fwd_head + s->fwd_len) % s->fwd_cap] = (sw_fwd){ *t, (uint8_t)in->index, (uint8_t)out, ready };
    sim_time_ps now = sim_now(s->k);
    if (s->fwd_len++ == 0) sim_event_notify_at(&s->fwd_ev, ready > now ? ready - now : 0);
    trace_sw(s);
}

/* The egress transmitter took its oldest queued TLP of class cls: its ingress buffer is free again. */
static void sw_refill(void *ctx, pcie_port *p, unsigned cls)
{
    (void)p;
    sw_port *out = ctx;
    sw_holdq *q = &out->held[cls];
    if (!q->len) sim_fatal("%s: a TLP left that the switch never queued", out->name);
    sw_hold h = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    pcie_port_release_held(out->s->ports[h.in_port].port, cls, h.data_credits);
}

static void sw_drained(void *ctx, pcie_port *p) { (void)ctx, (void)p; }

/* Marks every node on port q's side of the tree; true when a host is there.
 * *loop: the walk came back to the switch or a marked node (not a tree). */
static bool mark_below(server_switch *s, const topo *t, unsigned q, uint32_t from, uint32_t at, bool *loop)
{
    const char *kind = t->nodes[at].kind->name;
    bool host = !strcmp(kind, "host") || !strcmp(kind, "server_host");
    s->route[at] = (int16_t)q;
    for (unsigned r = 0; r < t->nodes[at].nports && !*loop; r++) {
        int w = topo_peer(t, at, r, NULL);
        if (w < 0 || (uint32_t)w == from) continue;
        if ((uint32_t)w == s->node || s->route[w] >= 0) {
            *loop = true;
            break;
        }
        host = mark_below(s, t, q, at, (uint32_t)w, loop) || host;
    }
    return host;
}

static void *sw_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const server_cfg *c = server_cfg_of(f, "pcie_switch", why, why_n);
    const topo *t = sim_fabric_topo(f);
    if (!c || server_node_index_ok(node, why, why_n)) return NULL;
    if (t->n_nodes > SERVER_MAX_NODES) { snprintf(why, why_n, "%u nodes; allowed: at most %u (bus numbers)", t->n_nodes, SERVER_MAX_NODES); return NULL; }
    server_switch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    if (server_node_links(t, node, &s->gen, &s->lanes, why, why_n)) { free(s); return NULL; }
    s->f = f, s->k = sim_fabric_kernel(f), s->node = node, s->cfg = c;
    s->nports = t->nodes[node].nports;
    /* the upstream port is the one towards a host; every other port owns what is below it */
    unsigned ups = 0;
    bool loop = false;
    for (uint32_t n = 0; n < SERVER_MAX_NODES; n++) s->route[n] = -1;
    for (unsigned q = 0; q < s->nports && !loop; q++) {
        int w = topo_peer(t, node, q, NULL);
        if (w >= 0 && mark_below(s, t, q, node, (uint32_t)w, &loop)) ups++, s->up = q;
    }
    if (loop || ups != 1) {
        snprintf(why, why_n, loop ? "its links make a loop; allowed: a tree (PCIe)" : "%u ports lead to a host; allowed: exactly one upstream port",
                 ups);
        free(s);
        return NULL;
    }
    for (uint32_t n = 0; n < t->n_nodes; n++)
        if (s->route[n] == (int16_t)s->up) s->route[n] = -1;
    s->ports = calloc(s->nports, sizeof *s->ports);
    if (!s->ports) sim_fatal("out of memory");
    sim_event_init(&s->fwd_ev, s->k, "switch_fwd");
    sim_method_init(&s->fwd_proc, s->k, "switch_forward", fwd_run, s);
    sim_sensitive(&s->fwd_proc, &s->fwd_ev);
    sim_dont_initialize(&s->fwd_proc);
    s->tr = sim_fabric_trace(f);
    if (s->tr) {
        sim_trace_push_scope(s->tr, t->nodes[node].name);
        sim_trace_push_scope(s->tr, "forward");
        s->tv_fwd = sim_trace_add_var(s->tr, "in_switch", 16);
        s->tv_p2p = sim_trace_add_var(s->tr, "p2p_tlps", 40);
        sim_trace_pop_scope(s->tr);
        sim_trace_pop_scope(s->tr);
        trace_sw(s);
    }
    return s;
}

static void sw_connect(void *comp, const sim_fabric_port *fp)
{
    server_switch *s = comp;
    sw_port *sp = &s->ports[fp->port];
    sp->s = s;
    sp->index = fp->port;
    /* the upstream port faces a root port (it sends like an endpoint), the downstream ports like root ports */
    sp->port = server_port_new(s->f, fp, s->cfg, s->cfg->switch_adv, fp->port == s->up ? PCIE_DOWN : PCIE_UP, s->gen, s->lanes,
                               sp->name);
    pcie_port_app app = { sp, sw_deliver, sw_refill, sw_drained, NULL };
    pcie_port_set_app(sp->port, &app);
    pcie_port_hold_credits(sp->port, true);
}

static int sw_check(const void *comp, bool drained, char *why, size_t why_n)
{
    const server_switch *s = comp;
    for (unsigned q = 0; q < s->nports; q++) {
        const sw_port *sp = &s->ports[q];
        if (!sp->port) continue;
        char w[400];
        if (pcie_port_check(sp->port, drained, w, sizeof w)) { snprintf(why, why_n, "port %s: %s", sp->name, w); return -1; }
        for (unsigned c = 0; drained && c < PCIE_FC_CLASSES; c++)
            if (sp->held[c].len) { snprintf(why, why_n, "port %s: %zu TLPs never left", sp->name, sp->held[c].len); return -1; }
    }
    if (s->misrouted) { snprintf(why, why_n, "%llu TLPs for no device below their ingress port", (unsigned long long)s->misrouted); return -1; }
    if (drained && s->fwd_len) { snprintf(why, why_n, "%zu TLPs still in the switch", s->fwd_len); return -1; }
    return 0;
}

static void sw_free(void *comp)
{
    server_switch *s = comp;
    for (unsigned q = 0; q < s->nports; q++) {
        if (s->ports[q].port) pcie_port_free(s->ports[q].port);
        for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) free(s->ports[q].held[c].v);
    }
    free(s->ports);
    free(s->fwd);
    free(s);
}

pcie_port *server_switch_port(const server_switch *s, unsigned port) { return port < s->nports ? s->ports[port].port : NULL; }
uint64_t server_switch_p2p_tlps(const server_switch *s) { return s->p2p_tlps; }
uint64_t server_switch_up_tlps(const server_switch *s) { return s->up_tlps; }

static const sim_fabric_kind switch_kind = {
    .name = "pcie_switch", .build = sw_build, .ingress = NULL, .connect = sw_connect, .start = NULL, .check = sw_check,
    .reset_stats = NULL, .held = NULL, .free = sw_free,
};
void server_switch_register(void) { sim_fabric_kind_register(&switch_kind); }
