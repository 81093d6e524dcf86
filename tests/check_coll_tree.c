/* The tree all_reduce (models/collective/tree.c) and the rank -> node
 * grouping (coll_nodes.c): nodes from the topology's NVLink domains and from
 * gpus_per_node; the double binary tree's shape against NCCL's (trees.cc);
 * values reduced right on every node count, wrong with the seeded bug. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "check_run.h"

static char err[2048];

typedef struct sys {
    topo *t;
    sim_kernel *k;
    sim_fabric *f;
    coll_comm *cm;
    nvgpu_cfg gc;
    fabric_switch_cfg sc;
} sys;

/* A fabric of spec and a communicator with gpus_per_node; NULL comm (err) when refused. */
static sys *sys_new(const char *spec, unsigned gpus_per_node, bool check, enum coll_inject inject)
{
    fabric_register_kinds();
    collective_register_kinds();
    sys *s = calloc(1, sizeof *s);
    s->t = topo_from_string(spec, "nvlink4", err, sizeof err);
    ck_assert_msg(s->t, "%s", err);
    s->k = sim_kernel_new();
    s->gc = NVGPU_CFG_DEFAULT;
    s->gc.burst_pkts = 8;
    s->sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "nvgpu", &s->gc }, { "switch", &s->sc } } };
    s->f = sim_fabric_new(s->k, s->t, &fc, err, sizeof err);
    ck_assert_msg(s->f, "%s", err);
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.gpus_per_node = gpus_per_node;
    cc.check = check;
    cc.inject = inject;
    s->cm = coll_comm_new(s->f, &cc, err, sizeof err);
    return s;
}

static void sys_free(sys *s)
{
    coll_comm_free(s->cm);
    sim_fabric_free(s->f);
    sim_kernel_free(s->k);
    topo_free(s->t);
    free(s);
}

static char topo_file[1024];
static const char *two_nodes(void)
{
    snprintf(topo_file, sizeof topo_file, "%s/topologies/nvgpu_2nodes.json", LINKSTACK_SOURCE_DIR);
    return topo_file;
}

START_TEST(test_nodes_from_topology)
{
    sys *s = sys_new("dgx-h100", 0, false, COLL_INJECT_NONE);
    ck_assert_msg(s->cm, "%s", err);
    ck_assert_uint_eq(coll_comm_nodes(s->cm), 1);   /* 8 GPUs behind NVSwitches: one node */
    for (unsigned r = 0; r < 8; r++) ck_assert_uint_eq(coll_rank_node(s->cm, r), 0);
    sys_free(s);
    /* two NVLink domains whose switches are joined by InfiniBand: two nodes */
    s = sys_new(two_nodes(), 0, false, COLL_INJECT_NONE);
    ck_assert_msg(s->cm, "%s", err);
    ck_assert_uint_eq(coll_comm_nodes(s->cm), 2);
    static const unsigned want[4] = { 0, 0, 1, 1 };
    for (unsigned r = 0; r < 4; r++) ck_assert_uint_eq(coll_rank_node(s->cm, r), want[r]);
    sys_free(s);
}
END_TEST

START_TEST(test_gpus_per_node)
{
    sys *s = sys_new("dgx-h100", 2, false, COLL_INJECT_NONE);
    ck_assert_msg(s->cm, "%s", err);
    ck_assert_uint_eq(coll_comm_nodes(s->cm), 4);
    for (unsigned r = 0; r < 8; r++) ck_assert_uint_eq(coll_rank_node(s->cm, r), r / 2);
    sys_free(s);
    s = sys_new("dgx-h100", 3, false, COLL_INJECT_NONE);   /* does not divide 8 */
    ck_assert_ptr_null(s->cm);
    ck_assert_msg(strstr(err, "gpus_per_node=3") && strstr(err, "allowed"), "%s", err);
    sys_free(s);
}
END_TEST

/* The trees of 8 one-GPU nodes are NCCL's: tree 0 0->4->{2,6}, 2->{1,3},
 * 6->{5,7}; tree 1 its mirror. Every edge is named from both ends, every
 * rank but the root has a parent, and no rank is inner in both trees. */
START_TEST(test_tree_shape)
{
    sys *s = sys_new("dgx-h100", 1, false, COLL_INJECT_NONE);
    ck_assert_msg(s->cm, "%s", err);
    static const int parent0[8] = { -1, 2, 4, 2, 0, 6, 4, 6 };
    unsigned inner[8] = { 0 };
    for (unsigned t = 0; t < 2; t++) {
        unsigned roots = 0;
        for (unsigned r = 0; r < 8; r++) {
            int p;
            unsigned kids[COLL_TREE_MAX_CHILDREN];
            unsigned nk = coll_tree_peers(s->cm, t, r, &p, kids);
            int want = t == 0 ? parent0[r] : parent0[7 - r] < 0 ? -1 : 7 - parent0[7 - r];
            ck_assert_int_eq(p, want);
            roots += p < 0;
            if (nk > (p < 0 ? 1u : 0u)) inner[r]++;
            ck_assert_uint_le(nk, 2);
            for (unsigned i = 0; i < nk; i++) {
                int pp;
                unsigned kk[COLL_TREE_MAX_CHILDREN];
                coll_tree_peers(s->cm, t, kids[i], &pp, kk);
                ck_assert_int_eq(pp, (int)r);
            }
        }
        ck_assert_uint_eq(roots, 1);
    }
    for (unsigned r = 0; r < 8; r++) ck_assert_msg(inner[r] <= 1, "rank %u inner in both trees", r);
    sys_free(s);
    /* 2 nodes of 4: chains 0-1-2-3 and 4-5-6-7, heads 0 and 4 joined by the trees */
    s = sys_new("dgx-h100", 4, false, COLL_INJECT_NONE);
    int p;
    unsigned kids[COLL_TREE_MAX_CHILDREN];
    ck_assert_uint_eq(coll_tree_peers(s->cm, 0, 0, &p, kids), 2);
    ck_assert_int_eq(p, -1);
    ck_assert_uint_eq(kids[0], 4);
    ck_assert_uint_eq(kids[1], 1);
    ck_assert_uint_eq(coll_tree_peers(s->cm, 1, 0, &p, kids), 1);   /* tree 1: node 1 is the root */
    ck_assert_int_eq(p, 4);
    ck_assert_uint_eq(coll_tree_peers(s->cm, 0, 6, &p, kids), 1);
    ck_assert_int_eq(p, 5);
    ck_assert_uint_eq(kids[0], 7);
    ck_assert_uint_eq(coll_tree_peers(s->cm, 0, 7, &p, kids), 0);
    sys_free(s);
}
END_TEST

static coll_result run_tree(const char *spec, unsigned gpn, uint64_t count, enum coll_inject inject)
{
    sys *s = sys_new(spec, gpn, true, inject);
    ck_assert_msg(s->cm, "%s", err);
    coll_result r;
    ck_assert_msg(coll_tree_all_reduce(s->cm, count, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_fabric_check(s->f, true, err, sizeof err) == 0, "%s", err);
    /* the ring still runs on the same communicator afterwards (handlers given back) */
    coll_result rr;
    if (inject == COLL_INJECT_NONE) {   /* (the seeded bug strikes the ring too) */
        ck_assert_msg(coll_run(s->cm, COLL_ALL_REDUCE, 1000, &rr, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(rr.wrong == 0, "ring after the tree (%s, gpus_per_node=%u, count %llu): %llu wrong", spec, gpn,
                      (unsigned long long)count, (unsigned long long)rr.wrong);
    }
    sys_free(s);
    return r;
}

START_TEST(test_tree_values)
{
    static const unsigned gpn[] = { 0, 1, 2, 4 };
    static const uint64_t counts[] = { 1, 1000, 300001 };   /* fewer elements than channels, odd sizes, several chunks */
    for (unsigned g = 0; g < 4; g++)
        for (unsigned i = 0; i < 3; i++) {
            coll_result r = run_tree("dgx-h100", gpn[g], counts[i], COLL_INJECT_NONE);
            ck_assert(r.checked);
            ck_assert_msg(r.wrong == 0, "gpus_per_node=%u count %llu: %llu wrong", gpn[g], (unsigned long long)counts[i], (unsigned long long)r.wrong);
            ck_assert(r.time_ps > 0);
        }
    coll_result r = run_tree(two_nodes(), 0, 100000, COLL_INJECT_NONE);   /* a tree over the InfiniBand-joined domains */
    ck_assert_uint_eq(r.wrong, 0);
    r = run_tree("dgx-h100", 1, 100000, COLL_INJECT_SKIP_CHUNK);
    ck_assert_msg(r.wrong > 0, "skip_chunk left every value right");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_tree");
    TCase *tc = tcase_create("tree");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_nodes_from_topology);
    tcase_add_test(tc, test_gpus_per_node);
    tcase_add_test(tc, test_tree_shape);
    tcase_add_test(tc, test_tree_values);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
