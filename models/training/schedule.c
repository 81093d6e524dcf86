/* A pipeline's training step as events (schedule.h). Each stage walks its
 * op list -- Megatron's 1F1B order, forward and backward ops of (micro-batch,
 * chunk) -- and each op is a short list of items: compute (busy time), a TP
 * all-reduce (the stage waits for it), a PP send (started, not waited for),
 * a layer's gradients becoming final (they fill the DP bucket). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/training/schedule.h"

enum item_type { ITEM_FWD = 0, ITEM_BWD, ITEM_TP, ITEM_SEND, ITEM_GRAD };
typedef struct item { enum item_type type; double ns; uint64_t bytes; } item;
typedef struct op { bool bwd; unsigned mb, chunk; } op;

typedef struct pp_msg {
    struct train_sched *s;
    unsigned dst_stage, from_stage;
    sim_time_ps sent_ps, in_ps;   /* +1: 0 is "not yet" */
} pp_msg;

typedef struct stage {
    struct train_sched *s;
    unsigned id;
    op *ops;
    unsigned n_ops, op_i;
    item *items;
    unsigned n_items, item_i;
    bool in_op, busy, waiting;
    pp_msg *waiting_for;
    sim_time_ps wait_from_ps, op_start_ps, busy_from_ps;
    unsigned *bwd_done;           /* per chunk: backward ops done */
    /* data parallelism: a FIFO of buckets on one stream */
    uint64_t bucket_fill, dp_total_bytes;
    uint64_t *dp_q;
    unsigned dp_head, dp_tail, dp_started, dp_done;
    bool dp_busy, gathered, ops_done, finished;
    sim_time_ps dp_from_ps, ops_done_ps;
    train_stage_times t;
} stage;

struct train_sched {
    sim_kernel *k;
    train_sched_cfg c;
    train_comm_backend be;
    unsigned V, layers_per_vs, m;
    stage *st;
    pp_msg *act, *grad;           /* [vs * m + mb]: the input of virtual stage vs for micro-batch mb */
    bool *fwd_done;               /* [vs * m + mb]: its forward ran (a backward needs it) */
    uint64_t pp_sent, pp_in;
    train_span *spans;
    unsigned n_spans, cap_spans, finished;
    sim_time_ps start_ps;
};

static const char *const comm_names[TRAIN_COMM_KINDS] = { "tp", "pp", "dp", "dp_gather" };
const char *train_comm_kind_name(enum train_comm_kind k) { return k < TRAIN_COMM_KINDS ? comm_names[k] : "?"; }
static const char *const span_names[TRAIN_SPAN_KINDS] = { "forward", "backward", "tp_allreduce", "pp_send", "dp_allreduce", "wait" };
const char *train_span_kind_name(enum train_span_kind k) { return k < TRAIN_SPAN_KINDS ? span_names[k] : "?"; }

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) sim_fatal("out of memory");
    return p;
}

static void span(train_sched *s, unsigned st, enum train_span_kind kind, unsigned mb, unsigned chunk, sim_time_ps a, sim_time_ps b)
{
    if (s->n_spans == s->cap_spans) {
        s->cap_spans = s->cap_spans ? 2 * s->cap_spans : 1024;
        s->spans = realloc(s->spans, s->cap_spans * sizeof *s->spans);
        if (!s->spans) sim_fatal("out of memory");
    }
    s->spans[s->n_spans++] = (train_span){ st, mb, chunk, kind, a, b };
}

/* Megatron's order (schedules.py, forward_backward_pipelining_with_interleaving):
 * warm-up forwards, then one forward one backward, then the remaining
 * backwards; the k-th forward is micro-batch (k / (p v)) p + k % p of chunk
 * (k / p) % v, the k-th backward the same micro-batch of chunk v-1-(k/p)%v. */
static unsigned build_ops(const train_sched *s, unsigned st, op *ops)
{
    const unsigned p = s->c.pp, v = s->c.interleave, m = s->m, total = m * v;
    unsigned warm = v == 1 ? p - st - 1 : (p - st - 1) * 2 + (v - 1) * p;
    if (m == p && v > 1) warm = total;
    if (warm > total) warm = total;
    unsigned n = 0, f = 0, b = 0;
#define FWD_OP(k) (op){ false, ((k) / (p * v)) * p + (k) % p, ((k) / p) % v }
#define BWD_OP(k) (op){ true, ((k) / (p * v)) * p + (k) % p, v - 1 - ((k) / p) % v }
    while (f < warm) ops[n++] = FWD_OP(f), f++;
    while (f < total) ops[n++] = FWD_OP(f), f++, ops[n++] = BWD_OP(b), b++;
    while (b < total) ops[n++] = BWD_OP(b), b++;
#undef FWD_OP
#undef BWD_OP
    return n;
}

static unsigned vs_of(const train_sched *s, unsigned st, unsigned chunk) { return chunk * s->c.pp + st; }

static void build_items(stage *g, const op *o)
{
    train_sched *s = g->s;
    const train_sched_cfg *c = &s->c;
    const unsigned vs = vs_of(s, g->id, o->chunk), L = s->layers_per_vs;
    const bool tp = c->tp > 1, last_vs = vs == s->V - 1;
    unsigned n = 0;
#define PUSH(t, ns_, b_) g->items[n++] = (item){ (t), (ns_), (b_) }
    if (!o->bwd) {
        for (unsigned j = 0; j < L; j++) {
            PUSH(ITEM_FWD, c->layer_fwd_ns * c->attn_share, 0);
            if (tp) PUSH(ITEM_TP, 0, c->tp_bytes);
            PUSH(ITEM_FWD, c->layer_fwd_ns * (1.0 - c->attn_share), 0);
            if (tp) PUSH(ITEM_TP, 0, c->tp_bytes);
        }
        if (last_vs) PUSH(ITEM_FWD, c->output_fwd_ns, 0);
        else PUSH(ITEM_SEND, 0, c->pp_bytes);
    } else {
        bool final = g->bwd_done[o->chunk] == s->m - 1;   /* this chunk's last micro-batch: its gradients are final */
        if (last_vs) {
            PUSH(ITEM_BWD, c->output_bwd_ns, 0);
            if (final && c->dp_last_bytes) PUSH(ITEM_GRAD, 0, c->dp_last_bytes);
        }
        for (unsigned j = 0; j < L; j++) {
            PUSH(ITEM_BWD, c->layer_bwd_ns * (1.0 - c->attn_share), 0);
            if (tp) PUSH(ITEM_TP, 0, c->tp_bytes);
            PUSH(ITEM_BWD, c->layer_bwd_ns * c->attn_share, 0);
            if (tp) PUSH(ITEM_TP, 0, c->tp_bytes);
            if (final) PUSH(ITEM_GRAD, 0, c->dp_layer_bytes);
        }
        if (vs == 0 && final && c->dp_first_bytes) PUSH(ITEM_GRAD, 0, c->dp_first_bytes);
        if (vs > 0) PUSH(ITEM_SEND, 0, c->pp_bytes);
    }
#undef PUSH
    g->n_items = n;
    g->item_i = 0;
}

/* The message op o waits for, or NULL when it needs none. */
static pp_msg *input_of(stage *g, const op *o)
{
    train_sched *s = g->s;
    unsigned vs = vs_of(s, g->id, o->chunk);
    if (!o->bwd) return vs == 0 ? NULL : &s->act[vs * s->m + o->mb];
    return vs == s->V - 1 ? NULL : &s->grad[vs * s->m + o->mb];
}

static void advance(stage *g);
static void dp_kick(stage *g);

static void pp_arrived(void *arg)
{
    pp_msg *msg = arg;
    train_sched *s = msg->s;
    if (msg->in_ps) sim_fatal("train_sched: a pipeline message arrived twice");
    msg->in_ps = sim_now(s->k) + 1;
    s->pp_in++;
    s->st[msg->from_stage].t.pp_ns += (double)(msg->in_ps - msg->sent_ps) / 1000.0;
    stage *g = &s->st[msg->dst_stage];
    if (g->waiting && g->waiting_for == msg) advance(g);
}

static void compute_done(void *obj, uint64_t tag)
{
    (void)tag;
    stage *g = obj;
    train_sched *s = g->s;
    g->t.compute_ns += (double)(sim_now(s->k) - g->busy_from_ps) / 1000.0;
    g->busy = false;
    advance(g);
}

static void tp_done(void *arg)
{
    stage *g = arg;
    train_sched *s = g->s;
    sim_time_ps now = sim_now(s->k);
    g->t.tp_ns += (double)(now - g->busy_from_ps) / 1000.0;
    const op *o = &g->ops[g->op_i];
    span(s, g->id, TRAIN_SPAN_TP, o->mb, o->chunk, g->busy_from_ps, now);
    g->busy = false;
    advance(g);
}

static void bucket_close(stage *g)
{
    if (!g->bucket_fill) return;
    g->dp_q[g->dp_tail++] = g->bucket_fill;
    g->bucket_fill = 0;
}

static void finish(stage *g)
{
    train_sched *s = g->s;
    sim_time_ps now = sim_now(s->k);
    g->finished = true;
    g->t.end_ns = (double)(now - s->start_ps) / 1000.0;
    g->t.dp_exposed_ns = (double)(now - g->ops_done_ps) / 1000.0;
    s->finished++;
}

static void dp_done(void *arg)
{
    stage *g = arg;
    train_sched *s = g->s;
    sim_time_ps now = sim_now(s->k);
    g->dp_busy = false;
    g->dp_done++;
    g->t.dp_ns += (double)(now - g->dp_from_ps) / 1000.0;
    span(s, g->id, TRAIN_SPAN_DP, 0, 0, g->dp_from_ps, now);
    dp_kick(g);
}

/* Start the next bucket when the stream is free (and, without overlap, the backward is over);
 * after the last one, ZeRO-1 gathers the parameters; then the stage is done. */
static void dp_kick(stage *g)
{
    train_sched *s = g->s;
    if (g->dp_busy || g->finished) return;
    if (g->dp_head < g->dp_tail && (s->c.overlap || g->ops_done)) {
        uint64_t bytes = g->dp_q[g->dp_head++];
        g->dp_busy = true;
        g->dp_started++;
        g->dp_from_ps = sim_now(s->k);
        s->be.start(s->be.ctx, TRAIN_COMM_DP, g->id, g->id, bytes, dp_done, g);
        return;
    }
    if (!g->ops_done || g->dp_head < g->dp_tail) return;
    if (s->c.zero && s->c.dp && !g->gathered) {
        g->gathered = true;
        g->dp_busy = true;
        g->dp_started++;
        g->dp_from_ps = sim_now(s->k);
        s->be.start(s->be.ctx, TRAIN_COMM_DP_GATHER, g->id, g->id, g->dp_total_bytes, dp_done, g);
        return;
    }
    finish(g);
}

static void send_pp(stage *g, const op *o, uint64_t bytes)
{
    train_sched *s = g->s;
    unsigned vs = vs_of(s, g->id, o->chunk), to = o->bwd ? vs - 1 : vs + 1;
    pp_msg *msg = o->bwd ? &s->grad[to * s->m + o->mb] : &s->act[to * s->m + o->mb];
    msg->dst_stage = to % s->c.pp;
    msg->from_stage = g->id;
    msg->sent_ps = sim_now(s->k) + 1;
    s->pp_sent++;
    s->be.start(s->be.ctx, TRAIN_COMM_PP, g->id, msg->dst_stage, bytes, pp_arrived, msg);
}

static void advance(stage *g)
{
    train_sched *s = g->s;
    while (!g->busy && !g->ops_done) {
        sim_time_ps now = sim_now(s->k);
        if (!g->in_op) {
            const op *o = &g->ops[g->op_i];
            const unsigned at = vs_of(s, g->id, o->chunk) * s->m + o->mb;
            if (o->bwd && !s->fwd_done[at])
                sim_fatal("train_sched: stage %u runs the backward of micro-batch %u, chunk %u before its forward", g->id, o->mb, o->chunk);
            pp_msg *in = input_of(g, o);
            if (in && !in->in_ps) {   /* its input is not here: idle */
                if (!g->waiting) g->waiting = true, g->wait_from_ps = now;
                g->waiting_for = in;
                return;
            }
            if (g->waiting) {   /* idle while the upstream computed: bubble; while the message flew: exposed PP */
                sim_time_ps flying = in->sent_ps - 1 > g->wait_from_ps ? in->sent_ps - 1 : g->wait_from_ps;
                g->t.bubble_ns += (double)(flying - g->wait_from_ps) / 1000.0;
                g->t.pp_wait_ns += (double)(now - flying) / 1000.0;
                span(s, g->id, TRAIN_SPAN_WAIT, o->mb, o->chunk, g->wait_from_ps, now);
                g->waiting = false;
                g->waiting_for = NULL;
            }
            build_items(g, o);
            g->in_op = true;
            g->op_start_ps = now;
        }
        const op *o = &g->ops[g->op_i];
        if (g->item_i == g->n_items) {   /* the op is over */
            span(s, g->id, o->bwd ? TRAIN_SPAN_BWD : TRAIN_SPAN_FWD, o->mb, o->chunk, g->op_start_ps, now);
            if (o->bwd) g->bwd_done[o->chunk]++;
            else s->fwd_done[vs_of(s, g->id, o->chunk) * s->m + o->mb] = true;
            g->in_op = false;
            if (++g->op_i == g->n_ops) {
                g->ops_done = true;
                g->ops_done_ps = now;
                bucket_close(g);
                dp_kick(g);
            }
            continue;
        }
        const item *it = &g->items[g->item_i++];
        switch (it->type) {
        case ITEM_FWD:
        case ITEM_BWD: {
            sim_time_ps d = (sim_time_ps)(it->ns * 1000.0 + 0.5);
            if (!d) break;
            g->busy = true;
            g->busy_from_ps = now;
            sim_schedule_callback(s->k, d, 0, compute_done, g, 0);
            break;
        }
        case ITEM_TP:
            g->busy = true;
            g->busy_from_ps = now;
            s->be.start(s->be.ctx, TRAIN_COMM_TP, g->id, g->id, it->bytes, tp_done, g);
            break;
        case ITEM_SEND:
            send_pp(g, o, it->bytes);
            break;
        case ITEM_GRAD:
            g->dp_total_bytes += it->bytes;
            if (s->c.dp) {
                g->bucket_fill += it->bytes;
                if (g->bucket_fill >= s->c.bucket_bytes) bucket_close(g), dp_kick(g);
            }
            break;
        }
    }
}

train_sched *train_sched_new(sim_kernel *k, const train_sched_cfg *cfg, const train_comm_backend *be, char *err, size_t errlen)
{
    const train_sched_cfg *c = cfg;
    unsigned V = c->pp * (c->interleave ? c->interleave : 0);
    if (!c->pp || !c->tp || !c->interleave || !c->microbatches) {
        snprintf(err, errlen, "pp, tp, interleave and microbatches must be at least 1");
        return NULL;
    }
    if (c->layers % V) {
        snprintf(err, errlen, "layers=%u do not split evenly over pp x interleave = %u virtual stages", c->layers, V);
        return NULL;
    }
    if (c->interleave > 1 && c->pp < 2) {
        snprintf(err, errlen, "interleave=%u needs pp >= 2 (virtual stages interleave between pipeline stages)", c->interleave);
        return NULL;
    }
    if (c->interleave > 1 && c->microbatches % c->pp) {
        snprintf(err, errlen, "interleave=%u needs micro-batches (%u) to be a multiple of pp=%u (Megatron's interleaved schedule)",
                 c->interleave, c->microbatches, c->pp);
        return NULL;
    }
    if (c->attn_share < 0 || c->attn_share > 1 || c->layer_fwd_ns < 0 || c->layer_bwd_ns < 0) {
        snprintf(err, errlen, "attn_share must be in [0,1] and compute times >= 0");
        return NULL;
    }
    train_sched *s = xcalloc(1, sizeof *s);
    s->k = k, s->c = *cfg, s->be = *be, s->V = V, s->layers_per_vs = c->layers / V, s->m = c->microbatches;
    s->act = xcalloc((size_t)V * s->m, sizeof *s->act);
    s->grad = xcalloc((size_t)V * s->m, sizeof *s->grad);
    s->fwd_done = xcalloc((size_t)V * s->m, sizeof *s->fwd_done);
    for (size_t i = 0; i < (size_t)V * s->m; i++) s->act[i].s = s->grad[i].s = s;
    s->st = xcalloc(c->pp, sizeof *s->st);
    const unsigned items_max = 5 * s->layers_per_vs + 4, ops_max = 2 * s->m * c->interleave;
    /* at most one bucket per gradient item, and one for what is left */
    const unsigned buckets_max = c->interleave * (s->layers_per_vs + 2) + 1;
    for (unsigned i = 0; i < c->pp; i++) {
        stage *g = &s->st[i];
        g->s = s, g->id = i;
        g->ops = xcalloc(ops_max, sizeof *g->ops);
        g->n_ops = build_ops(s, i, g->ops);
        g->items = xcalloc(items_max, sizeof *g->items);
        g->bwd_done = xcalloc(c->interleave, sizeof *g->bwd_done);
        g->dp_q = xcalloc(buckets_max, sizeof *g->dp_q);
    }
    return s;
}

void train_sched_free(train_sched *s)
{
    if (!s) return;
    for (unsigned i = 0; i < s->c.pp; i++) {
        free(s->st[i].ops);
        free(s->st[i].items);
        free(s->st[i].bwd_done);
        free(s->st[i].dp_q);
    }
    free(s->st);
    free(s->act);
    free(s->grad);
    free(s->fwd_done);
    free(s->spans);
    free(s);
}

void train_sched_start(train_sched *s)
{
    s->start_ps = sim_now(s->k);
    for (unsigned i = 0; i < s->c.pp; i++) advance(&s->st[i]);
}

bool train_sched_done(const train_sched *s) { return s->finished == s->c.pp; }

sim_time_ps train_sched_step_ps(const train_sched *s)
{
    double end = 0;
    for (unsigned i = 0; i < s->c.pp; i++)
        if (s->st[i].t.end_ns > end) end = s->st[i].t.end_ns;
    return (sim_time_ps)(end * 1000.0 + 0.5);
}

const train_stage_times *train_sched_stage(const train_sched *s, unsigned i) { return i < s->c.pp ? &s->st[i].t : NULL; }

const train_span *train_sched_spans(const train_sched *s, unsigned *n)
{
    *n = s->n_spans;
    return s->spans;
}

int train_sched_check(const train_sched *s, char *why, size_t why_n)
{
    if (s->pp_sent != s->pp_in) {
        snprintf(why, why_n, "%llu pipeline messages sent, %llu arrived", (unsigned long long)s->pp_sent, (unsigned long long)s->pp_in);
        return -1;
    }
    /* every virtual stage but the first gets one activation per micro-batch, every one but the last one gradient */
    uint64_t want = 2ull * (s->V - 1) * s->m;
    if (s->pp_sent != want) {
        snprintf(why, why_n, "%llu pipeline messages, the schedule needs %llu", (unsigned long long)s->pp_sent, (unsigned long long)want);
        return -1;
    }
    for (unsigned i = 0; i < s->c.pp; i++) {
        const stage *g = &s->st[i];
        if (!g->finished || g->op_i != g->n_ops || g->n_ops != 2 * s->m * s->c.interleave) {
            snprintf(why, why_n, "stage %u: %s, %u of %u ops", i, g->finished ? "finished" : "not finished", g->op_i, g->n_ops);
            return -1;
        }
        if (g->dp_started != g->dp_done || g->dp_head != g->dp_tail || g->bucket_fill) {
            snprintf(why, why_n, "stage %u: %u DP all-reduces started, %u done, %u buckets left", i, g->dp_started, g->dp_done,
                     g->dp_tail - g->dp_head);
            return -1;
        }
        double sum = g->t.compute_ns + g->t.tp_ns + g->t.pp_wait_ns + g->t.bubble_ns + g->t.dp_exposed_ns;
        if (sum > g->t.end_ns * (1 + 1e-9) + 1e-3 || sum < g->t.end_ns * (1 - 1e-9) - 1e-3) {
            snprintf(why, why_n, "stage %u: compute + tp + pp + bubble + dp = %.3f ns, step %.3f ns", i, sum, g->t.end_ns);
            return -1;
        }
    }
    return 0;
}
