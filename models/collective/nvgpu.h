/* Kind "nvgpu": a GPU as the collectives see it -- one fabric port per NVLink
 * (nvl0..nvlN-1), a send queue per port, and a reduction unit. What it sends
 * is sim_pkt messages of NVLink packets: 128-byte payloads, each with the
 * link's per-packet overhead (topo_link.overhead_bytes, from the preset), so
 * a link's goodput is rate x 128 / (128 + overhead) by construction, not by a
 * factor. A burst of n packets goes as one message whose wire bytes are
 * n x (128 + overhead) (the last packet may carry less payload). The
 * collective engine (collective.h) drives it: it queues data, flags and acks
 * on ports and gets every arriving message back. docs/models/collective.md. */
#ifndef MODELS_COLLECTIVE_NVGPU_H
#define MODELS_COLLECTIVE_NVGPU_H

#include "sim/fabric.h"

#include <stdbool.h>
#include <stdint.h>

#define NVGPU_PKT_PAYLOAD_BYTES 128u   /* an SM's NVLink write: 128-byte payloads (system.md §1) */
#define NVGPU_MAX_PORTS 64
#define NVGPU_BURST_DIV 128u          /* a write's bursts are at most 1/128 of it (see nvgpu_send_data) */

typedef struct nvgpu nvgpu;

typedef struct nvgpu_cfg {
    double reduce_GBps;        /* reduction unit: bytes of result per second (1e9 B/s) */
    unsigned burst_pkts;       /* most packets per message (1: every packet its own message) */
} nvgpu_cfg;
#define NVGPU_CFG_DEFAULT ((nvgpu_cfg){ 1117.0, 1 })

/* What the engine receives: every message that arrives at the GPU, with the
 * arrival time; the engine frees it (sim_pkt_free). */
typedef void (*nvgpu_recv_fn)(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps);
/* Called when the message tagged `tag` has left the port (its last byte on the wire). */
typedef void (*nvgpu_sent_fn)(void *ctx, nvgpu *g, uint64_t tag);
/* Called when a reduction of the unit finishes. */
typedef void (*nvgpu_done_fn)(void *ctx, nvgpu *g, uint64_t tag);

/* Registers the topo kind "nvgpu" and its fabric component (twice is harmless). */
void nvgpu_register(void);

void nvgpu_set_handlers(nvgpu *g, nvgpu_recv_fn recv, nvgpu_sent_fn sent, nvgpu_done_fn done, void *ctx);
uint32_t nvgpu_endpoint(const nvgpu *g);
uint32_t nvgpu_node(const nvgpu *g);
unsigned nvgpu_ports(const nvgpu *g);            /* ports (all connected: 0..n-1), on replicas too */
/* Its NVLink ports (preset nvlink*): 0..nvgpu_nvlink_ports-1. A port after
 * them (a multi-node dgx-* GPU's nvl18) is the PCIe link to its own NIC:
 * nvgpu_nic_port, -1 when it has none. Messages to a GPU of another node go
 * there; they are packetised as on any port (128-byte payloads plus the
 * link's per-packet overhead: PCIe TLP framing and header). */
unsigned nvgpu_nvlink_ports(const nvgpu *g);
int nvgpu_nic_port(const nvgpu *g);
/* A port as connected; NULL on another rank's replica (never connected: use the topology). */
const sim_fabric_port *nvgpu_port(const nvgpu *g, unsigned port);
sim_kernel *nvgpu_kernel(const nvgpu *g);

/* Queues `payload_bytes` of data to endpoint dst on `port` as NVLink packets
 * in bursts of up to cfg.burst_pkts (and at most 1/NVGPU_BURST_DIV of the
 * write: a switch stores and forwards a burst whole), flow `flow` (the switches' ECMP key), `kind`
 * in the packets' flags (the engine's); the last message carries `data` and,
 * when notify, tags its sent callback with `tag`. payload 0: nothing is sent
 * (the callback, if asked, comes at once). Returns the messages queued. */
uint32_t nvgpu_send_data(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint64_t payload_bytes, uint8_t kind,
                         void *data, bool notify, uint64_t tag);
/* A write to multicast group `group` that a switch with a reduction unit
 * (models/fabric/switch.h, NVLS) reduces with the other members' writes of
 * the same keys before sending each member the result: as nvgpu_send_data,
 * but to the group with SIM_PKT_F_REDUCE beside `kind` in the flags, and
 * message i's key (its seq) is key + i -- every member must cut the same
 * bytes the same way (same burst_pkts). The last message carries data, which
 * then must start with a fabric_reduce_data (or be NULL on every member).
 * What comes back is the result copy per message, addressed to this GPU. */
uint32_t nvgpu_send_reduce(nvgpu *g, unsigned port, uint32_t group, uint64_t flow, uint64_t payload_bytes, uint8_t kind,
                           uint64_t key, void *data, bool notify, uint64_t tag);
/* A small write (a flag, an ack): one packet of `payload_bytes` (<= 128). */
void nvgpu_send_small(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint32_t payload_bytes, uint8_t kind, void *data,
                      uint64_t seq);
/* The same, ahead of the data queued on the port (behind the message on the
 * wire; in order with the other urgent ones): a protocol's control write (Simple's flag, the fence's write
 * response) is one thread's store, not queued behind other warps' bulk data. */
void nvgpu_send_small_urgent(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint32_t payload_bytes, uint8_t kind, void *data,
                             uint64_t seq);
/* The reduction unit (SMs doing reduce-copy, pooled): FIFO, busy for
 * bytes / reduce_GBps per job; done is called at the end. */
void nvgpu_reduce(nvgpu *g, uint64_t bytes, uint64_t tag);

typedef struct nvgpu_stats {
    uint64_t msgs_sent, msgs_received, pkts_sent;   /* pkts: NVLink packets (a burst counts n) */
    uint64_t payload_sent, wire_sent, payload_received, wire_received;
    uint64_t reductions, reduce_bytes;
    sim_time_ps reduce_busy_ps;
} nvgpu_stats;
nvgpu_stats nvgpu_stats_get(const nvgpu *g);
/* Messages queued, not yet on the wire. */
uint64_t nvgpu_queued(const nvgpu *g);

#endif
