/* The "server" object of reports/bench.json (issue 18): an 8-GPU server
 * (server:gpus=8, 4 PCIe switches, Gen5 x16) doing concurrent host-to-device
 * copies of 16 MiB per GPU, trace off. Every data TLP crosses two PCIe hops
 * (root port -> switch -> GPU), each with the full transaction and data link
 * layers. tlps_per_s: data TLPs received by the GPUs per wall second of the
 * run (the report's sim.wall_s: set-up excluded, the latency probe included);
 * GB_per_wall_s: bytes copied per wall second.
 *   server_bench SIMRUN BENCH_JSON
 * Fails (exit 1) if the run fails or its report cannot be read. */
#include "bench/bench_simrun.h"
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#define GPUS 8
#define BYTES_PER_GPU (16.0 * 1024 * 1024)
#define TARGET_TLPS_PER_S 3e6

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: server_bench SIMRUN BENCH_JSON\n");
        return 2;
    }
    char tmpl[] = "/tmp/server_bench.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) return 1;
    char *run[] = { argv[1], "--quiet", "--out", (char *)dir, "h2d_copy", "gpus=8", "bytes=16777216", "trace=0", NULL };
    int rc = 1;
    if (bench_simrun("server_bench", run) == 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/reports/h2d_copy.json", dir);
        cJSON *rep = sim_json_read_file(path);
        const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(rep, "metrics"), *sim = cJSON_GetObjectItemCaseSensitive(rep, "sim");
        const double tlps = bench_number(metrics, "tlps"), wall_s = bench_number(sim, "wall_s"), events = bench_number(sim, "events");
        if (tlps <= 0 || wall_s <= 0) {
            fprintf(stderr, "server_bench: %s has no tlps or wall_s\n", path);
        } else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "tlps_per_s", tlps / wall_s);
            cJSON_AddNumberToObject(o, "GB_per_wall_s", GPUS * BYTES_PER_GPU / wall_s * 1e-9);
            cJSON_AddNumberToObject(o, "wall_s", wall_s);
            cJSON_AddNumberToObject(o, "tlps", tlps);
            cJSON_AddNumberToObject(o, "events_per_tlp", events / tlps);
            cJSON_AddNumberToObject(o, "target_tlps_per_s", TARGET_TLPS_PER_S);
            cJSON_AddBoolToObject(o, "target_met", tlps / wall_s >= TARGET_TLPS_PER_S);
            cJSON_AddStringToObject(o, "config", "h2d_copy gpus=8 (server:gpus=8,switches=4, Gen5 x16) bytes=16777216 per GPU, trace off");
            printf("server: %.2f M data TLPs/s through two PCIe hops (target %.0f M), %.2f GB copied per wall s, %.2f s wall, "
                   "%.1f events per TLP\n", tlps / wall_s / 1e6, TARGET_TLPS_PER_S / 1e6, GPUS * BYTES_PER_GPU / wall_s * 1e-9, wall_s,
                   events / tlps);
            rc = sim_bench_write(argv[2], "server", o) == 0 ? 0 : 1;
        }
        cJSON_Delete(rep);
    }
    bench_remove_dir("server_bench", dir);
    return rc;
}
