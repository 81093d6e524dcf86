/* gpudirect: a NIC reads a GPU buffer for sending, on the server preset
 * (server:gpus=8,nics=8: gpu0 and nic0 under PCIe switch sw0). path=p2p is
 * GPUDirect RDMA: the NIC's DMA engine reads gpu0's BAR with MRd, the
 * switch turns the requests and gpu0's CplDs between its downstream ports,
 * nothing reaches the host. path=host is the staged path NCCL takes without
 * GDR: gpu0 writes the buffer into host memory (d2h MWr) chunk by chunk,
 * flagging each chunk to the host CPU; the CPU's proxy thread sees the flag
 * and rings nic0's doorbell, and the NIC reads that chunk from host DRAM
 * (MRd, CplD) while the GPU writes the next. Every hop is a full PCIe port.
 * The checks compare with an independent goodput model (tb/server_common.h,
 * docs/models/pcie.md), never with the run itself. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/pcie/pcie_port.h"
#include "models/server/server.h"
#include "sim/fabric.h"
#include "sim/sim.h"
#include "tb/server_common.h"

static const sim_param_def gd_params[] = {
    SIM_PARAM_ENUM("path", "p2p", "p2p|host",
                   "p2p: nic0 reads gpu0's BAR across switch sw0 (GPUDirect RDMA); host: gpu0 writes host DRAM, nic0 reads it (staged, chunked)"),
    SIM_PARAM_INT("bytes", "4194304", "B", 1, 1 << 30, "size of the buffer sent"),
    SIM_PARAM_INT("lat_bytes", "64", "B", 1, 65536, "size of the small transfer whose time is latency_us (run on its own)"),
    SIM_PARAM_INT("chunk_bytes", "524288", "B", 64, 1 << 30,
                  "path=host: the staging chunk (NCCL: NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8 = 512 KiB); the GPU flags each, the CPU rings the NIC"),
    SIM_PARAM_DOUBLE("proxy_ns", "500", "ns", 0, 1e7, "path=host: the CPU proxy thread from a flag seen to the NIC's doorbell posted [assumed]"),
    SIM_PARAM_INT("gen", "5", "", 1, 6, "PCIe generation 1..6 (Gen6: Flit Mode), every link"),
    SIM_PARAM_INT("lanes", "16", "", 1, 16, "link width: 1, 2, 4, 8, 16"),
    SIM_PARAM_DOUBLE("nic_GBps", "50", "GB/s", 0.1, 1e4, "the NIC's line rate (ConnectX-7 400 Gb/s = 50 GB/s)"),
    SIM_PARAM_INT("nic_buf_bytes", "1048576", "B", 4096, 1 << 30, "the NIC's send buffer: reads are issued only into free space [assumed]"),
    SIM_PARAM_INT("mps", "256", "B", 128, 4096, "Max_Payload_Size, every port: 128..4096, power of two"),
    SIM_PARAM_INT("mrrs", "512", "B", 128, 4096, "Max_Read_Request_Size of the NIC's DMA engine: 128..4096, power of two"),
    SIM_PARAM_INT("tags", "256", "", 1, 768, "outstanding reads of the NIC's DMA engine"),
    SIM_PARAM_INT("rcb", "64", "B", 64, 128, "read completion boundary of the completer: 64 or 128"),
    SIM_PARAM_DOUBLE("switch_ns", "120", "ns", 0, 1e6, "PCIe switch port to port, store-and-forward (Switchtec/PEX: 85-150 ns)"),
    SIM_PARAM_DOUBLE("hbm_ns", "400", "ns", 0, 1e6, "GPU HBM access latency [assumed]"),
    SIM_PARAM_DOUBLE("dram_ns", "90", "ns", 0, 1e6, "path=host: host DRAM access latency [assumed]"),
    SIM_PARAM_DOUBLE("rc_ns", "150", "ns", 0, 1e6, "path=host: root complex, each way between root port and memory [assumed]"),
    SIM_PARAM_END,
};

typedef struct gd_run {
    server_copy_stats nic;             /* the NIC's completions; done_ps: the last byte on its wire */
    sim_time_ps start_ps;
    uint64_t dram_bytes, host_tlps, p2p_tlps;
    srv_hops hops;
    int cons;
    char why[512];
    bool finished;
} gd_run;

/* One transfer on a fresh fabric: runs until the NIC sent the last byte and every port drained. */
static void gd_transfer(sim_kernel *k, const topo *t, server_cfg *sc, bool host_path, sim_trace *tr, uint64_t seed, gd_run *r)
{
    memset(r, 0, sizeof *r);
    char err[512];
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = tr, .seed = seed,
                          .kind_cfg = { { "host", sc }, { "gpu", sc }, { "pcie_switch", sc }, { "nic", sc } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("gpudirect: %s", err);
    uint32_t hn = (uint32_t)topo_node_find(t, "host0"), gn = (uint32_t)topo_node_find(t, "gpu0"), nn = (uint32_t)topo_node_find(t, "nic0");
    server_nic *nic = sim_fabric_component(f, nn);
    /* a watchdog: nothing here takes longer than 4 ns per byte + 1 ms */
    sim_time_ps limit = (sim_time_ps)sc->nic_bytes * 4000 + 1000000000ull, step = 1000000;
    for (;;) {
        sim_time_ps before = sim_now(k);
        sim_run(k, before + step);
        server_nic_stats(nic, &r->nic);
        if (r->nic.streams_done && sim_now(k) >= r->nic.done_ps && srv_ports_quiet(f, t)) { r->finished = true; break; }
        if (sim_now(k) == before || sim_now(k) >= limit) break;
    }
    srv_count_host_and_p2p(f, t, hn, &r->dram_bytes, &r->host_tlps, &r->p2p_tlps);
    /* the transfer starts when its first engine starts: the GPU's writes (host path) or the NIC's reads */
    r->start_ps = server_nic_launch_ps(nic);
    if (host_path) {
        sim_time_ps g = server_gpu_launch_ps(sim_fabric_component(f, gn));
        if (g < r->start_ps) r->start_ps = g;
    }
    double ns = (double)(r->nic.done_ps - r->start_ps) / 1000.0;
    if (host_path) srv_add_path(&r->hops, t, gn, hn), srv_add_path(&r->hops, t, hn, nn);
    else srv_add_path(&r->hops, t, gn, nn);
    srv_measure_hops(&r->hops, f, t, ns);
    /* the NIC's line: busy sending for bytes / nic_GBps of the transfer's time */
    srv_add_resource(&r->hops, "nic0.line", ns > 0 ? (double)r->nic.bytes_received / sc->nic_GBps / ns : 0);
    r->cons = sim_fabric_check(f, r->finished, r->why, sizeof r->why);
    sim_fabric_free(f);
}

static void gd_run_test(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    bool host_path = sim_param_enum(p, "path") == 1;
    unsigned gen = (unsigned)sim_param_int(p, "gen"), lanes = (unsigned)sim_param_int(p, "lanes");
    uint64_t bytes = (uint64_t)sim_param_int(p, "bytes"), lat_bytes = (uint64_t)sim_param_int(p, "lat_bytes");
    server_cfg sc = SERVER_CFG_DEFAULT;
    sc.mps = (unsigned)sim_param_int(p, "mps");
    sc.mrrs = (unsigned)sim_param_int(p, "mrrs");
    sc.tags = (unsigned)sim_param_int(p, "tags");
    sc.rcb = (unsigned)sim_param_int(p, "rcb");
    sc.switch_ns = sim_param_double(p, "switch_ns");
    sc.hbm_ns = sim_param_double(p, "hbm_ns");
    sc.nic_GBps = sim_param_double(p, "nic_GBps");
    sc.nic_buf_bytes = (uint64_t)sim_param_int(p, "nic_buf_bytes");
    if (sc.nic_buf_bytes < sc.mrrs) sim_input_error("gpudirect: nic_buf_bytes=%" PRIu64 ": allowed >= mrrs (%u), else no read fits", sc.nic_buf_bytes, sc.mrrs);
    static const char *const copiers[] = { "gpu0", NULL };
    sc.nic_bytes = bytes;
    sc.nic_sender = "nic0";
    sc.nic_src = "gpu0";
    if (host_path) {
        sc.dram_ns = sim_param_double(p, "dram_ns");
        sc.rc_ns = sim_param_double(p, "rc_ns");
        sc.chunk_bytes = (uint64_t)sim_param_int(p, "chunk_bytes");
        sc.proxy_ns = sim_param_double(p, "proxy_ns");
        sc.nic_via_host = true;
        sc.dir = SERVER_D2H;   /* the GPU's engine writes the buffer into its host buffer */
        sc.bytes = bytes;
        sc.copiers = copiers;
    } else {
        static const char *const host_only[] = { "dram_ns", "rc_ns", "chunk_bytes", "proxy_ns" };
        for (unsigned i = 0; i < sizeof host_only / sizeof *host_only; i++)
            sim_param_not_applicable(p, host_only[i], "path=p2p turns at the PCIe switch: nothing is staged in host memory");
    }
    sim_param_not_applicable(p, "seed", "no error is injected: nothing is random");
    char spec[96];
    snprintf(spec, sizeof spec, "server:gpus=8,nics=8,gen=%u,switches=4,lanes=%u", gen, lanes);
    server_register_kinds();
    char err[1024];
    topo *t = topo_from_string(spec, "pcie-gen5-x16", err, sizeof err);
    if (!t) sim_input_error("gpudirect: %s", err);
    sim_test_configured(c);

    gd_run big, small;
    gd_transfer(c->k, t, &sc, host_path, c->trace, c->seed, &big);
    c->sim_time_ps = sim_now(c->k);
    c->sim_events = sim_event_count(c->k);
    server_cfg lc = sc;
    lc.nic_bytes = lat_bytes;
    if (host_path) lc.bytes = lat_bytes;
    sim_kernel *lk = sim_kernel_new();
    gd_transfer(lk, t, &lc, host_path, NULL, c->seed, &small);
    sim_kernel_free(lk);

    double ns = (double)(big.nic.done_ps - big.start_ps) / 1000.0;
    double GBps = ns > 0 ? (double)big.nic.bytes_received / ns : 0;
    double latency_us = (double)(small.nic.done_ps - small.start_ps) / 1e6;
    sim_report *rep = c->report;
    sim_report_metric(rep, "GBps", GBps);
    sim_report_metric(rep, "latency_us", latency_us);
    sim_report_metric(rep, "transfer_us", ns / 1000.0);
    sim_report_metric(rep, "host_dram_bytes", (double)big.dram_bytes);
    unsigned worst = srv_report_hops(rep, &big.hops, ns);
    sim_report_metric(rep, "p2p_tlps", (double)big.p2p_tlps);
    sim_report_metric(rep, "host_tlps", (double)big.host_tlps);

    sim_check(rep, "conservation", big.cons == 0 && small.cons == 0, "every link and port (TLPs, credits, order, tags, doorbells): %s",
              big.cons ? big.why : small.cons ? small.why : "conserved");
    /* every byte read arrives once: the completions matched open reads (conservation) and add up to the buffer */
    sim_check(rep, "every_byte_once", big.finished && small.finished && big.nic.bytes_received == bytes && small.nic.bytes_received == lat_bytes,
              "the NIC received %" PRIu64 " of %" PRIu64 " bytes (small: %" PRIu64 " of %" PRIu64 "), ports drained: %s", big.nic.bytes_received,
              bytes, small.nic.bytes_received, lat_bytes, big.finished && small.finished ? "yes" : "no");
    if (host_path)
        sim_check(rep, "host_dram_written_then_read", big.dram_bytes == 2 * bytes && small.dram_bytes == 2 * lat_bytes,
                  "host DRAM moved %" PRIu64 " bytes for %" PRIu64 " sent (the GPU's writes, then the NIC's reads: 2x)", big.dram_bytes, bytes);
    else
        sim_check(rep, "p2p_no_host_dram", big.dram_bytes == 0 && big.host_tlps == 0 && small.dram_bytes == 0 && small.host_tlps == 0 && big.p2p_tlps > 0,
                  "host DRAM moved %" PRIu64 " bytes, the root ports received %" PRIu64 " TLPs; %" PRIu64 " TLPs turned at the switch",
                  big.dram_bytes, big.host_tlps, big.p2p_tlps);

    /* the independent prediction: the NIC's reads come back as CplDs (3DW header, MPS each); on the
     * host path the GPU's MWr (4DW) go up first. Each of those, the read window over its round trip
     * (tags x MRRS, or the NIC's buffer, whichever is smaller) and the line rate limit the rate. */
    double wire_ns = t->links[0].latency_ns;
    double cpl_bound = srv_ref_data_GBps(gen, lanes, sc.mps, 12, false), cpl = srv_ref_data_GBps(gen, lanes, sc.mps, 12, true);
    double mwr_bound = srv_ref_data_GBps(gen, lanes, sc.mps, 16, false), mwr = srv_ref_data_GBps(gen, lanes, sc.mps, 16, true);
    double bound = fmin(host_path ? fmin(cpl_bound, mwr_bound) : cpl_bound, sc.nic_GBps);
    sim_check(rep, "not_above_narrowest_hop", GBps <= bound,
              "%.3f GB/s vs min(narrowest hop's goodput bound %.3f GB/s (MPS %u data TLPs, no DLLP, no SKP), nic_GBps %.3f)", GBps,
              host_path ? fmin(cpl_bound, mwr_bound) : cpl_bound, sc.mps, sc.nic_GBps);
    unsigned hops = 2;   /* completer to the switch, switch to the NIC (p2p); root port to the switch to the NIC (host) */
    double mem_ns = host_path ? 2 * sc.rc_ns + sc.dram_ns + sc.mrrs / sc.dram_GBps : sc.hbm_ns + sc.mrrs / sc.hbm_GBps;
    double rtt_ns = srv_read_rtt_ns(gen, lanes, sc.mps, sc.mrrs, hops, wire_ns, sc.rx_ns, sc.switch_ns, mem_ns);
    double window = fmin((double)sc.tags * sc.mrrs, (double)sc.nic_buf_bytes);
    double rate = fmin(cpl, sc.nic_GBps);
    const char *regime = cpl <= sc.nic_GBps ? "link-limited (CplD goodput)" : "line-rate-limited (nic_GBps)";
    if (window / rtt_ns < rate) rate = window / rtt_ns, regime = "window-limited: min(tags x MRRS, nic_buf_bytes) / read round trip";
    if (host_path && mwr < rate) rate = mwr, regime = "link-limited (the GPU's MWr goodput)";
    /* time to the first byte: the first read's round trip (host path: first the GPU writes a chunk, its
     * flag goes up, the CPU's proxy rings the NIC) */
    double first_ns = rtt_ns;
    if (host_path) {
        double chunk = (double)(sc.chunk_bytes < bytes ? sc.chunk_bytes : bytes);
        first_ns += sc.hbm_ns + chunk / mwr + hops * (wire_ns + sc.rx_ns) + sc.switch_ns + sc.rc_ns + sc.proxy_ns + hops * wire_ns + sc.switch_ns;
    }
    double pred = (double)bytes / (first_ns + (double)bytes / rate);
    bool window_limited = !strncmp(regime, "window", 6);
    double lo = window_limited || host_path ? 0.85 : 0.95, hi = window_limited || host_path ? 1.15 : 1.02;
    if (bytes >= 64u * sc.mps)
        sim_check(rep, "GBps_in_predicted_band", GBps >= lo * pred && GBps <= hi * pred,
                  "%.3f GB/s vs %.3f GB/s predicted (%s at %.3f GB/s after %.0f ns to the first byte; band %.2f..%.2f)", GBps, pred, regime,
                  rate, first_ns, lo, hi);
    if (bytes >= 64u * sc.mps && !window_limited && cpl <= sc.nic_GBps && !host_path)
        sim_check(rep, "bottleneck_is_data_hop", big.hops.h[worst].data, "bottleneck %s (util %.3f, stall %.0f ns) %s the data's path",
                  big.hops.h[worst].name, big.hops.h[worst].util, big.hops.h[worst].stall_ns, big.hops.h[worst].data ? "is on" : "is not on");
    double min_lat_us = (host_path ? sc.hbm_ns + hops * wire_ns + sc.switch_ns + sc.rc_ns + sc.proxy_ns + hops * wire_ns + sc.switch_ns : 0) +
                        2 * (hops * wire_ns + sc.switch_ns) + (host_path ? 2 * sc.rc_ns + sc.dram_ns : sc.hbm_ns);
    min_lat_us /= 1000.0;
    sim_check(rep, "latency_above_its_parts", latency_us >= min_lat_us && latency_us < 100 * min_lat_us + 10,
              "%" PRIu64 "-byte transfer %.3f us vs the sum of its wire, switch, memory%s latencies %.3f us", lat_bytes, latency_us,
              host_path ? ", root complex and proxy" : "", min_lat_us);
    if (!c->quiet)
        fprintf(stderr, "gpudirect: path=%s %" PRIu64 " B Gen%u x%u: %.2f GB/s (predicted %.2f, %s), bottleneck %s\n", host_path ? "host" : "p2p",
                bytes, gen, lanes, GBps, pred, regime, big.hops.h[worst].name);
    topo_free(t);
}

SIM_TEST(gpudirect, "a NIC reads a GPU buffer to send it: GPUDirect RDMA peer-to-peer across the PCIe switch, or staged through host DRAM",
         gd_params, "bytes=1048576", gd_run_test)
