/* Lock-step comparison of two crossbar cores (see xbar_lockstep.h). */
#include "models/nvswitch/xbar_lockstep.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xbar_lockstep *xbar_lockstep_new(const xbar_core_ops *a_ops, void *a,
                                 const xbar_core_ops *b_ops, void *b, int ports)
{
    if (ports < 1 || ports > XBAR_MAX_PORTS) return NULL;
    xbar_lockstep *ls = calloc(1, sizeof *ls);
    if (!ls) return NULL;
    ls->a_ops = a_ops;
    ls->a = a;
    ls->b_ops = b_ops;
    ls->b = b;
    ls->ports = ports;
    return ls;
}

void xbar_lockstep_free(xbar_lockstep *ls)
{
    if (!ls) return;
    if (ls->a_ops && ls->a_ops->free) ls->a_ops->free(ls->a);
    if (ls->b_ops && ls->b_ops->free) ls->b_ops->free(ls->b);
    free(ls);
}

static void note(xbar_lockstep *ls, int *diffs, const char *field, int port, uint64_t a, uint64_t b)
{
    (*diffs)++;
    if (ls->n_kept < XBAR_LOCKSTEP_KEEP) {
        xbar_mismatch *m = &ls->kept[ls->n_kept++];
        m->cycle = ls->cycles_compared;
        m->field = field;
        m->port = port;
        m->a = a;
        m->b = b;
    }
}

int xbar_lockstep_step(xbar_lockstep *ls, const xbar_in *in, xbar_out *out)
{
    ls->a_ops->step(ls->a, in, out);
    ls->b_ops->step(ls->b, in, &ls->out_b);
    return xbar_lockstep_compare(ls, out, &ls->out_b);
}

int xbar_lockstep_compare(xbar_lockstep *ls, const xbar_out *out, const xbar_out *ob)
{
    int d = 0;
    const uint64_t all = ls->ports >= 64 ? ~0ULL : (1ULL << ls->ports) - 1;
    if ((out->valid ^ ob->valid) & all) note(ls, &d, "valid", -1, out->valid & all, ob->valid & all);
    for (uint64_t m = out->valid & ob->valid & all; m; m &= m - 1) {
        int j = __builtin_ctzll(m);
        if (out->out_data[j] != ob->out_data[j]) note(ls, &d, "data", j, out->out_data[j], ob->out_data[j]);
        if (out->out_src[j] != ob->out_src[j]) note(ls, &d, "src", j, out->out_src[j], ob->out_src[j]);
    }
    if ((out->credit ^ ob->credit) & all) note(ls, &d, "credit", -1, out->credit & all, ob->credit & all);
    for (uint64_t m = out->credit & ob->credit & all; m; m &= m - 1) {
        int i = __builtin_ctzll(m);
        if (out->credit_queue[i] != ob->credit_queue[i])
            note(ls, &d, "credit_queue", i, out->credit_queue[i], ob->credit_queue[i]);
    }
    for (int i = 0; i < ls->ports; i++)
        if (out->credit_extra[i] != ob->credit_extra[i])
            note(ls, &d, "credit_extra", i, out->credit_extra[i], ob->credit_extra[i]);
    if (ls->compare_match) {
        if ((out->match_in ^ ob->match_in) & all) note(ls, &d, "match_in", -1, out->match_in & all, ob->match_in & all);
        for (uint64_t m = out->match_in & ob->match_in & all; m; m &= m - 1) {
            int i = __builtin_ctzll(m);
            if (out->match_out[i] != ob->match_out[i]) note(ls, &d, "match_out", i, out->match_out[i], ob->match_out[i]);
        }
    }
    ls->cycles_compared++;
    ls->mismatches += (uint64_t)d;
    if (d) ls->mismatch_cycles++;
    return d;
}

void xbar_lockstep_describe(const xbar_lockstep *ls, int k, char *buf, size_t n)
{
    if (k < 0 || k >= ls->n_kept) {
        snprintf(buf, n, "-");
        return;
    }
    const xbar_mismatch *m = &ls->kept[k];
    const char *an = ls->a_ops->name ? ls->a_ops->name : "a";
    const char *bn = ls->b_ops->name ? ls->b_ops->name : "b";
    if (m->port < 0)
        snprintf(buf, n, "cycle %" PRIu64 " %s: %s=0x%" PRIx64 " %s=0x%" PRIx64, m->cycle, m->field, an,
                 m->a, bn, m->b);
    else
        snprintf(buf, n, "cycle %" PRIu64 " %s[%d]: %s=0x%" PRIx64 " %s=0x%" PRIx64, m->cycle, m->field,
                 m->port, an, m->a, bn, m->b);
}

static void ls_step(void *impl, const xbar_in *in, xbar_out *out) { xbar_lockstep_step(impl, in, out); }
static void ls_free(void *impl) { xbar_lockstep_free(impl); }
const xbar_core_ops xbar_lockstep_ops = { "both", ls_step, ls_free };
