/* Kind "gpu": a PCIe endpoint with HBM, its BAR and one copy engine. Reads
 * (h2d from host memory, p2p_rd from a peer's BAR): MRd of up to MRRS bytes
 * (never crossing an MRRS boundary), one tag each, as long as a tag is free;
 * the CplDs go to HBM. Writes (d2h to host memory, p2p_wr to a peer's BAR):
 * the engine reads HBM and sends MWr of up to MPS. The read bandwidth is
 * whatever tags, MRRS, RCB and completion credits let through the ports on
 * the way; nothing here paces it. As a completer, an MRd for its BAR is
 * answered from HBM with CplDs, and an MWr is sunk into HBM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/server/server_impl.h"

struct server_gpu {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node;
    const server_cfg *cfg;
    unsigned gen, lanes;
    pcie_port *port;
    char name[16];
    bool copies, reads;              /* runs the copy; by reads (MRd) or writes (MWr) */
    uint64_t base;                   /* the copy's other end: source (reads) or destination (writes) */
    uint16_t rid;
    uint64_t unsupported;            /* requests arriving for another device's address */
    server_rdq rdq;                  /* completer: reads waiting for HBM */
    server_wr_order wr;              /* sink: each writer's MWr in order */
    uint64_t off;                    /* d2h: next byte of the copy to write */
    server_rd rd;                    /* h2d: the read engine */
    bool flags;                      /* staged (pageable h2d, or d2h for a NIC): it flags the host's CPU per chunk */
    uint64_t flagged;                /* bytes reported so far */
    uint64_t doorbells;
    sim_time_ps hbm_free_ps;
    bool launched;                   /* the copy starts once the link is up (DL_Active): not link training */
    sim_time_ps launch_ps;
    sim_event wake_ev;               /* d2h: HBM data of the next MWr is ready */
    sim_process wake_proc;
    server_copy_stats st;            /* what it received: CplDs of its reads, or MWr into its BAR */
    sim_trace *tr;
    sim_trace_var tv_tags, tv_bytes;
};

/* waves: the copy engine's outstanding reads and bytes moved (received h2d, sent d2h) */
static void trace_engine(server_gpu *g)
{
    sim_trace_u64(g->tr, g->tv_tags, server_rd_outstanding(&g->rd));
    sim_trace_u64(g->tr, g->tv_bytes, g->reads || !g->copies ? g->st.bytes_received : g->off);
}

/* Staged transfers: after each chunk written (d2h) or read (h2d), a flag to the host's CPU. */
static void flag_chunks(server_gpu *g, pcie_port *p, uint64_t done)
{
    uint64_t chunk = g->cfg->chunk_bytes, bytes = g->cfg->bytes;
    if (!g->flags) return;
    while (g->flagged < done && (done - g->flagged >= chunk || done == bytes)) {
        g->flagged = g->flagged + chunk < done ? g->flagged + chunk : done;
        server_submit_register_write(p, g->rid, server_host_flag(g->node) + g->flagged);
    }
}

static void refill(void *ctx, pcie_port *p, unsigned cls)
{
    server_gpu *g = ctx;
    const server_cfg *c = g->cfg;
    if (!g->launched) return;
    sim_time_ps now = pcie_port_tl_now(p);
    if (g->reads && (cls == PCIE_FC_NP || cls == PCIE_FC_CLASSES)) {
        server_rd_issue(&g->rd, p, UINT64_MAX);
        trace_engine(g);
    }
    if (!g->reads && (cls == PCIE_FC_P || cls == PCIE_FC_CLASSES)) {
        while (g->off < c->bytes && pcie_port_queued(p, PCIE_FC_P) < SERVER_TL_QUEUE_DEPTH) {
            uint64_t addr = g->base + g->off;
            uint64_t len = c->mps - (addr & (c->mps - 1));
            if (len > c->bytes - g->off) len = c->bytes - g->off;
            /* its data comes out of HBM first: latency once, then the HBM's rate */
            sim_time_ps ready = g->launch_ps + server_ns_ps(c->hbm_ns) + server_bytes_ps(g->off + len, c->hbm_GBps);
            if (ready > now) {
                sim_time_ps sn = sim_now(g->k);
                sim_event_notify_at(&g->wake_ev, ready > sn ? ready - sn : 0);
                return;
            }
            pcie_tlp t = { 0 };
            t.type = PCIE_TLP_MWR;
            t.addr = addr;
            t.len = (uint32_t)len;
            t.req_id = g->rid;
            t.hdr_bytes = server_hdr_bytes(addr);
            g->off += len;
            t.last = g->off == c->bytes;
            pcie_port_submit(p, &t);
            flag_chunks(g, p, g->off);   /* posted after the chunk's data: it reaches the host after it */
            trace_engine(g);
        }
    }
}

#define LAUNCH_POLL_PS 1000u   /* how often the driver looks whether the link is up */

static void wake_run(void *ctx)
{
    server_gpu *g = ctx;
    if (!g->launched) {
        if (!pcie_port_active_ps(g->port)) {
            sim_event_notify_at(&g->wake_ev, LAUNCH_POLL_PS);
            return;
        }
        g->launched = true;
        g->launch_ps = sim_now(g->k);
    }
    refill(g, g->port, PCIE_FC_CLASSES);
}

/* Completer and sink for its BAR: HBM latency once per access, then its rate. */
static void serve(server_gpu *g, pcie_port *p, const pcie_tlp *t, sim_time_ps now)
{
    if (server_bar_node(t->addr) != (int64_t)g->node) {
        g->unsupported++;
        return;
    }
    uint64_t bar_off = t->addr - server_bar(g->node);
    if (t->type == PCIE_TLP_MWR && bar_off >= SERVER_DOORBELL_OFF) {   /* the host's CPU: this much is staged */
        g->doorbells++;
        if (bar_off - SERVER_DOORBELL_OFF > g->rd.avail) g->rd.avail = bar_off - SERVER_DOORBELL_OFF;
        if (g->launched) refill(g, p, PCIE_FC_NP);
        return;
    }
    sim_time_ps in_hbm = server_mem_access(&g->hbm_free_ps, now, t->len, g->cfg->hbm_GBps) + server_ns_ps(g->cfg->hbm_ns);
    if (t->type == PCIE_TLP_MRD) {
        server_rdq_push(&g->rdq, t, p, in_hbm);
        return;
    }
    if (!server_wr_in_order(&g->wr, t)) g->st.addr_errors++;
    if (!g->st.tlps_received++) g->st.first_data_ps = now, g->st.first_data_bytes = t->len;
    g->st.last_data_ps = now;
    g->st.bytes_received += t->len;
    if (t->last) {
        if (in_hbm > g->st.done_ps) g->st.done_ps = in_hbm;
        g->st.streams_done++;
    }
    trace_engine(g);
}

static void deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    server_gpu *g = ctx;
    sim_time_ps now = pcie_port_rx_now(p);
    if (t->type == PCIE_TLP_MRD || t->type == PCIE_TLP_MWR) {
        serve(g, p, t, now);
        return;
    }
    if (t->type != PCIE_TLP_CPLD) sim_fatal("%s: unexpected TLP type %u", g->name, t->type);
    bool tag_done;
    if (server_rd_complete(&g->rd, t, &tag_done)) {
        g->st.addr_errors++;
        if (!tag_done) return;
    }
    if (!g->st.tlps_received++) g->st.first_data_ps = now, g->st.first_data_bytes = t->len;
    g->st.last_data_ps = now;
    g->st.bytes_received += t->len;
    sim_time_ps start = now > g->hbm_free_ps ? now : g->hbm_free_ps;
    g->hbm_free_ps = start + server_bytes_ps(t->len, g->cfg->hbm_GBps);
    if (g->st.bytes_received == g->cfg->bytes) g->st.streams_done = 1, g->st.done_ps = g->hbm_free_ps + server_ns_ps(g->cfg->hbm_ns);
    /* completions come back in request order here (one path, FIFO completers): received bytes are a prefix */
    flag_chunks(g, p, g->rd.received);
    if (tag_done) refill(g, p, PCIE_FC_NP);
    trace_engine(g);
}

static void drained(void *ctx, pcie_port *p) { (void)ctx, (void)p; }

static void *gpu_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const server_cfg *c = server_cfg_of(f, "gpu", why, why_n);
    if (!c) return NULL;
    const topo *t = sim_fabric_topo(f);
    unsigned connected = 0;
    for (unsigned q = 0; q < t->nodes[node].nports; q++) connected += t->nodes[node].port_link[q] >= 0;
    if (connected != 1) {
        snprintf(why, why_n, "%u links: the gpu kind has one PCIe port (NVLink ports come with the collectives issue)", connected);
        return NULL;
    }
    if (server_node_index_ok(node, why, why_n)) return NULL;
    bool copies = server_cfg_copies(c, t, node);
    bool p2p = c->dir == SERVER_P2P_RD || c->dir == SERVER_P2P_WR;
    int peer = p2p ? topo_node_find(t, c->peer) : -1;
    if (copies && p2p && (peer < 0 || strcmp(t->nodes[peer].kind->name, "gpu") || (uint32_t)peer == node)) {
        snprintf(why, why_n, "peer %s: allowed: another node of kind gpu", c->peer);
        return NULL;
    }
    server_gpu *g = calloc(1, sizeof *g);
    if (!g) sim_fatal("out of memory");
    if (server_node_links(t, node, &g->gen, &g->lanes, why, why_n)) { free(g); return NULL; }
    g->copies = copies;
    g->reads = c->dir == SERVER_H2D || c->dir == SERVER_P2P_RD;
    g->flags = copies && ((c->pageable && c->dir == SERVER_H2D) || (c->nic_via_host && c->dir == SERVER_D2H));
    g->base = p2p ? server_bar((uint32_t)peer) : server_host_buf(node);
    g->rid = server_rid(node);
    g->f = f;
    g->k = sim_fabric_kernel(f);
    g->node = node;
    g->cfg = c;
    /* a pageable h2d copy reads the staging buffer only as far as the host's doorbells say */
    server_rd_init(&g->rd, c->tags, c->mrrs, g->rid, g->base, copies && g->reads ? c->bytes : 0, c->pageable ? 0 : c->bytes);
    sim_event_init(&g->wake_ev, g->k, "gpu_hbm");
    sim_method_init(&g->wake_proc, g->k, "gpu_copy_engine", wake_run, g);
    sim_sensitive(&g->wake_proc, &g->wake_ev);
    sim_dont_initialize(&g->wake_proc);
    server_rdq_init(&g->rdq, g->k, "gpu_hbm_read", c->mps, c->rcb, NULL, NULL);
    return g;
}

static void gpu_connect(void *comp, const sim_fabric_port *fp)
{
    server_gpu *g = comp;
    g->port = server_port_new(g->f, fp, g->cfg, g->cfg->gpu_adv, PCIE_DOWN, g->gen, g->lanes, g->name);
    pcie_port_app app = { g, deliver, refill, drained, NULL };
    pcie_port_set_app(g->port, &app);
    g->tr = sim_fabric_trace(g->f);
    if (g->tr) {
        sim_trace_push_scope(g->tr, sim_fabric_topo(g->f)->nodes[g->node].name);
        sim_trace_push_scope(g->tr, "copy_engine");
        g->tv_tags = sim_trace_add_var(g->tr, "tags_outstanding", 16);
        g->tv_bytes = sim_trace_add_var(g->tr, "bytes_moved", 40);
        sim_trace_pop_scope(g->tr);
        sim_trace_pop_scope(g->tr);
        trace_engine(g);
    }
}

/* the copy is launched once the link is up (polled), so its time never includes link training */
static void gpu_start(void *comp)
{
    server_gpu *g = comp;
    if (g->copies) sim_event_notify_at(&g->wake_ev, LAUNCH_POLL_PS);
}

static int gpu_check(const void *comp, bool drained_, char *why, size_t why_n)
{
    const server_gpu *g = comp;
    char w[400];
    if (pcie_port_check(g->port, drained_, w, sizeof w)) { snprintf(why, why_n, "%s: %s", g->name, w); return -1; }
    if (g->st.addr_errors) {
        snprintf(why, why_n, "%llu completions not matching an open request (tag, address, byte count)", (unsigned long long)g->st.addr_errors);
        return -1;
    }
    if (g->unsupported) {
        snprintf(why, why_n, "%llu requests for an address outside its BAR", (unsigned long long)g->unsupported);
        return -1;
    }
    if (drained_ && g->rdq.len) { snprintf(why, why_n, "%zu reads of its HBM never completed", g->rdq.len); return -1; }
    if (drained_ && server_rd_outstanding(&g->rd)) { snprintf(why, why_n, "%u tags never completed", server_rd_outstanding(&g->rd)); return -1; }
    return 0;
}

static void gpu_free(void *comp)
{
    server_gpu *g = comp;
    pcie_port_free(g->port);
    server_rd_free(&g->rd);
    server_rdq_free(&g->rdq);
    free(g);
}

sim_time_ps server_gpu_launch_ps(const server_gpu *g) { return g->launch_ps; }
bool server_gpu_copies(const server_gpu *g) { return g->copies; }
bool server_gpu_copy_done(const server_gpu *g) { return !g->copies || (g->reads ? server_rd_done(&g->rd) : g->off == g->cfg->bytes); }
void server_gpu_stats(const server_gpu *g, server_copy_stats *s) { *s = g->st; }
pcie_port *server_gpu_port(const server_gpu *g) { return g->port; }

static const sim_fabric_kind gpu_kind = {
    .name = "gpu", .build = gpu_build, .ingress = NULL, .connect = gpu_connect, .start = gpu_start, .check = gpu_check,
    .reset_stats = NULL, .held = NULL, .free = gpu_free,
};
void server_gpu_register(void) { sim_fabric_kind_register(&gpu_kind); }
