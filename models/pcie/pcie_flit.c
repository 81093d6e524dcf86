/* Flit Mode (Gen6, 64 GT/s, 1b/1b PAM4) of one PCIe port.
 *
 * A flit is 256 B on the wire: 236 B of TLP bytes, 6 B of DLP (flit header
 * with the flit sequence number or an Ack/Nak, and one DLLP slot used for
 * UpdateFC), 8 B CRC and 6 B FEC (three interleaved codewords, each correcting
 * one byte). TLPs have no per-TLP framing, sequence number or LCRC; they are
 * packed back to back and may straddle flits. Payload flits carry a 10-bit
 * flit sequence number and sit in the replay buffer until acknowledged; a
 * flit the FEC cannot correct fails its CRC and is Nak'd and replayed
 * (go-back-N, REPLAY_NUM/REPLAY_TIMER as in Non-Flit Mode). When a direction
 * has no TLP bytes but Ack/Nak or credits to return, it sends an idle flit. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/pcie/pcie_port_impl.h"

/* Three-way interleaved FEC: byte i belongs to codeword i % 3; each codeword
 * corrects one bad byte. Returns true if every error was corrected. */
static bool flit_fec_corrects(const uint32_t *err_bytes, unsigned n)
{
    uint32_t seen[3] = { UINT32_MAX, UINT32_MAX, UINT32_MAX };
    for (unsigned i = 0; i < n; i++) {
        unsigned cw = err_bytes[i] % 3u;
        if (seen[cw] == UINT32_MAX) seen[cw] = err_bytes[i];
        else if (seen[cw] != err_bytes[i]) return false;
    }
    return true;
}

/* Fills the DLP of an outgoing flit: Nak > Ack, and one UpdateFC. */
static void flit_fill_dlp(pcie_port *p, pcie_pkt *k)
{
    pcie_dir_stats *s = &p->st_tx;
    memset(&k->dlp, 0, sizeof k->dlp);
    uint16_t ack_seq = pcie_dll_rx_ack_seq(&p->drx);
    if (p->nak_now) {
        k->dlp.acknak = 2;
        p->nak_now = false;
        s->naks++;
    } else if (p->ack_now || ack_seq != p->last_acknak_sent) {
        k->dlp.acknak = 1;
        s->acks++;
        p->ack_sent_count++;
        uint32_t every = p->cfg.tx_err.drop_ack_every;
        if (every && p->ack_sent_count % every == 0) {
            k->dlp.acknak = 0;         /* this flit's Ack is lost (its DLP fails) */
            s->dropped_acks++;
        }
    }
    if (k->dlp.acknak) {
        k->dlp.acknak_seq = ack_seq;
        sim_trace_strf(p->tr, p->tv_acknak_tx, "%s %u", k->dlp.acknak == 2 ? "Nak" : "Ack", ack_seq);
    }
    if (k->dlp.acknak || p->ack_now) {
        p->last_acknak_sent = ack_seq;
        p->ack_now = false;
        p->ack_deadline = SIM_TIME_MAX;
    }
    if (p->fc_now) {
        unsigned c = (unsigned)__builtin_ctz(p->fc_now);
        k->dlp.fc_valid = 1;
        k->dlp.fc_class = (uint8_t)c;
        pcie_fill_fc_fields(p, c, &k->dlp.hdr_fc, &k->dlp.data_fc, true);
        s->updatefcs++;
    }
}

static void send_flit(pcie_port *p, const pcie_flit *f, bool replayed, sim_time_ps now)
{
    sim_pkt *m;
    pcie_pkt *k = pkt_alloc(p, &m, PCIE_PKT_FLIT, PCIE_FLIT_BYTES);
    k->replayed = replayed;
    flit_fill_dlp(p, k);
    pcie_dir_stats *s = &p->st_tx;
    if (f) {
        /* the wire carries its own copy of the flit's TLPs (in the packet's extension) */
        memcpy(&k->flit, f, offsetof(pcie_flit, tlps) + f->n_tlps * sizeof f->tlps[0]);
        k->has_flit = 1;
        k->seq = f->seq;
        uint32_t data = 0;
        for (unsigned i = 0; i < f->n_tlps; i++) data += pcie_tlp_payload(&f->tlps[i]);
        m->payload_bytes = data;  /* data of the TLPs that end in this flit */
        if (replayed) {
            s->tlps_replayed += f->n_tlps;
            s->tlp_replay_wire_bytes += PCIE_FLIT_BYTES;
        } else {
            s->tlps_new += f->n_tlps;
            s->tlp_wire_bytes += f->tlp_bytes;
        }
    } else {
        s->idle_flits++;
    }
    s->flits++;
    s->flit_bytes += PCIE_FLIT_BYTES;
    /* errors: FEC corrects one byte per codeword; the rest fails the CRC */
    uint32_t eb[16];
    unsigned n = pcie_wire_errors(p, PCIE_FLIT_BYTES, eb, 16);
    if (n) {
        if (n <= 16 && flit_fec_corrects(eb, n)) s->fec_corrected++;
        else k->corrupted = 1;
    }
    if (f && pcie_in_bad_window(p, now)) k->corrupted = 1;
    if (k->corrupted) s->corrupted++;
    sim_link_send(p->tx, m, m->wire_bytes);
    p->last_tx_end = sim_link_tx_free_ps(p->tx);
    if (f) pcie_replay_timer_start(p, p->last_tx_end);
}

/* Fills a new payload flit from the carried-over TLP and new TLPs. */
static bool flit_assemble(pcie_port *p, pcie_flit *f, sim_time_ps now)
{
    f->payload = 0;
    f->n_tlps = 0;
    f->tlp_bytes = 0;
    uint32_t room = PCIE_FLIT_TLP_BYTES;
    bool took = false;
    for (;;) {
        if (p->fa_has_carry) {
            uint32_t put = p->fa_carry < room ? p->fa_carry : room;
            p->fa_carry -= put;
            room -= put;
            f->tlp_bytes = (uint16_t)(f->tlp_bytes + put);
            if (p->fa_carry == 0) {          /* the TLP ends in this flit */
                f->tlps[f->n_tlps++] = p->fa_carry_tlp;
                p->fa_has_carry = false;
            }
            if (!room) break;
            continue;
        }
        if (f->n_tlps == PCIE_FLIT_MAX_TLPS) break;
        bool credit_blocked;
        int c = pick_new(p, &credit_blocked);
        if (c < 0) {
            if (credit_blocked && !took && f->tlp_bytes == 0) stall_begin(p, now);
            break;
        }
        stall_end(p, now);
        take_new(p, (unsigned)c, &p->fa_carry_tlp, now);
        p->fa_carry = pcie_tlp_bytes(&p->fa_carry_tlp);
        p->fa_has_carry = true;
        took = true;
        if (p->app.refill) p->app.refill(p->app.ctx, p, (unsigned)c);
    }
    if (!f->tlp_bytes) return false;
    f->payload = 1;
    return true;
}

bool pcie_tx_one_flit(pcie_port *p, sim_time_ps now)
{
    if (p->replaying) {
        uint16_t seq = pcie_seq_sub(p->dtx.sp, p->dtx.next_transmit_seq, (uint16_t)p->replay_left);
        if (--p->replay_left == 0) p->replaying = false;
        send_flit(p, &p->replay_flits[seq], true, now);
        return true;
    }
    if (pcie_dll_tx_may_send_new(&p->dtx)) {
        pcie_flit *f = &p->replay_flits[p->dtx.next_transmit_seq];
        if (flit_assemble(p, f, now)) {
            f->seq = pcie_dll_tx_assign(&p->dtx);
            uint32_t occ = pcie_dll_tx_outstanding(&p->dtx);
            if (occ > p->max_replay_occ) p->max_replay_occ = occ;
            send_flit(p, f, false, now);
            trace_dll(p);
            return true;
        }
    }
    if (p->nak_now || p->ack_now || p->fc_now) {
        send_flit(p, NULL, false, now);
        return true;
    }
    return false;
}

void pcie_rx_flit(pcie_port *p, pcie_pkt *k)
{
    if (p->dl == PCIE_DL_FC_INIT2) pcie_go_active(p);
    const pcie_flit *f = k->has_flit ? &k->flit : NULL;
    bool crc_ok = !k->corrupted;
    if (crc_ok && f && pcie_forced_nak(p)) crc_ok = false;
    if (crc_ok) {
        /* the DLP of a good flit: Ack/Nak and an FC update */
        if (k->dlp.acknak) pcie_acknak_received(p, k->dlp.acknak_seq, k->dlp.acknak == 2);
        if (k->dlp.fc_valid) pcie_fc_update_received(p, k->dlp.fc_class, k->dlp.hdr_fc, k->dlp.data_fc);
    }
    if (!f && crc_ok) return;      /* a good idle flit carries no TLP bytes */
    uint16_t seq = f ? f->seq : p->drx.next_rcv_seq;
    enum pcie_rx_verdict v = pcie_dll_rx_tlp(&p->drx, seq, crc_ok);
    sim_trace_u64(p->tr, p->tv_next_rcv_seq, p->drx.next_rcv_seq);
    switch (v) {
    case PCIE_RX_ACCEPT:
        if (p->ack_deadline == SIM_TIME_MAX) {
            p->ack_deadline = now_of(p) + p->phy.ack_limit_ps;
            timer_arm(p, p->ack_deadline);
        }
        for (unsigned i = 0; i < f->n_tlps; i++) pcie_rx_accept(p, &f->tlps[i]);
        break;
    case PCIE_RX_DUPLICATE:
        p->ack_now = true;
        kick(p);
        break;
    case PCIE_RX_NAK:
        p->nak_now = true;
        kick(p);
        break;
    case PCIE_RX_DISCARD: break;
    }
}
