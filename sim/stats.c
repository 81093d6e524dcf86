#include "sim/stats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sim_hist_init(sim_hist *h, const char *name)
{
    memset(h, 0, sizeof *h);
    h->name = name;
}

void sim_hist_free(sim_hist *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

void sim_hist_clear(sim_hist *h)
{
    h->n = 0;
    h->sum = 0;
    h->sorted = 0;
}

void sim_hist_add(sim_hist *h, double x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 256;
        h->v = realloc(h->v, h->cap * sizeof *h->v);
        if (!h->v) sim_fatal("out of memory");
    }
    if (!h->n || x < h->min) h->min = x;
    if (!h->n || x > h->max) h->max = x;
    h->v[h->n++] = x;
    h->sum += x;
    h->sorted = 0;
}

double sim_hist_mean(const sim_hist *h) { return h->n ? h->sum / (double)h->n : 0.0; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sim_hist_percentile(sim_hist *h, double p)
{
    if (!h->n) return 0.0;
    if (!h->sorted) {
        qsort(h->v, h->n, sizeof *h->v, cmp_double);
        h->sorted = 1;
    }
    if (p <= 0) return h->v[0];
    if (p >= 100) return h->v[h->n - 1];
    /* nearest rank: the smallest value with at least p% of samples at or below it */
    /* p * n first: p / 100 is inexact (0.07 * 100 = 7.000000000000001 ranked p7 of 100 samples as the 8th) */
    size_t rank = (size_t)ceil(p * (double)h->n / 100.0);
    if (rank < 1) rank = 1;
    return h->v[rank - 1];
}

cJSON *sim_hist_json(sim_hist *h, unsigned bins)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)h->n);
    cJSON_AddNumberToObject(o, "mean", sim_hist_mean(h));
    cJSON_AddNumberToObject(o, "min", h->n ? h->min : 0);
    cJSON_AddNumberToObject(o, "p50", sim_hist_percentile(h, 50));
    cJSON_AddNumberToObject(o, "p99", sim_hist_percentile(h, 99));
    cJSON_AddNumberToObject(o, "max", h->n ? h->max : 0);
    if (bins && h->n) {
        cJSON *arr = cJSON_AddArrayToObject(o, "bins");
        double lo = h->min, width = (h->max - h->min) / bins;
        if (width <= 0) width = 1;
        size_t *count = calloc(bins, sizeof *count);
        if (!count) sim_fatal("out of memory");
        for (size_t i = 0; i < h->n; i++) {
            size_t b = (size_t)((h->v[i] - lo) / width);
            count[b >= bins ? bins - 1 : b]++;
        }
        for (unsigned b = 0; b < bins; b++) {
            cJSON *bin = cJSON_CreateObject();
            cJSON_AddNumberToObject(bin, "lo", lo + b * width);
            cJSON_AddNumberToObject(bin, "hi", lo + (b + 1) * width);
            cJSON_AddNumberToObject(bin, "count", (double)count[b]);
            cJSON_AddItemToArray(arr, bin);
        }
        free(count);
    }
    return o;
}

void sim_meter_init(sim_meter *m, const char *name, sim_time_ps warmup_ps)
{
    memset(m, 0, sizeof *m);
    m->name = name;
    m->start_ps = warmup_ps;
    m->end_ps = SIM_TIME_MAX;
}

void sim_meter_close(sim_meter *m, sim_time_ps now)
{
    if (m->end_ps == SIM_TIME_MAX) m->end_ps = now;
}

double sim_meter_rate_per_s(const sim_meter *m, sim_time_ps now)
{
    sim_time_ps end = m->end_ps != SIM_TIME_MAX ? m->end_ps : now;
    if (end <= m->start_ps) return 0.0;
    return (double)m->units / ((double)(end - m->start_ps) * 1e-12);
}
