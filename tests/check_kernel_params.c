/* Params: defaults, overrides, typed parsing (1e6-style integers, hex, bools,
 * enums), and rejection of unknown keys, malformed and out-of-range values
 * with a message naming the key, the value and what is allowed. Used or
 * refused: a key given twice is an error; a given parameter that is never read
 * or declared not applicable is refused with its reason; a default one is not;
 * reports keep only the parameters in effect. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check_log.h"
#include "sim/sim.h"

static const sim_param_def test_params[] = {
    SIM_PARAM_INT("nodes", "16", "", 2, 64, "ring size"),
    SIM_PARAM_INT("hops", "1000", "", 1, 1e12, "hops"),
    SIM_PARAM_INT("anyint", "-3", "", 1, 0, "no range"),
    SIM_PARAM_DOUBLE("latency_ns", "10.5", "ns", 0, 1e6, "latency"),
    SIM_PARAM_BOOL("verbose", "0", "talk"),
    SIM_PARAM_ENUM("op", "rd", "wr|rd|rdwr", "operation"),
    SIM_PARAM_STRING("label", "x", "free text"),
    SIM_PARAM_END,
};

static const sim_param_def common_params[] = {
    SIM_PARAM_INT("seed", "1", "", 0, 9.2e18, "seed"),
    SIM_PARAM_INT("nodes", "99", "", 0, 1000, "a common definition the test's own overrides"),
    SIM_PARAM_END,
};

static sim_params *ps;
static char err[1024];

static void setup(void)
{
    const sim_param_def *tables[2] = { test_params, common_params };
    ps = sim_params_new(tables, 2);
    err[0] = 0;
}

static void teardown(void) { sim_params_free(ps); }

/* One assignment on a fresh set (a key may be given once per command line). */
static int set(const char *a)
{
    teardown();
    setup();
    return sim_params_set(ps, a, err, sizeof err);
}

START_TEST(test_defaults)
{
    ck_assert_int_eq(sim_param_int(ps, "nodes"), 16);      /* the test's own table wins */
    ck_assert_int_eq(sim_param_int(ps, "seed"), 1);
    ck_assert_int_eq(sim_param_int(ps, "anyint"), -3);
    ck_assert(sim_param_double(ps, "latency_ns") == 10.5);
    ck_assert(!sim_param_bool(ps, "verbose"));
    ck_assert_str_eq(sim_param_str(ps, "op"), "rd");
    ck_assert_int_eq(sim_param_enum(ps, "op"), 1);
    ck_assert_str_eq(sim_param_str(ps, "label"), "x");
    ck_assert(!sim_param_given(ps, "nodes"));
    ck_assert_int_eq(sim_params_check_defaults(ps, err, sizeof err), 0);
}
END_TEST

START_TEST(test_overrides_and_parsing)
{
    ck_assert_int_eq(set("nodes=32"), 0);
    ck_assert_int_eq(sim_param_int(ps, "nodes"), 32);
    ck_assert(sim_param_given(ps, "nodes"));
    ck_assert_int_eq(set("nodes=64"), 0);                   /* inclusive max */
    ck_assert_int_eq(sim_param_int(ps, "nodes"), 64);
    ck_assert_int_eq(set("hops=1e6"), 0);                   /* 1e6-style integers */
    ck_assert_int_eq(sim_param_int(ps, "hops"), 1000000);
    ck_assert_int_eq(set("hops=2.5e3"), 0);
    ck_assert_int_eq(sim_param_int(ps, "hops"), 2500);
    ck_assert_int_eq(set("hops=1E12"), 0);
    ck_assert_int_eq(sim_param_int(ps, "hops"), 1000000000000);
    ck_assert_int_eq(set("hops=0x10"), 0);
    ck_assert_int_eq(sim_param_int(ps, "hops"), 16);
    ck_assert_int_eq(set("anyint=-9000000000"), 0);
    ck_assert_int_eq(sim_param_int(ps, "anyint"), -9000000000);
    ck_assert_int_eq(set("latency_ns=1e-3"), 0);
    ck_assert(sim_param_double(ps, "latency_ns") == 1e-3);
    ck_assert_int_eq(set("latency_ns=0"), 0);
    static const char *truths[] = { "1", "true", "yes", "on" }, *lies[] = { "0", "false", "no", "off" };
    for (int i = 0; i < 4; i++) {
        char a[32];
        snprintf(a, sizeof a, "verbose=%s", truths[i]);
        ck_assert_int_eq(set(a), 0);
        ck_assert(sim_param_bool(ps, "verbose"));
        snprintf(a, sizeof a, "verbose=%s", lies[i]);
        ck_assert_int_eq(set(a), 0);
        ck_assert(!sim_param_bool(ps, "verbose"));
    }
    ck_assert_int_eq(set("op=rdwr"), 0);
    ck_assert_int_eq(sim_param_enum(ps, "op"), 2);
    ck_assert_str_eq(sim_param_str(ps, "op"), "rdwr");
    ck_assert_int_eq(set("op=wr"), 0);
    ck_assert_int_eq(sim_param_enum(ps, "op"), 0);
    ck_assert_int_eq(set("label=a=b"), 0);                  /* the first '=' splits */
    ck_assert_str_eq(sim_param_str(ps, "label"), "a=b");
    ck_assert_int_eq(set("seed=12345678901234"), 0);
    ck_assert_int_eq(sim_param_int(ps, "seed"), 12345678901234);
}
END_TEST

/* Every rejection names the key, the value and what is allowed. */
static void expect_bad(const char *assignment, const char *key, const char *value, const char *allowed)
{
    int64_t before = sim_param_int(ps, "nodes");
    ck_assert_msg(set(assignment) == -1, "'%s' was accepted", assignment);
    char want[512];
    snprintf(want, sizeof want, "parameter '%s': bad value '%s'; allowed: %s", key, value, allowed);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(sim_param_int(ps, "nodes"), before);  /* a rejected value changes nothing */
}

START_TEST(test_rejections_name_key_value_allowed)
{
    expect_bad("nodes=1", "nodes", "1", "an integer from 2 to 64");
    expect_bad("nodes=65", "nodes", "65", "an integer from 2 to 64");
    expect_bad("nodes=abc", "nodes", "abc", "an integer from 2 to 64");
    expect_bad("nodes=", "nodes", "", "an integer from 2 to 64");
    expect_bad("nodes=8x", "nodes", "8x", "an integer from 2 to 64");
    expect_bad("nodes=4.5", "nodes", "4.5", "an integer from 2 to 64");
    expect_bad("nodes=1e", "nodes", "1e", "an integer from 2 to 64");
    expect_bad("nodes=1e2", "nodes", "1e2", "an integer from 2 to 64");   /* 100: out of range */
    expect_bad("hops=1e13", "hops", "1e13", "an integer from 1 to 1000000000000");
    expect_bad("hops=99999999999999999999999", "hops", "99999999999999999999999", "an integer from 1 to 1000000000000");
    expect_bad("anyint=1.5", "anyint", "1.5", "an integer");
    expect_bad("latency_ns=-1", "latency_ns", "-1", "a number from 0 to 1e+06");
    expect_bad("latency_ns=nan", "latency_ns", "nan", "a number from 0 to 1e+06");
    expect_bad("latency_ns=inf", "latency_ns", "inf", "a number from 0 to 1e+06");
    expect_bad("latency_ns=10ns", "latency_ns", "10ns", "a number from 0 to 1e+06");
    expect_bad("verbose=2", "verbose", "2", "0 or 1 (also true/false, yes/no, on/off)");
    expect_bad("verbose=", "verbose", "", "0 or 1 (also true/false, yes/no, on/off)");
    expect_bad("op=read", "op", "read", "one of wr|rd|rdwr");
    expect_bad("op=r", "op", "r", "one of wr|rd|rdwr");
    expect_bad("op=rdwrx", "op", "rdwrx", "one of wr|rd|rdwr");
    expect_bad("seed=-1", "seed", "-1", "an integer from 0 to 9200000000000000000");
}
END_TEST

START_TEST(test_unknown_and_malformed_arguments)
{
    ck_assert_int_eq(set("nodez=4"), -1);
    ck_assert_str_eq(err, "unknown parameter 'nodez'; known: nodes hops anyint latency_ns verbose op label seed");
    ck_assert_int_eq(set("nodes"), -1);
    ck_assert_ptr_nonnull(strstr(err, "argument 'nodes' is not key=value"));
    ck_assert_int_eq(set("=4"), -1);
    ck_assert_ptr_nonnull(strstr(err, "argument '=4' is not key=value"));
}
END_TEST

/* Reads what a test would read, so every parameter is in effect. */
static void read_all(void)
{
    (void)sim_param_int(ps, "nodes");
    (void)sim_param_int(ps, "hops");
    (void)sim_param_int(ps, "anyint");
    (void)sim_param_double(ps, "latency_ns");
    (void)sim_param_bool(ps, "verbose");
    (void)sim_param_enum(ps, "op");
    (void)sim_param_str(ps, "label");
    (void)sim_param_int(ps, "seed");
}

START_TEST(test_params_json)
{
    ck_assert_int_eq(set("op=wr"), 0);
    read_all();
    cJSON *o = sim_params_json(ps);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "nodes")));
    ck_assert_int_eq(cJSON_GetObjectItem(o, "nodes")->valueint, 16);
    ck_assert(cJSON_GetObjectItem(o, "latency_ns")->valuedouble == 10.5);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "verbose")));
    ck_assert_str_eq(cJSON_GetObjectItem(o, "op")->valuestring, "wr");
    ck_assert_str_eq(cJSON_GetObjectItem(o, "label")->valuestring, "x");
    ck_assert_int_eq(cJSON_GetArraySize(o), 8);             /* every effective value, once */
    cJSON_Delete(o);
}
END_TEST

START_TEST(test_key_given_twice)
{
    ck_assert_int_eq(sim_params_set(ps, "nodes=8", err, sizeof err), 0);
    ck_assert_int_eq(sim_params_set(ps, "nodes=32", err, sizeof err), -1);
    ck_assert_str_eq(err, "parameter 'nodes' given twice: nodes=8 and nodes=32; give it once");
    ck_assert_int_eq(sim_param_int(ps, "nodes"), 8);          /* the refused one changes nothing */
    /* a regress default may be overridden once by the user, then not again */
    ck_assert_int_eq(sim_params_set_default(ps, "hops=5", err, sizeof err), 0);
    ck_assert(!sim_param_given(ps, "hops"));
    ck_assert_int_eq(sim_params_set(ps, "hops=7", err, sizeof err), 0);
    ck_assert_int_eq(sim_param_int(ps, "hops"), 7);
    ck_assert_int_eq(sim_params_set(ps, "hops=9", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "'hops' given twice: hops=7 and hops=9"));
}
END_TEST

START_TEST(test_default_but_unused_is_fine)
{
    sim_params_set_owner(ps, "t");
    (void)sim_param_int(ps, "nodes");
    sim_param_not_applicable(ps, "label", "labels are not used with op=%s", sim_param_str(ps, "op"));
    ck_assert_int_eq(sim_params_refuse_unused(ps, err, sizeof err), 0);
    ck_assert(sim_param_in_effect(ps, "nodes"));
    ck_assert(!sim_param_in_effect(ps, "hops"));              /* never read */
    ck_assert(!sim_param_in_effect(ps, "label"));             /* declared not applicable */
    /* the report keeps only what is in effect, and says why the rest is not */
    cJSON *o = sim_params_json(ps);
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "nodes"));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(o, "op"));
    ck_assert_ptr_null(cJSON_GetObjectItem(o, "hops"));
    ck_assert_ptr_null(cJSON_GetObjectItem(o, "label"));
    const cJSON *na = cJSON_GetObjectItem(o, SIM_PARAMS_NOT_APPLICABLE_KEY);
    ck_assert_str_eq(cJSON_GetObjectItem(na, "label")->valuestring, "labels are not used with op=rd");
    ck_assert_str_eq(cJSON_GetObjectItem(na, "hops")->valuestring, "not read by t in this configuration");
    cJSON_Delete(o);
}
END_TEST

START_TEST(test_given_but_unread_is_refused)
{
    sim_params_set_owner(ps, "t");
    ck_assert_int_eq(sim_params_set(ps, "hops=5", err, sizeof err), 0);
    ck_assert_int_eq(sim_params_set(ps, "label=y", err, sizeof err), 0);
    ck_assert_int_eq(sim_params_set(ps, "nodes=4", err, sizeof err), 0);
    (void)sim_param_int(ps, "nodes");
    ck_assert_int_eq(sim_params_refuse_unused(ps, err, sizeof err), 2);
    ck_assert_str_eq(err, "t: parameter 'hops' does not apply: the test does not read it in this configuration\n"
                          "t: parameter 'label' does not apply: the test does not read it in this configuration");
    /* regress_args are held to the same rule (a test's own defaults must be in effect) */
    teardown();
    setup();
    sim_params_set_owner(ps, "t");
    ck_assert_int_eq(sim_params_set_default(ps, "hops=5", err, sizeof err), 0);
    ck_assert_int_eq(sim_params_refuse_unused(ps, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(err, "'hops' does not apply"));
    ck_assert_ptr_nonnull(strstr(err, "regress_args"));
    /* seed is lenient: a driver passes it to every test */
    teardown();
    setup();
    sim_params_lenient(ps, "seed");
    ck_assert_int_eq(sim_params_set(ps, "seed=3", err, sizeof err), 0);
    sim_param_not_applicable(ps, "seed", "no random streams");
    ck_assert_int_eq(sim_params_refuse_unused(ps, err, sizeof err), 0);
}
END_TEST

/* Given and declared not applicable: exit 2 at once, the reason in the message. */
START_TEST(test_given_not_applicable_exits_2)
{
    sim_params_set_owner(ps, "t");
    ck_assert_int_eq(sim_params_set(ps, "label=y", err, sizeof err), 0);
    (void)sim_param_str(ps, "label");                         /* a shared helper read it: the declaration wins */
    sim_param_not_applicable(ps, "label", "op=%s has no labels", "rd");
}
END_TEST

/* After the test said it has read its configuration, a late first read is a bug. */
START_TEST(test_read_after_seal_aborts)
{
    (void)sim_param_int(ps, "nodes");
    sim_params_seal(ps);
    (void)sim_param_int(ps, "nodes");                         /* read before: fine */
    (void)sim_param_int(ps, "hops");                          /* never read before: abort */
}
END_TEST

START_TEST(test_reserved_name_aborts)
{
    static const sim_param_def bad[] = { SIM_PARAM_INT(SIM_PARAMS_NOT_APPLICABLE_KEY, "1", "", 0, 9, "x"), SIM_PARAM_END };
    const sim_param_def *tables[1] = { bad };
    sim_params_new(tables, 1);
}
END_TEST

/* A broken default is a programming error: abort, do not run. */
static const sim_param_def broken_params[] = {
    SIM_PARAM_INT("n", "100", "", 0, 10, "default out of range"),
    SIM_PARAM_END,
};

START_TEST(test_broken_default_aborts)
{
    const sim_param_def *tables[1] = { broken_params };
    sim_params_new(tables, 1);
}
END_TEST

START_TEST(test_wrong_type_access_aborts)
{
    sim_param_double(ps, "nodes");
}
END_TEST

START_TEST(test_undeclared_access_aborts)
{
    sim_param_int(ps, "nope");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("params");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_overrides_and_parsing);
    tcase_add_test(tc, test_rejections_name_key_value_allowed);
    tcase_add_test(tc, test_unknown_and_malformed_arguments);
    tcase_add_test(tc, test_params_json);
    tcase_add_test(tc, test_key_given_twice);
    tcase_add_test(tc, test_default_but_unused_is_fine);
    tcase_add_test(tc, test_given_but_unread_is_refused);
    tcase_add_exit_test(tc, test_given_not_applicable_exits_2, 2);
    tcase_add_test_raise_signal(tc, test_read_after_seal_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_reserved_name_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_broken_default_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_wrong_type_access_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_undeclared_access_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
