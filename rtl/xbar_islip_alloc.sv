`timescale 1ns/1ps
// iSLIP allocator (McKeown 1999) with ITERS iterations, exactly the rules of
// docs/crossbar-cycle-rules.md, which the C golden model follows too:
//   grant:  each unmatched output grants the first requesting unmatched input
//           at or after its grant pointer g[j];
//   accept: each unmatched input accepts the first granting output at or
//           after its accept pointer a[i];
//   pointers move only for accepted grants and only in iteration 1:
//           g[j] = i+1 mod N, a[i] = j+1 mod N.
// Allocation is combinational within the cycle; only the pointers and the
// registered iteration count are state. iters_i (1..ITERS) is a
// configuration input sampled while rst_ni is low; it selects how many of
// the ITERS built iterations take part.
//
// Everything is kept in rows (row i = input i, bit j = output j), so no
// matrix is ever transposed: the grant pointers are stored as gsel (row i,
// bit j: g[j] == i), and the N grant arbiters become one scan down the rows
// with all outputs side by side in a word (first requester at or after g[j],
// then the wrap-around), which simulates in a few word operations per row.
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
    output logic [N-1:0]               in_match_o,    // bit i: input i matched this cycle ...
    output logic [N*$clog2(N)-1:0]     match_out_o,   // ... to this output ([i*IW +: IW]; 0 when not)
    output logic [N-1:0]               out_match_o,   // bit j: output j matched this cycle ...
    output logic [N*$clog2(N)-1:0]     match_in_o,    // ... to this input ([j*IW +: IW]; 0 when not)
    output logic [N*N-1:0]             grant_sel_o,   // row i, bit j: g[j] == i
    output logic [N*N-1:0]             accept_ptr_o   // row i: a[i], one-hot
);
    localparam int CW = $clog2(ITERS + 1);
    localparam int IW = $clog2(N);

    logic [N*N-1:0] gsel_q, aptr_q;
    logic [CW-1:0]  iters_q;
    logic [N*N-1:0] ge;        // row i, bit j: g[j] <= i (prefix OR of gsel rows)

    always_comb begin
        logic [N-1:0] upto;
        upto = '0;
        for (int i = 0; i < N; i++) begin
            upto = upto | gsel_q[i*N +: N];
            ge[i*N +: N] = upto;
        end
    end

    for (genvar k = 0; k < ITERS; k++) begin : g_it
        logic [N-1:0]   in_free, out_free;   // still unmatched when this iteration starts
        logic [N*N-1:0] gnt;                 // row i: outputs granting input i
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

        // Grant: for every output at once, walk the inputs from 0 to N-1 and
        // keep the first request at or after g[j]; outputs still free after
        // the walk take their first request below g[j] (the wrap-around).
        always_comb begin
            logic [N-1:0] taken, r;
            taken = '0;
            for (int i = 0; i < N; i++) begin
                r = req_i[i*N +: N] & out_free & {N{in_free[i] && CW'(k) < iters_q}};
                gnt[i*N +: N] = r & ge[i*N +: N] & ~taken;
                taken = taken | gnt[i*N +: N];
            end
            for (int i = 0; i < N; i++) begin
                r = req_i[i*N +: N] & out_free & {N{in_free[i] && CW'(k) < iters_q}} & ~taken;
                gnt[i*N +: N] = gnt[i*N +: N] | r;
                taken = taken | r;
            end
        end

        // Grants only reach free inputs, so no extra gating is needed here.
        for (genvar i = 0; i < N; i++) begin : g_accept
            xbar_rr_arbiter #(.N(N)) u_accept (
                .req_i (gnt[i*N +: N]),
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

    // The match as indices: per input its output, per output its input.
    for (genvar i = 0; i < N; i++) begin : g_index
        xbar_onehot_index #(.N(N)) u_out (.onehot_i(match_row_o[i*N +: N]), .index_o(match_out_o[i*IW +: IW]));
    end
    always_comb begin
        match_in_o = '0;
        for (int i = 0; i < N; i++)
            if (in_match_o[i]) match_in_o[32'(match_out_o[i*IW +: IW])*IW +: IW] = IW'(i);
    end

    assign match_row_o  = g_it[ITERS-1].matched;
    assign in_match_o   = ~(g_it[ITERS-1].in_free & ~g_it[ITERS-1].in_took);
    assign out_match_o  = ~(g_it[ITERS-1].out_free & ~g_it[ITERS-1].out_took);
    assign grant_sel_o  = gsel_q;
    assign accept_ptr_o = aptr_q;

    // Pointer update: first iteration, accepted grants only. a[i] moves to one
    // past the accepted output (a rotate of the one-hot); g[j] moves to one
    // past the accepting input, i.e. bit j moves to the next row of gsel.
    function automatic logic [N-1:0] rotl1(input logic [N-1:0] x);
        rotl1 = {x[N-2:0], x[N-1]};
    endfunction

    always_ff @(posedge clk_i) begin
        if (!rst_ni) begin
            gsel_q  <= {{(N*N-N){1'b0}}, {N{1'b1}}};   // every g[j] = 0
            for (int p = 0; p < N; p++) aptr_q[p*N +: N] <= N'(1);
            iters_q <= iters_i;
        end else begin
            for (int i = 0; i < N; i++) begin
                gsel_q[i*N +: N] <= (gsel_q[i*N +: N] & ~g_it[0].out_took) | g_it[0].acc[((i + N - 1) % N)*N +: N];
                if (g_it[0].in_took[i]) aptr_q[i*N +: N] <= rotl1(g_it[0].acc[i*N +: N]);
            end
        end
    end
endmodule
