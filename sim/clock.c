#include "sim/clock.h"

#include <stdlib.h>
#include <string.h>

static sim_time_ps next_edge_at_or_after(const sim_clock_domain *d, sim_time_ps t)
{
    if (t <= d->phase_ps) return d->phase_ps;
    uint64_t n = (t - d->phase_ps + d->period_ps - 1) / d->period_ps;
    return d->phase_ps + n * d->period_ps;
}

static void schedule_edge(sim_clock_domain *d, sim_time_ps at)
{
    sim_time_ps now = sim_now(d->k);
    d->scheduled = true;
    d->scheduled_at = at;
    sim_event_notify_at(&d->edge, at - now);
}

static void domain_run(void *ctx)
{
    sim_clock_domain *d = ctx;
    sim_time_ps now = sim_now(d->k);
    d->scheduled = false;
    d->last_edge_ps = now;
    d->ran_any = true;
    uint64_t cycle = (now - d->phase_ps) / d->period_ps;
    d->edges++;
    for (size_t i = 0; i < d->n_handlers; i++) {
        sim_clock_handler *h = d->handlers[i];
        if (!h->active || h->woken_in_edge == d->edges) continue;
        if (!h->fn(h->ctx, cycle)) {
            h->active = false;
            d->n_active--;
        }
    }
    if (d->n_active && !d->scheduled) schedule_edge(d, now + d->period_ps);
}

sim_clock_domain *sim_clock_new(sim_kernel *k, const char *name, sim_time_ps period_ps, sim_time_ps phase_ps)
{
    if (!period_ps) sim_fatal("clock %s: period must be > 0", name);
    sim_clock_domain *d = calloc(1, sizeof *d);
    if (!d) sim_fatal("out of memory");
    d->k = k;
    d->name = name;
    d->period_ps = period_ps;
    d->phase_ps = phase_ps;
    sim_event_init(&d->edge, k, name);
    sim_method_init(&d->proc, k, name, domain_run, d);
    sim_sensitive(&d->proc, &d->edge);
    sim_dont_initialize(&d->proc);
    return d;
}

void sim_clock_free(sim_clock_domain *d)
{
    if (!d) return;
    free(d->handlers);
    free(d);
}

void sim_clock_add(sim_clock_domain *d, sim_clock_handler *h, const char *name, sim_clock_fn fn, void *ctx)
{
    if (d->n_handlers == d->cap_handlers) {
        d->cap_handlers = d->cap_handlers ? 2 * d->cap_handlers : 8;
        d->handlers = realloc(d->handlers, d->cap_handlers * sizeof *d->handlers);
        if (!d->handlers) sim_fatal("out of memory");
    }
    memset(h, 0, sizeof *h);
    h->dom = d;
    h->fn = fn;
    h->ctx = ctx;
    h->name = name;
    d->handlers[d->n_handlers++] = h;
    sim_clock_wake(h);
}

void sim_clock_wake(sim_clock_handler *h)
{
    sim_clock_domain *d = h->dom;
    if (h->active) return;
    h->active = true;
    d->n_active++;
    if (sim_current_process(d->k) == &d->proc) {
        h->woken_in_edge = d->edges;   /* not again in the edge that is running */
        return;                        /* the running domain reschedules itself */
    }
    if (d->scheduled) return;
    sim_time_ps now = sim_now(d->k);
    sim_time_ps at = next_edge_at_or_after(d, now);
    if (at == now && d->ran_any && d->last_edge_ps == now) at += d->period_ps;
    schedule_edge(d, at);
}

uint64_t sim_clock_cycle(const sim_clock_domain *d)
{
    sim_time_ps at = next_edge_at_or_after(d, sim_now(d->k));
    return (at - d->phase_ps) / d->period_ps;
}

sim_time_ps sim_clock_edge_time(const sim_clock_domain *d, uint64_t cycle)
{
    return d->phase_ps + cycle * d->period_ps;
}
