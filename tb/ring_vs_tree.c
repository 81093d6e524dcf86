/* ring_vs_tree: all_reduce time against size for NCCL's two algorithms --
 * the ring (2(n-1) steps: latency O(n), bandwidth 2(n-1)/n per byte) and the
 * double binary tree (2 x its height in hops: O(log nodes), but each inner
 * rank sends a chunk to two children) -- on the modelled NVLink/NVSwitch
 * system (models/collective), for several node counts, and the size where
 * the ring starts to win (the crossover) per node count. Nodes: until
 * multi-node DGX systems exist in the topology language, one DGX H100 is
 * cut into `nodes` groups of consecutive GPUs (coll_cfg.gpus_per_node), so
 * the tree between the groups is real and runs on NVLink; the ring is the
 * same ring at every node count. Checks: values right, conservation, the
 * small-size time ratio tree/ring near the ratio of their hop counts, the
 * large-size winner the one with the higher bandwidth prediction. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cJSON.h"
#include "coll_predict.h"
#include "models/collective/collective.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "sim/sim.h"

#define MAX_NODE_COUNTS 8
#define MAX_SIZES 32
#define HOPS_BAND 0.30   /* small sizes: tree/ring time within 30 % of tree/ring hops (a hop: chunk, flag and switch; the ack path differs) */

static const sim_param_def rvt_params[] = {
    SIM_PARAM_STRING("topo", "dgx-h100", "topology of nvgpu and switch nodes (dgx-h100: 8 H100, 4 NVSwitch)"),
    SIM_PARAM_STRING("nodes", "1,2,4,8", "node counts, comma-separated: the GPUs cut into this many groups of consecutive ranks"),
    SIM_PARAM_INT("minbytes", "1024", "bytes", 4, 1 << 30, "smallest size"),
    SIM_PARAM_INT("maxbytes", "16777216", "bytes", 4, 1 << 30, "largest size"),
    SIM_PARAM_INT("stepfactor", "4", "", 2, 1024, "size multiplier between rows"),
    SIM_PARAM_BOOL("check", "1", "carry real floats and count wrong elements (sizes up to 8 MiB)"),
    SIM_PARAM_END,
};

typedef struct point {
    unsigned nodes;
    uint64_t bytes;
    double ring_us, tree_us;
} point;

static void repo_root(char *buf, size_t n)
{
    snprintf(buf, n, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    slash = strrchr(buf, '/');
    if (slash) *slash = 0; else snprintf(buf, n, ".");
}

static void write_plot(sim_test_ctx *c, const point *pts, unsigned npts, const unsigned *counts, unsigned ncounts)
{
    char dat[1024], png[1024], root[1024], script[1100], cmd[4096], list[128] = "";
    snprintf(dat, sizeof dat, "%s/reports/ring_vs_tree.dat", c->out_dir ? c->out_dir : ".");
    snprintf(png, sizeof png, "%s/reports/ring_vs_tree.png", c->out_dir ? c->out_dir : ".");
    sim_mkdir_parents(dat);
    FILE *f = fopen(dat, "w");
    if (!f) return;
    fprintf(f, "# ring_vs_tree: bytes ring_us tree_us, one block per node count\n");
    for (unsigned i = 0; i < npts; i++) {
        if (i && pts[i].nodes != pts[i - 1].nodes) fprintf(f, "\n\n");
        fprintf(f, "%" PRIu64 " %.4f %.4f\n", pts[i].bytes, pts[i].ring_us, pts[i].tree_us);
    }
    fclose(f);
    for (unsigned i = 0; i < ncounts; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? " " : "", counts[i]);
    repo_root(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/plot_ring_vs_tree.gp", root);
    struct stat sb;
    if (stat(script, &sb) != 0) return;
    snprintf(cmd, sizeof cmd, "gnuplot -e \"datafile='%s'; outfile='%s'; nodes='%s'\" '%s' 2>&1", dat, png, list, script);
    if (system(cmd) != 0) fprintf(stderr, "ring_vs_tree: gnuplot failed; %s not written\n", png);
    else sim_report_metric_json(c->report, "plot", cJSON_CreateString(png));
}

static void rvt_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *spec = sim_param_str(p, "topo"), *nodes_s = sim_param_str(p, "nodes");
    uint64_t lo = (uint64_t)sim_param_int(p, "minbytes"), hi = (uint64_t)sim_param_int(p, "maxbytes");
    uint64_t step = (uint64_t)sim_param_int(p, "stepfactor");
    bool check = sim_param_bool(p, "check");
    if (lo > hi) sim_input_error("ring_vs_tree: minbytes=%" PRIu64 " is above maxbytes=%" PRIu64, lo, hi);
    unsigned counts[MAX_NODE_COUNTS], ncounts = 0;
    for (const char *s = nodes_s; *s;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 64 || (*end && *end != ',') || ncounts == MAX_NODE_COUNTS)
            sim_input_error("ring_vs_tree: nodes=%s; allowed: up to %d node counts 1..64, comma-separated", nodes_s, MAX_NODE_COUNTS);
        counts[ncounts++] = (unsigned)v;
        s = *end ? end + 1 : end;
    }
    if (!ncounts) sim_input_error("ring_vs_tree: nodes is empty; allowed: node counts, comma-separated");
    fabric_register_kinds();
    collective_register_kinds();
    topo *t = topo_from_string_or_exit(spec, "nvlink4");
    sim_test_configured(c);

    nvgpu_cfg gc = NVGPU_CFG_DEFAULT;
    coll_cfg cc = COLL_CFG_DEFAULT;
    gc.burst_pkts = cc.chunk_bytes / 128 / 128;
    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = c->trace, .seed = c->seed, .kind_cfg = { { "nvgpu", &gc }, { "switch", &sc } } };
    char err[1024], why[1024], cons_why[1200] = "";
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("ring_vs_tree: topo=%s: %s", spec, err);
    const topo_link *l0 = &t->links[t->nodes[t->endpoint_node[0]].port_link[0]];
    double goodput_link = l0->GBps * 128.0 / (128.0 + l0->overhead_bytes);

    point pts[MAX_NODE_COUNTS * MAX_SIZES];
    unsigned npts = 0, ranks = 0;
    bool conserved = true, right = true, hops_ok = true, winner_ok = true;
    uint64_t checked = 0;
    cJSON *jc = cJSON_CreateArray();
    char hops_why[1024] = "", winner_why[1024] = "";
    for (unsigned ni = 0; ni < ncounts; ni++) {
        /* the one line to change for multi-node topologies: the nodes from the topology (gpus_per_node 0) */
        coll_cfg cn = cc;
        cn.gpus_per_node = 0;
        coll_comm *probe = coll_comm_new(f, &cn, err, sizeof err);
        if (!probe) sim_input_error("ring_vs_tree: topo=%s: %s", spec, err);
        ranks = coll_comm_ranks(probe);
        coll_comm_free(probe);
        if (ranks % counts[ni]) sim_input_error("ring_vs_tree: nodes=%u does not divide the %u GPUs of %s; allowed: divisors of %u", counts[ni], ranks, spec, ranks);
        cn.gpus_per_node = ranks / counts[ni];
        coll_comm *cm = coll_comm_new(f, &cn, err, sizeof err);
        if (!cm) sim_input_error("ring_vs_tree: topo=%s nodes=%u: %s", spec, counts[ni], err);
        unsigned height = coll_predict_tree_height(cm), first = npts;
        char tree_why[256];
        double tree_bw = coll_predict_tree_busbw(cm, goodput_link, gc.reduce_GBps, tree_why, sizeof tree_why);
        unsigned ports = nvgpu_nvlink_ports(sim_fabric_component(f, t->endpoint_node[0]));
        double ring_bw = (coll_comm_channels(cm) < ports ? coll_comm_channels(cm) : ports) * goodput_link;
        for (uint64_t size = lo; size <= hi && npts - first < MAX_SIZES; size *= step) {
            uint64_t count = size / sizeof(float);
            if (!count) continue;
            coll_comm_set_check(cm, check && size <= (8u << 20));
            point *pt = &pts[npts++];
            pt->nodes = counts[ni];
            pt->bytes = count * sizeof(float);
            for (unsigned a = 0; a < 2; a++) {
                coll_result r;
                int bad = a ? coll_tree_all_reduce(cm, count, &r, why, sizeof why) : coll_run(cm, COLL_ALL_REDUCE, count, &r, why, sizeof why);
                if (!bad) bad = sim_fabric_check(f, true, why, sizeof why);
                if (bad && conserved) snprintf(cons_why, sizeof cons_why, "nodes=%u %s size %" PRIu64 ": %s", counts[ni], a ? "tree" : "ring", size, why);
                conserved = conserved && !bad;
                if (r.checked) checked++, right = right && r.wrong == 0;
                *(a ? &pt->tree_us : &pt->ring_us) = (double)r.time_ps / 1e6;
            }
            if (!c->quiet)
                printf("nodes %2u  %10" PRIu64 " B  ring %9.2f us  tree %9.2f us  %s\n", counts[ni], pt->bytes, pt->ring_us, pt->tree_us,
                       pt->tree_us < pt->ring_us ? "tree" : "ring");
            sim_progress(c, (ni + (double)(npts - first) / 12) / ncounts, "nodes %u size %" PRIu64, counts[ni], size);
        }
        /* the crossover: the first size from which the ring is at least as fast (after the tree won below it) */
        long long cross = -1;
        for (unsigned i = first; i < npts; i++)
            if (pts[i].ring_us <= pts[i].tree_us) { cross = i == first ? 0 : (long long)pts[i].bytes; break; }
        char name[64];
        snprintf(name, sizeof name, "crossover_bytes_%unodes", counts[ni]);
        sim_report_metric(c->report, name, (double)cross);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "nodes", counts[ni]);
        cJSON_AddNumberToObject(o, "ranks", ranks);
        cJSON_AddNumberToObject(o, "tree_height_hops", height);
        cJSON_AddNumberToObject(o, "crossover_bytes", (double)cross);
        cJSON_AddNumberToObject(o, "ring_predicted_busbw_GBps", ring_bw);
        cJSON_AddNumberToObject(o, "tree_predicted_busbw_GBps", tree_bw);
        cJSON_AddItemToArray(jc, o);
        if (npts > first) {
            /* small sizes: latency, a hop each -- ring 2(n-1), tree 2 x height */
            double want = (double)height / (ranks - 1), got = pts[first].tree_us / pts[first].ring_us;
            bool ok = fabs(got / want - 1) <= HOPS_BAND;
            if (!ok && hops_ok) snprintf(hops_why, sizeof hops_why, "nodes=%u: tree/ring %.3f at %" PRIu64 " B, hops %u/%u = %.3f", counts[ni], got,
                                         pts[first].bytes, 2 * height, 2 * (ranks - 1), want);
            hops_ok = hops_ok && ok;
            const point *big = &pts[npts - 1];
            bool ring_wins = big->ring_us <= big->tree_us;
            if (ring_wins != (ring_bw >= tree_bw) && winner_ok)
                snprintf(winner_why, sizeof winner_why, "nodes=%u at %" PRIu64 " B: %s faster, predicted busbw ring %.1f, tree %.1f GB/s (%s)",
                         counts[ni], big->bytes, ring_wins ? "ring" : "tree", ring_bw, tree_bw, tree_why);
            winner_ok = winner_ok && ring_wins == (ring_bw >= tree_bw);
        }
        coll_comm_free(cm);
    }
    cJSON *jr = cJSON_CreateArray();
    for (unsigned i = 0; i < npts; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "nodes", pts[i].nodes);
        cJSON_AddNumberToObject(o, "bytes", (double)pts[i].bytes);
        cJSON_AddNumberToObject(o, "ring_us", pts[i].ring_us);
        cJSON_AddNumberToObject(o, "tree_us", pts[i].tree_us);
        cJSON_AddItemToArray(jr, o);
    }
    sim_report_metric_json(c->report, "rows", jr);
    sim_report_metric_json(c->report, "crossover", jc);
    sim_report_metric(c->report, "ranks", ranks);
    c->sim_events = sim_fabric_events(f);
    if (checked)
        sim_check(c->report, "no_wrong_results", right, "%" PRIu64 " runs (ring and tree) checked element by element%s", checked,
                  right ? ", none wrong" : "; some elements differ");
    sim_check(c->report, "small_size_time_follows_hops", hops_ok, "%s", hops_ok ?
              "at the smallest size, tree/ring time is within 30 % of the tree's 2 x height hops over the ring's 2(n-1), at every node count" : hops_why);
    sim_check(c->report, "large_size_winner_follows_bandwidth", winner_ok, "%s", winner_ok ?
              "at the largest size the faster algorithm is the one with the higher busbw prediction (links used x goodput; the tree's busiest port)" : winner_why);
    sim_check(c->report, "conservation", conserved, "%s", conserved ? "every run: credits and slots returned, data sent = received, "
              "every packet freed, links and switches drained" : cons_why);
    write_plot(c, pts, npts, counts, ncounts);
    sim_fabric_free(f);
    topo_free(t);
}

SIM_TEST(ring_vs_tree, "all_reduce time vs size, ring against NCCL's double binary tree, per node count, and the crossover (models/collective)",
         rvt_params, "maxbytes=4194304", rvt_run)
