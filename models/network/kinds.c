/* network_register_kinds: the topology kinds "ib_hca", "ib_switch" and "ib_rnic" and
 * their fabric components (explicit: static libraries drop unreferenced constructors). */
#include "models/network/network.h"

void ib_hca_register(void);
void ib_switch_register(void);
void ib_rnic_register(void);

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
        static const topo_kind rnic = { .name = "ib_rnic", .port_prefix = "p", .max_ports = 1, .default_ports = 1,
                                        .forwards = false, .params = "ports",
                                        .help = "RDMA NIC on one IB port: RC queue pairs (WRITE/READ/SEND, ACK/NAK, go-back-N, RTO)" };
        topo_kind_register(&hca);
        topo_kind_register(&sw);
        topo_kind_register(&rnic);
        done = true;
    }
    ib_hca_register();
    ib_switch_register();
    ib_rnic_register();
}
