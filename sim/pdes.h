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
 * Two ways to hold the parts: every part in this process, run one after
 * another (sim_pdes_new: the reference, and the unit tests), or one part per
 * rank of a transport (sim_pdes_new_ranked: MPI, tb/mpi/pdes_mpi.c), where a
 * cut link's halves live on two ranks and its messages travel as bytes. */
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
/* --- one part per rank ---------------------------------------------------- */
typedef struct sim_pdes_buf {
    unsigned char *data;
    size_t len, cap;
} sim_pdes_buf;
void sim_pdes_buf_put(sim_pdes_buf *b, const void *data, size_t n);

/* How ranks meet (sim/ knows no MPI): exchange sends out[r] to every rank r
 * and fills in[r] with what r sent here (the transport's memory, valid until
 * the next call); min_time is the least `mine` over all ranks. Both are
 * collective: every rank calls them in the same order. */
typedef struct sim_pdes_transport {
    unsigned rank, size;
    void (*exchange)(void *ctx, const sim_pdes_buf *out, sim_pdes_buf *in);
    sim_time_ps (*min_time)(void *ctx, sim_time_ps mine);
    void *ctx;
} sim_pdes_transport;

/* Collectives made of exchange, for what a ranked run reports (every rank
 * calls them in the same order). Gather: at rank 0, all[r] is rank r's
 * `mine` (the transport's memory, valid until its next call; all has size
 * entries); elsewhere all is untouched. Sum: v summed over ranks, in place
 * on every rank (integers: exact in any order). */
void sim_pdes_gather(const sim_pdes_transport *tr, const void *mine, size_t n, sim_pdes_buf *all);
void sim_pdes_sum_u64(const sim_pdes_transport *tr, uint64_t *v, size_t n);

/* A cut link's messages as bytes: encode appends the message's payload to
 * buf on the sending rank (and may give the original back: it is handed
 * over), decode makes it again on the receiving rank. A sending cut needs
 * encode, a receiving one decode. */
typedef struct sim_pdes_codec {
    void (*encode)(void *ctx, const sim_link_msg *m, sim_pdes_buf *buf);
    void *(*decode)(void *ctx, const unsigned char *data, size_t len);
    void *ctx;
} sim_pdes_codec;

/* This rank's part: kernel k. The transport is copied. */
sim_pdes *sim_pdes_new_ranked(const sim_pdes_transport *tr, sim_kernel *k);
/* A cut direction as seen from here: the sending half here, its receiving
 * half on rank `to` (or the reverse); cut_id names the direction on both
 * ranks alike (a fabric's link-direction index). The codec must outlive p. */
void sim_pdes_cut_sending(sim_pdes *p, sim_link *sending, unsigned to_rank, uint32_t cut_id, const sim_pdes_codec *c);
void sim_pdes_cut_receiving(sim_pdes *p, sim_link *receiving, unsigned from_rank, uint32_t cut_id, const sim_pdes_codec *c);
/* Wall seconds this rank spent in the transport (waiting on the others), and in sim_pdes_run. */
double sim_pdes_blocked_s(const sim_pdes *p);
double sim_pdes_wall_s(const sim_pdes *p);

sim_time_ps sim_pdes_lookahead_ps(const sim_pdes *p);
uint64_t sim_pdes_windows(const sim_pdes *p);
/* Process activations of every part here (in-process: what one kernel would
 * count; ranked: this rank's, to be summed over ranks). */
uint64_t sim_pdes_events(const sim_pdes *p);

#endif
