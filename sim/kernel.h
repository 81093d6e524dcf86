/* The discrete-event kernel: SystemC semantics without threads.
 *
 * Time is uint64 picoseconds. One simulation step at time t repeats
 *   evaluate (run every runnable process, in the order they became runnable)
 *   -> update (commit primitive-channel writes: signals, FIFOs)
 *   -> delta notify (trigger every delta-notified event, in notification order)
 * until nothing is runnable; then time advances to the earliest pending timed
 * notification, and all timed notifications at that time are triggered in
 * (time, priority, sequence) order. Same-time order is therefore specified:
 * lower priority value first, then first-notified first. As in IEEE 1666,
 * the first sim_run starts with an update and a delta-notification phase, so
 * signal writes and delta notifications made before it are seen in delta 0.
 *
 * Events carry at most one pending notification, with SystemC's override
 * rules: a delta notification beats a timed one; an earlier timed notification
 * replaces a later one; a later one is ignored. Cancel drops the pending one.
 *
 * Processes are method processes: a C callback run to completion. A process is
 * statically sensitive to a list of events; inside its callback it may call
 * sim_next_trigger*() to wait once for a different event or a delay instead
 * (SystemC's next_trigger), after which static sensitivity applies again.
 */
#ifndef SIM_KERNEL_H
#define SIM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t sim_time_ps;

#define SIM_PS(x) ((sim_time_ps)(x))
#define SIM_NS(x) ((sim_time_ps)(x) * 1000u)
#define SIM_US(x) ((sim_time_ps)(x) * 1000000u)
#define SIM_TIME_MAX UINT64_MAX

typedef struct sim_kernel sim_kernel;
typedef struct sim_event sim_event;
typedef struct sim_process sim_process;
typedef struct sim_prim_channel sim_prim_channel;

typedef void (*sim_method_fn)(void *ctx);

enum sim_notify_kind { SIM_NOTIFY_NONE = 0, SIM_NOTIFY_DELTA = 1, SIM_NOTIFY_TIMED = 2 };

/* A process sensitive to an event: a small intrusive list node. */
typedef struct sim_sens_node {
    sim_process *proc;
    struct sim_sens_node *next;
} sim_sens_node;

/* Events and processes are embedded in models, so their size is the models'
 * cache footprint: only what the common paths touch lives in them, hot
 * fields first (an event is 48 bytes, a process 40); the rest is
 * kernel-owned (freed with the kernel). There are no per-object counters:
 * a model that wants one counts in its own process; the kernel counts
 * activations and delta cycles globally (sim_event_count, sim_delta_count). */
struct sim_event_more;
struct sim_process_cold;

struct sim_event {            /* a trigger reads the first 32 bytes, a timed notification 40 */
    uint8_t pending;          /* enum sim_notify_kind */
    int8_t priority;          /* same-time order: lower first (default 0) */
    uint8_t simple;           /* kernel: 1 = exactly one static process and no dynamic waiters (the fast
                               * trigger); 2 = and it is sensitive to no other event (a fusable trigger) */
    uint8_t has_more;         /* kernel: u holds the kernel-owned record (which then holds the name) */
    uint32_t timed_index;     /* kernel: the live timed-queue entry's index in its time slot (lazy cancel) */
    sim_event *delta_next;    /* the kernel's delta list, while pending == DELTA */
    sim_process *sens1;       /* first statically sensitive process (the common case: one) */
    sim_kernel *k;
    sim_time_ps when_ps;      /* valid when pending == TIMED */
    union {                   /* kernel; the name: sim_event_name() */
        const char *name;     /* while !has_more */
        struct sim_event_more *more; /* further static processes, dynamic waiters, the name; made on first need */
    } u;
};

/* sim_process.state bits. A queued process never waits on a dynamic trigger. */
enum { SIM_PROC_QUEUED = 1, SIM_PROC_DYNAMIC = 2 };

struct sim_process {          /* running and waking a process touch the first 32 bytes */
    sim_method_fn fn;
    void *ctx;
    sim_process *run_next;    /* the kernel's runnable list, while queued */
    uint8_t state;            /* 0 = idle (static sensitivity applies), else SIM_PROC_* bits */
    uint8_t initialize;       /* runs once at start of simulation (unless dont_initialize) */
    struct sim_process_cold *cold; /* kernel: its kernel, name, dynamic-trigger bookkeeping */
};

/* A primitive channel: its update() runs in the update phase after a
 * request_update() during evaluation (signals, FIFOs). */
struct sim_prim_channel {
    void (*update)(sim_prim_channel *ch);
    sim_prim_channel *update_next;
    uint8_t update_requested;
};

/* --- kernel ------------------------------------------------------------- */
sim_kernel *sim_kernel_new(void);
void sim_kernel_free(sim_kernel *k);

sim_time_ps sim_now(const sim_kernel *k);
uint64_t sim_delta_count(const sim_kernel *k);     /* delta cycles so far */
uint64_t sim_event_count(const sim_kernel *k);     /* process activations so far */

/* Run until sim_stop() is called or time would pass `until_ps`. Returns the
 * time reached. Like sc_start(duration): time then stands at until_ps, even if
 * activity ended earlier, and a later call resumes from there. With
 * SIM_TIME_MAX (no limit) it returns when no activity is left, at the time of
 * the last activity. */
sim_time_ps sim_run(sim_kernel *k, sim_time_ps until_ps);
/* Called at the start of every sim_run while set (NULL: none). The runner sets
 * it until the test has read its configuration (sim_test_configured), so a test
 * that forgets to say so stops before it simulates, not after a long run. */
void sim_set_run_gate(void (*gate)(void));
void sim_stop(sim_kernel *k);                     /* finish the current delta, then return */
bool sim_stopped(const sim_kernel *k);
/* The time of the last timed step (0 before any): where a run that ended for
 * want of activity ended, even when sim_run was given a later limit (a
 * partitioned run's windows). */
sim_time_ps sim_last_step_ps(const sim_kernel *k);
/* Earliest pending timed notification, or SIM_TIME_MAX. */
sim_time_ps sim_next_time(sim_kernel *k);
/* Delta batches are fused by default: when nothing else is runnable, a
 * delta-notified event whose one process is sensitive to it alone runs that
 * process as the event's turn comes, instead of a trigger pass followed by a
 * run pass (docs/architecture.md). Results are the same either way (a unit
 * test runs random models both ways); off runs the phases literally, for
 * debugging the kernel. */
void sim_kernel_set_delta_fusion(sim_kernel *k, bool on);
/* Called once per timestep with the new time (e.g. for progress or a trace). */
void sim_set_time_hook(sim_kernel *k, void (*hook)(void *ctx, sim_time_ps now), void *ctx);

/* The kernel's trace (set by sim_trace_open), or NULL: models find it here. */
struct sim_trace;
void sim_kernel_set_trace(sim_kernel *k, struct sim_trace *t);
struct sim_trace *sim_trace_of_kernel(const sim_kernel *k);

/* --- events ------------------------------------------------------------- */
void sim_event_init(sim_event *e, sim_kernel *k, const char *name);
void sim_event_notify(sim_event *e);                        /* immediate: runnable in this evaluate phase */
void sim_event_notify_delta(sim_event *e);                  /* next delta cycle */
void sim_event_notify_at(sim_event *e, sim_time_ps delay_ps); /* delay 0 = delta, like SC_ZERO_TIME */
void sim_event_cancel(sim_event *e);
bool sim_event_pending(const sim_event *e);                 /* a delta or timed notification is pending */
/* Some process is statically sensitive to e or waits on it (next_trigger):
 * a notification of an event without waiters wakes nobody, so a model may
 * leave out notifications nobody could see (see sim_link's `delivered`). */
static inline bool sim_event_has_waiters(const sim_event *e) { return e->sens1 || e->has_more; }
const char *sim_event_name(const sim_event *e);

/* --- method processes --------------------------------------------------- */
/* The process struct is owned by the caller (embed it in the model). */
void sim_method_init(sim_process *p, sim_kernel *k, const char *name, sim_method_fn fn, void *ctx);
void sim_sensitive(sim_process *p, sim_event *e);          /* static sensitivity; node allocated by kernel */
void sim_dont_initialize(sim_process *p);
/* Inside the running process: wait for `e` (or `delay_ps`) once instead of the static list. */
void sim_next_trigger(sim_kernel *k, sim_event *e);
void sim_next_trigger_at(sim_kernel *k, sim_time_ps delay_ps);
sim_process *sim_current_process(const sim_kernel *k);

/* --- primitive channels -------------------------------------------------- */
void sim_request_update(sim_kernel *k, sim_prim_channel *ch);

/* --- kernel-internal scheduling for library code -------------------------- */
/* A callback run directly in the timed phase at now + delay (no process).
 * Used by clock domains and links to keep one queue entry per domain/link. */
typedef void (*sim_timed_fn)(void *obj, uint64_t tag);
void sim_schedule_callback(sim_kernel *k, sim_time_ps delay_ps, int8_t priority, sim_timed_fn fn, void *obj, uint64_t tag);
/* Wakes method process p at now + delay_ps (> 0) exactly as a timed
 * notification (priority 0) of an event only p is statically sensitive to
 * would: an entry in that time's slot, in notification order, that makes p
 * runnable unless it is already queued or waits on a dynamic trigger. There
 * is no event, so the wake-up cannot be cancelled or superseded: the caller
 * keeps at most one pending, or p must not mind an extra activation. Links
 * use it for their delivery and credit processes (one event fewer to touch
 * per message). */
void sim_process_wake_at(sim_kernel *k, sim_process *p, sim_time_ps delay_ps);
/* The same with an order key (1..SIM_ORDER_KEY_MAX): at one time, entries with
 * the same priority fire unkeyed first (in notification order), then keyed ones
 * by key, then in notification order. A key names where the wake comes from
 * (the fabric gives each link direction its own), so the order of same-time
 * arrivals is defined by the system, not by which sender happened to notify
 * first: what makes a run partitioned over MPI ranks, whose arrivals from
 * other ranks are notified when a window's messages come in, fire in the same
 * order as one run in one process (docs/parallel.md). */
#define SIM_ORDER_KEY_MAX ((1u << 24) - 1)
void sim_process_wake_at_ordered(sim_kernel *k, sim_process *p, sim_time_ps delay_ps, uint32_t order_key);

/* Fatal model errors (a broken conservation law, an API misuse): print and abort. */
_Noreturn void sim_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Bad user input: print "error: ..." and exit with status 2. */
_Noreturn void sim_input_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
