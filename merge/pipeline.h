/* merge/pipeline.h — read -> align -> match, producing an xsm_run.
 * Owner: merge pipeline (read/, align/, match/). Used by main and by the
 * analysis (to load a baseline run). */
#ifndef XSPROF_MERGE_PIPELINE_H
#define XSPROF_MERGE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

typedef struct xsm_load_opts {
    int partial;          /* continue without missing/damaged ranks */
    int quiet;            /* no progress bar, no notes */
    int64_t from_ns, to_ns; /* time window, reference clock; to_ns <= 0: no limit */
    const char *ranks;    /* "0-7,12" or NULL for all */
    /* Added by merge (additive; zero-initialise the struct): the minimum
     * latency the logical clock enforces between a send's begin and its
     * receive's end, ns (0 = none beyond causality). */
    int64_t min_latency_ns;
    /* Streaming mode (merge/stream/): open the rank files leaving the event
     * tables in them (ranks[].rf) and return after validation. */
    int stream;
    /* Collective mode: the helper loading this process's files since before
     * MPI_Init (read.h xsm_read_early_start), or NULL. The load takes it
     * over (uses or cancels it). */
    struct xsm_early *early;
} xsm_load_opts;

/* Returns 0 on success, 1 on bad input (err holds one line naming the file). */
int xsm_run_load(const char *run_dir, const xsm_load_opts *opts, xsm_run *run, char *err, size_t errlen);
void xsm_run_free(xsm_run *run);
/* The member arrays of one collective (not the struct). */
void xsm_collective_free(xsm_collective *c);

#endif
