/* tests/io/journal_fixture.h — a test-only journal builder: writes a journal
 * file per core/journal.h without core, so io tests do not depend on the
 * collector. Records are laid out exactly as core lays them out (per-thread
 * chunks, 8-byte aligned records, `used` = committed bytes). */
#ifndef XSPROF_TESTS_IO_JOURNAL_FIXTURE_H
#define XSPROF_TESTS_IO_JOURNAL_FIXTURE_H

#include <stdint.h>
#include "core/journal.h"
#include "core/record.h"

typedef struct jfx jfx;

/* A journal with chunks of `chunk_size` bytes (header included). */
jfx *jfx_create(uint32_t chunk_size);
xsprof_journal_header *jfx_header(jfx *j);

/* Intern a string; returns its dense id. */
uint32_t jfx_string(jfx *j, const char *s);
/* Append a raw string entry with any id (out of order, duplicates), as
 * core's intern/flush race can produce. Does not change jfx_string's ids. */
void jfx_string_entry(jfx *j, uint32_t id, const char *s);

/* Append a record for thread `tid`: `rec` starts with xsprof_rec_hdr whose
 * type is set; size is rounded to 8 and stored. Opens a new chunk (next seq)
 * when the current one is full. */
void jfx_record(jfx *j, uint32_t tid, void *rec, uint32_t raw_size);

/* Convenience builders. */
void jfx_region(jfx *j, uint32_t tid, uint16_t depth, uint32_t name, uint32_t nargs, int64_t tb, int64_t te);
void jfx_arg_int(jfx *j, uint32_t tid, uint16_t depth, uint32_t key, int64_t v);

/* Number of chunks handed out so far, and the file offset of chunk i. */
uint64_t jfx_nchunks(const jfx *j);
uint64_t jfx_chunk_offset(const jfx *j, uint64_t i);

/* Write the file: every thread's last chunk ACTIVE, the others FULL,
 * plus `free_chunks` never used (zeroed) chunks at the end. 0 on success. */
int jfx_write(jfx *j, const char *path, unsigned free_chunks);
void jfx_free(jfx *j);

/* Write a journal of one rank with `nregions` regions on two threads and
 * every other event table, with reproducible pseudo-random values (its
 * chunks then compress like real ones: partly). At 150000 regions every
 * event table spans several HDF5 chunks and ends in a partial one. Returns
 * 0 on success. */
int jfx_write_mixed(const char *path, long nregions);

#endif
