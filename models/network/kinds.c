/* network_register_kinds: the topology kinds "ib_hca" and "ib_switch" and
 * their fabric components (explicit: static libraries drop unreferenced constructors). */
#include "models/network/network.h"

void ib_hca_register(void);
void ib_switch_register(void);

void network_register_kinds(void)
{
    static bool done;   /* a topo kind registered twice is fatal */
    if (!done) {
        static const topo_kind hca = { .name = "ib_hca", .port_prefix = "p", .max_ports = 1, .default_ports = 1,
                                       .forwards = false, .params = "ports",
                                       .help = "InfiniBand HCA-like source/sink on one IB port (per-VL credits, VL arbitration)" };
        static const topo_kind sw = { .name = "ib_switch", .port_prefix = "p", .max_ports = 64, .default_ports = 2,
                                      .forwards = true, .params = "ports",
                                      .help = "InfiniBand switch: per-VL input buffers and credits on every port, no drop path" };
        topo_kind_register(&hca);
        topo_kind_register(&sw);
        done = true;
    }
    ib_hca_register();
    ib_switch_register();
}
