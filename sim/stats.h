/* Statistics: counters, histograms with bounded memory and a stated error on
 * percentiles, and throughput meters over a measured window after a warm-up. */
#ifndef SIM_STATS_H
#define SIM_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "sim/kernel.h"

typedef struct cJSON cJSON;

/* A log-linear bucket histogram (HdrHistogram's layout, on doubles): every
 * power-of-two octave [2^e, 2^(e+1)) is cut into 2^SIM_HIST_SUB_BITS equal
 * buckets, so a bucket is at most 1/2^SIM_HIST_SUB_BITS of its lower edge
 * wide. Each bucket keeps its count and the sum of its samples.
 *
 * Exact: count, sum, mean, min, max, and percentile 0 (= min) and 100 (= max).
 * Percentiles: the nearest-rank sample's bucket is found exactly; the value
 * returned is the mean of the samples in that bucket, which lies in the same
 * bucket, so |returned - exact| < exact * SIM_HIST_REL_ERROR = exact / 128
 * (0.78 %, inside the 1 % the project promises; tests/check_stats.c holds it
 * against exact nearest-rank percentiles). A bucket that holds one distinct
 * value (every integer below 256, for example) returns it exactly.
 * Memory: the buckets span only the octaves between the smallest and largest
 * sample seen: 16 bytes x 128 per octave, a few kB for latencies, at most
 * ~4.3 MB for samples spanning the whole double range. It does not grow with
 * the number of samples.
 * Samples must be finite and >= 0 (a latency, a size); anything else is a
 * model bug and stops the run (sim_fatal). For positive samples below
 * DBL_MIN (subnormals) the buckets are finer still; the bound holds. */
#ifndef SIM_HIST_SUB_BITS
#define SIM_HIST_SUB_BITS 7
#endif
#define SIM_HIST_SUB_BUCKETS (1 << SIM_HIST_SUB_BITS)
#define SIM_HIST_REL_ERROR (1.0 / SIM_HIST_SUB_BUCKETS)

typedef struct sim_hist_bucket {
    uint64_t n;
    double sum;
} sim_hist_bucket;

typedef struct sim_hist {
    const char *name;
    size_t n;                 /* samples */
    double sum, min, max;     /* exact */
    uint64_t zeros;           /* samples == 0 (no octave holds 0) */
    sim_hist_bucket *b;       /* buckets for keys key_lo .. key_lo + nb - 1 */
    int32_t key_lo;
    uint32_t nb;
} sim_hist;

void sim_hist_init(sim_hist *h, const char *name);
void sim_hist_free(sim_hist *h);
void sim_hist_add(sim_hist *h, double x);
void sim_hist_clear(sim_hist *h);
/* Adds from's samples to h (counts and sums per bucket). */
void sim_hist_merge(sim_hist *h, const sim_hist *from);
/* A run over ranks (collective): rank 0's h becomes every rank's samples, merged
 * in rank order (exact whatever the order when the samples are integers, as
 * whole ps are); elsewhere h is unchanged. */
struct sim_pdes_transport;
void sim_hist_gather(sim_hist *h, const struct sim_pdes_transport *tr);
static inline size_t sim_hist_count(const sim_hist *h) { return h->n; }
double sim_hist_mean(const sim_hist *h);                /* 0 when empty */
/* p in [0,100], nearest rank, within SIM_HIST_REL_ERROR of the exact value (see above); 0 when empty */
double sim_hist_percentile(sim_hist *h, double p);
/* Samples in [lo, hi), each placed at its bucket's mean (so within SIM_HIST_REL_ERROR of where it is). */
uint64_t sim_hist_count_range(const sim_hist *h, double lo, double hi);
/* {"count","mean","min","p50","p99","max","bins":[{"lo","hi","count"}...]} with `bins`
 * equal-width bins from min to max (0 = none), counted as sim_hist_count_range does;
 * the last bin includes max. */
cJSON *sim_hist_json(sim_hist *h, unsigned bins);

/* A throughput meter: counts units (bytes, flits) only inside [start, end). */
typedef struct sim_meter {
    const char *name;
    sim_time_ps start_ps, end_ps;  /* window; end = SIM_TIME_MAX until closed */
    uint64_t units;
    uint64_t units_total;
} sim_meter;
void sim_meter_init(sim_meter *m, const char *name, sim_time_ps warmup_ps);
static inline void sim_meter_add(sim_meter *m, sim_time_ps now, uint64_t units)
{
    m->units_total += units;
    if (now >= m->start_ps && now < m->end_ps) m->units += units;
}
void sim_meter_close(sim_meter *m, sim_time_ps now);     /* ends the window */
/* Units per second over the window (needs a closed window or `now`). */
double sim_meter_rate_per_s(const sim_meter *m, sim_time_ps now);

#endif
