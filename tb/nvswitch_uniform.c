/* nvswitch_uniform: N endpoints inject Bernoulli traffic at an offered load
 * into an NVSwitch-like crossbar over links with credits; the classic
 * input-queued switch experiment (Karol 1987 for FIFO, McKeown 1999 for
 * VOQ/iSLIP, Anderson 1993 for PIM). Throughput, latency and conservation are
 * measured at the endpoints; the checks compare them with the published
 * results where this configuration is one they cover. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cJSON.h"
#include "tb/nvs/nvs_experiment.h"
#include "models/traffic/endpoints.h"
#include "sim/sim.h"

static const sim_param_def uniform_params[] = {
    NVS_NET_PARAMS("16", "64"),
    SIM_PARAM_DOUBLE("load", "1.0", "flits/cycle", 0, 1, "offered load per input (Bernoulli)"),
    SIM_PARAM_ENUM("pattern", "uniform", TRAFFIC_PATTERN_CHOICES, "destinations (uniform includes the own port)"),
    SIM_PARAM_DOUBLE("hotspot_frac", "0.2", "", 0, 1, "pattern=hotspot: fraction of packets to port 0"),
    SIM_PARAM_INT("pkt_flits", "1", "flits", 1, NVS_EXP_MAX_FLITS, "flits per packet, header included"),
    SIM_PARAM_INT("cycles", "20000", "cycles", 1, 1e10, "simulated switch cycles"),
    SIM_PARAM_INT("warmup", "2000", "cycles", 0, 1e10, "cycles before the measured window"),
    SIM_PARAM_INT("source_queue_pkts", "1024", "packets", 16, 4e9,
                  "packets a source may hold (the rest wait in its generator); past it an overloaded VOQ source may pick "
                  "otherwise than an unbounded one, which check sources_exact reports; 16 B a packet"),
    SIM_PARAM_END,
};

/* Binomial 4-sigma band on a rate measured over `samples` Bernoulli trials. */
static double band(double rate, double samples)
{
    return 4.0 * sqrt(rate * (1 - rate) / samples) + 1e-3;
}

/* The saturated FIFO switch's throughput over W cycles x N ports is a mean of
 * correlated 0/1 samples (a blocked head-of-line cell stays blocked): its
 * standard deviation is KAROL_CORR x the binomial one. KAROL_CORR is the
 * ratio of batch-mean deviation to the binomial one in a slotted simulation
 * of the ideal switch (random winners, 200-300 batches of 1000 cycles: 0.85 at
 * N = 2, 0.89 at N = 4, 1.07 at N = 16), with margin for that estimate and for
 * round-robin arbiters. Band: 4 such sigmas. */
#define KAROL_CORR 1.5
static double karol_band(double rate, double samples)
{
    return 4.0 * KAROL_CORR * sqrt(rate * (1 - rate) / samples);
}

static void uniform_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    char why[256];
    nvs_uniform_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if (nvs_net_from_params(p, &cfg.net, c->seed, why, sizeof why) != 0) sim_input_error("nvswitch_uniform: %s", why);
    cfg.load = sim_param_double(p, "load");
    cfg.pattern = (traffic_pattern)traffic_pattern_parse(sim_param_str(p, "pattern"));
    cfg.hotspot_frac = sim_param_double(p, "hotspot_frac");
    cfg.pkt_flits = (int)sim_param_int(p, "pkt_flits");
    cfg.cycles = (uint64_t)sim_param_int(p, "cycles");
    cfg.warmup = (uint64_t)sim_param_int(p, "warmup");
    cfg.src_hard_pkts = (uint32_t)sim_param_int(p, "source_queue_pkts");
    cfg.src_soft_pkts = cfg.src_hard_pkts < TEP_SRC_QUEUE_PKTS ? cfg.src_hard_pkts : TEP_SRC_QUEUE_PKTS;
    if (cfg.net.sw.model == NVS_MODEL_TL)   /* with the RTL it picks the Verilated variant */
        sim_param_not_applicable(p, "fanout_read", "nvswitch_uniform sends unicast packets only, and model=tl has no RTL variant to pick");
    if (cfg.pattern != TRAFFIC_HOTSPOT) sim_param_not_applicable(p, "hotspot_frac", "it applies to pattern=hotspot only");
    cfg.seed = c->seed;
    cfg.record_latency = true;
    cfg.trace = c->trace;
    const xbar_core_cfg *core = &cfg.net.sw.core;
    const int n = core->ports;
    if (cfg.net.sw.saf && core->depth && core->depth < cfg.pkt_flits)
        sim_input_error("nvswitch_uniform: switching=saf needs depth >= pkt_flits (%d < %d): a packet waits for room for all its flits",
                        core->depth, cfg.pkt_flits);
    sim_test_configured(c);
    nvs_uniform_result r;
    if (nvs_run_uniform(c->k, &cfg, &r, why, sizeof why) != 0) sim_input_error("nvswitch_uniform: %s", why);
    c->sim_time_ps = r.sim_time_ps;
    c->sim_events = r.sim_events;

    sim_report *rep = c->report;
    sim_report_metric(rep, "throughput", r.throughput);
    sim_report_metric(rep, "throughput_min_input", r.throughput_min_input);
    sim_report_metric(rep, "throughput_max_input", r.throughput_max_input);
    sim_report_metric(rep, "latency_avg_cycles", r.latency_avg_cycles);
    sim_report_metric(rep, "latency_p99_cycles", r.latency_p99_cycles);
    sim_report_metric(rep, "latency_min_cycles", r.latency_min_cycles);
    sim_report_metric(rep, "backlog_end", (double)r.backlog_end);
    sim_report_metric(rep, "source_cap_hits", (double)r.source_cap_hits);
    sim_report_metric(rep, "dropped", (double)r.cons.dropped);
    sim_report_metric(rep, "duplicated", (double)r.cons.duplicated);
    sim_report_metric(rep, "out_of_order", (double)r.cons.out_of_order);
    sim_report_metric(rep, "copies_delivered", (double)r.cons.copies_delivered);
    sim_report_metric(rep, "offered", r.offered);
    sim_report_metric(rep, "period_ps", (double)r.period_ps);
    sim_report_metric(rep, "port_cycles_per_s", r.wall_s > 0 ? (double)r.switch_cycles * n / r.wall_s : 0);
    if (cfg.net.sw.model == NVS_MODEL_BOTH) {
        sim_report_metric(rep, "mismatches", (double)r.mismatches);
        sim_report_metric(rep, "cycles_compared", (double)r.cycles_compared);
    }
    cJSON *pin = cJSON_CreateArray(), *pout = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(pin, cJSON_CreateNumber(r.per_input[i]));
        cJSON_AddItemToArray(pout, cJSON_CreateNumber(r.per_output[i]));
    }
    sim_report_metric_json(rep, "throughput_per_input", pin);
    sim_report_metric_json(rep, "throughput_per_output", pout);

    /* Conservation: every copy that entered the network left it once, in order. */
    sim_check(rep, "no_loss", r.cons.dropped == 0, "%" PRIu64 " of %" PRIu64 " copies lost after the drain", r.cons.dropped,
              r.cons.copies_sent);
    sim_check(rep, "no_duplicates", r.cons.duplicated == 0, "%" PRIu64 " duplicated copies", r.cons.duplicated);
    sim_check(rep, "in_order_per_flow", r.cons.out_of_order == 0, "%" PRIu64 " flits behind a later flit of their flow",
              r.cons.out_of_order);
    sim_check(rep, "links_conserve", r.cons.links_ok, "%s", r.cons.links_why);
    /* past their hard cap the sources may pick otherwise than unbounded ones (endpoints.h) */
    sim_check(rep, "sources_exact", r.source_cap_hits == 0,
              "%" PRIu64 " source picks at the cap of %u packets held: results may differ from unbounded sources "
              "(raise source_queue_pkts, 16 B a packet, or shorten the run)", r.source_cap_hits, cfg.src_hard_pkts);
    if (cfg.net.sw.model == NVS_MODEL_BOTH)
        sim_check(rep, "lockstep_equal", r.mismatches == 0, "%" PRIu64 " mismatching fields in %" PRIu64 " cycles%s%s", r.mismatches,
                  r.cycles_compared, r.mismatches ? "; first: " : "", r.first_mismatch);

    const double win = (double)(cfg.cycles - cfg.warmup);
    const double samples = win * n;
    sim_check(rep, "throughput_not_above_offered", r.throughput <= r.offered + band(r.offered, samples),
              "delivered %.4f <= offered %.4f (+4 sigma)", r.throughput, r.offered);

    /* The published results, where they apply. */
    const bool uniform = cfg.pattern == TRAFFIC_UNIFORM, saturated = cfg.load >= 0.95, cells = cfg.pkt_flits == 1;
    const bool deep = core->depth == 0 || core->depth >= 32;
    if (core->queue == XBAR_QUEUE_FIFO && uniform && saturated && cells && deep) {
        /* Karol's saturation throughput for this N (below it, the offered load is carried) */
        double table_err, karol = nvs_karol_saturation(n, &table_err);
        double expect = karol < cfg.load ? karol : cfg.load;
        double tol = karol_band(expect, samples) + table_err;
        sim_check(rep, "fifo_hol_limit", fabs(r.throughput - expect) <= tol,
                  "FIFO saturates at %.4f vs Karol's N=%d value %.4f (+-%.4f: 4 sigma over %.0f port-cycles, x%.1f for "
                  "correlation, + table %.0e)",
                  r.throughput, n, expect, tol, samples, KAROL_CORR, table_err);
        if (core->alloc != XBAR_ALLOC_PIM) {
            double spread = (r.throughput_max_input - r.throughput_min_input) / r.throughput;
            sim_check(rep, "fifo_rr_fair", spread < 0.1,
                      "round-robin output arbiters: per-input %.4f..%.4f, spread %.1f%% < 10%%", r.throughput_min_input,
                      r.throughput_max_input, 100 * spread);
        }
    }
    if (core->queue == XBAR_QUEUE_VOQ && uniform && saturated && cells && deep) {
        if (core->alloc == XBAR_ALLOC_PIM && core->iters == 1) {
            double pim = 1.0 - pow(1.0 - 1.0 / n, n);
            sim_check(rep, "pim1_saturation", fabs(r.throughput - pim) < 0.02,
                      "PIM-1 saturates at %.4f vs 1-(1-1/N)^N = %.4f (+-0.02)", r.throughput, pim);
        } else if (core->alloc != XBAR_ALLOC_PIM || core->iters >= 4) {
            sim_check(rep, "voq_full_throughput", r.throughput >= 0.95 * cfg.load,
                      "VOQ + %s-%d delivers %.4f of offered %.4f (>= 95%%)", xbar_alloc_name(core->alloc), core->iters,
                      r.throughput, cfg.load);
        }
    }
    /* Below saturation every offered flit is carried. */
    double limit = core->queue == XBAR_QUEUE_FIFO ? 2.0 - sqrt(2.0)
                   : (core->alloc == XBAR_ALLOC_PIM && core->iters == 1) ? 1.0 - pow(1.0 - 1.0 / n, n) : 0.95;
    if (uniform && cells && deep && cfg.load <= 0.85 * limit && cfg.load > 0)
        sim_check(rep, "carries_offered_load", fabs(r.throughput - cfg.load) <= band(cfg.load, samples),
                  "below saturation: delivered %.4f = offered %.4f (4 sigma %.4f)", r.throughput, cfg.load,
                  band(cfg.load, samples));
    /* At light load the fastest flit sees exactly the pipeline: source
     * serialisation + link, the first edge after arrival, 1+L core cycles,
     * output serialisation + link. */
    if (cfg.load <= 0.05 && cfg.load > 0 && cells && r.latency_samples) {
        double T = (double)r.period_ps, ll = llround(cfg.net.link_latency_ns * 1000.0);
        double arrive = T + ll;                          /* from the creating edge */
        double edge = (floor(arrive / T) + 1) * T;       /* first edge strictly after */
        double expect = (edge + (1 + core->latency) * T + T + ll) / T;
        sim_check(rep, "zero_load_latency_exact", fabs(r.latency_min_cycles - expect) < 1e-6,
                  "fastest flit %.4f cycles = pipeline %.4f cycles", r.latency_min_cycles, expect);
    }
}

SIM_TEST(nvswitch_uniform, "NVSwitch-like crossbar under Bernoulli traffic: throughput, latency, fairness, conservation",
         uniform_params, "cycles=6000 warmup=1000", uniform_run)
