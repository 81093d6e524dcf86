/* TLM payload / b_transport time annotation and the quantum keeper;
 * meter windows; rng determinism and ranges (histograms: check_stats.c). */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "check_fixture.h"
#include "sim/sim.h"

/* ---------------------------------------------------------------- TLM */

typedef struct memory {
    unsigned char bytes[256];
    sim_time_ps latency_ps;
    unsigned calls;
} memory;

static void mem_b_transport(void *target, sim_tlm_payload *p, sim_time_ps *delay_ps)
{
    memory *m = target;
    m->calls++;
    if (p->address + p->length > sizeof m->bytes) {
        p->response = SIM_TLM_ADDRESS_ERROR;
        return;
    }
    if (p->command == SIM_TLM_WRITE) memcpy(m->bytes + p->address, p->data, p->length);
    else if (p->command == SIM_TLM_READ) memcpy(p->data, m->bytes + p->address, p->length);
    *delay_ps += m->latency_ps;
    p->response = SIM_TLM_OK;
}

START_TEST(test_b_transport_annotates_time)
{
    memory m = { .latency_ps = 2500 };
    sim_tlm_socket s;
    sim_tlm_bind(&s, "mem", mem_b_transport, &m);
    uint32_t w = 0xdeadbeef, r = 0;
    sim_tlm_payload p;
    sim_tlm_payload_init(&p, SIM_TLM_WRITE, 16, &w, 4);
    ck_assert_int_eq(p.response, SIM_TLM_INCOMPLETE);
    ck_assert_uint_eq(p.streaming_width, 4);
    sim_time_ps d = 1000;
    sim_tlm_b_transport(&s, &p, &d);
    ck_assert_int_eq(p.response, SIM_TLM_OK);
    ck_assert_uint_eq(d, 3500);                      /* the target adds to the caller's offset */
    sim_tlm_payload_init(&p, SIM_TLM_READ, 16, &r, 4);
    sim_tlm_b_transport(&s, &p, &d);
    ck_assert_uint_eq(r, 0xdeadbeef);
    ck_assert_uint_eq(d, 6000);
    sim_tlm_payload_init(&p, SIM_TLM_READ, 254, &r, 4);
    sim_tlm_b_transport(&s, &p, &d);
    ck_assert_int_eq(p.response, SIM_TLM_ADDRESS_ERROR);
    ck_assert_str_eq(sim_tlm_response_string(p.response), "ADDRESS_ERROR");
    ck_assert_uint_eq(s.transactions, 3);
    ck_assert_uint_eq(sim_now(k), 0);                /* no kernel time passes in b_transport */
    unsigned id = sim_tlm_register_extension("check_ext");
    ck_assert_uint_eq(sim_tlm_register_extension("check_ext"), id);
    ck_assert_uint_ne(sim_tlm_register_extension("check_ext2"), id);
    sim_tlm_set_extension(&p, id, &m);
    ck_assert_ptr_eq(sim_tlm_get_extension(&p, id), &m);
}
END_TEST

static void lazy_target(void *target, sim_tlm_payload *p, sim_time_ps *delay_ps)
{
    (void)target;
    (void)p;
    (void)delay_ps;   /* forgets to set the response */
}

START_TEST(test_b_transport_incomplete_aborts)
{
    sim_tlm_socket s;
    sim_tlm_bind(&s, "lazy", lazy_target, NULL);
    sim_tlm_payload p;
    uint32_t v;
    sim_tlm_payload_init(&p, SIM_TLM_READ, 0, &v, 4);
    sim_time_ps d = 0;
    sim_tlm_b_transport(&s, &p, &d);
}
END_TEST

/* An initiator process doing transactions with a quantum keeper: it runs
 * ahead until need_sync, then sync re-arms it at the synchronised time. */
typedef struct initiator {
    sim_process p;
    sim_tlm_socket *s;
    sim_quantum_keeper qk;
    unsigned left;
    sim_time_ps resumed[16];
    sim_time_ps expected_local_now[16];
    unsigned n;
} initiator;

static void initiator_fn(void *ctx)
{
    initiator *in = ctx;
    in->resumed[in->n++] = sim_now(k);
    uint64_t v = 0;
    while (in->left) {
        sim_tlm_payload p;
        sim_tlm_payload_init(&p, SIM_TLM_WRITE, 0, &v, 8);
        sim_time_ps d = sim_qk_local_time(&in->qk);
        sim_tlm_b_transport(in->s, &p, &d);
        sim_qk_set(&in->qk, d);
        in->left--;
        if (sim_qk_need_sync(&in->qk)) {
            in->expected_local_now[in->n] = sim_qk_current_time(&in->qk);
            sim_qk_sync(&in->qk);
            ck_assert_uint_eq(sim_qk_local_time(&in->qk), 0);
            return;
        }
    }
}

START_TEST(test_quantum_keeper_sync)
{
    memory m = { .latency_ps = SIM_NS(30) };
    sim_tlm_socket s;
    sim_tlm_bind(&s, "mem", mem_b_transport, &m);
    static initiator in;
    memset(&in, 0, sizeof in);
    in.s = &s;
    in.left = 16;
    sim_qk_init(&in.qk, k, SIM_NS(100));
    sim_method_init(&in.p, k, "ini", initiator_fn, &in);
    sim_run(k, SIM_TIME_MAX);
    /* 30 ns each; sync points aligned to multiples of 100 ns:
     * 0 -> local 120 (>= 100) -> resume 120 -> +90 = 210 (>= 200) -> 300 -> 420 -> 510 */
    ck_assert_uint_eq(in.n, 5);
    ck_assert_uint_eq(in.resumed[0], 0);
    ck_assert_uint_eq(in.resumed[1], SIM_NS(120));
    ck_assert_uint_eq(in.resumed[2], SIM_NS(210));
    ck_assert_uint_eq(in.resumed[3], SIM_NS(300));
    ck_assert_uint_eq(in.resumed[4], SIM_NS(420));
    for (unsigned i = 1; i < in.n; i++) ck_assert_uint_eq(in.resumed[i], in.expected_local_now[i]);   /* now + local at the sync */
    ck_assert_uint_eq(in.qk.syncs, 4);
    ck_assert_uint_eq(m.calls, 16);
    /* the last transactions did not reach a boundary: still ahead by 60 ns */
    ck_assert_uint_eq(sim_qk_local_time(&in.qk), SIM_NS(60));
}
END_TEST

START_TEST(test_quantum_keeper_need_sync)
{
    sim_quantum_keeper qk;
    sim_qk_init(&qk, k, SIM_NS(100));
    ck_assert(!sim_qk_need_sync(&qk));
    sim_qk_inc(&qk, SIM_NS(99));
    ck_assert(!sim_qk_need_sync(&qk));
    sim_qk_inc(&qk, SIM_NS(1));
    ck_assert(sim_qk_need_sync(&qk));
    ck_assert_uint_eq(sim_qk_current_time(&qk), SIM_NS(100));
    sim_run(k, SIM_NS(50));                          /* boundary is still 100 ns */
    sim_qk_set(&qk, SIM_NS(49));
    ck_assert(!sim_qk_need_sync(&qk));
    sim_qk_set(&qk, SIM_NS(50));
    ck_assert(sim_qk_need_sync(&qk));
    sim_qk_init(&qk, k, 0);                          /* no quantum: sync every time */
    ck_assert(sim_qk_need_sync(&qk));
}
END_TEST

/* ---------------------------------------------------------------- stats */

START_TEST(test_meter_window)
{
    sim_meter m;
    sim_meter_init(&m, "bytes", SIM_NS(100));
    sim_meter_add(&m, SIM_NS(50), 1000);             /* warm-up: not counted */
    sim_meter_add(&m, SIM_NS(100), 64);              /* window starts inclusive */
    sim_meter_add(&m, SIM_NS(150), 64);
    ck_assert(sim_meter_rate_per_s(&m, SIM_NS(100)) == 0.0);
    ck_assert(fabs(sim_meter_rate_per_s(&m, SIM_NS(200)) - 128.0 / 100e-9) < 1);   /* open window: up to now */
    sim_meter_close(&m, SIM_NS(300));
    sim_meter_add(&m, SIM_NS(300), 64);              /* window ends exclusive */
    sim_meter_add(&m, SIM_NS(400), 64);
    sim_meter_close(&m, SIM_NS(500));                /* a second close does not move the end */
    ck_assert_uint_eq(m.units, 128);
    ck_assert_uint_eq(m.units_total, 1256);
    ck_assert(fabs(sim_meter_rate_per_s(&m, SIM_NS(999)) - 128.0 / 200e-9) < 1);
}
END_TEST

/* ---------------------------------------------------------------- rng */

/* A power of two takes a mask, not the divisions: same draws as the general
 * rejection sampling written out here (so streams are unchanged). */
START_TEST(test_rng_below_power_of_two_same_stream)
{
    static const uint64_t ns[] = { 1, 2, 16, 64, 1ull << 40, 1ull << 63 };
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        sim_rng a, b;
        sim_rng_seed(&a, 99 + t);
        sim_rng_seed(&b, 99 + t);
        uint64_t n = ns[t], limit = UINT64_MAX - UINT64_MAX % n;
        for (int i = 0; i < 20000; i++) {
            uint64_t x;
            do x = sim_rng_u64(&b); while (x >= limit);
            ck_assert_uint_eq(sim_rng_below(&a, n), x % n);
        }
    }
}
END_TEST

START_TEST(test_rng_determinism_and_range)
{
    sim_rng a, b, c, s0, s1;
    sim_rng_seed(&a, 42);
    sim_rng_seed(&b, 42);
    sim_rng_seed(&c, 43);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sim_rng_u64(&a);
        ck_assert_uint_eq(x, sim_rng_u64(&b));
        same_c += x == sim_rng_u64(&c);
    }
    ck_assert_int_lt(same_c, 2);
    sim_rng_seed_stream(&s0, 42, 0);
    sim_rng_seed_stream(&s1, 42, 1);
    sim_rng_seed(&a, 42);
    int same_s = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sim_rng_u64(&s0);
        same_s += x == sim_rng_u64(&s1);
        same_s += x == sim_rng_u64(&a);
    }
    ck_assert_int_lt(same_s, 2);
    /* reproducible stream */
    sim_rng_seed_stream(&s0, 7, 3);
    sim_rng_seed_stream(&s1, 7, 3);
    for (int i = 0; i < 100; i++) ck_assert_uint_eq(sim_rng_u64(&s0), sim_rng_u64(&s1));

    /* below(n): in range, every value hit, roughly uniform */
    unsigned hist[7] = { 0 };
    for (int i = 0; i < 70000; i++) {
        uint64_t x = sim_rng_below(&a, 7);
        ck_assert_uint_lt(x, 7);
        hist[x]++;
    }
    for (int i = 0; i < 7; i++) ck_assert(hist[i] > 9500 && hist[i] < 10500);
    for (int i = 0; i < 100; i++) ck_assert_uint_eq(sim_rng_below(&a, 1), 0);
    uint64_t big = (1ull << 63) + 1;
    int high = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sim_rng_below(&a, big);
        ck_assert_uint_lt(x, big);
        high += x >= (1ull << 62);
    }
    ck_assert(high > 400 && high < 600);
    double sum = 0;
    for (int i = 0; i < 10000; i++) {
        double d = sim_rng_double(&a);
        ck_assert(d >= 0.0 && d < 1.0);
        sum += d;
    }
    ck_assert(fabs(sum / 10000 - 0.5) < 0.02);
}
END_TEST

/* Known-answer: xoshiro256** seeded by splitmix64(0) (reference values from
 * the published splitmix64 and xoshiro256** algorithms). */
START_TEST(test_rng_known_answer)
{
    sim_rng r;
    sim_rng_seed(&r, 0);
    ck_assert_uint_eq(r.s[0], 0xe220a8397b1dcdafull);   /* splitmix64 first output for seed 0 */
    ck_assert_uint_eq(r.s[1], 0x6e789e6aa1b965f4ull);
    ck_assert_uint_eq(r.s[2], 0x06c45d188009454full);
    ck_assert_uint_eq(r.s[3], 0xf88bb8a8724c81ecull);
}
END_TEST

START_TEST(test_rng_below_zero_aborts)
{
    sim_rng r;
    sim_rng_seed(&r, 1);
    sim_rng_below(&r, 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tlm_stats");
    TCase *tc = tcase_create("tlm");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_b_transport_annotates_time);
    tcase_add_test_raise_signal(tc, test_b_transport_incomplete_aborts, SIGABRT);
    tcase_add_test(tc, test_quantum_keeper_sync);
    tcase_add_test(tc, test_quantum_keeper_need_sync);
    suite_add_tcase(s, tc);
    tc = tcase_create("stats");
    tcase_add_test(tc, test_meter_window);
    suite_add_tcase(s, tc);
    tc = tcase_create("rng");
    tcase_add_test(tc, test_rng_determinism_and_range);
    tcase_add_test(tc, test_rng_known_answer);
    tcase_add_test(tc, test_rng_below_power_of_two_same_stream);
    tcase_add_test_raise_signal(tc, test_rng_below_zero_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
