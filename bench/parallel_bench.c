/* The "parallel" object of reports/bench.json (issue 22):
 * - what running a configuration as one point of a sweep costs beyond the run
 *   itself: `simrun --sweep example_pingpong requests=...` (40 points of a run
 *   of a few milliseconds, one process); overhead per point is (sweep wall x
 *   ranks - the points' own wall) / points, so process start-up, validating
 *   every point first, reading each report and merging are counted and the
 *   simulation is not;
 * - one system over ranks: fabric_traffic on fattree:16 (1024 endpoints) in
 *   one process and over 2 MPI ranks; speedup = the one-process simulation
 *   wall time / the two ranks' (each the report's wall_s: the run and the
 *   gathering, not building the system; the faster of two runs of each),
 *   events_per_s per rank, and whether the two reports' events and end times
 *   agree.
 *   parallel_bench SIMRUN BENCH_JSON [MPIRUN_SH]
 * Fails (exit 1) if a run fails or its report cannot be read. */
#include "bench/bench_simrun.h"
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#define SWEEP_TEST "example_pingpong"
#define SWEEP_AXIS "requests=100..4000+100"   /* 40 points */
#define TARGET_OVERHEAD_MS 50.0
#define RANKED_ARGS "topo=fattree:16", "duration_us=6", "warmup_us=1", "load=0.5", "trace=0"
#define RANKED_CONFIG "fabric_traffic topo=fattree:16 duration_us=6 warmup_us=1 load=0.5 trace=0"
#define TARGET_SPEEDUP 1.6
#define RANKED_REPEATS 2

static int run_sweep(const char *simrun, const char *dir)
{
    char *argv[] = { (char *)simrun, "--quiet", "--out", (char *)dir, "--sweep", SWEEP_TEST, SWEEP_AXIS, NULL };
    return bench_simrun("parallel_bench", argv);
}

/* fabric_traffic in one process (mpirun_sh NULL) or over 2 ranks: its report, or NULL. */
static cJSON *run_ranked(const char *simrun, const char *mpirun_sh, const char *dir)
{
    char out[1024];
    snprintf(out, sizeof out, "%s/%s", dir, mpirun_sh ? "np2" : "np1");
    char *one[] = { (char *)simrun, "--quiet", "--out", out, "fabric_traffic", RANKED_ARGS, NULL };
    char *two[] = { (char *)mpirun_sh, "2", (char *)simrun, "--quiet", "--out", out, "fabric_traffic", RANKED_ARGS, NULL };
    if (bench_simrun("parallel_bench", mpirun_sh ? two : one) != 0) return NULL;
    char path[1200];
    snprintf(path, sizeof path, "%s/reports/fabric_traffic.json", out);
    return sim_json_read_file(path);
}

static double report_wall(const cJSON *rep) { return bench_number(cJSON_GetObjectItemCaseSensitive(rep, "metrics"), "wall_s"); }

/* Adds the ranked numbers to o; 0, or -1 when a run failed. */
static int add_ranked(cJSON *o, const char *simrun, const char *mpirun_sh, const char *dir)
{
    cJSON *one = NULL, *two = NULL;
    for (unsigned i = 0; i < RANKED_REPEATS; i++) {   /* the faster of each: the machine is shared, its two CPUs differ */
        cJSON *a = run_ranked(simrun, NULL, dir), *b = a ? run_ranked(simrun, mpirun_sh, dir) : NULL;
        if (!a || !b) {
            cJSON_Delete(a), cJSON_Delete(one), cJSON_Delete(two);
            return -1;
        }
        if (!one || report_wall(a) < report_wall(one)) cJSON_Delete(one), one = a;
        else cJSON_Delete(a);
        if (!two || report_wall(b) < report_wall(two)) cJSON_Delete(two), two = b;
        else cJSON_Delete(b);
    }
    const cJSON *s1 = cJSON_GetObjectItemCaseSensitive(one, "sim"), *s2 = cJSON_GetObjectItemCaseSensitive(two, "sim");
    const double w1 = bench_number(cJSON_GetObjectItemCaseSensitive(one, "metrics"), "wall_s");
    const double w2 = bench_number(cJSON_GetObjectItemCaseSensitive(two, "metrics"), "wall_s");
    const double speedup = w2 > 0 ? w1 / w2 : 0;
    cJSON_AddStringToObject(o, "ranked_config", RANKED_CONFIG " (one process, then mpirun -np 2; the faster of 2 runs each)");
    cJSON_AddNumberToObject(o, "ranked_events", bench_number(s1, "events"));
    cJSON_AddNumberToObject(o, "one_rank_wall_s", w1);
    cJSON_AddNumberToObject(o, "two_ranks_wall_s", w2);
    cJSON_AddNumberToObject(o, "speedup", speedup);
    cJSON_AddNumberToObject(o, "target_speedup", TARGET_SPEEDUP);
    cJSON_AddBoolToObject(o, "speedup_target_met", speedup >= TARGET_SPEEDUP);
    cJSON_AddBoolToObject(o, "same_results", bench_number(s1, "events") == bench_number(s2, "events") &&
                                                  bench_number(s1, "time_ps") == bench_number(s2, "time_ps"));
    cJSON_AddNumberToObject(o, "events_per_s_one_rank", w1 > 0 ? bench_number(s1, "events") / w1 : 0);
    cJSON *per = cJSON_AddArrayToObject(o, "two_ranks_per_rank");
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(s2, "per_rank");
    for (const cJSON *r = ranks ? ranks->child : NULL; r; r = r->next) {
        cJSON *e = cJSON_Duplicate(r, 1);
        double ws = bench_number(r, "wall_s");
        cJSON_AddNumberToObject(e, "events_per_s", ws > 0 ? bench_number(r, "events") / ws : 0);
        cJSON_AddItemToArray(per, e);
    }
    printf("parallel: %s: %.2f s in one process, %.2f s over 2 ranks: speedup %.2f (target >= %.1f)\n", RANKED_CONFIG, w1, w2,
           speedup, TARGET_SPEEDUP);
    cJSON_Delete(one);
    cJSON_Delete(two);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: parallel_bench SIMRUN BENCH_JSON [MPIRUN_SH]\n");
        return 2;
    }
    char tmpl[] = "/tmp/parallel_bench.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) return 1;
    int rc = 1;
    if (run_sweep(argv[1], dir) == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/reports/%s.sweep.json", dir, SWEEP_TEST);
        cJSON *rep = sim_json_read_file(path);
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rep, "sweep");
        const double points = bench_number(meta, "points"), overhead_ms = bench_number(meta, "overhead_ms_per_point");
        const double wall_s = bench_number(meta, "wall_s"), points_wall_s = bench_number(meta, "points_wall_s");
        if (!cJSON_IsObject(meta) || points <= 0 || wall_s <= 0) {
            fprintf(stderr, "parallel_bench: %s has no usable sweep object\n", path);
        } else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "sweep_points", points);
            cJSON_AddNumberToObject(o, "sweep_wall_s", wall_s);
            cJSON_AddNumberToObject(o, "sweep_points_wall_s", points_wall_s);
            cJSON_AddNumberToObject(o, "sweep_overhead_ms_per_point", overhead_ms);
            cJSON_AddNumberToObject(o, "target_sweep_overhead_ms_per_point", TARGET_OVERHEAD_MS);
            cJSON_AddBoolToObject(o, "sweep_overhead_target_met", overhead_ms <= TARGET_OVERHEAD_MS);
            cJSON_AddStringToObject(o, "sweep_config", "simrun --sweep " SWEEP_TEST " " SWEEP_AXIS ", one process");
            printf("parallel: sweep of %.0f points in %.2f s wall (points' own runs %.2f s): %.1f ms per point beyond the run "
                   "(target <= %.0f)\n", points, wall_s, points_wall_s, overhead_ms, TARGET_OVERHEAD_MS);
            rc = 0;
            /* with MPI: one system over 2 ranks; without, its keys stay out and bench_check names them */
            if (argc == 4 && add_ranked(o, argv[1], argv[3], dir) != 0) rc = 1;
            if (argc != 4) fprintf(stderr, "parallel_bench: no mpirun: the speed-up over 2 ranks is not measured\n");
            if (sim_bench_write(argv[2], "parallel", o) != 0) rc = 1;
        }
        cJSON_Delete(rep);
    }
    bench_remove_dir("parallel_bench", dir);
    return rc;
}
