/* The communicator, a run of one collective, and the reference check. */
#include "models/collective/coll_impl.h"
#include "models/collective/tuning.h"
#include "sim/pdes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void collective_register_kinds(void) { nvgpu_register(); }

/* Per op: its name, nccl-tests' busbw factor (in units of 1/n: 2(n-1), n-1 or n), and how the ring runs it
 * (steps per chunk in units of n-1, 0 = one step on a chain; where the chain starts, after the root; which
 * receives reduce). alltoall and sendrecv are ops.c's (no ring rule). */
enum { RED_NEVER, RED_ALWAYS, RED_FIRST_N1 };   /* RED_FIRST_N1: the first n-1 steps (all_reduce's reduce-scatter half) */
static const struct coll_op_rule {
    const char *name;
    int busbw_n1, busbw_n;     /* busbw factor = (busbw_n1 (n-1) + busbw_n n) / n */
    unsigned steps_n1;         /* ring: steps per chunk in units of n-1; 0 = a chain, one step */
    unsigned chain_from;       /* a chain's first rank = root + chain_from */
    int reduce;                /* RED_*: which receives reduce */
    bool shift;                /* blocks shifted by one: reduce-scatter ends with rank r holding block r */
} op_rules[] = {
    [COLL_ALL_REDUCE] = { "all_reduce", 2, 0, 2, 0, RED_FIRST_N1, true },
    [COLL_ALL_GATHER] = { "all_gather", 1, 0, 1, 0, RED_NEVER, false },
    [COLL_REDUCE_SCATTER] = { "reduce_scatter", 1, 0, 1, 0, RED_ALWAYS, true },
    [COLL_BROADCAST] = { "broadcast", 0, 1, 0, 0, RED_NEVER, false },   /* root -> root+1 -> ... -> root-1 */
    [COLL_REDUCE] = { "reduce", 0, 1, 0, 1, RED_ALWAYS, false },        /* root+1 -> ... -> root */
    [COLL_ALLTOALL] = { "alltoall", 1, 0, 0, 0, RED_NEVER, false },
    [COLL_SENDRECV] = { "sendrecv", 0, 1, 0, 0, RED_NEVER, false },
};

const char *coll_op_name(enum coll_op op) { return (unsigned)op <= COLL_SENDRECV ? op_rules[op].name : "?"; }
bool coll_op_has_root(enum coll_op op) { return op == COLL_BROADCAST || op == COLL_REDUCE; }

double coll_busbw_factor(enum coll_op op, unsigned n)
{
    const struct coll_op_rule *u = &op_rules[op];
    return ((double)u->busbw_n1 * (n - 1) + (double)u->busbw_n * n) / n;
}

static bool op_chain(enum coll_op op) { return op_rules[op].steps_n1 == 0; }

/* The node and port at the far end of a GPU's port. */
static bool port_peer(const coll_comm *c, const nvgpu *g, unsigned port, uint32_t *node, unsigned *peer_port)
{
    const topo *t = sim_fabric_topo(c->f);
    const topo_node *n = &t->nodes[nvgpu_node(g)];
    if (port >= n->nports || n->port_link[port] < 0) return false;
    const topo_link *l = &t->links[n->port_link[port]];
    bool a = l->a == nvgpu_node(g) && l->a_port == port;
    *node = a ? l->b : l->a;
    *peer_port = a ? l->b_port : l->a_port;
    return true;
}

/* A flow id for the connection src -> dst of channel ch on `port`: the
 * channel (+1) in bits 40.., so the receiver knows it; the low bits chosen
 * so the first switch's ECMP hash sends it down the link to dst's port of
 * the same number -- NCCL's rings over NVSwitch each keep to their own
 * NVLinks at both ends (the hardware picks the port by address; here the
 * switch's ECMP is steered by the label). Falls back to any label when the
 * two ports are not on one switch. */
uint64_t coll_pick_flow(coll_comm *c, unsigned src, unsigned dst, unsigned port, unsigned ch, unsigned kind)
{
    uint64_t base = ((uint64_t)(ch + 1) << 40) | ((uint64_t)kind << 36) | ((uint64_t)src << 28) | ((uint64_t)dst << 20);
    /* from the topology, not the connected ports: another rank's GPUs are replicas, never connected */
    uint32_t sp_node, dp_node;
    unsigned sp_port, dp_port;
    if (!port_peer(c, c->rank[src].g, port, &sp_node, &sp_port) || !port_peer(c, c->rank[dst].g, port, &dp_node, &dp_port) ||
        sp_node != dp_node)
        return base;
    const topo_routes *routes = sim_fabric_routes(c->f);
    uint32_t dst_ep = nvgpu_endpoint(c->rank[dst].g);
    for (uint64_t i = 0; i < (1u << 16); i++) {
        topo_hop h = topo_route_next(routes, sp_node, (int)sp_port, dst_ep, base | i);
        if (h.port == dp_port) return base | i;
    }
    return base;
}

coll_comm *coll_comm_new(sim_fabric *f, const coll_cfg *cfg, char *err, size_t errlen)
{
    const topo *t = sim_fabric_topo(f);
    coll_comm *c = calloc(1, sizeof *c);
    c->f = f;
    c->k = sim_fabric_kernel(f);
    c->cfg = *cfg;
    unsigned gpus = 0;
    for (uint32_t e = 0; e < t->n_endpoints; e++) gpus += !strcmp(t->nodes[t->endpoint_node[e]].kind->name, "nvgpu");
    if (gpus > COLL_MAX_RANKS) { snprintf(err, errlen, "%u GPUs; allowed: up to %d ranks", gpus, COLL_MAX_RANKS); goto fail; }
    c->rank = calloc(gpus ? gpus : 1, sizeof *c->rank);
    c->rank_node = calloc(gpus ? gpus : 1, sizeof *c->rank_node);
    if (!c->rank || !c->rank_node) sim_fatal("coll_comm_new: out of memory");
    for (uint32_t e = 0; e < t->n_endpoints; e++) {
        uint32_t node = t->endpoint_node[e];
        if (strcmp(t->nodes[node].kind->name, "nvgpu")) continue;
        c->rank[c->n].g = sim_fabric_component(f, node);
        c->rank[c->n].r = c->n;
        c->rank[c->n].local = sim_fabric_node_local(f, node);
        c->rank[c->n].cm = c;
        c->n++;
    }
    if (cfg->check && cfg->transport && cfg->transport->size > 1) {
        snprintf(err, errlen, "check=1 carries values by pointer: one process only; use check=0 over ranks");
        goto fail;
    }
    if (c->n < 2) { snprintf(err, errlen, "%u nvgpu node(s); a communicator needs at least 2 GPUs (kind nvgpu)", c->n); goto fail; }
    unsigned ports = nvgpu_nvlink_ports(c->rank[0].g);
    for (unsigned r = 0; r < c->n; r++)
        if (nvgpu_nvlink_ports(c->rank[r].g) != ports) {
            snprintf(err, errlen, "GPU ranks 0 and %u have %u and %u NVLink ports; allowed: the same on every GPU", r, ports,
                     nvgpu_nvlink_ports(c->rank[r].g));
            goto fail;
        }
    /* the NVLink domains (the topology's, whatever gpus_per_node says: that shapes the tree only) */
    c->cfg.gpus_per_node = 0;
    if (coll_nodes_group(c, err, errlen)) goto fail;
    c->cfg.gpus_per_node = cfg->gpus_per_node;
    c->rank_domain = malloc(c->n * sizeof *c->rank_domain);
    if (!c->rank_domain) sim_fatal("coll_comm_new: out of memory");
    memcpy(c->rank_domain, c->rank_node, c->n * sizeof *c->rank_domain);
    /* channels: one per NVLink port; across nodes the largest multiple of the GPUs per node up to that, so
     * every NIC carries the same number of rings (ring_order.c) */
    unsigned per_node = c->n_nodes > 1 && c->n % c->n_nodes == 0 ? c->n / c->n_nodes : 0;
    c->channels = cfg->channels ? cfg->channels : per_node && per_node <= ports ? ports / per_node * per_node : ports;
    if (cfg->root >= c->n) { snprintf(err, errlen, "root=%u; allowed 0..%u (the ranks)", cfg->root, c->n - 1); goto fail; }
    if (c->channels > COLL_MAX_CHANNELS) { snprintf(err, errlen, "channels=%u; allowed 1..%d", c->channels, COLL_MAX_CHANNELS); goto fail; }
    if (cfg->slots < 1 || cfg->slots > COLL_MAX_SLOTS) { snprintf(err, errlen, "slots=%u; allowed 1..%d", cfg->slots, COLL_MAX_SLOTS); goto fail; }
    if ((unsigned)cfg->proto > COLL_PROTO_AUTO) { snprintf(err, errlen, "proto %d; allowed: %s", (int)cfg->proto, COLL_PROTO_CHOICES); goto fail; }
    if ((unsigned)cfg->dtype > COLL_DTYPE_BF16) { snprintf(err, errlen, "dtype %d; allowed: %s", (int)cfg->dtype, COLL_DTYPE_CHOICES); goto fail; }
    c->dtype = cfg->dtype;
    c->elem_bytes = coll_dtype_bytes(cfg->dtype);
    c->proto = cfg->proto == COLL_PROTO_AUTO ? COLL_PROTO_SIMPLE : cfg->proto;
    c->pd = coll_proto_get(c->proto);
    if (cfg->chunk_bytes < 128 || cfg->chunk_bytes % 4) { snprintf(err, errlen, "chunk_bytes=%u; allowed a multiple of 4, at least 128", cfg->chunk_bytes); goto fail; }
    for (unsigned r = 0; r < c->n; r++) {
        coll_rank *rk = &c->rank[r];
        unsigned next = (r + 1) % c->n, prev = (r + c->n - 1) % c->n;
        rk->next_ep = nvgpu_endpoint(c->rank[next].g);
        rk->prev_ep = nvgpu_endpoint(c->rank[prev].g);
        for (unsigned ch = 0; ch < c->channels; ch++) {
            rk->ch[ch].rk = rk;
            rk->ch[ch].ch = ch;
        }
        nvgpu_set_handlers(rk->g, ring_on_recv, ring_on_sent, ring_on_reduced, rk);
    }
    if (coll_ring_setup(c, err, errlen)) goto fail;
    if (coll_nodes_group(c, err, errlen)) goto fail;
    return c;
fail:
    free(c->rank);
    free(c->rank_node);
    free(c->ring_order);
    free(c->ring_pos);
    free(c->rank_domain);
    free(c);
    return NULL;
}

void coll_comm_free(coll_comm *c)
{
    if (!c) return;
    coll_tree_free(c);
    coll_p2p_free(c);
    coll_nvls_free(c);
    free(c->rank);
    free(c->rank_node);
    free(c->ring_order);
    free(c->ring_pos);
    free(c->rank_domain);
    free(c);
}
unsigned coll_comm_ranks(const coll_comm *c) { return c->n; }
unsigned coll_comm_channels(const coll_comm *c) { return c->channels; }
void coll_comm_set_check(coll_comm *c, bool check)
{
    if (check && c->cfg.transport && c->cfg.transport->size > 1) sim_fatal("coll_comm_set_check: check=1 over ranks (values go by pointer)");
    c->cfg.check = check;
}

void coll_comm_set_proto(coll_comm *c, enum coll_proto proto)
{
    if ((unsigned)proto > COLL_PROTO_AUTO) sim_fatal("coll_comm_set_proto: proto %d; allowed: %s", (int)proto, COLL_PROTO_CHOICES);
    c->cfg.proto = proto;
}

static uint64_t block_lo(const coll_comm *c, unsigned b) { return (uint64_t)b * c->count / c->n; }

void coll_span_range(const coll_comm *c, uint64_t lo, uint64_t lb, unsigned ch, uint64_t k, uint64_t *off, uint64_t *len)
{
    uint64_t clo = lb * ch / c->channels, lbc = lb * (ch + 1) / c->channels - clo;
    uint64_t klo = k * c->chunk_elems;
    *off = lo + clo + klo;
    *len = klo >= lbc ? 0 : lbc - klo < c->chunk_elems ? lbc - klo : c->chunk_elems;
}

void coll_range(const coll_comm *c, unsigned b, unsigned ch, uint64_t k, uint64_t *off, uint64_t *len)
{
    uint64_t lo = block_lo(c, b);
    coll_span_range(c, lo, block_lo(c, b + 1) - lo, ch, k, off, len);
}

unsigned coll_block(const coll_comm *c, unsigned r, unsigned s)
{
    unsigned shift = op_rules[c->op].shift ? 1 : 0;
    return (unsigned)((r + 2 * c->n - s % c->n - shift) % c->n);
}

bool coll_step_reduces(const coll_comm *c, unsigned s)
{
    int red = op_rules[c->op].reduce;
    return red == RED_ALWAYS || (red == RED_FIRST_N1 && s + 2 <= c->n);
}

/* A chain's items are chunks of the whole buffer; the ring's are (chunk, step) of the step's block. */
void coll_item_range(const coll_comm *c, unsigned sender, unsigned ch, uint64_t i, uint64_t *off, uint64_t *len)
{
    if (op_chain(c->op)) coll_span_range(c, 0, c->count, ch, i, off, len);
    else coll_range(c, coll_ring_block(c, ch, sender, (unsigned)(i % c->steps)), ch, i / c->steps, off, len);
}

/* Ring: send (k, s > 0) forwards the receive (k, s-1), item i-1. Chain: a rank that receives forwards item i. */
bool coll_send_reads(const ring_chan *rc, uint64_t i, uint64_t *j)
{
    const coll_comm *c = rc->rk->cm;
    if (op_chain(c->op)) {
        *j = i;
        return rc->recv_items > 0;
    }
    *j = i - 1;
    return i % c->steps != 0;
}

bool coll_recv_is_read(const ring_chan *rc, uint64_t j)
{
    const coll_comm *c = rc->rk->cm;
    return op_chain(c->op) ? rc->send_items > 0 : j % c->steps != c->steps - 1;
}

/* Broadcast: the root's next (the root receives nothing); reduce: the root (the sum lands there); else rank 0. */
unsigned coll_inject_rank(const coll_comm *c)
{
    if (c->op == COLL_BROADCAST) return (c->cfg.root + 1) % c->n;
    if (c->op == COLL_REDUCE) return c->cfg.root;
    return 0;
}

/* Exact in float: small integers, sums far below 2^24. */
float coll_input_value(unsigned r, uint64_t i) { return (float)((int)((r * 31u + i * 7u) % 17u) - 8); }

static uint64_t count_wrong(const coll_comm *c)
{
    uint64_t wrong = 0;
    if (op_chain(c->op)) {   /* broadcast: every rank holds the root's input; reduce: the root the sum (nccl-tests checks only it) */
        unsigned root = c->cfg.root;
        for (unsigned r = 0; r < c->n; r++) {
            if (c->op == COLL_REDUCE && r != root) continue;
            for (uint64_t i = 0; i < c->count; i++) {
                float want = 0;
                if (c->op == COLL_BROADCAST) want = coll_input_value(root, i);
                else for (unsigned q = 0; q < c->n; q++) want += coll_input_value(q, i);
                if (c->rank[r].out[i] != want) wrong++;
            }
        }
        return wrong;
    }
    for (unsigned r = 0; r < c->n; r++)
        for (unsigned b = 0; b < c->n; b++) {
            if (c->op == COLL_REDUCE_SCATTER && b != r) continue;   /* a rank's result is its block */
            for (uint64_t i = block_lo(c, b); i < block_lo(c, b + 1); i++) {
                float want = 0;
                if (c->op == COLL_ALL_GATHER) want = coll_input_value(b, i);
                else for (unsigned q = 0; q < c->n; q++) want = coll_dtype_add(c->dtype, want, coll_input_value(q, i));
                if (c->rank[r].out[i] != want) wrong++;
            }
        }
    return wrong;
}

/* Is rank r's GPU done with the run: every channel finished and every slot's ack back (nothing of it in flight)? */
static bool rank_quiet(const coll_comm *c, const coll_rank *rk)
{
    if (rk->chans_done != c->channels) return false;
    for (unsigned ch = 0; ch < c->channels; ch++)
        if (rk->ch[ch].credits != c->cfg.slots) return false;
    return true;
}

/* Runs until every GPU is quiet (or nothing is left anywhere: a deadlock,
 * which coll_run's checks name). Over ranks each rank runs only its GPUs, so
 * the end is agreed (a sum of the GPUs not yet quiet); the steps depend on
 * simulated time only, so one process stops at the same time. */
static void run_to_end(coll_comm *c, sim_time_ps t0)
{
    const sim_pdes_transport *tr = c->cfg.transport;
    for (;;) {
        sim_time_ps now = sim_now(c->k), step = (now - t0) / 8;
        if (step < COLL_STEP_MIN_PS) step = COLL_STEP_MIN_PS;
        sim_fabric_run(c->f, now + step);
        uint64_t left[2] = { 0, sim_next_time(c->k) != SIM_TIME_MAX };   /* GPUs not quiet; ranks with activity pending */
        for (unsigned r = 0; r < c->n; r++) left[0] += c->rank[r].local && !rank_quiet(c, &c->rank[r]);
        if (tr) sim_pdes_sum_u64(tr, left, 2);
        if (!left[0] || !left[1]) return;
    }
}

/* Over ranks: every rank takes every GPU's counters from its owner (a sum
 * where only the owner adds), so the checks and the time below are the same
 * everywhere and the same as in one process. */
static void share_counters(coll_comm *c)
{
    const sim_pdes_transport *tr = c->cfg.transport;
    if (!tr) return;
    enum { PER_CH = 10 };
    const size_t per_rank = 2 + (size_t)PER_CH * c->channels, n = per_rank * c->n;
    uint64_t *v = calloc(n, sizeof *v);
    if (!v) sim_fatal("coll_run: out of memory");
    for (unsigned r = 0; r < c->n; r++) {
        const coll_rank *rk = &c->rank[r];
        if (!rk->local) continue;
        uint64_t *w = v + r * per_rank;
        w[0] = rk->chans_done, w[1] = rk->done_ps;
        for (unsigned ch = 0; ch < c->channels; ch++) {
            const ring_chan *rc = &rk->ch[ch];
            uint64_t *x = w + 2 + (size_t)PER_CH * ch;
            x[0] = rc->credits, x[1] = rc->acks_recv, x[2] = rc->acks_sent, x[3] = rc->data_bytes_sent;
            x[4] = rc->flags_sent, x[5] = rc->recv_bytes_total, x[6] = rc->recv_i, x[7] = rc->done_ps;
            x[8] = rc->visible_sent, x[9] = rc->visible_recv;
        }
    }
    sim_pdes_sum_u64(tr, v, n);
    for (unsigned r = 0; r < c->n; r++) {
        coll_rank *rk = &c->rank[r];
        const uint64_t *w = v + r * per_rank;
        rk->chans_done = (unsigned)w[0], rk->done_ps = w[1];
        for (unsigned ch = 0; ch < c->channels; ch++) {
            ring_chan *rc = &rk->ch[ch];
            const uint64_t *x = w + 2 + (size_t)PER_CH * ch;
            rc->credits = (unsigned)x[0], rc->acks_recv = x[1], rc->acks_sent = x[2], rc->data_bytes_sent = x[3];
            rc->flags_sent = x[4], rc->recv_bytes_total = x[5], rc->recv_i = x[6], rc->done_ps = x[7];
            rc->visible_sent = x[8], rc->visible_recv = x[9];
        }
    }
    free(v);
}

int coll_run(coll_comm *c, enum coll_op op, uint64_t count, coll_result *res, char *why, size_t why_n)
{
    if (op == COLL_ALLTOALL || op == COLL_SENDRECV) return coll_p2p_run(c, op, count, res, why, why_n);
    memset(res, 0, sizeof *res);
    c->op = op;
    c->count = count;
    coll_set_run_proto(c, false, count);
    c->chunk_elems = coll_proto_slot_bytes(c->proto, c->cfg.chunk_bytes, c->elem_bytes) / c->elem_bytes;
    c->steps = op_chain(op) ? 1 : op_rules[op].steps_n1 * (c->n - 1);
    c->carry = c->cfg.check;
    c->ranks_done = 0;
    c->injected = false;
    /* chunks per channel: enough for the largest block's share (a chain: the whole buffer is its block) */
    uint64_t chunks[COLL_MAX_CHANNELS] = { 0 };
    for (unsigned ch = 0; ch < c->channels; ch++)
        for (unsigned b = 0; b < (op_chain(op) ? 1 : c->n); b++) {
            uint64_t lo = op_chain(op) ? 0 : block_lo(c, b), lb = op_chain(op) ? count : block_lo(c, b + 1) - lo;
            uint64_t lbc = lb * (ch + 1) / c->channels - lb * ch / c->channels;
            uint64_t kk = (lbc + c->chunk_elems - 1) / c->chunk_elems;
            if (kk > chunks[ch]) chunks[ch] = kk;
        }
    for (unsigned r = 0; r < c->n; r++) {
        coll_rank *rk = &c->rank[r];
        rk->chans_done = 0;
        rk->done_ps = 0;
        for (unsigned ch = 0; ch < c->channels; ch++) {
            ring_chan *rc = &rk->ch[ch];
            ring_chan keep = *rc;   /* the ring's shape (coll_ring_setup) stays; the run's state starts afresh */
            memset(rc, 0, sizeof *rc);
            rc->rk = rk, rc->ch = ch, rc->port = keep.port, rc->data_flow = keep.data_flow, rc->ack_flow = keep.ack_flow;
            rc->next_r = keep.next_r, rc->prev_r = keep.prev_r, rc->ack_port = keep.ack_port;
            rc->next_ep = keep.next_ep, rc->prev_ep = keep.prev_ep;
            rc->chunks = chunks[ch];
            rc->items = chunks[ch] * c->steps;
            rc->credits = c->cfg.slots;
            /* a chain along the channel's ring: its first rank only sends, its last (the one before the first) only receives */
            const unsigned *pos_of = c->ring_pos + (size_t)ch * c->n;
            unsigned first = c->ring_order[(size_t)ch * c->n + (pos_of[c->cfg.root] + op_rules[op].chain_from) % c->n];
            unsigned pos = (pos_of[r] + c->n - pos_of[first]) % c->n;
            rc->send_items = !op_chain(op) || pos < c->n - 1 ? rc->items : 0;
            rc->recv_items = !op_chain(op) || pos > 0 ? rc->items : 0;
        }
        if (c->carry) {
            rk->in = malloc((count ? count : 1) * sizeof(float));
            rk->out = calloc(count ? count : 1, sizeof(float));
            for (uint64_t i = 0; i < count; i++) rk->in[i] = coll_input_value(r, i);
            if (op == COLL_ALL_GATHER)   /* a rank's own block is in its output from the start */
                for (uint64_t i = block_lo(c, r); i < block_lo(c, r + 1); i++) rk->out[i] = rk->in[i];
            if (op == COLL_BROADCAST && r == c->cfg.root)   /* NCCL's root copies its input to its output as it sends */
                memcpy(rk->out, rk->in, count * sizeof(float));
        }
    }
    sim_time_ps t0 = sim_now(c->k);
    for (unsigned r = 0; r < c->n; r++)
        for (unsigned ch = 0; c->rank[r].local && ch < c->channels; ch++) ring_chan_start(&c->rank[r].ch[ch]);
    run_to_end(c, t0);
    share_counters(c);
    int rc_status = 0;
    sim_time_ps end = t0;
    for (unsigned r = 0; r < c->n && !rc_status; r++) {
        coll_rank *rk = &c->rank[r];
        if (rk->chans_done != c->channels) {
            snprintf(why, why_n, "rank %u: %u of %u channels finished (deadlock?)", r, rk->chans_done, c->channels);
            rc_status = -1;
            break;
        }
        if (rk->done_ps > end) end = rk->done_ps;
        for (unsigned ch = 0; ch < c->channels; ch++) {
            const ring_chan *rc = &rk->ch[ch], *nc = &c->rank[rc->next_r].ch[ch];   /* its ring's next */
            res->data_bytes_sent += rc->data_bytes_sent;
            res->flags_sent += rc->flags_sent;
            res->acks_sent += rc->acks_sent;
            res->data_bytes_received += rc->recv_bytes_total;
            res->visible_sent += nc->visible_sent;
            if (rc->credits != c->cfg.slots || rc->acks_recv != nc->acks_sent || rc->acks_sent != rc->recv_items ||
                rc->send_items != nc->recv_items ||
                nc->recv_bytes_total != rc->data_bytes_sent || nc->recv_i != rc->flags_sent || rc->visible_recv != nc->visible_sent ||
                (c->pd->flag_write && rc->flags_sent != rc->send_items)) {
                snprintf(why, why_n, "rank %u channel %u: credits %u of %u slots, acks %llu received / %llu sent by next, "
                         "data %llu sent / %llu received, flags %llu sent / %llu received, write responses %llu sent / %llu received (%s)",
                         r, ch, rc->credits, c->cfg.slots,
                         (unsigned long long)rc->acks_recv, (unsigned long long)nc->acks_sent, (unsigned long long)rc->data_bytes_sent,
                         (unsigned long long)nc->recv_bytes_total, (unsigned long long)rc->flags_sent, (unsigned long long)nc->recv_i,
                         (unsigned long long)nc->visible_sent, (unsigned long long)rc->visible_recv, c->pd->name);
                rc_status = -1;
                break;
            }
        }
    }
    res->count = count;
    res->time_ps = end - t0;
    res->proto = c->proto;
    if (c->carry) {
        if (!rc_status) res->wrong = count_wrong(c);
        res->checked = true;
    }
    for (unsigned r = 0; r < c->n; r++) {
        free(c->rank[r].in);
        free(c->rank[r].out);
        c->rank[r].in = c->rank[r].out = NULL;
        for (unsigned ch = 0; ch < c->channels; ch++)
            for (unsigned s = 0; s < COLL_MAX_SLOTS; s++) {
                ring_chan *rc = &c->rank[r].ch[ch];
                free(rc->vals[s]);
                free(rc->flag_vals[s]);
                rc->vals[s] = rc->flag_vals[s] = NULL;
            }
    }
    return rc_status;
}

uint64_t coll_rank_bytes_received(const coll_comm *c, unsigned r)
{
    if (r >= c->n) return 0;
    if (c->op == COLL_ALLTOALL || c->op == COLL_SENDRECV) return coll_p2p_rank_bytes_received(c, r);
    uint64_t b = 0;
    for (unsigned ch = 0; ch < c->channels; ch++) b += c->rank[r].ch[ch].recv_bytes_total;
    return b;
}
