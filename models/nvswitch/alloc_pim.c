/* PIM, parallel iterative matching (Anderson, Owicki, Saxe, Thacker 1993):
 * each unmatched output grants a uniformly random requesting unmatched input,
 * each input accepts a uniformly random grant; `iters` iterations. Seeded, so
 * a run reproduces from its seed. */
#include "models/nvswitch/xbar_alloc.h"
#include "sim/rng.h"

#include <stdlib.h>

typedef struct pim {
    xbar_alloc base;
    sim_rng rng;
} pim;

static int random_bit(sim_rng *r, uint64_t m)
{
    int k = (int)sim_rng_below(r, (uint64_t)__builtin_popcountll(m));
    while (k--) m &= m - 1;
    return __builtin_ctzll(m);
}

static int pim_allocate(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                        int8_t *in_match, int8_t *out_match)
{
    pim *s = (pim *)a;
    const int n = a->n;
    (void)req_in;
    uint64_t free_in = xbar_mask_all(n), free_out = xbar_mask_all(n);
    uint64_t grants[64];
    int matched = 0;
    for (int i = 0; i < n; i++) in_match[i] = out_match[i] = -1;
    for (int it = 0; it < a->iters; it++) {
        uint64_t granted_in = 0;
        for (uint64_t outs = free_out; outs; outs &= outs - 1) {
            int j = __builtin_ctzll(outs);
            uint64_t r = req_out[j] & free_in;
            if (!r) continue;
            int i = random_bit(&s->rng, r);
            if (!(granted_in >> i & 1)) { granted_in |= 1ULL << i; grants[i] = 0; }
            grants[i] |= 1ULL << j;
        }
        if (!granted_in) break;
        for (uint64_t ins = granted_in; ins; ins &= ins - 1) {
            int i = __builtin_ctzll(ins);
            int j = random_bit(&s->rng, grants[i]);
            in_match[i] = (int8_t)j;
            out_match[j] = (int8_t)i;
            free_in &= ~(1ULL << i);
            free_out &= ~(1ULL << j);
            matched++;
        }
    }
    return matched;
}

static void pim_free(xbar_alloc *a) { free(a); }

static const xbar_alloc_ops pim_ops = { "pim", pim_allocate, pim_free, NULL, NULL };

xbar_alloc *xbar_alloc_pim_new(int n, int iters, uint64_t seed)
{
    pim *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ops = &pim_ops;
    s->base.n = n;
    s->base.iters = iters;
    sim_rng_seed_stream(&s->rng, seed, 0x70696dULL /* "pim" */);
    return &s->base;
}
