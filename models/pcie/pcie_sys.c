/* The two components on either side of the link: a DMA requester (writes
 * split at MPS, reads at MRRS, tags for outstanding reads) and a memory
 * completer (answers reads after cpl_ps with completions split at RCB/MPS),
 * each with a full port, joined by one sim_link per direction. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port.h"
#include "sim/ring.h"

#define XFER_RING 1024u          /* read transfers in flight (<= tags + 1) */
#define TL_QUEUE_DEPTH 2u        /* DMA engine keeps its TL queue this shallow (TLPs made just in time) */

typedef struct tag_ent {
    bool busy;
    uint32_t remaining;
    uint64_t next_addr;
    uint64_t xfer;
} tag_ent;

typedef struct pend_rd { pcie_tlp mrd; sim_time_ps ready_ps; } pend_rd;

struct pcie_sys {
    sim_kernel *k;
    pcie_cfg cfg;
    pcie_phy phy;                  /* the wire's (link rate); each port has its own copy */
    sim_link *down, *up;
    pcie_port *req, *cpl;          /* one port per end of the link (pcie_port.h's API) */
    pcie_results res;
    uint64_t base_wr, base_rd;
    /* requester: write engine */
    uint64_t wr_xfer, wr_off, wr_done;
    sim_time_ps wr_xfer_start;
    /* requester: read engine */
    uint64_t rd_xfer, rd_off, rd_done;
    sim_time_ps rd_xfer_start;
    tag_ent *tags;
    uint16_t *free_tags; unsigned n_free_tags;
    uint64_t *rd_remaining;        /* per transfer in flight, ring by transfer number */
    uint64_t rd_oldest;            /* lowest transfer number not yet complete */
    /* completer */
    uint64_t wr_expect_addr;
    pend_rd *pend; size_t pend_head, pend_len, pend_cap;
    sim_event cpl_ev;
    sim_process cpl_proc;
    /* integrity */
    uint64_t addr_errors;
    bool finished;
};

static bool want_wr(const pcie_sys *s) { return s->cfg.op == PCIE_OP_WR || s->cfg.op == PCIE_OP_RDWR; }
static bool want_rd(const pcie_sys *s) { return s->cfg.op == PCIE_OP_RD || s->cfg.op == PCIE_OP_RDWR; }

static void check_finished_settled(pcie_sys *s);
static inline void check_finished(pcie_sys *s)
{
    if (s->finished) return;
    /* Not yet even if every TLP still buffered or on the wire completed a
     * transfer: skip the settling (the common case, once per TLP). */
    if (want_wr(s) && s->wr_done + pcie_port_rx_buffered(s->cpl) + sim_link_in_flight(s->down) < s->cfg.count) return;
    if (want_rd(s) && s->rd_done + pcie_port_rx_buffered(s->req) + sim_link_in_flight(s->up) < s->cfg.count) return;
    check_finished_settled(s);
}
/* The rest of check_finished, out of line: it runs only near the end of the run. */
static void check_finished_settled(pcie_sys *s)
{
    /* departures from the receive buffers that are due but deferred happen first */
    pcie_port_settle(s->cpl);
    pcie_port_settle(s->req);
    if (want_wr(s) && s->wr_done < s->cfg.count) return;
    if (want_rd(s) && s->rd_done < s->cfg.count) return;
    if (pcie_port_replay_occupancy(s->req) || pcie_port_replay_occupancy(s->cpl)) return;
    s->finished = true;
    sim_time_ps end = sim_now(s->k), rx_end = pcie_port_rx_now(s->cpl);
    s->res.end_ps = end > rx_end ? end : rx_end;
    sim_stop(s->k);
}

/* ---- requester ------------------------------------------------------------------ */
static uint8_t hdr_bytes(const pcie_sys *s, uint64_t addr)
{
    return (s->cfg.addr64 && addr >= (1ull << 32)) ? 16 : 12;
}

static void req_refill(void *ctx, pcie_port *p, unsigned cls)
{
    pcie_sys *s = ctx;
    sim_time_ps now = pcie_port_tl_now(p);
    if ((cls == PCIE_FC_P || cls == PCIE_FC_CLASSES) && want_wr(s)) {
        while (pcie_port_queued(p, PCIE_FC_P) < TL_QUEUE_DEPTH && s->wr_xfer < s->cfg.count) {
            if (s->wr_off == 0) s->wr_xfer_start = now;
            uint64_t addr = s->base_wr + s->wr_xfer * s->cfg.size + s->wr_off;
            uint64_t to_boundary = s->cfg.mps - (addr & (s->cfg.mps - 1));   /* naturally aligned MPS pieces never cross 4 KB */
            uint64_t len = s->cfg.size - s->wr_off < to_boundary ? s->cfg.size - s->wr_off : to_boundary;
            pcie_tlp t = { 0 };
            t.type = PCIE_TLP_MWR;
            t.addr = addr;
            t.len = (uint32_t)len;
            t.hdr_bytes = hdr_bytes(s, addr);
            t.ecrc = s->cfg.ecrc;
            t.xfer = (uint32_t)s->wr_xfer;
            t.xfer_start_ps = s->wr_xfer_start;
            s->wr_off += len;
            t.last = s->wr_off == s->cfg.size;
            pcie_port_submit(p, &t);
            if (t.last) {
                if (s->cfg.msg_per_xfer) {
                    /* "transfer done" message: posted, ordered behind the data it announces */
                    pcie_tlp m = { 0 };
                    m.type = PCIE_TLP_MSG;
                    m.hdr_bytes = 16;
                    m.ecrc = s->cfg.ecrc;
                    m.xfer = (uint32_t)s->wr_xfer;
                    m.xfer_start_ps = s->wr_xfer_start;
                    pcie_port_submit(p, &m);
                }
                s->wr_off = 0;
                s->wr_xfer++;
            }
        }
    }
    if ((cls == PCIE_FC_NP || cls == PCIE_FC_CLASSES) && want_rd(s)) {
        while (pcie_port_queued(p, PCIE_FC_NP) < TL_QUEUE_DEPTH && s->rd_xfer < s->cfg.count && s->n_free_tags) {
            if (s->rd_xfer - s->rd_oldest >= XFER_RING) break;
            if (s->rd_off == 0) {
                s->rd_xfer_start = now;
                s->rd_remaining[s->rd_xfer % XFER_RING] = s->cfg.size;
            }
            uint64_t addr = s->base_rd + s->rd_xfer * s->cfg.size + s->rd_off;
            uint64_t to_boundary = s->cfg.mrrs - (addr & (s->cfg.mrrs - 1));
            uint64_t len = s->cfg.size - s->rd_off < to_boundary ? s->cfg.size - s->rd_off : to_boundary;
            uint16_t tag = s->free_tags[--s->n_free_tags];
            tag_ent *te = &s->tags[tag];
            te->busy = true;
            te->remaining = (uint32_t)len;
            te->next_addr = addr;
            te->xfer = s->rd_xfer;
            pcie_tlp t = { 0 };
            t.type = PCIE_TLP_MRD;
            t.addr = addr;
            t.len = (uint32_t)len;
            t.tag = tag;
            t.hdr_bytes = hdr_bytes(s, addr);
            t.ecrc = s->cfg.ecrc;
            t.xfer = (uint32_t)s->rd_xfer;
            t.xfer_start_ps = s->rd_xfer_start;
            s->rd_off += len;
            if (s->rd_off == s->cfg.size) {
                s->rd_off = 0;
                s->rd_xfer++;
            }
            pcie_port_submit(p, &t);
        }
    }
}

static void req_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    pcie_sys *s = ctx;
    if (t->type != PCIE_TLP_CPLD) sim_fatal("pcie requester: unexpected %u TLP", t->type);
    tag_ent *te = &s->tags[t->tag];
    if (!te->busy || t->addr != te->next_addr || t->byte_count != te->remaining || t->len > te->remaining) {
        s->addr_errors++;
        return;
    }
    te->remaining -= t->len;
    te->next_addr += t->len;
    uint64_t *rem = &s->rd_remaining[te->xfer % XFER_RING];
    *rem -= t->len;
    if (*rem == 0) {
        sim_hist_add(&s->res.latency_ns, (double)(sim_now(s->k) - t->xfer_start_ps) / 1000.0);
        s->rd_done++;
        while (s->rd_oldest < s->rd_xfer && s->rd_remaining[s->rd_oldest % XFER_RING] == 0) s->rd_oldest++;
    }
    if (te->remaining == 0) {
        if (!t->last) s->addr_errors++;
        te->busy = false;
        s->free_tags[s->n_free_tags++] = t->tag;
        req_refill(s, p, PCIE_FC_NP);
    }
    check_finished(s);
}

/* ---- completer -------------------------------------------------------------------- */
static void cpl_generate(pcie_sys *s, const pcie_tlp *mrd)
{
    pcie_port_submit_completions(s->cpl, mrd, s->cfg.mps, s->cfg.rcb, s->cfg.cpl_split_rcb, s->cfg.ecrc);
}

static void cpl_run(void *ctx)
{
    pcie_sys *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->pend_len && s->pend[s->pend_head].ready_ps <= now) {
        cpl_generate(s, &s->pend[s->pend_head].mrd);
        s->pend_head = (s->pend_head + 1) % s->pend_cap;
        s->pend_len--;
    }
    if (s->pend_len) sim_event_notify_at(&s->cpl_ev, s->pend[s->pend_head].ready_ps - now);
}

static void cpl_accept_read(pcie_sys *s, const pcie_tlp *t, sim_time_ps now);
static void cpl_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    pcie_sys *s = ctx;
    sim_time_ps now = pcie_port_rx_now(p);
    if (t->type == PCIE_TLP_MWR) {
        if (t->addr != s->wr_expect_addr) s->addr_errors++;
        s->wr_expect_addr = t->addr + t->len;
        if (t->last) {
            sim_hist_add(&s->res.latency_ns, (double)(now - t->xfer_start_ps) / 1000.0);
            s->wr_done++;   /* (now: the TLP's own departure time, also when it was deferred) */
            check_finished(s);
        }
        return;
    }
    if (t->type == PCIE_TLP_MSG) {
        /* posted ordering: the message arrives after all data of its transfer */
        s->res.msgs_received++;
        if (t->xfer + 1 != s->wr_done) s->res.msg_order_errors++;
        return;
    }
    if (t->type != PCIE_TLP_MRD) sim_fatal("pcie completer: unexpected %u TLP", t->type);
    cpl_accept_read(s, t, now);
}

/* A read request waits cpl_ps for the memory (kept out of line: the posted
 * path above runs once per TLP and stays light). */
static __attribute__((noinline)) void cpl_accept_read(pcie_sys *s, const pcie_tlp *t, sim_time_ps now)
{
    if (s->pend_len == s->pend_cap) {
        s->pend = sim_ring_grow(s->pend, sizeof *s->pend, s->pend_head, s->pend_len, &s->pend_cap, 64);
        s->pend_head = 0;
    }
    pend_rd *e = &s->pend[(s->pend_head + s->pend_len) % s->pend_cap];
    e->mrd = *t;
    e->ready_ps = now + s->cfg.cpl_ps;
    if (s->pend_len++ == 0) sim_event_notify_at(&s->cpl_ev, s->cfg.cpl_ps);
}

static void any_drained(void *ctx, pcie_port *p)
{
    (void)p;
    check_finished(ctx);
}

/* Posted TLPs may leave the completer's receive buffer lazily, except the one
 * that completes the run (see rx_arm_departure in pcie_rx.c). */
static bool cpl_timely(void *ctx, const pcie_tlp *t)
{
    const pcie_sys *s = ctx;
    if (t->fc_class != PCIE_FC_P) return true;   /* not MWr or Msg */
    return t->xfer + 1 >= s->cfg.count && (t->last || t->type == PCIE_TLP_MSG);
}

static void cpl_refill(void *ctx, pcie_port *p, unsigned cls)
{
    (void)ctx;
    (void)p;
    (void)cls;
}

/* ---- system ------------------------------------------------------------------------- */
/* What one side's port is configured with: the link parameters, its own
 * advertisement, the errors on what it sends and the forced Naks on what it
 * receives. The lookahead relies on an error-free link in both directions,
 * which only the system that builds both ends knows. */
static void port_cfg_of(const pcie_cfg *c, unsigned side, pcie_port_cfg *pc)
{
    memset(pc, 0, sizeof *pc);
    pc->gen = c->gen;
    pc->lanes = c->lanes;
    pc->mps = c->mps;
    pc->fc_scale = c->fc_scale;
    pc->wire_ps = c->wire_ps;
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) pc->adv[t] = c->adv[side][t];
    pc->rx_ps = c->rx_ps;
    pc->retrain_ps = c->retrain_ps;
    pc->tx_err = c->err[side];          /* a side transmits in the direction of its number */
    pc->rx_nak_every = c->err[side ^ 1u].nak_every;
    pc->no_lookahead = c->no_lookahead;
    bool error_free = true;
    for (unsigned d = 0; d < 2; d++) {
        const pcie_err_cfg *e = &c->err[d];
        if (e->ber != 0 || e->nak_every || e->drop_ack_every || e->bad_until_ps > e->bad_from_ps) error_free = false;
    }
    pc->link_error_free = error_free;
}

pcie_sys *pcie_sys_new(sim_kernel *k, const pcie_cfg *cfg, uint64_t seed, sim_trace *tr)
{
    char why[256];
    if (pcie_cfg_check(cfg, why, sizeof why)) sim_fatal("pcie: bad configuration: %s", why);
    pcie_sys *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->k = k;
    s->cfg = *cfg;
    pcie_phy_init(&s->phy, cfg->gen, cfg->lanes, cfg->mps, cfg->wire_ps);
    sim_hist_init(&s->res.latency_ns, "latency_ns");
    s->base_wr = cfg->addr64 ? 0x100000000ull : 0x10000000ull;
    s->base_rd = s->base_wr + 0x40000000ull;
    s->wr_expect_addr = s->base_wr;

    sim_link_cfg lc = { 0 };
    lc.latency_ps = cfg->wire_ps;
    lc.bandwidth_GBps = s->phy.raw_GBps;
    lc.credit_latency_ps = SIM_LINK_SAME_LATENCY;
    lc.name = "down";
    s->down = sim_link_new(k, &lc);
    lc.name = "up";
    s->up = sim_link_new(k, &lc);

    pcie_port_cfg pc[PCIE_SIDES];
    for (unsigned side = 0; side < PCIE_SIDES; side++) port_cfg_of(cfg, side, &pc[side]);
    sim_trace_push_scope(tr, "pcie");
    s->req = pcie_port_new(k, "requester", &pc[PCIE_REQUESTER], PCIE_DOWN, s->down, s->up, seed, tr);
    s->cpl = pcie_port_new(k, "completer", &pc[PCIE_COMPLETER], PCIE_UP, s->up, s->down, seed, tr);
    sim_link_trace(s->down, tr, pcie_pkt_label);
    sim_link_trace(s->up, tr, pcie_pkt_label);
    sim_trace_pop_scope(tr);

    pcie_port_app ra = { s, req_deliver, req_refill, any_drained, NULL };
    pcie_port_app ca = { s, cpl_deliver, cpl_refill, any_drained, cpl_timely };
    pcie_port_set_app(s->req, &ra);
    pcie_port_set_app(s->cpl, &ca);

    s->tags = calloc(cfg->tags, sizeof *s->tags);
    s->free_tags = calloc(cfg->tags, sizeof *s->free_tags);
    s->rd_remaining = calloc(XFER_RING, sizeof *s->rd_remaining);
    if (!s->tags || !s->free_tags || !s->rd_remaining) sim_fatal("out of memory");
    for (unsigned i = 0; i < cfg->tags; i++) s->free_tags[s->n_free_tags++] = (uint16_t)(cfg->tags - 1 - i);

    sim_event_init(&s->cpl_ev, k, "pcie_cpl");
    sim_method_init(&s->cpl_proc, k, "completer_mem", cpl_run, s);
    sim_sensitive(&s->cpl_proc, &s->cpl_ev);
    sim_dont_initialize(&s->cpl_proc);

    s->res.xfers_expected = cfg->count * (cfg->op == PCIE_OP_RDWR ? 2u : 1u);
    /* the DMA engine has its first TLPs ready at t=0; they go once the link is up */
    req_refill(s, s->req, PCIE_FC_CLASSES);
    return s;
}

const pcie_phy *pcie_sys_phy(const pcie_sys *s) { return &s->phy; }

bool pcie_sys_run(pcie_sys *s, sim_time_ps limit_ps)
{
    if (s->cfg.count == 0) s->finished = true;
    if (s->finished) return true;
    sim_run(s->k, limit_ps);
    if (!s->finished) s->res.end_ps = sim_now(s->k);
    return s->finished;
}

uint64_t pcie_sys_xfers_done(const pcie_sys *s) { return s->wr_done + s->rd_done; }

void pcie_sys_results(pcie_sys *s, pcie_results *r)
{
    pcie_port_settle(s->cpl);
    pcie_port_settle(s->req);
    /* a direction's record: the transmitter's counts, the receiver's of what it delivered */
    pcie_port_counters cnt[2];    /* by side: requester, completer */
    pcie_port_get_counters(s->req, &cnt[PCIE_REQUESTER]);
    pcie_port_get_counters(s->cpl, &cnt[PCIE_COMPLETER]);
    const pcie_port_counters *tx_of[2] = { &cnt[PCIE_REQUESTER], &cnt[PCIE_COMPLETER] };   /* down is sent by the requester */
    const pcie_port_counters *rx_of[2] = { &cnt[PCIE_COMPLETER], &cnt[PCIE_REQUESTER] };
    pcie_port *rx_port[2] = { s->cpl, s->req };
    for (int d = 0; d < 2; d++) {
        pcie_dir_stats *st = &s->res.dir[d];
        const pcie_dir_stats *rx = &rx_of[d]->rx;
        *st = tx_of[d]->tx;
        st->forced_naks = rx->forced_naks;
        st->payload_delivered = rx->payload_delivered;
        st->first_delivery_ps = rx->first_delivery_ps;
        st->last_delivery_ps = rx->last_delivery_ps;
        st->first_delivery_bytes = rx->first_delivery_bytes;
    }
    *r = s->res;
    memset(&s->res.latency_ns, 0, sizeof s->res.latency_ns);   /* ownership moves to r */
    sim_hist_init(&s->res.latency_ns, "latency_ns");
    r->completed = s->finished;
    r->xfers_done = s->wr_done + s->rd_done;
    for (int i = 0; i < 2; i++) {
        const pcie_port_counters *c = &cnt[i];
        r->replays += c->replays;
        r->retrains += c->retrains;
        r->replay_timeouts += c->replay_timeouts;
        r->naks_received += c->naks_received;
        r->invalid_acknaks += c->invalid_acknaks;
        r->updatefcs_refresh += c->fc_refresh_sent;
        r->fc_overflows += c->fc_overflows;
        r->fc_overflows_side[i] += c->fc_overflows;   /* cnt[] is indexed by side */
        if (c->max_replay_occupancy > r->max_replay_occupancy) r->max_replay_occupancy = c->max_replay_occupancy;
        if (c->replays_before_retrain_max > r->replays_before_retrain_max)
            r->replays_before_retrain_max = c->replays_before_retrain_max;
    }
    /* refreshes of posted credits by the completer (the receiver of the writes) */
    r->updatefcs_refresh_posted = cnt[PCIE_COMPLETER].fc_refresh_sent_posted;
    /* conservation above the DLL, per receiving direction */
    for (int d = 0; d < 2; d++) {
        pcie_dir_stats *st = &r->dir[d];
        uint64_t sent = tx_of[d]->tl_sent, got = rx_of[d]->tl_received;
        uint64_t pending = pcie_port_rx_buffered(rx_port[d]);   /* legitimately on the way: in receive buffers */
        st->lost = (r->completed && sent > got + pending) ? sent - got - pending : 0;
        st->duplicated = rx_of[d]->rx_duplicated;
        st->reordered = rx_of[d]->rx_reordered + (d == 0 ? s->addr_errors : 0);
    }
    /* credit stalls of the port that sends the data */
    sim_time_ps a_req = pcie_port_active_ps(s->req), a_cpl = pcie_port_active_ps(s->cpl);
    sim_time_ps active = a_req > a_cpl ? a_req : a_cpl;
    sim_time_ps end = r->end_ps;
    r->active_ps = end > active ? end - active : 0;
    double st_req = (double)pcie_port_stall_ps(s->req), st_cpl = (double)pcie_port_stall_ps(s->cpl);
    double stall = s->cfg.op == PCIE_OP_WR ? st_req : s->cfg.op == PCIE_OP_RD ? st_cpl : (st_req > st_cpl ? st_req : st_cpl);
    r->credit_stall_frac = r->active_ps ? stall / (double)r->active_ps : 0;
    const pcie_port_counters *cq = &cnt[PCIE_REQUESTER], *cc = &cnt[PCIE_COMPLETER];
    uint64_t n = cq->credit_loop_samples + cc->credit_loop_samples;
    r->credit_loop_samples = n;
    r->credit_loop_ns = n ? (cq->credit_loop_sum_ns + cc->credit_loop_sum_ns) / (double)n : 0;
    double mn = 0;
    if (cq->credit_loop_samples) mn = cq->credit_loop_min_ns;
    if (cc->credit_loop_samples && (!cq->credit_loop_samples || cc->credit_loop_min_ns < mn)) mn = cc->credit_loop_min_ns;
    r->credit_loop_min_ns = mn;
}

int pcie_sys_check_links(const pcie_sys *s, char *why, size_t n)
{
    if (sim_link_check(s->down, false, why, n)) return -1;
    if (sim_link_check(s->up, false, why, n)) return -1;
    /* each port's own laws (mid-run too): every packet its pool has out is on its way to the
     * partner, nothing beyond its credits, nothing duplicated or reordered above its DLL */
    pcie_port *ports[2] = { s->req, s->cpl };
    for (int i = 0; i < 2; i++)
        if (pcie_port_check(ports[i], false, why, n)) return -1;
    return 0;
}

int pcie_sys_check_credits(pcie_sys *s, char *why, size_t n)
{
    static const char *const side_name[PCIE_SIDES] = { "requester (endpoint)", "completer (root port)" };
    pcie_port *rx_of[PCIE_SIDES] = { s->req, s->cpl }, *tx_of[PCIE_SIDES] = { s->cpl, s->req };
    pcie_port_settle(s->cpl);   /* departures that are due leave the receive buffers first */
    pcie_port_settle(s->req);
    for (unsigned side = 0; side < PCIE_SIDES; side++) {
        for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
            const pcie_fc_rx *r = pcie_port_fc_rx(rx_of[side], t);
            const pcie_fc_tx *f = pcie_port_fc_tx(tx_of[side], t);
            const char *name = pcie_fc_param_name(side, t);
            if (r->overflows) {
                snprintf(why, n, "%s received %" PRIu64 " TLPs beyond its advertised %s credits", side_name[side],
                         r->overflows, name);
                return -1;
            }
            if (!s->finished || r->infinite) continue;
            if (f->infinite) {
                snprintf(why, n, "%s advertised %s=%" PRIu64 " but its partner's transmitter treats it as infinite",
                         side_name[side], name, r->initial);
                return -1;
            }
            if (r->allocated - r->initial != r->received) {
                snprintf(why, n, "%s %s: its TLPs took %" PRIu64 " credits and released %" PRIu64 " by the end of the run",
                         side_name[side], name, r->received, r->allocated - r->initial);
                return -1;
            }
            if ((r->received & f->mask) != f->consumed) {
                snprintf(why, n, "%s %s: received %" PRIu64 " credits (%" PRIu64 " mod 2^F), its partner consumed %u mod 2^F",
                         side_name[side], name, r->received, r->received & f->mask, f->consumed);
                return -1;
            }
        }
    }
    return 0;
}

void pcie_sys_free(pcie_sys *s)
{
    if (!s) return;
    /* packets still on the wire go back to their sender's pool first: each pool is freed strictly */
    pcie_port_give_back_in_flight(s->down);
    pcie_port_give_back_in_flight(s->up);
    pcie_port_free(s->req);
    pcie_port_free(s->cpl);
    sim_link_free(s->down);
    sim_link_free(s->up);
    sim_hist_free(&s->res.latency_ns);
    free(s->tags);
    free(s->free_tags);
    free(s->rd_remaining);
    free(s->pend);
    free(s);
}
