/* Typed test parameters: defaults, units, ranges, help; key=value overrides.
 * An unknown key, a malformed or out-of-range value, or a key given twice is a
 * user error: the message names the key, the value and what is allowed, and
 * the runner exits with status 2. Nothing is silently ignored:
 *
 * Every parameter a user sets is used or refused. Reading a parameter
 * (sim_param_int and the others) marks it used. A test declares with
 * sim_param_not_applicable() why a parameter has no effect in the current
 * configuration; that overrides a read (shared helpers read every field). A
 * parameter the user gave that is declared not applicable is refused at once
 * (exit 2, the reason in the message); one given and never read is refused when
 * the test calls sim_test_configured() (sim/runner.h), before it simulates.
 * Reports list only the parameters in effect; the others go under
 * "not_applicable" with their reason. */
#ifndef SIM_PARAMS_H
#define SIM_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cJSON cJSON;

enum sim_param_type { SIM_P_INT, SIM_P_DOUBLE, SIM_P_BOOL, SIM_P_ENUM, SIM_P_STRING };

typedef struct sim_param_def {
    const char *name;
    enum sim_param_type type;
    const char *def;          /* default, as it would be typed */
    const char *unit;         /* "ns", "B", "flits", "" */
    double min, max;          /* inclusive range for INT and DOUBLE (ignored if min > max) */
    const char *choices;      /* ENUM: "wr|rd|rdwr" */
    const char *help;
} sim_param_def;

/* Convenience initialisers for the tables tests declare. */
#define SIM_PARAM_INT(n, d, u, lo, hi, h)    { (n), SIM_P_INT, (d), (u), (lo), (hi), NULL, (h) }
#define SIM_PARAM_DOUBLE(n, d, u, lo, hi, h) { (n), SIM_P_DOUBLE, (d), (u), (lo), (hi), NULL, (h) }
#define SIM_PARAM_BOOL(n, d, h)              { (n), SIM_P_BOOL, (d), "", 1, 0, NULL, (h) }
#define SIM_PARAM_ENUM(n, d, c, h)           { (n), SIM_P_ENUM, (d), "", 1, 0, (c), (h) }
#define SIM_PARAM_STRING(n, d, h)            { (n), SIM_P_STRING, (d), "", 1, 0, NULL, (h) }
#define SIM_PARAM_END                        { NULL, SIM_P_INT, NULL, NULL, 0, 0, NULL, NULL }

typedef struct sim_params sim_params;

/* Builds the parameter set from one or more NULL-terminated def tables
 * (a test's own and the runner's common ones). */
sim_params *sim_params_new(const sim_param_def *const *tables, unsigned n_tables);
void sim_params_free(sim_params *p);
/* Applies "key=value" the user gave. Returns 0, or -1 with a message in err
 * (key, value, what is allowed; or both values of a key given twice). */
int sim_params_set(sim_params *p, const char *assignment, char *err, size_t errlen);
/* Applies "key=value" as a default (a test's regress_args): the user may
 * override it once, and it must be in effect like a given value. */
int sim_params_set_default(sim_params *p, const char *assignment, char *err, size_t errlen);
/* Validates every default (a broken default is a programming error). */
int sim_params_check_defaults(const sim_params *p, char *err, size_t errlen);

/* Typed access; asking for an undeclared name or the wrong type aborts (a bug). */
int64_t sim_param_int(const sim_params *p, const char *name);
double sim_param_double(const sim_params *p, const char *name);
bool sim_param_bool(const sim_params *p, const char *name);
const char *sim_param_str(const sim_params *p, const char *name);   /* ENUM and STRING */
/* Index of an ENUM's value in its choices list. */
int sim_param_enum(const sim_params *p, const char *name);
/* True when the user gave the key explicitly (not the default). Does not count as a read. */
bool sim_param_given(const sim_params *p, const char *name);

/* The parameter has no effect in this configuration, because (printf format)...
 * If the user gave it: error, exit 2, "<test>: parameter 'x' does not apply: <why>".
 * Declare it before the test checks values that involve it, so the user hears
 * the real reason first. */
void sim_param_not_applicable(const sim_params *p, const char *name, const char *why_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The reason declared for name, or NULL. */
const char *sim_param_not_applicable_reason(const sim_params *p, const char *name);
/* Read and not declared not applicable. */
bool sim_param_in_effect(const sim_params *p, const char *name);

/* The runner's side (sim/runner.c). */
void sim_params_set_owner(sim_params *p, const char *test_name);  /* names the test in messages */
/* A given value that does not apply is noted in the report, not refused (seed:
 * drivers pass it to every test; a test without random streams gives the same
 * result for every seed, which is what the seed promises). */
void sim_params_lenient(sim_params *p, const char *name);
/* Given (or set by regress_args) but not in effect: returns how many, with one
 * line each in err naming the parameter and why it does not apply. */
int sim_params_refuse_unused(const sim_params *p, char *err, size_t errlen);
/* The test has read its configuration: reading a parameter not read before, or
 * declaring one not applicable, is now a bug (abort). */
void sim_params_seal(sim_params *p);
/* One line per parameter: name, used|not_applicable|unread, given|regress|default,
 * default text, choices (enum; 0|1 for bool; else -), reason (tab-separated;
 * simrun --check-params prints this). */
void sim_params_print_use(const sim_params *p, FILE *out);

/* The values in effect, as typed JSON ({"gen":5,"op":"wr",...}), and under
 * "not_applicable" the others with their reasons ({"mrrs":"applies only to reads ..."}). */
#define SIM_PARAMS_NOT_APPLICABLE_KEY "not_applicable"
cJSON *sim_params_json(const sim_params *p);
/* The help table: name, type, default, unit, range/choices, help text. */
void sim_params_print_help(const sim_params *p, const char *test_name, const char *test_help);

#endif
