/* Primitive channels with request-update/update semantics (SystemC sc_signal, sc_fifo). */
#ifndef SIM_SIGNAL_H
#define SIM_SIGNAL_H

#include "sim/kernel.h"
#include "sim/trace.h"

/* A signal of up to 64 bits. write() is seen by read() only after the update
 * phase; a change notifies value_changed in the next delta cycle. */
typedef struct sim_signal {
    sim_prim_channel ch;
    sim_kernel *k;
    const char *name;
    uint64_t cur, next;
    unsigned width;           /* bits, for tracing */
    sim_event value_changed;
    sim_trace_var trace;      /* 0 = not traced */
} sim_signal;

void sim_signal_init(sim_signal *s, sim_kernel *k, const char *name, unsigned width_bits, uint64_t initial);
static inline uint64_t sim_signal_read(const sim_signal *s) { return s->cur; }
void sim_signal_write(sim_signal *s, uint64_t v);
/* Register the signal in the current trace scope (no-op without a trace). */
void sim_signal_trace(sim_signal *s, sim_trace *t);

/* A bounded FIFO of fixed-size elements. Like sc_fifo: a write becomes visible
 * to the reader after the update phase, a read frees space for the writer after
 * the update phase; data_written / data_read are notified in the next delta. */
typedef struct sim_fifo {
    sim_prim_channel ch;
    sim_kernel *k;
    const char *name;
    unsigned char *buf;
    size_t elem_size, capacity;
    size_t head;              /* index of the oldest element */
    size_t count;             /* committed elements visible to the reader */
    size_t written, read;     /* this delta, not yet committed */
    sim_event data_written, data_read;
    uint64_t total_written, total_read;
} sim_fifo;

void sim_fifo_init(sim_fifo *f, sim_kernel *k, const char *name, size_t elem_size, size_t capacity);
void sim_fifo_destroy(sim_fifo *f);
size_t sim_fifo_num_available(const sim_fifo *f);   /* readable now */
size_t sim_fifo_num_free(const sim_fifo *f);        /* writable now */
bool sim_fifo_nb_write(sim_fifo *f, const void *elem);
bool sim_fifo_nb_read(sim_fifo *f, void *elem_out);
const void *sim_fifo_peek(const sim_fifo *f);       /* oldest readable element or NULL */

#endif
