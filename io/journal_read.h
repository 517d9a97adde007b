/* io/journal_read.h — validating parser of a journal file (core/journal.h).
 * Owner: io. Shared by the HDF5 converter (writer.c) and journal recovery
 * (reader.c): both see the same rows, so a converted file and a recovered
 * journal agree by construction.
 *
 * The journal may come from a process that died at any instruction, or be
 * damaged on disk: every size and offset read from it is checked against the
 * file before use. Damage truncates the affected chunk (counted in
 * `damaged`); only an unusable file header is an error. */
#ifndef XSPROF_IO_JOURNAL_READ_H
#define XSPROF_IO_JOURNAL_READ_H

#include <stddef.h>
#include <stdint.h>
#include "xsprof/xsprof.h"
#include "io/reader.h"

/* Event tables, in the order of the io/format.h datasets. */
enum xsprof_io_table {
    XSPROF_IO_T_REGIONS = 0,
    XSPROF_IO_T_ARGS,
    XSPROF_IO_T_INSTANTS,
    XSPROF_IO_T_COUNTERS,
    XSPROF_IO_T_MPI,
    XSPROF_IO_T_GPU,
    XSPROF_IO_T_MEM,
    XSPROF_IO_T_CLOCK,
    XSPROF_IO_T_COUNT
};

/* Rows per delivered block; the writer uses the same count as its HDF5
 * chunk size so that every append writes whole chunks. Lookups: 0 for an
 * unknown table, they cannot fail otherwise. */
size_t xsprof_io_table_block_rows(enum xsprof_io_table t);
size_t xsprof_io_table_row_size(enum xsprof_io_table t);

/* Receives rows of one table, in file order (per thread in record order,
 * threads one after the other). `rows` is valid only during the call. */
typedef xsprof_status (*xsprof_io_rows_fn)(void *user, enum xsprof_io_table t, const void *rows, size_t n);

typedef struct xsprof_journal_stats {
    uint32_t state;     /* enum xsprof_journal_state from the header */
    int32_t signal;     /* fatal signal when state == SIGNALED */
    uint64_t damaged;   /* chunks or string entries cut short by damage */
    uint64_t orphan_args; /* ARG records whose region never completed */
    char meta_end_state[64]; /* META "end_state" written at finalize, "" if none */
    char header_end_state[64]; /* header end_state (core sets it at finalize), "" if none */
    int writer_alive;   /* RUNNING with a recent heartbeat: the process still runs */
} xsprof_journal_stats;

/* Parse `path`. Fills the identity fields of `out` (rank, size, pid, host,
 * job_id, clock_source, xsprof_version, start times, dropped, anomalies,
 * command and mpi_version from META) and its definition tables (strings,
 * threads, comms, comm_members, topo, meta); event rows go to `fn` in blocks.
 * Leaves end_state/truncated/recovered to the caller. On error `out` may hold
 * partial definitions: free it with xsprof_rank_data_free. */
xsprof_status xsprof_journal_parse(const char *path, xsprof_rank_data *out, xsprof_journal_stats *stats,
                                   xsprof_io_rows_fn fn, void *user, char *err, size_t errlen);

/* How the rank ended: the META "end_state" core writes at finalize when
 * present, else from the header state: "signal 11 (SIGSEGV)" or
 * "killed (no handler ran)" (or "finalized"). Formats into buf; no failure
 * to report. */
void xsprof_journal_end_state(const xsprof_journal_stats *st, char *buf, size_t len);

/* Following a journal while its process writes it (xsmerge --live): each
 * poll delivers to `fn` only the records committed since the previous one
 * (per chunk, the bytes past what was read), reads the strings added since,
 * and refreshes the header's identity, state and drop count in `out` and
 * `stats`, which the caller keeps from poll to poll (definition tables grow
 * in place; threads are not sorted). Row indices continue across polls.
 * The file is opened read-only and never written; a journal unlinked at
 * finalize stays readable through the open descriptor. Region arguments
 * split across two polls are not delivered. XSPROF_ERR_STATE: the header
 * is not written yet (poll again). */
typedef struct xsprof_journal_follow xsprof_journal_follow;
xsprof_status xsprof_journal_follow_open(const char *path, xsprof_journal_follow **out, char *err, size_t errlen);
xsprof_status xsprof_journal_follow_poll(xsprof_journal_follow *f, xsprof_rank_data *out, xsprof_journal_stats *stats,
                                         xsprof_io_rows_fn fn, void *user, char *err, size_t errlen);
void xsprof_journal_follow_close(xsprof_journal_follow *f);

#endif
