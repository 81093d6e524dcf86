/* broadcast and reduce (a chain along the ring, ring.c), alltoall and
 * sendrecv (point-to-point, ops.c): each op's values against its reference
 * on every root, odd sizes and slot reuse; the seeded bug detected in every
 * op; conservation (data sent = received, in the amount the op moves, per
 * rank and in total, and the GPUs' own counters agree); the ring runs on the
 * same communicator afterwards; one channel's busbw at one link's goodput. */
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

typedef struct sys {
    topo *t;
    sim_kernel *k;
    sim_fabric *f;
    coll_comm *cm;
    nvgpu_cfg gc;
    fabric_switch_cfg sc;
} sys;

/* A dgx-h100 and a communicator; NULL comm (err) when refused. */
static sys *sys_new(unsigned channels, uint32_t chunk_bytes, unsigned root, bool check, enum coll_inject inject)
{
    fabric_register_kinds();
    collective_register_kinds();
    sys *s = calloc(1, sizeof *s);
    s->t = topo_from_string("dgx-h100", "nvlink4", err, sizeof err);
    ck_assert_msg(s->t, "%s", err);
    s->k = sim_kernel_new();
    s->gc = NVGPU_CFG_DEFAULT;
    s->gc.burst_pkts = chunk_bytes / 128 / 128 ? chunk_bytes / 128 / 128 : 1;
    s->sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 1, .kind_cfg = { { "nvgpu", &s->gc }, { "switch", &s->sc } } };
    s->f = sim_fabric_new(s->k, s->t, &fc, err, sizeof err);
    ck_assert_msg(s->f, "%s", err);
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.channels = channels;
    cc.chunk_bytes = chunk_bytes;
    cc.root = root;
    cc.check = check;
    cc.inject = inject;
    s->cm = coll_comm_new(s->f, &cc, err, sizeof err);
    return s;
}

static void sys_free(sys *s)
{
    coll_comm_free(s->cm);
    sim_fabric_free(s->f);
    sim_kernel_free(s->k);
    topo_free(s->t);
    free(s);
}

/* What rank r must receive in `op` of count floats (bytes), from the op's definition. */
static uint64_t want_received(enum coll_op op, unsigned n, unsigned root, unsigned r, uint64_t count)
{
    switch (op) {
    case COLL_BROADCAST: return r == root ? 0 : count * 4;            /* every non-root: the whole buffer */
    case COLL_REDUCE: return r == (root + 1) % n ? 0 : count * 4;      /* the chain's first (root+1) only sends */
    case COLL_ALLTOALL: return (uint64_t)(n - 1) * (count / n) * 4;    /* a block from every peer */
    case COLL_SENDRECV: return count * 4;                              /* the previous rank's buffer */
    default: ck_abort_msg("op %d", op);
    }
    return 0;
}

/* One op on a fresh system, every conservation view checked; returns the result. */
static coll_result run_op(enum coll_op op, uint64_t count, unsigned channels, uint32_t chunk_bytes, unsigned root, enum coll_inject inject)
{
    sys *s = sys_new(channels, chunk_bytes, root, true, inject);
    ck_assert_msg(s->cm, "%s", err);
    unsigned n = coll_comm_ranks(s->cm);
    coll_result r;
    ck_assert_msg(coll_run(s->cm, op, count, &r, err, sizeof err) == 0, "%s count %llu: %s", coll_op_name(op), (unsigned long long)count, err);
    ck_assert_msg(sim_fabric_check(s->f, true, err, sizeof err) == 0, "%s", err);
    ck_assert(r.checked);
    uint64_t total = 0, gpu_payload = 0;
    for (unsigned q = 0; q < n; q++) {
        uint64_t got = coll_rank_bytes_received(s->cm, q), want = want_received(op, n, root, q, count);
        ck_assert_msg(got == want, "%s count %llu root %u: rank %u received %llu data bytes, the op moves %llu to it", coll_op_name(op),
                      (unsigned long long)count, root, q, (unsigned long long)got, (unsigned long long)want);
        total += want;
        gpu_payload += nvgpu_stats_get(sim_fabric_component(s->f, s->t->endpoint_node[q])).payload_received;
    }
    ck_assert_uint_eq(r.data_bytes_sent, total);
    ck_assert_uint_eq(r.data_bytes_received, total);
    /* the GPUs' own counters: every payload byte that arrived is data, a flag, an ack or Simple's write response (8 B each) */
    ck_assert_uint_eq(gpu_payload, total + 8 * (r.flags_sent + r.acks_sent + r.visible_sent));
    ck_assert_uint_eq(r.flags_sent, r.acks_sent);   /* every chunk's slot freed once */
    /* the ring still runs on the same communicator (the handlers given back) */
    coll_result rr;
    if (inject == COLL_INJECT_NONE) {
        ck_assert_msg(coll_run(s->cm, COLL_ALL_REDUCE, 1000, &rr, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(rr.wrong == 0, "all_reduce after %s: %llu wrong", coll_op_name(op), (unsigned long long)rr.wrong);
    }
    sys_free(s);
    return r;
}

static const enum coll_op ops[] = { COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL, COLL_SENDRECV };

START_TEST(test_values)
{
    /* fewer elements than channels, odd sizes, several chunks; multiples of 8 for alltoall */
    static const uint64_t counts[] = { 8, 1000, 300000 };
    for (unsigned o = 0; o < 4; o++)
        for (unsigned i = 0; i < 3; i++)
            for (unsigned root = 0; root < (coll_op_has_root(ops[o]) ? 8u : 1u); root += 5) {
                uint64_t count = counts[i] + (ops[o] == COLL_ALLTOALL ? 0 : 3);
                coll_result r = run_op(ops[o], count, 0, 131072, root, COLL_INJECT_NONE);
                ck_assert_msg(r.wrong == 0, "%s count %llu root %u: %llu wrong", coll_op_name(ops[o]), (unsigned long long)count, root,
                              (unsigned long long)r.wrong);
                ck_assert(r.time_ps > 0);
            }
}
END_TEST

/* Small chunks on 2 channels: many chunks per connection, every slot reused many times. */
START_TEST(test_slot_reuse)
{
    for (unsigned o = 0; o < 4; o++) {
        coll_result r = run_op(ops[o], 80000, 2, 1024, 6, COLL_INJECT_NONE);
        ck_assert_msg(r.wrong == 0, "%s: %llu wrong", coll_op_name(ops[o]), (unsigned long long)r.wrong);
        ck_assert_uint_ge(r.flags_sent, 8 * 40);   /* many more chunks than the 8 slots of a connection */
    }
}
END_TEST

START_TEST(test_inject_detected)
{
    for (unsigned o = 0; o < 4; o++)
        for (unsigned root = 0; root < (coll_op_has_root(ops[o]) ? 8u : 1u); root += 7) {
            coll_result r = run_op(ops[o], 8000, 0, 131072, root, COLL_INJECT_SKIP_CHUNK);
            ck_assert_msg(r.wrong > 0, "%s root %u: skip_chunk left every value right", coll_op_name(ops[o]), root);
        }
}
END_TEST

START_TEST(test_root_and_factors)
{
    sys *s = sys_new(0, 131072, 8, true, COLL_INJECT_NONE);   /* 8 ranks: roots 0..7 */
    ck_assert_ptr_null(s->cm);
    ck_assert_msg(strstr(err, "root=8") && strstr(err, "allowed 0..7"), "%s", err);
    sys_free(s);
    ck_assert(coll_op_has_root(COLL_BROADCAST) && coll_op_has_root(COLL_REDUCE));
    ck_assert(!coll_op_has_root(COLL_ALLTOALL) && !coll_op_has_root(COLL_SENDRECV) && !coll_op_has_root(COLL_ALL_REDUCE));
    /* nccl-tests doc/PERFORMANCE.md */
    ck_assert_double_eq_tol(coll_busbw_factor(COLL_BROADCAST, 8), 1.0, 1e-12);
    ck_assert_double_eq_tol(coll_busbw_factor(COLL_REDUCE, 8), 1.0, 1e-12);
    ck_assert_double_eq_tol(coll_busbw_factor(COLL_SENDRECV, 8), 1.0, 1e-12);
    ck_assert_double_eq_tol(coll_busbw_factor(COLL_ALLTOALL, 8), 7.0 / 8, 1e-12);
    ck_assert_double_eq_tol(coll_busbw_factor(COLL_ALL_REDUCE, 8), 14.0 / 8, 1e-12);
    ck_assert_str_eq(coll_op_name(COLL_SENDRECV), "sendrecv");
}
END_TEST

/* One channel: sendrecv and alltoall put every rank's bytes on NVLink 0, so
 * busbw is one link's packet goodput, 25 x 128/144 = 22.2 GB/s (less the
 * pipeline's start); a model that moved them anywhere else, or twice, fails. */
START_TEST(test_one_channel_goodput)
{
    const double goodput = 25.0 * 128 / 144;
    for (unsigned o = 2; o < 4; o++) {
        sys *s = sys_new(1, 131072, 0, false, COLL_INJECT_NONE);
        ck_assert_msg(s->cm, "%s", err);
        uint64_t count = (4u << 20) / 4;
        coll_result r;
        ck_assert_msg(coll_run(s->cm, ops[o], count, &r, err, sizeof err) == 0, "%s", err);
        double busbw = (double)count * 4 / ((double)r.time_ps / 1e3) * coll_busbw_factor(ops[o], 8);
        ck_assert_msg(busbw <= goodput * 1.0001 && busbw >= 0.9 * goodput, "%s on one channel: busbw %.2f GB/s, link goodput %.2f",
                      coll_op_name(ops[o]), busbw, goodput);
        sys_free(s);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("coll_ops");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_slot_reuse);
    tcase_add_test(tc, test_inject_detected);
    tcase_add_test(tc, test_root_and_factors);
    tcase_add_test(tc, test_one_channel_goodput);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
