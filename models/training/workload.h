/* The training workload as an input model (issue 21): a transformer's shape,
 * a GPU's published peak figures, and what one pipeline stage does per
 * micro-batch -- the time of its compute (a roofline: matmuls at
 * peak x mfu_matmul, memory-bound ops at the HBM's bandwidth) and the sizes
 * of the messages tensor, pipeline and data parallelism exchange
 * (Narayanan et al., SC21; shared/reference/system.md §5). Compute is
 * assumed, not simulated; the communication these sizes describe is what
 * the collective engine simulates. docs/models/training.md. */
#ifndef MODELS_TRAINING_WORKLOAD_H
#define MODELS_TRAINING_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct train_model {
    char name[32];
    unsigned layers, hidden, heads, kv_heads, ffn, seq, vocab;
    bool gated_mlp;           /* SwiGLU (LLaMA): three ffn matrices, else two (GPT) */
    bool learned_positions;   /* GPT: a seq x hidden position embedding */
    bool tied_embeddings;     /* the output layer reuses the input embedding (GPT), else its own (LLaMA) */
} train_model;

/* model=gpt3-175b|gpt3-13b|llama2-70b|llama3-8b. 0, or -1 (unknown name). */
#define TRAIN_MODEL_CHOICES "gpt3-175b|gpt3-13b|llama2-70b|llama3-8b|custom"
int train_model_preset(const char *name, train_model *out);
/* NULL, or why the shape cannot be a transformer (heads must divide hidden, ...). */
const char *train_model_invalid(const train_model *m);

enum train_dtype { TRAIN_BF16 = 0, TRAIN_FP16, TRAIN_FP8 };
#define TRAIN_DTYPE_CHOICES "bf16|fp16|fp8"
unsigned train_dtype_bytes(enum train_dtype d);

typedef struct train_gpu {
    char name[16];
    double peak_tflops_16bit;   /* dense bf16/fp16 tensor-core peak */
    double peak_tflops_fp8;     /* 0: no fp8 tensor cores */
    double hbm_GBps;
    const char *source;
} train_gpu;
#define TRAIN_GPU_CHOICES "a100|h100"
int train_gpu_preset(const char *name, train_gpu *out);
/* The peak for dtype d; 0 when the GPU has no such tensor cores. */
double train_gpu_peak_tflops(const train_gpu *g, enum train_dtype d);

/* Parameters of the whole model (a tied output layer counted once), of one
 * transformer layer, and of the input embedding. */
uint64_t train_model_params(const train_model *m);
uint64_t train_layer_params(const train_model *m);
uint64_t train_embedding_params(const train_model *m);

/* Megatron-LM's model FLOPs per iteration for a global batch of `batch`
 * sequences (SC21 eq. 3): 72 (96 with recomputation) B s l h^2 (1 + s/6h + V/(12 or 16)lh).
 * Counts GPT's shape (4h MLP, full-width K/V); used for mfu as Megatron reports it. */
double train_megatron_flops(const train_model *m, uint64_t batch, bool recompute);

/* One layer's work per micro-batch of `microbatch` sequences on one GPU of a
 * tensor-parallel group of tp. */
typedef struct train_layer_work {
    double fwd_matmul_flops, fwd_memory_bytes;   /* per GPU */
    double fwd_attn_flops;                       /* of the matmuls, the attention block's (before its all-reduce) */
    uint64_t tp_allreduce_bytes;                 /* one activation all-reduce (b s h): 2 forward, 2 backward */
} train_layer_work;
train_layer_work train_layer(const train_model *m, unsigned microbatch, unsigned tp, enum train_dtype d);
/* The output layer (logits, vocabulary-parallel over tp) and its softmax, on the last stage. */
train_layer_work train_output_layer(const train_model *m, unsigned microbatch, unsigned tp, enum train_dtype d);

typedef struct train_compute_cfg {
    double mfu_matmul;       /* achieved fraction of peak in matmuls (0..1] */
    double mem_efficiency;   /* achieved fraction of HBM bandwidth in memory-bound ops (0..1] */
} train_compute_cfg;
#define TRAIN_COMPUTE_CFG_DEFAULT ((train_compute_cfg){ 0.75, 0.8 })

/* Roofline times of one layer per micro-batch, in ns: forward, and backward
 * (twice the forward's matmuls and memory traffic, plus a forward again with recompute). */
double train_layer_fwd_ns(const train_layer_work *w, const train_gpu *g, enum train_dtype d, const train_compute_cfg *c);
double train_layer_bwd_ns(const train_layer_work *w, const train_gpu *g, enum train_dtype d, const train_compute_cfg *c, bool recompute);

/* The pipeline's point-to-point message per micro-batch between stages (b s h). */
uint64_t train_pp_message_bytes(const train_model *m, unsigned microbatch, enum train_dtype d);
/* Gradient bytes one GPU all-reduces per step in data parallelism: its share
 * of the parameters (tp x pp ways), in the training dtype (fp8 training keeps 16-bit gradients). */
uint64_t train_dp_gradient_bytes(const train_model *m, unsigned tp, unsigned pp, enum train_dtype d);

#endif
