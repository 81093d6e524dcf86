/* alltoall and sendrecv: point-to-point connections, as NCCL's p2p
 * (ncclSend / ncclRecv in a group) runs them over NVSwitch.
 *
 * alltoall (algo direct): every rank sends block j of its buffer (count / n
 * elements) to rank j and receives rank j's block r into its block j, to
 * every peer at once; sendrecv (nccl-tests' sendrecv_perf): every rank sends
 * its whole buffer to (r+1) % n and receives (r-1) % n's. A connection
 * src -> dst of channel ch runs on NVLink port ch % ports at both ends (its
 * flow label steers the switch's ECMP there, as the ring's), carries the
 * channel's share of the span in chunks of chunk_bytes, with the ring's
 * Simple protocol: `slots` slots at the receiver and a credit per free slot
 * at the sender; a chunk is its data in NVLink packets then a flag write; the
 * receiver takes it when the flag arrives (all its data there, checked),
 * copies it out and frees the slot with an ack write. A rank's sends on a
 * channel take its peers in turn, one chunk each (NCCL's p2p warps of the
 * peers run at once; the port's FIFO sees their chunks interleaved), so all
 * seven peers of a DGX rank move at once through the NVSwitches. The own
 * block of alltoall is a local copy (no link), as NCCL's self-send. */
#include "models/collective/coll_impl.h"
#include "sim/pdes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One connection src -> dst on one channel: the sender's and the receiver's state. */
typedef struct p2p_conn {
    unsigned src, dst;
    uint32_t dst_ep, src_ep;
    uint64_t data_flow, ack_flow;  /* data (and flags) src -> dst; acks dst -> src */
    uint64_t src_lo, dst_lo, span; /* the elements at the sender, where they land at the receiver, how many */
    uint64_t chunks;
    /* sender */
    unsigned credits;
    uint64_t sent, data_bytes_sent, flags_sent, acks_recv;
    /* receiver */
    uint64_t recv_i, recv_bytes, recv_bytes_total, acks_sent;
} p2p_conn;

/* A rank's side of one channel. */
typedef struct p2p_chan {
    unsigned rr;                   /* the next peer offset to send a chunk (1..peers) */
    uint64_t send_left, recv_left; /* chunks to send (every peer), to receive */
    bool finished;
    sim_time_ps done_ps;
} p2p_chan;

struct p2p_state {
    coll_comm *c;
    unsigned n, channels, ports, peers;  /* peers: offsets 1..peers used this run (alltoall n-1, sendrecv 1) */
    p2p_conn *conn;                      /* [ch][src][d]: src -> (src + d) % n, d 1..n-1 (d 0 unused) */
    p2p_chan *chan;                      /* [r][ch] */
    unsigned *ep_rank;                   /* endpoint -> rank */
    uint32_t n_eps;
    unsigned ranks_done[COLL_MAX_RANKS]; /* per rank: channels finished */
    sim_time_ps rank_done_ps[COLL_MAX_RANKS];
    enum coll_op op;
};

static p2p_conn *conn_at(struct p2p_state *ps, unsigned ch, unsigned src, unsigned d)
{
    return &ps->conn[((size_t)ch * ps->n + src) * ps->n + d];
}

static struct p2p_state *p2p_state_new(coll_comm *c)
{
    struct p2p_state *ps = calloc(1, sizeof *ps);
    const topo *t = sim_fabric_topo(c->f);
    ps->c = c;
    ps->n = c->n;
    ps->channels = c->channels;
    ps->ports = nvgpu_nvlink_ports(c->rank[0].g);
    ps->conn = calloc((size_t)ps->channels * ps->n * ps->n, sizeof *ps->conn);
    ps->chan = calloc((size_t)ps->n * ps->channels, sizeof *ps->chan);
    ps->n_eps = t->n_endpoints;
    ps->ep_rank = malloc((ps->n_eps ? ps->n_eps : 1) * sizeof *ps->ep_rank);
    if (!ps->conn || !ps->chan || !ps->ep_rank) sim_fatal("p2p: out of memory");
    for (uint32_t e = 0; e < ps->n_eps; e++) ps->ep_rank[e] = ~0u;
    for (unsigned r = 0; r < ps->n; r++) ps->ep_rank[nvgpu_endpoint(c->rank[r].g)] = r;
    for (unsigned ch = 0; ch < ps->channels; ch++)
        for (unsigned src = 0; src < ps->n; src++)
            for (unsigned d = 1; d < ps->n; d++) {
                p2p_conn *k = conn_at(ps, ch, src, d);
                unsigned port = ch % ps->ports;
                k->src = src, k->dst = (src + d) % ps->n;
                k->dst_ep = nvgpu_endpoint(c->rank[k->dst].g);
                k->src_ep = nvgpu_endpoint(c->rank[src].g);
                k->data_flow = coll_pick_flow(c, src, k->dst, port, ch, COLL_MSG_DATA);
                k->ack_flow = coll_pick_flow(c, k->dst, src, port, ch, COLL_MSG_ACK);
            }
    return ps;
}

void coll_p2p_free(coll_comm *c)
{
    struct p2p_state *ps = c->p2p;
    if (!ps) return;
    free(ps->conn);
    free(ps->chan);
    free(ps->ep_rank);
    free(ps);
    c->p2p = NULL;
}

/* Chunk k of connection kc on channel ch: offset at the sender and length. */
static void chunk_range(const struct p2p_state *ps, const p2p_conn *kc, unsigned ch, uint64_t k, uint64_t *off, uint64_t *len)
{
    coll_span_range(ps->c, kc->src_lo, kc->span, ch, k, off, len);
}

static void chan_maybe_done(struct p2p_state *ps, unsigned r, unsigned ch)
{
    p2p_chan *pc = &ps->chan[(size_t)r * ps->channels + ch];
    if (pc->finished || pc->send_left || pc->recv_left) return;
    pc->finished = true;
    pc->done_ps = sim_now(ps->c->k);
    if (++ps->ranks_done[r] == ps->channels) ps->rank_done_ps[r] = pc->done_ps;
}

/* Rank r's sends on channel ch: its peers in turn, one chunk each, while they have credits. */
static void try_send(struct p2p_state *ps, unsigned r, unsigned ch)
{
    coll_comm *c = ps->c;
    coll_rank *rk = &c->rank[r];
    p2p_chan *pc = &ps->chan[(size_t)r * ps->channels + ch];
    unsigned port = ch % ps->ports, idle = 0;
    while (pc->send_left && idle < ps->peers) {
        unsigned d = pc->rr;
        pc->rr = pc->rr % ps->peers + 1;
        p2p_conn *kc = conn_at(ps, ch, r, d);
        if (kc->sent == kc->chunks || !kc->credits) { idle++; continue; }
        idle = 0;
        uint64_t off, len, k = kc->sent;
        chunk_range(ps, kc, ch, k, &off, &len);
        float *vals = NULL;
        if (c->carry) {
            vals = malloc((len ? len : 1) * sizeof *vals);
            memcpy(vals, rk->in + off, len * sizeof *vals);
        }
        kc->credits--;
        kc->sent++;
        pc->send_left--;
        kc->data_bytes_sent += len * sizeof(float);
        nvgpu_send_data(rk->g, port, kc->dst_ep, kc->data_flow, len * sizeof(float), COLL_MSG_DATA, NULL, false, 0);
        nvgpu_send_small(rk->g, port, kc->dst_ep, kc->data_flow, c->cfg.flag_bytes, COLL_MSG_FLAG, vals, k);
        kc->flags_sent++;
    }
    chan_maybe_done(ps, r, ch);
}

/* Chunk j of kc has its flag at the receiver: copy it out, free its slot. */
static void take_chunk(struct p2p_state *ps, p2p_conn *kc, unsigned ch, uint64_t seq, float *vals)
{
    coll_comm *c = ps->c;
    coll_rank *rk = &c->rank[kc->dst];
    uint64_t j = kc->recv_i++;
    if (seq != j) sim_fatal("p2p rank %u channel %u: flag of chunk %llu from rank %u, expected %llu", kc->dst, ch, (unsigned long long)seq,
                            kc->src, (unsigned long long)j);
    uint64_t off, len;
    chunk_range(ps, kc, ch, j, &off, &len);
    if (kc->recv_bytes != len * sizeof(float))
        sim_fatal("p2p rank %u channel %u chunk %llu from rank %u: flag after %llu of %llu data bytes", kc->dst, ch, (unsigned long long)j,
                  kc->src, (unsigned long long)kc->recv_bytes, (unsigned long long)(len * sizeof(float)));
    kc->recv_bytes = 0;
    if (c->carry) {
        /* the seeded bug: one rank (coll_inject_rank) drops the first chunk with data it receives */
        bool skip = c->cfg.inject == COLL_INJECT_SKIP_CHUNK && kc->dst == coll_inject_rank(c) && len && !c->injected;
        if (skip) c->injected = true;
        else memcpy(rk->out + kc->dst_lo + (off - kc->src_lo), vals, len * sizeof *vals);
    }
    free(vals);
    /* copied out (the copy is the receiving SM's, as the ring's copies): the slot is free */
    nvgpu_send_small(rk->g, ch % ps->ports, kc->src_ep, kc->ack_flow, c->cfg.flag_bytes, COLL_MSG_ACK, NULL, kc->acks_sent);
    kc->acks_sent++;
    ps->chan[(size_t)kc->dst * ps->channels + ch].recv_left--;
    chan_maybe_done(ps, kc->dst, ch);
}

static void p2p_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps)
{
    (void)g, (void)arrival_ps;
    coll_rank *rk = ctx;
    struct p2p_state *ps = rk->cm->p2p;
    unsigned ch = (unsigned)(pkt->flow >> 40) - 1;
    unsigned src = pkt->src < ps->n_eps ? ps->ep_rank[pkt->src] : ~0u;
    if (ch >= ps->channels || src >= ps->n || src == rk->r)
        sim_fatal("p2p rank %u: a packet of flow %llx from endpoint %u (channel %u, rank %u)", rk->r, (unsigned long long)pkt->flow, pkt->src,
                  ch, src);
    uint8_t kind = pkt->flags;
    uint32_t payload = pkt->payload_bytes;
    void *data = pkt->data;
    uint64_t seq = pkt->seq;
    sim_pkt_free(pkt);
    unsigned me = rk->r, n = ps->n;
    if (kind == COLL_MSG_ACK) {   /* for our connection to src */
        unsigned d = (src + n - me) % n;
        p2p_conn *kc = conn_at(ps, ch, me, d);
        if (d > ps->peers) sim_fatal("p2p rank %u channel %u: an ack from rank %u, not a peer", me, ch, src);
        kc->acks_recv++;
        if (++kc->credits > rk->cm->cfg.slots) sim_fatal("p2p rank %u channel %u: %u credits to rank %u, more than its slots", me, ch, kc->credits, src);
        try_send(ps, me, ch);
        return;
    }
    unsigned d = (me + n - src) % n;
    if (d > ps->peers) sim_fatal("p2p rank %u channel %u: data from rank %u, not a peer", me, ch, src);
    p2p_conn *kc = conn_at(ps, ch, src, d);
    if (kind == COLL_MSG_DATA) {
        kc->recv_bytes += payload;
        kc->recv_bytes_total += payload;
        return;
    }
    if (kind != COLL_MSG_FLAG) sim_fatal("p2p rank %u: a message of kind %u", me, kind);
    take_chunk(ps, kc, ch, seq, data);
}

static bool rank_quiet(const struct p2p_state *ps, unsigned r)
{
    if (ps->ranks_done[r] != ps->channels) return false;
    for (unsigned ch = 0; ch < ps->channels; ch++)
        for (unsigned d = 1; d <= ps->peers; d++)
            if (conn_at((struct p2p_state *)ps, ch, r, d)->credits != ps->c->cfg.slots) return false;
    return true;
}

static uint64_t count_wrong(const struct p2p_state *ps, uint64_t count)
{
    const coll_comm *c = ps->c;
    unsigned n = ps->n;
    uint64_t wrong = 0, b = count / n;
    for (unsigned r = 0; r < n; r++)
        for (uint64_t i = 0; i < count; i++) {
            /* alltoall: block j of rank i lands at rank j's block i; sendrecv: the previous rank's input */
            float want = ps->op == COLL_ALLTOALL ? coll_input_value((unsigned)(i / b), r * b + i % b) : coll_input_value((r + n - 1) % n, i);
            wrong += c->rank[r].out[i] != want;
        }
    return wrong;
}

int coll_p2p_run(coll_comm *c, enum coll_op op, uint64_t count, coll_result *res, char *why, size_t why_n)
{
    memset(res, 0, sizeof *res);
    if (op != COLL_ALLTOALL && op != COLL_SENDRECV) { snprintf(why, why_n, "p2p: op %s is not point-to-point", coll_op_name(op)); return -1; }
    if (c->cfg.transport && c->cfg.transport->size > 1) {
        snprintf(why, why_n, "%s runs in one process only (%u ranks)", coll_op_name(op), c->cfg.transport->size);
        return -1;
    }
    unsigned n = c->n;
    if (op == COLL_ALLTOALL && count % n) {
        snprintf(why, why_n, "alltoall of %llu elements: allowed a multiple of the %u ranks", (unsigned long long)count, n);
        return -1;
    }
    if (!c->p2p) c->p2p = p2p_state_new(c);
    struct p2p_state *ps = c->p2p;
    c->op = op;
    c->count = count;
    c->chunk_elems = c->cfg.chunk_bytes / sizeof(float);
    c->carry = c->cfg.check;
    c->injected = false;
    ps->op = op;
    ps->peers = op == COLL_ALLTOALL ? n - 1 : 1;
    uint64_t b = op == COLL_ALLTOALL ? count / n : count;
    for (unsigned r = 0; r < n; r++) {
        ps->ranks_done[r] = 0;
        ps->rank_done_ps[r] = 0;
        coll_rank *rk = &c->rank[r];
        if (c->carry) {
            rk->in = malloc((count ? count : 1) * sizeof(float));
            rk->out = calloc(count ? count : 1, sizeof(float));
            for (uint64_t i = 0; i < count; i++) rk->in[i] = coll_input_value(r, i);
            if (op == COLL_ALLTOALL)   /* the own block: a local copy */
                memcpy(rk->out + (uint64_t)r * b, rk->in + (uint64_t)r * b, b * sizeof(float));
        }
        for (unsigned ch = 0; ch < ps->channels; ch++) ps->chan[(size_t)r * ps->channels + ch] = (p2p_chan){ .rr = 1 };
    }
    for (unsigned ch = 0; ch < ps->channels; ch++)
        for (unsigned src = 0; src < n; src++)
            for (unsigned d = 1; d <= ps->peers; d++) {
                p2p_conn *kc = conn_at(ps, ch, src, d);
                kc->src_lo = op == COLL_ALLTOALL ? kc->dst * b : 0;
                kc->dst_lo = op == COLL_ALLTOALL ? src * b : 0;
                kc->span = b;
                uint64_t share = b * (ch + 1) / ps->channels - b * ch / ps->channels;
                kc->chunks = (share + c->chunk_elems - 1) / c->chunk_elems;
                kc->credits = c->cfg.slots;
                kc->sent = kc->data_bytes_sent = kc->flags_sent = kc->acks_recv = 0;
                kc->recv_i = kc->recv_bytes = kc->recv_bytes_total = kc->acks_sent = 0;
                ps->chan[(size_t)src * ps->channels + ch].send_left += kc->chunks;
                ps->chan[(size_t)kc->dst * ps->channels + ch].recv_left += kc->chunks;
            }
    for (unsigned r = 0; r < n; r++) nvgpu_set_handlers(c->rank[r].g, p2p_on_recv, NULL, NULL, &c->rank[r]);
    sim_time_ps t0 = sim_now(c->k);
    for (unsigned r = 0; r < n; r++)
        for (unsigned ch = 0; ch < ps->channels; ch++) try_send(ps, r, ch);
    /* to the end: every rank quiet (finished, every credit back), or nothing left to run (a deadlock, named below) */
    for (;;) {
        sim_time_ps now = sim_now(c->k), step = (now - t0) / 8;
        if (step < COLL_STEP_MIN_PS) step = COLL_STEP_MIN_PS;
        sim_fabric_run(c->f, now + step);
        bool quiet = true;
        for (unsigned r = 0; r < n && quiet; r++) quiet = rank_quiet(ps, r);
        if (quiet || sim_next_time(c->k) == SIM_TIME_MAX) break;
    }
    int status = 0;
    sim_time_ps end = t0;
    for (unsigned r = 0; r < n && !status; r++) {
        if (ps->ranks_done[r] != ps->channels) {
            snprintf(why, why_n, "%s rank %u: %u of %u channels finished (deadlock?)", coll_op_name(op), r, ps->ranks_done[r], ps->channels);
            status = -1;
            break;
        }
        if (ps->rank_done_ps[r] > end) end = ps->rank_done_ps[r];
        for (unsigned ch = 0; ch < ps->channels && !status; ch++)
            for (unsigned d = 1; d <= ps->peers && !status; d++) {
                const p2p_conn *kc = conn_at(ps, ch, r, d);
                res->data_bytes_sent += kc->data_bytes_sent;
                res->data_bytes_received += kc->recv_bytes_total;
                res->flags_sent += kc->flags_sent;
                res->acks_sent += kc->acks_sent;
                if (kc->credits != c->cfg.slots || kc->sent != kc->chunks || kc->flags_sent != kc->recv_i ||
                    kc->data_bytes_sent != kc->recv_bytes_total || kc->acks_recv != kc->acks_sent || kc->acks_sent != kc->chunks) {
                    snprintf(why, why_n, "%s rank %u channel %u -> rank %u: credits %u of %u, chunks %llu sent of %llu, flags %llu sent / %llu "
                             "received, data %llu sent / %llu received, acks %llu received / %llu sent", coll_op_name(op), r, ch, kc->dst,
                             kc->credits, c->cfg.slots, (unsigned long long)kc->sent, (unsigned long long)kc->chunks,
                             (unsigned long long)kc->flags_sent, (unsigned long long)kc->recv_i, (unsigned long long)kc->data_bytes_sent,
                             (unsigned long long)kc->recv_bytes_total, (unsigned long long)kc->acks_recv, (unsigned long long)kc->acks_sent);
                    status = -1;
                }
            }
    }
    res->count = count;
    res->time_ps = end - t0;
    if (c->carry) {
        res->checked = true;
        if (!status) res->wrong = count_wrong(ps, count);
    }
    for (unsigned r = 0; r < n; r++) {
        coll_rank *rk = &c->rank[r];
        free(rk->in);
        free(rk->out);
        rk->in = rk->out = NULL;
        nvgpu_set_handlers(rk->g, ring_on_recv, ring_on_sent, ring_on_reduced, rk);   /* the ring's again */
    }
    return status;
}

uint64_t coll_p2p_rank_bytes_received(const coll_comm *c, unsigned r)
{
    struct p2p_state *ps = c->p2p;
    uint64_t b = 0;
    if (!ps) return 0;
    for (unsigned ch = 0; ch < ps->channels; ch++)
        for (unsigned d = 1; d <= ps->peers; d++) b += conn_at(ps, ch, (r + ps->n - d) % ps->n, d)->recv_bytes_total;
    return b;
}
