/* The fabric builder (sim/fabric.h): components from registered kinds, two
 * sim links per topology link, routing tables and multicast groups. */
#include "sim/fabric.h"
#include "sim/fabric_cut.h"
#include "sim/fabric_impl.h"
#include "sim/pdes.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FABRIC_KINDS 32
static const sim_fabric_kind *fabric_kinds[MAX_FABRIC_KINDS];
static unsigned n_fabric_kinds;

void sim_fabric_kind_register(const sim_fabric_kind *k)
{
    for (unsigned i = 0; i < n_fabric_kinds; i++)
        if (!strcmp(fabric_kinds[i]->name, k->name)) return;   /* twice is harmless */
    if (n_fabric_kinds == MAX_FABRIC_KINDS) sim_fatal("too many fabric kinds (max %d)", MAX_FABRIC_KINDS);
    if (!k->build || !k->connect || !k->free) sim_fatal("fabric kind %s: build, connect and free are required", k->name);
    fabric_kinds[n_fabric_kinds++] = k;
}

const sim_fabric_kind *sim_fabric_kind_find(const char *name)
{
    for (unsigned i = 0; name && i < n_fabric_kinds; i++)
        if (!strcmp(fabric_kinds[i]->name, name)) return fabric_kinds[i];
    return NULL;
}


sim_kernel *sim_fabric_kernel(const sim_fabric *f) { return f->k; }

bool sim_fabric_node_local(const sim_fabric *f, uint32_t node)
{
    return !f->ranked || f->cfg.node_part[node] == f->cfg.transport->rank;
}

sim_kernel *sim_fabric_node_kernel(const sim_fabric *f, uint32_t node)
{
    if (f->ranked) return sim_fabric_node_local(f, node) ? f->k : f->replica_k;
    return f->pdes ? f->cfg.part_kernels[f->cfg.node_part[node]] : f->k;
}

sim_time_ps sim_fabric_run(sim_fabric *f, sim_time_ps until_ps)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sim_time_ps t = f->pdes ? sim_pdes_run(f->pdes, until_ps) : sim_run(f->k, until_ps);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    f->run_wall_s += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return t;
}

bool sim_fabric_run_until_quiet(sim_fabric *f, sim_time_ps step_ps, unsigned max_steps)
{
    for (unsigned i = 0; i < max_steps; i++) {
        bool quiet = true;
        for (uint32_t l = 0; quiet && l < f->t->n_links; l++)
            for (unsigned d = 0; d < 2; d++) quiet = quiet && sim_link_in_flight(sim_fabric_link(f, l, d)) == 0;
        if (quiet) return true;
        sim_fabric_run(f, sim_now(f->k) + step_ps);
    }
    return false;
}

struct sim_pdes *sim_fabric_pdes(const sim_fabric *f) { return f->pdes; }

uint64_t sim_fabric_events(const sim_fabric *f) { return f->pdes ? sim_pdes_events(f->pdes) : sim_event_count(f->k); }

/* The link a direction's receiver takes it from. */
static sim_link *rx_link(const sim_fabric *f, size_t i) { return f->rx_links && f->rx_links[i] ? f->rx_links[i] : f->links[i]; }
const topo *sim_fabric_topo(const sim_fabric *f) { return f->t; }
const topo_routes *sim_fabric_routes(const sim_fabric *f) { return f->routes; }
sim_groups *sim_fabric_groups(sim_fabric *f) { return f->groups; }
sim_trace *sim_fabric_trace(const sim_fabric *f) { return f->cfg.trace; }
void *sim_fabric_component(const sim_fabric *f, uint32_t node) { return node < f->t->n_nodes ? f->comp[node] : NULL; }
sim_link *sim_fabric_link(const sim_fabric *f, uint32_t link, unsigned dir)
{
    return link < f->t->n_links && dir < 2 ? f->links[2 * link + dir] : NULL;
}

const void *sim_fabric_kind_cfg(const sim_fabric *f, const char *kind)
{
    for (unsigned i = 0; i < SIM_FABRIC_MAX_KIND_CFGS; i++)
        if (f->cfg.kind_cfg[i].kind && !strcmp(f->cfg.kind_cfg[i].kind, kind)) return f->cfg.kind_cfg[i].cfg;
    return NULL;
}

/* splitmix64 of (seed, node): streams of neighbouring nodes are unrelated. */
uint64_t sim_fabric_node_seed(const sim_fabric *f, uint32_t node)
{
    uint64_t z = f->cfg.seed ^ (0x9e3779b97f4a7c15ull * ((uint64_t)node + 1));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static sim_fabric *fail(sim_fabric *f, char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    snprintf(err, errlen, fmt, a, b);
    sim_fabric_free(f);
    return NULL;
}

/* A sim link for link direction di (a whole link or either half of a cut):
 * same-time arrivals on it fire in direction order, whoever sent first (kernel.h). */
static sim_link *direction_link(sim_kernel *k, const sim_link_cfg *lc, size_t di)
{
    sim_link *l = sim_link_new(k, lc);
    sim_link_set_order_key(l, 1 + 2 * (uint32_t)di);
    return l;
}

sim_fabric *sim_fabric_new(sim_kernel *k, const topo *t, const sim_fabric_cfg *cfg, char *err, size_t errlen)
{
    char why[384];
    if (!t || !t->finished) {
        snprintf(err, errlen, "the topology is not finished (topo_finish)");
        return NULL;
    }
    if (t->n_links > (SIM_ORDER_KEY_MAX - 2) / 4) {   /* each direction takes two order keys */
        snprintf(err, errlen, "%u links; the fabric orders at most %u", t->n_links, (SIM_ORDER_KEY_MAX - 2) / 4);
        return NULL;
    }
    const bool ranked = cfg->transport != NULL, parted = ranked || cfg->parts > 1;
    const unsigned parts = ranked ? cfg->transport->size : cfg->parts;
    if (parted) {
        if ((!ranked && !cfg->part_kernels) || !cfg->node_part) {
            snprintf(err, errlen, "a partitioned fabric needs node_part, and part_kernels or a transport");
            return NULL;
        }
        if (ranked && cfg->trace) {
            snprintf(err, errlen, "waves of a run over ranks are not written yet: use trace=0");
            return NULL;
        }
        for (uint32_t n = 0; n < t->n_nodes; n++) {
            const sim_fabric_kind *kd = sim_fabric_kind_find(t->nodes[n].kind->name);
            if (cfg->node_part[n] >= parts) {
                snprintf(err, errlen, "node %s in part %u of %u", t->nodes[n].name, cfg->node_part[n], parts);
                return NULL;
            }
            if (kd && !kd->partitionable) {
                snprintf(err, errlen, "node %s: kind %s cannot be partitioned (its links defer or are planned ahead on); "
                         "partitionable kinds: those of models/fabric", t->nodes[n].name, kd->name);
                return NULL;
            }
        }
        if (!ranked) k = cfg->part_kernels[0];
    }
    sim_fabric *f = calloc(1, sizeof *f);
    f->k = k;
    f->t = t;
    f->cfg = *cfg;
    f->ranked = ranked;
    if (parted) {
        f->pdes = ranked ? sim_pdes_new_ranked(cfg->transport, k) : sim_pdes_new(cfg->parts, cfg->part_kernels);
        f->rx_links = calloc(2 * (size_t)t->n_links + 1, sizeof *f->rx_links);
    }
    if (ranked) {
        f->replica_k = sim_kernel_new();
        f->cut_rx = calloc(2 * (size_t)t->n_links + 1, sizeof *f->cut_rx);
    }
    f->groups = sim_groups_new();
    f->kind = calloc(t->n_nodes, sizeof *f->kind);
    f->comp = calloc(t->n_nodes, sizeof *f->comp);
    f->port_base = calloc(t->n_nodes + 1, sizeof *f->port_base);
    for (uint32_t n = 0; n < t->n_nodes; n++) f->port_base[n + 1] = f->port_base[n] + t->nodes[n].nports;
    f->ingress = calloc(f->port_base[t->n_nodes] + 1, sizeof *f->ingress);
    f->ports = calloc(f->port_base[t->n_nodes] + 1, sizeof *f->ports);
    f->port_names = calloc(f->port_base[t->n_nodes] + 1, sizeof *f->port_names);
    f->links = calloc(2 * (size_t)t->n_links + 1, sizeof *f->links);
    f->link_names = calloc(2 * (size_t)t->n_links + 1, sizeof *f->link_names);

    f->routes = topo_routes_new(t, cfg->routing, why, sizeof why);
    if (!f->routes) return fail(f, err, errlen, "routing: %s%s", why, "");
    /* Every fabric link is lossless (credits), so a cycle of channel
     * dependencies can deadlock: refuse it before the run rather than hang. */
    if (!cfg->allow_route_cycles && topo_routes_check_cdg(f->routes, true, why, sizeof why) == 1) {
        static const char *const names[] = { "ecmp", "single", "dor", "updown" };
        return fail(f, err, errlen,
                    "routing=%s: these routes can deadlock on lossless (credited) links: %s; use routing=dor on rings, meshes "
                    "and tori (dateline VCs) or routing=updown",
                    names[cfg->routing], why);
    }
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        const topo_node *nd = &t->nodes[n];
        f->kind[n] = sim_fabric_kind_find(nd->kind->name);
        if (!f->kind[n])
            return fail(f, err, errlen, "node '%s': no component kind '%s' is registered (call the model's *_register_kinds)",
                        nd->name, nd->kind->name);
    }
    for (uint32_t n = 0; n < t->n_nodes; n++) {   /* build */
        why[0] = 0;
        f->comp[n] = f->kind[n]->build(f, n, why, sizeof why);
        if (!f->comp[n]) return fail(f, err, errlen, "node '%s': %s", t->nodes[n].name, why[0] ? why : "refused");
    }
    for (uint32_t n = 0; n < t->n_nodes; n++)     /* ingress */
        for (unsigned p = 0; p < t->nodes[n].nports; p++) {
            sim_fabric_ingress *in = &f->ingress[f->port_base[n] + p];
            if (t->nodes[n].port_link[p] < 0 || !f->kind[n]->ingress) continue;
            f->kind[n]->ingress(f->comp[n], p, in);
            if (in->credit_types > SIM_LINK_MAX_CREDIT_TYPES || (in->credit_types && !in->credit_bytes)) {
                char pn[TOPO_NAME_MAX + 8];
                topo_port_name(t, n, p, pn, sizeof pn);
                return fail(f, err, errlen, "port %s: ingress asks for %s (credit_types <= 64, credit_bytes > 0 with credits)", pn,
                            "bad flow control");
            }
        }
    for (uint32_t i = 0; i < t->n_links; i++) {   /* links */
        const topo_link *tl = &t->links[i];
        for (unsigned d = 0; d < 2; d++) {
            uint32_t from = d ? tl->b : tl->a, to = d ? tl->a : tl->b;
            unsigned fp = d ? tl->b_port : tl->a_port, tp = d ? tl->a_port : tl->b_port;
            char a[TOPO_NAME_MAX + 8], b[TOPO_NAME_MAX + 8];
            topo_port_name(t, from, fp, a, sizeof a);
            topo_port_name(t, to, tp, b, sizeof b);
            snprintf(f->link_names[2 * i + d], sizeof f->link_names[0], "%s->%s", a, b);
            const sim_fabric_ingress *in = &f->ingress[f->port_base[to] + tp];
            sim_link_cfg lc = { .name = f->link_names[2 * i + d],
                                .latency_ps = (sim_time_ps)llround(tl->latency_ns * 1000.0),
                                .bandwidth_GBps = tl->GBps,
                                .credit_latency_ps = SIM_LINK_SAME_LATENCY,
                                .credit_types = in->credit_types };
            for (unsigned v = 0; v < in->credit_types; v++) lc.credits[v] = in->credits[v];
            const size_t di = 2 * (size_t)i + d;
            if (ranked && !(sim_fabric_node_local(f, from) && sim_fabric_node_local(f, to))) {
                /* over ranks: our half of a cut (by direction index on both ranks), or nothing between two replicas */
                if (sim_fabric_node_local(f, from)) {
                    f->links[di] = direction_link(k, &lc, di);
                    sim_pdes_cut_sending(f->pdes, f->links[di], cfg->node_part[to], (uint32_t)di, sim_fabric_cut_send_codec());
                } else if (sim_fabric_node_local(f, to)) {
                    f->rx_links[di] = direction_link(k, &lc, di);
                    f->cut_rx[di] = sim_fabric_cut_rx_new(f->link_names[di]);
                    sim_pdes_cut_receiving(f->pdes, f->rx_links[di], cfg->node_part[from], (uint32_t)di,
                                           sim_fabric_cut_rx_codec(f->cut_rx[di]));
                }
                continue;
            }
            f->links[di] = direction_link(sim_fabric_node_kernel(f, from), &lc, di);
            if (cfg->trace) sim_link_trace(f->links[di], cfg->trace, (sim_link_label_fn)sim_pkt_label);
            if (parted && cfg->node_part[from] != cfg->node_part[to]) {   /* cut: a receiving half in the receiver's part */
                f->rx_links[di] = direction_link(sim_fabric_node_kernel(f, to), &lc, di);
                sim_pdes_cut(f->pdes, f->links[di], cfg->node_part[from], f->rx_links[di], cfg->node_part[to]);
            }
        }
    }
    for (uint32_t n = 0; n < t->n_nodes; n++)     /* connect (a replica is never connected) */
        for (unsigned p = 0; sim_fabric_node_local(f, n) && p < t->nodes[n].nports; p++) {
            int li = t->nodes[n].port_link[p];
            if (li < 0) continue;
            const topo_link *tl = &t->links[li];
            unsigned d = (tl->a == n && tl->a_port == p) ? 0 : 1;
            sim_fabric_port *sp = &f->ports[f->port_base[n] + p];
            unsigned pp;
            sp->node = n;
            sp->port = p;
            sp->name = topo_port_name(t, n, p, f->port_names[f->port_base[n] + p], sizeof f->port_names[0]);
            sp->out = f->links[2 * li + d];
            sp->in = rx_link(f, 2 * (size_t)li + (1 - d));
            sp->peer_node = (uint32_t)topo_peer(t, n, p, &pp);
            sp->peer_port = pp;
            sp->link = tl;
            const sim_fabric_ingress *pin = &f->ingress[f->port_base[sp->peer_node] + pp];
            sp->out_credit_types = pin->credit_types;
            sp->out_credit_bytes = pin->credit_bytes;
            f->kind[n]->connect(f->comp[n], sp);
        }
    for (uint32_t n = 0; n < t->n_nodes; n++)     /* start */
        if (f->kind[n]->start && sim_fabric_node_local(f, n)) f->kind[n]->start(f->comp[n]);
    return f;
}

/* Every packet the components hold or the links carry, back to its pool once. */
static void give_back_packets(sim_fabric *f)
{
    sim_pkt_set h = { 0 };
    for (uint32_t n = 0; f->comp && n < f->t->n_nodes; n++)
        if (f->comp[n] && f->kind[n]->held) f->kind[n]->held(f->comp[n], sim_pkt_set_add, &h);
    for (size_t i = 0; f->links && i < 2 * (size_t)f->t->n_links; i++) {
        if (f->links[i]) sim_link_for_each_in_flight(f->links[i], sim_pkt_set_add_msg, &h);
        if (f->rx_links && f->rx_links[i]) sim_link_for_each_in_flight(f->rx_links[i], sim_pkt_set_add_msg, &h);
    }
    sim_pkt_set_free_all(&h);
}

void sim_fabric_free(sim_fabric *f)
{
    if (!f) return;
    give_back_packets(f);
    for (uint32_t n = 0; f->comp && n < f->t->n_nodes; n++)
        if (f->comp[n]) f->kind[n]->free(f->comp[n]);
    for (size_t i = 0; f->links && i < 2 * (size_t)f->t->n_links; i++)
        if (f->links[i]) sim_link_free(f->links[i]);
    for (size_t i = 0; f->rx_links && i < 2 * (size_t)f->t->n_links; i++) sim_link_free(f->rx_links[i]);
    sim_pdes_free(f->pdes);
    free(f->rx_links);
    for (size_t i = 0; f->cut_rx && i < 2 * (size_t)f->t->n_links; i++) sim_fabric_cut_rx_free(f->cut_rx[i]);   /* packets all back */
    free(f->cut_rx);
    if (f->replica_k) sim_kernel_free(f->replica_k);
    if (f->routes) topo_routes_free(f->routes);
    sim_groups_free(f->groups);
    free(f->kind);
    free(f->comp);
    free(f->port_base);
    free(f->ingress);
    free(f->ports);
    free(f->port_names);
    free(f->links);
    free(f->link_names);
    free(f->gathered);
    free(f->have);
    free(f);
}

int sim_fabric_check(const sim_fabric *f, bool drained, char *why, size_t why_n)
{
    char w[384];
    for (size_t i = 0; i < 2 * (size_t)f->t->n_links; i++)
        if ((f->links[i] && sim_link_check(f->links[i], drained, w, sizeof w)) ||
            (rx_link(f, i) && rx_link(f, i) != f->links[i] && sim_link_check(rx_link(f, i), drained, w, sizeof w))) {
            snprintf(why, why_n, "link %s: %s", f->link_names[i], w);
            return -1;
        }
    for (uint32_t n = 0; n < f->t->n_nodes; n++) {
        w[0] = 0;
        if (f->kind[n]->check && sim_fabric_node_local(f, n) && f->kind[n]->check(f->comp[n], drained, w, sizeof w)) {
            snprintf(why, why_n, "node %s: %s", f->t->nodes[n].name, w[0] ? w : "check failed");
            return -1;
        }
    }
    return 0;
}

void sim_fabric_reset_stats(sim_fabric *f)
{
    for (size_t i = 0; i < 2 * (size_t)f->t->n_links; i++) {
        if (f->links[i]) sim_link_reset_stats(f->links[i]);
        if (rx_link(f, i) && rx_link(f, i) != f->links[i]) sim_link_reset_stats(rx_link(f, i));
    }
    for (uint32_t n = 0; n < f->t->n_nodes; n++)
        if (f->kind[n]->reset_stats && sim_fabric_node_local(f, n)) f->kind[n]->reset_stats(f->comp[n]);
}
