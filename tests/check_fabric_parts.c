/* A fabric partitioned in one process (sim_fabric_cfg.parts, sim/pdes.h):
 * fabric_traffic's system -- fattree:4, uniform Bernoulli traffic, credits,
 * ECMP -- cut into 2 and 4 parts gives exactly what it gives in one kernel:
 * every endpoint's counts (sent, received, per source, window bytes and hops,
 * order), every link direction's messages, bytes and busy time, the event
 * count and the end time; conservation holds over the halves; a kind that
 * cannot be partitioned is refused. The system: tests/fabric_parts.h. */
#include <check.h>

#include "check_run.h"
#include "fabric_parts.h"
#include "models/server/server.h"

START_TEST(parts_give_one_kernels_results)
{
    static run_result one, r;
    run("fattree:4", 1, NULL, &one);
    uint64_t received = 0;
    for (uint32_t e = 0; e < one.n_ep; e++) received += one.ep[e].received_pkts;
    ck_assert_uint_gt(received, 1000);   /* traffic really flowed */
    for (unsigned parts = 2; parts <= MAX_PARTS; parts *= 2) {
        memset(&r, 0, sizeof r);
        run("fattree:4", parts, NULL, &r);
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
