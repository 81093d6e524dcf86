/* The Verilated crossbar as the nvswitch component's core (model=rtl|both):
 * maps the C core's configuration onto a Verilated model. The RTL implements
 * VOQ input buffering with iSLIP; everything else is refused with a reason
 * (the component turns it into an input error naming the key). */
#include <stdio.h>

#include "models/nvswitch/xbar_core.h"
#include "xbar_rtl.h"

void *xbar_rtl_core_new(const struct xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops, char *why,
                        size_t why_n)
{
    if (cfg->queue != XBAR_QUEUE_VOQ) return snprintf(why, why_n, "queue=fifo: the RTL has VOQs only; use queue=voq with model=rtl|both"), NULL;
    if (cfg->alloc != XBAR_ALLOC_ISLIP) return snprintf(why, why_n, "alloc: the RTL allocator is iSLIP; use alloc=islip with model=rtl|both"), NULL;
    if (cfg->shared) return snprintf(why, why_n, "shared=1: the RTL has a private buffer per VOQ; use shared=0 with model=rtl|both"), NULL;
    if (cfg->depth <= 0)
        return snprintf(why, why_n, "depth=%d: the RTL VOQs are bounded; use depth=1..64 with model=rtl|both", cfg->depth), NULL;
    xbar_rtl_cfg rc = { .ports = (unsigned)cfg->ports, .iters = (unsigned)cfg->iters, .latency = (unsigned)cfg->latency,
                        .depth = (unsigned)cfg->depth, .fanout_read = cfg->fanout_read ? 1u : 0u };
    xbar_rtl *x = xbar_rtl_new(&rc, why, why_n);
    if (!x) return NULL;
    if (trace) xbar_rtl_trace_open(x, trace, "rtl", NULL, 0, 0);
    *ops = &xbar_rtl_core_ops;
    return x;
}
