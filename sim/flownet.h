/* A flow-level network on a topology: the coarser fidelity for a whole tier
 * where packets are too many (issue 21's fidelity=flow). A flow moves `bytes`
 * of payload from one endpoint to another along the route the routing tables
 * give its flow id (the path a packet of that flow would take, ECMP
 * collisions included); at every moment the active flows share each link
 * direction by max-min fairness (topo_maxmin_fill), recomputed whenever a
 * flow starts or ends. A link's capacity is its payload rate: GBps x
 * mtu / (mtu + the preset's per-packet overhead). A flow is done when its
 * last byte has drained at its changing rate plus the path's latency: every
 * link's latency, the store-and-forward of its last packet at each hop after
 * the first, and hop_ns per switch crossed. What it leaves out: queueing
 * delay, credits and pauses (no buffers: rates change instantly), transport
 * dynamics (congestion control converging, retransmissions).
 * docs/topology.md (flow level). */
#ifndef SIM_FLOWNET_H
#define SIM_FLOWNET_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/kernel.h"
#include "sim/topo.h"

typedef struct sim_flownet_cfg {
    uint32_t mtu_bytes;   /* payload per packet (the overhead per packet is the link preset's) */
    double hop_ns;        /* a switch's pipeline, per switch on the path */
} sim_flownet_cfg;

typedef struct sim_flownet sim_flownet;
typedef void (*sim_flownet_done_fn)(void *arg);

/* NULL with err when the configuration is unusable (mtu 0). The topology
 * and routes must outlive it. */
sim_flownet *sim_flownet_new(sim_kernel *k, const topo *t, const topo_routes *r, const sim_flownet_cfg *cfg, char *err, size_t errlen);
void sim_flownet_free(sim_flownet *n);

/* Starts a flow now; on_drained(arg) (unless NULL) when its last byte has
 * left the source, done(arg) when it is in; both from events. Flows starting
 * at the same time share from the start. 0, or -1 when src == dst or there
 * is no route. */
int sim_flownet_start(sim_flownet *n, uint32_t src_ep, uint32_t dst_ep, uint64_t flow_id, uint64_t bytes,
                      sim_flownet_done_fn on_drained, sim_flownet_done_fn done, void *arg);

/* The latency a flow from src to dst with this id adds after its last byte
 * leaves (every link's, a packet's store and forward per switch); -1 without a route. */
double sim_flownet_path_latency_ns(sim_flownet *n, uint32_t src_ep, uint32_t dst_ep, uint64_t flow_id);

typedef struct sim_flownet_stats {
    uint64_t started, drained, delivered;   /* flows: begun; last byte sent; done called */
    double bytes_started, bytes_drained;
    uint64_t recomputes;                    /* max-min solutions */
    unsigned active, peak_active;
} sim_flownet_stats;
const sim_flownet_stats *sim_flownet_stats_get(const sim_flownet *n);
/* Channel c = link * 2 + direction (0: a -> b): payload bytes carried, and
 * the time at least one flow crossed it. */
double sim_flownet_channel_bytes(const sim_flownet *n, uint32_t channel);
sim_time_ps sim_flownet_channel_busy_ps(const sim_flownet *n, uint32_t channel);
/* Brings the byte counts up to now (they advance at each start and end). */
void sim_flownet_sync(sim_flownet *n);
/* Conservation: bytes started = drained + still to send; with drained, nothing
 * active and every done delivered. 0, or -1 with why. */
int sim_flownet_check(const sim_flownet *n, bool drained, char *why, size_t why_n);

#endif
