/* pcie_credit: the credit flow-control testbench. At one link configuration
 * and wire latency it sweeps the posted data (PD) and header (PH) credit
 * limits the completer advertises, measures MWr goodput and the credit loop
 * at each point, and compares with the analytic line
 *     credit-limited goodput = window bytes / predicted credit loop, saturating at the link rate
 * (Katevenis; Kung & Chapman; Dally & Towles §13.3). The loop is predicted
 * from the configuration (pcie_ref_credit_loop: serialisation, wire, receive
 * processing, UpdateFC serialisation and coalescing), never from the run. It also shows the point of
 * Scaled FC: the unscaled maximum (127 PH / 2047 PD) against the same
 * advertisement scaled, on the same link. Writes the table into the report,
 * reports/pcie_credit.dat and reports/pcie_credit.png (gnuplot, scripts/plot_pcie_credit.gp). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "tb/pcie_common.h"

static const sim_param_def credit_params[] = {
    PCIE_LINK_PARAMS("400"),
    SIM_PARAM_INT("points", "10", "", 2, 100, "sweep points per series (windows from 1/points to 2 x the knee)"),
    SIM_PARAM_INT("tlps", "20000", "", 100, 1e9, "MWr TLPs per sweep point (at least 40 credit loops are run)"),
    SIM_PARAM_INT("sweep_scale", "0", "", 0, 16, "Scaled FC factor for the sweep (1, 4, 16; 0 = the finest that reaches 2 x the knee)"),
    SIM_PARAM_END,
};

typedef struct point {
    const char *series;
    uint32_t ph_eff, pd_eff;      /* effective limits (field x scale; 0 = infinite) */
    double window_tlps;
    double window_bytes;
    double goodput_GBps;
    double loop_ns, loop_min_ns;  /* measured */
    double pred_loop_ns;          /* predicted from the configuration (pcie_ref_credit_loop) */
    double stall_frac;
    double line_GBps;             /* analytic: window / predicted loop, capped at the link rate */
    bool ok;
} point;

/* One MWr stream with the given advertisement; returns the measurements. */
static uint64_t total_time_ps, total_events;

/* Tolerance of the rising part against window / predicted loop. The
 * prediction leaves out the spec's "transmitter out of credits" trigger
 * (which only shortens the wait of a window's last group), SKPs and Acks
 * delaying an UpdateFC, and Scaled FC's granularity; together they stay
 * within 1.5% on the links tried (Gen1-6, x1-x16, 50 ns - 2 us). 3% still
 * catches one extra AckLimit of coalescing or a 2% error in the wire latency. */
#define RISE_TOL 0.03

/* k/tr: run on this kernel with this trace (the traced point), else a fresh kernel. */
static void run_point_on(sim_kernel *k_in, sim_trace *tr, const pcie_cfg *base, uint32_t ph_field, uint32_t pd_field,
                         unsigned scale, uint64_t tlps, uint64_t seed, point *pt)
{
    pcie_cfg cfg = *base;
    cfg.fc_scale = scale;
    cfg.adv[PCIE_COMPLETER][PCIE_FC_PH] = ph_field;
    cfg.adv[PCIE_COMPLETER][PCIE_FC_PD] = pd_field;
    cfg.op = PCIE_OP_WR;
    cfg.size = cfg.mps;               /* one TLP per transfer */
    cfg.count = tlps;
    char why[256];
    if (pcie_cfg_check(&cfg, why, sizeof why)) sim_input_error("pcie_credit: %s", why);
    sim_kernel *k = k_in ? k_in : sim_kernel_new();
    pcie_sys *s = pcie_sys_new(k, &cfg, seed, tr);
    pcie_sys_run(s, SIM_TIME_MAX);
    total_time_ps += sim_now(k);
    total_events += sim_event_count(k);
    pcie_results r;
    pcie_sys_results(s, &r);
    pcie_ref_loop pl;
    pcie_ref_credit_loop(&cfg, &pl);
    pt->pred_loop_ns = pl.loop_ns;
    pt->ph_eff = ph_field * scale;
    pt->pd_eff = pd_field * scale;
    pt->goodput_GBps = pcie_dir_goodput_GBps(&r.dir[PCIE_DOWN]);
    pt->loop_ns = r.credit_loop_ns;
    pt->loop_min_ns = r.credit_loop_min_ns;
    pt->stall_frac = r.credit_stall_frac;
    char cwhy[256];
    pt->ok = r.completed && r.dir[0].lost == 0 && r.dir[0].duplicated == 0 && r.dir[0].reordered == 0 &&
             pcie_sys_check_credits(s, cwhy, sizeof cwhy) == 0;   /* per port: what it advertised, took and released */
    sim_hist_free(&r.latency_ns);
    pcie_sys_free(s);
    if (!k_in) sim_kernel_free(k);
}

static void run_point(const pcie_cfg *base, uint32_t ph_field, uint32_t pd_field, unsigned scale, uint64_t tlps,
                      uint64_t seed, point *pt)
{
    run_point_on(NULL, NULL, base, ph_field, pd_field, scale, tlps, seed, pt);
}

static void window_of(point *pt, unsigned mps)
{
    double c = mps / PCIE_FC_UNIT_BYTES;
    double by_hdr = pt->ph_eff ? pt->ph_eff : 1e18;
    double by_data = pt->pd_eff ? (double)(pt->pd_eff / (uint32_t)c) : 1e18;
    pt->window_tlps = by_hdr < by_data ? by_hdr : by_data;
    pt->window_bytes = pt->window_tlps * mps;
}

static cJSON *point_json(const point *pt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "series", pt->series);
    cJSON_AddNumberToObject(o, "ph", pt->ph_eff);
    cJSON_AddNumberToObject(o, "pd", pt->pd_eff);
    cJSON_AddNumberToObject(o, "window_tlps", pt->window_tlps);
    cJSON_AddNumberToObject(o, "window_bytes", pt->window_bytes);
    cJSON_AddNumberToObject(o, "goodput_GBps", pt->goodput_GBps);
    cJSON_AddNumberToObject(o, "line_GBps", pt->line_GBps);
    cJSON_AddNumberToObject(o, "credit_loop_ns", pt->loop_ns);
    cJSON_AddNumberToObject(o, "predicted_loop_ns", pt->pred_loop_ns);
    cJSON_AddNumberToObject(o, "credit_stall_frac", pt->stall_frac);
    return o;
}

static void credit_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    /* the sweep sets the posted credits and their scale itself; only writes run */
    sim_param_not_applicable(p, "ph", "the credit sweep sets ph itself (PD series at ph=127, PH series, unscaled/scaled "
                                      "maxima); its range follows from points and sweep_scale");
    sim_param_not_applicable(p, "pd", "the credit sweep sets pd itself (PD series, PH series at pd=infinite, unscaled/"
                                      "scaled maxima); its range follows from points and sweep_scale");
    sim_param_not_applicable(p, "fc_scale", "the credit sweep picks the Scaled FC factor itself; give sweep_scale=1|4|16 "
                                            "to fix it");
    pcie_params_writes_only(p, "pcie_credit runs MWr (posted writes) only");
    pcie_params_error_free(p, "pcie_credit injects no errors");
    pcie_cfg base;
    pcie_cfg_from_params(p, &base, "pcie_credit");
    unsigned points = (unsigned)sim_param_int(p, "points");
    uint64_t tlps = (uint64_t)sim_param_int(p, "tlps");
    unsigned scale = (unsigned)sim_param_int(p, "sweep_scale");
    if (scale != 0 && scale != 1 && scale != 4 && scale != 16)
        sim_input_error("pcie_credit: sweep_scale=%u; allowed: 0 (automatic), 1, 4, 16", scale);
    if (scale > 1 && base.gen < 4) sim_input_error("pcie_credit: sweep_scale=%u needs gen >= 4 (Scaled FC); gen=%u", scale, base.gen);
    sim_test_configured(c);
    unsigned mps = base.mps, cpt = mps / PCIE_FC_UNIT_BYTES;
    sim_report *rep = c->report;
    pcie_phy phy;
    pcie_phy_init(&phy, base.gen, base.lanes, base.mps, base.wire_ps);

    /* 1. link-limited rate: infinite posted credits */
    point sat = { "saturated", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false };
    run_point(&base, 0, 0, 1, tlps, c->seed, &sat);
    /* analytic link rate for the plateau, from the spec's numbers: TLP framing
     * + header, SKP, the requester's 30 us refreshes (no other DLLPs in this direction) */
    double link_GBps = pcie_ref_mwr_stream_GBps(&base, mps, false);
    /* 2. probe: a 2-TLP window is credit-limited on any link; its loop sets the knee estimate */
    point probe = { "probe", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false };
    run_point(&base, 2, 0, 1, tlps / 4 > 500 ? tlps / 4 : 500, c->seed, &probe);
    double knee_tlps = link_GBps * probe.loop_ns / mps;
    sim_report_metric(rep, "raw_GBps", phy.raw_GBps);
    sim_report_metric(rep, "link_rate_GBps", link_GBps);
    sim_report_metric(rep, "saturated_goodput_GBps", sat.goodput_GBps);
    sim_report_metric(rep, "credit_loop_ns", probe.loop_ns);
    sim_report_metric(rep, "credit_loop_min_ns", probe.loop_min_ns);
    sim_report_metric(rep, "predicted_credit_loop_ns", probe.pred_loop_ns);
    sim_report_metric(rep, "knee_window_tlps", knee_tlps);
    sim_report_metric(rep, "knee_pd_credits", knee_tlps * cpt);

    /* 3. sweeps: PD-limited (PH ample) and PH-limited (PD infinite) */
    point *pts = calloc(2 * points, sizeof *pts);
    if (!pts) sim_fatal("out of memory");
    unsigned n = 0;
    uint32_t ph_max_field = PCIE_FC_HDR_FIELD_MAX, pd_max_field = PCIE_FC_DATA_FIELD_MAX;
    unsigned used_scale[2] = { 1, 1 };
    for (int series = 0; series < 2; series++) {
        uint32_t last_field = 0;
        /* credit granularity: the finest scale whose field reaches 2 x the knee */
        double top = knee_tlps * 2.0 * (series == 0 ? cpt : 1);
        uint32_t field_max = series == 0 ? pd_max_field : ph_max_field;
        unsigned sc = scale ? scale : top <= field_max ? 1 : top <= 4.0 * field_max ? 4 : 16;
        if (sc > 1 && base.gen < 4) sc = 1;
        used_scale[series] = sc;
        for (unsigned i = 1; i <= points; i++) {
            double want_tlps = knee_tlps * 2.0 * i / points;
            point *pt = &pts[n];
            pt->series = series == 0 ? "pd" : "ph";
            uint32_t ph_field, pd_field;
            if (series == 0) {
                double credits = want_tlps * cpt;
                pd_field = (uint32_t)(credits / sc + 0.5);
                uint32_t min_field = (cpt + sc - 1) / sc;
                if (pd_field < min_field) pd_field = min_field;
                if (pd_field > pd_max_field) pd_field = pd_max_field;
                ph_field = ph_max_field;
                if (pd_field == last_field) continue;
                last_field = pd_field;
            } else {
                ph_field = (uint32_t)(want_tlps / sc + 0.5);
                if (ph_field < 1) ph_field = 1;
                if (ph_field > ph_max_field) ph_field = ph_max_field;
                pd_field = 0;
                if (ph_field == last_field) continue;
                last_field = ph_field;
            }
            /* at least 40 credit loops of the window, so the start-up burst does not count */
            uint64_t pt_tlps = tlps > (uint64_t)(40 * want_tlps) ? tlps : (uint64_t)(40 * want_tlps);
            run_point(&base, ph_field, pd_field, sc, pt_tlps, c->seed, pt);
            window_of(pt, mps);
            pt->line_GBps = pcie_ref_credit_line_GBps(pt->window_bytes, pt->pred_loop_ns, link_GBps);
            n++;
            sim_progress(c, (double)n / (2.0 * points), "%s sweep: %u points", pt->series, n);
        }
    }

    /* 4. Scaled FC: the largest unscaled advertisement vs the same fields x 4 / x 16 */
    point unscaled = { "unscaled_max", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false };
    point scaled = { "scaled_max", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false };
    /* this one runs on the test's kernel: it is the run in waves/pcie_credit.fst */
    run_point_on(c->k, c->trace, &base, ph_max_field, pd_max_field, 1, tlps, c->seed, &unscaled);
    window_of(&unscaled, mps);
    unscaled.line_GBps = pcie_ref_credit_line_GBps(unscaled.window_bytes, unscaled.pred_loop_ns, link_GBps);
    unsigned big_scale = base.gen >= 4 ? 16 : 1;
    run_point(&base, ph_max_field, pd_max_field, big_scale, tlps, c->seed, &scaled);
    window_of(&scaled, mps);
    scaled.line_GBps = pcie_ref_credit_line_GBps(scaled.window_bytes, scaled.pred_loop_ns, link_GBps);

    /* report table */
    cJSON *table = cJSON_CreateArray();
    for (unsigned i = 0; i < n; i++) cJSON_AddItemToArray(table, point_json(&pts[i]));
    cJSON_AddItemToArray(table, point_json(&unscaled));
    cJSON_AddItemToArray(table, point_json(&scaled));
    sim_report_metric_json(rep, "sweep", table);
    sim_report_metric(rep, "unscaled_max_goodput_GBps", unscaled.goodput_GBps);
    sim_report_metric(rep, "unscaled_max_credit_loop_ns", unscaled.loop_ns);
    sim_report_metric(rep, "scaled_max_goodput_GBps", scaled.goodput_GBps);
    sim_report_metric(rep, "scaled_fc_factor", big_scale);
    sim_report_metric(rep, "sweep_scale_pd", used_scale[0]);
    sim_report_metric(rep, "sweep_scale_ph", used_scale[1]);

    /* checks */
    bool all_ok = sat.ok && probe.ok && unscaled.ok && scaled.ok;
    for (unsigned i = 0; i < n; i++) all_ok = all_ok && pts[i].ok;
    sim_check(rep, "conservation", all_ok, "every run completed with nothing lost, duplicated or reordered");
    sim_check(rep, "saturation_matches_link", fabs(sat.goodput_GBps - link_GBps) / link_GBps < 0.005,
              "infinite credits: %.3f GB/s vs predicted link rate %.3f GB/s (framing, header, SKP; limit 0.5%%)",
              sat.goodput_GBps, link_GBps);
    /* The 2-TLP probe returns every TLP's credits at once (group of 1): its
     * fastest measured loop is the predicted loop with no coalescing. */
    sim_check(rep, "credit_loop_as_predicted", fabs(probe.loop_min_ns - probe.pred_loop_ns) <= 0.01 * probe.pred_loop_ns,
              "2-TLP window: fastest loop %.2f ns vs predicted %.2f ns = TLP + 2 x wire + rx + UpdateFC%s (limit 1%%)",
              probe.loop_min_ns, probe.pred_loop_ns, base.gen == 6 ? " (flits)" : "");
    double worst_rise = 0;
    unsigned n_rise = 0, n_flat = 0;
    double worst_flat = 1e9;
    char rise_detail[160] = "", flat_detail[160] = "";
    for (unsigned i = 0; i < n; i++) {
        point *pt = &pts[i];
        double unc = pt->window_bytes / pt->pred_loop_ns;     /* the line before the cap */
        if (unc < 0.9 * link_GBps) {
            double err = fabs(pt->goodput_GBps - pt->line_GBps) / pt->line_GBps;
            n_rise++;
            if (err > worst_rise) {
                worst_rise = err;
                snprintf(rise_detail, sizeof rise_detail, "worst at %s=%u: %.2f GB/s vs line %.2f", pt->series,
                         pt->series[1] == 'd' ? pt->pd_eff : pt->ph_eff, pt->goodput_GBps, pt->line_GBps);
            }
        } else if (pt->window_bytes * 1.0 > 1.25 * link_GBps * pt->pred_loop_ns) {
            double frac = pt->goodput_GBps / sat.goodput_GBps;
            n_flat++;
            if (frac < worst_flat) {
                worst_flat = frac;
                snprintf(flat_detail, sizeof flat_detail, "lowest at %s=%u: %.2f GB/s", pt->series,
                         pt->series[1] == 'd' ? pt->pd_eff : pt->ph_eff, pt->goodput_GBps);
            }
        }
    }
    sim_check(rep, "rising_part_follows_line", n_rise >= 2 && worst_rise <= RISE_TOL,
              "%u points below the knee within %.1f%% of window / predicted loop (limit %.0f%%); %s", n_rise,
              worst_rise * 100, RISE_TOL * 100, rise_detail);
    sim_check(rep, "saturates_past_knee", n_flat >= 2 && worst_flat >= 0.97,
              "%u points past the knee at >= %.1f%% of the saturated rate (limit 97%%); %s", n_flat, worst_flat * 100,
              flat_detail);
    /* monotone in the window (within noise) */
    bool mono = true;
    for (unsigned i = 1; i < n; i++)
        if (!strcmp(pts[i].series, pts[i - 1].series) && pts[i].goodput_GBps < pts[i - 1].goodput_GBps * 0.99) mono = false;
    sim_check(rep, "goodput_monotone_in_credits", mono, "more credits never lower the goodput (1%% noise)");
    if (unscaled.window_bytes < 0.8 * link_GBps * unscaled.pred_loop_ns)
        sim_check(rep, "unscaled_credits_throttle", unscaled.goodput_GBps < 0.85 * sat.goodput_GBps,
                  "127 PH / 2047 PD unscaled: %.2f GB/s = %.0f%% of %.2f GB/s with a %.0f ns credit loop",
                  unscaled.goodput_GBps, 100 * unscaled.goodput_GBps / sat.goodput_GBps, sat.goodput_GBps, unscaled.loop_ns);
    if (big_scale > 1 && scaled.window_bytes > 1.25 * link_GBps * scaled.pred_loop_ns)
        sim_check(rep, "scaled_fc_full_rate", scaled.goodput_GBps >= 0.97 * sat.goodput_GBps,
                  "same fields with Scaled FC x%u: %.2f GB/s = %.1f%% of the saturated rate", big_scale,
                  scaled.goodput_GBps, 100 * scaled.goodput_GBps / sat.goodput_GBps);

    /* data file + plot */
    char path[1024], png[1024], root[1024], cmd[4096];
    snprintf(path, sizeof path, "%s/reports/pcie_credit.dat", c->out_dir ? c->out_dir : ".");
    snprintf(png, sizeof png, "%s/reports/pcie_credit.png", c->out_dir ? c->out_dir : ".");
    sim_mkdir_parents(path);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "# pcie_credit: Gen%u x%u MPS %u wire %.0f ns, Scaled FC x%u (PD) x%u (PH) in the sweep\n", base.gen,
                base.lanes, mps, (double)base.wire_ps / 1000.0, used_scale[0], used_scale[1]);
        fprintf(f, "# link_GBps %.4f saturated_GBps %.4f probe_loop_ns %.2f\n", link_GBps, sat.goodput_GBps, probe.loop_ns);
        fprintf(f, "# series window_tlps window_bytes goodput_GBps line_GBps credit_loop_ns ph pd\n");
        for (int series = 0; series < 2; series++) {
            for (unsigned i = 0; i < n; i++) {
                if ((series == 0) != (pts[i].series[1] == 'd')) continue;
                fprintf(f, "%s %.0f %.0f %.4f %.4f %.2f %u %u\n", pts[i].series, pts[i].window_tlps, pts[i].window_bytes,
                        pts[i].goodput_GBps, pts[i].line_GBps, pts[i].loop_ns, pts[i].ph_eff, pts[i].pd_eff);
            }
            fprintf(f, "\n\n");
        }
        fprintf(f, "unscaled_max %.0f %.0f %.4f %.4f %.2f %u %u\n", unscaled.window_tlps, unscaled.window_bytes,
                unscaled.goodput_GBps, unscaled.line_GBps, unscaled.loop_ns, unscaled.ph_eff, unscaled.pd_eff);
        fprintf(f, "scaled_max %.0f %.0f %.4f %.4f %.2f %u %u\n", scaled.window_tlps, scaled.window_bytes,
                scaled.goodput_GBps, scaled.line_GBps, scaled.loop_ns, scaled.ph_eff, scaled.pd_eff);
        fclose(f);
        sim_source_root(root, sizeof root);
        char script[1100];
        snprintf(script, sizeof script, "%s/scripts/plot_pcie_credit.gp", root);
        struct stat sb;
        if (stat(script, &sb) == 0) {
            double xmax = (n ? pts[n - 1].window_bytes : 1024) * 1.15 / 1024.0;
            snprintf(cmd, sizeof cmd,
                     "gnuplot -e \"datafile='%s'; outfile='%s'; linkrate=%.4f; loopns=%.2f; xmax=%.1f; "
                     "title_text='Gen%u x%u MPS %u, wire %.0f ns'\" '%s' 2>&1",
                     path, png, link_GBps, probe.loop_ns, xmax, base.gen, base.lanes, mps, (double)base.wire_ps / 1000.0,
                     script);
            int rc = system(cmd);
            if (rc != 0) fprintf(stderr, "pcie_credit: gnuplot failed (rc %d); %s not written\n", rc, png);
        }
    }
    sim_report_metric_json(rep, "plot", cJSON_CreateString(png));
    free(pts);
    c->sim_time_ps = total_time_ps;
    c->sim_events = total_events;
}

SIM_TEST(pcie_credit, "credit flow control: MWr goodput vs advertised PD/PH credits against window/credit-loop, Scaled FC",
         credit_params, "tlps=3000 points=5", credit_run)
