/* The Ethernet MAC of one port: per-priority FIFOs, PFC frames on the wire,
 * per-priority pause of the transmitter (eth_port.h). */
#include "models/network/eth_port.h"

#include "sim/ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct eth_pfc_body { uint16_t quanta; uint8_t prio; } eth_pfc_body;
typedef struct eth_txe { sim_pkt *pkt; uint32_t tag; } eth_txe;
typedef struct eth_txq { eth_txe *e; size_t head, len, cap; uint64_t bytes; } eth_txq;

struct eth_port {
    sim_kernel *k;
    sim_link *out, *in;
    eth_sched sched;
    eth_port_rx_fn rx;
    eth_port_tx_fn tx;
    void *owner;
    char name[TOPO_NAME_MAX + 16];
    unsigned number;
    double quantum_ps;
    sim_pkt_pool pool;                 /* PFC frames */
    eth_txq q[ETH_PRIOS];
    unsigned rr_next;
    /* PFC frames to send: per priority, the latest quanta asked for */
    bool pfc_want[ETH_PRIOS];
    uint16_t pfc_quanta[ETH_PRIOS];
    /* the peer's pause of our transmitter */
    sim_time_ps paused_from_ps[ETH_PRIOS], paused_until_ps[ETH_PRIOS];
    uint64_t paused_done_ps[ETH_PRIOS];   /* pause time of earlier frames */
    sim_process proc;
    sim_event wake;
    eth_port_stats st;
    sim_trace *tr;
    sim_trace_var tv_paused, tv_qbytes;
};

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);
static void run(void *ctx);

eth_port *eth_port_new(sim_kernel *k, const sim_fabric_port *fp, eth_sched sched, const char *name, eth_port_rx_fn rx,
                       eth_port_tx_fn tx, void *owner, sim_trace *tr, const char *scope)
{
    eth_port *p = calloc(1, sizeof *p);
    if (!p) sim_fatal("out of memory");
    p->k = k;
    p->out = fp->out;
    p->in = fp->in;
    p->sched = sched;
    p->rx = rx;
    p->tx = tx;
    p->owner = owner;
    p->number = fp->port;
    snprintf(p->name, sizeof p->name, "%s", name);
    /* one quantum is 512 bit times of the line: bytes/ns = GB/s */
    p->quantum_ps = ETH_PAUSE_QUANTUM_BITS / 8.0 / fp->link->GBps * 1000.0;
    sim_pkt_pool_init_ext(&p->pool, p->name, sizeof(eth_pfc_body));
    sim_link_set_receiver(p->in, on_recv, p);
    sim_event_init(&p->wake, k, "eth_port.wake");
    sim_method_init(&p->proc, k, p->name, run, p);
    sim_sensitive(&p->proc, &p->wake);
    sim_dont_initialize(&p->proc);
    if (tr) {
        p->tr = tr;
        sim_trace_push_scope(tr, scope);
        p->tv_paused = sim_trace_add_var(tr, "paused_prios", ETH_PRIOS);
        p->tv_qbytes = sim_trace_add_var(tr, "tx_queue_bytes", 32);
        sim_trace_u64(tr, p->tv_paused, 0);
        sim_trace_u64(tr, p->tv_qbytes, 0);
        sim_trace_pop_scope(tr);
    }
    return p;
}

static void kick(eth_port *p) { sim_event_notify_at(&p->wake, 0); }

static uint64_t queued_total(const eth_port *p)
{
    uint64_t b = 0;
    for (unsigned i = 0; i < ETH_PRIOS; i++) b += p->q[i].bytes;
    return b;
}

static void trace_pause(eth_port *p, sim_time_ps now)
{
    if (!p->tr) return;
    uint64_t mask = 0;
    for (unsigned i = 0; i < ETH_PRIOS; i++)
        if (p->paused_until_ps[i] > now) mask |= 1u << i;
    sim_trace_u64(p->tr, p->tv_paused, mask);
}

bool eth_port_paused(const eth_port *p, unsigned prio) { return prio < ETH_PRIOS && p->paused_until_ps[prio] > sim_now(p->k); }

void eth_port_send_pfc(eth_port *p, unsigned prio, uint16_t quanta)
{
    if (prio >= ETH_PRIOS) sim_fatal("%s: PFC frame for priority %u", p->name, prio);
    p->pfc_want[prio] = true;
    p->pfc_quanta[prio] = quanta;
    kick(p);
}

static void send_pfc(eth_port *p, unsigned prio, sim_time_ps now)
{
    sim_pkt *k = sim_pkt_alloc(&p->pool);
    k->flags = ETH_PKT_F_PFC;
    k->tc = (uint8_t)prio;
    k->wire_bytes = ETH_PFC_WIRE_BYTES;
    k->created_ps = k->injected_ps = now;
    eth_pfc_body *b = sim_pkt_ext(k);
    b->prio = (uint8_t)prio;
    b->quanta = p->pfc_quanta[prio];
    p->pfc_want[prio] = false;
    if (b->quanta) p->st.pause_sent++;
    else p->st.xon_sent++;
    sim_link_send(p->out, k, ETH_PFC_WIRE_BYTES);
}

static int pick(eth_port *p, sim_time_ps now)
{
    for (unsigned i = 0; i < ETH_PRIOS; i++) {
        unsigned prio = p->sched == ETH_SCHED_STRICT ? ETH_PRIOS - 1 - i : (p->rr_next + i) % ETH_PRIOS;
        if (p->q[prio].len && p->paused_until_ps[prio] <= now) {
            if (p->sched == ETH_SCHED_RR) p->rr_next = (prio + 1) % ETH_PRIOS;
            return (int)prio;
        }
    }
    return -1;
}

static void send_data(eth_port *p, unsigned prio, sim_time_ps now)
{
    eth_txq *q = &p->q[prio];
    eth_txe e = q->e[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->len--;
    q->bytes -= e.pkt->wire_bytes;
    p->st.data_sent++;
    p->st.sent_bytes += e.pkt->wire_bytes;
    if (!e.pkt->injected_ps) e.pkt->injected_ps = now;
    if (p->tr) sim_trace_u64(p->tr, p->tv_qbytes, queued_total(p));
    if (p->tx) p->tx(p->owner, p, e.pkt, e.tag);
    sim_link_send(p->out, e.pkt, e.pkt->wire_bytes);
}

/* The transmitter: PFC frames first, then data of an unpaused priority. */
static void run(void *ctx)
{
    eth_port *p = ctx;
    sim_time_ps now = sim_now(p->k);
    for (;;) {
        sim_time_ps free_ps = sim_link_tx_free_ps(p->out);
        if (free_ps > now) {
            sim_event_notify_at(&p->wake, free_ps - now);
            return;
        }
        int prio = -1;
        for (unsigned i = 0; i < ETH_PRIOS && prio < 0; i++)
            if (p->pfc_want[i]) prio = (int)i;
        if (prio >= 0) {
            send_pfc(p, (unsigned)prio, now);
            continue;
        }
        prio = pick(p, now);
        if (prio >= 0) {
            send_data(p, (unsigned)prio, now);
            continue;
        }
        /* waiting data is paused: look again when the first pause ends */
        sim_time_ps next = SIM_TIME_MAX;
        for (unsigned i = 0; i < ETH_PRIOS; i++)
            if (p->q[i].len && p->paused_until_ps[i] > now && p->paused_until_ps[i] < next) next = p->paused_until_ps[i];
        if (next != SIM_TIME_MAX) sim_event_notify_at(&p->wake, next - now);
        return;
    }
}

/* Pause time of the frame in force up to now, kept when a new frame replaces it. */
static uint64_t pause_upto(const eth_port *p, unsigned prio, sim_time_ps now)
{
    sim_time_ps end = p->paused_until_ps[prio] < now ? p->paused_until_ps[prio] : now;
    return end > p->paused_from_ps[prio] ? end - p->paused_from_ps[prio] : 0;
}

static void on_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l, (void)bytes;
    eth_port *p = ctx;
    sim_pkt *k = msg;
    if (k->flags & ETH_PKT_F_PFC) {
        const eth_pfc_body *b = sim_pkt_ext_const(k);
        unsigned prio = b->prio;
        sim_time_ps now = sim_now(p->k);
        p->paused_done_ps[prio] += pause_upto(p, prio, now);
        p->paused_from_ps[prio] = now;
        p->paused_until_ps[prio] = now + (sim_time_ps)(b->quanta * p->quantum_ps + 0.5);
        p->st.pfc_received++;
        sim_pkt_free(k);
        trace_pause(p, now);
        kick(p);   /* XON: go again; PAUSE: the transmitter plans its next look */
        if (p->paused_until_ps[prio] > now) sim_event_notify_at(&p->wake, p->paused_until_ps[prio] - now);
        return;
    }
    p->st.data_received++;
    k->hops++;
    p->rx(p->owner, p, k);
}

void eth_port_enqueue(eth_port *p, sim_pkt *pkt, unsigned prio, uint32_t tag)
{
    if (prio >= ETH_PRIOS) sim_fatal("%s: enqueue on priority %u", p->name, prio);
    eth_txq *q = &p->q[prio];
    if (q->len == q->cap) {
        q->e = sim_ring_grow(q->e, sizeof *q->e, q->head, q->len, &q->cap, 16);
        q->head = 0;
    }
    q->e[(q->head + q->len) & (q->cap - 1)] = (eth_txe){ pkt, tag };
    q->len++;
    q->bytes += pkt->wire_bytes;
    if (p->tr) sim_trace_u64(p->tr, p->tv_qbytes, queued_total(p));
    kick(p);
}

unsigned eth_port_queued(const eth_port *p, unsigned prio) { return prio < ETH_PRIOS ? (unsigned)p->q[prio].len : 0; }
uint64_t eth_port_queued_bytes(const eth_port *p, unsigned prio) { return prio < ETH_PRIOS ? p->q[prio].bytes : 0; }
double eth_port_quantum_ps(const eth_port *p) { return p->quantum_ps; }
unsigned eth_port_number(const eth_port *p) { return p->number; }
const char *eth_port_name(const eth_port *p) { return p->name; }

eth_port_stats eth_port_stats_get(const eth_port *p)
{
    eth_port_stats st = p->st;
    sim_time_ps now = sim_now(p->k);
    for (unsigned i = 0; i < ETH_PRIOS; i++) {
        st.paused_ps[i] = p->paused_done_ps[i] + pause_upto(p, i, now);
        st.queued_bytes[i] = p->q[i].bytes;
    }
    return st;
}

void eth_port_reset_stats(eth_port *p)
{
    sim_time_ps now = sim_now(p->k);
    for (unsigned i = 0; i < ETH_PRIOS; i++) {
        p->paused_done_ps[i] = 0;
        if (p->paused_from_ps[i] < now) p->paused_from_ps[i] = now;
    }
    p->st.pause_sent = p->st.xon_sent = p->st.pfc_received = 0;
}

int eth_port_check(const eth_port *p, bool drained, char *why, size_t why_n)
{
    for (unsigned i = 0; i < ETH_PRIOS; i++) {
        uint64_t b = 0;
        for (size_t j = 0; j < p->q[i].len; j++) b += p->q[i].e[(p->q[i].head + j) & (p->q[i].cap - 1)].pkt->wire_bytes;
        if (b != p->q[i].bytes) {
            snprintf(why, why_n, "%s: priority %u queue counts %llu bytes, its packets take %llu", p->name, i,
                     (unsigned long long)p->q[i].bytes, (unsigned long long)b);
            return -1;
        }
        if (drained && p->q[i].len) {
            snprintf(why, why_n, "%s: priority %u not drained: %zu packets queued", p->name, i, p->q[i].len);
            return -1;
        }
    }
    if (p->pool.live > sim_link_in_flight(p->out)) {   /* PFC frames are freed by the peer on arrival */
        snprintf(why, why_n, "%s: %llu PFC frames out, %llu messages on the wire", p->name, (unsigned long long)p->pool.live,
                 (unsigned long long)sim_link_in_flight(p->out));
        return -1;
    }
    return 0;
}

void eth_port_for_each_held(const eth_port *p, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    for (unsigned i = 0; i < ETH_PRIOS; i++)
        for (size_t j = 0; j < p->q[i].len; j++) fn(p->q[i].e[(p->q[i].head + j) & (p->q[i].cap - 1)].pkt, ctx);
}

void eth_port_free(eth_port *p)
{
    if (!p) return;
    for (unsigned i = 0; i < ETH_PRIOS; i++) free(p->q[i].e);
    sim_pkt_pool_free(&p->pool);
    free(p);
}
