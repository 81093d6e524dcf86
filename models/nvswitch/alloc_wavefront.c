/* Wavefront allocator (Tamir & Chi 1993; BookSim2 wavefront.cpp): the N x N
 * request matrix is swept diagonal by diagonal, starting from a priority
 * diagonal that rotates by one every cycle. Diagonal d holds the cells
 * (i, (i+d) mod N); they share no row or column, so every request on a
 * diagonal whose input and output are both still free is granted at once.
 * One pass gives a maximal matching, so `iters` does not apply. */
#include "models/nvswitch/xbar_alloc.h"

#include <stdlib.h>

typedef struct wavefront {
    xbar_alloc base;
    int pri; /* priority diagonal */
} wavefront;

static int wavefront_allocate(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                              int8_t *in_match, int8_t *out_match)
{
    wavefront *s = (wavefront *)a;
    const int n = a->n;
    (void)req_out;
    uint64_t free_out = xbar_mask_all(n);
    uint64_t active = 0; /* free inputs with a request to a free output */
    int matched = 0;
    for (int i = 0; i < n; i++) {
        in_match[i] = out_match[i] = -1;
        if (req_in[i]) active |= 1ULL << i;
    }
    for (int step = 0; step < n && active; step++) {
        int d = s->pri + step;
        if (d >= n) d -= n;
        for (uint64_t ins = active; ins; ins &= ins - 1) {
            int i = __builtin_ctzll(ins);
            int j = i + d;
            if (j >= n) j -= n;
            if ((req_in[i] >> j & 1) && (free_out >> j & 1)) {
                in_match[i] = (int8_t)j;
                out_match[j] = (int8_t)i;
                free_out &= ~(1ULL << j);
                active &= ~(1ULL << i);
                matched++;
            }
        }
        /* Drop inputs whose requests all point at taken outputs. */
        for (uint64_t ins = active; ins; ins &= ins - 1) {
            int i = __builtin_ctzll(ins);
            if (!(req_in[i] & free_out)) active &= ~(1ULL << i);
        }
    }
    s->pri = s->pri + 1 == n ? 0 : s->pri + 1;
    return matched;
}

static void wavefront_free(xbar_alloc *a) { free(a); }
static int wavefront_pri(const xbar_alloc *a, int out)
{
    (void)out;
    return ((const wavefront *)a)->pri;
}

static const xbar_alloc_ops wavefront_ops = {
    "wavefront", wavefront_allocate, wavefront_free, wavefront_pri, NULL,
};

xbar_alloc *xbar_alloc_wavefront_new(int n)
{
    wavefront *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ops = &wavefront_ops;
    s->base.n = n;
    s->base.iters = 1;
    return &s->base;
}
