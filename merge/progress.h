/* merge/progress.h — the stderr progress bar of xsmerge. It appears only
 * when stderr is a terminal, --quiet is not given, this is the process that
 * prints (rank 0 in collective mode) and the merge has already run for more
 * than a second, so short merges and logs stay clean. Owner: merge. */
#ifndef XSPROF_MERGE_PROGRESS_H
#define XSPROF_MERGE_PROGRESS_H

#include <stdint.h>

/* Decide once whether a bar may be drawn (main calls it). */
void xsm_progress_enable(int on);
/* Start a phase ("reading rank files") with `total` steps. */
void xsm_progress_begin(const char *label, uint64_t total);
/* Advance by n steps; redraws at most ten times a second. */
void xsm_progress_step(uint64_t n);
/* End the phase and clear the line if a bar was drawn. */
void xsm_progress_end(void);

/* With XSPROF_MERGE_TIMES=1 in the environment, print the seconds spent
 * since the previous mark to stderr ("xsmerge: time read 1.234 s"). */
void xsm_progress_mark(const char *phase);
/* Collective mode: marks name the process ("xsmerge[1/2]: time ..."), whose
 * lines otherwise interleave without saying whose they are. */
void xsm_progress_process(int rank, int size);

#endif
