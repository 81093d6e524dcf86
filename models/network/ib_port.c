/* The InfiniBand link layer of one port: per-VL credits in 64-byte blocks,
 * FCTBS/FCCL flow-control packets on the wire, VL arbitration (ib_port.h). */
#include "models/network/ib_port.h"

#include "sim/ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ib_fc_body { uint16_t fctbs, fccl; uint8_t vl; } ib_fc_body;
typedef struct ib_txe { sim_pkt *pkt; uint32_t tag; } ib_txe;
typedef struct ib_txq { ib_txe *e; size_t head, len, cap; } ib_txq;
/* One arbitration table's position: the entry and the bytes its weight still allows. */
typedef struct ib_arb_pos { unsigned idx; int64_t left; } ib_arb_pos;

struct ib_port {
    sim_kernel *k;
    ib_port_cfg cfg;
    sim_link *out, *in;
    ib_port_rx_fn rx;
    ib_port_tx_fn tx;
    void *owner;
    char name[TOPO_NAME_MAX + 16];
    unsigned number;                   /* the fabric port's number at its node */
    sim_pkt_pool pool;                 /* FC packets */
    /* transmit */
    ib_txq q[IB_MAX_VLS];
    uint16_t fctbs[IB_MAX_VLS];        /* mod 4096 */
    uint16_t fccl[IB_MAX_VLS];         /* the peer's last credit limit */
    bool fccl_known[IB_MAX_VLS];
    ib_arb_pos hi, lo;
    uint64_t hi_bytes;                 /* high-priority bytes since the last low-priority packet */
    sim_time_ps stall_since_ps;        /* SIM_TIME_MAX: not stalled */
    /* receive */
    uint32_t cap_blocks;               /* per VL */
    uint32_t used[IB_MAX_VLS];
    uint16_t abr[IB_MAX_VLS];          /* mod 4096 */
    bool fc_want[IB_MAX_VLS];          /* blocks freed since the last FC packet of the VL */
    sim_time_ps next_fc_ps[IB_MAX_VLS];
    sim_time_ps period_ps;
    sim_process proc;
    sim_event wake;
    ib_port_stats st;
    /* waves: per VL the blocks we may send and the blocks our buffer holds; the credit stall */
    sim_trace *tr;
    sim_trace_var tv_credits[IB_MAX_VLS], tv_used[IB_MAX_VLS], tv_stall;
};

double ib_fc_period_bound_ns(const topo_link *l)
{
    unsigned lanes = l->preset ? l->preset->lanes : 4;
    return 65536.0 * lanes / l->GBps;
}

void ib_port_cfg_default(ib_port_cfg *c, unsigned vls, uint32_t vl_buffer_bytes)
{
    memset(c, 0, sizeof *c);
    c->vls = vls;
    c->vl_buffer_bytes = vl_buffer_bytes;
    c->fc_period_ns = 0;
    c->fc_on_free = true;
    for (unsigned s = 0; s < IB_SLS; s++) c->sl2vl[s] = (uint8_t)(s % (vls ? vls : 1));
    c->low.n = vls;
    for (unsigned v = 0; v < vls && v < IB_MAX_VLS; v++) c->low.e[v] = (ib_arb_entry){ (uint8_t)v, 255 };
    c->limit_of_high = 255;
}

int ib_arb_parse(const char *s, unsigned vls, ib_arb_table *t, char *why, size_t why_n)
{
    t->n = 0;
    const char *c = s;
    while (*c) {
        char *end;
        long vl = strtol(c, &end, 10);
        if (end == c || *end != ':') { snprintf(why, why_n, "'%s': expected VL:weight entries, e.g. 0:3,1:1", s); return -1; }
        c = end + 1;
        long w = strtol(c, &end, 10);
        if (end == c) { snprintf(why, why_n, "'%s': expected VL:weight entries, e.g. 0:3,1:1", s); return -1; }
        if (vl < 0 || (unsigned long)vl >= vls) { snprintf(why, why_n, "'%s': VL %ld; allowed 0..%u (vls=%u)", s, vl, vls - 1, vls); return -1; }
        if (w < 0 || w > 255) { snprintf(why, why_n, "'%s': weight %ld; allowed 0..255 (64-byte units)", s, w); return -1; }
        if (t->n == IB_ARB_MAX_ENTRIES) { snprintf(why, why_n, "'%s': more than %d entries", s, IB_ARB_MAX_ENTRIES); return -1; }
        t->e[t->n++] = (ib_arb_entry){ (uint8_t)vl, (uint8_t)w };
        c = end;
        if (*c == ',') c++;
        else if (*c) { snprintf(why, why_n, "'%s': entries are separated by ','", s); return -1; }
    }
    return 0;
}

int ib_sl2vl_parse(const char *s, unsigned vls, uint8_t sl2vl[IB_SLS], char *why, size_t why_n)
{
    const char *c = s;
    unsigned n = 0;
    long last = 0;
    while (*c) {
        char *end;
        long vl = strtol(c, &end, 10);
        if (end == c) { snprintf(why, why_n, "'%s': expected a VL per SL, e.g. 0,1,0,1", s); return -1; }
        if (vl < 0 || (unsigned long)vl >= vls) { snprintf(why, why_n, "'%s': VL %ld; allowed 0..%u (vls=%u)", s, vl, vls - 1, vls); return -1; }
        if (n == IB_SLS) { snprintf(why, why_n, "'%s': more than %d SLs", s, IB_SLS); return -1; }
        sl2vl[n++] = (uint8_t)vl;
        last = vl;
        c = end;
        if (*c == ',') c++;
        else if (*c) { snprintf(why, why_n, "'%s': VLs are separated by ','", s); return -1; }
    }
    if (!n) { snprintf(why, why_n, "empty SL-to-VL table; give one VL per SL, e.g. 0,1"); return -1; }
    for (; n < IB_SLS; n++) sl2vl[n] = (uint8_t)last;
    return 0;
}

static bool weighted_in(const ib_arb_table *t, unsigned vl)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->e[i].vl == vl && t->e[i].weight) return true;
    return false;
}

int ib_port_cfg_check(const ib_port_cfg *c, char *why, size_t why_n)
{
    if (c->vls < 1 || c->vls > IB_MAX_VLS) { snprintf(why, why_n, "vls=%u; allowed 1..%d", c->vls, IB_MAX_VLS); return -1; }
    if (c->vl_buffer_bytes < IB_BLOCK_BYTES) { snprintf(why, why_n, "vl_buffer_bytes=%u; allowed >= 64 (one block)", c->vl_buffer_bytes); return -1; }
    if (!(c->fc_period_ns >= 0)) { snprintf(why, why_n, "fc_period_ns=%g; allowed >= 0 (0: the IBA bound)", c->fc_period_ns); return -1; }
    if (c->limit_of_high > 255) { snprintf(why, why_n, "limit_of_high=%u; allowed 0..255", c->limit_of_high); return -1; }
    for (unsigned s = 0; s < IB_SLS; s++) {
        unsigned v = c->sl2vl[s];
        if (v >= c->vls) { snprintf(why, why_n, "SL %u maps to VL %u; allowed 0..%u (vls=%u)", s, v, c->vls - 1, c->vls); return -1; }
        if (!weighted_in(&c->high, v) && !weighted_in(&c->low, v)) {
            snprintf(why, why_n, "SL %u maps to VL %u, which has no weight in the high or low arbitration table", s, v);
            return -1;
        }
    }
    for (unsigned i = 0; i < c->high.n + c->low.n; i++) {
        const ib_arb_entry *e = i < c->high.n ? &c->high.e[i] : &c->low.e[i - c->high.n];
        if (e->vl >= c->vls) { snprintf(why, why_n, "arbitration entry for VL %u; allowed 0..%u", e->vl, c->vls - 1); return -1; }
    }
    return 0;
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);
static void run(void *ctx);

ib_port *ib_port_new(sim_kernel *k, const sim_fabric_port *fp, const ib_port_cfg *cfg, const char *name,
                     ib_port_rx_fn rx, ib_port_tx_fn tx, void *owner, sim_trace *tr, const char *scope)
{
    ib_port *p = calloc(1, sizeof *p);
    if (!p) sim_fatal("out of memory");
    p->k = k;
    p->cfg = *cfg;
    p->out = fp->out;
    p->in = fp->in;
    p->rx = rx;
    p->tx = tx;
    p->owner = owner;
    p->number = fp->port;
    snprintf(p->name, sizeof p->name, "%s", name);
    sim_pkt_pool_init_ext(&p->pool, p->name, sizeof(ib_fc_body));
    p->cap_blocks = cfg->vl_buffer_bytes / IB_BLOCK_BYTES;
    double period_ns = cfg->fc_period_ns > 0 ? cfg->fc_period_ns : ib_fc_period_bound_ns(fp->link);
    p->period_ps = (sim_time_ps)(period_ns * 1000.0 + 0.5);
    if (!p->period_ps) p->period_ps = 1;
    p->hi = (ib_arb_pos){ 0, cfg->high.n ? (int64_t)cfg->high.e[0].weight * IB_BLOCK_BYTES : 0 };
    p->lo = (ib_arb_pos){ 0, cfg->low.n ? (int64_t)cfg->low.e[0].weight * IB_BLOCK_BYTES : 0 };
    p->stall_since_ps = SIM_TIME_MAX;
    sim_link_set_receiver(p->in, on_recv, p);
    sim_event_init(&p->wake, k, "ib_port.wake");
    sim_method_init(&p->proc, k, p->name, run, p);
    sim_sensitive(&p->proc, &p->wake);
    sim_dont_initialize(&p->proc);
    if (tr) {
        p->tr = tr;
        sim_trace_push_scope(tr, scope);
        for (unsigned v = 0; v < cfg->vls; v++) {
            char n[32];
            snprintf(n, sizeof n, "tx_credits_vl%u", v);
            p->tv_credits[v] = sim_trace_add_var(tr, n, 12);
            snprintf(n, sizeof n, "rx_used_vl%u", v);
            p->tv_used[v] = sim_trace_add_var(tr, n, 16);
            sim_trace_u64(tr, p->tv_credits[v], 0);
            sim_trace_u64(tr, p->tv_used[v], 0);
        }
        p->tv_stall = sim_trace_add_var(tr, "credit_stall", 1);
        sim_trace_u64(tr, p->tv_stall, 0);
        sim_trace_pop_scope(tr);
    }
    return p;
}

static void trace_credits(const ib_port *p, unsigned vl)
{
    if (p->tr) sim_trace_u64(p->tr, p->tv_credits[vl], (p->fccl[vl] + IB_FC_MOD - p->fctbs[vl]) % IB_FC_MOD);
}

static void kick(ib_port *p) { sim_event_notify_at(&p->wake, 0); }

void ib_port_start(ib_port *p)
{
    for (unsigned v = 0; v < p->cfg.vls; v++) p->next_fc_ps[v] = sim_now(p->k);   /* the initial FC packets */
    kick(p);
}

static bool credit_ok(const ib_port *p, unsigned vl, uint32_t blocks)
{
    if (!p->fccl_known[vl]) return false;
    uint32_t after = (p->fctbs[vl] + blocks) % IB_FC_MOD;
    return ((p->fccl[vl] + IB_FC_MOD - after) % IB_FC_MOD) <= IB_FC_MAX_ADV;
}

static bool vl_ready(const ib_port *p, unsigned vl)
{
    const ib_txq *q = &p->q[vl];
    return q->len && credit_ok(p, vl, ib_blocks(q->e[q->head].pkt->wire_bytes));
}

static bool table_any_ready(const ib_port *p, const ib_arb_table *t)
{
    for (unsigned i = 0; i < t->n; i++)
        if (t->e[i].weight && vl_ready(p, t->e[i].vl)) return true;
    return false;
}

/* The VL the table's turn gives: the current entry while its weight lasts and
 * its VL can send, else the next such entry with a fresh weight (7.6.9). */
static int table_pick(const ib_port *p, const ib_arb_table *t, ib_arb_pos *pos)
{
    for (unsigned tries = 0; tries <= t->n; tries++) {
        const ib_arb_entry *e = &t->e[pos->idx];
        if (e->weight && pos->left > 0 && vl_ready(p, e->vl)) return e->vl;
        pos->idx = (pos->idx + 1) % t->n;
        pos->left = (int64_t)t->e[pos->idx].weight * IB_BLOCK_BYTES;
    }
    return -1;
}

/* VL arbitration: high priority while it has a ready VL and has not used its
 * limit with a low-priority packet waiting; then low priority. */
static int arb_pick(ib_port *p, bool *high)
{
    bool hi_ready = table_any_ready(p, &p->cfg.high), lo_ready = table_any_ready(p, &p->cfg.low);
    uint64_t limit = p->cfg.limit_of_high == 255 ? UINT64_MAX : (uint64_t)p->cfg.limit_of_high * 4096;
    if (!limit) limit = 1;   /* 0: one packet */
    if (hi_ready && (!lo_ready || p->hi_bytes < limit)) {
        *high = true;
        return table_pick(p, &p->cfg.high, &p->hi);
    }
    *high = false;
    return lo_ready ? table_pick(p, &p->cfg.low, &p->lo) : -1;
}

/* An FC packet due now: blocks freed (fc_on_free) or the VL's period passed. */
static int fc_due(const ib_port *p, sim_time_ps now)
{
    for (unsigned v = 0; v < p->cfg.vls; v++)
        if ((p->cfg.fc_on_free && p->fc_want[v]) || p->next_fc_ps[v] <= now) return (int)v;
    return -1;
}

static void send_fc(ib_port *p, unsigned vl, sim_time_ps now)
{
    sim_pkt *k = sim_pkt_alloc(&p->pool);
    k->flags = IB_PKT_F_FC;
    k->vc = (uint8_t)vl;
    k->wire_bytes = IB_FC_WIRE_BYTES;
    k->created_ps = k->injected_ps = now;
    ib_fc_body *b = sim_pkt_ext(k);
    uint32_t free_blocks = p->cap_blocks - p->used[vl];
    if (free_blocks > IB_FC_MAX_ADV) free_blocks = IB_FC_MAX_ADV;
    b->vl = (uint8_t)vl;
    b->fctbs = p->fctbs[vl];
    b->fccl = (uint16_t)((p->abr[vl] + free_blocks) % IB_FC_MOD);
    p->fc_want[vl] = false;
    p->next_fc_ps[vl] = now + p->period_ps;
    p->st.fc_sent++;
    sim_link_send(p->out, k, IB_FC_WIRE_BYTES);
}

static void send_data(ib_port *p, unsigned vl, bool high, sim_time_ps now)
{
    ib_txq *q = &p->q[vl];
    ib_txe e = q->e[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->len--;
    uint32_t b = ib_blocks(e.pkt->wire_bytes);
    p->fctbs[vl] = (uint16_t)((p->fctbs[vl] + b) % IB_FC_MOD);
    p->st.fctbs_total[vl] += b;
    p->st.sent_vl_bytes[vl] += e.pkt->wire_bytes;
    trace_credits(p, vl);
    p->st.data_sent++;
    ib_arb_pos *pos = high ? &p->hi : &p->lo;
    pos->left -= (int64_t)b * IB_BLOCK_BYTES;   /* weights count 64-byte units */
    p->hi_bytes = high ? p->hi_bytes + e.pkt->wire_bytes : 0;
    if (p->stall_since_ps != SIM_TIME_MAX) {
        p->st.credit_stall_ps += now - p->stall_since_ps;
        p->stall_since_ps = SIM_TIME_MAX;
        sim_trace_u64(p->tr, p->tv_stall, 0);
    }
    e.pkt->vc = (uint8_t)vl;
    if (!e.pkt->injected_ps) e.pkt->injected_ps = now;
    if (p->tx) p->tx(p->owner, p, e.pkt, vl, e.tag);
    sim_link_send(p->out, e.pkt, e.pkt->wire_bytes);
}

/* The transmitter: whenever the wire is free, an FC packet if one is due,
 * else the data packet VL arbitration picks; content and choice are made
 * when the wire takes them, so an FC packet always carries the latest state. */
static void run(void *ctx)
{
    ib_port *p = ctx;
    sim_time_ps now = sim_now(p->k);
    for (;;) {
        sim_time_ps free_ps = sim_link_tx_free_ps(p->out);
        if (free_ps > now) {
            sim_event_notify_at(&p->wake, free_ps - now);
            return;
        }
        int vl = fc_due(p, now);
        if (vl >= 0) {
            send_fc(p, (unsigned)vl, now);
            continue;
        }
        bool high = false;
        vl = arb_pick(p, &high);
        if (vl >= 0) {
            send_data(p, (unsigned)vl, high, now);
            continue;
        }
        bool waiting = false;
        for (unsigned v = 0; v < p->cfg.vls; v++) waiting = waiting || p->q[v].len;
        if (waiting && p->stall_since_ps == SIM_TIME_MAX) {
            p->stall_since_ps = now;
            sim_trace_u64(p->tr, p->tv_stall, 1);
        }
        sim_time_ps next = SIM_TIME_MAX;
        for (unsigned v = 0; v < p->cfg.vls; v++)
            if (p->next_fc_ps[v] < next) next = p->next_fc_ps[v];
        if (next != SIM_TIME_MAX) sim_event_notify_at(&p->wake, next - now);
        return;
    }
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    ib_port *p = ctx;
    sim_pkt *k = msg;
    if (k->flags & IB_PKT_F_FC) {
        const ib_fc_body *b = sim_pkt_ext_const(k);
        unsigned vl = b->vl;
        if (vl >= p->cfg.vls) sim_fatal("%s: FC packet for VL %u; this port has %u data VLs", p->name, vl, p->cfg.vls);
        /* 7.9.4: the receiver sets ABR to the FCTBS it is sent; on a lossless wire they are equal */
        if (b->fctbs != p->abr[vl]) p->st.fc_sync_errors++;
        p->abr[vl] = b->fctbs;
        p->fccl[vl] = b->fccl;
        p->fccl_known[vl] = true;
        p->st.fc_received++;
        trace_credits(p, vl);
        sim_pkt_free(k);
        if (p->q[vl].len) kick(p);
        return;
    }
    unsigned vl = k->vc;
    uint32_t b = ib_blocks(k->wire_bytes);
    if (vl >= p->cfg.vls) sim_fatal("%s: data packet on VL %u; this port has %u data VLs", p->name, vl, p->cfg.vls);
    if (p->used[vl] + b > p->cap_blocks)   /* a credit violation: there is no drop path, so it is a bug */
        sim_fatal("%s: VL %u: %u blocks arrive with %u of %u in use (sent without credit)", p->name, vl, b, p->used[vl],
                  p->cap_blocks);
    p->used[vl] += b;
    sim_trace_u64(p->tr, p->tv_used[vl], p->used[vl]);
    if (p->used[vl] > p->st.max_used_blocks[vl]) p->st.max_used_blocks[vl] = p->used[vl];
    p->abr[vl] = (uint16_t)((p->abr[vl] + b) % IB_FC_MOD);
    p->st.abr_total[vl] += b;
    p->st.data_received++;
    k->hops++;
    p->rx(p->owner, p, k, vl);
}

void ib_port_enqueue(ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag)
{
    if (vl >= p->cfg.vls) sim_fatal("%s: enqueue on VL %u; %u data VLs", p->name, vl, p->cfg.vls);
    ib_txq *q = &p->q[vl];
    if (q->len == q->cap) {
        q->e = sim_ring_grow(q->e, sizeof *q->e, q->head, q->len, &q->cap, 16);
        q->head = 0;
    }
    q->e[(q->head + q->len) & (q->cap - 1)] = (ib_txe){ pkt, tag };
    q->len++;
    kick(p);
}

void ib_port_release(ib_port *p, unsigned vl, uint32_t blocks)
{
    if (vl >= p->cfg.vls || blocks > p->used[vl])
        sim_fatal("%s: release of %u blocks on VL %u with %u in use", p->name, blocks, vl, vl < IB_MAX_VLS ? p->used[vl] : 0);
    p->used[vl] -= blocks;
    sim_trace_u64(p->tr, p->tv_used[vl], p->used[vl]);
    if (p->cfg.fc_on_free) {
        p->fc_want[vl] = true;
        kick(p);
    }
}

unsigned ib_port_queued(const ib_port *p, unsigned vl) { return vl < p->cfg.vls ? (unsigned)p->q[vl].len : 0; }
uint32_t ib_port_credits(const ib_port *p, unsigned vl)
{
    if (vl >= p->cfg.vls || !p->fccl_known[vl]) return 0;
    return (p->fccl[vl] + IB_FC_MOD - p->fctbs[vl]) % IB_FC_MOD;
}
uint32_t ib_port_used_blocks(const ib_port *p, unsigned vl) { return vl < p->cfg.vls ? p->used[vl] : 0; }
const ib_port_cfg *ib_port_config(const ib_port *p) { return &p->cfg; }

ib_port_stats ib_port_stats_get(const ib_port *p)
{
    ib_port_stats st = p->st;   /* a stall going on now counts up to now */
    if (p->stall_since_ps != SIM_TIME_MAX) st.credit_stall_ps += sim_now(p->k) - p->stall_since_ps;
    return st;
}

unsigned ib_port_number(const ib_port *p) { return p->number; }

void ib_port_reset_stats(ib_port *p)
{
    p->st.credit_stall_ps = 0;
    if (p->stall_since_ps != SIM_TIME_MAX) p->stall_since_ps = sim_now(p->k);
}

int ib_port_check(const ib_port *p, bool drained, char *why, size_t why_n)
{
    for (unsigned v = 0; v < p->cfg.vls; v++) {
        if (p->used[v] > p->cap_blocks) {
            snprintf(why, why_n, "%s: VL %u holds %u blocks of %u", p->name, v, p->used[v], p->cap_blocks);
            return -1;
        }
        if ((p->st.fctbs_total[v] % IB_FC_MOD) != p->fctbs[v] || (p->st.abr_total[v] % IB_FC_MOD) != p->abr[v]) {
            snprintf(why, why_n, "%s: VL %u: FCTBS/ABR counters disagree with their totals", p->name, v);
            return -1;
        }
        if (drained && (p->q[v].len || p->used[v])) {
            snprintf(why, why_n, "%s: VL %u not drained: %zu queued, %u blocks buffered", p->name, v, p->q[v].len, p->used[v]);
            return -1;
        }
    }
    if (p->st.fc_sync_errors) {
        snprintf(why, why_n, "%s: %llu FC packets whose FCTBS differed from ABR (blocks lost)", p->name,
                 (unsigned long long)p->st.fc_sync_errors);
        return -1;
    }
    if (p->pool.live) {   /* FC packets are freed by the peer on arrival */
        uint64_t in_flight = sim_link_in_flight(p->out);
        if (p->pool.live > in_flight) {
            snprintf(why, why_n, "%s: %llu FC packets out, %llu messages on the wire", p->name,
                     (unsigned long long)p->pool.live, (unsigned long long)in_flight);
            return -1;
        }
    }
    return 0;
}

void ib_port_for_each_held(const ib_port *p, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    for (unsigned v = 0; v < p->cfg.vls; v++)
        for (size_t i = 0; i < p->q[v].len; i++) fn(p->q[v].e[(p->q[v].head + i) & (p->q[v].cap - 1)].pkt, ctx);
}

void ib_port_free(ib_port *p)
{
    if (!p) return;
    for (unsigned v = 0; v < IB_MAX_VLS; v++) free(p->q[v].e);
    sim_pkt_pool_free(&p->pool);
    free(p);
}
