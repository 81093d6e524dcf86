/* cxl_mem: a host load/store stream to CXL.mem Type-3 memory against local
 * DRAM. First three idle requests, each alone in the system, with their
 * per-hop breakdown: a load (MemRd -> MemData) and a store (MemWr -> Cmp) to
 * device 0 and a load from local DRAM; each must equal the sum of its hops and
 * the analytic formula from the configured parameters. Then a sequential
 * stream of `requests` 64 B lines (read_pct loads, the rest stores) with
 * `outstanding` in flight, over the HDM window interleaved across `devices`
 * at `interleave_bytes`, and the same stream against local DRAM: latency
 * p50/p99, bandwidth, per-device bytes, link use and credit stalls. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "models/cxl/cxl_mem.h"
#include "sim/sim.h"

static const sim_param_def mem_params[] = {
    SIM_PARAM_INT("devices", "2", "", 1, 8, "Type-3 devices, the ways of one HDM interleave set (1, 2, 3, 4, 6, 8)"),
    SIM_PARAM_INT("interleave_bytes", "4096", "B", 256, 16384,
                  "HDM interleave granularity: consecutive blocks of this size go to consecutive devices (power of two)"),
    SIM_PARAM_INT("outstanding", "128", "", 1, 4096, "loaded runs: requests in flight (closed loop; host tags)"),
    SIM_PARAM_DOUBLE("read_pct", "70", "%", 0, 100, "loaded runs: share of loads (MemRd); the rest are stores (MemWr)"),
    SIM_PARAM_INT("requests", "20000", "", 1, 100000000, "loaded runs: 64 B requests in each (CXL, local DRAM)"),
    SIM_PARAM_DOUBLE("link_ns", "25", "ns", 0, 10000, "one-way CXL link latency (TX pack + PHY + wire + RX unpack)"),
    SIM_PARAM_INT("lanes", "16", "", 1, 16, "link width (1, 2, 4, 8 or 16)"),
    SIM_PARAM_DOUBLE("gts", "32", "GT/s", 2.5, 64, "per-lane rate: 8, 16 or 32 (68 B flits, 128b/130b)"),
    SIM_PARAM_DOUBLE("home_ns", "15", "ns", 0, 10000, "host: a core's miss to the home agent and back, address decode"),
    SIM_PARAM_DOUBLE("ctrl_ns", "20", "ns", 0, 10000, "device controller: M2S ingress, decode, scheduling"),
    SIM_PARAM_DOUBLE("media_ns", "90", "ns", 0, 10000, "device memory: idle access latency"),
    SIM_PARAM_DOUBLE("media_GBps", "76.8", "GB/s", 0.1, 10000, "device memory bandwidth (2 x DDR5-4800 = 76.8)"),
    SIM_PARAM_DOUBLE("dram_ns", "90", "ns", 0, 10000, "host local DRAM: idle access latency"),
    SIM_PARAM_DOUBLE("dram_GBps", "307.2", "GB/s", 0.1, 10000, "host local DRAM bandwidth (8 x DDR5-4800 = 307.2)"),
    SIM_PARAM_INT("credits", "64", "", 1, 1024, "CXL.mem credits per class and direction (M2S Req/RwD, S2M NDR/DRS)"),
    SIM_PARAM_END,
};

enum { PH_IDLE, PH_LOAD };

typedef struct mem_tb {
    sim_test_ctx *c;
    cxl_mem_sys *s;
    sim_rng rng;
    unsigned phase, target;
    double read_frac;
    uint64_t requests, issued, done, reads_issued, writes_issued;
    /* idle: the one request's result */
    bool idle_done;
    sim_time_ps idle_ps;
    cxl_path idle_path;
    /* load */
    sim_time_ps t_first_ps, t_last_ps;
    sim_hist rd_lat, wr_lat;
    double rd_min_ns, wr_min_ns;
} mem_tb;

static void issue_next(mem_tb *t)
{
    while (t->issued < t->requests) {
        bool write = sim_rng_double(&t->rng) >= t->read_frac;
        if (!cxl_mem_issue(t->s, t->target, t->issued * 64, write)) return;
        if (write) t->writes_issued++;
        else t->reads_issued++;
        t->issued++;
    }
}

static void on_done(void *ctx, unsigned target, uint64_t addr, bool write, unsigned device, sim_time_ps issued_ps,
                    const cxl_path *path)
{
    (void)target;
    (void)addr;
    (void)device;
    mem_tb *t = ctx;
    sim_time_ps now = sim_now(t->c->k);
    if (t->phase == PH_IDLE) {
        t->idle_done = true;
        t->idle_ps = now - issued_ps;
        if (path) t->idle_path = *path;
        return;
    }
    double ns = (double)(now - issued_ps) / 1000.0;
    sim_hist_add(write ? &t->wr_lat : &t->rd_lat, ns);
    if (write && ns < t->wr_min_ns) t->wr_min_ns = ns;
    if (!write && ns < t->rd_min_ns) t->rd_min_ns = ns;
    t->done++;
    t->t_last_ps = now;
    if ((t->done & 0x3fff) == 0) sim_progress(t->c, (double)t->done / (double)t->requests, "%" PRIu64 " requests", t->done);
    issue_next(t);
}

/* One request alone in the system: its latency and hops. */
typedef struct idle_result {
    bool done;
    double ns, sum_ns;
    cJSON *hops;
} idle_result;

static idle_result run_idle(mem_tb *t, unsigned target, bool write)
{
    idle_result r = { 0 };
    t->phase = PH_IDLE;
    t->idle_done = false;
    memset(&t->idle_path, 0, sizeof t->idle_path);
    if (!cxl_mem_issue(t->s, target, 0, write)) sim_fatal("cxl_mem: idle request refused");
    sim_run(t->c->k, SIM_TIME_MAX);
    r.done = t->idle_done;
    r.ns = t->idle_ps / 1000.0;
    r.hops = cJSON_CreateArray();
    sim_time_ps sum = 0;
    for (unsigned i = 0; i < t->idle_path.n; i++) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "name", t->idle_path.hop[i].name);
        cJSON_AddNumberToObject(h, "ns", t->idle_path.hop[i].ps / 1000.0);
        cJSON_AddItemToArray(r.hops, h);
        sum += t->idle_path.hop[i].ps;
        if (!t->c->quiet)
            printf("    %-12s %9.3f ns%s\n", t->idle_path.hop[i].name, t->idle_path.hop[i].ps / 1000.0,
                   t->idle_path.hop[i].link ? "  (link)" : "");
    }
    r.sum_ns = sum / 1000.0;
    return r;
}

/* The stream against one target; returns its GB/s (bytes per ns). */
static double run_load(mem_tb *t, unsigned target)
{
    t->phase = PH_LOAD;
    t->target = target;
    t->issued = t->done = t->reads_issued = t->writes_issued = 0;
    sim_hist_clear(&t->rd_lat);
    sim_hist_clear(&t->wr_lat);
    t->rd_min_ns = t->wr_min_ns = 1e30;
    t->t_first_ps = sim_now(t->c->k);
    t->t_last_ps = t->t_first_ps;
    issue_next(t);
    sim_run(t->c->k, SIM_TIME_MAX);
    double span_ns = (double)(t->t_last_ps - t->t_first_ps) / 1000.0;
    return span_ns > 0 ? (double)t->done * 64.0 / span_ns : 0;
}

static cJSON *lat_obj(double idle, sim_hist *h)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "idle", idle);
    cJSON_AddNumberToObject(o, "p50", sim_hist_percentile(h, 50));
    cJSON_AddNumberToObject(o, "p99", sim_hist_percentile(h, 99));
    return o;
}

static void mem_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    cxl_mem_cfg cfg;
    cxl_mem_cfg_defaults(&cfg);
    cfg.devices = (unsigned)sim_param_int(p, "devices");
    cfg.interleave_bytes = (uint64_t)sim_param_int(p, "interleave_bytes");
    cfg.link_ns = sim_param_double(p, "link_ns");
    cfg.lanes = (unsigned)sim_param_int(p, "lanes");
    cfg.gts = sim_param_double(p, "gts");
    cfg.home_ns = sim_param_double(p, "home_ns");
    cfg.ctrl_ns = sim_param_double(p, "ctrl_ns");
    cfg.media_ns = sim_param_double(p, "media_ns");
    cfg.media_GBps = sim_param_double(p, "media_GBps");
    cfg.dram_ns = sim_param_double(p, "dram_ns");
    cfg.dram_GBps = sim_param_double(p, "dram_GBps");
    cfg.credits_m2s = cfg.credits_s2m = (unsigned)sim_param_int(p, "credits");
    cfg.tags = (unsigned)sim_param_int(p, "outstanding");
    mem_tb t = { 0 };
    t.c = c;
    t.read_frac = sim_param_double(p, "read_pct") / 100.0;
    t.requests = (uint64_t)sim_param_int(p, "requests");
    if (cfg.devices == 1) sim_param_not_applicable(p, "interleave_bytes", "devices=1: nothing to interleave across");
    cxl_mem_cfg_check(&cfg, "cxl_mem");
    sim_test_configured(c);
    sim_rng_seed_stream(&t.rng, c->seed, 0x3e3);
    sim_hist_init(&t.rd_lat, "read");
    sim_hist_init(&t.wr_lat, "write");
    t.s = cxl_mem_sys_new(c->k, &cfg, c->trace);
    cxl_mem_sys_set_done(t.s, on_done, &t);
    sim_report *rep = c->report;

    /* ---- idle: one request at a time, with hops ---- */
    cxl_mem_sys_track_paths(t.s, true);
    if (!c->quiet) printf("  idle load from CXL memory (device 0):\n");
    idle_result ird = run_idle(&t, CXL_MEM_HDM, false);
    if (!c->quiet) printf("  idle store to CXL memory (device 0):\n");
    idle_result iwr = run_idle(&t, CXL_MEM_HDM, true);
    if (!c->quiet) printf("  idle load from local DRAM:\n");
    idle_result iloc = run_idle(&t, CXL_MEM_LOCAL, false);
    cxl_mem_sys_track_paths(t.s, false);

    /* The analytic idle latencies. S1 = one 68 B flit on 128b/130b lanes,
     * rounded up to a whole ps as the link serialises it; a request header
     * alone fits one flit, a header with its 64 B line spans two (slot 0 +
     * three data slots, then the fourth): S2 = 2 S1. */
    double flit_ns = 68.0 / (cfg.lanes * cfg.gts / 8.0 * 128.0 / 130.0);
    double S1 = ceil(flit_ns * 1000.0 - 1e-6) / 1000.0, S2 = 2 * S1;
    double L = cfg.link_ns, H = cfg.home_ns, Dc = cfg.ctrl_ns, Mm = cfg.media_ns, Md = cfg.dram_ns;
    double want_rd = H + S1 + L + Dc + Mm + S2 + L;   /* MemRd out, MemData back */
    double want_wr = H + S2 + L + Dc + Mm + S1 + L;   /* MemWr + data out, Cmp back */
    double want_loc = H + Md;

    /* ---- loaded: the stream over the HDM window, then over local DRAM ---- */
    cxl_mem_stats before, after;
    cxl_mem_stats_get(t.s, &before);
    cxl_mem_reset_link_stats(t.s);
    if (!c->quiet) printf("  stream: %" PRIu64 " requests, %u outstanding, %.0f %% loads over %u devices\n", t.requests,
                          cfg.tags, t.read_frac * 100, cfg.devices);
    double GBps = run_load(&t, CXL_MEM_HDM);
    cxl_mem_stats_get(t.s, &after);
    uint64_t cxl_done = t.done, cxl_reads = t.reads_issued, cxl_writes = t.writes_issued;
    double span_ns = (double)(t.t_last_ps - t.t_first_ps) / 1000.0;
    double rd_GBps = span_ns > 0 ? (double)cxl_reads * 64 / span_ns : 0;
    double wr_GBps = span_ns > 0 ? (double)cxl_writes * 64 / span_ns : 0;
    cJSON *lat = lat_obj(ird.ns, &t.rd_lat), *wlat = lat_obj(iwr.ns, &t.wr_lat);
    double rd_min = t.rd_min_ns, wr_min = t.wr_min_ns;
    cJSON *dev_bytes = cJSON_CreateArray();
    uint64_t bytes_min = UINT64_MAX, bytes_max = 0, bytes_sum = 0, flits_s2m = 0, data_s2m = 0;
    double util_m2s = 0, util_s2m = 0, stall[4] = { 0 };
    bool dev_as_predicted = true;
    for (unsigned i = 0; i < cfg.devices; i++) {
        const cxl_mem_dev_stats *a = &after.dev[i], *b = &before.dev[i];
        uint64_t by = (a->bytes_read - b->bytes_read) + (a->bytes_written - b->bytes_written);
        cJSON_AddItemToArray(dev_bytes, cJSON_CreateNumber((double)by));
        if (by < bytes_min) bytes_min = by;
        if (by > bytes_max) bytes_max = by;
        bytes_sum += by;
        /* the stream's lines 0..requests-1 at 64 B: line l is in block l*64/g, device (block mod ways) */
        uint64_t g = cfg.interleave_bytes, lines_per_block = g / 64, blocks = t.requests / lines_per_block;
        uint64_t want = blocks / cfg.devices * g + (i < blocks % cfg.devices ? g : 0);
        if (i == blocks % cfg.devices) want += (t.requests % lines_per_block) * 64;
        if (by != want) dev_as_predicted = false;
        flits_s2m += a->flits_s2m - b->flits_s2m;
        data_s2m += a->data_bytes_s2m - b->data_bytes_s2m;
        util_m2s += a->util_m2s / cfg.devices;
        util_s2m += a->util_s2m / cfg.devices;
        for (unsigned k = 0; k < 4; k++) stall[k] += a->credit_stall_ns[k] - b->credit_stall_ns[k];
    }
    if (!c->quiet) printf("  the same stream against local DRAM\n");
    double loc_GBps = run_load(&t, CXL_MEM_LOCAL);
    cJSON *llat = lat_obj(iloc.ns, &t.rd_lat);

    if (!c->quiet) {
        cJSON *objs[3] = { lat, wlat, llat };
        static const char *const nm[3] = { "CXL loads", "CXL stores", "local loads" };
        for (unsigned i = 0; i < 3; i++)
            printf("  %-11s latency ns: idle %.3f, p50 %.1f, p99 %.1f\n", nm[i],
                   cJSON_GetObjectItem(objs[i], "idle")->valuedouble, cJSON_GetObjectItem(objs[i], "p50")->valuedouble,
                   cJSON_GetObjectItem(objs[i], "p99")->valuedouble);
    }

    /* ---- report ---- */
    double link_GBps = cfg.lanes * cfg.gts / 8.0 * 128.0 / 130.0;
    double goodput = link_GBps * 64.0 / 68.0;   /* at most 64 B of data in a 68 B flit (an all-data flit) */
    sim_report_metric_json(rep, "latency_ns", lat);
    sim_report_metric_json(rep, "write_latency_ns", wlat);
    sim_report_metric_json(rep, "local_dram_latency_ns", llat);
    sim_report_metric(rep, "added_latency_ns", ird.ns - iloc.ns);
    sim_report_metric(rep, "GBps", GBps);
    sim_report_metric(rep, "read_GBps", rd_GBps);
    sim_report_metric(rep, "write_GBps", wr_GBps);
    sim_report_metric(rep, "local_dram_GBps", loc_GBps);
    sim_report_metric(rep, "link_GBps", link_GBps);
    sim_report_metric(rep, "link_goodput_GBps", goodput);
    sim_report_metric_json(rep, "hops", ird.hops);
    sim_report_metric_json(rep, "write_hops", iwr.hops);
    sim_report_metric_json(rep, "local_dram_hops", iloc.hops);
    sim_report_metric(rep, "expected_ns", want_rd);
    sim_report_metric_json(rep, "formula", cJSON_CreateString("H + S1 + L + ctrl + media + S2 + L"));
    sim_report_metric(rep, "flit_ns", flit_ns);
    sim_report_metric_json(rep, "device_bytes", dev_bytes);
    sim_report_metric(rep, "link_util_m2s", util_m2s);
    sim_report_metric(rep, "link_util_s2m", util_s2m);
    sim_report_metric(rep, "s2m_flit_efficiency", flits_s2m ? (double)data_s2m / (double)(flits_s2m * 68) : 0);
    cJSON *st_o = cJSON_CreateObject();
    static const char *const stn[4] = { "m2s_req", "m2s_rwd", "s2m_ndr", "s2m_drs" };
    for (unsigned k = 0; k < 4; k++) cJSON_AddNumberToObject(st_o, stn[k], stall[k]);
    sim_report_metric_json(rep, "credit_stall_ns", st_o);
    sim_report_metric(rep, "requests", (double)cxl_done);

    /* ---- checks ---- */
    sim_check(rep, "idle_completed", ird.done && iwr.done && iloc.done, "the three idle requests completed");
    sim_check(rep, "idle_latency_is_sum_of_hops",
              fabs(ird.ns - ird.sum_ns) < 1e-9 && fabs(iwr.ns - iwr.sum_ns) < 1e-9 && fabs(iloc.ns - iloc.sum_ns) < 1e-9,
              "load %.3f = hops %.3f ns, store %.3f = %.3f ns, local %.3f = %.3f ns", ird.ns, ird.sum_ns, iwr.ns,
              iwr.sum_ns, iloc.ns, iloc.sum_ns);
    sim_check(rep, "idle_latency_matches_formula",
              fabs(ird.ns - want_rd) < 0.0005 && fabs(iwr.ns - want_wr) < 0.0005 && fabs(iloc.ns - want_loc) < 0.0005,
              "load %.3f ns = H + S1 + L + ctrl + media + S2 + L = %.3f; store %.3f = H + S2 + L + ctrl + media + S1 + L "
              "= %.3f; local %.3f = H + dram = %.3f", ird.ns, want_rd, iwr.ns, want_wr, iloc.ns, want_loc);
    sim_check(rep, "loaded_not_faster_than_idle",
              (rd_min >= ird.ns - 0.0005 || rd_min > 1e29) && (wr_min >= iwr.ns - 0.0005 || wr_min > 1e29),
              "fastest loaded load %.3f >= idle %.3f ns, store %.3f >= %.3f ns", rd_min > 1e29 ? 0 : rd_min, ird.ns,
              wr_min > 1e29 ? 0 : wr_min, iwr.ns);
    sim_check(rep, "bandwidth_within_link_goodput",
              rd_GBps <= goodput * cfg.devices * (1 + 1e-9) && wr_GBps <= goodput * cfg.devices * (1 + 1e-9),
              "loads %.2f, stores %.2f GB/s <= %u devices x %.2f GB/s (link %.2f GB/s x 64/68 B per flit) per direction",
              rd_GBps, wr_GBps, cfg.devices, goodput, link_GBps);
    sim_check(rep, "bandwidth_within_media", GBps <= cfg.media_GBps * cfg.devices * (1 + 1e-9) &&
                                                 loc_GBps <= cfg.dram_GBps * (1 + 1e-9),
              "CXL %.2f GB/s <= %u x %.2f GB/s media; local %.2f <= %.2f GB/s DRAM", GBps, cfg.devices, cfg.media_GBps,
              loc_GBps, cfg.dram_GBps);
    sim_check(rep, "interleave_spreads_evenly",
              bytes_sum == t.requests * 64 && bytes_max - bytes_min <= cfg.interleave_bytes && dev_as_predicted,
              "per-device bytes %" PRIu64 "..%" PRIu64 " (spread <= %" PRIu64 " B, one granule), sum %" PRIu64
              " = %" PRIu64 " x 64 B, each as the HDM decode of the stream predicts: %s", bytes_min, bytes_max,
              cfg.interleave_bytes, bytes_sum, t.requests, dev_as_predicted ? "yes" : "no");
    uint64_t rd_sent = 0, rd_in = 0, data_out = 0, data_in = 0, wr_sent = 0, wr_in = 0, cmp_out = 0, cmp_in = 0;
    for (unsigned i = 0; i < cfg.devices; i++) {
        const cxl_mem_dev_stats *a = &after.dev[i], *b = &before.dev[i];
        rd_sent += a->memrd_sent - b->memrd_sent;
        rd_in += a->memrd_in - b->memrd_in;
        data_out += a->memdata_out - b->memdata_out;
        data_in += a->memdata_in - b->memdata_in;
        wr_sent += a->memwr_sent - b->memwr_sent;
        wr_in += a->memwr_in - b->memwr_in;
        cmp_out += a->cmp_out - b->cmp_out;
        cmp_in += a->cmp_in - b->cmp_in;
    }
    sim_check(rep, "every_request_answered_once",
              cxl_done == t.requests && rd_sent == cxl_reads && rd_in == cxl_reads && data_out == cxl_reads &&
                  data_in == cxl_reads && wr_sent == cxl_writes && wr_in == cxl_writes && cmp_out == cxl_writes &&
                  cmp_in == cxl_writes,
              "%" PRIu64 " loads: %" PRIu64 " MemRd sent, %" PRIu64 " received, %" PRIu64 " MemData sent, %" PRIu64
              " received; %" PRIu64 " stores: %" PRIu64 " MemWr sent, %" PRIu64 " received, %" PRIu64 " Cmp sent, %" PRIu64
              " received; %" PRIu64 " of %" PRIu64 " completed", cxl_reads, rd_sent, rd_in, data_out, data_in, cxl_writes,
              wr_sent, wr_in, cmp_out, cmp_in, cxl_done, t.requests);
    cxl_mem_stats fin;
    cxl_mem_stats_get(t.s, &fin);
    sim_check(rep, "no_violations", fin.violations == 0, "%" PRIu64 " unmatched responses%s%s", fin.violations,
              fin.violations ? ": " : "", cxl_mem_first_violation(t.s));
    char why[512] = "drained: tags free, links conserve, credits back, host and device counts agree";
    unsigned f = cxl_mem_final_check(t.s, why, sizeof why);
    sim_check(rep, "quiescent_consistent", f == 0, "%s", why);
    sim_hist_free(&t.rd_lat);
    sim_hist_free(&t.wr_lat);
    cxl_mem_sys_free(t.s);
}

SIM_TEST(cxl_mem, "host loads/stores to CXL.mem Type-3 memory (interleaved devices) against local DRAM",
         mem_params, "requests=4000", mem_run)
