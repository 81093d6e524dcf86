/* The "network" object of reports/bench.json (issue 19), trace off, two runs:
 *   incast:   simrun incast senders=64 link=roce-400g pfc=1 ecn=1 (64:1 RoCE v2 RC WRITEs of 1 MiB, PFC and
 *             DCQCN; the 64 senders on two edge switches: a switch has 64 ports at most);
 *   alltoall: simrun net_alltoall topo=leafspine:16,8,8 link=roce-400g (128 hosts, 16 leaves, 8 spines; every
 *             host writes 64 KiB to every other, RC over RoCE v2 with PFC and DCQCN; the generator's nodes take
 *             the RoCE kinds).
 * pkts_per_s of each: data packets through the whole path (sent by the requesters, retransmissions included)
 * per wall second of the test's own run loop (its report's wall_s: set-up and report excluded); ACKs and
 * CNPs are counted apart. The object's pkts_per_s is the slower of the two, against the target of
 * 5 M; target_met records whether it was reached.
 *   network_bench SIMRUN BENCH_JSON
 * Fails (exit 1) if a run fails or its report cannot be read. */
#include "bench/bench_simrun.h"
#include "sim/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#define TARGET_PKTS_PER_S 5e6

typedef struct net_run { double pkts_per_s, wall_s, data_pkts, ack_pkts, cnp_pkts, sim_us; } net_run;

static int run_one(const char *dir, char *const argv[], const char *test, const char *completion, const char *cnps, net_run *r)
{
    if (bench_simrun("network_bench", argv)) return -1;
    char path[1024];
    snprintf(path, sizeof path, "%s/reports/%s.json", dir, test);
    cJSON *rep = sim_json_read_file(path);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(rep, "metrics");
    r->pkts_per_s = bench_number(m, "pkts_per_s");
    r->wall_s = bench_number(m, "wall_s");
    r->data_pkts = bench_number(m, "data_pkts");
    r->ack_pkts = bench_number(m, "ack_pkts");
    r->cnp_pkts = bench_number(m, cnps);
    r->sim_us = bench_number(m, completion);
    cJSON_Delete(rep);
    if (r->pkts_per_s <= 0 || r->wall_s <= 0 || r->data_pkts <= 0) {
        fprintf(stderr, "network_bench: %s lacks pkts_per_s, wall_s or data_pkts\n", path);
        return -1;
    }
    return 0;
}

static void add_run(cJSON *o, const char *prefix, const net_run *r)
{
    char key[64];
#define ADD(field, value)                                   \
    snprintf(key, sizeof key, "%s_%s", prefix, field);      \
    cJSON_AddNumberToObject(o, key, value)
    ADD("pkts_per_s", r->pkts_per_s);
    ADD("wall_s", r->wall_s);
    ADD("data_pkts", r->data_pkts);
    ADD("ack_pkts", r->ack_pkts);
    ADD("cnp_pkts", r->cnp_pkts);
    ADD("completion_us", r->sim_us);
#undef ADD
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: network_bench SIMRUN BENCH_JSON\n");
        return 2;
    }
    char tmpl[] = "/tmp/network_bench.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir) return 1;
    char *incast[] = { argv[1], "--quiet", "--out", (char *)dir, "incast", "senders=64", "link=roce-400g", "pfc=1", "ecn=1", "trace=0", NULL };
    char *a2a[] = { argv[1], "--quiet", "--out", (char *)dir, "net_alltoall", "topo=leafspine:16,8,8", "link=roce-400g", "msg_bytes=65536",
                    "pfc=1", "ecn=1", "trace=0", NULL };
    net_run ri, ra;
    int rc = 1;
    if (run_one(dir, incast, "incast", "completion_us", "cnps", &ri) == 0 && run_one(dir, a2a, "net_alltoall", "completion_us", "cnp_pkts", &ra) == 0) {
        const double slower = ri.pkts_per_s < ra.pkts_per_s ? ri.pkts_per_s : ra.pkts_per_s;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "pkts_per_s", slower);
        add_run(o, "incast", &ri);
        add_run(o, "alltoall", &ra);
        cJSON_AddNumberToObject(o, "target_pkts_per_s", TARGET_PKTS_PER_S);
        cJSON_AddBoolToObject(o, "target_met", slower >= TARGET_PKTS_PER_S);
        cJSON_AddStringToObject(o, "config", "incast senders=64 link=roce-400g pfc=1 ecn=1 (1 MiB each); net_alltoall topo=leafspine:16,8,8 "
                                             "link=roce-400g msg_bytes=65536 pfc=1 ecn=1; trace off");
        printf("network: incast 64:1 %.3f M data pkts/s (%.0f in %.2f s wall), all-to-all 128 hosts %.3f M data pkts/s (%.0f in %.2f s); "
               "slower %.3f M of the %.0f M target\n", ri.pkts_per_s / 1e6, ri.data_pkts, ri.wall_s, ra.pkts_per_s / 1e6, ra.data_pkts,
               ra.wall_s, slower / 1e6, TARGET_PKTS_PER_S / 1e6);
        rc = sim_bench_write(argv[2], "network", o) == 0 ? 0 : 1;
    }
    bench_remove_dir("network_bench", dir);
    return rc;
}
