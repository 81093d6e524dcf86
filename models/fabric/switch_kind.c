/* Kind "switch" for the fabric builder: the core of switch.c behind the
 * sim_fabric_kind callbacks (kept apart so the core links without the builder). */
#include "models/fabric/switch.h"

static void *kind_build(sim_fabric *f, uint32_t node, char *why, size_t why_n)
{
    return fabric_switch_new(sim_fabric_node_kernel(f, node), sim_fabric_topo(f), node, sim_fabric_routes(f),
                             sim_fabric_groups(f), sim_fabric_kind_cfg(f, "switch"), why, why_n);
}
static void kind_ingress(void *c, unsigned port, sim_fabric_ingress *in) { fabric_switch_ingress(c, port, in); }
static void kind_connect(void *c, const sim_fabric_port *p) { fabric_switch_connect(c, p); }
static int kind_check(const void *c, bool drained, char *why, size_t why_n)
{
    return fabric_switch_check(c, drained, why, why_n);
}
static void kind_reset(void *c) { fabric_switch_reset_stats(c); }
static void kind_held(const void *c, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx) { fabric_switch_for_each_held(c, fn, ctx); }
static void kind_free(void *c) { fabric_switch_free(c); }

void fabric_switch_register(void)
{
    static const sim_fabric_kind kind = {
        .name = "switch", .build = kind_build, .ingress = kind_ingress, .connect = kind_connect,
        .start = NULL, .check = kind_check, .reset_stats = kind_reset, .held = kind_held, .free = kind_free,
        .partitionable = true,
    };
    sim_fabric_kind_register(&kind);
}
