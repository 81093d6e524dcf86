/* Kind "gpu_nic": a GPU's own InfiniBand NIC (GPUDirect RDMA-like), port p0
 * a PCIe link to its GPU, port p1 an IB link to a leaf switch.
 *
 * GPU -> network: every message the GPU sends on its PCIe link (a burst of
 * NVLink-sized writes, a flag, an ack; any model's sim_pkt, read only in its
 * common fields) is cut into IB packets of at most mtu_bytes of payload, each
 * with the IB link's per-packet overhead (LRH, BTH, ICRC, VCRC: the preset's
 * overhead_bytes), queued on the IB port (ib_port.h: per-VL credits, FC
 * packets, VL arbitration). The original message rides with its last packet
 * (pointer in data: one process). The PCIe ingress is credit-limited
 * (pcie_buffer_bytes in 256-byte credits): a message's credits go back to the
 * GPU when its last packet starts on the IB wire, so a NIC whose network is
 * slower than its PCIe link backs up into the GPU's queue.
 *
 * Network -> GPU: IB packets for our GPU arrive in the VL buffer; the
 * packets before a message's last are written through (their blocks freed on
 * arrival: the PCIe link is faster than the IB link, see the docs); the last
 * packet hands the original message to the PCIe transmitter and keeps its
 * blocks until the message starts on the PCIe wire. Packets of one message
 * share its flow label, so they take one path and arrive in order.
 *
 * Left out: RC transport (ACK/NAK, PSNs, retransmission: the fabric is
 * lossless), WQE/doorbell processing, PCIe DLLPs and the PCIe switch. */
#include "models/network/network.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_NIC_CREDIT_BYTES 256u
#define SEG_F_LAST 1u

typedef struct seg_ext { uint64_t msg_off; } seg_ext;   /* the first payload byte of the segment within its message */

typedef struct nic_msg { sim_pkt *m; uint32_t blocks, vl; } nic_msg;   /* a message for the GPU; the blocks its last IB packet holds, and its VL */
typedef struct nic_q { nic_msg *q; uint32_t head, len, cap; } nic_q;

struct gpu_nic {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, gpu_ep;
    gpu_nic_cfg cfg;
    char name[TOPO_NAME_MAX + 1];
    sim_pkt_pool pool;
    sim_fabric_port pcie;
    bool pcie_up;
    ib_port *ib;
    const topo_link *ib_link;
    nic_q to_gpu;                  /* original messages waiting for the PCIe wire */
    sim_time_ps wake_ps;
    gpu_nic_stats st;
};

static void q_push(nic_q *q, sim_pkt *k, uint32_t blocks, unsigned vl)
{
    if (q->len == q->cap) {
        uint32_t cap = q->cap ? 2 * q->cap : 64;
        nic_msg *n = malloc(cap * sizeof *n);
        if (!n) sim_fatal("out of memory");
        for (uint32_t i = 0; i < q->len; i++) n[i] = q->q[(q->head + i) % q->cap];
        free(q->q);
        q->q = n, q->head = 0, q->cap = cap;
    }
    q->q[(q->head + q->len++) % q->cap] = (nic_msg){ k, blocks, vl };
}

static void pump_pcie(gpu_nic *n);

static void wake_cb(void *obj, uint64_t tag)
{
    (void)tag;
    gpu_nic *n = obj;
    n->wake_ps = SIM_TIME_MAX;
    pump_pcie(n);
}

/* Toward the GPU: one message in the serialiser at a time (the GPU asks no credits). */
static void pump_pcie(gpu_nic *n)
{
    sim_time_ps now = sim_now(n->k);
    while (n->to_gpu.len) {
        sim_time_ps free_ps = sim_link_tx_free_ps(n->pcie.out);
        if (free_ps > now) {
            if (n->wake_ps == SIM_TIME_MAX) {
                n->wake_ps = free_ps;
                sim_schedule_callback(n->k, free_ps - now, 0, wake_cb, n, 0);
            }
            return;
        }
        sim_pkt *m = n->to_gpu.q[n->to_gpu.head].m;
        uint32_t blocks = n->to_gpu.q[n->to_gpu.head].blocks, vl = n->to_gpu.q[n->to_gpu.head].vl;
        n->to_gpu.head = (n->to_gpu.head + 1) % n->to_gpu.cap;
        n->to_gpu.len--;
        n->st.msgs_to_gpu++;
        n->st.bytes_to_gpu += m->payload_bytes;
        sim_link_send(n->pcie.out, m, m->wire_bytes);
        ib_port_release(n->ib, vl, blocks);
    }
}

/* From the GPU: cut into MTU packets, all queued on the IB port at once (the PCIe credits bound them). */
static void on_pcie_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l, (void)bytes;
    gpu_nic *n = ctx;
    sim_pkt *m = msg;
    m->hops++;
    if (m->src != n->gpu_ep) sim_fatal("%s: a message from endpoint %u on its GPU's link (its GPU is %u)", n->name, m->src, n->gpu_ep);
    if (m->dst == n->gpu_ep) sim_fatal("%s: its GPU sent a message to itself through the NIC", n->name);
    n->st.msgs_from_gpu++;
    n->st.bytes_from_gpu += m->payload_bytes;
    uint32_t credits = sim_fabric_credits(m->wire_bytes, GPU_NIC_CREDIT_BYTES);
    unsigned vl = n->cfg.port.sl2vl[m->tc & (IB_SLS - 1)];
    uint64_t off = 0;
    do {
        uint32_t len = m->payload_bytes - off < n->cfg.mtu_bytes ? (uint32_t)(m->payload_bytes - off) : n->cfg.mtu_bytes;
        bool last = off + len == m->payload_bytes;
        sim_pkt *s = sim_pkt_alloc(&n->pool);
        s->src = m->src, s->dst = m->dst, s->tc = m->tc, s->flow = m->flow, s->seq = m->seq;
        s->payload_bytes = len;
        s->wire_bytes = len + n->ib_link->overhead_bytes;
        s->flags = last ? SEG_F_LAST : 0;
        s->created_ps = m->created_ps;
        s->data = last ? m : NULL;
        ((seg_ext *)sim_pkt_ext(s))->msg_off = off;
        n->st.pkts_made++;
        n->st.ib_payload_sent += len;
        ib_port_enqueue(n->ib, s, vl, last ? credits : 0);
        off += len;
    } while (off < m->payload_bytes);
}

static void on_ib_tx(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag)
{
    (void)p, (void)pkt, (void)vl;
    gpu_nic *n = owner;
    n->st.pkts_sent++;
    if (tag) {   /* a message's last packet: its PCIe buffer space is free again */
        n->st.credits_returned += tag;
        sim_link_return_credits(n->pcie.in, 0, tag);
    }
}

static void on_ib_rx(void *owner, ib_port *p, sim_pkt *s, unsigned vl)
{
    gpu_nic *n = owner;
    if (s->dst != n->gpu_ep) sim_fatal("%s: an IB packet for endpoint %u (its GPU is %u): misrouted", n->name, s->dst, n->gpu_ep);
    if (s->pool->ext_bytes < sizeof(seg_ext)) sim_fatal("%s: an IB packet not made by a gpu_nic", n->name);
    n->st.pkts_received++;
    n->st.ib_payload_received += s->payload_bytes;
    uint32_t blocks = ib_blocks(s->wire_bytes);
    if (!(s->flags & SEG_F_LAST)) {
        sim_pkt_free(s);
        ib_port_release(p, vl, blocks);
        return;
    }
    sim_pkt *m = s->data;
    uint64_t end = ((const seg_ext *)sim_pkt_ext_const(s))->msg_off + s->payload_bytes;
    if (!m || end != m->payload_bytes)
        sim_fatal("%s: a message's last IB packet ends at byte %llu of %u", n->name, (unsigned long long)end, m ? m->payload_bytes : 0);
    sim_pkt_free(s);
    q_push(&n->to_gpu, m, blocks, vl);
    if (n->to_gpu.len == 1) pump_pcie(n);
}

static bool is_ib(const topo_link *l) { return l->preset && !strncmp(l->preset->name, "ib-", 3); }

static void *build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    static gpu_nic_cfg defaults;
    static bool init;
    const gpu_nic_cfg *c = sim_fabric_kind_cfg(f, "gpu_nic");
    if (!c) {
        if (!init) {
            gpu_nic_cfg_default(&defaults);
            init = true;
        }
        c = &defaults;
    }
    if (ib_port_cfg_check(&c->port, why, why_n)) return NULL;
    if (c->mtu_bytes < 256 || c->mtu_bytes > 4096 || (c->mtu_bytes & (c->mtu_bytes - 1))) {
        snprintf(why, why_n, "mtu=%u; allowed: 256, 512, 1024, 2048, 4096 (the IB MTUs)", c->mtu_bytes);
        return NULL;
    }
    const topo *t = sim_fabric_topo(f);
    const topo_node *tn = &t->nodes[node];
    if (tn->nports != 2 || tn->port_link[0] < 0 || tn->port_link[1] < 0) {
        snprintf(why, why_n, "a gpu_nic has two connected ports: p0 to its GPU (PCIe), p1 to the network (InfiniBand)");
        return NULL;
    }
    const topo_link *pl = &t->links[tn->port_link[0]], *il = &t->links[tn->port_link[1]];
    uint32_t gpu = pl->a == node ? pl->b : pl->a;
    if (t->nodes[gpu].endpoint < 0 || is_ib(pl)) {
        snprintf(why, why_n, "port p0 must be a PCIe link to its GPU (an endpoint)");
        return NULL;
    }
    if (!is_ib(il)) {
        snprintf(why, why_n, "port p1: link preset %s is not InfiniBand; allowed: ib-hdr, ib-ndr, ib-xdr", il->preset ? il->preset->name : "(none)");
        return NULL;
    }
    if (ib_adv_blocks(c->port.vl_buffer_bytes) < ib_blocks(c->mtu_bytes + il->overhead_bytes)) {
        snprintf(why, why_n, "vl_buffer_bytes=%u holds less than one %u-byte packet (mtu %u)", c->port.vl_buffer_bytes,
                 c->mtu_bytes + il->overhead_bytes, c->mtu_bytes);
        return NULL;
    }
    if (c->pcie_buffer_bytes < 8192) {
        snprintf(why, why_n, "pcie_buffer_bytes=%u; allowed >= 8192 (a whole message of 32 NVLink packets)", c->pcie_buffer_bytes);
        return NULL;
    }
    gpu_nic *n = calloc(1, sizeof *n);
    if (!n) sim_fatal("out of memory");
    n->f = f;
    n->k = sim_fabric_node_kernel(f, node);
    n->node = node;
    n->gpu_ep = (uint32_t)t->nodes[gpu].endpoint;
    n->cfg = *c;
    n->ib_link = il;
    n->wake_ps = SIM_TIME_MAX;
    snprintf(n->name, sizeof n->name, "%s", tn->name);
    sim_pkt_pool_init_ext(&n->pool, n->name, sizeof(seg_ext));
    return n;
}

static void ingress(void *comp, unsigned port, sim_fabric_ingress *in)
{
    gpu_nic *n = comp;
    if (port != 0) return;   /* the IB port's flow control is its own (FC packets) */
    in->credit_types = 1;
    in->credit_bytes = GPU_NIC_CREDIT_BYTES;
    in->credits[0] = n->cfg.pcie_buffer_bytes / GPU_NIC_CREDIT_BYTES;
}

static void connect(void *comp, const sim_fabric_port *p)
{
    gpu_nic *n = comp;
    if (p->port == 0) {
        n->pcie = *p;
        n->pcie_up = true;
        sim_link_set_receiver(p->in, on_pcie_recv, n);
        return;
    }
    sim_trace *tr = sim_fabric_trace(n->f);
    sim_trace_push_scope(tr, n->name);
    n->ib = ib_port_new(n->k, p, &n->cfg.port, p->name, on_ib_rx, on_ib_tx, n, tr, "p1");
    sim_trace_pop_scope(tr);
}

static void start(void *comp) { ib_port_start(((gpu_nic *)comp)->ib); }

static int check(const void *comp, bool drained, char *why, size_t why_n)
{
    const gpu_nic *n = comp;
    if (ib_port_check(n->ib, drained, why, why_n)) return -1;
    uint64_t queued = 0;
    for (unsigned v = 0; v < n->cfg.port.vls; v++) queued += ib_port_queued(n->ib, v);
    if (n->st.pkts_made != n->st.pkts_sent + queued) {
        snprintf(why, why_n, "%s: made %llu IB packets, sent %llu, queued %llu", n->name, (unsigned long long)n->st.pkts_made,
                 (unsigned long long)n->st.pkts_sent, (unsigned long long)queued);
        return -1;
    }
    if (n->st.ib_payload_sent != n->st.bytes_from_gpu) {
        snprintf(why, why_n, "%s: %llu payload bytes from its GPU, %llu in IB packets", n->name, (unsigned long long)n->st.bytes_from_gpu,
                 (unsigned long long)n->st.ib_payload_sent);
        return -1;
    }
    if (drained) {
        if (n->to_gpu.len || n->pool.live || n->st.ib_payload_received != n->st.bytes_to_gpu || n->st.credits_returned * GPU_NIC_CREDIT_BYTES <
                                                                                                   n->st.bytes_from_gpu) {
            snprintf(why, why_n, "%s: after the drain %u messages wait for PCIe, %llu packets out, %llu payload bytes received from the "
                     "network but %llu delivered to the GPU, %llu credits returned for %llu bytes", n->name, n->to_gpu.len,
                     (unsigned long long)n->pool.live, (unsigned long long)n->st.ib_payload_received, (unsigned long long)n->st.bytes_to_gpu,
                     (unsigned long long)n->st.credits_returned, (unsigned long long)n->st.bytes_from_gpu);
            return -1;
        }
    }
    return 0;
}

/* A queued last IB packet carries its message: a teardown must give back both. */
typedef struct held_ctx { void (*fn)(sim_pkt *pkt, void *ctx); void *ctx; } held_ctx;
static void held_seg(sim_pkt *s, void *c)
{
    const held_ctx *h = c;
    if (s->data) h->fn(s->data, h->ctx);
    h->fn(s, h->ctx);
}

static void held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const gpu_nic *n = comp;
    held_ctx h = { fn, ctx };
    if (n->ib) ib_port_for_each_held(n->ib, held_seg, &h);
    for (uint32_t i = 0; i < n->to_gpu.len; i++) fn(n->to_gpu.q[(n->to_gpu.head + i) % n->to_gpu.cap].m, ctx);
}

static void reset(void *comp)
{
    gpu_nic *n = comp;
    ib_port_reset_stats(n->ib);
}

static void nic_free(void *comp)
{
    gpu_nic *n = comp;
    ib_port_free(n->ib);
    sim_pkt_pool_free(&n->pool);
    free(n->to_gpu.q);
    free(n);
}

void gpu_nic_cfg_default(gpu_nic_cfg *c)
{
    memset(c, 0, sizeof *c);
    ib_port_cfg_default(&c->port, 2, 65536);
    c->mtu_bytes = 4096;
    c->pcie_buffer_bytes = 256 * 1024;
}

gpu_nic_stats gpu_nic_stats_get(const gpu_nic *n) { return n->st; }

void gpu_nic_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "gpu_nic", .build = build, .ingress = ingress, .connect = connect, .start = start, .check = check,
        .reset_stats = reset, .held = held, .free = nic_free, .partitionable = false,
    };
    sim_fabric_kind_register(&kind);
}
