/* Unit tests of models/traffic: destination patterns, message cutting,
 * NVLink presets, the packet pool, the Bernoulli sources' timing, and the
 * bounded sources against unbounded ones. */
#include "tb/nvs/nvs_experiment.h"
#include "models/traffic/endpoints.h"
#include "models/traffic/traffic.h"
#include "sim/sim.h"
#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

START_TEST(uniform_includes_own_port)
{
    traffic_dest d;
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&d, TRAFFIC_UNIFORM, 7, 0, 0, 1, why, sizeof why), 0);
    sim_rng r;
    sim_rng_seed(&r, 2);
    long cnt[7] = { 0 };
    const long draws = 70000;
    for (long k = 0; k < draws; k++) cnt[traffic_dest_pick(&d, 3, &r)]++;
    for (int j = 0; j < 7; j++) /* 10000 expected, sigma ~93 */
        ck_assert_msg(labs(cnt[j] - 10000) < 500, "dest %d drawn %ld times", j, cnt[j]);
}
END_TEST

START_TEST(hotspot_fraction)
{
    traffic_dest d;
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&d, TRAFFIC_HOTSPOT, 8, 0.3, 5, 1, why, sizeof why), 0);
    sim_rng r;
    sim_rng_seed(&r, 2);
    long hot = 0;
    for (int k = 0; k < 80000; k++) hot += traffic_dest_pick(&d, 0, &r) == 5;
    double expect = 0.3 + 0.7 / 8; /* the uniform part may pick it too */
    ck_assert_msg(fabs(hot / 80000.0 - expect) < 0.01, "hot share %.4f vs %.4f", hot / 80000.0, expect);
    ck_assert_int_ne(traffic_dest_init(&d, TRAFFIC_HOTSPOT, 8, 1.5, 0, 1, why, sizeof why), 0);
}
END_TEST

START_TEST(transpose_and_permutation)
{
    traffic_dest d;
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&d, TRAFFIC_TRANSPOSE, 16, 0, 0, 1, why, sizeof why), 0);
    sim_rng r;
    sim_rng_seed(&r, 1);
    ck_assert_int_eq(traffic_dest_pick(&d, 1, &r), 4);  /* (0,1) -> (1,0) */
    ck_assert_int_eq(traffic_dest_pick(&d, 6, &r), 9);  /* (1,2) -> (2,1) */
    ck_assert_int_eq(traffic_dest_pick(&d, 5, &r), 5);  /* diagonal */
    ck_assert_int_ne(traffic_dest_init(&d, TRAFFIC_TRANSPOSE, 8, 0, 0, 1, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "square"));
    traffic_dest a, b, c;
    ck_assert_int_eq(traffic_dest_init(&a, TRAFFIC_PERMUTATION, 37, 0, 0, 11, why, sizeof why), 0);
    ck_assert_int_eq(traffic_dest_init(&b, TRAFFIC_PERMUTATION, 37, 0, 0, 11, why, sizeof why), 0);
    ck_assert_int_eq(traffic_dest_init(&c, TRAFFIC_PERMUTATION, 37, 0, 0, 12, why, sizeof why), 0);
    uint64_t seen = 0;
    for (int i = 0; i < 37; i++) {
        int j = traffic_dest_pick(&a, i, &r);
        ck_assert_int_eq(j, traffic_dest_pick(&b, i, &r));
        REQUIRE(!(seen >> j & 1), "permutation repeats %d", j);
        seen |= 1ULL << j;
    }
    ck_assert_mem_ne(a.perm, c.perm, 37);
}
END_TEST

START_TEST(alltoall_walks_every_other_port)
{
    traffic_dest d;
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&d, TRAFFIC_ALLTOALL, 6, 0, 0, 1, why, sizeof why), 0);
    sim_rng r;
    sim_rng_seed(&r, 1);
    for (int src = 0; src < 6; src++)
        for (int round = 0; round < 3; round++) {
            uint64_t seen = 0;
            for (int k = 0; k < 5; k++) {
                int j = traffic_dest_pick(&d, src, &r);
                REQUIRE(j != src && !(seen >> j & 1), "src %d round %d: %d", src, round, j);
                seen |= 1ULL << j;
            }
        }
}
END_TEST

START_TEST(message_cutting)
{
    traffic_message m;
    uint32_t pay;
    uint64_t mask, bytes = 0;
    int pk = 0;
    traffic_message_init(&m, 0x16, 1000, 256, true); /* dests 1, 2, 4 */
    while (traffic_message_next(&m, &pay, &mask)) {
        ck_assert_uint_eq(mask, 0x16);
        bytes += pay;
        pk++;
    }
    ck_assert_int_eq(pk, 4); /* 256+256+256+232 */
    ck_assert_uint_eq(bytes, 1000);
    ck_assert_uint_eq(traffic_message_packets(1000, 256, 3, true), 4);
    /* unicast: one packet per destination per chunk, destinations in turn */
    traffic_message_init(&m, 0x16, 1000, 256, false);
    uint64_t per[8] = { 0 };
    uint64_t order[3];
    pk = 0;
    while (traffic_message_next(&m, &pay, &mask)) {
        ck_assert_int_eq(__builtin_popcountll(mask), 1);
        per[__builtin_ctzll(mask)] += pay;
        if (pk < 3) order[pk] = mask;
        pk++;
    }
    ck_assert_int_eq(pk, 12);
    ck_assert_uint_eq(traffic_message_packets(1000, 256, 3, false), 12);
    ck_assert(order[0] == 0x2 && order[1] == 0x4 && order[2] == 0x10);
    ck_assert(per[1] == 1000 && per[2] == 1000 && per[4] == 1000);
}
END_TEST

START_TEST(nvlink_presets_table)
{
    const nvlink_preset *p = nvlink_preset_find("nvlink4");
    ck_assert_ptr_nonnull(p);
    ck_assert_double_eq(p->link_GBps, 25.0);
    ck_assert_int_eq(p->links_per_gpu, 18);
    ck_assert_int_eq(p->switch_ports, 64);
    size_t n;
    const nvlink_preset *all = nvlink_presets(&n);
    for (size_t k = 0; k < n; k++) /* per GPU = links x per link (450 GB/s per direction for H100) */
        ck_assert_double_eq_tol(all[k].gpu_GBps, all[k].links_per_gpu * all[k].link_GBps, 1e-9);
    ck_assert_ptr_null(nvlink_preset_find("nvlink9"));
}
END_TEST

/* SRC_PORTS Bernoulli sources (uniform destinations, SRC_PKT_FLITS-flit
 * packets, one 16 B flit per SRC_PERIOD_PS) whose links toward the switch
 * end at a test's receiver (the switch side stubbed; sinks[i] is port i's
 * context for it). */
#define SRC_PORTS 4
#define SRC_PERIOD_PS 640 /* 16 B at 25 GB/s */
#define SRC_PKT_FLITS 3
#define SRC_FLIT_BYTES 16
#define SRC_CYCLES 20000
typedef struct src_sink { void *log; int port; } src_sink;
typedef struct src_rig {
    sim_kernel *k;
    sim_clock_domain *clk;
    traffic_dest dest;
    tep_cfg cfg;
    tep_sched *sched;
    tep *e[SRC_PORTS];
    sim_link *tx[SRC_PORTS], *rx[SRC_PORTS];
    src_sink sinks[SRC_PORTS];
} src_rig;

static void src_rig_init_caps(src_rig *g, double load, uint64_t seed, bool saf, bool src_voq, double link_GBps,
                              sim_link_recv_fn recv, void *log, uint32_t soft, uint32_t hard)
{
    memset(g, 0, sizeof *g);
    g->k = sim_kernel_new();
    g->clk = sim_clock_new(g->k, "clk", SRC_PERIOD_PS, 0);
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&g->dest, TRAFFIC_UNIFORM, SRC_PORTS, 0, 0, 9, why, sizeof why), 0);
    tep_cfg *ec = &g->cfg;
    ec->ports = SRC_PORTS;
    ec->flit_bytes = SRC_FLIT_BYTES;
    ec->period_ps = SRC_PERIOD_PS;
    ec->saf = saf;
    ec->src_voq = src_voq;
    ec->credit_mode = SIM_CREDIT_NONE;
    ec->bernoulli_mask = (1u << SRC_PORTS) - 1;
    ec->load = load;
    ec->pkt_flits = SRC_PKT_FLITS;
    ec->dest = &g->dest;
    ec->end_ps = SRC_CYCLES * SRC_PERIOD_PS;
    ec->seed = seed;
    ec->src_soft_pkts = soft;
    ec->src_hard_pkts = hard;
    g->sched = tep_sched_new(g->k, g->clk);
    for (int i = 0; i < SRC_PORTS; i++) g->e[i] = tep_new(g->k, g->sched, ec, i);
    for (int i = 0; i < SRC_PORTS; i++) {
        sim_link_cfg lc = { 0 };
        lc.bandwidth_GBps = link_GBps;
        lc.credit_latency_ps = SIM_LINK_SAME_LATENCY;
        g->tx[i] = sim_link_new(g->k, &lc);
        g->rx[i] = sim_link_new(g->k, &lc);
        tep_attach(g->e[i], g->tx[i], g->rx[i]);
        g->sinks[i] = (src_sink){ log, i };
        sim_link_set_receiver(g->tx[i], recv, &g->sinks[i]);
    }
}

static void src_rig_init(src_rig *g, double load, uint64_t seed, bool saf, bool src_voq, double link_GBps,
                         sim_link_recv_fn recv, void *log)
{
    src_rig_init_caps(g, load, seed, saf, src_voq, link_GBps, recv, log, 0, 0);
}

static void src_rig_free(src_rig *g)
{
    sim_pkt_set held = { 0 };   /* packets are still on their way when a run ends */
    for (int i = 0; i < SRC_PORTS; i++) {
        tep_held(g->e[i], sim_pkt_set_add, &held);
        sim_link_for_each_in_flight(g->tx[i], sim_pkt_set_add_msg, &held);
    }
    sim_pkt_set_free_all(&held);
    for (int i = 0; i < SRC_PORTS; i++) {
        tep_free(g->e[i]);
        sim_link_free(g->tx[i]);
        sim_link_free(g->rx[i]);
    }
    tep_sched_free(g->sched);
    sim_clock_free(g->clk);
    sim_kernel_free(g->k);
}

/* Source i's PRNG stream replayed: the cycle gaps between its arrivals and
 * the destinations drawn, in the order the source draws them. */
typedef struct src_replay {
    sim_rng r;
    traffic_dest dest;
    double log1m_p;
} src_replay;

static void src_replay_init(src_replay *x, const tep_cfg *ec, int i)
{
    sim_rng_seed_stream(&x->r, ec->seed, 0x1000u + (uint64_t)i);
    char why[128];
    ck_assert_int_eq(traffic_dest_init(&x->dest, TRAFFIC_UNIFORM, SRC_PORTS, 0, 0, 9, why, sizeof why), 0);
    x->log1m_p = log1p(-ec->load / ec->pkt_flits);
}
static uint64_t src_replay_gap(src_replay *x) { return (uint64_t)floor(log(1.0 - sim_rng_double(&x->r)) / x->log1m_p); }
static int src_replay_dest(src_replay *x, int i) { return traffic_dest_pick(&x->dest, i, &x->r); }

/* What the switch side of the sources' links saw: per port, the send cycle
 * of every flit with its packet's creation cycle and flit index. */
#define SRC_MAX_FLITS 20000
typedef struct src_log {
    src_rig *rig;
    int n[SRC_PORTS];
    uint64_t sent[SRC_PORTS][SRC_MAX_FLITS], created[SRC_PORTS][SRC_MAX_FLITS];
    unsigned flit[SRC_PORTS][SRC_MAX_FLITS];
} src_log;

static void src_sink_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)bytes;
    src_sink *s = ctx;
    src_log *g = s->log;
    sim_pkt *k = msg;
    const unsigned flit = sim_link_part(l);
    int x = g->n[s->port]++;
    REQUIRE(x < SRC_MAX_FLITS, "too many flits");
    /* one flit serialises in one period, latency 0: sent one period before now */
    g->sent[s->port][x] = (sim_now(g->rig->k) - SRC_PERIOD_PS) / SRC_PERIOD_PS;
    g->created[s->port][x] = k->created_ps / SRC_PERIOD_PS;
    g->flit[s->port][x] = flit;
    if (flit + 1 == k->parts) sim_pkt_free(k); /* as a sink would (cut-through: one flit a part) */
}

/* Bernoulli sources act in exactly the cycles they must, whether their next
 * arrival is a few cycles ahead or far beyond the due wheel's reach:
 * packet k is created at the cycle of its geometric arrival (replayed here
 * from the same PRNG stream) and its flits leave one per cycle from
 * max(creation, the previous packet's last flit + 1). */
START_TEST(bernoulli_sources_act_on_time)
{
    const double loads[] = { 0.01, 0.3, 0.9 };
    const int pkt_flits = SRC_PKT_FLITS;
    for (unsigned t = 0; t < 3; t++) {
        static src_rig rig;
        static src_log g;
        memset(&g, 0, sizeof g);
        src_rig_init(&rig, loads[t], 77, false, false, 25, src_sink_recv, &g);
        g.rig = &rig;
        const tep_cfg *ec = &rig.cfg;
        sim_run(rig.k, SRC_CYCLES * SRC_PERIOD_PS);
        for (int i = 0; i < SRC_PORTS; i++) {
            src_replay r;
            src_replay_init(&r, ec, i);
            uint64_t arrival = src_replay_gap(&r), next_free = 0;
            int pkts = 0;
            for (int x = 0; x + pkt_flits <= g.n[i]; x += pkt_flits, pkts++) {
                const uint64_t start = arrival > next_free ? arrival : next_free;
                for (int f = 0; f < pkt_flits; f++) {
                    REQUIRE(g.flit[i][x + f] == (unsigned)f, "load %.2f port %d packet %d: flit %u at position %d", ec->load, i,
                            pkts, g.flit[i][x + f], f);
                    REQUIRE(g.created[i][x + f] == arrival, "load %.2f port %d packet %d: created at %llu, arrival %llu",
                            ec->load, i, pkts, (unsigned long long)g.created[i][x + f], (unsigned long long)arrival);
                    REQUIRE(g.sent[i][x + f] == start + (uint64_t)f, "load %.2f port %d packet %d flit %d: sent at %llu, due %llu",
                            ec->load, i, pkts, f, (unsigned long long)g.sent[i][x + f], (unsigned long long)(start + (uint64_t)f));
                }
                next_free = start + (uint64_t)pkt_flits;
                arrival += 1 + src_replay_gap(&r);
                src_replay_dest(&r, i);
            }
            /* the run saw every packet that arrived early enough to be sent whole */
            REQUIRE(pkts > 0 && (arrival > next_free ? arrival : next_free) + pkt_flits >= SRC_CYCLES - 1,
                    "load %.2f port %d: %d packets, the next due at %llu", ec->load, i, pkts, (unsigned long long)arrival);
        }
        src_rig_free(&rig);
    }
}
END_TEST

/* What a packet's record said when its first flit reached the switch side. */
#define LAZY_MAX_PKTS 16384
typedef struct lazy_log {
    src_rig *rig;
    int n[SRC_PORTS];
    sim_pkt rec[SRC_PORTS][LAZY_MAX_PKTS];
} lazy_log;

static void lazy_sink_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    src_sink *s = ctx;
    lazy_log *g = s->log;
    sim_pkt *k = msg;
    const unsigned first = sim_link_part(l), count = bytes / SRC_FLIT_BYTES;
    if (first == 0) {
        REQUIRE(g->n[s->port] < LAZY_MAX_PKTS, "too many packets");
        g->rec[s->port][g->n[s->port]++] = *k;
    }
    if (first + count == k->wire_bytes / SRC_FLIT_BYTES) sim_pkt_free(k); /* as a sink would: the pool reuses it */
}

/* Bernoulli packets get their record only when sent (endpoints.c, tep_qent):
 * with per-destination source queues backed up behind a half-rate link, they
 * leave out of creation order, in records released and reused meanwhile, and
 * every field must still be what it was made with at creation: creation time
 * (which names the packet: arrivals are at distinct cycles) and destination
 * as the PRNG stream replayed says, and seq counting the flits the source
 * sent before. */
START_TEST(lazy_records_keep_every_field)
{
    const int pkt_flits = SRC_PKT_FLITS;
    for (int saf = 0; saf < 2; saf++) {
        static src_rig rig;
        static lazy_log g;
        memset(&g, 0, sizeof g);
        /* half the offered flit rate on the links: the sources back up */
        src_rig_init(&rig, 0.9, 31, saf, true, 12.5, lazy_sink_recv, &g);
        g.rig = &rig;
        sim_run(rig.k, SRC_CYCLES * SRC_PERIOD_PS);
        /* tep_queued_copies counts from the queue entries: every flit generated and not yet sent
         * (it catches up first: sources behind a busy wire make their packets when it is free),
         * and the packets that arrived once the queues held TEP_SRC_QUEUE_PKTS: this backlog
         * (~2700 packets a source) is past it, so the sources hold at least that many (more only
         * while a queue would be empty: endpoints.h) and the rest waits in the generator, to be
         * made in arrival order with its arrival times */
        uint64_t unmade_all = 0;
        for (int i = 0; i < SRC_PORTS; i++) {
            tep *e = rig.e[i];
            const uint64_t queued = tep_queued_copies(e), unmade = tep_unmade_copies(e);
            ck_assert_uint_eq(queued, e->flits_generated - e->copies_sent + unmade);
            unmade_all += unmade;
        }
        ck_assert_uint_gt(unmade_all, 0);
        for (int i = 0; i < SRC_PORTS; i++) {
            const tep *e = rig.e[i], *src = e;
            REQUIRE(src->queued >= TEP_SRC_QUEUE_PKTS && src->queued <= TEP_SRC_HARD_PKTS,
                    "port %d: %u packets queued, the caps are %u and %u", i, src->queued, TEP_SRC_QUEUE_PKTS, TEP_SRC_HARD_PKTS);
            REQUIRE(e->source_cap_hits == 0, "%llu cap hits", (unsigned long long)e->source_cap_hits);
            for (int q = 0; q < TEP_QUEUES; q++)
                REQUIRE(src->q[q].cap <= 2 * TEP_SRC_QUEUE_PKTS, "port %d queue %d: ring of %u", i, q, src->q[q].cap);
            REQUIRE(src->next_id < LAZY_MAX_PKTS, "port %d: %u packets", i, src->next_id);
            REQUIRE(g.n[i] > 100 && src->queued > 100, "port %d: %d sent, %u queued: no backlog", i, g.n[i], src->queued);
            /* replay the creation of every packet: arrival cycle and destination */
            static uint64_t arrival[LAZY_MAX_PKTS];
            static int to[LAZY_MAX_PKTS];
            src_replay r;
            src_replay_init(&r, &rig.cfg, i);
            uint64_t next = src_replay_gap(&r);
            for (uint32_t id = 0; id < src->next_id; id++) {
                arrival[id] = next;
                next += 1 + src_replay_gap(&r);
                to[id] = src_replay_dest(&r, i);
            }
            static bool seen[LAZY_MAX_PKTS];
            memset(seen, 0, sizeof seen);
            int reordered = 0;
            uint32_t prev_id = 0;
            for (int x = 0; x < g.n[i]; x++) {
                const sim_pkt *q = &g.rec[i][x];
                /* the packet made at the arrival cycle of its creation time (arrival[] ascends) */
                uint32_t lo = 0, hi = src->next_id;
                while (lo < hi) {
                    const uint32_t mid = lo + (hi - lo) / 2;
                    if (arrival[mid] * SRC_PERIOD_PS < q->created_ps) lo = mid + 1;
                    else hi = mid;
                }
                const uint32_t id = lo;
                REQUIRE(id < src->next_id && arrival[id] * SRC_PERIOD_PS == q->created_ps && !seen[id],
                        "port %d packet %d: created at %llu ps, twice or at no arrival", i, x, (unsigned long long)q->created_ps);
                seen[id] = true;
                reordered += x > 0 && id < prev_id;
                prev_id = id;
                REQUIRE(q->dst == (uint32_t)to[id], "port %d id %u: to %u, drawn %d", i, id, q->dst, to[id]);
                REQUIRE(q->src == (uint32_t)i && q->wire_bytes == (uint32_t)(pkt_flits * SRC_FLIT_BYTES) && q->flags == 0 &&
                            q->parts == (saf ? 1 : pkt_flits),
                        "port %d id %u: src %u wire_bytes %u flags %u parts %u", i, id, q->src, q->wire_bytes, q->flags, q->parts);
                REQUIRE(q->payload_bytes == (uint32_t)((pkt_flits - 1) * SRC_FLIT_BYTES), "port %d id %u: payload %u", i, id,
                        q->payload_bytes);
                REQUIRE(q->seq == (uint64_t)x * pkt_flits, "port %d id %u: seq %llu, sent as packet %d", i, id,
                        (unsigned long long)q->seq, x);
            }
            REQUIRE(reordered > 0, "port %d: packets left in creation order; the test does not exercise the queues", i);
        }
        src_rig_free(&rig);
    }
}
END_TEST


/* One overloaded switch run with the sources' caps (soft, hard). */
static nvs_uniform_result capped_run(nvs_uniform_cfg c, uint32_t soft, uint32_t hard)
{
    c.src_soft_pkts = soft;
    c.src_hard_pkts = hard;
    nvs_uniform_result r;
    char why[256] = "";
    sim_kernel *k = sim_kernel_new();
    const int rc = nvs_run_uniform(k, &c, &r, why, sizeof why);
    sim_kernel_free(k);
    REQUIRE(rc == 0, "run refused: %s", why);
    REQUIRE(r.cons.dropped == 0 && r.cons.duplicated == 0 && r.cons.out_of_order == 0 && r.cons.links_ok,
            "conservation: dropped %llu duplicated %llu out_of_order %llu; %s", (unsigned long long)r.cons.dropped,
            (unsigned long long)r.cons.duplicated, (unsigned long long)r.cons.out_of_order, r.cons.links_why);
    return r;
}

/* NULL if two runs agree in every result and kernel event count, else what differs first. */
static const char *capped_diff(const nvs_uniform_result *a, const nvs_uniform_result *b)
{
    if (a->sim_events != b->sim_events || a->sim_time_ps != b->sim_time_ps) return "kernel events or end time";
    if (a->throughput != b->throughput) return "throughput";
    if (a->latency_samples != b->latency_samples || a->latency_avg_cycles != b->latency_avg_cycles ||
        a->latency_p99_cycles != b->latency_p99_cycles || a->latency_min_cycles != b->latency_min_cycles)
        return "latency";
    if (a->backlog_end != b->backlog_end) return "backlog_end";
    if (memcmp(a->per_input, b->per_input, sizeof a->per_input) || memcmp(a->per_output, b->per_output, sizeof a->per_output))
        return "per-port throughputs";
    if (a->cons.copies_sent != b->cons.copies_sent || a->cons.copies_delivered != b->cons.copies_delivered) return "copies";
    return NULL;
}

/* A source that holds a few packets (soft cap 8, far below the backlog) and
 * makes more only when a queue with credits would otherwise be empty gives
 * exactly the results of an unbounded source (both caps UINT32_MAX: every
 * arrival made at once), event for event, as long as its hard cap is not
 * reached. Overloaded switches with VOQs at the sources (uniform, cut-through
 * and store-and-forward; a hot spot; all-to-all) and a FIFO one. With the
 * earlier rule (a fixed cap: hard = soft) the random-destination VOQ runs
 * come out different, and the sources say so (source_cap_hits). */
/* One case per loop iteration (tcase_add_loop_test): each has its own
 * timeout, which matters under ASan on a loaded machine. */
static const struct { const char *name; xbar_queue_kind q; traffic_pattern pat; double hot; bool saf; int flits; double load; bool old_differs; } bounded_cases[] = {
    { "voq uniform", XBAR_QUEUE_VOQ, TRAFFIC_UNIFORM, 0, false, 4, 1.0, true },
    { "voq uniform saf", XBAR_QUEUE_VOQ, TRAFFIC_UNIFORM, 0, true, 4, 1.0, true },
    { "voq uniform 1-flit", XBAR_QUEUE_VOQ, TRAFFIC_UNIFORM, 0, false, 1, 1.0, true },
    { "voq hotspot", XBAR_QUEUE_VOQ, TRAFFIC_HOTSPOT, 0.1, false, 4, 0.9, true },
    /* every queue gets its packets in turn: a fixed cap holds some for each */
    { "voq alltoall", XBAR_QUEUE_VOQ, TRAFFIC_ALLTOALL, 0, false, 4, 1.0, false },
    /* a FIFO's head is its oldest packet: the soft cap alone is exact */
    { "fifo uniform", XBAR_QUEUE_FIFO, TRAFFIC_UNIFORM, 0, false, 4, 1.0, false },
};

START_TEST(bounded_sources_match_unbounded)
{
    const uint32_t soft = 8, inf = UINT32_MAX;
    {
        const unsigned t = (unsigned)_i;
        nvs_uniform_cfg c;
        memset(&c, 0, sizeof c);
        const int n = 16;
        xbar_core_cfg_default(&c.net.sw.core, n);
        c.net.sw.core.queue = bounded_cases[t].q;
        c.net.sw.core.alloc = XBAR_ALLOC_ISLIP;
        c.net.sw.core.iters = 1;
        c.net.sw.core.depth = 16;
        c.net.sw.core.fanout_read = 1;
        c.net.sw.core.seed = 5;
        c.net.sw.credit_batch = 1;
        c.net.sw.saf = bounded_cases[t].saf;
        c.net.port_GBps = 25;
        c.net.flit_bytes = 16;
        c.net.link_latency_ns = 1;
        c.load = bounded_cases[t].load;
        c.pattern = bounded_cases[t].pat;
        c.hotspot_frac = bounded_cases[t].hot;
        c.pkt_flits = bounded_cases[t].flits;
        c.cycles = 60000;
        c.warmup = 2000;
        c.seed = 11;
        c.record_latency = true;
        const nvs_uniform_result ref = capped_run(c, inf, inf), b = capped_run(c, soft, 1u << 20);
        REQUIRE(ref.source_cap_hits == 0 && b.source_cap_hits == 0, "%s: %llu / %llu cap hits", bounded_cases[t].name,
                (unsigned long long)ref.source_cap_hits, (unsigned long long)b.source_cap_hits);
    /* the sources must hold far more than the soft cap for the test to mean anything */
        REQUIRE(ref.backlog_end > (uint64_t)n * 8 * soft * (uint64_t)bounded_cases[t].flits, "%s: backlog %llu copies: not overloaded",
                bounded_cases[t].name, (unsigned long long)ref.backlog_end);
        const char *d = capped_diff(&ref, &b);
        REQUIRE(d == NULL, "%s: bounded sources differ from unbounded ones in %s (throughput %.6f vs %.6f, latency %.4f vs %.4f)",
                bounded_cases[t].name, d, b.throughput, ref.throughput, b.latency_avg_cycles, ref.latency_avg_cycles);
        const nvs_uniform_result old = capped_run(c, soft, soft);
        if (bounded_cases[t].old_differs) {
            REQUIRE(capped_diff(&ref, &old) != NULL && old.source_cap_hits > 0,
                    "%s: a fixed cap of %u gave the unbounded results (%llu cap hits): the test does not exercise the rule",
                    bounded_cases[t].name, soft, (unsigned long long)old.source_cap_hits);
        } else {
            REQUIRE(capped_diff(&ref, &old) == NULL && old.source_cap_hits == 0, "%s: a fixed cap differs (%s)", bounded_cases[t].name,
                    capped_diff(&ref, &old));
        }
    }
}
END_TEST

/* A message source that also makes Bernoulli packets, behind a half-rate
 * link: a message packet is cut behind every Bernoulli packet arrived before
 * it, so a source holding 8 packets (the rest in its generator) must send
 * every flit at the same cycle, in the same order, as an unbounded one. FIFO
 * and per-destination source queues, the message unicast to port 2. */
START_TEST(bounded_message_source_matches_unbounded)
{
    for (int voq = 0; voq < 2; voq++) {
        static src_rig rig[2];
        static src_log g[2];
        static traffic_message m[2];
        for (int v = 0; v < 2; v++) {
            memset(&g[v], 0, sizeof g[v]);
            const uint32_t cap = v == 0 ? UINT32_MAX : 8;
            src_rig_init_caps(&rig[v], 0.9, 41, false, voq, 12.5, src_sink_recv, &g[v], cap, v == 0 ? UINT32_MAX : 1u << 20);
            g[v].rig = &rig[v];
            traffic_message_init(&m[v], 1ULL << 2, 1u << 20, 2 * SRC_FLIT_BYTES, false);
            tep_set_message(rig[v].e[0], &m[v]);
            sim_run(rig[v].k, SRC_CYCLES * SRC_PERIOD_PS);
        }
        for (int i = 0; i < SRC_PORTS; i++)
            REQUIRE(rig[1].e[i]->source_cap_hits == 0, "voq %d port %d: %llu cap hits", voq, i,
                    (unsigned long long)rig[1].e[i]->source_cap_hits);
        REQUIRE(m[0].offset > 0 && rig[0].e[0]->queued > 100, "voq %d: message cut to %llu B, %u queued: no backlog", voq,
                (unsigned long long)m[0].offset, rig[0].e[0]->queued);
        for (int i = 0; i < SRC_PORTS; i++) {
            REQUIRE(g[0].n[i] == g[1].n[i], "voq %d port %d: %d flits unbounded, %d bounded", voq, i, g[0].n[i], g[1].n[i]);
            for (int x = 0; x < g[0].n[i]; x++)
                REQUIRE(g[0].sent[i][x] == g[1].sent[i][x] && g[0].created[i][x] == g[1].created[i][x] && g[0].flit[i][x] == g[1].flit[i][x],
                        "voq %d port %d flit %d: sent %llu created %llu flit %u unbounded, %llu %llu %u bounded", voq, i, x,
                        (unsigned long long)g[0].sent[i][x], (unsigned long long)g[0].created[i][x], g[0].flit[i][x],
                        (unsigned long long)g[1].sent[i][x], (unsigned long long)g[1].created[i][x], g[1].flit[i][x]);
        }
        src_rig_free(&rig[0]);
        src_rig_free(&rig[1]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("traffic");
    TCase *tc = tcase_create("traffic");
    tcase_add_test(tc, uniform_includes_own_port);
    tcase_add_test(tc, hotspot_fraction);
    tcase_add_test(tc, transpose_and_permutation);
    tcase_add_test(tc, alltoall_walks_every_other_port);
    tcase_add_test(tc, message_cutting);
    tcase_add_test(tc, nvlink_presets_table);
    tcase_add_test(tc, bernoulli_sources_act_on_time);
    tcase_add_test(tc, lazy_records_keep_every_field);
    tcase_add_loop_test(tc, bounded_sources_match_unbounded, 0, (int)(sizeof bounded_cases / sizeof bounded_cases[0]));
    tcase_add_test(tc, bounded_message_source_matches_unbounded);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
