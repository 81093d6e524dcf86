/* The pdes transport over MPI (pdes_mpi.h). */
#include "tb/mpi/pdes_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_ctx {
    int size;
    int *send_counts, *send_displs, *recv_counts, *recv_displs;
    unsigned char *send, *recv;
    size_t send_cap, recv_cap;
} mpi_ctx;

static void grow(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap) return;
    *cap = need * 2;
    *p = realloc(*p, *cap);
    if (!*p) sim_fatal("pdes_mpi: out of memory for %zu bytes", *cap);
}

static int as_count(size_t n)
{
    if (n > INT_MAX) sim_fatal("pdes_mpi: a window's exchange of %zu bytes is beyond MPI's int counts", n);
    return (int)n;
}

static void mpi_exchange(void *ctx, const sim_pdes_buf *out, sim_pdes_buf *in)
{
    mpi_ctx *c = ctx;
    size_t total = 0;
    for (int r = 0; r < c->size; r++) {
        c->send_counts[r] = as_count(out[r].len);
        c->send_displs[r] = as_count(total);
        total += out[r].len;
    }
    grow(&c->send, &c->send_cap, total + 1);
    for (int r = 0; r < c->size; r++)
        if (out[r].len) memcpy(c->send + c->send_displs[r], out[r].data, out[r].len);
    MPI_Alltoall(c->send_counts, 1, MPI_INT, c->recv_counts, 1, MPI_INT, MPI_COMM_WORLD);
    size_t rtotal = 0;
    for (int r = 0; r < c->size; r++) {
        c->recv_displs[r] = as_count(rtotal);
        rtotal += (size_t)c->recv_counts[r];
    }
    grow(&c->recv, &c->recv_cap, rtotal + 1);
    MPI_Alltoallv(c->send, c->send_counts, c->send_displs, MPI_BYTE, c->recv, c->recv_counts, c->recv_displs, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int r = 0; r < c->size; r++) {
        in[r].data = c->recv + c->recv_displs[r];
        in[r].len = (size_t)c->recv_counts[r];
        in[r].cap = 0;   /* the transport's memory */
    }
}

static sim_time_ps mpi_min_time(void *ctx, sim_time_ps mine)
{
    (void)ctx;
    uint64_t v = mine, m;
    MPI_Allreduce(&v, &m, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    return m;
}

sim_pdes_transport sim_pdes_mpi_transport(void)
{
    static mpi_ctx c;   /* one per process, like MPI_COMM_WORLD */
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!c.size) {
        c.size = size;
        c.send_counts = calloc((size_t)size, sizeof(int));
        c.send_displs = calloc((size_t)size, sizeof(int));
        c.recv_counts = calloc((size_t)size, sizeof(int));
        c.recv_displs = calloc((size_t)size, sizeof(int));
    }
    return (sim_pdes_transport){ .rank = (unsigned)rank, .size = (unsigned)size, .exchange = mpi_exchange,
                                 .min_time = mpi_min_time, .ctx = &c };
}
