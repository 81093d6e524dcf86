/* h2d_copy: cudaMemcpy / bandwidthTest-style copies between host memory and
 * GPUs, or between two GPUs peer-to-peer, built by the fabric from the
 * host-gpu generator (one GPU, one link) or the server generator (GPUs under
 * PCIe switches) and the server kinds (models/server): each copying GPU's
 * engine reads pinned host memory with MRd (h2d) or writes it with MWr
 * (d2h), or moves a peer's HBM through its BAR (d2d_p2p), through full PCIe
 * ports on every hop. Bandwidth, per-hop utilisation and credit stalls are
 * measured; the checks compare them with an independent goodput model
 * (docs/models/pcie.md, restated here from the spec's numbers, never the run's). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cJSON.h"
#include "models/pcie/pcie_port.h"
#include "models/server/server.h"
#include "sim/fabric.h"
#include "sim/sim.h"
#include "tb/server_common.h"

static const sim_param_def h2d_params[] = {
    SIM_PARAM_ENUM("dir", "h2d", "h2d|d2h|d2d_p2p",
                   "h2d: the GPU reads host memory (MRd); d2h: the GPU writes it (MWr); d2d_p2p: gpu0 to gpu1 under one PCIe switch"),
    SIM_PARAM_ENUM("p2p", "write", "write|read", "d2d_p2p: gpu0 writes gpu1's BAR (MWr), or gpu1 reads gpu0's (MRd, CplD from gpu0's HBM)"),
    SIM_PARAM_INT("bytes", "4194304", "B", 1, 1 << 30, "size of the copy"),
    SIM_PARAM_INT("lat_bytes", "64", "B", 1, 65536, "size of the small copy whose time is latency_us (run on its own)"),
    SIM_PARAM_BOOL("pinned", "1", "host buffer pinned (1), or pageable (0, h2d only): the CPU copies each chunk into a pinned staging buffer first"),
    SIM_PARAM_INT("staging_bytes", "2097152", "B", 4096, 1 << 30, "pinned=0: one staging buffer (two, double-buffered) [assumed: CUDA's size is not published]"),
    SIM_PARAM_DOUBLE("memcpy_GBps", "12", "GB/s", 0.1, 1e4, "pinned=0: the CPU's single-thread memcpy [assumed: ~10-20 GB/s on current servers]"),
    SIM_PARAM_INT("gen", "5", "", 1, 6, "PCIe generation 1..6 (Gen6: Flit Mode)"),
    SIM_PARAM_INT("lanes", "16", "", 1, 16, "link width: 1, 2, 4, 8, 16"),
    SIM_PARAM_INT("gpus", "1", "", 1, 8, "GPUs copying at once (gpu0..): more than 1 run on server:gpus=8 and share switch uplinks"),
    SIM_PARAM_INT("switches", "4", "", 1, 8, "PCIe switches of the server topology (gpus>1 or d2d_p2p): 1, 2, 4 or 8, 8 GPUs spread evenly"),
    SIM_PARAM_DOUBLE("switch_ns", "120", "ns", 0, 1e6, "PCIe switch port to port, store-and-forward (Switchtec/PEX: 85-150 ns)"),
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

#define MAX_COPIES 8

typedef struct copy_run {
    server_copy_stats st;              /* the receivers' together (h2d: the GPUs; d2h: the host; p2p: the peer) */
    server_copy_stats gpu_st[MAX_COPIES];   /* h2d: each copier's */
    sim_time_ps start_ps, end_ps;
    uint64_t dram_bytes, host_tlps, p2p_tlps;
    srv_hops hops;
    int cons;
    char why[512];
    bool finished;
} copy_run;

/* A copy's setup: the topology, who copies, where the data goes. */
typedef struct copy_plan {
    const topo *t;
    unsigned n;                        /* copying GPUs */
    uint32_t copier[MAX_COPIES], src[MAX_COPIES], dst[MAX_COPIES];   /* node ids: data from src to dst */
    enum server_copy_dir dir;
} copy_plan;

static void sum_stats(server_copy_stats *a, const server_copy_stats *b)
{
    if (!b->tlps_received) return;
    if (!a->tlps_received || b->first_data_ps < a->first_data_ps) a->first_data_ps = b->first_data_ps, a->first_data_bytes = b->first_data_bytes;
    if (b->last_data_ps > a->last_data_ps) a->last_data_ps = b->last_data_ps;
    if (b->done_ps > a->done_ps) a->done_ps = b->done_ps;
    a->bytes_received += b->bytes_received;
    a->tlps_received += b->tlps_received;
    a->addr_errors += b->addr_errors;
    a->streams_done += b->streams_done;
}

/* One copy on a fresh fabric: runs until the data is in memory and every port drained. */
static void run_copy(sim_kernel *k, const copy_plan *pl, server_cfg *sc, sim_trace *tr, uint64_t seed, copy_run *r)
{
    memset(r, 0, sizeof *r);
    const topo *t = pl->t;
    char err[512];
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = tr, .seed = seed,
                          .kind_cfg = { { "host", sc }, { "gpu", sc }, { "pcie_switch", sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("h2d_copy: %s", err);
    uint32_t hn = (uint32_t)topo_node_find(t, "host0");
    server_host *h = sim_fabric_component(f, hn);
    /* a watchdog: no copy at Gen1 x1 takes longer than 4 ns per byte + 1 ms */
    sim_time_ps limit = (sim_time_ps)sc->bytes * pl->n * 4000 + 1000000000ull, step = 1000000;
    for (;;) {
        sim_time_ps before = sim_now(k);
        sim_run(k, before + step);
        memset(&r->st, 0, sizeof r->st);
        if (pl->dir == SERVER_D2H) server_host_stats(h, &r->st);
        for (unsigned i = 0; i < pl->n && pl->dir != SERVER_D2H; i++) {
            server_copy_stats st;
            server_gpu_stats(sim_fabric_component(f, pl->dst[i]), &st);
            r->gpu_st[i] = st;
            sum_stats(&r->st, &st);
        }
        bool done = r->st.streams_done == pl->n && sim_now(k) >= r->st.done_ps;
        if (done && srv_ports_quiet(f, t)) { r->finished = true; break; }
        if (sim_now(k) == before || sim_now(k) >= limit) break;
    }
    srv_count_host_and_p2p(f, t, hn, &r->dram_bytes, &r->host_tlps, &r->p2p_tlps);
    r->start_ps = SIM_TIME_MAX;   /* the copies are launched once their links are up */
    for (unsigned i = 0; i < pl->n; i++) {
        sim_time_ps l = server_gpu_launch_ps(sim_fabric_component(f, pl->copier[i]));
        if (l < r->start_ps) r->start_ps = l;
    }
    if (sc->pageable && server_host_launch_ps(h) < r->start_ps) r->start_ps = server_host_launch_ps(h);   /* the CPU's first memcpy */
    r->end_ps = r->st.done_ps;
    double copy_ns = (double)(r->end_ps - r->start_ps) / 1000.0;
    for (unsigned i = 0; i < pl->n; i++) srv_add_path(&r->hops, t, pl->src[i], pl->dst[i]);
    srv_measure_hops(&r->hops, f, t, copy_ns);
    /* a pageable copy's CPU memcpy (one thread per copy): busy bytes / memcpy_GBps of the copy's time */
    if (sc->pageable) srv_add_resource(&r->hops, "host0.memcpy", copy_ns > 0 ? (double)sc->bytes / sc->memcpy_GBps / copy_ns : 0);
    r->cons = sim_fabric_check(f, r->finished, r->why, sizeof r->why);
    sim_fabric_free(f);
}

static void h2d_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    int dir = sim_param_enum(p, "dir");
    bool p2p = dir == 2;
    bool pageable = !sim_param_bool(p, "pinned");
    if (pageable && dir != 0)
        sim_input_error("h2d_copy: pinned=0 dir=%s: pageable copies are modelled host to device only; allowed: pinned=0 with dir=h2d",
                        dir == 1 ? "d2h" : "d2d_p2p");
    unsigned gpus = (unsigned)sim_param_int(p, "gpus"), nsw = (unsigned)sim_param_int(p, "switches");
    if (p2p && gpus != 1)
        sim_input_error("h2d_copy: dir=d2d_p2p gpus=%u: the peer-to-peer copy is one pair (gpu0 to gpu1); allowed: gpus=1", gpus);
    bool server_topo = gpus > 1 || p2p;
    if (server_topo && 8 % nsw) sim_input_error("h2d_copy: switches=%u: 8 GPUs spread evenly; allowed: 1, 2, 4, 8", nsw);
    if (p2p && nsw > 4) sim_input_error("h2d_copy: switches=%u: d2d_p2p needs gpu0 and gpu1 under one switch; allowed: 1, 2, 4", nsw);
    if (!server_topo) {
        sim_param_not_applicable(p, "switches", "one GPU on one link (host-gpu): no PCIe switch");
        sim_param_not_applicable(p, "switch_ns", "one GPU on one link (host-gpu): no PCIe switch");
    }
    if (!p2p) sim_param_not_applicable(p, "p2p", "dir=%s is no peer-to-peer copy", dir ? "d2h" : "h2d");
    bool p2p_rd = p2p && sim_param_enum(p, "p2p") == 1;
    unsigned gen = (unsigned)sim_param_int(p, "gen"), lanes = (unsigned)sim_param_int(p, "lanes");
    server_cfg sc = SERVER_CFG_DEFAULT;
    sc.dir = dir == 0 ? SERVER_H2D : dir == 1 ? SERVER_D2H : p2p_rd ? SERVER_P2P_RD : SERVER_P2P_WR;
    bool reads = sc.dir == SERVER_H2D || sc.dir == SERVER_P2P_RD;
    sc.bytes = (uint64_t)sim_param_int(p, "bytes");
    if (pageable) {
        sc.pageable = true;
        sc.chunk_bytes = (uint64_t)sim_param_int(p, "staging_bytes");
        sc.memcpy_GBps = sim_param_double(p, "memcpy_GBps");
    } else {
        sim_param_not_applicable(p, "staging_bytes", "pinned=1: the GPU reads the pinned buffer itself, nothing is staged");
        sim_param_not_applicable(p, "memcpy_GBps", "pinned=1: no CPU copy");
    }
    uint64_t lat_bytes = (uint64_t)sim_param_int(p, "lat_bytes");
    sc.mps = (unsigned)sim_param_int(p, "mps");
    sc.rx_ns = sim_param_double(p, "rx_ns");
    sc.dram_GBps = sim_param_double(p, "dram_GBps");
    sc.dram_ns = sim_param_double(p, "dram_ns");
    sc.rc_ns = sim_param_double(p, "rc_ns");
    sc.hbm_GBps = sim_param_double(p, "hbm_GBps");
    sc.hbm_ns = sim_param_double(p, "hbm_ns");
    if (server_topo) sc.switch_ns = sim_param_double(p, "switch_ns");
    if (p2p) {
        static const char *const hp[] = { "ph", "pd", "nph", "dram_GBps", "dram_ns", "rc_ns" };
        for (unsigned i = 0; i < sizeof hp / sizeof *hp; i++)
            sim_param_not_applicable(p, hp[i], "dir=d2d_p2p turns at the PCIe switch: nothing reaches the host");
    } else {
        sc.host_adv[0] = (uint32_t)sim_param_int(p, "ph");
        sc.host_adv[1] = (uint32_t)sim_param_int(p, "pd");
    }
    if (reads) {
        sc.mrrs = (unsigned)sim_param_int(p, "mrrs");
        sc.rcb = (unsigned)sim_param_int(p, "rcb");
        sc.tags = (unsigned)sim_param_int(p, "tags");
        sc.gpu_adv[4] = (uint32_t)sim_param_int(p, "cplh");
        sc.gpu_adv[5] = (uint32_t)sim_param_int(p, "cpld");
        if (!p2p) sc.host_adv[2] = (uint32_t)sim_param_int(p, "nph");
    } else {
        static const char *const rd[] = { "mrrs", "tags", "cplh", "cpld", "nph", "rcb" };
        for (unsigned i = 0; i < sizeof rd / sizeof *rd; i++)
            if (!p2p || strcmp(rd[i], "nph"))
                sim_param_not_applicable(p, rd[i], "the copy writes with posted MWr: no reads, tags or completions");
    }
    sim_param_not_applicable(p, "seed", "no error is injected: nothing is random");
    char spec[96];
    if (server_topo) snprintf(spec, sizeof spec, "server:gpus=8,nics=0,gen=%u,switches=%u,lanes=%u", gen, nsw, lanes);
    else snprintf(spec, sizeof spec, "host-gpu:gen=%u,lanes=%u", gen, lanes);
    server_register_kinds();
    char err[1024];
    /* the generators choose their links' preset from gen and lanes: the default preset is unused */
    topo *t = topo_from_string(spec, "pcie-gen5-x16", err, sizeof err);
    if (!t) sim_input_error("h2d_copy: %s", err);
    if (t->n_nodes > SRV_PATH_NODES) sim_fatal("h2d_copy: %u nodes", t->n_nodes);
    copy_plan pl = { .t = t, .n = gpus, .dir = sc.dir };
    static const char *const names[MAX_COPIES + 1] = { "gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7", NULL };
    const char *copiers[2] = { p2p_rd ? "gpu1" : "gpu0", NULL };
    const char *only[MAX_COPIES + 1];
    for (unsigned i = 0; i < gpus; i++) only[i] = names[i];
    only[gpus] = NULL;
    sc.copiers = p2p ? copiers : only;
    sc.peer = p2p ? (p2p_rd ? "gpu0" : "gpu1") : NULL;
    uint32_t host = (uint32_t)topo_node_find(t, "host0"), g0 = (uint32_t)topo_node_find(t, "gpu0");
    for (unsigned i = 0; i < gpus; i++) {
        uint32_t g = (uint32_t)topo_node_find(t, names[i]);
        pl.copier[i] = p2p ? (uint32_t)topo_node_find(t, copiers[0]) : g;
        pl.src[i] = p2p ? g0 : sc.dir == SERVER_H2D ? host : g;
        pl.dst[i] = p2p ? (uint32_t)topo_node_find(t, "gpu1") : sc.dir == SERVER_H2D ? g : host;
    }
    sim_test_configured(c);

    copy_run big, small;
    run_copy(c->k, &pl, &sc, c->trace, c->seed, &big);
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);
    server_cfg lc = sc;
    lc.bytes = lat_bytes;
    sim_kernel *lk = sim_kernel_new();
    run_copy(lk, &pl, &lc, NULL, c->seed, &small);
    sim_kernel_free(lk);

    uint64_t total = sc.bytes * gpus;
    double copy_ns = (double)(big.end_ps - big.start_ps) / 1000.0;
    double GBps = copy_ns > 0 ? (double)big.st.bytes_received / copy_ns : 0;
    double steady = big.st.last_data_ps > big.st.first_data_ps
                        ? (double)(big.st.bytes_received - big.st.first_data_bytes) * 1000.0 / (double)(big.st.last_data_ps - big.st.first_data_ps)
                        : 0;
    double latency_us = (double)(small.end_ps - small.start_ps) / 1e6;
    sim_report *rep = c->report;
    sim_report_metric(rep, "GBps", GBps);
    sim_report_metric(rep, "steady_GBps", steady);
    sim_report_metric(rep, "latency_us", latency_us);
    sim_report_metric(rep, "copy_us", copy_ns / 1000.0);
    unsigned worst = srv_report_hops(rep, &big.hops, copy_ns);
    sim_report_metric(rep, "host_dram_bytes", (double)big.dram_bytes);
    sim_report_metric(rep, "tlps", (double)big.st.tlps_received);
    sim_report_metric(rep, "link_raw_GBps", t->links[0].GBps);
    if (server_topo) sim_report_metric(rep, "p2p_tlps", (double)big.p2p_tlps);

    sim_check(rep, "copy_complete", big.finished && big.st.bytes_received == total && small.finished,
              "%" PRIu64 " of %" PRIu64 " bytes in %s memory, ports drained: %s; small copy: %s", big.st.bytes_received, total,
              sc.dir == SERVER_D2H ? "host" : "GPU", big.finished ? "yes" : "no", small.finished ? "done" : "not done");
    sim_check(rep, "conservation", big.cons == 0 && small.cons == 0, "every link and port (TLPs, credits, order, tags): %s",
              big.cons ? big.why : small.cons ? small.why : "conserved");
    if (p2p)
        sim_check(rep, "p2p_no_host_dram", big.dram_bytes == 0 && big.host_tlps == 0 && small.dram_bytes == 0 && big.p2p_tlps > 0,
                  "host DRAM moved %" PRIu64 " bytes, the root ports received %" PRIu64 " TLPs; %" PRIu64 " TLPs turned at the switch",
                  big.dram_bytes, big.host_tlps, big.p2p_tlps);
    else if (!pageable)
        sim_check(rep, "host_dram_touched_once", big.dram_bytes == total, "host DRAM moved %" PRIu64 " bytes for %" PRIu64 " bytes copied",
                  big.dram_bytes, total);
    else   /* the memcpy reads the pageable buffer and writes staging, then the DMA reads staging */
        sim_check(rep, "host_dram_memcpy_and_dma", big.dram_bytes == 3 * total, "host DRAM moved %" PRIu64 " bytes for %" PRIu64 " bytes copied (3x expected)",
                  big.dram_bytes, total);
    /* the data TLPs: CplD (3DW header, up to MPS) for reads, MWr (4DW, 64-bit address) for writes */
    double hdr = reads ? 12 : 16;
    double bound = srv_ref_data_GBps(gen, lanes, sc.mps, hdr, false);
    /* the shared hops: each switch uplink carries its GPUs' copies, so the
     * aggregate is bounded by one link's goodput per switch in use */
    unsigned per = server_topo ? 8 / nsw : 1, used = p2p ? 1 : (gpus + per - 1) / per;
    bool each_ok = true;
    for (unsigned i = 0; i < gpus && sc.dir == SERVER_H2D; i++) {
        const server_copy_stats *g = &big.gpu_st[i];
        double ns = (double)(g->done_ps - big.start_ps) / 1000.0;
        if (ns > 0 && (double)g->bytes_received / ns > bound) each_ok = false;
    }
    sim_check(rep, "not_above_narrowest_hop", GBps <= used * bound && steady <= used * bound && each_ok,
              "copy %.3f GB/s, steady %.3f GB/s vs %u shared hop(s) x %.3f GB/s goodput bound (MPS %u data TLPs, no DLLP, no SKP)%s", GBps,
              steady, used, bound, sc.mps, each_ok ? "" : "; a GPU alone above one link");
    /* The band: link-limited goodput (data TLPs + SKP) on each shared hop, unless
     * the reads' window (tags x MRRS over the request round trip) or the
     * completion credits limit each copy first. */
    unsigned hops = srv_path_hops(t, pl.src[0], pl.dst[0]);
    double link = srv_ref_data_GBps(gen, lanes, sc.mps, hdr, true), pred = link, lo = 0.97, hi = 1.003;
    const char *regime = "link-limited";
    double wire_ns = t->links[0].latency_ns, sw_ns = (hops - 1) * sc.switch_ns;
    if (reads) {
        double raw = srv_ref_raw_GBps(gen, lanes);
        double mem_ns = p2p ? sc.hbm_ns + sc.mrrs / sc.hbm_GBps : 2 * sc.rc_ns + sc.dram_ns + sc.mrrs / sc.dram_GBps;
        double rtt_ns = srv_read_rtt_ns(gen, lanes, sc.mps, sc.mrrs, hops, wire_ns, sc.rx_ns, sc.switch_ns, mem_ns);
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
            double tlp_ns = sc.mps / srv_ref_data_GBps(gen, lanes, sc.mps, hdr, false);
            double sym_ns = (gen <= 2 ? 10.0 : 8.0) / (gen == 1 ? 2.5 : gen == 2 ? 5 : gen == 3 ? 8 : gen == 4 ? 16 : gen == 5 ? 32 : 64);
            double ack_ns = pcie_ack_limit_symbols(gen, lanes, sc.mps) * sym_ns;
            double fc_ns = gen == 6 ? 256.0 / raw : 8.0 / raw;
            double coalesce = fmin((double)(g - 1) * tlp_ns, ack_ns);
            double loop_ns = tlp_ns + 2 * wire_ns + sc.rx_ns + fc_ns + coalesce;
            double cpl_GBps = cpl_window / loop_ns;
            if (cpl_GBps < pred) pred = cpl_GBps, lo = 0.9, hi = 1.1, regime = "completion-credit-limited: window / credit loop";
        }
    }
    /* per shared hop: its copies' windows together, at most the link */
    double agg_pred = 0;
    for (unsigned s = 0; s < used; s++) {
        unsigned k = gpus - s * per < per ? gpus - s * per : per;
        agg_pred += fmin(p2p ? pred : k * pred, link);
    }
    if (agg_pred < used * pred) lo = fmin(lo, 0.95);   /* copies sharing a hop: their TLPs interleave in the switch */
    bool big_enough = sc.bytes >= 64u * sc.mps;
    if (pageable && big_enough) {
        /* double-buffered staging: the first chunk's memcpy, then the slower of memcpy and DMA for the
         * rest, then the last chunk's DMA; or DRAM, which moves 3 B per byte copied (memcpy read and
         * write, DMA read), whichever takes longer */
        double m = sc.memcpy_GBps, dma = agg_pred / gpus;
        double chunk = (double)(sc.chunk_bytes < sc.bytes ? sc.chunk_bytes : sc.bytes), b = (double)sc.bytes;
        double rtt_ns = srv_read_rtt_ns(gen, lanes, sc.mps, sc.mrrs, hops, wire_ns, sc.rx_ns, sc.switch_ns, 2 * sc.rc_ns + sc.dram_ns);
        double t_ns = chunk / m + (b - chunk) / fmin(m, dma) + chunk / dma + sc.proxy_ns + rtt_ns + sc.hbm_ns;
        double dram_ns = 3.0 * (double)total / sc.dram_GBps + rtt_ns + sc.hbm_ns;
        bool dram_bound = dram_ns > t_ns;
        double pred_GBps = (double)total / fmax(t_ns, dram_ns);
        sim_check(rep, "pageable_GBps_in_predicted_band", GBps >= 0.85 * pred_GBps && GBps <= 1.15 * pred_GBps,
                  "%.3f GB/s vs %.3f GB/s predicted (%s-limited: memcpy %.2f GB/s, DMA %.2f GB/s per copy, %.0f-byte chunks; band 0.85..1.15)", GBps,
                  pred_GBps, dram_bound ? "DRAM" : m < dma ? "memcpy" : "DMA", m, dma, chunk);
    } else if (big_enough)
        sim_check(rep, "goodput_in_predicted_band", steady >= lo * agg_pred && steady <= hi * agg_pred,
                  "steady %.3f GB/s vs %.3f GB/s predicted (%s, %u shared hop(s); band %.3f..%.3f)", steady, agg_pred, regime, used, lo, hi);
    if (big_enough && !pageable && !strcmp(regime, "link-limited"))
        sim_check(rep, "bottleneck_is_data_hop", big.hops.h[worst].data, "bottleneck %s (util %.3f, stall %.0f ns) %s the data's path",
                  big.hops.h[worst].name, big.hops.h[worst].util, big.hops.h[worst].stall_ns, big.hops.h[worst].data ? "is on" : "is not on");
    /* reads: request there and data back (two wires a hop, the switches both ways), the memory at
     * the far end, then HBM; writes: HBM, then the data once over each hop, then the far memory */
    double far_ns = p2p ? sc.hbm_ns : (reads ? 2 * sc.rc_ns : sc.rc_ns) + sc.dram_ns;
    double min_lat_us = (reads ? 2 * (hops * wire_ns + sw_ns) : hops * wire_ns + sw_ns) + far_ns + sc.hbm_ns;
    min_lat_us /= 1000.0;
    sim_check(rep, "latency_above_its_parts", latency_us >= min_lat_us && latency_us < 100 * min_lat_us + 10,
              "%" PRIu64 "-byte copy %.3f us vs the sum of wire, switch, root complex and memory latencies %.3f us", lat_bytes, latency_us,
              min_lat_us);
    if (!c->quiet)
        fprintf(stderr, "h2d_copy: %s %" PRIu64 " B x %u Gen%u x%u: %.2f GB/s (steady %.2f), bottleneck %s\n",
                p2p ? (p2p_rd ? "d2d_p2p read" : "d2d_p2p write") : sc.dir == SERVER_H2D ? (pageable ? "h2d pageable" : "h2d") : "d2h", sc.bytes, gpus, gen, lanes, GBps,
                steady, big.hops.h[worst].name);
    topo_free(t);
}

SIM_TEST(h2d_copy, "host<->GPU and GPU<->GPU copies over PCIe (bandwidthTest-style): MRd/MWr copy engines, switches, host DRAM, per-hop utilisation and stalls",
         h2d_params, "bytes=262144", h2d_run)
