/* A TCP-like transport of one connection: the protocol engine a NIC (or a
 * host stack on it) drives, as rc.h is for RDMA. No time passes here: the
 * driver asks for the next segment when its wire lets it send, hands over what
 * arrives and calls the timer; the host stack's per-message CPU cost is the
 * driver's (a delay before posting and after delivery, on each side).
 *
 * Byte sequence numbers; messages are sent in order, each cut into segments of
 * at most `mss` bytes (a segment never spans two messages). Sender (after
 * RFC 5681 / 6582 / 6298): a window of min(cwnd, rwnd) bytes; slow start
 * (cwnd += mss per ACK of new data) below ssthresh, congestion avoidance
 * (cwnd += mss^2 / cwnd) above; three duplicate ACKs: fast retransmit of the
 * first unacknowledged segment, ssthresh = max(flight / 2, 2 mss), cwnd =
 * ssthresh + 3 mss, NewReno fast recovery (a partial ACK retransmits the next
 * hole, each further duplicate inflates cwnd by one mss) until everything sent
 * before the loss is acknowledged; RTO from SRTT/RTTVAR (Karn: no sample from
 * a retransmitted segment) with a floor, doubled on each timeout, after which
 * cwnd = 1 mss and sending goes back to the first unacknowledged byte.
 * Receiver: cumulative ACKs, every `ack_every` in-order segments (delayed ACK),
 * and at once for an out-of-order segment (a duplicate ACK) or one that fills a
 * hole; out-of-order segments are kept and taken when the hole fills.
 * docs/models/network.md. */
#ifndef MODELS_NETWORK_TCP_H
#define MODELS_NETWORK_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/kernel.h"

typedef struct tcp_seg {
    uint8_t ack;               /* 1: a pure ACK (ack_seq valid); 0: data */
    uint8_t last;              /* data: the last segment of its message */
    uint32_t msg;              /* data: its message */
    uint32_t len;              /* data: payload bytes */
    uint64_t seq;              /* data: first byte */
    uint64_t ack_seq;          /* ACK: next byte expected */
} tcp_seg;

typedef struct tcp_cfg {
    uint32_t mss;              /* payload bytes per segment */
    uint64_t rwnd_bytes;       /* the receiver's window */
    uint32_t init_cwnd_segs;   /* initial window (RFC 6928: 10) */
    uint32_t ack_every;        /* delayed ACK: one ACK per this many in-order segments (1: every one) */
    sim_time_ps min_rto_ps;    /* RTO floor (Linux: 200 ms; data-centre settings lower) */
    sim_time_ps init_rto_ps;   /* before the first RTT sample (RFC 6298: 1 s) */
    unsigned max_retries;      /* timeouts in a row before the connection fails */
} tcp_cfg;

#define TCP_CFG_DEFAULT                                                                                              \
    { .mss = 1460, .rwnd_bytes = 4u << 20, .init_cwnd_segs = 10, .ack_every = 2, .min_rto_ps = SIM_US(1000),          \
      .init_rto_ps = SIM_US(1000), .max_retries = 15 }

typedef void (*tcp_complete_fn)(void *ctx, uint32_t msg, bool sender, uint64_t bytes);

typedef struct tcp_stats {
    uint64_t segs, bytes, retransmitted_segs, retransmitted_bytes, acks, dup_acks_received;
    uint64_t fast_retransmits, timeouts, out_of_order_received, duplicate_received;
    uint64_t posted, completed, receiver_completed;
    uint64_t max_cwnd_bytes;
} tcp_stats;

typedef struct tcp_conn tcp_conn;

tcp_conn *tcp_conn_new(const tcp_cfg *cfg, const char *name, tcp_complete_fn done, void *ctx);
void tcp_conn_free(tcp_conn *c);
/* A message of bytes (>= 1) after the ones posted; returns its number. */
uint32_t tcp_post(tcp_conn *c, uint64_t bytes);
bool tcp_has_segment(const tcp_conn *c);
/* The next segment to send (ACKs first); false: none now. */
bool tcp_next_segment(tcp_conn *c, sim_time_ps now, tcp_seg *out);
void tcp_receive(tcp_conn *c, sim_time_ps now, const tcp_seg *s);
sim_time_ps tcp_timer_due(const tcp_conn *c);
void tcp_timer(tcp_conn *c, sim_time_ps now);
bool tcp_failed(const tcp_conn *c);
bool tcp_idle(const tcp_conn *c);
uint64_t tcp_cwnd_bytes(const tcp_conn *c);
const tcp_stats *tcp_stats_get(const tcp_conn *c);
/* Sequence numbers in order, messages done once; 0 fine. */
int tcp_check(const tcp_conn *c, char *why, size_t why_n);

#endif
