/* server_register_kinds: the topology kinds "host", "server_host", "pcie_switch", "gpu" and "nic" and their
 * fabric components (explicit: static libraries drop unreferenced constructors). */
#include "models/server/server.h"

void server_host_register(void);
void server_gpu_register(void);
void server_switch_register(void);
void server_nic_register(void);

void server_register_kinds(void)
{
    static bool done;   /* a topo kind registered twice is fatal */
    if (!done) {
        static const topo_kind host = { .name = "host", .port_prefix = "rp", .max_ports = 64, .default_ports = 1,
                                        .forwards = false, .params = "ports",
                                        .help = "root complex: a root port per port, DRAM, completer for MRd, sink for MWr" };
        static const topo_kind gpu = { .name = "gpu", .port_prefix = "pcie", .max_ports = 1, .default_ports = 1,
                                       .forwards = false, .params = "ports",
                                       .help = "GPU endpoint: one PCIe port, HBM, a copy engine (MRd h2d, MWr d2h)" };
        /* forwards: the tree between the GPUs goes through it (peer-to-peer between root ports is not modelled) */
        static const topo_kind shost = { .name = "server_host", .port_prefix = "rp", .max_ports = 64, .default_ports = 1,
                                               .forwards = true, .params = "ports",
                                               .help = "a server's root complex (both sockets' root ports), DRAM, completer for MRd, sink for MWr" };
        static const topo_kind sw = { .name = "pcie_switch", .port_prefix = "p", .max_ports = 64, .default_ports = 2,
                                      .forwards = true, .params = "ports",
                                      .help = "PCIe switch: upstream port towards the host, downstream ports; routes by address and ID" };
        topo_kind_register(&host);
        topo_kind_register(&gpu);
        topo_kind_register(&shost);
        static const topo_kind nic = { .name = "nic", .port_prefix = "pcie", .max_ports = 1, .default_ports = 1,
                                       .forwards = false, .params = "ports",
                                       .help = "NIC, PCIe side: one PCIe port, a DMA engine reading a buffer (MRd) and sending it at its line rate" };
        topo_kind_register(&sw);
        topo_kind_register(&nic);
        done = true;
    }
    server_host_register();
    server_gpu_register();
    server_switch_register();
    server_nic_register();
}
