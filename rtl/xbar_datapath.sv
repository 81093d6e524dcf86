`timescale 1ns/1ps
// Crossbar datapath and output pipeline. The first of the LATENCY register
// stages is split: the input buffers register the flits they pop
// (pop_data_i), and this module registers, per output, whether it was
// matched and to which input; the crossbar mux follows those registers.
// PER_VOQ=1 (multicast fan-out splitting): each input registers one popped
// flit per VOQ, and output j takes row j of its source input's.
// Stages 2..LATENCY register the mux's output. Output j drives its flit
// LATENCY cycles after the match. Outputs are not back-pressured: the
// endpoint behind each output sinks one flit per cycle. Data and source of
// an idle output read as zero.
module xbar_datapath #(
    parameter int N       = 4,
    parameter int FLIT_W  = 64,
    parameter int LATENCY = 1,
    parameter int PER_VOQ = 0
) (
    input  logic                   clk_i,
    input  logic                   rst_ni,
    input  logic [N-1:0]           out_match_i,     // bit j: output j reads an input this cycle ...
    input  logic [N*$clog2(N)-1:0] match_in_i,      // ... this one ([j*IW +: IW]; 0 when idle)
    input  logic [N*(PER_VOQ != 0 ? N : 1)*FLIT_W-1:0] pop_data_i,      // [i*PD_W +: PD_W]: flit(s) popped at input i at the last edge
    output logic [N-1:0]           out_valid_o,
    output logic [N*FLIT_W-1:0]    out_data_o,
    output logic [N*$clog2(N)-1:0] out_src_o
);
    localparam int IW = $clog2(N);
    localparam int PD_W = (PER_VOQ != 0 ? N : 1) * FLIT_W;

    // Stage s at [s*N +: N] and [s*N*IW +: N*IW]; stage 0 is the registered match.
    logic [LATENCY*N-1:0]    valid_q;
    logic [LATENCY*N*IW-1:0] src_q;
    logic [N*FLIT_W-1:0]     switched;   // stage 0 through the crossbar mux

    always_comb begin
        logic [PD_W-1:0] flit [N];
        for (int i = 0; i < N; i++) flit[i] = pop_data_i[i*PD_W +: PD_W];
        for (int j = 0; j < N; j++) begin
            logic [PD_W-1:0] row;
            row = flit[src_q[j*IW +: IW]];
            switched[j*FLIT_W +: FLIT_W] = valid_q[j] ? row[(PER_VOQ != 0 ? j : 0)*FLIT_W +: FLIT_W] : '0;
        end
    end

    always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
            valid_q <= '0;
            src_q   <= '0;
        end else begin
            valid_q <= (LATENCY*N)'({valid_q, out_match_i});
            src_q   <= (LATENCY*N*IW)'({src_q, match_in_i});
        end
    end

    if (LATENCY == 1) begin : g_mux_out
        assign out_data_o = switched;
    end else begin : g_stages
        logic [(LATENCY-1)*N*FLIT_W-1:0] data_q;   // stage s (1..LATENCY-1) at [(s-1)*N*FLIT_W +: N*FLIT_W]
        always_ff @(posedge clk_i) begin
            if (!rst_ni) data_q <= '0;
            else         data_q <= ((LATENCY-1)*N*FLIT_W)'({data_q, switched});
        end
        assign out_data_o = data_q[(LATENCY-2)*N*FLIT_W +: N*FLIT_W];
    end

    assign out_valid_o = valid_q[(LATENCY-1)*N +: N];
    assign out_src_o   = src_q[(LATENCY-1)*N*IW +: N*IW];
endmodule
