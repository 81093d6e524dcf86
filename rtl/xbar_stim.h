/* Stimulus and scoreboard for crossbar cores driven cycle by cycle through
 * xbar_io.h (the RTL bridge, the C core, or both in lock-step). Plain C, no
 * kernel: used by the RTL unit tests, xbar_equiv, xbar_iverilog and the bench.
 *
 * The stimulus is the upstream of every input port: a Bernoulli source at
 * `load` flits per cycle into an unbounded source queue, a credit counter per
 * VOQ initialised to `depth`, and a flit presented only when every queue it
 * goes to has a credit (multicast spends one credit per copy). Credits come
 * back from the switch's `credit` outputs, so flow control is exercised, not
 * assumed. Each flit's data is a tag: source (bits 63..56), per-source
 * sequence number (bits 55..0).
 *
 * The scoreboard follows every copy to its output: per-flow order, duplicates,
 * losses (at drain), unknown flits, and per-cycle matches. */
#ifndef XBAR_STIM_H
#define XBAR_STIM_H

#include <stdbool.h>
#include <stdint.h>

#include "models/nvswitch/xbar_io.h"
#include "sim/rng.h"

enum xbar_pattern {
    XBAR_PAT_UNIFORM = 0,   /* destination uniform over all outputs (own port included) */
    XBAR_PAT_HOTSPOT,       /* hot_frac of the flits to output 0, the rest uniform */
    XBAR_PAT_TRANSPOSE,     /* i -> (i + N/2) mod N */
    XBAR_PAT_PERMUTATION,   /* a random permutation fixed per seed */
    XBAR_PAT_BACKLOG,       /* every input sends to every output, as fast as credits allow (reset ramp) */
};
#define XBAR_PATTERN_NAMES "uniform|hotspot|transpose|permutation|backlog"

typedef struct xbar_stim_cfg {
    unsigned ports;
    unsigned depth;          /* credits per VOQ */
    double load;             /* flits per input per cycle offered (Bernoulli) */
    enum xbar_pattern pattern;
    double mcast_frac;       /* fraction of flits that are multicast */
    unsigned mcast_fanout;   /* destinations of a multicast flit (2..ports) */
    double hot_frac;         /* hotspot share */
    uint64_t seed;
} xbar_stim_cfg;

#define XBAR_STIM_SRCQ 4096u /* source queue entries per input (offered flits beyond it are counted as refused) */

typedef struct xbar_stim {
    xbar_stim_cfg cfg;
    sim_rng rng;
    uint32_t credits[XBAR_MAX_PORTS][XBAR_MAX_PORTS];
    uint64_t next_seq[XBAR_MAX_PORTS];
    uint8_t perm[XBAR_MAX_PORTS];
    uint64_t *srcq_mask[XBAR_MAX_PORTS];   /* ring of dest masks per input */
    unsigned srcq_head[XBAR_MAX_PORTS], srcq_len[XBAR_MAX_PORTS];
    bool stopped;                          /* no new flits (drain) */
    uint64_t offered, refused, presented, copies_presented, credits_returned;
    uint64_t credit_errors;                /* credit for a queue with all credits home */
} xbar_stim;

void xbar_stim_init(xbar_stim *s, const xbar_stim_cfg *cfg);
void xbar_stim_free(xbar_stim *s);
/* This cycle's inputs. */
void xbar_stim_inputs(xbar_stim *s, xbar_in *in);
/* Take back the credits the switch drove this cycle. */
void xbar_stim_credits(xbar_stim *s, const xbar_out *out);
/* Flits waiting in the source queues, and whether every credit is home. */
uint64_t xbar_stim_backlog(const xbar_stim *s);
bool xbar_stim_all_credits_home(const xbar_stim *s);

typedef struct xbar_score {
    unsigned ports;
    uint64_t expected_copies, delivered, duplicated, out_of_order, unknown, wrong_src;
    uint64_t last_seq[XBAR_MAX_PORTS][XBAR_MAX_PORTS];   /* per (src, dst) flow; 0 = none yet */
    uint64_t *seen[XBAR_MAX_PORTS];                      /* per source: delivered-to mask per sequence (window) */
    uint64_t *dest_of[XBAR_MAX_PORTS];                   /* per source: destination mask per sequence */
    uint64_t window;
    uint64_t delivered_in_window, window_start, window_end;
} xbar_score;

void xbar_score_init(xbar_score *sc, unsigned ports);
void xbar_score_free(xbar_score *sc);
/* Record what was presented (from the same xbar_in the switch saw). */
void xbar_score_presented(xbar_score *sc, const xbar_in *in);
/* Record the outputs of cycle `cycle`. */
void xbar_score_outputs(xbar_score *sc, const xbar_out *out, uint64_t cycle);
/* Copies presented but not delivered. */
uint64_t xbar_score_missing(const xbar_score *sc);

/* Tag helpers. */
static inline uint64_t xbar_tag(unsigned src, uint64_t seq) { return ((uint64_t)src << 56) | (seq & 0x00ffffffffffffffull); }
static inline unsigned xbar_tag_src(uint64_t tag) { return (unsigned)(tag >> 56); }
static inline uint64_t xbar_tag_seq(uint64_t tag) { return tag & 0x00ffffffffffffffull; }

#endif
