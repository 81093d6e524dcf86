/* Link presets: every link the source documents name, each computed from
 * lane rate x lanes x encoding efficiency, with a one-way latency and its own
 * per-packet overhead bytes. The table holds those inputs, never results;
 * sources are in docs/topology.md and beside each row in presets.c. */
#ifndef SIM_PRESETS_H
#define SIM_PRESETS_H

#include <stdio.h>

typedef struct topo_preset {
    const char *name;          /* "pcie-gen5-x16" */
    double lane_Gbps;          /* signalling rate of one lane, Gb/s (= GT/s for NRZ) */
    unsigned lanes;
    unsigned enc_num, enc_den; /* encoding (+ FEC) efficiency: 128/130, 16/17, ... */
    double latency_ns;         /* one way, PHY to PHY, no switch or host stack */
    unsigned overhead_bytes;   /* per packet on the wire beyond its payload */
    const char *overhead_what; /* what those bytes are */
    const char *source;        /* where the figures come from */
} topo_preset;

/* The network a link preset belongs to, from its name: ib-* InfiniBand,
 * roce-* and eth-* Ethernet; the generators map it to node kinds
 * (docs/topology.md, "Node kinds from the link preset"). */
enum topo_preset_family { TOPO_FAMILY_OTHER, TOPO_FAMILY_IB, TOPO_FAMILY_ETH };
enum topo_preset_family topo_preset_family(const topo_preset *p);

/* lane_Gbps x lanes x enc_num / enc_den / 8: per direction, GB/s. */
double topo_preset_GBps(const topo_preset *p);
const topo_preset *topo_preset_find(const char *name);
unsigned topo_preset_count(void);
const topo_preset *topo_preset_at(unsigned i);
/* Writes "a, b, c" (every name) into buf, for error messages. */
void topo_preset_names(char *buf, size_t n);
/* The table `simrun list-presets` prints. */
void topo_presets_print(FILE *out);

#endif
