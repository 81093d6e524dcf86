/* The checkers must be able to fail: the explorer and the timed random
 * system, each with every seeded bug, must report violations; without a bug
 * they must report none. */
#include <check.h>
#include <stdio.h>

#include "models/cxl/cxl_explore.h"
#include "models/cxl/cxl_sys.h"
#include "check_run.h"

static void explore(unsigned devices, unsigned cores, unsigned inject, cxl_explore_result *r)
{
    cxl_explore_cfg cfg = { 0 };
    cfg.devices = devices;
    cfg.cores = cores;
    cfg.lines = 1;
    cfg.values = 2;
    cfg.inject = inject;
    cfg.dev_ops = CXL_ALL_DEV_OPS;
    cfg.max_states = 5000000;
    cxl_explore_run(&cfg, r);
}

START_TEST(explore_clean_1dev_1core)
{
    cxl_explore_result r;
    explore(1, 1, INJ_NONE, &r);
    ck_assert(r.complete);
    ck_assert_uint_eq(r.violations, 0);
    ck_assert_uint_eq(r.deadlocks, 0);
    ck_assert_uint_gt(r.states, 1000);
    ck_assert_uint_gt(r.tr_covered, 100);
}
END_TEST

START_TEST(explore_clean_2dev)
{
    cxl_explore_result r;
    explore(2, 0, INJ_NONE, &r);
    ck_assert(r.complete);
    ck_assert_uint_eq(r.violations, 0);
    ck_assert_uint_eq(r.deadlocks, 0);
}
END_TEST

START_TEST(explore_catches_injected_bug)
{
    cxl_explore_result r;
    explore(1, 1, (unsigned)_i, &r);
    ck_assert_msg(r.violations > 0, "inject=%s: no violation found", cxl_inject_name((unsigned)_i));
}
END_TEST

static uint64_t random_violations(unsigned inject, uint64_t ops)
{
    sim_kernel *k = sim_kernel_new();
    cxl_sys_cfg cfg;
    cxl_sys_cfg_defaults(&cfg);
    cfg.devices = 2;
    cfg.cores = 1;
    cfg.lines = 4;
    cfg.dev_sets = cfg.core_sets = 1;
    cfg.dev_ways = cfg.core_ways = 2;
    cfg.jitter_ns = 20;
    cfg.inject = inject;
    cfg.watchdog_ns = 100000;
    cfg.credits_req = cfg.credits_rsp = cfg.credits_data = 2;
    cxl_sys *s = cxl_sys_new(k, &cfg, NULL);
    sim_rng rng;
    sim_rng_seed(&rng, 42);
    uint64_t issued = 0;
    /* a plain issue loop: a burst of random accesses, run, repeat */
    while (issued < ops) {
        for (unsigned a = 0; a < 3; a++) {
            uint32_t line = (uint32_t)sim_rng_below(&rng, cfg.lines);
            unsigned st = cxl_sys_line_state(s, a, line);
            if (cxl_sys_busy(s, a, line) || !cxl_dstate_stable(st)) continue;
            unsigned op;
            cxl_dline probe = { .st = (uint8_t)st };
            do op = (unsigned)sim_rng_below(&rng, CXL_N_CORE_OP);
            while (!cxl_dev_op_legal(&probe, op, cxl_sys_is_core(s, a)));
            if (cxl_sys_issue(s, a, line, op, (uint8_t)(1 + sim_rng_below(&rng, 200)))) issued++;
        }
        sim_run(k, sim_now(k) + SIM_NS(50));
    }
    sim_run(k, SIM_TIME_MAX);
    cxl_sys_stats st;
    cxl_sys_stats_get(s, &st);
    char why[256];
    uint64_t v = st.violations + cxl_sys_final_check(s, why, sizeof why);
    cxl_sys_free(s);
    sim_kernel_free(k);
    return v;
}

START_TEST(random_clean)
{
    ck_assert_uint_eq(random_violations(INJ_NONE, 20000), 0);
}
END_TEST

START_TEST(random_catches_injected_bug)
{
    ck_assert_msg(random_violations((unsigned)_i, 20000) > 0, "inject=%s: no violation", cxl_inject_name((unsigned)_i));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cxl_checkers");
    TCase *tc = tcase_create("explore");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, explore_clean_1dev_1core);
    tcase_add_test(tc, explore_clean_2dev);
    tcase_add_loop_test(tc, explore_catches_injected_bug, INJ_GO_DURING_SNOOP, CXL_N_INJECT);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("random");
    tcase_set_timeout(tr, 120);
    tcase_add_test(tr, random_clean);
    tcase_add_loop_test(tr, random_catches_injected_bug, INJ_GO_DURING_SNOOP, CXL_N_INJECT);
    suite_add_tcase(s, tr);
    return run_suite(s);
}
