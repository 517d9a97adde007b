/* merge/emit/pfsamples.h — one rank's CPU samples (io/FORMAT.md
 * /events/samples, XSPROF_SAMPLE_HZ) for trace.pftrace: in merged time
 * order, each with its thread, and the interned data of Perfetto's
 * profiling protos its call stack needs (InternedData function_names,
 * source_paths, mapping_paths, build_ids, mappings, frames, callstacks),
 * each entry written once on the rank's packet sequence. The packets
 * themselves are pftrace.c's. Owner: merge emit.
 *
 * Samples are loaded whole with every rank in every merge mode and no
 * stage moves their times, so their merged times come from the rank's
 * clock map here (xsm_align_rank_clock): the in-memory and the streamed
 * merge write the same bytes. Each unique (address, return or not) of a
 * rank is resolved once (xsm_read_locate) into one Perfetto frame per
 * function of its inlined chain: function name, mapping (the module) and
 * rel_pc (its ELF address), source file and line. */
#ifndef XSPROF_MERGE_EMIT_PFSAMPLES_H
#define XSPROF_MERGE_EMIT_PFSAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include "merge/emit/emit.h"

typedef struct xsm_pfs xsm_pfs;

/* Rank r's samples inside the run's window; NULL: out of memory. *sym:
 * the caller's symbols (opened here when NULL, closed by the caller), so
 * that a writer resolves each module's addresses once for all its ranks. */
struct xsm_symbols;
xsm_pfs *xsm_pfs_open(const xsm_emit *e, size_t r, struct xsm_symbols **sym);
void xsm_pfs_close(xsm_pfs *s);

/* The next sample's merged time; INT64_MAX when none is left. */
int64_t xsm_pfs_time(const xsm_pfs *s);

/* Take the next sample: its thread (as xsm_emit_sample_thread) and the
 * iid of its callstack (0: unknown). 1 when that callstack is new on the
 * sequence (xsm_pfs_intern before the packet refers to it), else 0. */
int xsm_pfs_take(xsm_pfs *s, size_t *thread, uint64_t *callstack);

/* The entries the callstack of the sample just taken needs and the
 * sequence has not seen, as fields of an open InternedData message.
 * 0, or -1 when memory ran out. */
int xsm_pfs_intern(xsm_pfs *s, xsm_out *o);

#endif
