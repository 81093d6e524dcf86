/* h2d_copy: a cudaMemcpy / bandwidthTest-style copy between host memory and
 * a GPU over one PCIe link, built by the fabric from the host-gpu generator
 * and the server kinds (models/server): the GPU's copy engine reads pinned
 * host memory with MRd (h2d) or writes it with MWr (d2h) through full PCIe
 * ports. Bandwidth, per-hop utilisation and credit stalls are measured; the
 * checks compare them with an independent goodput model (docs/models/pcie.md,
 * restated here from the spec's numbers, never the run's). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cJSON.h"
#include "models/pcie/pcie_port.h"
#include "models/server/server.h"
#include "sim/fabric.h"
#include "sim/sim.h"

static const sim_param_def h2d_params[] = {
    SIM_PARAM_ENUM("dir", "h2d", "h2d|d2h|d2d_p2p", "h2d: the GPU reads host memory (MRd); d2h: the GPU writes it (MWr); d2d_p2p comes with the PCIe switch"),
    SIM_PARAM_INT("bytes", "4194304", "B", 1, 1 << 30, "size of the copy"),
    SIM_PARAM_INT("lat_bytes", "64", "B", 1, 65536, "size of the small copy whose time is latency_us (run on its own)"),
    SIM_PARAM_BOOL("pinned", "1", "host buffer pinned (1); pageable (0: bounce through a staging buffer) is not modelled yet"),
    SIM_PARAM_INT("gen", "5", "", 1, 6, "PCIe generation 1..6 (Gen6: Flit Mode)"),
    SIM_PARAM_INT("lanes", "16", "", 1, 16, "link width: 1, 2, 4, 8, 16"),
    SIM_PARAM_INT("gpus", "1", "", 1, 8, "GPUs copying at once (more than 1 needs the PCIe switch)"),
    SIM_PARAM_INT("mps", "256", "B", 128, 4096, "Max_Payload_Size, both ends: 128..4096, power of two"),
    SIM_PARAM_INT("mrrs", "512", "B", 128, 4096, "Max_Read_Request_Size of the GPU's copy engine: 128..4096, power of two"),
    SIM_PARAM_INT("rcb", "64", "B", 64, 128, "the host's read completion boundary: 64 or 128"),
    SIM_PARAM_INT("tags", "256", "", 1, 768, "outstanding reads of the copy engine"),
    SIM_PARAM_INT("cplh", "0", "", 0, 127, "completion header credits the GPU advertises (0 = infinite, the endpoint rule)"),
    SIM_PARAM_INT("cpld", "0", "", 0, 2047, "completion data credits (16 B) the GPU advertises (0 = infinite)"),
    SIM_PARAM_INT("ph", "127", "", 0, 127, "posted header credits the root port advertises (0 = infinite)"),
    SIM_PARAM_INT("pd", "2047", "", 0, 2047, "posted data credits (16 B) the root port advertises (0 = infinite)"),
    SIM_PARAM_INT("nph", "64", "", 0, 127, "non-posted header credits the root port advertises (0 = infinite)"),
    SIM_PARAM_DOUBLE("rx_ns", "1", "ns", 0, 1e6, "receive buffer processing per TLP, both ends"),
    SIM_PARAM_DOUBLE("dram_GBps", "307.2", "GB/s", 0.1, 1e5, "host DRAM bandwidth (DDR5-4800 x 8 channels x 8 B)"),
    SIM_PARAM_DOUBLE("dram_ns", "90", "ns", 0, 1e6, "host DRAM access latency [assumed: idle DDR5 load-to-use]"),
    SIM_PARAM_DOUBLE("rc_ns", "150", "ns", 0, 1e6, "root complex, each way between root port and memory [assumed]"),
    SIM_PARAM_DOUBLE("hbm_GBps", "3350", "GB/s", 0.1, 1e6, "GPU HBM bandwidth (H100 SXM HBM3)"),
    SIM_PARAM_DOUBLE("hbm_ns", "400", "ns", 0, 1e6, "GPU HBM access latency [assumed]"),
    SIM_PARAM_END,
};

/* ---- independent goodput model (docs/models/pcie.md; spec numbers written out) ---- */
static double ref_raw_GBps(unsigned gen, unsigned lanes)
{
    static const double gt[7] = { 0, 2.5, 5, 8, 16, 32, 64 };
    double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 1.0;
    return gt[gen] * enc * lanes / 8.0;
}
/* SKP share of a busy transmitter: 8b/10b 4 symbols / 1180; 128b/130b (and Gen6) 20 / (370 x 16). */
static double ref_skp_frac(unsigned gen) { return gen <= 2 ? 4.0 / 1180.0 : 20.0 / (370.0 * 16.0); }
/* Wire time per payload byte of data TLPs of `payload` bytes with an `hdr`-byte header:
 * Non-Flit 8 B framing per TLP; Flit Mode 236 TLP bytes per 256 B flit. */
static double ref_data_GBps(unsigned gen, unsigned lanes, double payload, double hdr, bool with_skp)
{
    double raw = ref_raw_GBps(gen, lanes);
    double eff = gen == 6 ? 236.0 / 256.0 * payload / (payload + hdr) : payload / (payload + hdr + 8.0);
    return raw * eff * (with_skp ? 1.0 - ref_skp_frac(gen) : 1.0);
}

typedef struct copy_run {
    server_copy_stats st;
    sim_time_ps start_ps, end_ps;
    uint64_t dram_bytes;
    double util[2], stall_ns[2], hop_GBps[2];
    char hop[2][96];
    int cons;
    char why[512];
    bool finished;
} copy_run;

/* One copy on a fresh fabric: runs until the data is in memory and both ports drained. */
static void run_copy(sim_kernel *k, const topo *t, server_cfg *sc, sim_trace *tr, uint64_t seed, copy_run *r)
{
    memset(r, 0, sizeof *r);
    char err[512];
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = tr, .seed = seed, .kind_cfg = { { "host", sc }, { "gpu", sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("h2d_copy: %s", err);
    uint32_t hn = (uint32_t)topo_node_find(t, "host0"), gn = (uint32_t)topo_node_find(t, "gpu0");
    server_host *h = sim_fabric_component(f, hn);
    server_gpu *g = sim_fabric_component(f, gn);
    pcie_port *hp = server_host_port(h, 0), *gp = server_gpu_port(g);
    /* a watchdog: no copy at Gen1 x1 takes longer than 4 ns per byte + 1 ms */
    sim_time_ps limit = (sim_time_ps)sc->bytes * 4000 + 1000000000ull, step = 1000000;
    for (;;) {
        sim_time_ps before = sim_now(k);
        sim_run(k, before + step);
        server_copy_stats st;
        if (sc->dir == SERVER_H2D) server_gpu_stats(g, &st);
        else server_host_stats(h, &st);
        bool done = st.done_ps && sim_now(k) >= st.done_ps;
        bool quiet = !pcie_port_replay_occupancy(hp) && !pcie_port_replay_occupancy(gp) && !pcie_port_rx_buffered(hp) &&
                     !pcie_port_rx_buffered(gp);
        if (done && quiet) { r->finished = true; r->st = st; break; }
        if (sim_now(k) == before || sim_now(k) >= limit) { r->st = st; break; }
    }
    server_copy_stats hs;
    server_host_stats(h, &hs);
    r->dram_bytes = hs.dram_bytes;
    r->start_ps = server_gpu_launch_ps(g);   /* the copy is launched once the link is up */
    r->end_ps = r->st.done_ps;
    double copy_ns = (double)(r->end_ps - r->start_ps) / 1000.0;
    for (unsigned d = 0; d < 2; d++) {
        sim_link *l = sim_fabric_link(f, 0, d);   /* dir 0: a->b = host0 -> gpu0 */
        pcie_port *sender = d == 0 ? hp : gp;
        snprintf(r->hop[d], sizeof r->hop[d], "%s", d == 0 ? "host0.rp0->gpu0.pcie0" : "gpu0.pcie0->host0.rp0");
        double GBps = t->links[0].GBps;
        r->util[d] = copy_ns > 0 ? (double)sim_link_window_bytes(l) / GBps / copy_ns : 0;
        r->hop_GBps[d] = GBps;
        r->stall_ns[d] = (double)pcie_port_stall_ps(sender) / 1000.0;
    }
    r->cons = sim_fabric_check(f, r->finished, r->why, sizeof r->why);
    sim_fabric_free(f);
}

static void h2d_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    int dir = sim_param_enum(p, "dir");
    if (dir == 2) sim_input_error("h2d_copy: dir=d2d_p2p: peer-to-peer between GPUs comes with the PCIe switch; allowed now: h2d, d2h");
    if (!sim_param_bool(p, "pinned"))
        sim_input_error("h2d_copy: pinned=0: pageable copies (a CPU memcpy through a pinned staging buffer) are not modelled yet; allowed: pinned=1");
    if (sim_param_int(p, "gpus") != 1)
        sim_input_error("h2d_copy: gpus=%" PRId64 ": several GPUs share uplinks through the PCIe switch, which is not built yet; allowed: 1",
                        sim_param_int(p, "gpus"));
    unsigned gen = (unsigned)sim_param_int(p, "gen"), lanes = (unsigned)sim_param_int(p, "lanes");
    server_cfg sc = SERVER_CFG_DEFAULT;
    sc.dir = dir == 0 ? SERVER_H2D : SERVER_D2H;
    sc.bytes = (uint64_t)sim_param_int(p, "bytes");
    uint64_t lat_bytes = (uint64_t)sim_param_int(p, "lat_bytes");
    sc.mps = (unsigned)sim_param_int(p, "mps");
    sc.rx_ns = sim_param_double(p, "rx_ns");
    sc.dram_GBps = sim_param_double(p, "dram_GBps");
    sc.dram_ns = sim_param_double(p, "dram_ns");
    sc.rc_ns = sim_param_double(p, "rc_ns");
    sc.hbm_GBps = sim_param_double(p, "hbm_GBps");
    sc.hbm_ns = sim_param_double(p, "hbm_ns");
    sc.host_adv[0] = (uint32_t)sim_param_int(p, "ph");
    sc.host_adv[1] = (uint32_t)sim_param_int(p, "pd");
    if (sc.dir == SERVER_H2D) {
        sc.mrrs = (unsigned)sim_param_int(p, "mrrs");
        sc.rcb = (unsigned)sim_param_int(p, "rcb");
        sc.tags = (unsigned)sim_param_int(p, "tags");
        sc.gpu_adv[4] = (uint32_t)sim_param_int(p, "cplh");
        sc.gpu_adv[5] = (uint32_t)sim_param_int(p, "cpld");
        sc.host_adv[2] = (uint32_t)sim_param_int(p, "nph");
    } else {
        static const char *const rd[] = { "mrrs", "tags", "cplh", "cpld", "nph", "rcb" };
        for (unsigned i = 0; i < sizeof rd / sizeof *rd; i++)
            sim_param_not_applicable(p, rd[i], "dir=d2h writes host memory with posted MWr: no reads, tags or completions");
    }
    sim_param_not_applicable(p, "seed", "no error is injected: nothing is random");
    char spec[64];
    snprintf(spec, sizeof spec, "host-gpu:gen=%u,lanes=%u", gen, lanes);
    server_register_kinds();
    char err[1024];
    /* host-gpu chooses its link's preset from gen and lanes: the default preset is unused */
    topo *t = topo_from_string(spec, "pcie-gen5-x16", err, sizeof err);
    if (!t) sim_input_error("h2d_copy: %s", err);
    sim_test_configured(c);

    copy_run big, small;
    run_copy(c->k, t, &sc, c->trace, c->seed, &big);
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);
    server_cfg lc = sc;
    lc.bytes = lat_bytes;
    sim_kernel *lk = sim_kernel_new();
    run_copy(lk, t, &lc, NULL, c->seed, &small);
    sim_kernel_free(lk);

    double copy_ns = (double)(big.end_ps - big.start_ps) / 1000.0;
    double GBps = copy_ns > 0 ? (double)big.st.bytes_received / copy_ns : 0;
    double steady = big.st.last_data_ps > big.st.first_data_ps
                        ? (double)(big.st.bytes_received - big.st.first_data_bytes) * 1000.0 / (double)(big.st.last_data_ps - big.st.first_data_ps)
                        : 0;
    double latency_us = (double)(small.end_ps - small.start_ps) / 1e6;
    unsigned data_dir = sc.dir == SERVER_H2D ? 0 : 1;   /* the hop that carries the data */
    unsigned worst = 0;
    double worst_score = -1;
    cJSON *util = cJSON_CreateObject(), *stall = cJSON_CreateObject();
    for (unsigned d = 0; d < 2; d++) {
        cJSON_AddNumberToObject(util, big.hop[d], big.util[d]);
        cJSON_AddNumberToObject(stall, big.hop[d], big.stall_ns[d]);
        double score = fmax(big.util[d], copy_ns > 0 ? big.stall_ns[d] / copy_ns : 0);
        if (score > worst_score) worst_score = score, worst = d;
    }
    sim_report *rep = c->report;
    sim_report_metric(rep, "GBps", GBps);
    sim_report_metric(rep, "steady_GBps", steady);
    sim_report_metric(rep, "latency_us", latency_us);
    sim_report_metric(rep, "copy_us", copy_ns / 1000.0);
    sim_report_metric_json(rep, "link_util", util);
    sim_report_metric_json(rep, "credit_stall_ns", stall);
    sim_report_metric_json(rep, "bottleneck", cJSON_CreateString(big.hop[worst]));
    sim_report_metric(rep, "host_dram_bytes", (double)big.dram_bytes);
    sim_report_metric(rep, "tlps", (double)big.st.tlps_received);
    sim_report_metric(rep, "link_raw_GBps", big.hop_GBps[0]);

    sim_check(rep, "copy_complete", big.finished && big.st.bytes_received == sc.bytes && small.finished,
              "%" PRIu64 " of %" PRIu64 " bytes in %s memory, ports drained: %s; small copy: %s", big.st.bytes_received, sc.bytes,
              sc.dir == SERVER_H2D ? "GPU" : "host", big.finished ? "yes" : "no", small.finished ? "done" : "not done");
    sim_check(rep, "conservation", big.cons == 0 && small.cons == 0, "every link and port (TLPs, credits, order, tags): %s",
              big.cons ? big.why : small.cons ? small.why : "conserved");
    sim_check(rep, "host_dram_touched_once", big.dram_bytes == sc.bytes, "host DRAM moved %" PRIu64 " bytes for a %" PRIu64 "-byte copy",
              big.dram_bytes, sc.bytes);
    /* the data TLPs: CplD (3DW header, up to MPS) for h2d, MWr (4DW, 64-bit address) for d2h */
    double hdr = sc.dir == SERVER_H2D ? 12 : 16;
    double bound = ref_data_GBps(gen, lanes, sc.mps, hdr, false);
    sim_check(rep, "not_above_narrowest_hop", GBps <= bound && steady <= bound,
              "copy %.3f GB/s, steady %.3f GB/s vs the narrowest hop's goodput bound %.3f GB/s (MPS %u data TLPs, no DLLP, no SKP)", GBps,
              steady, bound, sc.mps);
    /* The band: link-limited goodput (data TLPs + SKP), unless the reads' window
     * (tags x MRRS over the request round trip) or the completion credits limit it first. */
    double pred = ref_data_GBps(gen, lanes, sc.mps, hdr, true), lo = 0.97, hi = 1.003;
    const char *regime = "link-limited";
    if (sc.dir == SERVER_H2D) {
        double raw = ref_raw_GBps(gen, lanes), wire_ns = t->links[0].latency_ns;
        double rtt_ns = 24.0 / raw + 2 * wire_ns + 2 * sc.rx_ns + 2 * sc.rc_ns + sc.dram_ns + sc.mrrs / sc.dram_GBps +
                        sc.mrrs / ref_data_GBps(gen, lanes, sc.mps, hdr, false);
        double win_GBps = (double)sc.tags * sc.mrrs / rtt_ns;
        if (win_GBps < pred) pred = win_GBps, lo = 0.85, hi = 1.15, regime = "tag-limited: tags x MRRS / request round trip";
        /* the GPU's completion credits: a window of CplDs per credit loop (docs/models/pcie.md,
         * "Flow control"): its wire time, the wire both ways, the receive buffer, the UpdateFC,
         * and the coalescing wait of the first CplD of each group of g the receiver returns at once */
        double cpl_window = 1e30;
        unsigned g = 1u << 30;
        for (unsigned i = 0; i < 2; i++) {
            uint64_t init = sc.gpu_adv[4 + i];   /* CPLH (need 1 per TLP), CPLD (MPS / 16 per TLP) */
            if (!init) continue;
            uint64_t need = i ? sc.mps / 16 : 1, step = init / 8 > need ? init / 8 : need;
            cpl_window = fmin(cpl_window, (double)(init / need) * sc.mps);
            unsigned gi = (unsigned)((step + need - 1) / need);
            if (gi < g) g = gi;
        }
        if (cpl_window < 1e30) {
            double tlp_ns = sc.mps / ref_data_GBps(gen, lanes, sc.mps, hdr, false);
            double sym_ns = (gen <= 2 ? 10.0 : 8.0) / (gen == 1 ? 2.5 : gen == 2 ? 5 : gen == 3 ? 8 : gen == 4 ? 16 : gen == 5 ? 32 : 64);
            double ack_ns = pcie_ack_limit_symbols(gen, lanes, sc.mps) * sym_ns;
            double fc_ns = gen == 6 ? 256.0 / raw : 8.0 / raw;
            double coalesce = fmin((double)(g - 1) * tlp_ns, ack_ns);
            double loop_ns = tlp_ns + 2 * wire_ns + sc.rx_ns + fc_ns + coalesce;
            double cpl_GBps = cpl_window / loop_ns;
            if (cpl_GBps < pred) pred = cpl_GBps, lo = 0.9, hi = 1.1, regime = "completion-credit-limited: window / credit loop";
        }
    }
    bool big_enough = sc.bytes >= 64u * sc.mps;
    if (big_enough)
        sim_check(rep, "goodput_in_predicted_band", steady >= lo * pred && steady <= hi * pred,
                  "steady %.3f GB/s vs %.3f GB/s predicted (%s; band %.3f..%.3f)", steady, pred, regime, lo, hi);
    if (big_enough && !strcmp(regime, "link-limited"))
        sim_check(rep, "bottleneck_is_data_hop", worst == data_dir, "bottleneck %s (util %.3f, stall %.0f ns); the data travels %s",
                  big.hop[worst], big.util[worst], big.stall_ns[worst], big.hop[data_dir]);
    /* h2d: request up and data down (two wires, the root complex both ways), DRAM, then HBM;
     * d2h: HBM, then the data up (one wire, the root complex once), DRAM */
    double wire_ns = t->links[0].latency_ns;
    double min_lat_us = (sc.dir == SERVER_H2D ? 2 * wire_ns + 2 * sc.rc_ns : wire_ns + sc.rc_ns) + sc.dram_ns + sc.hbm_ns;
    min_lat_us /= 1000.0;
    sim_check(rep, "latency_above_its_parts", latency_us >= min_lat_us && latency_us < 100 * min_lat_us + 10,
              "%" PRIu64 "-byte copy %.3f us vs the sum of wire, root complex and memory latencies %.3f us", lat_bytes, latency_us, min_lat_us);
    if (!c->quiet)
        fprintf(stderr, "h2d_copy: %s %" PRIu64 " B Gen%u x%u: %.2f GB/s (steady %.2f), bottleneck %s\n", sc.dir == SERVER_H2D ? "h2d" : "d2h",
                sc.bytes, gen, lanes, GBps, steady, big.hop[worst]);
    topo_free(t);
}

SIM_TEST(h2d_copy, "host<->GPU copy over PCIe (bandwidthTest-style): MRd/MWr copy engine, host DRAM, per-hop utilisation and stalls",
         h2d_params, "bytes=262144", h2d_run)
