/* CXL.mem system: one host home agent, devices Type-3 devices, each on its own
 * CXL link (two cxl_ports); the HDM decoder; statistics and end checks (cxl_mem.h). */
#include "models/cxl/cxl_mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/cxl/cxl_mem_parts.h"

struct cxl_mem_sys {
    sim_kernel *k;
    cxl_mem_cfg cfg;
    cxl_mem_host *host;
    cxl_mem_dev *dev[CXL_MEM_MAX_DEVICES];
    cxl_port *m2s[CXL_MEM_MAX_DEVICES];
};

void cxl_mem_cfg_defaults(cxl_mem_cfg *c)
{
    *c = (cxl_mem_cfg){ 0 };
    c->devices = 1;
    c->interleave_bytes = 4096;
    c->link_ns = 25;
    c->lanes = 16;
    c->gts = 32;
    c->home_ns = 15;
    c->ctrl_ns = 20;
    c->media_ns = 90;
    c->media_GBps = 76.8;
    c->dram_ns = 90;
    c->dram_GBps = 307.2;
    c->credits_m2s = 64;
    c->credits_s2m = 64;
    c->tags = 256;
}

void cxl_mem_cfg_check(const cxl_mem_cfg *c, const char *test)
{
    unsigned w = c->devices;
    if (w != 1 && w != 2 && w != 3 && w != 4 && w != 6 && w != 8)
        sim_input_error("%s: devices=%u; allowed: 1, 2, 3, 4, 6, 8 (the devices are the ways of one HDM interleave set: "
                        "CXL 2.0 decoders interleave 1, 2, 4 or 8 ways, CXL 3.0 adds 3 and 6; 5 and 7 are not valid)",
                        test, w);
    uint64_t g = c->interleave_bytes;
    if (g < 256 || g > 16384 || (g & (g - 1)))
        sim_input_error("%s: interleave_bytes=%" PRIu64 "; allowed: 256, 512, 1024, 2048, 4096, 8192, 16384 (the HDM "
                        "interleave granularities)", test, g);
    cxl_link_check_params(test, c->lanes, c->gts);
    if (c->tags < 1 || c->tags > 65536) sim_input_error("%s: %u tags; allowed 1..65536 (16-bit tag)", test, c->tags);
}

/* Modulo arithmetic interleave (3 and 6 ways as in CXL 3.0; for powers of two
 * it is the address-bit selection of CXL 2.0). */
unsigned cxl_mem_hdm_device(uint64_t hpa, unsigned ways, uint64_t granule)
{
    return (unsigned)((hpa / granule) % ways);
}

uint64_t cxl_mem_hdm_dpa(uint64_t hpa, unsigned ways, uint64_t granule)
{
    return hpa / (granule * ways) * granule + hpa % granule;
}

cxl_mem_sys *cxl_mem_sys_new(sim_kernel *k, const cxl_mem_cfg *cfg, sim_trace *tr)
{
    cxl_mem_sys *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->k = k;
    s->cfg = *cfg;
    if (tr) sim_trace_push_scope(tr, "cxlmem");
    s->host = cxl_mem_host_new(k, tr, cfg);
    for (unsigned i = 0; i < cfg->devices; i++) {
        cxl_mem_dev_cfg dc = { 0 };
        dc.idx = i;
        dc.ctrl_ns = cfg->ctrl_ns;
        dc.media_ns = cfg->media_ns;
        dc.media_GBps = cfg->media_GBps;
        dc.link_ns = cfg->link_ns;
        dc.link_GBps = cxl_link_GBps(cfg->lanes, cfg->gts);
        dc.credits_s2m = cfg->credits_s2m;
        dc.deliver = cxl_mem_host_receive;
        dc.deliver_ctx = cxl_mem_host_rx_ctx(s->host, i);
        s->dev[i] = cxl_mem_dev_new(k, tr, &dc);
        s->m2s[i] = cxl_mem_host_connect(s->host, i, cxl_mem_dev_receive, s->dev[i], cxl_mem_dev_s2m(s->dev[i])->link);
        cxl_mem_dev_attach_m2s(s->dev[i], s->m2s[i]->link);
    }
    if (tr) sim_trace_pop_scope(tr);
    return s;
}

void cxl_mem_sys_free(cxl_mem_sys *s)
{
    if (!s) return;
    cxl_mem_host_free(s->host);
    for (unsigned i = 0; i < s->cfg.devices; i++) cxl_mem_dev_free(s->dev[i]);
    free(s);
}

void cxl_mem_sys_set_done(cxl_mem_sys *s, cxl_mem_done_fn fn, void *ctx) { cxl_mem_host_set_done(s->host, fn, ctx); }
void cxl_mem_sys_track_paths(cxl_mem_sys *s, bool on) { cxl_mem_host_track_paths(s->host, on); }
bool cxl_mem_issue(cxl_mem_sys *s, unsigned target, uint64_t addr, bool write)
{
    return cxl_mem_host_issue(s->host, target, addr, write);
}
unsigned cxl_mem_outstanding(const cxl_mem_sys *s) { return cxl_mem_host_outstanding(s->host); }
const char *cxl_mem_first_violation(const cxl_mem_sys *s) { return cxl_mem_host_first_violation(s->host); }

void cxl_mem_reset_link_stats(cxl_mem_sys *s)
{
    for (unsigned i = 0; i < s->cfg.devices; i++) {
        sim_link_reset_stats(s->m2s[i]->link);
        sim_link_reset_stats(cxl_mem_dev_s2m(s->dev[i])->link);
    }
}

void cxl_mem_stats_get(cxl_mem_sys *s, cxl_mem_stats *st)
{
    *st = (cxl_mem_stats){ 0 };
    st->devices = s->cfg.devices;
    cxl_mem_host_counts(s->host, st);
    st->violations = cxl_mem_host_violations(s->host);
    for (unsigned i = 0; i < s->cfg.devices; i++) {
        cxl_mem_dev_stats *d = &st->dev[i];
        cxl_mem_dev_counts(s->dev[i], d);
        cxl_port *up = cxl_mem_dev_s2m(s->dev[i]);
        d->util_s2m = sim_link_utilisation(up->link);
        d->credit_stall_ns[2] = cxl_port_stall_ps(up, 1) / 1000.0;
        d->credit_stall_ns[3] = cxl_port_stall_ps(up, 2) / 1000.0;
        d->data_bytes_m2s = d->memwr_sent * CXL_MEM_LINE_BYTES;
        d->data_bytes_s2m = d->memdata_out * CXL_MEM_LINE_BYTES;
        st->violations += cxl_mem_dev_violations(s->dev[i]);
    }
    st->flit_ps = (sim_time_ps)(CXL_FLIT_BYTES * 1000.0 / cxl_link_GBps(s->cfg.lanes, s->cfg.gts) + 0.999999);
}

unsigned cxl_mem_final_check(cxl_mem_sys *s, char *why, size_t n)
{
    unsigned f = cxl_mem_host_check(s->host, why, n);
    cxl_mem_stats st;
    cxl_mem_stats_get(s, &st);
    for (unsigned i = 0; i < s->cfg.devices; i++) {
        char w[256];
        unsigned g = cxl_mem_dev_check(s->dev[i], w, sizeof w);
        if (g && !f) snprintf(why, n, "%s", w);
        f += g;
        const cxl_mem_dev_stats *d = &st.dev[i];
        /* both ends of the link agree, kind by kind */
        if ((d->memrd_sent != d->memrd_in || d->memwr_sent != d->memwr_in || d->memdata_out != d->memdata_in ||
             d->cmp_out != d->cmp_in) && !f++)
            snprintf(why, n, "dev%u: home sent %" PRIu64 " MemRd / %" PRIu64 " MemWr, device got %" PRIu64 " / %" PRIu64
                     "; device sent %" PRIu64 " MemData / %" PRIu64 " Cmp, home got %" PRIu64 " / %" PRIu64,
                     i, d->memrd_sent, d->memwr_sent, d->memrd_in, d->memwr_in, d->memdata_out, d->cmp_out,
                     d->memdata_in, d->cmp_in);
    }
    return f;
}
