/* nccl_tests: what nccl-tests' all_reduce_perf / all_gather_perf /
 * reduce_scatter_perf / broadcast_perf / reduce_perf / alltoall_perf /
 * sendrecv_perf print, from ring (broadcast and reduce: a chain along the
 * ring; alltoall and sendrecv: point-to-point; all_reduce also the tree and
 * NVLS: algo=tree|nvls|all) collectives simulated packet by
 * packet on a modelled NVLink/NVSwitch system (models/collective): per size,
 * `size count type redop root time algbw busbw #wrong`, with nccl-tests'
 * busbw factors, for NCCL's protocols (proto=simple|ll|ll128, auto: the
 * engine's own estimate per size, all: each) and dtype=float|half|bfloat16.
 * Checks: no wrong element, busbw never above the NVLink goodput per GPU,
 * large-size busbw near the prediction from the configured link rates,
 * the protocol's wire efficiency and the reduction bandwidth, auto's pick
 * against the measured protocols (proto=all), and conservation everywhere. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cJSON.h"
#include "models/collective/collective.h"
#include "models/collective/tuning.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "models/network/network.h"
#include "coll_predict.h"
#include "sim/fabric.h"
#include "sim/pdes.h"
#include "sim/sim.h"

#define CHECK_MAX_BYTES (8u << 20)   /* values are carried and compared up to this size (memory: 2 buffers per rank) */
#define LARGE_BYTES (64u << 20)      /* rows at least this large are held to the bandwidth prediction */
#define BAND_LOW 0.85                /* measured / predicted busbw at large sizes: pipeline fill, flags and acks cost the rest */
#define NVLS_BAND_LOW 0.70           /* NVLS at >= 64 MiB against its prediction; as slow as the ring would be ~0.57 on dgx-h100 */
#define TREE_BAND_LOW 0.55           /* the tree fills and drains its pipeline over 2 x its height, each hop queued behind the other connections of its port: 0.60-0.67 measured at 64 MiB (Simple) */
#define MAX_ROWS 128
#define AUTO_SLACK 1.25              /* proto=all: auto's pick may be this much slower than the fastest measured (an estimate, not a run) */
#define FC_PERIOD_NS 1e6             /* see the IB configuration below */
#define IB_SWITCH_PIPELINE_NS 150    /* Quantum-2 NDR port to port (sim/net_presets.c quantum2-ndr) */


static const sim_param_def nccl_params[] = {
    SIM_PARAM_ENUM("op", "all_reduce", COLL_OP_CHOICES,
                   "the collective (nccl-tests: all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf, "
                   "alltoall_perf, sendrecv_perf)"),
    SIM_PARAM_INT("root", "0", "", 0, 1023, "broadcast, reduce: the root rank (nccl-tests -r)"),
    SIM_PARAM_STRING("topo", "dgx-h100", "topology: dgx-h100 (8 H100, 4 NVSwitch), dgx-a100 (8 A100, 6 NVSwitch) or a JSON file of nvgpu and switch nodes"),
    SIM_PARAM_INT("nodes", "1", "", 1, 256, "servers of the dgx-* preset joined rail-optimised by InfiniBand (builds <topo>:nodes=N)"),
    SIM_PARAM_INT("gpus", "0", "", 0, 8, "ranks per node (0: all 8; k: the first k GPUs of every node, with their NICs)"),
    SIM_PARAM_INT("mtu", "4096", "bytes", 256, 4096, "InfiniBand MTU of the GPUs' NICs (256, 512, 1024, 2048, 4096; nodes > 1)"),
    SIM_PARAM_STRING("minbytes", "8", "smallest size (bytes; K, M, G suffixes as nccl-tests -b)"),
    SIM_PARAM_STRING("maxbytes", "256M", "largest size (nccl-tests -e)"),
    SIM_PARAM_INT("stepfactor", "2", "", 2, 1024, "size multiplier between rows (nccl-tests -f)"),
    SIM_PARAM_ENUM("algo", "ring", "ring|tree|all|nvls|nvls_tree|collnet|auto|direct",
                   "algorithm (NCCL_ALGO): ring (broadcast, reduce: a chain along the ring), tree (all_reduce: double binary tree over "
                   "nodes, a chain in a node), nvls (all_reduce: in-switch reduction, switches with nvls=1 as dgx-h100's), all (each of "
                   "them where it can run); alltoall: direct (p2p to every peer, its only one); sendrecv: none"),
    SIM_PARAM_INT("gpus_per_node", "0", "", 0, 64,
                  "tree: ranks per node (0: the topology's NVLink domains; n: consecutive ranks in groups of n, e.g. 1 = a tree over one-GPU nodes)"),
    SIM_PARAM_ENUM("proto", "auto", "simple|ll|ll128|auto|all",
                   "protocol (NCCL_PROTO): simple, ll, ll128, auto (per size the engine's own cost estimate picks), all (each of the three)"),
    SIM_PARAM_INT("channels", "0", "", 0, 64, "rings (NCCL channels); 0 = one per NVLink of a GPU (18 on dgx-h100)"),
    SIM_PARAM_INT("iters", "1", "", 1, 1000, "timed iterations per size (time = their mean)"),
    SIM_PARAM_INT("warmup_iters", "0", "", 0, 1000, "untimed iterations before them"),
    SIM_PARAM_BOOL("check", "1", "carry real floats, reduce them and count wrong elements (sizes up to 8 MiB; above: N/A)"),
    SIM_PARAM_ENUM("dtype", "float", COLL_DTYPE_CHOICES, "element type (nccl-tests -d): 4, 2, 2 bytes; check=1 rounds every sum to it"),
    SIM_PARAM_INT("chunk_bytes", "131072", "bytes", 128, 1 << 24, "Simple protocol: bytes per flagged chunk (one slot)"),
    SIM_PARAM_INT("slots", "8", "", 1, 64, "slots per connection (NCCL_STEPS)"),
    SIM_PARAM_INT("burst_pkts", "0", "", 0, 256, "NVLink packets per simulated message (0: chunk_bytes / 128 / 128, 1..32)"),
    SIM_PARAM_DOUBLE("reduce_GBps", "1117", "GBps", 1, 1e5, "reduction unit per GPU: result bytes/s (H100 HBM3 3.35 TB/s over 3 accesses)"),
    SIM_PARAM_ENUM("inject", "none", "none|skip_chunk", "a seeded bug: skip_chunk = rank 0 drops one received chunk (needs check=1)"),
    SIM_PARAM_ENUM("partition", "auto", TOPO_PARTITION_CHOICES,
                   "under mpirun: the nodes each rank runs (auto: cut along the slowest links, balanced node counts; "
                   "nodes: equal blocks in topology order; file: each node's \"rank\" in the topo= file)"),
    SIM_PARAM_END,
};

/* "256M" -> bytes; 0 on a bad value. */
static uint64_t parse_size(const char *s)
{
    char *end;
    if (!isdigit((unsigned char)*s)) return 0;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ull << 30, end++;
    if (*end || v == 0 || v > (4ull << 30) / mul) return 0;
    return v * mul;
}

static void repo_root(char *buf, size_t n)
{
    snprintf(buf, n, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    slash = strrchr(buf, '/');
    if (slash) *slash = 0; else snprintf(buf, n, ".");
}

typedef struct row {
    const char *algo;
    const char *proto;     /* the protocol the row ran (auto: the engine's choice) */
    const char *series;    /* algo, or "algo/proto" with proto=all: one plot line each */
    double predicted;      /* its busbw prediction (GB/s): the algorithm's at the protocol's wire efficiency */
    uint64_t bytes, count;
    double time_us, algbw, busbw;
    long long wrong;   /* -1: not checked */
} row;

static void write_plot(sim_test_ctx *c, const row *rows, unsigned n, const char *op, const char *proto, double bound, const char *algos,
                       const char *preds)
{
    char dat[1024], png[1024], root[1024], script[1100], cmd[4400];
    snprintf(dat, sizeof dat, "%s/reports/nccl_tests.dat", c->out_dir ? c->out_dir : ".");
    snprintf(png, sizeof png, "%s/reports/nccl_tests.png", c->out_dir ? c->out_dir : ".");
    sim_mkdir_parents(dat);
    FILE *f = fopen(dat, "w");
    if (!f) return;
    fprintf(f, "# nccl_tests %s proto=%s: bytes time_us algbw_GBps busbw_GBps, one block per series (%s)\n", op, proto, algos);
    for (unsigned i = 0; i < n; i++) {
        if (i && strcmp(rows[i].series, rows[i - 1].series)) fprintf(f, "\n\n");   /* gnuplot's next index */
        fprintf(f, "%" PRIu64 " %.3f %.3f %.3f\n", rows[i].bytes, rows[i].time_us, rows[i].algbw, rows[i].busbw);
    }
    fclose(f);
    repo_root(root, sizeof root);
    snprintf(script, sizeof script, "%s/scripts/plot_nccl_tests.gp", root);
    struct stat sb;
    if (stat(script, &sb) != 0) return;
    snprintf(cmd, sizeof cmd, "gnuplot -e \"datafile='%s'; outfile='%s'; bound=%.3f; algos='%s'; preds='%s'; title_text='%s, proto=%s'\" '%s' 2>&1",
             dat, png, bound, algos, preds, op, proto, script);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "nccl_tests: gnuplot failed (rc %d); %s not written\n", rc, png);
    else sim_report_metric_json(c->report, "plot", cJSON_CreateString(png));
}

/* A row's share of the link bound that its pipeline allows: a chain's fill (broadcast, reduce), else 1. */
static double row_fill(enum coll_op op, uint64_t bytes, unsigned chans, uint32_t chunk_bytes, unsigned n)
{
    return coll_op_has_root(op) ? coll_predict_chain_fill(bytes, chans, chunk_bytes, n) : 1.0;
}

static void nccl_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    enum coll_op op = (enum coll_op)sim_param_enum(p, "op");
    const char *spec = sim_param_str(p, "topo");
    int64_t nodes = sim_param_int(p, "nodes"), gpus = sim_param_int(p, "gpus");
    const char *minb = sim_param_str(p, "minbytes"), *maxb = sim_param_str(p, "maxbytes");
    uint64_t step = (uint64_t)sim_param_int(p, "stepfactor");
    const char *algo = sim_param_str(p, "algo"), *proto = sim_param_str(p, "proto"), *dtype = sim_param_str(p, "dtype");
    unsigned iters = (unsigned)sim_param_int(p, "iters"), warmup = (unsigned)sim_param_int(p, "warmup_iters");
    bool check = sim_param_bool(p, "check");
    bool inject = sim_param_enum(p, "inject") == 1;
    const bool p2p = op == COLL_ALLTOALL || op == COLL_SENDRECV;
    coll_cfg cc = COLL_CFG_DEFAULT;
    cc.channels = (unsigned)sim_param_int(p, "channels");
    cc.chunk_bytes = (uint32_t)sim_param_int(p, "chunk_bytes");
    cc.slots = (unsigned)sim_param_int(p, "slots");
    nvgpu_cfg gc = NVGPU_CFG_DEFAULT;
    unsigned burst = (unsigned)sim_param_int(p, "burst_pkts");
    gc.reduce_GBps = sim_param_double(p, "reduce_GBps");
    unsigned mtu = (unsigned)sim_param_int(p, "mtu");
    bool preset = !strcmp(spec, "dgx-h100") || !strcmp(spec, "dgx-a100");
    if (!preset && (nodes != 1 || gpus))
        sim_input_error("nccl_tests: topo=%s with nodes=%" PRId64 " gpus=%" PRId64 ": nodes= and gpus= build the dgx-h100 and dgx-a100 presets; "
                        "a JSON file or a generator with arguments describes its nodes itself; allowed: topo=dgx-h100|dgx-a100, or nodes=1 gpus=0",
                        spec, nodes, gpus);
    if (!strncmp(spec, "dgx-", 4) && strchr(spec, ':'))   /* the prediction reads nodes= and gpus=: they must be the run's */
        sim_input_error("nccl_tests: topo=%s: give the DGX preset's keys as parameters; allowed: topo=dgx-h100|dgx-a100 nodes=N gpus=G "
                        "(oversubscription= is not offered here yet)", spec);
    if (mtu & (mtu - 1)) sim_input_error("nccl_tests: mtu=%u; allowed: 256, 512, 1024, 2048, 4096 (the InfiniBand MTUs)", mtu);
    if (nodes == 1) sim_param_not_applicable(p, "mtu", "one node: no network (nodes > 1)");
    if (nodes > 1 && c->transport && c->transport->size > 1)
        sim_input_error("nccl_tests: nodes=%" PRId64 ": the GPUs' NICs run in one process only; allowed over ranks: nodes=1", nodes);
    char spec_buf[96];
    if (preset && (nodes != 1 || gpus)) {
        snprintf(spec_buf, sizeof spec_buf, "%s:nodes=%" PRId64, spec, nodes);
        if (gpus) snprintf(spec_buf + strlen(spec_buf), sizeof spec_buf - strlen(spec_buf), ",gpus=%" PRId64, gpus);
        spec = spec_buf;
    }
    if (op == COLL_SENDRECV) sim_param_not_applicable(p, "algo", "sendrecv is point-to-point (no NCCL algorithm)");
    if (op == COLL_ALLTOALL && sim_param_given(p, "algo") && strcmp(algo, "direct"))
        sim_input_error("nccl_tests: algo=%s with op=alltoall; allowed: direct (every rank to every peer at once, NCCL's p2p)", algo);
    if (op != COLL_ALLTOALL && !strcmp(algo, "direct"))
        sim_input_error("nccl_tests: algo=direct with op=%s: direct is alltoall's; allowed: ring, tree, all", coll_op_name(op));
    if (p2p) algo = "ring";   /* one run: the p2p engine (labelled direct / p2p) */
    const char *p2p_label = op == COLL_ALLTOALL ? "direct" : "p2p";
    if (p2p && nodes > 1)
        sim_input_error("nccl_tests: op=%s with nodes=%" PRId64 ": the point-to-point ops run inside one NVLink domain yet; allowed: nodes=1",
                        coll_op_name(op), nodes);
    bool all = !strcmp(algo, "all"), run_ring = all || !strcmp(algo, "ring"), run_tree = all || !strcmp(algo, "tree");
    bool want_nvls = !strcmp(algo, "nvls"), run_nvls = false;   /* all: decided once the topology is known */
    if (!run_ring && !run_tree && !want_nvls) sim_input_error("nccl_tests: algo=%s is not modelled yet; allowed: ring, tree, nvls, all", algo);
    if (want_nvls && op != COLL_ALL_REDUCE)
        sim_input_error("nccl_tests: algo=nvls with op=%s: NVLS runs all_reduce only here; allowed: op=all_reduce (or algo=ring)", coll_op_name(op));
    if (want_nvls && c->transport && c->transport->size > 1)
        sim_input_error("nccl_tests: algo=nvls: NVLS runs in one process only; allowed over ranks: algo=ring");
    if (run_tree && op != COLL_ALL_REDUCE)
        sim_input_error("nccl_tests: algo=%s with op=%s: the tree runs all_reduce only (as NCCL's); allowed: algo=ring", algo, coll_op_name(op));
    if (run_tree && c->transport && c->transport->size > 1)
        sim_input_error("nccl_tests: algo=%s: the tree runs in one process only; allowed over ranks: algo=ring", algo);
    if (p2p && c->transport && c->transport->size > 1)
        sim_input_error("nccl_tests: op=%s runs in one process only; allowed over ranks: all_reduce, all_gather, reduce_scatter, broadcast, reduce",
                        coll_op_name(op));
    if (coll_op_has_root(op)) cc.root = (unsigned)sim_param_int(p, "root");
    else sim_param_not_applicable(p, "root", "op=%s has no root (broadcast and reduce have)", coll_op_name(op));
    cc.gpus_per_node = (unsigned)sim_param_int(p, "gpus_per_node");
    if (!run_tree) sim_param_not_applicable(p, "gpus_per_node", "the nodes shape only the tree (algo=tree or all)");
    bool all_protos = !strcmp(proto, "all");
    cc.proto = all_protos ? COLL_PROTO_SIMPLE : (enum coll_proto)sim_param_enum(p, "proto");   /* the enum's order is proto.h's */
    cc.dtype = (enum coll_dtype)sim_param_enum(p, "dtype");
    const unsigned esize = coll_dtype_bytes(cc.dtype);
    /* NVLS (nvls.c): Simple chunks of floats inside one NVLink domain */
    const bool nvls_fits = nodes == 1 && cc.dtype == COLL_DTYPE_FLOAT && (all_protos || cc.proto == COLL_PROTO_SIMPLE || cc.proto == COLL_PROTO_AUTO);
    if (want_nvls && !nvls_fits)
        sim_input_error("nccl_tests: algo=nvls with nodes=%" PRId64 " proto=%s dtype=%s: NVLS runs Simple on floats inside one node (nvls_tree "
                        "across nodes is not modelled yet); allowed: nodes=1, proto=simple|auto, dtype=float", nodes, proto, dtype);
    if (p2p) {   /* ops.c's connections carry Simple chunks of floats */
        if (all_protos || (cc.proto != COLL_PROTO_SIMPLE && cc.proto != COLL_PROTO_AUTO))
            sim_input_error("nccl_tests: proto=%s with op=%s: the point-to-point ops run Simple only; allowed: simple, auto", proto, coll_op_name(op));
        if (cc.dtype != COLL_DTYPE_FLOAT)
            sim_input_error("nccl_tests: dtype=%s with op=%s: the point-to-point ops carry float only; allowed: float", dtype, coll_op_name(op));
        cc.proto = COLL_PROTO_SIMPLE;
    }
    if (!check) sim_param_not_applicable(p, "inject", "a seeded bug shows only in checked values (check=1)");
    const sim_pdes_transport *tr = c->transport;
    const bool root = !tr || tr->rank == 0;
    enum topo_partition part_how = TOPO_PART_AUTO;
    if (tr) part_how = (enum topo_partition)sim_param_enum(p, "partition");
    else sim_param_not_applicable(p, "partition", "one process: nothing to partition (run under mpirun -np N)");
    if (tr && tr->size > 1 && check)
        sim_input_error("nccl_tests: check=1 carries values by pointer: one process only; use check=0 over ranks (%u ranks)", tr->size);
    uint64_t lo = parse_size(minb), hi = parse_size(maxb);
    if (!lo) sim_input_error("nccl_tests: minbytes=%s; allowed: a size 1..4G (digits, optional K, M, G)", minb);
    if (!hi) sim_input_error("nccl_tests: maxbytes=%s; allowed: a size 1..4G (digits, optional K, M, G)", maxb);
    if (lo > hi) sim_input_error("nccl_tests: minbytes=%s is above maxbytes=%s", minb, maxb);
    if (cc.chunk_bytes % 128) sim_input_error("nccl_tests: chunk_bytes=%u; allowed: a multiple of 128 (whole NVLink packets)", cc.chunk_bytes);
    gc.burst_pkts = burst ? burst : cc.chunk_bytes / 128 / 128;
    if (gc.burst_pkts < 1) gc.burst_pkts = 1;
    if (gc.burst_pkts > 32 && !burst) gc.burst_pkts = 32;
    if ((uint64_t)gc.burst_pkts * 128 > cc.chunk_bytes)
        sim_input_error("nccl_tests: burst_pkts=%u is more than a chunk (chunk_bytes=%u = %u packets)", gc.burst_pkts, cc.chunk_bytes, cc.chunk_bytes / 128);
    cc.check = check;
    cc.inject = inject ? COLL_INJECT_SKIP_CHUNK : COLL_INJECT_NONE;
    cc.transport = tr;
    fabric_register_kinds();
    collective_register_kinds();
    network_register_kinds();
    topo *t = topo_from_string_or_exit(spec, "nvlink4");
    sim_test_configured(c);

    fabric_switch_cfg sc = FABRIC_SWITCH_CFG_DEFAULT;
    /* IB: periodic flow-control packets every FC_PERIOD_NS instead of the IBA bound (~1.2 us at NDR): nothing
     * is lost on these links, FC on free advertises every freed block, and a fabric never quiet could not be
     * checked drained after each collective */
    gpu_nic_cfg nc;
    gpu_nic_cfg_default(&nc);
    nc.mtu_bytes = mtu;
    nc.port.fc_period_ns = FC_PERIOD_NS;
    ib_switch_cfg isc;
    ib_port_cfg_default(&isc.port, 2, 65536);
    isc.port.fc_period_ns = FC_PERIOD_NS;
    isc.pipeline_ns = IB_SWITCH_PIPELINE_NS;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = c->trace, .seed = c->seed,
                          .kind_cfg = { { "nvgpu", &gc }, { "switch", &sc }, { "gpu_nic", &nc }, { "ib_switch", &isc } } };
    char err[1024], why[1024];
    uint32_t *node_part = NULL;
    if (tr) {   /* one system over the ranks: each runs its part (docs/parallel.md) */
        node_part = calloc(t->n_nodes + 1, sizeof *node_part);
        if (topo_partition(t, part_how, tr->size, node_part, err, sizeof err) != 0)
            sim_input_error("nccl_tests: partition=%s: %s", sim_param_str(p, "partition"), err);
        fc.transport = tr;
        fc.node_part = node_part;
    }
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("nccl_tests: topo=%s: %s", spec, err);
    coll_comm *cm = coll_comm_new(f, &cc, err, sizeof err);
    if (!cm) sim_input_error("nccl_tests: topo=%s: %s", spec, err);   /* (names a root beyond the ranks too) */
    unsigned n = coll_comm_ranks(cm);

    /* the independent prediction, from the configuration: per GPU, the NVLinks its channels use, at their goodput */
    nvgpu *g0 = sim_fabric_component(f, t->endpoint_node[0]);
    unsigned ports = nvgpu_nvlink_ports(g0), chans = coll_comm_channels(cm), used = chans < ports ? chans : ports;
    const topo_link *l0 = &t->links[t->nodes[nvgpu_node(g0)].port_link[0]];   /* the topology's: g0 may be another rank's */
    double goodput_link = l0->GBps * 128.0 / (128.0 + l0->overhead_bytes);
    double bound = ports * goodput_link;   /* every link of a GPU busy with full packets */
    double predicted = used * goodput_link;
    /* result bytes a rank's reduction unit makes per busbw byte: all_reduce (n-1)/n of S per 2(n-1)/n; reduce_scatter
     * (n-1)/n per (n-1)/n; reduce (a chain: every rank but the first reduces S) S per S */
    double reduce_limit = op == COLL_ALL_REDUCE ? 2.0 * gc.reduce_GBps : op == COLL_REDUCE_SCATTER || op == COLL_REDUCE ? gc.reduce_GBps : INFINITY;
    if (reduce_limit < predicted) predicted = reduce_limit;
    char pred_why[512];
    if (isinf(reduce_limit)) snprintf(pred_why, sizeof pred_why, "%u links x %.2f GB/s goodput (nothing reduced)", used, goodput_link);
    else snprintf(pred_why, sizeof pred_why, "min(%u links x %.2f GB/s goodput, reduction limit %.0f GB/s)", used, goodput_link, reduce_limit);
    double bis_bound = INFINITY;
    if (op == COLL_ALLTOALL) {   /* and the bisection: half the ranks send nS/4 to the other half across it */
        double bis = coll_predict_alltoall_bisection_busbw(t, n, l0->overhead_bytes, err, sizeof err);
        if (bis < 0) sim_input_error("nccl_tests: topo=%s: %s", spec, err);
        if (bis < predicted) predicted = bis;
        bis_bound = bis;
        snprintf(pred_why, sizeof pred_why, "min(%u links x %.2f GB/s goodput, NVSwitch bisection bound %.1f GB/s)", used, goodput_link, bis);
    }
    /* across nodes: every channel's ring leaves each node once, through one GPU's NIC (ring_order.c's rule, from
     * the configuration): the NIC carrying most channels, at min(IB, PCIe) goodput, bounds busbw at C / k_max of it */
    double nic_goodput = 0, nic_bound = INFINITY;
    unsigned nic_kmax = 0, G = n / (unsigned)nodes;
    if (nodes > 1) {
        uint32_t gnode = nvgpu_node(g0);
        const topo_link *pl = &t->links[t->nodes[gnode].port_link[nvgpu_nic_port(g0)]];
        uint32_t nic = pl->a == gnode ? pl->b : pl->a;
        const topo_link *il = &t->links[t->nodes[nic].port_link[1]];
        double ib_goodput = il->GBps * mtu / (mtu + il->overhead_bytes);
        double pcie_goodput = pl->GBps * 128.0 / (128.0 + pl->overhead_bytes);
        nic_goodput = ib_goodput < pcie_goodput ? ib_goodput : pcie_goodput;
        for (unsigned par = 0; par < 2; par++) {   /* even nodes leave on rail b = a - 1, odd ones on rail a = ch mod G */
            unsigned k8[8] = { 0 };
            for (unsigned ch = 0; ch < chans; ch++) {
                unsigned rail = par ? ch % G : (ch % G + G - 1) % G;
                if (++k8[rail] > nic_kmax) nic_kmax = k8[rail];
            }
        }
        nic_bound = (double)chans / nic_kmax * nic_goodput;
        if (nic_bound < predicted) predicted = nic_bound;
        size_t lw = strlen(pred_why);
        snprintf(pred_why + lw, sizeof pred_why - lw, ", NIC bound %.2f GB/s", nic_bound);
    }
    char tree_why[256] = "";
    double tree_pred = run_tree ? coll_predict_tree_busbw(cm, goodput_link, gc.reduce_GBps, tree_why, sizeof tree_why) : 0;
    /* per protocol: the same bounds with every wire byte carrying the protocol's share of data (LL 1/2, LL128 120/128) */
    double pred_ring[COLL_PROTOS], pred_tree[COLL_PROTOS];
    for (unsigned q = 0; q < COLL_PROTOS; q++) {
        double eff = coll_proto_efficiency((enum coll_proto)q);
        /* the wire bounds (links, bisection, NICs) carry the protocol's share of data; the reduction unit does not care */
        double wire = fmin(used * goodput_link, fmin(bis_bound, nic_bound)) * eff;
        pred_ring[q] = wire < reduce_limit ? wire : reduce_limit;
        char w[256];
        pred_tree[q] = run_tree ? coll_predict_tree_busbw(cm, goodput_link * eff, gc.reduce_GBps, w, sizeof w) : 0;
    }
    if (want_nvls && !coll_nvls_available(cm, err, sizeof err))
        sim_input_error("nccl_tests: algo=nvls on topo=%s: %s; allowed: a topology whose switches have NVLS (topo=dgx-h100)", spec, err);
    run_nvls = want_nvls || (all && nvls_fits && op == COLL_ALL_REDUCE && !(tr && tr->size > 1) && coll_nvls_available(cm, err, sizeof err));
    char nvls_why[512] = "";
    double nvls_pred = run_nvls ? coll_predict_nvls_busbw(cm, goodput_link, sc.nvls_reduce_GBps, nvls_why, sizeof nvls_why) : 0;
    /* the series: every algorithm, with every protocol when proto=all */
    enum { MAX_SERIES = 7 };
    const char *algos[MAX_SERIES];
    enum coll_proto sprotos[MAX_SERIES];
    char snames[MAX_SERIES][24];
    unsigned nalgo = 0;
    for (unsigned a = 0; a < 3; a++) {
        if (!(a == 2 ? run_nvls : a ? run_tree : run_ring)) continue;
        for (unsigned q = 0; q < (all_protos && a < 2 ? COLL_PROTOS : 1); q++) {   /* NVLS: Simple only */
            algos[nalgo] = a == 2 ? "nvls" : a ? "tree" : p2p ? p2p_label : "ring";
            sprotos[nalgo] = a == 2 ? COLL_PROTO_SIMPLE : all_protos ? (enum coll_proto)q : cc.proto;
            if (all_protos) snprintf(snames[nalgo], sizeof snames[nalgo], "%s/%s", algos[nalgo], coll_proto_name(sprotos[nalgo]));
            else snprintf(snames[nalgo], sizeof snames[nalgo], "%s", algos[nalgo]);
            nalgo++;
        }
    }

    row rows[MAX_ROWS];
    unsigned nrows = 0;
    bool conserved = true, all_checked_right = true;
    char cons_why[1200] = "";
    for (unsigned a = 0; a < nalgo; a++) {
    bool tree = !strcmp(algos[a], "tree"), nvls = !strcmp(algos[a], "nvls");
    coll_comm_set_proto(cm, sprotos[a]);
    if (!c->quiet && root) {
        if (nvls)
            printf("# nccl_tests: %s, %u ranks on %s, nvls (in-switch reduction and multicast), simple, %u channels, chunk %u B, "
                   "burst %u packets (out-of-place)\n", coll_op_name(op), n, spec, coll_nvls_channels(cm), cc.chunk_bytes, gc.burst_pkts);
        else if (tree)
            printf("# nccl_tests: %s, %u ranks in %u node(s) on %s, tree (double binary tree over nodes, a chain in a node), proto %s, "
                   "%u channels, chunk %u B, burst %u packets (out-of-place)\n", coll_op_name(op), n, coll_comm_nodes(cm), spec,
                   coll_proto_name(sprotos[a]), coll_tree_channels(cm), cc.chunk_bytes, gc.burst_pkts);
        else
            printf("# nccl_tests: %s, %u ranks in %u node(s) on %s, %s, proto %s, %u channels, chunk %u B, burst %u packets (out-of-place)\n",
                   coll_op_name(op), n, (unsigned)nodes, spec,
                   op == COLL_ALLTOALL ? "direct (p2p to every peer at once)" : op == COLL_SENDRECV ? "p2p (to r+1, from r-1)"
                   : coll_op_has_root(op) ? "ring (a pipelined chain from the root)" : "ring",
                   coll_proto_name(sprotos[a]), chans, cc.chunk_bytes, gc.burst_pkts);
        printf("#%11s %13s %9s %7s %6s %10s %8s %8s %7s %7s\n", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "proto");
        printf("#%11s %13s %9s %7s %6s %10s %8s %8s %7s %7s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "");
    }
    for (uint64_t size = lo; size <= hi && nrows < MAX_ROWS; size *= step) {
        uint64_t count = size / esize;
        if (op == COLL_ALL_GATHER || op == COLL_REDUCE_SCATTER || op == COLL_ALLTOALL) count -= count % n;   /* nccl-tests: a whole block per rank */
        if (!count) continue;
        coll_result r;
        double sum_ps = 0;
        long long wrong = -1;
        coll_comm_set_check(cm, check && count * esize <= CHECK_MAX_BYTES);
        for (unsigned it = 0; it < warmup + iters; it++) {
            int bad = nvls ? coll_nvls_all_reduce(cm, count, &r, why, sizeof why)
                      : tree ? coll_tree_all_reduce(cm, count, &r, why, sizeof why) : coll_run(cm, op, count, &r, why, sizeof why);
            if (!bad && nodes > 1 && !sim_fabric_run_until_quiet(f, SIM_NS(20), 1000)) bad = 1, snprintf(why, sizeof why, "the links never went quiet within 20 us");
            if (!bad) bad = sim_fabric_check_all(f, true, why, sizeof why);   /* every rank calls it (over ranks: collective) */
            if (bad) {
                if (conserved) snprintf(cons_why, sizeof cons_why, "%s size %" PRIu64 ": %s", algos[a], size, why);
                conserved = false;
            }
            if (it >= warmup) sum_ps += (double)r.time_ps;
            if (r.checked) wrong = (long long)r.wrong;
        }
        row *w = &rows[nrows++];
        w->algo = algos[a];
        w->series = snames[a];
        w->proto = coll_proto_name(r.proto);
        w->predicted = nvls ? nvls_pred : tree ? pred_tree[r.proto] : pred_ring[r.proto] * row_fill(op, count * esize, chans,
                                                                                 coll_proto_slot_bytes(r.proto, cc.chunk_bytes, esize), n);
        w->bytes = count * esize;
        w->count = count;
        w->time_us = sum_ps / iters / 1e6;
        w->algbw = w->time_us > 0 ? (double)w->bytes / (w->time_us * 1e3) : 0;
        w->busbw = w->algbw * coll_busbw_factor(op, n);
        w->wrong = wrong;
        if (wrong > 0) all_checked_right = false;
        if (!c->quiet && root) {
            char wr[24];
            if (wrong < 0) snprintf(wr, sizeof wr, "N/A");
            else snprintf(wr, sizeof wr, "%lld", wrong);
            /* nccl-tests: no redop for all_gather, broadcast and alltoall; the root for broadcast and reduce, else -1 */
            bool no_redop = op == COLL_ALL_GATHER || op == COLL_BROADCAST || op == COLL_ALLTOALL;
            printf(" %11" PRIu64 " %13" PRIu64 " %9s %7s %6d %10.2f %8.2f %8.2f %7s %7s\n", w->bytes, count, coll_dtype_name(cc.dtype),
                   no_redop ? "none" : "sum", coll_op_has_root(op) ? (int)cc.root : -1, w->time_us, w->algbw, w->busbw, wr, w->proto);
            fflush(stdout);
        }
        sim_progress(c, (a + (hi > lo ? log((double)size / lo) / log((double)hi / lo) : 1)) / nalgo, "%s size %" PRIu64, algos[a], size);
    }
    }

    /* over ranks: rank 0 takes every link's and GPU's numbers (every rank's kernel stands at the same time) */
    sim_fabric_gather(f);
    c->sim_events = sim_fabric_events_all(f);
    sim_report_sim_json(c->report, "per_rank", sim_fabric_ranks_json(f));
    if (tr) {
        sim_report_sim_json(c->report, "partition", cJSON_CreateString(sim_param_str(p, "partition")));
        sim_report_sim_json(c->report, "lookahead_ns", cJSON_CreateNumber((double)sim_pdes_lookahead_ps(sim_fabric_pdes(f)) / 1000.0));
        unsigned cut = 0;
        for (uint32_t i = 0; i < t->n_links; i++) cut += node_part[t->links[i].a] != node_part[t->links[i].b];
        sim_report_sim_json(c->report, "cut_links", cJSON_CreateNumber(cut));
    }
    cJSON *jr = cJSON_CreateArray();
    double peak = 0, sum = 0;
    for (unsigned i = 0; i < nrows; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "bytes", (double)rows[i].bytes);
        cJSON_AddNumberToObject(o, "time_us", rows[i].time_us);
        cJSON_AddNumberToObject(o, "algbw_GBps", rows[i].algbw);
        cJSON_AddNumberToObject(o, "busbw_GBps", rows[i].busbw);
        cJSON_AddStringToObject(o, "algo", rows[i].algo);
        cJSON_AddStringToObject(o, "proto", rows[i].proto);
        if (rows[i].wrong < 0) cJSON_AddNullToObject(o, "wrong");
        else cJSON_AddNumberToObject(o, "wrong", (double)rows[i].wrong);
        cJSON_AddItemToArray(jr, o);
        if (rows[i].busbw > peak) peak = rows[i].busbw;
        sum += rows[i].busbw;
    }
    sim_report_metric_json(c->report, "rows", jr);
    sim_report_metric(c->report, "peak_busbw_GBps", peak);
    sim_report_metric(c->report, "avg_busbw_GBps", nrows ? sum / nrows : 0);
    sim_report_metric(c->report, "ranks", n);
    sim_report_metric(c->report, "channels", chans);
    sim_report_metric(c->report, "burst_pkts", gc.burst_pkts);
    sim_report_metric(c->report, "nvlink_goodput_GBps_per_gpu", bound);
    sim_report_metric(c->report, "nodes", (double)nodes);
    if (nodes > 1) {
        sim_report_metric(c->report, "nic_goodput_GBps", nic_goodput);
        sim_report_metric(c->report, "nic_bound_busbw_GBps", nic_bound);
        sim_report_metric(c->report, "mtu_bytes", mtu);
    }
    if (run_ring) sim_report_metric(c->report, "predicted_busbw_GBps", predicted);
    for (unsigned q = 0; q < COLL_PROTOS; q++) {   /* the per-protocol predictions the rows are held to */
        char name[64];
        snprintf(name, sizeof name, "predicted_busbw_GBps_%s", coll_proto_name((enum coll_proto)q));
        if (run_ring) sim_report_metric(c->report, name, pred_ring[q]);
        snprintf(name, sizeof name, "tree_predicted_busbw_GBps_%s", coll_proto_name((enum coll_proto)q));
        if (run_tree) sim_report_metric(c->report, name, pred_tree[q]);
    }
    if (run_tree) {
        sim_report_metric(c->report, "nodes_in_tree", coll_comm_nodes(cm));
        sim_report_metric(c->report, "tree_channels", coll_tree_channels(cm));
        sim_report_metric(c->report, "tree_predicted_busbw_GBps", tree_pred);
    }
    /* the packets the run moved (for make bench's pkts_per_s): every GPU's packets (a burst counts each of its
     * 128-byte packets), its simulated messages, and the NICs' InfiniBand data packets */
    uint64_t gpu_pkts = 0, gpu_msgs = 0, ib_pkts = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {   /* after sim_fabric_gather rank 0's replicas hold their owners' counters */
        if (!strcmp(t->nodes[i].kind->name, "nvgpu")) {
            nvgpu_stats gs = nvgpu_stats_get(sim_fabric_component(f, i));
            gpu_pkts += gs.pkts_sent, gpu_msgs += gs.msgs_sent;
        } else if (!strcmp(t->nodes[i].kind->name, "gpu_nic")) {
            ib_pkts += gpu_nic_stats_get(sim_fabric_component(f, i)).pkts_made;
        }
    }
    sim_report_metric(c->report, "gpu_pkts", (double)gpu_pkts);
    sim_report_metric(c->report, "gpu_msgs", (double)gpu_msgs);
    sim_report_metric(c->report, "ib_pkts", (double)ib_pkts);
    if (run_nvls) {
        sim_report_metric(c->report, "nvls_channels", coll_nvls_channels(cm));
        sim_report_metric(c->report, "nvls_predicted_busbw_GBps", nvls_pred);
    }
    char busiest[256];
    sim_report_metric(c->report, "max_link_util", sim_fabric_max_link_util(f, busiest, sizeof busiest));
    sim_report_metric_json(c->report, "busiest_link", cJSON_CreateString(busiest));
    cJSON *bottleneck = sim_fabric_bottleneck_json(f, 5);   /* over the whole sweep: every size's traffic */
    const char *btier = cJSON_GetStringValue(cJSON_GetObjectItem(bottleneck, "busiest_tier"));
    if (root) {   /* nccl-tests' footer, then where the link time went */
        unsigned wrong_rows = 0;
        for (unsigned i = 0; i < nrows; i++) wrong_rows += rows[i].wrong > 0;
        printf("# Out of bounds values : %u %s\n", wrong_rows, wrong_rows ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nrows ? sum / nrows : 0);
        printf("# Busiest tier         : %s (busiest link direction %s at %.1f %% of the run)\n", btier ? btier : "none", busiest,
               100.0 * sim_fabric_max_link_util(f, busiest, sizeof busiest));
    }
    sim_report_metric_json(c->report, "bottleneck", bottleneck);

    unsigned checked = 0;
    for (unsigned i = 0; i < nrows; i++) checked += rows[i].wrong >= 0;
    if (checked)   /* check=0 (or only sizes above the limit): nothing was compared, so nothing is claimed */
        sim_check(c->report, "no_wrong_results", all_checked_right,
              "%u of %u rows checked element by element against the reference (check=%d, sizes up to %u MiB)%s", checked, nrows, check,
              CHECK_MAX_BYTES >> 20,
              all_checked_right ? ", none wrong" : "; some elements differ");
    double worst = 0, nvls_worst_alg = 0;
    for (unsigned i = 0; i < nrows; i++)   /* NVLS's busbw is not wire bandwidth (system.md §4): its algbw is held to the links below */
        if (strcmp(rows[i].algo, "nvls")) worst = rows[i].busbw > worst ? rows[i].busbw : worst;
        else nvls_worst_alg = rows[i].algbw > nvls_worst_alg ? rows[i].algbw : nvls_worst_alg;
    if (run_ring || run_tree)
        sim_check(c->report, "busbw_within_nvlink_goodput", worst <= bound * 1.0001,
                  "peak busbw %.2f GB/s <= %u NVLinks x %.2f GB/s x 128/(128+%u) = %.2f GB/s", worst, ports, l0->GBps,
                  l0->overhead_bytes, bound);
    if (run_nvls)
        sim_check(c->report, "nvls_algbw_within_nvlink_goodput", nvls_worst_alg <= bound * 1.0001,
                  "nvls peak algbw %.2f GB/s <= %.2f GB/s: each GPU sends its whole buffer once over its NVLinks", nvls_worst_alg, bound);
    unsigned large = 0, inband = 0, tlarge = 0, tinband = 0, nlarge = 0, ninband = 0;
    double lo_ratio = INFINITY, tlo_ratio = INFINITY, nlo_ratio = INFINITY, nhi_ratio = 0;
    for (unsigned i = 0; i < nrows; i++)
        if (rows[i].bytes >= LARGE_BYTES && !strcmp(rows[i].algo, "nvls")) {
            double ratio = rows[i].busbw / nvls_pred;
            nlarge++;
            ninband += ratio >= NVLS_BAND_LOW && ratio <= 1.0001;
            if (ratio < nlo_ratio) nlo_ratio = ratio;
            if (ratio > nhi_ratio) nhi_ratio = ratio;
        } else if (rows[i].bytes >= LARGE_BYTES && !strcmp(rows[i].algo, "tree")) {
            if (nodes > 1) continue;   /* the tree's prediction is NVLink-only: across nodes it is not predicted yet */
            double ratio = rows[i].busbw / rows[i].predicted;
            tlarge++;
            tinband += ratio >= TREE_BAND_LOW && ratio <= 1.0001;
            if (ratio < tlo_ratio) tlo_ratio = ratio;
        } else if (rows[i].bytes >= LARGE_BYTES) {
            double ratio = rows[i].busbw / rows[i].predicted;
            large++;
            inband += ratio >= BAND_LOW && ratio <= 1.0001;
            if (ratio < lo_ratio) lo_ratio = ratio;
        }
    if (large)
        sim_check(c->report, "large_busbw_near_prediction", inband == large,
                  "%u of %u rows >= %u MiB have busbw/predicted (their protocol's) in [%.2f, 1]; lowest %.3f; predicted = %s, x the "
                  "protocol's wire efficiency%s: simple %.2f, ll %.2f, ll128 %.2f GB/s", inband, large, LARGE_BYTES >> 20, BAND_LOW, lo_ratio,
                  pred_why, coll_op_has_root(op) ? ", x the chain's fill S/C / (S/C + (n-2) chunk) per row" : "",
                  pred_ring[COLL_PROTO_SIMPLE], pred_ring[COLL_PROTO_LL], pred_ring[COLL_PROTO_LL128]);
    if (tlarge)
        sim_check(c->report, "tree_busbw_near_prediction", tinband == tlarge,
                  "%u of %u tree rows >= %u MiB have busbw/predicted (their protocol's) in [%.2f, 1]; lowest %.3f; predicted (simple) %.2f GB/s: %s (%u channels, "
                  "each S/C up and down every edge of its tree; ll, ll128: x their wire efficiency)", tinband, tlarge, LARGE_BYTES >> 20, TREE_BAND_LOW, tlo_ratio, tree_pred,
                  tree_why, coll_tree_channels(cm));
    if (nlarge)
        sim_check(c->report, "nvls_busbw_near_prediction", ninband == nlarge,
                  "%u of %u nvls rows >= %u MiB have busbw/predicted in [%.2f, 1] (%.3f .. %.3f); predicted %.2f GB/s: %s; "
                  "the ring's link bound would be %.3f of it", ninband, nlarge, LARGE_BYTES >> 20, NVLS_BAND_LOW, nlo_ratio, nhi_ratio,
                  nvls_pred, nvls_why, predicted / nvls_pred);
    /* the rings' placement: with a whole number of channels per NVLink every link direction carries the same share */
    uint64_t min_b = UINT64_MAX, max_b = 0;
    for (uint32_t l = 0; l < t->n_links; l++)
        for (unsigned d = 0; d < 2; d++) {
            sim_fabric_dir_stats ds;
            if (!sim_fabric_dir_stats_get(f, l, d, &ds)) continue;
            if (ds.window_bytes < min_b) min_b = ds.window_bytes;
            if (ds.window_bytes > max_b) max_b = ds.window_bytes;
        }
    sim_report_metric(c->report, "link_bytes_min_over_max", max_b ? (double)min_b / (double)max_b : 0);
    /* (a chain leaves its last link idle: root-1 sends the root nothing) */
    if (chans % ports == 0 && nrows && !run_tree && !coll_op_has_root(op) && nodes == 1)
        sim_check(c->report, "every_nvlink_carries_its_share", max_b && (double)min_b >= 0.9 * (double)max_b,
                  "%u channels on %u NVLinks per GPU: the least loaded link direction carried %.3f of the busiest's bytes (>= 0.9)",
                  chans, ports, max_b ? (double)min_b / (double)max_b : 0);
    if (nodes > 1) {
        double ring_peak = 0;
        for (unsigned i = 0; i < nrows; i++)
            if (!strcmp(rows[i].algo, "ring") && rows[i].busbw > ring_peak) ring_peak = rows[i].busbw;
        sim_check(c->report, "busbw_within_nic_goodput", ring_peak <= nic_bound * 1.0001,
                  "ring peak busbw %.2f GB/s <= %u channels / %u on the busiest NIC x %.2f GB/s NIC goodput (min of IB %u-byte MTU "
                  "packets and PCIe 128-byte TLPs) = %.2f GB/s", ring_peak, chans, nic_kmax, nic_goodput, mtu, nic_bound);
    }
    if (all_protos) {
        /* auto's estimate against the runs: per algorithm and size, the protocol coll_tune_proto picks must be
         * (about) the fastest of the three measured */
        unsigned groups = 0, near = 0;
        double worst_ratio = 1;
        char worst_why[160] = "";
        cJSON *ja = cJSON_CreateArray();
        for (unsigned i = 0; i < nrows; i++) {
            if (strcmp(rows[i].proto, "simple")) continue;   /* one group per (algo, size): its simple row leads */
            double best = INFINITY, est[COLL_PROTOS], chosen_us = -1;
            const char *best_p = "";
            enum coll_proto pick = coll_tune_proto(cm, !strcmp(rows[i].algo, "tree"), op, rows[i].count, est);
            for (unsigned j = 0; j < nrows; j++) {
                if (strcmp(rows[j].algo, rows[i].algo) || rows[j].bytes != rows[i].bytes) continue;
                if (rows[j].time_us < best) best = rows[j].time_us, best_p = rows[j].proto;
                if (!strcmp(rows[j].proto, coll_proto_name(pick))) chosen_us = rows[j].time_us;
            }
            double ratio = chosen_us / best;
            groups++;
            near += ratio <= AUTO_SLACK;
            if (ratio > worst_ratio)
                worst_ratio = ratio, snprintf(worst_why, sizeof worst_why, "%s %" PRIu64 " B: picks %s (%.2f us), %s is fastest (%.2f us)", rows[i].algo,
                                              rows[i].bytes, coll_proto_name(pick), chosen_us, best_p, best);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "algo", rows[i].algo);
            cJSON_AddNumberToObject(o, "bytes", (double)rows[i].bytes);
            cJSON_AddStringToObject(o, "auto", coll_proto_name(pick));
            cJSON_AddStringToObject(o, "fastest", best_p);
            for (unsigned q = 0; q < COLL_PROTOS; q++) {
                char name[32];
                snprintf(name, sizeof name, "estimate_us_%s", coll_proto_name((enum coll_proto)q));
                cJSON_AddNumberToObject(o, name, est[q]);
            }
            cJSON_AddItemToArray(ja, o);
        }
        sim_report_metric_json(c->report, "auto_vs_measured", ja);
        if (groups)
            sim_check(c->report, "auto_picks_near_fastest", near == groups,
                      "%u of %u (algorithm, size) groups: the protocol auto's estimate picks runs within %.2fx of the fastest measured; worst %.3fx%s%s",
                      near, groups, AUTO_SLACK, worst_ratio, *worst_why ? ": " : "", worst_why);
    }
    if (run_nvls && conserved) {   /* the switches' reduction units: every contribution consumed, each one result copy that arrived */
        uint64_t contribs = 0, consumed = 0, held = 0, results = 0, waits = 0, most = 0;
        for (uint32_t node = 0; node < t->n_nodes; node++) {
            if (strcmp(t->nodes[node].kind->name, "switch")) continue;
            const fabric_switch *sw = sim_fabric_component(f, node);
            if (!sw || !fabric_switch_has_nvls(sw)) continue;
            fabric_switch_stats st = fabric_switch_stats_get(sw);
            contribs += st.nvls_contribs, consumed += st.nvls_consumed, held += st.nvls_held, results += st.nvls_results;
            waits += st.nvls_table_waits;
            most = st.nvls_most_keys > most ? st.nvls_most_keys : most;
        }
        uint64_t got = coll_nvls_results_received(cm);
        sim_report_metric(c->report, "nvls_switch_results", (double)results);
        sim_report_metric(c->report, "nvls_table_waits", (double)waits);
        sim_report_metric(c->report, "nvls_most_keys", (double)most);   /* the most keys one switch held at once */
        if (contribs != consumed || held || got != consumed) {
            conserved = false;
            snprintf(cons_why, sizeof cons_why, "nvls switches: %" PRIu64 " contributions, %" PRIu64 " consumed, %" PRIu64 " held; the GPUs got "
                     "%" PRIu64 " result copies", contribs, consumed, held, got);
        }
    }
    sim_check(c->report, "conservation", conserved, "%s", conserved ? "every run: credits and slots returned, data sent = received, "
              "every packet freed, links and switches drained" : cons_why);
    char preds[256] = "", series[256] = "";   /* in the order of the series: auto's line is held to Simple's */
    for (unsigned a = 0; a < nalgo; a++) {
        enum coll_proto q = sprotos[a] == COLL_PROTO_AUTO ? COLL_PROTO_SIMPLE : sprotos[a];
        size_t lp = strlen(preds), ls = strlen(series);
        snprintf(preds + lp, sizeof preds - lp, "%s%.3f", a ? " " : "", !strcmp(algos[a], "nvls") ? nvls_pred : strcmp(algos[a], "tree") ? pred_ring[q] : pred_tree[q]);
        snprintf(series + ls, sizeof series - ls, "%s%s", a ? " " : "", snames[a]);
    }
    if (root) write_plot(c, rows, nrows, coll_op_name(op), proto, bound, series, preds);
    coll_comm_free(cm);
    sim_fabric_free(f);
    free(node_part);
    topo_free(t);
}

SIM_TEST_RANKED(nccl_tests, "nccl-tests' busbw table from ring, tree and NVLS collectives on simulated NVLink/NVSwitch (models/collective)", nccl_params,
         "minbytes=64 maxbytes=64M stepfactor=16", nccl_run)
