/* ib_credit: InfiniBand link-level credits on one link (models/network,
 * docs/models/network.md). Two HCAs on one IB link; the first streams MTU
 * packets on one SL at line rate, the second consumes them at once. For each
 * VL buffer size in a list, goodput against the prediction
 *     predicted = min(rate goodput, window / credit loop)
 * with window = whole packets the buffer's advertisement holds and the credit
 * loop from the configuration only (never measured):
 *     fc_trigger=free:   loop = ser(packet) + latency + ser(FC packet) + latency
 *     fc_trigger=period: the same + fc_period_ns (each credit waits at most one period)
 * Writes the table into the report, reports/ib_credit.dat and reports/ib_credit.png
 * (gnuplot, scripts/plot_ib_credit.gp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "models/network/network.h"
#include "sim/sim.h"

#define MAX_POINTS 64

static const sim_param_def ib_credit_params[] = {
    SIM_PARAM_ENUM("link", "ib-ndr", "ib-hdr|ib-ndr|ib-xdr", "link preset (rate, per-packet overhead)"),
    SIM_PARAM_DOUBLE("latency_ns", "100", "ns", 0, 1e6, "one-way wire latency (the preset's is 100 ns)"),
    SIM_PARAM_INT("mtu", "4096", "B", 256, 4096, "payload per packet: 256, 512, 1024, 2048 or 4096"),
    SIM_PARAM_STRING("vl_buffer_bytes", "4352,8704,13056,17408,26112,65536",
                     "receive buffer per VL, a list: each size is one point (at least one packet each)"),
    SIM_PARAM_INT("vls", "2", "", 1, IB_MAX_VLS, "data VLs on the link"),
    SIM_PARAM_INT("sl", "0", "", 0, 15, "service level of the stream (VL = SL mod vls)"),
    SIM_PARAM_DOUBLE("fc_period_ns", "0", "ns", 0, 1e7, "periodic FC packet per VL (0: the IBA bound, 65,536 symbol times)"),
    SIM_PARAM_ENUM("fc_trigger", "free", "free|period",
                   "free: FC packets also as soon as blocks are freed; period: only periodic ones"),
    SIM_PARAM_INT("pkts", "2000", "", 100, 100000000, "packets per point (the first tenth is warm-up)"),
    SIM_PARAM_END,
};

/* Tolerances. Rising part: the prediction is exact up to the sender's own
 * periodic FC packets (8 B each) delaying a data packet, so 2% catches an
 * extra latency term of a few ns. The plateau: within 1% of the rate. The
 * period trigger's prediction is a bound (a credit waits between 0 and one
 * period), so its band is [predicted, upper] with 2% either side. */
#define RISE_TOL 0.02
#define FLAT_TOL 0.01

typedef struct point {
    uint32_t buffer_bytes, adv_blocks, window_pkts;
    double goodput_GBps, predicted_GBps, upper_GBps, credit_loop_ns, credit_stall_ns;
    uint64_t fc_packets, sent, received, fctbs, abr, credits_end;
    bool ok;
    char why[400];
} point;

static int parse_list(const char *s, uint32_t *v, unsigned max)
{
    unsigned n = 0;
    const char *c = s;
    while (*c) {
        char *end;
        double x = strtod(c, &end);
        if (end == c || x < 1 || x > 4294967295.0 || x != floor(x)) return -1;
        if (n == max) return -2;
        v[n++] = (uint32_t)x;
        c = end;
        if (*c == ',') c++;
        else if (*c) return -1;
    }
    return (int)n;
}

static uint64_t total_time_ps, total_events;

static void run_point(sim_kernel *k_in, sim_trace *tr, const char *link, double latency_ns, const ib_port_cfg *pc,
                      const ib_flow *flow, double expect_ns, point *pt)
{
    char err[512];
    topo *t = topo_new(link, err, sizeof err);
    if (!t || topo_add_node(t, "hca0", "ib_hca", NULL, err, sizeof err) < 0 ||
        topo_add_node(t, "hca1", "ib_hca", NULL, err, sizeof err) < 0 ||
        topo_add_link(t, "hca0", "hca1", link, latency_ns, -1, err, sizeof err) < 0 || topo_finish(t, err, sizeof err))
        sim_fatal("ib_credit: topology: %s", err);
    ib_hca_cfg hc = { .port = *pc, .flows = flow, .n_flows = 1, .queue_pkts = 2, .warmup_pkts = flow->packets / 10 };
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = tr, .kind_cfg = { { "ib_hca", &hc } } };
    sim_kernel *k = k_in ? k_in : sim_kernel_new();
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("ib_credit: %s", err);
    ib_hca *src = sim_fabric_component(f, 0), *dst = sim_fabric_component(f, 1);
    /* the run ends when the last packet arrived (periodic FC packets never stop) */
    sim_time_ps step = (sim_time_ps)(expect_ns * 1000.0 / 4) + SIM_NS(1000), limit = (sim_time_ps)(expect_ns * 1000.0 * 20) + SIM_US(100);
    while (ib_hca_stats_get(dst)->received < flow->packets && sim_now(k) < limit) sim_fabric_run(f, sim_now(k) + step);
    /* two more loops: the last credits come home */
    sim_fabric_run(f, sim_now(k) + (sim_time_ps)(2 * pt->credit_loop_ns * 1000.0) + SIM_NS(10));
    const ib_hca_stats *ds = ib_hca_stats_get(dst);
    const ib_port *sp = ib_hca_port(src), *dp = ib_hca_port(dst);
    unsigned vl = pc->sl2vl[flow->sl];
    pt->sent = ib_hca_flow_sent(src, 0);
    pt->received = ib_hca_flow_received(dst, 0);
    double win_ns = (double)(ds->last_arrival_ps - ds->window_start_ps) / 1000.0;
    pt->goodput_GBps = win_ns > 0 ? (double)ds->window_payload_bytes / win_ns : 0;
    const ib_port_stats sst = ib_port_stats_get(sp), dst_st = ib_port_stats_get(dp);
    pt->credit_stall_ns = (double)sst.credit_stall_ps / 1000.0;
    pt->fc_packets = dst_st.fc_sent;
    pt->fctbs = sst.fctbs_total[vl];
    pt->abr = dst_st.abr_total[vl];
    pt->credits_end = ib_port_credits(sp, vl);
    char why[384] = "";
    int bad = sim_fabric_check(f, false, why, sizeof why);
    pt->ok = !bad && pt->sent == flow->packets && pt->received == pt->sent && pt->fctbs == pt->abr &&
             pt->credits_end == pt->adv_blocks && ib_port_used_blocks(dp, vl) == 0 && ib_port_queued(sp, vl) == 0;
    if (bad) snprintf(pt->why, sizeof pt->why, "%s", why);
    else if (!pt->ok)
        snprintf(pt->why, sizeof pt->why, "sent %llu received %llu of %llu, FCTBS %llu vs ABR %llu, credits at the end %llu of %u",
                 (unsigned long long)pt->sent, (unsigned long long)pt->received, (unsigned long long)flow->packets,
                 (unsigned long long)pt->fctbs, (unsigned long long)pt->abr, (unsigned long long)pt->credits_end, pt->adv_blocks);
    total_time_ps += sim_now(k);
    total_events += sim_event_count(k);
    sim_fabric_free(f);
    topo_free(t);
    if (!k_in) sim_kernel_free(k);
}

static void write_plot(sim_test_ctx *c, const point *pts, unsigned n, double rate_GBps, double loop_ns, const char *link,
                       unsigned mtu, double latency_ns, bool period)
{
    char path[1024], png[1024], root[1024], script[1100], cmd[4096];
    snprintf(path, sizeof path, "%s/reports/ib_credit.dat", c->out_dir ? c->out_dir : ".");
    snprintf(png, sizeof png, "%s/reports/ib_credit.png", c->out_dir ? c->out_dir : ".");
    sim_mkdir_parents(path);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# ib_credit: %s MTU %u latency %.0f ns fc_trigger=%s rate_goodput_GBps %.4f credit_loop_ns %.2f\n", link, mtu,
            latency_ns, period ? "period" : "free", rate_GBps, loop_ns);
    fprintf(f, "# buffer_bytes window_pkts goodput_GBps predicted_GBps upper_GBps credit_stall_ns fc_packets\n");
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%u %u %.4f %.4f %.4f %.1f %llu\n", pts[i].buffer_bytes, pts[i].window_pkts, pts[i].goodput_GBps,
                pts[i].predicted_GBps, pts[i].upper_GBps, pts[i].credit_stall_ns, (unsigned long long)pts[i].fc_packets);
    fclose(f);
    sim_source_root(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/plot_ib_credit.gp", root);
    struct stat sb;
    if (stat(script, &sb) != 0) return;
    double xmax = 0;
    for (unsigned i = 0; i < n; i++) xmax = pts[i].buffer_bytes > xmax ? pts[i].buffer_bytes : xmax;
    snprintf(cmd, sizeof cmd,
             "gnuplot -e \"datafile='%s'; outfile='%s'; rate=%.4f; loopns=%.2f; xmax=%.2f; title_text='%s, MTU %u, "
             "wire %.0f ns, FC on %s'\" '%s' 2>&1",
             path, png, rate_GBps, loop_ns, xmax * 1.1 / 1024.0, link, mtu, latency_ns, period ? "period only" : "free",
             script);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "ib_credit: gnuplot failed (rc %d); %s not written\n", rc, png);
    sim_report_metric_json(c->report, "plot", cJSON_CreateString(png));
}

static void ib_credit_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *link = sim_param_str(p, "link");
    double latency_ns = sim_param_double(p, "latency_ns");
    unsigned mtu = (unsigned)sim_param_int(p, "mtu");
    const char *list = sim_param_str(p, "vl_buffer_bytes");
    unsigned vls = (unsigned)sim_param_int(p, "vls");
    unsigned sl = (unsigned)sim_param_int(p, "sl");
    double fc_period_ns = sim_param_double(p, "fc_period_ns");
    bool period = sim_param_enum(p, "fc_trigger") == 1;
    uint64_t pkts = (uint64_t)sim_param_int(p, "pkts");
    if (mtu & (mtu - 1)) sim_input_error("ib_credit: mtu=%u; allowed 256, 512, 1024, 2048, 4096 (IBA MTUs)", mtu);
    uint32_t bufs[MAX_POINTS];
    int nb = parse_list(list, bufs, MAX_POINTS);
    if (nb == -2) sim_input_error("ib_credit: vl_buffer_bytes='%s': at most %d sizes", list, MAX_POINTS);
    if (nb <= 0) sim_input_error("ib_credit: vl_buffer_bytes='%s': allowed a comma-separated list of byte counts, e.g. 8704,65536", list);
    network_register_kinds();
    const topo_preset *pr = topo_preset_find(link);
    double GBps = topo_preset_GBps(pr);
    uint32_t wire = mtu + pr->overhead_bytes, pkt_blocks = ib_blocks(wire);
    for (int i = 0; i < nb; i++)
        if (ib_adv_blocks(bufs[i]) < pkt_blocks)
            sim_input_error("ib_credit: vl_buffer_bytes=%u holds less than one packet: a %u-byte MTU is %u bytes on the wire = "
                            "%u blocks of 64 B; allowed >= %u bytes", bufs[i], mtu, wire, pkt_blocks, pkt_blocks * IB_BLOCK_BYTES);
    sim_test_configured(c);

    ib_port_cfg pc;
    ib_port_cfg_default(&pc, vls, bufs[0]);
    pc.fc_period_ns = fc_period_ns;
    pc.fc_on_free = !period;
    ib_flow flow = { .src = 0, .dst = 1, .sl = (uint8_t)sl, .payload_bytes = mtu, .packets = pkts };
    /* the prediction: configuration only */
    topo_link tl = { .preset = pr, .GBps = GBps, .latency_ns = latency_ns };
    double T_ns = fc_period_ns > 0 ? fc_period_ns : ib_fc_period_bound_ns(&tl);
    double ser_ns = wire / GBps, fc_ns = IB_FC_WIRE_BYTES / GBps;
    double loop_free_ns = ser_ns + 2 * latency_ns + fc_ns;
    double loop_ns = loop_free_ns + (period ? T_ns : 0);
    /* line rate of payload, less the sender's own periodic FC packets on the same wire */
    double rate_GBps = GBps * mtu / wire * (1.0 - vls * fc_ns / T_ns);
    sim_report *rep = c->report;
    sim_report_metric(rep, "link_GBps", GBps);
    sim_report_metric(rep, "rate_goodput_GBps", rate_GBps);
    sim_report_metric(rep, "credit_loop_ns", loop_ns);
    sim_report_metric(rep, "fc_period_ns", T_ns);
    sim_report_metric(rep, "packet_blocks", pkt_blocks);
    sim_report_metric(rep, "bdp_bytes", rate_GBps * wire / mtu * loop_ns);

    point pts[MAX_POINTS];
    memset(pts, 0, sizeof pts);
    cJSON *table = cJSON_CreateArray();
    for (int i = 0; i < nb; i++) {
        point *pt = &pts[i];
        pt->buffer_bytes = bufs[i];
        pt->adv_blocks = ib_adv_blocks(bufs[i]);
        pt->window_pkts = pt->adv_blocks / pkt_blocks;
        pt->credit_loop_ns = loop_ns;
        double w_bytes = (double)pt->window_pkts * mtu;
        pt->predicted_GBps = fmin(rate_GBps, w_bytes / loop_ns);
        pt->upper_GBps = fmin(rate_GBps, w_bytes / loop_free_ns);
        pc.vl_buffer_bytes = bufs[i];
        double expect_ns = (double)pkts * mtu / pt->predicted_GBps;
        bool traced = i == 0;   /* the first point runs on the test's kernel: waves/ib_credit.fst */
        run_point(traced ? c->k : NULL, traced ? c->trace : NULL, link, latency_ns, &pc, &flow, expect_ns, pt);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "vl_buffer_bytes", pt->buffer_bytes);
        cJSON_AddNumberToObject(o, "advertised_blocks", pt->adv_blocks);
        cJSON_AddNumberToObject(o, "window_pkts", pt->window_pkts);
        cJSON_AddNumberToObject(o, "goodput_GBps", pt->goodput_GBps);
        cJSON_AddNumberToObject(o, "predicted_GBps", pt->predicted_GBps);
        if (period) cJSON_AddNumberToObject(o, "predicted_upper_GBps", pt->upper_GBps);
        cJSON_AddNumberToObject(o, "credit_loop_ns", pt->credit_loop_ns);
        cJSON_AddNumberToObject(o, "fc_packets", (double)pt->fc_packets);
        cJSON_AddNumberToObject(o, "credit_stall_ns", pt->credit_stall_ns);
        cJSON_AddItemToArray(table, o);
        sim_progress(c, (double)(i + 1) / nb, "point %d of %d", i + 1, nb);
    }
    sim_report_metric_json(rep, "sweep", table);
    /* for comparison only (the checks use the prediction): the loop the smallest credit-limited window shows */
    for (int i = 0; i < nb; i++)
        if (pts[i].predicted_GBps < rate_GBps && pts[i].goodput_GBps > 0) {
            sim_report_metric(rep, "credit_loop_measured_ns", (double)pts[i].window_pkts * mtu / pts[i].goodput_GBps);
            break;
        }
    if (nb == 1) {   /* one point (a sweep's): its numbers at the top level too */
        sim_report_metric(rep, "goodput_GBps", pts[0].goodput_GBps);
        sim_report_metric(rep, "predicted_GBps", pts[0].predicted_GBps);
        sim_report_metric(rep, "fc_packets", (double)pts[0].fc_packets);
        sim_report_metric(rep, "credit_stall_ns", pts[0].credit_stall_ns);
    }

    /* checks */
    bool lossless = true;
    char lwhy[480] = "every point: all packets sent and received once, in order; FCTBS = ABR; all credits back";
    for (int i = 0; i < nb; i++)
        if (!pts[i].ok && lossless) {
            lossless = false;
            snprintf(lwhy, sizeof lwhy, "vl_buffer_bytes=%u: %s", pts[i].buffer_bytes, pts[i].why);
        }
    sim_check(rep, "lossless_and_credits_conserved", lossless, "%s", lwhy);
    unsigned n_rise = 0, n_flat = 0;
    double worst_rise = 0, worst_flat = 0;
    char rdet[160] = "", fdet[160] = "";
    /* every point is either credit-limited (predicted below the rate) or at the plateau */
    for (int i = 0; i < nb; i++) {
        const point *pt = &pts[i];
        if (pt->predicted_GBps < rate_GBps) {
            double err;
            if (!period) err = fabs(pt->goodput_GBps - pt->predicted_GBps) / pt->predicted_GBps;
            else {   /* a band: each credit waits between none and one period */
                double lo = pt->predicted_GBps * (1 - RISE_TOL), hi = pt->upper_GBps * (1 + RISE_TOL);
                err = pt->goodput_GBps < lo ? (lo - pt->goodput_GBps) / lo : pt->goodput_GBps > hi ? (pt->goodput_GBps - hi) / hi : 0;
            }
            n_rise++;
            if (err >= worst_rise) {
                worst_rise = err;
                snprintf(rdet, sizeof rdet, "worst at %u B: %.3f GB/s vs %.3f%s", pt->buffer_bytes, pt->goodput_GBps,
                         pt->predicted_GBps, period ? " (the lower end)" : "");
            }
        } else {
            double err = fabs(pt->goodput_GBps - rate_GBps) / rate_GBps;
            n_flat++;
            if (err >= worst_flat) {
                worst_flat = err;
                snprintf(fdet, sizeof fdet, "worst at %u B: %.3f GB/s", pt->buffer_bytes, pt->goodput_GBps);
            }
        }
    }
    if (n_rise)
        sim_check(rep, "rising_part_follows_window_over_loop", worst_rise <= (period ? 0 : RISE_TOL),
                  "%u credit-limited points %s (limit %.0f%%); %s", n_rise,
                  period ? "within [window/(loop+period), window/loop]" : "within window / predicted loop", RISE_TOL * 100,
                  rdet);
    if (n_flat)
        sim_check(rep, "plateau_at_rate", worst_flat <= FLAT_TOL, "%u points whose window covers the credit loop at %.3f GB/s "
                  "(limit %.0f%%); %s", n_flat, rate_GBps, FLAT_TOL * 100, fdet);
    bool mono = true;
    for (int i = 1; i < nb; i++)
        if (pts[i].buffer_bytes > pts[i - 1].buffer_bytes && pts[i].goodput_GBps < pts[i - 1].goodput_GBps * 0.99) mono = false;
    sim_check(rep, "goodput_monotone_in_buffer", mono, "a larger buffer never lowers the goodput (1%% noise)");
    write_plot(c, pts, (unsigned)nb, rate_GBps, loop_ns, link, mtu, latency_ns, period);
    c->sim_time_ps = total_time_ps;
    c->sim_events = total_events;
}

SIM_TEST(ib_credit, "InfiniBand per-VL credits on one link: goodput vs VL buffer against window / credit loop (FCTBS/FCCL)",
         ib_credit_params, "pkts=1000", ib_credit_run)
