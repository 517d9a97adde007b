/* io/h5checksum.h — HDF5's fletcher32 filter checksum, computed the way
 * HDF5 does (H5_checksum_fletcher32: 16-bit big-endian words), shared by the
 * threaded chunk writer (io/chunk_pool.c) and xsmerge's chunk reader
 * (merge/read/chunks.c). Owner: io. */
#ifndef XSPROF_IO_H5CHECKSUM_H
#define XSPROF_IO_H5CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

__attribute__((visibility("hidden"))) uint32_t xsprof_h5_fletcher32(const unsigned char *p, size_t len);

#endif
