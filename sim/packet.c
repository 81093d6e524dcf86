/* Packet pools and multicast groups (sim/packet.h). */
#include "sim/packet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_PKT_CHUNK 1024

void sim_pkt_pool_init(sim_pkt_pool *p, const char *owner)
{
    *p = (sim_pkt_pool){ .owner = owner ? owner : "?" };
}

void sim_pkt_pool_grow(sim_pkt_pool *p)
{
    if (p->n_chunks == p->cap_chunks) {
        p->cap_chunks = p->cap_chunks ? 2 * p->cap_chunks : 8;
        p->chunks = realloc(p->chunks, p->cap_chunks * sizeof *p->chunks);
        if (!p->chunks) sim_fatal("out of memory");
    }
    /* Line-aligned: a 96-byte packet then spans two cache lines, not three. */
    sim_pkt *c = aligned_alloc(64, SIM_PKT_CHUNK * sizeof *c);
    if (!c) sim_fatal("out of memory");
    memset(c, 0, SIM_PKT_CHUNK * sizeof *c);
    p->chunks[p->n_chunks++] = c;
    /* Pushed in reverse, so the first allocations come in address order. */
    for (size_t i = SIM_PKT_CHUNK; i-- > 0;) {
        c[i].pool = p;
        c[i].next_free = p->free_list;
        p->free_list = &c[i];
    }
}

static void pool_release(sim_pkt_pool *p)
{
    for (uint32_t i = 0; i < p->n_chunks; i++) free(p->chunks[i]);
    free(p->chunks);
    *p = (sim_pkt_pool){ .owner = p->owner };
}

void sim_pkt_pool_free(sim_pkt_pool *p)
{
    if (p->live)
        sim_fatal("packet pool of %s freed with %llu packets still out (a model lost or kept packets)", p->owner,
                  (unsigned long long)p->live);
    pool_release(p);
}


void sim_pkt_pool_leak_ok(sim_pkt_pool *p) { pool_release(p); }

sim_pkt *sim_pkt_clone(sim_pkt_pool *p, const sim_pkt *k)
{
    sim_pkt *c = sim_pkt_alloc(p);
    sim_pkt_pool *own = c->pool;
    uint64_t id = c->id;
    *c = *k;
    c->pool = own;
    c->id = id;
    c->next_free = NULL;
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
