/* Separable input-first allocator with round-robin arbiters (BookSim2
 * separable_input_first.cpp with arb_type=round_robin; DRRM-like):
 *   1. each unmatched input picks one of its requests to free outputs, the
 *      first at or after its input pointer in[i];
 *   2. each output picks among the inputs that picked it, the first at or
 *      after its output pointer out[j];
 *   pointers move only for the final matches of iteration 1:
 *   in[i] = j+1, out[j] = i+1. Later iterations add matches among free ports. */
#include "models/nvswitch/xbar_alloc.h"

#include <stdlib.h>

typedef struct rrsep {
    xbar_alloc base;
    uint8_t in_ptr[64];
    uint8_t out_ptr[64];
} rrsep;

static int rr_allocate(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                       int8_t *in_match, int8_t *out_match)
{
    rrsep *s = (rrsep *)a;
    const int n = a->n;
    (void)req_out;
    uint64_t free_in = xbar_mask_all(n), free_out = xbar_mask_all(n);
    uint64_t picked_by[64]; /* per output: inputs that picked it */
    int matched = 0;
    for (int i = 0; i < n; i++) in_match[i] = out_match[i] = -1;
    for (int it = 0; it < a->iters; it++) {
        uint64_t picked_out = 0;
        for (uint64_t ins = free_in; ins; ins &= ins - 1) {
            int i = __builtin_ctzll(ins);
            uint64_t r = req_in[i] & free_out;
            if (!r) continue;
            int j = xbar_rr_pick(r, s->in_ptr[i]);
            if (!(picked_out >> j & 1)) { picked_out |= 1ULL << j; picked_by[j] = 0; }
            picked_by[j] |= 1ULL << i;
        }
        if (!picked_out) break;
        for (uint64_t outs = picked_out; outs; outs &= outs - 1) {
            int j = __builtin_ctzll(outs);
            int i = xbar_rr_pick(picked_by[j], s->out_ptr[j]);
            in_match[i] = (int8_t)j;
            out_match[j] = (int8_t)i;
            free_in &= ~(1ULL << i);
            free_out &= ~(1ULL << j);
            matched++;
            if (it == 0) {
                s->in_ptr[i] = (uint8_t)(j + 1 == n ? 0 : j + 1);
                s->out_ptr[j] = (uint8_t)(i + 1 == n ? 0 : i + 1);
            }
        }
    }
    return matched;
}

static void rr_free(xbar_alloc *a) { free(a); }
static int rr_out_ptr(const xbar_alloc *a, int out) { return ((const rrsep *)a)->out_ptr[out]; }
static int rr_in_ptr(const xbar_alloc *a, int in) { return ((const rrsep *)a)->in_ptr[in]; }

static const xbar_alloc_ops rr_ops = { "rr", rr_allocate, rr_free, rr_out_ptr, rr_in_ptr };

xbar_alloc *xbar_alloc_rr_new(int n, int iters)
{
    rrsep *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ops = &rr_ops;
    s->base.n = n;
    s->base.iters = iters;
    return &s->base;
}
