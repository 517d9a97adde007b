/* mpi/xsprof_mpi.h — MPI awareness of xsprof: the state the wrappers record
 * through (one call descriptor per intercepted call), the communicator
 * registry (global ids, world-rank translation), request tracking, message
 * and collective sequence numbers, clock alignment and topology capture.
 * Owner: mpi. Used by pmpi_wrappers/ (generated and hand-written wrappers).
 * Everything here is hidden; MPI is called only through PMPI_* so nothing
 * xsprof does is recorded. */
#ifndef XSPROF_MPI_XSPROF_MPI_H
#define XSPROF_MPI_XSPROF_MPI_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/collector.h"

/* ---- static description of every wrapped function (generated ops.c) ---- */

/* Wrapper behaviour, a superset of enum xsprof_mpi_kind (see mpi_roles.txt). */
enum xsprof_mpi_wkind {
    XSPROF_W_OTHER, XSPROF_W_SEND, XSPROF_W_SSEND, XSPROF_W_RECV, XSPROF_W_ISEND, XSPROF_W_IRECV,
    XSPROF_W_SENDRECV, XSPROF_W_COLL, XSPROF_W_ICOLL, XSPROF_W_RMA, XSPROF_W_IO, XSPROF_W_PSEND,
    XSPROF_W_PRECV, XSPROF_W_START, XSPROF_W_STARTALL, XSPROF_W_WAIT, XSPROF_W_REQFREE, XSPROF_W_CANCEL,
    XSPROF_W_PROBE, XSPROF_W_MRECV, XSPROF_W_IMRECV, XSPROF_W_COMMNEW, XSPROF_W_ICOMMNEW, XSPROF_W_COMMFREE,
    XSPROF_W_WINNEW, XSPROF_W_WINFREE, XSPROF_W_SPECIAL
};

/* Byte-count and completion rules named in the spec (rule=...). */
enum xsprof_mpi_rule {
    XSPROF_RULE_NONE, XSPROF_RULE_BARRIER, XSPROF_RULE_BCAST, XSPROF_RULE_REDUCE, XSPROF_RULE_ALLREDUCE,
    XSPROF_RULE_GATHER, XSPROF_RULE_GATHERV, XSPROF_RULE_SCATTER, XSPROF_RULE_SCATTERV,
    XSPROF_RULE_ALLGATHER, XSPROF_RULE_ALLGATHERV, XSPROF_RULE_ALLTOALL, XSPROF_RULE_ALLTOALLV,
    XSPROF_RULE_ALLTOALLW, XSPROF_RULE_REDSCAT, XSPROF_RULE_REDSCAT_BLOCK, XSPROF_RULE_SCAN,
    XSPROF_RULE_EXSCAN,
    XSPROF_RULE_NB_ALLGATHER, XSPROF_RULE_NB_ALLGATHERV, XSPROF_RULE_NB_ALLTOALL, XSPROF_RULE_NB_ALLTOALLV,
    XSPROF_RULE_NB_ALLTOALLW, XSPROF_RULE_SINGLE, XSPROF_RULE_WAIT, XSPROF_RULE_WAITALL, XSPROF_RULE_WAITANY,
    XSPROF_RULE_WAITSOME, XSPROF_RULE_TEST, XSPROF_RULE_TESTALL, XSPROF_RULE_TESTANY, XSPROF_RULE_TESTSOME,
    XSPROF_RULE_MEMBERS /* communicator made by its new members only */
};

/* XSPROF_MPI groups (bit i = group i). */
enum xsprof_mpi_group {
    XSPROF_GRP_P2P, XSPROF_GRP_COLL, XSPROF_GRP_RMA, XSPROF_GRP_IO, XSPROF_GRP_COMM, XSPROF_GRP_TYPE,
    XSPROF_GRP_MISC, XSPROF_GRP_COUNT
};

typedef struct xsprof_mpi_op {
    const char *name;
    uint8_t group; /* enum xsprof_mpi_group */
    uint8_t wkind; /* enum xsprof_mpi_wkind */
    uint8_t coll;  /* enum xsprof_coll_kind */
    uint8_t rule;  /* enum xsprof_mpi_rule */
} xsprof_mpi_op;

XSPROF_HIDDEN extern const xsprof_mpi_op xsprof_mpi_ops[];
XSPROF_HIDDEN extern const unsigned xsprof_mpi_nops;

/* ---- one intercepted call --------------------------------------------- */

/* Which roles a call filled (the rest of the descriptor is zero). */
enum {
    XSPROF_R_SBUF = 1u << 0, XSPROF_R_RBUF = 1u << 1, XSPROF_R_COMM = 1u << 2, XSPROF_R_ROOT = 1u << 3,
    XSPROF_R_REQ = 1u << 4, XSPROF_R_STATUS = 1u << 5, XSPROF_R_PEER = 1u << 6, XSPROF_R_SRC = 1u << 7,
    XSPROF_R_WIN = 1u << 8, XSPROF_R_FLAG = 1u << 9, XSPROF_R_STYPE = 1u << 10, XSPROF_R_RTYPE = 1u << 11
};

#define XSPROF_MPI_INLINE 16 /* requests/statuses handled without malloc */

/* Scratch space a wrapper keeps on its stack (not zeroed). */
typedef struct xsprof_mpi_scratch {
    MPI_Status status;
    MPI_Request req_snap[XSPROF_MPI_INLINE];
    MPI_Status statuses[XSPROF_MPI_INLINE];
} xsprof_mpi_scratch;

typedef struct xsprof_mpi_call {
    const void *site; /* return address into the program (xsprof_mpi_callsite) */
    unsigned op;
    unsigned has; /* XSPROF_R_* */
    xsprof_mpi_scratch *s;
    int saved_errno;
    int64_t t_begin;
    const void *sbuf;
    const void *rbuf;
    int scount, rcount;
    MPI_Datatype stype, rtype;
    const int *scounts, *rcounts;
    const MPI_Datatype *stypes, *rtypes;
    int peer, src, tag, root;
    MPI_Comm comm;
    MPI_Comm *commp, *newcomm;
    MPI_Request *req, *reqs;
    int nreq;
    int *index, *indices, *outcount, *flag;
    MPI_Status *status, *statuses;
    MPI_Message *msg;
    MPI_Win win;
    MPI_Win *winp, *newwin;
    /* filled by pre for post */
    MPI_Request *snap;      /* copy of the requests before the call */
    MPI_Status *own_statuses; /* malloc'd statuses, freed by post */
    MPI_Request *snap_heap;
    uintptr_t comm_key;     /* handle freed by the call (Comm_free, Win_free) */
    int seq_lock;           /* key lock taken by pre, released by post (Irecv; Cancel of a receive) */
    struct xsprof_comm_entry *freed; /* its registry entry, found before the call */
} xsprof_mpi_call;

/* 1 when the call must be recorded: the wrappers are on, the function's
 * group is selected and this thread is not inside xsprof. Takes the
 * thread's re-entry guard, released by xsprof_mpi_post. */
XSPROF_HIDDEN int xsprof_mpi_enter(unsigned op);
/* Before the PMPI call: snapshots requests, starts the clock. */
XSPROF_HIDDEN void xsprof_mpi_pre(xsprof_mpi_call *c);
/* After the PMPI call: writes the records, releases the guard, keeps errno. */
XSPROF_HIDDEN void xsprof_mpi_post(xsprof_mpi_call *c, int rc);
/* The status to pass to PMPI: the user's, or the call's own for MPI_STATUS_IGNORE. */
XSPROF_HIDDEN MPI_Status *xsprof_mpi_status_own(xsprof_mpi_call *c, MPI_Status *user);
XSPROF_HIDDEN MPI_Status *xsprof_mpi_statuses_own(xsprof_mpi_call *c, int n, MPI_Status *user);

/* ---- state and life cycle (init.c) ------------------------------------ */

typedef struct xsprof_mpi_state {
    _Atomic int on;        /* the one flag that turns every wrapper on/off */
    _Atomic int paused;    /* MPI_Pcontrol(0) */
    unsigned group_mask;   /* XSPROF_MPI selection */
    int rank, size;
    int thread_level;
    MPI_Comm sync_comm;    /* private duplicate of MPI_COMM_WORLD for xsprof's own messages */
    _Atomic uint64_t sync_next; /* WORLD collective (coll_seq) that takes the next periodic clock sample, 0 = off */
    int64_t sync_period_ns;     /* XSPROF_CLOCK_SYNC_S */
    int callsite_depth;    /* XSPROF_CALLSITE_DEPTH: frames per call site, 1..XSPROF_STACK_MAX */
    int64_t test_send_stall_ns; /* XSPROF_TEST_SEND_STALL_US: test hook, see xsprof_mpi_post */
    int64_t init_sync_ns;  /* time spent in clock exchanges (benchmarks) */
    int64_t final_sync_ns;
} xsprof_mpi_state;
XSPROF_HIDDEN extern xsprof_mpi_state xsprof_mpi_g;

/* Called by the MPI_Init/MPI_Init_thread wrappers after PMPI_Init*. */
XSPROF_HIDDEN void xsprof_mpi_init_after(int thread_level);
/* MPI_Abort: its row and the end state, before PMPI_Abort ends the job. */
XSPROF_HIDDEN void xsprof_mpi_abort_before(unsigned op, const void *site, int64_t t0, int errorcode);
/* Called by the MPI_Finalize wrapper before PMPI_Finalize: final clock
 * sample, the MPI_Finalize record (op, from t0), xsprof_finalize. */
XSPROF_HIDDEN void xsprof_mpi_finalize_before(unsigned op, const void *site, int64_t t0);
/* One record without message semantics (Init, Pcontrol), outside enter/post. */
XSPROF_HIDDEN void xsprof_mpi_record_plain(unsigned op, const void *site, int64_t t0, int64_t t1);
/* Call-site id of a call whose return address into the program is `site`
 * (the caller of the C wrapper, or of the Fortran binding): that address
 * alone at depth 1, else it and its callers (unwound with the binaries'
 * CFI), interned (core/collector.h). 0 when unknown. */
XSPROF_HIDDEN uint32_t xsprof_mpi_callsite(const void *site);
/* XSPROF_CALLSITE_DEPTH (default 1; 1..XSPROF_STACK_MAX, else a warning and 1). */
XSPROF_HIDDEN int xsprof_mpi_callsite_depth_parse(const char *spec);
/* 1 when the function's group is recorded (XSPROF_MPI). */
static inline int xsprof_mpi_group_on(unsigned op) {
    return (xsprof_mpi_g.group_mask >> xsprof_mpi_ops[op].group) & 1u;
}
/* MPI_Pcontrol levels: 0 pauses recording, anything else resumes it. */
XSPROF_HIDDEN void xsprof_mpi_pcontrol(int level);
/* Parse XSPROF_MPI ("-p2p,-rma" excludes, "p2p,coll" selects only). */
XSPROF_HIDDEN unsigned xsprof_mpi_groups_parse(const char *spec);
/* Interned name id of a wrapped function. */
XSPROF_HIDDEN uint32_t xsprof_mpi_op_name(unsigned op);

/* ---- communicator registry (comm.c) ----------------------------------- */

#define XSPROF_COMM_NONE UINT32_MAX
typedef struct xsprof_comm_entry {
    uint32_t gid;
    int size;            /* local group */
    int rsize;           /* remote group of an intercommunicator, else 0 */
    int32_t *world;      /* local group, comm-rank order -> world rank (NULL for WORLD) */
    int32_t *rworld;     /* remote group of an intercommunicator */
    _Atomic uint64_t coll_seq;
    _Atomic uint32_t created; /* creation calls on this communicator (agreed by its members) */
    struct xsprof_comm_entry *owned_next; /* registry's list of the entries it allocated */
} xsprof_comm_entry;

XSPROF_HIDDEN xsprof_status xsprof_comm_registry_init(void);
/* At MPI finalize, once no wrapper records: frees every entry. */
XSPROF_HIDDEN void xsprof_comm_registry_fini(void);
/* Entry of a communicator; unknown ones get a local entry with gid NONE. */
XSPROF_HIDDEN xsprof_comm_entry *xsprof_comm_lookup(MPI_Comm comm);
/* The entry if the communicator is registered, else NULL (never calls MPI:
 * safe on a handle the call is about to free). */
XSPROF_HIDDEN xsprof_comm_entry *xsprof_comm_find(MPI_Comm comm);
XSPROF_HIDDEN xsprof_comm_entry *xsprof_win_lookup(MPI_Win win);
/* World rank of `rank` in comm (the remote group for an intercommunicator). */
static inline int32_t xsprof_comm_world(const xsprof_comm_entry *e, int rank) {
    if (rank < 0)
        return XSPROF_MPI_NONE;
    if (e->rworld)
        return rank < e->rsize ? e->rworld[rank] : XSPROF_MPI_NONE;
    if (!e->world)
        return rank;
    return rank < e->size ? e->world[rank] : XSPROF_MPI_NONE;
}
/* Register a new communicator created by `op` from `parent`. `index` is the
 * parent's creation counter value the members agreed on (-1: derive it from
 * the member set, for calls not collective over the parent). */
XSPROF_HIDDEN void xsprof_comm_created(MPI_Comm comm, xsprof_comm_entry *parent, int64_t index, unsigned op, int tag);
XSPROF_HIDDEN void xsprof_comm_freed(uintptr_t key);
XSPROF_HIDDEN void xsprof_win_created(MPI_Win win, MPI_Comm comm);
XSPROF_HIDDEN uintptr_t xsprof_comm_key(MPI_Comm comm);

/* ---- requests and sequence numbers (request.c) ------------------------ */

typedef struct xsprof_req_info {
    uint64_t id;
    uint64_t seq;
    uint64_t coll_seq;
    uint64_t bytes;
    xsprof_comm_entry *comm;
    MPI_Comm *newcomm;  /* Comm_idup: registered at completion */
    uint32_t op;
    int32_t peer;       /* world rank */
    int32_t peer_rank;  /* comm rank as posted (receives: may be MPI_ANY_SOURCE) */
    int32_t tag;
    int32_t root;
    uint32_t created;   /* Comm_idup: parent creation counter at post */
    uint16_t flags;
    uint8_t kind;       /* enum xsprof_mpi_kind of the post */
    uint8_t coll;
    uint8_t persistent, active, is_recv, is_send;
    uint64_t hole;      /* a receive cancelled at MPI_Cancel: the number it left void (xsprof_seq_release) */
    uint64_t claim;     /* the Wait/Test call processing it, 0 = none */
} xsprof_req_info;

XSPROF_HIDDEN uint64_t xsprof_req_new_id(void);
XSPROF_HIDDEN void xsprof_req_insert(MPI_Request r, const xsprof_req_info *info);
/* Move the oldest entry of r claimed by `from` to claim `to` (0 = unclaimed).
 * 1 done, 0 r not tracked, -1 r is an inactive persistent request (not
 * started since its last completion): no call claims it. */
XSPROF_HIDDEN int xsprof_req_claim(MPI_Request r, uint64_t from, uint64_t to);
/* Completion of r: copy out its oldest entry claimed by `claim` and remove
 * it; a persistent entry stays (inactive, unclaimed) unless `freeing`.
 * 0 when r is not tracked. */
XSPROF_HIDDEN int xsprof_req_take(MPI_Request r, xsprof_req_info *out, int freeing, uint64_t claim);
/* Apply fn (NULL: none) to the entry of r under its lock; copy the result to out (may be NULL). */
XSPROF_HIDDEN int xsprof_req_update(MPI_Request r, void (*fn)(xsprof_req_info *, void *), void *arg,
                                    xsprof_req_info *out);
/* Next per-(comm, peer, tag) sequence number for direction dir (0 send, 1 recv). */
XSPROF_HIDDEN uint64_t xsprof_seq_next(uint32_t gid, int32_t peer, int32_t tag, int dir);
/* The same for a receive posted without its key (MPI_ANY_SOURCE/ANY_TAG),
 * numbered when it completed on (gid, peer, tag). */
XSPROF_HIDDEN uint64_t xsprof_seq_next_floating(uint32_t gid, int32_t peer, int32_t tag);
/* A receive that was cancelled took no message: give its number (gone->seq,
 * on gone's comm, peer and tag) back. gone's own entry, if still tracked,
 * must no longer hold it. Called with gone's key locked (xsprof_seq_lock).
 * Returns 0, or gone->seq when the number stays void instead: a floating
 * receive (posted earlier, so it matched first) completed with a number
 * above it, which is written and cannot move down; the cancelled receive's
 * completion then names the void number and the merge closes the gap
 * (merge/match xsm_recv_order_fix). */
XSPROF_HIDDEN uint64_t xsprof_seq_release(const xsprof_req_info *gone);
/* Lock of a receive key (comm gid, world peer, tag), held while a receive on
 * it is numbered and its request entry written, and from before MPI_Cancel
 * until a cancelled receive's number is given back: else a thread could
 * take a number the release is about to free, or write an entry the
 * renumbering has already passed. Returns what xsprof_seq_unlock takes
 * (0: nothing locked, below MPI_THREAD_MULTIPLE). Taken before any request
 * table lock. */
XSPROF_HIDDEN int xsprof_seq_lock(uint32_t gid, int32_t peer, int32_t tag);
XSPROF_HIDDEN void xsprof_seq_unlock(int lock);

/* ---- clock alignment (sync.c) and topology (topo.c) ------------------- */

/* One clock sample of every rank (collective over MPI_COMM_WORLD). Also
 * agrees on the WORLD collective that takes the next periodic sample. */
XSPROF_HIDDEN void xsprof_clock_sync(int phase);
/* After the blocking WORLD collective number coll_seq: sample if it is due. */
XSPROF_HIDDEN void xsprof_clock_sync_maybe(uint64_t coll_seq);
XSPROF_HIDDEN void xsprof_topo_record(void);

#endif
