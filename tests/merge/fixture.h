/* tests/merge/fixture.h — builds rank files for the merge tests: records
 * are written as a journal in the documented layout (core/journal.h), then
 * converted to rank-NNNNN.h5 by the io writer, exactly as a run would, or
 * left as a journal (a rank that died). Times are local nanoseconds. */
#ifndef XSPROF_TESTS_MERGE_FIXTURE_H
#define XSPROF_TESTS_MERGE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include "core/journal.h"
#include "core/record.h"

typedef struct xsf xsf;

/* job_id "" and start 0 are allowed; host may be NULL ("node0"). */
xsf *xsf_create(const char *dir, int32_t rank, int32_t size, const char *job_id, int64_t start_realtime_ns,
                const char *host);
uint32_t xsf_str(xsf *f, const char *s);
void xsf_thread(xsf *f, uint32_t tid, const char *name);
void xsf_comm(xsf *f, uint32_t id, const char *name, uint32_t parent, uint32_t n, const int32_t *members);
void xsf_meta(xsf *f, const char *key, const char *value);
void xsf_clock(xsf *f, uint32_t phase, int64_t t_local, int64_t offset_ns, int64_t rtt_ns);
void xsf_region(xsf *f, uint32_t tid, const char *name, uint16_t depth, int64_t b, int64_t e);
void xsf_region_arg_int(xsf *f, uint32_t tid, const char *key, uint16_t depth, int64_t v);
void xsf_instant(xsf *f, uint32_t tid, const char *name, int64_t t);
void xsf_counter(xsf *f, uint32_t tid, const char *name, int64_t t, double v);
/* m->h, m->op are set from `op`; fill the rest with designated initialisers. */
void xsf_mpi(xsf *f, uint32_t tid, const char *op, xsprof_rec_mpi m);
void xsf_gpu(xsf *f, uint32_t tid, const char *name, xsprof_rec_gpu g);
void xsf_mem(xsf *f, uint32_t tid, uint16_t kind, int16_t device, int64_t t, uint64_t ptr, uint64_t size);
/* Finish: state is enum xsprof_journal_state. With to_h5 the journal is
 * converted to rank-NNNNN.h5 and removed. Returns 0 on success. */
int xsf_close(xsf *f, uint32_t state, int to_h5);

#endif
