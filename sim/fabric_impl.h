/* The fabric's own state, shared by the files of sim/ that build, run and
 * report it (fabric.c, fabric_gather.c); no model includes it. */
#ifndef SIM_FABRIC_IMPL_H
#define SIM_FABRIC_IMPL_H

#include "sim/fabric.h"
#include "sim/fabric_cut.h"
#include "sim/pdes.h"

struct sim_fabric {
    sim_kernel *k;
    const topo *t;
    sim_fabric_cfg cfg;
    topo_routes *routes;
    sim_groups *groups;
    const sim_fabric_kind **kind;   /* per node */
    void **comp;                    /* per node */
    sim_fabric_ingress *ingress;    /* per (node, port): t->nodes[n].first port index below */
    uint32_t *port_base;            /* node -> index of its port 0 in ingress / ports */
    sim_fabric_port *ports;
    sim_link **links;               /* 2 per topo link: a->b, b->a (the sending half when cut) */
    sim_link **rx_links;            /* the receiving half in the receiver's part, or NULL (not cut) */
    sim_pdes *pdes;                 /* partitioned: the parts' windows; else NULL */
    bool ranked;                    /* cfg.transport: only this rank's nodes run here */
    sim_kernel *replica_k;          /* ranked: the other ranks' nodes, never run */
    sim_fabric_cut_rx **cut_rx;     /* ranked: per direction received from another rank */
    char (*link_names)[2 * (TOPO_NAME_MAX + 8) + 4];
    char (*port_names)[TOPO_NAME_MAX + 8];
    /* ranked, rank 0, after sim_fabric_gather: other ranks' link directions (have[i]: gathered) */
    sim_fabric_dir_stats *gathered;
    bool *have;
    double run_wall_s;              /* wall time in sim_fabric_run */
};

#endif
