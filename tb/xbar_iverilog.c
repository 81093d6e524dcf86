/* xbar_iverilog: the same RTL under Icarus Verilog (iverilog -g2012) from a
 * file-driven stimulus, compared line by line with the Verilated model.
 *
 * The Verilated switch runs closed-loop (random traffic, credits, multicast)
 * and every cycle's inputs are written to stim.txt and its outputs to
 * verilator.txt. rtl/tb/xbar_file_tb.sv replays stim.txt under vvp and writes
 * icarus.txt in the same format; the two must be identical. Files go to
 * <out>/waves/xbar_iverilog/ (kept for inspection). Exit 1 on any difference. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "sim/sim.h"
#include "xbar_rtl.h"
#include "xbar_stim.h"

static const sim_param_def iv_params[] = {
    SIM_PARAM_INT("ports", "8", "", 2, 64, "switch ports (a Verilated size)"),
    SIM_PARAM_INT("iters", "2", "", 1, 4, "iSLIP iterations"),
    SIM_PARAM_INT("latency", "1", "cycles", 1, 64, "pipeline latency (a Verilated value)"),
    SIM_PARAM_INT("depth", "4", "flits", 1, 64, "credits per VOQ"),
    SIM_PARAM_BOOL("fanout_read", "1", "multicast fan-out read (a Verilated variant must have it)"),
    SIM_PARAM_DOUBLE("load", "0.8", "flits/cycle", 0, 1, "offered load per input"),
    SIM_PARAM_DOUBLE("mcast", "0.2", "", 0, 1, "fraction of multicast flits"),
    SIM_PARAM_INT("cycles", "3000", "cycles", 1, 1e7, "cycles to compare"),
    SIM_PARAM_END,
};

/* Verilog %h of a bit vector given as bits[0..w-1] (LSB first): ceil(w/4) digits. */
static void put_hex(FILE *f, const uint8_t *bits, unsigned w)
{
    unsigned digits = (w + 3) / 4;
    for (unsigned d = digits; d-- > 0;) {
        unsigned v = 0;
        for (unsigned b = 0; b < 4; b++) {
            unsigned i = d * 4 + b;
            if (i < w && bits[i]) v |= 1u << b;
        }
        fputc("0123456789abcdef"[v], f);
    }
}

typedef struct bitbuf { uint8_t *b; unsigned w; } bitbuf;
static void bb_set(bitbuf *bb, unsigned lsb, unsigned w, uint64_t v)
{
    for (unsigned i = 0; i < w; i++) bb->b[lsb + i] = (v >> i) & 1;
}

static unsigned clog2u(unsigned n)
{
    unsigned b = 0;
    while ((1u << b) < n) b++;
    return b;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_cmd(const char *cmd, const char *log)
{
    char full[4096];
    snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, log);
    int st = system(full);
    return (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
}

static void iv_run(sim_test_ctx *cx)
{
    const sim_params *p = cx->params;
    const unsigned n = (unsigned)sim_param_int(p, "ports"), iw = clog2u(n);
    const uint64_t cycles = (uint64_t)sim_param_int(p, "cycles");
    xbar_rtl_cfg rc = { .ports = n, .iters = (unsigned)sim_param_int(p, "iters"), .latency = (unsigned)sim_param_int(p, "latency"),
                        .depth = (unsigned)sim_param_int(p, "depth"), .fanout_read = sim_param_bool(p, "fanout_read") };
    const double load = sim_param_double(p, "load"), mcast = sim_param_double(p, "mcast");
    sim_test_configured(cx);
    char why[256];
    xbar_rtl *x = xbar_rtl_new(&rc, why, sizeof why);
    if (!x) sim_input_error("xbar_iverilog: %s", why);
    const xbar_rtl_variant *v = xbar_rtl_variant_of(x);

    char dir[1024], stim_path[1100], ver_path[1100], ivl_path[1100], vvp_path[1100], log_path[1100], cmd[4096];
    snprintf(dir, sizeof dir, "%s/waves/xbar_iverilog", cx->out_dir ? cx->out_dir : ".");
    snprintf(stim_path, sizeof stim_path, "%s/stim.txt", dir);
    if (sim_mkdir_parents(stim_path) != 0) sim_fatal("xbar_iverilog: cannot create %s", dir);
    snprintf(ver_path, sizeof ver_path, "%s/verilator.txt", dir);
    snprintf(ivl_path, sizeof ivl_path, "%s/icarus.txt", dir);
    snprintf(vvp_path, sizeof vvp_path, "%s/xbar.vvp", dir);
    snprintf(log_path, sizeof log_path, "%s/icarus.log", dir);

    /* 1. Verilator, closed loop: record inputs and outputs. */
    if (cx->trace) {
        xbar_rtl_trace_open(x, cx->trace, "rtl", NULL, 0, 1000);
        sim_trace_freeze(cx->trace);   /* no sim_run() here: values go out at the harness's times */
    }
    FILE *fs = fopen(stim_path, "w"), *fv = fopen(ver_path, "w");
    if (!fs || !fv) sim_fatal("xbar_iverilog: cannot write %s", dir);
    xbar_stim st;
    xbar_stim_cfg sc = { .ports = n, .depth = rc.depth, .load = load, .pattern = XBAR_PAT_UNIFORM,
                         .mcast_frac = mcast, .mcast_fanout = 3, .seed = cx->seed };
    xbar_stim_init(&st, &sc);
    bitbuf bv = { calloc(n, 1), n }, bd = { calloc((size_t)n * n, 1), n * n }, bdata = { calloc((size_t)n * 64, 1), n * 64 },
           bsrc = { calloc((size_t)n * iw, 1), n * iw };
    if (!bv.b || !bd.b || !bdata.b || !bsrc.b) sim_fatal("out of memory");
    xbar_in in;
    xbar_out out;
    uint64_t delivered = 0;
    /* Both simulators run the same RTL, so identical_output cannot see a
     * broken switch; the scoreboard checks the Verilated run against what a
     * switch must do with the stimulus (every copy to its destinations, once,
     * in order per flow, from its source). */
    xbar_score score;
    xbar_score_init(&score, n);
    double t_v0 = wall_s();
    for (uint64_t t = 0; t < cycles; t++) {
        xbar_stim_inputs(&st, &in);
        for (unsigned i = 0; i < n; i++) {
            bool on = (in.valid >> i) & 1;
            bb_set(&bv, i, 1, on);
            bb_set(&bd, i * n, n, on ? in.in[i].dest_mask : 0);
            bb_set(&bdata, i * 64, 64, on ? in.in[i].data : 0);
        }
        put_hex(fs, bv.b, bv.w);
        fputc(' ', fs);
        put_hex(fs, bd.b, bd.w);
        fputc(' ', fs);
        put_hex(fs, bdata.b, bdata.w);
        fputc('\n', fs);
        xbar_score_presented(&score, &in);
        xbar_rtl_step(x, &in, &out);
        xbar_score_outputs(&score, &out, t);
        xbar_stim_credits(&st, &out);
        delivered += (uint64_t)__builtin_popcountll(out.valid);
        /* outputs in the testbench's format: cycle out_valid out_data out_src credit credit_queue err */
        fprintf(fv, "%" PRIu64 " ", t);
        for (unsigned j = 0; j < n; j++) bb_set(&bv, j, 1, (out.valid >> j) & 1);
        put_hex(fv, bv.b, bv.w);
        fputc(' ', fv);
        for (unsigned j = 0; j < n; j++) bb_set(&bdata, j * 64, 64, out.out_data[j]);
        put_hex(fv, bdata.b, bdata.w);
        fputc(' ', fv);
        for (unsigned j = 0; j < n; j++) bb_set(&bsrc, j * iw, iw, out.out_src[j]);
        put_hex(fv, bsrc.b, bsrc.w);
        fputc(' ', fv);
        for (unsigned j = 0; j < n; j++) bb_set(&bv, j, 1, (out.credit >> j) & 1);
        put_hex(fv, bv.b, bv.w);
        fputc(' ', fv);
        for (unsigned j = 0; j < n; j++) bb_set(&bsrc, j * iw, iw, out.credit_queue[j]);
        put_hex(fv, bsrc.b, bsrc.w);
        fputc(' ', fv);
        for (unsigned i = 0; i < n; i++) bb_set(&bd, i * n, n, out.credit_extra[i]);
        put_hex(fv, bd.b, bd.w);
        fprintf(fv, " %d\n", xbar_rtl_overflow(x) ? 1 : 0);
    }
    double verilator_s = wall_s() - t_v0;
    fclose(fs);
    fclose(fv);
    xbar_stim_free(&st);
    xbar_rtl_free(x);

    /* 2. Icarus: compile the same sources with the same parameters, replay. */
    const char *src = xbar_rtl_source_dir();
    snprintf(cmd, sizeof cmd,
             "iverilog -g2012 -Wall -o '%s' -s xbar_file_tb -Pxbar_file_tb.NPORTS=%u -Pxbar_file_tb.DEPTH=%u "
             "-Pxbar_file_tb.ITERS=%u -Pxbar_file_tb.LATENCY=%u -Pxbar_file_tb.FLIT_W=%u -Pxbar_file_tb.FANOUT_READ=%u "
             "'%s/tb/xbar_file_tb.sv' '%s/xbar_top.sv' '%s/xbar_input_buf.sv' '%s/xbar_islip_alloc.sv' '%s/xbar_fanout_join.sv' "
             "'%s/xbar_rr_arbiter.sv' '%s/xbar_onehot_index.sv' '%s/xbar_bit_transpose.sv' '%s/xbar_datapath.sv'",
             vvp_path, v->ports, v->depth, v->iters_max, v->latency, v->flit_bits, v->fanout_read, src, src, src, src, src, src, src,
             src, src);
    int rc_comp = run_cmd(cmd, log_path);
    int rc_run = -1;
    double t_i0 = wall_s();
    if (rc_comp == 0) {
        snprintf(cmd, sizeof cmd, "vvp -n '%s' +stim='%s' +out='%s' +iters=%u", vvp_path, stim_path, ivl_path, rc.iters);
        char run_log[1100];
        snprintf(run_log, sizeof run_log, "%s/vvp.log", dir);
        rc_run = run_cmd(cmd, run_log);
    }
    double icarus_s = wall_s() - t_i0;
    sim_check(cx->report, "iverilog_builds", rc_comp == 0, "iverilog exit %d (log %s)", rc_comp, log_path);
    sim_check(cx->report, "vvp_runs", rc_run == 0, "vvp exit %d", rc_run);

    /* 3. Compare line by line. */
    uint64_t lines = 0, differ = 0;
    char first[600] = "";
    FILE *a = fopen(ver_path, "r"), *b = rc_run == 0 ? fopen(ivl_path, "r") : NULL;
    if (a && b) {
        size_t cap = (size_t)n * 80 + 256;
        char *la = malloc(cap), *lb = malloc(cap);
        if (!la || !lb) sim_fatal("out of memory");
        for (;;) {
            char *ra = fgets(la, (int)cap, a), *rb = fgets(lb, (int)cap, b);
            if (!ra && !rb) break;
            if (!ra || !rb || strcmp(la, lb)) {
                if (!differ)
                    snprintf(first, sizeof first, "line %" PRIu64 ": verilator \"%.200s\" icarus \"%.200s\"", lines + 1,
                             ra ? strtok(la, "\n") : "(end)", rb ? strtok(lb, "\n") : "(end)");
                differ++;
            }
            lines++;
        }
        free(la);
        free(lb);
    }
    if (a) fclose(a);
    if (b) fclose(b);
    free(bv.b);
    free(bd.b);
    free(bdata.b);
    free(bsrc.b);
    sim_report_metric(cx->report, "cycles_compared", (double)lines);
    sim_report_metric(cx->report, "mismatches", (double)differ);
    sim_report_metric(cx->report, "copies_delivered", (double)delivered);
    sim_report_metric(cx->report, "verilator_s", verilator_s);
    sim_report_metric(cx->report, "icarus_s", icarus_s);
    sim_check(cx->report, "identical_output", lines == cycles && differ == 0, "%" PRIu64 " of %" PRIu64 " cycles differ%s%s", differ,
              lines, differ ? "; first " : "", first);
    sim_check(cx->report, "traffic_flowed", delivered > 0, "%" PRIu64 " flits delivered", delivered);
    sim_check(cx->report, "scoreboard_clean",
              score.duplicated == 0 && score.out_of_order == 0 && score.unknown == 0 && score.wrong_src == 0 &&
                  score.delivered == delivered,
              "%" PRIu64 " copies delivered of %" PRIu64 " presented (rest in flight): %" PRIu64 " duplicated, %" PRIu64
              " out of order, %" PRIu64 " unknown, %" PRIu64 " from a wrong source",
              score.delivered, score.expected_copies, score.duplicated, score.out_of_order, score.unknown, score.wrong_src);
    xbar_score_free(&score);
}

SIM_TEST(xbar_iverilog, "the crossbar RTL under Icarus (iverilog -g2012) vs Verilator: identical cycle-by-cycle outputs",
         iv_params, "cycles=500", iv_run)
