/* The packets inside an nvswitch (internal to models/nvswitch): a slot per
 * packet that arrived and has copies still to send, named by the flit words
 * the core carries (nvs_flit_make); the multicast copies the switch makes
 * from its own pool. Inline: a slot is taken and given back per packet, on
 * the hot path. */
#ifndef NVS_SLOTS_H
#define NVS_SLOTS_H

#include "models/nvswitch/nvswitch.h"

/* Room for one more slot (the table doubles). */
void nvs_slots_grow(nvswitch *s);
/* A multicast packet's output ports: its group's members (fatal if none is a port). */
uint64_t nvs_group_mask(const nvswitch *s, const sim_pkt *k);

static inline bool nvs_mask_multi(uint64_t mask) { return (mask & (mask - 1)) != 0; }

/* A packet arrived for `dest_mask`: its slot. */
static inline uint32_t nvs_slot_new(nvswitch *s, sim_pkt *k, uint64_t dest_mask, unsigned nflits)
{
    uint32_t x = s->slot_free;
    if (x == UINT32_MAX) {
        if (s->n_slots == s->cap_slots) nvs_slots_grow(s);
        x = s->n_slots++;
    } else {
        s->slot_free = s->slots[x].next_free;
    }
    s->slots[x] = (nvs_slot){ .pkt = k, .dest_mask = dest_mask,
                              .copies_left = nflits * (uint32_t)__builtin_popcountll(dest_mask) };
    s->slots_live++;
    return x;
}

/* n flit copies of slot sl's packet left: once all have, the slot is free,
 * and a multicast original (its copies went instead) is consumed. */
static inline void nvs_slot_sent(nvswitch *s, nvs_slot *sl, uint32_t n)
{
    if (sl->copies_left < n) sim_fatal("%s: a packet sent on as more flit copies than it has", s->cfg.name);
    sl->copies_left -= n;
    if (sl->copies_left) return;
    if (nvs_mask_multi(sl->dest_mask)) sim_pkt_free(sl->pkt);
    sl->pkt = NULL;
    sl->next_free = s->slot_free;
    s->slot_free = (uint32_t)(sl - s->slots);
    s->slots_live--;
}

/* What goes down output j for slot sl: the packet itself (unicast), or a
 * copy of it from the switch's pool, addressed to port j. */
static inline sim_pkt *nvs_copy_for(nvswitch *s, const nvs_slot *sl, int j)
{
    if (!nvs_mask_multi(sl->dest_mask)) return sl->pkt;
    sim_pkt *c = sim_pkt_clone(&s->pool, sl->pkt);
    c->dst = (uint32_t)j;
    c->group = 0;
    return c;
}

#endif
