/* Links: the path between components (SST's Link, BookSim's Channel; the
 * exceptions still left are listed in docs/architecture.md, "Known exceptions").
 *
 * A link is one direction of a wire: send(msg, bytes) serialises the message
 * at the link's bandwidth behind earlier messages, then delivers it after the
 * one-way latency to the receiver's callback (in the evaluate phase, in send
 * order). Optional credit-based flow control: the sender spends credits of
 * one of up to SIM_LINK_MAX_CREDIT_TYPES pools, the receiver returns them when
 * it frees buffer space, and they travel back over the reverse direction with
 * the credit latency before the sender may spend them again.
 *
 * Every link counts messages, bytes, busy time (utilisation), credit stalls
 * and checks its own conservation: every message sent is delivered exactly
 * once, in order; credits never exceed their initial value. */
#ifndef SIM_LINK_H
#define SIM_LINK_H

#include "sim/kernel.h"
#include "sim/trace.h"

#define SIM_LINK_MAX_CREDIT_TYPES 64   /* e.g. one per VOQ of a 64-port switch */
#define SIM_LINK_INFINITE_CREDITS UINT32_MAX
#define SIM_LINK_REMOTE_CREDITS (UINT32_MAX - 1)   /* a receiving half's pools: counted by the sending half */

typedef struct sim_link sim_link;
typedef void (*sim_link_recv_fn)(void *ctx, sim_link *l, void *msg, uint32_t bytes);
/* How a sender spends the credit pools of a link: the organisation of the
 * buffer at its far end, which the receiver states and whoever builds the
 * system passes to the sender (a switch's VOQs, FIFO or shared input buffer). */
typedef enum sim_credit_use {
    SIM_CREDIT_NONE = 0,        /* unbounded buffers: no flow control */
    SIM_CREDIT_PER_DEST,        /* one pool per VOQ: a flit spends one of every destination's pool */
    SIM_CREDIT_PER_FLIT,        /* one pool per input (FIFO): a flit spends one */
    SIM_CREDIT_PER_COPY,        /* one shared pool per input (shared VOQ buffer): one per copy */
} sim_credit_use;

typedef void (*sim_link_credit_fn)(void *ctx, sim_link *l, unsigned type, uint32_t credits);
/* Writes a short label for a message into buf (for waves). */
typedef void (*sim_link_label_fn)(const void *msg, char *buf, size_t n);
/* Deferred delivery (see sim_link_set_deferrable): may this message wait for the receiver? */
typedef bool (*sim_link_defer_fn)(void *ctx, sim_link *l, const void *msg);
/* Picked-up delivery (see sim_link_set_pickup): a message was sent, arriving at arrive_ps. */
typedef void (*sim_link_pickup_fn)(void *ctx, sim_link *l, sim_time_ps arrive_ps);

typedef struct sim_link_cfg {
    const char *name;
    sim_time_ps latency_ps;          /* one-way propagation, after the last byte is sent */
    double bandwidth_GBps;           /* 1e9 bytes/s; 0 = infinite (no serialisation) */
    sim_time_ps credit_latency_ps;   /* credit return delay; SIM_LINK_SAME_LATENCY = latency_ps */
    unsigned credit_types;           /* 0 = no flow control */
    uint32_t credits[SIM_LINK_MAX_CREDIT_TYPES]; /* initial credits; SIM_LINK_INFINITE_CREDITS = unlimited */
} sim_link_cfg;
#define SIM_LINK_SAME_LATENCY SIM_TIME_MAX

typedef struct sim_link_msg {
    uint64_t arrive_ps;
    void *msg;
    uint32_t bytes;
    bool deferrable;                 /* the receiver said it may wait (judged when sent) */
    uint8_t marked;                  /* sent with sim_link_send_marked (in the padding too) */
    uint16_t part;                   /* sim_link_send_part's index (in the padding: still 32 bytes) */
    uint64_t seq;
} sim_link_msg;
_Static_assert(sizeof(sim_link_msg) == 32, "sim_link_msg: one ring entry is 32 bytes");

/* One credit pool of a link, all in one 16-byte record: a send, a return and
 * a credit arrival each touch one line of the pool array, not one line in
 * each of three arrays. */
typedef struct sim_link_pool {
    uint32_t avail;                  /* credits the sender may spend now */
    uint32_t initial;                /* cfg.credits[type] (SIM_LINK_INFINITE_CREDITS = unlimited) */
    uint64_t outstanding;            /* spent, not yet returned */
} sim_link_pool;

typedef struct sim_link_credit_msg {
    uint64_t arrive_ps;
    uint32_t n;
    uint8_t type;
} sim_link_credit_msg;

struct sim_link {
    /* Field order is for the cache (the link is 64-byte aligned): a send
     * touches lines 0 and 1, a delivery lines 1 and 2 and the processes'
     * line, a credit return and its arrival lines 1 and 3 and that line;
     * each also touches its ring entry and, with credits, its pool's record.
     * The configuration, the events a message does not touch, the pools, the
     * statistics and the tracing follow. */
    /* line 0, the sender: serialisation time per byte and the time the
     * serialiser is free, each as whole ps plus a 32-bit binary fraction of
     * a ps: exact to 2^-32 ps per byte, with no overflow for the whole
     * uint64 ps range. */
    _Alignas(64) uint64_t ps_per_byte;
    uint64_t busy_until_ps;
    uint32_t ps_per_byte_frac;
    uint32_t busy_until_frac;
    sim_time_ps busy_done_ps;        /* end of the last transmission, whole ps (for busy time) */
    uint64_t busy_ps;                /* summed serialisation time since the stats reset, including queued wire time ahead of now */
    uint64_t msgs_sent;              /* also the sequence number of the next message */
    uint64_t bytes_sent;
    sim_time_ps latency_ps;          /* cfg.latency_ps */
    /* line 1: the kernel (every side asks it the time), in flight (a FIFO ring) */
    sim_kernel *k;
    sim_link_msg *q; size_t q_head, q_len, q_cap;   /* q_cap: a power of two */
    sim_time_ps armed_ps;            /* arrival the delivery process is woken for (SIM_TIME_MAX: none) */
    sim_link_defer_fn deferrable;
    uint16_t credit_types;           /* cfg.credit_types (<= SIM_LINK_MAX_CREDIT_TYPES) */
    bool picked_up;                  /* sim_link_set_pickup: no delivery process, the receiver takes its messages */
    bool stalled;
    bool traced;                     /* sim_link_trace was called (the tv_* below are set) */
    bool delivering;                 /* inside the delivery loop: arming waits for its end */
    bool arm_pending;
    /* line 2: the receiver */
    sim_link_recv_fn recv;
    void *recv_ctx;
    sim_time_ps arrival_ps;          /* arrival time of the message being delivered */
    uint64_t msgs_delivered, bytes_delivered; /* msgs_delivered: the sequence number due next */
    sim_time_ps defer_until_ps;      /* the receiver is activated by its own events by then */
    uint64_t msgs_deferred;          /* delivered by sim_link_take_arrived (statistics) */
    uint16_t part;                   /* part index of the message being delivered */
    uint32_t marked_in_flight;       /* marked messages sent, not yet handed to the receiver */
    /* line 3: credits on their way back, and the sender's callback */
    _Alignas(64) sim_link_credit_msg *cq; size_t cq_head, cq_len, cq_cap;
    sim_link_credit_fn on_credit;
    void *credit_ctx;
    uint64_t credits_returned_total;
    sim_time_ps credit_latency_ps;   /* cfg.credit_latency_ps */
    /* Each process (woken and run: its first 32 bytes) shares a line with
     * the event its every activation asks whether anyone waits on (the
     * event's first 24 bytes). */
    _Alignas(64) sim_process deliver_proc;
    sim_event delivered;             /* notified (delta) after each batch of deliveries while some process is
                                      * sensitive to it or waits on it (sim_event_has_waiters); else not at all */
    _Alignas(64) sim_process credit_proc;
    sim_event credit_returned;       /* notified when credits arrive at the sender */
    sim_event arrive_ev, credit_ev;  /* deferring links, and arrivals due now (delta) */
    sim_link_cfg cfg;
    uint32_t order_key;              /* deliveries' same-time order (sim_link_set_order_key); credits use +1 */
    uint8_t half;                    /* SIM_LINK_WHOLE, or a cut link's SIM_LINK_SENDING_HALF / SIM_LINK_RECEIVING_HALF */
    sim_link_pickup_fn pickup;       /* sim_link_set_pickup's callback */
    _Alignas(64) sim_link_pool pool[SIM_LINK_MAX_CREDIT_TYPES];
    /* statistics */
    uint64_t stall_ps;               /* time the sender was blocked on credits */
    uint64_t stall_since_ps;
    uint64_t credit_stalls;          /* number of blocked attempts that started a stall */
    uint64_t stats_msgs0, stats_bytes0;   /* msgs_sent, bytes_sent at the stats reset */
    uint64_t stats_since_ps;
    /* tracing */
    sim_link_label_fn label;
    sim_trace_var tv_tx, tv_rx, tv_credit[SIM_LINK_MAX_CREDIT_TYPES];
};

sim_link *sim_link_new(sim_kernel *k, const sim_link_cfg *cfg);
void sim_link_free(sim_link *l);
void sim_link_set_receiver(sim_link *l, sim_link_recv_fn fn, void *ctx);
void sim_link_set_credit_callback(sim_link *l, sim_link_credit_fn fn, void *ctx);
void sim_link_trace(sim_link *l, sim_trace *t, sim_link_label_fn label);
/* Same-time order of this link's deliveries (key) and credit arrivals (key + 1)
 * against other keyed wake-ups (sim_process_wake_at_ordered): the fabric gives
 * every link direction its own pair, so the order is the system's, whatever
 * notified first. 0 (the default): notification order. Before the first send. */
void sim_link_set_order_key(sim_link *l, uint32_t key);

/* Deferred delivery: temporal decoupling for a receiver that can process a
 * message after its arrival time, at its own next activation, as of the
 * arrival time (sim_link_arrival_ps), with the same outcome. It saves one
 * kernel time step per message. The receiver:
 *  - names the messages that may wait: `fn` is called once per message when it
 *    is sent, in send order (so it may keep count of what is on its way), and
 *    again for every message in flight not yet accepted, oldest first, when
 *    the receiver calls sim_link_rejudge (its view improved; a message once
 *    accepted stays accepted and is not asked again);
 *  - after each of its activations promises, with sim_link_defer_until, that
 *    it will be activated again by its own events no later than until_ps and
 *    that deferring a deferrable message arriving before then changes nothing;
 *  - calls sim_link_take_arrived first thing in each activation.
 * A deferrable message arriving before the promised time gets no kernel event
 * and waits in the link; any other message is delivered at its arrival as
 * usual, after every earlier one (deferred or not), so order is kept. */
/* Before the first send on the link. */
void sim_link_set_deferrable(sim_link *l, sim_link_defer_fn fn);
void sim_link_defer_until(sim_link *l, sim_time_ps until_ps);
void sim_link_rejudge(sim_link *l);
/* Delivers (through recv, in order) every waiting message that has arrived by
 * now; returns how many. Not while the link is delivering (returns 0). */
size_t sim_link_take_arrived(sim_link *l);
/* Picked-up delivery: the link has no delivery process at all; the receiver
 * takes its messages itself, in its own activations (sim_link_pick_up), as
 * of their arrival times. For a receiver that need not act on a message
 * before some time after its arrival (a store-and-forward switch: its
 * pipeline delay) and is activated then anyway: it saves the delivery's
 * kernel activation. At every send, in send order, the link calls
 * fn(recv_ctx, l, arrive_ps) so the receiver can ask for its activation by
 * the time it needs the message; the receiver must keep one asked for while
 * messages wait (sim_link_next_arrival_ps). Before the first send, on a whole
 * link or a receiving half (its imports count as sends) that neither defers
 * nor is traced (waves show a delivery when it happens); returns false (and
 * changes nothing) otherwise: deliver as usual. */
bool sim_link_set_pickup(sim_link *l, sim_link_pickup_fn fn);
/* Delivers (through recv, in order) every message arriving at or before
 * through_ps (<= now; the receiver says which same-time arrivals it has
 * already seen happen); returns how many. */
size_t sim_link_pick_up(sim_link *l, sim_time_ps through_ps);
/* Arrival time of the oldest message in flight, SIM_TIME_MAX when none. */
static inline sim_time_ps sim_link_next_arrival_ps(const sim_link *l) { return l->q_len ? l->q[l->q_head].arrive_ps : SIM_TIME_MAX; }
/* Inside recv: the message's arrival time (earlier than now when it waited). */
static inline sim_time_ps sim_link_arrival_ps(const sim_link *l) { return l->arrival_ps; }
/* Inside recv: the part index the sender gave (sim_link_send_part); 0 for plain sends. */
static inline uint16_t sim_link_part(const sim_link *l) { return l->part; }

/* Credits available to the sender now. */
static inline uint32_t sim_link_credits(const sim_link *l, unsigned type) { return l->pool[type].avail; }
/* Credits spent and not yet returned (conservation checks). */
static inline uint64_t sim_link_credits_outstanding(const sim_link *l, unsigned type) { return l->pool[type].outstanding; }
bool sim_link_can_send(const sim_link *l, unsigned type, uint32_t credits);
/* Send spending `credits` of `type`. Returns false (and starts stall accounting)
 * when there are not enough credits; the message is then not sent. */
bool sim_link_try_send(sim_link *l, void *msg, uint32_t bytes, unsigned type, uint32_t credits);
/* Send on a link without flow control (or spending no credits). */
void sim_link_send(sim_link *l, void *msg, uint32_t bytes);
/* The same, carrying a part index beside the message (a packet's flit or
 * burst: sim/packet.h); the receiver reads it with sim_link_part. */
bool sim_link_try_send_part(sim_link *l, void *msg, uint32_t bytes, unsigned type, uint32_t credits, uint16_t part);
void sim_link_send_part(sim_link *l, void *msg, uint32_t bytes, uint16_t part);
/* Marked messages: a sender marks the messages its partner must not miss
 * when it plans ahead (for PCIe: TLPs, Naks, training sets), and the link
 * counts those sent and not yet handed to the receiver (one waiting for a
 * deferring receiver counts). The receiver asks the link, never its partner,
 * whether one is on its way: a conservative lookahead. */
void sim_link_send_marked(sim_link *l, void *msg, uint32_t bytes);
static inline uint32_t sim_link_marked_in_flight(const sim_link *l) { return l->marked_in_flight; }
/* Time the serialiser becomes free (>= now): a sender that paces itself to the wire. */
sim_time_ps sim_link_tx_free_ps(const sim_link *l);
/* The receiver starts with n buffer slots already occupied (preloaded state):
 * those credits count as spent and come back through sim_link_return_credits. */
void sim_link_hold_credits(sim_link *l, unsigned type, uint32_t n);
/* Receiver frees buffer space: credits travel back to the sender. */
void sim_link_return_credits(sim_link *l, unsigned type, uint32_t credits);

/* Halves of a link cut between two kernels (a partitioned run, sim/pdes.h):
 * each kernel has its own sim_link for the direction, made with the same cfg.
 * The sending half serialises, spends credits and keeps the wire statistics;
 * its messages wait (no delivery is armed) until sim_link_export hands them,
 * arrival times set, to whoever carries them to the other kernel, where
 * sim_link_import puts them on the receiving half's wire to be delivered at
 * their arrival as usual. Credits go the other way: the receiving half's
 * returns wait for sim_link_export_credits, the sending half takes them with
 * sim_link_import_credits. Both before the first send; a deferring receiver
 * cannot be cut (it judges messages as they are sent). Imports must not
 * arrive before their kernel's now (the lookahead: each half's latency). */
enum { SIM_LINK_WHOLE = 0, SIM_LINK_SENDING_HALF = 1, SIM_LINK_RECEIVING_HALF = 2 };
void sim_link_make_sending_half(sim_link *l);
void sim_link_make_receiving_half(sim_link *l);
size_t sim_link_export(sim_link *l, void (*fn)(void *ctx, const sim_link_msg *m), void *ctx);
void sim_link_import(sim_link *l, const sim_link_msg *m);
size_t sim_link_export_credits(sim_link *l, void (*fn)(void *ctx, const sim_link_credit_msg *c), void *ctx);
void sim_link_import_credits(sim_link *l, const sim_link_credit_msg *c);

uint64_t sim_link_in_flight(const sim_link *l);
/* Calls fn for every message in flight, oldest first (a message sent in parts
 * once per part): for teardown, which must give back what the links hold. */
void sim_link_for_each_in_flight(const sim_link *l, void (*fn)(void *msg, void *ctx), void *ctx);
/* Utilisation of the wire since the last stats reset. */
double sim_link_utilisation(const sim_link *l);
/* Messages and bytes sent since the last stats reset (msgs_sent, bytes_sent count the whole run). */
static inline uint64_t sim_link_window_msgs(const sim_link *l) { return l->msgs_sent - l->stats_msgs0; }
static inline uint64_t sim_link_window_bytes(const sim_link *l) { return l->bytes_sent - l->stats_bytes0; }
/* Time the sender was refused for want of credits since the stats reset, the stall going on now included. */
uint64_t sim_link_stall_ps(const sim_link *l);
void sim_link_reset_stats(sim_link *l);
/* Conservation: all sent delivered (when drained), in order, credits bounded.
 * Returns 0 if fine, else writes a description into why. */
int sim_link_check(const sim_link *l, bool expect_drained, char *why, size_t n);

#endif
