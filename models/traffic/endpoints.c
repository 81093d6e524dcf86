/* Endpoints: sources and sinks around a switch (see endpoints.h). */
#include "models/traffic/endpoints.h"
#include "models/traffic/endpoints_impl.h"
#include "sim/ring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool tep_cycle(void *ctx, uint64_t cycle);
static uint64_t bernoulli_gap(sim_rng *r, double p, double log1m_p);
static void tep_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits);

/* The destinations source `src` can draw under the pattern (traffic_dest_pick):
 * a queue outside them is never filled, so waiting for it is pointless. */
static uint64_t dest_reach(const traffic_dest *d, int src)
{
    const uint64_t all = d->n >= 64 ? ~0ULL : (1ULL << d->n) - 1;
    switch (d->pattern) {
    case TRAFFIC_TRANSPOSE:
    case TRAFFIC_PERMUTATION: return 1ULL << d->perm[src];
    case TRAFFIC_ALLTOALL: return d->n == 1 ? 1 : all & ~(1ULL << src);
    default: return all; /* uniform and hotspot draw any port */
    }
}

tep *tep_new(sim_kernel *k, sim_clock_domain *clk, const tep_cfg *cfg)
{
    tep *e = calloc(1, sizeof *e);
    if (!e) sim_fatal("out of memory");
    e->k = k;
    e->cfg = *cfg;
    sim_pkt_pool_init(&e->pool, "endpoints");
    e->injecting = cfg->bernoulli_mask != 0 && cfg->load > 0;
    e->inject_mask = e->injecting ? cfg->bernoulli_mask : 0;
    e->sending = true;
    if (e->injecting && (cfg->pkt_flits < 1 || cfg->pkt_flits > TEP_MAX_FLITS)) /* every Bernoulli packet has pkt_flits */
        sim_fatal("endpoints: Bernoulli packets of %d flits (allowed 1..%d)", cfg->pkt_flits, TEP_MAX_FLITS);
    e->p_packet = cfg->pkt_flits > 0 ? cfg->load / cfg->pkt_flits : 0;
    e->log1m_p_packet = log1p(-e->p_packet);
    sim_hist_init(&e->latency_cycles, "latency_cycles");
    e->soft_pkts = cfg->src_soft_pkts ? cfg->src_soft_pkts : TEP_SRC_QUEUE_PKTS;
    e->hard_pkts = cfg->src_hard_pkts ? cfg->src_hard_pkts : TEP_SRC_HARD_PKTS;
    for (int i = 0; i < cfg->ports; i++) {
        tep_port *p = &e->port[i];
        p->owner = p->sink_owner = e;
        p->idx = p->sink_idx = i;
        p->cur_q = -1;
        sim_rng_seed_stream(&p->rng, cfg->seed, 0x1000u + (uint64_t)i);
        p->next_arrival = bernoulli_gap(&p->rng, e->p_packet, e->log1m_p_packet);
        p->dest_reach = cfg->dest ? dest_reach(cfg->dest, i) : 0;
        for (int s = 0; s < TRAFFIC_MAX_PORTS; s++) p->from[s].last_seq = -1;
    }
    e->first_delivery_ps = SIM_TIME_MAX;
    e->wheel_next = UINT64_MAX; /* the first cycle files every source */
    e->far_min = UINT64_MAX;
    sim_clock_add(clk, &e->h, "endpoints", tep_cycle, e);
    return e;
}

void tep_free(tep *e, bool drained)
{
    if (!e) return;
    for (int i = 0; i < e->cfg.ports; i++) {
        tep_port *p = &e->port[i];
        for (int q = 0; q < TEP_QUEUES; q++) { /* the packets it still holds (a partly sent one included) */
            for (uint32_t x = 0; x < p->q[q].len; x++) {
                const tep_qent *w = queue_at(&p->q[q], x);
                if (w->flags & TEP_QENT_RECORD) sim_pkt_free(w->u.pkt);
            }
            free(p->q[q].rest);
        }
    }
    if (drained) sim_pkt_pool_free(&e->pool);
    else sim_pkt_pool_leak_ok(&e->pool);
    sim_hist_free(&e->latency_cycles);
    free(e);
}

void tep_attach(tep *e, int port, sim_link *tx, sim_link *rx)
{
    e->port[port].tx = tx;
    e->port[port].rx = rx;
    sim_link_set_receiver(rx, tep_sink_recv, &e->port[port]);
    sim_link_set_credit_callback(tx, tep_credit, &e->port[port]);
}

/* Source i acts at the next edge. */
static void wake(tep *e, int i)
{
    e->due_cycle[i] = 0;
    e->wake_mask |= 1ULL << i;
}

/* Credits a unicast queue's head packet needs to go (store-and-forward: the
 * whole packet, else its next flit). */
static inline uint32_t head_need(const tep *e, const tep_port *p, unsigned qi)
{
    return e->cfg.saf ? p->head_flits[qi] : 1;
}

/* Credits came back: a source waiting for them looks again at the next edge.
 * Any other source already acts at the first cycle the credits could matter
 * to it (its wire free, or its next arrival), so it is left alone. The queues
 * the pool serves may go again (pick_queue asks the link again). */
static void tep_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)l;
    (void)credits;
    tep_port *p = ctx;
    tep *e = p->owner;
    p->stuck_mask &= e->cfg.credit_mode == SIM_CREDIT_PER_DEST ? ~(1ULL << type) : 0;
    if (e->blocked_mask >> p->idx & 1) wake(e, p->idx);
}

static int queue_of(const tep *e, const tep_qent *q)
{
    if (!e->cfg.src_voq) return 0;
    return q->flags & TEP_QENT_MCAST ? TEP_MCAST_Q : q->dest;
}

static inline uint64_t qent_mask(const tep_port *p, const tep_qent *q)
{
    return q->flags & TEP_QENT_MCAST ? p->mc_mask : 1ULL << q->dest;
}

/* A packet's record from the port's pool, every field but seq and
 * injected_ps (set when its first flit is sent). */
static sim_pkt *new_record(tep *e, tep_port *p, const tep_qent *q, sim_time_ps created_ps, uint32_t payload)
{
    sim_pkt *k = sim_pkt_alloc(&e->pool);
    k->src = (uint32_t)p->idx;
    if (q->flags & TEP_QENT_MCAST) {
        k->dst = SIM_PKT_GROUP;
        k->group = p->mc_group;
    } else {
        k->dst = q->dest;
    }
    k->flags = q->flags & TEP_QENT_MSG ? TEP_PKT_MSG : 0;
    k->parts = e->cfg.saf ? 1 : q->nflits;
    k->wire_bytes = (uint32_t)q->nflits * (uint32_t)e->cfg.flit_bytes;
    k->payload_bytes = payload;
    k->flow = (uint64_t)p->idx;
    k->created_ps = created_ps;
    return k;
}

static void check_nflits(const tep_port *p, unsigned nflits)
{
    if (nflits < 1 || nflits > TEP_MAX_FLITS) sim_fatal("endpoint %d: packet of %u flits", p->idx, nflits);
}

/* A new packet joins its source queue (a flow's packets share one queue, in
 * creation order). */
static inline void enqueue_at(tep *e, tep_port *p, int qi, const tep_qent *q)
{
    p->generated_flits += q->nflits;
    e->flits_generated += q->nflits;
    if (queue_empty(&p->q[qi])) p->head_flits[qi] = q->nflits;
    queue_push(&p->q[qi], q);
    p->queued++;
    if (qi < TRAFFIC_MAX_PORTS) p->q_mask |= 1ULL << qi;
    else p->mc_queued = true;
}

static void enqueue(tep *e, tep_port *p, const tep_qent *q) { enqueue_at(e, p, queue_of(e, q), q); }

/* A Bernoulli packet to port `dest`: queued without a record (see tep_qent). */
static void new_bernoulli_packet(tep *e, tep_port *p, int dest, sim_time_ps created_ps)
{
    p->next_id++;
    const tep_qent q = { .u.created_ps = created_ps, .nflits = (uint16_t)e->cfg.pkt_flits, .dest = (uint8_t)dest, .flags = 0 };
    enqueue_at(e, p, e->cfg.src_voq ? dest : 0, &q); /* unicast: the destination's queue (queue_of) */
}

/* Whether port p's source makes Bernoulli packets now. */
static inline bool bernoulli_on(const tep *e, const tep_port *p) { return e->inject_mask >> p->idx & 1; }

/* The generator's next arrival joins the source's queues (draws: gap, then destination). */
static inline void make_arrival(tep *e, tep_port *p)
{
    const uint64_t at = p->next_arrival;
    p->next_arrival = at + 1 + bernoulli_gap(&p->rng, e->p_packet, e->log1m_p_packet);
    new_bernoulli_packet(e, p, traffic_dest_pick(e->cfg.dest, p->idx, &p->rng), sim_clock_edge_time(e->h.dom, at));
}

/* The Bernoulli packets due by `cycle` join the source's queues, each as of
 * its own arrival cycle, with the draws (gap, then destination) in the order
 * a visit at every arrival would make them. A source whose wire is busy when
 * a packet arrives is not visited for it: nothing can go before the wire is
 * free, so the packet is made at that visit instead (set_due), or when
 * someone looks (tep_catch_up). */
static void make_arrivals(tep *e, tep_port *p, uint64_t cycle)
{
    while (p->next_arrival <= cycle && p->queued < e->soft_pkts) make_arrival(e, p); /* the rest wait in the generator */
}

/* Destination queue qi has credits and is empty, but arrivals by `cycle` wait
 * in the generator: an unbounded source would hold them and might have qi's
 * head among them. Makes them, in arrival order, until qi has a packet (true)
 * or none waits (false: qi is empty in an unbounded source too), up to
 * hard_pkts held (false, counted: here the source may differ). */
static bool fill_queue(tep *e, tep_port *p, int qi, uint64_t cycle)
{
    while (p->next_arrival <= cycle) {
        if (p->queued >= e->hard_pkts) {
            e->source_cap_hits++;
            return false;
        }
        make_arrival(e, p);
        if (p->q_mask >> qi & 1) return true;
    }
    return false;
}

/* Every arrival by `cycle` made (a message packet cut now queues behind them
 * in an unbounded source), up to hard_pkts held (counted, as fill_queue). */
static void make_all_arrivals(tep *e, tep_port *p, uint64_t cycle)
{
    while (p->next_arrival <= cycle) {
        if (p->queued >= e->hard_pkts) {
            e->source_cap_hits++;
            return;
        }
        make_arrival(e, p);
    }
}

/* A message packet: its record is made now (it is sent soon: cut one ahead). */
static void new_message_packet(tep *e, tep_port *p, uint64_t mask, unsigned nflits, uint32_t payload)
{
    check_nflits(p, nflits);
    const bool mc = (mask & (mask - 1)) != 0;
    if (mc && mask != p->mc_mask) sim_fatal("endpoint %d: a multicast packet not to its message's destinations", p->idx);
    tep_qent q = { .nflits = (uint16_t)nflits, .dest = (uint8_t)(mc ? 0 : __builtin_ctzll(mask)),
                   .flags = (uint8_t)(TEP_QENT_RECORD | TEP_QENT_MSG | (mc ? TEP_QENT_MCAST : 0)) };
    q.u.pkt = new_record(e, p, &q, sim_now(e->k), payload);
    enqueue(e, p, &q);
}

/* The record of the packet at a queue's head, made from its entry if it has
 * none yet (the entry then names it). */
static sim_pkt *head_record(tep *e, tep_port *p, tep_qent *q)
{
    if (q->flags & TEP_QENT_RECORD) return q->u.pkt;
    const uint32_t payload = (uint32_t)(q->nflits - 1) * (uint32_t)e->cfg.flit_bytes;
    sim_pkt *k = new_record(e, p, q, q->u.created_ps, payload);
    q->u.pkt = k;
    q->flags |= TEP_QENT_RECORD;
    return k;
}

/* Whether the credits for `n` flits of a packet to `mask` are there. */
static bool credits_ok(const tep *e, const sim_link *l, uint64_t mask, uint32_t n)
{
    switch (e->cfg.credit_mode) {
    case SIM_CREDIT_NONE: return true;
    case SIM_CREDIT_PER_FLIT: return sim_link_can_send(l, 0, n);
    case SIM_CREDIT_PER_COPY: return sim_link_can_send(l, 0, n * (uint32_t)__builtin_popcountll(mask));
    case SIM_CREDIT_PER_DEST:
        for (uint64_t d = mask; d; d &= d - 1)
            if (!sim_link_can_send(l, (unsigned)__builtin_ctzll(d), n)) return false;
        return true;
    }
    return false;
}

/* Destinations in a mask: most packets are unicast, and a popcount may be a
 * library call on the baseline x86-64 target. */
static inline unsigned dest_count(uint64_t mask)
{
    return (mask & (mask - 1)) ? (unsigned)__builtin_popcountll(mask) : (unsigned)(mask != 0);
}

/* A packet whole or its first part (part 0) goes by the plain send, which
 * the compiler specialises for it (every send of store-and-forward). */
static inline bool try_send(sim_link *l, void *msg, uint32_t bytes, unsigned type, uint32_t credits, uint16_t part)
{
    return part ? sim_link_try_send_part(l, msg, bytes, type, credits, part) : sim_link_try_send(l, msg, bytes, type, credits);
}

/* Sends `n` flits of a packet to `mask` (part `part`), spending their credits. */
static void send_spending(tep *e, sim_link *l, uint64_t mask, uint32_t n, void *msg, uint32_t bytes, uint16_t part)
{
    bool ok = true;
    switch (e->cfg.credit_mode) {
    case SIM_CREDIT_NONE: ok = try_send(l, msg, bytes, 0, 0, part); break;
    case SIM_CREDIT_PER_FLIT: ok = try_send(l, msg, bytes, 0, n, part); break;
    case SIM_CREDIT_PER_COPY: ok = try_send(l, msg, bytes, 0, n * dest_count(mask), part); break;
    case SIM_CREDIT_PER_DEST: {
        uint64_t m = mask;
        ok = try_send(l, msg, bytes, (unsigned)__builtin_ctzll(m), n, part);
        /* a multicast flit takes a slot in every destination's VOQ: the other
         * pools are spent without a message of their own */
        for (m &= m - 1; ok && m; m &= m - 1) sim_link_hold_credits(l, (unsigned)__builtin_ctzll(m), n);
        break;
    }
    }
    if (!ok) sim_fatal("endpoint: credits checked but not available");
}

/* Whether the multicast queue's head packet (or its next flit) can go. */
static bool mcast_can_go(const tep *e, tep_port *p)
{
    const tep_qent *q = queue_first(&p->q[TEP_MCAST_Q]);
    return credits_ok(e, p->tx, qent_mask(p, q), e->cfg.saf ? q->nflits : 1);
}

/* Round-robin over non-empty source queues starting at p->rr (the multicast
 * queue sits at position TEP_MCAST_Q): the first whose head can go. */
static int pick_queue(tep *e, tep_port *p, unsigned need_flits_saf, uint64_t cycle)
{
    if (!e->cfg.src_voq) {
        if (queue_empty(&p->q[0])) return -1;
        const tep_qent *q = queue_first(&p->q[0]);
        return credits_ok(e, p->tx, qent_mask(p, q), e->cfg.saf ? q->nflits : need_flits_saf) ? 0 : -1;
    }
    const bool mc = p->mc_queued;
    const int start = p->rr;
    /* arrivals waiting in the generator (soft cap reached): the empty queues
     * they could fill are looked at too (fill_queue) */
    const bool behind = bernoulli_on(e, p) && p->next_arrival <= cycle;
    const uint64_t cand = behind ? p->q_mask | p->dest_reach : p->q_mask;
    /* dest queues at or after start, then the multicast queue, then the rest */
    uint64_t hi = start >= TRAFFIC_MAX_PORTS ? 0 : cand & (~0ULL << start);
    uint64_t lo = cand & ~hi;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            if (mc && mcast_can_go(e, p)) return TEP_MCAST_Q;
            continue;
        }
        /* a queue found stuck stays so until its pool gets credits back (its
         * head cannot leave before: it goes only when picked) */
        for (uint64_t m = (pass == 0 ? hi : lo) & ~p->stuck_mask; m; m &= m - 1) {
            int qi = __builtin_ctzll(m);
            const bool held = p->q_mask >> qi & 1; /* else empty, and behind: its next packet would be Bernoulli */
            /* a unicast queue: one destination pool (or the input's pool) decides */
            uint32_t need = held ? head_need(e, p, (unsigned)qi) : e->cfg.saf ? (uint32_t)e->cfg.pkt_flits : 1;
            bool ok;
            switch (e->cfg.credit_mode) {
            case SIM_CREDIT_NONE: ok = true; break;
            case SIM_CREDIT_PER_DEST: ok = sim_link_can_send(p->tx, (unsigned)qi, need); break;
            default: ok = sim_link_can_send(p->tx, 0, need); break;
            }
            if (ok && (held || fill_queue(e, p, qi, cycle))) return qi;
            if (!ok && held) p->stuck_mask |= 1ULL << qi;
        }
    }
    return -1;
}

/* Cycles without an arrival before the next one, for a Bernoulli(p) process:
 * geometric, so a source draws once per packet instead of once per cycle. */
static uint64_t bernoulli_gap(sim_rng *r, double p, double log1m_p)
{
    if (p >= 1.0) return 0;
    double u = 1.0 - sim_rng_double(r); /* (0, 1] */
    double g = log(u) / log1m_p;        /* >= 0 (or -0.0), so its floor is its truncation */
    return g >= 0 && g < 1e15 ? (uint64_t)(int64_t)g : (uint64_t)1e15; /* p = 0: never */
}

/* Cycles from an edge to the first edge at or after `ps` later. */
static inline uint64_t wire_cycles(tep *e, sim_time_ps ps)
{
    if (ps != e->wire_ps) {
        e->wire_ps = ps;
        e->wire_cycles = (ps + e->h.dom->period_ps - 1) / e->h.dom->period_ps;
    }
    return e->wire_cycles;
}

/* What a source's cycle ended with. */
enum { TEP_IDLE = 0, TEP_BUSY, TEP_BLOCKED };

/* One source in one cycle: inject, cut the message, send what the wire and
 * the credits allow. TEP_BUSY/TEP_BLOCKED if it had packets to send (keeps
 * the handler on); TEP_BLOCKED if they wait for credits. */
static int tep_port_cycle(tep *e, tep_port *p, uint64_t cycle, sim_time_ps now)
{
    if (bernoulli_on(e, p) && p->next_arrival <= cycle) make_arrivals(e, p, cycle);
    if (p->msg && e->sending && p->msg_queued == 0) { /* cut the message lazily: one packet ahead */
        uint32_t payload;
        uint64_t mask;
        if (traffic_message_next(p->msg, &payload, &mask)) {
            if (bernoulli_on(e, p) && p->next_arrival <= cycle) make_all_arrivals(e, p, cycle);
            unsigned nflits = 1 + (payload + (uint32_t)e->cfg.flit_bytes - 1) / (uint32_t)e->cfg.flit_bytes;
            new_message_packet(e, p, mask, nflits, payload);
            p->msg_queued++;
        }
    }
    if (!e->sending) return TEP_IDLE;
    if (p->cur_q < 0 && !p->queued) return TEP_IDLE;
    if (p->tx_free_ps > now) return TEP_BUSY; /* the wire is still serialising */
    int qi = p->cur_q;
    if (qi < 0) {
        qi = pick_queue(e, p, 1, cycle);
        if (qi < 0) return TEP_BLOCKED;
    }
    tep_queue *r = &p->q[qi];
    tep_qent *q = queue_first(r);
    const uint64_t mask = qent_mask(p, q);
    const unsigned nflits = q->nflits;
    unsigned first = e->cfg.saf ? 0 : p->cur_flit;
    unsigned count = e->cfg.saf ? nflits : 1;
    if (p->cur_q >= 0 && !credits_ok(e, p->tx, mask, count)) return TEP_BLOCKED; /* mid-packet, waiting for a credit */
    sim_pkt *k = head_record(e, p, q);
    if (first == 0) { /* the flow order is the order packets go onto the wire */
        k->seq = p->next_seq;
        k->injected_ps = now;
        p->next_seq += nflits;
    }
    send_spending(e, p->tx, mask, count, k, count * (uint32_t)e->cfg.flit_bytes, (uint16_t)first);
    p->tx_free_ps = sim_link_tx_free_ps(p->tx); /* only this source sends on it */
    p->tx_free_cycle = cycle + wire_cycles(e, p->tx_free_ps - now);
    uint64_t copies = (uint64_t)count * dest_count(mask);
    e->copies_sent += copies;
    for (uint64_t d = mask; d; d &= d - 1) p->sent_to[__builtin_ctzll(d)] += count;
    if (first + count == nflits) {
        const bool msg = q->flags & TEP_QENT_MSG;
        p->cur_flit = 0;
        p->cur_q = -1;
        queue_pop(r);
        p->queued--;
        if (!queue_empty(r)) p->head_flits[qi] = queue_first(r)->nflits;
        if (msg) p->msg_queued--;
        if (queue_empty(r) && qi < TRAFFIC_MAX_PORTS && e->cfg.src_voq) p->q_mask &= ~(1ULL << qi);
        if (qi == TEP_MCAST_Q && queue_empty(r)) p->mc_queued = false;
        if (!e->cfg.src_voq && queue_empty(r)) p->q_mask = 0;
        p->rr = qi + 1 == TEP_QUEUES ? 0 : qi + 1;
    } else {
        p->cur_flit = first + count;
        p->cur_q = qi;
    }
    return TEP_BUSY;
}

/* The first cycle at which port p can do anything again: its next Bernoulli
 * arrival (or, while its wire is busy, the cycle the wire is free: the
 * packets arrived by then are made then, see make_arrivals), its wire
 * becoming free while it has packets queued, every cycle while it holds a
 * message; a source waiting for credits is woken by their arrival
 * (tep_credit). Cycles before it are skipped: the source would only have
 * looked. */
static void set_due(tep *e, tep_port *p, uint64_t cycle, sim_time_ps now, bool blocked)
{
    const bool work = p->cur_q >= 0 || p->queued;
    const uint64_t bit = 1ULL << p->idx;
    e->work_mask = work ? e->work_mask | bit : e->work_mask & ~bit;
    e->blocked_mask = blocked ? e->blocked_mask | bit : e->blocked_mask & ~bit;
    const bool wire_busy = p->tx_free_ps > now; /* free at tx_free_cycle, the first edge at or after tx_free_ps */
    uint64_t due = UINT64_MAX;
    /* A source with arrivals waiting in its generator has made every packet an
     * unbounded one could send now (pick_queue): if it is blocked, no queue has
     * credits, and only their return (tep_credit), not an arrival, lets it go. */
    if (bernoulli_on(e, p) && p->next_arrival > cycle)
        due = wire_busy && p->next_arrival < p->tx_free_cycle ? p->tx_free_cycle : p->next_arrival;
    if (p->msg) due = cycle + 1;
    if (work && e->sending && !blocked) {
        uint64_t ready = wire_busy ? p->tx_free_cycle : cycle + 1;
        if (ready < due) due = ready;
    }
    file_due(e, p->idx, due, cycle);
}

/* The first cycle: a source visited at every cycle from here on would make
 * a packet drawn for an earlier cycle now. */
static void start_arrivals(tep *e, uint64_t cycle)
{
    for (int i = 0; i < e->cfg.ports; i++)
        if (e->port[i].next_arrival < cycle) e->port[i].next_arrival = cycle;
}

static bool tep_cycle(void *ctx, uint64_t cycle)
{
    tep *e = ctx;
    const sim_time_ps now = sim_now(e->k);
    bool busy = e->injecting;
    if (e->wheel_next == UINT64_MAX) start_arrivals(e, cycle);
    const uint64_t due = take_due(e, cycle);
    for (uint64_t m = due; m; m &= m - 1) {
        tep_port *p = &e->port[__builtin_ctzll(m)];
        int st = tep_port_cycle(e, p, cycle, now);
        busy |= st != TEP_IDLE;
        set_due(e, p, cycle, now, st == TEP_BLOCKED);
    }
    /* a skipped source is as it was after its last cycle: busy if it has packets */
    const uint64_t all = e->cfg.ports >= 64 ? ~0ULL : (1ULL << e->cfg.ports) - 1;
    const uint64_t skipped = all & ~due;
    return busy || (e->sending && (e->work_mask & skipped));
}

void tep_set_message(tep *e, int src, traffic_message *m, bool stop_when_done)
{
    tep_port *p = &e->port[src];
    p->msg = m;
    if (m->multicast && (m->dest_mask & (m->dest_mask - 1))) {
        if (!e->cfg.groups) sim_fatal("endpoint %d: a multicast message, and no groups to put its destinations in", src);
        uint32_t members[TRAFFIC_MAX_PORTS];
        unsigned n = 0;
        for (uint64_t d = m->dest_mask; d; d &= d - 1) members[n++] = (uint32_t)__builtin_ctzll(d);
        p->mc_group = sim_groups_intern(e->cfg.groups, members, n);
        p->mc_mask = m->dest_mask;
    }
    wake(e, src);
    e->stop_when_msg_done = stop_when_done;
    e->msg_dests = __builtin_popcountll(m->dest_mask);
    for (uint64_t d = m->dest_mask; d; d &= d - 1) e->port[__builtin_ctzll(d)].msg_bytes_total = m->bytes;
    sim_clock_wake(&e->h);
}

void tep_catch_up(tep *e)
{
    if (e->wheel_next == UINT64_MAX || !e->injecting) return; /* no cycle ran yet, or nothing more to make */
    for (int i = 0; i < e->cfg.ports; i++)
        if (bernoulli_on(e, &e->port[i])) make_arrivals(e, &e->port[i], e->wheel_next - 1);
}

/* Packets of port p arrived by `cycle` and not made (its queues full):
 * counted by replaying its generator on copies of its PRNG and destination
 * state, the draws in make_arrivals' order, so the source is left as it was. */
static uint64_t unmade_packets(const tep *e, const tep_port *p, uint64_t cycle)
{
    sim_rng r = p->rng;
    traffic_dest d = *e->cfg.dest;
    uint64_t n = 0;
    for (uint64_t at = p->next_arrival; at <= cycle; n++) {
        at = at + 1 + bernoulli_gap(&r, e->p_packet, e->log1m_p_packet);
        (void)traffic_dest_pick(&d, p->idx, &r);
    }
    return n;
}

uint64_t tep_unmade_copies(const tep *e)
{
    if (!e->injecting) return e->unmade_copies_at_stop;
    if (e->wheel_next == UINT64_MAX) return 0;
    uint64_t pkts = 0;
    for (int i = 0; i < e->cfg.ports; i++)
        if (bernoulli_on(e, &e->port[i])) pkts += unmade_packets(e, &e->port[i], e->wheel_next - 1);
    return pkts * (uint64_t)e->cfg.pkt_flits; /* Bernoulli packets are unicast */
}

void tep_stop_injection(tep *e)
{
    tep_catch_up(e);
    e->unmade_copies_at_stop = tep_unmade_copies(e);
    e->injecting = false;
    e->inject_mask = 0;
}

uint64_t tep_queued_copies(tep *e)
{
    tep_catch_up(e);
    uint64_t s = tep_unmade_copies(e);
    for (int i = 0; i < e->cfg.ports; i++) {
        const tep_port *p = &e->port[i];
        for (int q = 0; q < TEP_QUEUES; q++) {
            const tep_queue *r = &p->q[q];
            for (uint32_t x = 0; x < r->len; x++) {
                const tep_qent *w = queue_at(r, x);
                unsigned left = w->nflits - (q == p->cur_q && x == 0 ? p->cur_flit : 0);
                s += (uint64_t)left * (uint64_t)__builtin_popcountll(qent_mask(p, w));
            }
        }
    }
    return s;
}
