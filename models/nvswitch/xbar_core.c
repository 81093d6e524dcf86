/* The C crossbar core. Every rule here is a rule of
 * docs/crossbar-cycle-rules.md; the comments name the step they implement.
 * Requests are kept as two incrementally maintained bitmask matrices (by
 * input and by output), so one cycle costs O(N) word operations plus one
 * allocator call, and nothing is allocated per flit (queues grow by doubling
 * and then stay).
 *
 * A queue holds runs, not flits: consecutive flits whose data words count up
 * by one (the flits of one packet, presented one per cycle by one input link)
 * share one entry, so a write is usually a counter increment and a read a
 * counter decrement, and the N*N VOQs of a saturated switch fit in cache
 * (a 17-flit packet is one entry instead of seventeen). This is only a
 * representation: the data is opaque and any sequence of words is queued
 * exactly; a word that does not continue the tail run starts a new one. */
#include "models/nvswitch/xbar_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `count` flits with data words data, data+1, ... and tags aux, aux', ...:
 * VOQ: 0 for unicast flits; presentation count << 1 | 1 for multicast copies
 * (copies of one presented flit share it; it steps by 2 along a run, one
 * presentation per cycle). FIFO: the destinations still to serve, runs of one
 * flit only (the head's mask shrinks as it is served). */
typedef struct xq_run {
    uint64_t data, aux;
    uint32_t count;
} xq_run;

typedef struct xq {
    _Alignas(32) xq_run *buf; /* 32 B: VOQ[i][j] is q[i << 6 | j], an address by shifts */
    uint32_t head, runs, cap; /* ring of runs; cap is 0 or a power of two */
    uint32_t flits;           /* flits queued (runs == 0 iff flits == 0) */
} xq;

typedef struct xpipe {
    uint64_t valid;
    uint64_t data[XBAR_MAX_PORTS];
    uint8_t src[XBAR_MAX_PORTS];
} xpipe;

struct xbar_core {
    xbar_core_cfg cfg;
    int n;
    uint64_t all;
    xbar_alloc *alloc;
    xq *q;                          /* VOQ: q[i*n+j]; FIFO: q[i] */
    uint64_t req_in[XBAR_MAX_PORTS];  /* bit j: input i requests output j */
    uint64_t req_out[XBAR_MAX_PORTS]; /* bit i: the same, transposed */
    uint32_t occ[XBAR_MAX_PORTS];     /* flit copies held per input */
    uint64_t seq[XBAR_MAX_PORTS];     /* multicast presentations per input (the copies' tag) */
    uint8_t fan_ptr[XBAR_MAX_PORTS];  /* f[j], the fan-out read pointer */
    xpipe *pipe;                      /* L slots */
    uint64_t cr;                      /* credits to drive next cycle */
    uint8_t cr_q[XBAR_MAX_PORTS];
    uint64_t cr_extra[XBAR_MAX_PORTS];
    uint64_t cr_extra_any;
    uint64_t t;
    int pipe_idx;                     /* slot of cycle t: t mod L */
    uint64_t backlog;
    uint32_t voq_limit;               /* depth of a private VOQ; UINT32_MAX = unbounded or shared */
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

/* VOQ: N inputs of 64 slots (VOQ[i][j] = q[i << 6 | j]); FIFO: q[i]. */
static size_t queue_slots(const xbar_core_cfg *cfg)
{
    return cfg->queue == XBAR_QUEUE_VOQ ? (size_t)cfg->ports << 6 : (size_t)cfg->ports;
}

static inline xq *voq_at(xbar_core *c, int i, int j) { return &c->q[(unsigned)i << 6 | (unsigned)j]; }

xbar_core *xbar_core_new(const xbar_core_cfg *cfg)
{
    char why[128];
    if (xbar_core_cfg_check(cfg, why, sizeof why) != 0) return NULL;
    xbar_core *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cfg = *cfg;
    c->n = cfg->ports;
    c->all = xbar_mask_all(c->n);
    c->voq_limit = cfg->queue == XBAR_QUEUE_VOQ && !cfg->shared && cfg->depth ? (uint32_t)cfg->depth : UINT32_MAX;
    xbar_alloc_cfg ac = { cfg->alloc, cfg->ports, cfg->iters, cfg->seed, cfg->inject == XBAR_INJECT_RRM };
    c->alloc = xbar_alloc_new(&ac);
    c->q = calloc(queue_slots(cfg), sizeof *c->q);
    c->pipe = calloc((size_t)cfg->latency, sizeof *c->pipe);
    if (!c->alloc || !c->q || !c->pipe) {
        xbar_core_free(c);
        return NULL;
    }
    return c;
}

void xbar_core_free(xbar_core *c)
{
    if (!c) return;
    if (c->q) {
        for (size_t k = 0; k < queue_slots(&c->cfg); k++) free(c->q[k].buf);
    }
    free(c->q);
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

static inline xq_run *xq_head(xq *q) { return &q->buf[q->head]; }
static inline xq_run *xq_tail(xq *q) { return &q->buf[(q->head + q->runs - 1) & (q->cap - 1)]; }

/* Removes the head flit; returns its data word. The head run's next flit
 * takes its place (its tag steps with the presentation count). */
static inline uint64_t xq_pop(xq *q)
{
    xq_run *h = xq_head(q);
    const uint64_t data = h->data;
    q->flits--;
    if (--h->count) {
        h->data = data + 1;
        h->aux += (h->aux & 1) << 1;
    } else {
        q->head = (q->head + 1) & (q->cap - 1);
        q->runs--;
    }
    return data;
}

static __attribute__((noinline)) void xq_grow(xq *q)
{
    uint32_t cap = q->cap ? q->cap * 2 : 4;
    xq_run *b = malloc((size_t)cap * sizeof *b);
    if (!b) abort();
    for (uint32_t k = 0; k < q->runs; k++) b[k] = q->buf[(q->head + k) & (q->cap - 1)];
    free(q->buf);
    q->buf = b;
    q->head = 0;
    q->cap = cap;
}

/* Appends one flit as a new run. */
static inline void xq_push_run(xq *q, uint64_t data, uint64_t aux)
{
    if (q->runs == q->cap) xq_grow(q);
    xq_run *r = &q->buf[(q->head + q->runs) & (q->cap - 1)];
    r->data = data;
    r->aux = aux;
    r->count = 1;
    q->runs++;
    q->flits++;
}

/* Appends one VOQ flit: onto the tail run if it continues it (next data word,
 * next tag of the same kind), else as a new run. */
static inline void xq_push(xq *q, uint64_t data, uint64_t aux)
{
    if (q->runs) {
        xq_run *t = xq_tail(q);
        const uint64_t next_aux = t->aux + ((t->aux & 1) ? 2ULL * t->count : 0);
        if (t->data + t->count == data && next_aux == aux) {
            t->count++;
            q->flits++;
            return;
        }
    }
    xq_push_run(q, data, aux);
}

/* Step 3 for one (input, output) copy: into the pipeline slot of cycle t+L. */
static inline void drive(xpipe *slot, int i, int j, uint64_t data)
{
    slot->valid |= 1ULL << j;
    slot->data[j] = data;
    slot->src[j] = (uint8_t)i;
}

static inline void voq_emptied(xbar_core *c, int i, int j)
{
    c->req_in[i] &= ~(1ULL << j);
    c->req_out[j] &= ~(1ULL << i);
}

static inline void voq_filled(xbar_core *c, int i, int j)
{
    c->req_in[i] |= 1ULL << j;
    c->req_out[j] |= 1ULL << i;
}

/* Multicast fan-out read (rules, "Multicast fan-out read"): outputs left
 * unmatched join a matched input that is sending a copy of the flit at the
 * head of their queue. popseq[i]: the tag of the copy input i popped. */
static void fanout_read(xbar_core *c, xpipe *slot, uint64_t matched_out, uint64_t mc_in, const uint64_t *popseq)
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
                if (xq_head(voq_at(c, i, j))->aux == popseq[i]) ok |= 1ULL << i;
            }
        } else {
            ok = cand; /* a matched FIFO input sends its head, the only flit it requests for */
        }
        if (!ok) continue;
        int i = xbar_rr_pick(ok, c->fan_ptr[j]);
        c->fan_ptr[j] = (uint8_t)(i + 1 == n ? 0 : i + 1);
        c->last_fanout++;
        if (voq) {
            xq *q = voq_at(c, i, j);
            drive(slot, i, j, xq_pop(q));
            c->occ[i]--;
            c->backlog--;
            c->cr_extra[i] |= 1ULL << j;
            c->cr_extra_any = 1;
            if (!q->runs) voq_emptied(c, i, j);
        } else {
            xq_run *e = xq_head(&c->q[i]);
            drive(slot, i, j, e->data);
            e->aux &= ~(1ULL << j);
            voq_emptied(c, i, j);
        }
    }
}

/* Step 4 for VOQs: one presented flit written into every destination's VOQ
 * (visible from t+1). A multicast flit's copies share a tag, the input's
 * count of multicast presentations; unicast flits need none. */
static inline void voq_write(xbar_core *c, int i, uint64_t dm, uint64_t data)
{
    if (!dm || (dm & ~c->all)) core_fatal(c, "flit with an empty or out-of-range destination mask", i, -1);
    const int mc = (dm & (dm - 1)) != 0;
    const uint64_t tag = mc ? c->seq[i]++ << 1 | 1 : 0;
    const uint32_t copies = mc ? (uint32_t)__builtin_popcountll(dm) : 1;
    if (c->cfg.shared && c->cfg.depth && c->occ[i] + copies > (uint32_t)c->cfg.depth)
        core_fatal(c, "shared input buffer overflow (upstream ignored credits)", i, -1);
    for (uint64_t d = dm; d; d &= d - 1) {
        int j = __builtin_ctzll(d);
        xq *q = voq_at(c, i, j);
        if (q->flits >= c->voq_limit) core_fatal(c, "VOQ overflow (upstream ignored credits)", i, j);
        if (!q->runs) voq_filled(c, i, j);
        xq_push(q, data, tag);
    }
    c->occ[i] += copies;
    c->backlog += copies;
}

/* Step 3 for VOQs: every matched (i, j) pops the head of VOQ[i][j]. Fills
 * out->match_in/match_out and *matched_out; returns the inputs whose popped
 * flit is a multicast copy (tags in popseq). */
static uint64_t voq_transfer(xbar_core *c, xpipe *slot, const int8_t *in_match, xbar_out *out,
                             uint64_t *matched_out, uint64_t *popseq)
{
    const int n = c->n;
    uint64_t mc_in = 0, min = 0, mout = 0;
    for (int i = 0; i < n; i++) {
        const int j = in_match[i];
        if (j < 0) continue;
        min |= 1ULL << i;
        mout |= 1ULL << j;
        xq *q = voq_at(c, i, j);
        const uint64_t aux = xq_head(q)->aux;
        if (aux & 1) { /* a multicast copy: others of it may join below */
            popseq[i] = aux;
            mc_in |= 1ULL << i;
        }
        slot->data[j] = xq_pop(q);
        slot->src[j] = (uint8_t)i;
        c->occ[i]--;
        c->cr_q[i] = (uint8_t)j;
        out->match_out[i] = (uint8_t)j;
        if (!q->runs) voq_emptied(c, i, j);
    }
    out->match_in = min;
    *matched_out = mout;
    return mc_in;
}

/* Step 4 for VOQs: the writes of the flits presented in this cycle (visible
 * from t+1). A unicast flit into a private VOQ (the common case) usually just
 * extends the tail run. */
static void voq_write_all(xbar_core *c, const xbar_in *in, uint64_t in_valid)
{
    const int n = c->n;
    const uint32_t limit = c->voq_limit;
    const int fast_ok = !c->cfg.shared;
    for (uint64_t m = in_valid; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        const uint64_t dm = in->in[i].dest_mask, data = in->in[i].data;
        const int j = __builtin_ctzll(dm | 1ULL << 63);
        if (!fast_ok || dm != 1ULL << j || j >= n) {
            voq_write(c, i, dm, data);
            continue;
        }
        xq *q = voq_at(c, i, j);
        if (q->flits >= limit) core_fatal(c, "VOQ overflow (upstream ignored credits)", i, j);
        c->occ[i]++;
        c->backlog++;
        if (q->runs) {
            xq_run *t = xq_tail(q);
            if (t->data + t->count == data && t->aux == 0) { /* the next flit of the tail run */
                t->count++;
                q->flits++;
                continue;
            }
        } else {
            voq_filled(c, i, j);
        }
        xq_push_run(q, data, 0);
    }
}

/* Step 3 for FIFOs: the head flit is read for the matched output; it leaves
 * (one credit) once its last destination is served (after fan-out reads). */
static uint64_t fifo_transfer(xbar_core *c, xpipe *slot, const int8_t *in_match, xbar_out *out,
                              uint64_t *matched_out)
{
    uint64_t mc_in = 0, min = 0, mout = 0;
    for (int i = 0; i < c->n; i++) {
        const int j = in_match[i];
        if (j < 0) continue;
        min |= 1ULL << i;
        mout |= 1ULL << j;
        out->match_out[i] = (uint8_t)j;
        xq_run *e = xq_head(&c->q[i]);
        drive(slot, i, j, e->data);
        e->aux &= ~(1ULL << j);
        voq_emptied(c, i, j);
        if (e->aux) mc_in |= 1ULL << i;
    }
    out->match_in = min;
    *matched_out = mout;
    return mc_in;
}

static void fifo_pop_served(xbar_core *c, uint64_t matched_in)
{
    for (uint64_t m = matched_in; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        xq *q = &c->q[i];
        if (xq_head(q)->aux) continue;
        xq_pop(q);
        c->occ[i]--;
        c->backlog--;
        c->cr |= 1ULL << i;
        c->cr_q[i] = 0;
        if (q->runs) {
            uint64_t dm = xq_head(q)->aux;
            c->req_in[i] = dm;
            for (; dm; dm &= dm - 1) c->req_out[__builtin_ctzll(dm)] |= 1ULL << i;
        }
    }
}

/* Step 4 for FIFOs: one entry per presented flit, its mask to serve. */
static void fifo_write(xbar_core *c, const xbar_in *in, uint64_t in_valid)
{
    for (uint64_t m = in_valid; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        const xbar_flit *f = &in->in[i];
        uint64_t dm = f->dest_mask & c->all;
        if (!dm || dm != f->dest_mask) core_fatal(c, "flit with an empty or out-of-range destination mask", i, -1);
        xq *q = &c->q[i];
        if (c->cfg.depth && q->flits >= (uint32_t)c->cfg.depth)
            core_fatal(c, "input FIFO overflow (upstream ignored credits)", i, 0);
        if (!q->runs) {
            c->req_in[i] = dm;
            for (uint64_t d = dm; d; d &= d - 1) c->req_out[__builtin_ctzll(d)] |= 1ULL << i;
        }
        xq_push_run(q, f->data, dm);
        c->occ[i]++;
        c->backlog++;
    }
}

/* Outputs of cycle t: flits matched in t-L, credits of slots freed in t-1. */
static void drive_outputs(xbar_core *c, xpipe *slot, xbar_out *out)
{
    const int n = c->n;
    /* Whole arrays: at load most entries are valid, and copying beats a bit walk. */
    out->valid = slot->valid;
    if (slot->valid) {
        memcpy(out->out_data, slot->data, (size_t)n * sizeof slot->data[0]);
        memcpy(out->out_src, slot->src, (size_t)n);
    }
    out->credit = c->cr;
    if (c->cr) memcpy(out->credit_queue, c->cr_q, (size_t)n);
    memcpy(out->credit_extra, c->cr_extra, (size_t)n * sizeof c->cr_extra[0]);
    if (c->cr_extra_any) {
        memset(c->cr_extra, 0, sizeof c->cr_extra);
        c->cr_extra_any = 0;
    }
    c->cr = 0;
    slot->valid = 0;
}

void xbar_core_step(xbar_core *c, const xbar_in *in, xbar_out *out)
{
    const int voq = c->cfg.queue == XBAR_QUEUE_VOQ;
    const uint64_t in_valid = in->valid & c->all;
    xpipe *slot = &c->pipe[c->pipe_idx];
    c->pipe_idx = c->pipe_idx + 1 == c->cfg.latency ? 0 : c->pipe_idx + 1;
    drive_outputs(c, slot, out);

    /* Steps 1-2: requests are the queue state at the start of the cycle. */
    int8_t in_match[XBAR_MAX_PORTS], out_match[XBAR_MAX_PORTS];
    c->last_matches = xbar_alloc_run(c->alloc, c->req_in, c->req_out, in_match, out_match);
    c->last_fanout = 0;
    uint64_t matched_out, popseq[XBAR_MAX_PORTS];
    if (voq) {
        uint64_t mc_in = voq_transfer(c, slot, in_match, out, &matched_out, popseq);
        slot->valid |= matched_out;
        c->cr |= out->match_in;
        c->backlog -= (uint64_t)c->last_matches;
        if (c->cfg.fanout_read && mc_in) fanout_read(c, slot, matched_out, mc_in, popseq);
        voq_write_all(c, in, in_valid);
    } else {
        uint64_t mc_in = fifo_transfer(c, slot, in_match, out, &matched_out);
        if (c->cfg.fanout_read && mc_in) fanout_read(c, slot, matched_out, mc_in, popseq);
        fifo_pop_served(c, out->match_in);
        fifo_write(c, in, in_valid);
    }
    c->t++;
}

static void tl_step(void *impl, const xbar_in *in, xbar_out *out) { xbar_core_step(impl, in, out); }
static void tl_free(void *impl) { xbar_core_free(impl); }
const xbar_core_ops xbar_core_tl_ops = { "tl", tl_step, tl_free };

const xbar_core_cfg *xbar_core_config(const xbar_core *c) { return &c->cfg; }
uint64_t xbar_core_cycle(const xbar_core *c) { return c->t; }
uint64_t xbar_core_backlog(const xbar_core *c) { return c->backlog; }
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
    if (c->cfg.queue == XBAR_QUEUE_VOQ) return c->q[(unsigned)in << 6 | (unsigned)queue].flits;
    return queue == 0 ? c->q[in].flits : 0;
}
