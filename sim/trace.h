/* Tracing to FST (GTKWave) with the FST writer shipped in Verilator's include
 * folder. One API for every model: C-model values, transactions as string
 * labels, and RTL signals sampled by the co-simulation harness.
 *
 * With tracing off, a sim_trace pointer is NULL and every variable handle is
 * 0: each emit is one inlined compare, so it costs nothing measurable. */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_trace sim_trace;
typedef uint32_t sim_trace_var;       /* 0 = not traced */
typedef struct sim_kernel sim_kernel;

/* Opens path for writing; returns NULL and prints why on failure. Time unit ps. */
sim_trace *sim_trace_open(sim_kernel *k, const char *path);
void sim_trace_close(sim_trace *t);

/* Variables are declared during elaboration; values given before the
 * simulation starts are kept and written at its start. sim_run() freezes the
 * hierarchy (FST needs it complete before the first value): declaring a
 * variable after that is an error. */
void sim_trace_freeze(sim_trace *t);

/* Scopes nest: push("nvswitch"), push("port3"), ... pop(), pop(). */
void sim_trace_push_scope(sim_trace *t, const char *name);
void sim_trace_pop_scope(sim_trace *t);
/* printf-style convenience for indexed scopes ("port%u"). */
void sim_trace_push_scopef(sim_trace *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A bit-vector variable of 1..64 bits, and a string (transaction label) variable. */
sim_trace_var sim_trace_add_var(sim_trace *t, const char *name, unsigned width_bits);
sim_trace_var sim_trace_add_string(sim_trace *t, const char *name);
sim_trace_var sim_trace_add_real(sim_trace *t, const char *name);

void sim_trace_emit_u64_(sim_trace *t, sim_trace_var v, uint64_t value);
void sim_trace_emit_str_(sim_trace *t, sim_trace_var v, const char *s);
void sim_trace_emit_real_(sim_trace *t, sim_trace_var v, double x);
void sim_trace_emit_strf_(sim_trace *t, sim_trace_var v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Values are stamped with the kernel's current time. */
#define sim_trace_u64(t, v, value) do { if (v) sim_trace_emit_u64_((t), (v), (value)); } while (0)
#define sim_trace_str(t, v, s) do { if (v) sim_trace_emit_str_((t), (v), (s)); } while (0)
#define sim_trace_real(t, v, x) do { if (v) sim_trace_emit_real_((t), (v), (x)); } while (0)
#define sim_trace_strf(t, v, ...) do { if (v) sim_trace_emit_strf_((t), (v), __VA_ARGS__); } while (0)

/* Values stamped at an explicit time (>= the last one written): for a harness
 * that samples RTL at clock edges it computes itself. */
void sim_trace_emit_u64_at(sim_trace *t, uint64_t time_ps, sim_trace_var v, uint64_t value);
/* Wide values (RTL buses > 64 bits): width bits from little-endian 32-bit words. */
void sim_trace_emit_words_at(sim_trace *t, uint64_t time_ps, sim_trace_var v, const uint32_t *words, unsigned width_bits);
sim_trace_var sim_trace_add_wide(sim_trace *t, const char *name, unsigned width_bits);

#endif
