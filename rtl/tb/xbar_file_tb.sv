`timescale 1ns/1ps
// File-driven testbench for xbar_top (Icarus: tb/xbar_iverilog.c runs it).
// Reads one line per cycle from +stim=<file>: "<in_valid> <in_dest> <in_data>"
// (hex, whole buses), drives it for that cycle, and writes what the switch
// drives in the cycle to +out=<file>: "<cycle> <out_valid> <out_data>
// <out_src> <credit> <credit_queue> <credit_extra> <err_overflow>" (hex, whole buses) —
// the same format the C harness writes for the Verilated model, so the two
// files must be identical. Reset: rst_ni low for 2 rising edges with
// cfg_iters_i = +iters=<n>, as the C bridge does.
module xbar_file_tb #(
    parameter int NPORTS  = 4,
    parameter int FLIT_W  = 64,
    parameter int DEPTH   = 32,
    parameter int ITERS   = 4,
    parameter int LATENCY = 1,
    parameter int FANOUT_READ = 0
);
    localparam int N  = NPORTS;
    localparam int IW = $clog2(NPORTS);
    localparam int OW = $clog2(NPORTS * DEPTH + 1);
    localparam int CW = $clog2(ITERS + 1);

    logic                clk = 1'b0;
    logic                rst_n = 1'b0;
    logic [CW-1:0]       cfg_iters = '0;
    logic [N-1:0]        in_valid = '0;
    logic [N*FLIT_W-1:0] in_data = '0;
    logic [N*N-1:0]      in_dest = '0;
    logic [N-1:0]        out_valid, credit;
    logic [N*FLIT_W-1:0] out_data;
    logic [N*IW-1:0]     out_src, credit_queue;
    logic [N*N-1:0]      dbg_match, dbg_gptr, dbg_aptr, dbg_req, credit_extra;
    logic [N*OW-1:0]     dbg_occ;
    logic                err_overflow;

    xbar_top #(.NPORTS(NPORTS), .FLIT_W(FLIT_W), .DEPTH(DEPTH), .ITERS(ITERS), .LATENCY(LATENCY), .FANOUT_READ(FANOUT_READ)) dut (
        .clk_i(clk), .rst_ni(rst_n), .cfg_iters_i(cfg_iters),
        .in_valid_i(in_valid), .in_data_i(in_data), .in_dest_i(in_dest),
        .out_valid_o(out_valid), .out_data_o(out_data), .out_src_o(out_src),
        .credit_o(credit), .credit_queue_o(credit_queue), .credit_extra_o(credit_extra),
        .dbg_match_o(dbg_match), .dbg_grant_ptr_o(dbg_gptr), .dbg_accept_ptr_o(dbg_aptr),
        .dbg_req_o(dbg_req), .dbg_occupancy_o(dbg_occ), .err_overflow_o(err_overflow)
    );

    integer fin, fout, r, iters, cycle;
    reg [1023:0] stim_path, out_path;

    initial begin
        if (!$value$plusargs("stim=%s", stim_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("xbar_file_tb: need +stim=<file> +out=<file>");
            $finish;
        end
        if (!$value$plusargs("iters=%d", iters)) iters = 1;
        fin = $fopen(stim_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("xbar_file_tb: cannot open the stimulus or output file");
            $finish;
        end
        cfg_iters = CW'(iters);
        repeat (2) begin
            #5 clk = 1'b1;
            #5 clk = 1'b0;
        end
        rst_n = 1'b1;
        cycle = 0;
        r = 3;
        while (r == 3 && !$feof(fin)) begin
            r = $fscanf(fin, "%h %h %h\n", in_valid, in_dest, in_data);
            if (r == 3) begin
                #1;   // let the combinational logic settle, then sample this cycle's outputs
                $fdisplay(fout, "%0d %h %h %h %h %h %h %h", cycle, out_valid, out_data, out_src, credit, credit_queue,
                          credit_extra, err_overflow);
                #4 clk = 1'b1;
                #5 clk = 1'b0;
                cycle = cycle + 1;
            end
        end
        $fclose(fin);
        $fclose(fout);
        $finish;
    end
endmodule
