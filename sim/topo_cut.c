/* Bisection bandwidth from the graph: the minimum, over splits of the
 * endpoints into two equal halves, of the summed one-direction rate of the
 * links crossing the cut. For one split the best placement of the switches is
 * a minimum s-t cut (max-flow, Dinic) with side-0 endpoints tied to s and
 * side-1 endpoints to t; the splits are all of them (exact) up to a size,
 * else a set of structured ones (an upper bound on the true minimum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"

typedef struct arc { uint32_t to, next; double cap; } arc;

typedef struct flownet {
    uint32_t n, s, tt;        /* nodes: topology nodes, then s, t */
    arc *arcs;
    uint32_t n_arcs;
    uint32_t *head, *level, *it, *queue;
    double *cap0;             /* capacities before the flow */
    uint32_t src_arc0, snk_arc0;   /* first s->endpoint arc, first endpoint->t arc */
} flownet;

static void add_arc_pair(flownet *f, uint32_t u, uint32_t v, double cu, double cv)
{
    f->arcs[f->n_arcs] = (arc){ v, f->head[u], cu };
    f->head[u] = f->n_arcs++;
    f->arcs[f->n_arcs] = (arc){ u, f->head[v], cv };
    f->head[v] = f->n_arcs++;
}

static void net_build(flownet *f, const topo *t)
{
    f->n = t->n_nodes + 2;
    f->s = t->n_nodes;
    f->tt = t->n_nodes + 1;
    uint32_t max_arcs = 2 * (t->n_links + 2 * t->n_endpoints);
    f->arcs = malloc(max_arcs * sizeof *f->arcs);
    f->cap0 = malloc(max_arcs * sizeof *f->cap0);
    f->head = malloc(f->n * sizeof *f->head);
    f->level = malloc(f->n * sizeof *f->level);
    f->it = malloc(f->n * sizeof *f->it);
    f->queue = malloc(f->n * sizeof *f->queue);
    if (!f->arcs || !f->cap0 || !f->head || !f->level || !f->it || !f->queue) sim_fatal("out of memory");
    for (uint32_t i = 0; i < f->n; i++) f->head[i] = UINT32_MAX;
    f->n_arcs = 0;
    for (uint32_t i = 0; i < t->n_links; i++)   /* full duplex: each direction carries GBps */
        add_arc_pair(f, t->links[i].a, t->links[i].b, t->links[i].GBps, t->links[i].GBps);
    f->src_arc0 = f->n_arcs;
    for (uint32_t e = 0; e < t->n_endpoints; e++) add_arc_pair(f, f->s, t->endpoint_node[e], 0, 0);
    f->snk_arc0 = f->n_arcs;
    for (uint32_t e = 0; e < t->n_endpoints; e++) add_arc_pair(f, t->endpoint_node[e], f->tt, 0, 0);
    for (uint32_t i = 0; i < f->n_arcs; i++) f->cap0[i] = f->arcs[i].cap;
}

static void net_free(flownet *f)
{
    free(f->arcs), free(f->cap0), free(f->head), free(f->level), free(f->it), free(f->queue);
}

#define EPS 1e-9

static bool bfs_levels(flownet *f)
{
    for (uint32_t i = 0; i < f->n; i++) f->level[i] = UINT32_MAX;
    uint32_t h = 0, tl = 0;
    f->level[f->s] = 0;
    f->queue[tl++] = f->s;
    while (h < tl) {
        uint32_t u = f->queue[h++];
        for (uint32_t a = f->head[u]; a != UINT32_MAX; a = f->arcs[a].next)
            if (f->arcs[a].cap > EPS && f->level[f->arcs[a].to] == UINT32_MAX) {
                f->level[f->arcs[a].to] = f->level[u] + 1;
                f->queue[tl++] = f->arcs[a].to;
            }
    }
    return f->level[f->tt] != UINT32_MAX;
}

static double push(flownet *f, uint32_t u, double amount)
{
    if (u == f->tt) return amount;
    for (; f->it[u] != UINT32_MAX; f->it[u] = f->arcs[f->it[u]].next) {
        arc *a = &f->arcs[f->it[u]];
        if (a->cap <= EPS || f->level[a->to] != f->level[u] + 1) continue;
        double got = push(f, a->to, amount < a->cap ? amount : a->cap);
        if (got > EPS) {
            a->cap -= got;
            f->arcs[f->it[u] ^ 1].cap += got;
            return got;
        }
    }
    return 0;
}

/* Min cut for one split (side[e] 0 -> s, 1 -> t); fills node_side (0 = s side). */
static double split_cut(flownet *f, const topo *t, const uint8_t *side, uint8_t *node_side)
{
    for (uint32_t i = 0; i < f->n_arcs; i++) f->arcs[i].cap = f->cap0[i];
    for (uint32_t e = 0; e < t->n_endpoints; e++) {
        f->arcs[f->src_arc0 + 2 * e].cap = side[e] ? 0 : INFINITY;
        f->arcs[f->snk_arc0 + 2 * e].cap = side[e] ? INFINITY : 0;
    }
    double flow = 0;
    while (bfs_levels(f)) {
        memcpy(f->it, f->head, f->n * sizeof *f->it);
        double got;
        while ((got = push(f, f->s, INFINITY)) > EPS) flow += got;
    }
    bfs_levels(f);   /* residual reach from s = the s side of a minimum cut */
    for (uint32_t v = 0; v < t->n_nodes; v++) node_side[v] = f->level[v] == UINT32_MAX;
    return flow;
}

typedef struct search {
    flownet net;
    const topo *t;
    uint8_t *side, *node_side, *best_node_side;
    topo_bisection *out;
} search;

static void try_split(search *s)
{
    double c = split_cut(&s->net, s->t, s->side, s->node_side);
    s->out->splits_tried++;
    if (c < s->out->GBps - EPS) {
        s->out->GBps = c;
        memcpy(s->out->endpoint_side, s->side, s->t->n_endpoints);
        memcpy(s->best_node_side, s->node_side, s->t->n_nodes);
    }
}

/* Splits from an order of the endpoints: its first half on side 0. */
static void try_order(search *s, const uint32_t *order)
{
    uint32_t ne = s->t->n_endpoints;
    for (uint32_t i = 0; i < ne; i++) s->side[order[i]] = i >= ne / 2;
    try_split(s);
}

static int by_key(const void *a, const void *b, void *keyp)
{
    const uint32_t *key = keyp;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (key[x] != key[y]) return key[x] < key[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void heuristic(search *s)
{
    const topo *t = s->t;
    uint32_t ne = t->n_endpoints;
    uint32_t *order = malloc(ne * sizeof *order), *key = malloc(ne * sizeof *key);
    uint32_t *dist = malloc(t->n_nodes * sizeof *dist);
    if (!order || !key || !dist) sim_fatal("out of memory");
    /* Index order rotated: generators number endpoints along their structure
     * (pods, leaves, rows), so contiguous halves are their natural cuts. */
    unsigned rots = ne < 64 ? ne : 64;
    for (unsigned r = 0; r < rots; r++) {
        uint32_t base = (uint32_t)((uint64_t)r * ne / rots);
        for (uint32_t i = 0; i < ne; i++) order[i] = (base + i) % ne;
        try_order(s, order);
    }
    /* Grids: halves by each coordinate, and on a torus the quarter-shifted
     * halves too (the cut of two planes). */
    for (unsigned d = 0; d < 3; d++) {
        int k = t->dims[d];
        if (k < 2 || t->nodes[t->endpoint_node[0]].coord[d] < 0) continue;
        for (int shift = 0; shift <= (t->torus ? k / 4 : 0); shift += (k / 4 ? k / 4 : 1)) {
            for (uint32_t e = 0; e < ne; e++) key[e] = (uint32_t)((t->nodes[t->endpoint_node[e]].coord[d] + shift) % k), order[e] = e;
            qsort_r(order, ne, sizeof *order, by_key, key);
            try_order(s, order);
            if (!t->torus) break;
        }
    }
    /* Balls: the endpoints nearest a seed (hops through the graph). */
    unsigned seeds = ne < 16 ? ne : 16;
    for (unsigned r = 0; r < seeds; r++) {
        uint32_t seed = t->endpoint_node[(uint64_t)r * ne / seeds];
        topo_bfs_to(t, seed, dist);
        for (uint32_t e = 0; e < ne; e++) key[e] = dist[t->endpoint_node[e]], order[e] = e;
        qsort_r(order, ne, sizeof *order, by_key, key);
        try_order(s, order);
    }
    free(order), free(key), free(dist);
}

static void exact(search *s)
{
    uint32_t ne = s->t->n_endpoints, h = ne / 2;
    /* Every h-subset on side 0 (Gosper's hack); when ne is even, fixing
     * endpoint 0 on side 0 visits each split once. */
    uint32_t full = (1u << ne) - 1;
    for (uint32_t m = (1u << h) - 1; m && m <= full;) {
        if (ne % 2 || (m & 1)) {
            for (uint32_t e = 0; e < ne; e++) s->side[e] = !((m >> e) & 1);
            try_split(s);
        }
        uint32_t c = m & -m, r = m + c;
        if (r > full || r == 0) break;
        m = (((r ^ m) >> 2) / c) | r;
    }
}

int topo_bisection_compute(const topo *t, unsigned max_exact_endpoints, topo_bisection *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!t->finished) sim_fatal("topo_bisection before topo_finish");
    if (max_exact_endpoints > 24) {
        snprintf(err, errlen, "bisection: max_exact_endpoints=%u; allowed: 0..24", max_exact_endpoints);
        return -1;
    }
    search s = { .t = t, .out = out };
    s.side = calloc(t->n_endpoints, 1);
    s.node_side = calloc(t->n_nodes, 1);
    s.best_node_side = calloc(t->n_nodes, 1);
    out->endpoint_side = calloc(t->n_endpoints, 1);
    if (!s.side || !s.node_side || !s.best_node_side || !out->endpoint_side) sim_fatal("out of memory");
    out->GBps = INFINITY;
    net_build(&s.net, t);
    out->exact = t->n_endpoints <= max_exact_endpoints;
    if (out->exact) exact(&s);
    else heuristic(&s);
    for (uint32_t i = 0; i < t->n_links; i++)
        out->cut_links += s.best_node_side[t->links[i].a] != s.best_node_side[t->links[i].b];
    net_free(&s.net);
    free(s.side), free(s.node_side);
    out->node_side = s.best_node_side;
    return 0;
}

void topo_bisection_free(topo_bisection *b)
{
    free(b->endpoint_side);
    free(b->node_side);
    b->endpoint_side = b->node_side = NULL;
}
