/* The two kinds of CXL.mem component (cxl_mem.h builds a system of them): a
 * Type-3 device and the host home agent. They meet only through cxl_ports
 * (the kernel links of cxl_link.c): the host sends on its M2S port of each
 * device, the device on its S2M port, and each returns the credits of what it
 * receives on the link it received it from. */
#ifndef CXL_MEM_PARTS_H
#define CXL_MEM_PARTS_H

#include "models/cxl/cxl_link.h"
#include "models/cxl/cxl_mem.h"

/* ---- Type-3 device: CXL.mem slave + memory controller ---- */
typedef struct cxl_mem_dev cxl_mem_dev;
typedef struct cxl_mem_dev_cfg {
    unsigned idx;
    double ctrl_ns, media_ns, media_GBps;
    double link_ns, link_GBps;     /* its S2M port */
    unsigned credits_s2m;
    cxl_port_deliver_fn deliver;   /* the host's S2M receiver */
    void *deliver_ctx;
} cxl_mem_dev_cfg;
cxl_mem_dev *cxl_mem_dev_new(sim_kernel *k, sim_trace *tr, const cxl_mem_dev_cfg *cfg);
void cxl_mem_dev_free(cxl_mem_dev *d);
/* The link the device receives M2S on (its credits go back there). */
void cxl_mem_dev_attach_m2s(cxl_mem_dev *d, sim_link *m2s);
/* The M2S port's deliver callback (ctx = the device). */
void cxl_mem_dev_receive(void *ctx, cxl_lmsg *t);
cxl_port *cxl_mem_dev_s2m(cxl_mem_dev *d);
/* Fills the device's fields of st (memrd_in .. bytes_written, flits_s2m, media_busy_ps). */
void cxl_mem_dev_counts(const cxl_mem_dev *d, cxl_mem_dev_stats *st);
/* Nothing queued or in service, the S2M link drained and conserving; errors into why. */
unsigned cxl_mem_dev_check(const cxl_mem_dev *d, char *why, size_t n);
uint64_t cxl_mem_dev_violations(const cxl_mem_dev *d);

/* ---- host home agent: CXL.mem master + local DRAM ---- */
typedef struct cxl_mem_host cxl_mem_host;
cxl_mem_host *cxl_mem_host_new(sim_kernel *k, sim_trace *tr, const cxl_mem_cfg *cfg);
void cxl_mem_host_free(cxl_mem_host *h);
/* The receiver context of device dev's S2M port (for cxl_mem_host_receive). */
void *cxl_mem_host_rx_ctx(cxl_mem_host *h, unsigned dev);
void cxl_mem_host_receive(void *rx_ctx, cxl_lmsg *t);
/* Makes the M2S port to device dev (delivering to dev_receive(dev_ctx)) and
 * records the S2M link the device answers on; returns the M2S port. */
cxl_port *cxl_mem_host_connect(cxl_mem_host *h, unsigned dev, cxl_port_deliver_fn dev_receive, void *dev_ctx,
                               sim_link *s2m);
void cxl_mem_host_set_done(cxl_mem_host *h, cxl_mem_done_fn fn, void *ctx);
void cxl_mem_host_track_paths(cxl_mem_host *h, bool on);
bool cxl_mem_host_issue(cxl_mem_host *h, unsigned target, uint64_t addr, bool write);
unsigned cxl_mem_host_outstanding(const cxl_mem_host *h);
/* Fills the host's fields of st->dev[] (memrd_sent .. cmp_in, flits_m2s) and local counts. */
void cxl_mem_host_counts(const cxl_mem_host *h, cxl_mem_stats *st);
uint64_t cxl_mem_host_violations(const cxl_mem_host *h);
const char *cxl_mem_host_first_violation(const cxl_mem_host *h);
/* All tags free, nothing queued, the M2S links drained and conserving. */
unsigned cxl_mem_host_check(const cxl_mem_host *h, char *why, size_t n);

#endif
