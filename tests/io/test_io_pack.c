/* tests/io/test_io_pack.c — the packed MPI record (core/record_pack.h):
 * every field survives pack and unpack, at its extremes and at random; the
 * packed form of a ping-pong call is small (the point of it); a record cut
 * short or carrying an unknown field bit is refused, never misread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record_pack.h"
#include "io_check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* a value of `bits` random bits, sometimes an edge */
static uint64_t pick(unsigned bits) {
    uint64_t m = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    switch (next() % 6) {
    case 0: return 0;
    case 1: return m;
    case 2: return next() & 0xff;
    default: return next() & m;
    }
}

static int same(const xsprof_rec_mpi *a, const xsprof_rec_mpi *b) {
    return a->op == b->op && a->t_begin == b->t_begin && a->t_end == b->t_end && a->comm == b->comm &&
           a->peer == b->peer && a->tag == b->tag && a->root == b->root && a->bytes_sent == b->bytes_sent &&
           a->bytes_recv == b->bytes_recv && a->request == b->request && a->seq == b->seq &&
           a->coll_seq == b->coll_seq && a->kind == b->kind && a->coll == b->coll && a->flags == b->flags &&
           a->count == b->count && a->callsite == b->callsite;
}

static void roundtrip(const xsprof_rec_mpi *r, const char *what) {
    unsigned char pk[XSPROF_MPI_PACKED_MAX + 8] __attribute__((aligned(8)));
    memset(pk, 0xa5, sizeof pk);
    uint32_t n = xsprof_rec_mpi_pack(r, pk);
    CHECK(n % 8 == 0 && n <= XSPROF_MPI_PACKED_MAX && pk[XSPROF_MPI_PACKED_MAX] == 0xa5, "%s: size %u", what, n);
    xsprof_rec_hdr h;
    memcpy(&h, pk, sizeof h);
    CHECK(h.type == XSPROF_REC_MPI_PACKED && h.size == n, "%s: header %u/%u", what, h.type, h.size);
    xsprof_rec_mpi back;
    CHECK(xsprof_rec_mpi_unpack(pk, n, &back) == 0 && same(r, &back), "%s: fields differ after unpack", what);
    /* cut short anywhere before the last varint's end: refused */
    uint32_t used = n;
    while (used > sizeof(xsprof_rec_mpi_packed) && pk[used - 1] == 0)
        used--;
    for (uint32_t cut = 0; cut < used; cut++) {
        xsprof_rec_mpi x;
        CHECK(xsprof_rec_mpi_unpack(pk, cut, &x) != 0, "%s: cut at %u of %u accepted", what, cut, used);
    }
}

int main(void) {
    xsprof_rec_mpi r;
    /* a ping-pong send, as mpi/call.c fills it */
    memset(&r, 0, sizeof r);
    r.op = 120;
    r.t_begin = 123456789012345;
    r.t_end = r.t_begin + 480;
    r.comm = 0;
    r.peer = 1;
    r.tag = 7;
    r.root = XSPROF_MPI_NONE;
    r.bytes_sent = 8;
    r.seq = 300000;
    r.kind = XSPROF_MPI_SEND;
    r.callsite = 3;
    roundtrip(&r, "send");
    unsigned char pk[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
    uint32_t n = xsprof_rec_mpi_pack(&r, pk);
    CHECK(n <= 32, "a ping-pong send packs into %u bytes (fixed: %zu)", n, sizeof(xsprof_rec_mpi));
    printf("ping-pong send: %u bytes packed, %zu fixed\n", n, sizeof(xsprof_rec_mpi));

    /* a field bit this reader does not know: damaged */
    unsigned char bad[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
    memcpy(bad, pk, n);
    bad[sizeof(xsprof_rec_mpi_packed)] |= 0x80; /* mask grows a second byte ... */
    bad[sizeof(xsprof_rec_mpi_packed) + 1] = 0x7f; /* ... with bits 7-13 set */
    xsprof_rec_mpi x;
    CHECK(xsprof_rec_mpi_unpack(bad, n, &x) != 0, "unknown mask bits accepted");

    /* every field at its extremes: nones, minima, maxima, time running backwards */
    int32_t i32s[] = {XSPROF_MPI_NONE, 0, 1, -2, INT32_MAX, INT32_MIN};
    for (size_t k = 0; k < sizeof i32s / sizeof *i32s; k++) {
        memset(&r, 0xff, sizeof r);
        r.peer = r.tag = r.root = i32s[k];
        r.comm = k & 1 ? UINT32_MAX : 0;
        r.t_begin = k & 2 ? INT64_MIN : INT64_MAX;
        r.t_end = k & 2 ? INT64_MAX : INT64_MIN;
        roundtrip(&r, "extremes");
    }
    memset(&r, 0, sizeof r);
    roundtrip(&r, "zeros");

    for (int i = 0; i < 200000; i++) {
        memset(&r, 0, sizeof r);
        r.op = (uint32_t)pick(32);
        r.t_begin = (int64_t)pick(64);
        r.t_end = next() & 1 ? (int64_t)pick(64) : r.t_begin + (int64_t)pick(20);
        r.comm = next() & 1 ? UINT32_MAX : (uint32_t)pick(32);
        r.peer = next() & 1 ? XSPROF_MPI_NONE : (int32_t)pick(32);
        r.tag = next() & 1 ? XSPROF_MPI_NONE : (int32_t)pick(32);
        r.root = next() & 1 ? XSPROF_MPI_NONE : (int32_t)pick(32);
        r.bytes_sent = pick(64);
        r.bytes_recv = pick(64);
        r.request = pick(64);
        r.seq = pick(64);
        r.coll_seq = pick(64);
        r.kind = (uint8_t)pick(8);
        r.coll = (uint8_t)pick(8);
        r.flags = (uint16_t)pick(16);
        r.count = (uint32_t)pick(32);
        r.callsite = (uint32_t)pick(32);
        roundtrip(&r, "random");
        if (io_check_failures > 20)
            break;
    }
    return io_check_result("packed MPI records (pack and unpack agree, damage is refused)");
}
