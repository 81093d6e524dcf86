/* Sweeps (sim/sweep.h): the axes' expansion, and simrun --sweep as a user
 * runs it: merged report and CSV, refusal before anything runs, a failing
 * point named, and the same points whatever number of MPI ranks ran them. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/report.h"
#include "sim/sweep.h"
#include "tests/check_run.h"
#include "tests/check_simrun.h"

static int parse(sim_sweep_axes *a, const char *line, char *err, size_t n)
{
    char *copy = strdup(line), *args[16];
    int nargs = 0;
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t && nargs < 16; t = strtok_r(NULL, " ", &save)) args[nargs++] = t;
    int rc = sim_sweep_axes_parse(a, nargs, args, err, n);
    free(copy);
    return rc;
}

START_TEST(axes_cross_product_last_fastest)
{
    sim_sweep_axes a;
    char err[256];
    ck_assert_int_eq(parse(&a, "k=1,2,3 j=a,b", err, sizeof err), 0);
    ck_assert_uint_eq(a.npoints, 6);
    const char *want[6][2] = { { "1", "a" }, { "1", "b" }, { "2", "a" }, { "2", "b" }, { "3", "a" }, { "3", "b" } };
    for (unsigned p = 0; p < 6; p++) {
        ck_assert_str_eq(sim_sweep_axes_value(&a, p, 0), want[p][0]);
        ck_assert_str_eq(sim_sweep_axes_value(&a, p, 1), want[p][1]);
    }
    sim_sweep_axes_free(&a);
}
END_TEST

START_TEST(axes_ranges_and_bar_lists)
{
    sim_sweep_axes a;
    char err[256];
    ck_assert_int_eq(parse(&a, "bytes=8..128*2 load=0.1..0.35+0.05 topo=server:gpus=4,nics=4|ring:8 path=../x.json", err, sizeof err), 0);
    ck_assert_uint_eq(a.nvalues[0], 5);
    ck_assert_str_eq(a.values[0][0], "8");
    ck_assert_str_eq(a.values[0][4], "128");
    ck_assert_uint_eq(a.nvalues[1], 6);   /* 0.1 0.15 ... 0.35 */
    ck_assert_str_eq(a.values[1][5], "0.35");
    ck_assert_uint_eq(a.nvalues[2], 2);
    ck_assert_str_eq(a.values[2][0], "server:gpus=4,nics=4");
    ck_assert_str_eq(a.values[3][0], "../x.json");   /* ".." that is not a number range */
    ck_assert_uint_eq(a.npoints, 60);
    sim_sweep_axes_free(&a);
    ck_assert_int_eq(parse(&a, "gpus=1..4", err, sizeof err), 0);   /* no step: +1 */
    ck_assert_uint_eq(a.nvalues[0], 4);
    ck_assert_str_eq(a.values[0][3], "4");
    sim_sweep_axes_free(&a);
}
END_TEST

START_TEST(axes_bad_input_named)
{
    sim_sweep_axes a;
    char err[256];
    const char *bad[] = { "k=1,,2", "k=1 k=2", "=3", "k", "k=8..4*2", "k=0..8*2", "k=1..8*1", "k=1..9+0", "k=1..100000+1" };
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        ck_assert_msg(parse(&a, bad[i], err, sizeof err) == -1, "'%s' accepted", bad[i]);
        ck_assert_msg(strlen(err) > 10, "'%s': no reason given", bad[i]);
    }
    ck_assert_int_eq(parse(&a, "a=1..400+1 b=1..300+1", err, sizeof err), -1);   /* 120 000 points */
    ck_assert_ptr_nonnull(strstr(err, "100000"));
}
END_TEST

static char dir[] = "/tmp/check_sweep_XXXXXX";
static char out[1 << 16];

static cJSON *read_merged(const char *test)
{
    char path[512];
    snprintf(path, sizeof path, "%s/reports/%s.sweep.json", dir, test);
    return sim_json_read_file(path);
}

START_TEST(sweep_merges_points_in_order)
{
    ck_assert_int_eq(check_simrun(dir, "--sweep kernel_ring nodes=4,8 tokens=1,2 hops=1000", out, sizeof out), 0);
    cJSON *m = read_merged("kernel_ring");
    ck_assert_ptr_nonnull(m);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(m, "pass")));
    const cJSON *pts = cJSON_GetObjectItem(m, "points");
    ck_assert_int_eq(cJSON_GetArraySize(pts), 4);
    const double nodes[4] = { 4, 4, 8, 8 }, tokens[4] = { 1, 2, 1, 2 };
    for (int p = 0; p < 4; p++) {
        const cJSON *pt = cJSON_GetArrayItem(pts, p), *params = cJSON_GetObjectItem(pt, "params");
        /* the point's effective parameters are the swept values: the run really had them */
        ck_assert_double_eq(cJSON_GetObjectItem(params, "nodes")->valuedouble, nodes[p]);
        ck_assert_double_eq(cJSON_GetObjectItem(params, "tokens")->valuedouble, tokens[p]);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(params, "trace")));
        ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(pt, "metrics"), "hops")->valuedouble, 1000);
    }
    /* twice the tokens, twice the hop rate: the points are different runs */
    double r0 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 0), "metrics"), "hops_per_us")->valuedouble;
    double r1 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, 1), "metrics"), "hops_per_us")->valuedouble;
    ck_assert_double_gt(r1, 1.8 * r0);
    cJSON_Delete(m);
    char path[512], line[4096];
    snprintf(path, sizeof path, "%s/reports/kernel_ring.sweep.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_msg(!strncmp(line, "point,nodes,tokens,hops,pass,metrics.hops,", 42), "CSV header: %s", line);
    unsigned rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    ck_assert_uint_eq(rows, 4);
}
END_TEST

START_TEST(sweep_refuses_before_running)
{
    char path[512];
    snprintf(path, sizeof path, "rm -rf '%s/reports/kernel_ring.sweep'*", dir);
    ck_assert_int_eq(system(path), 0);
    ck_assert_int_eq(check_simrun(dir, "--sweep kernel_ring nodes=4,1 hops=1000", out, sizeof out), 2);
    ck_assert_msg(strstr(out, "point p1 of 2 (nodes=1 hops=1000) refused") && strstr(out, "from 2 to"), "%s", out);
    snprintf(path, sizeof path, "%s/reports/kernel_ring.sweep/p0.json", dir);
    ck_assert_msg(access(path, F_OK) != 0, "point 0 ran although point 1 was refused");
    snprintf(path, sizeof path, "%s/reports/kernel_ring.sweep.json", dir);
    ck_assert_msg(access(path, F_OK) != 0, "a merged report for a refused sweep");
    ck_assert_int_eq(check_simrun(dir, "--sweep kernel_ring nodes=4 nodes=8", out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "given twice"));
}
END_TEST

START_TEST(sweep_names_failing_point)
{
    ck_assert_int_eq(check_simrun(dir, "--regress --sweep cxl_random inject=none,go_during_snoop", out, sizeof out), 1);
    ck_assert_msg(strstr(out, "FAIL sweep cxl_random point p1 (inject=go_during_snoop): failed checks: no_violations"), "%s", out);
    ck_assert_ptr_null(strstr(out, "point p0 ("));
    cJSON *m = read_merged("cxl_random");
    ck_assert_ptr_nonnull(m);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(m, "pass")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "points"), 0), "pass")));
    cJSON_Delete(m);
}
END_TEST

#ifdef LINKSTACK_MPIRUN_SH
/* Drops what the wall clock measured (wall_s, pkts_per_wall_s, ...). */
static void drop_wall(cJSON *o)
{
    for (cJSON *c = o->child, *next; c; c = next) {
        next = c->next;
        if (c->string && strstr(c->string, "wall")) cJSON_Delete(cJSON_DetachItemViaPointer(o, c));
        else if (cJSON_IsObject(c) || cJSON_IsArray(c)) drop_wall(c);
    }
}

/* Every field of every point but wall time, compared. */
static void same_points(const cJSON *a, const cJSON *b)
{
    ck_assert_int_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
    for (int p = 0; p < cJSON_GetArraySize(a); p++) {
        cJSON *x = cJSON_Duplicate(cJSON_GetArrayItem(a, p), 1), *y = cJSON_Duplicate(cJSON_GetArrayItem(b, p), 1);
        drop_wall(x);
        drop_wall(y);
        ck_assert_msg(cJSON_Compare(x, y, 1), "point %d differs between rank counts", p);
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
}

START_TEST(sweep_over_ranks_same_points)
{
    const char *args = "--sweep fabric_traffic topo=ring:4,torus2d:3x3 routing=dor load=0.2,0.5 duration_us=2 warmup_us=0.5";
    ck_assert_int_eq(check_simrun(dir, args, out, sizeof out), 0);
    cJSON *one = read_merged("fabric_traffic");
    ck_assert_ptr_nonnull(one);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' 3 '%s' --quiet --out '%s' %s > '%s/mpi.log' 2>&1", LINKSTACK_MPIRUN_SH, LINKSTACK_SIMRUN, dir, args, dir);
    ck_assert_int_eq(system(cmd), 0);
    cJSON *three = read_merged("fabric_traffic");
    ck_assert_ptr_nonnull(three);
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(three, "sweep"), "ranks")->valuedouble, 3);
    same_points(cJSON_GetObjectItem(one, "points"), cJSON_GetObjectItem(three, "points"));
    cJSON_Delete(one);
    cJSON_Delete(three);
}
END_TEST

/* A test that cannot cut its system over ranks would run once per rank under mpirun: refused. */
START_TEST(single_test_over_ranks_refused)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' 2 '%s' --quiet --out '%s' kernel_ring > '%s/mpi1.log' 2>&1", LINKSTACK_MPIRUN_SH, LINKSTACK_SIMRUN, dir, dir);
    int st = system(cmd);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    snprintf(cmd, sizeof cmd, "grep -q 'test kernel_ring does not run over MPI ranks' '%s/mpi1.log'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("axes");
    tcase_add_test(tc, axes_cross_product_last_fastest);
    tcase_add_test(tc, axes_ranges_and_bar_lists);
    tcase_add_test(tc, axes_bad_input_named);
    suite_add_tcase(s, tc);
    tc = tcase_create("simrun");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, sweep_merges_points_in_order);
    tcase_add_test(tc, sweep_refuses_before_running);
    tcase_add_test(tc, sweep_names_failing_point);
#ifdef LINKSTACK_MPIRUN_SH
    tcase_add_test(tc, sweep_over_ranks_same_points);
    tcase_add_test(tc, single_test_over_ranks_refused);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    int rc = run_suite(suite());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) rc = 1;
    return rc;
}
