/* The rings' order, per channel, and the ports each hop leaves by.
 *
 * One node (one NVLink domain): every channel's ring is rank order, 0 -> 1
 * -> ... -> n-1 -> 0, channel ch on NVLink port ch mod P at every rank.
 *
 * Several nodes (NVLink domains of G ranks each, consecutive in rank order:
 * rank = node x G + local GPU), NCCL's rail-optimised rings: channel ch has
 * rail a = ch mod G and b = (a + G - 1) mod G. An even node is entered at
 * its GPU a and walked a, a+1, ..., b (mod G) over NVLink; an odd node is
 * entered at b and walked back b, b-1, ..., a. The hop between nodes leaves
 * through the last GPU's own NIC and enters the next node at the GPU of the
 * same rail: node 2j -> 2j+1 on rail b, node 2j+1 -> 2j+2 on rail a, so with
 * an even number of nodes every inter-node hop stays on one rail's leaf
 * switch(es) and every NIC carries the same number of channels when the
 * channels are a multiple of G. With an odd number of nodes the wrap from
 * the last node (even, leaving on rail b) into node 0 (entered on rail a)
 * changes rail: it crosses the spines. Inside a node the hop takes NVLink
 * port ch mod P (P NVLink ports per GPU), as on one node; acks go back the
 * way their data came (the receiver's NIC port for a hop between nodes).
 * Ranks that are not G per node in consecutive order, or GPUs without a NIC
 * port (NVSwitches joined by a network in a topology file), keep rank order
 * and NVLink ports. */
#include "models/collective/coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned coll_ring_block(const coll_comm *c, unsigned ch, unsigned r, unsigned s)
{
    /* coll_block's rule on positions in the channel's ring (rank order on one node) */
    size_t base = (size_t)ch * c->n;
    return c->ring_order[base + coll_block(c, c->ring_pos[base + r], s)];
}

/* Are the domains G consecutive ranks each? Sets *gpn. */
static bool regular_nodes(const coll_comm *c, unsigned *gpn)
{
    unsigned nodes = c->n_nodes;
    if (nodes < 2 || c->n % nodes) return false;
    unsigned g = c->n / nodes;
    for (unsigned r = 0; r < c->n; r++)
        if (c->rank_node[r] != r / g) return false;
    *gpn = g;
    return true;
}

int coll_ring_setup(coll_comm *c, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    unsigned n = c->n, C = c->channels, G = 0;
    c->ring_order = malloc((size_t)C * n * sizeof *c->ring_order);
    c->ring_pos = malloc((size_t)C * n * sizeof *c->ring_pos);
    if (!c->ring_order || !c->ring_pos) sim_fatal("coll_ring_setup: out of memory");
    /* rails need a NIC at every GPU; without (switches joined by a network, as in a topology file) the rings keep rank order
     * and every hop its NVLink port, the switches routing it onward */
    bool rails = regular_nodes(c, &G);
    for (unsigned r = 0; rails && r < n; r++) rails = nvgpu_nic_port(c->rank[r].g) >= 0;
    c->ring_nodes = rails ? c->n_nodes : 1;
    for (unsigned ch = 0; ch < C; ch++) {
        unsigned *ord = c->ring_order + (size_t)ch * n;
        if (!rails) {
            for (unsigned i = 0; i < n; i++) ord[i] = i;
        } else {
            unsigned a = ch % G;
            for (unsigned node = 0, i = 0; node < c->n_nodes; node++)
                for (unsigned j = 0; j < G; j++, i++)
                    ord[i] = node * G + (node % 2 ? (a + 2 * G - 1 - j) % G : (a + j) % G);
        }
        for (unsigned i = 0; i < n; i++) c->ring_pos[(size_t)ch * n + ord[i]] = i;
    }
    unsigned nvl = nvgpu_nvlink_ports(c->rank[0].g);
    for (unsigned r = 0; r < n; r++) {
        coll_rank *rk = &c->rank[r];
        for (unsigned ch = 0; ch < C; ch++) {
            ring_chan *rc = &rk->ch[ch];
            const unsigned *ord = c->ring_order + (size_t)ch * n;
            unsigned pos = c->ring_pos[(size_t)ch * n + r];
            rc->next_r = ord[(pos + 1) % n];
            rc->prev_r = ord[(pos + n - 1) % n];
            rc->next_ep = nvgpu_endpoint(c->rank[rc->next_r].g);
            rc->prev_ep = nvgpu_endpoint(c->rank[rc->prev_r].g);
            rc->port = rc->ack_port = ch % nvl;   /* channel ch on NVLink ch mod ports at every rank: all links carry rings */
            if (rails && c->rank_node[rc->next_r] != c->rank_node[r]) rc->port = (unsigned)nvgpu_nic_port(rk->g);
            if (rails && c->rank_node[rc->prev_r] != c->rank_node[r]) rc->ack_port = (unsigned)nvgpu_nic_port(rk->g);
            rc->data_flow = coll_pick_flow(c, r, rc->next_r, rc->port, ch, COLL_MSG_DATA);
            rc->ack_flow = coll_pick_flow(c, r, rc->prev_r, rc->ack_port, ch, COLL_MSG_ACK);
        }
    }
    return 0;
}
