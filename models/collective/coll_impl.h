/* The engine's private state, shared by collective.c (communicator, runs,
 * the reference check) and ring.c (the ring's per-channel state machine). */
#ifndef MODELS_COLLECTIVE_COLL_IMPL_H
#define MODELS_COLLECTIVE_COLL_IMPL_H

#include "models/collective/collective.h"

#define COLL_MAX_RANKS 64
#define COLL_MAX_CHANNELS 64
#define COLL_MAX_SLOTS 64
#define COLL_STEP_MIN_PS 1000000ull   /* coll_run checks for the end at least 1 us apart */

/* What a message is, in its packets' flags. */
enum { COLL_MSG_DATA = 1, COLL_MSG_FLAG = 2, COLL_MSG_ACK = 3 };

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
    uint64_t data_bytes_sent, flags_sent, acks_recv;
    /* receiver */
    uint64_t recv_i;               /* next flag expected */
    uint64_t recv_bytes;           /* data of item recv_i received so far */
    uint64_t recv_bytes_total;
    uint64_t processed;            /* items processed (reduced or copied), in order */
    uint8_t done[COLL_MAX_SLOTS];  /* per slot: item processed, waiting for the ones before it */
    float *vals[COLL_MAX_SLOTS];   /* per slot: the values the flag made visible (check) */
    uint64_t acks_sent;
    sim_time_ps done_ps;           /* the last item processed */
    bool finished;
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
    coll_rank rank[COLL_MAX_RANKS];
    /* the run in progress */
    enum coll_op op;
    uint64_t count, chunk_elems;
    unsigned steps;                /* per chunk: 2(n-1) all_reduce, n-1 the others */
    bool carry;                    /* values carried this run */
    unsigned ranks_done;
    bool injected;                 /* the seeded bug struck this run */
    /* nodes (coll_nodes.c) */
    unsigned n_nodes;
    unsigned rank_node[COLL_MAX_RANKS];
    struct tree_state *tree;       /* tree.c's, made at its first run */
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

/* ring.c */
void ring_chan_start(ring_chan *rc);
void ring_on_recv(void *ctx, nvgpu *g, sim_pkt *pkt, sim_time_ps arrival_ps);
void ring_on_sent(void *ctx, nvgpu *g, uint64_t tag);
void ring_on_reduced(void *ctx, nvgpu *g, uint64_t tag);

#endif
