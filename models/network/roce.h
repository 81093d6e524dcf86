/* Between servers, Ethernet: RoCE v2 components for the fabric (docs/models/network.md).
 *   kind "roce_nic":   a RoCE v2 sender/receiver on one Ethernet port: flows with
 *                      a rate limiter, DCQCN (reaction point at the sender,
 *                      notification point at the receiver), PFC honoured
 *   kind "eth_switch": a shared-buffer switch with per-priority egress queues,
 *                      PFC per (ingress port, priority), RED/ECN marking, or
 *                      tail drop (lossy, pfc off); routes from the fabric's tables
 * A test passes a roce_nic_cfg as kind_cfg "roce_nic" and an eth_switch_cfg as
 * "eth_switch". Defaults and their sources: shared/reference/system.md §2. */
#ifndef MODELS_NETWORK_ROCE_H
#define MODELS_NETWORK_ROCE_H

#include "models/network/eth_port.h"
#include "models/network/rc.h"
#include "models/network/tcp.h"

/* DCQCN (Zhu et al., SIGCOMM 2015; system.md §2). */
typedef struct dcqcn_cfg {
    double g;                      /* alpha gain: 1/256 */
    double alpha_timer_us;         /* alpha decays when no CNP came for this long: 55 */
    double rate_timer_us;          /* rate-increase timer T: 55 */
    uint64_t byte_counter_bytes;   /* rate-increase byte counter B: 10 MB */
    unsigned fast_recovery_steps;  /* F: 5 */
    double rai_Gbps;               /* additive increase R_AI: 0.04 (40 Mb/s) */
    double rhai_Gbps;              /* hyper increase R_HAI: 0.1 (100 Mb/s) */
    double min_rate_Gbps;          /* the limiter's floor: 0.1 (the HPCC ns-3 fork's MIN_RATE) */
    double cnp_interval_us;        /* notification point: at most one CNP per flow per this: 50 */
} dcqcn_cfg;
void dcqcn_cfg_default(dcqcn_cfg *c);
int dcqcn_cfg_check(const dcqcn_cfg *c, char *why, size_t why_n);

/* The reaction point of one flow (the rate limiter's state). Rates in Gb/s. */
typedef struct dcqcn_rp {
    double rc_Gbps, rt_Gbps, alpha, line_Gbps;
    unsigned t_count, bc_count;    /* increase events by timer / byte counter since the last cut */
    uint64_t bytes;                /* sent since the last byte-counter event */
    sim_time_ps next_alpha_ps, next_rate_ps;   /* SIM_TIME_MAX: not running */
    uint64_t cuts, increases;
} dcqcn_rp;
void dcqcn_rp_init(dcqcn_rp *r, double line_Gbps);
/* A CNP arrived: Rt <- Rc; Rc <- Rc (1 - alpha/2); alpha <- (1-g) alpha + g; timers restart. */
void dcqcn_rp_cnp(dcqcn_rp *r, const dcqcn_cfg *c, sim_time_ps now);
/* Runs the alpha and rate timers up to now. */
void dcqcn_rp_timers(dcqcn_rp *r, const dcqcn_cfg *c, sim_time_ps now);
/* bytes sent: the byte counter. */
void dcqcn_rp_sent(dcqcn_rp *r, const dcqcn_cfg *c, uint32_t bytes);
/* The earliest timer (SIM_TIME_MAX: none). */
sim_time_ps dcqcn_rp_next_ps(const dcqcn_rp *r);

/* A stream of RoCE v2 packets: without rc, sequence-numbered packets and no
 * retransmission (a gap counts as lost); with rc, one RC WRITE of `bytes` on
 * the flow's own queue pair (rc.h: ACK/NAK, go-back-N, timeout). */
typedef struct roce_flow {
    uint32_t src, dst;             /* endpoint indices */
    uint8_t prio;                  /* 802.1p priority of the data (PFC class) */
    uint32_t payload_bytes;        /* per packet (the MTU): 256..4096 */
    uint64_t bytes;                /* payload to send; UINT64_MAX: without end */
    double start_us;
    rc_op op;                      /* rc: the message (WRITE, the default; SEND; READ: the responder sends the data, paced by its own DCQCN limiter) */
} roce_flow;

/* A TCP segment's framing on these links: TCP 20 B where RoCE v2 has UDP 8 + BTH 12 + ICRC 4 (the presets' 82 B). */
#define ROCE_TCP_FRAMING_LESS_BYTES 4u

typedef struct roce_nic_cfg {
    const roce_flow *flows;        /* every NIC sends the flows whose src it is */
    unsigned n_flows;
    bool dcqcn;                    /* reaction and notification points on (ecn=1) */
    dcqcn_cfg dc;
    uint8_t cnp_prio;              /* CNPs travel on this priority */
    unsigned queue_pkts;           /* packets kept queued at the port per priority (0 = 2) */
    bool rc;                       /* every flow one RC message (its op) on its own QP (bytes finite); ACKs on the flow's priority */
    rc_cfg rcc;                    /* the QPs' settings (mtu: each flow's payload_bytes) */
    double tx_ns, rx_ns;           /* rc, tcp: post -> the QP may send; last byte in -> the QP has the packet (0: none) */
    bool tcp;                      /* instead of rc: every flow one message (a SEND) on a TCP connection (tcp.h) */
    tcp_cfg tcpc;                  /* its settings (mss: each flow's payload_bytes) */
    double host_ns;                /* tcp: the host stack's CPU time per message, at the sender before it goes and the receiver after it is in */
} roce_nic_cfg;

typedef struct roce_nic roce_nic;
typedef struct roce_nic_stats {
    uint64_t made, sent, received, received_payload_bytes, ecn_marked, cnps_sent, cnps_received, lost, out_of_order;
} roce_nic_stats;
const roce_nic_stats *roce_nic_stats_get(const roce_nic *n);
/* Per flow (index into cfg.flows): payload bytes this NIC received of it; its limiter (the sender's, or a READ responder's under DCQCN; NULL: neither). */
uint64_t roce_nic_flow_rx_bytes(const roce_nic *n, unsigned flow);
const dcqcn_rp *roce_nic_flow_rp(const roce_nic *n, unsigned flow);
const eth_port *roce_nic_port(const roce_nic *n);
/* rc: when the flow's last byte arrived in order here (its receiver of a WRITE/SEND; 0: not yet), when its
 * message was done at its sender (acknowledged, or a READ's data in), and its QP here (NULL: none). */
sim_time_ps roce_nic_flow_done_ps(const roce_nic *n, unsigned flow);
sim_time_ps roce_nic_flow_acked_ps(const roce_nic *n, unsigned flow);
const rc_qp *roce_nic_flow_qp(const roce_nic *n, unsigned flow);
const tcp_conn *roce_nic_flow_conn(const roce_nic *n, unsigned flow);   /* tcp */

typedef struct eth_switch_cfg {
    uint64_t buffer_bytes;         /* shared buffer (headroom is reserved on top) */
    bool pfc;                      /* 0: lossy, tail drop */
    double dt_alpha;               /* dynamic threshold: XOFF (pfc) / egress limit (lossy) = alpha x free shared bytes: 1/8 */
    uint32_t xon_offset_bytes;     /* XON when the ingress bytes fall this far below XOFF: 3072 (HPCC ns-3) */
    uint32_t headroom_bytes;       /* per (ingress, priority); 0: the Mellanox rule from the link */
    uint16_t pause_quanta;         /* of a PAUSE frame: 0xFFFF */
    bool ecn;
    double kmin_bytes, kmax_bytes, pmax;   /* RED on the egress queue */
    eth_sched sched;
    double pipeline_ns;            /* lookup + crossbar after the last byte arrived */
    uint32_t mtu_bytes;            /* largest frame, for the headroom rule: 9216 */
} eth_switch_cfg;
void eth_switch_cfg_default(eth_switch_cfg *c);
int eth_switch_cfg_check(const eth_switch_cfg *c, char *why, size_t why_n);
/* The Mellanox headroom rule for a link: 2 MTU + 3840 B + rate x round trip of the cable. */
uint32_t eth_headroom_bytes(const eth_switch_cfg *c, const topo_link *l);

typedef struct eth_switch eth_switch;
typedef struct eth_switch_stats {
    uint64_t received, forwarded, dropped, headroom_drops, marked, in_pipeline;
    uint64_t shared_used_bytes, headroom_used_bytes, max_shared_used_bytes;
} eth_switch_stats;
eth_switch_stats eth_switch_stats_get(const eth_switch *s);
/* NULL for an unconnected port. */
const eth_port *eth_switch_port(const eth_switch *s, unsigned port);
/* Largest headroom use of any (ingress, priority), and the headroom it had. */
uint64_t eth_switch_max_headroom_used(const eth_switch *s, uint32_t *headroom_bytes);

/* PFC deadlock watchdog over the eth_switches of a fabric. Progress: packets
 * they forwarded so far (held_pkts: packets inside them now). A caller that sees
 * no progress with packets held asks for the cycle: the switches each waiting
 * on the next through a port paused with packets queued, named in cycle
 * ("s0.p0 -> s1.p0 -> s0 (paused, packets queued)"); returns its length, 0: none. */
uint64_t eth_fabric_progress(const sim_fabric *f, uint64_t *held_pkts);
int eth_pfc_cycle(const sim_fabric *f, char *cycle, size_t n);

#endif
