/* NCCL's protocols in the collective engine (models/collective/proto.h,
 * tuning.h) on one DGX H100: LL has the lowest latency (one hop a step)
 * and half the bandwidth (4 data bytes in every 8), LL128 sits between,
 * Simple's fence makes it the slowest at 8 B and the fastest at 64 MiB;
 * proto=auto picks LL at small sizes and Simple or LL128 at large ones from
 * its own estimate; half and bfloat16 values are carried and reduced right,
 * and the seeded bug still shows; the rounding helpers round to nearest even. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/collective/collective.h"
#include "models/collective/tuning.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "check_run.h"

static char err[2048];

typedef struct run_out {
    double time_us;
    uint64_t wrong;
    bool checked;
    enum coll_proto proto;
    uint64_t flags, visible;
} run_out;

/* One all_reduce (or tree all_reduce) of `bytes` on a fresh dgx-h100. */
static unsigned g_burst = 8, g_channels = 0;   /* nvgpu burst_pkts and coll_cfg.channels of run_one */

static run_out run_one(bool tree, enum coll_proto proto, enum coll_dtype dt, uint64_t bytes, bool check, enum coll_inject inject)
{
    fabric_register_kinds();
    collective_register_kinds();
    topo *t = topo_from_string("dgx-h100", "nvlink4", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    sim_kernel *k = sim_kernel_new();
    nvgpu_cfg gc = NVGPU_CFG_DEFAULT;
    gc.burst_pkts = g_burst;
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "nvgpu", &gc }, { "switch", &sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s", err);
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.check = check;
    cc.inject = inject;
    cc.proto = proto;
    cc.dtype = dt;
    cc.gpus_per_node = tree ? 1 : 0;
    cc.channels = g_channels;
    coll_comm *cm = coll_comm_new(f, &cc, err, sizeof err);
    ck_assert_msg(cm, "%s", err);
    uint64_t count = bytes / coll_dtype_bytes(dt);
    coll_result r;
    int rc = tree ? coll_tree_all_reduce(cm, count, &r, err, sizeof err) : coll_run(cm, COLL_ALL_REDUCE, count, &r, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_msg(sim_fabric_check(f, true, err, sizeof err) == 0, "%s", err);
    run_out o = { (double)r.time_ps / 1e6, r.wrong, r.checked, r.proto, r.flags_sent, r.visible_sent };
    coll_comm_free(cm);
    sim_fabric_free(f);
    sim_kernel_free(k);
    topo_free(t);
    return o;
}

/* 8 bytes: LL < LL128 <= Simple in time; Simple pays its fence (a write
 * response and a flag after the data, two more hops a step) -- at least
 * twice LL's time; LL and LL128 send no flag and no write response. */
START_TEST(test_latency_order)
{
    for (unsigned tree = 0; tree < 2; tree++) {
        run_out s = run_one(tree, COLL_PROTO_SIMPLE, COLL_DTYPE_FLOAT, 8, false, COLL_INJECT_NONE);
        run_out l = run_one(tree, COLL_PROTO_LL, COLL_DTYPE_FLOAT, 8, false, COLL_INJECT_NONE);
        run_out m = run_one(tree, COLL_PROTO_LL128, COLL_DTYPE_FLOAT, 8, false, COLL_INJECT_NONE);
        fprintf(stderr, "%s 8 B: simple %.3f us, ll %.3f us, ll128 %.3f us\n", tree ? "tree" : "ring", s.time_us, l.time_us, m.time_us);
        ck_assert_msg(l.time_us <= m.time_us && m.time_us < s.time_us, "%s: ll %.3f, ll128 %.3f, simple %.3f us", tree ? "tree" : "ring",
                      l.time_us, m.time_us, s.time_us);
        ck_assert_msg(s.time_us >= 2.0 * l.time_us, "%s: simple %.3f us is not the fence's ~3 hops a step against ll's 1 (%.3f us)",
                      tree ? "tree" : "ring", s.time_us, l.time_us);
        ck_assert(s.flags > 0 && s.visible > 0);
        ck_assert_msg(l.flags == 0 && l.visible == 0 && m.flags == 0 && m.visible == 0, "ll/ll128 sent flag or fence writes");
    }
}
END_TEST

/* 64 MiB ring: busbw follows the wire efficiency -- LL about half of
 * Simple's (within [0.42, 0.55]), LL128 between LL and Simple's 1.0 x
 * (at least 0.85 of Simple). */
START_TEST(test_bandwidth_order)
{
    const uint64_t B = 64u << 20;
    run_out s = run_one(false, COLL_PROTO_SIMPLE, COLL_DTYPE_FLOAT, B, false, COLL_INJECT_NONE);
    run_out l = run_one(false, COLL_PROTO_LL, COLL_DTYPE_FLOAT, B, false, COLL_INJECT_NONE);
    run_out m = run_one(false, COLL_PROTO_LL128, COLL_DTYPE_FLOAT, B, false, COLL_INJECT_NONE);
    double rl = s.time_us / l.time_us, rm = s.time_us / m.time_us;
    fprintf(stderr, "ring 64 MiB: simple %.1f us, ll %.1f us (%.3f of its bw), ll128 %.1f us (%.3f)\n", s.time_us, l.time_us, rl, m.time_us, rm);
    ck_assert_msg(rl >= 0.42 && rl <= 0.55, "ll's busbw is %.3f of simple's; its wire carries 0.5 data", rl);
    ck_assert_msg(rm > rl && rm >= 0.85 && rm <= 1.02, "ll128's busbw is %.3f of simple's (ll %.3f); its wire carries 120/128 data", rm, rl);
}
END_TEST

/* proto=auto: LL at 8 B and 1 KiB; Simple or LL128 at 64 MiB (ring) -- and
 * the choice is what coll_tune_proto says (the engine's estimate), the run
 * reports it. At small sizes auto's time is LL's. */
START_TEST(test_auto_choice)
{
    static const uint64_t sizes[] = { 8, 1024, 64u << 20 };
    for (unsigned i = 0; i < 3; i++) {
        run_out a = run_one(false, COLL_PROTO_AUTO, COLL_DTYPE_FLOAT, sizes[i], false, COLL_INJECT_NONE);
        fprintf(stderr, "auto %llu B: %s, %.3f us\n", (unsigned long long)sizes[i], coll_proto_name(a.proto), a.time_us);
        if (i < 2) {
            ck_assert_msg(a.proto == COLL_PROTO_LL, "auto at %llu B chose %s", (unsigned long long)sizes[i], coll_proto_name(a.proto));
            run_out l = run_one(false, COLL_PROTO_LL, COLL_DTYPE_FLOAT, sizes[i], false, COLL_INJECT_NONE);
            ck_assert(fabs(a.time_us - l.time_us) < 1e-9);
        } else {
            ck_assert_msg(a.proto == COLL_PROTO_SIMPLE || a.proto == COLL_PROTO_LL128, "auto at 64 MiB chose %s", coll_proto_name(a.proto));
        }
    }
}
END_TEST

/* half and bfloat16: count = bytes / 2, the values reduced in the type (ring and
 * tree, every protocol), none wrong; skip_chunk makes some wrong. */
START_TEST(test_half_bf16_values)
{
    for (unsigned d = COLL_DTYPE_HALF; d <= COLL_DTYPE_BF16; d++)
        for (unsigned tree = 0; tree < 2; tree++)
            for (unsigned p = 0; p < COLL_PROTOS; p++) {
                run_out o = run_one(tree, (enum coll_proto)p, (enum coll_dtype)d, 12340, true, COLL_INJECT_NONE);
                ck_assert(o.checked);
                ck_assert_msg(o.wrong == 0, "%s %s %s: %llu wrong", coll_dtype_name((enum coll_dtype)d), tree ? "tree" : "ring",
                              coll_proto_name((enum coll_proto)p), (unsigned long long)o.wrong);
                run_out bad = run_one(tree, (enum coll_proto)p, (enum coll_dtype)d, 65536, true, COLL_INJECT_SKIP_CHUNK);
                ck_assert_msg(bad.wrong > 0, "%s %s %s: skip_chunk left every value right", coll_dtype_name((enum coll_dtype)d),
                              tree ? "tree" : "ring", coll_proto_name((enum coll_proto)p));
            }
}
END_TEST

/* LL and LL128 in bursts of packets give single packets' times within 1 %
 * (the ring on 2 channels, so a write is long enough to be cut in bursts). */
START_TEST(test_bursts_match_single_packets)
{
    static const uint64_t sizes[] = { 65536, 1u << 20 };
    g_channels = 2;
    for (unsigned p = COLL_PROTO_LL; p <= COLL_PROTO_LL128; p++)
        for (unsigned i = 0; i < 2; i++) {
            g_burst = 1;
            run_out one = run_one(false, (enum coll_proto)p, COLL_DTYPE_FLOAT, sizes[i], false, COLL_INJECT_NONE);
            g_burst = 8;
            run_out b = run_one(false, (enum coll_proto)p, COLL_DTYPE_FLOAT, sizes[i], false, COLL_INJECT_NONE);
            double d = fabs(b.time_us - one.time_us) / one.time_us;
            ck_assert_msg(d <= 0.01, "%s %llu B: bursts of 8 %.3f us, single packets %.3f us (%.2f %%)", coll_proto_name((enum coll_proto)p),
                          (unsigned long long)sizes[i], b.time_us, one.time_us, 100 * d);
        }
    g_channels = 0;
}
END_TEST

/* The conversions: round to nearest, ties to even; half's range and subnormals. */
START_TEST(test_rounding)
{
    /* half: 11 significant bits */
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 1.0f + 0x1p-11f) == 1.0f);                  /* tie: to even */
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);    /* tie: to even (up) */
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f);
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 2049.0f) == 2048.0f);
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 2051.0f) == 2052.0f);
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 65504.0f) == 65504.0f);
    ck_assert(isinf(coll_dtype_round(COLL_DTYPE_HALF, 65520.0f)));
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 0x1p-25f) == 0.0f);                          /* half the smallest subnormal: tie to 0 */
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, 3 * 0x1p-26f) == 0x1p-24f);
    ck_assert(coll_dtype_round(COLL_DTYPE_HALF, -1.0f - 3 * 0x1p-11f) == -1.0f - 0x1p-9f);
    /* bfloat16: 8 significant bits */
    ck_assert(coll_dtype_round(COLL_DTYPE_BF16, 1.0f + 0x1p-8f) == 1.0f);
    ck_assert(coll_dtype_round(COLL_DTYPE_BF16, 1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
    ck_assert(coll_dtype_round(COLL_DTYPE_BF16, 257.0f) == 256.0f);
    ck_assert(coll_dtype_round(COLL_DTYPE_BF16, 259.0f) == 260.0f);
    ck_assert(coll_dtype_round(COLL_DTYPE_FLOAT, 1.0f + 0x1p-23f) == 1.0f + 0x1p-23f);
    ck_assert(coll_dtype_add(COLL_DTYPE_BF16, 256.0f, 1.0f) == 256.0f);   /* the sum rounds to the type */
    ck_assert_uint_eq(coll_dtype_bytes(COLL_DTYPE_HALF), 2);
    ck_assert_uint_eq(coll_dtype_bytes(COLL_DTYPE_FLOAT), 4);
    /* the wire: LL twice the data in whole 8-byte stores, LL128 128 per 120, Simple as is */
    ck_assert_uint_eq(coll_proto_payload_bytes(COLL_PROTO_LL, 8), 16);
    ck_assert_uint_eq(coll_proto_payload_bytes(COLL_PROTO_LL, 6), 16);
    ck_assert_uint_eq(coll_proto_payload_bytes(COLL_PROTO_LL128, 240), 256);
    ck_assert_uint_eq(coll_proto_payload_bytes(COLL_PROTO_LL128, 241), 384);
    ck_assert_uint_eq(coll_proto_payload_bytes(COLL_PROTO_SIMPLE, 241), 241);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_proto");
    TCase *tc = tcase_create("protocols");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_rounding);
    tcase_add_test(tc, test_latency_order);
    tcase_add_test(tc, test_bandwidth_order);
    tcase_add_test(tc, test_auto_choice);
    tcase_add_test(tc, test_half_bf16_values);
    tcase_add_test(tc, test_bursts_match_single_packets);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
