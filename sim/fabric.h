/* The fabric: builds a running system from a topology (sim/topo.h) -- one
 * component per node, made by the component kind registered under the
 * node's kind name, and two sim links (one per direction) per topology link,
 * with the link's preset rate and latency and the credits the receiving
 * port asks for. Components meet only through those links (SST's
 * configureLink by port name); the fabric owns the links, the routing
 * tables and the multicast groups, never a component's state.
 *
 *   topo *t = topo_from_string_or_exit(spec, link_preset);
 *   endpoint_cfg ec = { ... };                                    // a kind's settings (its header)
 *   sim_fabric_cfg fc = { .routing = TOPO_ROUTE_ECMP, .trace = c->trace, .seed = c->seed,
 *                         .kind_cfg = { { "endpoint", &ec } } };
 *   sim_fabric *f = sim_fabric_new(k, t, &fc, err, sizeof err);   // NULL: bad input (exit 2)
 *   sim_run(k, ...);
 *   sim_fabric_check(f, true, why, sizeof why);                   // links + every component
 *
 * Build order (each step for every node in node order, so it is
 * deterministic): build -> ingress (each connected port's credit pools) ->
 * links made -> connect (each connected port, in port order) -> start.
 *
 * A model adds a kind with sim_fabric_kind_register, from a function the
 * program calls (static libraries drop unreferenced constructors): models
 * export `void <model>_register_kinds(void)`, which a test calls before
 * sim_fabric_new; registering the same kind twice is harmless. */
#ifndef SIM_FABRIC_H
#define SIM_FABRIC_H

#include "sim/kernel.h"
#include "sim/link.h"
#include "sim/packet.h"
#include "sim/topo.h"
#include "sim/trace.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sim_fabric sim_fabric;
typedef struct cJSON cJSON;
struct sim_pdes_buf;

/* One connected port of a component, as the fabric made it. */
typedef struct sim_fabric_port {
    uint32_t node;
    unsigned port;
    const char *name;            /* "s0.p3" */
    sim_link *out;               /* we send on it */
    sim_link *in;                /* we receive on it (set our receiver on it in connect) */
    uint32_t peer_node;
    unsigned peer_port;
    const topo_link *link;       /* rate, latency, preset, overhead bytes per packet */
    /* Flow control the peer's ingress asked for on `out` (0 types: none):
     * a packet on VC v spends ceil(bytes / out_credit_bytes) credits of pool v. */
    unsigned out_credit_types;
    unsigned out_credit_bytes;
} sim_fabric_port;

/* The credits a packet of `bytes` spends on a link whose credit stands for credit_bytes. */
static inline uint32_t sim_fabric_credits(uint32_t bytes, unsigned credit_bytes)
{
    return (bytes + credit_bytes - 1) / credit_bytes;
}

/* What a port's receiving side asks of the link into it. */
typedef struct sim_fabric_ingress {
    unsigned credit_types;       /* pools (VCs); 0 = no flow control */
    unsigned credit_bytes;       /* bytes one credit stands for (e.g. 64 for InfiniBand blocks) */
    uint32_t credits[SIM_LINK_MAX_CREDIT_TYPES];
} sim_fabric_ingress;

typedef struct sim_fabric_kind {
    const char *name;            /* the topo kind it builds (topo_kind_find(name) must exist) */
    /* The component of `node`; NULL with why on a bad node param (the fabric fails, exit 2). */
    void *(*build)(sim_fabric *f, uint32_t node, char *why, size_t why_n);
    /* Port `port`'s ingress flow control (NULL: none on any port). */
    void (*ingress)(void *comp, unsigned port, sim_fabric_ingress *in);
    void (*connect)(void *comp, const sim_fabric_port *p);
    void (*start)(void *comp);   /* every port connected; may be NULL */
    /* Its own conservation (nothing lost, duplicated, credits bounded); 0 fine. */
    int (*check)(const void *comp, bool drained, char *why, size_t why_n);
    void (*reset_stats)(void *comp);   /* end of warm-up; may be NULL */
    /* Teardown: calls fn for every packet it holds (queued, buffered); NULL if
     * it never holds one between events. See sim_fabric_free. */
    void (*held)(const void *comp, void (*fn)(sim_pkt *pkt, void *ctx), void *ctx);
    /* Frees the component; every packet of its pool is back by then (strict sim_pkt_pool_free). */
    void (*free)(void *comp);
    /* May its nodes be put in different parts of a partitioned fabric? It
     * takes its kernel from sim_fabric_node_kernel, and its links neither
     * defer deliveries nor have their marked messages counted. */
    bool partitionable;
    /* A run over ranks (sim_fabric_gather): pack appends what the component
     * measured to buf; unpack puts another rank's numbers into its replica
     * on rank 0, whose accessors then report them. NULL: nothing to report. */
    void (*pack_stats)(const void *comp, struct sim_pdes_buf *buf);
    void (*unpack_stats)(void *comp, const unsigned char *data, size_t len);
} sim_fabric_kind;

void sim_fabric_kind_register(const sim_fabric_kind *k);
const sim_fabric_kind *sim_fabric_kind_find(const char *name);

#define SIM_FABRIC_MAX_KIND_CFGS 8
typedef struct sim_fabric_cfg {
    enum topo_routing routing;
    sim_trace *trace;            /* NULL: no waves */
    uint64_t seed;               /* components derive theirs with sim_fabric_node_seed */
    /* A kind's settings from the test (the kind's own struct, from its
     * header), read by its build; the pointers must outlive the fabric. */
    struct { const char *kind; const void *cfg; } kind_cfg[SIM_FABRIC_MAX_KIND_CFGS];
    /* Partitioned (parts > 1, sim/pdes.h): node n is built in kernel
     * part_kernels[node_part[n]] (the kernel argument of sim_fabric_new is
     * then part 0's), a link between parts is cut into halves, and
     * sim_fabric_run runs the parts in windows. Arrays the caller's. */
    unsigned parts;
    sim_kernel *const *part_kernels;
    const uint32_t *node_part;
    /* Ranked (over MPI: tb/mpi/pdes_mpi.h): one part per rank of the
     * transport, node_part[n] the rank of node n; this rank runs its own nodes
     * in `k` and builds the others' as replicas that never run (so every node
     * has a component to report from); cut links carry packets as bytes
     * (sim/fabric_cut.h). parts and part_kernels are then unused. */
    const struct sim_pdes_transport *transport;
    /* Run routes whose channel dependencies close a cycle (refused otherwise:
     * they can deadlock on lossless links): for a test that shows the deadlock
     * and detects it itself (a PFC watchdog), never for one that would hang. */
    bool allow_route_cycles;
} sim_fabric_cfg;

/* NULL with err naming the node / link / field on bad input. t stays the caller's. */
sim_fabric *sim_fabric_new(sim_kernel *k, const topo *t, const sim_fabric_cfg *cfg, char *err, size_t errlen);
/* Every message on a fabric's links is a sim_pkt (sim/packet.h).
 * Teardown in one order, drained or not (a run stopped by a failed check):
 * first every packet still held by a component or in flight on a link is
 * given back to its pool (each once, though a switch and a link may both
 * name one), then the components are freed, then the links. */
void sim_fabric_free(sim_fabric *f);

sim_kernel *sim_fabric_kernel(const sim_fabric *f);
/* The kernel node's component lives in (a kind's build takes its kernel here). */
sim_kernel *sim_fabric_node_kernel(const sim_fabric *f, uint32_t node);
/* Does node run here (always, but in a ranked fabric for other ranks' nodes)? */
bool sim_fabric_node_local(const sim_fabric *f, uint32_t node);
/* sim_run of the whole system: the parts in windows when partitioned. */
sim_time_ps sim_fabric_run(sim_fabric *f, sim_time_ps until_ps);
/* Runs in steps of step_ps until no link carries anything (a network's
 * periodic flow-control packets never stop: an instant between them makes a
 * drained check meaningful); false if none came within max_steps. One process. */
bool sim_fabric_run_until_quiet(sim_fabric *f, sim_time_ps step_ps, unsigned max_steps);
/* Process activations of the whole system (every part). */
uint64_t sim_fabric_events(const sim_fabric *f);
/* The parts' windows (sim/pdes.h: lookahead, windows), or NULL when not partitioned. */
struct sim_pdes *sim_fabric_pdes(const sim_fabric *f);
const topo *sim_fabric_topo(const sim_fabric *f);
const topo_routes *sim_fabric_routes(const sim_fabric *f);
sim_groups *sim_fabric_groups(sim_fabric *f);
sim_trace *sim_fabric_trace(const sim_fabric *f);
/* The kind_cfg given for kind, or NULL (the kind's defaults). */
const void *sim_fabric_kind_cfg(const sim_fabric *f, const char *kind);
uint64_t sim_fabric_node_seed(const sim_fabric *f, uint32_t node);
void *sim_fabric_component(const sim_fabric *f, uint32_t node);
/* The link of topology link `link` in direction a->b (dir 0) or b->a (1): its
 * sending half when the direction is cut between parts (the wire statistics);
 * NULL in a ranked fabric when another rank sends on it (its numbers:
 * sim_fabric_dir_stats_get after sim_fabric_gather). */
sim_link *sim_fabric_link(const sim_fabric *f, uint32_t link, unsigned dir);

/* Every link's and every component's conservation; 0 fine, else why names the first failure. */
int sim_fabric_check(const sim_fabric *f, bool drained, char *why, size_t why_n);
/* Resets link and component statistics (end of warm-up). */
void sim_fabric_reset_stats(sim_fabric *f);

/* What one link direction carried since the stats reset, as its sender measured it. */
typedef struct sim_fabric_dir_stats {
    double util;                 /* wire busy / time since the reset */
    double window_s;             /* time since the reset */
    uint64_t window_msgs, window_bytes, stall_ps;
} sim_fabric_dir_stats;
/* A direction's statistics: its sender's, live on this rank or gathered to
 * rank 0 (sim_fabric_gather); false when this rank has neither. */
bool sim_fabric_dir_stats_get(const sim_fabric *f, uint32_t link, unsigned dir, sim_fabric_dir_stats *s);
/* Per direction of every link: {"link","from","to","util","GBps","msgs","stall_ns"}. */
cJSON *sim_fabric_link_util_json(const sim_fabric *f);
/* The busiest direction: its utilisation and, in buf, "a.p0->b.p3". */
double sim_fabric_max_link_util(const sim_fabric *f, char *buf, size_t n);
/* Where the run's link time went, by layer of the stack (sim/tier.h):
 * {"busiest_tier", "tiers": [{tier, link_directions, bytes, max_util, busiest,
 * stall_ns}], "top_links": the `top` busiest directions by utilisation, then
 * stall time: [{link, tier, util, GBps, stall_ns}]}. */
cJSON *sim_fabric_bottleneck_json(const sim_fabric *f, unsigned top);

/* ---- a run over ranks (cfg.transport): collective, every rank calls these
 * in the same order; in one process they are the local calls. ---- */
/* Rank 0 takes in every rank's link-direction statistics and (kinds with
 * pack_stats) component statistics, into its replicas: afterwards rank 0
 * reports the whole system through the usual calls (the components'
 * accessors, the link calls above, the picture). Call it where the numbers are
 * read (every rank's kernel stands at the same time); again to refresh. */
void sim_fabric_gather(sim_fabric *f);
/* sim_fabric_check on every rank: at rank 0 the first failure in rank order
 * ("rank r: ..."), elsewhere this rank's. */
int sim_fabric_check_all(const sim_fabric *f, bool drained, char *why, size_t why_n);
/* Process activations of every rank. */
uint64_t sim_fabric_events_all(const sim_fabric *f);
/* Per rank {"rank","events","wall_s","windows","blocked_s"}: wall_s its time
 * in sim_fabric_run, windows and blocked_s (waiting on the others) its pdes
 * windows (0 when not partitioned). Rank 0: every rank's; elsewhere its own. */
cJSON *sim_fabric_ranks_json(const sim_fabric *f);
/* A picture of the system: nodes by kind, links coloured by utilisation, the
 * busiest one marked; Graphviz dot -> SVG at path (path.dot kept beside it).
 * Returns 0, or -1 with why (dot missing: install graphviz). */
int sim_fabric_write_svg(const sim_fabric *f, const char *path, const char *title, char *why, size_t why_n);

#endif
