`timescale 1ns/1ps
// iSLIP allocator (McKeown 1999) with ITERS iterations, exactly the rules of
// docs/crossbar-cycle-rules.md, which the C golden model follows too:
//   grant:  each unmatched output grants the first requesting unmatched input
//           at or after its grant pointer g[j];
//   accept: each unmatched input accepts the first granting output at or
//           after its accept pointer a[i];
//   pointers move only for accepted grants and only in iteration 1:
//           g[j] = i+1 mod N, a[i] = j+1 mod N.
// Allocation is combinational within the cycle; only the pointers (one-hot)
// and the registered iteration count are state. iters_i (1..ITERS) is a
// configuration input sampled while rst_ni is low; it selects how many of
// the ITERS built iterations take part.
// Matrices are flat: row r at [r*N +: N].
module xbar_islip_alloc #(
    parameter int N     = 4,
    parameter int ITERS = 4
) (
    input  logic                       clk_i,
    input  logic                       rst_ni,
    input  logic [$clog2(ITERS+1)-1:0] iters_i,
    input  logic [N*N-1:0]             req_i,         // row i, bit j: VOQ[i][j] is not empty
    output logic [N*N-1:0]             match_row_o,   // row i: one-hot output matched to input i
    output logic [N*N-1:0]             match_col_o,   // row j: one-hot input matched to output j
    output logic [N-1:0]               out_match_o,   // bit j: output j matched this cycle
    output logic [N*N-1:0]             grant_ptr_o,   // row j: g[j], one-hot
    output logic [N*N-1:0]             accept_ptr_o   // row i: a[i], one-hot
);
    localparam int CW = $clog2(ITERS + 1);

    logic [N*N-1:0] gptr_q, aptr_q;
    logic [CW-1:0]  iters_q;
    logic [N*N-1:0] req_col;   // row j, bit i: input i requests output j

    xbar_bit_transpose #(.N(N)) u_req_t (.in_i(req_i), .out_o(req_col));

    for (genvar k = 0; k < ITERS; k++) begin : g_it
        logic [N-1:0]   in_free, out_free;   // still unmatched when this iteration starts
        logic           active;
        logic [N*N-1:0] gnt;                 // row j: one-hot input granted by output j
        logic [N*N-1:0] gnt_row;             // row i: outputs granting input i
        logic [N*N-1:0] acc;                 // row i: one-hot output accepted by input i
        /* verilator lint_off UNUSEDSIGNAL */   // the last iteration's in_took has no successor
        logic [N-1:0]   in_took;             // matched in this iteration
        /* verilator lint_on UNUSEDSIGNAL */
        logic [N-1:0]   out_took;
        logic [N*N-1:0] matched;             // rows of acc, accumulated over iterations

        if (k == 0) begin : g_first
            assign in_free  = '1;
            assign out_free = '1;
        end else begin : g_later
            assign in_free  = g_it[k-1].in_free  & ~g_it[k-1].in_took;
            assign out_free = g_it[k-1].out_free & ~g_it[k-1].out_took;
        end
        assign active = (CW'(k) < iters_q);

        for (genvar j = 0; j < N; j++) begin : g_grant
            xbar_rr_arbiter #(.N(N)) u_grant (
                .req_i (req_col[j*N +: N] & in_free & {N{out_free[j] & active}}),
                .ptr_i (gptr_q[j*N +: N]),
                .gnt_o (gnt[j*N +: N])
            );
        end

        xbar_bit_transpose #(.N(N)) u_gnt_t (.in_i(gnt), .out_o(gnt_row));

        // Grants only reach free inputs, so no extra gating is needed here.
        for (genvar i = 0; i < N; i++) begin : g_accept
            xbar_rr_arbiter #(.N(N)) u_accept (
                .req_i (gnt_row[i*N +: N]),
                .ptr_i (aptr_q[i*N +: N]),
                .gnt_o (acc[i*N +: N])
            );
        end

        always_comb begin
            out_took = '0;
            for (int i = 0; i < N; i++) begin
                in_took[i] = (acc[i*N +: N] != '0);
                out_took   = out_took | acc[i*N +: N];
            end
        end

        if (k == 0) begin : g_acc_first
            assign matched = acc;
        end else begin : g_acc_later
            assign matched = g_it[k-1].matched | acc;
        end
    end

    assign match_row_o  = g_it[ITERS-1].matched;
    assign out_match_o  = ~(g_it[ITERS-1].out_free & ~g_it[ITERS-1].out_took);
    assign grant_ptr_o  = gptr_q;
    assign accept_ptr_o = aptr_q;
    xbar_bit_transpose #(.N(N)) u_match_t (.in_i(match_row_o), .out_o(match_col_o));

    // Pointer update: first iteration, accepted grants only. Moving a one-hot
    // pointer to "one past" the granted port is a rotate by one.
    function automatic logic [N-1:0] rotl1(input logic [N-1:0] x);
        rotl1 = {x[N-2:0], x[N-1]};
    endfunction

    always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
            for (int p = 0; p < N; p++) begin
                gptr_q[p*N +: N] <= N'(1);
                aptr_q[p*N +: N] <= N'(1);
            end
            iters_q <= iters_i;
        end else begin
            for (int j = 0; j < N; j++)
                if (g_it[0].out_took[j]) gptr_q[j*N +: N] <= rotl1(g_it[0].gnt[j*N +: N]);
            for (int i = 0; i < N; i++)
                if (g_it[0].in_took[i]) aptr_q[i*N +: N] <= rotl1(g_it[0].acc[i*N +: N]);
        end
    end
endmodule
