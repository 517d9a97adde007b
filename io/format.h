/* io/format.h — the rank-file format (version 2), shared by the HDF5 writer
 * and the reader so that both agree by construction. Owner: io.
 * Documented for users in io/FORMAT.md: keep both in step.
 *
 * Each table is a 1-D chunked, extendible dataset of a compound type whose
 * members are the fields of the row struct below (same names). Rows of one
 * thread appear in the order they were recorded (regions: completion order). */
#ifndef XSPROF_IO_FORMAT_H
#define XSPROF_IO_FORMAT_H

#include <stdint.h>

#define XSPROF_FORMAT_VERSION 2
#define XSPROF_FORMAT_NAME "xsprof-rank"

/* dataset paths */
#define XSPROF_DS_REGIONS "/events/regions"
#define XSPROF_DS_ARGS "/events/args"
#define XSPROF_DS_INSTANTS "/events/instants"
#define XSPROF_DS_COUNTERS "/events/counters"
#define XSPROF_DS_MPI "/events/mpi"
#define XSPROF_DS_GPU "/events/gpu"
#define XSPROF_DS_MEM "/events/memory"
#define XSPROF_DS_CLOCK "/clock/samples"
#define XSPROF_DS_STRINGS "/definitions/strings"
#define XSPROF_DS_THREADS "/definitions/threads"
#define XSPROF_DS_COMMS "/definitions/comms"
#define XSPROF_DS_COMM_MEMBERS "/definitions/comm_members"
#define XSPROF_DS_TOPOLOGY "/definitions/topology"
#define XSPROF_DS_META "/definitions/metadata"
#define XSPROF_DS_CALLSTACKS "/definitions/callstacks"
#define XSPROF_DS_FRAMES "/definitions/frames"
#define XSPROF_DS_MODULES "/definitions/modules"
#define XSPROF_DS_SAMPLES "/events/samples"
#define XSPROF_DS_ALLOC_STACKS "/events/alloc_stacks"

typedef struct xsprof_io_region {
    int64_t t_begin;
    int64_t t_end;
    uint32_t name;
    uint32_t thread;
    uint16_t depth;
    uint16_t category;
    uint32_t nargs;
    int64_t args; /* row of its first arg in /events/args, -1 when none */
} xsprof_io_region;

typedef struct xsprof_io_arg {
    int64_t region; /* row in /events/regions */
    uint32_t key;
    uint32_t kind;  /* enum xsprof_arg_kind */
    int64_t i;
    double d;
    uint32_t s;
    uint32_t ndims;
    int64_t dims[8];
} xsprof_io_arg;

typedef struct xsprof_io_instant {
    int64_t t;
    uint32_t name;
    uint32_t thread;
} xsprof_io_instant;

typedef struct xsprof_io_counter {
    int64_t t;
    double value;
    uint32_t name;
    uint32_t thread;
} xsprof_io_counter;

typedef struct xsprof_io_mpi {
    int64_t t_begin;
    int64_t t_end;
    uint32_t op;
    uint32_t thread;
    uint32_t comm;
    int32_t peer;
    int32_t tag;
    int32_t root;
    uint64_t bytes_sent;
    uint64_t bytes_recv;
    uint64_t request;
    uint64_t seq;
    uint64_t coll_seq;
    uint8_t kind;
    uint8_t coll;
    uint16_t flags;
    uint32_t count;
    uint32_t callsite; /* id in /definitions/callstacks, 0 = unknown */
    uint32_t pad;      /* 0 */
} xsprof_io_mpi;

typedef struct xsprof_io_gpu {
    int64_t t_begin;
    int64_t t_end;
    uint32_t name;
    uint32_t kind;
    uint32_t device;
    uint32_t stream;
    uint32_t correlation;
    uint32_t context;
    uint64_t bytes;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_mem;
    uint32_t registers;
    uint32_t thread;
} xsprof_io_gpu;

typedef struct xsprof_io_mem {
    int64_t t;
    uint64_t ptr;
    uint64_t size;
    uint32_t thread;
    uint16_t kind;
    int16_t device;
} xsprof_io_mem;

typedef struct xsprof_io_clock {
    int64_t t_local;
    int64_t offset_ns;
    int64_t rtt_ns;
    uint32_t phase;
} xsprof_io_clock;

typedef struct xsprof_io_thread {
    uint32_t tid;
    int32_t os_tid;
    uint32_t name;
    uint64_t dropped;
} xsprof_io_thread;

typedef struct xsprof_io_comm {
    uint32_t id;
    uint32_t size;
    uint32_t name;
    uint32_t parent;
    uint64_t members; /* first row in /definitions/comm_members (int32 world ranks) */
} xsprof_io_comm;

typedef struct xsprof_io_topo {
    int32_t numa_node;
    int32_t ncores_host;
    uint32_t cpuset;
    uint32_t cores;
    uint32_t gpus;
    uint32_t host;
} xsprof_io_topo;

typedef struct xsprof_io_meta {
    uint32_t key;
    uint32_t value;
} xsprof_io_meta;

/* An interned call stack: `depth` return addresses in /definitions/frames
 * (uint64) from row `frames`, the innermost first. Rows in increasing id. */
typedef struct xsprof_io_callstack {
    uint32_t id;    /* from 1 */
    uint32_t depth; /* 1..64 */
    uint64_t frames;
} xsprof_io_callstack;

#define XSPROF_IO_STACK_MAX 64
#define XSPROF_IO_NOT_UNLOADED INT64_MAX

/* A loaded object: addresses [lo, hi) of the process are its, at
 * (address - bias) in its ELF file. Rows in increasing id. */
typedef struct xsprof_io_module {
    uint64_t bias;
    uint64_t lo;
    uint64_t hi;
    int64_t t_load;   /* first seen loaded (xsprof clock of the rank) */
    int64_t t_unload; /* first seen gone, XSPROF_IO_NOT_UNLOADED when loaded to the end */
    uint32_t id;      /* from 1 */
    uint32_t path;    /* string id */
    uint32_t build_id; /* string id: hex, "" when none */
    uint32_t pad;      /* 0 */
} xsprof_io_module;

/* A sampled call stack (XSPROF_SAMPLE_HZ): thread os_tid (the kernel's
 * id, /definitions/threads.os_tid names it when xsprof knows the thread)
 * was at stack `stack` (id in /definitions/callstacks, whose frames[0] is
 * the interrupted instruction itself, the others return addresses) at t.
 * Per sampled thread in time order. Absent in files written before
 * sampling existed (read as no rows). */
typedef struct xsprof_io_sample {
    int64_t t;
    uint32_t stack; /* 0 = unknown (more distinct stacks than the table holds) */
    int32_t os_tid;
} xsprof_io_sample;

/* Where an allocation was made (XSPROF_MEMORY, allocations of at least
 * XSPROF_MEMORY_STACK_BYTES): the /events/memory allocation of this time
 * and address, and its call stack (from the program's allocating call
 * out). Absent in files written before it. */
typedef struct xsprof_io_alloc_stack {
    int64_t t;
    uint64_t ptr;
    uint32_t stack;
} xsprof_io_alloc_stack;

#endif
