/* The fabric's generic switch (kind "switch"): packet level, event driven.
 * Input buffers per port and VC with credit flow control toward the upstream
 * sender, virtual output queues (input, output, VC), a separable round-robin
 * output allocator (iSLIP-like, one iteration) run whenever something changes,
 * store-and-forward with a fixed pipeline latency, multicast by splitting a
 * group at the switch by next-hop port. docs/models/fabric_switch.md.
 *
 * The core (fabric_switch_new .. _free) needs only a kernel, the topology,
 * the routes and the groups, so unit tests drive it on their own links; the
 * kind "switch" (fabric_switch_register, switch_kind.c) wraps it for the
 * fabric builder. */
#ifndef MODELS_FABRIC_SWITCH_H
#define MODELS_FABRIC_SWITCH_H

#include "sim/fabric.h"

#include <stdbool.h>
#include <stdint.h>

/* The output allocator's implementation; both grant the same packets at the
 * same times (tests/check_fabric_switch.c runs random traffic through both). */
enum fabric_switch_allocator {
    FABRIC_SWITCH_ALLOC_MASKED = 0, /* per-output request masks, re-evaluating only outputs whose state changed */
    FABRIC_SWITCH_ALLOC_SCAN = 1,   /* the reference: every (output, input, VC) on every run */
};

/* Called at every grant, in grant order: the switch's node, the ports, the
 * packet (its copy) as it leaves, and the time (tests compare allocators). */
typedef void (*fabric_switch_grant_fn)(void *ctx, uint32_t node, unsigned in_port, unsigned out_port, const sim_pkt *pkt,
                                       sim_time_ps now_ps);

typedef struct fabric_switch_cfg {
    uint32_t buffer_bytes_per_vc;   /* input buffer per port per VC (65536) */
    uint32_t credit_bytes;          /* bytes one credit stands for (64, InfiniBand blocks) */
    double pipeline_ns;             /* routing + crossbar latency per hop, after the last byte arrived (100) */
    double speedup;                 /* crossbar speedup over the input link rate (1.0) */
    enum fabric_switch_allocator allocator; /* FABRIC_SWITCH_ALLOC_MASKED */
    fabric_switch_grant_fn on_grant;        /* NULL: none */
    void *grant_ctx;
    /* false (the default): a returned credit runs the allocator only when that
     * output's serialiser is free and it has entries (otherwise the run it
     * needs is already due: the serialiser's free time or an entry's
     * eligible time); true: the reference, every returned credit runs it.
     * Same grants up to the order of same-time events (docs, Speed). */
    bool credit_wakes_always;
    /* false (the default): with pipeline_ns > 0 the switch picks its
     * arrivals up itself at its allocator runs (sim_link_set_pickup), as of
     * their arrival times, no later than they become eligible: no delivery
     * event per packet; true: the reference, every arrival delivered at its
     * time. Same grants (docs, Speed). Traced input links, and links
     * without an order key (sim_link_set_order_key: the fabric gives every
     * link one), always deliver. */
    bool plain_delivery;
    /* The reduction unit (NVLS), on switches whose topology node has param
     * nvls=1 (dgx-h100's NVSwitch-3 chips); unused elsewhere. Docs: fabric_switch.md. */
    double nvls_reduce_GBps;        /* contribution bytes it consumes per second (1600: 400 GFLOPS FP32, one add per input float) */
    double nvls_latency_ns;         /* from the end of a key's reduction to its results (50, assumed) */
    uint32_t nvls_table_entries;    /* partial keys it holds at once (4096, assumed); beyond, new keys wait, holding credits */
} fabric_switch_cfg;
#define FABRIC_SWITCH_CFG_DEFAULT                                                                                          \
    ((fabric_switch_cfg){ 65536, 64, 100.0, 1.0, FABRIC_SWITCH_ALLOC_MASKED, NULL, NULL, false, false, 1600.0, 50.0, 4096 })

/* In-switch reduction (NVLS): what a reduce contribution's data points to,
 * when it carries values (the owning model's record starts with it). The
 * switch never reads values: when a key's contributions are reduced it calls
 * acc->combine(acc, other) for every other contribution's data -- the owning
 * model's code folds the values and takes `other` -- and every result copy
 * then carries acc (one pointer, as many copies as members: the model counts
 * its readers). */
typedef struct fabric_reduce_data {
    void (*combine)(struct fabric_reduce_data *acc, struct fabric_reduce_data *other);
} fabric_reduce_data;

/* Registers kind "switch" with the fabric; calling it twice is harmless. */
void fabric_switch_register(void);

typedef struct fabric_switch fabric_switch;

/* NULL with why naming the field when cfg is out of range. t, r, g must outlive it. */
fabric_switch *fabric_switch_new(sim_kernel *k, const topo *t, uint32_t node, const topo_routes *r, sim_groups *g,
                                 const fabric_switch_cfg *cfg, char *why, size_t why_n);
/* What the link into `port` must carry: one credit pool per VC the routes use. */
void fabric_switch_ingress(fabric_switch *s, unsigned port, sim_fabric_ingress *in);
/* Takes p->in (sets itself as its receiver) and p->out (its credit callback). */
void fabric_switch_connect(fabric_switch *s, const sim_fabric_port *p);
/* Conservation: received = sent + inside per copy and per buffer, buffer credits
 * within the ingress grant, nothing inside when drained. 0 fine. */
int fabric_switch_check(const fabric_switch *s, bool drained, char *why, size_t why_n);
void fabric_switch_reset_stats(fabric_switch *s);
/* Every packet waiting in its queues (a multicast packet once per copy: each copy is its own packet). */
void fabric_switch_for_each_held(const fabric_switch *s, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
/* Every clone it made must be back (the fabric's teardown gives back what is held). */
void fabric_switch_free(fabric_switch *s);

typedef struct fabric_switch_port_stats {
    uint64_t rx_pkts, rx_bytes;     /* received on this port */
    uint64_t tx_pkts, tx_bytes;     /* sent on this port (multicast copies each count) */
    uint64_t queue_ps_sum;          /* sum over packets sent here: grant time - eligible time */
    uint32_t max_held_credits;      /* most input-buffer credits held at once (any VC) since the last reset */
} fabric_switch_port_stats;

typedef struct fabric_switch_stats {
    uint64_t received;              /* packets received (a multicast packet once) */
    uint64_t released;              /* input buffers freed (all copies gone) */
    uint64_t copies_made;           /* VOQ entries made (one per output a packet goes to) */
    uint64_t copies_sent;
    uint64_t clones;                /* copies made from the switch's own pool */
    uint64_t inside;                /* VOQ entries waiting now */
    uint64_t allocations;           /* allocator runs */
    uint64_t output_evals;          /* outputs the allocator looked at (the scan: every output with entries, every run) */
    uint64_t picked_up;             /* arrivals it took itself (plain_delivery false), of `received` */
    /* the reduction unit (nvls=1; else 0): contributions = consumed + held; each consumed one became one result copy */
    uint64_t nvls_contribs, nvls_consumed, nvls_results, nvls_held;
    uint64_t nvls_table_waits;      /* contributions of a new key that waited for room in the table */
    uint64_t nvls_most_keys;        /* most partial keys held at once */
    sim_time_ps nvls_busy_ps;       /* the unit's busy time */
} fabric_switch_stats;
/* Has this switch a reduction unit (node param nvls=1)? */
bool fabric_switch_has_nvls(const fabric_switch *s);

fabric_switch_stats fabric_switch_stats_get(const fabric_switch *s);
/* NULL when port is out of range. */
const fabric_switch_port_stats *fabric_switch_port(const fabric_switch *s, unsigned port);

#endif
