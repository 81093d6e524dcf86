/* Labels of PCIe's wire packets for waves (sim_link_trace). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"

/* ---- labels for waves ------------------------------------------------------------ */
const char *const pcie_cls_name[PCIE_FC_CLASSES] = { "P", "NP", "Cpl" };
static const char *const tlp_name[4] = { "MWr", "MRd", "CplD", "Msg" };

void pcie_pkt_label(const void *msg, char *buf, size_t n)
{
    const pcie_pkt *p = pcie_pkt_of_const(msg);
    const char *bad = p->corrupted ? "!" : "";
    switch (p->kind) {
    case PCIE_PKT_TLP:
        snprintf(buf, n, "%s%s%s s%u %uB", bad, p->replayed ? "R:" : "", tlp_name[p->tlp.type], p->seq, p->tlp.len);
        break;
    case PCIE_PKT_ACK: snprintf(buf, n, "%sAck %u", bad, p->seq); break;
    case PCIE_PKT_NAK: snprintf(buf, n, "%sNak %u", bad, p->seq); break;
    case PCIE_PKT_UPDATEFC:
        snprintf(buf, n, "%sUpdFC-%s h%u d%u", bad, pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc);
        break;
    case PCIE_PKT_INITFC1: snprintf(buf, n, "InitFC1-%s h%u d%u", pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_INITFC2: snprintf(buf, n, "InitFC2-%s h%u d%u", pcie_cls_name[p->fc_class], p->hdr_fc, p->data_fc); break;
    case PCIE_PKT_SKP: snprintf(buf, n, "SKP"); break;
    case PCIE_PKT_TS: snprintf(buf, n, "TS1 (Recovery)"); break;
    case PCIE_PKT_FLIT: {
        const pcie_flit *f = p->has_flit ? &p->flit : NULL;
        const char *ak = p->dlp.acknak == 1 ? " Ack" : p->dlp.acknak == 2 ? " Nak" : "";
        if (f && f->payload)
            snprintf(buf, n, "%s%sFlit %u %uT%s%s", bad, p->replayed ? "R:" : "", f->seq, f->n_tlps, ak,
                     p->dlp.fc_valid ? " FC" : "");
        else
            snprintf(buf, n, "%sIdleFlit%s%s", bad, ak, p->dlp.fc_valid ? " FC" : "");
        break;
    }
    default: snprintf(buf, n, "?"); break;
    }
}
