/* Unit tests of the device coherence agent's transition table (cxl_dev_*). */
#include <check.h>
#include <stdlib.h>

#include "models/cxl/cxl_proto.h"
#include "check_run.h"

static const cxl_cfg CFG = { .values = 4, .inject = INJ_NONE };

static cxl_dline line_in(unsigned st, uint8_t val)
{
    cxl_dline l = { .st = (uint8_t)st, .val = val, .cqid = 3 };
    return l;
}

static cxl_msg h2d(unsigned ch, unsigned op, unsigned arg)
{
    cxl_msg m = { .ch = (uint8_t)ch, .op = (uint8_t)op, .arg = (uint8_t)arg, .agent = 0, .line = 7, .id = 3, .id2 = 9 };
    return m;
}

/* Snoop response table for the stable states (CXL 3.0 device snoop rules). */
START_TEST(snoop_stable_states)
{
    static const struct { unsigned st, snp, rsp, next; bool data; } t[] = {
        { DS_I, SnpData, RspIHitI, DS_I, false },   { DS_I, SnpInv, RspIHitI, DS_I, false },
        { DS_I, SnpCur, RspIHitI, DS_I, false },    { DS_S, SnpData, RspSHitSE, DS_S, false },
        { DS_S, SnpInv, RspIHitSE, DS_I, false },   { DS_S, SnpCur, RspVHitV, DS_S, false },
        { DS_E, SnpData, RspSHitSE, DS_S, false },  { DS_E, SnpInv, RspIHitSE, DS_I, false },
        { DS_E, SnpCur, RspVHitV, DS_E, false },    { DS_M, SnpData, RspSFwdM, DS_S, true },
        { DS_M, SnpInv, RspIFwdM, DS_I, true },     { DS_M, SnpCur, RspVFwdV, DS_M, true },
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
        cxl_dline l = line_in(t[i].st, 2);
        cxl_msg in = h2d(CXL_H2D_REQ, t[i].snp, 0);
        cxl_out o;
        cxl_dev_recv(&CFG, &l, &in, &o);
        ck_assert_int_eq(o.status, ST_OK);
        ck_assert_uint_eq(o.n, t[i].data ? 2 : 1);
        ck_assert_uint_eq(o.m[0].ch, CXL_D2H_RSP);
        ck_assert_msg(o.m[0].op == t[i].rsp, "%s + %s", cxl_dstate_name(t[i].st), cxl_op_name(CXL_H2D_REQ, t[i].snp));
        ck_assert_uint_eq(o.m[0].id, in.id);   /* the snoop's UQID */
        ck_assert_uint_eq(l.st, t[i].next);
        if (t[i].data) {
            ck_assert_uint_eq(o.m[1].ch, CXL_D2H_DATA);
            ck_assert_uint_eq(o.m[1].val, 2);
            ck_assert(o.m[1].arg & CXL_DATA_IWB);
        }
    }
}
END_TEST

/* Which request each access sends from each stable state. */
START_TEST(core_requests)
{
    static const struct { unsigned st, op, req, next; } t[] = {
        { DS_I, OP_LOAD, RdShared, DS_IS_AD },       { DS_I, OP_LOAD_ANY, RdAny, DS_IS_AD },
        { DS_I, OP_STORE, RdOwn, DS_IM_AD },         { DS_I, OP_WRITE_FULL, RdOwnNoData, DS_IM_A },
        { DS_I, OP_RDCURR, RdCurr, DS_IC_D },        { DS_I, OP_CLFLUSH, CLFlush, DS_IF_A },
        { DS_I, OP_ITOMWR, ItoMWr, DS_IW_A },        { DS_I, OP_WRCUR, WrCur, DS_IW_A },
        { DS_I, OP_WRINV, WrInv, DS_IV_P },          { DS_I, OP_WOWRINV, WOWrInv, DS_WO_P },
        { DS_I, OP_WOWRINVF, WOWrInvF, DS_WO_P },    { DS_S, OP_STORE, RdOwn, DS_SM_AD },
        { DS_S, OP_WRITE_FULL, RdOwnNoData, DS_SM_A }, { DS_S, OP_EVICT, CleanEvict, DS_SI_A },
        { DS_S, OP_EVICT_NODATA, CleanEvictNoData, DS_SI_AC }, { DS_E, OP_EVICT, CleanEvict, DS_SI_A },
        { DS_M, OP_EVICT, DirtyEvict, DS_MI_A },
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
        cxl_dline l = line_in(t[i].st, 1);
        cxl_out o;
        cxl_dev_core(&CFG, &l, 0, 7, t[i].op, 2, 5, &o);
        ck_assert_int_eq(o.status, ST_OK);
        ck_assert_uint_eq(o.n, 1);
        ck_assert_uint_eq(o.m[0].ch, CXL_D2H_REQ);
        ck_assert_msg(o.m[0].op == t[i].req, "%s + %s sent %s", cxl_dstate_name(t[i].st), cxl_core_op_name(t[i].op),
                      cxl_op_name(CXL_D2H_REQ, o.m[0].op));
        ck_assert_uint_eq(o.m[0].id, 5);
        ck_assert_uint_eq(l.st, t[i].next);
        ck_assert_uint_eq(l.cqid, 5);
    }
}
END_TEST

START_TEST(hits_and_silent_upgrade)
{
    cxl_out o;
    cxl_dline l = line_in(DS_S, 1);
    cxl_dev_core(&CFG, &l, 0, 7, OP_LOAD, 0, 5, &o);
    ck_assert_int_eq(o.status, ST_HIT);
    ck_assert_uint_eq(o.nev, 1);
    ck_assert_uint_eq(o.ev[0].kind, EV_LOAD);
    l = line_in(DS_E, 1);
    cxl_dev_core(&CFG, &l, 0, 7, OP_STORE, 0, 5, &o);
    ck_assert_int_eq(o.status, ST_HIT);
    ck_assert_uint_eq(l.st, DS_M);
    ck_assert_uint_eq(l.val, 2);
    ck_assert_uint_eq(o.ev[0].kind, EV_STORE);
    l = line_in(DS_IM_AD, 0);
    cxl_dev_core(&CFG, &l, 0, 7, OP_LOAD, 0, 5, &o);
    ck_assert_int_eq(o.status, ST_BUSY);   /* one access per line at a time */
    l = line_in(DS_I, 0);
    cxl_dev_core(&CFG, &l, 0, 7, OP_EVICT, 0, 5, &o);
    ck_assert_int_eq(o.status, ST_BUSY);
}
END_TEST

/* GO and data in either order complete the same way. */
START_TEST(go_data_either_order)
{
    cxl_out o;
    cxl_msg go = h2d(CXL_H2D_RSP, GO, GO_E), data = h2d(CXL_H2D_DATA, 0, 0);
    data.val = 3;
    cxl_dline a = line_in(DS_IM_AD, 0);
    a.acc = OP_STORE;
    cxl_dev_recv(&CFG, &a, &go, &o);
    ck_assert_uint_eq(a.st, DS_IM_D);
    cxl_dev_recv(&CFG, &a, &data, &o);
    ck_assert(o.done);
    ck_assert_uint_eq(a.st, DS_M);
    ck_assert_uint_eq(a.val, 0);   /* 3 + 1 mod 4 */
    cxl_dline b = line_in(DS_IM_AD, 0);
    b.acc = OP_STORE;
    cxl_dev_recv(&CFG, &b, &data, &o);
    ck_assert_uint_eq(b.st, DS_IM_A);
    ck_assert(!o.done);
    cxl_dev_recv(&CFG, &b, &go, &o);
    ck_assert(o.done);
    ck_assert_uint_eq(b.st, DS_M);
    ck_assert_uint_eq(b.val, a.val);
    /* a load may use data that arrives before GO; GO-S then installs S */
    cxl_dline c = line_in(DS_IS_AD, 0);
    c.acc = OP_LOAD;
    cxl_dev_recv(&CFG, &c, &data, &o);
    ck_assert_uint_eq(c.st, DS_IS_A);
    ck_assert_uint_eq(o.ev[0].kind, EV_LOAD);
    cxl_msg gos = h2d(CXL_H2D_RSP, GO, GO_S);
    cxl_dev_recv(&CFG, &c, &gos, &o);
    ck_assert_uint_eq(c.st, DS_S);
}
END_TEST

/* The races: snoop during an outstanding request, after GO before data, during a dirty eviction. */
START_TEST(races)
{
    cxl_out o;
    cxl_msg inv = h2d(CXL_H2D_REQ, SnpInv, 0);
    cxl_dline l = line_in(DS_SM_AD, 1);
    cxl_dev_recv(&CFG, &l, &inv, &o);
    ck_assert_uint_eq(o.m[0].op, RspIHitSE);
    ck_assert_uint_eq(l.st, DS_IM_AD);   /* the upgrade now needs data */
    l = line_in(DS_IM_D, 0);
    cxl_dev_recv(&CFG, &l, &inv, &o);
    ck_assert_int_eq(o.status, ST_STALL);   /* GO seen, data pending: the snoop waits */
    ck_assert_uint_eq(l.st, DS_IM_D);
    l = line_in(DS_MI_A, 2);
    cxl_dev_recv(&CFG, &l, &inv, &o);
    ck_assert_uint_eq(o.m[0].op, RspIFwdM);
    ck_assert_uint_eq(l.st, DS_II_A);
    cxl_msg pull = h2d(CXL_H2D_RSP, GO_WritePull, 0);
    cxl_dev_recv(&CFG, &l, &pull, &o);
    ck_assert_uint_eq(o.n, 1);
    ck_assert_uint_eq(o.m[0].ch, CXL_D2H_DATA);
    ck_assert(o.m[0].arg & CXL_DATA_BOGUS);   /* stale DirtyEvict: Bogus data */
    ck_assert_uint_eq(o.m[0].id, 9);            /* the UQID from the GO_WritePull */
    ck_assert_uint_eq(l.st, DS_I);
    /* a snoop between data and GO is a host bug */
    l = line_in(DS_IS_A, 0);
    cxl_dev_recv(&CFG, &l, &inv, &o);
    ck_assert_int_eq(o.status, ST_ERR);
}
END_TEST

START_TEST(writes_and_evictions)
{
    cxl_out o;
    cxl_dline l = line_in(DS_IV_P, 0);
    l.wval = 2;
    cxl_msg wp = h2d(CXL_H2D_RSP, WritePull, 0), goi = h2d(CXL_H2D_RSP, GO, GO_I);
    cxl_dev_recv(&CFG, &l, &wp, &o);
    ck_assert_uint_eq(l.st, DS_IV_A);
    ck_assert_uint_eq(o.m[0].val, 2);
    cxl_dev_recv(&CFG, &l, &goi, &o);
    ck_assert(o.done);
    ck_assert_uint_eq(l.st, DS_I);
    l = line_in(DS_WO_P, 0);
    l.acc = OP_WOWRINV;
    l.wval = 1;
    cxl_msg fg = h2d(CXL_H2D_RSP, Fast_GO_WritePull, 0), ext = h2d(CXL_H2D_RSP, ExtCmp, 0);
    cxl_dev_recv(&CFG, &l, &fg, &o);
    ck_assert(o.m[0].arg & CXL_DATA_PARTIAL);
    ck_assert_uint_eq(l.st, DS_WO_E);
    cxl_dev_recv(&CFG, &l, &ext, &o);
    ck_assert(o.done);
    l = line_in(DS_SI_A, 1);
    cxl_msg drop = h2d(CXL_H2D_RSP, GO_WritePull_Drop, 0);
    cxl_dev_recv(&CFG, &l, &drop, &o);
    ck_assert_uint_eq(o.n, 0);
    ck_assert_uint_eq(l.st, DS_I);
    /* a response with a CQID that is not outstanding */
    l = line_in(DS_IS_AD, 0);
    cxl_msg bad = h2d(CXL_H2D_RSP, GO, GO_S);
    bad.id = 4;
    cxl_dev_recv(&CFG, &l, &bad, &o);
    ck_assert_int_eq(o.status, ST_ERR);
}
END_TEST

START_TEST(inject_no_fwd_data)
{
    cxl_cfg bug = { .values = 4, .inject = INJ_NO_FWD_DATA };
    cxl_dline l = line_in(DS_M, 2);
    cxl_msg inv = h2d(CXL_H2D_REQ, SnpInv, 0);
    cxl_out o;
    cxl_dev_recv(&bug, &l, &inv, &o);
    ck_assert_uint_eq(o.n, 1);
    ck_assert_uint_eq(o.m[0].op, RspIHitSE);
}
END_TEST

START_TEST(transition_table_probe)
{
    unsigned n = 0;
    const uint8_t *def = cxl_transitions_defined(&n);
    ck_assert_ptr_nonnull(def);
    ck_assert_uint_gt(n, 100);
    /* a defined one and an undefined one */
    ck_assert(def[DS_M * CXL_DEV_IN + CXL_N_CORE_OP + SnpInv]);
    ck_assert(!def[DS_IS_A * CXL_DEV_IN + CXL_N_CORE_OP + SnpInv]);
}
END_TEST

START_TEST(cache_flush_handshake)
{
    cxl_out o;
    cxl_dev_flush_start(1, 6, &o);
    ck_assert_uint_eq(o.n, 1);
    ck_assert_uint_eq(o.m[0].ch, CXL_D2H_REQ);
    ck_assert_uint_eq(o.m[0].op, CacheFlushed);
    ck_assert_uint_eq(o.m[0].id, 6);
    cxl_msg goi = h2d(CXL_H2D_RSP, GO, GO_I);
    goi.id = 5;
    ck_assert(!cxl_dev_flush_recv(6, &goi, &o));   /* another request's GO */
    goi.id = 6;
    ck_assert(cxl_dev_flush_recv(6, &goi, &o));
    ck_assert(o.done);
    ck_assert_int_eq(o.status, ST_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cxl_dev");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, snoop_stable_states);
    tcase_add_test(tc, core_requests);
    tcase_add_test(tc, hits_and_silent_upgrade);
    tcase_add_test(tc, go_data_either_order);
    tcase_add_test(tc, races);
    tcase_add_test(tc, writes_and_evictions);
    tcase_add_test(tc, inject_no_fwd_data);
    tcase_add_test(tc, transition_table_probe);
    tcase_add_test(tc, cache_flush_handshake);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
