/* Partitions of a topology for a run over ranks (topo.h: topo_partition). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"

static uint32_t find(uint32_t *up, uint32_t x)
{
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
}

/* A node's share of the work: its connected ports (packets through a node
 * scale with its links: a 16-port switch does ~16 times an endpoint's events). */
static uint32_t node_weight(const topo *t, uint32_t n)
{
    uint32_t w = 0;
    for (unsigned p = 0; p < t->nodes[n].nports; p++) w += t->nodes[n].port_link[p] >= 0;
    return w ? w : 1;
}

/* group[n]: nodes joined by links of latency below `cut_ns` (union-find,
 * groups numbered by their lowest node); returns the number of groups and
 * the heaviest group's weight in *largest. */
static uint32_t group_below(const topo *t, double cut_ns, uint32_t *group, uint32_t *largest)
{
    uint32_t n = t->n_nodes, *up = malloc(n * sizeof *up), *size = calloc(n, sizeof *size), groups = 0;
    if (!up || !size) sim_fatal("topo_partition: out of memory");
    for (uint32_t i = 0; i < n; i++) up[i] = i;
    for (uint32_t i = 0; i < t->n_links; i++)
        if (t->links[i].latency_ns < cut_ns) {
            uint32_t a = find(up, t->links[i].a), b = find(up, t->links[i].b);
            if (a != b) up[a > b ? a : b] = a < b ? a : b;
        }
    for (uint32_t i = 0; i < n; i++) group[i] = UINT32_MAX;
    *largest = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = find(up, i);
        if (group[r] == UINT32_MAX) group[r] = groups++;
        group[i] = group[r];
        size[group[i]] += node_weight(t, i);
        if (size[group[i]] > *largest) *largest = size[group[i]];
    }
    free(up);
    free(size);
    return groups;
}

static int by_latency_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Boundary refinement (after Fiduccia-Mattheyses, greedy): a group moves to
 * the part it has the most links into when that cuts fewer links and keeps
 * both parts within 5 % of their share; passes until nothing moves. */
static void refine(uint32_t *part, const uint32_t *weight, const uint32_t *deg, const uint32_t *adj, uint32_t groups, unsigned parts)
{
    uint64_t total = 0, load[64] = { 0 };
    for (uint32_t g = 0; g < groups; g++) total += weight[g], load[part[g]] += weight[g];
    const double share = (double)total / parts, hi = share * 1.05 + 1, lo = share * 0.95 - 1;
    uint32_t links_to[64];
    for (unsigned pass = 0; pass < 16; pass++) {
        unsigned moves = 0;
        for (uint32_t g = 0; g < groups; g++) {
            memset(links_to, 0, parts * sizeof *links_to);
            for (uint32_t e = deg[g]; e < deg[g + 1]; e++) links_to[part[adj[e]]]++;
            unsigned from = part[g], to = from;
            for (unsigned q = 0; q < parts; q++)
                if (links_to[q] > links_to[to] && (double)(load[q] + weight[g]) <= hi && (double)(load[from] - weight[g]) >= lo) to = q;
            if (to == from) continue;
            part[g] = to;
            load[from] -= weight[g];
            load[to] += weight[g];
            moves++;
        }
        if (!moves) break;
    }
}

/* Greedy graph growing over the groups: each part in turn starts at the
 * lowest free group and takes the free group with the most links into it
 * less its links to other free groups (ties: the lowest), until it holds its
 * share of the weight left; the last part takes the rest. */
static void grow_parts(const topo *t, const uint32_t *group, uint32_t groups, double cut_ns, unsigned parts, uint32_t *node_part)
{
    uint32_t *weight = calloc(groups, sizeof *weight), *part = malloc(groups * sizeof *part);
    int64_t *in = calloc(groups, sizeof *in), *free_deg = calloc(groups, sizeof *free_deg);
    /* links between groups, as adjacency lists (each link once per end) */
    uint32_t *deg = calloc(groups + 1, sizeof *deg), *adj = malloc((2 * (size_t)t->n_links + 1) * sizeof *adj);
    if (!weight || !part || !in || !free_deg || !deg || !adj) sim_fatal("topo_partition: out of memory");
    uint32_t left = 0, next_seed = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) weight[group[i]] += node_weight(t, i), left += node_weight(t, i);
    for (uint32_t i = 0; i < t->n_links; i++)
        if (t->links[i].latency_ns >= cut_ns && group[t->links[i].a] != group[t->links[i].b])
            deg[group[t->links[i].a] + 1]++, deg[group[t->links[i].b] + 1]++;
    for (uint32_t g = 0; g < groups; g++) deg[g + 1] += deg[g];
    uint32_t *fill = malloc((groups + 1) * sizeof *fill);
    memcpy(fill, deg, (groups + 1) * sizeof *fill);
    for (uint32_t i = 0; i < t->n_links; i++) {
        uint32_t a = group[t->links[i].a], b = group[t->links[i].b];
        if (t->links[i].latency_ns >= cut_ns && a != b) adj[fill[a]++] = b, adj[fill[b]++] = a;
    }
    for (uint32_t g = 0; g < groups; g++) part[g] = UINT32_MAX, free_deg[g] = deg[g + 1] - deg[g];
    for (unsigned p = 0; p < parts; p++) {
        uint64_t share = p + 1 == parts ? left : (left + (parts - p) / 2) / (parts - p), load = 0;
        memset(in, 0, groups * sizeof *in);
        while (load < share) {
            uint32_t best = UINT32_MAX;
            int64_t best_gain = INT64_MIN;
            for (uint32_t g = 0; g < groups; g++)
                if (part[g] == UINT32_MAX && in[g] > 0 && 2 * in[g] - free_deg[g] > best_gain) best = g, best_gain = 2 * in[g] - free_deg[g];
            if (best == UINT32_MAX) {   /* nothing adjacent: a new seed */
                while (next_seed < groups && part[next_seed] != UINT32_MAX) next_seed++;
                if (next_seed == groups) break;
                best = next_seed;
            }
            if (p + 1 < parts && load > 0 && load + weight[best] > share + weight[best] / 2) break;   /* closer to the share without it */
            part[best] = p;
            load += weight[best];
            for (uint32_t e = deg[best]; e < deg[best + 1]; e++) {
                in[adj[e]]++;
                free_deg[adj[e]]--;
            }
        }
        left -= (uint32_t)load;
    }
    for (uint32_t g = 0; g < groups; g++)
        if (part[g] == UINT32_MAX) part[g] = parts - 1;
    refine(part, weight, deg, adj, groups, parts);
    for (uint32_t i = 0; i < t->n_nodes; i++) node_part[i] = part[group[i]];
    free(weight);
    free(part);
    free(in);
    free(free_deg);
    free(deg);
    free(adj);
    free(fill);
}

int topo_partition(const topo *t, enum topo_partition how, unsigned parts, uint32_t *node_part, char *err, size_t errlen)
{
    if (parts < 1 || parts > 64) {
        snprintf(err, errlen, "partition into %u parts; allowed: 1..64", parts);
        return -1;
    }
    const uint32_t n = t->n_nodes;
    if (how == TOPO_PART_NODES || parts == 1) {
        for (uint32_t i = 0; i < n; i++) node_part[i] = (uint32_t)((uint64_t)i * parts / n);
        if (how != TOPO_PART_FILE) return 0;
    }
    if (how == TOPO_PART_FILE) {
        for (uint32_t i = 0; i < n; i++) {
            if (t->nodes[i].rank < 0) {
                snprintf(err, errlen, "partition=file: node '%s' has no \"rank\" in the topology file; allowed: every node "
                         "with \"rank\": 0..%u, or partition=auto|nodes", t->nodes[i].name, parts - 1);
                return -1;
            }
            if ((unsigned)t->nodes[i].rank >= parts) {
                snprintf(err, errlen, "partition=file: node '%s' has rank %d; this run has %u rank%s (allowed 0..%u)",
                         t->nodes[i].name, t->nodes[i].rank, parts, parts == 1 ? "" : "s", parts - 1);
                return -1;
            }
            node_part[i] = (uint32_t)t->nodes[i].rank;
        }
        return 0;
    }
    /* auto: the highest latency whose groups (joined by every faster link) each fit in a part, with 5 % slack;
     * weights are connected ports (node_weight) */
    double *lat = malloc((t->n_links + 1) * sizeof *lat);
    uint32_t *group = malloc((n + 1) * sizeof *group);
    if (!lat || !group) sim_fatal("topo_partition: out of memory");
    for (uint32_t i = 0; i < t->n_links; i++) lat[i] = t->links[i].latency_ns;
    qsort(lat, t->n_links, sizeof *lat, by_latency_desc);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += node_weight(t, i);
    const uint32_t fit = (uint32_t)((double)total / parts * 1.05) + 1;
    double cut_ns = -1;   /* below every latency: every node its own group */
    for (uint32_t i = 0; i < t->n_links; i++) {
        if (i && lat[i] == lat[i - 1]) continue;
        uint32_t largest;
        group_below(t, lat[i], group, &largest);
        if (largest <= fit) {
            cut_ns = lat[i];
            break;
        }
    }
    uint32_t largest, groups = group_below(t, cut_ns, group, &largest);
    grow_parts(t, group, groups, cut_ns, parts, node_part);
    free(lat);
    free(group);
    return 0;
}
