/* The discrete-event kernel. Phase order and override rules: see kernel.h. */
#include "sim/kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A timed-queue entry. Ordered by (time, priority, seq): same-time order is
 * specified, never accidental. Events use fn = event_fire with tag = the
 * event's timed_seq, so a cancelled or superseded entry is skipped lazily. */
typedef struct timed_entry {
    sim_time_ps t;
    uint64_t key;             /* (priority + 128) << 56 | seq */
    sim_timed_fn fn;
    void *obj;
    uint64_t tag;
} timed_entry;

struct sim_kernel {
    sim_time_ps now;
    uint64_t seq;
    uint64_t deltas, activations;
    /* timed queue: binary min-heap */
    timed_entry *heap;
    size_t heap_len, heap_cap;
    /* evaluate: runnable FIFO */
    sim_process *run_head, *run_tail;
    sim_process *running;
    /* update requests, FIFO */
    sim_prim_channel *upd_head, *upd_tail;
    /* delta notifications, FIFO */
    sim_event *delta_head, *delta_tail;
    /* every process, for the initialisation phase */
    sim_process **procs;
    size_t n_procs, cap_procs;
    /* static sensitivity nodes, allocated in blocks and freed with the kernel */
    sim_sens_node **node_blocks;
    size_t n_node_blocks, node_used;
    bool started, stop_requested;
    struct sim_trace *trace;
    void (*time_hook)(void *, sim_time_ps);
    void *time_hook_ctx;
};

#define NODE_BLOCK 256

_Noreturn void sim_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

_Noreturn void sim_input_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q && n) sim_fatal("out of memory (%zu bytes)", n);
    return q;
}

sim_kernel *sim_kernel_new(void)
{
    sim_kernel *k = calloc(1, sizeof *k);
    if (!k) sim_fatal("out of memory");
    return k;
}

void sim_kernel_free(sim_kernel *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n_node_blocks; i++) free(k->node_blocks[i]);
    free(k->node_blocks);
    free(k->heap);
    free(k->procs);
    free(k);
}

sim_time_ps sim_now(const sim_kernel *k) { return k->now; }
uint64_t sim_delta_count(const sim_kernel *k) { return k->deltas; }
uint64_t sim_event_count(const sim_kernel *k) { return k->activations; }
void sim_stop(sim_kernel *k) { k->stop_requested = true; }
bool sim_stopped(const sim_kernel *k) { return k->stop_requested; }
sim_process *sim_current_process(const sim_kernel *k) { return k->running; }
void sim_kernel_set_trace(sim_kernel *k, struct sim_trace *t) { k->trace = t; }
struct sim_trace *sim_trace_of_kernel(const sim_kernel *k) { return k->trace; }

void sim_set_time_hook(sim_kernel *k, void (*hook)(void *, sim_time_ps), void *ctx)
{
    k->time_hook = hook;
    k->time_hook_ctx = ctx;
}

/* --- timed queue --------------------------------------------------------- */
static inline bool entry_before(const timed_entry *a, const timed_entry *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

static void heap_push(sim_kernel *k, sim_time_ps t, int8_t prio, sim_timed_fn fn, void *obj, uint64_t tag)
{
    if (k->heap_len == k->heap_cap) {
        k->heap_cap = k->heap_cap ? 2 * k->heap_cap : 64;
        k->heap = xrealloc(k->heap, k->heap_cap * sizeof *k->heap);
    }
    timed_entry e = { t, ((uint64_t)(uint8_t)(prio + 128) << 56) | k->seq++, fn, obj, tag };
    size_t i = k->heap_len++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (!entry_before(&e, &k->heap[parent])) break;
        k->heap[i] = k->heap[parent];
        i = parent;
    }
    k->heap[i] = e;
}

static timed_entry heap_pop(sim_kernel *k)
{
    timed_entry top = k->heap[0], last = k->heap[--k->heap_len];
    size_t i = 0, n = k->heap_len, c;
    while ((c = 2 * i + 1) < n) {
        if (c + 1 < n && entry_before(&k->heap[c + 1], &k->heap[c])) c++;
        if (!entry_before(&k->heap[c], &last)) break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (n) k->heap[i] = last;
    return top;
}

void sim_schedule_callback(sim_kernel *k, sim_time_ps delay_ps, int8_t priority, sim_timed_fn fn, void *obj, uint64_t tag)
{
    heap_push(k, k->now + delay_ps, priority, fn, obj, tag);
}

static void event_fire(void *obj, uint64_t tag);

sim_time_ps sim_next_time(sim_kernel *k)
{
    /* Drop dead event entries at the top so the answer is exact. */
    while (k->heap_len) {
        const timed_entry *e = &k->heap[0];
        if (e->fn == event_fire) {
            const sim_event *ev = e->obj;
            if (!(ev->pending == SIM_NOTIFY_TIMED && ev->timed_seq == e->tag)) {
                heap_pop(k);
                continue;
            }
        }
        return e->t;
    }
    return SIM_TIME_MAX;
}

/* --- processes and events ------------------------------------------------ */
static inline void make_runnable(sim_kernel *k, sim_process *p)
{
    if (p->queued || p == k->running) return;
    p->queued = 1;
    p->run_next = NULL;
    if (k->run_tail) k->run_tail->run_next = p; else k->run_head = p;
    k->run_tail = p;
}

static void unlink_dynamic(sim_process *p)
{
    sim_event *e = p->dyn_event;
    if (!e) return;
    sim_process *prev = NULL;
    for (sim_process *q = e->dyn_head; q; prev = q, q = q->dyn_next) {
        if (q != p) continue;
        if (prev) prev->dyn_next = q->dyn_next; else e->dyn_head = q->dyn_next;
        if (e->dyn_tail == p) e->dyn_tail = prev;
        break;
    }
    p->dyn_next = NULL;
    p->dyn_event = NULL;
}

static void trigger(sim_kernel *k, sim_event *e)
{
    e->pending = SIM_NOTIFY_NONE;
    e->triggers++;
    for (sim_sens_node *n = e->static_sens; n; n = n->next)
        if (!n->proc->dynamic) make_runnable(k, n->proc);
    sim_process *p = e->dyn_head;
    e->dyn_head = e->dyn_tail = NULL;
    while (p) {
        sim_process *next = p->dyn_next;
        p->dyn_next = NULL;
        p->dyn_event = NULL;
        p->dynamic = 0;
        if (e != &p->timeout && p->timeout.pending) sim_event_cancel(&p->timeout);
        make_runnable(k, p);
        p = next;
    }
}

void sim_event_init(sim_event *e, sim_kernel *k, const char *name)
{
    memset(e, 0, sizeof *e);
    e->k = k;
    e->name = name;
}

void sim_event_notify(sim_event *e)
{
    /* Immediate: cancels any pending notification and triggers now (SystemC). */
    if (e->pending) sim_event_cancel(e);
    trigger(e->k, e);
}

void sim_event_notify_delta(sim_event *e)
{
    sim_kernel *k = e->k;
    if (e->pending == SIM_NOTIFY_DELTA) return;
    e->pending = SIM_NOTIFY_DELTA;    /* delta beats a pending timed one (its entry goes stale) */
    e->delta_next = NULL;
    if (k->delta_tail) k->delta_tail->delta_next = e; else k->delta_head = e;
    k->delta_tail = e;
}

void sim_event_notify_at(sim_event *e, sim_time_ps delay_ps)
{
    if (delay_ps == 0) {
        sim_event_notify_delta(e);
        return;
    }
    sim_kernel *k = e->k;
    if (e->pending == SIM_NOTIFY_DELTA) return;                    /* delta beats timed */
    sim_time_ps t = k->now + delay_ps;
    if (e->pending == SIM_NOTIFY_TIMED && e->when_ps <= t) return; /* an earlier one stands */
    e->pending = SIM_NOTIFY_TIMED;
    e->when_ps = t;
    e->timed_seq = k->seq;                                         /* the seq heap_push will use */
    heap_push(k, t, e->priority, event_fire, e, e->timed_seq);
}

void sim_event_cancel(sim_event *e)
{
    sim_kernel *k = e->k;
    if (e->pending == SIM_NOTIFY_DELTA) {
        sim_event *prev = NULL;
        for (sim_event *q = k->delta_head; q; prev = q, q = q->delta_next) {
            if (q != e) continue;
            if (prev) prev->delta_next = q->delta_next; else k->delta_head = q->delta_next;
            if (k->delta_tail == e) k->delta_tail = prev;
            break;
        }
    }
    e->pending = SIM_NOTIFY_NONE;    /* a timed entry goes stale and is skipped */
}

static void event_fire(void *obj, uint64_t tag)
{
    sim_event *e = obj;
    if (e->pending == SIM_NOTIFY_TIMED && e->timed_seq == tag) trigger(e->k, e);
}

void sim_method_init(sim_process *p, sim_kernel *k, const char *name, sim_method_fn fn, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->name = name;
    p->fn = fn;
    p->ctx = ctx;
    p->initialize = 1;
    sim_event_init(&p->timeout, k, "timeout");
    if (k->n_procs == k->cap_procs) {
        k->cap_procs = k->cap_procs ? 2 * k->cap_procs : 64;
        k->procs = xrealloc(k->procs, k->cap_procs * sizeof *k->procs);
    }
    k->procs[k->n_procs++] = p;
    if (k->started) make_runnable(k, p);   /* created while running: initialised at once */
}

void sim_dont_initialize(sim_process *p)
{
    p->initialize = 0;
    if (p->queued && p->k->started && p->activations == 0) {
        /* created while running and already queued: take it off again */
        sim_kernel *k = p->k;
        sim_process *prev = NULL;
        for (sim_process *q = k->run_head; q; prev = q, q = q->run_next) {
            if (q != p) continue;
            if (prev) prev->run_next = q->run_next; else k->run_head = q->run_next;
            if (k->run_tail == p) k->run_tail = prev;
            break;
        }
        p->queued = 0;
    }
}

void sim_sensitive(sim_process *p, sim_event *e)
{
    sim_kernel *k = p->k;
    if (k->n_node_blocks == 0 || k->node_used == NODE_BLOCK) {
        k->node_blocks = xrealloc(k->node_blocks, (k->n_node_blocks + 1) * sizeof *k->node_blocks);
        k->node_blocks[k->n_node_blocks++] = xrealloc(NULL, NODE_BLOCK * sizeof(sim_sens_node));
        k->node_used = 0;
    }
    sim_sens_node *n = &k->node_blocks[k->n_node_blocks - 1][k->node_used++];
    n->proc = p;
    n->next = NULL;
    /* append: processes sensitive to one event wake in the order they were made sensitive */
    sim_sens_node **tail = &e->static_sens;
    while (*tail) tail = &(*tail)->next;
    *tail = n;
}

void sim_next_trigger(sim_kernel *k, sim_event *e)
{
    sim_process *p = k->running;
    if (!p) sim_fatal("sim_next_trigger called outside a process");
    if (p->dyn_event) {                      /* the last call in an activation wins */
        sim_event *old = p->dyn_event;
        unlink_dynamic(p);
        if (old == &p->timeout) sim_event_cancel(&p->timeout);
    }
    p->dynamic = 1;
    p->dyn_event = e;
    p->dyn_next = NULL;
    if (e->dyn_tail) e->dyn_tail->dyn_next = p; else e->dyn_head = p;
    e->dyn_tail = p;
}

void sim_next_trigger_at(sim_kernel *k, sim_time_ps delay_ps)
{
    sim_process *p = k->running;
    if (!p) sim_fatal("sim_next_trigger_at called outside a process");
    sim_next_trigger(k, &p->timeout);
    sim_event_cancel(&p->timeout);
    sim_event_notify_at(&p->timeout, delay_ps);
}

void sim_request_update(sim_kernel *k, sim_prim_channel *ch)
{
    if (ch->update_requested) return;
    ch->update_requested = 1;
    ch->update_next = NULL;
    if (k->upd_tail) k->upd_tail->update_next = ch; else k->upd_head = ch;
    k->upd_tail = ch;
}

/* --- the scheduler --------------------------------------------------------- */
static void evaluate(sim_kernel *k)
{
    sim_process *p;
    while ((p = k->run_head)) {
        k->run_head = p->run_next;
        if (!k->run_head) k->run_tail = NULL;
        p->queued = 0;
        k->running = p;
        p->activations++;
        k->activations++;
        p->fn(p->ctx);
    }
    k->running = NULL;
}

static void update(sim_kernel *k)
{
    sim_prim_channel *ch = k->upd_head;
    k->upd_head = k->upd_tail = NULL;
    while (ch) {
        sim_prim_channel *next = ch->update_next;
        ch->update_requested = 0;
        ch->update(ch);
        ch = next;
    }
}

static void delta_notify(sim_kernel *k)
{
    sim_event *e = k->delta_head;
    k->delta_head = k->delta_tail = NULL;
    while (e) {
        sim_event *next = e->delta_next;
        e->delta_next = NULL;
        if (e->pending == SIM_NOTIFY_DELTA) trigger(k, e);
        e = next;
    }
}

sim_time_ps sim_run(sim_kernel *k, sim_time_ps until_ps)
{
    k->stop_requested = false;
    if (!k->started) {
        /* IEEE 1666 initialization: update phase (writes made before the
         * start), the initialised processes become runnable, then the delta
         * notification phase; all of it feeds the first evaluate (delta 0). */
        k->started = true;
        update(k);
        for (size_t i = 0; i < k->n_procs; i++)
            if (k->procs[i]->initialize) make_runnable(k, k->procs[i]);
        delta_notify(k);
    }
    for (;;) {
        while (k->run_head || k->upd_head || k->delta_head) {
            evaluate(k);
            update(k);
            delta_notify(k);
            k->deltas++;
            if (k->stop_requested) return k->now;
        }
        sim_time_ps t = sim_next_time(k);
        if (t > until_ps || t == SIM_TIME_MAX) {
            /* like sc_start(duration) (SC_RUN_TO_TIME): time stands at the limit even
             * when activity ended earlier, so a later call resumes from there */
            if (until_ps != SIM_TIME_MAX && until_ps > k->now) k->now = until_ps;
            return k->now;
        }
        k->now = t;
        if (k->time_hook) k->time_hook(k->time_hook_ctx, t);
        while (k->heap_len && k->heap[0].t == t) {
            timed_entry e = heap_pop(k);
            e.fn(e.obj, e.tag);
        }
        /* a stop from a timed-phase callback: finish this time's deltas, then return */
        if (k->stop_requested && !(k->run_head || k->upd_head || k->delta_head)) return k->now;
    }
}
