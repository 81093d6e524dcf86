/* One PCIe port: transaction-layer queues with the ordering rules, flow-control
 * gating and UpdateFC scheduling, the data link layer (sequence numbers, replay
 * buffer, REPLAY_TIMER, AckNak latency timer, Nak/duplicate handling, Recovery
 * on REPLAY_NUM rollover), SKP insertion, and error injection on what it sends.
 *
 * Per-TLP work is O(1) and allocation-free: packets come from a pool, queues
 * and the replay buffer are rings, timers are lazy deadlines behind one event. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port.h"
#include "sim/ring.h"

/* Per-TLP helpers with several callers, which LTO leaves out of line: a call
 * costs 10-20 instructions of register saves, a few percent of a TLP each. */
#define HOT_INLINE static inline __attribute__((always_inline))

#define FC_REFRESH_PS SIM_US(30)   /* §2.6.1.2: UpdateFC at least every 30 us per non-infinite type */

/* ---- pool ------------------------------------------------------------------ */
#define POOL_BLOCK 1024

void pcie_pool_init(pcie_pool *pool) { memset(pool, 0, sizeof *pool); }

static void pool_keep_block(pcie_pool *pool, void *b)
{
    if (pool->n_blocks == pool->cap_blocks) {
        pool->cap_blocks = pool->cap_blocks ? 2 * pool->cap_blocks : 16;
        pool->blocks = realloc(pool->blocks, pool->cap_blocks * sizeof *pool->blocks);
        if (!pool->blocks) sim_fatal("out of memory");
    }
    pool->blocks[pool->n_blocks++] = b;
}

HOT_INLINE pcie_pkt *pkt_alloc(pcie_pool *pool)
{
    if (!pool->free_pkts) {
        pcie_pkt *b = calloc(POOL_BLOCK, sizeof *b);
        if (!b) sim_fatal("out of memory");
        pool_keep_block(pool, b);
        for (size_t i = 0; i < POOL_BLOCK; i++) {
            b[i].next_free = pool->free_pkts;
            pool->free_pkts = &b[i];
        }
    }
    pcie_pkt *p = pool->free_pkts;
    pool->free_pkts = p->next_free;
    p->next_free = NULL;
    p->corrupted = 0;
    p->replayed = 0;
    p->flit = NULL;
    p->pool = pool;
    pool->live++;
    return p;
}

static pcie_flit *flit_alloc(pcie_pool *pool)
{
    if (!pool->n_free_flits) {
        pcie_flit *b = calloc(64, sizeof *b);
        if (!b) sim_fatal("out of memory");
        pool_keep_block(pool, b);
        pool->total_flits += 64;
        /* the free list must hold every flit ever made: they may all come back */
        if (pool->cap_free_flits < pool->total_flits) {
            pool->cap_free_flits = 2 * pool->total_flits;
            pool->free_flits = realloc(pool->free_flits, pool->cap_free_flits * sizeof *pool->free_flits);
            if (!pool->free_flits) sim_fatal("out of memory");
        }
        for (size_t i = 0; i < 64; i++) pool->free_flits[pool->n_free_flits++] = &b[i];
    }
    return pool->free_flits[--pool->n_free_flits];
}

/* The receiver is done with a packet: it goes back to the pool it came from
 * (the sender's), as sim/packet.h's rule for sim_pkt says. */
static void pkt_free(pcie_pkt *p)
{
    pcie_pool *pool = p->pool;
    if (p->flit) {
        if (pool->n_free_flits >= pool->cap_free_flits) sim_fatal("pcie: flit pool free list overflow");
        pool->free_flits[pool->n_free_flits++] = p->flit;
    }
    p->flit = NULL;
    p->next_free = pool->free_pkts;
    pool->free_pkts = p;
    pool->live--;
}

void pcie_pool_free(pcie_pool *pool)
{
    for (size_t i = 0; i < pool->n_blocks; i++) free(pool->blocks[i]);
    free(pool->blocks);
    free(pool->free_flits);
    memset(pool, 0, sizeof *pool);
}

/* ---- TLP queues --------------------------------------------------------------- */
static void tlpq_grow(pcie_tlpq *q)
{
    size_t cap_age = q->cap; /* two rings side by side, grown alike */
    q->v = sim_ring_grow(q->v, sizeof *q->v, q->head, q->len, &q->cap, 16);
    q->age = sim_ring_grow(q->age, sizeof *q->age, q->head, q->len, &cap_age, 16);
    q->head = 0;
}
static inline void tlpq_push(pcie_tlpq *q, const pcie_tlp *t, uint64_t age)
{
    if (q->len == q->cap) tlpq_grow(q);
    size_t i = q->head + q->len;
    if (i >= q->cap) i -= q->cap;
    q->v[i] = *t;
    q->age[i] = age;
    q->len++;
}
static inline pcie_tlp *tlpq_head(pcie_tlpq *q) { return &q->v[q->head]; }
static inline void tlpq_pop(pcie_tlpq *q)
{
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->len--;
}

/* ---- labels for waves ------------------------------------------------------------ */
static const char *cls_name[PCIE_FC_CLASSES] = { "P", "NP", "Cpl" };
static const char *tlp_name[4] = { "MWr", "MRd", "CplD", "Msg" };

void pcie_pkt_label(const void *msg, char *buf, size_t n)
{
    const pcie_pkt *p = msg;
    const char *bad = p->corrupted ? "!" : "";
    switch (p->kind) {
    case PCIE_PKT_TLP:
        snprintf(buf, n, "%s%s%s s%u %uB", bad, p->replayed ? "R:" : "", tlp_name[p->tlp.type], p->seq, p->tlp.len);
        break;
    case PCIE_PKT_ACK: snprintf(buf, n, "%sAck %u", bad, p->seq); break;
    case PCIE_PKT_NAK: snprintf(buf, n, "%sNak %u", bad, p->seq); break;
    case PCIE_PKT_UPDATEFC:
        snprintf(buf, n, "%sUpdFC-%s h%u d%u", bad, cls_name[p->fc_class], p->hdr_fc, p->data_fc);
        break;
    case PCIE_PKT_INITFC1: snprintf(buf, n, "InitFC1-%s h%u d%u", cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_INITFC2: snprintf(buf, n, "InitFC2-%s h%u d%u", cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_SKP: snprintf(buf, n, "SKP"); break;
    case PCIE_PKT_TS: snprintf(buf, n, "TS1 (Recovery)"); break;
    case PCIE_PKT_FLIT: {
        const pcie_flit *f = p->flit;
        const char *ak = p->dlp.acknak == 1 ? " Ack" : p->dlp.acknak == 2 ? " Nak" : "";
        if (f && f->payload)
            snprintf(buf, n, "%s%sFlit %u %uT%s%s", bad, p->replayed ? "R:" : "", f->seq, f->n_tlps, ak,
                     p->dlp.fc_valid ? " FC" : "");
        else
            snprintf(buf, n, "%sIdleFlit%s%s", bad, ak, p->dlp.fc_valid ? " FC" : "");
        break;
    }
    default: snprintf(buf, n, "?"); break;
    }
}

/* ---- small helpers ------------------------------------------------------------------ */
static inline sim_time_ps now_of(const pcie_port *p) { return sim_now(p->k); }

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

/* Wave updates: the check for tracing inline (it is off on the hot path), the work out of line. */
static void trace_credits_now(pcie_port *p)
{
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
        uint32_t a = pcie_fc_tx_available(&p->fct[t]);
        sim_trace_u64(p->tr, p->tv_credit[t], a == UINT32_MAX ? 0xFFFFFFFFu : a);
    }
}
static inline void trace_credits(pcie_port *p)
{
    if (p->tr) trace_credits_now(p);
}

static void trace_dll_now(pcie_port *p)
{
    sim_trace_u64(p->tr, p->tv_replay_occ, pcie_dll_tx_outstanding(&p->dtx));
    sim_trace_u64(p->tr, p->tv_next_tx_seq, p->dtx.next_transmit_seq);
    sim_trace_u64(p->tr, p->tv_ackd_seq, p->dtx.ackd_seq);
    sim_trace_u64(p->tr, p->tv_replay_num, p->dtx.replay_num);
}
static inline void trace_dll(pcie_port *p)
{
    if (p->tr) trace_dll_now(p);
}

static void stall_begin(pcie_port *p, sim_time_ps now)
{
    if (p->stalled) return;
    p->stalled = true;
    p->stall_since = now;
    sim_trace_u64(p->tr, p->tv_stall, 1);
}
static void stall_end(pcie_port *p, sim_time_ps now)
{
    if (!p->stalled) return;
    p->stalled = false;
    p->stall_ps += now - p->stall_since;
    sim_trace_u64(p->tr, p->tv_stall, 0);
}
sim_time_ps pcie_port_stall_ps(const pcie_port *p)
{
    return p->stall_ps + (p->stalled ? now_of(p) - p->stall_since : 0);
}

/* Error injection on what this port puts on the wire: a geometric skip to the
 * next bit error (O(1) per packet), a bad-link window, dropped Acks. Returns
 * the bit offsets of errors inside the packet through `first_bit` (for FEC). */
static unsigned wire_errors(pcie_port *p, uint32_t bytes, uint32_t *err_bytes, unsigned max_err)
{
    const pcie_err_cfg *e = &p->cfg.tx_err;
    unsigned n = 0;
    if (e->ber > 0) {
        int64_t bits = (int64_t)bytes * 8;
        int64_t pos = 0;
        while (p->bits_to_error < bits - pos) {
            pos += p->bits_to_error;
            if (n < max_err) err_bytes[n] = (uint32_t)(pos / 8);
            n++;
            pos++;
            /* next gap ~ Geometric(ber) */
            double u = sim_rng_double(&p->rng);
            p->bits_to_error = (int64_t)floor(log1p(-u) / log1p(-e->ber));
        }
        p->bits_to_error -= bits - pos;
    }
    return n;
}

static bool in_bad_window(const pcie_port *p, sim_time_ps t)
{
    const pcie_err_cfg *e = &p->cfg.tx_err;
    return e->bad_until_ps > e->bad_from_ps && t >= e->bad_from_ps && t < e->bad_until_ps;
}

/* Puts a packet on the wire. */
HOT_INLINE void wire_send(pcie_port *p, pcie_pkt *k, sim_time_ps now)
{
    /* only a faulty wire or a dropped Ack has anything to do here */
    if ((p->wire_faults || k->corrupted) && p->dl == PCIE_DL_ACTIVE && k->kind != PCIE_PKT_SKP && k->kind != PCIE_PKT_TS) {
        if (p->wire_faults) {
            uint32_t eb[1];
            if (wire_errors(p, k->bytes, eb, 0)) k->corrupted = 1;
            if (in_bad_window(p, now)) k->corrupted = 1;      /* a bad link corrupts TLPs and DLLPs alike */
        }
        if (k->corrupted) p->st_tx.corrupted++;      /* (or a dropped Ack) */
    }
    /* TLPs and Naks are marked: the partner's lookahead must not miss them */
    if (k->kind == PCIE_PKT_TLP || k->kind == PCIE_PKT_NAK) sim_link_send_marked(p->tx, k, k->bytes);
    else sim_link_send(p->tx, k, k->bytes);
    p->last_tx_end = sim_link_tx_free_ps(p->tx);
}

/* ---- flow control: receive side ---------------------------------------------------------- */

/* Is returning credits of class cls urgent? §2.6.1.2 requires an UpdateFC at
 * once when the transmitter (as far as this receiver knows) has no header
 * credit or less than one MPS of data credits left. This receiver also sends
 * one as soon as it holds back an eighth of its buffer (at least one MPS): a
 * credit-limited transmitter then gets its credits back in small steps
 * (returned ones do not queue for the wire behind each other). Otherwise
 * releases are coalesced for at most the recommended UpdateFC latency. `extra_hdr/data`:
 * releases still to come (a receive-buffer lookahead). */
/* The rule for one credit type, on what the transmitter still has as far as
 * this receiver knows (`view`) and what the receiver holds back (`backlog`:
 * released or still to be released, not yet advertised); fc_least and
 * fc_step are set per type at init (so that an infinite type is never urgent). */
static inline bool fc_type_urgent(const pcie_port *p, unsigned type, int64_t view, uint64_t backlog)
{
    return view < p->fc_least[type] || backlog >= p->fc_step[type];
}
HOT_INLINE bool fc_urgent_with(const pcie_port *p, unsigned cls, uint64_t extra_hdr, uint64_t extra_data)
{
    const pcie_fc_rx *h = &p->fcr[pcie_fc_hdr_type(cls)], *d = &p->fcr[pcie_fc_data_type(cls)];
    return fc_type_urgent(p, pcie_fc_hdr_type(cls), (int64_t)pcie_fc_rx_tx_view(h), h->allocated + extra_hdr - h->advertised) ||
           fc_type_urgent(p, pcie_fc_data_type(cls), (int64_t)pcie_fc_rx_tx_view(d), d->allocated + extra_data - d->advertised);
}
static bool fc_urgent(const pcie_port *p, unsigned cls) { return fc_urgent_with(p, cls, 0, 0); }

/* Credits of class cls were released: schedule an UpdateFC at once when
 * urgent, otherwise within the recommended latency (coalescing). */
HOT_INLINE void fc_released(pcie_port *p, unsigned cls)
{
    pcie_fc_rx *h = &p->fcr[pcie_fc_hdr_type(cls)], *d = &p->fcr[pcie_fc_data_type(cls)];
    if (p->fc_now & (1u << cls)) return;
    if (!pcie_fc_rx_has_update(h) && !pcie_fc_rx_has_update(d)) return;
    if (fc_urgent(p, cls)) {
        p->fc_now |= (uint8_t)(1u << cls);
        p->fc_deadline[cls] = SIM_TIME_MAX;
        kick(p);
    } else if (p->fc_deadline[cls] == SIM_TIME_MAX) {
        p->fc_deadline[cls] = pcie_port_rx_now(p) + p->phy.ack_limit_ps;
        timer_arm(p, p->fc_deadline[cls]);
    }
}

static bool class_finite(const pcie_port *p, unsigned cls)
{
    return !p->fcr[pcie_fc_hdr_type(cls)].infinite || !p->fcr[pcie_fc_data_type(cls)].infinite;
}

static void fill_fc_fields(pcie_port *p, unsigned cls, uint32_t *hf, uint32_t *df, bool mark_sent)
{
    pcie_fc_rx *h = &p->fcr[pcie_fc_hdr_type(cls)], *d = &p->fcr[pcie_fc_data_type(cls)];
    *hf = pcie_fc_rx_field(h);
    *df = pcie_fc_rx_field(d);
    if (mark_sent) {
        if (!h->infinite) h->advertised = pcie_fc_rx_limit_sent(h);
        if (!d->infinite) d->advertised = pcie_fc_rx_limit_sent(d);
        if (cls == PCIE_FC_P) p->fc_adv_moved = true;
        p->fc_last_sent[cls] = now_of(p);
        p->fc_deadline[cls] = SIM_TIME_MAX;
        if (p->fc_refresh_due & (1u << cls)) {
            p->fc_refresh_sent++;
            if (cls == PCIE_FC_P) p->fc_refresh_sent_p++;
        }
        p->fc_refresh_due &= (uint8_t)~(1u << cls);
        p->fc_now &= (uint8_t)~(1u << cls);
        timer_arm(p, p->fc_last_sent[cls] + FC_REFRESH_PS);
    }
}

/* ---- flow control: transmit side -------------------------------------------------------------- */
/* The credit type whose round trip is measured for a class: data credits for
 * the classes that carry data (they bind first and return at TLP granularity
 * even with Scaled FC), header credits for non-posted requests. */
static unsigned loop_type(const pcie_port *p, unsigned cls)
{
    unsigned ht = pcie_fc_hdr_type(cls), dt = pcie_fc_data_type(cls);
    if (cls == PCIE_FC_NP) return !p->fct[ht].infinite ? ht : dt;
    return !p->fct[dt].infinite ? dt : ht;
}
/* Caches loop_type (it changes only when InitFC sets which types are infinite). */
static void loop_types_update(pcie_port *p)
{
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) p->loop_probe[c] = (uint8_t)loop_type(p, c);
}

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

/* (One UpdateFC returns many TLPs' credits: the loop works on locals.) */
static void loop_returned(pcie_port *p, unsigned cls, uint32_t old_limit, uint32_t new_limit, uint32_t mask)
{
    uint64_t returned = p->loop_returned[cls] += (new_limit - old_limit) & mask;
    sim_time_ps now = now_of(p);
    const pcie_loop_ent *ring = p->loop[cls];
    size_t head = p->loop_head[cls], len = p->loop_len[cls];
    double sum_ns = p->loop_sum_ns, min_ns = p->loop_min_ns;
    uint64_t n = p->loop_n;
    for (; len && ring[head].cum <= returned; len--) {
        double ns = (double)(now - ring[head].sent_ps) / 1000.0;
        sum_ns += ns;
        if (n == 0 || ns < min_ns) min_ns = ns;
        n++;
        head = (head + 1) % PCIE_LOOP_RING;
    }
    p->loop_head[cls] = head;
    p->loop_len[cls] = len;
    p->loop_sum_ns = sum_ns;
    p->loop_min_ns = min_ns;
    p->loop_n = n;
}

static void fc_update_received(pcie_port *p, unsigned cls, uint32_t hf, uint32_t df)
{
    unsigned ht = pcie_fc_hdr_type(cls), dt = pcie_fc_data_type(cls);
    unsigned scale = p->cfg.fc_scale;
    unsigned probe = p->loop_probe[cls];
    uint32_t old = p->fct[probe].limit;
    pcie_fc_tx_updatefc(&p->fct[ht], hf, scale);
    pcie_fc_tx_updatefc(&p->fct[dt], df, scale);
    if (!p->fct[probe].infinite) loop_returned(p, cls, old, p->fct[probe].limit, p->fct[probe].mask);
    trace_credits(p);
    kick(p);
}

/* ---- receive buffer -------------------------------------------------------------------------- */
HOT_INLINE void rx_deliver(pcie_port *p, const pcie_tlp *t)
{
    unsigned cls = t->fc_class;
    /* conservation above the DLL: each class arrives exactly once, in order */
    if (t->serial == p->rx_expect[cls]) p->rx_expect[cls]++;
    else if (t->serial < p->rx_expect[cls]) p->rx_dup++;
    else {
        p->rx_reorder++;
        p->rx_expect[cls] = t->serial + 1;
    }
    pcie_fc_rx_release(&p->fcr[pcie_fc_hdr_type(cls)], 1);
    pcie_fc_rx_release(&p->fcr[pcie_fc_data_type(cls)], t->data_credits);
    sim_time_ps now = pcie_port_rx_now(p);
    uint32_t pay = pcie_tlp_payload(t);
    pcie_dir_stats *s = &p->st_rx;
    if (pay) {
        if (!s->payload_delivered) {
            s->first_delivery_ps = now;
            s->first_delivery_bytes = pay;
        }
        s->payload_delivered += pay;
        s->last_delivery_ps = now;
    }
    p->app.deliver(p->app.ctx, p, t);
    fc_released(p, cls);
}

/* Lets every TLP whose receive-buffer time is <= t leave, each at its own time. */
HOT_INLINE void depart_due(pcie_port *p, sim_time_ps t)
{
    p->departing = true;
    while (p->rxb_len && p->rxb[p->rxb_head].done_ps <= t) {
        const pcie_rxent *e = &p->rxb[p->rxb_head];   /* stays valid: nothing appends during a delivery */
        p->rxb_head = p->rxb_head + 1 == p->rxb_cap ? 0 : p->rxb_head + 1;
        p->rxb_len--;
        if (e->timely) p->rxb_timely--;
        p->rxb_pend_hdr--;
        p->rxb_pend_data -= e->tlp.data_credits;
        p->rx_now = e->done_ps;
        rx_deliver(p, &e->tlp);
    }
    p->rx_now = 0;
    p->departing = false;
    sim_trace_u64(p->tr, p->tv_rxbuf, p->rxb_len);
}
/* Most calls find nothing due: that test is inline, and then all that
 * depart_due would do is reset rx_now (the buffer's traced size is as it was). */
static inline void depart_until(pcie_port *p, sim_time_ps t)
{
    if (p->departing) return;
    if (p->rxb_len && p->rxb[p->rxb_head].done_ps <= t) depart_due(p, t);
    else p->rx_now = 0;
}

/* Brings the receive side up to now: deferred arrivals (each after the
 * departures before it), then the departures that are due. */
void pcie_port_settle(pcie_port *p)
{
    if (p->settling) return;
    p->settling = true;
    if (p->defer_arrivals) sim_link_take_arrived(p->rx);
    depart_until(p, now_of(p));
    p->settling = false;
}

/* Schedules the next receive-buffer departure. A departure needs an event at
 * its own time when it starts something (a completion, a tag refill, the end
 * of the run) or its credit release would be urgent (the transmitter is out of
 * credits: UpdateFC at once). Otherwise a posted TLP may leave at the next
 * activation of this port (arrival, transmitter, timer), which settles first
 * and replays the departure at its own time: what decides urgency (credits
 * advertised and received) only changes in those activations, and the timer
 * is armed to wake no later than the coalesced UpdateFC this release would
 * start. So the outcome is the same as with one event per TLP. */
static void rx_arm_departure(pcie_port *p)
{
    if (!p->rxb_len) return;
    const pcie_rxent *e = &p->rxb[p->rxb_head];
    bool lazy = p->rx_lazy && p->rxb_timely == 0;
    if (lazy) lazy = !fc_urgent_with(p, PCIE_FC_P, p->rxb_pend_hdr, p->rxb_pend_data);
    if (lazy) timer_arm(p, e->done_ps + p->phy.ack_limit_ps);
    else sim_event_notify_at(&p->drain_ev, e->done_ps - now_of(p));
}

/* Deferred arrivals (sim_link_defer_until). A posted TLP that rx_deferrable
 * accepted may wait in the link until this port's next activation, which
 * processes it at its arrival time, when its arrival can start nothing at its
 * own time: the DLL accepts it in sequence (error-free run); the AckNak timer
 * is already running, so it starts no timer; its departure from the receive
 * buffer is lazy and its credit release not urgent (rx_deferrable's bound);
 * and the port's timer event, which runs at or before the Ack deadline, is an
 * activation that takes it. Everything else the arrival changes is only read
 * in this port's activations, which all settle first. Ends every activation. */
static bool posted_release_calm(const pcie_port *p);
static void rx_defer_horizon(pcie_port *p)
{
    if (p->fc_adv_moved) {   /* the bound in rx_deferrable is better now */
        p->fc_adv_moved = false;
        if (posted_release_calm(p)) {
            p->rejudging = true;
            sim_link_rejudge(p->rx);
            p->rejudging = false;
        }
    }
    bool ok = p->dl == PCIE_DL_ACTIVE && p->ack_deadline != SIM_TIME_MAX;
    sim_link_defer_until(p->rx, ok ? p->timer_at : 0);
}

static void rx_arm(pcie_port *p)
{
    rx_arm_departure(p);
    if (p->defer_arrivals) rx_defer_horizon(p);
}

/* Called by the link when a packet towards this port is sent, in send order,
 * and on a rejudge for each one not yet accepted: may it wait for this port's
 * next activation (see rx_defer_horizon)? Its credit release must not be
 * urgent even counting every posted TLP on the wire (when sent: every one
 * ahead of it and itself; on a rejudge also those behind it, which only
 * makes the bound stricter): the credits the transmitter has left can then
 * only be more (advertised only grows), what this receiver holds back no more. */
static bool rx_deferrable(void *ctx, sim_link *l, const void *msg)
{
    (void)l;
    pcie_port *p = ctx;
    const pcie_pkt *k = msg;
    if (k->kind != PCIE_PKT_TLP || k->tlp.fc_class != PCIE_FC_P) return false;
    if (!p->rejudging) {   /* posted credits on the wire towards this port */
        p->defer_wire_hdr += 1;
        p->defer_wire_data += k->tlp.data_credits;
    }
    if (k->corrupted || k->replayed || !p->app.timely || p->app.timely(p->app.ctx, &k->tlp)) return false;
    return posted_release_calm(p);
}

/* rx_deferrable's bound: releasing the posted credits of every TLP buffered
 * or on the wire towards this port would not be urgent. */
static bool posted_release_calm(const pcie_port *p)
{
    const pcie_fc_rx *h = &p->fcr[PCIE_FC_PH], *d = &p->fcr[PCIE_FC_PD];
    int64_t hv = (int64_t)h->advertised - (int64_t)(h->received + p->defer_wire_hdr);
    int64_t dv = (int64_t)d->advertised - (int64_t)(d->received + p->defer_wire_data);
    return !fc_type_urgent(p, PCIE_FC_PH, hv, h->allocated + p->rxb_pend_hdr + p->defer_wire_hdr - h->advertised) &&
           !fc_type_urgent(p, PCIE_FC_PD, dv, d->allocated + p->rxb_pend_data + p->defer_wire_data - d->advertised);
}

static void drain_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    rx_arm(p);
}

/* An accepted TLP enters the receive buffer; it leaves rx_ps after the previous one. */
HOT_INLINE void rx_accept(pcie_port *p, const pcie_tlp *t)
{
    unsigned cls = t->fc_class;
    bool ok = pcie_fc_rx_receive(&p->fcr[pcie_fc_hdr_type(cls)], 1);
    ok = pcie_fc_rx_receive(&p->fcr[pcie_fc_data_type(cls)], t->data_credits) && ok;
    if (!ok) sim_fatal("pcie %s: receive buffer overflow: a %s TLP arrived beyond the advertised credits", p->name,
                       cls_name[cls]);
    sim_time_ps now = pcie_port_rx_now(p);
    if (p->cfg.rx_ps == 0) {
        rx_deliver(p, t);
        return;
    }
    sim_time_ps start = p->rx_busy_until > now ? p->rx_busy_until : now;
    p->rx_busy_until = start + p->cfg.rx_ps;
    if (p->rxb_len == p->rxb_cap) {
        p->rxb = sim_ring_grow(p->rxb, sizeof *p->rxb, p->rxb_head, p->rxb_len, &p->rxb_cap, 64);
        p->rxb_head = 0;
    }
    size_t slot = p->rxb_head + p->rxb_len;
    if (slot >= p->rxb_cap) slot -= p->rxb_cap;
    pcie_rxent *e = &p->rxb[slot];
    e->tlp = *t;
    e->done_ps = p->rx_busy_until;
    /* Only lazy departures ask; a TLP that waited in the link (deferred
     * arrival) was judged not timely by rx_deferrable already. */
    bool waited = now < now_of(p);
    e->timely = !p->rx_lazy || (!waited && (!p->app.timely || p->app.timely(p->app.ctx, t)));
    if (e->timely) p->rxb_timely++;
    p->rxb_pend_hdr++;
    p->rxb_pend_data += t->data_credits;
    p->rxb_len++;
    sim_trace_u64(p->tr, p->tv_rxbuf, p->rxb_len);      /* the caller (port_recv) arms the departure */
}

/* ---- data link layer: transmit side ---------------------------------------------------------- */
static void enter_recovery(pcie_port *p, sim_time_ps now);

static void start_replay(pcie_port *p, enum pcie_acknak_result r, sim_time_ps now)
{
    p->replays_since_progress++;
    p->replay_left = pcie_dll_tx_outstanding(&p->dtx);
    p->replaying = p->replay_left > 0;
    p->replay_deadline = SIM_TIME_MAX;
    p->replay_timer_restart = true;
    if (r == PCIE_ACKNAK_RETRAIN) {
        if (p->replays_since_progress > p->replays_before_retrain_max)
            p->replays_before_retrain_max = p->replays_since_progress;
        p->retrains++;
        enter_recovery(p, now);
    }
    trace_dll(p);
    kick(p);
}

static void acknak_received(pcie_port *p, uint16_t seq, bool nak)
{
    sim_time_ps now = now_of(p);
    uint16_t purged;
    enum pcie_acknak_result r = pcie_dll_tx_acknak(&p->dtx, seq, nak, &purged);
    sim_trace_strf(p->tr, p->tv_acknak_rx, "%s %u", nak ? "Nak" : "Ack", seq);
    if (nak) p->naks_received++; else p->acks_received++;
    if (r == PCIE_ACKNAK_INVALID) return;
    if (purged) {
        p->replays_since_progress = 0;
        if (p->replaying) {
            uint16_t out = pcie_dll_tx_outstanding(&p->dtx);
            if (p->replay_left > out) p->replay_left = out;
            if (!p->replay_left) p->replaying = false;
        }
        if (pcie_dll_tx_outstanding(&p->dtx)) p->replay_deadline = now + p->phy.replay_timeout_ps;
        else p->replay_deadline = SIM_TIME_MAX;
        /* timer_at only moves later here: the pending event re-arms itself lazily */
    }
    if (r == PCIE_ACKNAK_REPLAY || r == PCIE_ACKNAK_RETRAIN) start_replay(p, r, now);
    trace_dll(p);
    if (purged) {
        kick(p);
        if (!pcie_dll_tx_outstanding(&p->dtx) && p->app.drained) p->app.drained(p->app.ctx, p);
    }
}

static void replay_timer_start(pcie_port *p, sim_time_ps tx_end)
{
    if (p->replay_timer_restart || p->replay_deadline == SIM_TIME_MAX) {
        p->replay_timer_restart = false;
        p->replay_deadline = tx_end + p->phy.replay_timeout_ps;
        timer_arm(p, p->replay_deadline);
    }
}

static void replay_timeout(pcie_port *p, sim_time_ps now)
{
    if (!pcie_dll_tx_outstanding(&p->dtx)) return;
    p->replay_timeouts++;
    start_replay(p, pcie_dll_tx_replay_event(&p->dtx), now);
}

/* Recovery (link retrain): both transmitters stop for retrain_ps; the peer
 * learns it from the training set this port sends first. */
static void enter_recovery(pcie_port *p, sim_time_ps now)
{
    sim_time_ps start = sim_link_tx_free_ps(p->tx);
    pcie_pkt *k = pkt_alloc(&p->pool);
    k->kind = PCIE_PKT_TS;
    k->bytes = 16 * p->phy.lanes;
    sim_time_ps until = start + (sim_time_ps)((double)k->bytes * 1000.0 / p->phy.raw_GBps) + p->cfg.retrain_ps;
    k->until_ps = until;
    sim_link_send_marked(p->tx, k, k->bytes);   /* a training set is marked, like TLPs and Naks */
    p->recovery_until = until;
    if (p->replay_deadline != SIM_TIME_MAX) p->replay_deadline = until + p->phy.replay_timeout_ps;
    sim_trace_u64(p->tr, p->tv_recovery, 1);
    (void)now;
}

/* ---- transmit arbiter -------------------------------------------------------------------------- */
static uint32_t tlp_wire_bytes(const pcie_tlp *t) { return PCIE_NFM_FRAMING_BYTES + pcie_tlp_bytes(t); }

HOT_INLINE void send_tlp(pcie_port *p, const pcie_tlp *t, uint16_t seq, bool replayed, sim_time_ps now)
{
    pcie_pkt *k = pkt_alloc(&p->pool);
    k->kind = PCIE_PKT_TLP;
    k->seq = seq;
    k->tlp = *t;                  /* the wire carries its own copy: the receiver never reads this replay buffer */
    k->replayed = replayed;
    k->bytes = tlp_wire_bytes(t);
    if (replayed) {
        p->st_tx.tlps_replayed++;
        p->st_tx.tlp_replay_wire_bytes += k->bytes;
    } else {
        p->st_tx.tlps_new++;
        p->st_tx.tlp_wire_bytes += k->bytes;
    }
    wire_send(p, k, now);
    replay_timer_start(p, p->last_tx_end);
}

static void send_dllp(pcie_port *p, enum pcie_pkt_kind kind, unsigned cls, sim_time_ps now)
{
    pcie_pkt *k = pkt_alloc(&p->pool);
    k->kind = (uint8_t)kind;
    k->bytes = PCIE_DLLP_BYTES;
    pcie_dir_stats *s = &p->st_tx;
    s->dllps++;
    s->dllp_bytes += PCIE_DLLP_BYTES;
    switch (kind) {
    case PCIE_PKT_ACK:
    case PCIE_PKT_NAK:
        k->seq = pcie_dll_rx_ack_seq(&p->drx);
        p->last_acknak_sent = k->seq;
        p->ack_now = false;
        p->ack_deadline = SIM_TIME_MAX;
        if (kind == PCIE_PKT_NAK) {
            p->nak_now = false;
            s->naks++;
        } else {
            s->acks++;
            p->ack_sent_count++;
            uint32_t every = p->cfg.tx_err.drop_ack_every;
            if (every && p->ack_sent_count % every == 0) {
                k->corrupted = 1;          /* lost on the wire: the receiver's CRC check drops it */
                s->dropped_acks++;
            }
        }
        sim_trace_strf(p->tr, p->tv_acknak_tx, "%s %u", kind == PCIE_PKT_NAK ? "Nak" : "Ack", k->seq);
        break;
    case PCIE_PKT_UPDATEFC:
        k->fc_class = (uint8_t)cls;
        fill_fc_fields(p, cls, &k->hdr_fc, &k->data_fc, true);
        s->updatefcs++;
        break;
    case PCIE_PKT_INITFC1:
    case PCIE_PKT_INITFC2:
        k->fc_class = (uint8_t)cls;
        fill_fc_fields(p, cls, &k->hdr_fc, &k->data_fc, false);
        s->initfcs++;
        break;
    default: sim_fatal("pcie %s: not a DLLP kind %d", p->name, kind);
    }
    wire_send(p, k, now);
}

static void send_skp(pcie_port *p, sim_time_ps now)
{
    pcie_pkt *k = pkt_alloc(&p->pool);
    k->kind = PCIE_PKT_SKP;
    k->bytes = p->phy.skp_bytes;
    p->st_tx.skps++;
    p->st_tx.skp_bytes += k->bytes;
    wire_send(p, k, now);
}

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

static bool skp_due(pcie_port *p, sim_time_ps now)
{
    if (now < p->skp_next) return false;
    sim_time_ps iv = p->phy.skp_interval_ps;
    if (now > p->skp_next && p->last_tx_end <= p->skp_next) {
        /* the wire was idle when the SKP was due: it went out in the idle time
         * (not when the wire frees exactly as it falls due: then it is sent now,
         * else a transmitter whose packets end on the SKP grid, as Gen6 x8's
         * flits do, would never send one) */
        uint64_t n = (now - p->skp_next) / iv + 1;
        p->skp_next += n * iv;
        return false;
    }
    p->skp_next += iv;
    return true;
}

/* Sends the Nak, Ack and UpdateFCs that are due, back to back. */
static bool tx_dllps(pcie_port *p, sim_time_ps now)
{
    bool sent = false;
    for (;;) {
        if (p->nak_now) send_dllp(p, PCIE_PKT_NAK, 0, now);
        else if (p->ack_now) send_dllp(p, PCIE_PKT_ACK, 0, now);
        else if (p->fc_now) send_dllp(p, PCIE_PKT_UPDATEFC, (unsigned)__builtin_ctz(p->fc_now), now);
        else return sent;
        sent = true;
    }
}

/* Lookahead: nothing can change this transmitter's next choices before
 * `until` when no TLP, Nak or training set is on its way to it (whatever the
 * peer sends from now on arrives after now + wire latency), its own timers
 * and SKP schedule lie beyond, and no receive work is pending. Acks and
 * UpdateFCs on the way only add credits, which matters only to a TLP that is
 * blocked, and a blocked TLP ends the batch. So the batch sends exactly what
 * one-TLP-per-wake would, at the same wire times. */
static sim_time_ps lookahead_until(const pcie_port *p, sim_time_ps now)
{
    /* the link towards this port counts the marked messages on their way (wire_send, enter_recovery) */
    if (!p->lookahead || p->rxb_len || sim_link_marked_in_flight(p->rx)) return now;
    sim_time_ps until = now + p->cfg.wire_ps;
    if (p->skp_next < until) until = p->skp_next;
    if (p->timer_at < until) until = p->timer_at;
    return until;
}

HOT_INLINE bool tx_new_tlp(pcie_port *p, sim_time_ps now, sim_time_ps decide)
{
    if (!pcie_dll_tx_may_send_new(&p->dtx)) return false;
    bool credit_blocked;
    int c = pick_new(p, &credit_blocked);
    if (c < 0) {
        if (credit_blocked) stall_begin(p, decide);
        return false;
    }
    stall_end(p, decide);
    p->tl_now = decide;
    uint16_t seq = pcie_dll_tx_assign(&p->dtx);
    pcie_tlp *t = &p->replay[seq];            /* the replay buffer keeps it until acknowledged */
    take_new(p, (unsigned)c, t, decide);
    uint32_t occ = pcie_dll_tx_outstanding(&p->dtx);
    if (occ > p->max_replay_occ) p->max_replay_occ = occ;
    send_tlp(p, t, seq, false, now);
    trace_dll(p);
    if (p->app.refill) p->app.refill(p->app.ctx, p, (unsigned)c);
    p->tl_now = 0;
    return true;
}

static bool tx_one_nfm(pcie_port *p, sim_time_ps now)
{
    if (skp_due(p, now)) {
        send_skp(p, now);
        return true;
    }
    if (p->dl != PCIE_DL_ACTIVE) {
        if (p->initfc_to_send) {
            unsigned c = (unsigned)__builtin_ctz(p->initfc_to_send);
            p->initfc_to_send &= (uint8_t)~(1u << c);
            send_dllp(p, p->dl == PCIE_DL_FC_INIT1 ? PCIE_PKT_INITFC1 : PCIE_PKT_INITFC2, c, now);
            return true;
        }
        return false;
    }
    /* recommended priority: Nak > Ack > UpdateFC > replay > new TLPs */
    if (tx_dllps(p, now)) return true;
    if (p->replaying) {
        uint16_t seq = pcie_seq_sub(p->dtx.sp, p->dtx.next_transmit_seq, (uint16_t)p->replay_left);
        if (--p->replay_left == 0) p->replaying = false;
        send_tlp(p, &p->replay[seq], seq, true, now);
        return true;
    }
    /* a new TLP, then more in this wake while the lookahead (judged after the
     * first) says nothing can intervene */
    sim_time_ps decide = now, until = 0;
    for (bool first = true;; first = false) {
        if (!tx_new_tlp(p, now, decide)) return !first;
        if (first) until = lookahead_until(p, now);
        decide = p->last_tx_end;   /* the wire is free again when this TLP's last byte left */
        if (decide >= until || p->replaying || p->nak_now || p->ack_now || p->fc_now) return true;
    }
}

/* Something for the transmitter to do once the wire is free? */
static bool tx_has_work(const pcie_port *p)
{
    return p->nak_now || p->ack_now || p->fc_now || p->replaying || p->initfc_to_send || p->q_busy ||
           (p->phy.flit_mode && p->fa_has_carry);
}

static bool tx_one_flit(pcie_port *p, sim_time_ps now);

static void tx_run_body(pcie_port *p)
{
    sim_time_ps now = now_of(p);
    if (now < p->recovery_until) {
        sim_event_notify_at(&p->tx_ev, p->recovery_until - now);
        return;
    }
    if (p->recovery_until) {
        p->recovery_until = 0;
        sim_trace_u64(p->tr, p->tv_recovery, 0);
    }
    sim_time_ps free_ps = sim_link_tx_free_ps(p->tx);
    if (free_ps > now) {
        sim_event_notify_at(&p->tx_ev, free_ps - now);
        return;
    }
    p->in_tx = true;
    p->tx_wakes++;
    bool sent = p->phy.flit_mode ? tx_one_flit(p, now) : tx_one_nfm(p, now);
    p->in_tx = false;
    if (sent && tx_has_work(p)) sim_event_notify_at(&p->tx_ev, sim_link_tx_free_ps(p->tx) - now);
}

static void tx_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    tx_run_body(p);
    rx_arm(p);
}

/* ---- timers ------------------------------------------------------------------------------------ */
static void timer_run_body(pcie_port *p);
static void timer_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    timer_run_body(p);
    rx_arm(p);
}

static void timer_run_body(pcie_port *p)
{
    sim_time_ps now = now_of(p);
    p->timer_at = SIM_TIME_MAX;
    /* Coalesced Acks and UpdateFCs go out together: when either limit is
     * reached, the other pending one is sent with it (earlier is allowed). */
    bool flush = p->ack_deadline <= now;
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) flush = flush || p->fc_deadline[c] <= now;
    if (flush) {
        if (p->ack_deadline != SIM_TIME_MAX) {
            p->ack_deadline = SIM_TIME_MAX;
            if (pcie_dll_rx_ack_seq(&p->drx) != p->last_acknak_sent) {
                p->ack_now = true;
                kick(p);
            }
        }
        for (unsigned c = 0; c < PCIE_FC_CLASSES; c++)
            if (p->fc_deadline[c] != SIM_TIME_MAX) p->fc_deadline[c] = now;
    }
    if (p->replay_deadline <= now && now >= p->recovery_until) {
        p->replay_deadline = SIM_TIME_MAX;
        replay_timeout(p, now);
    }
    sim_time_ps next = SIM_TIME_MAX;
    if (p->dl == PCIE_DL_ACTIVE) {
        for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
            if (!class_finite(p, c)) continue;
            if (p->fc_deadline[c] <= now) {
                p->fc_deadline[c] = SIM_TIME_MAX;
                const pcie_fc_rx *h = &p->fcr[pcie_fc_hdr_type(c)], *d = &p->fcr[pcie_fc_data_type(c)];
                if (pcie_fc_rx_has_update(h) || pcie_fc_rx_has_update(d)) {
                    p->fc_now |= (uint8_t)(1u << c);
                    kick(p);
                }
            }
            if (!(p->fc_now & (1u << c)) && p->fc_last_sent[c] + FC_REFRESH_PS <= now) {
                p->fc_now |= (uint8_t)(1u << c);
                p->fc_refresh_due |= (uint8_t)(1u << c);
                kick(p);
            }
            if (p->fc_deadline[c] < next) next = p->fc_deadline[c];
            if (!(p->fc_now & (1u << c)) && p->fc_last_sent[c] + FC_REFRESH_PS < next) next = p->fc_last_sent[c] + FC_REFRESH_PS;
        }
    }
    if (p->ack_deadline < next) next = p->ack_deadline;
    if (p->flit_ack_deadline <= now) {
        p->flit_ack_deadline = SIM_TIME_MAX;
        kick(p);
    }
    if (p->flit_ack_deadline < next) next = p->flit_ack_deadline;
    if (p->replay_deadline < next) next = p->replay_deadline < p->recovery_until ? p->recovery_until : p->replay_deadline;
    if (next != SIM_TIME_MAX) timer_arm(p, next);
}

/* ---- receive ------------------------------------------------------------------------------------- */
static void go_active(pcie_port *p)
{
    if (p->dl == PCIE_DL_ACTIVE) return;
    p->dl = PCIE_DL_ACTIVE;
    p->active_ps = now_of(p);
    sim_time_ps now = p->active_ps;
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
        p->fc_last_sent[c] = now;
        if (class_finite(p, c)) timer_arm(p, now + FC_REFRESH_PS);
    }
    kick(p);
}

static void initfc_received(pcie_port *p, const pcie_pkt *k)
{
    unsigned c = k->fc_class;
    if (!(p->initfc_rcvd & (1u << c))) {
        p->initfc_rcvd |= (uint8_t)(1u << c);
        pcie_fc_tx_initfc(&p->fct[pcie_fc_hdr_type(c)], k->hdr_fc, p->cfg.fc_scale);
        pcie_fc_tx_initfc(&p->fct[pcie_fc_data_type(c)], k->data_fc, p->cfg.fc_scale);
        loop_types_update(p);
        trace_credits(p);
    }
    if (p->dl == PCIE_DL_FC_INIT1 && p->initfc_rcvd == 7) {
        p->dl = PCIE_DL_FC_INIT2;   /* FC_INIT2: send InitFC2 for every class */
        p->initfc_to_send = 7;
        kick(p);
    } else if (p->dl == PCIE_DL_FC_INIT2 && k->kind == PCIE_PKT_INITFC2) {
        go_active(p);
    }
}

static bool forced_nak(pcie_port *p)
{
    uint32_t every = p->rx_nak_every;
    if (!every) return false;
    p->rx_tlp_count++;
    if (p->rx_tlp_count % every == 0) {
        p->st_rx.forced_naks++;
        return true;
    }
    return false;
}

static void rx_tlp_nfm(pcie_port *p, pcie_pkt *k)
{
    if (p->dl == PCIE_DL_FC_INIT2) go_active(p);
    bool crc_ok = !k->corrupted && !forced_nak(p);
    enum pcie_rx_verdict v = pcie_dll_rx_tlp(&p->drx, k->seq, crc_ok);
    sim_trace_u64(p->tr, p->tv_next_rcv_seq, p->drx.next_rcv_seq);
    switch (v) {
    case PCIE_RX_ACCEPT:
        if (p->ack_deadline == SIM_TIME_MAX) {
            if (p->rx_now != now_of(p)) sim_fatal("pcie %s: a deferred TLP would start the AckNak timer", p->name);
            p->ack_deadline = now_of(p) + p->phy.ack_limit_ps;
            timer_arm(p, p->ack_deadline);
        }
        rx_accept(p, &k->tlp);
        break;
    case PCIE_RX_DUPLICATE:
        if (p->rx_now != now_of(p)) sim_fatal("pcie %s: a deferred TLP was not accepted", p->name);
        p->ack_now = true;
        kick(p);
        break;
    case PCIE_RX_NAK:
        if (p->rx_now != now_of(p)) sim_fatal("pcie %s: a deferred TLP was not accepted", p->name);
        p->nak_now = true;
        kick(p);
        break;
    case PCIE_RX_DISCARD: break;
    }
}

static void rx_flit(pcie_port *p, pcie_pkt *k);

static void port_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    pcie_port *p = ctx;
    pcie_pkt *k = msg;
    sim_time_ps arrival = sim_link_arrival_ps(l);    /* earlier than now when it was deferred */
    depart_until(p, arrival);
    if (k->kind == PCIE_PKT_TLP && p->defer_arrivals && k->tlp.fc_class == PCIE_FC_P) {
        p->defer_wire_hdr -= 1;
        p->defer_wire_data -= k->tlp.data_credits;
    }
    p->rx_now = arrival;
    switch (k->kind) {
    case PCIE_PKT_TLP: rx_tlp_nfm(p, k); break;
    case PCIE_PKT_FLIT: rx_flit(p, k); break;
    case PCIE_PKT_ACK:
    case PCIE_PKT_NAK:
        if (!k->corrupted) acknak_received(p, k->seq, k->kind == PCIE_PKT_NAK);
        break;
    case PCIE_PKT_UPDATEFC:
        if (p->dl == PCIE_DL_FC_INIT2) go_active(p);
        if (!k->corrupted) fc_update_received(p, k->fc_class, k->hdr_fc, k->data_fc);
        break;
    case PCIE_PKT_INITFC1:
    case PCIE_PKT_INITFC2: initfc_received(p, k); break;
    case PCIE_PKT_SKP: break;
    case PCIE_PKT_TS:
        /* the peer entered Recovery: stop transmitting until it ends */
        if (k->until_ps > p->recovery_until) {
            p->recovery_until = k->until_ps;
            if (p->replay_deadline != SIM_TIME_MAX) p->replay_deadline = k->until_ps + p->phy.replay_timeout_ps;
            sim_trace_u64(p->tr, p->tv_recovery, 1);
            kick(p);
        }
        break;
    default: sim_fatal("pcie %s: unknown packet kind %u", p->name, k->kind);
    }
    p->rx_now = 0;
    pkt_free(k);                  /* back to the sender's pool */
    if (!p->settling) rx_arm(p);   /* a deferred arrival: the activation taking it arms at its end */
}

/* ---- Flit Mode (Gen6) -------------------------------------------------------------------------- */
#include "models/pcie/pcie_flit.inc"

/* ---- setup ------------------------------------------------------------------------------------- */
void pcie_port_init(pcie_port *p, sim_kernel *k, const char *name, const pcie_port_cfg *cfg, unsigned dir,
                    sim_link *tx, sim_link *rx, uint64_t seed, sim_trace *tr)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->name = name;
    p->cfg = *cfg;
    pcie_phy_init(&p->phy, cfg->gen, cfg->lanes, cfg->mps, cfg->wire_ps);
    const pcie_phy *phy = &p->phy;
    pcie_pool_init(&p->pool);
    p->dir = dir;
    p->tx = tx;
    p->rx = rx;
    p->tr = tr;
    unsigned seq_bits = phy->flit_mode ? PCIE_SEQ_BITS_FLIT : PCIE_SEQ_BITS_NFM;
    pcie_dll_tx_init(&p->dtx, seq_bits);
    pcie_dll_rx_init(&p->drx, seq_bits);
    p->last_acknak_sent = pcie_dll_rx_ack_seq(&p->drx);
    if (phy->flit_mode) {
        p->replay_flits = calloc(1u << seq_bits, sizeof *p->replay_flits);
        if (!p->replay_flits) sim_fatal("out of memory");
    } else {
        p->replay = calloc(1u << seq_bits, sizeof *p->replay);
        if (!p->replay) sim_fatal("out of memory");
    }
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
        pcie_fc_tx_init(&p->fct[t], pcie_fc_field_bits(t, cfg->fc_scale));
        pcie_fc_rx_init(&p->fcr[t], t, cfg->adv[t], cfg->fc_scale);   /* its own advertisement */
        p->fc_least[t] = pcie_fc_is_data(t) ? cfg->mps / PCIE_FC_UNIT_BYTES : 1;
        p->fc_step[t] = p->fcr[t].initial / 8 > (uint64_t)p->fc_least[t] ? p->fcr[t].initial / 8 : (uint64_t)p->fc_least[t];
        if (p->fcr[t].infinite) {   /* what the transmitter has left is unbounded, nothing is held back */
            p->fc_least[t] = INT64_MIN;
            p->fc_step[t] = UINT64_MAX;
        }
    }
    loop_types_update(p);
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
        p->fc_deadline[c] = SIM_TIME_MAX;
        p->loop[c] = calloc(PCIE_LOOP_RING, sizeof *p->loop[c]);
        if (!p->loop[c]) sim_fatal("out of memory");
    }
    p->ack_deadline = p->replay_deadline = p->flit_ack_deadline = SIM_TIME_MAX;
    p->rx_lazy = !cfg->no_lookahead && !tr;
    p->lookahead = p->rx_lazy && !phy->flit_mode && cfg->link_error_free;
    p->defer_arrivals = p->lookahead && p->rx_lazy && cfg->rx_ps > 0;
    p->wire_faults = cfg->tx_err.ber > 0 || cfg->tx_err.bad_until_ps > cfg->tx_err.bad_from_ps;
    p->rx_nak_every = cfg->rx_nak_every;
    p->timer_at = SIM_TIME_MAX;
    p->dl = PCIE_DL_FC_INIT1;
    p->initfc_to_send = 7;
    p->skp_next = phy->skp_interval_ps;
    sim_rng_seed_stream(&p->rng, seed, 0x9C1E0000u + dir);
    if (cfg->tx_err.ber > 0)
        p->bits_to_error = (int64_t)floor(log1p(-sim_rng_double(&p->rng)) / log1p(-cfg->tx_err.ber));
    sim_event_init(&p->tx_ev, k, "pcie_tx");
    sim_event_init(&p->timer_ev, k, "pcie_timer");
    sim_event_init(&p->drain_ev, k, "pcie_drain");
    sim_method_init(&p->tx_proc, k, name, tx_run, p);
    sim_sensitive(&p->tx_proc, &p->tx_ev);          /* runs at start: sends InitFC1 */
    sim_method_init(&p->timer_proc, k, name, timer_run, p);
    sim_sensitive(&p->timer_proc, &p->timer_ev);
    sim_dont_initialize(&p->timer_proc);
    sim_method_init(&p->drain_proc, k, name, drain_run, p);
    sim_sensitive(&p->drain_proc, &p->drain_ev);
    sim_dont_initialize(&p->drain_proc);
    sim_link_set_receiver(rx, port_recv, p);
    if (p->defer_arrivals) sim_link_set_deferrable(rx, rx_deferrable);

    if (tr) {
        static const char *fc_names[PCIE_FC_TYPES] = { "credits_ph", "credits_pd", "credits_nph", "credits_npd",
                                                       "credits_cplh", "credits_cpld" };
        sim_trace_push_scope(tr, name);
        for (unsigned t = 0; t < PCIE_FC_TYPES; t++) p->tv_credit[t] = sim_trace_add_var(tr, fc_names[t], 32);
        p->tv_replay_occ = sim_trace_add_var(tr, "replay_occupancy", 16);
        p->tv_next_tx_seq = sim_trace_add_var(tr, "next_transmit_seq", 12);
        p->tv_ackd_seq = sim_trace_add_var(tr, "ackd_seq", 12);
        p->tv_next_rcv_seq = sim_trace_add_var(tr, "next_rcv_seq", 12);
        p->tv_replay_num = sim_trace_add_var(tr, "replay_num", 2);
        p->tv_acknak_rx = sim_trace_add_string(tr, "acknak_rx");
        p->tv_acknak_tx = sim_trace_add_string(tr, "acknak_tx");
        p->tv_recovery = sim_trace_add_var(tr, "recovery", 1);
        p->tv_rxbuf = sim_trace_add_var(tr, "rx_buffer_tlps", 16);
        p->tv_stall = sim_trace_add_var(tr, "credit_stall", 1);
        sim_trace_pop_scope(tr);
        trace_credits(p);
        trace_dll(p);
        sim_trace_u64(tr, p->tv_next_rcv_seq, 0);
        sim_trace_u64(tr, p->tv_recovery, 0);
        sim_trace_u64(tr, p->tv_rxbuf, 0);
        sim_trace_u64(tr, p->tv_stall, 0);
    }
}

void pcie_port_set_app(pcie_port *p, const pcie_port_app *app) { p->app = *app; }

void pcie_port_submit(pcie_port *p, pcie_tlp *t)
{
    unsigned c = pcie_tlp_class(t);
    t->fc_class = (uint8_t)c;
    t->data_credits = (uint16_t)pcie_tlp_data_credits(t);
    t->serial = p->tx_serial[c]++;
    tlpq_push(&p->q[c], t, p->age_next++);
    p->q_busy |= (uint8_t)(1u << c);
    kick(p);
}

void pcie_port_free(pcie_port *p)
{
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
        free(p->q[c].v);
        free(p->q[c].age);
        free(p->loop[c]);
    }
    free(p->replay);
    free(p->replay_flits);
    free(p->rxb);
    pcie_pool_free(&p->pool);     /* with the packets it sent that are still on the wire */
}
