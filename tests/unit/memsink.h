/* Test helper: an in-memory sink. It counts full chunks as the writer
 * thread hands them over and, at finalize, loads the journal through the
 * io reader into `memsink_data`, so tests check exactly what was recorded. */
#ifndef XSPROF_TEST_MEMSINK_H
#define XSPROF_TEST_MEMSINK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/sink.h"
#include "io/reader.h"

static xsprof_rank_data memsink_data;
static int memsink_loaded;
static size_t memsink_chunks;

static xsprof_status memsink_chunk_full(void *self, const xsprof_chunk_header *c, const void *rec, size_t used) {
    (void)self; (void)c; (void)rec; (void)used;
    __atomic_add_fetch(&memsink_chunks, 1, __ATOMIC_RELAXED);
    return XSPROF_OK;
}

static xsprof_status memsink_finish(void *self, const char *journal, const char *out) {
    (void)self; (void)out;
    char err[512];
    xsprof_status st = xsprof_journal_load(journal, &memsink_data, err, sizeof err);
    if (st) {
        fprintf(stderr, "memsink: %s\n", err);
        return st;
    }
    memsink_loaded = 1;
    return XSPROF_OK;
}

static inline void memsink_install(void) {
    static const xsprof_sink s = {"memory", NULL, memsink_chunk_full, memsink_finish};
    if (xsprof_sink_set(&s) != XSPROF_OK) {
        fprintf(stderr, "memsink: cannot install sink\n");
        exit(2);
    }
}

static inline size_t memsink_count_regions(const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < memsink_data.nregions; i++)
        if (!strcmp(xsprof_rank_data_string(&memsink_data, memsink_data.regions[i].name), name))
            n++;
    return n;
}

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
#endif
