/* CXL.mem memory expansion: a host home agent (the CXL.mem master) with local
 * DRAM, and Type-3 devices (CXL.mem slaves with a memory controller) behind
 * their own CXL links, meeting only through the links of cxl_link.c (the same
 * 68 B flits, slots and credits as CXL.cache).
 *
 * A host load becomes an M2S Req MemRd (one 87-bit header) answered by an S2M
 * DRS MemData (40-bit header + 64 B); a store an M2S RwD MemWr (87-bit header
 * + 64 B) answered by an S2M NDR Cmp (30 bits). The host decodes a host
 * address in the HDM window with an HDM decoder (interleave ways = devices,
 * granularity interleave_bytes) into a device and a device physical address;
 * an address outside it goes to local DRAM. Each request carries a 16-bit tag
 * the host allocates and the response returns; the request's message object
 * is the transaction's buffer (the device turns it into the response), so a
 * request and its response keep one hop list: home_lookup, m2s_queue,
 * m2s_flits, m2s_link, dev_ctrl, media_queue, media, s2m_queue, s2m_flits,
 * s2m_link (local: home_lookup, dram_queue, dram).
 *
 * Credits: M2S per class (Req, RwD) are the device's request buffer, returned
 * when its media starts the request; S2M per class (NDR, DRS) the host's
 * response buffer, returned when the home takes the response.
 *
 * Checked by the model itself: every response matches an outstanding tag of
 * the same device and kind (MemRd -> MemData, MemWr -> Cmp), counts per
 * device and kind on both ends agree, and at the end every tag is free, every
 * link drained and conserving with all credits back. */
#ifndef CXL_MEM_H
#define CXL_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cxl/cxl_link.h"
#include "sim/sim.h"

#define CXL_MEM_MAX_DEVICES 8
#define CXL_MEM_LINE_BYTES 64u

typedef struct cxl_mem_cfg {
    unsigned devices;              /* Type-3 devices = HDM interleave ways (1, 2, 3, 4, 6, 8) */
    uint64_t interleave_bytes;     /* HDM interleave granularity: 256..16384, a power of two */
    double link_ns;                /* one-way CXL link latency (TX + PHY + wire + RX) */
    unsigned lanes;
    double gts;                    /* 8, 16 or 32 (68 B flits, 128b/130b) */
    double home_ns;                /* host: core miss to the home agent and back, HDM decode */
    double ctrl_ns;                /* device: M2S ingress, decode and scheduling in its controller */
    double media_ns, media_GBps;   /* device memory: idle access, bandwidth */
    double dram_ns, dram_GBps;     /* host local DRAM: idle access, bandwidth */
    unsigned credits_m2s;          /* per class (Req, RwD): the device's request buffer */
    unsigned credits_s2m;          /* per class (NDR, DRS): the host's response buffer */
    unsigned tags;                 /* host requests outstanding at most (1..65536) */
} cxl_mem_cfg;

void cxl_mem_cfg_defaults(cxl_mem_cfg *c);
/* Refuses (exit 2, naming `test`) a configuration the hardware does not have:
 * interleave ways other than 1, 2, 3, 4, 6, 8; a granularity that is not a
 * power of two in 256..16384; a link width or rate the 68 B flit mode lacks. */
void cxl_mem_cfg_check(const cxl_mem_cfg *c, const char *test);

/* HDM decoder: host offset in the window -> device (way) and device physical address. */
unsigned cxl_mem_hdm_device(uint64_t hpa, unsigned ways, uint64_t granule);
uint64_t cxl_mem_hdm_dpa(uint64_t hpa, unsigned ways, uint64_t granule);

typedef struct cxl_mem_sys cxl_mem_sys;

/* Where a request goes. */
enum cxl_mem_target { CXL_MEM_LOCAL, CXL_MEM_HDM };

/* A request completed at the home agent. device: the way (CXL_MEM_HDM);
 * path: its hops when paths are tracked, else NULL. */
typedef void (*cxl_mem_done_fn)(void *ctx, unsigned target, uint64_t addr, bool write, unsigned device,
                                sim_time_ps issued_ps, const cxl_path *path);

cxl_mem_sys *cxl_mem_sys_new(sim_kernel *k, const cxl_mem_cfg *cfg, sim_trace *tr);
void cxl_mem_sys_free(cxl_mem_sys *s);
void cxl_mem_sys_set_done(cxl_mem_sys *s, cxl_mem_done_fn fn, void *ctx);
/* Per-request hop lists from now on (idle measurements) or not (load). */
void cxl_mem_sys_track_paths(cxl_mem_sys *s, bool on);
/* A 64 B load (write=false) or store at addr (line aligned) of the target.
 * False, nothing done, when every tag is in use. */
bool cxl_mem_issue(cxl_mem_sys *s, unsigned target, uint64_t addr, bool write);
unsigned cxl_mem_outstanding(const cxl_mem_sys *s);

typedef struct cxl_mem_dev_stats {
    /* the device's view */
    uint64_t memrd_in, memwr_in, memdata_out, cmp_out, bytes_read, bytes_written;
    /* the host's view of this device */
    uint64_t memrd_sent, memwr_sent, memdata_in, cmp_in;
    uint64_t flits_m2s, flits_s2m;
    uint64_t data_bytes_m2s, data_bytes_s2m;   /* 64 B per MemWr / MemData */
    double util_m2s, util_s2m;     /* link busy share since the stats reset */
    double credit_stall_ns[4];     /* m2s_req, m2s_rwd, s2m_ndr, s2m_drs */
    sim_time_ps media_busy_ps;
} cxl_mem_dev_stats;
typedef struct cxl_mem_stats {
    unsigned devices;
    cxl_mem_dev_stats dev[CXL_MEM_MAX_DEVICES];
    uint64_t local_reads, local_writes;
    uint64_t violations;           /* responses that matched no outstanding request of their kind */
    sim_time_ps flit_ps;           /* one flit's serialisation */
} cxl_mem_stats;
void cxl_mem_stats_get(cxl_mem_sys *s, cxl_mem_stats *st);
void cxl_mem_reset_link_stats(cxl_mem_sys *s);
const char *cxl_mem_first_violation(const cxl_mem_sys *s);
/* End of run: all tags free, nothing queued anywhere, host and device counts
 * agree per device and kind, every link drained, conserving, credits back.
 * Returns the number of failures; the first goes into why. */
unsigned cxl_mem_final_check(cxl_mem_sys *s, char *why, size_t n);

#endif
