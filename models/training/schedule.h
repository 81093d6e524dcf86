/* One training step of a pipeline as events on the kernel: Megatron-LM's
 * 1F1B schedule (interleaved with `interleave` virtual stages per GPU), each
 * stage's compute as busy time from the workload model, and its
 * communication -- the tensor-parallel all-reduces inside every layer, the
 * pipeline's activations and gradients between stages, the data-parallel
 * gradient all-reduces in buckets -- handed to a backend that simulates it
 * (the collective engine on a fabric) and says when each is done. What is
 * exposed comes out of the run: a stage idles when its next input has not
 * arrived (bubble while the upstream stage still computes, exposed pipeline
 * communication while the message is in flight), blocks on each TP
 * all-reduce, and ends only when its last DP all-reduce is done.
 * docs/models/training.md. */
#ifndef MODELS_TRAINING_SCHEDULE_H
#define MODELS_TRAINING_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/kernel.h"

enum train_comm_kind {
    TRAIN_COMM_TP = 0,      /* all-reduce of one stage's TP group (blocking) */
    TRAIN_COMM_PP,          /* activation (forward) or gradient (backward) from stage to peer */
    TRAIN_COMM_DP,          /* gradient all-reduce (zero=1: reduce-scatter) of one stage's DP group */
    TRAIN_COMM_DP_GATHER,   /* zero=1: the parameters' all-gather after the optimizer */
    TRAIN_COMM_KINDS
};
const char *train_comm_kind_name(enum train_comm_kind k);

typedef void (*train_comm_done_fn)(void *arg);
typedef struct train_comm_backend {
    /* Start it now; call done(arg) when it is complete (for PP: when the
     * message is in at peer), from an event: never from inside start. */
    void (*start)(void *ctx, enum train_comm_kind kind, unsigned stage, unsigned peer, uint64_t bytes, train_comm_done_fn done,
                  void *arg);
    void *ctx;
} train_comm_backend;

typedef struct train_sched_cfg {
    unsigned pp, tp, microbatches, interleave;   /* interleave: virtual stages per GPU (1: plain 1F1B) */
    unsigned layers;                             /* the model's, split evenly over pp x interleave */
    double layer_fwd_ns, layer_bwd_ns;           /* one layer, one micro-batch (backward includes recompute) */
    double attn_share;                           /* of a layer's compute before its first TP all-reduce */
    double output_fwd_ns, output_bwd_ns;         /* the output layer, on the last virtual stage */
    uint64_t tp_bytes, pp_bytes;                 /* per all-reduce; per message */
    uint64_t dp_layer_bytes;                     /* gradients of one layer on one GPU */
    uint64_t dp_first_bytes, dp_last_bytes;      /* the embedding (first virtual stage) and output layer (last) */
    uint64_t bucket_bytes;                       /* DP all-reduces gradients in buckets of at least this */
    bool dp, overlap, zero;                      /* dp: there is a DP group; overlap with backward; ZeRO-1 */
} train_sched_cfg;

/* Where one stage's step time went (ns); compute + tp + pp_wait + bubble + dp_exposed = end. */
typedef struct train_stage_times {
    double compute_ns, tp_ns, pp_wait_ns, bubble_ns, dp_exposed_ns, end_ns;
    double dp_ns, pp_ns;   /* time in DP and PP communication, exposed or not */
} train_stage_times;

/* The timeline, for pictures: what stage `stage` did from start to end. */
enum train_span_kind { TRAIN_SPAN_FWD = 0, TRAIN_SPAN_BWD, TRAIN_SPAN_TP, TRAIN_SPAN_PP, TRAIN_SPAN_DP, TRAIN_SPAN_WAIT, TRAIN_SPAN_KINDS };
const char *train_span_kind_name(enum train_span_kind k);
typedef struct train_span {
    unsigned stage, microbatch, chunk;
    enum train_span_kind kind;
    sim_time_ps start_ps, end_ps;
} train_span;

typedef struct train_sched train_sched;
/* NULL with why when the configuration cannot be scheduled (layers not divisible, ...). */
train_sched *train_sched_new(sim_kernel *k, const train_sched_cfg *cfg, const train_comm_backend *be, char *err, size_t errlen);
void train_sched_free(train_sched *s);
void train_sched_start(train_sched *s);   /* every stage begins at now */
bool train_sched_done(const train_sched *s);
sim_time_ps train_sched_step_ps(const train_sched *s);   /* start to the last stage's end */
const train_stage_times *train_sched_stage(const train_sched *s, unsigned stage);
const train_span *train_sched_spans(const train_sched *s, unsigned *n);
/* Its own conservation: every message sent arrived, every op ran, every bucket reduced. */
int train_sched_check(const train_sched *s, char *why, size_t why_n);

#endif
