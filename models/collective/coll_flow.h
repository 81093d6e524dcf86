/* Collectives at flow level (issue 21's fidelity=flow): the same ring as the
 * packet-level engine -- per channel, the buffer's blocks in chunks, sent in
 * (chunk, step) order, a step's send waiting for the receive of the step
 * before, at most `slots` chunks in flight per connection -- but each chunk
 * is one flow on a sim_flownet (max-min fair shares of the routed links,
 * the path's latency), not NVLink packets. Inside an NVLink domain channel
 * c of a GPU keeps to its c-th NVLink at both ends, as the packet engine's
 * rings do, by the flow id the routing tables are steered with; across
 * servers the channels' flows share the NIC path the routes give them. Concurrent collectives (any
 * number, over any groups of endpoints) share the links; a reduce step's
 * chunk waits for its GPU's reduction unit (a FIFO of reduce_GBps, as the
 * packet engine's nvgpu). What it leaves out: flags and acks (their bytes are < 0.01 % of a
 * chunk), the packet engine's protocols (Simple's bytes; its fence only as fence_ns), link-level credits and queues (flownet.h). Validated against the
 * packet-level engine on dgx-h100 (check_coll_flow). Large rings run streamed (cfg.stream_above_flows:
 * one flow per rank and channel; check_coll_flow holds it to the chunked ring). docs/models/training.md. */
#ifndef MODELS_COLLECTIVE_COLL_FLOW_H
#define MODELS_COLLECTIVE_COLL_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "models/collective/collective.h"
#include "sim/flownet.h"

typedef struct coll_flow_cfg {
    unsigned channels;       /* rings per collective; 0 = one per NVLink-class port of the first rank */
    uint64_t chunk_bytes;    /* per chunk (a flow) */
    unsigned slots;          /* chunks in flight per connection */
    double reduce_GBps;      /* each GPU's reduction unit (FIFO, shared by its collectives): nvgpu's */
    double fence_ns;         /* a received chunk is usable this long after its last byte (the packet engine's Simple
                              * fence: a write response back and the flag, two small writes' path time); 0: at once */
    /* A ring whose chunk flows would number more than this (ranks x channels x steps x chunks) runs
     * streamed: one flow per rank and channel carrying every step's bytes at once, the steps' chain
     * of hop latencies added at its end (check_coll_flow holds it to the chunked ring). 0: never. */
    uint64_t stream_above_flows;
} coll_flow_cfg;
#define COLL_FLOW_CFG_DEFAULT ((coll_flow_cfg){ 0, 128 * 1024, 8, 1117.0, 0.0, 20000 })

typedef struct coll_flow coll_flow;
typedef void (*coll_flow_done_fn)(void *arg);

/* An engine over a flow-level network of topology t (the flownet's). */
coll_flow *coll_flow_new(sim_kernel *k, sim_flownet *net, const topo *t, const topo_routes *r, const coll_flow_cfg *cfg);
void coll_flow_free(coll_flow *e);

/* Starts op over `n` endpoints (ring order = array order) on `bytes` (the
 * whole buffer: all_reduce's, all_gather's output, reduce_scatter's input);
 * done(arg) when the last rank has its last chunk. n = 1: done at once
 * (from an event). 0, or -1 with why (fewer than 1 rank, a rank twice, no path). */
int coll_flow_start(coll_flow *e, enum coll_op op, const uint32_t *endpoints, unsigned n, uint64_t bytes, coll_flow_done_fn done,
                    void *arg, char *why, size_t why_n);
/* A point-to-point send of `bytes` from src to dst (a pipeline stage's
 * activations), over the same channels. */
int coll_flow_send(coll_flow *e, uint32_t src, uint32_t dst, uint64_t bytes, coll_flow_done_fn done, void *arg, char *why,
                   size_t why_n);

typedef struct coll_flow_stats {
    uint64_t started, finished, chunks;   /* chunks: flows started (a streamed connection's one flow counts once) */
    double bytes;
    uint64_t streamed;                    /* collectives run streamed (cfg.stream_above_flows) */
} coll_flow_stats;
const coll_flow_stats *coll_flow_stats_get(const coll_flow *e);
/* Every collective finished, every chunk in. 0, or -1 with why. */
int coll_flow_check(const coll_flow *e, char *why, size_t why_n);

#endif
