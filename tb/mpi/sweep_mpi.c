/* A sweep over MPI ranks: workers send their last result with each request
 * for work; rank 0 polls for requests between running its own points. */
#include "tb/mpi/sweep_mpi.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_ASK = 1, TAG_WORK = 2 };

static int mpi_ask(const char *result)
{
    int len = result ? (int)strlen(result) : 0;
    MPI_Send(result ? result : "", len, MPI_CHAR, 0, TAG_ASK, MPI_COMM_WORLD);
    int index;
    MPI_Recv(&index, 1, MPI_INT, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return index;
}

static bool mpi_poll(int *worker, char **result)
{
    int flag;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, MPI_COMM_WORLD, &flag, &st);
    if (!flag) return false;
    int len;
    MPI_Get_count(&st, MPI_CHAR, &len);
    char *buf = malloc((size_t)len + 1);
    if (!buf) abort();
    MPI_Recv(buf, len, MPI_CHAR, st.MPI_SOURCE, TAG_ASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    buf[len] = 0;
    *worker = st.MPI_SOURCE;
    if (!len) {
        free(buf);
        buf = NULL;
    }
    *result = buf;
    return true;
}

static void mpi_reply(int worker, int index) { MPI_Send(&index, 1, MPI_INT, worker, TAG_WORK, MPI_COMM_WORLD); }

static sim_sweep_comm comm = { .ask = mpi_ask, .poll = mpi_poll, .reply = mpi_reply };

const sim_sweep_comm *sim_sweep_mpi_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
    return &comm;
}

int sim_sweep_mpi_finish(int rc)
{
    int all;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
