/* The ring, per rank and channel, with NCCL's protocols (proto.h). Sends go
 * in (chunk, step) order, as NCCL's loop does (chunks outer, steps inner):
 * the send of (k, s) needs a free slot at next (credits) and, for s > 0, the
 * receive of (k, s-1) processed (reduced, or copied). Simple: a send is the
 * chunk's data in NVLink packets; when its last byte has landed the receiver
 * answers with a write response (the fence: the data is visible), and only
 * then does the flag write leave; the receiver takes the chunk at its flag.
 * LL / LL128: the data goes in lines that carry their own flags; the
 * receiver takes the chunk when its last line has landed. A receive slot is
 * freed -- an ack write back to prev -- once its data is read out: when the
 * send it feeds has left the port, or, for the last step of a chunk, when it
 * is processed. Broadcast and reduce run here too, as a chain along the ring
 * (one step per chunk; the per-op rules are collective.c's table: which items
 * a rank sends and receives, what a send reads, which range an item is). */
#include "models/collective/coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG(ch, i) (((uint64_t)(ch) << 48) | (i))
#define TAG_CH(t) ((unsigned)((t) >> 48))
#define TAG_I(t) ((t) & ((1ull << 48) - 1))

static void try_send(ring_chan *rc);

/* Simple: item i's data is visible at next (or it has none): its flag, and
 * the ready ones after it, leave -- in item order, as the receiver reads them. */
static void send_flag(ring_chan *rc, uint64_t i)
{
    coll_rank *rk = rc->rk;
    coll_comm *c = rk->cm;
    unsigned slot = (unsigned)(i % c->cfg.slots);
    if (rc->flag_pending[slot] != 1) sim_fatal("rank %u channel %u: a write response for item %llu, no flag waiting", rk->r, rc->ch, (unsigned long long)i);
    rc->flag_pending[slot] = 2;
    for (;;) {
        slot = (unsigned)(rc->flags_sent % c->cfg.slots);
        if (rc->flags_sent >= rc->send_i || rc->flag_pending[slot] != 2) return;
        rc->flag_pending[slot] = 0;
        nvgpu_send_small_urgent(rk->g, rc->port, rc->next_ep, rc->data_flow, c->cfg.flag_bytes, COLL_MSG_FLAG, rc->flag_vals[slot], rc->flags_sent);
        rc->flag_vals[slot] = NULL;
        rc->flags_sent++;
    }
}

/* The wire payload of receive item j (from prev). */
static uint64_t recv_payload(const ring_chan *rc, uint64_t j)
{
    coll_rank *rk = rc->rk;
    coll_comm *c = rk->cm;
    uint64_t off, len;
    coll_item_range(c, rc->prev_r, rc->ch, j, &off, &len);
    return coll_proto_payload_bytes(c->proto, len * c->elem_bytes);
}

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
    if (rc->processed != rc->recv_items || rc->send_i != rc->send_items || rc->finished) return;
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
    while (rc->send_i < rc->send_items && rc->credits) {
        uint64_t i = rc->send_i, j;
        bool reads = coll_send_reads(rc, i, &j);
        if (reads && rc->processed <= j) return;   /* waits for the receive it forwards (ring: (k, s-1)) */
        uint64_t off, len;
        coll_item_range(c, rk->r, rc->ch, i, &off, &len);
        float *vals = NULL;
        if (c->carry) {
            vals = malloc((len ? len : 1) * sizeof *vals);
            memcpy(vals, (reads ? rk->out : rk->in) + off, len * sizeof *vals);
        }
        rc->credits--;
        rc->send_i++;
        uint64_t wire = coll_proto_payload_bytes(c->proto, len * c->elem_bytes);
        rc->data_bytes_sent += wire;
        /* a forward frees the slot it read when it has left */
        if (c->pd->flag_write) {
            /* Simple: the data, then (after the fence) the flag */
            nvgpu_send_data(rk->g, rc->port, rc->next_ep, rc->data_flow, wire, COLL_MSG_DATA, NULL, reads, TAG(rc->ch, i));
            unsigned slot = (unsigned)(i % c->cfg.slots);
            if (rc->flag_pending[slot]) sim_fatal("rank %u channel %u: slot %u's flag still waits for its fence", rk->r, rc->ch, slot);
            rc->flag_pending[slot] = 1;
            rc->flag_vals[slot] = vals;
            if (!wire) send_flag(rc, i);   /* no data: nothing to fence */
        } else {
            /* LL, LL128: the lines carry the flags; the values ride with the last one (check) */
            nvgpu_send_data(rk->g, rc->port, rc->next_ep, rc->data_flow, wire, COLL_MSG_DATA, vals, reads, TAG(rc->ch, i));
        }
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
    coll_item_range(c, rc->prev_r, rc->ch, j, &off, &len);
    /* the seeded bug: one rank (0 on the ring) drops the first chunk with data it receives */
    bool skip = c->cfg.inject == COLL_INJECT_SKIP_CHUNK && rk->r == coll_inject_rank(c) && len && !c->injected;
    if (skip) c->injected = true;
    if (coll_step_reduces(c, s)) {
        for (uint64_t e = 0; e < len; e++) rk->out[off + e] = skip ? rk->in[off + e] : coll_dtype_add(c->dtype, rk->in[off + e], v[e]);
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
    while (rc->processed < rc->recv_items && rc->done[rc->processed % c->cfg.slots]) {
        rc->done[rc->processed % c->cfg.slots] = 0;
        if (!coll_recv_is_read(rc, rc->processed)) release_slot(rc);   /* (ring: the chunk's last step) nothing reads it further */
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

/* Receive item j is here with its values: reduce it (the reduction unit) or copy it. */
static void deliver(ring_chan *rc, nvgpu *g, uint64_t j, void *data)
{
    coll_comm *c = rc->rk->cm;
    unsigned s = (unsigned)(j % c->steps);
    uint64_t off, len;
    coll_item_range(c, rc->prev_r, rc->ch, j, &off, &len);
    rc->vals[j % c->cfg.slots] = data;
    if (coll_step_reduces(c, s) && len) nvgpu_reduce(g, len * c->elem_bytes, TAG(rc->ch, j));
    else processed(rc, j);
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
    if (kind == COLL_MSG_VISIBLE) {   /* Simple: item seq's data is visible at next: its flag may leave */
        rc->visible_recv++;
        send_flag(rc, seq);
        return;
    }
    if (kind == COLL_MSG_DATA) {
        uint64_t want = 0;
        while (rc->data_i < rc->recv_items && !(want = recv_payload(rc, rc->data_i))) rc->data_i++;   /* Simple's empty items send no data */
        if (rc->data_i >= rc->recv_items) sim_fatal("rank %u channel %u: data after the last item", rk->r, ch);
        rc->recv_bytes += payload;
        rc->recv_bytes_total += payload;
        if (rc->recv_bytes > want)
            sim_fatal("rank %u channel %u item %llu: %llu data bytes of %llu", rk->r, ch, (unsigned long long)rc->data_i,
                      (unsigned long long)rc->recv_bytes, (unsigned long long)want);
        if (rc->recv_bytes < want) return;
        uint64_t j = rc->data_i++;
        rc->recv_bytes = 0;
        if (c->pd->fence) {   /* the write response: the data is visible (the fence at the sender waits for it) */
            nvgpu_send_small_urgent(g, rc->ack_port, rc->prev_ep, rc->ack_flow, c->cfg.flag_bytes, COLL_MSG_VISIBLE, NULL, j);
            rc->visible_sent++;
            return;
        }
        deliver(rc, g, j, data);   /* LL, LL128: the last line's flag says the whole chunk is here */
        return;
    }
    if (kind != COLL_MSG_FLAG) sim_fatal("rank %u: a message of kind %u", rk->r, kind);
    uint64_t j = rc->recv_i++;
    if (seq != j) sim_fatal("rank %u channel %u: flag of item %llu, expected %llu", rk->r, ch, (unsigned long long)seq, (unsigned long long)j);
    while (rc->data_i <= j && !recv_payload(rc, rc->data_i)) rc->data_i++;
    if (rc->data_i <= j)
        sim_fatal("rank %u channel %u item %llu: flag before its data (%llu of %llu bytes)", rk->r, ch, (unsigned long long)j,
                  (unsigned long long)rc->recv_bytes, (unsigned long long)recv_payload(rc, j));
    deliver(rc, g, j, data);
}

void ring_chan_start(ring_chan *rc) { try_send(rc); }
