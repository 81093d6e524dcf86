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

typedef struct flow_path { uint32_t first, len; } flow_path;

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

int topo_flows_maxmin(const topo *t, const topo_routes *r, topo_flow *flows, unsigned n, char *err, size_t errlen)
{
    uint32_t n_chan = 2 * t->n_links, *ch = NULL, n_ch = 0, cap_ch = 0;
    flow_path *path = calloc(n ? n : 1, sizeof *path);
    double *left = malloc((n_chan ? n_chan : 1) * sizeof *left);    /* capacity not yet given out */
    uint32_t *users = calloc(n_chan ? n_chan : 1, sizeof *users);   /* unfrozen flows on the channel */
    bool *frozen = calloc(n ? n : 1, sizeof *frozen);
    if (!path || !left || !users || !frozen) sim_fatal("out of memory");
    int rc = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        path[i].first = n_ch;
        rc = trace_path(t, r, &flows[i], &ch, &n_ch, &cap_ch, err, errlen);
        path[i].len = n_ch - path[i].first;
        flows[i].rate_GBps = 0;
    }
    for (uint32_t c = 0; c < n_chan; c++) left[c] = t->links[c / 2].GBps;
    unsigned active = 0;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        if (flows[i].demand_GBps <= 0) { frozen[i] = true; continue; }
        active++;
        for (uint32_t k = 0; k < path[i].len; k++) users[ch[path[i].first + k]]++;
    }
    while (active && rc == 0) {
        double step = INFINITY;
        for (uint32_t c = 0; c < n_chan; c++)
            if (users[c]) step = fmin(step, left[c] / users[c]);
        for (unsigned i = 0; i < n; i++)
            if (!frozen[i]) step = fmin(step, flows[i].demand_GBps - flows[i].rate_GBps);
        for (unsigned i = 0; i < n; i++)
            if (!frozen[i]) flows[i].rate_GBps += step;
        for (uint32_t c = 0; c < n_chan; c++) left[c] -= step * users[c];
        /* freeze flows on full channels and flows at their demand (a relative epsilon for rounding) */
        for (unsigned i = 0; i < n; i++) {
            if (frozen[i]) continue;
            bool done = flows[i].rate_GBps >= flows[i].demand_GBps * (1 - 1e-12);
            for (uint32_t k = 0; k < path[i].len && !done; k++) {
                uint32_t c = ch[path[i].first + k];
                done = left[c] <= t->links[c / 2].GBps * 1e-12;
            }
            if (!done) continue;
            frozen[i] = true;
            active--;
            for (uint32_t k = 0; k < path[i].len; k++) users[ch[path[i].first + k]]--;
        }
    }
    free(ch);
    free(path);
    free(left);
    free(users);
    free(frozen);
    return rc;
}
