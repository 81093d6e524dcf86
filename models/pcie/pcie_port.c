/* One PCIe port: setup, the transaction layer's submit, the timers (AckNak
 * latency, UpdateFC coalescing and 30 us refresh, REPLAY_TIMER) and teardown.
 * The rest of the port is in pcie_label.c (wave labels), pcie_fc.c (flow
 * control), pcie_rx.c (receive), pcie_tx.c (transmit, data link layer) and
 * pcie_flit.c (Gen6 Flit Mode); pcie_port_impl.h joins them.
 *
 * Per-TLP work is O(1) and allocation-free: packets come from a pool, queues
 * and the replay buffer are rings, timers are lazy deadlines behind one event. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"
#include "sim/alloc.h"
#include "sim/ring.h"

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

/* Wave updates: the check for tracing inline (it is off on the hot path), the work out of line. */
void pcie_trace_credits_now(pcie_port *p)
{
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
        uint32_t a = pcie_fc_tx_available(&p->fct[t]);
        sim_trace_u64(p->tr, p->tv_credit[t], a == UINT32_MAX ? 0xFFFFFFFFu : a);
    }
}

void pcie_trace_dll_now(pcie_port *p)
{
    sim_trace_u64(p->tr, p->tv_replay_occ, pcie_dll_tx_outstanding(&p->dtx));
    sim_trace_u64(p->tr, p->tv_next_tx_seq, p->dtx.next_transmit_seq);
    sim_trace_u64(p->tr, p->tv_ackd_seq, p->dtx.ackd_seq);
    sim_trace_u64(p->tr, p->tv_replay_num, p->dtx.replay_num);
}
sim_time_ps pcie_port_stall_ps(const pcie_port *p)
{
    return p->stall_ps + (p->stalled ? now_of(p) - p->stall_since : 0);
}

/* ---- timers ------------------------------------------------------------------------------------ */
static void timer_run_body(pcie_port *p);
static void timer_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    timer_run_body(p);
    pcie_rx_arm(p);
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
        pcie_replay_timeout(p, now);
    }
    sim_time_ps next = SIM_TIME_MAX;
    if (p->dl == PCIE_DL_ACTIVE) {
        for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
            if (!pcie_class_finite(p, c)) continue;
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
    sim_pkt_pool_init_ext(&p->pool, name, pcie_pkt_ext_bytes(phy->flit_mode));
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
    pcie_loop_types_update(p);
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
    sim_method_init(&p->tx_proc, k, name, pcie_tx_run, p);
    sim_sensitive(&p->tx_proc, &p->tx_ev);          /* runs at start: sends InitFC1 */
    sim_method_init(&p->timer_proc, k, name, timer_run, p);
    sim_sensitive(&p->timer_proc, &p->timer_ev);
    sim_dont_initialize(&p->timer_proc);
    sim_method_init(&p->drain_proc, k, name, pcie_drain_run, p);
    sim_sensitive(&p->drain_proc, &p->drain_ev);
    sim_dont_initialize(&p->drain_proc);
    sim_link_set_receiver(rx, pcie_port_recv, p);
    if (p->defer_arrivals) sim_link_set_deferrable(rx, pcie_rx_deferrable);

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

pcie_port *pcie_port_new(sim_kernel *k, const char *name, const pcie_port_cfg *cfg, unsigned dir, sim_link *tx,
                         sim_link *rx, uint64_t seed, sim_trace *tr)
{
    pcie_port *p = sim_zalloc_aligned(_Alignof(pcie_port), sizeof *p);   /* its credit records are cache-line aligned */
    pcie_port_init(p, k, name, cfg, dir, tx, rx, seed, tr);
    return p;
}

size_t pcie_port_queued(const pcie_port *p, unsigned cls) { return p->q[cls].len; }
uint32_t pcie_port_replay_occupancy(const pcie_port *p) { return pcie_dll_tx_outstanding(&p->dtx); }
size_t pcie_port_rx_buffered(const pcie_port *p) { return p->rxb_len; }
sim_time_ps pcie_port_rx_now(const pcie_port *p) { return rx_now_of(p); }
sim_time_ps pcie_port_tl_now(const pcie_port *p) { return p->tl_now ? p->tl_now : sim_now(p->k); }
sim_time_ps pcie_port_active_ps(const pcie_port *p) { return p->active_ps; }
const pcie_fc_rx *pcie_port_fc_rx(const pcie_port *p, unsigned type) { return &p->fcr[type]; }
const pcie_fc_tx *pcie_port_fc_tx(const pcie_port *p, unsigned type) { return &p->fct[type]; }

void pcie_port_get_counters(const pcie_port *p, pcie_port_counters *c)
{
    memset(c, 0, sizeof *c);
    c->tx = p->st_tx;
    c->rx = p->st_rx;
    for (unsigned cls = 0; cls < PCIE_FC_CLASSES; cls++) {
        c->tl_sent += p->tx_serial[cls] - p->q[cls].len;   /* handed to the DLL */
        c->tl_received += p->rx_expect[cls];
    }
    c->rx_duplicated = p->rx_dup;
    c->rx_reordered = p->rx_reorder;
    c->replays = p->dtx.replays;
    c->retrains = p->retrains;
    c->replay_timeouts = p->replay_timeouts;
    c->naks_received = p->naks_received;
    c->invalid_acknaks = p->dtx.invalid_acknaks;
    c->fc_refresh_sent = p->fc_refresh_sent;
    c->fc_refresh_sent_posted = p->fc_refresh_sent_p;
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) c->fc_overflows += p->fcr[t].overflows;
    c->max_replay_occupancy = p->max_replay_occ;
    c->replays_before_retrain_max = p->replays_before_retrain_max;
    c->credit_loop_samples = p->loop_n;
    c->credit_loop_sum_ns = p->loop_sum_ns;
    c->credit_loop_min_ns = p->loop_min_ns;
}

int pcie_port_check(pcie_port *p, bool drained, char *why, size_t n)
{
    if (p->pool.live != sim_link_in_flight(p->tx)) {
        snprintf(why, n, "pcie %s: %" PRIu64 " packets out of its pool, %" PRIu64 " on the wire", p->name, p->pool.live,
                 sim_link_in_flight(p->tx));
        return -1;
    }
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++)
        if (p->fcr[t].overflows) {
            snprintf(why, n, "pcie %s: %" PRIu64 " TLPs arrived beyond its advertised credits (type %u)", p->name,
                     p->fcr[t].overflows, t);
            return -1;
        }
    if (p->rx_dup || p->rx_reorder) {
        snprintf(why, n, "pcie %s: %" PRIu64 " TLPs duplicated, %" PRIu64 " out of order above the DLL", p->name, p->rx_dup,
                 p->rx_reorder);
        return -1;
    }
    if (!drained) return 0;
    pcie_port_settle(p);   /* departures that are due leave the receive buffer first */
    if (pcie_dll_tx_outstanding(&p->dtx) || p->rxb_len) {
        snprintf(why, n, "pcie %s: drained but %u TLPs (flits) in its replay buffer, %zu in its receive buffer", p->name,
                 pcie_dll_tx_outstanding(&p->dtx), p->rxb_len);
        return -1;
    }
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
        const pcie_fc_rx *r = &p->fcr[t];
        if (!r->infinite && r->allocated - r->initial != r->received) {
            snprintf(why, n, "pcie %s: its TLPs took %" PRIu64 " credits of type %u and it released %" PRIu64, p->name,
                     r->received, t, r->allocated - r->initial);
            return -1;
        }
    }
    return 0;
}

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
    sim_pkt_pool_free(&p->pool);  /* every packet is back: the links' were given back first */
    free(p);
}

static void give_back(void *msg, void *ctx)
{
    (void)ctx;
    sim_pkt_free(msg);
}

void pcie_port_give_back_in_flight(sim_link *l) { sim_link_for_each_in_flight(l, give_back, NULL); }

