/* The generic switch core (switch.h): VOQs per (input, output, VC), a
 * separable round-robin allocator run by one method process, woken by an
 * event notified for the earliest time anything can change.
 *
 * Two implementations of the allocator's run (cfg.allocator): the scan looks
 * at every (output, input, VC) each run; the masked one keeps per output a
 * mask of the inputs with entries for it, and the result of its last look
 * (the earliest time that look would change by time alone), and looks again
 * only at outputs that gained an entry or credits, or whose time has come.
 * An output left alone would have given the same answer (see allocate), so
 * both grant the same packets at the same times and wake at the same times. */
#include "models/fabric/switch.h"
#include "models/fabric/switch_nvls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One received packet's input-buffer space, shared by its copies. */
typedef struct sw_buf {
    unsigned in_port, in_vc, copies_left;
    uint32_t credits;
    struct sw_buf *next;            /* free list */
} sw_buf;

/* One copy waiting in a VOQ. */
typedef struct sw_entry {
    sim_pkt *pkt;
    sw_buf *buf;
    sim_time_ps eligible_ps;
    uint32_t out_credits;           /* credits it spends on the output link */
    uint8_t out_vc;
    struct sw_entry *next;
} sw_entry;

/* A VOQ, with its head's eligible time and credits beside it: the allocator
 * looks at many heads per grant, and this way without touching the entry or
 * the packet (each a cache miss on a large fabric). */
typedef struct sw_queue {
    sw_entry *head, *tail;
    sim_time_ps head_eligible_ps;
    uint32_t head_credits;
} sw_queue;

typedef struct sw_port {
    struct fabric_switch *s;
    unsigned index;
    bool connected;
    sim_link *in, *out;
    double in_GBps;
    unsigned overhead_bytes;        /* its link's, per link packet */
    unsigned out_credit_types, out_credit_bytes;
    sim_time_ps read_free_ps;       /* the input's crossbar read port is busy until then */
    unsigned rr;                    /* output: next input to look at first */
    uint64_t queued_to;             /* entries waiting for this output */
    uint64_t req;                   /* output: bit i = input i has entries for it (any VC) */
    uint32_t read_memo_bytes;       /* input: the last packet size read, and its read-port time (no llround per grant) */
    sim_time_ps read_memo_ps;
    fabric_switch_port_stats st;
    uint32_t held[SIM_LINK_MAX_CREDIT_TYPES]; /* input-buffer credits held per VC (last: 256 bytes, mostly unused) */
} sw_port;

struct fabric_switch {
    sim_kernel *k;
    const topo *t;
    uint32_t node;
    const topo_routes *r;
    sim_groups *g;
    fabric_switch_cfg cfg;
    unsigned nports, nvcs;
    sim_time_ps pipeline_ps;
    sw_port *ports;
    sw_queue *voq;                  /* [(out * nports + in) * nvcs + vc] (voq_at): an output's look reads one run */
    uint32_t *pair_len;             /* [in * nports + out]: entries over the VCs */
    uint64_t active;                /* bit o: output o has entries */
    uint64_t dirty;                 /* bit o: output o gained an entry or credits since its last look */
    uint64_t pickup;                /* bit i: input i's arrivals are picked up (sim_link_set_pickup), not delivered */
    uint64_t waiting;               /* bit i: a picked-up input has messages on its way, the first arriving at arrive_ps[i] */
    sim_time_ps arrive_ps[TOPO_MAX_PORTS];
    bool delta_kick;                /* the pending run was asked for now (a delta run: sees every arrival at now) */
    /* per output, side by side for the masked allocator's run over the outputs */
    sim_time_ps due_ps[TOPO_MAX_PORTS];     /* when its last look changes by time alone */
    sim_time_ps tx_free_ps[TOPO_MAX_PORTS]; /* its serialiser's free time after the switch's last send (it is the only sender) */
    sw_entry *free_entries;
    sw_buf *free_bufs;
    void **blocks; size_t n_blocks, cap_blocks;  /* every record allocated, for free */
    sim_pkt_pool pool;              /* multicast clones only */
    sim_process proc;
    sim_event kick;
    fabric_switch_stats st;
    char name[TOPO_NAME_MAX + 1];
    sw_nvls *nvls;                  /* the reduction unit (node param nvls=1), else NULL */
};

static inline sw_queue *voq_at(const fabric_switch *s, unsigned in, unsigned out, unsigned vc)
{
    return &s->voq[((size_t)out * s->nports + in) * s->nvcs + vc];
}

static void *sw_block(fabric_switch *s, size_t bytes)
{
    if (s->n_blocks == s->cap_blocks) {
        s->cap_blocks = s->cap_blocks ? 2 * s->cap_blocks : 64;
        s->blocks = realloc(s->blocks, s->cap_blocks * sizeof *s->blocks);
        if (!s->blocks) sim_fatal("out of memory");
    }
    void *b = calloc(1, bytes);
    if (!b) sim_fatal("out of memory");
    s->blocks[s->n_blocks++] = b;
    return b;
}

static sw_entry *entry_get(fabric_switch *s)
{
    sw_entry *e = s->free_entries;
    if (e) s->free_entries = e->next; else e = sw_block(s, sizeof *e);
    e->next = NULL;
    return e;
}

static sw_buf *buf_get(fabric_switch *s)
{
    sw_buf *b = s->free_bufs;
    if (b) s->free_bufs = b->next; else b = sw_block(s, sizeof *b);
    b->next = NULL;
    return b;
}

/* Asks for an allocator run at `at_ps` (>= now); the event keeps the earliest. */
static void wake_at(fabric_switch *s, sim_time_ps at_ps)
{
    sim_time_ps now = sim_now(s->k);
    if (at_ps <= now) s->delta_kick = true;
    sim_event_notify_at(&s->kick, at_ps > now ? at_ps - now : 0);
}

/* The packet leaves on a link whose per-packet overhead may differ from the
 * one it came on (PCIe to NVLink, InfiniBand to Ethernet): each of its frames
 * pays the outgoing link's. */
static void reframe(const fabric_switch *s, const sw_port *ip, const sw_port *op, sim_pkt *pkt)
{
    if (ip->overhead_bytes == op->overhead_bytes) return;
    uint64_t in_overhead = (uint64_t)pkt->frames * ip->overhead_bytes;
    if (pkt->wire_bytes < in_overhead)
        sim_fatal("%s: a packet of %u wire bytes claims %u frames of %u overhead bytes each", s->name, pkt->wire_bytes,
                  pkt->frames, ip->overhead_bytes);
    pkt->wire_bytes = (uint32_t)(pkt->wire_bytes - in_overhead + (uint64_t)pkt->frames * op->overhead_bytes);
}

static void enqueue(fabric_switch *s, unsigned in, unsigned out, unsigned vc, sim_pkt *pkt, sw_buf *b,
                    sim_time_ps eligible_ps)
{
    if (out >= s->nports || !s->ports[out].connected)
        sim_fatal("%s: route sends a packet to port %u, which is not connected", s->name, out);
    sw_port *op = &s->ports[out];
    if (op->out_credit_types && vc >= op->out_credit_types)
        sim_fatal("%s: VC %u on a link whose receiver has %u credit pools", s->name, vc, op->out_credit_types);
    reframe(s, &s->ports[in], op, pkt);
    sw_entry *e = entry_get(s);
    *e = (sw_entry){ .pkt = pkt, .buf = b, .eligible_ps = eligible_ps, .out_vc = (uint8_t)vc,
                     .out_credits = sim_fabric_credits(pkt->wire_bytes, op->out_credit_bytes) };
    sw_queue *q = voq_at(s, in, out, vc);
    if (q->tail) {
        q->tail->next = e;
    } else {
        q->head = e;
        q->head_eligible_ps = eligible_ps;
        q->head_credits = e->out_credits;
    }
    q->tail = e;
    if (s->pair_len[(size_t)in * s->nports + out]++ == 0) s->ports[out].req |= 1ULL << in;
    s->active |= 1ULL << out;
    s->dirty |= 1ULL << out;
    s->ports[out].queued_to++;
    s->st.copies_made++;
    s->st.inside++;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Splits a multicast packet by next-hop port: one copy per port, carrying the
 * group of the members behind it (a direct endpoint neighbour: unicast). */
static void enqueue_multicast(fabric_switch *s, sw_port *ip, sim_pkt *pkt, sw_buf *b, sim_time_ps eligible_ps)
{
    unsigned n;
    const uint32_t *m = sim_groups_members(s->g, pkt->group, &n);
    if (!n) sim_fatal("%s: multicast group %u has no members", s->name, pkt->group);
    uint32_t *sorted = malloc(n * sizeof *sorted), *sub = malloc(n * sizeof *sub);
    topo_hop *hop = malloc(n * sizeof *hop);
    if (!sorted || !sub || !hop) sim_fatal("out of memory");
    memcpy(sorted, m, n * sizeof *m);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    for (unsigned i = 0; i < n; i++) hop[i] = topo_route_next(s->r, s->node, (int)ip->index, sorted[i], pkt->flow);
    bool first = true;
    const uint32_t in_wire_bytes = pkt->wire_bytes;   /* each copy is re-framed from it for its own output */
    b->copies_left = 0;
    for (unsigned port = 0; port < s->nports; port++) {
        unsigned k = 0, vc = 0;
        for (unsigned i = 0; i < n; i++)
            if (hop[i].port == port) { sub[k++] = sorted[i]; vc = hop[i].vc; }
        if (!k) continue;
        sim_pkt *c = first ? pkt : sim_pkt_clone(&s->pool, pkt);
        c->wire_bytes = in_wire_bytes;
        if (!first) s->st.clones++;
        first = false;
        unsigned pp;
        int peer = topo_peer(s->t, s->node, port, &pp);
        if (k == 1 && peer >= 0 && s->t->nodes[peer].endpoint == (int32_t)sub[0]) {
            c->dst = sub[0];
            c->group = 0;
        } else {
            c->group = sim_groups_intern(s->g, sub, k);
        }
        b->copies_left++;
        enqueue(s, ip->index, port, vc, c, b, eligible_ps);
    }
    free(sorted);
    free(sub);
    free(hop);
}

static void on_receive(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    sw_port *ip = ctx;
    fabric_switch *s = ip->s;
    sim_pkt *pkt = msg;
    (void)bytes;
    pkt->hops++;
    if (pkt->vc >= s->nvcs) sim_fatal("%s: packet arrived on VC %u, the routes use %u", s->name, pkt->vc, s->nvcs);
    sw_buf *b = buf_get(s);
    *b = (sw_buf){ .in_port = ip->index, .in_vc = pkt->vc, .credits = sim_fabric_credits(pkt->wire_bytes, s->cfg.credit_bytes) };
    ip->held[b->in_vc] += b->credits;
    if (ip->held[b->in_vc] > ip->st.max_held_credits) ip->st.max_held_credits = ip->held[b->in_vc];
    ip->st.rx_pkts++;
    ip->st.rx_bytes += pkt->wire_bytes;
    s->st.received++;
    sim_time_ps eligible_ps = sim_link_arrival_ps(l) + s->pipeline_ps;
    if (pkt->dst == SIM_PKT_GROUP && (pkt->flags & SIM_PKT_F_REDUCE)) {
        if (!s->nvls) sim_fatal("%s: a reduce contribution (group %u) at a switch without a reduction unit (nvls=1)", s->name, pkt->group);
        b->copies_left = 1;   /* its result copy: the credits stay held until that has left */
        sw_nvls_add(s->nvls, pkt, b, ip->index, eligible_ps, sim_now(s->k));
        if (sw_nvls_next_ps(s->nvls) != SIM_TIME_MAX) wake_at(s, sw_nvls_next_ps(s->nvls));   /* a reduction's end */
        return;
    } else if (pkt->dst == SIM_PKT_GROUP) {
        enqueue_multicast(s, ip, pkt, b, eligible_ps);
    } else {
        topo_hop h = topo_route_next(s->r, s->node, (int)ip->index, pkt->dst, pkt->flow);
        b->copies_left = 1;
        enqueue(s, ip->index, h.port, h.vc, pkt, b, eligible_ps);
    }
    /* a picked-up arrival's run was asked for when it was sent (on_pickup_sent) */
    if (!(s->pickup >> ip->index & 1)) wake_at(s, eligible_ps);
}

/* A packet was sent to a picked-up input: the run that takes it comes no
 * later than its eligible time (before then it can change no grant). */
static void on_pickup_sent(void *ctx, sim_link *l, sim_time_ps arrive_ps)
{
    (void)l;
    sw_port *ip = ctx;
    fabric_switch *s = ip->s;
    if (!(s->waiting >> ip->index & 1)) {
        s->waiting |= 1ULL << ip->index;
        s->arrive_ps[ip->index] = arrive_ps;
    }
    wake_at(s, arrive_ps + s->pipeline_ps);
}

/* The start of every run: takes the picked-up inputs' arrivals as their
 * deliveries would have happened by now. A run asked for in a delta cycle
 * comes after every same-time delivery; a timed one before them (deliveries
 * are keyed, the switch's wake-up is not: sim/kernel.h), so it takes only
 * earlier arrivals. Returns the eligible time of the first arrival left
 * (SIM_TIME_MAX: none), for the run's wake-up. */
static sim_time_ps pick_up_arrivals(fabric_switch *s, sim_time_ps now, bool delta_run)
{
    sim_time_ps through = delta_run ? now : now - 1, first_ps = SIM_TIME_MAX;
    for (uint64_t m = s->waiting; m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        if (s->arrive_ps[i] <= through) {
            sim_link *in = s->ports[i].in;
            s->st.picked_up += sim_link_pick_up(in, through);
            s->arrive_ps[i] = sim_link_next_arrival_ps(in);
            if (s->arrive_ps[i] == SIM_TIME_MAX) {
                s->waiting &= ~(1ULL << i);
                continue;
            }
        }
        if (s->arrive_ps[i] < first_ps) first_ps = s->arrive_ps[i];
    }
    return first_ps == SIM_TIME_MAX ? SIM_TIME_MAX : first_ps + s->pipeline_ps;
}

static void on_credit(void *ctx, sim_link *l, unsigned type, uint32_t credits)
{
    (void)l; (void)type; (void)credits;
    sw_port *op = ctx;
    fabric_switch *s = op->s;
    s->dirty |= 1ULL << op->index;
    /* Nothing waits for it, or the serialiser is busy: the run that can use
     * the credit is already asked for (the look that granted, or the entry
     * that arrived, woke the switch at or before the serialiser's free time),
     * and the dirty mark makes it look at this output. */
    if (!s->cfg.credit_wakes_always && (!op->queued_to || s->tx_free_ps[op->index] > sim_now(s->k))) return;
    wake_at(s, sim_now(s->k));
}

/* May the head of q (vc) go on op's link now, as far as credits go? */
static bool can_send(const sw_port *op, const sw_queue *q, unsigned vc)
{
    return !op->out_credit_types || sim_link_can_send(op->out, vc, q->head_credits);
}

static void send_entry(fabric_switch *s, unsigned in, unsigned out, sw_queue *q, sim_time_ps now)
{
    sw_entry *e = q->head;
    q->head = e->next;
    if (q->head) {
        q->head_eligible_ps = q->head->eligible_ps;
        q->head_credits = q->head->out_credits;
    } else {
        q->tail = NULL;
    }
    sw_port *ip = &s->ports[in], *op = &s->ports[out];
    sim_pkt *pkt = e->pkt;
    pkt->vc = e->out_vc;
    if (pkt->wire_bytes != ip->read_memo_bytes || !ip->read_memo_ps) {
        double read_ps = (double)pkt->wire_bytes * 1000.0 / (ip->in_GBps * s->cfg.speedup);
        ip->read_memo_bytes = pkt->wire_bytes;
        ip->read_memo_ps = (sim_time_ps)llround(read_ps);
    }
    ip->read_free_ps = now + ip->read_memo_ps;
    if (--s->pair_len[(size_t)in * s->nports + out] == 0) op->req &= ~(1ULL << in);
    if (--op->queued_to == 0) s->active &= ~(1ULL << out);
    op->st.tx_pkts++;
    op->st.tx_bytes += pkt->wire_bytes;
    op->st.queue_ps_sum += now - e->eligible_ps;
    s->st.copies_sent++;
    s->st.inside--;
    sw_buf *b = e->buf;
    uint32_t wire = pkt->wire_bytes;
    if (s->cfg.on_grant) s->cfg.on_grant(s->cfg.grant_ctx, s->node, in, out, pkt, now);
    if (op->out_credit_types) {
        if (!sim_link_try_send(op->out, pkt, wire, e->out_vc, e->out_credits))
            sim_fatal("%s: credits checked but the send was refused", s->name);
    } else {
        sim_link_send(op->out, pkt, wire);
    }
    s->tx_free_ps[out] = sim_link_tx_free_ps(op->out);
    e->next = s->free_entries;
    s->free_entries = e;
    if (--b->copies_left == 0) {
        s->ports[b->in_port].held[b->in_vc] -= b->credits;
        sim_link_return_credits(s->ports[b->in_port].in, b->in_vc, b->credits);
        s->st.released++;
        b->next = s->free_bufs;
        s->free_bufs = b;
    }
}

/* The oldest eligible head among input i's VCs for output o that may go now
 * (NULL: none); heads not yet eligible lower *next_ps to their time. */
static sw_queue *best_head(fabric_switch *s, const sw_port *op, unsigned i, unsigned o, sim_time_ps now, sim_time_ps *next_ps)
{
    sw_queue *best = NULL, *q = voq_at(s, i, o, 0);
    for (unsigned v = 0; v < s->nvcs; v++, q++) {
        if (!q->head) continue;
        if (q->head_eligible_ps > now) {
            if (q->head_eligible_ps < *next_ps) *next_ps = q->head_eligible_ps;
            continue;
        }
        if (!can_send(op, q, v)) continue;
        if (!best || q->head_eligible_ps < best->head_eligible_ps) best = q;
    }
    return best;
}

/* The reference run (FABRIC_SWITCH_ALLOC_SCAN): one allocation pass at now
 * over every output with entries and every input from its pointer, then a
 * wake-up for the earliest time a blocked grant could become possible
 * (credits wake it through on_credit). */
static void allocate_scan(fabric_switch *s, sim_time_ps now, sim_time_ps next_ps)
{
    unsigned n = s->nports;
    for (unsigned o = 0; o < n; o++) {
        sw_port *op = &s->ports[o];
        if (!op->queued_to) continue;
        s->st.output_evals++;
        sim_time_ps tx_free = sim_link_tx_free_ps(op->out);
        if (tx_free > now) { if (tx_free < next_ps) next_ps = tx_free; continue; }
        for (unsigned j = 0; j < n; j++) {
            unsigned i = (op->rr + j) % n;
            sw_port *ip = &s->ports[i];
            sw_queue *best = best_head(s, op, i, o, now, &next_ps);
            if (!best) continue;
            if (ip->read_free_ps > now) {
                if (ip->read_free_ps < next_ps) next_ps = ip->read_free_ps;
                continue;
            }
            send_entry(s, i, o, best, now);
            op->rr = (i + 1) % n;
            if (op->queued_to) {
                sim_time_ps t = sim_link_tx_free_ps(op->out);
                if (t < next_ps) next_ps = t;
            }
            break;
        }
    }
    if (next_ps != SIM_TIME_MAX) wake_at(s, next_ps > now ? next_ps : now + 1);
}

/* One output's look of the masked run: what the scan does for output o, over
 * the inputs of its request mask from its pointer on (an input without
 * entries for o is skipped by the scan too). Returns the output's part of the
 * wake-up time; sets s->due_ps[o] to the time this look's answer changes by
 * time alone: a later look before then, with no new entry or credits for o,
 * finds the same (no grant) and gives the same time. Why: the serialiser
 * stays free or busy (only o's grants move it); every head stays on the same
 * side of its eligible time, every credit check fails as before (credits only
 * grow by on_credit, which marks o), every input whose head could go stays
 * busy until its read-port time (a busy input cannot be granted elsewhere, so
 * its time does not move); an input whose heads cannot go has its read port
 * ignored, so grants of other outputs do not matter. After a grant the output
 * is busy, and a later look gives its serialiser's free time. */
static sim_time_ps look_output(fabric_switch *s, unsigned o, sim_time_ps now)
{
    sw_port *op = &s->ports[o];
    unsigned n = s->nports;
    s->st.output_evals++;
    sim_time_ps tx_free = s->tx_free_ps[o];
    if (tx_free > now) return s->due_ps[o] = tx_free;
    sim_time_ps next_ps = SIM_TIME_MAX;
    /* inputs rr .. n-1, then 0 .. rr-1 (the scan's order) */
    uint64_t from_rr = op->rr < 64 ? ~0ULL << op->rr : 0;
    uint64_t parts[2] = { op->req & from_rr, op->req & ~from_rr };
    for (unsigned part = 0; part < 2; part++)
        for (uint64_t m = parts[part]; m; m &= m - 1) {
            unsigned i = (unsigned)__builtin_ctzll(m);
            sw_port *ip = &s->ports[i];
            sw_queue *best = best_head(s, op, i, o, now, &next_ps);
            if (!best) continue;
            if (ip->read_free_ps > now) {
                if (ip->read_free_ps < next_ps) next_ps = ip->read_free_ps;
                continue;
            }
            send_entry(s, i, o, best, now);
            op->rr = (i + 1) % n;
            s->due_ps[o] = op->queued_to ? s->tx_free_ps[o] : SIM_TIME_MAX;
            return s->due_ps[o] < next_ps ? s->due_ps[o] : next_ps;
        }
    return s->due_ps[o] = next_ps;
}

/* The masked run: outputs in port order as the scan, each looked at again
 * only when it gained an entry or credits (dirty) or its due time came; the
 * others give their last look's time. */
static void allocate_masked(fabric_switch *s, sim_time_ps now, sim_time_ps next_ps)
{
    for (uint64_t m = s->active; m; m &= m - 1) {
        unsigned o = (unsigned)__builtin_ctzll(m);
        sim_time_ps t;
        if ((s->dirty >> o & 1) || s->due_ps[o] <= now) {
            s->dirty &= ~(1ULL << o);
            t = look_output(s, o, now);
        } else {
            t = s->due_ps[o];
        }
        if (t < next_ps) next_ps = t;
    }
    if (next_ps != SIM_TIME_MAX) wake_at(s, next_ps > now ? next_ps : now + 1);
}

/* A reduced contribution, now the result copy for its sender, into the VOQ of the input it came in on. */
static void nvls_emit(void *ctx, sim_pkt *pkt, void *buf, unsigned in_port, sim_time_ps done_ps)
{
    fabric_switch *s = ctx;
    topo_hop h = topo_route_next(s->r, s->node, (int)in_port, pkt->dst, pkt->flow);
    enqueue(s, in_port, h.port, h.vc, pkt, buf, done_ps);
}

static void allocate(void *ctx)
{
    fabric_switch *s = ctx;
    sim_time_ps now = sim_now(s->k);
    bool delta_run = s->delta_kick;
    s->delta_kick = false;
    s->st.allocations++;
    sim_time_ps next_ps = s->waiting ? pick_up_arrivals(s, now, delta_run) : SIM_TIME_MAX;
    if (s->nvls) {   /* reductions that ended by now: their results join the VOQs before this run's looks */
        sim_time_ps t = sw_nvls_run(s->nvls, now, nvls_emit, s);
        if (t < next_ps) next_ps = t;
    }
    if (s->cfg.allocator == FABRIC_SWITCH_ALLOC_SCAN) allocate_scan(s, now, next_ps);
    else allocate_masked(s, now, next_ps);
}

fabric_switch *fabric_switch_new(sim_kernel *k, const topo *t, uint32_t node, const topo_routes *r, sim_groups *g,
                                 const fabric_switch_cfg *cfg_in, char *why, size_t why_n)
{
    fabric_switch_cfg cfg = cfg_in ? *cfg_in : FABRIC_SWITCH_CFG_DEFAULT;
    const char *nm = t->nodes[node].name;
    if (cfg.credit_bytes == 0) { snprintf(why, why_n, "switch %s: credit_bytes is 0 (allowed: >= 1)", nm); return NULL; }
    if (cfg.buffer_bytes_per_vc < cfg.credit_bytes) {
        snprintf(why, why_n, "switch %s: buffer_bytes_per_vc %u is below credit_bytes %u (allowed: >= credit_bytes)", nm,
                 cfg.buffer_bytes_per_vc, cfg.credit_bytes);
        return NULL;
    }
    if (!(cfg.pipeline_ns >= 0) || cfg.pipeline_ns > 1e9) {
        snprintf(why, why_n, "switch %s: pipeline_ns %g (allowed: 0 .. 1e9)", nm, cfg.pipeline_ns);
        return NULL;
    }
    if (!(cfg.speedup > 0) || cfg.speedup > 1000) {
        snprintf(why, why_n, "switch %s: speedup %g (allowed: > 0 .. 1000)", nm, cfg.speedup);
        return NULL;
    }
    if (cfg.allocator != FABRIC_SWITCH_ALLOC_MASKED && cfg.allocator != FABRIC_SWITCH_ALLOC_SCAN) {
        snprintf(why, why_n, "switch %s: allocator %d (allowed: %d masked, %d scan)", nm, (int)cfg.allocator,
                 FABRIC_SWITCH_ALLOC_MASKED, FABRIC_SWITCH_ALLOC_SCAN);
        return NULL;
    }
    if (t->nodes[node].nports > 64) {   /* the masked allocator's masks are 64 bits */
        snprintf(why, why_n, "switch %s: %u ports (allowed: 1 .. 64)", nm, t->nodes[node].nports);
        return NULL;
    }
    unsigned nvcs = topo_routes_vcs(r);
    if (nvcs == 0 || nvcs > SIM_LINK_MAX_CREDIT_TYPES) {
        snprintf(why, why_n, "switch %s: routes use %u VCs (allowed: 1 .. %u)", nm, nvcs, SIM_LINK_MAX_CREDIT_TYPES);
        return NULL;
    }
    fabric_switch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    *s = (fabric_switch){ .k = k, .t = t, .node = node, .r = r, .g = g, .cfg = cfg, .nports = t->nodes[node].nports,
                          .nvcs = nvcs, .pipeline_ps = (sim_time_ps)llround(cfg.pipeline_ns * 1000.0) };
    snprintf(s->name, sizeof s->name, "%s", nm);
    int64_t nvls = topo_node_param(t, node, "nvls", 0);
    if (nvls != 0 && nvls != 1) {
        snprintf(why, why_n, "switch %s: nvls=%lld (allowed: 0 none, 1 a reduction unit)", nm, (long long)nvls);
        free(s);
        return NULL;
    }
    if (nvls) {
        if (!(cfg.nvls_reduce_GBps > 0) || !(cfg.nvls_latency_ns >= 0) || cfg.nvls_latency_ns > 1e9 || cfg.nvls_table_entries < 1 ||
            cfg.nvls_table_entries > (1u << 24)) {
            snprintf(why, why_n, "switch %s: nvls_reduce_GBps %g, nvls_latency_ns %g, nvls_table_entries %u (allowed: > 0, 0 .. 1e9, "
                     "1 .. 16777216)", nm, cfg.nvls_reduce_GBps, cfg.nvls_latency_ns, cfg.nvls_table_entries);
            free(s);
            return NULL;
        }
        s->nvls = sw_nvls_new(g, &cfg, nm);
    }
    s->ports = calloc(s->nports, sizeof *s->ports);
    s->voq = calloc((size_t)s->nports * s->nports * nvcs, sizeof *s->voq);
    s->pair_len = calloc((size_t)s->nports * s->nports, sizeof *s->pair_len);
    if (!s->ports || !s->voq || !s->pair_len) sim_fatal("out of memory");
    for (unsigned p = 0; p < s->nports; p++) s->ports[p] = (sw_port){ .s = s, .index = p };
    sim_pkt_pool_init(&s->pool, s->name);
    sim_event_init(&s->kick, k, s->name);
    sim_method_init(&s->proc, k, s->name, allocate, s);
    sim_sensitive(&s->proc, &s->kick);
    sim_dont_initialize(&s->proc);
    return s;
}

void fabric_switch_ingress(fabric_switch *s, unsigned port, sim_fabric_ingress *in)
{
    (void)port;
    in->credit_types = s->nvcs;
    in->credit_bytes = s->cfg.credit_bytes;
    for (unsigned v = 0; v < s->nvcs; v++) in->credits[v] = s->cfg.buffer_bytes_per_vc / s->cfg.credit_bytes;
}

void fabric_switch_connect(fabric_switch *s, const sim_fabric_port *p)
{
    if (p->port >= s->nports) sim_fatal("%s: connect of port %u beyond its %u ports", s->name, p->port, s->nports);
    sw_port *sp = &s->ports[p->port];
    sp->connected = true;
    sp->in = p->in;
    sp->out = p->out;
    sp->in_GBps = p->link->GBps > 0 ? p->link->GBps : 1e9;
    sp->overhead_bytes = p->link->overhead_bytes;
    sp->out_credit_types = p->out_credit_types;
    sp->out_credit_bytes = p->out_credit_bytes ? p->out_credit_bytes : 1;
    sim_link_set_receiver(p->in, on_receive, sp);
    /* keyed links only: the same-time rule of pick_up_arrivals rests on deliveries firing after the switch's wake-up */
    if (!s->cfg.plain_delivery && s->pipeline_ps > 0 && p->in->order_key && sim_link_set_pickup(p->in, on_pickup_sent))
        s->pickup |= 1ULL << p->port;
    if (p->out_credit_types) sim_link_set_credit_callback(p->out, on_credit, sp);
}

/* The allocator's masks agree with the queues of output o. */
static int mask_mismatch(const fabric_switch *s, unsigned o, char *why, size_t why_n)
{
    const sw_port *op = &s->ports[o];
    uint64_t entries = 0;
    for (unsigned i = 0; i < s->nports; i++) {
        uint32_t len = 0;
        for (unsigned v = 0; v < s->nvcs; v++) {
            const sw_queue *q = voq_at(s, i, o, v);
            if (q->head && (q->head_eligible_ps != q->head->eligible_ps || q->head_credits != q->head->out_credits)) {
                snprintf(why, why_n, "switch %s: VOQ (%u, %u, VC %u) keeps a head time or credits its head does not have",
                         s->name, i, o, v);
                return 1;
            }
            for (const sw_entry *e = q->head; e; e = e->next) len++;
        }
        if (len != s->pair_len[(size_t)i * s->nports + o] || (len > 0) != ((op->req >> i & 1) != 0)) {
            snprintf(why, why_n, "switch %s: input %u holds %u entries for output %u but its count says %u, its mask bit %u",
                     s->name, i, len, o, s->pair_len[(size_t)i * s->nports + o], (unsigned)(op->req >> i & 1));
            return 1;
        }
        entries += len;
    }
    if (op->connected) {
        sim_time_ps now = sim_now(s->k), cached = s->tx_free_ps[o] > now ? s->tx_free_ps[o] : now;
        if (cached != sim_link_tx_free_ps(op->out)) {
            snprintf(why, why_n, "switch %s: output %u's serialiser is free at %llu ps, the switch thinks %llu (another sender?)",
                     s->name, o, (unsigned long long)sim_link_tx_free_ps(op->out), (unsigned long long)cached);
            return 1;
        }
    }
    if (s->pickup >> o & 1) {
        sim_time_ps next = sim_link_next_arrival_ps(s->ports[o].in);
        bool waits = (s->waiting >> o & 1) != 0;
        if (waits != (next != SIM_TIME_MAX) || (waits && s->arrive_ps[o] != next)) {
            snprintf(why, why_n, "switch %s: input %u's first message arrives at %llu ps, the switch thinks %llu (waiting %u)",
                     s->name, o, (unsigned long long)next, (unsigned long long)s->arrive_ps[o], (unsigned)waits);
            return 1;
        }
    }
    if (entries != op->queued_to || (entries > 0) != ((s->active >> o & 1) != 0)) {
        snprintf(why, why_n, "switch %s: output %u has %llu entries but counts %llu, active bit %u", s->name, o,
                 (unsigned long long)entries, (unsigned long long)op->queued_to, (unsigned)(s->active >> o & 1));
        return 1;
    }
    return 0;
}

int fabric_switch_check(const fabric_switch *s, bool drained, char *why, size_t why_n)
{
    const fabric_switch_stats *st = &s->st;
    if (st->copies_made != st->copies_sent + st->inside) {
        snprintf(why, why_n, "switch %s: %llu copies made but %llu sent + %llu inside", s->name,
                 (unsigned long long)st->copies_made, (unsigned long long)st->copies_sent, (unsigned long long)st->inside);
        return 1;
    }
    uint64_t queued = 0, held_bufs_credits = 0;
    for (unsigned p = 0; p < s->nports; p++) {
        queued += s->ports[p].queued_to;
        if (mask_mismatch(s, p, why, why_n)) return 1;
        for (unsigned v = 0; v < s->nvcs; v++) {
            uint32_t h = s->ports[p].held[v];
            held_bufs_credits += h;
            if ((uint64_t)h * s->cfg.credit_bytes > s->cfg.buffer_bytes_per_vc + s->cfg.credit_bytes - 1) {
                snprintf(why, why_n, "switch %s: port %u VC %u holds %u credits, more than its buffer", s->name, p, v, h);
                return 1;
            }
        }
    }
    if (s->nvls && sw_nvls_check(s->nvls, drained, why, why_n)) return 1;
    if (queued != st->inside) {
        snprintf(why, why_n, "switch %s: %llu entries queued per output but %llu inside", s->name,
                 (unsigned long long)queued, (unsigned long long)st->inside);
        return 1;
    }
    if (st->received < st->released) {
        snprintf(why, why_n, "switch %s: released %llu buffers of %llu received", s->name,
                 (unsigned long long)st->released, (unsigned long long)st->received);
        return 1;
    }
    if (drained && (st->inside || st->received != st->released || held_bufs_credits)) {
        snprintf(why, why_n, "switch %s: drained but %llu copies inside, %llu buffers held", s->name,
                 (unsigned long long)st->inside, (unsigned long long)(st->received - st->released));
        return 1;
    }
    return 0;
}

void fabric_switch_reset_stats(fabric_switch *s)
{
    /* between runs every arrival until now has happened: count it in the old window */
    if (s->waiting) (void)pick_up_arrivals(s, sim_now(s->k), true);
    for (unsigned p = 0; p < s->nports; p++) {
        sw_port *sp = &s->ports[p];
        uint32_t held = 0;
        for (unsigned v = 0; v < s->nvcs; v++) held = sp->held[v] > held ? sp->held[v] : held;
        sp->st = (fabric_switch_port_stats){ .max_held_credits = held };
    }
    s->st.allocations = 0;
    s->st.output_evals = 0;
}

void fabric_switch_for_each_held(const fabric_switch *s, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    size_t n_queues = (size_t)s->nports * s->nports * s->nvcs;
    for (size_t q = 0; q < n_queues; q++)
        for (const sw_entry *e = s->voq[q].head; e; e = e->next) fn(e->pkt, ctx);
    if (s->nvls) sw_nvls_for_each_held(s->nvls, fn, ctx);
}

void fabric_switch_free(fabric_switch *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_blocks; i++) free(s->blocks[i]);
    free(s->blocks);
    sim_pkt_pool_free(&s->pool);
    sw_nvls_free(s->nvls);
    free(s->voq);
    free(s->pair_len);
    free(s->ports);
    free(s);
}

fabric_switch_stats fabric_switch_stats_get(const fabric_switch *s)
{
    fabric_switch_stats st = s->st;
    if (s->nvls) sw_nvls_stats(s->nvls, &st);
    return st;
}
bool fabric_switch_has_nvls(const fabric_switch *s) { return s->nvls != NULL; }

const fabric_switch_port_stats *fabric_switch_port(const fabric_switch *s, unsigned port)
{
    return port < s->nports ? &s->ports[port].st : NULL;
}
