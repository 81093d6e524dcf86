/* NCCL's three protocols as the engine sends them (ring.c and tree.c use
 * only these definitions), and the element types of the buffers.
 *
 *   simple: the chunk's data in NVLink packets, a memory fence (the flag may
 *           leave only once the data is acknowledged visible at the
 *           receiver: a write response back), then a separate 8-byte flag
 *           write; the receiver takes the chunk at the flag.
 *   ll:     every 8-byte store is 4 data bytes + a 4-byte flag, so 50 % of
 *           the payload is data; no flag write, no fence: the receiver takes
 *           the data as it lands.
 *   ll128:  128-byte lines of 120 data bytes + an 8-byte flag (NVLink keeps
 *           a 128-byte store whole, so the flag arrives with its line); no
 *           flag write, no fence.
 *
 * Slot (one step's buffer) sizes are NCCL's defaults (src/init.cc
 * DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE over NCCL_STEPS = 8, with
 * src/include/device.h's NCCL_LL_LINES_PER_THREAD 8, NCCL_LL_MAX_NTHREADS
 * 512, a 16-byte ncclLLFifoLine; NCCL_LL128_ELEMS_PER_THREAD 120,
 * NCCL_LL128_MAX_NTHREADS 640, 8-byte elements): LL 64 KiB of lines = 32 KiB
 * of data, LL128 600 KiB of lines = 562.5 KiB of data; Simple's is
 * coll_cfg.chunk_bytes. docs/models/collective.md "Protocols". */
#ifndef MODELS_COLLECTIVE_PROTO_H
#define MODELS_COLLECTIVE_PROTO_H

#include <stdbool.h>
#include <stdint.h>

enum coll_proto { COLL_PROTO_SIMPLE = 0, COLL_PROTO_LL, COLL_PROTO_LL128, COLL_PROTO_AUTO };
#define COLL_PROTO_CHOICES "simple|ll|ll128|auto"
#define COLL_PROTOS 3   /* the real ones: simple, ll, ll128 */

typedef struct coll_proto_def {
    const char *name;
    uint32_t line_bytes;       /* a store as it goes on the wire */
    uint32_t line_data_bytes;  /* the data in it (the rest is flag) */
    bool flag_write;           /* a separate flag write after the data (and the receiver waits for it) */
    bool fence;                /* the flag leaves only once the data is acknowledged visible */
    uint32_t slot_data_bytes;  /* data per slot (one step); 0: coll_cfg.chunk_bytes */
} coll_proto_def;

#define COLL_LL_SLOT_DATA_BYTES (8u * 512u * 16u / 2u)          /* 32768: NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS lines of 16 B, half data */
#define COLL_LL128_SLOT_DATA_BYTES (120u * 640u * 8u / 128u * 120u)   /* 576000: 120 x 640 x 8 B of lines, 120 of every 128 B data */

const coll_proto_def *coll_proto_get(enum coll_proto p);
const char *coll_proto_name(enum coll_proto p);
/* The wire payload (NVLink packet payload bytes) that carries data_bytes of
 * data: whole lines; LL and LL128 send at least one line (an empty step is
 * its flag), Simple nothing (its flag write says it). */
uint64_t coll_proto_payload_bytes(enum coll_proto p, uint64_t data_bytes);
/* Data bytes per data byte on the wire at full lines: 1, 0.5, 120/128. */
double coll_proto_efficiency(enum coll_proto p);
/* Data bytes per slot (a chunk) with Simple's chunk_bytes, rounded down to whole elements. */
uint32_t coll_proto_slot_bytes(enum coll_proto p, uint32_t simple_chunk_bytes, unsigned elem_bytes);

/* Element types (nccl-tests -d): float, half, bfloat16. Values are held in
 * float and rounded to the type after every operation (round to nearest even). */
enum coll_dtype { COLL_DTYPE_FLOAT = 0, COLL_DTYPE_HALF, COLL_DTYPE_BF16 };
#define COLL_DTYPE_CHOICES "float|half|bfloat16"
const char *coll_dtype_name(enum coll_dtype d);
unsigned coll_dtype_bytes(enum coll_dtype d);
float coll_dtype_round(enum coll_dtype d, float v);
/* a + b in the type (as a GPU's reduce-copy: the sum rounded to it) */
static inline float coll_dtype_add(enum coll_dtype d, float a, float b) { return d == COLL_DTYPE_FLOAT ? a + b : coll_dtype_round(d, a + b); }

#endif
