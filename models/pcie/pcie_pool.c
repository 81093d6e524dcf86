/* The packet pool of one PCIe port (packets it sends; the receiver returns
 * each to its sender's pool) and the packet labels for waves. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"

/* ---- pool ------------------------------------------------------------------ */
#define POOL_BLOCK 1024

void pcie_pool_init(pcie_pool *pool) { memset(pool, 0, sizeof *pool); }

static void pool_keep_block(pcie_pool *pool, void *b)
{
    if (pool->n_blocks == pool->cap_blocks) {
        pool->cap_blocks = pool->cap_blocks ? 2 * pool->cap_blocks : 16;
        pool->blocks = realloc(pool->blocks, pool->cap_blocks * sizeof *pool->blocks);
        if (!pool->blocks) sim_fatal("out of memory");
    }
    pool->blocks[pool->n_blocks++] = b;
}

void pcie_pool_grow(pcie_pool *pool)
{
    pcie_pkt *b = calloc(POOL_BLOCK, sizeof *b);
    if (!b) sim_fatal("out of memory");
    pool_keep_block(pool, b);
    for (size_t i = 0; i < POOL_BLOCK; i++) {
        b[i].next_free = pool->free_pkts;
        pool->free_pkts = &b[i];
    }
}

pcie_flit *pcie_flit_alloc(pcie_pool *pool)
{
    if (!pool->n_free_flits) {
        pcie_flit *b = calloc(64, sizeof *b);
        if (!b) sim_fatal("out of memory");
        pool_keep_block(pool, b);
        pool->total_flits += 64;
        /* the free list must hold every flit ever made: they may all come back */
        if (pool->cap_free_flits < pool->total_flits) {
            pool->cap_free_flits = 2 * pool->total_flits;
            pool->free_flits = realloc(pool->free_flits, pool->cap_free_flits * sizeof *pool->free_flits);
            if (!pool->free_flits) sim_fatal("out of memory");
        }
        for (size_t i = 0; i < 64; i++) pool->free_flits[pool->n_free_flits++] = &b[i];
    }
    return pool->free_flits[--pool->n_free_flits];
}

void pcie_pool_free(pcie_pool *pool)
{
    for (size_t i = 0; i < pool->n_blocks; i++) free(pool->blocks[i]);
    free(pool->blocks);
    free(pool->free_flits);
    memset(pool, 0, sizeof *pool);
}

/* ---- labels for waves ------------------------------------------------------------ */
const char *const pcie_cls_name[PCIE_FC_CLASSES] = { "P", "NP", "Cpl" };
static const char *const tlp_name[4] = { "MWr", "MRd", "CplD", "Msg" };

void pcie_pkt_label(const void *msg, char *buf, size_t n)
{
    const pcie_pkt *p = msg;
    const char *bad = p->corrupted ? "!" : "";
    switch (p->kind) {
    case PCIE_PKT_TLP:
        snprintf(buf, n, "%s%s%s s%u %uB", bad, p->replayed ? "R:" : "", tlp_name[p->tlp.type], p->seq, p->tlp.len);
        break;
    case PCIE_PKT_ACK: snprintf(buf, n, "%sAck %u", bad, p->seq); break;
    case PCIE_PKT_NAK: snprintf(buf, n, "%sNak %u", bad, p->seq); break;
    case PCIE_PKT_UPDATEFC:
        snprintf(buf, n, "%sUpdFC-%s h%u d%u", bad, pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc);
        break;
    case PCIE_PKT_INITFC1: snprintf(buf, n, "InitFC1-%s h%u d%u", pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_INITFC2: snprintf(buf, n, "InitFC2-%s h%u d%u", pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_SKP: snprintf(buf, n, "SKP"); break;
    case PCIE_PKT_TS: snprintf(buf, n, "TS1 (Recovery)"); break;
    case PCIE_PKT_FLIT: {
        const pcie_flit *f = p->flit;
        const char *ak = p->dlp.acknak == 1 ? " Ack" : p->dlp.acknak == 2 ? " Nak" : "";
        if (f && f->payload)
            snprintf(buf, n, "%s%sFlit %u %uT%s%s", bad, p->replayed ? "R:" : "", f->seq, f->n_tlps, ak,
                     p->dlp.fc_valid ? " FC" : "");
        else
            snprintf(buf, n, "%sIdleFlit%s%s", bad, ak, p->dlp.fc_valid ? " FC" : "");
        break;
    }
    default: snprintf(buf, n, "?"); break;
    }
}
