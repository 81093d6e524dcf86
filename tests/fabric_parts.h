/* The system of the partitioning tests (tests/check_fabric_parts.c in one
 * process, tests/mpi_fabric_parts.c over MPI ranks): fabric_traffic's
 * fattree:4 under uniform traffic with credits, node n in part (n * 7) %
 * parts. Not a test itself. */
#ifndef FABRIC_PARTS_H
#define FABRIC_PARTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/endpoint.h"
#include "models/fabric/fabric.h"
#include "sim/fabric.h"
#include "sim/pdes.h"
#include "sim/sim.h"

/* Not ck_assert: the MPI program runs this outside any Check test. */
#define FP_REQUIRE(cond, ...) do { if (!(cond)) sim_fatal(__VA_ARGS__); } while (0)

enum { MAX_PARTS = 4, MAX_EP = 16, MAX_DIRS = 256 };

typedef struct run_result {
    fabric_endpoint_stats ep[MAX_EP];
    uint64_t received_from[MAX_EP][MAX_EP];
    uint64_t link_msgs[MAX_DIRS], link_bytes[MAX_DIRS], link_busy_ps[MAX_DIRS];
    uint64_t events, windows;
    sim_time_ps end_ps;
    uint32_t n_ep, n_dirs;
} run_result;

/* node n in part (n * 7) % parts: neighbours land in different parts, so
 * switch-switch and endpoint-switch links are cut alike */
static void run(const char *spec, unsigned parts, const sim_pdes_transport *tr, run_result *r)
{
    char err[512];
    fabric_register_kinds();
    topo *t = topo_from_string(spec, "eth-400g", err, sizeof err);
    FP_REQUIRE(t != NULL, "%s", err);
    sim_pattern pat = { 0 };
    FP_REQUIRE(sim_pattern_init(&pat, SIM_PAT_UNIFORM, t->n_endpoints, 7, err, sizeof err) == 0, "%s", err);
    fabric_endpoint_cfg ec = { .pattern = &pat, .load = 0.6, .pkt_bytes = 512, .warmup_ps = SIM_US(1), .end_ps = SIM_US(6),
                               .stop_ps = SIM_US(6) };
    sim_kernel *k[MAX_PARTS];
    uint32_t *node_part = calloc(t->n_nodes, sizeof *node_part);
    const unsigned nk = tr ? 1 : parts;
    for (unsigned p = 0; p < nk; p++) k[p] = sim_kernel_new();
    for (uint32_t n = 0; n < t->n_nodes; n++) node_part[n] = (n * 7) % parts;
    sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .seed = 3, .kind_cfg = { { "endpoint", &ec } },
                          .parts = tr ? 0 : parts, .part_kernels = k, .node_part = node_part, .transport = tr };
    sim_fabric *f = sim_fabric_new(k[0], t, &fc, err, sizeof err);
    FP_REQUIRE(f != NULL, "%s", err);
    sim_fabric_run(f, SIM_US(1));
    sim_fabric_reset_stats(f);
    sim_fabric_run(f, SIM_US(6));
    r->end_ps = sim_fabric_run(f, SIM_TIME_MAX);
    r->events = sim_fabric_events(f);
    r->windows = sim_fabric_pdes(f) ? sim_pdes_windows(sim_fabric_pdes(f)) : 1;
    char why[512];
    FP_REQUIRE(sim_fabric_check(f, true, why, sizeof why) == 0, "%u parts: %s", parts, why);
    r->n_ep = t->n_endpoints;
    FP_REQUIRE(r->n_ep <= MAX_EP, "%u endpoints", r->n_ep);
    for (uint32_t e = 0; e < r->n_ep; e++) {
        if (!sim_fabric_node_local(f, t->endpoint_node[e])) continue;   /* another rank's: zero here */
        fabric_endpoint *ep = sim_fabric_component(f, t->endpoint_node[e]);
        fabric_endpoint_get_stats(ep, &r->ep[e]);
        memcpy(r->received_from[e], fabric_endpoint_received_from(ep), r->n_ep * sizeof(uint64_t));
    }
    r->n_dirs = 2 * t->n_links;
    FP_REQUIRE(r->n_dirs <= MAX_DIRS, "%u link directions", r->n_dirs);
    for (uint32_t i = 0; i < r->n_dirs; i++) {
        const sim_link *l = sim_fabric_link(f, i / 2, i % 2);
        if (!l) continue;   /* another rank sends on it */
        r->link_msgs[i] = l->msgs_sent;
        r->link_bytes[i] = l->bytes_sent;
        r->link_busy_ps[i] = l->busy_ps;
    }
    sim_fabric_free(f);
    for (unsigned p = 0; p < nk; p++) sim_kernel_free(k[p]);
    free(node_part);
    sim_pattern_free(&pat);
    topo_free(t);
}

#endif
