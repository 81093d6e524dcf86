/* Unit tests of sim/packet's pools: records with an extension area for the
 * owning model (aligned, distinct per packet, kept across free and alloc,
 * copied by sim_pkt_clone), pools without one unchanged, and the live count. */
#include "sim/packet.h"
#include "check_run.h"

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#define REQUIRE(cond, ...) do { if (!(cond)) ck_abort_msg(__VA_ARGS__); } while (0)

/* More packets than one chunk: every extension aligned, none overlapping
 * another packet's fields or extension, and what one packet writes there is
 * what it reads back after all the others wrote theirs. */
START_TEST(ext_aligned_and_distinct)
{
    enum { N = 3000, EXT = 200 };
    sim_pkt_pool pool;
    sim_pkt_pool_init_ext(&pool, "t", EXT);
    ck_assert_uint_eq(pool.ext_bytes, EXT);
    ck_assert_uint_ge(pool.stride, SIM_PKT_EXT_OFFSET + EXT);
    static sim_pkt *k[N];
    for (unsigned i = 0; i < N; i++) {
        k[i] = sim_pkt_alloc(&pool);
        REQUIRE(((uintptr_t)sim_pkt_ext(k[i]) % SIM_PKT_EXT_ALIGN) == 0, "extension %u misaligned", i);
        REQUIRE((unsigned char *)sim_pkt_ext(k[i]) >= (unsigned char *)(k[i] + 1), "extension %u overlaps its packet", i);
        REQUIRE(sim_pkt_ext_bytes(k[i]) == EXT, "ext bytes of %u", i);
        memset(sim_pkt_ext(k[i]), (int)(i & 0xff), EXT);
        k[i]->seq = i;
        k[i]->wire_bytes = 7 * i;
    }
    ck_assert_uint_eq(pool.live, N);
    for (unsigned i = 0; i < N; i++) {
        const unsigned char *e = sim_pkt_ext_const(k[i]);
        for (unsigned b = 0; b < EXT; b++) REQUIRE(e[b] == (i & 0xff), "packet %u extension byte %u overwritten", i, b);
        REQUIRE(k[i]->seq == i && k[i]->wire_bytes == 7 * i && k[i]->pool == &pool, "packet %u fields overwritten", i);
    }
    for (unsigned i = 0; i < N; i++) sim_pkt_free(k[i]);
    ck_assert_uint_eq(pool.live, 0);
    sim_pkt_pool_free(&pool);
}
END_TEST

/* sim_pkt_alloc clears the common fields but not the extension: a model
 * that reuses a record sees its own last contents, never another pool's. */
START_TEST(alloc_clears_fields_not_ext)
{
    sim_pkt_pool pool;
    sim_pkt_pool_init_ext(&pool, "t", 24);
    sim_pkt *a = sim_pkt_alloc(&pool);
    a->flow = 99;
    a->data = &pool;
    memcpy(sim_pkt_ext(a), "extension-of-the-model!", 24);
    sim_pkt_free(a);
    sim_pkt *b = sim_pkt_alloc(&pool);
    ck_assert_ptr_eq(a, b);       /* the free list is LIFO */
    ck_assert_uint_eq(b->flow, 0);
    ck_assert_ptr_null(b->data);
    ck_assert_uint_eq(b->parts, 1);
    ck_assert_mem_eq(sim_pkt_ext(b), "extension-of-the-model!", 24);
    sim_pkt_free(b);
    sim_pkt_pool_free(&pool);
}
END_TEST

/* A clone carries the extension into its own record of the cloning pool;
 * changing one does not change the other. */
START_TEST(clone_copies_ext)
{
    sim_pkt_pool a, b;
    sim_pkt_pool_init_ext(&a, "a", 40);
    sim_pkt_pool_init_ext(&b, "b", 64);
    sim_pkt *k = sim_pkt_alloc(&a);
    k->src = 3;
    k->dst = 5;
    k->payload_bytes = 1000;
    for (unsigned i = 0; i < 40; i++) ((unsigned char *)sim_pkt_ext(k))[i] = (unsigned char)(i * 3 + 1);
    sim_pkt *c = sim_pkt_clone(&b, k);
    ck_assert_ptr_eq(c->pool, &b);
    ck_assert_uint_eq(c->src, 3);
    ck_assert_uint_eq(c->dst, 5);
    ck_assert_uint_eq(c->payload_bytes, 1000);
    ck_assert_mem_eq(sim_pkt_ext(c), sim_pkt_ext(k), 40);
    ((unsigned char *)sim_pkt_ext(c))[0] = 0xee;
    ck_assert_uint_eq(((unsigned char *)sim_pkt_ext(k))[0], 1);
    sim_pkt *c2 = sim_pkt_clone(&a, k);         /* same pool */
    ck_assert_ptr_ne(c2, k);
    ck_assert_mem_eq(sim_pkt_ext(c2), sim_pkt_ext(k), 40);
    ck_assert_uint_eq(a.live, 2);
    ck_assert_uint_eq(b.live, 1);
    sim_pkt_free(c);
    sim_pkt_free(c2);
    sim_pkt_free(k);
    sim_pkt_pool_free(&a);
    sim_pkt_pool_free(&b);
}
END_TEST

/* Cloning a packet with an extension into a pool with a smaller one would
 * cut the owning model's state: a bug, it aborts. */
START_TEST(clone_into_smaller_ext_aborts)
{
    sim_pkt_pool a, b;
    sim_pkt_pool_init_ext(&a, "a", 40);
    sim_pkt_pool_init(&b, "b");
    sim_pkt *k = sim_pkt_alloc(&a);
    sim_pkt_clone(&b, k);
}
END_TEST

/* A pool without an extension keeps plain sim_pkt records back to back, and
 * a clone of its packets into a pool with one works. */
START_TEST(plain_pool_unchanged)
{
    sim_pkt_pool p, e;
    sim_pkt_pool_init(&p, "p");
    sim_pkt_pool_init_ext(&e, "e", 8);
    ck_assert_uint_eq(p.ext_bytes, 0);
    ck_assert_uint_eq(p.stride, sizeof(sim_pkt));
    sim_pkt *x = sim_pkt_alloc(&p), *y = sim_pkt_alloc(&p);
    ck_assert_ptr_eq(y, x + 1);
    x->seq = 11;
    sim_pkt *c = sim_pkt_clone(&e, x);
    ck_assert_uint_eq(c->seq, 11);
    sim_pkt_free(c);
    sim_pkt_free(x);
    sim_pkt_free(y);
    sim_pkt_pool_free(&p);
    sim_pkt_pool_free(&e);
}
END_TEST

/* Freeing a pool with packets out is a bug (a model lost one). */
START_TEST(pool_free_with_live_aborts)
{
    sim_pkt_pool p;
    sim_pkt_pool_init_ext(&p, "p", 16);
    (void)sim_pkt_alloc(&p);
    sim_pkt_pool_free(&p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("packet");
    TCase *tc = tcase_create("pool");
    tcase_add_test(tc, ext_aligned_and_distinct);
    tcase_add_test(tc, alloc_clears_fields_not_ext);
    tcase_add_test(tc, clone_copies_ext);
    tcase_add_test_raise_signal(tc, clone_into_smaller_ext_aborts, SIGABRT);
    tcase_add_test(tc, plain_pool_unchanged);
    tcase_add_test_raise_signal(tc, pool_free_with_live_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
