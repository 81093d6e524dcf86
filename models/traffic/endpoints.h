/* One endpoint on one switch port: a source (Bernoulli packets to a pattern,
 * and/or a message) that sends over its link toward the switch under the
 * link's credits, and a sink behind the switch's output link that records
 * per-flit order, duplicates and message completion per source. Each
 * endpoint is its own component: its own state, packet pool and statistics;
 * a network builder (tb/nvs) makes one per switch port and adds their
 * statistics up. The endpoints of a clock domain are run by one tep_sched,
 * a clock handler that knows only when each is due (one handler per
 * endpoint measured 17 % slower at 64 ports: docs/models/nvswitch.md). What no one endpoint can know (every sink's
 * latency samples, "every copy delivered", "every destination has the
 * message") goes to an optional tep_meter the builder owns.
 *
 * Links carry sim_pkt (sim/packet.h), whole (store-and-forward) or one flit
 * a part (sim_link_send_part, part = flit index). A source makes its packets
 * from its own pool: src = the port, dst = the destination port or
 * SIM_PKT_GROUP (a multicast message: a group of cfg.groups), flow = the
 * port, seq = the flow sequence of flit 0, parts = the flits it travels in
 * (1 whole), wire_bytes = flits x flit_bytes, flags TEP_PKT_MSG for a
 * message's packets. A sink consumes what it gets (its last part):
 * sim_pkt_free, into the sender's pool (sim/packet.h). Endpoint address =
 * port index. */
#ifndef TRAFFIC_ENDPOINTS_H
#define TRAFFIC_ENDPOINTS_H

#include "models/traffic/traffic.h"
#include "sim/clock.h"
#include "sim/link.h"
#include "sim/packet.h"
#include "sim/stats.h"

#include <stdbool.h>
#include <stdint.h>


/* What the builder measures across endpoints: written by every sink that
 * has it (cfg.meter), owned and read by the builder. The latency samples of
 * all sinks share one histogram so that its sums are added in delivery order
 * (per-sink histograms added up afterwards would round differently). */
typedef struct tep_meter {
    sim_hist latency_cycles;    /* flits delivered in the window (cfg.record_latency) */
    /* drain: stop the kernel once `undelivered` copies more have arrived */
    bool stop_when_drained;
    int64_t undelivered;
    /* message completion: msg_dests destinations (tep_expect_message) */
    int msg_dests, msg_dests_done;
    sim_time_ps msg_done_ps;
    bool stop_when_msg_done;
} tep_meter;

typedef struct tep_cfg {
    int ports;                  /* endpoint addresses 0..ports-1 (packets' src and dst) */
    int flit_bytes;
    sim_time_ps period_ps;      /* one flit time on the link = the switch clock period */
    bool saf;                   /* links carry whole packets (store-and-forward) instead of flits */
    bool src_voq;               /* per-destination source queues (the switch has VOQs) */
    sim_credit_use credit_mode;
    sim_groups *groups;         /* multicast messages' groups are added here (NULL: unicast only) */
    /* Bernoulli sources */
    uint64_t bernoulli_mask;    /* ports that inject */
    double load;                /* offered flits per cycle per injecting port */
    int pkt_flits;              /* flits per Bernoulli packet (header included) */
    traffic_dest *dest;
    /* measurement window for latency and throughput: [warmup_ps, end_ps) */
    sim_time_ps warmup_ps, end_ps;
    bool record_latency;        /* into meter->latency_cycles */
    tep_meter *meter;           /* NULL: none (no latency, no drain or message stop) */
    uint64_t seed;
    /* packets a source holds: soft and hard caps (see TEP_SRC_QUEUE_PKTS);
     * 0: TEP_SRC_QUEUE_PKTS and TEP_SRC_HARD_PKTS; UINT32_MAX for both: an
     * unbounded source (the reference the caps are checked against) */
    uint32_t src_soft_pkts, src_hard_pkts;
} tep_cfg;

#define TEP_MAX_FLITS 255   /* flits of one packet */
#define TEP_PKT_MSG 2u      /* sim_pkt.flags: a message's packet (not background) */

#define TEP_QUEUES (TRAFFIC_MAX_PORTS + 1) /* per destination + multicast */
#define TEP_MCAST_Q TRAFFIC_MAX_PORTS

#define TEP_WHEEL 64 /* cycles the due wheel of the sources reaches ahead */

/* Packets a source holds in its queues (all of them together). An open-loop
 * Bernoulli source offered more than the switch carries backs up without end
 * (a 64-port switch at load 1.0 carries ~98 %: 16 B a packet, a gigabyte per
 * 10^7 cycles). The packets past what a source holds stay in its generator
 * (PRNG state and next arrival cycle, O(1) memory) and are made later, in
 * arrival order, each with its own arrival time. The results are those of an
 * unbounded source as long as the source holds every packet its next pick
 * could choose:
 *  - at a visit it makes its arrivals up to TEP_SRC_QUEUE_PKTS (the soft cap);
 *  - when it picks a queue (round robin over the queues whose head has
 *    credits), a queue that has credits, is empty, and could be non-empty in
 *    an unbounded source (the pattern can send there and arrivals wait in the
 *    generator) gets the generator run on, in arrival order, until that queue
 *    has a packet or no arrival waits, up to TEP_SRC_HARD_PKTS held. An
 *    unbounded source would pick that queue's head now, so it must be there.
 * With a FIFO source (no src_voq) the soft cap alone is exact. Only when a
 * source holds TEP_SRC_HARD_PKTS and still needs a packet from the generator
 * may it pick otherwise than an unbounded one: each such pick counts in
 * tep.source_cap_hits (nvswitch_uniform: metric source_cap_hits, check
 * sources_exact). What a source holds past the soft cap is what an unbounded
 * one holds between its oldest unsent packet and the newest queue head it
 * sends from: while some of its queues still run dry that is nearly all of
 * the unbounded backlog (the 64-port 17-flit bench at 2M cycles: 132k packets
 * held against 145k, the same peak RSS as unbounded sources); once every
 * queue of an overloaded source stays non-empty, it is the spread of the
 * queues' head ages, which grows as the square root of the run, not
 * linearly; the hard cap bounds it. The rings shrink as they empty
 * (queue_pop): memory is within a few times TEP_SRC_HARD_PKTS x 16 B a
 * source whatever the run's length. */
#define TEP_SRC_QUEUE_PKTS 1024u
/* The default hard cap is the soft cap: memory stays flat in run length
 * (make bench holds the 64-port component's peak RSS at 2M cycles within 20 %
 * of 200k), and a long overloaded run that reaches it says so (sources_exact)
 * instead of differing silently; nvswitch_uniform's source_queue_pkts raises
 * it (16 B a held packet) for results exact to unbounded sources. */
#define TEP_SRC_HARD_PKTS TEP_SRC_QUEUE_PKTS

/* A source queue entry: what a packet needs while it waits. A Bernoulli
 * packet's record (sim_pkt) is filled only when the source sends it, from the
 * pool's free list (recently released by a sink, so in cache): at high load
 * the sources back up and a record made at creation would be cold by then.
 * A message packet (cut one ahead, possibly multicast) has its record from
 * creation; so does a Bernoulli packet once its first flit is sent. */
typedef struct tep_qent {
    union {
        sim_time_ps created_ps; /* no record yet: when the source generated it */
        sim_pkt *pkt;           /* TEP_QENT_RECORD: the record */
    } u;
    uint16_t nflits;
    uint8_t dest;               /* the destination port (unless TEP_QENT_MCAST) */
    uint8_t flags;              /* TEP_QENT_* */
} tep_qent;

#define TEP_QENT_RECORD 1u /* the packet has its sim_pkt */
#define TEP_QENT_MSG 2u    /* a message packet (counted in msg_queued) */
#define TEP_QENT_MCAST 4u  /* to the port's multicast message's destinations (mc_mask) */

/* A source queue: the first entry in place, next to the queue's bookkeeping
 * (picking the queue then reads one cache line, not that and the ring's
 * head), the rest in a ring; the pop that moves the next entry up does not
 * hold anything up while its line comes in. */
typedef struct tep_queue {
    tep_qent first;             /* valid when len > 0 */
    tep_qent *rest;             /* ring of the entries after the first */
    uint32_t rest_head, len, cap; /* len counts the first entry; cap: the ring's */
} tep_queue;

/* A sink's view of the flow from one source: every field is touched by
 * every delivery from it (win_from in the window), so they share a line. */
typedef struct tep_flow_rx {
    int64_t last_seq;           /* last flit sequence seen (-1: none yet) */
    uint64_t recv_from;         /* flit copies received */
    uint64_t win_from;          /* of them, delivered in the window */
} tep_flow_rx;

/* Runs the endpoints of a clock domain: at each edge, those due, in port
 * order. Its state is when each endpoint is next due (the endpoints file
 * it after their cycle, and wake themselves: tep_credit); it reads nothing
 * else of theirs and they nothing of each other's. The due cycles are filed
 * by cycle in a wheel so that a cycle finds its endpoints without looking
 * at all N: bit i of wheel[c % TEP_WHEEL] when endpoint i is due at cycle c
 * no more than TEP_WHEEL cycles ahead, else in far_mask (filed into the
 * wheel once far_min comes that close). An entry whose endpoint's due_cycle
 * has since moved later is ignored. */
typedef struct tep_sched {
    uint64_t due_cycle[TRAFFIC_MAX_PORTS];
    uint64_t wheel[TEP_WHEEL];
    uint64_t far_mask, far_min;
    uint64_t wake_mask;         /* endpoints woken (due now) since the last cycle */
    uint64_t wheel_next;        /* the cycle whose slot is taken next; another: refile all */
    uint64_t members;           /* the endpoints it runs */
    uint64_t pending_mask;      /* endpoints with packets to send and sending on (as of their last cycle) */
    uint64_t inject_mask;       /* endpoints whose Bernoulli generation is on */
    struct tep *ep[TRAFFIC_MAX_PORTS];
    sim_kernel *k;
    sim_clock_handler h;
} tep_sched;

/* Its handler joins clk now (make it before the switch: see tb/nvs). */
tep_sched *tep_sched_new(sim_kernel *k, sim_clock_domain *clk);
/* After its endpoints. */
void tep_sched_free(tep_sched *s);

typedef struct tep {
    /* What a source's cycle touches, first and together (about two cache lines). */
    sim_kernel *k;
    sim_link *tx;
    int idx;                    /* the port: this endpoint's address */
    int rr;                     /* queue looked at first next time (0..TEP_QUEUES-1) */
    int cur_q;                  /* wormhole: queue of the packet being sent, -1 if none */
    unsigned cur_flit;          /* wormhole: next flit of that packet */
    uint64_t q_mask;            /* non-empty destination queues */
    uint64_t stuck_mask;        /* destination queues whose head packet was found short of credits
                                 * since their pool last got some back (a subset of those that are) */
    uint32_t queued;            /* packets in the source queues (a partly sent one included) */
    uint32_t next_id;           /* Bernoulli packets made so far */
    uint64_t next_seq;
    uint64_t next_arrival;      /* cycle of the next Bernoulli packet */
    tep_sched *sched;
    sim_time_ps tx_free_ps;     /* when the link's serialiser is free again */
    uint64_t tx_free_cycle;     /* the first cycle whose edge is at or after tx_free_ps */
    bool bernoulli;             /* this source generates Bernoulli packets now */
    bool injecting;             /* Bernoulli generation is on (cfg: some port injects) */
    bool sending;               /* the source sends queued packets while true (false: drain the network) */
    bool blocked;               /* sending waits for credits (woken by their return) */
    bool mc_queued;             /* the multicast queue is not empty (a pick leaves its struct alone) */
    traffic_message *msg;       /* message source, or NULL */
    uint32_t msg_queued;        /* message packets cut and not yet sent */
    uint32_t mc_group;          /* a multicast message's group (cfg.groups), its destinations mc_mask */
    uint64_t mc_mask;
    sim_rng rng;
    double p_packet;
    double log1m_p_packet;      /* log1p(-p_packet), for the geometric gaps */
    sim_time_ps wire_ps;        /* the last wire time a send took, and in whole cycles, rounded up */
    uint64_t wire_cycles;       /* (sends are mostly of one size: no division per send) */
    uint64_t dest_reach;        /* destination queues the pattern can fill (Bernoulli packets) */
    uint32_t soft_pkts, hard_pkts; /* cfg.src_soft_pkts / src_hard_pkts with the defaults in */
    uint16_t head_flits[TEP_QUEUES]; /* flits of each queue's head packet */
    /* Source queues: one per destination plus one for multicast (src_voq),
     * else queue 0 only (a FIFO). A flow's packets share one queue, so the
     * source keeps per-flow order. */
    tep_queue q[TEP_QUEUES];
    /* source statistics */
    uint64_t copies_sent;
    uint64_t flits_generated;   /* (made so far: see tep_catch_up) */
    uint64_t source_cap_hits;   /* picks that needed a packet from the generator at hard_pkts */
    uint64_t unmade_copies_at_stop; /* arrived by tep_stop_injection but never made (TEP_SRC_QUEUE_PKTS) */
    uint64_t sent_to[TRAFFIC_MAX_PORTS];   /* flit copies sent per destination */
    tep_cfg cfg;
    sim_pkt_pool pool;          /* this source's packets (a sink frees into it) */
    /* sink: what a delivery touches, together */
    sim_link *rx;
    tep_meter *meter;           /* cfg.meter */
    uint64_t copies_delivered, duplicated, out_of_order;
    uint64_t win_out;                      /* flits delivered here in the window */
    uint64_t msg_bytes_total;   /* bytes expected for the message (0 = not a destination) */
    uint64_t msg_bytes_recv;
    sim_time_ps msg_done_ps;
    bool msg_done;
    tep_flow_rx from[TRAFFIC_MAX_PORTS];   /* per source */
} tep;

/* The endpoint at `port` (0..cfg->ports-1), run by s. */
tep *tep_new(sim_kernel *k, tep_sched *s, const tep_cfg *cfg, int port);
/* Every packet the source still holds to fn (a partly sent one included: a
 * packet is its sender's until its last part has gone). A teardown gives
 * these, the switch's and the links' back (sim_pkt_set) before freeing. */
void tep_held(const tep *e, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
/* Aborts (a bug) if a packet it made has not come back to its pool. */
void tep_free(tep *e);
/* Its links: tx toward the switch, rx from it. */
void tep_attach(tep *e, sim_link *tx, sim_link *rx);
/* A message source (owned by the caller) at this endpoint. A multicast
 * message's destinations become a group of cfg.groups. */
void tep_set_message(tep *e, traffic_message *m);
/* This sink is a destination of a message of `bytes`: done once they are in
 * (counted in cfg.meter's msg_dests_done; the builder sets msg_dests). */
void tep_expect_message(tep *e, uint64_t bytes);
/* A source whose wire is busy makes the Bernoulli packets that arrive
 * meanwhile when the wire is free (they could not go earlier): this makes
 * every packet due by the last cycle run, each as of its own arrival, so the
 * source queues, flits_generated and next_id are as a visit at every
 * arrival would have left them. Call it before reading those. */
void tep_catch_up(tep *e);
/* Stop generating Bernoulli traffic (queued packets still go out). */
void tep_stop_injection(tep *e);
/* Stop sending (the network drains); for good. */
static inline void tep_stop_sending(tep *e)
{
    e->sending = false;
    e->sched->pending_mask &= ~(1ULL << e->idx);
}
/* Flit copies still waiting at the source (not yet sent), in its queues
 * and, past TEP_SRC_QUEUE_PKTS, arrived and not yet made; catches up first. */
uint64_t tep_queued_copies(tep *e);
/* Of those, the copies of packets that arrived but are not made yet. */
uint64_t tep_unmade_copies(const tep *e);

#endif
