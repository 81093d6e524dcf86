/* The discrete-event kernel. Phase order and override rules: see kernel.h. */
#include "sim/kernel.h"
#include "sim/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The timed queue holds one slot per distinct time (gem5's TimeSlot), and in
 * each slot the entries in notification order. Notifying many events for the
 * same time (a clock edge, T tokens one hop ahead) is then an append. Slots
 * for the near future (less than CAL_BUCKETS << CAL_SHIFT ps ahead, rounded
 * to buckets) sit in a calendar: one bucket per 2^CAL_SHIFT ps, each a list
 * of slots sorted by time (ending in the sentinel no_slot), and a bitmap of
 * the buckets in use; finding, making and taking a slot there is a few
 * instructions, and a notification whose slot heads its bucket (nearly
 * always) appends to it at once. Slots further ahead
 * sit in a min-heap keyed by time with a hash from time to slot. As time
 * advances a heap slot comes within the calendar's reach but stays in the
 * heap: the earliest slot is the earlier of the calendar's first and the
 * heap's top, and a time has at most one slot (a push looks in the hash too
 * when the heap could hold its time). Within a slot, entries fire in (priority, order key, seq) order, so
 * same-time order is specified, never accidental. An event's entry has
 * fn = NULL; the event records the time and index of its live entry, so a
 * cancelled or superseded entry is recognised and skipped lazily. (A slot
 * for time t is made at most once while a live entry could point into it:
 * it is dropped early only when every entry in it is dead.) */
typedef struct timed_entry {
    uint64_t key;             /* (priority + 128) << 56 | order key << 32 | index in the slot (notification order) */
    sim_timed_fn fn;          /* NULL: obj is a sim_event to trigger */
    void *obj;
    uint64_t tag;
} timed_entry;

typedef struct time_slot {
    sim_time_ps t;
    struct time_slot *next;   /* in a calendar bucket: the next later slot */
    timed_entry *v;
    size_t n, cap;
    bool unsorted;            /* an entry was appended with a key below the one before it: sort before firing */
} time_slot;

/* The cold parts of events and processes (see kernel.h). */
struct sim_event_more {
    sim_sens_node *static_sens; /* static processes after sens1, in the order they were made sensitive */
    sim_process *dyn_head;    /* processes waiting on this event once (next_trigger), FIFO */
    struct sim_event_more *next_free; /* on the kernel's free list */
    const char *name;         /* the event's name while the event holds this record */
};

struct sim_process_cold {
    sim_kernel *k;
    const char *name;
    sim_process *dyn_next;    /* list of an event's dynamic waiters */
    sim_event *dyn_event;     /* event waited on by next_trigger(event), or NULL */
    sim_event *timeout;       /* next_trigger(delay) fires this; made on first use */
    sim_event *static1;       /* the first event it was made statically sensitive to */
    uint32_t n_static;        /* how many times sim_sensitive was called for it */
};

/* The calendar: 1024 buckets of 256 ps reach 262 ns ahead: a link's latency
 * plus a packet's serialisation, a few clock periods, and on the fabric a
 * 100 ns link plus a 4 KB packet at 400 GbE (82 ns) plus a switch's 100 ns
 * pipeline (32 ns, the old reach, sent nearly all of those to the heap:
 * 5 % of the fabric bench's instructions, callgrind). */
#define CAL_SHIFT 8
#define CAL_BUCKETS 1024

typedef struct slot_ref {
    sim_time_ps t;
    time_slot *slot;          /* NULL = empty bucket */
} slot_ref;

struct sim_kernel {
    sim_time_ps now;
    uint64_t deltas, activations;
    /* timed queue: the calendar (near), a min-heap of slots and a time -> slot
     * hash (far), a free list */
    time_slot *cal[CAL_BUCKETS];      /* each ends in &no_slot */
    uint64_t cal_used[CAL_BUCKETS / 64]; /* bit b: cal[b] is not empty */
    size_t cal_len;
    time_slot **heap;
    size_t heap_len, heap_cap;
    slot_ref *tab;
    size_t tab_cap, tab_len;  /* tab_cap is a power of two */
    time_slot **free_slots;
    sim_time_ps last_step_ps;  /* the time of the last timed step (sim_last_step_ps) */
    uint64_t *sort_keys;      /* sort_keys' scratch: two halves of sort_cap keys */
    size_t sort_cap;
    size_t n_free, cap_free;
    time_slot *last_slot;     /* the slot of the last push (most pushes go there again); never NULL */
    time_slot no_slot;        /* last_slot when there is none, and the end of every calendar bucket:
                               * at SIM_TIME_MAX and full (n == cap == 0), so never appended to */
    /* runnable processes and delta-notified events: intrusive FIFO lists
     * (the links live in the structs each step touches anyway). The last
     * element's link is not kept NULL: a phase cuts the list off whole and
     * terminates it then, so appending is two stores. The head is NULL
     * exactly when the list is empty. */
    sim_process *run_head, **run_tailp;
    sim_process *running;
    /* update requests, FIFO */
    sim_prim_channel *upd_head, *upd_tail;
    /* delta notifications, FIFO */
    sim_event *delta_head, **delta_tailp;
    /* A fused delta batch (see delta_notify): the events not yet triggered,
     * in notification order; NULL when no batch is being fused. */
    sim_event *fuse_rest;
    bool fusion_off;
    /* every process, for the initialisation phase */
    sim_process **procs;
    size_t n_procs, cap_procs;
    /* kernel-owned small records (sensitivity nodes, cold parts of events and
     * processes, timeout events): bump-allocated in chunks, freed with the kernel */
    void **chunks;
    size_t n_chunks;
    char *chunk_pos, *chunk_end;
    struct sim_event_more *free_more;   /* records of events whose last dynamic waiter left */
    bool started, stop_requested;
    struct sim_trace *trace;
    void (*time_hook)(void *, sim_time_ps);
    void *time_hook_ctx;
};

#define CHUNK_BYTES 16384

/* The kernel whose sim_run is running on this thread, or NULL. A
 * notification compares it with the event's kernel and, when equal (always,
 * unless a model reaches into another kernel or notifies before sim_run),
 * appends through it: the append's addresses then do not wait for the load
 * of e->k, which usually misses the cache (the event was last touched long
 * ago), and the CPU overlaps that miss with the following work. Measured on
 * the kernel_ring benchmark: about 10% of a delta hop. */
static _Thread_local sim_kernel *running_kernel;

/* Models embed these: a new field is a cache line for every model (kernel.h). */
_Static_assert(sizeof(void *) != 8 || (sizeof(sim_event) == 48 && sizeof(sim_process) == 40),
               "sim_event / sim_process grew: keep rarely used fields in the kernel-owned records");

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
    k->last_slot = &k->no_slot;
    k->no_slot.t = SIM_TIME_MAX;
    for (size_t b = 0; b < CAL_BUCKETS; b++) k->cal[b] = &k->no_slot;
    return k;
}

void sim_kernel_free(sim_kernel *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n_chunks; i++) free(k->chunks[i]);
    free(k->chunks);
    for (size_t i = 0; i < k->heap_len; i++) {
        free(k->heap[i]->v);
        free(k->heap[i]);
    }
    for (size_t b = 0; b < CAL_BUCKETS; b++)
        for (time_slot *s = k->cal[b], *next; s != &k->no_slot; s = next) {
            next = s->next;
            free(s->v);
            free(s);
        }
    for (size_t i = 0; i < k->n_free; i++) {
        free(k->free_slots[i]->v);
        free(k->free_slots[i]);
    }
    free(k->free_slots);
    free(k->sort_keys);
    free(k->tab);
    free(k->heap);
    free(k->procs);
    free(k);
}

/* Zeroed, pointer-aligned memory owned by the kernel. */
static void *kernel_alloc(sim_kernel *k, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if ((size_t)(k->chunk_end - k->chunk_pos) < n) {
        size_t sz = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        k->chunks = xrealloc(k->chunks, (k->n_chunks + 1) * sizeof *k->chunks);
        k->chunk_pos = k->chunks[k->n_chunks++] = xrealloc(NULL, sz);
        k->chunk_end = k->chunk_pos + sz;
    }
    void *p = k->chunk_pos;
    k->chunk_pos += n;
    memset(p, 0, n);
    return p;
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
    return top;
}

/* Whether time t (>= now) is within the calendar's reach. */
static inline bool cal_reaches(const sim_kernel *k, sim_time_ps t)
{
    return (t >> CAL_SHIFT) - (k->now >> CAL_SHIFT) < CAL_BUCKETS;
}

/* The calendar's earliest slot, or NULL. Every slot in it is at or after
 * now and less than CAL_BUCKETS buckets past now's bucket, so the first
 * bucket in use from now's bucket on, cyclically, holds it. */
static inline time_slot *cal_first(const sim_kernel *k)
{
    if (!k->cal_len) return NULL;
    size_t b = (size_t)(k->now >> CAL_SHIFT) & (CAL_BUCKETS - 1), w = b / 64;
    uint64_t used = k->cal_used[w] & (~0ULL << (b % 64));
    while (!used) {
        w = (w + 1) & (CAL_BUCKETS / 64 - 1);
        used = k->cal_used[w];
    }
    return k->cal[w * 64 + (size_t)__builtin_ctzll(used)];
}

/* The earliest slot (of the calendar and the heap), or NULL. */
static inline time_slot *queue_top(const sim_kernel *k)
{
    time_slot *c = cal_first(k);
    if (k->heap_len && (!c || k->heap[0]->t < c->t)) return k->heap[0];
    return c;
}

/* The slot for now, or NULL: as now is the earliest time, it heads now's
 * calendar bucket or the heap. (A callback may make one while its slot fires.) */
static inline time_slot *slot_at_now(const sim_kernel *k)
{
    time_slot *c = k->cal[(size_t)(k->now >> CAL_SHIFT) & (CAL_BUCKETS - 1)];
    if (c->t == k->now) return c;
    return k->heap_len && k->heap[0]->t == k->now ? k->heap[0] : NULL;
}

/* Takes `top` (queue_top's answer) out of the queue. */
static void queue_take(sim_kernel *k, time_slot *top)
{
    if (k->heap_len && k->heap[0] == top) {
        heap_take_top(k);
    } else {   /* the first in its bucket */
        size_t b = (size_t)(top->t >> CAL_SHIFT) & (CAL_BUCKETS - 1);
        k->cal[b] = top->next;
        if (top->next == &k->no_slot) k->cal_used[b / 64] &= ~(1ULL << (b % 64));
        k->cal_len--;
    }
    if (k->last_slot == top) k->last_slot = &k->no_slot;
}

static void slot_release(sim_kernel *k, time_slot *slot)
{
    slot->n = 0;
    slot->unsorted = false;
    if (k->n_free == k->cap_free) {
        k->cap_free = k->cap_free ? 2 * k->cap_free : 16;
        k->free_slots = xrealloc(k->free_slots, k->cap_free * sizeof *k->free_slots);
    }
    k->free_slots[k->n_free++] = slot;
}

static inline uint64_t timed_key(int8_t prio, uint32_t index) { return ((uint64_t)(uint8_t)(prio + 128) << 56) | index; }
static inline uint64_t timed_key_ordered(int8_t prio, uint32_t order_key, uint32_t index)
{
    return timed_key(prio, index) | (uint64_t)order_key << 32;
}

/* Entry `index` was just appended: the slot needs sorting if it came in below the one before. */
static inline void note_order(time_slot *slot, uint32_t index)
{
    if (index && slot->v[index - 1].key > slot->v[index].key) slot->unsorted = true;
}

static time_slot *slot_new(sim_kernel *k, sim_time_ps t)
{
    time_slot *slot;
    if (k->n_free) slot = k->free_slots[--k->n_free];
    else slot = xrealloc(NULL, sizeof *slot), memset(slot, 0, sizeof *slot);
    slot->t = t;
    return slot;
}

/* The slot for time t, made if there is none. */
static time_slot *slot_for(sim_kernel *k, sim_time_ps t)
{
    /* a heap slot at or after the heap's top may be for t */
    time_slot *slot = k->heap_len && k->heap[0]->t <= t ? tab_find(k, t) : NULL;
    if (slot) return slot;
    if (!cal_reaches(k, t)) {
        slot = slot_new(k, t);
        heap_insert(k, slot);
        tab_put(k, slot);
        return slot;
    }
    size_t b = (size_t)(t >> CAL_SHIFT) & (CAL_BUCKETS - 1);
    time_slot **pp = &k->cal[b];
    while ((*pp)->t < t) pp = &(*pp)->next;
    if ((*pp)->t == t && *pp != &k->no_slot) return *pp;
    slot = slot_new(k, t);
    slot->next = *pp;
    *pp = slot;
    k->cal_used[b / 64] |= 1ULL << (b % 64);
    k->cal_len++;
    return slot;
}

/* Appends an entry at time t: finds or makes the slot, grows it. The common
 * case (the same time as the last push, room left) is inlined in
 * sim_event_notify_at. */
static void timed_push(sim_kernel *k, sim_time_ps t, int8_t prio, uint32_t order_key, sim_timed_fn fn, void *obj, uint64_t tag)
{
    time_slot *slot = k->last_slot;
    if (slot->t != t || slot == &k->no_slot) {
        slot = slot_for(k, t);
        k->last_slot = slot;
    }
    if (slot->n == slot->cap) {
        slot->cap = slot->cap ? 2 * slot->cap : 8;
        slot->v = xrealloc(slot->v, slot->cap * sizeof *slot->v);
    }
    uint32_t index = (uint32_t)slot->n++;
    timed_entry *e = &slot->v[index];
    e->key = timed_key_ordered(prio, order_key, index);
    e->fn = fn;
    e->obj = obj;
    e->tag = tag;
    note_order(slot, index);
    if (!fn) ((sim_event *)obj)->timed_index = index;
}

void sim_schedule_callback(sim_kernel *k, sim_time_ps delay_ps, int8_t priority, sim_timed_fn fn, void *obj, uint64_t tag)
{
    if (!fn) sim_fatal("sim_schedule_callback: NULL callback");
    timed_push(k, k->now + delay_ps, priority, 0, fn, obj, tag);
}

/* An event's entry in the slot for time t is live when the event is still
 * pending at t with this entry's index. */
static inline bool event_entry_live(const sim_event *ev, sim_time_ps t, uint64_t key)
{
    return ev->pending == SIM_NOTIFY_TIMED && ev->when_ps == t && ev->timed_index == (uint32_t)key;
}

static inline bool entry_live(const timed_entry *e, sim_time_ps t)
{
    return e->fn || event_entry_live(e->obj, t, e->key);
}

/* The earliest slot with a live entry, or NULL. Slots holding only cancelled
 * entries are dropped, so time never advances to them. */
static time_slot *next_live_slot(sim_kernel *k)
{
    time_slot *top;
    while ((top = queue_top(k))) {
        for (size_t i = 0; i < top->n; i++)
            if (entry_live(&top->v[i], top->t)) return top;
        queue_take(k, top);
        slot_release(k, top);
    }
    return NULL;
}

sim_time_ps sim_next_time(sim_kernel *k)
{
    time_slot *top = next_live_slot(k);
    return top ? top->t : SIM_TIME_MAX;
}

/* A slot is sorted only when an entry came in below the one before it (a
 * priority, or order keys out of order: fabric links waking at one time, which
 * synchronous traffic makes slots of a hundred). What is sorted is the keys
 * alone, 8 bytes each, into the kernel's scratch array: the low 32 bits of a
 * key are its entry's index, so the sorted keys are the firing order.
 * Insertion sort in runs of 16, then bottom-up merges; no comparison
 * callback. Keys are unique. Returns the sorted keys (k->sort_keys). */
static const uint64_t *sort_keys(sim_kernel *k, const timed_entry *v, size_t n)
{
    enum { RUN = 16 };
    if (k->sort_cap < n) {
        k->sort_cap = 2 * n;
        k->sort_keys = xrealloc(k->sort_keys, 2 * k->sort_cap * sizeof *k->sort_keys);
    }
    uint64_t *from = k->sort_keys, *to = k->sort_keys + k->sort_cap;
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo; i < hi; i++) {
            uint64_t key = v[i].key;
            size_t j = i;
            for (; j > lo && from[j - 1] > key; j--) from[j] = from[j - 1];
            from[j] = key;
        }
    }
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, a = lo, b = mid, o = lo;
            while (a < mid && b < hi) to[o++] = from[a] < from[b] ? from[a++] : from[b++];
            while (a < mid) to[o++] = from[a++];
            while (b < hi) to[o++] = from[b++];
        }
        uint64_t *t = from;
        from = to;
        to = t;
    }
    return from;
}

/* --- processes and events ------------------------------------------------ */
static inline void run_append(sim_kernel *k, sim_process *p)
{
    p->state |= SIM_PROC_QUEUED;
    *k->run_tailp = p;
    k->run_tailp = &p->run_next;
}

static inline void make_runnable(sim_kernel *k, sim_process *p)
{
    if (!(p->state & SIM_PROC_QUEUED)) run_append(k, p);
}

/* sim_event.simple: the fast trigger applies when exactly one process is
 * statically sensitive and none waits dynamically (EVENT_SIMPLE); when that
 * process is also sensitive to no other event, a delta batch may run it as
 * the event's turn comes (EVENT_SOLE, see delta_notify). Recomputed whenever
 * those lists change. */
enum { EVENT_GENERAL = 0, EVENT_SIMPLE = 1, EVENT_SOLE = 2 };

static inline void event_update_simple(sim_event *e)
{
    const struct sim_event_more *m = e->has_more ? e->u.more : NULL;
    if (!e->sens1 || (m && (m->static_sens || m->dyn_head))) e->simple = EVENT_GENERAL;
    else e->simple = e->sens1->cold->n_static == 1 ? EVENT_SOLE : EVENT_SIMPLE;
}

/* The event's kernel-owned record, made on first need; the event's name
 * moves into it (the name and the record share the event's last word). */
static struct sim_event_more *event_more(sim_event *e)
{
    if (!e->has_more) {
        sim_kernel *k = e->k;
        struct sim_event_more *m = k->free_more;
        if (m) k->free_more = m->next_free;
        else m = kernel_alloc(k, sizeof *m);
        m->name = e->u.name;
        e->u.more = m;
        e->has_more = 1;
    }
    return e->u.more;
}

const char *sim_event_name(const sim_event *e) { return e->has_more ? e->u.more->name : e->u.name; }

/* Called when an event's dynamic waiters are gone: a record holding nothing
 * else goes back to the kernel, so short-lived events that processes wait on
 * once (a transaction's "done") do not grow the kernel's memory. */
static void event_waiters_gone(sim_event *e)
{
    struct sim_event_more *m = e->has_more ? e->u.more : NULL;
    if (m && !m->static_sens && !m->dyn_head) {
        sim_kernel *k = e->k;
        m->next_free = k->free_more;
        k->free_more = m;
        e->u.name = m->name;
        e->has_more = 0;
    }
    event_update_simple(e);
}

static void unlink_dynamic(sim_process *p)
{
    struct sim_process_cold *c = p->cold;
    sim_event *e = c->dyn_event;
    if (!e) return;
    sim_process *prev = NULL;
    for (sim_process *q = e->u.more->dyn_head; q; prev = q, q = q->cold->dyn_next) {
        if (q != p) continue;
        if (prev) prev->cold->dyn_next = c->dyn_next; else e->u.more->dyn_head = c->dyn_next;
        break;
    }
    c->dyn_next = NULL;
    c->dyn_event = NULL;
    event_waiters_gone(e);
}

/* Every case but the fast one: no, several static processes, dynamic waiters. */
static void trigger_general(sim_kernel *k, sim_event *e)
{
    sim_process *p = e->sens1;
    if (p && !p->state) run_append(k, p);
    if (!e->has_more) return;
    for (sim_sens_node *n = e->u.more->static_sens; n; n = n->next)
        if (!n->proc->state) run_append(k, n->proc);
    p = e->u.more->dyn_head;
    if (!p) return;
    e->u.more->dyn_head = NULL;
    event_waiters_gone(e);
    while (p) {
        struct sim_process_cold *c = p->cold;
        sim_process *next = c->dyn_next;
        c->dyn_next = NULL;
        c->dyn_event = NULL;
        p->state &= (uint8_t)~SIM_PROC_DYNAMIC;
        if (c->timeout && e != c->timeout && c->timeout->pending) sim_event_cancel(c->timeout);
        make_runnable(k, p);
        p = next;
    }
}

/* The hot path: one statically sensitive process, no dynamic waiters; it
 * wakes unless already runnable or waiting on a dynamic trigger (state 0).
 * A process never re-triggers itself by an immediate notification (SystemC). */
static inline void trigger(sim_kernel *k, sim_event *e)
{
    e->pending = SIM_NOTIFY_NONE;
    if (__builtin_expect(e->simple, 1)) {
        sim_process *p = e->sens1;
        if (!p->state) run_append(k, p);
    } else {
        trigger_general(k, e);
    }
}

/* The same for a batch of triggers (delta notification, a time slot): the
 * runnable list's tail stays in a register; *tailp is k->run_tailp, written
 * back around the general case and by the caller at the end. */
static inline void trigger_batch(sim_kernel *k, sim_event *e, sim_process ***tailp)
{
    e->pending = SIM_NOTIFY_NONE;
    if (__builtin_expect(e->simple, 1)) {
        sim_process *p = e->sens1;
        if (!p->state) {
            p->state = SIM_PROC_QUEUED;
            **tailp = p;
            *tailp = &p->run_next;
        }
    } else {
        k->run_tailp = *tailp;
        trigger_general(k, e);
        *tailp = k->run_tailp;
    }
}

/* A fused delta batch is being run and some call could observe or change
 * what its remaining triggers would do: trigger them all now, in order, as
 * the delta phase would have done before any process ran. From here on the
 * batch is an ordinary one (its processes are on the runnable list). */
static __attribute__((noinline)) void fuse_complete(sim_kernel *k)
{
    sim_event *e = k->fuse_rest;
    k->fuse_rest = NULL;
    sim_process **tail = k->run_tailp;
    while (e) {
        sim_event *next = e->delta_next;
        trigger_batch(k, e, &tail);
        e = next;
    }
    k->run_tailp = tail;
}

/* Every kernel call that reads or changes trigger state calls this first. */
static inline void fuse_settle(sim_kernel *k)
{
    if (__builtin_expect(k->fuse_rest != NULL, 0)) fuse_complete(k);
}

/* The entries of sim_process_wake_at: fire_slot recognises this callback and
 * wakes the process inline; called directly it does the same. */
static void wake_entry(void *obj, uint64_t tag)
{
    (void)tag;
    sim_process *p = obj;
    if (!p->state) run_append(p->cold->k, p);
}

/* A wake-up of p at now + delay_ps with an order key (0: none). The common
 * case of notify_at_in: the slot of the last push, or the head of t's
 * calendar bucket, with room. */
static inline void wake_at_keyed(sim_kernel *k, sim_process *p, sim_time_ps delay_ps, uint32_t order_key)
{
    const sim_time_ps t = k->now + delay_ps;
    time_slot *slot = k->last_slot;
    if (slot->t != t) slot = k->last_slot = k->cal[(size_t)(t >> CAL_SHIFT) & (CAL_BUCKETS - 1)];
    if (__builtin_expect(slot->t == t && slot->n < slot->cap, 1)) {
        uint32_t index = (uint32_t)slot->n++;
        timed_entry *en = &slot->v[index];
        en->key = timed_key_ordered(0, order_key, index);
        en->fn = wake_entry;
        en->obj = p;
        note_order(slot, index);
    } else {
        timed_push(k, t, 0, order_key, wake_entry, p, 0);
    }
}

inline void sim_process_wake_at(sim_kernel *k, sim_process *p, sim_time_ps delay_ps)
{
    if (!delay_ps) sim_fatal("sim_process_wake_at: zero delay (use an event's delta notification)");
    wake_at_keyed(k, p, delay_ps, 0);
}

inline void sim_process_wake_at_ordered(sim_kernel *k, sim_process *p, sim_time_ps delay_ps, uint32_t order_key)
{
    if (!delay_ps) sim_fatal("sim_process_wake_at_ordered: zero delay (use an event's delta notification)");
    if (order_key > SIM_ORDER_KEY_MAX) sim_fatal("sim_process_wake_at_ordered: order key %u above %u", order_key, SIM_ORDER_KEY_MAX);
    wake_at_keyed(k, p, delay_ps, order_key);
}

/* Fires every entry of the earliest slot (queue_top's answer; the caller has
 * set now to its time). */
static void fire_slot(sim_kernel *k, time_slot *slot)
{
    queue_take(k, slot);
    const uint64_t *order = slot->unsorted ? sort_keys(k, slot->v, slot->n) : NULL;
    sim_process **tail = k->run_tailp;
    for (size_t i = 0; i < slot->n; i++) {
        const timed_entry *en = &slot->v[order ? (uint32_t)order[i] : i];
        if (!en->fn) {
            sim_event *e = en->obj;
            if (event_entry_live(e, slot->t, en->key)) trigger_batch(k, e, &tail);
        } else if (en->fn == wake_entry) {   /* as trigger_batch for an event whose sole process is p */
            sim_process *p = en->obj;
            if (!p->state) {
                p->state = SIM_PROC_QUEUED;
                *tail = p;
                tail = &p->run_next;
            }
        } else {
            k->run_tailp = tail;
            en->fn(en->obj, en->tag);
            tail = k->run_tailp;
        }
    }
    k->run_tailp = tail;
    slot_release(k, slot);
}

void sim_event_init(sim_event *e, sim_kernel *k, const char *name)
{
    memset(e, 0, sizeof *e);
    e->k = k;
    e->u.name = name;
}

void sim_event_notify(sim_event *e)
{
    /* Immediate: cancels any pending notification and triggers now (SystemC).
     * The running process is not re-triggered by its own notification: it is
     * marked queued for the moment, so the trigger passes it over. */
    if (!e->pending && !sim_event_has_waiters(e)) return;   /* nothing to cancel, nobody to wake (e.g. a link's credit_returned) */
    sim_kernel *k = e->k;
    fuse_settle(k);
    if (e->pending) sim_event_cancel(e);
    sim_process *self = k->running;
    if (!self) {
        trigger(k, e);
        return;
    }
    uint8_t was_queued = self->state & SIM_PROC_QUEUED;
    self->state |= SIM_PROC_QUEUED;
    trigger(k, e);
    /* keep what the trigger did to the dynamic bit (its own dynamic event consumes the wait) */
    self->state = (uint8_t)((self->state & ~SIM_PROC_QUEUED) | was_queued);
}

/* Whether e has a delta notification pending, as the unfused phases would
 * have it: an event of a fused batch not yet reached is still marked DELTA
 * though its trigger is due, so the batch is settled first. */
static inline bool delta_pending(sim_kernel *k, const sim_event *e)
{
    if (e->pending != SIM_NOTIFY_DELTA) return false;
    fuse_settle(k);
    return e->pending == SIM_NOTIFY_DELTA;
}

/* The notifications below meet a DELTA mark during a fused batch: settle it,
 * then notify again. Out of line and as tail calls, so the common path of a
 * notification keeps no registers for them. */
static void notify_delta_in(sim_kernel *k, sim_event *e);
static void notify_at_in(sim_kernel *k, sim_event *e, sim_time_ps delay_ps);
static __attribute__((noinline)) void notify_delta_settling(sim_kernel *k, sim_event *e)
{
    fuse_complete(k);
    notify_delta_in(k, e);
}
static __attribute__((noinline)) void notify_at_settling(sim_kernel *k, sim_event *e, sim_time_ps delay_ps)
{
    fuse_complete(k);
    notify_at_in(k, e, delay_ps);
}

static inline void notify_delta_in(sim_kernel *k, sim_event *e)
{
    if (e->pending == SIM_NOTIFY_DELTA) {
        if (__builtin_expect(k->fuse_rest != NULL, 0)) notify_delta_settling(k, e);
        return;
    }
    e->pending = SIM_NOTIFY_DELTA;    /* delta beats a pending timed one (its entry goes stale) */
    *k->delta_tailp = e;
    k->delta_tailp = &e->delta_next;
}

static inline void notify_at_in(sim_kernel *k, sim_event *e, sim_time_ps delay_ps)
{
    if (delay_ps == 0) {
        notify_delta_in(k, e);
        return;
    }
    sim_time_ps t = k->now + delay_ps;
    if (e->pending) {
        if (e->pending == SIM_NOTIFY_DELTA) {                      /* delta beats timed */
            if (__builtin_expect(k->fuse_rest != NULL, 0)) notify_at_settling(k, e, delay_ps);
            return;
        }
        if (e->when_ps <= t) return;                               /* an earlier one stands */
    }
    e->pending = SIM_NOTIFY_TIMED;
    e->when_ps = t;
    /* the slot of the last push, else the head of t's calendar bucket: t's
     * slot if t has one in the calendar (nearly always) */
    time_slot *slot = k->last_slot;
    if (slot->t != t) slot = k->last_slot = k->cal[(size_t)(t >> CAL_SHIFT) & (CAL_BUCKETS - 1)];
    if (__builtin_expect(slot->t == t && slot->n < slot->cap, 1)) {   /* the common case: append */
        uint32_t index = (uint32_t)slot->n++;
        timed_entry *en = &slot->v[index];
        en->key = timed_key(e->priority, index);
        en->fn = NULL;
        en->obj = e;
        e->timed_index = index;
        note_order(slot, index);
    } else {
        timed_push(k, t, e->priority, 0, NULL, e, 0);
    }
}

/* The rare cases of the two below: not from inside this thread's sim_run of
 * the event's kernel (kept out of line: see running_kernel). */
static __attribute__((noinline)) void notify_delta_other(sim_event *e) { notify_delta_in(e->k, e); }
static __attribute__((noinline)) void notify_at_other(sim_event *e, sim_time_ps delay_ps)
{
    notify_at_in(e->k, e, delay_ps);
}

void sim_event_notify_delta(sim_event *e)
{
    sim_kernel *k = running_kernel;
    if (__builtin_expect(e->k != k, 0)) notify_delta_other(e);
    else notify_delta_in(k, e);
}

void sim_event_notify_at(sim_event *e, sim_time_ps delay_ps)
{
    sim_kernel *k = running_kernel;
    if (__builtin_expect(e->k != k, 0)) notify_at_other(e, delay_ps);
    else notify_at_in(k, e, delay_ps);
}

bool sim_event_pending(const sim_event *e)
{
    if (e->pending == SIM_NOTIFY_DELTA) return delta_pending(e->k, e);
    return e->pending != SIM_NOTIFY_NONE;
}

void sim_event_cancel(sim_event *e)
{
    sim_kernel *k = e->k;
    if (delta_pending(k, e)) {   /* rare: unlink from the delta list */
        sim_event **pp = &k->delta_head;
        while (*pp != e) pp = &(*pp)->delta_next;
        if (k->delta_tailp == &e->delta_next) {   /* the last one (its link is not kept NULL) */
            k->delta_tailp = pp;
            *pp = NULL;                             /* the head stays NULL when the list is empty */
        } else {
            *pp = e->delta_next;
        }
    }
    e->pending = SIM_NOTIFY_NONE;    /* a timed-queue entry goes stale and is skipped */
}

void sim_method_init(sim_process *p, sim_kernel *k, const char *name, sim_method_fn fn, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->cold = kernel_alloc(k, sizeof *p->cold);
    p->cold->k = k;
    p->cold->name = name;
    p->fn = fn;
    p->ctx = ctx;
    p->initialize = 1;
    if (k->n_procs == k->cap_procs) {
        k->cap_procs = k->cap_procs ? 2 * k->cap_procs : 64;
        k->procs = xrealloc(k->procs, k->cap_procs * sizeof *k->procs);
    }
    k->procs[k->n_procs++] = p;
    if (k->started) {   /* created while running: initialised at once, after the batch */
        fuse_settle(k);
        make_runnable(k, p);
    }
}

void sim_dont_initialize(sim_process *p)
{
    p->initialize = 0;
    sim_kernel *k = p->cold->k;
    fuse_settle(k);
    if ((p->state & SIM_PROC_QUEUED) && k->started) {   /* created while running (call right after sim_method_init): withdraw it */
        sim_process **pp = &k->run_head;
        while (*pp != p) pp = &(*pp)->run_next;
        if (k->run_tailp == &p->run_next) {   /* the last one (its link is not kept NULL) */
            k->run_tailp = pp;
            *pp = NULL;                         /* the head stays NULL when the list is empty */
        } else {
            *pp = p->run_next;
        }
        p->state &= (uint8_t)~SIM_PROC_QUEUED;
    }
}

void sim_sensitive(sim_process *p, sim_event *e)
{
    struct sim_process_cold *c = p->cold;
    fuse_settle(c->k);
    if (++c->n_static == 1) c->static1 = e;
    else if (c->n_static == 2) event_update_simple(c->static1);   /* no longer its only event */
    if (!e->sens1) {
        e->sens1 = p;
        event_update_simple(e);
        return;
    }
    sim_sens_node *n = kernel_alloc(p->cold->k, sizeof *n);
    n->proc = p;
    /* append: processes sensitive to one event wake in the order they were made sensitive */
    sim_sens_node **tail = &event_more(e)->static_sens;
    while (*tail) tail = &(*tail)->next;
    *tail = n;
    e->simple = 0;
}

void sim_next_trigger(sim_kernel *k, sim_event *e)
{
    sim_process *p = k->running;
    if (!p) sim_fatal("sim_next_trigger called outside a process");
    fuse_settle(k);
    struct sim_process_cold *c = p->cold;
    if (c->dyn_event) {                      /* the last call in an activation wins */
        sim_event *old = c->dyn_event;
        unlink_dynamic(p);
        if (old == c->timeout) sim_event_cancel(c->timeout);
    }
    p->state |= SIM_PROC_DYNAMIC;
    c->dyn_event = e;
    c->dyn_next = NULL;
    sim_process **tail = &event_more(e)->dyn_head;   /* waiter lists are short: append by walking */
    while (*tail) tail = &(*tail)->cold->dyn_next;
    *tail = p;
    e->simple = 0;
}

void sim_next_trigger_at(sim_kernel *k, sim_time_ps delay_ps)
{
    sim_process *p = k->running;
    if (!p) sim_fatal("sim_next_trigger_at called outside a process");
    struct sim_process_cold *c = p->cold;
    if (!c->timeout) {
        c->timeout = kernel_alloc(k, sizeof *c->timeout);
        sim_event_init(c->timeout, k, "timeout");
    }
    sim_next_trigger(k, c->timeout);
    sim_event_cancel(c->timeout);
    sim_event_notify_at(c->timeout, delay_ps);
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
/* Runs a fused delta batch (see delta_notify): each event is triggered when
 * its turn comes and, if EVENT_SOLE, its process runs at once, with no
 * runnable list in between. That is the order the literal phases give
 * (trigger every event, then run the processes in that order) because
 * nothing a process does can see or change a trigger still due: every kernel
 * call that could settles the batch first (fuse_settle), an event that is not
 * EVENT_SOLE settles it here, and a sole process is triggered by its one
 * event only, so it cannot have run earlier in the batch. Returns the
 * activations. */
static uint64_t run_fused(sim_kernel *k)
{
    uint64_t ran = 0;
    sim_event *e;
    while ((e = k->fuse_rest)) {
        if (__builtin_expect(e->simple != EVENT_SOLE, 0)) {
            if (e->sens1 || e->has_more) {   /* processes to trigger the literal way */
                fuse_complete(k);
                break;
            }
            k->fuse_rest = e->delta_next;    /* no process: its trigger does nothing (e.g. a link's "delivered") */
            e->pending = SIM_NOTIFY_NONE;
            continue;
        }
        k->fuse_rest = e->delta_next;
        e->pending = SIM_NOTIFY_NONE;
        sim_process *p = e->sens1;
        if (p->state) continue;   /* waiting on a dynamic trigger (nothing is queued during a batch) */
        k->running = p;
        ran++;
        p->fn(p->ctx);
    }
    return ran;
}

/* Returns the activations. */
static uint64_t evaluate(sim_kernel *k)
{
    /* Immediate notifications append to a fresh list while a batch runs; they
     * run after it, in the same evaluate phase. */
    uint64_t ran = k->fuse_rest ? run_fused(k) : 0;
    sim_process *p;
    while ((p = k->run_head)) {
        *k->run_tailp = NULL;
        k->run_head = NULL;
        k->run_tailp = &k->run_head;
        do {
            sim_process *next = p->run_next;
            p->state = 0;                     /* was exactly QUEUED: a queued process never waits dynamically */
            k->running = p;
            ran++;
            p->fn(p->ctx);
            p = next;
        } while (p);
    }
    k->activations += ran;
    k->running = NULL;
    return ran;
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

/* Triggers the delta-notified events. When nothing else is runnable, the
 * batch is fused instead: it is kept as it is and the next evaluate triggers
 * each event as its turn comes (run_fused), one pass instead of a trigger
 * pass and a run pass over the same events and processes. */
static void delta_notify(sim_kernel *k)
{
    /* Triggering only makes processes runnable; it never notifies events. */
    sim_event *e = k->delta_head;
    if (!e) return;
    *k->delta_tailp = NULL;
    k->delta_head = NULL;
    k->delta_tailp = &k->delta_head;
    if (!k->run_head && !k->fusion_off) {
        k->fuse_rest = e;
        return;
    }
    sim_process **tail = k->run_tailp;
    do {
        sim_event *next = e->delta_next;
        trigger_batch(k, e, &tail);
        e = next;
    } while (e);
    k->run_tailp = tail;
}

static sim_time_ps run_loop(sim_kernel *k, sim_time_ps until_ps)
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
        while (k->run_head || k->fuse_rest || k->upd_head || k->delta_head) {
            /* A fused batch that woke nobody is a delta notification that
             * left nothing runnable: not a delta cycle of its own. */
            if (!evaluate(k) && !k->upd_head && !k->delta_head) break;
            update(k);
            delta_notify(k);
            k->deltas++;
            if (k->stop_requested) return k->now;
        }
        time_slot *top = next_live_slot(k);
        sim_time_ps t = top ? top->t : SIM_TIME_MAX;
        if (t > until_ps || t == SIM_TIME_MAX) {
            /* like sc_start(duration) (SC_RUN_TO_TIME): time stands at the limit even
             * when activity ended earlier, so a later call resumes from there */
            if (until_ps != SIM_TIME_MAX && until_ps > k->now) k->now = until_ps;
            return k->now;
        }
        k->now = t;
        k->last_step_ps = t;
        if (k->time_hook) k->time_hook(k->time_hook_ctx, t);
        do fire_slot(k, top);   /* then any slot a callback made for now */
        while ((top = slot_at_now(k)));
        /* a stop from a timed-phase callback: finish this time's deltas, then return */
        if (k->stop_requested && !(k->run_head || k->fuse_rest || k->upd_head || k->delta_head)) return k->now;
    }
}

static void (*run_gate)(void);
void sim_set_run_gate(void (*gate)(void)) { run_gate = gate; }

sim_time_ps sim_last_step_ps(const sim_kernel *k) { return k->last_step_ps; }

sim_time_ps sim_run(sim_kernel *k, sim_time_ps until_ps)
{
    if (run_gate) run_gate();
    sim_kernel *outer = running_kernel;   /* a kernel run from inside another one's process */
    running_kernel = k;
    sim_time_ps t = run_loop(k, until_ps);
    running_kernel = outer;
    return t;
}

void sim_kernel_set_delta_fusion(sim_kernel *k, bool on)
{
    fuse_settle(k);
    k->fusion_off = !on;
}
