#include "sim/params.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"

enum origin { FROM_DEFAULT, FROM_REGRESS, FROM_USER };

typedef struct param {
    const sim_param_def *def;
    char *text;        /* effective value as given */
    int64_t i;
    double d;
    bool b;
    int choice;
    enum origin origin;
    bool read;         /* the test asked for its value */
    bool lenient;      /* given but not applicable: noted, not refused (seed) */
    char *na_reason;   /* declared not applicable in this configuration, and why */
} param;

struct sim_params {
    param *v;
    size_t n;
    const char *owner; /* the test, for messages */
    bool sealed;       /* the test has read its configuration */
};

static const char *type_name(enum sim_param_type t)
{
    switch (t) {
    case SIM_P_INT: return "int";
    case SIM_P_DOUBLE: return "real";
    case SIM_P_BOOL: return "bool";
    case SIM_P_ENUM: return "enum";
    case SIM_P_STRING: return "string";
    }
    return "?";
}

static bool has_range(const sim_param_def *d) { return d->min <= d->max; }

static void allowed(const sim_param_def *d, char *buf, size_t n)
{
    switch (d->type) {
    case SIM_P_INT:
        if (has_range(d)) snprintf(buf, n, "an integer from %.0f to %.0f", d->min, d->max);
        else snprintf(buf, n, "an integer");
        break;
    case SIM_P_DOUBLE:
        if (has_range(d)) snprintf(buf, n, "a number from %g to %g", d->min, d->max);
        else snprintf(buf, n, "a number");
        break;
    case SIM_P_BOOL: snprintf(buf, n, "0 or 1 (also true/false, yes/no, on/off)"); break;
    case SIM_P_ENUM: snprintf(buf, n, "one of %s", d->choices); break;
    case SIM_P_STRING: snprintf(buf, n, "any text"); break;
    }
}

static int choice_index(const char *choices, const char *v)
{
    size_t len = strlen(v);
    int idx = 0;
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, v, n)) return idx;
        if (!bar) break;
        p = bar + 1;
    }
    return -1;
}

/* Parses text into p. Returns 0, or -1 with err set. */
static int parse(param *p, const char *text, char *err, size_t errlen)
{
    const sim_param_def *d = p->def;
    char what[160];
    allowed(d, what, sizeof what);
    char *end = NULL;
    errno = 0;
    switch (d->type) {
    case SIM_P_INT: {
        int base = (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) ? 16 : 10;
        long long v = strtoll(text, &end, base);
        /* allow 1e6-style integers too: users type them */
        if (end && *end && (*end == 'e' || *end == 'E' || *end == '.')) {
            double x = strtod(text, &end);
            if (*end || x != floor(x) || fabs(x) > 9.2e18) goto bad;
            v = (long long)x;
        }
        if (!*text || *end || errno) goto bad;
        if (has_range(d) && ((double)v < d->min || (double)v > d->max)) goto bad;
        p->i = v;
        p->d = (double)v;
        break;
    }
    case SIM_P_DOUBLE: {
        double v = strtod(text, &end);
        if (!*text || *end || errno || !isfinite(v)) goto bad;
        if (has_range(d) && (v < d->min || v > d->max)) goto bad;
        p->d = v;
        break;
    }
    case SIM_P_BOOL:
        if (!strcmp(text, "1") || !strcmp(text, "true") || !strcmp(text, "yes") || !strcmp(text, "on")) p->b = true;
        else if (!strcmp(text, "0") || !strcmp(text, "false") || !strcmp(text, "no") || !strcmp(text, "off")) p->b = false;
        else goto bad;
        p->i = p->b;
        break;
    case SIM_P_ENUM:
        p->choice = choice_index(d->choices, text);
        if (p->choice < 0) goto bad;
        break;
    case SIM_P_STRING: break;
    }
    free(p->text);
    p->text = strdup(text);
    if (!p->text) sim_fatal("out of memory");
    return 0;
bad:
    snprintf(err, errlen, "parameter '%s': bad value '%s'; allowed: %s", d->name, text, what);
    return -1;
}

sim_params *sim_params_new(const sim_param_def *const *tables, unsigned n_tables)
{
    sim_params *ps = calloc(1, sizeof *ps);
    if (!ps) sim_fatal("out of memory");
    size_t n = 0;
    for (unsigned t = 0; t < n_tables; t++)
        for (const sim_param_def *d = tables[t]; d && d->name; d++) n++;
    ps->v = calloc(n ? n : 1, sizeof *ps->v);
    if (!ps->v) sim_fatal("out of memory");
    for (unsigned t = 0; t < n_tables; t++)
        for (const sim_param_def *d = tables[t]; d && d->name; d++) {
            bool dup = false;
            for (size_t j = 0; j < ps->n; j++)
                if (!strcmp(ps->v[j].def->name, d->name)) dup = true;
            if (dup) continue;   /* a test's own definition overrides a common one */
            if (!strcmp(d->name, SIM_PARAMS_NOT_APPLICABLE_KEY)) sim_fatal("parameter name '%s' is reserved", d->name);
            ps->v[ps->n++].def = d;
        }
    ps->owner = "test";
    for (size_t i = 0; i < ps->n; i++) {
        char err[256];
        if (parse(&ps->v[i], ps->v[i].def->def ? ps->v[i].def->def : "", err, sizeof err))
            sim_fatal("bad default: %s", err);
    }
    return ps;
}

void sim_params_free(sim_params *ps)
{
    if (!ps) return;
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->v[i].text);
        free(ps->v[i].na_reason);
    }
    free(ps->v);
    free(ps);
}

static param *find(const sim_params *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->v[i].def->name, name)) return &ps->v[i];
    return NULL;
}

static int set_from(sim_params *ps, const char *assignment, enum origin from, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment) {
        snprintf(err, errlen, "argument '%s' is not key=value (try ARGS=help for the parameters)", assignment);
        return -1;
    }
    char key[128];
    size_t klen = (size_t)(eq - assignment);
    if (klen >= sizeof key) klen = sizeof key - 1;
    memcpy(key, assignment, klen);
    key[klen] = 0;
    param *p = find(ps, key);
    if (!p) {
        int off = snprintf(err, errlen, "unknown parameter '%s'; known:", key);
        for (size_t i = 0; i < ps->n && off > 0 && (size_t)off < errlen; i++)
            off += snprintf(err + off, errlen - (size_t)off, " %s", ps->v[i].def->name);
        return -1;
    }
    if (from == FROM_USER && p->origin == FROM_USER) {
        snprintf(err, errlen, "parameter '%s' given twice: %s=%s and %s=%s; give it once", key, key, p->text, key, eq + 1);
        return -1;
    }
    if (parse(p, eq + 1, err, errlen)) return -1;
    p->origin = from;
    return 0;
}

int sim_params_set(sim_params *ps, const char *assignment, char *err, size_t errlen)
{
    return set_from(ps, assignment, FROM_USER, err, errlen);
}

int sim_params_set_default(sim_params *ps, const char *assignment, char *err, size_t errlen)
{
    return set_from(ps, assignment, FROM_REGRESS, err, errlen);
}

int sim_params_check_defaults(const sim_params *ps, char *err, size_t errlen)
{
    for (size_t i = 0; i < ps->n; i++) {
        param tmp = { .def = ps->v[i].def };
        if (parse(&tmp, ps->v[i].def->def ? ps->v[i].def->def : "", err, errlen)) return -1;
        free(tmp.text);
    }
    return 0;
}

static param *need(const sim_params *ps, const char *name, enum sim_param_type t)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    if (p->def->type != t && !(t == SIM_P_STRING && p->def->type == SIM_P_ENUM))
        sim_fatal("parameter '%s' is %s, read as %s", name, type_name(p->def->type), type_name(t));
    if (ps->sealed && !p->read)
        sim_fatal("%s: parameter '%s' read after sim_test_configured(); read every parameter before it, so the runner "
                  "can refuse unused ones before the run", ps->owner, name);
    p->read = true;   /* through the pointer: reading is not a change of the values */
    return p;
}

int64_t sim_param_int(const sim_params *ps, const char *name) { return need(ps, name, SIM_P_INT)->i; }
double sim_param_double(const sim_params *ps, const char *name) { return need(ps, name, SIM_P_DOUBLE)->d; }
bool sim_param_bool(const sim_params *ps, const char *name) { return need(ps, name, SIM_P_BOOL)->b; }
const char *sim_param_str(const sim_params *ps, const char *name) { return need(ps, name, SIM_P_STRING)->text; }
int sim_param_enum(const sim_params *ps, const char *name) { return need(ps, name, SIM_P_ENUM)->choice; }

bool sim_param_given(const sim_params *ps, const char *name)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    return p->origin == FROM_USER;
}

static bool in_effect(const param *p) { return p->read && !p->na_reason; }

cJSON *sim_params_json(const sim_params *ps)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *na = NULL;
    for (size_t i = 0; i < ps->n; i++) {
        const param *p = &ps->v[i];
        if (!in_effect(p)) {
            if (!na) na = cJSON_CreateObject();
            char why[300];
            if (p->na_reason) snprintf(why, sizeof why, "%s", p->na_reason);
            else snprintf(why, sizeof why, "not read by %s in this configuration", ps->owner);
            cJSON_AddStringToObject(na, p->def->name, why);
            continue;
        }
        switch (p->def->type) {
        case SIM_P_INT: cJSON_AddNumberToObject(o, p->def->name, (double)p->i); break;
        case SIM_P_DOUBLE: cJSON_AddNumberToObject(o, p->def->name, p->d); break;
        case SIM_P_BOOL: cJSON_AddBoolToObject(o, p->def->name, p->b); break;
        case SIM_P_ENUM:
        case SIM_P_STRING: cJSON_AddStringToObject(o, p->def->name, p->text); break;
        }
    }
    if (na) cJSON_AddItemToObject(o, SIM_PARAMS_NOT_APPLICABLE_KEY, na);
    return o;
}

void sim_params_print_help(const sim_params *ps, const char *test_name, const char *test_help)
{
    printf("%s: %s\n\nparameters (key=value):\n", test_name, test_help ? test_help : "");
    printf("  %-14s %-7s %-12s %-6s %-28s %s\n", "name", "type", "default", "unit", "allowed", "meaning");
    for (size_t i = 0; i < ps->n; i++) {
        const sim_param_def *d = ps->v[i].def;
        char what[160];
        if (d->type == SIM_P_INT && has_range(d)) snprintf(what, sizeof what, "%.0f..%.0f", d->min, d->max);
        else if (d->type == SIM_P_DOUBLE && has_range(d)) snprintf(what, sizeof what, "%g..%g", d->min, d->max);
        else if (d->type == SIM_P_ENUM) snprintf(what, sizeof what, "%s", d->choices);
        else if (d->type == SIM_P_BOOL) snprintf(what, sizeof what, "0|1");
        else snprintf(what, sizeof what, "-");
        printf("  %-14s %-7s %-12s %-6s %-28s %s\n", d->name, type_name(d->type), d->def, d->unit && *d->unit ? d->unit : "-",
               what, d->help ? d->help : "");
    }
}

/* ---- used or refused ------------------------------------------------------------------ */

void sim_params_set_owner(sim_params *ps, const char *test_name) { ps->owner = test_name; }

void sim_params_lenient(sim_params *ps, const char *name)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    p->lenient = true;
}

static const char *origin_text(const param *p)
{
    return p->origin == FROM_REGRESS ? " (set by the test's regress_args: fix them)" : "";
}

void sim_param_not_applicable(const sim_params *ps, const char *name, const char *fmt, ...)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    if (ps->sealed) sim_fatal("%s: sim_param_not_applicable('%s') after sim_test_configured()", ps->owner, name);
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (!why[0]) sim_fatal("%s: sim_param_not_applicable('%s') without a reason", ps->owner, name);
    free(p->na_reason);
    p->na_reason = strdup(why);
    if (!p->na_reason) sim_fatal("out of memory");
    /* Refused at once: the user learns why before anything else is checked or run. */
    if (p->origin != FROM_DEFAULT && !p->lenient)
        sim_input_error("%s: parameter '%s' does not apply: %s%s", ps->owner, name, why, origin_text(p));
}

int sim_params_refuse_unused(const sim_params *ps, char *err, size_t errlen)
{
    int n = 0;
    size_t off = 0;
    if (errlen) err[0] = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const param *p = &ps->v[i];
        if (p->origin == FROM_DEFAULT || p->lenient || in_effect(p)) continue;
        int w = snprintf(err + off, errlen > off ? errlen - off : 0, "%s%s: parameter '%s' does not apply: %s%s",
                         n ? "\n" : "", ps->owner, p->def->name,
                         p->na_reason ? p->na_reason : "the test does not read it in this configuration", origin_text(p));
        if (w > 0) off = off + (size_t)w < errlen ? off + (size_t)w : errlen;
        n++;
    }
    return n;
}

void sim_params_seal(sim_params *ps) { ps->sealed = true; }

bool sim_param_in_effect(const sim_params *ps, const char *name)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    return in_effect(p);
}

const char *sim_param_not_applicable_reason(const sim_params *ps, const char *name)
{
    param *p = find(ps, name);
    if (!p) sim_fatal("parameter '%s' was never declared", name);
    return p->na_reason;
}

void sim_params_print_use(const sim_params *ps, FILE *out)
{
    for (size_t i = 0; i < ps->n; i++) {
        const param *p = &ps->v[i];
        const char *state = p->na_reason ? "not_applicable" : p->read ? "used" : "unread";
        const char *from = p->origin == FROM_USER ? "given" : p->origin == FROM_REGRESS ? "regress" : "default";
        const char *choices = p->def->type == SIM_P_ENUM ? p->def->choices : p->def->type == SIM_P_BOOL ? "0|1" : "-";
        fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\n", p->def->name, state, from, p->def->def ? p->def->def : "", choices,
                p->na_reason ? p->na_reason : "");
    }
}
