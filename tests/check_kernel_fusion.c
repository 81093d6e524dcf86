/* Delta-batch fusion (sim_kernel_set_delta_fusion) must not change anything
 * a model can see. Random models run twice, fused and literal, and must log
 * the same activations, at the same times and deltas, with the same answers
 * to sim_event_pending. The processes do everything that could tell the two
 * apart: notify (delta, timed, immediate) and cancel events whose turn in the
 * current batch is still to come, wait on them dynamically, ask whether they
 * are pending, make new processes and stop the run mid-batch (the driver then
 * notifies and asks from outside before resuming), with events of one, two or
 * no processes and processes sensitive to one or two events. Plus two cases
 * spelled out with the order IEEE 1666 gives. */
#include "check_fixture.h"

#include <stdlib.h>

#define N_EVENTS 8
#define N_PROCS_START 10
#define N_PROCS_MAX 16

typedef struct rproc {
    sim_process p;
    int id;
} rproc;

typedef struct world {
    sim_kernel *k;
    sim_event ev[N_EVENTS];
    rproc pr[N_PROCS_MAX];
    int np;
    uint64_t rng;
    long budget;              /* activations that still act; then the model winds down */
    uint64_t *log;
    size_t n, cap;
} world;

static world w;

static unsigned rnd(unsigned n)
{
    w.rng ^= w.rng << 13;
    w.rng ^= w.rng >> 7;
    w.rng ^= w.rng << 17;
    return (unsigned)(w.rng % n);
}

static void log_u64(uint64_t v)
{
    if (w.n == w.cap) {
        w.cap = w.cap ? 2 * w.cap : 1024;
        w.log = realloc(w.log, w.cap * sizeof *w.log);
        ck_assert_ptr_nonnull(w.log);
    }
    w.log[w.n++] = v;
}

static void log_rec3(uint64_t kind, uint64_t a, uint64_t b)
{
    log_u64(kind);
    log_u64(a);
    log_u64(b);
    log_u64(sim_now(w.k));
    log_u64(sim_delta_count(w.k));
}

static sim_event *any_event(void) { return &w.ev[rnd(N_EVENTS)]; }

static void add_process(void);

/* One random kernel call, as a process or (outside) the driver would make it. */
static void random_call(bool in_process)
{
    unsigned c = rnd(100);
    sim_event *e = any_event();
    if (c < 30) sim_event_notify_delta(e);
    else if (c < 48) sim_event_notify_at(e, SIM_NS(rnd(3)));
    else if (c < 56) sim_event_notify(e);
    else if (c < 64) sim_event_cancel(e);
    else if (c < 74) log_rec3(3, (uint64_t)(e - w.ev), sim_event_pending(e));
    else if (!in_process) return;
    else if (c < 82) sim_next_trigger(w.k, e);
    else if (c < 86) sim_next_trigger_at(w.k, SIM_NS(rnd(3)));
    else if (c < 88) add_process();
    else if (c < 89) sim_stop(w.k);
}

static void act(void *ctx)
{
    const rproc *r = ctx;
    log_rec3(1, (uint64_t)r->id, 0);
    if (w.budget <= 0) return;
    w.budget--;
    for (unsigned a = 1 + rnd(3); a; a--) random_call(true);
}

/* Sensitive to one event mostly (a sole trigger, the fused case), sometimes
 * two (one of them shared), sometimes none (runs by next_trigger only). */
static void add_process(void)
{
    if (w.np == N_PROCS_MAX) return;
    rproc *r = &w.pr[w.np];
    r->id = w.np++;
    sim_method_init(&r->p, w.k, "p", act, r);
    unsigned s = rnd(10);
    if (s < 8) sim_sensitive(&r->p, &w.ev[r->id % N_EVENTS]);
    if (s >= 6) sim_sensitive(&r->p, any_event());
    if (rnd(3) == 0) sim_dont_initialize(&r->p);
}

static void run_world(uint64_t seed, bool fusion)
{
    free(w.log);
    memset(&w, 0, sizeof w);
    w.rng = seed * 0x9E3779B97F4A7C15ull + 1;
    w.budget = 300;
    w.k = sim_kernel_new();
    sim_kernel_set_delta_fusion(w.k, fusion);
    for (int i = 0; i < N_EVENTS; i++) sim_event_init(&w.ev[i], w.k, "e");
    for (int i = 0; i < N_PROCS_START; i++) add_process();
    for (unsigned a = rnd(6); a; a--) random_call(false);
    for (int round = 0; round < 200; round++) {
        sim_time_ps t = sim_run(w.k, SIM_TIME_MAX);
        log_rec3(2, t, 0);
        if (!sim_stopped(w.k)) break;
        for (unsigned a = rnd(4); a; a--) random_call(false);   /* between runs, mid-batch */
    }
    log_rec3(4, sim_event_count(w.k), 0);
    sim_kernel_free(w.k);
}

START_TEST(test_fusion_is_invisible)
{
    size_t words = 0;
    for (uint64_t seed = 1; seed <= 400; seed++) {
        run_world(seed, false);
        uint64_t *literal = w.log;
        size_t n = w.n;
        w.log = NULL;
        run_world(seed, true);
        ck_assert_msg(n == w.n, "seed %llu: %zu log words literal, %zu fused", (unsigned long long)seed, n, w.n);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(literal[i] == w.log[i], "seed %llu: logs differ at word %zu", (unsigned long long)seed, i);
        words += n;
        free(literal);
    }
    ck_assert_uint_gt(words, 400 * 1000);   /* the models did something: about 300 records each */
    free(w.log);
    w.log = NULL;
}
END_TEST

/* --- two cases with their expected order written out ---------------------- */
static sim_event ev_a, ev_b, ev_c;
static struct lproc { sim_process p; const char *name; void (*extra)(void); } pa, pb, pc;

static void lproc_fn(void *ctx)
{
    struct lproc *l = ctx;
    log_add(k, l->name, 0);
    if (l->extra) l->extra();
    l->extra = NULL;   /* once */
}

static void lproc_init(struct lproc *l, const char *name, sim_event *e, void (*extra)(void))
{
    l->name = name;
    l->extra = extra;
    sim_method_init(&l->p, k, name, lproc_fn, l);
    sim_sensitive(&l->p, e);
    sim_dont_initialize(&l->p);
}

static void a_renotifies_c(void) { sim_event_notify_delta(&ev_c); }
static void a_wakes_c_at_once(void) { sim_event_notify(&ev_c); }

static void three_in_one_batch(void (*a_extra)(void))
{
    sim_event_init(&ev_a, k, "a");
    sim_event_init(&ev_b, k, "b");
    sim_event_init(&ev_c, k, "c");
    lproc_init(&pa, "a", &ev_a, a_extra);
    lproc_init(&pb, "b", &ev_b, NULL);
    lproc_init(&pc, "c", &ev_c, NULL);
    sim_event_notify_delta(&ev_a);
    sim_event_notify_delta(&ev_c);
    sim_event_notify_delta(&ev_b);   /* one batch: a, c, b */
}

/* c's notification in the batch was triggered before a ran, so a's new one
 * is a notification of its own: c runs again in the next delta. */
START_TEST(test_renotify_later_in_batch)
{
    three_in_one_batch(a_renotifies_c);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str_delta(), "a@0/0 c@0/0 b@0/0 c@0/1");
}
END_TEST

/* c was made runnable by the batch before a ran: a's immediate notification
 * finds it runnable already, and c keeps its place before b. */
START_TEST(test_immediate_to_later_in_batch)
{
    three_in_one_batch(a_wakes_c_at_once);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_str_eq(log_str_delta(), "a@0/0 c@0/0 b@0/0");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernel_fusion");
    TCase *tc = tcase_create("fusion");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fusion_is_invisible);
    tcase_add_test(tc, test_renotify_later_in_batch);
    tcase_add_test(tc, test_immediate_to_later_in_batch);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
