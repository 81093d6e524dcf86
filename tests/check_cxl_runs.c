/* End-to-end runs of the cxl_* tests through simrun: every latency scenario
 * (default and other link settings) must pass its exact per-hop checks, every
 * seeded bug must make cxl_random and cxl_explore exit 1, bad input exit 2. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_simrun.h"

static char out[1 << 16];
static char outdir[64];

static int simrun(const char *args)
{
    char with_trace[1024];
    snprintf(with_trace, sizeof with_trace, "%s trace=0", args);
    return check_simrun(outdir, with_trace, out, sizeof out);
}

static const char *const scenarios[] = { "miss", "host_hit", "host_m", "peer_m", "shared_upgrade",
                                         "dirty_evict", "wrinv", "rdcurr_m", "clflush", "race_go_snoop" };

START_TEST(latency_scenarios)
{
    static const char *const links[] = { "", "lanes=8 gts=16", "link_ns=40 lanes=4 gts=8 dev_ns=12 home_ns=7.5" };
    for (unsigned l = 0; l < 3; l++) {
        char args[256];
        snprintf(args, sizeof args, "cxl_latency scenario=%s %s", scenarios[_i], links[l]);
        int rc = simrun(args);
        ck_assert_msg(rc == 0, "%s: exit %d\n%s", args, rc, out);
    }
}
END_TEST

static const char *const injects[] = { "go_during_snoop", "no_fwd_data", "e_with_sharers", "skip_bogus" };

START_TEST(random_inject_fails)
{
    char args[256];
    snprintf(args, sizeof args, "cxl_random ops=20000 inject=%s", injects[_i]);
    int rc = simrun(args);
    ck_assert_msg(rc == 1, "%s: exit %d (expected 1)\n%.2000s", args, rc, out);
    ck_assert_msg(strstr(out, "VIOLATION") && strstr(out, "history of line"), "%s: no violation history printed", args);
}
END_TEST

START_TEST(explore_inject_fails)
{
    char args[256];
    snprintf(args, sizeof args, "cxl_explore devices=1 cores=1 inject=%s", injects[_i]);
    int rc = simrun(args);
    ck_assert_msg(rc == 1, "%s: exit %d (expected 1)\n%.2000s", args, rc, out);
    ck_assert_msg(strstr(out, "VIOLATION") && strstr(out, "history"), "%s: no violation history printed", args);
}
END_TEST

START_TEST(clean_runs_pass)
{
    ck_assert_msg(simrun("cxl_explore devices=1 cores=1") == 0, "%s", out);
    ck_assert_msg(simrun("cxl_random ops=20000 seed=3 jitter=50") == 0, "%s", out);
    ck_assert_msg(simrun("cxl_random ops=20000 devices=4 cores=2 lines=16 sets=1 ways=4 seed=4") == 0, "%s", out);
    ck_assert_msg(simrun("cxl_contention ops=5000 plot=0 devices=3 cores=1 lines=2 read_pct=30") == 0, "%s", out);
}
END_TEST

START_TEST(bad_input_exits_2)
{
    ck_assert_int_eq(simrun("cxl_latency lanes=3"), 2);
    ck_assert_ptr_nonnull(strstr(out, "lanes=3"));
    ck_assert_int_eq(simrun("cxl_latency gts=7"), 2);
    ck_assert_int_eq(simrun("cxl_latency scenario=nope"), 2);
    ck_assert_int_eq(simrun("cxl_random devices=9"), 2);
    ck_assert_int_eq(simrun("cxl_random inject=nope"), 2);
    ck_assert_int_eq(simrun("cxl_explore devices=4 cores=3"), 2);
    ck_assert_int_eq(simrun("cxl_explore ops=load,nope"), 2);
    ck_assert_int_eq(simrun("cxl_contention lanes=5"), 2);
}
END_TEST

int main(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/check_cxl_runs.%d", (int)getpid());
    Suite *s = suite_create("cxl_runs");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, latency_scenarios, 0, (int)(sizeof scenarios / sizeof scenarios[0]));
    tcase_add_loop_test(tc, random_inject_fails, 0, 4);
    tcase_add_loop_test(tc, explore_inject_fails, 0, 4);
    tcase_add_test(tc, clean_runs_pass);
    tcase_add_test(tc, bad_input_exits_2);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failures = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", outdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", outdir);
    return failures ? 1 : 0;
}
