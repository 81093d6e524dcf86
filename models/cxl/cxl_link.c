/* One direction of a CXL link: class queues, 68 B flit packing, credits (see cxl_link.h). */
#include "models/cxl/cxl_link.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cxl_path *cxl_path_copy(const cxl_path *p)
{
    if (!p) return NULL;
    cxl_path *c = malloc(sizeof *c);
    if (!c) sim_fatal("out of memory");
    *c = *p;
    return c;
}

void cxl_path_add(cxl_path *p, const char *name, sim_time_ps ps, bool link)
{
    if (!p || p->n >= CXL_PATH_MAX) return;
    p->hop[p->n].name = name;
    p->hop[p->n].ps = ps;
    p->hop[p->n].link = link;
    p->n++;
}

double cxl_link_GBps(unsigned lanes, double gts)
{
    return lanes * gts / 8.0 * 128.0 / 130.0;   /* 8, 16 and 32 GT/s all use 128b/130b */
}

void cxl_link_check_params(const char *test, unsigned lanes, double gts)
{
    if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)
        sim_input_error("%s: lanes=%u; allowed: 1, 2, 4, 8, 16", test, lanes);
    if (fabs(gts - 64) < 1e-9)
        sim_input_error("%s: gts=64 needs the 256-byte flit mode (CXL 3.x on the PCIe 6 Flit Mode PHY), which is not "
                        "modelled; this model has the 68-byte flit mode only; allowed: 8, 16, 32", test);
    if (fabs(gts - 2.5) < 1e-9 || fabs(gts - 5) < 1e-9)
        sim_input_error("%s: gts=%g is not a CXL rate (a Flex Bus link trains there in PCIe mode only; CXL 1.1/2.0 "
                        "run at 32 GT/s and fall back to 16 or 8); allowed: 8, 16, 32", test, gts);
    if (fabs(gts - 8) > 1e-9 && fabs(gts - 16) > 1e-9 && fabs(gts - 32) > 1e-9)
        sim_input_error("%s: gts=%g; allowed: 8, 16, 32 (the 68-byte flit mode's rates)", test, gts);
}

void cxl_mq_push(cxl_mq *q, cxl_lmsg *t)
{
    t->next = NULL;
    if (q->tail) q->tail->next = t;
    else q->head = t;
    q->tail = t;
    q->n++;
}

cxl_lmsg *cxl_mq_pop(cxl_mq *q)
{
    cxl_lmsg *t = q->head;
    if (!t) return NULL;
    q->head = t->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    t->next = NULL;
    return t;
}

static cxl_flit *flit_new(cxl_port *p)
{
    cxl_flit *f = p->free_flits;
    if (f) p->free_flits = f->next;
    else if (!(f = malloc(sizeof *f))) sim_fatal("out of memory");
    f->n = 0;
    f->next = NULL;
    return f;
}

static void flit_free(cxl_port *p, cxl_flit *f)
{
    f->next = p->free_flits;
    p->free_flits = f;
}

static void port_wake(cxl_port *p, sim_time_ps at)
{
    sim_time_ps now = sim_now(p->k);
    sim_event_notify_at(&p->wake, at > now ? at - now : 0);
}

void cxl_port_enqueue(cxl_port *p, cxl_lmsg *t)
{
    sim_time_ps now = sim_now(p->k);
    unsigned c = t->m.ch - p->cfg.chan_base;
    sim_time_ps j = p->cfg.jitter_ps > 0 ? (sim_time_ps)sim_rng_below(p->cfg.rng, p->cfg.jitter_ps + 1) : 0;
    sim_time_ps e = now + j;
    if (e < p->last_elig[c]) e = p->last_elig[c];   /* a class stays in order */
    p->last_elig[c] = e;
    t->t_elig = e;
    if (e > now) cxl_path_add(t->path, "jitter", e - now, false);
    cxl_mq_push(&p->q[c], t);
    port_wake(p, e);
}

void cxl_port_return_credit(cxl_port *p, unsigned cls) { sim_link_return_credits(p->link, cls, 1); }

sim_time_ps cxl_port_stall_ps(const cxl_port *p, unsigned cls)
{
    return p->stall_ps[cls] + (p->stalled[cls] ? sim_now(p->k) - p->stall_since[cls] : 0);
}

static void port_sent(cxl_port *p, cxl_lmsg *t)
{
    if (p->cfg.flits) cxl_path_add(t->path, p->cfg.hop_pack, sim_link_tx_free_ps(p->link) - t->t_pack, false);
    cxl_path_add(t->path, p->cfg.hop_wire, p->link->cfg.latency_ps, p->cfg.flits);
}

/* Takes a header out of its queue into the flit being built (NULL if the
 * head is not eligible, held by an ordering rule, or out of credits). */
static cxl_lmsg *port_take(cxl_port *p, unsigned c, sim_time_ps now)
{
    cxl_lmsg *t = p->q[c].head;
    if (!t || t->t_elig > now) return NULL;
    if (p->cfg.hold && p->cfg.hold(p->cfg.ctx, p, c, t)) return NULL;
    if (sim_link_credits(p->link, c) < 1) {
        if (!p->stalled[c]) {
            p->stalled[c] = true;
            p->stall_since[c] = now;
        }
        return NULL;
    }
    if (p->stalled[c]) {
        p->stalled[c] = false;
        p->stall_ps[c] += now - p->stall_since[c];
    }
    sim_link_hold_credits(p->link, c, 1);
    cxl_mq_pop(&p->q[c]);
    t->t_pack = now;
    if (now > t->t_elig) cxl_path_add(t->path, p->cfg.hop_queue, now - t->t_elig, false);
    if (p->tv_ch[c]) {
        char lab[64];
        cxl_msg_label(&t->m, lab, sizeof lab);
        sim_trace_str(p->tr, p->tv_ch[c], lab);
    }
    return t;
}

/* On-die: messages go one by one, no slots, no serialisation. */
static void port_run_ondie(cxl_port *p, const unsigned *order, sim_time_ps now)
{
    for (unsigned oi = 0; oi < CXL_PORT_CLASSES; oi++) {
        cxl_lmsg *t;
        while ((t = port_take(p, order[oi], now))) {
            cxl_flit *g = flit_new(p);
            g->done[g->n++] = t;
            unsigned c = order[oi];
            sim_link_send(p->link, g, p->cfg.hdr_bits[c] / 8 + (p->cfg.has_data[c] ? 64 : 0));
            port_sent(p, t);
        }
    }
}

/* Fills one flit; returns the slots used (0: nothing could go). */
static unsigned pack_flit(cxl_port *p, cxl_flit *f, const unsigned *order, sim_time_ps now)
{
    /* Owed data slots follow their headers, in header order. When a whole
     * flit of data is owed it goes as an all-data flit (64 B of data, no
     * flit header, slot 0 included); otherwise slot 0 is the H slot. */
    unsigned used = 0;
    unsigned owed = p->data_n ? p->chunks_left + CXL_SLOTS_PER_LINE * (p->data_n - 1) : 0;
    bool all_data = owed >= 4;
    for (unsigned slot = 0; slot < 4; slot++) {
        if ((slot > 0 || all_data) && p->data_n) {
            used++;
            if (--p->chunks_left == 0) {
                f->done[f->n++] = p->data_q[0];
                memmove(p->data_q, p->data_q + 1, --p->data_n * sizeof p->data_q[0]);
                p->chunks_left = CXL_SLOTS_PER_LINE;
            }
            continue;
        }
        unsigned cap = slot == 0 ? CXL_H_SLOT_BITS : CXL_G_SLOT_BITS, bits = 0;
        bool any = false;
        for (unsigned oi = 0; oi < CXL_PORT_CLASSES; oi++) {
            unsigned c = order[oi], hb = p->cfg.hdr_bits[c];
            for (;;) {
                if (!p->q[c].head || bits + hb > cap || f->n >= CXL_FLIT_MAX_MSGS - 1) break;
                if (p->cfg.has_data[c] && p->data_n == CXL_DATA_PENDING_MAX) break;
                cxl_lmsg *t = port_take(p, c, now);
                if (!t) break;
                bits += hb;
                any = true;
                if (p->cfg.has_data[c]) {
                    if (!p->data_n) p->chunks_left = CXL_SLOTS_PER_LINE;
                    p->data_q[p->data_n++] = t;
                } else {
                    f->done[f->n++] = t;
                }
            }
        }
        if (any) used++;
    }
    return used;
}

/* Builds and sends flits while the serialiser is free and something can go. */
static void port_run(void *ctx)
{
    cxl_port *p = ctx;
    sim_time_ps now = sim_now(p->k);
    static const unsigned order[CXL_PORT_CLASSES] = { 1, 2, 0 };   /* responses, data headers, requests */
    for (;;) {
        sim_time_ps tx_free = sim_link_tx_free_ps(p->link);
        if (tx_free > now) {
            port_wake(p, tx_free);
            return;
        }
        if (!p->cfg.flits) {
            port_run_ondie(p, order, now);
            break;
        }
        cxl_flit *f = flit_new(p);
        if (!pack_flit(p, f, order, now)) {
            flit_free(p, f);
            break;
        }
        sim_link_send(p->link, f, CXL_FLIT_BYTES);
        p->flits_sent++;
        for (unsigned i = 0; i < f->n; i++) port_sent(p, f->done[i]);
    }
    /* next wake: the earliest future eligibility (credit returns wake us by event) */
    sim_time_ps next = SIM_TIME_MAX;
    for (unsigned c = 0; c < CXL_PORT_CLASSES; c++)
        if (p->q[c].head && p->q[c].head->t_elig > now && p->q[c].head->t_elig < next) next = p->q[c].head->t_elig;
    if (next != SIM_TIME_MAX) port_wake(p, next);
}

/* The receiving side: hand over every message the flit completes. */
static void port_rx(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    cxl_port *p = ctx;
    cxl_flit *f = msg;
    for (unsigned i = 0; i < f->n; i++) p->cfg.deliver(p->cfg.ctx, f->done[i]);
    flit_free(p, f);
}

static void flit_label(const void *msg, char *buf, size_t n)
{
    const cxl_flit *f = msg;
    size_t k = (size_t)snprintf(buf, n, "flit");
    for (unsigned i = 0; i < f->n && k + 8 < n; i++) {
        char lab[64];
        cxl_msg_label(&f->done[i]->m, lab, sizeof lab);
        char *sp = strchr(lab, ' ');
        if (sp) *sp = 0;
        k += (size_t)snprintf(buf + k, n - k, " %s", lab);
    }
}

cxl_port *cxl_port_new(sim_kernel *k, sim_trace *tr, const cxl_port_cfg *cfg)
{
    cxl_port *p = calloc(1, sizeof *p);
    if (!p) sim_fatal("out of memory");
    p->k = k;
    p->tr = tr;
    p->cfg = *cfg;
    snprintf(p->name, sizeof p->name, "%s", cfg->name);
    sim_link_cfg lc = { 0 };
    lc.name = p->name;
    lc.latency_ps = cfg->latency_ps;
    lc.bandwidth_GBps = cfg->flits ? cfg->GBps : 0;
    lc.credit_latency_ps = SIM_LINK_SAME_LATENCY;
    lc.credit_types = CXL_PORT_CLASSES;
    for (unsigned c = 0; c < CXL_PORT_CLASSES; c++) lc.credits[c] = cfg->credits[c];
    p->link = sim_link_new(k, &lc);
    sim_link_set_receiver(p->link, port_rx, p);
    sim_event_init(&p->wake, k, "port_wake");
    sim_method_init(&p->proc, k, p->name, port_run, p);
    sim_sensitive(&p->proc, &p->wake);
    sim_sensitive(&p->proc, &p->link->credit_returned);
    sim_dont_initialize(&p->proc);
    if (tr) {
        sim_trace_push_scope(tr, cfg->scope);
        for (unsigned c = 0; c < CXL_PORT_CLASSES; c++)
            if (cfg->class_names[c]) p->tv_ch[c] = sim_trace_add_string(tr, cfg->class_names[c]);
        sim_trace_pop_scope(tr);
        if (cfg->flits) sim_link_trace(p->link, tr, flit_label);
    }
    return p;
}

void cxl_port_free(cxl_port *p)
{
    if (!p) return;
    sim_link_free(p->link);
    while (p->free_flits) {
        cxl_flit *f = p->free_flits;
        p->free_flits = f->next;
        free(f);
    }
    free(p);
}
