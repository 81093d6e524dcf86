/* What a fabric reports (sim/fabric.h): per link direction, and the
 * collectives that bring a run over ranks to rank 0. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/fabric_impl.h"
#include "sim/tier.h"

static bool live(const sim_fabric *f, size_t i, sim_fabric_dir_stats *s)
{
    const sim_link *l = f->links[i];
    if (!l) return false;
    sim_time_ps now = sim_now(f->k);
    s->window_s = now > l->stats_since_ps ? (double)(now - l->stats_since_ps) * 1e-12 : 0;
    s->util = sim_link_utilisation(l);
    s->window_msgs = sim_link_window_msgs(l);
    s->window_bytes = sim_link_window_bytes(l);
    s->stall_ps = sim_link_stall_ps(l);
    return true;
}

static bool dir_stats(const sim_fabric *f, size_t i, sim_fabric_dir_stats *s)
{
    if (live(f, i, s)) return true;
    if (f->have && f->have[i]) {
        *s = f->gathered[i];
        return true;
    }
    return false;
}

bool sim_fabric_dir_stats_get(const sim_fabric *f, uint32_t link, unsigned dir, sim_fabric_dir_stats *s)
{
    return link < f->t->n_links && dir < 2 && dir_stats(f, 2 * (size_t)link + dir, s);
}

cJSON *sim_fabric_link_util_json(const sim_fabric *f)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < 2 * (size_t)f->t->n_links; i++) {
        sim_fabric_dir_stats s;
        if (!dir_stats(f, i, &s)) continue;   /* ranked: another rank sends on it, not gathered here */
        const topo_link *tl = &f->t->links[i / 2];
        unsigned d = i & 1;
        char from[TOPO_NAME_MAX + 8], to[TOPO_NAME_MAX + 8];
        topo_port_name(f->t, d ? tl->b : tl->a, d ? tl->b_port : tl->a_port, from, sizeof from);
        topo_port_name(f->t, d ? tl->a : tl->b, d ? tl->a_port : tl->b_port, to, sizeof to);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "link", f->link_names[i]);
        cJSON_AddStringToObject(o, "from", from);
        cJSON_AddStringToObject(o, "to", to);
        cJSON_AddNumberToObject(o, "util", s.util);
        cJSON_AddNumberToObject(o, "GBps", s.window_s > 0 ? (double)s.window_bytes / s.window_s * 1e-9 : 0);
        cJSON_AddNumberToObject(o, "msgs", (double)s.window_msgs);
        cJSON_AddNumberToObject(o, "stall_ns", (double)s.stall_ps / 1000.0);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

double sim_fabric_max_link_util(const sim_fabric *f, char *buf, size_t n)
{
    double best = -1;
    size_t bi = 0;
    for (size_t i = 0; i < 2 * (size_t)f->t->n_links; i++) {
        sim_fabric_dir_stats s;
        if (dir_stats(f, i, &s) && s.util > best) best = s.util, bi = i;   /* first of equals: deterministic */
    }
    if (buf && n) snprintf(buf, n, "%s", f->t->n_links ? f->link_names[bi] : "");
    return best < 0 ? 0 : best;
}

typedef struct ranked_dir { size_t i; sim_fabric_dir_stats s; } ranked_dir;

static int busier_first(const void *pa, const void *pb)
{
    const ranked_dir *a = pa, *b = pb;
    if (a->s.util != b->s.util) return a->s.util > b->s.util ? -1 : 1;
    if (a->s.stall_ps != b->s.stall_ps) return a->s.stall_ps > b->s.stall_ps ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

cJSON *sim_fabric_bottleneck_json(const sim_fabric *f, unsigned top)
{
    size_t n_dirs = 2 * (size_t)f->t->n_links, n = 0;
    ranked_dir *d = malloc((n_dirs ? n_dirs : 1) * sizeof *d);
    if (!d) sim_fatal("out of memory");
    struct { unsigned dirs; double bytes, max_util, stall_ns; size_t busiest; } tier[SIM_TIERS] = { { 0, 0, -1, 0, 0 } };
    for (unsigned t = 0; t < SIM_TIERS; t++) tier[t].max_util = -1;
    for (size_t i = 0; i < n_dirs; i++) {
        if (!dir_stats(f, i, &d[n].s)) continue;
        d[n].i = i;
        enum sim_tier t = sim_tier_of_preset(f->t->links[i / 2].preset);
        tier[t].dirs++;
        tier[t].bytes += (double)d[n].s.window_bytes;
        tier[t].stall_ns += (double)d[n].s.stall_ps / 1000.0;
        if (d[n].s.util > tier[t].max_util) tier[t].max_util = d[n].s.util, tier[t].busiest = i;
        n++;
    }
    qsort(d, n, sizeof *d, busier_first);
    cJSON *o = cJSON_CreateObject(), *tiers = cJSON_CreateArray(), *links = cJSON_CreateArray();
    int best = -1;
    for (unsigned t = 0; t < SIM_TIERS; t++) {
        if (!tier[t].dirs) continue;
        if (best < 0 || tier[t].max_util > tier[best].max_util) best = (int)t;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "tier", sim_tier_name((enum sim_tier)t));
        cJSON_AddNumberToObject(e, "link_directions", tier[t].dirs);
        cJSON_AddNumberToObject(e, "bytes", tier[t].bytes);
        cJSON_AddNumberToObject(e, "max_util", tier[t].max_util);
        cJSON_AddStringToObject(e, "busiest", f->link_names[tier[t].busiest]);
        cJSON_AddNumberToObject(e, "stall_ns", tier[t].stall_ns);
        cJSON_AddItemToArray(tiers, e);
    }
    for (size_t k = 0; k < n && k < top; k++) {
        cJSON *e = cJSON_CreateObject();
        const sim_fabric_dir_stats *s = &d[k].s;
        cJSON_AddStringToObject(e, "link", f->link_names[d[k].i]);
        cJSON_AddStringToObject(e, "tier", sim_tier_name(sim_tier_of_preset(f->t->links[d[k].i / 2].preset)));
        cJSON_AddNumberToObject(e, "util", s->util);
        cJSON_AddNumberToObject(e, "GBps", s->window_s > 0 ? (double)s->window_bytes / s->window_s * 1e-9 : 0);
        cJSON_AddNumberToObject(e, "stall_ns", (double)s->stall_ps / 1000.0);
        cJSON_AddItemToArray(links, e);
    }
    cJSON_AddStringToObject(o, "busiest_tier", best < 0 ? "none" : sim_tier_name((enum sim_tier)best));
    cJSON_AddItemToObject(o, "tiers", tiers);
    cJSON_AddItemToObject(o, "top_links", links);
    free(d);
    return o;
}

/* ---- over ranks ---- */
enum { REC_DIR = 1, REC_NODE = 2 };
typedef struct rec { uint32_t kind, id, len, pad; } rec;

static void put_rec(sim_pdes_buf *b, uint32_t kind, uint32_t id, const void *data, size_t len)
{
    rec h = { kind, id, (uint32_t)len, 0 };
    sim_pdes_buf_put(b, &h, sizeof h);
    sim_pdes_buf_put(b, data, len);
}

void sim_fabric_gather(sim_fabric *f)
{
    if (!f->ranked) return;
    const sim_pdes_transport *tr = f->cfg.transport;
    const topo *t = f->t;
    sim_pdes_buf mine = { 0 }, node = { 0 };
    for (size_t i = 0; i < 2 * (size_t)t->n_links; i++) {
        sim_fabric_dir_stats s;
        if (live(f, i, &s)) put_rec(&mine, REC_DIR, (uint32_t)i, &s, sizeof s);
    }
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        if (!sim_fabric_node_local(f, n) || !f->kind[n]->pack_stats) continue;
        node.len = 0;
        f->kind[n]->pack_stats(f->comp[n], &node);
        put_rec(&mine, REC_NODE, n, node.data, node.len);
    }
    sim_pdes_buf *all = calloc(tr->size, sizeof *all);
    if (!all) sim_fatal("fabric: out of memory");
    sim_pdes_gather(tr, mine.data, mine.len, all);
    if (tr->rank == 0) {
        if (!f->gathered) {
            f->gathered = calloc(2 * (size_t)t->n_links + 1, sizeof *f->gathered);
            f->have = calloc(2 * (size_t)t->n_links + 1, sizeof *f->have);
        }
        for (unsigned r = 1; r < tr->size; r++)
            for (size_t at = 0; at < all[r].len;) {
                rec h;
                if (all[r].len - at < sizeof h) sim_fatal("fabric: a truncated statistics record from rank %u", r);
                memcpy(&h, all[r].data + at, sizeof h);
                at += sizeof h;
                if (all[r].len - at < h.len) sim_fatal("fabric: a truncated statistics record from rank %u", r);
                const unsigned char *d = all[r].data + at;
                at += h.len;
                if (h.kind == REC_DIR && h.id < 2 * t->n_links && h.len == sizeof(sim_fabric_dir_stats)) {
                    memcpy(&f->gathered[h.id], d, sizeof f->gathered[h.id]);
                    f->have[h.id] = true;
                } else if (h.kind == REC_NODE && h.id < t->n_nodes && f->cfg.node_part[h.id] == r && f->kind[h.id]->unpack_stats) {
                    f->kind[h.id]->unpack_stats(f->comp[h.id], d, h.len);
                } else {
                    sim_fatal("fabric: rank %u sent statistics (kind %u, id %u) this rank cannot place", r, h.kind, h.id);
                }
            }
    }
    free(all);
    free(mine.data);
    free(node.data);
}

int sim_fabric_check_all(const sim_fabric *f, bool drained, char *why, size_t why_n)
{
    char w[512] = "";
    int rc = sim_fabric_check(f, drained, w, sizeof w);
    if (!f->ranked) {
        snprintf(why, why_n, "%s", w);
        return rc;
    }
    const sim_pdes_transport *tr = f->cfg.transport;
    char mine[sizeof w + 1];
    mine[0] = rc ? 1 : 0;
    memcpy(mine + 1, w, sizeof w);
    sim_pdes_buf *all = calloc(tr->size, sizeof *all);
    if (!all) sim_fatal("fabric: out of memory");
    sim_pdes_gather(tr, mine, sizeof mine, all);
    snprintf(why, why_n, "%s", w);
    if (tr->rank == 0)
        for (unsigned r = 0; r < tr->size; r++)
            if (all[r].len == sizeof mine && all[r].data[0]) {
                snprintf(why, why_n, "rank %u: %.*s", r, (int)sizeof w - 1, (const char *)all[r].data + 1);
                rc = -1;
                break;
            }
    free(all);
    return rc;
}

uint64_t sim_fabric_events_all(const sim_fabric *f)
{
    uint64_t n = sim_fabric_events(f);
    if (f->ranked) sim_pdes_sum_u64(f->cfg.transport, &n, 1);
    return n;
}

typedef struct rank_numbers { uint64_t events, windows; double wall_s, blocked_s; } rank_numbers;

static cJSON *rank_json(unsigned rank, const rank_numbers *n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddNumberToObject(o, "events", (double)n->events);
    cJSON_AddNumberToObject(o, "wall_s", n->wall_s);
    cJSON_AddNumberToObject(o, "windows", (double)n->windows);
    cJSON_AddNumberToObject(o, "blocked_s", n->blocked_s);
    return o;
}

cJSON *sim_fabric_ranks_json(const sim_fabric *f)
{
    rank_numbers mine = { .events = sim_fabric_events(f), .wall_s = f->run_wall_s };
    if (f->pdes) mine.windows = sim_pdes_windows(f->pdes), mine.blocked_s = sim_pdes_blocked_s(f->pdes);
    cJSON *a = cJSON_CreateArray();
    if (!f->ranked) {
        cJSON_AddItemToArray(a, rank_json(0, &mine));
        return a;
    }
    const sim_pdes_transport *tr = f->cfg.transport;
    sim_pdes_buf *all = calloc(tr->size, sizeof *all);
    if (!all) sim_fatal("fabric: out of memory");
    sim_pdes_gather(tr, &mine, sizeof mine, all);
    if (tr->rank == 0)
        for (unsigned r = 0; r < tr->size; r++) {
            rank_numbers n;
            if (all[r].len != sizeof n) sim_fatal("fabric: rank %u sent %zu bytes of rank numbers", r, all[r].len);
            memcpy(&n, all[r].data, sizeof n);
            cJSON_AddItemToArray(a, rank_json(r, &n));
        }
    else
        cJSON_AddItemToArray(a, rank_json(tr->rank, &mine));
    free(all);
    return a;
}
