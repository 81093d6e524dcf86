/* Parameter sweeps (docs/sweeps.md):
 *
 *   simrun [--regress] [--quiet] [--out DIR] --sweep TEST k=v1,v2,v3 j=a,b ...
 *   mpirun -np 4 simrun --sweep TEST ...          (the points spread over the ranks)
 *
 * runs TEST at every point of the cross product of the values (the first key
 * outermost, the last fastest), one simrun process per point, and merges the
 * points' reports, in point order whatever ran them, into DIR/reports/TEST.sweep.json
 *   {"test","axes","points":[{"index","swept","params","metrics","checks","pass","status","sim"}],"pass","sweep"}
 * and DIR/reports/TEST.sweep.csv; each point's own report and log stay in
 * DIR/reports/TEST.sweep/p<index>.json and .log. Values: `k=a,b,c`; `k=a|b|c`
 * when a value holds commas (topo=server:gpus=4|host-gpu:gen=5,lanes=16);
 * number ranges `k=lo..hi*f` (geometric), `k=lo..hi+s` and `k=lo..hi` (step 1).
 *
 * Every point is configured first (simrun --check-params): a bad value
 * refuses the whole sweep before anything runs. Exit status: 0 every point
 * passed, 1 a point failed (each failing point is named), 2 bad input. */
#ifndef SIM_SWEEP_H
#define SIM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

/* How points are spread over workers (MPI ranks: tb/mpi/sweep_mpi.c). Rank 0
 * dispatches points and runs some itself; the others ask it for work. */
typedef struct sim_sweep_comm {
    int rank, size;
    /* A worker: hands in the result of its last point (NULL the first time)
     * and gets the next point's index, or -1 when there is no more work. */
    int (*ask)(const char *result);
    /* Rank 0, without waiting: a worker that asked (its result in *result,
     * malloc'd, or NULL); false when none is waiting. */
    bool (*poll)(int *worker, char **result);
    void (*reply)(int worker, int index);
} sim_sweep_comm;

/* True when argv asks for a sweep (--sweep among the leading options). */
bool sim_sweep_requested(int argc, char **argv);
/* Runs the sweep argv describes; comm NULL: one process. Returns the exit status. */
int sim_sweep_main(int argc, char **argv, const sim_sweep_comm *comm);

/* The points of a sweep, for tests: expands "k=v1,v2" arguments into
 * npoints x naxes value strings (row-major, axis order as given). Returns 0,
 * or -1 with why in err. The result is freed with sim_sweep_axes_free. */
typedef struct sim_sweep_axes {
    unsigned naxes;
    char **keys;
    unsigned *nvalues;
    char ***values;
    unsigned long npoints;
} sim_sweep_axes;
int sim_sweep_axes_parse(sim_sweep_axes *a, int nargs, char **args, char *err, size_t errlen);
/* The value of axis `axis` at point `point`. */
const char *sim_sweep_axes_value(const sim_sweep_axes *a, unsigned long point, unsigned axis);
void sim_sweep_axes_free(sim_sweep_axes *a);

#define SIM_SWEEP_MAX_POINTS 100000ul
#define SIM_SWEEP_MAX_RANGE 10000u

#endif
