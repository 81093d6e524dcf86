/* Unit tests of the whole PCIe link model (requester, completer, two ports,
 * two wires): replay on Nak and on timeout through the real ports, REPLAY_NUM
 * rollover -> retrain, Scaled FC against the unscaled limit, the efficiency
 * band for every generation and width, Flit Mode FEC, the lookahead giving
 * the same results as one TLP per wake, each link partner advertising its
 * own credits (and being checked per port), each port's packet pool
 * conserved mid-run, freeing a system with packets on the wire, the port
 * API embedded on two links, and bad configurations. */
#include <check.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "models/pcie/pcie_port.h"
#include "tb/pcie_common.h"
#include "check_simrun.h"
#include "check_run.h"

static pcie_cfg base_cfg(unsigned gen, unsigned lanes)
{
    pcie_cfg c;
    memset(&c, 0, sizeof c);
    c.gen = gen;
    c.lanes = lanes;
    c.mps = 256;
    c.mrrs = 512;
    c.rcb = 64;
    c.addr64 = true;
    for (unsigned side = 0; side < PCIE_SIDES; side++) {   /* the parameters' defaults */
        c.adv[side][PCIE_FC_PH] = 127;
        c.adv[side][PCIE_FC_PD] = 2047;
        c.adv[side][PCIE_FC_NPH] = 64;
        c.adv[side][PCIE_FC_NPD] = 64;
    }
    c.fc_scale = 1;
    c.wire_ps = SIM_NS(20);
    c.rx_ps = 0;
    c.cpl_ps = SIM_NS(300);
    c.retrain_ps = SIM_US(2);
    c.tags = 256;
    c.op = PCIE_OP_WR;
    c.size = 4096;
    c.count = 200;
    return c;
}

typedef struct outcome {
    pcie_results r;
    double goodput_GBps;
    bool conserved;
} outcome;

static outcome run(const pcie_cfg *cfg)
{
    outcome o;
    char why[256];
    ck_assert_msg(pcie_cfg_check(cfg, why, sizeof why) == NULL, "config: %s", why);
    sim_kernel *k = sim_kernel_new();
    pcie_sys *s = pcie_sys_new(k, cfg, 1, NULL);
    pcie_run(NULL, k, s, 0, SIM_US(20000), SIM_TIME_MAX);
    pcie_sys_results(s, &o.r);
    unsigned dirs = cfg->op == PCIE_OP_RDWR ? 2 : 1;
    o.goodput_GBps = pcie_dir_goodput_GBps(&o.r.dir[PCIE_DOWN]) + pcie_dir_goodput_GBps(&o.r.dir[PCIE_UP]);
    o.conserved = o.r.completed && o.r.xfers_done == cfg->count * dirs && pcie_sys_check_links(s, why, sizeof why) == 0 &&
                  pcie_sys_check_credits(s, why, sizeof why) == 0;
    for (int d = 0; d < 2; d++)
        o.conserved = o.conserved && !o.r.dir[d].lost && !o.r.dir[d].duplicated && !o.r.dir[d].reordered;
    sim_hist_free(&o.r.latency_ns);
    pcie_sys_free(s);
    sim_kernel_free(k);
    return o;
}

START_TEST(test_replay_on_nak)
{
    pcie_cfg c = base_cfg(5, 16);
    c.err[PCIE_DOWN].nak_every = 97;
    outcome o = run(&c);
    ck_assert(o.conserved);
    uint64_t forced = o.r.dir[PCIE_DOWN].forced_naks;
    ck_assert_uint_gt(forced, 10);
    ck_assert_uint_eq(o.r.naks_received, forced);      /* one Nak per bad TLP (each followed by good ones) */
    ck_assert_uint_eq(o.r.replays, forced);
    ck_assert_uint_eq(o.r.replay_timeouts, 0);
    ck_assert_uint_eq(o.r.retrains, 0);
    ck_assert_uint_gt(o.r.dir[PCIE_DOWN].tlps_replayed, forced);   /* go-back-N: the bad one and those after it */
}
END_TEST

START_TEST(test_replay_on_timeout)
{
    /* the upstream wire corrupts everything for 3 us: every Ack is lost, the
     * replay timer expires, the replays are duplicates the receiver Acks, and
     * once the wire is good again an Ack gets through */
    pcie_cfg c = base_cfg(3, 8);
    c.count = 200;
    c.err[PCIE_UP].bad_from_ps = SIM_US(1);
    c.err[PCIE_UP].bad_until_ps = SIM_US(4);
    outcome o = run(&c);
    ck_assert(o.conserved);
    ck_assert_uint_gt(o.r.replay_timeouts, 0);
    ck_assert_uint_eq(o.r.replays, o.r.replay_timeouts);     /* no Naks: every replay was a timer expiry */
    ck_assert_uint_eq(o.r.naks_received, 0);
    /* dropped Acks alone (every 2nd) are covered by the later cumulative ones */
    pcie_cfg d = base_cfg(3, 8);
    d.err[PCIE_UP].drop_ack_every = 2;
    outcome od = run(&d);
    ck_assert(od.conserved);
    ck_assert_uint_gt(od.r.dir[PCIE_UP].dropped_acks, 0);
}
END_TEST

START_TEST(test_rollover_retrain)
{
    pcie_cfg c = base_cfg(5, 16);
    c.count = 300;
    pcie_phy phy;
    pcie_phy_init(&phy, c.gen, c.lanes, c.mps, c.wire_ps);
    c.err[PCIE_DOWN].bad_from_ps = SIM_US(2);
    c.err[PCIE_DOWN].bad_until_ps = SIM_US(2) + 4 * phy.replay_timeout_ps;
    outcome o = run(&c);
    ck_assert(o.conserved);
    ck_assert_uint_ge(o.r.retrains, 1);
    ck_assert_uint_eq(o.r.replays_before_retrain_max, 4);
    ck_assert_uint_ge(o.r.replay_timeouts, 3);
    ck_assert_uint_eq(o.r.naks_received, 1);           /* NAK_SCHEDULED stops further Naks while all are bad */
}
END_TEST

START_TEST(test_ber_both_directions_rdwr)
{
    pcie_cfg c = base_cfg(4, 8);
    c.op = PCIE_OP_RDWR;
    c.count = 300;
    c.err[PCIE_DOWN].ber = c.err[PCIE_UP].ber = 3e-6;
    outcome o = run(&c);
    ck_assert(o.conserved);
    ck_assert_uint_gt(o.r.replays, 0);
}
END_TEST

START_TEST(test_scaled_fc_gen5)
{
    /* a 500 ns wire: the credit loop is > 1 us, beyond what 127/2047 unscaled credits cover */
    pcie_cfg c = base_cfg(5, 16);
    c.wire_ps = SIM_NS(500);
    c.count = 400;
    pcie_cfg inf = c;
    inf.adv[PCIE_COMPLETER][PCIE_FC_PH] = inf.adv[PCIE_COMPLETER][PCIE_FC_PD] = 0;
    outcome sat = run(&inf);
    outcome unscaled = run(&c);
    c.fc_scale = 4;
    outcome scaled = run(&c);
    ck_assert(sat.conserved && unscaled.conserved && scaled.conserved);
    ck_assert_double_gt(unscaled.r.credit_loop_ns, 560.0);
    ck_assert_double_lt(unscaled.goodput_GBps, 0.6 * sat.goodput_GBps);
    ck_assert_double_gt(scaled.goodput_GBps, 0.97 * sat.goodput_GBps);
    ck_assert_double_gt(unscaled.r.credit_stall_frac, 0.3);
    ck_assert_double_lt(scaled.r.credit_stall_frac, 0.05);
}
END_TEST

/* For MWr of >= 256 B the efficiency lies between the pcie-model prediction and
 * the no-DLLP bound, for every generation and width (loop test: _i = gen-1). */
START_TEST(test_efficiency_band)
{
    static const unsigned widths[] = { 1, 2, 4, 8, 16, 32 };
    static const uint64_t sizes[] = { 256, 1024, 4096 };
    unsigned gen = (unsigned)_i + 1;
    for (unsigned w = 0; w < 6; w++) {
        for (unsigned z = 0; z < 3; z++) {
            pcie_cfg c = base_cfg(gen, widths[w]);
            c.adv[PCIE_COMPLETER][PCIE_FC_PH] = c.adv[PCIE_COMPLETER][PCIE_FC_PD] = 0;   /* the link, not credits, limits */
            c.size = sizes[z];
            c.count = 1600 * 256 / sizes[z] + 8;
            outcome o = run(&c);
            ck_assert(o.conserved);
            double got = o.goodput_GBps * 8;
            double lo = pcie_ref_model_mwr_Gbps(gen, widths[w], c.mps, c.size, true, false);
            double hi = pcie_ref_no_dllp_mwr_Gbps(gen, widths[w], c.mps, c.size, true, false);
            ck_assert_msg(got >= lo && got <= hi, "gen%u x%u MWr %u B: %.2f Gb/s outside [%.2f, %.2f]", gen, widths[w],
                          (unsigned)c.size, got, lo, hi);
        }
    }
}
END_TEST

START_TEST(test_gen3_x8_band_numbers)
{
    pcie_cfg c = base_cfg(3, 8);
    c.count = 500;
    outcome o = run(&c);
    double gbps = o.goodput_GBps * 8;
    ck_assert(o.conserved);
    ck_assert_msg(gbps >= 52.9 && gbps <= 57.6, "Gen3 x8 MPS 256 MWr: %.2f Gb/s", gbps);
    ck_assert_double_lt(fabs(pcie_ref_model_mwr_Gbps(3, 8, 256, 4096, true, false) - 52.92), 0.01);
}
END_TEST

START_TEST(test_flit_fec)
{
    pcie_cfg c = base_cfg(6, 16);
    c.count = 400;
    c.err[PCIE_DOWN].ber = c.err[PCIE_UP].ber = 1e-6;
    outcome o = run(&c);
    ck_assert(o.conserved);
    /* single-byte errors per codeword are corrected, nearly nothing is replayed */
    ck_assert_uint_gt(o.r.dir[PCIE_DOWN].fec_corrected, 0);
    ck_assert_uint_lt(o.r.dir[PCIE_DOWN].corrupted, o.r.dir[PCIE_DOWN].fec_corrected / 10 + 2);
    /* forced flit Naks replay flits */
    pcie_cfg n = base_cfg(6, 8);
    n.err[PCIE_DOWN].nak_every = 50;
    outcome on = run(&n);
    ck_assert(on.conserved);
    ck_assert_uint_gt(on.r.replays, 0);
    ck_assert_uint_eq(on.r.replays, on.r.dir[PCIE_DOWN].forced_naks);
}
END_TEST

/* A long Gen6 link: more flits in flight than the 10-bit flit sequence space
 * allows (511 unacknowledged), so the half-space rule limits the rate. */
START_TEST(test_flit_sequence_space_limits)
{
    pcie_cfg c = base_cfg(6, 16);
    c.adv[PCIE_COMPLETER][PCIE_FC_PH] = c.adv[PCIE_COMPLETER][PCIE_FC_PD] = 0;
    c.wire_ps = SIM_NS(1000);
    c.count = 400;
    outcome o = run(&c);
    ck_assert(o.conserved);
    ck_assert_uint_eq(o.r.max_replay_occupancy, 511);
    /* 511 flits of 256 B per round trip (~2 us + Ack delay) */
    ck_assert_double_lt(o.goodput_GBps, 511.0 * 236 / 2000.0);
    ck_assert_double_gt(o.goodput_GBps, 0.8 * 511.0 * 236 * 256 / 272 / 2100.0);
}
END_TEST

START_TEST(test_lookahead_same_results)
{
    const enum pcie_op ops[3] = { PCIE_OP_WR, PCIE_OP_RD, PCIE_OP_RDWR };
    for (int i = 0; i < 3; i++) {
        pcie_cfg c = base_cfg(5, 16);
        c.op = ops[i];
        c.count = 300;
        c.rx_ps = SIM_NS(1);
        c.adv[PCIE_COMPLETER][PCIE_FC_PD] = 600;          /* some credit stalls too */
        outcome a = run(&c);
        c.no_lookahead = true;
        outcome b = run(&c);
        ck_assert(a.conserved && b.conserved);
        ck_assert_uint_eq(a.r.dir[0].tlps_new, b.r.dir[0].tlps_new);
        ck_assert_uint_eq(a.r.dir[1].tlps_new, b.r.dir[1].tlps_new);
        /* equal up to the link's 1 ps rounding of each serialisation */
        ck_assert_double_lt(fabs(a.goodput_GBps / b.goodput_GBps - 1), 1e-3);
        ck_assert_double_lt(fabs(a.r.credit_loop_ns / b.r.credit_loop_ns - 1), 5e-3);
        ck_assert_double_lt(fabs((double)a.r.end_ps / (double)b.r.end_ps - 1), 5e-3);   /* the last Ack may fall in another coalescing window */
    }
}
END_TEST

START_TEST(test_reads_split_and_complete)
{
    pcie_cfg c = base_cfg(4, 4);
    c.op = PCIE_OP_RD;
    c.size = 3000;          /* unaligned transfers: MRRS and RCB boundaries inside */
    c.count = 100;
    outcome o = run(&c);
    ck_assert(o.conserved);
    c.cpl_split_rcb = true;
    outcome r = run(&c);
    ck_assert(r.conserved);
    /* RCB-sized completions cost more headers: less goodput */
    ck_assert_uint_gt(r.r.dir[PCIE_UP].tlps_new, o.r.dir[PCIE_UP].tlps_new * 3);
    ck_assert_double_lt(r.goodput_GBps, o.goodput_GBps);
}
END_TEST

/* Each partner advertises its own credits: the port with the small
 * advertisement throttles the direction it receives; the same advertisement
 * at the other port changes nothing (it receives none of that class). */
START_TEST(test_per_partner_credits)
{
    pcie_cfg c = base_cfg(5, 16);
    c.count = 100;
    outcome full = run(&c);
    ck_assert(full.conserved);

    pcie_cfg w = c;                              /* completer (root port): one MPS of posted data */
    w.adv[PCIE_COMPLETER][PCIE_FC_PD] = 256 / PCIE_FC_UNIT_BYTES;
    outcome rc_small = run(&w);
    ck_assert(rc_small.conserved);
    ck_assert_msg(rc_small.goodput_GBps < 0.6 * full.goodput_GBps, "completer pd=16: %.2f GB/s vs %.2f GB/s",
                  rc_small.goodput_GBps, full.goodput_GBps);
    ck_assert_double_gt(rc_small.r.credit_stall_frac, 0.3);

    pcie_cfg e = c;                              /* the requester's own posted buffer: writes never go there */
    e.adv[PCIE_REQUESTER][PCIE_FC_PD] = 256 / PCIE_FC_UNIT_BYTES;
    e.adv[PCIE_REQUESTER][PCIE_FC_PH] = 1;
    outcome ep_small = run(&e);
    ck_assert(ep_small.conserved);
    ck_assert_msg(fabs(ep_small.goodput_GBps / full.goodput_GBps - 1) < 1e-9, "requester ep_pd=16: %.4f GB/s vs %.4f GB/s",
                  ep_small.goodput_GBps, full.goodput_GBps);
    ck_assert_double_lt(ep_small.r.credit_stall_frac, 0.01);

    /* reads: the completions go to the requester, whose CplH/CplD (finite
     * here, against the endpoint rule, to see them act) throttle them */
    pcie_cfg r = c;
    r.op = PCIE_OP_RD;
    outcome rd_full = run(&r);
    ck_assert(rd_full.conserved);
    pcie_cfg re = r;
    re.adv[PCIE_REQUESTER][PCIE_FC_CPLH] = 2;
    re.adv[PCIE_REQUESTER][PCIE_FC_CPLD] = 256 / PCIE_FC_UNIT_BYTES;
    outcome rd_ep = run(&re);
    ck_assert(rd_ep.conserved);
    ck_assert_msg(rd_ep.goodput_GBps < 0.6 * rd_full.goodput_GBps, "requester cplh=2 cpld=16: %.2f vs %.2f GB/s",
                  rd_ep.goodput_GBps, rd_full.goodput_GBps);
    pcie_cfg rr = r;                             /* the completer's completion credits: none come to it */
    rr.adv[PCIE_COMPLETER][PCIE_FC_CPLH] = 2;
    rr.adv[PCIE_COMPLETER][PCIE_FC_CPLD] = 256 / PCIE_FC_UNIT_BYTES;
    outcome rd_rc = run(&rr);
    ck_assert(rd_rc.conserved);
    ck_assert_msg(fabs(rd_rc.goodput_GBps / rd_full.goodput_GBps - 1) < 1e-9, "completer rc_cplh=2 rc_cpld=16: %.4f vs %.4f",
                  rd_rc.goodput_GBps, rd_full.goodput_GBps);
}
END_TEST

/* Through simrun: a bad advertisement exits 2 naming it; the other side's
 * advertisements (no TLP goes to their receivers in these tests) are refused
 * as not applicable, and the report lists them so. */
START_TEST(test_per_partner_params_simrun)
{
    static const struct { const char *args, *must_say; } bad[] = {
        { "pcie_bw ep_pd=8", "'ep_pd' does not apply" },
        { "pcie_bw rc_cpld=4", "'rc_cpld' does not apply" },
        { "pcie_bw pd=8", "pd=8" },           /* below one MPS (16 credits at mps=256) */
        { "pcie_bw op=rd cpld=4", "cpld=4" },
    };
    char dir[64], cmd[512], out[8192];
    snprintf(dir, sizeof dir, "/tmp/check_pcie_link.%d", (int)getpid());
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s trace=0", bad[i].args);
        int st = check_simrun(dir, cmd, out, sizeof out);
        ck_assert_msg(st == 2, "%s: exit %d (expected 2)\n%s", bad[i].args, st, out);
        ck_assert_msg(strstr(out, bad[i].must_say) != NULL, "%s: message does not name %s:\n%s", bad[i].args,
                      bad[i].must_say, out);
    }
    ck_assert_msg(check_simrun(dir, "pcie_bw op=rd count=20 cplh=8 trace=0", out, sizeof out) == 0,
                  "pcie_bw op=rd count=20 cplh=8 failed:\n%s", out);
    snprintf(cmd, sizeof cmd, "%s/reports/pcie_bw.json", dir);
    FILE *f = fopen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    static char rep[1 << 17];
    size_t n = fread(rep, 1, sizeof rep - 1, f);
    rep[n] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(rep);
    ck_assert_ptr_nonnull(j);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
    static const struct { const char *name; double v; } want[] = {
        { "nph", 64 }, { "cplh", 8 }, { "cpld", 0 },
    };
    for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, want[i].name);
        ck_assert_msg(cJSON_IsNumber(v) && v->valuedouble == want[i].v, "params.%s not reported as %g", want[i].name,
                      want[i].v);
    }
    const cJSON *na = cJSON_GetObjectItemCaseSensitive(params, "not_applicable");
    static const char *const moot[] = { "ep_ph", "rc_cplh", "ph", "pd" };   /* other side; op=rd sends no MWr */
    for (unsigned i = 0; i < sizeof moot / sizeof moot[0]; i++)
        ck_assert_msg(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(na, moot[i])), "params.not_applicable.%s missing",
                      moot[i]);
    cJSON_Delete(j);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Each port owns its packet pool and the receiver returns a packet to its
 * sender's: at any stop, mid-run too, the packets out of each port's pool are
 * exactly those on its transmit link (pcie_sys_check_links), with deferred
 * arrivals (rx_ps > 0), Flit Mode, and replays under bit errors both ways. */
START_TEST(test_pools_conserved_mid_run)
{
    pcie_cfg cfgs[3] = { base_cfg(5, 16), base_cfg(6, 8), base_cfg(4, 4) };
    cfgs[0].rx_ps = SIM_NS(1);
    cfgs[1].op = PCIE_OP_RDWR;
    cfgs[2].op = PCIE_OP_RDWR;
    cfgs[2].err[PCIE_DOWN].ber = cfgs[2].err[PCIE_UP].ber = 1e-6;
    for (int i = 0; i < 3; i++) {
        sim_kernel *k = sim_kernel_new();
        pcie_sys *s = pcie_sys_new(k, &cfgs[i], 3, NULL);
        char why[256];
        unsigned stops = 0;
        for (sim_time_ps t = SIM_NS(1500); !pcie_sys_run(s, t) && t < SIM_US(20000); t += SIM_NS(1500)) {
            ck_assert_msg(pcie_sys_check_links(s, why, sizeof why) == 0, "config %d at %" PRIu64 " ps: %s", i, t, why);
            stops++;
        }
        ck_assert_msg(stops >= 3, "config %d: only %u stops before the end", i, stops);
        ck_assert_msg(pcie_sys_check_links(s, why, sizeof why) == 0, "config %d at the end: %s", i, why);
        pcie_sys_free(s);
        sim_kernel_free(k);
    }
}
END_TEST

/* Every message on the wire is a sim_pkt from its sender's pool, and each
 * pool is freed strictly (a packet not back aborts): freeing a system in the
 * middle of a run, with TLPs, DLLPs and flits on both wires (a 20 ns wire
 * carries several at any time while streaming), gives back what the links
 * carry first. Non-Flit with deferred arrivals, Flit Mode, and bit errors. */
START_TEST(test_free_mid_run)
{
    pcie_cfg cfgs[3] = { base_cfg(5, 16), base_cfg(6, 16), base_cfg(4, 8) };
    cfgs[0].rx_ps = SIM_NS(5);
    cfgs[1].op = PCIE_OP_RDWR;
    cfgs[2].op = PCIE_OP_RDWR;
    cfgs[2].err[PCIE_DOWN].ber = cfgs[2].err[PCIE_UP].ber = 1e-6;
    for (int i = 0; i < 3; i++)
        for (sim_time_ps stop = SIM_NS(900); stop < SIM_NS(3000); stop += SIM_NS(211)) {
            sim_kernel *k = sim_kernel_new();
            pcie_sys *s = pcie_sys_new(k, &cfgs[i], 3, NULL);
            ck_assert_msg(!pcie_sys_run(s, stop), "config %d ended before %" PRIu64 " ps", i, stop);
            pcie_sys_free(s);
            sim_kernel_free(k);
        }
}
END_TEST

/* The public port API as a component embeds it (pcie_port.h): two ports on
 * two links, each with its own cfg; one side submits MWr TLPs, the other
 * counts what app.deliver hands it. pcie_port_check fails mid-run when asked
 * for a drained port (TLPs still in the replay buffer) and passes at the end,
 * with every TLP delivered once and the credits the TLPs took released. */
typedef struct embed_sink { uint64_t delivered, bytes, next_serial; bool in_order; } embed_sink;
static void embed_deliver(void *ctx, pcie_port *p, const pcie_tlp *t)
{
    (void)p;
    embed_sink *e = ctx;
    if (t->serial != e->next_serial) e->in_order = false;
    e->next_serial = t->serial + 1;
    e->delivered++;
    e->bytes += t->len;
}
static void embed_refill(void *ctx, pcie_port *p, unsigned cls) { (void)ctx; (void)p; (void)cls; }

START_TEST(test_port_api_embedded)
{
    for (unsigned gen = 5; gen <= 6; gen++) {
        sim_kernel *k = sim_kernel_new();
        pcie_port_cfg pc = { .gen = gen, .lanes = 16, .mps = 256, .fc_scale = 1, .wire_ps = SIM_NS(20),
                             .rx_ps = SIM_NS(1), .retrain_ps = SIM_US(2) };
        pc.adv[PCIE_FC_PH] = 32;
        pc.adv[PCIE_FC_PD] = 512;
        pc.adv[PCIE_FC_NPH] = pc.adv[PCIE_FC_NPD] = 64;
        pc.link_error_free = true;
        pcie_phy phy;
        pcie_phy_init(&phy, gen, 16, 256, pc.wire_ps);
        sim_link_cfg lc = { .latency_ps = pc.wire_ps, .bandwidth_GBps = phy.raw_GBps,
                            .credit_latency_ps = SIM_LINK_SAME_LATENCY };
        lc.name = "a2b";
        sim_link *ab = sim_link_new(k, &lc);
        lc.name = "b2a";
        sim_link *ba = sim_link_new(k, &lc);
        pcie_port_cfg pb = pc;
        pb.adv[PCIE_FC_PH] = 64;           /* each end advertises its own */
        pcie_port *a = pcie_port_new(k, "a", &pc, PCIE_DOWN, ab, ba, 1, NULL);
        pcie_port *b = pcie_port_new(k, "b", &pb, PCIE_UP, ba, ab, 1, NULL);
        embed_sink sa = { .in_order = true }, sb = { .in_order = true };
        pcie_port_set_app(a, &(pcie_port_app){ &sa, embed_deliver, embed_refill, NULL, NULL });
        pcie_port_set_app(b, &(pcie_port_app){ &sb, embed_deliver, embed_refill, NULL, NULL });
        enum { N = 400 };
        for (unsigned i = 0; i < N; i++) {
            pcie_tlp t = { .type = PCIE_TLP_MWR, .addr = 0x100000000ull + 256ull * i, .len = 256, .hdr_bytes = 16 };
            pcie_port_submit(a, &t);
        }
        char why[256];
        sim_run(k, SIM_NS(600));
        ck_assert_msg(pcie_port_check(a, false, why, sizeof why) == 0, "gen%u mid-run: %s", gen, why);
        ck_assert_msg(pcie_port_replay_occupancy(a) > 0, "gen%u: nothing in flight mid-run", gen);
        ck_assert_msg(pcie_port_check(a, true, why, sizeof why) != 0, "gen%u: a busy port passed as drained", gen);
        sim_run(k, SIM_US(100));
        ck_assert_uint_eq(sb.delivered, N);
        ck_assert_uint_eq(sb.bytes, 256u * N);
        ck_assert(sb.in_order);
        ck_assert_uint_eq(sa.delivered, 0);
        ck_assert_msg(pcie_port_check(a, true, why, sizeof why) == 0, "gen%u a: %s", gen, why);
        ck_assert_msg(pcie_port_check(b, true, why, sizeof why) == 0, "gen%u b: %s", gen, why);
        pcie_port_counters ca, cb;
        pcie_port_get_counters(a, &ca);
        pcie_port_get_counters(b, &cb);
        ck_assert_uint_eq(ca.tl_sent, N);
        ck_assert_uint_eq(cb.tl_received, N);
        ck_assert_uint_eq(pcie_port_fc_rx(b, PCIE_FC_PH)->received, N);
        pcie_port_give_back_in_flight(ab);
        pcie_port_give_back_in_flight(ba);
        pcie_port_free(a);
        pcie_port_free(b);
        sim_link_free(ab);
        sim_link_free(ba);
        sim_kernel_free(k);
    }
}
END_TEST

START_TEST(test_bad_config)
{
    char why[256];
    pcie_cfg c = base_cfg(5, 16);
    c.lanes = 3;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "lanes=3"));
    c = base_cfg(5, 16);
    c.mps = 300;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "mps=300"));
    c = base_cfg(7, 16);
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "gen=7"));
    c = base_cfg(3, 16);
    c.fc_scale = 4;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    c = base_cfg(5, 16);
    c.adv[PCIE_COMPLETER][PCIE_FC_PH] = 128;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    c = base_cfg(5, 16);
    c.adv[PCIE_COMPLETER][PCIE_FC_PD] = 8;    /* below one MPS */
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "pd=8"));
    /* each side's advertisement is checked under its own parameter name */
    c = base_cfg(5, 16);
    c.adv[PCIE_REQUESTER][PCIE_FC_PD] = 8;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "ep_pd=8"));
    c = base_cfg(5, 16);
    c.adv[PCIE_COMPLETER][PCIE_FC_CPLD] = 4;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "rc_cpld=4"));
    c = base_cfg(5, 16);
    c.adv[PCIE_REQUESTER][PCIE_FC_CPLH] = 200;
    ck_assert_ptr_nonnull(pcie_cfg_check(&c, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "cplh=200"));
    c = base_cfg(5, 16);
    ck_assert_ptr_null(pcie_cfg_check(&c, why, sizeof why));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pcie_link");
    TCase *dll = tcase_create("dll");
    tcase_set_timeout(dll, 60);
    tcase_add_test(dll, test_replay_on_nak);
    tcase_add_test(dll, test_replay_on_timeout);
    tcase_add_test(dll, test_rollover_retrain);
    tcase_add_test(dll, test_ber_both_directions_rdwr);
    tcase_add_test(dll, test_flit_fec);
    tcase_add_test(dll, test_flit_sequence_space_limits);
    suite_add_tcase(s, dll);
    TCase *perf = tcase_create("performance");
    tcase_set_timeout(perf, 60);
    tcase_add_test(perf, test_scaled_fc_gen5);
    tcase_add_loop_test(perf, test_efficiency_band, 0, 6);
    tcase_add_test(perf, test_gen3_x8_band_numbers);
    tcase_add_test(perf, test_lookahead_same_results);
    tcase_add_test(perf, test_reads_split_and_complete);
    tcase_add_test(perf, test_per_partner_credits);
    tcase_add_test(perf, test_pools_conserved_mid_run);
    tcase_add_test(perf, test_free_mid_run);
    tcase_add_test(perf, test_port_api_embedded);
    suite_add_tcase(s, perf);
    TCase *cfg = tcase_create("config");
    tcase_add_test(cfg, test_bad_config);
    tcase_add_test(cfg, test_per_partner_params_simrun);
    suite_add_tcase(s, cfg);
    return run_suite(s);
}
