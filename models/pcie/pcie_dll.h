/* PCIe Data Link Layer and flow-control state machines, free of any timing,
 * so unit tests can drive them directly (tests/check_pcie_dll.c) and the port
 * (the pcie_port*.c files) only adds time, wires and buffers around them.
 *
 * Spec references are PCIe Base Spec r6.x section numbers:
 *   sequence numbers and replay   §3.6.2.1 (transmitter), §3.6.3.1 (receiver)
 *   flow-control counters/gating  §2.6.1.2, Scaled FC §3.4.2 / Table 3-4
 * All comparisons are the spec's modulo half-space comparisons, so they stay
 * right across wrap-around. */
#ifndef PCIE_DLL_H
#define PCIE_DLL_H

#include <stdbool.h>
#include <stdint.h>

/* ---- sequence numbers ---------------------------------------------------- */
/* Non-Flit Mode uses 12-bit TLP sequence numbers; Flit Mode 10-bit flit
 * sequence numbers. Both use the same half-space rules. */
#define PCIE_SEQ_BITS_NFM 12u
#define PCIE_SEQ_BITS_FLIT 10u

typedef struct pcie_seq_space {
    uint16_t mask;            /* 2^bits - 1 */
    uint16_t half;            /* 2^bits / 2 */
} pcie_seq_space;

static inline pcie_seq_space pcie_seq_space_of(unsigned bits)
{
    pcie_seq_space s = { (uint16_t)((1u << bits) - 1u), (uint16_t)(1u << (bits - 1)) };
    return s;
}
/* (a - b) mod 2^bits */
static inline uint16_t pcie_seq_sub(pcie_seq_space s, uint16_t a, uint16_t b) { return (uint16_t)((a - b) & s.mask); }
static inline uint16_t pcie_seq_add(pcie_seq_space s, uint16_t a, uint16_t b) { return (uint16_t)((a + b) & s.mask); }

/* ---- transmitter side: NEXT_TRANSMIT_SEQ, ACKD_SEQ, REPLAY_NUM ---------------- */
typedef struct pcie_dll_tx {
    pcie_seq_space sp;
    uint16_t next_transmit_seq;   /* reset 0 */
    uint16_t ackd_seq;            /* reset all ones (FFFh) */
    uint8_t replay_num;           /* the 2-bit REPLAY_NUM counter (00b..11b) */
    uint64_t replays, retrains, invalid_acknaks, purged;
} pcie_dll_tx;

enum pcie_acknak_result {
    PCIE_ACKNAK_NONE = 0,      /* valid, nothing new acknowledged */
    PCIE_ACKNAK_PROGRESS,      /* valid Ack that purged TLPs */
    PCIE_ACKNAK_REPLAY,        /* Nak: replay the remaining unacknowledged TLPs */
    PCIE_ACKNAK_RETRAIN,       /* Nak and REPLAY_NUM rolled over: retrain, then replay */
    PCIE_ACKNAK_INVALID,       /* AckNak_Seq_Num names no outstanding TLP: DLLP discarded (DL protocol error) */
};

static inline void pcie_dll_tx_init(pcie_dll_tx *t, unsigned seq_bits)
{
    t->sp = pcie_seq_space_of(seq_bits);
    t->next_transmit_seq = 0;
    t->ackd_seq = t->sp.mask;
    t->replay_num = 0;
    t->replays = t->retrains = t->invalid_acknaks = t->purged = 0;
}
/* TLPs sent and not yet acknowledged. */
static inline uint16_t pcie_dll_tx_outstanding(const pcie_dll_tx *t)
{
    return pcie_seq_sub(t->sp, pcie_seq_sub(t->sp, t->next_transmit_seq, t->ackd_seq), 1);
}
/* §3.6.2.1: the transmitter must block new TLPs when
 * (NEXT_TRANSMIT_SEQ - ACKD_SEQ) mod 2^bits >= 2^bits / 2. */
static inline bool pcie_dll_tx_may_send_new(const pcie_dll_tx *t)
{
    return pcie_seq_sub(t->sp, t->next_transmit_seq, t->ackd_seq) < t->sp.half;
}
/* Assigns NEXT_TRANSMIT_SEQ to a new TLP and advances it. */
static inline uint16_t pcie_dll_tx_assign(pcie_dll_tx *t)
{
    uint16_t s = t->next_transmit_seq;
    t->next_transmit_seq = pcie_seq_add(t->sp, s, 1);
    return s;
}
/* A replay is needed (Nak or REPLAY_TIMER expiry): REPLAY_NUM + 1; a rollover
 * 11b -> 00b (the 4th replay without forward progress) means retrain first. */
static inline enum pcie_acknak_result pcie_dll_tx_replay_event(pcie_dll_tx *t)
{
    t->replay_num = (uint8_t)((t->replay_num + 1u) & 3u);
    t->replays++;
    if (t->replay_num == 0) {
        t->retrains++;
        return PCIE_ACKNAK_RETRAIN;
    }
    return PCIE_ACKNAK_REPLAY;
}
/* An Ack or Nak DLLP carrying AckNak_Seq_Num `seq` (cumulative). *purged gets
 * the number of TLPs it acknowledges (oldest first), which the caller drops
 * from its replay buffer. Forward progress resets REPLAY_NUM. */
static inline enum pcie_acknak_result pcie_dll_tx_acknak(pcie_dll_tx *t, uint16_t seq, bool nak, uint16_t *purged)
{
    uint16_t d = pcie_seq_sub(t->sp, seq, t->ackd_seq);
    *purged = 0;
    if (d > pcie_dll_tx_outstanding(t)) {      /* neither outstanding nor the last acknowledged one */
        t->invalid_acknaks++;
        return PCIE_ACKNAK_INVALID;
    }
    if (d) {
        t->ackd_seq = seq;
        t->replay_num = 0;
        t->purged += d;
        *purged = d;
    }
    /* A Nak replays what is still unacknowledged; with nothing left there is
     * nothing to replay and REPLAY_NUM is not advanced. */
    if (nak && pcie_dll_tx_outstanding(t)) return pcie_dll_tx_replay_event(t);
    return d ? PCIE_ACKNAK_PROGRESS : PCIE_ACKNAK_NONE;
}

/* ---- receiver side: NEXT_RCV_SEQ, NAK_SCHEDULED ------------------------------ */
typedef struct pcie_dll_rx {
    pcie_seq_space sp;
    uint16_t next_rcv_seq;        /* reset 0 */
    bool nak_scheduled;
    uint64_t accepted, duplicates, out_of_seq, bad_crc, naks;
} pcie_dll_rx;

enum pcie_rx_verdict {
    PCIE_RX_ACCEPT = 0,        /* forward to the transaction layer */
    PCIE_RX_DUPLICATE,         /* discard, schedule an Ack */
    PCIE_RX_NAK,               /* discard, schedule a Nak (NAK_SCHEDULED was clear) */
    PCIE_RX_DISCARD,           /* discard silently (Nak already scheduled) */
};

static inline void pcie_dll_rx_init(pcie_dll_rx *r, unsigned seq_bits)
{
    r->sp = pcie_seq_space_of(seq_bits);
    r->next_rcv_seq = 0;
    r->nak_scheduled = false;
    r->accepted = r->duplicates = r->out_of_seq = r->bad_crc = r->naks = 0;
}
/* §3.6.3.1 for a received TLP with sequence number `seq`; crc_ok = LCRC good. */
static inline enum pcie_rx_verdict pcie_dll_rx_tlp(pcie_dll_rx *r, uint16_t seq, bool crc_ok)
{
    if (crc_ok && seq == r->next_rcv_seq) {
        r->next_rcv_seq = pcie_seq_add(r->sp, seq, 1);
        r->nak_scheduled = false;
        r->accepted++;
        return PCIE_RX_ACCEPT;
    }
    if (crc_ok && pcie_seq_sub(r->sp, r->next_rcv_seq, seq) <= r->sp.half) {
        r->duplicates++;
        return PCIE_RX_DUPLICATE;
    }
    if (crc_ok) r->out_of_seq++; else r->bad_crc++;
    if (r->nak_scheduled) return PCIE_RX_DISCARD;
    r->nak_scheduled = true;
    r->naks++;
    return PCIE_RX_NAK;
}
/* The AckNak_Seq_Num an Ack or Nak carries: NEXT_RCV_SEQ - 1. */
static inline uint16_t pcie_dll_rx_ack_seq(const pcie_dll_rx *r) { return pcie_seq_sub(r->sp, r->next_rcv_seq, 1); }

/* ---- flow control (§2.6.1) ------------------------------------------------- */
/* The six credit types; a TLP consumes one header credit and ceil(bytes/16) data credits of its class. */
enum pcie_fc_type { PCIE_FC_PH = 0, PCIE_FC_PD, PCIE_FC_NPH, PCIE_FC_NPD, PCIE_FC_CPLH, PCIE_FC_CPLD, PCIE_FC_TYPES };
enum pcie_fc_class { PCIE_FC_P = 0, PCIE_FC_NP, PCIE_FC_CPL, PCIE_FC_CLASSES };
static inline unsigned pcie_fc_hdr_type(unsigned cls) { return 2 * cls; }
static inline unsigned pcie_fc_data_type(unsigned cls) { return 2 * cls + 1; }
static inline bool pcie_fc_is_data(unsigned type) { return type & 1u; }
#define PCIE_FC_UNIT_BYTES 16u
#define PCIE_FC_HDR_FIELD_MAX 127u     /* largest non-infinite advertisement, 8-bit field */
#define PCIE_FC_DATA_FIELD_MAX 2047u   /* 12-bit field */

/* Counter width in bits (Table 3-4): header 8/10/12, data 12/14/16 for scale 1/4/16. */
static inline unsigned pcie_fc_field_bits(unsigned type, unsigned scale)
{
    unsigned extra = scale == 16 ? 4u : scale == 4 ? 2u : 0u;
    return (pcie_fc_is_data(type) ? 12u : 8u) + extra;
}

/* Transmitter: CREDIT_LIMIT and CREDITS_CONSUMED, [field] bits each. */
typedef struct pcie_fc_tx {
    uint32_t limit, consumed, mask;
    bool infinite;
} pcie_fc_tx;

static inline void pcie_fc_tx_init(pcie_fc_tx *f, unsigned field_bits)
{
    f->mask = (1u << field_bits) - 1u;
    f->limit = f->consumed = 0;
    f->infinite = false;
}
/* InitFC: an advertised field of 0 means infinite; else CREDIT_LIMIT = field x scale. */
static inline void pcie_fc_tx_initfc(pcie_fc_tx *f, uint32_t field, unsigned scale)
{
    f->infinite = field == 0;
    f->limit = (field * scale) & f->mask;
    f->consumed = 0;
}
/* UpdateFC: CREDIT_LIMIT = field x scale (ignored for infinite types). */
static inline void pcie_fc_tx_updatefc(pcie_fc_tx *f, uint32_t field, unsigned scale)
{
    if (!f->infinite) f->limit = (field * scale) & f->mask;
}
/* The gating rule: may send a TLP needing `need` credits when
 * (CREDIT_LIMIT - (CREDITS_CONSUMED + need)) mod 2^F <= 2^F / 2. */
static inline bool pcie_fc_tx_gate(const pcie_fc_tx *f, uint32_t need)
{
    if (f->infinite || need == 0) return true;
    return ((f->limit - (f->consumed + need)) & f->mask) <= (f->mask + 1u) / 2u;
}
static inline void pcie_fc_tx_consume(pcie_fc_tx *f, uint32_t need)
{
    if (!f->infinite) f->consumed = (f->consumed + need) & f->mask;
}
/* Credits the transmitter may still spend (meaningful while limit-consumed is within half the space). */
static inline uint32_t pcie_fc_tx_available(const pcie_fc_tx *f)
{
    if (f->infinite) return UINT32_MAX;
    uint32_t a = (f->limit - f->consumed) & f->mask;
    return a <= (f->mask + 1u) / 2u ? a : 0;
}

/* Receiver: CREDITS_ALLOCATED and CREDITS_RECEIVED, kept unwrapped (64-bit) so
 * the buffer bookkeeping is exact; the DLLP carries them mod 2^F. */
typedef struct pcie_fc_rx {
    uint64_t allocated;           /* initial advertisement + every credit released */
    uint64_t received;            /* credits consumed by TLPs received */
    uint64_t advertised;          /* CREDIT_LIMIT the transmitter knows: last value sent (scaled) */
    uint64_t initial;             /* the InitFC advertisement (scaled): the buffer size */
    uint32_t field_mask;          /* the DLLP field: 8 or 12 bits */
    unsigned scale;               /* 1, 4 or 16 */
    unsigned scale_shift;         /* log2(scale) */
    bool infinite;
    uint64_t overflows;           /* TLPs received beyond the advertised limit (FC protocol error) */
} __attribute__((aligned(64))) pcie_fc_rx;   /* 64 B: an array of them is indexed by a shift */

static inline void pcie_fc_rx_init(pcie_fc_rx *r, unsigned type, uint32_t field, unsigned scale)
{
    r->scale = scale;
    r->scale_shift = (unsigned)__builtin_ctz(scale);
    r->field_mask = pcie_fc_is_data(type) ? 0xFFFu : 0xFFu;
    r->infinite = field == 0;
    r->allocated = r->advertised = r->initial = (uint64_t)field * scale;
    r->received = 0;
    r->overflows = 0;
}
/* The field value an InitFC/UpdateFC carries now: CREDITS_ALLOCATED / scale, mod 2^field. */
static inline uint32_t pcie_fc_rx_field(const pcie_fc_rx *r)
{
    if (r->infinite) return 0;
    return (uint32_t)((r->allocated >> r->scale_shift) & r->field_mask);
}
/* The credit limit (unwrapped) that field value stands for. */
static inline uint64_t pcie_fc_rx_limit_sent(const pcie_fc_rx *r) { return r->allocated >> r->scale_shift << r->scale_shift; }
/* Receiver overflow check (§2.6.1.2 optional check; here it is a model invariant). */
static inline bool pcie_fc_rx_receive(pcie_fc_rx *r, uint32_t need)
{
    if (r->infinite) return true;
    r->received += need;
    if (r->received > r->advertised) {
        r->overflows++;
        return false;
    }
    return true;
}
static inline void pcie_fc_rx_release(pcie_fc_rx *r, uint32_t n)
{
    if (!r->infinite) r->allocated += n;
}
/* Credits the transmitter still believes it has (from what it was told). */
static inline uint64_t pcie_fc_rx_tx_view(const pcie_fc_rx *r) { return r->advertised - r->received; }
/* Is there something new to advertise (allocation moved past the last value sent)? */
static inline bool pcie_fc_rx_has_update(const pcie_fc_rx *r)
{
    return !r->infinite && pcie_fc_rx_limit_sent(r) != r->advertised;
}

#endif
