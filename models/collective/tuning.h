/* proto=auto: the protocol a run uses, from the engine's own cost estimate
 * (as NCCL's tuning.cc: a latency plus bytes over a bandwidth per algorithm
 * and protocol), computed from the configuration -- the NVLink rate and
 * per-packet overhead, the link and switch latencies, the protocols' line
 * formats, slot sizes and synchronisation (proto.h), the channels, slots and
 * the reduction unit -- never from a run. docs/models/collective.md "Protocols". */
#ifndef MODELS_COLLECTIVE_TUNING_H
#define MODELS_COLLECTIVE_TUNING_H

#include "models/collective/collective.h"

/* Estimated time (us) of one collective of `count` elements with protocol p
 * (simple, ll, ll128); tree: the tree all_reduce, else the ring. */
double coll_tune_estimate_us(const coll_comm *c, bool tree, enum coll_op op, uint64_t count, enum coll_proto p);
/* The protocol with the lowest estimate (ties: the earlier of simple, ll, ll128); est_us (may be NULL) gets all three. */
enum coll_proto coll_tune_proto(const coll_comm *c, bool tree, enum coll_op op, uint64_t count, double est_us[COLL_PROTOS]);

#endif
