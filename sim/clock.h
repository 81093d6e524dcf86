/* Clock domains: one scheduler entry per domain, calling the registered
 * per-cycle handlers in registration order at each rising edge. No clock
 * signal is toggled. A handler returns true while it has work; returning
 * false drops it from the domain until sim_clock_wake(). A domain with no
 * active handler schedules nothing, so idle clocks cost nothing. */
#ifndef SIM_CLOCK_H
#define SIM_CLOCK_H

#include "sim/kernel.h"

typedef struct sim_clock_domain sim_clock_domain;
typedef bool (*sim_clock_fn)(void *ctx, uint64_t cycle);

typedef struct sim_clock_handler {
    sim_clock_domain *dom;
    sim_clock_fn fn;
    void *ctx;
    const char *name;
    bool active;
    uint64_t woken_in_edge;            /* woken during this domain edge (edges count): runs from the next */
} sim_clock_handler;

struct sim_clock_domain {
    sim_kernel *k;
    const char *name;
    sim_time_ps period_ps, phase_ps;   /* edges at phase + n * period */
    sim_clock_handler **handlers;
    size_t n_handlers, cap_handlers;
    size_t n_active;
    bool scheduled;                    /* an edge is in the timed queue */
    sim_time_ps scheduled_at;
    sim_process proc;                  /* runs the handlers in the evaluate phase */
    sim_event edge;
    uint64_t edges;                    /* edges that ran handlers */
    sim_time_ps last_edge_ps;          /* time of the last edge that ran */
    bool ran_any;
};

sim_clock_domain *sim_clock_new(sim_kernel *k, const char *name, sim_time_ps period_ps, sim_time_ps phase_ps);
void sim_clock_free(sim_clock_domain *d);
/* Handler struct owned by the caller. Starts active. */
void sim_clock_add(sim_clock_domain *d, sim_clock_handler *h, const char *name, sim_clock_fn fn, void *ctx);
/* Make an idle handler run again from the next edge (strictly after now if this
 * domain's edge at now already ran or is running: a handler woken by another
 * handler of its domain runs from the next edge, whatever the registration order). */
void sim_clock_wake(sim_clock_handler *h);
/* Cycle number of an edge time, and the time of cycle n. */
uint64_t sim_clock_cycle(const sim_clock_domain *d);          /* cycle of the current or next edge */
sim_time_ps sim_clock_edge_time(const sim_clock_domain *d, uint64_t cycle);

#endif
