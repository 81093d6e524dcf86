/* Topology descriptions: link presets against hand-computed spec figures,
 * every generator's node/link/port counts and structure, the example files,
 * and every refusal (each names the object, the field and what is allowed). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"
#include "models/server/server.h"
#include "check_run.h"

#ifndef LINKSTACK_SOURCE_DIR
#error "LINKSTACK_SOURCE_DIR must name the source tree (CMake sets it)"
#endif

static char err[4096];

static topo *gen(const char *spec)
{
    err[0] = 0;
    topo *t = topo_from_string(spec, "ib-ndr", err, sizeof err);
    ck_assert_msg(t, "%s: %s", spec, err);
    return t;
}

static const topo_preset *preset(const char *name)
{
    const topo_preset *p = topo_preset_find(name);
    ck_assert_msg(p, "preset %s missing", name);
    return p;
}

START_TEST(test_presets)
{
    /* Hand-computed: lane rate x lanes x encoding / 8 bits. */
    ck_assert_double_eq_tol(topo_preset_GBps(preset("pcie-gen5-x16")), 32.0 * 16 * 128 / 130 / 8, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("pcie-gen5-x16")), 63.015, 1e-3);   /* pcie.md: 63.0 */
    ck_assert_double_eq_tol(topo_preset_GBps(preset("pcie-gen3-x16")), 15.754, 1e-3);   /* system.md: 15.75 */
    ck_assert_double_eq_tol(topo_preset_GBps(preset("pcie-gen1-x1")), 0.25, 1e-12);     /* 2.5 GT/s 8b/10b */
    ck_assert_double_eq_tol(topo_preset_GBps(preset("pcie-gen6-x16")), 121.0, 1e-9);    /* 64 x 16 x 242/256 / 8 */
    ck_assert_double_eq_tol(topo_preset_GBps(preset("nvlink4")), 25.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("nvlink5")), 50.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("ib-hdr")), 25.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("ib-ndr")), 50.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("ib-xdr")), 100.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("eth-25g")), 3.125, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("eth-100g")), 12.5, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("eth-400g")), 50.0, 1e-9);
    ck_assert_double_eq_tol(topo_preset_GBps(preset("eth-800g")), 100.0, 1e-9);
    ck_assert_uint_eq(preset("ib-ndr")->overhead_bytes, 8 + 12 + 4 + 2);
    ck_assert_uint_eq(preset("pcie-gen4-x8")->overhead_bytes, 24);
    /* Every name of the issue exists, and nothing else. */
    static const char *const widths[] = { "x1", "x2", "x4", "x8", "x16" };
    char name[32];
    unsigned n = 0;
    for (int g = 1; g <= 6; g++)
        for (unsigned w = 0; w < 5; w++, n++) {
            snprintf(name, sizeof name, "pcie-gen%d-%s", g, widths[w]);
            preset(name);
        }
    static const char *const others[] = { "nvlink2", "nvlink3", "nvlink4", "nvlink5", "infinity-fabric", "hccs", "ici", "ib-hdr",
                                          "ib-ndr", "ib-xdr", "eth-25g", "eth-100g", "eth-200g", "eth-400g", "eth-800g",
                                          "roce-100g", "roce-200g", "roce-400g" };
    for (unsigned i = 0; i < sizeof others / sizeof *others; i++, n++) preset(others[i]);
    ck_assert_uint_eq(topo_preset_count(), n);
    ck_assert_ptr_null(topo_preset_find("pcie-gen7-x16"));
    for (unsigned i = 0; i < topo_preset_count(); i++) {
        const topo_preset *p = topo_preset_at(i);
        ck_assert(p->latency_ns > 0 && p->overhead_bytes > 0 && p->source && *p->source);
    }
}
END_TEST

static unsigned count_kind(const topo *t, const char *kind, unsigned nports)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].kind->name, kind)) {
            ck_assert_msg(!nports || t->nodes[i].nports == nports, "%s has %u ports, want %u", t->nodes[i].name,
                          t->nodes[i].nports, nports);
            n++;
        }
    return n;
}

/* Every port's link points back at it: the port tables and links agree. */
static void check_ports(const topo *t)
{
    unsigned used = 0;
    for (uint32_t v = 0; v < t->n_nodes; v++)
        for (unsigned p = 0; p < t->nodes[v].nports; p++) {
            unsigned pp;
            int w = topo_peer(t, v, p, &pp);
            if (w < 0) continue;
            used++;
            unsigned back;
            ck_assert_int_eq(topo_peer(t, (uint32_t)w, pp, &back), (int)v);
            ck_assert_uint_eq(back, p);
        }
    ck_assert_uint_eq(used, 2 * t->n_links);
}

static bool linked(const topo *t, const char *a, const char *b)
{
    int x = topo_node_find(t, a), y = topo_node_find(t, b);
    ck_assert(x >= 0 && y >= 0);
    for (uint32_t i = 0; i < t->n_links; i++)
        if ((t->links[i].a == (uint32_t)x && t->links[i].b == (uint32_t)y) || (t->links[i].a == (uint32_t)y && t->links[i].b == (uint32_t)x))
            return true;
    return false;
}

START_TEST(test_generators)
{
    topo *t = gen("ring:8");
    ck_assert_uint_eq(t->n_endpoints, 8);
    ck_assert_uint_eq(count_kind(t, "switch", 3), 8);
    ck_assert_uint_eq(t->n_links, 16);
    ck_assert(linked(t, "s7", "s0") && linked(t, "s3", "s4") && !linked(t, "s0", "s2") && linked(t, "h5", "s5"));
    check_ports(t);
    topo_free(t);

    t = gen("fullmesh:5");
    ck_assert_uint_eq(count_kind(t, "switch", 5), 5);
    ck_assert_uint_eq(t->n_links, 5 + 10);
    ck_assert(linked(t, "s0", "s4") && linked(t, "s2", "s3"));
    check_ports(t);
    topo_free(t);

    t = gen("star:6");
    ck_assert_uint_eq(count_kind(t, "switch", 6), 1);
    ck_assert_uint_eq(t->n_endpoints, 6);
    ck_assert_uint_eq(t->n_links, 6);
    topo_free(t);

    t = gen("mesh2d:3x4");   /* 3 rows, 4 columns */
    ck_assert_uint_eq(count_kind(t, "switch", 5), 12);
    ck_assert_uint_eq(t->n_links, 12 + 3 * 3 + 2 * 4);
    ck_assert(t->dims[0] == 4 && t->dims[1] == 3 && !t->torus);
    ck_assert(linked(t, "s0", "s1") && linked(t, "s0", "s4") && !linked(t, "s3", "s4"));
    check_ports(t);
    topo_free(t);

    t = gen("torus2d:4x4");
    ck_assert_uint_eq(count_kind(t, "switch", 5), 16);
    ck_assert_uint_eq(t->n_links, 16 + 32);
    ck_assert(linked(t, "s3", "s0") && linked(t, "s12", "s0"));
    unsigned wraps = 0;
    for (uint32_t i = 0; i < t->n_links; i++) wraps += t->links[i].wrap;
    ck_assert_uint_eq(wraps, 8);   /* one per ring: 4 rows + 4 columns */
    check_ports(t);
    topo_free(t);

    t = gen("torus3d:3x4x5");
    ck_assert_uint_eq(count_kind(t, "switch", 7), 60);
    ck_assert_uint_eq(t->n_links, 60 + 3 * 60);
    check_ports(t);
    topo_free(t);

    for (unsigned k = 2; k <= 8; k += 2) {
        char spec[32];
        snprintf(spec, sizeof spec, "fattree:%u", k);
        t = gen(spec);
        ck_assert_uint_eq(t->n_endpoints, k * k * k / 4);
        ck_assert_uint_eq(count_kind(t, "switch", k), 5 * k * k / 4);
        ck_assert_uint_eq(t->n_links, 3 * k * k * k / 4);
        check_ports(t);
        topo_free(t);
    }
    t = gen("fattree:4");
    ck_assert(linked(t, "h0", "e0_0") && linked(t, "h2", "e0_1") && linked(t, "h15", "e3_1"));
    ck_assert(linked(t, "e1_0", "a1_1") && !linked(t, "e1_0", "a0_0"));
    for (unsigned p = 0; p < 4; p++) {   /* core c_i meets agg (i / 2) of every pod */
        char a[16];
        snprintf(a, sizeof a, "a%u_1", p);
        ck_assert(linked(t, "c3", a) && linked(t, "c2", a));
        snprintf(a, sizeof a, "a%u_0", p);
        ck_assert(linked(t, "c0", a) && !linked(t, "c3", a));
    }
    topo_free(t);

    t = gen("leafspine:4,2,8");
    ck_assert_uint_eq(t->n_endpoints, 32);
    ck_assert_uint_eq(count_kind(t, "switch", 0), 6);
    ck_assert_uint_eq(t->n_links, 32 + 8);
    ck_assert_uint_eq(t->nodes[topo_node_find(t, "leaf0")].nports, 10);
    ck_assert_uint_eq(t->nodes[topo_node_find(t, "spine1")].nports, 4);
    topo_free(t);
    t = gen("leafspine:4,2,8,3");   /* 3 parallel uplinks to each spine: 8:6 oversubscribed */
    ck_assert_uint_eq(t->n_links, 32 + 24);
    ck_assert_uint_eq(t->nodes[topo_node_find(t, "leaf3")].nports, 14);
    topo_free(t);
}
END_TEST

static topo *file(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", LINKSTACK_SOURCE_DIR, rel);
    return gen(path);
}

START_TEST(test_example_files)
{
    topo *t = file("topologies/dgx_h100_like.json");
    ck_assert_uint_eq(t->n_nodes, 12);
    ck_assert_uint_eq(t->n_endpoints, 8);
    ck_assert_uint_eq(t->n_links, 8 * 18);
    ck_assert_uint_eq(t->nodes[topo_node_find(t, "gpu3")].nports, 18);
    ck_assert_uint_eq(t->nodes[topo_node_find(t, "nvs0")].nports, 64);
    ck_assert_double_eq_tol(t->links[0].GBps, 25.0, 1e-9);
    char buf[64];
    unsigned pp;
    int w = topo_peer(t, (uint32_t)topo_node_find(t, "gpu3"), 7, &pp);   /* gpu3.p7: its 3rd link to nvs1, after gpu0-2 took p0..p11 */
    ck_assert_str_eq(t->nodes[w].name, "nvs1");
    ck_assert_str_eq(topo_port_name(t, (uint32_t)w, pp, buf, sizeof buf), "nvs1.p14");
    check_ports(t);
    topo_free(t);

    t = file("topologies/leafspine_2x2.json");
    ck_assert_uint_eq(t->n_links, 12);
    ck_assert_double_eq_tol(t->links[8].latency_ns, 150, 1e-12);
    ck_assert_double_eq_tol(t->links[0].latency_ns, preset("ib-ndr")->latency_ns, 1e-12);
    topo_free(t);

    t = file("topologies/two_hosts.json");
    w = topo_peer(t, (uint32_t)topo_node_find(t, "h0"), 0, &pp);
    ck_assert_str_eq(topo_port_name(t, (uint32_t)w, pp, buf, sizeof buf), "s0.p3");
    w = topo_peer(t, (uint32_t)topo_node_find(t, "h1"), 0, &pp);
    ck_assert_str_eq(topo_port_name(t, (uint32_t)w, pp, buf, sizeof buf), "s0.p0");   /* the next free port */
    ck_assert_double_eq_tol(t->links[0].latency_ns, 50, 1e-12);
    ck_assert_double_eq_tol(t->links[1].GBps, 40, 1e-12);
    ck_assert_uint_eq(t->links[1].overhead_bytes, 82);
    ck_assert_uint_eq(t->nodes[2].nports, 8);
    topo_free(t);
}
END_TEST

/* A refused description: NULL, and the message holds every fragment given. */
static void refused_json(const char *json, const char *want1, const char *want2)
{
    err[0] = 0;
    topo *t = topo_from_json_text(json, strlen(json), "ib-ndr", err, sizeof err);
    ck_assert_msg(!t, "accepted: %s", json);
    ck_assert_msg(strstr(err, want1), "message '%s' lacks '%s'", err, want1);
    if (want2) ck_assert_msg(strstr(err, want2), "message '%s' lacks '%s'", err, want2);
}

#define NODES2 "{\"name\":\"h0\",\"kind\":\"endpoint\"},{\"name\":\"h1\",\"kind\":\"endpoint\"}"
#define SW "{\"name\":\"s0\",\"kind\":\"switch\",\"params\":{\"ports\":4}}"

START_TEST(test_json_refusals)
{
    refused_json("{\"nodes\":[{\"name\":\"r0\",\"kind\":\"router\"}],\"links\":[]}", "node 'r0': unknown kind 'router'",
                 "allowed: endpoint, switch");
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"h1\",\"preset\":\"pcie-gen7-x16\"}]}",
                 "links[0]: link 0: unknown preset 'pcie-gen7-x16'", "pcie-gen6-x16");
    refused_json("{\"nodes\":[" NODES2 ",{\"name\":\"h2\",\"kind\":\"endpoint\"}," SW "],\"links\":[{\"a\":\"h0\",\"b\":\"s0.p1\"},"
                 "{\"a\":\"h1\",\"b\":\"s0.p1\"}]}",
                 "links[1]: link 1: b='s0.p1': port used twice", "link 0 h0 - s0");
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"x9\"}]}", "b='x9': no node named 'x9'", NULL);
    refused_json("{\"nodes\":[" NODES2 ",{\"name\":\"h1\",\"kind\":\"switch\"}],\"links\":[]}", "nodes[2]: node 'h1': duplicate name", NULL);
    refused_json("{\"nodes\":[" NODES2 ",{\"name\":\"h2\",\"kind\":\"endpoint\"},{\"name\":\"h3\",\"kind\":\"endpoint\"}],"
                 "\"links\":[{\"a\":\"h0\",\"b\":\"h1\"},{\"a\":\"h2\",\"b\":\"h3\"}]}",
                 "disconnected", "'h2'");
    refused_json("{\"nodes\":[" NODES2 ",{\"name\":\"s0\",\"kind\":\"switch\",\"params\":{\"ports\":65}}],\"links\":[]}",
                 "node 's0': param ports=65: radix above the kind's limit", "allowed: 1..64 for kind switch");
    refused_json("{\"nodes\":[" NODES2 ",{\"name\":\"s0\",\"kind\":\"switch\",\"params\":{\"radix\":8}}],\"links\":[]}",
                 "node 's0': kind switch takes no param 'radix'", "allowed: ports");
    refused_json("{\"nodes\":[" NODES2 "," SW "],\"links\":[{\"a\":\"h0\",\"b\":\"s0.p4\"}]}", "port 4 above the radix of s0",
                 "p0..p3");
    refused_json("{\"nodes\":[" NODES2 "," SW "],\"links\":[{\"a\":\"h0\",\"b\":\"s0.q1\"}]}", "bad port name 'q1'", "p0..p3");
    refused_json("{\"nodes\":[" NODES2 "," SW "],\"links\":[{\"a\":\"h0\",\"b\":\"s0.p01\"}]}", "bad port name 'p01'", NULL);
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"h0\"}]}", "link 0", NULL);   /* h0 has one port */
    refused_json("{\"nodes\":[" NODES2 "," SW "],\"links\":[{\"a\":\"s0\",\"b\":\"s0\"}]}", "same node", NULL);
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"h1\",\"latency_ns\":-1}]}", "links[0]: field latency_ns",
                 ">= 0");
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"h1\",\"GBps\":0}]}", "links[0]: field GBps", "> 0");
    refused_json("{\"nodes\":[" NODES2 "],\"links\":[{\"a\":\"h0\",\"b\":\"h1\",\"rate\":5}]}", "links[0]: unknown or repeated field 'rate'",
                 "allowed: a, b, preset, latency_ns, GBps");
    refused_json("{\"nodes\":[{\"name\":\"h0\",\"kinds\":\"endpoint\"}],\"links\":[]}", "nodes[0]: unknown or repeated field 'kinds'", NULL);
    refused_json("{\"nodes\":[{\"name\":\"h0\",\"kind\":\"endpoint\",\"name\":\"h9\"}],\"links\":[]}",
                 "nodes[0]: unknown or repeated field 'name'", "once each");
    refused_json("{\"nodes\":[{\"name\":\"h.0\",\"kind\":\"endpoint\"}],\"links\":[]}", "bad name 'h.0'", NULL);
    refused_json("{\"nodes\":[{\"name\":\"h0\",\"kind\":\"endpoint\"}],\"links\":[]}", "1 endpoint(s)", "at least 2");
    refused_json("{\"nodes\":[],\"links\":[]}", "no nodes", NULL);
    refused_json("{\"links\":[]}", "field nodes missing", NULL);
    refused_json("[1,2]", "top level: not an object", NULL);
    refused_json("{\"nodes\":[],\"links\":[],\"x\":1}", "top level: unknown or repeated field 'x'", NULL);
    /* Syntax errors carry line and column. */
    refused_json("{\n  \"nodes\": [\n    {\"name\": \"h0\",, }\n  ]\n}", "JSON syntax error at line 3, column 19", NULL);
    refused_json("{\"nodes\":[],\"links\":[]} trailing", "line 1, column 25", "text after");
    refused_json("", "JSON syntax error at line 1, column 1", NULL);
    /* A switch without a ports param takes ports up to its kind's limit, then refuses. */
    char big[16384];
    int off = snprintf(big, sizeof big, "{\"nodes\":[{\"name\":\"s0\",\"kind\":\"switch\"}");
    for (int i = 0; i < 65; i++) off += snprintf(big + off, sizeof big - (size_t)off, ",{\"name\":\"h%d\",\"kind\":\"endpoint\"}", i);
    off += snprintf(big + off, sizeof big - (size_t)off, "],\"links\":[");
    for (int i = 0; i < 65; i++) off += snprintf(big + off, sizeof big - (size_t)off, "%s{\"a\":\"h%d\",\"b\":\"s0\"}", i ? "," : "", i);
    snprintf(big + off, sizeof big - (size_t)off, "]}");
    refused_json(big, "links[64]", "every port of s0 is in use (radix 64, kind switch limit 64)");
}
END_TEST

static void refused_gen(const char *spec, const char *want)
{
    err[0] = 0;
    topo *t = topo_from_string(spec, "ib-ndr", err, sizeof err);
    ck_assert_msg(!t, "accepted: %s", spec);
    ck_assert_msg(strstr(err, want), "%s: message '%s' lacks '%s'", spec, err, want);
}

START_TEST(test_generator_refusals)
{
    refused_gen("blah:3", "unknown generator 'blah'");
    refused_gen("ring:2", "ring: N=2 out of range; allowed: 3..4096");
    refused_gen("ring:x", "ring: bad sizes 'x'");
    refused_gen("ring:", "ring: bad sizes ''");
    refused_gen("ring:-4", "bad sizes");
    refused_gen("ring:99999999", "bad sizes");
    refused_gen("ring:4x4", "bad sizes");
    refused_gen("torus2d:4x", "bad sizes");
    refused_gen("torus2d:2x4", "R=2 out of range; allowed: 3..256");
    refused_gen("torus3d:4x4", "bad sizes");
    refused_gen("mesh2d:1x1", "one node");
    refused_gen("mesh2d:257x2", "R=257");
    refused_gen("fattree:5", "K=5 is odd");
    refused_gen("fattree:66", "K=66 out of range; allowed: 2..64");
    refused_gen("fullmesh:65", "N=65 out of range; allowed: 2..64");
    refused_gen("star:1", "N=1 out of range");
    refused_gen("leafspine:2,60,8", "a leaf needs HOSTS_PER_LEAF + SPINES x UPLINKS = 68 ports; allowed: <= 64");
    refused_gen("leafspine:40,2,8,2", "a spine needs LEAVES x UPLINKS = 80 ports");
    refused_gen("leafspine:2,2", "bad sizes");
    refused_gen("leafspine:1,1,1", "1 host(s)");
    refused_gen("/no/such/file.json", "cannot open '/no/such/file.json'");
    refused_gen("", "empty");
    /* the network kinds (models/network) are not registered here: auto stays generic, network insists */
    refused_gen("leafspine:2,2,2,kinds=network", "kinds ib_rnic and ib_switch are not registered");
    refused_gen("leafspine:2,2,2,kinds=maybe", "allowed: auto, generic, network");
    refused_gen("leafspine:kinds=auto", "kinds= must come last");
    err[0] = 0;
    topo *gt = topo_from_string("leafspine:2,2,2,kinds=auto", "ib-ndr", err, sizeof err);
    ck_assert_msg(gt != NULL, "%s", err);
    ck_assert_str_eq(gt->nodes[0].kind->name, "endpoint");
    topo_free(gt);
    ck_assert_ptr_null(topo_from_string("ring:4", "nvlink9", err, sizeof err));
    ck_assert_msg(strstr(err, "link: unknown preset 'nvlink9'"), "%s", err);
}
END_TEST

/* The runner-facing wrapper exits with status 2, as every input error does. */
START_TEST(test_exit_status)
{
    topo_from_string_or_exit("torus2d:2x2", "ib-ndr");
}
END_TEST

START_TEST(test_builder_api)
{
    /* The programmatic path the fabric layer uses: same checks, same names. */
    topo *t = topo_new("nvlink4", err, sizeof err);
    ck_assert_ptr_nonnull(t);
    const char *p8[] = { "ports=8", NULL };
    ck_assert_int_eq(topo_add_node(t, "gpu0", "endpoint", NULL, err, sizeof err), 0);
    ck_assert_int_eq(topo_add_node(t, "gpu1", "endpoint", NULL, err, sizeof err), 1);
    ck_assert_int_eq(topo_add_node(t, "sw", "switch", p8, err, sizeof err), 2);
    ck_assert_int_eq(topo_add_link(t, "gpu0", "sw.p7", NULL, -1, -1, err, sizeof err), 0);
    ck_assert_int_eq(topo_add_link(t, "gpu1", "sw", "pcie-gen5-x16", 300, -1, err, sizeof err), 1);
    ck_assert_int_eq(topo_add_link(t, "gpu1", "sw", NULL, -1, -1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "every port of gpu1 is in use (radix 1"), "%s", err);
    ck_assert_int_eq(topo_finish(t, err, sizeof err), 0);
    ck_assert_uint_eq(t->links[1].b_port, 0);
    ck_assert_double_eq_tol(t->links[1].latency_ns, 300, 1e-12);
    ck_assert_double_eq_tol(t->links[1].GBps, topo_preset_GBps(preset("pcie-gen5-x16")), 1e-12);
    ck_assert_uint_eq(t->n_endpoints, 2);
    ck_assert_uint_eq(t->endpoint_node[1], 1);
    ck_assert_int_eq(topo_node_param(t, 2, "ports", -1), 8);
    ck_assert_int_eq(topo_node_param(t, 0, "ports", -1), -1);
    topo_free(t);
}
END_TEST

/* A kind a later model registers: its own port prefix, limit and params. */
static const topo_kind kind_gpu_test = { "gpu_test", "nvl", 18, 18, false, "ports|hbm_GB", "a GPU-like terminal for this test" };

START_TEST(test_registered_kind)
{
    topo_kind_register(&kind_gpu_test);
    ck_assert_ptr_eq(topo_kind_find("gpu_test"), &kind_gpu_test);
    const char *json = "{\"nodes\":[{\"name\":\"gpu0\",\"kind\":\"gpu_test\",\"params\":{\"hbm_GB\":80}},"
                       "{\"name\":\"gpu1\",\"kind\":\"gpu_test\"}],"
                       "\"links\":[{\"a\":\"gpu0.nvl3\",\"b\":\"gpu1\",\"preset\":\"nvlink4\"},{\"a\":\"gpu0\",\"b\":\"gpu1.nvl17\"}]}";
    topo *t = topo_from_json_text(json, strlen(json), "nvlink4", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    char buf[64];
    ck_assert_uint_eq(t->nodes[0].nports, 18);   /* the kind's default radix */
    ck_assert_str_eq(topo_port_name(t, 0, t->links[0].a_port, buf, sizeof buf), "gpu0.nvl3");
    ck_assert_str_eq(topo_port_name(t, 1, t->links[0].b_port, buf, sizeof buf), "gpu1.nvl0");
    ck_assert_str_eq(topo_port_name(t, 0, t->links[1].a_port, buf, sizeof buf), "gpu0.nvl0");
    ck_assert_int_eq(topo_node_param(t, 0, "hbm_GB", 0), 80);
    topo_free(t);
    json = "{\"nodes\":[{\"name\":\"gpu0\",\"kind\":\"gpu_test\"},{\"name\":\"gpu1\",\"kind\":\"gpu_test\"}],"
           "\"links\":[{\"a\":\"gpu0.nvl18\",\"b\":\"gpu1\"}]}";
    ck_assert_ptr_null(topo_from_json_text(json, strlen(json), "nvlink4", err, sizeof err));
    ck_assert_msg(strstr(err, "port 18 above the radix of gpu0 (kind gpu_test: nvl0..nvl17)"), "%s", err);
    json = "{\"nodes\":[{\"name\":\"gpu0\",\"kind\":\"gpu_test\",\"params\":{\"ports\":19}}],\"links\":[]}";
    ck_assert_ptr_null(topo_from_json_text(json, strlen(json), "nvlink4", err, sizeof err));
    ck_assert_msg(strstr(err, "allowed: 1..18 for kind gpu_test"), "%s", err);
}
END_TEST

/* server: NICs under the switches beside the GPUs (DGX H100: two GPU/NIC pairs per switch). */
START_TEST(test_server_nics)
{
    server_register_kinds();
    topo *t = topo_from_string("server:gpus=8,nics=8,gen=5,switches=4", "pcie-gen5-x16", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    ck_assert_uint_eq(t->n_nodes, 1 + 4 + 8 + 8);
    ck_assert_uint_eq(t->n_links, 4 + 8 + 8);
    char buf[64];
    for (unsigned i = 0; i < 8; i++) {
        char g[8], n[8];
        snprintf(g, sizeof g, "gpu%u", i);
        snprintf(n, sizeof n, "nic%u", i);
        int gi = topo_node_find(t, g), ni = topo_node_find(t, n);
        ck_assert_int_ge(ni, 0);
        ck_assert_str_eq(t->nodes[ni].kind->name, "nic");
        int gsw = topo_peer(t, (uint32_t)gi, 0, NULL), nsw = topo_peer(t, (uint32_t)ni, 0, NULL);
        ck_assert_int_eq(gsw, nsw);   /* nic i shares gpu i's switch */
        snprintf(buf, sizeof buf, "sw%u", i / 2);
        ck_assert_str_eq(t->nodes[nsw].name, buf);
    }
    topo_free(t);
    t = topo_from_string("server:gpus=8,nics=0,gen=5,switches=4", "pcie-gen5-x16", err, sizeof err);
    ck_assert_msg(t, "%s", err);
    ck_assert_uint_eq(t->n_nodes, 1 + 4 + 8);
    topo_free(t);
    ck_assert_ptr_null(topo_from_string("server:gpus=8,nics=6,gen=5,switches=4", "pcie-gen5-x16", err, sizeof err));
    ck_assert_msg(strstr(err, "nics=6 over switches=4; allowed: 0 or a multiple of switches (4, 8, ...)"), "%s", err);
}
END_TEST

/* simrun list-presets prints every preset with its computed rate. */
START_TEST(test_list_presets)
{
    FILE *f = popen(LINKSTACK_SIMRUN " list-presets", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    unsigned rows = 0;
    bool gen5 = false;
    while (fgets(line, sizeof line, f)) {
        for (unsigned i = 0; i < topo_preset_count(); i++) {
            const char *name = topo_preset_at(i)->name;
            size_t n = strlen(name);
            if (!strncmp(line, name, n) && line[n] == ' ') rows++;
        }
        if (!strncmp(line, "pcie-gen5-x16 ", 14) && strstr(line, " 63.015 ")) gen5 = true;
    }
    ck_assert_int_eq(pclose(f), 0);
    ck_assert_uint_eq(rows, topo_preset_count());
    ck_assert(gen5);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("topo");
    tcase_add_test(tc, test_presets);
    tcase_add_test(tc, test_generators);
    tcase_add_test(tc, test_example_files);
    tcase_add_test(tc, test_json_refusals);
    tcase_add_test(tc, test_generator_refusals);
    tcase_add_exit_test(tc, test_exit_status, 2);
    tcase_add_test(tc, test_builder_api);
    tcase_add_test(tc, test_list_presets);
    tcase_add_test(tc, test_registered_kind);
    tcase_add_test(tc, test_server_nics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
