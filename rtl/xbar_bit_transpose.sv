`timescale 1ns/1ps
// Transpose of an N x N bit matrix: out_o[c*N + r] = in_i[r*N + c].
// Recursive block swap on rows padded to P = 2^ceil(log2 N) bits: log2(P)
// stages of word-wide shift/xor/and, instead of N*N single-bit moves (which
// are what makes a naive transpose slow under Verilator). Pure wiring in
// hardware either way.
module xbar_bit_transpose #(
    parameter int N = 4
) (
    input  logic [N*N-1:0] in_i,
    output logic [N*N-1:0] out_o
);
    localparam int LOGP = $clog2(N);
    localparam int P    = 1 << LOGP;

    // Bits whose column index has bit s clear: the low half of each 2^(s+1) block.
    function automatic logic [P-1:0] low_half_mask(input int s);
        logic [P-1:0] m;
        for (int c = 0; c < P; c++) m[c] = ((c >> s) & 1) == 0;
        low_half_mask = m;
    endfunction

    logic [P*P-1:0] w;   // row r at [r*P +: P]; packed, so Icarus sees no array in the sensitivity
    logic [P-1:0]   t;

    always @* begin   // not always_comb: Icarus 11 warns on constant part-selects in always_comb
        for (int r = 0; r < P; r++) begin
            w[r*P +: P] = '0;
            if (r < N) w[r*P +: N] = in_i[r*N +: N];
        end
        t = '0;
        for (int s = LOGP - 1; s >= 0; s--) begin
            for (int r = 0; r < P; r++) begin
                if (((r >> s) & 1) == 0) begin
                    t = ((w[r*P +: P] >> (1 << s)) ^ w[(r + (1 << s))*P +: P]) & low_half_mask(s);
                    w[r*P +: P] = w[r*P +: P] ^ (t << (1 << s));
                    w[(r + (1 << s))*P +: P] = w[(r + (1 << s))*P +: P] ^ t;
                end
            end
        end
        for (int c = 0; c < N; c++) out_o[c*N +: N] = w[c*P +: N];
    end
endmodule
