/* Shared by the PCIe tests (pcie_bw, pcie_credit, pcie_replay) and the PCIe
 * unit tests: the link parameters, configuration from parameters, a run loop
 * with a deadlock watchdog, goodput from delivery timestamps, and the
 * analytic reference lines the checks compare measurements against (these
 * formulas are never used by the model). */
#ifndef TB_PCIE_COMMON_H
#define TB_PCIE_COMMON_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/pcie/pcie.h"
#include "sim/sim.h"

/* Parameters every PCIe test shares (link, TL sizes, credits, latencies). */
#define PCIE_LINK_PARAMS(wire_default)                                                                                \
    SIM_PARAM_INT("gen", "5", "", 1, 6, "PCIe generation 1..6 (Gen6 runs in Flit Mode)"),                            \
    SIM_PARAM_INT("lanes", "16", "", 1, 32, "link width: 1,2,4,8,16,32"),                                           \
    SIM_PARAM_INT("mps", "256", "B", 128, 4096, "Max_Payload_Size: 128..4096, power of two"),                      \
    SIM_PARAM_INT("mrrs", "512", "B", 128, 4096, "Max_Read_Request_Size: 128..4096, power of two"),                \
    SIM_PARAM_INT("rcb", "64", "B", 64, 128, "read completion boundary: 64 or 128"),                                \
    SIM_PARAM_ENUM("cpl_split", "mps", "mps|rcb", "completions up to MPS ending on RCB boundaries, or one per RCB"), \
    SIM_PARAM_BOOL("addr64", "1", "64-bit addresses (4DW headers); 0 = 32-bit (3DW)"),                              \
    SIM_PARAM_BOOL("ecrc", "0", "4 B ECRC digest on every TLP"),                                                    \
    SIM_PARAM_INT("ph", "127", "", 0, 127, "posted header credits the completer (root port) advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("pd", "2047", "", 0, 2047, "posted data credits (16 B) the completer advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("nph", "64", "", 0, 127, "non-posted header credits the completer advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("npd", "64", "", 0, 2047, "non-posted data credits the completer advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("cplh", "0", "", 0, 127, "completion header credits the requester (endpoint) advertises (0 = infinite, the endpoint rule)"), \
    SIM_PARAM_INT("cpld", "0", "", 0, 2047, "completion data credits the requester advertises (0 = infinite, the endpoint rule)"), \
    SIM_PARAM_INT("ep_ph", "127", "", 0, 127, "posted header credits the requester (endpoint) advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("ep_pd", "2047", "", 0, 2047, "posted data credits the requester advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("ep_nph", "64", "", 0, 127, "non-posted header credits the requester advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("ep_npd", "64", "", 0, 2047, "non-posted data credits the requester advertises (0 = infinite), x fc_scale"), \
    SIM_PARAM_INT("rc_cplh", "0", "", 0, 127, "completion header credits the completer (root port) advertises (0 = infinite: a root port without peer-to-peer)"), \
    SIM_PARAM_INT("rc_cpld", "0", "", 0, 2047, "completion data credits the completer advertises (0 = infinite: a root port without peer-to-peer)"), \
    SIM_PARAM_INT("fc_scale", "1", "", 1, 16, "Scaled FC factor: 1, 4 or 16 (gen >= 4)"),                           \
    SIM_PARAM_DOUBLE("wire_ns", wire_default, "ns", 0, 1e6, "one-way wire + PHY latency"),                                  \
    SIM_PARAM_DOUBLE("rx_ns", "1", "ns", 0, 1e6, "receiver processing per TLP (receive buffers drain at this rate)"), \
    SIM_PARAM_DOUBLE("cpl_ns", "300", "ns", 0, 1e9, "completer latency for reads"),                                 \
    SIM_PARAM_DOUBLE("retrain_ns", "2000", "ns", 0, 1e9, "link retrain (Recovery) penalty after REPLAY_NUM rollover"), \
    SIM_PARAM_INT("tags", "256", "", 1, 768, "outstanding read requests the requester may have")

/* Where only MWr (posted writes) run, the read-side parameters have no effect:
 * refused if given (sim_param_not_applicable), listed as not applicable in the
 * report. `only` says what runs ("pcie_credit runs MWr only"). */
static inline void pcie_params_writes_only(const sim_params *p, const char *only)
{
    static const char *const rd[][2] = {
        { "mrrs", "Max_Read_Request_Size splits read requests" },
        { "rcb", "the read completion boundary splits read completions" },
        { "cpl_split", "it splits read completions" },
        { "cpl_ns", "it is the completer's latency for reads" },
        { "tags", "tags bound the outstanding read requests" },
        { "nph", "non-posted credits pace read requests (MWr is posted)" },
        { "npd", "non-posted credits pace read requests (MWr is posted)" },
        { "cplh", "completion credits pace read completions" },
        { "cpld", "completion credits pace read completions" },
    };
    for (size_t i = 0; i < sizeof rd / sizeof rd[0]; i++)
        sim_param_not_applicable(p, rd[i][0], "%s, and %s", rd[i][1], only);
}

/* With no error injected nothing is random and no link ever retrains. */
static inline void pcie_params_error_free(const sim_params *p, const char *why)
{
    sim_param_not_applicable(p, "retrain_ns", "a retrain follows only replay failures, and %s", why);
    sim_param_not_applicable(p, "seed", "the only random draws are bit errors, and %s", why);
}

static inline sim_time_ps pcie_ns_to_ps(double ns) { return (sim_time_ps)llround(ns * 1000.0); }

/* Configuration from the shared parameters; bad combinations are user errors (exit 2). */
static inline void pcie_cfg_from_params(const sim_params *p, pcie_cfg *c, const char *test)
{
    memset(c, 0, sizeof *c);
    c->gen = (unsigned)sim_param_int(p, "gen");
    c->lanes = (unsigned)sim_param_int(p, "lanes");
    c->mps = (unsigned)sim_param_int(p, "mps");
    c->mrrs = (unsigned)sim_param_int(p, "mrrs");
    c->rcb = (unsigned)sim_param_int(p, "rcb");
    c->cpl_split_rcb = sim_param_enum(p, "cpl_split") == 1;
    c->addr64 = sim_param_bool(p, "addr64");
    c->ecrc = sim_param_bool(p, "ecrc");
    for (unsigned side = 0; side < PCIE_SIDES; side++)   /* each port advertises its own credits */
        for (unsigned t = 0; t < PCIE_FC_TYPES; t++) c->adv[side][t] = (uint32_t)sim_param_int(p, pcie_fc_param_name(side, t));
    /* In these tests the endpoint is the only requester: no TLP goes to the
     * endpoint's posted/non-posted receivers or to the root port's completion
     * receiver, so those advertisements set only InitFC values and refreshes. */
    static const char *const other_side[] = { "ep_ph", "ep_pd", "ep_nph", "ep_npd", "rc_cplh", "rc_cpld" };
    for (unsigned i = 0; i < sizeof other_side / sizeof other_side[0]; i++)
        sim_param_not_applicable(p, other_side[i],
                                 "the endpoint is the only requester here: no TLP goes to the receiver whose credits it sets");
    c->fc_scale = (unsigned)sim_param_int(p, "fc_scale");
    c->wire_ps = pcie_ns_to_ps(sim_param_double(p, "wire_ns"));
    c->rx_ps = pcie_ns_to_ps(sim_param_double(p, "rx_ns"));
    c->cpl_ps = pcie_ns_to_ps(sim_param_double(p, "cpl_ns"));
    c->retrain_ps = pcie_ns_to_ps(sim_param_double(p, "retrain_ns"));
    c->tags = (unsigned)sim_param_int(p, "tags");
    c->op = PCIE_OP_WR;
    c->size = 4096;
    c->count = 1;
    char why[256];
    if (pcie_cfg_check(c, why, sizeof why)) sim_input_error("%s: %s", test, why);
}

/* Runs a system to completion with a watchdog: no transfer completing for
 * `stuck_ps` of simulated time (or reaching hard_limit_ps) ends the run. */
static inline bool pcie_run(sim_test_ctx *c, sim_kernel *k, pcie_sys *s, uint64_t expected_xfers, sim_time_ps stuck_ps,
                            sim_time_ps hard_limit_ps)
{
    sim_time_ps step = stuck_ps;
    uint64_t last_done = 0;
    sim_time_ps last_change = 0;
    for (;;) {
        sim_time_ps before = sim_now(k);
        if (pcie_sys_run(s, before + step > hard_limit_ps ? hard_limit_ps : before + step)) return true;
        sim_time_ps now = sim_now(k);
        if (now == before) return false;          /* nothing left to happen: deadlock */
        uint64_t done = pcie_sys_xfers_done(s);
        if (done != last_done) {
            last_done = done;
            last_change = now;
        }
        if (c && expected_xfers) sim_progress(c, (double)done / (double)expected_xfers, "%llu/%llu transfers",
                                              (unsigned long long)done, (unsigned long long)expected_xfers);
        if (now >= hard_limit_ps || now - last_change >= stuck_ps) return false;
    }
}

/* Payload rate in 1e9 B/s measured between the first and the last delivery
 * in one direction (excludes the start-up latency). */
static inline double pcie_dir_goodput_GBps(const pcie_dir_stats *d)
{
    if (d->payload_delivered <= d->first_delivery_bytes || d->last_delivery_ps <= d->first_delivery_ps) return 0;
    return (double)(d->payload_delivered - d->first_delivery_bytes) * 1000.0 /
           (double)(d->last_delivery_ps - d->first_delivery_ps);
}

/* ---- analytic references (checks only) ------------------------------------------------ */
/* pcie-model (Neugebauer et al., SIGCOMM'18, pcie-bench/pcie-model model/pcie.py)
 * prediction for an MWr stream of `size`-byte transfers, Gb/s. Its raw rate
 * uses 242/256 for Gen6, its DLLP overhead 8/AckLimit + 8/FCGuide + 4/1538
 * (tables = the spec formula; Gen4-6 reuse the 8 GT/s tables). */
static inline double pcie_ref_model_mwr_Gbps(unsigned gen, unsigned lanes, unsigned mps, uint64_t size, bool addr64,
                                             bool ecrc)
{
    static const double gt[7] = { 0, 2.5, 5, 8, 16, 32, 64 };
    double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
    double raw = gt[gen] * enc * lanes;
    double ack = pcie_ack_limit_symbols(gen, lanes, mps);
    double ov = 8.0 / ack + 8.0 / ack + 4.0 / 1538.0;
    double tlp_bw = raw * (1.0 - ov);
    double hdr = 8 + 4 + (addr64 ? 12 : 8) + (ecrc ? 4 : 0);
    double n = ceil((double)size / mps);
    return tlp_bw * (double)size / ((double)size + n * hdr);
}

/* Upper bound with no DLLPs and no SKP in the data direction, Gb/s: every
 * wire byte is TLP bytes. Non-Flit: 8 B framing + header per TLP. Flit Mode:
 * 236 of 256 flit bytes carry TLPs, header only. */
static inline double pcie_ref_no_dllp_mwr_Gbps(unsigned gen, unsigned lanes, unsigned mps, uint64_t size, bool addr64,
                                               bool ecrc)
{
    static const double gt[7] = { 0, 2.5, 5, 8, 16, 32, 64 };
    double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 1.0;
    double raw = gt[gen] * enc * lanes;
    double n = ceil((double)size / mps);
    double hdr = (addr64 ? 16 : 12) + (ecrc ? 4 : 0);
    if (gen == 6) return raw * 236.0 / 256.0 * (double)size / ((double)size + n * hdr);
    return raw * (double)size / ((double)size + n * (hdr + 8));
}

/* ---- predictions from the configuration (spec numbers, never the run) ------------------
 * These restate the spec's physical-layer numbers here instead of reading
 * pcie_phy.c or pcie.h, so a wrong constant in the model shows up as a failed
 * check (only the AckNak formula is shared: pcie_ack_limit_symbols, which
 * tests/check_pcie_dll.c checks against the spec's tables). */
#define PCIE_REF_NFM_FRAMING 8.0   /* STP/SDP + seq + LCRC (+END): 8 B per TLP, Gen1-5 */
#define PCIE_REF_DLLP 8.0          /* 6 B DLLP + 2 B framing (SDP / SDP+END) */
#define PCIE_REF_FLIT 256.0        /* Flit Mode: 236 B TLP + 6 B DLP + 8 B CRC + 6 B FEC */
#define PCIE_REF_FLIT_TLP 236.0
static inline double pcie_ref_gtps(unsigned gen)
{
    static const double gt[7] = { 0, 2.5, 5, 8, 16, 32, 64 };
    return gen <= 6 ? gt[gen] : 0;
}
/* Bytes per ns over all lanes after 8b/10b (Gen1-2), 128b/130b (Gen3-5), 1b/1b (Gen6). */
static inline double pcie_ref_raw_GBps(unsigned gen, unsigned lanes)
{
    double enc = gen <= 2 ? 0.8 : gen <= 5 ? 128.0 / 130.0 : 1.0;
    return pcie_ref_gtps(gen) * enc * lanes / 8.0;
}
/* One symbol (byte) time on a lane: 10 UI with 8b/10b, 8 UI otherwise. */
static inline double pcie_ref_symbol_ns(unsigned gen) { return (gen <= 2 ? 10.0 : 8.0) / pcie_ref_gtps(gen); }
/* Share of wire time taken by SKP ordered sets when the transmitter is busy:
 * 8b/10b 4 symbols per lane every 1180 symbol times; 128b/130b one 16-symbol
 * SKP block + 4-symbol EDS every 370 blocks of 16 symbols (§4.2.7.3; Gen6 uses
 * the same interval, docs/models/pcie.md). */
static inline double pcie_ref_skp_frac(unsigned gen) { return gen <= 2 ? 4.0 / 1180.0 : 20.0 / (370.0 * 16.0); }
/* AckNak latency limit in ns (the spec's formula, Tables 3-10..3-12). */
static inline double pcie_ref_ack_limit_ns(unsigned gen, unsigned lanes, unsigned mps)
{
    return pcie_ack_limit_symbols(gen, lanes, mps) * pcie_ref_symbol_ns(gen);
}
/* REPLAY_TIMER limit in ns: 3 x AckLimit up to 8 GT/s, 24,000 symbol times from
 * 16 GT/s (§3.6.2.1), plus the channel round trip the designer adds. */
static inline double pcie_ref_replay_timeout_ns(unsigned gen, unsigned lanes, unsigned mps, double wire_ns)
{
    double sym = gen <= 3 ? 3.0 * pcie_ack_limit_symbols(gen, lanes, mps) : 24000.0;
    return sym * pcie_ref_symbol_ns(gen) + 2.0 * wire_ns;
}
/* TLP bytes of one MWr with `payload` bytes, framing included (Non-Flit: 8 B
 * STP/seq/LCRC; Flit Mode: none, header + payload + digest only). */
static inline double pcie_ref_mwr_bytes(const pcie_cfg *c, double payload)
{
    double hdr = (c->addr64 ? 16 : 12) + (c->ecrc ? 4 : 0);
    return payload + hdr + (c->gen == 6 ? 0 : PCIE_REF_NFM_FRAMING);
}
/* Wire time of one TLP of `bytes` (as above) in a stream: Flit Mode spreads
 * TLP bytes over 236 of every 256 flit bytes. SKP not included. */
static inline double pcie_ref_tlp_ns(const pcie_cfg *c, double bytes)
{
    double raw = pcie_ref_raw_GBps(c->gen, c->lanes);
    return c->gen == 6 ? bytes * PCIE_REF_FLIT / PCIE_REF_FLIT_TLP / raw : bytes / raw;
}

/* Predicted MWr goodput (GB/s) of a stream of `size`-byte transfers where the
 * link, not credits, limits it. In a write stream every Ack and UpdateFC for
 * the data travels on the other direction, so the data direction carries TLPs,
 * SKP ordered sets and, from the requester's own receiver, one UpdateFC per
 * finite credit class every 30 us (§2.6.1.2 refresh; 8 B DLLPs in Non-Flit
 * Mode, inside the DLP of a flit in Flit Mode). Transfers are contiguous and
 * split at naturally aligned MPS boundaries; msg adds a 4DW Msg TLP per transfer. */
static inline double pcie_ref_mwr_stream_GBps(const pcie_cfg *c, uint64_t size, bool msg)
{
    /* TLPs per transfer, averaged over the alignment period of size vs MPS */
    uint64_t g = c->mps, r = size % c->mps;
    while (r) { uint64_t t = g % r; g = r; r = t; }
    uint64_t period = c->mps / g;
    double tlps = 0;
    for (uint64_t x = 0; x < period; x++) {
        uint64_t start = x * size, end = start + size;
        tlps += (double)((end + c->mps - 1) / c->mps - start / c->mps);
    }
    tlps /= (double)period;
    double bytes = pcie_ref_mwr_bytes(c, 0) * tlps + (double)size + (msg ? pcie_ref_mwr_bytes(c, 0) : 0);
    double ns = pcie_ref_tlp_ns(c, bytes);
    unsigned finite = 0;   /* classes the requester's receiver advertises finitely: refreshed every 30 us */
    for (unsigned cls = 0; cls < 3; cls++)
        finite += (c->adv[PCIE_REQUESTER][2 * cls] || c->adv[PCIE_REQUESTER][2 * cls + 1]) ? 1 : 0;
    double refresh = c->gen == 6 ? 0 : finite * PCIE_REF_DLLP / pcie_ref_raw_GBps(c->gen, c->lanes) / 30000.0;
    return (double)size / ns * (1.0 - pcie_ref_skp_frac(c->gen) - refresh);
}

/* The credit loop of a posted TLP predicted from the configuration: from the
 * moment its credits are spent (it starts on the wire) to the arrival of the
 * UpdateFC that returns them (docs/models/pcie.md, "Flow control"):
 *     loop = T_tlp + wire + rx + T_fc + wire + W_coalesce
 *   T_tlp       its serialisation (Flit Mode: its share of flits + one flit of
 *               alignment, since a flit is checked whole),
 *   rx          the receive buffer's processing (credits released as it leaves),
 *   T_fc        the UpdateFC's serialisation (8 B DLLP; an idle flit in Flit Mode),
 *   W_coalesce  how long the release waits to be advertised: the receiver
 *               sends an UpdateFC at once when it holds back an eighth of its
 *               buffer (at least one MPS), i.e. every g = ceil(step / need)
 *               TLPs of a back-to-back burst (rounded up to whole multiples of
 *               the Scaled FC factor, the granularity an UpdateFC shows), else
 *               when the coalescing timer
 *               (the recommended UpdateFC latency = AckLimit) runs out; the
 *               first TLP of a group waits min((g-1) T_tlp, AckLimit).
 * With a window of W TLPs the requester sends W TLPs per group-loop, so the
 * credit-limited goodput is W x MPS / loop (the first TLP of each group has
 * the longest loop and sets the pace), capped at the link rate. */
typedef struct pcie_ref_loop {
    double tlp_ns, fc_ns, coalesce_ns, loop_ns;
    unsigned group_tlps;
} pcie_ref_loop;

static inline void pcie_ref_credit_loop(const pcie_cfg *c, pcie_ref_loop *o)
{
    double raw = pcie_ref_raw_GBps(c->gen, c->lanes);
    double flit_ns = PCIE_REF_FLIT / raw;
    o->tlp_ns = pcie_ref_tlp_ns(c, pcie_ref_mwr_bytes(c, c->mps));
    if (c->gen == 6) o->tlp_ns += flit_ns;
    o->fc_ns = c->gen == 6 ? flit_ns : PCIE_REF_DLLP / raw;
    unsigned g = 1u << 30;
    const unsigned types[2] = { PCIE_FC_PH, PCIE_FC_PD };
    for (int i = 0; i < 2; i++) {
        uint64_t init = (uint64_t)c->adv[PCIE_COMPLETER][types[i]] * c->fc_scale;   /* it receives the MWr */
        if (!init) continue;     /* infinite: never returned */
        uint64_t need = i ? c->mps / PCIE_FC_UNIT_BYTES : 1, step = init / 8 > need ? init / 8 : need;
        unsigned gi = (unsigned)((step + need - 1) / need);
        /* Scaled FC: an UpdateFC shows CREDITS_ALLOCATED / scale, so returns
         * become visible in whole multiples of `scale` credits, i.e. of q TLPs */
        uint64_t a = c->fc_scale, b = need;
        while (b) { uint64_t t = a % b; a = b; b = t; }
        unsigned q = (unsigned)(c->fc_scale / a);
        gi = (gi + q - 1) / q * q;
        if (gi < g) g = gi;
    }
    if (g == 1u << 30) g = 1;
    o->group_tlps = g;
    double burst = (g - 1) * pcie_ref_tlp_ns(c, pcie_ref_mwr_bytes(c, c->mps));
    double ack = pcie_ref_ack_limit_ns(c->gen, c->lanes, c->mps);
    o->coalesce_ns = burst < ack ? burst : ack;
    o->loop_ns = o->tlp_ns + 2.0 * (double)c->wire_ps / 1000.0 + (double)c->rx_ps / 1000.0 + o->fc_ns + o->coalesce_ns;
}

/* Credit-limited goodput (Katevenis; Kung & Chapman): window bytes / credit loop,
 * saturating at the link-limited rate. GB/s. */
static inline double pcie_ref_credit_line_GBps(double window_payload_bytes, double loop_ns, double sat_GBps)
{
    double g = loop_ns > 0 ? window_payload_bytes / loop_ns : sat_GBps;
    return g < sat_GBps ? g : sat_GBps;
}

#endif
