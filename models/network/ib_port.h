/* The InfiniBand link layer at one end of an IB link (IBA vol. 1, ch. 7): what an
 * HCA port or a switch port embeds, one per link. docs/models/network.md.
 *
 * Receive side: per data VL a buffer of vl_buffer_bytes, counted in 64-byte
 * blocks; ABR (adjusted blocks received) per VL. Flow-control packets (8 bytes
 * on the wire) carry, per VL, this port's FCTBS (blocks it has sent) and FCCL
 * (its credit limit = ABR + free blocks, at most ABR + 2048, mod 4096; 7.9.4).
 * They are sent periodically (every fc_period_ns per VL) and, with
 * fc_on_free, as soon as freed blocks can be advertised; they are real
 * messages on the same wire as data, ahead of data when both wait.
 * Transmit side: per VL a FIFO; a packet of b blocks may go only if
 * (FCCL - (FCTBS + b)) mod 4096 <= 2048 (7.9.4); VL arbitration by a high-
 * and a low-priority table of (VL, weight in 64-byte units) with a limit of
 * high priority (7.6.9). Nothing is ever dropped: a packet arriving beyond
 * the buffer is a fatal bug, never a drop.
 *
 * The port takes both links of the fabric port (plain links, no link
 * credits): it is the receiver of `in` and the only sender on `out`. Data
 * packets are sim_pkts of the network model; the VL of the current hop is
 * pkt->vc, the SL pkt->tc. FC packets come from the port's own pool and are
 * consumed by the peer port. */
#ifndef MODELS_NETWORK_IB_PORT_H
#define MODELS_NETWORK_IB_PORT_H

#include "sim/fabric.h"

#include <stdbool.h>
#include <stdint.h>

#define IB_MAX_VLS 8              /* data VLs 0..7 (VL15, management, is not modelled) */
#define IB_BLOCK_BYTES 64u        /* credit unit (7.9.4) */
#define IB_FC_WIRE_BYTES 8u       /* FC packet 6 B (op, FCTBS 12 b, VL, FCCL 12 b, LPCRC 16 b) + 2 B delimiters */
#define IB_FC_MOD 4096u           /* FCTBS / FCCL are 12-bit counters */
#define IB_FC_MAX_ADV 2048u       /* FCCL is at most ABR + 2048 */
#define IB_ARB_MAX_ENTRIES 64     /* VLArbitration tables: up to 64 entries each */
#define IB_SLS 16
#define IB_PKT_F_FC 0x80u         /* sim_pkt.flags: a flow-control packet (the network model's) */

typedef struct ib_arb_entry { uint8_t vl; uint8_t weight; } ib_arb_entry;   /* weight: 64-byte units, 0 skips */
typedef struct ib_arb_table { unsigned n; ib_arb_entry e[IB_ARB_MAX_ENTRIES]; } ib_arb_table;

typedef struct ib_port_cfg {
    unsigned vls;                 /* data VLs, 1..8 */
    uint32_t vl_buffer_bytes;     /* receive buffer per VL (floored to whole blocks) */
    double fc_period_ns;          /* periodic FC packet per VL; 0 = the IBA bound, 65,536 symbol times */
    bool fc_on_free;              /* also send an FC packet as soon as freed blocks can be advertised */
    uint8_t sl2vl[IB_SLS];        /* SL -> VL of packets this port sends (must be < vls) */
    ib_arb_table high, low;       /* empty high table: everything is low priority */
    unsigned limit_of_high;       /* 4 KB units of high-priority data before a low packet may go; 255 = unbounded */
} ib_port_cfg;

/* 2 VLs, 64 KB each, FC at the IBA bound and on free, SL i -> VL i mod vls, low table round robin weight 255. */
void ib_port_cfg_default(ib_port_cfg *c, unsigned vls, uint32_t vl_buffer_bytes);
/* "0:3,1:1": entries VL:weight (weight 0..255), or "" for an empty table. 0, or -1 with why. */
int ib_arb_parse(const char *s, unsigned vls, ib_arb_table *t, char *why, size_t why_n);
/* "0,1,0,1": SL i -> the i-th VL; SLs not named map as the last one given. 0, or -1 with why. */
int ib_sl2vl_parse(const char *s, unsigned vls, uint8_t sl2vl[IB_SLS], char *why, size_t why_n);
/* Range checks of a configuration; 0, or -1 with why naming the field. */
int ib_port_cfg_check(const ib_port_cfg *c, char *why, size_t why_n);

/* Blocks a packet of wire_bytes takes in a receive buffer. */
static inline uint32_t ib_blocks(uint32_t wire_bytes) { return (wire_bytes + IB_BLOCK_BYTES - 1) / IB_BLOCK_BYTES; }
/* Blocks a buffer of bytes advertises at most (IBA: 2048). */
static inline uint32_t ib_adv_blocks(uint32_t buffer_bytes)
{
    uint32_t b = buffer_bytes / IB_BLOCK_BYTES;
    return b < IB_FC_MAX_ADV ? b : IB_FC_MAX_ADV;
}
/* The IBA bound on the FC period: 65,536 symbol times, a symbol being one byte per lane. */
double ib_fc_period_bound_ns(const topo_link *l);

typedef struct ib_port ib_port;
/* A data packet arrived into VL vl's buffer; the owner frees its blocks later with ib_port_release. */
typedef void (*ib_port_rx_fn)(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl);
/* A queued data packet started on the wire (its tag as given to ib_port_enqueue). */
typedef void (*ib_port_tx_fn)(void *owner, ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag);

typedef struct ib_port_stats {
    uint64_t data_sent, data_received, fc_sent, fc_received;
    uint64_t fctbs_total[IB_MAX_VLS];   /* blocks sent per VL (the 12-bit FCTBS unwrapped) */
    uint64_t abr_total[IB_MAX_VLS];     /* blocks received per VL (ABR unwrapped) */
    uint64_t sent_vl_bytes[IB_MAX_VLS]; /* wire bytes of data sent per VL */
    uint64_t fc_sync_errors;            /* FC packets whose FCTBS differed from our ABR (a lost block) */
    uint64_t credit_stall_ps;           /* wire free, data waiting, no VL with credits */
    uint32_t max_used_blocks[IB_MAX_VLS];
} ib_port_stats;

/* A port on fabric port fp (takes fp->in as its receiver); rx/tx: the owner's callbacks.
 * tr (NULL: none): its waves under scope, inside the caller's current scope. */
ib_port *ib_port_new(sim_kernel *k, const sim_fabric_port *fp, const ib_port_cfg *cfg, const char *name,
                     ib_port_rx_fn rx, ib_port_tx_fn tx, void *owner, sim_trace *tr, const char *scope);
/* Sends the initial FC packets of every VL (link up). */
void ib_port_start(ib_port *p);
/* Queues a data packet on VL vl (pkt->vc is set to vl when it leaves). */
void ib_port_enqueue(ib_port *p, sim_pkt *pkt, unsigned vl, uint32_t tag);
/* The owner freed `blocks` of VL vl's receive buffer. */
void ib_port_release(ib_port *p, unsigned vl, uint32_t blocks);
unsigned ib_port_queued(const ib_port *p, unsigned vl);
/* Blocks the transmitter may still send on VL vl: (FCCL - FCTBS) mod 4096 (0 before the first FC packet). */
uint32_t ib_port_credits(const ib_port *p, unsigned vl);
uint32_t ib_port_used_blocks(const ib_port *p, unsigned vl);
const ib_port_cfg *ib_port_config(const ib_port *p);
/* Its counters, a credit stall going on now counted up to now. */
ib_port_stats ib_port_stats_get(const ib_port *p);
/* The number of the fabric port it sits on (its node's port index). */
unsigned ib_port_number(const ib_port *p);
void ib_port_reset_stats(ib_port *p);
/* Buffers within their size, FC consistent, drained: nothing queued or buffered. 0 fine. */
int ib_port_check(const ib_port *p, bool drained, char *why, size_t why_n);
/* Every data packet in its transmit queues. */
void ib_port_for_each_held(const ib_port *p, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
void ib_port_free(ib_port *p);

#endif
