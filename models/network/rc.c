/* The RC transport engine of one queue pair (rc.h). */
#include "models/network/rc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rc_msg {
    rc_op op;
    uint64_t bytes;
    uint32_t first_psn, n_pkts;   /* READ: the PSNs of its responses */
    uint32_t resp_got;            /* READ: responses taken in order */
    bool done;
} rc_msg;

/* What the responder owes the requester, in the order it must go out: an
 * ACK must not overtake the READ responses it covers. */
typedef struct rc_out {
    rc_opcode opcode;             /* RC_ACK, RC_NAK, or RC_READ_RESP (a job of responses) */
    uint32_t psn, msg;
    uint64_t offset, remaining;
} rc_out;

struct rc_qp {
    rc_cfg cfg;
    char name[64];
    rc_complete_fn done;
    void *ctx;
    /* requester */
    rc_msg *msgs;
    uint32_t n_msgs, cap_msgs;
    uint32_t next_psn;            /* the PSN the next posted message starts at */
    uint32_t snd_una, snd_nxt;    /* oldest unacknowledged; next to send */
    uint32_t sent_max;            /* 1 + the highest PSN ever sent (below it: a retransmission) */
    uint32_t rewound_at;          /* snd_una of the last go-back (one per gap); UINT32_MAX: none */
    uint32_t una_msg;             /* the message holding snd_una */
    sim_time_ps progress_ps;      /* last acknowledgement, or the first send after idle */
    unsigned timeouts_in_row;
    bool failed;
    /* responder */
    uint32_t e_psn;               /* expected */
    uint32_t in_order_since_ack;
    bool nak_sent;
    rc_out *out;
    uint32_t out_head, out_len, out_cap;
    rc_stats st;
};

uint32_t rc_extra_header_bytes(const rc_hdr *h)
{
    switch ((rc_opcode)h->opcode) {
    case RC_DATA: return h->op == RC_WRITE && h->offset == 0 ? 16 : 0;
    case RC_READ_REQ: return 16;
    case RC_READ_RESP: return h->offset == 0 || h->last ? 4 : 0;
    case RC_ACK:
    case RC_NAK: return 4;
    }
    return 0;
}

rc_qp *rc_qp_new(const rc_cfg *cfg, const char *name, rc_complete_fn done, void *ctx)
{
    if (!cfg->mtu || !cfg->window_pkts || !cfg->ack_every || !cfg->rto_ps)
        sim_fatal("rc %s: mtu, window_pkts, ack_every and rto_ps must be > 0", name);
    rc_qp *q = calloc(1, sizeof *q);
    if (!q) sim_fatal("rc: out of memory");
    q->cfg = *cfg;
    snprintf(q->name, sizeof q->name, "%s", name);
    q->done = done;
    q->ctx = ctx;
    q->rewound_at = UINT32_MAX;
    return q;
}

void rc_qp_free(rc_qp *q)
{
    if (!q) return;
    free(q->msgs);
    free(q->out);
    free(q);
}

static uint32_t pkts_of(const rc_qp *q, uint64_t bytes) { return (uint32_t)((bytes + q->cfg.mtu - 1) / q->cfg.mtu); }

uint32_t rc_post(rc_qp *q, rc_op op, uint64_t bytes)
{
    if (!bytes) sim_fatal("rc %s: a message of 0 bytes", q->name);
    if (q->n_msgs == q->cap_msgs) {
        q->cap_msgs = q->cap_msgs ? 2 * q->cap_msgs : 16;
        q->msgs = realloc(q->msgs, q->cap_msgs * sizeof *q->msgs);
        if (!q->msgs) sim_fatal("rc: out of memory");
    }
    rc_msg *m = &q->msgs[q->n_msgs];
    *m = (rc_msg){ .op = op, .bytes = bytes, .first_psn = q->next_psn, .n_pkts = pkts_of(q, bytes) };
    q->next_psn += m->n_pkts;
    q->st.posted++;
    return q->n_msgs++;
}

/* The message whose PSNs hold psn (psn < next_psn). */
static uint32_t msg_of(const rc_qp *q, uint32_t psn)
{
    uint32_t lo = 0, hi = q->n_msgs;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->msgs[mid].first_psn <= psn) lo = mid;
        else hi = mid;
    }
    return lo;
}

static uint32_t end_psn(const rc_msg *m) { return m->first_psn + m->n_pkts; }

static void complete(rc_qp *q, uint32_t i)
{
    rc_msg *m = &q->msgs[i];
    if (m->done) sim_fatal("rc %s: message %u completed twice", q->name, i);
    m->done = true;
    q->st.completed++;
    if (q->done) q->done(q->ctx, i, m->op, true, m->bytes);
}

/* Everything below psn is acknowledged, up to the first READ still missing
 * responses (an ACK cannot stand for responses); returns false when the ACK
 * went past such a READ: its responses were lost. */
static bool ack_to(rc_qp *q, sim_time_ps now, uint32_t psn)
{
    bool whole = true;
    while (q->snd_una < psn && q->una_msg < q->n_msgs) {
        rc_msg *m = &q->msgs[q->una_msg];
        uint32_t upto = psn < end_psn(m) ? psn : end_psn(m);
        if (m->op == RC_READ && upto > m->first_psn + m->resp_got) {
            upto = m->first_psn + m->resp_got;
            whole = false;
        }
        if (upto > q->snd_una) {
            q->snd_una = upto;
            q->progress_ps = now;
            q->timeouts_in_row = 0;
        }
        if (q->snd_una == end_psn(m)) {
            if (m->op != RC_READ) complete(q, q->una_msg);
            q->una_msg++;
        }
        if (!whole) break;
    }
    if (q->snd_nxt < q->snd_una) q->snd_nxt = q->snd_una;
    return whole;
}

/* Go back to the oldest unacknowledged PSN, once per gap (until snd_una moves). */
static void go_back(rc_qp *q)
{
    if (q->rewound_at == q->snd_una) return;
    q->rewound_at = q->snd_una;
    q->snd_nxt = q->snd_una;
    q->st.go_back++;
}

static void out_push(rc_qp *q, rc_out o)
{
    if (o.opcode == RC_ACK && q->out_len) {   /* coalesce with an ACK queued last */
        rc_out *last = &q->out[(q->out_head + q->out_len - 1) % q->out_cap];
        if (last->opcode == RC_ACK) {
            last->psn = o.psn;
            return;
        }
    }
    if (q->out_len == q->out_cap) {
        uint32_t cap = q->out_cap ? 2 * q->out_cap : 16;
        rc_out *n = malloc(cap * sizeof *n);
        if (!n) sim_fatal("rc: out of memory");
        for (uint32_t i = 0; i < q->out_len; i++) n[i] = q->out[(q->out_head + i) % q->out_cap];
        free(q->out);
        q->out = n;
        q->out_head = 0;
        q->out_cap = cap;
    }
    q->out[(q->out_head + q->out_len++) % q->out_cap] = o;
}

static bool requester_can_send(const rc_qp *q)
{
    return !q->failed && q->snd_nxt < q->next_psn && q->snd_nxt - q->snd_una < q->cfg.window_pkts;
}

bool rc_has_packet(const rc_qp *q) { return q->out_len > 0 || requester_can_send(q); }

static void count_data(rc_qp *q, uint32_t psn, uint32_t bytes, bool requester)
{
    q->st.data_pkts++;
    q->st.data_bytes += bytes;
    if (requester && psn < q->sent_max) {
        q->st.retransmitted_pkts++;
        q->st.retransmitted_bytes += bytes;
    }
}

bool rc_next_packet(rc_qp *q, sim_time_ps now, rc_hdr *h)
{
    memset(h, 0, sizeof *h);
    if (q->out_len) {   /* the responder's first */
        rc_out *o = &q->out[q->out_head];
        h->opcode = (uint8_t)o->opcode;
        h->psn = o->psn;
        h->msg = o->msg;
        if (o->opcode == RC_READ_RESP) {
            h->op = RC_READ;
            h->offset = o->offset;
            h->payload_bytes = (uint32_t)(o->remaining < q->cfg.mtu ? o->remaining : q->cfg.mtu);
            o->offset += h->payload_bytes;
            o->remaining -= h->payload_bytes;
            o->psn++;
            h->last = o->remaining == 0;
            count_data(q, h->psn, h->payload_bytes, false);
            if (o->remaining) return true;
        } else {
            q->st.acks += o->opcode == RC_ACK;
            q->st.naks += o->opcode == RC_NAK;
        }
        q->out_head = (q->out_head + 1) % q->out_cap;
        q->out_len--;
        return true;
    }
    if (!requester_can_send(q)) return false;
    if (q->snd_nxt == q->snd_una) q->progress_ps = now;   /* the timer starts with the first PSN out */
    uint32_t i = msg_of(q, q->snd_nxt);
    const rc_msg *m = &q->msgs[i];
    const uint64_t offset = (uint64_t)(q->snd_nxt - m->first_psn) * q->cfg.mtu;
    h->op = (uint8_t)m->op;
    h->msg = i;
    h->psn = q->snd_nxt;
    h->offset = offset;
    if (m->op == RC_READ) {   /* one request for every response from here on */
        h->opcode = RC_READ_REQ;
        h->read_bytes = m->bytes - offset;
        q->st.read_reqs++;
        q->snd_nxt = end_psn(m);
    } else {
        h->opcode = RC_DATA;
        h->payload_bytes = (uint32_t)(m->bytes - offset < q->cfg.mtu ? m->bytes - offset : q->cfg.mtu);
        h->last = q->snd_nxt + 1 == end_psn(m);
        count_data(q, h->psn, h->payload_bytes, true);
        q->snd_nxt++;
    }
    if (q->snd_nxt > q->sent_max) q->sent_max = q->snd_nxt;
    return true;
}

/* ---- responder ---- */
static void ack_now(rc_qp *q)
{
    q->in_order_since_ack = 0;
    out_push(q, (rc_out){ .opcode = RC_ACK, .psn = q->e_psn - 1 });
}

static void gap(rc_qp *q)
{
    q->st.out_of_sequence++;
    if (q->nak_sent) return;
    q->nak_sent = true;
    out_push(q, (rc_out){ .opcode = RC_NAK, .psn = q->e_psn });
}

static void respond_data(rc_qp *q, const rc_hdr *h)
{
    if (h->psn < q->e_psn) {   /* a retransmission of what we have: say so again */
        q->st.duplicates++;
        ack_now(q);
        return;
    }
    if (h->psn > q->e_psn) return gap(q);
    q->e_psn++;
    q->nak_sent = false;
    if (h->last) {
        q->st.responder_completed++;
        if (q->done) q->done(q->ctx, h->msg, (rc_op)h->op, false, h->offset + h->payload_bytes);
    }
    if (++q->in_order_since_ack >= q->cfg.ack_every || h->last) ack_now(q);
}

static void respond_read(rc_qp *q, const rc_hdr *h)
{
    uint32_t n = pkts_of(q, h->read_bytes);
    if (h->psn > q->e_psn) return gap(q);
    if (h->psn < q->e_psn) q->st.duplicates++;   /* a repeated request: answer it again */
    else {
        q->e_psn += n;
        q->nak_sent = false;
        q->in_order_since_ack = 0;
    }
    out_push(q, (rc_out){ .opcode = RC_READ_RESP, .psn = h->psn, .msg = h->msg, .offset = h->offset, .remaining = h->read_bytes });
}

/* ---- requester, what comes back ---- */
static void take_read_response(rc_qp *q, sim_time_ps now, const rc_hdr *h)
{
    if (h->psn < q->snd_una || h->psn >= q->next_psn) {
        q->st.duplicates++;
        return;
    }
    /* in order when everything before it is WRITE/SEND (implicitly acknowledged) */
    uint32_t psn = q->snd_una, i = q->una_msg;
    while (psn < h->psn) {
        const rc_msg *m = &q->msgs[i];
        if (m->op == RC_READ) {
            q->st.out_of_sequence++;
            return go_back(q);   /* an earlier response was lost */
        }
        psn = end_psn(m);
        i++;
    }
    if (psn != h->psn || i >= q->n_msgs || q->msgs[i].op != RC_READ)
        sim_fatal("rc %s: a READ response with PSN %u that no READ of ours holds", q->name, h->psn);
    ack_to(q, now, h->psn);
    rc_msg *m = &q->msgs[i];
    m->resp_got++;
    q->snd_una = h->psn + 1;
    q->progress_ps = now;
    q->timeouts_in_row = 0;
    if (q->snd_nxt < q->snd_una) q->snd_nxt = q->snd_una;
    if (q->snd_una == end_psn(m)) {
        complete(q, i);
        q->una_msg = i + 1;
    }
}

void rc_receive(rc_qp *q, sim_time_ps now, const rc_hdr *h)
{
    switch ((rc_opcode)h->opcode) {
    case RC_DATA: respond_data(q, h); break;
    case RC_READ_REQ: respond_read(q, h); break;
    case RC_READ_RESP: take_read_response(q, now, h); break;
    case RC_ACK:
        if (!ack_to(q, now, h->psn + 1)) go_back(q);   /* it passed a READ whose responses did not come */
        break;
    case RC_NAK:
        ack_to(q, now, h->psn);
        q->rewound_at = UINT32_MAX;   /* the responder names this gap: go back even if we already did */
        go_back(q);
        break;
    default: sim_fatal("rc %s: opcode %u", q->name, h->opcode);
    }
}

sim_time_ps rc_timer_due(const rc_qp *q)
{
    if (q->failed || q->snd_una >= q->snd_nxt) return SIM_TIME_MAX;
    return q->progress_ps + q->cfg.rto_ps;
}

void rc_timer(rc_qp *q, sim_time_ps now)
{
    if (rc_timer_due(q) > now) return;
    q->st.timeouts++;
    if (++q->timeouts_in_row > q->cfg.retry_cnt) {
        q->failed = true;
        return;
    }
    q->progress_ps = now;
    q->rewound_at = UINT32_MAX;
    go_back(q);
}

bool rc_failed(const rc_qp *q) { return q->failed; }

bool rc_idle(const rc_qp *q) { return q->out_len == 0 && q->st.completed == q->st.posted && q->snd_una == q->next_psn; }

const rc_stats *rc_stats_get(const rc_qp *q) { return &q->st; }

int rc_check(const rc_qp *q, char *why, size_t why_n)
{
    uint64_t done = 0;
    for (uint32_t i = 0; i < q->n_msgs; i++) done += q->msgs[i].done;
    if (done != q->st.completed || done > q->st.posted) {
        snprintf(why, why_n, "rc %s: %llu messages marked done, %llu completions, %llu posted", q->name, (unsigned long long)done,
                 (unsigned long long)q->st.completed, (unsigned long long)q->st.posted);
        return -1;
    }
    if (!(q->snd_una <= q->snd_nxt && q->snd_nxt <= q->next_psn)) {
        snprintf(why, why_n, "rc %s: PSNs out of order (una %u, nxt %u, next %u)", q->name, q->snd_una, q->snd_nxt, q->next_psn);
        return -1;
    }
    for (uint32_t i = 0; i < q->una_msg && i < q->n_msgs; i++)
        if (!q->msgs[i].done) {
            snprintf(why, why_n, "rc %s: message %u acknowledged but not completed", q->name, i);
            return -1;
        }
    return 0;
}
