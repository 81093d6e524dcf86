/* Kind "ib_rnic" (ib_rnic.h): RC queue pairs over one InfiniBand port. */
#include "models/network/ib_rnic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/network/network.h"

typedef struct rx_entry { sim_time_ps due_ps; uint32_t peer; rc_hdr h; } rx_entry;
typedef struct idx_list { unsigned *v; uint32_t n, cap; } idx_list;

struct ib_rnic;
typedef struct qp_slot { struct ib_rnic *nic; uint32_t peer; rc_qp *qp; idx_list req, resp; uint64_t seq; } qp_slot;

struct ib_rnic {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, index, n_ep;
    ib_rnic_cfg cfg;
    ib_port *port;
    const topo_link *link;
    sim_pkt_pool pool;
    char name[TOPO_NAME_MAX + 1];
    qp_slot *slots;              /* per peer endpoint; qp NULL until used */
    uint32_t rr;                 /* next peer to offer the port a packet */
    unsigned *my_msgs;           /* indices of cfg.msgs this NIC posts, in post order */
    unsigned n_my, next_post;
    rnic_msg_times *times;
    rx_entry *rx; uint32_t rx_head, rx_len, rx_cap;
    sim_process proc;
    sim_time_ps wake_ps;
    uint64_t made, sent;
};

static void list_add(idx_list *l, unsigned v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v) sim_fatal("out of memory");
    }
    l->v[l->n++] = v;
}

uint32_t ib_rnic_wire_bytes(const rc_hdr *h, uint32_t overhead_bytes)
{
    return h->payload_bytes + overhead_bytes + rc_extra_header_bytes(h);
}

static void on_done(void *ctx, uint32_t msg, rc_op op, bool requester, uint64_t bytes)
{
    (void)op, (void)bytes;
    qp_slot *s = ctx;
    const idx_list *l = requester ? &s->req : &s->resp;
    if (msg >= l->n) sim_fatal("%s: QP to endpoint %u completed message %u of %u", s->nic->name, s->peer, msg, l->n);
    rnic_msg_times *t = &s->nic->times[l->v[msg]];
    if (requester) t->requester_done_ps = sim_now(s->nic->k);
    else t->responder_done_ps = sim_now(s->nic->k);
}

static rc_qp *qp_for(ib_rnic *r, uint32_t peer)
{
    qp_slot *s = &r->slots[peer];
    if (!s->qp) {
        char n[TOPO_NAME_MAX + 24];
        snprintf(n, sizeof n, "%s.qp%u", r->name, peer);
        s->qp = rc_qp_new(&r->cfg.rc, n, on_done, s);
    }
    return s->qp;
}

static void wake(ib_rnic *r, sim_time_ps at)
{
    sim_time_ps now = sim_now(r->k);
    if (at <= now) at = now + 1;
    if (r->wake_ps != SIM_TIME_MAX && r->wake_ps > now && r->wake_ps <= at) return;
    r->wake_ps = at;
    sim_process_wake_at(r->k, &r->proc, at - now);
}

static sim_time_ps post_due(const ib_rnic *r, unsigned i)
{
    return r->cfg.msgs[i].post_ps + (sim_time_ps)(r->cfg.tx_ns * 1000.0 + 0.5);
}

/* The port's queue has room: the QPs' next packets, peers in turn. */
static void refill(ib_rnic *r)
{
    const unsigned want = r->cfg.queue_pkts ? r->cfg.queue_pkts : 2, vl = r->cfg.port.sl2vl[r->cfg.sl & (IB_SLS - 1)];
    while (ib_port_queued(r->port, vl) < want) {
        qp_slot *s = NULL;
        for (uint32_t i = 0; i < r->n_ep && !s; i++) {
            qp_slot *c = &r->slots[(r->rr + i) % r->n_ep];
            if (c->qp && rc_has_packet(c->qp)) s = c;
        }
        if (!s) return;
        r->rr = (s->peer + 1) % r->n_ep;
        rc_hdr h;
        if (!rc_next_packet(s->qp, sim_now(r->k), &h)) sim_fatal("%s: the QP offered a packet and had none", r->name);
        sim_pkt *k = sim_pkt_alloc(&r->pool);
        k->src = r->index;
        k->dst = s->peer;
        k->tc = r->cfg.sl;
        k->payload_bytes = h.payload_bytes;
        k->wire_bytes = ib_rnic_wire_bytes(&h, r->link->overhead_bytes);
        k->flow = (uint64_t)r->index * r->n_ep + s->peer;
        k->seq = s->seq++;
        k->created_ps = sim_now(r->k);
        memcpy(sim_pkt_ext(k), &h, sizeof h);
        r->made++;
        ib_port_enqueue(r->port, k, vl, 0);
    }
}

static void schedule(ib_rnic *r)
{
    sim_time_ps next = SIM_TIME_MAX;
    if (r->next_post < r->n_my) next = post_due(r, r->my_msgs[r->next_post]);
    if (r->rx_len && r->rx[r->rx_head].due_ps < next) next = r->rx[r->rx_head].due_ps;
    for (uint32_t p = 0; p < r->n_ep; p++)
        if (r->slots[p].qp && rc_timer_due(r->slots[p].qp) < next) next = rc_timer_due(r->slots[p].qp);
    if (next != SIM_TIME_MAX) wake(r, next);
}

static void proc_fn(void *ctx)
{
    ib_rnic *r = ctx;
    const sim_time_ps now = sim_now(r->k);
    if (r->wake_ps <= now) r->wake_ps = SIM_TIME_MAX;
    while (r->next_post < r->n_my && post_due(r, r->my_msgs[r->next_post]) <= now) {
        unsigned i = r->my_msgs[r->next_post++];
        const rnic_msg *m = &r->cfg.msgs[i];
        rc_post(qp_for(r, m->dst), m->op, m->bytes);
        list_add(&r->slots[m->dst].req, i);
        r->times[i].posted_ps = m->post_ps;
    }
    while (r->rx_len && r->rx[r->rx_head].due_ps <= now) {
        const rx_entry *e = &r->rx[r->rx_head];
        rc_receive(qp_for(r, e->peer), now, &e->h);
        r->rx_head = (r->rx_head + 1) % r->rx_cap;
        r->rx_len--;
    }
    for (uint32_t p = 0; p < r->n_ep; p++)
        if (r->slots[p].qp) rc_timer(r->slots[p].qp, now);
    refill(r);
    schedule(r);
}

static void on_tx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag)
{
    (void)p, (void)pkt, (void)vl, (void)tag;
    ib_rnic *r = owner;
    r->sent++;
    refill(r);
    schedule(r);   /* a first PSN out arms its QP's timer */
}

/* Off the port at once (the NIC takes at line rate); to the QP after rx_ns. */
static void on_rx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl)
{
    ib_rnic *r = owner;
    if (pkt->dst != r->index || pkt->src >= r->n_ep) sim_fatal("%s: packet %u -> %u arrived here", r->name, pkt->src, pkt->dst);
    if (r->rx_len == r->rx_cap) {
        uint32_t cap = r->rx_cap ? 2 * r->rx_cap : 64;
        rx_entry *n = malloc(cap * sizeof *n);
        if (!n) sim_fatal("out of memory");
        for (uint32_t i = 0; i < r->rx_len; i++) n[i] = r->rx[(r->rx_head + i) % r->rx_cap];
        free(r->rx);
        r->rx = n;
        r->rx_head = 0;
        r->rx_cap = cap;
    }
    rx_entry *e = &r->rx[(r->rx_head + r->rx_len++) % r->rx_cap];
    e->due_ps = sim_now(r->k) + (sim_time_ps)(r->cfg.rx_ns * 1000.0 + 0.5);
    e->peer = pkt->src;
    memcpy(&e->h, sim_pkt_ext_const(pkt), sizeof e->h);
    uint32_t blocks = ib_blocks(pkt->wire_bytes);
    sim_pkt_free(pkt);
    ib_port_release(p, vl, blocks);
    schedule(r);
}

static const ib_rnic_cfg *cfg_of(sim_fabric *f)
{
    static ib_rnic_cfg defaults;
    static bool init;
    const ib_rnic_cfg *c = sim_fabric_kind_cfg(f, "ib_rnic");
    if (c) return c;
    if (!init) {
        ib_port_cfg_default(&defaults.port, 2, 65536);
        defaults.rc = (rc_cfg)RC_CFG_DEFAULT;
        init = true;
    }
    return &defaults;
}

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    const ib_rnic_cfg *c = cfg_of(f);
    if (ib_port_cfg_check(&c->port, why, why_n)) return NULL;
    const topo_node *n = &t->nodes[node];
    if (n->nports != 1 || n->port_link[0] < 0) { snprintf(why, why_n, "an ib_rnic has one connected port"); return NULL; }
    const topo_link *l = &t->links[n->port_link[0]];
    if (!l->preset || strncmp(l->preset->name, "ib-", 3)) {
        snprintf(why, why_n, "link preset %s is not InfiniBand; allowed: ib-hdr, ib-ndr, ib-xdr", l->preset ? l->preset->name : "(none)");
        return NULL;
    }
    if (c->rc.mtu < 256 || c->rc.mtu > 4096 || (c->rc.mtu & (c->rc.mtu - 1))) {
        snprintf(why, why_n, "mtu=%u; allowed 256, 512, 1024, 2048, 4096", c->rc.mtu);
        return NULL;
    }
    if (ib_adv_blocks(c->port.vl_buffer_bytes) < ib_blocks(c->rc.mtu + l->overhead_bytes + 16)) {
        snprintf(why, why_n, "vl_buffer_bytes=%u holds less than one %u-byte packet", c->port.vl_buffer_bytes, c->rc.mtu + l->overhead_bytes + 16);
        return NULL;
    }
    ib_rnic *r = calloc(1, sizeof *r);
    if (!r) sim_fatal("out of memory");
    r->f = f;
    r->k = sim_fabric_node_kernel(f, node);
    r->node = node;
    r->index = (uint32_t)n->endpoint;
    r->n_ep = t->n_endpoints;
    r->cfg = *c;
    r->link = l;
    r->wake_ps = SIM_TIME_MAX;
    snprintf(r->name, sizeof r->name, "%s", n->name);
    sim_pkt_pool_init_ext(&r->pool, r->name, sizeof(rc_hdr));
    r->slots = calloc(r->n_ep, sizeof *r->slots);
    r->times = calloc(c->n_msgs + 1, sizeof *r->times);
    r->my_msgs = calloc(c->n_msgs + 1, sizeof *r->my_msgs);
    if (!r->slots || !r->times || !r->my_msgs) sim_fatal("out of memory");
    for (uint32_t p = 0; p < r->n_ep; p++) r->slots[p] = (qp_slot){ .nic = r, .peer = p };
    for (unsigned i = 0; i < c->n_msgs; i++) {
        const rnic_msg *m = &c->msgs[i];
        if (m->src >= r->n_ep || m->dst >= r->n_ep || m->src == m->dst || !m->bytes) {
            snprintf(why, why_n, "message %u: %u -> %u of %llu bytes; allowed two different endpoints, 1 byte or more", i, m->src, m->dst,
                     (unsigned long long)m->bytes);
            free(r->slots), free(r->times), free(r->my_msgs), free(r);
            return NULL;
        }
        if (m->src == r->index) {
            if (r->n_my && c->msgs[r->my_msgs[r->n_my - 1]].post_ps > m->post_ps) {
                snprintf(why, why_n, "message %u is posted before the one given ahead of it; give each NIC's messages in post order", i);
                free(r->slots), free(r->times), free(r->my_msgs), free(r);
                return NULL;
            }
            r->my_msgs[r->n_my++] = i;
        }
        if (m->dst == r->index) list_add(&r->slots[m->src].resp, i);   /* the peer numbers them in the same order */
    }
    sim_method_init(&r->proc, r->k, r->name, proc_fn, r);
    sim_dont_initialize(&r->proc);
    return r;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    ib_rnic *r = comp;
    sim_trace *tr = sim_fabric_trace(r->f);
    char scope[16];
    snprintf(scope, sizeof scope, "p%u", p->port);
    sim_trace_push_scope(tr, r->name);
    r->port = ib_port_new(r->k, p, &r->cfg.port, p->name, on_rx, on_tx, r, tr, scope);
    sim_trace_pop_scope(tr);
}

static void start(void *comp)
{
    ib_rnic *r = comp;
    ib_port_start(r->port);
    schedule(r);
}

static int check(const void *comp, bool drained, char *why, size_t why_n)
{
    const ib_rnic *r = comp;
    if (ib_port_check(r->port, drained, why, why_n)) return -1;
    uint64_t queued = 0;
    for (unsigned v = 0; v < r->cfg.port.vls; v++) queued += ib_port_queued(r->port, v);
    if (r->made != r->sent + queued) {
        snprintf(why, why_n, "%s: made %llu packets, sent %llu, %llu queued", r->name, (unsigned long long)r->made,
                 (unsigned long long)r->sent, (unsigned long long)queued);
        return -1;
    }
    for (uint32_t p = 0; p < r->n_ep; p++) {
        const rc_qp *q = r->slots[p].qp;
        if (!q) continue;
        if (rc_check(q, why, why_n)) return -1;
        if (rc_failed(q)) {
            snprintf(why, why_n, "%s: the QP to endpoint %u failed after %u timeouts in a row", r->name, p, r->cfg.rc.retry_cnt + 1);
            return -1;
        }
        if (drained && !rc_idle(q)) {
            snprintf(why, why_n, "%s: the QP to endpoint %u still has work after the drain", r->name, p);
            return -1;
        }
    }
    if (drained && (r->rx_len || r->next_post < r->n_my)) {
        snprintf(why, why_n, "%s: %u packets not yet processed, %u messages not posted", r->name, r->rx_len, r->n_my - r->next_post);
        return -1;
    }
    return 0;
}

static void held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const ib_rnic *r = comp;
    if (r->port) ib_port_for_each_held(r->port, fn, ctx);
}

static void reset(void *comp) { ib_port_reset_stats(((ib_rnic *)comp)->port); }

static void rnic_free(void *comp)
{
    ib_rnic *r = comp;
    ib_port_free(r->port);
    sim_pkt_pool_free(&r->pool);
    for (uint32_t p = 0; p < r->n_ep; p++) {
        rc_qp_free(r->slots[p].qp);
        free(r->slots[p].req.v);
        free(r->slots[p].resp.v);
    }
    free(r->slots), free(r->times), free(r->my_msgs), free(r->rx);
    free(r);
}

const rnic_msg_times *ib_rnic_msg_times(const ib_rnic *r, unsigned msg) { return msg < r->cfg.n_msgs ? &r->times[msg] : NULL; }
const rc_qp *ib_rnic_qp(const ib_rnic *r, uint32_t dst) { return dst < r->n_ep ? r->slots[dst].qp : NULL; }
const ib_port *ib_rnic_port(const ib_rnic *r) { return r->port; }

void ib_rnic_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "ib_rnic", .build = build, .ingress = NULL, .connect = connect, .start = start, .check = check,
        .reset_stats = reset, .held = held, .free = rnic_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
