/* Conservative windows (sim/pdes.h) over link halves (sim/link.h): a system
 * cut into 2, 3 or 4 parts, each its own kernel, gives what it gives in one
 * kernel -- every node's arrival hash, arrival count and last arrival time,
 * the event count and the end time -- and without order keys it does not
 * (the check can fail). Halves keep conservation; a cut link without latency
 * is refused. The model: tests/pdes_ring.h. */
#include <check.h>
#include <signal.h>

#include "check_run.h"
#include "pdes_ring.h"

START_TEST(test_parts_give_one_kernels_results)
{
    ring_result one, r;
    run_ring(1, true, NULL, &one);
    ck_assert_uint_eq(one.windows, 1);
    uint64_t total = 0;
    for (unsigned i = 0; i < NODES; i++) total += one.arrivals[i];
    ck_assert_uint_eq(total, (uint64_t)NODES * TOKENS * (HOPS + 1));   /* every token arrived after each of its hops */
    for (unsigned parts = 2; parts <= 4; parts++) {
        run_ring(parts, true, NULL, &r);
        ck_assert_msg(ring_same(&one, &r), "%u parts differ from one kernel (end %llu vs %llu ps, events %llu vs %llu)", parts,
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
    run_ring(1, false, NULL, &one);
    run_ring(2, false, NULL, &two);
    ck_assert(!ring_same(&one, &two));
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
