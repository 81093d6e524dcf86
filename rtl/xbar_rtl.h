/* C-callable bridge to the Verilated crossbar RTL (rtl/xbar_top.sv).
 * The only C++ in the project is behind this header (rtl/xbar_rtl.cpp).
 *
 * The RTL is Verilated once per configuration: NPORTS, LATENCY and
 * FANOUT_READ are fixed per model, DEPTH is the physical VOQ depth (the
 * upstream may use fewer credits), the iSLIP iteration count is a run-time
 * configuration input (1..iters_max). The configurations in XBAR_RTL_VARIANTS
 * (rtl/CMakeLists.txt) are built into the binary; any other is Verilated on
 * first use and cached under the build tree (xbar_rtl_variant.h). One step is one clock cycle
 * with the semantics of models/nvswitch/xbar_io.h and docs/crossbar-cycle-rules.md. */
#ifndef XBAR_RTL_H
#define XBAR_RTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/nvswitch/xbar_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sim_trace sim_trace;
typedef struct sim_kernel sim_kernel;

/* One Verilated configuration. */
typedef struct xbar_rtl_variant {
    unsigned ports;       /* NPORTS */
    unsigned latency;     /* LATENCY (cycles from allocation to the output) */
    unsigned depth;       /* DEPTH: physical flits per VOQ */
    unsigned iters_max;   /* ITERS: iSLIP iterations built */
    unsigned flit_bits;   /* FLIT_W */
    unsigned fanout_read; /* FANOUT_READ: multicast fan-out read built in */
} xbar_rtl_variant;

/* The configurations built into this binary (prebuilt; others are built on first use). */
size_t xbar_rtl_variants(const xbar_rtl_variant **list);

typedef struct xbar_rtl_cfg {
    unsigned ports;       /* 2..64 */
    unsigned iters;       /* 1..64 */
    unsigned latency;     /* 1..1024 */
    unsigned depth;       /* credits per VOQ the upstream will use: 1..variant depth (64) */
    unsigned fanout_read; /* 1: multicast fan-out read */
} xbar_rtl_cfg;

typedef struct xbar_rtl xbar_rtl;

/* A new switch, held in reset for 2 cycles and released: a prebuilt model
 * that fits, else this configuration Verilated on first use (a progress line
 * on stderr; exits with status 1 if that build fails, see xbar_rtl_variant.h).
 * NULL when a field is out of range or the build cannot run here: `why`
 * then names the field and what is allowed, or what is missing. */
xbar_rtl *xbar_rtl_new(const xbar_rtl_cfg *cfg, char *why, size_t n);
void xbar_rtl_free(xbar_rtl *x);

/* rst_ni low for `cycles` clock edges, then high. The cycle count restarts at 0. */
void xbar_rtl_reset(xbar_rtl *x, unsigned cycles);
/* One clock cycle: drive `in` (the flits presented this cycle), then fill
 * `out` with what the switch drives this cycle (all fields written), then
 * the rising edge. */
void xbar_rtl_step(xbar_rtl *x, const xbar_in *in, xbar_out *out);

uint64_t xbar_rtl_cycle(const xbar_rtl *x);            /* cycles stepped since reset */
bool xbar_rtl_overflow(const xbar_rtl *x);             /* err_overflow_o: a credit was overrun */
unsigned xbar_rtl_grant_ptr(const xbar_rtl *x, unsigned out_port);
unsigned xbar_rtl_accept_ptr(const xbar_rtl *x, unsigned in_port);
unsigned xbar_rtl_occupancy(const xbar_rtl *x, unsigned in_port); /* flits held at an input */
const xbar_rtl_variant *xbar_rtl_variant_of(const xbar_rtl *x);

/* Samples the RTL ports into `t` every cycle, under scope `scope` (nested
 * below the current one): top-level buses plus a scope per port. Time of a
 * cycle: sim_now(k) when k is given (the harness steps from a clock edge);
 * else t0_ps + cycle * period_ps; with k NULL and period_ps 0, the time of
 * the kernel the trace was opened on. Values are written only when they change.
 * Declares variables, so call it before sim_run() or sim_trace_freeze(). */
void xbar_rtl_trace_open(xbar_rtl *x, sim_trace *t, const char *scope, sim_kernel *k, uint64_t t0_ps,
                         uint64_t period_ps);

/* The RTL as an xbar_core_ops implementation (impl = xbar_rtl *). */
extern const xbar_core_ops xbar_rtl_core_ops;

/* The factory the nvswitch component calls for model=rtl|both
 * (nvswitch_register_rtl): maps an xbar_core_cfg onto a Verilated model, or
 * NULL with the reason (only voq + islip, bounded depth; fanout_read where Verilated). */
struct xbar_core_cfg;
void *xbar_rtl_core_new(const struct xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops, char *why,
                        size_t why_n);

/* Absolute path of rtl/ (the Verilog sources), for Icarus runs. */
const char *xbar_rtl_source_dir(void);

#ifdef __cplusplus
}
#endif

#endif
