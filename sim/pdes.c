/* Conservative windows over parts in one process (see pdes.h). */
#include "sim/pdes.h"

#include <stdlib.h>

typedef struct cut {
    sim_link *sending, *receiving;
} cut;

struct sim_pdes {
    unsigned parts;
    sim_kernel **k;
    cut *cuts;
    size_t n_cuts, cap_cuts;
    sim_time_ps lookahead_ps;
    uint64_t windows;
};

sim_pdes *sim_pdes_new(unsigned parts, sim_kernel *const *kernels)
{
    if (!parts) sim_fatal("sim_pdes_new: no parts");
    sim_pdes *p = calloc(1, sizeof *p);
    p->parts = parts;
    p->k = malloc(parts * sizeof *p->k);
    for (unsigned i = 0; i < parts; i++) p->k[i] = kernels[i];
    p->lookahead_ps = SIM_TIME_MAX;
    return p;
}

void sim_pdes_free(sim_pdes *p)
{
    if (!p) return;
    free(p->k);
    free(p->cuts);
    free(p);
}

void sim_pdes_cut(sim_pdes *p, sim_link *sending, unsigned from, sim_link *receiving, unsigned to)
{
    if (from >= p->parts || to >= p->parts || from == to || sending->k != p->k[from] || receiving->k != p->k[to])
        sim_fatal("sim_pdes_cut: link %s: the halves must be in two different parts' kernels", sending->cfg.name);
    if (sending->order_key != receiving->order_key)
        sim_fatal("sim_pdes_cut: link %s: the halves have order keys %u and %u", sending->cfg.name, sending->order_key,
                  receiving->order_key);
    sim_link_make_sending_half(sending);
    sim_link_make_receiving_half(receiving);
    sim_time_ps la = sending->latency_ps < sending->credit_latency_ps ? sending->latency_ps : sending->credit_latency_ps;
    if (!la) sim_fatal("sim_pdes_cut: link %s has no latency: nothing to look ahead by", sending->cfg.name);
    if (la < p->lookahead_ps) p->lookahead_ps = la;
    if (p->n_cuts == p->cap_cuts) {
        p->cap_cuts = p->cap_cuts ? 2 * p->cap_cuts : 16;
        p->cuts = realloc(p->cuts, p->cap_cuts * sizeof *p->cuts);
    }
    p->cuts[p->n_cuts++] = (cut){ sending, receiving };
}

static void carry_msg(void *ctx, const sim_link_msg *m) { sim_link_import(ctx, m); }
static void carry_credit(void *ctx, const sim_link_credit_msg *c) { sim_link_import_credits(ctx, c); }

/* Every cut link's messages to its receiving half, credits to its sending half. */
static void exchange(sim_pdes *p)
{
    for (size_t i = 0; i < p->n_cuts; i++) {
        sim_link_export(p->cuts[i].sending, carry_msg, p->cuts[i].receiving);
        sim_link_export_credits(p->cuts[i].receiving, carry_credit, p->cuts[i].sending);
    }
}

static sim_time_ps next_activity(sim_pdes *p)
{
    sim_time_ps t = SIM_TIME_MAX;
    for (unsigned i = 0; i < p->parts; i++) {
        sim_time_ps n = sim_next_time(p->k[i]);
        if (n < t) t = n;
    }
    return t;
}

sim_time_ps sim_pdes_run(sim_pdes *p, sim_time_ps until_ps)
{
    const sim_time_ps la = p->lookahead_ps;   /* SIM_TIME_MAX with no cut: one window */
    sim_time_ps start = sim_now(p->k[0]);
    for (unsigned i = 1; i < p->parts; i++)
        if (sim_now(p->k[i]) != start) sim_fatal("sim_pdes_run: the parts stand at different times");
    /* the first window begins now: a part not yet started initialises in it */
    for (;;) {
        sim_time_ps end = la == SIM_TIME_MAX || until_ps - start < la ? until_ps : start + la - 1;
        for (unsigned i = 0; i < p->parts; i++) sim_run(p->k[i], end);
        p->windows++;
        exchange(p);
        sim_time_ps next = next_activity(p);
        if (next == SIM_TIME_MAX || end == until_ps) break;
        start = next > end ? next : end + 1;
        if (start > until_ps) break;
    }
    if (until_ps != SIM_TIME_MAX) {
        for (unsigned i = 0; i < p->parts; i++) sim_run(p->k[i], until_ps);   /* nothing is left before it */
        return until_ps;
    }
    sim_time_ps last = 0;
    for (unsigned i = 0; i < p->parts; i++)
        if (sim_last_step_ps(p->k[i]) > last) last = sim_last_step_ps(p->k[i]);
    return last;
}

sim_time_ps sim_pdes_lookahead_ps(const sim_pdes *p) { return p->lookahead_ps; }
uint64_t sim_pdes_windows(const sim_pdes *p) { return p->windows; }

uint64_t sim_pdes_events(const sim_pdes *p)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < p->parts; i++) n += sim_event_count(p->k[i]);
    return n;
}
