/* core/record_pack.h — the packed MPI record (XSPROF_REC_MPI_PACKED), the
 * form mpi/ writes and io/journal_read.c decodes back into xsprof_rec_mpi.
 * Owner: core. Both sides live here so the encoding has one definition.
 *
 * Why: an MPI call was a fixed 96-byte record, most of it fields that are
 * "none" or small. On a node whose cores all busy-poll, the journal's page
 * provisioning (~0.8-1.1 ms per MB, kernel work on the writer thread) runs
 * in place of a rank, so bytes per call are cost per call (issue 39, goal 2;
 * benchmarks/README "Full nodes"). Packed, a ping-pong call takes 32 bytes.
 *
 * Layout: xsprof_rec_mpi_packed (16 bytes: header, kind, coll, flags,
 * t_begin), then LEB128 varints: `mask`, `op`, zigzag(t_end - t_begin), and
 * one varint per field whose bit is set in `mask`, in bit order (signed
 * fields zigzag). A field whose bit is clear has its default: comm NONE,
 * peer/tag/root XSPROF_MPI_NONE, every other field 0. Zero bytes pad the
 * record to its 8-byte size. */
#ifndef XSPROF_CORE_RECORD_PACK_H
#define XSPROF_CORE_RECORD_PACK_H

#include <stdint.h>
#include <string.h>

#include "record.h"

typedef struct xsprof_rec_mpi_packed {
    xsprof_rec_hdr h;
    uint8_t kind;
    uint8_t coll;
    uint16_t flags;
    int64_t t_begin;
} xsprof_rec_mpi_packed; /* 16 bytes, then the varints */

/* mask bits, in encoding order */
enum {
    XSPROF_PK_COMM = 1u << 0,
    XSPROF_PK_PEER = 1u << 1,
    XSPROF_PK_TAG = 1u << 2,
    XSPROF_PK_ROOT = 1u << 3,
    XSPROF_PK_BYTES_SENT = 1u << 4,
    XSPROF_PK_BYTES_RECV = 1u << 5,
    XSPROF_PK_REQUEST = 1u << 6,
    XSPROF_PK_SEQ = 1u << 7,
    XSPROF_PK_COLL_SEQ = 1u << 8,
    XSPROF_PK_COUNT = 1u << 9,
    XSPROF_PK_CALLSITE = 1u << 10,
    XSPROF_PK_ALL = (1u << 11) - 1
};

/* 16 fixed bytes + 14 varints of at most 10 bytes, rounded up to 8 */
#define XSPROF_MPI_PACKED_MAX 160u

static inline unsigned char *xsprof_pk_put(unsigned char *o, uint64_t v) {
    while (v >= 0x80) {
        *o++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *o++ = (unsigned char)v;
    return o;
}

static inline uint64_t xsprof_pk_zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t xsprof_pk_unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Encode `r` into `out`; returns the record's size (a multiple of 8, the
 * header's `size` already set). */
static inline uint32_t xsprof_rec_mpi_pack(const xsprof_rec_mpi *r, unsigned char out[XSPROF_MPI_PACKED_MAX]) {
    uint32_t mask = (r->comm != UINT32_MAX ? XSPROF_PK_COMM : 0) | (r->peer != XSPROF_MPI_NONE ? XSPROF_PK_PEER : 0) |
                    (r->tag != XSPROF_MPI_NONE ? XSPROF_PK_TAG : 0) | (r->root != XSPROF_MPI_NONE ? XSPROF_PK_ROOT : 0) |
                    (r->bytes_sent ? XSPROF_PK_BYTES_SENT : 0) | (r->bytes_recv ? XSPROF_PK_BYTES_RECV : 0) |
                    (r->request ? XSPROF_PK_REQUEST : 0) | (r->seq ? XSPROF_PK_SEQ : 0) |
                    (r->coll_seq ? XSPROF_PK_COLL_SEQ : 0) | (r->count ? XSPROF_PK_COUNT : 0) |
                    (r->callsite ? XSPROF_PK_CALLSITE : 0);
    xsprof_rec_mpi_packed head = {.h = {.type = XSPROF_REC_MPI_PACKED}, .kind = r->kind, .coll = r->coll,
                                  .flags = r->flags, .t_begin = r->t_begin};
    unsigned char *o = out + sizeof head;
    o = xsprof_pk_put(o, mask);
    o = xsprof_pk_put(o, r->op);
    o = xsprof_pk_put(o, xsprof_pk_zz((int64_t)((uint64_t)r->t_end - (uint64_t)r->t_begin)));
    if (mask & XSPROF_PK_COMM)
        o = xsprof_pk_put(o, r->comm);
    if (mask & XSPROF_PK_PEER)
        o = xsprof_pk_put(o, xsprof_pk_zz(r->peer));
    if (mask & XSPROF_PK_TAG)
        o = xsprof_pk_put(o, xsprof_pk_zz(r->tag));
    if (mask & XSPROF_PK_ROOT)
        o = xsprof_pk_put(o, xsprof_pk_zz(r->root));
    if (mask & XSPROF_PK_BYTES_SENT)
        o = xsprof_pk_put(o, r->bytes_sent);
    if (mask & XSPROF_PK_BYTES_RECV)
        o = xsprof_pk_put(o, r->bytes_recv);
    if (mask & XSPROF_PK_REQUEST)
        o = xsprof_pk_put(o, r->request);
    if (mask & XSPROF_PK_SEQ)
        o = xsprof_pk_put(o, r->seq);
    if (mask & XSPROF_PK_COLL_SEQ)
        o = xsprof_pk_put(o, r->coll_seq);
    if (mask & XSPROF_PK_COUNT)
        o = xsprof_pk_put(o, r->count);
    if (mask & XSPROF_PK_CALLSITE)
        o = xsprof_pk_put(o, r->callsite);
    uint32_t n = (uint32_t)(o - out), size = (n + 7u) & ~7u;
    memset(o, 0, size - n);
    head.h.size = (uint16_t)size;
    memcpy(out, &head, sizeof head);
    return size;
}

/* One varint from [*p, end); 0 when it runs past `end` or over 64 bits. */
static inline int xsprof_pk_get(const unsigned char **p, const unsigned char *end, uint64_t *v) {
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

/* Decode a packed record of `size` bytes into `r`; 0 when done, -1 when the
 * record is damaged (a varint runs past it, an unknown mask bit, a field
 * out of its type's range). */
static inline int xsprof_rec_mpi_unpack(const unsigned char *p, uint32_t size, xsprof_rec_mpi *r) {
    xsprof_rec_mpi_packed head;
    if (size < sizeof head)
        return -1;
    memcpy(&head, p, sizeof head);
    const unsigned char *q = p + sizeof head, *end = p + size;
    uint64_t mask, op, dur, v[11] = {0};
    if (!xsprof_pk_get(&q, end, &mask) || (mask & ~(uint64_t)XSPROF_PK_ALL) || !xsprof_pk_get(&q, end, &op) ||
        op > UINT32_MAX || !xsprof_pk_get(&q, end, &dur))
        return -1;
    for (unsigned b = 0; b < 11; b++)
        if ((mask & (1u << b)) && !xsprof_pk_get(&q, end, &v[b]))
            return -1;
    /* 32-bit fields: comm, count, callsite; zigzagged int32: peer, tag, root */
    if (v[0] > UINT32_MAX || v[9] > UINT32_MAX || v[10] > UINT32_MAX || v[1] > UINT32_MAX || v[2] > UINT32_MAX ||
        v[3] > UINT32_MAX)
        return -1;
    memset(r, 0, sizeof *r);
    r->h.type = XSPROF_REC_MPI;
    r->h.size = sizeof *r;
    r->kind = head.kind;
    r->coll = head.coll;
    r->flags = head.flags;
    r->t_begin = head.t_begin;
    r->t_end = (int64_t)((uint64_t)head.t_begin + (uint64_t)xsprof_pk_unzz(dur));
    r->op = (uint32_t)op;
    r->comm = mask & XSPROF_PK_COMM ? (uint32_t)v[0] : UINT32_MAX;
    r->peer = mask & XSPROF_PK_PEER ? (int32_t)xsprof_pk_unzz(v[1]) : XSPROF_MPI_NONE;
    r->tag = mask & XSPROF_PK_TAG ? (int32_t)xsprof_pk_unzz(v[2]) : XSPROF_MPI_NONE;
    r->root = mask & XSPROF_PK_ROOT ? (int32_t)xsprof_pk_unzz(v[3]) : XSPROF_MPI_NONE;
    r->bytes_sent = v[4];
    r->bytes_recv = v[5];
    r->request = v[6];
    r->seq = v[7];
    r->coll_seq = v[8];
    r->count = (uint32_t)v[9];
    r->callsite = (uint32_t)v[10];
    return 0;
}

#endif
