/* Inside the server: fabric component kinds "host" (a root complex with one
 * root port per fabric port, DRAM, a completer for MRd and a sink for MWr;
 * "server_host" is the same root complex as a node the topology's tree goes
 * through), "pcie_switch" (one upstream and N downstream ports, routing by
 * address and requester ID, peer-to-peer between downstream ports) and
 * "gpu" (a PCIe endpoint with HBM, a completer and sink for its BAR, and one
 * copy engine issuing MRd or MWr to host memory or a peer GPU's BAR) and
 * "nic" (the PCIe side of a NIC: a DMA engine reading a GPU's BAR or host
 * memory into a send buffer drained at its line rate). The host's CPU takes
 * part in staged transfers (a proxy turning a GPU's flags into a NIC's
 * doorbells; memcpy into pinned staging for pageable copies). Every PCIe link a
 * component sits on is one pcie_port (models/pcie/pcie_port.h) on the
 * fabric port's two links: TLPs, credits, Ack/Nak and replay are the PCIe
 * model's; nothing here computes a bandwidth. The link must be a PCIe
 * preset (pcie-genG-xL) whose rate is the PHY's raw rate (pcie_phy_init).
 *
 * Every kind reads one server_cfg (give the same struct as the kind_cfg of
 * "host", "gpu", "pcie_switch" and "nic"); NULL = SERVER_CFG_DEFAULT. docs/models/server.md. */
#ifndef MODELS_SERVER_H
#define MODELS_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/fabric.h"

/* What a copying GPU's engine does: read host memory (h2d), write it (d2h),
 * read a peer GPU's HBM through its BAR or write it (peer-to-peer). */
enum server_copy_dir { SERVER_H2D = 0, SERVER_D2H, SERVER_P2P_RD, SERVER_P2P_WR };

typedef struct server_cfg {
    /* PCIe, both ends of every link (they agree on these in training) */
    unsigned mps, mrrs, rcb;          /* bytes */
    unsigned fc_scale;
    double rx_ns;                     /* receive buffer: processing per TLP */
    uint32_t host_adv[6], gpu_adv[6]; /* InitFC each advertises, by enum pcie_fc_type (0 = infinite) */
    uint32_t switch_adv[6];           /* every switch port's (finite: a switch is no endpoint) */
    /* pcie_switch */
    double switch_ns;                 /* port to port, counted once the whole TLP is in (store-and-forward) */
    /* host */
    double dram_GBps, dram_ns;        /* DRAM bandwidth and access latency */
    double rc_ns;                     /* root complex: request in to memory access, and back */
    /* gpu */
    double hbm_GBps, hbm_ns;
    unsigned tags;                    /* copy engine's outstanding reads */
    enum server_copy_dir dir;
    uint64_t bytes;                   /* the copy (0: none) */
    const char *const *copiers;       /* the GPUs that copy (node names, NULL-terminated); NULL: every gpu */
    const char *peer;                 /* SERVER_P2P_*: the GPU whose HBM is read or written */
    /* staged transfers: the host's CPU in the loop, told by flag writes, telling devices by doorbells */
    uint64_t chunk_bytes;             /* a staged copy's chunk: the GPU flags the host after each (0: not staged) */
    bool pageable;                    /* h2d from pageable memory: the CPU copies each chunk into pinned staging first */
    double memcpy_GBps;               /* the CPU's copy (one thread: reads and writes DRAM) */
    unsigned staging_slots;           /* pageable: staging buffers of chunk_bytes (2: double buffering) */
    double proxy_ns;                  /* the CPU: from a flag in its cache to its doorbell posted */
    /* nic */
    double nic_GBps;                  /* the line rate it sends at (ConnectX-7: 400 Gb/s = 50 GB/s) */
    uint64_t nic_buf_bytes;           /* its send buffer: reads are issued only into free space */
    uint32_t nic_adv[6];              /* InitFC it advertises (completions infinite: an endpoint) */
    uint64_t nic_bytes;               /* what the sending NIC reads and sends (0: nothing) */
    const char *nic_sender;           /* the NIC that sends */
    const char *nic_src;              /* the GPU whose buffer it sends: its BAR (p2p) or its host buffer (nic_via_host) */
    bool nic_via_host;                /* staged: nic_src writes its host buffer (d2h), the CPU rings the NIC per chunk */
} server_cfg;

/* Sources in docs/models/server.md: DDR5-4800 x 8 channels x 8 B = 307.2 GB/s;
 * H100 SXM HBM3 3.35 TB/s; switch 120 ns in the 85-150 ns of Switchtec /
 * PEX figures (reference/pcie.md section 7); latencies assumed (server.md). */
#define SERVER_CFG_DEFAULT                                                                                 \
    { .mps = 256, .mrrs = 512, .rcb = 64, .fc_scale = 1, .rx_ns = 1,                                       \
      .host_adv = { 127, 2047, 64, 64, 0, 0 }, .gpu_adv = { 127, 2047, 64, 64, 0, 0 },                     \
      .switch_adv = { 127, 2047, 64, 64, 127, 2047 }, .switch_ns = 120,                                    \
      .dram_GBps = 307.2, .dram_ns = 90, .rc_ns = 150, .hbm_GBps = 3350, .hbm_ns = 400, .tags = 256,      \
      .dir = SERVER_H2D, .bytes = 0, .copiers = NULL, .peer = NULL, .chunk_bytes = 0, .pageable = false,               \
      .memcpy_GBps = 12, .staging_slots = 2, .proxy_ns = 500, .nic_GBps = 50, .nic_buf_bytes = 1u << 20,                \
      .nic_adv = { 127, 2047, 64, 64, 0, 0 }, .nic_bytes = 0, .nic_sender = NULL, .nic_src = NULL, .nic_via_host = false }

void server_register_kinds(void);

typedef struct server_host server_host;
typedef struct server_gpu server_gpu;
typedef struct server_switch server_switch;
typedef struct server_nic server_nic;
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
    uint64_t streams_done;            /* copies whose last byte is in (the host counts one per writer) */
} server_copy_stats;

/* Does this GPU run the copy (server_cfg.copiers)? */
bool server_gpu_copies(const server_gpu *g);
bool server_gpu_copy_done(const server_gpu *g);
/* When the copy engine launched the copy: the first poll that found the link up (DL_Active). */
sim_time_ps server_gpu_launch_ps(const server_gpu *g);
void server_gpu_stats(const server_gpu *g, server_copy_stats *s);   /* h2d */
void server_host_stats(const server_host *h, server_copy_stats *s); /* d2h (and dram_bytes either way) */
/* When the host's CPU started a pageable copy's memcpy (its root ports up); 0 without one. */
sim_time_ps server_host_launch_ps(const server_host *h);
/* The PCIe port on fabric port `port` (NULL when unconnected). */
pcie_port *server_host_port(const server_host *h, unsigned port);
pcie_port *server_gpu_port(const server_gpu *g);
/* The PCIe port on fabric port `port` of any server node (host, switch or gpu); NULL otherwise. */
pcie_port *server_node_port(const sim_fabric *f, uint32_t node, unsigned port);
pcie_port *server_switch_port(const server_switch *s, unsigned port);
/* The sending NIC: its reads' completions (bytes_received, first/last data), done_ps the last byte on its wire. */
void server_nic_stats(const server_nic *n, server_copy_stats *s);
bool server_nic_sends(const server_nic *n);
sim_time_ps server_nic_launch_ps(const server_nic *n);
pcie_port *server_nic_port(const server_nic *n);
/* TLPs the switch turned between two downstream ports (peer-to-peer) and sent up. */
uint64_t server_switch_p2p_tlps(const server_switch *s);
uint64_t server_switch_up_tlps(const server_switch *s);

#endif
