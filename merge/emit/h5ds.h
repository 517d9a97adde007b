/* merge/emit/h5ds.h — one table of merged.h5 written a chunk at a time:
 * rows gather into whole chunks that io/chunk_pool.h encodes on threads
 * (shuffle, deflate, fletcher32, the bytes HDF5's own filters would give)
 * and H5Dwrite_chunk stores in order. The event tables (emit/h5.c) and the
 * analysis's tables (analyze/h5.c) both write through it. Owner: emit. */
#ifndef XSM_EMIT_H5DS_H
#define XSM_EMIT_H5DS_H

#include <hdf5.h>

#include "io/chunk_pool.h"

typedef struct xsm_h5ds {
    hid_t ds, type;
    hsize_t pos, n;   /* rows appended, rows in all */
    hsize_t chunk;    /* rows per chunk; 0: no filters (variable-length strings), written as given */
    size_t rowsize;
    unsigned char *buf;
    size_t nbuf;      /* rows gathered in buf */
    hsize_t flushed;  /* rows handed on (pool or HDF5) */
    hsize_t stored;   /* rows the pool stored */
    xsprof_chunk_codec codec;
    int have_codec;
    xsprof_chunk_pool *pool;
} xsm_h5ds;

/* Rows per chunk of every table of merged.h5: compressed the benchmark
 * ring's tables shrink 53x; 8192 rows keep a reader's slice cheap to
 * decompress and the encoding threads' buffers small. */
#define XSM_H5_CHUNK 8192

/* Table `name` under `loc`, n rows of `type` (memory layout; taken, closed
 * by xsm_h5ds_close) stored packed; deflate `level` (0: no filters);
 * `threads` encode (1: the appending thread alone). 0, or -1. */
int xsm_h5ds_create(hid_t loc, const char *name, hid_t type, hsize_t n, int level, int threads, xsm_h5ds *d);
int xsm_h5ds_append(xsm_h5ds *d, const void *rows, hsize_t n);
/* Writes what is gathered and closes; 0, or -1. */
int xsm_h5ds_close(xsm_h5ds *d);

#endif
