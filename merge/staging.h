/* merge/staging.h — the staging directory OUT/.xsmerge-tmp-PID-HOST where
 * a merge writes its products before moving them into OUT: named, removed,
 * removed on SIGINT/SIGTERM/SIGHUP, and swept when an earlier merge on this
 * host died without removing its own (SIGKILL, a crash). Owner: merge. */
#ifndef XSPROF_MERGE_STAGING_H
#define XSPROF_MERGE_STAGING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A hash of this host's name, which names the staging directory with the
 * lead's pid (so that a sweep only judges pids of its own host). */
int64_t xsm_staging_host(void);
/* OUT/.xsmerge-tmp-PID-HOST into buf. */
void xsm_staging_path(char *buf, size_t n, const char *out_dir, int64_t pid, int64_t host);
/* Remove a staging directory and the files in it, and in its
 * sub-directories (trace.otf2's trace/). */
void xsm_staging_rm(const char *dir);
/* Remove the staging directories in out_dir left by merges of this host
 * whose process is gone, each with a note (notes may be NULL). */
void xsm_staging_sweep(const char *out_dir, FILE *notes);
/* The lead's: OUT made (with its parents; *made says it did not exist),
 * stale staging directories swept, staging made. Returns 0, or 1 with err
 * set (OUT then removed again if made here). */
int xsm_staging_make(const char *out_dir, const char *staging, int *made, FILE *notes, char *err, size_t errlen);
/* While guarded (staging non-NULL), SIGINT, SIGTERM and SIGHUP remove the
 * staging directory before the process dies of the signal; NULL ends the
 * guard (before the products move out of it). */
void xsm_staging_guard(const char *staging);

#endif
