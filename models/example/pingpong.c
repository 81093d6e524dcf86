#include "models/example/pingpong.h"

#include <stdio.h>
#include <stdlib.h>

static void label_msg(const void *msg, char *buf, size_t n)
{
    snprintf(buf, n, "#%u", ((const pp_msg *)msg)->id);
}

/* Requester: keep at most `window` requests outstanding (its tags), and send
 * only with a credit for the responder's input buffer. It is woken when a
 * response arrives (a tag is free) or a credit comes back. */
static void requester_run(void *ctx)
{
    pp_requester *r = ctx;
    while (r->next_id < r->cfg.requests && r->next_id - r->received < r->cfg.window) {
        pp_msg *m = &r->msgs[r->next_id];
        m->id = r->next_id;
        m->sent_ps = sim_now(r->k);
        if (!sim_link_try_send(r->req, m, r->cfg.request_bytes, 0, 1)) break;
        r->next_id++;
    }
    sim_trace_u64(sim_trace_of_kernel(r->k), r->tv_outstanding, r->next_id - r->received);
}

static void requester_receive(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    pp_requester *r = ctx;
    pp_msg *m = msg;
    if (m->id != r->next_expected) r->out_of_order++;   /* the responder serves in order */
    r->next_expected = m->id + 1;
    r->received++;
    sim_hist_add(&r->latency_ns, (double)(sim_now(r->k) - m->sent_ps) / 1000.0);
    sim_trace_u64(sim_trace_of_kernel(r->k), r->tv_outstanding, r->next_id - r->received);
}

void pp_requester_init(pp_requester *r, sim_kernel *k, const pp_cfg *cfg, sim_link *req, sim_link *rsp)
{
    *r = (pp_requester){ .k = k, .cfg = *cfg, .req = req, .rsp = rsp };
    r->msgs = calloc(cfg->requests ? cfg->requests : 1, sizeof *r->msgs);
    if (!r->msgs) sim_fatal("out of memory");
    sim_hist_init(&r->latency_ns, "latency_ns");
    sim_method_init(&r->proc, k, "requester", requester_run, r);   /* runs at start: sends the first window */
    sim_sensitive(&r->proc, &req->credit_returned);
    sim_sensitive(&r->proc, &rsp->delivered);
    sim_link_set_receiver(rsp, requester_receive, r);
    sim_trace *t = sim_trace_of_kernel(k);
    sim_trace_push_scope(t, "requester");
    r->tv_outstanding = sim_trace_add_var(t, "outstanding", 32);
    sim_trace_pop_scope(t);
    sim_link_trace(req, t, label_msg);
    sim_link_trace(rsp, t, label_msg);
}

void pp_requester_free(pp_requester *r)
{
    sim_hist_free(&r->latency_ns);
    free(r->msgs);
}

/* Responder: one request in service at a time. Taking a request out of the
 * input buffer frees its slot (a credit goes back); the response leaves when
 * the service time is over. */
static void responder_run(void *ctx)
{
    pp_responder *s = ctx;
    sim_time_ps now = sim_now(s->k);
    if (s->in_service && now >= s->busy_until_ps) {
        sim_link_send(s->rsp, s->in_service, s->cfg.response_bytes);
        s->in_service = NULL;
        s->served++;
    }
    if (!s->in_service && s->len) {
        s->in_service = s->queue[s->head];
        s->head = (s->head + 1) % s->cap;
        s->len--;
        sim_link_return_credits(s->req, 0, 1);
        s->busy_until_ps = now + s->cfg.service_ps;
    }
    if (s->in_service) sim_event_notify_at(&s->wake, s->busy_until_ps - now);
}

static void responder_receive(void *ctx, sim_link *l, void *msg, uint32_t bytes)
{
    (void)l;
    (void)bytes;
    pp_responder *s = ctx;
    if (s->len == s->cap) sim_fatal("responder: request beyond the advertised credits");
    s->queue[(s->head + s->len++) % s->cap] = msg;
    if (!s->in_service) sim_event_notify_delta(&s->wake);
}

void pp_responder_init(pp_responder *s, sim_kernel *k, const pp_cfg *cfg, sim_link *req, sim_link *rsp)
{
    *s = (pp_responder){ .k = k, .cfg = *cfg, .req = req, .rsp = rsp, .cap = cfg->window };
    s->queue = calloc(cfg->window, sizeof *s->queue);
    if (!s->queue) sim_fatal("out of memory");
    sim_event_init(&s->wake, k, "wake");
    sim_method_init(&s->proc, k, "responder", responder_run, s);
    sim_sensitive(&s->proc, &s->wake);
    sim_dont_initialize(&s->proc);
    sim_link_set_receiver(req, responder_receive, s);
}

void pp_responder_free(pp_responder *s) { free(s->queue); }
