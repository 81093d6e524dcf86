/* The engine's private state, shared by collective.c (communicator, runs,
 * the reference check) and ring.c (the ring's per-channel state machine). */
#ifndef MODELS_COLLECTIVE_COLL_IMPL_H
#define MODELS_COLLECTIVE_COLL_IMPL_H

#include "models/collective/collective.h"
#include "models/collective/proto.h"

#define COLL_MAX_RANKS 4096   /* a limit on input, not an array size: ranks are allocated */
#define COLL_MAX_CHANNELS 64
#define COLL_MAX_SLOTS 64
#define COLL_STEP_MIN_PS 1000000ull   /* coll_run checks for the end at least 1 us apart */

/* What a message is, in its packets' flags. */
enum { COLL_MSG_DATA = 1, COLL_MSG_FLAG = 2, COLL_MSG_ACK = 3, COLL_MSG_VISIBLE = 4 };   /* VISIBLE: Simple's fence, the data's write response */

typedef struct coll_rank coll_rank;

/* One rank's side of one channel (a ring): it sends to next, receives from prev. */
typedef struct ring_chan {
    coll_rank *rk;
    unsigned ch, port;             /* the NVLink port it sends (and gets acks) on */
    uint64_t data_flow, ack_flow;  /* to next; to prev */
    uint64_t chunks, items;        /* chunks per block; items = chunks x steps (sends, and receives) */
    /* sender */
    uint64_t send_i;               /* next send, in (chunk, step) order */
    unsigned credits;              /* free slots at next */
    uint64_t data_bytes_sent, flags_sent, acks_recv;   /* data_bytes: wire payload (LL/LL128: lines, flags included) */
    uint64_t visible_recv;         /* Simple: write responses back, each lets one flag leave */
    uint8_t flag_pending[COLL_MAX_SLOTS];   /* Simple: per slot, the flag waits for its data's write response */
    float *flag_vals[COLL_MAX_SLOTS];       /* ... and the values it will carry (check) */
    /* receiver */
    uint64_t recv_i;               /* next flag expected */
    uint64_t data_i;               /* the item whose data arrives next (its writes come in item order) */
    uint64_t recv_bytes;           /* data of item data_i received so far */
    uint64_t visible_sent;
    uint64_t recv_bytes_total;
    uint64_t processed;            /* items processed (reduced or copied), in order */
    uint8_t done[COLL_MAX_SLOTS];  /* per slot: item processed, waiting for the ones before it */
    float *vals[COLL_MAX_SLOTS];   /* per slot: the values the flag made visible (check) */
    uint64_t acks_sent;
    sim_time_ps done_ps;           /* the last item processed */
    bool finished;
    /* items this rank sends and receives: both `items` on the ring; on a
     * chain (broadcast, reduce) the first rank only sends, the last only receives */
    uint64_t send_items, recv_items;
    /* the channel's ring (ring_order.c): this rank's neighbours in it, and the port acks to prev leave by
     * (port, above, is the one data to next leaves by: an NVLink, or the NIC's port when next is on another node) */
    unsigned next_r, prev_r, ack_port;
    uint32_t next_ep, prev_ep;
} ring_chan;

struct coll_rank {
    coll_comm *cm;
    unsigned r;
    nvgpu *g;
    bool local;                    /* its GPU runs in this process (over ranks: this rank's part) */
    uint32_t next_ep, prev_ep;
    ring_chan ch[COLL_MAX_CHANNELS];
    float *in, *out;               /* check: count floats each */
    unsigned chans_done;
    sim_time_ps done_ps;
};

struct coll_comm {
    sim_fabric *f;
    sim_kernel *k;
    coll_cfg cfg;
    unsigned n, channels;
    coll_rank *rank;               /* n of them */
    /* the run in progress */
    enum coll_op op;
    uint64_t count, chunk_elems;
    unsigned steps;                /* per chunk: 2(n-1) all_reduce, n-1 the others */
    bool carry;                    /* values carried this run */
    unsigned ranks_done;
    bool injected;                 /* the seeded bug struck this run */
    /* nodes (coll_nodes.c) */
    unsigned n_nodes;
    unsigned *rank_node;           /* n of them */
    struct tree_state *tree;       /* tree.c's, made at its first run */
    struct p2p_state *p2p;         /* ops.c's (alltoall, sendrecv), made at its first run */
    /* the run's protocol (cfg.proto, or auto's choice) and element type */
    enum coll_proto proto;
    const coll_proto_def *pd;
    enum coll_dtype dtype;
    unsigned elem_bytes;
    /* ring_order.c: channel ch's ring is ring_order[ch * n + 0 .. n-1]; ring_pos the inverse */
    unsigned *ring_order, *ring_pos;
    unsigned ring_nodes;           /* NVLink domains the rings cross (1: one node) */
    unsigned *rank_domain;         /* rank -> its NVLink domain (the topology's, whatever gpus_per_node says) */
    struct nvls_state *nvls;       /* nvls.c's, made at its first run */
};

/* coll_nodes.c: fills n_nodes and rank_node; -1 with err on a bad gpus_per_node. */
int coll_nodes_group(coll_comm *c, char *err, size_t errlen);
/* tree.c */
void coll_tree_free(coll_comm *c);
/* nvls.c */
void coll_nvls_free(coll_comm *c);
/* collective.c: the flow label of connection src -> dst of channel ch on `port` (see there), and rank r's input. */
uint64_t coll_pick_flow(coll_comm *c, unsigned src, unsigned dst, unsigned port, unsigned ch, unsigned kind);
float coll_input_value(unsigned r, uint64_t i);

/* Element range of (block b, channel ch, chunk k): offset and length. */
void coll_range(const coll_comm *c, unsigned b, unsigned ch, uint64_t k, uint64_t *off, uint64_t *len);
/* The block rank r sends at step s. */
unsigned coll_block(const coll_comm *c, unsigned r, unsigned s);
/* Does the receive of step s reduce (else it copies)? */
bool coll_step_reduces(const coll_comm *c, unsigned s);
/* Per op, the ring's rules (collective.c's table): the range of item i that
 * rank `sender` sends on channel ch; does rank rc's send i read a receive
 * (which: *j), and is its receive j read by a later send (else its slot is
 * freed once processed)? */
void coll_item_range(const coll_comm *c, unsigned sender, unsigned ch, uint64_t i, uint64_t *off, uint64_t *len);
bool coll_send_reads(const ring_chan *rc, uint64_t i, uint64_t *j);
bool coll_recv_is_read(const ring_chan *rc, uint64_t j);
/* The rank the seeded bug strikes (one that receives data in the op). */
unsigned coll_inject_rank(const coll_comm *c);
/* Elements [lo, lo + lb) cut over the channels, channel ch's chunk k: offset and length. */
void coll_span_range(const coll_comm *c, uint64_t lo, uint64_t lb, unsigned ch, uint64_t k, uint64_t *off, uint64_t *len);

/* ops.c: alltoall and sendrecv (point-to-point connections), as coll_run */
int coll_p2p_run(coll_comm *c, enum coll_op op, uint64_t count, coll_result *r, char *why, size_t why_n);
void coll_p2p_free(coll_comm *c);
uint64_t coll_p2p_rank_bytes_received(const coll_comm *c, unsigned r);

/* tuning.c: the run's protocol (cfg.proto, or auto's choice for this algorithm, c->op and count) into c->proto, c->pd */
void coll_set_run_proto(coll_comm *c, bool tree, uint64_t count);

/* ring_order.c: the rings of every channel (rail-optimised across nodes) and their ports; -1 with err. */
int coll_ring_setup(coll_comm *c, char *err, size_t errlen);
/* The block rank r sends at step s in channel ch's ring (coll_block through the ring's order). */
unsigned coll_ring_block(const coll_comm *c, unsigned ch, unsigned r, unsigned s);

/* ring.c */
void ring_chan_start(ring_chan *rc);
void ring_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps);
void ring_on_sent(void *ctx, nvgpu *g, uint64_t tag);
void ring_on_reduced(void *ctx, nvgpu *g, uint64_t tag);

#endif
