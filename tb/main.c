/* build/bin/simrun: runs one registered test (see sim/runner.h), or a sweep
 * of one over its parameters (sim/sweep.h), spread over MPI ranks when built
 * with Open MPI and started by mpirun; under mpirun a test built on the
 * fabric runs its one system cut across the ranks (docs/parallel.md). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/runner.h"
#include "sim/sweep.h"
#ifdef LINKSTACK_HAVE_MPI
#include <mpi.h>

#include "tb/mpi/pdes_mpi.h"
#include "tb/mpi/sweep_mpi.h"
#endif

/* Started by an MPI launcher (Open MPI's mpirun, or a PMI/PMIx one like Slurm's srun) with more than one rank. */
static int launcher_ranks(void)
{
    const char *vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE" };
    for (unsigned i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return atoi(getenv(vars[i]));
    return 0;
}

#ifndef LINKSTACK_HAVE_MPI
/* Rank 0 of a launch, or no launch: the one that speaks for all. */
static bool first_rank(void)
{
    return !getenv("OMPI_COMM_WORLD_RANK") || atoi(getenv("OMPI_COMM_WORLD_RANK")) == 0;
}
#endif

int main(int argc, char **argv)
{
    const int ranks = launcher_ranks();
    if (!sim_sweep_requested(argc, argv)) {
        if (ranks > 1) {
#ifdef LINKSTACK_HAVE_MPI
            /* one system cut across the ranks (SIM_TEST_RANKED tests; the runner refuses others) */
            MPI_Init(&argc, &argv);
            sim_pdes_transport tr = sim_pdes_mpi_transport();
            int rc = sim_runner_main_ranked(argc, argv, &tr);
            MPI_Finalize();
            return rc;
#else
            if (first_rank())
                fprintf(stderr, "error: this simrun was built without Open MPI, so %d ranks would each run the whole test; "
                                "install libopenmpi-dev and rebuild, or run without mpirun (one process)\n", ranks);
            return 2;
#endif
        }
        return sim_runner_main(argc, argv);
    }
#ifdef LINKSTACK_HAVE_MPI
    if (ranks > 0) {
        const sim_sweep_comm *comm = sim_sweep_mpi_init(&argc, &argv);
        return sim_sweep_mpi_finish(sim_sweep_main(argc, argv, comm->size > 1 ? comm : NULL));
    }
#else
    if (ranks > 1) {
        if (first_rank())
            fprintf(stderr, "error: this simrun was built without Open MPI, so %d ranks would each run the whole sweep; "
                            "install libopenmpi-dev and rebuild, or run without mpirun (one process)\n", ranks);
        return 2;
    }
#endif
    return sim_sweep_main(argc, argv, NULL);
}
