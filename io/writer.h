/* io/writer.h — converts a journal (core/journal.h) into a rank file
 * (io/format.h), the HDF5 sink's `finish`. Owner: io. */
#ifndef XSPROF_IO_WRITER_H
#define XSPROF_IO_WRITER_H

#include <stddef.h>
#include "xsprof/xsprof.h"

/* Read every committed record of `journal_path` and write `h5_path`
 * (created exclusively, O_NOFOLLOW semantics: an existing file or symlink is
 * an error). `end_state` is stored as the end_state attribute. */
xsprof_status xsprof_journal_convert(const char *journal_path, const char *h5_path,
                                     const char *end_state, char *err, size_t errlen);

#endif
