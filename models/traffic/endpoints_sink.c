/* Endpoints: the sinks (see endpoints.h). */
#include "models/traffic/endpoints_impl.h"

/* Payload bytes carried by flits [lo, hi) of a packet (flit 0 is the header). */
static uint64_t payload_in(const tep *e, const sim_pkt *k, unsigned lo, unsigned hi)
{
    uint64_t fb = (uint64_t)e->cfg.flit_bytes, pay = k->payload_bytes;
    uint64_t a = lo > 1 ? (uint64_t)(lo - 1) * fb : 0, b = hi > 1 ? (uint64_t)(hi - 1) * fb : 0;
    return (b < pay ? b : pay) - (a < pay ? a : pay);
}

static _Noreturn void recv_fatal(const tep_port *p, const sim_pkt *k, const char *what)
{
    char lab[64];
    sim_pkt_label(k, lab, sizeof lab);
    sim_fatal("endpoint %d: %s delivered here: %s", p->sink_idx, lab, what);
}

/* A packet copy (store-and-forward) or one flit of it (part = flit index)
 * arrives at sink p: counted per message (the flits of one message are
 * consecutive in their flow); the sink consumes the packet with its last part. */
void tep_sink_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    tep_port *p = ctx;
    tep *e = p->sink_owner;
    sim_pkt *k = msg;
    const sim_time_ps now = sim_now(e->k);
    const unsigned first = sim_link_part(l), fb = (unsigned)e->cfg.flit_bytes;
    const unsigned cnt = bytes / fb, src = k->src;
    const unsigned nflits = e->cfg.saf ? cnt : k->parts;
    if (k->dst != (uint32_t)p->sink_idx) recv_fatal(p, k, "not its destination");
    if (cnt * fb != bytes || first + cnt > nflits || src >= (unsigned)e->cfg.ports || k->wire_bytes != nflits * fb)
        recv_fatal(p, k, "a part that is not whole flits of it");
    /* per-flow order: every flit must be newer than the newest seen */
    const int64_t seq_first = (int64_t)(k->seq + first);
    tep_flow_rx *flow = &p->from[src];
    int64_t *last = &flow->last_seq;
    if (seq_first > *last) {
        *last = seq_first + cnt - 1;
    } else {
        for (unsigned f = 0; f < cnt; f++) {
            int64_t seq = seq_first + f;
            if (seq > *last) *last = seq;
            else if (seq == *last) e->duplicated++;
            else e->out_of_order++;
        }
    }
    flow->recv_from += cnt;
    e->copies_delivered += cnt;
    if (now >= e->cfg.warmup_ps && now < e->cfg.end_ps) {
        p->win_out += cnt;
        e->win_in[src] += cnt;
        if (e->cfg.record_latency) {
            double lat = (double)(now - k->created_ps) / (double)e->cfg.period_ps;
            for (unsigned f = 0; f < cnt; f++) sim_hist_add(&e->latency_cycles, lat);
        }
    }
    if ((k->flags & TEP_PKT_MSG) && p->msg_bytes_total) {
        p->msg_bytes_recv += payload_in(e, k, first, first + cnt);
        if (!p->msg_done && p->msg_bytes_recv >= p->msg_bytes_total) {
            p->msg_done = true;
            p->msg_done_ps = now;
            e->msg_dests_done++;
            if (e->msg_dests_done == e->msg_dests) {
                e->msg_done_ps = now;
                if (e->stop_when_msg_done) sim_stop(e->k);
            }
        }
    }
    if (first + cnt == nflits) sim_pkt_free(k); /* its last part: k is not used below */
    if (e->stop_when_drained && e->copies_delivered == e->copies_sent) sim_stop(e->k);
    if (e->first_delivery_ps == SIM_TIME_MAX) e->first_delivery_ps = now;
    e->last_delivery_ps = now;
}

