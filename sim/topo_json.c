/* The topology file: {"nodes":[{"name","kind","params"}],
 * "links":[{"a","b","preset","latency_ns","GBps"}]}. Every field is checked;
 * an unknown one is refused (nothing silently ignored). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"
#include "sim/topo.h"

#define TOPO_FILE_MAX_BYTES (64u << 20)


/* Line and column (1-based) of byte offset off, for parse errors. */
static void line_col(const char *text, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') ++*line, *col = 1;
        else ++*col;
    }
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool only_fields(const cJSON *o, const char *const *allowed, char *bad, size_t n)
{
    for (const cJSON *f = o->child; f; f = f->next) {
        bool ok = false;
        for (unsigned i = 0; allowed[i]; i++)
            if (f->string && !strcmp(f->string, allowed[i])) ok = true;
        for (const cJSON *g = o->child; ok && g != f; g = g->next)
            if (g->string && f->string && !strcmp(g->string, f->string)) ok = false;   /* given twice */
        if (!ok) {
            snprintf(bad, n, "%s", f->string ? f->string : "");
            return false;
        }
    }
    return true;
}

static topo *read_nodes(topo *t, const cJSON *nodes, char *err, size_t errlen)
{
    static const char *const node_fields[] = { "name", "kind", "params", "rank", NULL };
    unsigned i = 0;
    for (const cJSON *n = nodes->child; n; n = n->next, i++) {
        char bad[128];
        if (!cJSON_IsObject(n)) return topo_fail(t, err, errlen, "nodes[%u]: not an object; allowed: {\"name\",\"kind\",\"params\"}", i);
        if (!only_fields(n, node_fields, bad, sizeof bad))
            return topo_fail(t, err, errlen, "nodes[%u]: unknown or repeated field '%s'; allowed: name, kind, params, rank, once each", i, bad);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(n, "name");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(n, "kind");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(n, "params");
        if (!cJSON_IsString(name)) return topo_fail(t, err, errlen, "nodes[%u]: field name missing or not a string", i);
        if (!cJSON_IsString(kind))
            return topo_fail(t, err, errlen, "nodes[%u] '%s': field kind missing or not a string", i, name->valuestring);
        /* params: an object of integers, passed on as "key=value". */
        char buf[8][96];
        const char *list[9];
        unsigned np = 0;
        if (params) {
            if (!cJSON_IsObject(params))
                return topo_fail(t, err, errlen, "nodes[%u] '%s': field params is not an object", i, name->valuestring);
            for (const cJSON *p = params->child; p; p = p->next) {
                if (np == 8) return topo_fail(t, err, errlen, "nodes[%u] '%s': more than 8 params", i, name->valuestring);
                double v = p->valuedouble;
                if (!cJSON_IsNumber(p) || !isfinite(v) || v != floor(v) || fabs(v) > 1e9)
                    return topo_fail(t, err, errlen, "nodes[%u] '%s': param '%s' is not an integer", i, name->valuestring,
                                  p->string ? p->string : "");
                snprintf(buf[np], sizeof buf[np], "%.40s=%.0f", p->string ? p->string : "", v);
                list[np] = buf[np];
                np++;
            }
        }
        list[np] = NULL;
        char e2[1024];
        int id = topo_add_node(t, name->valuestring, kind->valuestring, list, e2, sizeof e2);
        if (id < 0) return topo_fail(t, err, errlen, "nodes[%u]: %s", i, e2);
        const cJSON *rank = cJSON_GetObjectItemCaseSensitive(n, "rank");   /* partition=file */
        if (rank) {
            double v = rank->valuedouble;
            if (!cJSON_IsNumber(rank) || v != floor(v) || v < 0 || v > 65535)
                return topo_fail(t, err, errlen, "nodes[%u] '%s': rank is not an integer 0..65535", i, name->valuestring);
            t->nodes[id].rank = (int32_t)v;
        }
    }
    return t;
}

static bool opt_number(const cJSON *l, const char *key, double *v)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(l, key);
    if (!f) return true;
    if (!cJSON_IsNumber(f)) return false;
    *v = f->valuedouble;
    return true;
}

static topo *read_links(topo *t, const cJSON *links, char *err, size_t errlen)
{
    static const char *const link_fields[] = { "a", "b", "preset", "latency_ns", "GBps", NULL };
    unsigned i = 0;
    for (const cJSON *l = links->child; l; l = l->next, i++) {
        char bad[128];
        if (!cJSON_IsObject(l)) return topo_fail(t, err, errlen, "links[%u]: not an object; allowed: {\"a\",\"b\",\"preset\",...}", i);
        if (!only_fields(l, link_fields, bad, sizeof bad))
            return topo_fail(t, err, errlen, "links[%u]: unknown or repeated field '%s'; allowed: a, b, preset, latency_ns, GBps, once each", i, bad);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(l, "a");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(l, "b");
        const cJSON *preset = cJSON_GetObjectItemCaseSensitive(l, "preset");
        if (!cJSON_IsString(a) || !cJSON_IsString(b))
            return topo_fail(t, err, errlen, "links[%u]: fields a and b must be strings (node or node.port)", i);
        if (preset && !cJSON_IsString(preset))
            return topo_fail(t, err, errlen, "links[%u]: field preset is not a string", i);
        double lat = -1, gbps = -1;   /* < 0: the preset's */
        bool has_lat = cJSON_GetObjectItemCaseSensitive(l, "latency_ns"), has_gbps = cJSON_GetObjectItemCaseSensitive(l, "GBps");
        if (!opt_number(l, "latency_ns", &lat) || (has_lat && !(lat >= 0 && lat <= 1e9)))
            return topo_fail(t, err, errlen, "links[%u]: field latency_ns must be a number >= 0 (up to 1e9)", i);
        if (!opt_number(l, "GBps", &gbps) || (has_gbps && !(gbps > 0 && gbps <= 1e5)))
            return topo_fail(t, err, errlen, "links[%u]: field GBps must be a number > 0 (up to 1e5)", i);
        char e2[2048];
        if (topo_add_link(t, a->valuestring, b->valuestring, preset ? preset->valuestring : NULL, lat, gbps, e2,
                          sizeof e2) < 0)
            return topo_fail(t, err, errlen, "links[%u]: %s", i, e2);
    }
    return t;
}

topo *topo_from_json_text(const char *text, size_t len, const char *default_preset, char *err, size_t errlen)
{
    topo *t = topo_new(default_preset, err, errlen);
    if (!t) return NULL;
    /* cJSON wants a terminated string; a NUL inside the text is an error at its offset. */
    char *buf = malloc(len + 1);
    if (!buf) sim_fatal("out of memory");
    memcpy(buf, text, len);
    buf[len] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    size_t stop = root ? (size_t)(end - buf) : 0;
    if (root) {
        while (stop < len && is_blank(buf[stop])) stop++;
    }
    if (!root || stop < len) {
        size_t off = root ? stop : (end ? (size_t)(end - buf) : 0);
        if (off > len) off = len;
        /* cJSON stops past the token it could not use (and past blanks):
         * point at that token, the last non-blank before the stop. */
        if (!root)
            while (off > 0 && (off == len || is_blank(buf[off]))) off--;
        unsigned line, col;
        line_col(buf, off, &line, &col);
        cJSON_Delete(root);
        free(buf);
        return topo_fail(t, err, errlen, "JSON syntax error at line %u, column %u%s", line, col,
                      root ? " (text after the top-level value)" : "");
    }
    free(buf);
    static const char *const top_fields[] = { "nodes", "links", NULL };
    char bad[128];
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
    if (!cJSON_IsObject(root)) t = topo_fail(t, err, errlen, "top level: not an object; allowed: {\"nodes\":[...],\"links\":[...]}");
    else if (!only_fields(root, top_fields, bad, sizeof bad))
        t = topo_fail(t, err, errlen, "top level: unknown or repeated field '%s'; allowed: nodes, links, once each", bad);
    else if (!cJSON_IsArray(nodes)) t = topo_fail(t, err, errlen, "top level: field nodes missing or not an array");
    else if (!cJSON_IsArray(links)) t = topo_fail(t, err, errlen, "top level: field links missing or not an array");
    else if ((t = read_nodes(t, nodes, err, errlen)) && (t = read_links(t, links, err, errlen))) {
        if (topo_finish(t, err, errlen)) t = topo_fail(t, NULL, 0, "%s", "");
    }
    cJSON_Delete(root);
    return t;
}

topo *topo_from_json_file(const char *path, const char *default_preset, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s' (%s); allowed: a JSON topology file or a generator: %s", path,
                 strerror(errno), topo_generators_help());
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    if (!text) sim_fatal("out of memory");
    for (;;) {
        if (len == cap) {
            if (cap >= TOPO_FILE_MAX_BYTES) {
                fclose(f);
                free(text);
                snprintf(err, errlen, "'%s': larger than %u MB", path, TOPO_FILE_MAX_BYTES >> 20);
                return NULL;
            }
            cap *= 2;
            text = realloc(text, cap);
            if (!text) sim_fatal("out of memory");
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        snprintf(err, errlen, "'%s': read error", path);
        return NULL;
    }
    char e2[2048];
    topo *t = topo_from_json_text(text, len, default_preset, e2, sizeof e2);
    free(text);
    if (!t) snprintf(err, errlen, "%s: %s", path, e2);
    return t;
}
