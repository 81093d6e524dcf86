/* The kernel_ring benchmark on our kernel, the same program as
 * bench/ring_systemc.cpp: T tokens circulate in a ring of N method
 * processes; each hop is a timed (1 ns) or delta notification of the next
 * node's event; one process activation = one event; stop after K events.
 * usage: ring_kernel <timed|delta> N K T */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/kernel.h"

/* The nodes sit in one array. Its stride must not be a multiple of 64
 * bytes: the T tokens of one delta cycle are N/T nodes apart, so such a
 * stride maps them all onto a few L1 sets, which then thrash (measured: 2.4x
 * the misses and half the speed at 128 bytes). SystemC's nodes are separate
 * heap objects and do not line up like that. This node is 104 bytes. */
typedef struct node {   /* the fields each hop touches first, together */
    sim_event ev;
    struct node *next;
    int token, first;
    sim_process proc;
} node;

_Static_assert(sizeof(void *) != 8 || sizeof(node) % 64, "a node stride of a multiple of 64 bytes thrashes L1 sets");

static long count, limit;
static int delta_mode;
static sim_kernel *kern;

static void pass(node *nd)
{
    if (delta_mode) sim_event_notify_delta(&nd->next->ev);
    else sim_event_notify_at(&nd->next->ev, SIM_NS(1));
}

static void run(void *ctx)
{
    node *nd = ctx;
    if (nd->first) {   /* the initialisation run: tokens start moving */
        nd->first = 0;
        if (nd->token) pass(nd);
        return;
    }
    if (++count == limit) sim_stop(kern);
    pass(nd);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ring_kernel <timed|delta> N K T\n");
        return 2;
    }
    delta_mode = !strcmp(argv[1], "delta");
    int n = atoi(argv[2]);
    limit = atol(argv[3]);
    int t = atoi(argv[4]);
    if (n < 1 || t < 1 || t > n || limit < 1) {
        fprintf(stderr, "ring_kernel: need N >= T >= 1 and K >= 1\n");
        return 2;
    }
    kern = sim_kernel_new();
    node *nodes = calloc((size_t)n, sizeof *nodes);
    for (int i = 0; i < n; i++) {
        sim_event_init(&nodes[i].ev, kern, "ev");
        sim_method_init(&nodes[i].proc, kern, "node", run, &nodes[i]);
        sim_sensitive(&nodes[i].proc, &nodes[i].ev);
        nodes[i].next = &nodes[(i + 1) % n];
        nodes[i].first = 1;
        nodes[i].token = (i % (n / t) == 0) && (i / (n / t) < t);
    }
    struct timespec a, b, ca, cb;   /* wall time, and CPU time (what a shared machine lets us have) */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
    clock_gettime(CLOCK_MONOTONIC, &a);
    sim_run(kern, SIM_TIME_MAX);
    clock_gettime(CLOCK_MONOTONIC, &b);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    double cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9;
    printf("kernel mode=%s n=%d tokens=%d events=%ld wall=%.6f rate=%.3f cpu_s=%.6f simtime_ps=%llu\n", argv[1], n, t,
           count, s, (double)count / s / 1e6, cpu, (unsigned long long)sim_now(kern));
    sim_kernel_free(kern);
    free(nodes);
    return 0;
}
