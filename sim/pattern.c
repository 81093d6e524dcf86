/* Destination patterns (sim/pattern.h). */
#include "sim/pattern.h"

#include <stdio.h>
#include <stdlib.h>

int sim_pattern_init(sim_pattern *p, enum sim_pattern_kind kind, uint32_t n, uint64_t seed, char *why, size_t why_n)
{
    uint32_t incast_dst = p->incast_dst, hot = p->hot;
    double hot_frac = p->hot_frac;
    *p = (sim_pattern){ .kind = kind, .n = n, .incast_dst = incast_dst, .hot = hot, .hot_frac = hot_frac };
    if (n < 2) {
        snprintf(why, why_n, "pattern needs at least 2 endpoints, the topology has %u", n);
        return -1;
    }
    if (kind == SIM_PAT_TRANSPOSE) {
        uint32_t k = 0;
        while ((k + 1) * (k + 1) <= n) k++;
        if (k * k != n) {
            snprintf(why, why_n, "pattern=transpose needs a square number of endpoints (k*k), the topology has %u", n);
            return -1;
        }
    }
    if (kind == SIM_PAT_INCAST && incast_dst >= n) {
        snprintf(why, why_n, "incast_dst=%u: allowed 0..%u", incast_dst, n - 1);
        return -1;
    }
    if (kind == SIM_PAT_HOTSPOT && hot >= n) {
        snprintf(why, why_n, "hotspot endpoint %u: allowed 0..%u", hot, n - 1);
        return -1;
    }
    if (kind == SIM_PAT_PERMUTATION) {
        /* Sattolo's algorithm: a uniformly random single cycle, so no fixed point */
        sim_rng r;
        sim_rng_seed_stream(&r, seed, 0x7065726dull);
        p->perm = malloc(n * sizeof *p->perm);
        for (uint32_t i = 0; i < n; i++) p->perm[i] = i;
        for (uint32_t i = n - 1; i > 0; i--) {
            uint32_t j = (uint32_t)sim_rng_below(&r, i);
            uint32_t x = p->perm[i];
            p->perm[i] = p->perm[j];
            p->perm[j] = x;
        }
    }
    return 0;
}

void sim_pattern_free(sim_pattern *p)
{
    free(p->perm);
    p->perm = NULL;
}

int sim_pattern_sends(const sim_pattern *p, uint32_t src)
{
    if (p->kind == SIM_PAT_INCAST) return src != p->incast_dst;
    if (p->kind == SIM_PAT_TRANSPOSE) {
        uint32_t k = 0;
        while ((k + 1) * (k + 1) <= p->n) k++;
        return src / k != src % k;   /* the diagonal maps onto itself */
    }
    return 1;
}

static uint32_t uniform_other(uint32_t n, uint32_t src, sim_rng *r)
{
    uint32_t d = (uint32_t)sim_rng_below(r, n - 1);
    return d >= src ? d + 1 : d;
}

uint32_t sim_pattern_next(const sim_pattern *p, uint32_t src, sim_rng *r, uint64_t *walk)
{
    switch (p->kind) {
    case SIM_PAT_PERMUTATION: return p->perm[src];
    case SIM_PAT_TRANSPOSE: {
        uint32_t k = 0;
        while ((k + 1) * (k + 1) <= p->n) k++;
        return (src % k) * k + src / k;
    }
    case SIM_PAT_INCAST: return p->incast_dst;
    case SIM_PAT_ALLTOALL: {
        uint32_t d = (uint32_t)((src + 1 + *walk % (p->n - 1)) % p->n);
        (*walk)++;
        return d;
    }
    case SIM_PAT_HOTSPOT:
        if (src != p->hot && sim_rng_bernoulli(r, p->hot_frac)) return p->hot;
        return uniform_other(p->n, src, r);
    case SIM_PAT_UNIFORM:
    default: return uniform_other(p->n, src, r);
    }
}
