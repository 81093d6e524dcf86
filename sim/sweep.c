/* Parameter sweeps: one simrun process per point, results merged in point
 * order (sim/sweep.h, docs/sweeps.md). A point is its own process because a
 * test owns its process (the runner's one-test state, exit() on bad input);
 * the cost is measured as the sweep's overhead per point. */
#include "sim/sweep.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/kernel.h"
#include "sim/report.h"

extern char **environ;

typedef struct sweep {
    const char *test, *out_dir;
    bool regress, quiet, trace_given;
    sim_sweep_axes axes;
    char self[4096];
    char point_dir[4096];          /* DIR/reports/TEST.sweep */
    cJSON **results;               /* per point: {"index","status","report"} */
    unsigned long done;
    double t0, last_progress;
} sweep;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool sim_sweep_requested(int argc, char **argv)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--sweep")) return true;
        if (!strcmp(argv[i], "--out")) i++;   /* its value */
    }
    return false;
}

/* argv of one point's simrun: self [--regress] mode... TEST swept k=v... [trace=0]; freed by the caller (strings too). */
static char **point_argv(const sweep *s, unsigned long point, const char *mode, const char *out)
{
    char **av = calloc(s->axes.naxes + 10, sizeof *av);
    if (!av) abort();
    unsigned n = 0;
    av[n++] = strdup(s->self);
    av[n++] = strdup(mode);
    if (s->regress) av[n++] = strdup("--regress");
    if (out) {
        av[n++] = strdup("--out");
        av[n++] = strdup(out);
    }
    av[n++] = strdup(s->test);
    for (unsigned j = 0; j < s->axes.naxes; j++) {
        char *kv = malloc(strlen(s->axes.keys[j]) + strlen(sim_sweep_axes_value(&s->axes, point, j)) + 2);
        if (!kv) abort();
        sprintf(kv, "%s=%s", s->axes.keys[j], sim_sweep_axes_value(&s->axes, point, j));
        av[n++] = kv;
    }
    if (!s->trace_given) av[n++] = strdup("trace=0");   /* waves of every point only when asked for */
    return av;
}

static void free_argv(char **av)
{
    for (char **p = av; *p; p++) free(*p);
    free(av);
}

static void describe_point(const sweep *s, unsigned long point, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (unsigned j = 0; j < s->axes.naxes && used < n; j++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s=%s", j ? " " : "", s->axes.keys[j], sim_sweep_axes_value(&s->axes, point, j));
}

/* The environment of a point: ours without the MPI launcher's variables, so
 * a point is one plain process, not a rank of the sweep's job. */
static char **point_environ(void)
{
    static char **env;
    if (env) return env;
    size_t n = 0;
    while (environ[n]) n++;
    env = calloc(n + 1, sizeof *env);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "OMPI_", 5) && strncmp(environ[i], "PMIX_", 5) && strncmp(environ[i], "PMI_", 4))
            env[m++] = environ[i];
    return env;
}

/* Starts av with stdout and stderr into log (NULL: /dev/null). Returns the pid, or -1. */
static pid_t spawn(char **av, const char *log)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, av[0], &fa, NULL, av, point_environ());
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        fprintf(stderr, "error: sweep: cannot start %s: %s\n", av[0], strerror(rc));
        return -1;
    }
    return pid;
}

static int exit_status(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0); }

static int wait_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 127;
    return exit_status(st);
}

/* Prints a log file's lines to stderr, indented (the reason a point was refused or failed). */
static void print_log(const char *path, unsigned max_lines)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    for (unsigned n = 0; n < max_lines && fgets(line, sizeof line, f); n++) fprintf(stderr, "    %s", line);
    fclose(f);
}

/* Configures every point without running it (simrun --check-params). Returns 0, or 2 when any is refused. */
static int check_points(sweep *s)
{
    char log[4200];
    snprintf(log, sizeof log, "%s/check.log", s->point_dir);
    unsigned long refused = 0;
    for (unsigned long p = 0; p < s->axes.npoints; p++) {
        char **av = point_argv(s, p, "--check-params", NULL);
        pid_t pid = spawn(av, log);
        free_argv(av);
        int st = pid < 0 ? 127 : wait_status(pid);
        if (st == 0) continue;
        if (refused++ < 10) {
            char what[1024];
            describe_point(s, p, what, sizeof what);
            fprintf(stderr, "error: sweep %s: point p%lu of %lu (%s) refused (exit %d):\n", s->test, p, s->axes.npoints, what, st);
            print_log(log, 8);
        }
    }
    remove(log);
    if (!refused) return 0;
    fprintf(stderr, "error: sweep %s: %lu of %lu points refused; nothing was run\n", s->test, refused, s->axes.npoints);
    return 2;
}

static void point_path(const sweep *s, unsigned long p, const char *what, char *buf, size_t n)
{
    snprintf(buf, n, "%s/p%lu%s", s->point_dir, p, what);
}

/* Runs point p in a child. Returns its pid (-1: could not start). */
static pid_t start_point(const sweep *s, unsigned long p)
{
    char out[4200], log[4200];
    point_path(s, p, "", out, sizeof out);
    point_path(s, p, ".log", log, sizeof log);
    char **av = point_argv(s, p, "--quiet", out);
    pid_t pid = spawn(av, log);
    free_argv(av);
    return pid;
}

/* The result of point p, as text for the dispatcher: {"index","status","report"}. */
static char *finish_point(const sweep *s, unsigned long p, int status)
{
    char out[4200], from[4300], to[4200];
    point_path(s, p, "", out, sizeof out);
    snprintf(from, sizeof from, "%s/reports/%s.json", out, s->test);
    point_path(s, p, ".json", to, sizeof to);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "index", (double)p);
    cJSON_AddNumberToObject(r, "status", status);
    cJSON *report = sim_json_read_file(from);
    if (report) {
        rename(from, to);
        snprintf(from, sizeof from, "%s/reports", out);
        rmdir(from);
        rmdir(out);   /* left when it holds waves */
    }
    cJSON_AddItemToObject(r, "report", report ? report : cJSON_CreateNull());
    char *text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return text;
}

static void progress(sweep *s, bool last)
{
    double now = wall_now();
    if (s->quiet || (!last && now - s->last_progress < 1.0)) return;
    s->last_progress = now;
    double el = now - s->t0;
    double left = s->done ? el / (double)s->done * (double)(s->axes.npoints - s->done) : 0;
    fprintf(stderr, "[sweep %s] %lu/%lu points, %.1f s, ~%.1f s left\n", s->test, s->done, s->axes.npoints, el, left);
}

static void take_result(sweep *s, char *text)
{
    cJSON *r = cJSON_Parse(text);
    free(text);
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(r, "index");
    if (!cJSON_IsNumber(idx) || idx->valuedouble < 0 || idx->valuedouble >= (double)s->axes.npoints ||
        s->results[(unsigned long)idx->valuedouble]) {
        fprintf(stderr, "error: sweep: a worker sent a malformed or repeated result\n");
        cJSON_Delete(r);
        return;
    }
    s->results[(unsigned long)idx->valuedouble] = r;
    s->done++;
    progress(s, s->done == s->axes.npoints);
}

/* Rank 0 (or the only process): runs points and hands the others out. */
static void dispatch(sweep *s, const sim_sweep_comm *comm, unsigned long npoints)
{
    unsigned long next = 0;
    int asking = comm ? comm->size - 1 : 0;   /* workers not yet told to stop */
    pid_t own = 0;
    unsigned long own_point = 0;
    while (s->done < npoints || asking > 0) {
        bool busy = false;
        if (!own && next < npoints) {
            own_point = next++;
            own = start_point(s, own_point);
            if (own < 0) take_result(s, finish_point(s, own_point, 127)), own = 0;
            busy = true;
        }
        int w;
        char *res;
        while (comm && comm->poll(&w, &res)) {
            if (res) take_result(s, res);
            int give = next < npoints ? (int)next++ : -1;
            if (give < 0) asking--;
            comm->reply(w, give);
            busy = true;
        }
        if (own) {
            int st;
            pid_t r = waitpid(own, &st, comm ? WNOHANG : 0);
            if (r == own) {
                take_result(s, finish_point(s, own_point, exit_status(st)));
                own = 0;
                busy = true;
            }
        }
        if (!busy) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
}

static void worker(const sweep *s, const sim_sweep_comm *comm)
{
    char *res = NULL;
    for (;;) {
        int p = comm->ask(res);
        free(res);
        res = NULL;
        if (p < 0) return;
        pid_t pid = start_point(s, (unsigned long)p);
        res = finish_point(s, (unsigned long)p, pid < 0 ? 127 : wait_status(pid));
    }
}

/* Stale points of an earlier sweep of the same test (p<index>.json/.log). */
static void clear_point_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        unsigned long p;
        char tail[8];
        if (sscanf(e->d_name, "p%lu.%7s", &p, tail) == 2 && (!strcmp(tail, "json") || !strcmp(tail, "log"))) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    }
    closedir(d);
}

/* Numbers, booleans and strings of a metrics object, nested objects as a.b (arrays are left out). */
static void flatten(cJSON *into, const char *prefix, const cJSON *item)
{
    char name[512];
    for (const cJSON *c = item->child; c; c = c->next) {
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", c->string);
        if (cJSON_IsObject(c)) flatten(into, name, c);
        else if (cJSON_IsNumber(c) || cJSON_IsBool(c) || cJSON_IsString(c)) cJSON_AddItemToObject(into, name, cJSON_Duplicate(c, 0));
    }
}

static void csv_field(FILE *f, const cJSON *v)
{
    if (!v) return;
    if (cJSON_IsNumber(v)) fprintf(f, "%.10g", v->valuedouble);
    else if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "1" : "0", f);
    else if (cJSON_IsString(v)) {
        const char *t = v->valuestring;
        if (!strpbrk(t, ",\"\n")) { fputs(t, f); return; }
        fputc('"', f);
        for (; *t; t++) {
            if (*t == '"') fputc('"', f);
            fputc(*t, f);
        }
        fputc('"', f);
    }
}

/* One row per point: index, the swept values, pass, then every metric any point reported. */
static int write_csv(const sweep *s, const cJSON *points, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "error: sweep: cannot write %s\n", path); return -1; }
    cJSON *columns = cJSON_CreateObject();   /* first-seen order; the values are unused */
    cJSON *flat = cJSON_CreateArray();
    for (const cJSON *pt = points->child; pt; pt = pt->next) {
        cJSON *row = cJSON_CreateObject();
        flatten(row, "", cJSON_GetObjectItemCaseSensitive(pt, "metrics"));
        for (const cJSON *c = row->child; c; c = c->next)
            if (!cJSON_GetObjectItemCaseSensitive(columns, c->string)) cJSON_AddNullToObject(columns, c->string);
        cJSON_AddItemToArray(flat, row);
    }
    fputs("point", f);
    for (unsigned j = 0; j < s->axes.naxes; j++) fprintf(f, ",%s", s->axes.keys[j]);
    fputs(",pass", f);
    for (const cJSON *c = columns->child; c; c = c->next) {
        bool clash = !strcmp(c->string, "point") || !strcmp(c->string, "pass");   /* a metric named like a swept key or ours */
        for (unsigned j = 0; j < s->axes.naxes; j++) clash |= !strcmp(c->string, s->axes.keys[j]);
        fprintf(f, ",%s%s", clash ? "metrics." : "", c->string);
    }
    fputc('\n', f);
    const cJSON *row = flat->child;
    for (const cJSON *pt = points->child; pt; pt = pt->next, row = row->next) {
        fprintf(f, "%d", cJSON_GetObjectItemCaseSensitive(pt, "index")->valueint);
        const cJSON *swept = cJSON_GetObjectItemCaseSensitive(pt, "swept");
        for (unsigned j = 0; j < s->axes.naxes; j++) {
            fputc(',', f);
            csv_field(f, cJSON_GetObjectItemCaseSensitive(swept, s->axes.keys[j]));
        }
        fputc(',', f);
        csv_field(f, cJSON_GetObjectItemCaseSensitive(pt, "pass"));
        for (const cJSON *c = columns->child; c; c = c->next) {
            fputc(',', f);
            csv_field(f, cJSON_GetObjectItemCaseSensitive(row, c->string));
        }
        fputc('\n', f);
    }
    cJSON_Delete(columns);
    cJSON_Delete(flat);
    return fclose(f) ? -1 : 0;
}

static cJSON *take(cJSON *report, const char *name, cJSON *dflt)
{
    cJSON *v = report ? cJSON_DetachItemFromObjectCaseSensitive(report, name) : NULL;
    if (v) cJSON_Delete(dflt);
    return v ? v : dflt;
}

/* Names a point that did not pass and why (exit status, failed checks, its log). */
static void report_failure(const sweep *s, unsigned long p, int status, const cJSON *checks)
{
    char what[1024], log[4200];
    describe_point(s, p, what, sizeof what);
    point_path(s, p, ".log", log, sizeof log);
    fprintf(stderr, "FAIL sweep %s point p%lu (%s): ", s->test, p, what);
    if (status == 1) {
        fputs("failed checks:", stderr);
        for (const cJSON *c = checks ? checks->child : NULL; c; c = c->next)
            if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "pass")))
                fprintf(stderr, " %s", cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring);
    } else if (status > 128) fprintf(stderr, "killed by signal %d", status - 128);
    else fprintf(stderr, "exit status %d", status);
    fprintf(stderr, "; log %s\n", log);
    if (status != 1) print_log(log, 8);
}

/* The merged report: reports/TEST.sweep.json and .csv. Returns 0 or -1. */
static int write_merged(sweep *s, int ranks, double wall_s, bool *all_pass, bool *any_refused)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "test", s->test);
    cJSON *axes = cJSON_AddObjectToObject(root, "axes");
    for (unsigned j = 0; j < s->axes.naxes; j++)
        cJSON_AddItemToObject(axes, s->axes.keys[j], cJSON_CreateStringArray((const char *const *)s->axes.values[j], (int)s->axes.nvalues[j]));
    cJSON *points = cJSON_AddArrayToObject(root, "points");
    double points_wall_s = 0;
    unsigned long failed = 0, refused = 0;
    for (unsigned long p = 0; p < s->axes.npoints; p++) {
        cJSON *r = s->results[p];
        const int status = cJSON_GetObjectItemCaseSensitive(r, "status")->valueint;
        cJSON *report = cJSON_GetObjectItemCaseSensitive(r, "report");
        if (!cJSON_IsObject(report)) report = NULL;
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddNumberToObject(pt, "index", (double)p);
        cJSON *swept = cJSON_AddObjectToObject(pt, "swept");
        for (unsigned j = 0; j < s->axes.naxes; j++) cJSON_AddStringToObject(swept, s->axes.keys[j], sim_sweep_axes_value(&s->axes, p, j));
        const bool pass = status == 0 && report && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(report, "pass"));
        cJSON_AddItemToObject(pt, "params", take(report, "params", cJSON_CreateNull()));
        cJSON_AddItemToObject(pt, "metrics", take(report, "metrics", cJSON_CreateObject()));
        cJSON *checks = take(report, "checks", cJSON_CreateArray());
        cJSON_AddItemToObject(pt, "checks", checks);
        cJSON_AddBoolToObject(pt, "pass", pass);
        cJSON_AddNumberToObject(pt, "status", status);
        cJSON *sim = take(report, "sim", cJSON_CreateNull());
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(sim, "wall_s");
        if (cJSON_IsNumber(w)) points_wall_s += w->valuedouble;
        cJSON_AddItemToObject(pt, "sim", sim);
        cJSON_AddItemToArray(points, pt);
        if (!pass) {
            failed++;
            refused += status == 2;
            report_failure(s, p, status, checks);
        }
    }
    *all_pass = failed == 0;
    if (refused)   /* a test that checks part of its input only when it builds the system */
        fprintf(stderr, "error: sweep %s: %lu point(s) refused their input when they ran (exit 2)\n", s->test, refused);
    cJSON_AddBoolToObject(root, "pass", *all_pass);
    cJSON *meta = cJSON_AddObjectToObject(root, "sweep");
    cJSON_AddNumberToObject(meta, "points", (double)s->axes.npoints);
    cJSON_AddNumberToObject(meta, "failed", (double)failed);
    cJSON_AddNumberToObject(meta, "ranks", ranks);
    cJSON_AddNumberToObject(meta, "wall_s", wall_s);
    cJSON_AddNumberToObject(meta, "points_wall_s", points_wall_s);
    /* what running a point costs beyond its own run: processes, configuring, merging */
    cJSON_AddNumberToObject(meta, "overhead_ms_per_point", (wall_s * ranks - points_wall_s) * 1e3 / (double)s->axes.npoints);
    char path[4200], csv[4200];
    snprintf(path, sizeof path, "%s/reports/%s.sweep.json", s->out_dir, s->test);
    snprintf(csv, sizeof csv, "%s/reports/%s.sweep.csv", s->out_dir, s->test);
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    int rc = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF ? 0 : -1;
    if (f && fclose(f)) rc = -1;
    if (rc) fprintf(stderr, "error: sweep: cannot write %s\n", path);
    free(text);
    if (!rc) rc = write_csv(s, points, csv);
    cJSON_Delete(root);
    *any_refused = refused > 0;
    if (!rc)
        printf("sweep %s: %lu points, %lu failed, %.2f s wall on %d process%s; %s, %s\n", s->test, s->axes.npoints, failed, wall_s,
               ranks, ranks > 1 ? "es" : "", path, csv);
    return rc;
}

int sim_sweep_main(int argc, char **argv, const sim_sweep_comm *comm)
{
    sweep s = { .out_dir = "." };
    const bool master = !comm || comm->rank == 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--sweep")) continue;
        else if (!strcmp(argv[i], "--regress")) s.regress = true;
        else if (!strcmp(argv[i], "--quiet")) s.quiet = true;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) s.out_dir = argv[++i];
        else {
            if (master) fprintf(stderr, "error: sweep: unknown option '%s'; allowed: --regress, --quiet, --out DIR\n", argv[i]);
            return 2;
        }
    }
    if (i >= argc) {
        if (master) fprintf(stderr, "usage: simrun [--regress] [--quiet] [--out DIR] --sweep TEST k=v1,v2,... [j=a|b ...]\n");
        return 2;
    }
    s.test = argv[i++];
    char err[1024];
    if (sim_sweep_axes_parse(&s.axes, argc - i, argv + i, err, sizeof err)) {
        if (master) fprintf(stderr, "error: sweep %s: %s\n", s.test, err);
        return 2;
    }
    for (unsigned j = 0; j < s.axes.naxes; j++) s.trace_given |= !strcmp(s.axes.keys[j], "trace");
    ssize_t n = readlink("/proc/self/exe", s.self, sizeof s.self - 1);
    if (n <= 0) sim_fatal("sweep: cannot find this program (/proc/self/exe)");
    s.self[n] = 0;
    snprintf(s.point_dir, sizeof s.point_dir, "%s/reports/%s.sweep", s.out_dir, s.test);
    char probe[4300];
    snprintf(probe, sizeof probe, "%s/x", s.point_dir);
    if (sim_mkdir_parents(probe)) {
        if (master) fprintf(stderr, "error: sweep: cannot make %s\n", s.point_dir);
        return 2;
    }
    if (!master) {
        worker(&s, comm);
        sim_sweep_axes_free(&s.axes);
        return 0;
    }

    s.t0 = s.last_progress = wall_now();
    clear_point_dir(s.point_dir);
    int rc = check_points(&s);   /* refused: the workers are told to stop at once */
    s.results = calloc(s.axes.npoints, sizeof *s.results);
    if (!s.results) abort();
    if (!s.quiet && !rc)
        fprintf(stderr, "[sweep %s] %lu points on %d process%s\n", s.test, s.axes.npoints, comm ? comm->size : 1,
                comm && comm->size > 1 ? "es" : "");
    dispatch(&s, comm, rc ? 0 : s.axes.npoints);
    bool all_pass = true, any_refused = false;
    if (!rc) rc = write_merged(&s, comm ? comm->size : 1, wall_now() - s.t0, &all_pass, &any_refused) || any_refused ? 2 : all_pass ? 0 : 1;
    for (unsigned long p = 0; p < s.axes.npoints; p++) cJSON_Delete(s.results[p]);
    free(s.results);
    sim_sweep_axes_free(&s.axes);
    return rc;
}
