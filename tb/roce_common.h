/* Shared by the RoCE v2 tests (tb/dcqcn_converge.c, tb/pfc_victim.c): the
 * switch's and DCQCN's parameters with their published defaults
 * (shared/reference/system.md §2; docs/models/network.md), read into the kinds'
 * configurations, and small statistics. */
#ifndef TB_ROCE_COMMON_H
#define TB_ROCE_COMMON_H

#include "models/network/network.h"
#include "sim/net_presets.h"
#include "sim/sim.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROCE_LINKS "roce-100g|roce-200g|roce-400g|eth-25g|eth-100g"

/* Kmin/Kmax/Pmax and g, timers, byte counter, R_AI: the DCQCN paper's (system.md §2);
 * R_HAI 100 Mb/s and the 100 Mb/s floor: vendor / HPCC ns-3 settings; XOFF = free/8,
 * XON 3 KB below it: the HPCC ns-3 switch MMU; headroom: Mellanox's rule. */
#define ROCE_COMMON_PARAMS                                                                                                  \
    SIM_PARAM_ENUM("link", "roce-100g", ROCE_LINKS, "link preset of every link (rate, RoCE v2 framing)"),                     \
    ROCE_SWITCH_PARAMS
/* The same without link= (a test that takes other links too declares its own). */
#define ROCE_SWITCH_PARAMS                                                                                                  \
    SIM_PARAM_INT("mtu", "1024", "B", 256, 4096, "payload per packet"),                                                       \
    SIM_PARAM_DOUBLE("kmin_bytes", "5000", "B", 0, 1e9, "RED: no ECN mark below this egress queue"),                          \
    SIM_PARAM_DOUBLE("kmax_bytes", "200000", "B", 1, 1e9, "RED: every packet marked above this egress queue"),               \
    SIM_PARAM_DOUBLE("pmax", "0.01", "", 1e-6, 1, "RED: marking probability at kmax_bytes"),                                  \
    SIM_PARAM_DOUBLE("dt_alpha", "0.125", "", 1e-3, 64, "dynamic threshold: XOFF = dt_alpha x free shared buffer"),          \
    SIM_PARAM_INT("xon_offset_bytes", "3072", "B", 0, 100000000, "XON when the ingress is this far below XOFF"),             \
    SIM_PARAM_INT("headroom_bytes", "0", "B", 0, 100000000, "per ingress priority above XOFF; 0: Mellanox rule from the link"), \
    SIM_PARAM_INT("pause_quanta", "65535", "", 1, 65535, "PAUSE time in 512-bit-time quanta"),                                \
    SIM_PARAM_DOUBLE("pipeline_ns", "300", "ns", 0, 1e6, "switch lookup + crossbar (store and forward)"),                    \
    SIM_PARAM_ENUM("egress_sched", "strict", "strict|rr", "egress priority scheduling"),                                     \
    SIM_PARAM_DOUBLE("dcqcn_g", "0.00390625", "", 1e-6, 1, "DCQCN alpha gain g (1/256)"),                                     \
    SIM_PARAM_DOUBLE("alpha_timer_us", "55", "us", 1, 1e6, "DCQCN: alpha decays after this long without a CNP"),             \
    SIM_PARAM_DOUBLE("rate_timer_us", "55", "us", 1, 1e6, "DCQCN rate-increase timer T"),                                     \
    SIM_PARAM_INT("byte_counter_bytes", "10000000", "B", 1000, 1000000000000, "DCQCN rate-increase byte counter B"),         \
    SIM_PARAM_INT("fast_recovery_steps", "5", "", 0, 100, "DCQCN fast-recovery steps F"),                                     \
    SIM_PARAM_DOUBLE("rai_Mbps", "40", "Mb/s", 0, 1e6, "DCQCN additive increase R_AI"),                                       \
    SIM_PARAM_DOUBLE("rhai_Mbps", "100", "Mb/s", 0, 1e6, "DCQCN hyper increase R_HAI"),                                       \
    SIM_PARAM_DOUBLE("min_rate_Mbps", "100", "Mb/s", 1, 1e6, "DCQCN: the rate limiter's floor"),                              \
    SIM_PARAM_DOUBLE("cnp_interval_us", "50", "us", 0, 1e6, "notification point: at most one CNP per flow per this")

/* A device preset parameter (nic=, switch=; sim/net_presets.h): NULL for "auto" (the kinds' defaults), else the
 * preset, which must be a NIC or a switch as asked and run the test's link (exit 2 naming the allowed ones). */
static inline const net_device_preset *net_device_param(const sim_params *p, const char *param, bool is_switch, const char *link)
{
    const char *v = sim_param_str(p, param);
    if (!strcmp(v, "auto")) return NULL;
    const net_device_preset *d = net_device_preset_find(v);
    char names[512];
    net_device_preset_names(is_switch, names, sizeof names);
    if (!d || d->is_switch != is_switch) sim_input_error("%s=%s: not a %s preset; allowed: auto|%s", param, v, is_switch ? "switch" : "NIC", names);
    if (strcmp(d->link, link))
        sim_input_error("%s=%s runs %s links, not link=%s; allowed: a %s preset of link %s (simrun list-presets)", param, v, d->link, link,
                        is_switch ? "switch" : "NIC", link);
    return d;
}

/* Switch settings common to both tests (buffer_bytes, pfc, ecn: the test's). */
static inline void roce_switch_cfg_read(const sim_params *p, eth_switch_cfg *s)
{
    eth_switch_cfg_default(s);
    s->kmin_bytes = sim_param_double(p, "kmin_bytes");
    s->kmax_bytes = sim_param_double(p, "kmax_bytes");
    s->pmax = sim_param_double(p, "pmax");
    s->dt_alpha = sim_param_double(p, "dt_alpha");
    s->xon_offset_bytes = (uint32_t)sim_param_int(p, "xon_offset_bytes");
    s->headroom_bytes = (uint32_t)sim_param_int(p, "headroom_bytes");
    s->pause_quanta = (uint16_t)sim_param_int(p, "pause_quanta");
    s->pipeline_ns = sim_param_double(p, "pipeline_ns");
    s->sched = sim_param_enum(p, "egress_sched") == 1 ? ETH_SCHED_RR : ETH_SCHED_STRICT;
}

static inline void roce_dcqcn_cfg_read(const sim_params *p, dcqcn_cfg *d)
{
    dcqcn_cfg_default(d);
    d->g = sim_param_double(p, "dcqcn_g");
    d->alpha_timer_us = sim_param_double(p, "alpha_timer_us");
    d->rate_timer_us = sim_param_double(p, "rate_timer_us");
    d->byte_counter_bytes = (uint64_t)sim_param_int(p, "byte_counter_bytes");
    d->fast_recovery_steps = (unsigned)sim_param_int(p, "fast_recovery_steps");
    d->rai_Gbps = sim_param_double(p, "rai_Mbps") / 1000.0;
    d->rhai_Gbps = sim_param_double(p, "rhai_Mbps") / 1000.0;
    d->min_rate_Gbps = sim_param_double(p, "min_rate_Mbps") / 1000.0;
    d->cnp_interval_us = sim_param_double(p, "cnp_interval_us");
}

/* The DCQCN and RED parameters do not apply without ECN (the test calls this when ecn is off). */
static inline void roce_ecn_params_not_applicable(const sim_params *p, const char *why)
{
    static const char *const names[] = { "kmin_bytes", "kmax_bytes", "pmax", "dcqcn_g", "alpha_timer_us", "rate_timer_us",
                                         "byte_counter_bytes", "fast_recovery_steps", "rai_Mbps", "rhai_Mbps",
                                         "min_rate_Mbps", "cnp_interval_us" };
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) sim_param_not_applicable(p, names[i], "%s", why);
}

static inline void roce_pfc_params_not_applicable(const sim_params *p, const char *why)
{
    static const char *const names[] = { "xon_offset_bytes", "headroom_bytes", "pause_quanta" };
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) sim_param_not_applicable(p, names[i], "%s", why);
}

static inline int roce_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n) (sorts v). */
static inline double roce_quantile(double *v, size_t n, double q)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, roce_cmp_double);
    size_t i = (size_t)ceil(q * (double)n);
    return v[i ? i - 1 : 0];
}

/* Jain's fairness index of x[0..n). */
static inline double roce_jain(const double *x, unsigned n)
{
    double s = 0, s2 = 0;
    for (unsigned i = 0; i < n; i++) s += x[i], s2 += x[i] * x[i];
    return s2 > 0 ? s * s / (n * s2) : 0;
}

/* One port's row of a pause-time map: the time its transmitter was paused (under `paused_key`), the PAUSE frames it sent. */
static inline void roce_pause_row(cJSON *map, const char *node, const eth_port *p, const char *paused_key)
{
    eth_port_stats st = eth_port_stats_get(p);
    uint64_t paused = 0;
    for (unsigned i = 0; i < ETH_PRIOS; i++) paused += st.paused_ps[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "node", node);
    cJSON_AddStringToObject(o, "port", eth_port_name(p));
    cJSON_AddNumberToObject(o, paused_key, (double)paused / 1e6);
    cJSON_AddNumberToObject(o, "pause_frames_sent", (double)st.pause_sent);
    cJSON_AddNumberToObject(o, "xon_frames_sent", (double)st.xon_sent);
    cJSON_AddItemToArray(map, o);
}

/* Payload goodput of a link at line rate with mtu-byte packets (GB/s). */
static inline double roce_goodput_GBps(const topo_preset *pr, unsigned mtu)
{
    return topo_preset_GBps(pr) * mtu / (mtu + pr->overhead_bytes);
}

#endif
