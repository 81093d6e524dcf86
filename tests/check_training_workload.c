/* The training workload's input model (models/training/workload.h): the
 * presets' parameter counts against the published sizes, the per-layer
 * matmul FLOPs summed over a step against Megatron-LM's closed formula
 * (two different derivations), the roofline's units, and the message sizes
 * of tensor, pipeline and data parallelism. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "models/training/workload.h"

static train_model preset(const char *name)
{
    train_model m;
    ck_assert_int_eq(train_model_preset(name, &m), 0);
    ck_assert_ptr_null(train_model_invalid(&m));
    return m;
}

START_TEST(test_published_parameter_counts)
{
    /* GPT-3 paper: 175.0 B and 13.0 B; LLaMA 2 70B: 68.98 B (HF config); LLaMA 3 8B: 8.03 B */
    static const struct { const char *name; double billions, tol; } want[] = {
        { "gpt3-175b", 175.0, 0.01 }, { "gpt3-13b", 13.0, 0.02 }, { "llama2-70b", 68.98, 0.01 }, { "llama3-8b", 8.03, 0.01 },
    };
    for (unsigned i = 0; i < sizeof want / sizeof *want; i++) {
        train_model m = preset(want[i].name);
        double got = (double)train_model_params(&m) / 1e9;
        ck_assert_msg(fabs(got / want[i].billions - 1.0) < want[i].tol, "%s: %.2f B parameters, published %.2f B", want[i].name, got,
                      want[i].billions);
    }
    train_model m;
    ck_assert_int_eq(train_model_preset("gpt4", &m), -1);
}
END_TEST

START_TEST(test_layer_flops_sum_to_megatron_formula)
{
    /* Megatron's eq. 3 counts GPT's shape: 24 B s h^2 (1 + s/6h) forward per layer, x3 with
     * backward (x4 with recomputation), plus the logits 2 B s h V x3. Sum the model's pieces. */
    train_model m = preset("gpt3-175b");
    const uint64_t batch = 1536;
    for (int rc = 0; rc <= 1; rc++) {
        train_layer_work l = train_layer(&m, 1, 1, TRAIN_BF16), o = train_output_layer(&m, 1, 1, TRAIN_BF16);
        double per_seq = m.layers * l.fwd_matmul_flops * (rc ? 4.0 : 3.0) + o.fwd_matmul_flops * 3.0;
        double want = train_megatron_flops(&m, batch, rc);
        ck_assert_msg(fabs(per_seq * batch / want - 1.0) < 1e-9, "recompute=%d: layers sum %.6g, formula %.6g", rc, per_seq * batch, want);
    }
    /* tensor parallelism splits the matmuls, not the replicated elementwise work */
    train_layer_work w1 = train_layer(&m, 2, 1, TRAIN_BF16), w8 = train_layer(&m, 2, 8, TRAIN_BF16);
    ck_assert(fabs(w1.fwd_matmul_flops / w8.fwd_matmul_flops - 8.0) < 1e-9);
    ck_assert(w8.fwd_memory_bytes > w1.fwd_memory_bytes / 8.0 && w8.fwd_memory_bytes < w1.fwd_memory_bytes);
}
END_TEST

START_TEST(test_roofline_units)
{
    /* a layer of pure matmul: 1e12 FLOPs at 1000 TFLOPS x 0.5 = 2 ms; 1 GB at 1000 GB/s x 0.5 = 2 ms */
    train_gpu g = { "x", 1000.0, 0.0, 1000.0, "test" };
    train_compute_cfg c = { 0.5, 0.5 };
    train_layer_work w = { 1e12, 0, 0, 0 };
    ck_assert(fabs(train_layer_fwd_ns(&w, &g, TRAIN_BF16, &c) - 2e6) < 1e-3);
    ck_assert(fabs(train_layer_bwd_ns(&w, &g, TRAIN_BF16, &c, false) - 4e6) < 1e-3);
    ck_assert(fabs(train_layer_bwd_ns(&w, &g, TRAIN_BF16, &c, true) - 6e6) < 1e-3);
    w = (train_layer_work){ 0, 1e9, 0, 0 };
    ck_assert(fabs(train_layer_fwd_ns(&w, &g, TRAIN_BF16, &c) - 2e6) < 1e-3);
    train_gpu a;
    ck_assert_int_eq(train_gpu_preset("a100", &a), 0);
    ck_assert(train_gpu_peak_tflops(&a, TRAIN_FP8) == 0.0);   /* no fp8 tensor cores: callers refuse it */
    ck_assert_int_eq(train_gpu_preset("h100", &a), 0);
    ck_assert(train_gpu_peak_tflops(&a, TRAIN_FP8) > train_gpu_peak_tflops(&a, TRAIN_BF16));
}
END_TEST

START_TEST(test_message_sizes)
{
    train_model m = preset("gpt3-175b");
    /* b s h elements of 2 bytes: 1 x 2048 x 12288 x 2 */
    ck_assert_uint_eq(train_pp_message_bytes(&m, 1, TRAIN_BF16), 50331648u);
    ck_assert_uint_eq(train_layer(&m, 1, 8, TRAIN_BF16).tp_allreduce_bytes, 50331648u);
    ck_assert_uint_eq(train_pp_message_bytes(&m, 2, TRAIN_FP8), 50331648u);
    /* the gradients of 1/64 of the model in bf16 */
    uint64_t g = train_dp_gradient_bytes(&m, 8, 8, TRAIN_BF16);
    ck_assert(llabs((long long)g - (long long)(train_model_params(&m) / 64 * 2)) <= 2);
    ck_assert_uint_eq(train_dp_gradient_bytes(&m, 8, 8, TRAIN_FP8), g);
}
END_TEST

START_TEST(test_invalid_shapes)
{
    train_model m = preset("llama3-8b");
    m.heads = 33;
    ck_assert_ptr_nonnull(train_model_invalid(&m));
    m = preset("llama3-8b");
    m.kv_heads = 5;
    ck_assert_ptr_nonnull(train_model_invalid(&m));
    m.kv_heads = 0;
    ck_assert_ptr_nonnull(train_model_invalid(&m));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("training_workload");
    TCase *tc = tcase_create("workload");
    tcase_add_test(tc, test_published_parameter_counts);
    tcase_add_test(tc, test_layer_flops_sum_to_megatron_formula);
    tcase_add_test(tc, test_roofline_units);
    tcase_add_test(tc, test_message_sizes);
    tcase_add_test(tc, test_invalid_shapes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
