/* The reference crossbar core: docs/crossbar-cycle-rules.md written out
 * plainly, one rule after another, with plain queues, a request matrix and
 * its own plain allocators (islip, pim, wavefront, rr), and no fast path.
 * It takes the fast core's configuration (xbar_core_cfg, checked by
 * xbar_core_cfg_check) and sits behind the same xbar_core_ops interface
 * (xbar_io.h), so it can stand wherever the fast core (xbar_core.c) stands:
 * alone (model=tl core=ref), against the RTL (model=both core=ref), or
 * against the fast core in the random tester (tests/check_xbar_ref.c). It
 * shares no code with the fast core but the configuration and the PRNG that
 * PIM draws from (sim/rng.h), so a slip in either shows as a difference. */
#ifndef XBAR_REF_H
#define XBAR_REF_H

#include "models/nvswitch/xbar_core.h"
#include "models/nvswitch/xbar_io.h"

#include <stdint.h>

typedef struct xbar_ref xbar_ref;

/* NULL if the configuration is invalid (xbar_core_cfg_check). */
xbar_ref *xbar_ref_new(const xbar_core_cfg *cfg);
void xbar_ref_free(xbar_ref *r);
/* One clock cycle, as xbar_core_step: `in` = flits presented this cycle,
 * `out` = what the switch drives this cycle (every field written; entries
 * of unset valid/credit/match bits are 0). A write into a full queue aborts:
 * the caller must respect the credits. */
void xbar_ref_step(xbar_ref *r, const xbar_in *in, xbar_out *out);

/* The reference as an xbar_core_ops implementation (impl = xbar_ref *). */
extern const xbar_core_ops xbar_ref_ops;

/* Inspection, with the meaning of the xbar_core_* function of the same name. */
uint64_t xbar_ref_cycle(const xbar_ref *r);
uint64_t xbar_ref_backlog(const xbar_ref *r);     /* flit copies held (FIFO: entries) */
uint64_t xbar_ref_in_flight(const xbar_ref *r);   /* flits in the output pipeline */
uint32_t xbar_ref_queue_len(const xbar_ref *r, int in, int queue);
int xbar_ref_last_matches(const xbar_ref *r);
int xbar_ref_last_fanout(const xbar_ref *r);
/* Allocator pointers, as xbar_alloc_grant_ptr/accept_ptr report them
 * (islip g[j], a[i]; rr output and input pointers; wavefront the priority
 * diagonal as grant_ptr; -1 where the allocator has none). */
int xbar_ref_grant_ptr(const xbar_ref *r, int out);
int xbar_ref_accept_ptr(const xbar_ref *r, int in);

#endif
