/* io/writer.h — converts a journal (core/journal.h) into a rank file
 * (io/format.h), the HDF5 sink's `finish`. Owner: io. */
#ifndef XSPROF_IO_WRITER_H
#define XSPROF_IO_WRITER_H

#include <stddef.h>
#include "xsprof/xsprof.h"

/* Read every committed record of `journal_path` and write `h5_path`
 * (created exclusively, O_NOFOLLOW semantics: an existing file or symlink is
 * an error; the user's umask applies; a failed conversion removes it).
 * end_state attribute: the META "end_state" core records at finalize; when
 * the journal has none, `end_state`. The in-process sink passes
 * "finalized". NULL means an offline conversion of a journal left behind:
 * the state then comes from the journal header ("signal 11 (SIGSEGV)",
 * "killed (no handler ran)") and the file is marked recovered=1.
 * truncated=1 unless the end state is "finalized" and the journal was
 * undamaged. */
xsprof_status xsprof_journal_convert(const char *journal_path, const char *h5_path,
                                     const char *end_state, char *err, size_t errlen);

#endif
