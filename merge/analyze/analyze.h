/* merge/analyze/analyze.h — the bottleneck analysis and its reports
 * (report.txt/json/html, flame.folded/svg, callgrind, baseline regression).
 * Owner: merge analysis. Reads the aligned, matched xsm_run; never changes it. */
#ifndef XSPROF_MERGE_ANALYZE_H
#define XSPROF_MERGE_ANALYZE_H

#include <stddef.h>
#include <stdio.h>
#include "merge/model.h"
#include "io/format.h"

/* The look-back window in memory, in calls per rank: what a rank keeps
 * per call (~0.5 KB) stays well below its rows in the model, and the
 * lookups that scan it stay cheap (they are linear). */
#define XSM_MEMORY_WINDOW 256

typedef struct xsm_report_opts {
    const char *baseline_dir; /* --baseline: earlier runs, a comma list (run dirs, output dirs, report.json) */
    double threshold_pct;     /* --threshold, default 5 */
    const char *diff_dir;     /* --diff: baseline for a differential flame graph */
    int callgrind;            /* --format callgrind: also write callgrind.out */
    double score_for;         /* --score-for: a factor, or minus a duration in seconds; 0: 10x */
    int quiet;
    FILE *summary;            /* where the one-screen summary is printed (stdout), NULL: none */
    struct xsm_an **keep;     /* not NULL: receives the analysis (xsm_analyze_h5, then xsm_analyze_free) */
    const struct xsm_emit *emit; /* the writers' prepared trace with every rank's orders and flows, read by
                                    the analysis instead of preparing its own (NULL: it prepares them) */
    size_t window;            /* a streamed analysis's look-back in MPI calls per rank (0: 16, its
                                 bounded default; XSPROF_MERGE_ANALYSIS_WINDOW overrides either) */
} xsm_report_opts;

/* Under mpirun -np K xsmerge: this process (part of parts) resolves its
 * share of the run's unique recorded addresses (by a hash of module and
 * address) with merge/symbols and leaves them in dir for the report's
 * process (run->sym_share_dir), so the K processes divide that work;
 * *resolved: how many; _unshare removes the file. 0, or -1 with err set. */
int xsm_an_symbols_share(const xsm_run *run, int part, int parts, const char *dir, uint64_t *resolved, char *err,
                         size_t errlen);
void xsm_an_symbols_unshare(const char *dir, int part);

/* Writes the reports into out_dir. Returns 0 ok, 1 failure (err set),
 * 3 regression found against the baseline. */
int xsm_analyze_run(const xsm_run *run, const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen);

struct xsm_an;
/* Add the analysis tables (group /analysis: ranks, regions, mpi, waits,
 * critical_path, comm_matrix; merge/README.md) to the finished merged.h5 at
 * `path`. 0 ok, 1 failure (err set). */
int xsm_analyze_h5(const struct xsm_an *a, const char *path, char *err, size_t errlen);
/* The same for an analysis without the run's rows in memory (a streamed
 * one): rowfn gives merged.h5's /mpi row of a rank's MPI row (-1 none). */
typedef int64_t (*xsm_h5_rowfn)(void *ctx, int32_t rank, uint64_t row);
int xsm_analyze_h5_rows(const struct xsm_an *a, const char *path, xsm_h5_rowfn rowfn, void *rowctx, char *err,
                        size_t errlen);
void xsm_analyze_free(struct xsm_an *a);

/* Kinds of wait states (report.json spells them as xsm_wait_kind_name). */
enum xsm_wait_kind {
    XSM_WAIT_LATE_SENDER = 0,
    XSM_WAIT_WRONG_ORDER,
    XSM_WAIT_LATE_RECEIVER,
    XSM_WAIT_BARRIER,
    XSM_WAIT_NXN,
    XSM_WAIT_NXN_COMPLETION,
    XSM_WAIT_LATE_BCAST,
    XSM_WAIT_EARLY_REDUCE,
    /* appended (merged.h5's enum values of the kinds above stay) */
    XSM_WAIT_BARRIER_COMPLETION,
    XSM_WAIT_EARLY_SCAN,
    /* xsprof's extensions, Scalasca computes none: waits in polls */
    XSM_WAIT_LS_POLL,
    XSM_WAIT_LR_POLL,
    XSM_WAIT_NKINDS
};
/* A kind whose wait's time is another rank's point-to-point lateness
 * (the pairwise delay intervals apply). */
static inline int xsm_wait_is_ls(int k)
{
    return k == XSM_WAIT_LATE_SENDER || k == XSM_WAIT_WRONG_ORDER || k == XSM_WAIT_LS_POLL;
}
static inline int xsm_wait_is_lr(int k) { return k == XSM_WAIT_LATE_RECEIVER || k == XSM_WAIT_LR_POLL; }
/* A completion kind: its time runs up to the call's exit, no single rank causes it. */
static inline int xsm_wait_at_exit(int k) { return k == XSM_WAIT_NXN_COMPLETION || k == XSM_WAIT_BARRIER_COMPLETION; }
/* Point-to-point traffic from one rank to another. */
typedef struct xsm_cpair {
    int32_t src, dst;
    uint64_t msgs, bytes;
} xsm_cpair;

/* The pairs of ranks that exchanged messages, counted as they come: a dense
 * N x N matrix would take 4 GB at 16 384 ranks, and most pairs never talk. */
typedef struct xsm_cpairs {
    xsm_cpair *v;
    size_t n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 empty */
    size_t nslot;
} xsm_cpairs;

/* 0 ok, -1 out of memory. */
int xsm_cpairs_add(xsm_cpairs *t, int32_t src, int32_t dst, uint64_t bytes);
/* Sort by (src, dst) and hand the pairs over (the table is empty after). */
void xsm_cpairs_take(xsm_cpairs *t, xsm_cpair **v, size_t *n);
void xsm_cpairs_free(xsm_cpairs *t);

/* ---- streamed analysis: xsmerge --stream feeds the rows of all ranks, in
 * time order (begin times) with final times, to one xsm_sanalysis, then
 * writes the reports from it. Memory grows with call paths, names, wait
 * sites and the waits in flight, not with the trace. Wrong Order waits
 * (they need the whole timeline) are not computed; the reports say so. */
typedef struct xsm_sanalysis xsm_sanalysis;
struct xsm_evflow;
/* has_gpu[r]: rank r has GPU rows (its waits are kept a while for the
 * kernels that overlap them); NULL: none has. window: the calls of a rank
 * kept for waits found after them (0: 16). NULL: out of memory. */
xsm_sanalysis *xsm_sanalysis_new(const xsm_run *run, const unsigned char *has_gpu, size_t window);
/* The look-back window (calls kept per rank for waits found after them):
 * XSPROF_MERGE_ANALYSIS_WINDOW, else dflt. A wait whose causing call had
 * left it is counted "beyond window". */
size_t xsm_analysis_window(size_t dflt);
/* The live view's incremental entry (merge/live): rank r became present
 * after xsm_sanalysis_new, or its rank data gained strings since the last
 * call; the rank's accumulator is made or its per-string tables grown, its
 * sums kept. Call it before feeding rows that name new strings. 0, -1 out
 * of memory. */
int xsm_sanalysis_rank_sync(xsm_sanalysis *sa, int32_t r, int has_gpu);
void xsm_sanalysis_free(xsm_sanalysis *sa);
/* Rows of rank r; 0 ok, -1 out of memory (the analysis stays failed). A
 * region's arguments (g->nargs of them, NULL none): its counter deltas
 * (XSPROF_COUNTERS) are summed per region name. */
int xsm_sanalysis_region(xsm_sanalysis *sa, int32_t r, const xsprof_io_region *g, const xsprof_io_arg *args);
int xsm_sanalysis_gpu(xsm_sanalysis *sa, int32_t r, const xsprof_io_gpu *g);
int xsm_sanalysis_mem(xsm_sanalysis *sa, int32_t r, const xsprof_io_mem *e);
/* fl: the message ends on this row (merge/emit/emit.h), a receive's with
 * its sender's rank, send row and send time. */
int xsm_sanalysis_mpi(xsm_sanalysis *sa, int32_t r, const xsprof_io_mpi *m, uint64_t row, const struct xsm_evflow *fl,
                      size_t nfl);
/* A wait (enum xsm_wait_kind) in rank r's blocking call at `row` named
 * `op`, caused by call causer_row of `causer` (-1: no single rank), found
 * elsewhere (a collective's, by the MPI pass) once its call has begun.
 * XSM_WAIT_WRONG_ORDER is a verdict instead, given before its call: the
 * message from send row causer_row of `causer` received in call `row` is
 * Wrong Order (its Late Sender wait, if it has one, is one). */
int xsm_sanalysis_wait(xsm_sanalysis *sa, int32_t r, uint64_t row, uint32_t op, int kind, int32_t causer,
                       uint64_t causer_row, int64_t ns);
/* A polling loop's Late Receiver, given before its call: rank r's call
 * `row` (named op), a Wait or Test that completed an Isend, began after
 * call causer_row of `causer` posted the receive at t_post; its time is
 * that of the polls before the call, since the last synchronising one, up
 * to t_post (waits.c poll_wait). */
int xsm_sanalysis_pollwait(xsm_sanalysis *sa, int32_t r, uint64_t row, uint32_t op, int32_t causer, uint64_t causer_row,
                           int64_t t_post);
/* Rank r's CPU samples taken before t (its next row's time; INT64_MAX
 * after its last): each in the region or MPI call its thread was in
 * then. 0, -1 out of memory. */
int xsm_sanalysis_samples(xsm_sanalysis *sa, int32_t r, int64_t t);
/* After the last row: closes what is still open. */
int xsm_sanalysis_finish(xsm_sanalysis *sa);

/* ---- the critical path of a streamed analysis (spath.c): the waits the
 * analysis finds are spilled to `fd` (an empty temporary file, read and
 * written with pread/pwrite; the caller closes it after xsm_spath_free);
 * after xsm_sanalysis_finish the walk finds the path's pieces; then each
 * rank xsm_spath_rank_begin says 1 for has its regions and MPI rows fed
 * again in begin order, and the path's time is split over their names. */
typedef struct xsm_spath xsm_spath;
xsm_spath *xsm_spath_new(const xsm_run *run, int fd); /* NULL: out of memory */
void xsm_spath_free(xsm_spath *p);
/* The analysis hands every wait with a causing rank to p from now on. */
void xsm_sanalysis_set_path(xsm_sanalysis *sa, xsm_spath *p);
/* Every wait instance is written to f (a temporary file) from now on,
 * for merged.h5's /analysis/waits. */
void xsm_sanalysis_set_instances(xsm_sanalysis *sa, FILE *f);
/* After a failure: that file's errno, 0 when it did not fail. */
int xsm_sanalysis_errno(const xsm_sanalysis *sa);
/* The path's pieces are written to f (xsm_cpseg, from the path's end), for
 * merged.h5's /analysis/critical_path. */
void xsm_spath_set_pieces(xsm_spath *p, FILE *f);
/* A wait of `waiter` that ended at t_end, caused by `causer`. */
int xsm_spath_wait(xsm_spath *p, int32_t waiter, int64_t t_end, int32_t causer);
/* 0 ok, -1 out of memory or a spill file error (p stays failed). */
int xsm_spath_walk(xsm_spath *p, const xsm_sanalysis *sa);
/* 1: feed rank r's rows now, then xsm_spath_rank_end; 0: r is not on the
 * path; -1 failure. */
int xsm_spath_rank_begin(xsm_spath *p, int32_t r);
int xsm_spath_region(xsm_spath *p, int32_t r, const xsprof_io_region *g);
int xsm_spath_mpi(xsm_spath *p, int32_t r, const xsprof_io_mpi *m);
int xsm_spath_rank_end(xsm_spath *p, int32_t r);
/* After a failure: the spill file's errno, 0 when memory ran out. */
int xsm_spath_errno(const xsm_spath *p);

/* The reports from the streamed analysis, its critical path (walked and
 * split) and the matched messages' pairs (cm sorted, taken over). As
 * xsm_analyze_run. */
int xsm_analyze_streamed(const xsm_run *run, const xsm_sanalysis *sa, const xsm_spath *path, xsm_cpair *cm, size_t ncm,
                         const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen);

/* MPI_Test, Testany, Testsome, Testall, Iprobe, Improbe: the calls of a
 * polling loop (an unsuccessful Test is an OTHER row, a successful one a
 * WAIT row that synchronises); the streaming merge's pass 1 asks too. */
int xsm_is_poll_op(const char *name);

/* Can a message from world rank src to dst give a point-to-point wait
 * (Late Sender, Late Receiver, in a polling loop or not)? Not one a rank
 * sends to itself: it waits for no one (Ray polls with MPI_Iprobe and
 * sends to itself). Asked by waits.c, sprofile.c and the streaming
 * merge's pass 1 alike. */
static inline int xsm_is_p2p_wait_pair(int32_t src, int32_t dst) { return src != dst; }

/* Late Receiver: the call [cb, ce] that sent a message (Send, Ssend,
 * Sendrecv) or completed an Isend (a Wait or Test), its receive posted at
 * t_post; sync: a synchronous send (Ssend), which cannot return before the
 * post; eager: the message went eagerly (xsm_eager_send), so the send
 * never waited for the receiver. Returns the end of the call's wait on the
 * receiver (it waited [cb, until)), XSM_LR_POLL when the call began after
 * the post (a polling loop's polls before an Isend's completion may have
 * waited; a blocking send had not begun), XSM_LR_NONE when it did not wait
 * (an eager or buffered send). Asked by the in-memory feeding (mfeed.c)
 * and the streaming merge's MPI pass alike. */
#define XSM_LR_NONE INT64_MIN
#define XSM_LR_POLL (INT64_MIN + 1)
static inline int64_t xsm_lr_until(int sync, int eager, int64_t cb, int64_t ce, int64_t t_post)
{
    if (!sync && (eager || ce < t_post))
        return XSM_LR_NONE;
    int64_t until = t_post < ce ? t_post : ce;
    return until > cb ? until : XSM_LR_POLL;
}

/* Which sends went eagerly (eager.c): from the eager limits the ranks
 * recorded, by the message's path (one host, or between hosts). */
typedef struct xsm_eager xsm_eager;
xsm_eager *xsm_eager_new(const xsm_run *run); /* NULL: out of memory */
void xsm_eager_free(xsm_eager *e);
/* 1 when a message of `bytes` from src to dst, sent by src's call named
 * op (string id), went eagerly: not a synchronous send (0 unknown). */
int xsm_eager_send(const xsm_eager *e, int32_t src, int32_t dst, uint64_t bytes, uint32_t op);

/* ---- the wait states of one collective instance (collwait.c): one set of
 * rules for the in-memory analysis and the streaming merge's MPI pass */
typedef struct xsm_cwmember {
    int32_t rank;
    int64_t arrive;         /* its entry (a nonblocking one's post): when its contribution came */
    int has_call;           /* the blocking call it waited in is known (the call, or the Wait completing it) */
    int64_t call_b, call_e; /* that call's entry and exit */
    int receives, sends;    /* merge/align's xsm_coll_receives, xsm_coll_sends */
    int64_t pos;            /* its rank in the communicator (scans; -1 unknown) */
    uint64_t id;            /* the caller's (rows) */
} xsm_cwmember;
/* A wait of member w of `kind` over [t_begin, t_end) in its call, caused
 * by member cause (NULL: no single rank, NxN Completion). 0, or -1 to stop. */
typedef int (*xsm_cwait_fn)(void *ctx, const xsm_cwmember *w, int kind, const xsm_cwmember *cause, int64_t t_begin,
                            int64_t t_end);
/* Members sorted by rank, those outside the analysis (not loaded, cut by
 * --from/--to) left out; root the instance's root (world rank, negative
 * none). Barrier, NxN, 1-to-N and N-to-1 instances give waits; 0, or -1
 * when fn stopped. */
int xsm_coll_waits_find(int kind, int32_t root, const xsm_cwmember *m, size_t n, xsm_cwait_fn fn, void *ctx);

/* A wait in a blocking collective or a blocking send of this rank
 * (merge/analyze/waits.c's rules), found by pass 1 at time p when the
 * collective closed or the message matched: the report pass reads it at the
 * first call that ends at or after p, as the flow ends above. */
typedef struct xsm_cwait_rec {
    int64_t p;
    int64_t ns;     /* how long the call waited */
    uint32_t row;   /* the call */
    uint32_t op;    /* its name (string id) */
    int32_t kind;   /* XSM_WAIT_* */
    int32_t causer; /* -1: no single rank */
    uint32_t causer_row;
    uint32_t poll;  /* 1: a polling loop's Late Receiver (its time is the analysis's): ns is the receive's post */
} xsm_cwait_rec;

/* ---- worder.c: Wrong Order, read forward in time (the streaming merge's MPI
 * pass and the in-memory feeding alike) */
typedef struct xsm_wo xsm_wo;
xsm_wo *xsm_wo_new(size_t nranks); /* NULL: out of memory */
void xsm_wo_free(xsm_wo *w);
/* A send to dst inside --from/--to, in order of begin (e_send). 0, -1 out of memory. */
int xsm_wo_send(xsm_wo *w, int32_t dst, int64_t e_send, int32_t src, uint32_t row);
/* That send is no message (cut by --from/--to). */
void xsm_wo_cut(xsm_wo *w, int32_t dst, int32_t src, uint32_t row);
/* It matched a receive on dst's thread `thread` completing at t_recv in
 * the call call_row (UINT32_MAX: none) that began at e_recv. */
int xsm_wo_recv(xsm_wo *w, int32_t dst, int32_t src, uint32_t send_row, int64_t e_send, int64_t t_recv, int64_t e_recv,
                uint32_t call_row, uint32_t thread);
/* The message (src, send_row) received on dst at t in call_row is Wrong Order. */
typedef int (*xsm_wo_verdict_fn)(void *ctx, int32_t dst, int64_t t, uint32_t call_row, int32_t src, uint32_t send_row);
/* Everything due before `now` (pass 1's time; INT64_MAX at the end): the
 * verdicts to fn (a pending one comes when the message it waited for is
 * received, timed at its check); fn's non-zero return is returned, -1 when
 * out of memory. */
int xsm_wo_due(xsm_wo *w, int64_t now, xsm_wo_verdict_fn fn, void *ctx);
/* Pending checks given up so far (more than a rank keeps). */
uint64_t xsm_wo_dropped(const xsm_wo *w);

#endif
