/* core/sink.h — where full buffers go. Owner: core.
 * Records always live in the journal (core/journal.h). A sink observes each
 * chunk once it is full (on the writer thread, never on a recording thread)
 * and turns the journal into the final product at finalize. io/ installs the
 * HDF5 sink; tests install an in-memory sink. */
#ifndef XSPROF_CORE_SINK_H
#define XSPROF_CORE_SINK_H

#include <stddef.h>
#include "xsprof/xsprof.h"
#include "journal.h"
#include "collector.h"

typedef struct xsprof_sink {
    const char *name;
    void *self;
    /* A chunk was closed by its thread: `records` holds `used` bytes of
     * records of thread chunk->tid. Optional (NULL). */
    xsprof_status (*chunk_full)(void *self, const xsprof_chunk_header *chunk, const void *records, size_t used);
    /* All chunks are closed and the journal is synced: write the product.
     * `out_path` is RUN_DIR/rank-NNNNN.h5. On success the journal is deleted. */
    xsprof_status (*finish)(void *self, const char *journal_path, const char *out_path);
} xsprof_sink;

/* Install the sink (copied). Must happen before the first record; later
 * calls return XSPROF_ERR_STATE. NULL restores the default (io/ HDF5). */
XSPROF_HIDDEN xsprof_status xsprof_sink_set(const xsprof_sink *sink);

/* io/ provides the default sink; core calls this once (weak: a build without
 * io keeps the journal as the product). */
XSPROF_HIDDEN const xsprof_sink *xsprof_sink_default(void) __attribute__((weak));

#endif
