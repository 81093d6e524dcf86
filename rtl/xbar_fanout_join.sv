`timescale 1ns/1ps
// Multicast fan-out read (docs/crossbar-cycle-rules.md, "Multicast fan-out
// read"; only built with FANOUT_READ=1): after allocation, every output left
// unmatched takes from the first input, at or after its fan-out pointer f[j],
// whose VOQ for j has a multicast copy at its head (fan-out splitting: matched
// or not, whatever the input's match pops). f[j] = i+1 on a join (one-hot,
// reset 0). The allocator's pointers are not touched.
module xbar_fanout_join #(
    parameter int N = 4
) (
    input  logic           clk_i,
    input  logic           rst_ni,
    input  logic [N*N-1:0] sibling_i,    // row i, bit j: head of VOQ[i][j] is a multicast copy (not popped by the match)
    input  logic [N-1:0]   out_match_i,  // outputs matched by the allocator
    output logic [N*N-1:0] join_col_o,   // row j: one-hot input joined by output j
    output logic [N*N-1:0] join_row_o    // row i: outputs that joined input i
);
    logic [N*N-1:0] cand_col;   // row j, bit i
    logic [N*N-1:0] fptr_q;     // row j: f[j], one-hot

    xbar_bit_transpose #(.N(N)) u_cand_t (.in_i(sibling_i), .out_o(cand_col));

    for (genvar j = 0; j < N; j++) begin : g_out
        xbar_rr_arbiter #(.N(N)) u_arb (
            .req_i (cand_col[j*N +: N] & {N{~out_match_i[j]}}),
            .ptr_i (fptr_q[j*N +: N]),
            .gnt_o (join_col_o[j*N +: N])
        );
    end

    xbar_bit_transpose #(.N(N)) u_join_t (.in_i(join_col_o), .out_o(join_row_o));

    always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
            for (int j = 0; j < N; j++) fptr_q[j*N +: N] <= N'(1);
        end else begin
            for (int j = 0; j < N; j++)
                if (join_col_o[j*N +: N] != '0)
                    fptr_q[j*N +: N] <= {join_col_o[j*N +: N - 1], join_col_o[j*N + N - 1]};
        end
    end
endmodule
