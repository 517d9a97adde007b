/* core/journal.h — layout of the per-rank journal file RUN_DIR/rank-NNNNN.xsj.
 * Owner: core (writes it through mmap MAP_SHARED); io/ reads it (recovery and
 * conversion to HDF5). Because the mapping is shared with the page cache,
 * every committed record survives SIGKILL of the process.
 *
 *   [xsprof_journal_header]            (XSPROF_JOURNAL_HEADER_SIZE bytes)
 *   [string area]                      strings_capacity bytes at strings_offset
 *   [chunk 0][chunk 1]...              chunk_size bytes each at chunks_offset
 *
 * String area: entries {uint32 id; uint32 len; char bytes[len]} padded to 4
 * bytes, appended under the intern lock; strings_used is published after an
 * entry is complete. Ids are dense from 0.
 *
 * Chunk: xsprof_chunk_header followed by records (core/record.h). A chunk
 * belongs to one thread; `seq` orders the chunks of that thread. `used` counts
 * committed bytes after the header. state: FREE (never handed out), ACTIVE
 * (being filled), FULL (closed by its thread). Both ACTIVE and FULL chunks
 * hold valid records up to `used`. */
#ifndef XSPROF_CORE_JOURNAL_H
#define XSPROF_CORE_JOURNAL_H

#include <stdint.h>

#define XSPROF_JOURNAL_MAGIC "XSPJRNL\1"
#define XSPROF_JOURNAL_VERSION 3u /* 3: MPI calls as XSPROF_REC_MPI_PACKED */
#define XSPROF_JOURNAL_VERSION_OLDEST 2u /* a reader takes journals from this version on */
#define XSPROF_JOURNAL_HEADER_SIZE 4096u
#define XSPROF_CHUNK_MAGIC 0x4b4e4843u /* "CHNK" */

enum xsprof_journal_state {
    XSPROF_JOURNAL_RUNNING = 1,   /* process alive or died without a handler */
    XSPROF_JOURNAL_FINALIZED = 2, /* all data written; journal may be deleted */
    XSPROF_JOURNAL_SIGNALED = 3,  /* a fatal signal handler ran: see `signal` */
    XSPROF_JOURNAL_CLOSED = 4     /* the process finalized (see end_state) but its rank
                                     file could not be written: the journal is the data */
};

enum xsprof_chunk_state { XSPROF_CHUNK_FREE = 0, XSPROF_CHUNK_ACTIVE = 1, XSPROF_CHUNK_FULL = 2 };

typedef struct xsprof_journal_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint32_t chunk_size;      /* bytes per chunk including its header */
    uint32_t state;           /* enum xsprof_journal_state (atomic) */
    int32_t rank;
    int32_t size;             /* number of ranks, 1 without MPI */
    int64_t pid;
    int64_t start_realtime_ns; /* CLOCK_REALTIME at start */
    int64_t start_clock_ns;    /* xsprof clock at the same instant */
    int32_t signal;            /* fatal signal number when state == SIGNALED */
    uint32_t pad0;
    uint64_t strings_offset;
    uint64_t strings_capacity;
    uint64_t strings_used;     /* atomic, bytes of complete entries */
    uint64_t chunks_offset;
    uint64_t nchunks;          /* atomic, chunks ever handed out */
    uint64_t dropped;          /* atomic, total records dropped (all threads) */
    uint64_t anomalies;        /* atomic, counted API misuse */
    char job_id[64];           /* from the launcher (OMPI/PMIx/Slurm), "" if none */
    char host[64];
    char clock_source[32];     /* e.g. "CLOCK_MONOTONIC" */
    char xsprof_version[32];
    char end_state[64];        /* set at finalize, before the sink runs; "" before */
    int64_t alive_realtime_ns; /* atomic: CLOCK_REALTIME of the writer's last round
                                  (at least every alive_period_ns while the process
                                  lives); 0 in journals from before it existed */
    int64_t alive_period_ns;
} xsprof_journal_header;

typedef struct xsprof_chunk_header {
    uint32_t magic;  /* XSPROF_CHUNK_MAGIC */
    uint32_t state;  /* enum xsprof_chunk_state (atomic) */
    uint32_t tid;    /* xsprof thread id */
    uint32_t pad0;
    uint64_t seq;    /* per-thread chunk sequence, from 0 */
    uint64_t used;   /* atomic: committed record bytes after this header */
    uint64_t reserved[4];
} xsprof_chunk_header; /* 64 bytes */

#endif
