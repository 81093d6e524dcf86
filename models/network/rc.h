/* RDMA reliable connection (RC) transport of one queue pair: the protocol
 * engine a NIC drives, in the spirit of the IBA's RC service (chapter 9) as
 * RoCE v2 uses it. No time passes here: the NIC asks for the next packet when
 * its wire (and rate limiter) lets it send, hands over what arrives, and
 * calls the retransmission timer when it is due.
 *
 * Requester: WRITE and SEND are cut into MTU packets with consecutive PSNs;
 * READ sends one request that takes as many PSNs as its responses. At most
 * `window_pkts` PSNs are outstanding. The responder acknowledges
 * cumulatively (an ACK every ack_every packets, at the end of each message,
 * and again for a duplicate), answers a PSN gap with one NAK (sequence error)
 * naming the PSN it expects, and sends READ responses in PSN order; a READ
 * response implicitly acknowledges the WRITE/SEND PSNs before it. On a NAK the
 * requester goes back to the PSN named (go-back-N); when nothing has been
 * acknowledged for rto_ps with PSNs outstanding, it goes back to the oldest
 * one (the timeout), at most retry_cnt times in a row before the QP fails.
 * PSNs are plain counters (no 24-bit wrap: a QP sends fewer than 2^32 packets).
 * docs/models/network.md. */
#ifndef MODELS_NETWORK_RC_H
#define MODELS_NETWORK_RC_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/kernel.h"

typedef enum rc_op { RC_WRITE = 0, RC_SEND, RC_READ } rc_op;
typedef enum rc_opcode { RC_DATA = 0, RC_READ_REQ, RC_READ_RESP, RC_ACK, RC_NAK } rc_opcode;

/* What a packet carries of the transport (BTH, RETH, AETH fields that matter). */
typedef struct rc_hdr {
    uint8_t opcode;            /* enum rc_opcode */
    uint8_t op;                /* enum rc_op of the message (DATA, READ_*) */
    uint8_t last;              /* last packet of its message (DATA, READ_RESP) */
    uint32_t psn;              /* DATA, READ_REQ (its first response's), READ_RESP; ACK: highest acknowledged; NAK: expected */
    uint32_t msg;              /* the message's number on this QP */
    uint32_t payload_bytes;    /* DATA, READ_RESP */
    uint64_t read_bytes;       /* READ_REQ: bytes asked for from offset */
    uint64_t offset;           /* DATA, READ_REQ, READ_RESP: where in the message */
} rc_hdr;

/* Transport headers a packet carries beyond the BTH (which the link presets'
 * overhead counts): RETH 16 on a WRITE's first packet and on a READ request,
 * AETH 4 on ACK/NAK and on a READ response's first and last (IBA 9.2-9.4;
 * the same on InfiniBand and RoCE v2). */
uint32_t rc_extra_header_bytes(const rc_hdr *h);

typedef struct rc_cfg {
    uint32_t mtu;              /* payload bytes per packet */
    uint32_t window_pkts;      /* PSNs outstanding at most */
    uint32_t ack_every;        /* coalescing: an ACK after this many in-order packets (and every last) */
    sim_time_ps rto_ps;        /* retransmission timeout */
    unsigned retry_cnt;        /* timeouts in a row before the QP fails (IBA: 7) */
} rc_cfg;

#define RC_CFG_DEFAULT { .mtu = 4096, .window_pkts = 256, .ack_every = 16, .rto_ps = SIM_US(100), .retry_cnt = 7 }

/* A message done: at the requester when acknowledged (WRITE, SEND) or when its
 * last response arrived (READ); at the responder when its last packet arrived
 * in order (WRITE, SEND). */
typedef void (*rc_complete_fn)(void *ctx, uint32_t msg, rc_op op, bool requester, uint64_t bytes);

typedef struct rc_stats {
    uint64_t data_pkts, data_bytes;          /* DATA and READ_RESP packets sent (first time and again) */
    uint64_t retransmitted_pkts, retransmitted_bytes;
    uint64_t acks, naks, read_reqs;          /* sent */
    uint64_t timeouts, go_back;              /* RTOs taken; rewinds (NAK or RTO) */
    uint64_t duplicates, out_of_sequence;    /* received: below / above the expected PSN (dropped) */
    uint64_t posted, completed, responder_completed;
} rc_stats;

typedef struct rc_qp rc_qp;

rc_qp *rc_qp_new(const rc_cfg *cfg, const char *name, rc_complete_fn done, void *ctx);
void rc_qp_free(rc_qp *q);
/* Posts a message; returns its number (consecutive from 0). bytes >= 1. */
uint32_t rc_post(rc_qp *q, rc_op op, uint64_t bytes);
/* Is there a packet to send now? Responses (ACK, NAK, READ responses) before new requests. */
bool rc_has_packet(const rc_qp *q);
/* The next packet to send (false: none); the engine counts it as sent. */
bool rc_next_packet(rc_qp *q, sim_time_ps now, rc_hdr *out);
/* A packet of the peer's QP arrived. */
void rc_receive(rc_qp *q, sim_time_ps now, const rc_hdr *h);
/* When the retransmission timer fires (SIM_TIME_MAX: not armed), and its firing. */
sim_time_ps rc_timer_due(const rc_qp *q);
void rc_timer(rc_qp *q, sim_time_ps now);
/* Has the QP given up (retry_cnt timeouts in a row)? */
bool rc_failed(const rc_qp *q);
/* Every posted message done and nothing left to send or acknowledge. */
bool rc_idle(const rc_qp *q);
const rc_stats *rc_stats_get(const rc_qp *q);
/* The protocol's own conservation: 0 fine, else why (messages done once, PSNs in order). */
int rc_check(const rc_qp *q, char *why, size_t why_n);

#endif
