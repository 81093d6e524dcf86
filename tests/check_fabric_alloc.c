/* The fabric switch's two allocators (models/fabric/switch.h: masked, the
 * default, and the reference scan) on whole fabrics with random traffic:
 * the same grants (every one: time, switch, ports, packet) in the same order,
 * the same number of allocator runs (so the same wake-ups), the same kernel
 * events and the same endpoint results. Random settings stress what the
 * masked one skips: small buffers (credit stalls), speedup (input read ports
 * free early), no pipeline delay, two VCs (dor on rings and tori), incast
 * and hotspot contention, and sizes from one credit to many. The same for
 * the switch's credit wake-ups: only where a credit can matter (the default)
 * and on every returned credit (the reference); and for arrivals picked up
 * by the switch against a delivery event per arrival. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/endpoint.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "sim/rng.h"
#include "check_run.h"

typedef struct grant {
    sim_time_ps t;
    uint32_t node, src, dst;
    uint16_t in, out;
    uint64_t seq;
    uint8_t vc;
} grant;

typedef struct grant_log {
    grant *v;
    size_t n, cap;
} grant_log;

static void log_grant(void *ctx, uint32_t node, unsigned in_port, unsigned out_port, const sim_pkt *p, sim_time_ps now)
{
    grant_log *g = ctx;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4096;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        ck_assert_ptr_nonnull(g->v);
    }
    g->v[g->n++] = (grant){ .t = now, .node = node, .src = p->src, .dst = p->dst, .in = (uint16_t)in_port,
                            .out = (uint16_t)out_port, .seq = p->seq, .vc = p->vc };
}

typedef struct scenario {
    const char *topo;
    enum topo_routing routing;
    enum sim_pattern_kind pattern;
    double load;
    uint32_t pkt_bytes;
    fabric_switch_cfg sw;
    uint64_t seed;
} scenario;

typedef struct outcome {
    grant_log grants;
    uint64_t events, allocations, received, out_of_order, win_hops;
    uint64_t picked_up, port_stats_hash;   /* arrivals switches took themselves; their ports' statistics */
    sim_time_ps end_ps;
    double lat_p50, lat_p99;
} outcome;

/* Two runs delivered the same packets with the same latencies; frees their logs. */
static void same_deliveries_then_free(outcome *a, outcome *b)
{
    ck_assert(a->received == b->received && a->out_of_order == b->out_of_order && a->win_hops == b->win_hops);
    ck_assert(a->lat_p50 == b->lat_p50 && a->lat_p99 == b->lat_p99);
    free(a->grants.v);
    free(b->grants.v);
}

static void run(const scenario *sc, enum fabric_switch_allocator alloc, outcome *o)
{
    char err[512];
    memset(o, 0, sizeof *o);
    fabric_register_kinds();
    topo *t = topo_from_string(sc->topo, "eth-400g", err, sizeof err);
    ck_assert_msg(t, "%s: %s", sc->topo, err);
    sim_pattern pat = { 0 };
    ck_assert_msg(sim_pattern_init(&pat, sc->pattern, t->n_endpoints, sc->seed, err, sizeof err) == 0, "%s", err);
    sim_hist lat;
    sim_hist_init(&lat, "latency_ns");
    const sim_time_ps warm_ps = SIM_US(1), end_ps = SIM_US(6);
    fabric_endpoint_cfg ec = { .pattern = &pat, .load = sc->load, .pkt_bytes = sc->pkt_bytes, .warmup_ps = warm_ps,
                               .end_ps = end_ps, .stop_ps = end_ps, .latency_hist = &lat };
    fabric_switch_cfg sw = sc->sw;
    sw.allocator = alloc;
    sw.on_grant = log_grant;
    sw.grant_ctx = &o->grants;
    sim_kernel *k = sim_kernel_new();
    sim_fabric_cfg fc = { .routing = sc->routing, .seed = sc->seed, .kind_cfg = { { "endpoint", &ec }, { "switch", &sw } } };
    sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);
    ck_assert_msg(f, "%s: %s", sc->topo, err);
    sim_run(k, warm_ps);
    sim_fabric_reset_stats(f);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_msg(sim_fabric_check(f, true, err, sizeof err) == 0, "%s: %s", sc->topo, err);
    o->events = sim_event_count(k);
    o->end_ps = sim_now(k);
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        void *c = sim_fabric_component(f, n);
        if (t->nodes[n].endpoint >= 0) {
            fabric_endpoint_stats st;
            fabric_endpoint_get_stats(c, &st);
            o->received += st.received_pkts;
            o->out_of_order += st.out_of_order;
            o->win_hops += st.win_hops;
        } else {
            o->allocations += fabric_switch_stats_get(c).allocations;
            o->picked_up += fabric_switch_stats_get(c).picked_up;
            for (unsigned p = 0; p < t->nodes[n].nports; p++) {
                const fabric_switch_port_stats *ps = fabric_switch_port(c, p);
                const uint64_t v[] = { ps->rx_pkts, ps->rx_bytes, ps->tx_pkts, ps->tx_bytes, ps->queue_ps_sum, ps->max_held_credits };
                for (unsigned j = 0; j < sizeof v / sizeof v[0]; j++) o->port_stats_hash = (o->port_stats_hash ^ v[j]) * 0x100000001b3ULL;
            }
        }
    }
    o->lat_p50 = sim_hist_percentile(&lat, 50);
    o->lat_p99 = sim_hist_percentile(&lat, 99);
    sim_fabric_free(f);
    sim_kernel_free(k);
    sim_hist_free(&lat);
    sim_pattern_free(&pat);
    topo_free(t);
}

static const struct { const char *topo; enum topo_routing routing; } topos[] = {
    { "fattree:4", TOPO_ROUTE_ECMP },    { "fattree:4", TOPO_ROUTE_UPDOWN }, { "torus2d:4x4", TOPO_ROUTE_DOR },
    { "ring:6", TOPO_ROUTE_DOR },        { "leafspine:4,2,4", TOPO_ROUTE_ECMP }, { "star:8", TOPO_ROUTE_ECMP },
    { "mesh2d:3x3", TOPO_ROUTE_DOR },
};
static const enum sim_pattern_kind patterns[] = { SIM_PAT_UNIFORM, SIM_PAT_PERMUTATION, SIM_PAT_INCAST, SIM_PAT_HOTSPOT,
                                                  SIM_PAT_ALLTOALL };

/* Scenario _i, drawn from a fixed seed: reproducible, and each loop index a different mix. */
static scenario draw(int i)
{
    sim_rng r;
    sim_rng_seed(&r, 0xa110c + (uint64_t)i);
    scenario sc = { 0 };
    unsigned ti = (unsigned)i % (sizeof topos / sizeof topos[0]);
    sc.topo = topos[ti].topo;
    sc.routing = topos[ti].routing;
    sc.pattern = patterns[sim_rng_u64(&r) % (sizeof patterns / sizeof patterns[0])];
    sc.load = 0.3 + 0.7 * sim_rng_double(&r);
    static const uint32_t sizes[] = { 1, 64, 200, 1000, 4096 };
    sc.pkt_bytes = sizes[sim_rng_u64(&r) % 5];
    sc.sw = FABRIC_SWITCH_CFG_DEFAULT;
    static const uint32_t bufs[] = { 8192, 16384, 65536 };
    sc.sw.buffer_bytes_per_vc = bufs[sim_rng_u64(&r) % 3];
    static const double speedups[] = { 1.0, 1.0, 1.5, 2.0 };
    sc.sw.speedup = speedups[sim_rng_u64(&r) % 4];
    static const double pipes[] = { 0, 30, 100 };
    sc.sw.pipeline_ns = pipes[sim_rng_u64(&r) % 3];
    sc.seed = 1 + sim_rng_u64(&r) % 1000;
    return sc;
}

START_TEST(masked_grants_as_scan)
{
    scenario sc = draw(_i);
    outcome a, b;
    run(&sc, FABRIC_SWITCH_ALLOC_SCAN, &a);
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &b);
    char what[256];
    snprintf(what, sizeof what, "%s pattern %d load %.2f %u B buffer %u speedup %g pipeline %g seed %llu", sc.topo,
             (int)sc.pattern, sc.load, sc.pkt_bytes, sc.sw.buffer_bytes_per_vc, sc.sw.speedup, sc.sw.pipeline_ns,
             (unsigned long long)sc.seed);
    ck_assert_msg(a.grants.n > 500, "%s: only %zu grants (the scenario tests little)", what, a.grants.n);
    for (size_t g = 0; g < a.grants.n && g < b.grants.n; g++) {
        const grant *x = &a.grants.v[g], *y = &b.grants.v[g];
        ck_assert_msg(x->t == y->t && x->node == y->node && x->in == y->in && x->out == y->out && x->src == y->src &&
                          x->dst == y->dst && x->seq == y->seq && x->vc == y->vc,
                      "%s: grant %zu differs: scan t=%llu node %u %u->%u pkt %u->%u #%llu, masked t=%llu node %u %u->%u pkt "
                      "%u->%u #%llu",
                      what, g, (unsigned long long)x->t, x->node, x->in, x->out, x->src, x->dst, (unsigned long long)x->seq,
                      (unsigned long long)y->t, y->node, y->in, y->out, y->src, y->dst, (unsigned long long)y->seq);
    }
    ck_assert_msg(a.grants.n == b.grants.n, "%s: %zu grants by the scan, %zu masked", what, a.grants.n, b.grants.n);
    ck_assert_msg(a.allocations == b.allocations, "%s: %llu allocator runs by the scan, %llu masked (other wake-ups)", what,
                  (unsigned long long)a.allocations, (unsigned long long)b.allocations);
    ck_assert_msg(a.events == b.events && a.end_ps == b.end_ps, "%s: events %llu vs %llu, end %llu vs %llu ps", what,
                  (unsigned long long)a.events, (unsigned long long)b.events, (unsigned long long)a.end_ps,
                  (unsigned long long)b.end_ps);
    same_deliveries_then_free(&a, &b);
}
END_TEST

/* Orders a grant log by switch, keeping each switch's own order (its grants
 * are the same either way; switches granting at the same time may log in
 * another order, being other components). */
static const grant *by_switch_log;
static int cmp_by_switch(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    uint32_t x = by_switch_log[i].node, y = by_switch_log[j].node;
    if (x != y) return x < y ? -1 : 1;
    return i < j ? -1 : i > j;
}

static size_t *order_by_switch(const grant_log *g)
{
    size_t *idx = malloc((g->n ? g->n : 1) * sizeof *idx);
    ck_assert_ptr_nonnull(idx);
    for (size_t i = 0; i < g->n; i++) idx[i] = i;
    by_switch_log = g->v;
    qsort(idx, g->n, sizeof *idx, cmp_by_switch);
    return idx;
}

/* Credit wake-ups only where a credit can matter (the default) against the
 * reference (every returned credit runs the allocator): a skipped run would
 * grant nothing at that output (busy serialiser or no entries), and every
 * other output's run is asked for at the same time anyway, so every switch
 * makes the same grants at the same times in the same order, with fewer
 * allocator runs (never more). */
START_TEST(lazy_credit_wakes_as_always)
{
    scenario sc = draw(_i);
    outcome a, b;
    sc.sw.credit_wakes_always = true;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &a);
    sc.sw.credit_wakes_always = false;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &b);
    char what[256];
    snprintf(what, sizeof what, "%s pattern %d load %.2f %u B buffer %u speedup %g pipeline %g seed %llu", sc.topo,
             (int)sc.pattern, sc.load, sc.pkt_bytes, sc.sw.buffer_bytes_per_vc, sc.sw.speedup, sc.sw.pipeline_ns,
             (unsigned long long)sc.seed);
    ck_assert_msg(a.grants.n == b.grants.n, "%s: %zu grants always waking, %zu lazy", what, a.grants.n, b.grants.n);
    size_t *ia = order_by_switch(&a.grants), *ib = order_by_switch(&b.grants);
    for (size_t g = 0; g < a.grants.n; g++) {
        const grant *x = &a.grants.v[ia[g]], *y = &b.grants.v[ib[g]];
        ck_assert_msg(x->t == y->t && x->node == y->node && x->in == y->in && x->out == y->out && x->src == y->src &&
                          x->dst == y->dst && x->seq == y->seq && x->vc == y->vc,
                      "%s: switch grant %zu differs: always t=%llu node %u %u->%u pkt %u->%u #%llu, lazy t=%llu node %u %u->%u pkt "
                      "%u->%u #%llu",
                      what, g, (unsigned long long)x->t, x->node, x->in, x->out, x->src, x->dst, (unsigned long long)x->seq,
                      (unsigned long long)y->t, y->node, y->in, y->out, y->src, y->dst, (unsigned long long)y->seq);
    }
    free(ia);
    free(ib);
    ck_assert_msg(b.allocations <= a.allocations, "%s: %llu allocator runs lazy, %llu always waking", what,
                  (unsigned long long)b.allocations, (unsigned long long)a.allocations);
    ck_assert_msg(b.events <= a.events && a.end_ps == b.end_ps, "%s: events %llu lazy vs %llu, end %llu vs %llu ps", what,
                  (unsigned long long)b.events, (unsigned long long)a.events, (unsigned long long)b.end_ps,
                  (unsigned long long)a.end_ps);
    same_deliveries_then_free(&a, &b);
}
END_TEST

/* Arrivals picked up by the switch at its runs (the default) against a
 * delivery event per arrival (the reference): every switch makes the same
 * grants at the same times in the same order, in as many allocator runs or
 * fewer (a returned credit wakes it only for an output with entries, and an
 * arrival not yet taken, not eligible either, is none), its ports count the same (the most buffer held too: same-time arrivals are
 * taken where their deliveries would come), fewer kernel events whenever
 * there is a pipeline delay (none: every arrival is delivered). */
START_TEST(pickup_as_delivered)
{
    scenario sc = draw(_i);
    outcome a, b;
    sc.sw.plain_delivery = true;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &a);
    sc.sw.plain_delivery = false;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &b);
    char what[256];
    snprintf(what, sizeof what, "%s pattern %d load %.2f %u B buffer %u speedup %g pipeline %g seed %llu", sc.topo,
             (int)sc.pattern, sc.load, sc.pkt_bytes, sc.sw.buffer_bytes_per_vc, sc.sw.speedup, sc.sw.pipeline_ns,
             (unsigned long long)sc.seed);
    ck_assert_msg(a.grants.n == b.grants.n, "%s: %zu grants delivered, %zu picked up", what, a.grants.n, b.grants.n);
    size_t *ia = order_by_switch(&a.grants), *ib = order_by_switch(&b.grants);
    for (size_t g = 0; g < a.grants.n; g++) {
        const grant *x = &a.grants.v[ia[g]], *y = &b.grants.v[ib[g]];
        ck_assert_msg(x->t == y->t && x->node == y->node && x->in == y->in && x->out == y->out && x->src == y->src &&
                          x->dst == y->dst && x->seq == y->seq && x->vc == y->vc,
                      "%s: switch grant %zu differs: delivered t=%llu node %u %u->%u pkt %u->%u #%llu, picked up t=%llu node %u "
                      "%u->%u pkt %u->%u #%llu",
                      what, g, (unsigned long long)x->t, x->node, x->in, x->out, x->src, x->dst, (unsigned long long)x->seq,
                      (unsigned long long)y->t, y->node, y->in, y->out, y->src, y->dst, (unsigned long long)y->seq);
    }
    free(ia);
    free(ib);
    ck_assert_msg(b.allocations <= a.allocations, "%s: %llu allocator runs delivered, %llu picked up", what,
                  (unsigned long long)a.allocations, (unsigned long long)b.allocations);
    ck_assert_msg(a.port_stats_hash == b.port_stats_hash, "%s: the switches' port statistics differ", what);
    ck_assert_msg(a.picked_up == 0, "%s: %llu arrivals picked up with plain delivery", what, (unsigned long long)a.picked_up);
    if (sc.sw.pipeline_ns > 0)
        ck_assert_msg(b.picked_up > 0 && b.events + b.picked_up / 2 < a.events, "%s: %llu picked up, events %llu vs %llu delivered",
                      what, (unsigned long long)b.picked_up, (unsigned long long)b.events, (unsigned long long)a.events);
    else
        ck_assert_msg(b.picked_up == 0 && b.events == a.events, "%s: no pipeline, yet %llu picked up", what,
                      (unsigned long long)b.picked_up);
    ck_assert_msg(a.end_ps == b.end_ps, "%s: end %llu vs %llu ps", what, (unsigned long long)a.end_ps, (unsigned long long)b.end_ps);
    same_deliveries_then_free(&a, &b);
}
END_TEST

/* The lazy wake-ups are taken: on a fat tree at load 0.7 they save runs. */
START_TEST(lazy_credit_wakes_save_runs)
{
    scenario sc = draw(0);
    sc.topo = "fattree:4";
    sc.routing = TOPO_ROUTE_ECMP;
    sc.pattern = SIM_PAT_UNIFORM;
    sc.load = 0.7;
    sc.pkt_bytes = 1000;
    sc.sw = FABRIC_SWITCH_CFG_DEFAULT;
    outcome a, b;
    sc.sw.credit_wakes_always = true;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &a);
    sc.sw.credit_wakes_always = false;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &b);
    ck_assert_msg((double)b.allocations < 0.9 * (double)a.allocations, "allocator runs %llu lazy vs %llu always waking",
                  (unsigned long long)b.allocations, (unsigned long long)a.allocations);
    free(a.grants.v);
    free(b.grants.v);
}
END_TEST

/* The comparison can fail: a switch with a different pointer rule grants otherwise. */
START_TEST(grant_logs_tell_settings_apart)
{
    scenario sc = draw(0);
    sc.pattern = SIM_PAT_UNIFORM;
    sc.load = 0.9;
    outcome a, b;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &a);
    sc.sw.speedup = sc.sw.speedup * 1.25;
    run(&sc, FABRIC_SWITCH_ALLOC_MASKED, &b);
    bool same = a.grants.n == b.grants.n;
    for (size_t g = 0; same && g < a.grants.n; g++) same = a.grants.v[g].t == b.grants.v[g].t;
    ck_assert_msg(!same, "another speedup gave the same grant times");
    free(a.grants.v);
    free(b.grants.v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fabric_alloc");
    TCase *tc = tcase_create("alloc");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, masked_grants_as_scan, 0, 28);
    tcase_add_loop_test(tc, lazy_credit_wakes_as_always, 0, 28);
    tcase_add_loop_test(tc, pickup_as_delivered, 0, 28);
    tcase_add_test(tc, lazy_credit_wakes_save_runs);
    tcase_add_test(tc, grant_logs_tell_settings_apart);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
