/* The layer of the stack a link belongs to, from its preset: what bottleneck
 * reports group by (the seeds' tiers: chip-to-chip, inside the server,
 * between servers). */
#ifndef SIM_TIER_H
#define SIM_TIER_H

#include "sim/presets.h"

enum sim_tier {
    SIM_TIER_SCALE_UP = 0,   /* NVLink, Infinity Fabric, HCCS, ICI: GPU to GPU or switch */
    SIM_TIER_PCIE,           /* PCIe and CXL inside a server */
    SIM_TIER_NETWORK,        /* InfiniBand, RoCE, Ethernet between servers */
    SIM_TIER_OTHER,          /* no preset, or one of none of these */
    SIM_TIERS
};
enum sim_tier sim_tier_of_preset(const topo_preset *p);
/* "nvlink", "pcie", "network", "other" */
const char *sim_tier_name(enum sim_tier t);

#endif
