/* The training workload: model shapes, GPU peaks, per-layer roofline and
 * message sizes (workload.h, docs/models/training.md). */
#include <stdio.h>
#include <string.h>

#include "models/training/workload.h"

/* Shapes as published: GPT-3 (Brown et al. 2020, table 2.1; Megatron's padded
 * vocabulary 51200), LLaMA 2 70B (Touvron et al. 2023: GQA, 8 KV heads,
 * SwiGLU 28672) and LLaMA 3 8B (Meta's model card: 8 KV heads, 14336, 128256
 * tokens, 8192 context). */
static const train_model models[] = {
    { "gpt3-175b", 96, 12288, 96, 96, 49152, 2048, 51200, false, true, true },
    { "gpt3-13b", 40, 5120, 40, 40, 20480, 2048, 51200, false, true, true },
    { "llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000, true, false, false },
    { "llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256, true, false, false },
};

int train_model_preset(const char *name, train_model *out)
{
    for (unsigned i = 0; i < sizeof models / sizeof *models; i++)
        if (!strcmp(models[i].name, name)) {
            *out = models[i];
            return 0;
        }
    return -1;
}

const char *train_model_invalid(const train_model *m)
{
    if (!m->layers || !m->hidden || !m->heads || !m->ffn || !m->seq || !m->vocab) return "every dimension must be at least 1";
    if (m->hidden % m->heads) return "heads must divide hidden";
    if (!m->kv_heads || m->heads % m->kv_heads) return "kv_heads must divide heads";
    return NULL;
}

unsigned train_dtype_bytes(enum train_dtype d) { return d == TRAIN_FP8 ? 1 : 2; }

/* Dense tensor-core peaks (half the sparsity figures) and HBM bandwidth of the SXM parts. */
static const train_gpu gpus[] = {
    { "a100", 312.0, 0.0, 2039.0, "NVIDIA A100 80GB SXM datasheet: 312 TFLOPS bf16/fp16 dense, HBM2e 2039 GB/s, no fp8" },
    { "h100", 989.4, 1978.9, 3352.0, "NVIDIA H100 SXM5 datasheet: 989 TFLOPS bf16/fp16 and 1979 fp8 dense, HBM3 3.35 TB/s" },
};

int train_gpu_preset(const char *name, train_gpu *out)
{
    for (unsigned i = 0; i < sizeof gpus / sizeof *gpus; i++)
        if (!strcmp(gpus[i].name, name)) {
            *out = gpus[i];
            return 0;
        }
    return -1;
}

double train_gpu_peak_tflops(const train_gpu *g, enum train_dtype d) { return d == TRAIN_FP8 ? g->peak_tflops_fp8 : g->peak_tflops_16bit; }

static uint64_t kv_width(const train_model *m) { return (uint64_t)m->hidden / m->heads * m->kv_heads; }

uint64_t train_layer_params(const train_model *m)
{
    const uint64_t h = m->hidden, f = m->ffn, kv = kv_width(m);
    uint64_t attn = h * (h + 2 * kv) + h * h;            /* Q, K, V and the output projection */
    uint64_t mlp = (m->gated_mlp ? 3 : 2) * h * f;
    uint64_t bias = m->gated_mlp ? 0 : (h + 2 * kv) + h + f + h;   /* GPT has biases, LLaMA none */
    uint64_t norms = m->gated_mlp ? 2 * h : 4 * h;       /* RMSNorm: a scale; LayerNorm: scale and shift */
    return attn + mlp + bias + norms;
}

uint64_t train_embedding_params(const train_model *m)
{
    return (uint64_t)m->vocab * m->hidden + (m->learned_positions ? (uint64_t)m->seq * m->hidden : 0);
}

uint64_t train_model_params(const train_model *m)
{
    uint64_t output = m->tied_embeddings ? 0 : (uint64_t)m->vocab * m->hidden;
    return train_layer_params(m) * m->layers + train_embedding_params(m) + output + (m->gated_mlp ? m->hidden : 2u * m->hidden);
}

double train_megatron_flops(const train_model *m, uint64_t batch, bool recompute)
{
    const double B = (double)batch, s = m->seq, l = m->layers, h = m->hidden, V = m->vocab;
    return (recompute ? 96.0 : 72.0) * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / ((recompute ? 16.0 : 12.0) * l * h));
}

train_layer_work train_layer(const train_model *m, unsigned microbatch, unsigned tp, enum train_dtype d)
{
    const double tokens = (double)microbatch * m->seq, h = m->hidden, f = m->ffn, kv = (double)kv_width(m), s = m->seq;
    const double t = tp ? tp : 1, bytes = train_dtype_bytes(d);
    train_layer_work w;
    /* matmuls (2 FLOPs per multiply-add), split tp ways by Megatron's column/row partitioning */
    double qkv = 2.0 * tokens * h * (h + 2.0 * kv), scores = 4.0 * tokens * s * h, proj = 2.0 * tokens * h * h;
    double mlp = (m->gated_mlp ? 6.0 : 4.0) * tokens * h * f;
    w.fwd_matmul_flops = (qkv + scores + proj + mlp) / t;
    w.fwd_attn_flops = (qkv + scores + proj) / t;
    /* memory-bound elementwise work, fused attention (no s x s scores in HBM): two norms
     * (read + write of b s h each), two residual adds (read 2, write 1), two dropouts
     * (read + write), replicated across the TP group; the MLP's activation on b s ffn/t
     * (read + write; SwiGLU reads two inputs) */
    double replicated = (2 * 2 + 2 * 3 + 2 * 2) * tokens * h;
    double act = (m->gated_mlp ? 3.0 : 2.0) * tokens * f / t;
    w.fwd_memory_bytes = (replicated + act) * bytes;
    w.tp_allreduce_bytes = (uint64_t)(tokens * h * bytes);
    return w;
}

train_layer_work train_output_layer(const train_model *m, unsigned microbatch, unsigned tp, enum train_dtype d)
{
    const double tokens = (double)microbatch * m->seq, t = tp ? tp : 1;
    train_layer_work w;
    w.fwd_matmul_flops = 2.0 * tokens * m->hidden * m->vocab / t;
    w.fwd_attn_flops = 0;
    /* the final norm (read + write b s h), the logits written, then read and written by the softmax */
    w.fwd_memory_bytes = (2.0 * tokens * m->hidden + 3.0 * tokens * m->vocab / t) * train_dtype_bytes(d);
    w.tp_allreduce_bytes = (uint64_t)(tokens * m->hidden * train_dtype_bytes(d));
    return w;
}

static double roofline_ns(double flops, double mem_bytes, const train_gpu *g, enum train_dtype d, const train_compute_cfg *c)
{
    double peak = train_gpu_peak_tflops(g, d);
    return flops / (peak * c->mfu_matmul * 1e3) + mem_bytes / (g->hbm_GBps * c->mem_efficiency);
}

double train_layer_fwd_ns(const train_layer_work *w, const train_gpu *g, enum train_dtype d, const train_compute_cfg *c)
{
    return roofline_ns(w->fwd_matmul_flops, w->fwd_memory_bytes, g, d, c);
}

double train_layer_bwd_ns(const train_layer_work *w, const train_gpu *g, enum train_dtype d, const train_compute_cfg *c, bool recompute)
{
    double k = recompute ? 3.0 : 2.0;   /* gradients of inputs and of weights, and the forward again */
    return roofline_ns(k * w->fwd_matmul_flops, k * w->fwd_memory_bytes, g, d, c);
}

uint64_t train_pp_message_bytes(const train_model *m, unsigned microbatch, enum train_dtype d)
{
    return (uint64_t)microbatch * m->seq * m->hidden * train_dtype_bytes(d);
}

uint64_t train_dp_gradient_bytes(const train_model *m, unsigned tp, unsigned pp, enum train_dtype d)
{
    unsigned grad_bytes = d == TRAIN_FP8 ? 2 : train_dtype_bytes(d);
    uint64_t ways = (uint64_t)(tp ? tp : 1) * (pp ? pp : 1);
    return (train_model_params(m) + ways - 1) / ways * grad_bytes;
}
