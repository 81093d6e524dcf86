/* Routing tables, computed once per topology: per (node, destination
 * endpoint[, phase]) the candidate hops. A lookup is an index, never a search. */
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"

#define ROUTES_MAX_ENTRIES (16u << 20)

struct topo_routes {
    const topo *t;
    enum topo_routing mode;
    unsigned vcs, phases;     /* phases: 2 for updown (up allowed / came down), else 1 */
    int32_t *row;             /* per node: table row, -1 for a one-port terminal (always its port 0) */
    uint32_t n_rows;
    uint32_t *off;            /* (phase * n_endpoints + dst) * n_rows + row -> first hop; the next entry -> end */
    topo_hop *hops;
    size_t n_hops, cap_hops;
    uint64_t *rank;           /* updown: (level << 32 | id); up = to a higher rank */
};

static const topo_hop port0 = { 0, 0 };

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;   /* splitmix64 finaliser */
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void push_hop(topo_routes *r, unsigned port, unsigned vc)
{
    if (r->n_hops == r->cap_hops) {
        r->cap_hops = r->cap_hops ? r->cap_hops * 2 : 1024;
        r->hops = realloc(r->hops, r->cap_hops * sizeof *r->hops);
        if (!r->hops) sim_fatal("out of memory");
    }
    r->hops[r->n_hops].port = (uint8_t)port;
    r->hops[r->n_hops++].vc = (uint8_t)vc;
}

static bool forwards_or_is(const topo *t, int w, uint32_t d) { return w >= 0 && (t->nodes[w].kind->forwards || (uint32_t)w == d); }

/* ecmp / single: every port to a neighbour one hop closer; single keeps one,
 * picked by a hash of (node, dst) so destinations spread over the choices. */
static void shortest(topo_routes *r, uint32_t v, uint32_t d, uint32_t e, const uint32_t *dist)
{
    const topo *t = r->t;
    size_t first = r->n_hops;
    if (v == d) return;
    for (unsigned p = 0; p < t->nodes[v].nports; p++) {
        int w = topo_peer(t, v, p, NULL);
        if (forwards_or_is(t, w, d) && dist[w] != UINT32_MAX && dist[w] + 1 == dist[v]) push_hop(r, p, 0);
    }
    if (r->mode == TOPO_ROUTE_SINGLE && r->n_hops - first > 1) {
        size_t pick = first + mix64((uint64_t)e << 32 | v) % (r->n_hops - first);
        r->hops[first] = r->hops[pick];
        r->n_hops = first + 1;
    }
}

/* dor: the first dimension whose coordinate differs, the shorter way round
 * (ties: +). Dateline rule on a torus: a hop uses VC 1 while its ring's wrap
 * link is still ahead of it (on it or beyond), VC 0 otherwise; within a ring
 * VC 1 channels lead only up to the wrap, VC 0 channels never reach it, so
 * neither class closes a cycle. */
static void dor(topo_routes *r, uint32_t v, uint32_t d)
{
    const topo *t = r->t;
    if (v == d) return;
    unsigned dport = 0;
    int sd = topo_peer(t, d, 0, &dport);   /* the switch of dst */
    if (v == (uint32_t)sd) {
        push_hop(r, dport, 0);
        return;
    }
    const topo_node *n = &t->nodes[v], *m = &t->nodes[sd];
    if (!n->kind->forwards) {   /* a terminal of the grid: its one port */
        push_hop(r, 0, 0);
        return;
    }
    for (unsigned dim = 0; dim < 3; dim++) {
        int c = n->coord[dim], g = m->coord[dim], k = t->dims[dim];
        if (c == g) continue;
        bool plus = g > c;
        if (t->torus) {
            int fwd = (g - c + k) % k;
            plus = fwd <= k - fwd;
        }
        unsigned vc = t->torus && (plus ? g < c : g > c);
        for (unsigned p = 0; p < n->nports; p++) {
            int32_t li = n->port_link[p];
            if (li < 0) continue;
            const topo_link *l = &t->links[li];
            if (l->dim == (int)dim && (plus ? l->a == v : l->b == v)) {
                push_hop(r, p, vc);
                return;
            }
        }
        sim_fatal("dor: node %s has no %c link in dimension %u", n->name, plus ? '+' : '-', dim);
    }
    sim_fatal("dor: node %s and %s share coordinates", n->name, m->name);
}

/* updown: dd = hops to d going only down (to lower rank), ud = the same with
 * an up phase first; phase 0 may still go up, phase 1 came down. */
static void updown_dist(const topo_routes *r, uint32_t d, uint32_t *dd, uint32_t *ud, const uint32_t *order,
                        uint32_t *queue)
{
    const topo *t = r->t;
    for (uint32_t i = 0; i < t->n_nodes; i++) dd[i] = UINT32_MAX;
    uint32_t head = 0, tail = 0;
    dd[d] = 0;
    queue[tail++] = d;
    while (head < tail) {   /* reverse BFS over down moves: v -> x is down when rank(x) < rank(v) */
        uint32_t x = queue[head++];
        for (unsigned p = 0; p < t->nodes[x].nports; p++) {
            int v = topo_peer(t, x, p, NULL);
            if (v < 0 || !t->nodes[v].kind->forwards || r->rank[v] < r->rank[x] || dd[v] != UINT32_MAX) continue;
            dd[v] = dd[x] + 1;
            queue[tail++] = (uint32_t)v;
        }
    }
    for (uint32_t i = 0; i < t->n_nodes; i++) {   /* highest rank first: ud of the nodes above is known */
        uint32_t v = order[i];
        ud[v] = dd[v];
        for (unsigned p = 0; p < t->nodes[v].nports; p++) {
            int w = topo_peer(t, v, p, NULL);
            if (w < 0 || !t->nodes[w].kind->forwards || r->rank[w] < r->rank[v] || ud[w] == UINT32_MAX) continue;
            if (ud[w] + 1 < ud[v]) ud[v] = ud[w] + 1;
        }
    }
}

static void updown(topo_routes *r, uint32_t v, uint32_t d, unsigned phase, const uint32_t *dd, const uint32_t *ud)
{
    const topo *t = r->t;
    if (v == d) return;
    uint32_t want = phase ? dd[v] : ud[v];
    if (want == UINT32_MAX) return;   /* a state no route reaches */
    for (unsigned p = 0; p < t->nodes[v].nports; p++) {
        int w = topo_peer(t, v, p, NULL);
        if (!forwards_or_is(t, w, d)) continue;
        bool up = r->rank[w] > r->rank[v];
        if (!up && dd[w] != UINT32_MAX && dd[w] + 1 == want) push_hop(r, p, 0);
        else if (up && !phase && ud[w] != UINT32_MAX && ud[w] + 1 == want) push_hop(r, p, 0);
    }
}

static int cmp_rank_desc(const void *a, const void *b, void *rank)
{
    uint64_t x = ((const uint64_t *)rank)[*(const uint32_t *)a], y = ((const uint64_t *)rank)[*(const uint32_t *)b];
    return x < y ? 1 : x > y ? -1 : 0;
}

topo_routes *topo_routes_new(const topo *t, enum topo_routing mode, char *err, size_t errlen)
{
    if (!t->finished) sim_fatal("topo_routes_new before topo_finish");
    bool grid = !strcmp(t->generator, "ring") || !strcmp(t->generator, "mesh2d") || !strcmp(t->generator, "torus2d") ||
                !strcmp(t->generator, "torus3d");
    if (mode == TOPO_ROUTE_DOR && !grid) {
        snprintf(err, errlen, "routing=dor needs a ring, mesh2d, torus2d or torus3d generator (topology '%s'); allowed here: ecmp, single, updown",
                 t->generator);
        return NULL;
    }
    topo_routes *r = calloc(1, sizeof *r);
    if (!r) sim_fatal("out of memory");
    r->t = t;
    r->mode = mode;
    r->vcs = mode == TOPO_ROUTE_DOR && t->torus ? 2 : 1;
    r->phases = mode == TOPO_ROUTE_UPDOWN ? 2 : 1;
    r->row = malloc(t->n_nodes * sizeof *r->row);
    if (!r->row) sim_fatal("out of memory");
    for (uint32_t v = 0; v < t->n_nodes; v++)
        r->row[v] = t->nodes[v].kind->forwards || t->nodes[v].nports > 1 ? (int32_t)r->n_rows++ : -1;
    uint64_t entries = (uint64_t)r->phases * r->n_rows * t->n_endpoints;
    if (entries > ROUTES_MAX_ENTRIES) {
        snprintf(err, errlen, "routing=%s: tables of %llu entries (%u rows x %u endpoints) above the limit %u",
                 mode == TOPO_ROUTE_ECMP ? "ecmp" : mode == TOPO_ROUTE_SINGLE ? "single" : mode == TOPO_ROUTE_DOR ? "dor" : "updown",
                 (unsigned long long)entries, r->n_rows, t->n_endpoints, ROUTES_MAX_ENTRIES);
        topo_routes_free(r);
        return NULL;
    }
    r->off = malloc((entries + 1) * sizeof *r->off);
    uint32_t *dist = malloc(t->n_nodes * sizeof *dist), *ud = malloc(t->n_nodes * sizeof *ud);
    uint32_t *order = malloc(t->n_nodes * sizeof *order), *queue = malloc(t->n_nodes * sizeof *queue);
    if (!r->off || !dist || !ud || !order || !queue) sim_fatal("out of memory");
    if (mode == TOPO_ROUTE_UPDOWN) {
        /* Levels: hops from the nearest terminal (hosts 0, edge 1, ...); ties by node id. */
        r->rank = malloc(t->n_nodes * sizeof *r->rank);
        if (!r->rank) sim_fatal("out of memory");
        uint32_t head = 0, tail = 0;
        for (uint32_t v = 0; v < t->n_nodes; v++) {
            dist[v] = t->nodes[v].kind->forwards ? UINT32_MAX : 0;
            if (!dist[v]) queue[tail++] = v;
        }
        while (head < tail) {
            uint32_t v = queue[head++];
            for (unsigned p = 0; p < t->nodes[v].nports; p++) {
                int w = topo_peer(t, v, p, NULL);
                if (w >= 0 && dist[w] == UINT32_MAX) dist[w] = dist[v] + 1, queue[tail++] = (uint32_t)w;
            }
        }
        for (uint32_t v = 0; v < t->n_nodes; v++) r->rank[v] = (uint64_t)dist[v] << 32 | v, order[v] = v;
        qsort_r(order, t->n_nodes, sizeof *order, cmp_rank_desc, r->rank);
    }
    for (unsigned ph = 0; ph < r->phases; ph++)
        for (uint32_t e = 0; e < t->n_endpoints; e++) {
            uint32_t d = t->endpoint_node[e];
            if (mode == TOPO_ROUTE_ECMP || mode == TOPO_ROUTE_SINGLE) topo_bfs_to(t, d, dist);
            if (mode == TOPO_ROUTE_UPDOWN) updown_dist(r, d, dist, ud, order, queue);
            for (uint32_t v = 0; v < t->n_nodes; v++) {
                if (r->row[v] < 0) continue;
                r->off[((uint64_t)ph * t->n_endpoints + e) * r->n_rows + (uint64_t)r->row[v]] = (uint32_t)r->n_hops;
                if (mode == TOPO_ROUTE_DOR) dor(r, v, d);
                else if (mode == TOPO_ROUTE_UPDOWN) updown(r, v, d, ph, dist, ud);
                else shortest(r, v, d, e, dist);
                if (r->n_hops > UINT32_MAX - TOPO_MAX_PORTS) sim_fatal("routing tables too large");
            }
        }
    r->off[entries] = (uint32_t)r->n_hops;
    free(dist);
    free(ud);
    free(order);
    free(queue);
    return r;
}

void topo_routes_free(topo_routes *r)
{
    if (!r) return;
    free(r->row);
    free(r->off);
    free(r->hops);
    free(r->rank);
    free(r);
}

enum topo_routing topo_routes_mode(const topo_routes *r) { return r->mode; }
unsigned topo_routes_vcs(const topo_routes *r) { return r->vcs; }

unsigned topo_route_candidates(const topo_routes *r, uint32_t node, int in_port, uint32_t dst, const topo_hop **hops)
{
    const topo *t = r->t;
    if (node >= t->n_nodes || dst >= t->n_endpoints) sim_fatal("topo_route: node %u / endpoint %u out of range", node, dst);
    if (t->endpoint_node[dst] == node) return 0;
    if (r->row[node] < 0) {
        *hops = &port0;
        return 1;
    }
    unsigned ph = 0;
    if (r->phases == 2 && in_port >= 0) {
        int from = topo_peer(t, node, (unsigned)in_port, NULL);
        if (from < 0) sim_fatal("topo_route: %s port %d is not connected", t->nodes[node].name, in_port);
        ph = r->rank[from] > r->rank[node];   /* it came down */
    }
    uint64_t i = ((uint64_t)ph * t->n_endpoints + dst) * r->n_rows + (uint64_t)r->row[node];
    *hops = &r->hops[r->off[i]];
    return r->off[i + 1] - r->off[i];
}

topo_hop topo_route_next(const topo_routes *r, uint32_t node, int in_port, uint32_t dst, uint64_t flow_id)
{
    const topo_hop *h;
    unsigned n = topo_route_candidates(r, node, in_port, dst, &h);
    if (n == 0)
        sim_fatal("topo_route: no route at %s to endpoint %u (it is there, or came an illegal way)", r->t->nodes[node].name, dst);
    if (n == 1) return h[0];
    return h[mix64(flow_id ^ ((uint64_t)node << 40)) % n];
}

/* ---- channel dependency graph ---- */
typedef struct edge { uint32_t from, to; } edge;

static int cmp_edge(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

/* The dependencies seen so far, each once: an open-addressing set of
 * (from, to) keys (a sort per destination made fattree:16's check take
 * seconds). */
typedef struct edge_set { uint64_t *key; size_t cap, n; } edge_set;

static uint64_t edge_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
}

/* true when the pair is new; keys are stored + 1 (0 marks an empty slot) */
static bool edge_set_add(edge_set *s, uint32_t from, uint32_t to)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1u << 14;
        uint64_t *k = calloc(cap, sizeof *k);
        if (!k) sim_fatal("out of memory");
        for (size_t i = 0; i < s->cap; i++)
            if (s->key[i]) {
                size_t j = edge_hash(s->key[i]) & (cap - 1);
                while (k[j]) j = (j + 1) & (cap - 1);
                k[j] = s->key[i];
            }
        free(s->key);
        s->key = k;
        s->cap = cap;
    }
    uint64_t key = ((uint64_t)from << 32 | to) + 1;
    size_t j = edge_hash(key) & (s->cap - 1);
    while (s->key[j]) {
        if (s->key[j] == key) return false;
        j = (j + 1) & (s->cap - 1);
    }
    s->key[j] = key;
    s->n++;
    return true;
}

/* Channel of leaving node v on port p with vc. */
static uint32_t channel(const topo *t, uint32_t v, unsigned p, unsigned vc, unsigned vcs)
{
    int32_t li = t->nodes[v].port_link[p];
    const topo_link *l = &t->links[li];
    unsigned dir = !(l->a == v && l->a_port == p);
    return ((uint32_t)li * 2 + dir) * vcs + vc;
}

int topo_routes_check_cdg(const topo_routes *r, bool honour_vcs, char *err, size_t errlen)
{
    const topo *t = r->t;
    unsigned vcs = honour_vcs ? r->vcs : 1;
    uint64_t n_ch = (uint64_t)t->n_links * 2 * vcs;
    if (n_ch > (1u << 22)) return -1;
    edge *edges = NULL;
    size_t n_edges = 0, cap = 0;
    uint8_t *seen = malloc(n_ch);
    uint32_t *stack = malloc(n_ch * sizeof *stack);
    if (!seen || !stack) sim_fatal("out of memory");
    edge_set set = { 0 };
    for (uint32_t e = 0; e < t->n_endpoints; e++) {
        /* Every channel a route to e can use, and what it leads to. A state is
         * (channel incl. VC): it fixes the node, in_port and so the table row. */
        memset(seen, 0, n_ch);
        size_t sp = 0;
        for (uint32_t s = 0; s < t->n_endpoints; s++) {
            if (s == e) continue;
            uint32_t v = t->endpoint_node[s];
            const topo_hop *h;
            unsigned n = topo_route_candidates(r, v, -1, e, &h);
            for (unsigned i = 0; i < n; i++) {
                uint32_t c = channel(t, v, h[i].port, honour_vcs ? h[i].vc : 0, vcs);
                if (!seen[c]) seen[c] = 1, stack[sp++] = c;
            }
        }
        while (sp) {
            uint32_t c = stack[--sp];
            uint32_t li = c / vcs / 2;
            const topo_link *l = &t->links[li];
            bool ab = (c / vcs) % 2 == 0;
            uint32_t v = ab ? l->b : l->a;
            unsigned in_port = ab ? l->b_port : l->a_port;
            const topo_hop *h;
            unsigned n = topo_route_candidates(r, v, (int)in_port, e, &h);
            for (unsigned i = 0; i < n; i++) {
                uint32_t c2 = channel(t, v, h[i].port, honour_vcs ? h[i].vc : 0, vcs);
                if (!seen[c2]) seen[c2] = 1, stack[sp++] = c2;
                if (!edge_set_add(&set, c, c2)) continue;
                if (n_edges == cap) {
                    cap = cap ? cap * 2 : 4096;
                    if (cap > (64u << 20)) {
                        free(edges), free(seen), free(stack), free(set.key);
                        return -1;
                    }
                    edges = realloc(edges, cap * sizeof *edges);
                    if (!edges) sim_fatal("out of memory");
                }
                edges[n_edges++] = (edge){ c, c2 };
            }
        }
    }
    free(set.key);
    if (n_edges) qsort(edges, n_edges, sizeof *edges, cmp_edge);   /* edges is NULL without any (a host and a GPU) */
    /* Kahn: peel channels with no incoming dependency; what remains holds a cycle. */
    uint32_t *indeg = calloc(n_ch, sizeof *indeg);
    size_t *first = calloc(n_ch + 1, sizeof *first);
    if (!indeg || !first) sim_fatal("out of memory");
    for (size_t i = 0; i < n_edges; i++) indeg[edges[i].to]++, first[edges[i].from + 1]++;
    for (uint64_t c = 0; c < n_ch; c++) first[c + 1] += first[c];
    size_t sp = 0, removed = 0;
    for (uint32_t c = 0; c < n_ch; c++)
        if (!indeg[c]) stack[sp++] = c;
    while (sp) {
        uint32_t c = stack[--sp];
        removed++;
        for (size_t i = first[c]; i < first[c + 1]; i++)
            if (--indeg[edges[i].to] == 0) stack[sp++] = edges[i].to;
    }
    int rc = 0;
    if (removed < n_ch) {
        /* Every channel left has a predecessor left: walking backwards n_ch
         * steps lands on a cycle. */
        uint32_t c = 0;
        while (!indeg[c]) c++;
        for (uint64_t step = 0; step < n_ch; step++)
            for (size_t i = 0; i < n_edges; i++)
                if (edges[i].to == c && indeg[edges[i].from]) {
                    c = edges[i].from;
                    break;
                }
        const topo_link *l = &t->links[c / vcs / 2];
        bool ab = (c / vcs) % 2 == 0;
        snprintf(err, errlen, "channel dependency cycle through %s -> %s (vc %u): routes can deadlock",
                 t->nodes[ab ? l->a : l->b].name, t->nodes[ab ? l->b : l->a].name, c % vcs);
        rc = 1;
    }
    free(indeg);
    free(first);
    free(edges);
    free(seen);
    free(stack);
    return rc;
}
