/* io/h5schema.h — the HDF5 side of io/format.h: one table per dataset with
 * its path, row size and the compound type built from the row struct.
 * Owner: io. The writer creates datasets from these types and the reader
 * validates files against them, so both agree by construction. */
#ifndef XSPROF_IO_H5SCHEMA_H
#define XSPROF_IO_H5SCHEMA_H

#include <stddef.h>
#include <hdf5.h>
#include "xsprof/xsprof.h"

/* Datasets of format version 2. The first eight are the event tables in
 * the order of enum xsprof_io_table. */
enum xsprof_h5_ds {
    XSPROF_H5_REGIONS = 0,
    XSPROF_H5_ARGS,
    XSPROF_H5_INSTANTS,
    XSPROF_H5_COUNTERS,
    XSPROF_H5_MPI,
    XSPROF_H5_GPU,
    XSPROF_H5_MEM,
    XSPROF_H5_CLOCK,
    XSPROF_H5_THREADS,
    XSPROF_H5_COMMS,
    XSPROF_H5_COMM_MEMBERS,
    XSPROF_H5_TOPOLOGY,
    XSPROF_H5_META,
    XSPROF_H5_CALLSTACKS,
    XSPROF_H5_FRAMES,
    XSPROF_H5_MODULES,
    XSPROF_H5_SAMPLES, /* loaded whole like the definitions (not streamed) */
    XSPROF_H5_ALLOC_STACKS, /* the same */
    XSPROF_H5_STRINGS,
    XSPROF_H5_COUNT
};

/* Lookups ("?" and 0 for an unknown table; they cannot fail otherwise). */
const char *xsprof_h5_ds_path(enum xsprof_h5_ds ds);
size_t xsprof_h5_ds_row_size(enum xsprof_h5_ds ds);

/* Memory type of a row (native layout of the io/format.h struct). STRINGS
 * has no fixed row type: see xsprof_h5_string_type. The caller closes it.
 * Returns a negative id on failure. */
hid_t xsprof_h5_ds_mem_type(enum xsprof_h5_ds ds);

/* Fixed-length, NUL-terminated UTF-8 string type of `size` bytes (size >= 1).
 * Strings are never variable-length: those live in HDF5's global heap,
 * which HDF5 reads without bounds checks, so a damaged file could crash the
 * reader instead of failing. */
hid_t xsprof_h5_string_type(size_t size);

/* Copy the innermost message of the calling thread's HDF5 error stack into
 * buf ("" when there is none). */
void xsprof_h5_last_error(char *buf, size_t len);

#endif
