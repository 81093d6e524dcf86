/* Plugs the Verilated crossbar (rtl/) into the nvswitch component, so
 * nvswitch_uniform / nvswitch_fanout / xbar_equiv accept model=rtl|both. */
#include "models/nvswitch/nvswitch.h"
#include "xbar_rtl.h"

static void *rtl_core_new(const xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops, char *why, size_t why_n)
{
    return xbar_rtl_core_new(cfg, trace, ops, why, why_n);
}

__attribute__((constructor)) static void xbar_rtl_register(void) { nvswitch_register_rtl(rtl_core_new); }
