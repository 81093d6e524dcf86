/* The pipeline schedule (models/training/schedule.h) on a backend whose
 * communication takes fixed, known times: 1F1B's bubble is (p-1) x (tf+tb)
 * per stage with free communication (Narayanan et al.: bubble fraction
 * (p-1)/m), interleaving divides it by v, TP all-reduces add 4 per layer per
 * micro-batch on the critical path, pipeline latency shows as exposed PP
 * wait, DP buckets overlap with the backward or not, and every stage's time
 * adds up. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "models/training/schedule.h"

typedef struct fake {
    sim_kernel *k;
    double tp_ns, pp_ns, dp_ns_per_byte;
    unsigned started[TRAIN_COMM_KINDS];
    uint64_t bytes[TRAIN_COMM_KINDS];
} fake;

typedef struct pending { train_comm_done_fn done; void *arg; } pending;

static void fire(void *obj, uint64_t tag)
{
    (void)tag;
    pending *p = obj;
    p->done(p->arg);
    free(p);
}

static void fake_start(void *ctx, enum train_comm_kind kind, unsigned stage, unsigned peer, uint64_t bytes, train_comm_done_fn done,
                       void *arg)
{
    (void)stage, (void)peer;
    fake *f = ctx;
    f->started[kind]++;
    f->bytes[kind] += bytes;
    double ns = kind == TRAIN_COMM_TP ? f->tp_ns : kind == TRAIN_COMM_PP ? f->pp_ns : f->dp_ns_per_byte * (double)bytes;
    pending *p = malloc(sizeof *p);
    ck_assert_ptr_nonnull(p);
    *p = (pending){ done, arg };
    sim_schedule_callback(f->k, (sim_time_ps)(ns * 1000.0 + 0.5), 0, fire, p, 0);
}

static train_sched_cfg base(unsigned pp, unsigned m, unsigned v)
{
    train_sched_cfg c = { 0 };
    c.pp = pp, c.tp = 1, c.microbatches = m, c.interleave = v, c.layers = 8 * pp * v;
    c.layer_fwd_ns = 1000, c.layer_bwd_ns = 2000, c.attn_share = 0.4;
    c.tp_bytes = 1 << 20, c.pp_bytes = 1 << 20, c.dp_layer_bytes = 1 << 20, c.bucket_bytes = 4 << 20;
    return c;
}

static double run(const train_sched_cfg *c, fake *f, train_sched **out)
{
    char err[256];
    f->k = sim_kernel_new();
    train_comm_backend be = { fake_start, f };
    train_sched *s = train_sched_new(f->k, c, &be, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    train_sched_start(s);
    sim_run(f->k, SIM_TIME_MAX);
    ck_assert(train_sched_done(s));
    ck_assert_msg(train_sched_check(s, err, sizeof err) == 0, "%s", err);
    double ns = (double)train_sched_step_ps(s) / 1000.0;
    if (out) *out = s;
    else train_sched_free(s), sim_kernel_free(f->k);
    return ns;
}

START_TEST(test_1f1b_bubble)
{
    /* free communication: (m + p - 1) x (tf + tb) per stage of L layers */
    const unsigned p = 4, m = 8;
    train_sched_cfg c = base(p, m, 1);
    fake f = { 0 };
    train_sched *s;
    double step = run(&c, &f, &s);
    double per_mb = 8 * (c.layer_fwd_ns + c.layer_bwd_ns);
    ck_assert_msg(fabs(step - (m + p - 1) * per_mb) < 1e-3, "step %.1f ns, 1F1B predicts %.1f", step, (m + p - 1) * per_mb);
    for (unsigned i = 0; i < p; i++) {
        const train_stage_times *t = train_sched_stage(s, i);
        ck_assert(fabs(t->compute_ns - m * per_mb) < 1e-3);
        ck_assert(t->pp_wait_ns < 1e-3 && t->tp_ns == 0 && t->dp_exposed_ns == 0);
    }
    /* the bubble of the first stage is at its end: (p-1) x per_mb; every stage idles that much */
    ck_assert(fabs(train_sched_stage(s, 0)->bubble_ns - (p - 1) * per_mb) < 1e-3);
    ck_assert_uint_eq(f.started[TRAIN_COMM_PP], 2 * (p - 1) * m);
    train_sched_free(s);
    sim_kernel_free(f.k);
}
END_TEST

START_TEST(test_interleave_divides_the_bubble)
{
    const unsigned p = 4, m = 8;
    for (unsigned v = 1; v <= 4; v *= 2) {
        train_sched_cfg c = base(p, m, v);
        c.layers = 32;   /* the same model however it is cut */
        fake f = { 0 };
        double step = run(&c, &f, NULL);
        double per_mb_stage = 32.0 / p * (c.layer_fwd_ns + c.layer_bwd_ns);
        double want = m * per_mb_stage + (p - 1) * per_mb_stage / v;
        ck_assert_msg(fabs(step - want) < 1e-3, "v=%u: step %.1f ns, predicted %.1f", v, step, want);
    }
}
END_TEST

START_TEST(test_tp_on_the_critical_path)
{
    train_sched_cfg c = base(1, 4, 1);
    c.tp = 8;
    fake f = { .tp_ns = 50 };
    train_sched *s;
    double step = run(&c, &f, &s);
    /* 8 layers x 4 all-reduces x 4 micro-batches, each 50 ns, no pipeline */
    double want = 4 * 8 * (c.layer_fwd_ns + c.layer_bwd_ns) + 4 * 8 * 4 * 50.0;
    ck_assert_msg(fabs(step - want) < 1e-3, "step %.1f, predicted %.1f", step, want);
    ck_assert(fabs(train_sched_stage(s, 0)->tp_ns - 4 * 8 * 4 * 50.0) < 1e-3);
    ck_assert_uint_eq(f.started[TRAIN_COMM_TP], 4 * 8 * 4);
    train_sched_free(s);
    sim_kernel_free(f.k);
}
END_TEST

START_TEST(test_pp_latency_is_exposed)
{
    /* two stages, one micro-batch: forward, hop, forward, backward, hop, backward */
    train_sched_cfg c = base(2, 1, 1);
    fake f = { .pp_ns = 700 };
    train_sched *s;
    double step = run(&c, &f, &s);
    double fw = 8 * c.layer_fwd_ns, bw = 8 * c.layer_bwd_ns;
    ck_assert(fabs(step - (2 * fw + 2 * bw + 2 * 700)) < 1e-3);
    const train_stage_times *t1 = train_sched_stage(s, 1), *t0 = train_sched_stage(s, 0);
    ck_assert(fabs(t1->bubble_ns - fw) < 1e-3 && fabs(t1->pp_wait_ns - 700) < 1e-3);   /* waited for stage 0, then the hop */
    ck_assert(fabs(t0->pp_wait_ns - 700) < 1e-3 && fabs(t0->bubble_ns - (fw + 2 * bw + 700 - bw)) < 1e-3);
    train_sched_free(s);
    sim_kernel_free(f.k);
}
END_TEST

START_TEST(test_dp_overlap)
{
    /* one stage, 8 layers of 1 MiB gradients in 4 MiB buckets at 1 ns per byte */
    for (int overlap = 0; overlap <= 1; overlap++) {
        train_sched_cfg c = base(1, 2, 1);
        c.dp = true, c.overlap = overlap;
        fake f = { .dp_ns_per_byte = 1e-3 };
        train_sched *s;
        double step = run(&c, &f, &s);
        double compute = 2 * 8 * (c.layer_fwd_ns + c.layer_bwd_ns), bucket = 4.0 * 1048576 * 1e-3;
        const train_stage_times *t = train_sched_stage(s, 0);
        ck_assert_uint_eq(f.started[TRAIN_COMM_DP], 2);
        ck_assert_uint_eq(f.bytes[TRAIN_COMM_DP], 8u << 20);
        /* no overlap: both buckets after the backward; overlap: the first one starts after
         * layer 4's backward of the last micro-batch, so only part of it shows */
        if (!overlap) ck_assert(fabs(step - (compute + 2 * bucket)) < 1e-3);
        else {
            double first_at = compute - 4 * c.layer_bwd_ns;
            double end = fmax(first_at + bucket, compute) + bucket;
            ck_assert_msg(fabs(step - end) < 1e-3, "step %.1f, predicted %.1f", step, end);
        }
        ck_assert(fabs(t->dp_exposed_ns - (step - compute)) < 1e-3);
        train_sched_free(s);
        sim_kernel_free(f.k);
    }
}
END_TEST

START_TEST(test_zero_gathers_after)
{
    train_sched_cfg c = base(1, 1, 1);
    c.dp = true, c.zero = true, c.bucket_bytes = 64u << 20;
    fake f = { .dp_ns_per_byte = 1e-3 };
    double step = run(&c, &f, NULL);
    ck_assert_uint_eq(f.started[TRAIN_COMM_DP], 1);
    ck_assert_uint_eq(f.started[TRAIN_COMM_DP_GATHER], 1);
    ck_assert_uint_eq(f.bytes[TRAIN_COMM_DP_GATHER], 8u << 20);
    ck_assert(fabs(step - (8 * (c.layer_fwd_ns + c.layer_bwd_ns) + 2 * 8.0 * 1048576 * 1e-3)) < 1e-3);
}
END_TEST

START_TEST(test_refused_configurations)
{
    char err[256];
    sim_kernel *k = sim_kernel_new();
    fake f = { .k = k };
    train_comm_backend be = { fake_start, &f };
    train_sched_cfg c = base(4, 6, 2);   /* 6 micro-batches are no multiple of pp = 4 */
    ck_assert_ptr_null(train_sched_new(k, &c, &be, err, sizeof err));
    c = base(4, 8, 1);
    c.layers = 30;
    ck_assert_ptr_null(train_sched_new(k, &c, &be, err, sizeof err));
    sim_kernel_free(k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("training_schedule");
    TCase *tc = tcase_create("schedule");
    tcase_add_test(tc, test_1f1b_bubble);
    tcase_add_test(tc, test_interleave_divides_the_bubble);
    tcase_add_test(tc, test_tp_on_the_critical_path);
    tcase_add_test(tc, test_pp_latency_is_exposed);
    tcase_add_test(tc, test_dp_overlap);
    tcase_add_test(tc, test_zero_gathers_after);
    tcase_add_test(tc, test_refused_configurations);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
