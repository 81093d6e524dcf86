/* Internal: one PCIe port (transaction layer queues, data link layer, the
 * transmit side of the physical layer), its configuration and its packet
 * pool. A port is a component: it owns its configuration, its physical-layer
 * record, its pool and its statistics, and meets its link partner only
 * through its two sim_links (what it sends on tx, what it receives on rx).
 * Used by the pcie_*.c files and pcie_sys.c only. */
#ifndef PCIE_PORT_H
#define PCIE_PORT_H

#include "models/pcie/pcie.h"
#include "sim/packet.h"

enum pcie_pkt_kind {
    PCIE_PKT_TLP = 0, PCIE_PKT_ACK, PCIE_PKT_NAK, PCIE_PKT_UPDATEFC, PCIE_PKT_INITFC1, PCIE_PKT_INITFC2,
    PCIE_PKT_SKP, PCIE_PKT_TS, PCIE_PKT_FLIT,
};

#define PCIE_FLIT_MAX_TLPS 24         /* TLPs that can end in one flit (236 B / 12 B header, rounded up) */

/* DLP content every flit carries (Flit Mode): Ack/Nak and one optional FC update. */
typedef struct pcie_flit_dlp {
    uint8_t acknak;               /* 0 none, 1 Ack, 2 Nak */
    uint8_t fc_valid, fc_class;
    uint16_t acknak_seq;
    uint32_t hdr_fc, data_fc;
} pcie_flit_dlp;

/* A flit's TLP content: the TLPs whose last byte lies in it. */
typedef struct pcie_flit {
    uint16_t seq;
    uint8_t payload;              /* carries TLP bytes: has a sequence number, is replayed */
    uint8_t n_tlps;
    uint16_t tlp_bytes;           /* TLP bytes in this flit (<= 236) */
    pcie_tlp tlps[PCIE_FLIT_MAX_TLPS];
} pcie_flit;

/* What a PCIe packet on the wire says: the extension (sim_pkt_ext) of the
 * sim_pkt that carries it. Every message a port sends is a sim_pkt from its
 * own pool (wire_bytes: what it costs on the wire; payload_bytes: TLP data);
 * only the partner port reads this part (sim/packet.h's extension rule), and
 * returns the packet with sim_pkt_free. Flit Mode pools carry the whole
 * record; Non-Flit pools stop before flit (pcie_pkt_ext_bytes). */
typedef struct pcie_pkt {
    uint8_t kind;                 /* enum pcie_pkt_kind */
    uint8_t fc_class;
    uint8_t corrupted;            /* LCRC/CRC/FEC failure on the wire */
    uint8_t replayed;
    uint16_t seq;                 /* TLP sequence number or AckNak_Seq_Num */
    uint8_t has_flit;             /* flit: carries TLP content (a payload flit, not an idle one) */
    uint32_t hdr_fc, data_fc;     /* UpdateFC / InitFC fields */
    sim_time_ps until_ps;         /* TS: end of Recovery */
    pcie_tlp tlp;                 /* TLP: its own copy (the receiver never reads the sender's replay buffer) */
    pcie_flit_dlp dlp;            /* flit */
    pcie_flit flit;               /* flit with has_flit: its TLP content (a copy); last, Flit Mode only */
} pcie_pkt;

/* The extension a port's pool gives each packet: without the flit in Non-Flit Mode. */
static inline uint32_t pcie_pkt_ext_bytes(bool flit_mode)
{
    return flit_mode ? (uint32_t)sizeof(pcie_pkt) : (uint32_t)offsetof(pcie_pkt, flit);
}
static inline pcie_pkt *pcie_pkt_of(sim_pkt *m) { return sim_pkt_ext(m); }
static inline const pcie_pkt *pcie_pkt_of_const(const sim_pkt *m) { return sim_pkt_ext_const(m); }

/* A growable FIFO of TLPs with the age (enqueue order) used by the ordering rules. */
typedef struct pcie_tlpq {
    pcie_tlp *v;
    uint64_t *age;
    size_t head, len, cap;
} pcie_tlpq;

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

enum pcie_dl_state { PCIE_DL_FC_INIT1 = 0, PCIE_DL_FC_INIT2, PCIE_DL_ACTIVE };

/* Receive buffer entry: a TLP and when the receiver finishes with it. */
typedef struct pcie_rxent { pcie_tlp tlp; sim_time_ps done_ps; bool timely; } pcie_rxent;

/* Credit-loop probe: when the n-th credit of a class was spent. */
typedef struct pcie_loop_ent { uint64_t cum; sim_time_ps sent_ps; } pcie_loop_ent;
#define PCIE_LOOP_RING 8192

struct pcie_port {
    sim_kernel *k;
    pcie_port_cfg cfg;
    pcie_phy phy;                 /* its own physical-layer record */
    sim_pkt_pool pool;            /* what it sends comes from here (extension: pcie_pkt) */
    const char *name;
    unsigned dir;                 /* direction this port transmits */
    sim_link *tx, *rx;
    pcie_port_app app;
    sim_trace *tr;

    /* transaction layer, transmit */
    pcie_tlpq q[PCIE_FC_CLASSES];
    uint8_t q_busy;               /* classes whose queue is not empty (bit per class) */
    uint64_t age_next;
    uint64_t tx_serial[PCIE_FC_CLASSES];
    /* transaction layer, receive: conservation per class */
    uint64_t rx_expect[PCIE_FC_CLASSES];
    uint64_t rx_lost_gap, rx_dup, rx_reorder;

    /* flow control */
    pcie_fc_tx fct[PCIE_FC_TYPES];
    pcie_fc_rx fcr[PCIE_FC_TYPES];
    int64_t fc_least[PCIE_FC_TYPES];  /* fc_type_urgent: the least a transmitter must have (1 header, 1 MPS of data) */
    uint64_t fc_step[PCIE_FC_TYPES];  /* ... and the backlog that is urgent (an eighth of the buffer, >= least) */
    uint8_t fc_now;               /* classes with an UpdateFC scheduled */
    sim_time_ps fc_deadline[PCIE_FC_CLASSES];
    sim_time_ps fc_last_sent[PCIE_FC_CLASSES];
    uint64_t fc_refresh_sent, fc_refresh_sent_p;
    uint8_t fc_refresh_due;       /* classes whose pending UpdateFC is a 30 us refresh */
    enum pcie_dl_state dl;
    uint8_t initfc_rcvd;          /* classes whose InitFC arrived */
    uint8_t initfc_to_send;       /* classes whose InitFC1/2 is still to go out */
    sim_time_ps active_ps;
    /* credit-loop probe (header credits, or data if headers are infinite) */
    uint8_t loop_probe[PCIE_FC_CLASSES];  /* the credit type measured per class (loop_type) */
    pcie_loop_ent *loop[PCIE_FC_CLASSES];
    size_t loop_head[PCIE_FC_CLASSES], loop_len[PCIE_FC_CLASSES];
    uint64_t loop_spent[PCIE_FC_CLASSES], loop_returned[PCIE_FC_CLASSES];
    double loop_sum_ns, loop_min_ns;
    uint64_t loop_n;

    /* data link layer, transmit */
    pcie_dll_tx dtx;
    pcie_tlp *replay;             /* replay buffer, indexed by sequence number (NFM) */
    pcie_flit *replay_flits;      /* replay buffer of flits (Flit Mode) */
    uint32_t replay_left;         /* TLPs (flits) still to resend in the current replay */
    bool replaying;
    bool replay_timer_restart;    /* restart REPLAY_TIMER at the first replayed TLP */
    sim_time_ps replay_deadline;
    uint32_t replays_since_progress, replays_before_retrain_max;
    uint64_t replay_timeouts, naks_received, acks_received, retrains;
    uint32_t max_replay_occ;
    sim_time_ps recovery_until;   /* Recovery: the transmitter sends nothing */

    /* data link layer, receive */
    pcie_dll_rx drx;
    bool ack_now, nak_now;
    uint16_t last_acknak_sent;
    sim_time_ps ack_deadline;
    uint32_t rx_nak_every;        /* forced Naks on what this port receives: every Nth TLP (0 = off) */
    uint64_t rx_tlp_count;        /* ... counted here (only when on) */
    uint64_t ack_sent_count;      /* for dropped Acks */

    /* receive buffer */
    pcie_rxent *rxb; size_t rxb_head, rxb_len, rxb_cap;
    sim_time_ps rx_busy_until;
    size_t rxb_timely;            /* entries that need their own drain event */
    uint64_t rxb_pend_hdr, rxb_pend_data; /* credits the buffered TLPs will release */
    bool rx_lazy;                 /* posted TLPs may leave the buffer at the next observer (exact, see rx_arm) */
    bool settling, departing;
    /* deferred arrivals (rx_defer_horizon): posted credits of TLPs on the wire towards this port */
    bool defer_arrivals;
    uint64_t defer_wire_hdr, defer_wire_data;
    bool fc_adv_moved;            /* a posted UpdateFC went out since the last rejudge */
    bool rejudging;               /* inside sim_link_rejudge: rx_deferrable counts nothing */
    sim_time_ps rx_now;           /* time of the receive-buffer departure being processed (0 = sim_now) */

    /* physical layer, transmit */
    sim_time_ps skp_next, last_tx_end;
    sim_rng rng;
    int64_t bits_to_error;        /* geometric skip to the next bit error */
    bool wire_faults;             /* bit errors or a bad-link window in the direction it sends */
    /* Flit Mode assembly */
    pcie_flit *fa;                /* flit being filled */
    uint32_t fa_carry;            /* bytes of a TLP started in an earlier flit still to place */
    pcie_tlp fa_carry_tlp;
    bool fa_has_carry;
    sim_time_ps flit_ack_deadline;

    /* lookahead (conservative, exact; judged on what the rx link has in flight) */
    bool lookahead;               /* may commit several TLPs per wake when nothing can intervene */
    sim_time_ps tl_now;           /* decision time of the TLP being taken (0 = sim_now) */
    uint64_t tx_wakes;

    /* stall accounting */
    bool stalled;
    sim_time_ps stall_since, stall_ps;

    /* processes */
    sim_event tx_ev, timer_ev, drain_ev;
    sim_process tx_proc, timer_proc, drain_proc;
    sim_time_ps timer_at;
    bool in_tx;

    /* its statistics: each field is counted by one side only (pcie_sys adds
     * the transmitter's and the receiver's record of a direction) */
    pcie_dir_stats st_tx;         /* of the direction this port transmits */
    pcie_dir_stats st_rx;         /* ... and receives */

    /* trace */
    sim_trace_var tv_credit[PCIE_FC_TYPES], tv_replay_occ, tv_next_tx_seq, tv_ackd_seq, tv_next_rcv_seq,
        tv_acknak_rx, tv_acknak_tx, tv_replay_num, tv_recovery, tv_rxbuf, tv_stall;
};

/* dir: the direction it transmits (= its side; stats, random stream). */
void pcie_port_init(pcie_port *p, sim_kernel *k, const char *name, const pcie_port_cfg *cfg, unsigned dir,
                    sim_link *tx, sim_link *rx, uint64_t seed, sim_trace *tr);
void pcie_port_set_app(pcie_port *p, const pcie_port_app *app);
/* Its pool must have every packet back: the packets still on its tx link are
 * given back first (pcie_port_give_back_in_flight, for both links). */
void pcie_port_free(pcie_port *p);
/* Teardown: every packet on link l goes back to its pool (its sender's). */
void pcie_port_give_back_in_flight(sim_link *l);
/* The TL hands a TLP to the port (it fills serial itself). */
void pcie_port_submit(pcie_port *p, pcie_tlp *t);
static inline size_t pcie_port_queued(const pcie_port *p, unsigned cls) { return p->q[cls].len; }
/* TLPs (flits) in the replay buffer. */
static inline uint32_t pcie_port_replay_occupancy(const pcie_port *p) { return pcie_dll_tx_outstanding(&p->dtx); }
/* Lets every TLP whose receive-buffer time has come leave it (deferred departures). */
void pcie_port_settle(pcie_port *p);
/* The receive side's notion of now (a deferred departure runs at its own time). */
static inline sim_time_ps pcie_port_rx_now(const pcie_port *p) { return p->rx_now ? p->rx_now : sim_now(p->k); }
/* Credit-stall time so far (closes an open stall at now). */
sim_time_ps pcie_port_stall_ps(const pcie_port *p);
/* The transaction layer's notion of now: the transmit decision time while the
 * port takes a TLP (a lookahead batch decides ahead of sim time), else sim_now. */
static inline sim_time_ps pcie_port_tl_now(const pcie_port *p) { return p->tl_now ? p->tl_now : sim_now(p->k); }
/* Label for link traces. */
void pcie_pkt_label(const void *msg, char *buf, size_t n);

#endif
