/* Internal to the files of one PCIe port (pcie_port.c, pcie_label.c,
 * pcie_fc.c, pcie_rx.c, pcie_tx.c, pcie_flit.c): the helpers several of them
 * use on the per-TLP path (inline here), and what each file offers the
 * others. Nothing here reads another port: a port meets its partner only
 * through its links. */
#ifndef PCIE_PORT_IMPL_H
#define PCIE_PORT_IMPL_H

#include "models/pcie/pcie_port.h"

/* Per-TLP helpers with several callers, which LTO leaves out of line: a call
 * costs 10-20 instructions of register saves, a few percent of a TLP each. */
#define HOT_INLINE static inline __attribute__((always_inline))

#define FC_REFRESH_PS SIM_US(30)   /* §2.6.1.2: UpdateFC at least every 30 us per non-infinite type */

extern const char *const pcie_cls_name[PCIE_FC_CLASSES];

/* ---- packets ---------------------------------------------------------------- */
/* A packet from the port's own pool: *m is the sim_pkt the link carries, the
 * result its extension (fields the sender always sets are left as they were). */
HOT_INLINE pcie_pkt *pkt_alloc(pcie_port *p, sim_pkt **m, uint8_t kind, uint32_t wire_bytes)
{
    sim_pkt *s = sim_pkt_alloc(&p->pool);
    s->wire_bytes = wire_bytes;
    pcie_pkt *k = pcie_pkt_of(s);
    k->kind = kind;
    k->corrupted = 0;
    k->replayed = 0;
    k->has_flit = 0;
    *m = s;
    return k;
}

/* ---- TLP queues ---------------------------------------------------------------- */
static inline pcie_tlp *tlpq_head(pcie_tlpq *q) { return &q->v[q->head]; }
static inline void tlpq_pop(pcie_tlpq *q)
{
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->len--;
}

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

/* Wave updates: the check for tracing inline (it is off on the hot path), the work out of line (pcie_port.c). */
void pcie_trace_credits_now(pcie_port *p);
void pcie_trace_dll_now(pcie_port *p);
static inline void trace_credits(pcie_port *p)
{
    if (p->tr) pcie_trace_credits_now(p);
}
static inline void trace_dll(pcie_port *p)
{
    if (p->tr) pcie_trace_dll_now(p);
}

static inline void stall_begin(pcie_port *p, sim_time_ps now)
{
    if (p->stalled) return;
    p->stalled = true;
    p->stall_since = now;
    sim_trace_u64(p->tr, p->tv_stall, 1);
}
static inline void stall_end(pcie_port *p, sim_time_ps now)
{
    if (!p->stalled) return;
    p->stalled = false;
    p->stall_ps += now - p->stall_since;
    sim_trace_u64(p->tr, p->tv_stall, 0);
}

/* ---- flow control (pcie_fc.c) --------------------------------------------------------- */
bool pcie_class_finite(const pcie_port *p, unsigned cls);
void pcie_fill_fc_fields(pcie_port *p, unsigned cls, uint32_t *hf, uint32_t *df, bool mark_sent);
void pcie_loop_types_update(pcie_port *p);
void pcie_fc_update_received(pcie_port *p, unsigned cls, uint32_t hf, uint32_t df);
void pcie_initfc_received(pcie_port *p, const pcie_pkt *k);
void pcie_go_active(pcie_port *p);

/* Credit-loop probe: the transmitter spent a class's credits at t; the
 * UpdateFC that returns them closes the loop (loop_returned, pcie_fc.c). */
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

/* ---- transaction layer, transmit: the arbiter's choice (pcie_tx.c, pcie_flit.c) ------------ */
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

/* ---- receive (pcie_rx.c) ------------------------------------------------------------------ */
void pcie_rx_arm(pcie_port *p);
void pcie_drain_run(void *ctx);
void pcie_port_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);
bool pcie_rx_deferrable(void *ctx, sim_link *l, const void *msg);
bool pcie_forced_nak(pcie_port *p);
void pcie_rx_accept(pcie_port *p, const pcie_tlp *t);

/* ---- transmit, data link layer and wire (pcie_tx.c) ----------------------------------------- */
unsigned pcie_wire_errors(pcie_port *p, uint32_t bytes, uint32_t *err_bytes, unsigned max_err);
bool pcie_in_bad_window(const pcie_port *p, sim_time_ps t);
void pcie_acknak_received(pcie_port *p, uint16_t seq, bool nak);
void pcie_replay_timer_start(pcie_port *p, sim_time_ps tx_end);
void pcie_replay_timeout(pcie_port *p, sim_time_ps now);
void pcie_send_dllp(pcie_port *p, enum pcie_pkt_kind kind, unsigned cls, sim_time_ps now);
void pcie_send_skp(pcie_port *p, sim_time_ps now);
bool pcie_skp_due(pcie_port *p, sim_time_ps now);
void pcie_tx_run(void *ctx);

/* ---- Flit Mode (pcie_flit.c) ------------------------------------------------------------------ */
bool pcie_tx_one_flit(pcie_port *p, sim_time_ps now);
void pcie_rx_flit(pcie_port *p, pcie_pkt *k);

#endif
