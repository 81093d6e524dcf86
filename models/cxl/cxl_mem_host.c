/* CXL.mem host home agent: a core's load or store (a 64 B line that missed its
 * caches) reaches the home after home_ns, which decodes the address: local
 * DRAM, or the HDM window, whose decoder picks the device and device address.
 * It sends MemRd (M2S Req) / MemWr (M2S RwD) with a tag on that device's M2S
 * port and completes the request when MemData (S2M DRS) / Cmp (S2M NDR) with
 * the tag comes back. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cxl/cxl_media.h"
#include "models/cxl/cxl_mem_parts.h"
#include "models/cxl/cxl_proto.h"

typedef struct host_tag {
    cxl_lmsg *t;                   /* NULL: free */
    uint64_t addr;
    sim_time_ps issued_ps;
    unsigned target, dev;
    bool write;
} host_tag;

typedef struct host_rx {
    cxl_mem_host *h;
    unsigned dev;
} host_rx;

typedef struct host_dev {
    cxl_port *m2s;
    sim_link *s2m;
    host_rx rx;
    uint64_t memrd_sent, memwr_sent, memdata_in, cmp_in;
} host_dev;

struct cxl_mem_host {
    sim_kernel *k;
    sim_trace *tr;
    cxl_mem_cfg cfg;
    sim_time_ps home_ps;
    host_dev dev[CXL_MEM_MAX_DEVICES];
    host_tag *tag;
    uint16_t *free_tags;
    unsigned n_free;
    cxl_lmsg *free_msgs;
    cxl_mq home_q;                 /* t_elig = the home has decoded it */
    sim_process proc;
    sim_event wake;
    cxl_media dram;
    bool track_paths;
    cxl_mem_done_fn done;
    void *done_ctx;
    uint64_t local_reads, local_writes, violations;
    char first_violation[160];
    sim_trace_var tv_outstanding;
};

static void violation(cxl_mem_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(cxl_mem_host *h, const char *fmt, ...)
{
    if (h->violations++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->first_violation, sizeof h->first_violation, fmt, ap);
    va_end(ap);
}

static void finish(cxl_mem_host *h, uint16_t id)
{
    host_tag *g = &h->tag[id];
    cxl_lmsg *t = g->t;
    g->t = NULL;
    h->free_tags[h->n_free++] = id;
    sim_trace_u64(h->tr, h->tv_outstanding, h->cfg.tags - h->n_free);
    cxl_path *path = t->path;
    t->path = NULL;
    t->next = h->free_msgs;
    h->free_msgs = t;
    if (h->done) h->done(h->done_ctx, g->target, g->addr, g->write, g->dev, g->issued_ps, path);
    free(path);
}

void cxl_mem_host_receive(void *rx_ctx, cxl_lmsg *t)
{
    host_rx *rx = rx_ctx;
    cxl_mem_host *h = rx->h;
    host_dev *hd = &h->dev[rx->dev];
    bool data = t->m.ch == CXL_S2M_DRS && t->m.op == CXL_MEM_OP_MEMDATA;
    bool cmp = t->m.ch == CXL_S2M_NDR && t->m.op == CXL_MEM_OP_CMP;
    if (!data && !cmp) {
        violation(h, "dev%u: unexpected S2M message ch %u op %u", rx->dev, t->m.ch, t->m.op);
        return;
    }
    /* the home takes the response from its buffer at once */
    sim_link_return_credits(hd->s2m, (unsigned)(t->m.ch - CXL_S2M_NONE), 1);
    if (data) hd->memdata_in++;
    else hd->cmp_in++;
    uint16_t id = t->m.id;
    host_tag *g = id < h->cfg.tags ? &h->tag[id] : NULL;
    if (!g || g->t != t || g->target != CXL_MEM_HDM || g->dev != rx->dev || g->write != cmp) {
        violation(h, "dev%u: %s with tag %u matches no outstanding request of its kind", rx->dev,
                  data ? "MemData" : "Cmp", id);
        return;
    }
    finish(h, id);
}

static void dram_done(void *ctx, cxl_lmsg *t)
{
    cxl_mem_host *h = ctx;
    if (h->tag[t->m.id].write) h->local_writes++;
    else h->local_reads++;
    finish(h, t->m.id);
}

/* Requests the home has decoded go to local DRAM or out on a device's M2S port. */
static void home_run(void *ctx)
{
    cxl_mem_host *h = ctx;
    sim_time_ps now = sim_now(h->k);
    cxl_lmsg *t;
    while ((t = h->home_q.head) && t->t_elig <= now) {
        cxl_mq_pop(&h->home_q);
        host_tag *g = &h->tag[t->m.id];
        if (g->target == CXL_MEM_LOCAL) {
            t->t_elig = now;
            cxl_media_push(&h->dram, t);
            continue;
        }
        host_dev *hd = &h->dev[g->dev];
        if (g->write) hd->memwr_sent++;
        else hd->memrd_sent++;
        cxl_port_enqueue(hd->m2s, t);
    }
    if (t) sim_event_notify_at(&h->wake, t->t_elig - now);
}

bool cxl_mem_host_issue(cxl_mem_host *h, unsigned target, uint64_t addr, bool write)
{
    if (!h->n_free) return false;
    if (addr % CXL_MEM_LINE_BYTES) sim_fatal("cxl_mem: address 0x%" PRIx64 " is not line aligned", addr);
    uint16_t id = h->free_tags[--h->n_free];
    cxl_lmsg *t = h->free_msgs;
    if (t) h->free_msgs = t->next;
    else if (!(t = malloc(sizeof *t))) sim_fatal("out of memory");
    memset(t, 0, sizeof *t);
    host_tag *g = &h->tag[id];
    g->t = t;
    g->addr = addr;
    g->issued_ps = sim_now(h->k);
    g->target = target;
    g->write = write;
    g->dev = 0;
    t->m.id = id;
    if (target == CXL_MEM_HDM) {
        g->dev = cxl_mem_hdm_device(addr, h->cfg.devices, h->cfg.interleave_bytes);
        t->m.agent = (uint8_t)g->dev;
        t->m.line = (uint32_t)(cxl_mem_hdm_dpa(addr, h->cfg.devices, h->cfg.interleave_bytes) / CXL_MEM_LINE_BYTES);
        t->m.ch = write ? CXL_M2S_RWD : CXL_M2S_REQ;
        t->m.op = write ? CXL_MEM_OP_MEMWR : CXL_MEM_OP_MEMRD;
    } else {
        t->m.line = (uint32_t)(addr / CXL_MEM_LINE_BYTES);
    }
    if (h->track_paths) {
        t->path = calloc(1, sizeof *t->path);
        if (!t->path) sim_fatal("out of memory");
    }
    cxl_path_add(t->path, "home_lookup", h->home_ps, false);
    t->t_elig = g->issued_ps + h->home_ps;
    cxl_mq_push(&h->home_q, t);
    sim_event_notify_at(&h->wake, h->home_ps);   /* an earlier pending wake-up stays */
    sim_trace_u64(h->tr, h->tv_outstanding, h->cfg.tags - h->n_free);
    return true;
}

cxl_mem_host *cxl_mem_host_new(sim_kernel *k, sim_trace *tr, const cxl_mem_cfg *cfg)
{
    cxl_mem_host *h = calloc(1, sizeof *h);
    if (!h) sim_fatal("out of memory");
    h->k = k;
    h->tr = tr;
    h->cfg = *cfg;
    h->home_ps = cxl_ns_ps(cfg->home_ns);
    h->tag = calloc(cfg->tags, sizeof *h->tag);
    h->free_tags = calloc(cfg->tags, sizeof *h->free_tags);
    if (!h->tag || !h->free_tags) sim_fatal("out of memory");
    for (unsigned i = 0; i < cfg->tags; i++) h->free_tags[i] = (uint16_t)(cfg->tags - 1 - i);   /* tag 0 first */
    h->n_free = cfg->tags;
    sim_event_init(&h->wake, k, "home_wake");
    sim_method_init(&h->proc, k, "home", home_run, h);
    sim_sensitive(&h->proc, &h->wake);
    sim_dont_initialize(&h->proc);
    cxl_media_cfg mc = { 0 };
    mc.name = "local_dram";
    mc.access_ns = cfg->dram_ns;
    mc.GBps = cfg->dram_GBps;
    mc.hop_queue = "dram_queue";
    mc.hop_access = "dram";
    mc.done = dram_done;
    mc.ctx = h;
    cxl_media_init(&h->dram, k, &mc);
    if (tr) {
        sim_trace_push_scope(tr, "home");
        h->tv_outstanding = sim_trace_add_var(tr, "outstanding", 17);
        sim_trace_pop_scope(tr);
    }
    return h;
}

void *cxl_mem_host_rx_ctx(cxl_mem_host *h, unsigned dev)
{
    h->dev[dev].rx.h = h;
    h->dev[dev].rx.dev = dev;
    return &h->dev[dev].rx;
}

cxl_port *cxl_mem_host_connect(cxl_mem_host *h, unsigned dev, cxl_port_deliver_fn dev_receive, void *dev_ctx,
                               sim_link *s2m)
{
    char name[24], scope[16];
    snprintf(name, sizeof name, "mem%u_m2s", dev);
    snprintf(scope, sizeof scope, "mem%u", dev);
    cxl_port_cfg pc = { 0 };
    pc.name = name;
    pc.scope = scope;
    pc.class_names[0] = "m2s_req";
    pc.class_names[2] = "m2s_rwd";
    pc.chan_base = CXL_M2S_REQ;
    for (unsigned c = 0; c < CXL_PORT_CLASSES; c++) {
        pc.hdr_bits[c] = cxl_hdr_bits(pc.chan_base + c);
        pc.has_data[c] = cxl_has_data(pc.chan_base + c);
    }
    pc.credits[0] = pc.credits[2] = h->cfg.credits_m2s;
    pc.flits = true;
    pc.latency_ps = cxl_ns_ps(h->cfg.link_ns);
    pc.GBps = cxl_link_GBps(h->cfg.lanes, h->cfg.gts);
    pc.hop_queue = "m2s_queue";
    pc.hop_pack = "m2s_flits";
    pc.hop_wire = "m2s_link";
    pc.deliver = dev_receive;
    pc.ctx = dev_ctx;
    h->dev[dev].m2s = cxl_port_new(h->k, h->tr, &pc);
    h->dev[dev].s2m = s2m;
    return h->dev[dev].m2s;
}

void cxl_mem_host_set_done(cxl_mem_host *h, cxl_mem_done_fn fn, void *ctx)
{
    h->done = fn;
    h->done_ctx = ctx;
}
void cxl_mem_host_track_paths(cxl_mem_host *h, bool on) { h->track_paths = on; }
unsigned cxl_mem_host_outstanding(const cxl_mem_host *h) { return h->cfg.tags - h->n_free; }
uint64_t cxl_mem_host_violations(const cxl_mem_host *h) { return h->violations; }
const char *cxl_mem_host_first_violation(const cxl_mem_host *h) { return h->first_violation; }

void cxl_mem_host_counts(const cxl_mem_host *h, cxl_mem_stats *st)
{
    for (unsigned i = 0; i < h->cfg.devices; i++) {
        const host_dev *hd = &h->dev[i];
        cxl_mem_dev_stats *d = &st->dev[i];
        d->memrd_sent = hd->memrd_sent;
        d->memwr_sent = hd->memwr_sent;
        d->memdata_in = hd->memdata_in;
        d->cmp_in = hd->cmp_in;
        d->flits_m2s = hd->m2s->flits_sent;
        d->util_m2s = sim_link_utilisation(hd->m2s->link);
        d->credit_stall_ns[0] = cxl_port_stall_ps(hd->m2s, 0) / 1000.0;
        d->credit_stall_ns[1] = cxl_port_stall_ps(hd->m2s, 2) / 1000.0;
    }
    st->local_reads = h->local_reads;
    st->local_writes = h->local_writes;
}

unsigned cxl_mem_host_check(const cxl_mem_host *h, char *why, size_t n)
{
    unsigned f = 0;
    char w[256];
    if (h->n_free != h->cfg.tags && !f++)
        snprintf(why, n, "home: %u of %u tags still outstanding", h->cfg.tags - h->n_free, h->cfg.tags);
    if ((h->home_q.n || cxl_media_inflight(&h->dram)) && !f++)
        snprintf(why, n, "home: %u requests still decoding, %u in local DRAM", h->home_q.n, cxl_media_inflight(&h->dram));
    for (unsigned i = 0; i < h->cfg.devices; i++) {
        const host_dev *hd = &h->dev[i];
        if ((hd->memdata_in != hd->memrd_sent || hd->cmp_in != hd->memwr_sent) && !f++)
            snprintf(why, n, "home: dev%u: %" PRIu64 " MemData for %" PRIu64 " MemRd, %" PRIu64 " Cmp for %" PRIu64 " MemWr",
                     i, hd->memdata_in, hd->memrd_sent, hd->cmp_in, hd->memwr_sent);
        for (unsigned c = 0; c < CXL_PORT_CLASSES; c++)
            if (hd->m2s->q[c].n && !f++) snprintf(why, n, "home: dev%u: %u M2S messages still queued", i, hd->m2s->q[c].n);
        if (sim_link_check(hd->m2s->link, true, w, sizeof w) && !f++) snprintf(why, n, "dev%u M2S: %s", i, w);
    }
    if (h->violations && !f++) snprintf(why, n, "home: %" PRIu64 " violations, first: %s", h->violations, h->first_violation);
    return f;
}

void cxl_mem_host_free(cxl_mem_host *h)
{
    if (!h) return;
    for (unsigned i = 0; i < h->cfg.devices; i++) cxl_port_free(h->dev[i].m2s);
    for (unsigned i = 0; i < h->cfg.tags; i++)
        if (h->tag[i].t) {
            free(h->tag[i].t->path);
            free(h->tag[i].t);
        }
    while (h->free_msgs) {
        cxl_lmsg *t = h->free_msgs;
        h->free_msgs = t->next;
        free(t);
    }
    free(h->tag);
    free(h->free_tags);
    free(h);
}
