/* Lock-step comparator: steps two xbar_core_ops implementations (e.g. the C
 * core and the Verilated RTL) on the same inputs every cycle and compares
 * every output field: valid, data and source of each valid output, the credit
 * mask, credit_queue of each credit, and credit_extra. The first `a` is the
 * reference: its outputs are what the caller sees. */
#ifndef XBAR_LOCKSTEP_H
#define XBAR_LOCKSTEP_H

#include "models/nvswitch/xbar_io.h"

#include <stddef.h>
#include <stdint.h>

#define XBAR_LOCKSTEP_KEEP 8

typedef struct xbar_mismatch {
    uint64_t cycle;
    const char *field;  /* "valid", "data", "src", "credit", "credit_queue", "credit_extra" */
    int port;           /* output (valid/data/src) or input (credit*) index; -1 for whole masks */
    uint64_t a, b;      /* the two values */
} xbar_mismatch;

typedef struct xbar_lockstep {
    const xbar_core_ops *a_ops, *b_ops;
    void *a, *b;
    int ports;
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
/* "cycle 12 data[out 3]: a=0x.. b=0x.." for kept mismatch k. */
void xbar_lockstep_describe(const xbar_lockstep *ls, int k, char *buf, size_t n);

/* The comparator itself as an xbar_core_ops (impl = xbar_lockstep *), so the
 * nvswitch component runs model=both exactly like model=tl. */
extern const xbar_core_ops xbar_lockstep_ops;

#endif
