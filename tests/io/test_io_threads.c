/* tests/io/test_io_threads.c — the threaded writer (io/chunk_pool.h) stores
 * what HDF5's own filters store: the same journal converted with
 * XSPROF_WRITER_THREADS=1 (HDF5's path) and with the default thread count
 * must give the same datasets, types, filters, attributes, rows and chunk
 * payloads (each raw chunk a valid zlib stream under a valid fletcher32 sum
 * that inflates to the same shuffled bytes: the pool compresses with
 * libdeflate where the build has it, HDF5 with zlib, so the compressed
 * bytes differ). Also: the encoder alone against HDF5's chunks, the pool's
 * order and failure handling, a disk filling up under the threaded path,
 * and tables shorter than one chunk stored as one chunk of their length.
 * usage: test_io_threads DIR */
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>
#include <zlib.h>

#include "io/chunk_pool.h"
#include "io/format.h"
#include "io/h5filter.h"
#include "io/h5schema.h"
#include "io/journal_read.h"
#include "io/reader.h"
#include "io/writer.h"
#include "io_check.h"
#include "journal_fixture.h"
#include "merge/read/read.h"

static char dir[2048];

static const char *path_in(const char *name) { return io_check_path(dir, name); }

static xsprof_status convert_with(const char *threads, const char *jp, const char *hp, char *err, size_t len)
{
    if (threads)
        setenv("XSPROF_WRITER_THREADS", threads, 1);
    else
        unsetenv("XSPROF_WRITER_THREADS");
    unlink(hp);
    xsprof_status st = xsprof_journal_convert(jp, hp, "finalized", err, len);
    unsetenv("XSPROF_WRITER_THREADS");
    return st;
}

/* ---- comparing two rank files ------------------------------------------ */

static int same_filters(hid_t a, hid_t b)
{
    hid_t pa = H5Dget_create_plist(a), pb = H5Dget_create_plist(b);
    int n = H5Pget_nfilters(pa), same = n == H5Pget_nfilters(pb) && n >= 0;
    for (int f = 0; same && f < n; f++) {
        unsigned fa = 0, fb = 0, ca[8] = {0}, cb[8] = {0};
        size_t na = 8, nb = 8;
        H5Z_filter_t ia = H5Pget_filter2(pa, (unsigned)f, &fa, &na, ca, 0, NULL, NULL);
        H5Z_filter_t ib = H5Pget_filter2(pb, (unsigned)f, &fb, &nb, cb, 0, NULL, NULL);
        same = ia == ib && fa == fb && na == nb && !memcmp(ca, cb, sizeof ca);
    }
    hsize_t da = 0, db = 0;
    same = same && H5Pget_chunk(pa, 1, &da) == 1 && H5Pget_chunk(pb, 1, &db) == 1 && da == db;
    H5Pclose(pa);
    H5Pclose(pb);
    return same;
}

/* A raw chunk as HDF5's shuffle+deflate+fletcher32 filters store it,
 * unwrapped: its sum checked, inflated into out (cap bytes). Returns the
 * inflated length, 0 when the sum or the stream is bad. */
static size_t chunk_payload(const unsigned char *raw, size_t len, unsigned char *out, size_t cap)
{
    if (len < 6)
        return 0;
    uint32_t sum = (uint32_t)raw[len - 4] | (uint32_t)raw[len - 3] << 8 | (uint32_t)raw[len - 2] << 16 |
                   (uint32_t)raw[len - 1] << 24;
    uLongf n = (uLongf)cap;
    if (xsprof_h5_fletcher32(raw, len - 4) != sum || uncompress(out, &n, raw, (uLong)(len - 4)) != Z_OK)
        return 0;
    return (size_t)n;
}

/* Two raw chunks hold the same payload (chunk_payload). */
static int same_payload(const unsigned char *a, size_t la, const unsigned char *b, size_t lb)
{
    enum { CAP = 8u << 20 };
    unsigned char *pa = malloc(CAP), *pb = malloc(CAP);
    size_t na = pa && pb ? chunk_payload(a, la, pa, CAP) : 0, nb = na ? chunk_payload(b, lb, pb, CAP) : 0;
    int same = na && na == nb && !memcmp(pa, pb, na);
    free(pa);
    free(pb);
    return same;
}

/* Raw chunk payloads and filter masks; returns the number of chunks. */
static size_t same_chunks(const char *name, hid_t a, hid_t b, hsize_t rows, hsize_t chunk)
{
    size_t n = (size_t)((rows + chunk - 1) / chunk), bad = 0;
    for (size_t k = 0; k < n; k++) {
        hsize_t off = (hsize_t)k * chunk, sa = 0, sb = 0;
        H5Dget_chunk_storage_size(a, &off, &sa);
        H5Dget_chunk_storage_size(b, &off, &sb);
        if (!sa || !sb) {
            bad++;
            continue;
        }
        unsigned char *ba = malloc((size_t)sa), *bb = malloc((size_t)sb);
        uint32_t ma = 7, mb = 9;
        if (H5Dread_chunk(a, H5P_DEFAULT, &off, &ma, ba) < 0 || H5Dread_chunk(b, H5P_DEFAULT, &off, &mb, bb) < 0 ||
            ma != mb || ma != 0 || !same_payload(ba, (size_t)sa, bb, (size_t)sb))
            bad++;
        free(ba);
        free(bb);
    }
    CHECK(bad == 0, "%s: %zu of %zu raw chunks hold different payloads", name, bad, n);
    return n;
}

/* Every row, read through HDF5's filters in the file's own type. */
static void same_rows(const char *name, hid_t a, hid_t b, hsize_t rows)
{
    hid_t t = H5Dget_type(a);
    size_t bytes = (size_t)rows * H5Tget_size(t);
    unsigned char *ba = calloc(1, bytes + 1), *bb = calloc(1, bytes + 1);
    int ok = H5Dread(a, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, ba) >= 0 &&
             H5Dread(b, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, bb) >= 0 && !memcmp(ba, bb, bytes);
    CHECK(ok, "%s: rows differ", name);
    free(ba);
    free(bb);
    H5Tclose(t);
}

static void same_dataset(hid_t fa, hid_t fb, enum xsprof_h5_ds ds, size_t *nchunks)
{
    const char *name = xsprof_h5_ds_path(ds);
    hid_t a = H5Dopen2(fa, name, H5P_DEFAULT), b = H5Dopen2(fb, name, H5P_DEFAULT);
    CHECK(a >= 0 && b >= 0, "%s: cannot open", name);
    if (a < 0 || b < 0)
        return;
    hid_t ta = H5Dget_type(a), tb = H5Dget_type(b), sa = H5Dget_space(a), sb = H5Dget_space(b);
    hsize_t da = 0, db = 0, ma = 0, mb = 0;
    H5Sget_simple_extent_dims(sa, &da, &ma);
    H5Sget_simple_extent_dims(sb, &db, &mb);
    CHECK(H5Tequal(ta, tb) > 0, "%s: types differ", name);
    CHECK(da == db && ma == mb, "%s: %llu vs %llu rows", name, (unsigned long long)da, (unsigned long long)db);
    CHECK(same_filters(a, b), "%s: filters or chunking differ", name);
    hid_t pl = H5Dget_create_plist(a);
    hsize_t chunk = 1;
    H5Pget_chunk(pl, 1, &chunk);
    H5Pclose(pl);
    if (da == db && da) {
        *nchunks += same_chunks(name, a, b, da, chunk);
        same_rows(name, a, b, da);
    }
    H5Tclose(ta);
    H5Tclose(tb);
    H5Sclose(sa);
    H5Sclose(sb);
    H5Dclose(a);
    H5Dclose(b);
}

static void same_attributes(hid_t fa, hid_t fb)
{
    H5O_info_t ia, ib;
    H5Oget_info2(fa, &ia, H5O_INFO_NUM_ATTRS);
    H5Oget_info2(fb, &ib, H5O_INFO_NUM_ATTRS);
    CHECK(ia.num_attrs == ib.num_attrs && ia.num_attrs > 10, "%llu vs %llu attributes",
          (unsigned long long)ia.num_attrs, (unsigned long long)ib.num_attrs);
    for (hsize_t i = 0; i < ia.num_attrs && ia.num_attrs == ib.num_attrs; i++) {
        char name[256];
        hid_t a = H5Aopen_by_idx(fa, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
        if (a < 0)
            a = H5Aopen_by_idx(fa, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
        H5Aget_name(a, sizeof name, name);
        hid_t b = H5Aopen(fb, name, H5P_DEFAULT), ta = H5Aget_type(a), tb = b >= 0 ? H5Aget_type(b) : -1;
        unsigned char va[512] = {0}, vb[512] = {0};
        int ok = b >= 0 && H5Tequal(ta, tb) > 0 && H5Tget_size(ta) <= sizeof va && H5Aread(a, ta, va) >= 0 &&
                 H5Aread(b, ta, vb) >= 0 && !memcmp(va, vb, sizeof va);
        CHECK(ok, "attribute %s differs", name);
        H5Tclose(ta);
        if (tb >= 0)
            H5Tclose(tb);
        if (b >= 0)
            H5Aclose(b);
        H5Aclose(a);
    }
}

static size_t same_files(const char *pa, const char *pb)
{
    H5E_auto2_t fn = NULL;
    void *data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &fn, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fa = H5Fopen(pa, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(pb, H5F_ACC_RDONLY, H5P_DEFAULT);
    size_t nchunks = 0;
    CHECK(fa >= 0 && fb >= 0, "cannot open %s or %s", pa, pb);
    if (fa >= 0 && fb >= 0) {
        same_attributes(fa, fb);
        for (int ds = 0; ds < XSPROF_H5_COUNT; ds++)
            same_dataset(fa, fb, (enum xsprof_h5_ds)ds, &nchunks);
    }
    if (fa >= 0)
        H5Fclose(fa);
    if (fb >= 0)
        H5Fclose(fb);
    H5Eset_auto2(H5E_DEFAULT, fn, data);
    return nchunks;
}

/* ---- zlib's wrapper, written by the encoder ---------------------------- */

/* The encoder deflates raw and writes zlib's header and Adler-32 itself:
 * its checksum against zlib's on every length around the 16-byte steps and
 * the 5552-byte runs (from every alignment), and a whole chunk of 1-byte
 * rows (packed, not shuffled) against zlib's compress2 at every level. */
static void check_zlib_wrapper(void)
{
    enum { N = 3 * 5552 + 100 };
    unsigned char *buf = malloc(N + 16);
    uint32_t x = 12345;
    for (size_t i = 0; i < N + 16; i++) { /* runs and noise, as shuffled planes are */
        x = x * 1103515245u + 12345u;
        buf[i] = (i / 700) % 3 == 0 ? 0 : (i / 700) % 3 == 1 ? 255 : (unsigned char)(x >> 24);
    }
    size_t bad = 0, n = 0;
    for (size_t len = 0; len <= N; len += len < 40 ? 1 : len < 5600 && len > 5500 ? 1 : 97)
        for (size_t a = 0; a < 16; a += len % 7 ? 15 : 1, n++)
            bad += xsprof_adler32(1, buf + a, len) != (uint32_t)adler32(1, buf + a, (uInt)len);
    bad += xsprof_adler32(0xfff0fff0u, buf, N) != (uint32_t)adler32(0xfff0fff0u, buf, N); /* sums near the modulus */
    CHECK(bad == 0, "adler32: %zu of %zu sums differ from zlib's", bad, n);
    for (int level = 1; level <= 9; level++) {
        xsprof_chunk_codec c;
        CHECK(xsprof_chunk_codec_init(&c, H5T_NATIVE_UCHAR, H5T_STD_U8LE, N, level) == XSPROF_OK, "1-byte codec");
        xsprof_chunk_work w = {0};
        unsigned char *out = malloc(xsprof_chunk_encoded_max(&c)), *ref = malloc(compressBound(N));
        uLongf rlen = compressBound(N);
        size_t len = xsprof_chunk_encode(&c, buf, N, &w, out);
        /* a zlib stream of the bytes (1-byte members: shuffle moves nothing)
         * under its fletcher32, about as small as zlib's at the level */
        unsigned char *back = malloc(N + 1);
        CHECK(compress2(ref, &rlen, buf, N, level) == Z_OK && len > 4 && len <= rlen + 4 + rlen / 8 &&
                  chunk_payload(out, len, back, N + 1) == N && !memcmp(back, buf, N),
              "level %d: the chunk is no zlib stream of its bytes (%zu bytes, zlib's %lu)", level, len,
              (unsigned long)rlen + 4);
        free(back);
        free(out);
        free(ref);
        xsprof_chunk_work_free(&w);
        xsprof_chunk_codec_free(&c);
    }
    free(buf);
}

/* ---- the encoder against HDF5's own chunks ----------------------------- */

/* Re-encode every chunk of every event table of an HDF5-written file from
 * its rows and compare with the stored bytes. */
static void check_encoder(const char *path, const xsprof_rank_data *d)
{
    const void *tables[XSPROF_IO_T_COUNT] = {d->regions, d->args, d->instants, d->counters,
                                             d->mpi, d->gpu, d->mem, d->clock};
    const size_t rows[XSPROF_IO_T_COUNT] = {d->nregions, d->nargs, d->ninstants, d->ncounters,
                                            d->nmpi, d->ngpu, d->nmem, d->nclock};
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    for (int t = 0; t < XSPROF_IO_T_COUNT && f >= 0; t++) {
        hid_t ds = H5Dopen2(f, xsprof_h5_ds_path((enum xsprof_h5_ds)t), H5P_DEFAULT);
        hid_t ft = H5Dget_type(ds), mt = xsprof_h5_ds_mem_type((enum xsprof_h5_ds)t);
        xsprof_chunk_codec c;
        xsprof_status st = xsprof_chunk_codec_init(&c, mt, ft, xsprof_io_table_block_rows((enum xsprof_io_table)t), 4);
        CHECK(st == XSPROF_OK, "%s: no codec (%d)", xsprof_h5_ds_path((enum xsprof_h5_ds)t), st);
        size_t bad = 0, n = 0;
        xsprof_chunk_work w = {0};
        unsigned char *out = malloc(xsprof_chunk_encoded_max(&c));
        for (size_t first = 0; st == XSPROF_OK && first < rows[t]; first += c.chunk_rows, n++) {
            size_t k = rows[t] - first < c.chunk_rows ? rows[t] - first : c.chunk_rows;
            size_t len = xsprof_chunk_encode(&c, (const char *)tables[t] + first * c.row_size, k, &w, out);
            hsize_t off = first, size = 0;
            uint32_t mask = 1;
            H5Dget_chunk_storage_size(ds, &off, &size);
            unsigned char *raw = malloc((size_t)size + 1);
            bad += H5Dread_chunk(ds, H5P_DEFAULT, &off, &mask, raw) < 0 || mask || !same_payload(raw, (size_t)size, out, len);
            free(raw);
        }
        CHECK(bad == 0 && n > 1, "%s: %zu of %zu chunks encoded differently", xsprof_h5_ds_path((enum xsprof_h5_ds)t),
              bad, n);
        xsprof_chunk_work_free(&w);
        free(out);
        xsprof_chunk_codec_free(&c);
        H5Tclose(ft);
        H5Tclose(mt);
        H5Dclose(ds);
    }
    if (f >= 0)
        H5Fclose(f);
}

/* ---- the pool alone ------------------------------------------------------ */

typedef struct sink {
    int calls, fail_at;
    uint64_t sum; /* order-sensitive digest of what was written */
} sink;

static xsprof_status sink_write(void *user, int table, size_t nrows, const void *bytes, size_t len)
{
    sink *s = user;
    if (++s->calls == s->fail_at)
        return XSPROF_ERR_IO;
    const unsigned char *p = bytes;
    s->sum = s->sum * 1000003u + (uint64_t)table * 31u + nrows;
    for (size_t i = 0; i < len; i++)
        s->sum = s->sum * 131u + p[i];
    return XSPROF_OK;
}

static void fill_rows(xsprof_io_region *rows, int k)
{
    for (int i = 0; i < 512; i++) {
        int64_t v = (int64_t)k * 512 + i;
        rows[i] = (xsprof_io_region){.t_begin = v, .t_end = v * 37 % 100003, .name = (uint32_t)(v % 5), .args = -1};
    }
}

/* Submission order is write order, whatever thread encoded what; a failed
 * write stops the pool with that status. */
static void check_pool(void)
{
    hid_t mt = xsprof_h5_ds_mem_type(XSPROF_H5_REGIONS), ft = H5Tcopy(mt);
    H5Tpack(ft);
    xsprof_chunk_codec c;
    CHECK(xsprof_chunk_codec_init(&c, mt, ft, 512, 4) == XSPROF_OK, "codec");
    enum { NCHUNKS = 40 };
    xsprof_io_region *rows = calloc(512, sizeof *rows);
    xsprof_chunk_work w = {0};
    unsigned char *out = malloc(xsprof_chunk_encoded_max(&c));
    sink want = {0};
    for (int k = 0; k < NCHUNKS; k++) {
        fill_rows(rows, k);
        size_t n = k == NCHUNKS - 1 ? 77 : 512, len = xsprof_chunk_encode(&c, rows, n, &w, out);
        sink_write(&want, k % 3, n, out, len);
    }
    /* 4 threads, and 1: no worker, the submitting thread encodes alone */
    for (int fail_at = 0; fail_at <= 6; fail_at += 3) {
        sink got = {.fail_at = fail_at == 6 ? 0 : fail_at};
        xsprof_chunk_pool *p = xsprof_chunk_pool_create(fail_at == 6 ? 1 : 4, sink_write, &got);
        CHECK(p != NULL, "pool");
        xsprof_status st = XSPROF_OK;
        int table = 5;
        for (int k = 0; k < NCHUNKS && p && st == XSPROF_OK; k++) {
            fill_rows(rows, k);
            st = xsprof_chunk_pool_submit(p, k % 3, &c, rows, k == NCHUNKS - 1 ? 77 : 512, &table);
        }
        if (p && st == XSPROF_OK)
            st = xsprof_chunk_pool_finish(p, &table);
        if (got.fail_at)
            CHECK(st == XSPROF_ERR_IO && table == -1 && got.calls == fail_at, "failing write: %d %d %d", st, table,
                  got.calls);
        else
            CHECK(st == XSPROF_OK && got.calls == NCHUNKS && got.sum == want.sum, "pool: %d, %d writes, same %d", st,
                  got.calls, got.sum == want.sum);
        xsprof_chunk_pool_destroy(p);
    }
    /* every third chunk submitted encoded (merge's helpers send theirs so,
     * between the writer's own): the same writes in the same order, with
     * workers passing over them, and with the submitting thread alone */
    for (unsigned threads = 1; threads <= 4; threads += 3) {
        sink got = {0};
        xsprof_chunk_pool *p = xsprof_chunk_pool_create(threads, sink_write, &got);
        CHECK(p != NULL, "pool");
        xsprof_status st = XSPROF_OK;
        int table = 5;
        for (int k = 0; k < NCHUNKS && p && st == XSPROF_OK; k++) {
            size_t n = k == NCHUNKS - 1 ? 77 : 512;
            fill_rows(rows, k);
            if (k % 3 == 1) {
                size_t len = xsprof_chunk_encode(&c, rows, n, &w, out);
                st = xsprof_chunk_pool_submit_encoded(p, k % 3, n, out, len, &table);
            } else {
                st = xsprof_chunk_pool_submit(p, k % 3, &c, rows, n, &table);
            }
        }
        if (p && st == XSPROF_OK)
            st = xsprof_chunk_pool_finish(p, &table);
        CHECK(st == XSPROF_OK && got.calls == NCHUNKS && got.sum == want.sum,
              "pool with encoded chunks, %u threads: %d, %d writes, same %d", threads, st, got.calls,
              got.sum == want.sum);
        xsprof_chunk_pool_destroy(p);
    }
    free(rows);
    xsprof_chunk_work_free(&w);
    free(out);
    xsprof_chunk_codec_free(&c);
    H5Tclose(mt);
    H5Tclose(ft);
}

/* ---- merge's raw-chunk reader ------------------------------------------- */

/* merge/read/chunks.c decodes the stored chunks itself (checksum, raw
 * inflate, unshuffle) for tables whose file type is their memory type: it
 * must decode the threaded file's chunks, and get H5Dread's rows. */
static void check_merge_reader(const char *path, const xsprof_rank_data *d)
{
    static const enum xsprof_h5_ds tables[] = {XSPROF_H5_REGIONS, XSPROF_H5_ARGS, XSPROF_H5_INSTANTS,
                                               XSPROF_H5_COUNTERS, XSPROF_H5_MPI, XSPROF_H5_MEM};
    const void *want[] = {d->regions, d->args, d->instants, d->counters, d->mpi, d->mem};
    const size_t rows[] = {d->nregions, d->nargs, d->ninstants, d->ncounters, d->nmpi, d->nmem};
    xsm_chunks_set_threads(2);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    for (size_t k = 0; k < sizeof tables / sizeof *tables && f >= 0; k++) {
        hid_t ds = H5Dopen2(f, xsprof_h5_ds_path(tables[k]), H5P_DEFAULT), mt = xsprof_h5_ds_mem_type(tables[k]);
        size_t row = xsprof_h5_ds_row_size(tables[k]);
        unsigned char *buf = calloc(rows[k] + 1, row);
        int rc = xsm_chunks_read(ds, mt, row, rows[k], buf);
        CHECK(rc == 0 && (!rows[k] || !memcmp(buf, want[k], rows[k] * row)), "%s: merge's chunk reader: rc %d",
              xsprof_h5_ds_path(tables[k]), rc);
        free(buf);
        H5Tclose(mt);
        H5Dclose(ds);
    }
    if (f >= 0)
        H5Fclose(f);
}

/* The same reader on a closed file (io/reader.h raw reader, xsmerge's
 * streaming mode): the file detaches, row ranges across chunk boundaries
 * read as H5Dread gives them, from two threads' worth of scratch; a file
 * damaged after it was opened fails with one error naming the dataset. */
static void check_detached(const char *path, const xsprof_rank_data *d)
{
    const unsigned stream = 1u << XSPROF_IO_T_REGIONS | 1u << XSPROF_IO_T_MPI | 1u << XSPROF_IO_T_INSTANTS;
    char copy[2200], err[1024];
    snprintf(copy, sizeof copy, "%s.detached", path);
    FILE *in = fopen(path, "rb"), *out = fopen(copy, "wb");
    char blk[65536];
    size_t k;
    while (in && out && (k = fread(blk, 1, sizeof blk, in)) > 0)
        fwrite(blk, 1, k, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    xsprof_rankfile_set_raw_reader(xsm_chunks_raw_plan, xsm_chunks_raw_rows, xsm_chunks_raw_free);
    xsprof_rank_data s;
    xsprof_rankfile *rf = NULL;
    CHECK(xsprof_rankfile_open(copy, stream, &s, &rf, err, sizeof err) == XSPROF_OK, "open %s: %s", copy, err);
    CHECK(xsprof_rankfile_detached(rf), "%s: read without HDF5 (detached)", copy);
    uint64_t nreg = xsprof_rankfile_table_rows(rf, XSPROF_IO_T_REGIONS);
    CHECK(nreg == d->nregions && nreg > 20000, "detached: %llu region rows", (unsigned long long)nreg);
    xsprof_io_region *buf = calloc(20000, sizeof *buf);
    for (uint64_t first = 0; buf && first + 20000 <= nreg; first += 37000) { /* crosses chunk boundaries */
        CHECK(xsprof_rankfile_read(rf, XSPROF_IO_T_REGIONS, first, 20000, buf, err, sizeof err) == XSPROF_OK &&
                  !memcmp(buf, d->regions + first, 20000 * sizeof *buf),
              "detached: regions [%llu, +20000): %s", (unsigned long long)first, err);
    }
    /* damage after opening: the second half of the file overwritten */
    struct stat sb;
    FILE *f = stat(copy, &sb) == 0 ? fopen(copy, "r+b") : NULL;
    if (f) {
        memset(blk, 0xff, sizeof blk);
        fseek(f, sb.st_size / 2, SEEK_SET);
        for (off_t at = sb.st_size / 2; at < sb.st_size; at += (off_t)sizeof blk)
            fwrite(blk, 1, sizeof blk, f);
        fclose(f);
    }
    xsprof_status st = XSPROF_OK;
    for (uint64_t first = 0; buf && st == XSPROF_OK && first + 20000 <= nreg; first += 20000)
        st = xsprof_rankfile_read(rf, XSPROF_IO_T_REGIONS, first, 20000, buf, err, sizeof err);
    CHECK(st == XSPROF_ERR_FORMAT && strstr(err, "/events/regions") && strstr(err, "damaged chunk") &&
              !strchr(err, '\n'),
          "detached, damaged: %d %s", (int)st, err);
    free(buf);
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&s);
    /* a table of more chunks than the limit: the file stays open (locating
     * its chunks would take quadratic time), its rows read the same */
    xsprof_rankfile_set_detach_limit(4);
    CHECK(xsprof_rankfile_open(path, stream, &s, &rf, err, sizeof err) == XSPROF_OK, "open %s: %s", path, err);
    CHECK(rf && !xsprof_rankfile_detached(rf), "%s: more chunks than the limit, not detached", path);
    buf = calloc(20000, sizeof *buf);
    for (uint64_t first = 0; buf && rf && first + 20000 <= nreg; first += 37000)
        CHECK(xsprof_rankfile_read(rf, XSPROF_IO_T_REGIONS, first, 20000, buf, err, sizeof err) == XSPROF_OK &&
                  !memcmp(buf, d->regions + first, 20000 * sizeof *buf),
              "attached: regions [%llu, +20000): %s", (unsigned long long)first, err);
    free(buf);
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&s);
    xsprof_rankfile_set_detach_limit(512);
    xsprof_rankfile_set_raw_reader(NULL, NULL, NULL);
    unlink(copy);
}

/* ---- chunks of short tables --------------------------------------------- */

/* Rows and chunk rows of dataset ds (0 chunk when it cannot be read). */
static hsize_t chunk_of(hid_t f, enum xsprof_h5_ds ds, hsize_t *rows)
{
    hid_t d = H5Dopen2(f, xsprof_h5_ds_path(ds), H5P_DEFAULT);
    hid_t pl = d >= 0 ? H5Dget_create_plist(d) : -1, sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t chunk = 0;
    *rows = 0;
    if (pl < 0 || sp < 0 || H5Pget_chunk(pl, 1, &chunk) != 1 || H5Sget_simple_extent_dims(sp, rows, NULL) != 1)
        chunk = 0;
    if (sp >= 0)
        H5Sclose(sp);
    if (pl >= 0)
        H5Pclose(pl);
    if (d >= 0)
        H5Dclose(d);
    return chunk;
}

/* A table shorter than its default chunk is one chunk of its length (an
 * empty definitions table: 1 row); an empty or longer event table keeps
 * the parser's block as its chunk. */
static void check_chunk_sizes(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0, "cannot open %s", path);
    for (int ds = 0; ds < XSPROF_H5_COUNT && f >= 0; ds++) {
        hsize_t rows = 0, chunk = chunk_of(f, (enum xsprof_h5_ds)ds, &rows), want;
        if (ds < XSPROF_IO_T_COUNT) {
            want = xsprof_io_table_block_rows((enum xsprof_io_table)ds);
            want = rows && rows < want ? rows : want;
        } else {
            want = rows ? rows : 1; /* definitions here are all shorter than a default chunk */
        }
        CHECK(chunk == want, "%s: %s: %llu rows in chunks of %llu, not %llu", path,
              xsprof_h5_ds_path((enum xsprof_h5_ds)ds), (unsigned long long)rows, (unsigned long long)chunk,
              (unsigned long long)want);
    }
    if (f >= 0)
        H5Fclose(f);
}

/* 3 strings, 5 regions, 2 MPI calls and 1 instant (a 1-row chunk, which
 * HDF5 does not shuffle): chunks of 5, 2 and 3 rows, the same through both
 * paths, read back by load and by merge's chunk reader. */
static void check_small_tables(void)
{
    const char *jp = path_in("small.xsj"), *serial = path_in("small-serial.h5");
    const char *threaded = path_in("small-threaded.h5");
    jfx *j = jfx_create(4096);
    uint32_t s[3] = {jfx_string(j, "step"), jfx_string(j, "MPI_Send"), jfx_string(j, "tick")};
    for (int i = 0; i < 5; i++)
        jfx_region(j, 0, 0, s[0], 0, 1000 + 100 * i, 1050 + 100 * i);
    for (int i = 0; i < 2; i++) {
        xsprof_rec_mpi r = {.h.type = XSPROF_REC_MPI, .op = s[1], .t_begin = 2000 + i, .t_end = 2500, .comm = 0,
                            .peer = 1, .tag = i, .root = -1, .bytes_sent = 64, .kind = XSPROF_MPI_SEND, .count = 1};
        jfx_record(j, 0, &r, sizeof r);
    }
    xsprof_rec_instant in = {.h.type = XSPROF_REC_INSTANT, .name = s[2], .t = 3000};
    jfx_record(j, 0, &in, sizeof in);
    unlink(jp);
    CHECK(jfx_write(j, jp, 0) == 0, "write %s", jp);
    jfx_free(j);

    char err[1024];
    CHECK(convert_with("1", jp, serial, err, sizeof err) == XSPROF_OK, "small, serial: %s", err);
    CHECK(convert_with(NULL, jp, threaded, err, sizeof err) == XSPROF_OK, "small, threaded: %s", err);
    CHECK(same_files(serial, threaded) == 5, "small files: one chunk each of regions, mpi, instants, threads, strings");
    for (int k = 0; k < 2; k++) {
        const char *p = k ? threaded : serial;
        check_chunk_sizes(p);
        hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
        hsize_t rows[3], c[3] = {chunk_of(f, XSPROF_H5_REGIONS, &rows[0]), chunk_of(f, XSPROF_H5_MPI, &rows[1]),
                                 chunk_of(f, XSPROF_H5_STRINGS, &rows[2])};
        CHECK(c[0] == 5 && c[1] == 2 && c[2] == 3, "%s: chunks of regions/mpi/strings: %llu/%llu/%llu", p,
              (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2]);
        if (f >= 0)
            H5Fclose(f);
    }
    xsprof_rank_data d;
    CHECK(xsprof_rankfile_load(threaded, &d, err, sizeof err) == XSPROF_OK, "load small: %s", err);
    CHECK(d.nregions == 5 && d.nmpi == 2 && d.ninstants == 1 && d.nstrings == 3 && d.mpi[1].tag == 1 &&
              d.regions[4].t_begin == 1400,
          "small rows: %zu regions, %zu mpi, %zu instants, %u strings", d.nregions, d.nmpi, d.ninstants,
          d.nstrings);
    check_merge_reader(threaded, &d);
    xsprof_rank_data_free(&d);
}

/* ---- a disk filling up under the threaded path -------------------------- */

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* The limit moves the failure through the chunks (written while threads
 * still encode), the metadata and the final flush: every time one error
 * line naming the file, no file under its name or the temporary one, and
 * no thread left behind. */
static void check_disk_full(const char *jp, off_t full_size)
{
    const char *hp = path_in("full.h5");
    char partial[4200];
    snprintf(partial, sizeof partial, "%s.partial", hp);
    static const double fractions[] = {0.001, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999};
    for (size_t k = 0; k < sizeof fractions / sizeof *fractions; k++) {
        long limit = (long)((double)full_size * fractions[k]);
        unlink(hp);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            struct rlimit saved, rl;
            getrlimit(RLIMIT_FSIZE, &saved);
            rl = saved;
            rl.rlim_cur = (rlim_t)limit;
            signal(SIGXFSZ, SIG_IGN);
            setrlimit(RLIMIT_FSIZE, &rl);
            char err[1024];
            int before = count_threads(); /* 1, or 2 with TSan's own */
            xsprof_status st = xsprof_journal_convert(jp, hp, "finalized", err, sizeof err);
            int ok = st == XSPROF_ERR_IO && strstr(err, hp) && !strchr(err, '\n') && strstr(err, "too large") &&
                     access(hp, F_OK) != 0 && access(partial, F_OK) != 0 && count_threads() == before;
            if (!ok)
                fprintf(stderr, "limit %ld: status %d, message %s, file left %d/%d, %d threads\n", limit, st, err,
                        access(hp, F_OK) == 0, access(partial, F_OK) == 0, count_threads());
            setrlimit(RLIMIT_FSIZE, &saved);
            exit(ok ? 0 : 3);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "file size limit %ld: child status %d", limit, status);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0777);
    const char *jp = path_in("threads.xsj"), *serial = path_in("serial.h5"), *threaded = path_in("threaded.h5");
    unlink(jp);
    CHECK(jfx_write_mixed(jp, 150000) == 0, "write %s", jp);
    unsigned cpus = xsprof_chunk_pool_threads();
    if (cpus < 2)
        printf("test_io_threads: 1 CPU: the default conversion is HDF5's path too\n");

    char err[1024];
    xsprof_status st = convert_with("1", jp, serial, err, sizeof err);
    CHECK(st == XSPROF_OK, "serial: %s", err);
    st = convert_with(NULL, jp, threaded, err, sizeof err);
    CHECK(st == XSPROF_OK, "threaded: %s", err);
    size_t nchunks = same_files(serial, threaded);
    CHECK(nchunks > 40, "only %zu chunks compared", nchunks);
    /* one CPU (a rank an MPI launcher bound): the pool without workers, the
     * converting thread encoding every chunk, still the same payloads */
    cpu_set_t all, one;
    const char *onecpu = path_in("onecpu.h5");
    if (sched_getaffinity(0, sizeof all, &all) == 0) {
        CPU_ZERO(&one);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &all)) {
                CPU_SET(c, &one);
                break;
            }
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0 && xsprof_chunk_pool_threads() == 1, "bound to one CPU");
        st = convert_with(NULL, jp, onecpu, err, sizeof err);
        sched_setaffinity(0, sizeof all, &all);
        CHECK(st == XSPROF_OK, "one CPU: %s", err);
        CHECK(same_files(serial, onecpu) == nchunks, "one CPU: chunks compared");
    }
    printf("test_io_threads: %u threads, %zu chunks compared\n", cpus, nchunks);
    check_chunk_sizes(serial); /* event tables beyond one chunk: the default chunk */
    check_chunk_sizes(threaded);
    check_small_tables();

    xsprof_rank_data a, b;
    CHECK(xsprof_rankfile_load(serial, &a, err, sizeof err) == XSPROF_OK, "load serial: %s", err);
    CHECK(xsprof_rankfile_load(threaded, &b, err, sizeof err) == XSPROF_OK, "load threaded: %s", err);
    CHECK(a.nregions == 150000 && b.nregions == a.nregions && b.nargs == a.nargs && b.nclock == a.nclock &&
              b.ngpu == a.ngpu,
          "row counts");
    check_encoder(serial, &a);
    check_merge_reader(threaded, &a);
    check_detached(threaded, &a);
    xsprof_rank_data_free(&a);
    xsprof_rank_data_free(&b);

    check_pool();
    check_zlib_wrapper();
    struct stat sb;
    if (stat(threaded, &sb) == 0)
        check_disk_full(jp, sb.st_size);
    return io_check_result("test_io_threads");
}
