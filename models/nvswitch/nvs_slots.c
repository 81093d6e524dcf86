/* The nvswitch's packets and credit pools (nvs_slots.h, nvswitch.h). */
#include "models/nvswitch/nvs_slots.h"

#include <stdio.h>
#include <stdlib.h>

sim_credit_use nvswitch_credit_mode(const xbar_core_cfg *core)
{
    if (core->depth == 0) return SIM_CREDIT_NONE;
    if (core->queue == XBAR_QUEUE_FIFO) return SIM_CREDIT_PER_FLIT;
    return core->shared ? SIM_CREDIT_PER_COPY : SIM_CREDIT_PER_DEST;
}

void nvswitch_link_credits(const xbar_core_cfg *core, sim_link_cfg *lc)
{
    switch (nvswitch_credit_mode(core)) {
    case SIM_CREDIT_NONE: lc->credit_types = 0; break;
    case SIM_CREDIT_PER_DEST:
        lc->credit_types = (unsigned)core->ports;
        for (int j = 0; j < core->ports; j++) lc->credits[j] = (uint32_t)core->depth;
        break;
    case SIM_CREDIT_PER_FLIT:
    case SIM_CREDIT_PER_COPY:
        lc->credit_types = 1;
        lc->credits[0] = (uint32_t)core->depth;
        break;
    }
}

void nvs_slots_grow(nvswitch *s)
{
    if (s->cap_slots >= 1u << 30) sim_fatal("%s: more than 2^30 packets inside", s->cfg.name);
    s->cap_slots = s->cap_slots ? 2 * s->cap_slots : 256;
    s->slot_pkt = realloc(s->slot_pkt, s->cap_slots * sizeof *s->slot_pkt);
    s->slot_free = realloc(s->slot_free, s->cap_slots * sizeof *s->slot_free);
    if (!s->slot_pkt || !s->slot_free) sim_fatal("out of memory");
}

void nvs_slots_grow_mc(nvswitch *s)
{
    s->cap_mc = s->cap_slots;
    s->mc = realloc(s->mc, s->cap_mc * sizeof *s->mc);
    if (!s->mc) sim_fatal("out of memory");
}

uint64_t nvs_group_mask(const nvswitch *s, const sim_pkt *k)
{
    if (!s->cfg.groups) sim_fatal("%s: a multicast packet (group %u), and the switch was given no groups", s->cfg.name, k->group);
    const uint64_t m = sim_groups_mask64(s->cfg.groups, k->group);
    unsigned members;
    (void)sim_groups_members(s->cfg.groups, k->group, &members);
    if (!m || (unsigned)__builtin_popcountll(m) != members || (s->n < 64 && m >> s->n))
        sim_fatal("%s: multicast group %u has members that are no port", s->cfg.name, k->group);
    return m;
}

int nvswitch_check_drained(const nvswitch *s, char *why, size_t why_n)
{
    const uint64_t inside = nvswitch_copies_inside(s);
    uint32_t arriving = 0, sending = 0;
    for (int i = 0; i < s->n; i++) arriving += s->port[i].rx_slot != NVS_NO_SLOT;
    for (size_t x = 0; s->mc_copy && x < (size_t)s->n * XBAR_MAX_PORTS; x++) sending += s->mc_copy[x] != NULL;
    if (inside || s->slots_live != arriving || s->pool.live != sending) {
        snprintf(why, why_n,
                 "%s: %llu flit copies inside, %u packets held (%u still arriving), %llu of its multicast copies not freed "
                 "(%u partly sent)",
                 s->cfg.name, (unsigned long long)inside, s->slots_live, arriving, (unsigned long long)s->pool.live, sending);
        return -1;
    }
    return 0;
}
