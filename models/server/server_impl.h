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
/* Doorbells and flags. TLPs here carry no data, so a register write says its
 * value in its address: an MWr at BAR + SERVER_DOORBELL_OFF + n tells the
 * device (GPU or NIC) that the first n bytes of its source buffer are ready
 * (a producer index); an MWr at server_host_flag(node) + n tells the host's
 * CPU that device node finished the first n bytes of a staged transfer
 * (written or read). Flags are polled lines in the CPU's cache, not DRAM. */
#define SERVER_DOORBELL_OFF (1ull << 35)
#define SERVER_HOST_FLAG_OFF (1ull << 31)
static inline uint64_t server_host_flag(uint32_t node) { return server_host_buf(node) + SERVER_HOST_FLAG_OFF; }
static inline bool server_is_host_flag(uint64_t addr) { return addr >= SERVER_HOST_BUF && addr < SERVER_BAR_BASE && ((addr - SERVER_HOST_BUF) & 0xffffffffull) >= SERVER_HOST_FLAG_OFF; }
static inline uint64_t server_host_flag_value(uint64_t addr) { return ((addr - SERVER_HOST_BUF) & 0xffffffffull) - SERVER_HOST_FLAG_OFF; }
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

/* A DMA read engine (GPU copy engine, NIC): MRd of up to MRRS bytes that
 * never cross an MRRS boundary, one tag each, issued while a tag is free and
 * the port's non-posted queue is shallow; only below `avail` (what a doorbell
 * said is ready) and below the caller's space limit. Completions must answer
 * an open tag in address order with the byte count counting down. */
typedef struct server_rd_tag { bool busy; uint32_t remaining; uint64_t next_addr; } server_rd_tag;
typedef struct server_rd {
    uint64_t base, bytes, avail, off;   /* reads base .. base + bytes; requested up to off */
    uint64_t received;                  /* payload bytes of the completions so far */
    unsigned mrrs, ntags, n_free;
    uint16_t rid;
    server_rd_tag *tags;
    uint16_t *free_tags;
} server_rd;
void server_rd_init(server_rd *e, unsigned ntags, unsigned mrrs, uint16_t rid, uint64_t base, uint64_t bytes, uint64_t avail);
/* Issues reads while off < avail and off + len <= space_limit; returns how many. */
unsigned server_rd_issue(server_rd *e, pcie_port *p, uint64_t space_limit);
/* A CplD: 0 and *tag_done when it was its request's last; -1 when it matches no open request. */
int server_rd_complete(server_rd *e, const pcie_tlp *t, bool *tag_done);
static inline unsigned server_rd_outstanding(const server_rd *e) { return e->ntags - e->n_free; }
static inline bool server_rd_done(const server_rd *e) { return e->off == e->bytes && e->n_free == e->ntags; }
void server_rd_free(server_rd *e);
/* 64-bit addresses take 4DW headers. */
static inline uint8_t server_hdr_bytes(uint64_t addr) { return addr >= (1ull << 32) ? 16 : 12; }
/* A 4-byte register write (doorbell or flag) from rid to addr. */
void server_submit_register_write(pcie_port *p, uint16_t rid, uint64_t addr);

/* The server_cfg of kind (or the defaults); NULL with why on a bad value. */
const server_cfg *server_cfg_of(sim_fabric *f, const char *kind, char *why, size_t why_n);
/* Does GPU node run the copy (c->bytes > 0 and named in c->copiers, or copiers NULL)? */
bool server_cfg_copies(const server_cfg *c, const topo *t, uint32_t node);
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
