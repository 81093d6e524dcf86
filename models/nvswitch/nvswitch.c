/* The nvswitch component (see nvswitch.h). */
#include "models/nvswitch/nvswitch.h"
#include "models/nvswitch/nvs_defer.h"
#include "models/nvswitch/nvs_slots.h"

#include "sim/ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nvswitch_rtl_new_fn rtl_new;

void nvswitch_register_rtl(nvswitch_rtl_new_fn fn) { rtl_new = fn; }
bool nvswitch_rtl_available(void) { return rtl_new != NULL; }

static bool sw_cycle(void *ctx, uint64_t cycle);
static void sw_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes);

nvswitch *nvswitch_new(sim_kernel *k, sim_clock_domain *clk, const nvswitch_cfg *cfg, sim_trace *trace, char *why,
                       size_t why_n)
{
    if (xbar_core_cfg_check(&cfg->core, why, why_n) != 0) return NULL;
    if (cfg->credit_batch < 1) return snprintf(why, why_n, "credit_batch=%d: allowed >= 1", cfg->credit_batch), NULL;
    if (cfg->period_ps == 0) return snprintf(why, why_n, "clock period 0 ps"), NULL;
    nvswitch *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->k = k;
    s->cfg = *cfg;
    s->n = cfg->core.ports;
    s->credit_mode = nvswitch_credit_mode(&cfg->core);
    s->tr = trace;
    sim_pkt_pool_init(&s->pool, cfg->name ? cfg->name : "nvswitch");
    const xbar_core_ops *cops = NULL; /* the C core (tl, both) */
    void *cimpl = NULL;
    if (cfg->model == NVS_MODEL_TL || cfg->model == NVS_MODEL_BOTH) {
        if (cfg->c_core == NVS_C_CORE_REF) {
            cops = &xbar_ref_ops;
            cimpl = xbar_ref_new(&cfg->core);
        } else {
            cops = &xbar_core_tl_ops;
            cimpl = s->tl = xbar_core_new(&cfg->core);
        }
        if (!cimpl) sim_fatal("C crossbar core %s failed on a checked configuration", cops->name);
    }
    if (cfg->model == NVS_MODEL_TL) {
        s->ops = cops;
        s->impl = cimpl;
    } else {
        if (!rtl_new) {
            snprintf(why, why_n,
                     "model=%s: this binary has no Verilated switch registered (nvswitch_register_rtl); allowed here: model=tl",
                     cfg->model == NVS_MODEL_RTL ? "rtl" : "both");
            if (cops) cops->free(cimpl);
            free(s);
            return NULL;
        }
        const xbar_core_ops *rops = NULL;
        void *rimpl = rtl_new(&cfg->core, trace, &rops, why, why_n);
        if (!rimpl) {
            if (cops) cops->free(cimpl);
            free(s);
            return NULL;
        }
        if (cfg->model == NVS_MODEL_RTL) {
            s->ops = rops;
            s->impl = rimpl;
        } else {
            s->ls = xbar_lockstep_new(cops, cimpl, rops, rimpl, s->n);
            s->ops = &xbar_lockstep_ops;
            s->impl = s->ls;
        }
    }
    s->defer = !cfg->no_defer && !trace; /* deferred inputs (nvs_defer.h); waves show each message at its arrival */
    s->runs = cfg->model == NVS_MODEL_TL && s->tl && !trace && !cfg->per_flit; /* runs are the fast core's */
    s->packets = s->runs && cfg->saf && s->credit_mode == SIM_CREDIT_PER_DEST;
    s->pair = calloc((size_t)s->n * XBAR_MAX_PORTS, sizeof *s->pair);
    if (!s->pair) sim_fatal("out of memory");
    for (int i = 0; i < s->n; i++) {
        s->port[i].sw = s;
        s->port[i].idx = i;
        s->port[i].rx_slot = NVS_NO_SLOT;
    }
    sim_clock_add(clk, &s->h, cfg->name ? cfg->name : "nvswitch", sw_cycle, s);
    s->h.active = true;
    if (trace) {
        sim_trace_push_scope(trace, cfg->name ? cfg->name : "nvswitch");
        s->tv_matches = sim_trace_add_var(trace, "matches", 8);
        s->tv_copies_out = sim_trace_add_var(trace, "copies_out", 8);
        for (int i = 0; i < s->n && i < 16; i++) {
            nvs_port *p = &s->port[i];
            sim_trace_push_scopef(trace, "port%d", i);
            p->tv_in_valid = sim_trace_add_var(trace, "in_valid", 1);
            p->tv_in_label = sim_trace_add_string(trace, "in_flit");
            p->tv_grant = sim_trace_add_var(trace, "grant", 1);
            p->tv_grant_out = sim_trace_add_var(trace, "grant_out", 8);
            p->tv_credit = sim_trace_add_var(trace, "credit", 1);
            p->tv_out_valid = sim_trace_add_var(trace, "out_valid", 1);
            p->tv_out_label = sim_trace_add_string(trace, "out_flit");
            p->tv_backlog = sim_trace_add_var(trace, "held_slots", 32);
            sim_trace_u64(trace, p->tv_backlog, 0);
            sim_trace_u64(trace, p->tv_in_valid, 0);
            sim_trace_u64(trace, p->tv_out_valid, 0);
            sim_trace_u64(trace, p->tv_grant, 0);
            sim_trace_u64(trace, p->tv_credit, 0);
            sim_trace_str(trace, p->tv_in_label, "");
            sim_trace_str(trace, p->tv_out_label, "");
            sim_trace_pop_scope(trace);
        }
        sim_trace_pop_scope(trace);
    }
    return s;
}

void nvswitch_attach(nvswitch *s, int port, sim_link *in, sim_link *out)
{
    s->port[port].in = in;
    s->port[port].out = out;
    sim_link_set_receiver(in, sw_recv, &s->port[port]);
    if (s->defer) sim_link_set_deferrable(in, nvs_defer_judge);
}

void nvswitch_held(const nvswitch *s, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    for (uint32_t x = 0; x < s->n_slots; x++)
        if (s->slot_pkt[x]) fn(s->slot_pkt[x], ctx);
    /* copies partly sent (a wormhole run stopped mid-packet) */
    for (size_t x = 0; s->mc_copy && x < (size_t)s->n * XBAR_MAX_PORTS; x++)
        if (s->mc_copy[x]) fn(s->mc_copy[x], ctx);
}

void nvswitch_free(nvswitch *s)
{
    if (!s) return;
    if (s->ls) xbar_lockstep_free(s->ls); /* frees both cores */
    else if (s->ops && s->ops->free) s->ops->free(s->impl);
    for (int i = 0; i < s->n; i++) free(s->port[i].stage);
    free(s->pair);
    sim_pkt_pool_free(&s->pool);
    free(s->slot_pkt);
    free(s->slot_free);
    free(s->mc);
    free(s->mc_copy);
    free(s);
}

/* Message m becomes the one input i presents (see nvswitch.in). */
static inline void stage_present(nvswitch *s, int i, const nvs_stage *m)
{
    s->in.in[i].data = m->word - 1;
    s->in.in[i].dest_mask = m->dest_mask;
    s->cur_arrive_ps[i] = m->arrive_ps;
    s->cur_left[i] = m->left;
    s->fresh_mask |= 1ULL << i;
}

/* A message's flits to present: at once if the input has none, else
 * queued behind it (arrival order). */
static void stage_push(nvswitch *s, nvs_port *p, uint64_t word, uint64_t mask, sim_time_ps at, uint32_t flits)
{
    const nvs_stage m = { word, mask, at, flits };
    if (!(s->stage_mask >> p->idx & 1)) {
        stage_present(s, p->idx, &m);
        s->stage_mask |= 1ULL << p->idx;
        return;
    }
    if (p->st_len == p->st_cap) {
        size_t cap = p->st_cap;
        p->stage = sim_ring_grow(p->stage, sizeof *p->stage, p->st_head, p->st_len, &cap, 64);
        p->st_head = 0;
        p->st_cap = (uint32_t)cap;
    }
    p->stage[(p->st_head + p->st_len++) & (p->st_cap - 1)] = m;
}

/* Input i presented the last flit of its message: the next queued one takes its place. */
static void stage_next(nvswitch *s, int i)
{
    nvs_port *p = &s->port[i];
    if (!p->st_len) {
        s->stage_mask &= ~(1ULL << i);
        return;
    }
    stage_present(s, i, &p->stage[p->st_head]);
    p->st_head = (p->st_head + 1) & (p->st_cap - 1);
    p->st_len--;
}

/* Packet mode: the frees of pool (i, j) until the per-flit rule of
 * free_slots could next return its credits (the batch fills or the pool
 * empties), watched by the core. Arrivals only move that point later, so
 * they leave the watch alone and the fire checks again (return_batches). An
 * unarmed pool holds nothing, and has nothing pending. */
static inline void arm_pool(nvswitch *s, int i, int j, nvs_pair *pl, uint32_t batch)
{
    const uint32_t room = batch - pl->pend, k = pl->held < room ? pl->held : room;
    pl->armed = k;
    if (k) xbar_core_watch_add(s->tl, i, j, k);
}

/* Slots of each credit pool `flits` flits of a packet to `dest_mask` occupy. */
static void hold_slots(nvswitch *s, nvs_port *p, uint64_t dest_mask, uint32_t flits)
{
    nvs_pair *pool = nvs_pair_at(s, p->idx, 0);
    switch (s->credit_mode) {
    case SIM_CREDIT_NONE: break;
    case SIM_CREDIT_PER_DEST:
        for (uint64_t d = dest_mask; d; d &= d - 1) {
            const int j = __builtin_ctzll(d);
            pool[j].held += flits;
            if (s->packets && !pool[j].armed) arm_pool(s, p->idx, j, &pool[j], (uint32_t)s->cfg.credit_batch);
        }
        break;
    case SIM_CREDIT_PER_FLIT: pool[0].held += flits; break;
    case SIM_CREDIT_PER_COPY: pool[0].held += flits * (uint32_t)__builtin_popcountll(dest_mask); break;
    }
}

/* A packet (store-and-forward) or one flit of it (wormhole: part = flit
 * index) arrives: one staging entry, its flits presented one per cycle. */
static void sw_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    nvs_port *p = ctx;
    nvswitch *s = p->sw;
    sim_pkt *k = msg;
    const sim_time_ps at = sim_link_arrival_ps(l); /* now, or earlier when it waited (deferred delivery) */
    const unsigned part = sim_link_part(l), fb = (unsigned)s->cfg.flit_bytes;
    uint32_t slot, count;
    uint64_t dm;
    unsigned nflits;
    if (s->cfg.saf || part == 0) { /* a new packet */
        nflits = s->cfg.saf ? bytes / fb : k->parts;
        if (nflits < 1 || nflits > NVS_MAX_FLITS || part != 0 || (s->cfg.saf ? bytes % fb != 0 : bytes != fb))
            sim_fatal("%s: port %d got a packet of %u B in parts of %u B (flits of %u B, at most %d a packet)", s->cfg.name,
                      p->idx, k->wire_bytes, bytes, fb, NVS_MAX_FLITS);
        if (k->dst == SIM_PKT_GROUP) dm = nvs_group_mask(s, k);
        else if (k->dst < (unsigned)s->n) dm = 1ULL << k->dst;
        else sim_fatal("%s: port %d got a packet for endpoint %u (ports 0..%d)", s->cfg.name, p->idx, k->dst, s->n - 1);
        slot = nvs_slot_new(s, k);
        if (nvs_mask_multi(dm)) nvs_slot_mc(s, slot, dm, nflits);
        p->rx_slot = s->cfg.saf || nflits == 1 ? NVS_NO_SLOT : slot;
        count = s->cfg.saf ? nflits : 1;
    } else { /* the next flit of the packet arriving */
        slot = p->rx_slot;
        if (slot == NVS_NO_SLOT || s->slot_pkt[slot] != k || part >= k->parts || bytes != fb)
            sim_fatal("%s: port %d got flit %u of a packet that is not the one arriving", s->cfg.name, p->idx, part);
        dm = k->dst == SIM_PKT_GROUP ? s->mc[slot].dest_mask : 1ULL << k->dst;
        nflits = k->parts;
        count = 1;
        if (part + 1 == nflits) p->rx_slot = NVS_NO_SLOT;
    }
    const uint64_t copies = (uint64_t)__builtin_popcountll(dm);
    s->mcast_seen |= copies > 1;
    stage_push(s, p, nvs_flit_make(slot, (unsigned)p->idx, nflits, part) | (copies > 1 ? NVS_FLIT_MCAST : 0), dm, at, count);
    hold_slots(s, p, dm, count);
    /* accounted per message: the flits are presented one per cycle */
    s->copies_inside += copies * count;
    s->slots_held += (s->cfg.core.queue == XBAR_QUEUE_FIFO ? 1 : copies) * count;
    if (!s->h.active) sim_clock_wake(&s->h);
}

/* n freed slots of pool `type` at input i: back to the upstream, in
 * batches of `batch` (the caller's copy of cfg.credit_batch, which the
 * stores here would otherwise make the compiler reload). */
static inline void free_slots(nvswitch *s, int i, unsigned type, uint32_t n, uint32_t batch)
{
    nvs_pair *pl = nvs_pair_at(s, i, (int)type);
    const uint32_t held = pl->held, pend = pl->pend + n;
    if (held < n) sim_fatal("%s: port %d pool %u freed %u slots, holds %u", s->cfg.name, i, type, n, held);
    pl->held = held - n;
    /* Return when a batch is full, or when nothing more will be freed soon. */
    if (pend >= batch || held == n) {
        sim_link_return_credits(s->port[i].in, type, pend);
        pl->pend = 0;
    } else {
        pl->pend = pend;
    }
}

/* The slots the core freed this cycle (credit, credit_queue, credit_extra). */
static void return_credits(nvswitch *s, const xbar_out *o)
{
    const int n = s->n;
    /* Fan-out reads free extra slots, and only multicast flits are read so:
     * without one, credit_extra is all zero and not even scanned. */
    uint64_t extra_any = 0;
    for (int i = 0; s->mcast_seen && i < n; i++) extra_any |= o->credit_extra[i];
    uint64_t freed = (uint64_t)__builtin_popcountll(o->credit);
    for (int i = 0; extra_any && i < n; i++) freed += (uint64_t)__builtin_popcountll(o->credit_extra[i]);
    s->slots_held -= freed;
    if (s->credit_mode == SIM_CREDIT_NONE) return;
    const bool voq_pools = s->credit_mode == SIM_CREDIT_PER_DEST;
    const uint32_t batch = (uint32_t)s->cfg.credit_batch;
    for (uint64_t m = o->credit; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        free_slots(s, i, voq_pools ? o->credit_queue[i] : 0, 1, batch);
    }
    for (int i = 0; extra_any && i < n; i++) {
        uint64_t x = o->credit_extra[i];
        if (!x) continue;
        if (voq_pools)
            for (; x; x &= x - 1) free_slots(s, i, (unsigned)__builtin_ctzll(x), 1, batch);
        else
            free_slots(s, i, 0, (uint32_t)__builtin_popcountll(x), batch);
    }
}

/* Packet mode: pool (i, j)'s watch fired with this cycle's credits, so it
 * freed the slots the watch was armed for; free_slots returns them if the
 * per-flit rule would have at the last of those frees (no earlier free
 * could: the watch stops at the first that might), and the watch is armed
 * again. */
static inline void batch_fired(nvswitch *s, int i, int j, uint32_t batch)
{
    nvs_pair *pl = nvs_pair_at(s, i, j);
    free_slots(s, i, (unsigned)j, pl->armed, batch);
    arm_pool(s, i, j, pl, batch);
}

/* Packet mode's return_credits: the pools whose watch fired, in the order
 * return_credits frees slots (the matching's reads, then fan-out reads). */
static void return_batches(nvswitch *s, const xbar_out *o)
{
    const uint32_t batch = (uint32_t)s->cfg.credit_batch;
    uint64_t freed = (uint64_t)__builtin_popcountll(o->credit);
    for (uint64_t m = xbar_core_watch_fired(s->tl); m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        batch_fired(s, i, o->credit_queue[i], batch);
    }
    const uint64_t *extra = xbar_core_watch_fired_extra(s->tl);
    for (int i = 0; s->mcast_seen && i < s->n; i++) {
        freed += (uint64_t)__builtin_popcountll(o->credit_extra[i]);
        for (uint64_t m = extra ? extra[i] : 0; m; m &= m - 1) batch_fired(s, i, __builtin_ctzll(m), batch);
    }
    s->slots_held -= freed;
}

/* "P<src>.<seq> f<flit>/<flits>" */
static void trace_flit_label(nvswitch *s, sim_trace_var v, uint64_t word)
{
    const sim_pkt *k = s->slot_pkt[nvs_flit_slot(word)];
    sim_trace_strf(s->tr, v, "P%u.%llu f%u/%u", k->src, (unsigned long long)k->seq, nvs_flit_index(word), nvs_flit_nflits(word));
}

static _Noreturn void egress_fatal(const nvswitch *s, int i, int j, uint64_t word, unsigned expect)
{
    if (nvs_flit_src(word) != (unsigned)i)
        sim_fatal("%s: flit of source %u driven on output %d as coming from input %d", s->cfg.name, nvs_flit_src(word), j, i);
    sim_fatal("%s: output %d got flit %u of a packet from input %d, expected %u", s->cfg.name, j, nvs_flit_index(word), i, expect);
}

/* Store-and-forward: packet `word` (its last flit) goes down output j whole. */
static inline void send_packet(nvswitch *s, int j, uint64_t word, unsigned nflits)
{
    const uint32_t slot = nvs_flit_slot(word);
    sim_pkt *k = s->slot_pkt[slot];
    if (nvs_flit_mcast(word)) k = nvs_copy_to(s, k, j);
    /* the receiver reads it (both lines) a link's latency later, when it is out of cache */
    __builtin_prefetch(k);
    __builtin_prefetch((const char *)k + 64);
    sim_link_send(s->port[j].out, k, nflits * (uint32_t)s->cfg.flit_bytes);
    if (nvs_flit_mcast(word)) nvs_slot_mc_sent(s, slot, nflits);
    else nvs_slot_release(s, slot);
}

/* Wormhole: flit `word` goes down output j. A multicast packet's copy to j
 * is made with its first flit and carries the rest (flits of one (input,
 * output) pair leave in order, a packet's together). */
static inline void send_flit(nvswitch *s, int i, int j, uint64_t word)
{
    const uint32_t slot = nvs_flit_slot(word);
    const unsigned f = nvs_flit_index(word);
    sim_pkt *k = s->slot_pkt[slot];
    if (nvs_flit_mcast(word)) {
        if (!s->mc_copy) {
            s->mc_copy = calloc((size_t)s->n * XBAR_MAX_PORTS, sizeof *s->mc_copy);
            if (!s->mc_copy) sim_fatal("out of memory");
        }
        sim_pkt **c = &s->mc_copy[(size_t)i * XBAR_MAX_PORTS + (size_t)j];
        if ((f == 0) != (*c == NULL) || (*c && (*c)->seq != k->seq))
            sim_fatal("%s: output %d got flit %u of a multicast packet from input %d out of its order", s->cfg.name, j, f, i);
        if (f == 0) *c = nvs_copy_to(s, k, j);
        k = *c;
        if (f + 1 == nvs_flit_nflits(word)) *c = NULL;
    }
    __builtin_prefetch(k);
    if (f) sim_link_send_part(s->port[j].out, k, (uint32_t)s->cfg.flit_bytes, (uint16_t)f);
    else sim_link_send(s->port[j].out, k, (uint32_t)s->cfg.flit_bytes); /* specialised for part 0 */
    if (nvs_flit_mcast(word)) nvs_slot_mc_sent(s, slot, 1);
    else if (f + 1 == nvs_flit_nflits(word)) nvs_slot_release(s, slot);
}

/* Store-and-forward: flits of one (input, output) pair arrive in order, so
 * a counter per pair reassembles the packet, and the whole packet goes down
 * the output link as one message with its last flit. */
static inline void reassemble(nvswitch *s, nvs_pair *pair, int i, int j, uint64_t word)
{
    nvs_pair *pp = &pair[(size_t)i * XBAR_MAX_PORTS + (size_t)j];
    const unsigned f = pp->reasm, nflits = nvs_flit_nflits(word);
    if (nvs_flit_src_index(word) != nvs_flit_src_index_of((unsigned)i, f)) egress_fatal(s, i, j, word, f);
    if (f + 1 < nflits) {
        pp->reasm = (uint16_t)(f + 1);
        return;
    }
    pp->reasm = 0;
    send_packet(s, j, word, nflits);
}

/* Packet mode: a packet leaves with its last flit, which always ends a VOQ
 * run (no packet's first tag follows another's last, see nvs_flit_make); a
 * packet presented flit by flit may make more runs, where the reader
 * caught up with it. The flits before are counted, not looked at: the core
 * keeps a run's flits in order, and the drain's credit and copy accounting
 * sees any lost. */
static void egress_packets(nvswitch *s, const xbar_out *o)
{
    const uint64_t driven = (uint64_t)__builtin_popcountll(o->valid);
    s->copies_inside -= driven;
    s->reasm_flits += driven;
    const uint64_t last = o->valid & xbar_core_run_last(s->tl);
    /* the slots of the packets that may leave: their misses overlap */
    for (uint64_t m = last; m; m &= m - 1) __builtin_prefetch(&s->slot_pkt[nvs_flit_slot(o->out_data[__builtin_ctzll(m)])]);
    for (uint64_t m = last; m; m &= m - 1) {
        const int j = __builtin_ctzll(m), i = o->out_src[j];
        const uint64_t word = o->out_data[j];
        const unsigned nflits = nvs_flit_nflits(word);
        if (nvs_flit_src(word) != (unsigned)i) egress_fatal(s, i, j, word, 0);
        if (nvs_flit_index(word) + 1 != nflits) continue;
        if (s->reasm_flits < nflits)
            sim_fatal("%s: a packet of %u flits left output %d with %llu flits driven for it", s->cfg.name, nflits, j,
                      (unsigned long long)s->reasm_flits);
        s->reasm_flits -= nflits;
        send_packet(s, j, word, nflits);
    }
}

/* The flits the core drives this cycle go down the output links: wormhole,
 * one message per flit; store-and-forward, whole packets (reassemble). */
static void egress(nvswitch *s, const xbar_out *o)
{
    s->copies_inside -= (uint64_t)__builtin_popcountll(o->valid);
    nvs_pair *const pair = s->pair;
    if (s->cfg.saf && !s->tr) { /* the busy case, in a loop of its own */
        for (uint64_t m = o->valid; m; m &= m - 1) {
            const int j = __builtin_ctzll(m);
            reassemble(s, pair, o->out_src[j], j, o->out_data[j]);
        }
        return;
    }
    for (uint64_t m = o->valid; m; m &= m - 1) {
        const int j = __builtin_ctzll(m), i = o->out_src[j];
        const uint64_t word = o->out_data[j];
        nvs_port *p = &s->port[j];
        if (s->tr && p->tv_out_label) trace_flit_label(s, p->tv_out_label, word);
        if (s->cfg.saf) {
            reassemble(s, pair, i, j, word);
            continue;
        }
        if (nvs_flit_src(word) != (unsigned)i) egress_fatal(s, i, j, word, 0);
        send_flit(s, i, j, word);
    }
}

/* Values change only when they change (GTKWave shows runs, not per-cycle
 * re-emits); flit labels are cleared when their valid falls. */
static void trace_cycle(nvswitch *s)
{
    const xbar_out *o = &s->out;
    sim_trace_u64(s->tr, s->tv_matches, (uint64_t)__builtin_popcountll(o->match_in));
    sim_trace_u64(s->tr, s->tv_copies_out, (uint64_t)__builtin_popcountll(o->valid));
    for (int i = 0; i < s->n && i < 16; i++) {
        nvs_port *p = &s->port[i];
        uint8_t v;
        v = (uint8_t)(s->in.valid >> i & 1);
        if (v != p->last_in_valid) {
            sim_trace_u64(s->tr, p->tv_in_valid, v);
            if (!v) sim_trace_str(s->tr, p->tv_in_label, "");
            p->last_in_valid = v;
        }
        v = (uint8_t)(o->valid >> i & 1);
        if (v != p->last_out_valid) {
            sim_trace_u64(s->tr, p->tv_out_valid, v);
            if (!v) sim_trace_str(s->tr, p->tv_out_label, "");
            p->last_out_valid = v;
        }
        v = (uint8_t)(o->match_in >> i & 1);
        if (v != p->last_grant) { sim_trace_u64(s->tr, p->tv_grant, v); p->last_grant = v; }
        if (v && o->match_out[i] != p->last_grant_out) {
            sim_trace_u64(s->tr, p->tv_grant_out, o->match_out[i]);
            p->last_grant_out = o->match_out[i];
        }
        v = (uint8_t)((o->credit >> i & 1) || o->credit_extra[i]);
        if (v != p->last_credit) { sim_trace_u64(s->tr, p->tv_credit, v); p->last_credit = v; }
        uint32_t h = 0;
        for (int t = 0; t < s->n; t++) h += nvs_pair_at(s, i, t)->held;
        if (h != p->last_held) { sim_trace_u64(s->tr, p->tv_backlog, h); p->last_held = h; }
    }
}

static void step_core(nvswitch *s)
{
    s->ops->step(s->impl, &s->in, &s->out);
    s->core_cycles++;
}

/* A message that has presented nothing yet, starting in `cycle`: as one run
 * if the core takes it so (true), else the caller presents it per flit. */
static bool try_run(nvswitch *s, int i, uint64_t cycle)
{
    const uint32_t left = s->cur_left[i];
    if (left < 2 || left > NVS_RUN_MAX || !xbar_core_present_run(s->tl, i, s->in.in[i].data + 1, s->in.in[i].dest_mask, left))
        return false;
    s->run_mask |= 1ULL << i;
    s->run_end[i] = cycle + left;
    s->run_wheel[(cycle + left) % NVS_RUN_MAX] |= 1ULL << i;
    return true;
}

/* Present at most one flit per input: the oldest that arrived strictly
 * before this edge (so same-time event order cannot matter); a message that
 * starts now may go as one run instead (try_run), and an input whose run
 * ends now takes its next message. Returns the inputs that presented the
 * last flit of their message flit by flit: the next one may take its place
 * only after the core has read this one. */
static uint64_t present(nvswitch *s, sim_time_ps now, uint64_t cycle)
{
    const bool tr = s->tr != NULL;
    uint64_t valid = 0, done = 0;
    if (s->run_mask) { /* runs that ended: their inputs take their next messages */
        const uint64_t ended = s->run_wheel[cycle % NVS_RUN_MAX];
        s->run_wheel[cycle % NVS_RUN_MAX] = 0;
        s->run_mask &= ~ended;
        for (uint64_t m = ended; m; m &= m - 1) stage_next(s, __builtin_ctzll(m));
    }
    for (uint64_t m = s->stage_mask & ~s->run_mask; m; m &= m - 1) {
        const int i = __builtin_ctzll(m);
        if (s->cur_arrive_ps[i] >= now) continue;
        if (s->fresh_mask & m & -m) {
            s->fresh_mask &= ~(m & -m);
            if (s->runs && try_run(s, i, cycle)) continue;
        }
        valid |= m & -m; /* bit i */
        s->in.in[i].data++; /* the next flit of the message */
        if (tr && s->port[i].tv_in_label) trace_flit_label(s, s->port[i].tv_in_label, s->in.in[i].data);
        if (!--s->cur_left[i]) done |= m & -m;
    }
    s->in.valid = valid;
    return done;
}

static bool sw_cycle(void *ctx, uint64_t cycle)
{
    nvswitch *s = ctx;
    const sim_time_ps now = sim_now(s->k);
    /* After an idle stretch, step the empty core through the cycles it slept
     * so its state (e.g. the wavefront diagonal) matches an always-clocked
     * core. Nothing was inside, so nothing comes out. */
    if (s->core_cycles < cycle) {
        s->in.valid = 0;
        while (s->core_cycles < cycle) {
            step_core(s);
            if (s->out.valid || s->out.credit) sim_fatal("%s: an idle core produced output", s->cfg.name);
        }
    } else if (s->core_cycles > cycle) {
        sim_fatal("%s: core at cycle %llu ahead of the clock (%llu)", s->cfg.name, (unsigned long long)s->core_cycles,
                  (unsigned long long)cycle);
    }
    if (s->defer) nvs_defer_take(s);
    const uint64_t done = present(s, now, cycle);
    step_core(s);
    for (uint64_t m = done; m; m &= m - 1) stage_next(s, __builtin_ctzll(m));
    const xbar_out *o = &s->out;
    if (s->packets) {
        egress_packets(s, o);
        return_batches(s, o);
    } else {
        egress(s, o);
        return_credits(s, o);
    }
    if (s->tr) trace_cycle(s);
    const bool busy = s->stage_mask || s->copies_inside || s->slots_held;
    return s->defer ? nvs_defer_keep_promise(s, now, busy) : busy;
}

uint64_t nvswitch_copies_inside(const nvswitch *s)
{
    uint64_t c = s->copies_inside + s->reasm_flits; /* staged, queued or in the pipeline; packet mode: driven, packet not sent */
    for (int i = 0; i < s->n; i++)
        for (int t = 0; t < s->n; t++) c += nvs_pair_at(s, i, t)->reasm; /* SAF: waiting in egress reassembly */
    for (int i = 0; i < s->n; i++) {
        const nvs_port *p = &s->port[i];
        uint64_t left = s->cur_left[i]; /* a run's: the flits of cycles not stepped yet */
        if (s->run_mask >> i & 1) left = s->run_end[i] > s->core_cycles ? s->run_end[i] - s->core_cycles : 0;
        if (s->stage_mask >> i & 1) c += left * (uint64_t)__builtin_popcountll(s->in.in[i].dest_mask);
        for (uint32_t q = 0; q < p->st_len; q++) {
            const nvs_stage *e = &p->stage[(p->st_head + q) & (p->st_cap - 1)];
            c += (uint64_t)e->left * (uint64_t)__builtin_popcountll(e->dest_mask);
        }
    }
    return c;
}
