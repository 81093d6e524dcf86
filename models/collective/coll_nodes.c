/* Ranks -> nodes. A node is what NVLink joins: GPUs linked by NVLink-class
 * links (the link's preset name starts with "nvlink"), directly or through
 * switches they reach over such links; PCIe, InfiniBand, Ethernet and any
 * other link kind separate nodes. Computed from the topology (sim/topo.h)
 * alone, so it holds on every rank of a run over ranks. gpus_per_node
 * overrides it with groups of consecutive ranks (a DGX cut into one-GPU
 * "nodes" exercises a tree of 8 on one machine). */
#include "models/collective/coll_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t find(uint32_t *up, uint32_t x)
{
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
}

static bool nvlink_class(const topo_link *l) { return l->preset && !strncmp(l->preset->name, "nvlink", 6); }

/* May NVLink join through this node: a GPU of the communicator's kind, or a switch. */
static bool joins(const topo_node *n) { return n->kind->forwards || !strcmp(n->kind->name, "nvgpu"); }

int coll_nodes_group(coll_comm *c, char *err, size_t errlen)
{
    unsigned per = c->cfg.gpus_per_node;
    if (per) {
        if (per > c->n || c->n % per) {
            snprintf(err, errlen, "gpus_per_node=%u with %u ranks; allowed: 0 (from the topology) or a divisor of %u", per, c->n, c->n);
            return -1;
        }
        c->n_nodes = c->n / per;
        for (unsigned r = 0; r < c->n; r++) c->rank_node[r] = r / per;
        return 0;
    }
    const topo *t = sim_fabric_topo(c->f);
    uint32_t *up = malloc(t->n_nodes * sizeof *up);
    if (!up) sim_fatal("coll_nodes_group: out of memory");
    for (uint32_t i = 0; i < t->n_nodes; i++) up[i] = i;
    for (uint32_t l = 0; l < t->n_links; l++) {
        const topo_link *lk = &t->links[l];
        if (!nvlink_class(lk) || !joins(&t->nodes[lk->a]) || !joins(&t->nodes[lk->b])) continue;
        up[find(up, lk->a)] = find(up, lk->b);
    }
    /* number the components by their first rank */
    uint32_t *root_of = malloc(c->n * sizeof *root_of);
    if (!root_of) sim_fatal("coll_nodes_group: out of memory");
    c->n_nodes = 0;
    for (unsigned r = 0; r < c->n; r++) {
        uint32_t root = find(up, nvgpu_node(c->rank[r].g));
        unsigned k = 0;
        while (k < c->n_nodes && root_of[k] != root) k++;
        if (k == c->n_nodes) root_of[c->n_nodes++] = root;
        c->rank_node[r] = k;
    }
    free(root_of);
    free(up);
    return 0;
}

unsigned coll_comm_nodes(const coll_comm *c) { return c->n_nodes; }

unsigned coll_rank_node(const coll_comm *c, unsigned r)
{
    if (r >= c->n) sim_fatal("coll_rank_node: rank %u of %u", r, c->n);
    return c->rank_node[r];
}
