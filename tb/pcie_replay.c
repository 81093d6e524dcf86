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
