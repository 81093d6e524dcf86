/* Flow control of one PCIe port: the receive side's UpdateFC fields and
 * which classes are finite, the transmit side's InitFC/UpdateFC handling and
 * the credit-loop probe, and link-up (FC_INIT1 -> FC_INIT2 -> DL_Active).
 * The per-TLP urgency rule is in pcie_rx.c, the credit gate in pcie_port_impl.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"

/* ---- flow control: receive side (what this port advertises) ----------------------------- */
bool pcie_class_finite(const pcie_port *p, unsigned cls)
{
    return !p->fcr[pcie_fc_hdr_type(cls)].infinite || !p->fcr[pcie_fc_data_type(cls)].infinite;
}

void pcie_fill_fc_fields(pcie_port *p, unsigned cls, uint32_t *hf, uint32_t *df, bool mark_sent)
{
    pcie_fc_rx *h = &p->fcr[pcie_fc_hdr_type(cls)], *d = &p->fcr[pcie_fc_data_type(cls)];
    *hf = pcie_fc_rx_field(h);
    *df = pcie_fc_rx_field(d);
    if (mark_sent) {
        if (!h->infinite) h->advertised = pcie_fc_rx_limit_sent(h);
        if (!d->infinite) d->advertised = pcie_fc_rx_limit_sent(d);
        if (cls == PCIE_FC_P) p->fc_adv_moved = true;
        p->fc_last_sent[cls] = now_of(p);
        p->fc_deadline[cls] = SIM_TIME_MAX;
        if (p->fc_refresh_due & (1u << cls)) {
            p->fc_refresh_sent++;
            if (cls == PCIE_FC_P) p->fc_refresh_sent_p++;
        }
        p->fc_refresh_due &= (uint8_t)~(1u << cls);
        p->fc_now &= (uint8_t)~(1u << cls);
        timer_arm(p, p->fc_last_sent[cls] + FC_REFRESH_PS);
    }
}

/* ---- flow control: transmit side -------------------------------------------------------------- */
/* The credit type whose round trip is measured for a class: data credits for
 * the classes that carry data (they bind first and return at TLP granularity
 * even with Scaled FC), header credits for non-posted requests. */
static unsigned loop_type(const pcie_port *p, unsigned cls)
{
    unsigned ht = pcie_fc_hdr_type(cls), dt = pcie_fc_data_type(cls);
    if (cls == PCIE_FC_NP) return !p->fct[ht].infinite ? ht : dt;
    return !p->fct[dt].infinite ? dt : ht;
}
/* Caches loop_type (it changes only when InitFC sets which types are infinite). */
void pcie_loop_types_update(pcie_port *p)
{
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) p->loop_probe[c] = (uint8_t)loop_type(p, c);
}

/* (One UpdateFC returns many TLPs' credits: the loop works on locals.) */
static void loop_returned(pcie_port *p, unsigned cls, uint32_t old_limit, uint32_t new_limit, uint32_t mask)
{
    uint64_t returned = p->loop_returned[cls] += (new_limit - old_limit) & mask;
    sim_time_ps now = now_of(p);
    const pcie_loop_ent *ring = p->loop[cls];
    size_t head = p->loop_head[cls], len = p->loop_len[cls];
    double sum_ns = p->loop_sum_ns, min_ns = p->loop_min_ns;
    uint64_t n = p->loop_n;
    for (; len && ring[head].cum <= returned; len--) {
        double ns = (double)(now - ring[head].sent_ps) / 1000.0;
        sum_ns += ns;
        if (n == 0 || ns < min_ns) min_ns = ns;
        n++;
        head = (head + 1) % PCIE_LOOP_RING;
    }
    p->loop_head[cls] = head;
    p->loop_len[cls] = len;
    p->loop_sum_ns = sum_ns;
    p->loop_min_ns = min_ns;
    p->loop_n = n;
}

void pcie_fc_update_received(pcie_port *p, unsigned cls, uint32_t hf, uint32_t df)
{
    unsigned ht = pcie_fc_hdr_type(cls), dt = pcie_fc_data_type(cls);
    unsigned scale = p->cfg.fc_scale;
    unsigned probe = p->loop_probe[cls];
    uint32_t old = p->fct[probe].limit;
    pcie_fc_tx_updatefc(&p->fct[ht], hf, scale);
    pcie_fc_tx_updatefc(&p->fct[dt], df, scale);
    if (!p->fct[probe].infinite) loop_returned(p, cls, old, p->fct[probe].limit, p->fct[probe].mask);
    trace_credits(p);
    kick(p);
}

/* ---- link up ------------------------------------------------------------------------------- */
void pcie_go_active(pcie_port *p)
{
    if (p->dl == PCIE_DL_ACTIVE) return;
    p->dl = PCIE_DL_ACTIVE;
    p->active_ps = now_of(p);
    sim_time_ps now = p->active_ps;
    for (unsigned c = 0; c < PCIE_FC_CLASSES; c++) {
        p->fc_last_sent[c] = now;
        if (pcie_class_finite(p, c)) timer_arm(p, now + FC_REFRESH_PS);
    }
    kick(p);
}

void pcie_initfc_received(pcie_port *p, const pcie_pkt *k)
{
    unsigned c = k->fc_class;
    if (!(p->initfc_rcvd & (1u << c))) {
        p->initfc_rcvd |= (uint8_t)(1u << c);
        pcie_fc_tx_initfc(&p->fct[pcie_fc_hdr_type(c)], k->hdr_fc, p->cfg.fc_scale);
        pcie_fc_tx_initfc(&p->fct[pcie_fc_data_type(c)], k->data_fc, p->cfg.fc_scale);
        pcie_loop_types_update(p);
        trace_credits(p);
    }
    if (p->dl == PCIE_DL_FC_INIT1 && p->initfc_rcvd == 7) {
        p->dl = PCIE_DL_FC_INIT2;   /* FC_INIT2: send InitFC2 for every class */
        p->initfc_to_send = 7;
        kick(p);
    } else if (p->dl == PCIE_DL_FC_INIT2 && k->kind == PCIE_PKT_INITFC2) {
        pcie_go_active(p);
    }
}
