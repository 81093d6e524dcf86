/* Every registered test uses or refuses every parameter it declares.
 *
 * For each test simrun lists, `simrun --check-params` runs the test's
 * configuration phase only (up to sim_test_configured(), nothing simulated)
 * and prints how each parameter is used. The checks:
 *   - at the defaults, with the regress_args, and with every choice of every
 *     enum and bool parameter, each parameter is either read or declared not
 *     applicable with a reason: one silently accepted and never read fails;
 *     every value regress_args set is in effect;
 *   - each parameter given explicitly at its default value is either used
 *     (exit 0) or refused with exit 2 and "parameter 'x' does not apply: why".
 * A configuration the test refuses as a whole (exit 2, e.g. an RTL variant
 * that is not built) is fine; anything else (an abort: a read after
 * sim_test_configured, a simulation started before it) fails. */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_log.h"

#ifndef LINKSTACK_SIMRUN
#error "CMake passes LINKSTACK_SIMRUN, the path of build/bin/simrun"
#endif

#define MAX_TESTS 128
#define MAX_ROWS 128
#define OUT_MAX (1 << 16)

static char test_names[MAX_TESTS][64];
static int n_test_names;

typedef struct row {
    char name[64], state[32], origin[16], def[256], choices[256], reason[512];
} row;

typedef struct result {
    int status;                 /* exit status, or 128 + signal */
    char out[OUT_MAX], err[OUT_MAX];
} result;

static void slurp(int fd, char *buf)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, OUT_MAX - 1);
    buf[n > 0 ? n : 0] = 0;
    close(fd);
}

/* Runs simrun with argv (NULL-terminated, without the program); no shell. */
static void run(const char *const *args, result *r)
{
    char o[] = "/tmp/check_test_params.outXXXXXX", e[] = "/tmp/check_test_params.errXXXXXX";
    int fo = mkstemp(o), fe = mkstemp(e);
    if (fo < 0 || fe < 0) {   /* no ck_assert: also used before the suite runs */
        perror("mkstemp");
        abort();
    }
    unlink(o);
    unlink(e);
    const char *argv[64];
    int n = 0;
    argv[n++] = LINKSTACK_SIMRUN;
    for (; *args && n < 63; args++) argv[n++] = *args;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        abort();
    }
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        abort();
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    slurp(fo, r->out);
    slurp(fe, r->err);
}

static int parse_rows(const char *out, row *rows)
{
    int n = 0;
    const char *line = out;
    while (*line && n < MAX_ROWS) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        char *f[6] = { 0 };
        char *p = buf;
        for (int i = 0; i < 6; i++) {
            f[i] = p;
            char *tab = p ? strchr(p, '\t') : NULL;
            if (tab) {
                *tab = 0;
                p = tab + 1;
            } else {
                p = NULL;
            }
        }
        if (f[5]) {
            row *r = &rows[n++];
            snprintf(r->name, sizeof r->name, "%s", f[0]);
            snprintf(r->state, sizeof r->state, "%s", f[1]);
            snprintf(r->origin, sizeof r->origin, "%s", f[2]);
            snprintf(r->def, sizeof r->def, "%s", f[3]);
            snprintf(r->choices, sizeof r->choices, "%s", f[4]);
            snprintf(r->reason, sizeof r->reason, "%s", f[5]);
        }
        line = nl ? nl + 1 : line + len;
    }
    return n;
}

/* seed: accepted where it has no effect (drivers pass it to every test), with its reason. */
static bool lenient(const row *r) { return !strcmp(r->name, "seed") && r->reason[0]; }

/* Every row read or declared not applicable (with a reason); values the user
 * or regress_args set are in effect. Appends what is wrong to why. */
static void judge_rows(const char *what, const row *rows, int n, char *why, size_t wn)
{
    for (int i = 0; i < n; i++) {
        const row *r = &rows[i];
        const char *bad = NULL;
        if (!strcmp(r->state, "unread")) bad = "declared but never read, and not declared not applicable";
        else if (!strcmp(r->state, "not_applicable") && !r->reason[0]) bad = "not applicable without a reason";
        else if (strcmp(r->state, "used") && strcmp(r->origin, "default") && !lenient(r)) bad = "set but not in effect";
        if (bad) {
            size_t off = strlen(why);
            snprintf(why + off, wn - off, "\n  %s: parameter '%s' %s", what, r->name, bad);
        }
    }
}

static void load_test_names(void)
{
    result *r = malloc(sizeof *r);
    const char *args[] = { "list", NULL };
    run(args, r);
    if (r->status != 0) {
        fprintf(stderr, "simrun list failed (%d): %s\n", r->status, r->err);
        exit(1);
    }
    for (const char *line = r->out; *line && n_test_names < MAX_TESTS;) {
        sscanf(line, "%63s", test_names[n_test_names]);
        if (test_names[n_test_names][0]) n_test_names++;
        const char *nl = strchr(line, '\n');
        if (!nl) break;
        line = nl + 1;
    }
    free(r);
}

/* One configuration through --check-params: returns the rows (n), or -1 when
 * the test refused the configuration as a whole (exit 2). Aborts fail. */
static int check_config(const char *test, const char *const *extra, bool regress, row *rows, result *r, char *why,
                        size_t wn)
{
    const char *args[64];
    int n = 0;
    if (regress) args[n++] = "--regress";
    args[n++] = "--check-params";
    args[n++] = test;
    for (; extra && *extra && n < 62; extra++) args[n++] = *extra;
    args[n] = NULL;
    run(args, r);
    char what[512];
    snprintf(what, sizeof what, "%s%s", regress ? "--regress " : "", test);
    for (int i = regress ? 3 : 2; i < n; i++) {
        size_t off = strlen(what);
        snprintf(what + off, sizeof what - off, " %s", args[i]);
    }
    if (r->status != 0 && r->status != 2) {
        size_t off = strlen(why);
        snprintf(why + off, wn - off, "\n  %s: exit status %d: %.300s", what, r->status, r->err);
        return -1;
    }
    int rows_n = parse_rows(r->out, rows);
    if (r->status == 0) judge_rows(what, rows, rows_n, why, wn);
    return r->status == 0 ? rows_n : -1;
}

START_TEST(test_every_parameter_used_or_refused)
{
    const char *test = test_names[_i];
    static row rows[MAX_ROWS], rows2[MAX_ROWS];
    static result r;
    static char why[1 << 15];
    why[0] = 0;
    int n = check_config(test, NULL, false, rows, &r, why, sizeof why);
    ck_assert_msg(n > 0, "%s: --check-params at the defaults: exit %d: %s", test, r.status, r.err);
    row defaults[MAX_ROWS];
    memcpy(defaults, rows, sizeof rows[0] * (size_t)n);
    int runs = 1;
    (void)check_config(test, NULL, true, rows2, &r, why, sizeof why);
    ck_assert_msg(r.status == 0, "%s: --regress --check-params: exit %d: %s", test, r.status, r.err);
    runs++;
    for (int i = 0; i < n; i++) {
        const row *d = &defaults[i];
        char assign[512];
        /* given at its default: used, or refused with a reason */
        snprintf(assign, sizeof assign, "%s=%s", d->name, d->def);
        const char *extra[] = { assign, NULL };
        int m = check_config(test, extra, false, rows2, &r, why, sizeof why);
        runs++;
        if (m >= 0) {
            for (int j = 0; j < m; j++)
                if (!strcmp(rows2[j].name, d->name) && strcmp(rows2[j].state, "used") && !lenient(&rows2[j])) {
                    size_t off = strlen(why);
                    snprintf(why + off, sizeof why - off, "\n  %s %s: accepted but %s", test, assign, rows2[j].state);
                }
        } else if (r.status == 2) {
            char want[128];
            snprintf(want, sizeof want, "parameter '%s' does not apply: ", d->name);
            const char *hit = strstr(r.err, want);
            if (!hit || hit[strlen(want)] == '\n' || !hit[strlen(want)]) {
                size_t off = strlen(why);
                snprintf(why + off, sizeof why - off, "\n  %s %s: refused without saying why it does not apply: %.300s", test,
                         assign, r.err);
            }
        }
        /* every other choice of an enum or bool: the configuration it selects uses or refuses everything */
        if (!strcmp(d->choices, "-")) continue;
        char choices[256];
        snprintf(choices, sizeof choices, "%s", d->choices);
        for (char *save = NULL, *c = strtok_r(choices, "|", &save); c; c = strtok_r(NULL, "|", &save)) {
            if (!strcmp(c, d->def) || (!strcmp(d->choices, "0|1") && !strcmp(c, d->def[0] == '1' ? "1" : "0"))) continue;
            snprintf(assign, sizeof assign, "%s=%s", d->name, c);
            const char *extra2[] = { assign, NULL };
            (void)check_config(test, extra2, false, rows2, &r, why, sizeof why);
            runs++;
        }
    }
    ck_assert_msg(!why[0], "%s: parameters neither used nor refused (%d configurations checked):%s", test, runs, why);
}
END_TEST

/* The rule holds on the command line too: a given parameter the test does not
 * use is refused before anything runs, naming it and why. */
START_TEST(test_refusals_through_simrun)
{
    static result r;
    const char *dup[] = { "--check-params", "kernel_ring", "nodes=8", "nodes=9", NULL };
    run(dup, &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "parameter 'nodes' given twice: nodes=8 and nodes=9"), "%s", r.err);
    const char *ph[] = { "--check-params", "pcie_credit", "ph=64", NULL };
    run(ph, &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "pcie_credit: parameter 'ph' does not apply: the credit sweep sets ph itself"), "%s", r.err);
    const char *mrrs[] = { "--check-params", "pcie_replay", "mrrs=1024", NULL };
    run(mrrs, &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "pcie_replay: parameter 'mrrs' does not apply: ") && strstr(r.err, "MWr"), "%s", r.err);
    /* a real run is refused the same way, before it simulates (no report) */
    const char *real[] = { "--quiet", "--out", "/nonexistent/dir", "pcie_credit", "trace=0", "fc_scale=4", NULL };
    run(real, &r);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "parameter 'fc_scale' does not apply"), "%s", r.err);
    /* seed is accepted everywhere (drivers pass it); where it has no effect the run says so */
    const char *seed[] = { "--check-params", "kernel_ring", "seed=4", NULL };
    run(seed, &r);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.out, "seed\tnot_applicable\tgiven"), "%s", r.out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("test_params");
    TCase *tc = tcase_create("every_test");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_every_parameter_used_or_refused, 0, n_test_names);
    tcase_add_test(tc, test_refusals_through_simrun);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    load_test_names();
    if (n_test_names == 0) {
        fprintf(stderr, "simrun list gave no tests\n");
        return 1;
    }
    return run_suite(suite());
}
