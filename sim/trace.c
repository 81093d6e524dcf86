/* FST tracing. fstapi.c comes from Verilator's include folder, compiled by the
 * build (never copied into the repository). */
#include "sim/trace.h"

#include <fstapi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "sim/kernel.h"

struct sim_trace {
    void *fst;
    sim_kernel *k;
    uint64_t last_time;
    bool time_written;
    /* per variable: width (to format values) and the last value given, so a
     * bit vector given its current value again is not written again */
    struct trace_var_state { unsigned width; bool has_last; uint64_t last; } *var;
    size_t n_vars, cap_vars;
    int depth;
    bool frozen;
    /* values given before the freeze: (var, kind, bytes) in order */
    struct pending_value { sim_trace_var v; char kind; uint32_t len; char *bytes; } *pending;
    size_t n_pending, cap_pending;
    size_t vc_bytes;   /* value-change bytes the writer holds in memory since its last flush (estimate) */
};

/* The FST writer keeps value changes in memory until 128 MB of them
 * (FST_BREAK_SIZE), then writes a block: a long traced run held ~130 MB
 * for it. A block every TRACE_BLOCK_BYTES keeps that to a few MB; the waves
 * are the same (a reader joins the blocks). */
#define TRACE_BLOCK_BYTES (4u << 20)
static inline void count_change(sim_trace *t, size_t value_bytes)
{
    /* per change the writer stores the value (a byte per bit, 8 for a real,
     * a string's bytes) and about 6 bytes of position and time index */
    t->vc_bytes += value_bytes + 6;
    if (t->vc_bytes >= TRACE_BLOCK_BYTES) {
        fstWriterFlushContext(t->fst);   /* written at the next time change */
        t->vc_bytes = 0;
    }
}

static void stamp(sim_trace *t, uint64_t time_ps);

/* "00000000" .. "11111111": the bits of a byte, most significant first
 * (filled once, even when kernels in several threads open traces). */
static char byte_bits[256][8];
static once_flag byte_bits_once = ONCE_FLAG_INIT;

static void init_byte_bits(void)
{
    for (unsigned b = 0; b < 256; b++)
        for (unsigned i = 0; i < 8; i++) byte_bits[b][i] = (b >> (7 - i)) & 1 ? '1' : '0';
}

static void remember_value(sim_trace *t, sim_trace_var v, char kind, const void *bytes, uint32_t len)
{
    if (t->n_pending == t->cap_pending) {
        t->cap_pending = t->cap_pending ? 2 * t->cap_pending : 64;
        t->pending = realloc(t->pending, t->cap_pending * sizeof *t->pending);
        if (!t->pending) sim_fatal("out of memory");
    }
    struct pending_value *p = &t->pending[t->n_pending++];
    p->v = v;
    p->kind = kind;
    p->len = len;
    p->bytes = malloc(len + 1);
    if (!p->bytes) sim_fatal("out of memory");
    memcpy(p->bytes, bytes, len);
    p->bytes[len] = 0;
}

void sim_trace_freeze(sim_trace *t)
{
    if (!t || t->frozen) return;
    t->frozen = true;
    while (t->depth > 0) sim_trace_pop_scope(t);
    fstWriterSetUpscope(t->fst);   /* closes "top": the hierarchy is complete */
    stamp(t, t->k ? sim_now(t->k) : 0);
    for (size_t i = 0; i < t->n_pending; i++) {
        struct pending_value *p = &t->pending[i];
        if (p->kind == 's') fstWriterEmitVariableLengthValueChange(t->fst, p->v, p->bytes, p->len);
        else fstWriterEmitValueChange(t->fst, p->v, p->bytes);
        free(p->bytes);
    }
    free(t->pending);
    t->pending = NULL;
    t->n_pending = t->cap_pending = 0;
}

sim_trace *sim_trace_open(sim_kernel *k, const char *path)
{
    void *fst = fstWriterCreate(path, 1);
    if (!fst) {
        fprintf(stderr, "error: cannot open trace file %s\n", path);
        return NULL;
    }
    sim_trace *t = calloc(1, sizeof *t);
    if (!t) sim_fatal("out of memory");
    call_once(&byte_bits_once, init_byte_bits);
    t->fst = fst;
    t->k = k;
    fstWriterSetTimescaleFromString(fst, "1ps");
    fstWriterSetPackType(fst, FST_WR_PT_LZ4);
    fstWriterSetScope(fst, FST_ST_VCD_MODULE, "top", NULL);
    if (k) sim_kernel_set_trace(k, t);
    return t;
}

void sim_trace_close(sim_trace *t)
{
    if (!t) return;
    if (t->k && sim_trace_of_kernel(t->k) == t) sim_kernel_set_trace(t->k, NULL);
    sim_trace_freeze(t);
    if (t->k && t->time_written && sim_now(t->k) > t->last_time) fstWriterEmitTimeChange(t->fst, sim_now(t->k));
    fstWriterClose(t->fst);
    free(t->var);
    free(t);
}

static void check_not_frozen(const sim_trace *t, const char *what)
{
    if (t->frozen) sim_fatal("trace: '%s' declared after the simulation started; declare trace variables before sim_run()", what);
}

void sim_trace_push_scope(sim_trace *t, const char *name)
{
    if (!t) return;
    check_not_frozen(t, name);
    fstWriterSetScope(t->fst, FST_ST_VCD_MODULE, name, NULL);
    t->depth++;
}

void sim_trace_push_scopef(sim_trace *t, const char *fmt, ...)
{
    if (!t) return;
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    sim_trace_push_scope(t, name);
}

void sim_trace_pop_scope(sim_trace *t)
{
    if (!t || t->depth == 0) return;
    fstWriterSetUpscope(t->fst);
    t->depth--;
}

static sim_trace_var remember(sim_trace *t, fstHandle h, unsigned width)
{
    if (h >= t->cap_vars) {
        size_t ncap = t->cap_vars ? 2 * t->cap_vars : 256;
        while (ncap <= h) ncap *= 2;
        t->var = realloc(t->var, ncap * sizeof *t->var);
        if (!t->var) sim_fatal("out of memory");
        t->cap_vars = ncap;
    }
    t->var[h] = (struct trace_var_state){ .width = width };
    if (h >= t->n_vars) t->n_vars = h + 1;
    return (sim_trace_var)h;
}

sim_trace_var sim_trace_add_var(sim_trace *t, const char *name, unsigned width_bits)
{
    if (!t) return 0;
    check_not_frozen(t, name);
    if (width_bits < 1 || width_bits > 64) sim_fatal("trace variable %s: width %u, allowed 1..64", name, width_bits);
    char full[160];
    if (width_bits > 1) snprintf(full, sizeof full, "%s[%u:0]", name, width_bits - 1);
    else snprintf(full, sizeof full, "%s", name);
    fstHandle h = fstWriterCreateVar(t->fst, width_bits == 1 ? FST_VT_VCD_WIRE : FST_VT_VCD_REG, FST_VD_OUTPUT, width_bits,
                                     full, 0);
    return remember(t, h, width_bits);
}

sim_trace_var sim_trace_add_wide(sim_trace *t, const char *name, unsigned width_bits)
{
    if (!t) return 0;
    check_not_frozen(t, name);
    char full[160];
    snprintf(full, sizeof full, "%s[%u:0]", name, width_bits - 1);
    fstHandle h = fstWriterCreateVar(t->fst, FST_VT_VCD_REG, FST_VD_OUTPUT, width_bits, full, 0);
    return remember(t, h, width_bits);
}

sim_trace_var sim_trace_add_string(sim_trace *t, const char *name)
{
    if (!t) return 0;
    check_not_frozen(t, name);
    fstHandle h = fstWriterCreateVar(t->fst, FST_VT_GEN_STRING, FST_VD_IMPLICIT, 0, name, 0);
    return remember(t, h, 0);
}

sim_trace_var sim_trace_add_real(sim_trace *t, const char *name)
{
    if (!t) return 0;
    check_not_frozen(t, name);
    fstHandle h = fstWriterCreateVar(t->fst, FST_VT_VCD_REAL, FST_VD_IMPLICIT, 64, name, 0);
    return remember(t, h, 64);
}

static void stamp(sim_trace *t, uint64_t time_ps)
{
    if (!t->time_written || time_ps > t->last_time) {
        fstWriterEmitTimeChange(t->fst, time_ps);
        t->last_time = time_ps;
        t->time_written = true;
    }
}

/* The FST writer takes a value as a string of '0'/'1', most significant bit first. */
static void format_bits(char *bits, uint64_t value, unsigned w)
{
    unsigned head = w % 8, at = 0;
    if (head) {
        memcpy(bits, byte_bits[(value >> (w - head)) & 0xff] + (8 - head), head);
        at = head;
    }
    for (unsigned shift = w - head; shift > 0; shift -= 8, at += 8) memcpy(bits + at, byte_bits[(value >> (shift - 8)) & 0xff], 8);
    bits[w] = 0;
}

void sim_trace_emit_u64_at(sim_trace *t, uint64_t time_ps, sim_trace_var v, uint64_t value)
{
    if (!t || !v) return;
    struct trace_var_state *vs = &t->var[v];
    /* The same value again is no change (the waves look the same without it). */
    if (vs->has_last && vs->last == value) return;
    vs->has_last = true;
    vs->last = value;
    char bits[65];
    format_bits(bits, value, vs->width);
    if (!t->frozen) {
        remember_value(t, v, 'b', bits, vs->width);
        return;
    }
    stamp(t, time_ps);
    fstWriterEmitValueChange(t->fst, v, bits);
    count_change(t, vs->width);
}

void sim_trace_emit_words_at(sim_trace *t, uint64_t time_ps, sim_trace_var v, const uint32_t *words, unsigned width_bits)
{
    if (!t || !v) return;
    char stackbuf[1025];
    char *bits = width_bits < sizeof stackbuf ? stackbuf : malloc(width_bits + 1);
    if (!bits) sim_fatal("out of memory");
    for (unsigned i = 0; i < width_bits; i++) bits[width_bits - 1 - i] = (words[i / 32] >> (i % 32)) & 1 ? '1' : '0';
    bits[width_bits] = 0;
    if (!t->frozen) {
        remember_value(t, v, 'b', bits, width_bits);
    } else {
        stamp(t, time_ps);
        fstWriterEmitValueChange(t->fst, v, bits);
        count_change(t, width_bits);
    }
    if (bits != stackbuf) free(bits);
}

void sim_trace_emit_u64_(sim_trace *t, sim_trace_var v, uint64_t value)
{
    if (!t) return;
    sim_trace_emit_u64_at(t, t->k ? sim_now(t->k) : t->last_time, v, value);
}

void sim_trace_emit_str_(sim_trace *t, sim_trace_var v, const char *s)
{
    if (!t) return;
    if (!t->frozen) {
        remember_value(t, v, 's', s, (uint32_t)strlen(s));
        return;
    }
    stamp(t, t->k ? sim_now(t->k) : t->last_time);
    fstWriterEmitVariableLengthValueChange(t->fst, v, s, (uint32_t)strlen(s));
    count_change(t, strlen(s));
}

void sim_trace_emit_strf_(sim_trace *t, sim_trace_var v, const char *fmt, ...)
{
    if (!t) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sim_trace_emit_str_(t, v, buf);
}

void sim_trace_emit_real_(sim_trace *t, sim_trace_var v, double x)
{
    if (!t) return;
    if (!t->frozen) {
        remember_value(t, v, 'r', &x, sizeof x);
        return;
    }
    stamp(t, t->k ? sim_now(t->k) : t->last_time);
    fstWriterEmitValueChange(t->fst, v, &x);
    count_change(t, sizeof x);
}
