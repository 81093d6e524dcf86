#include "sim/link.h"
#include "sim/alloc.h"
#include "sim/ring.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Cold paths kept out of line: the hot send, delivery and credit functions
 * then need fewer registers saved (their prologues were a tenth of them). */
static __attribute__((noinline, cold)) void trace_msg(sim_link *l, sim_trace_var v, const void *msg)
{
    if (!v) return;
    char buf[64] = "";
    if (l->label) l->label(msg, buf, sizeof buf);
    sim_trace_str(sim_trace_of_kernel(l->k), v, buf);
}

static __attribute__((noinline, cold)) void trace_credit(sim_link *l, unsigned type)
{
    sim_trace_u64(sim_trace_of_kernel(l->k), l->tv_credit[type], l->pool[type].avail);
}

/* A send refused for want of credits starts a stall (if none is going on). */
static __attribute__((noinline, cold)) void stall_start(sim_link *l)
{
    if (l->stalled) return;
    l->stalled = true;
    l->stall_since_ps = sim_now(l->k);
    l->credit_stalls++;
}

static __attribute__((noinline, cold)) void grow_msgs(sim_link *l)
{
    l->q = sim_ring_grow(l->q, sizeof *l->q, l->q_head, l->q_len, &l->q_cap, 16);
    l->q_head = 0;
}

static __attribute__((noinline, cold)) void grow_credits(sim_link *l)
{
    l->cq = sim_ring_grow(l->cq, sizeof *l->cq, l->cq_head, l->cq_len, &l->cq_cap, 16);
    l->cq_head = 0;
}

/* Hands the oldest message to the receiver (it has arrived). */
static void deliver_head(sim_link *l)
{
    sim_link_msg m = l->q[l->q_head];
    l->q_head = (l->q_head + 1) & (l->q_cap - 1);
    l->q_len--;
    if (m.seq != l->msgs_delivered)
        sim_fatal("link %s: message %" PRIu64 " delivered out of order (expected %" PRIu64 ")", l->cfg.name, m.seq,
                  l->msgs_delivered);
    l->msgs_delivered++;
    l->bytes_delivered += m.bytes;
    l->marked_in_flight -= m.marked;
    if (__builtin_expect(l->traced, 0)) trace_msg(l, l->tv_rx, m.msg);
    if (!l->recv) sim_fatal("link %s: no receiver", l->cfg.name);
    l->arrival_ps = m.arrive_ps;
    l->part = m.part;
    l->recv(l->recv_ctx, l, m.msg, m.bytes);
}

/* Wakes the delivery process `delay` from now for the oldest message. With
 * no deferral the armed time only goes from none to that message's arrival,
 * never earlier, so a wake-up without an event will do; a deferring link
 * re-arms and cancels (sim_link_rejudge), and an arrival now is a delta
 * notification: those take arrive_ev. */
static inline void arm_delivery(sim_link *l, sim_time_ps delay)
{
    if (delay && !l->deferrable) sim_process_wake_at_ordered(l->k, &l->deliver_proc, delay, l->order_key);
    else sim_event_notify_at(&l->arrive_ev, delay);
}

static inline bool msg_waits(const sim_link *l, const sim_link_msg *m)
{
    return m->deferrable && m->arrive_ps < l->defer_until_ps;
}

/* After a batch of deliveries. Most models have no process on `delivered`:
 * then the notification (a delta-list entry every batch) is left out. */
static inline void notify_delivered(sim_link *l)
{
    if (sim_event_has_waiters(&l->delivered)) sim_event_notify_delta(&l->delivered);
}

/* Keeps the delivery process armed (arm_delivery) for the first message that
 * does not wait for the receiver (without deferral: the oldest one). */
static void arm(sim_link *l)
{
    if (l->picked_up) return;   /* the receiver takes them */
    if (!l->deferrable) { /* no message ever waits: the oldest one */
        if (l->q_len) {
            const sim_time_ps t = l->q[l->q_head].arrive_ps;
            if (t < l->armed_ps) {
                l->armed_ps = t;
                arm_delivery(l, t - sim_now(l->k));
            }
        }
        return;
    }
    size_t mask = l->q_cap - 1;
    for (size_t i = 0; i < l->q_len; i++) {
        const sim_link_msg *m = &l->q[(l->q_head + i) & mask];
        if (msg_waits(l, m)) continue;
        if (m->arrive_ps < l->armed_ps) {
            l->armed_ps = m->arrive_ps;
            sim_event_notify_at(&l->arrive_ev, m->arrive_ps - sim_now(l->k));
        }
        return;
    }
}

/* Delivery process: hands every message due now to the receiver, in order. */
static void deliver(void *ctx)
{
    sim_link *l = ctx;
    sim_time_ps now = sim_now(l->k);
    bool any = false;
    l->armed_ps = SIM_TIME_MAX;
    l->delivering = true;
    while (l->q_len && l->q[l->q_head].arrive_ps <= now) {
        deliver_head(l);
        any = true;
    }
    l->delivering = false;
    l->arm_pending = false;
    if (any) notify_delivered(l);
    arm(l);
}

void sim_link_set_order_key(sim_link *l, uint32_t key)
{
    if (l->msgs_sent) sim_fatal("link %s: sim_link_set_order_key after the first send", l->cfg.name);
    if (key && key + 1 > SIM_ORDER_KEY_MAX)
        sim_fatal("link %s: order key %u: at most %u (credits take key + 1)", l->cfg.name, key, SIM_ORDER_KEY_MAX - 1);
    l->order_key = key;
}

void sim_link_set_deferrable(sim_link *l, sim_link_defer_fn fn)
{
    /* a delivery armed without deferral has no event to cancel (arm_delivery) */
    if (l->q_len) sim_fatal("link %s: sim_link_set_deferrable with messages in flight (set it before the first send)", l->cfg.name);
    if (l->half) sim_fatal("link %s: a cut link cannot defer (its messages are judged when sent, on the other side)", l->cfg.name);
    l->deferrable = fn;
}

void sim_link_defer_until(sim_link *l, sim_time_ps until_ps)
{
    if (until_ps == l->defer_until_ps) return;
    bool earlier = until_ps < l->defer_until_ps;
    l->defer_until_ps = until_ps;
    if (!earlier) return;
    if (l->delivering) l->arm_pending = true;
    else arm(l);   /* messages that no longer wait need their event */
}

void sim_link_rejudge(sim_link *l)
{
    if (!l->deferrable) return;
    bool changed = false;
    for (size_t i = 0; i < l->q_len; i++) {
        sim_link_msg *m = &l->q[(l->q_head + i) & (l->q_cap - 1)];
        if (m->deferrable) continue;   /* once accepted, stays accepted */
        if (l->deferrable(l->recv_ctx, l, m->msg)) {
            m->deferrable = true;
            changed = true;
        }
    }
    if (!changed || l->delivering) return;
    /* the event may stand at a message that now waits: arm afresh */
    sim_event_cancel(&l->arrive_ev);
    l->armed_ps = SIM_TIME_MAX;
    arm(l);
}

bool sim_link_set_pickup(sim_link *l, sim_link_pickup_fn fn)
{
    /* a receiving half's imports are put on its wire as any send (sim_link_import), so it may be picked up */
    if (l->msgs_sent || l->half == SIM_LINK_SENDING_HALF || l->deferrable || l->traced || !fn) return false;
    l->picked_up = true;
    l->pickup = fn;
    return true;
}

size_t sim_link_pick_up(sim_link *l, sim_time_ps through_ps)
{
    if (!l->picked_up) sim_fatal("link %s: sim_link_pick_up without sim_link_set_pickup", l->cfg.name);
    if (l->delivering || !l->q_len || l->q[l->q_head].arrive_ps > through_ps) return 0;
    if (through_ps > sim_now(l->k)) sim_fatal("link %s: pick-up through %" PRIu64 " ps, after now", l->cfg.name, through_ps);
    size_t n = 0;
    l->delivering = true;
    while (l->q_len && l->q[l->q_head].arrive_ps <= through_ps) {
        deliver_head(l);
        n++;
    }
    l->delivering = false;
    l->msgs_deferred += n;
    notify_delivered(l);
    return n;
}

size_t sim_link_take_arrived(sim_link *l)
{
    if (l->delivering) return 0;
    sim_time_ps now = sim_now(l->k);
    size_t n = 0;
    l->delivering = true;
    while (l->q_len && l->q[l->q_head].arrive_ps <= now && msg_waits(l, &l->q[l->q_head])) {
        deliver_head(l);
        n++;
    }
    l->delivering = false;
    l->msgs_deferred += n;
    if (n) notify_delivered(l);
    if (l->arm_pending) {
        l->arm_pending = false;
        arm(l);
    }
    return n;
}

/* Wakes the credit process `delay` from now for the oldest return: one
 * wake-up pending while returns are on their way (armed when the first is
 * queued, then by the process for the next), never moved, so no event is
 * needed but for a return that arrives now (a delta notification). */
static inline void arm_credit(sim_link *l, sim_time_ps delay)
{
    if (delay) sim_process_wake_at_ordered(l->k, &l->credit_proc, delay, l->order_key ? l->order_key + 1 : 0);
    else sim_event_notify_at(&l->credit_ev, 0);
}

static void credit_arrive(void *ctx)
{
    sim_link *l = ctx;
    sim_time_ps now = sim_now(l->k);
    bool any = false;
    while (l->cq_len) {
        sim_link_credit_msg c = l->cq[l->cq_head];
        if (c.arrive_ps > now) break;
        l->cq_head = (l->cq_head + 1) & (l->cq_cap - 1);
        l->cq_len--;
        sim_link_pool *pl = &l->pool[c.type];
        if (pl->avail != SIM_LINK_INFINITE_CREDITS) {
            pl->avail += c.n;
            if (pl->avail > pl->initial)
                sim_fatal("link %s: credit type %u overflow: %u > initial %u (credits returned twice?)", l->cfg.name,
                          c.type, pl->avail, pl->initial);
            if (__builtin_expect(l->traced, 0)) trace_credit(l, c.type);
        }
        l->credits_returned_total += c.n;
        any = true;
        if (l->on_credit) l->on_credit(l->credit_ctx, l, c.type, c.n);
    }
    if (any) sim_event_notify(&l->credit_returned);
    if (l->cq_len) arm_credit(l, l->cq[l->cq_head].arrive_ps - now);
}

sim_link *sim_link_new(sim_kernel *k, const sim_link_cfg *cfg)
{
    sim_link *l = sim_zalloc_aligned(64, sizeof *l); /* the hot lines as laid out (link.h) */
    l->k = k;
    l->cfg = *cfg;
    if (!l->cfg.name) l->cfg.name = "link";
    if (l->cfg.credit_latency_ps == SIM_LINK_SAME_LATENCY) l->cfg.credit_latency_ps = l->cfg.latency_ps;
    if (l->cfg.credit_types > SIM_LINK_MAX_CREDIT_TYPES)
        sim_fatal("link %s: %u credit types, at most %d", l->cfg.name, l->cfg.credit_types, SIM_LINK_MAX_CREDIT_TYPES);
    if (l->cfg.bandwidth_GBps < 0) sim_fatal("link %s: negative bandwidth", l->cfg.name);
    /* 1 GB/s = 1 byte per ns = 1000 ps per byte */
    if (l->cfg.bandwidth_GBps > 0) {
        long double ps = 1000.0L / (long double)l->cfg.bandwidth_GBps;
        l->ps_per_byte = (uint64_t)ps;
        l->ps_per_byte_frac = (uint32_t)((ps - (long double)l->ps_per_byte) * 4294967296.0L + 0.5L);
    }
    for (unsigned i = 0; i < l->cfg.credit_types; i++) l->pool[i].avail = l->pool[i].initial = l->cfg.credits[i];
    l->latency_ps = l->cfg.latency_ps;
    l->credit_latency_ps = l->cfg.credit_latency_ps;
    l->credit_types = l->cfg.credit_types;
    l->armed_ps = SIM_TIME_MAX;
    sim_event_init(&l->credit_returned, k, "credit_returned");
    sim_event_init(&l->delivered, k, "delivered");
    sim_event_init(&l->arrive_ev, k, "arrive");
    sim_event_init(&l->credit_ev, k, "credit");
    sim_method_init(&l->deliver_proc, k, l->cfg.name, deliver, l);
    sim_sensitive(&l->deliver_proc, &l->arrive_ev);
    sim_dont_initialize(&l->deliver_proc);
    sim_method_init(&l->credit_proc, k, l->cfg.name, credit_arrive, l);
    sim_sensitive(&l->credit_proc, &l->credit_ev);
    sim_dont_initialize(&l->credit_proc);
    return l;
}

void sim_link_free(sim_link *l)
{
    if (!l) return;
    free(l->q);
    free(l->cq);
    free(l);
}

void sim_link_set_receiver(sim_link *l, sim_link_recv_fn fn, void *ctx)
{
    l->recv = fn;
    l->recv_ctx = ctx;
}

void sim_link_set_credit_callback(sim_link *l, sim_link_credit_fn fn, void *ctx)
{
    l->on_credit = fn;
    l->credit_ctx = ctx;
}

void sim_link_trace(sim_link *l, sim_trace *t, sim_link_label_fn label)
{
    if (!t) return;
    l->traced = true;
    l->label = label;
    sim_trace_push_scope(t, l->cfg.name);
    l->tv_tx = sim_trace_add_string(t, "tx");
    l->tv_rx = sim_trace_add_string(t, "rx");
    sim_trace_str(t, l->tv_tx, "");
    sim_trace_str(t, l->tv_rx, "");
    for (unsigned i = 0; i < l->cfg.credit_types; i++) {
        char name[32];
        snprintf(name, sizeof name, "credits%u", i);
        l->tv_credit[i] = sim_trace_add_var(t, name, 32);
        sim_trace_u64(t, l->tv_credit[i], l->pool[i].avail);
    }
    sim_trace_pop_scope(t);
}

bool sim_link_can_send(const sim_link *l, unsigned type, uint32_t credits)
{
    if (!credits || type >= l->credit_types) return true;
    const uint32_t avail = l->pool[type].avail;
    return avail == SIM_LINK_INFINITE_CREDITS || avail >= credits;
}

sim_time_ps sim_link_tx_free_ps(const sim_link *l)
{
    sim_time_ps now = sim_now(l->k);
    sim_time_ps free_ps = l->busy_until_ps + (l->busy_until_frac != 0);
    return free_ps > now ? free_ps : now;
}

static inline void append(sim_link *l, sim_time_ps arrive, void *msg, uint32_t bytes, uint16_t part, uint8_t marked);

static void enqueue(sim_link *l, void *msg, uint32_t bytes, uint16_t part, uint8_t marked)
{
    sim_time_ps now = sim_now(l->k);
    if (l->busy_until_ps < now || (l->busy_until_ps == now && l->busy_until_frac == 0)) {
        l->busy_until_ps = now;     /* the wire was idle: start now */
        l->busy_until_frac = 0;
    }
    /* bytes * (whole + frac / 2^32), carried exactly (bytes < 2^32) */
    uint64_t frac_product = (uint64_t)l->ps_per_byte_frac * bytes;
    uint64_t frac_sum = (uint64_t)l->busy_until_frac + (frac_product & 0xffffffffu);
    uint64_t ser_whole = l->ps_per_byte * bytes + (frac_product >> 32);
    sim_time_ps start = l->busy_until_ps;
    l->busy_until_ps += ser_whole + (frac_sum >> 32);
    l->busy_until_frac = (uint32_t)frac_sum;
    sim_time_ps done = l->busy_until_ps + (l->busy_until_frac != 0);   /* the last byte, rounded up to a ps */
    l->busy_ps += done - (start > l->busy_done_ps ? start : l->busy_done_ps);
    l->busy_done_ps = done;
    append(l, done + l->latency_ps, msg, bytes, part, marked);
}

/* Puts a message arriving at `arrive` on the wire (in send order) and arms the delivery. */
static inline void append(sim_link *l, sim_time_ps arrive, void *msg, uint32_t bytes, uint16_t part, uint8_t marked)
{
    const sim_time_ps now = sim_now(l->k);
    if (__builtin_expect(l->q_len == l->q_cap, 0)) grow_msgs(l);
    sim_link_msg *m = &l->q[(l->q_head + l->q_len) & (l->q_cap - 1)];
    m->arrive_ps = arrive;
    m->msg = msg;
    m->bytes = bytes;
    m->part = part;
    m->marked = marked;
    l->marked_in_flight += marked;
    m->seq = l->msgs_sent;
    m->deferrable = l->deferrable && l->deferrable(l->recv_ctx, l, msg);
    l->q_len++;
    /* Arrivals are in send order: an armed event covers every later message.
     * While delivering, the delivery loop arms when it is done. */
    if (l->picked_up) l->pickup(l->recv_ctx, l, arrive);
    else if (l->delivering) l->arm_pending = true;
    else if (arrive < l->armed_ps && !msg_waits(l, m)) {
        l->armed_ps = arrive;
        arm_delivery(l, arrive - now);
    }
    l->msgs_sent++;
    l->bytes_sent += bytes;
    if (__builtin_expect(l->traced, 0)) trace_msg(l, l->tv_tx, msg);
}

/* A send ends a credit stall (sim_link_try_send_part's accounting). */
static void stall_end(sim_link *l)
{
    const sim_time_ps now = sim_now(l->k);
    l->stalled = false;
    l->stall_ps += now - (l->stall_since_ps > l->stats_since_ps ? l->stall_since_ps : l->stats_since_ps);
}

bool sim_link_try_send_part(sim_link *l, void *msg, uint32_t bytes, unsigned type, uint32_t credits, uint16_t part)
{
    if (credits) {
        if (type >= l->credit_types)
            sim_fatal("link %s: credit type %u, the link has %u", l->cfg.name, type, l->credit_types);
        sim_link_pool *pl = &l->pool[type];
        if (pl->avail != SIM_LINK_INFINITE_CREDITS) {
            if (pl->avail < credits) {
                stall_start(l);
                return false;
            }
            pl->avail -= credits;
            pl->outstanding += credits;
            if (__builtin_expect(l->traced, 0)) trace_credit(l, type);
        }
    }
    if (l->stalled) stall_end(l);
    enqueue(l, msg, bytes, part, 0);
    return true;
}

bool sim_link_try_send(sim_link *l, void *msg, uint32_t bytes, unsigned type, uint32_t credits)
{
    return sim_link_try_send_part(l, msg, bytes, type, credits, 0);
}

void sim_link_send_part(sim_link *l, void *msg, uint32_t bytes, uint16_t part)
{
    sim_link_try_send_part(l, msg, bytes, 0, 0, part);
}

void sim_link_send(sim_link *l, void *msg, uint32_t bytes)
{
    sim_link_try_send(l, msg, bytes, 0, 0);
}

void sim_link_send_marked(sim_link *l, void *msg, uint32_t bytes)
{
    if (l->stalled) stall_end(l);
    enqueue(l, msg, bytes, 0, 1);
}

/* Queues a credit return arriving at `arrive` (in return order); the caller arms. */
static inline void push_credit(sim_link *l, sim_time_ps arrive, uint32_t credits, unsigned type)
{
    if (__builtin_expect(l->cq_len == l->cq_cap, 0)) grow_credits(l);
    sim_link_credit_msg *c = &l->cq[(l->cq_head + l->cq_len) & (l->cq_cap - 1)];
    c->arrive_ps = arrive;
    c->n = credits;
    c->type = (uint8_t)type;
    l->cq_len++;
}

void sim_link_return_credits(sim_link *l, unsigned type, uint32_t credits)
{
    if (type >= l->credit_types) sim_fatal("link %s: credit type %u returned, the link has %u", l->cfg.name, type, l->credit_types);
    if (!credits) return;
    sim_link_pool *pl = &l->pool[type];
    if (pl->initial != SIM_LINK_INFINITE_CREDITS) {
        if (pl->initial == SIM_LINK_REMOTE_CREDITS) {   /* a receiving half: the sending half keeps the count */
            push_credit(l, sim_now(l->k) + l->credit_latency_ps, credits, type);
            return;
        }
        if (credits > pl->outstanding)
            sim_fatal("link %s: %u credits of type %u returned, only %" PRIu64 " outstanding", l->cfg.name, credits, type,
                      pl->outstanding);
        pl->outstanding -= credits;
    }
    push_credit(l, sim_now(l->k) + l->credit_latency_ps, credits, type);
    if (l->cq_len == 1) arm_credit(l, l->credit_latency_ps);
}

void sim_link_hold_credits(sim_link *l, unsigned type, uint32_t n)
{
    if (type >= l->credit_types || l->pool[type].avail == SIM_LINK_INFINITE_CREDITS || l->pool[type].avail < n)
        sim_fatal("link %s: cannot hold %u credits of type %u", l->cfg.name, n, type);
    l->pool[type].avail -= n;
    l->pool[type].outstanding += n;
}

uint64_t sim_link_in_flight(const sim_link *l) { return l->q_len; }

void sim_link_for_each_in_flight(const sim_link *l, void (*fn)(void *msg, void *ctx), void *ctx)
{
    for (size_t i = 0; i < l->q_len; i++) fn(l->q[(l->q_head + i) & (l->q_cap - 1)].msg, ctx);
}

/* Serialisation already queued but still ahead of now: busy_ps counts a
 * message's wire time when it is sent, so this part has not happened yet. */
static uint64_t wire_time_ahead(const sim_link *l)
{
    return sim_link_tx_free_ps(l) - sim_now(l->k);
}

double sim_link_utilisation(const sim_link *l)
{
    sim_time_ps now = sim_now(l->k);
    if (now <= l->stats_since_ps) return 0.0;
    uint64_t ahead = wire_time_ahead(l);
    uint64_t busy = l->busy_ps > ahead ? l->busy_ps - ahead : 0;
    double u = (double)busy / (double)(now - l->stats_since_ps);
    return u > 1.0 ? 1.0 : u;
}

uint64_t sim_link_stall_ps(const sim_link *l)
{
    if (!l->stalled) return l->stall_ps;
    sim_time_ps now = sim_now(l->k), since = l->stall_since_ps > l->stats_since_ps ? l->stall_since_ps : l->stats_since_ps;
    return l->stall_ps + (now > since ? now - since : 0);
}

void sim_link_reset_stats(sim_link *l)
{
    l->stats_since_ps = sim_now(l->k);
    l->busy_ps = wire_time_ahead(l);   /* the rest of a queued burst belongs to the new window */
    l->stall_ps = 0;
    if (l->stalled) l->stall_since_ps = l->stats_since_ps;
    l->credit_stalls = 0;
    l->stats_msgs0 = l->msgs_sent;
    l->stats_bytes0 = l->bytes_sent;
}

int sim_link_check(const sim_link *l, bool expect_drained, char *why, size_t n)
{
    if (l->msgs_delivered + l->q_len != l->msgs_sent) {
        snprintf(why, n, "link %s: sent %" PRIu64 ", delivered %" PRIu64 ", in flight %zu", l->cfg.name, l->msgs_sent,
                 l->msgs_delivered, l->q_len);
        return -1;
    }
    uint64_t marked = 0;
    for (size_t j = 0; j < l->q_len; j++) marked += l->q[(l->q_head + j) & (l->q_cap - 1)].marked;
    if (marked != l->marked_in_flight) {
        snprintf(why, n, "link %s: %" PRIu64 " marked messages on the wire, the count says %u", l->cfg.name, marked,
                 l->marked_in_flight);
        return -1;
    }
    if (expect_drained && l->q_len) {
        snprintf(why, n, "link %s: %zu messages still in flight", l->cfg.name, l->q_len);
        return -1;
    }
    for (unsigned i = 0; i < l->cfg.credit_types; i++) {
        const sim_link_pool *pl = &l->pool[i];
        if (pl->initial == SIM_LINK_INFINITE_CREDITS || pl->initial == SIM_LINK_REMOTE_CREDITS) continue;
        uint64_t in_return = 0;
        for (size_t j = 0; j < l->cq_len; j++)
            if (l->cq[(l->cq_head + j) & (l->cq_cap - 1)].type == i) in_return += l->cq[(l->cq_head + j) & (l->cq_cap - 1)].n;
        if (pl->avail + pl->outstanding + in_return != pl->initial) {
            snprintf(why, n, "link %s: credit type %u: %u available + %" PRIu64 " held + %" PRIu64 " returning != %u initial",
                     l->cfg.name, i, pl->avail, pl->outstanding, in_return, pl->initial);
            return -1;
        }
    }
    return 0;
}

/* --- halves of a cut link (link.h) ---------------------------------------- */
static bool always_waits(void *ctx, sim_link *l, const void *msg)
{
    (void)ctx, (void)l, (void)msg;
    return true;
}

void sim_link_make_sending_half(sim_link *l)
{
    if (l->msgs_sent || l->deferrable) sim_fatal("link %s: a sending half is made before the first send, of a link nobody defers", l->cfg.name);
    l->deferrable = always_waits;   /* every message waits for sim_link_export: no delivery is armed */
    l->half = SIM_LINK_SENDING_HALF;
    l->defer_until_ps = SIM_TIME_MAX;
}

void sim_link_make_receiving_half(sim_link *l)
{
    if (l->msgs_sent || l->deferrable) sim_fatal("link %s: a receiving half is made before the first send, of a link nobody defers", l->cfg.name);
    for (unsigned i = 0; i < l->credit_types; i++) l->pool[i].avail = l->pool[i].initial = SIM_LINK_REMOTE_CREDITS;
    l->half = SIM_LINK_RECEIVING_HALF;
}

size_t sim_link_export(sim_link *l, void (*fn)(void *ctx, const sim_link_msg *m), void *ctx)
{
    if (l->half != SIM_LINK_SENDING_HALF) sim_fatal("link %s: sim_link_export of a link that is not a sending half", l->cfg.name);
    size_t n = l->q_len;
    while (l->q_len) {
        const sim_link_msg *m = &l->q[l->q_head];
        fn(ctx, m);
        l->msgs_delivered++;
        l->bytes_delivered += m->bytes;
        l->marked_in_flight -= m->marked;
        l->q_head = (l->q_head + 1) & (l->q_cap - 1);
        l->q_len--;
    }
    return n;
}

void sim_link_import(sim_link *l, const sim_link_msg *m)
{
    if (l->half != SIM_LINK_RECEIVING_HALF) sim_fatal("link %s: sim_link_import into a link that is not a receiving half", l->cfg.name);
    const sim_time_ps now = sim_now(l->k);
    if (m->arrive_ps <= now || m->seq != l->msgs_sent || (l->q_len && m->arrive_ps < l->q[(l->q_head + l->q_len - 1) & (l->q_cap - 1)].arrive_ps))
        sim_fatal("link %s: import of message %" PRIu64 " arriving at %" PRIu64 " ps: expected message %" PRIu64
                  ", after now (%" PRIu64 " ps) and the one before it (the lookahead was not kept)",
                  l->cfg.name, m->seq, m->arrive_ps, l->msgs_sent, now);
    append(l, m->arrive_ps, m->msg, m->bytes, m->part, m->marked);   /* counts it sent on this half */
}

size_t sim_link_export_credits(sim_link *l, void (*fn)(void *ctx, const sim_link_credit_msg *c), void *ctx)
{
    size_t n = l->cq_len;
    if (l->half != SIM_LINK_RECEIVING_HALF)
        sim_fatal("link %s: sim_link_export_credits of a link that is not a receiving half", l->cfg.name);
    while (l->cq_len) {
        fn(ctx, &l->cq[l->cq_head]);
        l->cq_head = (l->cq_head + 1) & (l->cq_cap - 1);
        l->cq_len--;
    }
    return n;
}

void sim_link_import_credits(sim_link *l, const sim_link_credit_msg *c)
{
    if (l->half != SIM_LINK_SENDING_HALF) sim_fatal("link %s: sim_link_import_credits into a link that is not a sending half", l->cfg.name);
    const sim_time_ps now = sim_now(l->k);
    if (c->type >= l->credit_types) sim_fatal("link %s: import of credit type %u, the link has %u", l->cfg.name, c->type, l->credit_types);
    if (c->arrive_ps <= now || (l->cq_len && c->arrive_ps < l->cq[(l->cq_head + l->cq_len - 1) & (l->cq_cap - 1)].arrive_ps))
        sim_fatal("link %s: import of credits arriving at %" PRIu64 " ps, now %" PRIu64 " ps (the lookahead was not kept)", l->cfg.name,
                  c->arrive_ps, now);
    sim_link_pool *pl = &l->pool[c->type];
    if (pl->initial != SIM_LINK_INFINITE_CREDITS) {
        if (c->n > pl->outstanding)
            sim_fatal("link %s: %u credits of type %u imported, only %" PRIu64 " outstanding", l->cfg.name, c->n, c->type, pl->outstanding);
        pl->outstanding -= c->n;
    }
    push_credit(l, c->arrive_ps, c->n, c->type);
    if (l->cq_len == 1) arm_credit(l, c->arrive_ps - now);
}
