/* PCIe link model: physical rate, transaction layer, data link layer and flow
 * control of one link between a DMA requester and a memory completer.
 *
 * The wire is a pair of sim_links (one per direction) whose bandwidth is the
 * raw rate after 8b/10b or 128b/130b encoding (1b/1b for Gen6). Everything that
 * costs wire time is a message on them: TLPs with their framing, sequence
 * number and LCRC, Ack/Nak/UpdateFC/InitFC DLLPs, SKP ordered sets, the
 * training sets of a retrain, and in Gen6 Flit Mode 256 B flits. Efficiency,
 * credit stalls and latency emerge from those messages; nothing in the model
 * computes a throughput.
 *
 * pcie_dll.h holds the DLL/FC state machines; pcie_port.h the public API of
 * one port (TL queues, transmit arbiter, replay buffer, timers, receive
 * buffers, error injection), a component that meets its partner only through
 * its two links and that other components embed, one per PCIe link; its
 * internals are pcie_port_impl.h and pcie_port.c, pcie_label.c, pcie_fc.c,
 * pcie_rx.c, pcie_tx.c and pcie_flit.c; pcie_sys.c the requester, the
 * completer and the two-port system, built on pcie_port.h. */
#ifndef PCIE_H
#define PCIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/pcie/pcie_dll.h"
#include "sim/sim.h"

/* ---- physical layer ------------------------------------------------------ */
enum pcie_encoding { PCIE_ENC_8B10B = 0, PCIE_ENC_128B130B, PCIE_ENC_1B1B };

typedef struct pcie_phy {
    unsigned gen, lanes;
    double gtps;                  /* GT/s per lane */
    enum pcie_encoding enc;
    bool flit_mode;               /* Gen6: 256 B flits */
    double raw_GBps;              /* after encoding, all lanes, 1e9 B/s */
    double symbol_ns;             /* one symbol (byte) time on a lane */
    uint32_t skp_bytes;           /* one SKP ordered set (+EDS token) on all lanes */
    sim_time_ps skp_interval_ps;  /* SKP scheduling interval */
    uint32_t ack_limit_symbols;   /* AckNak latency limit, spec formula = Table 3-10..12 */
    sim_time_ps ack_limit_ps;
    sim_time_ps replay_timeout_ps;/* REPLAY_TIMER limit (spec value + channel round trip) */
} pcie_phy;

/* Fills phy for gen 1..6, lanes, MPS; wire_ps is added to the replay timeout. */
void pcie_phy_init(pcie_phy *phy, unsigned gen, unsigned lanes, unsigned mps, sim_time_ps wire_ps);
/* AckNak latency limit in symbol times: floor((MPS+28)*AckFactor/Width + InternalDelay). */
uint32_t pcie_ack_limit_symbols(unsigned gen, unsigned lanes, unsigned mps);

/* ---- transaction layer packets ------------------------------------------- */
enum pcie_tlp_type { PCIE_TLP_MWR = 0, PCIE_TLP_MRD, PCIE_TLP_CPLD, PCIE_TLP_MSG };

#define PCIE_NFM_FRAMING_BYTES 8u       /* STP token/symbol + seq + LCRC (+END): 8 B at every gen */
#define PCIE_DLLP_BYTES 8u
#define PCIE_FLIT_BYTES 256u
#define PCIE_FLIT_TLP_BYTES 236u        /* TLP bytes per flit; 6 DLP + 8 CRC + 6 FEC */
#define PCIE_FLIT_DLP_BYTES 6u

typedef struct pcie_tlp {
    uint64_t addr;
    uint64_t serial;              /* sender's per-class TL order number (conservation checks) */
    sim_time_ps xfer_start_ps;    /* when its DMA transfer started (latency) */
    uint32_t len;                 /* payload bytes (MWr, CplD) or bytes requested (MRd) */
    uint32_t byte_count;          /* CplD: bytes still to come for its request, this one included */
    uint32_t xfer;                /* DMA transfer number */
    uint16_t tag;
    uint16_t req_id;              /* requester ID (bus << 8 | device << 3 | function): completions route back by it */
    uint16_t data_credits;        /* filled by pcie_port_submit: pcie_tlp_data_credits */
    uint8_t type;                 /* enum pcie_tlp_type */
    uint8_t hdr_bytes;            /* 12 (3DW) or 16 (4DW) */
    uint8_t ecrc;                 /* 1: 4 B digest */
    uint8_t last;                 /* last TLP of its transfer (MWr) or of its request (CplD) */
    uint8_t fc_class;             /* filled by pcie_port_submit: pcie_tlp_class */
} pcie_tlp;

static inline unsigned pcie_tlp_class(const pcie_tlp *t)
{
    return t->type == PCIE_TLP_MRD ? PCIE_FC_NP : t->type == PCIE_TLP_CPLD ? PCIE_FC_CPL : PCIE_FC_P;
}
static inline uint32_t pcie_tlp_payload(const pcie_tlp *t)
{
    return (t->type == PCIE_TLP_MWR || t->type == PCIE_TLP_CPLD) ? t->len : 0;
}
/* TLP bytes without DLL framing (header + payload + digest). */
static inline uint32_t pcie_tlp_bytes(const pcie_tlp *t) { return t->hdr_bytes + pcie_tlp_payload(t) + 4u * t->ecrc; }
static inline uint32_t pcie_tlp_data_credits(const pcie_tlp *t)
{
    return (pcie_tlp_payload(t) + PCIE_FC_UNIT_BYTES - 1) / PCIE_FC_UNIT_BYTES;
}

/* ---- configuration --------------------------------------------------------- */
typedef struct pcie_err_cfg {
    double ber;                   /* bit-error rate on TLP/DLLP (flit) bits */
    uint32_t nak_every;           /* receiver treats every Nth TLP (flit) as LCRC-bad: forced Nak (0 = off) */
    uint32_t drop_ack_every;      /* every Nth Ack DLLP is lost (0 = off) */
    sim_time_ps bad_from_ps, bad_until_ps; /* every TLP/flit in this window is corrupted */
} pcie_err_cfg;

enum pcie_op { PCIE_OP_WR = 0, PCIE_OP_RD, PCIE_OP_RDWR };
enum pcie_dir { PCIE_DOWN = 0, PCIE_UP = 1 };  /* down: requester -> completer */
/* The two link partners, each advertising its own receive credits (InitFC):
 * the requester is a DMA endpoint, the completer the root port in front of
 * host memory. A port's side is also the direction it transmits. */
enum pcie_side { PCIE_REQUESTER = PCIE_DOWN, PCIE_COMPLETER = PCIE_UP, PCIE_SIDES = 2 };
/* The parameter (and message) name of one side's advertisement of a credit
 * type: the completer's posted/non-posted ones and the requester's completion
 * ones are the plain names (ph pd nph npd / cplh cpld: the receiver of the
 * traffic the tests measure); the other side's carry ep_ / rc_. */
const char *pcie_fc_param_name(unsigned side, unsigned type);

typedef struct pcie_cfg {
    unsigned gen, lanes;
    unsigned mps, mrrs, rcb;
    bool cpl_split_rcb;           /* completions in RCB-sized pieces instead of MPS-sized ones */
    bool addr64, ecrc;
    uint32_t adv[PCIE_SIDES][PCIE_FC_TYPES]; /* InitFC field values each port advertises for what it receives (0 = infinite) */
    unsigned fc_scale;            /* 1, 4 or 16 */
    sim_time_ps wire_ps;          /* one-way wire + PHY latency */
    sim_time_ps rx_ps;            /* receive buffer: processing time per TLP */
    sim_time_ps cpl_ps;           /* completer latency for reads */
    sim_time_ps retrain_ps;       /* Recovery after REPLAY_NUM rollover */
    unsigned tags;                /* outstanding reads the requester may have */
    pcie_err_cfg err[2];          /* per direction */
    bool msg_per_xfer;            /* requester follows each DMA write with a Msg TLP (posted, no data) */
    bool no_lookahead;            /* one TLP per transmitter wake (the lookahead gives identical results, faster) */
    /* workload */
    enum pcie_op op;
    uint64_t size, count;
} pcie_cfg;

/* Validates a configuration. Returns NULL or a message naming key, value and what is allowed. */
const char *pcie_cfg_check(const pcie_cfg *c, char *buf, size_t n);

/* ---- results ---------------------------------------------------------------- */
typedef struct pcie_dir_stats {
    uint64_t tlps_new, tlps_replayed, dllps, acks, naks, updatefcs, initfcs, skps, flits, idle_flits;
    uint64_t tlp_wire_bytes, tlp_replay_wire_bytes, dllp_bytes, skp_bytes, flit_bytes;
    uint64_t corrupted, dropped_acks, forced_naks, fec_corrected;
    uint64_t payload_delivered;   /* accepted by the receiving TL (drained) */
    sim_time_ps first_delivery_ps, last_delivery_ps;
    uint64_t first_delivery_bytes;
    uint64_t lost, duplicated, reordered;
} pcie_dir_stats;

typedef struct pcie_results {
    pcie_dir_stats dir[2];
    uint64_t replays, replay_timeouts, retrains, naks_received, invalid_acknaks, fc_overflows;
    uint64_t fc_overflows_side[PCIE_SIDES]; /* TLPs a port received beyond what it advertised */
    uint64_t updatefcs_refresh;
    uint64_t updatefcs_refresh_posted; /* by the completer: the 30 us refresh of posted credits */
    double credit_stall_frac;     /* requester TX: TLP ready, blocked by credits */
    double credit_loop_ns, credit_loop_min_ns;
    uint64_t credit_loop_samples;
    sim_hist latency_ns;          /* per transfer */
    uint64_t xfers_done, xfers_expected;
    uint64_t msgs_received, msg_order_errors;
    bool completed;
    uint32_t max_replay_occupancy;
    uint32_t replays_before_retrain_max; /* replay events without progress when a retrain began */
    sim_time_ps end_ps, active_ps;
} pcie_results;

typedef struct pcie_sys pcie_sys;

/* Builds requester + completer + link on k; trace may be NULL (scope "pcie"). */
pcie_sys *pcie_sys_new(sim_kernel *k, const pcie_cfg *cfg, uint64_t seed, sim_trace *tr);
/* Runs until the workload completed and the link drained, or until limit_ps
 * (absolute). Returns true when finished; call again to continue. */
bool pcie_sys_run(pcie_sys *s, sim_time_ps limit_ps);
/* DMA transfers completed so far (progress, watchdog). */
uint64_t pcie_sys_xfers_done(const pcie_sys *s);
/* Collects results (caller frees r->latency_ns with sim_hist_free). */
void pcie_sys_results(pcie_sys *s, pcie_results *r);
const pcie_phy *pcie_sys_phy(const pcie_sys *s);
/* Link conservation (every message sent was delivered once, in order). 0 = fine. */
int pcie_sys_check_links(const pcie_sys *s, char *why, size_t n);
/* Credit conservation per port and type, after a completed run: no TLP beyond
 * what the port advertised, every credit its received TLPs took released, and
 * what the partner's transmitter consumed equal (mod 2^F) to what this port
 * received. 0 = fine; else why names the side and the type. */
int pcie_sys_check_credits(pcie_sys *s, char *why, size_t n);
void pcie_sys_free(pcie_sys *s);

#endif
