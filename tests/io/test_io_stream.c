/* tests/io/test_io_stream.c — streaming access to a rank file
 * (xsprof_rankfile_open/read): every event table read whole, in random
 * ranges, single rows, ranges across chunk boundaries and the last partial
 * chunk gives xsprof_rankfile_load's rows, through H5Dread and through
 * merge's chunk decoder (xsm_chunks_rows), also from several threads at
 * once on their own handles; damage and bad requests give one error line
 * naming the file, never a crash. Prints a rough single-thread
 * decode rate of the mpi table for both paths. usage: test_io_stream DIR */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/format.h"
#include "io/h5schema.h"
#include "io/journal_read.h"
#include "io/reader.h"
#include "io/writer.h"
#include "io_check.h"
#include "journal_fixture.h"
#include "merge/read/read.h"

#define ALL_EVENTS ((1u << XSPROF_IO_T_COUNT) - 1)

static char dir[2048];

static const char *path_in(const char *name) { return io_check_path(dir, name); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *table_name(int t) { return xsprof_h5_ds_path((enum xsprof_h5_ds)t); }

static void tables_of(const xsprof_rank_data *d, const void **rows, size_t *n)
{
    const void *r[XSPROF_IO_T_COUNT] = {d->regions, d->args, d->instants, d->counters,
                                        d->mpi,     d->gpu,  d->mem,      d->clock};
    const size_t c[XSPROF_IO_T_COUNT] = {d->nregions, d->nargs, d->ninstants, d->ncounters,
                                         d->nmpi,     d->ngpu,  d->nmem,      d->nclock};
    memcpy(rows, r, sizeof r);
    memcpy(n, c, sizeof c);
}

/* Rows equal field by field: H5Dread leaves the padding of gpu and clock
 * rows as the buffer had it. */
static int same_rows(int t, const void *a, const void *b, size_t n)
{
    hid_t mt = xsprof_h5_ds_mem_type((enum xsprof_h5_ds)t);
    size_t row = xsprof_io_table_row_size((enum xsprof_io_table)t), off[32], len[32];
    int nm = H5Tget_nmembers(mt), same = nm > 0 && nm <= 32;
    for (int m = 0; same && m < nm; m++) {
        hid_t ft = H5Tget_member_type(mt, (unsigned)m);
        off[m] = H5Tget_member_offset(mt, (unsigned)m);
        len[m] = H5Tget_size(ft);
        H5Tclose(ft);
    }
    H5Tclose(mt);
    for (size_t i = 0; same && i < n; i++)
        for (int m = 0; same && m < nm; m++)
            same = !memcmp((const char *)a + i * row + off[m], (const char *)b + i * row + off[m], len[m]);
    return same;
}

/* Rows [first, first + n) of table t must be the loaded ones. */
static int same_range(xsprof_rankfile *rf, int t, const void *want, uint64_t first, size_t n, const char *how)
{
    size_t row = xsprof_io_table_row_size((enum xsprof_io_table)t);
    unsigned char *buf = malloc(n * row + 1);
    char err[1024];
    memset(buf, 0xa5, n * row + 1);
    xsprof_status st = xsprof_rankfile_read(rf, (enum xsprof_io_table)t, first, n, buf, err, sizeof err);
    int ok = st == XSPROF_OK && same_rows(t, buf, (const char *)want + first * row, n) && buf[n * row] == 0xa5;
    CHECK(ok, "%s, %s: rows %llu + %zu: status %d %s", how, table_name(t), (unsigned long long)first, n, st,
          st ? err : "(rows differ)");
    free(buf);
    return ok;
}

/* Everything but the streamed tables must be what load gives. */
static void same_rest(const xsprof_rank_data *full, const xsprof_rank_data *d, unsigned stream)
{
    const void *fr[XSPROF_IO_T_COUNT], *dr[XSPROF_IO_T_COUNT];
    size_t fn[XSPROF_IO_T_COUNT], dn[XSPROF_IO_T_COUNT];
    tables_of(full, fr, fn);
    tables_of(d, dr, dn);
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        if (stream >> t & 1u)
            CHECK(!dr[t] && !dn[t], "streamed %s loaded anyway (%zu rows)", table_name(t), dn[t]);
        else
            CHECK(dn[t] == fn[t] && same_rows(t, dr[t], fr[t], fn[t]), "loaded %s differs", table_name(t));
    }
    CHECK(d->nthreads == full->nthreads && d->nstrings == full->nstrings && d->rank == full->rank &&
              !strcmp(d->path, full->path) && !strcmp(d->end_state, full->end_state) &&
              !strcmp(xsprof_rank_data_string(d, 1), xsprof_rank_data_string(full, 1)),
          "rank data besides the event tables differs");
}

/* Whole tables, whole aligned chunks, ranges across each chunk boundary,
 * single rows, the last partial chunk and random ranges. */
static void check_tables(const char *path, const xsprof_rank_data *full, const char *how)
{
    const void *want[XSPROF_IO_T_COUNT];
    size_t rows[XSPROF_IO_T_COUNT];
    tables_of(full, want, rows);
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char err[1024];
    xsprof_status st = xsprof_rankfile_open(path, ALL_EVENTS, &d, &rf, err, sizeof err);
    CHECK(st == XSPROF_OK && rf, "%s: open: %s", how, err);
    if (st != XSPROF_OK)
        return;
    same_rest(full, &d, ALL_EVENTS);
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        uint64_t n = xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)t);
        size_t chunk = xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t);
        CHECK(n == rows[t] && chunk == xsprof_io_table_block_rows((enum xsprof_io_table)t), "%s: %llu rows, chunk %zu",
              table_name(t), (unsigned long long)n, chunk);
        CHECK(n > chunk && n % chunk, "%s: the fixture should give several chunks and a partial one", table_name(t));
        if (n != rows[t] || !n)
            continue;
        int ok = same_range(rf, t, want[t], 0, rows[t], how);
        for (uint64_t at = 0; ok && at < n; at += chunk)
            ok = same_range(rf, t, want[t], at, (size_t)(n - at < chunk ? n - at : chunk), how);
        for (uint64_t at = chunk; ok && at < n; at += chunk)
            ok = same_range(rf, t, want[t], at - 3, (size_t)(n - at < 4 ? n - at + 3 : 7), how) &&
                 same_range(rf, t, want[t], at - 1, 1, how) && same_range(rf, t, want[t], at, 1, how);
        ok = ok && same_range(rf, t, want[t], n - 1, 1, how) && same_range(rf, t, want[t], 0, 1, how) &&
             same_range(rf, t, want[t], n - n % chunk, (size_t)(n % chunk), how) &&
             same_range(rf, t, want[t], n - n % chunk - 1, (size_t)(n % chunk) + 1, how);
        for (int k = 0; ok && k < 200; k++) {
            uint64_t first = next_rand() % n, len = 1 + next_rand() % (k % 4 == 0 ? 3 * chunk : 40);
            ok = same_range(rf, t, want[t], first, (size_t)(len > n - first ? n - first : len), how);
        }
        char buf[8];
        CHECK(xsprof_rankfile_read(rf, (enum xsprof_io_table)t, n, 0, buf, err, sizeof err) == XSPROF_OK,
              "%s: empty read at the end: %s", table_name(t), err);
    }
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);

    /* Some tables streamed, the others loaded and checked as load does. */
    unsigned some = 1u << XSPROF_IO_T_MPI | 1u << XSPROF_IO_T_ARGS | 1u << XSPROF_IO_T_CLOCK;
    st = xsprof_rankfile_open(path, some, &d, &rf, err, sizeof err);
    CHECK(st == XSPROF_OK, "%s: open with some tables streamed: %s", how, err);
    if (st == XSPROF_OK) {
        same_rest(full, &d, some);
        CHECK(xsprof_rankfile_table_rows(rf, XSPROF_IO_T_REGIONS) == 0 &&
                  xsprof_rankfile_table_chunk(rf, XSPROF_IO_T_REGIONS) == 1 &&
                  xsprof_rankfile_table_rows(rf, XSPROF_IO_T_ARGS) == rows[XSPROF_IO_T_ARGS],
              "rows of loaded and streamed tables");
        same_range(rf, XSPROF_IO_T_ARGS, want[XSPROF_IO_T_ARGS], 5, 3000, how);
        char buf[256];
        st = xsprof_rankfile_read(rf, XSPROF_IO_T_REGIONS, 0, 1, buf, err, sizeof err);
        CHECK(st == XSPROF_ERR_INVALID && strstr(err, path), "read of a loaded table: %d %s", st, err);
    }
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);
}

/* merge's decoder itself (installed, it could fall back to H5Dread
 * unnoticed): random ranges decode without falling back in every table
 * whose file type is its memory type (gpu and clock rows have padding the
 * file does not store: those are H5Dread's). */
static void check_decoder_direct(const char *path, const xsprof_rank_data *full)
{
    const void *want[XSPROF_IO_T_COUNT];
    size_t rows[XSPROF_IO_T_COUNT];
    tables_of(full, want, rows);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0, "cannot open %s", path);
    for (int t = 0; t < XSPROF_IO_T_COUNT && f >= 0; t++) {
        if (t == XSPROF_IO_T_GPU || t == XSPROF_IO_T_CLOCK)
            continue;
        hid_t ds = H5Dopen2(f, table_name(t), H5P_DEFAULT), mt = xsprof_h5_ds_mem_type((enum xsprof_h5_ds)t);
        size_t row = xsprof_io_table_row_size((enum xsprof_io_table)t), bad = 0;
        unsigned char *buf = malloc(rows[t] * row);
        for (int k = 0; k < 100; k++) {
            uint64_t first = k ? next_rand() % rows[t] : 0, n = k ? 1 + next_rand() % 5000 : rows[t];
            n = n > rows[t] - first ? rows[t] - first : n;
            int rc = xsm_chunks_rows(ds, mt, row, first, n, buf);
            bad += rc != 0 || !same_rows(t, buf, (const char *)want[t] + first * row, (size_t)n);
        }
        CHECK(bad == 0, "%s: xsm_chunks_rows failed or differed %zu times", table_name(t), bad);
        CHECK(xsm_chunks_rows(ds, mt, row, rows[t], 1, buf) == -1 && xsm_chunks_rows(ds, mt, row, 0, 0, buf) == -1,
              "%s: xsm_chunks_rows out of range", table_name(t));
        free(buf);
        H5Tclose(mt);
        H5Dclose(ds);
    }
    if (f >= 0)
        H5Fclose(f);
}

static void check_bad_requests(const char *path, const xsprof_rank_data *full)
{
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char err[1024];
    CHECK(xsprof_rankfile_open(path, ALL_EVENTS, &d, &rf, err, sizeof err) == XSPROF_OK, "open: %s", err);
    char buf[4096];
    uint64_t n = full->nmpi;
    /* One row too many, past the end, far past it, a length that wraps. */
    const uint64_t first[4] = {0, n - 1, UINT64_MAX, 5};
    const size_t len[4] = {(size_t)n + 1, 2, 1, SIZE_MAX};
    for (int k = 0; k < 4 && rf; k++) {
        xsprof_status st = xsprof_rankfile_read(rf, XSPROF_IO_T_MPI, first[k], len[k], buf, err, sizeof err);
        CHECK(st == XSPROF_ERR_FORMAT && strstr(err, path) && strstr(err, XSPROF_DS_MPI) && !strchr(err, '\n'),
              "out of range %llu + %zu: %d %s", (unsigned long long)first[k], len[k], st, err);
    }
    xsprof_status st = xsprof_rankfile_read(rf, (enum xsprof_io_table)XSPROF_IO_T_COUNT, 0, 1, buf, err, sizeof err);
    CHECK(st == XSPROF_ERR_INVALID && strstr(err, path), "unknown table: %d %s", st, err);
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);
    xsprof_rankfile_close(NULL);
    CHECK(xsprof_rankfile_table_rows(NULL, XSPROF_IO_T_MPI) == 0 && xsprof_rankfile_table_chunk(NULL, XSPROF_IO_T_MPI) == 1,
          "lookups on NULL");

    st = xsprof_rankfile_open(path, 1u << XSPROF_IO_T_COUNT, &d, &rf, err, sizeof err);
    CHECK(st == XSPROF_ERR_INVALID && !rf && strstr(err, path), "bad stream mask: %d %s", st, err);
    st = xsprof_rankfile_open(path, ALL_EVENTS, &d, NULL, err, sizeof err);
    CHECK(st == XSPROF_ERR_INVALID && strstr(err, path), "no handle: %d %s", st, err);

    /* Not HDF5, and absent: the same status and message as load. */
    const char *junk = path_in("junk.h5"), *absent = path_in("absent.h5");
    FILE *fp = fopen(junk, "w");
    if (fp) {
        fputs("not an HDF5 file at all\n", fp);
        fclose(fp);
    }
    const char *bad[] = {junk, absent, dir};
    for (int k = 0; k < 3; k++) {
        char lerr[1024];
        xsprof_rank_data l;
        xsprof_status ls = xsprof_rankfile_load(bad[k], &l, lerr, sizeof lerr);
        rf = (xsprof_rankfile *)&l; /* must be reset */
        st = xsprof_rankfile_open(bad[k], ALL_EVENTS, &d, &rf, err, sizeof err);
        CHECK(st != XSPROF_OK && st == ls && !strcmp(err, lerr) && !rf && !d.regions && !d.nstrings,
              "%s: open %d \"%s\", load %d \"%s\"", bad[k], st, err, ls, lerr);
    }
}

/* Flip a byte inside chunk 1 of the mpi table in a copy of the file. */
static int corrupt_copy(const char *from, const char *to, hsize_t chunk)
{
    hid_t f = H5Fopen(from, H5F_ACC_RDONLY, H5P_DEFAULT), ds = H5Dopen2(f, XSPROF_DS_MPI, H5P_DEFAULT);
    hsize_t off = chunk, size = 0;
    haddr_t addr = 0;
    unsigned mask = 0;
    herr_t rc = H5Dget_chunk_info_by_coord(ds, &off, &mask, &addr, &size);
    H5Dclose(ds);
    H5Fclose(f);
    CHECK(rc >= 0 && size > 16, "no chunk info");
    if (rc < 0 || size <= 16)
        return -1;
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int ok = in && out;
    for (int c; ok && (c = fgetc(in)) != EOF;)
        ok = fputc(c, out) != EOF;
    if (in)
        fclose(in);
    if (out && fseek(out, (long)(addr + size / 2), SEEK_SET) == 0) {
        FILE *rd = fopen(to, "rb");
        int c = rd && fseek(rd, (long)(addr + size / 2), SEEK_SET) == 0 ? fgetc(rd) : 0;
        if (rd)
            fclose(rd);
        ok = ok && fputc(c ^ 0x5a, out) != EOF;
    }
    if (out)
        ok = fclose(out) == 0 && ok;
    return ok ? 0 : -1;
}

static void check_damage(const char *path, const xsprof_rank_data *full, const char *how)
{
    const char *bad = path_in("corrupt.h5");
    size_t chunk = xsprof_io_table_block_rows(XSPROF_IO_T_MPI);
    if (corrupt_copy(path, bad, chunk))
        return;
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char err[1024];
    xsprof_status st = xsprof_rankfile_open(bad, ALL_EVENTS, &d, &rf, err, sizeof err);
    CHECK(st == XSPROF_OK, "%s: open of a file with a damaged chunk: %s", how, err);
    if (st != XSPROF_OK)
        return;
    size_t row = sizeof(xsprof_io_mpi);
    unsigned char *buf = malloc(full->nmpi * row);
    /* The whole table, one row of the damaged chunk, a range across into
     * it, a range from its last row on. */
    const uint64_t first[4] = {0, chunk + 17, chunk - 5, 2 * chunk - 1}, len[4] = {full->nmpi, 1, 10, 2};
    for (int k = 0; k < 4; k++) {
        st = xsprof_rankfile_read(rf, XSPROF_IO_T_MPI, first[k], (size_t)len[k], buf, err, sizeof err);
        CHECK(st == XSPROF_ERR_FORMAT && strstr(err, bad) && strstr(err, XSPROF_DS_MPI) && !strchr(err, '\n'),
              "%s: damaged chunk, rows %llu + %llu: %d %s", how, (unsigned long long)first[k],
              (unsigned long long)len[k], st, err);
    }
    /* The chunks around it still read. */
    same_range(rf, XSPROF_IO_T_MPI, full->mpi, 0, chunk, how);
    same_range(rf, XSPROF_IO_T_MPI, full->mpi, 2 * chunk, full->nmpi - 2 * chunk, how);
    free(buf);
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);
    xsprof_rank_data l;
    CHECK(xsprof_rankfile_load(bad, &l, err, sizeof err) == XSPROF_ERR_FORMAT, "load of the damaged file");
}

/* Several threads, each on its own handle, through whichever reader is
 * installed (merge's keeps scratch per thread, freed as each one ends). */
typedef struct reader_job {
    const char *path;
    const xsprof_rank_data *full;
    int bad;
} reader_job;

static void *reader_thread(void *arg)
{
    reader_job *j = arg;
    const void *want[XSPROF_IO_T_COUNT];
    size_t rows[XSPROF_IO_T_COUNT];
    tables_of(j->full, want, rows);
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char err[1024];
    if (xsprof_rankfile_open(j->path, ALL_EVENTS, &d, &rf, err, sizeof err) != XSPROF_OK) {
        j->bad = 1;
        return NULL;
    }
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        size_t row = xsprof_io_table_row_size((enum xsprof_io_table)t);
        size_t chunk = xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)t);
        unsigned char *buf = malloc(chunk * row);
        for (uint64_t at = 0; buf && at < rows[t]; at += chunk) {
            size_t n = rows[t] - at < chunk ? (size_t)(rows[t] - at) : chunk;
            j->bad += xsprof_rankfile_read(rf, (enum xsprof_io_table)t, at, n, buf, err, sizeof err) != XSPROF_OK ||
                      !same_rows(t, buf, (const char *)want[t] + at * row, n);
        }
        free(buf);
    }
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);
    return NULL;
}

static void check_threads(const char *path, const xsprof_rank_data *full, const char *how)
{
    enum { NT = 4 };
    pthread_t th[NT];
    reader_job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (reader_job){.path = path, .full = full};
        CHECK(pthread_create(&th[i], NULL, reader_thread, &jobs[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].bad == 0, "%s: thread %d: %d bad reads", how, i, jobs[i].bad);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rough single-thread rate: the mpi table read a chunk at a time, from a
 * fresh handle each round (HDF5's chunk cache starts empty). */
static void measure(const char *path, const char *how)
{
    double spent = 0;
    uint64_t rows = 0;
    size_t row = sizeof(xsprof_io_mpi);
    for (int round = 0; round < 400 && spent < 0.3; round++) {
        xsprof_rank_data d;
        xsprof_rankfile *rf = NULL;
        char err[1024];
        if (xsprof_rankfile_open(path, ALL_EVENTS, &d, &rf, err, sizeof err) != XSPROF_OK)
            return;
        uint64_t n = xsprof_rankfile_table_rows(rf, XSPROF_IO_T_MPI);
        size_t chunk = xsprof_rankfile_table_chunk(rf, XSPROF_IO_T_MPI);
        unsigned char *buf = malloc(chunk * row);
        double t0 = now();
        for (uint64_t at = 0; at < n; at += chunk)
            if (xsprof_rankfile_read(rf, XSPROF_IO_T_MPI, at, (size_t)(n - at < chunk ? n - at : chunk), buf, err,
                                     sizeof err) != XSPROF_OK)
                break;
        spent += now() - t0;
        rows += n;
        free(buf);
        xsprof_rankfile_close(rf);
        xsprof_rank_data_free(&d);
    }
    if (spent > 0)
        printf("test_io_stream: %s: mpi table %.1f M rows/s, %.0f MB/s decoded (one thread)\n", how,
               (double)rows / spent * 1e-6, (double)rows * (double)row / spent * 1e-6);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0777);
    const char *jp = path_in("stream.xsj"), *hp = path_in("rank-00000.h5");
    unlink(jp);
    unlink(hp);
    CHECK(jfx_write_mixed(jp, 150000) == 0, "write %s", jp);
    char err[1024];
    CHECK(xsprof_journal_convert(jp, hp, "finalized", err, sizeof err) == XSPROF_OK, "convert: %s", err);
    xsprof_rank_data full;
    xsprof_status st = xsprof_rankfile_load(hp, &full, err, sizeof err);
    CHECK(st == XSPROF_OK, "load: %s", err);
    if (st != XSPROF_OK)
        return io_check_result("test_io_stream");

    check_tables(hp, &full, "H5Dread");
    check_damage(hp, &full, "H5Dread");
    check_threads(hp, &full, "H5Dread");
    measure(hp, "H5Dread");
    xsprof_rankfile_set_rows_reader(xsm_chunks_rows);
    check_tables(hp, &full, "xsm_chunks_rows");
    check_damage(hp, &full, "xsm_chunks_rows");
    check_threads(hp, &full, "xsm_chunks_rows");
    measure(hp, "xsm_chunks_rows");
    xsprof_rankfile_set_rows_reader(NULL);
    check_decoder_direct(hp, &full);
    check_bad_requests(hp, &full);
    xsprof_rank_data_free(&full);
    return io_check_result("test_io_stream");
}
