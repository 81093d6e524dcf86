/* System description: a graph of named nodes and full-duplex links, built from
 * ONE string (the `topo=` parameter): a JSON file or a built-in generator.
 * Routing tables (topo_routes) and the bisection bound (topo_bisection) are
 * computed from the graph. Nothing here simulates: the fabric layer builds
 * components and sim links from a finished topo.
 *
 *   char err[512];
 *   topo *t = topo_from_string("fattree:4", "ib-ndr", err, sizeof err);
 *   if (!t) sim_input_error("topo=%s: %s", spec, err);          // exit 2
 *   topo_routes *r = topo_routes_new(t, TOPO_ROUTE_ECMP, err, sizeof err);
 *   topo_hop h = topo_route_next(r, node, in_port, dst_endpoint, flow_id);
 *
 * Every builder returns NULL (or -1) with a message in err that names the
 * object, the field and what is allowed; nothing exits, so the fuzzer and the
 * unit tests can drive the refusals. Everything is deterministic. */
#ifndef SIM_TOPO_H
#define SIM_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/presets.h"

#define TOPO_MAX_PORTS 64     /* the widest kind any node may have (a port fits a uint8_t) */
#define TOPO_NAME_MAX 63      /* node names: [A-Za-z0-9_-], 1..63 characters */

/* A node kind, registered like a test. `params` lists the integer
 * parameters it takes, '|'-separated ("ports"); a node's "ports" param sets
 * its radix (default: as many as its links use, at least default_ports). */
typedef struct topo_kind {
    const char *name;           /* "switch" */
    const char *port_prefix;    /* port names are prefix + index: "p" -> s0.p3 */
    unsigned max_ports;         /* radix limit (<= TOPO_MAX_PORTS) */
    unsigned default_ports;     /* an endpoint: 1 */
    bool forwards;              /* true: packets may pass through (a switch); false: a terminal */
    const char *params;         /* accepted params, '|'-separated, "" for none */
    const char *help;
} topo_kind;

/* Kinds beyond endpoint and switch (gpu, nic, ...) register themselves from
 * their model's constructor; a name registered twice is a bug (fatal). */
void topo_kind_register(const topo_kind *k);
const topo_kind *topo_kind_find(const char *name);
unsigned topo_kind_count(void);
const topo_kind *topo_kind_at(unsigned i);

typedef struct topo_node {
    char name[TOPO_NAME_MAX + 1];
    const topo_kind *kind;
    unsigned nports;            /* radix */
    int32_t *port_link;         /* per port: link index, -1 when unconnected */
    int32_t endpoint;           /* index among terminals (kind->forwards == false), else -1 */
    int16_t coord[3];           /* mesh/torus generators: position; else -1 */
    uint8_t level;              /* fat-tree/leaf-spine generators: 0 host, 1 edge/leaf, ...; 255 unknown */
    int32_t rank;               /* the file's "rank" (partition=file); -1 when not given */
    uint8_t n_params;           /* its params: t->params[first_param ..] */
    uint32_t first_param;
} topo_node;

/* A node's integer param as given ("ports": 8); the kind's component checks
 * the values of params other than ports when it is built. */
typedef struct topo_param {
    char name[24];
    int64_t value;
} topo_param;

typedef struct topo_link {
    uint32_t a, b;              /* node ids */
    uint8_t a_port, b_port;
    const topo_preset *preset;
    double GBps;                /* per direction (preset's, or the file's override) */
    double latency_ns;          /* one way */
    unsigned overhead_bytes;    /* per packet, from the preset */
    int8_t dim;                 /* mesh/torus: dimension 0..2 of this link, -1 none */
    bool wrap;                  /* torus: the wrap-around link of its ring (the dateline) */
} topo_link;

typedef struct topo {
    topo_node *nodes;
    topo_link *links;
    uint32_t n_nodes, n_links, n_endpoints;
    uint32_t *endpoint_node;    /* endpoint index -> node id */
    topo_param *params;         /* every node's params, in node order */
    uint32_t n_params;
    const topo_preset *default_preset;
    char generator[24];         /* "torus2d", ... or "file" */
    int dims[3];                /* mesh/torus sizes (1 for unused dimensions) */
    bool torus;                 /* mesh2d: false; torus2d/3d: true */
    bool finished;
    void *index;                /* name lookup (private) */
} topo;

/* ---- building ---- */
topo *topo_new(const char *default_preset, char *err, size_t errlen);
void topo_free(topo *t);
/* For the readers (file, generators): writes the message into err, frees t, returns NULL. */
topo *topo_fail(topo *t, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A node; params: "ports=8" style NULL-terminated list of name=value, or NULL.
 * Returns the node id or -1. */
int topo_add_node(topo *t, const char *name, const char *kind, const char *const *params, char *err, size_t errlen);
/* A link between "node" or "node.port" ends; preset NULL = the topology's
 * default; latency_ns / GBps < 0 = the preset's. Returns the link id or -1. */
int topo_add_link(topo *t, const char *a_end, const char *b_end, const char *preset, double latency_ns, double GBps,
                  char *err, size_t errlen);
/* Checks the whole graph (connected, at least two endpoints) and numbers the
 * endpoints. After this the topo is read-only. Returns 0 or -1. */
int topo_finish(topo *t, char *err, size_t errlen);

/* ---- descriptions ---- */
/* "ring:8", "fattree:4", ... or a JSON file path; default_preset names the
 * generator's links (and file links without "preset"). Returns a finished
 * topo or NULL with err set. */
topo *topo_from_string(const char *spec, const char *default_preset, char *err, size_t errlen);
topo *topo_generate(const char *spec, const char *default_preset, char *err, size_t errlen);
topo *topo_from_json_text(const char *text, size_t len, const char *default_preset, char *err, size_t errlen);
topo *topo_from_json_file(const char *path, const char *default_preset, char *err, size_t errlen);
/* The same, exiting with status 2 and "error: topo=SPEC: ..." on bad input. */
topo *topo_from_string_or_exit(const char *spec, const char *default_preset);
/* Names of the generators and their syntax, for help texts. */
const char *topo_generators_help(void);

/* ---- queries ---- */
int topo_node_find(const topo *t, const char *name);
/* A node's param, or def when it was not given. */
int64_t topo_node_param(const topo *t, uint32_t node, const char *name, int64_t def);
/* "s0.p3" into buf; returns buf. */
const char *topo_port_name(const topo *t, uint32_t node, unsigned port, char *buf, size_t n);
/* The node and port at the other end of (node, port); -1 when unconnected. */
int topo_peer(const topo *t, uint32_t node, unsigned port, unsigned *peer_port);
/* Shortest-path hop counts (in links) from every node to node dst, never
 * passing through a terminal; UINT32_MAX unreachable. dist has n_nodes entries. */
void topo_bfs_to(const topo *t, uint32_t dst, uint32_t *dist);

/* ---- routing (topo_route.c) ---- */
enum topo_routing { TOPO_ROUTE_ECMP, TOPO_ROUTE_SINGLE, TOPO_ROUTE_DOR, TOPO_ROUTE_UPDOWN };
/* In the enum's order: a test's SIM_PARAM_ENUM("routing", "ecmp", TOPO_ROUTING_CHOICES, ...)
 * gives the mode as (enum topo_routing)sim_param_enum(p, "routing"). */
#define TOPO_ROUTING_CHOICES "ecmp|single|dor|updown"
typedef struct topo_hop {
    uint8_t port;   /* output port */
    uint8_t vc;     /* virtual channel of this hop (dor on tori: the dateline rule; else 0) */
} topo_hop;
typedef struct topo_routes topo_routes;

/* Tables for every (node, destination endpoint). NULL with err when the mode
 * does not apply (dor off a mesh/torus generator) or the tables would be too
 * large. */
topo_routes *topo_routes_new(const topo *t, enum topo_routing mode, char *err, size_t errlen);
void topo_routes_free(topo_routes *r);
enum topo_routing topo_routes_mode(const topo_routes *r);
unsigned topo_routes_vcs(const topo_routes *r);   /* VCs the tables use: 2 for dor on a torus, else 1 */
/* The candidate hops at node for a packet to endpoint dst that arrived on
 * in_port (-1: it starts here). Returns how many (0: node is dst). updown
 * needs in_port: a packet that came down may not go up again. */
unsigned topo_route_candidates(const topo_routes *r, uint32_t node, int in_port, uint32_t dst, const topo_hop **hops);
/* The hop a packet of flow flow_id takes: ecmp hashes (flow_id, node) over the
 * candidates; the other modes have one candidate. Node must not be dst. */
topo_hop topo_route_next(const topo_routes *r, uint32_t node, int in_port, uint32_t dst, uint64_t flow_id);
/* Builds the channel dependency graph of every route (a channel = link,
 * direction, VC; honour_vcs false merges the VCs of a link) and checks it has
 * no cycle: 0 acyclic (deadlock-free), 1 cyclic (err names a channel on the
 * cycle), -1 too large to check. */
int topo_routes_check_cdg(const topo_routes *r, bool honour_vcs, char *err, size_t errlen);

/* ---- flow-level prediction (topo_flow.c) ---- */
/* A saturating flow between two endpoints: rate_GBps is the result. */
typedef struct topo_flow {
    uint32_t src, dst;      /* endpoint indices */
    uint64_t flow_id;       /* the packets' flow field (ECMP hash key) */
    double demand_GBps;     /* what the source offers, in wire bytes */
    double rate_GBps;       /* out: its max-min fair share on the routes it takes */
} topo_flow;
/* The channels (link * 2 + direction, 0: a -> b) a packet of flow_id from
 * endpoint src to dst crosses, hop by hop as the tables send it. Returns how
 * many (<= max_channels), or -1 (src == dst, out of range, or longer). */
int topo_flow_path(const topo *t, const topo_routes *r, uint32_t src, uint32_t dst, uint64_t flow_id, uint32_t *channels,
                   unsigned max_channels);
/* Max-min fair rates of fixed-route flows (progressive filling over link
 * directions, VCs sharing the wire): what a fair, work-conserving network
 * approaches under these routes, ECMP collisions included. 0, or -1 with err. */
int topo_flows_maxmin(const topo *t, const topo_routes *r, topo_flow *flows, unsigned n, char *err, size_t errlen);
/* The progressive filling itself, on paths given as channel lists: flow i
 * crosses channels[path_first[i] .. + path_len[i]) (paths stored in flow
 * order, back to back). capacity[c] per channel; left[] must equal capacity[]
 * and users[] be 0 on entry, and are so again on return (scratch the caller
 * keeps between calls); rate[] gets each flow's fair share, frozen[] is scratch. */
void topo_maxmin_fill(const double *capacity, double *left, uint32_t *users, unsigned n, const uint32_t *path_first,
                      const uint32_t *path_len, const uint32_t *channels, const double *demand, double *rate, bool *frozen);

/* ---- partitions for a run over ranks (topo_part.c) ---- */
enum topo_partition { TOPO_PART_AUTO = 0, TOPO_PART_NODES, TOPO_PART_FILE };
/* In the enum's order, for SIM_PARAM_ENUM("partition", "auto", TOPO_PARTITION_CHOICES, ...) */
#define TOPO_PARTITION_CHOICES "auto|nodes|file"
/* node_part[n] in 0..parts-1 for every node. auto: nodes joined by links
 * below the largest latencies stay together as far as balance allows (so the
 * cut, and the lookahead, is on the slowest links), then parts are grown over
 * the remaining groups greedily (most links inside, balanced by connected
 * ports: a node's work grows with its links);
 * nodes: equal blocks of nodes in topology order; file: each node's "rank" of
 * the topology file. Returns 0, or -1 with err (file: a node without a rank, a
 * rank >= parts). Deterministic. */
int topo_partition(const topo *t, enum topo_partition how, unsigned parts, uint32_t *node_part, char *err, size_t errlen);

/* ---- bisection (topo_cut.c) ---- */
typedef struct topo_bisection {
    double GBps;            /* summed one-direction rate of the links crossing the cut */
    unsigned cut_links;     /* how many links cross it */
    bool exact;             /* true: the minimum over every balanced split; false: an upper bound */
    uint64_t splits_tried;  /* balanced endpoint splits evaluated */
    uint8_t *endpoint_side; /* per endpoint 0/1: the best cut found (free with topo_bisection_free) */
    uint8_t *node_side;     /* per node 0/1 on that cut: a link crosses it when its ends differ */
} topo_bisection;
/* Up to max_exact_endpoints (<= 24) endpoints every balanced split is tried;
 * above, structured and BFS-ordered splits give an upper bound. For each
 * split the switches' sides are optimal (a max-flow min-cut). */
#define TOPO_BISECTION_EXACT_MAX 20
int topo_bisection_compute(const topo *t, unsigned max_exact_endpoints, topo_bisection *out, char *err, size_t errlen);
void topo_bisection_free(topo_bisection *b);

#endif
