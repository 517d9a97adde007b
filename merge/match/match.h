/* merge/match/match.h — message and collective matching (stage 3 of
 * xsmerge). Owner: merge.
 *
 * Point-to-point: a send (Send/Bsend/Rsend/Ssend, Isend post, the send part
 * of Sendrecv) and a completed receive (Recv, the COMPLETION record of an
 * Irecv — wildcards resolved there — or the COMPLETION that follows a
 * Sendrecv) match when (comm, world src, world dst, tag, seq) agree; MPI's
 * non-overtaking order makes seq the k-th message of that (comm, src, dst,
 * tag). Nonblocking posts and their COMPLETION records share `request`.
 * Collectives match by (comm, coll_seq). Results are sorted (messages by
 * src then send row, collectives by comm then coll_seq), so they do not
 * depend on the order ranks were loaded in. */
#ifndef XSPROF_MERGE_MATCH_H
#define XSPROF_MERGE_MATCH_H

#include <stddef.h>
#include <stdio.h>
#include "merge/model.h"

/* Fills run->msgs, colls and the unmatched counters; when `notes` is set,
 * lists the first few unmatched operations there. Returns 0, or 1 on OOM. */
int xsm_match_run(xsm_run *run, FILE *notes, char *err, size_t errlen);

#endif
