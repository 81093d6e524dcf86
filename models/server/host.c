/* Kind "host": a root complex with one root port per fabric port, DRAM
 * (bandwidth + latency, shared by every port), a completer for MRd (CplD
 * split at RCB/MPS with the request's tag, after the root complex and DRAM
 * time) and a sink for MWr (contiguous, in posted order, into DRAM). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/server/server_impl.h"
#include "sim/ring.h"

typedef struct pend_rd { pcie_tlp mrd; unsigned port; sim_time_ps ready_ps; } pend_rd;

typedef struct host_rp {
    struct server_host *h;
    unsigned index;
    pcie_port *port;
    char name[16];
    uint64_t wr_expect_addr;
    bool wr_started;
} host_rp;

struct server_host {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node;
    const server_cfg *cfg;
    unsigned gen, lanes, nports;
    host_rp *rp;                     /* by fabric port */
    sim_time_ps dram_free_ps;        /* DRAM busy until (reads and writes share it) */
    pend_rd *pend; size_t pend_head, pend_len, pend_cap;
    sim_event cpl_ev;
    sim_process cpl_proc;
    server_copy_stats st;
    sim_trace *tr;
    sim_trace_var tv_pending, tv_dram;
};

/* waves: reads waiting for DRAM, DRAM bytes moved */
static void trace_dram(server_host *h)
{
    sim_trace_u64(h->tr, h->tv_pending, h->pend_len);
    sim_trace_u64(h->tr, h->tv_dram, h->st.dram_bytes);
}

/* DRAM serves bytes after the ones before it: returns when the access is done. */
static sim_time_ps dram_access(server_host *h, sim_time_ps at, uint64_t bytes)
{
    sim_time_ps start = at > h->dram_free_ps ? at : h->dram_free_ps;
    h->dram_free_ps = start + server_bytes_ps(bytes, h->cfg->dram_GBps);
    h->st.dram_bytes += bytes;
    return h->dram_free_ps + server_ns_ps(h->cfg->dram_ns);
}

static void cpl_run(void *ctx)
{
    server_host *h = ctx;
    sim_time_ps now = sim_now(h->k);
    while (h->pend_len && h->pend[h->pend_head].ready_ps <= now) {
        pend_rd *e = &h->pend[h->pend_head];
        pcie_port_submit_completions(h->rp[e->port].port, &e->mrd, h->cfg->mps, h->cfg->rcb, false, false);
        h->pend_head = (h->pend_head + 1) % h->pend_cap;
        h->pend_len--;
    }
    trace_dram(h);
    if (h->pend_len) sim_event_notify_at(&h->cpl_ev, h->pend[h->pend_head].ready_ps - now);
}

static void rp_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    host_rp *rp = ctx;
    server_host *h = rp->h;
    sim_time_ps now = pcie_port_rx_now(p);
    if (t->type == PCIE_TLP_MWR) {
        /* posted writes of one DMA stream arrive in order, contiguous */
        if (rp->wr_started && t->addr != rp->wr_expect_addr) h->st.addr_errors++;
        rp->wr_started = true;
        rp->wr_expect_addr = t->addr + t->len;
        if (!h->st.tlps_received++) h->st.first_data_ps = now, h->st.first_data_bytes = t->len;
        h->st.last_data_ps = now;
        h->st.bytes_received += t->len;
        sim_time_ps in_dram = dram_access(h, now + server_ns_ps(h->cfg->rc_ns), t->len);
        if (t->last) h->st.done_ps = in_dram;
        trace_dram(h);
        return;
    }
    if (t->type != PCIE_TLP_MRD) sim_fatal("%s.%s: unexpected TLP type %u", sim_fabric_topo(h->f)->nodes[h->node].name, rp->name, t->type);
    /* a read: root complex, then DRAM; the reads of all ports queue for the one DRAM in arrival order,
     * so ready times are non-decreasing and the queue stays a FIFO */
    sim_time_ps ready = dram_access(h, now + server_ns_ps(h->cfg->rc_ns), t->len) + server_ns_ps(h->cfg->rc_ns);
    if (h->pend_len == h->pend_cap) {
        h->pend = sim_ring_grow(h->pend, sizeof *h->pend, h->pend_head, h->pend_len, &h->pend_cap, 64);
        h->pend_head = 0;
    }
    pend_rd *e = &h->pend[(h->pend_head + h->pend_len) % h->pend_cap];
    e->mrd = *t;
    e->port = rp->index;
    e->ready_ps = ready;
    sim_time_ps sn = sim_now(h->k);
    if (h->pend_len++ == 0) sim_event_notify_at(&h->cpl_ev, ready > sn ? ready - sn : 0);
    trace_dram(h);
}

static void rp_refill(void *ctx, pcie_port *p, unsigned cls) { (void)ctx, (void)p, (void)cls; }
static void rp_drained(void *ctx, pcie_port *p) { (void)ctx, (void)p; }

static void *host_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const server_cfg *c = server_cfg_of(f, "host", why, why_n);
    if (!c) return NULL;
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
    sim_event_init(&h->cpl_ev, h->k, "host_cpl");
    sim_method_init(&h->cpl_proc, h->k, "host_dram", cpl_run, h);
    sim_sensitive(&h->cpl_proc, &h->cpl_ev);
    sim_dont_initialize(&h->cpl_proc);
    h->tr = sim_fabric_trace(f);
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
    if (drained && h->pend_len) { snprintf(why, why_n, "%zu reads never completed", h->pend_len); return -1; }
    return 0;
}

static void host_free(void *comp)
{
    server_host *h = comp;
    for (unsigned q = 0; q < h->nports; q++)
        if (h->rp[q].port) pcie_port_free(h->rp[q].port);
    free(h->rp);
    free(h->pend);
    free(h);
}

void server_host_stats(const server_host *h, server_copy_stats *s) { *s = h->st; }
pcie_port *server_host_port(const server_host *h, unsigned port) { return port < h->nports ? h->rp[port].port : NULL; }

static const sim_fabric_kind host_kind = {
    .name = "host", .build = host_build, .ingress = NULL, /* PCIe credits travel in the port's own DLLPs */
    .connect = host_connect, .start = NULL, .check = host_check, .reset_stats = NULL, .held = NULL, .free = host_free,
};
void server_host_register(void) { sim_fabric_kind_register(&host_kind); }
