/* The cost estimate behind proto=auto (tuning.h).
 *
 * Per protocol, from the configuration only:
 *   hop_ns     one write from GPU to GPU through the NVSwitch: two link
 *              latencies, the switch's pipeline_ns, and two serialisations of
 *              one packet (the switch stores and forwards);
 *   step_ns    what a step costs before the next rank may use it: Simple one
 *              hop for the data, one back for the write response (the fence),
 *              one for the flag; LL and LL128 one hop (the flags ride in the
 *              lines);
 *   chunk      min(slot, the channel's share of a block), its wire time at the
 *              link's packet goodput x the protocol's line efficiency, and its
 *              reduction at reduce_GBps where the step reduces;
 *   time       ring: steps x (step_ns + chunk time) for the first chunk, plus
 *              the rest of the channel's chunks at the busier of the link and
 *              the reduction unit (pipelined); tree: 2 x height steps the same
 *              way, the busiest port carrying the tree's shares.
 * The protocol with the lowest time wins: LL at small sizes (one hop a step),
 * LL128 in between, Simple at large sizes (every wire byte data). */
#include "models/collective/tuning.h"
#include "models/collective/coll_impl.h"
#include "models/fabric/switch.h"

#include <math.h>
#include <string.h>

typedef struct link_facts {
    double goodput_GBps;   /* data bytes/ns of full NVLink packets */
    double hop_ns;         /* one small write GPU -> switch -> GPU */
    double reduce_GBps;
} link_facts;

static link_facts facts(const coll_comm *c)
{
    const topo *t = sim_fabric_topo(c->f);
    const topo_node *n = &t->nodes[nvgpu_node(c->rank[0].g)];
    const topo_link *l = &t->links[n->port_link[0]];
    const fabric_switch_cfg *sc = sim_fabric_kind_cfg(c->f, "switch");
    const nvgpu_cfg *gc = sim_fabric_kind_cfg(c->f, "nvgpu");
    static const fabric_switch_cfg sdef = FABRIC_SWITCH_CFG_DEFAULT;
    static const nvgpu_cfg gdef = NVGPU_CFG_DEFAULT;
    if (!sc) sc = &sdef;
    if (!gc) gc = &gdef;
    link_facts f;
    double pkt_wire = NVGPU_PKT_PAYLOAD_BYTES + l->overhead_bytes;
    f.goodput_GBps = l->GBps * NVGPU_PKT_PAYLOAD_BYTES / pkt_wire;
    f.hop_ns = 2.0 * l->latency_ns + sc->pipeline_ns + 2.0 * pkt_wire / l->GBps;
    f.reduce_GBps = gc->reduce_GBps;
    return f;
}

/* The tree's height (hops of the longest root-to-rank path over both trees) and its busiest port's share (in units of the buffer). */
static void tree_shape(const coll_comm *c, unsigned *height, double *port_share)
{
    unsigned C = coll_tree_channels(c), h = 0, ports = nvgpu_nvlink_ports(c->rank[0].g);
    double load[COLL_MAX_RANKS][NVGPU_MAX_PORTS] = { { 0 } }, lmax = 0;
    for (unsigned ch = 0; ch < C; ch++)
        for (unsigned r = 0; r < c->n; r++) {
            int parent;
            unsigned kids[COLL_TREE_MAX_CHILDREN], p = coll_tree_port(c, ch) % ports;
            unsigned nk = coll_tree_peers(c, ch, r, &parent, kids);
            for (unsigned i = 0; i < nk; i++) load[r][p] += 1.0 / C, load[kids[i]][p] += 1.0 / C;
            unsigned d = 0;
            while (parent >= 0 && d <= c->n) {   /* up to the root */
                d++;
                coll_tree_peers(c, ch, (unsigned)parent, &parent, kids);
            }
            h = d > h ? d : h;
        }
    for (unsigned r = 0; r < c->n; r++)
        for (unsigned p = 0; p < ports; p++) lmax = load[r][p] > lmax ? load[r][p] : lmax;
    *height = h;
    *port_share = lmax;
}

double coll_tune_estimate_us(const coll_comm *c, bool tree, enum coll_op op, uint64_t count, enum coll_proto p)
{
    const coll_proto_def *d = coll_proto_get(p);
    link_facts f = facts(c);
    double eb = coll_dtype_bytes(c->cfg.dtype), bytes = (double)count * eb;
    double bw = f.goodput_GBps * coll_proto_efficiency(p);   /* data bytes per ns on one link direction */
    double step_ns = (d->fence ? 3.0 : 1.0) * f.hop_ns;
    double slot = coll_proto_slot_bytes(p, c->cfg.chunk_bytes, (unsigned)eb);
    unsigned n = c->n;
    if (!tree) {
        unsigned C = c->channels, steps = op == COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
        unsigned red_steps = op == COLL_ALL_GATHER ? 0 : n - 1;   /* steps that reduce */
        double share = ceil(bytes / n / C / eb) * eb;   /* a channel's part of a block */
        double chunk = share < slot ? share : slot, chunks = share > 0 ? share / chunk : 0;   /* the last one partial */
        double t_chunk = (double)coll_proto_payload_bytes(p, (uint64_t)chunk) / f.goodput_GBps;   /* its lines at the packet goodput */
        double t_red = chunk / f.reduce_GBps * C;   /* the unit is shared by the GPU's channels */
        double first = steps * (step_ns + t_chunk) + red_steps * (chunk / f.reduce_GBps);
        double per_chunk = steps * (t_chunk > t_red ? t_chunk : t_red);
        return (first + (chunks > 1 ? (chunks - 1) * per_chunk : 0)) / 1e3;
    }
    unsigned h;
    double port_share;
    tree_shape(c, &h, &port_share);
    unsigned C = coll_tree_channels(c);
    double share = ceil(bytes / C / eb) * eb;
    double chunk = share < slot ? share : slot, chunks = share > 0 ? share / chunk : 0;
    double t_chunk = (double)coll_proto_payload_bytes(p, (uint64_t)chunk) / f.goodput_GBps;
    double first = 2.0 * h * (step_ns + t_chunk) + h * (chunk / f.reduce_GBps);
    /* the rest at the busiest port direction: port_share x bytes of data through it, up and down */
    double rest = chunks > 1 ? (chunks - 1) / chunks * port_share * bytes / bw : 0;
    return (first + rest) / 1e3;
}

enum coll_proto coll_tune_proto(const coll_comm *c, bool tree, enum coll_op op, uint64_t count, double est_us[COLL_PROTOS])
{
    enum coll_proto best = COLL_PROTO_SIMPLE;
    double best_us = INFINITY;
    for (unsigned p = 0; p < COLL_PROTOS; p++) {
        double t = coll_tune_estimate_us(c, tree, op, count, (enum coll_proto)p);
        if (est_us) est_us[p] = t;
        if (t < best_us) best_us = t, best = (enum coll_proto)p;
    }
    return best;
}

void coll_set_run_proto(coll_comm *c, bool tree, uint64_t count)
{
    c->proto = c->cfg.proto == COLL_PROTO_AUTO ? coll_tune_proto(c, tree, c->op, count, NULL) : c->cfg.proto;
    c->pd = coll_proto_get(c->proto);
}
