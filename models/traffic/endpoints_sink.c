/* Endpoints: the sinks (see endpoints.h). */
#include "models/traffic/endpoints_impl.h"

/* Payload bytes carried by flits [lo, hi) of a packet (flit 0 is the header). */
static uint64_t payload_in(const tep *e, const sim_pkt *k, unsigned lo, unsigned hi)
{
    uint64_t fb = (uint64_t)e->cfg.flit_bytes, pay = k->payload_bytes;
    uint64_t a = lo > 1 ? (uint64_t)(lo - 1) * fb : 0, b = hi > 1 ? (uint64_t)(hi - 1) * fb : 0;
    return (b < pay ? b : pay) - (a < pay ? a : pay);
}

static _Noreturn void recv_fatal(const tep *e, const sim_pkt *k, const char *what)
{
    char lab[64];
    sim_pkt_label(k, lab, sizeof lab);
    sim_fatal("endpoint %d: %s delivered here: %s", e->idx, lab, what);
}

/* A packet copy (store-and-forward) or one flit of it (part = flit index)
 * arrives at sink p: counted per message (the flits of one message are
 * consecutive in their flow); the sink consumes the packet with its last part. */
void tep_sink_recv(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    tep *e = ctx;
    sim_pkt *k = msg;
    const sim_time_ps now = sim_now(e->k);
    const unsigned first = sim_link_part(l), fb = (unsigned)e->cfg.flit_bytes;
    const unsigned cnt = bytes / fb, src = k->src;
    const unsigned nflits = e->cfg.saf ? cnt : k->parts;
    if (k->dst != (uint32_t)e->idx) recv_fatal(e, k, "not its destination");
    if (cnt * fb != bytes || first + cnt > nflits || src >= (unsigned)e->cfg.ports || k->wire_bytes != nflits * fb)
        recv_fatal(e, k, "a part that is not whole flits of it");
    /* per-flow order: every flit must be newer than the newest seen */
    const int64_t seq_first = (int64_t)(k->seq + first);
    tep_flow_rx *flow = &e->from[src];
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
    tep_meter *m = e->meter;
    if (now >= e->cfg.warmup_ps && now < e->cfg.end_ps) {
        e->win_out += cnt;
        flow->win_from += cnt;
        if (e->cfg.record_latency && m) {
            double lat = (double)(now - k->created_ps) / (double)e->cfg.period_ps;
            for (unsigned f = 0; f < cnt; f++) sim_hist_add(&m->latency_cycles, lat);
        }
    }
    if ((k->flags & TEP_PKT_MSG) && e->msg_bytes_total) {
        e->msg_bytes_recv += payload_in(e, k, first, first + cnt);
        if (!e->msg_done && e->msg_bytes_recv >= e->msg_bytes_total) {
            e->msg_done = true;
            e->msg_done_ps = now;
            if (m && ++m->msg_dests_done == m->msg_dests) {
                m->msg_done_ps = now;
                if (m->stop_when_msg_done) sim_stop(e->k);
            }
        }
    }
    if (first + cnt == nflits) sim_pkt_free(k); /* its last part, into its source's pool: k is not used below */
    if (m && m->stop_when_drained && (m->undelivered -= cnt) == 0) sim_stop(e->k);
}
