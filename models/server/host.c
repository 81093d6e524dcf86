/* Kinds "host" and "server_host": a root complex with one root port per
 * fabric port, DRAM (bandwidth + latency, shared by every port), a
 * completer for MRd (CplD split at RCB/MPS with the request's tag and
 * requester ID, after the root complex and DRAM time, out of the port the
 * request came in on) and a sink for MWr (each requester's writes
 * contiguous, in posted order, into DRAM). Host memory is every address
 * below SERVER_BAR_BASE; a request for a device's BAR arriving here would
 * need peer-to-peer between root ports, which is not modelled: it is
 * counted as an Unsupported Request and fails the check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/server/server_impl.h"

typedef struct host_rp {
    struct server_host *h;
    unsigned index;
    pcie_port *port;
    char name[16];
} host_rp;

struct server_host {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node;
    const server_cfg *cfg;
    unsigned gen, lanes, nports;
    host_rp *rp;                     /* by fabric port */
    sim_time_ps dram_free_ps;        /* DRAM busy until (reads and writes share it) */
    server_rdq rdq;
    server_wr_order wr;
    uint64_t unsupported;            /* requests for addresses that are not host memory */
    server_copy_stats st;
    sim_trace *tr;
    sim_trace_var tv_pending, tv_dram;
};

/* waves: reads waiting for DRAM, DRAM bytes moved */
static void trace_dram(void *ctx)
{
    server_host *h = ctx;
    sim_trace_u64(h->tr, h->tv_pending, h->rdq.len);
    sim_trace_u64(h->tr, h->tv_dram, h->st.dram_bytes);
}

/* DRAM serves bytes after the ones before it: returns when the access is done. */
static sim_time_ps dram_access(server_host *h, sim_time_ps at, uint64_t bytes)
{
    h->st.dram_bytes += bytes;
    return server_mem_access(&h->dram_free_ps, at, bytes, h->cfg->dram_GBps) + server_ns_ps(h->cfg->dram_ns);
}

static void rp_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    host_rp *rp = ctx;
    server_host *h = rp->h;
    sim_time_ps now = pcie_port_rx_now(p);
    if (t->type != PCIE_TLP_MWR && t->type != PCIE_TLP_MRD)
        sim_fatal("%s.%s: unexpected TLP type %u", sim_fabric_topo(h->f)->nodes[h->node].name, rp->name, t->type);
    if (server_bar_node(t->addr) >= 0) {   /* not host memory: Unsupported Request */
        h->unsupported++;
        return;
    }
    if (t->type == PCIE_TLP_MWR) {
        if (!server_wr_in_order(&h->wr, t)) h->st.addr_errors++;
        if (!h->st.tlps_received++) h->st.first_data_ps = now, h->st.first_data_bytes = t->len;
        h->st.last_data_ps = now;
        h->st.bytes_received += t->len;
        sim_time_ps in_dram = dram_access(h, now + server_ns_ps(h->cfg->rc_ns), t->len);
        if (t->last) {
            if (in_dram > h->st.done_ps) h->st.done_ps = in_dram;
            h->st.streams_done++;
        }
        trace_dram(h);
        return;
    }
    /* a read: root complex, then DRAM; the reads of all ports queue for the one DRAM in arrival order */
    sim_time_ps ready = dram_access(h, now + server_ns_ps(h->cfg->rc_ns), t->len) + server_ns_ps(h->cfg->rc_ns);
    server_rdq_push(&h->rdq, t, p, ready);
    trace_dram(h);
}

static void rp_refill(void *ctx, pcie_port *p, unsigned cls) { (void)ctx, (void)p, (void)cls; }
static void rp_drained(void *ctx, pcie_port *p) { (void)ctx, (void)p; }

static void *host_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const server_cfg *c = server_cfg_of(f, "host", why, why_n);
    if (!c || server_node_index_ok(node, why, why_n)) return NULL;
    server_host *h = calloc(1, sizeof *h);
    if (!h) sim_fatal("out of memory");
    if (server_node_links(sim_fabric_topo(f), node, &h->gen, &h->lanes, why, why_n)) { free(h); return NULL; }
    h->f = f;
    h->k = sim_fabric_kernel(f);
    h->node = node;
    h->cfg = c;
    h->nports = sim_fabric_topo(f)->nodes[node].nports;
    h->rp = calloc(h->nports, sizeof *h->rp);
    if (!h->rp) sim_fatal("out of memory");
    h->tr = sim_fabric_trace(f);
    server_rdq_init(&h->rdq, h->k, "host_dram", c->mps, c->rcb, trace_dram, h);
    if (h->tr) {
        sim_trace_push_scope(h->tr, sim_fabric_topo(f)->nodes[node].name);
        sim_trace_push_scope(h->tr, "dram");
        h->tv_pending = sim_trace_add_var(h->tr, "reads_pending", 16);
        h->tv_dram = sim_trace_add_var(h->tr, "bytes_moved", 40);
        sim_trace_pop_scope(h->tr);
        sim_trace_pop_scope(h->tr);
        trace_dram(h);
    }
    return h;
}

static void host_connect(void *comp, const sim_fabric_port *fp)
{
    server_host *h = comp;
    host_rp *rp = &h->rp[fp->port];
    rp->h = h;
    rp->index = fp->port;
    rp->port = server_port_new(h->f, fp, h->cfg, h->cfg->host_adv, PCIE_UP, h->gen, h->lanes, rp->name);
    pcie_port_app app = { rp, rp_deliver, rp_refill, rp_drained, NULL };
    pcie_port_set_app(rp->port, &app);
}

static int host_check(const void *comp, bool drained, char *why, size_t why_n)
{
    const server_host *h = comp;
    for (unsigned q = 0; q < h->nports; q++) {
        if (!h->rp[q].port) continue;
        char w[400];
        if (pcie_port_check(h->rp[q].port, drained, w, sizeof w)) {
            snprintf(why, why_n, "root port %s: %s", h->rp[q].name, w);
            return -1;
        }
    }
    if (h->st.addr_errors) { snprintf(why, why_n, "%llu writes out of order or not contiguous", (unsigned long long)h->st.addr_errors); return -1; }
    if (h->unsupported) {
        snprintf(why, why_n, "%llu requests for a device's BAR reached the root complex (peer-to-peer between root ports is not modelled)",
                 (unsigned long long)h->unsupported);
        return -1;
    }
    if (drained && h->rdq.len) { snprintf(why, why_n, "%zu reads never completed", h->rdq.len); return -1; }
    return 0;
}

static void host_free(void *comp)
{
    server_host *h = comp;
    for (unsigned q = 0; q < h->nports; q++)
        if (h->rp[q].port) pcie_port_free(h->rp[q].port);
    free(h->rp);
    server_rdq_free(&h->rdq);
    free(h);
}

void server_host_stats(const server_host *h, server_copy_stats *s) { *s = h->st; }
pcie_port *server_host_port(const server_host *h, unsigned port) { return port < h->nports ? h->rp[port].port : NULL; }

static const sim_fabric_kind host_kind = {
    .name = "host", .build = host_build, .ingress = NULL, /* PCIe credits travel in the port's own DLLPs */
    .connect = host_connect, .start = NULL, .check = host_check, .reset_stats = NULL, .held = NULL, .free = host_free,
};
static const sim_fabric_kind server_host_kind = {
    .name = "server_host", .build = host_build, .ingress = NULL,
    .connect = host_connect, .start = NULL, .check = host_check, .reset_stats = NULL, .held = NULL, .free = host_free,
};
void server_host_register(void)
{
    sim_fabric_kind_register(&host_kind);
    sim_fabric_kind_register(&server_host_kind);
}
