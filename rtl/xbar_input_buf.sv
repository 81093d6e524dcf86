`timescale 1ns/1ps
// The buffers of one input port: N virtual output queues (VOQ[j] holds flits
// for output j), DEPTH flits each (DEPTH a power of two). A flit presented in
// cycle t is written into every VOQ named in its destination mask (multicast
// = replication at the input) and can be requested from cycle t+1. The
// allocator pops at most one VOQ per cycle; the popped flit is registered here
// (pop_data_o, the first stage of the switch pipeline) and the freed slot is
// returned upstream as a credit pulse in cycle t+1 (credit_o, queue in
// credit_queue_o). With FANOUT_READ=1 (fan-out splitting) every VOQ whose head
// is a multicast copy offers it to its output (sibling_o), each VOQ has its
// own read port, and pop_data_o carries one popped flit per VOQ. The upstream holds one credit counter per VOQ; a write
// into a full VOQ is a credit protocol violation: the flit is dropped and
// overflow_o sticks at 1.
//
// Simulation speed shaped the description (the hardware is the same): each
// VOQ has a head and a tail pointer with one wrap bit (count = tail - head),
// and only the VOQs written or popped in a cycle are touched, through indexed
// accesses. A unicast flit (one destination, the common case) takes one
// indexed write; only a multicast flit visits every VOQ.
module xbar_input_buf #(
    parameter int N      = 4,
    parameter int FLIT_W = 64,
    parameter int DEPTH  = 8,
    parameter int FANOUT_READ = 0    // multicast fan-out splitting: a read port per VOQ
) (
    input  logic                          clk_i,
    input  logic                          rst_ni,
    input  logic                          in_valid_i,
    input  logic [FLIT_W-1:0]             in_data_i,
    input  logic [N-1:0]                  in_dest_i,      // bit j: write into VOQ[j]
    input  logic                          pop_valid_i,    // the allocator matched this input ...
    input  logic [$clog2(N)-1:0]          pop_queue_i,    // ... to this output: pop VOQ[pop_queue_i]
    input  logic [N-1:0]                  join_i,         // fan-out read: also pop these VOQs (multicast copies)
    output logic [N-1:0]                  nonempty_o,     // bit j: VOQ[j] holds a flit (requests)
    output logic [(FANOUT_READ != 0 ? N : 1)*FLIT_W-1:0] pop_data_o,     // the flit popped at the last edge (registered);
                                                          // FANOUT_READ=1: row j at [j*FLIT_W +: FLIT_W], VOQ[j]'s
    output logic [N-1:0]                  sibling_o,      // fan-out read: VOQs, not popped by the match, whose head is a multicast copy
    output logic [N-1:0]                  credit_extra_o, // fan-out read: slots freed by joins last cycle
    output logic                          credit_o,       // one slot freed last cycle
    output logic [$clog2(N)-1:0]          credit_queue_o, // ... in this VOQ
    output logic [$clog2(N*DEPTH+1)-1:0]  occupancy_o,    // flits held in all VOQs
    output logic                          overflow_o      // sticky: write into a full VOQ
);
    localparam int IW = $clog2(N);
    localparam int PD_W = (FANOUT_READ != 0 ? N : 1) * FLIT_W;
    localparam int PW = $clog2(DEPTH);   // slot index; pointers carry one more (wrap) bit
    localparam int OW = $clog2(N * DEPTH + 1);

    // Storage and pointers belong to the process `seq` alone: nothing else
    // reads them (the popped flit leaves through pop_data_q, the fan-out tags
    // through head_tag_q, both registered), so they are written with blocking
    // assignments and Verilator updates them in place instead of keeping a
    // delayed-assignment record per VOQ.
    logic [FLIT_W-1:0] mem [N][DEPTH];
    logic [PW:0]       head_q [N];
    logic [PW:0]       tail_q [N];
    logic [N-1:0]      nonempty_q, full_q;
    logic [N-1:0]      write;
    logic [N-1:0]      pops;              // matched pop plus fan-out joins
    logic [N-1:0]      pop_mask;
    logic [N-1:0]      credit_extra_q;
    logic [PD_W-1:0]   pop_data_q;
    logic              credit_q;
    logic [IW-1:0]     credit_queue_q;
    logic [OW-1:0]     occupancy_q;
    logic              overflow_q;
    // Fan-out read only (FANOUT_READ=1); the process below skips them otherwise.
    /* verilator lint_off UNUSEDSIGNAL */   // read only with FANOUT_READ=1
    logic              mc_mem [N][DEPTH];  // the entry is a copy of a multicast flit
    logic [N-1:0]      head_mc_q;          // bit j: the head of VOQ[j] is a multicast copy
    /* verilator lint_on UNUSEDSIGNAL */
    logic              in_mc;              // the flit presented now has several destinations
    assign in_mc = (in_dest_i & (in_dest_i - 1'b1)) != '0;

    assign write    = {N{in_valid_i}} & in_dest_i & ~full_q;   // not into a full VOQ
    assign pop_mask = {N{pop_valid_i}} & (N'(1) << pop_queue_i);
    assign pops     = pop_mask | join_i;

    logic [IW-1:0] wq;   // the VOQ a unicast flit goes to
    xbar_onehot_index #(.N(N)) u_write_index (.onehot_i(write), .index_o(wq));

    always_ff @(posedge clk_i) begin : seq
        logic [N-1:0]  nonempty_n, full_n;
        logic [PW:0]   hp, tp, hw, tw, cnt;
        logic [OW-1:0] added, removed;
        nonempty_n = nonempty_q;
        full_n     = full_q;
        /* verilator lint_off BLKSEQ */   // process-local state, see the declarations
        if (!rst_ni) begin
            for (int j = 0; j < N; j++) begin
                head_q[j] = '0;
                tail_q[j] = '0;
            end
            nonempty_n = '0;
            full_n     = '0;
            added      = '0;
            removed    = '0;
        end else begin
            // Read before anything moves: the popped head, and the pointers of
            // the unicast write's VOQ.
            hp = head_q[pop_queue_i];
            tp = tail_q[pop_queue_i];
            if (FANOUT_READ == 0) pop_data_q <= PD_W'(mem[pop_queue_i][hp[PW-1:0]]);
            hw = head_q[wq];
            tw = tail_q[wq];
            // Writes. A written VOQ not popped this cycle gains a flit; one
            // written and popped keeps its count (it was neither empty nor full).
            if ((write & (write - 1'b1)) == '0) begin   // at most one VOQ
                added = OW'(write != '0);
                if (write != '0) begin
                    mem[wq][tw[PW-1:0]] = in_data_i;
                    if (FANOUT_READ != 0) mc_mem[wq][tw[PW-1:0]] = 1'b0;   // one destination: unicast
                    tail_q[wq] = tw + 1'b1;
                    if (!pops[wq]) begin
                        cnt = tw - hw;
                        nonempty_n[wq] = 1'b1;
                        full_n[wq]     = cnt == (PW+1)'(DEPTH - 1);
                    end
                end
            end else begin                              // multicast: every VOQ of the mask
                added = OW'($countones(write));
                for (int j = 0; j < N; j++) begin
                    if (write[j]) begin
                        cnt = tail_q[j] - head_q[j];
                        mem[j][tail_q[j][PW-1:0]] = in_data_i;
                        if (FANOUT_READ != 0) mc_mem[j][tail_q[j][PW-1:0]] = in_mc;
                        tail_q[j] = tail_q[j] + 1'b1;
                        if (!pops[j]) begin
                            nonempty_n[j] = 1'b1;
                            full_n[j]     = cnt == (PW+1)'(DEPTH - 1);
                        end
                    end
                end
            end
            // Pops. A popped VOQ not written this cycle loses a flit (its tail
            // is the one read above, or untouched by the writes).
            if (FANOUT_READ == 0) begin
                removed = OW'(pop_valid_i);
                if (pop_valid_i) begin
                    head_q[pop_queue_i] = hp + 1'b1;
                    if (!write[pop_queue_i]) begin
                        cnt = tp - hp;
                        nonempty_n[pop_queue_i] = cnt != (PW+1)'(1);
                        full_n[pop_queue_i]     = 1'b0;
                    end
                end
            end else begin
                logic [PD_W-1:0] row_n;   // each popped VOQ's head, through its own read port
                row_n = pop_data_q;
                removed = OW'($countones(pops));
                for (int j = 0; j < N; j++) begin
                    if (pops[j]) begin
                        row_n[j*FLIT_W +: FLIT_W] = mem[j][head_q[j][PW-1:0]];
                        if (!write[j]) begin
                            cnt = tail_q[j] - head_q[j];
                            nonempty_n[j] = cnt != (PW+1)'(1);
                            full_n[j]     = 1'b0;
                        end
                        head_q[j] = head_q[j] + 1'b1;
                    end
                end
                pop_data_q <= row_n;
            end
            if (FANOUT_READ != 0) begin
                logic [N-1:0] head_mc_n;
                for (int j = 0; j < N; j++) head_mc_n[j] = mc_mem[j][head_q[j][PW-1:0]];
                head_mc_q <= head_mc_n;
            end
        end
        /* verilator lint_on BLKSEQ */
        if (!rst_ni) begin
            nonempty_q     <= '0;
            full_q         <= '0;
            credit_q       <= 1'b0;
            credit_queue_q <= '0;
            credit_extra_q <= '0;
            occupancy_q    <= '0;
            overflow_q     <= 1'b0;
        end else begin
            nonempty_q     <= nonempty_n;
            full_q         <= full_n;
            credit_q       <= pop_valid_i;
            // idle: N mod 2^IW, the value the index decode has always given for "no pop"
            credit_queue_q <= pop_valid_i ? pop_queue_i : IW'(N);
            credit_extra_q <= join_i;
            occupancy_q    <= occupancy_q + added - removed;
            overflow_q     <= overflow_q | (in_valid_i & |(in_dest_i & full_q));
        end
    end

    // Fan-out splitting: each entry carries a multicast bit, and a VOQ whose
    // head is a multicast copy offers it to its output whether or not (and
    // whatever) the allocator pops at this input; the copies of one flit so
    // leave as their outputs free.
    if (FANOUT_READ != 0) begin : g_split
        assign sibling_o = nonempty_q & head_mc_q & ~pop_mask;
    end else begin : g_no_split
        assign sibling_o = '0;
    end

    assign nonempty_o     = nonempty_q;
    assign pop_data_o     = pop_data_q;
    assign credit_extra_o = credit_extra_q;
    assign credit_o       = credit_q;
    assign credit_queue_o = credit_queue_q;
    assign occupancy_o    = occupancy_q;
    assign overflow_o     = overflow_q;
endmodule
