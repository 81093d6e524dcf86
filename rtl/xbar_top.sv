`timescale 1ns/1ps
// Input-queued crossbar switch: NPORTS x NPORTS, per-input virtual output
// queues of DEPTH flits with a credit pulse per freed slot, an iSLIP
// allocator with up to ITERS iterations, multicast by destination mask
// (replicated into the VOQs at the input; FANOUT_READ=1: each copy leaves as
// its output frees, fan-out splitting), and a fixed pipeline latency of
// LATENCY cycles from allocation to the output. One clock, synchronous
// active-low reset. The cycle rules are docs/crossbar-cycle-rules.md; the
// C golden model is models/nvswitch. Ports and timing: docs/rtl.md.
//
// Packed buses are flat, port p at [p*W +: W]:
//   in_dest_i[i*NPORTS + j]: the flit at input i goes to output j.
//   dbg_req_o[i*NPORTS + j]: VOQ[i][j] is not empty (the request matrix).
// A flit presented in cycle t leaves, uncontended, in cycle t + 1 + LATENCY.
module xbar_top #(
    parameter int NPORTS  = 4,
    parameter int FLIT_W  = 64,
    parameter int DEPTH   = 8,   // flits per VOQ, a power of two >= 2 (the upstream may use fewer credits)
    parameter int ITERS   = 4,   // iSLIP iterations built; cfg_iters_i picks 1..ITERS
    parameter int LATENCY = 1,   // cycles from allocation to the output (>= 1)
    parameter int FANOUT_READ = 0  // multicast fan-out read (docs/crossbar-cycle-rules.md)
) (
    input  logic                                  clk_i,
    input  logic                                  rst_ni,
    input  logic [$clog2(ITERS+1)-1:0]            cfg_iters_i,   // sampled while rst_ni is low
    // Inputs: one flit per port per cycle, sent only against a credit.
    input  logic [NPORTS-1:0]                     in_valid_i,
    input  logic [NPORTS*FLIT_W-1:0]              in_data_i,
    input  logic [NPORTS*NPORTS-1:0]              in_dest_i,
    // Outputs: not back-pressured.
    output logic [NPORTS-1:0]                     out_valid_o,
    output logic [NPORTS*FLIT_W-1:0]              out_data_o,
    output logic [NPORTS*$clog2(NPORTS)-1:0]      out_src_o,
    // Credits: bit i pulses for one freed slot of VOQ[i][credit_queue_o[i]].
    output logic [NPORTS-1:0]                     credit_o,
    output logic [NPORTS*$clog2(NPORTS)-1:0]      credit_queue_o,
    // FANOUT_READ=1: row i, bit j: VOQ[i][j] also freed a slot by a fan-out join (0 otherwise).
    output logic [NPORTS*NPORTS-1:0]              credit_extra_o,
    // Observability (waves, lock-step comparison); not needed by a user.
    // Matrices: row r at [r*NPORTS +: NPORTS], one-hot where named so.
    output logic [NPORTS*NPORTS-1:0]              dbg_match_o,       // row i: one-hot output matched to input i this cycle
    output logic [NPORTS*NPORTS-1:0]              dbg_grant_ptr_o,   // row i, bit j: g[j] == i (as the allocator stores them)
    output logic [NPORTS*NPORTS-1:0]              dbg_accept_ptr_o,  // row i: a[i], one-hot
    output logic [NPORTS*NPORTS-1:0]              dbg_req_o,         // row i, bit j: VOQ[i][j] not empty
    output logic [NPORTS*$clog2(NPORTS*DEPTH+1)-1:0] dbg_occupancy_o, // flits held per input
    output logic                                  err_overflow_o     // a VOQ was written while full
);
    localparam int N  = NPORTS;
    localparam int IW = $clog2(NPORTS);
    localparam int OW = $clog2(NPORTS * DEPTH + 1);
    localparam int PD_W = (FANOUT_READ != 0 ? NPORTS : 1) * FLIT_W;   // flits an input pops per cycle, at most

`ifndef SYNTHESIS
    initial begin
        if (NPORTS < 2 || FLIT_W < 1 || DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0 || ITERS < 1 || LATENCY < 1)
            $fatal(1, "xbar_top: bad parameters NPORTS=%0d FLIT_W=%0d DEPTH=%0d ITERS=%0d LATENCY=%0d",
                   NPORTS, FLIT_W, DEPTH, ITERS, LATENCY);
    end
`endif

    logic [N*N-1:0]      req, match_row;
    logic [N-1:0]        in_match, out_match;
    logic [N*IW-1:0]     match_out, match_in;
    logic [N*N-1:0]      sibling, join_row;
    logic [N-1:0]        dp_valid;    // per output: reads an input (matched or joined) ...
    logic [N*IW-1:0]     dp_src;      // ... this one
    logic [N*PD_W-1:0]   pop_data;
    logic [N-1:0]        overflow;

    for (genvar i = 0; i < N; i++) begin : g_in
        xbar_input_buf #(.N(N), .FLIT_W(FLIT_W), .DEPTH(DEPTH), .FANOUT_READ(FANOUT_READ)) u_buf (
            .clk_i          (clk_i),
            .rst_ni         (rst_ni),
            .in_valid_i     (in_valid_i[i]),
            .in_data_i      (in_data_i[i*FLIT_W +: FLIT_W]),
            .in_dest_i      (in_dest_i[i*N +: N]),
            .pop_valid_i    (in_match[i]),
            .pop_queue_i    (match_out[i*IW +: IW]),
            .join_i         (join_row[i*N +: N]),
            .nonempty_o     (req[i*N +: N]),
            .pop_data_o     (pop_data[i*PD_W +: PD_W]),
            .sibling_o      (sibling[i*N +: N]),
            .credit_extra_o (credit_extra_o[i*N +: N]),
            .credit_o       (credit_o[i]),
            .credit_queue_o (credit_queue_o[i*IW +: IW]),
            .occupancy_o    (dbg_occupancy_o[i*OW +: OW]),
            .overflow_o     (overflow[i])
        );
    end

    xbar_islip_alloc #(.N(N), .ITERS(ITERS)) u_alloc (
        .clk_i          (clk_i),
        .rst_ni         (rst_ni),
        .iters_i        (cfg_iters_i),
        .req_i          (req),
        .match_row_o    (match_row),
        .in_match_o     (in_match),
        .match_out_o    (match_out),
        .out_match_o    (out_match),
        .match_in_o     (match_in),
        .grant_sel_o    (dbg_grant_ptr_o),
        .accept_ptr_o   (dbg_accept_ptr_o)
    );

    if (FANOUT_READ != 0) begin : g_fanout
        logic [N*N-1:0] join_col;
        xbar_fanout_join #(.N(N)) u_join (
            .clk_i       (clk_i),
            .rst_ni      (rst_ni),
            .sibling_i   (sibling),
            .out_match_i (out_match),
            .join_col_o  (join_col),
            .join_row_o  (join_row)
        );
        // An output either is matched or joins one input, never both.
        always_comb begin
            for (int j = 0; j < N; j++) begin
                logic [IW-1:0] src;
                src = '0;
                for (int i = 0; i < N; i++) if (join_col[j*N + i]) src = IW'(i);
                dp_valid[j] = out_match[j] | (join_col[j*N +: N] != '0);
                dp_src[j*IW +: IW] = out_match[j] ? match_in[j*IW +: IW] : src;
            end
        end
    end else begin : g_no_fanout
        assign join_row = '0;
        assign dp_valid = out_match;
        assign dp_src   = match_in;
        /* verilator lint_off UNUSEDSIGNAL */   // only the fan-out join reads the sibling heads
        logic [N*N-1:0] unused_sibling;
        /* verilator lint_on UNUSEDSIGNAL */
        assign unused_sibling = sibling;
    end

    xbar_datapath #(.N(N), .FLIT_W(FLIT_W), .LATENCY(LATENCY), .PER_VOQ(FANOUT_READ)) u_dp (
        .clk_i          (clk_i),
        .rst_ni         (rst_ni),
        .out_match_i    (dp_valid),
        .match_in_i     (dp_src),
        .pop_data_i     (pop_data),
        .out_valid_o    (out_valid_o),
        .out_data_o     (out_data_o),
        .out_src_o      (out_src_o)
    );

    assign dbg_match_o     = match_row;
    assign dbg_req_o       = req;
    assign err_overflow_o  = |overflow;
endmodule
