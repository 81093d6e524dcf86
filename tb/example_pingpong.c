/* example_pingpong: the worked example of docs/writing-a-model.md. A
 * requester keeps `window` requests in flight to a responder; throughput is
 * limited by the window over the round trip (Little's law) or by the
 * responder's service time, whichever is lower. The checks compare the
 * measured rate with both bounds. */
#include <inttypes.h>

#include "models/example/pingpong.h"

static const sim_param_def pingpong_params[] = {
    SIM_PARAM_INT("window", "4", "", 1, 1 << 20, "requests in flight at most (request-link credits)"),
    SIM_PARAM_INT("requests", "10000", "", 1, 1e9, "requests to send"),
    SIM_PARAM_DOUBLE("latency_ns", "100", "ns", 0, 1e9, "one-way link latency"),
    SIM_PARAM_DOUBLE("bandwidth_GBps", "32", "GB/s", 0, 1e6, "link bandwidth each way (0 = infinite)"),
    SIM_PARAM_INT("request_bytes", "64", "B", 1, 1 << 20, "bytes per request"),
    SIM_PARAM_INT("response_bytes", "64", "B", 1, 1 << 20, "bytes per response"),
    SIM_PARAM_DOUBLE("service_ns", "20", "ns", 0, 1e9, "responder time per request"),
    SIM_PARAM_END,
};

static sim_time_ps ps_of_ns(double ns) { return (sim_time_ps)(ns * 1000.0 + 0.5); }

static void pingpong_run(sim_test_ctx *c)
{
    const sim_params *p = c->params;
    pp_cfg cfg = {
        .window = (uint32_t)sim_param_int(p, "window"),
        .requests = (uint32_t)sim_param_int(p, "requests"),
        .request_bytes = (uint32_t)sim_param_int(p, "request_bytes"),
        .response_bytes = (uint32_t)sim_param_int(p, "response_bytes"),
        .service_ps = ps_of_ns(sim_param_double(p, "service_ns")),
    };
    sim_link_cfg req_cfg = {
        .name = "req",
        .latency_ps = ps_of_ns(sim_param_double(p, "latency_ns")),
        .bandwidth_GBps = sim_param_double(p, "bandwidth_GBps"),
        .credit_latency_ps = SIM_LINK_SAME_LATENCY,
        .credit_types = 1,
        .credits = { cfg.window },
    };
    if (req_cfg.bandwidth_GBps == 0) {   /* infinite bandwidth: a message's size costs no time */
        sim_param_not_applicable(p, "request_bytes", "bandwidth_GBps=0 (infinite): message sizes take no time on the link");
        sim_param_not_applicable(p, "response_bytes", "bandwidth_GBps=0 (infinite): message sizes take no time on the link");
    }
    sim_param_not_applicable(p, "seed", "the example has no random streams");
    sim_test_configured(c);
    sim_link_cfg rsp_cfg = req_cfg;
    rsp_cfg.name = "rsp";
    rsp_cfg.credit_types = 0;
    sim_link *req = sim_link_new(c->k, &req_cfg), *rsp = sim_link_new(c->k, &rsp_cfg);
    pp_requester r;
    pp_responder s;
    pp_requester_init(&r, c->k, &cfg, req, rsp);
    pp_responder_init(&s, c->k, &cfg, req, rsp);

    sim_run(c->k, SIM_TIME_MAX);

    double elapsed_ns = (double)sim_now(c->k) / 1000.0;
    double rate_per_ns = elapsed_ns > 0 ? r.received / elapsed_ns : 0;
    double ser_req_ns = req_cfg.bandwidth_GBps > 0 ? cfg.request_bytes / req_cfg.bandwidth_GBps : 0;
    double ser_rsp_ns = req_cfg.bandwidth_GBps > 0 ? cfg.response_bytes / req_cfg.bandwidth_GBps : 0;
    /* the round trip of one request with no queueing, and the two bounds on the rate */
    double rtt_ns = 2.0 * (double)req_cfg.latency_ps / 1000.0 + ser_req_ns + ser_rsp_ns + (double)cfg.service_ps / 1000.0;
    double window_bound = cfg.window / rtt_ns;
    double service_bound = cfg.service_ps ? 1000.0 / (double)cfg.service_ps : 1e300;
    double bound = window_bound < service_bound ? window_bound : service_bound;

    sim_report *rep = c->report;
    sim_report_metric(rep, "responses", r.received);
    sim_report_metric(rep, "requests_per_us", rate_per_ns * 1000.0);
    sim_report_metric(rep, "bound_requests_per_us", bound * 1000.0);
    sim_report_metric(rep, "latency_avg_ns", sim_hist_mean(&r.latency_ns));
    sim_report_metric(rep, "latency_p99_ns", sim_hist_percentile(&r.latency_ns, 99));
    sim_report_metric(rep, "latency_min_ns", sim_hist_count(&r.latency_ns) ? r.latency_ns.min : 0);
    sim_report_metric(rep, "rtt_ns", rtt_ns);
    sim_check(rep, "all_answered", r.received == cfg.requests && s.served == cfg.requests,
              "%u sent, %" PRIu64 " served, %u answered", cfg.requests, s.served, r.received);
    sim_check(rep, "in_order", r.out_of_order == 0, "%u responses out of order", r.out_of_order);
    sim_check(rep, "first_response_is_one_round_trip", sim_hist_count(&r.latency_ns) && r.latency_ns.min >= rtt_ns - 0.001 &&
                                                           r.latency_ns.min <= rtt_ns + 0.002,
              "fastest response %.3f ns, round trip %.3f ns", r.latency_ns.min, rtt_ns);
    /* Over a long run the rate approaches the lower bound; the start-up (one
     * round trip) and the drain cost a little. */
    sim_check(rep, "rate_at_bound", rate_per_ns <= bound * 1.0001 && rate_per_ns >= bound * 0.95,
              "%.4f requests/ns, bound min(window/rtt, 1/service) = %.4f", rate_per_ns, bound);
    char why[256] = "links conserve messages and credits";
    bool ok = sim_link_check(req, true, why, sizeof why) == 0 && sim_link_check(rsp, true, why, sizeof why) == 0;
    sim_check(rep, "links_conserve", ok, "%s", why);

    pp_requester_free(&r);
    pp_responder_free(&s);
    sim_link_free(req);
    sim_link_free(rsp);
}

SIM_TEST(example_pingpong, "the worked example: a windowed requester and a responder over two links", pingpong_params,
         "requests=2000", pingpong_run)
