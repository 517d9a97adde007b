/* merge/emit/pb.h — a minimal protobuf encoder for the Perfetto writer.
 * Nested messages get a fixed 4-byte (redundant varint) length that is
 * patched when the message ends, as Perfetto's own protozero does, so a
 * packet is encoded in one pass into a scratch buffer. Owner: merge. */
#ifndef XSPROF_MERGE_PB_H
#define XSPROF_MERGE_PB_H

#include <stdint.h>
#include <string.h>
#include "merge/util.h"

enum { XSM_PB_VARINT = 0, XSM_PB_FIXED64 = 1, XSM_PB_LEN = 2 };

static inline void xsm_pb_varint(xsm_out *o, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    xsm_out_put(o, b, (size_t)n);
}

static inline void xsm_pb_key(xsm_out *o, uint32_t field, int wt) { xsm_pb_varint(o, ((uint64_t)field << 3) | (uint64_t)wt); }

static inline void xsm_pb_uint(xsm_out *o, uint32_t field, uint64_t v)
{
    xsm_pb_key(o, field, XSM_PB_VARINT);
    xsm_pb_varint(o, v);
}

/* int64 fields: two's complement as a 64-bit varint */
static inline void xsm_pb_int(xsm_out *o, uint32_t field, int64_t v) { xsm_pb_uint(o, field, (uint64_t)v); }

static inline void xsm_pb_fixed64(xsm_out *o, uint32_t field, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    xsm_pb_key(o, field, XSM_PB_FIXED64);
    xsm_out_put(o, b, 8);
}

static inline void xsm_pb_double(xsm_out *o, uint32_t field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    xsm_pb_fixed64(o, field, v);
}

static inline void xsm_pb_bytes(xsm_out *o, uint32_t field, const void *p, size_t n)
{
    xsm_pb_key(o, field, XSM_PB_LEN);
    xsm_pb_varint(o, n);
    xsm_out_put(o, p, n);
}

static inline void xsm_pb_str(xsm_out *o, uint32_t field, const char *s) { xsm_pb_bytes(o, field, s, strlen(s)); }

/* Open a nested message; returns the offset to pass to xsm_pb_end, which
 * shrinks the 4-byte length to its minimal varint (messages end in LIFO
 * order, so no open message's offset moves). */
static inline size_t xsm_pb_begin(xsm_out *o, uint32_t field)
{
    xsm_pb_key(o, field, XSM_PB_LEN);
    static const uint8_t pad[4] = {0x80, 0x80, 0x80, 0x00};
    xsm_out_put(o, pad, 4);
    return o->len;
}

static inline void xsm_pb_end(xsm_out *o, size_t start)
{
    if (o->failed)
        return;
    size_t n = o->len - start;
    uint8_t *p = (uint8_t *)o->p + start - 4;
    size_t k = n < (1u << 7) ? 1 : n < (1u << 14) ? 2 : n < (1u << 21) ? 3 : 4;
    if (k < 4) {
        memmove(p + k, p + 4, n);
        o->len -= 4 - k;
    }
    for (size_t i = 0; i < k; i++)
        p[i] = (uint8_t)(((n >> (7 * i)) & 0x7f) | (i + 1 < k ? 0x80 : 0));
}

#endif
