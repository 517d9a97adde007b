/* merge/emit/h5.c — merged.h5: every rank's aligned tables concatenated
 * (a `rank` column added, names as ids into one global /strings table),
 * plus /messages (matched p2p, rows index /mpi), /collectives and
 * /collective_members, /ranks, /threads, /comms. Schema "xsprof-merged/1",
 * documented in merge/README.md. Rows are converted in fixed batches, so
 * memory does not grow with the run. Object time stamps are off so that the
 * same run always gives the same bytes (serial and collective mode). */
#include "merge/emit/emit.h"
#include "merge/progress.h"
#include "io/chunk_pool.h"
#include "merge/emit/h5ds.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#define XSM_BATCH 65536

/* XSPROF_MERGE_H5_DEFLATE: 1 (default; higher levels cost more time than
 * they save bytes here) to 9, 0 for no filters at all. */
int xsm_emit_h5_level(void)
{
    const char *v = getenv("XSPROF_MERGE_H5_DEFLATE");
    if (v && *v >= '0' && *v <= '9' && !v[1])
        return *v - '0';
    return 1;
}

typedef struct { int64_t t_begin, t_end; int32_t rank; uint32_t thread, name; uint16_t depth, category; uint32_t nargs; int64_t args; } xsm_h5_region;
typedef struct { int64_t region; int32_t rank; uint32_t key, kind; uint32_t s; int64_t i; double d; uint32_t ndims; int64_t dims[8]; } xsm_h5_arg;
typedef struct { int64_t t_begin, t_end; int32_t rank; uint32_t thread, op, comm; int32_t peer, tag, root; uint64_t bytes_sent, bytes_recv, request, seq, coll_seq; uint8_t kind, coll; uint16_t flags; uint32_t count; } xsm_h5_mpi;
typedef struct { int64_t t_begin, t_end; int32_t rank; uint32_t name, kind, device, stream, correlation, context; uint64_t bytes; uint32_t grid[3], block[3], shared_mem, registers, thread; } xsm_h5_gpu;
typedef struct { int64_t t; int32_t rank; uint32_t name, thread; } xsm_h5_instant;
typedef struct { int64_t t; double value; int32_t rank; uint32_t name, thread; } xsm_h5_counter;
typedef struct { int64_t t; uint64_t ptr, size; int32_t rank; uint32_t thread; uint16_t kind; int16_t device; } xsm_h5_mem;
typedef struct { int32_t src, dst; uint32_t comm; int32_t tag; uint64_t bytes; int64_t send_row, recv_row, recv_call_row, recv_post_row, send_completion_row, send_begin, send_end, recv_end; } xsm_h5_msg;
typedef struct { uint32_t comm, op; uint64_t coll_seq; int32_t kind, root; uint64_t n, members; int64_t first_enter, last_enter, first_exit, last_exit; } xsm_h5_coll;
typedef struct { int64_t coll; int32_t rank; int64_t row, t_begin, t_end; } xsm_h5_member;
typedef struct { int32_t rank, present, truncated, recovered, size; int64_t pid; uint64_t dropped, anomalies; int64_t correction_ns; char host[64]; char end_state[64]; char job_id[64]; } xsm_h5_rank;
typedef struct { int32_t rank; uint32_t tid; int32_t os_tid; uint32_t name; uint64_t dropped; } xsm_h5_thread;
typedef struct { uint32_t id, size, name, parent; uint64_t members; } xsm_h5_comm;

typedef struct xsm_h5 {
    const xsm_emit *e;
    hid_t file;
    int ok;
    void *batch;
    void *src_rows;  /* streaming: one batch of source rows */
    char *err;       /* set by a streaming read that failed */
    size_t errlen;
    int read_failed;
} xsm_h5;

/* bytes of the largest io event row (the args') */
#define XSM_H5_ROW_MAX sizeof(xsprof_io_arg)
_Static_assert(sizeof(xsprof_io_region) <= XSM_H5_ROW_MAX && sizeof(xsprof_io_mpi) <= XSM_H5_ROW_MAX &&
                   sizeof(xsprof_io_gpu) <= XSM_H5_ROW_MAX && sizeof(xsprof_io_instant) <= XSM_H5_ROW_MAX &&
                   sizeof(xsprof_io_counter) <= XSM_H5_ROW_MAX && sizeof(xsprof_io_mem) <= XSM_H5_ROW_MAX,
               "XSM_H5_ROW_MAX holds every event row");
_Static_assert(sizeof(xsm_h5_msgrec) <= XSM_H5_ROW_MAX, "a batch of source rows holds a batch of messages");

/* Compound-type builders: every insert feeds `ok`, checked once. */
#define F(T, m, type) ok &= H5Tinsert(t, #m, HOFFSET(T, m), (type)) >= 0
#define A(T, m, type, n)                                             \
    do {                                                             \
        hsize_t dim_ = (n);                                          \
        hid_t a_ = H5Tarray_create2((type), 1, &dim_);               \
        ok &= a_ >= 0 && H5Tinsert(t, #m, HOFFSET(T, m), a_) >= 0;   \
        if (a_ >= 0)                                                 \
            H5Tclose(a_);                                            \
    } while (0)

static hid_t xsm_h5_fixed_str(size_t n)
{
    hid_t s = H5Tcopy(H5T_C_S1);
    if (s >= 0)
        H5Tset_size(s, n);
    return s;
}

enum { T_REGION, T_ARG, T_MPI, T_GPU, T_INSTANT, T_COUNTER, T_MEM, T_MSG, T_COLL, T_MEMBER, T_RANK, T_THREAD, T_COMM };

static hid_t xsm_h5_type(int which)
{
    static const size_t sizes[] = {sizeof(xsm_h5_region), sizeof(xsm_h5_arg), sizeof(xsm_h5_mpi), sizeof(xsm_h5_gpu),
                                   sizeof(xsm_h5_instant), sizeof(xsm_h5_counter), sizeof(xsm_h5_mem),
                                   sizeof(xsm_h5_msg), sizeof(xsm_h5_coll), sizeof(xsm_h5_member),
                                   sizeof(xsm_h5_rank), sizeof(xsm_h5_thread), sizeof(xsm_h5_comm)};
    hid_t t = H5Tcreate(H5T_COMPOUND, sizes[which]);
    if (t < 0)
        return -1;
    int ok = 1;
    hid_t s64 = -1;
    switch (which) {
    case T_REGION:
        F(xsm_h5_region, t_begin, H5T_NATIVE_INT64); F(xsm_h5_region, t_end, H5T_NATIVE_INT64);
        F(xsm_h5_region, rank, H5T_NATIVE_INT32); F(xsm_h5_region, thread, H5T_NATIVE_UINT32);
        F(xsm_h5_region, name, H5T_NATIVE_UINT32); F(xsm_h5_region, depth, H5T_NATIVE_UINT16);
        F(xsm_h5_region, category, H5T_NATIVE_UINT16); F(xsm_h5_region, nargs, H5T_NATIVE_UINT32);
        F(xsm_h5_region, args, H5T_NATIVE_INT64);
        break;
    case T_ARG:
        F(xsm_h5_arg, region, H5T_NATIVE_INT64); F(xsm_h5_arg, rank, H5T_NATIVE_INT32);
        F(xsm_h5_arg, key, H5T_NATIVE_UINT32); F(xsm_h5_arg, kind, H5T_NATIVE_UINT32);
        F(xsm_h5_arg, s, H5T_NATIVE_UINT32); F(xsm_h5_arg, i, H5T_NATIVE_INT64);
        F(xsm_h5_arg, d, H5T_NATIVE_DOUBLE); F(xsm_h5_arg, ndims, H5T_NATIVE_UINT32);
        A(xsm_h5_arg, dims, H5T_NATIVE_INT64, 8);
        break;
    case T_MPI:
        F(xsm_h5_mpi, t_begin, H5T_NATIVE_INT64); F(xsm_h5_mpi, t_end, H5T_NATIVE_INT64);
        F(xsm_h5_mpi, rank, H5T_NATIVE_INT32); F(xsm_h5_mpi, thread, H5T_NATIVE_UINT32);
        F(xsm_h5_mpi, op, H5T_NATIVE_UINT32); F(xsm_h5_mpi, comm, H5T_NATIVE_UINT32);
        F(xsm_h5_mpi, peer, H5T_NATIVE_INT32); F(xsm_h5_mpi, tag, H5T_NATIVE_INT32);
        F(xsm_h5_mpi, root, H5T_NATIVE_INT32); F(xsm_h5_mpi, bytes_sent, H5T_NATIVE_UINT64);
        F(xsm_h5_mpi, bytes_recv, H5T_NATIVE_UINT64); F(xsm_h5_mpi, request, H5T_NATIVE_UINT64);
        F(xsm_h5_mpi, seq, H5T_NATIVE_UINT64); F(xsm_h5_mpi, coll_seq, H5T_NATIVE_UINT64);
        F(xsm_h5_mpi, kind, H5T_NATIVE_UINT8); F(xsm_h5_mpi, coll, H5T_NATIVE_UINT8);
        F(xsm_h5_mpi, flags, H5T_NATIVE_UINT16); F(xsm_h5_mpi, count, H5T_NATIVE_UINT32);
        break;
    case T_GPU:
        F(xsm_h5_gpu, t_begin, H5T_NATIVE_INT64); F(xsm_h5_gpu, t_end, H5T_NATIVE_INT64);
        F(xsm_h5_gpu, rank, H5T_NATIVE_INT32); F(xsm_h5_gpu, name, H5T_NATIVE_UINT32);
        F(xsm_h5_gpu, kind, H5T_NATIVE_UINT32); F(xsm_h5_gpu, device, H5T_NATIVE_UINT32);
        F(xsm_h5_gpu, stream, H5T_NATIVE_UINT32); F(xsm_h5_gpu, correlation, H5T_NATIVE_UINT32);
        F(xsm_h5_gpu, context, H5T_NATIVE_UINT32); F(xsm_h5_gpu, bytes, H5T_NATIVE_UINT64);
        A(xsm_h5_gpu, grid, H5T_NATIVE_UINT32, 3); A(xsm_h5_gpu, block, H5T_NATIVE_UINT32, 3);
        F(xsm_h5_gpu, shared_mem, H5T_NATIVE_UINT32); F(xsm_h5_gpu, registers, H5T_NATIVE_UINT32);
        F(xsm_h5_gpu, thread, H5T_NATIVE_UINT32);
        break;
    case T_INSTANT:
        F(xsm_h5_instant, t, H5T_NATIVE_INT64); F(xsm_h5_instant, rank, H5T_NATIVE_INT32);
        F(xsm_h5_instant, name, H5T_NATIVE_UINT32); F(xsm_h5_instant, thread, H5T_NATIVE_UINT32);
        break;
    case T_COUNTER:
        F(xsm_h5_counter, t, H5T_NATIVE_INT64); F(xsm_h5_counter, value, H5T_NATIVE_DOUBLE);
        F(xsm_h5_counter, rank, H5T_NATIVE_INT32); F(xsm_h5_counter, name, H5T_NATIVE_UINT32);
        F(xsm_h5_counter, thread, H5T_NATIVE_UINT32);
        break;
    case T_MEM:
        F(xsm_h5_mem, t, H5T_NATIVE_INT64); F(xsm_h5_mem, ptr, H5T_NATIVE_UINT64);
        F(xsm_h5_mem, size, H5T_NATIVE_UINT64); F(xsm_h5_mem, rank, H5T_NATIVE_INT32);
        F(xsm_h5_mem, thread, H5T_NATIVE_UINT32); F(xsm_h5_mem, kind, H5T_NATIVE_UINT16);
        F(xsm_h5_mem, device, H5T_NATIVE_INT16);
        break;
    case T_MSG:
        F(xsm_h5_msg, src, H5T_NATIVE_INT32); F(xsm_h5_msg, dst, H5T_NATIVE_INT32);
        F(xsm_h5_msg, comm, H5T_NATIVE_UINT32); F(xsm_h5_msg, tag, H5T_NATIVE_INT32);
        F(xsm_h5_msg, bytes, H5T_NATIVE_UINT64); F(xsm_h5_msg, send_row, H5T_NATIVE_INT64);
        F(xsm_h5_msg, recv_row, H5T_NATIVE_INT64); F(xsm_h5_msg, recv_call_row, H5T_NATIVE_INT64);
        F(xsm_h5_msg, recv_post_row, H5T_NATIVE_INT64); F(xsm_h5_msg, send_completion_row, H5T_NATIVE_INT64);
        F(xsm_h5_msg, send_begin, H5T_NATIVE_INT64); F(xsm_h5_msg, send_end, H5T_NATIVE_INT64);
        F(xsm_h5_msg, recv_end, H5T_NATIVE_INT64);
        break;
    case T_COLL:
        F(xsm_h5_coll, comm, H5T_NATIVE_UINT32); F(xsm_h5_coll, op, H5T_NATIVE_UINT32);
        F(xsm_h5_coll, coll_seq, H5T_NATIVE_UINT64); F(xsm_h5_coll, kind, H5T_NATIVE_INT32);
        F(xsm_h5_coll, root, H5T_NATIVE_INT32); F(xsm_h5_coll, n, H5T_NATIVE_UINT64);
        F(xsm_h5_coll, members, H5T_NATIVE_UINT64); F(xsm_h5_coll, first_enter, H5T_NATIVE_INT64);
        F(xsm_h5_coll, last_enter, H5T_NATIVE_INT64); F(xsm_h5_coll, first_exit, H5T_NATIVE_INT64);
        F(xsm_h5_coll, last_exit, H5T_NATIVE_INT64);
        break;
    case T_MEMBER:
        F(xsm_h5_member, coll, H5T_NATIVE_INT64); F(xsm_h5_member, rank, H5T_NATIVE_INT32);
        F(xsm_h5_member, row, H5T_NATIVE_INT64); F(xsm_h5_member, t_begin, H5T_NATIVE_INT64);
        F(xsm_h5_member, t_end, H5T_NATIVE_INT64);
        break;
    case T_RANK:
        s64 = xsm_h5_fixed_str(64);
        ok &= s64 >= 0;
        F(xsm_h5_rank, rank, H5T_NATIVE_INT32); F(xsm_h5_rank, present, H5T_NATIVE_INT32);
        F(xsm_h5_rank, truncated, H5T_NATIVE_INT32); F(xsm_h5_rank, recovered, H5T_NATIVE_INT32);
        F(xsm_h5_rank, size, H5T_NATIVE_INT32); F(xsm_h5_rank, pid, H5T_NATIVE_INT64);
        F(xsm_h5_rank, dropped, H5T_NATIVE_UINT64); F(xsm_h5_rank, anomalies, H5T_NATIVE_UINT64);
        F(xsm_h5_rank, correction_ns, H5T_NATIVE_INT64); F(xsm_h5_rank, host, s64);
        F(xsm_h5_rank, end_state, s64); F(xsm_h5_rank, job_id, s64);
        if (s64 >= 0)
            H5Tclose(s64);
        break;
    case T_THREAD:
        F(xsm_h5_thread, rank, H5T_NATIVE_INT32); F(xsm_h5_thread, tid, H5T_NATIVE_UINT32);
        F(xsm_h5_thread, os_tid, H5T_NATIVE_INT32); F(xsm_h5_thread, name, H5T_NATIVE_UINT32);
        F(xsm_h5_thread, dropped, H5T_NATIVE_UINT64);
        break;
    default:
        F(xsm_h5_comm, id, H5T_NATIVE_UINT32); F(xsm_h5_comm, size, H5T_NATIVE_UINT32);
        F(xsm_h5_comm, name, H5T_NATIVE_UINT32); F(xsm_h5_comm, parent, H5T_NATIVE_UINT32);
        F(xsm_h5_comm, members, H5T_NATIVE_UINT64);
    }
    if (!ok) {
        H5Tclose(t);
        return -1;
    }
    return t;
}
#undef F
#undef A

/* A table's rows gather into whole chunks (h5ds.h), encoded by the pool
 * (io/chunk_pool.h; with one thread, a process bound to one core under
 * mpirun, by the appending thread: HDF5's conversion and filters took 1.8x
 * the CPU, hpcc's merged.h5 under `mpirun -np 2` 3.6 s on one core) and
 * stored with H5Dwrite_chunk; a table of one chunk by HDF5: the same bytes. */

/* The system's reason for the first failed write ("File too large"), from
 * the message HDF5's file driver leaves on its error stack ("..., error
 * message = 'File too large', ..."); HDF5 calls clear that stack, so it is
 * read at each failure. Empty when none was seen. */
static _Thread_local char xsm_h5_why[256];

static herr_t xsm_h5_why_walk(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    (void)data;
    const char *k = e->desc ? strstr(e->desc, "error message = '") : NULL;
    if (k && !xsm_h5_why[0]) {
        k += strlen("error message = '");
        size_t len = strcspn(k, "'");
        snprintf(xsm_h5_why, sizeof xsm_h5_why, "%.*s", (int)(len < 200 ? len : 200), k);
    }
    return 0;
}

static int xsm_h5_failed(void)
{
    if (!xsm_h5_why[0])
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, xsm_h5_why_walk, NULL);
    return -1;
}

/* The pool's writer: one encoded chunk, on the appending thread, in order. */
static xsprof_status xsm_h5ds_store(void *user, int table, size_t n, const void *bytes, size_t len)
{
    (void)table;
    xsm_h5ds *d = user;
    hsize_t off[1] = {d->stored};
    /* filter mask 0: every filter of the pipeline was applied */
    if (H5Dwrite_chunk(d->ds, H5P_DEFAULT, 0, off, len, bytes) < 0) {
        xsm_h5_failed();
        return XSPROF_ERR_IO;
    }
    d->stored += n;
    return XSPROF_OK;
}

int xsm_h5ds_create(hid_t loc, const char *name, hid_t type, hsize_t n, int level, int threads, xsm_h5ds *d)
{
    memset(d, 0, sizeof *d);
    d->type = type;
    d->n = n;
    d->ds = -1;
    if (type < 0)
        return -1;
    int vlen = H5Tdetect_class(type, H5T_VLEN) > 0 || (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0);
    hsize_t dims[1] = {n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[1] = {n ? (n < XSM_H5_CHUNK ? n : XSM_H5_CHUNK) : 1};
    int ok = space >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0; /* same run, same bytes */
    if (n && ok)
        ok = H5Pset_chunk(dcpl, 1, chunk) >= 0;
    if (n && ok && !vlen) {
        if (level)
            ok = H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, (unsigned)level) >= 0 && H5Pset_fletcher32(dcpl) >= 0;
        d->chunk = chunk[0];
        d->rowsize = H5Tget_size(type);
        d->buf = malloc(d->chunk * d->rowsize);
        ok = ok && d->buf;
    }
    /* The file type is packed: no padding bytes (whose contents are not
     * defined in memory) reach the file, and files are smaller. */
    hid_t ftype = H5Tcopy(type);
    if (ftype >= 0 && H5Tget_class(ftype) == H5T_COMPOUND)
        H5Tpack(ftype);
    d->ds = ok && ftype >= 0 ? H5Dcreate2(loc, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    if (d->ds >= 0 && d->chunk && level) {
        d->have_codec = xsprof_chunk_codec_init(&d->codec, type, ftype, d->chunk, level) == XSPROF_OK;
        if (d->have_codec && n > d->chunk) /* one chunk gains nothing from threads */
            d->pool = xsprof_chunk_pool_create(threads > 1 ? (unsigned)threads : 1, xsm_h5ds_store, d);
    }
    if (ftype >= 0)
        H5Tclose(ftype);
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return d->ds < 0 ? -1 : 0;
}

static int xsm_h5ds_open(xsm_h5 *h, const char *name, hid_t type, hsize_t n, xsm_h5ds *d)
{
    return xsm_h5ds_create(h->file, name, type, n, h->e->h5share ? h->e->h5share->level : xsm_emit_h5_level(),
                           xsm_emit_threads(h->e), d);
}

/* Rows [flushed, flushed + n) through HDF5 (its filters, if any). */
static int xsm_h5ds_write(xsm_h5ds *d, const void *rows, hsize_t n)
{
    hsize_t start[1] = {d->flushed}, count[1] = {n};
    hid_t fs = H5Dget_space(d->ds);
    hid_t ms = H5Screate_simple(1, count, NULL);
    int bad = fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
              H5Dwrite(d->ds, d->type, ms, fs, H5P_DEFAULT, rows) < 0;
    if (fs >= 0)
        H5Sclose(fs);
    if (ms >= 0)
        H5Sclose(ms);
    d->flushed += n;
    return bad ? xsm_h5_failed() : 0;
}

/* Hands the gathered rows on as one chunk. */
static int xsm_h5ds_flush(xsm_h5ds *d)
{
    size_t n = d->nbuf;
    d->nbuf = 0;
    if (!n)
        return 0;
    if (!d->pool)
        return xsm_h5ds_write(d, d->buf, n);
    int failed_table;
    d->flushed += n;
    return xsprof_chunk_pool_submit(d->pool, 0, &d->codec, d->buf, n, &failed_table) == XSPROF_OK ? 0 : -1;
}

int xsm_h5ds_append(xsm_h5ds *d, const void *rows, hsize_t n)
{
    if (!n)
        return 0;
    d->pos += n;
    if (!d->chunk)
        return xsm_h5ds_write(d, rows, n);
    const unsigned char *p = rows;
    while (n) {
        size_t k = d->chunk - d->nbuf < n ? (size_t)(d->chunk - d->nbuf) : (size_t)n;
        memcpy(d->buf + d->nbuf * d->rowsize, p, k * d->rowsize);
        d->nbuf += k;
        p += k * d->rowsize;
        n -= k;
        if (d->nbuf == d->chunk && xsm_h5ds_flush(d) != 0)
            return -1;
    }
    return 0;
}

int xsm_h5ds_close(xsm_h5ds *d)
{
    int bad = 0, failed_table;
    if (d->ds >= 0 && d->chunk)
        bad = xsm_h5ds_flush(d) != 0 || (d->pool && xsprof_chunk_pool_finish(d->pool, &failed_table) != XSPROF_OK);
    xsprof_chunk_pool_destroy(d->pool);
    if (d->have_codec)
        xsprof_chunk_codec_free(&d->codec);
    free(d->buf);
    if (d->ds >= 0 && H5Dclose(d->ds) < 0)
        bad = xsm_h5_failed();
    if (d->type >= 0)
        H5Tclose(d->type);
    memset(d, 0, sizeof *d);
    d->ds = d->type = -1;
    return bad ? -1 : 0;
}

static int xsm_h5_attr_str(hid_t obj, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    int bad = a < 0 || H5Awrite(a, t, v) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    return bad ? -1 : 0;
}

static int xsm_h5_attr_num(hid_t obj, const char *name, hid_t type, const void *v)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
    int bad = a < 0 || H5Awrite(a, type, v) < 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    return bad ? -1 : 0;
}

/* Write one per-rank event table: `conv` converts n rows of rank r (src:
 * the first, in io layout) into the batch. Global row offsets are implied
 * by rank order. The rows come from the model, or from the streaming
 * mode's reader (e->h5src). */
typedef void (*xsm_conv_fn)(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux);

static uint64_t xsm_h5_rows(const xsm_emit *e, size_t r, int table)
{
    const xsprof_rank_data *d = &e->run->ranks[r].d;
    if (e->h5src && table != XSPROF_IO_T_COUNT)
        return e->h5src->rows(e->h5src_ctx, (int32_t)r, table);
    switch (table) {
    case XSPROF_IO_T_REGIONS: return d->nregions;
    case XSPROF_IO_T_ARGS: return d->nargs;
    case XSPROF_IO_T_MPI: return d->nmpi;
    case XSPROF_IO_T_GPU: return d->ngpu;
    case XSPROF_IO_T_INSTANTS: return d->ninstants;
    case XSPROF_IO_T_COUNTERS: return d->ncounters;
    case XSPROF_IO_T_MEM: return d->nmem;
    default: return d->nthreads; /* XSM_T_THREADS: never streamed */
    }
}

static const void *xsm_h5_model_rows(const xsprof_rank_data *d, int table, size_t i)
{
    switch (table) {
    case XSPROF_IO_T_REGIONS: return &d->regions[i];
    case XSPROF_IO_T_ARGS: return &d->args[i];
    case XSPROF_IO_T_MPI: return &d->mpi[i];
    case XSPROF_IO_T_GPU: return &d->gpu[i];
    case XSPROF_IO_T_INSTANTS: return &d->instants[i];
    case XSPROF_IO_T_COUNTERS: return &d->counters[i];
    case XSPROF_IO_T_MEM: return &d->mem[i];
    default: return &d->threads[i];
    }
}

/* the threads table: from the model in both modes; the messages: the
 * model's matched messages (run->msgs), not a rank's rows */
enum { XSM_T_THREADS = XSPROF_IO_T_COUNT, XSM_T_MSGS };
_Static_assert(sizeof(xsm_h5_msg) <= sizeof(xsm_h5_arg), "a helper's chunk of rows holds a chunk of messages");

/* Message rows: from the streaming reader's records (in, with their
 * times) or the model's messages (msgs, times from their rows); mpi_off:
 * each rank's first /mpi row. */
static void xsm_conv_msgs(const xsm_emit *e, const xsm_h5_msgrec *in, const xsm_message *msgs, size_t n,
                          xsm_h5_msg *o, const int64_t *mpi_off)
{
    const xsm_run *run = e->run;
    for (size_t q = 0; q < n; q++) {
        const xsm_message *m = in ? &in[q].m : &msgs[q];
        int64_t sb, se, ve;
        if (in) {
            sb = in[q].send_begin;
            se = in[q].send_end;
            ve = in[q].recv_end;
        } else {
            sb = run->ranks[m->src].d.mpi[m->send_row].t_begin;
            se = run->ranks[m->src].d.mpi[m->send_row].t_end;
            ve = run->ranks[m->dst].d.mpi[m->recv_row].t_end;
        }
        int64_t so = mpi_off[m->src], vo = mpi_off[m->dst];
        o[q] = (xsm_h5_msg){m->src, m->dst, m->comm, m->tag, m->bytes, so + (int64_t)m->send_row,
                            vo + (int64_t)m->recv_row, vo + (int64_t)m->recv_call_row,
                            m->recv_post_row >= 0 ? vo + m->recv_post_row : -1,
                            m->send_completion_row >= 0 ? so + m->send_completion_row : -1, sb, se, ve};
    }
}

/* Rows of a table over the present ranks. */
static uint64_t xsm_h5_total(const xsm_emit *e, int table)
{
    if (table == XSM_T_MSGS)
        return e->h5src ? e->h5src_nmsgs : e->run->nmsgs;
    uint64_t total = 0;
    for (size_t r = 0; r < e->run->nranks; r++)
        if (e->run->ranks[r].present)
            total += xsm_h5_rows(e, r, table);
    return total;
}

/* Each rank's first row of a table (present ranks in rank order) and,
 * at off[nranks], the rows in all. NULL when out of memory. */
static uint64_t *xsm_h5_offsets(const xsm_emit *e, int table)
{
    const xsm_run *run = e->run;
    uint64_t *off = malloc((run->nranks + 1) * sizeof *off), total = 0;
    for (size_t r = 0; off && r < run->nranks; r++) {
        off[r] = total;
        if (run->ranks[r].present)
            total += xsm_h5_rows(e, r, table);
    }
    if (off)
        off[run->nranks] = total;
    return off;
}

/* Collective mode: whether the chunks of a table of `total` rows are
 * encoded by the helpers (xsm_h5_share): as the writer encodes them itself
 * (filters on, more than one chunk, a codec for the type), decided alike
 * in every process; *codec is then set up (free it). */
static int xsm_h5_shared(const xsm_emit *e, int type, uint64_t total, xsprof_chunk_codec *codec)
{
    if (!e->h5share || e->h5src || !e->h5share->level || total <= XSM_H5_CHUNK)
        return 0;
    hid_t t = xsm_h5_type(type), ft = t >= 0 ? H5Tcopy(t) : -1;
    int ok = ft >= 0 && H5Tpack(ft) >= 0 &&
             xsprof_chunk_codec_init(codec, t, ft, XSM_H5_CHUNK, e->h5share->level) == XSPROF_OK;
    if (ft >= 0)
        H5Tclose(ft);
    if (t >= 0)
        H5Tclose(t);
    return ok;
}

/* Rows [first, first + n) of a table, across the ranks (off: from
 * xsm_h5_offsets; the messages: aux is each rank's first /mpi row),
 * converted into out, zeroed first (padding bytes too: identical files). */
static void xsm_h5_build(const xsm_emit *e, int table, size_t rowsize, xsm_conv_fn conv, const int64_t *aux,
                         const uint64_t *off, uint64_t first, size_t n, unsigned char *out)
{
    const xsm_run *run = e->run;
    memset(out, 0, n * rowsize);
    if (table == XSM_T_MSGS) {
        xsm_conv_msgs(e, NULL, run->msgs + first, n, (xsm_h5_msg *)(void *)out, aux);
        return;
    }
    size_t lo = 0, hi = run->nranks; /* the rank holding `first`: off[r] <= first < off[r + 1] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= first)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t r = lo, done = 0; r < run->nranks && done < n; r++) {
        uint64_t pos = first + done, end = off[r + 1];
        if (pos >= end)
            continue; /* an absent or empty rank */
        size_t k = end - pos < n - done ? (size_t)(end - pos) : n - done;
        conv(e, (int32_t)r, xsm_h5_model_rows(&run->ranks[r].d, table, (size_t)(pos - off[r])), k,
             out + done * rowsize, aux ? aux + r : NULL);
        done += k;
    }
}

/* The writer's side of a shared table: chunk c from helper c % n (itself
 * for 0), stored in order: its own chunks encoded by the dataset's pool
 * (its threads), the helpers' queued between them as they are. After a
 * failure (here, earlier, or a helper's) the helpers' chunks are still
 * received, so that none waits forever. */
static int xsm_h5_table_shared(xsm_h5 *h, xsm_h5ds *d, const xsprof_chunk_codec *codec, int table, size_t rowsize,
                               xsm_conv_fn conv, const int64_t *aux, const uint64_t *off, uint64_t total, int failed)
{
    const xsm_h5_share *sh = h->e->h5share;
    size_t cap = xsprof_chunk_encoded_max(codec);
    unsigned char *rows = failed ? NULL : malloc(XSM_H5_CHUNK * rowsize), *out = failed ? NULL : malloc(cap);
    int bad = failed || !rows || !out || !d->pool, ft;
    for (uint64_t c = 0, first = 0; first < total; c++, first += XSM_H5_CHUNK) {
        size_t n = total - first < XSM_H5_CHUNK ? (size_t)(total - first) : XSM_H5_CHUNK;
        int from = (int)(c % (uint64_t)sh->n);
        if (from != 0) {
            size_t len = sh->recv(sh->ctx, from, bad ? NULL : out, bad ? 0 : cap);
            if (!bad && (len == 0 || len == (size_t)-1)) {
                snprintf(xsm_h5_why, sizeof xsm_h5_why, "%s", len ? "a helper's chunk is too long"
                                                                  : "a helper process ran out of memory");
                bad = 1;
            } else if (!bad) {
                bad = xsprof_chunk_pool_submit_encoded(d->pool, 0, n, out, len, &ft) != XSPROF_OK;
            }
        } else if (!bad) {
            xsm_h5_build(h->e, table, rowsize, conv, aux, off, first, n, rows);
            bad = xsprof_chunk_pool_submit(d->pool, 0, &d->codec, rows, n, &ft) != XSPROF_OK;
        }
        xsm_progress_step(n);
    }
    if (!bad)
        bad = xsprof_chunk_pool_finish(d->pool, &ft) != XSPROF_OK;
    d->pos = d->flushed = d->n; /* nothing left for xsm_h5ds_close */
    free(rows);
    free(out);
    return bad ? -1 : 0;
}

/* A shared table (xsm_h5_shared said so and set up codec, freed here):
 * created and its chunks stored by xsm_h5_table_shared, also after a
 * failure (failed), so that the helpers' chunks are received. */
static int xsm_h5_shared_write(xsm_h5 *h, const char *name, int type, size_t rowsize, int table, xsm_conv_fn conv,
                               const int64_t *aux, hsize_t total, xsprof_chunk_codec *codec, int failed)
{
    xsm_h5ds d;
    uint64_t *off = failed || table == XSM_T_MSGS ? NULL : xsm_h5_offsets(h->e, table);
    memset(&d, 0, sizeof d);
    d.ds = d.type = -1;
    int bad = failed || (!off && table != XSM_T_MSGS) || xsm_h5ds_open(h, name, xsm_h5_type(type), total, &d) != 0;
    bad = xsm_h5_table_shared(h, &d, codec, table, rowsize, conv, aux, off, total, bad) != 0 || bad;
    bad = xsm_h5ds_close(&d) != 0 || bad;
    xsprof_chunk_codec_free(codec);
    free(off);
    return bad ? -1 : 0;
}

/* failed: an earlier part failed; a shared table is still walked (the
 * helpers' chunks received), any other skipped. */
static int xsm_h5_table(xsm_h5 *h, const char *name, int type, size_t rowsize, int table, xsm_conv_fn conv,
                        const int64_t *aux, int failed)
{
    const xsm_run *run = h->e->run;
    const xsm_h5src_ops *src = table == XSM_T_THREADS ? NULL : h->e->h5src;
    hsize_t total = xsm_h5_total(h->e, table);
    xsprof_chunk_codec codec;
    xsm_h5ds d;
    if (xsm_h5_shared(h->e, type, total, &codec))
        return xsm_h5_shared_write(h, name, type, rowsize, table, conv, aux, total, &codec, failed);
    if (failed)
        return -1;
    if (xsm_h5ds_open(h, name, xsm_h5_type(type), total, &d)) {
        xsm_h5ds_close(&d);
        return -1;
    }
    int bad = 0;
    for (size_t r = 0; r < run->nranks && !bad; r++) {
        if (!run->ranks[r].present)
            continue;
        size_t n = xsm_h5_rows(h->e, r, table);
        for (size_t i = 0; i < n && !bad; i += XSM_BATCH) {
            size_t k = n - i < XSM_BATCH ? n - i : XSM_BATCH;
            const void *rows = src ? h->src_rows : xsm_h5_model_rows(&run->ranks[r].d, table, i);
            if (src && src->read(h->e->h5src_ctx, (int32_t)r, table, i, k, h->src_rows, h->err, h->errlen)) {
                h->read_failed = bad = 1;
                break;
            }
            memset(h->batch, 0, k * rowsize); /* padding bytes too: identical files */
            conv(h->e, (int32_t)r, rows, k, h->batch, aux ? aux + r : NULL);
            bad = xsm_h5ds_append(&d, h->batch, k) != 0;
            xsm_progress_step(k);
        }
    }
    return xsm_h5ds_close(&d) || bad ? -1 : 0;
}

/* aux[r] for regions: first /args row of rank r; for args: first /regions row. */
static void xsm_conv_region(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    xsm_h5_region *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_region *g = (const xsprof_io_region *)src + k;
        o[k] = (xsm_h5_region){g->t_begin, g->t_end, r, g->thread, xsm_emit_gid(e, r, g->name), g->depth,
                               g->category, g->nargs, g->args >= 0 ? *aux + g->args : -1};
    }
}

static void xsm_conv_arg(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    xsm_h5_arg *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_arg *a = (const xsprof_io_arg *)src + k;
        o[k].region = a->region >= 0 ? *aux + a->region : -1;
        o[k].rank = r;
        o[k].key = xsm_emit_gid(e, r, a->key);
        o[k].kind = a->kind;
        o[k].s = a->kind == 3 ? xsm_emit_gid(e, r, a->s) : a->s;
        o[k].i = a->i;
        o[k].d = a->d;
        o[k].ndims = a->ndims;
        memcpy(o[k].dims, a->dims, sizeof o[k].dims);
    }
}

static void xsm_conv_mpi(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    xsm_h5_mpi *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_mpi *m = (const xsprof_io_mpi *)src + k;
        o[k] = (xsm_h5_mpi){m->t_begin, m->t_end, r, m->thread, xsm_emit_gid(e, r, m->op), m->comm, m->peer, m->tag,
                            m->root, m->bytes_sent, m->bytes_recv, m->request, m->seq, m->coll_seq, m->kind, m->coll,
                            m->flags, m->count};
    }
}

static void xsm_conv_gpu(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    xsm_h5_gpu *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_gpu *g = (const xsprof_io_gpu *)src + k;
        o[k] = (xsm_h5_gpu){g->t_begin, g->t_end, r, xsm_emit_gid(e, r, g->name), g->kind, g->device, g->stream,
                            g->correlation, g->context, g->bytes, {g->grid[0], g->grid[1], g->grid[2]},
                            {g->block[0], g->block[1], g->block[2]}, g->shared_mem, g->registers, g->thread};
    }
}

static void xsm_conv_instant(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    const xsprof_io_instant *x = src;
    xsm_h5_instant *o = out;
    for (size_t k = 0; k < n; k++)
        o[k] = (xsm_h5_instant){x[k].t, r, xsm_emit_gid(e, r, x[k].name), x[k].thread};
}

static void xsm_conv_counter(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    const xsprof_io_counter *x = src;
    xsm_h5_counter *o = out;
    for (size_t k = 0; k < n; k++)
        o[k] = (xsm_h5_counter){x[k].t, x[k].value, r, xsm_emit_gid(e, r, x[k].name), x[k].thread};
}

static void xsm_conv_mem(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    (void)e;
    xsm_h5_mem *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_mem *m = (const xsprof_io_mem *)src + k;
        o[k] = (xsm_h5_mem){m->t, m->ptr, m->size, r, m->thread, m->kind, m->device};
    }
}

static void xsm_conv_thread(const xsm_emit *e, int32_t r, const void *src, size_t n, void *out, const int64_t *aux)
{
    (void)aux;
    xsm_h5_thread *o = out;
    for (size_t k = 0; k < n; k++) {
        const xsprof_io_thread *t = (const xsprof_io_thread *)src + k;
        o[k] = (xsm_h5_thread){r, t->tid, t->os_tid, xsm_emit_gid(e, r, t->name), t->dropped};
    }
}

static int xsm_h5_strings(xsm_h5 *h)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    xsm_h5ds d;
    if (xsm_h5ds_open(h, "strings", t, h->e->names.n, &d)) {
        xsm_h5ds_close(&d);
        return -1;
    }
    int bad = xsm_h5ds_append(&d, h->e->names.str, h->e->names.n) != 0;
    return xsm_h5ds_close(&d) || bad ? -1 : 0;
}

static int xsm_h5_ranks(xsm_h5 *h)
{
    const xsm_run *run = h->e->run;
    int bad = 0;
    xsm_h5ds d;
    xsm_h5_rank *rk = calloc(run->nranks + 1, sizeof *rk);
    if (!rk)
        return -1;
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *x = &run->ranks[r].d;
        rk[r].rank = (int32_t)r;
        rk[r].present = run->ranks[r].present;
        rk[r].truncated = x->truncated;
        rk[r].recovered = x->recovered;
        rk[r].size = x->size;
        rk[r].pid = x->pid;
        rk[r].dropped = x->dropped;
        rk[r].anomalies = x->anomalies;
        rk[r].correction_ns = run->ranks[r].correction_ns;
        snprintf(rk[r].host, sizeof rk[r].host, "%s", x->host);
        snprintf(rk[r].end_state, sizeof rk[r].end_state, "%s", x->end_state);
        snprintf(rk[r].job_id, sizeof rk[r].job_id, "%s", x->job_id);
    }
    bad |= xsm_h5ds_open(h, "ranks", xsm_h5_type(T_RANK), run->nranks, &d) || xsm_h5ds_append(&d, rk, run->nranks);
    bad |= xsm_h5ds_close(&d);
    free(rk);
    return bad ? -1 : 0;
}

/* The matched messages: chunks encoded by the helpers too (as the event
 * tables) when shared, walked after a failure (failed) all the same. */
static int xsm_h5_messages(xsm_h5 *h, const int64_t *mpi_off, int failed)
{
    const xsm_emit *e = h->e;
    uint64_t nmsgs = xsm_h5_total(e, XSM_T_MSGS);
    xsprof_chunk_codec codec;
    if (xsm_h5_shared(e, T_MSG, nmsgs, &codec))
        return xsm_h5_shared_write(h, "messages", T_MSG, sizeof(xsm_h5_msg), XSM_T_MSGS, NULL, mpi_off, nmsgs, &codec,
                                   failed);
    if (failed)
        return -1;
    xsm_h5ds dm;
    /* streaming: the messages and their times from the reader, in batches */
    const xsm_h5src_ops *src = e->h5src;
    int bad = xsm_h5ds_open(h, "messages", xsm_h5_type(T_MSG), nmsgs, &dm);
    for (size_t i = 0; i < nmsgs && !bad; i += XSM_BATCH) {
        size_t k = nmsgs - i < XSM_BATCH ? nmsgs - i : XSM_BATCH;
        xsm_h5_msg *o = h->batch;
        xsm_h5_msgrec *in = src ? h->src_rows : NULL;
        if (src && src->msgs(e->h5src_ctx, i, k, in, h->err, h->errlen)) {
            h->read_failed = bad = 1;
            break;
        }
        memset(o, 0, k * sizeof *o);
        xsm_conv_msgs(e, in, in ? NULL : e->run->msgs + i, k, o, mpi_off);
        bad |= xsm_h5ds_append(&dm, o, k);
    }
    bad |= xsm_h5ds_close(&dm);
    return bad ? -1 : 0;
}

/* The collectives, their members and the communicators. */
static int xsm_h5_colls(xsm_h5 *h, const int64_t *mpi_off)
{
    const xsm_emit *e = h->e;
    const xsm_run *run = e->run;
    int bad = 0;
    xsm_h5ds d;
    /* collectives and their members */
    size_t nmembers = 0;
    for (size_t i = 0; i < run->ncolls; i++)
        nmembers += run->colls[i].n;
    xsm_h5_coll *co = calloc(run->ncolls + 1, sizeof *co);
    xsm_h5_member *mb = calloc(nmembers + 1, sizeof *mb);
    if (!co || !mb) {
        free(co);
        free(mb);
        return -1;
    }
    size_t q = 0;
    for (size_t i = 0; i < run->ncolls; i++) {
        const xsm_collective *c = &run->colls[i];
        co[i] = (xsm_h5_coll){c->comm, c->n ? xsm_emit_gid(e, c->ranks[0], c->op) : 0, c->coll_seq, c->coll_kind,
                              c->root, c->n, q, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN};
        for (size_t j = 0; j < c->n; j++, q++) {
            /* streaming keeps the members' times beside them (no model rows) */
            int64_t tb = c->tb ? c->tb[j] : run->ranks[c->ranks[j]].d.mpi[c->rows[j]].t_begin;
            int64_t te = c->tb ? c->te[j] : run->ranks[c->ranks[j]].d.mpi[c->rows[j]].t_end;
            mb[q] = (xsm_h5_member){(int64_t)i, c->ranks[j], mpi_off[c->ranks[j]] + (int64_t)c->rows[j], tb, te};
            if (tb < co[i].first_enter) co[i].first_enter = tb;
            if (tb > co[i].last_enter) co[i].last_enter = tb;
            if (te < co[i].first_exit) co[i].first_exit = te;
            if (te > co[i].last_exit) co[i].last_exit = te;
        }
    }
    bad |= xsm_h5ds_open(h, "collectives", xsm_h5_type(T_COLL), run->ncolls, &d) || xsm_h5ds_append(&d, co, run->ncolls);
    bad |= xsm_h5ds_close(&d);
    bad |= xsm_h5ds_open(h, "collective_members", xsm_h5_type(T_MEMBER), nmembers, &d) ||
           xsm_h5ds_append(&d, mb, nmembers);
    bad |= xsm_h5ds_close(&d);
    free(co);
    free(mb);
    /* communicators: the first definition of each id, in id order of appearance */
    size_t ncomm = 0, nmem = 0;
    for (size_t r = 0; r < run->nranks; r++) {
        ncomm += run->ranks[r].d.ncomms;
        nmem += run->ranks[r].d.ncomm_members;
    }
    xsm_h5_comm *cm = calloc(ncomm + 1, sizeof *cm);
    int32_t *members = calloc(nmem + 1, sizeof *members);
    if (!cm || !members) {
        free(cm);
        free(members);
        return -1;
    }
    size_t nc = 0, nm = 0;
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *x = &run->ranks[r].d;
        for (size_t i = 0; i < x->ncomms; i++) {
            size_t k = 0;
            while (k < nc && cm[k].id != x->comms[i].id)
                k++;
            if (k < nc)
                continue;
            cm[nc] = (xsm_h5_comm){x->comms[i].id, 0, xsm_emit_gid(e, (int32_t)r, x->comms[i].name), x->comms[i].parent, nm};
            for (uint32_t j = 0; j < x->comms[i].size && x->comms[i].members + j < x->ncomm_members; j++)
                members[nm++] = x->comm_members[x->comms[i].members + j];
            cm[nc].size = (uint32_t)(nm - cm[nc].members);
            nc++;
        }
    }
    bad |= xsm_h5ds_open(h, "comms", xsm_h5_type(T_COMM), nc, &d) || xsm_h5ds_append(&d, cm, nc);
    bad |= xsm_h5ds_close(&d);
    bad |= xsm_h5ds_open(h, "comm_members", H5Tcopy(H5T_NATIVE_INT32), nm, &d) || xsm_h5ds_append(&d, members, nm);
    bad |= xsm_h5ds_close(&d);
    free(cm);
    free(members);
    return bad ? -1 : 0;
}

static int xsm_h5_attrs(xsm_h5 *h)
{
    const xsm_run *run = h->e->run;
    int bad = 0;
    int64_t v;
    uint64_t u;
    double dv;
    bad |= xsm_h5_attr_str(h->file, "schema", "xsprof-merged/1");
    bad |= xsm_h5_attr_str(h->file, "job_id", run->job_id);
    bad |= xsm_h5_attr_str(h->file, "command", run->command);
    bad |= xsm_h5_attr_str(h->file, "time_unit", "ns since the job's first event, reference clock");
    v = (int64_t)run->nranks; bad |= xsm_h5_attr_num(h->file, "nranks", H5T_NATIVE_INT64, &v);
    v = run->t_end; bad |= xsm_h5_attr_num(h->file, "t_end_ns", H5T_NATIVE_INT64, &v);
    v = run->t0_ref_ns; bad |= xsm_h5_attr_num(h->file, "t0_ref_ns", H5T_NATIVE_INT64, &v);
    v = run->min_latency_ns; bad |= xsm_h5_attr_num(h->file, "min_latency_ns", H5T_NATIVE_INT64, &v);
    u = run->clock.violations_before; bad |= xsm_h5_attr_num(h->file, "clock_violations_before", H5T_NATIVE_UINT64, &u);
    u = run->clock.violations_after; bad |= xsm_h5_attr_num(h->file, "clock_violations_after", H5T_NATIVE_UINT64, &u);
    v = run->clock.max_correction_ns; bad |= xsm_h5_attr_num(h->file, "clock_max_correction_ns", H5T_NATIVE_INT64, &v);
    dv = run->clock.max_residual_us; bad |= xsm_h5_attr_num(h->file, "clock_max_residual_us", H5T_NATIVE_DOUBLE, &dv);
    u = run->unmatched_sends; bad |= xsm_h5_attr_num(h->file, "unmatched_sends", H5T_NATIVE_UINT64, &u);
    u = run->unmatched_recvs; bad |= xsm_h5_attr_num(h->file, "unmatched_recvs", H5T_NATIVE_UINT64, &u);
    u = run->incomplete_colls; bad |= xsm_h5_attr_num(h->file, "incomplete_collectives", H5T_NATIVE_UINT64, &u);
    return bad ? -1 : 0;
}

/* The event tables, in file order (the helpers walk the same list).
 * aux: 1 = each rank's first /args row, 2 = its first /regions row. */
typedef struct xsm_h5_tab {
    const char *name;
    int type;
    size_t rowsize;
    int table;
    xsm_conv_fn conv;
    int aux;
} xsm_h5_tab;

static const xsm_h5_tab xsm_h5_tables[] = {
    {"regions", T_REGION, sizeof(xsm_h5_region), XSPROF_IO_T_REGIONS, xsm_conv_region, 1},
    {"args", T_ARG, sizeof(xsm_h5_arg), XSPROF_IO_T_ARGS, xsm_conv_arg, 2},
    {"mpi", T_MPI, sizeof(xsm_h5_mpi), XSPROF_IO_T_MPI, xsm_conv_mpi, 0},
    {"gpu", T_GPU, sizeof(xsm_h5_gpu), XSPROF_IO_T_GPU, xsm_conv_gpu, 0},
    {"instants", T_INSTANT, sizeof(xsm_h5_instant), XSPROF_IO_T_INSTANTS, xsm_conv_instant, 0},
    {"counters", T_COUNTER, sizeof(xsm_h5_counter), XSPROF_IO_T_COUNTERS, xsm_conv_counter, 0},
    {"memory", T_MEM, sizeof(xsm_h5_mem), XSPROF_IO_T_MEM, xsm_conv_mem, 0},
    {"threads", T_THREAD, sizeof(xsm_h5_thread), XSM_T_THREADS, xsm_conv_thread, 0},
};

/* A table's aux array (see xsm_h5_tab). */
static const int64_t *xsm_h5_aux(const xsm_h5_tab *t, const int64_t *reg_off, const int64_t *arg_off)
{
    return t->aux == 1 ? arg_off : t->aux == 2 ? reg_off : NULL;
}

/* Each rank's first row of /regions (reg) and /args (arg). */
static void xsm_h5_first_rows(const xsm_emit *e, int64_t *reg, int64_t *arg)
{
    int64_t ro = 0, ao = 0;
    for (size_t r = 0; r < e->run->nranks; r++) {
        reg[r] = ro;
        arg[r] = ao;
        if (e->run->ranks[r].present) {
            ro += (int64_t)xsm_h5_rows(e, r, XSPROF_IO_T_REGIONS);
            ao += (int64_t)xsm_h5_rows(e, r, XSPROF_IO_T_ARGS);
        }
    }
}

/* Each rank's first /mpi row (the messages' rows point there). */
static void xsm_h5_mpi_first_rows(const xsm_emit *e, int64_t *mpi)
{
    int64_t mo = 0;
    for (size_t r = 0; r < e->run->nranks; r++) {
        mpi[r] = mo;
        if (e->run->ranks[r].present)
            mo += (int64_t)xsm_h5_rows(e, r, XSPROF_IO_T_MPI);
    }
}

/* A helper's pool writes its chunks by sending them to the writer, in
 * order, from the submitting thread. */
typedef struct xsm_h5_sink {
    const xsm_h5_share *sh;
    uint64_t sent;
} xsm_h5_sink;

static xsprof_status xsm_h5_sink_send(void *user, int table, size_t n, const void *bytes, size_t len)
{
    (void)table;
    (void)n;
    xsm_h5_sink *k = user;
    k->sh->send(k->sh->ctx, bytes, len);
    k->sent++;
    return XSPROF_OK;
}

/* A helper's share of one table: chunks me, me + n, ... built and
 * encoded on its pool, sent in order; after a failure (*bad) an empty
 * chunk for each, so that the writer never waits. */
static void xsm_h5_help_table(const xsm_emit *e, int type, size_t rowsize, int table, xsm_conv_fn conv,
                              const int64_t *aux, unsigned char *rows, int *bad)
{
    const xsm_h5_share *sh = e->h5share;
    uint64_t total = xsm_h5_total(e, table);
    xsprof_chunk_codec codec;
    int ft;
    if (!xsm_h5_shared(e, type, total, &codec))
        return;
    uint64_t *off = *bad || table == XSM_T_MSGS ? NULL : xsm_h5_offsets(e, table);
    xsm_h5_sink sink = {sh, 0};
    int ok = !*bad && (off || table == XSM_T_MSGS);
    xsprof_chunk_pool *pool =
        ok ? xsprof_chunk_pool_create((unsigned)xsm_emit_threads(e), xsm_h5_sink_send, &sink) : NULL;
    *bad = *bad || !pool;
    uint64_t owned = 0;
    for (uint64_t c = (uint64_t)sh->me; c * XSM_H5_CHUNK < total; c += (uint64_t)sh->n, owned++) {
        uint64_t first = c * XSM_H5_CHUNK;
        size_t n = total - first < XSM_H5_CHUNK ? (size_t)(total - first) : XSM_H5_CHUNK;
        if (!*bad) {
            xsm_h5_build(e, table, rowsize, conv, aux, off, first, n, rows);
            *bad = xsprof_chunk_pool_submit(pool, 0, &codec, rows, n, &ft) != XSPROF_OK;
        }
    }
    if (!*bad)
        *bad = xsprof_chunk_pool_finish(pool, &ft) != XSPROF_OK;
    xsprof_chunk_pool_destroy(pool); /* after a failure: what it held is dropped */
    while (sink.sent < owned) {      /* ... and said: an empty chunk for each */
        sh->send(sh->ctx, NULL, 0);
        sink.sent++;
    }
    free(off);
    xsprof_chunk_codec_free(&codec);
}

int xsm_emit_h5_help(const xsm_emit *e)
{
    const xsm_run *run = e->run;
    int64_t *reg_off = calloc(run->nranks + 1, sizeof *reg_off);
    int64_t *arg_off = calloc(run->nranks + 1, sizeof *arg_off);
    int64_t *mpi_off = calloc(run->nranks + 1, sizeof *mpi_off);
    unsigned char *rows = malloc(XSM_H5_CHUNK * sizeof(xsm_h5_arg));
    int bad = !reg_off || !arg_off || !mpi_off || !rows;
    if (!bad) {
        xsm_h5_first_rows(e, reg_off, arg_off);
        xsm_h5_mpi_first_rows(e, mpi_off);
    }
    /* the writer's order: the event tables, then the messages */
    for (size_t k = 0; k < sizeof xsm_h5_tables / sizeof *xsm_h5_tables; k++) {
        const xsm_h5_tab *t = &xsm_h5_tables[k];
        xsm_h5_help_table(e, t->type, t->rowsize, t->table, t->conv, xsm_h5_aux(t, reg_off, arg_off), rows, &bad);
    }
    xsm_h5_help_table(e, T_MSG, sizeof(xsm_h5_msg), XSM_T_MSGS, NULL, mpi_off, rows, &bad);
    e->h5share->done(e->h5share->ctx);
    free(rows);
    free(reg_off);
    free(arg_off);
    free(mpi_off);
    return bad;
}

/* Every event table; failed: an earlier part failed (the shared tables
 * are still walked, see xsm_h5_table). */
static int xsm_h5_tables_write(xsm_h5 *h, const int64_t *reg_off, const int64_t *arg_off, int failed)
{
    int bad = failed;
    for (size_t k = 0; k < sizeof xsm_h5_tables / sizeof *xsm_h5_tables; k++) {
        const xsm_h5_tab *t = &xsm_h5_tables[k];
        const int64_t *aux = xsm_h5_aux(t, reg_off, arg_off);
        bad = xsm_h5_table(h, t->name, t->type, t->rowsize, t->table, t->conv, aux, bad) != 0 || bad;
    }
    return bad;
}

/* The end of xsm_emit_h5: when it stopped before its tables (walked 0),
 * the helpers' chunks are received all the same (they would wait
 * forever); then what it holds goes. Returns rc. */
static int xsm_h5_drain(xsm_h5 *h, int rc, int walked, int64_t *reg_off, int64_t *arg_off, int64_t *mpi_off,
                        hid_t fcpl)
{
    if (!walked && h->e->h5share) {
        xsm_h5_tables_write(h, NULL, NULL, 1);
        xsm_h5_messages(h, NULL, 1);
    }
    if (fcpl >= 0)
        H5Pclose(fcpl);
    free(reg_off);
    free(arg_off);
    free(mpi_off);
    free(h->batch);
    free(h->src_rows);
    return rc;
}

int xsm_emit_h5(const xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/merged.h5", dir);
    const xsm_run *run = e->run;
    xsm_h5 h = {.e = e, .file = -1};
    int64_t *reg_off = calloc(run->nranks + 1, sizeof *reg_off);
    int64_t *arg_off = calloc(run->nranks + 1, sizeof *arg_off);
    int64_t *mpi_off = calloc(run->nranks + 1, sizeof *mpi_off);
    h.batch = malloc((size_t)XSM_BATCH * sizeof(xsm_h5_arg));
    h.src_rows = e->h5src ? malloc((size_t)XSM_BATCH * XSM_H5_ROW_MAX) : NULL;
    h.err = err;
    h.errlen = errlen;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    int rc = 0;
    if (!reg_off || !arg_off || !mpi_off || !h.batch || (e->h5src && !h.src_rows) || fcpl < 0) {
        rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing merged.h5");
        return xsm_h5_drain(&h, rc, 0, reg_off, arg_off, mpi_off, fcpl);
    }
    xsm_h5_first_rows(e, reg_off, arg_off);
    xsm_h5_mpi_first_rows(e, mpi_off);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported as one line below */
    xsm_h5_why[0] = 0;
    H5Pset_obj_track_times(fcpl, 0);
    h.file = H5Fcreate(path, H5F_ACC_EXCL, fcpl, H5P_DEFAULT);
    if (h.file < 0) {
        rc = xsm_err_set(err, errlen, "xsmerge: %s: cannot create (exists or not writable)", path);
        return xsm_h5_drain(&h, rc, 0, reg_off, arg_off, mpi_off, fcpl);
    }
    xsm_progress_begin("writing merged.h5", e->nevents);
    int bad = xsm_h5_attrs(&h) || xsm_h5_strings(&h);
    bad = xsm_h5_tables_write(&h, reg_off, arg_off, bad) || bad;
    bad = bad || xsm_h5_ranks(&h);
    bad = xsm_h5_messages(&h, mpi_off, bad) || bad;
    bad = bad || xsm_h5_colls(&h, mpi_off);
    xsm_progress_end();
    if ((H5Fclose(h.file) < 0 && xsm_h5_failed()) || bad)
        rc = h.read_failed ? 1 /* the reader said why */
                           : xsm_err_set(err, errlen, "xsmerge: %s: HDF5 write failed%s%s", path,
                                         xsm_h5_why[0] ? ": " : "", xsm_h5_why);
    h.file = -1;
    return xsm_h5_drain(&h, rc, 1, reg_off, arg_off, mpi_off, fcpl);
}
