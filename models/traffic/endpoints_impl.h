/* Internal to models/traffic/endpoints*.c: the source queues' rings, the
 * scheduler's due wheel, and the sink's receive callback (endpoints_sink.c).
 * Static inline: the rings and the wheel are on every source's hot path. */
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

/* Endpoint i is next due at cycle `due` (UINT64_MAX: never; at or before
 * `cycle`: at the next call, as the sources woken). */
static inline void file_due(tep_sched *s, int i, uint64_t due, uint64_t cycle)
{
    const uint64_t bit = 1ULL << i;
    s->due_cycle[i] = due;
    s->far_mask &= ~bit;
    if (due == UINT64_MAX) return;
    if (due <= cycle) {
        s->wake_mask |= bit;
    } else if (due - cycle <= TEP_WHEEL) { /* slot cycle % TEP_WHEEL was taken: it is next read at cycle + TEP_WHEEL */
        s->wheel[due % TEP_WHEEL] |= bit;
    } else {
        s->far_mask |= bit;
        if (due < s->far_min) s->far_min = due;
    }
}

/* Far endpoints now within the wheel's reach go into it; returns those due
 * at `cycle` already (woken meanwhile). */
static inline uint64_t refile_far(tep_sched *s, uint64_t cycle)
{
    const uint64_t far = s->far_mask;
    uint64_t now_due = 0;
    s->far_min = UINT64_MAX;
    for (uint64_t m = far; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (s->due_cycle[i] <= cycle) {
            now_due |= 1ULL << i;
            s->far_mask &= ~(1ULL << i);
        } else {
            file_due(s, i, s->due_cycle[i], cycle);
        }
    }
    return now_due;
}

/* The endpoints due at `cycle`: the wheel's slot if the previous call was at
 * cycle - 1, else (the first call, or after the handler slept) every source
 * looked at and refiled. */
static inline uint64_t take_due(tep_sched *s, uint64_t cycle)
{
    uint64_t due = s->wake_mask;
    s->wake_mask = 0;
    if (cycle == s->wheel_next) {
        due |= s->wheel[cycle % TEP_WHEEL];
        s->wheel[cycle % TEP_WHEEL] = 0;
    } else {
        memset(s->wheel, 0, sizeof s->wheel);
        s->far_mask = 0;
        s->far_min = UINT64_MAX;
        for (uint64_t m = s->members; m; m &= m - 1) {
            const int i = __builtin_ctzll(m);
            if (s->due_cycle[i] <= cycle) due |= 1ULL << i;
            else file_due(s, i, s->due_cycle[i], cycle);
        }
    }
    s->wheel_next = cycle + 1;
    if (s->far_min <= cycle + TEP_WHEEL) due |= refile_far(s, cycle);
    /* entries of endpoints whose due cycle moved later since they were filed */
    for (uint64_t m = due; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (s->due_cycle[i] > cycle) due &= ~(1ULL << i);
    }
    return due;
}

#endif
