`timescale 1ns/1ps
// Crossbar datapath and output pipeline: output j takes the flit popped from
// the input it was matched to, and drives it LATENCY cycles later (LATENCY
// register stages; the first is the output register). Outputs are not
// back-pressured: the endpoint behind each output sinks one flit per cycle.
// Data and source of an idle output read as zero.
module xbar_datapath #(
    parameter int N       = 4,
    parameter int FLIT_W  = 64,
    parameter int LATENCY = 1
) (
    input  logic                   clk_i,
    input  logic                   rst_ni,
    input  logic [N-1:0]           out_match_i,     // bit j: output j matched this cycle
    input  logic [N*N-1:0]         match_col_i,     // row j: one-hot input matched to output j
    input  logic [N*FLIT_W-1:0]    pop_data_i,      // [i*FLIT_W+:FLIT_W]: flit popped at input i
    output logic [N-1:0]           out_valid_o,
    output logic [N*FLIT_W-1:0]    out_data_o,
    output logic [N*$clog2(N)-1:0] out_src_o
);
    localparam int IW = $clog2(N);

    logic [N-1:0]        valid_q [LATENCY];
    logic [N*FLIT_W-1:0] data_q  [LATENCY];
    logic [N*IW-1:0]     src_q   [LATENCY];
    logic [N*FLIT_W-1:0] switched;
    logic [N*IW-1:0]     src;

    always_comb begin
        for (int j = 0; j < N; j++) begin
            src[j*IW +: IW] = IW'($countones(match_col_i[j*N +: N] - 1'b1));   // index of the one-hot
            if (!out_match_i[j]) src[j*IW +: IW] = '0;
            switched[j*FLIT_W +: FLIT_W] = out_match_i[j] ? pop_data_i[32'(src[j*IW +: IW])*FLIT_W +: FLIT_W] : '0;
        end
    end

    always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
            for (int s = 0; s < LATENCY; s++) begin
                valid_q[s] <= '0;
                data_q[s]  <= '0;
                src_q[s]   <= '0;
            end
        end else begin
            valid_q[0] <= out_match_i;
            data_q[0]  <= switched;
            src_q[0]   <= src;
            for (int s = 1; s < LATENCY; s++) begin
                valid_q[s] <= valid_q[s-1];
                data_q[s]  <= data_q[s-1];
                src_q[s]   <= src_q[s-1];
            end
        end
    end

    assign out_valid_o = valid_q[LATENCY-1];
    assign out_data_o  = data_q[LATENCY-1];
    assign out_src_o   = src_q[LATENCY-1];
endmodule
