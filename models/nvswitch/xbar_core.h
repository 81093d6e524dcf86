/* The C crossbar core: a pure cycle-level model (no kernel), the golden
 * reference for the RTL. One call of step() is one clock cycle exactly as
 * docs/crossbar-cycle-rules.md specifies; xbar_core_tl_ops exposes it behind
 * the xbar_core_ops interface of xbar_io.h so a Verilated core can stand in. */
#ifndef XBAR_CORE_H
#define XBAR_CORE_H

#include "models/nvswitch/xbar_alloc.h"
#include "models/nvswitch/xbar_io.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum xbar_queue_kind { XBAR_QUEUE_VOQ = 0, XBAR_QUEUE_FIFO } xbar_queue_kind;
typedef enum xbar_inject { XBAR_INJECT_NONE = 0, XBAR_INJECT_RRM } xbar_inject;

typedef struct xbar_core_cfg {
    int ports;               /* N, 2..64 */
    xbar_queue_kind queue;   /* voq: one queue per (input, output); fifo: one per input */
    int depth;               /* flits per queue (shared: per input); 0 = unbounded */
    int shared;              /* 1: the VOQs of an input share one buffer of `depth` flits */
    xbar_alloc_kind alloc;
    int iters;               /* allocator iterations (>= 1) */
    int latency;             /* pipeline latency L >= 1: matched in t, driven in t+L */
    xbar_inject inject;      /* XBAR_INJECT_RRM: known-wrong RRM pointer update (islip only) */
    int fanout_read;         /* multicast fan-out read (docs "Multicast fan-out read") */
    uint64_t seed;           /* pim */
} xbar_core_cfg;

typedef struct xbar_core xbar_core;

/* Defaults: voq, depth 0, islip, iters 1, latency 1, no inject, no fan-out read. */
void xbar_core_cfg_default(xbar_core_cfg *cfg, int ports);
/* 0 if valid; otherwise -1 with a message naming the field in `why`. */
int xbar_core_cfg_check(const xbar_core_cfg *cfg, char *why, size_t n);

/* NULL if the configuration is invalid (see xbar_core_cfg_check). */
xbar_core *xbar_core_new(const xbar_core_cfg *cfg);
void xbar_core_free(xbar_core *c);
/* One cycle: `in` = flits presented this cycle, `out` = what the core drives
 * this cycle. out->out_data/out_src are written only for bits set in
 * out->valid, credit_queue only for bits in out->credit; credit_extra[0..N-1],
 * match_in and valid/credit always hold this cycle's values (credit_extra,
 * all zero but after fan-out reads, is not written again into the `out` that
 * already holds zeros from the last step: the caller reads `out`, never
 * writes it). The caller must respect the credits: a write into a full queue
 * aborts (broken invariant). */
void xbar_core_step(xbar_core *c, const xbar_in *in, xbar_out *out);

/* A presentation run: input i presents flits data, data+1, ...,
 * data+nflits-1, all to dest_mask, one per cycle, starting with the next
 * step(). Exactly the same as presenting them one per cycle through xbar_in,
 * but without per-flit work: the run is written into its VOQ whole, and it
 * cannot be seen early (a VOQ being written one flit per cycle never runs
 * dry, since reads take at most one flit per cycle too; see "Presentation
 * runs" in docs/models/nvswitch.md). Accepted only where that argument holds
 * and the run fits: unicast into a private VOQ with room for all of it.
 * Returns false otherwise (then present the flits one per cycle). While a
 * run lasts (cycles t0..t0+nflits-1) in->valid bit i must stay clear. */
bool xbar_core_present_run(xbar_core *c, int i, uint64_t data, uint64_t dest_mask, uint32_t nflits);

/* Per-packet bookkeeping for a caller of the C core with VOQs, so it need
 * not look at every flit:
 * - Read watches. Each VOQ has a count of reads owed, 0 at first: every
 *   read (the matching's or a fan-out read) takes one off, and the read that
 *   takes it from 1 to 0 fires. xbar_core_watch_add adds to it (between
 *   steps). Reads made while it is at or below 0 stay owed, so re-arming
 *   after a fire counts the reads made since: the count may come to 0 by
 *   the last step's read of the VOQ, which then fires (its credit is still
 *   to be driven), but not lower, nor by older reads (that aborts). A fire
 *   is reported with the read's credit: after the step whose out carries
 *   that credit, bit i of xbar_core_watch_fired() means VOQ
 *   (i, out->credit_queue[i]) fired, and for a fan-out read
 *   (out->credit_extra[i] bit j), bit j of xbar_core_watch_fired_extra()[i]
 *   (NULL when no fan-out read fired).
 * - Run ends. After a step, bit j of xbar_core_run_last() means the flit on
 *   output j is the last of its VOQ run: the flits an input presented to
 *   that VOQ on consecutive presentations with data going up by one, all
 *   unicast or all multicast (a packet whose flits carry consecutive tags),
 *   cut where the VOQ ran dry: a flit written after the one before it was
 *   read starts a run (a run presented whole is one). */
void xbar_core_watch_add(xbar_core *c, int i, int j, uint32_t reads);
uint64_t xbar_core_watch_fired(const xbar_core *c);
const uint64_t *xbar_core_watch_fired_extra(const xbar_core *c);
uint64_t xbar_core_run_last(const xbar_core *c);

/* The core as an xbar_core_ops implementation (impl = xbar_core *). */
extern const xbar_core_ops xbar_core_tl_ops;

/* Inspection. */
const xbar_core_cfg *xbar_core_config(const xbar_core *c);
uint64_t xbar_core_cycle(const xbar_core *c);       /* cycles stepped so far */
uint64_t xbar_core_backlog(const xbar_core *c);     /* flit copies held in queues (FIFO: entries) */
uint64_t xbar_core_in_flight(const xbar_core *c);   /* flits in the output pipeline */
uint32_t xbar_core_queue_len(const xbar_core *c, int in, int queue);
int xbar_core_last_matches(const xbar_core *c);     /* allocator matches of the last step */
int xbar_core_last_fanout(const xbar_core *c);      /* copies that joined by fan-out read */
const xbar_alloc *xbar_core_allocator(const xbar_core *c);

/* "voq"/"fifo" and "none"/"rrm"; -1 if unknown. */
int xbar_queue_parse(const char *name);
int xbar_inject_parse(const char *name);

#endif
