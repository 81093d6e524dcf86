/* network_register_kinds: the topology kinds "ib_hca", "ib_switch", "ib_rnic", "roce_nic", "eth_switch" and "gpu_nic" and
 * their fabric components (explicit: static libraries drop unreferenced constructors). */
#include "models/network/network.h"

void ib_hca_register(void);
void ib_switch_register(void);
void ib_rnic_register(void);
void roce_nic_register(void);
void eth_switch_register(void);
void gpu_nic_register(void);

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
        static const topo_kind nic = { .name = "roce_nic", .port_prefix = "p", .max_ports = 1, .default_ports = 1,
                                       .forwards = false, .params = "ports",
                                       .help = "RoCE v2 NIC on one Ethernet port: rate-limited flows, DCQCN, honours PFC" };
        static const topo_kind esw = { .name = "eth_switch", .port_prefix = "p", .max_ports = 64, .default_ports = 2,
                                       .forwards = true, .params = "ports",
                                       .help = "Ethernet switch: shared buffer, per-priority queues, PFC, RED/ECN, or tail drop" };
        topo_kind_register(&hca);
        topo_kind_register(&sw);
        topo_kind_register(&rnic);
        topo_kind_register(&nic);
        static const topo_kind gnic = { .name = "gpu_nic", .port_prefix = "p", .max_ports = 2, .default_ports = 2,
                                        .forwards = true, .params = "ports",
                                        .help = "a GPU's InfiniBand NIC: p0 PCIe to its GPU, p1 IB; messages cut into MTU packets (per-VL credits)" };
        topo_kind_register(&esw);
        topo_kind_register(&gnic);
        done = true;
    }
    ib_hca_register();
    ib_switch_register();
    ib_rnic_register();
    roce_nic_register();
    eth_switch_register();
    gpu_nic_register();
}
