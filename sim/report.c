#include "sim/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/kernel.h"

struct sim_report {
    char *test;
    cJSON *metrics;   /* object */
    cJSON *checks;    /* array */
    cJSON *sim_extra; /* object: fields added to "sim" (ranks, per_rank) */
    unsigned failures;
};

sim_report *sim_report_new(const char *test_name)
{
    sim_report *r = calloc(1, sizeof *r);
    if (!r) sim_fatal("out of memory");
    r->test = strdup(test_name);
    r->metrics = cJSON_CreateObject();
    r->checks = cJSON_CreateArray();
    r->sim_extra = cJSON_CreateObject();
    return r;
}

void sim_report_free(sim_report *r)
{
    if (!r) return;
    cJSON_Delete(r->metrics);
    cJSON_Delete(r->checks);
    cJSON_Delete(r->sim_extra);
    free(r->test);
    free(r);
}

static void set_metric(sim_report *r, const char *name, cJSON *v)
{
    if (cJSON_GetObjectItemCaseSensitive(r->metrics, name)) cJSON_ReplaceItemInObjectCaseSensitive(r->metrics, name, v);
    else cJSON_AddItemToObject(r->metrics, name, v);
}

void sim_report_metric(sim_report *r, const char *name, double value)
{
    /* JSON has no NaN/inf: a metric that is not a number is a bug worth seeing */
    if (!isfinite(value)) sim_fatal("metric %s is not finite (%g)", name, value);
    set_metric(r, name, cJSON_CreateNumber(value));
}

void sim_report_sim_json(sim_report *r, const char *name, cJSON *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(r->sim_extra, name);
    cJSON_AddItemToObject(r->sim_extra, name, value);
}

void sim_report_metric_json(sim_report *r, const char *name, cJSON *value) { set_metric(r, name, value); }

bool sim_check(sim_report *r, const char *name, bool pass, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddBoolToObject(c, "pass", pass);
    cJSON_AddStringToObject(c, "detail", detail);
    cJSON_AddItemToArray(r->checks, c);
    if (!pass) r->failures++;
    return pass;
}

bool sim_report_passed(const sim_report *r) { return r->failures == 0; }
unsigned sim_report_failures(const sim_report *r) { return r->failures; }

double sim_report_get_metric(const sim_report *r, const char *name, double dflt)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r->metrics, name);
    return cJSON_IsNumber(m) ? m->valuedouble : dflt;
}

int sim_mkdir_parents(const char *path)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf) return -1;
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

static int write_json(const char *path, const cJSON *root)
{
    if (sim_mkdir_parents(path)) {
        fprintf(stderr, "error: cannot create the folder for %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *text = cJSON_Print(root);
    if (!text) sim_fatal("out of memory");
    char tmp[4200];
    /* a temporary of this process's own: two runs writing one report (tests run
     * side by side into one folder) must not share it; the rename is atomic */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "error: cannot write %s: %s\n", tmp, strerror(errno));
        free(text);
        return -1;
    }
    fputs(text, f);
    fputc('\n', f);
    free(text);
    if (fclose(f) || rename(tmp, path)) {
        fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int sim_report_write(sim_report *r, const char *path, cJSON *params, uint64_t time_ps, uint64_t events, double wall_s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "test", r->test);
    cJSON_AddItemToObject(root, "params", params ? params : cJSON_CreateObject());
    cJSON_AddItemReferenceToObject(root, "metrics", r->metrics);
    cJSON_AddItemReferenceToObject(root, "checks", r->checks);
    cJSON_AddBoolToObject(root, "pass", r->failures == 0);
    cJSON *sim = cJSON_AddObjectToObject(root, "sim");
    cJSON_AddNumberToObject(sim, "time_ps", (double)time_ps);
    cJSON_AddNumberToObject(sim, "events", (double)events);
    cJSON_AddNumberToObject(sim, "wall_s", wall_s);
    if (!cJSON_GetObjectItemCaseSensitive(r->sim_extra, "ranks")) cJSON_AddNumberToObject(sim, "ranks", 1);   /* one process */
    for (const cJSON *e = r->sim_extra->child; e; e = e->next) cJSON_AddItemToObject(sim, e->string, cJSON_Duplicate(e, 1));
    int rc = write_json(path, root);
    cJSON_Delete(root);
    return rc;
}

void sim_report_print(const sim_report *r, FILE *out)
{
    fprintf(out, "== %s\n", r->test);
    const cJSON *m;
    cJSON_ArrayForEach(m, r->metrics) {
        if (cJSON_IsNumber(m)) fprintf(out, "  %-26s %.6g\n", m->string, m->valuedouble);
        else fprintf(out, "  %-26s (%s, see report)\n", m->string, cJSON_IsArray(m) ? "list" : "table");
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, r->checks) {
        const cJSON *pass = cJSON_GetObjectItemCaseSensitive(c, "pass");
        fprintf(out, "  [%s] %s: %s\n", cJSON_IsTrue(pass) ? "PASS" : "FAIL",
                cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring,
                cJSON_GetObjectItemCaseSensitive(c, "detail")->valuestring);
    }
    fprintf(out, "%s: %s\n", r->test, r->failures ? "FAILED" : "passed");
}

cJSON *sim_json_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0) n = 0;
    char *buf = malloc((size_t)n + 1);
    if (!buf) sim_fatal("out of memory");
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}

int sim_bench_write(const char *path, const char *name, cJSON *object)
{
    cJSON *root = NULL;
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        root = sim_json_read_file(path);
        if (!cJSON_IsObject(root)) {
            fprintf(stderr, "warning: %s was not a JSON object; starting it afresh\n", path);
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) root = cJSON_CreateObject();
    if (cJSON_GetObjectItemCaseSensitive(root, name)) cJSON_ReplaceItemInObjectCaseSensitive(root, name, object);
    else cJSON_AddItemToObject(root, name, object);
    int rc = write_json(path, root);
    cJSON_Delete(root);
    return rc;
}
