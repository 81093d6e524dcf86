/* pcie_replay: error injection on the data link layer. An MWr stream runs
 *   - at several bit-error rates (TLP bits downstream, DLLP bits upstream),
 *   - with forced Naks (every Nth TLP fails its LCRC),
 *   - with dropped Acks (every Nth Ack DLLP is lost),
 *   - with lossy DLLPs and tight credits (lost UpdateFCs: the 30 us refresh recovers),
 *   - over a link that goes bad long enough to force a retrain.
 * Checks: every TLP delivered once and in order in every run; replays, timeouts
 * and retrains counted; the retrain comes at the 4th replay without forward
 * progress (REPLAY_NUM rollover); goodput falls with the error rate as the
 * retransmitted bytes predict. The bad-link run is the one in the waves. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tb/pcie_common.h"

static const sim_param_def replay_params[] = {
    PCIE_LINK_PARAMS("20"),
    SIM_PARAM_STRING("bers", "0,1e-7,1e-6,3e-6,1e-5", "bit-error rates to sweep (comma separated, increasing)"),
    SIM_PARAM_INT("tlps", "20000", "", 100, 1e9, "MWr TLPs (of MPS bytes) per run"),
    SIM_PARAM_INT("nak_every", "500", "", 1, 1e9, "forced-Nak run: every Nth TLP fails its LCRC"),
    SIM_PARAM_INT("drop_ack_every", "3", "", 2, 1e9, "dropped-Ack run: every Nth Ack DLLP is lost"),
    SIM_PARAM_DOUBLE("bad_at_us", "0", "us", 0, 1e6, "bad-link run: the link corrupts every packet from here (0 = a quarter into the error-free run) ..."),
    SIM_PARAM_DOUBLE("bad_for_us", "0", "us", 0, 1e6, "... for this long (0 = long enough for four replay timeouts)"),
    SIM_PARAM_END,
};

typedef struct run_out {
    const char *name;
    double ber;
    double goodput_GBps, predicted_GBps;
    pcie_results r;
    bool conserved;
} run_out;

static uint64_t total_time_ps, total_events;

/* ---- predictions from the configuration ------------------------------------------------ */
/* Probability that one transmission of `bytes` wire bytes is lost to bit
 * errors: Non-Flit, any bad bit fails the LCRC; Flit Mode, a flit fails when
 * one of its three interleaved FEC codewords (86, 85, 85 bytes) has two or
 * more bad bytes. */
static double p_lost(bool flit, double ber, double bytes)
{
    if (ber <= 0) return 0;
    if (!flit) return -expm1(bytes * 8 * log1p(-ber));
    double q = -expm1(8 * log1p(-ber)), ok = 1;   /* q: a byte is bad */
    for (int cw = 0; cw < 3; cw++) {
        double n = cw == 0 ? 86 : 85;
        ok *= exp(n * log1p(-q)) + n * q * exp((n - 1) * log1p(-q));
    }
    return 1 - ok;
}
/* TLPs (flits) a Nak replay resends: the failed one and every one started
 * before the Nak arrives (the one then on the wire is finished and resent
 * too). The Nak leaves when the failed packet has arrived whole, so it
 * arrives t = T + wire + T_nak + wire after the failed packet started (T_nak:
 * a DLLP, or the idle flit that carries it); back to back, ceil(t / T)
 * packets have started by then (t / T is whole in Flit Mode when the wire is
 * a multiple of a flit time: a packet starting as the Nak lands may or may
 * not be sent), one more if an Ack or SKP already on the reverse wire delays
 * the Nak. Returns the range. */
static void resent_per_nak(const pcie_cfg *c, unsigned *lo, unsigned *hi)
{
    double raw = pcie_ref_raw_GBps(c->gen, c->lanes), wire = (double)c->wire_ps / 1000.0;
    double t_pkt = c->gen == 6 ? PCIE_REF_FLIT / raw : pcie_ref_tlp_ns(c, pcie_ref_mwr_bytes(c, c->mps));
    double t_nak = c->gen == 6 ? PCIE_REF_FLIT / raw : PCIE_REF_DLLP / raw;
    double t = (t_pkt + 2 * wire + t_nak) / t_pkt;
    *lo = (unsigned)ceil(t - 1e-6);
    *hi = (unsigned)floor(t + 1e-6) + 2;
}

static void run_case(sim_test_ctx *c, sim_kernel *k_in, sim_trace *tr, const pcie_cfg *cfg, run_out *o)
{
    sim_kernel *k = k_in ? k_in : sim_kernel_new();
    pcie_sys *s = pcie_sys_new(k, cfg, c->seed, tr);
    pcie_run(c, k, s, cfg->count, SIM_US(20000), SIM_TIME_MAX);
    pcie_sys_results(s, &o->r);
    total_time_ps += sim_now(k);
    total_events += sim_event_count(k);
    o->goodput_GBps = pcie_dir_goodput_GBps(&o->r.dir[PCIE_DOWN]);
    const pcie_dir_stats *d = &o->r.dir[PCIE_DOWN], *u = &o->r.dir[PCIE_UP];
    char why[200];
    o->conserved = o->r.completed && o->r.xfers_done == cfg->count && d->lost == 0 && d->duplicated == 0 &&
                   d->reordered == 0 && u->lost == 0 && u->duplicated == 0 && u->reordered == 0 &&
                   pcie_sys_check_links(s, why, sizeof why) == 0 &&
                   pcie_sys_check_credits(s, why, sizeof why) == 0;   /* per port */
    sim_hist_free(&o->r.latency_ns);
    pcie_sys_free(s);
    if (!k_in) sim_kernel_free(k);
}

static cJSON *run_json(const run_out *o)
{
    const pcie_dir_stats *d = &o->r.dir[PCIE_DOWN];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "run", o->name);
    cJSON_AddNumberToObject(j, "ber", o->ber);
    cJSON_AddNumberToObject(j, "goodput_GBps", o->goodput_GBps);
    if (o->predicted_GBps > 0) cJSON_AddNumberToObject(j, "predicted_GBps", o->predicted_GBps);
    cJSON_AddNumberToObject(j, "tlps", (double)d->tlps_new);
    cJSON_AddNumberToObject(j, "tlps_replayed", (double)d->tlps_replayed);
    cJSON_AddNumberToObject(j, "replayed_bytes", (double)d->tlp_replay_wire_bytes);
    cJSON_AddNumberToObject(j, "corrupted", (double)(o->r.dir[0].corrupted + o->r.dir[1].corrupted));
    cJSON_AddNumberToObject(j, "naks", (double)(o->r.dir[0].naks + o->r.dir[1].naks));
    cJSON_AddNumberToObject(j, "replays", (double)o->r.replays);
    cJSON_AddNumberToObject(j, "replay_timeouts", (double)o->r.replay_timeouts);
    cJSON_AddNumberToObject(j, "retrains", (double)o->r.retrains);
    cJSON_AddNumberToObject(j, "dropped_acks", (double)(o->r.dir[0].dropped_acks + o->r.dir[1].dropped_acks));
    cJSON_AddNumberToObject(j, "forced_naks", (double)(o->r.dir[0].forced_naks + o->r.dir[1].forced_naks));
    cJSON_AddNumberToObject(j, "fec_corrected", (double)(o->r.dir[0].fec_corrected + o->r.dir[1].fec_corrected));
    cJSON_AddNumberToObject(j, "updatefc_refreshes", (double)o->r.updatefcs_refresh);
    cJSON_AddNumberToObject(j, "updatefc_refreshes_posted", (double)o->r.updatefcs_refresh_posted);
    cJSON_AddBoolToObject(j, "delivered_once_in_order", o->conserved);
    return j;
}

static void replay_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    pcie_params_writes_only(p, "pcie_replay runs MWr (posted writes) only");
    pcie_cfg base;
    pcie_cfg_from_params(p, &base, "pcie_replay");
    base.op = PCIE_OP_WR;
    base.size = base.mps;
    base.count = (uint64_t)sim_param_int(p, "tlps");
    sim_report *rep = c->report;
    pcie_phy phy;
    pcie_phy_init(&phy, base.gen, base.lanes, base.mps, base.wire_ps);

    /* parse the BER list */
    double bers[32];
    unsigned nb = 0;
    char list[512];
    snprintf(list, sizeof list, "%s", sim_param_str(p, "bers"));
    for (char *tok = strtok(list, ","); tok && nb < 32; tok = strtok(NULL, ",")) {
        char *end;
        double v = strtod(tok, &end);
        if (end == tok || *end || v < 0 || v >= 0.01)
            sim_input_error("pcie_replay: bers: '%s' is not a bit-error rate; allowed: numbers 0 <= ber < 0.01, comma separated", tok);
        if (nb && v <= bers[nb - 1]) sim_input_error("pcie_replay: bers must increase ('%s' after %g)", tok, bers[nb - 1]);
        bers[nb++] = v;
    }
    if (!nb) sim_input_error("pcie_replay: bers is empty");
    if (bers[0] != 0) sim_input_error("pcie_replay: bers must start with 0 (the error-free reference); got %g", bers[0]);
    uint64_t nak_every = (uint64_t)sim_param_int(p, "nak_every");
    if (base.count < 4 * nak_every)
        sim_input_error("pcie_replay: tlps=%llu gives fewer than 4 forced Naks with nak_every=%llu; allowed: tlps >= %llu",
                        (unsigned long long)base.count, (unsigned long long)nak_every, (unsigned long long)(4 * nak_every));
    const uint32_t drop_ack_every = (uint32_t)sim_param_int(p, "drop_ack_every");
    const double bad_for = sim_param_double(p, "bad_for_us"), bad_at = sim_param_double(p, "bad_at_us");
    sim_test_configured(c);

    cJSON *table = cJSON_CreateArray();
    bool all_conserved = true;

    /* 1. bit-error-rate sweep: TLP bits down, DLLP bits up */
    run_out *sweep = calloc(nb, sizeof *sweep);
    if (!sweep) sim_fatal("out of memory");
    for (unsigned i = 0; i < nb; i++) {
        pcie_cfg cfg = base;
        cfg.err[PCIE_DOWN].ber = cfg.err[PCIE_UP].ber = bers[i];
        sweep[i].name = "ber";
        sweep[i].ber = bers[i];
        run_case(c, NULL, NULL, &cfg, &sweep[i]);
        all_conserved = all_conserved && sweep[i].conserved;
    }
    /* prediction: the transmitter stays busy except while it waits for a
     * replay-timer expiry (a replay lost again: NAK_SCHEDULED is still set,
     * so no second Nak), so the time to deliver the payload grows with the
     * share of TLP wire bytes that were retransmissions, plus one REPLAY_TIMER
     * per expiry. */
    double g0 = sweep[0].goodput_GBps;
    bool fall_ok = true, pred_ok = true;
    double worst_pred = 0;
    for (unsigned i = 0; i < nb; i++) {
        const pcie_dir_stats *d = &sweep[i].r.dir[PCIE_DOWN];
        double t = (double)d->tlp_wire_bytes, rb = (double)d->tlp_replay_wire_bytes;
        if (phy.flit_mode) {
            /* flits: first-time payload flits vs replayed flits */
            double flits_new = (double)(d->flits - d->idle_flits) - rb / PCIE_FLIT_BYTES;
            t = flits_new * PCIE_FLIT_BYTES;
        }
        double payload = (double)(d->payload_delivered - d->first_delivery_bytes);
        double t0_ns = payload / g0;
        double t_ns = t0_ns * (t + rb) / t + (double)sweep[i].r.replay_timeouts * (double)phy.replay_timeout_ps / 1000.0;
        sweep[i].predicted_GBps = payload / t_ns;
        double err = sweep[i].predicted_GBps > 0 ? fabs(sweep[i].goodput_GBps / sweep[i].predicted_GBps - 1) : 1;
        if (err > worst_pred) worst_pred = err;
        if (err > 0.05) pred_ok = false;
        if (i && sweep[i].goodput_GBps > sweep[i - 1].goodput_GBps * 1.002) fall_ok = false;
        cJSON_AddItemToArray(table, run_json(&sweep[i]));
    }
    bool errors_seen = nb < 2 || sweep[nb - 1].r.replays > 0 || sweep[nb - 1].r.dir[0].fec_corrected > 0;
    sim_check(rep, "ber_goodput_falls", fall_ok && errors_seen,
              "goodput %.2f GB/s at ber %g -> %.2f GB/s at ber %g, never rising; %" PRIu64 " replays at the highest rate",
              sweep[0].goodput_GBps, bers[0], sweep[nb - 1].goodput_GBps, bers[nb - 1], sweep[nb - 1].r.replays);
    sim_check(rep, "ber_goodput_as_retransmissions_predict", pred_ok,
              "measured within %.1f%% (limit 5%%) of payload / (error-free time x all TLP bytes sent / first transmissions + replay-timer expiries)", worst_pred * 100);
    sim_report_metric(rep, "goodput_GBps", g0);
    sim_report_metric(rep, "goodput_worst_ber_GBps", sweep[nb - 1].goodput_GBps);

    /* Independent of the run: errors and replays from the BER alone. Every
     * transmission (TLP or flit, first or replayed; DLLPs too) is hit with
     * the probability p_lost of its size; corruptions are a sum of such
     * Bernoulli trials (4 Poisson sigmas). Each failed live transmission costs
     * exactly one replay (by a Nak, or by the timer when the Nak is lost or
     * the failure was the first packet of a replay); to deliver N packets
     * takes N p / (1 - p) failures on average (negative binomial, sd sqrt(N p)/(1-p)). */
    const bool flit = base.gen == 6;
    double pkt_bytes = flit ? PCIE_REF_FLIT : pcie_ref_mwr_bytes(&base, base.mps);
    double n_pkts = flit ? ceil((double)base.count * (pcie_ref_mwr_bytes(&base, base.mps)) / PCIE_REF_FLIT_TLP)
                         : (double)base.count;
    bool err_ok = true, rep_ok = true;
    char err_detail[200] = "", rep_detail[200] = "";
    double worst_err_z = 0, worst_rep_z = 0;
    for (unsigned i = 1; i < nb; i++) {
        const pcie_results *r = &sweep[i].r;
        double expect = 0, seen = 0;
        for (int d = 0; d < 2; d++) {
            const pcie_dir_stats *st = &r->dir[d];
            double pk = flit ? (double)st->flits : (double)(st->tlps_new + st->tlps_replayed);
            expect += pk * p_lost(flit, bers[i], pkt_bytes);
            if (!flit) expect += (double)st->dllps * p_lost(false, bers[i], PCIE_REF_DLLP);
            seen += (double)st->corrupted;
        }
        double z = fabs(seen - expect) / sqrt(expect + 1);
        if (z > worst_err_z) {
            worst_err_z = z;
            snprintf(err_detail, sizeof err_detail, "worst at ber %g: %.0f corrupted vs %.1f expected", bers[i], seen, expect);
        }
        if (fabs(seen - expect) > 4 * sqrt(expect) + 1) err_ok = false;
        double pl = p_lost(flit, bers[i], pkt_bytes);
        double want = n_pkts * pl / (1 - pl), sd = sqrt(n_pkts * pl) / (1 - pl);
        double zr = fabs((double)r->replays - want) / (sd + 0.25);
        if (zr > worst_rep_z) {
            worst_rep_z = zr;
            snprintf(rep_detail, sizeof rep_detail, "worst at ber %g: %" PRIu64 " replays vs %.1f predicted (sd %.1f)", bers[i],
                     r->replays, want, sd);
        }
        if (fabs((double)r->replays - want) > 4 * sd + 1) rep_ok = false;
    }
    if (nb > 1) {
        sim_check(rep, "ber_errors_as_ber_predicts", err_ok,
                  "corrupted packets = transmissions x P(bad %s) within 4 sigma; %s", flit ? "flit after FEC" : "LCRC",
                  err_detail);
        sim_check(rep, "ber_replays_as_ber_predicts", rep_ok,
                  "replays = N p / (1 - p) for N %s of p = P(lost) within 4 sigma; %s", flit ? "payload flits" : "TLPs",
                  rep_detail);
    }

    /* Goodput from the replay-time formula, with the replay counts predicted
     * above instead of the run's: of the R = N p / (1 - p) replays, E = R (p +
     * p_nak) come from the timer (the failed packet was the first of a replay,
     * so NAK_SCHEDULED keeps the receiver silent, or the Nak itself was lost)
     * and cost a REPLAY_TIMER each; the others cost the n_r packets a Nak
     * replay resends. time = N T + (R - E) n_r T + E (timeout + T), T the
     * packet time with SKP. Band: 4 sigma of the Poisson counts (sd of the time
     * sqrt((R - E) (n_r T)^2 + E (timeout + T)^2)) and n_r's range, + 0.3%. */
    bool gp_ok = true;
    char gp_detail[240] = "";
    double worst_gp = -1;
    {
        unsigned nr_lo, nr_hi;
        resent_per_nak(&base, &nr_lo, &nr_hi);
        double unit = (flit ? PCIE_REF_FLIT / pcie_ref_raw_GBps(base.gen, base.lanes)
                            : pcie_ref_tlp_ns(&base, pcie_ref_mwr_bytes(&base, base.mps))) /
                      (1 - pcie_ref_skp_frac(base.gen));
        double tmo = pcie_ref_replay_timeout_ns(base.gen, base.lanes, base.mps, (double)base.wire_ps / 1000.0) + unit;
        double link = pcie_ref_mwr_stream_GBps(&base, base.mps, false);
        for (unsigned i = 1; i < nb; i++) {
            double pl = p_lost(flit, bers[i], pkt_bytes), pn = p_lost(flit, bers[i], flit ? PCIE_REF_FLIT : PCIE_REF_DLLP);
            double R = n_pkts * pl / (1 - pl), E = R * (pl + pn), Rn = R - E;
            double t_ideal = (double)base.count * base.mps / link;        /* N T with SKP, in payload terms */
            double t_lo = t_ideal + Rn * nr_lo * unit + E * tmo, t_hi = t_ideal + Rn * nr_hi * unit + E * tmo;
            double sd = sqrt(Rn * pow(nr_hi * unit, 2) + E * tmo * tmo);
            double g_hi = (double)base.count * base.mps / fmax(t_ideal, t_lo - 4 * sd) * 1.003;
            double g_lo = (double)base.count * base.mps / (t_hi + 4 * sd) * 0.997;
            double g = sweep[i].goodput_GBps;
            bool ok = g >= g_lo && g <= g_hi;
            double margin = fmin(g - g_lo, g_hi - g) / g;
            if (!ok || worst_gp < 0 || margin < worst_gp) {
                worst_gp = margin;
                snprintf(gp_detail, sizeof gp_detail, "%s ber %g: %.2f GB/s vs %.2f..%.2f GB/s (%.1f replays, %.2f by the timer)",
                         ok ? "closest at" : "outside at", bers[i], g, g_lo, g_hi, R, E);
            }
            if (!ok) gp_ok = false;
        }
    }
    if (nb > 1)
        sim_check(rep, "ber_goodput_as_ber_predicts", gp_ok,
                  "N x MPS / (N T + (R - E) n_r T + E x REPLAY_TIMER) from the BER alone, 4 sigma; %s", gp_detail);

    /* 2. forced Naks */
    run_out nak;
    memset(&nak, 0, sizeof nak);
    nak.name = "forced_nak";
    {
        pcie_cfg cfg = base;
        cfg.err[PCIE_DOWN].nak_every = (uint32_t)nak_every;
        run_case(c, NULL, NULL, &cfg, &nak);
        all_conserved = all_conserved && nak.conserved;
        cJSON_AddItemToArray(table, run_json(&nak));
        uint64_t forced = nak.r.dir[PCIE_DOWN].forced_naks, naks = nak.r.dir[PCIE_UP].naks;
        sim_check(rep, "forced_nak_replays", forced > 0 && naks > 0 && nak.r.replays >= naks && nak.r.naks_received == naks,
                  "%" PRIu64 " forced LCRC failures -> %" PRIu64 " Naks sent, %" PRIu64 " received, %" PRIu64 " replays (%" PRIu64
                  " TLPs resent)", forced, naks, nak.r.naks_received, nak.r.replays, nak.r.dir[PCIE_DOWN].tlps_replayed);
        /* The replay-time formula, from the configuration alone: each forced
         * failure wastes the n_r packets a Nak replay resends (resent_per_nak),
         * and the receiver counts every packet it receives, so one of every
         * nak_every received is forced bad: Naks = floor((N + Naks n_r) / nak_every)
         * and goodput = link rate x N / (N + Naks n_r), over n_r's range (the
         * last Nak may resend fewer: the stream ends; 0.2% for the ends of the
         * measured window). */
        unsigned nr, nr_hi;
        resent_per_nak(&cfg, &nr, &nr_hi);
        double n_units = n_pkts, every = (double)cfg.err[PCIE_DOWN].nak_every;
        double nk = 0;
        for (int it = 0; it < 100; it++) nk = floor((n_units + nk * nr) / every);
        double link = pcie_ref_mwr_stream_GBps(&cfg, cfg.mps, false);
        double g_hi = link * n_units / (n_units + nk * nr), g_lo = link * n_units / (n_units + nk * nr_hi);
        double resent_per = naks ? (double)nak.r.dir[PCIE_DOWN].tlps_replayed / (double)naks : 0;
        if (flit) resent_per = naks ? (double)nak.r.dir[PCIE_DOWN].tlp_replay_wire_bytes / PCIE_FLIT_BYTES / (double)naks : 0;
        sim_check(rep, "forced_nak_goodput_as_predicted",
                  nak.goodput_GBps >= g_lo * 0.998 && nak.goodput_GBps <= g_hi * 1.002 &&
                      resent_per * (double)naks >= (double)(naks - 1) * nr && resent_per <= nr_hi,
                  "%.3f GB/s vs link %.3f x N / (N + %.0f Naks x n_r) = %.3f..%.3f GB/s (n_r = %u..%u %s from 2 x wire + "
                  "serialisation; measured %.2f per Nak)",
                  nak.goodput_GBps, link, nk, g_lo, g_hi, nr, nr_hi, flit ? "flits" : "TLPs", resent_per);
        sim_report_metric(rep, "forced_nak_goodput_GBps", nak.goodput_GBps);
        sim_report_metric(rep, "forced_nak_predicted_GBps", 0.5 * (g_lo + g_hi));
    }
    /* 3. dropped Acks */
    run_out ack;
    memset(&ack, 0, sizeof ack);
    ack.name = "dropped_ack";
    {
        pcie_cfg cfg = base;
        cfg.err[PCIE_UP].drop_ack_every = drop_ack_every;
        run_case(c, NULL, NULL, &cfg, &ack);
        all_conserved = all_conserved && ack.conserved;
        cJSON_AddItemToArray(table, run_json(&ack));
        uint64_t dropped = ack.r.dir[PCIE_UP].dropped_acks;
        sim_check(rep, "dropped_acks_recovered", dropped > 0 && ack.conserved,
                  "%" PRIu64 " Acks lost; later cumulative Acks (and %" PRIu64 " replay-timer expiries) recovered everything",
                  dropped, ack.r.replay_timeouts);
    }
    /* 4. lossy DLLPs with tight credits: a lost UpdateFC is made good by a later one or the 30 us refresh */
    run_out fc;
    memset(&fc, 0, sizeof fc);
    fc.name = "lossy_updatefc";
    {
        pcie_cfg cfg = base;
        cfg.adv[PCIE_COMPLETER][PCIE_FC_PH] = 1;              /* one TLP in flight: its UpdateFC is the only one */
        cfg.count = base.count / 10 > 200 ? base.count / 10 : 200;
        cfg.err[PCIE_UP].ber = 2e-3;          /* ~12% of DLLPs lost */
        fc.ber = 2e-3;
        run_case(c, NULL, NULL, &cfg, &fc);
        all_conserved = all_conserved && fc.conserved;
        cJSON_AddItemToArray(table, run_json(&fc));
        sim_check(rep, "lost_updatefc_recovered",
                  fc.conserved && fc.r.dir[PCIE_UP].corrupted > 0 && fc.r.updatefcs_refresh_posted > 0,
                  "%" PRIu64 " upstream DLLPs lost with 1 PH credit; %" PRIu64 " posted UpdateFCs came from the 30 us refresh; completed",
                  fc.r.dir[PCIE_UP].corrupted, fc.r.updatefcs_refresh_posted);
    }
    /* 5. a link that stays bad: Nak, then replay-timer expiries without progress, rollover -> retrain */
    run_out bad;
    memset(&bad, 0, sizeof bad);
    bad.name = "bad_link";
    {
        pcie_cfg cfg = base;
        sim_time_ps dur = bad_for > 0 ? pcie_ns_to_ps(bad_for * 1000.0) : 4 * phy.replay_timeout_ps + SIM_US(1);
        cfg.err[PCIE_DOWN].bad_from_ps = bad_at > 0 ? pcie_ns_to_ps(bad_at * 1000.0) : sweep[0].r.end_ps / 4;
        if (cfg.err[PCIE_DOWN].bad_from_ps >= sweep[0].r.end_ps)
            sim_input_error("pcie_replay: bad_at_us=%g is after the stream ends (%.1f us without errors); use 0 or less",
                            bad_at, (double)sweep[0].r.end_ps / 1e6);
        cfg.err[PCIE_DOWN].bad_until_ps = cfg.err[PCIE_DOWN].bad_from_ps + dur;
        run_case(c, c->k, c->trace, &cfg, &bad);
        all_conserved = all_conserved && bad.conserved;
        cJSON_AddItemToArray(table, run_json(&bad));
        sim_check(rep, "retrain_after_fourth_replay", bad.r.retrains >= 1 && bad.r.replays_before_retrain_max == 4,
                  "%" PRIu64 " retrains; replays without progress when the first retrain began: %u (REPLAY_NUM rollover at the 4th)",
                  bad.r.retrains, bad.r.replays_before_retrain_max);
        sim_check(rep, "timeouts_counted", bad.r.replay_timeouts >= 3,
                  "%" PRIu64 " replay-timer expiries while the link was bad (Nak already scheduled, so no further Naks)",
                  bad.r.replay_timeouts);
        sim_report_metric(rep, "bad_link_retrains", (double)bad.r.retrains);
        sim_report_metric(rep, "bad_link_replay_timeouts", (double)bad.r.replay_timeouts);
    }
    sim_check(rep, "delivered_once_in_order", all_conserved,
              "every run: all TLPs delivered exactly once, in order, nothing lost (%u runs)", nb + 4);

    uint64_t replays = nak.r.replays + ack.r.replays + fc.r.replays + bad.r.replays, timeouts = 0, retrains = 0;
    timeouts = nak.r.replay_timeouts + ack.r.replay_timeouts + fc.r.replay_timeouts + bad.r.replay_timeouts;
    retrains = nak.r.retrains + ack.r.retrains + fc.r.retrains + bad.r.retrains;
    for (unsigned i = 0; i < nb; i++) {
        replays += sweep[i].r.replays;
        timeouts += sweep[i].r.replay_timeouts;
        retrains += sweep[i].r.retrains;
    }
    sim_report_metric(rep, "replays", (double)replays);
    sim_report_metric(rep, "replay_timeouts", (double)timeouts);
    sim_report_metric(rep, "retrains", (double)retrains);
    uint64_t lost = 0, dup = 0, reord = 0;
    const run_out *all[4] = { &nak, &ack, &fc, &bad };
    for (unsigned i = 0; i < nb + 4; i++) {
        const pcie_results *r = i < nb ? &sweep[i].r : &all[i - nb]->r;
        for (int d = 0; d < 2; d++) {
            lost += r->dir[d].lost;
            dup += r->dir[d].duplicated;
            reord += r->dir[d].reordered;
        }
    }
    sim_report_metric(rep, "lost", (double)lost);
    sim_report_metric(rep, "duplicated", (double)dup);
    sim_report_metric(rep, "reordered", (double)reord);
    sim_report_metric_json(rep, "runs", table);
    free(sweep);
    c->sim_time_ps = total_time_ps;
    c->sim_events = total_events;
}

SIM_TEST(pcie_replay, "DLL error injection: BER sweep, forced Naks, dropped Acks, lost UpdateFCs, bad link -> retrain",
         replay_params, "tlps=4000 bers=0,1e-6,1e-5", replay_run)
