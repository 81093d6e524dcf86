/* Primitive channels: signal update semantics (no event without a change,
 * last write in a delta wins) and the bounded FIFO with sc_fifo semantics
 * (data visible after update, freed space visible after update, data_written
 * / data_read in the next delta, capacity, order across wrap-around). */
#include <check.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_fixture.h"
#include "sim/sim.h"

/* ---------------------------------------------------------------- signal */

static sim_signal sig;
static sim_process writer, watcher;
static int wstep;
static const uint64_t *wvals;   /* per writer activation: up to 3 writes, ~0 = none */

static void writer_fn(void *ctx)
{
    (void)ctx;
    const uint64_t *v = &wvals[wstep * 3];
    for (int i = 0; i < 3; i++)
        if (v[i] != ~0ull) sim_signal_write(&sig, v[i]);
    wstep++;
}

static void watcher_fn(void *ctx)
{
    (void)ctx;
    log_add(k, "chg", sim_signal_read(&sig));
}

static void signal_bench(const uint64_t *vals, int steps)
{
    wstep = 0;
    wvals = vals;
    sim_signal_init(&sig, k, "sig", 16, 4);
    sim_method_init(&writer, k, "writer", writer_fn, NULL);
    static sim_event tick;
    sim_event_init(&tick, k, "tick");
    sim_sensitive(&writer, &tick);
    sim_method_init(&watcher, k, "watcher", watcher_fn, NULL);
    sim_sensitive(&watcher, &sig.value_changed);
    sim_dont_initialize(&watcher);
    for (int s = 1; s < steps; s++) {
        sim_run(k, SIM_NS(s) - 1);
        sim_event_notify_at(&tick, SIM_NS(s) - sim_now(k));
    }
    sim_run(k, SIM_TIME_MAX);
}

START_TEST(test_signal_event_only_on_change)
{
    static const uint64_t vals[] = {
        4, ~0ull, ~0ull,   /* 0 ns: same as the initial value: no event */
        5, ~0ull, ~0ull,   /* 1 ns: change */
        5, ~0ull, ~0ull,   /* 2 ns: same again: no event */
        6, 5, ~0ull,       /* 3 ns: changed and back within a delta: no event */
        7, 8, 9,           /* 4 ns: last write wins, one event */
    };
    signal_bench(vals, 5);
    ck_assert_str_eq(log_str(), "chg@1000 chg@4000");
    ck_assert_uint_eq(g_log[0].val, 5);
    ck_assert_uint_eq(g_log[1].val, 9);
}
END_TEST

/* ---------------------------------------------------------------- FIFO */

static sim_fifo ff;

typedef struct fifo_probe {
    size_t avail, free;
} fifo_probe;

static fifo_probe probes[64];
static unsigned n_probes;

static void probe(void)
{
    probes[n_probes].avail = sim_fifo_num_available(&ff);
    probes[n_probes].free = sim_fifo_num_free(&ff);
    n_probes++;
}

/* Writer at delta 0 writes 3 into a FIFO of 2; a reader in the same delta
 * sees nothing; at delta 1 the reader (woken by data_written) reads one; the
 * writer in that delta sees no free space yet; at delta 2, woken by
 * data_read, it sees one free slot. */
static sim_process fw, fr;
static int fw_step, fr_step;
static int written_ok[3];

static void fifo_writer(void *ctx)
{
    (void)ctx;
    log_add(k, "w", 0);
    probe();
    if (fw_step == 0) {
        for (int i = 0; i < 3; i++) {
            uint32_t v = 100 + (uint32_t)i;
            written_ok[i] = sim_fifo_nb_write(&ff, &v);
        }
        probe();
    }
    fw_step++;
}

static uint32_t got[16];
static unsigned n_got;

static void fifo_reader(void *ctx)
{
    (void)ctx;
    log_add(k, "r", 0);
    probe();
    uint32_t v;
    if (fr_step == 1 && sim_fifo_nb_read(&ff, &v)) got[n_got++] = v;
    probe();
    fr_step++;
}

START_TEST(test_fifo_update_semantics)
{
    n_probes = 0;
    fw_step = fr_step = 0;
    n_got = 0;
    sim_fifo_init(&ff, k, "ff", sizeof(uint32_t), 2);
    sim_method_init(&fw, k, "w", fifo_writer, NULL);
    sim_sensitive(&fw, &ff.data_read);
    sim_method_init(&fr, k, "r", fifo_reader, NULL);
    sim_sensitive(&fr, &ff.data_written);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_int_eq(written_ok[0], 1);
    ck_assert_int_eq(written_ok[1], 1);
    ck_assert_int_eq(written_ok[2], 0);              /* capacity 2 */
    ck_assert_str_eq(log_str_delta(), "w@0/0 r@0/0 r@0/1 w@0/2");
    /* probes: w before, w after writes, r before, r after, r(d1) before, after, w(d2) */
    ck_assert_uint_eq(probes[0].avail, 0);
    ck_assert_uint_eq(probes[0].free, 2);
    ck_assert_uint_eq(probes[1].avail, 0);           /* written data not visible before update */
    ck_assert_uint_eq(probes[1].free, 0);            /* but the space is taken at once */
    ck_assert_uint_eq(probes[2].avail, 0);           /* the reader in the same delta sees nothing */
    ck_assert_uint_eq(probes[4].avail, 2);           /* after update */
    ck_assert_uint_eq(probes[5].avail, 1);           /* a read is seen by the reader at once */
    ck_assert_uint_eq(probes[5].free, 0);            /* freed space not visible before update */
    ck_assert_uint_eq(probes[6].free, 1);            /* after update, woken by data_read */
    ck_assert_uint_eq(probes[6].avail, 1);
    ck_assert_uint_eq(n_got, 1);
    ck_assert_uint_eq(got[0], 100);
    ck_assert_uint_eq(ff.total_written, 2);
    ck_assert_uint_eq(ff.total_read, 1);
    const uint32_t *head = sim_fifo_peek(&ff);
    ck_assert_ptr_nonnull(head);
    ck_assert_uint_eq(*head, 101);
    sim_fifo_destroy(&ff);
}
END_TEST

/* Read and write in the same delta on a full FIFO: the write fails (space
 * frees only after update); read-and-write in one delta on a partly full FIFO
 * keeps order. */
START_TEST(test_fifo_same_delta_read_write_and_order)
{
    sim_fifo_init(&ff, k, "ff", sizeof(uint64_t), 3);
    uint64_t next_w = 0, next_r = 0, v;
    /* outside processes, before the start: committed by the initialization update */
    for (int i = 0; i < 3; i++) ck_assert(sim_fifo_nb_write(&ff, &next_w) && ++next_w);
    ck_assert_uint_eq(sim_fifo_num_available(&ff), 0);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(sim_fifo_num_available(&ff), 3);
    ck_assert(sim_fifo_nb_read(&ff, &v));
    ck_assert_uint_eq(v, next_r++);
    ck_assert(!sim_fifo_nb_write(&ff, &next_w));        /* full until the update */
    /* many rounds of read-2 / write-2 across the wrap-around */
    for (int round = 0; round < 50; round++) {
        sim_run(k, SIM_TIME_MAX);                       /* a delta: commits */
        ck_assert_uint_eq(sim_fifo_num_free(&ff) + sim_fifo_num_available(&ff), 3);
        ck_assert_uint_eq(sim_fifo_num_available(&ff), next_w - next_r);
        while (sim_fifo_num_free(&ff)) ck_assert(sim_fifo_nb_write(&ff, &next_w) && ++next_w);
        while (sim_fifo_nb_read(&ff, &v)) ck_assert_uint_eq(v, next_r++);
        ck_assert_uint_eq(sim_fifo_num_available(&ff), 0);
        ck_assert_ptr_null(sim_fifo_peek(&ff));
    }
    sim_run(k, SIM_TIME_MAX);
    while (sim_fifo_nb_read(&ff, &v)) ck_assert_uint_eq(v, next_r++);
    ck_assert_uint_gt(next_r, 60);
    ck_assert_uint_eq(next_r, next_w);
    sim_fifo_destroy(&ff);
}
END_TEST

/* sim_ring_grow keeps a ring's elements in order whatever its head, wrapped
 * or not, doubles the capacity, and starts at first_cap. A FIFO model of the
 * ring (push at head+len, pop at head) is run through many grows with pops
 * in between, so the head sits everywhere. */
START_TEST(test_ring_grow_keeps_order)
{
    uint32_t *buf = NULL;
    size_t cap = 0, head = 0, len = 0;
    uint32_t next_in = 0, next_out = 0;
    for (int step = 0; step < 5000; step++) {
        if (len == cap) {
            const size_t old = cap;
            buf = sim_ring_grow(buf, sizeof *buf, head, len, &cap, 4);
            head = 0;
            ck_assert_uint_eq(cap, old ? 2 * old : 4);
            for (size_t x = 0; x < len; x++) ck_assert_uint_eq(buf[x], next_out + (uint32_t)x);
        }
        buf[(head + len++) & (cap - 1)] = next_in++;
        if (step % 3 == 2) { /* two pushes per pop: the ring grows, its head moves */
            ck_assert_uint_eq(buf[head], next_out++);
            head = (head + 1) & (cap - 1);
            len--;
        }
    }
    ck_assert_uint_ge(cap, 2048);
    while (len) {
        ck_assert_uint_eq(buf[head], next_out++);
        head = (head + 1) & (cap - 1);
        len--;
    }
    ck_assert_uint_eq(next_out, next_in);
    free(buf);
}
END_TEST

/* sim_zalloc_aligned: aligned as asked and zeroed, for sizes that are not
 * a multiple of the alignment too (aligned_alloc would refuse those). */
START_TEST(test_zalloc_aligned)
{
    for (size_t align = 8; align <= 4096; align *= 2)
        for (size_t size = 1; size < 3 * align; size += align / 2 + 1) {
            unsigned char *p = sim_zalloc_aligned(align, size);
            ck_assert_uint_eq((uintptr_t)p % align, 0);
            for (size_t x = 0; x < size; x++) ck_assert_uint_eq(p[x], 0);
            memset(p, 0xa5, size);
            free(p);
        }
}
END_TEST

static Suite *channels_suite(void)
{
    Suite *s = suite_create("channels");
    TCase *tc = tcase_create("signal");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_signal_event_only_on_change);
    suite_add_tcase(s, tc);
    tc = tcase_create("fifo");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fifo_update_semantics);
    tcase_add_test(tc, test_fifo_same_delta_read_write_and_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("ring");
    tcase_add_test(tc, test_zalloc_aligned);
    tcase_add_test(tc, test_ring_grow_keeps_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(channels_suite()); }
