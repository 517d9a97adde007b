/* merge/par.h — collective mode: `mpirun -np K xsmerge RUN -o OUT`.
 * MPI is initialised only when a launcher started this process (its rank
 * variables are set), so a plain `xsmerge` never touches MPI. Every node
 * loads all rank files, divided among its processes; every process then
 * holds the whole model (same bytes, so same alignment and matching: the
 * event tables are mapped from the node's process that loaded them, which
 * alone converts their times, and matching is divided among the node's
 * processes) and the output files are divided among all K.
 * Owner: merge. */
#ifndef XSPROF_MERGE_PAR_H
#define XSPROF_MERGE_PAR_H

#include <stddef.h>
#include <stdint.h>
#include "merge/read/read.h"

/* This process's rank among the merging processes of its node and their
 * number (the node loads the run's files: xsm_par.lrank, lsize), as the
 * launcher's environment gives them before MPI starts (Open MPI,
 * MPICH/Hydra, MVAPICH). Returns 1 when known, else 0. */
int xsm_par_place(int *node_rank, int *local);
/* This process's world rank as the launcher's environment gives it before
 * MPI starts; -1 when not launched (or unreadable). */
int xsm_par_env_rank(void);
/* Fills par (rank 0 of 1 when not launched by mpirun). Returns 0, or 1. */
int xsm_par_start(int *argc, char ***argv, xsm_par *par, char *err, size_t errlen);
/* Combine the exit codes of all processes: the largest wins; *first gets
 * the lowest process whose code was `bad` (it prints its error). */
int xsm_par_agree(const xsm_par *par, int rc, int bad, int *first);
/* xsm_par_agree for a step whose outcome every process returns: err gets
 * the message of the lowest process whose code was `bad`, everywhere (a
 * process that did not fail itself would say an empty line). */
int xsm_par_agree_said(const xsm_par *par, int rc, int bad, char *err, size_t errlen);
/* trace.pftrace written by all processes together: process p encodes the
 * segments (one per rank, see xsm_emit_pftrace_rank) of ranks p, p + K,
 * ... straight into the final file, each at the end of the rank before
 * it, which that rank's process sends as soon as it is known (emit/place.h
 * holds a segment's bytes until then).
 * Same bytes as a serial xsm_emit_pftrace.
 * Collective: every process calls it; when one failed, every one returns
 * 1 with its message (xsm_par_agree_said). */
struct xsm_emit;
struct xsm_h5_share;
int xsm_par_pftrace(const xsm_par *par, const struct xsm_emit *e, const char *dir, char *err, size_t errlen);
/* merged.h5's chunks encoded by several processes (emit.h, xsm_h5_share):
 * the writer, process 0, and every process that says it helps (one that
 * writes no other product). Fills *sh and returns 1 when any process
 * helps, and all processes' rc are 0 (so that the writer writes); else 0.
 * Collective. Every process given it calls sh->done at the end. */
int xsm_par_h5_share(const xsm_par *par, int rc, int helps, int level, struct xsm_h5_share *sh);
int64_t xsm_par_bcast_i64(const xsm_par *par, int64_t v);
/* The least v of all processes. Collective. */
uint64_t xsm_par_min_u64(const xsm_par *par, uint64_t v);
void xsm_par_barrier(const xsm_par *par);
void xsm_par_end(const xsm_par *par);

#endif
