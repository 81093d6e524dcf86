/* Packets across ranks: the codecs of cut fabric links (fabric_cut.h). */
#include "sim/fabric_cut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A packet on the wire between ranks: the common fields, which part this is,
 * and the sender's address of the original (unique while it is out: the key
 * that ties the parts of one packet together). The extension follows. */
typedef struct pkt_wire {
    uint32_t src, dst, group, wire_bytes, payload_bytes, ext_bytes;
    uint8_t tc, vc, ecn, flags;
    uint16_t hops, parts, part, pad;
    uint64_t flow, seq, created_ps, injected_ps, key;
} pkt_wire;

typedef struct open_pkt {
    uint64_t key;
    sim_pkt *pkt;
} open_pkt;

struct sim_fabric_cut_rx {
    sim_pdes_codec codec;
    sim_pkt_pool pool;
    bool pool_ready;
    open_pkt *open;            /* packets with parts still to come */
    size_t n_open, cap_open;
    char owner[160];
};

static void encode(void *ctx, const sim_link_msg *m, sim_pdes_buf *b)
{
    (void)ctx;
    sim_pkt *k = m->msg;
    if (k->data) sim_fatal("fabric: packet %u -> %u carries its model's data pointer: it cannot cross ranks", k->src, k->dst);
    pkt_wire w = { .src = k->src, .dst = k->dst, .group = k->group, .wire_bytes = k->wire_bytes, .payload_bytes = k->payload_bytes,
                   .ext_bytes = k->pool->ext_bytes, .tc = k->tc, .vc = k->vc, .ecn = k->ecn, .flags = k->flags, .hops = k->hops,
                   .parts = k->parts, .part = m->part, .flow = k->flow, .seq = k->seq, .created_ps = k->created_ps,
                   .injected_ps = k->injected_ps, .key = (uint64_t)(uintptr_t)k };
    sim_pdes_buf_put(b, &w, sizeof w);
    if (w.ext_bytes) sim_pdes_buf_put(b, sim_pkt_ext_const(k), w.ext_bytes);
    /* handed over: in one process the receiver would free it; here its last part has left */
    if ((unsigned)m->part + 1 >= k->parts) sim_pkt_free(k);
}

static const sim_pdes_codec send_codec = { encode, NULL, NULL };

static void *decode(void *ctx, const unsigned char *d, size_t n)
{
    sim_fabric_cut_rx *rx = ctx;
    pkt_wire w;
    if (n < sizeof w) sim_fatal("fabric: %s: a packet record of %zu bytes", rx->owner, n);
    memcpy(&w, d, sizeof w);
    if (n != sizeof w + w.ext_bytes) sim_fatal("fabric: %s: a packet record of %zu bytes, %u of extension", rx->owner, n, w.ext_bytes);
    if (w.part) {   /* a later part of a packet already made here */
        for (size_t i = 0; i < rx->n_open; i++)
            if (rx->open[i].key == w.key) {
                sim_pkt *k = rx->open[i].pkt;
                if ((unsigned)w.part + 1 >= w.parts) rx->open[i] = rx->open[--rx->n_open];
                return k;
            }
        sim_fatal("fabric: %s: part %u of a packet whose first part never came", rx->owner, w.part);
    }
    if (!rx->pool_ready) {
        sim_pkt_pool_init_ext(&rx->pool, rx->owner, w.ext_bytes);
        rx->pool_ready = true;
    }
    if (rx->pool.ext_bytes != w.ext_bytes)
        sim_fatal("fabric: %s: packets with %u and %u bytes of extension on one link", rx->owner, rx->pool.ext_bytes, w.ext_bytes);
    sim_pkt *k = sim_pkt_alloc(&rx->pool);
    k->src = w.src, k->dst = w.dst, k->group = w.group, k->wire_bytes = w.wire_bytes, k->payload_bytes = w.payload_bytes;
    k->tc = w.tc, k->vc = w.vc, k->ecn = w.ecn, k->flags = w.flags, k->hops = w.hops, k->parts = w.parts;
    k->flow = w.flow, k->seq = w.seq, k->created_ps = w.created_ps, k->injected_ps = w.injected_ps;
    if (w.ext_bytes) memcpy(sim_pkt_ext(k), d + sizeof w, w.ext_bytes);
    if (w.parts > 1) {
        if (rx->n_open == rx->cap_open) {
            rx->cap_open = rx->cap_open ? 2 * rx->cap_open : 8;
            rx->open = realloc(rx->open, rx->cap_open * sizeof *rx->open);
        }
        rx->open[rx->n_open++] = (open_pkt){ w.key, k };
    }
    return k;
}

const sim_pdes_codec *sim_fabric_cut_send_codec(void) { return &send_codec; }

sim_fabric_cut_rx *sim_fabric_cut_rx_new(const char *owner)
{
    sim_fabric_cut_rx *rx = calloc(1, sizeof *rx);
    snprintf(rx->owner, sizeof rx->owner, "%s", owner);
    rx->codec = (sim_pdes_codec){ encode, decode, rx };
    return rx;
}

const sim_pdes_codec *sim_fabric_cut_rx_codec(sim_fabric_cut_rx *rx) { return &rx->codec; }

void sim_fabric_cut_rx_free(sim_fabric_cut_rx *rx)
{
    if (!rx) return;
    if (rx->pool_ready) sim_pkt_pool_free(&rx->pool);
    free(rx->open);
    free(rx);
}
