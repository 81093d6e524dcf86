/* Packets of a header flit plus data flits, shared by endpoints and switches.
 * Packets live in a chunked pool (stable addresses, a free list, nothing
 * allocated per flit in steady state); a flit is (packet index, flit index),
 * packed into the 64-bit word the crossbar core carries as opaque data. */
#ifndef TRAFFIC_PACKET_H
#define TRAFFIC_PACKET_H

#include "sim/kernel.h"

#include <stdint.h>

typedef struct tpkt {
    uint32_t idx;            /* own pool index */
    uint16_t src;            /* source port */
    uint16_t nflits;         /* header + data flits (<= TPKT_MAX_FLITS) */
    uint64_t dest_mask;      /* bit j: destination port j */
    uint64_t seq0;           /* per-source flit sequence number of flit 0 */
    sim_time_ps created_ps;  /* when the source generated it */
    uint32_t payload_bytes;
    uint32_t copies_left;    /* flit copies not yet delivered (nflits x destinations) */
    uint32_t msg;            /* message tag (fan-out test); 0 = background */
    uint32_t id;             /* per-source packet number, for labels */
} tpkt;

#define TPKT_MAX_FLITS 255
#define TPKT_CHUNK 4096

typedef struct tpkt_pool {
    tpkt **chunks;
    uint32_t n_chunks, cap_chunks;
    uint32_t *free_idx;
    uint32_t n_free, cap_free;
    uint64_t live;
} tpkt_pool;

void tpkt_pool_init(tpkt_pool *p);
void tpkt_pool_free(tpkt_pool *p);
/* Adds a chunk of free records (tpkt_alloc, when none is left). */
void tpkt_pool_grow(tpkt_pool *p);
void tpkt_release(tpkt_pool *p, tpkt *k);
static inline tpkt *tpkt_at(const tpkt_pool *p, uint32_t idx) { return &p->chunks[idx / TPKT_CHUNK][idx % TPKT_CHUNK]; }
/* A zeroed record (but its idx). Inline: one per packet on the hot path. */
static inline tpkt *tpkt_alloc(tpkt_pool *p)
{
    if (!p->n_free) tpkt_pool_grow(p);
    tpkt *k = tpkt_at(p, p->free_idx[--p->n_free]);
    const uint32_t idx = k->idx;
    *k = (tpkt){ .idx = idx };
    p->live++;
    return k;
}

/* Destinations in a mask: most packets are unicast, and a popcount may be a
 * library call on the baseline x86-64 target. */
static inline unsigned tpkt_dest_count(uint64_t mask)
{
    return (mask & (mask - 1)) ? (unsigned)__builtin_popcountll(mask) : (unsigned)(mask != 0);
}

/* Flit word: flit index [7:0], packet flits [15:8], source port [23:16],
 * packet pool index [55:24]. What a switch needs per flit travels in the word,
 * so the packet record (likely out of cache) is read only at the ends. */
static inline uint64_t tflit_make(uint32_t idx, unsigned src, unsigned nflits, unsigned flit)
{
    return (uint64_t)idx << 24 | (uint64_t)(src & 0xff) << 16 | (uint64_t)(nflits & 0xff) << 8 | (flit & 0xff);
}
static inline uint64_t tflit_word(const tpkt *k, unsigned flit) { return tflit_make(k->idx, k->src, k->nflits, flit); }
static inline uint32_t tflit_pkt(uint64_t word) { return (uint32_t)(word >> 24); }
static inline unsigned tflit_index(uint64_t word) { return (unsigned)(word & 0xff); }
static inline unsigned tflit_nflits(uint64_t word) { return (unsigned)(word >> 8 & 0xff); }
static inline unsigned tflit_src(uint64_t word) { return (unsigned)(word >> 16 & 0xff); }
/* Source and flit index together, to check both with one compare. */
static inline uint64_t tflit_src_index(uint64_t word) { return word & 0xff00ff; }
static inline uint64_t tflit_src_index_of(unsigned src, unsigned flit) { return (uint64_t)(src & 0xff) << 16 | (flit & 0xff); }

/* What a link carries: flits [first, first+count) of one packet (one flit in
 * wormhole mode, the whole packet in store-and-forward mode). Pooled too.
 * It repeats the packet's source, size and the destinations its flits go to
 * from the sender (a switch: the output), so that a switch can take a
 * message in without reading the packet's record. */
typedef struct tmsg {
    uint32_t pkt;
    uint8_t first, count;            /* <= TPKT_MAX_FLITS */
    uint8_t src, nflits;             /* the packet's */
    union {
        uint64_t dest_mask;          /* while sent */
        struct tmsg *next_free;      /* while free */
    } u;
} tmsg;

typedef struct tmsg_pool {
    tmsg **chunks;
    uint32_t n_chunks, cap_chunks;
    tmsg *free_list;
    const tpkt_pool *prefetch_pkts; /* see tmsg_pool_prefetch_packets; NULL: off */
} tmsg_pool;

void tmsg_pool_init(tmsg_pool *p);
/* From now on tmsg_alloc prefetches the record (in pp) of the packet a new
 * message names: the receiver reads it (a sink: source, sequence, creation
 * time) a link's serialisation and latency later, and in a big, busy network
 * it is long out of cache by the time a switch sends the packet on. */
static inline void tmsg_pool_prefetch_packets(tmsg_pool *p, const tpkt_pool *pp) { p->prefetch_pkts = pp; }
void tmsg_pool_free(tmsg_pool *p);
/* Adds a chunk of free messages (tmsg_alloc, when none is left). */
void tmsg_pool_grow(tmsg_pool *p);
static inline void tmsg_release(tmsg_pool *p, tmsg *m)
{
    m->u.next_free = p->free_list;
    p->free_list = m;
}
/* Flits [first, first + count) of packet `pkt` (of `nflits` flits, from
 * port `src`), going to `dest_mask`. Inline: two per packet (one per link
 * message) on the hot path. */
static inline tmsg *tmsg_alloc(tmsg_pool *p, uint32_t pkt, unsigned first, unsigned count, unsigned src, unsigned nflits,
                               uint64_t dest_mask)
{
    if (!p->free_list) tmsg_pool_grow(p);
    tmsg *m = p->free_list;
    p->free_list = m->u.next_free;
    m->pkt = pkt;
    m->first = (uint8_t)first;
    m->count = (uint8_t)count;
    m->src = (uint8_t)src;
    m->nflits = (uint8_t)nflits;
    m->u.dest_mask = dest_mask;
    if (p->prefetch_pkts) __builtin_prefetch(tpkt_at(p->prefetch_pkts, pkt));
    return m;
}

/* Wave label of a message: "P<src>.<id> f<first>[-<last>]/<n> ><dests>". */
void tmsg_label(const tpkt_pool *pp, const tmsg *m, char *buf, size_t n);

#endif
