/* CXL.mem Type-3 device: takes MemRd / MemWr from its M2S link into its
 * memory controller (ctrl_ns to decode and schedule, then the media channel),
 * answers MemData (DRS) / Cmp (NDR) on its S2M port. The request buffer is the
 * M2S credit pool: a request's credit goes back when the media starts it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/cxl/cxl_media.h"
#include "models/cxl/cxl_mem_parts.h"
#include "models/cxl/cxl_proto.h"

struct cxl_mem_dev {
    sim_kernel *k;
    sim_trace *tr;
    cxl_mem_dev_cfg cfg;
    sim_time_ps ctrl_ps;
    sim_link *m2s;                 /* received on; credits back on it */
    cxl_port *s2m;
    cxl_media media;
    uint64_t memrd_in, memwr_in, memdata_out, cmp_out, bytes_read, bytes_written;
    uint64_t violations;
    sim_trace_var tv_media;        /* requests in the controller */
    char name[16], port_name[24];
};

static void media_started(void *ctx, cxl_lmsg *t)
{
    cxl_mem_dev *d = ctx;
    /* the request left the device's request buffer: its credit goes back */
    sim_link_return_credits(d->m2s, (unsigned)(t->m.ch - CXL_M2S_REQ), 1);
}

static void media_done(void *ctx, cxl_lmsg *t)
{
    cxl_mem_dev *d = ctx;
    /* the request's buffer becomes the response */
    if (t->m.ch == CXL_M2S_REQ) {
        t->m.ch = CXL_S2M_DRS;
        t->m.op = CXL_MEM_OP_MEMDATA;
        d->memdata_out++;
    } else {
        t->m.ch = CXL_S2M_NDR;
        t->m.op = CXL_MEM_OP_CMP;
        d->cmp_out++;
    }
    sim_trace_u64(d->tr, d->tv_media, cxl_media_inflight(&d->media));
    cxl_port_enqueue(d->s2m, t);
}

void cxl_mem_dev_receive(void *ctx, cxl_lmsg *t)
{
    cxl_mem_dev *d = ctx;
    bool rd = t->m.ch == CXL_M2S_REQ && t->m.op == CXL_MEM_OP_MEMRD;
    bool wr = t->m.ch == CXL_M2S_RWD && t->m.op == CXL_MEM_OP_MEMWR;
    if (!rd && !wr) {
        /* not a request this device serves: dropped, so the host's tag stays open and its check fails */
        d->violations++;
        fprintf(stderr, "cxl_mem: dev%u: unexpected M2S message ch %u op %u\n", d->cfg.idx, t->m.ch, t->m.op);
        return;
    }
    if (rd) {
        d->memrd_in++;
        d->bytes_read += CXL_MEM_LINE_BYTES;
    } else {
        d->memwr_in++;
        d->bytes_written += CXL_MEM_LINE_BYTES;
    }
    cxl_path_add(t->path, "dev_ctrl", d->ctrl_ps, false);
    t->t_elig = sim_now(d->k) + d->ctrl_ps;
    cxl_media_push(&d->media, t);
    sim_trace_u64(d->tr, d->tv_media, cxl_media_inflight(&d->media));
}

cxl_mem_dev *cxl_mem_dev_new(sim_kernel *k, sim_trace *tr, const cxl_mem_dev_cfg *cfg)
{
    cxl_mem_dev *d = calloc(1, sizeof *d);
    if (!d) sim_fatal("out of memory");
    d->k = k;
    d->tr = tr;
    d->cfg = *cfg;
    d->ctrl_ps = cxl_ns_ps(cfg->ctrl_ns);
    snprintf(d->name, sizeof d->name, "mem%u", cfg->idx);
    snprintf(d->port_name, sizeof d->port_name, "mem%u_s2m", cfg->idx);
    cxl_media_cfg mc = { 0 };
    mc.name = d->name;
    mc.access_ns = cfg->media_ns;
    mc.GBps = cfg->media_GBps;
    mc.hop_queue = "media_queue";
    mc.hop_access = "media";
    mc.started = media_started;
    mc.done = media_done;
    mc.ctx = d;
    cxl_media_init(&d->media, k, &mc);
    cxl_port_cfg pc = { 0 };
    pc.name = d->port_name;
    pc.scope = d->name;
    pc.class_names[1] = "s2m_ndr";
    pc.class_names[2] = "s2m_drs";
    pc.chan_base = CXL_S2M_NONE;
    for (unsigned c = 0; c < CXL_PORT_CLASSES; c++) {
        pc.hdr_bits[c] = cxl_hdr_bits(pc.chan_base + c);
        pc.has_data[c] = cxl_has_data(pc.chan_base + c);
    }
    pc.credits[1] = pc.credits[2] = cfg->credits_s2m;
    pc.flits = true;
    pc.latency_ps = cxl_ns_ps(cfg->link_ns);
    pc.GBps = cfg->link_GBps;
    pc.hop_queue = "s2m_queue";
    pc.hop_pack = "s2m_flits";
    pc.hop_wire = "s2m_link";
    pc.deliver = cfg->deliver;
    pc.ctx = cfg->deliver_ctx;
    d->s2m = cxl_port_new(k, tr, &pc);
    if (tr) {
        sim_trace_push_scope(tr, d->name);
        d->tv_media = sim_trace_add_var(tr, "in_controller", 16);
        sim_trace_pop_scope(tr);
    }
    return d;
}

void cxl_mem_dev_attach_m2s(cxl_mem_dev *d, sim_link *m2s) { d->m2s = m2s; }
cxl_port *cxl_mem_dev_s2m(cxl_mem_dev *d) { return d->s2m; }
uint64_t cxl_mem_dev_violations(const cxl_mem_dev *d) { return d->violations; }

void cxl_mem_dev_counts(const cxl_mem_dev *d, cxl_mem_dev_stats *st)
{
    st->memrd_in = d->memrd_in;
    st->memwr_in = d->memwr_in;
    st->memdata_out = d->memdata_out;
    st->cmp_out = d->cmp_out;
    st->bytes_read = d->bytes_read;
    st->bytes_written = d->bytes_written;
    st->flits_s2m = d->s2m->flits_sent;
    st->media_busy_ps = d->media.busy_ps;
}

unsigned cxl_mem_dev_check(const cxl_mem_dev *d, char *why, size_t n)
{
    unsigned f = 0;
    char w[256];
    const cxl_media *m = &d->media;
    if (m->pushed != m->completed + cxl_media_inflight(m) || cxl_media_inflight(m)) {
        if (!f++)
            snprintf(why, n, "dev%u: media took %" PRIu64 ", finished %" PRIu64 ", %u still in the controller", d->cfg.idx,
                     m->pushed, m->completed, cxl_media_inflight(m));
    }
    if (d->memrd_in + d->memwr_in != m->pushed && !f++)
        snprintf(why, n, "dev%u: %" PRIu64 " requests received, %" PRIu64 " into the controller", d->cfg.idx,
                 d->memrd_in + d->memwr_in, m->pushed);
    if ((d->memdata_out != d->memrd_in || d->cmp_out != d->memwr_in) && !f++)
        snprintf(why, n, "dev%u: %" PRIu64 " MemData for %" PRIu64 " MemRd, %" PRIu64 " Cmp for %" PRIu64 " MemWr",
                 d->cfg.idx, d->memdata_out, d->memrd_in, d->cmp_out, d->memwr_in);
    for (unsigned c = 0; c < CXL_PORT_CLASSES; c++)
        if (d->s2m->q[c].n && !f++) snprintf(why, n, "dev%u: %u S2M messages still queued", d->cfg.idx, d->s2m->q[c].n);
    if (d->s2m->data_n && !f++) snprintf(why, n, "dev%u: S2M data owed", d->cfg.idx);
    if (sim_link_check(d->s2m->link, true, w, sizeof w) && !f++) snprintf(why, n, "dev%u S2M: %s", d->cfg.idx, w);
    if (d->violations && !f++) snprintf(why, n, "dev%u: %" PRIu64 " unexpected M2S messages", d->cfg.idx, d->violations);
    return f;
}

void cxl_mem_dev_free(cxl_mem_dev *d)
{
    if (!d) return;
    cxl_port_free(d->s2m);
    free(d);
}
