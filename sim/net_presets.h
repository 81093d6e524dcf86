/* Network device presets: NICs (their transmit and receive processing) and
 * switches (their radix and port-to-port pipeline), beside the link presets
 * of sim/presets.h. Each row names the link preset its ports run and the
 * source of every figure (tags as in sim/presets.c; [assumed] where no
 * published figure exists, [unverified] for a vendor figure not in
 * shared/reference). Tests take them as nic= and switch= (docs/models/network.md). */
#ifndef SIM_NET_PRESETS_H
#define SIM_NET_PRESETS_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/presets.h"

typedef struct net_device_preset {
    const char *name;            /* "cx7-ndr", "quantum2-ndr" */
    bool is_switch;
    const char *link;            /* the link preset of its ports ("ib-ndr") */
    unsigned radix;              /* switch: ports at that rate (<= 64, the fabric's limit); NIC: 1 */
    double pipeline_ns;          /* switch: port to port after the last byte in (our switches store and forward) */
    double tx_ns, rx_ns;         /* NIC: post -> first packet ready; last byte in -> the QP has it */
    const char *source;
} net_device_preset;

const net_device_preset *net_device_preset_find(const char *name);
unsigned net_device_preset_count(void);
const net_device_preset *net_device_preset_at(unsigned i);
/* "a|b|c" of the NICs (is_switch false) or switches of a link family, for a parameter's choices. */
void net_device_preset_names(bool is_switch, char *buf, size_t n);
/* The table `simrun list-presets` prints after the links'. */
void net_device_presets_print(FILE *out);

#endif
