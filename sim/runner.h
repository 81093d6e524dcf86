/* Tests the runner (build/bin/simrun) knows. A test file declares its
 * parameters and a run function and registers itself with SIM_TEST():
 *
 *   static const sim_param_def ring_params[] = { SIM_PARAM_INT("nodes", "8", "", 2, 65536, "ring size"), SIM_PARAM_END };
 *   static void ring_run(sim_test_ctx *c) {
 *       ... read every parameter; sim_param_not_applicable() those that do not apply ...
 *       sim_test_configured(c);   // given-but-unused parameters are refused here (exit 2)
 *       ... build, simulate, report ...
 *   }
 *   SIM_TEST(kernel_ring, "tokens circulating in a ring", ring_params, "tokens=2", ring_run)
 *
 * The runner adds the common parameters `seed` and `trace`, applies key=value
 * overrides, opens waves/<name>.fst unless trace=0, calls run, and writes
 * reports/<name>.json. Exit status: 0 all checks passed, 1 a check failed,
 * 2 bad input. `simrun --check-params TEST k=v...` runs the test only up to
 * sim_test_configured() and prints how each parameter is used (no simulation). */
#ifndef SIM_RUNNER_H
#define SIM_RUNNER_H

#include "sim/kernel.h"
#include "sim/params.h"
#include "sim/pdes.h"
#include "sim/report.h"
#include "sim/trace.h"

typedef struct sim_test_ctx {
    const char *test_name;
    sim_kernel *k;            /* a fresh kernel; tests may make more (sweeps) */
    const sim_params *params;
    sim_report *report;
    sim_trace *trace;         /* NULL when trace=0 */
    uint64_t seed;
    bool quiet;               /* progress lines off (regression) */
    const char *out_dir;      /* reports/ and waves/ go below it */
    /* Reported as "sim":{"time_ps","events"}: taken from k unless a test that
     * runs several kernels (a sweep) sets them. */
    uint64_t sim_time_ps, sim_events;
    /* A run over MPI ranks (SIM_TEST_RANKED tests under mpirun, more than one
     * rank): this rank's transport; NULL in one process. Every rank runs the
     * test; only rank 0's report is written and printed, so the test gathers
     * its numbers there (sim/pdes.h's collectives, sim_fabric_gather). */
    const sim_pdes_transport *transport;
} sim_test_ctx;

typedef struct sim_test_def {
    const char *name;
    const char *help;
    const sim_param_def *params;
    const char *regress_args; /* short defaults for `make test` ("cycles=2000 ...") */
    void (*run)(sim_test_ctx *c);
    bool ranked;              /* may run over MPI ranks (SIM_TEST_RANKED) */
} sim_test_def;

void sim_test_register(const sim_test_def *def);

#define SIM_TEST(name_, help_, params_, regress_, run_)                                  \
    static const sim_test_def sim_test_def_##name_ = { .name = #name_, .help = help_, .params = params_, .regress_args = regress_, .run = run_ }; \
    __attribute__((constructor)) static void sim_test_register_##name_(void)          \
    { sim_test_register(&sim_test_def_##name_); }
/* A test that runs over MPI ranks too (c->transport): one system cut across them. */
#define SIM_TEST_RANKED(name_, help_, params_, regress_, run_)                           \
    static const sim_test_def sim_test_def_##name_ = { .name = #name_, .help = help_, .params = params_, .regress_args = regress_, .run = run_, .ranked = true }; \
    __attribute__((constructor)) static void sim_test_register_##name_(void)          \
    { sim_test_register(&sim_test_def_##name_); }

/* The test has read its whole configuration (every parameter it will use,
 * with sim_param_not_applicable() for those that do not apply). Call it once,
 * before anything is simulated: a parameter the user gave that the test did not
 * read is refused here (exit 2, naming it). A test that reaches sim_run, or
 * returns, without calling it aborts (a bug). With --check-params the runner
 * prints the parameters' use and exits here. */
void sim_test_configured(sim_test_ctx *c);

/* Progress on long runs: a line at most every second on stderr (unless quiet).
 * It reads the wall clock, so call it every few thousand steps, not every step. */
void sim_progress(sim_test_ctx *c, double fraction, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The source tree's root (its scripts/ for plots), from where the runner was compiled. */
void sim_source_root(char *buf, size_t n);

/* Runs a test by name with arguments (what simrun's main does). */
int sim_runner_main(int argc, char **argv);
/* The same on one rank of a launch over tr (every rank calls it): a test
 * that is not SIM_TEST_RANKED is refused (exit 2); waves are off unless
 * trace=1 is given; rank 0 writes and prints the report; every rank returns
 * rank 0's status. */
int sim_runner_main_ranked(int argc, char **argv, const sim_pdes_transport *tr);

#endif
