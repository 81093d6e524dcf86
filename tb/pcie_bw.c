/* pcie_bw: one DMA requester streaming writes, reads or both over one PCIe
 * link to a memory completer. Throughput, efficiency, DLLP counts, credit
 * stalls, the measured credit loop and per-transfer latency all come out of
 * the modelled messages; the checks compare them with the published
 * pcie-model prediction and the no-DLLP bound, and check conservation. */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "tb/pcie_common.h"

static const sim_param_def bw_params[] = {
    PCIE_LINK_PARAMS("20"),
    SIM_PARAM_ENUM("op", "wr", "wr|rd|rdwr", "DMA writes (MWr), reads (MRd -> CplD) or both at once"),
    SIM_PARAM_INT("size", "4096", "B", 1, 1 << 30, "bytes per DMA transfer"),
    SIM_PARAM_INT("count", "20000", "", 1, 1e10, "DMA transfers (of each kind for rdwr)"),
    SIM_PARAM_DOUBLE("ber", "0", "", 0, 0.01, "bit-error rate on TLP and DLLP bits, both directions"),
    SIM_PARAM_BOOL("msg", "0", "follow every DMA write transfer with a Msg TLP (posted, 4DW header, no data)"),
    SIM_PARAM_BOOL("lookahead", "1", "let a transmitter commit several TLPs per wake when nothing can intervene (same results, faster)"),
    SIM_PARAM_STRING("bench_out", "", "benchmark mode: also write object \"pcie_bw\" (tlps_per_s) into this bench.json"),
    SIM_PARAM_END,
};

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bw_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const enum pcie_op op = (enum pcie_op)sim_param_enum(p, "op");
    if (op == PCIE_OP_WR) pcie_params_writes_only(p, "op=wr runs writes only (op=rd|rdwr runs reads)");
    if (op == PCIE_OP_RD) {
        sim_param_not_applicable(p, "ph", "posted credits pace writes, and op=rd runs reads only (op=wr|rdwr runs writes)");
        sim_param_not_applicable(p, "pd", "posted credits pace writes, and op=rd runs reads only (op=wr|rdwr runs writes)");
        sim_param_not_applicable(p, "msg", "it follows write transfers, and op=rd runs reads only (op=wr|rdwr runs writes)");
    }
    if (sim_param_double(p, "ber") == 0) pcie_params_error_free(p, "ber=0 injects no errors");
    pcie_cfg cfg;
    pcie_cfg_from_params(p, &cfg, "pcie_bw");
    cfg.op = op;
    cfg.size = (uint64_t)sim_param_int(p, "size");
    cfg.count = (uint64_t)sim_param_int(p, "count");
    double ber = sim_param_double(p, "ber");
    cfg.no_lookahead = !sim_param_bool(p, "lookahead");
    cfg.msg_per_xfer = sim_param_bool(p, "msg");
    cfg.err[PCIE_DOWN].ber = cfg.err[PCIE_UP].ber = ber;
    char why[256];
    if (pcie_cfg_check(&cfg, why, sizeof why)) sim_input_error("pcie_bw: %s", why);
    const char *bench = sim_param_str(p, "bench_out");
    sim_test_configured(c);

    pcie_sys *s = pcie_sys_new(c->k, &cfg, c->seed, c->trace);
    const pcie_phy *phy = pcie_sys_phy(s);
    double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    pcie_run(c, c->k, s, cfg.count * (cfg.op == PCIE_OP_RDWR ? 2 : 1), SIM_US(20000), SIM_TIME_MAX);
    double wall = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    pcie_results r;
    pcie_sys_results(s, &r);

    sim_report *rep = c->report;
    double g_wr = pcie_dir_goodput_GBps(&r.dir[PCIE_DOWN]);
    double g_rd = pcie_dir_goodput_GBps(&r.dir[PCIE_UP]);
    double goodput = g_wr + g_rd;
    unsigned dirs = cfg.op == PCIE_OP_RDWR ? 2 : 1;
    double eff = goodput / (phy->raw_GBps * dirs);
    uint64_t tlps = r.dir[0].tlps_new + r.dir[1].tlps_new;
    uint64_t acks = r.dir[0].acks + r.dir[1].acks, naks = r.dir[0].naks + r.dir[1].naks;
    uint64_t upd = r.dir[0].updatefcs + r.dir[1].updatefcs;
    uint64_t lost = r.dir[0].lost + r.dir[1].lost, dup = r.dir[0].duplicated + r.dir[1].duplicated;
    uint64_t reord = r.dir[0].reordered + r.dir[1].reordered;

    sim_report_metric(rep, "raw_GBps", phy->raw_GBps);
    sim_report_metric(rep, "goodput_GBps", goodput);
    sim_report_metric(rep, "efficiency", eff);
    sim_report_metric(rep, "tlps", (double)tlps);
    sim_report_metric(rep, "acks", (double)acks);
    sim_report_metric(rep, "updatefcs", (double)upd);
    sim_report_metric(rep, "naks", (double)naks);
    sim_report_metric(rep, "replays", (double)r.replays);
    sim_report_metric(rep, "replay_timeouts", (double)r.replay_timeouts);
    sim_report_metric(rep, "retrains", (double)r.retrains);
    sim_report_metric(rep, "lost", (double)lost);
    sim_report_metric(rep, "duplicated", (double)dup);
    sim_report_metric(rep, "reordered", (double)reord);
    sim_report_metric(rep, "credit_stall_frac", r.credit_stall_frac);
    sim_report_metric(rep, "credit_loop_ns", r.credit_loop_ns);
    sim_report_metric(rep, "latency_avg_ns", sim_hist_mean(&r.latency_ns));
    sim_report_metric(rep, "latency_p99_ns", sim_hist_percentile(&r.latency_ns, 99));
    /* more detail */
    sim_report_metric(rep, "goodput_Gbps", goodput * 8);
    sim_report_metric(rep, "goodput_wr_GBps", g_wr);
    sim_report_metric(rep, "goodput_rd_GBps", g_rd);
    sim_report_metric(rep, "credit_loop_min_ns", r.credit_loop_min_ns);
    sim_report_metric(rep, "tlps_replayed", (double)(r.dir[0].tlps_replayed + r.dir[1].tlps_replayed));
    sim_report_metric(rep, "corrupted", (double)(r.dir[0].corrupted + r.dir[1].corrupted));
    sim_report_metric(rep, "skps", (double)(r.dir[0].skps + r.dir[1].skps));
    sim_report_metric(rep, "flits", (double)(r.dir[0].flits + r.dir[1].flits));
    sim_report_metric(rep, "idle_flits", (double)(r.dir[0].idle_flits + r.dir[1].idle_flits));
    sim_report_metric(rep, "fec_corrected", (double)(r.dir[0].fec_corrected + r.dir[1].fec_corrected));
    sim_report_metric(rep, "updatefc_refreshes", (double)r.updatefcs_refresh);
    sim_report_metric(rep, "ack_limit_ns", (double)phy->ack_limit_ps / 1000.0);
    sim_report_metric(rep, "replay_timeout_ns", (double)phy->replay_timeout_ps / 1000.0);
    sim_report_metric(rep, "max_replay_occupancy", r.max_replay_occupancy);
    sim_report_metric(rep, "latency_min_ns", sim_hist_count(&r.latency_ns) ? r.latency_ns.min : 0);
    if (cfg.msg_per_xfer) sim_report_metric(rep, "msgs", (double)r.msgs_received);
    sim_report_metric(rep, "tlps_per_s", wall > 0 ? (double)tlps / wall : 0);
    sim_report_metric(rep, "tlps_per_cpu_s", cpu > 0 ? (double)tlps / cpu : 0);

    double model_Gbps = 0, bound_Gbps = 0;
    if (cfg.op == PCIE_OP_WR) {
        model_Gbps = pcie_ref_model_mwr_Gbps(cfg.gen, cfg.lanes, cfg.mps, cfg.size, cfg.addr64, cfg.ecrc);
        bound_Gbps = pcie_ref_no_dllp_mwr_Gbps(cfg.gen, cfg.lanes, cfg.mps, cfg.size, cfg.addr64, cfg.ecrc);
        sim_report_metric(rep, "pcie_model_Gbps", model_Gbps);
        sim_report_metric(rep, "no_dllp_bound_Gbps", bound_Gbps);
    }

    uint64_t want = cfg.count * dirs;
    sim_check(rep, "completed", r.completed && r.xfers_done == want, "%" PRIu64 " of %" PRIu64 " transfers completed%s",
              r.xfers_done, want, r.completed ? "" : " (watchdog: no progress)");
    sim_check(rep, "nothing_lost", lost == 0, "%" PRIu64 " TLPs lost above the DLL", lost);
    sim_check(rep, "nothing_duplicated", dup == 0, "%" PRIu64 " TLPs delivered twice", dup);
    sim_check(rep, "nothing_reordered", reord == 0, "%" PRIu64 " TLPs out of order or at a wrong address", reord);
    if (cfg.msg_per_xfer && cfg.op != PCIE_OP_RD)
        sim_check(rep, "msgs_after_their_data", r.msgs_received == cfg.count && r.msg_order_errors == 0,
                  "%" PRIu64 " Msg TLPs received of %" PRIu64 ", %" PRIu64 " ahead of their transfer's data",
                  r.msgs_received, cfg.count, r.msg_order_errors);
    sim_check(rep, "no_credit_overflow", r.fc_overflows == 0,
              "TLPs beyond advertised credits: %" PRIu64 " at the requester, %" PRIu64 " at the completer",
              r.fc_overflows_side[PCIE_REQUESTER], r.fc_overflows_side[PCIE_COMPLETER]);
    char cwhy[256] = "each port took and released the credits it advertised; its partner consumed as many";
    sim_check(rep, "credits_conserve_per_port", pcie_sys_check_credits(s, cwhy, sizeof cwhy) == 0, "%s", cwhy);
    char lwhy[256] = "both directions conserve messages";
    sim_check(rep, "links_conserve", pcie_sys_check_links(s, lwhy, sizeof lwhy) == 0, "%s", lwhy);
    sim_check(rep, "goodput_below_raw", eff > 0 && eff < 1, "efficiency %.4f of the raw rate", eff);
    if (ber == 0)
        sim_check(rep, "no_errors_no_replays", r.replays == 0 && naks == 0,
                  "error-free link: %" PRIu64 " replays, %" PRIu64 " Naks", r.replays, naks);
    /* The efficiency band holds where the link (not credits, the receiver or
     * errors) limits an MWr stream of >= 256 B; whether it does is predicted
     * from the configuration, not read from the run (a model that stalled on
     * credits it should not lack must fail here, not skip the check). The
     * prediction (pcie_ref_mwr_stream_GBps) counts every byte the data
     * direction carries: TLPs with framing, SKPs and the requester's 30 us
     * UpdateFC refreshes; the Acks and UpdateFCs for the data travel the other
     * way and cost this direction nothing. What it leaves out (whole SKPs and
     * refreshes at the ends of the window) is below 1e-4 for a run of 1000
     * TLPs or more (measured: within 0.03% for Gen1-6, x1-x16, 256 B-4 KB,
     * msg=1), so +-0.3% catches a 3% loss with room for both. */
    double tlp_ns = pcie_ref_tlp_ns(&cfg, pcie_ref_mwr_bytes(&cfg, cfg.mps));
    pcie_ref_loop loop;
    pcie_ref_credit_loop(&cfg, &loop);
    double win_tlps = 1e18;
    if (cfg.adv[PCIE_COMPLETER][PCIE_FC_PH]) win_tlps = (double)cfg.adv[PCIE_COMPLETER][PCIE_FC_PH] * cfg.fc_scale;
    if (cfg.adv[PCIE_COMPLETER][PCIE_FC_PD] && (double)cfg.adv[PCIE_COMPLETER][PCIE_FC_PD] * cfg.fc_scale / (cfg.mps / PCIE_FC_UNIT_BYTES) < win_tlps)
        win_tlps = floor((double)cfg.adv[PCIE_COMPLETER][PCIE_FC_PD] * cfg.fc_scale / (cfg.mps / PCIE_FC_UNIT_BYTES));
    double pred_GBps = 0;
    if (cfg.op == PCIE_OP_WR) {
        pred_GBps = pcie_ref_mwr_stream_GBps(&cfg, cfg.size, cfg.msg_per_xfer);
        sim_report_metric(rep, "predicted_goodput_GBps", pred_GBps);
    }
    double credit_GBps = win_tlps * cfg.mps / loop.loop_ns;
    bool band = cfg.op == PCIE_OP_WR && cfg.size >= 256 && ber == 0 && credit_GBps >= 1.1 * pred_GBps &&
                (double)cfg.rx_ps / 1000.0 < tlp_ns && tlps >= 1000;
    if (band)
        sim_check(rep, "efficiency_in_band", fabs(goodput / pred_GBps - 1) <= 0.003 && goodput * 8 >= model_Gbps,
                  "MWr %.3f GB/s vs predicted %.3f GB/s (TLP framing, SKP, refreshes; limit +-0.3%%), above pcie-model "
                  "%.2f Gb/s, no-DLLP bound %.2f Gb/s", goodput, pred_GBps, model_Gbps, bound_Gbps);
    if (cfg.op == PCIE_OP_WR && cfg.size >= 256 && ber == 0)
        sim_check(rep, "goodput_not_above_bound", goodput * 8 <= bound_Gbps * 1.0001,
                  "%.2f Gb/s <= no-DLLP bound %.2f Gb/s", goodput * 8, bound_Gbps);
    if (r.credit_loop_samples)
        sim_check(rep, "credit_loop_physical", r.credit_loop_min_ns >= 2.0 * (double)cfg.wire_ps / 1000.0,
                  "fastest credit loop %.1f ns >= 2 x wire %.1f ns", r.credit_loop_min_ns,
                  2.0 * (double)cfg.wire_ps / 1000.0);

    if (bench && *bench) {
        /* median of three runs (this one and two more on fresh kernels): the machine is shared */
        double rate[3] = { wall > 0 ? (double)tlps / wall : 0 }, crate[3] = { cpu > 0 ? (double)tlps / cpu : 0 };
        for (int i = 1; i < 3; i++) {
            sim_kernel *k2 = sim_kernel_new();
            pcie_sys *s2 = pcie_sys_new(k2, &cfg, c->seed, NULL);
            double w0 = clock_s(CLOCK_MONOTONIC), u0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            while (!pcie_sys_run(s2, SIM_TIME_MAX)) {
            }
            double w = clock_s(CLOCK_MONOTONIC) - w0, u = clock_s(CLOCK_PROCESS_CPUTIME_ID) - u0;
            pcie_results r2;
            pcie_sys_results(s2, &r2);
            double n2 = (double)(r2.dir[0].tlps_new + r2.dir[1].tlps_new);
            rate[i] = w > 0 ? n2 / w : 0;
            crate[i] = u > 0 ? n2 / u : 0;
            sim_hist_free(&r2.latency_ns);
            pcie_sys_free(s2);
            sim_kernel_free(k2);
        }
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++) {
                if (rate[j] < rate[i]) { double t = rate[i]; rate[i] = rate[j]; rate[j] = t; }
                if (crate[j] < crate[i]) { double t = crate[i]; crate[i] = crate[j]; crate[j] = t; }
            }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "tlps_per_s", rate[1]);
        cJSON_AddNumberToObject(o, "tlps_per_cpu_s", crate[1]);
        cJSON_AddNumberToObject(o, "tlps", (double)tlps);
        cJSON_AddNumberToObject(o, "wall_s", wall);
        cJSON_AddNumberToObject(o, "cpu_s", cpu);
        cJSON_AddNumberToObject(o, "target_tlps_per_s", 5e6);
        char desc[160];
        snprintf(desc, sizeof desc, "Gen%u x%u MPS %u, %s %llu B x %llu, trace off", cfg.gen, cfg.lanes, cfg.mps,
                 cfg.op == PCIE_OP_WR ? "MWr" : cfg.op == PCIE_OP_RD ? "MRd" : "MRd+MWr", (unsigned long long)cfg.size,
                 (unsigned long long)cfg.count);
        cJSON_AddStringToObject(o, "config", desc);
        if (sim_bench_write(bench, "pcie_bw", o)) sim_check(rep, "bench_written", false, "could not write %s", bench);
    }
    sim_report_metric_json(rep, "latency_histogram_ns", sim_hist_json(&r.latency_ns, 10));
    sim_hist_free(&r.latency_ns);
    c->sim_time_ps = sim_now(c->k);
    pcie_sys_free(s);
}

SIM_TEST(pcie_bw, "one DMA requester streaming writes/reads over a PCIe link: throughput, efficiency, DLLPs, credits, latency",
         bw_params, "count=3000", bw_run)
