/* cxl_port (models/cxl/cxl_link.h) on its own, as CXL.cache and CXL.mem use it:
 * header packing by slot size (H slot 96 bits, G slots 128 bits), a 64 B line
 * as four data slots after its header (n lines back to back take n + 1 flits:
 * one H slot of headers + 4n data slots), per-class credits (a class out of
 * credits stalls, the others go; returned credits let it go on), an ordering
 * hold, and the hop list summing exactly to each message's time on the port.
 *
 * The expected flit counts and times are computed here from the flit framing
 * (68 B = 2 B protocol ID + 4 x 16 B slots + 2 B CRC at lanes x GT/s, 128b/130b),
 * not read from the model. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_fixture.h"
#include "models/cxl/cxl_link.h"
#include "sim/sim.h"

#define NMSG 32

typedef struct rx_log {
    unsigned n;
    cxl_lmsg *got[NMSG];
    sim_time_ps at[NMSG];
    cxl_port *p;
    bool return_credits;
    bool hold_req;
} rx_log;

static void rx(void *ctx, cxl_lmsg *t)
{
    rx_log *r = ctx;
    ck_assert_uint_lt(r->n, NMSG);
    r->got[r->n] = t;
    r->at[r->n++] = sim_now(k);
    if (r->return_credits) cxl_port_return_credit(r->p, t->m.ch - CXL_D2H_REQ);
}

static bool hold(void *ctx, const cxl_port *p, unsigned cls, const cxl_lmsg *t)
{
    (void)p;
    (void)t;
    return cls == 0 && ((rx_log *)ctx)->hold_req;
}

static cxl_lmsg msgs[NMSG];
static cxl_path paths[NMSG];

static cxl_port *mk(rx_log *r, unsigned credits)
{
    cxl_port_cfg c = { 0 };
    c.name = "p";
    c.scope = "p";
    c.chan_base = CXL_D2H_REQ;
    /* D2H Req, Rsp and Data header widths of the CXL 2.0 68B flit */
    c.hdr_bits[0] = 79;
    c.hdr_bits[1] = 20;
    c.hdr_bits[2] = 17;
    c.has_data[2] = true;
    c.flits = true;
    c.latency_ps = 25000;
    c.GBps = 16 * 32 / 8.0 * 128.0 / 130.0;
    for (unsigned i = 0; i < 3; i++) c.credits[i] = credits;
    c.hop_queue = "queue";
    c.hop_pack = "flits";
    c.hop_wire = "link";
    c.deliver = rx;
    c.hold = hold;
    c.ctx = r;
    cxl_port *p = cxl_port_new(k, NULL, &c);
    r->p = p;
    return p;
}

static void send(cxl_port *p, unsigned i, unsigned cls)
{
    memset(&msgs[i], 0, sizeof msgs[i]);
    memset(&paths[i], 0, sizeof paths[i]);
    msgs[i].m.ch = (uint8_t)(CXL_D2H_REQ + cls);
    msgs[i].m.line = i;
    msgs[i].path = &paths[i];
    cxl_port_enqueue(p, &msgs[i]);
}

static double flit_ps(void) { return 68.0 * 1000.0 / (16 * 32 / 8.0 * 128.0 / 130.0); }

/* n headers of class cls at once, credits plenty: all arrive, in order; returns the flits used. */
static uint64_t burst_flits(unsigned n, unsigned cls)
{
    rx_log r = { 0 };
    r.return_credits = true;
    cxl_port *p = mk(&r, 64);
    for (unsigned i = 0; i < n; i++) send(p, i, cls);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(r.n, n);
    for (unsigned i = 1; i < r.n; i++) ck_assert_uint_eq(r.got[i]->m.line, r.got[i - 1]->m.line + 1);
    uint64_t flits = p->flits_sent;
    cxl_port_free(p);
    return flits;
}

START_TEST(test_headers_packed_by_slot_size)
{
    /* 79-bit requests: one per slot (96 or 128 bits), 4 per flit */
    ck_assert_uint_eq(burst_flits(8, 0), 2);
    ck_assert_uint_eq(burst_flits(9, 0), 3);
    /* 20-bit responses: 4 in the H slot, 6 in each G slot = 22 per flit, but a
     * flit completes at most 15 messages: 30 responses take 2 flits */
    ck_assert_uint_eq(burst_flits(30, 1), 2);
    ck_assert_uint_eq(burst_flits(31, 1), 3);
}
END_TEST

START_TEST(test_lines_take_n_plus_one_flits)
{
    for (unsigned n = 1; n <= 4; n++) {
        rx_log r = { 0 };
        r.return_credits = true;
        cxl_port *p = mk(&r, 64);
        sim_time_ps t0 = sim_now(k);
        for (unsigned i = 0; i < n; i++) send(p, i, 2);
        sim_run(k, SIM_TIME_MAX);
        ck_assert_uint_eq(r.n, n);
        ck_assert_uint_eq(p->flits_sent, n + 1);
        /* the last line is complete when flit n + 1 has crossed */
        double expect = (n + 1) * flit_ps() + 25000;
        ck_assert_msg(fabs((double)(r.at[n - 1] - t0) - expect) <= n + 1, "n=%u: last line at %.0f ps, expected %.0f",
                      n, (double)(r.at[n - 1] - t0), expect);
        cxl_port_free(p);
    }
}
END_TEST

START_TEST(test_credits_stall_one_class_only)
{
    rx_log r = { 0 };
    cxl_port *p = mk(&r, 2);
    for (unsigned i = 0; i < 5; i++) send(p, i, 0);
    send(p, 5, 1);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(r.n, 3);   /* two requests (credits) and the response */
    ck_assert_uint_eq(sim_link_credits(p->link, 0), 0);
    sim_time_ps before = cxl_port_stall_ps(p, 0);
    ck_assert_uint_gt(before, 0);
    ck_assert_uint_eq(cxl_port_stall_ps(p, 1), 0);
    /* the receiver frees its two buffers: the rest go, and give their credits back */
    r.return_credits = true;
    cxl_port_return_credit(p, 0);
    cxl_port_return_credit(p, 0);
    cxl_port_return_credit(p, 1);
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(r.n, 6);
    ck_assert_uint_eq(sim_link_credits(p->link, 0), 2);
    char why[256];
    ck_assert_msg(!sim_link_check(p->link, true, why, sizeof why), "%s", why);
    cxl_port_free(p);
}
END_TEST

START_TEST(test_hold_and_hops_sum_to_time_on_port)
{
    rx_log r = { 0 };
    r.return_credits = true;
    r.hold_req = true;
    cxl_port *p = mk(&r, 64);
    send(p, 0, 0);
    send(p, 1, 2);
    sim_run(k, SIM_NS(10));
    ck_assert_uint_eq(r.n, 0);   /* the data line is still crossing, the request held */
    sim_run(k, SIM_NS(100));
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.got[0]->m.line, 1);
    r.hold_req = false;
    sim_time_ps released = sim_now(k);
    send(p, 2, 1);   /* any enqueue wakes the port */
    sim_run(k, SIM_TIME_MAX);
    ck_assert_uint_eq(r.n, 3);
    for (unsigned i = 0; i < r.n; i++) {
        const cxl_lmsg *t = r.got[i];
        sim_time_ps sum = 0;
        bool wire = false;
        for (unsigned h = 0; h < t->path->n; h++) {
            sum += t->path->hop[h].ps;
            wire |= t->path->hop[h].link;
        }
        sim_time_ps sent_at = t->m.line == 2 ? released : 0;
        ck_assert_msg(sum == r.at[i] - sent_at, "line %u: hops %llu ps, on the port %llu ps", t->m.line,
                      (unsigned long long)sum, (unsigned long long)(r.at[i] - sent_at));
        ck_assert(wire);
    }
    cxl_port_free(p);
}
END_TEST

static Suite *port_suite(void)
{
    Suite *s = suite_create("cxl_port");
    TCase *tc = tcase_create("port");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_headers_packed_by_slot_size);
    tcase_add_test(tc, test_lines_take_n_plus_one_flits);
    tcase_add_test(tc, test_credits_stall_one_class_only);
    tcase_add_test(tc, test_hold_and_hops_sum_to_time_on_port);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(port_suite()); }
