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
    if (c->tags < 1 || c->tags > 768) { snprintf(why, why_n, "tags=%u: allowed 1..768", c->tags); return NULL; }
    return c;
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
    return NULL;
}
