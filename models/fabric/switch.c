/* The generic switch core (switch.h): VOQs per (input, output, VC), a
 * separable round-robin allocator run by one method process, woken by an
 * event notified for the earliest time anything can change. */
#include "models/fabric/switch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One received packet's input-buffer space, shared by its copies. */
typedef struct sw_buf {
    unsigned in_port, in_vc, copies_left;
    uint32_t credits;
    struct sw_buf *next;            /* free list */
} sw_buf;

/* One copy waiting in a VOQ. */
typedef struct sw_entry {
    sim_pkt *pkt;
    sw_buf *buf;
    sim_time_ps eligible_ps;
    uint8_t out_vc;
    struct sw_entry *next;
} sw_entry;

typedef struct sw_queue { sw_entry *head, *tail; } sw_queue;

typedef struct sw_port {
    struct fabric_switch *s;
    unsigned index;
    bool connected;
    sim_link *in, *out;
    double in_GBps;
    unsigned out_credit_types, out_credit_bytes;
    sim_time_ps read_free_ps;       /* the input's crossbar read port is busy until then */
    unsigned rr;                    /* output: next input to look at first */
    uint64_t queued_to;             /* entries waiting for this output */
    uint32_t held[SIM_LINK_MAX_CREDIT_TYPES]; /* input-buffer credits held per VC */
    fabric_switch_port_stats st;
} sw_port;

struct fabric_switch {
    sim_kernel *k;
    const topo *t;
    uint32_t node;
    const topo_routes *r;
    sim_groups *g;
    fabric_switch_cfg cfg;
    unsigned nports, nvcs;
    sim_time_ps pipeline_ps;
    sw_port *ports;
    sw_queue *voq;                  /* [(in * nports + out) * nvcs + vc] */
    sw_entry *free_entries;
    sw_buf *free_bufs;
    void **blocks; size_t n_blocks, cap_blocks;  /* every record allocated, for free */
    sim_pkt_pool pool;              /* multicast clones only */
    sim_process proc;
    sim_event kick;
    fabric_switch_stats st;
    char name[TOPO_NAME_MAX + 1];
};

static void *sw_block(fabric_switch *s, size_t bytes)
{
    if (s->n_blocks == s->cap_blocks) {
        s->cap_blocks = s->cap_blocks ? 2 * s->cap_blocks : 64;
        s->blocks = realloc(s->blocks, s->cap_blocks * sizeof *s->blocks);
        if (!s->blocks) sim_fatal("out of memory");
    }
    void *b = calloc(1, bytes);
    if (!b) sim_fatal("out of memory");
    s->blocks[s->n_blocks++] = b;
    return b;
}

static sw_entry *entry_get(fabric_switch *s)
{
    sw_entry *e = s->free_entries;
    if (e) s->free_entries = e->next; else e = sw_block(s, sizeof *e);
    e->next = NULL;
    return e;
}

static sw_buf *buf_get(fabric_switch *s)
{
    sw_buf *b = s->free_bufs;
    if (b) s->free_bufs = b->next; else b = sw_block(s, sizeof *b);
    b->next = NULL;
    return b;
}

/* Asks for an allocator run at `at_ps` (>= now); the event keeps the earliest. */
static void wake_at(fabric_switch *s, sim_time_ps at_ps)
{
    sim_time_ps now = sim_now(s->k);
    sim_event_notify_at(&s->kick, at_ps > now ? at_ps - now : 0);
}

static void enqueue(fabric_switch *s, unsigned in, unsigned out, unsigned vc, sim_pkt *pkt, sw_buf *b,
                    sim_time_ps eligible_ps)
{
    if (out >= s->nports || !s->ports[out].connected)
        sim_fatal("%s: route sends a packet to port %u, which is not connected", s->name, out);
    sw_entry *e = entry_get(s);
    *e = (sw_entry){ .pkt = pkt, .buf = b, .eligible_ps = eligible_ps, .out_vc = (uint8_t)vc };
    sw_queue *q = &s->voq[((size_t)in * s->nports + out) * s->nvcs + vc];
    if (q->tail) q->tail->next = e; else q->head = e;
    q->tail = e;
    s->ports[out].queued_to++;
    s->st.copies_made++;
    s->st.inside++;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Splits a multicast packet by next-hop port: one copy per port, carrying the
 * group of the members behind it (a direct endpoint neighbour: unicast). */
static void enqueue_multicast(fabric_switch *s, sw_port *ip, sim_pkt *pkt, sw_buf *b, sim_time_ps eligible_ps)
{
    unsigned n;
    const uint32_t *m = sim_groups_members(s->g, pkt->group, &n);
    if (!n) sim_fatal("%s: multicast group %u has no members", s->name, pkt->group);
    uint32_t *sorted = malloc(n * sizeof *sorted), *sub = malloc(n * sizeof *sub);
    topo_hop *hop = malloc(n * sizeof *hop);
    if (!sorted || !sub || !hop) sim_fatal("out of memory");
    memcpy(sorted, m, n * sizeof *m);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    for (unsigned i = 0; i < n; i++) hop[i] = topo_route_next(s->r, s->node, (int)ip->index, sorted[i], pkt->flow);
    bool first = true;
    b->copies_left = 0;
    for (unsigned port = 0; port < s->nports; port++) {
        unsigned k = 0, vc = 0;
        for (unsigned i = 0; i < n; i++)
            if (hop[i].port == port) { sub[k++] = sorted[i]; vc = hop[i].vc; }
        if (!k) continue;
        sim_pkt *c = first ? pkt : sim_pkt_clone(&s->pool, pkt);
        if (!first) s->st.clones++;
        first = false;
        unsigned pp;
        int peer = topo_peer(s->t, s->node, port, &pp);
        if (k == 1 && peer >= 0 && s->t->nodes[peer].endpoint == (int32_t)sub[0]) {
            c->dst = sub[0];
            c->group = 0;
        } else {
            c->group = sim_groups_intern(s->g, sub, k);
        }
        b->copies_left++;
        enqueue(s, ip->index, port, vc, c, b, eligible_ps);
    }
    free(sorted);
    free(sub);
    free(hop);
}

static void on_receive(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    sw_port *ip = ctx;
    fabric_switch *s = ip->s;
    sim_pkt *pkt = msg;
    (void)bytes;
    pkt->hops++;
    if (pkt->vc >= s->nvcs) sim_fatal("%s: packet arrived on VC %u, the routes use %u", s->name, pkt->vc, s->nvcs);
    sw_buf *b = buf_get(s);
    *b = (sw_buf){ .in_port = ip->index, .in_vc = pkt->vc, .credits = sim_fabric_credits(pkt->wire_bytes, s->cfg.credit_bytes) };
    ip->held[b->in_vc] += b->credits;
    if (ip->held[b->in_vc] > ip->st.max_held_credits) ip->st.max_held_credits = ip->held[b->in_vc];
    ip->st.rx_pkts++;
    ip->st.rx_bytes += pkt->wire_bytes;
    s->st.received++;
    sim_time_ps eligible_ps = sim_link_arrival_ps(l) + s->pipeline_ps;
    if (pkt->dst == SIM_PKT_GROUP) {
        enqueue_multicast(s, ip, pkt, b, eligible_ps);
    } else {
        topo_hop h = topo_route_next(s->r, s->node, (int)ip->index, pkt->dst, pkt->flow);
        b->copies_left = 1;
        enqueue(s, ip->index, h.port, h.vc, pkt, b, eligible_ps);
    }
    wake_at(s, eligible_ps);
}

static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)l; (void)type; (void)credits;
    sw_port *op = ctx;
    wake_at(op->s, sim_now(op->s->k));
}

static bool can_send(const sw_port *op, const sw_entry *e)
{
    if (!op->out_credit_types) return true;
    if (e->out_vc >= op->out_credit_types)
        sim_fatal("%s: VC %u on a link whose receiver has %u credit pools", op->s->name, e->out_vc,
                  op->out_credit_types);
    return sim_link_can_send(op->out, e->out_vc, sim_fabric_credits(e->pkt->wire_bytes, op->out_credit_bytes));
}

static void send_entry(fabric_switch *s, unsigned in, unsigned out, sw_queue *q, sim_time_ps now)
{
    sw_entry *e = q->head;
    q->head = e->next;
    if (!q->head) q->tail = NULL;
    sw_port *ip = &s->ports[in], *op = &s->ports[out];
    sim_pkt *pkt = e->pkt;
    pkt->vc = e->out_vc;
    double read_ps = (double)pkt->wire_bytes * 1000.0 / (ip->in_GBps * s->cfg.speedup);
    ip->read_free_ps = now + (sim_time_ps)llround(read_ps);
    op->queued_to--;
    op->st.tx_pkts++;
    op->st.tx_bytes += pkt->wire_bytes;
    op->st.queue_ps_sum += now - e->eligible_ps;
    s->st.copies_sent++;
    s->st.inside--;
    sw_buf *b = e->buf;
    uint32_t wire = pkt->wire_bytes;
    if (op->out_credit_types) {
        if (!sim_link_try_send(op->out, pkt, wire, e->out_vc, sim_fabric_credits(wire, op->out_credit_bytes)))
            sim_fatal("%s: credits checked but the send was refused", s->name);
    } else {
        sim_link_send(op->out, pkt, wire);
    }
    e->next = s->free_entries;
    s->free_entries = e;
    if (--b->copies_left == 0) {
        s->ports[b->in_port].held[b->in_vc] -= b->credits;
        sim_link_return_credits(s->ports[b->in_port].in, b->in_vc, b->credits);
        s->st.released++;
        b->next = s->free_bufs;
        s->free_bufs = b;
    }
}

/* One allocation pass at now, then a wake-up for the earliest time a blocked
 * grant could become possible (credits wake it through on_credit). */
static void allocate(void *ctx)
{
    fabric_switch *s = ctx;
    sim_time_ps now = sim_now(s->k), next_ps = SIM_TIME_MAX;
    unsigned n = s->nports;
    s->st.allocations++;
    for (unsigned o = 0; o < n; o++) {
        sw_port *op = &s->ports[o];
        if (!op->queued_to) continue;
        sim_time_ps tx_free = sim_link_tx_free_ps(op->out);
        if (tx_free > now) { if (tx_free < next_ps) next_ps = tx_free; continue; }
        for (unsigned j = 0; j < n; j++) {
            unsigned i = (op->rr + j) % n;
            sw_port *ip = &s->ports[i];
            /* The oldest eligible head among this (input, output)'s VCs that may go. */
            sw_queue *best = NULL;
            bool waiting = false;
            for (unsigned v = 0; v < s->nvcs; v++) {
                sw_queue *q = &s->voq[((size_t)i * n + o) * s->nvcs + v];
                if (!q->head) continue;
                waiting = true;
                if (q->head->eligible_ps > now) {
                    if (q->head->eligible_ps < next_ps) next_ps = q->head->eligible_ps;
                    continue;
                }
                if (!can_send(op, q->head)) continue;
                if (!best || q->head->eligible_ps < best->head->eligible_ps) best = q;
            }
            if (!waiting || !best) continue;
            if (ip->read_free_ps > now) {
                if (ip->read_free_ps < next_ps) next_ps = ip->read_free_ps;
                continue;
            }
            send_entry(s, i, o, best, now);
            op->rr = (i + 1) % n;
            if (op->queued_to) {
                sim_time_ps t = sim_link_tx_free_ps(op->out);
                if (t < next_ps) next_ps = t;
            }
            break;
        }
    }
    if (next_ps != SIM_TIME_MAX) wake_at(s, next_ps > now ? next_ps : now + 1);
}

fabric_switch *fabric_switch_new(sim_kernel *k, const topo *t, uint32_t node, const topo_routes *r, sim_groups *g,
                                 const fabric_switch_cfg *cfg_in, char *why, size_t why_n)
{
    fabric_switch_cfg cfg = cfg_in ? *cfg_in : FABRIC_SWITCH_CFG_DEFAULT;
    const char *nm = t->nodes[node].name;
    if (cfg.credit_bytes == 0) { snprintf(why, why_n, "switch %s: credit_bytes is 0 (allowed: >= 1)", nm); return NULL; }
    if (cfg.buffer_bytes_per_vc < cfg.credit_bytes) {
        snprintf(why, why_n, "switch %s: buffer_bytes_per_vc %u is below credit_bytes %u (allowed: >= credit_bytes)", nm,
                 cfg.buffer_bytes_per_vc, cfg.credit_bytes);
        return NULL;
    }
    if (!(cfg.pipeline_ns >= 0) || cfg.pipeline_ns > 1e9) {
        snprintf(why, why_n, "switch %s: pipeline_ns %g (allowed: 0 .. 1e9)", nm, cfg.pipeline_ns);
        return NULL;
    }
    if (!(cfg.speedup > 0) || cfg.speedup > 1000) {
        snprintf(why, why_n, "switch %s: speedup %g (allowed: > 0 .. 1000)", nm, cfg.speedup);
        return NULL;
    }
    unsigned nvcs = topo_routes_vcs(r);
    if (nvcs == 0 || nvcs > SIM_LINK_MAX_CREDIT_TYPES) {
        snprintf(why, why_n, "switch %s: routes use %u VCs (allowed: 1 .. %u)", nm, nvcs, SIM_LINK_MAX_CREDIT_TYPES);
        return NULL;
    }
    fabric_switch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    *s = (fabric_switch){ .k = k, .t = t, .node = node, .r = r, .g = g, .cfg = cfg, .nports = t->nodes[node].nports,
                          .nvcs = nvcs, .pipeline_ps = (sim_time_ps)llround(cfg.pipeline_ns * 1000.0) };
    snprintf(s->name, sizeof s->name, "%s", nm);
    s->ports = calloc(s->nports, sizeof *s->ports);
    s->voq = calloc((size_t)s->nports * s->nports * nvcs, sizeof *s->voq);
    if (!s->ports || !s->voq) sim_fatal("out of memory");
    for (unsigned p = 0; p < s->nports; p++) s->ports[p] = (sw_port){ .s = s, .index = p };
    sim_pkt_pool_init(&s->pool, s->name);
    sim_event_init(&s->kick, k, s->name);
    sim_method_init(&s->proc, k, s->name, allocate, s);
    sim_sensitive(&s->proc, &s->kick);
    sim_dont_initialize(&s->proc);
    return s;
}

void fabric_switch_ingress(fabric_switch *s, unsigned port, sim_fabric_ingress *in)
{
    (void)port;
    in->credit_types = s->nvcs;
    in->credit_bytes = s->cfg.credit_bytes;
    for (unsigned v = 0; v < s->nvcs; v++) in->credits[v] = s->cfg.buffer_bytes_per_vc / s->cfg.credit_bytes;
}

void fabric_switch_connect(fabric_switch *s, const sim_fabric_port *p)
{
    if (p->port >= s->nports) sim_fatal("%s: connect of port %u beyond its %u ports", s->name, p->port, s->nports);
    sw_port *sp = &s->ports[p->port];
    sp->connected = true;
    sp->in = p->in;
    sp->out = p->out;
    sp->in_GBps = p->link->GBps > 0 ? p->link->GBps : 1e9;
    sp->out_credit_types = p->out_credit_types;
    sp->out_credit_bytes = p->out_credit_bytes ? p->out_credit_bytes : 1;
    sim_link_set_receiver(p->in, on_receive, sp);
    if (p->out_credit_types) sim_link_set_credit_callback(p->out, on_credit, sp);
}

int fabric_switch_check(const fabric_switch *s, bool drained, char *why, size_t why_n)
{
    const fabric_switch_stats *st = &s->st;
    if (st->copies_made != st->copies_sent + st->inside) {
        snprintf(why, why_n, "switch %s: %llu copies made but %llu sent + %llu inside", s->name,
                 (unsigned long long)st->copies_made, (unsigned long long)st->copies_sent, (unsigned long long)st->inside);
        return 1;
    }
    uint64_t queued = 0, held_bufs_credits = 0;
    for (unsigned p = 0; p < s->nports; p++) {
        queued += s->ports[p].queued_to;
        for (unsigned v = 0; v < s->nvcs; v++) {
            uint32_t h = s->ports[p].held[v];
            held_bufs_credits += h;
            if ((uint64_t)h * s->cfg.credit_bytes > s->cfg.buffer_bytes_per_vc + s->cfg.credit_bytes - 1) {
                snprintf(why, why_n, "switch %s: port %u VC %u holds %u credits, more than its buffer", s->name, p, v, h);
                return 1;
            }
        }
    }
    if (queued != st->inside) {
        snprintf(why, why_n, "switch %s: %llu entries queued per output but %llu inside", s->name,
                 (unsigned long long)queued, (unsigned long long)st->inside);
        return 1;
    }
    if (st->received < st->released) {
        snprintf(why, why_n, "switch %s: released %llu buffers of %llu received", s->name,
                 (unsigned long long)st->released, (unsigned long long)st->received);
        return 1;
    }
    if (drained && (st->inside || st->received != st->released || held_bufs_credits)) {
        snprintf(why, why_n, "switch %s: drained but %llu copies inside, %llu buffers held", s->name,
                 (unsigned long long)st->inside, (unsigned long long)(st->received - st->released));
        return 1;
    }
    return 0;
}

void fabric_switch_reset_stats(fabric_switch *s)
{
    for (unsigned p = 0; p < s->nports; p++) {
        sw_port *sp = &s->ports[p];
        uint32_t held = 0;
        for (unsigned v = 0; v < s->nvcs; v++) held = sp->held[v] > held ? sp->held[v] : held;
        sp->st = (fabric_switch_port_stats){ .max_held_credits = held };
    }
    s->st.allocations = 0;
}

void fabric_switch_for_each_held(const fabric_switch *s, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    size_t n_queues = (size_t)s->nports * s->nports * s->nvcs;
    for (size_t q = 0; q < n_queues; q++)
        for (const sw_entry *e = s->voq[q].head; e; e = e->next) fn(e->pkt, ctx);
}

void fabric_switch_free(fabric_switch *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_blocks; i++) free(s->blocks[i]);
    free(s->blocks);
    sim_pkt_pool_free(&s->pool);
    free(s->voq);
    free(s->ports);
    free(s);
}

fabric_switch_stats fabric_switch_stats_get(const fabric_switch *s) { return s->st; }

const fabric_switch_port_stats *fabric_switch_port(const fabric_switch *s, unsigned port)
{
    return port < s->nports ? &s->ports[port].st : NULL;
}
