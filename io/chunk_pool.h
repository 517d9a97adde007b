/* io/chunk_pool.h — encodes the chunks of the event tables on worker threads
 * and hands them back, in submission order, to the thread that submitted
 * them, which alone calls HDF5 (HDF5 is serial and holds a global lock).
 * Owner: io.
 *
 * A chunk is encoded exactly as the writer's filter pipeline would encode
 * it (shuffle, deflate with zlib's compress2, fletcher32; the rows packed
 * into the file type, a partial last chunk zero-filled to the full chunk),
 * so the bytes stored with H5Dwrite_chunk are those H5Dwrite would store. */
#ifndef XSPROF_IO_CHUNK_POOL_H
#define XSPROF_IO_CHUNK_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <hdf5.h>

#include "core/collector.h" /* XSPROF_HIDDEN */
#include "xsprof/xsprof.h"

/* A run of bytes copied from the C row to the packed file row; at most 8
 * bytes so that shuffling moves it as one word. */
typedef struct xsprof_chunk_piece {
    uint32_t mem_off;  /* offset in the C struct */
    uint32_t file_off; /* offset in the packed file row */
    uint32_t size;     /* 1..8 */
} xsprof_chunk_piece;

/* How rows of one table become chunk bytes. */
typedef struct xsprof_chunk_codec {
    size_t row_size;  /* bytes per row in memory (the C struct) */
    size_t file_size; /* bytes per row on disk (packed) */
    size_t chunk_rows;
    int level;        /* deflate level */
    xsprof_chunk_piece *pieces;
    size_t npieces;
} xsprof_chunk_codec;

/* Build the codec of a dataset whose rows are `mem_type` in memory and
 * `file_type` on disk. Fails (XSPROF_ERR_FORMAT) when the file type is not
 * the memory type's members packed in order, which this codec would not
 * reproduce: the caller then writes through HDF5. */
XSPROF_HIDDEN xsprof_status xsprof_chunk_codec_init(xsprof_chunk_codec *c, hid_t mem_type, hid_t file_type,
                                                    size_t chunk_rows, int level);
XSPROF_HIDDEN void xsprof_chunk_codec_free(xsprof_chunk_codec *c);

/* Receives one encoded chunk of `nrows` rows of `table`, on the submitting
 * thread, in submission order. */
typedef xsprof_status (*xsprof_chunk_write_fn)(void *user, int table, size_t nrows, const void *bytes,
                                               size_t len);

typedef struct xsprof_chunk_pool xsprof_chunk_pool;

/* Threads the writer uses: the CPUs this process may run on
 * (sched_getaffinity), at most XSPROF_WRITER_THREADS when that is set, and
 * never more than 8 (the converting thread parses alone, which bounds the
 * gain). 1: the converting thread alone (the writer keeps HDF5's own
 * filters for XSPROF_WRITER_THREADS=1, the reference its bytes are
 * compared with). */
XSPROF_HIDDEN unsigned xsprof_chunk_pool_threads(void);

/* A pool of `nthreads` encoding threads counting the caller, which encodes
 * too when it would otherwise wait (with 1, or when no worker could start,
 * it encodes every chunk). NULL when out of memory. */
XSPROF_HIDDEN xsprof_chunk_pool *xsprof_chunk_pool_create(unsigned nthreads, xsprof_chunk_write_fn fn,
                                                          void *user);

/* Queue `n` rows (at most c->chunk_rows; copied) of `table` as one chunk.
 * Chunks already encoded are written (through fn) first. After a failure
 * every call returns the first failure; *failed_table then names the table
 * of a chunk that could not be encoded (-1 when fn failed). */
XSPROF_HIDDEN xsprof_status xsprof_chunk_pool_submit(xsprof_chunk_pool *p, int table, const xsprof_chunk_codec *c,
                                                     const void *rows, size_t n, int *failed_table);

/* Queue a chunk of `n` rows of `table` encoded elsewhere (`len` bytes,
 * copied; say another process): written through fn in its turn, between
 * the chunks submitted before and after it. */
XSPROF_HIDDEN xsprof_status xsprof_chunk_pool_submit_encoded(xsprof_chunk_pool *p, int table, size_t n,
                                                             const void *bytes, size_t len, int *failed_table);

/* Encode and write everything queued. */
XSPROF_HIDDEN xsprof_status xsprof_chunk_pool_finish(xsprof_chunk_pool *p, int *failed_table);

/* Stop the threads (a chunk being encoded is finished, the queue is
 * dropped) and free the pool. NULL is fine. */
XSPROF_HIDDEN void xsprof_chunk_pool_destroy(xsprof_chunk_pool *p);

/* Working memory of one encoding thread, kept from chunk to chunk (start
 * from all zero). */
typedef struct xsprof_chunk_work {
    unsigned char *planes; /* the shuffled chunk */
    size_t planes_cap;
    unsigned char *zmem;   /* zlib's state */
    size_t zmem_used;
    void *ldc;             /* libdeflate's compressor (builds with it), for ldc_level */
    int ldc_level;
} xsprof_chunk_work;
XSPROF_HIDDEN void xsprof_chunk_work_free(xsprof_chunk_work *w);

/* Encode n rows (n <= chunk_rows) into out, which holds at least
 * xsprof_chunk_encoded_max(c) bytes. Returns the encoded length, 0 on
 * failure (out of memory). */
XSPROF_HIDDEN size_t xsprof_chunk_encode(const xsprof_chunk_codec *c, const void *rows, size_t n,
                                         xsprof_chunk_work *w, unsigned char *out);
XSPROF_HIDDEN size_t xsprof_chunk_encoded_max(const xsprof_chunk_codec *c);

#endif
