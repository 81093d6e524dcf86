/* The TCP-like transport engine of one connection (tcp.h). */
#include "models/network/tcp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tcp_msg { uint64_t start, bytes; bool done; } tcp_msg;
typedef struct ooo_seg { uint64_t seq; uint32_t len, msg; bool last; } ooo_seg;

struct tcp_conn {
    tcp_cfg cfg;
    char name[64];
    tcp_complete_fn done;
    void *ctx;
    /* sender */
    tcp_msg *msgs;
    uint32_t n_msgs, cap_msgs, una_msg;
    uint64_t snd_end, snd_una, snd_nxt, snd_max;
    double cwnd, ssthresh;          /* bytes */
    unsigned dupacks;
    bool in_recovery, rtx_pending;
    uint64_t recover;
    double srtt_ps, rttvar_ps;
    bool have_rtt, timing;
    uint64_t timed_end;
    sim_time_ps timed_at_ps, armed_ps;
    unsigned backoff, retries_in_row;
    bool failed;
    /* receiver */
    uint64_t rcv_nxt, last_msg_end;
    ooo_seg *ooo;
    uint32_t n_ooo, cap_ooo;
    uint32_t segs_since_ack, acks_owed;
    tcp_stats st;
};

tcp_conn *tcp_conn_new(const tcp_cfg *cfg, const char *name, tcp_complete_fn done, void *ctx)
{
    if (!cfg->mss || !cfg->rwnd_bytes || !cfg->init_cwnd_segs || !cfg->ack_every || !cfg->min_rto_ps || !cfg->init_rto_ps)
        sim_fatal("tcp %s: mss, rwnd_bytes, init_cwnd_segs, ack_every, min_rto_ps and init_rto_ps must be > 0", name);
    tcp_conn *c = calloc(1, sizeof *c);
    if (!c) sim_fatal("tcp: out of memory");
    c->cfg = *cfg;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->done = done;
    c->ctx = ctx;
    c->cwnd = (double)cfg->init_cwnd_segs * cfg->mss;
    c->ssthresh = (double)cfg->rwnd_bytes;   /* slow start until the first loss */
    c->st.max_cwnd_bytes = (uint64_t)c->cwnd;
    return c;
}

void tcp_conn_free(tcp_conn *c)
{
    if (!c) return;
    free(c->msgs);
    free(c->ooo);
    free(c);
}

uint32_t tcp_post(tcp_conn *c, uint64_t bytes)
{
    if (!bytes) sim_fatal("tcp %s: a message of 0 bytes", c->name);
    if (c->n_msgs == c->cap_msgs) {
        c->cap_msgs = c->cap_msgs ? 2 * c->cap_msgs : 16;
        c->msgs = realloc(c->msgs, c->cap_msgs * sizeof *c->msgs);
        if (!c->msgs) sim_fatal("tcp: out of memory");
    }
    c->msgs[c->n_msgs] = (tcp_msg){ .start = c->snd_end, .bytes = bytes };
    c->snd_end += bytes;
    c->st.posted++;
    return c->n_msgs++;
}

static uint32_t msg_of(const tcp_conn *c, uint64_t seq)
{
    uint32_t lo = 0, hi = c->n_msgs;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->msgs[mid].start <= seq) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The segment that starts at seq: up to mss bytes, within its message. */
static void segment_at(const tcp_conn *c, uint64_t seq, tcp_seg *s)
{
    uint32_t i = msg_of(c, seq);
    uint64_t end = c->msgs[i].start + c->msgs[i].bytes, len = end - seq < c->cfg.mss ? end - seq : c->cfg.mss;
    *s = (tcp_seg){ .msg = i, .seq = seq, .len = (uint32_t)len, .last = seq + len == end };
}

static double window(const tcp_conn *c) { return fmin(c->cwnd, (double)c->cfg.rwnd_bytes); }
static uint64_t flight(const tcp_conn *c) { return c->snd_nxt - c->snd_una; }

static bool can_send_new(const tcp_conn *c)
{
    if (c->failed || c->snd_nxt >= c->snd_end) return false;
    tcp_seg s;
    segment_at(c, c->snd_nxt, &s);
    return flight(c) == 0 || (double)(flight(c) + s.len) <= window(c);
}

bool tcp_has_segment(const tcp_conn *c) { return c->acks_owed || (c->rtx_pending && !c->failed) || can_send_new(c); }

static sim_time_ps rto_ps(const tcp_conn *c)
{
    double base = c->have_rtt ? fmax((double)c->cfg.min_rto_ps, c->srtt_ps + 4 * c->rttvar_ps) : (double)c->cfg.init_rto_ps;
    return (sim_time_ps)(base * (double)(1u << (c->backoff < 6 ? c->backoff : 6)));
}

bool tcp_next_segment(tcp_conn *c, sim_time_ps now, tcp_seg *s)
{
    memset(s, 0, sizeof *s);
    if (c->acks_owed) {
        c->acks_owed--;
        s->ack = 1;
        s->ack_seq = c->rcv_nxt;
        c->st.acks++;
        return true;
    }
    if (c->failed) return false;
    if (flight(c) == 0) c->armed_ps = now;   /* the timer runs while data is out */
    if (c->rtx_pending) {   /* fast retransmit / NewReno partial ACK: the first hole only */
        c->rtx_pending = false;
        segment_at(c, c->snd_una, s);
        if (c->snd_nxt < c->snd_una + s->len) c->snd_nxt = c->snd_una + s->len;
    } else if (can_send_new(c)) {
        segment_at(c, c->snd_nxt, s);
        if (c->snd_nxt >= c->snd_max && !c->timing) {   /* time one new segment per round trip */
            c->timing = true;
            c->timed_end = s->seq + s->len;
            c->timed_at_ps = now;
        }
        c->snd_nxt += s->len;
    } else {
        return false;
    }
    c->st.segs++;
    c->st.bytes += s->len;
    if (s->seq < c->snd_max) {
        c->st.retransmitted_segs++;
        c->st.retransmitted_bytes += s->len;
    }
    if (c->snd_nxt > c->snd_max) c->snd_max = c->snd_nxt;
    return true;
}

static void complete_acked(tcp_conn *c)
{
    while (c->una_msg < c->n_msgs && c->msgs[c->una_msg].start + c->msgs[c->una_msg].bytes <= c->snd_una) {
        tcp_msg *m = &c->msgs[c->una_msg];
        if (m->done) sim_fatal("tcp %s: message %u completed twice", c->name, c->una_msg);
        m->done = true;
        c->st.completed++;
        if (c->done) c->done(c->ctx, c->una_msg, true, m->bytes);
        c->una_msg++;
    }
}

static void rtt_sample(tcp_conn *c, sim_time_ps now)
{
    double r = (double)(now - c->timed_at_ps);
    if (!c->have_rtt) {
        c->srtt_ps = r;
        c->rttvar_ps = r / 2;
        c->have_rtt = true;
    } else {
        c->rttvar_ps = 0.75 * c->rttvar_ps + 0.25 * fabs(c->srtt_ps - r);
        c->srtt_ps = 0.875 * c->srtt_ps + 0.125 * r;
    }
    c->timing = false;
}

static void take_ack(tcp_conn *c, sim_time_ps now, uint64_t a)
{
    const double mss = c->cfg.mss;
    if (a > c->snd_max || a < c->snd_una) return;   /* stale, or beyond anything sent */
    if (a > c->snd_una) {
        uint64_t newly = a - c->snd_una;
        c->snd_una = a;
        if (c->snd_nxt < a) c->snd_nxt = a;
        complete_acked(c);
        if (c->timing && a >= c->timed_end) rtt_sample(c, now);
        c->retries_in_row = 0;
        c->backoff = 0;
        c->armed_ps = now;
        if (c->in_recovery) {
            if (a >= c->recover) {   /* everything sent before the loss is in: leave recovery */
                c->in_recovery = false;
                c->cwnd = c->ssthresh;
                c->dupacks = 0;
            } else {   /* a partial ACK: the next hole (NewReno), deflate by what was acked */
                c->rtx_pending = true;
                c->cwnd = fmax(mss, c->cwnd - (double)newly + mss);
            }
        } else {
            c->dupacks = 0;
            if (c->cwnd < c->ssthresh) c->cwnd += fmin((double)newly, mss);
            else c->cwnd += mss * mss / c->cwnd;
        }
    } else if (flight(c) > 0) {   /* a duplicate ACK */
        c->st.dup_acks_received++;
        if (++c->dupacks == 3 && !c->in_recovery) {
            c->st.fast_retransmits++;
            c->ssthresh = fmax((double)flight(c) / 2, 2 * mss);
            c->cwnd = c->ssthresh + 3 * mss;
            c->recover = c->snd_nxt;
            c->in_recovery = true;
            c->rtx_pending = true;
            c->timing = false;   /* Karn */
        } else if (c->in_recovery) {
            c->cwnd += mss;
        }
    }
    if ((uint64_t)c->cwnd > c->st.max_cwnd_bytes) c->st.max_cwnd_bytes = (uint64_t)c->cwnd;
}

static void take_data(tcp_conn *c, const tcp_seg *s)
{
    if (s->seq + s->len <= c->rcv_nxt) {   /* we have it: say where we are */
        c->st.duplicate_received++;
        c->acks_owed++;
        return;
    }
    if (s->seq > c->rcv_nxt) {   /* a hole before it: keep it, ACK at once (a duplicate ACK) */
        c->st.out_of_order_received++;
        uint32_t i = 0;
        while (i < c->n_ooo && c->ooo[i].seq < s->seq) i++;
        if (i == c->n_ooo || c->ooo[i].seq != s->seq) {
            if (c->n_ooo == c->cap_ooo) {
                c->cap_ooo = c->cap_ooo ? 2 * c->cap_ooo : 32;
                c->ooo = realloc(c->ooo, c->cap_ooo * sizeof *c->ooo);
                if (!c->ooo) sim_fatal("tcp: out of memory");
            }
            memmove(&c->ooo[i + 1], &c->ooo[i], (c->n_ooo - i) * sizeof *c->ooo);
            c->ooo[i] = (ooo_seg){ s->seq, s->len, s->msg, s->last };
            c->n_ooo++;
        }
        c->acks_owed++;
        return;
    }
    if (s->seq != c->rcv_nxt) sim_fatal("tcp %s: a segment at %llu overlaps the next expected byte %llu", c->name,
                                        (unsigned long long)s->seq, (unsigned long long)c->rcv_nxt);
    ooo_seg in = { s->seq, s->len, s->msg, s->last };
    bool filled = false;
    for (;;) {
        c->rcv_nxt = in.seq + in.len;
        if (in.last) {
            c->st.receiver_completed++;
            if (c->done) c->done(c->ctx, in.msg, false, c->rcv_nxt - c->last_msg_end);
            c->last_msg_end = c->rcv_nxt;
        }
        if (!c->n_ooo || c->ooo[0].seq != c->rcv_nxt) break;
        in = c->ooo[0];
        memmove(&c->ooo[0], &c->ooo[1], (c->n_ooo - 1) * sizeof *c->ooo);
        c->n_ooo--;
        filled = true;
    }
    if (filled || ++c->segs_since_ack >= c->cfg.ack_every || s->last) {
        c->segs_since_ack = 0;
        c->acks_owed++;
    }
}

void tcp_receive(tcp_conn *c, sim_time_ps now, const tcp_seg *s)
{
    if (s->ack) take_ack(c, now, s->ack_seq);
    else take_data(c, s);
}

sim_time_ps tcp_timer_due(const tcp_conn *c)
{
    if (c->failed || flight(c) == 0) return SIM_TIME_MAX;
    return c->armed_ps + rto_ps(c);
}

void tcp_timer(tcp_conn *c, sim_time_ps now)
{
    if (tcp_timer_due(c) > now) return;
    c->st.timeouts++;
    if (++c->retries_in_row > c->cfg.max_retries) {
        c->failed = true;
        return;
    }
    c->ssthresh = fmax((double)flight(c) / 2, 2.0 * c->cfg.mss);
    c->cwnd = c->cfg.mss;
    c->snd_nxt = c->snd_una;   /* send again from the first unacknowledged byte */
    c->in_recovery = false;
    c->rtx_pending = false;
    c->dupacks = 0;
    c->timing = false;
    c->backoff++;
    c->armed_ps = now;
}

bool tcp_failed(const tcp_conn *c) { return c->failed; }
bool tcp_idle(const tcp_conn *c) { return !c->acks_owed && !c->rtx_pending && c->st.completed == c->st.posted && c->snd_una == c->snd_end; }
uint64_t tcp_cwnd_bytes(const tcp_conn *c) { return (uint64_t)c->cwnd; }
const tcp_stats *tcp_stats_get(const tcp_conn *c) { return &c->st; }

int tcp_check(const tcp_conn *c, char *why, size_t why_n)
{
    if (!(c->snd_una <= c->snd_nxt && c->snd_nxt <= c->snd_max && c->snd_max <= c->snd_end)) {
        snprintf(why, why_n, "tcp %s: sequence out of order (una %llu, nxt %llu, max %llu, end %llu)", c->name,
                 (unsigned long long)c->snd_una, (unsigned long long)c->snd_nxt, (unsigned long long)c->snd_max,
                 (unsigned long long)c->snd_end);
        return -1;
    }
    uint64_t done = 0;
    for (uint32_t i = 0; i < c->n_msgs; i++) done += c->msgs[i].done;
    if (done != c->st.completed || done > c->st.posted) {
        snprintf(why, why_n, "tcp %s: %llu messages done, %llu completions, %llu posted", c->name, (unsigned long long)done,
                 (unsigned long long)c->st.completed, (unsigned long long)c->st.posted);
        return -1;
    }
    for (uint32_t i = 0; i < c->n_ooo; i++)
        if (c->ooo[i].seq <= c->rcv_nxt) {
            snprintf(why, why_n, "tcp %s: a kept segment at %llu is not beyond the next expected byte", c->name,
                     (unsigned long long)c->ooo[i].seq);
            return -1;
        }
    return 0;
}
