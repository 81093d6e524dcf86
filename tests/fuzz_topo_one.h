/* One fuzz input through the topology layer: text with a '{' is a topology
 * file, anything else a generator string. What is accepted must also route
 * and cut without a fault. Shared by the libFuzzer target (fuzz_topo.c) and
 * the unit test that replays the corpus and every past crash
 * (check_topo_fuzz_replay.c). Not a test itself. */
#ifndef FUZZ_TOPO_ONE_H
#define FUZZ_TOPO_ONE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/topo.h"

static void fuzz_topo_checks(const topo *t)
{
    /* The finished graph keeps its own promises. */
    for (uint32_t v = 0; v < t->n_nodes; v++)
        for (unsigned p = 0; p < t->nodes[v].nports; p++) {
            unsigned pp, back;
            int w = topo_peer(t, v, p, &pp);
            if (w >= 0 && topo_peer(t, (uint32_t)w, pp, &back) != (int)v) abort();
        }
    if (t->n_nodes > 96) return;   /* keep each input fast */
    char err[512];
    for (int m = TOPO_ROUTE_ECMP; m <= TOPO_ROUTE_UPDOWN; m++) {
        topo_routes *r = topo_routes_new(t, (enum topo_routing)m, err, sizeof err);
        if (!r) continue;
        /* Every route from every endpoint reaches its destination within n_nodes hops. */
        for (uint32_t s = 0; s < t->n_endpoints; s++)
            for (uint32_t d = 0; d < t->n_endpoints; d++) {
                uint32_t v = t->endpoint_node[s];
                int in = -1;
                unsigned hops = 0;
                while (v != t->endpoint_node[d]) {
                    topo_hop h = topo_route_next(r, v, in, d, s * 7919u + d);
                    unsigned pp;
                    int w = topo_peer(t, v, h.port, &pp);
                    if (w < 0 || ++hops > t->n_nodes) abort();
                    v = (uint32_t)w;
                    in = (int)pp;
                }
            }
        if ((m == TOPO_ROUTE_UPDOWN || m == TOPO_ROUTE_DOR) && topo_routes_check_cdg(r, true, err, sizeof err) == 1)
            abort();   /* up-down and dor-with-datelines are deadlock-free by construction */
        topo_routes_free(r);
    }
    topo_bisection b;
    if (t->n_nodes <= 48 && topo_bisection_compute(t, 10, &b, err, sizeof err) == 0) {
        if (!(b.GBps > 0) || b.cut_links == 0) abort();
        topo_bisection_free(&b);
    }
}

static void fuzz_topo_one(const uint8_t *data, size_t size)
{
    char err[2048];
    topo *t = NULL;
    if (memchr(data, '{', size)) {
        t = topo_from_json_text((const char *)data, size, "ib-ndr", err, sizeof err);
    } else {
        char spec[96];
        size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
        memcpy(spec, data, n);
        spec[n] = 0;
        t = topo_generate(spec, "eth-400g", err, sizeof err);
    }
    if (t) fuzz_topo_checks(t);
    topo_free(t);
}

#endif
