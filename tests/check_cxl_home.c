/* Unit tests of the home agent's transition table (cxl_ha_recv): directory
 * updates, snoop choice, grants, writes, and the ordering rules. */
#include <check.h>
#include <string.h>

#include "models/cxl/cxl_proto.h"
#include "check_run.h"

static const cxl_cfg CFG = { .values = 4, .inject = INJ_NONE };

static cxl_msg d2h(unsigned ch, unsigned op, unsigned agent, uint16_t id)
{
    cxl_msg m = { .ch = (uint8_t)ch, .op = (uint8_t)op, .agent = (uint8_t)agent, .line = 5, .id = id };
    return m;
}

static const cxl_msg *find(const cxl_out *o, unsigned ch, int op)
{
    for (unsigned i = 0; i < o->n; i++)
        if (o->m[i].ch == ch && (op < 0 || o->m[i].op == op)) return &o->m[i];
    return NULL;
}

START_TEST(read_miss_goes_to_memory)
{
    cxl_hline h;
    cxl_ha_init_line(&h, 2);
    cxl_out o;
    cxl_msg rd = d2h(CXL_D2H_REQ, RdShared, 0, 11);
    cxl_ha_recv(&CFG, &h, &rd, 40, &o);
    ck_assert(o.started);
    ck_assert_ptr_nonnull(find(&o, CXL_MEM_RD, -1));
    ck_assert_uint_eq(h.phase, HP_MEM);
    cxl_msg md = d2h(CXL_MEM_DATA, 0, 0, 40);
    md.val = 2;
    cxl_ha_recv(&CFG, &h, &md, 0, &o);
    const cxl_msg *go = find(&o, CXL_H2D_RSP, GO), *data = find(&o, CXL_H2D_DATA, -1);
    ck_assert_ptr_nonnull(go);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(go->arg, GO_S);
    ck_assert_uint_eq(go->id, 11);
    ck_assert_uint_eq(data->val, 2);
    ck_assert_uint_eq(go->line, 5);
    ck_assert(o.done);
    ck_assert_uint_eq(h.sharers, 1);
    ck_assert_uint_eq(h.owner, CXL_NO_AGENT);
    /* RdAny with no other holder gets E */
    cxl_hline h2;
    cxl_ha_init_line(&h2, 0);
    cxl_msg ra = d2h(CXL_D2H_REQ, RdAny, 1, 3);
    cxl_ha_recv(&CFG, &h2, &ra, 40, &o);
    cxl_ha_recv(&CFG, &h2, &md, 0, &o);
    ck_assert_uint_eq(find(&o, CXL_H2D_RSP, GO)->arg, GO_E);
    ck_assert_uint_eq(h2.owner, 1);
}
END_TEST

/* RdOwn to a line M elsewhere: SnpInv, wait for response and data, hand over M. */
START_TEST(rdown_from_dirty_owner)
{
    cxl_hline h;
    cxl_ha_init_line(&h, 0);
    h.sharers = 1u << 2;
    h.owner = 2;
    cxl_out o;
    cxl_msg ro = d2h(CXL_D2H_REQ, RdOwn, 0, 7);
    cxl_ha_recv(&CFG, &h, &ro, 33, &o);
    const cxl_msg *snp = find(&o, CXL_H2D_REQ, SnpInv);
    ck_assert_ptr_nonnull(snp);
    ck_assert_uint_eq(snp->agent, 2);
    ck_assert_uint_eq(snp->id, 33);
    ck_assert_ptr_null(find(&o, CXL_H2D_RSP, -1));   /* no GO while the snoop is outstanding */
    /* data first, then the response: the GO waits for both */
    cxl_msg dat = d2h(CXL_D2H_DATA, 0, 2, 33);
    dat.val = 3;
    dat.arg = CXL_DATA_IWB;
    cxl_ha_recv(&CFG, &h, &dat, 0, &o);
    ck_assert_uint_eq(o.n, 0);
    cxl_msg rsp = d2h(CXL_D2H_RSP, RspIFwdM, 2, 33);
    cxl_ha_recv(&CFG, &h, &rsp, 0, &o);
    const cxl_msg *go = find(&o, CXL_H2D_RSP, GO);
    ck_assert_ptr_nonnull(go);
    ck_assert_uint_eq(go->arg, GO_M);
    ck_assert_uint_eq(find(&o, CXL_H2D_DATA, -1)->val, 3);
    ck_assert_uint_eq(h.owner, 0);
    ck_assert_uint_eq(h.sharers, 1);
    ck_assert_uint_eq(h.mem, 0);   /* dirty ownership moved on, memory not written */
    ck_assert(o.done);
}
END_TEST

START_TEST(per_line_serialisation_and_response_legality)
{
    cxl_hline h;
    cxl_ha_init_line(&h, 0);
    h.sharers = 2;
    h.owner = 1;
    cxl_out o;
    cxl_msg r0 = d2h(CXL_D2H_REQ, RdShared, 0, 1);
    cxl_ha_recv(&CFG, &h, &r0, 9, &o);
    ck_assert_uint_eq(find(&o, CXL_H2D_REQ, -1)->op, SnpData);
    cxl_msg r2 = d2h(CXL_D2H_REQ, RdOwn, 2, 1);
    cxl_ha_recv(&CFG, &h, &r2, 10, &o);
    ck_assert_int_eq(o.status, ST_BUSY);
    cxl_msg bad = d2h(CXL_D2H_RSP, RspVHitV, 1, 9);   /* not a legal answer to SnpData */
    cxl_hline copy = h;
    cxl_ha_recv(&CFG, &copy, &bad, 0, &o);
    ck_assert_int_eq(o.status, ST_ERR);
    cxl_msg wrong = d2h(CXL_D2H_RSP, RspSHitSE, 1, 8);   /* wrong UQID */
    copy = h;
    cxl_ha_recv(&CFG, &copy, &wrong, 0, &o);
    ck_assert_int_eq(o.status, ST_ERR);
    cxl_msg ok = d2h(CXL_D2H_RSP, RspSHitSE, 1, 9);
    cxl_ha_recv(&CFG, &h, &ok, 0, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_MEM_RD, -1));
    ck_assert_uint_eq(h.owner, CXL_NO_AGENT);
}
END_TEST

START_TEST(evictions)
{
    cxl_out o;
    cxl_hline h;
    /* a stale DirtyEvict (owner already snooped away) gets GO_WritePull; its Bogus data is dropped */
    cxl_ha_init_line(&h, 1);
    cxl_msg de = d2h(CXL_D2H_REQ, DirtyEvict, 0, 4);
    cxl_ha_recv(&CFG, &h, &de, 21, &o);
    const cxl_msg *gwp = find(&o, CXL_H2D_RSP, GO_WritePull);
    ck_assert_ptr_nonnull(gwp);
    ck_assert_uint_eq(gwp->id2, 21);
    cxl_msg bog = d2h(CXL_D2H_DATA, 0, 0, 21);
    bog.arg = CXL_DATA_BOGUS;
    bog.val = 3;
    cxl_ha_recv(&CFG, &h, &bog, 0, &o);
    ck_assert(o.done);
    ck_assert_uint_eq(h.mem, 1);
    /* the owner's DirtyEvict writes memory */
    cxl_ha_init_line(&h, 1);
    h.sharers = 1;
    h.owner = 0;
    cxl_ha_recv(&CFG, &h, &de, 21, &o);
    cxl_msg dat = d2h(CXL_D2H_DATA, 0, 0, 21);
    dat.val = 3;
    cxl_ha_recv(&CFG, &h, &dat, 0, &o);
    ck_assert_uint_eq(h.mem, 3);
    ck_assert_uint_eq(h.sharers, 0);
    ck_assert_uint_eq(h.owner, CXL_NO_AGENT);
    /* CleanEvict of a shared copy: GO_WritePull_Drop */
    cxl_ha_init_line(&h, 1);
    h.sharers = 3;
    cxl_msg ce = d2h(CXL_D2H_REQ, CleanEvict, 1, 2);
    cxl_ha_recv(&CFG, &h, &ce, 5, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_RSP, GO_WritePull_Drop));
    ck_assert_uint_eq(h.sharers, 1);
    cxl_msg cend = d2h(CXL_D2H_REQ, CleanEvictNoData, 0, 2);
    cxl_ha_recv(&CFG, &h, &cend, 5, &o);
    ck_assert_uint_eq(find(&o, CXL_H2D_RSP, GO)->arg, GO_I);
    ck_assert_uint_eq(h.sharers, 0);
}
END_TEST

START_TEST(uncached_writes)
{
    cxl_out o;
    cxl_hline h;
    cxl_ha_init_line(&h, 1);
    h.sharers = 2;
    cxl_msg wi = d2h(CXL_D2H_REQ, WrInv, 0, 6);
    cxl_ha_recv(&CFG, &h, &wi, 8, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_REQ, SnpInv));
    ck_assert_ptr_null(find(&o, CXL_H2D_RSP, WritePull));   /* no WritePull before the snoop responses */
    cxl_msg rsp = d2h(CXL_D2H_RSP, RspIHitSE, 1, 8);
    cxl_ha_recv(&CFG, &h, &rsp, 0, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_RSP, WritePull));
    ck_assert_ptr_null(find(&o, CXL_H2D_RSP, GO));   /* WrInv: GO only after the data */
    cxl_msg dat = d2h(CXL_D2H_DATA, 0, 0, 8);
    dat.val = 2;
    cxl_ha_recv(&CFG, &h, &dat, 0, &o);
    ck_assert_uint_eq(find(&o, CXL_H2D_RSP, GO)->arg, GO_I);
    ck_assert_uint_eq(h.mem, 2);
    ck_assert_uint_eq(o.ev[0].kind, EV_WRITE);
    /* WOWrInv: Fast_GO_WritePull, partial data merges, ExtCmp */
    cxl_msg wo = d2h(CXL_D2H_REQ, WOWrInv, 0, 6);
    cxl_ha_recv(&CFG, &h, &wo, 8, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_RSP, Fast_GO_WritePull));
    dat.val = 3;
    dat.arg = CXL_DATA_PARTIAL;
    cxl_ha_recv(&CFG, &h, &dat, 0, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_RSP, ExtCmp));
    ck_assert_uint_eq(h.mem, 1);   /* (2 + 3) mod 4 */
    ck_assert_uint_eq(o.ev[0].kind, EV_MERGE);
}
END_TEST

START_TEST(injected_bugs)
{
    cxl_out o;
    cxl_hline h;
    cxl_cfg go_bug = { .values = 4, .inject = INJ_GO_DURING_SNOOP };
    cxl_ha_init_line(&h, 0);
    h.sharers = 2;
    cxl_msg ro = d2h(CXL_D2H_REQ, RdOwnNoData, 0, 1);
    cxl_ha_recv(&go_bug, &h, &ro, 3, &o);
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_REQ, SnpInv));
    ck_assert_ptr_nonnull(find(&o, CXL_H2D_RSP, GO));   /* the bug: GO with the snoop outstanding */
    cxl_cfg e_bug = { .values = 4, .inject = INJ_E_WITH_SHARERS };
    cxl_ha_init_line(&h, 0);
    h.sharers = 2;
    cxl_msg rs = d2h(CXL_D2H_REQ, RdShared, 0, 1);
    cxl_ha_recv(&e_bug, &h, &rs, 3, &o);
    cxl_msg md = d2h(CXL_MEM_DATA, 0, 0, 3);
    cxl_ha_recv(&e_bug, &h, &md, 0, &o);
    ck_assert_uint_eq(find(&o, CXL_H2D_RSP, GO)->arg, GO_E);
}
END_TEST

START_TEST(cache_flushed)
{
    cxl_hline lines[3];
    for (unsigned i = 0; i < 3; i++) cxl_ha_init_line(&lines[i], 0);
    cxl_out o;
    cxl_msg cf = d2h(CXL_D2H_REQ, CacheFlushed, 1, 12);
    cf.line = 0;
    cxl_ha_cache_flushed(lines, 3, &cf, &o);
    ck_assert_int_eq(o.status, ST_OK);
    ck_assert_uint_eq(o.n, 1);
    ck_assert_uint_eq(o.m[0].op, GO);
    ck_assert_uint_eq(o.m[0].arg, GO_I);
    ck_assert_uint_eq(o.m[0].id, 12);
    /* a busy line may still be pulling the device's last writeback: fine */
    lines[2].sharers = 2;
    lines[2].owner = 1;
    lines[2].phase = HP_PULL;
    cxl_ha_cache_flushed(lines, 3, &cf, &o);
    ck_assert_int_eq(o.status, ST_OK);
    /* an idle line that still tracks the device contradicts the flush */
    lines[2].phase = HP_IDLE;
    cxl_ha_cache_flushed(lines, 3, &cf, &o);
    ck_assert_int_eq(o.status, ST_ERR);
    /* and it is never a line request */
    cxl_ha_recv(&CFG, &lines[0], &cf, 1, &o);
    ck_assert_int_eq(o.status, ST_ERR);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cxl_home");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, read_miss_goes_to_memory);
    tcase_add_test(tc, rdown_from_dirty_owner);
    tcase_add_test(tc, per_line_serialisation_and_response_legality);
    tcase_add_test(tc, evictions);
    tcase_add_test(tc, uncached_writes);
    tcase_add_test(tc, injected_bugs);
    tcase_add_test(tc, cache_flushed);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
