/* The model of the pdes tests (tests/check_pdes.c in one process,
 * tests/mpi_pdes_ring.c over MPI ranks): a chordal ring whose results depend
 * on the order of same-time arrivals. Not a test itself. */
#ifndef PDES_RING_H
#define PDES_RING_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/pdes.h"
#include "sim/sim.h"

/* Not ck_assert: the MPI program runs this outside any Check test. */
#define RING_REQUIRE(cond, ...) do { if (!(cond)) sim_fatal(__VA_ARGS__); } while (0)

/* A chordal ring: node i sends to i+1 and i+2, so every node has two inputs
 * whose same-time arrivals it must take in a defined order. A node folds each
 * arrival into a hash, and the hash picks which output a token takes next:
 * any change of order changes every later hash. Credits (2 per link) make
 * senders wait, so credit returns cross the cuts too. */
enum { NODES = 12, TOKENS = 3, HOPS = 150, CREDITS = 2, PENDING_MAX = NODES * TOKENS };

typedef struct node {
    sim_link *out[2];
    uintptr_t pending[2][PENDING_MAX];   /* tokens waiting for credits, per output */
    unsigned pending_head[2], pending_len[2];
    sim_process start;
    uint64_t hash, arrivals;
    sim_time_ps last_arrival_ps;
    sim_kernel *k;
    unsigned id;
} node;

typedef struct ring_result {
    uint64_t hash[NODES], arrivals[NODES];
    sim_time_ps last_ps[NODES], end_ps;
    uint64_t events, windows;
} ring_result;

static void try_send(node *n, unsigned o)
{
    while (n->pending_len[o]) {
        uintptr_t tok = n->pending[o][n->pending_head[o]];
        if (!sim_link_try_send(n->out[o], (void *)tok, 8, 0, 1)) return;
        n->pending_head[o] = (n->pending_head[o] + 1) % PENDING_MAX;
        n->pending_len[o]--;
    }
}

static void queue_token(node *n, uintptr_t tok)
{
    unsigned o = (unsigned)(n->hash >> 7) & 1;
    RING_REQUIRE(n->pending_len[o] < PENDING_MAX, "ring: node %u holds more than %d tokens", n->id, PENDING_MAX);
    n->pending[o][(n->pending_head[o] + n->pending_len[o]) % PENDING_MAX] = tok;
    n->pending_len[o]++;
    try_send(n, o);
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    node *n = ctx;
    uintptr_t tok = (uintptr_t)msg;
    n->hash = (n->hash ^ tok) * 1099511628211ull + sim_now(n->k);
    n->arrivals++;
    n->last_arrival_ps = sim_now(n->k);
    sim_link_return_credits(l, 0, 1);
    if ((tok & 0xffff) < HOPS) queue_token(n, tok + 1);
}

static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)type, (void)credits;
    node *n = ctx;
    try_send(n, l == n->out[0] ? 0 : 1);
}

static void start(void *ctx)
{
    node *n = ctx;
    for (uintptr_t t = 0; t < TOKENS; t++) queue_token(n, ((uintptr_t)n->id * TOKENS + t) << 16);
}

static sim_link *make_link(sim_kernel *k, unsigned from, unsigned o, bool keyed)
{
    /* equal latencies and 2 ns per token: arrivals coincide often */
    sim_link_cfg c = { .name = "ring", .latency_ps = 10000 + 3000 * o, .bandwidth_GBps = 4, .credit_latency_ps = 7000,
                       .credit_types = 1, .credits = { CREDITS } };
    sim_link *l = sim_link_new(k, &c);
    if (keyed) sim_link_set_order_key(l, 1 + 2 * (2 * from + o));
    return l;
}

/* A token crosses ranks as its 8 bytes. */
static void token_encode(void *ctx, const sim_link_msg *m, sim_pdes_buf *b)
{
    (void)ctx;
    uint64_t v = (uint64_t)(uintptr_t)m->msg;
    sim_pdes_buf_put(b, &v, sizeof v);
}

static void *token_decode(void *ctx, const unsigned char *d, size_t n)
{
    (void)ctx;
    uint64_t v;
    RING_REQUIRE(n == sizeof v, "ring: a token of %zu bytes", n);
    memcpy(&v, d, sizeof v);
    return (void *)(uintptr_t)v;
}

static const sim_pdes_codec token_codec = { token_encode, token_decode, NULL };

/* The ring cut into `parts` (node i in part i * parts / NODES). With tr NULL
 * every part runs here (r gets every node); with a transport this rank builds
 * and runs its own part, and r gets its own nodes (the rest zero). */
static void run_ring(unsigned parts, bool keyed, const sim_pdes_transport *tr, ring_result *r)
{
    sim_kernel *k[NODES];
    node *nodes = calloc(NODES, sizeof *nodes);
    const bool ranked = tr != NULL;
    const unsigned nk = ranked ? 1 : parts;
    for (unsigned p = 0; p < nk; p++) k[p] = sim_kernel_new();
    sim_pdes *pd = ranked ? sim_pdes_new_ranked(tr, k[0]) : sim_pdes_new(parts, k);
    #define RING_PART(i) ((i) * parts / NODES)
    #define RING_LOCAL(i) (!ranked || RING_PART(i) == tr->rank)
    #define RING_KERNEL(i) (ranked ? k[0] : k[RING_PART(i)])
    /* per direction: the sending half in the sender's kernel, a receiving half in the receiver's when the two differ */
    sim_link *in[NODES][2] = { { 0 } }, *send_halves[NODES][2] = { { 0 } };
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].id = i;
        nodes[i].k = RING_KERNEL(i);
    }
    for (unsigned i = 0; i < NODES; i++)
        for (unsigned o = 0; o < 2; o++) {
            unsigned to = (i + 1 + o) % NODES, pf = RING_PART(i), pt = RING_PART(to), id = 2 * i + o;
            sim_link *s = NULL, *rcv = NULL;
            if (RING_LOCAL(i)) s = make_link(RING_KERNEL(i), i, o, keyed);
            if (RING_LOCAL(to)) rcv = pf == pt ? s : make_link(RING_KERNEL(to), i, o, keyed);
            if (pf != pt) {
                if (!ranked) sim_pdes_cut(pd, s, pf, rcv, pt);
                else if (s) sim_pdes_cut_sending(pd, s, pt, id, &token_codec);
                else if (rcv) sim_pdes_cut_receiving(pd, rcv, pf, id, &token_codec);
            }
            if (rcv) sim_link_set_receiver(rcv, on_recv, &nodes[to]);
            if (s) sim_link_set_credit_callback(s, on_credit, &nodes[i]);
            send_halves[i][o] = s;
            nodes[i].out[o] = s;
            in[to][o] = rcv;
        }
    for (unsigned i = 0; i < NODES; i++)
        if (RING_LOCAL(i)) sim_method_init(&nodes[i].start, nodes[i].k, "start", start, &nodes[i]);
    memset(r, 0, sizeof *r);
    r->end_ps = sim_pdes_run(pd, SIM_TIME_MAX);
    r->events = sim_pdes_events(pd);
    r->windows = sim_pdes_windows(pd);
    char why[256];
    for (unsigned i = 0; i < NODES; i++) {
        r->hash[i] = nodes[i].hash;
        r->arrivals[i] = nodes[i].arrivals;
        r->last_ps[i] = nodes[i].last_arrival_ps;
        for (unsigned o = 0; o < 2; o++) {
            if (send_halves[i][o]) RING_REQUIRE(sim_link_check(send_halves[i][o], true, why, sizeof why) == 0, "%s", why);
            if (in[i][o]) RING_REQUIRE(sim_link_check(in[i][o], true, why, sizeof why) == 0, "%s", why);
        }
    }
    for (unsigned i = 0; i < NODES; i++)
        for (unsigned o = 0; o < 2; o++) {
            sim_link *rcv = in[(i + 1 + o) % NODES][o];
            if (rcv && rcv != send_halves[i][o]) sim_link_free(rcv);
            sim_link_free(send_halves[i][o]);
        }
    #undef RING_PART
    #undef RING_LOCAL
    #undef RING_KERNEL
    sim_pdes_free(pd);
    for (unsigned p = 0; p < nk; p++) sim_kernel_free(k[p]);
    free(nodes);
}

static bool ring_same(const ring_result *a, const ring_result *b)
{
    return !memcmp(a->hash, b->hash, sizeof a->hash) && !memcmp(a->arrivals, b->arrivals, sizeof a->arrivals) &&
           !memcmp(a->last_ps, b->last_ps, sizeof a->last_ps) && a->end_ps == b->end_ps && a->events == b->events;
}

#endif
