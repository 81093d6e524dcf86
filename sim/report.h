/* The one report writer: metrics, checks, and the JSON file every test writes:
 * {"test","params","metrics","checks":[{"name","pass","detail"}],"pass",
 *  "sim":{"time_ps","events","wall_s","ranks",...}}. */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cJSON cJSON;
typedef struct sim_report sim_report;

sim_report *sim_report_new(const char *test_name);
void sim_report_free(sim_report *r);

void sim_report_metric(sim_report *r, const char *name, double value);
/* Structured metrics (lists, tables, histograms): the report takes ownership. */
void sim_report_metric_json(sim_report *r, const char *name, cJSON *value);
/* A field of the report's "sim" object beside time_ps, events and wall_s
 * (how the run was made: ranks, per_rank); the report takes ownership, a
 * second call with the same name replaces the first. */
void sim_report_sim_json(sim_report *r, const char *name, cJSON *value);
/* A check: pass or fail, with a human detail line (printf-style). Returns pass. */
bool sim_check(sim_report *r, const char *name, bool pass, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
bool sim_report_passed(const sim_report *r);
unsigned sim_report_failures(const sim_report *r);
/* Look-ups, for tests that compare metrics of sub-runs. */
double sim_report_get_metric(const sim_report *r, const char *name, double dflt);

/* Completes and writes the JSON file (params JSON is taken over). Returns 0 or -1 (prints why). */
int sim_report_write(sim_report *r, const char *path, cJSON *params, uint64_t time_ps, uint64_t events, double wall_s);
/* The short human summary: metrics, then each check with PASS/FAIL. */
void sim_report_print(const sim_report *r, FILE *out);

/* The JSON in a file (a report, bench.json); NULL when it cannot be read or parsed. */
cJSON *sim_json_read_file(const char *path);

/* reports/bench.json holds one object per benchmark: replace `name` in the file, keeping the others. */
int sim_bench_write(const char *path, const char *name, cJSON *object);

/* Writes path's parent directories (mkdir -p). Returns 0 or -1. */
int sim_mkdir_parents(const char *path);

#endif
