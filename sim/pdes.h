/* Conservative parallel simulation: one system cut into parts, each part its
 * own kernel, the parts meeting only through cut links (sim/link.h's halves).
 * Time advances in windows no longer than the lookahead, the least latency of
 * any cut link (messages and credits alike): a message sent in a window
 * arrives after the window's end, so every part can run the window to its end
 * alone; at the end the cut links' messages and credits cross, and the next
 * window starts at the earliest pending activity of any part (idle time is
 * skipped). This is YAWNS-style: one exchange per window, no null messages.
 *
 * Same results at any number of parts: a fabric's links carry order keys
 * (kernel.h), so same-time arrivals fire in link order whether they came over
 * a cut or not; a component's own wake-ups keep notification order, which a
 * part reproduces because nothing from another part can come between them.
 *
 * Here every part runs in this process, one after another (a reference for
 * the MPI transport and the unit tests). */
#ifndef SIM_PDES_H
#define SIM_PDES_H

#include "sim/kernel.h"
#include "sim/link.h"

typedef struct sim_pdes sim_pdes;

/* The parts' kernels (the caller's: they outlive the sim_pdes). */
sim_pdes *sim_pdes_new(unsigned parts, sim_kernel *const *kernels);
void sim_pdes_free(sim_pdes *p);
/* One direction cut between parts: `sending` in part `from`'s kernel,
 * `receiving` in part `to`'s, made with the same cfg and order key; both
 * become halves. Before the first run. */
void sim_pdes_cut(sim_pdes *p, sim_link *sending, unsigned from, sim_link *receiving, unsigned to);
/* Windows until time would pass until_ps, or no part has anything left. Like
 * sim_run: returns until_ps when bounded (every part stands there), else the
 * time of the last activity of any part (the parts then stand at the end of
 * the last window, not at that time). Aborts when a cut link has no latency
 * (no lookahead). */
sim_time_ps sim_pdes_run(sim_pdes *p, sim_time_ps until_ps);
sim_time_ps sim_pdes_lookahead_ps(const sim_pdes *p);
uint64_t sim_pdes_windows(const sim_pdes *p);
/* Process activations of every part (what one kernel would count). */
uint64_t sim_pdes_events(const sim_pdes *p);

#endif
