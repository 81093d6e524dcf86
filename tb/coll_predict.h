/* Predictions for the collective tests (nccl_tests, ring_vs_tree) from the
 * configuration and the trees' shapes only -- never from a run. */
#ifndef TB_COLL_PREDICT_H
#define TB_COLL_PREDICT_H

#include "models/collective/collective.h"

#include <stdio.h>
#include <stdlib.h>

/* The tree's busbw at large sizes from its shape alone: every edge of every
 * channel's tree carries the channel's share S/C once up and once down, on
 * the channel's NVLink port at both ends; the busiest GPU port direction
 * (bytes / link goodput) or the busiest reduction unit (children's bytes /
 * reduce_GBps) sets the time; busbw = 2(n-1)/n S / time. *why says which. */
static inline double coll_predict_tree_busbw(const coll_comm *cm, double goodput_link, double reduce_GBps, char *why, size_t why_n)
{
    unsigned n = coll_comm_ranks(cm), C = coll_tree_channels(cm), ports = 0;
    for (unsigned ch = 0; ch < C; ch++) ports = coll_tree_port(cm, ch) + 1 > ports ? coll_tree_port(cm, ch) + 1 : ports;
    double *load = calloc((size_t)n * ports * 2, sizeof *load), *red = calloc(n, sizeof *red);   /* in units of S */
    for (unsigned ch = 0; ch < C; ch++)
        for (unsigned r = 0; r < n; r++) {
            int parent;
            unsigned kids[COLL_TREE_MAX_CHILDREN], p = coll_tree_port(cm, ch);
            unsigned nk = coll_tree_peers(cm, ch, r, &parent, kids);
            red[r] += (double)nk / C;
            for (unsigned i = 0; i < nk; i++)
                for (unsigned d = 0; d < 2; d++) {   /* up and down: out of and into both ends */
                    load[((size_t)r * ports + p) * 2 + d] += 1.0 / C;
                    load[((size_t)kids[i] * ports + p) * 2 + d] += 1.0 / C;
                }
        }
    double lmax = 0, rmax = 0;
    for (size_t i = 0; i < (size_t)n * ports * 2; i++) lmax = load[i] > lmax ? load[i] : lmax;
    for (unsigned r = 0; r < n; r++) rmax = red[r] > rmax ? red[r] : rmax;
    free(load);
    free(red);
    double t_link = lmax / goodput_link, t_red = rmax / reduce_GBps, t = t_link > t_red ? t_link : t_red;
    snprintf(why, why_n, "busiest GPU port direction carries %.4f S at %.2f GB/s%s", lmax, goodput_link,
             t_red > t_link ? "; the reduction unit is slower" : "");
    return 2.0 * (n - 1) / n / t;
}

/* NVLS all_reduce's busbw at large sizes from the configuration alone: every
 * rank sends its share S/C of each channel once (the contribution, on the
 * channel's port) and receives it once (the result), so the busiest GPU port
 * direction carries (channels on it) x S/C at the link goodput; each switch's
 * reduction unit consumes n x (its channels) x S/C contribution bytes at
 * reduce_GBps. The slower sets the time; busbw = 2(n-1)/n S / time, which can
 * exceed the per-GPU link goodput (system.md §4: each GPU moves ~1x the buffer
 * each way instead of 2(n-1)/n). *why says which. */
static inline double coll_predict_nvls_busbw(const coll_comm *cm, double goodput_link, double nvls_reduce_GBps, char *why, size_t why_n)
{
    unsigned n = coll_comm_ranks(cm), C = coll_nvls_channels(cm), ports = 0;
    for (unsigned ch = 0; ch < C; ch++) ports = coll_nvls_port(cm, ch) + 1 > ports ? coll_nvls_port(cm, ch) + 1 : ports;
    double *load = calloc(ports, sizeof *load);   /* in units of S, per port, each direction the same */
    int sw[64];
    double red[64];
    unsigned nsw = 0;
    for (unsigned ch = 0; ch < C; ch++) {
        load[coll_nvls_port(cm, ch)] += 1.0 / C;
        int w = coll_nvls_switch(cm, ch);
        unsigned i = 0;
        while (i < nsw && sw[i] != w) i++;
        if (i == nsw && nsw < 64) { sw[nsw] = w; red[nsw++] = 0; }
        if (i < 64) red[i] += (double)n / C;
    }
    double lmax = 0, rmax = 0;
    for (unsigned p = 0; p < ports; p++) lmax = load[p] > lmax ? load[p] : lmax;
    for (unsigned i = 0; i < nsw; i++) rmax = red[i] > rmax ? red[i] : rmax;
    free(load);
    double t_link = lmax / goodput_link, t_red = rmax / nvls_reduce_GBps, t = t_link > t_red ? t_link : t_red;
    snprintf(why, why_n, "busiest GPU port direction carries %.4f S at %.2f GB/s (%.1f GB/s algbw); busiest switch reduces %.3f S at "
             "%.0f GB/s (%.1f GB/s algbw)%s", lmax, goodput_link, 1.0 / t_link, rmax, nvls_reduce_GBps, 1.0 / t_red,
             t_red > t_link ? ": the reduction unit is slower" : ": the links are slower");
    return 2.0 * (n - 1) / n / t;
}

/* The tree's height in hops (the longest root-to-rank path of either tree, chains included). */
static inline unsigned coll_predict_tree_height(const coll_comm *cm)
{
    unsigned n = coll_comm_ranks(cm), h = 0;
    for (unsigned t = 0; t < 2; t++)
        for (unsigned r = 0; r < n; r++) {
            unsigned d = 0, q = r;
            for (;;) {
                int parent;
                unsigned kids[COLL_TREE_MAX_CHILDREN];
                coll_tree_peers(cm, t, q, &parent, kids);
                if (parent < 0 || d > n) break;
                q = (unsigned)parent, d++;
            }
            h = d > h ? d : h;
        }
    return h;
}

/* alltoall's bisection bound, from the topology: over the balanced split of
 * the GPUs with the least link rate across (topo_bisection_compute, the
 * switches' sides optimal), a ranks on one side and b on the other send
 * a b S/n each way across it at the links' goodput (rate x 128/(128 +
 * overhead)); busbw = (n-1)/n S / time = (n-1) goodput / (a b). -1 with err
 * when the bisection cannot be computed. */
static inline double coll_predict_alltoall_bisection_busbw(const topo *t, unsigned n, unsigned overhead_bytes, char *err, size_t errlen)
{
    topo_bisection b;
    if (topo_bisection_compute(t, TOPO_BISECTION_EXACT_MAX, &b, err, errlen) != 0) return -1;
    double goodput = b.GBps * 128.0 / (128.0 + overhead_bytes);
    topo_bisection_free(&b);
    double lo = n / 2, hi = n - n / 2;
    return (n - 1) * goodput / (lo * hi);
}

/* A chain's (broadcast, reduce) share of the link bound at `bytes`: a chunk
 * is forwarded once it is all in (its flag), so the last of the n-1
 * receivers has the channel's last byte n-2 chunk times after it would on
 * one link: S/C / (S/C + (n-2) chunk). */
static inline double coll_predict_chain_fill(uint64_t bytes, unsigned channels, uint32_t chunk_bytes, unsigned n)
{
    double per_ch = (double)bytes / channels, fill_bytes = (double)(n > 2 ? n - 2 : 0) * chunk_bytes;
    if (fill_bytes > per_ch * (n > 2 ? n - 2 : 0)) fill_bytes = per_ch * (n > 2 ? n - 2 : 0);   /* a chunk is at most the channel's share */
    return per_ch / (per_ch + fill_bytes);
}

#endif
