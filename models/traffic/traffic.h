/* Traffic for switch experiments: destination patterns, Bernoulli injection,
 * message sources (B bytes to a set of destinations, unicast-replicated or
 * multicast), and NVLink generation presets. Pure functions over a seeded
 * PRNG: every run reproduces from its seed. */
#ifndef TRAFFIC_H
#define TRAFFIC_H

#include "sim/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRAFFIC_MAX_PORTS 64

typedef enum traffic_pattern {
    TRAFFIC_UNIFORM = 0,   /* every port, the own port included (as in Karol 1987, McKeown 1999) */
    TRAFFIC_HOTSPOT,       /* a fraction to one hot port, the rest uniform */
    TRAFFIC_TRANSPOSE,     /* N = k*k: port (r,c) -> (c,r) */
    TRAFFIC_PERMUTATION,   /* a random permutation drawn once from the seed */
    TRAFFIC_ALLTOALL,      /* each source walks every other port in turn: i+1, i+2, ... */
} traffic_pattern;

#define TRAFFIC_PATTERN_CHOICES "uniform|hotspot|transpose|permutation|alltoall"
int traffic_pattern_parse(const char *name);          /* -1 if unknown */
const char *traffic_pattern_name(traffic_pattern p);

typedef struct traffic_dest {
    traffic_pattern pattern;
    int n;
    double hotspot_frac;
    int hotspot_port;
    uint8_t perm[TRAFFIC_MAX_PORTS];  /* permutation / transpose map */
    uint8_t step[TRAFFIC_MAX_PORTS];  /* all-to-all position per source */
} traffic_dest;

/* 0, or -1 with a message (e.g. transpose with N not a square). */
int traffic_dest_init(traffic_dest *d, traffic_pattern p, int n, double hotspot_frac, int hotspot_port, uint64_t seed,
                      char *why, size_t why_n);
int traffic_dest_pick(traffic_dest *d, int src, sim_rng *rng);

/* A message of `bytes` from one source to a destination set, cut into packets
 * of at most max_payload bytes. Multicast: each packet goes to the whole set
 * (one packet, a destination mask). Unicast replication: one packet per
 * destination, the destinations taken round-robin packet by packet, so every
 * copy advances together. */
typedef struct traffic_message {
    uint64_t dest_mask;
    uint64_t bytes;
    uint32_t max_payload;
    bool multicast;
    uint64_t offset;        /* bytes of the current chunk already cut */
    uint64_t remaining_mask;/* unicast: destinations still to get the current chunk */
    uint64_t packets_cut;
} traffic_message;

void traffic_message_init(traffic_message *m, uint64_t dest_mask, uint64_t bytes, uint32_t max_payload, bool multicast);
/* Next packet: payload bytes and destination mask; false when the message is cut completely. */
bool traffic_message_next(traffic_message *m, uint32_t *payload, uint64_t *mask);
/* Packets the whole message takes (per destination set, counting unicast copies). */
uint64_t traffic_message_packets(uint64_t bytes, uint32_t max_payload, int destinations, bool multicast);

/* NVLink generations (shared/reference/crossbar.md section 5): per link and
 * direction 25 GB/s for NVLink 2..4 (50 for NVLink 5 / NVSwitch 4), links per
 * GPU and ports per switch chip. */
typedef struct nvlink_preset {
    const char *name;         /* "nvlink2" ... */
    const char *system;
    double link_GBps;         /* per link, per direction */
    int links_per_gpu;
    int switch_ports;         /* NVSwitch ports of that generation (0 = unknown) */
    double gpu_GBps;          /* per GPU, per direction = links * link_GBps */
} nvlink_preset;

const nvlink_preset *nvlink_preset_find(const char *name);  /* NULL if unknown */
const nvlink_preset *nvlink_presets(size_t *count);
#define NVLINK_PRESET_CHOICES "nvlink2|nvlink3|nvlink4|nvlink5"

#endif
