/* The fabric switch's opt-in reduction unit (NVLink SHARP, "NVLS"; a
 * topology node param nvls=1 on a kind "switch" node): private to
 * models/fabric (switch.c drives it). It knows packets, groups and the
 * reduce flag (SIM_PKT_F_REDUCE), never a collective engine.
 *
 * A reduce contribution is a packet to a group (dst SIM_PKT_GROUP) with
 * SIM_PKT_F_REDUCE in its flags; its key is (group, seq). The unit holds
 * contributions in a bounded table (cfg.nvls_table_entries keys, partial or
 * being reduced; a new key beyond that waits in arrival order) -- each still holding its
 * input-buffer credits, so a full table or a slow unit back-pressures the
 * senders -- until every member of the group has given one. The complete set
 * goes through a FIFO server (its contributions' payload bytes at
 * cfg.nvls_reduce_GBps, then cfg.nvls_latency_ns), whose end folds the values
 * (fabric_reduce_data, switch.h: in the owning model's code) and turns every
 * contribution into the result copy for its own sender, leaving through the
 * input it came in on (so one input's read port carries one copy per
 * contribution, and a member's results leave in the order of its keys). */
#ifndef MODELS_FABRIC_SWITCH_NVLS_H
#define MODELS_FABRIC_SWITCH_NVLS_H

#include "models/fabric/switch.h"

typedef struct sw_nvls sw_nvls;

/* What the unit hands back: a contribution that became a result copy (its
 * packet now addressed to its sender, eligible at done_ps), on the input it
 * came in on, with the switch's buffer record `buf` still holding its credits. */
typedef void (*sw_nvls_emit_fn)(void *ctx, sim_pkt *pkt, void *buf, unsigned in_port, sim_time_ps done_ps);

sw_nvls *sw_nvls_new(const sim_groups *g, const fabric_switch_cfg *cfg, const char *name);
void sw_nvls_free(sw_nvls *u);
/* A contribution received on in_port (eligible for the switch at eligible_ps). */
void sw_nvls_add(sw_nvls *u, sim_pkt *pkt, void *buf, unsigned in_port, sim_time_ps eligible_ps, sim_time_ps now);
/* Emits the results whose reduction ended by now; returns the next end (SIM_TIME_MAX: none pending). */
sim_time_ps sw_nvls_run(sw_nvls *u, sim_time_ps now, sw_nvls_emit_fn emit, void *ctx);
/* The earliest pending end (SIM_TIME_MAX: none). */
sim_time_ps sw_nvls_next_ps(const sw_nvls *u);
/* Counters (fabric_switch_stats' nvls_* fields). */
void sw_nvls_stats(const sw_nvls *u, fabric_switch_stats *st);
/* Conservation: contributions received = consumed + held; drained: nothing held. 0 fine. */
int sw_nvls_check(const sw_nvls *u, bool drained, char *why, size_t why_n);
void sw_nvls_for_each_held(const sw_nvls *u, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);

#endif
