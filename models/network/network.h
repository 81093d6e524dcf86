/* Between servers: InfiniBand components for the fabric (docs/models/network.md).
 *   kind "ib_hca":    an HCA-like source and sink on one IB port (ib_port.h)
 *   kind "ib_switch": the fabric's routing (sim/ topo routes) with an IB port on
 *                     every port: per-VL input buffers and credits, no drop path
 * A test passes an ib_hca_cfg as kind_cfg "ib_hca" and an ib_switch_cfg as
 * "ib_switch", and reads results through the functions below. */
#ifndef MODELS_NETWORK_NETWORK_H
#define MODELS_NETWORK_NETWORK_H

#include "models/network/ib_port.h"
#include "models/network/roce.h"

/* Registers the topology and fabric kinds; call before building a topology (twice is harmless). */
void network_register_kinds(void);

/* A stream of packets from one HCA to another: `packets` of payload_bytes on SL sl
 * (UINT64_MAX: without end), offered at line rate. flow index = position in the array. */
typedef struct ib_flow {
    uint32_t src, dst;            /* endpoint indices */
    uint8_t sl;
    uint32_t payload_bytes;       /* the MTU: 256..4096 */
    uint64_t packets;
} ib_flow;

typedef struct ib_hca_cfg {
    ib_port_cfg port;
    const ib_flow *flows;         /* every HCA sends the flows whose src it is */
    unsigned n_flows;
    unsigned queue_pkts;          /* packets kept queued per VL at the port (the transport's window; 0 = 2) */
    uint8_t stall_vl_mask;        /* the sink never frees these VLs (a stuck consumer, for HOL tests) */
    uint64_t warmup_pkts;         /* a sink's goodput window starts at its warmup_pkts-th arrival */
} ib_hca_cfg;

typedef struct ib_hca ib_hca;
typedef struct ib_hca_stats {
    uint64_t made, sent;          /* data packets made, started on the wire */
    uint64_t received, received_payload_bytes, out_of_order, held;
    sim_time_ps window_start_ps, last_arrival_ps;
    uint64_t window_payload_bytes;   /* arrived after the window started */
} ib_hca_stats;
const ib_hca_stats *ib_hca_stats_get(const ib_hca *h);
/* Per flow (index into cfg.flows): packets this HCA sent / received, payload bytes received in the window. */
uint64_t ib_hca_flow_sent(const ib_hca *h, unsigned flow);
uint64_t ib_hca_flow_received(const ib_hca *h, unsigned flow);
uint64_t ib_hca_flow_window_bytes(const ib_hca *h, unsigned flow);
const ib_port *ib_hca_port(const ib_hca *h);

typedef struct ib_switch_cfg {
    ib_port_cfg port;             /* every port's (vls, buffers, FC, SL->VL of its output, arbitration) */
    double pipeline_ns;           /* routing + crossbar, after the last byte arrived (store and forward) */
} ib_switch_cfg;

typedef struct ib_switch ib_switch;
typedef struct ib_switch_stats { uint64_t received, forwarded, in_pipeline; } ib_switch_stats;
ib_switch_stats ib_switch_stats_get(const ib_switch *s);
/* NULL for an unconnected port. */
const ib_port *ib_switch_port(const ib_switch *s, unsigned port);

/* Kind "gpu_nic" (gpu_nic.c): a GPU's own IB NIC, p0 PCIe to the GPU, p1 IB to the network; messages
 * cut into MTU packets on the IB port and handed whole to the remote GPU. Kind cfg "gpu_nic". */
typedef struct gpu_nic_cfg {
    ib_port_cfg port;             /* the IB port's (must match the switches': vls, buffers) */
    uint32_t mtu_bytes;           /* IB packets' largest payload: 256..4096, a power of two */
    uint32_t pcie_buffer_bytes;   /* the PCIe ingress buffer the GPU's sends are credited against */
} gpu_nic_cfg;
/* 2 VLs of 64 KB (as ib_switch's default), mtu 4096, 256 KiB PCIe buffer. */
void gpu_nic_cfg_default(gpu_nic_cfg *c);
typedef struct gpu_nic gpu_nic;
typedef struct gpu_nic_stats {
    uint64_t msgs_from_gpu, bytes_from_gpu, pkts_made, pkts_sent, ib_payload_sent;
    uint64_t pkts_received, ib_payload_received, msgs_to_gpu, bytes_to_gpu, credits_returned;
} gpu_nic_stats;
gpu_nic_stats gpu_nic_stats_get(const gpu_nic *n);

#endif
