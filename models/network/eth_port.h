/* The Ethernet MAC at one end of a RoCE v2 link with IEEE 802.1Qbb PFC: what
 * a roce_nic port and every eth_switch port embed (docs/models/network.md).
 *
 * Transmit side: one FIFO per priority (0..7); whenever the wire is free a
 * pending PFC frame goes first (it carries the latest state), then a data
 * packet of the highest non-empty priority the peer has not paused (strict),
 * or the next such priority in turn (round robin). A PAUSE received for
 * priority p stops new packets of p from starting for quanta x 512 bit times
 * at the link's rate (a packet already on the wire finishes); quanta 0 (XON)
 * resumes at once; a later frame replaces the earlier time.
 * PFC frames are 64-byte MAC control frames plus preamble/SFD 8 and IFG 12 on
 * the wire (84 B), real messages on the same wire as data. They come from the
 * port's own pool and are consumed by the peer port.
 *
 * The port is the receiver of `in` and the only sender on `out` (plain
 * links, no link credits: losslessness is the owner's PFC, not the link's). */
#ifndef MODELS_NETWORK_ETH_PORT_H
#define MODELS_NETWORK_ETH_PORT_H

#include "sim/fabric.h"

#include <stdbool.h>
#include <stdint.h>

#define ETH_PRIOS 8
#define ETH_PFC_FRAME_BYTES 64u           /* MAC control frame, FCS included */
#define ETH_PFC_WIRE_BYTES (64u + 8u + 12u)   /* + preamble/SFD + inter-frame gap */
#define ETH_PAUSE_QUANTUM_BITS 512u       /* 802.1Qbb: one quantum = 512 bit times */
#define ETH_PAUSE_MAX_QUANTA 0xFFFFu
#define ETH_PKT_F_PFC 0x40u               /* sim_pkt.flags: a PFC frame (the network model's) */
#define ETH_PKT_F_CNP 0x20u               /* sim_pkt.flags: a RoCE v2 CNP (roce_nic's) */

typedef enum eth_sched { ETH_SCHED_STRICT = 0, ETH_SCHED_RR = 1 } eth_sched;

typedef struct eth_port eth_port;
/* A data packet arrived (a PFC frame never reaches the owner). */
typedef void (*eth_port_rx_fn)(void *owner, eth_port *p, sim_pkt *pkt);
/* A queued data packet started on the wire (tag as given to eth_port_enqueue). */
typedef void (*eth_port_tx_fn)(void *owner, eth_port *p, sim_pkt *pkt, uint32_t tag);

typedef struct eth_port_stats {
    uint64_t data_sent, data_received, sent_bytes;
    uint64_t pause_sent, xon_sent, pfc_received;    /* frames */
    uint64_t paused_ps[ETH_PRIOS];                  /* time our transmitter was paused by the peer */
    uint64_t queued_bytes[ETH_PRIOS];               /* now */
} eth_port_stats;

/* tr (NULL: none): waves under scope (queue bytes, paused) inside the caller's scope. */
eth_port *eth_port_new(sim_kernel *k, const sim_fabric_port *fp, eth_sched sched, const char *name, eth_port_rx_fn rx,
                       eth_port_tx_fn tx, void *owner, sim_trace *tr, const char *scope);
void eth_port_enqueue(eth_port *p, sim_pkt *pkt, unsigned prio, uint32_t tag);
/* Asks the peer to stop priority prio (quanta; 0 = XON): one PFC frame, sent
 * ahead of data when the wire is next free (a second request for the same
 * priority before it left replaces the first). */
void eth_port_send_pfc(eth_port *p, unsigned prio, uint16_t quanta);
unsigned eth_port_queued(const eth_port *p, unsigned prio);
uint64_t eth_port_queued_bytes(const eth_port *p, unsigned prio);
/* Is priority prio of our transmitter paused now? */
bool eth_port_paused(const eth_port *p, unsigned prio);
/* One quantum at this link's rate, in ps. */
double eth_port_quantum_ps(const eth_port *p);
eth_port_stats eth_port_stats_get(const eth_port *p);
unsigned eth_port_number(const eth_port *p);
const char *eth_port_name(const eth_port *p);
void eth_port_reset_stats(eth_port *p);
/* Queues consistent (bytes = the packets inside); drained: nothing queued. 0 fine. */
int eth_port_check(const eth_port *p, bool drained, char *why, size_t why_n);
void eth_port_for_each_held(const eth_port *p, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
void eth_port_free(eth_port *p);

#endif
