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

/* Credit-limited goodput (Katevenis; Kung & Chapman): window bytes / credit loop,
 * saturating at the link-limited rate. GB/s. */
static inline double pcie_ref_credit_line_GBps(double window_payload_bytes, double loop_ns, double sat_GBps)
{
    double g = loop_ns > 0 ? window_payload_bytes / loop_ns : sat_GBps;
    return g < sat_GBps ? g : sat_GBps;
}

#endif
