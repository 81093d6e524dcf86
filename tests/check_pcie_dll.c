/* Unit tests of the PCIe data link layer and flow-control state machines
 * (models/pcie/pcie_dll.h), driven directly: sequence arithmetic at
 * wrap-around, the half-space transmit rule, Ack/Nak purging, duplicate and
 * out-of-sequence receive handling, replay and REPLAY_NUM rollover, credit
 * gating at counter wrap-around, infinite credits and Scaled FC; and the
 * DLL timer limits and physical rates against the spec's tables. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "models/pcie/pcie.h"
#include "models/pcie/pcie_dll.h"
#include "check_run.h"

/* ---- sequence numbers ---------------------------------------------------- */
START_TEST(test_seq_arith_wrap)
{
    pcie_seq_space s = pcie_seq_space_of(PCIE_SEQ_BITS_NFM);
    ck_assert_uint_eq(s.mask, 4095);
    ck_assert_uint_eq(s.half, 2048);
    ck_assert_uint_eq(pcie_seq_add(s, 4095, 1), 0);
    ck_assert_uint_eq(pcie_seq_add(s, 4000, 200), 104);
    ck_assert_uint_eq(pcie_seq_sub(s, 3, 4094), 5);
    ck_assert_uint_eq(pcie_seq_sub(s, 0, 1), 4095);
    pcie_seq_space f = pcie_seq_space_of(PCIE_SEQ_BITS_FLIT);
    ck_assert_uint_eq(pcie_seq_add(f, 1023, 2), 1);
}
END_TEST

START_TEST(test_tx_reset_and_half_space)
{
    pcie_dll_tx t;
    pcie_dll_tx_init(&t, PCIE_SEQ_BITS_NFM);
    ck_assert_uint_eq(t.next_transmit_seq, 0);
    ck_assert_uint_eq(t.ackd_seq, 0xFFF);
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 0);
    /* 2047 unacknowledged TLPs are allowed, the 2048th is blocked */
    for (int i = 0; i < 2047; i++) {
        ck_assert(pcie_dll_tx_may_send_new(&t));
        ck_assert_uint_eq(pcie_dll_tx_assign(&t), (unsigned)i);
    }
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 2047);
    ck_assert(!pcie_dll_tx_may_send_new(&t));
    uint16_t purged;
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 0, false, &purged), PCIE_ACKNAK_PROGRESS);
    ck_assert_uint_eq(purged, 1);
    ck_assert(pcie_dll_tx_may_send_new(&t));
}
END_TEST

START_TEST(test_tx_ack_across_wrap)
{
    pcie_dll_tx t;
    pcie_dll_tx_init(&t, PCIE_SEQ_BITS_NFM);
    t.next_transmit_seq = 4090;   /* as after 4090 acknowledged TLPs */
    t.ackd_seq = 4089;
    for (int i = 0; i < 20; i++) pcie_dll_tx_assign(&t);
    ck_assert_uint_eq(t.next_transmit_seq, 14);           /* wrapped */
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 20);
    uint16_t purged;
    /* Ack naming the last acknowledged TLP: valid, no progress */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 4089, false, &purged), PCIE_ACKNAK_NONE);
    ck_assert_uint_eq(purged, 0);
    /* cumulative Ack across the wrap: 4090..4095, 0..2 = 9 TLPs */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 2, false, &purged), PCIE_ACKNAK_PROGRESS);
    ck_assert_uint_eq(purged, 9);
    ck_assert_uint_eq(t.ackd_seq, 2);
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 11);
    /* an Ack for a TLP never sent (13 is the last sent; 14 is not) is discarded */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 14, false, &purged), PCIE_ACKNAK_INVALID);
    /* an old one (before ACKD_SEQ) too */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 4000, false, &purged), PCIE_ACKNAK_INVALID);
    ck_assert_uint_eq(t.invalid_acknaks, 2);
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 13, false, &purged), PCIE_ACKNAK_PROGRESS);
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 0);
}
END_TEST

START_TEST(test_tx_nak_replay_and_rollover)
{
    pcie_dll_tx t;
    pcie_dll_tx_init(&t, PCIE_SEQ_BITS_NFM);
    for (int i = 0; i < 10; i++) pcie_dll_tx_assign(&t);
    uint16_t purged;
    /* Nak 3: TLPs 0..3 acknowledged, 4..9 replayed */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 3, true, &purged), PCIE_ACKNAK_REPLAY);
    ck_assert_uint_eq(purged, 4);
    ck_assert_uint_eq(t.replay_num, 0 + 1);   /* progress reset it, then the replay counted */
    ck_assert_uint_eq(pcie_dll_tx_outstanding(&t), 6);
    /* no progress: Nak 3 again, then two timer expiries -> the 4th replay rolls over */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 3, true, &purged), PCIE_ACKNAK_REPLAY);
    ck_assert_uint_eq(t.replay_num, 2);
    ck_assert_int_eq(pcie_dll_tx_replay_event(&t), PCIE_ACKNAK_REPLAY);
    ck_assert_uint_eq(t.replay_num, 3);
    ck_assert_int_eq(pcie_dll_tx_replay_event(&t), PCIE_ACKNAK_RETRAIN);
    ck_assert_uint_eq(t.replay_num, 0);
    ck_assert_uint_eq(t.retrains, 1);
    ck_assert_uint_eq(t.replays, 4);
    /* forward progress resets REPLAY_NUM */
    ck_assert_int_eq(pcie_dll_tx_replay_event(&t), PCIE_ACKNAK_REPLAY);
    ck_assert_uint_eq(t.replay_num, 1);
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 5, false, &purged), PCIE_ACKNAK_PROGRESS);
    ck_assert_uint_eq(t.replay_num, 0);
    /* a Nak with nothing left unacknowledged replays nothing */
    ck_assert_int_eq(pcie_dll_tx_acknak(&t, 9, true, &purged), PCIE_ACKNAK_PROGRESS);
    ck_assert_uint_eq(purged, 4);
    ck_assert_uint_eq(t.replay_num, 0);
}
END_TEST

START_TEST(test_rx_accept_duplicate_out_of_seq)
{
    pcie_dll_rx r;
    pcie_dll_rx_init(&r, PCIE_SEQ_BITS_NFM);
    ck_assert_uint_eq(pcie_dll_rx_ack_seq(&r), 4095);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 0, true), PCIE_RX_ACCEPT);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 1, true), PCIE_RX_ACCEPT);
    ck_assert_uint_eq(pcie_dll_rx_ack_seq(&r), 1);
    /* duplicates: anything up to 2048 behind NEXT_RCV_SEQ */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 1, true), PCIE_RX_DUPLICATE);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 0, true), PCIE_RX_DUPLICATE);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, (uint16_t)(2 - 2048 + 4096), true), PCIE_RX_DUPLICATE);
    /* out of sequence (ahead): Nak once, then discard until the expected TLP */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 5, true), PCIE_RX_NAK);
    ck_assert(r.nak_scheduled);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 6, true), PCIE_RX_DISCARD);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 2, false), PCIE_RX_DISCARD);   /* bad LCRC, Nak already scheduled */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 2, true), PCIE_RX_ACCEPT);
    ck_assert(!r.nak_scheduled);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 3, false), PCIE_RX_NAK);        /* bad LCRC: Nak */
    ck_assert_uint_eq(r.naks, 2);
    ck_assert_uint_eq(r.duplicates, 3);
    ck_assert_uint_eq(r.out_of_seq, 2);
    ck_assert_uint_eq(r.bad_crc, 2);
    /* 2049 behind NEXT_RCV_SEQ (= 2047 ahead) is out of sequence, exactly 2048 behind a duplicate */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, (uint16_t)(3 + 2047), true), PCIE_RX_DISCARD);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, (uint16_t)(3 + 2048), true), PCIE_RX_DUPLICATE);
}
END_TEST

START_TEST(test_rx_wrap)
{
    pcie_dll_rx r;
    pcie_dll_rx_init(&r, PCIE_SEQ_BITS_NFM);
    r.next_rcv_seq = 4095;
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 4095, true), PCIE_RX_ACCEPT);
    ck_assert_uint_eq(r.next_rcv_seq, 0);
    ck_assert_uint_eq(pcie_dll_rx_ack_seq(&r), 4095);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 4095, true), PCIE_RX_DUPLICATE);
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 2048, true), PCIE_RX_DUPLICATE);   /* exactly 2048 behind */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 2047, true), PCIE_RX_NAK);         /* 2049 behind = ahead */
    ck_assert_int_eq(pcie_dll_rx_tlp(&r, 0, true), PCIE_RX_ACCEPT);
}
END_TEST

/* ---- flow control ------------------------------------------------------------- */
START_TEST(test_fc_field_sizes)
{
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_PH, 1), 8);
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_PD, 1), 12);
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_NPH, 4), 10);
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_CPLD, 4), 14);
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_CPLH, 16), 12);
    ck_assert_uint_eq(pcie_fc_field_bits(PCIE_FC_PD, 16), 16);
}
END_TEST

START_TEST(test_fc_gate_wrap)
{
    pcie_fc_tx f;
    pcie_fc_tx_init(&f, 8);
    pcie_fc_tx_initfc(&f, 20, 1);
    ck_assert(!f.infinite);
    ck_assert_uint_eq(pcie_fc_tx_available(&f), 20);
    /* run the counters around the 8-bit space several times */
    uint32_t sent = 0;
    for (int round = 0; round < 40; round++) {
        while (pcie_fc_tx_gate(&f, 3)) {
            pcie_fc_tx_consume(&f, 3);
            sent += 3;
        }
        ck_assert_uint_lt(pcie_fc_tx_available(&f), 3);
        /* receiver frees 18 credits: limit advances, mod 256 */
        pcie_fc_tx_updatefc(&f, (f.limit + 18) & 0xFF, 1);
    }
    ck_assert_uint_ge(sent, 40 * 18 - 20);
    /* explicit wrap case: limit 5 (wrapped), consumed 250 -> 11 available */
    f.limit = 5;
    f.consumed = 250;
    ck_assert_uint_eq(pcie_fc_tx_available(&f), 11);
    ck_assert(pcie_fc_tx_gate(&f, 11));
    ck_assert(!pcie_fc_tx_gate(&f, 12));
    /* gating rule at the half-space boundary: (limit - (consumed + need)) mod 256 <= 128 */
    f.limit = 0;
    f.consumed = 0;
    ck_assert(pcie_fc_tx_gate(&f, 0));
    ck_assert(!pcie_fc_tx_gate(&f, 1));
    ck_assert(!pcie_fc_tx_gate(&f, 127));
    ck_assert(pcie_fc_tx_gate(&f, 128));   /* ambiguous by the rule's own arithmetic: the spec's <= admits it */
}
END_TEST

START_TEST(test_fc_infinite)
{
    pcie_fc_tx f;
    pcie_fc_tx_init(&f, 12);
    pcie_fc_tx_initfc(&f, 0, 1);
    ck_assert(f.infinite);
    for (int i = 0; i < 10000; i++) {
        ck_assert(pcie_fc_tx_gate(&f, 256));
        pcie_fc_tx_consume(&f, 256);
    }
    pcie_fc_rx r;
    pcie_fc_rx_init(&r, PCIE_FC_PD, 0, 1);
    ck_assert(r.infinite);
    ck_assert(pcie_fc_rx_receive(&r, 100000));
    ck_assert_uint_eq(pcie_fc_rx_field(&r), 0);
    ck_assert(!pcie_fc_rx_has_update(&r));
}
END_TEST

START_TEST(test_fc_scaled)
{
    /* Scaled FC x4: header field 127 -> 508 credits in a 10-bit counter */
    pcie_fc_rx r;
    pcie_fc_rx_init(&r, PCIE_FC_PH, 127, 4);
    pcie_fc_tx f;
    pcie_fc_tx_init(&f, pcie_fc_field_bits(PCIE_FC_PH, 4));
    pcie_fc_tx_initfc(&f, pcie_fc_rx_field(&r), 4);
    ck_assert_uint_eq(pcie_fc_tx_available(&f), 508);
    for (int i = 0; i < 508; i++) {
        ck_assert(pcie_fc_tx_gate(&f, 1));
        pcie_fc_tx_consume(&f, 1);
        ck_assert(pcie_fc_rx_receive(&r, 1));
    }
    ck_assert(!pcie_fc_tx_gate(&f, 1));
    ck_assert(!pcie_fc_rx_receive(&r, 1));          /* one more would overflow the receiver */
    r.received--;
    r.overflows = 0;
    /* releasing 3 credits is not yet visible: the field moves in units of 4 */
    pcie_fc_rx_release(&r, 3);
    ck_assert(!pcie_fc_rx_has_update(&r));
    pcie_fc_rx_release(&r, 1);
    ck_assert(pcie_fc_rx_has_update(&r));
    ck_assert_uint_eq(pcie_fc_rx_field(&r), 128);   /* (508 + 4) / 4 */
    pcie_fc_tx_updatefc(&f, pcie_fc_rx_field(&r), 4);
    r.advertised = pcie_fc_rx_limit_sent(&r);        /* what the UpdateFC told the transmitter */
    ck_assert_uint_eq(pcie_fc_tx_available(&f), 4);
    /* many rounds: the 8-bit field and the 10-bit counter wrap consistently */
    for (int round = 0; round < 1000; round++) {
        while (pcie_fc_tx_gate(&f, 1)) {
            pcie_fc_tx_consume(&f, 1);
            ck_assert(pcie_fc_rx_receive(&r, 1));
        }
        pcie_fc_rx_release(&r, 4 + (unsigned)(round % 3) * 4);
        r.advertised = pcie_fc_rx_limit_sent(&r);
        pcie_fc_tx_updatefc(&f, pcie_fc_rx_field(&r), 4);
    }
    ck_assert_uint_eq(r.overflows, 0);
    /* x16 data: 2047 x 16 = 32752 credits in a 16-bit counter */
    pcie_fc_tx d;
    pcie_fc_tx_init(&d, pcie_fc_field_bits(PCIE_FC_PD, 16));
    pcie_fc_tx_initfc(&d, 2047, 16);
    ck_assert_uint_eq(pcie_fc_tx_available(&d), 32752);
    ck_assert(pcie_fc_tx_gate(&d, 32752));
    ck_assert(!pcie_fc_tx_gate(&d, 32753));
}
END_TEST

/* ---- timers and rates against the spec's tables ------------------------------ */
/* AckNak latency limit, symbol times: spec Table 3-12 ("8.0 GT/s and higher",
 * x1 x2 x4 x8 x16) and the x8 rows of the 2.5 and 5.0 GT/s tables
 * (MPS 128..4096), as transcribed in /work/shared/reference/pcie.md §1. */
START_TEST(test_ack_limit_tables)
{
    static const unsigned mps[6] = { 128, 256, 512, 1024, 2048, 4096 };
    static const unsigned width[5] = { 1, 2, 4, 8, 16 };
    static const uint32_t t8[6][5] = {
        { 333, 224, 169, 163, 144 },    { 512, 313, 214, 203, 168 },    { 655, 385, 250, 182, 182 },
        { 1167, 641, 378, 246, 246 },   { 2191, 1153, 634, 374, 374 }, { 4239, 2177, 1146, 630, 630 },
    };
    static const uint32_t x8_2g5[6] = { 67, 107, 86, 150, 278, 534 }, x8_5g[6] = { 118, 158, 137, 201, 329, 585 };
    for (unsigned m = 0; m < 6; m++) {
        for (unsigned w = 0; w < 5; w++)
            for (unsigned gen = 3; gen <= 5; gen++)   /* the 8 GT/s table applies to every rate above */
                ck_assert_msg(pcie_ack_limit_symbols(gen, width[w], mps[m]) == t8[m][w], "gen%u x%u MPS %u: %u, table %u",
                              gen, width[w], mps[m], pcie_ack_limit_symbols(gen, width[w], mps[m]), t8[m][w]);
        ck_assert_uint_eq(pcie_ack_limit_symbols(1, 8, mps[m]), x8_2g5[m]);
        ck_assert_uint_eq(pcie_ack_limit_symbols(2, 8, mps[m]), x8_5g[m]);
    }
}
END_TEST

/* Rates after encoding, symbol times and REPLAY_TIMER limits: 8b/10b (10 UI
 * a symbol), 128b/130b (8 UI, sync header in the rate), Gen6 1b/1b PAM4; the
 * replay limit is the legacy 3 x AckLimit up to 8 GT/s and the simplified
 * 24,000 symbol times from 16 GT/s, plus the channel round trip. */
START_TEST(test_phy_rates_and_replay_timer)
{
    static const struct { unsigned gen, lanes; double GBps, symbol_ns; } r[] = {
        { 1, 1, 0.25, 4.0 }, { 2, 4, 2.0, 2.0 }, { 3, 8, 7.876923, 1.0 }, { 4, 16, 31.507692, 0.5 },
        { 5, 16, 63.015385, 0.25 }, { 6, 16, 128.0, 0.125 },
    };
    for (unsigned i = 0; i < sizeof r / sizeof r[0]; i++) {
        pcie_phy phy;
        pcie_phy_init(&phy, r[i].gen, r[i].lanes, 256, 0);
        ck_assert_msg(fabs(phy.raw_GBps - r[i].GBps) < 1e-5, "gen%u x%u: %.6f GB/s", r[i].gen, r[i].lanes, phy.raw_GBps);
        ck_assert_double_eq_tol(phy.symbol_ns, r[i].symbol_ns, 1e-12);
        ck_assert(phy.flit_mode == (r[i].gen == 6));
    }
    pcie_phy phy;
    pcie_phy_init(&phy, 3, 8, 256, SIM_NS(20));
    ck_assert_uint_eq(phy.ack_limit_ps, SIM_NS(203));                 /* Table 3-12: 203 symbol times of 1 ns */
    ck_assert_uint_eq(phy.replay_timeout_ps, SIM_NS(3 * 203 + 40));   /* legacy 3 x AckLimit + 2 x wire */
    pcie_phy_init(&phy, 5, 16, 256, SIM_NS(20));
    ck_assert_uint_eq(phy.ack_limit_ps, SIM_NS(42));                  /* 168 symbol times of 0.25 ns */
    ck_assert_uint_eq(phy.replay_timeout_ps, SIM_NS(6000 + 40));      /* 24,000 symbol times */
    /* SKP: 8b/10b every 1180 symbol times, 4 symbols a lane; 128b/130b every
     * 370 blocks of 16 symbols, 16 symbols + a 4-symbol EDS a lane */
    pcie_phy_init(&phy, 1, 4, 256, 0);
    ck_assert_uint_eq(phy.skp_interval_ps, SIM_NS(1180 * 4));
    ck_assert_uint_eq(phy.skp_bytes, 4 * 4);
    pcie_phy_init(&phy, 4, 8, 256, 0);
    ck_assert_uint_eq(phy.skp_interval_ps, SIM_NS(370 * 16) / 2);
    ck_assert_uint_eq(phy.skp_bytes, 20 * 8);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pcie_dll");
    TCase *seq = tcase_create("sequence");
    tcase_add_test(seq, test_seq_arith_wrap);
    tcase_add_test(seq, test_tx_reset_and_half_space);
    tcase_add_test(seq, test_tx_ack_across_wrap);
    tcase_add_test(seq, test_tx_nak_replay_and_rollover);
    tcase_add_test(seq, test_rx_accept_duplicate_out_of_seq);
    tcase_add_test(seq, test_rx_wrap);
    suite_add_tcase(s, seq);
    TCase *fc = tcase_create("flow_control");
    tcase_add_test(fc, test_fc_field_sizes);
    tcase_add_test(fc, test_fc_gate_wrap);
    tcase_add_test(fc, test_fc_infinite);
    tcase_add_test(fc, test_fc_scaled);
    suite_add_tcase(s, fc);
    TCase *tm = tcase_create("timers");
    tcase_add_test(tm, test_ack_limit_tables);
    tcase_add_test(tm, test_phy_rates_and_replay_timer);
    suite_add_tcase(s, tm);
    return run_suite(s);
}
