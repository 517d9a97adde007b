/* merge/read/read.h — stage 1 of xsmerge: find, load and validate the rank
 * files of a run directory, then drive align and match (xsm_run_load in
 * pipeline.h is the serial entry point). Owner: merge.
 *
 * Loading is split from validation so that collective mode can divide the
 * files among processes: each process loads its share, a `share` callback
 * gives every process all results, and validation then runs identically
 * everywhere (same errors, same model, same output). */
#ifndef XSPROF_MERGE_READ_H
#define XSPROF_MERGE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "merge/pipeline.h"

/* One rank number found in the directory (from the file names). */
typedef struct xsm_candidate {
    int32_t rank;
    char h5[4096];  /* "" when absent */
    char xsj[4096]; /* "" when absent */
} xsm_candidate;

/* Every table of a loaded rank (xsprof_rank_data): X(array, count, ev),
 * ev 1 for the event tables (rows with times), 0 for the rest. */
#define XSM_RANK_TABLES(X)                                                                                 \
    X(regions, nregions, 1) X(args, nargs, 1) X(instants, ninstants, 1) X(counters, ncounters, 1)         \
    X(mpi, nmpi, 1) X(gpu, ngpu, 1) X(mem, nmem, 1) X(clock, nclock, 0) X(threads, nthreads, 0)            \
    X(comms, ncomms, 0) X(comm_members, ncomm_members, 0) X(topo, ntopo, 0) X(meta, nmeta, 0)            \
    X(callstacks, ncallstacks, 0) X(frames, nframes, 0) X(modules, nmodules, 0)  \
    X(samples, nsamples, 0)

/* What loading one candidate produced. */
typedef struct xsm_loaded {
    int status;      /* 0 loaded, 1 unreadable (err), -1 not loaded here */
    char err[1024];  /* one line naming the file */
    char note[1024]; /* e.g. "recovered from journal"; "" if none */
    xsprof_rank_data d;
    struct xsprof_rankfile *rf; /* streaming mode: the open file (tables left in it) */
    int ro; /* its event tables are another process's, mapped read-only (xsm_rank.ro) */
} xsm_loaded;

typedef struct xsm_par {
    int rank, size; /* this process among the merging processes */
    int local;      /* the merging processes on this process's node (1 when serial) */
    int lrank;      /* this process among those (rank on one node) */
    /* The processes of a node divide the run's files among them (i % local
     * == lrank; every node loads them all, so no table crosses nodes), and
     * share them: give every process of the node every entry of loaded[]
     * (status != -1 on exactly one process of the node each). Returns 0,
     * or 1 with err set. sync, shm and reduce are the node's too. */
    int (*share)(xsm_loaded *loaded, size_t n, void *ctx, char *err, size_t errlen);
    void *ctx;
    /* Wait for every process of the node: after each converted the times
     * of the shared tables it owns (xsm_run.sync). */
    void (*sync)(void *ctx);
    /* A region shared by the processes of one node (xsm_run.shm). */
    void *(*shm)(void *ctx, size_t bytes);
    /* Combine n values of the node's processes, each by op (xsm_run.reduce). */
    void (*reduce)(void *ctx, int64_t *v, size_t n, int op);
    int map_ok; /* share may map other processes' tables (the caller's choice) */
    int mapped; /* share did (the same on every process of the node): their times wait on sync */
    /* 1 when every merging process, on every node, gives the same v
     * (collective): they all see the same rank files. */
    int (*same)(void *ctx, uint64_t v);
} xsm_par;

/* Load the entries of l[] whose status is 0 (xsm_loaded as `load` fills
 * it) with up to `procs` processes: helpers forked here decode a share
 * each and hand the entries back; the result is the same as calling `load`
 * on each in turn. `step` (may be NULL) is called once per entry. Returns
 * 0, or -1 when no helper could be started (nothing was loaded). */
int xsm_read_forked(const xsm_candidate *c, xsm_loaded *l, size_t n, int procs,
                    void (*load)(const xsm_candidate *, xsm_loaded *), void (*step)(void));

/* Release a loaded rank's data: as xsprof_rank_data_free, but tables that
 * point into a helper's mapped memory file stay to the mapping (unmapped
 * with the last entry using it). Use it for every xsm_loaded and run rank. */
void xsm_read_release(xsprof_rank_data *d);

/* Sharing loaded tables between the merging processes of one node
 * (collective mode, par.c): where p lies in a memory file this process
 * mapped (a helper's), with our descriptor of it and its length (1), or 0;
 * another process's memory file mapped read-only here (once per file;
 * NULL when it cannot be opened); an entry now pointing into the mapping
 * at base (released with xsm_read_release); and mappings no entry uses
 * dropped. */
int xsm_read_map_of(const void *p, int *fd, uint64_t *off, uint64_t *len);
const void *xsm_read_map_peer(int64_t pid, int fd, uint64_t len);
void xsm_read_map_hold(const void *base);
void xsm_read_map_sweep(void);
/* Another process's memory file of `len` bytes (its pid and descriptor),
 * mapped shared here, read-only or writable; not recorded for entries
 * (unmap it yourself). NULL when it cannot be opened or has another length. */
void *xsm_read_open_peer(int64_t pid, int fd, uint64_t len, int writable);

/* Loading while MPI starts (collective mode): MPI_Init mostly waits (0.25 s
 * wall, 0.02 s CPU here) and a process must not fork once it has run, so
 * before it a helper process starts loading the entries want[] marks (the
 * files process `rank` of `size` loads), taking each that nobody claimed
 * yet. c and want are the helper's from then on (freed with it). NULL when
 * no helper could start (c and want stay the caller's). */
typedef struct xsm_early xsm_early;
xsm_early *xsm_early_fork(xsm_candidate *c, unsigned char *want, size_t n, int rank, int size, size_t max,
                          uint64_t budget, void (*load)(const xsm_candidate *, xsm_loaded *));
/* 1 when the helper's candidates and division are those of this load
 * (status 0 = this process's entries): the directory may have changed, or
 * MPI may number the processes otherwise than the launcher's variables. */
int xsm_early_fits(const xsm_early *e, const xsm_candidate *c, const xsm_loaded *l, size_t n, int rank, int size);
/* Load the entries of l[] with status 0 not yet claimed (from the end),
 * wait for the helper, take what it loaded, load what it did not deliver;
 * frees e. Returns 0, or -1 (out of memory; e stays). */
int xsm_early_finish(xsm_early *e, xsm_loaded *l, size_t n, void (*load)(const xsm_candidate *, xsm_loaded *),
                     void (*step)(void));
/* Stop the helper and free e (NULL: nothing). */
void xsm_early_cancel(xsm_early *e);

/* Start loading before MPI_Init for process `rank` of the `size` on its
 * node (read.c:
 * the scan, --ranks and the division of xsm_run_load_par), when the run
 * surely fits in memory; the helper takes at most `max` files (the
 * process the rest). NULL when not started. */
xsm_early *xsm_read_early_start(const char *run_dir, const xsm_load_opts *opts, int rank, int size, int threads,
                                uint64_t budget, size_t max);

/* Allow (1, the default) or forbid (0) helper processes in later loads:
 * an MPI process should not fork (collective mode divides files anyway). */
void xsm_read_allow_fork(int allow);

/* Read a whole chunked table for the io reader (xsprof_table_read_fn):
 * raw chunks fetched by HDF5, checksum, inflate and unshuffle done in up to
 * xsm_chunks_set_threads threads straight into buf. Returns 0, or -1 when
 * H5Dread should read the table instead. */
int xsm_chunks_read(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t rows, void *buf);
void xsm_chunks_set_threads(int n);
/* The same for rows [first, first + n) of a streamed table
 * (xsprof_rows_read_fn): the chunks covering them are fetched and decoded
 * one by one on the calling thread (callers parallelise across files),
 * with per-thread scratch kept between calls. Returns 0, or -1 when
 * H5Dread should read the rows instead. */
int xsm_chunks_rows(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t first, uint64_t n, void *buf);

/* io/reader.h's raw reader for streamed tables of closed rank files: the
 * plan of a table this file decodes (NULL otherwise), its release, and rows
 * [first, first + n) read by file offset and decoded without HDF5. */
void *xsm_chunks_raw_plan(int64_t dataset, int64_t mem_type, size_t row_size);
void xsm_chunks_raw_free(void *plan);
int xsm_chunks_raw_rows(const xsprof_raw_table *t, uint64_t first, uint64_t n, void *buf);

/* Region names "fn@0x<address>" (-finstrument-functions regions, named
 * by address at capture) replaced by the function's name (fnames.c);
 * done for every rank as it is loaded. */
void xsm_read_name_functions(xsprof_rank_data *d);

/* The object holding process address a in rank d's modules table (the one
 * loaded longest if an address was reused after an unload: functions live
 * as long as the run), NULL none (fnames.c; the analysis's call sites and
 * samples resolve through it too). */
const xsprof_io_module *xsm_read_module_at(const xsprof_rank_data *d, uint64_t a);

/* Where process address a of rank d is (merge/symbols; ret: a return
 * address, looked up at the call). *mod (when given): its module, NULL
 * none. NULL when no module holds it, or (with a module) when memory ran
 * out. The one way the analysis and the function names resolve addresses. */
struct xsm_symbols;
struct xsm_loc;
const struct xsm_loc *xsm_read_locate(struct xsm_symbols *s, const xsprof_rank_data *d, uint64_t a, int ret,
                                      const xsprof_io_module **mod);

/* List the rank files of dir (or the single file `dir`), sorted by rank.
 * Returns 0, or 1 with err naming the path. */
int xsm_read_scan(const char *dir, xsm_candidate **out, size_t *n, char *err, size_t errlen);

/* Rows of the event tables of the rank files among c[0..n) (opened, not
 * read: HDF5 knows each table's length) and their bytes as rows of
 * io/format.h; files that cannot be opened count nothing (the merge words
 * their error). Of more than 64 rank files, 64 spread over the run are
 * opened and the rest estimated from file sizes. A journal without a rank
 * file counts its size as bytes and a record per 40 bytes. */
void xsm_read_count(const xsm_candidate *c, size_t n, uint64_t *rows, uint64_t *bytes);

/* Bytes the in-memory model of c[0..n) would take, as far as a comparison
 * with budget needs: 0 when the rank files' sizes alone show it fits (they
 * hold 1-4 bytes per event, the model up to ~400 per file byte), else the
 * tables' row bytes (xsm_read_count) plus per_row for each of their *rows
 * rows. */
uint64_t xsm_read_need(const xsm_candidate *c, size_t n, uint64_t budget, uint64_t per_row, uint64_t *rows);

/* Like xsm_run_load, with collective loading when par is not NULL, and notes
 * (recovered ranks, unmatched operations) printed to `notes` when set. */
int xsm_run_load_par(const char *run_dir, const xsm_load_opts *opts, const xsm_par *par, FILE *notes,
                     xsm_run *run, char *err, size_t errlen);

/* Keep only events that overlap [from_ns, to_ns] (aligned times); messages
 * and collectives are kept when their rows are, row indices are remapped.
 * Returns 0, or 1 on OOM. */
int xsm_select_window(xsm_run *run, int64_t from_ns, int64_t to_ns, char *err, size_t errlen);

/* 1 with err set when --from (from_ns) is after the run's last event
 * (run->t_end, before the window clamps it): the window would hold nothing,
 * as --ranks naming no rank file selects nothing. In memory and streamed. */
int xsm_window_check(const xsm_run *run, int64_t from_ns, char *err, size_t errlen);

#endif
