/* The collective engine: a communicator over the nvgpu components of a
 * fabric, and ring collectives on it (all_reduce = reduce-scatter then
 * all-gather, all_gather, reduce_scatter) with NCCL's Simple protocol:
 * per channel, per step, chunks written into the next rank's slot buffer
 * (NCCL_STEPS slots), each followed by a flag write; the receiver uses a
 * chunk only after its flag, and frees the slot with an ack write back.
 * Every byte moves as NVLink packets on the modelled links; the time of a
 * collective is when its last rank has processed its last chunk.
 *
 *   collective_register_kinds();               // before the topology is read
 *   coll_comm *cm = coll_comm_new(f, &cfg, err, sizeof err);
 *   coll_result r; coll_run(cm, COLL_ALL_REDUCE, count, &r);
 *
 * docs/models/collective.md. */
#ifndef MODELS_COLLECTIVE_COLLECTIVE_H
#define MODELS_COLLECTIVE_COLLECTIVE_H

#include "models/collective/nvgpu.h"
#include "models/collective/proto.h"
#include "sim/fabric.h"

#include <stdbool.h>
#include <stdint.h>

/* Registers kind "nvgpu" (topology and fabric); the switch is the fabric's (fabric_register_kinds). */
void collective_register_kinds(void);

/* broadcast and reduce run on the ring's connections as a pipelined chain
 * from / to the root (cfg.root); alltoall and sendrecv are point-to-point
 * (ops.c). The order is COLL_OP_CHOICES' (nccl_tests' op= enum index). */
enum coll_op { COLL_ALL_REDUCE = 0, COLL_ALL_GATHER, COLL_REDUCE_SCATTER, COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL, COLL_SENDRECV };
#define COLL_OP_CHOICES "all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv"
const char *coll_op_name(enum coll_op op);
/* Does the op have a root (broadcast, reduce)? */
bool coll_op_has_root(enum coll_op op);
/* nccl-tests' busbw factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather, reduce_scatter and
 * alltoall (n-1)/n; broadcast, reduce and sendrecv 1. */
double coll_busbw_factor(enum coll_op op, unsigned ranks);

enum coll_inject { COLL_INJECT_NONE = 0, COLL_INJECT_SKIP_CHUNK };

typedef struct coll_cfg {
    unsigned channels;          /* rings; 0 = one per NVLink port of a GPU */
    uint32_t chunk_bytes;       /* Simple protocol: bytes per flagged chunk (a slot) */
    unsigned slots;             /* slots per connection (NCCL_STEPS: 8) */
    uint32_t flag_bytes;        /* a flag or ack write's payload (8) */
    bool check;                 /* carry real floats, reduce them, compare with a reference */
    enum coll_inject inject;    /* a seeded bug: skip_chunk (rank 0 drops the first chunk with data it receives) */
    /* The fabric's transport when it runs over MPI ranks (NULL: one process):
     * each rank drives its own GPUs, and the ranks agree on when a collective
     * is over and on every GPU's counters. check needs one process (values go by pointer). */
    const struct sim_pdes_transport *transport;
    /* Ranks per node for the tree: 0 = from the topology (GPUs joined by
     * NVLink links, directly or through switches), else consecutive ranks in
     * groups of this many (must divide the ranks). */
    unsigned gpus_per_node;
    unsigned root;              /* broadcast, reduce: the root rank (< ranks) */
    /* The protocol (proto.h): simple, ll, ll128, or auto = per run, the one
     * coll_tune_proto (tuning.h) estimates fastest for the algorithm and size. */
    enum coll_proto proto;
    enum coll_dtype dtype;      /* element type: count is in elements of it; values rounded to it (check) */
} coll_cfg;
#define COLL_CFG_DEFAULT ((coll_cfg){ 0, 128 * 1024, 8, 8, true, COLL_INJECT_NONE, NULL, 0, 0, COLL_PROTO_SIMPLE, COLL_DTYPE_FLOAT })

typedef struct coll_comm coll_comm;

/* Ranks: the fabric's nvgpu components in endpoint order; ring order is rank
 * order. NULL with err when there are fewer than 2 or a GPU has no port. */
coll_comm *coll_comm_new(sim_fabric *f, const coll_cfg *cfg, char *err, size_t errlen);
void coll_comm_free(coll_comm *c);
unsigned coll_comm_ranks(const coll_comm *c);
unsigned coll_comm_channels(const coll_comm *c);
/* Carry and check values in the runs that follow (cfg.check until called). */
void coll_comm_set_check(coll_comm *c, bool check);
/* The protocol of the runs that follow (cfg.proto until called; COLL_PROTO_AUTO: chosen per run). */
void coll_comm_set_proto(coll_comm *c, enum coll_proto proto);

/* Nodes (coll_cfg.gpus_per_node) and the node of rank r, numbered by their first rank (coll_nodes.c). */
unsigned coll_comm_nodes(const coll_comm *c);
unsigned coll_rank_node(const coll_comm *c, unsigned r);

typedef struct coll_result {
    uint64_t count;             /* elements (float) of the buffer */
    sim_time_ps time_ps;        /* start to the last rank's completion */
    uint64_t wrong;             /* elements differing from the reference (all ranks); 0 when not checked */
    bool checked;
    uint64_t data_bytes_sent;   /* payload of data messages, every rank */
    uint64_t flags_sent, acks_sent;
    uint64_t data_bytes_received;   /* payload of data messages received, every rank (= data_bytes_sent when conserved) */
    enum coll_proto proto;      /* the protocol the run used (cfg.proto, or auto's choice) */
    uint64_t visible_sent;      /* Simple's fence: write responses that let a flag leave */
} coll_result;

/* Runs one collective of `count` elements (cfg.dtype) from now to the end of its
 * traffic (the fabric drained), in steps of simulated time (an eighth of the
 * time so far, at least 1 us) checked for the end -- the same steps in one
 * process and over ranks, so the kernel then stands at the same time. count for all_gather / reduce_scatter: a
 * multiple of the ranks (the whole buffer; a rank's block is count / ranks).
 * Returns 0, or -1 with why (its own conservation failed). */
int coll_run(coll_comm *c, enum coll_op op, uint64_t count, coll_result *r, char *why, size_t why_n);
/* Data payload rank r received in the last coll_run (not the tree's): a per-rank conservation view. */
uint64_t coll_rank_bytes_received(const coll_comm *c, unsigned r);

/* ---- tree all_reduce (tree.c): NCCL's double binary tree over the nodes,
 * a chain through the ranks of each node, reduce up and broadcast down at
 * once (NCCL's runTreeSplit), pipelined in chunks with the Simple protocol.
 * Channels: cfg.channels, 0 = two per NVLink port (the two trees' channels
 * share the port, as both trees share a node's links in NCCL); channel ch
 * runs tree ch % 2 on NVLink port (ch / 2) % ports. One process only. */
#define COLL_TREE_MAX_CHILDREN 3   /* two tree children (the next nodes' heads) and the chain's next GPU */
unsigned coll_tree_channels(const coll_comm *c);
unsigned coll_tree_port(const coll_comm *c, unsigned ch);
/* Rank r's parent in channel ch's tree (-1: the root) and its children; returns how many. */
unsigned coll_tree_peers(const coll_comm *c, unsigned ch, unsigned r, int *parent, unsigned children[COLL_TREE_MAX_CHILDREN]);
/* One all_reduce of `count` floats over the trees; as coll_run. */
int coll_tree_all_reduce(coll_comm *c, uint64_t count, coll_result *r, char *why, size_t why_n);

/* ---- NVLS all_reduce (nvls.c): NCCL's NVLink SHARP. Channel ch (cfg.channels,
 * 0 = one per NVLink port) on NVLink port ch % ports of every rank, through
 * the switch that port leads to, which must have a reduction unit (topology
 * node param nvls=1; models/fabric/switch.h); per chunk every rank writes
 * its contribution to the group of all ranks, the switch reduces and sends
 * each rank the sum; flags and acks as the ring's slots, also reduced in the
 * switch. One process only. */
/* Can this communicator run NVLS (every GPU's port p on one nvls=1 switch)? false with why. */
bool coll_nvls_available(const coll_comm *c, char *why, size_t why_n);
unsigned coll_nvls_channels(const coll_comm *c);
unsigned coll_nvls_port(const coll_comm *c, unsigned ch);
int coll_nvls_switch(const coll_comm *c, unsigned ch);   /* the topology node of channel ch's switch */
/* One all_reduce of `count` floats with NVLS; as coll_run. */
int coll_nvls_all_reduce(coll_comm *c, uint64_t count, coll_result *r, char *why, size_t why_n);
/* Result messages the ranks received over every NVLS run (the switches' result copies, for conservation). */
uint64_t coll_nvls_results_received(const coll_comm *c);

#endif
