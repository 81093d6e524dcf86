/* The fabric builder and its tests: bad descriptions refused (exit 2, or NULL
 * with a message naming the node / field), conservation on several
 * topologies, results reproducible from the seed, the zero-load latency. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_simrun.h"
#include "models/fabric/endpoint.h"
#include "models/fabric/fabric.h"
#include "sim/fabric.h"

static char out[1 << 16];
static char outdir[64];

static int simrun(const char *args)
{
    char a[1024];
    snprintf(a, sizeof a, "%s trace=0", args);
    return check_simrun(outdir, a, out, sizeof out);
}

/* Runs in its own process (check forks), before any kind is registered. */
START_TEST(unregistered_kind_refused)
{
    char err[512];
    topo *t = topo_from_string("fattree:4", "eth-400g", err, sizeof err);
    ck_assert_ptr_nonnull(t);
    sim_kernel *k = sim_kernel_new();
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP };
    ck_assert_ptr_null(sim_fabric_new(k, t, &fc, err, sizeof err));
    ck_assert_msg(strstr(err, "node '") && strstr(err, "kind '"), "the message names the node and kind: %s", err);
    sim_kernel_free(k);
    topo_free(t);
}
END_TEST

START_TEST(bad_routing_refused)
{
    char err[512];
    fabric_register_kinds();
    topo *t = topo_from_string("fattree:4", "eth-400g", err, sizeof err);
    sim_kernel *k = sim_kernel_new();
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_DOR };
    ck_assert_ptr_null(sim_fabric_new(k, t, &fc, err, sizeof err));
    ck_assert_msg(strstr(err, "routing"), "%s", err);
    sim_kernel_free(k);
    topo_free(t);
}
END_TEST

static const char *const bad_args[] = {
    "fabric_traffic topo=bogus:3",
    "fabric_traffic topo=ring:8 pattern=transpose",
    "fabric_traffic topo=ring:8 routing=ecmp",          /* cyclic channel dependencies on credited links */
    "fabric_traffic topo=torus2d:4x4 routing=single",
    "fabric_traffic topo=topologies/dgx_h100_like.json", /* endpoints with 18 links: not a traffic port */
    "fabric_traffic topo=fattree:4 routing=dor",
    "fabric_traffic warmup_us=5 duration_us=4",
    "fabric_traffic load=1.5",
    "fabric_bisection topo=nosuchfile.json",
};
START_TEST(bad_input_exits_2)
{
    int rc = simrun(bad_args[_i]);
    ck_assert_msg(rc == 2, "%s: exit %d (want 2)\n%s", bad_args[_i], rc, out);
    ck_assert_msg(strstr(out, "error"), "%s: no error message\n%s", bad_args[_i], out);
}
END_TEST

static const char *const good_args[] = {
    "fabric_traffic topo=ring:8 routing=dor duration_us=6 warmup_us=3",
    "fabric_traffic topo=torus2d:4x4 routing=dor duration_us=6 warmup_us=3",
    "fabric_traffic topo=fattree:4 routing=updown duration_us=6 warmup_us=3",
    "fabric_traffic topo=star:8 pattern=incast load=0.1 duration_us=6 warmup_us=3",
    "fabric_traffic topo=" LINKSTACK_SOURCE_DIR "/topologies/leafspine_2x2.json duration_us=6 warmup_us=3",
    "fabric_traffic topo=fattree:4 pattern=permutation load=0.9 duration_us=6 warmup_us=3",
    "fabric_traffic topo=fattree:4 load=0.005 duration_us=6 warmup_us=3",
    "fabric_bisection topo=torus2d:4x4 routing=dor duration_us=3 warmup_us=1",
    "fabric_bisection topo=ring:8 routing=dor duration_us=3 warmup_us=1",      /* victims of congestion spreading */
};
START_TEST(conservation_runs_pass)
{
    int rc = simrun(good_args[_i]);
    ck_assert_msg(rc == 0, "%s: exit %d\n%s", good_args[_i], rc, out);
    ck_assert_msg(strstr(out, "[PASS] conservation"), "%s: no conservation check\n%s", good_args[_i], out);
    ck_assert_msg(!strstr(out, "[FAIL]"), "%s\n%s", good_args[_i], out);
}
END_TEST

/* The metric lines (no wall-clock ones) of a run's output. */
static void metrics_of(const char *args, char *buf, size_t n)
{
    ck_assert_int_eq(simrun(args), 0);
    buf[0] = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(line, "wall") && !strstr(line, "sim time")) strncat(buf, line, n - strlen(buf) - 2), strcat(buf, "\n");
}

/* Torn down mid-run (what a failed check does): every packet the switches
 * queue, the links carry and the sources hold goes back to its pool once, so
 * every pool is freed strictly (a packet not given back is fatal) and ASan /
 * valgrind see no leak and no use after free. */
START_TEST(teardown_with_packets_inside)
{
    char err[512];
    fabric_register_kinds();
    topo *t = topo_from_string("fattree:4", "eth-400g", err, sizeof err);
    ck_assert_msg(t != NULL, "%s", err);
    sim_pattern pat;
    ck_assert_int_eq(sim_pattern_init(&pat, SIM_PAT_UNIFORM, t->n_endpoints, 1, err, sizeof err), 0);
    fabric_endpoint_cfg ec = { .pattern = &pat, .load = 1.0, .pkt_bytes = 4096, .end_ps = 3000000, .stop_ps = 3000000 };
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "endpoint", &ec } } };
    sim_kernel *k = sim_kernel_new();
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    sim_run(k, 1000000);   /* 1 us of 3: the network is full */
    uint64_t in_flight = 0;
    for (uint32_t l = 0; l < t->n_links; l++) in_flight += sim_link_in_flight(sim_fabric_link(f, l, 0)) + sim_link_in_flight(sim_fabric_link(f, l, 1));
    ck_assert_msg(in_flight > 0, "nothing in flight: the test would not test teardown");
    ck_assert_int_ne(sim_fabric_check(f, true, err, sizeof err), 0);   /* not drained */
    sim_fabric_free(f);
    sim_kernel_free(k);
    sim_pattern_free(&pat);
    topo_free(t);
}
END_TEST

START_TEST(reproducible_from_seed)
{
    static char a[1 << 16], b[1 << 16];
    const char *args = "fabric_traffic topo=fattree:4 load=0.7 seed=7 duration_us=6 warmup_us=3";
    metrics_of(args, a, sizeof a);
    metrics_of(args, b, sizeof b);
    ck_assert_msg(!strcmp(a, b), "same seed, different results:\n%s\n---\n%s", a, b);
    metrics_of("fabric_traffic topo=fattree:4 load=0.7 seed=8 duration_us=6 warmup_us=3", b, sizeof b);
    ck_assert_msg(strcmp(a, b), "another seed gave identical results");
}
END_TEST

int main(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/check_fabric.%d", (int)getpid());
    Suite *s = suite_create("fabric");
    TCase *tc = tcase_create("fabric");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, unregistered_kind_refused);
    tcase_add_test(tc, bad_routing_refused);
    tcase_add_loop_test(tc, bad_input_exits_2, 0, (int)(sizeof bad_args / sizeof bad_args[0]));
    tcase_add_loop_test(tc, conservation_runs_pass, 0, (int)(sizeof good_args / sizeof good_args[0]));
    tcase_add_test(tc, reproducible_from_seed);
    tcase_add_test(tc, teardown_with_packets_inside);
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
