/* A memory controller's timing, shared by the Type-3 device's media and the
 * host's local DRAM (cxl_mem.h): requests of one 64 B line each are served in
 * arrival order by a pipelined channel that takes one new line every
 * 64 B / GBps (its bandwidth) and finishes each access access_ns after it
 * started (its idle latency). A request waits while the channel is busy with
 * earlier ones (queueing under load); with nothing ahead it takes access_ns.
 * Banks, row hits, refresh and read/write turnarounds are not modelled. */
#ifndef CXL_MEDIA_H
#define CXL_MEDIA_H

#include <stdint.h>

#include "models/cxl/cxl_link.h"
#include "sim/sim.h"

typedef struct cxl_media cxl_media;
/* The request starts its access (it has left the controller's queue). */
typedef void (*cxl_media_fn)(void *ctx, cxl_lmsg *t);

typedef struct cxl_media_cfg {
    const char *name;             /* process name */
    double access_ns;             /* idle access latency */
    double GBps;                  /* bandwidth: one 64 B line per 64 / GBps ns */
    const char *hop_queue, *hop_access;   /* path hop names (waiting, the access) */
    cxl_media_fn started;         /* may be NULL */
    cxl_media_fn done;            /* the access completed */
    void *ctx;
} cxl_media_cfg;

struct cxl_media {
    sim_kernel *k;
    cxl_media_cfg cfg;
    sim_time_ps access_ps;
    uint64_t line_ps_q32;         /* 64 B at GBps, in 2^-32 ps (exact serialisation, as sim_link) */
    uint64_t free_q32;            /* when the channel takes its next line, 2^-32 ps */
    cxl_mq wait;                  /* t_elig = ready to start */
    cxl_mq busy;                  /* t_elig = access done */
    sim_process proc;
    sim_event wake;
    uint64_t pushed, completed;   /* conservation: pushed = completed + waiting + busy */
    sim_time_ps busy_ps;          /* channel occupancy (lines x line time) */
};

void cxl_media_init(cxl_media *m, sim_kernel *k, const cxl_media_cfg *cfg);
/* Queues a request that is ready at t->t_elig (>= now). */
void cxl_media_push(cxl_media *m, cxl_lmsg *t);
/* Requests queued or in service. */
static inline unsigned cxl_media_inflight(const cxl_media *m) { return m->wait.n + m->busy.n; }

#endif
