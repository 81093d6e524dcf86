/* The topology graph: kinds, nodes, links, ports and their validation. */
#include "sim/topo.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"

/* ---- kinds ---- */
static const topo_kind kind_endpoint = {
    "endpoint", "p", TOPO_MAX_PORTS, 1, false, "ports",
    "a traffic source and sink; one port unless param ports (a GPU's links); never forwards",
};
static const topo_kind kind_switch = {
    "switch", "p", TOPO_MAX_PORTS, 1, true, "ports|nvls",
    "a crossbar switch (VOQs, allocator, credits, multicast); radix = param ports (default: its links), <= 64; "
    "nvls=1: an in-switch reduction unit (NVLink SHARP)",
};

#define MAX_KINDS 32
static const topo_kind *kinds[MAX_KINDS] = { &kind_endpoint, &kind_switch };
static unsigned n_kinds = 2;

void topo_kind_register(const topo_kind *k)
{
    if (n_kinds == MAX_KINDS) sim_fatal("too many topology kinds (max %d)", MAX_KINDS);
    if (k->max_ports == 0 || k->max_ports > TOPO_MAX_PORTS || k->default_ports > k->max_ports)
        sim_fatal("topology kind %s: bad port limits", k->name);
    for (unsigned i = 0; i < n_kinds; i++)
        if (!strcmp(kinds[i]->name, k->name)) sim_fatal("topology kind %s registered twice", k->name);
    kinds[n_kinds++] = k;
}

const topo_kind *topo_kind_find(const char *name)
{
    for (unsigned i = 0; name && i < n_kinds; i++)
        if (!strcmp(kinds[i]->name, name)) return kinds[i];
    return NULL;
}

unsigned topo_kind_count(void) { return n_kinds; }
const topo_kind *topo_kind_at(unsigned i) { return i < n_kinds ? kinds[i] : NULL; }

static void kind_names(char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < n_kinds && off + 1 < n; i++) {
        int w = snprintf(buf + off, n - off, "%s%s", i ? ", " : "", kinds[i]->name);
        if (w < 0) break;
        off += (size_t)w;
    }
}

/* ---- name index: open addressing over node ids ---- */
typedef struct name_index {
    uint32_t *slot;   /* node id + 1, 0 empty */
    uint32_t cap;     /* power of two */
} name_index;

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void index_insert(topo *t, uint32_t id)
{
    name_index *ix = t->index;
    if ((t->n_nodes + 1) * 2 > ix->cap) {   /* grow and rehash */
        uint32_t cap = ix->cap ? ix->cap * 2 : 64;
        while ((t->n_nodes + 1) * 2 > cap) cap *= 2;
        uint32_t *slot = calloc(cap, sizeof *slot);
        if (!slot) sim_fatal("out of memory");
        for (uint32_t i = 0; i < ix->cap; i++)
            if (ix->slot[i]) {
                uint32_t h = name_hash(t->nodes[ix->slot[i] - 1].name) & (cap - 1);
                while (slot[h]) h = (h + 1) & (cap - 1);
                slot[h] = ix->slot[i];
            }
        free(ix->slot);
        ix->slot = slot;
        ix->cap = cap;
    }
    uint32_t h = name_hash(t->nodes[id].name) & (ix->cap - 1);
    while (ix->slot[h]) h = (h + 1) & (ix->cap - 1);
    ix->slot[h] = id + 1;
}

int topo_node_find(const topo *t, const char *name)
{
    const name_index *ix = t->index;
    if (!ix->cap) return -1;
    for (uint32_t h = name_hash(name) & (ix->cap - 1); ix->slot[h]; h = (h + 1) & (ix->cap - 1))
        if (!strcmp(t->nodes[ix->slot[h] - 1].name, name)) return (int)ix->slot[h] - 1;
    return -1;
}

/* ---- building ---- */
static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

topo *topo_new(const char *default_preset, char *err, size_t errlen)
{
    const topo_preset *p = topo_preset_find(default_preset);
    if (!p) {
        char names[2048];
        topo_preset_names(names, sizeof names);
        fail(err, errlen, "link: unknown preset '%s'; allowed: %s", default_preset ? default_preset : "(none)", names);
        return NULL;
    }
    topo *t = calloc(1, sizeof *t);
    name_index *ix = calloc(1, sizeof *ix);
    if (!t || !ix) sim_fatal("out of memory");
    t->index = ix;
    t->default_preset = p;
    t->dims[0] = t->dims[1] = t->dims[2] = 1;
    snprintf(t->generator, sizeof t->generator, "file");
    return t;
}

void topo_free(topo *t)
{
    if (!t) return;
    for (uint32_t i = 0; i < t->n_nodes; i++) free(t->nodes[i].port_link);
    free(t->nodes);
    free(t->links);
    free(t->endpoint_node);
    free(t->params);
    if (t->index) free(((name_index *)t->index)->slot);
    free(t->index);
    free(t);
}

topo *topo_fail(topo *t, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    topo_free(t);
    return NULL;
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > TOPO_NAME_MAX) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return false;
    return true;
}

static bool kind_takes(const topo_kind *k, const char *param, size_t len)
{
    for (const char *p = k->params; *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncmp(p, param, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

/* Without a ports param a forwarding kind's radix grows with its links up to
 * the kind's limit; a terminal has its kind's default. */
static unsigned radix_limit(const topo_node *n)
{
    return n->nports ? n->nports : n->kind->forwards ? n->kind->max_ports : n->kind->default_ports;
}

int topo_add_node(topo *t, const char *name, const char *kind, const char *const *params, char *err, size_t errlen)
{
    if (t->finished) sim_fatal("topo_add_node after topo_finish");
    if (!name || !valid_name(name))
        return fail(err, errlen, "node %u: bad name '%s'; allowed: 1..%d of A-Z a-z 0-9 _ -", t->n_nodes,
                    name ? name : "(none)", TOPO_NAME_MAX);
    const topo_kind *k = topo_kind_find(kind);
    if (!k) {
        char names[512];
        kind_names(names, sizeof names);
        return fail(err, errlen, "node '%s': unknown kind '%s'; allowed: %s", name, kind ? kind : "(none)", names);
    }
    if (topo_node_find(t, name) >= 0) return fail(err, errlen, "node '%s': duplicate name", name);
    if (t->n_nodes >= (1u << 24)) return fail(err, errlen, "node '%s': too many nodes (max %u)", name, 1u << 24);
    long ports = -1;
    unsigned np = 0;
    for (unsigned i = 0; params && params[i]; i++) {
        const char *eq = strchr(params[i], '=');
        size_t klen = eq ? (size_t)(eq - params[i]) : strlen(params[i]);
        if (!kind_takes(k, params[i], klen))
            return fail(err, errlen, "node '%s': kind %s takes no param '%.*s'; allowed: %s", name, k->name, (int)klen,
                        params[i], *k->params ? k->params : "none");
        for (unsigned j = 0; j < i; j++)
            if (!strncmp(params[j], params[i], klen + 1))
                return fail(err, errlen, "node '%s': param '%.*s' given twice", name, (int)klen, params[i]);
        if (klen >= sizeof t->params[0].name || ++np > 255)
            return fail(err, errlen, "node '%s': param '%.*s': name too long or too many params", name, (int)klen, params[i]);
        char *end = NULL;
        long v = eq ? strtol(eq + 1, &end, 10) : -1;
        if (!eq || !eq[1] || *end)
            return fail(err, errlen, "node '%s': param ports='%s' is not a number; allowed: 1..%u for kind %s", name,
                        eq ? eq + 1 : "", k->max_ports, k->name);
        if (strncmp(params[i], "ports=", 6)) continue;
        if (v < 1 || v > (long)k->max_ports)
            return fail(err, errlen, "node '%s': param ports=%ld: radix above the kind's limit or below 1; allowed: 1..%u for kind %s",
                        name, v, k->max_ports, k->name);
        ports = v;
    }
    uint32_t first_param = t->n_params;
    for (unsigned i = 0; params && params[i]; i++) {   /* all valid: keep them */
        const char *eq = strchr(params[i], '=');
        if ((t->n_params & (t->n_params - 1)) == 0) {
            size_t cap = t->n_params < 16 ? 16 : (size_t)t->n_params * 2;
            t->params = realloc(t->params, cap * sizeof *t->params);
            if (!t->params) sim_fatal("out of memory");
        }
        topo_param *tp = &t->params[t->n_params++];
        snprintf(tp->name, sizeof tp->name, "%.*s", (int)(eq - params[i]), params[i]);
        tp->value = strtol(eq + 1, NULL, 10);
    }
    if ((t->n_nodes & (t->n_nodes - 1)) == 0) {   /* grow at powers of two */
        size_t cap = t->n_nodes < 16 ? 16 : (size_t)t->n_nodes * 2;
        t->nodes = realloc(t->nodes, cap * sizeof *t->nodes);
        if (!t->nodes) sim_fatal("out of memory");
    }
    topo_node *n = &t->nodes[t->n_nodes];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->kind = k;
    /* Without a ports param the radix grows with the links up to the kind's
     * limit; a given one is fixed. Both are stored as max here: nports is
     * the declared radix (0 = not declared) until topo_finish. */
    n->nports = ports > 0 ? (unsigned)ports : 0;
    unsigned lim = radix_limit(n);
    n->port_link = malloc(lim * sizeof *n->port_link);
    if (!n->port_link) sim_fatal("out of memory");
    for (unsigned p = 0; p < lim; p++) n->port_link[p] = -1;
    n->endpoint = -1;
    n->rank = -1;
    n->coord[0] = n->coord[1] = n->coord[2] = -1;
    n->level = 255;
    n->first_param = first_param;
    n->n_params = (uint8_t)np;
    index_insert(t, t->n_nodes);
    return (int)t->n_nodes++;
}


/* Resolves "node" or "node.port" to (node, port); a bare node takes its
 * lowest free port. which = "a" or "b", for messages. */
static int resolve_end(topo *t, unsigned link, const char *which, const char *end, uint32_t *node, unsigned *port,
                       char *err, size_t errlen)
{
    if (!end || !*end) return fail(err, errlen, "link %u: field %s is empty; allowed: node or node.port", link, which);
    char name[TOPO_NAME_MAX + 1];
    const char *dot = strchr(end, '.');
    size_t nlen = dot ? (size_t)(dot - end) : strlen(end);
    if (nlen > TOPO_NAME_MAX) return fail(err, errlen, "link %u: %s='%s': no such node", link, which, end);
    memcpy(name, end, nlen);
    name[nlen] = 0;
    int id = topo_node_find(t, name);
    if (id < 0) return fail(err, errlen, "link %u: %s='%s': no node named '%s'", link, which, end, name);
    topo_node *n = &t->nodes[id];
    unsigned lim = radix_limit(n);
    if (!dot) {
        unsigned p = 0;
        while (p < lim && n->port_link[p] >= 0) p++;
        if (p == lim)
            return fail(err, errlen, "link %u: %s='%s': every port of %s is in use (radix %u%s, kind %s limit %u)", link,
                        which, end, name, lim, n->nports ? ", param ports" : "", n->kind->name, n->kind->max_ports);
        *node = (uint32_t)id;
        *port = p;
        return 0;
    }
    const char *pre = n->kind->port_prefix;
    size_t plen = strlen(pre);
    const char *num = dot + 1;
    char *stop = NULL;
    long v = -1;
    if (!strncmp(num, pre, plen) && isdigit((unsigned char)num[plen])) v = strtol(num + plen, &stop, 10);
    if (v < 0 || *stop || (num[plen] == '0' && num[plen + 1]))
        return fail(err, errlen, "link %u: %s='%s': bad port name '%s'; allowed: %s0..%s%u", link, which, end, num, pre,
                    pre, lim - 1);
    if (v >= (long)lim)
        return fail(err, errlen, "link %u: %s='%s': port %ld above the radix of %s (kind %s: %s0..%s%u)", link, which,
                    end, v, name, n->kind->name, pre, pre, lim - 1);
    if (n->port_link[v] >= 0) {
        const topo_link *o = &t->links[n->port_link[v]];
        return fail(err, errlen, "link %u: %s='%s': port used twice (link %d %s - %s already uses it)", link, which, end,
                    n->port_link[v], t->nodes[o->a].name, t->nodes[o->b].name);
    }
    *node = (uint32_t)id;
    *port = (unsigned)v;
    return 0;
}

int topo_add_link(topo *t, const char *a_end, const char *b_end, const char *preset, double latency_ns, double GBps,
                  char *err, size_t errlen)
{
    if (t->finished) sim_fatal("topo_add_link after topo_finish");
    unsigned li = t->n_links;
    const topo_preset *p = preset ? topo_preset_find(preset) : t->default_preset;
    if (!p) {
        char names[2048];
        topo_preset_names(names, sizeof names);
        return fail(err, errlen, "link %u: unknown preset '%s'; allowed: %s", li, preset, names);
    }
    if (!isfinite(latency_ns) || latency_ns > 1e9)
        return fail(err, errlen, "link %u: latency_ns=%g; allowed: 0..1e9 (omit for the preset's %g)", li, latency_ns,
                    p->latency_ns);
    if (!isfinite(GBps) || GBps == 0 || GBps > 1e5)
        return fail(err, errlen, "link %u: GBps=%g; allowed: > 0 up to 1e5 (omit for the preset's %g)", li, GBps,
                    topo_preset_GBps(p));
    uint32_t a, b;
    unsigned ap, bp;
    if (resolve_end(t, li, "a", a_end, &a, &ap, err, errlen)) return -1;
    /* Reserve a's port before resolving b: "s0" - "s0.p0" must not share it. */
    t->nodes[a].port_link[ap] = (int32_t)li;
    if (resolve_end(t, li, "b", b_end, &b, &bp, err, errlen)) {
        t->nodes[a].port_link[ap] = -1;
        return -1;
    }
    if (a == b) {
        t->nodes[a].port_link[ap] = -1;
        return fail(err, errlen, "link %u: a='%s' and b='%s' are the same node; a link joins two nodes", li, a_end, b_end);
    }
    t->nodes[b].port_link[bp] = (int32_t)li;
    if ((t->n_links & (t->n_links - 1)) == 0) {
        size_t cap = t->n_links < 16 ? 16 : (size_t)t->n_links * 2;
        t->links = realloc(t->links, cap * sizeof *t->links);
        if (!t->links) sim_fatal("out of memory");
    }
    topo_link *l = &t->links[t->n_links++];
    memset(l, 0, sizeof *l);
    l->a = a;
    l->b = b;
    l->a_port = (uint8_t)ap;
    l->b_port = (uint8_t)bp;
    l->preset = p;
    l->GBps = GBps < 0 ? topo_preset_GBps(p) : GBps;
    l->latency_ns = latency_ns < 0 ? p->latency_ns : latency_ns;
    l->overhead_bytes = p->overhead_bytes;
    l->dim = -1;
    return (int)li;
}

/* Terminals never forward, so connected is not enough: every endpoint must
 * reach every other through switches (or a direct link). The usual case, one
 * switch fabric that every terminal touches, is checked in linear time. */
static int check_terminal_reach(const topo *t, char *err, size_t errlen)
{
    uint32_t *comp = malloc(t->n_nodes * sizeof *comp), *queue = malloc(t->n_nodes * sizeof *queue);
    if (!comp || !queue) sim_fatal("out of memory");
    uint32_t n_comp = 0;
    for (uint32_t v = 0; v < t->n_nodes; v++) comp[v] = UINT32_MAX;
    for (uint32_t v = 0; v < t->n_nodes; v++) {
        if (!t->nodes[v].kind->forwards || comp[v] != UINT32_MAX) continue;
        uint32_t head = 0, tail = 0;
        comp[v] = n_comp;
        queue[tail++] = v;
        while (head < tail) {
            uint32_t u = queue[head++];
            for (unsigned p = 0; p < t->nodes[u].nports; p++) {
                int w = topo_peer(t, u, p, NULL);
                if (w >= 0 && t->nodes[w].kind->forwards && comp[w] == UINT32_MAX) comp[w] = n_comp, queue[tail++] = (uint32_t)w;
            }
        }
        n_comp++;
    }
    bool simple = n_comp == 1;
    for (uint32_t e = 0; simple && e < t->n_endpoints; e++) {
        uint32_t v = t->endpoint_node[e];
        bool touches = false;
        for (unsigned p = 0; p < t->nodes[v].nports; p++) {
            int w = topo_peer(t, v, p, NULL);
            if (w >= 0 && t->nodes[w].kind->forwards) touches = true;
        }
        simple = touches;
    }
    free(comp);
    free(queue);
    if (simple) return 0;
    if (t->n_endpoints > 2048)
        return fail(err, errlen, "links: %u endpoints not all on one switch fabric: too many to check reachability (max 2048)",
                    t->n_endpoints);
    uint32_t *dist = malloc(t->n_nodes * sizeof *dist);
    if (!dist) sim_fatal("out of memory");
    int rc = 0;
    for (uint32_t d = 0; d < t->n_endpoints && !rc; d++) {
        topo_bfs_to(t, t->endpoint_node[d], dist);
        for (uint32_t s = 0; s < t->n_endpoints && !rc; s++)
            if (dist[t->endpoint_node[s]] == UINT32_MAX)
                rc = fail(err, errlen, "links: endpoint '%s' cannot reach endpoint '%s' without passing through an endpoint (endpoints do not forward)",
                          t->nodes[t->endpoint_node[s]].name, t->nodes[t->endpoint_node[d]].name);
    }
    free(dist);
    return rc;
}

int topo_finish(topo *t, char *err, size_t errlen)
{
    if (t->finished) return 0;
    if (t->n_nodes == 0) return fail(err, errlen, "nodes: the topology has no nodes");
    uint32_t ne = 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        topo_node *n = &t->nodes[i];
        if (!n->nports && !n->kind->forwards) n->nports = n->kind->default_ports;
        if (!n->nports) {   /* radix not declared: as many ports as the highest used */
            unsigned hi = 0;
            for (unsigned p = 0; p < n->kind->max_ports; p++)
                if (n->port_link[p] >= 0) hi = p + 1;
            n->nports = hi > n->kind->default_ports ? hi : n->kind->default_ports;
        }
        if (!n->kind->forwards) n->endpoint = (int32_t)ne++;
    }
    if (ne < 2) return fail(err, errlen, "nodes: %u endpoint(s); a topology needs at least 2 (kinds that do not forward)", ne);
    t->n_endpoints = ne;
    t->endpoint_node = malloc(ne * sizeof *t->endpoint_node);
    if (!t->endpoint_node) sim_fatal("out of memory");
    for (uint32_t i = 0; i < t->n_nodes; i++)
        if (t->nodes[i].endpoint >= 0) t->endpoint_node[t->nodes[i].endpoint] = i;
    /* Connected: a flood from node 0 over every link reaches every node. */
    uint32_t *queue = malloc(t->n_nodes * sizeof *queue);
    uint8_t *seen = calloc(t->n_nodes, 1);
    if (!queue || !seen) sim_fatal("out of memory");
    uint32_t head = 0, tail = 0;
    queue[tail++] = 0;
    seen[0] = 1;
    while (head < tail) {
        const topo_node *n = &t->nodes[queue[head++]];
        for (unsigned p = 0; p < n->nports; p++) {
            int32_t li = n->port_link[p];
            if (li < 0) continue;
            uint32_t o = t->links[li].a == queue[head - 1] ? t->links[li].b : t->links[li].a;
            if (!seen[o]) seen[o] = 1, queue[tail++] = o;
        }
    }
    int rc = 0;
    if (tail < t->n_nodes) {
        uint32_t first = 0;
        while (seen[first]) first++;
        rc = fail(err, errlen, "links: the graph is disconnected: node '%s' cannot reach '%s' (%u of %u nodes reachable)",
                  t->nodes[0].name, t->nodes[first].name, tail, t->n_nodes);
    }
    free(queue);
    free(seen);
    if (!rc) rc = check_terminal_reach(t, err, errlen);
    if (!rc) t->finished = true;
    return rc;
}

/* ---- queries ---- */
int64_t topo_node_param(const topo *t, uint32_t node, const char *name, int64_t def)
{
    const topo_node *n = &t->nodes[node];
    for (unsigned i = 0; i < n->n_params; i++)
        if (!strcmp(t->params[n->first_param + i].name, name)) return t->params[n->first_param + i].value;
    return def;
}

const char *topo_port_name(const topo *t, uint32_t node, unsigned port, char *buf, size_t n)
{
    snprintf(buf, n, "%s.%s%u", t->nodes[node].name, t->nodes[node].kind->port_prefix, port);
    return buf;
}

int topo_peer(const topo *t, uint32_t node, unsigned port, unsigned *peer_port)
{
    if (node >= t->n_nodes || port >= t->nodes[node].nports) return -1;
    int32_t li = t->nodes[node].port_link[port];
    if (li < 0) return -1;
    const topo_link *l = &t->links[li];
    bool from_a = l->a == node && l->a_port == port;
    if (peer_port) *peer_port = from_a ? l->b_port : l->a_port;
    return (int)(from_a ? l->b : l->a);
}

void topo_bfs_to(const topo *t, uint32_t dst, uint32_t *dist)
{
    uint32_t *queue = malloc(t->n_nodes * sizeof *queue);
    if (!queue) sim_fatal("out of memory");
    for (uint32_t i = 0; i < t->n_nodes; i++) dist[i] = UINT32_MAX;
    uint32_t head = 0, tail = 0;
    dist[dst] = 0;
    queue[tail++] = dst;
    while (head < tail) {
        uint32_t v = queue[head++];
        /* A terminal is reached but never passed through (except dst itself, where paths end). */
        if (v != dst && !t->nodes[v].kind->forwards) continue;
        const topo_node *n = &t->nodes[v];
        for (unsigned p = 0; p < n->nports; p++) {
            int o = topo_peer(t, v, p, NULL);
            if (o >= 0 && dist[o] == UINT32_MAX) dist[o] = dist[v] + 1, queue[tail++] = (uint32_t)o;
        }
    }
    free(queue);
}

/* ---- descriptions ---- */
topo *topo_from_string(const char *spec, const char *default_preset, char *err, size_t errlen)
{
    if (!spec || !*spec) {
        fail(err, errlen, "empty; allowed: a JSON file path or a generator: %s", topo_generators_help());
        return NULL;
    }
    /* "name:..." where name is a word ([A-Za-z0-9_-]) is a generator (an unknown one is an
     * error naming the generators); anything else is a file path. */
    const char *colon = strchr(spec, ':');
    bool word = colon && colon > spec;
    for (const char *p = spec; word && p < colon; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') word = false;
    if (word) return topo_generate(spec, default_preset, err, errlen);
    /* Generators without arguments may be named without the colon. */
    if (!strcmp(spec, "dgx-h100")) return topo_generate("dgx-h100:", default_preset, err, errlen);
    if (!strcmp(spec, "dgx-a100")) return topo_generate("dgx-a100:", default_preset, err, errlen);
    return topo_from_json_file(spec, default_preset, err, errlen);
}

topo *topo_from_string_or_exit(const char *spec, const char *default_preset)
{
    char err[2048];
    topo *t = topo_from_string(spec, default_preset, err, sizeof err);
    if (!t) sim_input_error("topo=%s: %s", spec ? spec : "", err);
    return t;
}
