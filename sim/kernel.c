/* The discrete-event kernel. Phase order and override rules: see kernel.h. */
#include "sim/kernel.h"
#include "sim/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The timed queue holds one slot per distinct time (gem5's TimeSlot): a
 * min-heap of slots keyed by time, a hash from time to slot, and in each slot
 * the entries in notification order. Notifying many events for the same time
 * (a clock edge, T tokens one hop ahead) is then an append, not a heap
 * operation. Within a slot, entries fire in (priority, seq) order, so
 * same-time order is specified, never accidental. Events use fn = event_fire
 * with tag = the event's timed_seq, so a cancelled or superseded entry is
 * skipped lazily. */
typedef struct timed_entry {
    uint64_t key;             /* (priority + 128) << 56 | seq */
    sim_timed_fn fn;
    void *obj;
    uint64_t tag;
} timed_entry;

typedef struct time_slot {
    sim_time_ps t;
    timed_entry *v;
    size_t n, cap;
    bool has_priority;        /* some entry has a non-default priority: sort before firing */
} time_slot;

typedef struct slot_ref {
    sim_time_ps t;
    time_slot *slot;          /* NULL = empty bucket */
} slot_ref;

struct sim_kernel {
    sim_time_ps now;
    uint64_t seq;
    uint64_t deltas, activations;
    /* timed queue: a min-heap of slots, a time -> slot hash, a free list */
    time_slot **heap;
    size_t heap_len, heap_cap;
    slot_ref *tab;
    size_t tab_cap, tab_len;  /* tab_cap is a power of two */
    time_slot **free_slots;
    size_t n_free, cap_free;
    time_slot *last_slot;     /* the slot of the last push: most pushes go there again */
    /* evaluate: runnable FIFO */
    /* runnable processes and delta-notified events: intrusive FIFO lists
     * (the links live in the structs each step touches anyway) */
    sim_process *run_head, **run_tailp;
    sim_process *running;
    /* update requests, FIFO */
    sim_prim_channel *upd_head, *upd_tail;
    /* delta notifications, FIFO */
    sim_event *delta_head, **delta_tailp;
    /* every process, for the initialisation phase */
    sim_process **procs;
    size_t n_procs, cap_procs;
    /* static sensitivity nodes, allocated in blocks and freed with the kernel */
    sim_sens_node **node_blocks;
    size_t n_node_blocks, node_used;
    bool started, stop_requested;
    struct sim_trace *trace;
    sim_event **timeouts;     /* processes' next_trigger_at events, freed with the kernel */
    size_t n_timeouts;
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
    k->run_tailp = &k->run_head;
    k->delta_tailp = &k->delta_head;
    return k;
}

void sim_kernel_free(sim_kernel *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n_node_blocks; i++) free(k->node_blocks[i]);
    free(k->node_blocks);
    for (size_t i = 0; i < k->heap_len; i++) {
        free(k->heap[i]->v);
        free(k->heap[i]);
    }
    for (size_t i = 0; i < k->n_free; i++) {
        free(k->free_slots[i]->v);
        free(k->free_slots[i]);
    }
    free(k->free_slots);
    for (size_t i = 0; i < k->n_timeouts; i++) free(k->timeouts[i]);
    free(k->timeouts);
    free(k->tab);
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
static inline size_t tab_hash(const sim_kernel *k, sim_time_ps t)
{
    return (size_t)((t * 0x9e3779b97f4a7c15ull) >> 20) & (k->tab_cap - 1);
}

static time_slot *tab_find(const sim_kernel *k, sim_time_ps t)
{
    if (!k->tab_cap) return NULL;
    for (size_t i = tab_hash(k, t);; i = (i + 1) & (k->tab_cap - 1)) {
        if (!k->tab[i].slot) return NULL;
        if (k->tab[i].t == t) return k->tab[i].slot;
    }
}

static void tab_put(sim_kernel *k, time_slot *slot)
{
    if (2 * (k->tab_len + 1) > k->tab_cap) {
        size_t old_cap = k->tab_cap;
        slot_ref *old = k->tab;
        k->tab_cap = old_cap ? 2 * old_cap : 64;
        k->tab = xrealloc(NULL, k->tab_cap * sizeof *k->tab);
        memset(k->tab, 0, k->tab_cap * sizeof *k->tab);
        k->tab_len = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].slot) tab_put(k, old[i].slot);
        free(old);
    }
    size_t i = tab_hash(k, slot->t);
    while (k->tab[i].slot) i = (i + 1) & (k->tab_cap - 1);
    k->tab[i].t = slot->t;
    k->tab[i].slot = slot;
    k->tab_len++;
}

static void tab_remove(sim_kernel *k, sim_time_ps t)
{
    size_t mask = k->tab_cap - 1, i = tab_hash(k, t);
    while (k->tab[i].t != t || !k->tab[i].slot) i = (i + 1) & mask;
    /* backward-shift deletion keeps every probe chain unbroken */
    for (size_t j = (i + 1) & mask; k->tab[j].slot; j = (j + 1) & mask) {
        size_t home = tab_hash(k, k->tab[j].t);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            k->tab[i] = k->tab[j];
            i = j;
        }
    }
    k->tab[i].slot = NULL;
    k->tab_len--;
}

static void heap_insert(sim_kernel *k, time_slot *slot)
{
    if (k->heap_len == k->heap_cap) {
        k->heap_cap = k->heap_cap ? 2 * k->heap_cap : 64;
        k->heap = xrealloc(k->heap, k->heap_cap * sizeof *k->heap);
    }
    size_t i = k->heap_len++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (k->heap[parent]->t <= slot->t) break;
        k->heap[i] = k->heap[parent];
        i = parent;
    }
    k->heap[i] = slot;
}

static time_slot *heap_take_top(sim_kernel *k)
{
    time_slot *top = k->heap[0], *last = k->heap[--k->heap_len];
    size_t i = 0, n = k->heap_len, c;
    while ((c = 2 * i + 1) < n) {
        if (c + 1 < n && k->heap[c + 1]->t < k->heap[c]->t) c++;
        if (k->heap[c]->t >= last->t) break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (n) k->heap[i] = last;
    tab_remove(k, top->t);
    if (k->last_slot == top) k->last_slot = NULL;
    return top;
}

static void slot_release(sim_kernel *k, time_slot *slot)
{
    slot->n = 0;
    slot->has_priority = false;
    if (k->n_free == k->cap_free) {
        k->cap_free = k->cap_free ? 2 * k->cap_free : 16;
        k->free_slots = xrealloc(k->free_slots, k->cap_free * sizeof *k->free_slots);
    }
    k->free_slots[k->n_free++] = slot;
}

static void timed_push(sim_kernel *k, sim_time_ps t, int8_t prio, sim_timed_fn fn, void *obj, uint64_t tag)
{
    time_slot *slot = k->last_slot;
    if (!slot || slot->t != t) {
        slot = tab_find(k, t);
        if (!slot) {
            if (k->n_free) slot = k->free_slots[--k->n_free];
            else slot = xrealloc(NULL, sizeof *slot), memset(slot, 0, sizeof *slot);
            slot->t = t;
            heap_insert(k, slot);
            tab_put(k, slot);
        }
        k->last_slot = slot;
    }
    if (slot->n == slot->cap) {
        slot->cap = slot->cap ? 2 * slot->cap : 8;
        slot->v = xrealloc(slot->v, slot->cap * sizeof *slot->v);
    }
    timed_entry *e = &slot->v[slot->n++];
    e->key = ((uint64_t)(uint8_t)(prio + 128) << 56) | k->seq++;
    e->fn = fn;
    e->obj = obj;
    e->tag = tag;
    if (prio) slot->has_priority = true;
}

void sim_schedule_callback(sim_kernel *k, sim_time_ps delay_ps, int8_t priority, sim_timed_fn fn, void *obj, uint64_t tag)
{
    timed_push(k, k->now + delay_ps, priority, fn, obj, tag);
}

static void event_fire(void *obj, uint64_t tag);

static inline bool entry_live(const timed_entry *e)
{
    if (e->fn != event_fire) return true;
    const sim_event *ev = e->obj;
    return ev->pending == SIM_NOTIFY_TIMED && ev->timed_seq == e->tag;
}

sim_time_ps sim_next_time(sim_kernel *k)
{
    /* Drop slots holding only cancelled entries, so time never advances to them. */
    while (k->heap_len) {
        time_slot *top = k->heap[0];
        for (size_t i = 0; i < top->n; i++)
            if (entry_live(&top->v[i])) return top->t;
        slot_release(k, heap_take_top(k));
    }
    return SIM_TIME_MAX;
}

static int entry_cmp(const void *a, const void *b)
{
    uint64_t x = ((const timed_entry *)a)->key, y = ((const timed_entry *)b)->key;
    return (x > y) - (x < y);
}

/* Fires every entry at the earliest time (the caller has set now to it). */
static void fire_slot(sim_kernel *k)
{
    time_slot *slot = heap_take_top(k);
    if (slot->has_priority) qsort(slot->v, slot->n, sizeof *slot->v, entry_cmp);
    for (size_t i = 0; i < slot->n; i++) slot->v[i].fn(slot->v[i].obj, slot->v[i].tag);
    slot_release(k, slot);
}

/* --- processes and events ------------------------------------------------ */
static inline void make_runnable(sim_kernel *k, sim_process *p)
{
    if (p->queued) return;
    p->queued = 1;
    p->run_next = NULL;
    *k->run_tailp = p;
    k->run_tailp = &p->run_next;
}

static void unlink_dynamic(sim_process *p)
{
    sim_event *e = p->dyn_event;
    if (!e) return;
    sim_process *prev = NULL;
    for (sim_process *q = e->dyn_head; q; prev = q, q = q->dyn_next) {
        if (q != p) continue;
        if (prev) prev->dyn_next = q->dyn_next; else e->dyn_head = q->dyn_next;
        break;
    }
    p->dyn_next = NULL;
    p->dyn_event = NULL;
}

static void trigger_dynamic(sim_kernel *k, sim_event *e)
{
    sim_process *p = e->dyn_head;
    e->dyn_head = NULL;
    while (p) {
        sim_process *next = p->dyn_next;
        p->dyn_next = NULL;
        p->dyn_event = NULL;
        p->dynamic = 0;
        if (p->timeout && e != p->timeout && p->timeout->pending) sim_event_cancel(p->timeout);
        make_runnable(k, p);
        p = next;
    }
}

/* The hot path: one statically sensitive process, no dynamic waiters. A
 * process never re-triggers itself by an immediate notification (SystemC). */
static inline void trigger(sim_kernel *k, sim_event *e)
{
    e->pending = SIM_NOTIFY_NONE;
    e->triggers++;
    sim_process *p = e->sens1;
    if (p && !p->dynamic) make_runnable(k, p);
    for (sim_sens_node *n = e->static_sens; n; n = n->next)
        if (!n->proc->dynamic) make_runnable(k, n->proc);
    if (e->dyn_head) trigger_dynamic(k, e);
}

void sim_event_init(sim_event *e, sim_kernel *k, const char *name)
{
    memset(e, 0, sizeof *e);
    e->k = k;
    e->name = name;
}

void sim_event_notify(sim_event *e)
{
    /* Immediate: cancels any pending notification and triggers now (SystemC).
     * The running process is not re-triggered by its own notification: it is
     * marked queued for the moment, so make_runnable passes it over. */
    sim_kernel *k = e->k;
    if (e->pending) sim_event_cancel(e);
    sim_process *self = k->running;
    uint8_t was_queued = self ? self->queued : 0;
    if (self) self->queued = 1;
    trigger(k, e);
    if (self) self->queued = was_queued;
}

void sim_event_notify_delta(sim_event *e)
{
    sim_kernel *k = e->k;
    if (e->pending == SIM_NOTIFY_DELTA) return;
    e->pending = SIM_NOTIFY_DELTA;    /* delta beats a pending timed one (its entry goes stale) */
    e->delta_next = NULL;
    *k->delta_tailp = e;
    k->delta_tailp = &e->delta_next;
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
    e->timed_seq = k->seq;                                         /* the seq timed_push will use */
    timed_push(k, t, e->priority, event_fire, e, e->timed_seq);
}

void sim_event_cancel(sim_event *e)
{
    if (e->pending == SIM_NOTIFY_DELTA) {   /* rare: unlink from the delta list */
        sim_kernel *k = e->k;
        sim_event **pp = &k->delta_head;
        while (*pp != e) pp = &(*pp)->delta_next;
        *pp = e->delta_next;
        if (k->delta_tailp == &e->delta_next) k->delta_tailp = pp;
    }
    e->pending = SIM_NOTIFY_NONE;    /* a timed-queue entry goes stale and is skipped */
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
    sim_kernel *k = p->k;
    if (p->queued && k->started) {   /* created while running (call right after sim_method_init): withdraw it */
        sim_process **pp = &k->run_head;
        while (*pp != p) pp = &(*pp)->run_next;
        *pp = p->run_next;
        if (k->run_tailp == &p->run_next) k->run_tailp = pp;
        p->queued = 0;
    }
}

void sim_sensitive(sim_process *p, sim_event *e)
{
    sim_kernel *k = p->k;
    if (!e->sens1) {
        e->sens1 = p;
        return;
    }
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
        if (old == p->timeout) sim_event_cancel(p->timeout);
    }
    p->dynamic = 1;
    p->dyn_event = e;
    p->dyn_next = NULL;
    sim_process **tail = &e->dyn_head;     /* waiter lists are short: append by walking */
    while (*tail) tail = &(*tail)->dyn_next;
    *tail = p;
}

void sim_next_trigger_at(sim_kernel *k, sim_time_ps delay_ps)
{
    sim_process *p = k->running;
    if (!p) sim_fatal("sim_next_trigger_at called outside a process");
    if (!p->timeout) {
        p->timeout = xrealloc(NULL, sizeof *p->timeout);
        sim_event_init(p->timeout, k, "timeout");
        k->timeouts = xrealloc(k->timeouts, (k->n_timeouts + 1) * sizeof *k->timeouts);
        k->timeouts[k->n_timeouts++] = p->timeout;
    }
    sim_next_trigger(k, p->timeout);
    sim_event_cancel(p->timeout);
    sim_event_notify_at(p->timeout, delay_ps);
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
    /* Immediate notifications append to the list while it is being walked. */
    uint64_t ran = 0;
    sim_process *p;
    while ((p = k->run_head)) {
        if (!(k->run_head = p->run_next)) k->run_tailp = &k->run_head;
        else __builtin_prefetch(k->run_head->ctx);   /* the next model's state, while this one runs */
        p->queued = 0;
        k->running = p;
        p->activations++;
        ran++;
        p->fn(p->ctx);
    }
    k->activations += ran;
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
    /* Triggering only makes processes runnable; it never notifies events. */
    sim_event *e = k->delta_head;
    k->delta_head = NULL;
    k->delta_tailp = &k->delta_head;
    while (e) {
        sim_event *next = e->delta_next;
        if (next) __builtin_prefetch(next->sens1);
        trigger(k, e);
        e = next;
    }
}

sim_time_ps sim_run(sim_kernel *k, sim_time_ps until_ps)
{
    k->stop_requested = false;
    if (k->trace) sim_trace_freeze(k->trace);   /* elaboration is over: the trace hierarchy is complete */
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
        while (k->heap_len && k->heap[0]->t == t) fire_slot(k);
        /* a stop from a timed-phase callback: finish this time's deltas, then return */
        if (k->stop_requested && !(k->run_head || k->upd_head || k->delta_head)) return k->now;
    }
}
