/* The upstream's view of a crossbar input's credits in the unit tests that
 * drive a core directly: a flit to destination mask dm may be presented only
 * with a credit of every pool it is written into (FIFO: the input's one pool;
 * shared buffer: one pool counting copies; VOQ: one per destination), and
 * presenting it spends them. depth 0 = unbounded, no credits. Not a test. */
#ifndef CHECK_UPSTREAM_H
#define CHECK_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

/* row: the input's pools (FIFO and shared: row[0]). True, and spent, if the flit may go. */
static inline bool upstream_take(int *row, uint64_t dm, int depth, bool voq, bool shared)
{
    if (!depth) return true;
    const int k = __builtin_popcountll(dm);
    bool ok = true;
    if (!voq) ok = row[0] >= 1;
    else if (shared) ok = row[0] >= k;
    else
        for (uint64_t d = dm; d; d &= d - 1) ok &= row[__builtin_ctzll(d)] >= 1;
    if (!ok) return false;
    if (!voq) row[0]--;
    else if (shared) row[0] -= k;
    else
        for (uint64_t d = dm; d; d &= d - 1) row[__builtin_ctzll(d)]--;
    return true;
}

#endif
