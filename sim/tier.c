/* Tiers of the stack by preset family (sim/tier.h). */
#include <stdbool.h>
#include <string.h>

#include "sim/tier.h"

static bool starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

enum sim_tier sim_tier_of_preset(const topo_preset *p)
{
    if (!p || !p->name) return SIM_TIER_OTHER;
    const char *n = p->name;
    if (starts(n, "nvlink") || starts(n, "infinity-fabric") || starts(n, "hccs") || starts(n, "ici")) return SIM_TIER_SCALE_UP;
    if (starts(n, "pcie") || starts(n, "cxl")) return SIM_TIER_PCIE;
    if (starts(n, "ib-") || starts(n, "roce-") || starts(n, "eth-")) return SIM_TIER_NETWORK;
    return SIM_TIER_OTHER;
}

const char *sim_tier_name(enum sim_tier t)
{
    static const char *const names[SIM_TIERS] = { "nvlink", "pcie", "network", "other" };
    return t < SIM_TIERS ? names[t] : "?";
}
