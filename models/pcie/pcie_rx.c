/* Receive side of one PCIe port: the UpdateFC urgency rule, the receive
 * buffer (lazy departures), deferred arrivals (sim_link_defer_until), the data
 * link layer's receive checks in Non-Flit Mode, and the link's receive callback. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"
#include "sim/ring.h"

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
        p->fc_deadline[cls] = rx_now_of(p) + p->phy.ack_limit_ps;
        timer_arm(p, p->fc_deadline[cls]);
    }
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
    if (!p->hold_credits) {
        pcie_fc_rx_release(&p->fcr[pcie_fc_hdr_type(cls)], 1);
        pcie_fc_rx_release(&p->fcr[pcie_fc_data_type(cls)], t->data_credits);
    }
    sim_time_ps now = rx_now_of(p);
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
    if (!p->hold_credits) fc_released(p, cls);
}

void pcie_port_hold_credits(pcie_port *p, bool hold) { p->hold_credits = hold; }

void pcie_port_release_held(pcie_port *p, unsigned cls, uint32_t data_credits)
{
    if (!p->hold_credits) sim_fatal("pcie %s: credits released that were never held", p->name);
    pcie_fc_rx_release(&p->fcr[pcie_fc_hdr_type(cls)], 1);
    pcie_fc_rx_release(&p->fcr[pcie_fc_data_type(cls)], data_credits);
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

/* Deferred arrivals (sim_link_defer_until). A posted TLP that pcie_rx_deferrable
 * accepted may wait in the link until this port's next activation, which
 * processes it at its arrival time, when its arrival can start nothing at its
 * own time: the DLL accepts it in sequence (error-free run); the AckNak timer
 * is already running, so it starts no timer; its departure from the receive
 * buffer is lazy and its credit release not urgent (pcie_rx_deferrable's bound);
 * and the port's timer event, which runs at or before the Ack deadline, is an
 * activation that takes it. Everything else the arrival changes is only read
 * in this port's activations, which all settle first. Ends every activation. */
static bool posted_release_calm(const pcie_port *p);
static void rx_defer_horizon(pcie_port *p)
{
    if (p->fc_adv_moved) {   /* the bound in pcie_rx_deferrable is better now */
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

void pcie_rx_arm(pcie_port *p)
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
bool pcie_rx_deferrable(void *ctx, sim_link *l, const void *msg)
{
    (void)l;
    pcie_port *p = ctx;
    const pcie_pkt *k = pcie_pkt_of_const(msg);
    if (k->kind != PCIE_PKT_TLP || k->tlp.fc_class != PCIE_FC_P) return false;
    if (!p->rejudging) {   /* posted credits on the wire towards this port */
        p->defer_wire_hdr += 1;
        p->defer_wire_data += k->tlp.data_credits;
    }
    if (k->corrupted || k->replayed || !p->app.timely || p->app.timely(p->app.ctx, &k->tlp)) return false;
    return posted_release_calm(p);
}

/* pcie_rx_deferrable's bound: releasing the posted credits of every TLP buffered
 * or on the wire towards this port would not be urgent. */
static bool posted_release_calm(const pcie_port *p)
{
    const pcie_fc_rx *h = &p->fcr[PCIE_FC_PH], *d = &p->fcr[PCIE_FC_PD];
    int64_t hv = (int64_t)h->advertised - (int64_t)(h->received + p->defer_wire_hdr);
    int64_t dv = (int64_t)d->advertised - (int64_t)(d->received + p->defer_wire_data);
    return !fc_type_urgent(p, PCIE_FC_PH, hv, h->allocated + p->rxb_pend_hdr + p->defer_wire_hdr - h->advertised) &&
           !fc_type_urgent(p, PCIE_FC_PD, dv, d->allocated + p->rxb_pend_data + p->defer_wire_data - d->advertised);
}

void pcie_drain_run(void *ctx)
{
    pcie_port *p = ctx;
    pcie_port_settle(p);
    pcie_rx_arm(p);
}

/* An accepted TLP enters the receive buffer; it leaves rx_ps after the previous one. */
HOT_INLINE void rx_accept(pcie_port *p, const pcie_tlp *t)
{
    unsigned cls = t->fc_class;
    bool ok = pcie_fc_rx_receive(&p->fcr[pcie_fc_hdr_type(cls)], 1);
    ok = pcie_fc_rx_receive(&p->fcr[pcie_fc_data_type(cls)], t->data_credits) && ok;
    if (!ok) sim_fatal("pcie %s: receive buffer overflow: a %s TLP arrived beyond the advertised credits", p->name,
                       pcie_cls_name[cls]);
    sim_time_ps now = rx_now_of(p);
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
     * arrival) was judged not timely by pcie_rx_deferrable already. */
    bool waited = now < now_of(p);
    e->timely = !p->rx_lazy || (!waited && (!p->app.timely || p->app.timely(p->app.ctx, t)));
    if (e->timely) p->rxb_timely++;
    p->rxb_pend_hdr++;
    p->rxb_pend_data += t->data_credits;
    p->rxb_len++;
    sim_trace_u64(p->tr, p->tv_rxbuf, p->rxb_len);      /* the caller (pcie_port_recv) arms the departure */
}

/* For Flit Mode (pcie_flit.c); the Non-Flit path above keeps its inline copy. */
void pcie_rx_accept(pcie_port *p, const pcie_tlp *t) { rx_accept(p, t); }

/* ---- data link layer: receive side ----------------------------------------------------------- */
bool pcie_forced_nak(pcie_port *p)
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
    if (p->dl == PCIE_DL_FC_INIT2) pcie_go_active(p);
    bool crc_ok = !k->corrupted && !pcie_forced_nak(p);
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

/* The link's receive callback: one packet from the partner, at its arrival time. */
void pcie_port_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    pcie_port *p = ctx;
    sim_pkt *m = msg;             /* from the partner's pool; its extension says what it is */
    pcie_pkt *k = pcie_pkt_of(m);
    sim_time_ps arrival = sim_link_arrival_ps(l);    /* earlier than now when it was deferred */
    depart_until(p, arrival);
    if (k->kind == PCIE_PKT_TLP && p->defer_arrivals && k->tlp.fc_class == PCIE_FC_P) {
        p->defer_wire_hdr -= 1;
        p->defer_wire_data -= k->tlp.data_credits;
    }
    p->rx_now = arrival;
    switch (k->kind) {
    case PCIE_PKT_TLP: rx_tlp_nfm(p, k); break;
    case PCIE_PKT_FLIT: pcie_rx_flit(p, k); break;
    case PCIE_PKT_ACK:
    case PCIE_PKT_NAK:
        if (!k->corrupted) pcie_acknak_received(p, k->seq, k->kind == PCIE_PKT_NAK);
        break;
    case PCIE_PKT_UPDATEFC:
        if (p->dl == PCIE_DL_FC_INIT2) pcie_go_active(p);
        if (!k->corrupted) pcie_fc_update_received(p, k->fc_class, k->hdr_fc, k->data_fc);
        break;
    case PCIE_PKT_INITFC1:
    case PCIE_PKT_INITFC2: pcie_initfc_received(p, k); break;
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
    sim_pkt_free(m);              /* back to the sender's pool */
    if (!p->settling) pcie_rx_arm(p);   /* a deferred arrival: the activation taking it arms at its end */
}
