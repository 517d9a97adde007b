/* io/reader.h — reader library for rank files (rank-NNNNN.h5) and for the
 * journals of ranks that died before writing one (rank-NNNNN.xsj). Used by
 * xsmerge and the tests. Owner: io.
 *
 * Every dataset's type and shape are validated before reading: a damaged or
 * foreign file yields XSPROF_ERR_FORMAT / XSPROF_ERR_VERSION and a one-line
 * message in `err` naming the file and the problem, never a crash. */
#ifndef XSPROF_IO_READER_H
#define XSPROF_IO_READER_H

#include <stddef.h>
#include <stdint.h>
#include "xsprof/xsprof.h"
#include "format.h"

typedef struct xsprof_rank_data {
    char path[4096];
    int format_version;
    int32_t rank;
    int32_t size;
    int64_t pid;
    char host[64];
    char job_id[64];
    char command[4096];
    char clock_source[32];
    char xsprof_version[32];
    char mpi_version[128];
    char end_state[64];         /* "finalized", "signal 11 (SIGSEGV)", "killed (no handler ran)", "running" ... */
    int64_t start_realtime_ns;
    int64_t start_clock_ns;
    uint64_t dropped;
    uint64_t anomalies;
    int truncated;              /* 1 when the rank did not finish normally */
    int recovered;              /* 1 when read from a journal, not a finished file */
    /* Size on disk of each event table (index: enum xsprof_io_table,
     * then XSPROF_STORED_SAMPLES for /events/samples): its rows and the
     * bytes HDF5 stores for them (compressed chunks), whether the table was
     * loaded or left in the file (streamed). Both 0 for a journal.
     * xsmerge --score sizes a run from them. */
#define XSPROF_STORED_SAMPLES 8
#define XSPROF_STORED_COUNT 9
    uint64_t stored_rows[XSPROF_STORED_COUNT], stored_bytes[XSPROF_STORED_COUNT];

    char **strings;             /* strings[id] */
    uint32_t nstrings;

    xsprof_io_region *regions; size_t nregions;
    xsprof_io_arg *args;       size_t nargs;
    xsprof_io_instant *instants; size_t ninstants;
    xsprof_io_counter *counters; size_t ncounters;
    xsprof_io_mpi *mpi;        size_t nmpi;
    xsprof_io_gpu *gpu;        size_t ngpu;
    xsprof_io_mem *mem;        size_t nmem;
    xsprof_io_clock *clock;    size_t nclock;
    xsprof_io_thread *threads; size_t nthreads;
    xsprof_io_comm *comms;     size_t ncomms;
    int32_t *comm_members;     size_t ncomm_members;
    xsprof_io_topo *topo;      size_t ntopo;
    xsprof_io_meta *meta;      size_t nmeta;
    xsprof_io_callstack *callstacks; size_t ncallstacks;
    uint64_t *frames;          size_t nframes;
    xsprof_io_module *modules; size_t nmodules;
    xsprof_io_sample *samples; size_t nsamples;
    xsprof_io_alloc_stack *alloc_stacks; size_t nalloc_stacks;
} xsprof_rank_data;

/* Load a whole rank file. On error `out` is left empty (safe to free). */
xsprof_status xsprof_rankfile_load(const char *path, xsprof_rank_data *out, char *err, size_t errlen);

/* Recover a rank's data from its journal (dead process). Sets recovered=1
 * and truncated=1 unless the journal says the process finalized. */
xsprof_status xsprof_journal_load(const char *path, xsprof_rank_data *out, char *err, size_t errlen);

void xsprof_rank_data_free(xsprof_rank_data *d);

/* A faster way to read a whole table, tried before H5Dread: `dataset` and
 * `mem_type` are HDF5 ids (hid_t), the table has `rows` rows of `row_size`
 * bytes, `buf` has room for them. Returns 0 when buf holds exactly what
 * H5Dread would have read, -1 to leave it to H5Dread (which then reports
 * any problem). Process-wide; set before loading, NULL for none. xsmerge
 * sets one that decodes the chunks in threads (merge/read/chunks.c). */
typedef int (*xsprof_table_read_fn)(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t rows, void *buf);
void xsprof_rankfile_set_table_reader(xsprof_table_read_fn fn);

/* Where the tables a load reads whole are allocated, and how the reader
 * frees table arrays (xsprof_rank_data_free, failed loads): `release` is
 * given every table array freed, whoever allocated it (a journal's grow
 * with realloc), so it must pass those it did not make to free(). NULL
 * (either): malloc and free. Process-wide, like the table reader. xsmerge
 * decodes straight into memory it shares with other processes. */
void xsprof_rankfile_set_table_alloc(void *(*alloc)(size_t bytes), void (*release)(void *p));

/* Call stack / module by id (binary search of the id-ordered tables), NULL
 * when none: an id an MPI row names may be missing from a journal cut short
 * by damage. */
const xsprof_io_callstack *xsprof_rank_data_callstack(const xsprof_rank_data *d, uint32_t id);
const xsprof_io_module *xsprof_rank_data_module(const xsprof_rank_data *d, uint32_t id);

/* String by id, "?" when out of range (never NULL). */
const char *xsprof_rank_data_string(const xsprof_rank_data *d, uint32_t id);

/* The tag is io/journal_read.h's, which includes this header before it
 * defines the enum. */
enum xsprof_io_table;
#include "io/journal_read.h"

/* Streaming access to a rank file (xsmerge's bounded-memory mode). Everything
 * except the event tables whose bits (1u << enum xsprof_io_table) are in
 * `stream` is loaded into *out with the same checks as xsprof_rankfile_load;
 * streamed tables stay NULL with count 0 in *out (their rows:
 * xsprof_rankfile_table_rows), their types and shapes are validated at open.
 * Cross-table references of streamed tables (region -> args) are the
 * caller's to check row by row. On error *rf is NULL and out is empty. */
typedef struct xsprof_rankfile xsprof_rankfile;
xsprof_status xsprof_rankfile_open(const char *path, unsigned stream, xsprof_rank_data *out, xsprof_rankfile **rf,
                                   char *err, size_t errlen);
/* Rows of streamed table t; 0 if t is not streamed. */
uint64_t xsprof_rankfile_table_rows(const xsprof_rankfile *rf, enum xsprof_io_table t);
/* Rows per stored HDF5 chunk of t (reads of whole aligned chunks are
 * cheapest), >= 1. */
size_t xsprof_rankfile_table_chunk(const xsprof_rankfile *rf, enum xsprof_io_table t);
/* Read rows [first, first + n) of streamed table t into buf (io/format.h
 * row layout). Any damage (bad checksum, short chunk, out of range) gives
 * XSPROF_ERR_FORMAT and one line in err naming the file and dataset. May be
 * called from several threads at once on different rf (HDF5 serializes its
 * own calls). */
xsprof_status xsprof_rankfile_read(xsprof_rankfile *rf, enum xsprof_io_table t, uint64_t first, size_t n, void *buf,
                                   char *err, size_t errlen);
/* Close the HDF5 file kept open since xsprof_rankfile_open. NULL ok. */
void xsprof_rankfile_close(xsprof_rankfile *rf);

/* Like xsprof_rankfile_set_table_reader, for row ranges of streamed tables:
 * returns 0 when buf holds exactly what H5Dread of that hyperslab gives, -1
 * to let H5Dread do it. xsmerge sets merge/read/chunks.c's xsm_chunks_rows. */
typedef int (*xsprof_rows_read_fn)(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t first, uint64_t n,
                                   void *buf);
void xsprof_rankfile_set_rows_reader(xsprof_rows_read_fn fn);

/* Streamed tables read without HDF5. An open HDF5 file costs ~800 KB (its
 * metadata cache is a fixed hash table) and a descriptor, and xsmerge's
 * streaming mode holds every rank file at once. With these set,
 * xsprof_rankfile_open asks `prepare` whether a streamed table's chunks can
 * be decoded outside HDF5 (a plan, or NULL), and when every streamed table
 * can, notes where each stored chunk lies and closes the file; reads then
 * go to `read`, which returns 0 when buf holds exactly the rows H5Dread
 * would give, -1 when a chunk does not decode (damage). Files that cannot
 * be detached stay open and read as before. */
typedef struct xsprof_raw_table {
    const char *path;
    uint64_t rows, chunk_rows;  /* chunk k holds rows [k * chunk_rows, ...) */
    const uint64_t *addr;       /* per chunk: byte offset in the file */
    const uint32_t *size;       /* per chunk: stored bytes */
    void *plan;                 /* prepare's */
} xsprof_raw_table;
typedef void *(*xsprof_raw_prepare_fn)(int64_t dataset, int64_t mem_type, size_t row_size);
typedef int (*xsprof_raw_read_fn)(const xsprof_raw_table *t, uint64_t first, uint64_t n, void *buf);
void xsprof_rankfile_set_raw_reader(xsprof_raw_prepare_fn prepare, xsprof_raw_read_fn read, void (*free_plan)(void *));
/* 1 when rf's file is closed and its tables are read without HDF5. */
int xsprof_rankfile_detached(const xsprof_rankfile *rf);
/* Files with a streamed table of more than max_chunks chunks (default 512)
 * stay open and are read through HDF5 (io/reader.c says why). */
void xsprof_rankfile_set_detach_limit(size_t max_chunks);

#endif
