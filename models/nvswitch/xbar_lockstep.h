/* Lock-step comparator: steps two xbar_core_ops implementations (e.g. the C
 * core and the Verilated RTL) on the same inputs every cycle and compares
 * every output field: valid, data and source of each valid output, the credit
 * mask, credit_queue of each credit, and credit_extra. The first `a` is the
 * reference: its outputs are what the caller sees. */
#ifndef XBAR_LOCKSTEP_H
#define XBAR_LOCKSTEP_H

#include "models/nvswitch/xbar_io.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XBAR_LOCKSTEP_KEEP 8

typedef struct xbar_mismatch {
    uint64_t cycle;
    const char *field;  /* "valid", "data", "src", "credit", "credit_queue", "credit_extra"
                         * (compare_match: also "match_in", "match_out") */
    int port;           /* output (valid/data/src) or input (credit*) index; -1 for whole masks */
    uint64_t a, b;      /* the two values */
} xbar_mismatch;

typedef struct xbar_lockstep {
    const xbar_core_ops *a_ops, *b_ops;
    void *a, *b;
    int ports;
    bool compare_match;           /* also compare the debug matching (match_in, match_out of
                                   * matched inputs): two C cores agree on it; off by default */
    uint64_t cycles_compared;
    uint64_t mismatches;          /* differing fields summed over all cycles */
    uint64_t mismatch_cycles;     /* cycles with at least one difference */
    int n_kept;
    xbar_mismatch kept[XBAR_LOCKSTEP_KEEP]; /* the first few, in order */
    xbar_out out_b;               /* scratch: b's outputs of the last cycle */
} xbar_lockstep;

/* Takes ownership of both implementations (freed by xbar_lockstep_free). */
xbar_lockstep *xbar_lockstep_new(const xbar_core_ops *a_ops, void *a,
                                 const xbar_core_ops *b_ops, void *b, int ports);
void xbar_lockstep_free(xbar_lockstep *ls);
/* One cycle of both; `out` receives a's outputs. Returns the number of
 * differing fields in this cycle. */
int xbar_lockstep_step(xbar_lockstep *ls, const xbar_in *in, xbar_out *out);
/* The comparison alone, for a caller that steps the two cores itself
 * (e.g. on inputs that differ in form but not in meaning, as presentation
 * runs): compares one cycle's outputs of a and b, counts it as a cycle
 * compared, returns the number of differing fields. */
int xbar_lockstep_compare(xbar_lockstep *ls, const xbar_out *out_a, const xbar_out *out_b);
/* "cycle 12 data[out 3]: a=0x.. b=0x.." for kept mismatch k. */
void xbar_lockstep_describe(const xbar_lockstep *ls, int k, char *buf, size_t n);

/* The comparator itself as an xbar_core_ops (impl = xbar_lockstep *), so the
 * nvswitch component runs model=both exactly like model=tl. */
extern const xbar_core_ops xbar_lockstep_ops;

#endif
