#include "sim/alloc.h"
#include "sim/kernel.h"

#include <stdlib.h>
#include <string.h>

void *sim_zalloc_aligned(size_t align, size_t size)
{
    if (align < sizeof(void *)) align = sizeof(void *);
    const size_t rounded = (size + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple */
    void *p = aligned_alloc(align, rounded ? rounded : align);
    if (!p) sim_fatal("out of memory (%zu bytes aligned to %zu)", size, align);
    memset(p, 0, rounded ? rounded : align);
    return p;
}
