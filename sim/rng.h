/* Seeded PRNG (xoshiro256**, seeded by splitmix64): every run reproduces from its seed. */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng { uint64_t s[4]; } sim_rng;

void sim_rng_seed(sim_rng *r, uint64_t seed);
/* An independent stream for sub-component `stream` (e.g. a port index). */
void sim_rng_seed_stream(sim_rng *r, uint64_t seed, uint64_t stream);
uint64_t sim_rng_u64(sim_rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t sim_rng_below(sim_rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double sim_rng_double(sim_rng *r);
/* True with probability p. */
static inline int sim_rng_bernoulli(sim_rng *r, double p) { return sim_rng_double(r) < p; }

#endif
