#include "sim/presets.h"

#include <string.h>

/* Sources (tags as in docs/topology.md): [pcie] shared/reference/pcie.md §1
 * (PCIe Base Spec r6.3 rates, encodings and framing); [sys] reference/system.md
 * §1 (vendor figures and the seeds' errata); [ieee] IEEE 802.3 50G-per-lane
 * PAM4 (53.125 GBd, 256b/257b transcode x RS(544,514) = 16/17) and 25G NRZ
 * (25.78125 GBd, 64b/66b); [hc30] NVSwitch HC30 talk "NVLink is really
 * 51.5 GBps" bidirectional (25.78125 GBd x 8 lanes, 64b/66b-class);
 * [assumed] no published figure: PHY-to-PHY latency ~ tens of ns, see docs. */
#define PCIE_OVH "framing 8 (STP/seq/LCRC) + 4DW header 16"
#define PCIE_SRC "[pcie] spec rates/encoding/framing; latency [assumed: PHY+trace, tens of ns, pcie.md §7]"
#define PCIE6_OVH "4DW header 16 (flit mode: DLP/CRC/FEC inside the 242/256)"
#define PCIE6_SRC "[pcie] 64 GT/s PAM4, 256 B flit, 242 B TLP+DLP; latency [assumed]"
#define PCIE(g, w, rate, num, den, ovh, ovw, src) \
    { "pcie-gen" #g "-x" #w, rate, w, num, den, 20.0, ovh, ovw, src }
#define PCIE_GEN(g, rate, num, den, ovh, ovw, src)                                                              \
    PCIE(g, 1, rate, num, den, ovh, ovw, src), PCIE(g, 2, rate, num, den, ovh, ovw, src),                        \
        PCIE(g, 4, rate, num, den, ovh, ovw, src), PCIE(g, 8, rate, num, den, ovh, ovw, src),                    \
        PCIE(g, 16, rate, num, den, ovh, ovw, src)

#define NVL_OVH "one 16 B header flit (acks, AE/BE flits: the link model's)"
#define NVL_SRC "[sys] 25/50 GB/s per link per direction; [hc30] 64b/66b-class coding [unverified]; header flit Foley&Danskin 2017 [unverified]; latency [assumed]"
#define IB_OVH "LRH 8 + BTH 12 + ICRC 4 + VCRC 2"
#define IB_SRC "[sys] 4x 50/100/200G PAM4; [ieee] 16/17 coding+FEC; IBA headers; latency [assumed: 5 m cable 25 ns + PHY/FEC]"
#define ETH_OVH "RoCEv2: Eth 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 + preamble 8 + IFG 12"
#define ETH_SRC "[sys][ieee] lane rates and coding; RoCEv2 framing; latency [assumed: 5 m cable 25 ns + PHY/FEC]"
#define ROCE_SRC "[sys][ieee] 100GBASE-R4 4x25G NRZ 64b/66b, 200/400GBASE-R 50G PAM4 lanes + RS-FEC; RoCEv2 framing [sys §1]; latency [assumed: 5 m cable 25 ns + PHY/FEC]"

static const topo_preset presets[] = {
    PCIE_GEN(1, 2.5, 8, 10, 24, PCIE_OVH, PCIE_SRC),
    PCIE_GEN(2, 5.0, 8, 10, 24, PCIE_OVH, PCIE_SRC),
    PCIE_GEN(3, 8.0, 128, 130, 24, PCIE_OVH, PCIE_SRC),
    PCIE_GEN(4, 16.0, 128, 130, 24, PCIE_OVH, PCIE_SRC),
    PCIE_GEN(5, 32.0, 128, 130, 24, PCIE_OVH, PCIE_SRC),
    PCIE_GEN(6, 64.0, 242, 256, 16, PCIE6_OVH, PCIE6_SRC),
    /* NVLink 2 (V100): 8 lanes NRZ; 3 (A100): 4 lanes; 4 (H100): 2 lanes PAM4; 5 (B200): 2 lanes at twice that. */
    { "nvlink2", 25.78125, 8, 64, 66, 20.0, 16, NVL_OVH, NVL_SRC },
    { "nvlink3", 51.5625, 4, 64, 66, 20.0, 16, NVL_OVH, NVL_SRC },
    { "nvlink4", 103.125, 2, 64, 66, 20.0, 16, NVL_OVH, NVL_SRC },
    { "nvlink5", 206.25, 2, 64, 66, 20.0, 16, NVL_OVH, NVL_SRC },
    /* MI300X: x16 xGMI links on a 32 GT/s PCIe-class PHY, "128 GB/s bidirectional per link". */
    { "infinity-fabric", 32.0, 16, 128, 130, 20.0, 24, "PCIe-style framing 8 + header 16 [unverified]",
      "AMD MI300X data sheet 128 GB/s bidir per link [unverified]; seed 200-400 GB/s per GPU; latency [assumed]" },
    /* Ascend 910B: 56 GB/s per HCCS link per direction (third-party figure). */
    { "hccs", 56.0, 8, 1, 1, 20.0, 24, "header 16 + CRC 8 [unverified]",
      "third-party Ascend 910B figure 56 GB/s per link, coding unpublished (1/1) [unverified]; seed 200-300 GB/s per NPU; latency [assumed]" },
    /* TPU v4: 6 ICI links; 6 x 50 GB/s x 2 directions = the seed's 600 GB/s per chip. */
    { "ici", 106.25, 4, 16, 17, 50.0, 24, "header 16 + CRC 8 [unverified]",
      "seed 600 GB/s per chip over 6 links (TPU v4 paper: 3D torus); [ieee]-class 100G PAM4 lanes [unverified]; latency [assumed]" },
    { "ib-hdr", 53.125, 4, 16, 17, 100.0, 26, IB_OVH, IB_SRC },
    { "ib-ndr", 106.25, 4, 16, 17, 100.0, 26, IB_OVH, IB_SRC },
    { "ib-xdr", 212.5, 4, 16, 17, 100.0, 26, IB_OVH, IB_SRC },
    { "eth-25g", 25.78125, 1, 64, 66, 100.0, 82, ETH_OVH, ETH_SRC },
    { "eth-100g", 25.78125, 4, 64, 66, 100.0, 82, ETH_OVH, ETH_SRC },
    { "eth-200g", 53.125, 4, 16, 17, 100.0, 82, ETH_OVH, ETH_SRC },
    { "eth-400g", 53.125, 8, 16, 17, 100.0, 82, ETH_OVH, ETH_SRC },
    { "eth-800g", 106.25, 8, 16, 17, 100.0, 82, ETH_OVH, ETH_SRC },
    /* RoCE v2 NICs and switch ports (ConnectX-5/6/7-class 100/200/400 GbE): the same
     * PHYs and framing as eth-*; the name says the link carries RDMA (kinds roce_nic, eth_switch). */
    { "roce-100g", 25.78125, 4, 64, 66, 100.0, 82, ETH_OVH, ROCE_SRC },
    { "roce-200g", 53.125, 4, 16, 17, 100.0, 82, ETH_OVH, ROCE_SRC },
    { "roce-400g", 53.125, 8, 16, 17, 100.0, 82, ETH_OVH, ROCE_SRC },
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

double topo_preset_GBps(const topo_preset *p)
{
    return p->lane_Gbps * (double)p->lanes * (double)p->enc_num / (double)p->enc_den / 8.0;
}

enum topo_preset_family topo_preset_family(const topo_preset *p)
{
    if (!p) return TOPO_FAMILY_OTHER;
    if (!strncmp(p->name, "ib-", 3)) return TOPO_FAMILY_IB;
    if (!strncmp(p->name, "roce-", 5) || !strncmp(p->name, "eth-", 4)) return TOPO_FAMILY_ETH;
    return TOPO_FAMILY_OTHER;
}

const topo_preset *topo_preset_find(const char *name)
{
    for (unsigned i = 0; name && i < N_PRESETS; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

unsigned topo_preset_count(void) { return N_PRESETS; }
const topo_preset *topo_preset_at(unsigned i) { return i < N_PRESETS ? &presets[i] : NULL; }

void topo_preset_names(char *buf, size_t n)
{
    size_t off = 0;
    if (n) buf[0] = 0;
    for (unsigned i = 0; i < N_PRESETS && off + 1 < n; i++) {
        int w = snprintf(buf + off, n - off, "%s%s", i ? ", " : "", presets[i].name);
        if (w < 0) break;
        off += (size_t)w;
    }
}

void topo_presets_print(FILE *out)
{
    fprintf(out, "%-16s %10s %5s %9s %9s %10s %6s  %s\n", "preset", "lane_Gbps", "lanes", "encoding", "GBps",
            "latency_ns", "ovh_B", "overhead / source");
    for (unsigned i = 0; i < N_PRESETS; i++) {
        const topo_preset *p = &presets[i];
        char enc[24];
        snprintf(enc, sizeof enc, "%u/%u", p->enc_num, p->enc_den);
        fprintf(out, "%-16s %10.8g %5u %9s %9.3f %10.1f %6u  %s; %s\n", p->name, p->lane_Gbps, p->lanes, enc,
                topo_preset_GBps(p), p->latency_ns, p->overhead_bytes, p->overhead_what, p->source);
    }
    fprintf(out, "GBps = lane_Gbps x lanes x encoding / 8, per direction; links are full duplex.\n");
}
