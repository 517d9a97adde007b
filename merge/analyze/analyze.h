/* merge/analyze/analyze.h — the bottleneck analysis and its reports
 * (report.txt/json/html, flame.folded/svg, callgrind, baseline regression).
 * Owner: merge analysis. Reads the aligned, matched xsm_run; never changes it. */
#ifndef XSPROF_MERGE_ANALYZE_H
#define XSPROF_MERGE_ANALYZE_H

#include <stddef.h>
#include <stdio.h>
#include "merge/model.h"

typedef struct xsm_report_opts {
    const char *baseline_dir; /* --baseline: previous run (run dir or xsmerge output dir) */
    double threshold_pct;     /* --threshold, default 5 */
    const char *diff_dir;     /* --diff: baseline for a differential flame graph */
    int callgrind;            /* --format callgrind: also write callgrind.out */
    int quiet;
    FILE *summary;            /* where the one-screen summary is printed (stdout), NULL: none */
    struct xsm_an **keep;     /* not NULL: receives the analysis (xsm_analyze_h5, then xsm_analyze_free) */
} xsm_report_opts;

/* Writes the reports into out_dir. Returns 0 ok, 1 failure (err set),
 * 3 regression found against the baseline. */
int xsm_analyze_run(const xsm_run *run, const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen);

struct xsm_an;
/* Add the analysis tables (group /analysis: ranks, regions, mpi, waits,
 * critical_path, comm_matrix; merge/README.md) to the finished merged.h5 at
 * `path`. 0 ok, 1 failure (err set). */
int xsm_analyze_h5(const struct xsm_an *a, const char *path, char *err, size_t errlen);
void xsm_analyze_free(struct xsm_an *a);

#endif
