`timescale 1ns/1ps
// Index of the set bit of a one-hot vector (0 when none): bit b of the index
// is the OR of the input bits whose position has bit b set. A few word
// operations in simulation, unlike $countones(x - 1), which Verilator
// evaluates as a long bit-twiddling sequence.
module xbar_onehot_index #(
    parameter int N = 4
) (
    input  logic [N-1:0]         onehot_i,
    output logic [$clog2(N)-1:0] index_o
);
    localparam int IW = $clog2(N);

    for (genvar b = 0; b < IW; b++) begin : g_bit
        logic [N-1:0] positions;   // the bit positions whose index has bit b set
        for (genvar k = 0; k < N; k++) begin : g_pos
            assign positions[k] = ((k >> b) & 1) != 0;
        end
        assign index_o[b] = (onehot_i & positions) != '0;
    end
endmodule
