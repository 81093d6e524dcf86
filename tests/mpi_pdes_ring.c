/* The pdes ring over MPI ranks (run by ctest through scripts/mpirun.sh at 1,
 * 2 and 4 ranks): each rank builds and runs its part, cut links travel as
 * MPI messages (tb/mpi/pdes_mpi.c); rank 0 gathers every node's arrival hash,
 * count and last arrival time, the events summed over ranks and the end time,
 * and compares them with the whole ring in one kernel. Exit 0 when equal. */
#include <mpi.h>
#include <stdio.h>

#include "pdes_ring.h"
#include "tb/mpi/pdes_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sim_pdes_transport tr = sim_pdes_mpi_transport();
    ring_result mine, all;
    run_ring(tr.size, true, &tr, &mine);
    all = mine;   /* every rank holds its own nodes, zero elsewhere: sums gather them */
    MPI_Reduce(mine.hash, all.hash, NODES, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine.arrivals, all.arrivals, NODES, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine.last_ps, all.last_ps, NODES, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine.events, &all.events, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (tr.rank == 0) {
        ring_result one;
        run_ring(1, true, NULL, &one);
        rc = !ring_same(&one, &all);
        printf("pdes ring on %u ranks: %llu windows, end %llu ps, %llu events; one kernel: end %llu ps, %llu events: %s\n", tr.size,
               (unsigned long long)mine.windows, (unsigned long long)all.end_ps, (unsigned long long)all.events,
               (unsigned long long)one.end_ps, (unsigned long long)one.events, rc ? "DIFFERENT" : "identical");
        for (unsigned i = 0; rc && i < NODES; i++)
            if (one.hash[i] != all.hash[i] || one.arrivals[i] != all.arrivals[i])
                printf("  node %u: hash %llx vs %llx, arrivals %llu vs %llu\n", i, (unsigned long long)all.hash[i],
                       (unsigned long long)one.hash[i], (unsigned long long)all.arrivals[i], (unsigned long long)one.arrivals[i]);
        if (tr.size > 1 && mine.windows < 100) {
            printf("  only %llu windows: the ring did not run in windows\n", (unsigned long long)mine.windows);
            rc = 1;
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
