/* The server kinds' PCIe ports: links checked at build, one pcie_port per fabric port. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "models/server/server_impl.h"
#include "sim/presets.h"
#include "sim/ring.h"

static bool pow2_in(unsigned v, unsigned lo, unsigned hi) { return v >= lo && v <= hi && (v & (v - 1)) == 0; }

const server_cfg *server_cfg_of(sim_fabric *f, const char *kind, char *why, size_t why_n)
{
    static const server_cfg defaults = SERVER_CFG_DEFAULT;
    const server_cfg *c = sim_fabric_kind_cfg(f, kind);
    if (!c) c = &defaults;
    if (!pow2_in(c->mps, 128, 4096)) { snprintf(why, why_n, "mps=%u: allowed 128..4096, a power of two", c->mps); return NULL; }
    if (!pow2_in(c->mrrs, 128, 4096)) { snprintf(why, why_n, "mrrs=%u: allowed 128..4096, a power of two", c->mrrs); return NULL; }
    if (c->rcb != 64 && c->rcb != 128) { snprintf(why, why_n, "rcb=%u: allowed 64 or 128", c->rcb); return NULL; }
    if (c->fc_scale != 1 && c->fc_scale != 4 && c->fc_scale != 16) { snprintf(why, why_n, "fc_scale=%u: allowed 1, 4 or 16", c->fc_scale); return NULL; }
    if (!(c->dram_GBps > 0) || !(c->hbm_GBps > 0)) { snprintf(why, why_n, "dram_GBps and hbm_GBps must be > 0"); return NULL; }
    if (!(c->dram_ns >= 0) || !(c->rc_ns >= 0) || !(c->hbm_ns >= 0) || !(c->rx_ns >= 0)) { snprintf(why, why_n, "latencies must be >= 0"); return NULL; }
    if (!(c->switch_ns >= 0)) { snprintf(why, why_n, "switch_ns=%g: allowed >= 0", c->switch_ns); return NULL; }
    if ((c->dir == SERVER_P2P_RD || c->dir == SERVER_P2P_WR) && !c->peer) { snprintf(why, why_n, "a peer-to-peer copy needs a peer GPU"); return NULL; }
    if (!(c->nic_GBps > 0) || !(c->memcpy_GBps > 0)) { snprintf(why, why_n, "nic_GBps and memcpy_GBps must be > 0"); return NULL; }
    if (c->nic_buf_bytes < c->mrrs) { snprintf(why, why_n, "nic_buf_bytes=%llu: allowed >= mrrs (%u), else no read fits", (unsigned long long)c->nic_buf_bytes, c->mrrs); return NULL; }
    if (!(c->proxy_ns >= 0)) { snprintf(why, why_n, "proxy_ns=%g: allowed >= 0", c->proxy_ns); return NULL; }
    if (c->pageable && (c->dir != SERVER_H2D || !c->chunk_bytes || c->staging_slots < 1)) {
        snprintf(why, why_n, "pageable: allowed only for h2d, with chunk_bytes > 0 and staging_slots >= 1");
        return NULL;
    }
    if (c->nic_via_host && !c->chunk_bytes) { snprintf(why, why_n, "nic_via_host: needs chunk_bytes > 0 (the GPU flags each chunk)"); return NULL; }
    if (c->tags < 1 || c->tags > 768) { snprintf(why, why_n, "tags=%u: allowed 1..768", c->tags); return NULL; }
    return c;
}

bool server_cfg_copies(const server_cfg *c, const topo *t, uint32_t node)
{
    bool copies = c->bytes > 0 && !c->copiers;
    for (const char *const *n = c->copiers; c->bytes && n && *n; n++) copies = copies || !strcmp(*n, t->nodes[node].name);
    return copies;
}

int server_node_links(const topo *t, uint32_t node, unsigned *gen, unsigned *lanes, char *why, size_t why_n)
{
    const topo_node *n = &t->nodes[node];
    bool any = false;
    for (unsigned q = 0; q < n->nports; q++) {
        if (n->port_link[q] < 0) continue;
        const topo_link *l = &t->links[n->port_link[q]];
        unsigned g = 0, w = 0;
        char tail;
        if (!l->preset || sscanf(l->preset->name, "pcie-gen%u-x%u%c", &g, &w, &tail) != 2) {
            snprintf(why, why_n, "port %u: link preset %s is not PCIe; allowed: pcie-genG-xL", q, l->preset ? l->preset->name : "(none)");
            return -1;
        }
        pcie_phy phy;
        pcie_phy_init(&phy, g, w, 256, 0);
        if (fabs(l->GBps - phy.raw_GBps) > 1e-9 * phy.raw_GBps) {
            /* the PCIe port puts its own framing, DLLPs, SKPs (and Gen6 flits) on the wire: the link is the raw rate */
            snprintf(why, why_n, "port %u: link at %g GB/s, the PCIe PHY's raw rate for Gen%u x%u is %g GB/s; allowed: the raw rate", q,
                     l->GBps, g, w, phy.raw_GBps);
            return -1;
        }
        if (any && (g != *gen || w != *lanes)) {
            snprintf(why, why_n, "port %u: Gen%u x%u beside Gen%u x%u; allowed: one link type per component", q, g, w, *gen, *lanes);
            return -1;
        }
        *gen = g, *lanes = w, any = true;
    }
    if (!any) { snprintf(why, why_n, "no connected port"); return -1; }
    return 0;
}

pcie_port *server_port_new(sim_fabric *f, const sim_fabric_port *fp, const server_cfg *c, const uint32_t adv[PCIE_FC_TYPES],
                           unsigned dir, unsigned gen, unsigned lanes, char name[16])
{
    pcie_port_cfg pc;
    memset(&pc, 0, sizeof pc);
    pc.gen = gen;
    pc.lanes = lanes;
    pc.mps = c->mps;
    pc.fc_scale = c->fc_scale;
    pc.wire_ps = server_ns_ps(fp->link->latency_ns);
    for (unsigned t = 0; t < PCIE_FC_TYPES; t++) pc.adv[t] = adv[t];
    pc.rx_ps = server_ns_ps(c->rx_ns);
    pc.retrain_ps = 2000000;         /* Recovery: no errors are injected here, so never used */
    pc.link_error_free = true;
    sim_trace *tr = sim_fabric_trace(f);
    const topo *t = sim_fabric_topo(f);
    snprintf(name, 16, "%s%u", t->nodes[fp->node].kind->port_prefix, fp->port);
    sim_trace_push_scope(tr, t->nodes[fp->node].name);
    pcie_port *p = pcie_port_new(sim_fabric_kernel(f), name, &pc, dir, fp->out, fp->in,
                                 sim_fabric_node_seed(f, fp->node) + fp->port, tr);
    sim_trace_pop_scope(tr);
    return p;
}

int server_node_index_ok(uint32_t node, char *why, size_t why_n)
{
    if (node < SERVER_MAX_NODES) return 0;
    snprintf(why, why_n, "node index %u: requester IDs give each device a bus number; allowed: at most %u nodes", node, SERVER_MAX_NODES);
    return -1;
}

static void rdq_run(void *ctx)
{
    server_rdq *q = ctx;
    sim_time_ps now = sim_now(q->k);
    while (q->len && q->v[q->head].ready_ps <= now) {
        server_rd_ent *e = &q->v[q->head];
        pcie_port_submit_completions(e->port, &e->mrd, q->mps, q->rcb, false, false);
        q->head = (q->head + 1) % q->cap;
        q->len--;
    }
    if (q->after) q->after(q->ctx);
    if (q->len) sim_event_notify_at(&q->ev, q->v[q->head].ready_ps - now);
}

void server_rdq_init(server_rdq *q, sim_kernel *k, const char *name, unsigned mps, unsigned rcb, void (*after)(void *), void *ctx)
{
    memset(q, 0, sizeof *q);
    q->k = k, q->mps = mps, q->rcb = rcb, q->after = after, q->ctx = ctx;
    sim_event_init(&q->ev, k, name);
    sim_method_init(&q->proc, k, name, rdq_run, q);
    sim_sensitive(&q->proc, &q->ev);
    sim_dont_initialize(&q->proc);
}

void server_rdq_push(server_rdq *q, const pcie_tlp *mrd, pcie_port *port, sim_time_ps ready_ps)
{
    if (q->len == q->cap) {
        q->v = sim_ring_grow(q->v, sizeof *q->v, q->head, q->len, &q->cap, 64);
        q->head = 0;
    }
    server_rd_ent *e = &q->v[(q->head + q->len) % q->cap];
    e->mrd = *mrd, e->port = port, e->ready_ps = ready_ps;
    sim_time_ps now = sim_now(q->k);
    if (q->len++ == 0) sim_event_notify_at(&q->ev, ready_ps > now ? ready_ps - now : 0);
}

void server_rdq_free(server_rdq *q) { free(q->v); }

pcie_port *server_node_port(const sim_fabric *f, uint32_t node, unsigned port)
{
    const char *kind = sim_fabric_topo(f)->nodes[node].kind->name;
    void *c = sim_fabric_component(f, node);
    if (!c) return NULL;
    if (!strcmp(kind, "host") || !strcmp(kind, "server_host")) return server_host_port(c, port);
    if (!strcmp(kind, "gpu")) return port == 0 ? server_gpu_port(c) : NULL;
    if (!strcmp(kind, "pcie_switch")) return server_switch_port(c, port);
    if (!strcmp(kind, "nic")) return port == 0 ? server_nic_port(c) : NULL;
    return NULL;
}

void server_rd_init(server_rd *e, unsigned ntags, unsigned mrrs, uint16_t rid, uint64_t base, uint64_t bytes, uint64_t avail)
{
    memset(e, 0, sizeof *e);
    e->base = base, e->bytes = bytes, e->avail = avail, e->mrrs = mrrs, e->ntags = ntags, e->rid = rid;
    e->tags = calloc(ntags, sizeof *e->tags);
    e->free_tags = calloc(ntags, sizeof *e->free_tags);
    if (!e->tags || !e->free_tags) sim_fatal("out of memory");
    for (unsigned i = 0; i < ntags; i++) e->free_tags[e->n_free++] = (uint16_t)(ntags - 1 - i);
}

unsigned server_rd_issue(server_rd *e, pcie_port *p, uint64_t space_limit)
{
    unsigned n = 0;
    uint64_t end = e->avail < e->bytes ? e->avail : e->bytes;
    while (e->off < end && e->n_free && pcie_port_queued(p, PCIE_FC_NP) < SERVER_TL_QUEUE_DEPTH) {
        uint64_t addr = e->base + e->off;
        uint64_t len = e->mrrs - (addr & (e->mrrs - 1));
        if (len > end - e->off) len = end - e->off;
        if (e->off + len > space_limit) break;
        uint16_t tag = e->free_tags[--e->n_free];
        e->tags[tag] = (server_rd_tag){ true, (uint32_t)len, addr };
        pcie_tlp t = { 0 };
        t.type = PCIE_TLP_MRD;
        t.addr = addr;
        t.len = (uint32_t)len;
        t.tag = tag;
        t.req_id = e->rid;
        t.hdr_bytes = server_hdr_bytes(addr);
        e->off += len;
        pcie_port_submit(p, &t);
        n++;
    }
    return n;
}

int server_rd_complete(server_rd *e, const pcie_tlp *t, bool *tag_done)
{
    server_rd_tag *te = t->tag < e->ntags ? &e->tags[t->tag] : NULL;
    *tag_done = false;
    if (!te || !te->busy || t->addr != te->next_addr || t->byte_count != te->remaining || t->len > te->remaining) return -1;
    te->remaining -= t->len;
    te->next_addr += t->len;
    e->received += t->len;
    if (te->remaining) return 0;
    te->busy = false;
    e->free_tags[e->n_free++] = t->tag;
    *tag_done = true;
    return t->last ? 0 : -1;
}

void server_rd_free(server_rd *e)
{
    free(e->tags);
    free(e->free_tags);
    e->tags = NULL, e->free_tags = NULL;
}

void server_submit_register_write(pcie_port *p, uint16_t rid, uint64_t addr)
{
    pcie_tlp t = { 0 };
    t.type = PCIE_TLP_MWR;
    t.addr = addr;
    t.len = 4;
    t.req_id = rid;
    t.hdr_bytes = server_hdr_bytes(addr);
    t.last = 1;
    pcie_port_submit(p, &t);
}
