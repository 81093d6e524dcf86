/* One Verilated crossbar configuration as the bridge (xbar_rtl.cpp) sees it:
 * its parameters and a factory. Each variant's glue (xbar_rtl_variant.cpp.in,
 * instantiated by xbar_rtl_variant.cmake) defines one: linked in for the
 * prebuilt variants (XBAR_RTL_VARIANTS), or in a shared object built and
 * loaded on first use (xbar_rtl_build.c). Plain C, so the loader is C. */
#ifndef XBAR_RTL_VARIANT_H
#define XBAR_RTL_VARIANT_H

#include "xbar_rtl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xbar_rtl_variant_desc {
    xbar_rtl_variant v;
    void *(*make)(void); /* a new model, reset not yet applied: an xbar_rtl_glue::model_base * (xbar_rtl_model.hpp) */
} xbar_rtl_variant_desc;

/* The symbol a runtime-built shared object exports. */
#define XBAR_RTL_VARIANT_ENTRY "xbar_rtl_variant_entry"
typedef const xbar_rtl_variant_desc *(*xbar_rtl_variant_entry_fn)(void);

/* The variant `want` (ports, latency, iters_max, fanout_read; depth and
 * flit_bits must be the build's), from the cache of runtime-built variants
 * under the build tree, Verilated and compiled there first if missing or
 * stale (keyed by the parameters and a hash of the RTL sources, the glue,
 * the Verilator version and the compiler flags). Prints a progress line on
 * stderr while it builds. Returns NULL with `why` when the build cannot run
 * in this environment (no verilator, cmake or compiler; cache not writable):
 * the caller reports it as an input error (exit 2). A build that runs and
 * fails is a bug in the RTL or the glue: it prints what failed and the log
 * file and exits with status 1. Thread-compatible, not thread-safe;
 * process-safe (concurrent first uses wait on a lock, then share the build). */
const xbar_rtl_variant_desc *xbar_rtl_variant_load(const xbar_rtl_variant *want, char *why, size_t n);

/* The directory of runtime-built variants (LINKSTACK_RTL_VARIANT_DIR, else
 * <build>/rtl-variants), and the cache file name stem of `v`
 * ("Vxbar_p12_l1_i4_f1-<16 hex digits>"), for tests. */
const char *xbar_rtl_variant_dir(void);
int xbar_rtl_variant_key(const xbar_rtl_variant *v, char *stem, size_t n);

#ifdef __cplusplus
}
#endif

#endif
