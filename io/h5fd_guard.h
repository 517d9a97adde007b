/* io/h5fd_guard.h — the HDF5 file driver the writer uses. Owner: io.
 *
 * HDF5 cannot close a file whose last flush failed (a full disk, say): the
 * file stays half-open inside the library and HDF5's own exit handler then
 * crashes the application. This driver writes through a descriptor we
 * created (exclusive, no symlinks) and never reports a write failure to
 * HDF5: it remembers the first errno, swallows further writes, and lets the
 * writer give up and remove the file. HDF5 therefore always closes cleanly.
 * The files are plain HDF5 files, read with the default driver. */
#ifndef XSPROF_IO_H5FD_GUARD_H
#define XSPROF_IO_H5FD_GUARD_H

#include <hdf5.h>

typedef struct xsprof_h5fd_state {
    int error; /* errno of the first failed write or truncate, 0 if none */
} xsprof_h5fd_state;

/* A new file access property list that writes through a duplicate of `fd`
 * and records failures in `st` (which must outlive the file). The caller
 * closes the list (and may close fd once the file is created). Returns a
 * negative id on failure. */
hid_t xsprof_h5fd_fapl(int fd, xsprof_h5fd_state *st);

#endif
