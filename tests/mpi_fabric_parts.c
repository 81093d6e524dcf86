/* fabric_traffic's system (tests/fabric_parts.h) over MPI ranks (ctest runs
 * it through scripts/mpirun.sh at 1, 2 and 4 ranks): each rank runs its own
 * nodes, packets cross as bytes (sim/fabric_cut.h); rank 0 sums what every
 * rank measured of its own endpoints and link directions, and the events, and
 * compares them with the whole system in one kernel. Exit 0 when equal. */
#include <mpi.h>

#include "fabric_parts.h"
#include "tb/mpi/pdes_mpi.h"

static void sum_u64(uint64_t *v, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sim_pdes_transport tr = sim_pdes_mpi_transport();
    static run_result mine, one;
    run("fattree:4", tr.size, &tr, &mine);
    /* every endpoint's and direction's numbers come from one rank, zero from the others */
    for (uint32_t e = 0; e < MAX_EP; e++) {
        fabric_endpoint_stats *s = &mine.ep[e];
        uint64_t v[] = { s->made_pkts, s->sent_pkts, s->received_pkts, s->win_pkts, s->win_wire_bytes, s->win_payload_bytes,
                         s->win_hops, s->out_of_order, s->last_hops };
        sum_u64(v, (int)(sizeof v / sizeof v[0]));
        s->made_pkts = v[0], s->sent_pkts = v[1], s->received_pkts = v[2], s->win_pkts = v[3], s->win_wire_bytes = v[4];
        s->win_payload_bytes = v[5], s->win_hops = v[6], s->out_of_order = v[7], s->last_hops = (uint32_t)v[8];
        MPI_Allreduce(MPI_IN_PLACE, &s->last_latency_ns, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);   /* one rank's, others 0 */
        sum_u64(mine.received_from[e], MAX_EP);
    }
    sum_u64(mine.link_msgs, MAX_DIRS);
    sum_u64(mine.link_bytes, MAX_DIRS);
    sum_u64(mine.link_busy_ps, MAX_DIRS);
    sum_u64(&mine.events, 1);
    int rc = 0;
    if (tr.rank == 0) {
        run("fattree:4", 1, NULL, &one);
        for (uint32_t e = 0; e < one.n_ep; e++) {
            const fabric_endpoint_stats *a = &one.ep[e], *b = &mine.ep[e];
            if (a->made_pkts != b->made_pkts || a->sent_pkts != b->sent_pkts || a->received_pkts != b->received_pkts ||
                a->win_pkts != b->win_pkts || a->win_wire_bytes != b->win_wire_bytes || a->win_hops != b->win_hops ||
                a->out_of_order != b->out_of_order || a->last_latency_ns != b->last_latency_ns ||
                memcmp(one.received_from[e], mine.received_from[e], sizeof one.received_from[e])) {
                printf("  endpoint %u differs: received %llu vs %llu\n", e, (unsigned long long)b->received_pkts,
                       (unsigned long long)a->received_pkts);
                rc = 1;
            }
        }
        for (uint32_t i = 0; i < one.n_dirs; i++)
            if (one.link_msgs[i] != mine.link_msgs[i] || one.link_bytes[i] != mine.link_bytes[i] || one.link_busy_ps[i] != mine.link_busy_ps[i]) {
                printf("  link direction %u differs: %llu vs %llu messages\n", i, (unsigned long long)mine.link_msgs[i],
                       (unsigned long long)one.link_msgs[i]);
                rc = 1;
            }
        if (one.events != mine.events || one.end_ps != mine.end_ps) rc = 1;
        if (tr.size > 1 && mine.windows < 20) rc = 1;
        printf("fabric fattree:4 on %u ranks: %llu windows, end %llu ps, %llu events; one kernel: end %llu ps, %llu events: %s\n",
               tr.size, (unsigned long long)mine.windows, (unsigned long long)mine.end_ps, (unsigned long long)mine.events,
               (unsigned long long)one.end_ps, (unsigned long long)one.events, rc ? "DIFFERENT" : "identical");
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
