/* fabric_bisection: saturating traffic across the topology's balanced cut
 * (topo_bisection_compute): every endpoint sends at full rate to one endpoint
 * on the other side (a permutation across the cut). The bytes measured
 * crossing each way are compared with numbers computed from the graph before
 * the run: the min-cut (the summed one-direction rate of the cut links,
 * topo_bisection.GBps) and the rate of the cut links the routes actually use
 * (oblivious routes leave some idle: a ring's dimension order crosses each
 * cut link one way only), both bounds; and the flows' max-min fair share on
 * their routes (topo_flows_maxmin), what a fair network would deliver. A
 * lossless network with greedy sources delivers less than the fair share
 * where flows back up into buffers other flows need (congestion spreading,
 * victim flows): fair_share_delivered says how much, the link table where. */
#include <math.h>
#include <stdlib.h>

#include "tb/fabric_common.h"

static const sim_param_def bisection_params[] = {
    SIM_PARAM_STRING("topo", "fattree:4", "topology: a generator or a JSON file"),
    SIM_PARAM_STRING("link", "eth-400g", "link preset of the generator's links"),
    SIM_PARAM_INT("pkt_bytes", "256", "bytes", 1, 1 << 24, "payload per packet"),
    SIM_PARAM_ENUM("routing", "ecmp", TOPO_ROUTING_CHOICES, "routing tables (dor: mesh/torus only)"),
    SIM_PARAM_DOUBLE("duration_us", "20", "us", 0.001, 1e6, "simulated time the sources run"),
    SIM_PARAM_DOUBLE("warmup_us", "2", "us", 0, 1e6, "time before the measured window"),
    SIM_PARAM_END,
};

/* Saturating sources keep the busiest link on their routes at least this busy
 * over the window (its first packets arrive within the warm-up). */
#define BISECTION_SATURATED 0.90

/* What the routes let cross the cut, computed from the graph and the tables
 * before the run. maxmin[s]: the max-min fair share of the flows from side
 * s (topo_flows_maxmin), what a fair network would carry; cut[s]: the summed
 * rate of the cut links the flows from side s actually use, a bound no
 * network can beat (a ring's routes cross the cut one way per direction, so
 * half of the min-cut). used[c]: channel c is on some flow's path. */
typedef struct routed {
    double maxmin[2], cut[2];
    bool *used;
} routed;

static void routed_predict(const topo *t, const sim_fabric *f, const uint32_t *dst_map, const topo_bisection *b, routed *out)
{
    uint32_t n = t->n_endpoints, n_flows = 0, n_chan = 2 * t->n_links;
    topo_flow *fl = calloc(n, sizeof *fl);
    uint32_t *path = malloc((t->n_nodes + 1) * sizeof *path);
    uint8_t *cut_by = calloc(n_chan, 1);   /* bit s: a flow from side s crosses the cut on this channel */
    out->used = calloc(n_chan, sizeof *out->used);
    if (!fl || !path || !cut_by || !out->used) sim_fatal("out of memory");
    for (uint32_t e = 0; e < n; e++) {
        if (dst_map[e] == UINT32_MAX) continue;
        const topo_link *l = &t->links[t->nodes[t->endpoint_node[e]].port_link[0]];
        fl[n_flows] = (topo_flow){ .src = e, .dst = dst_map[e], .flow_id = (uint64_t)e * n + dst_map[e], .demand_GBps = l->GBps };
        int len = topo_flow_path(t, sim_fabric_routes(f), e, dst_map[e], fl[n_flows].flow_id, path, t->n_nodes + 1);
        if (len < 0) sim_fatal("fabric_bisection: no route %u -> %u", e, dst_map[e]);
        for (int k = 0; k < len; k++) {
            const topo_link *pl = &t->links[path[k] / 2];
            out->used[path[k]] = true;
            if (b->node_side[pl->a] != b->node_side[pl->b]) cut_by[path[k]] |= (uint8_t)(1u << b->endpoint_side[e]);
        }
        n_flows++;
    }
    char err[256];
    if (topo_flows_maxmin(t, sim_fabric_routes(f), fl, n_flows, err, sizeof err) != 0) sim_fatal("fabric_bisection: %s", err);
    for (int s = 0; s < 2; s++) out->maxmin[s] = out->cut[s] = 0;
    for (uint32_t i = 0; i < n_flows; i++) out->maxmin[b->endpoint_side[fl[i].src]] += fl[i].rate_GBps;
    for (uint32_t c = 0; c < n_chan; c++)
        for (int s = 0; s < 2; s++)
            if (cut_by[c] >> s & 1) out->cut[s] += t->links[c / 2].GBps;
    free(cut_by);
    free(path);
    free(fl);
}

/* The busiest channel any flow's route uses (saturating sources must fill one). */
static double busiest_used(const topo *t, const sim_fabric *f, const bool *used)
{
    double best = 0;
    for (uint32_t c = 0; c < 2 * t->n_links; c++)
        if (used[c]) best = fmax(best, sim_link_utilisation(sim_fabric_link(f, c / 2, c & 1)));
    return best;
}

static void bisection_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *spec = sim_param_str(p, "topo"), *link = sim_param_str(p, "link");
    uint32_t pkt_bytes = (uint32_t)sim_param_int(p, "pkt_bytes");
    enum topo_routing routing = (enum topo_routing)sim_param_enum(p, "routing");
    sim_time_ps warmup_ps, end_ps;
    fab_window(c, &warmup_ps, &end_ps);
    sim_test_configured(c);
    fabric_register_kinds();
    topo *t = topo_from_string_or_exit(spec, link);
    char err[512];
    topo_bisection b;
    if (topo_bisection_compute(t, TOPO_BISECTION_EXACT_MAX, &b, err, sizeof err) != 0)
        sim_input_error("fabric_bisection: topo=%s: %s", spec, err);
    /* side 0's i-th endpoint <-> side 1's i-th: a permutation across the cut */
    uint32_t n = t->n_endpoints, *side_list[2], n_side[2] = { 0, 0 };
    side_list[0] = calloc(n, sizeof(uint32_t));
    side_list[1] = calloc(n, sizeof(uint32_t));
    uint32_t *dst_map = calloc(n, sizeof *dst_map);
    for (uint32_t e = 0; e < n; e++) side_list[b.endpoint_side[e] ? 1 : 0][n_side[b.endpoint_side[e] ? 1 : 0]++] = e;
    for (uint32_t e = 0; e < n; e++) dst_map[e] = UINT32_MAX;
    uint32_t pairs = n_side[0] < n_side[1] ? n_side[0] : n_side[1];
    for (uint32_t i = 0; i < pairs; i++) {
        dst_map[side_list[0][i]] = side_list[1][i];
        dst_map[side_list[1][i]] = side_list[0][i];
    }
    fabric_endpoint_cfg ec = { .dst_map = dst_map, .load = 1.0, .pkt_bytes = pkt_bytes, .warmup_ps = warmup_ps, .end_ps = end_ps,
                               .stop_ps = end_ps };
    sim_fabric_cfg fc = { .routing = routing, .trace = c->trace, .seed = c->seed, .kind_cfg = { { "endpoint", &ec } } };
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("fabric_bisection: topo=%s: %s", spec, err);
    routed rt;
    routed_predict(t, f, dst_map, &b, &rt);
    fab_run(c, f, warmup_ps, end_ps);
    double window_s = (double)(end_ps - warmup_ps) * 1e-12;
    char busiest[256];
    double max_util = sim_fabric_max_link_util(f, busiest, sizeof busiest), used_util = busiest_used(t, f, rt.used);
    cJSON *util = sim_fabric_link_util_json(f);
    fab_svg(c, f, spec);
    fab_drain(f);
    fab_totals s;
    fab_sum(f, window_s, &s);
    char why[512] = "";
    int cons = sim_fabric_check(f, true, why, sizeof why);
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);
    /* wire GBps received inside the window on side 1 from side 0 (cross[0]) and back (cross[1]) */
    double cross[2] = { 0, 0 };
    for (int from = 0; from < 2; from++) {
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < n_side[!from]; i++) {
            const uint64_t *by_src = fabric_endpoint_win_bytes_from(fab_ep(f, side_list[!from][i]));
            for (uint32_t j = 0; j < n_side[from]; j++) bytes += by_src[side_list[from][j]];
        }
        cross[from] = (double)bytes / window_s * 1e-9;
    }
    double ratio = b.GBps > 0 ? cross[0] / b.GBps : 0;
    sim_report *rep = c->report;
    sim_report_metric(rep, "bisection_GBps", cross[0]);
    sim_report_metric(rep, "bisection_GBps_theory", b.GBps);
    sim_report_metric(rep, "bisection_ratio", ratio);
    sim_report_metric(rep, "bisection_GBps_reverse", cross[1]);
    sim_report_metric(rep, "bisection_GBps_routed_bound", rt.cut[0]);
    sim_report_metric(rep, "bisection_GBps_reverse_routed_bound", rt.cut[1]);
    sim_report_metric(rep, "bisection_GBps_fair", rt.maxmin[0]);
    sim_report_metric(rep, "bisection_GBps_reverse_fair", rt.maxmin[1]);
    sim_report_metric(rep, "fair_share_delivered", rt.maxmin[0] + rt.maxmin[1] > 0 ? (cross[0] + cross[1]) / (rt.maxmin[0] + rt.maxmin[1]) : 0);
    sim_report_metric(rep, "cut_links", b.cut_links);
    sim_report_metric(rep, "cut_exact", b.exact);
    sim_report_metric(rep, "throughput", s.throughput);
    sim_report_metric(rep, "dropped", (double)s.dropped);
    sim_report_metric(rep, "duplicated", (double)s.duplicated);
    sim_report_metric(rep, "out_of_order", (double)s.out_of_order);
    sim_report_metric(rep, "endpoints", n);
    sim_report_metric(rep, "max_link_util", max_util);
    sim_report_metric_json(rep, "link_util", util);
    sim_check(rep, "conservation", cons == 0, "after the drain: %s", cons ? why : "links and components conserve");
    sim_check(rep, "nothing_lost", s.dropped == 0 && s.duplicated == 0, "%" PRIu64 " lost, %" PRIu64 " duplicated", s.dropped,
              s.duplicated);
    /* bounds from the graph (2% for the window's edges): the min-cut, and the cut links these routes use */
    sim_check(rep, "below_theory", cross[0] <= 1.02 * b.GBps && cross[1] <= 1.02 * b.GBps,
              "%.2f / %.2f GBps crossed the cut each way, the min-cut allows %.2f GBps (ratio %.4f <= 1.02)", cross[0], cross[1], b.GBps,
              ratio);
    sim_check(rep, "below_routed_bound", cross[0] <= 1.02 * rt.cut[0] && cross[1] <= 1.02 * rt.cut[1],
              "%.2f / %.2f GBps crossed each way; the cut links the routes use carry at most %.2f / %.2f GBps", cross[0], cross[1],
              rt.cut[0], rt.cut[1]);
    /* saturating sources fill at least one link on their routes, unless the network idles (a lost wake-up, leaked credits) */
    sim_check(rep, "route_link_saturated", used_util >= BISECTION_SATURATED,
              "busiest link on the routes %.1f %% busy in the window (>= %.0f %%)", 100 * used_util, 100 * BISECTION_SATURATED);
    sim_fabric_free(f);
    topo_bisection_free(&b);
    free(rt.used);
    free(side_list[0]);
    free(side_list[1]);
    free(dst_map);
    topo_free(t);
}

SIM_TEST(fabric_bisection, "saturating cross-cut permutation: measured bisection bandwidth against the topology's min-cut",
         bisection_params, "duration_us=4 warmup_us=1", bisection_run)
