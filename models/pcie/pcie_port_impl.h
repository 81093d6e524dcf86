/* Internal to the files of one PCIe port (pcie_port.c, pcie_label.c,
 * pcie_fc.c, pcie_rx.c, pcie_tx.c, pcie_flit.c); users of a port include
 * pcie_port.h only. Here: the port's struct, what a packet on the wire says
 * (pcie_pkt, the sim_pkt extension), the helpers several files use on the
 * per-TLP path (inline here), and what each file offers the others. Nothing here reads another port: a port meets its partner only
 * through its links. */
#ifndef PCIE_PORT_IMPL_H
#define PCIE_PORT_IMPL_H

#include "models/pcie/pcie_port.h"
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
    bool hold_credits;            /* delivered TLPs keep their credits until pcie_port_release_held */
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

/* Sets up a port in place (p is zeroed here; pcie_port_new allocates it aligned). */
void pcie_port_init(pcie_port *p, sim_kernel *k, const char *name, const pcie_port_cfg *cfg, unsigned dir,
                    sim_link *tx, sim_link *rx, uint64_t seed, sim_trace *tr);

/* Per-TLP helpers with several callers, which LTO leaves out of line: a call
 * costs 10-20 instructions of register saves, a few percent of a TLP each. */
#define HOT_INLINE static inline __attribute__((always_inline))

#define FC_REFRESH_PS SIM_US(30)   /* §2.6.1.2: UpdateFC at least every 30 us per non-infinite type */

extern const char *const pcie_cls_name[PCIE_FC_CLASSES];

/* ---- packets ---------------------------------------------------------------- */
/* A packet from the port's own pool: *m is the sim_pkt the link carries, the
 * result its extension (fields the sender always sets are left as they were). */
HOT_INLINE pcie_pkt *pkt_alloc(pcie_port *p, sim_pkt **m, uint8_t kind, uint32_t wire_bytes)
{
    sim_pkt *s = sim_pkt_alloc(&p->pool);
    s->wire_bytes = wire_bytes;
    pcie_pkt *k = pcie_pkt_of(s);
    k->kind = kind;
    k->corrupted = 0;
    k->replayed = 0;
    k->has_flit = 0;
    *m = s;
    return k;
}

/* ---- TLP queues ---------------------------------------------------------------- */
static inline pcie_tlp *tlpq_head(pcie_tlpq *q) { return &q->v[q->head]; }
static inline void tlpq_pop(pcie_tlpq *q)
{
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->len--;
}

static inline sim_time_ps now_of(const pcie_port *p) { return sim_now(p->k); }
/* The receive side's now (pcie_port_rx_now, inline for the port's own files). */
static inline sim_time_ps rx_now_of(const pcie_port *p) { return p->rx_now ? p->rx_now : sim_now(p->k); }

static inline void kick(pcie_port *p)
{
    if (!p->in_tx && !sim_event_pending(&p->tx_ev)) sim_event_notify_delta(&p->tx_ev);
}

static inline void timer_arm(pcie_port *p, sim_time_ps t)
{
    if (t < p->timer_at) {
        sim_time_ps now = now_of(p);
        p->timer_at = t;
        sim_event_notify_at(&p->timer_ev, t > now ? t - now : 0);
    }
}

/* Wave updates: the check for tracing inline (it is off on the hot path), the work out of line (pcie_port.c). */
void pcie_trace_credits_now(pcie_port *p);
void pcie_trace_dll_now(pcie_port *p);
static inline void trace_credits(pcie_port *p)
{
    if (p->tr) pcie_trace_credits_now(p);
}
static inline void trace_dll(pcie_port *p)
{
    if (p->tr) pcie_trace_dll_now(p);
}

static inline void stall_begin(pcie_port *p, sim_time_ps now)
{
    if (p->stalled) return;
    p->stalled = true;
    p->stall_since = now;
    sim_trace_u64(p->tr, p->tv_stall, 1);
}
static inline void stall_end(pcie_port *p, sim_time_ps now)
{
    if (!p->stalled) return;
    p->stalled = false;
    p->stall_ps += now - p->stall_since;
    sim_trace_u64(p->tr, p->tv_stall, 0);
}

/* ---- flow control (pcie_fc.c) --------------------------------------------------------- */
bool pcie_class_finite(const pcie_port *p, unsigned cls);
void pcie_fill_fc_fields(pcie_port *p, unsigned cls, uint32_t *hf, uint32_t *df, bool mark_sent);
void pcie_loop_types_update(pcie_port *p);
void pcie_fc_update_received(pcie_port *p, unsigned cls, uint32_t hf, uint32_t df);
void pcie_initfc_received(pcie_port *p, const pcie_pkt *k);
void pcie_go_active(pcie_port *p);

/* Credit-loop probe: the transmitter spent a class's credits at t; the
 * UpdateFC that returns them closes the loop (loop_returned, pcie_fc.c). */
HOT_INLINE void loop_record(pcie_port *p, unsigned cls, uint32_t hdr_need, uint32_t data_need, sim_time_ps t)
{
    unsigned lt = p->loop_probe[cls];
    if (p->fct[lt].infinite) return;
    uint32_t need = pcie_fc_is_data(lt) ? data_need : hdr_need;
    p->loop_spent[cls] += need;
    if (!need || p->loop_len[cls] == PCIE_LOOP_RING) return;
    pcie_loop_ent *e = &p->loop[cls][(p->loop_head[cls] + p->loop_len[cls]) % PCIE_LOOP_RING];
    e->cum = p->loop_spent[cls];
    e->sent_ps = t;
    p->loop_len[cls]++;
}

/* ---- transaction layer, transmit: the arbiter's choice (pcie_tx.c, pcie_flit.c) ------------ */
/* Picks the next new TLP under the ordering rules (Posted may pass; NP and Cpl
 * must not pass an older blocked Posted) and the credit gate. Returns the class
 * or -1; *credit_blocked says a TLP was waiting for credits. */
HOT_INLINE int pick_new(pcie_port *p, bool *credit_blocked)
{
    /* fast path: one class has TLPs waiting */
    unsigned busy = p->q_busy;
    if (busy && !(busy & (busy - 1u))) {
        unsigned c = (unsigned)__builtin_ctz(busy);
        const pcie_tlp *t = tlpq_head(&p->q[c]);
        bool ok = pcie_fc_tx_gate(&p->fct[pcie_fc_hdr_type(c)], 1) &&
                  pcie_fc_tx_gate(&p->fct[pcie_fc_data_type(c)], t->data_credits);
        *credit_blocked = !ok;
        return ok ? (int)c : -1;
    }
    int order[PCIE_FC_CLASSES], n = 0;
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++)
        if (p->q[c].len) order[n++] = (int)c;
    /* by age (at most 3: insertion sort) */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && p->q[order[j]].age[p->q[order[j]].head] < p->q[order[j - 1]].age[p->q[order[j - 1]].head]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    bool p_blocked = false;
    *credit_blocked = false;
    for (int i = 0; i < n; i++) {
        unsigned c = (unsigned)order[i];
        const pcie_tlp *t = tlpq_head(&p->q[c]);
        bool ok = pcie_fc_tx_gate(&p->fct[pcie_fc_hdr_type(c)], 1) &&
                  pcie_fc_tx_gate(&p->fct[pcie_fc_data_type(c)], t->data_credits);
        if (!ok) {
            *credit_blocked = true;
            if (c == PCIE_FC_P) p_blocked = true;
            continue;
        }
        if (c != PCIE_FC_P && p_blocked) continue;
        return (int)c;
    }
    return -1;
}

HOT_INLINE void take_new(pcie_port *p, unsigned c, pcie_tlp *out, sim_time_ps now)
{
    *out = *tlpq_head(&p->q[c]);
    tlpq_pop(&p->q[c]);
    if (!p->q[c].len) p->q_busy &= (uint8_t)~(1u << c);
    uint32_t dc = out->data_credits;
    pcie_fc_tx_consume(&p->fct[pcie_fc_hdr_type(c)], 1);
    pcie_fc_tx_consume(&p->fct[pcie_fc_data_type(c)], dc);
    loop_record(p, c, 1, dc, now);
    trace_credits(p);
}

/* ---- receive (pcie_rx.c) ------------------------------------------------------------------ */
void pcie_rx_arm(pcie_port *p);
void pcie_drain_run(void *ctx);
void pcie_port_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);
bool pcie_rx_deferrable(void *ctx, sim_link *l, const void *msg);
bool pcie_forced_nak(pcie_port *p);
void pcie_rx_accept(pcie_port *p, const pcie_tlp *t);

/* ---- transmit, data link layer and wire (pcie_tx.c) ----------------------------------------- */
unsigned pcie_wire_errors(pcie_port *p, uint32_t bytes, uint32_t *err_bytes, unsigned max_err);
bool pcie_in_bad_window(const pcie_port *p, sim_time_ps t);
void pcie_acknak_received(pcie_port *p, uint16_t seq, bool nak);
void pcie_replay_timer_start(pcie_port *p, sim_time_ps tx_end);
void pcie_replay_timeout(pcie_port *p, sim_time_ps now);
void pcie_send_dllp(pcie_port *p, enum pcie_pkt_kind kind, unsigned cls, sim_time_ps now);
void pcie_send_skp(pcie_port *p, sim_time_ps now);
bool pcie_skp_due(pcie_port *p, sim_time_ps now);
void pcie_tx_run(void *ctx);

/* ---- Flit Mode (pcie_flit.c) ------------------------------------------------------------------ */
/* One flit once the DL is active (the transmitter sends due SKPs and InitFC first, pcie_tx.c). */
bool pcie_tx_one_flit(pcie_port *p, sim_time_ps now);
void pcie_rx_flit(pcie_port *p, pcie_pkt *k);

#endif
