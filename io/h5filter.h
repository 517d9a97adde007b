/* io/h5filter.h — pieces of HDF5's chunk filters done outside HDF5: the
 * fletcher32 checksum as HDF5 computes it (H5_checksum_fletcher32: 16-bit
 * big-endian words), zlib's adler32 and the 8x8 byte transpose behind shuffle/unshuffle of
 * 8-byte fields. Shared by the threaded chunk writer (io/chunk_pool.c) and
 * xsmerge's chunk reader (merge/read/chunks.c). Owner: io. */
#ifndef XSPROF_IO_H5FILTER_H
#define XSPROF_IO_H5FILTER_H

#include <stddef.h>
#include <stdint.h>

__attribute__((visibility("hidden"))) uint32_t xsprof_h5_fletcher32(const unsigned char *p, size_t len);

/* zlib's adler32(adler, p, len), the checksum that ends a deflate filter's
 * zlib stream, 16 bytes at a step with SSE2 where there is SSE2 (Debian's
 * zlib sums byte by byte: 8 % of merged.h5's CPU). */
__attribute__((visibility("hidden"))) uint32_t xsprof_adler32(uint32_t adler, const unsigned char *p, size_t len);

/* 8x8 byte transpose in three swap stages (1-, 2-, 4-byte blocks): byte j
 * of word r goes to byte r of word j. Its own inverse. */
static inline void xsprof_h5_transpose8(uint64_t x[8])
{
    static const uint64_t m1 = 0x00ff00ff00ff00ffull, m2 = 0x0000ffff0000ffffull, m4 = 0x00000000ffffffffull;
    for (int r = 0; r < 8; r += 2) {
        uint64_t t = ((x[r] >> 8) ^ x[r + 1]) & m1;
        x[r + 1] ^= t;
        x[r] ^= t << 8;
    }
    for (int r = 0; r < 8; r += (r & 1) ? 3 : 1) {
        uint64_t t = ((x[r] >> 16) ^ x[r + 2]) & m2;
        x[r + 2] ^= t;
        x[r] ^= t << 16;
    }
    for (int r = 0; r < 4; r++) {
        uint64_t t = ((x[r] >> 32) ^ x[r + 4]) & m4;
        x[r + 4] ^= t;
        x[r] ^= t << 32;
    }
}

#endif
