/* The "parallel" object of reports/bench.json (issue 22): what running a
 * configuration as one point of a sweep costs beyond the run itself.
 * Runs `simrun --sweep example_pingpong requests=...` (40 points of a run of a
 * few milliseconds, one process) and reads the merged report's sweep object:
 * overhead per point is (sweep wall x ranks - the points' own wall) / points,
 * so process start-up, validating every point first, reading each report and
 * merging are counted and the simulation is not.
 *   parallel_bench SIMRUN BENCH_JSON
 * Fails (exit 1) if the sweep fails or its report cannot be read. */
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SWEEP_TEST "example_pingpong"
#define SWEEP_AXIS "requests=100..4000+100"   /* 40 points */
#define TARGET_OVERHEAD_MS 50.0

static double number(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int run_sweep(const char *simrun, const char *dir)
{
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl(simrun, simrun, "--quiet", "--out", dir, "--sweep", SWEEP_TEST, SWEEP_AXIS, (char *)NULL);
        fprintf(stderr, "parallel_bench: cannot run %s: %s\n", simrun, strerror(errno));
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "parallel_bench: the sweep failed (status %d)\n", status);
        return -1;
    }
    return 0;
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
        const double points = number(meta, "points"), overhead_ms = number(meta, "overhead_ms_per_point");
        const double wall_s = number(meta, "wall_s"), points_wall_s = number(meta, "points_wall_s");
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
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "parallel_bench: could not remove %s\n", dir);
    return rc;
}
