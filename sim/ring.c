/* Growing a ring (see ring.h). */
#include "sim/ring.h"

#include "sim/kernel.h"

#include <stdlib.h>
#include <string.h>

void *sim_ring_grow(void *buf, size_t elem, size_t head, size_t len, size_t *cap, size_t first_cap)
{
    const size_t old_cap = *cap, new_cap = old_cap ? 2 * old_cap : first_cap;
    if (new_cap < len || (new_cap & (new_cap - 1)) != 0)
        sim_fatal("sim_ring_grow: capacity %zu is not a power of two holding %zu elements", new_cap, len);
    unsigned char *nb = malloc(new_cap * elem);
    if (!nb) sim_fatal("out of memory");
    /* Two copies at most: from the head to the end of the buffer, then the
     * part that wrapped round to its start. */
    const size_t start = old_cap ? head & (old_cap - 1) : 0;
    const size_t first_part = len < old_cap - start ? len : old_cap - start;
    if (len) {
        memcpy(nb, (unsigned char *)buf + start * elem, first_part * elem);
        memcpy(nb + first_part * elem, buf, (len - first_part) * elem);
    }
    free(buf);
    *cap = new_cap;
    return nb;
}
