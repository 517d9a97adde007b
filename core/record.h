/* core/record.h — the in-memory record stream, shared by the collectors
 * (core, mpi, gpu) that append records and the journal reader in io/ that
 * converts them. Owner: core.
 *
 * A chunk holds records of ONE thread, back to back, each 8-byte aligned and
 * starting with xsprof_rec_hdr. `size` is the full record size in bytes
 * (a multiple of 8). Records are committed by publishing the chunk's `used`
 * field after the record is written, so a reader of a dead process's journal
 * sees only whole records. All times are int64 ns on this process's clock
 * (xsprof_clock_now). Layouts are fixed: never reorder fields, only append
 * new record types (and bump XSPROF_JOURNAL_VERSION when a layout changes). */
#ifndef XSPROF_CORE_RECORD_H
#define XSPROF_CORE_RECORD_H

#include <stdint.h>

enum xsprof_rec_type {
    XSPROF_REC_REGION = 1,  /* xsprof_rec_region */
    XSPROF_REC_INSTANT = 2, /* xsprof_rec_instant */
    XSPROF_REC_COUNTER = 3, /* xsprof_rec_counter */
    XSPROF_REC_MPI = 4,     /* xsprof_rec_mpi */
    XSPROF_REC_GPU = 5,     /* xsprof_rec_gpu */
    XSPROF_REC_CLOCK = 6,   /* xsprof_rec_clock */
    XSPROF_REC_MEM = 7,     /* xsprof_rec_mem */
    XSPROF_REC_ARG = 8,     /* xsprof_rec_arg, belongs to the next region record at `depth` */
    XSPROF_REC_THREAD = 9,  /* xsprof_rec_thread */
    XSPROF_REC_COMM = 10,   /* xsprof_rec_comm + members */
    XSPROF_REC_META = 11,   /* xsprof_rec_meta: run metadata key = value (string ids) */
    XSPROF_REC_DROP = 12,   /* xsprof_rec_drop: records lost on this thread so far */
    XSPROF_REC_TOPO = 13,   /* xsprof_rec_topo: hwloc summary of this rank */
    XSPROF_REC_COMM_MORE = 14, /* xsprof_rec_comm_more: members that did not fit the COMM record */
    XSPROF_REC_STACK = 15,  /* xsprof_rec_stack: an interned call stack (definition) */
    XSPROF_REC_MODULE = 16, /* xsprof_rec_module: an object seen loaded or gone (definition) */
    XSPROF_REC_SAMPLE = 17, /* xsprof_rec_sample: a sampled call stack of some thread */
    XSPROF_REC_ALLOC_STACK = 18, /* xsprof_rec_alloc_stack: the call stack of the MEM record before it */
    XSPROF_REC_MPI_PACKED = 19 /* an xsprof_rec_mpi in the varint form of record_pack.h (what mpi/ writes) */
};

typedef struct xsprof_rec_hdr {
    uint16_t type;
    uint16_t size;
} xsprof_rec_hdr;

/* Region categories (stored; nvtx ranges keep their domain as an arg). */
enum xsprof_category { XSPROF_CAT_USER = 0, XSPROF_CAT_MPI = 1, XSPROF_CAT_NVTX = 2, XSPROF_CAT_GPU = 3 };

/* A completed region, written when it ends (so rows are in completion order). */
typedef struct xsprof_rec_region {
    xsprof_rec_hdr h;
    uint16_t depth;    /* 0 = outermost */
    uint16_t category; /* enum xsprof_category */
    uint32_t name;     /* string id */
    uint32_t nargs;    /* number of ARG records that preceded it for this region */
    int64_t t_begin;
    int64_t t_end;
} xsprof_rec_region; /* 32 bytes */

typedef struct xsprof_rec_instant {
    xsprof_rec_hdr h;
    uint32_t name;
    int64_t t;
} xsprof_rec_instant; /* 16 bytes */

typedef struct xsprof_rec_counter {
    xsprof_rec_hdr h;
    uint32_t name;
    int64_t t;
    double value;
} xsprof_rec_counter; /* 24 bytes */

enum xsprof_arg_kind { XSPROF_ARG_INT = 1, XSPROF_ARG_DOUBLE = 2, XSPROF_ARG_STRING = 3, XSPROF_ARG_SHAPE = 4 };
#define XSPROF_ARG_SHAPE_MAX 8
typedef struct xsprof_rec_arg {
    xsprof_rec_hdr h;
    uint32_t key;   /* string id */
    uint16_t kind;  /* enum xsprof_arg_kind */
    uint16_t depth; /* depth of the region it belongs to */
    uint32_t ndims; /* SHAPE: number of dims used in v.dims */
    union {
        int64_t i;
        double d;
        uint32_t s; /* string id */
        int64_t dims[XSPROF_ARG_SHAPE_MAX];
    } v;
} xsprof_rec_arg; /* 80 bytes */

/* MPI call classes: what the merge needs to match and analyse. */
enum xsprof_mpi_kind {
    XSPROF_MPI_OTHER = 0,      /* no message semantics (comm mgmt, probe, ...) */
    XSPROF_MPI_SEND = 1,       /* blocking send (Send, Bsend, Rsend) */
    XSPROF_MPI_SSEND = 2,      /* synchronous send */
    XSPROF_MPI_RECV = 3,       /* blocking receive, peer/tag resolved from status */
    XSPROF_MPI_ISEND = 4,      /* nonblocking send post (message fields set) */
    XSPROF_MPI_IRECV = 5,      /* nonblocking receive post (peer/tag may be wildcards) */
    XSPROF_MPI_SENDRECV = 6,   /* send part in peer/tag/bytes_sent, recv part in the COMPLETION that follows */
    XSPROF_MPI_WAIT = 7,       /* completion call (Wait*, Test* that completed) */
    XSPROF_MPI_COLL = 8,       /* blocking collective */
    XSPROF_MPI_ICOLL = 9,      /* nonblocking collective post */
    XSPROF_MPI_COMPLETION = 10, /* one per completed request, t_begin = t_end = completion time;
                                   for receives: peer, tag, bytes_recv, seq resolved from status */
    XSPROF_MPI_RMA = 11,
    XSPROF_MPI_IO = 12
};

/* Collective sub-kinds for wait-state analysis (xsprof_rec_mpi.coll). */
enum xsprof_coll_kind {
    XSPROF_COLL_NONE = 0,
    XSPROF_COLL_BARRIER = 1,
    XSPROF_COLL_NXN = 2,      /* Allreduce, Allgather(v), Alltoall(v/w), Reduce_scatter(_block) */
    XSPROF_COLL_ONE2N = 3,    /* Bcast, Scatter(v): root sends */
    XSPROF_COLL_N2ONE = 4,    /* Reduce, Gather(v): root receives */
    XSPROF_COLL_SCAN = 5,     /* Scan, Exscan */
    XSPROF_COLL_NEIGHBOR = 6
};

#define XSPROF_MPI_NONE (-1) /* peer/root/tag not applicable */
#define XSPROF_MPI_F_WILDCARD_SRC 0x1 /* receive posted with MPI_ANY_SOURCE */
#define XSPROF_MPI_F_WILDCARD_TAG 0x2 /* receive posted with MPI_ANY_TAG */
#define XSPROF_MPI_F_CANCELLED 0x4
#define XSPROF_MPI_F_PERSISTENT 0x8 /* request is persistent (*_init / Start) */
#define XSPROF_MPI_F_RECV 0x10      /* COMPLETION of a receive (else of a send/collective) */
#define XSPROF_MPI_F_FREED 0x20     /* request freed before completion */
#define XSPROF_MPI_F_TRUNCATED 0x40 /* receive of a message longer than its buffer (MPI_ERR_TRUNCATE):
                                       matched and numbered all the same; bytes_recv as its status
                                       counts them (Open MPI: the whole message) */

typedef struct xsprof_rec_mpi {
    xsprof_rec_hdr h;
    uint32_t op;        /* string id of the C function name, e.g. "MPI_Send" */
    int64_t t_begin;
    int64_t t_end;
    uint32_t comm;      /* global communicator id (0 = MPI_COMM_WORLD, UINT32_MAX = none) */
    int32_t peer;       /* WORLD rank of the partner, XSPROF_MPI_NONE if n/a */
    int32_t tag;        /* XSPROF_MPI_NONE if n/a */
    int32_t root;       /* WORLD rank of the root, XSPROF_MPI_NONE if n/a */
    uint64_t bytes_sent;
    uint64_t bytes_recv;
    uint64_t request;   /* process-unique request id, 0 = none */
    uint64_t seq;       /* per-(comm, peer, tag) message sequence on this rank, from 1 */
    uint64_t coll_seq;  /* per-comm collective sequence on this rank, from 1 */
    uint8_t kind;       /* enum xsprof_mpi_kind */
    uint8_t coll;       /* enum xsprof_coll_kind */
    uint16_t flags;     /* XSPROF_MPI_F_* */
    uint32_t count;     /* number of requests completed by a WAIT call; else 0 */
    uint32_t callsite;  /* call stack id (xsprof_rec_stack) of the caller in the program, 0 = unknown */
    uint32_t pad;
} xsprof_rec_mpi; /* 96 bytes */

enum xsprof_gpu_kind {
    XSPROF_GPU_KERNEL = 1,
    XSPROF_GPU_MEMCPY_HTOD = 2,
    XSPROF_GPU_MEMCPY_DTOH = 3,
    XSPROF_GPU_MEMCPY_DTOD = 4,
    XSPROF_GPU_MEMCPY_OTHER = 5,
    XSPROF_GPU_MEMSET = 6,
    XSPROF_GPU_SYNC = 7,
    XSPROF_GPU_API = 8 /* CUDA runtime/driver API call on a CPU thread */
};
typedef struct xsprof_rec_gpu {
    xsprof_rec_hdr h;
    uint32_t name;        /* string id: kernel or API name */
    int64_t t_begin;      /* xsprof clock */
    int64_t t_end;
    uint32_t kind;        /* enum xsprof_gpu_kind */
    uint32_t device;
    uint32_t stream;
    uint32_t correlation; /* links a kernel/copy to the API call that launched it */
    uint64_t bytes;
    uint32_t context;
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_mem;
    uint32_t registers;
    uint32_t thread;      /* API records: xsprof thread id of the caller; else 0 */
} xsprof_rec_gpu; /* 96 bytes */

enum xsprof_clock_phase { XSPROF_CLOCK_INIT = 0, XSPROF_CLOCK_PERIODIC = 1, XSPROF_CLOCK_FINAL = 2 };
typedef struct xsprof_rec_clock {
    xsprof_rec_hdr h;
    uint32_t phase;
    int64_t t_local;   /* local time of the sample (midpoint) */
    int64_t offset_ns; /* reference_time = local_time + offset_ns */
    int64_t rtt_ns;    /* round trip of the best exchange; error bound = rtt/2 */
} xsprof_rec_clock; /* 32 bytes */

enum xsprof_mem_kind { XSPROF_MEM_ALLOC = 1, XSPROF_MEM_FREE = 2 };
/* kind flag: made while the session was paused (stopped, or outside the
 * schedule's active window): counted in the memory figures (high-water
 * mark, leak candidates), left off the timeline */
#define XSPROF_MEM_F_PAUSED 0x100
#define XSPROF_MEM_KIND(k) ((k) & 0xff)
typedef struct xsprof_rec_mem {
    xsprof_rec_hdr h;
    uint16_t kind;
    int16_t device; /* -1 host */
    int64_t t;
    uint64_t ptr;
    uint64_t size;
} xsprof_rec_mem; /* 32 bytes */

typedef struct xsprof_rec_thread {
    xsprof_rec_hdr h;
    uint32_t tid;    /* xsprof thread id (0 = first thread seen) */
    int32_t os_tid;
    uint32_t name;   /* string id */
} xsprof_rec_thread; /* 16 bytes */

typedef struct xsprof_rec_comm {
    xsprof_rec_hdr h;
    uint32_t id;       /* global id */
    uint32_t size;     /* number of members (int32 world ranks) */
    uint32_t name;     /* string id, e.g. "MPI_COMM_WORLD", "split(1)" */
    uint32_t parent;   /* global id of the parent communicator, UINT32_MAX if none */
    int32_t members[]; /* world ranks in comm-rank order: all of them, or as
                          many as fit (XSPROF_COMM_HEAD_MAX) and the rest in
                          COMM_MORE records right after, on the same thread */
} xsprof_rec_comm;

typedef struct xsprof_rec_comm_more {
    xsprof_rec_hdr h;
    uint32_t id;       /* the communicator of the COMM record being continued */
    uint32_t first;    /* index of members[0] in its member list */
    int32_t members[]; /* up to XSPROF_COMM_MORE_MAX, fewer in the last one */
} xsprof_rec_comm_more;

/* A record is at most 4096 bytes (its size is a uint16 and chunks hold many). */
#define XSPROF_REC_MAX 4096u
#define XSPROF_COMM_HEAD_MAX ((XSPROF_REC_MAX - sizeof(xsprof_rec_comm)) / sizeof(int32_t))
#define XSPROF_COMM_MORE_MAX ((XSPROF_REC_MAX - sizeof(xsprof_rec_comm_more)) / sizeof(int32_t))

typedef struct xsprof_rec_meta {
    xsprof_rec_hdr h;
    uint32_t key;   /* string id */
    uint32_t value; /* string id */
} xsprof_rec_meta; /* 12 -> padded to 16 on write */

typedef struct xsprof_rec_drop {
    xsprof_rec_hdr h;
    uint32_t tid;
    uint64_t dropped; /* cumulative records dropped by this thread */
} xsprof_rec_drop; /* 16 bytes */

typedef struct xsprof_rec_topo {
    xsprof_rec_hdr h;
    int32_t numa_node;  /* -1 unknown */
    uint32_t cpuset;    /* string id: cpuset the rank is bound to, list syntax "0-3" */
    uint32_t cores;     /* string id: cores of that cpuset */
    uint32_t gpus;      /* string id: nearby GPUs (PCI ids), may be empty */
    uint32_t host;      /* string id */
    int32_t ncores_host;
} xsprof_rec_topo; /* 28 -> 32 */

/* A call stack, interned once per process: `n` return addresses, the
 * innermost first (frames[0] is the instruction after the call, so the
 * call itself is at frames[0] - 1). Written before its id is used. */
#define XSPROF_STACK_MAX 64
typedef struct xsprof_rec_stack {
    xsprof_rec_hdr h;
    uint32_t id;       /* from 1 */
    uint32_t n;        /* 1..XSPROF_STACK_MAX */
    uint32_t pad;
    uint64_t frames[]; /* n addresses */
} xsprof_rec_stack;

enum xsprof_module_event { XSPROF_MODULE_LOADED = 1, XSPROF_MODULE_GONE = 2 };
/* A loaded object (program, shared library, vdso), written when xsprof
 * first sees it and again (event GONE, same id) once it has been unloaded.
 * Addresses of the process: [lo, hi) spans its PT_LOAD segments; an
 * address a in it is a - bias in the object's ELF file. */
typedef struct xsprof_rec_module {
    xsprof_rec_hdr h;
    uint32_t id;       /* from 1 */
    uint32_t event;    /* enum xsprof_module_event */
    uint32_t path;     /* string id: absolute path of the file */
    uint32_t build_id; /* string id: GNU build-id in hex, "" when the object has none */
    uint32_t pad;
    uint64_t bias;     /* load bias (dlpi_addr) */
    uint64_t lo, hi;
    int64_t t;         /* when xsprof saw it loaded / gone (xsprof clock) */
} xsprof_rec_module; /* 56 bytes */

/* A sample (XSPROF_SAMPLE_HZ): where thread `os_tid` was when its CPU
 * time crossed the next period. The stack's frames[0] is the interrupted
 * instruction itself (exact), the others return addresses. Written by the
 * sampler thread, so the chunk's thread is not the sampled one. */
typedef struct xsprof_rec_sample {
    xsprof_rec_hdr h;
    uint32_t stack;    /* call stack id, 0 = the stack could not be interned */
    int64_t t;
    int32_t os_tid;    /* kernel thread id (xsprof_rec_thread.os_tid) */
    uint32_t pad;
} xsprof_rec_sample; /* 24 bytes */

/* Where an allocation was made (XSPROF_MEMORY, allocations of at least
 * XSPROF_MEMORY_STACK_BYTES): written by the allocating thread right after
 * its MEM record, whose time and address it repeats. */
typedef struct xsprof_rec_alloc_stack {
    xsprof_rec_hdr h;
    uint32_t stack;    /* call stack id, from the allocation's caller out */
    int64_t t;
    uint64_t ptr;
} xsprof_rec_alloc_stack; /* 24 bytes */

/* Round a record size up to the 8-byte alignment of the stream. */
static inline uint16_t xsprof_rec_size(uint32_t raw) { return (uint16_t)((raw + 7u) & ~7u); }

#endif
