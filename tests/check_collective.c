/* The collective engine (models/collective): the dgx-h100 generator's shape;
 * bursts of NVLink packets against single packets (the same times within
 * 1 % on small sizes); values reduced right on every op, wrong with the
 * seeded bug; one channel's busbw at the link's packet goodput. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "check_run.h"

static char err[2048];

typedef struct run_out {
    double time_us;
    uint64_t wrong;
    bool checked;
} run_out;

/* One collective of `bytes` on a fresh dgx-h100; fails the test on any conservation error. */
static run_out run_one(enum coll_op op, uint64_t bytes, unsigned burst, unsigned channels, bool check, enum coll_inject inject)
{
    fabric_register_kinds();
    collective_register_kinds();
    topo *t = topo_from_string("dgx-h100", "nvlink4", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    sim_kernel *k = sim_kernel_new();
    nvgpu_cfg gc = NVGPU_CFG_DEFAULT;
    gc.burst_pkts = burst;
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "nvgpu", &gc }, { "switch", &sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s", err);
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.channels = channels;
    cc.check = check;
    cc.inject = inject;
    coll_comm *cm = coll_comm_new(f, &cc, err, sizeof err);
    ck_assert_msg(cm, "%s", err);
    uint64_t count = bytes / 4;
    if (op != COLL_ALL_REDUCE) count -= count % coll_comm_ranks(cm);
    coll_result r;
    ck_assert_msg(coll_run(cm, op, count, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_fabric_check(f, true, err, sizeof err) == 0, "%s", err);
    run_out o = { (double)r.time_ps / 1e6, r.wrong, r.checked };
    coll_comm_free(cm);
    sim_fabric_free(f);
    sim_kernel_free(k);
    topo_free(t);
    return o;
}

START_TEST(test_dgx_h100_shape)
{
    fabric_register_kinds();
    collective_register_kinds();
    topo *t = topo_from_string("dgx-h100", "ib-ndr", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    ck_assert_uint_eq(t->n_endpoints, 8);
    ck_assert_uint_eq(t->n_nodes, 12);
    ck_assert_uint_eq(t->n_links, 8 * 18);
    static const unsigned ports[4] = { 40, 32, 32, 40 };
    for (unsigned s = 0; s < 4; s++) {
        char name[8];
        snprintf(name, sizeof name, "nvs%u", s);
        int id = topo_node_find(t, name);
        ck_assert_int_ge(id, 0);
        ck_assert_uint_eq(t->nodes[id].nports, ports[s]);
    }
    for (unsigned l = 0; l < t->n_links; l++) {
        ck_assert_str_eq(t->links[l].preset->name, "nvlink4");   /* the machine's links, whatever the default preset */
        ck_assert_double_eq_tol(t->links[l].GBps, 25.0, 1e-9);
    }
    /* port p of every GPU is on the same switch: 5/4/4/5 in port order */
    for (unsigned g = 0; g < 8; g++)
        for (unsigned p = 0; p < 18; p++) {
            unsigned pp;
            int peer = topo_peer(t, (uint32_t)g, p, &pp);
            unsigned want = p < 5 ? 0 : p < 9 ? 1 : p < 13 ? 2 : 3;
            ck_assert_int_eq(peer, 8 + (int)want);
        }
    topo_free(t);
    /* nodes=2 needs the network's kinds (check_coll_nodes.c builds it) */
    ck_assert_ptr_null(topo_from_string("dgx-h100:nodes=2", "nvlink4", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "gpu_nic and ib_switch are not registered"));
}
END_TEST

START_TEST(test_bursts_match_single_packets)
{
    /* 18 channels: chunks of a few packets (bursts of 1); 2 channels: whole 128 KiB chunks (bursts of 8 and more) */
    static const uint64_t sizes[] = { 4096, 65536, 1u << 20, 4u << 20, 1u << 20, 4u << 20 };
    static const unsigned chans[] = { 0, 0, 0, 0, 2, 2 };
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (unsigned op = 0; op < 3; op++) {
            run_out one = run_one((enum coll_op)op, sizes[i], 1, chans[i], false, COLL_INJECT_NONE);
            for (unsigned burst = 4; burst <= 32; burst *= 2) {
                run_out b = run_one((enum coll_op)op, sizes[i], burst, chans[i], false, COLL_INJECT_NONE);
                double d = fabs(b.time_us - one.time_us) / one.time_us;
                ck_assert_msg(d <= 0.01, "%s %llu B, channels %u: burst %u %.3f us vs single packets %.3f us (%.2f %%)", coll_op_name((enum coll_op)op),
                              (unsigned long long)sizes[i], chans[i], burst, b.time_us, one.time_us, 100 * d);
            }
        }
}
END_TEST

START_TEST(test_values_and_seeded_bug)
{
    for (unsigned op = 0; op < 3; op++) {
        for (unsigned i = 0; i < 3; i++) {
            uint64_t bytes = i == 0 ? 8 : i == 1 ? 12340 : 1u << 20;   /* uneven blocks and chunks too */
            run_out o = run_one((enum coll_op)op, bytes, 8, i == 1 ? 5 : 0, true, COLL_INJECT_NONE);
            ck_assert(o.checked);
            ck_assert_msg(o.wrong == 0, "%s %llu B: %llu wrong", coll_op_name((enum coll_op)op), (unsigned long long)bytes,
                          (unsigned long long)o.wrong);
        }
        run_out bad = run_one((enum coll_op)op, 65536, 8, 0, true, COLL_INJECT_SKIP_CHUNK);
        ck_assert_msg(bad.wrong > 0, "%s: skip_chunk left every value right", coll_op_name((enum coll_op)op));
    }
}
END_TEST

/* One ring (one NVLink per GPU, in and out): all_gather of a large buffer
 * approaches the link's packet goodput 25 x 128/144 GB/s from below. */
START_TEST(test_one_channel_goodput)
{
    uint64_t bytes = 64u << 20;
    run_out o = run_one(COLL_ALL_GATHER, bytes, 8, 1, false, COLL_INJECT_NONE);
    double busbw = (double)(bytes - bytes / 4 % 8 * 4) / (o.time_us * 1e3) * 7.0 / 8.0;
    double goodput = 25.0 * 128.0 / 144.0;
    ck_assert_msg(busbw <= goodput * 1.0001 && busbw >= goodput * 0.9, "busbw %.3f GB/s, link goodput %.3f GB/s", busbw, goodput);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("collective");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_dgx_h100_shape);
    tcase_add_test(tc, test_bursts_match_single_packets);
    tcase_add_test(tc, test_values_and_seeded_bug);
    tcase_add_test(tc, test_one_channel_goodput);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
