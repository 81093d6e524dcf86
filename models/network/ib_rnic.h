/* Kind "ib_rnic": an RDMA NIC on one InfiniBand port (ib_port.h), one RC
 * queue pair (rc.h) per peer, driving the messages it is given: posted at
 * their time plus the NIC's transmit processing (doorbell, WQE and data
 * fetch), cut into packets by the QP, handed to the port as its queue has
 * room (the link layer's credits and arbitration decide what goes), and on
 * arrival taken off the port at once (the buffer frees at line rate) and
 * given to the QP after the NIC's receive processing. The headers each packet
 * carries beyond the link's 26 bytes (LRH, BTH, ICRC, VCRC): RETH 16 on a
 * WRITE's first packet and on a READ request, AETH 4 on ACK/NAK and on a READ
 * response's first and last packets (IBA 9.2-9.4). docs/models/network.md. */
#ifndef MODELS_NETWORK_IB_RNIC_H
#define MODELS_NETWORK_IB_RNIC_H

#include "models/network/ib_port.h"
#include "models/network/rc.h"

/* One message: posted by endpoint src for its QP to dst at post_ps. Messages
 * of one (src, dst) pair must be given in post order. */
typedef struct rnic_msg {
    uint32_t src, dst;
    rc_op op;
    uint64_t bytes;
    sim_time_ps post_ps;
} rnic_msg;

typedef struct ib_rnic_cfg {
    ib_port_cfg port;
    rc_cfg rc;
    uint8_t sl;                 /* service level of every QP */
    double tx_ns;               /* post -> the QP may send (doorbell, WQE fetch, first data read) */
    double rx_ns;               /* last byte in -> the QP has the packet (parse, DMA, completion) */
    const rnic_msg *msgs;
    unsigned n_msgs;
    unsigned queue_pkts;        /* packets kept queued at the port (0: 2) */
} ib_rnic_cfg;

/* When message i (cfg.msgs) was done: at its requester (acknowledged, or READ
 * data in) and, for WRITE/SEND, at its responder (last byte in order). 0: not
 * (yet), or not this NIC's side of it. */
typedef struct rnic_msg_times { sim_time_ps posted_ps, requester_done_ps, responder_done_ps; } rnic_msg_times;

typedef struct ib_rnic ib_rnic;
void ib_rnic_register(void);
const rnic_msg_times *ib_rnic_msg_times(const ib_rnic *r, unsigned msg);
/* The QP this NIC holds for peer endpoint dst (NULL: none). */
const rc_qp *ib_rnic_qp(const ib_rnic *r, uint32_t dst);
const ib_port *ib_rnic_port(const ib_rnic *r);
/* Wire bytes of a packet with this header on a link of overhead_bytes. */
uint32_t ib_rnic_wire_bytes(const rc_hdr *h, uint32_t overhead_bytes);

#endif
