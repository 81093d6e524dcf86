#include "sim/net_presets.h"

#include <string.h>

/* No NIC or switch latency is in shared/reference/system.md, so every figure
 * below is a vendor data-sheet figure quoted from memory ([unverified]: check
 * the data sheet before relying on it) or [assumed]. Radices above 64 are cut
 * to the fabric's limit, and said so. The switch figures are cut-through
 * port-to-port latencies; our switches store and forward and add pipeline_ns
 * after the last byte, so a packet's whole serialisation comes on top. */
#define NIC_IB_SRC "tx 300 / rx 200 ns [assumed: a ConnectX-6/7-class ib_write_lat of about 0.6-0.8 us end to end [unverified], split between the ends]"
#define NIC_ROCE_SRC "tx 300 / rx 200 ns [assumed: as the IB NICs of the same class; RoCE's extra headers are the link preset's]"
#define NIC_ETH_SRC "tx 300 / rx 200 ns [assumed]; the host stack is the transport's host_ns, not the NIC's"

static const net_device_preset devices[] = {
    /* InfiniBand HCAs: ConnectX-6 (HDR 200G), ConnectX-7 (NDR 400G), ConnectX-8 (XDR 800G) */
    { "cx6-hdr", false, "ib-hdr", 1, 0, 300, 200, "ConnectX-6 HDR 200 Gb/s; " NIC_IB_SRC },
    { "cx7-ndr", false, "ib-ndr", 1, 0, 300, 200, "ConnectX-7 NDR 400 Gb/s; " NIC_IB_SRC },
    { "cx8-xdr", false, "ib-xdr", 1, 0, 300, 200, "ConnectX-8 XDR 800 Gb/s [unverified]; " NIC_IB_SRC },
    /* RoCE v2 NICs: ConnectX-5 (100GbE), ConnectX-6 Dx (200GbE), ConnectX-7 (400GbE) */
    { "cx5-roce-100g", false, "roce-100g", 1, 0, 300, 200, "ConnectX-5 100GbE; " NIC_ROCE_SRC },
    { "cx6-roce-200g", false, "roce-200g", 1, 0, 300, 200, "ConnectX-6 Dx 200GbE; " NIC_ROCE_SRC },
    { "cx7-roce-400g", false, "roce-400g", 1, 0, 300, 200, "ConnectX-7 400GbE; " NIC_ROCE_SRC },
    /* plain Ethernet NICs (TCP) */
    { "nic-25g", false, "eth-25g", 1, 0, 300, 200, "a 25GbE NIC; " NIC_ETH_SRC },
    { "nic-100g", false, "eth-100g", 1, 0, 300, 200, "a 100GbE NIC; " NIC_ETH_SRC },
    /* InfiniBand switches */
    { "quantum-hdr", true, "ib-hdr", 40, 130, 0, 0, "Quantum QM8700: 40 x HDR 200 Gb/s, 130 ns port to port [unverified: NVIDIA data sheet]" },
    { "quantum2-ndr", true, "ib-ndr", 64, 150, 0, 0,
      "Quantum-2 QM9700: 64 x NDR 400 Gb/s, 51.2 Tb/s [unverified: NVIDIA data sheet]; 150 ns port to port [unverified: third-party pages quote from 'under 150 ns' to 'about 330 ns' cut-through]" },
    { "quantum3-xdr", true, "ib-xdr", 64, 130, 0, 0,
      "Quantum-X800 Q3400: 144 x XDR 800 Gb/s [unverified], radix cut to the fabric's 64; 150 ns [assumed: as quantum2-ndr]" },
    /* Ethernet switches carrying RoCE */
    { "spectrum-100g", true, "roce-100g", 32, 300, 0, 0, "Spectrum SN2700: 32 x 100GbE, about 300 ns port to port [unverified: Mellanox data sheet]" },
    { "spectrum3-200g", true, "roce-200g", 64, 450, 0, 0,
      "Spectrum-3 SN4700 as 64 x 200GbE (32 x 400G split) [unverified]; 450 ns [assumed: a 12.8 Tb/s shared-buffer chip, several hundred ns]" },
    { "spectrum3-400g", true, "roce-400g", 32, 450, 0, 0, "Spectrum-3 SN4700: 32 x 400GbE [unverified]; 450 ns [assumed, as spectrum3-200g]" },
    { "spectrum4-400g", true, "roce-400g", 64, 450, 0, 0,
      "Spectrum-4 SN5600: 64 x 800GbE, here 64 x 400G (128 ports cut to 64) [unverified]; 450 ns [assumed]" },
    /* plain Ethernet switches */
    { "tor-25g", true, "eth-25g", 48, 300, 0, 0, "a 48 x 25GbE top-of-rack switch [assumed: the common 48+8 port ToR shape; 300 ns as spectrum-100g]" },
    { "tor-100g", true, "eth-100g", 32, 300, 0, 0, "a 32 x 100GbE switch (SN2700-class) [unverified]; 300 ns as spectrum-100g" },
};
#define N_DEVICES (sizeof devices / sizeof devices[0])

const net_device_preset *net_device_preset_find(const char *name)
{
    for (unsigned i = 0; name && i < N_DEVICES; i++)
        if (!strcmp(devices[i].name, name)) return &devices[i];
    return NULL;
}

unsigned net_device_preset_count(void) { return N_DEVICES; }
const net_device_preset *net_device_preset_at(unsigned i) { return i < N_DEVICES ? &devices[i] : NULL; }

void net_device_preset_names(bool is_switch, char *buf, size_t n)
{
    size_t off = 0;
    if (n) buf[0] = 0;
    for (unsigned i = 0; i < N_DEVICES && off + 1 < n; i++) {
        if (devices[i].is_switch != is_switch) continue;
        int w = snprintf(buf + off, n - off, "%s%s", off ? "|" : "", devices[i].name);
        if (w < 0) break;
        off += (size_t)w;
    }
}

void net_device_presets_print(FILE *out)
{
    fprintf(out, "\n%-16s %-6s %-10s %5s %11s %6s %6s  %s\n", "device", "what", "link", "radix", "pipeline_ns", "tx_ns", "rx_ns", "source");
    for (unsigned i = 0; i < N_DEVICES; i++) {
        const net_device_preset *d = &devices[i];
        fprintf(out, "%-16s %-6s %-10s %5u %11.0f %6.0f %6.0f  %s\n", d->name, d->is_switch ? "switch" : "nic", d->link, d->radix,
                d->pipeline_ns, d->tx_ns, d->rx_ns, d->source);
    }
    fprintf(out, "Devices: tests take them as nic= and switch= (their link must be the device's); switches store and forward.\n");
}
