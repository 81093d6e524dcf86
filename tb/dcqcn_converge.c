/* dcqcn_converge: DCQCN's convergence on one bottleneck (models/network,
 * docs/models/network.md). `flows` RoCE v2 senders, each on its own NIC,
 * send without end to one receiver through one eth_switch; flow i starts at
 * i x stagger_us. The switch marks ECN by RED on the bottleneck's egress
 * queue, the receiver sends CNPs, the senders cut and recover their rates
 * (DCQCN). Measured per flow in bins of bin_us: its goodput at the receiver
 * and its limiter's rate Rc.
 * Predictions (configuration only): the fair share is the bottleneck's payload
 * line rate / flows; DCQCN holds the queue by marking, so after convergence
 * its 99th percentile stays below Kmax (where RED marks every packet), far
 * below the PFC threshold. Metrics: fairness (Jain's index over the late window),
 * convergence_us (after the last start, until every flow's rate averaged over
 * hold_us is within 10 % of its fair share), queue_bytes_p99 (late window), total_GBps, and
 * reports/dcqcn_converge.dat/.png (scripts/plot_dcqcn_converge.gp). */
#include "tb/roce_common.h"

#include <sys/stat.h>

#include <cjson/cJSON.h>

#define MAX_FLOWS 16

static const sim_param_def dcqcn_converge_params[] = {
    ROCE_COMMON_PARAMS,
    SIM_PARAM_INT("flows", "2", "", 2, MAX_FLOWS, "senders sharing the bottleneck"),
    SIM_PARAM_DOUBLE("stagger_us", "500", "us", 0, 1e5, "flow i starts at i x stagger_us"),
    SIM_PARAM_DOUBLE("duration_us", "6000", "us", 100, 1e6, "simulated time"),
    SIM_PARAM_DOUBLE("bin_us", "50", "us", 1, 1e5, "rate-vs-time bin"),
    SIM_PARAM_DOUBLE("hold_us", "500", "us", 0, 1e5, "convergence: rates averaged over this long within 10 % of fair"),
    SIM_PARAM_INT("buffer_bytes", "4194304", "B", 16384, 1000000000, "switch shared buffer"),
    SIM_PARAM_BOOL("pfc", "1", "PFC on (0: lossy, tail drop)"),
    SIM_PARAM_END,
};

static void write_plot(sim_test_ctx *c, const double *rate, const double *rc, size_t nbins, unsigned nf, double bin_us,
                       double fair_Gbps, const char *link)
{
    char path[1024], png[1024], root[1024], script[1100], cmd[4096];
    snprintf(path, sizeof path, "%s/reports/dcqcn_converge.dat", c->out_dir ? c->out_dir : ".");
    snprintf(png, sizeof png, "%s/reports/dcqcn_converge.png", c->out_dir ? c->out_dir : ".");
    sim_mkdir_parents(path);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# dcqcn_converge: %s, %u flows, fair %.3f Gb/s\n# time_us", link, nf, fair_Gbps);
    for (unsigned i = 0; i < nf; i++) fprintf(f, " goodput%u_Gbps", i);
    for (unsigned i = 0; i < nf; i++) fprintf(f, " rc%u_Gbps", i);
    fprintf(f, "\n");
    for (size_t b = 0; b < nbins; b++) {
        fprintf(f, "%.1f", (b + 1) * bin_us);
        for (unsigned i = 0; i < nf; i++) fprintf(f, " %.4f", rate[b * nf + i]);
        for (unsigned i = 0; i < nf; i++) fprintf(f, " %.4f", rc[b * nf + i]);
        fprintf(f, "\n");
    }
    fclose(f);
    sim_source_root(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/plot_dcqcn_converge.gp", root);
    struct stat sb;
    if (stat(script, &sb) != 0) return;
    snprintf(cmd, sizeof cmd, "gnuplot -e \"datafile='%s'; outfile='%s'; nflows=%u; fair=%.4f; title_text='%s, %u flows'\" '%s' 2>&1",
             path, png, nf, fair_Gbps, link, nf, script);
    int rc_ = system(cmd);
    if (rc_ != 0) fprintf(stderr, "dcqcn_converge: gnuplot failed (rc %d); %s not written\n", rc_, png);
    else sim_report_metric_json(c->report, "plot", cJSON_CreateString(png));
}

static void dcqcn_converge_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *link = sim_param_str(p, "link");
    unsigned mtu = (unsigned)sim_param_int(p, "mtu");
    unsigned nf = (unsigned)sim_param_int(p, "flows");
    double stagger_us = sim_param_double(p, "stagger_us"), duration_us = sim_param_double(p, "duration_us");
    double bin_us = sim_param_double(p, "bin_us"), hold_us = sim_param_double(p, "hold_us");
    eth_switch_cfg sc;
    roce_switch_cfg_read(p, &sc);
    sc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
    sc.pfc = sim_param_bool(p, "pfc");
    sc.ecn = true;
    if (!sc.pfc) roce_pfc_params_not_applicable(p, "pfc=0: no PAUSE frames (lossy, tail drop)");
    roce_nic_cfg nc = { .dcqcn = true, .cnp_prio = 6, .queue_pkts = 2 };
    roce_dcqcn_cfg_read(p, &nc.dc);
    double last_start_us = stagger_us * (nf - 1);
    if (last_start_us + 2 * hold_us >= duration_us)
        sim_input_error("dcqcn_converge: duration_us=%g; allowed > the last start (%g us) + 2 x hold_us (%g us)", duration_us,
                        last_start_us, 2 * hold_us);
    if (sc.kmax_bytes <= sc.kmin_bytes)
        sim_input_error("dcqcn_converge: kmin_bytes=%g kmax_bytes=%g; allowed kmin_bytes < kmax_bytes", sc.kmin_bytes, sc.kmax_bytes);
    sim_test_configured(c);

    network_register_kinds();
    char err[512];
    topo *t = topo_new(link, err, sizeof err);
    char name[32], end[48];
    int ok = t && topo_add_node(t, "sw", "eth_switch", (const char *const[]){ "ports=17", NULL }, err, sizeof err) >= 0;
    for (unsigned i = 0; ok && i < nf; i++) {
        snprintf(name, sizeof name, "h%u", i);
        snprintf(end, sizeof end, "sw.p%u", i);
        ok = topo_add_node(t, name, "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, name, end, link, -1, -1, err, sizeof err) >= 0;
    }
    ok = ok && topo_add_node(t, "rx", "roce_nic", NULL, err, sizeof err) >= 0 &&
         topo_add_link(t, "rx", "sw.p16", link, -1, -1, err, sizeof err) >= 0 && topo_finish(t, err, sizeof err) == 0;
    if (!ok) sim_fatal("dcqcn_converge: topology: %s", err);
    uint32_t rx_node = (uint32_t)(nf + 1), rx_ep = (uint32_t)t->nodes[rx_node].endpoint;
    roce_flow flows[MAX_FLOWS];
    for (unsigned i = 0; i < nf; i++)
        flows[i] = (roce_flow){ .src = (uint32_t)t->nodes[i + 1].endpoint, .dst = rx_ep, .prio = 3, .payload_bytes = mtu,
                                .bytes = UINT64_MAX, .start_us = i * stagger_us };
    nc.flows = flows;
    nc.n_flows = nf;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", &sc } } };
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("dcqcn_converge: %s", err);
    eth_switch *sw = sim_fabric_component(f, 0);
    roce_nic *rx = sim_fabric_component(f, rx_node);
    const eth_port *bott = eth_switch_port(sw, 16);
    const topo_preset *pr = topo_preset_find(link);
    double good_GBps = roce_goodput_GBps(pr, mtu), fair_Gbps = good_GBps * 8 / nf;

    size_t nbins = (size_t)(duration_us / bin_us);
    double *rate = calloc(nbins * nf, sizeof *rate), *rcs = calloc(nbins * nf, sizeof *rcs);
    size_t q_cap = (size_t)(duration_us * 10) + 16, q_n = 0;
    double *qs = malloc(q_cap * sizeof *qs);   /* the bottleneck queue every 100 ns in the late window */
    double q_max = 0;
    uint64_t prev[MAX_FLOWS] = { 0 };
    if (!rate || !rcs || !qs) sim_fatal("out of memory");
    sim_time_ps sample_ps = SIM_NS(100), bin_ps = (sim_time_ps)(bin_us * 1e6 + 0.5);
    /* the late window: the last third of the time after the last start */
    size_t b_last = (size_t)ceil(last_start_us / bin_us), b_late = nbins - (nbins - b_last) / 3;
    for (size_t b = 0; b < nbins; b++) {
        sim_time_ps bin_end = (sim_time_ps)(b + 1) * bin_ps;
        while (sim_now(c->k) < bin_end) {
            sim_time_ps next = sim_now(c->k) + sample_ps;
            sim_fabric_run(f, next < bin_end ? next : bin_end);
            double q = (double)eth_port_queued_bytes(bott, 3);
            if (q > q_max) q_max = q;
            if (b >= b_late && q_n < q_cap) qs[q_n++] = q;
        }
        for (unsigned i = 0; i < nf; i++) {
            uint64_t got = roce_nic_flow_rx_bytes(rx, i);
            rate[b * nf + i] = (double)(got - prev[i]) * 8 / (bin_us * 1000.0);
            prev[i] = got;
            rcs[b * nf + i] = roce_nic_flow_rp(sim_fabric_component(f, i + 1), i)->rc_Gbps;
        }
        sim_progress(c, (double)(b + 1) / nbins, "%.0f of %.0f us", (b + 1) * bin_us, duration_us);
    }

    double mean[MAX_FLOWS] = { 0 }, total_Gbps = 0;
    for (unsigned i = 0; i < nf; i++) {
        for (size_t b = b_late; b < nbins; b++) mean[i] += rate[b * nf + i];
        mean[i] /= (double)(nbins - b_late);
        total_Gbps += mean[i];
    }
    double fairness = roce_jain(mean, nf);
    /* convergence: the first bin after the last start from which every flow's
     * rate, averaged over hold_us (DCQCN's sawtooth spans several bins), is within 10 % of fair */
    size_t hold_bins = (size_t)ceil(hold_us / bin_us);
    if (!hold_bins) hold_bins = 1;
    double convergence_us = -1;
    for (size_t b = b_last; b + hold_bins <= nbins && convergence_us < 0; b++) {
        bool in = true;
        for (unsigned i = 0; i < nf && in; i++) {
            double m = 0;
            for (size_t j = b; j < b + hold_bins; j++) m += rate[j * nf + i];
            in = fabs(m / (double)hold_bins - fair_Gbps) <= 0.1 * fair_Gbps;
        }
        if (in) convergence_us = (double)b * bin_us - last_start_us;
    }
    double q_p99 = roce_quantile(qs, q_n, 0.99), q_p50 = roce_quantile(qs, q_n, 0.5);
    eth_switch_stats ss = eth_switch_stats_get(sw);
    const roce_nic_stats *rs = roce_nic_stats_get(rx);
    uint64_t cnps = rs->cnps_sent;

    sim_report *rep = c->report;
    sim_report_metric(rep, "fairness", fairness);
    sim_report_metric(rep, "convergence_us", convergence_us);
    sim_report_metric(rep, "queue_bytes_p99", q_p99);
    sim_report_metric(rep, "queue_bytes_p50", q_p50);
    sim_report_metric(rep, "queue_bytes_max", q_max);
    sim_report_metric(rep, "late_window_us", (double)(nbins - b_late) * bin_us);
    sim_report_metric(rep, "total_GBps", total_Gbps / 8);
    sim_report_metric(rep, "line_goodput_GBps", good_GBps);
    sim_report_metric(rep, "fair_Gbps", fair_Gbps);
    sim_report_metric(rep, "cnps", (double)cnps);
    sim_report_metric(rep, "ecn_marked", (double)ss.marked);
    sim_report_metric(rep, "drops", (double)ss.dropped);
    sim_report_metric(rep, "lost", (double)rs->lost);
    cJSON *per = cJSON_CreateArray();
    for (unsigned i = 0; i < nf; i++) {
        cJSON *o = cJSON_CreateObject();
        const dcqcn_rp *rp = roce_nic_flow_rp(sim_fabric_component(f, i + 1), i);
        cJSON_AddNumberToObject(o, "flow", i);
        cJSON_AddNumberToObject(o, "start_us", flows[i].start_us);
        cJSON_AddNumberToObject(o, "late_Gbps", mean[i]);
        cJSON_AddNumberToObject(o, "rate_cuts", (double)rp->cuts);
        cJSON_AddNumberToObject(o, "alpha_end", rp->alpha);
        cJSON_AddItemToArray(per, o);
    }
    sim_report_metric_json(rep, "flows", per);

    char why[400] = "";
    int bad = sim_fabric_check(f, false, why, sizeof why);
    sim_check(rep, "conservation", !bad && rs->out_of_order == 0, "%s", bad ? why : "every component's packets and buffer accounts consistent, in order");
    sim_check(rep, "fairness_after_convergence", fairness >= 0.9, "Jain's index %.3f over the late window (limit >= 0.9)", fairness);
    sim_check(rep, "converged", convergence_us >= 0, "every flow within 10%% of %.2f Gb/s averaged over %.0f us: %s", fair_Gbps, hold_us,
              convergence_us >= 0 ? "yes" : "never");
    /* the queue: held by marking, below Kmax (where every packet is marked), never by the buffer */
    sim_check(rep, "queue_in_red_band", q_p99 <= sc.kmax_bytes, "late-window queue p99 %.0f B <= Kmax %.0f B (p50 %.0f B)", q_p99,
              sc.kmax_bytes, q_p50);
    sim_check(rep, "throughput_near_line", total_Gbps / 8 >= 0.9 * good_GBps, "late total %.3f GB/s of line goodput %.3f GB/s (limit >= 90%%)",
              total_Gbps / 8, good_GBps);
    if (sc.pfc) sim_check(rep, "lossless_with_pfc", ss.dropped == 0 && rs->lost == 0, "%llu dropped, %llu lost", (unsigned long long)ss.dropped, (unsigned long long)rs->lost);
    write_plot(c, rate, rcs, nbins, nf, bin_us, fair_Gbps, link);
    free(rate), free(rcs), free(qs);
    sim_fabric_free(f);
    topo_free(t);
}

SIM_TEST(dcqcn_converge, "DCQCN: staggered RoCE v2 flows on one bottleneck converge to fair shares with the queue in the RED band",
         dcqcn_converge_params, "", dcqcn_converge_run)
