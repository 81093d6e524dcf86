`timescale 1ns/1ps
// The buffers of one input port: N virtual output queues (VOQ[j] holds flits
// for output j), DEPTH flits each (DEPTH a power of two). A flit presented in
// cycle t is written into every VOQ named in its destination mask (multicast
// = replication at the input) and can be requested from cycle t+1. The
// allocator pops at most one VOQ per cycle; the freed slot is returned
// upstream as a credit pulse in cycle t+1 (credit_o, queue in credit_queue_o).
// The upstream holds one credit counter per VOQ; a write into a full VOQ is a
// credit protocol violation: the flit is dropped and overflow_o sticks at 1.
// Only the queues touched in a cycle change, which keeps simulation cheap.
module xbar_input_buf #(
    parameter int N      = 4,
    parameter int FLIT_W = 64,
    parameter int DEPTH  = 8,
    parameter int FANOUT_READ = 0,   // keep presentation tags for multicast fan-out read
    parameter int TAG_W  = 16           // presentation tag bits (see docs/rtl.md on wrap-around)
) (
    input  logic                          clk_i,
    input  logic                          rst_ni,
    input  logic                          in_valid_i,
    input  logic [FLIT_W-1:0]             in_data_i,
    input  logic [N-1:0]                  in_dest_i,      // bit j: write into VOQ[j]
    input  logic [N-1:0]                  pop_i,          // one-hot: pop VOQ[j] (matched to output j)
    input  logic [N-1:0]                  join_i,         // fan-out read: also pop these VOQs (copies of the same flit)
    output logic [N-1:0]                  nonempty_o,     // bit j: VOQ[j] holds a flit (requests)
    output logic [FLIT_W-1:0]             pop_data_o,     // head of the popped VOQ
    output logic [N-1:0]                  sibling_o,      // fan-out read: VOQ heads that are copies of that flit
    output logic [N-1:0]                  credit_extra_o, // fan-out read: slots freed by joins last cycle
    output logic                          credit_o,       // one slot freed last cycle
    output logic [$clog2(N)-1:0]          credit_queue_o, // ... in this VOQ
    output logic [$clog2(N*DEPTH+1)-1:0]  occupancy_o,    // flits held in all VOQs
    output logic                          overflow_o      // sticky: write into a full VOQ
);
    localparam int IW = $clog2(N);
    localparam int PW = (DEPTH > 1) ? $clog2(DEPTH) : 1;   // slot index
    localparam int OW = $clog2(N * DEPTH + 1);

    logic [FLIT_W-1:0] mem [N][DEPTH];
    // Per-VOQ read slot, write slot and count, stored bit-sliced: plane b
    // holds bit b of the value for all N VOQs ([b*N +: N], bit j = VOQ j).
    // Every VOQ of the input then updates with a few word-wide operations
    // (a ripple carry across planes) instead of N separate counters, which
    // is the same hardware but simulates an order of magnitude faster.
    logic [PW*N-1:0]     head_q, tail_q;
    logic [(PW+1)*N-1:0] count_q;       // 0..DEPTH, so full = top plane
    logic [N-1:0]        nonempty_q;
    logic [N-1:0]        write;
    logic [N-1:0]        pops;          // matched pop plus fan-out joins
    logic [N-1:0]        credit_extra_q;
    logic                popping;
    logic [IW-1:0]       pop_queue;
    logic [PW-1:0]       pop_slot;
    logic                credit_q;
    logic [IW-1:0]       credit_queue_q;
    logic [OW-1:0]       occupancy_q;
    logic                overflow_q;

    function automatic logic [PW-1:0] slot_of(input logic [PW*N-1:0] planes, input logic [IW-1:0] q);
        for (int b = 0; b < PW; b++) slot_of[b] = planes[b*N + 32'(q)];
    endfunction

    assign write     = {N{in_valid_i}} & in_dest_i & ~count_q[PW*N +: N];   // not into a full VOQ
    assign popping   = (pop_i != '0);
    assign pops      = pop_i | join_i;
    assign pop_queue = IW'($countones(pop_i - 1'b1));   // index of the one-hot (0 when none)
    assign pop_slot  = slot_of(head_q, pop_queue);
    assign pop_data_o = mem[pop_queue][pop_slot];

    // Storage: no reset (the counts say what is valid). Blocking writes:
    // mem is only read through pop_data_o, and the slot written (a tail) is
    // never the slot read in the same cycle (the head of a non-empty VOQ;
    // a full VOQ is not written), so the order against other processes at
    // this edge cannot matter. Written this way Verilator emits one test
    // per VOQ instead of a delayed-assignment record per VOQ.
    always_ff @(posedge clk_i) begin
        for (int j = 0; j < N; j++)
            /* verilator lint_off BLKSEQ */
            if (write[j]) mem[j][slot_of(tail_q, IW'(j))] = in_data_i;
            /* verilator lint_on BLKSEQ */
    end

    always_ff @(posedge clk_i) begin : seq
        logic [PW*N-1:0]     head_n, tail_n;
        logic [(PW+1)*N-1:0] count_n;
        logic [N-1:0]        carry, borrow, t, nonempty_n;
        // +1 on the written VOQs' write slots, +1 on the popped VOQ's read slot
        tail_n = tail_q;
        carry  = write;
        for (int b = 0; b < PW; b++) begin
            t = tail_n[b*N +: N];
            tail_n[b*N +: N] = t ^ carry;
            carry = t & carry;
        end
        head_n = head_q;
        carry  = pops;
        for (int b = 0; b < PW; b++) begin
            t = head_n[b*N +: N];
            head_n[b*N +: N] = t ^ carry;
            carry = t & carry;
        end
        // count +1 where written and not popped, -1 where popped and not written
        count_n = count_q;
        carry   = write & ~pops;
        borrow  = pops & ~write;
        for (int b = 0; b <= PW; b++) begin
            t = count_n[b*N +: N];
            count_n[b*N +: N] = t ^ carry ^ borrow;
            carry  = t & carry;
            borrow = ~t & borrow;
        end
        nonempty_n = '0;
        for (int b = 0; b <= PW; b++) nonempty_n = nonempty_n | count_n[b*N +: N];
        if (!rst_ni) begin
            head_q         <= '0;
            tail_q         <= '0;
            count_q        <= '0;
            nonempty_q     <= '0;
            credit_q       <= 1'b0;
            credit_queue_q <= '0;
            credit_extra_q <= '0;
            occupancy_q    <= '0;
            overflow_q     <= 1'b0;
        end else begin
            head_q         <= head_n;
            tail_q         <= tail_n;
            count_q        <= count_n;
            nonempty_q     <= nonempty_n;
            credit_q       <= popping;
            credit_queue_q <= pop_queue;
            credit_extra_q <= join_i;
            occupancy_q    <= occupancy_q + OW'($countones(write)) - OW'($countones(pops));
            overflow_q     <= overflow_q | (in_valid_i & |(in_dest_i & count_q[PW*N +: N]));
        end
    end

    // Fan-out read: each entry carries the input's presentation count, so the
    // heads that are copies of the flit being popped can be recognised.
    if (FANOUT_READ != 0) begin : g_tags
        logic [TAG_W-1:0] tag_mem [N][DEPTH];
        logic [TAG_W-1:0] pres_q;        // flits presented at this input so far (wraps)
        logic [TAG_W-1:0] popped_tag;
        always_ff @(posedge clk_i) begin
            for (int j = 0; j < N; j++)
                /* verilator lint_off BLKSEQ */   // as for mem: the tail written is never a head read
                if (write[j]) tag_mem[j][slot_of(tail_q, IW'(j))] = pres_q;
                /* verilator lint_on BLKSEQ */
        end
        always_ff @(posedge clk_i) begin
            if (!rst_ni) pres_q <= '0;
            else if (in_valid_i) pres_q <= pres_q + 1'b1;
        end
        assign popped_tag = tag_mem[pop_queue][pop_slot];
        always_comb begin
            for (int j = 0; j < N; j++)
                sibling_o[j] = popping && nonempty_q[j] && !pop_i[j]
                               && tag_mem[j][slot_of(head_q, IW'(j))] == popped_tag;
        end
    end else begin : g_no_tags
        assign sibling_o = '0;
    end

    assign nonempty_o     = nonempty_q;
    assign credit_extra_o = credit_extra_q;
    assign credit_o       = credit_q;
    assign credit_queue_o = credit_queue_q;
    assign occupancy_o    = occupancy_q;
    assign overflow_o     = overflow_q;
endmodule
