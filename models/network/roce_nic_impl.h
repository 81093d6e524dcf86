/* The roce_nic's state, shared by its two files (roce_nic.c: the NIC at work; roce_nic_check.c: its
 * conservation, teardown and accessors). Private to the kind: nothing outside models/network/roce_nic*.c
 * includes it. */
#ifndef MODELS_NETWORK_ROCE_NIC_IMPL_H
#define MODELS_NETWORK_ROCE_NIC_IMPL_H

#include "models/network/roce.h"

typedef struct tx_flow {
    unsigned index;                /* into cfg.flows */
    dcqcn_rp rp;
    uint64_t sent_bytes, seq;
    sim_time_ps next_ps;           /* the limiter lets the next packet go then */
    rc_qp *qp;                     /* rc: the requester */
    tcp_conn *tc;                  /* tcp: the sender */
} tx_flow;

typedef struct qp_owner { struct roce_nic *n; unsigned flow; } qp_owner;

struct roce_nic {
    sim_fabric *f;
    sim_kernel *k;
    uint32_t node, index;
    roce_nic_cfg cfg;
    eth_port *port;
    const topo_link *link;
    double line_Gbps;
    sim_pkt_pool pool;
    char name[TOPO_NAME_MAX + 1];
    tx_flow *tx; unsigned n_tx, rr;
    int *tx_of;                    /* flow index -> tx slot, -1 */
    uint64_t *rx_bytes, *expect;
    sim_time_ps *last_cnp_ps;      /* per flow, SIM_TIME_MAX: none yet */
    sim_process proc;
    sim_event wake;
    roce_nic_stats st;
    sim_trace_var tv_rate;         /* waves: the first flow's Rc in Mb/s */
    sim_trace *tr;
    rc_qp **rx_qp;                 /* rc, per flow: the responder (made on its first packet) */
    tcp_conn **rx_tc;              /* tcp, per flow: the receiver */
    qp_owner *owners;              /* per flow: the QPs' completion context */
    sim_time_ps *done_ps;          /* rc, per flow: its last byte in order here */
    sim_time_ps *acked_ps;         /* rc, per flow: its message done at its sender */
    struct rx_wait { sim_time_ps due_ps; unsigned flow; union { rc_hdr h; tcp_seg seg; }; } *rxq;   /* packets in the NIC's rx_ns */
    uint32_t rxq_head, rxq_len, rxq_cap;
    /* So a wake-up costs what is ready, not every flow (64:1 incast, 128-host all-to-all): */
    unsigned *resp_ready, n_resp_ready;   /* flows whose receiving end (QP or connection) took a packet since the last run */
    uint8_t *resp_flag;                   /* per flow: on resp_ready */
    sim_time_ps tmr_ps;                   /* no sender timer (DCQCN, RTO) of this NIC is due before this (a lower bound) */
    uint8_t used_prios;                   /* priorities its sending flows use */
    /* DCQCN on READ responses: the responder (this NIC for the READ flows whose dst it is) paces them with a
     * limiter of its own per flow; CNPs for them come back here. */
    struct rd_slot { unsigned flow; dcqcn_rp rp; sim_time_ps next_ps; } *rd;
    unsigned n_rd;
    int *rd_of;                           /* flow index -> rd slot, -1 */
};

int roce_nic_check(const void *comp, bool drained, char *why, size_t why_n);
void roce_nic_held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
void roce_nic_reset(void *comp);
void roce_nic_free(void *comp);

#endif
