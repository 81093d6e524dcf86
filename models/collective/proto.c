/* The protocols' packet formats and the element types (proto.h). */
#include "models/collective/proto.h"

#include <math.h>
#include <string.h>

static const coll_proto_def defs[COLL_PROTOS] = {
    [COLL_PROTO_SIMPLE] = { "simple", 128, 128, true, true, 0 },
    [COLL_PROTO_LL] = { "ll", 8, 4, false, false, COLL_LL_SLOT_DATA_BYTES },
    [COLL_PROTO_LL128] = { "ll128", 128, 120, false, false, COLL_LL128_SLOT_DATA_BYTES },
};

const coll_proto_def *coll_proto_get(enum coll_proto p) { return &defs[p < COLL_PROTOS ? p : COLL_PROTO_SIMPLE]; }

const char *coll_proto_name(enum coll_proto p) { return p == COLL_PROTO_AUTO ? "auto" : coll_proto_get(p)->name; }

uint64_t coll_proto_payload_bytes(enum coll_proto p, uint64_t data_bytes)
{
    const coll_proto_def *d = coll_proto_get(p);
    if (d->flag_write) return data_bytes;   /* Simple: the data as it is, packets of 128 B */
    uint64_t lines = (data_bytes + d->line_data_bytes - 1) / d->line_data_bytes;
    return (lines ? lines : 1) * d->line_bytes;
}

double coll_proto_efficiency(enum coll_proto p)
{
    const coll_proto_def *d = coll_proto_get(p);
    return (double)d->line_data_bytes / d->line_bytes;
}

uint32_t coll_proto_slot_bytes(enum coll_proto p, uint32_t simple_chunk_bytes, unsigned elem_bytes)
{
    uint32_t b = coll_proto_get(p)->slot_data_bytes;
    if (!b) b = simple_chunk_bytes;
    return b / elem_bytes * elem_bytes;
}

const char *coll_dtype_name(enum coll_dtype d) { return d == COLL_DTYPE_HALF ? "half" : d == COLL_DTYPE_BF16 ? "bfloat16" : "float"; }
unsigned coll_dtype_bytes(enum coll_dtype d) { return d == COLL_DTYPE_FLOAT ? 4 : 2; }

/* float -> IEEE binary16 -> float, round to nearest even: the quantum is
 * 2^(e-10) for normals (e >= -14), 2^-24 for subnormals; above 65504 inf. */
static float to_half(float v)
{
    if (!isfinite(v) || v == 0.0f) return v;
    int e;
    frexpf(fabsf(v), &e);   /* |v| = m 2^e, m in [0.5, 1): the exponent of binary16 is e - 1 */
    int q = e - 1 >= -14 ? e - 1 - 10 : -24;
    float r = ldexpf(nearbyintf(ldexpf(v, -q)), q);   /* exact: the scaled value fits a float's mantissa */
    return fabsf(r) >= 65520.0f ? copysignf(INFINITY, v) : r;
}

/* float -> bfloat16 -> float: keep the top 16 bits, round to nearest even */
static float to_bf16(float v)
{
    uint32_t x;
    memcpy(&x, &v, 4);
    if ((x & 0x7f800000u) == 0x7f800000u) return v;
    x = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

float coll_dtype_round(enum coll_dtype d, float v) { return d == COLL_DTYPE_HALF ? to_half(v) : d == COLL_DTYPE_BF16 ? to_bf16(v) : v; }
