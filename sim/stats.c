#include "sim/stats.h"
#include "sim/pdes.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The bucket key of x > 0: the top bits of an IEEE double (exponent, then the
 * first SIM_HIST_SUB_BITS mantissa bits) are monotone in x and cut each octave
 * into SIM_HIST_SUB_BUCKETS equal parts. Subnormals are scaled by 2^64 (exact)
 * into normal range and their keys shifted below the normals' (which start at
 * SIM_HIST_SUB_BUCKETS), so the key stays monotone and log-linear there too. */
#define SUB_SHIFT (52 - SIM_HIST_SUB_BITS)
static inline int32_t hist_key(double x)
{
    uint64_t bits;
    if (x >= DBL_MIN) {
        memcpy(&bits, &x, sizeof bits);
        return (int32_t)(bits >> SUB_SHIFT);
    }
    double y = x * 0x1p64;
    memcpy(&bits, &y, sizeof bits);
    return (int32_t)(bits >> SUB_SHIFT) - 64 * SIM_HIST_SUB_BUCKETS;
}

void sim_hist_init(sim_hist *h, const char *name)
{
    memset(h, 0, sizeof *h);
    h->name = name;
}

void sim_hist_free(sim_hist *h)
{
    free(h->b);
    h->b = NULL;
    h->nb = 0;
    h->n = 0;
    h->zeros = 0;
    h->sum = 0;
}

void sim_hist_clear(sim_hist *h)
{
    if (h->b) memset(h->b, 0, h->nb * sizeof *h->b);
    h->n = 0;
    h->zeros = 0;
    h->sum = 0;
}

/* Widens the bucket range to whole octaves covering key: at most one
 * reallocation per new octave, however many samples come. */
static void hist_cover(sim_hist *h, int32_t key)
{
    const int32_t S = SIM_HIST_SUB_BUCKETS;
    int32_t lo = h->nb ? h->key_lo : key, hi = h->nb ? h->key_lo + (int32_t)h->nb : key + 1;
    if (key < lo) lo = key;
    if (key >= hi) hi = key + 1;
    lo = (int32_t)(floor((double)lo / S) * S);
    hi = (int32_t)(ceil((double)hi / S) * S);
    sim_hist_bucket *nbk = calloc((size_t)(hi - lo), sizeof *nbk);
    if (!nbk) sim_fatal("sim_hist %s: out of memory", h->name ? h->name : "");
    if (h->nb) memcpy(nbk + (h->key_lo - lo), h->b, h->nb * sizeof *h->b);
    free(h->b);
    h->b = nbk;
    h->key_lo = lo;
    h->nb = (uint32_t)(hi - lo);
}

void sim_hist_add(sim_hist *h, double x)
{
    if (!(x >= 0) || x > DBL_MAX)
        sim_fatal("sim_hist %s: sample %g (allowed: finite and >= 0)", h->name ? h->name : "", x);
    if (!h->n || x < h->min) h->min = x;
    if (!h->n || x > h->max) h->max = x;
    h->n++;
    h->sum += x;
    if (x == 0) {
        h->zeros++;
        return;
    }
    int32_t key = hist_key(x);
    uint32_t i = (uint32_t)(key - h->key_lo);   /* wraps to huge when below key_lo */
    if (!h->nb || i >= h->nb) {
        hist_cover(h, key);
        i = (uint32_t)(key - h->key_lo);
    }
    h->b[i].n++;
    h->b[i].sum += x;
}

void sim_hist_merge(sim_hist *h, const sim_hist *from)
{
    if (!from->n) return;
    if (!h->n || from->min < h->min) h->min = from->min;
    if (!h->n || from->max > h->max) h->max = from->max;
    h->n += from->n;
    h->sum += from->sum;
    h->zeros += from->zeros;
    for (uint32_t j = 0; j < from->nb; j++) {
        if (!from->b[j].n) continue;
        int32_t key = from->key_lo + (int32_t)j;
        uint32_t i = (uint32_t)(key - h->key_lo);
        if (!h->nb || i >= h->nb) {
            hist_cover(h, key);
            i = (uint32_t)(key - h->key_lo);
        }
        h->b[i].n += from->b[j].n;
        h->b[i].sum += from->b[j].sum;
    }
}

/* On the wire: n, zeros, key_lo, nb, sum, min, max, then the buckets. */
typedef struct hist_head { uint64_t n, zeros; int32_t key_lo; uint32_t nb; double sum, min, max; } hist_head;

void sim_hist_gather(sim_hist *h, const sim_pdes_transport *tr)
{
    sim_pdes_buf mine = { 0 };
    hist_head hh = { h->n, h->zeros, h->key_lo, h->nb, h->sum, h->min, h->max };
    sim_pdes_buf_put(&mine, &hh, sizeof hh);
    if (h->nb) sim_pdes_buf_put(&mine, h->b, h->nb * sizeof *h->b);
    sim_pdes_buf *all = calloc(tr->size, sizeof *all);
    if (!all) sim_fatal("sim_hist %s: out of memory", h->name ? h->name : "");
    sim_pdes_gather(tr, mine.data, mine.len, all);
    if (tr->rank == 0) {
        sim_hist_clear(h);   /* rank 0's own come back as all[0]: every rank's in rank order */
        for (unsigned r = 0; r < tr->size; r++) {
            hist_head rh;
            if (all[r].len < sizeof rh) sim_fatal("sim_hist %s: rank %u sent %zu bytes", h->name ? h->name : "", r, all[r].len);
            memcpy(&rh, all[r].data, sizeof rh);
            if (all[r].len != sizeof rh + rh.nb * sizeof(sim_hist_bucket))
                sim_fatal("sim_hist %s: rank %u sent %zu bytes for %u buckets", h->name ? h->name : "", r, all[r].len, rh.nb);
            sim_hist part = { .name = h->name, .n = rh.n, .sum = rh.sum, .min = rh.min, .max = rh.max, .zeros = rh.zeros,
                              .key_lo = rh.key_lo, .nb = rh.nb };
            part.b = rh.nb ? malloc(rh.nb * sizeof *part.b) : NULL;
            if (rh.nb) memcpy(part.b, all[r].data + sizeof rh, rh.nb * sizeof *part.b);
            sim_hist_merge(h, &part);
            free(part.b);
        }
    }
    free(all);
    free(mine.data);
}

double sim_hist_mean(const sim_hist *h) { return h->n ? h->sum / (double)h->n : 0.0; }

/* A bucket's representative: the mean of its samples, kept inside [min, max]
 * against rounding in the sum. */
static double bucket_value(const sim_hist *h, const sim_hist_bucket *b)
{
    double v = b->sum / (double)b->n;
    return v < h->min ? h->min : v > h->max ? h->max : v;
}

double sim_hist_percentile(sim_hist *h, double p)
{
    if (!h->n) return 0.0;
    if (p <= 0) return h->min;
    if (p >= 100) return h->max;
    /* nearest rank: the smallest value with at least p% of samples at or below it */
    /* p * n first: p / 100 is inexact (0.07 * 100 = 7.000000000000001 ranked p7 of 100 samples as the 8th) */
    uint64_t rank = (uint64_t)ceil(p * (double)h->n / 100.0);
    if (rank < 1) rank = 1;
    if (rank > h->n) rank = h->n;
    if (rank <= h->zeros) return 0.0;
    uint64_t seen = h->zeros;
    for (uint32_t i = 0; i < h->nb; i++) {
        seen += h->b[i].n;
        if (seen >= rank) return bucket_value(h, &h->b[i]);
    }
    return h->max;   /* not reached: the buckets hold n - zeros samples */
}

uint64_t sim_hist_count_range(const sim_hist *h, double lo, double hi)
{
    uint64_t c = (lo <= 0 && 0 < hi) ? h->zeros : 0;
    for (uint32_t i = 0; i < h->nb; i++) {
        if (!h->b[i].n) continue;
        double v = bucket_value(h, &h->b[i]);
        if (v >= lo && v < hi) c += h->b[i].n;
    }
    return c;
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
        uint64_t *count = calloc(bins, sizeof *count);
        if (!count) sim_fatal("out of memory");
        if (h->zeros) count[0] += h->zeros;   /* 0 is min when present */
        for (uint32_t i = 0; i < h->nb; i++) {
            if (!h->b[i].n) continue;
            size_t b = (size_t)((bucket_value(h, &h->b[i]) - lo) / width);
            count[b >= bins ? bins - 1 : b] += h->b[i].n;
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
