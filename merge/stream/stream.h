/* merge/stream/stream.h — xsmerge's streaming mode: trace.pftrace and
 * trace.json with memory that does not grow with the trace. Owner: merge.
 *
 * Pass 1 reads every rank file chunk by chunk once: the MPI tables of all
 * ranks together in time order (merge/match/stream_match.c: messages matched,
 * clock violations counted, each receive's flow end spilled to a file in
 * the staging directory), the other tables rank by rank in threads (track
 * sets, first and last times, rows too far out of time order for the
 * reorder window kept aside). Pass 2 writes each rank's trace.pftrace
 * segment through the same writer as the in-memory merge, fed by reorder
 * heaps over the tables read again, so the file is byte for byte the one
 * `--outputs pftrace` gives; trace.json is a third pass, all ranks' sources
 * merged in time order; trace.otf2 reads the ranks once more, one after
 * the other, with the rows pass 1 marked for it.
 *
 * Memory: per rank being read, two chunks per table and a window of rows
 * per table (XSPROF_MERGE_STREAM_WINDOW, default 4096); one bit per MPI
 * row (which sends were received); the rows kept aside; the ends of
 * messages in flight and of receives still to be drawn; GPU launch flows. */
#ifndef XSPROF_MERGE_STREAM_H
#define XSPROF_MERGE_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include "merge/pipeline.h"

typedef struct xsm_stream_summary {
    size_t nranks;
    uint64_t nmsgs, ncolls;
    uint64_t violations_before, violations_after;
    int report_rc; /* the reports: 0, or 3 when the baseline found a regression */
} xsm_stream_summary;

enum { XSM_STREAM_PFTRACE = 1, XSM_STREAM_JSON = 2, XSM_STREAM_H5 = 4, XSM_STREAM_REPORT = 8, XSM_STREAM_OTF2 = 16,
       XSM_STREAM_JSON_WHOLE = 32 /* with JSON: the default products, trace.json only while it fits one part
                                     (xsm_emit.json_whole; else left out with its note) */ };

/* Write trace.pftrace, trace.json, merged.h5, trace.otf2 and/or the reports (`what`,
 * XSM_STREAM_*; the reports with `ro`, a streamed analysis: analyze.h) of
 * run_dir into dir with `threads` writer threads.
 * Returns 0 (notes printed to `notes`), 1 with err set on bad input or
 * failure, 2 when the run needs the in-memory merge (err says why; nothing
 * was printed or written). */
struct xsm_par;
struct xsm_report_opts;
/* par (NULL: serial): in collective mode every process reads every file
 * in pass 1 (the same results everywhere), trace.pftrace is divided among
 * the processes as in the in-memory collective mode, the last process
 * writes trace.json and process 0 merged.h5 and the reports. The return
 * code is the same on every process. */
int xsm_stream_merge(const char *run_dir, const xsm_load_opts *opts, const char *dir, FILE *notes, int threads,
                     int what, const struct xsm_par *par, const struct xsm_report_opts *ro, xsm_stream_summary *sum,
                     char *err, size_t errlen);

#endif
