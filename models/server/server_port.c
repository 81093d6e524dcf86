/* The server kinds' PCIe ports: links checked at build, one pcie_port per fabric port. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/server/server_impl.h"
#include "sim/presets.h"

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
