/* The fabric's endpoint component (kind "endpoint"): a Bernoulli traffic
 * source and a sink on its one port. See docs/models/fabric_endpoint.md. */
#ifndef FABRIC_ENDPOINT_H
#define FABRIC_ENDPOINT_H

#include "sim/fabric.h"
#include "sim/pattern.h"
#include "sim/stats.h"

#include <stdint.h>

typedef struct fabric_endpoint_cfg {
    const sim_pattern *pattern;  /* destinations (shared, read-only); NULL: no traffic source */
    const uint32_t *dst_map;     /* optional: a fixed destination per endpoint (overrides pattern; UINT32_MAX: silent) */
    double load;                 /* offered, fraction of the endpoint's link rate (wire bytes) */
    uint32_t pkt_bytes;          /* payload per packet */
    sim_time_ps warmup_ps, end_ps;   /* measured window [warmup, end) at the sink (arrival time) */
    sim_time_ps stop_ps;         /* sources make no packet with an arrival slot at or after this */
    uint32_t source_queue_pkts;  /* packets a source holds (0: 64); arrivals wait lazily beyond it */
    sim_hist *latency_hist;      /* optional, the test's: created -> arrival (ps, whole), window only */
    sim_hist *net_latency_hist;  /* optional, the test's: injected -> arrival (ps, whole), window only */
} fabric_endpoint_cfg;

typedef struct fabric_endpoint fabric_endpoint;

typedef struct fabric_endpoint_stats {
    uint64_t made_pkts, sent_pkts, received_pkts;
    uint64_t win_pkts, win_wire_bytes, win_payload_bytes, win_hops;  /* received in the window */
    uint64_t out_of_order;      /* arrived behind a later packet of their flow */
    double last_latency_ns;     /* the last packet received: created -> arrival */
    uint32_t last_hops;
} fabric_endpoint_stats;

void fabric_endpoint_register(void);

/* A test-driven packet (zero-load measurement): made now, queued, sent when the link allows. */
void fabric_endpoint_send_one(fabric_endpoint *ep, uint32_t dst, uint32_t payload_bytes);
void fabric_endpoint_get_stats(const fabric_endpoint *ep, fabric_endpoint_stats *s);
uint32_t fabric_endpoint_index(const fabric_endpoint *ep);
/* Per destination: packets sent; per source: packets received, wire bytes received in the window (n_endpoints entries). */
const uint64_t *fabric_endpoint_sent_to(const fabric_endpoint *ep);
const uint64_t *fabric_endpoint_received_from(const fabric_endpoint *ep);
const uint64_t *fabric_endpoint_win_bytes_from(const fabric_endpoint *ep);
/* Its link's rate (GBps) and per-packet overhead. */
double fabric_endpoint_link_GBps(const fabric_endpoint *ep);
/* Packets its source still holds. */
uint64_t fabric_endpoint_backlog(const fabric_endpoint *ep);

#endif
