/* io/writer.c — journal -> rank-NNNNN.h5 (format version 1, io/FORMAT.md).
 * Events stream from the journal parser in blocks of exactly one HDF5 chunk
 * and are appended to extendible datasets, so memory stays bounded whatever
 * the number of events. Only definitions (strings, threads, comms...) are
 * held until the end. With more than one CPU the event chunks are encoded
 * on threads (io/chunk_pool.h) and stored with H5Dwrite_chunk: deflate is
 * most of the conversion's time and HDF5 runs its filters serially.
 * A table shorter than its default chunk gets a chunk of its own length
 * (so each table is created once that is known): readers decode whole
 * chunks, and a small rank file was otherwise mostly padding to inflate. */
#include "io/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/chunk_pool.h"
#include "io/format.h"
#include "io/h5fd_guard.h"
#include "io/h5schema.h"
#include "io/journal_read.h"

/* Deflate level: on io_size's region table 4 gives the size of 9 (3.3 B/event)
 * in 60% of its time; 1 is 12% larger. */
#define WR_DEFLATE 4

typedef struct wr_ctx {
    const char *path;   /* the rank file, named in every message */
    char tmp[4200];     /* written under this name, linked to `path` when complete */
    char *err;
    size_t errlen;
    hid_t file;
    hid_t ds[XSPROF_H5_COUNT];
    hid_t mtype[XSPROF_H5_COUNT];
    hsize_t nrows[XSPROF_H5_COUNT];
    xsprof_h5fd_state vfd; /* write failures the driver kept from HDF5 */
    xsprof_chunk_pool *pool; /* NULL: HDF5's filters on this thread */
    xsprof_chunk_codec codec[XSPROF_IO_T_COUNT];
    hsize_t queued[XSPROF_IO_T_COUNT]; /* rows handed to the pool */
} wr_ctx;

static xsprof_status wr_fail(wr_ctx *w, xsprof_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static xsprof_status wr_fail(wr_ctx *w, xsprof_status s, const char *fmt, ...)
{
    if (!w->err || !w->errlen || w->err[0])
        return s;
    char what[512], h5[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    xsprof_h5_last_error(h5, sizeof h5);
    if (h5[0])
        snprintf(w->err, w->errlen, "%s: %s (HDF5: %s)", w->path, what, h5);
    else
        snprintf(w->err, w->errlen, "%s: %s", w->path, what);
    return s;
}

/* Default chunk, in rows: that of every table but a shorter one. */
static hsize_t wr_chunk_rows(enum xsprof_h5_ds ds)
{
    if (ds < XSPROF_H5_THREADS)
        return xsprof_io_table_block_rows((enum xsprof_io_table)ds);
    return ds == XSPROF_H5_COMM_MEMBERS || ds == XSPROF_H5_FRAMES || ds == XSPROF_H5_SAMPLES ||
                   ds == XSPROF_H5_ALLOC_STACKS
               ? 4096
               : 256;
}

/* Chunk of a table known to hold `rows` rows in all: no longer than the
 * table (1 row when empty: no chunk is stored then). */
static hsize_t wr_chunk_fit(hsize_t chunk, hsize_t rows)
{
    return rows < chunk ? (rows ? rows : 1) : chunk;
}

/* Row type on disk: `mtype` without the padding of the C struct. Negative
 * on failure. */
static hid_t wr_file_type(hid_t mtype)
{
    hid_t ftype = H5Tcopy(mtype);
    if (ftype >= 0 && H5Tget_class(ftype) == H5T_COMPOUND && H5Tpack(ftype) < 0) {
        H5Tclose(ftype);
        return -1;
    }
    return ftype;
}

/* Create table `ds` with row type `mtype` (owned by w from now on). */
static xsprof_status wr_create_ds(wr_ctx *w, enum xsprof_h5_ds ds, hid_t mtype, hsize_t chunk)
{
    hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    hid_t space = -1, dcpl = -1, ftype = -1;
    xsprof_status s = XSPROF_OK;
    w->mtype[ds] = mtype;
    if (w->mtype[ds] < 0 || (ftype = wr_file_type(w->mtype[ds])) < 0)
        return wr_fail(w, XSPROF_ERR_IO, "cannot build the type of %s", xsprof_h5_ds_path(ds));
    space = H5Screate_simple(1, &zero, &unlimited);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    /* fletcher32 last: a damaged chunk fails its checksum instead of
     * decompressing into plausible garbage. */
    if (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, &chunk) < 0 || H5Pset_shuffle(dcpl) < 0 ||
        H5Pset_deflate(dcpl, WR_DEFLATE) < 0 || H5Pset_fletcher32(dcpl) < 0) {
        s = wr_fail(w, XSPROF_ERR_IO, "cannot set up %s", xsprof_h5_ds_path(ds));
        goto out;
    }
    w->ds[ds] = H5Dcreate2(w->file, xsprof_h5_ds_path(ds), ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (w->ds[ds] < 0)
        s = wr_fail(w, XSPROF_ERR_IO, "cannot create %s", xsprof_h5_ds_path(ds));
out:
    if (ftype >= 0)
        H5Tclose(ftype);
    if (space >= 0)
        H5Sclose(space);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return s;
}

static xsprof_status wr_append(wr_ctx *w, enum xsprof_h5_ds ds, const void *rows, size_t n)
{
    if (!n)
        return XSPROF_OK;
    if (w->vfd.error) /* the file is lost: stop converting */
        return wr_fail(w, XSPROF_ERR_IO, "cannot write: %s", strerror(w->vfd.error));
    hsize_t start = w->nrows[ds], count = n, total = start + count;
    hid_t fspace = -1, mspace = -1;
    xsprof_status s = XSPROF_OK;
    if (H5Dset_extent(w->ds[ds], &total) < 0 || (fspace = H5Dget_space(w->ds[ds])) < 0 ||
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        (mspace = H5Screate_simple(1, &count, NULL)) < 0 ||
        H5Dwrite(w->ds[ds], w->mtype[ds], mspace, fspace, H5P_DEFAULT, rows) < 0)
        s = wr_fail(w, XSPROF_ERR_IO, "cannot append %zu rows to %s", n, xsprof_h5_ds_path(ds));
    else
        w->nrows[ds] = total;
    if (fspace >= 0)
        H5Sclose(fspace);
    if (mspace >= 0)
        H5Sclose(mspace);
    return s;
}

/* Store one chunk the pool encoded, as H5Dwrite would have stored it. */
static xsprof_status wr_chunk_write(void *user, int table, size_t n, const void *bytes, size_t len)
{
    wr_ctx *w = user;
    if (w->vfd.error)
        return wr_fail(w, XSPROF_ERR_IO, "cannot write: %s", strerror(w->vfd.error));
    hsize_t start = w->nrows[table], total = start + n;
    /* Filter mask 0: every filter of the pipeline was applied. */
    if (H5Dset_extent(w->ds[table], &total) < 0 ||
        H5Dwrite_chunk(w->ds[table], H5P_DEFAULT, 0, &start, len, bytes) < 0)
        return wr_fail(w, XSPROF_ERR_IO, "cannot append %zu rows to %s", n,
                       xsprof_h5_ds_path((enum xsprof_h5_ds)table));
    w->nrows[table] = total;
    return XSPROF_OK;
}

/* The pool's first failure as one message (a failed write has already
 * given its own). */
static xsprof_status wr_pool_fail(wr_ctx *w, xsprof_status s, int table)
{
    if (table >= 0)
        return wr_fail(w, s, "cannot compress rows of %s", xsprof_h5_ds_path((enum xsprof_h5_ds)table));
    return wr_fail(w, s, "cannot write");
}

/* Create event table t if it does not exist yet, for a first block of n
 * rows. The parser delivers whole chunks but a table's last block, so a
 * short first block is the whole table: the chunk is that long. n == 0 (a
 * table that got no row): the default chunk, never stored. */
static xsprof_status wr_event_ds(wr_ctx *w, enum xsprof_io_table t, size_t n)
{
    if (w->ds[t] >= 0)
        return XSPROF_OK;
    enum xsprof_h5_ds ds = (enum xsprof_h5_ds)t;
    hsize_t chunk = wr_chunk_rows(ds);
    if (n && n < chunk)
        chunk = n;
    /* Nothing of the codec but its chunk length depends on the chunk, and
     * no chunk of t was queued yet. */
    if (w->pool)
        w->codec[t].chunk_rows = (size_t)chunk;
    return wr_create_ds(w, ds, xsprof_h5_ds_mem_type(ds), chunk);
}

static xsprof_status wr_rows(void *user, enum xsprof_io_table t, const void *rows, size_t n)
{
    wr_ctx *w = user;
    if (!n)
        return XSPROF_OK;
    xsprof_status s = wr_event_ds(w, t, n);
    if (s != XSPROF_OK)
        return s;
    if (!w->pool)
        return wr_append(w, (enum xsprof_h5_ds)t, rows, n);
    /* Chunks are stored whole: only a table's last block may be short. */
    if (w->queued[t] % w->codec[t].chunk_rows)
        return wr_fail(w, XSPROF_ERR_STATE, "rows of %s not in whole chunks",
                       xsprof_h5_ds_path((enum xsprof_h5_ds)t));
    int table = -1;
    s = xsprof_chunk_pool_submit(w->pool, (int)t, &w->codec[t], rows, n, &table);
    if (s != XSPROF_OK)
        return wr_pool_fail(w, s, table);
    w->queued[t] += n;
    return XSPROF_OK;
}

/* Encode with the pool when every event table has a type it reproduces
 * byte for byte (on the converting thread alone when the rank may run on
 * one CPU, as MPI launchers bind ranks); else, or with
 * XSPROF_WRITER_THREADS=1, HDF5's path. The tables do not exist yet: their
 * types are built as wr_create_ds builds them. */
static void wr_pool_start(wr_ctx *w)
{
    unsigned n = xsprof_chunk_pool_threads();
    const char *v = getenv("XSPROF_WRITER_THREADS");
    if (v && strcmp(v, "1") == 0)
        return;
    int ok = 1;
    for (int t = 0; t < XSPROF_IO_T_COUNT && ok; t++) {
        enum xsprof_h5_ds ds = (enum xsprof_h5_ds)t;
        hid_t mt = xsprof_h5_ds_mem_type(ds), ft = mt >= 0 ? wr_file_type(mt) : -1;
        ok = ft >= 0 && xsprof_chunk_codec_init(&w->codec[t], mt, ft, wr_chunk_rows(ds), WR_DEFLATE) == XSPROF_OK;
        if (ft >= 0)
            H5Tclose(ft);
        if (mt >= 0)
            H5Tclose(mt);
    }
    if (ok)
        w->pool = xsprof_chunk_pool_create(n, wr_chunk_write, w);
    H5Eclear2(H5E_DEFAULT);
}

/* Write what the pool still holds (when s is OK), then stop it. */
static xsprof_status wr_pool_end(wr_ctx *w, xsprof_status s)
{
    if (w->pool && s == XSPROF_OK) {
        int table = -1;
        xsprof_status f = xsprof_chunk_pool_finish(w->pool, &table);
        if (f != XSPROF_OK)
            s = wr_pool_fail(w, f, table);
    }
    xsprof_chunk_pool_destroy(w->pool);
    w->pool = NULL;
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        xsprof_chunk_codec_free(&w->codec[t]);
    return s;
}

static xsprof_status wr_attr(wr_ctx *w, const char *name, hid_t type, const void *value)
{
    hid_t space = H5Screate(H5S_SCALAR), a = -1;
    xsprof_status s = XSPROF_OK;
    if (space < 0 || (a = H5Acreate2(w->file, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) < 0 ||
        H5Awrite(a, type, value) < 0)
        s = wr_fail(w, XSPROF_ERR_IO, "cannot write attribute %s", name);
    if (a >= 0)
        H5Aclose(a);
    if (space >= 0)
        H5Sclose(space);
    return s;
}

static xsprof_status wr_attr_str(wr_ctx *w, const char *name, const char *value)
{
    hid_t t = xsprof_h5_string_type(strlen(value) + 1);
    if (t < 0)
        return wr_fail(w, XSPROF_ERR_IO, "cannot build a string type");
    xsprof_status s = wr_attr(w, name, t, value);
    H5Tclose(t);
    return s;
}

static xsprof_status wr_attributes(wr_ctx *w, const xsprof_rank_data *d)
{
    const int32_t version = XSPROF_FORMAT_VERSION, truncated = d->truncated, recovered = d->recovered;
    xsprof_status s;
    if ((s = wr_attr_str(w, "format", XSPROF_FORMAT_NAME)) ||
        (s = wr_attr(w, "format_version", H5T_NATIVE_INT32, &version)) ||
        (s = wr_attr(w, "rank", H5T_NATIVE_INT32, &d->rank)) ||
        (s = wr_attr(w, "size", H5T_NATIVE_INT32, &d->size)) || (s = wr_attr_str(w, "host", d->host)) ||
        (s = wr_attr(w, "pid", H5T_NATIVE_INT64, &d->pid)) || (s = wr_attr_str(w, "command", d->command)) ||
        (s = wr_attr_str(w, "job_id", d->job_id)) ||
        (s = wr_attr(w, "start_realtime_ns", H5T_NATIVE_INT64, &d->start_realtime_ns)) ||
        (s = wr_attr(w, "start_clock_ns", H5T_NATIVE_INT64, &d->start_clock_ns)) ||
        (s = wr_attr_str(w, "clock_source", d->clock_source)) || (s = wr_attr_str(w, "clock_units", "ns")) ||
        (s = wr_attr_str(w, "xsprof_version", d->xsprof_version)) ||
        (s = wr_attr_str(w, "mpi_version", d->mpi_version)) ||
        (s = wr_attr(w, "dropped", H5T_NATIVE_UINT64, &d->dropped)) ||
        (s = wr_attr(w, "anomalies", H5T_NATIVE_UINT64, &d->anomalies)) ||
        (s = wr_attr(w, "truncated", H5T_NATIVE_INT32, &truncated)) ||
        (s = wr_attr(w, "recovered", H5T_NATIVE_INT32, &recovered)) ||
        (s = wr_attr_str(w, "end_state", d->end_state)))
        return s;
    return XSPROF_OK;
}

/* Event tables that got no row: every table exists in every file. */
static xsprof_status wr_events_empty(wr_ctx *w)
{
    xsprof_status s = XSPROF_OK;
    for (int t = 0; t < XSPROF_IO_T_COUNT && s == XSPROF_OK; t++)
        s = wr_event_ds(w, (enum xsprof_io_table)t, 0);
    return s;
}

/* A definitions table, complete by now: created with a chunk that fits it. */
static xsprof_status wr_def_table(wr_ctx *w, enum xsprof_h5_ds ds, const void *rows, size_t n)
{
    xsprof_status s = wr_create_ds(w, ds, xsprof_h5_ds_mem_type(ds), wr_chunk_fit(wr_chunk_rows(ds), n));
    return s != XSPROF_OK ? s : wr_append(w, ds, rows, n);
}

static xsprof_status wr_definitions(wr_ctx *w, const xsprof_rank_data *d)
{
    xsprof_status s;
    if ((s = wr_def_table(w, XSPROF_H5_THREADS, d->threads, d->nthreads)) ||
        (s = wr_def_table(w, XSPROF_H5_COMMS, d->comms, d->ncomms)) ||
        (s = wr_def_table(w, XSPROF_H5_COMM_MEMBERS, d->comm_members, d->ncomm_members)) ||
        (s = wr_def_table(w, XSPROF_H5_TOPOLOGY, d->topo, d->ntopo)) ||
        (s = wr_def_table(w, XSPROF_H5_META, d->meta, d->nmeta)) ||
        (s = wr_def_table(w, XSPROF_H5_CALLSTACKS, d->callstacks, d->ncallstacks)) ||
        (s = wr_def_table(w, XSPROF_H5_FRAMES, d->frames, d->nframes)) ||
        (s = wr_def_table(w, XSPROF_H5_MODULES, d->modules, d->nmodules)) ||
        (s = wr_def_table(w, XSPROF_H5_SAMPLES, d->samples, d->nsamples)) ||
        (s = wr_def_table(w, XSPROF_H5_ALLOC_STACKS, d->alloc_stacks, d->nalloc_stacks)))
        return s;
    /* Fixed width = the longest string + NUL; deflate absorbs the padding. */
    size_t width = 1;
    for (uint32_t i = 0; i < d->nstrings; i++) {
        size_t n = strlen(d->strings[i]) + 1;
        if (n > width)
            width = n;
    }
    hsize_t chunk = wr_chunk_fit((256u << 10) / width ? (256u << 10) / width : 1, d->nstrings);
    if ((s = wr_create_ds(w, XSPROF_H5_STRINGS, xsprof_h5_string_type(width), chunk)))
        return s;
    char *block = malloc((size_t)chunk * width);
    if (!block)
        return wr_fail(w, XSPROF_ERR_NOMEM, "out of memory writing strings");
    for (size_t i = 0; i < d->nstrings && s == XSPROF_OK; i += chunk) {
        size_t n = d->nstrings - i < chunk ? d->nstrings - i : (size_t)chunk;
        memset(block, 0, n * width);
        for (size_t k = 0; k < n; k++)
            memcpy(block + k * width, d->strings[i + k], strlen(d->strings[i + k]));
        s = wr_append(w, XSPROF_H5_STRINGS, block, n);
    }
    free(block);
    return s;
}

/* Create h5_path exclusively, never through a symlink, with the user's
 * umask (mode 0666); HDF5 then writes through that very descriptor (see
 * h5fd_guard.h), so no other file can be swapped in by name. */
static xsprof_status wr_create_file(wr_ctx *w, struct stat *made, int *created)
{
    /* The final name must not exist (exclusive, like the temp file). */
    struct stat st;
    if (lstat(w->path, &st) == 0)
        return wr_fail(w, XSPROF_ERR_IO, "cannot create: %s", strerror(EEXIST));
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return wr_fail(w, XSPROF_ERR_IO, "cannot create: %s", strerror(errno));
    *created = 1;
    if (fstat(fd, made) != 0) {
        int e = errno;
        close(fd);
        return wr_fail(w, XSPROF_ERR_IO, "cannot stat: %s", strerror(e));
    }
    /* The 1.10 file format checksums all metadata (object headers, chunk
     * indexes, heaps): a damaged file then fails to read instead of
     * steering HDF5 out of bounds. Readable by HDF5 >= 1.10 (2016). */
    hid_t fapl = xsprof_h5fd_fapl(fd, &w->vfd);
    if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) >= 0)
        w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    close(fd); /* the driver holds its own duplicate */
    if (w->file < 0)
        return wr_fail(w, XSPROF_ERR_IO, "HDF5 cannot create the file");
    return XSPROF_OK;
}

/* The groups; tables are created as their lengths become known. */
static xsprof_status wr_layout(wr_ctx *w)
{
    static const char *groups[] = {"/events", "/clock", "/definitions"};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) {
        hid_t g = H5Gcreate2(w->file, groups[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0)
            return wr_fail(w, XSPROF_ERR_IO, "cannot create group %s", groups[i]);
        H5Gclose(g);
    }
    return XSPROF_OK;
}

static xsprof_status wr_close(wr_ctx *w, xsprof_status s)
{
    for (int i = 0; i < XSPROF_H5_COUNT; i++) {
        if (w->ds[i] >= 0)
            H5Dclose(w->ds[i]);
        if (w->mtype[i] >= 0)
            H5Tclose(w->mtype[i]);
        w->ds[i] = w->mtype[i] = -1;
    }
    if (w->file >= 0 && H5Fclose(w->file) < 0 && s == XSPROF_OK)
        s = wr_fail(w, XSPROF_ERR_IO, "cannot close (data not flushed)");
    w->file = -1;
    if (w->vfd.error && s == XSPROF_OK)
        s = wr_fail(w, XSPROF_ERR_IO, "cannot write: %s", strerror(w->vfd.error));
    return s;
}

xsprof_status xsprof_journal_convert(const char *journal_path, const char *h5_path, const char *end_state,
                                     char *err, size_t errlen)
{
    wr_ctx w;
    memset(&w, 0, sizeof w);
    w.path = h5_path ? h5_path : "(null)";
    /* A conversion killed half-way must not leave a file that looks like a
     * rank file: write NAME.partial, then link it to NAME (link() never
     * replaces an existing name) once complete. */
    if (h5_path && snprintf(w.tmp, sizeof w.tmp, "%s.partial", h5_path) >= (int)sizeof w.tmp)
        return wr_fail(&w, XSPROF_ERR_TOO_LONG, "path too long");
    w.err = err;
    w.errlen = errlen;
    w.file = -1;
    for (int i = 0; i < XSPROF_H5_COUNT; i++)
        w.ds[i] = w.mtype[i] = -1;
    if (err && errlen)
        err[0] = 0;
    if (!journal_path || !h5_path)
        return wr_fail(&w, XSPROF_ERR_INVALID, "no journal or output path given");

    /* Our failures are reported as one line in err: silence HDF5's own
     * printing on this thread only, and restore it for the application. */
    H5E_auto2_t old_fn = NULL;
    void *old_data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    H5Eclear2(H5E_DEFAULT);

    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    xsprof_journal_stats st;
    memset(&st, 0, sizeof st);
    struct stat made;
    memset(&made, 0, sizeof made);
    int created = 0;
    xsprof_status s = wr_create_file(&w, &made, &created);
    if (s == XSPROF_OK)
        s = wr_layout(&w);
    if (s == XSPROF_OK) {
        wr_pool_start(&w);
        s = xsprof_journal_parse(journal_path, &d, &st, wr_rows, &w, err, errlen);
        s = wr_pool_end(&w, s);
    }
    if (s == XSPROF_OK)
        s = wr_events_empty(&w);
    if (s == XSPROF_OK) {
        if (end_state && !st.meta_end_state[0])
            snprintf(d.end_state, sizeof d.end_state, "%s", end_state);
        else
            xsprof_journal_end_state(&st, d.end_state, sizeof d.end_state);
        d.recovered = end_state == NULL;
        d.truncated = strcmp(d.end_state, "finalized") != 0 || st.damaged > 0;
        s = wr_definitions(&w, &d);
    }
    if (s == XSPROF_OK)
        s = wr_attributes(&w, &d);
    if (s == XSPROF_OK) {
        const uint64_t damaged = st.damaged;
        s = wr_attr(&w, "journal_damage", H5T_NATIVE_UINT64, &damaged);
    }
    s = wr_close(&w, s);
    if (s == XSPROF_OK && link(w.tmp, h5_path) != 0)
        s = wr_fail(&w, XSPROF_ERR_IO, "cannot create: %s", strerror(errno));
    if (created) {
        /* Remove the temp name (the rank file keeps its own link), but only
         * the file we made. */
        struct stat now;
        if (lstat(w.tmp, &now) == 0 && now.st_dev == made.st_dev && now.st_ino == made.st_ino)
            unlink(w.tmp);
    }
    xsprof_rank_data_free(&d);
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
    return s;
}
