/* Flow-level collectives (coll_flow.h): rings of chunk flows on a flownet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/collective/coll_flow.h"
#include "sim/tier.h"

typedef struct cf_op cf_op;

/* Rank r's side of channel c: it sends to next and receives from prev. */
typedef struct cf_conn {
    cf_op *op;
    unsigned r, c;
    uint64_t flow_id;   /* to next, steered onto port c at both ends */
    uint64_t send_i, in_flight, recv_i;   /* recv_i: receives processed, in order */
    uint64_t queued;                      /* received, waiting for the reduction unit or an earlier item */
    bool wire_busy;                       /* a chunk is draining onto the path: the next one waits (FIFO, as packets) */
    sim_time_ps last_done_ps;             /* when its latest receive is processed */
} cf_conn;

struct cf_op {
    coll_flow *e;
    enum coll_op op;
    bool p2p;
    unsigned n, C, steps;
    uint64_t bytes, chunks;   /* chunks per (block, channel) share */
    uint32_t *ep;
    cf_conn *conn;            /* [r * C + c] */
    unsigned recv_done, need_done;   /* connections that have received every item; how many must */
    bool streamed;            /* one flow per connection (cfg.stream_above_flows) */
    sim_time_ps start_ps;     /* streamed: when it began (the reductions start no earlier) */
    coll_flow_done_fn done;
    void *arg;
};

typedef struct steer_entry { uint32_t src, dst, c; uint64_t flow_id; bool used; } steer_entry;

struct coll_flow {
    sim_kernel *k;
    sim_flownet *net;
    const topo *t;
    const topo_routes *r;
    coll_flow_cfg cfg;
    uint32_t *path;
    steer_entry *steer;       /* (src, dst, channel) -> flow id, open addressing */
    sim_time_ps *unit_free_ps;   /* per endpoint: its reduction unit is busy until then (FIFO, shared by every collective) */
    size_t steer_cap, steer_n;
    coll_flow_stats st;
};

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) sim_fatal("out of memory");
    return p;
}

coll_flow *coll_flow_new(sim_kernel *k, sim_flownet *net, const topo *t, const topo_routes *r, const coll_flow_cfg *cfg)
{
    coll_flow *e = xcalloc(1, sizeof *e);
    e->k = k, e->net = net, e->t = t, e->r = r, e->cfg = *cfg;
    if (!e->cfg.slots) e->cfg.slots = 1;
    if (!e->cfg.chunk_bytes) e->cfg.chunk_bytes = 128 * 1024;
    e->path = xcalloc((size_t)t->n_nodes + 1, sizeof *e->path);
    e->unit_free_ps = xcalloc(t->n_endpoints, sizeof *e->unit_free_ps);
    if (e->cfg.reduce_GBps <= 0) e->cfg.reduce_GBps = 1117.0;
    e->steer_cap = 1024;
    e->steer = xcalloc(e->steer_cap, sizeof *e->steer);
    return e;
}

void coll_flow_free(coll_flow *e)
{
    if (!e) return;
    free(e->path);
    free(e->steer);
    free(e->unit_free_ps);
    free(e);
}

static size_t steer_slot(const coll_flow *e, uint32_t src, uint32_t dst, uint32_t c)
{
    uint64_t h = ((uint64_t)src * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)dst * 0xC2B2AE3D27D4EB4Full) ^ ((uint64_t)c * 0x165667B19E3779F9ull);
    size_t i = (size_t)(h ^ (h >> 29)) & (e->steer_cap - 1);
    while (e->steer[i].used && !(e->steer[i].src == src && e->steer[i].dst == dst && e->steer[i].c == c)) i = (i + 1) & (e->steer_cap - 1);
    return i;
}

/* A node's ports on NVLink-class links, in port order (the rings' channels map onto them). */
static unsigned scale_up_ports(const topo *t, uint32_t node, unsigned *ports, unsigned max)
{
    unsigned n = 0;
    for (unsigned p = 0; p < t->nodes[node].nports && n < max; p++) {
        int32_t li = t->nodes[node].port_link[p];
        if (li >= 0 && sim_tier_of_preset(t->links[li].preset) == SIM_TIER_SCALE_UP) ports[n++] = p;
    }
    return n;
}

static bool is_scale_up(const topo *t, uint32_t channel) { return sim_tier_of_preset(t->links[channel / 2].preset) == SIM_TIER_SCALE_UP; }

/* A flow id for channel c from src to dst. Inside an NVLink domain (the
 * route goes over NVLink-class links) it is steered so the flow leaves src
 * by its c-th NVLink port and enters dst by its c-th (mod their counts):
 * NCCL's rings over NVSwitch keep each channel on its own NVLinks. Across
 * servers (the route leaves by a NIC) the channel only varies the ECMP hash.
 * Cached per (src, dst, c). */
static uint64_t steer(coll_flow *e, uint32_t src, uint32_t dst, unsigned c)
{
    if (2 * (e->steer_n + 1) > e->steer_cap) {
        steer_entry *old = e->steer;
        size_t cap = e->steer_cap;
        e->steer_cap *= 2;
        e->steer = xcalloc(e->steer_cap, sizeof *e->steer);
        for (size_t i = 0; i < cap; i++)
            if (old[i].used) e->steer[steer_slot(e, old[i].src, old[i].dst, old[i].c)] = old[i];
        free(old);
    }
    size_t i = steer_slot(e, src, dst, c);
    if (e->steer[i].used) return e->steer[i].flow_id;
    const topo *t = e->t;
    uint32_t sn = t->endpoint_node[src], dn = t->endpoint_node[dst];
    uint64_t base = ((uint64_t)c << 40) | ((uint64_t)src << 20) | dst, id = base;
    unsigned sp[256], dpt[256];
    unsigned ns = scale_up_ports(t, sn, sp, 256), nd = scale_up_ports(t, dn, dpt, 256);
    int len = topo_flow_path(t, e->r, src, dst, base, e->path, t->n_nodes + 1);
    if (len > 0 && ns && nd && is_scale_up(t, e->path[0]) && is_scale_up(t, e->path[len - 1])) {
        const topo_link *first = &t->links[t->nodes[sn].port_link[sp[c % ns]]];
        uint32_t want_first = (uint32_t)t->nodes[sn].port_link[sp[c % ns]] * 2 + !(first->a == sn && first->a_port == sp[c % ns]);
        int32_t want_last_link = t->nodes[dn].port_link[dpt[c % nd]];
        for (uint64_t k = 0; k < 4096; k++) {
            int l = topo_flow_path(t, e->r, src, dst, base ^ (k << 48), e->path, t->n_nodes + 1);
            if (l > 0 && e->path[0] == want_first && (int32_t)(e->path[l - 1] / 2) == want_last_link) {
                id = base ^ (k << 48);
                break;
            }
        }
    }
    e->steer[i] = (steer_entry){ src, dst, c, id, true };
    e->steer_n++;
    return id;
}

static uint64_t share_bytes(const cf_op *o, unsigned c)
{
    uint64_t block = o->bytes / (o->p2p ? 1 : o->n);
    return block / o->C + (c < block % o->C);
}

static uint64_t chunk_len(const cf_op *o, unsigned c, uint64_t k)
{
    uint64_t share = share_bytes(o, c), chunk = o->e->cfg.chunk_bytes, off = k * chunk;
    return off >= share ? 0 : share - off < chunk ? share - off : chunk;
}

static uint64_t items_of(const cf_op *o, const cf_conn *cn)
{
    if (o->p2p) return cn->r == 0 ? o->chunks : 0;
    return o->chunks * o->steps;
}

static void try_send(cf_conn *cn);
static void processed(void *obj, uint64_t tag);

static void reduced(void *obj, uint64_t tag)
{
    cf_conn *rx = obj;
    rx->queued--;
    processed(rx, tag);
}

static void finish_op(void *obj, uint64_t tag)
{
    (void)tag;
    cf_op *o = obj;
    o->e->st.finished++;
    coll_flow_done_fn done = o->done;
    void *arg = o->arg;
    free(o->conn);
    free(o->ep);
    free(o);
    if (done) done(arg);
}

/* The receive of item rx->recv_i is processed (reduced, or taken as it is). */
static void processed(void *obj, uint64_t tag)
{
    (void)tag;
    cf_conn *rx = obj;
    cf_op *o = rx->op;
    rx->recv_i++;
    uint64_t want = o->p2p ? (rx->r == 1 ? o->chunks : 0) : o->chunks * o->steps;
    if (rx->recv_i == want && ++o->recv_done == o->need_done) {
        finish_op(o, 0);
        return;
    }
    try_send(rx);
}

static bool step_reduces(const cf_op *o, unsigned s) { return !o->p2p && (o->op == COLL_REDUCE_SCATTER || (o->op == COLL_ALL_REDUCE && s + 2 <= o->n)); }

static cf_conn *sender_of(cf_conn *rx) { return &rx->op->conn[((rx->r + rx->op->n - 1) % rx->op->n) * rx->op->C + rx->c]; }

/* The chunk has left the sender: the connection's next chunk may go. */
static void chunk_out(void *arg)
{
    cf_conn *tx = sender_of(arg);
    tx->wire_busy = false;
    try_send(tx);
}

/* A chunk is in: its slot at the sender frees; a reduce step queues on the receiver's reduction unit. */
static void chunk_usable(void *arg)
{
    cf_conn *rx = arg;   /* the receiver's side */
    cf_op *o = rx->op;
    coll_flow *e = o->e;
    cf_conn *tx = sender_of(rx);
    tx->in_flight--;
    try_send(tx);
    uint64_t j = rx->recv_i + rx->queued++;   /* arrivals on one connection keep their order (one path, FIFO) */
    unsigned s = o->p2p ? 0 : (unsigned)(j % o->steps);
    uint64_t len = chunk_len(o, rx->c, o->p2p ? j : j / o->steps);
    sim_time_ps now = sim_now(e->k), at = rx->last_done_ps > now ? rx->last_done_ps : now;   /* after the items before it */
    if (step_reduces(o, s) && len) {
        sim_time_ps *free_ps = &e->unit_free_ps[o->ep[rx->r]];
        sim_time_ps begin = *free_ps > at ? *free_ps : at, dur = (sim_time_ps)((double)len * 1000.0 / e->cfg.reduce_GBps + 0.5);
        *free_ps = at = begin + (dur ? dur : 1);
    }
    rx->last_done_ps = at;
    if (at == now) {
        rx->queued--;
        processed(rx, 0);
    } else
        sim_schedule_callback(e->k, at - now, 0, reduced, rx, 0);
}

static void fence_done(void *obj, uint64_t tag)
{
    (void)tag;
    chunk_usable(obj);
}

/* The chunk's last byte is in: usable now, or after the fence (the same delay for every chunk keeps their order). */
static void chunk_in(void *arg)
{
    cf_conn *rx = arg;
    coll_flow *e = rx->op->e;
    if (e->cfg.fence_ns > 0) sim_schedule_callback(e->k, (sim_time_ps)(e->cfg.fence_ns * 1000.0 + 0.5), 0, fence_done, rx, 0);
    else chunk_usable(rx);
}

static void try_send(cf_conn *cn)
{
    cf_op *o = cn->op;
    coll_flow *e = o->e;
    const uint64_t items = items_of(o, cn);
    while (cn->send_i < items && cn->in_flight < e->cfg.slots && !cn->wire_busy) {
        uint64_t i = cn->send_i, k = o->p2p ? i : i / o->steps;
        unsigned s = o->p2p ? 0 : (unsigned)(i % o->steps);
        if (s && cn->recv_i < i) return;   /* waits for the receive of (k, s-1) */
        cn->send_i++;
        cn->in_flight++;
        cn->wire_busy = true;
        e->st.chunks++;
        uint64_t len = chunk_len(o, cn->c, k);
        e->st.bytes += (double)len;
        unsigned next = (cn->r + 1) % o->n;
        if (sim_flownet_start(e->net, o->ep[cn->r], o->ep[next], cn->flow_id, len, chunk_out, chunk_in, &o->conn[next * o->C + cn->c]) != 0)
            sim_fatal("coll_flow: no route from endpoint %u to %u", o->ep[cn->r], o->ep[next]);
    }
}

/* ---- streamed rings: a connection's steps as one flow ---- */

static void stream_finished(void *obj, uint64_t tag)
{
    (void)tag;
    cf_conn *rx = obj;
    cf_op *o = rx->op;
    if (++o->recv_done == o->need_done) finish_op(o, 0);
}

/* Connection tx's bytes are all in at its next rank. The chunked ring takes
 * the longer of two things: its link's bytes (the flow's time), and one
 * chunk's chain through every step (each waits for the one before it: the
 * chunk's time at the rate the flow got, a hop's latency, the fence, a
 * reduction) -- with one chunk per step the chain is the whole time, with
 * many the link's bytes hide it. The receiver's reductions also hold its unit
 * (FIFO, shared) for all of its reduced bytes from the start. */
static void stream_in(void *arg)
{
    cf_conn *rx = arg;
    cf_op *o = rx->op;
    coll_flow *e = o->e;
    cf_conn *tx = sender_of(rx);
    sim_time_ps now = sim_now(e->k);
    double hop_ns = sim_flownet_path_latency_ns(e->net, o->ep[tx->r], o->ep[rx->r], tx->flow_id);
    uint64_t share = share_bytes(o, rx->c), chunk = share < e->cfg.chunk_bytes ? share : e->cfg.chunk_bytes;
    double bytes = (double)o->steps * (double)share, flow_ns = (double)(now - o->start_ps) / 1000.0 - hop_ns;
    double chunk_ns = flow_ns > 0 && bytes > 0 ? flow_ns * (double)chunk / bytes : 0;
    unsigned reduce_steps = o->op == COLL_REDUCE_SCATTER || o->op == COLL_ALL_REDUCE ? o->n - 1 : 0;
    double reduce_ns = reduce_steps ? (double)chunk / e->cfg.reduce_GBps : 0;
    double chain_ns = (double)o->steps * (chunk_ns + hop_ns + e->cfg.fence_ns) + (double)reduce_steps * reduce_ns;
    sim_time_ps at = now + (sim_time_ps)((e->cfg.fence_ns + reduce_ns) * 1000.0 + 0.5);
    sim_time_ps chain_at = o->start_ps + (sim_time_ps)(chain_ns * 1000.0 + 0.5);
    if (chain_at > at) at = chain_at;
    if (reduce_steps) {
        sim_time_ps *free_ps = &e->unit_free_ps[o->ep[rx->r]];
        sim_time_ps begin = *free_ps > o->start_ps ? *free_ps : o->start_ps;
        *free_ps = begin + (sim_time_ps)((double)reduce_steps * (double)share * 1000.0 / e->cfg.reduce_GBps + 0.5);
        if (*free_ps > at) at = *free_ps;
    }
    sim_schedule_callback(e->k, at - now, 0, stream_finished, rx, 0);
}

static void stream_start(cf_op *o)
{
    coll_flow *e = o->e;
    o->start_ps = sim_now(e->k);
    for (unsigned r = 0; r < o->n; r++)
        for (unsigned c = 0; c < o->C; c++) {
            cf_conn *cn = &o->conn[r * o->C + c];
            unsigned next = (r + 1) % o->n;
            uint64_t bytes = (uint64_t)o->steps * share_bytes(o, c);
            e->st.chunks++;
            e->st.bytes += (double)bytes;
            if (sim_flownet_start(e->net, o->ep[r], o->ep[next], cn->flow_id, bytes, NULL, stream_in, &o->conn[next * o->C + c]) != 0)
                sim_fatal("coll_flow: no route from endpoint %u to %u", o->ep[r], o->ep[next]);
        }
}

static int start(coll_flow *e, bool p2p, enum coll_op op, const uint32_t *eps, unsigned n, uint64_t bytes, coll_flow_done_fn done,
                 void *arg, char *why, size_t why_n)
{
    const topo *t = e->t;
    if (n < 1) {
        snprintf(why, why_n, "a collective needs at least 1 rank");
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        if (eps[i] >= t->n_endpoints) {
            snprintf(why, why_n, "endpoint %u: the topology has %u", eps[i], t->n_endpoints);
            return -1;
        }
        for (unsigned j = 0; j < i; j++)
            if (eps[i] == eps[j]) {
                snprintf(why, why_n, "endpoint %u is in the group twice", eps[i]);
                return -1;
            }
    }
    cf_op *o = xcalloc(1, sizeof *o);
    o->e = e, o->op = op, o->p2p = p2p, o->n = n, o->bytes = bytes, o->done = done, o->arg = arg;
    unsigned su[256], n_su = scale_up_ports(t, t->endpoint_node[eps[0]], su, 256);
    o->C = e->cfg.channels ? e->cfg.channels : n_su ? n_su : 1;
    o->steps = op == COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
    o->ep = xcalloc(n, sizeof *o->ep);
    memcpy(o->ep, eps, n * sizeof *eps);
    uint64_t share0 = share_bytes(o, 0);
    o->chunks = (share0 + e->cfg.chunk_bytes - 1) / e->cfg.chunk_bytes;
    e->st.started++;
    if (n == 1 || o->steps == 0 || o->chunks == 0) {   /* nothing moves */
        o->conn = NULL;
        sim_schedule_callback(e->k, 0, 0, finish_op, o, 0);
        return 0;
    }
    o->conn = xcalloc((size_t)n * o->C, sizeof *o->conn);
    o->need_done = p2p ? o->C : n * o->C;
    for (unsigned r = 0; r < n; r++)
        for (unsigned c = 0; c < o->C; c++) {
            cf_conn *cn = &o->conn[r * o->C + c];
            cn->op = o, cn->r = r, cn->c = c;
            cn->flow_id = steer(e, eps[r], eps[(r + 1) % n], c);
        }
    o->streamed = !p2p && e->cfg.stream_above_flows &&
                  (double)n * o->C * o->steps * (double)o->chunks > (double)e->cfg.stream_above_flows;
    if (o->streamed) {
        e->st.streamed++;
        stream_start(o);
        return 0;
    }
    for (unsigned i = 0; i < n * o->C; i++) try_send(&o->conn[i]);
    return 0;
}

int coll_flow_start(coll_flow *e, enum coll_op op, const uint32_t *endpoints, unsigned n, uint64_t bytes, coll_flow_done_fn done,
                    void *arg, char *why, size_t why_n)
{
    if (op != COLL_ALL_REDUCE && op != COLL_ALL_GATHER && op != COLL_REDUCE_SCATTER) {   /* the ring's three; the rest: packet level */
        snprintf(why, why_n, "coll_flow: op %s at flow level is not modelled; allowed: all_reduce, all_gather, reduce_scatter", coll_op_name(op));
        return -1;
    }
    return start(e, false, op, endpoints, n, bytes, done, arg, why, why_n);
}

int coll_flow_send(coll_flow *e, uint32_t src, uint32_t dst, uint64_t bytes, coll_flow_done_fn done, void *arg, char *why,
                   size_t why_n)
{
    const uint32_t eps[2] = { src, dst };
    return start(e, true, COLL_ALL_GATHER, eps, 2, bytes, done, arg, why, why_n);
}

const coll_flow_stats *coll_flow_stats_get(const coll_flow *e) { return &e->st; }

int coll_flow_check(const coll_flow *e, char *why, size_t why_n)
{
    if (e->st.started != e->st.finished) {
        snprintf(why, why_n, "flow-level collectives: %llu started, %llu finished", (unsigned long long)e->st.started,
                 (unsigned long long)e->st.finished);
        return -1;
    }
    return 0;
}
