/* Shared by the fabric tests (fabric_traffic, fabric_bisection): building a
 * fabric from the parameters, running with a warm-up, a window and a drain,
 * and summing the endpoints' statistics. Not a test. */
#ifndef TB_FABRIC_COMMON_H
#define TB_FABRIC_COMMON_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cJSON.h"
#include "models/fabric/endpoint.h"
#include "models/fabric/fabric.h"
#include "models/fabric/switch.h"
#include "sim/fabric.h"
#include "sim/sim.h"

typedef struct fab_totals {
    uint64_t sent, received, dropped, duplicated, out_of_order, win_pkts, win_hops, win_wire, win_payload, backlog;
    double throughput;          /* mean over endpoints of accepted wire rate / link rate */
} fab_totals;

static inline fabric_endpoint *fab_ep(const sim_fabric *f, uint32_t e)
{
    return sim_fabric_component(f, sim_fabric_topo(f)->endpoint_node[e]);
}

/* Per flow: dropped = sent - received, duplicated = received - sent. */
static inline void fab_sum(const sim_fabric *f, double window_s, fab_totals *s)
{
    const topo *t = sim_fabric_topo(f);
    memset(s, 0, sizeof *s);
    uint32_t n = t->n_endpoints;
    for (uint32_t e = 0; e < n; e++) {
        fabric_endpoint_stats st;
        fabric_endpoint *ep = fab_ep(f, e);
        fabric_endpoint_get_stats(ep, &st);
        s->sent += st.sent_pkts;
        s->received += st.received_pkts;
        s->out_of_order += st.out_of_order;
        s->win_pkts += st.win_pkts;
        s->win_hops += st.win_hops;
        s->win_wire += st.win_wire_bytes;
        s->win_payload += st.win_payload_bytes;
        s->backlog += fabric_endpoint_backlog(ep);
        s->throughput += window_s > 0 ? (double)st.win_wire_bytes / (window_s * fabric_endpoint_link_GBps(ep) * 1e9) / n : 0;
        const uint64_t *rf = fabric_endpoint_received_from(ep);
        for (uint32_t src = 0; src < n; src++) {
            uint64_t sent = fabric_endpoint_sent_to(fab_ep(f, src))[e];
            if (sent > rf[src]) s->dropped += sent - rf[src];
            else s->duplicated += rf[src] - sent;
        }
    }
}

/* duration_us and warmup_us as ps; a warm-up that does not end before the run is refused (exit 2). */
static inline void fab_window(const sim_test_ctx *c, sim_time_ps *warmup_ps, sim_time_ps *end_ps)
{
    const sim_params *p = c->params;
    *end_ps = (sim_time_ps)llround(sim_param_double(p, "duration_us") * 1e6);
    *warmup_ps = (sim_time_ps)llround(sim_param_double(p, "warmup_us") * 1e6);
    if (*warmup_ps >= *end_ps)
        sim_input_error("%s: warmup_us=%g must be below duration_us=%g", c->test_name, sim_param_double(p, "warmup_us"),
                        sim_param_double(p, "duration_us"));
}

/* Runs to end_ps with a stats reset at warmup_ps and progress lines (over
 * ranks: every rank stands at end_ps afterwards). */
static inline void fab_run(sim_test_ctx *c, sim_fabric *f, sim_time_ps warmup_ps, sim_time_ps end_ps)
{
    sim_fabric_run(f, warmup_ps);
    sim_fabric_reset_stats(f);
    const unsigned steps = 50;
    for (unsigned i = 1; i <= steps; i++) {
        sim_time_ps t = sim_fabric_run(f, warmup_ps + (end_ps - warmup_ps) * i / steps);
        sim_progress(c, (double)i / steps, "%.1f of %.1f us", (double)t / 1e6, (double)end_ps / 1e6);
    }
}

/* Runs until nothing is left; the time of the last activity (of every rank). */
static inline sim_time_ps fab_drain(sim_fabric *f) { return sim_fabric_run(f, SIM_TIME_MAX); }

/* reports/<name>.svg below the output directory; a missing Graphviz is reported, not fatal. */
static inline void fab_svg(sim_test_ctx *c, const sim_fabric *f, const char *title)
{
    char path[1024], why[512];
    snprintf(path, sizeof path, "%s/reports/%s.svg", c->out_dir, c->test_name);
    if (sim_mkdir_parents(path) != 0) {
        fprintf(stderr, "%s: no picture: cannot make the directory of %s\n", c->test_name, path);
        return;
    }
    if (sim_fabric_write_svg(f, path, title, why, sizeof why) != 0) fprintf(stderr, "%s: no picture: %s\n", c->test_name, why);
}

#endif
