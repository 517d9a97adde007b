/* merge/emit/pb.h — a minimal protobuf encoder for the Perfetto writer.
 * Nested messages get a one-byte length that is widened when a message
 * turns out longer (see xsm_pb_begin), so a packet is encoded in one pass
 * straight into the output buffer. Owner: merge. */
#ifndef XSPROF_MERGE_PB_H
#define XSPROF_MERGE_PB_H

#include <stdint.h>
#include <string.h>
#include "merge/util.h"

enum { XSM_PB_VARINT = 0, XSM_PB_FIXED64 = 1, XSM_PB_LEN = 2 };

static inline void xsm_pb_varint(xsm_out *o, uint64_t v)
{
    /* common case: room for the longest varint and no flush due */
    if (o->cap - o->len >= 10 && (!o->f || o->len < o->flush_at)) {
        uint8_t *p = (uint8_t *)o->p + o->len, *q = p;
        while (v >= 0x80) {
            *q++ = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        *q++ = (uint8_t)v;
        o->len += (size_t)(q - p);
        return;
    }
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

/* Cursor encoding for hot fixed-size parts: xsm_pb_room gives a pointer
 * with room for n bytes (NULL when memory ran out), the xsm_pb_w_* helpers
 * write through it, xsm_pb_commit takes the new length. The compiler keeps
 * the cursor in a register instead of reloading the buffer's fields after
 * every byte stored. Only inside a packet (no flush may happen). */
static inline uint8_t *xsm_pb_room(xsm_out *o, size_t n)
{
    if (o->cap - o->len < n && xsm_out_reserve(o, n))
        return NULL;
    return (uint8_t *)o->p + o->len;
}

static inline void xsm_pb_commit(xsm_out *o, const uint8_t *w) { o->len = (size_t)(w - (const uint8_t *)o->p); }

static inline uint8_t *xsm_pb_w_varint(uint8_t *w, uint64_t v)
{
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

/* a varint field: key and value, at most 15 bytes */
static inline uint8_t *xsm_pb_w_uint(uint8_t *w, uint32_t field, uint64_t v)
{
    return xsm_pb_w_varint(xsm_pb_w_varint(w, (uint64_t)field << 3 | XSM_PB_VARINT), v);
}

/* a fixed64 field: key and 8 little-endian bytes, at most 13 bytes */
static inline uint8_t *xsm_pb_w_fixed64(uint8_t *w, uint32_t field, uint64_t v)
{
    w = xsm_pb_w_varint(w, (uint64_t)field << 3 | XSM_PB_FIXED64);
    for (int i = 0; i < 8; i++)
        *w++ = (uint8_t)(v >> (8 * i));
    return w;
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

/* A string field: valid UTF-8 (protobuf's rule; protoc and Perfetto's
 * parser flag anything else). */
static inline void xsm_pb_str(xsm_out *o, uint32_t field, const char *s)
{
    size_t n = strlen(s), fixed = xsm_utf8_fixed_len(s, n);
    if (fixed == n) {
        xsm_pb_bytes(o, field, s, n);
        return;
    }
    xsm_pb_key(o, field, XSM_PB_LEN);
    xsm_pb_varint(o, fixed);
    xsm_out_utf8_fixed(o, s, n);
}

/* Open a nested message; returns the offset to pass to xsm_pb_end. The
 * length gets one byte now (most messages are shorter than 128 bytes) and
 * is widened to its minimal varint when the message ends, so a packet is
 * encoded in one pass and nothing moves in the common case. Messages end
 * in LIFO order, so widening never moves an open message's start. */
static inline size_t xsm_pb_begin(xsm_out *o, uint32_t field)
{
    xsm_pb_key(o, field, XSM_PB_LEN);
    static const uint8_t pad[1] = {0};
    xsm_out_put(o, pad, 1);
    return o->len;
}

static inline void xsm_pb_end(xsm_out *o, size_t start)
{
    if (o->failed)
        return;
    size_t n = o->len - start;
    if (n < 0x80) {
        ((uint8_t *)o->p)[start - 1] = (uint8_t)n;
        return;
    }
    size_t k = 1;
    while ((n >> (7 * k)) != 0)
        k++;
    /* make room without flushing: the open message must stay in the buffer */
    FILE *f = o->f;
    o->f = NULL;
    int bad = xsm_out_reserve(o, k - 1);
    o->f = f;
    if (bad)
        return;
    uint8_t *p = (uint8_t *)o->p + start - 1;
    memmove(p + k, p + 1, n);
    o->len += k - 1;
    for (size_t i = 0; i < k; i++)
        p[i] = (uint8_t)(((n >> (7 * i)) & 0x7f) | (i + 1 < k ? 0x80 : 0));
}

#endif
