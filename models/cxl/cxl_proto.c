/* CXL.cache step functions. See cxl_proto.h and docs/models/cxl.md for the tables. */
#include "models/cxl/cxl_proto.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- names */
static const char *const dstate_names[CXL_N_DSTATE] = {
    "I", "S", "E", "M", "IS_AD", "IS_A", "IS_D", "IM_AD", "IM_A", "IM_D", "SM_AD", "SM_A", "MI_A", "SI_A", "II_A",
    "SI_AC", "IC_D", "IF_A", "IW_A", "IV_P", "IV_A", "WO_P", "WO_E",
};
static const char *const d2h_req_names[CXL_N_D2H_REQ] = {
    "RdCurr", "RdOwn", "RdShared", "RdAny", "RdOwnNoData", "ItoMWr", "WrCur", "CLFlush",
    "CleanEvict", "DirtyEvict", "CleanEvictNoData", "WOWrInv", "WOWrInvF", "WrInv", "CacheFlushed",
};
static const char *const d2h_rsp_names[CXL_N_D2H_RSP] = {
    "RspIHitI", "RspVHitV", "RspIHitSE", "RspSHitSE", "RspSFwdM", "RspIFwdM", "RspVFwdV",
};
static const char *const h2d_req_names[CXL_N_H2D_REQ] = { "SnpData", "SnpInv", "SnpCur" };
static const char *const h2d_rsp_names[CXL_N_H2D_RSP] = {
    "WritePull", "GO", "GO_WritePull", "ExtCmp", "GO_WritePull_Drop", "Fast_GO_WritePull", "GO_ERR_WritePull",
};
static const char *const go_names[CXL_N_GO] = { "I", "S", "E", "M", "Err" };
static const char *const core_op_names[CXL_N_CORE_OP] = {
    "load", "load_any", "store", "write_full", "evict", "evict_nodata", "rdcurr", "clflush",
    "itomwr", "wrcur", "wrinv", "wowrinv", "wowrinvf", "cache_flush",
};
static const char *const inject_names[CXL_N_INJECT] = { "none", "go_during_snoop", "no_fwd_data", "e_with_sharers",
                                                        "skip_bogus" };

const char *cxl_dstate_name(unsigned st) { return st < CXL_N_DSTATE ? dstate_names[st] : "?"; }
const char *cxl_go_name(unsigned go) { return go < CXL_N_GO ? go_names[go] : "?"; }
const char *cxl_core_op_name(unsigned op) { return op < CXL_N_CORE_OP ? core_op_names[op] : "?"; }
const char *cxl_inject_name(unsigned inj) { return inj < CXL_N_INJECT ? inject_names[inj] : "?"; }

const char *cxl_op_name(unsigned ch, unsigned op)
{
    switch (ch) {
    case CXL_D2H_REQ: return op < CXL_N_D2H_REQ ? d2h_req_names[op] : "?";
    case CXL_D2H_RSP: return op < CXL_N_D2H_RSP ? d2h_rsp_names[op] : "?";
    case CXL_D2H_DATA: return "D2HData";
    case CXL_H2D_REQ: return op < CXL_N_H2D_REQ ? h2d_req_names[op] : "?";
    case CXL_H2D_RSP: return op < CXL_N_H2D_RSP ? h2d_rsp_names[op] : "?";
    case CXL_H2D_DATA: return "H2DData";
    case CXL_MEM_RD: return "MemRd";
    case CXL_MEM_DATA: return "MemData";
    case CXL_M2S_REQ: return op == CXL_MEM_OP_MEMRD ? "MemRd" : "?";
    case CXL_M2S_RWD: return op == CXL_MEM_OP_MEMWR ? "MemWr" : "?";
    case CXL_S2M_NDR: return op == CXL_MEM_OP_CMP ? "Cmp" : "?";
    case CXL_S2M_DRS: return op == CXL_MEM_OP_MEMDATA ? "MemData" : "?";
    default: return "?";
    }
}

void cxl_msg_label(const cxl_msg *m, char *buf, size_t n)
{
    switch (m->ch) {
    case CXL_H2D_RSP:
        if (m->op == GO) snprintf(buf, n, "GO-%s L%u cq%u a%u", cxl_go_name(m->arg), m->line, m->id, m->agent);
        else snprintf(buf, n, "%s L%u cq%u a%u", cxl_op_name(m->ch, m->op), m->line, m->id, m->agent);
        break;
    case CXL_D2H_DATA:
        snprintf(buf, n, "Data%s L%u uq%u v%u a%u", (m->arg & CXL_DATA_BOGUS) ? "(Bogus)" : (m->arg & CXL_DATA_IWB) ? "(IWB)" : "", m->line, m->id, m->val, m->agent);
        break;
    case CXL_H2D_DATA: snprintf(buf, n, "Data L%u cq%u v%u a%u", m->line, m->id, m->val, m->agent); break;
    default: snprintf(buf, n, "%s L%u id%u a%u", cxl_op_name(m->ch, m->op), m->line, m->id, m->agent); break;
    }
}

/* CXL 2.0 68B-flit header widths (CXL2_CACHE_PKG.sv). */
unsigned cxl_hdr_bits(unsigned ch)
{
    switch (ch) {
    case CXL_D2H_REQ: return 79;
    case CXL_D2H_RSP: return 20;
    case CXL_D2H_DATA: return 17;
    case CXL_H2D_REQ: return 64;
    case CXL_H2D_RSP: return 32;
    case CXL_H2D_DATA: return 24;
    /* CXL.mem (CXL 2.0 field tables; CXL2_MEM_PKG.sv sums to the same for Req, RwD and NDR) */
    case CXL_M2S_REQ: return 87;
    case CXL_M2S_RWD: return 87;
    case CXL_S2M_NDR: return 30;
    case CXL_S2M_DRS: return 40;
    default: return 0;
    }
}
bool cxl_has_data(unsigned ch)
{
    return ch == CXL_D2H_DATA || ch == CXL_H2D_DATA || ch == CXL_M2S_RWD || ch == CXL_S2M_DRS;
}

/* ---------------------------------------------------------- permissions */
unsigned cxl_dstate_perm(unsigned st)
{
    switch (st) {
    case DS_M: case DS_E: return PERM_RW;
    case DS_S: case DS_SM_AD: case DS_SM_A: return PERM_R;
    case DS_IS_A: return PERM_R;   /* data before GO may be consumed by the requesting load */
    default: return PERM_NONE;
    }
}

bool cxl_dstate_holds(unsigned st)
{
    switch (st) {
    case DS_S: case DS_E: case DS_M: case DS_SM_AD: case DS_SM_A: return true;
    default: return false;
    }
}

bool cxl_dstate_stable(unsigned st) { return st <= DS_M; }

/* --------------------------------------------------------------- helpers */
static cxl_msg *emit(cxl_out *o, unsigned ch, unsigned op, unsigned agent, uint32_t line, uint16_t id)
{
    if (o->n >= CXL_MAX_OUT) {
        o->status = ST_ERR;
        o->err = "step emitted too many messages";
        return &o->m[CXL_MAX_OUT - 1];
    }
    cxl_msg *m = &o->m[o->n++];
    memset(m, 0, sizeof *m);
    m->ch = (uint8_t)ch;
    m->op = (uint8_t)op;
    m->agent = (uint8_t)agent;
    m->line = line;
    m->id = id;
    return m;
}

static void event(cxl_out *o, unsigned kind, unsigned agent, uint32_t line, unsigned a, unsigned b)
{
    if (o->nev >= CXL_MAX_EV) return;
    cxl_ev *e = &o->ev[o->nev++];
    e->kind = (uint8_t)kind;
    e->agent = (uint8_t)agent;
    e->line = line;
    e->a = (uint8_t)a;
    e->b = (uint8_t)b;
}

static void fail(cxl_out *o, const char *why)
{
    o->status = ST_ERR;
    o->err = why;
}

static void out_init(cxl_out *o)
{
    o->n = 0;
    o->nev = 0;
    o->status = ST_OK;
    o->err = NULL;
    o->tr = 0xffff;
    o->done = o->started = o->freed = false;
}

static uint8_t next_val(const cxl_cfg *cfg, uint8_t v) { return (uint8_t)((v + 1u) % cfg->values); }

/* ------------------------------------------------------------ device FSM */
bool cxl_dev_op_legal(const cxl_dline *l, unsigned op, bool is_core)
{
    /* host cores use the cacheable subset; the uncached CXL writes are device ops */
    if (is_core && (op == OP_RDCURR || op == OP_ITOMWR || op == OP_WRCUR || op == OP_WRINV || op == OP_WOWRINV ||
                    op == OP_WOWRINVF || op == OP_LOAD_ANY))
        return false;
    switch (l->st) {
    case DS_I: return op != OP_EVICT && op != OP_EVICT_NODATA;
    case DS_S: return op == OP_LOAD || op == OP_LOAD_ANY || op == OP_STORE || op == OP_WRITE_FULL || op == OP_EVICT ||
                      op == OP_EVICT_NODATA;
    case DS_E: return op == OP_LOAD || op == OP_LOAD_ANY || op == OP_STORE || op == OP_WRITE_FULL || op == OP_EVICT ||
                      op == OP_EVICT_NODATA;
    case DS_M: return op == OP_LOAD || op == OP_LOAD_ANY || op == OP_STORE || op == OP_WRITE_FULL || op == OP_EVICT;
    default: return false;
    }
}

static void dev_request(cxl_out *o, cxl_dline *l, unsigned agent, uint32_t line, unsigned req, unsigned st,
                        unsigned op, uint8_t wval, uint16_t cqid)
{
    emit(o, CXL_D2H_REQ, req, agent, line, cqid);
    l->st = (uint8_t)st;
    l->acc = (uint8_t)op;
    l->wval = wval;
    l->cqid = cqid;
    l->go = 0;
}

void cxl_dev_core(const cxl_cfg *cfg, cxl_dline *l, unsigned agent, uint32_t line, unsigned op, uint8_t wval,
                  uint16_t cqid, cxl_out *o)
{
    out_init(o);
    o->tr = (uint16_t)(l->st * CXL_DEV_IN + op);
    if (!cxl_dev_op_legal(l, op, false)) {
        o->status = ST_BUSY;
        return;
    }
    switch (l->st) {
    case DS_I:
        switch (op) {
        case OP_LOAD: dev_request(o, l, agent, line, RdShared, DS_IS_AD, op, 0, cqid); break;
        case OP_LOAD_ANY: dev_request(o, l, agent, line, RdAny, DS_IS_AD, op, 0, cqid); break;
        case OP_STORE: dev_request(o, l, agent, line, RdOwn, DS_IM_AD, op, 0, cqid); break;
        case OP_WRITE_FULL: dev_request(o, l, agent, line, RdOwnNoData, DS_IM_A, op, wval, cqid); break;
        case OP_RDCURR: dev_request(o, l, agent, line, RdCurr, DS_IC_D, op, 0, cqid); break;
        case OP_CLFLUSH: dev_request(o, l, agent, line, CLFlush, DS_IF_A, op, 0, cqid); break;
        case OP_ITOMWR: dev_request(o, l, agent, line, ItoMWr, DS_IW_A, op, wval, cqid); break;
        case OP_WRCUR: dev_request(o, l, agent, line, WrCur, DS_IW_A, op, wval, cqid); break;
        case OP_WRINV: dev_request(o, l, agent, line, WrInv, DS_IV_P, op, wval, cqid); break;
        case OP_WOWRINV: dev_request(o, l, agent, line, WOWrInv, DS_WO_P, op, wval, cqid); break;
        case OP_WOWRINVF: dev_request(o, l, agent, line, WOWrInvF, DS_WO_P, op, wval, cqid); break;
        default: o->status = ST_BUSY; break;
        }
        return;
    case DS_S:
        switch (op) {
        case OP_LOAD: case OP_LOAD_ANY: o->status = ST_HIT; event(o, EV_LOAD, agent, line, l->val, 0); break;
        case OP_STORE: dev_request(o, l, agent, line, RdOwn, DS_SM_AD, op, 0, cqid); break;
        case OP_WRITE_FULL: dev_request(o, l, agent, line, RdOwnNoData, DS_SM_A, op, wval, cqid); break;
        case OP_EVICT: dev_request(o, l, agent, line, CleanEvict, DS_SI_A, op, 0, cqid); break;
        case OP_EVICT_NODATA: dev_request(o, l, agent, line, CleanEvictNoData, DS_SI_AC, op, 0, cqid); break;
        default: o->status = ST_BUSY; break;
        }
        return;
    case DS_E:
    case DS_M:
        switch (op) {
        case OP_LOAD: case OP_LOAD_ANY: o->status = ST_HIT; event(o, EV_LOAD, agent, line, l->val, 0); break;
        case OP_STORE: {   /* E -> M silently: E grants write permission */
            uint8_t nv = next_val(cfg, l->val);
            event(o, EV_STORE, agent, line, l->val, nv);
            l->val = nv;
            l->st = DS_M;
            o->status = ST_HIT;
            break;
        }
        case OP_WRITE_FULL:
            event(o, EV_WRITE, agent, line, wval, 0);
            l->val = wval;
            l->st = DS_M;
            o->status = ST_HIT;
            break;
        case OP_EVICT:
            if (l->st == DS_M) dev_request(o, l, agent, line, DirtyEvict, DS_MI_A, op, 0, cqid);
            else dev_request(o, l, agent, line, CleanEvict, DS_SI_A, op, 0, cqid);
            break;
        case OP_EVICT_NODATA: dev_request(o, l, agent, line, CleanEvictNoData, DS_SI_AC, op, 0, cqid); break;
        default: o->status = ST_BUSY; break;
        }
        return;
    default: o->status = ST_BUSY; return;
    }
}

static void snoop_rsp(cxl_out *o, const cxl_msg *in, unsigned rsp)
{
    emit(o, CXL_D2H_RSP, rsp, in->agent, in->line, in->id);
}

static void snoop_rsp_data(cxl_out *o, const cxl_msg *in, unsigned rsp, uint8_t val)
{
    emit(o, CXL_D2H_RSP, rsp, in->agent, in->line, in->id);
    cxl_msg *d = emit(o, CXL_D2H_DATA, 0, in->agent, in->line, in->id);
    d->val = val;
    d->arg = CXL_DATA_IWB;
}

/* Device side of a snoop (CXL 3.0 Table 3-22-style responses, stable and transient). */
static void dev_snoop(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o)
{
    unsigned s = in->op;
    switch (l->st) {
    case DS_I: case DS_IS_AD: case DS_IM_AD: case DS_IC_D: case DS_IF_A: case DS_IW_A: case DS_IV_P: case DS_IV_A:
    case DS_WO_P: case DS_WO_E: case DS_II_A:
        snoop_rsp(o, in, RspIHitI);
        return;
    case DS_IM_A:
        /* RdOwnNoData from I holds nothing; after data of a RdOwn the host must not snoop before GO (3.2.5.2) */
        if (l->acc == OP_WRITE_FULL) snoop_rsp(o, in, RspIHitI);
        else fail(o, "snoop between data and GO (3.2.5.2)");
        return;
    case DS_IS_A: fail(o, "snoop between data and GO (3.2.5.2)"); return;
    case DS_IS_D: case DS_IM_D:
        o->status = ST_STALL;   /* GO seen, data in flight: the snoop waits for it (H2D Data always drains) */
        return;
    case DS_S: case DS_SM_AD: case DS_SM_A:
        if (s == SnpCur) snoop_rsp(o, in, RspVHitV);
        else if (s == SnpData) snoop_rsp(o, in, RspSHitSE);
        else {
            snoop_rsp(o, in, RspIHitSE);
            l->st = l->st == DS_S ? DS_I : l->st == DS_SM_AD ? DS_IM_AD : DS_IM_A;
        }
        return;
    case DS_E:
        if (s == SnpCur) snoop_rsp(o, in, RspVHitV);
        else if (s == SnpData) {
            snoop_rsp(o, in, RspSHitSE);
            l->st = DS_S;
        } else {
            snoop_rsp(o, in, RspIHitSE);
            l->st = DS_I;
        }
        return;
    case DS_M:
        if (s == SnpCur) snoop_rsp_data(o, in, RspVFwdV, l->val);
        else if (s == SnpData) {
            snoop_rsp_data(o, in, RspSFwdM, l->val);
            l->st = DS_S;
        } else {
            if (cfg->inject == INJ_NO_FWD_DATA) snoop_rsp(o, in, RspIHitSE);   /* seeded bug: dirty data dropped */
            else snoop_rsp_data(o, in, RspIFwdM, l->val);
            l->st = DS_I;
        }
        return;
    case DS_MI_A:
        /* evicting a dirty line: give the data to the snoop; the DirtyEvict's data becomes Bogus */
        if (s == SnpCur) snoop_rsp_data(o, in, RspVFwdV, l->val);
        else {
            snoop_rsp_data(o, in, RspIFwdM, l->val);
            l->st = DS_II_A;
        }
        return;
    case DS_SI_A:
        if (s == SnpCur) snoop_rsp(o, in, RspVHitV);
        else {
            snoop_rsp(o, in, RspIHitSE);
            l->st = DS_II_A;
        }
        return;
    case DS_SI_AC:
        if (s == SnpCur) snoop_rsp(o, in, RspVHitV);
        else {
            snoop_rsp(o, in, RspIHitSE);
            l->st = DS_IF_A;
        }
        return;
    default: fail(o, "snoop in unknown state"); return;
    }
}

static void dev_finish(cxl_dline *l, unsigned st, cxl_out *o)
{
    l->st = (uint8_t)st;
    o->done = true;
    o->freed = true;
}

/* Completes a read-for-ownership once both GO and data are in. */
static void dev_own_complete(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o)
{
    if (l->acc == OP_STORE) {
        uint8_t nv = next_val(cfg, l->val);
        event(o, EV_STORE, in->agent, in->line, l->val, nv);
        l->val = nv;
    } else if (l->acc == OP_WRITE_FULL) {
        event(o, EV_WRITE, in->agent, in->line, l->wval, 0);
        l->val = l->wval;
    }
    dev_finish(l, DS_M, o);
}

static unsigned go_to_state(unsigned go)
{
    switch (go) {
    case GO_S: return DS_S;
    case GO_E: return DS_E;
    case GO_M: return DS_M;
    default: return DS_I;
    }
}

static void send_pull_data(cxl_out *o, const cxl_msg *in, uint8_t val, unsigned bogus, unsigned partial)
{
    cxl_msg *d = emit(o, CXL_D2H_DATA, 0, in->agent, in->line, in->id2);
    d->val = val;
    d->arg = (uint8_t)(bogus | (partial << 1));
}

static void dev_rsp(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o)
{
    unsigned op = in->op, go = in->arg;
    if (in->id != l->cqid) {
        fail(o, "H2D Rsp with a CQID that is not outstanding");
        return;
    }
    switch (l->st) {
    case DS_IS_AD:
        if (op == GO && go <= GO_M) {
            l->go = (uint8_t)go;
            l->st = DS_IS_D;
            return;
        }
        break;
    case DS_IS_A:
        if (op == GO && go <= GO_M) {
            dev_finish(l, go_to_state(go), o);
            return;
        }
        break;
    case DS_IM_AD: case DS_SM_AD:
        if (op == GO && (go == GO_E || go == GO_M)) {
            l->go = (uint8_t)go;
            l->st = DS_IM_D;
            return;
        }
        break;
    case DS_IM_A: case DS_SM_A:
        if (op == GO && (go == GO_E || go == GO_M)) {
            dev_own_complete(cfg, l, in, o);
            return;
        }
        break;
    case DS_IF_A:
        if (op == GO && go == GO_I) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_SI_AC:
        if (op == GO && go == GO_I) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_MI_A:
        if (op == GO_WritePull) {
            send_pull_data(o, in, l->val, 0, 0);
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_II_A:
        if (op == GO_WritePull) {   /* stale writeback: the data went to a snoop already */
            send_pull_data(o, in, l->val, cfg->inject == INJ_SKIP_BOGUS ? 0 : 1, 0);
            dev_finish(l, DS_I, o);
            return;
        }
        if (op == GO_WritePull_Drop) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_SI_A:
        if (op == GO_WritePull) {
            send_pull_data(o, in, l->val, 0, 0);
            dev_finish(l, DS_I, o);
            return;
        }
        if (op == GO_WritePull_Drop) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_IW_A:
        if (op == GO_WritePull) {
            send_pull_data(o, in, l->wval, 0, 0);
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_IV_P:
        if (op == WritePull) {
            send_pull_data(o, in, l->wval, 0, 0);
            l->st = DS_IV_A;
            return;
        }
        break;
    case DS_IV_A:
        if (op == GO && go == GO_I) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    case DS_WO_P:
        if (op == Fast_GO_WritePull) {
            send_pull_data(o, in, l->wval, 0, l->acc == OP_WOWRINV);
            l->st = DS_WO_E;
            return;
        }
        break;
    case DS_WO_E:
        if (op == ExtCmp) {
            dev_finish(l, DS_I, o);
            return;
        }
        break;
    default: break;
    }
    fail(o, "H2D Rsp not expected in this state");
}

static void dev_data(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o)
{
    if (in->id != l->cqid) {
        fail(o, "H2D Data with a CQID that is not outstanding");
        return;
    }
    switch (l->st) {
    case DS_IS_AD:   /* data before GO: the load may use it now; GO sets the state */
        l->val = in->val;
        event(o, EV_LOAD, in->agent, in->line, in->val, 0);
        l->st = DS_IS_A;
        return;
    case DS_IS_D:
        l->val = in->val;
        event(o, EV_LOAD, in->agent, in->line, in->val, 0);
        dev_finish(l, go_to_state(l->go), o);
        return;
    case DS_IM_AD: case DS_SM_AD:
        l->val = in->val;
        l->st = DS_IM_A;
        return;
    case DS_IM_D:
        l->val = in->val;
        dev_own_complete(cfg, l, in, o);
        return;
    case DS_IC_D:
        event(o, EV_RDCURR, in->agent, in->line, in->val, in->chk);
        dev_finish(l, DS_I, o);
        return;
    default: fail(o, "H2D Data not expected in this state"); return;
    }
}

void cxl_dev_recv(const cxl_cfg *cfg, cxl_dline *l, const cxl_msg *in, cxl_out *o)
{
    out_init(o);
    unsigned base = (unsigned)l->st * CXL_DEV_IN + CXL_N_CORE_OP;
    switch (in->ch) {
    case CXL_H2D_REQ:
        o->tr = (uint16_t)(base + in->op);
        dev_snoop(cfg, l, in, o);
        break;
    case CXL_H2D_RSP:
        o->tr = (uint16_t)(base + CXL_N_H2D_REQ + in->op * CXL_N_GO + (in->op == GO ? in->arg : 0));
        dev_rsp(cfg, l, in, o);
        break;
    case CXL_H2D_DATA:
        o->tr = (uint16_t)(base + CXL_N_H2D_REQ + CXL_N_H2D_RSP * CXL_N_GO);
        dev_data(cfg, l, in, o);
        break;
    default: fail(o, "device received a message of a D2H channel"); break;
    }
}

void cxl_dev_flush_start(unsigned agent, uint16_t cqid, cxl_out *o)
{
    out_init(o);
    o->tr = (uint16_t)(DS_I * CXL_DEV_IN + OP_CACHE_FLUSH);
    emit(o, CXL_D2H_REQ, CacheFlushed, agent, 0, cqid);
}

bool cxl_dev_flush_recv(uint16_t flush_cqid, const cxl_msg *in, cxl_out *o)
{
    out_init(o);
    if (in->ch != CXL_H2D_RSP || in->op != GO || in->id != flush_cqid) return false;
    o->tr = (uint16_t)(DS_IF_A * CXL_DEV_IN + CXL_N_CORE_OP + CXL_N_H2D_REQ + GO * CXL_N_GO + GO_I);
    if (in->arg != GO_I) fail(o, "CacheFlushed answered with a GO other than GO-I");
    o->done = o->freed = true;
    return true;
}

/* --------------------------------------------------------------- home agent */
void cxl_ha_init_line(cxl_hline *h, uint8_t mem_val)
{
    memset(h, 0, sizeof *h);
    h->owner = CXL_NO_AGENT;
    h->mem = mem_val;
    h->phase = HP_IDLE;
    h->op = CXL_N_D2H_REQ;
}

static void ha_drop(cxl_hline *h, unsigned a)
{
    h->sharers &= (uint16_t)~(1u << a);
    if (h->owner == a) h->owner = CXL_NO_AGENT;
}

static void ha_finish(cxl_hline *h, cxl_out *o)
{
    h->phase = HP_IDLE;
    o->done = true;
}

static void ha_go(cxl_hline *h, cxl_out *o, unsigned op, unsigned go)
{
    cxl_msg *m = emit(o, CXL_H2D_RSP, op, h->req, 0, h->cqid);
    m->arg = (uint8_t)go;
    m->id2 = h->uqid;
}

static void ha_data(cxl_hline *h, cxl_out *o, uint8_t val, uint8_t chk)
{
    cxl_msg *m = emit(o, CXL_H2D_DATA, 0, h->req, 0, h->cqid);
    m->val = val;
    m->chk = chk;
}

/* Grant a read once the data is known. */
static void ha_grant_read(const cxl_cfg *cfg, cxl_hline *h, cxl_out *o, uint8_t val, uint8_t chk, bool dirty_fwd)
{
    unsigned a = h->req;
    uint16_t bit = (uint16_t)(1u << a);
    switch (h->op) {
    case RdShared:
    case RdAny: {
        bool alone = (h->sharers & ~bit) == 0 && h->owner == CXL_NO_AGENT;
        bool give_e = (h->op == RdAny && alone) || cfg->inject == INJ_E_WITH_SHARERS;
        ha_data(h, o, val, chk);
        h->sharers |= bit;
        if (give_e) {
            h->owner = (uint8_t)a;
            ha_go(h, o, GO, GO_E);
        } else {
            ha_go(h, o, GO, GO_S);
        }
        ha_finish(h, o);
        return;
    }
    case RdOwn:
        ha_data(h, o, val, chk);
        h->sharers = bit;
        h->owner = (uint8_t)a;
        ha_go(h, o, GO, dirty_fwd ? GO_M : GO_E);   /* dirty ownership passes on with the data */
        ha_finish(h, o);
        return;
    case RdCurr:
        ha_data(h, o, val, chk);
        ha_finish(h, o);
        return;
    default: fail(o, "read grant for a non-read"); return;
    }
}

static void ha_mem_read(cxl_hline *h, cxl_out *o)
{
    cxl_msg *m = emit(o, CXL_MEM_RD, 0, h->req, 0, h->uqid);
    m->val = h->mem;
    h->phase = HP_MEM;
}

/* The snoop phase is over (or was not needed): serve the request. */
static void ha_proceed(const cxl_cfg *cfg, cxl_hline *h, cxl_out *o)
{
    bool fwd = h->fwd_valid, dirty = fwd && h->fwd_dirty;
    switch (h->op) {
    case RdShared:
    case RdAny:
        if (fwd) {
            if (dirty) h->mem = h->fwd_val;   /* the previous owner keeps S (or I): memory takes the dirty data */
            ha_grant_read(cfg, h, o, h->fwd_val, h->fwd_chk, false);
        } else {
            ha_mem_read(h, o);
        }
        return;
    case RdOwn:
        if (fwd) ha_grant_read(cfg, h, o, h->fwd_val, h->fwd_chk, dirty);
        else ha_mem_read(h, o);
        return;
    case RdCurr:
        if (fwd) ha_grant_read(cfg, h, o, h->fwd_val, h->fwd_chk, false);
        else ha_mem_read(h, o);
        return;
    case RdOwnNoData:
        if (dirty) h->mem = h->fwd_val;
        h->sharers = (uint16_t)(1u << h->req);
        h->owner = h->req;
        ha_go(h, o, GO, GO_E);
        ha_finish(h, o);
        return;
    case CLFlush:
        if (dirty) h->mem = h->fwd_val;
        ha_go(h, o, GO, GO_I);
        ha_finish(h, o);
        return;
    case ItoMWr:
    case WrCur:
        if (dirty) h->mem = h->fwd_val;
        ha_go(h, o, GO_WritePull, 0);
        h->phase = HP_PULL;
        return;
    case WrInv:
        if (dirty) h->mem = h->fwd_val;
        ha_go(h, o, WritePull, 0);
        h->phase = HP_PULL;
        return;
    case WOWrInv:
    case WOWrInvF:
        if (dirty) h->mem = h->fwd_val;
        ha_go(h, o, Fast_GO_WritePull, 0);
        h->phase = HP_PULL;
        return;
    default: fail(o, "proceed with an unknown request"); return;
    }
}

static void ha_snoop(cxl_hline *h, cxl_out *o, unsigned target, unsigned snp)
{
    emit(o, CXL_H2D_REQ, snp, target, 0, h->uqid);
    h->snp_pending |= (uint16_t)(1u << target);
}

static void ha_check_snoops_done(const cxl_cfg *cfg, cxl_hline *h, cxl_out *o)
{
    if (h->snp_pending || (h->data_expect & ~h->data_got)) return;
    if (h->data_got & ~h->data_expect) {
        fail(o, "implicit-writeback data without a Fwd response");
        return;
    }
    if (h->phase == HP_SNP) ha_proceed(cfg, h, o);
}

static bool rsp_legal(unsigned snp, unsigned rsp)
{
    switch (snp) {
    case SnpData: return rsp == RspIHitI || rsp == RspIHitSE || rsp == RspSHitSE || rsp == RspSFwdM || rsp == RspIFwdM;
    case SnpInv: return rsp == RspIHitI || rsp == RspIHitSE || rsp == RspIFwdM;
    case SnpCur: return rsp == RspIHitI || rsp == RspVHitV || rsp == RspVFwdV;
    default: return false;
    }
}

static unsigned snoop_for(unsigned op)
{
    switch (op) {
    case RdShared: case RdAny: return SnpData;
    case RdCurr: return SnpCur;
    default: return SnpInv;
    }
}

static void ha_request(const cxl_cfg *cfg, cxl_hline *h, const cxl_msg *in, uint16_t new_uqid, cxl_out *o)
{
    unsigned a = in->agent;
    uint16_t bit = (uint16_t)(1u << a);
    h->op = in->op;
    h->req = (uint8_t)a;
    h->cqid = in->id;
    h->uqid = new_uqid;
    h->fwd_valid = h->fwd_dirty = 0;
    h->fwd_chk = h->mem_chk = h->mem_chk_valid = 0;
    h->data_expect = h->data_got = 0;
    o->started = true;
    switch (in->op) {
    case CleanEvictNoData:
        ha_drop(h, a);
        ha_go(h, o, GO, GO_I);
        ha_finish(h, o);
        return;
    case CleanEvict:
        if (h->owner == a) {   /* a clean exclusive copy: take the data (e.g. to fill a host cache) */
            ha_go(h, o, GO_WritePull, 0);
            h->phase = HP_PULL;
        } else {
            ha_drop(h, a);
            ha_go(h, o, GO_WritePull_Drop, 0);
            ha_finish(h, o);
        }
        return;
    case DirtyEvict:
        ha_go(h, o, GO_WritePull, 0);
        h->phase = HP_PULL;
        return;
    case CacheFlushed: fail(o, "CacheFlushed is device level (cxl_ha_cache_flushed), not a line request"); return;
    default: break;
    }
    unsigned snp = snoop_for(in->op);
    uint16_t targets;
    if (snp == SnpInv) targets = (uint16_t)(h->sharers & ~bit);
    else targets = 0;
    if (h->owner != CXL_NO_AGENT && h->owner != a) targets |= (uint16_t)(1u << h->owner);
    h->phase = HP_SNP;
    h->snp_pending = 0;
    for (unsigned t = 0; t < CXL_MAX_AGENTS; t++)
        if (targets & (1u << t)) ha_snoop(h, o, t, snp);
    if (!h->snp_pending) {
        ha_proceed(cfg, h, o);
    } else if (cfg->inject == INJ_GO_DURING_SNOOP) {
        ha_proceed(cfg, h, o);   /* seeded bug: serve the request without waiting for the snoops */
    }
}

static void ha_pull_data(const cxl_cfg *cfg, cxl_hline *h, const cxl_msg *in, cxl_out *o)
{
    unsigned a = in->agent;
    bool bogus = in->arg & 1, partial = (in->arg >> 1) & 1;
    switch (h->op) {
    case DirtyEvict:
        if (!bogus) h->mem = in->val;   /* the HA trusts Bogus=0: a stale writeback must set it */
        ha_drop(h, a);
        ha_finish(h, o);
        return;
    case CleanEvict:
        if (!bogus) event(o, EV_CLEAN_DATA, a, in->line, in->val, h->mem);
        ha_drop(h, a);
        ha_finish(h, o);
        return;
    case ItoMWr: case WrCur: case WOWrInvF:
        h->mem = in->val;
        event(o, EV_WRITE, a, in->line, h->mem, 0);
        if (h->op == WOWrInvF) ha_go(h, o, ExtCmp, 0);
        ha_finish(h, o);
        return;
    case WOWrInv:   /* partial write: the bytes merge into the line (modelled as an add) */
        h->mem = partial ? (uint8_t)((h->mem + in->val) % cfg->values) : in->val;
        if (partial) event(o, EV_MERGE, a, in->line, h->mem, in->val);
        else event(o, EV_WRITE, a, in->line, h->mem, 0);
        ha_go(h, o, ExtCmp, 0);
        ha_finish(h, o);
        return;
    case WrInv:
        h->mem = in->val;
        event(o, EV_WRITE, a, in->line, h->mem, 0);
        ha_go(h, o, GO, GO_I);
        ha_finish(h, o);
        return;
    default: fail(o, "write data for a request that pulls none"); return;
    }
}

static void ha_recv(const cxl_cfg *cfg, cxl_hline *h, const cxl_msg *in, uint16_t new_uqid, cxl_out *o)
{
    out_init(o);
    unsigned cur = h->phase == HP_IDLE ? CXL_N_D2H_REQ : h->op;
    unsigned input;
    switch (in->ch) {
    case CXL_D2H_REQ: input = in->op; break;
    case CXL_D2H_RSP: input = CXL_N_D2H_REQ + in->op; break;
    case CXL_D2H_DATA: input = CXL_N_D2H_REQ + CXL_N_D2H_RSP; break;
    default: input = CXL_N_D2H_REQ + CXL_N_D2H_RSP + 1; break;
    }
    o->tr = (uint16_t)(CXL_TR_HA_BASE + (cur * 4 + h->phase) * CXL_HA_IN + input);
    unsigned a = in->agent;
    uint16_t bit = (uint16_t)(1u << a);
    switch (in->ch) {
    case CXL_D2H_REQ:
        /* per-line serialisation; leftover snoop responses (only with a seeded bug) also hold the line */
        if (h->phase != HP_IDLE || h->snp_pending || (h->data_expect & ~h->data_got)) {
            o->status = ST_BUSY;
            return;
        }
        ha_request(cfg, h, in, new_uqid, o);
        return;
    case CXL_D2H_RSP: {
        if (!(h->snp_pending & bit) || in->id != h->uqid) {
            fail(o, "snoop response with no snoop outstanding");
            return;
        }
        unsigned snp = snoop_for(h->op);
        if (!rsp_legal(snp, in->op)) {
            fail(o, "snoop response not legal for the snoop sent");
            return;
        }
        h->snp_pending &= (uint16_t)~bit;
        /* checker metadata: a clean answer means memory was current when the snoop was answered */
        if (in->op == RspVHitV) {
            h->mem_chk = in->chk;
            h->mem_chk_valid = 1;
        }
        switch (in->op) {
        case RspIHitI: case RspIHitSE: ha_drop(h, a); break;
        case RspSHitSE: if (h->owner == a) h->owner = CXL_NO_AGENT; break;
        case RspVHitV: break;
        case RspSFwdM:
            if (h->owner == a) h->owner = CXL_NO_AGENT;
            h->data_expect |= bit;
            break;
        case RspIFwdM: ha_drop(h, a); h->data_expect |= bit; break;
        case RspVFwdV: h->data_expect |= bit; break;
        default: break;
        }
        ha_check_snoops_done(cfg, h, o);
        return;
    }
    case CXL_D2H_DATA:
        if (h->phase == HP_PULL && in->id == h->uqid && a == h->req) {
            ha_pull_data(cfg, h, in, o);
            return;
        }
        if (in->id == h->uqid && ((h->snp_pending | h->data_expect) & bit) && !(h->data_got & bit)) {
            h->data_got |= bit;
            h->fwd_valid = 1;
            h->fwd_dirty = 1;
            h->fwd_val = in->val;
            h->fwd_chk = in->chk;
            ha_check_snoops_done(cfg, h, o);
            return;
        }
        fail(o, "D2H Data that no tracker expects");
        return;
    case CXL_MEM_DATA:
        if (h->phase != HP_MEM) {
            fail(o, "memory data with no read outstanding");
            return;
        }
        ha_grant_read(cfg, h, o, in->val, h->mem_chk_valid ? h->mem_chk : in->chk, false);
        return;
    default: fail(o, "home agent received a message of an H2D channel"); return;
    }
}

void cxl_ha_recv(const cxl_cfg *cfg, cxl_hline *h, const cxl_msg *in, uint16_t new_uqid, cxl_out *o)
{
    ha_recv(cfg, h, in, new_uqid, o);
    for (unsigned i = 0; i < o->n; i++) o->m[i].line = in->line;
    for (unsigned i = 0; i < o->nev; i++) o->ev[i].line = in->line;
}

void cxl_ha_cache_flushed(const cxl_hline *lines, uint32_t n_lines, const cxl_msg *in, cxl_out *o)
{
    out_init(o);
    o->tr = (uint16_t)(CXL_TR_HA_BASE + (CXL_N_D2H_REQ * 4 + HP_IDLE) * CXL_HA_IN + CacheFlushed);
    uint16_t bit = (uint16_t)(1u << in->agent);
    for (uint32_t l = 0; l < n_lines; l++) {
        const cxl_hline *h = &lines[l];
        if (h->phase == HP_IDLE && ((h->sharers & bit) || h->owner == in->agent)) {
            fail(o, "CacheFlushed while the snoop filter tracks the device on an idle line");
            return;
        }
    }
    cxl_msg *m = emit(o, CXL_H2D_RSP, GO, in->agent, 0, in->id);
    m->arg = GO_I;
    o->done = true;
}

/* ------------------------------------------------------ transition table */
static uint8_t tr_defined[CXL_TR_TOTAL];
static unsigned tr_defined_n;
static bool tr_probed;

static void mark(const cxl_out *o)
{
    if (o->status == ST_ERR || o->status == ST_BUSY || o->tr >= CXL_TR_TOTAL) return;
    if (!tr_defined[o->tr]) {
        tr_defined[o->tr] = 1;
        tr_defined_n++;
    }
}

/* Bounded search over the home agent alone: agent 0 requests, agent 1 is the
 * other cache; all inputs that the FSM accepts count as defined. */
static void ha_probe(const cxl_cfg *cfg, const cxl_hline *h, unsigned depth)
{
    if (!depth) return;
    cxl_msg in;
    cxl_out o;
    cxl_hline n;
    for (unsigned kind = 0; kind < 4; kind++) {
        unsigned nops = kind == 0 ? CXL_N_D2H_REQ : kind == 1 ? CXL_N_D2H_RSP : kind == 2 ? 4 : 1;
        for (unsigned op = 0; op < nops; op++)
            for (unsigned a = 0; a < 2; a++) {
                memset(&in, 0, sizeof in);
                in.agent = (uint8_t)a;
                in.id = h->uqid;
                if (kind == 0) {
                    if (a == 1) continue;
                    in.ch = CXL_D2H_REQ;
                    in.op = (uint8_t)op;
                    in.id = 7;
                } else if (kind == 1) {
                    if (a == 0) continue;
                    in.ch = CXL_D2H_RSP;
                    in.op = (uint8_t)op;
                } else if (kind == 2) {
                    in.ch = CXL_D2H_DATA;
                    in.arg = (uint8_t)op;
                } else {
                    if (a == 1) continue;
                    in.ch = CXL_MEM_DATA;
                }
                n = *h;
                cxl_ha_recv(cfg, &n, &in, 3, &o);
                mark(&o);
                if (o.status == ST_OK) ha_probe(cfg, &n, depth - 1);
            }
    }
}

const uint8_t *cxl_transitions_defined(unsigned *n_defined)
{
    if (!tr_probed) {
        cxl_cfg cfg = { .values = 2, .inject = INJ_NONE };
        cxl_out o;
        for (unsigned st = 0; st < CXL_N_DSTATE; st++)
            for (unsigned acc = 0; acc < CXL_N_CORE_OP; acc++) {
                cxl_dline base = { .st = (uint8_t)st, .acc = (uint8_t)acc, .cqid = 5 };
                for (unsigned op = 0; op < CXL_N_CORE_OP; op++) {
                    cxl_dline l = base;
                    cxl_dev_core(&cfg, &l, 0, 0, op, 1, 5, &o);
                    mark(&o);
                }
                cxl_msg in = { .agent = 0, .id = 5, .id2 = 9 };
                for (unsigned s = 0; s < CXL_N_H2D_REQ; s++) {
                    cxl_dline l = base;
                    in.ch = CXL_H2D_REQ;
                    in.op = (uint8_t)s;
                    cxl_dev_recv(&cfg, &l, &in, &o);
                    mark(&o);
                }
                for (unsigned r = 0; r < CXL_N_H2D_RSP; r++)
                    for (unsigned g = 0; g < (r == GO ? CXL_N_GO : 1u); g++) {
                        cxl_dline l = base;
                        in.ch = CXL_H2D_RSP;
                        in.op = (uint8_t)r;
                        in.arg = (uint8_t)g;
                        cxl_dev_recv(&cfg, &l, &in, &o);
                        mark(&o);
                    }
                cxl_dline l = base;
                in.ch = CXL_H2D_DATA;
                in.op = 0;
                in.arg = 0;
                cxl_dev_recv(&cfg, &l, &in, &o);
                mark(&o);
            }
        {   /* the device-level CacheFlushed handshake */
            cxl_dev_flush_start(0, 5, &o);
            mark(&o);
            cxl_msg goi = { .ch = CXL_H2D_RSP, .op = GO, .arg = GO_I, .id = 5 };
            cxl_dev_flush_recv(5, &goi, &o);
            mark(&o);
            cxl_hline idle;
            cxl_ha_init_line(&idle, 0);
            cxl_msg cf = { .ch = CXL_D2H_REQ, .op = CacheFlushed, .id = 5 };
            cxl_ha_cache_flushed(&idle, 1, &cf, &o);
            mark(&o);
        }
        /* home agent: from idle with three directory situations */
        for (unsigned dir = 0; dir < 3; dir++) {
            cxl_hline h;
            cxl_ha_init_line(&h, 0);
            if (dir == 1) h.sharers = 2;
            if (dir == 2) {
                h.sharers = 2;
                h.owner = 1;
            }
            ha_probe(&cfg, &h, 4);
        }
        tr_probed = true;
    }
    if (n_defined) *n_defined = tr_defined_n;
    return tr_defined;
}
