/* Tracing: an FST written through sim/trace.h is read back with the FST
 * reader from the same fstapi library: scope and variable names as GTKWave
 * shows them, bit-vector values, string labels and their timestamps, traced
 * signals changing at the update. With tracing off everything is a no-op. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstapi.h>

#include "check_log.h"
#include "sim/sim.h"

typedef struct change {
    uint64_t t;
    fstHandle h;
    char v[64];
} change;

static change changes[256];
static unsigned n_changes;

static void on_change(void *user, uint64_t t, fstHandle h, const unsigned char *v)
{
    (void)user;
    if (n_changes == 256) return;
    changes[n_changes].t = t;
    changes[n_changes].h = h;
    snprintf(changes[n_changes].v, sizeof changes[n_changes].v, "%s", (const char *)v);
    n_changes++;
}

static void on_change_varlen(void *user, uint64_t t, fstHandle h, const unsigned char *v, uint32_t len)
{
    (void)user;
    if (n_changes == 256) return;
    changes[n_changes].t = t;
    changes[n_changes].h = h;
    snprintf(changes[n_changes].v, sizeof changes[n_changes].v, "%.*s", (int)len, (const char *)v);
    n_changes++;
}

/* the value of handle h at exactly time t, or NULL */
static const char *value_at(fstHandle h, uint64_t t)
{
    const char *v = NULL;
    for (unsigned i = 0; i < n_changes; i++)
        if (changes[i].h == h && changes[i].t == t) v = changes[i].v;   /* last one at t */
    return v;
}

static sim_kernel *k;
static sim_trace *tr;
static sim_trace_var tv, ts, tb;
static sim_signal sig;
static sim_process proc;

static void proc_fn(void *ctx)
{
    (void)ctx;
    if (sim_now(k) == 0) {
        sim_trace_u64(sim_trace_of_kernel(k), tv, 5);
        sim_trace_str(sim_trace_of_kernel(k), ts, "hello");
        sim_trace_u64(sim_trace_of_kernel(k), tb, 1);
        sim_next_trigger_at(k, 1000);
    } else {
        sim_trace_u64(sim_trace_of_kernel(k), tv, 0xff);
        sim_trace_strf(sim_trace_of_kernel(k), ts, "T%d", 42);
        sim_trace_u64(sim_trace_of_kernel(k), tb, 0);
        sim_signal_write(&sig, 9);
    }
}

START_TEST(test_fst_roundtrip)
{
    char path[] = "/tmp/check_trace.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    k = sim_kernel_new();
    tr = sim_trace_open(k, path);
    ck_assert_ptr_nonnull(tr);
    ck_assert_ptr_eq(sim_trace_of_kernel(k), tr);
    sim_trace_push_scope(tr, "m");
    tv = sim_trace_add_var(tr, "v", 8);
    ts = sim_trace_add_string(tr, "s");
    sim_trace_push_scopef(tr, "port%u", 3);
    tb = sim_trace_add_var(tr, "b", 1);
    sim_trace_pop_scope(tr);
    sim_signal_init(&sig, k, "sig", 4, 2);
    sim_signal_trace(&sig, tr);
    sim_trace_pop_scope(tr);
    ck_assert_uint_ne(tv, 0);
    ck_assert_uint_ne(ts, 0);
    ck_assert_uint_ne(tb, 0);
    sim_method_init(&proc, k, "p", proc_fn, NULL);
    sim_run(k, 3000);
    sim_trace_close(tr);
    ck_assert_ptr_null(sim_trace_of_kernel(k));
    sim_kernel_free(k);

    void *rd = fstReaderOpen(path);
    ck_assert_ptr_nonnull(rd);
    ck_assert_int_eq(fstReaderGetTimescale(rd), -12);   /* ps */
    /* hierarchy: names as GTKWave shows them */
    char names[1024] = "";
    char scope[256] = "";
    fstHandle hv = 0, hs = 0, hb = 0, hsig = 0;
    struct fstHier *h;
    while ((h = fstReaderIterateHier(rd))) {
        if (h->htyp == FST_HT_SCOPE) {
            snprintf(scope + strlen(scope), sizeof scope - strlen(scope), "%s%s", scope[0] ? "." : "", h->u.scope.name);
        } else if (h->htyp == FST_HT_UPSCOPE) {
            char *dot = strrchr(scope, '.');
            if (dot) *dot = 0; else scope[0] = 0;
        } else if (h->htyp == FST_HT_VAR) {
            char full[300];
            snprintf(full, sizeof full, "%s.%s", scope, h->u.var.name);
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s ", full);
            if (!strcmp(full, "top.m.v[7:0]")) hv = h->u.var.handle;
            if (!strcmp(full, "top.m.s")) hs = h->u.var.handle;
            if (!strcmp(full, "top.m.port3.b")) hb = h->u.var.handle;
            if (!strcmp(full, "top.m.sig[3:0]")) hsig = h->u.var.handle;
        }
    }
    ck_assert_str_eq(names, "top.m.v[7:0] top.m.s top.m.port3.b top.m.sig[3:0] ");
    n_changes = 0;
    fstReaderSetFacProcessMaskAll(rd);
    fstReaderIterBlocks2(rd, on_change, on_change_varlen, NULL, NULL);
    ck_assert_str_eq(value_at(hv, 0), "00000101");
    ck_assert_str_eq(value_at(hv, 1000), "11111111");
    ck_assert_str_eq(value_at(hs, 0), "hello");
    ck_assert_str_eq(value_at(hs, 1000), "T42");
    ck_assert_str_eq(value_at(hb, 0), "1");
    ck_assert_str_eq(value_at(hb, 1000), "0");
    ck_assert_str_eq(value_at(hsig, 0), "0010");          /* the initial value when traced */
    ck_assert_str_eq(value_at(hsig, 1000), "1001");       /* committed in the update at 1 ns */
    ck_assert_ptr_null(value_at(hv, 500));
    ck_assert_uint_eq(fstReaderGetEndTime(rd), 3000);     /* the trace ends at the time reached */
    fstReaderClose(rd);
    unlink(path);
}
END_TEST

/* A long trace: the writer holds value changes in memory only up to a few
 * MB (sim/trace.c, TRACE_BLOCK_BYTES), so ~16 MB of changes come out as
 * several blocks, and a reader still gets every change, in order. */
#define LONG_CHANGES 400000u
static uint64_t long_seen, long_bad;

static void on_long_change(void *user, uint64_t t, fstHandle h, const unsigned char *v)
{
    (void)user;
    (void)h;
    uint64_t x = strtoull((const char *)v, NULL, 2);
    if (x != (t / 10 & 0xffffffffu)) long_bad++;
    long_seen++;
}

static sim_trace_var tlong;
static void long_fn(void *ctx)
{
    (void)ctx;
    sim_trace_u64(sim_trace_of_kernel(k), tlong, sim_now(k) / 10);
    if (sim_now(k) / 10 + 1 < LONG_CHANGES) sim_next_trigger_at(k, 10);
}

START_TEST(test_long_trace_in_blocks)
{
    char path[] = "/tmp/check_trace_long.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    k = sim_kernel_new();
    tr = sim_trace_open(k, path);
    tlong = sim_trace_add_var(tr, "counter", 32);
    sim_method_init(&proc, k, "p", long_fn, NULL);
    sim_run(k, SIM_TIME_MAX);
    sim_trace_close(tr);
    sim_kernel_free(k);
    void *rd = fstReaderOpen(path);
    ck_assert_ptr_nonnull(rd);
    ck_assert_uint_gt(fstReaderGetValueChangeSectionCount(rd), 2);
    long_seen = long_bad = 0;
    fstReaderSetFacProcessMaskAll(rd);
    fstReaderIterBlocks(rd, on_long_change, NULL, NULL);
    ck_assert_uint_eq(long_seen, LONG_CHANGES);
    ck_assert_uint_eq(long_bad, 0);
    fstReaderClose(rd);
    unlink(path);
}
END_TEST

START_TEST(test_trace_off_is_noop)
{
    sim_kernel *kk = sim_kernel_new();
    ck_assert_ptr_null(sim_trace_of_kernel(kk));
    ck_assert_uint_eq(sim_trace_add_var(NULL, "x", 8), 0);
    ck_assert_uint_eq(sim_trace_add_string(NULL, "x"), 0);
    sim_trace_push_scope(NULL, "x");
    sim_trace_pop_scope(NULL);
    sim_trace_u64(NULL, 0, 1);
    sim_trace_str(NULL, 0, "x");
    sim_trace_emit_u64_(NULL, 1, 1);
    sim_signal s;
    sim_signal_init(&s, kk, "s", 8, 0);
    sim_signal_trace(&s, NULL);
    ck_assert_uint_eq(s.trace, 0);
    sim_signal_write(&s, 3);
    sim_run(kk, SIM_TIME_MAX);
    ck_assert_uint_eq(sim_signal_read(&s), 3);
    sim_trace_close(NULL);
    sim_kernel_free(kk);
}
END_TEST

START_TEST(test_trace_open_failure)
{
    sim_kernel *kk = sim_kernel_new();
    ck_assert_ptr_null(sim_trace_open(kk, "/nonexistent-dir/x/y.fst"));
    ck_assert_ptr_null(sim_trace_of_kernel(kk));
    sim_kernel_free(kk);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_add_test(tc, test_fst_roundtrip);
    tcase_add_test(tc, test_long_trace_in_blocks);
    tcase_add_test(tc, test_trace_off_is_noop);
    tcase_add_test(tc, test_trace_open_failure);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
