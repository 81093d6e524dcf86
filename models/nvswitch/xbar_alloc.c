/* Allocator factory and name table. */
#include "models/nvswitch/xbar_alloc.h"

#include <string.h>

static const char *const alloc_names[] = { "islip", "pim", "wavefront", "rr" };

int xbar_alloc_parse(const char *name)
{
    for (int k = 0; k < (int)(sizeof alloc_names / sizeof alloc_names[0]); k++)
        if (strcmp(name, alloc_names[k]) == 0) return k;
    return -1;
}

const char *xbar_alloc_name(xbar_alloc_kind k)
{
    return (unsigned)k < sizeof alloc_names / sizeof alloc_names[0] ? alloc_names[k] : "?";
}

xbar_alloc *xbar_alloc_new(const xbar_alloc_cfg *cfg)
{
    if (cfg->n < 1 || cfg->n > 64) return NULL;
    int iters = cfg->iters < 1 ? 1 : cfg->iters;
    switch (cfg->kind) {
    case XBAR_ALLOC_ISLIP: return xbar_alloc_islip_new(cfg->n, iters, cfg->inject_rrm);
    case XBAR_ALLOC_PIM: return xbar_alloc_pim_new(cfg->n, iters, cfg->seed);
    case XBAR_ALLOC_WAVEFRONT: return xbar_alloc_wavefront_new(cfg->n);
    case XBAR_ALLOC_RR: return xbar_alloc_rr_new(cfg->n, iters);
    }
    return NULL;
}

void xbar_alloc_free(xbar_alloc *a)
{
    if (a) a->ops->free(a);
}

int xbar_alloc_grant_ptr(const xbar_alloc *a, int out)
{
    return a->ops->grant_ptr ? a->ops->grant_ptr(a, out) : -1;
}

int xbar_alloc_accept_ptr(const xbar_alloc *a, int in)
{
    return a->ops->accept_ptr ? a->ops->accept_ptr(a, in) : -1;
}
