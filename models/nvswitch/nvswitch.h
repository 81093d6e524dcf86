/* The NVSwitch-like crossbar as a kernel component: N ports joined to
 * whatever sits on them (the tests: traffic endpoints) through sim links that
 * carry sim_pkt (sim/packet.h): whole packets (store-and-forward) or one flit
 * a part (wormhole, sim_link_send_part). One clock-domain handler steps a
 * pluggable cycle-level core (the C core, the Verilated RTL, or both in
 * lock-step). Per cycle it presents at most one arrived flit per input to the
 * core, sends the core's output flits down the output links, and returns the
 * core's freed slots as link credits (one pool per VOQ, or one per input).
 *
 * Packets: the switch forwards a unicast packet itself; a multicast packet
 * (dst SIM_PKT_GROUP, its group's members are port indices) leaves as one
 * copy per destination (sim_pkt_clone from the switch's own pool, addressed
 * to that port), and the switch frees the original when its last copy has
 * left. Endpoint address = port index. */
#ifndef NVSWITCH_H
#define NVSWITCH_H

#include "models/nvswitch/xbar_core.h"
#include "models/nvswitch/xbar_lockstep.h"
#include "models/nvswitch/xbar_ref.h"
#include "sim/clock.h"
#include "sim/link.h"
#include "sim/packet.h"
#include "sim/trace.h"

typedef enum nvs_model { NVS_MODEL_TL = 0, NVS_MODEL_RTL, NVS_MODEL_BOTH } nvs_model;
#define NVS_MODEL_CHOICES "tl|rtl|both"
/* Which C core runs with model=tl and is compared with the RTL by
 * model=both: the fast core (xbar_core.c) or the plain reference (xbar_ref.c). */
typedef enum nvs_c_core { NVS_C_CORE_FAST = 0, NVS_C_CORE_REF } nvs_c_core;
#define NVS_C_CORE_CHOICES "fast|ref"

typedef struct nvswitch_cfg {
    xbar_core_cfg core;
    nvs_model model;
    nvs_c_core c_core;       /* model=tl|both: which C core */
    sim_time_ps period_ps;   /* one flit per port per cycle: flit_bytes / port_GBps */
    int flit_bytes;
    bool saf;                /* store-and-forward: links carry whole packets, egress reassembles */
    int credit_batch;        /* freed slots returned together (1 = every slot at once) */
    bool per_flit;           /* the flit-by-flit path throughout: no presentation runs, egress and
                              * credits looked at per flit (tests compare both ways) */
    bool no_defer;           /* the plain input path: every input message handed over by its link's
                              * own delivery at its arrival, instead of taken at the next edge
                              * (deferred delivery, sim/link.h; tests compare both ways) */
    const char *name;
    const sim_groups *groups; /* the system's multicast groups (NULL: unicast only) */
} nvswitch_cfg;


#define NVS_MAX_FLITS 255       /* flits of one packet (the flit word's 8-bit fields) */

/* The 64-bit flit word the core carries as opaque data: flit index [7:0],
 * packet flits [15:8], input port [23:16], the switch's packet slot [55:24],
 * NVS_FLIT_MCAST [63]. What the switch needs per flit travels in the word, so
 * the slot (and the packet) is looked at only where a packet arrives and
 * leaves. */
#define NVS_FLIT_MCAST (1ULL << 63) /* a multicast packet's flit (nvs_flit_make's result | it) */
static inline uint64_t nvs_flit_make(uint32_t slot, unsigned src, unsigned nflits, unsigned flit)
{
    return (uint64_t)slot << 24 | (uint64_t)(src & 0xff) << 16 | (uint64_t)(nflits & 0xff) << 8 | (flit & 0xff);
}
static inline uint32_t nvs_flit_slot(uint64_t word) { return (uint32_t)(word >> 24); }
static inline bool nvs_flit_mcast(uint64_t word) { return (word & NVS_FLIT_MCAST) != 0; }
static inline unsigned nvs_flit_index(uint64_t word) { return (unsigned)(word & 0xff); }
static inline unsigned nvs_flit_nflits(uint64_t word) { return (unsigned)(word >> 8 & 0xff); }
static inline unsigned nvs_flit_src(uint64_t word) { return (unsigned)(word >> 16 & 0xff); }
/* Source and flit index together, to check both with one compare. */
static inline uint64_t nvs_flit_src_index(uint64_t word) { return word & 0xff00ff; }
static inline uint64_t nvs_flit_src_index_of(unsigned src, unsigned flit) { return (uint64_t)(src & 0xff) << 16 | (flit & 0xff); }

#define NVS_NO_SLOT UINT32_MAX

/* A multicast packet inside the switch: what its slot needs beyond the
 * packet (a unicast packet's slot is done when its last flit leaves). */
typedef struct nvs_mc_slot {
    uint64_t dest_mask;         /* output ports */
    uint32_t copies_left;       /* flit copies not yet sent on (nflits x destinations) */
} nvs_mc_slot;

/* The Verilated core registers itself here (rtl/); until then model=rtl|both
 * are refused. Returns an xbar_core_ops implementation for cfg, or NULL with
 * a reason. */
typedef void *(*nvswitch_rtl_new_fn)(const xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops,
                                     char *why, size_t why_n);
void nvswitch_register_rtl(nvswitch_rtl_new_fn fn);
bool nvswitch_rtl_available(void);

/* Flits of one arrived link message not yet presented to the core: the word
 * of the next one (consecutive flits differ by one in the word's flit
 * index), how many are left, their destinations and arrival time. */
typedef struct nvs_stage { uint64_t word, dest_mask; sim_time_ps arrive_ps; uint32_t left; } nvs_stage;

struct nvswitch;

/* Per (input i, index t): the slot accounting of credit pool t of input i
 * and, store-and-forward, the reassembly counter of the flits from input i at
 * output t. With VOQ pools t is the output, and a flit matched in cycle c
 * frees its slot (credit) and, at L = 1, leaves (egress) in the same later
 * cycle: one line, one miss, for both. */
typedef struct nvs_pair {
    _Alignas(16) uint32_t held;          /* buffer slots occupied */
    uint32_t pend;                       /* freed slots not yet returned (credit_batch) */
    uint16_t reasm;                      /* SAF: flits of the current packet seen */
    uint32_t armed;                      /* packet mode: frees the core's read watch was armed for */
} nvs_pair;

typedef struct nvs_port {
    /* what a cycle touches, first and together */
    nvs_stage *stage;                    /* arrived messages queued behind the one being presented */
    uint32_t st_head, st_len, st_cap;
    int idx;
    sim_link *in, *out;
    struct nvswitch *sw;
    uint32_t rx_slot;                    /* wormhole: the slot of the packet whose flits are arriving, or NVS_NO_SLOT */
    /* tracing (0 when off) */
    sim_trace_var tv_in_valid, tv_out_valid, tv_grant, tv_grant_out, tv_credit, tv_in_label, tv_out_label, tv_backlog;
    uint8_t last_in_valid, last_out_valid, last_grant, last_grant_out, last_credit;
    uint32_t last_held;
} nvs_port;

#define NVS_RUN_MAX 64 /* longest presentation run, in flits: the run wheel's size */

typedef struct nvswitch {
    sim_kernel *k;
    nvswitch_cfg cfg;
    int n;
    sim_credit_use credit_mode;
    /* packets inside (arrived, copies still to send): per slot the packet
     * (8 bytes: the egress reads one per packet), a stack of free slots, and
     * for multicast packets mc[slot]; the switch's own packets (multicast
     * copies) come from pool */
    sim_pkt **slot_pkt;
    uint32_t *slot_free;
    nvs_mc_slot *mc;                     /* allocated with the first multicast packet, as big as slot_pkt */
    uint32_t n_slots, cap_slots, n_free, slots_live, cap_mc;
    sim_pkt **mc_copy;                   /* wormhole multicast: per (input, output) the copy on its way (NULL: none) */
    sim_pkt_pool pool;
    const xbar_core_ops *ops;
    void *impl;
    xbar_lockstep *ls;                   /* model=both */
    xbar_core *tl;                       /* the fast C core when it runs (tl, both; core=fast) */
    sim_clock_handler h;
    uint64_t core_cycles;                /* cycles stepped (catch-up keeps it = clock cycle) */
    uint64_t stage_mask;                 /* ports with staged flits (a message being presented) */
    uint64_t copies_inside;              /* copies arrived (staged or presented) and not yet driven */
    uint64_t slots_held;                 /* buffer slots arrived for (staged or written) and not yet freed */
    bool mcast_seen;                     /* a multicast packet arrived: the core may free fan-out read slots */
    nvs_pair *pair;                      /* nvs_pair_at: rows of XBAR_MAX_PORTS, found without a multiply */
    /* Per input the message being presented (valid iff its stage_mask bit is
     * set) lives in place: in.in[i] holds its destinations and the word of
     * the flit presented last (one less than the next's, until the first is
     * presented), so presenting a flit is one increment; cur_arrive_ps and
     * cur_left are the rest of it. Side by side, the per-cycle presentation
     * reads a few KB, not a port record and a ring line per input. */
    xbar_in in;
    xbar_out out;
    sim_time_ps cur_arrive_ps[XBAR_MAX_PORTS];
    uint32_t cur_left[XBAR_MAX_PORTS];
    /* Presentation runs (xbar_core_present_run): with the C core alone and
     * no trace, a message's flits go to the core as one run, and the input
     * has nothing to do until the run ends. run_wheel[c % NVS_RUN_MAX]: the
     * inputs whose run ends at cycle c (free for their next message); a
     * message of more flits is presented flit by flit. */
    bool runs;                           /* runs may be tried */
    /* Packet mode (runs, store-and-forward, VOQ pools):
     * the switch looks at a packet's flits only at its ends. A pool's slots
     * are freed in the batches the per-flit rule would return, found by the
     * core's read watch (armed = the frees until the next possible return);
     * a packet leaves when the core drives the last flit of its VOQ run
     * (xbar_core_run_last). reasm_flits: flits driven whose packet has not. */
    bool packets;
    uint64_t reasm_flits;
    uint64_t fresh_mask;                 /* inputs whose message has presented nothing yet */
    uint64_t run_mask;                   /* inputs whose message is a run */
    uint64_t run_wheel[NVS_RUN_MAX];
    uint64_t run_end[XBAR_MAX_PORTS];    /* the cycle after the run's last flit */
    nvs_port port[XBAR_MAX_PORTS];
    sim_trace *tr;
    bool defer;                          /* inputs arrive by deferred delivery (cfg.no_defer off, no trace) */
    sim_time_ps defer_until_ps;          /* promised to the input links: clocked until then */
    sim_trace_var tv_matches, tv_copies_out;
} nvswitch;

/* The input buffer's organisation for this switch configuration. */
sim_credit_use nvswitch_credit_mode(const xbar_core_cfg *core);
/* The credit pools (credit_types, credits[]) of a link into one of its ports. */
void nvswitch_link_credits(const xbar_core_cfg *core, sim_link_cfg *lc);

/* NULL with a message on a bad configuration or an unavailable model. */
nvswitch *nvswitch_new(sim_kernel *k, sim_clock_domain *clk, const nvswitch_cfg *cfg, sim_trace *trace, char *why,
                       size_t why_n);
void nvswitch_attach(nvswitch *s, int port, sim_link *in, sim_link *out);
/* Every packet the switch holds to fn: those in its slots (arrived, fully or
 * in part, with copies still to send) and its multicast copies partly sent.
 * A teardown gives these and the links' back (sim_pkt_set) before freeing. */
void nvswitch_held(const nvswitch *s, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
/* Aborts (a bug) if a copy the switch made has not come back to its pool. */
void nvswitch_free(nvswitch *s);
/* Conservation at the end of a drained run (the senders may have stopped
 * mid-packet): no flit copy inside, no packet held but those still arriving,
 * every copy it made freed by its receiver but those partly sent. 0, or -1
 * with a description. */
int nvswitch_check_drained(const nvswitch *s, char *why, size_t why_n);
/* Flit copies inside the switch: staged at inputs, queued, in the pipeline, or in egress reassembly. */
uint64_t nvswitch_copies_inside(const nvswitch *s);

/* The accounting of pool / reassembly counter t of input i. */
static inline nvs_pair *nvs_pair_at(const nvswitch *s, int i, int t) { return &s->pair[(size_t)i * XBAR_MAX_PORTS + (size_t)t]; }

#endif
