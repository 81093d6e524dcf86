/* The "collective" object of reports/bench.json (issue 20): a ring all_reduce of 64 MiB on 128 GPUs,
 *   simrun nccl_tests nodes=16 minbytes=64M maxbytes=64M check=0 trace=0
 * (dgx-h100 nodes=16: 16 NVLink domains joined rail-optimised by NDR InfiniBand, 4096-byte MTU), at packet level.
 * wall_s is the test's own run (its report's sim.wall_s: set-up and report excluded); pkts_per_s = the packets it
 * moved (every GPU's 128-byte NVLink/PCIe packets, a burst counting each, plus the NICs' IB data packets) per wall
 * second; peak_rss_mb the child's maximum resident set. Target: wall_s <= 5.
 *   collective_bench SIMRUN BENCH_JSON
 * Fails (exit 1) if the run fails or its report cannot be read; a missed target is recorded, not a failure. */
#include "bench/bench_simrun.h"
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define TARGET_WALL_S 5.0

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: collective_bench SIMRUN BENCH_JSON\n");
        return 2;
    }
    char tmpl[] = "/tmp/collective_bench.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) return 1;
    char *args[] = { argv[1], "--quiet", "--out", (char *)dir, "nccl_tests", "nodes=16", "minbytes=64M", "maxbytes=64M", "check=0",
                     "trace=0", NULL };
    int rc = 1;
    if (bench_simrun("collective_bench", args) == 0) {
        struct rusage ru;
        getrusage(RUSAGE_CHILDREN, &ru);
        char path[1024];
        snprintf(path, sizeof path, "%s/reports/nccl_tests.json", dir);
        cJSON *rep = sim_json_read_file(path);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(rep, "metrics"), *sim = cJSON_GetObjectItemCaseSensitive(rep, "sim");
        double wall = bench_number(sim, "wall_s"), gpu_pkts = bench_number(m, "gpu_pkts"), ib_pkts = bench_number(m, "ib_pkts");
        double msgs = bench_number(m, "gpu_msgs"), busbw = bench_number(m, "peak_busbw_GBps"), events = bench_number(sim, "events");
        if (wall > 0 && gpu_pkts > 0 && ib_pkts > 0) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "wall_s", wall);
            cJSON_AddNumberToObject(o, "pkts_per_s", (gpu_pkts + ib_pkts) / wall);
            cJSON_AddNumberToObject(o, "peak_rss_mb", (double)ru.ru_maxrss / 1024.0);
            cJSON_AddNumberToObject(o, "gpu_pkts", gpu_pkts);
            cJSON_AddNumberToObject(o, "gpu_msgs", msgs);
            cJSON_AddNumberToObject(o, "ib_pkts", ib_pkts);
            cJSON_AddNumberToObject(o, "events", events);
            cJSON_AddNumberToObject(o, "busbw_GBps", busbw);
            cJSON_AddNumberToObject(o, "target_wall_s", TARGET_WALL_S);
            cJSON_AddBoolToObject(o, "target_met", wall <= TARGET_WALL_S);
            cJSON_AddStringToObject(o, "config", "nccl_tests nodes=16 (dgx-h100, 128 GPUs, ib-ndr, mtu 4096) op=all_reduce algo=ring "
                                                 "minbytes=64M maxbytes=64M check=0 trace=0");
            printf("collective: 64 MiB ring all_reduce on 128 GPUs: %.2f s wall (target %.0f), %.3f M pkts/s (%.0f GPU + %.0f IB packets in "
                   "%.0f messages), %.0f MB peak RSS, busbw %.1f GB/s\n", wall, TARGET_WALL_S, (gpu_pkts + ib_pkts) / wall / 1e6, gpu_pkts,
                   ib_pkts, msgs, (double)ru.ru_maxrss / 1024.0, busbw);
            rc = sim_bench_write(argv[2], "collective", o) == 0 ? 0 : 1;
        } else {
            fprintf(stderr, "collective_bench: %s lacks sim.wall_s, gpu_pkts or ib_pkts\n", path);
        }
        cJSON_Delete(rep);
    }
    bench_remove_dir("collective_bench", dir);
    return rc;
}
