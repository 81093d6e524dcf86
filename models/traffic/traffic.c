#include "models/traffic/traffic.h"

#include <stdio.h>
#include <string.h>

static const char *const pattern_names[] = { "uniform", "hotspot", "transpose", "permutation", "alltoall" };

int traffic_pattern_parse(const char *name)
{
    for (int k = 0; k < 5; k++)
        if (strcmp(name, pattern_names[k]) == 0) return k;
    return -1;
}

const char *traffic_pattern_name(traffic_pattern p) { return (unsigned)p < 5 ? pattern_names[p] : "?"; }

int traffic_dest_init(traffic_dest *d, traffic_pattern p, int n, double hotspot_frac, int hotspot_port, uint64_t seed,
                      char *why, size_t why_n)
{
    memset(d, 0, sizeof *d);
    if (n < 1 || n > TRAFFIC_MAX_PORTS) return snprintf(why, why_n, "ports=%d: allowed 1..%d", n, TRAFFIC_MAX_PORTS), -1;
    d->pattern = p;
    d->n = n;
    d->hotspot_frac = hotspot_frac;
    d->hotspot_port = hotspot_port;
    switch (p) {
    case TRAFFIC_UNIFORM:
    case TRAFFIC_ALLTOALL:
        break;
    case TRAFFIC_HOTSPOT:
        if (hotspot_frac < 0 || hotspot_frac > 1)
            return snprintf(why, why_n, "hotspot_frac=%g: allowed 0..1", hotspot_frac), -1;
        if (hotspot_port < 0 || hotspot_port >= n)
            return snprintf(why, why_n, "hotspot port %d: allowed 0..%d", hotspot_port, n - 1), -1;
        break;
    case TRAFFIC_TRANSPOSE: {
        int k = 1;
        while (k * k < n) k++;
        if (k * k != n)
            return snprintf(why, why_n, "pattern=transpose needs ports to be a square (4, 9, 16, 25, 36, 49, 64); got %d", n),
                   -1;
        for (int i = 0; i < n; i++) d->perm[i] = (uint8_t)((i % k) * k + i / k);
        break;
    }
    case TRAFFIC_PERMUTATION: {
        sim_rng r;
        sim_rng_seed_stream(&r, seed, 0x7065726dULL /* "perm" */);
        for (int i = 0; i < n; i++) d->perm[i] = (uint8_t)i;
        for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)sim_rng_below(&r, (uint64_t)i + 1);
            uint8_t t = d->perm[i];
            d->perm[i] = d->perm[j];
            d->perm[j] = t;
        }
        break;
    }
    default:
        return snprintf(why, why_n, "pattern %d unknown", (int)p), -1;
    }
    return 0;
}

int traffic_dest_pick(traffic_dest *d, int src, sim_rng *rng)
{
    switch (d->pattern) {
    case TRAFFIC_UNIFORM: return (int)sim_rng_below(rng, (uint64_t)d->n);
    case TRAFFIC_HOTSPOT:
        if (sim_rng_bernoulli(rng, d->hotspot_frac)) return d->hotspot_port;
        return (int)sim_rng_below(rng, (uint64_t)d->n);
    case TRAFFIC_TRANSPOSE:
    case TRAFFIC_PERMUTATION: return d->perm[src];
    case TRAFFIC_ALLTOALL: {
        if (d->n == 1) return 0;
        int s = d->step[src] + 1; /* 1..n-1: every other port, in turn */
        d->step[src] = (uint8_t)(s == d->n - 1 ? 0 : s);
        return (src + s) % d->n;
    }
    }
    return 0;
}

void traffic_message_init(traffic_message *m, uint64_t dest_mask, uint64_t bytes, uint32_t max_payload, bool multicast)
{
    memset(m, 0, sizeof *m);
    m->dest_mask = dest_mask;
    m->bytes = bytes;
    m->max_payload = max_payload ? max_payload : 1;
    m->multicast = multicast;
    m->remaining_mask = dest_mask;
}

bool traffic_message_next(traffic_message *m, uint32_t *payload, uint64_t *mask)
{
    if (m->offset >= m->bytes || !m->dest_mask) return false;
    uint64_t left = m->bytes - m->offset;
    uint32_t chunk = left < m->max_payload ? (uint32_t)left : m->max_payload;
    *payload = chunk;
    if (m->multicast) {
        *mask = m->dest_mask;
        m->offset += chunk;
    } else {
        uint64_t low = m->remaining_mask & (~m->remaining_mask + 1);
        *mask = low;
        m->remaining_mask &= ~low;
        if (!m->remaining_mask) {
            m->offset += chunk;
            m->remaining_mask = m->dest_mask;
        }
    }
    m->packets_cut++;
    return true;
}

uint64_t traffic_message_packets(uint64_t bytes, uint32_t max_payload, int destinations, bool multicast)
{
    uint64_t chunks = (bytes + max_payload - 1) / max_payload;
    return multicast ? chunks : chunks * (uint64_t)destinations;
}

static const nvlink_preset presets[] = {
    /* NVSwitch 1 / DGX-2: V100 with 6 NVLink2 links; the switch has 18 ports. */
    { "nvlink2", "DGX-2 (V100, NVSwitch 1)", 25.0, 6, 18, 150.0 },
    /* NVSwitch 2 / DGX A100: 12 NVLink3 links per GPU; 36 ports is unverified. */
    { "nvlink3", "DGX A100 (A100, NVSwitch 2)", 25.0, 12, 36, 300.0 },
    /* NVSwitch 3 / DGX H100: 18 NVLink4 links, 64-port switch (HC34). */
    { "nvlink4", "DGX H100 (H100, NVSwitch 3)", 25.0, 18, 64, 450.0 },
    /* NVSwitch 4 / GB200 NVL72: 50 GB/s per link, 1.8 TB/s per GPU bidirectional (third-party). */
    { "nvlink5", "GB200 NVL72 (B200, NVSwitch 4)", 50.0, 18, 0, 900.0 },
};

const nvlink_preset *nvlink_preset_find(const char *name)
{
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++)
        if (strcmp(presets[k].name, name) == 0) return &presets[k];
    return NULL;
}

const nvlink_preset *nvlink_presets(size_t *count)
{
    *count = sizeof presets / sizeof presets[0];
    return presets;
}
