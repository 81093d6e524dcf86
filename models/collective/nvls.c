/* The NVLS all_reduce (NCCL's NVLink SHARP algorithm), per rank and channel,
 * on switches with a reduction unit (models/fabric/switch.h, node param
 * nvls=1: dgx-h100's NVSwitch-3 chips).
 *
 * Channel ch runs on NVLink port ch % ports at every rank, so its traffic
 * goes through the one switch that port leads to (dgx-h100: ports 0-4 nvs0,
 * 5-8 nvs1, 9-12 nvs2, 13-17 nvs3): the buffer is split over the switches
 * in proportion to the links each GPU has to them. Channel ch owns elements
 * [count ch/C, count (ch+1)/C), in chunks of chunk_bytes. Per chunk k, every
 * rank writes its input's chunk as a reduce contribution to the group of all
 * ranks (NVLink packets to the multicast address, keys (DATA, ch, k, burst)),
 * then a flag contribution (8 bytes, key (FLAG, ch, k)); the switch sums each
 * key's contributions and sends every rank the result, the flag's result
 * last (it is complete only after every rank's data: same link, in order).
 * A rank takes the chunk when the flag's result arrives (its data results
 * are there: checked), copies it to its output, and frees the slot with an
 * ack contribution (key (ACK, ch, k)): its result, at every rank, says every
 * rank has read slot k, which gives each sender its credit back -- the
 * ring's Simple protocol (slots, flags, acks), with the switch doing the
 * reduction and the multicast. Each rank sends and receives the buffer once.
 *
 * Values (check): the last message of a chunk's data carries the rank's
 * floats in an nvls_vals record (its first member a fabric_reduce_data); the
 * switch calls vals_combine to add one contribution's floats into another's
 * (in this model's code: the switch carries pointers only) and every rank's
 * result copy then points at the sum, which counts its readers. */
#include "models/collective/coll_impl.h"
#include "models/fabric/switch.h"
#include "sim/pdes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY(kind, ch, k) (((uint64_t)(kind) << 60) | ((uint64_t)(ch) << 52) | ((uint64_t)(k) << 20))
#define KEY_K(key) ((uint64_t)(((key) >> 20) & ((1ull << 32) - 1)))

typedef struct nvls_vals {
    fabric_reduce_data hdr;        /* first: the switch's handle on the values */
    unsigned refs;                 /* result copies that will read it (the ranks) */
    uint64_t len;
    float v[];
} nvls_vals;

typedef struct nvls_chan {
    coll_rank *rk;
    unsigned ch, port;
    uint64_t flow;                 /* every message of the channel: steers the results to port `port` at every rank */
    uint64_t lo, len, chunks;
    /* sender */
    uint64_t sent;                 /* chunks contributed */
    unsigned credits;              /* slots free at every rank */
    uint64_t data_bytes_sent, flags_sent, acks_recv;
    /* receiver */
    uint64_t recv_i;               /* next chunk's flag result expected */
    uint64_t recv_bytes, recv_bytes_total, results_recv;
    uint64_t acks_sent;
    nvls_vals *vals[COLL_MAX_SLOTS];
    bool finished;
    sim_time_ps done_ps;
} nvls_chan;

typedef struct nvls_rank {
    coll_rank *rk;
    nvls_chan *ch;
    unsigned chans_done;
    sim_time_ps done_ps;
} nvls_rank;

struct nvls_state {
    coll_comm *c;
    unsigned channels, ports;
    uint32_t group;                /* every rank's endpoint */
    uint64_t results_total;        /* result messages received, every rank, every run */
    nvls_rank rank[COLL_MAX_RANKS];
};

/* The switch node port p of rank r leads to, or -1. */
static int port_switch(const coll_comm *c, unsigned r, unsigned p)
{
    const topo *t = sim_fabric_topo(c->f);
    int peer = topo_peer(t, nvgpu_node(c->rank[r].g), p, NULL);
    return peer >= 0 && !strcmp(t->nodes[peer].kind->name, "switch") ? peer : -1;
}

bool coll_nvls_available(const coll_comm *c, char *why, size_t why_n)
{
    const topo *t = sim_fabric_topo(c->f);
    unsigned ports = nvgpu_ports(c->rank[0].g);
    for (unsigned p = 0; p < ports; p++)
        for (unsigned r = 0; r < c->n; r++) {
            int sw = port_switch(c, r, p);
            if (sw < 0 || !topo_node_param(t, (uint32_t)sw, "nvls", 0)) {
                snprintf(why, why_n, "GPU rank %u's NVLink %u does not lead to a switch with NVLS (a kind switch node with nvls=1)", r, p);
                return false;
            }
            if (sw != port_switch(c, 0, p)) {
                snprintf(why, why_n, "NVLink %u of ranks 0 and %u leads to different switches (NVLS needs port p of every GPU on one switch)", p, r);
                return false;
            }
        }
    if (c->cfg.transport && c->cfg.transport->size > 1) {
        snprintf(why, why_n, "NVLS runs in one process only (%u ranks)", c->cfg.transport->size);
        return false;
    }
    return true;
}

unsigned coll_nvls_channels(const coll_comm *c) { return c->cfg.channels ? c->cfg.channels : nvgpu_ports(c->rank[0].g); }
unsigned coll_nvls_port(const coll_comm *c, unsigned ch) { return ch % nvgpu_ports(c->rank[0].g); }
int coll_nvls_switch(const coll_comm *c, unsigned ch) { return port_switch(c, 0, coll_nvls_port(c, ch)); }

static struct nvls_state *nvls_state_new(coll_comm *c)
{
    struct nvls_state *ns = calloc(1, sizeof *ns);
    if (!ns) sim_fatal("nvls: out of memory");
    ns->c = c;
    ns->channels = coll_nvls_channels(c);
    ns->ports = nvgpu_ports(c->rank[0].g);
    uint32_t members[COLL_MAX_RANKS];
    for (unsigned r = 0; r < c->n; r++) members[r] = nvgpu_endpoint(c->rank[r].g);
    ns->group = sim_groups_add(sim_fabric_groups(c->f), members, c->n);
    for (unsigned r = 0; r < c->n; r++) {
        nvls_rank *nr = &ns->rank[r];
        nr->rk = &c->rank[r];
        nr->ch = calloc(ns->channels, sizeof *nr->ch);
        if (!nr->ch) sim_fatal("nvls: out of memory");
        for (unsigned ch = 0; ch < ns->channels; ch++) {
            nvls_chan *nc = &nr->ch[ch];
            nc->rk = nr->rk;
            nc->ch = ch;
            nc->port = coll_nvls_port(c, ch);
            /* the switch's ECMP picks the same link index towards every rank (its hash is of the flow and the switch), so
             * the label that sends rank 0's port to rank 1's port of the same number does so for every rank */
            nc->flow = coll_pick_flow(c, 0, 1, nc->port, ch, COLL_MSG_DATA);
        }
    }
    return ns;
}

void coll_nvls_free(coll_comm *c)
{
    struct nvls_state *ns = c->nvls;
    if (!ns) return;
    for (unsigned r = 0; r < c->n; r++) free(ns->rank[r].ch);
    free(ns);
    c->nvls = NULL;
}

static void vals_combine(fabric_reduce_data *acc, fabric_reduce_data *other)
{
    nvls_vals *a = (nvls_vals *)acc, *o = (nvls_vals *)other;
    if (a->len != o->len) sim_fatal("nvls: a key's contributions carry %llu and %llu floats", (unsigned long long)a->len, (unsigned long long)o->len);
    for (uint64_t i = 0; i < a->len; i++) a->v[i] += o->v[i];
    free(o);
}

static void vals_unref(nvls_vals *v)
{
    if (v && --v->refs == 0) free(v);
}

static coll_comm *comm_of(const nvls_chan *nc) { return nc->rk->cm; }

static uint64_t chunk_len(const nvls_chan *nc, uint64_t k)
{
    uint64_t e = comm_of(nc)->chunk_elems, lo = k * e;
    return nc->len - lo < e ? nc->len - lo : e;
}

static void maybe_done(nvls_chan *nc, nvls_rank *nr)
{
    coll_comm *c = comm_of(nc);
    if (nc->finished || nc->sent != nc->chunks || nc->recv_i != nc->chunks) return;
    nc->finished = true;
    nc->done_ps = sim_now(c->k);
    if (++nr->chans_done == c->nvls->channels) nr->done_ps = nc->done_ps;
}

static void try_send(nvls_chan *nc, nvls_rank *nr)
{
    coll_comm *c = comm_of(nc);
    coll_rank *rk = nc->rk;
    uint32_t group = c->nvls->group;
    while (nc->sent < nc->chunks && nc->credits) {
        uint64_t k = nc->sent++, len = chunk_len(nc, k), off = nc->lo + k * c->chunk_elems;
        nc->credits--;
        nvls_vals *v = NULL;
        if (c->carry) {
            v = malloc(sizeof *v + len * sizeof(float));
            if (!v) sim_fatal("nvls: out of memory");
            *v = (nvls_vals){ .hdr = { vals_combine }, .refs = c->n, .len = len };
            memcpy(v->v, rk->in + off, len * sizeof(float));
        }
        nvgpu_send_reduce(rk->g, nc->port, group, nc->flow, len * sizeof(float), COLL_MSG_DATA, KEY(COLL_MSG_DATA, nc->ch, k), v, false, 0);
        nvgpu_send_reduce(rk->g, nc->port, group, nc->flow, c->cfg.flag_bytes, COLL_MSG_FLAG, KEY(COLL_MSG_FLAG, nc->ch, k), NULL, false, 0);
        nc->data_bytes_sent += len * sizeof(float);
        nc->flags_sent++;
    }
    maybe_done(nc, nr);
}

/* Chunk j's result is complete here (its flag's result came): into the output, then the slot is free. */
static void take_result(nvls_chan *nc, nvls_rank *nr, uint64_t j)
{
    coll_comm *c = comm_of(nc);
    coll_rank *rk = nc->rk;
    uint64_t len = chunk_len(nc, j), off = nc->lo + j * c->chunk_elems;
    unsigned slot = (unsigned)(j % c->cfg.slots);
    nvls_vals *v = nc->vals[slot];
    nc->vals[slot] = NULL;
    if (c->carry) {
        if (!v || v->len != len) sim_fatal("nvls rank %u channel %u chunk %llu: result values missing", rk->r, nc->ch, (unsigned long long)j);
        /* the seeded bug: rank 0 drops the first chunk with data it receives */
        bool skip = c->cfg.inject == COLL_INJECT_SKIP_CHUNK && rk->r == 0 && len && !c->injected;
        if (skip) c->injected = true;
        else memcpy(rk->out + off, v->v, len * sizeof(float));
    }
    vals_unref(v);
    nvgpu_send_reduce(rk->g, nc->port, c->nvls->group, nc->flow, c->cfg.flag_bytes, COLL_MSG_ACK, KEY(COLL_MSG_ACK, nc->ch, j), NULL, false, 0);
    nc->acks_sent++;
    maybe_done(nc, nr);
}

static void nvls_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps)
{
    (void)g, (void)arrival_ps;
    nvls_rank *nr = ctx;
    coll_comm *c = nr->rk->cm;
    unsigned ch = (unsigned)(pkt->flow >> 40) - 1;
    if (ch >= c->nvls->channels) sim_fatal("nvls rank %u: a packet of flow %llx names channel %u", nr->rk->r, (unsigned long long)pkt->flow, ch);
    nvls_chan *nc = &nr->ch[ch];
    uint8_t kind = pkt->flags;
    uint32_t payload = pkt->payload_bytes;
    void *data = pkt->data;
    uint64_t key = pkt->seq;
    sim_pkt_free(pkt);
    nc->results_recv++;
    c->nvls->results_total++;
    if (kind == COLL_MSG_ACK) {   /* every rank has read that slot */
        nc->acks_recv++;
        if (++nc->credits > c->cfg.slots) sim_fatal("nvls rank %u channel %u: %u credits, more than its %u slots", nr->rk->r, ch, nc->credits, c->cfg.slots);
        try_send(nc, nr);
        return;
    }
    if (kind == COLL_MSG_DATA) {
        nc->recv_bytes += payload;
        nc->recv_bytes_total += payload;
        if (data) {
            unsigned slot = (unsigned)(KEY_K(key) % c->cfg.slots);
            if (nc->vals[slot]) sim_fatal("nvls rank %u channel %u: slot %u's values arrived twice", nr->rk->r, ch, slot);
            nc->vals[slot] = data;
        }
        return;
    }
    if (kind != COLL_MSG_FLAG) sim_fatal("nvls rank %u: a message of kind %u", nr->rk->r, kind);
    uint64_t j = nc->recv_i++;
    if (KEY_K(key) != j || key != KEY(COLL_MSG_FLAG, ch, j))
        sim_fatal("nvls rank %u channel %u: flag result of chunk %llu, expected %llu", nr->rk->r, ch, (unsigned long long)KEY_K(key), (unsigned long long)j);
    if (nc->recv_bytes != chunk_len(nc, j) * sizeof(float))
        sim_fatal("nvls rank %u channel %u chunk %llu: flag result after %llu of %llu data bytes", nr->rk->r, ch, (unsigned long long)j,
                  (unsigned long long)nc->recv_bytes, (unsigned long long)(chunk_len(nc, j) * sizeof(float)));
    nc->recv_bytes = 0;
    take_result(nc, nr, j);
}

static void nvls_on_sent(void *ctx, nvgpu *g, uint64_t tag) { (void)ctx, (void)g, (void)tag; }
static void nvls_on_reduced(void *ctx, nvgpu *g, uint64_t tag)
{
    (void)ctx, (void)g;
    sim_fatal("nvls: the GPU's reduction unit finished job %llu; NVLS reduces in the switch", (unsigned long long)tag);
}

static bool chan_quiet(const nvls_chan *nc, unsigned slots) { return nc->finished && nc->credits == slots; }

int coll_nvls_all_reduce(coll_comm *c, uint64_t count, coll_result *res, char *why, size_t why_n)
{
    memset(res, 0, sizeof *res);
    if (!coll_nvls_available(c, why, why_n)) return -1;
    if (!c->nvls) c->nvls = nvls_state_new(c);
    struct nvls_state *ns = c->nvls;
    c->op = COLL_ALL_REDUCE;
    c->count = count;
    c->chunk_elems = c->cfg.chunk_bytes / sizeof(float);
    c->carry = c->cfg.check;
    c->injected = false;
    unsigned slots = c->cfg.slots;
    for (unsigned r = 0; r < c->n; r++) {
        nvls_rank *nr = &ns->rank[r];
        coll_rank *rk = nr->rk;
        nr->chans_done = 0;
        nr->done_ps = 0;
        for (unsigned ch = 0; ch < ns->channels; ch++) {
            nvls_chan *nc = &nr->ch[ch];
            unsigned port = nc->port;
            uint64_t flow = nc->flow;
            memset(nc, 0, sizeof *nc);
            nc->rk = rk, nc->ch = ch, nc->port = port, nc->flow = flow;
            nc->lo = count * ch / ns->channels;
            nc->len = count * (ch + 1) / ns->channels - nc->lo;
            nc->chunks = (nc->len + c->chunk_elems - 1) / c->chunk_elems;
            nc->credits = slots;
        }
        if (c->carry) {
            rk->in = malloc((count ? count : 1) * sizeof(float));
            rk->out = calloc(count ? count : 1, sizeof(float));
            for (uint64_t i = 0; i < count; i++) rk->in[i] = coll_input_value(r, i);
        }
        nvgpu_set_handlers(rk->g, nvls_on_recv, nvls_on_sent, nvls_on_reduced, nr);
    }
    sim_time_ps t0 = sim_now(c->k);
    for (unsigned r = 0; r < c->n; r++)
        for (unsigned ch = 0; ch < ns->channels; ch++) try_send(&ns->rank[r].ch[ch], &ns->rank[r]);
    for (;;) {   /* to the end: every rank quiet (finished, every credit back), or nothing left to run (a deadlock, named below) */
        sim_time_ps now = sim_now(c->k), step = (now - t0) / 8;
        if (step < COLL_STEP_MIN_PS) step = COLL_STEP_MIN_PS;
        sim_fabric_run(c->f, now + step);
        bool quiet = true;
        for (unsigned r = 0; r < c->n && quiet; r++)
            for (unsigned ch = 0; ch < ns->channels && quiet; ch++) quiet = chan_quiet(&ns->rank[r].ch[ch], slots);
        if (quiet || sim_next_time(c->k) == SIM_TIME_MAX) break;
    }
    int status = 0;
    sim_time_ps end = t0;
    for (unsigned r = 0; r < c->n && !status; r++) {
        nvls_rank *nr = &ns->rank[r];
        if (nr->chans_done != ns->channels) {
            snprintf(why, why_n, "nvls rank %u: %u of %u channels finished (deadlock?)", r, nr->chans_done, ns->channels);
            status = -1;
            break;
        }
        if (nr->done_ps > end) end = nr->done_ps;
        for (unsigned ch = 0; ch < ns->channels; ch++) {
            const nvls_chan *nc = &nr->ch[ch];
            uint64_t bytes = nc->len * sizeof(float);
            res->data_bytes_sent += nc->data_bytes_sent, res->flags_sent += nc->flags_sent, res->acks_sent += nc->acks_sent;
            if (nc->credits != slots || nc->acks_recv != nc->chunks || nc->acks_sent != nc->chunks || nc->data_bytes_sent != bytes ||
                nc->recv_bytes_total != bytes || nc->recv_i != nc->chunks || nc->flags_sent != nc->chunks) {
                snprintf(why, why_n, "nvls rank %u channel %u: credits %u of %u, acks %llu received / %llu sent of %llu chunks, data %llu "
                         "sent / %llu received of %llu bytes, flags %llu sent / %llu received", r, ch, nc->credits, slots,
                         (unsigned long long)nc->acks_recv, (unsigned long long)nc->acks_sent, (unsigned long long)nc->chunks,
                         (unsigned long long)nc->data_bytes_sent, (unsigned long long)nc->recv_bytes_total, (unsigned long long)bytes,
                         (unsigned long long)nc->flags_sent, (unsigned long long)nc->recv_i);
                status = -1;
                break;
            }
        }
    }
    res->count = count;
    res->time_ps = end - t0;
    if (c->carry) {
        res->checked = true;
        if (!status)
            for (uint64_t i = 0; i < count; i++) {
                float want = 0;
                for (unsigned q = 0; q < c->n; q++) want += coll_input_value(q, i);
                for (unsigned r = 0; r < c->n; r++) res->wrong += c->rank[r].out[i] != want;
            }
    }
    for (unsigned r = 0; r < c->n; r++) {
        coll_rank *rk = &c->rank[r];
        free(rk->in);
        free(rk->out);
        rk->in = rk->out = NULL;
        for (unsigned ch = 0; ch < ns->channels; ch++)
            for (unsigned s = 0; s < COLL_MAX_SLOTS; s++) { vals_unref(ns->rank[r].ch[ch].vals[s]); ns->rank[r].ch[ch].vals[s] = NULL; }
        nvgpu_set_handlers(rk->g, ring_on_recv, ring_on_sent, ring_on_reduced, rk);   /* the ring's again */
    }
    return status;
}

uint64_t coll_nvls_results_received(const coll_comm *c) { return c->nvls ? c->nvls->results_total : 0; }
