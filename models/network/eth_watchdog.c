/* The PFC deadlock watchdog (roce.h): progress = packets the eth_switches
 * forwarded; a deadlock = no progress while packets are held, and a cycle of
 * switches each waiting on the next through a paused port with packets queued. */
#include "models/network/roce.h"

#include <stdio.h>
#include <string.h>

static bool is_switch(const topo *t, uint32_t n) { return !strcmp(t->nodes[n].kind->name, "eth_switch"); }

uint64_t eth_fabric_progress(const sim_fabric *f, uint64_t *held_pkts)
{
    const topo *t = sim_fabric_topo(f);
    uint64_t fwd = 0, held = 0;
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        if (!is_switch(t, n)) continue;
        eth_switch_stats st = eth_switch_stats_get(sim_fabric_component(f, n));
        fwd += st.forwarded;
        held += st.received - st.forwarded - st.dropped;
    }
    if (held_pkts) *held_pkts = held;
    return fwd;
}

/* The first port of switch n paused towards another switch with packets queued; -1 none. */
static int waiting_port(const sim_fabric *f, const topo *t, uint32_t n, uint32_t *peer)
{
    const eth_switch *s = sim_fabric_component(f, n);
    for (unsigned q = 0; q < t->nodes[n].nports; q++) {
        const eth_port *p = eth_switch_port(s, q);
        if (!p) continue;
        unsigned pp;
        int m = topo_peer(t, n, q, &pp);
        if (m < 0 || !is_switch(t, (uint32_t)m)) continue;
        for (unsigned prio = 0; prio < ETH_PRIOS; prio++)
            if (eth_port_queued(p, prio) && eth_port_paused(p, prio)) {
                *peer = (uint32_t)m;
                return (int)q;
            }
    }
    return -1;
}

int eth_pfc_cycle(const sim_fabric *f, char *cycle, size_t n)
{
    const topo *t = sim_fabric_topo(f);
    if (n) cycle[0] = 0;
    /* every switch waits on at most the one switch its first paused port leads
     * to: follow those edges from each switch; a revisit within one walk is a cycle */
    for (uint32_t start = 0; start < t->n_nodes; start++) {
        if (!is_switch(t, start)) continue;
        uint32_t at = start, steps = 0, peer;
        while (steps <= t->n_nodes && waiting_port(f, t, at, &peer) >= 0) {
            at = peer;
            steps++;
            if (at == start) {   /* a cycle through start: name its paused ports */
                size_t off = 0;
                uint32_t x = start;
                int len = 0;
                do {
                    int q = waiting_port(f, t, x, &peer);
                    int w = snprintf(cycle + off, off < n ? n - off : 0, "%s%s.p%d", len ? " -> " : "", t->nodes[x].name, q);
                    if (w > 0) off += (size_t)w;
                    len++;
                    x = peer;
                } while (x != start);
                if (off < n) snprintf(cycle + off, n - off, " -> %s (paused, packets queued)", t->nodes[start].name);
                return len;
            }
        }
    }
    return 0;
}
