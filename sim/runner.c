#include "sim/runner.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/net_presets.h"
#include "sim/presets.h"

#define MAX_TESTS 128

static const sim_test_def *tests[MAX_TESTS];
static unsigned n_tests;

void sim_test_register(const sim_test_def *def)
{
    if (n_tests == MAX_TESTS) sim_fatal("too many tests (max %d)", MAX_TESTS);
    for (unsigned i = 0; i < n_tests; i++)
        if (!strcmp(tests[i]->name, def->name)) sim_fatal("test %s registered twice", def->name);
    tests[n_tests++] = def;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const sim_test_def *const *)a)->name, (*(const sim_test_def *const *)b)->name);
}

static const sim_test_def *find_test(const char *name)
{
    for (unsigned i = 0; i < n_tests; i++)
        if (!strcmp(tests[i]->name, name)) return tests[i];
    return NULL;
}

static const sim_param_def common_params[] = {
    SIM_PARAM_INT("seed", "1", "", 0, 9.2e18, "seed of every random stream in the run"),
    SIM_PARAM_BOOL("trace", "1", "write waves/<test>.fst"),
    SIM_PARAM_END,
};

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double progress_last;

/* The run in progress: sim_test_configured() and the run gate refer to it. */
static sim_test_ctx *cur_ctx;
static sim_params *cur_params;
static bool check_params_mode, cur_configured;   /* one test per process */

static void run_gate(void)
{
    sim_fatal("%s: simulation started before sim_test_configured(); a test reads its parameters, calls "
              "sim_test_configured(c), then simulates", cur_ctx ? cur_ctx->test_name : "?");
}

void sim_test_configured(sim_test_ctx *c)
{
    if (c != cur_ctx || !cur_params) sim_fatal("sim_test_configured: not the runner's test context");
    if (cur_configured) sim_fatal("%s: sim_test_configured() called twice", c->test_name);
    cur_configured = true;
    sim_set_run_gate(NULL);
    sim_params_seal(cur_params);
    char err[4096];
    int refused = sim_params_refuse_unused(cur_params, err, sizeof err);
    if (check_params_mode) {
        sim_params_print_use(cur_params, stdout);
        fflush(stdout);
    }
    if (refused) {
        for (char *save = NULL, *line = strtok_r(err, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            fprintf(stderr, "error: %s\n", line);
        exit(2);
    }
    if (check_params_mode) exit(0);
    /* seed given to a test without random streams: accepted (drivers pass it to every test), said once */
    const char *why = sim_param_not_applicable_reason(cur_params, "seed");
    if (why && sim_param_given(cur_params, "seed") && !c->quiet)
        fprintf(stderr, "note: %s: seed has no effect: %s\n", c->test_name, why);
}

/* A test that rejects its input (sim_input_error -> exit 2) after the runner
 * opened the waves leaves no waves: the run never happened. Without this a
 * half-written FST and the writer's temporary .hier file stayed behind. */
static sim_trace *open_trace;
static char open_trace_path[4096];
static void discard_open_trace(void)
{
    sim_trace *t = open_trace;
    if (!t) return;
    open_trace = NULL;
    sim_trace_close(t);
    remove(open_trace_path);
}

void sim_progress(sim_test_ctx *c, double fraction, const char *fmt, ...)
{
    if (c->quiet) return;
    double now = wall_now();
    if (progress_last == 0) progress_last = now;   /* the first line after a second of running */
    if (now - progress_last < 1.0) return;
    progress_last = now;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] %5.1f%% %s\n", c->test_name, fraction * 100.0, msg);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: simrun list\n"
            "       simrun list-presets   the link presets (topo link=) and the NIC/switch presets (nic=, switch=) with their figures\n"
            "       simrun TEST help\n"
            "       simrun [--regress] [--quiet] [--out DIR] TEST [key=value ...]\n"
            "       simrun [--regress] --check-params TEST [key=value ...]\n"
            "  --regress  apply the test's short regression defaults first (what `make test` runs)\n"
            "  --check-params  configure only (no simulation): print each parameter's use\n"
            "             (name, used|not_applicable|unread, given|regress|default, default, choices, reason)\n"
            "  --out DIR  write DIR/reports/TEST.json and DIR/waves/TEST.fst (default: .)\n"
            "exit status: 0 all checks passed, 1 a check failed, 2 bad input\n");
}

static void list_tests(void)
{
    qsort(tests, n_tests, sizeof *tests, by_name);
    for (unsigned i = 0; i < n_tests; i++) printf("%-20s %s\n", tests[i]->name, tests[i]->help);
}

/* Applies a space-separated "k=v k=v" string as defaults (regress_args). */
static int apply_string(sim_params *ps, const char *args, char *err, size_t errlen)
{
    char *copy = strdup(args ? args : "");
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
        if ((rc = sim_params_set_default(ps, tok, err, errlen))) break;
    free(copy);
    return rc;
}

void sim_source_root(char *buf, size_t n)
{
    snprintf(buf, n, "%s", __FILE__);   /* <root>/sim/runner.c */
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    else snprintf(buf, n, ".");
}

static int runner_main(int argc, char **argv, const sim_pdes_transport *tr);
int sim_runner_main(int argc, char **argv) { return runner_main(argc, argv, NULL); }

int sim_runner_main_ranked(int argc, char **argv, const sim_pdes_transport *tr)
{
    int status = runner_main(argc, argv, tr);
    uint64_t v = tr->rank == 0 ? (uint64_t)status : 0;
    sim_pdes_sum_u64(tr, &v, 1);   /* every rank returns rank 0's */
    return (int)v;
}

static int runner_main(int argc, char **argv, const sim_pdes_transport *tr)
{
    const bool root = !tr || tr->rank == 0;
    bool regress = false, quiet = false;
    const char *out_dir = ".";
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--regress")) regress = true;
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else if (!strcmp(argv[i], "--check-params")) check_params_mode = quiet = true;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_dir = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else if (!strcmp(argv[i], "--list")) { list_tests(); return 0; }
        else {
            fprintf(stderr, "error: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    cur_configured = false;
    const char *name = argv[i++];
    if (!strcmp(name, "list")) {
        list_tests();
        return 0;
    }
    if (!strcmp(name, "list-presets")) {
        topo_presets_print(stdout);
        net_device_presets_print(stdout);
        return 0;
    }
    const sim_test_def *t = find_test(name);
    if (!t) {
        fprintf(stderr, "error: unknown test '%s'; the tests are:\n", name);
        qsort(tests, n_tests, sizeof *tests, by_name);
        for (unsigned j = 0; j < n_tests; j++) fprintf(stderr, "  %s\n", tests[j]->name);
        return 2;
    }
    if (tr && !t->ranked) {
        if (root) {
            fprintf(stderr, "error: test %s does not run over MPI ranks (%u ranks would each run it whole); run it in one "
                            "process, or sweep it with --sweep; tests that run over ranks (docs/parallel.md):", t->name, tr->size);
            for (unsigned j = 0; j < n_tests; j++)
                if (tests[j]->ranked) fprintf(stderr, " %s", tests[j]->name);
            fprintf(stderr, "\n");
        }
        return 2;
    }
    const sim_param_def *tables[2] = { t->params, common_params };
    sim_params *ps = sim_params_new(tables, 2);
    sim_params_set_owner(ps, t->name);
    sim_params_lenient(ps, "seed");
    char err[1024];
    /* waves of a run over ranks are each rank's: off unless asked for (the fabric says whether it can) */
    if (tr && sim_params_set_default(ps, "trace=0", err, sizeof err)) sim_fatal("trace default: %s", err);
    if (regress && apply_string(ps, t->regress_args, err, sizeof err)) sim_fatal("test %s: bad regress_args: %s", t->name, err);
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "help") || !strcmp(argv[i], "--help")) {
            sim_params_print_help(ps, t->name, t->help);
            printf("\nA parameter given that does not apply to the configuration is refused (exit 2);\n"
                   "`simrun --check-params %s k=v ...` shows how each one is used, without running.\n", t->name);
            sim_params_free(ps);
            return 0;
        }
        if (sim_params_set(ps, argv[i], err, sizeof err)) {
            fprintf(stderr, "error: %s: %s\n", t->name, err);
            sim_params_free(ps);
            return 2;
        }
    }

    sim_test_ctx c = { 0 };
    c.test_name = t->name;
    c.k = sim_kernel_new();
    c.params = ps;
    c.report = sim_report_new(t->name);
    c.seed = (uint64_t)sim_param_int(ps, "seed");
    c.quiet = quiet || !root;
    c.out_dir = out_dir;
    c.transport = tr;
    char path[4096];
    /* trace is the runner's: always in effect. seed too, unless the test says
     * it has no random streams in this configuration. */
    if (sim_param_bool(ps, "trace") && !check_params_mode) {
        if (tr && tr->rank > 0) snprintf(path, sizeof path, "%s/waves/%s.rank%u.fst", out_dir, t->name, tr->rank);
        else snprintf(path, sizeof path, "%s/waves/%s.fst", out_dir, t->name);
        if (sim_mkdir_parents(path) == 0) c.trace = sim_trace_open(c.k, path);
        open_trace = c.trace;
        snprintf(open_trace_path, sizeof open_trace_path, "%s", path);
        atexit(discard_open_trace);
        if (!c.trace) {
            fprintf(stderr, "error: cannot write %s\n", path);
            return 2;
        }
    }
    cur_ctx = &c;
    cur_params = ps;
    sim_set_run_gate(run_gate);
    double t0 = wall_now();
    t->run(&c);
    double wall = wall_now() - t0;
    if (!cur_configured)
        sim_fatal("%s: returned without calling sim_test_configured(); every test reads its parameters, then calls it",
                  t->name);
    if (!c.sim_time_ps) c.sim_time_ps = sim_now(c.k);
    if (!c.sim_events) c.sim_events = sim_event_count(c.k);
    open_trace = NULL;
    const bool traced = c.trace != NULL;
    sim_trace_close(c.trace);

    int rc = 0;
    if (tr) sim_report_sim_json(c.report, "ranks", cJSON_CreateNumber(tr->size));
    if (root) {
        snprintf(path, sizeof path, "%s/reports/%s.json", out_dir, t->name);
        rc = sim_report_write(c.report, path, sim_params_json(ps), c.sim_time_ps, c.sim_events, wall);
        sim_report_print(c.report, stdout);
        printf("  sim time %.3f us, %llu events, %.2f s wall%s; report %s%s%s\n", (double)c.sim_time_ps * 1e-6,
               (unsigned long long)c.sim_events, wall, tr ? " (rank 0)" : "", path, traced ? ", waves " : "",
               traced ? "written" : "");
    }
    int status = rc ? 2 : sim_report_passed(c.report) ? 0 : 1;
    sim_report_free(c.report);
    sim_kernel_free(c.k);
    sim_params_free(ps);
    cur_ctx = NULL;
    cur_params = NULL;
    return status;
}
