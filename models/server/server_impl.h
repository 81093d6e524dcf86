/* Shared by host.c and gpu.c: a node's PCIe links and one pcie_port per fabric port. */
#ifndef MODELS_SERVER_IMPL_H
#define MODELS_SERVER_IMPL_H

#include "models/pcie/pcie_port.h"
#include "models/server/server.h"

#define SERVER_TL_QUEUE_DEPTH 2u   /* DMA engines keep their TL queue this shallow (TLPs made just in time) */

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
static inline sim_time_ps server_ns_ps(double ns) { return (sim_time_ps)(ns * 1000.0 + 0.5); }
/* Time to move bytes at GBps (1e9 B/s), ps. */
static inline sim_time_ps server_bytes_ps(uint64_t bytes, double GBps) { return (sim_time_ps)((double)bytes * 1000.0 / GBps + 0.5); }

#endif
