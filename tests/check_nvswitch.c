/* Unit tests of the nvswitch component on the kernel: the published
 * input-queued switch results reproduced through links and credits (Karol's
 * HOL limit for small and large N, VOQ with iSLIP/wavefront/rr near 100%,
 * PIM-1 at 1-(1-1/N)^N), fairness, the credit round trip, conservation, the
 * multicast speedup, determinism, and the refusal of an unavailable RTL core. */
#include "tb/nvs/nvs_experiment.h"
#include "sim/sim.h"
#include "check_run.h"

#include <check.h>
#include <math.h>
#include <string.h>

static nvs_uniform_cfg ucfg(int n, xbar_queue_kind q, xbar_alloc_kind a, int iters, int depth, double load)
{
    nvs_uniform_cfg c;
    memset(&c, 0, sizeof c);
    xbar_core_cfg_default(&c.net.sw.core, n);
    c.net.sw.core.queue = q;
    c.net.sw.core.alloc = a;
    c.net.sw.core.iters = iters;
    c.net.sw.core.depth = depth;
    c.net.sw.core.fanout_read = 1;
    c.net.sw.core.seed = 3;
    c.net.sw.credit_batch = 1;
    c.net.port_GBps = 25;
    c.net.flit_bytes = 16;
    c.net.link_latency_ns = 1;
    c.load = load;
    c.pattern = TRAFFIC_UNIFORM;
    c.pkt_flits = 1;
    c.cycles = 20000;
    c.warmup = 2000;
    c.seed = 3;
    c.record_latency = true;
    return c;
}

static nvs_uniform_result urun(const nvs_uniform_cfg *c)
{
    nvs_uniform_result r;
    char why[256] = "";
    sim_kernel *k = sim_kernel_new();
    int rc = nvs_run_uniform(k, c, &r, why, sizeof why);
    sim_kernel_free(k);
    ck_assert_msg(rc == 0, "run refused: %s", why);
    ck_assert_msg(r.cons.dropped == 0 && r.cons.duplicated == 0 && r.cons.out_of_order == 0,
                  "conservation: dropped %llu duplicated %llu out_of_order %llu", (unsigned long long)r.cons.dropped,
                  (unsigned long long)r.cons.duplicated, (unsigned long long)r.cons.out_of_order);
    ck_assert_msg(r.cons.links_ok, "%s", r.cons.links_why);
    return r;
}

START_TEST(fifo_hol_limit_by_n)
{
    /* Karol, Hluchyj & Morgan 1987, Table I (N=2: 0.75, N=4: 0.6553) and
     * 0.6016 for N=16 from the reference's slotted simulator. */
    const struct { int n; double expect; uint64_t cycles; } cases[] = { { 2, 0.7500, 40000 }, { 4, 0.6553, 40000 }, { 16, 0.6016, 30000 } };
    for (unsigned k = 0; k < 3; k++) {
        nvs_uniform_cfg c = ucfg(cases[k].n, XBAR_QUEUE_FIFO, XBAR_ALLOC_ISLIP, 1, 64, 1.0);
        c.cycles = cases[k].cycles;
        nvs_uniform_result r = urun(&c);
        ck_assert_msg(fabs(r.throughput - cases[k].expect) < 0.012, "FIFO N=%d: %.4f, expected %.4f", cases[k].n, r.throughput,
                      cases[k].expect);
        /* round-robin output arbiters share equally */
        ck_assert_msg((r.throughput_max_input - r.throughput_min_input) / r.throughput < 0.06, "FIFO N=%d unfair: %.4f..%.4f",
                      cases[k].n, r.throughput_min_input, r.throughput_max_input);
    }
}
END_TEST

/* The HOL limit does not depend on the output arbiter. */
START_TEST(fifo_limit_independent_of_arbiter)
{
    double t[3];
    const xbar_alloc_kind a[3] = { XBAR_ALLOC_ISLIP, XBAR_ALLOC_PIM, XBAR_ALLOC_RR };
    for (int k = 0; k < 3; k++) {
        nvs_uniform_cfg c = ucfg(16, XBAR_QUEUE_FIFO, a[k], 1, 64, 1.0);
        t[k] = urun(&c).throughput;
    }
    for (int k = 0; k < 3; k++) ck_assert_msg(fabs(t[k] - 0.6016) < 0.015, "arbiter %d: %.4f", k, t[k]);
}
END_TEST

/* A FIFO shallower than the credit round trip starves: depth 1 with a
 * ~5-cycle loop gives about 1/5; depth >= RTT restores the HOL limit. */
START_TEST(fifo_depth_below_rtt)
{
    nvs_uniform_cfg c = ucfg(16, XBAR_QUEUE_FIFO, XBAR_ALLOC_ISLIP, 1, 1, 1.0);
    c.net.link_latency_ns = 0;
    nvs_uniform_result r1 = urun(&c);
    c.net.sw.core.depth = 8;
    nvs_uniform_result r8 = urun(&c);
    ck_assert_msg(r1.throughput < 0.25, "depth 1: %.4f", r1.throughput);
    ck_assert_msg(fabs(r8.throughput - 0.6016) < 0.015, "depth 8: %.4f", r8.throughput);
}
END_TEST

START_TEST(voq_allocators_near_full)
{
    const struct { xbar_alloc_kind a; int iters; } cases[] = {
        { XBAR_ALLOC_ISLIP, 1 }, { XBAR_ALLOC_ISLIP, 4 }, { XBAR_ALLOC_WAVEFRONT, 1 }, { XBAR_ALLOC_RR, 1 }, { XBAR_ALLOC_PIM, 4 },
    };
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nvs_uniform_cfg c = ucfg(16, XBAR_QUEUE_VOQ, cases[k].a, cases[k].iters, 64, 1.0);
        nvs_uniform_result r = urun(&c);
        ck_assert_msg(r.throughput > 0.96, "VOQ %s-%d: %.4f", xbar_alloc_name(cases[k].a), cases[k].iters, r.throughput);
        ck_assert_msg(r.throughput_max_input - r.throughput_min_input < 0.03, "VOQ %s unfair", xbar_alloc_name(cases[k].a));
    }
}
END_TEST

START_TEST(pim1_saturation)
{
    const int ns[] = { 4, 16 };
    for (int k = 0; k < 2; k++) {
        nvs_uniform_cfg c = ucfg(ns[k], XBAR_QUEUE_VOQ, XBAR_ALLOC_PIM, 1, 64, 1.0);
        nvs_uniform_result r = urun(&c);
        double expect = 1.0 - pow(1.0 - 1.0 / ns[k], ns[k]);
        ck_assert_msg(fabs(r.throughput - expect) < 0.015, "PIM-1 N=%d: %.4f vs %.4f", ns[k], r.throughput, expect);
    }
}
END_TEST

/* Below saturation every flit is carried; at light load the latency is the
 * pipeline alone, and L adds exactly L-1 cycles. */
START_TEST(light_load_and_pipeline)
{
    nvs_uniform_cfg c = ucfg(16, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 64, 0.5);
    nvs_uniform_result r = urun(&c);
    ck_assert_msg(fabs(r.throughput - 0.5) < 0.01, "load 0.5 carried %.4f", r.throughput);
    c.load = 0.02;
    double lat[2];
    for (int L = 1; L <= 4; L += 3) {
        c.net.sw.core.latency = L;
        nvs_uniform_result q = urun(&c);
        lat[L == 1 ? 0 : 1] = q.latency_min_cycles;
    }
    ck_assert_msg(fabs(lat[1] - lat[0] - 3.0) < 1e-9, "L=1: %.4f, L=4: %.4f", lat[0], lat[1]);
    /* 640 ps cycles, 1 ns links: 1 serialisation + 1000 ps -> first edge after 1640 ps is
     * 1920 ps (3 cycles); +2 core cycles; +1 serialisation + 1000 ps = 7.5625 cycles */
    ck_assert_msg(fabs(lat[0] - 7.5625) < 1e-9, "zero-load latency %.4f", lat[0]);
}
END_TEST

START_TEST(deterministic_per_seed)
{
    nvs_uniform_cfg c = ucfg(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_PIM, 1, 16, 0.9);
    c.cycles = 5000;
    c.warmup = 500;
    nvs_uniform_result a = urun(&c), b = urun(&c);
    ck_assert(a.throughput == b.throughput && a.latency_avg_cycles == b.latency_avg_cycles && a.backlog_end == b.backlog_end);
    c.seed = 4;
    c.net.sw.core.seed = 4;
    nvs_uniform_result d = urun(&c);
    ck_assert(a.latency_avg_cycles != d.latency_avg_cycles);
}
END_TEST

/* Two runs of one configuration (e.g. with and without nvswitch_cfg.per_flit):
 * NULL if every result, kernel event count and end time is the same, else
 * what differs first. */
static const char *uniform_diff(const nvs_uniform_result *a, const nvs_uniform_result *b)
{
    if (a->sim_events != b->sim_events || a->sim_time_ps != b->sim_time_ps) return "kernel events or end time";
    if (a->throughput != b->throughput || a->latency_avg_cycles != b->latency_avg_cycles ||
        a->latency_p99_cycles != b->latency_p99_cycles || a->backlog_end != b->backlog_end)
        return "results";
    if (memcmp(a->per_input, b->per_input, sizeof a->per_input) || memcmp(a->per_output, b->per_output, sizeof a->per_output))
        return "per-port throughputs";
    if (a->cons.copies_delivered != b->cons.copies_delivered) return "copies delivered";
    return NULL;
}

/* Store-and-forward messages handed to the core as runs give exactly the
 * results of presenting their flits one per cycle. */
START_TEST(runs_match_per_flit)
{
    for (int k = 0; k < 4; k++) {
        nvs_uniform_cfg c = ucfg(k == 3 ? 64 : 8 + 3 * k, XBAR_QUEUE_VOQ, (xbar_alloc_kind)k, 1 + k % 2, 17 + 8 * k, 0.6 + 0.15 * k);
        c.pkt_flits = 3 + 5 * k;
        c.net.sw.saf = true;
        c.net.sw.core.latency = 1 + k % 3;
        c.net.sw.credit_batch = 1 + 4 * k;
        c.pattern = k == 2 ? TRAFFIC_HOTSPOT : TRAFFIC_UNIFORM;
        c.hotspot_frac = 0.3;
        c.cycles = k == 3 ? 2000 : 6000;
        c.warmup = 500;
        nvs_uniform_result a = urun(&c);
        c.net.sw.per_flit = true;
        nvs_uniform_result b = urun(&c);
        const char *diff = uniform_diff(&a, &b);
        ck_assert_msg(!diff, "config %d: %s differ", k, diff);
        ck_assert_msg(a.cons.copies_delivered > 1000, "config %d: delivered only %llu", k, (unsigned long long)a.cons.copies_delivered);
    }
}
END_TEST

/* The random tester (gem5 Ruby's idea): many small random store-and-forward
 * configurations, each run with runs and packet mode and again flit by flit,
 * must agree in every result, kernel event count and end time. */
START_TEST(packets_match_per_flit_random)
{
    sim_rng r;
    sim_rng_seed(&r, 77);
    const traffic_pattern pats[] = { TRAFFIC_UNIFORM, TRAFFIC_HOTSPOT, TRAFFIC_PERMUTATION, TRAFFIC_ALLTOALL };
    for (int k = 0; k < 150; k++) {
        const int n = 2 + (int)sim_rng_below(&r, 30);
        nvs_uniform_cfg c = ucfg(n, XBAR_QUEUE_VOQ, (xbar_alloc_kind)sim_rng_below(&r, 4), 1 + (int)sim_rng_below(&r, 3),
                                 1 + (int)sim_rng_below(&r, 64), 0.1 + 0.9 * sim_rng_double(&r));
        c.pkt_flits = 1 + (int)sim_rng_below(&r, 70);
        if (c.net.sw.core.depth < c.pkt_flits) c.net.sw.core.depth = c.pkt_flits; /* room for a whole packet */
        c.net.sw.saf = true;
        c.net.sw.credit_batch = 1 + (int)sim_rng_below(&r, 20);
        c.net.sw.core.latency = 1 + (int)sim_rng_below(&r, 4);
        c.net.sw.core.fanout_read = (int)sim_rng_below(&r, 2);
        c.net.link_latency_ns = (double)sim_rng_below(&r, 50) / 3.0;
        c.pattern = pats[sim_rng_below(&r, 4)];
        c.hotspot_frac = 0.3;
        c.cycles = 2000;
        c.warmup = 200;
        c.seed = (uint64_t)k + 1;
        const nvs_uniform_result a = urun(&c);
        c.net.sw.per_flit = true;
        const nvs_uniform_result b = urun(&c);
        const char *diff = uniform_diff(&a, &b);
        ck_assert_msg(!diff,
                      "config %d (ports %d, depth %d, %d-flit packets, batch %d, latency %d): %s differ", k, n,
                      c.net.sw.core.depth, c.pkt_flits, c.net.sw.credit_batch, c.net.sw.core.latency, diff);
    }
}
END_TEST

/* Every pattern, store-and-forward and wormhole packets, shared buffers: conserved. */
START_TEST(conservation_mixed)
{
    const traffic_pattern pats[] = { TRAFFIC_HOTSPOT, TRAFFIC_TRANSPOSE, TRAFFIC_PERMUTATION, TRAFFIC_ALLTOALL, TRAFFIC_UNIFORM };
    for (int k = 0; k < 5; k++) {
        nvs_uniform_cfg c = ucfg(9, k == 4 ? XBAR_QUEUE_FIFO : XBAR_QUEUE_VOQ, (xbar_alloc_kind)(k % 4), 2, 24, 0.9);
        c.pattern = pats[k];
        c.hotspot_frac = 0.3;
        c.pkt_flits = 5;
        c.net.sw.saf = k % 2;
        c.net.sw.core.shared = k == 3;
        c.net.sw.core.latency = 1 + k;
        c.net.sw.credit_batch = 1 + k % 3;
        c.cycles = 6000;
        c.warmup = 1000;
        nvs_uniform_result r = urun(&c);
        ck_assert_msg(r.cons.copies_delivered > 1000, "pattern %d moved only %llu", k, (unsigned long long)r.cons.copies_delivered);
    }
}
END_TEST

static nvs_fanout_cfg fcfg(int n, int fanout, bool multicast, int fanout_read, double background, bool saf)
{
    nvs_fanout_cfg c;
    memset(&c, 0, sizeof c);
    xbar_core_cfg_default(&c.net.sw.core, n);
    c.net.sw.core.depth = 64;
    c.net.sw.core.fanout_read = fanout_read;
    c.net.sw.credit_batch = 1;
    c.net.sw.saf = saf;
    c.net.port_GBps = 25;
    c.net.flit_bytes = 16;
    c.net.link_latency_ns = 1;
    c.src = 1;
    c.fanout = fanout;
    c.bytes = 32768;
    c.multicast = multicast;
    c.max_payload = 256;
    c.background = background;
    c.seed = 9;
    return c;
}

/* Runs c; the message must complete with every copy conserved. */
static nvs_fanout_result frun_cfg(const nvs_fanout_cfg *cfg)
{
    const nvs_fanout_cfg c = *cfg;
    nvs_fanout_result r;
    char why[256] = "";
    sim_kernel *k = sim_kernel_new();
    int rc = nvs_run_fanout(k, &c, &r, why, sizeof why);
    sim_kernel_free(k);
    ck_assert_msg(rc == 0, "%s", why);
    ck_assert(r.completed);
    ck_assert_uint_eq(r.copies_delivered, (uint64_t)c.fanout);
    ck_assert_msg(r.cons.dropped == 0 && r.cons.duplicated == 0 && r.cons.out_of_order == 0, "fanout conservation");
    ck_assert_msg(r.cons.links_ok, "%s", r.cons.links_why);
    return r;
}

static nvs_fanout_result frun(int n, int fanout, bool multicast, int fanout_read, double background, bool saf)
{
    const nvs_fanout_cfg c = fcfg(n, fanout, multicast, fanout_read, background, saf);
    return frun_cfg(&c);
}

/* Packet mode with multicast copies and fan-out reads (the watches fired by
 * them) under background load and batched credits: exactly the per-flit
 * path's results. */
START_TEST(packets_match_per_flit_multicast)
{
    for (int k = 0; k < 3; k++) {
        nvs_fanout_cfg c = fcfg(k == 2 ? 64 : 12, k == 2 ? 40 : 9, true, k != 1, 0.2 + 0.2 * k, true);
        c.net.sw.credit_batch = 1 + 4 * k;
        c.net.sw.core.latency = 1 + k;
        const nvs_fanout_result a = frun_cfg(&c);
        c.net.sw.per_flit = true;
        const nvs_fanout_result b = frun_cfg(&c);
        ck_assert_msg(a.sim_events == b.sim_events && a.sim_time_ps == b.sim_time_ps, "config %d: events or end time differ", k);
        ck_assert_msg(a.completion_ns == b.completion_ns && a.per_dest_GBps_min == b.per_dest_GBps_min &&
                          a.per_dest_GBps_avg == b.per_dest_GBps_avg && a.src_link_util == b.src_link_util,
                      "config %d: results differ", k);
        ck_assert_msg(a.cons.copies_delivered == b.cons.copies_delivered && a.cons.copies_delivered > 1000,
                      "config %d: delivered %llu vs %llu", k, (unsigned long long)a.cons.copies_delivered,
                      (unsigned long long)b.cons.copies_delivered);
    }
}
END_TEST

/* Deferred delivery of the input links (the default) against the plain path
 * (no_defer: every input message delivered by its own kernel wake-up): the
 * same results and end time in random wormhole and store-and-forward
 * configurations, and in multicast fan-out under background load; the
 * deferred run has fewer kernel events (that is what it is for). */
START_TEST(deferred_inputs_match_plain)
{
    sim_rng r;
    sim_rng_seed(&r, 91);
    uint64_t events_deferred = 0, events_plain = 0;
    const traffic_pattern pats[] = { TRAFFIC_UNIFORM, TRAFFIC_HOTSPOT, TRAFFIC_PERMUTATION, TRAFFIC_ALLTOALL };
    for (int k = 0; k < 60; k++) {
        const int n = 2 + (int)sim_rng_below(&r, 30);
        nvs_uniform_cfg c = ucfg(n, sim_rng_below(&r, 4) ? XBAR_QUEUE_VOQ : XBAR_QUEUE_FIFO, (xbar_alloc_kind)sim_rng_below(&r, 4),
                                 1 + (int)sim_rng_below(&r, 3), 1 + (int)sim_rng_below(&r, 64), 0.05 + 0.95 * sim_rng_double(&r));
        c.pkt_flits = 1 + (int)sim_rng_below(&r, 20);
        c.net.sw.saf = sim_rng_below(&r, 2);
        if (c.net.sw.saf && c.net.sw.core.depth < c.pkt_flits) c.net.sw.core.depth = c.pkt_flits;
        c.net.sw.credit_batch = 1 + (int)sim_rng_below(&r, 8);
        c.net.sw.core.latency = 1 + (int)sim_rng_below(&r, 4);
        c.net.link_latency_ns = (double)sim_rng_below(&r, 50) / 3.0;
        c.pattern = pats[sim_rng_below(&r, 4)];
        c.hotspot_frac = 0.3;
        c.cycles = 1500;
        c.warmup = 150;
        c.seed = (uint64_t)k + 1;
        const nvs_uniform_result a = urun(&c);
        c.net.sw.no_defer = true;
        const nvs_uniform_result b = urun(&c);
        ck_assert_msg(a.sim_time_ps == b.sim_time_ps && a.throughput == b.throughput && a.latency_avg_cycles == b.latency_avg_cycles &&
                          a.latency_p99_cycles == b.latency_p99_cycles && a.backlog_end == b.backlog_end &&
                          !memcmp(a.per_input, b.per_input, sizeof a.per_input) &&
                          !memcmp(a.per_output, b.per_output, sizeof a.per_output) &&
                          a.cons.copies_delivered == b.cons.copies_delivered && a.cons.drained && b.cons.drained,
                      "config %d (ports %d, %d-flit packets, saf %d, load %.2f): results differ", k, n, c.pkt_flits, c.net.sw.saf, c.load);
        events_deferred += a.sim_events;
        events_plain += b.sim_events;
    }
    ck_assert_msg(events_deferred < events_plain * 0.9, "deferred delivery saved under 10 %% of the kernel events (%llu vs %llu)",
                  (unsigned long long)events_deferred, (unsigned long long)events_plain);
    for (int k = 0; k < 2; k++) {
        nvs_fanout_cfg c = fcfg(12, 7, true, k, 0.1 + 0.2 * k, k == 1);
        const nvs_fanout_result a = frun_cfg(&c);
        c.net.sw.no_defer = true;
        const nvs_fanout_result b = frun_cfg(&c);
        ck_assert_msg(a.sim_time_ps == b.sim_time_ps && a.completion_ns == b.completion_ns && a.per_dest_GBps_min == b.per_dest_GBps_min &&
                          a.per_dest_GBps_avg == b.per_dest_GBps_avg && a.src_link_util == b.src_link_util &&
                          a.cons.copies_delivered == b.cons.copies_delivered,
                      "fan-out config %d: results differ", k);
    }
}
END_TEST

START_TEST(multicast_k_times_faster)
{
    const int ks[] = { 2, 5, 15 };
    for (int i = 0; i < 3; i++) {
        nvs_fanout_result u = frun(16, ks[i], false, 1, 0, i == 1), m = frun(16, ks[i], true, 1, 0, i == 1);
        double s = u.completion_ns / m.completion_ns;
        ck_assert_msg(s > 0.95 * ks[i] && s < 1.02 * ks[i], "k=%d: speedup %.3f", ks[i], s);
        ck_assert_msg(m.src_link_util > 0.95 && u.src_link_util > 0.95, "source link not the bottleneck");
        /* 256 B of payload per 17 flits of 16 B at 25 GB/s, less the ~25 ns pipeline fill */
        ck_assert_msg(fabs(m.per_dest_GBps_min - 25.0 * 256 / 272) < 0.6, "multicast per dest %.3f GB/s", m.per_dest_GBps_min);
    }
    /* without the fan-out read the input still reads one copy per cycle */
    nvs_fanout_result u = frun(8, 7, false, 0, 0, false), m = frun(8, 7, true, 0, 0, false);
    ck_assert_msg(fabs(u.completion_ns / m.completion_ns - 1.0) < 0.05, "fanout_read=0 speedup %.3f", u.completion_ns / m.completion_ns);
    /* background traffic slows the message but loses nothing */
    nvs_fanout_result b = frun(8, 7, true, 1, 0.3, false);
    ck_assert(b.completion_ns > frun(8, 7, true, 1, 0, false).completion_ns);
    /* fan-out splitting: under background load a destination output gives
     * the message what the background leaves it (nvs_fanout_ideal_speedup),
     * wormhole and store-and-forward, at 8 and 16 ports */
    const double loads[] = { 0.02, 0.1, 0.1 };
    for (int i = 0; i < 3; i++)
        for (int saf = 0; saf <= 1; saf++) {
            const int n = i == 2 ? 16 : 8, k = n - 1;
            nvs_fanout_result ub = frun(n, k, false, 1, loads[i], saf), mb = frun(n, k, true, 1, loads[i], saf);
            const double s = ub.completion_ns / mb.completion_ns, ideal = nvs_fanout_ideal_speedup(n, k, loads[i]);
            ck_assert_msg(s >= 0.9 * ideal && s <= 1.05 * ideal, "N=%d k=%d background %.2f saf=%d: speedup %.3f, ideal %.3f", n, k,
                          loads[i], saf, s, ideal);
        }
}
END_TEST

/* The flit word keeps every field; and the packets' ownership holds: after
 * a drained run of multicast (copies from the switch's pool, wormhole and
 * store-and-forward) over unicast background, the switch holds nothing but
 * packets still arriving and every copy it made came back to its pool
 * (nvswitch_check_drained, part of links_ok; the pools abort on a loss). */
START_TEST(flit_word_and_packet_ownership)
{
    const uint64_t w = nvs_flit_make(0x123456u, 63, 17, 16);
    ck_assert_uint_eq(nvs_flit_slot(w), 0x123456u);
    ck_assert_uint_eq(nvs_flit_src(w), 63);
    ck_assert_uint_eq(nvs_flit_nflits(w), 17);
    ck_assert_uint_eq(nvs_flit_index(w), 16);
    ck_assert_uint_eq(nvs_flit_src_index(w), nvs_flit_src_index_of(63, 16));
    for (int saf = 0; saf <= 1; saf++) {
        nvs_fanout_cfg c = fcfg(8, 5, true, 1, 0.3, saf);
        const nvs_fanout_result r = frun_cfg(&c);
        ck_assert_msg(r.completed && r.cons.drained && r.cons.links_ok && r.cons.dropped == 0 && r.cons.duplicated == 0,
                      "saf=%d: completed %d drained %d: %s", saf, r.completed, r.cons.drained, r.cons.links_why);
    }
}
END_TEST

START_TEST(rtl_model_refused_until_registered)
{
    nvs_uniform_cfg c = ucfg(4, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 8, 0.5);
    c.net.sw.model = NVS_MODEL_BOTH;
    char why[256] = "";
    nvs_uniform_result r;
    sim_kernel *k = sim_kernel_new();
    if (!nvswitch_rtl_available()) {
        ck_assert_int_eq(nvs_run_uniform(k, &c, &r, why, sizeof why), -1);
        ck_assert_ptr_nonnull(strstr(why, "model=both"));
    }
    sim_kernel_free(k);
}
END_TEST

/* model=both through the component: a stand-in "RTL" (the fast C core,
 * optionally with the RRM pointer bug) registered where the Verilated core
 * registers, compared with either C core (core=fast|ref); equal rules never
 * mismatch, the RRM one must, and with core=ref the reference is the side
 * named in the mismatch. */
static int standin_rrm;
static void *standin_new(const xbar_core_cfg *cfg, sim_trace *trace, const xbar_core_ops **ops, char *why, size_t why_n)
{
    (void)trace;
    (void)why;
    (void)why_n;
    xbar_core_cfg c = *cfg;
    if (standin_rrm) {
        c.inject = XBAR_INJECT_RRM;
        c.depth = 0; /* it diverges from the credits the reference returns: no overflow abort */
    }
    *ops = &xbar_core_tl_ops;
    return xbar_core_new(&c);
}

START_TEST(model_both_lockstep)
{
    nvswitch_register_rtl(standin_new);
    for (int ref = 0; ref <= 1; ref++)
        for (standin_rrm = 0; standin_rrm <= 1; standin_rrm++) {
            nvs_uniform_cfg c = ucfg(8, XBAR_QUEUE_VOQ, XBAR_ALLOC_ISLIP, 1, 16, 0.9);
            c.net.sw.model = NVS_MODEL_BOTH;
            c.net.sw.c_core = ref ? NVS_C_CORE_REF : NVS_C_CORE_FAST;
            c.cycles = 4000;
            c.warmup = 500;
            nvs_uniform_result r = urun(&c);
            ck_assert_uint_gt(r.cycles_compared, 4000);
            if (standin_rrm) {
                ck_assert_msg(r.mismatches > 0, "core=%s: RRM stand-in never mismatched", ref ? "ref" : "fast");
                if (ref)
                    ck_assert_msg(strstr(r.first_mismatch, " ref=") != NULL, "the compared C core is not the reference: %s",
                                  r.first_mismatch);
            } else {
                ck_assert_msg(r.mismatches == 0, "core=%s: equal rules mismatched: %s", ref ? "ref" : "fast", r.first_mismatch);
            }
        }
    nvswitch_register_rtl(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nvswitch");
    TCase *tc = tcase_create("component");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fifo_hol_limit_by_n);
    tcase_add_test(tc, fifo_limit_independent_of_arbiter);
    tcase_add_test(tc, fifo_depth_below_rtt);
    tcase_add_test(tc, voq_allocators_near_full);
    tcase_add_test(tc, pim1_saturation);
    tcase_add_test(tc, light_load_and_pipeline);
    tcase_add_test(tc, deterministic_per_seed);
    tcase_add_test(tc, conservation_mixed);
    tcase_add_test(tc, runs_match_per_flit);
    tcase_add_test(tc, packets_match_per_flit_multicast);
    tcase_add_test(tc, packets_match_per_flit_random);
    tcase_add_test(tc, deferred_inputs_match_plain);
    tcase_add_test(tc, multicast_k_times_faster);
    tcase_add_test(tc, flit_word_and_packet_ownership);
    tcase_add_test(tc, rtl_model_refused_until_registered);
    tcase_add_test(tc, model_both_lockstep);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
