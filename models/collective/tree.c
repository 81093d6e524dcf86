/* The tree all_reduce, per rank and channel, with NCCL's Simple protocol.
 *
 * Shape (coll_tree_peers): over the nodes, NCCL's double binary tree
 * (src/graph/trees.cc: tree 0 a binary tree rooted at node 0 whose inner
 * nodes are alternate node numbers, tree 1 its mirror -- node x -> N-1-x --
 * when N is even, else shifted by one node, so that no node is inner in both);
 * inside a node a chain through its ranks in rank order, its first rank (the
 * head) the one joined to the other nodes. Channel ch runs tree ch % 2.
 *
 * Data: channel ch reduces elements [count ch/C, count (ch+1)/C) in chunks of
 * chunk_bytes. Up: a rank reduces its input with chunk k of every child (one
 * job on the GPU's reduction unit) and sends the partial sum to its parent;
 * the root's sum is the result. Down: the root sends the result to its
 * children, each copies it to its output and forwards it. Up and down run at
 * once (NCCL's runTreeSplit for Simple), each in chunk order.
 *
 * Every edge is two connections (up, down), each as the ring's: `slots`
 * slots at the receiver, a credit per free slot at the sender, a chunk is its
 * data in NVLink packets then a flag write, used when the flag arrives, and
 * freed by an ack write back when its data has been read out: when the send
 * it feeds has left the port (a forward to every child, the partial sum up),
 * or at once where nothing reads it further (the root's reduction done, a
 * leaf's copy). Every byte moves on the modelled links; the time is when the
 * last rank has processed its last chunk. */
#include "models/collective/coll_impl.h"
#include "sim/pdes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG(ch, down, child, k) (((uint64_t)(ch) << 48) | ((uint64_t)(down) << 47) | ((uint64_t)(child) << 44) | (k))
#define TAG_CH(t) ((unsigned)((t) >> 48))
#define TAG_DOWN(t) ((unsigned)(((t) >> 47) & 1))
#define TAG_K(t) ((t) & ((1ull << 44) - 1))

/* This rank's end of one tree edge: our data to the peer, and the peer's to us. */
typedef struct tree_end {
    unsigned peer;
    uint32_t peer_ep;
    uint64_t data_flow, ack_flow;  /* our data (and flags) to the peer; our acks to it */
    /* sender */
    unsigned credits;
    uint64_t sent, data_bytes_sent, flags_sent, acks_recv;
    uint64_t visible_recv;                  /* Simple: write responses, each lets a flag leave */
    uint8_t flag_pending[COLL_MAX_SLOTS];   /* Simple: per slot, the flag waiting for its fence */
    float *flag_vals[COLL_MAX_SLOTS];
    /* receiver */
    uint64_t recv_i, recv_bytes, recv_bytes_total, acks_sent;
    uint64_t data_i, visible_sent;          /* the chunk whose data arrives next; write responses sent */
    float *vals[COLL_MAX_SLOTS];   /* per slot: the values its flag made visible (check) */
    unsigned port;                 /* the port to the peer: the channel's NVLink, or the NIC's for a peer in another node */
} tree_end;

typedef struct tree_rank tree_rank;

typedef struct tree_chan {
    tree_rank *tr;
    unsigned ch, port;
    bool has_parent;
    unsigned nchild;
    tree_end up;                            /* the parent */
    tree_end down[COLL_TREE_MAX_CHILDREN];  /* the children */
    uint64_t lo, len, chunks;               /* the channel's elements, and its chunks */
    uint64_t reduce_next, reduced;          /* up: chunks given to the reduction unit; done (in order) */
    uint64_t down_avail, down_sent;         /* down: chunks with the result here; forwarded to every child */
    unsigned fwd_left[COLL_MAX_SLOTS];      /* per slot of the parent's connection: forwards not yet on the wire */
    bool finished;
    sim_time_ps done_ps;
} tree_chan;

struct tree_rank {
    struct tree_state *ts;
    coll_rank *rk;
    tree_chan *ch;
    unsigned chans_done;
    sim_time_ps done_ps;
};

struct tree_state {
    coll_comm *c;
    unsigned channels, ports;
    tree_rank *rank;
};

/* ---- shape ---- */

/* NCCL's binary tree over n (trees.cc ncclGetBtree): root 0 with one child. */
static void btree(int n, int r, int *u, int *d0, int *d1)
{
    int bit;
    for (bit = 1; bit < n; bit <<= 1)
        if (bit & r) break;
    if (r == 0) {
        *u = -1, *d0 = n > 1 ? bit >> 1 : -1, *d1 = -1;
        return;
    }
    int up = (r ^ bit) | (bit << 1);
    if (up >= n) up = r ^ bit;
    *u = up;
    int lowbit = bit >> 1;
    *d0 = lowbit == 0 ? -1 : r - lowbit;
    int down1 = lowbit == 0 ? -1 : r + lowbit;
    while (down1 >= n) {   /* the last child in bounds */
        down1 = lowbit == 0 ? -1 : r + lowbit;
        lowbit >>= 1;
    }
    *d1 = down1;
}

/* Tree t of the double binary tree (ncclGetDtree): t 1 mirrors (n even) or shifts (n odd) tree 0. */
static void dtree(int n, int r, unsigned t, int *u, int *d0, int *d1)
{
    if (t == 0) { btree(n, r, u, d0, d1); return; }
    int a, b, e;
    if (n % 2 == 1) {
        btree(n, (r - 1 + n) % n, &a, &b, &e);
        *u = a < 0 ? -1 : (a + 1) % n, *d0 = b < 0 ? -1 : (b + 1) % n, *d1 = e < 0 ? -1 : (e + 1) % n;
    } else {
        btree(n, n - 1 - r, &a, &b, &e);
        *u = a < 0 ? -1 : n - 1 - a, *d0 = b < 0 ? -1 : n - 1 - b, *d1 = e < 0 ? -1 : n - 1 - e;
    }
}

static unsigned node_head(const coll_comm *c, unsigned node)
{
    for (unsigned r = 0; r < c->n; r++)
        if (c->rank_node[r] == node) return r;
    sim_fatal("tree: node %u has no rank", node);
}

unsigned coll_tree_peers(const coll_comm *c, unsigned ch, unsigned r, int *parent, unsigned children[COLL_TREE_MAX_CHILDREN])
{
    unsigned node = c->rank_node[r], n = 0;
    int prev = -1, next = -1;   /* the chain inside the node */
    for (unsigned q = 0; q < c->n; q++) {
        if (c->rank_node[q] != node) continue;
        if (q < r) prev = (int)q;
        if (q > r && next < 0) next = (int)q;
    }
    *parent = prev;
    if (prev < 0) {   /* the head: the tree between nodes */
        int u, d0, d1;
        dtree((int)c->n_nodes, (int)node, ch % 2, &u, &d0, &d1);
        *parent = u < 0 ? -1 : (int)node_head(c, (unsigned)u);
        if (d0 >= 0) children[n++] = node_head(c, (unsigned)d0);
        if (d1 >= 0) children[n++] = node_head(c, (unsigned)d1);
    }
    if (next >= 0) children[n++] = (unsigned)next;
    return n;
}

unsigned coll_tree_channels(const coll_comm *c)
{
    unsigned ports = nvgpu_nvlink_ports(c->rank[0].g);
    unsigned ch = c->cfg.channels ? c->cfg.channels : 2 * ports;
    return ch > COLL_MAX_CHANNELS ? COLL_MAX_CHANNELS : ch;
}

unsigned coll_tree_port(const coll_comm *c, unsigned ch) { return (ch / 2) % nvgpu_nvlink_ports(c->rank[0].g); }

static void end_init(coll_comm *c, tree_end *e, unsigned r, unsigned peer, unsigned port, unsigned ch)
{
    memset(e, 0, sizeof *e);
    e->peer = peer;
    e->peer_ep = nvgpu_endpoint(c->rank[peer].g);
    /* another NVLink domain: through our NIC (without one, as in a file of switches joined by a network: the NVLink) */
    if (c->rank_domain[r] != c->rank_domain[peer] && nvgpu_nic_port(c->rank[r].g) >= 0) port = (unsigned)nvgpu_nic_port(c->rank[r].g);
    e->port = port;
    e->data_flow = coll_pick_flow(c, r, peer, port, ch, COLL_MSG_DATA);
    e->ack_flow = coll_pick_flow(c, r, peer, port, ch, COLL_MSG_ACK);
}

static struct tree_state *tree_state_new(coll_comm *c)
{
    struct tree_state *ts = calloc(1, sizeof *ts);
    ts->c = c;
    ts->channels = coll_tree_channels(c);
    ts->ports = nvgpu_nvlink_ports(c->rank[0].g);
    ts->rank = calloc(c->n, sizeof *ts->rank);
    for (unsigned r = 0; r < c->n; r++) {
        tree_rank *tr = &ts->rank[r];
        tr->ts = ts;
        tr->rk = &c->rank[r];
        tr->ch = calloc(ts->channels, sizeof *tr->ch);
        for (unsigned ch = 0; ch < ts->channels; ch++) {
            tree_chan *tc = &tr->ch[ch];
            tc->tr = tr;
            tc->ch = ch;
            tc->port = coll_tree_port(c, ch);
            int parent;
            unsigned kids[COLL_TREE_MAX_CHILDREN];
            tc->nchild = coll_tree_peers(c, ch, r, &parent, kids);
            tc->has_parent = parent >= 0;
            if (tc->has_parent) end_init(c, &tc->up, r, (unsigned)parent, tc->port, ch);
            for (unsigned i = 0; i < tc->nchild; i++) end_init(c, &tc->down[i], r, kids[i], tc->port, ch);
        }
    }
    return ts;
}

void coll_tree_free(coll_comm *c)
{
    struct tree_state *ts = c->tree;
    if (!ts) return;
    for (unsigned r = 0; r < c->n; r++) free(ts->rank[r].ch);
    free(ts->rank);
    free(ts);
    c->tree = NULL;
}

/* ---- the protocol ---- */

static coll_comm *comm_of(const tree_chan *tc) { return tc->tr->ts->c; }

static uint64_t chunk_len(const tree_chan *tc, uint64_t k)
{
    uint64_t ce = comm_of(tc)->chunk_elems, klo = k * ce;
    return klo >= tc->len ? 0 : tc->len - klo < ce ? tc->len - klo : ce;
}

static void send_ack(tree_chan *tc, tree_end *e)
{
    coll_comm *c = comm_of(tc);
    nvgpu_send_small(tc->tr->rk->g, e->port, e->peer_ep, e->ack_flow, c->cfg.flag_bytes, COLL_MSG_ACK, NULL, e->acks_sent);
    e->acks_sent++;
}

/* Simple: chunk k's flag to the peer, once its data is visible there. */
static void send_flag(tree_chan *tc, tree_end *e, uint64_t k)
{
    coll_comm *c = comm_of(tc);
    unsigned slot = (unsigned)(k % c->cfg.slots);
    if (!e->flag_pending[slot]) sim_fatal("tree rank %u channel %u: a write response for chunk %llu from rank %u, no flag waiting", tc->tr->rk->r, tc->ch,
                                          (unsigned long long)k, e->peer);
    e->flag_pending[slot] = 0;
    nvgpu_send_small_urgent(tc->tr->rk->g, e->port, e->peer_ep, e->data_flow, c->cfg.flag_bytes, COLL_MSG_FLAG, e->flag_vals[slot], k);
    e->flag_vals[slot] = NULL;
    e->flags_sent++;
}

/* A chunk to a peer with the run's protocol: Simple its data, then (after
 * the fence) the flag carrying its values (check); LL / LL128 its lines, the
 * values with the last. */
static void send_chunk(tree_chan *tc, tree_end *e, uint64_t k, bool notify, uint64_t tag)
{
    coll_comm *c = comm_of(tc);
    coll_rank *rk = tc->tr->rk;
    uint64_t len = chunk_len(tc, k), off = tc->lo + k * c->chunk_elems;
    float *vals = NULL;
    if (c->carry) {
        vals = malloc((len ? len : 1) * sizeof *vals);
        memcpy(vals, rk->out + off, len * sizeof *vals);
    }
    e->credits--;
    e->sent++;
    uint64_t wire = coll_proto_payload_bytes(c->proto, len * c->elem_bytes);
    e->data_bytes_sent += wire;
    if (!c->pd->flag_write) {
        nvgpu_send_data(rk->g, e->port, e->peer_ep, e->data_flow, wire, COLL_MSG_DATA, vals, notify, tag);
        return;
    }
    nvgpu_send_data(rk->g, e->port, e->peer_ep, e->data_flow, wire, COLL_MSG_DATA, NULL, notify, tag);
    unsigned slot = (unsigned)(k % c->cfg.slots);
    if (e->flag_pending[slot]) sim_fatal("tree rank %u channel %u: slot %u's flag to rank %u still waits for its fence", rk->r, tc->ch, slot, e->peer);
    e->flag_pending[slot] = 1;
    e->flag_vals[slot] = vals;
    if (!wire) send_flag(tc, e, k);
}

/* The seeded bug: rank 0 drops the first chunk with data it receives. */
static bool inject_now(tree_chan *tc, uint64_t len)
{
    coll_comm *c = comm_of(tc);
    if (c->cfg.inject != COLL_INJECT_SKIP_CHUNK || tc->tr->rk->r != 0 || !len || c->injected) return false;
    c->injected = true;
    return true;
}

static void maybe_done(tree_chan *tc)
{
    if (tc->finished) return;
    bool up = tc->has_parent ? tc->up.sent == tc->chunks : tc->reduced == tc->chunks;
    bool down = tc->down_avail == tc->chunks && (!tc->nchild || tc->down_sent == tc->chunks);
    if (!up || !down) return;
    coll_comm *c = comm_of(tc);
    tree_rank *tr = tc->tr;
    tc->finished = true;
    tc->done_ps = sim_now(c->k);
    if (++tr->chans_done == tr->ts->channels) tr->done_ps = tc->done_ps;
}

static void try_down(tree_chan *tc)
{
    while (tc->nchild && tc->down_sent < tc->down_avail) {
        for (unsigned i = 0; i < tc->nchild; i++)
            if (!tc->down[i].credits) return;   /* NCCL sends to every child in step */
        uint64_t k = tc->down_sent++;
        for (unsigned i = 0; i < tc->nchild; i++) send_chunk(tc, &tc->down[i], k, tc->has_parent, TAG(tc->ch, 1, i, k));
    }
    maybe_done(tc);
}

/* Chunk k's partial sum into the output: the input plus every child's (check). */
static void up_apply(tree_chan *tc, uint64_t k)
{
    coll_comm *c = comm_of(tc);
    coll_rank *rk = tc->tr->rk;
    unsigned slot = (unsigned)(k % c->cfg.slots);
    uint64_t len = chunk_len(tc, k), off = tc->lo + k * c->chunk_elems;
    if (c->carry) memcpy(rk->out + off, rk->in + off, len * sizeof(float));
    for (unsigned i = 0; i < tc->nchild; i++) {
        float *v = tc->down[i].vals[slot];
        tc->down[i].vals[slot] = NULL;
        if (c->carry && !inject_now(tc, len))
            for (uint64_t e = 0; e < len; e++) rk->out[off + e] = coll_dtype_add(c->dtype, rk->out[off + e], v[e]);
        free(v);
    }
}

static void try_up(tree_chan *tc)
{
    while (tc->reduce_next < tc->chunks) {
        uint64_t k = tc->reduce_next;
        for (unsigned i = 0; i < tc->nchild; i++)
            if (tc->down[i].recv_i <= k) goto sends;   /* waits for chunk k of every child */
        tc->reduce_next++;
        if (tc->nchild) {
            nvgpu_reduce(tc->tr->rk->g, chunk_len(tc, k) * comm_of(tc)->elem_bytes * tc->nchild, TAG(tc->ch, 0, 0, k));
        } else {   /* a leaf sends its input */
            up_apply(tc, k);
            tc->reduced++;
        }
    }
sends:
    /* the partial sum's send frees the children's slots once it has left (notify) */
    while (tc->has_parent && tc->up.sent < tc->reduced && tc->up.credits)
        send_chunk(tc, &tc->up, tc->up.sent, tc->nchild > 0, TAG(tc->ch, 0, 0, tc->up.sent));
    if (!tc->has_parent && tc->down_avail < tc->reduced) {   /* the root's sums are the result */
        tc->down_avail = tc->reduced;
        try_down(tc);
    }
    maybe_done(tc);
}

static void tree_on_reduced(void *ctx, nvgpu *g, uint64_t tag)
{
    (void)g;
    tree_rank *tr = ctx;
    tree_chan *tc = &tr->ch[TAG_CH(tag)];
    uint64_t k = TAG_K(tag);
    if (k != tc->reduced) sim_fatal("tree rank %u channel %u: reduction of chunk %llu done, expected %llu", tr->rk->r, tc->ch,
                                    (unsigned long long)k, (unsigned long long)tc->reduced);
    up_apply(tc, k);
    tc->reduced++;
    if (!tc->has_parent)   /* the root: nothing reads the children's slots further */
        for (unsigned i = 0; i < tc->nchild; i++) send_ack(tc, &tc->down[i]);
    try_up(tc);
}

static void tree_on_sent(void *ctx, nvgpu *g, uint64_t tag)
{
    (void)g;
    tree_rank *tr = ctx;
    tree_chan *tc = &tr->ch[TAG_CH(tag)];
    coll_comm *c = comm_of(tc);
    uint64_t k = TAG_K(tag);
    if (!TAG_DOWN(tag)) {   /* the partial sum of chunk k has left: the children's slots of chunk k are read */
        for (unsigned i = 0; i < tc->nchild; i++) send_ack(tc, &tc->down[i]);
        return;
    }
    unsigned slot = (unsigned)(k % c->cfg.slots);
    if (!tc->fwd_left[slot]) sim_fatal("tree rank %u channel %u: a forward of chunk %llu left, none pending", tr->rk->r, tc->ch, (unsigned long long)k);
    if (--tc->fwd_left[slot] == 0) send_ack(tc, &tc->up);   /* forwarded to every child: the parent's slot is read */
}

/* Chunk j from `e` is here with its values: Simple at its flag (its data
 * complete before: checked), LL / LL128 at its last line. */
static uint64_t take_chunk(tree_chan *tc, tree_end *e, uint64_t j, void *data)
{
    coll_comm *c = comm_of(tc);
    if (c->pd->flag_write) {
        if (j != e->recv_i) sim_fatal("tree rank %u channel %u: flag of chunk %llu from rank %u, expected %llu", tc->tr->rk->r, tc->ch,
                                      (unsigned long long)j, e->peer, (unsigned long long)e->recv_i);
        if (e->data_i <= j)
            sim_fatal("tree rank %u channel %u chunk %llu from rank %u: flag before its data (%llu bytes of it)", tc->tr->rk->r, tc->ch,
                      (unsigned long long)j, e->peer, (unsigned long long)e->recv_bytes);
    }
    e->recv_i++;   /* chunks taken (Simple: flags received) */
    unsigned slot = (unsigned)(j % c->cfg.slots);
    if (e->vals[slot]) sim_fatal("tree rank %u channel %u: slot %u from rank %u reused before it was read", tc->tr->rk->r, tc->ch, slot, e->peer);
    e->vals[slot] = data;
    return j;
}

/* The result's chunk j from the parent: into the output, then on to the children. */
static void down_received(tree_chan *tc, uint64_t j)
{
    coll_comm *c = comm_of(tc);
    coll_rank *rk = tc->tr->rk;
    unsigned slot = (unsigned)(j % c->cfg.slots);
    float *v = tc->up.vals[slot];
    tc->up.vals[slot] = NULL;
    uint64_t len = chunk_len(tc, j), off = tc->lo + j * c->chunk_elems;
    if (c->carry && !inject_now(tc, len)) memcpy(rk->out + off, v, len * sizeof *v);
    free(v);
    if (j != tc->down_avail) sim_fatal("tree rank %u channel %u: result chunk %llu, expected %llu", rk->r, tc->ch, (unsigned long long)j,
                                       (unsigned long long)tc->down_avail);
    tc->down_avail++;
    if (!tc->nchild) send_ack(tc, &tc->up);   /* a leaf: copied, nothing reads it further */
    else tc->fwd_left[slot] = tc->nchild;
    try_down(tc);
}

static void tree_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps)
{
    (void)arrival_ps;
    tree_rank *tr = ctx;
    unsigned ch = (unsigned)(pkt->flow >> 40) - 1, src = (unsigned)(pkt->flow >> 28) & 0xff;
    if (ch >= tr->ts->channels) sim_fatal("tree rank %u: a packet of flow %llx names channel %u", tr->rk->r, (unsigned long long)pkt->flow, ch);
    tree_chan *tc = &tr->ch[ch];
    tree_end *e = NULL;
    bool from_parent = tc->has_parent && tc->up.peer == src;
    if (from_parent) e = &tc->up;
    for (unsigned i = 0; !e && i < tc->nchild; i++)
        if (tc->down[i].peer == src) e = &tc->down[i];
    if (!e) sim_fatal("tree rank %u channel %u: a packet from rank %u, not a neighbour", tr->rk->r, ch, src);
    uint8_t kind = pkt->flags;
    uint32_t payload = pkt->payload_bytes;
    void *data = pkt->data;
    uint64_t seq = pkt->seq;
    sim_pkt_free(pkt);
    coll_comm *c = comm_of(tc);
    if (kind == COLL_MSG_ACK) {
        e->acks_recv++;
        if (++e->credits > c->cfg.slots) sim_fatal("tree rank %u channel %u: %u credits to rank %u, more than %u slots", tr->rk->r, ch, e->credits, src, c->cfg.slots);
        if (from_parent) try_up(tc);
        else try_down(tc);
        return;
    }
    if (kind == COLL_MSG_VISIBLE) {   /* Simple: chunk seq's data is visible at the peer: its flag may leave */
        e->visible_recv++;
        send_flag(tc, e, seq);
        return;
    }
    uint64_t j;
    if (kind == COLL_MSG_DATA) {
        uint64_t want = coll_proto_payload_bytes(c->proto, chunk_len(tc, e->data_i) * c->elem_bytes);
        e->recv_bytes += payload;
        e->recv_bytes_total += payload;
        if (e->data_i >= tc->chunks || e->recv_bytes > want)
            sim_fatal("tree rank %u channel %u chunk %llu from rank %u: %llu data bytes of %llu", tr->rk->r, ch, (unsigned long long)e->data_i, src,
                      (unsigned long long)e->recv_bytes, (unsigned long long)want);
        if (e->recv_bytes < want) return;
        e->recv_bytes = 0;
        j = e->data_i++;
        if (c->pd->fence) {   /* the write response: the fence at the sender waits for it */
            nvgpu_send_small_urgent(g, e->port, e->peer_ep, e->ack_flow, c->cfg.flag_bytes, COLL_MSG_VISIBLE, NULL, j);
            e->visible_sent++;
            return;
        }
        j = take_chunk(tc, e, j, data);   /* LL, LL128: the last line's flag */
    } else {
        if (kind != COLL_MSG_FLAG) sim_fatal("tree rank %u: a message of kind %u", tr->rk->r, kind);
        j = take_chunk(tc, e, seq, data);
    }
    if (from_parent) down_received(tc, j);
    else try_up(tc);
}

/* ---- a run ---- */

static bool chan_quiet(const tree_chan *tc, unsigned slots)
{
    if (!tc->finished || (tc->has_parent && tc->up.credits != slots)) return false;
    for (unsigned i = 0; i < tc->nchild; i++)
        if (tc->down[i].credits != slots) return false;
    return true;
}

/* The peer's end of the edge e of rank r. */
static const tree_end *far_end(const struct tree_state *ts, unsigned r, unsigned ch, const tree_end *e)
{
    const tree_chan *pc = &ts->rank[e->peer].ch[ch];
    if (pc->has_parent && pc->up.peer == r) return &pc->up;
    for (unsigned i = 0; i < pc->nchild; i++)
        if (pc->down[i].peer == r) return &pc->down[i];
    return NULL;
}

/* Conservation of one connection (e's data to the peer): 0, or -1 with why. */
static int check_conn(const struct tree_state *ts, unsigned r, unsigned ch, const tree_end *e, uint64_t chunks, char *why, size_t why_n)
{
    const tree_end *f = far_end(ts, r, ch, e);
    unsigned slots = ts->c->cfg.slots;
    if (!f) { snprintf(why, why_n, "tree rank %u channel %u: rank %u does not name it back", r, ch, e->peer); return -1; }
    bool simple = ts->c->pd->flag_write;
    if (e->credits != slots || e->sent != chunks || (simple ? e->flags_sent : chunks) != f->recv_i || e->data_bytes_sent != f->recv_bytes_total ||
        e->acks_recv != f->acks_sent || f->acks_sent != chunks || e->visible_recv != f->visible_sent) {
        snprintf(why, why_n, "tree rank %u channel %u -> rank %u: credits %u of %u, chunks %llu sent of %llu, flags %llu sent / %llu received, "
                 "data %llu sent / %llu received, acks %llu received / %llu sent", r, ch, e->peer, e->credits, slots,
                 (unsigned long long)e->sent, (unsigned long long)chunks, (unsigned long long)e->flags_sent, (unsigned long long)f->recv_i,
                 (unsigned long long)e->data_bytes_sent, (unsigned long long)f->recv_bytes_total, (unsigned long long)e->acks_recv,
                 (unsigned long long)f->acks_sent);
        return -1;
    }
    return 0;
}

int coll_tree_all_reduce(coll_comm *c, uint64_t count, coll_result *res, char *why, size_t why_n)
{
    memset(res, 0, sizeof *res);
    if (c->cfg.transport && c->cfg.transport->size > 1) {
        snprintf(why, why_n, "the tree runs in one process only (%u ranks)", c->cfg.transport->size);
        return -1;
    }
    if (!c->tree) c->tree = tree_state_new(c);
    struct tree_state *ts = c->tree;
    c->op = COLL_ALL_REDUCE;
    c->count = count;
    coll_set_run_proto(c, true, count);
    c->chunk_elems = coll_proto_slot_bytes(c->proto, c->cfg.chunk_bytes, c->elem_bytes) / c->elem_bytes;
    c->carry = c->cfg.check;
    c->injected = false;
    unsigned slots = c->cfg.slots;
    for (unsigned r = 0; r < c->n; r++) {
        tree_rank *tr = &ts->rank[r];
        coll_rank *rk = tr->rk;
        tr->chans_done = 0;
        tr->done_ps = 0;
        for (unsigned ch = 0; ch < ts->channels; ch++) {
            tree_chan *tc = &tr->ch[ch];
            tc->lo = count * ch / ts->channels;
            tc->len = count * (ch + 1) / ts->channels - tc->lo;
            tc->chunks = (tc->len + c->chunk_elems - 1) / c->chunk_elems;
            tc->reduce_next = tc->reduced = tc->down_avail = tc->down_sent = 0;
            memset(tc->fwd_left, 0, sizeof tc->fwd_left);
            tc->finished = false;
            tc->done_ps = 0;
            tree_end *ends[1 + COLL_TREE_MAX_CHILDREN];
            unsigned ne = 0;
            if (tc->has_parent) ends[ne++] = &tc->up;
            for (unsigned i = 0; i < tc->nchild; i++) ends[ne++] = &tc->down[i];
            for (unsigned i = 0; i < ne; i++) {
                tree_end *e = ends[i];
                e->credits = slots;
                e->sent = e->data_bytes_sent = e->flags_sent = e->acks_recv = 0;
                e->recv_i = e->recv_bytes = e->recv_bytes_total = e->acks_sent = 0;
                e->data_i = e->visible_sent = e->visible_recv = 0;
                memset(e->flag_pending, 0, sizeof e->flag_pending);
            }
        }
        if (c->carry) {
            rk->in = malloc((count ? count : 1) * sizeof(float));
            rk->out = calloc(count ? count : 1, sizeof(float));
            for (uint64_t i = 0; i < count; i++) rk->in[i] = coll_input_value(r, i);
        }
        nvgpu_set_handlers(rk->g, tree_on_recv, tree_on_sent, tree_on_reduced, tr);
    }
    sim_time_ps t0 = sim_now(c->k);
    for (unsigned r = 0; r < c->n; r++)
        for (unsigned ch = 0; ch < ts->channels; ch++) {
            try_up(&ts->rank[r].ch[ch]);
            try_down(&ts->rank[r].ch[ch]);
        }
    /* to the end: every rank quiet (finished, every credit back), or nothing left to run (a deadlock, named below) */
    for (;;) {
        sim_time_ps now = sim_now(c->k), step = (now - t0) / 8;
        if (step < COLL_STEP_MIN_PS) step = COLL_STEP_MIN_PS;
        sim_fabric_run(c->f, now + step);
        bool quiet = true;
        for (unsigned r = 0; r < c->n && quiet; r++)
            for (unsigned ch = 0; ch < ts->channels && quiet; ch++) quiet = chan_quiet(&ts->rank[r].ch[ch], slots);
        if (quiet || sim_next_time(c->k) == SIM_TIME_MAX) break;
    }
    int status = 0;
    sim_time_ps end = t0;
    for (unsigned r = 0; r < c->n && !status; r++) {
        tree_rank *tr = &ts->rank[r];
        if (tr->chans_done != ts->channels) {
            snprintf(why, why_n, "tree rank %u: %u of %u channels finished (deadlock?)", r, tr->chans_done, ts->channels);
            status = -1;
            break;
        }
        if (tr->done_ps > end) end = tr->done_ps;
        for (unsigned ch = 0; ch < ts->channels && !status; ch++) {
            tree_chan *tc = &tr->ch[ch];
            if (tc->has_parent) status = check_conn(ts, r, ch, &tc->up, tc->chunks, why, why_n);
            for (unsigned i = 0; i < tc->nchild && !status; i++) status = check_conn(ts, r, ch, &tc->down[i], tc->chunks, why, why_n);
            if (tc->has_parent)
                res->data_bytes_sent += tc->up.data_bytes_sent, res->flags_sent += tc->up.flags_sent, res->acks_sent += tc->up.acks_sent,
                    res->visible_sent += tc->up.visible_sent;
            for (unsigned i = 0; i < tc->nchild; i++)
                res->data_bytes_sent += tc->down[i].data_bytes_sent, res->flags_sent += tc->down[i].flags_sent, res->acks_sent += tc->down[i].acks_sent,
                    res->visible_sent += tc->down[i].visible_sent;
            if (tc->has_parent) res->data_bytes_received += tc->up.recv_bytes_total;
            for (unsigned i = 0; i < tc->nchild; i++) res->data_bytes_received += tc->down[i].recv_bytes_total;
        }
    }
    res->count = count;
    res->time_ps = end - t0;
    res->proto = c->proto;
    if (c->carry) {
        res->checked = true;
        if (!status)
            for (uint64_t i = 0; i < count; i++) {
                float want = 0;
                for (unsigned q = 0; q < c->n; q++) want = coll_dtype_add(c->dtype, want, coll_input_value(q, i));
                for (unsigned r = 0; r < c->n; r++) res->wrong += c->rank[r].out[i] != want;
            }
    }
    for (unsigned r = 0; r < c->n; r++) {
        coll_rank *rk = &c->rank[r];
        free(rk->in);
        free(rk->out);
        rk->in = rk->out = NULL;
        for (unsigned ch = 0; ch < ts->channels; ch++) {
            tree_chan *tc = &ts->rank[r].ch[ch];
            for (unsigned s = 0; s < COLL_MAX_SLOTS; s++) {
                free(tc->up.vals[s]);
                free(tc->up.flag_vals[s]);
                tc->up.vals[s] = tc->up.flag_vals[s] = NULL;
                for (unsigned i = 0; i < COLL_TREE_MAX_CHILDREN; i++) {
                    free(tc->down[i].vals[s]);
                    free(tc->down[i].flag_vals[s]);
                    tc->down[i].vals[s] = tc->down[i].flag_vals[s] = NULL;
                }
            }
        }
        nvgpu_set_handlers(rk->g, ring_on_recv, ring_on_sent, ring_on_reduced, rk);   /* the ring's again */
    }
    return status;
}
