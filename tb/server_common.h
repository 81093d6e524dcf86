/* Shared by the tests inside the server (h2d_copy, gpudirect): the
 * independent PCIe goodput model (docs/models/pcie.md, restated from the
 * spec's numbers, never the run's), the hops a transfer crosses, their
 * utilisation and credit stalls, and the bottleneck among them. */
#ifndef TB_SERVER_COMMON_H
#define TB_SERVER_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/fabric.h"
#include "sim/report.h"
#include "sim/topo.h"

/* Raw rate of a PCIe link after line encoding (8b/10b, 128b/130b, Gen6 1b/1b). */
double srv_ref_raw_GBps(unsigned gen, unsigned lanes);
/* SKP share of a busy transmitter: 8b/10b 4 symbols / 1180; 128b/130b (and Gen6) 20 / (370 x 16). */
double srv_ref_skp_frac(unsigned gen);
/* Goodput of data TLPs of `payload` bytes with an `hdr`-byte header: Non-Flit 8 B
 * framing per TLP; Flit Mode 236 TLP bytes per 256 B flit; with or without SKPs. */
double srv_ref_data_GBps(unsigned gen, unsigned lanes, double payload, double hdr, bool with_skp);

/* A read's round trip as the read window sees it: the MRd's 4DW header on the wire, each hop's
 * wire both ways and receive buffers, switches both ways, the completer's memory, and the
 * request's completions' own wire time (CplD, 3DW header, MPS each). A window of tags x MRRS
 * over this bounds the read bandwidth. */
double srv_read_rtt_ns(unsigned gen, unsigned lanes, unsigned mps, unsigned mrrs, unsigned hops, double wire_ns, double rx_ns,
                       double switch_ns, double mem_ns);

#define SRV_MAX_HOPS 64
#define SRV_PATH_NODES 64
#define SRV_NO_LINK UINT32_MAX   /* the topologies used here are small */

/* One direction of one link (link SRV_NO_LINK: another resource); data: a transfer's data crosses it (else only its requests or acks). */
typedef struct srv_hop { uint32_t link; unsigned dir; bool data; double util, stall_ns; char name[2 * (TOPO_NAME_MAX + 8) + 4]; } srv_hop;
typedef struct srv_hops { srv_hop h[SRV_MAX_HOPS]; unsigned n; } srv_hops;

/* Adds the hops of the tree path a -> b (data direction, marked data), and their reverse. */
void srv_add_path(srv_hops *r, const topo *t, uint32_t a, uint32_t b);
/* Adds a resource that is no link (a NIC's line, a CPU's copy) with its utilisation, as a data hop. */
void srv_add_resource(srv_hops *r, const char *name, double util);
/* Hop count of the tree path between two nodes. */
unsigned srv_path_hops(const topo *t, uint32_t a, uint32_t b);
/* What host node hn's DRAM moved, the TLPs its root ports received, and the TLPs
 * every pcie_switch turned peer-to-peer (they never reached the host). */
void srv_count_host_and_p2p(sim_fabric *f, const topo *t, uint32_t hn, uint64_t *dram_bytes, uint64_t *host_tlps,
                            uint64_t *p2p_tlps);
/* No PCIe port of any node holds an unacknowledged or undelivered TLP. */
bool srv_ports_quiet(const sim_fabric *f, const topo *t);
/* Each hop's utilisation over window_ns (the link's window bytes) and its sender's credit stall. */
void srv_measure_hops(srv_hops *r, sim_fabric *f, const topo *t, double window_ns);
/* Metrics link_util and credit_stall_ns (per hop) and bottleneck: the hop with the highest
 * utilisation or stall share of window_ns. Returns its index. */
unsigned srv_report_hops(sim_report *rep, const srv_hops *r, double window_ns);

#endif
