/* Packet pools and multicast groups (sim/packet.h). */
#include "sim/packet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_PKT_CHUNK 1024

void sim_pkt_pool_init(sim_pkt_pool *p, const char *owner) { sim_pkt_pool_init_ext(p, owner, 0); }

void sim_pkt_pool_init_ext(sim_pkt_pool *p, const char *owner, uint32_t ext_bytes)
{
    size_t rec = ext_bytes ? SIM_PKT_EXT_OFFSET + ext_bytes : sizeof(sim_pkt);
    rec = (rec + SIM_PKT_EXT_ALIGN - 1) / SIM_PKT_EXT_ALIGN * SIM_PKT_EXT_ALIGN;
    if (rec > UINT32_MAX) sim_fatal("packet pool of %s: extension of %u bytes is too large", owner ? owner : "?", ext_bytes);
    *p = (sim_pkt_pool){ .owner = owner ? owner : "?", .ext_bytes = ext_bytes, .stride = (uint32_t)rec };
}

void sim_pkt_pool_grow(sim_pkt_pool *p)
{
    if (p->n_chunks == p->cap_chunks) {
        p->cap_chunks = p->cap_chunks ? 2 * p->cap_chunks : 8;
        p->chunks = realloc(p->chunks, p->cap_chunks * sizeof *p->chunks);
        if (!p->chunks) sim_fatal("out of memory");
    }
    if (!p->stride) p->stride = sizeof(sim_pkt);   /* a zeroed pool: no extension */
    /* Line-aligned chunks: a 96-byte packet then spans two cache lines, not
     * three; records of stride bytes (a multiple of 16) stay 16-aligned. */
    size_t chunk_bytes = ((size_t)SIM_PKT_CHUNK * p->stride + 63) & ~(size_t)63;
    unsigned char *c = aligned_alloc(64, chunk_bytes);
    if (!c) sim_fatal("out of memory");
    memset(c, 0, chunk_bytes);
    p->chunks[p->n_chunks++] = c;
    /* Pushed in reverse, so the first allocations come in address order. */
    for (size_t i = SIM_PKT_CHUNK; i-- > 0;) {
        sim_pkt *r = (sim_pkt *)(void *)(c + i * p->stride);
        r->pool = p;
        r->next_free = p->free_list;
        p->free_list = r;
    }
}

static void pool_release(sim_pkt_pool *p)
{
    for (uint32_t i = 0; i < p->n_chunks; i++) free(p->chunks[i]);
    free(p->chunks);
    *p = (sim_pkt_pool){ .owner = p->owner, .ext_bytes = p->ext_bytes, .stride = p->stride };
}

void sim_pkt_pool_free(sim_pkt_pool *p)
{
    if (p->live)
        sim_fatal("packet pool of %s freed with %llu packets still out (a model lost or kept packets)", p->owner,
                  (unsigned long long)p->live);
    pool_release(p);
}

void sim_pkt_set_add(sim_pkt *k, void *set)
{
    sim_pkt_set *s = set;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->pkt = realloc(s->pkt, s->cap * sizeof *s->pkt);
        if (!s->pkt) sim_fatal("out of memory");
    }
    s->pkt[s->n++] = k;
}

void sim_pkt_set_add_msg(void *msg, void *set) { sim_pkt_set_add(msg, set); }

static int cmp_pkt_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(sim_pkt *const *)a, y = (uintptr_t)*(sim_pkt *const *)b;
    return x < y ? -1 : x > y;
}

void sim_pkt_set_free_all(sim_pkt_set *s)
{
    if (s->n) qsort(s->pkt, s->n, sizeof *s->pkt, cmp_pkt_ptr);
    for (size_t i = 0; i < s->n; i++)
        if (i == 0 || s->pkt[i] != s->pkt[i - 1]) sim_pkt_free(s->pkt[i]);
    free(s->pkt);
    *s = (sim_pkt_set){ 0 };
}

sim_pkt *sim_pkt_clone(sim_pkt_pool *p, const sim_pkt *k)
{
    uint32_t ext = k->pool->ext_bytes;
    if (ext > p->ext_bytes)
        sim_fatal("packet of %s (extension %u bytes) cloned into the pool of %s (extension %u bytes)", k->pool->owner, ext,
                  p->owner, p->ext_bytes);
    sim_pkt *c = sim_pkt_alloc(p);
    sim_pkt_pool *own = c->pool;
    uint64_t id = c->id;
    *c = *k;
    c->pool = own;
    c->id = id;
    c->next_free = NULL;
    if (ext) memcpy(sim_pkt_ext(c), sim_pkt_ext_const(k), ext);
    return c;
}

struct sim_groups {
    uint32_t *members;      /* every group's members, back to back */
    uint32_t *first, *count;/* per id (index 0 unused) */
    uint32_t n_ids, cap_ids, n_members, cap_members;
};

sim_groups *sim_groups_new(void)
{
    sim_groups *g = calloc(1, sizeof *g);
    if (!g) sim_fatal("out of memory");
    g->n_ids = 1;
    return g;
}

void sim_groups_free(sim_groups *g)
{
    if (!g) return;
    free(g->members);
    free(g->first);
    free(g->count);
    free(g);
}

uint32_t sim_groups_add(sim_groups *g, const uint32_t *members, unsigned n)
{
    if (g->n_ids == g->cap_ids || !g->first) {
        g->cap_ids = g->cap_ids ? 2 * g->cap_ids : 16;
        g->first = realloc(g->first, g->cap_ids * sizeof *g->first);
        g->count = realloc(g->count, g->cap_ids * sizeof *g->count);
        if (!g->first || !g->count) sim_fatal("out of memory");
    }
    while (g->n_members + n > g->cap_members) {
        g->cap_members = g->cap_members ? 2 * g->cap_members : 64;
        g->members = realloc(g->members, g->cap_members * sizeof *g->members);
        if (!g->members) sim_fatal("out of memory");
    }
    uint32_t id = g->n_ids++;
    g->first[id] = g->n_members;
    g->count[id] = n;
    if (n) memcpy(g->members + g->n_members, members, n * sizeof *members);
    g->n_members += n;
    return id;
}

uint32_t sim_groups_intern(sim_groups *g, const uint32_t *members, unsigned n)
{
    /* Linear: groups are few; a switch interns one subset per port. */
    for (uint32_t id = 1; id < g->n_ids; id++)
        if (g->count[id] == n && (!n || !memcmp(g->members + g->first[id], members, n * sizeof *members))) return id;
    return sim_groups_add(g, members, n);
}

const uint32_t *sim_groups_members(const sim_groups *g, uint32_t id, unsigned *n)
{
    if (!g || id == 0 || id >= g->n_ids) sim_fatal("multicast group %u does not exist", id);
    *n = g->count[id];
    return g->members + g->first[id];
}

uint64_t sim_groups_mask64(const sim_groups *g, uint32_t id)
{
    unsigned n;
    const uint32_t *m = sim_groups_members(g, id, &n);
    uint64_t mask = 0;
    for (unsigned i = 0; i < n; i++)
        if (m[i] < 64) mask |= 1ull << m[i];
    return mask;
}

void sim_pkt_label(const sim_pkt *k, char *buf, size_t n)
{
    if (k->dst == SIM_PKT_GROUP)
        snprintf(buf, n, "P%u.%llu %u>g%u %uB", k->src, (unsigned long long)k->seq, k->src, k->group, k->wire_bytes);
    else
        snprintf(buf, n, "P%u.%llu %u>%u %uB", k->src, (unsigned long long)k->seq, k->src, k->dst, k->wire_bytes);
}
