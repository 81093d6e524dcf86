/* The "parallel" object of reports/bench.json (issue 22): what running a
 * configuration as one point of a sweep costs beyond the run itself.
 * Runs `simrun --sweep example_pingpong requests=...` (40 points of a run of a
 * few milliseconds, one process) and reads the merged report's sweep object:
 * overhead per point is (sweep wall x ranks - the points' own wall) / points,
 * so process start-up, validating every point first, reading each report and
 * merging are counted and the simulation is not.
 *   parallel_bench SIMRUN BENCH_JSON
 * Fails (exit 1) if the sweep fails or its report cannot be read. */
#include "bench/bench_simrun.h"
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#define SWEEP_TEST "example_pingpong"
#define SWEEP_AXIS "requests=100..4000+100"   /* 40 points */
#define TARGET_OVERHEAD_MS 50.0

static int run_sweep(const char *simrun, const char *dir)
{
    char *argv[] = { (char *)simrun, "--quiet", "--out", (char *)dir, "--sweep", SWEEP_TEST, SWEEP_AXIS, NULL };
    return bench_simrun("parallel_bench", argv);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: parallel_bench SIMRUN BENCH_JSON\n");
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
            rc = sim_bench_write(argv[2], "parallel", o) == 0 ? 0 : 1;
        }
        cJSON_Delete(rep);
    }
    bench_remove_dir("parallel_bench", dir);
    return rc;
}
