/* Internal to models/traffic/endpoints*.c: the source queues' rings and the
 * sink's receive callback (endpoints_sink.c). Static inline: the rings are
 * on every source's hot path. */
#ifndef TRAFFIC_ENDPOINTS_IMPL_H
#define TRAFFIC_ENDPOINTS_IMPL_H

#include "models/traffic/endpoints.h"
#include "sim/ring.h"

#include <stdlib.h>
#include <string.h>

/* A sink's link receiver: a packet copy or one flit of it arrives at endpoint ctx. */
void tep_sink_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);

static inline bool queue_empty(const tep_queue *r) { return r->len == 0; }
static inline tep_qent *queue_first(tep_queue *r) { return &r->first; }

/* Entry x of the queue (0: the first). */
static inline const tep_qent *queue_at(const tep_queue *r, uint32_t x)
{
    return x == 0 ? &r->first : &r->rest[(r->rest_head + x - 1) & (r->cap - 1)];
}

static inline void queue_push(tep_queue *r, const tep_qent *v)
{
    if (r->len == 0) {
        r->first = *v;
        r->len = 1;
        return;
    }
    const uint32_t in_rest = r->len - 1;
    if (in_rest == r->cap) {
        size_t cap = r->cap;
        r->rest = sim_ring_grow(r->rest, sizeof *r->rest, r->rest_head, in_rest, &cap, 16);
        r->rest_head = 0;
        r->cap = (uint32_t)cap;
    }
    r->rest[(r->rest_head + in_rest) & (r->cap - 1)] = *v;
    r->len++;
}

/* Halves a ring that is down to a quarter full: a queue's ring otherwise
 * keeps the largest size it ever needed, and over a long run every queue of
 * a source gets to hold most of the source's packets once. */
static inline void queue_shrink(tep_queue *r)
{
    const uint32_t in_rest = r->len ? r->len - 1 : 0, cap = r->cap / 2;
    tep_qent *nb = malloc(cap * sizeof *nb);
    if (!nb) sim_fatal("out of memory");
    for (uint32_t x = 0; x < in_rest; x++) nb[x] = r->rest[(r->rest_head + x) & (r->cap - 1)];
    free(r->rest);
    r->rest = nb;
    r->rest_head = 0;
    r->cap = cap;
}

static inline void queue_pop(tep_queue *r)
{
    if (r->len > 1) {
        r->first = r->rest[r->rest_head];
        r->rest_head = (r->rest_head + 1) & (r->cap - 1);
    }
    r->len--;
    if (r->cap > 16 && r->len <= r->cap / 4) queue_shrink(r); /* 16: sim_ring_grow's first size */
}

#endif
