/* Memory-controller timing: a FIFO channel with a bandwidth and an access latency (cxl_media.h). */
#include "models/cxl/cxl_media.h"

#include <math.h>

static sim_time_ps q32_ps_up(uint64_t q) { return (sim_time_ps)((q + 0xffffffffull) >> 32); }

static void media_wake(cxl_media *m, sim_time_ps at)
{
    sim_time_ps now = sim_now(m->k);
    sim_event_notify_at(&m->wake, at > now ? at - now : 0);
}

/* Starts every ready request the channel can take now, finishes every access due now. */
static void media_run(void *ctx)
{
    cxl_media *m = ctx;
    sim_time_ps now = sim_now(m->k);
    for (;;) {
        cxl_lmsg *t = m->busy.head;
        if (!t || t->t_elig > now) break;
        cxl_mq_pop(&m->busy);
        cxl_path_add(t->path, m->cfg.hop_access, m->access_ps, false);
        m->completed++;
        m->cfg.done(m->cfg.ctx, t);
    }
    for (;;) {
        cxl_lmsg *t = m->wait.head;
        if (!t || t->t_elig > now || q32_ps_up(m->free_q32) > now) break;
        cxl_mq_pop(&m->wait);
        if (now > t->t_elig) cxl_path_add(t->path, m->cfg.hop_queue, now - t->t_elig, false);
        uint64_t now_q32 = (uint64_t)now << 32;
        m->free_q32 = (m->free_q32 > now_q32 ? m->free_q32 : now_q32) + m->line_ps_q32;
        m->busy_ps += q32_ps_up(m->line_ps_q32);
        t->t_elig = now + m->access_ps;
        cxl_mq_push(&m->busy, t);
        if (m->cfg.started) m->cfg.started(m->cfg.ctx, t);
    }
    sim_time_ps next = SIM_TIME_MAX;
    if (m->busy.head) next = m->busy.head->t_elig;
    if (m->wait.head) {
        sim_time_ps s = m->wait.head->t_elig, f = q32_ps_up(m->free_q32);
        if (f > s) s = f;
        if (s < next) next = s;
    }
    if (next != SIM_TIME_MAX) media_wake(m, next);
}

void cxl_media_init(cxl_media *m, sim_kernel *k, const cxl_media_cfg *cfg)
{
    *m = (cxl_media){ 0 };
    m->k = k;
    m->cfg = *cfg;
    m->access_ps = cxl_ns_ps(cfg->access_ns);
    m->line_ps_q32 = (uint64_t)llround(64.0 / cfg->GBps * 1000.0 * 4294967296.0);
    sim_event_init(&m->wake, k, "media_wake");
    sim_method_init(&m->proc, k, cfg->name, media_run, m);
    sim_sensitive(&m->proc, &m->wake);
    sim_dont_initialize(&m->proc);
}

void cxl_media_push(cxl_media *m, cxl_lmsg *t)
{
    m->pushed++;
    cxl_mq_push(&m->wait, t);
    media_wake(m, t->t_elig);
}
