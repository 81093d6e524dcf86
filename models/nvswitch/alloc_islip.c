/* iSLIP (McKeown 1999), k iterations, exactly the rules of
 * docs/crossbar-cycle-rules.md step 2:
 *   grant:  each unmatched output grants the first requesting unmatched input
 *           at or after g[j];
 *   accept: each input accepts the first granting output at or after a[i];
 *   pointers move only for accepted grants and only in iteration 1:
 *           g[j] = i+1, a[i] = j+1 (mod N).
 * inject_rrm: the known-wrong RRM variant, where g[j] moves past the granted
 * input in iteration 1 whether or not the grant was accepted. */
#include "models/nvswitch/xbar_alloc.h"

#include <stdlib.h>
#include <string.h>

/* A pointer p is kept as the mask of positions at or after it (~0 << p), so
 * "first at or after p" is one AND and one count-trailing-zeros. Moving past
 * position x stores (~0 << x) << 1: for x = N-1 that selects no request, and
 * the search wraps to the first one, exactly as p = 0 would. */
typedef struct islip {
    xbar_alloc base;
    int rrm;
    uint64_t g[64];   /* grant pointer per output, as a mask */
    uint64_t acc[64]; /* accept pointer per input, as a mask */
    uint64_t grants[64]; /* per input, the outputs granting it; zero between iterations */
} islip;

static inline int first_at(uint64_t m, uint64_t ptr_mask)
{
    uint64_t hi = m & ptr_mask;
    return __builtin_ctzll(hi ? hi : m);
}

/* (~0 << x) << 1 by table: a variable shift costs several instructions without BMI2. */
#define PAST(x) ((~0ULL << (x)) << 1)
#define PAST8(x) PAST(x), PAST(x + 1), PAST(x + 2), PAST(x + 3), PAST(x + 4), PAST(x + 5), PAST(x + 6), PAST(x + 7)
static const uint64_t past_tab[64] = { PAST8(0), PAST8(8), PAST8(16), PAST8(24), PAST8(32), PAST8(40), PAST8(48), PAST8(56) };
static inline uint64_t past(int x) { return past_tab[x]; }

static int ptr_of(uint64_t mask, int n)
{
    uint64_t m = mask & xbar_mask_all(n);
    return m ? __builtin_ctzll(m) : 0;
}

/* RRM only: in iteration 1, g[j] moves past every input it granted. */
static void rrm_move_grant_ptrs(islip *s, const uint64_t *grants, uint64_t granted_in)
{
    for (uint64_t ins = granted_in; ins; ins &= ins - 1) {
        int i = __builtin_ctzll(ins);
        for (uint64_t outs = grants[i]; outs; outs &= outs - 1) s->g[__builtin_ctzll(outs)] = past(i);
    }
}

/* Grants of one iteration: each output in `outs` grants the first input of
 * its requests within `free_in` at or after g[j]. Fills grants[i] (outputs
 * granting input i; entries of inputs granted nothing are left as they
 * were, zero) and returns the inputs holding a grant. */
static inline uint64_t grant(const islip *s, const uint64_t *req_out, uint64_t outs, uint64_t free_in, uint64_t *grants)
{
    uint64_t granted_in = 0;
    for (; outs; outs &= outs - 1) {
        const int j = __builtin_ctzll(outs);
        const uint64_t r = req_out[j] & free_in;
        if (!r) continue;
        const int i = first_at(r, s->g[j]);
        grants[i] |= 1ULL << j;
        granted_in |= 1ULL << i;
    }
    return granted_in;
}

/* Iteration 1, where every port is free: the same rule as grant(), as a
 * counted loop over the outputs (at load, every one of them grants). */
static inline uint64_t grant_all(const islip *s, const uint64_t *req_out, int n, uint64_t *grants)
{
    uint64_t granted_in = 0, bit = 1;
    for (int j = 0; j < n; j++, bit <<= 1) {
        const uint64_t r = req_out[j];
        if (!r) continue;
        const int i = first_at(r, s->g[j]);
        grants[i] |= bit;
        granted_in |= 1ULL << i;
    }
    return granted_in;
}

/* Every input holding a grant accepts the first granting output at or
 * after a[i]; in iteration 1 the accepted pair moves both pointers. Clears
 * the grants it read (the array starts zero in every iteration). */
static inline int accept(islip *s, uint64_t *grants, uint64_t granted_in, int8_t *in_match, int8_t *out_match, int first_iter)
{
    for (uint64_t ins = granted_in; ins; ins &= ins - 1) {
        const int i = __builtin_ctzll(ins);
        const int j = first_at(grants[i], s->acc[i]);
        grants[i] = 0;
        in_match[i] = (int8_t)j;
        out_match[j] = (int8_t)i;
        if (first_iter) {
            s->g[j] = past(i);
            s->acc[i] = past(j);
        }
    }
    return __builtin_popcountll(granted_in);
}

static int islip_allocate(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                          int8_t *in_match, int8_t *out_match)
{
    islip *s = (islip *)a;
    const int n = a->n;
    (void)req_in;
    if (n == 64) { /* a fixed size: four vector stores each, not two library calls */
        memset(in_match, -1, 64);
        memset(out_match, -1, 64);
    } else {
        memset(in_match, -1, (size_t)n);
        memset(out_match, -1, (size_t)n);
    }
    uint64_t granted_in = grant_all(s, req_out, n, s->grants);
    if (!granted_in) return 0;
    if (s->rrm) rrm_move_grant_ptrs(s, s->grants, granted_in);
    int matched = accept(s, s->grants, granted_in, in_match, out_match, 1);
    /* iterations 2..k: what iteration 1 left unmatched, pointers fixed */
    uint64_t free_in = xbar_mask_all(n), free_out = free_in;
    for (int it = 1; it < a->iters; it++) {
        free_in &= ~granted_in;
        for (uint64_t ins = granted_in; ins; ins &= ins - 1) free_out &= ~(1ULL << in_match[__builtin_ctzll(ins)]);
        granted_in = grant(s, req_out, free_out, free_in, s->grants);
        if (!granted_in) break;
        matched += accept(s, s->grants, granted_in, in_match, out_match, 0);
    }
    return matched;
}

static void islip_free(xbar_alloc *a) { free(a); }
static int islip_grant_ptr(const xbar_alloc *a, int out) { return ptr_of(((const islip *)a)->g[out], a->n); }
static int islip_accept_ptr(const xbar_alloc *a, int in) { return ptr_of(((const islip *)a)->acc[in], a->n); }

static const xbar_alloc_ops islip_ops = {
    "islip", islip_allocate, islip_free, islip_grant_ptr, islip_accept_ptr,
};

xbar_alloc *xbar_alloc_islip_new(int n, int iters, int inject_rrm)
{
    islip *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->base.ops = &islip_ops;
    s->base.n = n;
    s->base.iters = iters;
    s->rrm = inject_rrm;
    for (int k = 0; k < 64; k++) s->g[k] = s->acc[k] = ~0ULL; /* all pointers at 0 */
    return &s->base;
}
