#include "sim/signal.h"

#include <stdlib.h>
#include <string.h>

static void signal_update(sim_prim_channel *ch)
{
    sim_signal *s = (sim_signal *)ch;
    if (s->next == s->cur) return;
    s->cur = s->next;
    sim_event_notify_delta(&s->value_changed);
    sim_trace_u64(sim_trace_of_kernel(s->k), s->trace, s->cur);
}

void sim_signal_init(sim_signal *s, sim_kernel *k, const char *name, unsigned width_bits, uint64_t initial)
{
    memset(s, 0, sizeof *s);
    s->ch.update = signal_update;
    s->k = k;
    s->name = name;
    s->width = width_bits ? width_bits : 64;
    s->cur = s->next = initial;
    sim_event_init(&s->value_changed, k, name);
}

void sim_signal_write(sim_signal *s, uint64_t v)
{
    s->next = v;
    sim_request_update(s->k, &s->ch);
}

void sim_signal_trace(sim_signal *s, sim_trace *t)
{
    if (!t) return;
    s->trace = sim_trace_add_var(t, s->name, s->width);
    sim_trace_u64(t, s->trace, s->cur);
}

static void fifo_update(sim_prim_channel *ch)
{
    sim_fifo *f = (sim_fifo *)ch;
    if (f->read) {
        /* reads consumed committed elements from the head; space frees now */
        f->head = (f->head + f->read) % f->capacity;
        f->count -= f->read;
        f->total_read += f->read;
        f->read = 0;
        sim_event_notify_delta(&f->data_read);
    }
    if (f->written) {
        f->count += f->written;
        f->total_written += f->written;
        f->written = 0;
        sim_event_notify_delta(&f->data_written);
    }
}

void sim_fifo_init(sim_fifo *f, sim_kernel *k, const char *name, size_t elem_size, size_t capacity)
{
    memset(f, 0, sizeof *f);
    if (!elem_size || !capacity) sim_fatal("fifo %s: element size and capacity must be > 0", name);
    f->ch.update = fifo_update;
    f->k = k;
    f->name = name;
    f->elem_size = elem_size;
    f->capacity = capacity;
    f->buf = malloc(elem_size * capacity);
    if (!f->buf) sim_fatal("out of memory");
    sim_event_init(&f->data_written, k, name);
    sim_event_init(&f->data_read, k, name);
}

void sim_fifo_destroy(sim_fifo *f)
{
    free(f->buf);
    f->buf = NULL;
}

/* Readable: committed minus what was read this delta. Writable: capacity
 * minus committed and pending writes; space freed by reads this delta only
 * appears after the update (sc_fifo semantics). */
size_t sim_fifo_num_available(const sim_fifo *f) { return f->count - f->read; }
size_t sim_fifo_num_free(const sim_fifo *f) { return f->capacity - f->count - f->written; }

bool sim_fifo_nb_write(sim_fifo *f, const void *elem)
{
    if (!sim_fifo_num_free(f)) return false;
    size_t slot = (f->head + f->count + f->written) % f->capacity;
    memcpy(f->buf + slot * f->elem_size, elem, f->elem_size);
    f->written++;
    sim_request_update(f->k, &f->ch);
    return true;
}

const void *sim_fifo_peek(const sim_fifo *f)
{
    if (!sim_fifo_num_available(f)) return NULL;
    return f->buf + ((f->head + f->read) % f->capacity) * f->elem_size;
}

bool sim_fifo_nb_read(sim_fifo *f, void *elem_out)
{
    const void *src = sim_fifo_peek(f);
    if (!src) return false;
    if (elem_out) memcpy(elem_out, src, f->elem_size);
    f->read++;
    sim_request_update(f->k, &f->ch);
    return true;
}
