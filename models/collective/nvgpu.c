/* Kind "nvgpu": NVLink ports with send queues, and a reduction unit. */
#include "models/collective/nvgpu.h"
#include "sim/pdes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvgpu_msg {
    sim_pkt *pkt;
    bool notify;
    uint64_t tag;
} nvgpu_msg;

typedef struct nvgpu_msgq {
    nvgpu_msg *q;
    uint32_t head, len, cap;
} nvgpu_msgq;

typedef struct nvgpu_portq {
    sim_fabric_port fp;
    bool connected;
    nvgpu_msgq mq[2];              /* [1]: control writes, sent before [0] (each FIFO) */
    uint32_t len;                  /* both */
    sim_time_ps wake_ps;           /* a pending wake-up for the serialiser (SIM_TIME_MAX: none) */
} nvgpu_portq;

struct nvgpu {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, endpoint;
    nvgpu_cfg cfg;
    char name[TOPO_NAME_MAX + 1];
    sim_pkt_pool pool;
    unsigned nports;               /* ports of the node; connected ones are 0..n_connected-1 */
    unsigned n_connected;
    unsigned n_nvlink;             /* ports 0..n_nvlink-1 are NVLinks */
    int nic_port;                  /* the PCIe port to its NIC, or -1 */
    nvgpu_portq port[NVGPU_MAX_PORTS];
    sim_time_ps unit_free_ps;      /* reduction unit: when its last job ends */
    uint64_t unit_jobs;            /* jobs queued or running */
    nvgpu_recv_fn on_recv;
    nvgpu_sent_fn on_sent;
    nvgpu_done_fn on_done;
    void *ctx;
    nvgpu_stats st;
};

static void pump(nvgpu *g, unsigned port);

static void wake_cb(void *obj, uint64_t tag)
{
    nvgpu *g = obj;
    g->port[tag].wake_ps = SIM_TIME_MAX;
    pump(g, (unsigned)tag);
}

static void pump(nvgpu *g, unsigned port)
{
    nvgpu_portq *pq = &g->port[port];
    sim_time_ps now = sim_now(g->k);
    while (pq->len) {
        sim_time_ps free_ps = sim_link_tx_free_ps(pq->fp.out);
        if (free_ps > now) {
            /* pace to the wire: one message in the serialiser at a time, so credits are spent when it can start */
            if (pq->wake_ps == SIM_TIME_MAX) {
                pq->wake_ps = free_ps;
                sim_schedule_callback(g->k, free_ps - now, 0, wake_cb, g, port);
            }
            return;
        }
        nvgpu_msgq *q = &pq->mq[pq->mq[1].len ? 1 : 0];
        nvgpu_msg *m = &q->q[q->head];
        sim_pkt *k = m->pkt;
        k->injected_ps = now;
        if (pq->fp.out_credit_types) {
            uint32_t cr = sim_fabric_credits(k->wire_bytes, pq->fp.out_credit_bytes);
            if (!sim_link_try_send(pq->fp.out, k, k->wire_bytes, k->vc < pq->fp.out_credit_types ? k->vc : 0, cr))
                return;   /* the credit callback pumps again */
        } else {
            sim_link_send(pq->fp.out, k, k->wire_bytes);
        }
        bool notify = m->notify;
        uint64_t tag = m->tag;
        q->head = (q->head + 1) % q->cap;
        q->len--;
        pq->len--;
        g->st.msgs_sent++;
        g->st.pkts_sent += k->payload_bytes ? (k->payload_bytes + NVGPU_PKT_PAYLOAD_BYTES - 1) / NVGPU_PKT_PAYLOAD_BYTES : 1;
        g->st.payload_sent += k->payload_bytes;
        g->st.wire_sent += k->wire_bytes;
        if (notify && g->on_sent) g->on_sent(g->ctx, g, tag);
    }
}

static void push_at(nvgpu *g, unsigned port, sim_pkt *k, bool notify, uint64_t tag, bool urgent)
{
    nvgpu_portq *pq = &g->port[port];
    if (port >= g->n_connected) sim_fatal("%s: send on port %u; connected ports 0..%u", g->name, port, g->n_connected - 1);
    nvgpu_msgq *q = &pq->mq[urgent ? 1 : 0];
    if (q->len == q->cap) {
        uint32_t cap = q->cap ? q->cap * 2 : 64;
        nvgpu_msg *nq = malloc(cap * sizeof *nq);
        for (uint32_t i = 0; i < q->len; i++) nq[i] = q->q[(q->head + i) % q->cap];
        free(q->q);
        q->q = nq, q->head = 0, q->cap = cap;
    }
    q->q[(q->head + q->len++) % q->cap] = (nvgpu_msg){ k, notify, tag };
    if (++pq->len == 1) pump(g, port);
}

static void push(nvgpu *g, unsigned port, sim_pkt *k, bool notify, uint64_t tag) { push_at(g, port, k, notify, tag, false); }

static sim_pkt *make_pkt(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint32_t payload, uint32_t pkts, uint8_t kind,
                         void *data, uint64_t seq)
{
    sim_pkt *k = sim_pkt_alloc(&g->pool);
    k->src = g->endpoint;
    k->dst = dst;
    k->flow = flow;
    k->seq = seq;
    k->flags = kind;
    /* (not k->parts: that is how many parts the message travels in on a link, and a burst travels whole --
     * a cut link between MPI ranks would wait for parts that never come) */
    k->payload_bytes = payload;
    k->wire_bytes = payload + pkts * g->port[port].fp.link->overhead_bytes;
    k->frames = pkts;
    k->created_ps = sim_now(g->k);
    k->data = data;
    return k;
}

/* A write in bursts (nvgpu_send_data); group != 0: a reduce contribution to it (nvgpu_send_reduce), seq = key + index. */
static uint32_t send_write(nvgpu *g, unsigned port, uint32_t dst, uint32_t group, uint64_t flow, uint64_t payload_bytes,
                           uint8_t kind, void *data, bool notify, uint64_t tag, uint64_t key);

uint32_t nvgpu_send_data(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint64_t payload_bytes, uint8_t kind,
                         void *data, bool notify, uint64_t tag)
{
    return send_write(g, port, dst, 0, flow, payload_bytes, kind, data, notify, tag, 0);
}

uint32_t nvgpu_send_reduce(nvgpu *g, unsigned port, uint32_t group, uint64_t flow, uint64_t payload_bytes, uint8_t kind,
                           uint64_t key, void *data, bool notify, uint64_t tag)
{
    if (!group) sim_fatal("%s: a reduce write needs a multicast group", g->name);
    if (!payload_bytes) sim_fatal("%s: a reduce write of 0 bytes (every member must give each key)", g->name);
    return send_write(g, port, SIM_PKT_GROUP, group, flow, payload_bytes, kind, data, notify, tag, key);
}

static uint32_t send_write(nvgpu *g, unsigned port, uint32_t dst, uint32_t group, uint64_t flow, uint64_t payload_bytes,
                           uint8_t kind, void *data, bool notify, uint64_t tag, uint64_t key)
{
    if (!payload_bytes) {
        if (notify && g->on_sent) g->on_sent(g->ctx, g, tag);
        return 0;
    }
    /* A burst is stored and forwarded whole by a switch: (n-1) packet times
     * more per hop than n single packets. Bursts of at most 1/NVGPU_BURST_DIV
     * of the write keep that below 1 % of its own wire time. */
    uint64_t write_pkts = (payload_bytes + NVGPU_PKT_PAYLOAD_BYTES - 1) / NVGPU_PKT_PAYLOAD_BYTES;
    uint64_t burst = write_pkts / NVGPU_BURST_DIV;
    if (burst > g->cfg.burst_pkts) burst = g->cfg.burst_pkts;
    if (burst < 1) burst = 1;
    uint64_t burst_bytes = burst * NVGPU_PKT_PAYLOAD_BYTES;
    uint32_t msgs = 0;
    for (uint64_t off = 0; off < payload_bytes; off += burst_bytes) {
        uint64_t len = payload_bytes - off < burst_bytes ? payload_bytes - off : burst_bytes;
        uint32_t pkts = (uint32_t)((len + NVGPU_PKT_PAYLOAD_BYTES - 1) / NVGPU_PKT_PAYLOAD_BYTES);
        bool last = off + len == payload_bytes;
        sim_pkt *k = make_pkt(g, port, dst, flow, (uint32_t)len, pkts, kind, last ? data : NULL, key + msgs);
        if (group) k->group = group, k->flags |= SIM_PKT_F_REDUCE;
        push(g, port, k, last && notify, tag);
        msgs++;
    }
    return msgs;
}

void nvgpu_send_small(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint32_t payload_bytes, uint8_t kind, void *data,
                      uint64_t seq)
{
    if (payload_bytes > NVGPU_PKT_PAYLOAD_BYTES) sim_fatal("%s: a small write of %u bytes", g->name, payload_bytes);
    push(g, port, make_pkt(g, port, dst, flow, payload_bytes, 1, kind, data, seq), false, 0);
}

void nvgpu_send_small_urgent(nvgpu *g, unsigned port, uint32_t dst, uint64_t flow, uint32_t payload_bytes, uint8_t kind, void *data,
                             uint64_t seq)
{
    if (payload_bytes > NVGPU_PKT_PAYLOAD_BYTES) sim_fatal("%s: a small write of %u bytes", g->name, payload_bytes);
    push_at(g, port, make_pkt(g, port, dst, flow, payload_bytes, 1, kind, data, seq), false, 0, true);
}

static void unit_done(void *obj, uint64_t tag)
{
    nvgpu *g = obj;
    g->unit_jobs--;
    if (g->on_done) g->on_done(g->ctx, g, tag);
}

void nvgpu_reduce(nvgpu *g, uint64_t bytes, uint64_t tag)
{
    sim_time_ps now = sim_now(g->k);
    sim_time_ps start = g->unit_free_ps > now ? g->unit_free_ps : now;
    sim_time_ps dur = (sim_time_ps)((double)bytes * 1000.0 / g->cfg.reduce_GBps + 0.5);
    if (dur < 1) dur = 1;   /* a job takes time: its end is a timed step after now */
    g->unit_free_ps = start + dur;
    g->unit_jobs++;
    g->st.reductions++;
    g->st.reduce_bytes += bytes;
    g->st.reduce_busy_ps += dur;
    sim_schedule_callback(g->k, g->unit_free_ps - now, 0, unit_done, g, tag);
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    nvgpu *g = ctx;
    sim_pkt *k = msg;
    k->hops++;
    if (k->dst != g->endpoint) sim_fatal("%s: received a packet for endpoint %u (misrouted)", g->name, k->dst);
    g->st.msgs_received++;
    g->st.payload_received += k->payload_bytes;
    g->st.wire_received += k->wire_bytes;
    if (!g->on_recv) sim_fatal("%s: a packet arrived and no engine listens", g->name);
    g->on_recv(g->ctx, g, k, sim_link_arrival_ps(l));
}

static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)type, (void)credits;
    nvgpu *g = ctx;
    for (unsigned p = 0; p < g->n_connected; p++)
        if (g->port[p].fp.out == l) { pump(g, p); return; }
}

static void *g_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(f);
    const nvgpu_cfg *cfg = sim_fabric_kind_cfg(f, "nvgpu");
    static const nvgpu_cfg defaults = NVGPU_CFG_DEFAULT;
    if (!cfg) cfg = &defaults;
    if (!(cfg->reduce_GBps > 0)) { snprintf(why, why_n, "reduce_GBps=%g: allowed > 0", cfg->reduce_GBps); return NULL; }
    if (cfg->burst_pkts < 1 || cfg->burst_pkts > 256) { snprintf(why, why_n, "burst_pkts=%u: allowed 1..256", cfg->burst_pkts); return NULL; }
    const topo_node *n = &t->nodes[node];
    for (unsigned p = 0; p < n->nports; p++)
        if (n->port_link[p] < 0) {
            snprintf(why, why_n, "port nvl%u is not connected; an nvgpu's links take ports nvl0..nvl%u in order", p, n->nports - 1);
            return NULL;
        }
    /* NVLinks first, then at most one other link: the PCIe link to its NIC */
    unsigned nvl = 0;
    while (nvl < n->nports && t->links[n->port_link[nvl]].preset && !strncmp(t->links[n->port_link[nvl]].preset->name, "nvlink", 6)) nvl++;
    if (nvl && n->nports - nvl > 1) {
        snprintf(why, why_n, "ports nvl%u..nvl%u are not NVLinks; allowed: NVLink ports first, then at most one PCIe port to its NIC", nvl,
                 n->nports - 1);
        return NULL;
    }
    nvgpu *g = calloc(1, sizeof *g);
    g->n_nvlink = nvl ? nvl : n->nports;   /* a file of nvgpus on plain links: every port is the GPU's link */
    g->nic_port = nvl && nvl < n->nports ? (int)nvl : -1;
    g->f = f;
    g->k = sim_fabric_node_kernel(f, node);
    g->node = node;
    g->endpoint = (uint32_t)n->endpoint;
    g->cfg = *cfg;
    g->nports = n->nports;
    snprintf(g->name, sizeof g->name, "%s", n->name);
    sim_pkt_pool_init(&g->pool, g->name);
    for (unsigned p = 0; p < NVGPU_MAX_PORTS; p++) g->port[p].wake_ps = SIM_TIME_MAX;
    return g;
}

static void g_connect(void *comp, const sim_fabric_port *p)
{
    nvgpu *g = comp;
    g->port[p->port].fp = *p;
    g->port[p->port].connected = true;
    g->n_connected++;
    sim_link_set_receiver(p->in, on_recv, g);
    sim_link_set_credit_callback(p->out, on_credit, g);
}

uint64_t nvgpu_queued(const nvgpu *g)
{
    uint64_t n = 0;
    for (unsigned p = 0; p < g->n_connected; p++) n += g->port[p].len;
    return n;
}

static int g_check(const void *comp, bool drained, char *why, size_t why_n)
{
    const nvgpu *g = comp;
    uint64_t queued = nvgpu_queued(g);
    if (g->pool.live < queued) {
        snprintf(why, why_n, "%s: %llu messages queued but only %llu of its pool are out", g->name, (unsigned long long)queued,
                 (unsigned long long)g->pool.live);
        return -1;
    }
    if (drained && (g->pool.live || g->unit_jobs)) {
        snprintf(why, why_n, "%s: after the drain %llu of its packets are still out (%llu queued), %llu reductions pending", g->name,
                 (unsigned long long)g->pool.live, (unsigned long long)queued, (unsigned long long)g->unit_jobs);
        return -1;
    }
    return 0;
}

static void g_reset(void *comp)
{
    nvgpu *g = comp;
    memset(&g->st, 0, sizeof g->st);
}

static void g_held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const nvgpu *g = comp;
    for (unsigned p = 0; p < g->n_connected; p++)
        for (unsigned u = 0; u < 2; u++) {
            const nvgpu_msgq *q = &g->port[p].mq[u];
            for (uint32_t i = 0; i < q->len; i++) fn(q->q[(q->head + i) % q->cap].pkt, ctx);
        }
}

/* A run over ranks: rank 0's replica of a GPU takes its owner's counters. */
static void g_pack_stats(const void *comp, sim_pdes_buf *b)
{
    const nvgpu *g = comp;
    sim_pdes_buf_put(b, &g->st, sizeof g->st);
}

static void g_unpack_stats(void *comp, const unsigned char *d, size_t len)
{
    nvgpu *g = comp;
    if (len != sizeof g->st) sim_fatal("%s: %zu bytes of gathered statistics", g->name, len);
    memcpy(&g->st, d, sizeof g->st);
}

static void g_free(void *comp)
{
    nvgpu *g = comp;
    sim_pkt_pool_free(&g->pool);
    for (unsigned p = 0; p < NVGPU_MAX_PORTS; p++) free(g->port[p].mq[0].q), free(g->port[p].mq[1].q);
    free(g);
}

void nvgpu_set_handlers(nvgpu *g, nvgpu_recv_fn recv, nvgpu_sent_fn sent, nvgpu_done_fn done, void *ctx)
{
    g->on_recv = recv, g->on_sent = sent, g->on_done = done, g->ctx = ctx;
}
uint32_t nvgpu_endpoint(const nvgpu *g) { return g->endpoint; }
uint32_t nvgpu_node(const nvgpu *g) { return g->node; }
unsigned nvgpu_ports(const nvgpu *g) { return g->nports; }   /* the build refuses an unconnected port */
const sim_fabric_port *nvgpu_port(const nvgpu *g, unsigned port) { return port < g->n_connected ? &g->port[port].fp : NULL; }
sim_kernel *nvgpu_kernel(const nvgpu *g) { return g->k; }
unsigned nvgpu_nvlink_ports(const nvgpu *g) { return g->n_nvlink; }
int nvgpu_nic_port(const nvgpu *g) { return g->nic_port; }
nvgpu_stats nvgpu_stats_get(const nvgpu *g) { return g->st; }

void nvgpu_register(void)
{
    static bool done;   /* a topo kind registered twice is fatal */
    if (!done) {
        static const topo_kind kind = { .name = "nvgpu", .port_prefix = "nvl", .max_ports = NVGPU_MAX_PORTS, .default_ports = 1,
                                        .forwards = false, .params = "ports",
                                        .help = "GPU for collectives: one port per NVLink (128-byte packets + link overhead), a reduction unit" };
        topo_kind_register(&kind);
        done = true;
    }
    static const sim_fabric_kind fk = {
        .name = "nvgpu", .build = g_build, .ingress = NULL, .connect = g_connect, .start = NULL, .check = g_check,
        .reset_stats = g_reset, .held = g_held, .free = g_free,
        /* its kernel is sim_fabric_node_kernel's, its links neither defer nor mark, and what crosses a cut is
         * the packet's common fields (data is NULL unless the engine carries values: one process only) */
        .partitionable = true, .pack_stats = g_pack_stats, .unpack_stats = g_unpack_stats,
    };
    sim_fabric_kind_register(&fk);
}
