/* sim/pdes.h's transport over MPI (MPI_COMM_WORLD): a window's exchange is
 * one MPI_Alltoall of sizes and one MPI_Alltoallv of records; the agreed
 * times are MPI_Allreduce minima. */
#ifndef TB_MPI_PDES_MPI_H
#define TB_MPI_PDES_MPI_H

#include "sim/pdes.h"

/* After MPI_Init. */
sim_pdes_transport sim_pdes_mpi_transport(void);

#endif
