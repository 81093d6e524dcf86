/* Flow-level network (flownet.h): active flows, their max-min fair rates,
 * and one timer for the next flow to drain. Rates are recomputed once per
 * instant however many flows start or end in it (a zero-delay update). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/flownet.h"

typedef struct fn_flow {
    uint32_t *path, len;
    double left_bytes, rate_GBps;   /* GB/s = bytes per ns */
    sim_time_ps latency_ps;
    sim_flownet_done_fn drained, done;
    void *arg;
    uint64_t serial;                /* start order: same-time ends are told in it */
} fn_flow;

typedef struct fn_delivery { sim_flownet *n; sim_flownet_done_fn done; void *arg; } fn_delivery;

struct sim_flownet {
    sim_kernel *k;
    const topo *t;
    const topo_routes *r;
    sim_flownet_cfg cfg;
    uint32_t n_chan;
    double *cap, *left, *chan_bytes;
    uint32_t *users, *path_buf;
    sim_time_ps *chan_busy;
    uint8_t *chan_used;           /* crossed by an active flow at its current rate */
    fn_flow *flows;
    unsigned n, cap_flows;
    /* scratch of the max-min fill, grown as needed */
    uint32_t *first, *plen, *chans;
    double *demand, *rate;
    bool *frozen;
    unsigned cap_scratch, cap_chans;
    fn_flow *ended;                 /* this instant's drained flows, told in start order */
    unsigned cap_ended;
    sim_time_ps last_ps;
    uint64_t gen;
    bool update_pending;
    sim_flownet_stats st;
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) sim_fatal("out of memory");
    return p;
}

sim_flownet *sim_flownet_new(sim_kernel *k, const topo *t, const topo_routes *r, const sim_flownet_cfg *cfg, char *err, size_t errlen)
{
    if (!cfg->mtu_bytes || cfg->hop_ns < 0) {
        snprintf(err, errlen, "flow level: mtu_bytes=%u hop_ns=%g; allowed mtu_bytes >= 1, hop_ns >= 0", cfg->mtu_bytes, cfg->hop_ns);
        return NULL;
    }
    sim_flownet *n = calloc(1, sizeof *n);
    if (!n) sim_fatal("out of memory");
    n->k = k, n->t = t, n->r = r, n->cfg = *cfg, n->n_chan = 2 * t->n_links;
    size_t c = n->n_chan ? n->n_chan : 1;
    n->cap = xrealloc(NULL, c * sizeof *n->cap);
    n->left = xrealloc(NULL, c * sizeof *n->left);
    n->chan_bytes = calloc(c, sizeof *n->chan_bytes);
    n->users = calloc(c, sizeof *n->users);
    n->chan_busy = calloc(c, sizeof *n->chan_busy);
    n->chan_used = calloc(c, 1);
    n->path_buf = xrealloc(NULL, ((size_t)t->n_nodes + 1) * sizeof *n->path_buf);
    if (!n->chan_bytes || !n->users || !n->chan_busy || !n->chan_used) sim_fatal("out of memory");
    for (uint32_t i = 0; i < n->n_chan; i++) {
        const topo_link *l = &t->links[i / 2];
        n->cap[i] = n->left[i] = l->GBps * cfg->mtu_bytes / (double)(cfg->mtu_bytes + l->overhead_bytes);
    }
    n->last_ps = sim_now(k);
    return n;
}

void sim_flownet_free(sim_flownet *n)
{
    if (!n) return;
    for (unsigned i = 0; i < n->n; i++) free(n->flows[i].path);
    free(n->flows);
    free(n->cap), free(n->left), free(n->chan_bytes), free(n->users), free(n->chan_busy), free(n->chan_used), free(n->path_buf);
    free(n->ended);
    free(n->first), free(n->plen), free(n->chans), free(n->demand), free(n->rate), free(n->frozen);
    free(n);
}

/* Charge every active flow and channel for the time since the last update, at the rates then. */
static void advance(sim_flownet *n)
{
    sim_time_ps now = sim_now(n->k);
    if (now == n->last_ps) return;
    double dt_ns = (double)(now - n->last_ps) / 1000.0;
    for (unsigned i = 0; i < n->n; i++) {
        fn_flow *f = &n->flows[i];
        double moved = fmin(f->rate_GBps * dt_ns, f->left_bytes);
        f->left_bytes -= moved;
        n->st.bytes_drained += moved;
        for (uint32_t h = 0; h < f->len; h++) n->chan_bytes[f->path[h]] += moved;
    }
    for (uint32_t c = 0; c < n->n_chan; c++)
        if (n->chan_used[c]) n->chan_busy[c] += now - n->last_ps;
    n->last_ps = now;
}

static void deliver(void *obj, uint64_t tag)
{
    (void)tag;
    fn_delivery *d = obj;
    d->n->st.delivered++;
    sim_flownet_done_fn done = d->done;
    void *arg = d->arg;
    free(d);
    if (done) done(arg);
}

static void notify_drained(void *obj, uint64_t tag)
{
    (void)tag;
    fn_delivery *d = obj;
    sim_flownet_done_fn fn = d->done;
    void *arg = d->arg;
    free(d);
    fn(arg);
}

/* Its last byte is out: drained (if asked) at once -- from an event, so it may start flows -- and done after the latency. */
static void drained(sim_flownet *n, sim_flownet_done_fn on_drained, sim_flownet_done_fn done, void *arg, sim_time_ps latency_ps)
{
    fn_delivery *d = malloc(sizeof *d);
    if (!d) sim_fatal("out of memory");
    *d = (fn_delivery){ n, done, arg };
    n->st.drained++;
    if (on_drained) {
        fn_delivery *q = malloc(sizeof *q);
        if (!q) sim_fatal("out of memory");
        *q = (fn_delivery){ n, on_drained, arg };
        sim_schedule_callback(n->k, 0, 0, notify_drained, q, 0);
    }
    sim_schedule_callback(n->k, latency_ps, 0, deliver, d, 0);
}

static void on_timer(void *obj, uint64_t tag);

/* New max-min rates for the active flows, and the timer for the first to drain. */
static void recompute(sim_flownet *n)
{
    memset(n->chan_used, 0, n->n_chan);
    if (n->cap_scratch < n->n) {
        n->cap_scratch = n->n * 2;
        n->first = xrealloc(n->first, n->cap_scratch * sizeof *n->first);
        n->plen = xrealloc(n->plen, n->cap_scratch * sizeof *n->plen);
        n->demand = xrealloc(n->demand, n->cap_scratch * sizeof *n->demand);
        n->rate = xrealloc(n->rate, n->cap_scratch * sizeof *n->rate);
        n->frozen = xrealloc(n->frozen, n->cap_scratch * sizeof *n->frozen);
    }
    uint32_t total = 0;
    for (unsigned i = 0; i < n->n; i++) total += n->flows[i].len;
    if (n->cap_chans < total) {
        n->cap_chans = total * 2;
        n->chans = xrealloc(n->chans, n->cap_chans * sizeof *n->chans);
    }
    total = 0;
    for (unsigned i = 0; i < n->n; i++) {
        const fn_flow *f = &n->flows[i];
        n->first[i] = total, n->plen[i] = f->len;
        memcpy(n->chans + total, f->path, f->len * sizeof *f->path);
        total += f->len;
        n->demand[i] = INFINITY;
    }
    topo_maxmin_fill(n->cap, n->left, n->users, n->n, n->first, n->plen, n->chans, n->demand, n->rate, n->frozen);
    n->st.recomputes++;
    double next_ns = INFINITY;
    for (unsigned i = 0; i < n->n; i++) {
        fn_flow *f = &n->flows[i];
        f->rate_GBps = n->rate[i];
        for (uint32_t h = 0; h < f->len; h++) n->chan_used[f->path[h]] = f->rate_GBps > 0;
        if (f->rate_GBps > 0) next_ns = fmin(next_ns, f->left_bytes / f->rate_GBps);
    }
    if (next_ns < INFINITY) {
        sim_time_ps d = (sim_time_ps)ceil(next_ns * 1000.0);
        sim_schedule_callback(n->k, d ? d : 1, 0, on_timer, n, ++n->gen);
    }
}

static int by_serial(const void *a, const void *b)
{
    uint64_t x = ((const fn_flow *)a)->serial, y = ((const fn_flow *)b)->serial;
    return x < y ? -1 : x > y;
}

/* Flows whose last byte is out leave (their done after the path's latency), the rest share anew. */
static void update(sim_flownet *n)
{
    advance(n);
    n->update_pending = false;
    unsigned n_ended = 0;
    for (unsigned i = 0; i < n->n;) {
        fn_flow *f = &n->flows[i];
        /* within a picosecond's worth of bytes: the timer rounds up to whole picoseconds */
        if (f->left_bytes > 1e-6 && f->left_bytes > f->rate_GBps * 1e-3) {
            i++;
            continue;
        }
        n->st.bytes_drained += f->left_bytes;
        if (n_ended == n->cap_ended) {
            n->cap_ended = n->cap_ended ? 2 * n->cap_ended : 64;
            n->ended = xrealloc(n->ended, n->cap_ended * sizeof *n->ended);
        }
        n->ended[n_ended++] = *f;
        n->flows[i] = n->flows[--n->n];   /* the array's order does not matter: rates are a function of the set */
    }
    /* in start order, so what other flows did never reorders a flow's same-time neighbours */
    if (n_ended > 1) qsort(n->ended, n_ended, sizeof *n->ended, by_serial);
    for (unsigned i = 0; i < n_ended; i++) {
        drained(n, n->ended[i].drained, n->ended[i].done, n->ended[i].arg, n->ended[i].latency_ps);
        free(n->ended[i].path);
    }
    n->st.active = n->n;
    recompute(n);
}

static void on_timer(void *obj, uint64_t tag)
{
    sim_flownet *n = obj;
    if (tag != n->gen) return;   /* superseded by a later update */
    update(n);
}

/* The latency of the path in n->path_buf (len hops): every link's, and per switch a packet's store and forward. */
static double path_latency_ns(const sim_flownet *n, int len)
{
    const topo *t = n->t;
    double lat_ns = 0;
    for (int h = 0; h < len; h++) {
        const topo_link *l = &t->links[n->path_buf[h] / 2];
        lat_ns += l->latency_ns;
        if (h > 0) lat_ns += (double)(n->cfg.mtu_bytes + l->overhead_bytes) / l->GBps + n->cfg.hop_ns;   /* store and forward */
    }
    return lat_ns;
}

double sim_flownet_path_latency_ns(sim_flownet *n, uint32_t src_ep, uint32_t dst_ep, uint64_t flow_id)
{
    int len = topo_flow_path(n->t, n->r, src_ep, dst_ep, flow_id, n->path_buf, n->t->n_nodes + 1);
    return len > 0 ? path_latency_ns(n, len) : -1;
}

int sim_flownet_start(sim_flownet *n, uint32_t src_ep, uint32_t dst_ep, uint64_t flow_id, uint64_t bytes,
                      sim_flownet_done_fn on_drained, sim_flownet_done_fn done, void *arg)
{
    const topo *t = n->t;
    int len = topo_flow_path(t, n->r, src_ep, dst_ep, flow_id, n->path_buf, t->n_nodes + 1);
    if (len <= 0) return -1;
    sim_time_ps latency_ps = (sim_time_ps)(path_latency_ns(n, len) * 1000.0 + 0.5);
    n->st.started++;
    n->st.bytes_started += (double)bytes;
    if (!bytes) {
        drained(n, on_drained, done, arg, latency_ps);
        return 0;
    }
    advance(n);   /* the others ran at their old rates until now */
    if (n->n == n->cap_flows) {
        n->cap_flows = n->cap_flows ? 2 * n->cap_flows : 64;
        n->flows = xrealloc(n->flows, n->cap_flows * sizeof *n->flows);
    }
    fn_flow *f = &n->flows[n->n++];
    f->path = xrealloc(NULL, (size_t)len * sizeof *f->path);
    memcpy(f->path, n->path_buf, (size_t)len * sizeof *f->path);
    f->len = (uint32_t)len, f->left_bytes = (double)bytes, f->rate_GBps = 0, f->latency_ps = latency_ps, f->drained = on_drained, f->done = done, f->arg = arg;
    f->serial = n->st.started;
    n->st.active = n->n;
    if (n->n > n->st.peak_active) n->st.peak_active = n->n;
    if (!n->update_pending) {   /* one solution for every flow that starts this instant */
        n->update_pending = true;
        sim_schedule_callback(n->k, 0, 0, on_timer, n, ++n->gen);
    }
    return 0;
}

const sim_flownet_stats *sim_flownet_stats_get(const sim_flownet *n) { return &n->st; }
double sim_flownet_channel_bytes(const sim_flownet *n, uint32_t channel) { return channel < n->n_chan ? n->chan_bytes[channel] : 0; }
sim_time_ps sim_flownet_channel_busy_ps(const sim_flownet *n, uint32_t channel) { return channel < n->n_chan ? n->chan_busy[channel] : 0; }
void sim_flownet_sync(sim_flownet *n) { advance(n); }

int sim_flownet_check(const sim_flownet *n, bool drained_, char *why, size_t why_n)
{
    double left = 0;
    for (unsigned i = 0; i < n->n; i++) left += n->flows[i].left_bytes;
    double want = n->st.bytes_started, got = n->st.bytes_drained + left;
    if (fabs(want - got) > 1e-6 * (want > 1 ? want : 1)) {
        snprintf(why, why_n, "flow level: %.0f bytes started, %.0f drained + %.0f to send", want, n->st.bytes_drained, left);
        return -1;
    }
    if (drained_ && (n->n || n->st.delivered != n->st.started)) {
        snprintf(why, why_n, "flow level: %u flows active, %llu of %llu delivered", n->n, (unsigned long long)n->st.delivered,
                 (unsigned long long)n->st.started);
        return -1;
    }
    return 0;
}
