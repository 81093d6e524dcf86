/* Kind "nic": the PCIe side of a NIC (ConnectX-like), one endpoint port
 * with a DMA engine that reads a buffer and sends it. The engine is the
 * shared read engine (server_rd: MRd of up to MRRS, one tag each, completions
 * matched to open tags), so the read bandwidth is what tags, MRRS, RCB and
 * credits let through. What it reads goes into its send buffer, which the
 * network side drains at the line rate nic_GBps (the network itself comes
 * with the between-servers issue: here the bytes leave and are counted). A
 * read is issued only into free buffer space (bytes requested and not yet
 * on the wire <= nic_buf_bytes), so a line rate below PCIe's goodput backs
 * the reads up: the NIC is then the bottleneck.
 *
 * The source is a GPU's BAR (GPUDirect RDMA: peer-to-peer through the PCIe
 * switch, every byte available at once) or that GPU's host buffer (staged:
 * the NIC reads only as far as the host CPU's doorbells say, an MWr into its
 * BAR at SERVER_DOORBELL_OFF + bytes ready). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/server/server_impl.h"

struct server_nic {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node;
    const server_cfg *cfg;
    unsigned gen, lanes;
    pcie_port *port;
    char name[16];
    bool sends, launched;
    sim_time_ps launch_ps;
    uint16_t rid;
    server_rd rd;
    sim_time_ps wire_free_ps;        /* the line is busy sending until then (a work-conserving FIFO) */
    uint64_t unsupported, doorbells;
    sim_event wake_ev;               /* launch poll, and buffer space freed by the line */
    sim_process wake_proc;
    server_copy_stats st;
    sim_trace *tr;
    sim_trace_var tv_tags, tv_buf, tv_sent;
};

/* Bytes in the send buffer not yet on the wire at `at`: the line's remaining work. */
static uint64_t buffered(const server_nic *n, sim_time_ps at)
{
    if (n->wire_free_ps <= at) return 0;
    return (uint64_t)((double)(n->wire_free_ps - at) * n->cfg->nic_GBps / 1000.0 + 0.999);
}

static void trace_nic(server_nic *n, sim_time_ps at)
{
    if (!n->tr) return;
    sim_trace_u64(n->tr, n->tv_tags, server_rd_outstanding(&n->rd));
    sim_trace_u64(n->tr, n->tv_buf, n->rd.off - n->rd.received + buffered(n, at));
    sim_trace_u64(n->tr, n->tv_sent, n->rd.received - buffered(n, at));
}

static void refill(void *ctx, pcie_port *p, unsigned cls)
{
    server_nic *n = ctx;
    if (!n->launched || (cls != PCIE_FC_NP && cls != PCIE_FC_CLASSES)) return;
    sim_time_ps now = pcie_port_tl_now(p);
    server_rd *e = &n->rd;
    uint64_t buf = n->cfg->nic_buf_bytes, queued = buffered(n, now);
    uint64_t space = e->received + buf > queued ? e->received + buf - queued : 0;
    server_rd_issue(e, p, space);
    uint64_t end = e->avail < e->bytes ? e->avail : e->bytes;
    if (e->off < end && e->n_free && pcie_port_queued(p, PCIE_FC_NP) < SERVER_TL_QUEUE_DEPTH) {
        /* the next read does not fit: wake when the line has sent enough of the buffer */
        uint64_t addr = e->base + e->off, len = e->mrrs - (addr & (e->mrrs - 1));
        if (len > end - e->off) len = end - e->off;
        uint64_t need = e->off + len - space;
        sim_time_ps sn = sim_now(n->k), at = now + server_bytes_ps(need, n->cfg->nic_GBps) + 1;
        if (need <= queued) sim_event_notify_at(&n->wake_ev, at > sn ? at - sn : 0);   /* else reads in flight hold it: their completions refill */
    }
    trace_nic(n, now);
}

#define LAUNCH_POLL_PS 1000u   /* how often the driver looks whether the link is up */

static void wake_run(void *ctx)
{
    server_nic *n = ctx;
    if (!n->launched) {
        if (!pcie_port_active_ps(n->port)) {
            sim_event_notify_at(&n->wake_ev, LAUNCH_POLL_PS);
            return;
        }
        n->launched = true;
        n->launch_ps = sim_now(n->k);
    }
    refill(n, n->port, PCIE_FC_CLASSES);
}

static void deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    server_nic *n = ctx;
    sim_time_ps now = pcie_port_rx_now(p);
    if (t->type == PCIE_TLP_MWR && server_bar_node(t->addr) == (int64_t)n->node && t->addr - server_bar(n->node) >= SERVER_DOORBELL_OFF) {
        uint64_t ready = t->addr - server_bar(n->node) - SERVER_DOORBELL_OFF;
        n->doorbells++;
        if (ready > n->rd.avail) n->rd.avail = ready;
        refill(n, p, PCIE_FC_NP);
        return;
    }
    if (t->type != PCIE_TLP_CPLD) {   /* its BAR holds only the doorbell here */
        n->unsupported++;
        return;
    }
    bool tag_done;
    if (server_rd_complete(&n->rd, t, &tag_done)) {
        n->st.addr_errors++;
        if (!tag_done) return;
    }
    if (!n->st.tlps_received++) n->st.first_data_ps = now, n->st.first_data_bytes = t->len;
    n->st.last_data_ps = now;
    n->st.bytes_received += t->len;
    sim_time_ps start = now > n->wire_free_ps ? now : n->wire_free_ps;
    n->wire_free_ps = start + server_bytes_ps(t->len, n->cfg->nic_GBps);
    if (n->st.bytes_received == n->cfg->nic_bytes) n->st.streams_done = 1, n->st.done_ps = n->wire_free_ps;
    refill(n, p, PCIE_FC_NP);
}

static void drained(void *ctx, pcie_port *p) { (void)ctx, (void)p; }

static void *nic_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const server_cfg *c = server_cfg_of(f, "nic", why, why_n);
    if (!c) return NULL;
    const topo *t = sim_fabric_topo(f);
    unsigned connected = 0;
    for (unsigned q = 0; q < t->nodes[node].nports; q++) connected += t->nodes[node].port_link[q] >= 0;
    if (connected != 1) {
        snprintf(why, why_n, "%u links: the nic kind has one PCIe port (its network port comes with the between-servers issue)", connected);
        return NULL;
    }
    if (server_node_index_ok(node, why, why_n)) return NULL;
    bool sends = c->nic_bytes > 0 && c->nic_sender && !strcmp(c->nic_sender, t->nodes[node].name);
    int src = sends && c->nic_src ? topo_node_find(t, c->nic_src) : -1;
    if (sends && (src < 0 || strcmp(t->nodes[src].kind->name, "gpu"))) {
        snprintf(why, why_n, "source %s: allowed: a node of kind gpu", c->nic_src ? c->nic_src : "(none)");
        return NULL;
    }
    server_nic *n = calloc(1, sizeof *n);
    if (!n) sim_fatal("out of memory");
    if (server_node_links(t, node, &n->gen, &n->lanes, why, why_n)) { free(n); return NULL; }
    n->f = f, n->k = sim_fabric_kernel(f), n->node = node, n->cfg = c, n->sends = sends, n->rid = server_rid(node);
    uint64_t base = src < 0 ? 0 : c->nic_via_host ? server_host_buf((uint32_t)src) : server_bar((uint32_t)src);
    server_rd_init(&n->rd, c->tags, c->mrrs, n->rid, base, sends ? c->nic_bytes : 0, c->nic_via_host ? 0 : c->nic_bytes);
    sim_event_init(&n->wake_ev, n->k, "nic_dma");
    sim_method_init(&n->wake_proc, n->k, "nic_dma_engine", wake_run, n);
    sim_sensitive(&n->wake_proc, &n->wake_ev);
    sim_dont_initialize(&n->wake_proc);
    return n;
}

static void nic_connect(void *comp, const sim_fabric_port *fp)
{
    server_nic *n = comp;
    n->port = server_port_new(n->f, fp, n->cfg, n->cfg->nic_adv, PCIE_DOWN, n->gen, n->lanes, n->name);
    pcie_port_app app = { n, deliver, refill, drained, NULL };
    pcie_port_set_app(n->port, &app);
    n->tr = sim_fabric_trace(n->f);
    if (n->tr) {
        sim_trace_push_scope(n->tr, sim_fabric_topo(n->f)->nodes[n->node].name);
        sim_trace_push_scope(n->tr, "dma_engine");
        n->tv_tags = sim_trace_add_var(n->tr, "tags_outstanding", 16);
        n->tv_buf = sim_trace_add_var(n->tr, "send_buffer_bytes", 32);
        n->tv_sent = sim_trace_add_var(n->tr, "bytes_sent", 40);
        sim_trace_pop_scope(n->tr);
        sim_trace_pop_scope(n->tr);
        trace_nic(n, 0);
    }
}

static void nic_start(void *comp)
{
    server_nic *n = comp;
    if (n->sends) sim_event_notify_at(&n->wake_ev, LAUNCH_POLL_PS);
}

static int nic_check(const void *comp, bool drained_, char *why, size_t why_n)
{
    const server_nic *n = comp;
    char w[400];
    if (pcie_port_check(n->port, drained_, w, sizeof w)) { snprintf(why, why_n, "%s: %s", n->name, w); return -1; }
    if (n->st.addr_errors) {
        snprintf(why, why_n, "%llu completions not matching an open request (tag, address, byte count)", (unsigned long long)n->st.addr_errors);
        return -1;
    }
    if (n->unsupported) { snprintf(why, why_n, "%llu requests for an address its BAR does not decode", (unsigned long long)n->unsupported); return -1; }
    if (n->rd.received != n->st.bytes_received) { snprintf(why, why_n, "engine received %llu bytes, the port delivered %llu",
                                                           (unsigned long long)n->rd.received, (unsigned long long)n->st.bytes_received); return -1; }
    if (drained_ && server_rd_outstanding(&n->rd)) { snprintf(why, why_n, "%u tags never completed", server_rd_outstanding(&n->rd)); return -1; }
    return 0;
}

static void nic_free(void *comp)
{
    server_nic *n = comp;
    pcie_port_free(n->port);
    server_rd_free(&n->rd);
    free(n);
}

void server_nic_stats(const server_nic *n, server_copy_stats *s) { *s = n->st; }
bool server_nic_sends(const server_nic *n) { return n->sends; }
sim_time_ps server_nic_launch_ps(const server_nic *n) { return n->launch_ps; }
pcie_port *server_nic_port(const server_nic *n) { return n->port; }

static const sim_fabric_kind nic_kind = {
    .name = "nic", .build = nic_build, .ingress = NULL, .connect = nic_connect, .start = nic_start, .check = nic_check,
    .reset_stats = NULL, .held = NULL, .free = nic_free,
};
void server_nic_register(void) { sim_fabric_kind_register(&nic_kind); }
