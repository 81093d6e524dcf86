/* pfc_deadlock: the PFC deadlock watchdog (models/network, docs/models/network.md).
 * A ring of `switches` eth_switches, one host on each; host i sends without
 * end to the host `hops` switches on (the short way round, so every route goes
 * the same way). With hops=1 no route uses two ring links and there is no
 * cycle of buffer dependencies; with hops >= 2 each ring link carries `hops`
 * flows at line rate, every ring ingress passes XOFF, and the pauses can close
 * the cycle: nothing moves while packets are held. The watchdog (every
 * watchdog_us: packets forwarded by the switches) reports a run without
 * progress for 3 periods with packets held as a failed check naming the cycle
 * of paused ports; the run stops there (never a hang). Metrics: deadlocked,
 * deadlock_us (when found), cycle, goodput_GBps (every receiver, until then). */
#include "tb/roce_common.h"

#include <cjson/cJSON.h>

#define MAX_SWITCHES 16

static const sim_param_def pfc_deadlock_params[] = {
    SIM_PARAM_ENUM("link", "roce-100g", ROCE_LINKS, "link preset of every link"),
    SIM_PARAM_INT("mtu", "1024", "B", 256, 4096, "payload per packet"),
    SIM_PARAM_INT("switches", "5", "", 3, MAX_SWITCHES, "switches in the ring"),
    SIM_PARAM_INT("hops", "1", "", 1, MAX_SWITCHES / 2, "ring hops of every flow (>= 2 closes a buffer dependency cycle)"),
    SIM_PARAM_DOUBLE("duration_us", "2000", "us", 10, 1e6, "simulated time at most"),
    SIM_PARAM_DOUBLE("watchdog_us", "20", "us", 1, 1e5, "watchdog period"),
    SIM_PARAM_INT("buffer_bytes", "1048576", "B", 16384, 1000000000, "shared buffer of each switch"),
    SIM_PARAM_END,
};

static void pfc_deadlock_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    const char *link = sim_param_str(p, "link");
    unsigned mtu = (unsigned)sim_param_int(p, "mtu"), ns = (unsigned)sim_param_int(p, "switches"), hops = (unsigned)sim_param_int(p, "hops");
    double duration_us = sim_param_double(p, "duration_us"), watchdog_us = sim_param_double(p, "watchdog_us");
    eth_switch_cfg sc;
    eth_switch_cfg_default(&sc);
    sc.buffer_bytes = (uint64_t)sim_param_int(p, "buffer_bytes");
    sc.ecn = false;
    if (2 * hops >= ns)
        sim_input_error("pfc_deadlock: hops=%u with switches=%u; allowed 1..%u (the short way round must be unique)", hops, ns, (ns - 1) / 2);
    sim_test_configured(c);

    network_register_kinds();
    char err[512], a[32], b[32];
    topo *t = topo_new(link, err, sizeof err);
    int ok = t != NULL;
    for (unsigned i = 0; ok && i < ns; i++) {
        snprintf(a, sizeof a, "s%u", i);
        ok = topo_add_node(t, a, "eth_switch", (const char *const[]){ "ports=3", NULL }, err, sizeof err) >= 0;
    }
    for (unsigned i = 0; ok && i < ns; i++) {   /* p0: to the next switch, p1: from the previous, p2: the host */
        snprintf(a, sizeof a, "s%u.p0", i);
        snprintf(b, sizeof b, "s%u.p1", (i + 1) % ns);
        ok = topo_add_link(t, a, b, link, -1, -1, err, sizeof err) >= 0;
    }
    for (unsigned i = 0; ok && i < ns; i++) {
        snprintf(a, sizeof a, "h%u", i);
        snprintf(b, sizeof b, "s%u.p2", i);
        ok = topo_add_node(t, a, "roce_nic", NULL, err, sizeof err) >= 0 && topo_add_link(t, a, b, link, -1, -1, err, sizeof err) >= 0;
    }
    if (!ok || topo_finish(t, err, sizeof err)) sim_fatal("pfc_deadlock: topology: %s", err);
    roce_flow flows[MAX_SWITCHES];
    for (unsigned i = 0; i < ns; i++)
        flows[i] = (roce_flow){ .src = (uint32_t)t->nodes[ns + i].endpoint, .dst = (uint32_t)t->nodes[ns + (i + hops) % ns].endpoint,
                                .prio = 3, .payload_bytes = mtu, .bytes = UINT64_MAX };
    roce_nic_cfg nc = { .flows = flows, .n_flows = ns, .cnp_prio = 6, .queue_pkts = 2 };
    dcqcn_cfg_default(&nc.dc);
    /* the routes may close a cycle: that is the point, and the watchdog ends such a run */
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_SINGLE, .trace = c->trace, .seed = c->seed, .allow_route_cycles = true,
                          .kind_cfg = { { "roce_nic", &nc }, { "eth_switch", &sc } } };
    sim_fabric *f = sim_fabric_new(c->k, t, &fc, err, sizeof err);
    if (!f) sim_input_error("pfc_deadlock: %s", err);
    sim_time_ps period = (sim_time_ps)(watchdog_us * 1e6 + 0.5), end = (sim_time_ps)(duration_us * 1e6 + 0.5);
    uint64_t last = UINT64_MAX, held = 0;
    unsigned stalled = 0;
    int len = 0;
    char cycle[1024] = "";
    while (sim_now(c->k) < end && !len) {
        sim_time_ps next = sim_now(c->k) + period;
        sim_fabric_run(f, next < end ? next : end);
        uint64_t fwd = eth_fabric_progress(f, &held);
        stalled = fwd == last && held ? stalled + 1 : 0;
        last = fwd;
        if (stalled >= 3) {
            len = eth_pfc_cycle(f, cycle, sizeof cycle);
            if (!len) snprintf(cycle, sizeof cycle, "no progress with %llu packets held, but no cycle of paused ports",
                               (unsigned long long)held);
            if (!len) len = -1;
        }
    }
    uint64_t rx = 0, drops = 0;
    for (unsigned i = 0; i < ns; i++) {
        rx += roce_nic_stats_get(sim_fabric_component(f, ns + i))->received_payload_bytes;
        drops += eth_switch_stats_get(sim_fabric_component(f, i)).dropped;
    }
    sim_report *rep = c->report;
    double t_us = (double)sim_now(c->k) / 1e6;
    sim_report_metric(rep, "deadlocked", len != 0);
    sim_report_metric(rep, "deadlock_us", len ? t_us : -1);
    sim_report_metric_json(rep, "cycle", cJSON_CreateString(cycle));
    sim_report_metric(rep, "goodput_GBps", rx / (t_us * 1000.0));
    sim_report_metric(rep, "held_pkts", (double)held);
    char why[400] = "";
    int bad = sim_fabric_check(f, false, why, sizeof why);
    sim_check(rep, "conservation", !bad, "%s", bad ? why : "packets and buffer accounts consistent in every component");
    sim_check(rep, "lossless", drops == 0, "PFC on: %llu dropped", (unsigned long long)drops);
    sim_check(rep, "no_pfc_deadlock", len == 0, "%s", len ? cycle : "progress in every watchdog period (or nothing held)");
    if (len) fprintf(stderr, "pfc_deadlock: PFC deadlock at %.0f us: %s\n", t_us, cycle);
    sim_fabric_free(f);
    topo_free(t);
}

SIM_TEST(pfc_deadlock, "PFC deadlock watchdog: a ring of eth_switches; hops>=2 closes a buffer dependency cycle, named by a failed check",
         pfc_deadlock_params, "", pfc_deadlock_run)
