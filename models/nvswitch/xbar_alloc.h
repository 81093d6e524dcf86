/* One allocator interface for the crossbar (BookSim2's src/allocators/ idea,
 * bitmask form): requests in, a matching out, state (pointers, PRNG) inside.
 * Each algorithm lives in its own file: alloc_islip.c, alloc_pim.c,
 * alloc_wavefront.c, alloc_rr.c. The rules are in docs/crossbar-cycle-rules.md
 * and docs/models/nvswitch.md. */
#ifndef XBAR_ALLOC_H
#define XBAR_ALLOC_H

#include <stdint.h>

typedef enum xbar_alloc_kind {
    XBAR_ALLOC_ISLIP = 0,
    XBAR_ALLOC_PIM,
    XBAR_ALLOC_WAVEFRONT,
    XBAR_ALLOC_RR,          /* separable input-first, round-robin arbiters */
} xbar_alloc_kind;

typedef struct xbar_alloc xbar_alloc;

typedef struct xbar_alloc_ops {
    const char *name;
    /* req_in[i]: bit j = input i requests output j; req_out[j]: the same
     * matrix transposed (bit i). Fills in_match[i] (output or -1) and
     * out_match[j] (input or -1); returns the number of matched pairs. */
    int (*allocate)(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                    int8_t *in_match, int8_t *out_match);
    void (*free)(xbar_alloc *a);
    /* Optional pointer inspection for tests (NULL: no such pointer). */
    int (*grant_ptr)(const xbar_alloc *a, int out);
    int (*accept_ptr)(const xbar_alloc *a, int in);
} xbar_alloc_ops;

/* Common head of every allocator (first member of each implementation). */
struct xbar_alloc {
    const xbar_alloc_ops *ops;
    int n;          /* ports */
    int iters;      /* iterations (islip, pim, rr); wavefront is maximal in one pass */
};

typedef struct xbar_alloc_cfg {
    xbar_alloc_kind kind;
    int n;
    int iters;
    uint64_t seed;  /* pim */
    int inject_rrm; /* islip only: grant pointers move on every grant (RRM, known wrong) */
} xbar_alloc_cfg;

xbar_alloc *xbar_alloc_new(const xbar_alloc_cfg *cfg);
static inline int xbar_alloc_run(xbar_alloc *a, const uint64_t *req_in, const uint64_t *req_out,
                                 int8_t *in_match, int8_t *out_match)
{
    return a->ops->allocate(a, req_in, req_out, in_match, out_match);
}
void xbar_alloc_free(xbar_alloc *a);

/* "islip" -> XBAR_ALLOC_ISLIP etc.; -1 if unknown. */
int xbar_alloc_parse(const char *name);
const char *xbar_alloc_name(xbar_alloc_kind k);

/* Constructors (one per file). */
xbar_alloc *xbar_alloc_islip_new(int n, int iters, int inject_rrm);
xbar_alloc *xbar_alloc_pim_new(int n, int iters, uint64_t seed);
xbar_alloc *xbar_alloc_wavefront_new(int n);
xbar_alloc *xbar_alloc_rr_new(int n, int iters);

/* Pointer inspection for unit tests (islip: grant g[j], accept a[i];
 * rr: output and input arbiter pointers; wavefront: the priority diagonal in
 * grant_ptr(0)). -1 where the allocator has no such pointer. */
int xbar_alloc_grant_ptr(const xbar_alloc *a, int out);
int xbar_alloc_accept_ptr(const xbar_alloc *a, int in);

/* Shared bit helpers. */
static inline uint64_t xbar_mask_all(int n) { return n >= 64 ? ~0ULL : ((1ULL << n) - 1); }
/* First set bit of m (non-zero) at or after position p, wrapping round. */
static inline int xbar_rr_pick(uint64_t m, int p)
{
    uint64_t hi = m & (~0ULL << p);
    return __builtin_ctzll(hi ? hi : m);
}

#endif
