/* The reference crossbar core (see xbar_ref.h): docs/crossbar-cycle-rules.md
 * one step after another. Written to be read next to the rules, not to be
 * fast: every queue is a plain FIFO of cells, requests are a boolean matrix
 * rebuilt from the queues every cycle, the allocators are the textbook
 * loops, and the output pipeline holds whole cycles. */
#include "models/nvswitch/xbar_ref.h"

#include "sim/rng.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One buffered flit copy (VOQ) or flit (FIFO). */
typedef struct ref_cell {
    uint64_t data;
    bool multicast;        /* a copy of a flit presented to more than one output */
    uint64_t to_serve;     /* FIFO: outputs still to receive a copy; VOQ: unused */
} ref_cell;

/* A FIFO of cells (a ring that doubles when full). */
typedef struct ref_queue {
    ref_cell *cell;
    size_t head, len, cap;
} ref_queue;

/* What the switch drives on its outputs in one cycle. */
typedef struct ref_drive {
    bool valid[XBAR_MAX_PORTS];
    uint64_t data[XBAR_MAX_PORTS];
    int src[XBAR_MAX_PORTS];
} ref_drive;

struct xbar_ref {
    xbar_core_cfg cfg;
    int n;
    ref_queue *queue;                   /* VOQ (i, j) at i * n + j; FIFO: input i at i */
    /* allocator state */
    int grant_ptr[XBAR_MAX_PORTS];      /* islip g[j]; rr output pointers */
    int accept_ptr[XBAR_MAX_PORTS];     /* islip a[i]; rr input pointers */
    int diagonal;                       /* wavefront priority diagonal */
    sim_rng rng;                        /* pim */
    int fan_ptr[XBAR_MAX_PORTS];        /* f[j], the fan-out read pointer */
    /* Output pipeline: drive[t mod L] holds what cycle t-L matched until
     * cycle t drives it, then what cycle t matches. */
    ref_drive *drive;
    /* Credits of the slots freed this cycle, driven next cycle. */
    bool credit[XBAR_MAX_PORTS];
    int credit_queue[XBAR_MAX_PORTS];
    bool credit_extra[XBAR_MAX_PORTS][XBAR_MAX_PORTS];
    uint64_t cycle;
    int last_matches, last_fanout;
};

/* ---- queues ------------------------------------------------------------ */

static ref_cell *queue_head(ref_queue *q) { return &q->cell[q->head]; }

static void queue_push(ref_queue *q, ref_cell c)
{
    if (q->len == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 4;
        ref_cell *cell = malloc(cap * sizeof *cell);
        if (!cell) {
            fprintf(stderr, "xbar_ref: out of memory\n");
            abort();
        }
        for (size_t k = 0; k < q->len; k++) cell[k] = q->cell[(q->head + k) % q->cap];
        free(q->cell);
        q->cell = cell;
        q->head = 0;
        q->cap = cap;
    }
    q->cell[(q->head + q->len) % q->cap] = c;
    q->len++;
}

static ref_cell queue_pop(ref_queue *q)
{
    ref_cell c = q->cell[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    return c;
}

static ref_queue *voq(xbar_ref *r, int i, int j) { return &r->queue[i * r->n + j]; }

static _Noreturn void ref_fatal(const xbar_ref *r, const char *what, int i, int j)
{
    fprintf(stderr, "xbar_ref: cycle %llu: %s (input %d, queue %d)\n", (unsigned long long)r->cycle, what, i, j);
    abort();
}

/* ---- construction ------------------------------------------------------ */

xbar_ref *xbar_ref_new(const xbar_core_cfg *cfg)
{
    char why[128];
    if (xbar_core_cfg_check(cfg, why, sizeof why) != 0) return NULL;
    xbar_ref *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->cfg = *cfg;
    r->n = cfg->ports;
    size_t queues = cfg->queue == XBAR_QUEUE_VOQ ? (size_t)r->n * (size_t)r->n : (size_t)r->n;
    r->queue = calloc(queues, sizeof *r->queue);
    r->drive = calloc((size_t)cfg->latency, sizeof *r->drive);
    if (!r->queue || !r->drive) {
        xbar_ref_free(r);
        return NULL;
    }
    /* PIM draws from the stream the fast core's PIM seeds (alloc_pim.c): the
     * same seed must give the same random choices in both. */
    sim_rng_seed_stream(&r->rng, cfg->seed, 0x70696dULL /* "pim" */);
    return r; /* every pointer 0, every queue empty: the state after reset */
}

void xbar_ref_free(xbar_ref *r)
{
    if (!r) return;
    size_t queues = r->cfg.queue == XBAR_QUEUE_VOQ ? (size_t)r->n * (size_t)r->n : (size_t)r->n;
    for (size_t k = 0; r->queue && k < queues; k++) free(r->queue[k].cell);
    free(r->queue);
    free(r->drive);
    free(r);
}

/* ---- step 2: the allocators ------------------------------------------- */

/* req[i][j]: input i requests output j. Each fills in_match[i] (output or
 * -1) and out_match[j] (input or -1) from all -1. */
typedef bool ref_req[XBAR_MAX_PORTS][XBAR_MAX_PORTS];

static void match(int *in_match, int *out_match, int i, int j)
{
    in_match[i] = j;
    out_match[j] = i;
}

/* iSLIP: grant, accept, pointers on accepted grants of iteration 1 only;
 * inject=rrm moves g[j] past every grant of iteration 1 (RRM). */
static void alloc_islip(xbar_ref *r, ref_req req, int *in_match, int *out_match)
{
    const int n = r->n;
    for (int iter = 0; iter < r->cfg.iters; iter++) {
        int granted[XBAR_MAX_PORTS]; /* per output: the input it grants, or -1 */
        for (int j = 0; j < n; j++) {
            granted[j] = -1;
            if (out_match[j] >= 0) continue;
            for (int k = 0; k < n && granted[j] < 0; k++) {
                int i = (r->grant_ptr[j] + k) % n;
                if (in_match[i] < 0 && req[i][j]) granted[j] = i;
            }
        }
        if (iter == 0 && r->cfg.inject == XBAR_INJECT_RRM)
            for (int j = 0; j < n; j++)
                if (granted[j] >= 0) r->grant_ptr[j] = (granted[j] + 1) % n;
        for (int i = 0; i < n; i++) {
            if (in_match[i] >= 0) continue;
            for (int k = 0; k < n; k++) {
                int j = (r->accept_ptr[i] + k) % n;
                if (granted[j] != i) continue;
                match(in_match, out_match, i, j);
                if (iter == 0) {
                    r->grant_ptr[j] = (i + 1) % n;
                    r->accept_ptr[i] = (j + 1) % n;
                }
                break;
            }
        }
    }
}

/* PIM: each free output grants a uniformly random requesting free input,
 * each input accepts a uniformly random grant. The draws are made in the
 * order outputs 0..N-1, then inputs 0..N-1, one per port that has a choice
 * to make (even of one), each picking the k-th candidate in port order. */
static void alloc_pim(xbar_ref *r, ref_req req, int *in_match, int *out_match)
{
    const int n = r->n;
    for (int iter = 0; iter < r->cfg.iters; iter++) {
        int granted[XBAR_MAX_PORTS];
        int cand[XBAR_MAX_PORTS], nc;
        bool any = false;
        for (int j = 0; j < n; j++) {
            granted[j] = -1;
            if (out_match[j] >= 0) continue;
            nc = 0;
            for (int i = 0; i < n; i++)
                if (in_match[i] < 0 && req[i][j]) cand[nc++] = i;
            if (nc) granted[j] = cand[sim_rng_below(&r->rng, (uint64_t)nc)];
            any |= nc > 0;
        }
        if (!any) break;
        for (int i = 0; i < n; i++) {
            if (in_match[i] >= 0) continue;
            nc = 0;
            for (int j = 0; j < n; j++)
                if (granted[j] == i) cand[nc++] = j;
            if (nc) match(in_match, out_match, i, cand[sim_rng_below(&r->rng, (uint64_t)nc)]);
        }
    }
}

/* Wavefront: diagonals d = D, D+1, ... (cells (i, i+d mod N)); every request
 * on a diagonal whose ports are both free is matched; D moves by one every
 * cycle, requests or not. */
static void alloc_wavefront(xbar_ref *r, ref_req req, int *in_match, int *out_match)
{
    const int n = r->n;
    for (int step = 0; step < n; step++) {
        int d = (r->diagonal + step) % n;
        for (int i = 0; i < n; i++) {
            int j = (i + d) % n;
            if (req[i][j] && in_match[i] < 0 && out_match[j] < 0) match(in_match, out_match, i, j);
        }
    }
    r->diagonal = (r->diagonal + 1) % n;
}

/* Separable input-first round robin: each free input picks its first
 * request to a free output at or after in[i]; each output picks its first
 * picker at or after out[j]; pointers move for the matches of iteration 1. */
static void alloc_rr(xbar_ref *r, ref_req req, int *in_match, int *out_match)
{
    const int n = r->n;
    for (int iter = 0; iter < r->cfg.iters; iter++) {
        int picked[XBAR_MAX_PORTS]; /* per input: the output it picks, or -1 */
        for (int i = 0; i < n; i++) {
            picked[i] = -1;
            if (in_match[i] >= 0) continue;
            for (int k = 0; k < n && picked[i] < 0; k++) {
                int j = (r->accept_ptr[i] + k) % n;
                if (req[i][j] && out_match[j] < 0) picked[i] = j;
            }
        }
        for (int j = 0; j < n; j++) {
            if (out_match[j] >= 0) continue;
            for (int k = 0; k < n; k++) {
                int i = (r->grant_ptr[j] + k) % n;
                if (picked[i] != j) continue;
                match(in_match, out_match, i, j);
                if (iter == 0) {
                    r->accept_ptr[i] = (j + 1) % n;
                    r->grant_ptr[j] = (i + 1) % n;
                }
                break;
            }
        }
    }
}

/* ---- one cycle --------------------------------------------------------- */

static void drive_copy(ref_drive *d, int i, int j, uint64_t data)
{
    d->valid[j] = true;
    d->data[j] = data;
    d->src[j] = i;
}

/* Step 4 for one presented flit. */
static void write_flit(xbar_ref *r, int i, const xbar_flit *f)
{
    const int n = r->n;
    const uint64_t dm = f->dest_mask;
    if (dm == 0 || (n < 64 && (dm >> n) != 0)) ref_fatal(r, "flit with an empty or out-of-range destination mask", i, -1);
    const bool multicast = (dm & (dm - 1)) != 0;
    const uint32_t depth = (uint32_t)r->cfg.depth; /* 0: unbounded */
    if (r->cfg.queue == XBAR_QUEUE_FIFO) {
        ref_queue *q = &r->queue[i];
        if (depth && q->len >= depth) ref_fatal(r, "input FIFO overflow (upstream ignored credits)", i, 0);
        queue_push(q, (ref_cell){ f->data, multicast, dm });
        return;
    }
    if (r->cfg.shared && depth) {
        uint32_t held = 0, copies = 0;
        for (int j = 0; j < n; j++) {
            held += (uint32_t)voq(r, i, j)->len;
            copies += (uint32_t)(dm >> j & 1);
        }
        if (held + copies > depth) ref_fatal(r, "shared input buffer overflow (upstream ignored credits)", i, -1);
    }
    for (int j = 0; j < n; j++) { /* multicast: one copy into each destination's VOQ */
        if (!(dm >> j & 1)) continue;
        ref_queue *q = voq(r, i, j);
        if (depth && !r->cfg.shared && q->len >= depth) ref_fatal(r, "VOQ overflow (upstream ignored credits)", i, j);
        queue_push(q, (ref_cell){ f->data, multicast, 0 });
    }
}

void xbar_ref_step(xbar_ref *r, const xbar_in *in, xbar_out *out)
{
    const int n = r->n;
    const bool fifo = r->cfg.queue == XBAR_QUEUE_FIFO;
    memset(out, 0, sizeof *out);

    /* What this cycle drives: the flits matched L cycles ago, the credits
     * of the slots freed last cycle. */
    ref_drive *d = &r->drive[r->cycle % (uint64_t)r->cfg.latency];
    for (int j = 0; j < n; j++) {
        if (!d->valid[j]) continue;
        out->valid |= 1ULL << j;
        out->out_data[j] = d->data[j];
        out->out_src[j] = (uint8_t)d->src[j];
    }
    memset(d, 0, sizeof *d); /* now the slot of the flits this cycle matches */
    for (int i = 0; i < n; i++) {
        if (r->credit[i]) {
            out->credit |= 1ULL << i;
            out->credit_queue[i] = (uint8_t)r->credit_queue[i];
        }
        for (int j = 0; j < n; j++)
            if (r->credit_extra[i][j]) out->credit_extra[i] |= 1ULL << j;
    }
    memset(r->credit, 0, sizeof r->credit);
    memset(r->credit_extra, 0, sizeof r->credit_extra);

    /* Step 1: requests from the queues as they stand at the start of the cycle. */
    _Static_assert(sizeof(ref_req) == XBAR_MAX_PORTS * XBAR_MAX_PORTS, "one byte per request");
    ref_req req;
    memset(req, 0, sizeof req);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (fifo) req[i][j] = r->queue[i].len > 0 && (queue_head(&r->queue[i])->to_serve >> j & 1);
            else req[i][j] = voq(r, i, j)->len > 0;
        }

    /* Step 2: allocation. */
    int in_match[XBAR_MAX_PORTS], out_match[XBAR_MAX_PORTS];
    for (int k = 0; k < XBAR_MAX_PORTS; k++) in_match[k] = out_match[k] = -1;
    switch (r->cfg.alloc) {
    case XBAR_ALLOC_ISLIP: alloc_islip(r, req, in_match, out_match); break;
    case XBAR_ALLOC_PIM: alloc_pim(r, req, in_match, out_match); break;
    case XBAR_ALLOC_WAVEFRONT: alloc_wavefront(r, req, in_match, out_match); break;
    case XBAR_ALLOC_RR: alloc_rr(r, req, in_match, out_match); break;
    }
    r->last_matches = 0;
    r->last_fanout = 0;

    /* Step 3: every matched pair transfers the head flit of its queue. */
    for (int i = 0; i < n; i++) {
        const int j = in_match[i];
        if (j < 0) continue;
        r->last_matches++;
        out->match_in |= 1ULL << i;
        out->match_out[i] = (uint8_t)j;
        ref_cell c;
        if (fifo) {
            ref_cell *head = queue_head(&r->queue[i]);
            head->to_serve &= ~(1ULL << j); /* popped below once it has served every output */
            c = *head;
        } else {
            c = queue_pop(voq(r, i, j));
            r->credit[i] = true;
            r->credit_queue[i] = j;
        }
        drive_copy(d, i, j, c.data);
    }

    /* Multicast fan-out read: an output left unmatched takes a multicast
     * copy waiting for it, from the first input at or after f[j] that has
     * one. VOQ (fan-out splitting): any input whose VOQ for it has a
     * multicast copy at its head, matched or not. FIFO: a matched input
     * whose head flit (the one it sends) still has the output to serve. */
    for (int j = 0; r->cfg.fanout_read && j < n; j++) {
        if (out_match[j] >= 0) continue;
        for (int k = 0; k < n; k++) {
            const int i = (r->fan_ptr[j] + k) % n;
            ref_queue *q = fifo ? &r->queue[i] : voq(r, i, j);
            if (q->len == 0) continue;
            ref_cell *head = queue_head(q);
            bool waiting = fifo ? in_match[i] >= 0 && (head->to_serve >> j & 1) : head->multicast;
            if (!waiting) continue;
            if (fifo) {
                head->to_serve &= ~(1ULL << j);
                drive_copy(d, i, j, head->data);
            } else {
                drive_copy(d, i, j, queue_pop(q).data);
                r->credit_extra[i][j] = true;
            }
            r->fan_ptr[j] = (i + 1) % n;
            r->last_fanout++;
            break;
        }
    }

    /* FIFO: a head that has served every destination leaves, one credit. */
    for (int i = 0; fifo && i < n; i++) {
        if (in_match[i] < 0 || queue_head(&r->queue[i])->to_serve) continue;
        queue_pop(&r->queue[i]);
        r->credit[i] = true;
        r->credit_queue[i] = 0;
    }

    /* Step 4: the flits presented this cycle are written (requested from t+1). */
    for (int i = 0; i < n; i++)
        if (in->valid >> i & 1) write_flit(r, i, &in->in[i]);
    r->cycle++;
}

static void ref_ops_step(void *impl, const xbar_in *in, xbar_out *out) { xbar_ref_step(impl, in, out); }
static void ref_ops_free(void *impl) { xbar_ref_free(impl); }
const xbar_core_ops xbar_ref_ops = { "ref", ref_ops_step, ref_ops_free };

/* ---- inspection -------------------------------------------------------- */

uint64_t xbar_ref_cycle(const xbar_ref *r) { return r->cycle; }
int xbar_ref_last_matches(const xbar_ref *r) { return r->last_matches; }
int xbar_ref_last_fanout(const xbar_ref *r) { return r->last_fanout; }

uint32_t xbar_ref_queue_len(const xbar_ref *r, int in, int queue)
{
    if (r->cfg.queue == XBAR_QUEUE_FIFO) return queue == 0 ? (uint32_t)r->queue[in].len : 0;
    return (uint32_t)r->queue[in * r->n + queue].len;
}

uint64_t xbar_ref_backlog(const xbar_ref *r)
{
    uint64_t held = 0;
    for (int i = 0; i < r->n; i++)
        for (int q = 0; q < r->n; q++) held += xbar_ref_queue_len(r, i, q);
    return held;
}

uint64_t xbar_ref_in_flight(const xbar_ref *r)
{
    uint64_t flits = 0;
    for (int s = 0; s < r->cfg.latency; s++)
        for (int j = 0; j < r->n; j++) flits += r->drive[s].valid[j];
    return flits;
}

int xbar_ref_grant_ptr(const xbar_ref *r, int out)
{
    switch (r->cfg.alloc) {
    case XBAR_ALLOC_ISLIP:
    case XBAR_ALLOC_RR: return r->grant_ptr[out];
    case XBAR_ALLOC_WAVEFRONT: return r->diagonal;
    case XBAR_ALLOC_PIM: break;
    }
    return -1;
}

int xbar_ref_accept_ptr(const xbar_ref *r, int in)
{
    return r->cfg.alloc == XBAR_ALLOC_ISLIP || r->cfg.alloc == XBAR_ALLOC_RR ? r->accept_ptr[in] : -1;
}
