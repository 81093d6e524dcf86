/* The C crossbar core. Every rule here is a rule of
 * docs/crossbar-cycle-rules.md; the comments name the step they implement.
 * Requests are kept as two incrementally maintained bitmask matrices (by
 * input and by output), so one cycle costs O(N) word operations plus one
 * allocator call, and nothing is allocated per flit (queues grow by doubling
 * and then stay). */
#include "models/nvswitch/xbar_core.h"

#include "sim/alloc.h"
#include "sim/ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* An input FIFO entry: one flit. */
typedef struct xq_entry {
    uint64_t data;
    uint64_t aux; /* destinations still to serve */
} xq_entry;

typedef struct xq {
    xq_entry *buf;
    uint32_t head, count, cap; /* cap is 0 or a power of two */
} xq;

/* A VOQ holds runs: flits whose data and presentation count both go up by
 * one from one flit to the next (the flits of a packet an input presents on
 * consecutive cycles) share one entry. Flit k of a run is (data + k,
 * aux + 2k); the queue's contents are exactly the flat queue's, in 1/len of
 * the memory, so a switch full of packets keeps its queues in cache. The run
 * ends at `end` (exclusive) rather than keeping a length, so extending it is
 * a store that needs no load. */
typedef struct vq_run {
    uint64_t data; /* the first flit's */
    uint64_t aux;  /* the first flit's presentation count << 1 | multicast
                    * (copies of one presented flit share the count) */
    uint64_t end;  /* data of the flit after the last */
} vq_run;

/* The first run is kept in place, next to the bookkeeping: a pop (the
 * matched VOQs of a cycle are all over the switch, and each was last
 * touched about N cycles ago) reads one cache line, not two. One line
 * (64 B, aligned): VOQ (i, j) is found with shifts alone. */
typedef struct vq {
    _Alignas(64) vq_run first; /* valid when nruns > 0 */
    vq_run *rest;              /* ring of the runs behind it */
    uint32_t rest_head, nruns, cap; /* nruns counts `first`; cap (of rest) is 0 or a power of two */
    uint32_t count;            /* flits */
    int64_t watch;             /* reads owed to the read watch (xbar_core_watch_add): the read
                                * taking it from 1 to 0 fires; never armed, it only goes down */
} vq;

typedef struct xpipe {
    uint64_t valid;
    uint64_t last;  /* outputs whose flit is the last of its VOQ run */
    uint64_t data[XBAR_MAX_PORTS];
    uint8_t src[XBAR_MAX_PORTS];
} xpipe;

struct xbar_core {
    xbar_core_cfg cfg;
    int n;
    uint64_t all;
    xbar_alloc *alloc;
    xq *q;                          /* FIFO: q[i] (NULL with VOQs) */
    vq *vq;                         /* VOQ: see voq_at (NULL with FIFOs) */
    uint64_t req_in[XBAR_MAX_PORTS];  /* bit j: input i requests output j */
    uint64_t req_out[XBAR_MAX_PORTS]; /* bit i: the same, transposed */
    uint32_t occ[XBAR_MAX_PORTS];     /* flit copies held per input; kept only with
                                       * shared=1, the one rule that reads it */
    uint64_t seq[XBAR_MAX_PORTS];     /* presentations per input */
    uint8_t fan_ptr[XBAR_MAX_PORTS];  /* f[j], the fan-out read pointer */
    /* VOQ: multicast copies held per input, and the inputs holding any (the
     * only ones a fan-out read can take from). */
    uint32_t mc_held[XBAR_MAX_PORTS];
    uint64_t mc_inputs;
    /* Per input, the VOQ its last presentation went to by the unicast fast
     * path (NULL after any other presentation), that flit's data + 1 and its
     * run: a flit continuing it extends the run without finding it. Only
     * input i pushes into VOQ (i, j), so nothing else can move that run; a
     * pop can only empty the queue, which the fast path tests first. */
    vq *push_q[XBAR_MAX_PORTS];
    uint64_t push_next[XBAR_MAX_PORTS];
    vq_run *push_run[XBAR_MAX_PORTS];
    /* The allocator's matching; entries N..63 stay -1, so the arrays read
     * as masks whole. */
    _Alignas(16) int8_t in_match[XBAR_MAX_PORTS];
    _Alignas(16) int8_t out_match[XBAR_MAX_PORTS];
    xpipe *pipe;                      /* L slots */
    uint64_t cr;                      /* credits to drive next cycle */
    uint8_t cr_q[XBAR_MAX_PORTS];
    uint64_t cr_extra[XBAR_MAX_PORTS];
    uint64_t cr_extra_any;
    const xbar_out *zero_extra_out;   /* the out whose credit_extra the last step left all zero */
    uint64_t cr_fired;                /* inputs whose read in t reached its VOQ's watch */
    uint64_t cr_fired_extra[XBAR_MAX_PORTS]; /* the same for fan-out reads, per VOQ (bit j) */
    bool cr_fired_extra_any;
    uint64_t out_fired, out_last;     /* of the last step's out (xbar_core_watch_fired, _run_last) */
    uint64_t out_fired_extra[XBAR_MAX_PORTS];
    bool out_fired_extra_any;
    uint64_t t;
    int pipe_idx;                     /* slot of cycle t: t mod L */
    uint64_t backlog;
    uint32_t voq_limit;               /* depth of a private VOQ; 0 = unbounded or shared */
    /* Presentation runs (xbar_core_present_run): those presented for this
     * cycle, and per input the last run's VOQ output, first data, length
     * and end (the cycle after its last flit). Inputs in run_busy stay
     * there after the end; run_end says whether a run still lasts. */
    uint64_t run_new, run_busy;
    uint64_t run_data[XBAR_MAX_PORTS];
    uint64_t run_end[XBAR_MAX_PORTS];
    uint32_t run_len[XBAR_MAX_PORTS];
    uint8_t run_out[XBAR_MAX_PORTS];
    int last_matches, last_fanout;
};

static const char *const queue_names[] = { "voq", "fifo" };
static const char *const inject_names[] = { "none", "rrm" };

int xbar_queue_parse(const char *name)
{
    for (int k = 0; k < 2; k++)
        if (strcmp(name, queue_names[k]) == 0) return k;
    return -1;
}

int xbar_inject_parse(const char *name)
{
    for (int k = 0; k < 2; k++)
        if (strcmp(name, inject_names[k]) == 0) return k;
    return -1;
}

void xbar_core_cfg_default(xbar_core_cfg *cfg, int ports)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->ports = ports;
    cfg->queue = XBAR_QUEUE_VOQ;
    cfg->alloc = XBAR_ALLOC_ISLIP;
    cfg->iters = 1;
    cfg->latency = 1;
}

int xbar_core_cfg_check(const xbar_core_cfg *cfg, char *why, size_t n)
{
    if (cfg->ports < 2 || cfg->ports > XBAR_MAX_PORTS)
        return snprintf(why, n, "ports=%d: allowed 2..%d", cfg->ports, XBAR_MAX_PORTS), -1;
    if (cfg->queue != XBAR_QUEUE_VOQ && cfg->queue != XBAR_QUEUE_FIFO)
        return snprintf(why, n, "queue=%d: allowed voq, fifo", (int)cfg->queue), -1;
    if (cfg->depth < 0)
        return snprintf(why, n, "depth=%d: allowed >= 0 (0 = unbounded)", cfg->depth), -1;
    if ((unsigned)cfg->alloc > XBAR_ALLOC_RR)
        return snprintf(why, n, "alloc=%d: allowed islip, pim, wavefront, rr", (int)cfg->alloc), -1;
    if (cfg->iters < 1 || cfg->iters > XBAR_MAX_PORTS)
        return snprintf(why, n, "iters=%d: allowed 1..%d", cfg->iters, XBAR_MAX_PORTS), -1;
    if (cfg->latency < 1 || cfg->latency > 1024)
        return snprintf(why, n, "latency=%d: allowed 1..1024 cycles", cfg->latency), -1;
    if (cfg->inject != XBAR_INJECT_NONE && cfg->inject != XBAR_INJECT_RRM)
        return snprintf(why, n, "inject=%d: allowed none, rrm", (int)cfg->inject), -1;
    if (cfg->inject == XBAR_INJECT_RRM && cfg->alloc != XBAR_ALLOC_ISLIP)
        return snprintf(why, n, "inject=rrm needs alloc=islip"), -1;
    return 0;
}

xbar_core *xbar_core_new(const xbar_core_cfg *cfg)
{
    char why[128];
    if (xbar_core_cfg_check(cfg, why, sizeof why) != 0) return NULL;
    xbar_core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cfg = *cfg;
    c->n = cfg->ports;
    c->all = xbar_mask_all(c->n);
    memset(c->in_match, -1, sizeof c->in_match);
    memset(c->out_match, -1, sizeof c->out_match);
    c->voq_limit = cfg->queue == XBAR_QUEUE_VOQ && !cfg->shared ? (uint32_t)cfg->depth : 0;
    xbar_alloc_cfg ac = { cfg->alloc, cfg->ports, cfg->iters, cfg->seed, cfg->inject == XBAR_INJECT_RRM };
    c->alloc = xbar_alloc_new(&ac);
    if (cfg->queue == XBAR_QUEUE_VOQ) {
        c->vq = sim_zalloc_aligned(_Alignof(vq), (size_t)c->n * XBAR_MAX_PORTS * sizeof *c->vq); /* a line each */
    } else {
        c->q = calloc((size_t)c->n, sizeof *c->q);
    }
    c->pipe = calloc((size_t)cfg->latency, sizeof *c->pipe);
    if (!c->alloc || (!c->q && !c->vq) || !c->pipe) {
        xbar_core_free(c);
        return NULL;
    }
    return c;
}

void xbar_core_free(xbar_core *c)
{
    if (!c) return;
    if (c->q)
        for (int k = 0; k < c->n; k++) free(c->q[k].buf);
    if (c->vq)
        for (int k = 0; k < c->n * XBAR_MAX_PORTS; k++) free(c->vq[k].rest);
    free(c->q);
    free(c->vq);
    free(c->pipe);
    xbar_alloc_free(c->alloc);
    free(c);
}

static void core_fatal(const xbar_core *c, const char *what, int i, int j)
{
    fprintf(stderr, "xbar_core: cycle %llu: %s (input %d, queue %d)\n",
            (unsigned long long)c->t, what, i, j);
    abort();
}

static inline xq_entry *xq_head(xq *q) { return &q->buf[q->head]; }

static inline void xq_pop(xq *q)
{
    q->head = (q->head + 1) & (q->cap - 1);
    q->count--;
}

static void xq_grow(xq *q)
{
    size_t cap = q->cap;
    q->buf = sim_ring_grow(q->buf, sizeof *q->buf, q->head, q->count, &cap, 4);
    q->head = 0;
    q->cap = (uint32_t)cap;
}

static inline void xq_push(xq *q, uint64_t data, uint64_t aux)
{
    if (q->count == q->cap) xq_grow(q);
    xq_entry *e = &q->buf[(q->head + q->count) & (q->cap - 1)];
    e->data = data;
    e->aux = aux;
    q->count++;
}

/* VOQ (i, j): rows of XBAR_MAX_PORTS whatever N, so no multiply. */
static inline vq *voq_at(const xbar_core *c, int i, int j) { return &c->vq[(size_t)i * XBAR_MAX_PORTS + (size_t)j]; }

static inline const vq_run *vq_head(const vq *q) { return &q->first; }

/* Run k >= 1 (in the ring behind the first). */
static inline vq_run *vq_rest_at(const vq *q, uint32_t k) { return &q->rest[(q->rest_head + k - 1) & (q->cap - 1)]; }

/* The last run (the queue holds at least one). */
static inline vq_run *vq_tail(vq *q) { return q->nruns == 1 ? &q->first : vq_rest_at(q, q->nruns - 1); }

/* The first flit leaves; returns 1 if it was the last of its run. When the
 * run behind moves into place and it is the one *tail (the pushing input's
 * cached tail run) names, *tail follows it. */
static inline uint64_t vq_pop(vq *q, vq_run **tail)
{
    vq_run *r = &q->first;
    q->count--;
    if (r->data + 1 != r->end) { /* a longer run gives up its first flit */
        r->data++;
        r->aux += 2;
        return 0;
    }
    if (--q->nruns) {
        vq_run *next = &q->rest[q->rest_head];
        *r = *next;
        if (*tail == next) *tail = r;
        q->rest_head = (q->rest_head + 1) & (q->cap - 1);
    }
    return 1;
}

/* The ring behind the first run is full. */
static void vq_grow(vq *q)
{
    size_t cap = q->cap;
    q->rest = sim_ring_grow(q->rest, sizeof *q->rest, q->rest_head, q->nruns - 1, &cap, 4);
    q->rest_head = 0;
    q->cap = (uint32_t)cap;
}

/* A new run of one flit at the tail. */
static inline vq_run *vq_push_run(vq *q, uint64_t data, uint64_t aux)
{
    vq_run *r;
    if (!q->nruns) {
        r = &q->first;
    } else {
        if (q->nruns - 1 == q->cap) vq_grow(q);
        r = vq_rest_at(q, q->nruns);
    }
    r->data = data;
    r->aux = aux;
    r->end = data + 1;
    q->nruns++;
    return r;
}

/* Any flit: extends the tail run when it continues it. */
static inline void vq_push(vq *q, uint64_t data, uint64_t aux)
{
    q->count++;
    if (q->nruns) {
        vq_run *t = vq_tail(q);
        if (data == t->end && aux - t->aux == (t->end - t->data) << 1) {
            t->end = data + 1;
            return;
        }
    }
    vq_push_run(q, data, aux);
}

/* Step 3 for one (input, output) copy: into the pipeline slot of cycle t+L. */
static inline void drive(xpipe *slot, int i, int j, uint64_t data)
{
    slot->valid |= 1ULL << j;
    slot->data[j] = data;
    slot->src[j] = (uint8_t)i;
}

/* Multicast fan-out read (rules, "Multicast fan-out read"): every output
 * left unmatched takes a multicast copy waiting for it. VOQ: from any input
 * in mc_in (those holding multicast copies) whose VOQ for it has a multicast
 * copy at its head: fan-out splitting, each copy leaves as its output frees.
 * FIFO: from a matched input in mc_in, whose head flit still has it to serve. */
static void fanout_read(xbar_core *c, xpipe *slot, uint64_t matched_out, uint64_t mc_in)
{
    const int n = c->n;
    const int voq = c->cfg.queue == XBAR_QUEUE_VOQ;
    for (uint64_t outs = c->all & ~matched_out; outs; outs &= outs - 1) {
        int j = __builtin_ctzll(outs);
        uint64_t cand = c->req_out[j] & mc_in, ok = 0;
        if (!cand) continue;
        if (voq) {
            for (uint64_t m = cand; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                if (vq_head(voq_at(c, i, j))->aux & 1) ok |= 1ULL << i;
            }
        } else {
            ok = cand; /* a matched FIFO input sends its head, the only flit it requests for */
        }
        if (!ok) continue;
        int i = xbar_rr_pick(ok, c->fan_ptr[j]);
        c->fan_ptr[j] = (uint8_t)(i + 1 == n ? 0 : i + 1);
        c->last_fanout++;
        if (voq) {
            vq *q = voq_at(c, i, j);
            drive(slot, i, j, vq_head(q)->data);
            slot->last |= vq_pop(q, &c->push_run[i]) << j;
            if (--q->watch == 0) {
                c->cr_fired_extra[i] |= 1ULL << j;
                c->cr_fired_extra_any = true;
            }
            c->occ[i] -= (uint32_t)c->cfg.shared;
            c->mc_held[i]--;
            c->backlog--;
            c->cr_extra[i] |= 1ULL << j;
            c->cr_extra_any = 1;
            if (!q->count) {
                c->req_in[i] &= ~(1ULL << j);
                c->req_out[j] &= ~(1ULL << i);
            }
        } else {
            xq_entry *e = xq_head(&c->q[i]);
            drive(slot, i, j, e->data);
            e->aux &= ~(1ULL << j);
            c->req_in[i] &= ~(1ULL << j);
            c->req_out[j] &= ~(1ULL << i);
        }
    }
}

/* Step 4 for VOQs, the general case (multicast or a shared buffer): one
 * presented flit written into every destination's VOQ (visible from t+1);
 * `s` tags the copies of this presentation. Out of line: it is the rare
 * path, and inlined it costs the unicast loop its registers. */
static __attribute__((noinline)) void voq_write(xbar_core *c, int i, uint64_t dm, uint64_t data)
{
    const uint64_t s = c->seq[i]++ << 1 | (uint64_t)((dm & (dm - 1)) != 0);
    const uint32_t copies = (s & 1) ? (uint32_t)__builtin_popcountll(dm) : 1;
    c->push_q[i] = NULL;
    c->push_run[i] = NULL;
    if (c->cfg.depth && c->cfg.shared && c->occ[i] + copies > (uint32_t)c->cfg.depth)
        core_fatal(c, "shared input buffer overflow (upstream ignored credits)", i, -1);
    for (uint64_t d = dm; d; d &= d - 1) {
        int j = __builtin_ctzll(d);
        vq *q = voq_at(c, i, j);
        if (c->voq_limit && q->count >= c->voq_limit) core_fatal(c, "VOQ overflow (upstream ignored credits)", i, j);
        if (!q->count) {
            c->req_in[i] |= 1ULL << j;
            c->req_out[j] |= 1ULL << i;
        }
        vq_push(q, data, s);
    }
    if (c->cfg.shared) c->occ[i] += copies;
    if (s & 1) {
        c->mc_held[i] += copies;
        c->mc_inputs |= 1ULL << i;
    }
    c->backlog += copies;
}

bool xbar_core_present_run(xbar_core *c, int i, uint64_t data, uint64_t dest_mask, uint32_t nflits)
{
    if (i < 0 || i >= c->n) core_fatal(c, "run presented at no such input", i, -1);
    const uint64_t bit = 1ULL << i;
    if ((c->run_new & bit) || ((c->run_busy & bit) && c->run_end[i] > c->t))
        core_fatal(c, "run presented while the input's last run lasts", i, -1);
    const uint64_t dm = dest_mask;
    if (c->cfg.queue != XBAR_QUEUE_VOQ || c->cfg.shared || !nflits || !dm || (dm & (dm - 1)) || (dm & ~c->all))
        return false;
    const int j = __builtin_ctzll(dm);
    /* the queue before this cycle's read: at least what it holds when the run starts */
    if (c->voq_limit && voq_at(c, i, j)->count + (uint64_t)nflits > c->voq_limit) return false;
    c->run_new |= bit;
    c->run_data[i] = data;
    c->run_len[i] = nflits;
    c->run_out[i] = (uint8_t)j;
    return true;
}

void xbar_core_watch_add(xbar_core *c, int i, int j, uint32_t reads)
{
    if (c->cfg.queue != XBAR_QUEUE_VOQ) core_fatal(c, "read watch on a FIFO core", i, j);
    if (i < 0 || i >= c->n || j < 0 || j >= c->n) core_fatal(c, "read watch on no such VOQ", i, j);
    vq *q = voq_at(c, i, j);
    q->watch += reads;
    if (q->watch > 0 || !reads) return;
    /* Reached by reads already made: only by the last step's read of this
     * VOQ, whose credit is still to be driven; it fires with it. */
    if (q->watch == 0 && (c->cr >> i & 1) && c->cr_q[i] == j) {
        c->cr_fired |= 1ULL << i;
    } else if (q->watch == 0 && (c->cr_extra[i] >> j & 1)) {
        c->cr_fired_extra[i] |= 1ULL << j;
        c->cr_fired_extra_any = true;
    } else {
        core_fatal(c, "read watch armed after the reads it would wait for", i, j);
    }
}

uint64_t xbar_core_watch_fired(const xbar_core *c) { return c->out_fired; }
const uint64_t *xbar_core_watch_fired_extra(const xbar_core *c) { return c->out_fired_extra_any ? c->out_fired_extra : NULL; }
uint64_t xbar_core_run_last(const xbar_core *c) { return c->out_last; }

/* Step 4 for the runs presented this cycle: each goes into its VOQ whole
 * (its first flit as a one-per-cycle write would, the rest as the run's
 * continuation), so no later cycle writes anything for it. */
static void write_runs(xbar_core *c)
{
    for (uint64_t m = c->run_new; m; m &= m - 1) {
        const int i = __builtin_ctzll(m), j = c->run_out[i];
        const uint64_t data = c->run_data[i];
        const uint32_t len = c->run_len[i];
        vq *q = voq_at(c, i, j);
        const uint32_t count = q->count;
        if (c->voq_limit && count + len > c->voq_limit) core_fatal(c, "VOQ overflow by a run", i, j);
        q->count = count + len;
        if (count && q == c->push_q[i] && data == c->push_next[i]) {
            c->push_run[i]->end = data + len;
        } else {
            if (!count) {
                c->req_in[i] |= 1ULL << j;
                c->req_out[j] |= 1ULL << i;
            }
            c->push_run[i] = vq_push_run(q, data, c->seq[i] << 1);
            c->push_run[i]->end = data + len;
            c->push_q[i] = q;
        }
        c->seq[i] += len;
        c->push_next[i] = data + len;
        c->backlog += len;
        c->run_end[i] = c->t + len;
    }
    c->run_busy |= c->run_new;
    c->run_new = 0;
}

/* Flits of input i's run not presented yet (written ahead of their cycle). */
static uint64_t run_ahead(const xbar_core *c, int i)
{
    return (c->run_busy >> i & 1) && c->run_end[i] > c->t ? c->run_end[i] - c->t : 0;
}

/* Bit i set when match[i] >= 0, within `all`. */
static inline uint64_t matched_mask(const int8_t *match, uint64_t all)
{
    uint64_t unmatched = 0;
#if defined(__SSE2__)
    for (int k = 0; k < XBAR_MAX_PORTS; k += 16) /* the sign bits, 16 at a time */
        unmatched |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_load_si128((const __m128i *)(match + k))) << k;
#else
    for (int k = 0; k < XBAR_MAX_PORTS; k++) unmatched |= (uint64_t)(match[k] < 0) << k;
#endif
    return ~unmatched & all;
}

/* Steps 3-4 with VOQs. Per matched pair and per presented flit this is the
 * hot path of a busy switch, so what is the same for every pair is done for
 * all at once: the matching itself is the per-input credit queue, the
 * per-output source and the debug match_out (whole-array copies). */
static void voq_transfer_and_write(xbar_core *c, const xbar_in *in, xbar_out *out, xpipe *slot, uint64_t in_valid,
                                   uint64_t matched_in, uint64_t matched_out)
{
    const int8_t *in_match = c->in_match;
    const uint32_t shared = (uint32_t)c->cfg.shared;
    uint64_t last = 0, fired = 0;
    /* The matched VOQs are all over the switch, often out of cache: ask for
     * all of them first so the misses overlap (and keep where they are, in
     * matched-input order, for the transfer below). */
    vq *mq[XBAR_MAX_PORTS];
    int nm = 0;
    for (uint64_t m = matched_in; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        mq[nm] = voq_at(c, i, in_match[i]);
        __builtin_prefetch(mq[nm++]);
    }
    out->match_in = matched_in;
    /* whole arrays (entries N..63 of the matching are -1, never read): a
     * fixed size the compiler copies in a few moves */
    memcpy(out->match_out, in_match, XBAR_MAX_PORTS);
    memcpy(c->cr_q, in_match, XBAR_MAX_PORTS);     /* a matched input frees a slot of the VOQ it read */
    memcpy(slot->src, c->out_match, XBAR_MAX_PORTS); /* fan-out reads below overwrite their outputs' */
    /* Step 3: transfer the head flit of every matched VOQ. */
    nm = 0;
    for (uint64_t m = matched_in; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        const int j = in_match[i];
        vq *q = mq[nm++];
        const vq_run *e = vq_head(q);
        c->mc_held[i] -= (uint32_t)(e->aux & 1); /* a multicast copy */
        slot->data[j] = e->data;
        last |= vq_pop(q, &c->push_run[i]) << j;
        if (__builtin_expect(--q->watch == 0, 0)) fired |= 1ULL << i;
        if (!q->count) {
            c->req_in[i] &= ~(1ULL << j);
            c->req_out[j] &= ~(1ULL << i);
        }
    }
    if (shared)
        for (uint64_t m = matched_in; m; m &= m - 1) c->occ[__builtin_ctzll(m)]--;
    slot->valid |= matched_out;
    slot->last = last;
    c->cr |= matched_in;
    c->cr_fired = fired;
    c->backlog -= (uint64_t)__builtin_popcountll(matched_in);
    if (c->cfg.fanout_read && c->mc_inputs) { /* inputs whose last copy left no longer count */
        for (uint64_t m = c->mc_inputs; m; m &= m - 1)
            if (!c->mc_held[__builtin_ctzll(m)]) c->mc_inputs &= ~(m & -m);
        if (c->mc_inputs) fanout_read(c, slot, matched_out, c->mc_inputs);
    }
    /* Step 4: writes of the flits presented in this cycle (visible from t+1). */
    const uint64_t not_one_of_all = ~c->all; /* with dm - 1: bits that make dm not a single output */
    const uint32_t full = c->voq_limit ? c->voq_limit : UINT32_MAX;
    uint32_t slow_writes = 0;
    for (uint64_t m = in_valid; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        const xbar_flit *f = &in->in[i];
        const uint64_t dm = f->dest_mask;
        if ((dm & ((dm - 1) | not_one_of_all)) || !dm || shared) { /* multicast, a shared buffer, or bad */
            if (!dm || (dm & not_one_of_all)) core_fatal(c, "flit with an empty or out-of-range destination mask", i, -1);
            voq_write(c, i, dm, f->data);
            slow_writes++;
            continue;
        }
        /* Unicast into a private VOQ: the common case. */
        const int j = __builtin_ctzll(dm);
        vq *q = voq_at(c, i, j);
        const uint32_t count = q->count;
        if (count >= full) core_fatal(c, "VOQ overflow (upstream ignored credits)", i, j);
        q->count = count + 1;
        /* Presentation counts at an input go up by one per presentation, so
         * only the queue and the data need checking to extend the run. */
        if (count && q == c->push_q[i] && f->data == c->push_next[i]) {
            c->push_run[i]->end = f->data + 1;
        } else {
            if (!count) {
                c->req_in[i] |= dm;
                c->req_out[j] |= 1ULL << i;
            }
            c->push_run[i] = vq_push_run(q, f->data, c->seq[i] << 1);
            c->push_q[i] = q;
        }
        c->seq[i]++;
        c->push_next[i] = f->data + 1;
    }
    c->backlog += (uint64_t)__builtin_popcountll(in_valid) - slow_writes; /* voq_write counts its own copies */
    if (c->run_new) write_runs(c);
}

void xbar_core_step(xbar_core *c, const xbar_in *in, xbar_out *out)
{
    const int n = c->n;
    const int voq = c->cfg.queue == XBAR_QUEUE_VOQ;
    const uint64_t in_valid = in->valid & c->all;
    for (uint64_t m = in_valid & c->run_busy; m; m &= m - 1) { /* a flit after a run: the run must be over */
        const int i = __builtin_ctzll(m);
        if (run_ahead(c, i)) core_fatal(c, "flit presented during a run", i, -1);
        c->run_busy &= ~(1ULL << i);
    }
    xpipe *slot = &c->pipe[c->pipe_idx];
    c->pipe_idx = c->pipe_idx + 1 == c->cfg.latency ? 0 : c->pipe_idx + 1;

    /* Outputs of this cycle: flits matched in t-L, credits of slots freed in t-1. */
    /* Whole arrays: at load most entries are valid, and copying beats a bit walk. */
    out->valid = slot->valid;
    if (slot->valid) {
        memcpy(out->out_data, slot->data, (size_t)n * sizeof slot->data[0]);
        memcpy(out->out_src, slot->src, XBAR_MAX_PORTS);
    }
    c->out_last = slot->last;
    c->out_fired = c->cr_fired;
    if (c->out_fired_extra_any || c->cr_fired_extra_any) { /* only after multicast fan-out reads */
        memcpy(c->out_fired_extra, c->cr_fired_extra, sizeof c->out_fired_extra);
        memset(c->cr_fired_extra, 0, sizeof c->cr_fired_extra);
        c->out_fired_extra_any = c->cr_fired_extra_any;
        c->cr_fired_extra_any = false;
    }
    out->credit = c->cr;
    if (c->cr) memcpy(out->credit_queue, c->cr_q, XBAR_MAX_PORTS);
    if (c->cr_extra_any || out != c->zero_extra_out) {
        memcpy(out->credit_extra, c->cr_extra, (size_t)n * sizeof c->cr_extra[0]);
        c->zero_extra_out = c->cr_extra_any ? NULL : out;
        memset(c->cr_extra, 0, sizeof c->cr_extra);
        c->cr_extra_any = 0;
    }
    c->cr = 0;
    slot->valid = 0;

    /* Steps 1-2: requests are the queue state at the start of the cycle. */
    int8_t *in_match = c->in_match, *out_match = c->out_match;
    c->last_matches = xbar_alloc_run(c->alloc, c->req_in, c->req_out, in_match, out_match);
    c->last_fanout = 0;
    uint64_t mc_in = 0;
    const uint64_t matched_in = matched_mask(in_match, c->all), matched_out = matched_mask(out_match, c->all);
    if (voq) {
        voq_transfer_and_write(c, in, out, slot, in_valid, matched_in, matched_out);
        c->t++;
        return;
    }

    out->match_in = matched_in;
    for (uint64_t m = matched_in; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        int j = in_match[i];
        out->match_out[i] = (uint8_t)j;
        /* Step 3: the head flit is read for output j. */
        xq_entry *e = xq_head(&c->q[i]);
        drive(slot, i, j, e->data);
        e->aux &= ~(1ULL << j);
        c->req_in[i] &= ~(1ULL << j);
        c->req_out[j] &= ~(1ULL << i);
        if (e->aux) mc_in |= 1ULL << i;
    }
    if (c->cfg.fanout_read && mc_in) fanout_read(c, slot, matched_out, mc_in);

    /* FIFO: a head leaves (one credit) when its last destination is served. */
    for (uint64_t m = matched_in; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        xq *q = &c->q[i];
        if (xq_head(q)->aux) continue;
        xq_pop(q);
        c->backlog--;
        c->cr |= 1ULL << i;
        c->cr_q[i] = 0;
        if (q->count) {
            uint64_t dm = xq_head(q)->aux;
            c->req_in[i] = dm;
            for (; dm; dm &= dm - 1) c->req_out[__builtin_ctzll(dm)] |= 1ULL << i;
        }
    }

    /* Step 4: writes of the flits presented in this cycle (visible from t+1). */
    for (uint64_t m = in_valid; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        const xbar_flit *f = &in->in[i];
        uint64_t dm = f->dest_mask & c->all;
        if (!dm || dm != f->dest_mask) core_fatal(c, "flit with an empty or out-of-range destination mask", i, -1);
        c->seq[i]++;
        xq *q = &c->q[i];
        if (c->cfg.depth && q->count >= (uint32_t)c->cfg.depth)
            core_fatal(c, "input FIFO overflow (upstream ignored credits)", i, 0);
        if (!q->count) {
            c->req_in[i] = dm;
            for (uint64_t d = dm; d; d &= d - 1) c->req_out[__builtin_ctzll(d)] |= 1ULL << i;
        }
        xq_push(q, f->data, dm);
        c->backlog++;
    }
    c->t++;
}

static void tl_step(void *impl, const xbar_in *in, xbar_out *out) { xbar_core_step(impl, in, out); }
static void tl_free(void *impl) { xbar_core_free(impl); }
const xbar_core_ops xbar_core_tl_ops = { "tl", tl_step, tl_free };

const xbar_core_cfg *xbar_core_config(const xbar_core *c) { return &c->cfg; }
uint64_t xbar_core_cycle(const xbar_core *c) { return c->t; }
uint64_t xbar_core_backlog(const xbar_core *c)
{
    uint64_t ahead = 0;
    for (uint64_t m = c->run_busy; m; m &= m - 1) ahead += run_ahead(c, __builtin_ctzll(m));
    return c->backlog - ahead;
}
int xbar_core_last_matches(const xbar_core *c) { return c->last_matches; }
int xbar_core_last_fanout(const xbar_core *c) { return c->last_fanout; }
const xbar_alloc *xbar_core_allocator(const xbar_core *c) { return c->alloc; }

uint64_t xbar_core_in_flight(const xbar_core *c)
{
    uint64_t s = 0;
    for (int k = 0; k < c->cfg.latency; k++) s += (uint64_t)__builtin_popcountll(c->pipe[k].valid);
    return s;
}

uint32_t xbar_core_queue_len(const xbar_core *c, int in, int queue)
{
    if (c->cfg.queue == XBAR_QUEUE_VOQ)
        return voq_at(c, in, queue)->count - (c->run_out[in] == queue ? (uint32_t)run_ahead(c, in) : 0);
    return queue == 0 ? c->q[in].count : 0;
}
