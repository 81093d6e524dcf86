/* Shared by host.c and gpu.c: a node's PCIe links and one pcie_port per fabric port. */
#ifndef MODELS_SERVER_IMPL_H
#define MODELS_SERVER_IMPL_H

#include "models/pcie/pcie_port.h"
#include "models/server/server.h"

#define SERVER_TL_QUEUE_DEPTH 2u   /* DMA engines keep their TL queue this shallow (TLPs made just in time) */

/* The address map and IDs, fixed when the system is built: a device's
 * requester ID is bus = its node index (device 0, function 0); a GPU's BAR
 * is a 64 GiB window at SERVER_BAR_BASE + node x 64 GiB; everything below
 * SERVER_BAR_BASE is host DRAM, where GPU node n's pinned buffer starts at
 * SERVER_HOST_BUF + n x 4 GiB (64-bit addresses: 4DW headers). */
#define SERVER_MAX_NODES 256u
#define SERVER_BAR_BASE (1ull << 44)
#define SERVER_BAR_SHIFT 36
#define SERVER_HOST_BUF 0x100000000ull
static inline uint16_t server_rid(uint32_t node) { return (uint16_t)(node << 8); }
static inline uint32_t server_rid_node(uint16_t rid) { return rid >> 8; }
static inline uint64_t server_bar(uint32_t node) { return SERVER_BAR_BASE + ((uint64_t)node << SERVER_BAR_SHIFT); }
static inline uint64_t server_host_buf(uint32_t node) { return SERVER_HOST_BUF + ((uint64_t)node << 32); }
/* The node whose BAR holds addr; -1: host memory. */
static inline int64_t server_bar_node(uint64_t addr)
{
    if (addr < SERVER_BAR_BASE) return -1;
    uint64_t n = (addr - SERVER_BAR_BASE) >> SERVER_BAR_SHIFT;
    return n < SERVER_MAX_NODES ? (int64_t)n : -1;
}

/* A completer's read queue: each MRd waits for its memory, then its CplDs
 * go out of the port it came in on, in arrival order (ready times never decrease). */
typedef struct server_rd_ent { pcie_tlp mrd; pcie_port *port; sim_time_ps ready_ps; } server_rd_ent;
typedef struct server_rdq {
    sim_kernel *k;
    unsigned mps, rcb;
    server_rd_ent *v; size_t head, len, cap;
    sim_event ev;
    sim_process proc;
    void (*after)(void *ctx);   /* after each batch (waves); may be NULL */
    void *ctx;
} server_rdq;
void server_rdq_init(server_rdq *q, sim_kernel *k, const char *name, unsigned mps, unsigned rcb, void (*after)(void *), void *ctx);
void server_rdq_push(server_rdq *q, const pcie_tlp *mrd, pcie_port *port, sim_time_ps ready_ps);
void server_rdq_free(server_rdq *q);

/* A memory's bandwidth: returns when an access of bytes starting no earlier than at is done. */
static inline sim_time_ps server_mem_access(sim_time_ps *free_ps, sim_time_ps at, uint64_t bytes, double GBps)
{
    sim_time_ps start = at > *free_ps ? at : *free_ps;
    *free_ps = start + (sim_time_ps)((double)bytes * 1000.0 / GBps + 0.5);
    return *free_ps;
}

/* A sink's check on posted writes: each requester's stream arrives in order, contiguous. */
typedef struct server_wr_order { uint64_t expect[SERVER_MAX_NODES]; uint8_t started[SERVER_MAX_NODES]; } server_wr_order;
static inline bool server_wr_in_order(server_wr_order *o, const pcie_tlp *t)
{
    uint32_t n = server_rid_node(t->req_id);
    bool ok = !o->started[n] || t->addr == o->expect[n];
    o->started[n] = 1;
    o->expect[n] = t->addr + t->len;
    return ok;
}

/* The server_cfg of kind (or the defaults); NULL with why on a bad value. */
const server_cfg *server_cfg_of(sim_fabric *f, const char *kind, char *why, size_t why_n);
/* Every connected port of node is on a pcie-genG-xL link at the PHY's raw
 * rate; gen and lanes of the first. -1 with why otherwise. */
int server_node_links(const topo *t, uint32_t node, unsigned *gen, unsigned *lanes, char *why, size_t why_n);
/* The port of fabric port fp (its out link is tx, in link rx); dir: the
 * direction it transmits (PCIE_DOWN for the endpoint, PCIE_UP for the root port);
 * name: the caller's buffer (it outlives the port), filled with "rp0" etc. */
pcie_port *server_port_new(sim_fabric *f, const sim_fabric_port *fp, const server_cfg *c, const uint32_t adv[PCIE_FC_TYPES],
                           unsigned dir, unsigned gen, unsigned lanes, char name[16]);
/* The kind's node index is below SERVER_MAX_NODES (bus numbers); -1 with why. */
int server_node_index_ok(uint32_t node, char *why, size_t why_n);
static inline sim_time_ps server_ns_ps(double ns) { return (sim_time_ps)(ns * 1000.0 + 0.5); }
/* Time to move bytes at GBps (1e9 B/s), ps. */
static inline sim_time_ps server_bytes_ps(uint64_t bytes, double GBps) { return (sim_time_ps)((double)bytes * 1000.0 / GBps + 0.5); }

#endif
