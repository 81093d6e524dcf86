/* Partitions for runs over ranks (sim/topo.h: topo_partition): nodes in equal
 * blocks, auto cutting only the slowest links when they split the system into
 * groups that fit, balance by connected ports, determinism, and the file's
 * ranks with every refusal naming the node. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/kernel.h"
#include "sim/topo.h"

static char err[4096];

static topo *load(const char *spec)
{
    err[0] = 0;
    topo *t = topo_from_string(spec, "eth-400g", err, sizeof err);
    ck_assert_msg(t, "%s: %s", spec, err);
    return t;
}

/* A file of two servers (a switch and four endpoints each, 10 ns links) joined by one 1000 ns link. */
static topo *two_servers(const char *rank_field_a, const char *rank_field_b)
{
    char path[] = "/tmp/check_topo_part.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"nodes\": [");
    for (int s = 0; s < 2; s++) {
        const char *rank = s ? rank_field_b : rank_field_a;
        fprintf(f, "%s{\"name\": \"sw%d\", \"kind\": \"switch\"%s}", s ? ", " : "", s, rank);
        for (int e = 0; e < 4; e++) fprintf(f, ", {\"name\": \"h%d_%d\", \"kind\": \"endpoint\"%s}", s, e, rank);
    }
    fprintf(f, "], \"links\": [");
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 4; e++) fprintf(f, "%s{\"a\": \"h%d_%d\", \"b\": \"sw%d\", \"latency_ns\": 10}", s || e ? ", " : "", s, e, s);
    fprintf(f, ", {\"a\": \"sw0\", \"b\": \"sw1\", \"latency_ns\": 1000}]}\n");
    fclose(f);
    topo *t = topo_from_string(path, "eth-400g", err, sizeof err);
    unlink(path);
    return t;
}

static uint32_t ports_of(const topo *t, uint32_t n)
{
    uint32_t w = 0;
    for (unsigned p = 0; p < t->nodes[n].nports; p++) w += t->nodes[n].port_link[p] >= 0;
    return w ? w : 1;
}

START_TEST(test_nodes_blocks)
{
    topo *t = load("fattree:4");
    uint32_t part[64];
    ck_assert_int_eq(topo_partition(t, TOPO_PART_NODES, 3, part, err, sizeof err), 0);
    unsigned count[3] = { 0 };
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        ck_assert_uint_lt(part[n], 3);
        if (n) ck_assert_uint_ge(part[n], part[n - 1]);   /* blocks in topology order */
        count[part[n]]++;
    }
    for (unsigned p = 0; p < 3; p++) ck_assert_uint_le(abs((int)count[p] - (int)(t->n_nodes / 3)), 1);
    topo_free(t);
}
END_TEST

START_TEST(test_auto_cuts_the_slowest_link)
{
    topo *t = two_servers("", "");
    ck_assert_msg(t, "%s", err);
    uint32_t part[16];
    ck_assert_int_eq(topo_partition(t, TOPO_PART_AUTO, 2, part, err, sizeof err), 0);
    unsigned cut = 0;
    for (uint32_t i = 0; i < t->n_links; i++) {
        const topo_link *l = &t->links[i];
        if (part[l->a] != part[l->b]) {
            cut++;
            ck_assert_double_eq(l->latency_ns, 1000);   /* only the slow link: the lookahead is 1000 ns */
        }
    }
    ck_assert_uint_eq(cut, 1);
    topo_free(t);
}
END_TEST

/* A ring s0 -slow- s1 -fast- s2 -slow- s3 -fast- s0, endpoints e0 on s0 and
 * e2 on s2 (fast): grown by links alone, s0 would take e0 and then s1 (the
 * lower of two equal neighbours) and cut both fast ring links. */
START_TEST(test_auto_keeps_fast_links_whole)
{
    char path[] = "/tmp/check_topo_part.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"nodes\": [{\"name\": \"s0\", \"kind\": \"switch\"}, {\"name\": \"s1\", \"kind\": \"switch\"}, "
               "{\"name\": \"s2\", \"kind\": \"switch\"}, {\"name\": \"s3\", \"kind\": \"switch\"}, "
               "{\"name\": \"e0\", \"kind\": \"endpoint\"}, {\"name\": \"e2\", \"kind\": \"endpoint\"}], \"links\": ["
               "{\"a\": \"e0\", \"b\": \"s0\", \"latency_ns\": 5}, {\"a\": \"e2\", \"b\": \"s2\", \"latency_ns\": 5}, "
               "{\"a\": \"s0\", \"b\": \"s1\", \"latency_ns\": 500}, {\"a\": \"s1\", \"b\": \"s2\", \"latency_ns\": 5}, "
               "{\"a\": \"s2\", \"b\": \"s3\", \"latency_ns\": 500}, {\"a\": \"s3\", \"b\": \"s0\", \"latency_ns\": 5}]}\n");
    fclose(f);
    topo *t = topo_from_string(path, "eth-400g", err, sizeof err);
    unlink(path);
    ck_assert_msg(t, "%s", err);
    uint32_t part[6];
    ck_assert_int_eq(topo_partition(t, TOPO_PART_AUTO, 2, part, err, sizeof err), 0);
    ck_assert_uint_eq(part[4], part[0]);
    ck_assert_uint_eq(part[5], part[2]);
    ck_assert_uint_eq(part[1], part[2]);
    ck_assert_uint_eq(part[3], part[0]);
    ck_assert_uint_ne(part[0], part[1]);
    topo_free(t);
}
END_TEST

START_TEST(test_auto_balanced_and_deterministic)
{
    topo *t = load("fattree:8");
    uint32_t *a = calloc(t->n_nodes, sizeof *a), *b = calloc(t->n_nodes, sizeof *b);
    for (unsigned parts = 2; parts <= 4; parts++) {
        ck_assert_int_eq(topo_partition(t, TOPO_PART_AUTO, parts, a, err, sizeof err), 0);
        ck_assert_int_eq(topo_partition(t, TOPO_PART_AUTO, parts, b, err, sizeof err), 0);
        ck_assert_mem_eq(a, b, t->n_nodes * sizeof *a);
        double w[4] = { 0 }, total = 0;
        for (uint32_t n = 0; n < t->n_nodes; n++) w[a[n]] += ports_of(t, n), total += ports_of(t, n);
        for (unsigned p = 0; p < parts; p++)
            ck_assert_msg(w[p] >= 0.9 * total / parts && w[p] <= 1.1 * total / parts, "%u parts: part %u holds %.0f of %.0f ports",
                          parts, p, w[p], total);
        /* grown over the graph: fewer links cut than equal blocks of nodes in order */
        ck_assert_int_eq(topo_partition(t, TOPO_PART_NODES, parts, b, err, sizeof err), 0);
        unsigned cut_auto = 0, cut_nodes = 0;
        for (uint32_t i = 0; i < t->n_links; i++) {
            cut_auto += a[t->links[i].a] != a[t->links[i].b];
            cut_nodes += b[t->links[i].a] != b[t->links[i].b];
        }
        ck_assert_msg(cut_auto <= cut_nodes, "%u parts: auto cuts %u links, nodes %u", parts, cut_auto, cut_nodes);
    }
    free(a);
    free(b);
    topo_free(t);
}
END_TEST

START_TEST(test_file_ranks)
{
    topo *t = two_servers(", \"rank\": 1", ", \"rank\": 0");
    ck_assert_msg(t, "%s", err);
    uint32_t part[16];
    ck_assert_int_eq(topo_partition(t, TOPO_PART_FILE, 2, part, err, sizeof err), 0);
    ck_assert_uint_eq(part[0], 1);
    ck_assert_uint_eq(part[t->n_nodes - 1], 0);
    ck_assert_int_eq(topo_partition(t, TOPO_PART_FILE, 1, part, err, sizeof err), -1);   /* rank 1 of a 1-rank run */
    ck_assert_msg(strstr(err, "node 'sw0' has rank 1") && strstr(err, "allowed 0..0"), "%s", err);
    topo_free(t);
    t = two_servers(", \"rank\": 0", "");
    ck_assert_int_eq(topo_partition(t, TOPO_PART_FILE, 2, part, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "node 'sw1' has no \"rank\""), "%s", err);
    topo_free(t);
    t = two_servers(", \"rank\": -1", "");
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, "rank is not an integer 0..65535"), "%s", err);
    t = load("ring:4");   /* a generator has no ranks */
    ck_assert_int_eq(topo_partition(t, TOPO_PART_FILE, 2, part, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "has no \"rank\""), "%s", err);
    topo_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo_part");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, test_nodes_blocks);
    tcase_add_test(tc, test_auto_cuts_the_slowest_link);
    tcase_add_test(tc, test_auto_keeps_fast_links_whole);
    tcase_add_test(tc, test_auto_balanced_and_deterministic);
    tcase_add_test(tc, test_file_ranks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
