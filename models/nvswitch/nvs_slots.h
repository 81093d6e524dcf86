/* The packets inside an nvswitch (internal to models/nvswitch): a slot per
 * packet that arrived and has copies still to send, named by the flit words
 * the core carries (nvs_flit_make); the multicast copies the switch makes
 * from its own pool. Inline: a slot is taken and given back per packet, on
 * the hot path. */
#ifndef NVS_SLOTS_H
#define NVS_SLOTS_H

#include "models/nvswitch/nvswitch.h"

/* Room for one more slot (the tables double). */
void nvs_slots_grow(nvswitch *s);
/* mc[] as big as the slot table. */
void nvs_slots_grow_mc(nvswitch *s);
/* A multicast packet's output ports: its group's members (fatal if none is a port). */
uint64_t nvs_group_mask(const nvswitch *s, const sim_pkt *k);

static inline bool nvs_mask_multi(uint64_t mask) { return (mask & (mask - 1)) != 0; }

/* A packet arrived: its slot (the most recently freed: in cache). */
static inline uint32_t nvs_slot_new(nvswitch *s, sim_pkt *k)
{
    uint32_t x;
    if (s->n_free) {
        x = s->slot_free[--s->n_free];
    } else {
        if (s->n_slots == s->cap_slots) nvs_slots_grow(s);
        x = s->n_slots++;
    }
    s->slot_pkt[x] = k;
    s->slots_live++;
    return x;
}

/* The packet in slot x has gone, every copy. */
static inline void nvs_slot_release(nvswitch *s, uint32_t x)
{
    s->slot_pkt[x] = NULL;
    s->slot_free[s->n_free++] = x;
    s->slots_live--;
}

/* Slot x holds a multicast packet of nflits to dest_mask. */
static inline void nvs_slot_mc(nvswitch *s, uint32_t x, uint64_t dest_mask, unsigned nflits)
{
    if (s->cap_mc < s->cap_slots) nvs_slots_grow_mc(s);
    s->mc[x] = (nvs_mc_slot){ .dest_mask = dest_mask, .copies_left = nflits * (uint32_t)__builtin_popcountll(dest_mask) };
}

/* n flit copies of slot x's multicast packet left: with the last the
 * original (its copies went instead) is consumed. */
static inline void nvs_slot_mc_sent(nvswitch *s, uint32_t x, uint32_t n)
{
    nvs_mc_slot *m = &s->mc[x];
    if (m->copies_left < n) sim_fatal("%s: a multicast packet sent on as more flit copies than it has", s->cfg.name);
    m->copies_left -= n;
    if (m->copies_left) return;
    sim_pkt_free(s->slot_pkt[x]);
    nvs_slot_release(s, x);
}

/* A copy of multicast packet k from the switch's pool, addressed to port j. */
static inline sim_pkt *nvs_copy_to(nvswitch *s, const sim_pkt *k, int j)
{
    sim_pkt *c = sim_pkt_clone(&s->pool, k);
    c->dst = (uint32_t)j;
    c->group = 0;
    return c;
}

#endif
