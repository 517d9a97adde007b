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

/* Constraints violated by the current times (strict: receive end < send
 * begin; collective exit < an entry it depends on). */
uint64_t xsm_align_violations(const xsm_run *run);

/* Shift every event time so the first event of the job is at 0; sets t_end. */
void xsm_align_origin(xsm_run *run);
/* The same with the ranks' spans already known (from
 * xsm_align_interpolate_span, when no time moved since); NULL: computed. */
void xsm_align_origin_span(xsm_run *run, const int64_t *span);

#endif
