/* Internal to models/traffic/endpoints*.c: the source queues' rings, the
 * sources' due wheel, and the sink's receive callback (endpoints_sink.c).
 * Static inline: the rings and the wheel are on every source's hot path. */
#ifndef TRAFFIC_ENDPOINTS_IMPL_H
#define TRAFFIC_ENDPOINTS_IMPL_H

#include "models/traffic/endpoints.h"
#include "sim/ring.h"

#include <stdlib.h>
#include <string.h>

/* A sink's link receiver: a packet copy or one flit of it arrives at port ctx. */
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

/* Port i is next due at cycle `due` (UINT64_MAX: never; at or before
 * `cycle`: at the next call, as the sources woken). */
static inline void file_due(tep *e, int i, uint64_t due, uint64_t cycle)
{
    const uint64_t bit = 1ULL << i;
    e->due_cycle[i] = due;
    e->far_mask &= ~bit;
    if (due == UINT64_MAX) return;
    if (due <= cycle) {
        e->wake_mask |= bit;
    } else if (due - cycle <= TEP_WHEEL) { /* slot cycle % TEP_WHEEL was taken: it is next read at cycle + TEP_WHEEL */
        e->wheel[due % TEP_WHEEL] |= bit;
    } else {
        e->far_mask |= bit;
        if (due < e->far_min) e->far_min = due;
    }
}

/* Far sources now within the wheel's reach go into it; returns those due
 * at `cycle` already (woken meanwhile). */
static inline uint64_t refile_far(tep *e, uint64_t cycle)
{
    const uint64_t far = e->far_mask;
    uint64_t now_due = 0;
    e->far_min = UINT64_MAX;
    for (uint64_t m = far; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (e->due_cycle[i] <= cycle) {
            now_due |= 1ULL << i;
            e->far_mask &= ~(1ULL << i);
        } else {
            file_due(e, i, e->due_cycle[i], cycle);
        }
    }
    return now_due;
}

/* The sources due at `cycle`: the wheel's slot if the previous call was at
 * cycle - 1, else (the first call, or after the handler slept) every source
 * looked at and refiled. */
static inline uint64_t take_due(tep *e, uint64_t cycle)
{
    uint64_t due = e->wake_mask;
    e->wake_mask = 0;
    if (cycle == e->wheel_next) {
        due |= e->wheel[cycle % TEP_WHEEL];
        e->wheel[cycle % TEP_WHEEL] = 0;
    } else {
        memset(e->wheel, 0, sizeof e->wheel);
        e->far_mask = 0;
        e->far_min = UINT64_MAX;
        for (int i = 0; i < e->cfg.ports; i++) {
            if (e->due_cycle[i] <= cycle) due |= 1ULL << i;
            else file_due(e, i, e->due_cycle[i], cycle);
        }
    }
    e->wheel_next = cycle + 1;
    if (e->far_min <= cycle + TEP_WHEEL) due |= refile_far(e, cycle);
    /* entries of sources whose due cycle moved later since they were filed */
    for (uint64_t m = due; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (e->due_cycle[i] > cycle) due &= ~(1ULL << i);
    }
    return due;
}

#endif
