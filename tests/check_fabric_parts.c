/* A fabric partitioned in one process (sim_fabric_cfg.parts, sim/pdes.h):
 * fabric_traffic's system -- fattree:4, uniform Bernoulli traffic, credits,
 * ECMP -- cut into 2 and 4 parts gives exactly what it gives in one kernel:
 * every endpoint's counts (sent, received, per source, window bytes and hops,
 * order), every link direction's messages, bytes and busy time, the event
 * count and the end time; conservation holds over the halves; a kind that
 * cannot be partitioned is refused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "models/fabric/endpoint.h"
#include "models/fabric/fabric.h"
#include "models/server/server.h"
#include "sim/fabric.h"
#include "sim/pdes.h"
#include "sim/sim.h"

enum { MAX_PARTS = 4, MAX_EP = 16, MAX_DIRS = 256 };

typedef struct run_result {
    fabric_endpoint_stats ep[MAX_EP];
    uint64_t received_from[MAX_EP][MAX_EP];
    uint64_t link_msgs[MAX_DIRS], link_bytes[MAX_DIRS], link_busy_ps[MAX_DIRS];
    uint64_t events, windows;
    sim_time_ps end_ps;
    uint32_t n_ep, n_dirs;
} run_result;

/* node n in part (n * 7) % parts: neighbours land in different parts, so
 * switch-switch and endpoint-switch links are cut alike */
static void run(const char *spec, unsigned parts, run_result *r)
{
    char err[512];
    fabric_register_kinds();
    topo *t = topo_from_string(spec, "eth-400g", err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    sim_pattern pat = { 0 };
    ck_assert_int_eq(sim_pattern_init(&pat, SIM_PAT_UNIFORM, t->n_endpoints, 7, err, sizeof err), 0);
    fabric_endpoint_cfg ec = { .pattern = &pat, .load = 0.6, .pkt_bytes = 512, .warmup_ps = SIM_US(1), .end_ps = SIM_US(6),
                               .stop_ps = SIM_US(6) };
    sim_kernel *k[MAX_PARTS];
    uint32_t *node_part = calloc(t->n_nodes, sizeof *node_part);
    for (unsigned p = 0; p < parts; p++) k[p] = sim_kernel_new();
    for (uint32_t n = 0; n < t->n_nodes; n++) node_part[n] = (n * 7) % parts;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 3, .kind_cfg = { { "endpoint", &ec } },
                          .parts = parts, .part_kernels = k, .node_part = node_part };
    sim_fabric *f = sim_fabric_new(k[0], t, &fc, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    sim_fabric_run(f, SIM_US(1));
    sim_fabric_reset_stats(f);
    sim_fabric_run(f, SIM_US(6));
    r->end_ps = sim_fabric_run(f, SIM_TIME_MAX);
    r->events = sim_fabric_events(f);
    r->windows = sim_fabric_pdes(f) ? sim_pdes_windows(sim_fabric_pdes(f)) : 1;
    char why[512];
    ck_assert_msg(sim_fabric_check(f, true, why, sizeof why) == 0, "%u parts: %s", parts, why);
    r->n_ep = t->n_endpoints;
    ck_assert_uint_le(r->n_ep, MAX_EP);
    for (uint32_t e = 0; e < r->n_ep; e++) {
        fabric_endpoint *ep = sim_fabric_component(f, t->endpoint_node[e]);
        fabric_endpoint_get_stats(ep, &r->ep[e]);
        memcpy(r->received_from[e], fabric_endpoint_received_from(ep), r->n_ep * sizeof(uint64_t));
    }
    r->n_dirs = 2 * t->n_links;
    ck_assert_uint_le(r->n_dirs, MAX_DIRS);
    for (uint32_t i = 0; i < r->n_dirs; i++) {
        const sim_link *l = sim_fabric_link(f, i / 2, i % 2);
        r->link_msgs[i] = l->msgs_sent;
        r->link_bytes[i] = l->bytes_sent;
        r->link_busy_ps[i] = l->busy_ps;
    }
    sim_fabric_free(f);
    for (unsigned p = 0; p < parts; p++) sim_kernel_free(k[p]);
    free(node_part);
    sim_pattern_free(&pat);
    topo_free(t);
}

START_TEST(parts_give_one_kernels_results)
{
    static run_result one, r;
    run("fattree:4", 1, &one);
    uint64_t received = 0;
    for (uint32_t e = 0; e < one.n_ep; e++) received += one.ep[e].received_pkts;
    ck_assert_uint_gt(received, 1000);   /* traffic really flowed */
    for (unsigned parts = 2; parts <= MAX_PARTS; parts *= 2) {
        memset(&r, 0, sizeof r);
        run("fattree:4", parts, &r);
        for (uint32_t e = 0; e < one.n_ep; e++) {
            ck_assert_msg(!memcmp(&one.ep[e], &r.ep[e], sizeof r.ep[e]), "%u parts: endpoint %u's statistics differ", parts, e);
            ck_assert_msg(!memcmp(one.received_from[e], r.received_from[e], sizeof r.received_from[e]),
                          "%u parts: endpoint %u's per-source counts differ", parts, e);
        }
        for (uint32_t i = 0; i < one.n_dirs; i++)
            ck_assert_msg(one.link_msgs[i] == r.link_msgs[i] && one.link_bytes[i] == r.link_bytes[i] &&
                              one.link_busy_ps[i] == r.link_busy_ps[i],
                          "%u parts: link direction %u differs", parts, i);
        ck_assert_uint_gt(r.windows, 20);   /* it really ran in windows (about 75: the lookahead is one link latency) */
        ck_assert_uint_eq(r.events, one.events);
        ck_assert_uint_eq(r.end_ps, one.end_ps);
    }
}
END_TEST

START_TEST(unpartitionable_kind_refused)
{
    char err[512];
    fabric_register_kinds();
    topo *t = topo_from_string("star:2", "eth-400g", err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    sim_kernel *k[2] = { sim_kernel_new(), sim_kernel_new() };
    uint32_t node_part[8] = { 0, 1, 0, 1, 0, 1, 0, 1 };
    sim_fabric_cfg fc = { .parts = 2, .part_kernels = k, .node_part = NULL };
    ck_assert_ptr_null(sim_fabric_new(k[0], t, &fc, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "node_part"));
    fc.node_part = node_part;
    node_part[0] = 5;
    ck_assert_ptr_null(sim_fabric_new(k[0], t, &fc, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "part 5 of 2"));
    topo_free(t);
    /* PCIe ports plan ahead on their links: the server's kinds stay in one part */
    server_register_kinds();
    t = topo_from_string("host-gpu:gen=5,lanes=16", "pcie-gen5-x16", err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    node_part[0] = 0;
    ck_assert_ptr_null(sim_fabric_new(k[0], t, &fc, err, sizeof err));
    ck_assert_msg(strstr(err, "cannot be partitioned") != NULL, "%s", err);
    sim_kernel_free(k[0]);
    sim_kernel_free(k[1]);
    topo_free(t);
}
END_TEST

static Suite *parts_suite(void)
{
    Suite *s = suite_create("fabric_parts");
    TCase *tc = tcase_create("parts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parts_give_one_kernels_results);
    tcase_add_test(tc, unpartitionable_kind_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(parts_suite()); }
