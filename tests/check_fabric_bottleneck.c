/* Bottleneck attribution by tier (sim_fabric_bottleneck_json, sim/tier.h):
 * two endpoints through one switch, one on a PCIe link and one on a
 * chip-to-chip link (ICI: the same 24-byte overhead per packet as PCIe, so
 * fabric_traffic's exact zero-load check still applies); whichever link is
 * slower for the traffic it must carry is the busiest, and its tier is
 * named. Driven through fabric_traffic's report. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_simrun.h"

static char out[1 << 16];

static cJSON *run(const char *pcie_preset)
{
    char dir[] = "/tmp/check_bottleneck_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char topo[256], args[512], path[512];
    snprintf(topo, sizeof topo, "%s/two.json", dir);
    FILE *f = fopen(topo, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"nodes\": [{\"name\": \"h0\", \"kind\": \"endpoint\"}, {\"name\": \"h1\", \"kind\": \"endpoint\"},"
               " {\"name\": \"s0\", \"kind\": \"switch\", \"params\": {\"ports\": 2}}],"
               " \"links\": [{\"a\": \"h0\", \"b\": \"s0\", \"preset\": \"%s\"}, {\"a\": \"h1\", \"b\": \"s0\", \"preset\": \"ici\"}]}\n",
            pcie_preset);
    fclose(f);
    snprintf(args, sizeof args, "fabric_traffic topo=%s pattern=uniform load=0.9 duration_us=20 warmup_us=2", topo);
    int rc = check_simrun(dir, args, out, sizeof out);
    ck_assert_msg(rc == 0, "simrun %s: exit %d\n%s", args, rc, out);
    snprintf(path, sizeof path, "%s/reports/fabric_traffic.json", dir);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    cJSON *rep = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(rep);
    return rep;
}

static const cJSON *bottleneck(const cJSON *rep)
{
    const cJSON *m = cJSON_GetObjectItem(rep, "metrics");
    ck_assert_ptr_nonnull(m);
    const cJSON *b = cJSON_GetObjectItem(m, "bottleneck");
    ck_assert_ptr_nonnull(b);
    return b;
}

START_TEST(test_nvlink_is_the_bottleneck_behind_gen5)
{
    /* h0 offers 0.9 x 63 GB/s into h1's 50 GB/s ICI link: the switch's port to h1 saturates */
    cJSON *rep = run("pcie-gen5-x16");
    const cJSON *b = bottleneck(rep);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "busiest_tier")->valuestring, "nvlink");
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "top_links"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(top, "tier")->valuestring, "nvlink");
    ck_assert(cJSON_GetObjectItem(top, "util")->valuedouble > 0.9);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(b, "tiers")), 2);
    cJSON_Delete(rep);
}
END_TEST

START_TEST(test_pcie_is_the_bottleneck_behind_gen3_x4)
{
    /* h1 offers 0.9 x 50 GB/s into h0's 3.9 GB/s PCIe Gen3 x4 */
    cJSON *rep = run("pcie-gen3-x4");
    const cJSON *b = bottleneck(rep);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "busiest_tier")->valuestring, "pcie");
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "top_links"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(top, "tier")->valuestring, "pcie");
    cJSON_Delete(rep);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fabric_bottleneck");
    TCase *tc = tcase_create("tiers");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_nvlink_is_the_bottleneck_behind_gen5);
    tcase_add_test(tc, test_pcie_is_the_bottleneck_behind_gen3_x4);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
