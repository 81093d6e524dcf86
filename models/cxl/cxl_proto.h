/* CXL.cache protocol core: messages, the device coherence agent (DCOH) and the
 * host home agent as PURE step functions (state, message) -> (state', messages).
 *
 * The timed system (cxl_sys.c) and the exhaustive explorer (cxl_explore.c) run
 * exactly this code; neither has its own copy of the protocol. Host CPU caches
 * are peers that run the same agent FSM over on-die links.
 *
 * Data values are per line (a small integer "version"); a store is a
 * read-modify-write (old -> old+1 mod values) so stale data is caught, a
 * full-line write stores a chosen value without reading. */
#ifndef CXL_PROTO_H
#define CXL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CXL_MAX_AGENTS 16   /* devices + host cores; presence vector is 16 bits */
#define CXL_MAX_OUT 20
#define CXL_MAX_EV 4
#define CXL_NO_AGENT 0xff

/* Channels. The first six are CXL.cache; MEM_* is the home agent's path to memory. */
enum cxl_chan { CXL_D2H_REQ, CXL_D2H_RSP, CXL_D2H_DATA, CXL_H2D_REQ, CXL_H2D_RSP, CXL_H2D_DATA, CXL_MEM_RD, CXL_MEM_DATA,
                CXL_N_CHAN };
/* CXL.mem channels (Type-3 memory, cxl_mem.h), numbered after the CXL.cache ones so
 * that a cxl_port's three classes (request, response, data = channel - chan_base)
 * hold them: M2S carries Req and RwD (no response class), S2M NDR and DRS (no
 * request class). The _NONE numbers are never sent. */
enum cxl_mem_chan { CXL_M2S_REQ = CXL_N_CHAN, CXL_M2S_NONE, CXL_M2S_RWD, CXL_S2M_NONE, CXL_S2M_NDR, CXL_S2M_DRS,
                    CXL_MEM_CHAN_END };
/* CXL.mem opcodes used (CXL 2.0 encodings: M2S Req MemRd 0001, M2S RwD MemWr 0001,
 * S2M NDR Cmp 000, S2M DRS MemData 000). */
enum cxl_mem_op { CXL_MEM_OP_MEMRD = 1, CXL_MEM_OP_MEMWR = 1, CXL_MEM_OP_CMP = 0, CXL_MEM_OP_MEMDATA = 0 };

/* D2H Req opcodes (CXL 3.0 Table 3-18 names). */
enum cxl_d2h_req { RdCurr, RdOwn, RdShared, RdAny, RdOwnNoData, ItoMWr, WrCur, CLFlush, CleanEvict, DirtyEvict,
                   CleanEvictNoData, WOWrInv, WOWrInvF, WrInv, CacheFlushed, CXL_N_D2H_REQ };
/* D2H Rsp opcodes. */
enum cxl_d2h_rsp { RspIHitI, RspVHitV, RspIHitSE, RspSHitSE, RspSFwdM, RspIFwdM, RspVFwdV, CXL_N_D2H_RSP };
/* H2D Req (snoops). */
enum cxl_h2d_req { SnpData, SnpInv, SnpCur, CXL_N_H2D_REQ };
/* H2D Rsp opcodes; GO carries a state in arg. */
enum cxl_h2d_rsp { WritePull, GO, GO_WritePull, ExtCmp, GO_WritePull_Drop, Fast_GO_WritePull, GO_ERR_WritePull,
                   CXL_N_H2D_RSP };
/* GO states (arg of GO). */
enum cxl_go { GO_I, GO_S, GO_E, GO_M, GO_Err, CXL_N_GO };

/* D2H Data arg bits: Bogus, partial (WOWrInv byte-enable merge), and IWB
 * (implicit writeback for a snoop; real hardware tells this by the UQID
 * tracker, the model marks it so checkers can count outstanding snoops). */
#define CXL_DATA_BOGUS 1u
#define CXL_DATA_PARTIAL 2u
#define CXL_DATA_IWB 4u

/* One message. Fields beyond the protocol ones: chk (checker metadata: the
 * golden value when the data was produced; never read by the FSMs). */
typedef struct cxl_msg {
    uint8_t ch;      /* enum cxl_chan */
    uint8_t op;      /* opcode within the channel */
    uint8_t agent;   /* D2H: source agent; H2D: destination agent */
    uint8_t arg;     /* H2D Rsp GO: state; D2H Data: Bogus bit; WOWrInv data: 1 = partial merge */
    uint32_t line;   /* 64 B line address (HPA[51:6]) */
    uint16_t id;     /* CQID (D2H Req, H2D Rsp/Data) or UQID (H2D Req, D2H Rsp/Data) */
    uint16_t id2;    /* H2D Rsp pulls: the UQID the D2H Data must carry (RspData) */
    uint8_t val;     /* data value (data messages) */
    uint8_t chk;     /* checker metadata */
} cxl_msg;

/* Device / host-core cache line states: MESI + transients (Primer naming:
 * X_Y<A|D> = from X to Y waiting for GO (A) and/or data (D)). */
enum cxl_dstate {
    DS_I, DS_S, DS_E, DS_M,
    DS_IS_AD, DS_IS_A, DS_IS_D,        /* RdShared / RdAny from I */
    DS_IM_AD, DS_IM_A, DS_IM_D,        /* RdOwn from I (or from S after SnpInv); RdOwnNoData from I: IM_A */
    DS_SM_AD, DS_SM_A,                 /* RdOwn / RdOwnNoData from S, still readable */
    DS_MI_A,                           /* DirtyEvict sent, waiting GO_WritePull */
    DS_SI_A,                           /* CleanEvict sent (from S/E), waiting GO_WritePull(_Drop) */
    DS_II_A,                           /* snooped while evicting: data now stale (Bogus) */
    DS_SI_AC,                          /* CleanEvictNoData sent, waiting GO-I */
    DS_IC_D,                           /* RdCurr: waiting data only */
    DS_IF_A,                           /* CLFlush: waiting GO-I */
    DS_IW_A,                           /* ItoMWr / WrCur: waiting GO_WritePull */
    DS_IV_P,                           /* WrInv: waiting WritePull */
    DS_IV_A,                           /* WrInv: data sent, waiting GO-I */
    DS_WO_P,                           /* WOWrInv(F): waiting Fast_GO_WritePull */
    DS_WO_E,                           /* WOWrInv(F): data sent, waiting ExtCmp */
    CXL_N_DSTATE
};

/* What the device core asks for. */
enum cxl_core_op { OP_LOAD, OP_LOAD_ANY, OP_STORE, OP_WRITE_FULL, OP_EVICT, OP_EVICT_NODATA, OP_RDCURR, OP_CLFLUSH,
                   OP_ITOMWR, OP_WRCUR, OP_WRINV, OP_WOWRINV, OP_WOWRINVF,
                   OP_CACHE_FLUSH,   /* device level: evict everything, then CacheFlushed */
                   CXL_N_CORE_OP };

typedef struct cxl_dline {
    uint8_t st;      /* enum cxl_dstate */
    uint8_t go;      /* GO state received while data is still pending */
    uint8_t val;     /* data held (valid states) or received */
    uint8_t acc;     /* pending access (enum cxl_core_op) */
    uint8_t wval;    /* value the pending write will store */
    uint8_t pad;
    uint16_t cqid;   /* tracker of the outstanding request */
} cxl_dline;

/* Home-agent line: directory (snoop filter) entry + memory + the one
 * transaction in progress on this line (per-line serialisation). */
enum cxl_hphase { HP_IDLE, HP_SNP, HP_MEM, HP_PULL };
typedef struct cxl_hline {
    uint16_t sharers;      /* presence vector: agents that may hold a copy */
    uint8_t owner;         /* agent granted E/M, or CXL_NO_AGENT */
    uint8_t mem;           /* memory value */
    uint8_t phase;         /* enum cxl_hphase */
    uint8_t op;            /* request being served */
    uint8_t req;           /* requesting agent */
    uint8_t fwd_valid, fwd_val, fwd_dirty, fwd_chk;  /* data forwarded by a snoop */
    uint8_t mem_chk, mem_chk_valid;   /* checker metadata (RdCurr): value current at a clean SnpCur answer */
    uint8_t pad;
    uint16_t snp_pending;  /* snoops sent, response not yet received */
    uint16_t data_expect;  /* Fwd responses received: IWB data owed */
    uint16_t data_got;     /* IWB data received */
    uint16_t cqid, uqid;
} cxl_hline;

/* Seeded protocol bugs, to prove the checkers can fail. */
enum cxl_inject { INJ_NONE, INJ_GO_DURING_SNOOP, INJ_NO_FWD_DATA, INJ_E_WITH_SHARERS, INJ_SKIP_BOGUS, CXL_N_INJECT };

typedef struct cxl_cfg {
    unsigned values;       /* data values are mod this (>= 2) */
    unsigned inject;       /* enum cxl_inject */
} cxl_cfg;

/* Checker events produced by a step (the FSMs report what they did; the
 * checkers judge it). */
enum cxl_ev_kind { EV_LOAD, EV_STORE, EV_WRITE, EV_RDCURR, EV_CLEAN_DATA, EV_MERGE };
typedef struct cxl_ev {
    uint8_t kind, agent;
    uint8_t a, b;          /* LOAD: a=value; STORE: a=old b=new; WRITE: a=new; RDCURR: a=value b=chk; CLEAN: a=data b=mem;
                              MERGE: a=new b=delta */
    uint32_t line;
} cxl_ev;

enum cxl_status { ST_OK, ST_HIT, ST_STALL, ST_BUSY, ST_ERR };
typedef struct cxl_out {
    cxl_msg m[CXL_MAX_OUT];
    unsigned n;
    cxl_ev ev[CXL_MAX_EV];
    unsigned nev;
    int status;
    const char *err;       /* ST_ERR: why */
    uint16_t tr;           /* transition id (coverage) */
    bool done;             /* device: the pending access completed; HA: transaction finished */
    bool started;          /* HA: a transaction started (uqid used) */
    bool freed;            /* device: request finished, cqid free */
} cxl_out;

/* --- device agent ------------------------------------------------------- */
/* The core asks for `op` on a line. Returns (in o->status): ST_HIT (done
 * locally), ST_OK (request sent, line now transient), ST_BUSY (not legal in
 * this state: the caller picks another op). `wval` is the value for full writes. */
void cxl_dev_core(const cxl_cfg *cfg, cxl_dline *l, unsigned agent, uint32_t line, unsigned op, uint8_t wval,
                  uint16_t cqid, cxl_out *o);
/* A message from the host (H2D Req/Rsp/Data). ST_STALL = cannot take it now
 * (a snoop while GO is in but data is not: the snoop waits in its buffer). */
void cxl_dev_recv(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o);
/* Is op legal from this (stable) state? */
bool cxl_dev_op_legal(const cxl_dline *l, unsigned op, bool is_core);

/* CacheFlushed is device level (no line): a device whose cache is empty (every
 * line I, nothing outstanding) sends it and waits for GO-I with its CQID. The
 * message uses line 0 as a don't-care address. */
void cxl_dev_flush_start(unsigned agent, uint16_t cqid, cxl_out *o);
/* True (and o->done) if `in` is the GO-I that completes the flush with this CQID. */
bool cxl_dev_flush_recv(uint16_t flush_cqid, const cxl_msg *in, cxl_out *o);

/* --- home agent ---------------------------------------------------------- */
/* CacheFlushed across all lines: an idle line whose snoop filter still tracks
 * the device is an inclusion error (a busy line may still be pulling the
 * device's last writeback). Answers GO-I. */
void cxl_ha_cache_flushed(const cxl_hline *lines, uint32_t n_lines, const cxl_msg *in, cxl_out *o);
/* A message for this line (D2H Req/Rsp/Data, MEM_DATA). ST_BUSY: a request
 * for a line with a transaction in progress (the caller queues it).
 * new_uqid is used if a transaction starts. */
void cxl_ha_recv(const cxl_cfg *cfg, cxl_hline *h, const cxl_msg *in, uint16_t new_uqid, cxl_out *o);
void cxl_ha_init_line(cxl_hline *h, uint8_t mem_val);

/* --- permissions and names ----------------------------------------------- */
enum cxl_perm { PERM_NONE = 0, PERM_R = 1, PERM_RW = 2 };
unsigned cxl_dstate_perm(unsigned st);
bool cxl_dstate_holds(unsigned st);       /* the directory must track this agent */
bool cxl_dstate_stable(unsigned st);
const char *cxl_dstate_name(unsigned st);
const char *cxl_op_name(unsigned ch, unsigned op);
const char *cxl_go_name(unsigned go);
const char *cxl_core_op_name(unsigned op);
const char *cxl_inject_name(unsigned inj);
/* "RdOwn L3 cq5 a1" style label. */
void cxl_msg_label(const cxl_msg *m, char *buf, size_t n);
/* Header size (bits) and whether it carries a 64 B line, per CXL 2.0 68B-flit formats
 * (CXL.cache and CXL.mem channels). */
unsigned cxl_hdr_bits(unsigned ch);
bool cxl_has_data(unsigned ch);

/* Transition ids for coverage: device = st*DEV_IN + input; HA = op*HA_IN + input. */
#define CXL_DEV_IN (CXL_N_CORE_OP + CXL_N_H2D_REQ + CXL_N_H2D_RSP * CXL_N_GO + 1)
#define CXL_HA_IN (CXL_N_D2H_REQ + CXL_N_D2H_RSP + 2 + 1)
#define CXL_TR_DEV_TOTAL (CXL_N_DSTATE * CXL_DEV_IN)
#define CXL_TR_HA_BASE CXL_TR_DEV_TOTAL
#define CXL_TR_TOTAL (CXL_TR_DEV_TOTAL + (CXL_N_D2H_REQ + 1) * 4 * CXL_HA_IN)
/* The set of transitions the FSMs define (probed once): 1 = defined. */
const uint8_t *cxl_transitions_defined(unsigned *n_defined);

#endif
