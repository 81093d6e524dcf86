/* The ring, per rank and channel, with NCCL's Simple protocol. Sends go in
 * (chunk, step) order, as NCCL's loop does (chunks outer, steps inner): the
 * send of (k, s) needs a free slot at next (credits) and, for s > 0, the
 * receive of (k, s-1) processed (reduced, or copied). A send is the chunk's
 * data in NVLink packets, then a flag write; the receiver takes the chunk
 * when its flag arrives (all its data is there: same path, in order). A
 * receive slot is freed -- an ack write back to prev -- once its data is
 * read out: when the send it feeds has left the port, or, for the last step
 * of a chunk, when it is processed. */
#include "models/collective/coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG(ch, i) (((uint64_t)(ch) << 48) | (i))
#define TAG_CH(t) ((unsigned)((t) >> 48))
#define TAG_I(t) ((t) & ((1ull << 48) - 1))

static void try_send(ring_chan *rc);

static void release_slot(ring_chan *rc)
{
    coll_rank *rk = rc->rk;
    nvgpu_send_small(rk->g, rc->ack_port, rc->prev_ep, rc->ack_flow, rk->cm->cfg.flag_bytes, COLL_MSG_ACK, NULL, rc->acks_sent);
    rc->acks_sent++;
}

static void chan_maybe_done(ring_chan *rc)
{
    coll_rank *rk = rc->rk;
    coll_comm *c = rk->cm;
    if (rc->processed != rc->items || rc->send_i != rc->items || rc->finished) return;
    rc->finished = true;
    rc->done_ps = sim_now(c->k);
    if (++rk->chans_done == c->channels) {
        rk->done_ps = rc->done_ps;
        c->ranks_done++;
    }
}

static void try_send(ring_chan *rc)
{
    coll_rank *rk = rc->rk;
    coll_comm *c = rk->cm;
    while (rc->send_i < rc->items && rc->credits) {
        uint64_t i = rc->send_i;
        unsigned s = (unsigned)(i % c->steps);
        uint64_t k = i / c->steps;
        if (s && rc->processed < i) return;   /* waits for the receive of (k, s-1) */
        uint64_t off, len;
        coll_range(c, coll_ring_block(c, rc->ch, rk->r, s), rc->ch, k, &off, &len);
        float *vals = NULL;
        if (c->carry) {
            vals = malloc((len ? len : 1) * sizeof *vals);
            memcpy(vals, (s == 0 ? rk->in : rk->out) + off, len * sizeof *vals);
        }
        rc->credits--;
        rc->send_i++;
        rc->data_bytes_sent += len * sizeof(float);
        /* the data, then the flag (NCCL: a fence, then the tail); s > 0 frees the slot it read when it has left */
        nvgpu_send_data(rk->g, rc->port, rc->next_ep, rc->data_flow, len * sizeof(float), COLL_MSG_DATA, NULL, s > 0, TAG(rc->ch, i));
        nvgpu_send_small(rk->g, rc->port, rc->next_ep, rc->data_flow, c->cfg.flag_bytes, COLL_MSG_FLAG, vals, i);
        rc->flags_sent++;
    }
    chan_maybe_done(rc);
}

/* Item j's values into the rank's buffers (check), at the end of its reduction or copy. */
static void apply(ring_chan *rc, uint64_t j)
{
    coll_rank *rk = rc->rk;
    coll_comm *c = rk->cm;
    unsigned slot = (unsigned)(j % c->cfg.slots);
    float *v = rc->vals[slot];
    rc->vals[slot] = NULL;
    if (!c->carry) return;
    unsigned s = (unsigned)(j % c->steps);
    uint64_t off, len;
    coll_range(c, coll_ring_block(c, rc->ch, rc->prev_r, s), rc->ch, j / c->steps, &off, &len);
    /* the seeded bug: rank 0 drops the first chunk with data it receives */
    bool skip = c->cfg.inject == COLL_INJECT_SKIP_CHUNK && rk->r == 0 && len && !c->injected;
    if (skip) c->injected = true;
    if (coll_step_reduces(c, s)) {
        for (uint64_t e = 0; e < len; e++) rk->out[off + e] = rk->in[off + e] + (skip ? 0.0f : v[e]);
    } else if (!skip) {
        memcpy(rk->out + off, v, len * sizeof *v);
    }
    free(v);
}

/* Item j is processed; the in-order ones before it advance `processed`. */
static void processed(ring_chan *rc, uint64_t j)
{
    coll_comm *c = rc->rk->cm;
    apply(rc, j);
    rc->done[j % c->cfg.slots] = 1;
    bool more = false;
    while (rc->processed < rc->items && rc->done[rc->processed % c->cfg.slots]) {
        rc->done[rc->processed % c->cfg.slots] = 0;
        if (rc->processed % c->steps == c->steps - 1) release_slot(rc);   /* the chunk's last step: nothing reads it further */
        rc->processed++;
        more = true;
    }
    if (more) try_send(rc);
}

void ring_on_reduced(void *ctx, nvgpu *g, uint64_t tag)
{
    (void)g;
    coll_rank *rk = ctx;
    processed(&rk->ch[TAG_CH(tag)], TAG_I(tag));
}

void ring_on_sent(void *ctx, nvgpu *g, uint64_t tag)
{
    (void)g;
    coll_rank *rk = ctx;
    /* the send of item TAG_I(tag) read the slot of the receive before it (same chunk, step before) */
    release_slot(&rk->ch[TAG_CH(tag)]);
}

void ring_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps)
{
    (void)arrival_ps;
    coll_rank *rk = ctx;
    coll_comm *c = rk->cm;
    unsigned ch = (unsigned)(pkt->flow >> 40) - 1;
    if (ch >= c->channels) sim_fatal("rank %u: a packet of flow %llx names channel %u", rk->r, (unsigned long long)pkt->flow, ch);
    ring_chan *rc = &rk->ch[ch];
    uint8_t kind = pkt->flags;
    uint32_t payload = pkt->payload_bytes;
    void *data = pkt->data;
    uint64_t seq = pkt->seq;
    sim_pkt_free(pkt);
    if (kind == COLL_MSG_ACK) {
        rc->acks_recv++;
        if (++rc->credits > c->cfg.slots) sim_fatal("rank %u channel %u: %u credits, more than its %u slots", rk->r, ch, rc->credits, c->cfg.slots);
        try_send(rc);
        return;
    }
    if (kind == COLL_MSG_DATA) {
        rc->recv_bytes += payload;
        rc->recv_bytes_total += payload;
        return;
    }
    if (kind != COLL_MSG_FLAG) sim_fatal("rank %u: a message of kind %u", rk->r, kind);
    uint64_t j = rc->recv_i++;
    if (seq != j) sim_fatal("rank %u channel %u: flag of item %llu, expected %llu", rk->r, ch, (unsigned long long)seq, (unsigned long long)j);
    unsigned s = (unsigned)(j % c->steps);
    uint64_t off, len;
    coll_range(c, coll_ring_block(c, ch, rc->prev_r, s), ch, j / c->steps, &off, &len);
    if (rc->recv_bytes != len * sizeof(float))
        sim_fatal("rank %u channel %u item %llu: flag after %llu of %llu data bytes", rk->r, ch, (unsigned long long)j,
                  (unsigned long long)rc->recv_bytes, (unsigned long long)(len * sizeof(float)));
    rc->recv_bytes = 0;
    rc->vals[j % c->cfg.slots] = data;
    if (coll_step_reduces(c, s) && len) nvgpu_reduce(g, len * sizeof(float), TAG(ch, j));
    else processed(rc, j);
}

void ring_chan_start(ring_chan *rc) { try_send(rc); }
