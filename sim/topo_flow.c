/* Flow-level prediction for fixed routes: each flow follows the hops the
 * routing tables give it (topo_route_next, so ECMP collisions are the ones
 * the simulation will have), and the flows share each direction of a link by
 * max-min fairness, found by progressive filling: raise every unfrozen flow's
 * rate together until a channel is full or a flow meets its demand, freeze
 * those flows, repeat. Channels are link directions (VCs share the wire). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/kernel.h"
#include "sim/topo.h"

static int fail(char *err, size_t errlen, const char *fmt, unsigned a, unsigned b)
{
    if (err && errlen) snprintf(err, errlen, fmt, a, b);
    return -1;
}

int topo_flow_path(const topo *t, const topo_routes *r, uint32_t src, uint32_t dst, uint64_t flow_id, uint32_t *channels,
                   unsigned max_channels)
{
    if (src >= t->n_endpoints || dst >= t->n_endpoints || src == dst) return -1;
    uint32_t node = t->endpoint_node[src], dst_node = t->endpoint_node[dst];
    int in_port = -1;
    unsigned n = 0;
    while (node != dst_node) {
        if (n == max_channels || n > t->n_nodes) return -1;
        topo_hop h = topo_route_next(r, node, in_port, dst, flow_id);
        int32_t li = t->nodes[node].port_link[h.port];
        const topo_link *l = &t->links[li];
        channels[n++] = (uint32_t)li * 2 + !(l->a == node && l->a_port == h.port);
        unsigned peer_port;
        node = (uint32_t)topo_peer(t, node, h.port, &peer_port);
        in_port = (int)peer_port;
    }
    return (int)n;
}

/* Appends flow f's channels to *ch. */
static int trace_path(const topo *t, const topo_routes *r, const topo_flow *f, uint32_t **ch, uint32_t *n_ch,
                      uint32_t *cap_ch, char *err, size_t errlen)
{
    if (*cap_ch - *n_ch < t->n_nodes + 1) {
        *cap_ch = 2 * *cap_ch + t->n_nodes + 1;
        *ch = realloc(*ch, *cap_ch * sizeof **ch);
        if (!*ch) sim_fatal("out of memory");
    }
    int len = topo_flow_path(t, r, f->src, f->dst, f->flow_id, *ch + *n_ch, t->n_nodes + 1);
    if (len < 0) return fail(err, errlen, "flow %u -> %u: no route between distinct endpoints", f->src, f->dst);
    *n_ch += (uint32_t)len;
    return 0;
}

void topo_maxmin_fill(const double *capacity, double *left, uint32_t *users, unsigned n, const uint32_t *path_first,
                      const uint32_t *path_len, const uint32_t *channels, const double *demand, double *rate, bool *frozen)
{
    /* the channels the flows use, once each: only they are scanned per round */
    uint32_t n_used = 0, *used = malloc(((size_t)(n ? path_first[n - 1] + path_len[n - 1] : 0) + 1) * sizeof *used);
    if (!used) sim_fatal("out of memory");
    unsigned active = 0;
    for (unsigned i = 0; i < n; i++) {
        rate[i] = 0;
        frozen[i] = demand[i] <= 0;
        for (uint32_t k = 0; k < path_len[i]; k++) {
            uint32_t c = channels[path_first[i] + k];
            if (users[c] == 0 && left[c] == capacity[c]) used[n_used++] = c, left[c] = -1;   /* mark: listed */
        }
    }
    for (uint32_t u = 0; u < n_used; u++) left[used[u]] = capacity[used[u]], users[used[u]] = 0;
    for (unsigned i = 0; i < n; i++) {
        if (frozen[i]) continue;
        active++;
        for (uint32_t k = 0; k < path_len[i]; k++) users[channels[path_first[i] + k]]++;
    }
    while (active) {
        double step = INFINITY;
        for (uint32_t u = 0; u < n_used; u++)
            if (users[used[u]]) step = fmin(step, left[used[u]] / users[used[u]]);
        for (unsigned i = 0; i < n; i++)
            if (!frozen[i]) step = fmin(step, demand[i] - rate[i]);
        for (unsigned i = 0; i < n; i++)
            if (!frozen[i]) rate[i] += step;
        for (uint32_t u = 0; u < n_used; u++) left[used[u]] -= step * users[used[u]];
        /* freeze flows on full channels and flows at their demand (a relative epsilon for rounding) */
        for (unsigned i = 0; i < n; i++) {
            if (frozen[i]) continue;
            bool done = rate[i] >= demand[i] * (1 - 1e-12);
            for (uint32_t k = 0; k < path_len[i] && !done; k++) {
                uint32_t c = channels[path_first[i] + k];
                done = left[c] <= capacity[c] * 1e-12;
            }
            if (!done) continue;
            frozen[i] = true;
            active--;
            for (uint32_t k = 0; k < path_len[i]; k++) users[channels[path_first[i] + k]]--;
        }
    }
    for (uint32_t u = 0; u < n_used; u++) left[used[u]] = capacity[used[u]];   /* as found */
    free(used);
}

int topo_flows_maxmin(const topo *t, const topo_routes *r, topo_flow *flows, unsigned n, char *err, size_t errlen)
{
    uint32_t n_chan = 2 * t->n_links, *ch = NULL, n_ch = 0, cap_ch = 0;
    uint32_t *first = calloc(n ? n : 1, sizeof *first), *len = calloc(n ? n : 1, sizeof *len);
    double *cap = malloc((n_chan ? n_chan : 1) * sizeof *cap), *left = malloc((n_chan ? n_chan : 1) * sizeof *left);
    double *demand = malloc((n ? n : 1) * sizeof *demand), *rate = malloc((n ? n : 1) * sizeof *rate);
    uint32_t *users = calloc(n_chan ? n_chan : 1, sizeof *users);
    bool *frozen = calloc(n ? n : 1, sizeof *frozen);
    if (!first || !len || !cap || !left || !demand || !rate || !users || !frozen) sim_fatal("out of memory");
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        first[i] = n_ch;
        rc = trace_path(t, r, &flows[i], &ch, &n_ch, &cap_ch, err, errlen);
        len[i] = n_ch - first[i];
        demand[i] = flows[i].demand_GBps;
    }
    for (uint32_t c = 0; c < n_chan; c++) cap[c] = left[c] = t->links[c / 2].GBps;
    if (rc == 0) topo_maxmin_fill(cap, left, users, n, first, len, ch, demand, rate, frozen);
    for (unsigned i = 0; i < n; i++) flows[i].rate_GBps = rc == 0 ? rate[i] : 0;
    free(ch);
    free(first);
    free(len);
    free(cap);
    free(left);
    free(demand);
    free(rate);
    free(users);
    free(frozen);
    return rc;
}
