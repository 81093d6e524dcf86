/* Transmit side of one PCIe port: error injection on the wire, the data link
 * layer's transmit side (replay buffer, REPLAY_TIMER, Ack/Nak handling,
 * Recovery; Flit Mode uses them too), the Non-Flit transmit arbiter (DLLPs,
 * SKP, replays, new TLPs) with its lookahead, and the transmitter process. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"

/* ---- the wire ------------------------------------------------------------------------------ */
/* Error injection on what this port puts on the wire: a geometric skip to the
 * next bit error (O(1) per packet), a bad-link window, dropped Acks. Returns
 * the bit offsets of errors inside the packet through `first_bit` (for FEC). */
unsigned pcie_wire_errors(pcie_port *p, uint32_t bytes, uint32_t *err_bytes, unsigned max_err)
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

bool pcie_in_bad_window(const pcie_port *p, sim_time_ps t)
{
    const pcie_err_cfg *e = &p->cfg.tx_err;
    return e->bad_until_ps > e->bad_from_ps && t >= e->bad_from_ps && t < e->bad_until_ps;
}

/* Puts a packet on the wire. */
HOT_INLINE void wire_send(pcie_port *p, sim_pkt *m, pcie_pkt *k, sim_time_ps now)
{
    /* only a faulty wire or a dropped Ack has anything to do here */
    if ((p->wire_faults || k->corrupted) && p->dl == PCIE_DL_ACTIVE && k->kind != PCIE_PKT_SKP && k->kind != PCIE_PKT_TS) {
        if (p->wire_faults) {
            uint32_t eb[1];
            if (pcie_wire_errors(p, m->wire_bytes, eb, 0)) k->corrupted = 1;
            if (pcie_in_bad_window(p, now)) k->corrupted = 1;      /* a bad link corrupts TLPs and DLLPs alike */
        }
        if (k->corrupted) p->st_tx.corrupted++;      /* (or a dropped Ack) */
    }
    /* TLPs and Naks are marked: the partner's lookahead must not miss them */
    if (k->kind == PCIE_PKT_TLP || k->kind == PCIE_PKT_NAK) sim_link_send_marked(p->tx, m, m->wire_bytes);
    else sim_link_send(p->tx, m, m->wire_bytes);
    p->last_tx_end = sim_link_tx_free_ps(p->tx);
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

void pcie_acknak_received(pcie_port *p, uint16_t seq, bool nak)
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

void pcie_replay_timer_start(pcie_port *p, sim_time_ps tx_end)
{
    if (p->replay_timer_restart || p->replay_deadline == SIM_TIME_MAX) {
        p->replay_timer_restart = false;
        p->replay_deadline = tx_end + p->phy.replay_timeout_ps;
        timer_arm(p, p->replay_deadline);
    }
}

void pcie_replay_timeout(pcie_port *p, sim_time_ps now)
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
    sim_pkt *m;
    pcie_pkt *k = pkt_alloc(p, &m, PCIE_PKT_TS, 16 * p->phy.lanes);
    sim_time_ps until = start + (sim_time_ps)((double)m->wire_bytes * 1000.0 / p->phy.raw_GBps) + p->cfg.retrain_ps;
    k->until_ps = until;
    sim_link_send_marked(p->tx, m, m->wire_bytes);   /* a training set is marked, like TLPs and Naks */
    p->recovery_until = until;
    if (p->replay_deadline != SIM_TIME_MAX) p->replay_deadline = until + p->phy.replay_timeout_ps;
    sim_trace_u64(p->tr, p->tv_recovery, 1);
    (void)now;
}

/* ---- transmit arbiter -------------------------------------------------------------------------- */
static uint32_t tlp_wire_bytes(const pcie_tlp *t) { return PCIE_NFM_FRAMING_BYTES + pcie_tlp_bytes(t); }

HOT_INLINE void send_tlp(pcie_port *p, const pcie_tlp *t, uint16_t seq, bool replayed, sim_time_ps now)
{
    sim_pkt *m;
    uint32_t wire_bytes = tlp_wire_bytes(t);
    pcie_pkt *k = pkt_alloc(p, &m, PCIE_PKT_TLP, wire_bytes);
    m->payload_bytes = pcie_tlp_payload(t);
    k->seq = seq;
    k->tlp = *t;                  /* the wire carries its own copy: the receiver never reads this replay buffer */
    k->replayed = replayed;
    if (replayed) {
        p->st_tx.tlps_replayed++;
        p->st_tx.tlp_replay_wire_bytes += wire_bytes;
    } else {
        p->st_tx.tlps_new++;
        p->st_tx.tlp_wire_bytes += wire_bytes;
    }
    wire_send(p, m, k, now);
    pcie_replay_timer_start(p, p->last_tx_end);
}

void pcie_send_dllp(pcie_port *p, enum pcie_pkt_kind kind, unsigned cls, sim_time_ps now)
{
    sim_pkt *m;
    pcie_pkt *k = pkt_alloc(p, &m, (uint8_t)kind, PCIE_DLLP_BYTES);
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
        pcie_fill_fc_fields(p, cls, &k->hdr_fc, &k->data_fc, true);
        s->updatefcs++;
        break;
    case PCIE_PKT_INITFC1:
    case PCIE_PKT_INITFC2:
        k->fc_class = (uint8_t)cls;
        pcie_fill_fc_fields(p, cls, &k->hdr_fc, &k->data_fc, false);
        s->initfcs++;
        break;
    default: sim_fatal("pcie %s: not a DLLP kind %d", p->name, kind);
    }
    wire_send(p, m, k, now);
}

void pcie_send_skp(pcie_port *p, sim_time_ps now)
{
    sim_pkt *m;
    pcie_pkt *k = pkt_alloc(p, &m, PCIE_PKT_SKP, p->phy.skp_bytes);
    p->st_tx.skps++;
    p->st_tx.skp_bytes += m->wire_bytes;
    wire_send(p, m, k, now);
}

bool pcie_skp_due(pcie_port *p, sim_time_ps now)
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
        if (p->nak_now) pcie_send_dllp(p, PCIE_PKT_NAK, 0, now);
        else if (p->ack_now) pcie_send_dllp(p, PCIE_PKT_ACK, 0, now);
        else if (p->fc_now) pcie_send_dllp(p, PCIE_PKT_UPDATEFC, (unsigned)__builtin_ctz(p->fc_now), now);
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

/* What either mode sends first: a due SKP, and before the DL is active the
 * InitFC DLLPs (plain DLLPs in Flit Mode too: error-free, once). Sets *sent;
 * false: the mode's own choice follows. */
static bool tx_skp_or_initfc(pcie_port *p, sim_time_ps now, bool *sent)
{
    if (pcie_skp_due(p, now)) {
        pcie_send_skp(p, now);
        return *sent = true;
    }
    if (p->dl == PCIE_DL_ACTIVE) return false;
    *sent = false;
    if (p->initfc_to_send) {
        unsigned c = (unsigned)__builtin_ctz(p->initfc_to_send);
        p->initfc_to_send &= (uint8_t)~(1u << c);
        pcie_send_dllp(p, p->dl == PCIE_DL_FC_INIT1 ? PCIE_PKT_INITFC1 : PCIE_PKT_INITFC2, c, now);
        *sent = true;
    }
    return true;
}

static bool tx_one_nfm(pcie_port *p, sim_time_ps now)
{
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
    bool sent;
    if (!tx_skp_or_initfc(p, now, &sent)) sent = p->phy.flit_mode ? pcie_tx_one_flit(p, now) : tx_one_nfm(p, now);
    p->in_tx = false;
    if (sent && tx_has_work(p)) sim_event_notify_at(&p->tx_ev, sim_link_tx_free_ps(p->tx) - now);
}

void pcie_tx_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    tx_run_body(p);
    pcie_rx_arm(p);
}
