/* Explicit-state BFS over the CXL.cache step functions (see cxl_explore.h). */
#include "models/cxl/cxl_explore.h"

#include <stdlib.h>
#include <string.h>

#define XA 6    /* agents */
#define XL 3    /* lines */
#define XQ 8    /* messages in flight per agent and direction */
#define FLUSH_ID 0xff   /* CQID of a CacheFlushed (line requests use the line index) */

typedef struct xst {
    cxl_dline d[XA][XL];
    cxl_hline h[XL];
    uint8_t golden[XL];
    uint8_t flushing[XA];   /* CacheFlushed sent, GO-I pending */
    uint8_t n_h2d[XA], n_d2h[XA];
    cxl_msg h2d[XA][XQ], d2h[XA][XQ];
} xst;

typedef struct xctx {
    const cxl_explore_cfg *cfg;
    cxl_cfg pcfg;
    unsigned na, nl;
    /* state store */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    uint64_t *off;          /* per state: offset in arena (len in the first 2 bytes) */
    uint32_t *parent;
    uint16_t *depth;
    size_t n, cap;
    uint32_t *table;        /* hash set of state index + 1 */
    size_t table_cap;
    uint8_t tr_seen[CXL_TR_TOTAL];
    cxl_explore_result *res;
    unsigned histories;
} xctx;

/* ---------------------------------------------------------- encoding */
static size_t put_msg(uint8_t *b, const cxl_msg *m)
{
    b[0] = m->ch;
    b[1] = m->op;
    b[2] = m->agent;
    b[3] = m->arg;
    b[4] = (uint8_t)m->line;
    b[5] = (uint8_t)m->id;
    b[6] = (uint8_t)m->id2;
    b[7] = m->val;
    b[8] = m->chk;
    return 9;
}

static size_t get_msg(const uint8_t *b, cxl_msg *m)
{
    memset(m, 0, sizeof *m);
    m->ch = b[0];
    m->op = b[1];
    m->agent = b[2];
    m->arg = b[3];
    m->line = b[4];
    m->id = b[5];
    m->id2 = b[6];
    m->val = b[7];
    m->chk = b[8];
    return 9;
}

static int msg_cmp(const void *a, const void *b)
{
    uint8_t x[9], y[9];
    put_msg(x, a);
    put_msg(y, b);
    return memcmp(x, y, 9);
}

/* Canonical form: idle home-agent lines forget their last transaction, and
 * the D2H direction (no ordering among its messages) is sorted. */
static void canon_one(xctx *x, xst *s)
{
    for (unsigned l = 0; l < x->nl; l++) {
        cxl_hline *h = &s->h[l];
        if (h->phase == HP_IDLE && !h->snp_pending && !(h->data_expect & ~h->data_got)) {
            uint16_t sh = h->sharers;
            uint8_t ow = h->owner, mem = h->mem;
            cxl_ha_init_line(h, mem);
            h->sharers = sh;
            h->owner = ow;
        }
        for (unsigned a = 0; a < x->na; a++) {
            cxl_dline *d = &s->d[a][l];
            if (cxl_dstate_stable(d->st)) {
                d->go = 0;
                d->acc = 0;
                d->wval = 0;
                if (d->st == DS_I) d->val = 0;
            }
        }
    }
    /* chk (checker metadata) only matters on the way to a RdCurr */
    for (unsigned a = 0; a < x->na; a++) {
        for (unsigned i = 0; i < s->n_h2d[a]; i++) {
            cxl_msg *m = &s->h2d[a][i];
            if (m->ch != CXL_H2D_DATA || s->d[a][m->line].st != DS_IC_D) m->chk = 0;
        }
        for (unsigned i = 0; i < s->n_d2h[a]; i++) {
            cxl_msg *m = &s->d2h[a][i];
            if (s->h[m->line].op != RdCurr || s->h[m->line].phase == HP_IDLE) m->chk = 0;
        }
    }
    for (unsigned l = 0; l < x->nl; l++)
        if (s->h[l].op != RdCurr) s->h[l].fwd_chk = s->h[l].mem_chk = s->h[l].mem_chk_valid = 0;
    for (unsigned a = 0; a < x->na; a++) qsort(s->d2h[a], s->n_d2h[a], sizeof(cxl_msg), msg_cmp);
}

static size_t encode(xctx *x, const xst *s, uint8_t *b);

static uint16_t perm_mask(uint16_t m, const unsigned *perm, unsigned na)
{
    uint16_t r = 0;
    for (unsigned a = 0; a < na; a++)
        if (m & (1u << a)) r |= (uint16_t)(1u << perm[a]);
    return r;
}

/* Agent a of src becomes agent perm[a] of dst (devices are identical, so this is a symmetry). */
static void permute(const xctx *x, const xst *src, xst *dst, const unsigned *perm)
{
    *dst = *src;
    for (unsigned a = 0; a < x->na; a++) {
        unsigned b = perm[a];
        for (unsigned l = 0; l < x->nl; l++) dst->d[b][l] = src->d[a][l];
        dst->flushing[b] = src->flushing[a];
        dst->n_h2d[b] = src->n_h2d[a];
        dst->n_d2h[b] = src->n_d2h[a];
        for (unsigned i = 0; i < src->n_h2d[a]; i++) {
            dst->h2d[b][i] = src->h2d[a][i];
            dst->h2d[b][i].agent = (uint8_t)b;
        }
        for (unsigned i = 0; i < src->n_d2h[a]; i++) {
            dst->d2h[b][i] = src->d2h[a][i];
            dst->d2h[b][i].agent = (uint8_t)b;
        }
    }
    for (unsigned l = 0; l < x->nl; l++) {
        cxl_hline *h = &dst->h[l];
        const cxl_hline *g = &src->h[l];
        h->sharers = perm_mask(g->sharers, perm, x->na);
        h->snp_pending = perm_mask(g->snp_pending, perm, x->na);
        h->data_expect = perm_mask(g->data_expect, perm, x->na);
        h->data_got = perm_mask(g->data_got, perm, x->na);
        if (g->owner != CXL_NO_AGENT) h->owner = (uint8_t)perm[g->owner];
        if (g->phase != HP_IDLE || g->snp_pending) h->req = (uint8_t)perm[g->req];
    }
}

/* Canonical form: per-state normalisation, then the smallest encoding over
 * the permutations of the (identical) devices. */
static void canon(xctx *x, xst *s)
{
    canon_one(x, s);
    unsigned d = x->cfg->devices;
    if (d < 2 || d > 3) return;
    static const unsigned perms3[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
    unsigned np = d == 2 ? 2 : 6;
    uint8_t best[4096], cur[4096];
    size_t blen = encode(x, s, best);
    xst tmp, bests = *s;
    for (unsigned k = 1; k < np; k++) {
        unsigned perm[XA];
        for (unsigned a = 0; a < x->na; a++) perm[a] = a;
        if (d == 2) {
            perm[0] = 1;
            perm[1] = 0;
        } else {
            for (unsigned a = 0; a < 3; a++) perm[a] = perms3[k][a];
        }
        permute(x, s, &tmp, perm);
        canon_one(x, &tmp);
        size_t len = encode(x, &tmp, cur);
        if (len < blen || (len == blen && memcmp(cur, best, len) < 0)) {
            memcpy(best, cur, len);
            blen = len;
            bests = tmp;
        }
    }
    *s = bests;
}

static size_t encode(xctx *x, const xst *s, uint8_t *b)
{
    size_t n = 2;
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned l = 0; l < x->nl; l++) {
            const cxl_dline *d = &s->d[a][l];
            b[n++] = d->st;
            b[n++] = d->go;
            b[n++] = d->val;
            b[n++] = d->acc;
            b[n++] = d->wval;
        }
    for (unsigned l = 0; l < x->nl; l++) {
        memcpy(b + n, &s->h[l], sizeof(cxl_hline));
        n += sizeof(cxl_hline);
        b[n++] = s->golden[l];
    }
    for (unsigned a = 0; a < x->na; a++) {
        b[n++] = s->flushing[a];
        b[n++] = s->n_h2d[a];
        for (unsigned i = 0; i < s->n_h2d[a]; i++) n += put_msg(b + n, &s->h2d[a][i]);
        b[n++] = s->n_d2h[a];
        for (unsigned i = 0; i < s->n_d2h[a]; i++) n += put_msg(b + n, &s->d2h[a][i]);
    }
    b[0] = (uint8_t)(n & 0xff);
    b[1] = (uint8_t)(n >> 8);
    return n;
}

static void decode(xctx *x, const uint8_t *b, xst *s)
{
    memset(s, 0, sizeof *s);
    size_t n = 2;
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned l = 0; l < x->nl; l++) {
            cxl_dline *d = &s->d[a][l];
            d->st = b[n++];
            d->go = b[n++];
            d->val = b[n++];
            d->acc = b[n++];
            d->wval = b[n++];
            d->cqid = (uint16_t)l;
        }
    for (unsigned l = 0; l < x->nl; l++) {
        memcpy(&s->h[l], b + n, sizeof(cxl_hline));
        n += sizeof(cxl_hline);
        s->golden[l] = b[n++];
    }
    for (unsigned a = 0; a < x->na; a++) {
        s->flushing[a] = b[n++];
        s->n_h2d[a] = b[n++];
        for (unsigned i = 0; i < s->n_h2d[a]; i++) n += get_msg(b + n, &s->h2d[a][i]);
        s->n_d2h[a] = b[n++];
        for (unsigned i = 0; i < s->n_d2h[a]; i++) n += get_msg(b + n, &s->d2h[a][i]);
    }
}

static uint64_t hash_bytes(const uint8_t *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static const uint8_t *state_bytes(const xctx *x, uint32_t i) { return x->arena + x->off[i]; }
static size_t state_len(const uint8_t *b) { return (size_t)b[0] | ((size_t)b[1] << 8); }

static void table_grow(xctx *x)
{
    size_t ncap = x->table_cap ? x->table_cap * 2 : 1u << 16;
    uint32_t *nt = calloc(ncap, sizeof *nt);
    if (!nt) { fprintf(stderr, "cxl_explore: out of memory\n"); abort(); }
    for (size_t i = 0; i < x->table_cap; i++) {
        uint32_t v = x->table[i];
        if (!v) continue;
        const uint8_t *b = state_bytes(x, v - 1);
        size_t p = hash_bytes(b, state_len(b)) & (ncap - 1);
        while (nt[p]) p = (p + 1) & (ncap - 1);
        nt[p] = v;
    }
    free(x->table);
    x->table = nt;
    x->table_cap = ncap;
}

/* Returns the index of the state, adding it if new (*added). */
static uint32_t intern(xctx *x, const uint8_t *b, size_t len, uint32_t parent, uint16_t depth, bool *added)
{
    if ((x->n + 1) * 2 > x->table_cap) table_grow(x);
    size_t p = hash_bytes(b, len) & (x->table_cap - 1);
    while (x->table[p]) {
        const uint8_t *o = state_bytes(x, x->table[p] - 1);
        if (state_len(o) == len && !memcmp(o, b, len)) {
            *added = false;
            return x->table[p] - 1;
        }
        p = (p + 1) & (x->table_cap - 1);
    }
    if (x->arena_len + len > x->arena_cap) {
        x->arena_cap = x->arena_cap ? x->arena_cap * 2 : 1u << 20;
        x->arena = realloc(x->arena, x->arena_cap);
    }
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 1u << 14;
        x->off = realloc(x->off, x->cap * sizeof *x->off);
        x->parent = realloc(x->parent, x->cap * sizeof *x->parent);
        x->depth = realloc(x->depth, x->cap * sizeof *x->depth);
    }
    if (!x->arena || !x->off || !x->parent || !x->depth) { fprintf(stderr, "cxl_explore: out of memory\n"); abort(); }
    memcpy(x->arena + x->arena_len, b, len);
    x->off[x->n] = x->arena_len;
    x->arena_len += len;
    x->parent[x->n] = parent;
    x->depth[x->n] = depth;
    x->table[p] = (uint32_t)(x->n + 1);
    *added = true;
    return (uint32_t)x->n++;
}

/* ------------------------------------------------------------ checkers */
typedef struct xviol {
    char why[200];
    bool bad;
} xviol;

static void viol(xviol *v, const char *fmt, const char *a, unsigned line)
{
    if (v->bad) return;
    v->bad = true;
    snprintf(v->why, sizeof v->why, fmt, a, line);
}

static bool is_go_like(const cxl_msg *m)
{
    return m->ch == CXL_H2D_RSP && (m->op == GO || m->op == GO_WritePull || m->op == Fast_GO_WritePull ||
                                    m->op == GO_WritePull_Drop || m->op == WritePull);
}

/* Snoops to a line not yet complete (snoop, its response or its IWB data in
 * flight). A response and its data belong to one snoop. */
static unsigned snoops_outstanding(const xctx *x, const xst *s, unsigned line, int agent)
{
    unsigned n = 0;
    for (unsigned a = 0; a < x->na; a++) {
        if (agent >= 0 && (unsigned)agent != a) continue;
        unsigned rsp = 0, iwb = 0;
        for (unsigned i = 0; i < s->n_h2d[a]; i++)
            if (s->h2d[a][i].ch == CXL_H2D_REQ && s->h2d[a][i].line == line) n++;
        for (unsigned i = 0; i < s->n_d2h[a]; i++) {
            const cxl_msg *m = &s->d2h[a][i];
            if (m->line != line) continue;
            if (m->ch == CXL_D2H_RSP) rsp++;
            if (m->ch == CXL_D2H_DATA && (m->arg & CXL_DATA_IWB)) iwb++;
        }
        n += rsp > iwb ? rsp : iwb;
    }
    return n;
}

static void apply_events(xctx *x, xst *s, const cxl_out *o, xviol *v)
{
    for (unsigned i = 0; i < o->nev; i++) {
        const cxl_ev *e = &o->ev[i];
        uint8_t *g = &s->golden[e->line];
        switch (e->kind) {
        case EV_LOAD: if (e->a != *g) viol(v, "data value: a load returned a stale value%s (line %u)", "", e->line); break;
        case EV_STORE:
            if (e->a != *g) viol(v, "data value: a store read a stale value%s (line %u)", "", e->line);
            *g = e->b;
            break;
        case EV_WRITE: *g = e->a; break;
        case EV_MERGE:
            if (e->a != (uint8_t)((*g + e->b) % x->pcfg.values))
                viol(v, "data value: a partial write merged into a stale line%s (line %u)", "", e->line);
            *g = e->a;
            break;
        case EV_RDCURR: if (e->a != e->b) viol(v, "data value: RdCurr returned a stale value%s (line %u)", "", e->line); break;
        case EV_CLEAN_DATA:
            if (e->a != e->b) viol(v, "data value: clean writeback differs from memory%s (line %u)", "", e->line);
            break;
        default: break;
        }
    }
}

/* Invariants over a whole state. */
static void check_state(xctx *x, const xst *s, xviol *v)
{
    bool quiet = true;
    for (unsigned a = 0; a < x->na; a++)
        if (s->n_h2d[a] || s->n_d2h[a]) quiet = false;
    for (unsigned l = 0; l < x->nl; l++) {
        unsigned rw = 0, r = 0;
        uint16_t holders = 0;
        unsigned m_holder = 0, e_holder = CXL_NO_AGENT;
        const cxl_hline *h = &s->h[l];
        bool line_quiet = quiet && h->phase == HP_IDLE;
        for (unsigned a = 0; a < x->na; a++) {
            const cxl_dline *d = &s->d[a][l];
            unsigned p = cxl_dstate_perm(d->st);
            if (p == PERM_RW) rw++;
            if (p == PERM_R) r++;
            if (p != PERM_NONE && d->val != s->golden[l])
                viol(v, "data value: a readable copy differs from the golden value%s (line %u)", "", l);
            if (cxl_dstate_holds(d->st)) {
                holders |= (uint16_t)(1u << a);
                if (!(h->sharers & (1u << a))) viol(v, "directory inclusion: a valid copy is not tracked%s (line %u)", "", l);
            }
            if ((d->st == DS_E || d->st == DS_M) && h->owner != a)
                viol(v, "directory inclusion: an E/M copy is not the directory's owner%s (line %u)", "", l);
            if (d->st == DS_M) m_holder++;
            if (d->st == DS_E || d->st == DS_M) e_holder = a;
            if (!cxl_dstate_stable(d->st)) line_quiet = false;
        }
        if (rw > 1 || (rw == 1 && r > 0)) viol(v, "SWMR: a writer coexists with another reader or writer%s (line %u)", "", l);
        for (unsigned a = 0; a < x->na; a++)
            if (snoops_outstanding(x, s, l, (int)a) > 1) viol(v, "more than one snoop per line per device (3.2.5.5)%s (line %u)", "", l);
        if (line_quiet) {
            if (h->sharers != holders) viol(v, "quiescent: directory differs from the caches%s (line %u)", "", l);
            if (h->owner != e_holder) viol(v, "quiescent: directory owner differs from the E/M holder%s (line %u)", "", l);
            if (!m_holder && h->mem != s->golden[l]) viol(v, "quiescent: memory differs from golden with no dirty owner%s (line %u)", "", l);
        }
    }
}

/* ---------------------------------------------------------- transitions */
typedef struct xtrans {
    char label[96];
    xst next;
    xviol v;
    bool delivery;     /* a message was consumed (for the deadlock rule) */
} xtrans;

typedef void (*xvisit)(xctx *x, xtrans *t, void *arg);

static void push(xctx *x, xst *s, const cxl_msg *m, xviol *v)
{
    (void)x;
    bool h2d = m->ch >= CXL_H2D_REQ;
    uint8_t *n = h2d ? &s->n_h2d[m->agent] : &s->n_d2h[m->agent];
    cxl_msg *q = h2d ? s->h2d[m->agent] : s->d2h[m->agent];
    if (*n >= XQ) {
        viol(v, "explorer: channel capacity exceeded%s (line %u)", "", m->line);
        return;
    }
    q[(*n)++] = *m;
}

static void remove_at(cxl_msg *q, uint8_t *n, unsigned i)
{
    memmove(&q[i], &q[i + 1], (size_t)(*n - i - 1) * sizeof *q);
    (*n)--;
}

static void note_tr(xctx *x, const cxl_out *o)
{
    if (o->tr < CXL_TR_TOTAL) x->tr_seen[o->tr] = 1;
}

/* Routes the outputs of a home-agent step; memory answers at once. */
static void ha_step(xctx *x, xst *s, unsigned line, const cxl_msg *in, xviol *v)
{
    cxl_out o;
    cxl_ha_recv(&x->pcfg, &s->h[line], in, (uint16_t)line, &o);
    note_tr(x, &o);
    if (o.status == ST_ERR) {
        viol(v, "home agent: %s (line %u)", o.err, line);
        return;
    }
    apply_events(x, s, &o, v);
    bool go_sent = false;
    cxl_msg mem;
    bool mem_rd = false;
    for (unsigned i = 0; i < o.n; i++) {
        if (o.m[i].ch == CXL_MEM_RD) {
            mem = o.m[i];
            mem_rd = true;
            continue;
        }
        if (is_go_like(&o.m[i])) go_sent = true;
        push(x, s, &o.m[i], v);
    }
    if (go_sent && snoops_outstanding(x, s, line, -1))
        viol(v, "ordering: GO or WritePull sent while a snoop to the line is outstanding (3.2.5.2/3.2.5.3)%s (line %u)", "",
             line);
    if (mem_rd) {
        cxl_msg md = mem;
        md.ch = CXL_MEM_DATA;
        md.chk = s->golden[line];
        ha_step(x, s, line, &md, v);
    }
}

static void dev_outputs(xctx *x, xst *s, const cxl_out *o, xviol *v)
{
    for (unsigned i = 0; i < o->n; i++) {
        cxl_msg m = o->m[i];
        if (m.ch == CXL_D2H_DATA || m.ch == CXL_D2H_RSP) m.chk = s->golden[m.line];
        push(x, s, &m, v);
    }
}

static bool is_core_agent(const xctx *x, unsigned a) { return a >= x->cfg->devices; }

static void enumerate(xctx *x, const xst *s, xvisit visit, void *arg)
{
    xtrans t;
    cxl_out o;
    /* CacheFlushed from a device whose cache is empty */
    for (unsigned a = 0; a < x->cfg->devices; a++) {
        if (s->flushing[a] || !(x->cfg->dev_ops & (1u << OP_CACHE_FLUSH))) continue;
        bool empty = true;
        for (unsigned l = 0; l < x->nl; l++)
            if (s->d[a][l].st != DS_I) empty = false;
        if (!empty) continue;
        t.next = *s;
        memset(&t.v, 0, sizeof t.v);
        t.delivery = false;
        cxl_dev_flush_start(a, FLUSH_ID, &o);
        note_tr(x, &o);
        dev_outputs(x, &t.next, &o, &t.v);
        t.next.flushing[a] = 1;
        snprintf(t.label, sizeof t.label, "dev%u cache_flush sends CacheFlushed", a);
        visit(x, &t, arg);
    }
    /* core operations from stable states */
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned l = 0; l < x->nl; l++) {
            const cxl_dline *d = &s->d[a][l];
            if (!cxl_dstate_stable(d->st) || s->flushing[a]) continue;
            for (unsigned op = 0; op < CXL_N_CORE_OP; op++) {
                if (!is_core_agent(x, a) && !(x->cfg->dev_ops & (1u << op))) continue;
                if (!cxl_dev_op_legal(d, op, is_core_agent(x, a))) continue;
                bool takes_val = op == OP_WRITE_FULL || op == OP_ITOMWR || op == OP_WRCUR || op == OP_WRINV ||
                                 op == OP_WOWRINV || op == OP_WOWRINVF;
                unsigned v0 = op == OP_WOWRINV ? 1 : 0, nv = takes_val ? x->pcfg.values : 1;
                for (unsigned wv = v0; wv < nv; wv++) {
                    t.next = *s;
                    memset(&t.v, 0, sizeof t.v);
                    t.delivery = false;
                    cxl_dev_core(&x->pcfg, &t.next.d[a][l], a, l, op, (uint8_t)wv, (uint16_t)l, &o);
                    note_tr(x, &o);
                    if (o.status == ST_BUSY) continue;
                    apply_events(x, &t.next, &o, &t.v);
                    dev_outputs(x, &t.next, &o, &t.v);
                    snprintf(t.label, sizeof t.label, "%s%u %s L%u%s%s v%u -> %s", is_core_agent(x, a) ? "core" : "dev",
                             is_core_agent(x, a) ? a - x->cfg->devices : a, cxl_core_op_name(op), l,
                             o.n ? " sends " : " hit", o.n ? cxl_op_name(o.m[0].ch, o.m[0].op) : "", wv,
                             cxl_dstate_name(t.next.d[a][l].st));
                    visit(x, &t, arg);
                }
            }
        }
    /* H2D deliveries */
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned i = 0; i < s->n_h2d[a]; i++) {
            const cxl_msg *m = &s->h2d[a][i];
            if (m->ch == CXL_H2D_REQ) {
                bool blocked = false;   /* snoop-pushes-GO */
                for (unsigned j = 0; j < i; j++)
                    if (s->h2d[a][j].ch == CXL_H2D_RSP && s->h2d[a][j].line == m->line) blocked = true;
                if (blocked) continue;
            }
            bool dup = false;
            for (unsigned j = 0; j < i; j++)
                if (!msg_cmp(&s->h2d[a][j], m) && m->ch != CXL_H2D_REQ) dup = true;
            if (dup) continue;
            t.next = *s;
            memset(&t.v, 0, sizeof t.v);
            t.delivery = true;
            cxl_msg in = *m;
            remove_at(t.next.h2d[a], &t.next.n_h2d[a], i);
            if (s->flushing[a] && cxl_dev_flush_recv(FLUSH_ID, &in, &o)) {
                note_tr(x, &o);
                if (o.status == ST_ERR) viol(&t.v, "agent: %s (line %u)", o.err, in.line);
                t.next.flushing[a] = 0;
                snprintf(t.label, sizeof t.label, "dev%u <- GO-I for CacheFlushed", a);
                visit(x, &t, arg);
                continue;
            }
            cxl_dline before = t.next.d[a][in.line];
            cxl_dev_recv(&x->pcfg, &t.next.d[a][in.line], &in, &o);
            note_tr(x, &o);
            if (o.status == ST_STALL) continue;
            char lab[48];
            cxl_msg_label(&in, lab, sizeof lab);
            snprintf(t.label, sizeof t.label, "%s%u <- %s: %s -> %s", is_core_agent(x, a) ? "core" : "dev",
                     is_core_agent(x, a) ? a - x->cfg->devices : a, lab, cxl_dstate_name(before.st),
                     cxl_dstate_name(t.next.d[a][in.line].st));
            if (o.status == ST_ERR) viol(&t.v, "agent: %s (line %u)", o.err, in.line);
            else {
                apply_events(x, &t.next, &o, &t.v);
                dev_outputs(x, &t.next, &o, &t.v);
            }
            visit(x, &t, arg);
        }
    /* D2H deliveries to the home agent */
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned i = 0; i < s->n_d2h[a]; i++) {
            const cxl_msg *m = &s->d2h[a][i];
            if (i && !msg_cmp(&s->d2h[a][i - 1], m)) continue;   /* sorted: identical messages once */
            t.next = *s;
            memset(&t.v, 0, sizeof t.v);
            t.delivery = true;
            cxl_msg in = *m;
            remove_at(t.next.d2h[a], &t.next.n_d2h[a], i);
            if (in.ch == CXL_D2H_REQ && in.op == CacheFlushed) {
                cxl_ha_cache_flushed(t.next.h, x->nl, &in, &o);
                note_tr(x, &o);
                if (o.status == ST_ERR) viol(&t.v, "home agent: %s (line %u)", o.err, in.line);
                else push(x, &t.next, &o.m[0], &t.v);
                snprintf(t.label, sizeof t.label, "home <- CacheFlushed from dev%u", a);
                visit(x, &t, arg);
                continue;
            }
            cxl_hline probe = t.next.h[in.line];
            cxl_out po;
            cxl_ha_recv(&x->pcfg, &probe, &in, (uint16_t)in.line, &po);
            if (po.status == ST_BUSY) continue;   /* the request waits for the line */
            ha_step(x, &t.next, in.line, &in, &t.v);
            char lab[48];
            cxl_msg_label(&in, lab, sizeof lab);
            snprintf(t.label, sizeof t.label, "home <- %s from %s%u", lab, is_core_agent(x, a) ? "core" : "dev",
                     is_core_agent(x, a) ? a - x->cfg->devices : a);
            visit(x, &t, arg);
        }
}

/* ------------------------------------------------------------- the search */
typedef struct visit_arg {
    uint32_t from;
    bool any_delivery;
} visit_arg;

static void print_history(xctx *x, uint32_t idx, const char *last_label, const char *why);

static void on_trans(xctx *x, xtrans *t, void *argp)
{
    visit_arg *va = argp;
    x->res->transitions++;
    if (t->delivery) va->any_delivery = true;
    if (!t->v.bad) check_state(x, &t->next, &t->v);
    if (t->v.bad) {
        x->res->violations++;
        if (x->res->violations == 1) {
            snprintf(x->res->first_violation, sizeof x->res->first_violation, "%s", t->v.why);
            x->res->first_violation_depth = (unsigned)x->depth[va->from] + 1u;
        }
        if (x->histories < x->cfg->max_histories) {
            x->histories++;
            print_history(x, va->from, t->label, t->v.why);
        }
        return;
    }
    canon(x, &t->next);
    uint8_t buf[4096];
    size_t len = encode(x, &t->next, buf);
    bool added;
    uint16_t d = (uint16_t)(x->depth[va->from] + 1);
    intern(x, buf, len, va->from, d, &added);
    if (added && d > x->res->max_depth) x->res->max_depth = d;
    if (added && d < 512) x->res->states_at_depth[d]++;
}

/* Finds the label of the transition from state p to state c. */
typedef struct find_arg {
    const uint8_t *target;
    size_t len;
    char label[96];
    bool found;
} find_arg;

static void on_find(xctx *x, xtrans *t, void *argp)
{
    find_arg *fa = argp;
    if (fa->found || t->v.bad) return;
    canon(x, &t->next);
    uint8_t buf[4096];
    size_t len = encode(x, &t->next, buf);
    if (len == fa->len && !memcmp(buf, fa->target, len)) {
        fa->found = true;
        snprintf(fa->label, sizeof fa->label, "%s", t->label);
    }
}

static void print_history(xctx *x, uint32_t idx, const char *last_label, const char *why)
{
    FILE *f = x->cfg->log;
    if (!f) return;
    uint32_t chain[4096];
    unsigned n = 0;
    for (uint32_t i = idx; n < 4096; i = x->parent[i]) {
        chain[n++] = i;
        if (i == 0) break;
    }
    fprintf(f, "VIOLATION: %s\n  history (%u steps from the initial state):\n", why, n);
    for (unsigned k = n - 1; k > 0; k--) {
        xst s;
        decode(x, state_bytes(x, chain[k]), &s);
        find_arg fa = { .target = state_bytes(x, chain[k - 1]), .len = state_len(state_bytes(x, chain[k - 1])) };
        enumerate(x, &s, on_find, &fa);
        fprintf(f, "  %3u. %s\n", n - k, fa.found ? fa.label : "(?)");
    }
    fprintf(f, "  %3u. %s   <-- %s\n", n, last_label, why);
}

void cxl_explore_run(const cxl_explore_cfg *cfg, cxl_explore_result *res)
{
    memset(res, 0, sizeof *res);
    xctx *x = calloc(1, sizeof *x);
    if (!x) abort();
    x->cfg = cfg;
    x->res = res;
    x->na = cfg->devices + cfg->cores;
    x->nl = cfg->lines;
    x->pcfg.values = cfg->values;
    x->pcfg.inject = cfg->inject;
    if (x->na > XA || x->nl > XL || x->na == 0 || x->nl == 0) {
        snprintf(res->first_violation, sizeof res->first_violation, "explorer supports 1..%d agents, 1..%d lines", XA, XL);
        res->violations = 1;
        free(x);
        return;
    }
    xst s0;
    memset(&s0, 0, sizeof s0);
    for (unsigned l = 0; l < x->nl; l++) cxl_ha_init_line(&s0.h[l], 0);
    for (unsigned a = 0; a < x->na; a++)
        for (unsigned l = 0; l < x->nl; l++) s0.d[a][l].cqid = (uint16_t)l;
    canon(x, &s0);
    uint8_t buf[4096];
    size_t len = encode(x, &s0, buf);
    bool added;
    intern(x, buf, len, 0, 0, &added);
    res->states_at_depth[0] = 1;
    res->complete = true;
    for (size_t head = 0; head < x->n; head++) {
        if (x->n > cfg->max_states) {
            res->complete = false;
            break;
        }
        xst s;
        decode(x, state_bytes(x, (uint32_t)head), &s);
        visit_arg va = { .from = (uint32_t)head };
        enumerate(x, &s, on_trans, &va);
        if (!va.any_delivery) {
            bool pending = false;
            for (unsigned a = 0; a < x->na; a++) {
                if (s.n_h2d[a] || s.n_d2h[a] || s.flushing[a]) pending = true;
                for (unsigned l = 0; l < x->nl; l++)
                    if (!cxl_dstate_stable(s.d[a][l].st)) pending = true;
            }
            for (unsigned l = 0; l < x->nl; l++)
                if (s.h[l].phase != HP_IDLE) pending = true;
            if (pending) {
                res->deadlocks++;
                if (x->histories < cfg->max_histories) {
                    x->histories++;
                    print_history(x, (uint32_t)head, "(no message can be delivered)", "DEADLOCK");
                }
            }
        }
    }
    res->states = x->n;
    unsigned total = 0;
    const uint8_t *def = cxl_transitions_defined(&total);
    res->tr_total = total;
    for (unsigned i = 0; i < CXL_TR_TOTAL; i++)
        if (def[i] && x->tr_seen[i]) res->tr_covered++;
    free(x->arena);
    free(x->off);
    free(x->parent);
    free(x->depth);
    free(x->table);
    free(x);
}
