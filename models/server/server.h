/* Inside the server: fabric component kinds "host" (a root complex with one
 * root port per fabric port, DRAM, a completer for MRd and a sink for MWr)
 * and "gpu" (a PCIe endpoint with HBM and one copy engine issuing MRd for
 * host-to-device or MWr for device-to-host copies). Every PCIe link a
 * component sits on is one pcie_port (models/pcie/pcie_port.h) on the
 * fabric port's two links: TLPs, credits, Ack/Nak and replay are the PCIe
 * model's; nothing here computes a bandwidth. The link must be a PCIe
 * preset (pcie-genG-xL) whose rate is the PHY's raw rate (pcie_phy_init).
 *
 * Both kinds read one server_cfg (give the same struct as the kind_cfg of
 * "host" and "gpu"); NULL = SERVER_CFG_DEFAULT. docs/models/server.md. */
#ifndef MODELS_SERVER_H
#define MODELS_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/fabric.h"

enum server_copy_dir { SERVER_H2D = 0, SERVER_D2H };

typedef struct server_cfg {
    /* PCIe, both ends of every link (they agree on these in training) */
    unsigned mps, mrrs, rcb;          /* bytes */
    unsigned fc_scale;
    double rx_ns;                     /* receive buffer: processing per TLP */
    uint32_t host_adv[6], gpu_adv[6]; /* InitFC each advertises, by enum pcie_fc_type (0 = infinite) */
    /* host */
    double dram_GBps, dram_ns;        /* DRAM bandwidth and access latency */
    double rc_ns;                     /* root complex: request in to memory access, and back */
    /* gpu */
    double hbm_GBps, hbm_ns;
    unsigned tags;                    /* copy engine's outstanding reads */
    enum server_copy_dir dir;
    uint64_t bytes;                   /* the copy (0: none) */
} server_cfg;

/* Sources in docs/models/server.md: DDR5-4800 x 8 channels x 8 B = 307.2 GB/s;
 * H100 SXM HBM3 3.35 TB/s; latencies assumed (server.md). */
#define SERVER_CFG_DEFAULT                                                                                 \
    { .mps = 256, .mrrs = 512, .rcb = 64, .fc_scale = 1, .rx_ns = 1,                                       \
      .host_adv = { 127, 2047, 64, 64, 0, 0 }, .gpu_adv = { 127, 2047, 64, 64, 0, 0 },                     \
      .dram_GBps = 307.2, .dram_ns = 90, .rc_ns = 150, .hbm_GBps = 3350, .hbm_ns = 400, .tags = 256,      \
      .dir = SERVER_H2D, .bytes = 0 }

void server_register_kinds(void);

typedef struct server_host server_host;
typedef struct server_gpu server_gpu;
typedef struct pcie_port pcie_port;

/* What a copy did, seen from the side that receives its data. */
typedef struct server_copy_stats {
    uint64_t bytes_received;          /* payload that arrived (CplD at the GPU, MWr at the host) */
    uint64_t tlps_received;
    uint64_t addr_errors;             /* data not where or when expected (order, tag, byte count) */
    sim_time_ps first_data_ps, last_data_ps;  /* arrivals of the first and last data TLP */
    sim_time_ps done_ps;              /* the last byte in memory (HBM or DRAM); 0: not yet */
    uint64_t first_data_bytes;        /* payload of the first data TLP (steady-state goodput) */
    uint64_t dram_bytes;              /* host DRAM read + written */
} server_copy_stats;

bool server_gpu_copy_done(const server_gpu *g);
/* When the copy engine launched the copy: the first poll that found the link up (DL_Active). */
sim_time_ps server_gpu_launch_ps(const server_gpu *g);
void server_gpu_stats(const server_gpu *g, server_copy_stats *s);   /* h2d */
void server_host_stats(const server_host *h, server_copy_stats *s); /* d2h (and dram_bytes either way) */
/* The PCIe port on fabric port `port` (NULL when unconnected). */
pcie_port *server_host_port(const server_host *h, unsigned port);
pcie_port *server_gpu_port(const server_gpu *g);

#endif
