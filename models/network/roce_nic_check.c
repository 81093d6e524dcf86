/* Kind "roce_nic": its conservation check, teardown and accessors (the NIC itself: roce_nic.c). */
#include "models/network/roce_nic_impl.h"

#include <stdio.h>
#include <stdlib.h>

static void count_data(sim_pkt *k, void *ctx)
{
    if (!(k->flags & ETH_PKT_F_CNP)) (*(uint64_t *)ctx)++;
}

int roce_nic_check(const void *comp, bool drained, char *why, size_t why_n)
{
    const roce_nic *n = comp;
    if (eth_port_check(n->port, drained, why, why_n)) return -1;
    uint64_t queued = 0;   /* data packets at the port (CNPs share its queues) */
    eth_port_for_each_held(n->port, count_data, &queued);
    if (n->st.made != n->st.sent + queued) {
        snprintf(why, why_n, "%s: made %llu data packets, sent %llu, queued %llu", n->name, (unsigned long long)n->st.made,
                 (unsigned long long)n->st.sent, (unsigned long long)queued);
        return -1;
    }
    if (n->st.out_of_order) {
        snprintf(why, why_n, "%s: %llu packets out of order", n->name, (unsigned long long)n->st.out_of_order);
        return -1;
    }
    if (drained && n->rxq_len) {
        snprintf(why, why_n, "%s: %u packets still in its receive processing after the drain", n->name, n->rxq_len);
        return -1;
    }
    for (unsigned f = 0; n->cfg.tcp && f < n->cfg.n_flows; f++) {
        const tcp_conn *tc = n->tx_of[f] >= 0 ? n->tx[n->tx_of[f]].tc : n->rx_tc[f];
        if (!tc) continue;
        if (tcp_check(tc, why, why_n)) return -1;
        if (tcp_failed(tc)) {
            snprintf(why, why_n, "%s: flow %u's connection failed after %u timeouts in a row", n->name, f, n->cfg.tcpc.max_retries + 1);
            return -1;
        }
        if (drained && !tcp_idle(tc)) {
            snprintf(why, why_n, "%s: flow %u's connection still has work after the drain", n->name, f);
            return -1;
        }
    }
    for (unsigned f = 0; n->cfg.rc && f < n->cfg.n_flows; f++) {
        const rc_qp *q = n->tx_of[f] >= 0 ? n->tx[n->tx_of[f]].qp : n->rx_qp[f];
        if (!q) continue;
        if (rc_check(q, why, why_n)) return -1;
        if (rc_failed(q)) {
            snprintf(why, why_n, "%s: flow %u's QP failed after %u timeouts in a row", n->name, f, n->cfg.rcc.retry_cnt + 1);
            return -1;
        }
        if (drained && !rc_idle(q)) {
            snprintf(why, why_n, "%s: flow %u's QP still has work after the drain", n->name, f);
            return -1;
        }
    }
    return 0;
}

void roce_nic_held(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx)
{
    const roce_nic *n = comp;
    if (n->port) eth_port_for_each_held(n->port, fn, ctx);
}

void roce_nic_reset(void *comp) { eth_port_reset_stats(((roce_nic *)comp)->port); }

void roce_nic_free(void *comp)
{
    roce_nic *n = comp;
    eth_port_free(n->port);
    sim_pkt_pool_free(&n->pool);
    for (unsigned i = 0; i < n->n_tx; i++) rc_qp_free(n->tx[i].qp), tcp_conn_free(n->tx[i].tc);
    for (unsigned f = 0; f < n->cfg.n_flows; f++) tcp_conn_free(n->rx_tc[f]);
    for (unsigned f = 0; f < n->cfg.n_flows; f++) rc_qp_free(n->rx_qp[f]);
    free(n->tx), free(n->tx_of), free(n->rx_bytes), free(n->expect), free(n->last_cnp_ps);
    free(n->rx_qp), free(n->rx_tc), free(n->owners), free(n->done_ps), free(n->acked_ps), free(n->rxq);
    free(n->resp_ready), free(n->resp_flag), free(n->rd), free(n->rd_of);
    free(n);
}

const roce_nic_stats *roce_nic_stats_get(const roce_nic *n) { return &n->st; }
uint64_t roce_nic_flow_rx_bytes(const roce_nic *n, unsigned flow) { return flow < n->cfg.n_flows ? n->rx_bytes[flow] : 0; }
const dcqcn_rp *roce_nic_flow_rp(const roce_nic *n, unsigned flow)
{
    if (flow >= n->cfg.n_flows) return NULL;
    if (n->tx_of[flow] >= 0) return &n->tx[n->tx_of[flow]].rp;
    return n->rd_of[flow] >= 0 ? &n->rd[n->rd_of[flow]].rp : NULL;
}
const eth_port *roce_nic_port(const roce_nic *n) { return n->port; }
sim_time_ps roce_nic_flow_done_ps(const roce_nic *n, unsigned flow) { return flow < n->cfg.n_flows ? n->done_ps[flow] : 0; }
sim_time_ps roce_nic_flow_acked_ps(const roce_nic *n, unsigned flow) { return flow < n->cfg.n_flows ? n->acked_ps[flow] : 0; }
const tcp_conn *roce_nic_flow_conn(const roce_nic *n, unsigned flow)
{
    if (flow >= n->cfg.n_flows) return NULL;
    return n->tx_of[flow] >= 0 ? n->tx[n->tx_of[flow]].tc : n->rx_tc[flow];
}

const rc_qp *roce_nic_flow_qp(const roce_nic *n, unsigned flow)
{
    if (flow >= n->cfg.n_flows) return NULL;
    return n->tx_of[flow] >= 0 ? n->tx[n->tx_of[flow]].qp : n->rx_qp[flow];
}

