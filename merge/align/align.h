/* merge/align/align.h — clock alignment of an xsm_run (stage 2 of xsmerge).
 * Owner: merge.
 *
 * 1. xsm_align_interpolate: per rank, local time -> reference time by
 *    piecewise-linear interpolation of the clock samples' offsets (one sample:
 *    constant offset; outside the sampled span the nearest segment's drift is
 *    extrapolated; no sample: offset 0).
 * 2. xsm_align_logical: the controlled logical clock (Becker et al., as in
 *    Scalasca) over the matched messages and collectives of xsm_match_run.
 * 3. xsm_align_origin: t = 0 at the job's first event.
 * All stages work on the rows in place; clock samples stay local. */
#ifndef XSPROF_MERGE_ALIGN_H
#define XSPROF_MERGE_ALIGN_H

#include <stddef.h>
#include <stdint.h>
#include "merge/model.h"
#include "core/record.h" /* collective kinds */

/* Local -> reference time of one rank: piecewise-linear in its clock
 * samples (prepared by xsm_align_clock_prepare). */
typedef struct xsm_clk {
    const xsprof_io_clock *s;
    size_t n;
    size_t seg; /* cached segment: rows of one thread come in time order */
    /* the logical clock's map after interpolation (streaming mode): knots
     * (t, C) in pairs, the groups where the correction changes; 0: none */
    const int64_t *knots;
    size_t nknots, kseg;
} xsm_clk;

/* Piecewise-linear map through the points (t[i*stride], C[i*stride]),
 * i < G (t increasing): exact integer interpolation inside, the first or
 * last point's shift outside. *seg caches the last segment. */
int64_t xsm_align_pl_map(const int64_t *t, const int64_t *C, size_t stride, size_t G, size_t *seg, int64_t x);

static inline int64_t xsm_align_interp(xsm_clk *c, int64_t t);

static inline int64_t xsm_align_clock_map(xsm_clk *c, int64_t t)
{
    t = xsm_align_interp(c, t);
    return c->nknots ? xsm_align_pl_map(c->knots, c->knots + 1, 2, c->nknots, &c->kseg, t) : t;
}

static inline int64_t xsm_align_interp(xsm_clk *c, int64_t t)
{
    if (c->n == 0)
        return t;
    if (c->n == 1)
        return t + c->s[0].offset_ns;
    size_t i = c->seg;
    if (!(i + 1 < c->n && c->s[i].t_local <= t && t < c->s[i + 1].t_local)) {
        size_t lo = 0, hi = c->n - 1; /* last sample <= t, clamped to a segment */
        while (lo + 1 < hi) {
            size_t mid = (lo + hi) / 2;
            if (c->s[mid].t_local <= t)
                lo = mid;
            else
                hi = mid;
        }
        i = lo;
        c->seg = i;
    }
    const xsprof_io_clock *a = &c->s[i], *b = &c->s[i + 1];
    int64_t d = b->offset_ns - a->offset_ns, x = t - a->t_local, num;
    /* 64-bit when the product fits (the same truncated quotient): a
     * 128-bit division (a libgcc call) per timestamp is far slower */
    if (!__builtin_mul_overflow(d, x, &num))
        return t + (a->offset_ns + num / (b->t_local - a->t_local));
    __int128 wide = (__int128)d * x;
    return t + (a->offset_ns + (int64_t)(wide / (b->t_local - a->t_local)));
}

/* Rank r's local clock -> merged time, for the records no stage moves (CPU
 * samples, allocation stacks): its clock samples' interpolation and the
 * logical clock's knots (xsm_rank.knots, kept by the in-memory clock and
 * by the streamed one) into c, for xsm_align_sample_time. The rows went
 * through the same map, in memory and streamed alike, so a sample sits
 * among them as it ran (the logical clock moves rows by up to its largest
 * correction: 34 ms in mpi_sampling_clock). */
void xsm_align_rank_clock(const xsm_run *run, size_t r, xsm_clk *c);

/* A record's local time t (XSPROF_SAMPLE_HZ samples) on the merged
 * timeline, through c from xsm_align_rank_clock. */
static inline int64_t xsm_align_sample_time(const xsm_run *run, xsm_clk *c, int64_t t)
{
    return xsm_align_clock_map(c, t) - run->t0_ref_ns;
}

/* Rank r's CPU samples (/events/samples) inside the run's window
 * (--from/--to) in merged time order, one thread's in row order at equal
 * times: their times and rows into at (room for d->nsamples); returns how
 * many. The engine and trace.pftrace take them so. */
typedef struct xsm_sample_at {
    int64_t t;
    uint32_t i;
} xsm_sample_at;
size_t xsm_align_samples(const xsm_run *run, size_t r, xsm_sample_at *at);

/* Sort a rank's clock samples in place and drop those of one instant with
 * a worse round trip; returns the largest error bound (rtt / 2, us). */
double xsm_align_clock_prepare(xsprof_rank_data *d);

/* Position of world rank w in communicator comm as d defines it (the
 * order scans use); -1 when d defines comm without w, -2 when d does not
 * define comm. */
int64_t xsm_align_comm_position(const xsprof_rank_data *d, uint32_t comm, int32_t w);

void xsm_align_interpolate(xsm_run *run);
/* The same; span (NULL, or 2 entries per rank) gets each rank's first begin
 * and last end after interpolation, taken in the same pass (INT64_MAX and
 * INT64_MIN for a rank without events or not present). */
void xsm_align_interpolate_span(xsm_run *run, int64_t *span);

/* Enforce: receive end >= send begin + min_latency_ns; collective exits >=
 * the entries they depend on (barrier/NxN: all, 1-to-N: root, N-to-1 root:
 * all, scan: lower comm ranks); the exit of a nonblocking collective is the
 * COMPLETION of its request. Corrections move events forward only, keep
 * local intervals after a correction (forward amortisation) and spread the
 * jump over the interval back to the previous event another rank depends on
 * (backward amortisation). Fills run->clock and ranks[].correction_ns.
 * Returns 0, or 1 with err set when memory runs out. */
int xsm_align_logical(xsm_run *run, int64_t min_latency_ns, char *err, size_t errlen);
/* 1 when xsm_align_logical (done) left every time as it was: no constraint
 * was violated and no minimum latency was asked for. */
int xsm_align_logical_identity(const xsm_run *run);

/* Does a member (its entry row m) of a collective of `kind` (enum
 * xsprof_coll_kind) take data from the others, so that it cannot leave
 * before they entered? MPI promises no synchronisation beyond the data a
 * collective moves (a Barrier is all synchronisation): a zero-byte Bcast
 * returns on the other ranks before the root arrives (Open MPI and MPICH
 * return at once; HPL-style codes issue them), a zero-count Allreduce
 * likewise. Bcast/Scatter non-roots, Reduce/Gather roots, NxN and scan
 * members depend on others when they receive bytes; a Barrier always;
 * unclassified collectives as all-to-all. A neighbourhood collective
 * waits for its neighbours only, which the trace does not name: no
 * constraint (as all-to-all, a rank two hops from a late one "left before
 * it came", and the clock correction moved it by the lateness). */
static inline int xsm_coll_receives(int kind, const xsprof_io_mpi *m)
{
    if (kind == XSPROF_COLL_NEIGHBOR)
        return 0;
    int data = kind == XSPROF_COLL_NXN || kind == XSPROF_COLL_ONE2N || kind == XSPROF_COLL_N2ONE ||
               kind == XSPROF_COLL_SCAN;
    return !data || m->bytes_recv > 0;
}

/* Does a member (its entry row m) give the root of an N-to-1 collective
 * data, so that the root cannot leave before it entered? Not when it sends
 * nothing: a zero count, or a member of an intercommunicator's root group
 * other than the root (MPI_PROC_NULL: it takes no part). */
static inline int xsm_coll_sends(const xsprof_io_mpi *m) { return m->bytes_sent > 0; }

/* One member of a collective instance, for xsm_align_coll_late. */
typedef struct xsm_coll_point {
    int64_t entry, exit;
    int has_exit; /* 0: a nonblocking collective whose completion was not recorded */
    int64_t pos;  /* its position in the communicator (scans), -1 unknown */
    int receives; /* xsm_coll_receives: 0, its exit depends on no entry */
    int sends;    /* xsm_coll_sends: an N-to-1 root waits for its entry */
} xsm_coll_point;
/* Exits of one instance that precede an entry they depend on (kind: enum
 * xsprof_coll_kind; root: index of the root member, SIZE_MAX none). */
uint64_t xsm_align_coll_late(int kind, const xsm_coll_point *m, size_t n, size_t root);

/* Constraints violated by the current times (strict: receive end < send
 * begin; collective exit < an entry it depends on). */
uint64_t xsm_align_violations(const xsm_run *run);

/* Shift every event time so the first event of the job is at 0; sets t_end. */
void xsm_align_origin(xsm_run *run);
/* The same with the ranks' spans already known (from
 * xsm_align_interpolate_span, when no time moved since); NULL: computed. */
void xsm_align_origin_span(xsm_run *run, const int64_t *span);

#endif
