/* merge/emit/memtrack.h — live allocations of the memory events, so that
 * the traces' memory counters fall by what a free releases: the recorder
 * writes a free with size 0 (it knows only the address), so the size is
 * the one its allocation recorded. Owner: merge. */
#ifndef XSPROF_MERGE_EMIT_MEMTRACK_H
#define XSPROF_MERGE_EMIT_MEMTRACK_H

#include <stdint.h>
#include "io/reader.h"

typedef struct xsm_memtrack xsm_memtrack;

xsm_memtrack *xsm_memtrack_new(void);
void xsm_memtrack_free(xsm_memtrack *t);
/* The change of live bytes on m's rank and device, in time order: an
 * allocation adds its size (one still live at the same address lost its
 * free: it is replaced), a free subtracts what its allocation recorded (0
 * for an address never seen: allocated before the recording, as the
 * report counts it). Returns -1 when memory ran out, else 0 with *delta. */
int xsm_memtrack_apply(xsm_memtrack *t, int32_t rank, const xsprof_io_mem *m, int64_t *delta);

#endif
