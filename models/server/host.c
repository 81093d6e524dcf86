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
    /* the CPU: a proxy thread that turns a GPU's flags into a NIC's doorbells (staged send), and
     * one memcpy thread per pageable h2d copy filling pinned staging buffers */
    struct host_stream { uint64_t flagged, copied, chunk_end; sim_time_ps busy_until_ps; bool pageable; } *stream;   /* by GPU node */
    struct host_db { sim_time_ps at_ps; uint32_t target; uint64_t ready; } *db;   /* doorbells waiting for the CPU */
    size_t n_db, cap_db;
    int nic_src, nic_dst;            /* staged send: flags of GPU nic_src ring NIC nic_dst (-1: none) */
    bool launched;                   /* the CPU starts once its root ports are up (DL_Active) */
    sim_time_ps launch_ps, last_write_ps;
    uint64_t flag_errors, doorbells_sent;
    sim_event cpu_ev;
    sim_process cpu_proc;
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

/* The root port below which node sits (the tree's path from the host). */
static unsigned route_to(const server_host *h, uint32_t node)
{
    const topo *t = sim_fabric_topo(h->f);
    uint32_t *dist = calloc(t->n_nodes, sizeof *dist);
    if (!dist) sim_fatal("out of memory");
    topo_bfs_to(t, node, dist);
    unsigned best = 0;
    uint32_t best_d = UINT32_MAX;
    for (unsigned q = 0; q < h->nports; q++) {
        int w = topo_peer(t, h->node, q, NULL);
        if (w >= 0 && dist[w] < best_d) best_d = dist[w], best = q;
    }
    free(dist);
    return best;
}

static void cpu_wake(server_host *h, sim_time_ps at)
{
    sim_time_ps now = sim_now(h->k);
    sim_event_notify_at(&h->cpu_ev, at > now ? at - now : 0);
}

/* The CPU posts a doorbell (an MMIO write) at at_ps: target may read its source up to ready. */
static void cpu_doorbell(server_host *h, sim_time_ps at_ps, uint32_t target, uint64_t ready)
{
    if (h->n_db == h->cap_db) {
        h->cap_db = h->cap_db ? 2 * h->cap_db : 16;
        h->db = realloc(h->db, h->cap_db * sizeof *h->db);
        if (!h->db) sim_fatal("out of memory");
    }
    h->db[h->n_db++] = (struct host_db){ at_ps, target, ready };
    cpu_wake(h, at_ps);
}

/* A flag from GPU node: it wrote (staged send) or read (pageable copy) the first value bytes. */
static void cpu_flag(server_host *h, uint32_t node, uint64_t value, sim_time_ps now)
{
    struct host_stream *s = &h->stream[node];
    if (value <= s->flagged) h->flag_errors++;   /* flags of one stream count up */
    s->flagged = value;
    /* the proxy polls the flag's line: the data before it is in DRAM by then (posted order) */
    sim_time_ps seen = now + server_ns_ps(h->cfg->rc_ns);
    if (seen < h->last_write_ps) seen = h->last_write_ps;
    if ((int)node == h->nic_src) cpu_doorbell(h, seen + server_ns_ps(h->cfg->proxy_ns), (uint32_t)h->nic_dst, value);
    else if (s->pageable) cpu_wake(h, seen);   /* a staging buffer is free again */
    else h->flag_errors++;
}

#define HOST_PAGE_BYTES 4096u   /* a pageable buffer is copied page by page (each page's frame looked up) */

/* The CPU: due doorbells out (oldest first), then each pageable copy's memcpy, a page at a time
 * (the pageable page read and the staging page written: both through DRAM, in turn with the DMA's
 * reads), of its next chunk into a free staging buffer; the chunk's doorbell after its last page. */
static void cpu_run(void *ctx)
{
    server_host *h = ctx;
    const server_cfg *c = h->cfg;
    sim_time_ps now = sim_now(h->k), next = SIM_TIME_MAX;
    if (!h->launched) {
        bool up = true;
        for (unsigned q = 0; q < h->nports; q++) up = up && (!h->rp[q].port || pcie_port_active_ps(h->rp[q].port));
        if (!up) {
            cpu_wake(h, now + 1000);
            return;
        }
        h->launched = true, h->launch_ps = now;
    }
    for (;;) {
        size_t pick = h->n_db;
        for (size_t i = 0; i < h->n_db; i++)
            if (h->db[i].at_ps <= now && (pick == h->n_db || h->db[i].at_ps < h->db[pick].at_ps)) pick = i;
        if (pick == h->n_db) break;
        struct host_db d = h->db[pick];
        memmove(&h->db[pick], &h->db[pick + 1], (h->n_db - pick - 1) * sizeof *h->db);
        h->n_db--;
        server_submit_register_write(h->rp[route_to(h, d.target)].port, server_rid(h->node), server_bar(d.target) + SERVER_DOORBELL_OFF + d.ready);
        h->doorbells_sent++;
    }
    for (size_t i = 0; i < h->n_db; i++)
        if (h->db[i].at_ps < next) next = h->db[i].at_ps;
    for (uint32_t n = 0; n < SERVER_MAX_NODES; n++) {
        struct host_stream *s = &h->stream[n];
        if (!s->pageable || s->copied == c->bytes) continue;
        if (s->busy_until_ps > now) { next = s->busy_until_ps < next ? s->busy_until_ps : next; continue; }
        if (s->copied == s->chunk_end) {   /* the next chunk, once a staging buffer is free (its flag wakes us) */
            uint64_t len = c->chunk_bytes < c->bytes - s->copied ? c->chunk_bytes : c->bytes - s->copied;
            if (s->copied + len > s->flagged + (uint64_t)c->staging_slots * c->chunk_bytes) continue;
            s->chunk_end = s->copied + len;
        }
        /* a page at the CPU's rate; its DRAM traffic (read + write) at DRAM's, its latency hidden by prefetch */
        uint64_t page = s->chunk_end - s->copied < HOST_PAGE_BYTES ? s->chunk_end - s->copied : HOST_PAGE_BYTES;
        h->st.dram_bytes += 2 * page;
        sim_time_ps cpu_done = now + server_bytes_ps(page, c->memcpy_GBps);
        /* DRAM serves everyone in the order they reach the memory controller: the DMA's requests rc_ns
         * after the root port, the core's as far from it (assumed), so both queue at the same distance */
        sim_time_ps rc = server_ns_ps(c->rc_ns);
        sim_time_ps dram_done = server_mem_access(&h->dram_free_ps, now + rc, 2 * page, c->dram_GBps) - rc;
        s->busy_until_ps = cpu_done > dram_done ? cpu_done : dram_done;
        s->copied += page;
        if (s->copied == s->chunk_end) cpu_doorbell(h, s->busy_until_ps + server_ns_ps(c->proxy_ns), n, s->copied);
        if (s->busy_until_ps < next) next = s->busy_until_ps;
    }
    if (next != SIM_TIME_MAX) cpu_wake(h, next);
    trace_dram(h);
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
    if (t->type == PCIE_TLP_MWR && server_is_host_flag(t->addr)) {
        cpu_flag(h, server_rid_node(t->req_id), server_host_flag_value(t->addr), now);
        return;
    }
    if (t->type == PCIE_TLP_MWR) {
        if (!server_wr_in_order(&h->wr, t)) h->st.addr_errors++;
        if (!h->st.tlps_received++) h->st.first_data_ps = now, h->st.first_data_bytes = t->len;
        h->st.last_data_ps = now;
        h->st.bytes_received += t->len;
        sim_time_ps in_dram = dram_access(h, now + server_ns_ps(h->cfg->rc_ns), t->len);
        if (in_dram > h->last_write_ps) h->last_write_ps = in_dram;
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

static void host_start(void *comp)
{
    server_host *h = comp;
    if (!h->launched) cpu_wake(h, 1000);
}
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
    h->stream = calloc(SERVER_MAX_NODES, sizeof *h->stream);
    if (!h->stream) sim_fatal("out of memory");
    const topo *t = sim_fabric_topo(f);
    bool any_pageable = false;
    for (uint32_t n = 0; c->pageable && n < t->n_nodes; n++)
        if (!strcmp(t->nodes[n].kind->name, "gpu") && server_cfg_copies(c, t, n)) h->stream[n].pageable = any_pageable = true;
    h->nic_src = h->nic_dst = -1;
    if (c->nic_via_host && c->nic_bytes) {
        h->nic_src = c->nic_src ? topo_node_find(t, c->nic_src) : -1;
        h->nic_dst = c->nic_sender ? topo_node_find(t, c->nic_sender) : -1;
        if (h->nic_src < 0 || h->nic_dst < 0) {
            snprintf(why, why_n, "a staged send needs its GPU and NIC: %s, %s", c->nic_src ? c->nic_src : "(none)", c->nic_sender ? c->nic_sender : "(none)");
            free(h->stream), free(h->rp), free(h);
            return NULL;
        }
    }
    sim_event_init(&h->cpu_ev, h->k, "host_cpu");
    sim_method_init(&h->cpu_proc, h->k, "host_cpu", cpu_run, h);
    sim_sensitive(&h->cpu_proc, &h->cpu_ev);
    sim_dont_initialize(&h->cpu_proc);
    h->launched = !any_pageable;   /* only a pageable copy has the CPU start work of its own */
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
    if (h->flag_errors) { snprintf(why, why_n, "%llu flags out of order or from no staged transfer", (unsigned long long)h->flag_errors); return -1; }
    if (drained && h->n_db) { snprintf(why, why_n, "%zu doorbells never posted", h->n_db); return -1; }
    for (uint32_t n = 0; drained && n < SERVER_MAX_NODES; n++)
        if (h->stream[n].pageable && (h->stream[n].copied != h->cfg->bytes || h->stream[n].flagged != h->cfg->bytes)) {
            snprintf(why, why_n, "pageable copy of node %u: %llu bytes staged, %llu consumed of %llu", n, (unsigned long long)h->stream[n].copied,
                     (unsigned long long)h->stream[n].flagged, (unsigned long long)h->cfg->bytes);
            return -1;
        }
    return 0;
}

static void host_free(void *comp)
{
    server_host *h = comp;
    for (unsigned q = 0; q < h->nports; q++)
        if (h->rp[q].port) pcie_port_free(h->rp[q].port);
    free(h->rp);
    free(h->stream);
    free(h->db);
    server_rdq_free(&h->rdq);
    free(h);
}

void server_host_stats(const server_host *h, server_copy_stats *s) { *s = h->st; }
sim_time_ps server_host_launch_ps(const server_host *h) { return h->launch_ps; }
pcie_port *server_host_port(const server_host *h, unsigned port) { return port < h->nports ? h->rp[port].port : NULL; }

static const sim_fabric_kind host_kind = {
    .name = "host", .build = host_build, .ingress = NULL, /* PCIe credits travel in the port's own DLLPs */
    .connect = host_connect, .start = host_start, .check = host_check, .reset_stats = NULL, .held = NULL, .free = host_free,
};
static const sim_fabric_kind server_host_kind = {
    .name = "server_host", .build = host_build, .ingress = NULL,
    .connect = host_connect, .start = host_start, .check = host_check, .reset_stats = NULL, .held = NULL, .free = host_free,
};
void server_host_register(void)
{
    sim_fabric_kind_register(&host_kind);
    sim_fabric_kind_register(&server_host_kind);
}
