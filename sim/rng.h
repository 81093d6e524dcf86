/* Seeded PRNG (xoshiro256**, seeded by splitmix64): every run reproduces from its seed.
 * The draws are inline: traffic sources and stimulus draw several per port per cycle. */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng { uint64_t s[4]; } sim_rng;

void sim_rng_seed(sim_rng *r, uint64_t seed);
/* An independent stream for sub-component `stream` (e.g. a port index). */
void sim_rng_seed_stream(sim_rng *r, uint64_t seed, uint64_t stream);

static inline uint64_t sim_rng_rotl_(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t sim_rng_u64(sim_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = sim_rng_rotl_(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sim_rng_rotl_(s[3], 45);
    return result;
}

_Noreturn void sim_rng_below_empty_(void);

/* Uniform in [0, n) without modulo bias (rejection sampling); n > 0. A power
 * of two takes a mask instead of the two divisions, with the same result. */
static inline uint64_t sim_rng_below(sim_rng *r, uint64_t n)
{
    if (!n) sim_rng_below_empty_();
    uint64_t x;
    if (!(n & (n - 1))) {   /* then UINT64_MAX % n == n - 1: the same bound as below */
        do x = sim_rng_u64(r); while (x > UINT64_MAX - n);
        return x & (n - 1);
    }
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    do x = sim_rng_u64(r); while (x >= limit);
    return x % n;
}

/* Uniform double in [0, 1). */
static inline double sim_rng_double(sim_rng *r) { return (double)(sim_rng_u64(r) >> 11) * 0x1.0p-53; }
/* True with probability p. */
static inline int sim_rng_bernoulli(sim_rng *r, double p) { return sim_rng_double(r) < p; }

#endif
