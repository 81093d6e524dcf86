/* The one packet every link and switch carries (SST's SimpleNetwork::Request,
 * BookSim's Flit): addresses, class, sizes, flow and sequence, times, hops,
 * ECN, and an opaque pointer for the model that made it.
 *
 * Ownership: a packet always has exactly one holder. Its sender allocates it
 * from a pool the sender owns (sim_pkt_alloc); sending it on a link hands it
 * to the receiver; whoever consumes it (a sink, a NIC that turns it into a
 * completion) calls sim_pkt_free, which returns it to the pool it came from
 * (pkt->pool). Nothing else of a pool is ever touched by another component.
 * A switch forwards the same packet; a multicast copy is a new packet from the
 * copying component's own pool (sim_pkt_clone).
 *
 * Extension area: a pool made with sim_pkt_pool_init_ext gives every packet
 * ext_bytes of its own after the common fields (sim_pkt_ext), for the owning
 * model's protocol state (a PCIe TLP with its sequence number, a DLLP's
 * credit fields, a flit). Who may read it: the model that made the packet and
 * its own kind on the other end of a link (the same model's protocol peer,
 * e.g. the PCIe port a PCIe port sends to), never other models: a switch or
 * a sink of another model sees only the common fields, and everything that
 * counts (wire_bytes, payload_bytes, flow, seq) must be true there without the
 * extension. sim_pkt_alloc does not clear it (the model fills what it uses);
 * sim_pkt_clone copies it; sim_pkt_free needs nothing of it.
 *
 * On a link a packet travels whole (bytes = wire_bytes) or in parts (flits,
 * bursts): sim_link_send_part carries the part's index beside the pointer,
 * and the receiver reads it with sim_link_part (sim/link.h). */
#ifndef SIM_PACKET_H
#define SIM_PACKET_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stdint.h>

#define SIM_PKT_GROUP UINT32_MAX   /* dst of a multicast packet: see group */

typedef struct sim_pkt_pool sim_pkt_pool;

typedef struct sim_pkt {
    uint32_t src;              /* source endpoint address (topo endpoint index; a switch port's endpoint) */
    uint32_t dst;              /* destination endpoint address, or SIM_PKT_GROUP */
    uint32_t group;            /* multicast group id (sim_groups) when dst == SIM_PKT_GROUP; else 0 */
    uint8_t tc;                /* traffic class / service level: set by the sender, never changed */
    uint8_t vc;                /* virtual channel of the current hop (switches rewrite it: dateline, SL->VL) */
    uint8_t ecn;               /* 1: congestion experienced (set by a marking queue) */
    uint8_t flags;             /* the owning model's (SIM_PKT_F_*) */
    uint16_t hops;             /* links traversed so far (a receiver of a link adds one) */
    uint16_t parts;            /* parts it travels in on the current link (1: whole) */
    uint32_t wire_bytes;       /* on the wire: payload + headers + per-packet link overhead */
    uint32_t payload_bytes;    /* the part that is data (goodput) */
    uint32_t frames;           /* link packets it stands for (a burst: n; else 1), each paying its link's overhead_bytes
                                * within wire_bytes: a switch re-frames by it where the next link's overhead differs */
    uint64_t flow;             /* flow id: ECMP hash key, per-flow order checks */
    uint64_t seq;              /* sequence number within the flow */
    sim_time_ps created_ps;    /* when the source made it */
    sim_time_ps injected_ps;   /* when its first byte entered the network (source queueing excluded) */
    void *data;                /* the owning model's (a message, a work request); never read by others */
    sim_pkt_pool *pool;        /* where sim_pkt_free returns it */
    struct sim_pkt *next_free; /* the pool's free list; NULL while in use */
    uint64_t id;               /* per-pool serial number (labels, waves) */
} sim_pkt;

#define SIM_PKT_F_HEAD 1u      /* flags a model may use freely; none has a meaning here but SIM_PKT_F_REDUCE */
/* The one flag the network reads: a packet to a group (dst SIM_PKT_GROUP) with it
 * is a reduce contribution to key (group, seq), for a switch with a reduction
 * unit (models/fabric/switch.h, NVLS); its data, if not NULL, starts with a
 * fabric_reduce_data. No model may use this bit for anything else. */
#define SIM_PKT_F_REDUCE 0x10u

/* A pool of packets for one component: chunks of stable records, a free list,
 * nothing allocated per packet in steady state. live counts packets out. */
struct sim_pkt_pool {
    unsigned char **chunks;
    uint32_t n_chunks, cap_chunks;
    sim_pkt *free_list;
    uint64_t live, allocated_total, next_id;
    const char *owner;         /* for messages: the component's name */
    uint32_t ext_bytes;        /* extension area of each packet (0: none) */
    uint32_t stride;           /* bytes per record: sim_pkt, then the extension, aligned */
};

/* The extension starts here in every record, aligned for any type. */
#define SIM_PKT_EXT_ALIGN 16u
#define SIM_PKT_EXT_OFFSET ((sizeof(sim_pkt) + SIM_PKT_EXT_ALIGN - 1) / SIM_PKT_EXT_ALIGN * SIM_PKT_EXT_ALIGN)

void sim_pkt_pool_init(sim_pkt_pool *p, const char *owner);
/* A pool whose packets each carry ext_bytes for the owning model (see the
 * extension rule above). */
void sim_pkt_pool_init_ext(sim_pkt_pool *p, const char *owner, uint32_t ext_bytes);
/* Aborts (a bug) when packets are still out: every packet goes back to its
 * pool before any pool is freed, after a failed check too (sim_fabric_free's
 * order: what components hold and links carry first, then the components). */
void sim_pkt_pool_free(sim_pkt_pool *p);
/* The packets a teardown gives back: what components hold and links carry
 * (sim_link_for_each_in_flight), where one packet may be named twice (a
 * packet partly sent is in its sender's queue and on the link). */
typedef struct sim_pkt_set { sim_pkt **pkt; size_t n, cap; } sim_pkt_set;
void sim_pkt_set_add(sim_pkt *k, void *set);      /* the shape of a kind's held callback */
void sim_pkt_set_add_msg(void *msg, void *set);   /* the shape of sim_link_for_each_in_flight's */
/* Each distinct packet back to its pool once; empties the set. */
void sim_pkt_set_free_all(sim_pkt_set *s);
void sim_pkt_pool_grow(sim_pkt_pool *p);

/* A zeroed packet (but pool and id). */
static inline sim_pkt *sim_pkt_alloc(sim_pkt_pool *p)
{
    if (!p->free_list) sim_pkt_pool_grow(p);
    sim_pkt *k = p->free_list;
    p->free_list = k->next_free;
    *k = (sim_pkt){ .pool = p, .id = p->next_id++, .parts = 1, .frames = 1 };
    p->live++;
    p->allocated_total++;
    return k;
}
static inline void sim_pkt_free(sim_pkt *k)
{
    sim_pkt_pool *p = k->pool;
    k->next_free = p->free_list;
    k->data = NULL;
    p->free_list = k;
    p->live--;
}
/* The owning model's extension of k (only for a packet of a pool with one:
 * k->pool->ext_bytes of them; see the rule above on who may read it). */
static inline void *sim_pkt_ext(sim_pkt *k) { return (unsigned char *)k + SIM_PKT_EXT_OFFSET; }
static inline const void *sim_pkt_ext_const(const sim_pkt *k) { return (const unsigned char *)k + SIM_PKT_EXT_OFFSET; }
static inline uint32_t sim_pkt_ext_bytes(const sim_pkt *k) { return k->pool->ext_bytes; }
/* A copy of k (every field but pool, id and next_free, and k's extension)
 * from pool p; p's extension must be at least as large as k's (else a bug:
 * aborts), any more of it is left as it was. */
sim_pkt *sim_pkt_clone(sim_pkt_pool *p, const sim_pkt *k);

/* Multicast groups of a system: id -> member endpoint addresses. Built with
 * the system (one table, read-only while it runs); ids start at 1. */
typedef struct sim_groups sim_groups;
sim_groups *sim_groups_new(void);
void sim_groups_free(sim_groups *g);
uint32_t sim_groups_add(sim_groups *g, const uint32_t *members, unsigned n);
/* The id of the group with exactly these members (given sorted ascending):
 * an existing one, else a new one (a switch splitting a multicast by port). */
uint32_t sim_groups_intern(sim_groups *g, const uint32_t *members, unsigned n);
const uint32_t *sim_groups_members(const sim_groups *g, uint32_t id, unsigned *n);
/* Members below 64 as a bit mask (single-switch systems address ports by endpoint). */
uint64_t sim_groups_mask64(const sim_groups *g, uint32_t id);

/* "P3.17 3>5 1024B" into buf (waves, messages). */
void sim_pkt_label(const sim_pkt *k, char *buf, size_t n);

#endif
