/* merge/emit/place.h — output bytes whose offset in the file is learnt late.
 * A span of trace.pftrace is encoded by several threads (and processes);
 * its blocks are its ranks, taken in order by the threads, and block k
 * starts where block k-1 ends, known only once k-1 is finished (a process
 * other than the first learns where its span starts when all are done).
 * Until then a block's
 * bytes wait in memory (up to a cap shared by the blocks, then in a spill
 * file), and from then on they go straight to their place; what waited
 * is written there by whichever thread comes first (its own writer before
 * its next bytes, or a thread between blocks). Before, every block but
 * the first went through a temporary file copied into place at the end:
 * a second write of half the file on one thread (0.21 of the 5 M-event
 * ring's 0.33 s). Owner: merge/emit. */
#ifndef XSPROF_MERGE_EMIT_PLACE_H
#define XSPROF_MERGE_EMIT_PLACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct xsm_place xsm_place;

/* n blocks of fd's bytes, the first at `at` (< 0: not known yet, see
 * xsm_place_set_base); chain: block k starts where block k-1 ends, else
 * each block's place comes from xsm_place_set_base. hold:
 * bytes that may wait in memory (0: waiting bytes go to the spill file,
 * created in dir as ".trace.pftrace.<tag>"). NULL: out of memory. */
xsm_place *xsm_place_new(int fd, int64_t at, size_t n, int chain, uint64_t hold, const char *dir, size_t tag);
/* Block k's stream: unbuffered, each write is placed or held as it comes.
 * NULL (errno set) when it could not be made. */
FILE *xsm_place_file(xsm_place *pl, size_t k);
/* Block k has all its bytes (its stream flushed; it is closed here): its
 * size is known now, which places the block after it. */
void xsm_place_finish(xsm_place *pl, size_t k);
/* Write the waiting bytes whose place is known; with `wait`, until every
 * block is finished and nothing placed waits. Writers call it between
 * blocks (0) and when there are none left to take (1), so threads that are
 * done write the others' waiting bytes while those still encode. */
void xsm_place_help(xsm_place *pl, int wait);
/* Unchained blocks (or the first of chained ones): block k starts at
 * `at` (another process encoded what comes before it). */
void xsm_place_set_base(xsm_place *pl, size_t k, uint64_t at);
/* 1 with *end = where block k ends, once it is finished and placed. */
int xsm_place_end(xsm_place *pl, size_t k, uint64_t *end);
/* xsm_place_help on `threads` threads (the caller's included). */
void xsm_place_write(xsm_place *pl, int threads);
/* Bytes of all blocks (once finished). */
uint64_t xsm_place_size(const xsm_place *pl);
/* 0, or the errno of the first failed write (ENOSPC, EIO, ...). */
int xsm_place_error(const xsm_place *pl);
/* Close the streams, remove the spill files, free. */
void xsm_place_free(xsm_place *pl);

#endif
