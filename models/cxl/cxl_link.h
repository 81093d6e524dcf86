/* One direction of a CXL link as the CXL.cache and CXL.mem models share it:
 * three message classes (request, response, data-carrying) queued in order
 * per class, packed into 68 B flits of four 16 B slots (slot 0 the H slot:
 * 4 B flit header + 96 bits of headers; slots 1-3 G slots of 128 bits; a
 * 64 B line = four data slots following its header, in header order; an
 * all-data flit when a whole flit of data is owed), serialised by a kernel
 * link at lanes x GT/s after 128b/130b, with per-class credits that the
 * receiver returns. An on-die port (flits = false) sends messages one by one
 * with no slots and no serialisation. Messages carry an optional hop list
 * (queue wait, flit packing, wire) for latency breakdowns. */
#ifndef CXL_LINK_H
#define CXL_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "models/cxl/cxl_proto.h"
#include "sim/sim.h"

#define CXL_FLIT_BYTES 68u       /* 2 B protocol ID + 4 x 16 B slots + 2 B CRC */
#define CXL_H_SLOT_BITS 96u      /* slot 0 carries the 4 B flit header + headers */
#define CXL_G_SLOT_BITS 128u
#define CXL_SLOTS_PER_LINE 4u
#define CXL_DATA_PENDING_MAX 4u  /* data headers sent ahead of their data: 16 data slots owed at most */
#define CXL_FLIT_MAX_MSGS 16
#define CXL_PORT_CLASSES 3u

#define CXL_PATH_MAX 40
typedef struct cxl_hop {
    const char *name;
    sim_time_ps ps;
    bool link;            /* a one-way link traversal */
} cxl_hop;
typedef struct cxl_path {
    unsigned n;
    cxl_hop hop[CXL_PATH_MAX];
} cxl_path;
cxl_path *cxl_path_copy(const cxl_path *p);   /* NULL for NULL */
void cxl_path_add(cxl_path *p, const char *name, sim_time_ps ps, bool link);

static inline sim_time_ps cxl_ns_ps(double ns) { return (sim_time_ps)(ns * 1000.0 + 0.5); }

/* Bandwidth of one direction of the link after 128b/130b encoding, 1e9 B/s. */
double cxl_link_GBps(unsigned lanes, double gts);
/* Refuses (exit 2, naming `test`) a width other than 1, 2, 4, 8, 16 lanes and a
 * rate other than 8, 16, 32 GT/s (the 68 B flit mode's). */
void cxl_link_check_params(const char *test, unsigned lanes, double gts);

/* A message on a port. m.ch - the port's chan_base is its class. */
typedef struct cxl_lmsg {
    cxl_msg m;
    sim_time_ps t_elig;      /* eligible to leave its queue (jitter) / ready to be processed */
    sim_time_ps t_pack;
    uint64_t seq;            /* emission order (ordering checks) */
    cxl_path *path;
    struct cxl_lmsg *next;
} cxl_lmsg;

typedef struct cxl_mq {
    cxl_lmsg *head, *tail;
    unsigned n;
} cxl_mq;
void cxl_mq_push(cxl_mq *q, cxl_lmsg *t);
cxl_lmsg *cxl_mq_pop(cxl_mq *q);   /* NULL if empty */

typedef struct cxl_flit {
    cxl_lmsg *done[CXL_FLIT_MAX_MSGS];   /* messages complete at the receiver with this flit */
    unsigned n;
    struct cxl_flit *next;
} cxl_flit;

typedef struct cxl_port cxl_port;
/* A message arrived (its last slot did). */
typedef void (*cxl_port_deliver_fn)(void *ctx, cxl_lmsg *t);
/* True if the head of class cls may not leave yet (an ordering rule). */
typedef bool (*cxl_port_hold_fn)(void *ctx, const cxl_port *p, unsigned cls, const cxl_lmsg *t);

typedef struct cxl_port_cfg {
    const char *name;              /* the kernel link's name */
    const char *scope;             /* trace scope of the class variables */
    const char *class_names[CXL_PORT_CLASSES];   /* trace variable per class (NULL: a class never used) */
    unsigned chan_base;            /* channel of class 0 */
    unsigned hdr_bits[CXL_PORT_CLASSES];
    bool has_data[CXL_PORT_CLASSES];   /* the class carries a 64 B line */
    bool flits;                    /* false: on-die, one message at a time */
    sim_time_ps latency_ps;        /* one-way TX + wire + RX */
    double GBps;                   /* serialisation (flits only) */
    unsigned credits[CXL_PORT_CLASSES];
    sim_time_ps jitter_ps;         /* largest random extra delay on enqueue (0: none) */
    sim_rng *rng;                  /* draws the jitter (shared with the owner) */
    const char *hop_queue, *hop_pack, *hop_wire;   /* path hop names */
    cxl_port_deliver_fn deliver;
    cxl_port_hold_fn hold;         /* may be NULL */
    void *ctx;
} cxl_port_cfg;

struct cxl_port {
    sim_kernel *k;
    sim_trace *tr;
    cxl_port_cfg cfg;
    sim_link *link;
    cxl_mq q[CXL_PORT_CLASSES];
    sim_time_ps last_elig[CXL_PORT_CLASSES];
    cxl_lmsg *data_q[CXL_DATA_PENDING_MAX]; /* data messages whose header went and whose slots are owed, in order */
    unsigned data_n;
    unsigned chunks_left;    /* of data_q[0] */
    sim_process proc;
    sim_event wake;
    bool stalled[CXL_PORT_CLASSES];
    sim_time_ps stall_since[CXL_PORT_CLASSES], stall_ps[CXL_PORT_CLASSES];
    uint64_t flits_sent;
    sim_trace_var tv_ch[CXL_PORT_CLASSES];
    cxl_flit *free_flits;
    char name[32];
};

cxl_port *cxl_port_new(sim_kernel *k, sim_trace *tr, const cxl_port_cfg *cfg);
/* Frees the port and its link; queued messages are the owner's (free them first). */
void cxl_port_free(cxl_port *p);
/* Queues a message (after the jitter, in order per class) and wakes the port. */
void cxl_port_enqueue(cxl_port *p, cxl_lmsg *t);
/* The receiver is done with a message of class cls: its credit goes back. */
void cxl_port_return_credit(cxl_port *p, unsigned cls);
/* Credit-stall time of class cls up to now. */
sim_time_ps cxl_port_stall_ps(const cxl_port *p, unsigned cls);

#endif
