/* Report: written to a temp dir, parsed back with cJSON and validated against
 * the schema {"test","params","metrics","checks":[{"name","pass","detail"}],
 * "pass","sim":{"time_ps","events","wall_s"}}; sim_bench_write merging.
 * Runner: the exit statuses of build/bin/simrun (0 pass, 2 bad input) and the
 * report it writes. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check_log.h"
#include "sim/sim.h"

#ifndef LINKSTACK_SIMRUN
#error "CMake passes LINKSTACK_SIMRUN, the path of build/bin/simrun"
#endif

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/check_report.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static cJSON *parse_file(const char *path)
{
    char *text = slurp(path);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root != NULL, "%s is not valid JSON", path);
    return root;
}

/* The schema every report must have. */
static void validate_schema(const cJSON *root, const char *test)
{
    ck_assert(cJSON_IsObject(root));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "test");
    ck_assert(cJSON_IsString(t));
    ck_assert_str_eq(t->valuestring, test);
    ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "params")));
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(root, "metrics");
    ck_assert(cJSON_IsObject(metrics));
    const cJSON *checks = cJSON_GetObjectItemCaseSensitive(root, "checks");
    ck_assert(cJSON_IsArray(checks));
    const cJSON *c;
    cJSON_ArrayForEach(c, checks) {
        ck_assert(cJSON_IsObject(c));
        ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name")));
        ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(c, "pass")));
        ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "detail")));
        ck_assert_int_eq(cJSON_GetArraySize(c), 3);
    }
    ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(root, "pass")));
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(root, "sim");
    ck_assert(cJSON_IsObject(sim));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sim, "time_ps")));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sim, "events")));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sim, "wall_s")));
    ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(sim, "ranks")->valuedouble, 1);   /* one process */
    ck_assert_int_eq(cJSON_GetArraySize(sim), 4);
    ck_assert_int_eq(cJSON_GetArraySize((cJSON *)root), 6);
}

START_TEST(test_report_roundtrip)
{
    sim_report *r = sim_report_new("unit");
    sim_report_metric(r, "bw_GBps", 12.5);
    sim_report_metric(r, "bw_GBps", 13.25);                 /* set twice: replaced, not duplicated */
    sim_report_metric(r, "lat_ns", 7);
    cJSON *list = cJSON_CreateArray();
    cJSON_AddItemToArray(list, cJSON_CreateNumber(1));
    sim_report_metric_json(r, "series", list);
    ck_assert(sim_check(r, "good", true, "x=%d", 3));
    ck_assert(!sim_check(r, "bad", false, "lost %s", "one \"quoted\" msg"));
    ck_assert(!sim_report_passed(r));
    ck_assert_uint_eq(sim_report_failures(r), 1);
    ck_assert(sim_report_get_metric(r, "bw_GBps", -1) == 13.25);
    ck_assert(sim_report_get_metric(r, "series", -1) == -1);   /* not a number */
    ck_assert(sim_report_get_metric(r, "nope", -2) == -2);
    cJSON *params = cJSON_CreateObject();
    cJSON_AddNumberToObject(params, "nodes", 8);
    char path[512];
    snprintf(path, sizeof path, "%s/a/b/reports/unit.json", dir);   /* parents are created */
    ck_assert_int_eq(sim_report_write(r, path, params, 123456789, 42, 0.5), 0);
    cJSON *root = parse_file(path);
    validate_schema(root, "unit");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(root, "pass")));
    const cJSON *m = cJSON_GetObjectItem(root, "metrics");
    ck_assert_int_eq(cJSON_GetArraySize(m), 3);
    ck_assert(cJSON_GetObjectItem(m, "bw_GBps")->valuedouble == 13.25);
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(m, "series")));
    const cJSON *checks = cJSON_GetObjectItem(root, "checks");
    ck_assert_int_eq(cJSON_GetArraySize(checks), 2);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(checks, 0), "name")->valuestring, "good");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(checks, 0), "detail")->valuestring, "x=3");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(checks, 0), "pass")));
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(checks, 1), "detail")->valuestring, "lost one \"quoted\" msg");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "params"), "nodes")->valueint, 8);
    const cJSON *sim = cJSON_GetObjectItem(root, "sim");
    ck_assert(cJSON_GetObjectItem(sim, "time_ps")->valuedouble == 123456789);
    ck_assert(cJSON_GetObjectItem(sim, "events")->valuedouble == 42);
    cJSON_Delete(root);
    /* the temp file was renamed away */
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ck_assert_int_ne(access(tmp, F_OK), 0);
    /* the human summary names every check */
    char sumpath[512];
    snprintf(sumpath, sizeof sumpath, "%s/summary.txt", dir);
    FILE *f = fopen(sumpath, "w");
    sim_report_print(r, f);
    fclose(f);
    const char *sum = slurp(sumpath);
    ck_assert_ptr_nonnull(strstr(sum, "[PASS] good: x=3"));
    ck_assert_ptr_nonnull(strstr(sum, "[FAIL] bad: lost"));
    ck_assert_ptr_nonnull(strstr(sum, "unit: FAILED"));
    sim_report_free(r);

    /* a passing report */
    r = sim_report_new("ok");
    sim_check(r, "fine", true, "yes");
    snprintf(path, sizeof path, "%s/ok.json", dir);
    ck_assert_int_eq(sim_report_write(r, path, NULL, 0, 0, 0), 0);
    root = parse_file(path);
    validate_schema(root, "ok");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "pass")));
    cJSON_Delete(root);
    sim_report_free(r);
}
END_TEST

START_TEST(test_report_unwritable_path)
{
    sim_report *r = sim_report_new("x");
    char path[512];
    snprintf(path, sizeof path, "%s/file", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/file/sub/x.json", dir);  /* a parent is a file */
    ck_assert_int_eq(sim_report_write(r, path, NULL, 0, 0, 0), -1);
    sim_report_free(r);
}
END_TEST

START_TEST(test_nonfinite_metric_aborts)
{
    sim_report *r = sim_report_new("x");
    sim_report_metric(r, "ratio", 0.0 / 0.0);
}
END_TEST

START_TEST(test_bench_write_merges)
{
    char path[512];
    snprintf(path, sizeof path, "%s/reports/bench.json", dir);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "events_per_s", 1);
    ck_assert_int_eq(sim_bench_write(path, "kernel_ring", a), 0);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "gbps", 2);
    ck_assert_int_eq(sim_bench_write(path, "pcie", b), 0);
    cJSON *a2 = cJSON_CreateObject();
    cJSON_AddNumberToObject(a2, "events_per_s", 3);
    ck_assert_int_eq(sim_bench_write(path, "kernel_ring", a2), 0);   /* replaced, pcie kept */
    cJSON *root = parse_file(path);
    ck_assert_int_eq(cJSON_GetArraySize(root), 2);
    ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "kernel_ring"), "events_per_s")->valuedouble == 3);
    ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pcie"), "gbps")->valuedouble == 2);
    cJSON_Delete(root);
    /* a file that is not a JSON object is started afresh */
    FILE *f = fopen(path, "w");
    fputs("[1,2", f);
    fclose(f);
    cJSON *c = cJSON_CreateObject();
    ck_assert_int_eq(sim_bench_write(path, "cxl", c), 0);
    root = parse_file(path);
    ck_assert_int_eq(cJSON_GetArraySize(root), 1);
    ck_assert(cJSON_IsObject(cJSON_GetObjectItem(root, "cxl")));
    cJSON_Delete(root);
}
END_TEST

/* ---------------------------------------------------------------- runner */

static char out[65536];

/* Runs simrun with args (a shell string); returns its exit status, output in out. */
static int simrun(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", LINKSTACK_SIMRUN, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int st = pclose(p);
    ck_assert_msg(WIFEXITED(st), "simrun %s did not exit normally", args);
    return WEXITSTATUS(st);
}

START_TEST(test_runner_exit_status)
{
    char args[1024];
    ck_assert_int_eq(simrun("no_such_test"), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown test 'no_such_test'"));
    ck_assert_ptr_nonnull(strstr(out, "kernel_ring"));
    ck_assert_int_eq(simrun("kernel_ring bogus=1"), 2);
    ck_assert_ptr_nonnull(strstr(out, "unknown parameter 'bogus'"));
    ck_assert_int_eq(simrun("kernel_ring nodes=1"), 2);
    ck_assert_ptr_nonnull(strstr(out, "parameter 'nodes': bad value '1'; allowed: an integer from 2 to 1048576"));
    ck_assert_int_eq(simrun("kernel_ring latency_ns=fast"), 2);
    ck_assert_int_eq(simrun("kernel_ring trace=maybe"), 2);
    ck_assert_int_eq(simrun("kernel_ring nodesonly"), 2);
    ck_assert_int_eq(simrun("--bogus-option kernel_ring"), 2);
    ck_assert_int_eq(simrun(""), 2);
    snprintf(args, sizeof args, "--out '%s' kernel_ring trace=0 nodes=2 credits=1 tokens=2", dir);
    ck_assert_int_eq(simrun(args), 2);                           /* the test's own input check */
    ck_assert_ptr_nonnull(strstr(out, "tokens=2 must be below nodes*credits=2"));
    ck_assert_int_eq(simrun("list"), 0);
    ck_assert_ptr_nonnull(strstr(out, "kernel_ring"));
    ck_assert_int_eq(simrun("kernel_ring help"), 0);
    ck_assert_ptr_nonnull(strstr(out, "latency_ns"));
    ck_assert_ptr_nonnull(strstr(out, "seed"));
    /* a passing run: status 0 and a valid report with every effective parameter */
    snprintf(args, sizeof args, "--quiet --out '%s' kernel_ring hops=2000 trace=0 seed=7", dir);
    ck_assert_int_eq(simrun(args), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/reports/kernel_ring.json", dir);
    cJSON *root = parse_file(path);
    validate_schema(root, "kernel_ring");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "pass")));
    const cJSON *params = cJSON_GetObjectItem(root, "params");
    ck_assert_int_eq(cJSON_GetObjectItem(params, "hops")->valueint, 2000);
    /* kernel_ring has no random streams: seed=7 is accepted but listed as not in effect */
    ck_assert_ptr_null(cJSON_GetObjectItem(params, "seed"));
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(params, "not_applicable"), "seed")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(params, "trace")));
    ck_assert_int_eq(cJSON_GetObjectItem(params, "nodes")->valueint, 16);
    ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "metrics"), "hops")->valuedouble == 2000);
    ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "sim"), "time_ps")->valuedouble > 0);
    cJSON_Delete(root);
    /* with trace on, the waves are written */
    snprintf(args, sizeof args, "--quiet --out '%s' kernel_ring hops=200", dir);
    ck_assert_int_eq(simrun(args), 0);
    snprintf(path, sizeof path, "%s/waves/kernel_ring.fst", dir);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_gt(st.st_size, 100);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_report_roundtrip);
    tcase_add_test(tc, test_report_unwritable_path);
    tcase_add_test_raise_signal(tc, test_nonfinite_metric_aborts, SIGABRT);
    tcase_add_test(tc, test_bench_write_merges);
    suite_add_tcase(s, tc);
    tc = tcase_create("runner");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_runner_exit_status);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
