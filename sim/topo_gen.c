/* Built-in generators. Every one names its endpoints h0..h(E-1) first (so
 * endpoint index i is node h<i>), then its switches; direct networks (ring,
 * fullmesh, mesh, torus) put one endpoint on each switch, BookSim-style. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"

#define GEN_MAX_NODES (1u << 20)

static const char gen_help[] =
    "ring:N (3..4096), fullmesh:N (2..64), star:N (2..64), mesh2d:RxC (1..256 each), torus2d:RxC (3..256 each), "
    "torus3d:XxYxZ (3..64 each), fattree:K (even, 2..64), leafspine:LEAVES,SPINES,HOSTS_PER_LEAF[,UPLINKS] "
    "(leaf radix HOSTS+SPINES*UPLINKS <= 64, spine radix LEAVES*UPLINKS <= 64); each of these may end in ,kinds=auto|generic|network "
    "(auto: ib-* links make ib_rnic/ib_switch nodes, roce-*/eth-* links roce_nic/eth_switch, when models/network registered them), "
    "host-gpu:gen=G,lanes=L (G 1..6, L 1|2|4|8|16; kinds host and gpu: models/server), "
    "server:gpus=G,nics=N,gen=5,switches=S[,lanes=L] (an HGX-like server: G 1..32 GPUs spread evenly under S 1..16 PCIe switches, "
    "N NICs spread the same way, N 0 or a multiple of S; kinds server_host, pcie_switch, gpu, nic), "
    "dgx-h100[:nodes=N[,oversubscription=R]] (8 nvgpu H100s, 4 NVSwitch-3 chips as switches, 18 nvlink4 links per GPU split 5/4/4/5; "
    "kind nvgpu: models/collective; nodes=N (1..256) joins N of them rail-optimised: one gpu_nic per GPU on pcie-gen5-x16, ib-ndr leaves "
    "per rail and spines above, non-blocking unless oversubscription=R), dgx-a100[:...] (the same with 8 A100s, 6 NVSwitch-2, 12 nvlink3 per GPU, "
    "pcie-gen4-x16, ib-hdr)";

const char *topo_generators_help(void) { return gen_help; }

/* The generators' own adds cannot fail on sizes they checked: a failure is a bug. */
static uint32_t add_node(topo *t, const char *kind, unsigned ports, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static uint32_t add_node(topo *t, const char *kind, unsigned ports, const char *fmt, ...)
{
    char name[TOPO_NAME_MAX + 1], pbuf[32], err[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(pbuf, sizeof pbuf, "ports=%u", ports);
    const char *params[2] = { pbuf, NULL };
    int id = topo_add_node(t, name, kind, ports ? params : NULL, err, sizeof err);
    if (id < 0) sim_fatal("generator: %s", err);
    return (uint32_t)id;
}

/* Separate from add_node's call: adding may move t->nodes. */
static void set_level(topo *t, uint32_t id, unsigned level) { t->nodes[id].level = (uint8_t)level; }

static topo_link *add_link(topo *t, uint32_t a, uint32_t b)
{
    char err[1024];
    int li = topo_add_link(t, t->nodes[a].name, t->nodes[b].name, NULL, -1, -1, err, sizeof err);
    if (li < 0) sim_fatal("generator: %s", err);
    return &t->links[li];
}

/* Hosts h0..h(n-1), each on its own switch s<i> (direct networks). */
static void hosts_on_switches(topo *t, unsigned n, unsigned switch_ports)
{
    for (unsigned i = 0; i < n; i++) add_node(t, "endpoint", 0, "h%u", i);
    for (unsigned i = 0; i < n; i++) add_node(t, "switch", switch_ports, "s%u", i);
    for (unsigned i = 0; i < n; i++) add_link(t, i, n + i);
}

/* Mesh or torus of dims[0] x dims[1] x dims[2]; switch i at
 * x + X (y + Y z). A link's a -> b is its dimension's + direction. */
static void grid(topo *t, const int dims[3], bool torus)
{
    unsigned n = (unsigned)(dims[0] * dims[1] * dims[2]);
    unsigned ndims = dims[2] > 1 ? 3 : dims[1] > 1 ? 2 : 1;
    hosts_on_switches(t, n, 1 + 2 * ndims);
    memcpy(t->dims, dims, sizeof t->dims);
    t->torus = torus;
    for (unsigned i = 0; i < n; i++) {
        int c[3] = { (int)i % dims[0], (int)i / dims[0] % dims[1], (int)i / (dims[0] * dims[1]) };
        for (unsigned d = 0; d < 3; d++) t->nodes[i].coord[d] = t->nodes[n + i].coord[d] = (int16_t)c[d];
    }
    for (unsigned i = 0; i < n; i++)
        for (unsigned d = 0; d < 3; d++) {
            int c = t->nodes[n + i].coord[d];
            if (dims[d] == 1 || (!torus && c + 1 == dims[d])) continue;
            int stride = d == 0 ? 1 : d == 1 ? dims[0] : dims[0] * dims[1];
            unsigned j = c + 1 == dims[d] ? i - (unsigned)(c * stride) : i + (unsigned)stride;
            topo_link *l = add_link(t, n + i, n + j);
            l->dim = (int8_t)d;
            l->wrap = c + 1 == dims[d];
        }
}

static void fattree(topo *t, unsigned k)
{
    unsigned h = k / 2, hosts = k * h * h;
    for (unsigned i = 0; i < hosts; i++) set_level(t, add_node(t, "endpoint", 0, "h%u", i), 0);
    uint32_t edge0 = t->n_nodes;
    for (unsigned p = 0; p < k; p++)
        for (unsigned e = 0; e < h; e++) set_level(t, add_node(t, "switch", k, "e%u_%u", p, e), 1);
    uint32_t agg0 = t->n_nodes;
    for (unsigned p = 0; p < k; p++)
        for (unsigned a = 0; a < h; a++) set_level(t, add_node(t, "switch", k, "a%u_%u", p, a), 2);
    uint32_t core0 = t->n_nodes;
    for (unsigned c = 0; c < h * h; c++) set_level(t, add_node(t, "switch", k, "c%u", c), 3);
    for (unsigned i = 0; i < hosts; i++) add_link(t, i, edge0 + i / h);
    for (unsigned p = 0; p < k; p++)
        for (unsigned e = 0; e < h; e++)
            for (unsigned a = 0; a < h; a++) add_link(t, edge0 + p * h + e, agg0 + p * h + a);
    for (unsigned p = 0; p < k; p++)
        for (unsigned a = 0; a < h; a++)
            for (unsigned c = 0; c < h; c++) add_link(t, agg0 + p * h + a, core0 + a * h + c);
}

static void leafspine(topo *t, unsigned leaves, unsigned spines, unsigned hpl, unsigned up)
{
    for (unsigned i = 0; i < leaves * hpl; i++) set_level(t, add_node(t, "endpoint", 0, "h%u", i), 0);
    uint32_t leaf0 = t->n_nodes;
    for (unsigned l = 0; l < leaves; l++) set_level(t, add_node(t, "switch", hpl + spines * up, "leaf%u", l), 1);
    uint32_t spine0 = t->n_nodes;
    for (unsigned s = 0; s < spines; s++) set_level(t, add_node(t, "switch", leaves * up, "spine%u", s), 2);
    for (unsigned i = 0; i < leaves * hpl; i++) add_link(t, i, leaf0 + i / hpl);
    for (unsigned l = 0; l < leaves; l++)
        for (unsigned s = 0; s < spines; s++)
            for (unsigned u = 0; u < up; u++) add_link(t, leaf0 + l, spine0 + s);
}

static unsigned read_uint(const char *s, unsigned *v);

/* host-gpu:gen=G,lanes=L -- one host (host0), one GPU (gpu0), one PCIe link
 * of preset pcie-genG-xL. The PCIe ports put their own framing, DLLPs and
 * SKPs on the wire, so the link runs at the PHY's raw rate; that is the
 * preset's for Gen1-5, while the Gen6 preset already takes 242/256 for its
 * flits, which the PCIe port models itself: the Gen6 link gets the raw rate
 * (64 GT/s x lanes / 8, 1b/1b) instead. */
/* One PCIe link of preset pcie-genG-xL. The PCIe ports put their own
 * framing, DLLPs and SKPs on the wire, so the link runs at the PHY's raw
 * rate; that is the preset's for Gen1-5, while the Gen6 preset already takes
 * 242/256 for its flits, which the PCIe port models itself: the Gen6 link
 * gets the raw rate (64 GT/s x lanes / 8, 1b/1b) instead. */
static void pcie_link(topo *t, uint32_t a, uint32_t b, unsigned gen, unsigned lanes)
{
    char preset[32], lerr[1024];
    snprintf(preset, sizeof preset, "pcie-gen%u-x%u", gen, lanes);
    double GBps = gen == 6 ? 64.0 * lanes / 8.0 : -1;
    if (topo_add_link(t, t->nodes[a].name, t->nodes[b].name, preset, -1, GBps, lerr, sizeof lerr) < 0) sim_fatal("generator: %s", lerr);
}

/* key=value,... into vals by keys (allowed: the keys); have[i] says given. */
static topo *read_kv(topo *t, const char *gen, const char *args, const char *const *keys, unsigned n, unsigned *vals, bool *have,
                     const char *allowed, char *err, size_t errlen)
{
    const char *s = args;
    while (*s) {
        unsigned i = 0;
        while (i < n && (strncmp(s, keys[i], strlen(keys[i])) || s[strlen(keys[i])] != '=')) i++;
        if (i == n) return topo_fail(t, err, errlen, "%s: bad argument '%.40s'; allowed: %s", gen, s, allowed);
        s += strlen(keys[i]) + 1;
        unsigned len = read_uint(s, &vals[i]);
        if (!len) return topo_fail(t, err, errlen, "%s: bad number in '%.40s'; allowed: %s", gen, args, allowed);
        have[i] = true;
        s += len;
        if (*s == ',') s++;
        else if (*s) return topo_fail(t, err, errlen, "%s: bad separator in '%.40s'; allowed: %s", gen, args, allowed);
    }
    return t;
}

static bool lanes_ok(unsigned l) { return l == 1 || l == 2 || l == 4 || l == 8 || l == 16; }

/* host-gpu:gen=G,lanes=L -- one host (host0), one GPU (gpu0), one PCIe link. */
static topo *host_gpu(topo *t, const char *args, char *err, size_t errlen)
{
    static const char *const keys[] = { "gen", "lanes" };
    unsigned v[2] = { 0, 0 };
    bool have[2] = { false, false };
    if (!read_kv(t, "host-gpu", args, keys, 2, v, have, "gen=G,lanes=L", err, errlen)) return NULL;
    unsigned gen = v[0], lanes = v[1];
    if (!have[0] || !have[1]) return topo_fail(t, err, errlen, "host-gpu: needs gen=G,lanes=L (G 1..6, L 1|2|4|8|16)");
    if (gen < 1 || gen > 6) return topo_fail(t, err, errlen, "host-gpu: gen=%u out of range; allowed: 1..6", gen);
    if (!lanes_ok(lanes)) return topo_fail(t, err, errlen, "host-gpu: lanes=%u; allowed: 1, 2, 4, 8, 16", lanes);
    if (!topo_kind_find("host") || !topo_kind_find("gpu"))
        return topo_fail(t, err, errlen, "host-gpu: kinds host and gpu are not registered (server_register_kinds, models/server)");
    snprintf(t->generator, sizeof t->generator, "host-gpu");
    set_level(t, add_node(t, "host", 1, "host0"), 1);
    set_level(t, add_node(t, "gpu", 1, "gpu0"), 0);
    pcie_link(t, 0, 1, gen, lanes);
    if (topo_finish(t, err, errlen)) sim_fatal("generator host-gpu made a bad graph: %s", err);
    return t;
}

/* server:gpus=G,nics=N,gen=5,switches=S[,lanes=L] -- shaped like an HGX H100
 * baseboard on a two-socket host: host0 (kind server_host: one root complex;
 * root ports rp0..rp(S/2-1) are socket 0's, the rest socket 1's, NUMA left
 * out) with one root port per PCIe switch sw0..sw(S-1), GPUs gpu0.. spread
 * evenly, gpu i under switch i / (G/S) (a switch's upstream port is p0, its
 * GPUs on p1..), NICs nic0.. the same way after them (DGX H100: 8 GPUs and
 * 8 NICs under 4 switches, two GPU/NIC pairs each: nic i beside gpu i when
 * G = N). Every link pcie-genG-xL. */
static topo *server(topo *t, const char *args, char *err, size_t errlen)
{
    static const char *const keys[] = { "gpus", "nics", "gen", "switches", "lanes" };
    static const char allowed[] = "gpus=G,nics=N,gen=1..6,switches=S[,lanes=1|2|4|8|16]";
    unsigned v[5] = { 8, 0, 5, 4, 16 };
    bool have[5] = { false, false, false, false, false };
    if (!read_kv(t, "server", args, keys, 5, v, have, allowed, err, errlen)) return NULL;
    unsigned gpus = v[0], nics = v[1], gen = v[2], sw = v[3], lanes = v[4];
    if (gpus < 1 || gpus > 32) return topo_fail(t, err, errlen, "server: gpus=%u out of range; allowed: 1..32", gpus);
    if (sw < 1 || sw > 16) return topo_fail(t, err, errlen, "server: switches=%u out of range; allowed: 1..16", sw);
    if (gpus % sw) return topo_fail(t, err, errlen, "server: gpus=%u over switches=%u is uneven; allowed: gpus a multiple of switches", gpus, sw);
    if (nics % sw || nics > 32)
        return topo_fail(t, err, errlen, "server: nics=%u over switches=%u; allowed: 0 or a multiple of switches (%u, %u, ...), at most 32", nics, sw, sw, 2 * sw);
    if (gen < 1 || gen > 6) return topo_fail(t, err, errlen, "server: gen=%u out of range; allowed: 1..6", gen);
    if (!lanes_ok(lanes)) return topo_fail(t, err, errlen, "server: lanes=%u; allowed: 1, 2, 4, 8, 16", lanes);
    if (!topo_kind_find("server_host") || !topo_kind_find("pcie_switch") || !topo_kind_find("gpu"))
        return topo_fail(t, err, errlen, "server: kinds server_host, pcie_switch and gpu are not registered (server_register_kinds, models/server)");
    if (nics && !topo_kind_find("nic"))
        return topo_fail(t, err, errlen, "server: nics=%u: kind nic is not registered (server_register_kinds, models/server)", nics);
    snprintf(t->generator, sizeof t->generator, "server");
    unsigned per = gpus / sw, nper = nics / sw;
    set_level(t, add_node(t, "server_host", sw, "host0"), 2);
    for (unsigned s = 0; s < sw; s++) set_level(t, add_node(t, "pcie_switch", 1 + per + nper, "sw%u", s), 1);
    for (unsigned g = 0; g < gpus; g++) set_level(t, add_node(t, "gpu", 1, "gpu%u", g), 0);
    for (unsigned i = 0; i < nics; i++) set_level(t, add_node(t, "nic", 1, "nic%u", i), 0);
    for (unsigned s = 0; s < sw; s++) pcie_link(t, 0, 1 + s, gen, lanes);
    for (unsigned g = 0; g < gpus; g++) pcie_link(t, 1 + g / per, 1 + sw + g, gen, lanes);
    for (unsigned i = 0; i < nics; i++) pcie_link(t, 1 + i / nper, 1 + sw + gpus + i, gen, lanes);
    if (topo_finish(t, err, errlen)) sim_fatal("generator server made a bad graph: %s", err);
    return t;
}

/* dgx-h100 / dgx-a100 -- DGX servers (docs/topology.md, "DGX presets").
 * nodes=1 (the default): one NVLink domain, gpu0..gpu7 (kind nvgpu) and the
 * NVSwitch chips nvs0.. (kind switch); every GPU's links spread over the
 * chips in port order (H100: 18 nvlink4, 5/4/4/5 over 4 NVSwitch-3; A100:
 * 12 nvlink3, 2 on each of 6 NVSwitch-2), so port p of every GPU is on the
 * same switch; NVSwitch 3 has nvls=1 (in-switch reduction), NVSwitch 2 not.
 * The links are the machine's whatever link= says.
 * nodes=N > 1: N such domains named n<i>-gpu<k>, n<i>-nvs<s>, each GPU with
 * one more port (nvl18 / nvl12: the kind has one port prefix) on a PCIe link
 * (pcie5-x16 / pcie4-x16) to its own NIC n<i>-nic<k> (kind gpu_nic,
 * models/network: p0 PCIe, p1 InfiniBand ib-ndr / ib-hdr), and a
 * rail-optimised two-tier IB fabric: NIC k of every node on a leaf of rail k
 * (rail k has ceil(N/32) leaves leaf<k>_<j>, 32 nodes each at most), every
 * leaf linked to every spine spine<s>; a leaf of H nodes has H / R uplinks
 * (oversubscription=R, default 1: non-blocking), m parallel links to each
 * of U / m spines, m the largest divisor of U that keeps a spine within 64
 * ports. No PCIe switch, CPU or host memory: GPU and NIC are joined directly. */
typedef struct dgx_shape {
    const char *name, *gpu_link, *pcie, *ib;
    unsigned n_switches, links_per_gpu;
    unsigned per_switch[6];
    bool nvls;                  /* NVSwitch 3's in-switch reduction (NVLink SHARP): the switches get nvls=1 */
} dgx_shape;

static const dgx_shape dgx_h100_shape = { "dgx-h100", "nvlink4", "pcie-gen5-x16", "ib-ndr", 4, 18, { 5, 4, 4, 5 }, true };
static const dgx_shape dgx_a100_shape = { "dgx-a100", "nvlink3", "pcie-gen4-x16", "ib-hdr", 6, 12, { 2, 2, 2, 2, 2, 2 }, false };

/* An NVSwitch chip: a fabric switch, with its reduction unit where the generation has one. */
static uint32_t add_nvswitch(topo *t, const dgx_shape *sh, unsigned ports, const char *name)
{
    char pbuf[32], err[512];
    snprintf(pbuf, sizeof pbuf, "ports=%u", ports);
    const char *params[3] = { pbuf, sh->nvls ? "nvls=1" : NULL, NULL };
    int id = topo_add_node(t, name, "switch", params, err, sizeof err);
    if (id < 0) sim_fatal("generator: %s", err);
    return (uint32_t)id;
}

#define DGX_GPUS 8u
#define DGX_MAX_NODES 256u          /* 8 rails x 8 leaves of 32 nodes: spines of 64 ports with one link per leaf */
#define DGX_NODES_PER_LEAF 32u      /* a leaf of 64 ports: 32 down, 32 up at 1:1 */

static void named_link(topo *t, const char *a, const char *b, const char *preset)
{
    char lerr[1024];
    if (topo_add_link(t, a, b, preset, -1, -1, lerr, sizeof lerr) < 0) sim_fatal("generator: %s", lerr);
}

static unsigned dgx_leaves_per_rail(unsigned nodes) { return (nodes + DGX_NODES_PER_LEAF - 1) / DGX_NODES_PER_LEAF; }

static topo *dgx(topo *t, const dgx_shape *sh, const char *args, char *err, size_t errlen)
{
    static const char *const keys[] = { "nodes", "oversubscription", "gpus" };
    static const char allowed[] = "nodes=N (1..256), oversubscription=R (1, 2, 4, ...: divides the nodes per leaf), gpus=G (1..8 per node)";
    unsigned v[3] = { 1, 1, DGX_GPUS };
    bool have[3] = { false, false, false };
    if (!read_kv(t, sh->name, args, keys, 3, v, have, allowed, err, errlen)) return NULL;
    unsigned nodes = v[0], over = v[1], G = v[2];
    if (G < 1 || G > DGX_GPUS) return topo_fail(t, err, errlen, "%s: gpus=%u out of range; allowed: 1..%u per node", sh->name, G, DGX_GPUS);
    if (G * nodes < 2) return topo_fail(t, err, errlen, "%s: gpus=%u on one node is one GPU; allowed: at least 2 GPUs in all", sh->name, G);
    if (nodes < 1 || nodes > DGX_MAX_NODES) return topo_fail(t, err, errlen, "%s: nodes=%u out of range; allowed: 1..%u", sh->name, nodes, DGX_MAX_NODES);
    if (!topo_kind_find("nvgpu"))
        return topo_fail(t, err, errlen, "%s: kind nvgpu is not registered (collective_register_kinds, models/collective)", sh->name);
    unsigned per_leaf = nodes < DGX_NODES_PER_LEAF ? nodes : DGX_NODES_PER_LEAF, L = dgx_leaves_per_rail(nodes);
    if (nodes > 1) {
        if (!topo_kind_find("gpu_nic") || !topo_kind_find("ib_switch"))
            return topo_fail(t, err, errlen, "%s: nodes=%u: kinds gpu_nic and ib_switch are not registered (network_register_kinds, models/network)",
                             sh->name, nodes);
        if (over < 1 || per_leaf % over)
            return topo_fail(t, err, errlen, "%s: oversubscription=%u; allowed: a divisor of the %u nodes per leaf", sh->name, over, per_leaf);
    } else if (have[1]) {
        return topo_fail(t, err, errlen, "%s: oversubscription=%u with one node: there is no network; allowed with nodes=2..%u", sh->name, over,
                         DGX_MAX_NODES);
    }
    snprintf(t->generator, sizeof t->generator, "%s", sh->name);
    bool multi = nodes > 1;
    char a[64], b[64];
    /* GPUs first: endpoint index = node x 8 + GPU */
    for (unsigned i = 0; i < nodes; i++)
        for (unsigned g = 0; g < G; g++) {
            char name[32];
            if (multi) snprintf(name, sizeof name, "n%u-gpu%u", i, g);
            else snprintf(name, sizeof name, "gpu%u", g);
            set_level(t, add_node(t, "nvgpu", sh->links_per_gpu + multi, "%s", name), 0);
        }
    for (unsigned i = 0; i < nodes; i++)
        for (unsigned s = 0; s < sh->n_switches; s++) {
            char name[32];
            if (multi) snprintf(name, sizeof name, "n%u-nvs%u", i, s);
            else snprintf(name, sizeof name, "nvs%u", s);
            set_level(t, add_nvswitch(t, sh, G * sh->per_switch[s], name), 1);
        }
    for (unsigned i = 0; i < nodes; i++)
        for (unsigned g = 0; g < G; g++)
            for (unsigned s = 0, port = 0; s < sh->n_switches; s++)
                for (unsigned j = 0; j < sh->per_switch[s]; j++, port++) {
                    char pa[8] = "", pb[8] = "";
                    if (multi) snprintf(pa, sizeof pa, "n%u-", i), snprintf(pb, sizeof pb, "n%u-", i);
                    snprintf(a, sizeof a, "%sgpu%u.nvl%u", pa, g, port);
                    snprintf(b, sizeof b, "%snvs%u.p%u", pb, s, g * sh->per_switch[s] + j);
                    named_link(t, a, b, sh->gpu_link);
                }
    if (multi) {
        unsigned up = per_leaf / over, m = 1;
        for (unsigned d = 1; d <= up; d++)
            if (up % d == 0 && G * L * d <= TOPO_MAX_PORTS) m = d;
        unsigned spines = up / m;
        for (unsigned i = 0; i < nodes; i++)
            for (unsigned g = 0; g < G; g++) set_level(t, add_node(t, "gpu_nic", 2, "n%u-nic%u", i, g), 1);
        for (unsigned r = 0; r < G; r++)
            for (unsigned j = 0; j < L; j++) set_level(t, add_node(t, "ib_switch", per_leaf + up, "leaf%u_%u", r, j), 2);
        for (unsigned s = 0; s < spines; s++) set_level(t, add_node(t, "ib_switch", G * L * m, "spine%u", s), 3);
        for (unsigned i = 0; i < nodes; i++)
            for (unsigned g = 0; g < G; g++) {
                snprintf(a, sizeof a, "n%u-gpu%u.nvl%u", i, g, sh->links_per_gpu);
                snprintf(b, sizeof b, "n%u-nic%u.p0", i, g);
                named_link(t, a, b, sh->pcie);
                snprintf(a, sizeof a, "n%u-nic%u.p1", i, g);
                snprintf(b, sizeof b, "leaf%u_%u.p%u", g, i / DGX_NODES_PER_LEAF, i % DGX_NODES_PER_LEAF);
                named_link(t, a, b, sh->ib);
            }
        for (unsigned r = 0; r < G; r++)
            for (unsigned j = 0; j < L; j++)
                for (unsigned s = 0; s < spines; s++)
                    for (unsigned u = 0; u < m; u++) {
                        snprintf(a, sizeof a, "leaf%u_%u.p%u", r, j, per_leaf + s * m + u);
                        snprintf(b, sizeof b, "spine%u.p%u", s, (r * L + j) * m + u);
                        named_link(t, a, b, sh->ib);
                    }
    }
    if (topo_finish(t, err, errlen)) sim_fatal("generator %s made a bad graph: %s", sh->name, err);
    return t;
}

/* Node kinds from the link preset's family (docs/topology.md, "Node kinds
 * from the link preset"): InfiniBand presets give ib_rnic endpoints and
 * ib_switch switches, Ethernet/RoCE ones roce_nic and eth_switch, when those
 * kinds are registered (models/network: network_register_kinds()) -- auto;
 * `generic` keeps endpoint/switch; `network` insists (an error if it cannot). */
enum gen_kinds_mode { GEN_KINDS_AUTO, GEN_KINDS_GENERIC, GEN_KINDS_NETWORK };

static int network_kinds(topo *t, enum gen_kinds_mode mode, const char **ep, const char **sw, char *err, size_t errlen)
{
    if (mode == GEN_KINDS_GENERIC) return 0;
    enum topo_preset_family fam = topo_preset_family(t->default_preset);
    const char *e = fam == TOPO_FAMILY_IB ? "ib_rnic" : fam == TOPO_FAMILY_ETH ? "roce_nic" : NULL;
    const char *s = fam == TOPO_FAMILY_IB ? "ib_switch" : fam == TOPO_FAMILY_ETH ? "eth_switch" : NULL;
    if (e && topo_kind_find(e) && topo_kind_find(s)) {
        *ep = e, *sw = s;
        return 0;
    }
    if (mode == GEN_KINDS_AUTO) return 0;
    if (!e) {
        topo_fail(t, err, errlen, "kinds=network: link preset %s has no network kinds; allowed: an ib-*, roce-* or eth-* preset, or kinds=generic",
                  t->default_preset ? t->default_preset->name : "(none)");
        return -1;
    }
    topo_fail(t, err, errlen, "kinds=network: kinds %s and %s are not registered (network_register_kinds, models/network)", e, s);
    return -1;
}

/* The generic kinds the generator used, to the network ones (same radix limits, same terminal/forwarding roles). */
static void relabel(topo *t, const char *ep, const char *sw)
{
    const topo_kind *ek = topo_kind_find(ep), *sk = topo_kind_find(sw);
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        const topo_kind *k = t->nodes[i].kind;
        if (!strcmp(k->name, "endpoint")) t->nodes[i].kind = ek;
        else if (!strcmp(k->name, "switch")) t->nodes[i].kind = sk;
    }
}

/* Strict decimal: digits only, at most 7 of them. Returns chars read or 0. */
static unsigned read_uint(const char *s, unsigned *v)
{
    unsigned n = 0;
    *v = 0;
    while (isdigit((unsigned char)s[n]) && n < 8) *v = *v * 10 + (unsigned)(s[n++] - '0');
    return n && n < 8 ? n : 0;
}

/* Parses "a<sep>b<sep>c" into exactly want (or up to want, at least min) numbers. */
static int read_list(const char *s, char sep, unsigned min, unsigned want, unsigned *v)
{
    unsigned got = 0;
    for (;;) {
        unsigned n = read_uint(s, &v[got]);
        if (!n) return -1;
        s += n;
        got++;
        if (!*s) break;
        if (*s != sep || got == want) return -1;
        s++;
    }
    return got >= min ? (int)got : -1;
}

topo *topo_generate(const char *spec, const char *default_preset, char *err, size_t errlen)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon) {
        snprintf(err, errlen, "'%s' is not a generator; allowed: %s", spec ? spec : "", gen_help);
        return NULL;
    }
    char name[16];
    size_t nlen = (size_t)(colon - spec);
    snprintf(name, sizeof name, "%.*s", nlen < sizeof name ? (int)nlen : (int)sizeof name - 1, spec);
    const char *args = colon + 1;
    topo *t = topo_new(default_preset, err, errlen);
    if (!t) return NULL;
    if (nlen == 8 && !strncmp(spec, "host-gpu", 8)) return host_gpu(t, args, err, errlen);
    if (nlen == 6 && !strncmp(spec, "server", 6)) return server(t, args, err, errlen);
    if (nlen == 8 && !strncmp(spec, "dgx-h100", 8)) return dgx(t, &dgx_h100_shape, args, err, errlen);
    if (nlen == 8 && !strncmp(spec, "dgx-a100", 8)) return dgx(t, &dgx_a100_shape, args, err, errlen);
    unsigned v[4] = { 0, 0, 0, 1 };
    char sep = !strcmp(name, "leafspine") ? ',' : 'x';
    unsigned want = !strcmp(name, "mesh2d") || !strcmp(name, "torus2d") ? 2
                    : !strcmp(name, "torus3d")                           ? 3
                    : sep == ','                                         ? 4
                                                                         : 1;
    unsigned min = sep == ',' ? 3 : want;
    static const char *const known[] = { "ring", "fullmesh", "star", "mesh2d", "torus2d", "torus3d", "fattree", "leafspine" };
    bool is_known = false;
    for (unsigned i = 0; i < sizeof known / sizeof *known; i++)
        if (nlen == strlen(known[i]) && !strncmp(spec, known[i], nlen)) is_known = true;
    if (!is_known) return topo_fail(t, err, errlen, "unknown generator '%.*s'; allowed: %s", (int)(nlen > 40 ? 40 : nlen), spec, gen_help);
    /* an optional last ",kinds=auto|generic|network": which kinds the generator's nodes take */
    char sizes[64];
    enum gen_kinds_mode kmode = GEN_KINDS_AUTO;
    const char *kk = strstr(args, "kinds=");
    if (kk) {
        if (kk == args || kk[-1] != ',')
            return topo_fail(t, err, errlen, "%s: kinds= must come last, after a comma ('%.40s'); allowed: %s", name, args, gen_help);
        if (!strcmp(kk + 6, "auto")) kmode = GEN_KINDS_AUTO;
        else if (!strcmp(kk + 6, "generic")) kmode = GEN_KINDS_GENERIC;
        else if (!strcmp(kk + 6, "network")) kmode = GEN_KINDS_NETWORK;
        else return topo_fail(t, err, errlen, "%s: kinds=%.20s; allowed: auto, generic, network", name, kk + 6);
        size_t slen = (size_t)(kk - 1 - args);
        if (slen >= sizeof sizes) return topo_fail(t, err, errlen, "%s: bad sizes '%.40s'; allowed: %s", name, args, gen_help);
        memcpy(sizes, args, slen);
        sizes[slen] = 0;
        args = sizes;
    }
    const char *ep_kind = "endpoint", *sw_kind = "switch";
    if (network_kinds(t, kmode, &ep_kind, &sw_kind, err, errlen)) return NULL;
    if (read_list(args, sep, min, want, v) < 0)
        return topo_fail(t, err, errlen, "%s: bad sizes '%s'; allowed: %s", name, args, gen_help);
    snprintf(t->generator, sizeof t->generator, "%s", name);
#define RANGE(x, lo, hi, what)                                                                                   \
    if ((x) < (lo) || (x) > (hi))                                                                                \
        return topo_fail(t, err, errlen, "%s: %s=%u out of range; allowed: %u..%u", name, what, (x), (unsigned)(lo), \
                        (unsigned)(hi));
    if (!strcmp(name, "ring")) {
        RANGE(v[0], 3, 4096, "N");
        int dims[3] = { (int)v[0], 1, 1 };
        grid(t, dims, true);   /* a ring is a 1-D torus: dor and its dateline apply */
    } else if (!strcmp(name, "fullmesh")) {
        RANGE(v[0], 2, TOPO_MAX_PORTS, "N");
        hosts_on_switches(t, v[0], v[0]);
        for (unsigned i = 0; i < v[0]; i++)
            for (unsigned j = i + 1; j < v[0]; j++) add_link(t, v[0] + i, v[0] + j);
    } else if (!strcmp(name, "star")) {
        RANGE(v[0], 2, TOPO_MAX_PORTS, "N");
        for (unsigned i = 0; i < v[0]; i++) set_level(t, add_node(t, "endpoint", 0, "h%u", i), 0);
        uint32_t s = add_node(t, "switch", v[0], "s0");
        t->nodes[s].level = 1;
        for (unsigned i = 0; i < v[0]; i++) add_link(t, i, s);
    } else if (!strcmp(name, "mesh2d") || !strcmp(name, "torus2d")) {
        bool torus = name[0] == 't';
        RANGE(v[0], torus ? 3 : 1, 256, "R");
        RANGE(v[1], torus ? 3 : 1, 256, "C");
        if (v[0] * v[1] < 2) return topo_fail(t, err, errlen, "%s: %ux%u has one node; allowed: at least 2", name, v[0], v[1]);
        int dims[3] = { (int)v[1], (int)v[0], 1 };   /* x = column (C), y = row (R) */
        grid(t, dims, torus);
    } else if (!strcmp(name, "torus3d")) {
        for (unsigned d = 0; d < 3; d++) RANGE(v[d], 3, 64, d == 0 ? "X" : d == 1 ? "Y" : "Z");
        int dims[3] = { (int)v[0], (int)v[1], (int)v[2] };
        grid(t, dims, true);
    } else if (!strcmp(name, "fattree")) {
        RANGE(v[0], 2, TOPO_MAX_PORTS, "K");
        if (v[0] % 2) return topo_fail(t, err, errlen, "fattree: K=%u is odd; allowed: an even radix 2..64", v[0]);
        fattree(t, v[0]);
    } else {
        RANGE(v[0], 1, 4096, "LEAVES");
        RANGE(v[1], 1, TOPO_MAX_PORTS, "SPINES");
        RANGE(v[2], 1, TOPO_MAX_PORTS, "HOSTS_PER_LEAF");
        RANGE(v[3], 1, TOPO_MAX_PORTS, "UPLINKS");
        if (v[2] + v[1] * v[3] > TOPO_MAX_PORTS)
            return topo_fail(t, err, errlen, "leafspine: a leaf needs HOSTS_PER_LEAF + SPINES x UPLINKS = %u ports; allowed: <= %d",
                            v[2] + v[1] * v[3], TOPO_MAX_PORTS);
        if (v[0] * v[3] > TOPO_MAX_PORTS)
            return topo_fail(t, err, errlen, "leafspine: a spine needs LEAVES x UPLINKS = %u ports; allowed: <= %d", v[0] * v[3],
                            TOPO_MAX_PORTS);
        if (v[0] * v[2] < 2) return topo_fail(t, err, errlen, "leafspine: %u host(s); allowed: at least 2", v[0] * v[2]);
        leafspine(t, v[0], v[1], v[2], v[3]);
    }
#undef RANGE
    relabel(t, ep_kind, sw_kind);
    if (t->n_nodes > GEN_MAX_NODES) sim_fatal("generator %s made %u nodes", spec, t->n_nodes);
    if (topo_finish(t, err, errlen)) sim_fatal("generator %s made a bad graph: %s", spec, err);
    return t;
}
