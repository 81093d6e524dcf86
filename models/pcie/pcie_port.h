/* One PCIe port: one end of one PCIe link (a hop), with the transaction
 * layer's queues and ordering rules, the data link layer (flow-control
 * credits, ACK/NAK, the replay buffer, REPLAY_TIMER, Recovery) and the
 * transmit side of the physical layer (wire time, SKP, error injection,
 * Gen6 Flit Mode). A port is a component: it owns its configuration, its
 * physical-layer record, its packet pool and its statistics, and meets its
 * link partner, another pcie_port, only through its two sim_links (what it
 * sends on tx, what it receives on rx). Every message it sends is a sim_pkt
 * from its own pool whose extension only the partner port reads.
 *
 * Embedding: a component that owns PCIe hops (a host's root port, a PCIe
 * switch, a GPU or NIC endpoint) makes one port per PCIe link it sits on.
 * On a fabric port (sim/fabric.h) that is pcie_port_new with the port's out
 * link as tx and in link as rx; the links need no credit pools (PCIe returns
 * credits in its own DLLPs, which cost wire time), bandwidth phy.raw_GBps and
 * latency wire_ps (pcie_phy_init). Both ends of a link agree on gen, lanes,
 * mps, fc_scale and wire_ps; each has its own advertisement (adv), receive
 * time and errors. The component hands TLPs to pcie_port_submit (a switch:
 * the TLPs it routes out of this port), gets each received TLP in
 * app.deliver once the port's receive buffer is done with it (the credits it
 * held are then on their way back), app.refill when a class's queue has
 * room, app.drained when everything sent was acknowledged; its check calls
 * pcie_port_check. The fabric's teardown gives back what the links carry
 * (sim_fabric_free); a system that owns its links calls
 * pcie_port_give_back_in_flight on both before pcie_port_free.
 *
 * Internals (the port's struct, the wire packet's extension) are in
 * pcie_port_impl.h, for the port's own files. */
#ifndef PCIE_PORT_H
#define PCIE_PORT_H

#include "models/pcie/pcie.h"

typedef struct pcie_port pcie_port;

/* One port's configuration (pcie_sys derives both from pcie_cfg): the link
 * parameters both partners agree on in training, and what is its own. */
typedef struct pcie_port_cfg {
    unsigned gen, lanes, mps;     /* link: both partners run the same */
    unsigned fc_scale;
    sim_time_ps wire_ps;          /* one-way wire + PHY latency (replay timeout, lookahead horizon) */
    uint32_t adv[PCIE_FC_TYPES];  /* InitFC values it advertises for what it receives (0 = infinite) */
    sim_time_ps rx_ps;            /* its receive buffer: processing time per TLP */
    sim_time_ps retrain_ps;       /* Recovery after REPLAY_NUM rollover */
    pcie_err_cfg tx_err;          /* errors on what it sends (ber, bad window, drop_ack_every; nak_every unused) */
    uint32_t rx_nak_every;        /* forced Naks on what it receives: every Nth TLP (flit) (0 = off) */
    bool no_lookahead;            /* one TLP per transmitter wake, no lazy receive buffer */
    bool link_error_free;         /* no error injection in either direction: the lookahead may batch */
} pcie_port_cfg;

typedef struct pcie_port_app {
    void *ctx;
    /* a TLP left the receive buffer (rx_ps after its turn): the TL consumed it */
    void (*deliver)(void *ctx, pcie_port *p, const pcie_tlp *t);
    /* the transmitter took a TLP of class cls from its queue: room for more */
    void (*refill)(void *ctx, pcie_port *p, unsigned cls);
    /* the replay buffer emptied (for the end-of-run check) */
    void (*drained)(void *ctx, pcie_port *p);
    /* must this TLP leave the receive buffer at exactly its time (it starts
     * something: a completion, a refill, the end of the run)? NULL = all must */
    bool (*timely)(void *ctx, const pcie_tlp *t);
} pcie_port_app;

/* A port on links tx (it sends) and rx (it receives); dir: the direction it
 * transmits (stats, its random stream with seed); tr: waves (NULL = off). */
pcie_port *pcie_port_new(sim_kernel *k, const char *name, const pcie_port_cfg *cfg, unsigned dir, sim_link *tx,
                         sim_link *rx, uint64_t seed, sim_trace *tr);
void pcie_port_set_app(pcie_port *p, const pcie_port_app *app);
/* Its pool must have every packet back (see the teardown above). */
void pcie_port_free(pcie_port *p);
/* Teardown: every packet on link l goes back to its pool (its sender's). */
void pcie_port_give_back_in_flight(sim_link *l);

/* The TL hands a TLP to the port (it fills fc_class, data_credits, serial). */
void pcie_port_submit(pcie_port *p, pcie_tlp *t);
/* hold: a delivered TLP keeps its receive-buffer credits until the component
 * gives them back (pcie_port_release_held): a switch frees its ingress buffer
 * only once the egress port took the TLP. Off by default. */
void pcie_port_hold_credits(pcie_port *p, bool hold);
/* Gives back the credits of one delivered TLP of class cls held under pcie_port_hold_credits. */
void pcie_port_release_held(pcie_port *p, unsigned cls, uint32_t data_credits);
/* TLPs of class cls waiting in its transmit queue. */
size_t pcie_port_queued(const pcie_port *p, unsigned cls);
/* TLPs (flits) in the replay buffer: sent, not yet acknowledged. */
uint32_t pcie_port_replay_occupancy(const pcie_port *p);
/* TLPs in its receive buffer, not yet delivered. */
size_t pcie_port_rx_buffered(const pcie_port *p);
/* Lets every TLP whose receive-buffer time has come leave it (deferred departures). */
void pcie_port_settle(pcie_port *p);
/* The receive side's notion of now (a deferred departure runs at its own time). */
sim_time_ps pcie_port_rx_now(const pcie_port *p);
/* The transaction layer's notion of now: the transmit decision time while the
 * port takes a TLP (a lookahead batch decides ahead of sim time), else sim_now. */
sim_time_ps pcie_port_tl_now(const pcie_port *p);
/* Credit-stall time so far (closes an open stall at now). */
sim_time_ps pcie_port_stall_ps(const pcie_port *p);
/* When its link came up (DL_Active). */
sim_time_ps pcie_port_active_ps(const pcie_port *p);
/* Its flow-control records: what it receives (its advertisement) and what it sends. */
const pcie_fc_rx *pcie_port_fc_rx(const pcie_port *p, unsigned type);
const pcie_fc_tx *pcie_port_fc_tx(const pcie_port *p, unsigned type);

/* What one port counted. */
typedef struct pcie_port_counters {
    pcie_dir_stats tx;            /* of the direction it transmits (the transmitter's fields) */
    pcie_dir_stats rx;            /* ... and receives (the receiver's: forced Naks, deliveries) */
    uint64_t tl_sent, tl_received;/* TLPs handed to its DLL / delivered in order above it */
    uint64_t rx_duplicated, rx_reordered;
    uint64_t replays, retrains, replay_timeouts, naks_received, invalid_acknaks;
    uint64_t fc_refresh_sent, fc_refresh_sent_posted, fc_overflows;
    uint32_t max_replay_occupancy, replays_before_retrain_max;
    uint64_t credit_loop_samples;
    double credit_loop_sum_ns, credit_loop_min_ns;
} pcie_port_counters;
void pcie_port_get_counters(const pcie_port *p, pcie_port_counters *c);

/* Its conservation laws. Always: every packet out of its pool is on its tx
 * link (the partner returned all others), nothing arrived beyond its
 * advertised credits, above the DLL nothing duplicated or out of order.
 * drained (the run ended, both directions quiet): its replay buffer and
 * receive buffer are empty and it released every credit its TLPs took.
 * 0 = fine, else -1 with the reason in why. */
int pcie_port_check(pcie_port *p, bool drained, char *why, size_t n);

/* A completer's answer to read request mrd (it received it on p): CplDs with
 * mrd's tag, each but the last ending on an RCB boundary and at most MPS (one
 * RCB piece with split_rcb), byte_count counting down (pcie_dma.c). */
void pcie_port_submit_completions(pcie_port *p, const pcie_tlp *mrd, unsigned mps, unsigned rcb, bool split_rcb, bool ecrc);

/* Label of a packet on its links, for waves (sim_link_trace). */
void pcie_pkt_label(const void *msg, char *buf, size_t n);

#endif
