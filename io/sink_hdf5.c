/* io/sink_hdf5.c — the default sink (core/sink.h): at finalize the journal
 * becomes RUN_DIR/rank-NNNNN.h5. Chunks are not observed one by one: the
 * journal already holds them crash-safely, and converting once at the end
 * keeps HDF5 off the application's threads while it runs. */
#include <stdio.h>

#include "core/sink.h"
#include "io/writer.h"

static xsprof_status sink_hdf5_finish(void *self, const char *journal_path, const char *out_path)
{
    (void)self;
    char err[1024];
    /* finish only runs on the normal finalize path (never in a signal
     * handler): the rank ended normally unless core recorded otherwise
     * (META end_state, e.g. "exit without MPI_Finalize"). */
    xsprof_status s = xsprof_journal_convert(journal_path, out_path, "finalized", err, sizeof err);
    if (s != XSPROF_OK)
        xsprof_log(XSPROF_LOG_INFO, "%s", err); /* core warns once; this says why */
    return s;
}

static const xsprof_sink sink_hdf5 = {
    .name = "hdf5",
    .self = NULL,
    .chunk_full = NULL,
    .finish = sink_hdf5_finish,
};

const xsprof_sink *xsprof_sink_default(void) { return &sink_hdf5; }
