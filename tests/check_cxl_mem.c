/* CXL.mem (models/cxl/cxl_mem.h) against numbers worked out by hand: the HDM
 * decoder's device and device address for a few host addresses; the flits of
 * one MemRd (one flit out, MemData two back) and one MemWr (two out, Cmp one
 * back); a burst of loads queueing at a slow medium, whose last one finishes
 * (n - 1) line times after the idle latency; credits that run out stall the
 * M2S port; the end check fails while requests are outstanding; and the
 * configurations the hardware lacks exit 2 with a message naming the key. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cxl/cxl_mem.h"

#include "check_simrun.h"

static char out[1 << 16];
static char outdir[64];

START_TEST(hdm_decoder_hand_values)
{
    /* 2 ways of 256 B: blocks alternate; the device address packs a device's blocks */
    ck_assert_uint_eq(cxl_mem_hdm_device(0, 2, 256), 0);
    ck_assert_uint_eq(cxl_mem_hdm_device(256, 2, 256), 1);
    ck_assert_uint_eq(cxl_mem_hdm_device(512, 2, 256), 0);
    ck_assert_uint_eq(cxl_mem_hdm_dpa(512, 2, 256), 256);
    ck_assert_uint_eq(cxl_mem_hdm_device(300, 2, 256), 1);
    ck_assert_uint_eq(cxl_mem_hdm_dpa(300, 2, 256), 44);
    /* 3 ways of 4 KB: block 3 is device 0's second block */
    ck_assert_uint_eq(cxl_mem_hdm_device(3 * 4096 + 320, 3, 4096), 0);
    ck_assert_uint_eq(cxl_mem_hdm_dpa(3 * 4096 + 320, 3, 4096), 4096 + 320);
    ck_assert_uint_eq(cxl_mem_hdm_device(5 * 4096, 3, 4096), 2);
    ck_assert_uint_eq(cxl_mem_hdm_dpa(5 * 4096, 3, 4096), 4096);
    /* 1 way: the identity */
    ck_assert_uint_eq(cxl_mem_hdm_dpa(123456 * 64, 1, 4096), 123456 * 64);
}
END_TEST

static cxl_mem_cfg one_device(void)
{
    cxl_mem_cfg c;
    cxl_mem_cfg_defaults(&c);
    c.devices = 1;
    c.tags = 128;
    return c;
}

START_TEST(one_request_flits)
{
    for (int write = 0; write < 2; write++) {
        sim_kernel *k = sim_kernel_new();
        cxl_mem_cfg cfg = one_device();
        cxl_mem_sys *s = cxl_mem_sys_new(k, &cfg, NULL);
        ck_assert(cxl_mem_issue(s, CXL_MEM_HDM, 0, write));
        sim_run(k, SIM_TIME_MAX);
        cxl_mem_stats st;
        cxl_mem_stats_get(s, &st);
        /* an 87-bit request header fits slot 0 of one flit; a header with its 64 B
         * line needs slot 0 + three data slots and the fourth data slot in a second flit */
        ck_assert_uint_eq(st.dev[0].flits_m2s, write ? 2 : 1);
        ck_assert_uint_eq(st.dev[0].flits_s2m, write ? 1 : 2);
        char why[256] = "";
        ck_assert_msg(cxl_mem_final_check(s, why, sizeof why) == 0, "%s", why);
        cxl_mem_sys_free(s);
        sim_kernel_free(k);
    }
}
END_TEST

typedef struct last_done {
    sim_kernel *k;
    sim_time_ps last_ps;
    unsigned n;
} last_done;

static void note_done(void *ctx, unsigned target, uint64_t addr, bool write, unsigned device, sim_time_ps issued_ps,
                      const cxl_path *path)
{
    (void)target, (void)addr, (void)write, (void)device, (void)issued_ps, (void)path;
    last_done *d = ctx;
    d->last_ps = sim_now(d->k);
    d->n++;
}

/* 100 loads at once at a 6.4 GB/s medium (10 ns a line, much slower than the
 * link's ~1 ns a flit): they reach the device faster than it serves them, so
 * the last one starts 99 line times after the first and ends 99 x 10 ns after
 * an idle load would: H + S1 + L + ctrl + media + S2 + L + 990 ns. */
START_TEST(slow_media_queues_a_burst)
{
    sim_kernel *k = sim_kernel_new();
    cxl_mem_cfg cfg = one_device();
    cfg.media_GBps = 6.4;
    cxl_mem_sys *s = cxl_mem_sys_new(k, &cfg, NULL);
    last_done d = { k, 0, 0 };
    cxl_mem_sys_set_done(s, note_done, &d);
    for (unsigned i = 0; i < 100; i++) ck_assert(cxl_mem_issue(s, CXL_MEM_HDM, i * 64, false));
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(d.n, 100);
    double S1 = ceil(68.0 / (16 * 32 / 8.0 * 128.0 / 130.0) * 1000.0 - 1e-6) / 1000.0;
    double idle = cfg.home_ns + S1 + cfg.link_ns + cfg.ctrl_ns + cfg.media_ns + 2 * S1 + cfg.link_ns;
    double want = idle + 99 * 10.0;
    ck_assert_msg(fabs(d.last_ps / 1000.0 - want) < 0.002, "last load done at %.3f ns, expected %.3f", d.last_ps / 1000.0,
                  want);
    char why[256] = "";
    ck_assert_msg(cxl_mem_final_check(s, why, sizeof why) == 0, "%s", why);
    cxl_mem_sys_free(s);
    sim_kernel_free(k);
}
END_TEST

/* With 2 M2S Req credits and 100 loads queued at a slow medium the host's
 * port runs out of credits (stall time > 0); every load still completes. */
START_TEST(credits_run_out_and_come_back)
{
    sim_kernel *k = sim_kernel_new();
    cxl_mem_cfg cfg = one_device();
    cfg.media_GBps = 6.4;
    cfg.credits_m2s = 2;
    cxl_mem_sys *s = cxl_mem_sys_new(k, &cfg, NULL);
    for (unsigned i = 0; i < 100; i++) ck_assert(cxl_mem_issue(s, CXL_MEM_HDM, i * 64, false));
    sim_run(k, SIM_TIME_MAX);
    cxl_mem_stats st;
    cxl_mem_stats_get(s, &st);
    ck_assert_msg(st.dev[0].credit_stall_ns[0] > 0, "no M2S Req credit stall with 2 credits");
    ck_assert_uint_eq(st.dev[0].memdata_in, 100);
    char why[256] = "";
    ck_assert_msg(cxl_mem_final_check(s, why, sizeof why) == 0, "%s", why);
    cxl_mem_sys_free(s);
    sim_kernel_free(k);
}
END_TEST

/* The end check is not vacuous: half-way, requests are outstanding and it says so. */
START_TEST(final_check_sees_outstanding_requests)
{
    sim_kernel *k = sim_kernel_new();
    cxl_mem_cfg cfg = one_device();
    cxl_mem_sys *s = cxl_mem_sys_new(k, &cfg, NULL);
    ck_assert(cxl_mem_issue(s, CXL_MEM_HDM, 0, false));
    ck_assert(cxl_mem_issue(s, CXL_MEM_HDM, 64, true));
    sim_run(k, SIM_NS(100));
    char why[256] = "";
    ck_assert_uint_gt(cxl_mem_final_check(s, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "outstanding") != NULL, "%s", why);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_msg(cxl_mem_final_check(s, why, sizeof why) == 0, "%s", why);
    cxl_mem_sys_free(s);
    sim_kernel_free(k);
}
END_TEST

static const struct { const char *args, *must_say; } refused[] = {
    { "cxl_mem devices=5", "devices=5" },
    { "cxl_mem devices=7", "allowed: 1, 2, 3, 4, 6, 8" },
    { "cxl_mem interleave_bytes=3000", "interleave_bytes=3000" },
    { "cxl_mem devices=1 interleave_bytes=256", "does not apply" },
    { "cxl_mem gts=64", "256-byte flit mode" },
    { "cxl_mem lanes=3", "lanes=3" },
};

START_TEST(unbuilt_configurations_exit_2)
{
    char args[256];
    snprintf(args, sizeof args, "%s trace=0", refused[_i].args);
    int rc = check_simrun(outdir, args, out, sizeof out);
    ck_assert_msg(rc == 2, "%s: exit %d (expected 2)\n%s", refused[_i].args, rc, out);
    ck_assert_msg(strstr(out, refused[_i].must_say) != NULL, "%s: message does not say \"%s\":\n%s", refused[_i].args,
                  refused[_i].must_say, out);
}
END_TEST

int main(void)
{
    snprintf(outdir, sizeof outdir, "/tmp/check_cxl_mem.%d", (int)getpid());
    Suite *s = suite_create("cxl_mem");
    TCase *tc = tcase_create("mem");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, hdm_decoder_hand_values);
    tcase_add_test(tc, one_request_flits);
    tcase_add_test(tc, slow_media_queues_a_burst);
    tcase_add_test(tc, credits_run_out_and_come_back);
    tcase_add_test(tc, final_check_sees_outstanding_requests);
    tcase_add_loop_test(tc, unbuilt_configurations_exit_2, 0, (int)(sizeof refused / sizeof refused[0]));
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
