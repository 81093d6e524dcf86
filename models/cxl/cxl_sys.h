/* The timed CXL.cache system: CXL devices (DCOH + set-associative cache) and
 * host CPU caches around one host home agent with memory, connected only by
 * kernel links. A device's link carries the six CXL.cache channels in 68 B
 * flits of four 16 B slots (headers packed by size, a 64 B line = four data
 * slots) serialised at lanes x GT/s after 128b/130b (8, 16 or 32 GT/s; the
 * 256 B flit mode of 64 GT/s is not modelled), with per-channel credits; host cores sit
 * on on-die links. The protocol is the step code of cxl_proto.c.
 *
 * Always-on checkers: SWMR over permissions, data values against a golden
 * copy, directory inclusion, the ordering rules (no GO/WritePull while a
 * same-line snoop is outstanding, one snoop per line per device, snoop never
 * passes an earlier GO), tracker hygiene (CQID/UQID), a deadlock watchdog and
 * quiescent-state equality at the end. A violation prints the line's history. */
#ifndef CXL_SYS_H
#define CXL_SYS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/cxl/cxl_link.h"
#include "models/cxl/cxl_proto.h"
#include "sim/sim.h"

typedef struct cxl_sys_cfg {
    unsigned devices, cores;
    uint32_t lines;                /* distinct line addresses in use (0..lines-1) */
    unsigned dev_sets, dev_ways;   /* device cache geometry */
    unsigned core_sets, core_ways; /* host core cache geometry */
    double link_ns;                /* one-way CXL link latency (TX+wire+RX) */
    unsigned lanes;
    double gts;                    /* GT/s per lane: 8, 16 or 32 (128b/130b) */
    double home_ns;                /* home agent / snoop filter lookup */
    double core_snoop_ns;          /* host core: snoop lookup and answer (with data) */
    double core_ns;                /* host core: request issue / fill */
    double dev_ns;                 /* device cache lookup / fill / snoop lookup */
    double mem_ns;                 /* memory read */
    double llc_ns;                 /* memory-side host cache (LLC) hit */
    unsigned llc_lines;            /* LLC capacity in lines (direct mapped; 0 = none) */
    double ondie_ns;               /* core <-> home one-way on-die latency */
    double jitter_ns;              /* largest random extra delay per message */
    unsigned credits_req, credits_rsp, credits_data;   /* per channel, per direction */
    unsigned cqids;                /* request trackers per agent */
    unsigned uqids;                /* home-agent trackers */
    unsigned values;
    unsigned inject;
    uint64_t seed;
    double watchdog_ns;
    bool track_paths;              /* per-message hop lists (latency breakdown) */
    bool history;                  /* per-line history for violation reports */
    unsigned trace_lines;          /* per-line state waves for the first N lines */
    FILE *log;                     /* violation reports */
} cxl_sys_cfg;

void cxl_sys_cfg_defaults(cxl_sys_cfg *c);

/* The link and timing parameters the timed tests share: declare them with
 * CXL_SYS_TIMING_PARAMS in a test's table and read them (lanes and gts
 * checked against the allowed widths and rates; exit 2 otherwise) with
 * cxl_sys_cfg_timing_from_params. `test` names the test in messages. */
#define CXL_SYS_TIMING_PARAMS                                                                                    \
    SIM_PARAM_DOUBLE("link_ns", "25", "ns", 0, 10000, "one-way CXL link latency (TX pack + PHY + wire + RX unpack)"), \
    SIM_PARAM_INT("lanes", "16", "", 1, 16, "link width (1, 2, 4, 8 or 16)"),                                    \
    SIM_PARAM_DOUBLE("gts", "32", "GT/s", 2.5, 64, "per-lane rate: 8, 16 or 32 (68 B flits, 128b/130b)"),       \
    SIM_PARAM_DOUBLE("home_ns", "15", "ns", 0, 10000, "home agent / snoop filter lookup"),                      \
    SIM_PARAM_DOUBLE("core_snoop_ns", "40", "ns", 0, 10000, "on-die snoop of a host core, answered with data"),  \
    SIM_PARAM_DOUBLE("dev_ns", "5", "ns", 0, 10000, "device cache lookup / fill / snoop lookup"),               \
    SIM_PARAM_DOUBLE("mem_ns", "100", "ns", 0, 10000, "memory read"),                                           \
    SIM_PARAM_DOUBLE("llc_ns", "20", "ns", 0, 10000, "host memory-side cache (LLC) hit")
void cxl_sys_cfg_timing_from_params(cxl_sys_cfg *c, const sim_params *p, const char *test);
/* devices, cores and lines (devices + cores checked against CXL_MAX_AGENTS). */
void cxl_sys_cfg_agents_from_params(cxl_sys_cfg *c, const sim_params *p, const char *test);

typedef struct cxl_sys cxl_sys;

/* Called when an access completes. req = the D2H opcode the access sent first
 * (CXL_N_D2H_REQ for a local hit or a no-op); path = the critical path (or NULL). */
typedef void (*cxl_done_fn)(void *ctx, unsigned agent, uint32_t line, unsigned op, unsigned req, sim_time_ps issued_ps,
                            const cxl_path *path);

cxl_sys *cxl_sys_new(sim_kernel *k, const cxl_sys_cfg *cfg, sim_trace *tr);
void cxl_sys_free(cxl_sys *s);
void cxl_sys_set_done(cxl_sys *s, cxl_done_fn fn, void *ctx);
unsigned cxl_sys_agents(const cxl_sys *s);
bool cxl_sys_is_core(const cxl_sys *s, unsigned agent);
/* The state of a line in an agent (DS_I if not present). */
unsigned cxl_sys_line_state(const cxl_sys *s, unsigned agent, uint32_t line);
/* True if the agent has an access in progress on the line. */
bool cxl_sys_busy(const cxl_sys *s, unsigned agent, uint32_t line);
/* Starts an access. Returns false (nothing done) if the agent already has an
 * access on this line. */
bool cxl_sys_issue(cxl_sys *s, unsigned agent, uint32_t line, unsigned op, uint8_t wval);
/* Preload a line's memory value (before the run). */
void cxl_sys_set_mem(cxl_sys *s, uint32_t line, uint8_t v);

typedef struct cxl_sys_stats {
    uint64_t ops_done, hits, loads_checked, violations, deadlocks;
    uint64_t snoops, mem_reads, llc_hits, flits_d2h, flits_h2d;
    uint64_t msgs[CXL_N_CHAN];
    uint64_t req_ops[CXL_N_D2H_REQ];
    uint64_t credit_stall_ps[6];   /* per channel, summed over devices */
    double link_util_d2h, link_util_h2d;   /* mean over devices */
    unsigned tr_covered, tr_total;
    sim_time_ps flit_ps;           /* one flit's serialisation time */
} cxl_sys_stats;
void cxl_sys_stats_get(cxl_sys *s, cxl_sys_stats *st);
/* End-of-run checks: everything drained, trackers free, links conserve,
 * quiescent directory == caches and memory == golden. Returns the number of
 * failures; writes the first into why. */
unsigned cxl_sys_final_check(cxl_sys *s, char *why, size_t n);
/* Outstanding accesses (0 when drained). */
uint64_t cxl_sys_outstanding(const cxl_sys *s);
const char *cxl_sys_first_violation(const cxl_sys *s);
void cxl_sys_reset_link_stats(cxl_sys *s);

#endif
