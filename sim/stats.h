/* Statistics: counters, histograms with exact percentiles, and throughput
 * meters over a measured window after a warm-up. */
#ifndef SIM_STATS_H
#define SIM_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "sim/kernel.h"

typedef struct cJSON cJSON;

/* Exact: every sample is kept; percentiles sort on demand (nearest-rank). */
typedef struct sim_hist {
    const char *name;
    double *v;
    size_t n, cap;
    int sorted;
    double sum, min, max;
} sim_hist;

void sim_hist_init(sim_hist *h, const char *name);
void sim_hist_free(sim_hist *h);
void sim_hist_add(sim_hist *h, double x);
void sim_hist_clear(sim_hist *h);
static inline size_t sim_hist_count(const sim_hist *h) { return h->n; }
double sim_hist_mean(const sim_hist *h);                /* 0 when empty */
double sim_hist_percentile(sim_hist *h, double p);      /* p in [0,100], nearest-rank; 0 when empty */
/* {"count","mean","min","p50","p99","max","bins":[{"lo","hi","count"}...]} with `bins` equal-width bins (0 = none). */
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
