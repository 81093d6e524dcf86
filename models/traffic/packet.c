#include "models/traffic/packet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tpkt_pool_init(tpkt_pool *p) { memset(p, 0, sizeof *p); }

void tpkt_pool_free(tpkt_pool *p)
{
    for (uint32_t c = 0; c < p->n_chunks; c++) free(p->chunks[c]);
    free(p->chunks);
    free(p->free_idx);
    memset(p, 0, sizeof *p);
}

void tpkt_pool_grow(tpkt_pool *p)
{
    if (p->n_chunks == p->cap_chunks) {
        p->cap_chunks = p->cap_chunks ? 2 * p->cap_chunks : 8;
        p->chunks = realloc(p->chunks, p->cap_chunks * sizeof *p->chunks);
        if (!p->chunks) sim_fatal("out of memory");
    }
    if ((uint64_t)(p->n_chunks + 1) * TPKT_CHUNK > (1ULL << 24)) sim_fatal("packet pool: more than 2^24 live packets");
    tpkt *c = calloc(TPKT_CHUNK, sizeof *c);
    if (!c) sim_fatal("out of memory");
    uint32_t base = p->n_chunks * TPKT_CHUNK;
    p->chunks[p->n_chunks++] = c;
    if (p->cap_free < p->n_chunks * TPKT_CHUNK) {
        p->cap_free = p->n_chunks * TPKT_CHUNK;
        p->free_idx = realloc(p->free_idx, p->cap_free * sizeof *p->free_idx);
        if (!p->free_idx) sim_fatal("out of memory");
    }
    for (uint32_t k = TPKT_CHUNK; k-- > 0;) {
        c[k].idx = base + k;
        p->free_idx[p->n_free++] = base + k;
    }
}

void tpkt_release(tpkt_pool *p, tpkt *k)
{
    p->free_idx[p->n_free++] = k->idx;
    p->live--;
}

void tmsg_pool_init(tmsg_pool *p) { memset(p, 0, sizeof *p); }

void tmsg_pool_free(tmsg_pool *p)
{
    for (uint32_t c = 0; c < p->n_chunks; c++) free(p->chunks[c]);
    free(p->chunks);
    memset(p, 0, sizeof *p);
}

void tmsg_pool_grow(tmsg_pool *p)
{
    if (p->n_chunks == p->cap_chunks) {
        p->cap_chunks = p->cap_chunks ? 2 * p->cap_chunks : 8;
        p->chunks = realloc(p->chunks, p->cap_chunks * sizeof *p->chunks);
        if (!p->chunks) sim_fatal("out of memory");
    }
    tmsg *c = calloc(1024, sizeof *c);
    if (!c) sim_fatal("out of memory");
    p->chunks[p->n_chunks++] = c;
    for (int k = 1023; k >= 0; k--) tmsg_release(p, &c[k]);
}

void tmsg_label(const tpkt_pool *pp, const tmsg *m, char *buf, size_t n)
{
    const tpkt *k = tpkt_at(pp, m->pkt);
    int dests = __builtin_popcountll(k->dest_mask);
    char d[24];
    if (dests == 1) snprintf(d, sizeof d, "%d", __builtin_ctzll(k->dest_mask));
    else snprintf(d, sizeof d, "mc%d", dests);
    if (m->count == 1)
        snprintf(buf, n, "P%u.%u f%u/%u >%s", k->src, k->id, m->first, k->nflits, d);
    else
        snprintf(buf, n, "P%u.%u f%u-%u/%u >%s", k->src, k->id, m->first, m->first + m->count - 1, k->nflits, d);
}
