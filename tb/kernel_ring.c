/* kernel_ring: tokens circulating through a ring of nodes over links with
 * latency, bandwidth and credits. Exercises the whole path: params, links,
 * credits, signals, tracing, report and checks.
 *
 * Each node has an input buffer of `credits` slots (the upstream link's
 * credits), holds a token for proc_ns, then forwards it when it has a credit
 * for the next node. Without contention a lap takes exactly
 * nodes * (serialisation + latency + proc); a check says so. The hop rate is
 * predicted from the configuration as the cycle time of the ring's timed
 * marked graph (see ring_period_ps). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim.h"

typedef struct token {
    uint32_t id;
    sim_time_ps lap_start_ps;
    bool lap_started;
    uint64_t hops;
} token;

typedef struct ring ring;
struct sim_test_ctx;

typedef struct node {
    ring *r;
    unsigned idx;
    sim_link *in, *out;
    token **buf;               /* input buffer, FIFO */
    sim_time_ps *ready_ps;
    unsigned head, len, cap;
    sim_process proc;
    sim_event wake;
    sim_signal occupancy;
} node;

struct ring {
    sim_kernel *k;
    node *nodes;
    unsigned n_nodes, n_tokens;
    token *tokens;
    uint32_t token_bytes;
    sim_time_ps proc_ps;
    uint64_t hops, target_hops;
    sim_hist lap_ns;
    sim_trace_var tv_hops;
    sim_test_ctx *ctx;
};

static void label_token(const void *msg, char *buf, size_t n)
{
    snprintf(buf, n, "T%u", ((const token *)msg)->id);
}

static void push_token(node *nd, token *t, sim_time_ps ready)
{
    if (nd->len == nd->cap) sim_fatal("node %u: buffer overflow (credit protocol broken)", nd->idx);
    unsigned slot = (nd->head + nd->len) % nd->cap;
    nd->buf[slot] = t;
    nd->ready_ps[slot] = ready;
    nd->len++;
    sim_signal_write(&nd->occupancy, nd->len);
}

static void on_arrive(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    node *nd = ctx;
    push_token(nd, msg, sim_now(nd->r->k) + nd->r->proc_ps);
    if (nd->len == 1) sim_event_notify_at(&nd->wake, nd->r->proc_ps);
}

/* Forward every token that has been processed, while credits last. */
static void node_run(void *ctx)
{
    node *nd = ctx;
    ring *r = nd->r;
    sim_time_ps now = sim_now(r->k);
    while (nd->len) {
        token *t = nd->buf[nd->head];
        sim_time_ps ready = nd->ready_ps[nd->head];
        if (ready > now) {
            sim_event_notify_at(&nd->wake, ready - now);
            return;
        }
        if (!sim_link_try_send(nd->out, t, r->token_bytes, 0, 1)) return;   /* woken by credit_returned */
        nd->head = (nd->head + 1) % nd->cap;
        nd->len--;
        sim_signal_write(&nd->occupancy, nd->len);
        sim_link_return_credits(nd->in, 0, 1);
        t->hops++;
        if (nd->idx == 0) {
            if (t->lap_started) sim_hist_add(&r->lap_ns, (double)(now - t->lap_start_ps) / 1000.0);
            t->lap_started = true;
            t->lap_start_ps = now;
        }
        r->hops++;
        sim_trace_u64(sim_trace_of_kernel(r->k), r->tv_hops, r->hops);
        if (r->hops == r->target_hops) sim_stop(r->k);
        if ((r->hops & 0xffff) == 0)
            sim_progress(r->ctx, (double)r->hops / (double)r->target_hops, "%" PRIu64 " hops", r->hops);
    }
}

/* The ring as a timed event graph (a marked graph): transition i = "node i
 * sends to node i+1". Its places: token i -> i+1 (delay h = serialisation +
 * latency + proc, one mark per token), free slot i+1 -> i (delay latency:
 * the credit's way back, one mark per free slot) and the link itself (delay
 * serialisation, one mark). In steady state every transition fires once per
 * period = the largest delay/marks ratio over the graph's simple cycles
 * (Ramamoorthy & Ho 1980; Baccelli et al., "Synchronization and Linearity"):
 * the forward ring N h / K, the backward ring of holes N latency / (N C - K),
 * each token/credit pair (h + latency) / C, and a link ser / 1. Total hops
 * per unit time = N / period. */
static double ring_period_ps(unsigned n, unsigned k, unsigned credits, double hop_ps, double lat_ps, double ser_ps)
{
    double per = (double)n * hop_ps / k;
    double holes = (double)n * credits - k;
    if (holes > 0 && (double)n * lat_ps / holes > per) per = (double)n * lat_ps / holes;
    if ((hop_ps + lat_ps) / credits > per) per = (hop_ps + lat_ps) / credits;
    if (ser_ps > per) per = ser_ps;
    return per;
}

static const sim_param_def ring_params[] = {
    SIM_PARAM_INT("nodes", "16", "", 2, 1 << 20, "nodes in the ring"),
    SIM_PARAM_INT("tokens", "4", "", 1, 1 << 24, "tokens circulating (fewer than nodes*credits, else the ring deadlocks)"),
    SIM_PARAM_INT("hops", "100000", "", 1, 1e12, "stop after this many token hops"),
    SIM_PARAM_DOUBLE("latency_ns", "10", "ns", 0, 1e9, "one-way link latency"),
    SIM_PARAM_DOUBLE("bandwidth_GBps", "16", "GB/s", 0, 1e6, "link bandwidth (0 = infinite)"),
    SIM_PARAM_INT("token_bytes", "64", "B", 1, 1 << 20, "bytes per token on the wire"),
    SIM_PARAM_INT("credits", "2", "", 1, 1 << 20, "input buffer slots per node = credits of its input link"),
    SIM_PARAM_DOUBLE("proc_ns", "5", "ns", 0, 1e9, "time a node holds a token before forwarding it"),
    SIM_PARAM_END,
};

static void ring_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    ring r = { 0 };
    r.k = c->k;
    r.ctx = c;
    r.n_nodes = (unsigned)sim_param_int(p, "nodes");
    r.n_tokens = (unsigned)sim_param_int(p, "tokens");
    r.target_hops = (uint64_t)sim_param_int(p, "hops");
    r.token_bytes = (uint32_t)sim_param_int(p, "token_bytes");
    r.proc_ps = (sim_time_ps)(sim_param_double(p, "proc_ns") * 1000.0 + 0.5);
    unsigned credits = (unsigned)sim_param_int(p, "credits");
    if ((uint64_t)r.n_tokens >= (uint64_t)r.n_nodes * credits)
        sim_input_error("kernel_ring: tokens=%u must be below nodes*credits=%" PRIu64 " (a full ring deadlocks)", r.n_tokens,
                        (uint64_t)r.n_nodes * credits);
    const double latency_ns = sim_param_double(p, "latency_ns"), bandwidth_GBps = sim_param_double(p, "bandwidth_GBps");
    sim_param_not_applicable(p, "seed", "the ring has no random streams");
    sim_test_configured(c);
    sim_hist_init(&r.lap_ns, "lap_ns");
    r.nodes = calloc(r.n_nodes, sizeof *r.nodes);
    r.tokens = calloc(r.n_tokens, sizeof *r.tokens);
    sim_link **links = calloc(r.n_nodes, sizeof *links);
    if (!r.nodes || !r.tokens || !links) sim_fatal("out of memory");

    sim_link_cfg cfg = { 0 };
    cfg.latency_ps = (sim_time_ps)(latency_ns * 1000.0 + 0.5);
    cfg.bandwidth_GBps = bandwidth_GBps;
    cfg.credit_latency_ps = SIM_LINK_SAME_LATENCY;
    cfg.credit_types = 1;
    cfg.credits[0] = credits;
    char (*names)[24] = calloc(r.n_nodes, sizeof *names);
    for (unsigned i = 0; i < r.n_nodes; i++) {
        snprintf(names[i], sizeof names[i], "link%u", i);   /* link i: node i -> node i+1 */
        cfg.name = names[i];
        links[i] = sim_link_new(c->k, &cfg);
    }
    sim_trace *tr = c->trace;
    sim_trace_push_scope(tr, "kernel_ring");
    r.tv_hops = sim_trace_add_var(tr, "hops", 64);
    for (unsigned i = 0; i < r.n_nodes; i++) {
        node *nd = &r.nodes[i];
        nd->r = &r;
        nd->idx = i;
        nd->in = links[(i + r.n_nodes - 1) % r.n_nodes];
        nd->out = links[i];
        nd->cap = credits;
        nd->buf = calloc(credits, sizeof *nd->buf);
        nd->ready_ps = calloc(credits, sizeof *nd->ready_ps);
        sim_event_init(&nd->wake, c->k, "wake");
        sim_method_init(&nd->proc, c->k, "node", node_run, nd);
        sim_sensitive(&nd->proc, &nd->wake);
        sim_sensitive(&nd->proc, &nd->out->credit_returned);
        sim_dont_initialize(&nd->proc);
        sim_link_set_receiver(nd->in, on_arrive, nd);
        sim_signal_init(&nd->occupancy, c->k, "occupancy", 32, 0);
        if (tr && i < 64) {   /* the first 64 nodes are plenty to look at */
            sim_trace_push_scopef(tr, "node%u", i);
            sim_signal_trace(&nd->occupancy, tr);
            sim_trace_pop_scope(tr);
            sim_link_trace(nd->out, tr, label_token);
        }
    }
    sim_trace_pop_scope(tr);
    /* place tokens evenly; they start processed, so they leave at t=0 */
    for (unsigned t = 0; t < r.n_tokens; t++) {
        token *tk = &r.tokens[t];
        tk->id = t;
        node *nd = &r.nodes[(uint64_t)t * r.n_nodes / r.n_tokens];
        sim_link_hold_credits(nd->in, 0, 1);
        push_token(nd, tk, 0);
        sim_event_notify_at(&nd->wake, 0);
    }

    sim_run(c->k, SIM_TIME_MAX);

    /* metrics */
    sim_time_ps now = sim_now(c->k);
    uint64_t stall_ps = 0, sent_bytes = 0, busy_ps = 0;
    uint64_t at_nodes = 0, in_links = 0;
    for (unsigned i = 0; i < r.n_nodes; i++) {
        stall_ps += links[i]->stall_ps + (links[i]->stalled ? now - links[i]->stall_since_ps : 0);
        sent_bytes += links[i]->bytes_sent;
        busy_ps += links[i]->busy_ps;
        at_nodes += r.nodes[i].len;
        in_links += sim_link_in_flight(links[i]);
    }
    double ser_ns = cfg.bandwidth_GBps > 0 ? r.token_bytes / cfg.bandwidth_GBps : 0;
    /* the link rounds each arrival up to a whole ps */
    sim_time_ps hop_ps = (sim_time_ps)(ser_ns * 1000.0 + 0.999999) + cfg.latency_ps + r.proc_ps;
    double expect_lap_ns = (double)(hop_ps * r.n_nodes) / 1000.0;
    sim_report *rep = c->report;
    sim_report_metric(rep, "hops", (double)r.hops);
    sim_report_metric(rep, "laps", (double)sim_hist_count(&r.lap_ns));
    sim_report_metric(rep, "lap_ns_min", sim_hist_count(&r.lap_ns) ? r.lap_ns.min : 0);
    sim_report_metric(rep, "lap_ns_avg", sim_hist_mean(&r.lap_ns));
    sim_report_metric(rep, "lap_ns_p99", sim_hist_percentile(&r.lap_ns, 99));
    sim_report_metric(rep, "lap_ns_uncontended", expect_lap_ns);
    sim_report_metric(rep, "hops_per_us", now ? (double)r.hops / ((double)now * 1e-6) : 0);
    double period_ps = ring_period_ps(r.n_nodes, r.n_tokens, credits, (double)hop_ps, (double)cfg.latency_ps,
                                      (double)(sim_time_ps)(ser_ns * 1000.0 + 0.999999));
    double pred_hops_per_us = period_ps > 0 ? r.n_nodes / period_ps * 1e6 : 0;
    sim_report_metric(rep, "predicted_hops_per_us", pred_hops_per_us);
    sim_report_metric(rep, "credit_stall_frac", now ? (double)stall_ps / ((double)now * r.n_nodes) : 0);
    sim_report_metric(rep, "link_util_avg", now ? (double)busy_ps / ((double)now * r.n_nodes) : 0);
    sim_report_metric(rep, "bytes_sent", (double)sent_bytes);
    sim_report_metric_json(rep, "lap_histogram_ns", sim_hist_json(&r.lap_ns, 10));

    sim_check(rep, "hops_reached", r.hops == r.target_hops, "%" PRIu64 " of %" PRIu64 " hops", r.hops, r.target_hops);
    sim_check(rep, "tokens_conserved", at_nodes + in_links == r.n_tokens,
              "%" PRIu64 " at nodes + %" PRIu64 " on links = %u tokens", at_nodes, in_links, r.n_tokens);
    uint64_t hop_sum = 0;
    for (unsigned t = 0; t < r.n_tokens; t++) hop_sum += r.tokens[t].hops;
    sim_check(rep, "hops_accounted", hop_sum == r.hops, "per-token hops sum %" PRIu64 " = %" PRIu64, hop_sum, r.hops);
    char why[256] = "all links conserve messages and credits";
    bool links_ok = true;
    for (unsigned i = 0; i < r.n_nodes && links_ok; i++) links_ok = sim_link_check(links[i], false, why, sizeof why) == 0;
    sim_check(rep, "links_conserve", links_ok, "%s", why);
    /* No lap beats the physics; with no credit stall and no two tokens in one
     * node, the fastest lap is exactly the uncontended one. */
    bool stalled = stall_ps > 0;
    if (sim_hist_count(&r.lap_ns)) {
        sim_check(rep, "lap_not_faster_than_physics", r.lap_ns.min >= expect_lap_ns,
                  "fastest lap %.3f ns >= nodes*(serialisation+latency+proc) = %.3f ns", r.lap_ns.min, expect_lap_ns);
        if (!stalled && r.n_tokens <= r.n_nodes)
            sim_check(rep, "lap_uncontended_exact", r.lap_ns.min == expect_lap_ns,
                      "no credit stall: fastest lap %.3f ns = %.3f ns", r.lap_ns.min, expect_lap_ns);
    } else {
        sim_check(rep, "lap_not_faster_than_physics", r.hops < r.n_nodes, "no token completed a lap in %" PRIu64 " hops",
                  r.hops);
    }

    /* The rate from the configuration. The run starts with every token
     * processed at its node and ends at a hop count, so the start-up costs at
     * most one period per node (a lap of the slowest cycle): allow that and 0.5%. */
    if (now && pred_hops_per_us > 0 && r.hops >= 10ull * r.n_nodes) {
        double meas = (double)r.hops / ((double)now * 1e-6);
        double slack = (double)r.n_nodes * period_ps / (double)now + 0.005;
        sim_check(rep, "hop_rate_as_predicted", fabs(meas / pred_hops_per_us - 1) <= slack,
                  "%.3f hops/us vs %.3f predicted = nodes / max(N h/K, N lat/(N C - K), (h + lat)/C, ser) (limit %.2f%%)",
                  meas, pred_hops_per_us, 100 * slack);
    }
    for (unsigned i = 0; i < r.n_nodes; i++) {
        free(r.nodes[i].buf);
        free(r.nodes[i].ready_ps);
        sim_link_free(links[i]);
    }
    sim_hist_free(&r.lap_ns);
    free(names);
    free(links);
    free(r.nodes);
    free(r.tokens);
}

SIM_TEST(kernel_ring, "tokens circulating through a ring of nodes over links with latency, bandwidth and credits",
         ring_params, "hops=20000", ring_run)
