/* fabric_traffic: Bernoulli traffic of a pattern over any topology (sim/topo.h)
 * built by the fabric (sim/fabric.h) from switch and endpoint components:
 * throughput, latency, link utilisation, conservation, and the zero-load
 * latency measured against the sum along its route. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "sim/pattern.h"
#include "tb/fabric_common.h"

static const sim_param_def traffic_params[] = {
    SIM_PARAM_STRING("topo", "fattree:4", "topology: a generator (ring:8, torus2d:4x4, fattree:4, ...) or a JSON file"),
    SIM_PARAM_STRING("link", "eth-400g", "link preset of the generator's links (and file links without one)"),
    SIM_PARAM_ENUM("pattern", "uniform", SIM_PATTERN_CHOICES, "destinations"),
    SIM_PARAM_DOUBLE("hotspot_frac", "0.2", "", 0, 1, "pattern=hotspot: fraction of every source's packets to endpoint 0"),
    SIM_PARAM_DOUBLE("load", "0.5", "", 0, 1, "offered load per endpoint, fraction of its link rate (Bernoulli per packet slot)"),
    SIM_PARAM_INT("pkt_bytes", "256", "bytes", 1, 1 << 24, "payload per packet (the link's overhead bytes are added)"),
    SIM_PARAM_ENUM("routing", "ecmp", TOPO_ROUTING_CHOICES, "routing tables (dor: mesh/torus only)"),
    SIM_PARAM_DOUBLE("duration_us", "20", "us", 0.001, 1e6, "simulated time the sources run"),
    SIM_PARAM_DOUBLE("warmup_us", "2", "us", 0, 1e6, "time before the measured window"),
    SIM_PARAM_ENUM("partition", "auto", TOPO_PARTITION_CHOICES,
                   "under mpirun: the nodes each rank runs (auto: cut along the slowest links, balanced node counts; "
                   "nodes: equal blocks in topology order; file: each node's \"rank\" in the topo= file)"),
    SIM_PARAM_END,
};

/* The zero-load latency along the route of flow src->dst: per hop the wire
 * time at that link's rate plus its latency, plus each switch's pipeline. */
static double route_latency_ps(const topo *t, const topo_routes *r, uint32_t src, uint32_t dst, uint32_t payload, double pipeline_ns,
                               unsigned *hops)
{
    uint32_t node = t->endpoint_node[src], dnode = t->endpoint_node[dst];
    uint64_t flow = (uint64_t)src * t->n_endpoints + dst;
    int in_port = -1;
    double ps = 0;
    *hops = 0;
    while (node != dnode && *hops < 4096) {
        topo_hop h = topo_route_next(r, node, in_port, dst, flow);
        const topo_link *l = &t->links[t->nodes[node].port_link[h.port]];
        ps += (double)(payload + l->overhead_bytes) * 1000.0 / l->GBps + llround(l->latency_ns * 1000.0);
        unsigned pp;
        node = (uint32_t)topo_peer(t, node, h.port, &pp);
        in_port = (int)pp;
        if (t->nodes[node].kind->forwards) ps += pipeline_ns * 1000.0;
        (*hops)++;
    }
    return ps;
}

/* One packet src -> dst on an empty copy of the system, in a kernel of its own: its latency (ns), -1 if it did not arrive. */
static double zero_load_ns(const topo *t, enum topo_routing routing, const fabric_switch_cfg *sc, uint64_t seed, uint32_t pkt_bytes,
                           uint32_t zs, uint32_t zd, const char *spec)
{
    char err[512];
    sim_kernel *zk = sim_kernel_new();
    fabric_endpoint_cfg zc = { .load = 0, .pkt_bytes = pkt_bytes, .end_ps = SIM_TIME_MAX };
    sim_fabric_cfg zfc = { .routing = routing, .seed = seed, .kind_cfg = { { "endpoint", &zc }, { "switch", sc } } };
    sim_fabric *zf = sim_fabric_new(zk, t, &zfc, err, sizeof err);
    if (!zf) sim_input_error("fabric_traffic: topo=%s: %s", spec, err);
    sim_run(zk, 0);
    fabric_endpoint_send_one(fab_ep(zf, zs), zd, pkt_bytes);
    sim_run(zk, SIM_TIME_MAX);
    fabric_endpoint_stats zst;
    fabric_endpoint_get_stats(fab_ep(zf, zd), &zst);
    sim_fabric_free(zf);
    sim_kernel_free(zk);
    return zst.received_pkts == 1 ? zst.last_latency_ns : -1;
}

static void traffic_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *spec = sim_param_str(p, "topo"), *link = sim_param_str(p, "link");
    enum sim_pattern_kind pk = (enum sim_pattern_kind)sim_param_enum(p, "pattern");
    double load = sim_param_double(p, "load");
    uint32_t pkt_bytes = (uint32_t)sim_param_int(p, "pkt_bytes");
    enum topo_routing routing = (enum topo_routing)sim_param_enum(p, "routing");
    sim_time_ps warmup_ps, end_ps;
    fab_window(c, &warmup_ps, &end_ps);
    double hot_frac = 0;
    if (pk == SIM_PAT_HOTSPOT) hot_frac = sim_param_double(p, "hotspot_frac");
    else sim_param_not_applicable(p, "hotspot_frac", "pattern=%s has no hot endpoint", sim_param_str(p, "pattern"));
    const sim_pdes_transport *tr = c->transport;
    const bool root = !tr || tr->rank == 0;
    enum topo_partition part_how = TOPO_PART_AUTO;
    if (tr) part_how = (enum topo_partition)sim_param_enum(p, "partition");
    else sim_param_not_applicable(p, "partition", "one process: nothing to partition (run under mpirun -np N)");
    sim_test_configured(c);
    fabric_register_kinds();
    topo *t = topo_from_string_or_exit(spec, link);
    char err[512];
    sim_pattern pat = { 0 };
    if (sim_pattern_init(&pat, pk, t->n_endpoints, c->seed, err, sizeof err) != 0)
        sim_input_error("fabric_traffic: pattern=%s: %s", sim_param_str(p, "pattern"), err);
    pat.hot_frac = hot_frac;
    sim_hist lat, netlat;
    sim_hist_init(&lat, "latency_ps");
    sim_hist_init(&netlat, "net_latency_ps");
    fabric_endpoint_cfg ec = { .pattern = &pat, .load = load, .pkt_bytes = pkt_bytes, .warmup_ps = warmup_ps, .end_ps = end_ps,
                               .stop_ps = end_ps, .latency_hist = &lat, .net_latency_hist = &netlat };
    /* the switches' settings are given, so the zero-load prediction uses the same pipeline */
    const fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = routing, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "endpoint", &ec }, { "switch", &sc } } };
    uint32_t *node_part = NULL;
    if (tr) {   /* one system over the ranks: each runs its part (docs/parallel.md) */
        node_part = calloc(t->n_nodes + 1, sizeof *node_part);
        if (topo_partition(t, part_how, tr->size, node_part, err, sizeof err) != 0)
            sim_input_error("fabric_traffic: %s", err);
        fc.transport = tr;
        fc.node_part = node_part;
    }
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("fabric_traffic: topo=%s: %s", spec, err);

    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    fab_run(c, f, warmup_ps, end_ps);
    double window_s = (double)(end_ps - warmup_ps) * 1e-12;
    sim_fabric_gather(f);   /* over ranks: rank 0 sees every link at the window's end */
    char busiest[256];
    double max_util = sim_fabric_max_link_util(f, busiest, sizeof busiest);
    cJSON *util = sim_fabric_link_util_json(f), *bottleneck = sim_fabric_bottleneck_json(f, 5);
    struct timespec s0, s1;   /* the picture (Graphviz) is not simulation time */
    clock_gettime(CLOCK_MONOTONIC, &s0);
    if (root) fab_svg(c, f, spec);
    clock_gettime(CLOCK_MONOTONIC, &s1);
    sim_time_ps last_ps = fab_drain(f);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec) -
                    ((double)(s1.tv_sec - s0.tv_sec) + 1e-9 * (double)(s1.tv_nsec - s0.tv_nsec));
    sim_fabric_gather(f);   /* and every endpoint after the drain */
    fab_totals s;
    fab_sum(f, window_s, &s);
    char why[512] = "";
    int cons = sim_fabric_check_all(f, true, why, sizeof why);
    c->sim_time_ps = last_ps;
    c->sim_events = sim_fabric_events_all(f);
    if (tr) {
        sim_hist_gather(&lat, tr);
        sim_hist_gather(&netlat, tr);
    }
    cJSON *per_rank = sim_fabric_ranks_json(f);
    sim_report_sim_json(c->report, "per_rank", per_rank);
    if (tr) {
        sim_report_sim_json(c->report, "partition", cJSON_CreateString(sim_param_str(p, "partition")));
        sim_report_sim_json(c->report, "lookahead_ns", cJSON_CreateNumber((double)sim_pdes_lookahead_ps(sim_fabric_pdes(f)) / 1000.0));
        unsigned cut = 0;
        for (uint32_t i = 0; i < t->n_links; i++) cut += node_part[t->links[i].a] != node_part[t->links[i].b];
        sim_report_sim_json(c->report, "cut_links", cJSON_CreateNumber(cut));
    }

    /* Zero load: one packet between endpoints far apart (by the predicted latency of their route);
     * a run over ranks reports from rank 0, which measures it in one kernel of its own. */
    const topo_routes *routes = sim_fabric_routes(f);
    double pipeline_ns = sc.pipeline_ns;
    uint32_t zs = 0, zd = 1;
    double zpred = -1;
    unsigned zhops = 0;
    /* every pair up to 64 endpoints; beyond, a double sweep (farthest from 0, then farthest to that one) */
    const bool every_pair = t->n_endpoints <= 64;
    for (uint32_t a = 0; a < (every_pair ? t->n_endpoints : 1); a++)
        for (uint32_t b = 0; b < t->n_endpoints; b++) {
            unsigned h;
            if (a == b) continue;
            double ps = route_latency_ps(t, routes, a, b, pkt_bytes, pipeline_ns, &h);
            if (ps > zpred) zpred = ps, zs = a, zd = b, zhops = h;
        }
    for (uint32_t a = 0, b = zd; !every_pair && a < t->n_endpoints; a++) {
        unsigned h;
        if (a == b) continue;
        double ps = route_latency_ps(t, routes, a, b, pkt_bytes, pipeline_ns, &h);
        if (ps > zpred) zpred = ps, zs = a, zhops = h;
    }
    double zero_ns = -1;
    if (root) zero_ns = zero_load_ns(t, routing, &sc, c->seed, pkt_bytes, zs, zd, spec);

    sim_report *rep = c->report;
    uint32_t n_sw = t->n_nodes - t->n_endpoints;
    sim_report_metric(rep, "throughput", s.throughput);
    sim_report_metric(rep, "accepted_GBps", (double)s.win_payload / window_s * 1e-9);
    sim_report_metric(rep, "latency_ns_p50", sim_hist_percentile(&lat, 50) / 1000.0);   /* the histogram holds whole ps */
    sim_report_metric(rep, "latency_ns_p99", sim_hist_percentile(&lat, 99) / 1000.0);
    sim_report_metric(rep, "zero_load_latency_ns", zero_ns);
    sim_report_metric(rep, "hops_mean", s.win_pkts ? (double)s.win_hops / (double)s.win_pkts : 0);
    sim_report_metric(rep, "max_link_util", max_util);
    sim_report_metric_json(rep, "link_util", util);
    sim_report_metric_json(rep, "bottleneck", bottleneck);
    sim_report_metric(rep, "dropped", (double)s.dropped);
    sim_report_metric(rep, "duplicated", (double)s.duplicated);
    sim_report_metric(rep, "out_of_order", (double)s.out_of_order);
    sim_report_metric(rep, "endpoints", t->n_endpoints);
    sim_report_metric(rep, "switches", n_sw);
    sim_report_metric(rep, "links", t->n_links);
    sim_report_metric(rep, "wall_s", wall_s);
    sim_report_metric(rep, "hops_per_wall_s", wall_s > 0 ? (double)s.win_hops / wall_s : 0);
    sim_report_metric(rep, "pkts_per_wall_s", wall_s > 0 ? (double)s.win_pkts / wall_s : 0);
    if (!c->quiet) fprintf(stderr, "fabric_traffic: busiest link %s at %.3f\n", busiest, max_util);

    sim_check(rep, "conservation", cons == 0, "after the drain: %s", cons ? why : "links and components conserve");
    sim_check(rep, "nothing_dropped", s.dropped == 0 && s.backlog == 0, "%" PRIu64 " packets sent and never received, %" PRIu64
              " still at sources", s.dropped, s.backlog);
    sim_check(rep, "nothing_duplicated", s.duplicated == 0, "%" PRIu64 " packets received more than sent", s.duplicated);
    /* every routing mode keeps a flow on one path (ecmp hashes the flow), so order holds per flow */
    sim_check(rep, "in_order_per_flow", s.out_of_order == 0, "%" PRIu64 " packets behind a later one of their flow", s.out_of_order);
    sim_check(rep, "zero_load_latency_exact", fabs(zero_ns * 1000.0 - zpred) <= 1.0 + zhops,
              "one packet endpoint %u -> %u over %u hops: %.4f ns measured vs %.4f ns (wire + link latency per hop, %g ns per switch)",
              zs, zd, zhops, zero_ns, zpred / 1000.0, pipeline_ns);
    /* Below saturation on a non-blocking fat tree every offered byte is
     * carried -- once the network is full: the sinks count arrivals in the
     * window, so a warm-up shorter than the time packets take to cross leaves
     * the window's start short of arrivals. Judged only after two p99
     * latencies (and two zero-load ones) of warm-up. */
    bool nonblocking = !strncmp(t->generator, "fattree", 7) && pk == SIM_PAT_UNIFORM;
    double fill_ps = 2.0 * fmax(zpred, sim_hist_percentile(&lat, 99));
    if (nonblocking && load > 0 && load <= 0.5 && (double)warmup_ps >= fill_ps) {
        double pkts = load * window_s * 1e12 / (((double)pkt_bytes + t->links[0].overhead_bytes) * 1000.0 / t->links[0].GBps) *
                      t->n_endpoints;
        double tol = 4.0 * sqrt(load * (1 - load) / (pkts / load)) + 0.02 * load;
        sim_check(rep, "carries_offered_load", fabs(s.throughput - load) <= tol,
                  "throughput %.4f vs offered %.4f (+-%.4f: 2%% + 4 sigma of Bernoulli arrivals)", s.throughput, load, tol);
    }
    sim_fabric_free(f);
    free(node_part);
    sim_hist_free(&lat);
    sim_hist_free(&netlat);
    sim_pattern_free(&pat);
    topo_free(t);
}

SIM_TEST_RANKED(fabric_traffic, "patterned Bernoulli traffic over a topology built by the fabric: throughput, latency, link use, conservation",
         traffic_params, "duration_us=4 warmup_us=1", traffic_run)
