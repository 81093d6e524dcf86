/* Physical-layer constants per generation and the spec's timer formulas. */
#include <math.h>
#include <stdio.h>

#include "models/pcie/pcie.h"

static const double gen_gtps[7] = { 0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };

uint32_t pcie_ack_limit_symbols(unsigned gen, unsigned lanes, unsigned mps)
{
    /* Pre-4.0 formula; it reproduces Tables 3-10..3-12 (checked for every MPS x
     * width entry). AckFactor by MPS and width; InternalDelay by data rate. */
    double factor;
    if (mps <= 256) factor = lanes <= 4 ? 1.4 : lanes == 8 ? 2.5 : 3.0;
    else factor = lanes <= 8 ? 1.0 : 2.0;
    double internal = gen == 1 ? 19.0 : gen == 2 ? 70.0 : 115.0;
    return (uint32_t)floor((mps + 28.0) * factor / lanes + internal);
}

void pcie_phy_init(pcie_phy *phy, unsigned gen, unsigned lanes, unsigned mps, sim_time_ps wire_ps)
{
    phy->gen = gen;
    phy->lanes = lanes;
    phy->gtps = gen_gtps[gen];
    phy->enc = gen <= 2 ? PCIE_ENC_8B10B : gen <= 5 ? PCIE_ENC_128B130B : PCIE_ENC_1B1B;
    phy->flit_mode = gen == 6;
    double enc = phy->enc == PCIE_ENC_8B10B ? 8.0 / 10.0 : phy->enc == PCIE_ENC_128B130B ? 128.0 / 130.0 : 1.0;
    phy->raw_GBps = phy->gtps * enc * lanes / 8.0;
    /* a symbol is 10 UI with 8b/10b, 8 UI otherwise (the sync header is in the rate) */
    phy->symbol_ns = (phy->enc == PCIE_ENC_8B10B ? 10.0 : 8.0) / phy->gtps;
    if (phy->enc == PCIE_ENC_8B10B) {
        /* SKP OS = COM + 3 SKP symbols on every lane, every 1180..1538 symbol times:
         * scheduled at the lower bound so a packet in progress never makes it late. */
        phy->skp_bytes = 4 * lanes;
        phy->skp_interval_ps = (sim_time_ps)llround(1180.0 * phy->symbol_ns * 1000.0);
    } else {
        /* 128b/130b: one 16-symbol SKP block, preceded by a 4-symbol EDS token,
         * every 370..375 blocks. Flit Mode at 64 GT/s: the same interval is used
         * for its Control SKP OS (assumption, see docs). */
        phy->skp_bytes = (16 + 4) * lanes;
        phy->skp_interval_ps = (sim_time_ps)llround(370.0 * 16.0 * phy->symbol_ns * 1000.0);
    }
    phy->ack_limit_symbols = pcie_ack_limit_symbols(gen, lanes, mps);
    phy->ack_limit_ps = (sim_time_ps)llround(phy->ack_limit_symbols * phy->symbol_ns * 1000.0);
    /* REPLAY_TIMER: legacy 3 x AckLimit up to 8 GT/s; the "simplified" 24,000
     * symbol times required for >= 16 GT/s. The spec makes the designer add
     * the channel (retimers, wire) round trip; wire_ps is that channel. */
    double replay_symbols = gen <= 3 ? 3.0 * phy->ack_limit_symbols : 24000.0;
    phy->replay_timeout_ps = (sim_time_ps)llround(replay_symbols * phy->symbol_ns * 1000.0) + 2 * wire_ps;
}

const char *pcie_fc_param_name(unsigned side, unsigned type)
{
    static const char *const names[PCIE_SIDES][PCIE_FC_TYPES] = {
        [PCIE_REQUESTER] = { "ep_ph", "ep_pd", "ep_nph", "ep_npd", "cplh", "cpld" },
        [PCIE_COMPLETER] = { "ph", "pd", "nph", "npd", "rc_cplh", "rc_cpld" },
    };
    return side < PCIE_SIDES && type < PCIE_FC_TYPES ? names[side][type] : "?";
}

const char *pcie_cfg_check(const pcie_cfg *c, char *buf, size_t n)
{
    if (c->gen < 1 || c->gen > 6) {
        snprintf(buf, n, "gen=%u is not a PCIe generation; allowed: 1,2,3,4,5,6", c->gen);
        return buf;
    }
    if (c->lanes != 1 && c->lanes != 2 && c->lanes != 4 && c->lanes != 8 && c->lanes != 16 && c->lanes != 32) {
        snprintf(buf, n, "lanes=%u is not a link width; allowed: 1,2,4,8,16,32", c->lanes);
        return buf;
    }
    const unsigned *pw2[] = { &c->mps, &c->mrrs };
    const char *names[] = { "mps", "mrrs" };
    for (int i = 0; i < 2; i++) {
        unsigned v = *pw2[i];
        if (v < 128 || v > 4096 || (v & (v - 1))) {
            snprintf(buf, n, "%s=%u is not a payload size; allowed: 128,256,512,1024,2048,4096", names[i], v);
            return buf;
        }
    }
    if (c->rcb != 64 && c->rcb != 128) {
        snprintf(buf, n, "rcb=%u is not a read completion boundary; allowed: 64,128", c->rcb);
        return buf;
    }
    if (c->fc_scale != 1 && c->fc_scale != 4 && c->fc_scale != 16) {
        snprintf(buf, n, "fc_scale=%u is not a Scaled FC factor; allowed: 1,4,16", c->fc_scale);
        return buf;
    }
    if (c->gen < 4 && c->fc_scale != 1) {
        snprintf(buf, n, "fc_scale=%u needs Scaled FC, which exists from gen 4 (16 GT/s) on; gen=%u allows fc_scale=1",
                 c->fc_scale, c->gen);
        return buf;
    }
    for (unsigned side = 0; side < PCIE_SIDES; side++) {
        for (unsigned t = 0; t < PCIE_FC_TYPES; t++) {
            uint32_t v = c->adv[side][t], max = pcie_fc_is_data(t) ? PCIE_FC_DATA_FIELD_MAX : PCIE_FC_HDR_FIELD_MAX;
            if (v > max) {
                snprintf(buf, n, "%s=%u does not fit the InitFC/UpdateFC field; allowed: 0 (infinite) or 1..%u (x fc_scale)",
                         pcie_fc_param_name(side, t), v, max);
                return buf;
            }
            /* Table 2-50 minimum advertisements: a receiver must take one max-size TLP. */
            if ((t == PCIE_FC_PD || t == PCIE_FC_CPLD) && v && v * c->fc_scale < c->mps / PCIE_FC_UNIT_BYTES) {
                snprintf(buf, n, "%s=%u (x fc_scale %u) is below one MPS of data credits (%u for mps=%u); allowed: 0 or >= %u",
                         pcie_fc_param_name(side, t), v, c->fc_scale, c->mps / PCIE_FC_UNIT_BYTES, c->mps,
                         (c->mps / PCIE_FC_UNIT_BYTES + c->fc_scale - 1) / c->fc_scale);
                return buf;
            }
        }
    }
    if (c->tags < 1 || c->tags > 768) {
        snprintf(buf, n, "tags=%u; allowed: 1..768 (10-bit tags)", c->tags);
        return buf;
    }
    if (c->size < 1) {
        snprintf(buf, n, "size=%llu; allowed: >= 1 byte", (unsigned long long)c->size);
        return buf;
    }
    for (int d = 0; d < 2; d++) {
        if (c->err[d].ber < 0 || c->err[d].ber >= 0.01) {
            snprintf(buf, n, "ber=%g; allowed: 0 <= ber < 0.01", c->err[d].ber);
            return buf;
        }
    }
    return NULL;
}
