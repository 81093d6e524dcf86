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

typedef struct islip {
    xbar_alloc base;
    int rrm;
    uint8_t g[64];   /* grant pointer per output */
    uint8_t acc[64]; /* accept pointer per input */
} islip;

static int islip_allocate(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                          int8_t *in_match, int8_t *out_match)
{
    islip *s = (islip *)a;
    const int n = a->n;
    (void)req_in;
    uint64_t free_in = xbar_mask_all(n), free_out = xbar_mask_all(n);
    uint64_t grants[64];
    int matched = 0;
    for (int i = 0; i < n; i++) in_match[i] = out_match[i] = -1;

    for (int it = 0; it < a->iters; it++) {
        uint64_t granted_in = 0; /* inputs holding at least one grant */
        for (uint64_t outs = free_out; outs; outs &= outs - 1) {
            int j = __builtin_ctzll(outs);
            uint64_t r = req_out[j] & free_in;
            if (!r) continue;
            int i = xbar_rr_pick(r, s->g[j]);
            if (!(granted_in >> i & 1)) { granted_in |= 1ULL << i; grants[i] = 0; }
            grants[i] |= 1ULL << j;
            if (s->rrm && it == 0) s->g[j] = (uint8_t)(i + 1 == n ? 0 : i + 1);
        }
        if (!granted_in) break;
        for (uint64_t ins = granted_in; ins; ins &= ins - 1) {
            int i = __builtin_ctzll(ins);
            int j = xbar_rr_pick(grants[i], s->acc[i]);
            in_match[i] = (int8_t)j;
            out_match[j] = (int8_t)i;
            free_in &= ~(1ULL << i);
            free_out &= ~(1ULL << j);
            matched++;
            if (it == 0) {
                s->g[j] = (uint8_t)(i + 1 == n ? 0 : i + 1);
                s->acc[i] = (uint8_t)(j + 1 == n ? 0 : j + 1);
            }
        }
    }
    return matched;
}

static void islip_free(xbar_alloc *a) { free(a); }
static int islip_grant_ptr(const xbar_alloc *a, int out) { return ((const islip *)a)->g[out]; }
static int islip_accept_ptr(const xbar_alloc *a, int in) { return ((const islip *)a)->acc[in]; }

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
    return &s->base;
}
