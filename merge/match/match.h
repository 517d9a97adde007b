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
#include <stdint.h>
#include <stdio.h>
#include "merge/model.h"

/* Fills run->msgs, colls and the unmatched counters; when `notes` is set,
 * lists the first few unmatched operations there. Returns 0, or 1 on OOM. */
int xsm_match_run(xsm_run *run, FILE *notes, char *err, size_t errlen);

/* An unmatched send from src to dst: counted in run->unrecv when the
 * application never received it (dst present, ended normally, no record
 * dropped), which both matchers ask. 0, -1 out of memory. */
int xsm_unrecv_add(xsm_run *run, int32_t src, int32_t dst);
/* The same sums from the processes of a collective merge (run->reduce). */
int xsm_unrecv_reduce(xsm_run *run);

/* Rank d's links between rows (-1 none): post_of[completion] the
 * nonblocking post it completes (the most recent post of its request
 * before it), compl_of[post] that completion, call_of[completion] the call
 * holding it (the latest call on its thread begun at or before it and not
 * ended before it; a Sendrecv's receive completion, its Sendrecv). Each
 * array has d->nmpi entries; nreq, ncompl: the rank's request and
 * COMPLETION rows. 0, or -1 out of memory. Also the analysis's (a
 * nonblocking collective or Isend waits in the call holding its completion). */
int xsm_match_links(const xsprof_rank_data *d, size_t nreq, size_t ncompl, int64_t *post_of, int64_t *compl_of,
                    int64_t *call_of);

/* Hash of a point-to-point key (also used by the streaming match). */
static inline uint64_t xsm_match_key_hash(uint32_t comm, int32_t src, int32_t dst, int32_t tag, uint64_t seq)
{
    uint64_t h = ((uint64_t)comm << 32 | (uint32_t)tag) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    h ^= seq * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h * 0xc4ceb9fe1a85ec53ull;
}

#endif
