/* Shared by the kernel unit tests: a log of (who, time, delta, value) records
 * that processes append to, so a test can assert the exact order and timing
 * of activations. Not a test itself (CMake globs only check_*.c). */
#ifndef CHECK_LOG_H
#define CHECK_LOG_H

#include <check.h>
#include <string.h>

#include "check_run.h"
#include "sim/sim.h"

typedef struct log_rec {
    const char *who;
    sim_time_ps t;
    uint64_t delta;
    uint64_t val;
} log_rec;

#define LOG_MAX 4096
static log_rec g_log[LOG_MAX];
static size_t g_log_n;

static inline void log_reset(void) { g_log_n = 0; }

static inline void log_add(sim_kernel *k, const char *who, uint64_t val)
{
    ck_assert_uint_lt(g_log_n, LOG_MAX);
    g_log[g_log_n].who = who;
    g_log[g_log_n].t = sim_now(k);
    g_log[g_log_n].delta = sim_delta_count(k);
    g_log[g_log_n].val = val;
    g_log_n++;
}

/* "a@0 b@1000 ..." of the log, for readable assertions on order and time. */
static inline const char *log_str(void)
{
    static char buf[16384];
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < g_log_n && off < sizeof buf - 64; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s@%llu", i ? " " : "", g_log[i].who,
                                (unsigned long long)g_log[i].t);
    return buf;
}

/* Same, with the delta count: "a@0/0 b@0/1". */
static inline const char *log_str_delta(void)
{
    static char buf[16384];
    size_t off = 0;
    buf[0] = 0;
    for (size_t i = 0; i < g_log_n && off < sizeof buf - 80; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s@%llu/%llu", i ? " " : "", g_log[i].who,
                                (unsigned long long)g_log[i].t, (unsigned long long)g_log[i].delta);
    return buf;
}

/* Counts an event's triggers with a process sensitive to it alone (the kernel
 * keeps no per-event counters). Triggers within one evaluate phase (immediate
 * notifications) count once, as that process runs once. */
typedef struct trigger_count {
    sim_process p;
    unsigned n;
} trigger_count;

static inline void trigger_count_fn(void *ctx) { ((trigger_count *)ctx)->n++; }

static inline void trigger_count_init(trigger_count *c, sim_kernel *kern, sim_event *e)
{
    c->n = 0;
    sim_method_init(&c->p, kern, "trigger_count", trigger_count_fn, c);
    sim_sensitive(&c->p, e);
    sim_dont_initialize(&c->p);
}

#endif
