/* DMA helpers a component on a PCIe port shares with pcie_sys: how a
 * completer answers a read request. */
#include "models/pcie/pcie_port.h"

void pcie_port_submit_completions(pcie_port *p, const pcie_tlp *mrd, unsigned mps, unsigned rcb, bool split_rcb, bool ecrc)
{
    uint64_t addr = mrd->addr;
    uint32_t remaining = mrd->len;
    while (remaining) {
        /* every completion but the last ends on an RCB boundary and is at most MPS
         * (or exactly one RCB piece with split_rcb) */
        uint32_t max_len = split_rcb ? rcb : mps;
        uint32_t len = max_len - (uint32_t)(addr & (rcb - 1));
        if (len > remaining) len = remaining;
        pcie_tlp c = { 0 };
        c.type = PCIE_TLP_CPLD;
        c.addr = addr;
        c.len = len;
        c.byte_count = remaining;
        c.tag = mrd->tag;
        c.req_id = mrd->req_id;
        c.hdr_bytes = 12;
        c.ecrc = ecrc;
        c.xfer = mrd->xfer;
        c.xfer_start_ps = mrd->xfer_start_ps;
        c.last = len == remaining;
        pcie_port_submit(p, &c);
        addr += len;
        remaining -= len;
    }
}
