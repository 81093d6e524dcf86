`timescale 1ns/1ps
// Round-robin arbiter, combinational: grants the first requester at or after
// the pointer, in the order p, p+1, ..., N-1, 0, ... (docs/crossbar-cycle-rules.md).
// The pointer is one-hot (bit p) and lives in the caller, which decides when
// it moves. Requests at or after the pointer win over the ones before it;
// within a set the lowest index wins (x & -x): word operations, no loop.
module xbar_rr_arbiter #(
    parameter int N = 4
) (
    input  logic [N-1:0] req_i,
    input  logic [N-1:0] ptr_i,   // one-hot
    output logic [N-1:0] gnt_o    // one-hot; all zero when no request
);
    logic [N-1:0] upper;   // requests at or after the pointer
    logic [N-1:0] pool;

    assign upper = req_i & ~(ptr_i - 1'b1);
    assign pool  = (upper != '0) ? upper : req_i;
    assign gnt_o = pool & (~pool + 1'b1);
endmodule
