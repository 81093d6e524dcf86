/* The CXL link's physical layer, through simrun: a 68 B flit is serialised at
 * lanes x GT/s after 128b/130b encoding at every rate the 68-byte flit mode
 * defines (8, 16, 32 GT/s), and the rates it does not model or CXL does not
 * define are refused with exit 2 and a message saying why.
 *
 * The expected latencies are computed here from the spec's framing (68 B =
 * 2 B protocol ID + 4 x 16 B slots + 2 B CRC) and encoding (128/130), not
 * from anything the model or the test bench reports. A stream of lines must
 * use all-data flits: 64 B of data per 68 B flit once a whole flit of data
 * is owed. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/cxl/cxl_sys.h"

#include "check_simrun.h"

static char out[1 << 16];
static char outdir[64];

static int simrun(const char *args)
{
    char with_trace[1024];
    snprintf(with_trace, sizeof with_trace, "%s trace=0", args);
    return check_simrun(outdir, with_trace, out, sizeof out);
}

/* metrics.<name> of reports/<test>.json */
static double report_metric(const char *test, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/reports/%s.json", outdir, test);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no report %s", path);
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "metrics"), name);
    ck_assert_msg(cJSON_IsNumber(m), "%s: no metric %s", path, name);
    double v = m->valuedouble;
    cJSON_Delete(j);
    return v;
}

/* One 68 B flit in ps as the link times it (rounded up to a whole ps). */
static double flit_ps(unsigned lanes, double gts)
{
    double bits = 68.0 * 8.0 * 130.0 / 128.0;   /* 128b/130b: 2 sync bits per 128 */
    return ceil(bits * 1000.0 / (lanes * gts) - 1e-6);
}

static const struct { unsigned lanes; double gts; } links[] = {
    { 16, 32 }, { 16, 16 }, { 8, 8 }, { 1, 8 }, { 4, 32 },
};

/* A device miss to memory crosses the link twice: RdShared (one flit) up,
 * data + GO (two flits) down: 2L + 3S + H + M + 2D. */
START_TEST(miss_latency_has_128b130b_flits)
{
    const double L = 25, H = 15, M = 100, D = 5;
    char args[256];
    snprintf(args, sizeof args, "cxl_latency scenario=miss lanes=%u gts=%g link_ns=%g home_ns=%g mem_ns=%g dev_ns=%g",
             links[_i].lanes, links[_i].gts, L, H, M, D);
    int rc = simrun(args);
    ck_assert_msg(rc == 0, "%s: exit %d\n%s", args, rc, out);
    double S = flit_ps(links[_i].lanes, links[_i].gts) / 1000.0;
    double expect = 2 * L + 3 * S + H + M + 2 * D;
    double got = report_metric("cxl_latency", "latency_ns");
    ck_assert_msg(fabs(got - expect) < 0.0005, "%s: latency %.3f ns, 2L + 3S + H + M + 2D with S = 68 B x 130/128 = %.3f ns",
                  args, got, expect);
    /* and not what the raw rate would give (the encoding is 1.6 %, 3S apart) */
    double raw_S = ceil(68.0 * 8.0 * 1000.0 / (links[_i].lanes * links[_i].gts) - 1e-6) / 1000.0;
    ck_assert_msg(fabs(got - (2 * L + 3 * raw_S + H + M + 2 * D)) > 0.0005, "%s: latency matches the unencoded rate", args);
}
END_TEST

/* A peer-owned line (4 link crossings) waits for 6 flits at 130/128. */
START_TEST(peer_m_latency_has_128b130b_flits)
{
    int rc = simrun("cxl_latency scenario=peer_m lanes=2 gts=16");
    ck_assert_msg(rc == 0, "exit %d\n%s", rc, out);
    double S = flit_ps(2, 16) / 1000.0;
    double expect = 4 * 25 + 6 * S + 15 + 3 * 5;   /* 4L + 2 S1 + 2 S2 + H + 3D, defaults */
    double got = report_metric("cxl_latency", "latency_ns");
    ck_assert_msg(fabs(got - expect) < 0.0005, "peer_m x2 16 GT/s: %.3f ns, expected %.3f ns", got, expect);
}
END_TEST

/* 16 ItoMWr at once: 16 requests (79 b, one per slot: 4 flits), then 16 lines
 * of write data (64 data slots = 16 flits, their 17 b headers go 4 at a time
 * in protocol flits). Without all-data flits a line costs 1.5 flits. */
START_TEST(write_stream_uses_all_data_flits)
{
    sim_kernel *k = sim_kernel_new();
    cxl_sys_cfg cfg;
    cxl_sys_cfg_defaults(&cfg);
    cfg.devices = 1;
    cfg.cores = 1;
    cfg.lines = 16;
    cfg.lanes = 1;
    cfg.gts = 8;
    cxl_sys *s = cxl_sys_new(k, &cfg, NULL);
    for (uint32_t l = 0; l < 16; l++) ck_assert(cxl_sys_issue(s, 0, l, OP_ITOMWR, (uint8_t)(l + 1)));
    sim_run(k, SIM_TIME_MAX);
    cxl_sys_stats st;
    cxl_sys_stats_get(s, &st);
    char why[256] = "";
    ck_assert_msg(cxl_sys_final_check(s, why, sizeof why) == 0, "%s", why);
    ck_assert_uint_eq(st.ops_done, 16);
    ck_assert_msg(st.flits_d2h >= 4 + 16 && st.flits_d2h <= 4 + 16 + 4,
                  "16 requests + 16 lines took %llu D2H flits; 4 + 16 all-data + at most 4 protocol flits expected",
                  (unsigned long long)st.flits_d2h);
    cxl_sys_free(s);
    sim_kernel_free(k);
}
END_TEST

static const struct { const char *args, *must_say; } refused[] = {
    { "cxl_latency gts=64", "256-byte flit mode" },
    { "cxl_contention gts=64", "not modelled" },
    { "cxl_contention gts=5", "not a CXL rate" },
    { "cxl_latency gts=2.5", "not a CXL rate" },
    { "cxl_latency gts=5", "not a CXL rate" },
    { "cxl_contention gts=2.5", "allowed: 8, 16, 32" },
    { "cxl_latency gts=12", "allowed: 8, 16, 32" },
};

START_TEST(unmodelled_rates_exit_2)
{
    int rc = simrun(refused[_i].args);
    ck_assert_msg(rc == 2, "%s: exit %d (expected 2)\n%s", refused[_i].args, rc, out);
    ck_assert_msg(strstr(out, refused[_i].must_say) != NULL, "%s: message does not say \"%s\":\n%s", refused[_i].args,
                  refused[_i].must_say, out);
    ck_assert_msg(strstr(out, "gts=") != NULL, "%s: message does not name the parameter:\n%s", refused[_i].args, out);
}
END_TEST

int main(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/check_cxl_link.%d", (int)getpid());
    Suite *s = suite_create("cxl_link");
    TCase *tc = tcase_create("link");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, miss_latency_has_128b130b_flits, 0, (int)(sizeof links / sizeof links[0]));
    tcase_add_test(tc, peer_m_latency_has_128b130b_flits);
    tcase_add_test(tc, write_stream_uses_all_data_flits);
    tcase_add_loop_test(tc, unmodelled_rates_exit_2, 0, (int)(sizeof refused / sizeof refused[0]));
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
