/* Conservative windows (sim/pdes.h) over link halves (sim/link.h): a system
 * cut into 2, 3 or 4 parts, each its own kernel, gives what it gives in one
 * kernel -- every node's arrival hash, arrival count and last arrival time,
 * the event count and the end time -- and without order keys it does not
 * (the check can fail). Halves keep conservation; a cut link without latency
 * is refused. */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "sim/sim.h"
#include "sim/pdes.h"

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
    ck_assert_uint_lt(n->pending_len[o], PENDING_MAX);
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

/* The ring cut into `parts` (node i in part i * parts / NODES). */
static void run_ring(unsigned parts, bool keyed, ring_result *r)
{
    sim_kernel *k[NODES];
    node *nodes = calloc(NODES, sizeof *nodes);
    for (unsigned p = 0; p < parts; p++) k[p] = sim_kernel_new();
    sim_pdes *pd = sim_pdes_new(parts, k);
    /* each direction: its sending half in the sender's kernel; a second link, the
     * receiving half, in the receiver's kernel when they differ */
    sim_link *in[NODES][2], *send_halves[NODES][2];
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].id = i;
        nodes[i].k = k[i * parts / NODES];
    }
    for (unsigned i = 0; i < NODES; i++)
        for (unsigned o = 0; o < 2; o++) {
            unsigned to = (i + 1 + o) % NODES, pf = i * parts / NODES, pt = to * parts / NODES;
            sim_link *s = make_link(k[pf], i, o, keyed);
            send_halves[i][o] = s;
            nodes[i].out[o] = s;
            sim_link *rcv = s;
            if (pf != pt) {
                rcv = make_link(k[pt], i, o, keyed);
                sim_pdes_cut(pd, s, pf, rcv, pt);
            }
            sim_link_set_receiver(rcv, on_recv, &nodes[to]);
            sim_link_set_credit_callback(s, on_credit, &nodes[i]);
            in[to][o] = rcv;
        }
    for (unsigned i = 0; i < NODES; i++) sim_method_init(&nodes[i].start, nodes[i].k, "start", start, &nodes[i]);
    r->end_ps = sim_pdes_run(pd, SIM_TIME_MAX);
    r->events = sim_pdes_events(pd);
    r->windows = sim_pdes_windows(pd);
    char why[256];
    for (unsigned i = 0; i < NODES; i++) {
        r->hash[i] = nodes[i].hash;
        r->arrivals[i] = nodes[i].arrivals;
        r->last_ps[i] = nodes[i].last_arrival_ps;
        for (unsigned o = 0; o < 2; o++) {
            ck_assert_msg(sim_link_check(send_halves[i][o], true, why, sizeof why) == 0, "%s", why);
            ck_assert_msg(sim_link_check(in[i][o], true, why, sizeof why) == 0, "%s", why);
        }
    }
    for (unsigned i = 0; i < NODES; i++)
        for (unsigned o = 0; o < 2; o++) {
            if (in[(i + 1 + o) % NODES][o] != send_halves[i][o]) sim_link_free(in[(i + 1 + o) % NODES][o]);
            sim_link_free(send_halves[i][o]);
        }
    sim_pdes_free(pd);
    for (unsigned p = 0; p < parts; p++) sim_kernel_free(k[p]);
    free(nodes);
}

static bool same(const ring_result *a, const ring_result *b)
{
    return !memcmp(a->hash, b->hash, sizeof a->hash) && !memcmp(a->arrivals, b->arrivals, sizeof a->arrivals) &&
           !memcmp(a->last_ps, b->last_ps, sizeof a->last_ps) && a->end_ps == b->end_ps && a->events == b->events;
}

START_TEST(test_parts_give_one_kernels_results)
{
    ring_result one, r;
    run_ring(1, true, &one);
    ck_assert_uint_eq(one.windows, 1);
    uint64_t total = 0;
    for (unsigned i = 0; i < NODES; i++) total += one.arrivals[i];
    ck_assert_uint_eq(total, (uint64_t)NODES * TOKENS * (HOPS + 1));   /* every token arrived after each of its hops */
    for (unsigned parts = 2; parts <= 4; parts++) {
        run_ring(parts, true, &r);
        ck_assert_msg(same(&one, &r), "%u parts differ from one kernel (end %llu vs %llu ps, events %llu vs %llu)", parts,
                      (unsigned long long)r.end_ps, (unsigned long long)one.end_ps, (unsigned long long)r.events,
                      (unsigned long long)one.events);
        ck_assert_uint_gt(r.windows, 100);   /* it really ran in windows */
    }
}
END_TEST

/* Without order keys the cut changes which same-time arrival comes first. */
START_TEST(test_without_order_keys_parts_differ)
{
    ring_result one, two;
    run_ring(1, false, &one);
    run_ring(2, false, &two);
    ck_assert(!same(&one, &two));
}
END_TEST

START_TEST(test_cut_without_latency_aborts)
{
    sim_kernel *k[2] = { sim_kernel_new(), sim_kernel_new() };
    sim_pdes *pd = sim_pdes_new(2, k);
    sim_link_cfg c = { .name = "zero" };
    sim_pdes_cut(pd, sim_link_new(k[0], &c), 0, sim_link_new(k[1], &c), 1);
}
END_TEST

static Suite *pdes_suite(void)
{
    Suite *s = suite_create("pdes");
    TCase *tc = tcase_create("windows");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_parts_give_one_kernels_results);
    tcase_add_test(tc, test_without_order_keys_parts_differ);
    tcase_add_test_raise_signal(tc, test_cut_without_latency_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(pdes_suite()); }
