/* The switch's reduction unit (switch_nvls.h): a bounded table of partial
 * keys, a wait list for new keys while it is full, and a FIFO server. */
#include "models/fabric/switch_nvls.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nv_contrib {
    sim_pkt *pkt;
    void *buf;                     /* the switch's buffer record (credits held until the result copy leaves) */
    unsigned in_port;
    sim_time_ps eligible_ps;
    struct nv_contrib *next;
} nv_contrib;

/* One key's contributions: partial in the table, complete in the server's queue. */
typedef struct nv_set {
    uint32_t group;
    uint64_t seq;
    unsigned have, need;
    uint64_t bytes;                /* payload of its contributions */
    nv_contrib *head, *tail;
    sim_time_ps ready_ps, done_ps;
    struct nv_set *next;
} nv_set;

struct sw_nvls {
    const sim_groups *g;
    char name[TOPO_NAME_MAX + 1];
    double GBps;
    sim_time_ps latency_ps;
    uint32_t max_sets;
    nv_set **slot;                 /* open addressing over (group, seq), 2 x max_sets rounded up to a power of two */
    size_t cap;
    uint32_t n_sets;               /* keys held: partial in the table, or in the server (the bound: max_sets) */
    nv_contrib *wait_head, *wait_tail;   /* new keys while the table is full, in arrival order */
    nv_set *q_head, *q_tail;       /* complete sets in the server, in order of their ends */
    sim_time_ps unit_free_ps;
    nv_contrib *free_c;
    nv_set *free_s;
    uint64_t contribs, consumed, results, held, table_waits, most_sets;
    sim_time_ps busy_ps;
};

static uint64_t key_hash(uint32_t group, uint64_t seq)
{
    uint64_t k = seq * 0x9e3779b97f4a7c15ull ^ ((uint64_t)group << 32 | group);
    k ^= k >> 31;
    k *= 0xbf58476d1ce4e5b9ull;
    return k ^ (k >> 29);
}

sw_nvls *sw_nvls_new(const sim_groups *g, const fabric_switch_cfg *cfg, const char *name)
{
    sw_nvls *u = calloc(1, sizeof *u);
    if (!u) sim_fatal("out of memory");
    u->g = g;
    snprintf(u->name, sizeof u->name, "%s", name);
    u->GBps = cfg->nvls_reduce_GBps;
    u->latency_ps = (sim_time_ps)llround(cfg->nvls_latency_ns * 1000.0);
    u->max_sets = cfg->nvls_table_entries;
    for (u->cap = 16; u->cap < 2 * (size_t)u->max_sets; u->cap *= 2) {}
    u->slot = calloc(u->cap, sizeof *u->slot);
    if (!u->slot) sim_fatal("out of memory");
    return u;
}

static void free_list_s(nv_set *s)
{
    while (s) { nv_set *n = s->next; free(s); s = n; }
}
static void free_list_c(nv_contrib *c)
{
    while (c) { nv_contrib *n = c->next; free(c); c = n; }
}

void sw_nvls_free(sw_nvls *u)
{
    if (!u) return;
    /* what is still held was given back by the fabric's teardown (for_each_held); only the records go */
    for (size_t i = 0; i < u->cap; i++)
        if (u->slot[i]) { free_list_c(u->slot[i]->head); free(u->slot[i]); }
    for (nv_set *s = u->q_head; s; s = s->next) free_list_c(s->head);
    free_list_s(u->q_head);
    free_list_c(u->wait_head);
    free_list_c(u->free_c);
    free_list_s(u->free_s);
    free(u->slot);
    free(u);
}

static size_t find_slot(const sw_nvls *u, uint32_t group, uint64_t seq)
{
    size_t i = key_hash(group, seq) & (u->cap - 1);
    while (u->slot[i] && (u->slot[i]->group != group || u->slot[i]->seq != seq)) i = (i + 1) & (u->cap - 1);
    return i;
}

/* Linear probing's deletion: shift later members of the run back into the hole. */
static void remove_slot(sw_nvls *u, size_t i)
{
    u->slot[i] = NULL;
    for (size_t j = (i + 1) & (u->cap - 1); u->slot[j]; j = (j + 1) & (u->cap - 1)) {
        size_t home = key_hash(u->slot[j]->group, u->slot[j]->seq) & (u->cap - 1);
        /* j's entry may move to i when its home is not in (i, j] (cyclically) */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        u->slot[i] = u->slot[j];
        u->slot[j] = NULL;
        i = j;
    }
}

/* A complete set into the server: its contributions' payload at GBps, after the last became eligible. */
static void complete(sw_nvls *u, size_t i, sim_time_ps now)
{
    nv_set *s = u->slot[i];
    remove_slot(u, i);
    sim_time_ps start = s->ready_ps > now ? s->ready_ps : now;
    if (u->unit_free_ps > start) start = u->unit_free_ps;
    sim_time_ps dur = (sim_time_ps)llround((double)s->bytes * 1000.0 / u->GBps);
    u->unit_free_ps = start + dur;
    u->busy_ps += dur;
    s->done_ps = u->unit_free_ps + u->latency_ps;   /* the server is FIFO with one latency: ends stay in order */
    s->next = NULL;
    if (u->q_tail) u->q_tail->next = s; else u->q_head = s;
    u->q_tail = s;
}

/* Places c: into its key's set, a new set, or (table full) the wait list. false: it waits. */
static bool place(sw_nvls *u, nv_contrib *c, bool may_wait, sim_time_ps now)
{
    sim_pkt *p = c->pkt;
    size_t i = find_slot(u, p->group, p->seq);
    nv_set *s = u->slot[i];
    if (!s) {
        if (may_wait && (u->n_sets >= u->max_sets || u->wait_head)) return false;
        unsigned n;
        sim_groups_members(u->g, p->group, &n);
        s = u->free_s;
        if (s) u->free_s = s->next; else if (!(s = malloc(sizeof *s))) sim_fatal("out of memory");
        *s = (nv_set){ .group = p->group, .seq = p->seq, .need = n };
        u->slot[i] = s;
        if (++u->n_sets > u->most_sets) u->most_sets = u->n_sets;
    }
    for (const nv_contrib *o = s->head; o; o = o->next)
        if (o->pkt->src == p->src)
            sim_fatal("%s: endpoint %u contributed twice to key (group %u, seq %llu)", u->name, p->src, p->group,
                      (unsigned long long)p->seq);
    c->next = NULL;
    if (s->tail) s->tail->next = c; else s->head = c;
    s->tail = c;
    s->bytes += p->payload_bytes;
    if (c->eligible_ps > s->ready_ps) s->ready_ps = c->eligible_ps;
    if (++s->have == s->need) complete(u, i, now);
    return true;
}

void sw_nvls_add(sw_nvls *u, sim_pkt *pkt, void *buf, unsigned in_port, sim_time_ps eligible_ps, sim_time_ps now)
{
    unsigned n;
    const uint32_t *m = sim_groups_members(u->g, pkt->group, &n);
    bool member = false;
    for (unsigned i = 0; i < n && !member; i++) member = m[i] == pkt->src;
    if (!member) sim_fatal("%s: endpoint %u is not a member of reduce group %u", u->name, pkt->src, pkt->group);
    nv_contrib *c = u->free_c;
    if (c) u->free_c = c->next; else if (!(c = malloc(sizeof *c))) sim_fatal("out of memory");
    *c = (nv_contrib){ .pkt = pkt, .buf = buf, .in_port = in_port, .eligible_ps = eligible_ps };
    u->contribs++;
    u->held++;
    if (place(u, c, true, now)) return;
    u->table_waits++;
    if (u->wait_tail) u->wait_tail->next = c; else u->wait_head = c;
    u->wait_tail = c;
}

/* Waiting contributions into the table, in their order: each whose key is
 * there now joins it, each new key while there is room (a set completed on
 * the way makes room for the ones passed over: again until nothing moves). */
static void drain_wait(sw_nvls *u, sim_time_ps now)
{
    for (bool moved = true; moved && u->wait_head;) {
        moved = false;
        nv_contrib **link = &u->wait_head, *last = NULL;
        while (*link) {
            nv_contrib *c = *link;
            size_t i = find_slot(u, c->pkt->group, c->pkt->seq);
            if (!u->slot[i] && u->n_sets >= u->max_sets) {
                last = c;
                link = &c->next;
                continue;
            }
            *link = c->next;
            place(u, c, false, now);
            moved = true;
        }
        u->wait_tail = last;
    }
}

sim_time_ps sw_nvls_run(sw_nvls *u, sim_time_ps now, sw_nvls_emit_fn emit, void *ctx)
{
    while (u->q_head && u->q_head->done_ps <= now) {
        nv_set *s = u->q_head;
        u->q_head = s->next;
        if (!u->q_head) u->q_tail = NULL;
        /* the values: the owning model folds them (switch.h, fabric_reduce_data); the switch only passes pointers */
        fabric_reduce_data *acc = s->head->pkt->data;
        for (nv_contrib *c = s->head->next; c; c = c->next) {
            fabric_reduce_data *d = c->pkt->data;
            if ((acc == NULL) != (d == NULL))
                sim_fatal("%s: key (group %u, seq %llu): some contributions carry values and some do not", u->name, s->group,
                          (unsigned long long)s->seq);
            if (d) acc->combine(acc, d);
        }
        for (nv_contrib *c = s->head, *next; c; c = next) {
            next = c->next;
            sim_pkt *p = c->pkt;
            p->dst = p->src;                 /* the result copy goes back to its sender */
            p->group = 0;
            p->flags &= (uint8_t)~SIM_PKT_F_REDUCE;
            p->data = acc;
            u->consumed++;
            u->held--;
            emit(ctx, p, c->buf, c->in_port, s->done_ps);
            c->next = u->free_c;
            u->free_c = c;
        }
        u->results++;
        u->n_sets--;   /* its accumulator is free once the results are out */
        s->next = u->free_s;
        u->free_s = s;
    }
    drain_wait(u, now);
    return sw_nvls_next_ps(u);
}

sim_time_ps sw_nvls_next_ps(const sw_nvls *u) { return u->q_head ? u->q_head->done_ps : SIM_TIME_MAX; }

void sw_nvls_stats(const sw_nvls *u, fabric_switch_stats *st)
{
    st->nvls_contribs = u->contribs;
    st->nvls_consumed = u->consumed;
    st->nvls_results = u->results;
    st->nvls_held = u->held;
    st->nvls_table_waits = u->table_waits;
    st->nvls_most_keys = u->most_sets;
    st->nvls_busy_ps = u->busy_ps;
}

int sw_nvls_check(const sw_nvls *u, bool drained, char *why, size_t why_n)
{
    uint64_t in_table = 0, in_queue = 0, waiting = 0;
    for (size_t i = 0; i < u->cap; i++)
        if (u->slot[i]) in_table += u->slot[i]->have;
    for (const nv_set *s = u->q_head; s; s = s->next) in_queue += s->have;
    for (const nv_contrib *c = u->wait_head; c; c = c->next) waiting++;
    if (u->contribs != u->consumed + u->held || u->held != in_table + in_queue + waiting) {
        snprintf(why, why_n, "switch %s: reduction unit received %llu contributions, consumed %llu, holds %llu (table %llu, "
                 "server %llu, waiting %llu)", u->name, (unsigned long long)u->contribs, (unsigned long long)u->consumed,
                 (unsigned long long)u->held, (unsigned long long)in_table, (unsigned long long)in_queue, (unsigned long long)waiting);
        return 1;
    }
    if (u->n_sets > u->max_sets) {
        snprintf(why, why_n, "switch %s: reduction table holds %u keys, more than its %u", u->name, u->n_sets, u->max_sets);
        return 1;
    }
    if (drained && u->held) {
        snprintf(why, why_n, "switch %s: drained but its reduction unit holds %llu contributions (%llu keys partial)", u->name,
                 (unsigned long long)u->held, (unsigned long long)u->n_sets);
        return 1;
    }
    return 0;
}

void sw_nvls_for_each_held(const sw_nvls *u, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    for (size_t i = 0; i < u->cap; i++)
        if (u->slot[i])
            for (const nv_contrib *c = u->slot[i]->head; c; c = c->next) fn(c->pkt, ctx);
    for (const nv_set *s = u->q_head; s; s = s->next)
        for (const nv_contrib *c = s->head; c; c = c->next) fn(c->pkt, ctx);
    for (const nv_contrib *c = u->wait_head; c; c = c->next) fn(c->pkt, ctx);
}
