/* The sweep's workers as MPI ranks (Open MPI): rank 0 dispatches points,
 * the others ask it for work (sim/sweep.h). */
#ifndef TB_MPI_SWEEP_MPI_H
#define TB_MPI_SWEEP_MPI_H

#include "sim/sweep.h"

/* MPI_Init and the communicator (MPI_COMM_WORLD). */
const sim_sweep_comm *sim_sweep_mpi_init(int *argc, char ***argv);
/* The sweep's exit status agreed by all ranks (the highest), then MPI_Finalize. */
int sim_sweep_mpi_finish(int rc);

#endif
