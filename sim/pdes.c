/* Conservative windows over parts in one process (see pdes.h). */
#include "sim/pdes.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cut {
    sim_link *sending, *receiving;
} cut;

/* A cut direction of a ranked run: our half, the peer rank, the codec. */
typedef struct remote_cut {
    sim_link *link;
    unsigned peer;
    bool sending;
    const sim_pdes_codec *codec;
} remote_cut;

/* The records of a window's exchange: a message (then len bytes of payload) or a credit return. */
enum { REC_MSG = 1, REC_CREDIT = 2 };
typedef struct rec_head {
    uint32_t cut_id;
    uint8_t kind, marked, credit_type, pad;
    uint16_t part, pad2;
    uint32_t bytes_or_credits;
    uint64_t arrive_ps, seq;
    uint32_t len, pad3;
} rec_head;

struct sim_pdes {
    unsigned parts;
    sim_kernel **k;
    cut *cuts;
    size_t n_cuts, cap_cuts;
    sim_time_ps lookahead_ps;
    uint64_t windows;
    /* ranked (tr.size > 0): this rank's part only */
    sim_pdes_transport tr;
    remote_cut *rcuts;        /* indexed by cut id; link NULL: not ours */
    size_t n_rcuts;
    sim_pdes_buf *out, *in;   /* per rank */
    bool lookahead_agreed;
    double blocked_s, wall_s;
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sim_pdes_buf_put(sim_pdes_buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        while (b->cap < b->len + n) b->cap *= 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) sim_fatal("pdes: out of memory for an exchange of %zu bytes", b->cap);
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

void sim_pdes_gather(const sim_pdes_transport *tr, const void *mine, size_t n, sim_pdes_buf *all)
{
    sim_pdes_buf *out = calloc(tr->size, sizeof *out), *in = calloc(tr->size, sizeof *in);
    if (!out || !in) sim_fatal("pdes: out of memory");
    out[0] = (sim_pdes_buf){ .data = (unsigned char *)mine, .len = n };
    tr->exchange(tr->ctx, out, in);
    if (tr->rank == 0)
        for (unsigned r = 0; r < tr->size; r++) all[r] = in[r];
    free(out);
    free(in);
}

void sim_pdes_sum_u64(const sim_pdes_transport *tr, uint64_t *v, size_t n)
{
    sim_pdes_buf *out = calloc(tr->size, sizeof *out), *in = calloc(tr->size, sizeof *in);
    if (!out || !in) sim_fatal("pdes: out of memory");
    for (unsigned r = 0; r < tr->size; r++) out[r] = (sim_pdes_buf){ .data = (unsigned char *)v, .len = n * sizeof *v };
    tr->exchange(tr->ctx, out, in);
    uint64_t *sum = calloc(n + 1, sizeof *sum);
    for (unsigned r = 0; r < tr->size; r++) {
        if (in[r].len != n * sizeof *v) sim_fatal("pdes: rank %u summed %zu bytes, this rank %zu", r, in[r].len, n * sizeof *v);
        for (size_t i = 0; i < n; i++) {
            uint64_t x;
            memcpy(&x, in[r].data + i * sizeof x, sizeof x);
            sum[i] += x;
        }
    }
    memcpy(v, sum, n * sizeof *v);
    free(sum);
    free(out);
    free(in);
}

sim_pdes *sim_pdes_new(unsigned parts, sim_kernel *const *kernels)
{
    if (!parts) sim_fatal("sim_pdes_new: no parts");
    sim_pdes *p = calloc(1, sizeof *p);
    p->parts = parts;
    p->k = malloc(parts * sizeof *p->k);
    for (unsigned i = 0; i < parts; i++) p->k[i] = kernels[i];
    p->lookahead_ps = SIM_TIME_MAX;
    return p;
}

void sim_pdes_free(sim_pdes *p)
{
    if (!p) return;
    free(p->k);
    free(p->cuts);
    free(p->rcuts);
    for (unsigned r = 0; p->out && r < p->tr.size; r++) free(p->out[r].data);
    free(p->out);
    free(p->in);
    free(p);
}

sim_pdes *sim_pdes_new_ranked(const sim_pdes_transport *tr, sim_kernel *k)
{
    if (!tr || !tr->size || tr->rank >= tr->size || !tr->exchange || !tr->min_time) sim_fatal("sim_pdes_new_ranked: a bad transport");
    sim_pdes *p = sim_pdes_new(1, &k);
    p->tr = *tr;
    p->out = calloc(tr->size, sizeof *p->out);
    p->in = calloc(tr->size, sizeof *p->in);
    return p;
}

/* A cut's link bounds the lookahead by its least latency, message or credit. */
static void take_lookahead(sim_pdes *p, const sim_link *l)
{
    sim_time_ps la = l->latency_ps < l->credit_latency_ps ? l->latency_ps : l->credit_latency_ps;
    if (!la) sim_fatal("sim_pdes_cut: link %s has no latency: nothing to look ahead by", l->cfg.name);
    if (la < p->lookahead_ps) p->lookahead_ps = la;
}

static void remote_cut_add(sim_pdes *p, sim_link *l, unsigned peer, uint32_t id, const sim_pdes_codec *c, bool sending)
{
    if (!p->tr.size || peer >= p->tr.size || peer == p->tr.rank || l->k != p->k[0] || !c || !(sending ? c->encode != NULL : c->decode != NULL))
        sim_fatal("sim_pdes_cut: link %s: a ranked cut needs this rank's kernel, another rank and a codec that encodes (sending) or decodes (receiving)", l->cfg.name);
    if (id >= p->n_rcuts) {
        size_t n = p->n_rcuts ? p->n_rcuts : 64;
        while (n <= id) n *= 2;
        p->rcuts = realloc(p->rcuts, n * sizeof *p->rcuts);
        memset(p->rcuts + p->n_rcuts, 0, (n - p->n_rcuts) * sizeof *p->rcuts);
        p->n_rcuts = n;
    }
    if (p->rcuts[id].link) sim_fatal("sim_pdes_cut: cut id %u given twice (link %s)", id, l->cfg.name);
    if (sending) sim_link_make_sending_half(l);
    else sim_link_make_receiving_half(l);
    take_lookahead(p, l);
    p->rcuts[id] = (remote_cut){ l, peer, sending, c };
}

void sim_pdes_cut_sending(sim_pdes *p, sim_link *sending, unsigned to_rank, uint32_t cut_id, const sim_pdes_codec *c)
{
    remote_cut_add(p, sending, to_rank, cut_id, c, true);
}

void sim_pdes_cut_receiving(sim_pdes *p, sim_link *receiving, unsigned from_rank, uint32_t cut_id, const sim_pdes_codec *c)
{
    remote_cut_add(p, receiving, from_rank, cut_id, c, false);
}

double sim_pdes_blocked_s(const sim_pdes *p) { return p->blocked_s; }
double sim_pdes_wall_s(const sim_pdes *p) { return p->wall_s; }

void sim_pdes_cut(sim_pdes *p, sim_link *sending, unsigned from, sim_link *receiving, unsigned to)
{
    if (from >= p->parts || to >= p->parts || from == to || sending->k != p->k[from] || receiving->k != p->k[to])
        sim_fatal("sim_pdes_cut: link %s: the halves must be in two different parts' kernels", sending->cfg.name);
    if (sending->order_key != receiving->order_key)
        sim_fatal("sim_pdes_cut: link %s: the halves have order keys %u and %u", sending->cfg.name, sending->order_key,
                  receiving->order_key);
    sim_link_make_sending_half(sending);
    sim_link_make_receiving_half(receiving);
    take_lookahead(p, sending);
    if (p->n_cuts == p->cap_cuts) {
        p->cap_cuts = p->cap_cuts ? 2 * p->cap_cuts : 16;
        p->cuts = realloc(p->cuts, p->cap_cuts * sizeof *p->cuts);
    }
    p->cuts[p->n_cuts++] = (cut){ sending, receiving };
}

static void carry_msg(void *ctx, const sim_link_msg *m) { sim_link_import(ctx, m); }
static void carry_credit(void *ctx, const sim_link_credit_msg *c) { sim_link_import_credits(ctx, c); }

/* Every cut link's messages to its receiving half, credits to its sending half. */
static void exchange(sim_pdes *p)
{
    for (size_t i = 0; i < p->n_cuts; i++) {
        sim_link_export(p->cuts[i].sending, carry_msg, p->cuts[i].receiving);
        sim_link_export_credits(p->cuts[i].receiving, carry_credit, p->cuts[i].sending);
    }
}

static sim_time_ps next_activity(sim_pdes *p)
{
    sim_time_ps t = SIM_TIME_MAX;
    for (unsigned i = 0; i < p->parts; i++) {
        sim_time_ps n = sim_next_time(p->k[i]);
        if (n < t) t = n;
    }
    return t;
}

/* The export callbacks of a ranked window: records into the peer's buffer. */
typedef struct export_ctx {
    sim_pdes *p;
    uint32_t id;
} export_ctx;

static void put_msg(void *ctx, const sim_link_msg *m)
{
    export_ctx *e = ctx;
    const remote_cut *rc = &e->p->rcuts[e->id];
    sim_pdes_buf *b = &e->p->out[rc->peer];
    rec_head h = { .cut_id = e->id, .kind = REC_MSG, .marked = m->marked, .part = m->part, .bytes_or_credits = m->bytes,
                   .arrive_ps = m->arrive_ps, .seq = m->seq };
    size_t at = b->len;
    sim_pdes_buf_put(b, &h, sizeof h);
    rc->codec->encode(rc->codec->ctx, m, b);
    uint32_t len = (uint32_t)(b->len - at - sizeof h);
    memcpy(b->data + at + offsetof(rec_head, len), &len, sizeof len);
}

static void put_credit(void *ctx, const sim_link_credit_msg *c)
{
    export_ctx *e = ctx;
    rec_head h = { .cut_id = e->id, .kind = REC_CREDIT, .credit_type = c->type, .bytes_or_credits = c->n, .arrive_ps = c->arrive_ps };
    sim_pdes_buf_put(&e->p->out[e->p->rcuts[e->id].peer], &h, sizeof h);
}

static sim_time_ps agree_min(sim_pdes *p, sim_time_ps mine)
{
    double t0 = wall_now();
    sim_time_ps t = p->tr.min_time(p->tr.ctx, mine);
    p->blocked_s += wall_now() - t0;
    return t;
}

/* A ranked window's end: our cut halves' messages and credits out, the others' in. */
static void exchange_ranked(sim_pdes *p)
{
    for (unsigned r = 0; r < p->tr.size; r++) p->out[r].len = 0;
    for (uint32_t id = 0; id < p->n_rcuts; id++) {
        const remote_cut *rc = &p->rcuts[id];
        if (!rc->link) continue;
        export_ctx e = { p, id };
        if (rc->sending) sim_link_export(rc->link, put_msg, &e);
        else sim_link_export_credits(rc->link, put_credit, &e);
    }
    double t0 = wall_now();
    p->tr.exchange(p->tr.ctx, p->out, p->in);
    p->blocked_s += wall_now() - t0;
    for (unsigned r = 0; r < p->tr.size; r++) {
        const unsigned char *d = p->in[r].data;
        size_t at = 0, n = p->in[r].len;
        while (at < n) {
            rec_head h;
            if (n - at < sizeof h) sim_fatal("pdes: a truncated record from rank %u", r);
            memcpy(&h, d + at, sizeof h);
            at += sizeof h;
            const remote_cut *rc = h.cut_id < p->n_rcuts ? &p->rcuts[h.cut_id] : NULL;
            if (!rc || !rc->link || rc->peer != r || rc->sending != (h.kind == REC_CREDIT) || n - at < (h.kind == REC_MSG ? h.len : 0))
                sim_fatal("pdes: rank %u sent a record for cut %u that this rank does not hold that way", r, h.cut_id);
            if (h.kind == REC_MSG) {
                sim_link_msg m = { .arrive_ps = h.arrive_ps, .bytes = h.bytes_or_credits, .marked = h.marked, .part = h.part,
                                   .seq = h.seq };
                m.msg = rc->codec->decode(rc->codec->ctx, d + at, h.len);
                at += h.len;
                sim_link_import(rc->link, &m);
            } else {
                sim_link_credit_msg c = { .arrive_ps = h.arrive_ps, .n = h.bytes_or_credits, .type = h.credit_type };
                sim_link_import_credits(rc->link, &c);
            }
        }
    }
}

/* What the two ways of holding the parts do differently (pdes.h): the
 * earliest pending activity, and the latest last step, of every part. */
static sim_time_ps earliest_next(sim_pdes *p)
{
    return p->tr.size ? agree_min(p, sim_next_time(p->k[0])) : next_activity(p);
}

static sim_time_ps latest_step(sim_pdes *p)
{
    if (p->tr.size) return SIM_TIME_MAX - agree_min(p, SIM_TIME_MAX - sim_last_step_ps(p->k[0]));
    sim_time_ps last = 0;
    for (unsigned i = 0; i < p->parts; i++)
        if (sim_last_step_ps(p->k[i]) > last) last = sim_last_step_ps(p->k[i]);
    return last;
}

static sim_time_ps run_windows(sim_pdes *p, sim_time_ps until_ps)
{
    if (p->tr.size && !p->lookahead_agreed) {   /* every rank's cuts count */
        p->lookahead_ps = agree_min(p, p->lookahead_ps);
        p->lookahead_agreed = true;
    }
    const sim_time_ps la = p->lookahead_ps;   /* SIM_TIME_MAX with no cut: one window */
    sim_time_ps start = sim_now(p->k[0]);
    for (unsigned i = 1; i < p->parts; i++)
        if (sim_now(p->k[i]) != start) sim_fatal("sim_pdes_run: the parts stand at different times");
    /* the first window begins now: a part not yet started initialises in it */
    for (;;) {
        sim_time_ps end = la == SIM_TIME_MAX || until_ps - start < la ? until_ps : start + la - 1;
        for (unsigned i = 0; i < p->parts; i++) sim_run(p->k[i], end);
        p->windows++;
        if (p->tr.size) exchange_ranked(p);
        else exchange(p);
        sim_time_ps next = earliest_next(p);
        if (next == SIM_TIME_MAX || end == until_ps) break;
        start = next > end ? next : end + 1;
        if (start > until_ps) break;
    }
    if (until_ps != SIM_TIME_MAX) {
        for (unsigned i = 0; i < p->parts; i++) sim_run(p->k[i], until_ps);   /* nothing is left before it */
        return until_ps;
    }
    return latest_step(p);
}

sim_time_ps sim_pdes_run(sim_pdes *p, sim_time_ps until_ps)
{
    double t0 = wall_now();
    sim_time_ps t = run_windows(p, until_ps);
    p->wall_s += wall_now() - t0;
    return t;
}

sim_time_ps sim_pdes_lookahead_ps(const sim_pdes *p) { return p->lookahead_ps; }
uint64_t sim_pdes_windows(const sim_pdes *p) { return p->windows; }

uint64_t sim_pdes_events(const sim_pdes *p)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < p->parts; i++) n += sim_event_count(p->k[i]);
    return n;
}
