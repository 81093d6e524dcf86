/* Unit tests of the Verilated crossbar through the C bridge (rtl/xbar_rtl.h):
 * timing of one flit, the iSLIP-1 reset ramp, credits, multicast, overflow
 * detection, throughput, and tracing. Each loop test runs once per Verilated
 * configuration. The C-vs-RTL comparison is xbar_equiv. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/sim.h"
#include "xbar_rtl.h"
#include "xbar_rtl_variant.h"
#include "xbar_stim.h"
#include "check_run.h"

static const xbar_rtl_variant *variant(int k)
{
    const xbar_rtl_variant *list;
    size_t n = xbar_rtl_variants(&list);
    ck_assert_int_lt(k, (int)n);
    return &list[k];
}

static size_t n_variants(void)
{
    const xbar_rtl_variant *list;
    return xbar_rtl_variants(&list);
}

static xbar_rtl *make_f(unsigned ports, unsigned iters, unsigned latency, unsigned depth, unsigned fanout_read)
{
    xbar_rtl_cfg c = { .ports = ports, .iters = iters, .latency = latency, .depth = depth, .fanout_read = fanout_read };
    char why[256] = "";
    xbar_rtl *x = xbar_rtl_new(&c, why, sizeof why);
    ck_assert_msg(x != NULL, "xbar_rtl_new: %s", why);
    return x;
}

static xbar_rtl *make(unsigned ports, unsigned iters, unsigned latency, unsigned depth)
{
    return make_f(ports, iters, latency, depth, 0);
}

static xbar_rtl *make_v(const xbar_rtl_variant *v, unsigned iters, unsigned depth)
{
    return make_f(v->ports, iters, v->latency, depth, v->fanout_read);
}

static const xbar_in k_idle;

START_TEST(test_bad_config)
{
    char why[256];
    xbar_rtl_cfg c = { .ports = 65, .iters = 1, .latency = 1, .depth = 4 };
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "ports=65") && strstr(why, "2..64"), "%s", why);
    c.ports = 1;
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "ports=1") != NULL, "%s", why);
    c.ports = 4;
    c.latency = 0;
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "latency=0") && strstr(why, "1..1024"), "%s", why);
    c.latency = 1;
    c.iters = 0;
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "iters=0") != NULL, "%s", why);
    c.iters = 1;
    c.depth = 1000;
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "depth=1000") && strstr(why, "1..64"), "%s", why);
}
END_TEST

/* One flit presented in cycle t0 leaves in t0 + 1 + L; its credit comes in t0 + 2. */
START_TEST(test_one_flit_timing)
{
    const xbar_rtl_variant *v = variant(_i);
    xbar_rtl *x = make_v(v, 1, 4);
    const unsigned src = 1, dst = v->ports - 1, t0 = 3;
    xbar_out out;
    int seen_out = -1, seen_credit = -1;
    for (unsigned t = 0; t < 20; t++) {
        xbar_in in = k_idle;
        if (t == t0) {
            in.valid = 1ull << src;
            in.in[src].data = 0xfeedface12345678ull;
            in.in[src].dest_mask = 1ull << dst;
        }
        xbar_rtl_step(x, &in, &out);
        if (out.valid) {
            ck_assert_int_eq(seen_out, -1);
            ck_assert_uint_eq(out.valid, 1ull << dst);
            ck_assert_uint_eq(out.out_data[dst], 0xfeedface12345678ull);
            ck_assert_uint_eq(out.out_src[dst], src);
            seen_out = (int)t;
        }
        if (out.credit) {
            ck_assert_int_eq(seen_credit, -1);
            ck_assert_uint_eq(out.credit, 1ull << src);
            ck_assert_uint_eq(out.credit_queue[src], dst);
            seen_credit = (int)t;
        }
        if (t == t0 + 1) {
            ck_assert_uint_eq(out.match_in, 1ull << src);   /* allocated one cycle after it arrived */
            ck_assert_uint_eq(out.match_out[src], dst);
        }
    }
    ck_assert_int_eq(seen_out, (int)(t0 + 1 + v->latency));
    ck_assert_int_eq(seen_credit, (int)(t0 + 2));
    ck_assert(!xbar_rtl_overflow(x));
    xbar_rtl_free(x);
}
END_TEST

/* iSLIP-1 from reset with every VOQ backlogged matches t+1 pairs in cycle t
 * (t < N), then N (McKeown 1999; docs/crossbar-cycle-rules.md). Broadcast
 * flits fill all VOQs of every input in cycle 0, so the ramp starts in cycle 1. */
START_TEST(test_islip1_reset_ramp)
{
    const xbar_rtl_variant *v = variant(_i);
    const unsigned n = v->ports;
    if (v->fanout_read) return;   /* the ramp is defined without fan-out read (broadcast fill) */
    xbar_rtl *x = make(n, 1, v->latency, 8);
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = n, .depth = 8, .load = 1.0, .pattern = XBAR_PAT_BACKLOG, .seed = 3 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    for (unsigned t = 0; t < 3 * n + 4; t++) {
        xbar_stim_inputs(&st, &in);
        if (t == 0) ck_assert_uint_eq(in.valid, n >= 64 ? ~0ull : (1ull << n) - 1);
        xbar_rtl_step(x, &in, &out);
        xbar_stim_credits(&st, &out);
        unsigned matches = (unsigned)__builtin_popcountll(out.match_in);
        unsigned want = t == 0 ? 0 : (t - 1 < n ? t : n);
        ck_assert_msg(matches == want, "N=%u cycle %u after the first backlogged cycle: %u matches, want %u", n, t - 1,
                      matches, want);
    }
    ck_assert_uint_eq(st.credit_errors, 0);
    xbar_stim_free(&st);
    xbar_rtl_free(x);
}
END_TEST

/* Random traffic with multicast, then drain: every copy delivered exactly once,
 * in order per flow, every credit home, no overflow. */
START_TEST(test_credits_and_multicast_conservation)
{
    const xbar_rtl_variant *v = variant(_i);
    const unsigned n = v->ports;
    for (unsigned iters = 1; iters <= v->iters_max; iters += 3) {
        xbar_rtl *x = make_v(v, iters, 3);
        xbar_stim st;
        xbar_stim_cfg sc = { .ports = n, .depth = 3, .load = 0.9, .pattern = XBAR_PAT_UNIFORM,
                             .mcast_frac = 0.2, .mcast_fanout = 3, .seed = 11 + iters };
        xbar_stim_init(&st, &sc);
        xbar_score sb;
        xbar_score_init(&sb, n);
        xbar_in in;
        xbar_out out;
        uint64_t t = 0;
        for (; t < 3000; t++) {
            xbar_stim_inputs(&st, &in);
            xbar_score_presented(&sb, &in);
            xbar_rtl_step(x, &in, &out);
            xbar_stim_credits(&st, &out);
            xbar_score_outputs(&sb, &out, t);
        }
        st.stopped = true;
        for (unsigned d = 0; d < 100000 && (xbar_stim_backlog(&st) || !xbar_stim_all_credits_home(&st)); d++, t++) {
            xbar_stim_inputs(&st, &in);
            xbar_score_presented(&sb, &in);
            xbar_rtl_step(x, &in, &out);
            xbar_stim_credits(&st, &out);
            xbar_score_outputs(&sb, &out, t);
        }
        for (unsigned d = 0; d < v->latency + 2; d++, t++) {   /* the output pipeline */
            xbar_rtl_step(x, &k_idle, &out);
            xbar_stim_credits(&st, &out);
            xbar_score_outputs(&sb, &out, t);
        }
        ck_assert_msg(xbar_stim_all_credits_home(&st), "N=%u iters=%u: credits missing after drain", n, iters);
        ck_assert_uint_eq(st.credit_errors, 0);
        ck_assert_uint_eq(st.credits_returned, st.copies_presented);
        ck_assert_uint_gt(sb.expected_copies, 1000);
        ck_assert_uint_eq(xbar_score_missing(&sb), 0);
        ck_assert_uint_eq(sb.duplicated, 0);
        ck_assert_uint_eq(sb.out_of_order, 0);
        ck_assert_uint_eq(sb.unknown, 0);
        ck_assert_uint_eq(sb.wrong_src, 0);
        for (unsigned i = 0; i < n; i++) ck_assert_uint_eq(xbar_rtl_occupancy(x, i), 0);
        ck_assert(!xbar_rtl_overflow(x));
        xbar_score_free(&sb);
        xbar_stim_free(&st);
        xbar_rtl_free(x);
    }
}
END_TEST

/* A broadcast flit is replicated into every VOQ of its input. Without
 * fan-out read the input reads one copy per cycle, so the N copies leave over
 * N cycles, one credit each; with it, the other outputs join the matched read
 * and all N leave together (one credit + N-1 in credit_extra). */
START_TEST(test_broadcast_replication)
{
    const xbar_rtl_variant *v = variant(_i);
    const unsigned n = v->ports;
    xbar_rtl *x = make_v(v, 1, 2);
    xbar_in in = k_idle;
    xbar_out out;
    in.valid = 1ull << 2;
    in.in[2].data = 0xabcull;
    in.in[2].dest_mask = (n >= 64) ? ~0ull : (1ull << n) - 1;
    uint64_t got = 0, credited = 0;
    unsigned first = 0, last = 0;
    for (unsigned t = 0; t < 2 * n + 6; t++) {
        xbar_rtl_step(x, t == 0 ? &in : &k_idle, &out);
        if (!v->fanout_read) ck_assert_uint_le(__builtin_popcountll(out.valid), 1);
        for (uint64_t m = out.valid; m; m &= m - 1) {
            unsigned j = (unsigned)__builtin_ctzll(m);
            ck_assert_uint_eq(out.out_data[j], 0xabcull);
            ck_assert_uint_eq(out.out_src[j], 2);
            ck_assert(!((got >> j) & 1));
            got |= 1ull << j;
            if (!first) first = t;
            last = t;
        }
        if (out.credit) {
            ck_assert_uint_eq(out.credit, 1ull << 2);
            ck_assert(!((credited >> out.credit_queue[2]) & 1));
            credited |= 1ull << out.credit_queue[2];
        }
        for (unsigned i = 0; i < n; i++) {
            if (i != 2) ck_assert_uint_eq(out.credit_extra[i], 0);
            ck_assert(!(credited & out.credit_extra[i]));
            credited |= out.credit_extra[i];
        }
    }
    ck_assert_uint_eq(got, in.in[2].dest_mask);
    ck_assert_uint_eq(credited, in.in[2].dest_mask);
    ck_assert_uint_eq(first, 1 + v->latency);
    ck_assert_uint_eq(last - first, v->fanout_read ? 0 : n - 1);
    xbar_rtl_free(x);
}
END_TEST

/* Fan-out splitting (FANOUT_READ variants): input 1 sends a multicast flit
 * to outputs 1 and 2 every cycle while input 0 sends unicast to output 2
 * every cycle. Output 2 is shared, so its copies fall behind; the copies to
 * output 1 must still leave one per cycle without a gap, and output 2 must
 * serve both inputs at its full rate (the C core's multicast_copies_split). */
START_TEST(test_multicast_copies_split)
{
    const xbar_rtl_variant *v = variant(_i);
    if (!v->fanout_read) return;
    const unsigned flits = 24;
    xbar_rtl *x = make_v(v, 1, 64);
    xbar_in in = k_idle;
    xbar_out out;
    uint64_t next1 = 100, next2_from1 = 100, next2_from0 = 0;
    unsigned first1 = 0, last1 = 0, got1 = 0, got2 = 0, busy2 = 0;
    for (unsigned t = 0; t < 4 * flits; t++) {
        in.valid = t < flits ? 3 : 0;
        in.in[0].data = t;
        in.in[0].dest_mask = 1u << 2;
        in.in[1].data = 100 + t;
        in.in[1].dest_mask = (1u << 1) | (1u << 2);
        xbar_rtl_step(x, &in, &out);
        if (out.valid >> 1 & 1) {
            ck_assert_uint_eq(out.out_src[1], 1);
            ck_assert_uint_eq(out.out_data[1], next1++);
            if (!got1) first1 = t;
            last1 = t;
            got1++;
        }
        if (out.valid >> 2 & 1) {
            if (out.out_src[2] == 1) ck_assert_uint_eq(out.out_data[2], next2_from1++);
            else ck_assert_uint_eq(out.out_data[2], next2_from0++);
            got2++;
            busy2 += t < 2 * flits + v->latency + 1;
        }
    }
    ck_assert_uint_eq(got1, flits);
    ck_assert_uint_eq(first1, 1 + v->latency);
    ck_assert_msg(last1 - first1 == flits - 1, "copies to output 1 took %u cycles for %u flits", last1 - first1 + 1, flits);
    ck_assert_uint_eq(got2, 2 * flits);
    ck_assert_uint_eq(busy2, 2 * flits);
    for (unsigned i = 0; i < v->ports; i++) ck_assert_uint_eq(xbar_rtl_occupancy(x, i), 0);
    xbar_rtl_free(x);
}
END_TEST

/* Two inputs flooding one output without credits overrun their VOQs: the RTL flags it. */
START_TEST(test_overflow_flag)
{
    xbar_rtl *x = make(4, 1, 1, 32);
    xbar_in in = k_idle;
    xbar_out out;
    in.valid = 0x3;
    in.in[0].dest_mask = in.in[1].dest_mask = 0x1;
    unsigned t = 0;
    for (; t < 200 && !xbar_rtl_overflow(x); t++) xbar_rtl_step(x, &in, &out);
    ck_assert(xbar_rtl_overflow(x));
    ck_assert_uint_ge(t, 60);   /* 32 + 32 slots fill at one net flit per cycle */
    xbar_rtl_reset(x, 2);
    ck_assert(!xbar_rtl_overflow(x));
    xbar_rtl_free(x);
}
END_TEST

/* VOQ + iSLIP under uniform load 1.0 with deep buffers delivers close to
 * 100% (McKeown 1999). With 32 credits per VOQ the source's head flit
 * sometimes waits for a credit, which costs a few percent: iSLIP-4 > 0.95,
 * iSLIP-1 > 0.90 (measured 0.965 and 0.916). */
START_TEST(test_uniform_saturation_throughput)
{
    const unsigned iters = _i ? 4 : 1;
    const double floor = _i ? 0.95 : 0.90;
    xbar_rtl *x = make(16, iters, 1, 32);
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = 16, .depth = 32, .load = 1.0, .pattern = XBAR_PAT_UNIFORM, .seed = 5 };
    xbar_stim_init(&st, &sc);
    xbar_in in;
    xbar_out out;
    uint64_t got = 0;
    const unsigned warm = 2000, cycles = 20000;
    for (unsigned t = 0; t < warm + cycles; t++) {
        xbar_stim_inputs(&st, &in);
        xbar_rtl_step(x, &in, &out);
        xbar_stim_credits(&st, &out);
        if (t >= warm) got += (uint64_t)__builtin_popcountll(out.valid);
    }
    double thr = (double)got / cycles / 16.0;
    ck_assert_msg(thr > floor, "iSLIP-%u: throughput %.4f", iters, thr);
    xbar_stim_free(&st);
    xbar_rtl_free(x);
}
END_TEST

START_TEST(test_trace_writes_fst)
{
    char path[] = "/tmp/check_rtl_XXXXXX.fst";
    int fd = mkstemps(path, 4);
    ck_assert_int_ge(fd, 0);
    close(fd);
    sim_trace *tr = sim_trace_open(NULL, path);
    ck_assert_ptr_nonnull(tr);
    xbar_rtl *x = make(4, 1, 1, 4);
    xbar_rtl_trace_open(x, tr, "rtl", NULL, 0, 1000);
    sim_trace_freeze(tr);
    xbar_in in = k_idle;
    xbar_out out;
    in.valid = 1;
    in.in[0].dest_mask = 0x6;
    for (unsigned t = 0; t < 10; t++) xbar_rtl_step(x, t == 1 ? &in : &k_idle, &out);
    xbar_rtl_free(x);
    sim_trace_close(tr);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    ck_assert_int_gt(ftell(f), 100);
    fclose(f);
    remove(path);
}
END_TEST

/* ---- variants Verilated on first use (rtl/xbar_rtl_build.c) ---- */

/* The cache key follows every parameter and is stable. */
START_TEST(test_variant_key)
{
    xbar_rtl_variant a = { 7, 1, 64, 4, 64, 1 }, b = a;
    char ka[256], kb[256];
    ck_assert_int_eq(xbar_rtl_variant_key(&a, ka, sizeof ka), 0);
    ck_assert_int_eq(xbar_rtl_variant_key(&b, kb, sizeof kb), 0);
    ck_assert_str_eq(ka, kb);
    ck_assert_msg(strncmp(ka, "Vxbar_p7_l1_i4_f1-", 18) == 0 && strlen(ka) == 18 + 16, "%s", ka);
    unsigned *field[] = { &b.ports, &b.latency, &b.iters_max, &b.fanout_read };
    for (unsigned f = 0; f < 4; f++) {
        b = a;
        *field[f] ^= f == 3 ? 1 : 2;
        ck_assert_int_eq(xbar_rtl_variant_key(&b, kb, sizeof kb), 0);
        ck_assert_msg(strcmp(strchr(ka, '-'), strchr(kb, '-')) != 0, "field %u: same hash %s", f, kb);
    }
}
END_TEST

/* With building off and an empty cache, a variant that is not prebuilt is
 * refused with the reason and the prebuilt list, each variant once. */
START_TEST(test_variant_not_built_refused)
{
    char dir[] = "/tmp/check_rtl_cache_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    setenv("LINKSTACK_RTL_VARIANT_DIR", dir, 1);
    setenv("LINKSTACK_RTL_BUILD", "0", 1);
    char why[512];
    xbar_rtl_cfg c = { .ports = 3, .iters = 3, .latency = 7, .depth = 4 };
    ck_assert_ptr_null(xbar_rtl_new(&c, why, sizeof why));
    ck_assert_msg(strstr(why, "ports=3 latency=7 iters=4 fanout_read=0") && strstr(why, "LINKSTACK_RTL_BUILD=0") &&
                      strstr(why, "prebuilt ports:latency:iters:fanout_read:"),
                  "%s", why);
    const xbar_rtl_variant *list;
    const size_t nv = xbar_rtl_variants(&list);
    for (size_t i = 0; i < nv; i++) {
        char tup[64];
        snprintf(tup, sizeof tup, " %u:%u:%u:%u", list[i].ports, list[i].latency, list[i].iters_max, list[i].fanout_read);
        const char *hit = strstr(why, tup);
        ck_assert_msg(hit != NULL, "%s missing from: %s", tup, why);
    }
    unsetenv("LINKSTACK_RTL_BUILD");
    unsetenv("LINKSTACK_RTL_VARIANT_DIR");
    rmdir(dir);
}
END_TEST

/* simrun nvswitch_uniform with model=both on a variant nothing prebuilds,
 * stderr to `err`, the cache in `dir`: the lock-step comparison with the C
 * core is the check that the runtime-built RTL is the RTL. */
static pid_t spawn_both(const char *dir, const char *err, const char *out)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid) return pid;
    if (!freopen(err, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(90);
    setenv("LINKSTACK_RTL_VARIANT_DIR", dir, 1);
    execl(LINKSTACK_SIMRUN, LINKSTACK_SIMRUN, "--quiet", "--out", out, "nvswitch_uniform", "model=both", "ports=3",
          "pipeline_cycles=2", "cycles=3000", "warmup=300", "load=0.9", "trace=0", (char *)NULL);
    _exit(91);
}

static bool file_has(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[1024];
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f)) hit = strstr(line, what) != NULL;
    fclose(f);
    return hit;
}

/* Two first uses at once build the variant once (one waits on the lock),
 * both run it, and a later use takes it from the cache without building. */
START_TEST(test_variant_built_once_on_first_use)
{
    char dir[] = "/tmp/check_rtl_cache_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char err[3][4200], out[4200];
    for (int k = 0; k < 3; k++) snprintf(err[k], sizeof err[k], "%s/stderr%d", dir, k);
    snprintf(out, sizeof out, "%s/out", dir);
    pid_t a = spawn_both(dir, err[0], out), b = spawn_both(dir, err[1], out);
    int sa, sb;
    ck_assert_int_eq(waitpid(a, &sa, 0), a);
    ck_assert_int_eq(waitpid(b, &sb, 0), b);
    const char *line = "verilating xbar variant ports=3 latency=2 iters=4 fanout_read=1 (first use";
    ck_assert_msg(WIFEXITED(sa) && WEXITSTATUS(sa) == 0, "first user: status %d (%s)", sa, err[0]);
    ck_assert_msg(WIFEXITED(sb) && WEXITSTATUS(sb) == 0, "second user: status %d (%s)", sb, err[1]);
    /* without the lock both would build (each takes seconds, they overlap) */
    ck_assert_msg(file_has(err[0], line) != file_has(err[1], line), "exactly one of the two builds");
    pid_t c = spawn_both(dir, err[2], out);
    int sc;
    ck_assert_int_eq(waitpid(c, &sc, 0), c);
    ck_assert_msg(WIFEXITED(sc) && WEXITSTATUS(sc) == 0, "third user: status %d", sc);
    ck_assert_msg(!file_has(err[2], "verilating"), "the third use rebuilt the variant");
    /* the cache holds the object and the build's log; no temporary tree is left */
    xbar_rtl_variant v = { 3, 2, 64, 4, 64, 1 };   /* iters=1 asked, 4 built */
    char stem[256], path[4400];
    ck_assert_int_eq(xbar_rtl_variant_key(&v, stem, sizeof stem), 0);
    const char *hash = strchr(stem, '-') + 1;
    snprintf(path, sizeof path, "%s/%.*s/%s.so", dir, (int)(hash - 1 - stem), stem, hash);
    ck_assert_msg(access(path, R_OK) == 0, "%s", path);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name 'tmp-*')\"", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rtl");
    TCase *tc = tcase_create("bridge");
    tcase_set_timeout(tc, 120);
    int nv = (int)n_variants();
    tcase_add_test(tc, test_bad_config);
    tcase_add_loop_test(tc, test_one_flit_timing, 0, nv);
    tcase_add_loop_test(tc, test_islip1_reset_ramp, 0, nv);
    tcase_add_loop_test(tc, test_credits_and_multicast_conservation, 0, nv);
    tcase_add_loop_test(tc, test_broadcast_replication, 0, nv);
    tcase_add_loop_test(tc, test_multicast_copies_split, 0, nv);
    tcase_add_test(tc, test_overflow_flag);
    tcase_add_loop_test(tc, test_uniform_saturation_throughput, 0, 2);
    tcase_add_test(tc, test_trace_writes_fst);
    suite_add_tcase(s, tc);
    TCase *rt = tcase_create("runtime_variants");
    tcase_set_timeout(rt, 900);   /* one Verilation: ~25 s of CPU, minutes on a loaded machine */
    tcase_add_test(rt, test_variant_key);
    tcase_add_test(rt, test_variant_not_built_refused);
    tcase_add_test(rt, test_variant_built_once_on_first_use);
    suite_add_tcase(s, rt);
    return run_suite(s);
}
