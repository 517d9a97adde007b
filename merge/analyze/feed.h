/* merge/analyze/feed.h — feeding the analysis (feed.c): the one loop that
 * runs the analysis engine (sprofile.c, spath.c) over a run, whether its
 * events come from the model (mfeed.c) or from the rank files read chunk
 * by chunk (merge/analyze/sfeed.c). Owner: merge analysis. */
#ifndef XSPROF_MERGE_ANALYZE_FEED_H
#define XSPROF_MERGE_ANALYZE_FEED_H

#include <stdio.h>
#include "merge/analyze/analyze.h"
#include "merge/emit/emit.h"

enum { XSM_FEED_START = 0, XSM_FEED_PATH, XSM_FEED_END };

typedef struct xsm_feed {
    const xsm_run *run;
    const xsm_emit *e;             /* passed to the sources' open */
    const xsm_src_ops *events;     /* per rank: regions, MPI (completions too), GPU, memory, in time order */
    const xsm_src_ops *frames;     /* per rank: regions and MPI, for the critical path's second read */
    const unsigned char *has_gpu;  /* per rank (NULL: none has GPU rows) */
    size_t window;                 /* calls kept per rank for waits found after them */
    /* rank r's waits that matching found, in order of p (times final):
     * 1 got one, 0 at the end, -1 failed (err set) */
    int (*wait_next)(void *ctx, int32_t r, xsm_cwait_rec *w, char *err, size_t errlen);
    void *wait_ctx;
    /* called at XSM_FEED_START (before the sources open), XSM_FEED_PATH
     * (before the second read) and XSM_FEED_END (all closed); NULL none */
    void (*phase)(void *ctx, int phase);
    void *phase_ctx;
    const char *inst_name, *path_name; /* the temporary files' names for errors */
} xsm_feed;

/* Every rank's events into a new analysis (*out) with its critical path p
 * walked and split (p's waits spilled to its file; inst: every wait
 * instance for merged.h5, NULL none); alone: no writer runs beside it (a
 * thread reads the sources ahead). 0, or 1 with err set. */
int xsm_feed_run(const xsm_feed *f, xsm_spath *p, FILE *inst, int alone, xsm_sanalysis **out, char *err,
                 size_t errlen);

#endif
