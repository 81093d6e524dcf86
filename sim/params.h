/* Typed test parameters: defaults, units, ranges, help; key=value overrides.
 * An unknown key, a malformed or out-of-range value is a user error: the
 * message names the key, the value and what is allowed, and the runner exits
 * with status 2. Nothing is silently ignored. */
#ifndef SIM_PARAMS_H
#define SIM_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Applies "key=value". Returns 0, or -1 with a message in err (key, value, what is allowed). */
int sim_params_set(sim_params *p, const char *assignment, char *err, size_t errlen);
/* Validates every default (a broken default is a programming error). */
int sim_params_check_defaults(const sim_params *p, char *err, size_t errlen);

/* Typed access; asking for an undeclared name or the wrong type aborts (a bug). */
int64_t sim_param_int(const sim_params *p, const char *name);
double sim_param_double(const sim_params *p, const char *name);
bool sim_param_bool(const sim_params *p, const char *name);
const char *sim_param_str(const sim_params *p, const char *name);   /* ENUM and STRING */
/* Index of an ENUM's value in its choices list. */
int sim_param_enum(const sim_params *p, const char *name);
/* True when the user gave the key explicitly (not the default). */
bool sim_param_given(const sim_params *p, const char *name);

/* Every effective value, as typed JSON ({"gen":5,"op":"wr",...}). */
cJSON *sim_params_json(const sim_params *p);
/* The help table: name, type, default, unit, range/choices, help text. */
void sim_params_print_help(const sim_params *p, const char *test_name, const char *test_help);

#endif
