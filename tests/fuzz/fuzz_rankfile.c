/* Rank-file reader (io/reader.h) on arbitrary bytes in a file: any input
 * must give XSPROF_OK or an error with a message, never a crash, a leak or
 * an out-of-bounds access. The streaming reader (xsprof_rankfile_open/read,
 * xsmerge --stream) gets the same input, and when the whole-file load
 * succeeds its row-by-chunk reads must give the very same rows. */
#include "fuzz.h"
#include "io/reader.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    int table;
    size_t off_rows, off_n; /* where the load puts that table in xsprof_rank_data */
} fz_tables[] = {
    {XSPROF_IO_T_REGIONS, offsetof(xsprof_rank_data, regions), offsetof(xsprof_rank_data, nregions)},
    {XSPROF_IO_T_ARGS, offsetof(xsprof_rank_data, args), offsetof(xsprof_rank_data, nargs)},
    {XSPROF_IO_T_INSTANTS, offsetof(xsprof_rank_data, instants), offsetof(xsprof_rank_data, ninstants)},
    {XSPROF_IO_T_COUNTERS, offsetof(xsprof_rank_data, counters), offsetof(xsprof_rank_data, ncounters)},
    {XSPROF_IO_T_MPI, offsetof(xsprof_rank_data, mpi), offsetof(xsprof_rank_data, nmpi)},
    {XSPROF_IO_T_GPU, offsetof(xsprof_rank_data, gpu), offsetof(xsprof_rank_data, ngpu)},
    {XSPROF_IO_T_MEM, offsetof(xsprof_rank_data, mem), offsetof(xsprof_rank_data, nmem)},
};
#define FZ_NTABLES (sizeof fz_tables / sizeof fz_tables[0])

/* Stream every event table a chunk at a time (at most 64 chunks each);
 * with `whole` (the load of the same file), compare the rows. */
static void fz_stream(const char *path, const xsprof_rank_data *whole)
{
    unsigned mask = 0;
    for (size_t t = 0; t < FZ_NTABLES; t++)
        mask |= 1u << fz_tables[t].table;
    xsprof_rank_data d;
    xsprof_rankfile *rf = NULL;
    char err[512] = "";
    xsprof_status st = xsprof_rankfile_open(path, mask, &d, &rf, err, sizeof err);
    if (st != XSPROF_OK && !err[0])
        abort();
    if (whole && st != XSPROF_OK)
        abort(); /* loadable, so openable */
    if (st != XSPROF_OK)
        return;
    for (size_t t = 0; t < FZ_NTABLES; t++) {
        enum xsprof_io_table tb = (enum xsprof_io_table)fz_tables[t].table;
        uint64_t n = xsprof_rankfile_table_rows(rf, tb);
        size_t chunk = xsprof_rankfile_table_chunk(rf, tb), row = xsprof_io_table_row_size(tb);
        const unsigned char *want = whole ? *(unsigned char *const *)((const char *)whole + fz_tables[t].off_rows) : NULL;
        if (whole && n != *(const size_t *)((const char *)whole + fz_tables[t].off_n))
            abort();
        unsigned char *buf = malloc(chunk * row + 1);
        if (!buf)
            break;
        for (uint64_t first = 0, k = 0; first < n && k < 64; first += chunk, k++) {
            size_t cnt = n - first < chunk ? (size_t)(n - first) : chunk;
            err[0] = 0;
            st = xsprof_rankfile_read(rf, tb, first, cnt, buf, err, sizeof err);
            if (st != XSPROF_OK && !err[0])
                abort();
            if (whole && (st != XSPROF_OK || memcmp(buf, want + first * row, cnt * row) != 0))
                abort(); /* the streamed rows are the loaded rows */
        }
        err[0] = 0;
        if (xsprof_rankfile_read(rf, tb, n, 1, buf, err, sizeof err) == XSPROF_OK || !err[0])
            abort(); /* past the end: an error with a message */
        free(buf);
    }
    xsprof_rankfile_close(rf);
    xsprof_rank_data_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_file(data, size, ".h5");
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    char err[512] = "";
    xsprof_status st = xsprof_rankfile_load(path, &d, err, sizeof err);
    if (st != XSPROF_OK && !err[0])
        abort();
    if (st == XSPROF_OK)
        for (size_t i = 0; i < d.nregions; i++)
            (void)xsprof_rank_data_string(&d, d.regions[i].name);
    if (st == XSPROF_OK)
        fuzz_walk_code(&d);
    fz_stream(path, st == XSPROF_OK ? &d : NULL);
    xsprof_rank_data_free(&d);
    return 0;
}
