/* merge/model.h — the in-memory model that xsmerge's stages pass along:
 * read -> align -> match -> analyse -> emit. Owner: merge.
 * After align, every timestamp in ranks[i].d (regions, mpi, gpu, instants,
 * counters, memory) is on the reference clock, in ns since the job's first
 * event (t = 0), so later stages never convert time again. */
#ifndef XSPROF_MERGE_MODEL_H
#define XSPROF_MERGE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "io/reader.h"

typedef struct xsm_rank {
    xsprof_rank_data d;   /* loaded rank file or recovered journal */
    int present;          /* 0 when the rank is missing (--partial) or left out */
    int left_out;         /* not present because --ranks chose others: not missing */
    int64_t correction_ns; /* largest clock-condition correction applied */
    /* Added by merge (additive): streaming mode (merge/stream/) leaves the
     * event tables in the file: its handle, and the rows it holds. */
    struct xsprof_rankfile *rf;
    uint64_t stream_rows;
    /* Collective mode on one node: the event tables (regions, args,
     * instants, counters, mpi, gpu, mem) are the memory of the process that
     * loaded the rank, mapped read-only here; that process alone converts
     * their times, the others wait (xsm_run.sync) and read. */
    int ro;
    /* Added by merge (additive): the logical clock's map of this rank's
     * interpolated times, (t, C) pairs where its shift changes (NULL, 0:
     * the identity), for the records no stage moves (samples:
     * xsm_align_rank_clock). Owned when knots_own; else the streamed
     * merge's (its knot file). */
    int64_t *knots;
    size_t nknots;
    int knots_own;
} xsm_rank;

/* One matched point-to-point message. Indices are rows of ranks[x].d.mpi. */
typedef struct xsm_message {
    int32_t src, dst;     /* world ranks */
    uint32_t comm;
    int32_t tag;
    uint64_t bytes;
    size_t send_row;      /* Send/Ssend/Isend/Sendrecv row on src */
    size_t recv_row;      /* row on dst that completed the receive: Recv, Sendrecv or COMPLETION */
    int64_t recv_post_row; /* Irecv row on dst (-1 for blocking receives) */
    int64_t send_completion_row; /* COMPLETION/Wait row for an Isend on src, -1 if none */
    /* Added by merge (additive): the call on dst whose interval shows the
     * receive — recv_row itself for Recv/Sendrecv, else the Wait/Test call on
     * the same thread that holds the COMPLETION row (recv_row if none). */
    size_t recv_call_row;
} xsm_message;

/* One collective instance: the same (comm, coll_seq) on every member. */
typedef struct xsm_collective {
    uint32_t comm;
    uint64_t coll_seq;
    uint32_t op;          /* string id on ranks[members[0]] */
    int coll_kind;        /* enum xsprof_coll_kind */
    int32_t root;         /* world rank or -1 */
    size_t n;             /* members seen */
    int32_t *ranks;       /* world ranks, n entries */
    size_t *rows;         /* mpi row on each rank, n entries */
    /* Added by merge (additive): streaming mode's members' begin and end
     * (final times; NULL: read them from the rows) */
    int64_t *tb, *te;
} xsm_collective;

typedef struct xsm_clock_stats {
    uint64_t violations_before; /* messages received before sent / collective exits before last entry, after offset interpolation only */
    uint64_t violations_after;  /* same after the controlled logical clock (must be 0) */
    int64_t max_correction_ns;  /* largest shift applied by the logical clock */
    double max_residual_us;     /* largest clock-sample error bound (rtt/2) */
} xsm_clock_stats;

enum { XSM_REDUCE_SUM, XSM_REDUCE_MIN, XSM_REDUCE_MAX };

/* The sends of one rank that no receive matched though their destination
 * ran to its end with every record: the application never received them
 * (a message to itself before MPI_Finalize), not data the profiler lost.
 * dst_min/dst_max: the destinations' range; self: those to itself. */
typedef struct xsm_unrecv {
    int64_t msgs, self, dst_min, dst_max;
} xsm_unrecv;

typedef struct xsm_run {
    char run_dir[4096];
    xsm_rank *ranks;      /* indexed by world rank, nranks entries */
    size_t nranks;
    xsm_message *msgs; size_t nmsgs;
    xsm_collective *colls; size_t ncolls;
    size_t unmatched_sends, unmatched_recvs, incomplete_colls;
    /* Added by merge (additive): of unmatched_sends, the application's
     * own (xsm_unrecv), per sending rank (NULL when none) and in all */
    xsm_unrecv *unrecv;
    size_t unreceived;
    /* Added by merge (additive): under mpirun -np K xsmerge, the files in
     * which the K processes left the addresses of their ranks they resolved
     * (<dir>/.xsm-symbols-<p>, merge/analyze/frames.c), loaded by the
     * report's resolver; NULL: none. */
    const char *sym_share_dir;
    int sym_share_parts;
    xsm_clock_stats clock;
    int64_t t_end;        /* last event, reference clock (ns since t = 0) */
    char command[4096];
    char job_id[64];
    /* Added by merge (additive): reference-clock time of t = 0, and the
     * minimum message latency the logical clock enforced. */
    int64_t t0_ref_ns;
    int64_t min_latency_ns;
    /* Collective mode with ro ranks: wait until every process has written
     * what it owns (NULL: nothing to wait for). */
    void (*sync)(void *ctx);
    void *sync_ctx;
    /* With sync: passes divided among the processes (match) take the
     * ranks r with r % parts == part, writing into `shm` regions: zero-filled,
     * mapped writable in every process, asked for by all processes with the
     * same size (0: this one cannot go on) and given to all or, NULL, to
     * none. Released with munmap. NULL hook: not divided. */
    void *(*shm)(void *ctx, size_t bytes);
    int part, parts;
    /* With sync: v[0..n) becomes the sum (XSM_REDUCE_SUM), least or largest
     * of every process's v, in all of them (collective; NULL: one process).
     * Passes that only count (clock violations, the span for t = 0) are
     * divided by it among the processes the same way as match. */
    void (*reduce)(void *ctx, int64_t *v, size_t n, int op);
    size_t msgs_shm_len; /* msgs is such a region of this length (0: malloc) */
    /* Added by merge (additive): --from/--to in aligned time (ns since
     * t = 0; win_to INT64_MAX without --to), set by read/select.c and the
     * streamed merge. The events kept overlap it; the report clips every
     * interval it measures to it (xsm_run_clip). win 0: no window. */
    int win;
    int64_t win_from, win_to;
} xsm_run;

/* --from/--to on the run (to: INT64_MAX without --to): it ends at the
 * window's end at most, and the report clips what it measures to it. */
static inline void xsm_run_window_set(xsm_run *run, int64_t from, int64_t to)
{
    if (run->t_end > to)
        run->t_end = to;
    run->win = 1;
    run->win_from = from;
    run->win_to = to;
}

/* [*b, *e] clipped to run's window (unchanged without one). An event kept
 * overlaps it, so *b <= *e stays true of a well-formed one. */
static inline void xsm_run_clip(const xsm_run *run, int64_t *b, int64_t *e)
{
    if (!run->win)
        return;
    if (*b < run->win_from)
        *b = run->win_from;
    if (*b > run->win_to)
        *b = run->win_to;
    if (*e > run->win_to)
        *e = run->win_to;
    if (*e < run->win_from)
        *e = run->win_from;
}

/* Whether this process does item i of a pass divided by xsm_run.reduce
 * (i % parts == part; every item when nothing is divided). */
static inline int xsm_run_mine(const xsm_run *run, size_t i)
{
    return !run->reduce || run->parts <= 1 || (int)(i % (size_t)run->parts) == run->part;
}

#endif
