/* The axes of a sweep: "k=v1,v2", "k=a|b", "k=lo..hi", "k=lo..hi*f", "k=lo..hi+s". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sweep.h"

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    snprintf(err, errlen, fmt, a, b);
    return -1;
}

static bool parse_number(const char *s, size_t n, double *v)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    *v = strtod(buf, &end);
    return *end == 0 && isfinite(*v);
}

static void push_value(char ***vals, unsigned *n, unsigned *cap, char *v)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *vals = realloc(*vals, *cap * sizeof **vals);
        if (!*vals) abort();
    }
    (*vals)[(*n)++] = v;
}

static char *format_number(double v, bool integral)
{
    char buf[64];
    if (integral) snprintf(buf, sizeof buf, "%.0f", v);
    else snprintf(buf, sizeof buf, "%.10g", v);
    return strdup(buf);
}

/* "lo..hi*f", "lo..hi+s" or "lo..hi" (step 1): 1 when it is a range (values
 * pushed), 0 when the text is not one, -1 on a bad range. */
static int expand_range(const char *key, const char *text, char ***vals, unsigned *n, unsigned *cap, char *err, size_t errlen)
{
    const char *dots = strstr(text, "..");
    if (!dots) return 0;
    const char *op = strpbrk(dots + 2, "*+");
    const char *hi_end = op ? op : dots + 2 + strlen(dots + 2);
    double lo, hi, step = 1;
    if (!parse_number(text, (size_t)(dots - text), &lo) || !parse_number(dots + 2, (size_t)(hi_end - dots - 2), &hi) ||
        (op && !parse_number(op + 1, strlen(op + 1), &step)))
        return 0;   /* not numbers: an ordinary value (a path with "..", say) */
    const bool geometric = op && *op == '*';
    if (hi < lo) return fail(err, errlen, "%s=%s: the range ends below its start; allowed: lo..hi, lo..hi*f or lo..hi+s with lo <= hi", key, text);
    if (geometric ? !(lo > 0 && step > 1) : !(step > 0))
        return fail(err, errlen, "%s=%s: allowed: lo..hi*f with lo > 0 and f > 1, or lo..hi+s with s > 0", key, text);
    const bool integral = lo == floor(lo) && step == floor(step) && hi == floor(hi);
    /* steps counted, not accumulated: lo + i*s and lo * f^i stay exact for integers */
    for (unsigned i = 0;; i++) {
        double v = geometric ? lo * pow(step, i) : lo + step * i;
        if (integral) v = round(v);
        if (v > hi * (1 + 1e-12)) break;
        if (*n >= SIM_SWEEP_MAX_RANGE) return fail(err, errlen, "%s=%s: more than 10000 values", key, text);
        push_value(vals, n, cap, format_number(v, integral));
    }
    return 1;
}

int sim_sweep_axes_parse(sim_sweep_axes *a, int nargs, char **args, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->keys = calloc((size_t)nargs + 1, sizeof *a->keys);
    a->nvalues = calloc((size_t)nargs + 1, sizeof *a->nvalues);
    a->values = calloc((size_t)nargs + 1, sizeof *a->values);
    if (!a->keys || !a->nvalues || !a->values) abort();
    a->npoints = 1;
    for (int i = 0; i < nargs; i++) {
        const char *eq = strchr(args[i], '=');
        if (!eq || eq == args[i]) {
            fail(err, errlen, "'%s': allowed: key=v1,v2,... (or key=a|b, key=lo..hi, key=lo..hi*f, key=lo..hi+s)%s", args[i], "");
            goto bad;
        }
        char *key = strndup(args[i], (size_t)(eq - args[i]));
        for (unsigned j = 0; j < a->naxes; j++)
            if (!strcmp(a->keys[j], key)) {
                fail(err, errlen, "%s given twice; allowed: each key once, with all its values (%s=v1,v2,...)", key, key);
                free(key);
                goto bad;
            }
        unsigned ax = a->naxes++, cap = 0;
        a->keys[ax] = key;
        const char *list = eq + 1;
        const char sep = strchr(list, '|') ? '|' : ',';
        for (const char *s = list;;) {
            const char *e = strchr(s, sep);
            size_t len = e ? (size_t)(e - s) : strlen(s);
            char *v = strndup(s, len);
            if (!len) {
                free(v);
                fail(err, errlen, "%s: an empty value in '%s'", key, list);
                goto bad;
            }
            int r = expand_range(key, v, &a->values[ax], &a->nvalues[ax], &cap, err, errlen);
            if (r != 0) free(v);
            else push_value(&a->values[ax], &a->nvalues[ax], &cap, v);
            if (r < 0) goto bad;
            if (!e) break;
            s = e + 1;
        }
        a->npoints *= a->nvalues[ax];
        if (a->npoints > SIM_SWEEP_MAX_POINTS) {
            fail(err, errlen, "more than 100000 points (at %s); allowed: up to 100000%s", key, "");
            goto bad;
        }
    }
    return 0;
bad:
    sim_sweep_axes_free(a);
    return -1;
}

const char *sim_sweep_axes_value(const sim_sweep_axes *a, unsigned long point, unsigned axis)
{
    /* the last axis varies fastest */
    for (unsigned j = a->naxes; j-- > axis + 1;) point /= a->nvalues[j];
    return a->values[axis][point % a->nvalues[axis]];
}

void sim_sweep_axes_free(sim_sweep_axes *a)
{
    for (unsigned j = 0; j < a->naxes; j++) {
        for (unsigned v = 0; v < a->nvalues[j]; v++) free(a->values[j][v]);
        free(a->values[j]);
        free(a->keys[j]);
    }
    free(a->keys);
    free(a->nvalues);
    free(a->values);
    memset(a, 0, sizeof *a);
}
