/* Timed CXL.cache system around the pure step functions (see cxl_sys.h). */
#include "models/cxl/cxl_sys.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HIST_LEN 48

typedef cxl_lmsg tmsg;
typedef cxl_mq mq;

typedef struct way {
    uint32_t line;
    bool valid;
    cxl_dline d;
    uint64_t lru;
} way;

typedef struct op_t op_t;
struct op_t {
    uint32_t line;
    uint8_t op, wval;
    bool internal;           /* a replacement eviction */
    unsigned req;
    sim_time_ps t_issue, t_ready;
    cxl_path *path;
    op_t *next;
};

typedef struct agent_t {
    cxl_sys *s;
    unsigned idx;
    bool core;
    unsigned sets, ways;
    way *w;
    way *unc;                /* trackers for uncached accesses */
    unsigned n_unc;
    uint16_t *cq_free;
    unsigned cq_n, cq_cap;
    uint8_t *cq_used;
    op_t **op_of_line;
    op_t *lookup_head, *lookup_tail;
    op_t *parked, *parked_tail;   /* waiting for a way or a tracker, oldest first */
    op_t *flush_op;          /* a CacheFlushed in progress (device level) */
    uint16_t flush_cq;
    bool flush_sent;
    unsigned n_ops;          /* line accesses in progress (incl. replacements) */
    mq in_snp, in_rsp;       /* received, waiting for the processing delay */
    mq stalled;              /* snoops that must wait for data */
    cxl_port *tx;                /* D2H */
    cxl_port *rx;                /* H2D (sender side is the home agent) */
    sim_process proc;
    sim_event wake;
    uint64_t lru_clock;
    sim_time_ps lookup_ps, snoop_ps, fill_ps;
    sim_trace_var *tv_line;
} agent_t;

typedef struct hist_ent {
    sim_time_ps t;
    uint8_t kind;            /* 0 agent op, 1 agent got msg, 2 home got msg, 3 home sent */
    uint8_t agent, st, op;
    cxl_msg m;
} hist_ent;

struct cxl_sys {
    sim_kernel *k;
    cxl_sys_cfg cfg;
    cxl_cfg pcfg;
    sim_trace *tr;
    sim_rng rng;
    unsigned na;
    agent_t *ag;
    /* home agent_t */
    cxl_hline *h;
    mq req_q;                /* requests in the snoop-filter lookup pipeline */
    mq pending;              /* looked up, waiting for their line or a UQID (arrival order) */
    uint32_t *line_stamp, sched_stamp;
    bool in_schedule;
    uint16_t *uq_free;
    unsigned uq_n;
    uint8_t *uq_used;
    uint16_t *line_uqid;
    sim_process home_proc;
    sim_event home_wake;
    sim_link *mem_req, *mem_rsp;
    mq mem_q;
    sim_process mem_proc;
    sim_event mem_wake;
    uint32_t *llc_tag;
    sim_link **ondie_d2h, **ondie_h2d;
    /* checkers */
    uint8_t *golden;
    uint8_t *snp_cnt;        /* [agent*lines + line]: snoops outstanding */
    uint8_t *iwb_owed, *iwb_early;
    uint16_t *snp_line;      /* per line */
    uint64_t *rsp_inflight;  /* [agent*lines + line]: H2D Rsp in flight, (count << 48) | oldest seq */
    uint64_t seq;
    hist_ent *hist;
    unsigned *hist_n;
    uint8_t tr_seen[CXL_TR_TOTAL];
    char first_violation[256];
    unsigned reports;
    /* stats */
    cxl_sys_stats st;
    uint64_t outstanding;
    cxl_done_fn done_fn;
    void *done_ctx;
    /* watchdog */
    sim_process wd_proc;
    sim_event wd_wake;
    /* pools */
    tmsg *free_msgs;
    sim_trace_var *tv_home;
};

/* ------------------------------------------------------------ pools */
static tmsg *msg_new(cxl_sys *s, const cxl_msg *m)
{
    tmsg *t = s->free_msgs;
    if (t) s->free_msgs = t->next;
    else if (!(t = malloc(sizeof *t))) sim_fatal("out of memory");
    memset(t, 0, sizeof *t);
    t->m = *m;
    return t;
}

static void msg_free(cxl_sys *s, tmsg *t)
{
    free(t->path);
    t->path = NULL;
    t->next = s->free_msgs;
    s->free_msgs = t;
}

/* ------------------------------------------------------------ history and violations */
static void hist_add(cxl_sys *s, uint32_t line, unsigned kind, unsigned agent, unsigned st, unsigned op,
                     const cxl_msg *m)
{
    if (!s->hist) return;
    hist_ent *e = &s->hist[(size_t)line * HIST_LEN + s->hist_n[line] % HIST_LEN];
    s->hist_n[line]++;
    e->t = sim_now(s->k);
    e->kind = (uint8_t)kind;
    e->agent = (uint8_t)agent;
    e->st = (uint8_t)st;
    e->op = (uint8_t)op;
    if (m) e->m = *m;
    else memset(&e->m, 0, sizeof e->m);
}

static void agent_name(const cxl_sys *s, unsigned a, char *buf, size_t n)
{
    if (a < s->cfg.devices) snprintf(buf, n, "dev%u", a);
    else snprintf(buf, n, "core%u", a - s->cfg.devices);
}

static void print_history(cxl_sys *s, uint32_t line)
{
    FILE *f = s->cfg.log;
    if (!f || !s->hist) return;
    unsigned n = s->hist_n[line], first = n > HIST_LEN ? n - HIST_LEN : 0;
    fprintf(f, "  history of line %u (last %u events):\n", line, n - first);
    for (unsigned i = first; i < n; i++) {
        const hist_ent *e = &s->hist[(size_t)line * HIST_LEN + i % HIST_LEN];
        char an[16], lab[64];
        agent_name(s, e->agent, an, sizeof an);
        cxl_msg_label(&e->m, lab, sizeof lab);
        switch (e->kind) {
        case 0: fprintf(f, "  %12.3f ns  %-6s core op %-10s -> %s\n", e->t / 1000.0, an, cxl_core_op_name(e->op), cxl_dstate_name(e->st)); break;
        case 1: fprintf(f, "  %12.3f ns  %-6s got  %-32s -> %s\n", e->t / 1000.0, an, lab, cxl_dstate_name(e->st)); break;
        case 2: fprintf(f, "  %12.3f ns  home   got  %-32s (from %s)\n", e->t / 1000.0, lab, an); break;
        default: fprintf(f, "  %12.3f ns  home   sent %-32s (to %s)\n", e->t / 1000.0, lab, an); break;
        }
    }
}

static void violation(cxl_sys *s, uint32_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void violation(cxl_sys *s, uint32_t line, const char *fmt, ...)
{
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->st.violations++;
    if (!s->first_violation[0])
        snprintf(s->first_violation, sizeof s->first_violation, "%.180s (line %u at %.3f ns)", buf, line,
                 sim_now(s->k) / 1000.0);
    if (s->reports < 3 && s->cfg.log) {
        s->reports++;
        fprintf(s->cfg.log, "VIOLATION at %.3f ns, line %u: %s\n", sim_now(s->k) / 1000.0, line, buf);
        print_history(s, line);
    }
}

/* ------------------------------------------------------------ cache lookup */
static way *find_way(agent_t *a, uint32_t line)
{
    way *set = &a->w[(size_t)(line % a->sets) * a->ways];
    for (unsigned i = 0; i < a->ways; i++)
        if (set[i].valid && set[i].line == line) return &set[i];
    for (unsigned i = 0; i < a->n_unc; i++)
        if (a->unc[i].valid && a->unc[i].line == line) return &a->unc[i];
    return NULL;
}

static bool is_unc(const agent_t *a, const way *w) { return w >= a->unc && w < a->unc + a->n_unc; }

/* ------------------------------------------------------------ checkers */
static void trace_line(cxl_sys *s, agent_t *a, uint32_t line, const way *w)
{
    if (!a->tv_line || line >= s->cfg.trace_lines) return;
    if (w && w->d.st != DS_I) sim_trace_strf(s->tr, a->tv_line[line], "%s v%u", cxl_dstate_name(w->d.st), w->d.val);
    else sim_trace_str(s->tr, a->tv_line[line], "I");
}

static void trace_home(cxl_sys *s, uint32_t line)
{
    if (!s->tv_home || line >= s->cfg.trace_lines) return;
    const cxl_hline *h = &s->h[line];
    static const char *const ph[] = { "idle", "snoop", "mem", "pull" };
    char sh[40] = "";
    size_t n = 0;
    for (unsigned a = 0; a < s->na && n + 4 < sizeof sh; a++)
        if (h->sharers & (1u << a)) n += (size_t)snprintf(sh + n, sizeof sh - n, "%s%u", n ? "," : "", a);
    if (h->owner != CXL_NO_AGENT) sim_trace_strf(s->tr, s->tv_home[line], "own%u {%s} %s", h->owner, sh, ph[h->phase]);
    else sim_trace_strf(s->tr, s->tv_home[line], "{%s} m%u %s", sh, h->mem, ph[h->phase]);
}

/* SWMR, data value and inclusion over one line. */
static void check_line(cxl_sys *s, uint32_t line)
{
    unsigned rw = 0, r = 0;
    const cxl_hline *h = &s->h[line];
    for (unsigned i = 0; i < s->na; i++) {
        way *w = find_way(&s->ag[i], line);
        if (!w) continue;
        unsigned st = w->d.st, p = cxl_dstate_perm(st);
        if (p == PERM_RW) rw++;
        if (p == PERM_R) r++;
        if (p != PERM_NONE && w->d.val != s->golden[line])
            violation(s, line, "data value: agent %u holds %u in %s, golden is %u", i, w->d.val, cxl_dstate_name(st),
                      s->golden[line]);
        if (cxl_dstate_holds(st) && !(h->sharers & (1u << i)))
            violation(s, line, "directory inclusion: agent %u holds the line in %s, untracked", i, cxl_dstate_name(st));
        if ((st == DS_E || st == DS_M) && h->owner != i)
            violation(s, line, "directory inclusion: agent %u in %s is not the directory owner", i, cxl_dstate_name(st));
    }
    if (rw > 1 || (rw == 1 && r > 0)) violation(s, line, "SWMR: %u writers and %u readers", rw, r);
}

static void apply_events(cxl_sys *s, const cxl_out *o)
{
    for (unsigned i = 0; i < o->nev; i++) {
        const cxl_ev *e = &o->ev[i];
        uint8_t *g = &s->golden[e->line];
        switch (e->kind) {
        case EV_LOAD:
            s->st.loads_checked++;
            if (e->a != *g) violation(s, e->line, "data value: agent %u loaded %u, golden %u", e->agent, e->a, *g);
            break;
        case EV_STORE:
            s->st.loads_checked++;
            if (e->a != *g) violation(s, e->line, "data value: agent %u store read %u, golden %u", e->agent, e->a, *g);
            *g = e->b;
            break;
        case EV_WRITE: *g = e->a; break;
        case EV_MERGE:
            if (e->a != (uint8_t)((*g + e->b) % s->cfg.values))
                violation(s, e->line, "data value: partial write merged into a stale line (%u, golden %u + %u)", e->a, *g, e->b);
            *g = e->a;
            break;
        case EV_RDCURR:
            s->st.loads_checked++;
            if (e->a != e->b) violation(s, e->line, "data value: RdCurr returned %u, current was %u", e->a, e->b);
            break;
        case EV_CLEAN_DATA:
            if (e->a != e->b) violation(s, e->line, "data value: clean writeback %u differs from memory %u", e->a, e->b);
            break;
        default: break;
        }
    }
}

static void note_tr(cxl_sys *s, const cxl_out *o)
{
    if (o->tr < CXL_TR_TOTAL) s->tr_seen[o->tr] = 1;
}

static size_t al(const cxl_sys *s, unsigned a, uint32_t line) { return (size_t)a * s->cfg.lines + line; }

static bool go_like(const cxl_msg *m)
{
    return m->ch == CXL_H2D_RSP && (m->op == GO || m->op == GO_WritePull || m->op == Fast_GO_WritePull ||
                                    m->op == GO_WritePull_Drop || m->op == WritePull);
}

/* ------------------------------------------------------------ ports */
static void agent_deliver(agent_t *a, tmsg *t);
static void home_deliver(cxl_sys *s, tmsg *t);

static void deliver_to_agent(void *ctx, tmsg *t) { agent_deliver(ctx, t); }
static void deliver_to_home(void *ctx, tmsg *t) { home_deliver(((agent_t *)ctx)->s, t); }

/* snoop-pushes-GO: a snoop may not leave ahead of an earlier GO to the same line */
static bool spg_hold(void *ctx, const cxl_port *p, unsigned cls, const tmsg *req)
{
    (void)ctx;
    if (cls != 0) return false;   /* H2D Req: the snoops */
    for (const tmsg *r = p->q[CXL_H2D_RSP - CXL_H2D_REQ].head; r; r = r->next)
        if (r->m.line == req->m.line && r->seq < req->seq) return true;
    return false;
}

/* A device's ports carry flits over the CXL link; a host core's are on-die. */
static cxl_port *port_new(cxl_sys *s, agent_t *a, bool h2d)
{
    static const char *const d2h_n[3] = { "d2h_req", "d2h_rsp", "d2h_data" };
    static const char *const h2d_n[3] = { "h2d_req", "h2d_rsp", "h2d_data" };
    char an[16], name[32];
    agent_name(s, a->idx, an, sizeof an);
    snprintf(name, sizeof name, "%s_%s", an, h2d ? "h2d" : "d2h");
    bool flits = !a->core;
    cxl_port_cfg pc = { 0 };
    pc.name = name;
    pc.scope = an;
    pc.chan_base = h2d ? CXL_H2D_REQ : CXL_D2H_REQ;
    for (unsigned c = 0; c < 3; c++) {
        pc.class_names[c] = h2d ? h2d_n[c] : d2h_n[c];
        pc.hdr_bits[c] = cxl_hdr_bits(pc.chan_base + c);
        pc.has_data[c] = cxl_has_data(pc.chan_base + c);
    }
    pc.credits[0] = s->cfg.credits_req;
    pc.credits[1] = s->cfg.credits_rsp;
    pc.credits[2] = s->cfg.credits_data;
    pc.flits = flits;
    pc.latency_ps = cxl_ns_ps(flits ? s->cfg.link_ns : s->cfg.ondie_ns);
    pc.GBps = cxl_link_GBps(s->cfg.lanes, s->cfg.gts);
    if (s->cfg.jitter_ns > 0) {
        pc.jitter_ps = cxl_ns_ps(s->cfg.jitter_ns);
        pc.rng = &s->rng;
    }
    pc.hop_queue = h2d ? "h2d_queue" : "d2h_queue";
    pc.hop_pack = h2d ? "h2d_flits" : "d2h_flits";
    pc.hop_wire = flits ? (h2d ? "h2d_link" : "d2h_link") : (h2d ? "ondie_h2d" : "ondie_d2h");
    pc.deliver = h2d ? deliver_to_agent : deliver_to_home;
    pc.hold = h2d ? spg_hold : NULL;
    pc.ctx = a;
    return cxl_port_new(s->k, s->tr, &pc);
}

/* ------------------------------------------------------------ agents */
static void agent_wake_at(agent_t *a, sim_time_ps at)
{
    sim_time_ps now = sim_now(a->s->k);
    sim_event_notify_at(&a->wake, at > now ? at - now : 0);
}

static void agent_send(agent_t *a, const cxl_out *o, const cxl_path *parent)
{
    cxl_sys *s = a->s;
    for (unsigned i = 0; i < o->n; i++) {
        tmsg *t = msg_new(s, &o->m[i]);
        if (t->m.ch == CXL_D2H_DATA || t->m.ch == CXL_D2H_RSP) t->m.chk = s->golden[t->m.line];
        t->path = cxl_path_copy(parent);
        s->st.msgs[t->m.ch]++;
        if (t->m.ch == CXL_D2H_REQ) s->st.req_ops[t->m.op]++;
        cxl_port_enqueue(a->tx, t);
    }
}

static uint16_t cq_alloc(agent_t *a)
{
    if (!a->cq_n) return 0xffff;
    uint16_t id = a->cq_free[--a->cq_n];
    if (a->cq_used[id]) sim_fatal("CQID %u allocated twice", id);
    a->cq_used[id] = 1;
    return id;
}

static void cq_release(agent_t *a, uint16_t id, uint32_t line)
{
    if (id >= a->cq_cap || !a->cq_used[id]) {
        violation(a->s, line, "tracker hygiene: CQID %u of agent %u freed while not allocated", id, a->idx);
        return;
    }
    a->cq_used[id] = 0;
    a->cq_free[a->cq_n++] = id;
}

static void retry_parked(agent_t *a);

static void op_complete(agent_t *a, op_t *x, const cxl_path *path)
{
    cxl_sys *s = a->s;
    a->op_of_line[x->line] = NULL;
    a->n_ops--;
    if (--s->outstanding == 0) sim_event_cancel(&s->wd_wake);   /* idle: let the run end */
    s->st.ops_done++;
    /* accesses waiting for a way or a tracker go before any new access the
     * completion callback issues: a parked miss is not starved by new hits */
    retry_parked(a);
    if (!x->internal && s->done_fn) s->done_fn(s->done_ctx, a->idx, x->line, x->op, x->req, x->t_issue, path);
    free(x->path);
    free(x);
}

static void op_try(agent_t *a, op_t *x);
static void flush_progress(agent_t *a);

static void retry_parked(agent_t *a)
{
    op_t *list = a->parked;
    a->parked = a->parked_tail = NULL;
    while (list) {
        op_t *x = list;
        list = x->next;
        x->next = NULL;
        op_try(a, x);
    }
    flush_progress(a);
}

/* Oldest first: a waiting miss is not overtaken forever by newer accesses. */
static void park(agent_t *a, op_t *x)
{
    x->next = NULL;
    if (a->parked_tail) a->parked_tail->next = x;
    else a->parked = x;
    a->parked_tail = x;
}

static bool op_cacheable(unsigned op)
{
    return op == OP_LOAD || op == OP_LOAD_ANY || op == OP_STORE || op == OP_WRITE_FULL || op == OP_EVICT ||
           op == OP_EVICT_NODATA;
}

/* Evicts one stable line no access is using (a replacement, or a cache flush). */
static bool start_evict(agent_t *a, way *v)
{
    cxl_sys *s = a->s;
    uint16_t cq = cq_alloc(a);
    if (cq == 0xffff) return false;
    op_t *x = calloc(1, sizeof *x);
    if (!x) sim_fatal("out of memory");
    x->line = v->line;
    x->op = (v->d.st == DS_S && sim_rng_below(&s->rng, 2)) ? OP_EVICT_NODATA : OP_EVICT;
    x->internal = true;
    x->t_issue = sim_now(s->k);
    a->op_of_line[x->line] = x;
    a->n_ops++;
    s->outstanding++;
    cxl_out o;
    cxl_dev_core(&s->pcfg, &v->d, a->idx, v->line, x->op, 0, cq, &o);
    note_tr(s, &o);
    hist_add(s, v->line, 0, a->idx, v->d.st, x->op, NULL);
    trace_line(s, a, v->line, v);
    if (o.status != ST_OK) sim_fatal("eviction of a %s line failed", cxl_dstate_name(v->d.st));
    x->req = o.m[0].op;
    agent_send(a, &o, NULL);
    return true;
}

/* A replacement: evict the least recently used stable line of the set that no
 * access is using. Returns false if none can go now. */
static bool start_victim(agent_t *a, uint32_t line)
{
    way *set = &a->w[(size_t)(line % a->sets) * a->ways];
    way *v = NULL;
    for (unsigned i = 0; i < a->ways; i++) {
        way *w = &set[i];
        if (!w->valid || !cxl_dstate_stable(w->d.st) || w->d.st == DS_I || a->op_of_line[w->line]) continue;
        if (!v || w->lru < v->lru) v = w;
    }
    return v && start_evict(a, v);
}

/* CacheFlushed: evict every line, wait for every access to finish, then tell the host. */
static void flush_progress(agent_t *a)
{
    cxl_sys *s = a->s;
    if (!a->flush_op || a->flush_sent) return;
    bool empty = a->n_ops == 0;
    for (size_t i = 0; i < (size_t)a->sets * a->ways; i++) {
        way *w = &a->w[i];
        if (!w->valid || w->d.st == DS_I) continue;
        empty = false;
        if (cxl_dstate_stable(w->d.st) && !a->op_of_line[w->line] && !start_evict(a, w)) break;
    }
    if (!empty) return;
    uint16_t cq = cq_alloc(a);
    if (cq == 0xffff) return;
    cxl_out o;
    cxl_dev_flush_start(a->idx, cq, &o);
    note_tr(s, &o);
    a->flush_cq = cq;
    a->flush_sent = true;
    a->flush_op->req = CacheFlushed;
    agent_send(a, &o, a->flush_op->path);
}

/* An access after its lookup delay: hit, miss (request), or wait. */
static void op_try(agent_t *a, op_t *x)
{
    cxl_sys *s = a->s;
    way *w = find_way(a, x->line);
    if (w && !cxl_dstate_stable(w->d.st)) {   /* a replacement of this line is in flight */
        park(a, x);
        return;
    }
    bool cacheable = op_cacheable(x->op);
    if (!w || w->d.st == DS_I) {
        if (x->op == OP_EVICT || x->op == OP_EVICT_NODATA) {   /* nothing to evict any more */
            op_complete(a, x, x->path);
            retry_parked(a);   /* a waiting cache flush may go now */
            return;
        }
        /* one record per line: an I way and an uncached tracker never coexist */
        if (w && (is_unc(a, w) == cacheable)) {
            w->valid = false;
            w = NULL;
        }
        if (!w) {
            if (cacheable) {
                way *set = &a->w[(size_t)(x->line % a->sets) * a->ways];
                for (unsigned i = 0; i < a->ways && !w; i++)
                    if (!set[i].valid || (set[i].d.st == DS_I && !a->op_of_line[set[i].line])) w = &set[i];
                if (!w) {
                    bool evicting = false;
                    for (unsigned i = 0; i < a->ways; i++)
                        if (set[i].valid && !cxl_dstate_stable(set[i].d.st)) evicting = true;
                    if (!evicting) start_victim(a, x->line);
                    park(a, x);
                    return;
                }
            } else {
                for (unsigned i = 0; i < a->n_unc && !w; i++)
                    if (!a->unc[i].valid) w = &a->unc[i];
                if (!w) {
                    park(a, x);
                    return;
                }
            }
            memset(w, 0, sizeof *w);
            w->valid = true;
            w->line = x->line;
            w->d.st = DS_I;
        }
    } else if (!cacheable) {   /* an uncached access to a line this agent caches: not legal, nothing done */
        op_complete(a, x, x->path);
        retry_parked(a);
        return;
    }
    w->lru = ++a->lru_clock;
    bool needs_req = !(cxl_dstate_perm(w->d.st) >= PERM_R && (x->op == OP_LOAD || x->op == OP_LOAD_ANY)) &&
                     !((w->d.st == DS_E || w->d.st == DS_M) && (x->op == OP_STORE || x->op == OP_WRITE_FULL));
    uint16_t cq = 0;
    if (needs_req) {
        cq = cq_alloc(a);
        if (cq == 0xffff) {
            park(a, x);
            return;
        }
    }
    cxl_out o;
    cxl_dev_core(&s->pcfg, &w->d, a->idx, x->line, x->op, x->wval, cq, &o);
    note_tr(s, &o);
    hist_add(s, x->line, 0, a->idx, w->d.st, x->op, NULL);
    apply_events(s, &o);
    trace_line(s, a, x->line, w);
    if (o.status == ST_HIT || o.status == ST_BUSY) {
        if (needs_req) cq_release(a, cq, x->line);
        if (o.status == ST_HIT) s->st.hits++;
        x->req = CXL_N_D2H_REQ;
        if (is_unc(a, w) && w->d.st == DS_I) w->valid = false;
        check_line(s, x->line);
        op_complete(a, x, x->path);
        retry_parked(a);
        return;
    }
    if (!needs_req) sim_fatal("agent %u: %s in %s sent a request with no tracker", a->idx, cxl_core_op_name(x->op),
                              cxl_dstate_name(w->d.st));
    x->req = o.m[0].op;
    agent_send(a, &o, x->path);
    check_line(s, x->line);
}

/* SPG at the device: no earlier H2D Rsp to this line may still be in flight. */
static void spg_check(cxl_sys *s, const tmsg *t)
{
    uint64_t v = s->rsp_inflight[al(s, t->m.agent, t->m.line)];
    if ((v >> 48) && (v & 0xffffffffffffull) < (t->seq & 0xffffffffffffull))
        violation(s, t->m.line, "ordering: snoop overtook an earlier GO to agent %u (snoop-pushes-GO)", t->m.agent);
}

static void rsp_consumed(cxl_sys *s, const tmsg *t)
{
    uint64_t *v = &s->rsp_inflight[al(s, t->m.agent, t->m.line)];
    uint64_t cnt = *v >> 48;
    if (!cnt) return;
    cnt--;
    /* the remaining one (WOWrInv: Fast_GO then ExtCmp) is younger: keep the seq of this one as a lower bound */
    *v = cnt ? (cnt << 48) | (t->seq & 0xffffffffffffull) : 0;
}

/* Process one received H2D message after its delay. Returns false if it stalls. */
static bool agent_process(agent_t *a, tmsg *t)
{
    cxl_sys *s = a->s;
    uint32_t line = t->m.line;
    way *w = find_way(a, line);
    cxl_dline tmp = { .st = DS_I };
    cxl_dline *d = w ? &w->d : &tmp;
    cxl_out o;
    if (a->flush_sent && cxl_dev_flush_recv(a->flush_cq, &t->m, &o)) {
        note_tr(s, &o);
        sim_link_return_credits(a->rx->link, t->m.ch - CXL_H2D_REQ, 1);
        if (o.status == ST_ERR) violation(s, line, "agent %u: %s", a->idx, o.err);
        cq_release(a, a->flush_cq, line);
        op_t *x = a->flush_op;
        a->flush_op = NULL;
        a->flush_sent = false;
        s->outstanding--;
        s->st.ops_done++;
        cxl_path *pp = cxl_path_copy(t->path);
        cxl_path_add(pp, "dev_fill", a->fill_ps, false);
        if (s->done_fn) s->done_fn(s->done_ctx, a->idx, 0, OP_CACHE_FLUSH, CacheFlushed, x->t_issue, pp);
        free(pp);
        free(x->path);
        free(x);
        if (!s->outstanding) sim_event_cancel(&s->wd_wake);
        retry_parked(a);
        return true;
    }
    if (t->m.ch == CXL_H2D_REQ) spg_check(s, t);
    cxl_dev_recv(&s->pcfg, d, &t->m, &o);
    note_tr(s, &o);
    if (o.status == ST_STALL) return false;
    hist_add(s, line, 1, a->idx, d->st, 0, &t->m);
    if (t->m.ch == CXL_H2D_RSP) rsp_consumed(s, t);
    sim_link_return_credits(a->rx->link, t->m.ch - CXL_H2D_REQ, 1);
    if (o.status == ST_ERR) {
        violation(s, line, "agent %u in %s: %s", a->idx, cxl_dstate_name(d->st), o.err);
        return true;
    }
    apply_events(s, &o);
    cxl_path *pp = cxl_path_copy(t->path);
    cxl_path_add(pp, t->m.ch == CXL_H2D_REQ ? (a->core ? "core_snoop" : "dev_snoop") : (a->core ? "core_fill" : "dev_fill"),
             t->m.ch == CXL_H2D_REQ ? a->snoop_ps : a->fill_ps, false);
    agent_send(a, &o, pp);
    trace_line(s, a, line, w);
    if (o.freed) cq_release(a, t->m.id, line);
    if (o.done) {
        op_t *x = a->op_of_line[line];
        if (w && is_unc(a, w)) w->valid = false;
        if (!x) violation(s, line, "agent %u: a request completed that no access made", a->idx);
        else op_complete(a, x, pp);
    }
    free(pp);
    check_line(s, line);
    if (t->m.ch == CXL_H2D_DATA && a->stalled.n) {   /* snoops waiting for this data */
        mq keep = { 0 };
        tmsg *q;
        while ((q = cxl_mq_pop(&a->stalled))) {
            if (q->m.line == line && agent_process(a, q)) msg_free(s, q);
            else cxl_mq_push(&keep, q);
        }
        a->stalled = keep;
    }
    if (o.done || o.freed) retry_parked(a);
    return true;
}

static void agent_deliver(agent_t *a, tmsg *t)
{
    sim_time_ps now = sim_now(a->s->k);
    if (t->m.ch == CXL_H2D_REQ) {
        t->t_elig = now + a->snoop_ps;
        cxl_mq_push(&a->in_snp, t);
    } else {
        t->t_elig = now + a->fill_ps;
        cxl_mq_push(&a->in_rsp, t);
    }
    agent_wake_at(a, t->t_elig);
}

static void agent_run(void *ctx)
{
    agent_t *a = ctx;
    cxl_sys *s = a->s;
    sim_time_ps now = sim_now(s->k);
    for (;;) {
        /* oldest-ready first across the three queues */
        tmsg *best = NULL;
        mq *bq = NULL;
        if (a->in_rsp.head && a->in_rsp.head->t_elig <= now) {
            best = a->in_rsp.head;
            bq = &a->in_rsp;
        }
        if (a->in_snp.head && a->in_snp.head->t_elig <= now && (!best || a->in_snp.head->t_elig < best->t_elig)) {
            best = a->in_snp.head;
            bq = &a->in_snp;
        }
        if (a->lookup_head && a->lookup_head->t_ready <= now && (!best || a->lookup_head->t_ready < best->t_elig)) {
            op_t *x = a->lookup_head;
            a->lookup_head = x->next;
            if (!a->lookup_head) a->lookup_tail = NULL;
            x->next = NULL;
            op_try(a, x);
            continue;
        }
        if (!best) break;
        cxl_mq_pop(bq);
        if (agent_process(a, best)) msg_free(s, best);
        else cxl_mq_push(&a->stalled, best);
    }
    sim_time_ps next = SIM_TIME_MAX;
    if (a->in_rsp.head) next = a->in_rsp.head->t_elig;
    if (a->in_snp.head && a->in_snp.head->t_elig < next) next = a->in_snp.head->t_elig;
    if (a->lookup_head && a->lookup_head->t_ready < next) next = a->lookup_head->t_ready;
    if (next != SIM_TIME_MAX) agent_wake_at(a, next);
}

/* ------------------------------------------------------------ home agent */
static uint16_t uq_alloc(cxl_sys *s)
{
    if (!s->uq_n) return 0xffff;
    uint16_t id = s->uq_free[--s->uq_n];
    if (s->uq_used[id]) sim_fatal("UQID %u allocated twice", id);
    s->uq_used[id] = 1;
    return id;
}

static void uq_release(cxl_sys *s, uint16_t id, uint32_t line)
{
    if (id >= s->cfg.uqids || !s->uq_used[id]) {
        violation(s, line, "tracker hygiene: UQID %u freed while not allocated", id);
        return;
    }
    s->uq_used[id] = 0;
    s->uq_free[s->uq_n++] = id;
}

static void home_return_credit(cxl_sys *s, const tmsg *t)
{
    unsigned a = t->m.agent;
    sim_link *l = a < s->cfg.devices ? s->ag[a].tx->link : s->ag[a].tx->link;
    sim_link_return_credits(l, t->m.ch - CXL_D2H_REQ, 1);
}

static void home_schedule(cxl_sys *s);
static bool line_busy(const cxl_sys *s, uint32_t line);

static void home_outputs(cxl_sys *s, uint32_t line, const cxl_out *o, const tmsg *cause)
{
    for (unsigned i = 0; i < o->n; i++) {
        tmsg *t = msg_new(s, &o->m[i]);
        t->path = cxl_path_copy(cause->path);
        t->seq = ++s->seq;
        s->st.msgs[t->m.ch]++;
        if (t->m.ch == CXL_MEM_RD) {
            s->st.mem_reads++;
            sim_link_send(s->mem_req, t, 16);
            continue;
        }
        size_t k = al(s, t->m.agent, line);
        if (t->m.ch == CXL_H2D_REQ) {
            s->st.snoops++;
            if (s->snp_cnt[k]) violation(s, line, "ordering: second snoop to agent %u while one is outstanding (3.2.5.5)", t->m.agent);
            s->snp_cnt[k]++;
            s->snp_line[line]++;
        }
        if (t->m.ch == CXL_H2D_RSP) {
            uint64_t *v = &s->rsp_inflight[k];
            uint64_t cnt = *v >> 48;
            *v = cnt ? ((cnt + 1) << 48) | (*v & 0xffffffffffffull) : (1ull << 48) | (t->seq & 0xffffffffffffull);
        }
        hist_add(s, line, 3, t->m.agent, 0, 0, &t->m);
        if (go_like(&t->m) && s->snp_line[line])
            violation(s, line, "ordering: %s sent while %u snoop(s) to the line are outstanding (3.2.5.2/3.2.5.3)",
                      cxl_op_name(t->m.ch, t->m.op), s->snp_line[line]);
        cxl_port_enqueue(s->ag[t->m.agent].rx, t);
    }
}

static void snoop_done(cxl_sys *s, unsigned a, uint32_t line)
{
    size_t k = al(s, a, line);
    if (s->snp_cnt[k]) s->snp_cnt[k]--;
    if (s->snp_line[line]) s->snp_line[line]--;
}

/* Checker bookkeeping for a snoop response or implicit-writeback data arriving at the home agent. */
static void snoop_accounting(cxl_sys *s, const tmsg *t)
{
    size_t k = al(s, t->m.agent, t->m.line);
    if (t->m.ch == CXL_D2H_RSP) {
        bool fwd = t->m.op == RspSFwdM || t->m.op == RspIFwdM || t->m.op == RspVFwdV;
        if (!fwd) snoop_done(s, t->m.agent, t->m.line);
        else if (s->iwb_early[k]) {
            s->iwb_early[k]--;
            snoop_done(s, t->m.agent, t->m.line);
        } else {
            s->iwb_owed[k]++;
        }
    } else if (t->m.ch == CXL_D2H_DATA && (t->m.arg & CXL_DATA_IWB)) {
        if (s->iwb_owed[k]) {
            s->iwb_owed[k]--;
            snoop_done(s, t->m.agent, t->m.line);
        } else {
            s->iwb_early[k]++;
        }
    }
}

/* One message into the home agent's step function. */
static void home_step(cxl_sys *s, tmsg *t)
{
    uint32_t line = t->m.line;
    uint16_t uq = 0xffff;
    if (t->m.ch == CXL_D2H_REQ) {
        uq = uq_alloc(s);
        if (uq == 0xffff) sim_fatal("home_step without a UQID");
    }
    cxl_out o;
    hist_add(s, line, 2, t->m.agent, 0, 0, &t->m);
    snoop_accounting(s, t);
    cxl_ha_recv(&s->pcfg, &s->h[line], &t->m, uq, &o);
    note_tr(s, &o);
    if (o.status == ST_ERR) {
        violation(s, line, "home agent: %s", o.err);
        if (uq != 0xffff) uq_release(s, uq, line);
        return;
    }
    if (o.status == ST_BUSY) sim_fatal("home_step on a busy line");
    if (o.started) s->line_uqid[line] = uq;
    else if (uq != 0xffff) uq_release(s, uq, line);
    apply_events(s, &o);
    home_outputs(s, line, &o, t);
    trace_home(s, line);
    check_line(s, line);
    if (o.done) {
        uq_release(s, s->line_uqid[line], line);
        s->line_uqid[line] = 0xffff;
    }
    if (o.done || !line_busy(s, line)) home_schedule(s);
}

static bool line_busy(const cxl_sys *s, uint32_t line)
{
    const cxl_hline *h = &s->h[line];
    return h->phase != HP_IDLE || h->snp_pending || (h->data_expect & ~h->data_got);
}

/* Starts, in arrival order, every waiting request whose line is free and for
 * which a UQID is left; a request never passes an older one to its line. */
static void home_schedule(cxl_sys *s)
{
    if (s->in_schedule) return;   /* a start can finish a transaction: one scan at a time */
    s->in_schedule = true;
    bool again = true;
    while (again) {
        again = false;
        s->sched_stamp++;
        tmsg **pp = &s->pending.head, *prev = NULL;
        while (*pp && s->uq_n) {
            tmsg *t = *pp;
            uint32_t line = t->m.line;
            if (s->line_stamp[line] == s->sched_stamp || line_busy(s, line)) {
                s->line_stamp[line] = s->sched_stamp;   /* later requests to this line wait too */
                prev = t;
                pp = &t->next;
                continue;
            }
            *pp = t->next;
            if (s->pending.tail == t) s->pending.tail = prev;
            s->pending.n--;
            t->next = NULL;
            if (sim_now(s->k) > t->t_elig) cxl_path_add(t->path, "home_wait", sim_now(s->k) - t->t_elig, false);
            home_return_credit(s, t);
            home_step(s, t);
            msg_free(s, t);
            again = true;   /* the list changed under us: rescan */
            break;
        }
    }
    s->in_schedule = false;
}

static void home_deliver(cxl_sys *s, tmsg *t)
{
    if (t->m.ch == CXL_D2H_REQ) {
        t->t_elig = sim_now(s->k) + cxl_ns_ps(s->cfg.home_ns);
        cxl_path_add(t->path, "home_lookup", cxl_ns_ps(s->cfg.home_ns), false);
        cxl_mq_push(&s->req_q, t);
        sim_event_notify_at(&s->home_wake, cxl_ns_ps(s->cfg.home_ns));
        return;
    }
    home_return_credit(s, t);
    home_step(s, t);
    msg_free(s, t);
}

static void home_cache_flushed(cxl_sys *s, tmsg *t)
{
    home_return_credit(s, t);
    hist_add(s, 0, 2, t->m.agent, 0, 0, &t->m);
    cxl_out o;
    cxl_ha_cache_flushed(s->h, s->cfg.lines, &t->m, &o);
    note_tr(s, &o);
    if (o.status == ST_ERR) violation(s, 0, "home agent: %s (from agent %u)", o.err, t->m.agent);
    for (unsigned i = 0; i < o.n; i++) {
        tmsg *r = msg_new(s, &o.m[i]);
        r->path = cxl_path_copy(t->path);
        r->seq = ++s->seq;
        s->st.msgs[r->m.ch]++;
        cxl_port_enqueue(s->ag[r->m.agent].rx, r);
    }
    msg_free(s, t);
}

static void home_run(void *ctx)
{
    cxl_sys *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->req_q.head && s->req_q.head->t_elig <= now) {
        tmsg *t = cxl_mq_pop(&s->req_q);
        if (t->m.op == CacheFlushed) {   /* device level: not serialised on a line */
            home_cache_flushed(s, t);
            continue;
        }
        t->t_elig = now;
        cxl_mq_push(&s->pending, t);
    }
    home_schedule(s);
    if (s->req_q.head) sim_event_notify_at(&s->home_wake, s->req_q.head->t_elig - now);
}

/* ------------------------------------------------------------ memory */
static void mem_rx(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    cxl_sys *s = ctx;
    tmsg *t = msg;
    bool hit = false;
    if (s->llc_tag) {
        uint32_t slot = t->m.line % s->cfg.llc_lines;
        hit = s->llc_tag[slot] == t->m.line + 1;
        s->llc_tag[slot] = t->m.line + 1;
    }
    sim_time_ps lat = hit ? cxl_ns_ps(s->cfg.llc_ns) : cxl_ns_ps(s->cfg.mem_ns);
    if (hit) s->st.llc_hits++;
    cxl_path_add(t->path, hit ? "llc" : "mem", lat, false);
    t->t_elig = sim_now(s->k) + lat;
    /* reads complete in order of readiness; the queue is kept sorted */
    tmsg **pp = &s->mem_q.head, *prev = NULL;
    while (*pp && (*pp)->t_elig <= t->t_elig) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    t->next = *pp;
    *pp = t;
    if (!t->next) s->mem_q.tail = t;
    (void)prev;
    s->mem_q.n++;
    sim_event_notify_at(&s->mem_wake, s->mem_q.head->t_elig - sim_now(s->k));
}

static void mem_run(void *ctx)
{
    cxl_sys *s = ctx;
    sim_time_ps now = sim_now(s->k);
    while (s->mem_q.head && s->mem_q.head->t_elig <= now) {
        tmsg *t = cxl_mq_pop(&s->mem_q);
        t->m.ch = CXL_MEM_DATA;
        t->m.chk = s->golden[t->m.line];   /* checker metadata: the value current at the read */
        sim_link_send(s->mem_rsp, t, 80);
    }
    if (s->mem_q.head) sim_event_notify_at(&s->mem_wake, s->mem_q.head->t_elig - now);
}

static void mem_back(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    cxl_sys *s = ctx;
    tmsg *t = msg;
    home_step(s, t);
    msg_free(s, t);
}

/* ------------------------------------------------------------ watchdog */
static void wd_run(void *ctx)
{
    cxl_sys *s = ctx;
    sim_time_ps now = sim_now(s->k), limit = cxl_ns_ps(s->cfg.watchdog_ns);
    for (unsigned i = 0; i < s->na; i++) {
        agent_t *a = &s->ag[i];
        if (a->flush_op && now - a->flush_op->t_issue > limit) {
            s->st.deadlocks++;
            violation(s, 0, "deadlock watchdog: agent %u's cache flush has waited %.1f ns", i,
                      (now - a->flush_op->t_issue) / 1000.0);
            a->flush_op->t_issue = now;
        }
        for (uint32_t l = 0; l < s->cfg.lines; l++) {
            op_t *x = a->op_of_line[l];
            if (x && now - x->t_issue > limit) {
                s->st.deadlocks++;
                violation(s, l, "deadlock watchdog: agent %u's %s has waited %.1f ns", i, cxl_core_op_name(x->op),
                          (now - x->t_issue) / 1000.0);
                if (s->cfg.log && s->reports <= 3) {   /* what the stuck agent and the home are doing */
                    for (size_t wi = 0; wi < (size_t)a->sets * a->ways; wi++)
                        fprintf(s->cfg.log, "  way %zu: valid %d line %u %s op %p\n", wi, a->w[wi].valid, a->w[wi].line,
                                cxl_dstate_name(a->w[wi].d.st), (void *)a->op_of_line[a->w[wi].line]);
                    for (op_t *p = a->parked; p; p = p->next) fprintf(s->cfg.log, "  parked %p line %u %s\n", (void *)p, p->line, cxl_core_op_name(p->op));
                    fprintf(s->cfg.log, "  cq free %u n_ops %u flush %p\n", a->cq_n, a->n_ops, (void *)a->flush_op);
                    fprintf(s->cfg.log, "  tx q %u/%u/%u credits %u/%u/%u; rx q %u/%u/%u; in %u/%u stalled %u\n", a->tx->q[0].n,
                            a->tx->q[1].n, a->tx->q[2].n, sim_link_credits(a->tx->link, 0), sim_link_credits(a->tx->link, 1),
                            sim_link_credits(a->tx->link, 2), a->rx->q[0].n, a->rx->q[1].n, a->rx->q[2].n, a->in_snp.n, a->in_rsp.n,
                            a->stalled.n);
                    for (tmsg *p = s->pending.head; p; p = p->next)
                        fprintf(s->cfg.log, "  home pending: %s line %u from %u\n", cxl_op_name(p->m.ch, p->m.op), p->m.line, p->m.agent);
                    for (uint32_t hl = 0; hl < s->cfg.lines; hl++)
                        fprintf(s->cfg.log, "  home line %u phase %u op %s req %u snp %#x exp %#x got %#x\n", hl, s->h[hl].phase,
                                s->h[hl].op < CXL_N_D2H_REQ ? cxl_op_name(CXL_D2H_REQ, s->h[hl].op) : "-", s->h[hl].req,
                                s->h[hl].snp_pending, s->h[hl].data_expect, s->h[hl].data_got);
                }
                x->t_issue = now;   /* report once per watchdog period */
            }
        }
    }
    if (s->st.deadlocks) sim_stop(s->k);   /* stuck: end the run, the final check reports what is left */
    else if (s->outstanding) sim_event_notify_at(&s->wd_wake, limit / 2 + 1);
}

/* ------------------------------------------------------------ construction */
void cxl_sys_cfg_defaults(cxl_sys_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->devices = 1;
    c->cores = 1;
    c->lines = 64;
    c->dev_sets = 64;
    c->dev_ways = 4;
    c->core_sets = 64;
    c->core_ways = 4;
    c->link_ns = 25;
    c->lanes = 16;
    c->gts = 32;
    c->home_ns = 15;
    c->core_snoop_ns = 40;
    c->core_ns = 2;
    c->dev_ns = 5;
    c->mem_ns = 100;
    c->llc_ns = 20;
    c->llc_lines = 0;
    c->ondie_ns = 0;
    c->jitter_ns = 0;
    c->credits_req = 16;
    c->credits_rsp = 16;
    c->credits_data = 16;
    c->cqids = 16;
    c->uqids = 64;
    c->values = 256;
    c->inject = INJ_NONE;
    c->seed = 1;
    c->watchdog_ns = 1e6;
}

/* CXL 1.1/2.0 run the 68 B flit over the PCIe 5 electricals at 32 GT/s and
 * fall back to 16 or 8 GT/s; 2.5 and 5 GT/s are only where a Flex Bus link
 * trains in PCIe mode, never CXL. 64 GT/s (CXL 3.x) carries 256 B flits on
 * the PCIe 6 PAM4 Flit Mode PHY (FEC + CRC in the flit, no 128b/130b): a
 * different packer (15 slots, other header formats, whole-line data), which
 * this model does not have, so it refuses the rate rather than run 68 B flits
 * at it. */
void cxl_sys_cfg_timing_from_params(cxl_sys_cfg *c, const sim_params *p, const char *test)
{
    c->link_ns = sim_param_double(p, "link_ns");
    c->lanes = (unsigned)sim_param_int(p, "lanes");
    c->gts = sim_param_double(p, "gts");
    cxl_link_check_params(test, c->lanes, c->gts);
    c->home_ns = sim_param_double(p, "home_ns");
    c->core_snoop_ns = sim_param_double(p, "core_snoop_ns");
    c->dev_ns = sim_param_double(p, "dev_ns");
    c->mem_ns = sim_param_double(p, "mem_ns");
    c->llc_ns = sim_param_double(p, "llc_ns");
}

void cxl_sys_cfg_agents_from_params(cxl_sys_cfg *c, const sim_params *p, const char *test)
{
    c->devices = (unsigned)sim_param_int(p, "devices");
    c->cores = (unsigned)sim_param_int(p, "cores");
    if (c->devices + c->cores > CXL_MAX_AGENTS)
        sim_input_error("%s: devices=%u + cores=%u = %u agents; allowed at most %d", test, c->devices, c->cores,
                        c->devices + c->cores, CXL_MAX_AGENTS);
    c->lines = (uint32_t)sim_param_int(p, "lines");
}

cxl_sys *cxl_sys_new(sim_kernel *k, const cxl_sys_cfg *cfg, sim_trace *tr)
{
    if (cfg->gts != 8 && cfg->gts != 16 && cfg->gts != 32)   /* the params path refuses these with exit 2 */
        sim_fatal("cxl_sys: gts=%g is not a rate of the 68-byte flit mode (8, 16, 32)", cfg->gts);
    cxl_sys *s = calloc(1, sizeof *s);
    if (!s) sim_fatal("out of memory");
    s->k = k;
    s->cfg = *cfg;
    s->tr = tr;
    s->pcfg.values = cfg->values;
    s->pcfg.inject = cfg->inject;
    s->na = cfg->devices + cfg->cores;
    if (s->na > CXL_MAX_AGENTS || s->na == 0) sim_fatal("cxl_sys: %u agents (1..%d)", s->na, CXL_MAX_AGENTS);
    sim_rng_seed_stream(&s->rng, cfg->seed, 0xc1);
    uint32_t L = cfg->lines;
    s->h = calloc(L, sizeof *s->h);
    s->line_stamp = calloc(L, sizeof *s->line_stamp);
    s->golden = calloc(L, 1);
    s->snp_cnt = calloc((size_t)L * s->na, 1);
    s->iwb_owed = calloc((size_t)L * s->na, 1);
    s->iwb_early = calloc((size_t)L * s->na, 1);
    s->snp_line = calloc(L, sizeof *s->snp_line);
    s->rsp_inflight = calloc((size_t)L * s->na, sizeof *s->rsp_inflight);
    s->line_uqid = malloc(L * sizeof *s->line_uqid);
    s->uq_free = malloc(cfg->uqids * sizeof *s->uq_free);
    s->uq_used = calloc(cfg->uqids, 1);
    if (!s->h || !s->line_stamp || !s->golden || !s->snp_cnt || !s->iwb_owed || !s->iwb_early || !s->snp_line ||
        !s->rsp_inflight || !s->line_uqid || !s->uq_free || !s->uq_used)
        sim_fatal("out of memory");
    for (uint32_t l = 0; l < L; l++) {
        cxl_ha_init_line(&s->h[l], 0);
        s->line_uqid[l] = 0xffff;
    }
    for (unsigned i = 0; i < cfg->uqids; i++) s->uq_free[s->uq_n++] = (uint16_t)(cfg->uqids - 1 - i);
    if (cfg->history) {
        s->hist = calloc((size_t)L * HIST_LEN, sizeof *s->hist);
        s->hist_n = calloc(L, sizeof *s->hist_n);
        if (!s->hist || !s->hist_n) sim_fatal("out of memory");
    }
    if (cfg->llc_lines) {
        s->llc_tag = calloc(cfg->llc_lines, sizeof *s->llc_tag);
        if (!s->llc_tag) sim_fatal("out of memory");
    }
    if (tr) sim_trace_push_scope(tr, "cxl");
    s->ag = calloc(s->na, sizeof *s->ag);
    if (!s->ag) sim_fatal("out of memory");
    for (unsigned i = 0; i < s->na; i++) {
        agent_t *a = &s->ag[i];
        a->s = s;
        a->idx = i;
        a->core = i >= cfg->devices;
        a->sets = a->core ? cfg->core_sets : cfg->dev_sets;
        a->ways = a->core ? cfg->core_ways : cfg->dev_ways;
        a->w = calloc((size_t)a->sets * a->ways, sizeof *a->w);
        a->n_unc = cfg->cqids;
        a->unc = calloc(a->n_unc, sizeof *a->unc);
        a->cq_cap = cfg->cqids + 1;   /* one spare for a replacement */
        a->cq_free = malloc(a->cq_cap * sizeof *a->cq_free);
        a->cq_used = calloc(a->cq_cap, 1);
        a->op_of_line = calloc(L, sizeof *a->op_of_line);
        if (!a->w || !a->unc || !a->cq_free || !a->cq_used || !a->op_of_line) sim_fatal("out of memory");
        for (unsigned q = 0; q < a->cq_cap; q++) a->cq_free[a->cq_n++] = (uint16_t)(a->cq_cap - 1 - q);
        a->lookup_ps = cxl_ns_ps(a->core ? cfg->core_ns : cfg->dev_ns);
        a->fill_ps = cxl_ns_ps(a->core ? cfg->core_ns : cfg->dev_ns);
        a->snoop_ps = cxl_ns_ps(a->core ? cfg->core_snoop_ns : cfg->dev_ns);
        a->tx = port_new(s, a, false);
        a->rx = port_new(s, a, true);
        sim_event_init(&a->wake, k, "agent_wake");
        sim_method_init(&a->proc, k, "agent", agent_run, a);
        sim_sensitive(&a->proc, &a->wake);
        sim_dont_initialize(&a->proc);
        if (tr && cfg->trace_lines) {
            char an[16];
            agent_name(s, i, an, sizeof an);
            sim_trace_push_scope(tr, an);
            a->tv_line = calloc(cfg->trace_lines, sizeof *a->tv_line);
            for (unsigned l = 0; l < cfg->trace_lines && l < L; l++) {
                char nm[16];
                snprintf(nm, sizeof nm, "L%u", l);
                a->tv_line[l] = sim_trace_add_string(tr, nm);
                sim_trace_str(tr, a->tv_line[l], "I");
            }
            sim_trace_pop_scope(tr);
        }
    }
    if (tr && cfg->trace_lines) {
        sim_trace_push_scope(tr, "home");
        s->tv_home = calloc(cfg->trace_lines, sizeof *s->tv_home);
        for (unsigned l = 0; l < cfg->trace_lines && l < L; l++) {
            char nm[16];
            snprintf(nm, sizeof nm, "L%u", l);
            s->tv_home[l] = sim_trace_add_string(tr, nm);
            trace_home(s, l);
        }
        sim_trace_pop_scope(tr);
    }
    if (tr) sim_trace_pop_scope(tr);
    sim_event_init(&s->home_wake, k, "home_wake");
    sim_method_init(&s->home_proc, k, "home", home_run, s);
    sim_sensitive(&s->home_proc, &s->home_wake);
    sim_dont_initialize(&s->home_proc);
    sim_link_cfg mc = { 0 };
    mc.name = "mem_req";
    s->mem_req = sim_link_new(k, &mc);
    mc.name = "mem_rsp";
    s->mem_rsp = sim_link_new(k, &mc);
    sim_link_set_receiver(s->mem_req, mem_rx, s);
    sim_link_set_receiver(s->mem_rsp, mem_back, s);
    sim_event_init(&s->mem_wake, k, "mem_wake");
    sim_method_init(&s->mem_proc, k, "mem", mem_run, s);
    sim_sensitive(&s->mem_proc, &s->mem_wake);
    sim_dont_initialize(&s->mem_proc);
    sim_event_init(&s->wd_wake, k, "watchdog");
    sim_method_init(&s->wd_proc, k, "watchdog", wd_run, s);
    sim_sensitive(&s->wd_proc, &s->wd_wake);
    sim_dont_initialize(&s->wd_proc);
    s->st.flit_ps = (sim_time_ps)(CXL_FLIT_BYTES * 1000.0 / cxl_link_GBps(cfg->lanes, cfg->gts) + 0.5);
    return s;
}

static void free_queue(cxl_sys *s, mq *q)
{
    tmsg *t;
    while ((t = cxl_mq_pop(q))) msg_free(s, t);
}

void cxl_sys_free(cxl_sys *s)
{
    if (!s) return;
    for (unsigned i = 0; i < s->na; i++) {
        agent_t *a = &s->ag[i];
        for (unsigned c = 0; c < 3; c++) {
            free_queue(s, &a->tx->q[c]);
            free_queue(s, &a->rx->q[c]);
        }
        for (unsigned d = 0; d < a->tx->data_n; d++) msg_free(s, a->tx->data_q[d]);
        for (unsigned d = 0; d < a->rx->data_n; d++) msg_free(s, a->rx->data_q[d]);
        free_queue(s, &a->in_snp);
        free_queue(s, &a->in_rsp);
        free_queue(s, &a->stalled);
        cxl_port_free(a->tx);
        cxl_port_free(a->rx);
        for (uint32_t l = 0; l < s->cfg.lines; l++)
            if (a->op_of_line[l]) {
                free(a->op_of_line[l]->path);
                free(a->op_of_line[l]);
            }
        if (a->flush_op) {
            free(a->flush_op->path);
            free(a->flush_op);
        }
        free(a->w);
        free(a->unc);
        free(a->cq_free);
        free(a->cq_used);
        free(a->op_of_line);
        free(a->tv_line);
    }
    free_queue(s, &s->req_q);
    free_queue(s, &s->pending);
    free_queue(s, &s->mem_q);
    sim_link_free(s->mem_req);
    sim_link_free(s->mem_rsp);
    while (s->free_msgs) {
        tmsg *t = s->free_msgs;
        s->free_msgs = t->next;
        free(t);
    }
    free(s->ag);
    free(s->h);
    free(s->line_stamp);
    free(s->golden);
    free(s->snp_cnt);
    free(s->iwb_owed);
    free(s->iwb_early);
    free(s->snp_line);
    free(s->rsp_inflight);
    free(s->line_uqid);
    free(s->uq_free);
    free(s->uq_used);
    free(s->hist);
    free(s->hist_n);
    free(s->llc_tag);
    free(s->tv_home);
    free(s);
}

void cxl_sys_set_done(cxl_sys *s, cxl_done_fn fn, void *ctx)
{
    s->done_fn = fn;
    s->done_ctx = ctx;
}

unsigned cxl_sys_agents(const cxl_sys *s) { return s->na; }
bool cxl_sys_is_core(const cxl_sys *s, unsigned agent) { return agent >= s->cfg.devices; }

unsigned cxl_sys_line_state(const cxl_sys *s, unsigned agent, uint32_t line)
{
    way *w = find_way(&s->ag[agent], line);
    return w ? w->d.st : DS_I;
}

bool cxl_sys_busy(const cxl_sys *s, unsigned agent, uint32_t line) { return s->ag[agent].op_of_line[line] != NULL; }

bool cxl_sys_issue(cxl_sys *s, unsigned agent, uint32_t line, unsigned op, uint8_t wval)
{
    if (agent >= s->na || line >= s->cfg.lines || op >= CXL_N_CORE_OP) sim_fatal("cxl_sys_issue: bad arguments");
    agent_t *a = &s->ag[agent];
    if (a->flush_op) return false;   /* a flushing device takes no new accesses */
    if (op == OP_CACHE_FLUSH) {
        if (a->core) return false;
        op_t *f = calloc(1, sizeof *f);
        if (!f) sim_fatal("out of memory");
        f->op = OP_CACHE_FLUSH;
        f->t_issue = sim_now(s->k);
        if (s->cfg.track_paths) {
            f->path = calloc(1, sizeof *f->path);
            if (!f->path) sim_fatal("out of memory");
        }
        a->flush_op = f;
        s->outstanding++;
        flush_progress(a);
        if (!sim_event_pending(&s->wd_wake)) sim_event_notify_at(&s->wd_wake, cxl_ns_ps(s->cfg.watchdog_ns) / 2 + 1);
        return true;
    }
    if (a->op_of_line[line]) return false;
    op_t *x = calloc(1, sizeof *x);
    if (!x) sim_fatal("out of memory");
    x->line = line;
    x->op = (uint8_t)op;
    x->wval = wval;
    x->t_issue = sim_now(s->k);
    x->t_ready = x->t_issue + a->lookup_ps;
    if (s->cfg.track_paths) {
        x->path = calloc(1, sizeof *x->path);
        if (!x->path) sim_fatal("out of memory");
        cxl_path_add(x->path, a->core ? "core_lookup" : "dev_lookup", a->lookup_ps, false);
    }
    a->op_of_line[line] = x;
    a->n_ops++;
    s->outstanding++;
    if (a->lookup_tail) a->lookup_tail->next = x;
    else a->lookup_head = x;
    a->lookup_tail = x;
    agent_wake_at(a, x->t_ready);
    if (!sim_event_pending(&s->wd_wake)) sim_event_notify_at(&s->wd_wake, cxl_ns_ps(s->cfg.watchdog_ns) / 2 + 1);
    return true;
}

void cxl_sys_set_mem(cxl_sys *s, uint32_t line, uint8_t v)
{
    s->h[line].mem = v;
    s->golden[line] = v;
}

uint64_t cxl_sys_outstanding(const cxl_sys *s) { return s->outstanding; }
const char *cxl_sys_first_violation(const cxl_sys *s) { return s->first_violation; }

void cxl_sys_reset_link_stats(cxl_sys *s)
{
    for (unsigned i = 0; i < s->na; i++) {
        sim_link_reset_stats(s->ag[i].tx->link);
        sim_link_reset_stats(s->ag[i].rx->link);
    }
}

void cxl_sys_stats_get(cxl_sys *s, cxl_sys_stats *st)
{
    *st = s->st;
    double ud = 0, uh = 0;
    for (unsigned i = 0; i < s->cfg.devices; i++) {
        agent_t *a = &s->ag[i];
        ud += sim_link_utilisation(a->tx->link);
        uh += sim_link_utilisation(a->rx->link);
        st->flits_d2h += a->tx->flits_sent;
        st->flits_h2d += a->rx->flits_sent;
        for (unsigned c = 0; c < 3; c++) {
            st->credit_stall_ps[c] += cxl_port_stall_ps(a->tx, c);
            st->credit_stall_ps[3 + c] += cxl_port_stall_ps(a->rx, c);
        }
    }
    st->link_util_d2h = s->cfg.devices ? ud / s->cfg.devices : 0;
    st->link_util_h2d = s->cfg.devices ? uh / s->cfg.devices : 0;
    unsigned total = 0;
    const uint8_t *def = cxl_transitions_defined(&total);
    st->tr_total = total;
    st->tr_covered = 0;
    for (unsigned i = 0; i < CXL_TR_TOTAL; i++)
        if (def[i] && s->tr_seen[i]) st->tr_covered++;
}

unsigned cxl_sys_final_check(cxl_sys *s, char *why, size_t n)
{
    unsigned fails = 0;
#define FAIL(...) do { if (!fails++) snprintf(why, n, __VA_ARGS__); } while (0)
    if (s->outstanding) {
        FAIL("%" PRIu64 " accesses still outstanding", s->outstanding);
        if (s->cfg.log)
            for (unsigned i = 0; i < s->na; i++) {
                agent_t *a = &s->ag[i];
                fprintf(s->cfg.log, "  agent %u: tx q %u/%u/%u credits %u/%u/%u data owed %u; rx q %u/%u/%u credits %u/%u/%u; "
                        "in %u/%u stalled %u parked %d lookup %d\n", i, a->tx->q[0].n, a->tx->q[1].n, a->tx->q[2].n,
                        sim_link_credits(a->tx->link, 0), sim_link_credits(a->tx->link, 1), sim_link_credits(a->tx->link, 2), a->tx->data_n,
                        a->rx->q[0].n, a->rx->q[1].n, a->rx->q[2].n, sim_link_credits(a->rx->link, 0), sim_link_credits(a->rx->link, 1),
                        sim_link_credits(a->rx->link, 2), a->in_snp.n, a->in_rsp.n, a->stalled.n, a->parked != NULL,
                        a->lookup_head != NULL);
            }
    }
    if (s->pending.n) FAIL("%u requests never started at the home agent", s->pending.n);
    if (s->uq_n != s->cfg.uqids) FAIL("tracker hygiene: %u of %u UQIDs free at the end", s->uq_n, s->cfg.uqids);
    for (unsigned i = 0; i < s->na; i++) {
        agent_t *a = &s->ag[i];
        char w[256];
        if (a->cq_n != a->cq_cap) FAIL("tracker hygiene: agent %u has %u of %u CQIDs free", i, a->cq_n, a->cq_cap);
        if (sim_link_check(a->tx->link, true, w, sizeof w)) FAIL("%s", w);
        if (sim_link_check(a->rx->link, true, w, sizeof w)) FAIL("%s", w);
        for (unsigned c = 0; c < 3; c++)
            if (sim_link_credits_outstanding(a->tx->link, c) || sim_link_credits_outstanding(a->rx->link, c))
                FAIL("agent %u: credits of channel %u never returned", i, c);
    }
    for (uint32_t l = 0; l < s->cfg.lines; l++) {
        const cxl_hline *h = &s->h[l];
        if (h->phase != HP_IDLE) {
            FAIL("line %u: home agent not idle", l);
            continue;
        }
        uint16_t holders = 0;
        unsigned owner = CXL_NO_AGENT;
        bool dirty = false;
        for (unsigned i = 0; i < s->na; i++) {
            unsigned st = cxl_sys_line_state(s, i, l);
            if (!cxl_dstate_stable(st)) FAIL("line %u: agent %u left in %s", l, i, cxl_dstate_name(st));
            if (cxl_dstate_holds(st)) holders |= (uint16_t)(1u << i);
            if (st == DS_E || st == DS_M) owner = i;
            if (st == DS_M) dirty = true;
        }
        if (holders != h->sharers) FAIL("line %u: quiescent directory %#x != caches %#x", l, h->sharers, holders);
        if (owner != h->owner) FAIL("line %u: quiescent owner %u != E/M holder %u", l, h->owner, owner);
        if (!dirty && h->mem != s->golden[l]) FAIL("line %u: memory %u != golden %u with no dirty copy", l, h->mem, s->golden[l]);
        if (s->snp_line[l]) FAIL("line %u: %u snoops never answered", l, s->snp_line[l]);
    }
#undef FAIL
    return fails;
}
