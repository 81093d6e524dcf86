/* DCQCN's reaction point (Zhu et al., SIGCOMM 2015, section 3; the rules and
 * defaults of shared/reference/system.md §2). */
#include "models/network/roce.h"

#include <stdio.h>

void dcqcn_cfg_default(dcqcn_cfg *c)
{
    *c = (dcqcn_cfg){ .g = 1.0 / 256, .alpha_timer_us = 55, .rate_timer_us = 55, .byte_counter_bytes = 10000000,
                      .fast_recovery_steps = 5, .rai_Gbps = 0.04, .rhai_Gbps = 0.1, .min_rate_Gbps = 0.1,
                      .cnp_interval_us = 50 };
}

int dcqcn_cfg_check(const dcqcn_cfg *c, char *why, size_t why_n)
{
    if (!(c->g > 0 && c->g <= 1)) { snprintf(why, why_n, "dcqcn_g=%g; allowed (0, 1]", c->g); return -1; }
    if (!(c->alpha_timer_us > 0)) { snprintf(why, why_n, "alpha_timer_us=%g; allowed > 0", c->alpha_timer_us); return -1; }
    if (!(c->rate_timer_us > 0)) { snprintf(why, why_n, "rate_timer_us=%g; allowed > 0", c->rate_timer_us); return -1; }
    if (!c->byte_counter_bytes) { snprintf(why, why_n, "byte_counter_bytes=0; allowed > 0"); return -1; }
    if (!(c->rai_Gbps >= 0 && c->rhai_Gbps >= 0)) { snprintf(why, why_n, "rai_Gbps / rhai_Gbps; allowed >= 0"); return -1; }
    if (!(c->min_rate_Gbps > 0)) { snprintf(why, why_n, "min_rate_Gbps=%g; allowed > 0", c->min_rate_Gbps); return -1; }
    if (!(c->cnp_interval_us >= 0)) { snprintf(why, why_n, "cnp_interval_us=%g; allowed >= 0", c->cnp_interval_us); return -1; }
    return 0;
}

void dcqcn_rp_init(dcqcn_rp *r, double line_Gbps)
{
    /* a flow starts at line rate with alpha 1 (the paper's initial value) */
    *r = (dcqcn_rp){ .rc_Gbps = line_Gbps, .rt_Gbps = line_Gbps, .alpha = 1.0, .line_Gbps = line_Gbps,
                     .next_alpha_ps = SIM_TIME_MAX, .next_rate_ps = SIM_TIME_MAX };
}

static sim_time_ps us_ps(double us) { return (sim_time_ps)(us * 1e6 + 0.5); }

void dcqcn_rp_cnp(dcqcn_rp *r, const dcqcn_cfg *c, sim_time_ps now)
{
    r->rt_Gbps = r->rc_Gbps;
    r->rc_Gbps *= 1 - r->alpha / 2;
    if (r->rc_Gbps < c->min_rate_Gbps) r->rc_Gbps = c->min_rate_Gbps;
    r->alpha = (1 - c->g) * r->alpha + c->g;
    r->t_count = r->bc_count = 0;
    r->bytes = 0;
    r->next_alpha_ps = now + us_ps(c->alpha_timer_us);
    r->next_rate_ps = now + us_ps(c->rate_timer_us);
    r->cuts++;
}

/* One increase event (timer or byte counter): fast recovery towards the
 * target for the first F, then additive, hyper once both counters passed F. */
static void increase(dcqcn_rp *r, const dcqcn_cfg *c)
{
    unsigned hi = r->t_count > r->bc_count ? r->t_count : r->bc_count;
    unsigned lo = r->t_count < r->bc_count ? r->t_count : r->bc_count;
    if (hi < c->fast_recovery_steps) {
        /* fast recovery: Rt stays */
    } else if (lo > c->fast_recovery_steps) {
        r->rt_Gbps += (lo - c->fast_recovery_steps) * c->rhai_Gbps;
    } else {
        r->rt_Gbps += c->rai_Gbps;
    }
    if (r->rt_Gbps > r->line_Gbps) r->rt_Gbps = r->line_Gbps;
    r->rc_Gbps = (r->rt_Gbps + r->rc_Gbps) / 2;
    r->increases++;
}

void dcqcn_rp_timers(dcqcn_rp *r, const dcqcn_cfg *c, sim_time_ps now)
{
    while (r->next_alpha_ps <= now) {
        r->alpha *= 1 - c->g;
        r->next_alpha_ps += us_ps(c->alpha_timer_us);
    }
    while (r->next_rate_ps <= now) {
        r->t_count++;
        increase(r, c);
        r->next_rate_ps += us_ps(c->rate_timer_us);
        if (r->rc_Gbps >= r->line_Gbps) {   /* back at line rate: nothing more to recover */
            r->rc_Gbps = r->rt_Gbps = r->line_Gbps;
            r->next_rate_ps = SIM_TIME_MAX;
        }
    }
}

void dcqcn_rp_sent(dcqcn_rp *r, const dcqcn_cfg *c, uint32_t bytes)
{
    if (r->next_rate_ps == SIM_TIME_MAX) return;   /* at line rate: the counter is idle */
    r->bytes += bytes;
    while (r->bytes >= c->byte_counter_bytes) {
        r->bytes -= c->byte_counter_bytes;
        r->bc_count++;
        increase(r, c);
    }
}

sim_time_ps dcqcn_rp_next_ps(const dcqcn_rp *r)
{
    return r->next_alpha_ps < r->next_rate_ps ? r->next_alpha_ps : r->next_rate_ps;
}
