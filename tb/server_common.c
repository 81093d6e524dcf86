/* Shared by the server tests: goodput model, hops, bottleneck (tb/server_common.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cJSON.h"
#include "models/pcie/pcie_port.h"
#include "models/server/server.h"
#include "sim/sim.h"
#include "tb/server_common.h"

double srv_ref_raw_GBps(unsigned gen, unsigned lanes)
{
    static const double gt[7] = { 0, 2.5, 5, 8, 16, 32, 64 };
    double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 1.0;
    return gt[gen] * enc * lanes / 8.0;
}

double srv_ref_skp_frac(unsigned gen) { return gen <= 2 ? 4.0 / 1180.0 : 20.0 / (370.0 * 16.0); }

double srv_ref_data_GBps(unsigned gen, unsigned lanes, double payload, double hdr, bool with_skp)
{
    double raw = srv_ref_raw_GBps(gen, lanes);
    double eff = gen == 6 ? 236.0 / 256.0 * payload / (payload + hdr) : payload / (payload + hdr + 8.0);
    return raw * eff * (with_skp ? 1.0 - srv_ref_skp_frac(gen) : 1.0);
}

double srv_read_rtt_ns(unsigned gen, unsigned lanes, unsigned mps, unsigned mrrs, unsigned hops, double wire_ns, double rx_ns,
                       double switch_ns, double mem_ns)
{
    double sw_ns = (hops - 1) * switch_ns;
    return 24.0 / srv_ref_raw_GBps(gen, lanes) + hops * (2 * wire_ns + 2 * rx_ns) + 2 * sw_ns + mem_ns + mrrs / srv_ref_data_GBps(gen, lanes, mps, 12, false);
}

void srv_add_path(srv_hops *r, const topo *t, uint32_t a, uint32_t b)
{
    uint32_t dist[SRV_PATH_NODES];
    if (t->n_nodes > SRV_PATH_NODES) sim_fatal("server test: %u nodes, at most %d", t->n_nodes, SRV_PATH_NODES);
    topo_bfs_to(t, b, dist);
    for (uint32_t u = a; u != b;) {
        unsigned q = 0;
        int w = -1;
        for (; q < t->nodes[u].nports; q++) {
            w = topo_peer(t, u, q, NULL);
            if (w >= 0 && dist[w] + 1 == dist[u]) break;
        }
        if (q == t->nodes[u].nports) sim_fatal("server test: no path from %s to %s", t->nodes[a].name, t->nodes[b].name);
        uint32_t li = (uint32_t)t->nodes[u].port_link[q];
        unsigned d = t->links[li].a == u ? 0 : 1;
        for (unsigned back = 0; back < 2; back++) {
            unsigned dd = d ^ back, i = 0;
            while (i < r->n && !(r->h[i].link == li && r->h[i].dir == dd)) i++;
            if (i == r->n) {
                if (r->n == SRV_MAX_HOPS) sim_fatal("server test: more than %d hops", SRV_MAX_HOPS);
                const topo_link *l = &t->links[li];
                uint32_t from = dd ? l->b : l->a, to = dd ? l->a : l->b;
                unsigned fp = dd ? l->b_port : l->a_port, tp = dd ? l->a_port : l->b_port;
                r->h[i] = (srv_hop){ .link = li, .dir = dd };
                char pa[TOPO_NAME_MAX + 8], pb[TOPO_NAME_MAX + 8];   /* the fabric's own link names */
                topo_port_name(t, from, fp, pa, sizeof pa);
                topo_port_name(t, to, tp, pb, sizeof pb);
                snprintf(r->h[i].name, sizeof r->h[i].name, "%s->%s", pa, pb);
                r->n++;
            }
            if (!back) r->h[i].data = true;
        }
        u = (uint32_t)w;
    }
}

void srv_add_resource(srv_hops *r, const char *name, double util)
{
    if (r->n == SRV_MAX_HOPS) sim_fatal("server test: more than %d hops", SRV_MAX_HOPS);
    srv_hop *h = &r->h[r->n++];
    *h = (srv_hop){ .link = SRV_NO_LINK, .data = true, .util = util };
    snprintf(h->name, sizeof h->name, "%s", name);
}

unsigned srv_path_hops(const topo *t, uint32_t a, uint32_t b)
{
    uint32_t dist[SRV_PATH_NODES];
    if (t->n_nodes > SRV_PATH_NODES) sim_fatal("server test: %u nodes, at most %d", t->n_nodes, SRV_PATH_NODES);
    topo_bfs_to(t, b, dist);
    return dist[a];
}

bool srv_ports_quiet(const sim_fabric *f, const topo *t)
{
    for (uint32_t n = 0; n < t->n_nodes; n++)
        for (unsigned q = 0; q < t->nodes[n].nports; q++) {
            pcie_port *p = server_node_port(f, n, q);
            if (p && (pcie_port_replay_occupancy(p) || pcie_port_rx_buffered(p))) return false;
        }
    return true;
}

void srv_measure_hops(srv_hops *r, sim_fabric *f, const topo *t, double window_ns)
{
    for (unsigned i = 0; i < r->n; i++) {
        srv_hop *hp = &r->h[i];
        if (hp->link == SRV_NO_LINK) continue;
        const topo_link *l = &t->links[hp->link];
        pcie_port *sender = server_node_port(f, hp->dir ? l->b : l->a, hp->dir ? l->b_port : l->a_port);
        hp->util = window_ns > 0 ? (double)sim_link_window_bytes(sim_fabric_link(f, hp->link, hp->dir)) / l->GBps / window_ns : 0;
        hp->stall_ns = (double)pcie_port_stall_ps(sender) / 1000.0;
    }
}

unsigned srv_report_hops(sim_report *rep, const srv_hops *r, double window_ns)
{
    unsigned worst = 0;
    double worst_score = -1;
    cJSON *util = cJSON_CreateObject(), *stall = cJSON_CreateObject();
    for (unsigned i = 0; i < r->n; i++) {
        cJSON_AddNumberToObject(util, r->h[i].name, r->h[i].util);
        cJSON_AddNumberToObject(stall, r->h[i].name, r->h[i].stall_ns);
        double score = fmax(r->h[i].util, window_ns > 0 ? r->h[i].stall_ns / window_ns : 0);
        if (score > worst_score) worst_score = score, worst = i;
    }
    sim_report_metric_json(rep, "link_util", util);
    sim_report_metric_json(rep, "credit_stall_ns", stall);
    sim_report_metric_json(rep, "bottleneck", cJSON_CreateString(r->n ? r->h[worst].name : "-"));
    return worst;
}

void srv_count_host_and_p2p(sim_fabric *f, const topo *t, uint32_t hn, uint64_t *dram_bytes, uint64_t *host_tlps,
                            uint64_t *p2p_tlps)
{
    server_host *h = sim_fabric_component(f, hn);
    server_copy_stats hs;
    server_host_stats(h, &hs);
    *dram_bytes = hs.dram_bytes;
    *host_tlps = *p2p_tlps = 0;
    pcie_port_counters pc;
    for (unsigned q = 0; q < t->nodes[hn].nports; q++) {
        pcie_port_get_counters(server_host_port(h, q), &pc);
        *host_tlps += pc.tl_received;
    }
    for (uint32_t n = 0; n < t->n_nodes; n++)
        if (!strcmp(t->nodes[n].kind->name, "pcie_switch")) *p2p_tlps += server_switch_p2p_tlps(sim_fabric_component(f, n));
}
