/* The fabric switch core (models/fabric/switch.h) on links this test makes
 * from a one-switch topology: zero-load latency against the link parameters,
 * round-robin fairness, credits bounding the buffer, multicast copies, and
 * both allocators granting alike on random unicast and multicast traffic. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/switch.h"
#include "sim/rng.h"
#include "check_run.h"

#define NH 4                          /* endpoints h0..h3 on s0.p0..p3 */

typedef struct rig {
    sim_kernel *k;
    topo *t;
    topo_routes *r;
    sim_groups *g;
    fabric_switch *s;
    sim_link *to_sw[NH], *from_sw[NH];
    sim_pkt_pool pool;
    uint64_t got[NH][NH];             /* [dst][src] */
    sim_time_ps last_lat_ps;
} rig;

static char err[1024];
static bool rig_nvls;                 /* the next rig's switch has a reduction unit (nvls=1) */
static void (*rig_on_recv)(sim_pkt *p);   /* sees every delivered packet before it is freed (NULL: none) */

static void host_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes; (void)l;
    rig *R = *(rig **)ctx;
    sim_pkt *p = msg;
    R->last_lat_ps = sim_now(R->k) - p->injected_ps;
    R->got[p->dst == SIM_PKT_GROUP ? 0 : p->dst][p->src]++;
    if (rig_on_recv) rig_on_recv(p);
    sim_pkt_free(p);
}

static rig *rig_new(double out3_GBps, const fabric_switch_cfg *cfg)
{
    rig *R = calloc(1, sizeof *R);
    R->k = sim_kernel_new();
    R->t = topo_new("ib-ndr", err, sizeof err);
    const char *sp[] = { "ports=4", rig_nvls ? "nvls=1" : NULL, NULL };
    ck_assert_int_ge(topo_add_node(R->t, "s0", "switch", sp, err, sizeof err), 0);
    char n[16], e[16];
    for (unsigned h = 0; h < NH; h++) {
        snprintf(n, sizeof n, "h%u", h);
        ck_assert_int_ge(topo_add_node(R->t, n, "endpoint", NULL, err, sizeof err), 0);
        snprintf(e, sizeof e, "s0.p%u", h);
        ck_assert_int_ge(topo_add_link(R->t, n, e, NULL, -1, h == 3 ? out3_GBps : -1, err, sizeof err), 0);
    }
    ck_assert_msg(topo_finish(R->t, err, sizeof err) == 0, "%s", err);
    R->r = topo_routes_new(R->t, TOPO_ROUTE_ECMP, err, sizeof err);
    ck_assert_msg(R->r, "%s", err);
    R->g = sim_groups_new();
    R->s = fabric_switch_new(R->k, R->t, 0, R->r, R->g, cfg, err, sizeof err);
    ck_assert_msg(R->s, "%s", err);
    sim_pkt_pool_init(&R->pool, "hosts");
    static rig *ctxs[1];
    ctxs[0] = R;
    for (unsigned h = 0; h < NH; h++) {
        const topo_link *tl = &R->t->links[R->t->nodes[0].port_link[h]];
        sim_fabric_ingress in = { 0 };
        fabric_switch_ingress(R->s, h, &in);
        sim_link_cfg up = { .name = "up", .latency_ps = (sim_time_ps)llround(tl->latency_ns * 1000), .bandwidth_GBps = tl->GBps,
                            .credit_latency_ps = SIM_LINK_SAME_LATENCY, .credit_types = in.credit_types };
        for (unsigned v = 0; v < in.credit_types; v++) up.credits[v] = in.credits[v];
        sim_link_cfg down = { .name = "down", .latency_ps = up.latency_ps, .bandwidth_GBps = tl->GBps,
                              .credit_latency_ps = SIM_LINK_SAME_LATENCY };
        R->to_sw[h] = sim_link_new(R->k, &up);
        R->from_sw[h] = sim_link_new(R->k, &down);
        sim_link_set_receiver(R->from_sw[h], host_recv, &ctxs[0]);
        sim_fabric_port p = { .node = 0, .port = h, .out = R->from_sw[h], .in = R->to_sw[h], .link = tl,
                              .out_credit_types = 0, .out_credit_bytes = 0 };
        fabric_switch_connect(R->s, &p);
    }
    return R;
}

/* Sends as credits allow: returns false when blocked. */
static bool host_send(rig *R, unsigned src, uint32_t dst, uint32_t group, uint32_t bytes, uint64_t flow)
{
    sim_link *l = R->to_sw[src];
    uint32_t cr = (bytes + 63) / 64;
    if (!sim_link_can_send(l, 0, cr)) return false;
    sim_pkt *p = sim_pkt_alloc(&R->pool);
    p->src = src; p->dst = dst; p->group = group; p->wire_bytes = bytes; p->flow = flow;
    p->injected_ps = sim_now(R->k);
    ck_assert(sim_link_try_send(l, p, bytes, 0, cr));
    return true;
}

static void rig_free(rig *R)
{
    ck_assert_msg(fabric_switch_check(R->s, true, err, sizeof err) == 0, "%s", err);
    for (unsigned h = 0; h < NH; h++) {
        ck_assert_msg(sim_link_check(R->to_sw[h], true, err, sizeof err) == 0, "%s", err);
        sim_link_free(R->to_sw[h]);
        sim_link_free(R->from_sw[h]);
    }
    fabric_switch_free(R->s);
    sim_pkt_pool_free(&R->pool);
    sim_groups_free(R->g);
    topo_routes_free(R->r);
    topo_free(R->t);
    sim_kernel_free(R->k);
    free(R);
}

START_TEST(zero_load_latency)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    rig *R = rig_new(-1, &c);
    host_send(R, 0, 2, 0, 1000, 1);
    sim_run(R->k, SIM_TIME_MAX);
    const topo_link *a = &R->t->links[R->t->nodes[0].port_link[0]], *b = &R->t->links[R->t->nodes[0].port_link[2]];
    double want_ps = 1000 * 1000 / a->GBps + a->latency_ns * 1000 + c.pipeline_ns * 1000 + 1000 * 1000 / b->GBps +
                     b->latency_ns * 1000;
    ck_assert_uint_eq(R->got[2][0], 1);
    ck_assert_msg(fabs((double)R->last_lat_ps - want_ps) <= 2, "latency %llu ps, want %.0f",
                  (unsigned long long)R->last_lat_ps, want_ps);
    rig_free(R);
}
END_TEST

/* Two saturating inputs to one output share it within 2 %; no loss. */
static rig *fair_rig;
static uint64_t fair_sent;
static sim_process fair_proc;
static void fair_fn(void *ctx)
{
    (void)ctx;
    rig *R = fair_rig;
    for (unsigned h = 0; h < 2; h++)
        while (fair_sent < 4000 && host_send(R, h, 3, 0, 512, h)) fair_sent++;
    if (fair_sent < 4000) sim_next_trigger_at(R->k, SIM_NS(10));
}

static void run_to_port3(double out_GBps, fabric_switch_cfg *c)
{
    fair_rig = rig_new(out_GBps, c);
    fair_sent = 0;
    sim_method_init(&fair_proc, fair_rig->k, "hosts", fair_fn, NULL);
    sim_run(fair_rig->k, SIM_TIME_MAX);
}

START_TEST(round_robin_fair)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    run_to_port3(-1, &c);
    rig *R = fair_rig;
    ck_assert_uint_eq(R->got[3][0] + R->got[3][1], 4000);
    double share = (double)R->got[3][0] / 4000;
    ck_assert_msg(fabs(share - 0.5) < 0.02, "share of h0 %.3f", share);
    rig_free(R);
}
END_TEST

START_TEST(credits_bound_buffer)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    c.buffer_bytes_per_vc = 4096;
    run_to_port3(5.0, &c);           /* output 20x slower than the inputs */
    rig *R = fair_rig;
    ck_assert_uint_eq(R->got[3][0] + R->got[3][1], 4000);
    const fabric_switch_port_stats *p0 = fabric_switch_port(R->s, 0);
    ck_assert_msg(p0->max_held_credits * c.credit_bytes <= c.buffer_bytes_per_vc, "held %u", p0->max_held_credits);
    ck_assert_msg(p0->max_held_credits * c.credit_bytes >= c.buffer_bytes_per_vc / 2, "held only %u", p0->max_held_credits);
    /* the buffer filled to within one packet: the sender was held back by credits */
    ck_assert_msg(p0->max_held_credits * c.credit_bytes + 512 > c.buffer_bytes_per_vc, "held %u", p0->max_held_credits);
    rig_free(R);
}
END_TEST

START_TEST(multicast_one_copy_each)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    rig *R = rig_new(-1, &c);
    uint32_t m[] = { 3, 1, 2 };
    uint32_t gid = sim_groups_add(R->g, m, 3);
    for (unsigned i = 0; i < 10; i++) host_send(R, 0, SIM_PKT_GROUP, gid, 256, i);
    sim_run(R->k, SIM_TIME_MAX);
    for (unsigned d = 1; d < NH; d++) ck_assert_uint_eq(R->got[d][0], 10);
    ck_assert_uint_eq(R->got[0][0], 0);
    fabric_switch_stats st = fabric_switch_stats_get(R->s);
    ck_assert_uint_eq(st.clones, 20);
    ck_assert_uint_eq(st.copies_sent, 30);
    rig_free(R);
}
END_TEST

/* ---- the reduction unit (NVLS): contributions of h0..h3 to one group ---- */
typedef struct red_vals { fabric_reduce_data hdr; long sum; unsigned readers; } red_vals;
static void red_combine(fabric_reduce_data *acc, fabric_reduce_data *other)
{
    ((red_vals *)acc)->sum += ((red_vals *)other)->sum;
    free(other);
}
static long red_sum_seen[NH];
static uint64_t red_results[NH], red_order_bad;
static void red_recv(sim_pkt *p)
{
    ck_assert(!(p->flags & SIM_PKT_F_REDUCE));
    ck_assert_uint_eq(p->dst, p->src);   /* the result copy comes back to its sender */
    if (p->seq != red_results[p->dst]) red_order_bad++;   /* each sender's results in the order of its keys */
    red_results[p->dst]++;
    red_vals *v = p->data;
    if (v) {
        red_sum_seen[p->dst] += v->sum;
        if (--v->readers == 0) free(v);
    }
}

static bool red_send(rig *R, unsigned h, uint32_t gid, uint64_t seq, uint32_t bytes, bool values)
{
    sim_link *l = R->to_sw[h];
    uint32_t cr = (bytes + 63) / 64;
    if (!sim_link_can_send(l, 0, cr)) return false;
    sim_pkt *p = sim_pkt_alloc(&R->pool);
    p->src = h; p->dst = SIM_PKT_GROUP; p->group = gid; p->wire_bytes = bytes; p->payload_bytes = bytes; p->seq = seq;
    p->flags = SIM_PKT_F_REDUCE; p->flow = 7; p->injected_ps = sim_now(R->k);
    if (values) {
        red_vals *v = malloc(sizeof *v);
        *v = (red_vals){ .hdr = { red_combine }, .sum = (long)(seq * 10 + h), .readers = NH };
        p->data = v;
    }
    ck_assert(sim_link_try_send(l, p, bytes, 0, cr));
    return true;
}

static void red_reset(void)
{
    memset(red_sum_seen, 0, sizeof red_sum_seen);
    memset(red_results, 0, sizeof red_results);
    red_order_bad = 0;
    rig_on_recv = red_recv;
}

/* One key at zero load: every host gets the sum once, at both links' serialisation and latency + the pipeline +
 * the unit's time for the four contributions + its latency, from the configuration. */
START_TEST(nvls_zero_load)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    rig_nvls = true;
    rig *R = rig_new(-1, &c);
    rig_nvls = false;
    red_reset();
    ck_assert(fabric_switch_has_nvls(R->s));
    uint32_t m[] = { 0, 1, 2, 3 };
    uint32_t gid = sim_groups_add(R->g, m, 4);
    for (unsigned h = 0; h < NH; h++) red_send(R, h, gid, 0, 1000, true);
    sim_run(R->k, SIM_TIME_MAX);
    const topo_link *a = &R->t->links[R->t->nodes[0].port_link[0]];
    double want_ps = 2 * (1000 * 1000 / a->GBps + a->latency_ns * 1000) + c.pipeline_ns * 1000 + 4 * 1000 * 1000 / c.nvls_reduce_GBps +
                     c.nvls_latency_ns * 1000;
    for (unsigned h = 0; h < NH; h++) {
        ck_assert_uint_eq(red_results[h], 1);
        ck_assert_int_eq(red_sum_seen[h], 0 + 1 + 2 + 3);
    }
    ck_assert_msg(fabs((double)R->last_lat_ps - want_ps) <= 4, "latency %llu ps, want %.0f", (unsigned long long)R->last_lat_ps, want_ps);
    fabric_switch_stats st = fabric_switch_stats_get(R->s);
    ck_assert_uint_eq(st.nvls_contribs, 4);
    ck_assert_uint_eq(st.nvls_consumed, 4);
    ck_assert_uint_eq(st.nvls_results, 1);
    ck_assert_uint_eq(st.nvls_held, 0);
    ck_assert_uint_eq(st.clones, 0);   /* each contribution became its sender's result copy */
    rig_on_recv = NULL;
    rig_free(R);
}
END_TEST

/* Back-pressure: h3 holds back, so no key completes; h0..h2 fill their input buffers with contributions whose
 * credits stay held (nothing is returned until reduced), then stop. Once h3 sends, every key is reduced, every
 * host gets every result in its keys' order with the right sums, and everything drains. */
static rig *bp_rig;
static uint32_t bp_gid;
static uint64_t bp_sent[NH];
static bool bp_h3_go;
static sim_process bp_proc;
#define BP_KEYS 300u
static void bp_fn(void *ctx)
{
    (void)ctx;
    for (unsigned h = 0; h < NH; h++) {
        if (h == 3 && !bp_h3_go) continue;
        while (bp_sent[h] < BP_KEYS && red_send(bp_rig, h, bp_gid, bp_sent[h], 512, true)) bp_sent[h]++;
    }
    bool more = false;
    for (unsigned h = 0; h < NH; h++) more |= bp_sent[h] < BP_KEYS && (h < 3 || bp_h3_go);
    if (more) sim_next_trigger_at(bp_rig->k, SIM_NS(10));
}

START_TEST(nvls_backpressure)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    rig_nvls = true;
    bp_rig = rig_new(-1, &c);
    rig_nvls = false;
    rig *R = bp_rig;
    red_reset();
    uint32_t m[] = { 0, 1, 2, 3 };
    bp_gid = sim_groups_add(R->g, m, 4);
    memset(bp_sent, 0, sizeof bp_sent);
    bp_h3_go = false;
    sim_method_init(&bp_proc, R->k, "hosts", bp_fn, NULL);
    sim_run(R->k, SIM_US(20));
    unsigned fit = c.buffer_bytes_per_vc / 512;   /* 512-byte contributions one input buffer holds */
    for (unsigned h = 0; h < 3; h++) ck_assert_uint_eq(bp_sent[h], fit);
    fabric_switch_stats st = fabric_switch_stats_get(R->s);
    ck_assert_uint_eq(st.nvls_held, 3 * fit);
    ck_assert_uint_eq(st.nvls_results, 0);
    ck_assert_uint_eq(fabric_switch_port(R->s, 0)->max_held_credits * c.credit_bytes, c.buffer_bytes_per_vc);
    ck_assert_msg(fabric_switch_check(R->s, false, err, sizeof err) == 0, "%s", err);
    bp_h3_go = true;   /* the hosts' process polls every 10 ns while any host has keys left */
    sim_run(R->k, SIM_TIME_MAX);
    for (unsigned h = 0; h < NH; h++) {
        ck_assert_uint_eq(bp_sent[h], BP_KEYS);
        ck_assert_uint_eq(red_results[h], BP_KEYS);
        long want = 0;
        for (uint64_t k = 0; k < BP_KEYS; k++) want += (long)(k * 10 * NH + 0 + 1 + 2 + 3);
        ck_assert_int_eq(red_sum_seen[h], want);
    }
    ck_assert_uint_eq(red_order_bad, 0);
    st = fabric_switch_stats_get(R->s);
    ck_assert_uint_eq(st.nvls_consumed, NH * BP_KEYS);
    ck_assert_uint_eq(st.nvls_results, BP_KEYS);
    ck_assert_uint_eq(st.nvls_held, 0);
    rig_on_recv = NULL;
    rig_free(R);
}
END_TEST

/* Random unicast and multicast traffic of random sizes from every host, with
 * both allocators: the same grants in the same order (the fabric-wide
 * comparison is tests/check_fabric_alloc.c; this one adds multicast). */
typedef struct grant_rec { sim_time_ps t; unsigned in, out; uint32_t src, dst; uint64_t flow; } grant_rec;
static grant_rec *grants;
static size_t n_grants, cap_grants;
static void record_grant(void *ctx, uint32_t node, unsigned in, unsigned out, const sim_pkt *p, sim_time_ps now)
{
    (void)ctx; (void)node;
    if (n_grants == cap_grants) {
        cap_grants = cap_grants ? 2 * cap_grants : 1024;
        grants = realloc(grants, cap_grants * sizeof *grants);
        ck_assert_ptr_nonnull(grants);
    }
    grants[n_grants++] = (grant_rec){ now, in, out, p->src, p->dst, p->flow };
}

static rig *mix_rig;
static sim_rng mix_rng;
static uint64_t mix_sent;
static uint32_t mix_groups[3];
static sim_process mix_proc;
static void mix_fn(void *ctx)
{
    (void)ctx;
    rig *R = mix_rig;
    for (unsigned h = 0; h < NH && mix_sent < 3000; h++) {
        if (sim_rng_below(&mix_rng, 3) == 0) continue;   /* bursty: a host skips some turns */
        uint32_t bytes = 64 + (uint32_t)sim_rng_below(&mix_rng, 2048);
        if (sim_rng_below(&mix_rng, 5) == 0) {
            if (host_send(R, h, SIM_PKT_GROUP, mix_groups[sim_rng_below(&mix_rng, 3)], bytes, mix_sent)) mix_sent++;
        } else {
            uint32_t dst = (h + 1 + (uint32_t)sim_rng_below(&mix_rng, NH - 1)) % NH;
            if (sim_rng_below(&mix_rng, 2)) dst = 3;    /* a hot output */
            if (dst != h && host_send(R, h, dst, 0, bytes, mix_sent)) mix_sent++;
        }
    }
    if (mix_sent < 3000) sim_next_trigger_at(R->k, 1 + sim_rng_below(&mix_rng, SIM_NS(40)));
}

static size_t run_mix(enum fabric_switch_allocator alloc, uint64_t seed, double speedup)
{
    fabric_switch_cfg c = FABRIC_SWITCH_CFG_DEFAULT;
    c.allocator = alloc;
    c.buffer_bytes_per_vc = 8192;
    c.speedup = speedup;
    c.on_grant = record_grant;
    mix_rig = rig_new(20.0, &c);   /* port 3 slow: its queues fill, credits stall the hosts */
    uint32_t g0[] = { 1, 2, 3 }, g1[] = { 0, 3 }, g2[] = { 0, 1, 2, 3 };
    mix_groups[0] = sim_groups_add(mix_rig->g, g0, 3);
    mix_groups[1] = sim_groups_add(mix_rig->g, g1, 2);
    mix_groups[2] = sim_groups_add(mix_rig->g, g2, 4);
    sim_rng_seed(&mix_rng, seed);
    mix_sent = 0;
    n_grants = 0;
    sim_method_init(&mix_proc, mix_rig->k, "hosts", mix_fn, NULL);
    sim_run(mix_rig->k, SIM_TIME_MAX);
    size_t allocations = fabric_switch_stats_get(mix_rig->s).allocations;
    rig_free(mix_rig);
    return allocations;
}

START_TEST(allocators_agree_with_multicast)
{
    const double speedup = _i % 2 ? 1.5 : 1.0;
    size_t runs_scan = run_mix(FABRIC_SWITCH_ALLOC_SCAN, 100 + (uint64_t)_i, speedup);
    size_t n = n_grants;
    grant_rec *scan = malloc(n * sizeof *scan);
    ck_assert_ptr_nonnull(scan);
    memcpy(scan, grants, n * sizeof *scan);
    size_t runs_masked = run_mix(FABRIC_SWITCH_ALLOC_MASKED, 100 + (uint64_t)_i, speedup);
    ck_assert_msg(n > 3000, "only %zu grants", n);
    for (size_t g = 0; g < n && g < n_grants; g++)
        ck_assert_msg(scan[g].t == grants[g].t && scan[g].in == grants[g].in && scan[g].out == grants[g].out &&
                          scan[g].src == grants[g].src && scan[g].dst == grants[g].dst && scan[g].flow == grants[g].flow,
                      "grant %zu: scan t=%llu %u->%u flow %llu, masked t=%llu %u->%u flow %llu", g,
                      (unsigned long long)scan[g].t, scan[g].in, scan[g].out, (unsigned long long)scan[g].flow,
                      (unsigned long long)grants[g].t, grants[g].in, grants[g].out, (unsigned long long)grants[g].flow);
    ck_assert_uint_eq(n, n_grants);
    ck_assert_uint_eq(runs_scan, runs_masked);
    free(scan);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fabric_switch");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, zero_load_latency);
    tcase_add_test(tc, round_robin_fair);
    tcase_add_test(tc, credits_bound_buffer);
    tcase_add_test(tc, multicast_one_copy_each);
    tcase_add_test(tc, nvls_zero_load);
    tcase_add_test(tc, nvls_backpressure);
    tcase_add_loop_test(tc, allocators_agree_with_multicast, 0, 4);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
