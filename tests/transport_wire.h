/* A lossy wire of its own between two ends of a transport engine (rc.h,
 * tcp.h), for their unit tests: one packet per slot each way, a fixed
 * latency, a drop rule. Not a test itself. */
#ifndef TESTS_TRANSPORT_WIRE_H
#define TESTS_TRANSPORT_WIRE_H

#include <check.h>
#include <string.h>

#include "sim/kernel.h"

#define WIRE_SLOT_PS 1000
#define WIRE_LAT_SLOTS 10
#define WIRE_DEPTH 4096
#define WIRE_HDR_MAX 64

/* One end: its engine and how to drive it. */
typedef struct wire_end {
    void *conn;
    bool (*next)(void *conn, sim_time_ps now, void *hdr);
    void (*receive)(void *conn, sim_time_ps now, const void *hdr);
    void (*timer)(void *conn, sim_time_ps now);
    bool (*idle)(const void *conn);
    bool (*failed)(const void *conn);
} wire_end;

/* dir 0: end a -> end b; nth: the packet's index on that direction; t: when it is sent. */
typedef bool (*wire_drop_fn)(unsigned dir, uint64_t nth, sim_time_ps t, const void *hdr, void *ctx);

typedef struct wire_flight { sim_time_ps at; unsigned char hdr[WIRE_HDR_MAX]; } wire_flight;
typedef struct wire_dir { wire_flight q[WIRE_DEPTH]; unsigned head, len; uint64_t sent; } wire_dir;

/* Runs until both ends are idle with nothing on the wire, one fails, or limit_ps; returns the time. */
static inline sim_time_ps wire_run(const wire_end *a, const wire_end *b, size_t hdr_bytes, wire_drop_fn drop, void *dctx,
                                   sim_time_ps limit_ps)
{
    static wire_dir w[2];
    memset(w, 0, sizeof w);
    const wire_end *ends[2] = { a, b };
    ck_assert_uint_le(hdr_bytes, WIRE_HDR_MAX);
    sim_time_ps t = 0;
    for (; t < limit_ps; t += WIRE_SLOT_PS) {
        for (unsigned d = 0; d < 2; d++)   /* arrivals */
            while (w[d].len && w[d].q[w[d].head].at <= t) {
                ends[1 - d]->receive(ends[1 - d]->conn, t, w[d].q[w[d].head].hdr);
                w[d].head = (w[d].head + 1) % WIRE_DEPTH;
                w[d].len--;
            }
        for (unsigned d = 0; d < 2; d++) ends[d]->timer(ends[d]->conn, t);
        for (unsigned d = 0; d < 2; d++) {
            unsigned char h[WIRE_HDR_MAX];
            if (!ends[d]->next(ends[d]->conn, t, h)) continue;
            if (!drop || !drop(d, w[d].sent, t, h, dctx)) {
                ck_assert_uint_lt(w[d].len, WIRE_DEPTH);
                wire_flight *f = &w[d].q[(w[d].head + w[d].len++) % WIRE_DEPTH];
                f->at = t + WIRE_SLOT_PS + WIRE_LAT_SLOTS * WIRE_SLOT_PS;
                memcpy(f->hdr, h, hdr_bytes);
            }
            w[d].sent++;
        }
        if (a->failed(a->conn) || b->failed(b->conn)) break;
        if (a->idle(a->conn) && b->idle(b->conn) && !w[0].len && !w[1].len) break;
    }
    return t;
}

#endif
