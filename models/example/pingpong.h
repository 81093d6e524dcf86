/* The worked example of docs/writing-a-model.md: a requester that keeps up
 * to `window` requests outstanding to a responder over a pair of links, and a
 * responder that answers each after a service time. Small on purpose: it
 * shows a component, links with credits, a process, statistics and tracing. */
#ifndef PINGPONG_H
#define PINGPONG_H

#include "sim/sim.h"

typedef struct pp_msg {
    uint32_t id;
    sim_time_ps sent_ps;
} pp_msg;

typedef struct pp_cfg {
    uint32_t window;           /* requests in flight at most; also the responder's buffer (request-link credits) */
    uint32_t requests;         /* how many to send */
    uint32_t request_bytes, response_bytes;
    sim_time_ps service_ps;    /* responder's time per request */
} pp_cfg;

typedef struct pp_requester {
    sim_kernel *k;
    pp_cfg cfg;
    sim_link *req, *rsp;       /* to and from the responder */
    pp_msg *msgs;              /* one per request: nothing is allocated while running */
    uint32_t next_id, received, next_expected;
    uint32_t out_of_order;
    sim_process proc;
    sim_hist latency_ns;
    sim_trace_var tv_outstanding;
} pp_requester;

typedef struct pp_responder {
    sim_kernel *k;
    pp_cfg cfg;
    sim_link *req, *rsp;
    pp_msg **queue;            /* accepted requests, FIFO */
    uint32_t head, len, cap;
    pp_msg *in_service;
    sim_time_ps busy_until_ps;
    sim_process proc;
    sim_event wake;
    uint64_t served;
} pp_responder;

void pp_requester_init(pp_requester *r, sim_kernel *k, const pp_cfg *cfg, sim_link *req, sim_link *rsp);
void pp_responder_init(pp_responder *s, sim_kernel *k, const pp_cfg *cfg, sim_link *req, sim_link *rsp);
void pp_requester_free(pp_requester *r);
void pp_responder_free(pp_responder *s);

#endif
