/* Rings (circular FIFOs) of fixed-size elements, the one way the kernel and
 * the models grow them. A ring is a buffer, a head index, a length and a
 * capacity that is a power of two, so position k after the head is
 * (head + k) & (cap - 1). Each user keeps those fields where its hot path
 * wants them (inside a cache line of its own record) and indexes the buffer
 * itself; growing, the rare and fiddly part, is here. */
#ifndef SIM_RING_H
#define SIM_RING_H

#include <stddef.h>

/* A ring of `len` elements of `elem` bytes starting at `head` in `buf` (of
 * capacity *cap, 0 when there is no buffer yet) is full: returns a new buffer
 * of twice the capacity (first_cap, a power of two, when *cap is 0) holding
 * the same elements in order from index 0, frees `buf`, and stores the new
 * capacity in *cap. The caller sets its head to 0. Aborts when out of
 * memory. */
void *sim_ring_grow(void *buf, size_t elem, size_t head, size_t len, size_t *cap, size_t first_cap);

#endif
