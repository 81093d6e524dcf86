/* Endpoints: sources and sinks around a switch (see endpoints.h). */
#include "models/traffic/endpoints.h"
#include "models/traffic/endpoints_impl.h"
#include "sim/ring.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool sched_cycle(void *ctx, uint64_t cycle);
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

tep_sched *tep_sched_new(sim_kernel *k, sim_clock_domain *clk)
{
    tep_sched *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->k = k;
    s->wheel_next = UINT64_MAX; /* the first cycle files every endpoint */
    s->far_min = UINT64_MAX;
    sim_clock_add(clk, &s->h, "endpoints", sched_cycle, s);
    return s;
}

void tep_sched_free(tep_sched *s) { free(s); }

tep *tep_new(sim_kernel *k, tep_sched *s, const tep_cfg *cfg, int port)
{
    if (port < 0 || port >= cfg->ports || cfg->ports > TRAFFIC_MAX_PORTS)
        sim_fatal("endpoints: port %d of %d (allowed up to %d ports)", port, cfg->ports, TRAFFIC_MAX_PORTS);
    if (s->members >> port & 1) sim_fatal("endpoints: two endpoints at port %d", port);
    tep *e = calloc(1, sizeof *e);
    if (!e) sim_fatal("out of memory");
    e->k = k;
    e->cfg = *cfg;
    e->meter = cfg->meter;
    e->idx = port;
    sim_pkt_pool_init(&e->pool, "endpoint");
    /* the generation is on at every endpoint while some port injects (as the
     * handler's return keeps it running: tep_cycle) */
    e->injecting = cfg->bernoulli_mask != 0 && cfg->load > 0;
    e->bernoulli = e->injecting && (cfg->bernoulli_mask >> port & 1);
    e->sending = true;
    if (e->injecting && (cfg->pkt_flits < 1 || cfg->pkt_flits > TEP_MAX_FLITS)) /* every Bernoulli packet has pkt_flits */
        sim_fatal("endpoints: Bernoulli packets of %d flits (allowed 1..%d)", cfg->pkt_flits, TEP_MAX_FLITS);
    e->p_packet = cfg->pkt_flits > 0 ? cfg->load / cfg->pkt_flits : 0;
    e->log1m_p_packet = log1p(-e->p_packet);
    e->soft_pkts = cfg->src_soft_pkts ? cfg->src_soft_pkts : TEP_SRC_QUEUE_PKTS;
    e->hard_pkts = cfg->src_hard_pkts ? cfg->src_hard_pkts : TEP_SRC_HARD_PKTS;
    e->cur_q = -1;
    sim_rng_seed_stream(&e->rng, cfg->seed, 0x1000u + (uint64_t)port);
    e->next_arrival = bernoulli_gap(&e->rng, e->p_packet, e->log1m_p_packet);
    e->dest_reach = cfg->dest ? dest_reach(cfg->dest, port) : 0;
    for (int src = 0; src < TRAFFIC_MAX_PORTS; src++) e->from[src].last_seq = -1;
    e->sched = s;
    s->ep[port] = e;
    s->members |= 1ULL << port;
    if (e->injecting) s->inject_mask |= 1ULL << port;
    return e;
}

void tep_held(const tep *e, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    for (int q = 0; q < TEP_QUEUES; q++)
        for (uint32_t x = 0; x < e->q[q].len; x++) {
            const tep_qent *w = queue_at(&e->q[q], x);
            if (w->flags & TEP_QENT_RECORD) fn(w->u.pkt, ctx);
        }
}

void tep_free(tep *e)
{
    if (!e) return;
    for (int q = 0; q < TEP_QUEUES; q++) free(e->q[q].rest);
    e->sched->members &= ~(1ULL << e->idx);
    e->sched->ep[e->idx] = NULL;
    sim_pkt_pool_free(&e->pool);
    free(e);
}

void tep_attach(tep *e, sim_link *tx, sim_link *rx)
{
    e->tx = tx;
    e->rx = rx;
    sim_link_set_receiver(rx, tep_sink_recv, e);
    sim_link_set_credit_callback(tx, tep_credit, e);
}

/* The source acts at the next edge its handler runs. */
static void wake(tep *e)
{
    e->sched->due_cycle[e->idx] = 0;
    e->sched->wake_mask |= 1ULL << e->idx;
}

/* Credits a unicast queue's head packet needs to go (store-and-forward: the
 * whole packet, else its next flit). */
static inline uint32_t head_need(const tep *e, unsigned qi)
{
    return e->cfg.saf ? e->head_flits[qi] : 1;
}

/* Credits came back: a source waiting for them looks again at the next edge.
 * Any other source already acts at the first cycle the credits could matter
 * to it (its wire free, or its next arrival), so it is left alone. The queues
 * the pool serves may go again (pick_queue asks the link again). */
static void tep_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)l;
    (void)credits;
    tep *e = ctx;
    e->stuck_mask &= e->cfg.credit_mode == SIM_CREDIT_PER_DEST ? ~(1ULL << type) : 0;
    if (e->blocked) wake(e);
}

static int queue_of(const tep *e, const tep_qent *q)
{
    if (!e->cfg.src_voq) return 0;
    return q->flags & TEP_QENT_MCAST ? TEP_MCAST_Q : q->dest;
}

static inline uint64_t qent_mask(const tep *e, const tep_qent *q)
{
    return q->flags & TEP_QENT_MCAST ? e->mc_mask : 1ULL << q->dest;
}

/* A packet's record from the port's pool, every field but seq and
 * injected_ps (set when its first flit is sent). */
static sim_pkt *new_record(tep *e, const tep_qent *q, sim_time_ps created_ps, uint32_t payload)
{
    sim_pkt *k = sim_pkt_alloc(&e->pool);
    k->src = (uint32_t)e->idx;
    if (q->flags & TEP_QENT_MCAST) {
        k->dst = SIM_PKT_GROUP;
        k->group = e->mc_group;
    } else {
        k->dst = q->dest;
    }
    k->flags = q->flags & TEP_QENT_MSG ? TEP_PKT_MSG : 0;
    k->parts = e->cfg.saf ? 1 : q->nflits;
    k->wire_bytes = (uint32_t)q->nflits * (uint32_t)e->cfg.flit_bytes;
    k->payload_bytes = payload;
    k->flow = (uint64_t)e->idx;
    k->created_ps = created_ps;
    return k;
}

static void check_nflits(const tep *e, unsigned nflits)
{
    if (nflits < 1 || nflits > TEP_MAX_FLITS) sim_fatal("endpoint %d: packet of %u flits", e->idx, nflits);
}

/* A new packet joins its source queue (a flow's packets share one queue, in
 * creation order). */
static inline void enqueue_at(tep *e, int qi, const tep_qent *q)
{
    e->flits_generated += q->nflits;
    if (queue_empty(&e->q[qi])) e->head_flits[qi] = q->nflits;
    queue_push(&e->q[qi], q);
    e->queued++;
    if (qi < TRAFFIC_MAX_PORTS) e->q_mask |= 1ULL << qi;
    else e->mc_queued = true;
}

static void enqueue(tep *e, const tep_qent *q) { enqueue_at(e, queue_of(e, q), q); }

/* A Bernoulli packet to port `dest`: queued without a record (see tep_qent). */
static void new_bernoulli_packet(tep *e, int dest, sim_time_ps created_ps)
{
    e->next_id++;
    const tep_qent q = { .u.created_ps = created_ps, .nflits = (uint16_t)e->cfg.pkt_flits, .dest = (uint8_t)dest, .flags = 0 };
    enqueue_at(e, e->cfg.src_voq ? dest : 0, &q); /* unicast: the destination's queue (queue_of) */
}

/* Whether the source makes Bernoulli packets now. */
static inline bool bernoulli_on(const tep *e) { return e->bernoulli; }

/* The generator's next arrival joins the source's queues (draws: gap, then destination). */
static inline void make_arrival(tep *e)
{
    const uint64_t at = e->next_arrival;
    e->next_arrival = at + 1 + bernoulli_gap(&e->rng, e->p_packet, e->log1m_p_packet);
    new_bernoulli_packet(e, traffic_dest_pick(e->cfg.dest, e->idx, &e->rng), sim_clock_edge_time(e->sched->h.dom, at));
}

/* The Bernoulli packets due by `cycle` join the source's queues, each as of
 * its own arrival cycle, with the draws (gap, then destination) in the order
 * a visit at every arrival would make them. A source whose wire is busy when
 * a packet arrives is not visited for it: nothing can go before the wire is
 * free, so the packet is made at that visit instead (set_due), or when
 * someone looks (tep_catch_up). */
static void make_arrivals(tep *e, uint64_t cycle)
{
    while (e->next_arrival <= cycle && e->queued < e->soft_pkts) make_arrival(e); /* the rest wait in the generator */
}

/* Destination queue qi has credits and is empty, but arrivals by `cycle` wait
 * in the generator: an unbounded source would hold them and might have qi's
 * head among them. Makes them, in arrival order, until qi has a packet (true)
 * or none waits (false: qi is empty in an unbounded source too), up to
 * hard_pkts held (false, counted: here the source may differ). */
static bool fill_queue(tep *e, int qi, uint64_t cycle)
{
    while (e->next_arrival <= cycle) {
        if (e->queued >= e->hard_pkts) {
            e->source_cap_hits++;
            return false;
        }
        make_arrival(e);
        if (e->q_mask >> qi & 1) return true;
    }
    return false;
}

/* Every arrival by `cycle` made (a message packet cut now queues behind them
 * in an unbounded source), up to hard_pkts held (counted, as fill_queue). */
static void make_all_arrivals(tep *e, uint64_t cycle)
{
    while (e->next_arrival <= cycle) {
        if (e->queued >= e->hard_pkts) {
            e->source_cap_hits++;
            return;
        }
        make_arrival(e);
    }
}

/* A message packet: its record is made now (it is sent soon: cut one ahead). */
static void new_message_packet(tep *e, uint64_t mask, unsigned nflits, uint32_t payload)
{
    check_nflits(e, nflits);
    const bool mc = (mask & (mask - 1)) != 0;
    if (mc && mask != e->mc_mask) sim_fatal("endpoint %d: a multicast packet not to its message's destinations", e->idx);
    tep_qent q = { .nflits = (uint16_t)nflits, .dest = (uint8_t)(mc ? 0 : __builtin_ctzll(mask)),
                   .flags = (uint8_t)(TEP_QENT_RECORD | TEP_QENT_MSG | (mc ? TEP_QENT_MCAST : 0)) };
    q.u.pkt = new_record(e, &q, sim_now(e->k), payload);
    enqueue(e, &q);
}

/* The record of the packet at a queue's head, made from its entry if it has
 * none yet (the entry then names it). */
static sim_pkt *head_record(tep *e, tep_qent *q)
{
    if (q->flags & TEP_QENT_RECORD) return q->u.pkt;
    const uint32_t payload = (uint32_t)(q->nflits - 1) * (uint32_t)e->cfg.flit_bytes;
    sim_pkt *k = new_record(e, q, q->u.created_ps, payload);
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
static bool mcast_can_go(const tep *e)
{
    const tep_qent *q = &e->q[TEP_MCAST_Q].first;
    return credits_ok(e, e->tx, qent_mask(e, q), e->cfg.saf ? q->nflits : 1);
}

/* Round-robin over non-empty source queues starting at e->rr (the multicast
 * queue sits at position TEP_MCAST_Q): the first whose head can go. */
static int pick_queue(tep *e, unsigned need_flits_saf, uint64_t cycle)
{
    if (!e->cfg.src_voq) {
        if (queue_empty(&e->q[0])) return -1;
        const tep_qent *q = queue_first(&e->q[0]);
        return credits_ok(e, e->tx, qent_mask(e, q), e->cfg.saf ? q->nflits : need_flits_saf) ? 0 : -1;
    }
    const bool mc = e->mc_queued;
    const int start = e->rr;
    /* arrivals waiting in the generator (soft cap reached): the empty queues
     * they could fill are looked at too (fill_queue) */
    const bool behind = bernoulli_on(e) && e->next_arrival <= cycle;
    const uint64_t cand = behind ? e->q_mask | e->dest_reach : e->q_mask;
    /* dest queues at or after start, then the multicast queue, then the rest */
    uint64_t hi = start >= TRAFFIC_MAX_PORTS ? 0 : cand & (~0ULL << start);
    uint64_t lo = cand & ~hi;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            if (mc && mcast_can_go(e)) return TEP_MCAST_Q;
            continue;
        }
        /* a queue found stuck stays so until its pool gets credits back (its
         * head cannot leave before: it goes only when picked) */
        for (uint64_t m = (pass == 0 ? hi : lo) & ~e->stuck_mask; m; m &= m - 1) {
            int qi = __builtin_ctzll(m);
            const bool held = e->q_mask >> qi & 1; /* else empty, and behind: its next packet would be Bernoulli */
            /* a unicast queue: one destination pool (or the input's pool) decides */
            uint32_t need = held ? head_need(e, (unsigned)qi) : e->cfg.saf ? (uint32_t)e->cfg.pkt_flits : 1;
            bool ok;
            switch (e->cfg.credit_mode) {
            case SIM_CREDIT_NONE: ok = true; break;
            case SIM_CREDIT_PER_DEST: ok = sim_link_can_send(e->tx, (unsigned)qi, need); break;
            default: ok = sim_link_can_send(e->tx, 0, need); break;
            }
            if (ok && (held || fill_queue(e, qi, cycle))) return qi;
            if (!ok && held) e->stuck_mask |= 1ULL << qi;
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
        e->wire_cycles = (ps + e->sched->h.dom->period_ps - 1) / e->sched->h.dom->period_ps;
    }
    return e->wire_cycles;
}

/* What a source's cycle ended with. */
enum { TEP_IDLE = 0, TEP_BUSY, TEP_BLOCKED };

/* One source in one cycle: inject, cut the message, send what the wire and
 * the credits allow. TEP_BUSY/TEP_BLOCKED if it had packets to send (keeps
 * the handler on); TEP_BLOCKED if they wait for credits. */
static int tep_source_cycle(tep *e, uint64_t cycle, sim_time_ps now)
{
    if (bernoulli_on(e) && e->next_arrival <= cycle) make_arrivals(e, cycle);
    if (e->msg && e->sending && e->msg_queued == 0) { /* cut the message lazily: one packet ahead */
        uint32_t payload;
        uint64_t mask;
        if (traffic_message_next(e->msg, &payload, &mask)) {
            if (bernoulli_on(e) && e->next_arrival <= cycle) make_all_arrivals(e, cycle);
            unsigned nflits = 1 + (payload + (uint32_t)e->cfg.flit_bytes - 1) / (uint32_t)e->cfg.flit_bytes;
            new_message_packet(e, mask, nflits, payload);
            e->msg_queued++;
        }
    }
    if (!e->sending) return TEP_IDLE;
    if (e->cur_q < 0 && !e->queued) return TEP_IDLE;
    if (e->tx_free_ps > now) return TEP_BUSY; /* the wire is still serialising */
    int qi = e->cur_q;
    if (qi < 0) {
        qi = pick_queue(e, 1, cycle);
        if (qi < 0) return TEP_BLOCKED;
    }
    tep_queue *r = &e->q[qi];
    tep_qent *q = queue_first(r);
    const uint64_t mask = qent_mask(e, q);
    const unsigned nflits = q->nflits;
    unsigned first = e->cfg.saf ? 0 : e->cur_flit;
    unsigned count = e->cfg.saf ? nflits : 1;
    if (e->cur_q >= 0 && !credits_ok(e, e->tx, mask, count)) return TEP_BLOCKED; /* mid-packet, waiting for a credit */
    sim_pkt *k = head_record(e, q);
    if (first == 0) { /* the flow order is the order packets go onto the wire */
        k->seq = e->next_seq;
        k->injected_ps = now;
        e->next_seq += nflits;
    }
    send_spending(e, e->tx, mask, count, k, count * (uint32_t)e->cfg.flit_bytes, (uint16_t)first);
    e->tx_free_ps = sim_link_tx_free_ps(e->tx); /* only this source sends on it */
    e->tx_free_cycle = cycle + wire_cycles(e, e->tx_free_ps - now);
    uint64_t copies = (uint64_t)count * dest_count(mask);
    e->copies_sent += copies;
    for (uint64_t d = mask; d; d &= d - 1) e->sent_to[__builtin_ctzll(d)] += count;
    if (first + count == nflits) {
        const bool msg = q->flags & TEP_QENT_MSG;
        e->cur_flit = 0;
        e->cur_q = -1;
        queue_pop(r);
        e->queued--;
        if (!queue_empty(r)) e->head_flits[qi] = queue_first(r)->nflits;
        if (msg) e->msg_queued--;
        if (queue_empty(r) && qi < TRAFFIC_MAX_PORTS && e->cfg.src_voq) e->q_mask &= ~(1ULL << qi);
        if (qi == TEP_MCAST_Q && queue_empty(r)) e->mc_queued = false;
        if (!e->cfg.src_voq && queue_empty(r)) e->q_mask = 0;
        e->rr = qi + 1 == TEP_QUEUES ? 0 : qi + 1;
    } else {
        e->cur_flit = first + count;
        e->cur_q = qi;
    }
    return TEP_BUSY;
}

/* The first cycle at which the source can do anything again: its next
 * Bernoulli arrival (or, while its wire is busy, the cycle the wire is free:
 * the packets arrived by then are made then, see make_arrivals), its wire
 * becoming free while it has packets queued, every cycle while it holds a
 * message; a source waiting for credits is woken by their arrival
 * (tep_credit). Cycles before it are skipped: the source would only have
 * looked. */
static void set_due(tep *e, uint64_t cycle, sim_time_ps now, bool blocked)
{
    const bool work = e->cur_q >= 0 || e->queued;
    const uint64_t bit = 1ULL << e->idx;
    tep_sched *s = e->sched;
    s->pending_mask = work && e->sending ? s->pending_mask | bit : s->pending_mask & ~bit;
    e->blocked = blocked;
    const bool wire_busy = e->tx_free_ps > now; /* free at tx_free_cycle, the first edge at or after tx_free_ps */
    uint64_t due = UINT64_MAX;
    /* A source with arrivals waiting in its generator has made every packet an
     * unbounded one could send now (pick_queue): if it is blocked, no queue has
     * credits, and only their return (tep_credit), not an arrival, lets it go. */
    if (bernoulli_on(e) && e->next_arrival > cycle)
        due = wire_busy && e->next_arrival < e->tx_free_cycle ? e->tx_free_cycle : e->next_arrival;
    if (e->msg) due = cycle + 1;
    if (work && e->sending && !blocked) {
        uint64_t ready = wire_busy ? e->tx_free_cycle : cycle + 1;
        if (ready < due) due = ready;
    }
    file_due(s, e->idx, due, cycle);
}

/* The scheduler's clock handler: the endpoints due now act, in port order.
 * It stays on while some endpoint generates Bernoulli packets, or has
 * packets to send (acted on now or skipped: a skipped endpoint is as it was
 * after its last cycle). */
static bool sched_cycle(void *ctx, uint64_t cycle)
{
    tep_sched *s = ctx;
    const sim_time_ps now = sim_now(s->k);
    bool busy = s->inject_mask != 0;
    if (s->wheel_next == UINT64_MAX) /* a source visited at every cycle from here on would make a packet drawn for an earlier cycle now */
        for (uint64_t m = s->members; m; m &= m - 1)
            if (s->ep[__builtin_ctzll(m)]->next_arrival < cycle) s->ep[__builtin_ctzll(m)]->next_arrival = cycle;
    const uint64_t due = take_due(s, cycle);
    for (uint64_t m = due; m; m &= m - 1) {
        tep *e = s->ep[__builtin_ctzll(m)];
        const int st = tep_source_cycle(e, cycle, now);
        busy |= st != TEP_IDLE;
        set_due(e, cycle, now, st == TEP_BLOCKED);
    }
    return busy || (s->pending_mask & s->members & ~due);
}

void tep_set_message(tep *e, traffic_message *m)
{
    e->msg = m;
    if (m->multicast && (m->dest_mask & (m->dest_mask - 1))) {
        if (!e->cfg.groups) sim_fatal("endpoint %d: a multicast message, and no groups to put its destinations in", e->idx);
        uint32_t members[TRAFFIC_MAX_PORTS];
        unsigned n = 0;
        for (uint64_t d = m->dest_mask; d; d &= d - 1) members[n++] = (uint32_t)__builtin_ctzll(d);
        e->mc_group = sim_groups_intern(e->cfg.groups, members, n);
        e->mc_mask = m->dest_mask;
    }
    wake(e);
    sim_clock_wake(&e->sched->h);
}

void tep_expect_message(tep *e, uint64_t bytes) { e->msg_bytes_total = bytes; }

void tep_catch_up(tep *e)
{
    if (e->sched->wheel_next == UINT64_MAX || !e->bernoulli) return; /* no cycle ran yet, or nothing more to make */
    make_arrivals(e, e->sched->wheel_next - 1);
}

/* Packets arrived by `cycle` and not made (the queues full): counted by
 * replaying the generator on copies of its PRNG and destination state, the
 * draws in make_arrivals' order, so the source is left as it was. */
static uint64_t unmade_packets(const tep *e, uint64_t cycle)
{
    sim_rng r = e->rng;
    traffic_dest d = *e->cfg.dest;
    uint64_t n = 0;
    for (uint64_t at = e->next_arrival; at <= cycle; n++) {
        at = at + 1 + bernoulli_gap(&r, e->p_packet, e->log1m_p_packet);
        (void)traffic_dest_pick(&d, e->idx, &r);
    }
    return n;
}

uint64_t tep_unmade_copies(const tep *e)
{
    if (!e->bernoulli) return e->unmade_copies_at_stop;
    if (e->sched->wheel_next == UINT64_MAX) return 0;
    return unmade_packets(e, e->sched->wheel_next - 1) * (uint64_t)e->cfg.pkt_flits; /* Bernoulli packets are unicast */
}

void tep_stop_injection(tep *e)
{
    tep_catch_up(e);
    e->unmade_copies_at_stop = tep_unmade_copies(e);
    e->injecting = false;
    e->bernoulli = false;
    e->sched->inject_mask &= ~(1ULL << e->idx);
}

uint64_t tep_queued_copies(tep *e)
{
    tep_catch_up(e);
    uint64_t s = tep_unmade_copies(e);
    for (int q = 0; q < TEP_QUEUES; q++) {
        const tep_queue *r = &e->q[q];
        for (uint32_t x = 0; x < r->len; x++) {
            const tep_qent *w = queue_at(r, x);
            unsigned left = w->nflits - (q == e->cur_q && x == 0 ? e->cur_flit : 0);
            s += (uint64_t)left * (uint64_t)__builtin_popcountll(qent_mask(e, w));
        }
    }
    return s;
}
