/* Switch experiments (see nvs_experiment.h). */
#include "tb/nvs/nvs_experiment.h"
#include "models/traffic/endpoints.h"
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

sim_time_ps nvs_period_ps(int flit_bytes, double port_GBps)
{
    return (sim_time_ps)llround((double)flit_bytes / port_GBps * 1000.0);
}

double nvs_karol_saturation(int n, double *err)
{
    static const double table[] = { 0,        1.0,      0.75,     0.682540, 0.655242, 0.639917,
                                    0.630150, 0.623371, 0.618390, 0.614575, 0.611560, 0.609117 };
    if (n >= 1 && n <= 11) {
        *err = 5e-7;
        return table[n];
    }
    *err = 1e-4;
    return 2.0 - sqrt(2.0) + 0.2457 / n + 0.1204 / ((double)n * n);
}

double nvs_fanout_ideal_speedup(int ports, int fanout, double background)
{
    const double left = 1.0 - background * (ports - 1) / ports; /* of each destination output's cycle */
    if (left <= 0 || fanout < 1) return 0;
    const double mc = left < 1 ? left : 1, uc = left < 1.0 / fanout ? left : 1.0 / fanout;
    return mc / uc;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One network: endpoints, links, switch. */
typedef struct nvs_net {
    int n;
    sim_clock_domain *clk;
    sim_groups *groups;       /* the system's multicast groups (the message sources add theirs) */
    sim_link *up[64], *down[64];
    nvswitch *sw;
    tep_sched *sched;         /* runs the endpoints (one clock handler) */
    tep *ep[64];              /* one endpoint per switch port */
    tep_meter meter;          /* what the sinks measure together (latency, drain, message) */
    char names[128][24];
    traffic_dest dest;
} nvs_net;

static void label_msg(const void *msg, char *buf, size_t n) { sim_pkt_label(msg, buf, n); }

static int net_build(nvs_net *net, sim_kernel *k, const nvs_net_cfg *cfg, const tep_cfg *ecfg_in, sim_trace *tr,
                     char *why, size_t why_n)
{
    memset(net, 0, sizeof *net);
    const int n = cfg->sw.core.ports;
    net->n = n;
    if (cfg->flit_bytes < 1) return snprintf(why, why_n, "flit_bytes=%d: allowed >= 1", cfg->flit_bytes), -1;
    if (!(cfg->port_GBps > 0)) return snprintf(why, why_n, "port_GBps=%g: allowed > 0", cfg->port_GBps), -1;
    nvswitch_cfg swc = cfg->sw;
    swc.flit_bytes = cfg->flit_bytes;
    swc.period_ps = nvs_period_ps(cfg->flit_bytes, cfg->port_GBps);
    if (swc.period_ps == 0)
        return snprintf(why, why_n, "flit_bytes=%d at port_GBps=%g is under 1 ps per flit", cfg->flit_bytes, cfg->port_GBps), -1;
    if (!swc.name) swc.name = "nvswitch";
    net->groups = sim_groups_new();
    swc.groups = net->groups;
    net->clk = sim_clock_new(k, "switch_clk", swc.period_ps, 0);
    /* Sources first: a flit sent at an edge is never seen by the switch at the same edge anyway. */
    tep_cfg ecfg = *ecfg_in;
    ecfg.ports = n;
    ecfg.flit_bytes = cfg->flit_bytes;
    ecfg.period_ps = swc.period_ps;
    ecfg.saf = swc.saf;
    ecfg.credit_mode = nvswitch_credit_mode(&swc.core);   /* the endpoints spend credits the way the switch counts them */
    ecfg.src_voq = swc.core.queue == XBAR_QUEUE_VOQ;
    ecfg.groups = net->groups;
    sim_hist_init(&net->meter.latency_cycles, "latency_cycles");
    ecfg.meter = &net->meter;
    net->sched = tep_sched_new(k, net->clk);
    for (int i = 0; i < n; i++) net->ep[i] = tep_new(k, net->sched, &ecfg, i);
    net->sw = nvswitch_new(k, net->clk, &swc, tr, why, why_n);
    if (!net->sw) return -1;
    sim_link_cfg lc;
    for (int i = 0; i < n; i++) {
        memset(&lc, 0, sizeof lc);
        lc.latency_ps = (sim_time_ps)llround(cfg->link_latency_ns * 1000.0);
        lc.bandwidth_GBps = cfg->port_GBps;
        lc.credit_latency_ps = SIM_LINK_SAME_LATENCY;
        snprintf(net->names[2 * i], sizeof net->names[0], "up%d", i);
        lc.name = net->names[2 * i];
        nvswitch_link_credits(&swc.core, &lc);
        net->up[i] = sim_link_new(k, &lc);
        memset(&lc, 0, sizeof lc);
        lc.latency_ps = (sim_time_ps)llround(cfg->link_latency_ns * 1000.0);
        lc.bandwidth_GBps = cfg->port_GBps;
        lc.credit_latency_ps = SIM_LINK_SAME_LATENCY;
        snprintf(net->names[2 * i + 1], sizeof net->names[0], "down%d", i);
        lc.name = net->names[2 * i + 1];
        net->down[i] = sim_link_new(k, &lc);
        nvswitch_attach(net->sw, i, net->up[i], net->down[i]);
        tep_attach(net->ep[i], net->up[i], net->down[i]);
    }
    if (tr) {
        sim_trace_push_scope(tr, "links");
        for (int i = 0; i < n && i < 8; i++) {
            sim_link_trace(net->up[i], tr, label_msg);
            sim_link_trace(net->down[i], tr, label_msg);
        }
        sim_trace_pop_scope(tr);
    }
    return 0;
}

/* Drained or not: what the components hold and the links carry goes back
 * first, then every pool is freed strictly (a packet still out is a loss). */
static void net_free(nvs_net *net)
{
    sim_pkt_set held = { 0 };
    if (net->sw) nvswitch_held(net->sw, sim_pkt_set_add, &held);
    for (int i = 0; i < net->n; i++) {
        if (net->ep[i]) tep_held(net->ep[i], sim_pkt_set_add, &held);
        if (net->up[i]) sim_link_for_each_in_flight(net->up[i], sim_pkt_set_add_msg, &held);
        if (net->down[i]) sim_link_for_each_in_flight(net->down[i], sim_pkt_set_add_msg, &held);
    }
    sim_pkt_set_free_all(&held);
    nvswitch_free(net->sw);
    for (int i = 0; i < net->n; i++) {
        tep_free(net->ep[i]);
        sim_link_free(net->up[i]);
        sim_link_free(net->down[i]);
    }
    tep_sched_free(net->sched);
    sim_hist_free(&net->meter.latency_cycles);
    if (net->clk) sim_clock_free(net->clk);
    sim_groups_free(net->groups);
}

/* Copies the endpoints sent and not yet delivered. */
static uint64_t net_in_network(const nvs_net *net)
{
    uint64_t sent = 0, delivered = 0;
    for (int i = 0; i < net->n; i++) {
        sent += net->ep[i]->copies_sent;
        delivered += net->ep[i]->copies_delivered;
    }
    return sent - delivered;
}

/* Stop the sources, let the network empty, then account for every copy. */
static void net_drain_and_check(nvs_net *net, sim_kernel *k, nvs_conservation *c)
{
    for (int i = 0; i < net->n; i++) {
        tep_stop_injection(net->ep[i]);
        tep_stop_sending(net->ep[i]);
    }
    uint64_t inside = net_in_network(net);
    net->meter.stop_when_drained = true;
    net->meter.undelivered = (int64_t)inside;
    sim_time_ps limit = sim_now(k) + (inside + 100000) * net->sw->cfg.period_ps;
    /* The last delivery stops the kernel; a copy that never arrives leaves it
     * idle (or running to the limit if something loops). */
    if (inside) sim_run(k, limit);
    memset(c, 0, sizeof *c);
    for (int i = 0; i < net->n; i++) {
        const tep *e = net->ep[i];
        c->copies_sent += e->copies_sent;
        c->copies_delivered += e->copies_delivered;
        c->duplicated += e->duplicated;
        c->out_of_order += e->out_of_order;
    }
    /* Per flow: a flow that got more than was sent has duplicates, fewer lost copies. */
    uint64_t lost = 0, extra = 0;
    for (int s = 0; s < net->n; s++)
        for (int d = 0; d < net->n; d++) {
            uint64_t sent = net->ep[s]->sent_to[d], got = net->ep[d]->from[s].recv_from;
            if (got > sent) extra += got - sent;
            else lost += sent - got;
        }
    c->dropped = lost;
    if (extra > c->duplicated) c->duplicated = extra;
    c->links_ok = true;
    snprintf(c->links_why, sizeof c->links_why, "all %d links delivered every message and hold their initial credits", 2 * net->n);
    c->drained = c->copies_delivered == c->copies_sent && !lost && !extra;
    if (c->drained && nvswitch_check_drained(net->sw, c->links_why, sizeof c->links_why) != 0) {
        c->links_ok = false;
        c->drained = false;
    }
    for (int i = 0; i < net->n && c->links_ok; i++) {
        c->links_ok = sim_link_check(net->up[i], true, c->links_why, sizeof c->links_why) == 0 &&
                      sim_link_check(net->down[i], true, c->links_why, sizeof c->links_why) == 0;
        if (c->links_ok && net->up[i]->cfg.credit_types) {
            for (unsigned t = 0; t < net->up[i]->cfg.credit_types; t++)
                if (sim_link_credits(net->up[i], t) != net->up[i]->cfg.credits[t]) {
                    c->links_ok = false;
                    snprintf(c->links_why, sizeof c->links_why, "link up%d pool %u: %u credits back of %u after the drain", i, t,
                             sim_link_credits(net->up[i], t), net->up[i]->cfg.credits[t]);
                    break;
                }
        }
    }
}

static void lockstep_result(const nvswitch *sw, uint64_t *mm, uint64_t *cc, char *first, size_t n)
{
    *mm = 0;
    *cc = 0;
    first[0] = 0;
    if (!sw->ls) return;
    *mm = sw->ls->mismatches;
    *cc = sw->ls->cycles_compared;
    if (sw->ls->n_kept) xbar_lockstep_describe(sw->ls, 0, first, n);
}

int nvs_run_uniform(sim_kernel *k, const nvs_uniform_cfg *cfg, nvs_uniform_result *res, char *why, size_t why_n)
{
    memset(res, 0, sizeof *res);
    const int n = cfg->net.sw.core.ports;
    if (cfg->pkt_flits < 1 || cfg->pkt_flits > NVS_EXP_MAX_FLITS)
        return snprintf(why, why_n, "pkt_flits=%d: allowed 1..%d", cfg->pkt_flits, NVS_EXP_MAX_FLITS), -1;
    if (cfg->warmup >= cfg->cycles)
        return snprintf(why, why_n, "warmup=%llu must be below cycles=%llu", (unsigned long long)cfg->warmup,
                        (unsigned long long)cfg->cycles), -1;
    nvs_net net;
    traffic_dest dest;
    if (traffic_dest_init(&dest, cfg->pattern, n, cfg->hotspot_frac, 0, cfg->seed, why, why_n) != 0) return -1;
    sim_time_ps period = nvs_period_ps(cfg->net.flit_bytes, cfg->net.port_GBps);
    tep_cfg ecfg = { 0 };
    ecfg.bernoulli_mask = xbar_mask_all(n);
    ecfg.load = cfg->load;
    ecfg.pkt_flits = cfg->pkt_flits;
    ecfg.dest = &dest;
    ecfg.warmup_ps = cfg->warmup * period;
    ecfg.end_ps = cfg->cycles * period;
    ecfg.record_latency = cfg->record_latency;
    ecfg.seed = cfg->seed;
    ecfg.src_soft_pkts = cfg->src_soft_pkts;
    ecfg.src_hard_pkts = cfg->src_hard_pkts;
    if (net_build(&net, k, &cfg->net, &ecfg, cfg->trace, why, why_n) != 0) {
        net_free(&net);
        return -1;
    }
    res->period_ps = period;
    double w0 = wall_now();
    sim_run(k, ecfg.end_ps);
    res->wall_s = wall_now() - w0;
    res->sim_time_ps = sim_now(k);
    res->sim_events = sim_event_count(k);
    res->switch_cycles = net.sw->core_cycles;
    double win = (double)(cfg->cycles - cfg->warmup);
    uint64_t tot = 0, queued = 0;
    res->throughput_min_input = 1e9;
    for (int i = 0; i < n; i++) {
        uint64_t win_in = 0; /* source i's flits delivered in the window, at every sink */
        for (int d = 0; d < n; d++) win_in += net.ep[d]->from[i].win_from;
        res->per_input[i] = (double)win_in / win;
        res->per_output[i] = (double)net.ep[i]->win_out / win;
        tot += net.ep[i]->win_out;
        if (res->per_input[i] < res->throughput_min_input) res->throughput_min_input = res->per_input[i];
        if (res->per_input[i] > res->throughput_max_input) res->throughput_max_input = res->per_input[i];
    }
    res->throughput = (double)tot / (win * n);
    res->offered = cfg->load;
    sim_hist *lat = &net.meter.latency_cycles;
    res->latency_samples = sim_hist_count(lat);
    res->latency_avg_cycles = sim_hist_mean(lat);
    res->latency_p99_cycles = sim_hist_percentile(lat, 99);
    res->latency_min_cycles = res->latency_samples ? lat->min : 0;
    for (int i = 0; i < n; i++) {
        queued += tep_queued_copies(net.ep[i]);
        res->source_cap_hits += net.ep[i]->source_cap_hits;
    }
    res->backlog_end = queued + net_in_network(&net);
    net_drain_and_check(&net, k, &res->cons);
    lockstep_result(net.sw, &res->mismatches, &res->cycles_compared, res->first_mismatch, sizeof res->first_mismatch);
    net_free(&net);
    return 0;
}

int nvs_run_fanout(sim_kernel *k, const nvs_fanout_cfg *cfg, nvs_fanout_result *res, char *why, size_t why_n)
{
    memset(res, 0, sizeof *res);
    const int n = cfg->net.sw.core.ports;
    if (cfg->src < 0 || cfg->src >= n) return snprintf(why, why_n, "src=%d: allowed 0..%d (ports=%d)", cfg->src, n - 1, n), -1;
    if (cfg->fanout < 1 || cfg->fanout > n - 1)
        return snprintf(why, why_n, "fanout=%d: allowed 1..%d (ports-1, the source excluded)", cfg->fanout, n - 1), -1;
    uint32_t data_flits = (cfg->max_payload + (uint32_t)cfg->net.flit_bytes - 1) / (uint32_t)cfg->net.flit_bytes;
    if (cfg->max_payload < 1 || data_flits + 1 > NVS_EXP_MAX_FLITS)
        return snprintf(why, why_n, "max_payload=%u: allowed 1..%u bytes at flit_bytes=%d", cfg->max_payload,
                        (NVS_EXP_MAX_FLITS - 1) * (uint32_t)cfg->net.flit_bytes, cfg->net.flit_bytes), -1;
    uint64_t mask = 0;
    for (int d = 1; d <= cfg->fanout; d++) mask |= 1ULL << ((cfg->src + d) % n);
    traffic_message msg;
    traffic_message_init(&msg, mask, cfg->bytes, cfg->max_payload, cfg->multicast);
    traffic_dest dest;
    if (traffic_dest_init(&dest, TRAFFIC_UNIFORM, n, 0, 0, cfg->seed, why, why_n) != 0) return -1;
    tep_cfg ecfg = { 0 };
    ecfg.bernoulli_mask = xbar_mask_all(n) & ~(1ULL << cfg->src);
    ecfg.load = cfg->background;
    ecfg.pkt_flits = (int)data_flits + 1;
    ecfg.dest = &dest;
    ecfg.warmup_ps = 0;
    ecfg.end_ps = SIM_TIME_MAX;
    ecfg.record_latency = false;
    ecfg.seed = cfg->seed;
    nvs_net net;
    if (net_build(&net, k, &cfg->net, &ecfg, cfg->trace, why, why_n) != 0) {
        net_free(&net);
        return -1;
    }
    tep_set_message(net.ep[cfg->src], &msg);
    net.meter.msg_dests = __builtin_popcountll(mask);
    net.meter.stop_when_msg_done = true;
    for (uint64_t d = mask; d; d &= d - 1) tep_expect_message(net.ep[__builtin_ctzll(d)], cfg->bytes);
    /* Generous bound: the message over one link at the port rate, a hundred times over. */
    sim_time_ps ideal = (sim_time_ps)((double)cfg->bytes * cfg->fanout / cfg->net.port_GBps * 1000.0);
    sim_time_ps limit = 100 * ideal + SIM_US(100);
    sim_run(k, limit);
    res->completed = net.meter.msg_dests_done == net.meter.msg_dests;
    sim_time_ps done = res->completed ? net.meter.msg_done_ps : sim_now(k);
    res->completion_ns = (double)done / 1000.0;
    res->copies_delivered = (uint64_t)net.meter.msg_dests_done;
    double sum = 0, mn = 1e300;
    for (uint64_t d = mask; d; d &= d - 1) {
        const tep *p = net.ep[__builtin_ctzll(d)];
        double t_ns = p->msg_done ? (double)p->msg_done_ps / 1000.0 : (double)sim_now(k) / 1000.0;
        double gbps = t_ns > 0 ? (double)p->msg_bytes_recv / t_ns : 0;
        sum += gbps;
        if (gbps < mn) mn = gbps;
    }
    res->per_dest_GBps_min = mn;
    res->per_dest_GBps_avg = sum / cfg->fanout;
    sim_link *up = net.up[cfg->src];
    res->src_link_util = done ? (double)up->busy_ps / (double)done : 0;
    res->src_bytes_on_wire = up->bytes_sent;
    res->sim_time_ps = sim_now(k);
    res->sim_events = sim_event_count(k);
    net_drain_and_check(&net, k, &res->cons);
    lockstep_result(net.sw, &res->mismatches, &res->cycles_compared, res->first_mismatch, sizeof res->first_mismatch);
    net_free(&net);
    return 0;
}

int nvs_net_from_params(const sim_params *p, nvs_net_cfg *net, uint64_t seed, char *why, size_t why_n)
{
    memset(net, 0, sizeof *net);
    xbar_core_cfg *c = &net->sw.core;
    xbar_core_cfg_default(c, (int)sim_param_int(p, "ports"));
    c->queue = (xbar_queue_kind)xbar_queue_parse(sim_param_str(p, "queue"));
    c->alloc = (xbar_alloc_kind)xbar_alloc_parse(sim_param_str(p, "alloc"));
    c->iters = (int)sim_param_int(p, "iters");
    c->depth = (int)sim_param_int(p, "depth");
    c->shared = sim_param_bool(p, "shared");
    c->latency = (int)sim_param_int(p, "pipeline_cycles");
    c->fanout_read = sim_param_bool(p, "fanout_read");
    c->seed = seed;
    net->sw.model = (nvs_model)sim_param_enum(p, "model");
    net->sw.c_core = (nvs_c_core)sim_param_enum(p, "core");
    if (net->sw.model == NVS_MODEL_RTL && sim_param_given(p, "core"))
        return snprintf(why, why_n, "core=%s: model=rtl runs no C core (core applies to model=tl|both)", sim_param_str(p, "core")), -1;
    net->sw.saf = strcmp(sim_param_str(p, "switching"), "saf") == 0;
    net->sw.credit_batch = (int)sim_param_int(p, "credit_batch");
    net->flit_bytes = (int)sim_param_int(p, "flit_bytes");
    net->link_latency_ns = sim_param_double(p, "link_latency_ns");
    net->port_GBps = sim_param_double(p, "port_GBps");
    const char *preset = sim_param_str(p, "preset");
    /* parameters this configuration makes moot: refused if given (sim/params.h) */
    if (c->alloc == XBAR_ALLOC_WAVEFRONT)
        sim_param_not_applicable(p, "iters", "alloc=wavefront is maximal in one pass (no iterations; alloc=islip|pim|rr take iters)");
    if (c->queue == XBAR_QUEUE_FIFO)
        sim_param_not_applicable(p, "shared", "queue=fifo: a FIFO input already is one buffer (shared applies to queue=voq)");
    if (c->depth == 0)
        sim_param_not_applicable(p, "credit_batch", "depth=0: unbounded buffers, no credits to return");
    if (strcmp(preset, "none") != 0) {
        const nvlink_preset *np = nvlink_preset_find(preset);
        sim_param_not_applicable(p, "port_GBps", "preset=%s sets port_GBps=%g (give one of them)", preset, np->link_GBps);
        net->port_GBps = np->link_GBps;
        if (np->switch_ports && c->ports > np->switch_ports && sim_param_given(p, "ports"))
            return snprintf(why, why_n, "ports=%d: preset=%s switch has %d ports", c->ports, preset, np->switch_ports), -1;
    }
    if (c->shared && c->depth && c->depth < c->ports)
        return snprintf(why, why_n, "shared=1 depth=%d: a shared input buffer needs at least ports=%d flits", c->depth, c->ports), -1;
    if (net->sw.credit_batch > 1 && c->depth && net->sw.credit_batch > c->depth)
        return snprintf(why, why_n, "credit_batch=%d exceeds depth=%d", net->sw.credit_batch, c->depth), -1;
    return xbar_core_cfg_check(c, why, why_n);
}
