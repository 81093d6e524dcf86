/* Destination patterns over N endpoints (the fabric tests' traffic): each
 * source asks for its next destination; every draw uses the source's own rng. */
#ifndef SIM_PATTERN_H
#define SIM_PATTERN_H

#include "sim/rng.h"

#include <stddef.h>
#include <stdint.h>

enum sim_pattern_kind { SIM_PAT_UNIFORM, SIM_PAT_PERMUTATION, SIM_PAT_TRANSPOSE, SIM_PAT_INCAST, SIM_PAT_ALLTOALL, SIM_PAT_HOTSPOT };
#define SIM_PATTERN_CHOICES "uniform|permutation|transpose|incast|alltoall|hotspot"

typedef struct sim_pattern {
    enum sim_pattern_kind kind;
    uint32_t n;               /* endpoints */
    uint32_t incast_dst;      /* incast: the target (it sends nothing itself) */
    uint32_t hot;             /* hotspot: the hot endpoint */
    double hot_frac;          /* hotspot: fraction of each source's packets to it */
    uint32_t *perm;           /* permutation: a derangement (n entries) */
} sim_pattern;

/* 0, or -1 with why (transpose needs N = k*k; incast_dst/hot below N; N >= 2). */
int sim_pattern_init(sim_pattern *p, enum sim_pattern_kind kind, uint32_t n, uint64_t seed, char *why, size_t why_n);
void sim_pattern_free(sim_pattern *p);
/* Does src send at all (incast: its target does not). */
int sim_pattern_sends(const sim_pattern *p, uint32_t src);
/* The next destination of src (never src); *walk is the source's alltoall position (start at 0). */
uint32_t sim_pattern_next(const sim_pattern *p, uint32_t src, sim_rng *r, uint64_t *walk);

#endif
