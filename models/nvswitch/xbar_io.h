/* The cycle-level interface of the crossbar core, shared by the C golden model
 * (models/nvswitch) and the Verilated RTL (rtl/ bridge), so the nvswitch
 * component can run either (model=tl|rtl) or both in lock-step (model=both).
 * The rules both implement are in docs/crossbar-cycle-rules.md. */
#ifndef XBAR_IO_H
#define XBAR_IO_H

#include <stdint.h>

#define XBAR_MAX_PORTS 64

/* One flit. `data` is opaque to the switch: the C side packs a tag (source,
 * flow sequence, packet id, head/tail) into it and the scoreboard compares it.
 * The RTL carries FLIT_W bits; the bridge maps the low 64 bits. */
typedef struct xbar_flit {
    uint64_t data;
    uint64_t dest_mask;   /* bit j = output j; one bit for unicast */
} xbar_flit;

/* What the switch sees in one cycle. */
typedef struct xbar_in {
    uint64_t valid;                       /* bit i: in[i] holds a flit this cycle */
    xbar_flit in[XBAR_MAX_PORTS];
} xbar_in;

/* What the switch drives in one cycle. */
typedef struct xbar_out {
    uint64_t valid;                       /* bit j: out[j] holds a flit this cycle */
    uint64_t out_data[XBAR_MAX_PORTS];
    uint8_t out_src[XBAR_MAX_PORTS];      /* input the flit came from */
    uint64_t credit;                      /* bit i: input i freed one buffer slot */
    uint8_t credit_queue[XBAR_MAX_PORTS]; /* which queue of input i (VOQ: the output index; FIFO: 0) */
    uint64_t credit_extra[XBAR_MAX_PORTS];/* fanout_read=1 only: bit j = VOQ[i][j] also freed a slot
                                           * this cycle by a multicast fan-out read (docs, "Multicast
                                           * fan-out read"); always 0 with fanout_read=0 */
    uint64_t match_in;                    /* debug: bit i set when input i was matched this cycle */
    uint8_t match_out[XBAR_MAX_PORTS];    /* debug: output matched to input i */
} xbar_out;

/* A crossbar core steps one clock cycle: consumes `in` (the flits presented
 * during this cycle) and fills `out` (what it drives during this cycle). */
typedef struct xbar_core_ops {
    const char *name;
    void (*step)(void *impl, const xbar_in *in, xbar_out *out);
    void (*free)(void *impl);
} xbar_core_ops;

#endif
