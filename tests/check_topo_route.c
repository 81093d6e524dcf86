/* Routing tables and bisection: paths as long as BFS distances, ECMP sets of
 * the expected sizes on fattree:4, DOR going X then Y with the dateline VCs,
 * channel-dependency acyclicity for dor on a torus (and a cycle without the
 * dateline VCs) and updown on a fat-tree, and min-cut bisections against
 * hand counts. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/topo.h"
#include "check_run.h"

static char err[2048];

static topo *gen(const char *spec)
{
    topo *t = topo_from_string(spec, "ib-ndr", err, sizeof err);
    ck_assert_msg(t, "%s: %s", spec, err);
    return t;
}

static topo_routes *routes(const topo *t, enum topo_routing m)
{
    topo_routes *r = topo_routes_new(t, m, err, sizeof err);
    ck_assert_msg(r, "%s", err);
    return r;
}

/* Walks a route; returns hops; records the nodes in path (if not NULL). */
static unsigned walk(const topo *t, const topo_routes *r, uint32_t src, uint32_t dst, uint64_t flow, uint32_t *path,
                     topo_hop *hops)
{
    uint32_t v = t->endpoint_node[src];
    int in = -1;
    unsigned n = 0;
    if (path) path[0] = v;
    while (v != t->endpoint_node[dst]) {
        topo_hop h = topo_route_next(r, v, in, dst, flow);
        unsigned pp;
        int w = topo_peer(t, v, h.port, &pp);
        ck_assert_int_ge(w, 0);
        ck_assert_uint_lt(n, t->n_nodes);
        if (hops) hops[n] = h;
        n++;
        v = (uint32_t)w;
        in = (int)pp;
        if (path) path[n] = v;
    }
    return n;
}

/* Every (src, dst, flow) route is a shortest path. */
static void check_shortest(const char *spec, enum topo_routing m)
{
    topo *t = gen(spec);
    topo_routes *r = routes(t, m);
    uint32_t *dist = malloc(t->n_nodes * sizeof *dist);
    for (uint32_t d = 0; d < t->n_endpoints; d++) {
        topo_bfs_to(t, t->endpoint_node[d], dist);
        for (uint32_t s = 0; s < t->n_endpoints; s++)
            for (uint64_t f = 0; f < 4; f++) {
                unsigned n = walk(t, r, s, d, f * 1000003u + s, NULL, NULL);
                ck_assert_msg(n == dist[t->endpoint_node[s]], "%s mode %d: %u -> %u took %u hops, BFS %u", spec, m, s, d, n,
                              dist[t->endpoint_node[s]]);
            }
    }
    free(dist);
    topo_routes_free(r);
    topo_free(t);
}

START_TEST(test_paths_are_shortest)
{
    static const char *const specs[] = { "ring:7", "ring:8", "fullmesh:5", "star:5", "mesh2d:3x4", "torus2d:4x4", "torus2d:3x5",
                                         "torus3d:3x3x4", "fattree:4", "leafspine:4,2,4", "leafspine:3,2,2,2" };
    for (unsigned i = 0; i < sizeof specs / sizeof *specs; i++) {
        check_shortest(specs[i], TOPO_ROUTE_ECMP);
        check_shortest(specs[i], TOPO_ROUTE_SINGLE);
    }
    /* updown is minimal on fat-trees and leaf-spines (and legal anywhere) */
    check_shortest("fattree:4", TOPO_ROUTE_UPDOWN);
    check_shortest("fattree:6", TOPO_ROUTE_UPDOWN);
    check_shortest("leafspine:4,3,2", TOPO_ROUTE_UPDOWN);
    check_shortest("star:4", TOPO_ROUTE_UPDOWN);
    /* dor is minimal on meshes and tori */
    check_shortest("mesh2d:3x4", TOPO_ROUTE_DOR);
    check_shortest("torus2d:4x4", TOPO_ROUTE_DOR);
    check_shortest("torus2d:5x3", TOPO_ROUTE_DOR);
    check_shortest("torus3d:3x4x3", TOPO_ROUTE_DOR);
    check_shortest("ring:9", TOPO_ROUTE_DOR);
}
END_TEST

static unsigned cands(const topo *t, const topo_routes *r, const char *node, uint32_t dst)
{
    const topo_hop *h;
    return topo_route_candidates(r, (uint32_t)topo_node_find(t, node), -1, dst, &h);
}

START_TEST(test_ecmp_fattree4)
{
    topo *t = gen("fattree:4");   /* pods of 4 hosts: h0..h3 pod 0, ... */
    topo_routes *r = routes(t, TOPO_ROUTE_ECMP);
    uint32_t far = 12, same_pod = 2, same_edge = 1;   /* seen from h0 / e0_0 */
    ck_assert_uint_eq(cands(t, r, "h0", far), 1);
    ck_assert_uint_eq(cands(t, r, "e0_0", far), 2);       /* either agg */
    ck_assert_uint_eq(cands(t, r, "a0_0", far), 2);       /* either of its cores */
    ck_assert_uint_eq(cands(t, r, "c0", far), 1);         /* the one agg of pod 3 it meets */
    ck_assert_uint_eq(cands(t, r, "a3_0", far), 1);       /* down to e3_0 */
    ck_assert_uint_eq(cands(t, r, "e3_0", far), 1);       /* down to h12 */
    ck_assert_uint_eq(cands(t, r, "e0_0", same_pod), 2);  /* up to either agg, down to e0_1 */
    ck_assert_uint_eq(cands(t, r, "e0_0", same_edge), 1);
    ck_assert_uint_eq(cands(t, r, "h12", far), 0);        /* arrived */
    /* 4 shortest paths h0 -> h12; the flow hash uses all of them. */
    unsigned seen[64] = { 0 };
    uint32_t path[16];
    for (uint64_t f = 0; f < 256; f++) {
        walk(t, r, 0, far, f, path, NULL);
        seen[path[3] - (uint32_t)topo_node_find(t, "c0")]++;   /* the core it crossed */
    }
    for (unsigned c = 0; c < 4; c++) ck_assert_msg(seen[c] > 32, "core %u carried %u of 256 flows", c, seen[c]);
    /* single: one candidate everywhere, the same path for every flow */
    topo_routes *s = routes(t, TOPO_ROUTE_SINGLE);
    for (uint32_t v = 0; v < t->n_nodes; v++)
        for (uint32_t d = 0; d < t->n_endpoints; d++) {
            const topo_hop *h;
            unsigned n = topo_route_candidates(s, v, -1, d, &h);
            ck_assert_uint_le(n, 1);
        }
    uint32_t p1[16], p2[16];
    walk(t, s, 0, far, 1, p1, NULL);
    walk(t, s, 0, far, 999, p2, NULL);
    ck_assert(!memcmp(p1, p2, 7 * sizeof *p1));
    topo_routes_free(s);
    topo_routes_free(r);
    topo_free(t);
}
END_TEST

START_TEST(test_dor_order_and_vcs)
{
    topo *t = gen("mesh2d:4x4");
    topo_routes *r = routes(t, TOPO_ROUTE_DOR);
    ck_assert_uint_eq(topo_routes_vcs(r), 1);
    uint32_t path[64];
    topo_hop hops[64];
    for (uint32_t s = 0; s < 16; s++)
        for (uint32_t d = 0; d < 16; d++) {
            unsigned n = walk(t, r, s, d, 7, path, hops);
            bool in_y = false;   /* once it moves in Y it never moves in X again */
            for (unsigned i = 1; i + 2 <= n; i++) {
                const topo_node *a = &t->nodes[path[i]], *b = &t->nodes[path[i + 1]];
                if (!b->kind->forwards) break;
                bool dx = a->coord[0] != b->coord[0], dy = a->coord[1] != b->coord[1];
                ck_assert(dx != dy);
                if (dy) in_y = true;
                ck_assert_msg(!(in_y && dx), "%u -> %u moved in X after Y", s, d);
                ck_assert_uint_eq(hops[i].vc, 0);
            }
        }
    topo_routes_free(r);
    topo_free(t);

    /* Torus: h1 (x=1) to h3 (x=3) on a ring of 4 goes +2 (tie: +), no wrap, VC 0;
     * h3 to h1 goes + through the wrap 3 -> 0: VC 1 up to and on the wrap, then VC 0. */
    t = gen("torus2d:4x4");
    r = routes(t, TOPO_ROUTE_DOR);
    ck_assert_uint_eq(topo_routes_vcs(r), 2);
    unsigned n = walk(t, r, 1, 3, 0, path, hops);
    ck_assert_uint_eq(n, 4);
    ck_assert(hops[1].vc == 0 && hops[2].vc == 0);
    n = walk(t, r, 3, 1, 0, path, hops);
    ck_assert_uint_eq(n, 4);
    ck_assert_str_eq(t->nodes[path[2]].name, "s0");   /* crossed the wrap s3 -> s0 */
    ck_assert_uint_eq(hops[1].vc, 1);                 /* s3 -> s0, the dateline link */
    ck_assert_uint_eq(hops[2].vc, 0);                 /* s0 -> s1, past it */
    n = walk(t, r, 2, 0, 0, path, hops);   /* x 2 -> 0: +2 (tie) over the wrap */
    ck_assert(n == 4 && hops[1].vc == 1 && hops[2].vc == 1);
    topo_routes_free(r);
    topo_free(t);
    /* dor off a grid is refused with what is allowed */
    t = gen("fattree:4");
    ck_assert_ptr_null(topo_routes_new(t, TOPO_ROUTE_DOR, err, sizeof err));
    ck_assert_msg(strstr(err, "routing=dor needs a ring, mesh2d, torus2d or torus3d") && strstr(err, "allowed here: ecmp, single, updown"),
                  "%s", err);
    topo_free(t);
}
END_TEST

static int cdg(const char *spec, enum topo_routing m, bool vcs)
{
    topo *t = gen(spec);
    topo_routes *r = routes(t, m);
    err[0] = 0;
    int rc = topo_routes_check_cdg(r, vcs, err, sizeof err);
    topo_routes_free(r);
    topo_free(t);
    return rc;
}

START_TEST(test_deadlock_freedom)
{
    ck_assert_msg(cdg("torus2d:4x4", TOPO_ROUTE_DOR, true) == 0, "%s", err);
    /* The same routes with the dateline VCs dropped: every ring is a cycle. */
    ck_assert_int_eq(cdg("torus2d:4x4", TOPO_ROUTE_DOR, false), 1);
    ck_assert_msg(strstr(err, "channel dependency cycle through"), "%s", err);
    ck_assert_int_eq(cdg("ring:5", TOPO_ROUTE_DOR, false), 1);
    ck_assert_int_eq(cdg("ring:5", TOPO_ROUTE_DOR, true), 0);
    ck_assert_int_eq(cdg("torus3d:3x3x4", TOPO_ROUTE_DOR, true), 0);
    ck_assert_int_eq(cdg("mesh2d:4x4", TOPO_ROUTE_DOR, true), 0);
    ck_assert_int_eq(cdg("fattree:4", TOPO_ROUTE_UPDOWN, true), 0);
    ck_assert_int_eq(cdg("leafspine:4,2,4", TOPO_ROUTE_UPDOWN, true), 0);
    ck_assert_int_eq(cdg("torus2d:4x4", TOPO_ROUTE_UPDOWN, true), 0);   /* up*/ /*down* holds on any graph */
    /* Shortest-path routing on a torus has cycles: what dor and updown avoid. */
    ck_assert_int_eq(cdg("torus2d:4x4", TOPO_ROUTE_ECMP, true), 1);
}
END_TEST

static topo_bisection bis(const char *spec, unsigned max_exact)
{
    topo *t = gen(spec);
    topo_bisection b;
    ck_assert_int_eq(topo_bisection_compute(t, max_exact, &b, err, sizeof err), 0);
    /* the reported split is balanced */
    unsigned ones = 0;
    for (uint32_t e = 0; e < t->n_endpoints; e++) ones += b.endpoint_side[e];
    ck_assert_uint_eq(ones, t->n_endpoints - t->n_endpoints / 2);
    topo_bisection_free(&b);
    topo_free(t);
    return b;
}

#define NDR 50.0   /* ib-ndr GBps per direction */

START_TEST(test_bisection)
{
    topo_bisection b = bis("ring:8", TOPO_BISECTION_EXACT_MAX);
    ck_assert(b.exact);
    ck_assert_uint_eq(b.cut_links, 2);
    ck_assert_double_eq_tol(b.GBps, 2 * NDR, 1e-6);
    ck_assert_uint_eq(b.splits_tried, 35);   /* C(8,4) / 2 */
    b = bis("torus2d:4x4", TOPO_BISECTION_EXACT_MAX);
    ck_assert(b.exact);
    ck_assert_double_eq_tol(b.GBps, 8 * NDR, 1e-6);
    b = bis("mesh2d:4x4", TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 4 * NDR, 1e-6);
    /* fullmesh:6: the mesh carries 9 links across; each endpoint's one link limits first: 3 */
    b = bis("fullmesh:6", TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 3 * NDR, 1e-6);
    b = bis("star:7", TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 3 * NDR, 1e-6);   /* the smaller half's links */
    /* fattree:4: full bisection, half the hosts' links */
    b = bis("fattree:4", TOPO_BISECTION_EXACT_MAX);
    ck_assert(b.exact);
    ck_assert_double_eq_tol(b.GBps, 8 * NDR, 1e-6);
    /* leafspine 2 leaves x 4 hosts, 2 spines: 2:1 oversubscribed, the 2 uplinks of a leaf */
    b = bis("leafspine:2,2,4", TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 2 * NDR, 1e-6);
    ck_assert_uint_eq(b.cut_links, 2);
    b = bis("leafspine:2,2,4,2", TOPO_BISECTION_EXACT_MAX);   /* 2 uplinks per spine: no oversubscription */
    ck_assert_double_eq_tol(b.GBps, 4 * NDR, 1e-6);
    /* Above the exact limit: an upper bound, which here finds the true cut. */
    b = bis("torus2d:4x4", 0);
    ck_assert(!b.exact);
    ck_assert_double_eq_tol(b.GBps, 8 * NDR, 1e-6);
    b = bis("torus2d:8x8", TOPO_BISECTION_EXACT_MAX);
    ck_assert(!b.exact);
    ck_assert_double_eq_tol(b.GBps, 16 * NDR, 1e-6);
    b = bis("fattree:8", TOPO_BISECTION_EXACT_MAX);
    ck_assert(!b.exact);
    ck_assert_double_eq_tol(b.GBps, 64 * NDR, 1e-6);
    b = bis("ring:32", TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 2 * NDR, 1e-6);
    /* Endpoints numbered against the ring's order: the natural first split
     * {h0..h3} sits on s0, s3, s6, s1 and cuts 6 ring links; the minimum is still 2. */
    topo *t = topo_new("ib-ndr", err, sizeof err);
    char a[16], c[16];
    for (int i = 0; i < 16; i++) {
        snprintf(a, sizeof a, "%c%d", i < 8 ? 'h' : 's', i % 8);
        ck_assert_int_ge(topo_add_node(t, a, i < 8 ? "endpoint" : "switch", NULL, err, sizeof err), 0);
    }
    for (int i = 0; i < 8; i++) {
        snprintf(a, sizeof a, "h%d", i);
        snprintf(c, sizeof c, "s%d", 3 * i % 8);
        ck_assert_int_ge(topo_add_link(t, a, c, NULL, -1, -1, err, sizeof err), 0);
        snprintf(a, sizeof a, "s%d", i);
        snprintf(c, sizeof c, "s%d", (i + 1) % 8);
        ck_assert_int_ge(topo_add_link(t, a, c, NULL, -1, -1, err, sizeof err), 0);
    }
    ck_assert_int_eq(topo_finish(t, err, sizeof err), 0);
    ck_assert_int_eq(topo_bisection_compute(t, TOPO_BISECTION_EXACT_MAX, &b, err, sizeof err), 0);
    ck_assert_double_eq_tol(b.GBps, 2 * NDR, 1e-6);
    ck_assert_uint_eq(b.cut_links, 2);
    topo_bisection_free(&b);
    topo_free(t);
    /* A file's per-link rates count: two_hosts has a 40 GBps link. */
    char path[1024];
    snprintf(path, sizeof path, "%s/topologies/two_hosts.json", LINKSTACK_SOURCE_DIR);
    b = bis(path, TOPO_BISECTION_EXACT_MAX);
    ck_assert_double_eq_tol(b.GBps, 40, 1e-9);
}
END_TEST

/* Max-min shares on fixed routes, worked out by hand. */
START_TEST(test_flows_maxmin)
{
    /* star:4, one switch: three flows into h0 share its link, one of them
     * asks for only 10; h0's own flow out to h1 shares nothing. */
    topo *t = gen("star:4");
    topo_routes *r = routes(t, TOPO_ROUTE_SINGLE);
    topo_flow f[4] = {
        { .src = 1, .dst = 0, .demand_GBps = NDR }, { .src = 2, .dst = 0, .demand_GBps = NDR },
        { .src = 3, .dst = 0, .demand_GBps = 10 }, { .src = 0, .dst = 1, .demand_GBps = NDR },
    };
    ck_assert_int_eq(topo_flows_maxmin(t, r, f, 4, err, sizeof err), 0);
    ck_assert_double_eq_tol(f[2].rate_GBps, 10, 1e-9);
    ck_assert_double_eq_tol(f[0].rate_GBps, (NDR - 10) / 2, 1e-9);
    ck_assert_double_eq_tol(f[1].rate_GBps, (NDR - 10) / 2, 1e-9);
    ck_assert_double_eq_tol(f[3].rate_GBps, NDR, 1e-9);
    uint32_t path[8];
    ck_assert_int_eq(topo_flow_path(t, r, 1, 0, 0, path, 8), 2);   /* h1 -> s0 -> h0 */
    ck_assert_int_eq(topo_flow_path(t, r, 1, 1, 0, path, 8), -1);
    topo_routes_free(r);
    topo_free(t);
    /* ring:8, dor: i <-> i+4 all go the + way round (ties: +), 4 hops each,
     * so every ring link direction carries 4 flows: 50/4 each. */
    t = gen("ring:8");
    r = routes(t, TOPO_ROUTE_DOR);
    topo_flow g[8];
    for (uint32_t i = 0; i < 8; i++) g[i] = (topo_flow){ .src = i, .dst = (i + 4) % 8, .flow_id = i, .demand_GBps = NDR };
    ck_assert_int_eq(topo_flows_maxmin(t, r, g, 8, err, sizeof err), 0);
    for (int i = 0; i < 8; i++) ck_assert_double_eq_tol(g[i].rate_GBps, NDR / 4, 1e-9);
    ck_assert_int_eq(topo_flow_path(t, r, 0, 4, 0, path, 8), 6);   /* h0, 4 ring links, h4 */
    ck_assert_int_eq(topo_flow_path(t, r, 0, 4, 0, path, 5), -1);  /* longer than the room given */
    /* the bisection's node sides: exactly the cut links have ends on both sides */
    topo_bisection b;
    ck_assert_int_eq(topo_bisection_compute(t, TOPO_BISECTION_EXACT_MAX, &b, err, sizeof err), 0);
    unsigned crossing = 0;
    for (uint32_t l = 0; l < t->n_links; l++) crossing += b.node_side[t->links[l].a] != b.node_side[t->links[l].b];
    ck_assert_uint_eq(crossing, b.cut_links);
    for (uint32_t e = 0; e < t->n_endpoints; e++) ck_assert_uint_eq(b.node_side[t->endpoint_node[e]], b.endpoint_side[e]);
    topo_bisection_free(&b);
    topo_routes_free(r);
    topo_free(t);
}
END_TEST

START_TEST(test_multiport_terminal)
{
    /* A GPU-like endpoint with many ports: routes leave on any of its links,
     * and nothing routes through it. */
    char path[1024];
    snprintf(path, sizeof path, "%s/topologies/dgx_h100_like.json", LINKSTACK_SOURCE_DIR);
    topo *t = gen(path);
    topo_routes *r = routes(t, TOPO_ROUTE_ECMP);
    const topo_hop *h;
    ck_assert_uint_eq(topo_route_candidates(r, 0, -1, 5, &h), 18);   /* gpu0 -> gpu5: any of its 18 links */
    ck_assert_uint_eq(topo_route_candidates(r, (uint32_t)topo_node_find(t, "nvs0"), -1, 5, &h), 5);
    topo_routes_free(r);
    topo_bisection b;
    ck_assert_int_eq(topo_bisection_compute(t, TOPO_BISECTION_EXACT_MAX, &b, err, sizeof err), 0);
    ck_assert_double_eq_tol(b.GBps, 4 * 18 * 25.0, 1e-6);   /* 4 GPUs' links */
    topo_bisection_free(&b);
    topo_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_route");
    TCase *tc = tcase_create("route");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_paths_are_shortest);
    tcase_add_test(tc, test_ecmp_fattree4);
    tcase_add_test(tc, test_dor_order_and_vcs);
    tcase_add_test(tc, test_deadlock_freedom);
    tcase_add_test(tc, test_bisection);
    tcase_add_test(tc, test_flows_maxmin);
    tcase_add_test(tc, test_multiport_terminal);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
