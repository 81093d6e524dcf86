/* Zeroed heap memory for over-aligned types. calloc only promises the
 * alignment of max_align_t (16 B here), so a struct with a member declared
 * _Alignas(64) (a cache line of its own) must not come from it: the compiler
 * may use aligned vector stores on it (it does with -march=native). */
#ifndef SIM_ALLOC_H
#define SIM_ALLOC_H

#include <stddef.h>

/* `size` bytes, zeroed, at a multiple of `align` (a power of two), freed
 * with free(). Aborts when out of memory. */
void *sim_zalloc_aligned(size_t align, size_t size);

#endif
