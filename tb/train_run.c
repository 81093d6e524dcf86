/* One training step at flow level (tb/train_common.h): the schedule's
 * communication requests as coll_flow collectives over sim/flownet. Every
 * DP replica (TP, PP) or every TP rank (DP) does the same at once, so one
 * join waits for all of them; they contend wherever they share links. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/collective/coll_flow.h"
#include "models/fabric/switch.h"
#include "sim/sim.h"
#include "tb/train_common.h"

struct train_run {
    const train_setup *s;
    sim_kernel *k;
    sim_flownet *net;
    coll_flow *e;
    train_sched *sch;
    bool zero, hierarchical;
    sim_time_ps step_ps;
    char start_why[256];
};

typedef struct join { unsigned left; train_comm_done_fn done; void *arg; } join;

static join *join_new(unsigned left, train_comm_done_fn done, void *arg)
{
    join *j = malloc(sizeof *j);
    if (!j) sim_fatal("out of memory");
    *j = (join){ left, done, arg };
    return j;
}

static void join_one(void *a)
{
    join *j = a;
    if (--j->left) return;
    j->done(j->arg);
    free(j);
}

static void start(train_run *r, enum coll_op op, const uint32_t *group, unsigned n, uint64_t bytes, coll_flow_done_fn done, void *arg)
{
    uint64_t whole = bytes - bytes % n;   /* a whole number of elements per rank */
    if (coll_flow_start(r->e, op, group, n, whole ? whole : n, done, arg, r->start_why, sizeof r->start_why))
        sim_fatal("train: %s over %u ranks: %s", coll_op_name(op), n, r->start_why);
}

/* ---- hierarchical DP collectives: phases over the group's nodes ---- */

/* A phase: within every node (k ranks each), or across nodes (m ranks: the i-th GPU of every node). */
typedef struct phase { enum coll_op op; bool inside; uint64_t bytes; } phase;

typedef struct hier {
    train_run *r;
    uint32_t group[1024];       /* node-major: node j's ranks at [j*k, j*k + k) */
    unsigned k, m;              /* ranks per node, nodes */
    phase ph[3];
    unsigned n_ph, at;
    join *j;
} hier;

static void hier_next(void *a);

static void hier_phase(hier *h)
{
    const phase *p = &h->ph[h->at];
    unsigned groups = p->inside ? h->m : h->k, size = p->inside ? h->k : h->m;
    join *j = join_new(groups, (train_comm_done_fn)hier_next, h);
    uint32_t sub[1024];
    for (unsigned g = 0; g < groups; g++) {
        for (unsigned i = 0; i < size; i++) sub[i] = p->inside ? h->group[g * h->k + i] : h->group[i * h->k + g];
        start(h->r, p->op, sub, size, p->bytes, join_one, j);
    }
}

static void hier_next(void *a)
{
    hier *h = a;
    if (++h->at < h->n_ph) {
        hier_phase(h);
        return;
    }
    join *j = h->j;
    free(h);
    join_one(j);
}

/* all_reduce: reduce-scatter inside, all-reduce across on 1/k, all-gather inside; reduce_scatter: the first two;
 * all_gather: across on 1/k, then inside. A phase of one rank is left out. */
static void start_hierarchical(train_run *r, enum coll_op op, const uint32_t *group, unsigned n, uint64_t bytes, join *j)
{
    const train_setup *s = r->s;
    hier *h = calloc(1, sizeof *h);
    if (!h) sim_fatal("out of memory");
    h->r = r, h->j = j;
    /* node-major order; the group's ranks per node must be equal (Megatron's layouts give that) */
    unsigned count[1024] = { 0 }, first = UINT32_MAX;
    unsigned idx_of[1024];
    for (unsigned i = 0; i < n; i++) {
        unsigned gi = 0;
        while (s->gpu_ep[gi] != group[i]) gi++;
        idx_of[i] = gi;
        count[gi / s->gpus_per_node]++;
    }
    for (unsigned nd = 0; nd < s->nodes; nd++)
        if (count[nd]) {
            if (first == UINT32_MAX) first = count[nd];
            if (count[nd] != first) sim_fatal("train: hierarchical DP group with %u and %u ranks in two nodes", first, count[nd]);
        }
    h->k = first, h->m = n / first;
    unsigned at = 0;
    for (unsigned nd = 0; nd < s->nodes; nd++)
        for (unsigned i = 0; i < n; i++)
            if (idx_of[i] / s->gpus_per_node == nd) h->group[at++] = group[i];
    uint64_t shard = bytes / h->k;
    if (op == COLL_ALL_REDUCE || op == COLL_REDUCE_SCATTER) {
        if (h->k > 1) h->ph[h->n_ph++] = (phase){ COLL_REDUCE_SCATTER, true, bytes };
        if (h->m > 1) h->ph[h->n_ph++] = (phase){ op, false, shard };
        if (op == COLL_ALL_REDUCE && h->k > 1) h->ph[h->n_ph++] = (phase){ COLL_ALL_GATHER, true, bytes };
    } else {
        if (h->m > 1) h->ph[h->n_ph++] = (phase){ COLL_ALL_GATHER, false, shard };
        if (h->k > 1) h->ph[h->n_ph++] = (phase){ COLL_ALL_GATHER, true, bytes };
    }
    hier_phase(h);
}

static void comm_start(void *ctx, enum train_comm_kind kind, unsigned stage, unsigned peer, uint64_t bytes, train_comm_done_fn done,
                       void *arg)
{
    train_run *r = ctx;
    const train_layout *L = &r->s->lay;
    uint32_t group[1024];
    if (kind == TRAIN_COMM_TP) {
        join *j = join_new(L->dp, done, arg);
        for (unsigned d = 0; d < L->dp; d++) {
            for (unsigned t = 0; t < L->tp; t++) group[t] = train_layout_ep(L, stage, d, t);
            start(r, COLL_ALL_REDUCE, group, L->tp, bytes, join_one, j);
        }
    } else if (kind == TRAIN_COMM_PP) {
        /* Megatron's scatter/gather: each TP rank sends its 1/tp of the activations to its peer */
        join *j = join_new(L->dp * L->tp, done, arg);
        for (unsigned d = 0; d < L->dp; d++)
            for (unsigned t = 0; t < L->tp; t++)
                if (coll_flow_send(r->e, train_layout_ep(L, stage, d, t), train_layout_ep(L, peer, d, t), bytes / L->tp, join_one, j,
                                   r->start_why, sizeof r->start_why))
                    sim_fatal("train: pp send of stage %u: %s", stage, r->start_why);
    } else {
        enum coll_op op = kind == TRAIN_COMM_DP_GATHER ? COLL_ALL_GATHER : r->zero ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
        join *j = join_new(L->tp, done, arg);
        for (unsigned t = 0; t < L->tp; t++) {
            for (unsigned d = 0; d < L->dp; d++) group[d] = train_layout_ep(L, stage, d, t);
            if (r->hierarchical) start_hierarchical(r, op, group, L->dp, bytes, j);
            else start(r, op, group, L->dp, bytes, join_one, j);
        }
    }
}

train_run *train_run_step(sim_test_ctx *c, sim_kernel *k, const train_setup *s, uint64_t chunk_bytes, bool hierarchical, double progress)
{
    if (s->lay.dp > 1024 || s->lay.tp > 1024) sim_fatal("train: groups above 1024 ranks");
    train_run *r = calloc(1, sizeof *r);
    if (!r) sim_fatal("out of memory");
    r->s = s, r->k = k, r->zero = s->sc.zero, r->hierarchical = hierarchical;
    sim_flownet_cfg nc = { 128, FABRIC_SWITCH_CFG_DEFAULT.pipeline_ns };   /* NVLink's 128-byte payloads; a switch's pipeline */
    char err[512];
    r->net = sim_flownet_new(k, s->t, s->routes, &nc, err, sizeof err);
    if (!r->net) sim_input_error("%s: %s", c->test_name, err);
    coll_flow_cfg cc = COLL_FLOW_CFG_DEFAULT;
    cc.chunk_bytes = chunk_bytes;
    r->e = coll_flow_new(k, r->net, s->t, s->routes, &cc);
    train_comm_backend tb = { comm_start, r };
    r->sch = train_sched_new(k, &s->sc, &tb, err, sizeof err);
    if (!r->sch) sim_input_error("%s: %s", c->test_name, err);

    sim_time_ps t0 = sim_now(k);
    train_sched_start(r->sch);
    while (!train_sched_done(r->sch)) {
        sim_time_ps before = sim_now(k);
        sim_run(k, before + SIM_US(1000));
        if (sim_now(k) == before && sim_next_time(k) == SIM_TIME_MAX) break;   /* nothing left to do */
        sim_progress(c, progress, "%u GPUs: %.1f ms simulated", s->lay.n_gpus, (double)(sim_now(k) - t0) / 1e9);
    }
    if (train_sched_done(r->sch)) r->step_ps = train_sched_step_ps(r->sch);
    sim_run(k, SIM_TIME_MAX);   /* the flows' last deliveries */
    sim_flownet_sync(r->net);
    return r;
}

sim_time_ps train_run_step_ps(const train_run *r) { return r->step_ps; }
const train_sched *train_run_sched(const train_run *r) { return r->sch; }
sim_flownet *train_run_net(train_run *r) { return r->net; }

bool train_run_conserved(const train_run *r, char *why, size_t why_n)
{
    if (!r->step_ps) {
        snprintf(why, why_n, "the step did not finish");
        return false;
    }
    return !train_sched_check(r->sch, why, why_n) && !coll_flow_check(r->e, why, why_n) && !sim_flownet_check(r->net, true, why, why_n);
}

void train_run_free(train_run *r)
{
    if (!r) return;
    train_sched_free(r->sch);
    coll_flow_free(r->e);
    sim_flownet_free(r->net);
    free(r);
}
