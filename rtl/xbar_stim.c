/* Stimulus and scoreboard for crossbar cores (see xbar_stim.h). */
#include "xbar_stim.h"

#include <stdlib.h>
#include <string.h>

#include "sim/kernel.h"

static uint64_t all_ports(unsigned n) { return n >= 64 ? ~0ull : ((1ull << n) - 1); }

void xbar_stim_init(xbar_stim *s, const xbar_stim_cfg *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    sim_rng_seed_stream(&s->rng, cfg->seed, 0x5717);
    for (unsigned i = 0; i < cfg->ports; i++) {
        for (unsigned j = 0; j < cfg->ports; j++) s->credits[i][j] = cfg->depth;
        s->next_seq[i] = 1;
        s->perm[i] = (uint8_t)i;
        s->srcq_mask[i] = calloc(XBAR_STIM_SRCQ, sizeof(uint64_t));
        if (!s->srcq_mask[i]) sim_fatal("out of memory");
    }
    for (unsigned i = cfg->ports; i > 1; i--) {   /* Fisher-Yates */
        unsigned k = (unsigned)sim_rng_below(&s->rng, i);
        uint8_t t = s->perm[i - 1];
        s->perm[i - 1] = s->perm[k];
        s->perm[k] = t;
    }
}

void xbar_stim_free(xbar_stim *s)
{
    for (unsigned i = 0; i < s->cfg.ports; i++) free(s->srcq_mask[i]);
}

static uint64_t pick_dest(xbar_stim *s, unsigned i)
{
    const unsigned n = s->cfg.ports;
    if (s->cfg.mcast_frac > 0 && sim_rng_bernoulli(&s->rng, s->cfg.mcast_frac)) {
        unsigned k = s->cfg.mcast_fanout < 2 ? 2 : (s->cfg.mcast_fanout > n ? n : s->cfg.mcast_fanout);
        uint64_t m = 0;
        unsigned have = 0;
        while (have < k) {
            unsigned j = (unsigned)sim_rng_below(&s->rng, n);
            if (!((m >> j) & 1)) {
                m |= 1ull << j;
                have++;
            }
        }
        return m;
    }
    unsigned j;
    switch (s->cfg.pattern) {
    case XBAR_PAT_HOTSPOT:
        j = sim_rng_bernoulli(&s->rng, s->cfg.hot_frac) ? 0 : (unsigned)sim_rng_below(&s->rng, n);
        break;
    case XBAR_PAT_TRANSPOSE: j = (i + n / 2) % n; break;
    case XBAR_PAT_PERMUTATION: j = s->perm[i]; break;
    case XBAR_PAT_BACKLOG: return all_ports(n);
    case XBAR_PAT_UNIFORM:
    default: j = (unsigned)sim_rng_below(&s->rng, n); break;
    }
    return 1ull << j;
}

void xbar_stim_inputs(xbar_stim *s, xbar_in *in)
{
    const unsigned n = s->cfg.ports;
    in->valid = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!s->stopped) {
            bool arrive = s->cfg.pattern == XBAR_PAT_BACKLOG ? s->srcq_len[i] == 0 : sim_rng_bernoulli(&s->rng, s->cfg.load);
            if (arrive) {
                s->offered++;
                uint64_t m = pick_dest(s, i);
                if (s->srcq_len[i] < XBAR_STIM_SRCQ) {
                    s->srcq_mask[i][(s->srcq_head[i] + s->srcq_len[i]) % XBAR_STIM_SRCQ] = m;
                    s->srcq_len[i]++;
                } else {
                    s->refused++;
                }
            }
        }
        if (!s->srcq_len[i]) continue;
        uint64_t m = s->srcq_mask[i][s->srcq_head[i]];
        bool ok = true;
        for (uint64_t r = m; r && ok; r &= r - 1) ok = s->credits[i][__builtin_ctzll(r)] > 0;
        if (!ok) continue;
        unsigned copies = 0;
        for (uint64_t r = m; r; r &= r - 1, copies++) s->credits[i][__builtin_ctzll(r)]--;
        s->srcq_head[i] = (s->srcq_head[i] + 1) % XBAR_STIM_SRCQ;
        s->srcq_len[i]--;
        in->valid |= 1ull << i;
        in->in[i].data = xbar_tag(i, s->next_seq[i]++);
        in->in[i].dest_mask = m;
        s->presented++;
        s->copies_presented += copies;
    }
}

void xbar_stim_credits(xbar_stim *s, const xbar_out *out)
{
    for (uint64_t r = out->credit & all_ports(s->cfg.ports); r; r &= r - 1) {
        unsigned i = (unsigned)__builtin_ctzll(r);
        unsigned q = out->credit_queue[i];
        if (q >= s->cfg.ports || s->credits[i][q] >= s->cfg.depth) {
            s->credit_errors++;
            continue;
        }
        s->credits[i][q]++;
        s->credits_returned++;
    }
    for (unsigned i = 0; i < s->cfg.ports; i++) {
        for (uint64_t r = out->credit_extra[i] & all_ports(s->cfg.ports); r; r &= r - 1) {
            unsigned q = (unsigned)__builtin_ctzll(r);
            if (s->credits[i][q] >= s->cfg.depth) {
                s->credit_errors++;
                continue;
            }
            s->credits[i][q]++;
            s->credits_returned++;
        }
    }
}

uint64_t xbar_stim_backlog(const xbar_stim *s)
{
    uint64_t b = 0;
    for (unsigned i = 0; i < s->cfg.ports; i++) b += s->srcq_len[i];
    return b;
}

bool xbar_stim_all_credits_home(const xbar_stim *s)
{
    for (unsigned i = 0; i < s->cfg.ports; i++)
        for (unsigned j = 0; j < s->cfg.ports; j++)
            if (s->credits[i][j] != s->cfg.depth) return false;
    return true;
}

/* ---- scoreboard ---- */

void xbar_score_init(xbar_score *sc, unsigned ports)
{
    memset(sc, 0, sizeof *sc);
    sc->ports = ports;
    sc->window = 1024;
    for (unsigned i = 0; i < ports; i++) {
        sc->seen[i] = calloc(sc->window, sizeof(uint64_t));
        sc->dest_of[i] = calloc(sc->window, sizeof(uint64_t));
        if (!sc->seen[i] || !sc->dest_of[i]) sim_fatal("out of memory");
    }
    sc->window_end = UINT64_MAX;
}

void xbar_score_free(xbar_score *sc)
{
    for (unsigned i = 0; i < sc->ports; i++) {
        free(sc->seen[i]);
        free(sc->dest_of[i]);
    }
}

static void grow(xbar_score *sc, uint64_t seq)
{
    if (seq < sc->window) return;
    uint64_t nw = sc->window;
    while (nw <= seq) nw *= 2;
    for (unsigned i = 0; i < sc->ports; i++) {
        sc->seen[i] = realloc(sc->seen[i], nw * sizeof(uint64_t));
        sc->dest_of[i] = realloc(sc->dest_of[i], nw * sizeof(uint64_t));
        if (!sc->seen[i] || !sc->dest_of[i]) sim_fatal("out of memory");
        memset(sc->seen[i] + sc->window, 0, (nw - sc->window) * sizeof(uint64_t));
        memset(sc->dest_of[i] + sc->window, 0, (nw - sc->window) * sizeof(uint64_t));
    }
    sc->window = nw;
}

void xbar_score_presented(xbar_score *sc, const xbar_in *in)
{
    for (uint64_t r = in->valid & all_ports(sc->ports); r; r &= r - 1) {
        unsigned i = (unsigned)__builtin_ctzll(r);
        uint64_t seq = xbar_tag_seq(in->in[i].data);
        grow(sc, seq);
        uint64_t m = in->in[i].dest_mask & all_ports(sc->ports);
        sc->dest_of[i][seq] = m;
        sc->expected_copies += (uint64_t)__builtin_popcountll(m);
    }
}

void xbar_score_outputs(xbar_score *sc, const xbar_out *out, uint64_t cycle)
{
    for (uint64_t r = out->valid & all_ports(sc->ports); r; r &= r - 1) {
        unsigned j = (unsigned)__builtin_ctzll(r);
        uint64_t tag = out->out_data[j];
        unsigned src = xbar_tag_src(tag);
        uint64_t seq = xbar_tag_seq(tag);
        if (src >= sc->ports || seq == 0 || seq >= sc->window || !((sc->dest_of[src][seq] >> j) & 1)) {
            sc->unknown++;
            continue;
        }
        if (out->out_src[j] != src) sc->wrong_src++;
        if ((sc->seen[src][seq] >> j) & 1) {
            sc->duplicated++;
            continue;
        }
        sc->seen[src][seq] |= 1ull << j;
        if (seq <= sc->last_seq[src][j]) sc->out_of_order++;
        else sc->last_seq[src][j] = seq;
        sc->delivered++;
        if (cycle >= sc->window_start && cycle < sc->window_end) sc->delivered_in_window++;
    }
}

uint64_t xbar_score_missing(const xbar_score *sc) { return sc->expected_copies - sc->delivered; }
