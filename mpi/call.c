/* mpi/call.c — what an intercepted call records: one xsprof_rec_mpi per
 * call and one XSPROF_MPI_COMPLETION per request it completes. The
 * generated wrappers fill an xsprof_mpi_call from the spec's roles; the
 * meaning of the roles lives here. */
#include <errno.h>
#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include "core/record_pack.h"
#include "core/clock.h" /* inline read: no call through the PLT on every MPI call */
#include "mpi/xsprof_mpi.h"

#define XSPROF_MAX_OPS 512
static _Atomic uint32_t g_op_names[XSPROF_MAX_OPS]; /* interned id + 1, 0 = not yet */

uint32_t xsprof_mpi_op_name(unsigned op) {
    uint32_t v = atomic_load_explicit(&g_op_names[op], memory_order_relaxed);
    if (v)
        return v - 1;
    xsprof_name_id id = 0;
    if (xsprof_string_intern(xsprof_mpi_ops[op].name, &id) != XSPROF_OK)
        return 0;
    atomic_store_explicit(&g_op_names[op], id + 1, memory_order_relaxed);
    return id;
}

/* Creating and freeing communicators and windows is tracked even when its
 * group is excluded (only not recorded): ids must stay agreed. */
static inline int registry_kind(unsigned wkind) {
    return wkind == XSPROF_W_COMMNEW || wkind == XSPROF_W_ICOMMNEW || wkind == XSPROF_W_COMMFREE ||
           wkind == XSPROF_W_WINNEW || wkind == XSPROF_W_WINFREE;
}


int xsprof_mpi_enter(unsigned op) {
    if (!atomic_load_explicit(&xsprof_mpi_g.on, memory_order_relaxed))
        return 0;
    if (!xsprof_mpi_group_on(op) && !registry_kind(xsprof_mpi_ops[op].wkind))
        return 0;
    return xsprof_guard_enter();
}

MPI_Status *xsprof_mpi_status_own(xsprof_mpi_call *c, MPI_Status *user) {
    c->status = user == MPI_STATUS_IGNORE ? &c->s->status : user;
    return c->status;
}

MPI_Status *xsprof_mpi_statuses_own(xsprof_mpi_call *c, int n, MPI_Status *user) {
    c->statuses = user;
    if (user != MPI_STATUSES_IGNORE || n <= 0)
        return user;
    if (n <= XSPROF_MPI_INLINE)
        c->statuses = c->s->statuses;
    else if ((c->own_statuses = malloc((size_t)n * sizeof(MPI_Status))))
        c->statuses = c->own_statuses;
    return c->statuses;
}

/* ---- helpers ------------------------------------------------------------ */

/* 64-bit sizes: a derived type may pass 2 GiB (MPI_Type_size says MPI_UNDEFINED). */
static uint64_t type_bytes(int64_t count, MPI_Datatype t) {
    if (count <= 0 || t == NULL || t == MPI_DATATYPE_NULL)
        return 0;
    MPI_Count sz = 0;
    if (PMPI_Type_size_x(t, &sz) != MPI_SUCCESS || sz < 0 || sz == MPI_UNDEFINED)
        return 0;
    return (uint64_t)count * (uint64_t)sz;
}

/* Bytes a send or an RMA operation moves: none to MPI_PROC_NULL, where the
 * call is a no-op (recorded, never matched). */
static uint64_t peer_bytes(const xsprof_mpi_call *c, int count, MPI_Datatype t) {
    return c->peer == MPI_PROC_NULL ? 0 : type_bytes(count, t);
}

static int64_t sum_counts(const int *counts, int n) {
    int64_t s = 0;
    for (int i = 0; counts && i < n; i++)
        s += counts[i] > 0 ? counts[i] : 0;
    return s;
}

static uint64_t sum_typed(const int *counts, const MPI_Datatype *types, int n) {
    uint64_t s = 0;
    for (int i = 0; counts && types && i < n; i++)
        s += type_bytes(counts[i], types[i]);
    return s;
}

/* Bytes a receive got; MPI_Get_count's int says MPI_UNDEFINED past 2 GiB. */
static uint64_t status_bytes(const MPI_Status *st) {
    MPI_Count n = 0;
    if (!st || PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
        return 0;
    return (uint64_t)n;
}

/* MPI_ERR_TRUNCATE: a receive's message was longer than its buffer. The
 * call failed, but the message is matched and consumed, and the status
 * names it: it is a receive like any other. */
static int is_truncate(int rc) {
    int cls = MPI_SUCCESS;
    return rc != MPI_SUCCESS && PMPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE;
}

/* The neighbourhood of a process topology, as the neighbourhood
 * collectives see it: in and out degree, and on a Cartesian grid which of
 * its 2 x ndims neighbours exist (at a non-periodic border a neighbour is
 * MPI_PROC_NULL: its block stays in the buffer and moves nowhere). */
typedef struct nb_view {
    int in, out;
    int nd;       /* Cartesian dimensions, 0 for another topology */
    MPI_Comm comm;
} nb_view;

static nb_view neighbors_of(MPI_Comm comm) {
    nb_view v = {0, 0, 0, comm};
    int kind = MPI_UNDEFINED, me = 0;
    PMPI_Topo_test(comm, &kind);
    PMPI_Comm_rank(comm, &me);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &v.nd);
        v.in = v.out = 2 * v.nd;
    } else if (kind == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, me, &v.in);
        v.out = v.in;
    } else if (kind == MPI_DIST_GRAPH) {
        int w = 0;
        PMPI_Dist_graph_neighbors_count(comm, &v.in, &v.out, &w);
    }
    return v;
}

/* Does neighbour k exist? Cartesian order: per dimension the one in the
 * negative direction, then the positive one (MPI_Cart_shift by 1); the
 * same list for sources and destinations. */
static int nb_real(const nb_view *v, int k) {
    if (!v->nd)
        return 1;
    int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
    PMPI_Cart_shift(v->comm, k / 2, 1, &src, &dst);
    return (k % 2 ? dst : src) != MPI_PROC_NULL;
}

/* Bytes of the blocks of the n neighbours that exist: one count and type
 * for all (counts NULL), or per neighbour (types too, for the w forms). */
static uint64_t nb_bytes(const nb_view *v, int n, int count, MPI_Datatype t, const int *counts,
                         const MPI_Datatype *types) {
    uint64_t s = 0;
    for (int k = 0; k < n; k++) {
        if (!nb_real(v, k))
            continue;
        if (!counts)
            s += type_bytes(count, t);
        else if (types)
            s += type_bytes(counts[k], types[k]);
        else
            s += type_bytes(counts[k], t);
    }
    return s;
}

/* Packed (core/record_pack.h): a third of the bytes of the fixed record,
 * and on a full node the journal's bytes are the rank's time. */
static void emit(const xsprof_rec_mpi *r) {
    if (atomic_load_explicit(&xsprof_mpi_g.paused, memory_order_relaxed))
        return;
    unsigned char pk[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
    xsprof_buf_append(pk, xsprof_rec_mpi_pack(r, pk), 0);
}

uint32_t xsprof_mpi_callsite(const void *site) {
    uint64_t pcs[XSPROF_STACK_MAX];
    uint32_t n = 1, depth = (uint32_t)xsprof_mpi_g.callsite_depth;
    pcs[0] = (uint64_t)(uintptr_t)site;
    if (depth > 1) {
        /* The frames inside xsprof (this function, post, the wrapper, a
         * Fortran binding) come first: start at `site`. backtrace() unwinds
         * with the CFI, so callers are right without frame pointers. */
        void *bt[XSPROF_STACK_MAX + 8];
        int guard = xsprof_guard_enter(); /* its first call loads libgcc_s: not the program's memory */
        int got = backtrace(bt, (int)depth + 8);
        if (guard)
            xsprof_guard_leave();
        for (int i = 0; i < got; i++)
            if (bt[i] == site) {
                for (n = 0; n < depth && i + (int)n < got; n++)
                    pcs[n] = (uint64_t)(uintptr_t)bt[i + (int)n];
                break;
            }
    }
    return xsprof_callstack_intern(pcs, n);
}

int xsprof_mpi_callsite_depth_parse(const char *spec) {
    if (!spec || !*spec)
        return 1;
    char *end = NULL;
    long v = strtol(spec, &end, 10);
    if (*end || v < 1 || v > XSPROF_STACK_MAX) {
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_CALLSITE_DEPTH=%s is not a number of frames from 1 to %d; using 1", spec,
                   XSPROF_STACK_MAX);
        return 1;
    }
    return (int)v;
}

static void rec_init(xsprof_rec_mpi *r, unsigned op, uint32_t callsite, int64_t t0, int64_t t1) {
    memset(r, 0, sizeof *r);
    r->callsite = callsite;
    r->h.type = XSPROF_REC_MPI;
    r->h.size = sizeof *r;
    r->op = xsprof_mpi_op_name(op);
    r->t_begin = t0;
    r->t_end = t1;
    r->comm = XSPROF_COMM_NONE;
    r->peer = r->tag = r->root = XSPROF_MPI_NONE;
}

void xsprof_mpi_record_plain(unsigned op, const void *site, int64_t t0, int64_t t1) {
    xsprof_rec_mpi r;
    rec_init(&r, op, xsprof_mpi_callsite(site), t0, t1);
    emit(&r);
}

/* ---- collectives ------------------------------------------------------ */

/* Bytes a collective moves for this process and its root's world rank.
 * On an intercommunicator a rooted collective goes from one group to the
 * other: the root passes MPI_ROOT, the rest of its group MPI_PROC_NULL
 * (they take no part: no bytes, and no root they could name) and the other
 * group the root's rank in the root's group, never its own. */
static void coll_bytes(const xsprof_mpi_call *c, const xsprof_comm_entry *ce, xsprof_rec_mpi *r) {
    int me = 0, n = ce->rworld ? ce->rsize : ce->size;
    PMPI_Comm_rank(c->comm, &me);
    int rooted = (c->has & XSPROF_R_ROOT) != 0, inter = ce->rworld != NULL;
    if (rooted && inter && c->root == MPI_PROC_NULL)
        return; /* r->root stays XSPROF_MPI_NONE */
    int root = rooted && (inter ? c->root == MPI_ROOT : c->root == me);
    int inplace = c->sbuf == MPI_IN_PLACE;
    int rin = c->rbuf == MPI_IN_PLACE;
    /* inter: a root only sends (Bcast, Scatter) or only receives (Reduce, Gather) */
    int sends = !(inter && root), recvs = !inter || !root;
    uint64_t sent = 0, recv = 0;
    nb_view nb;
    switch ((enum xsprof_mpi_rule)xsprof_mpi_ops[c->op].rule) {
    case XSPROF_RULE_BCAST:
        if (root)
            sent = type_bytes(c->scount, c->stype);
        else
            recv = type_bytes(c->scount, c->stype);
        break;
    case XSPROF_RULE_REDUCE:
        sent = sends ? type_bytes(c->scount, c->stype) : 0;
        recv = root ? type_bytes(c->scount, c->stype) : 0;
        break;
    case XSPROF_RULE_ALLREDUCE:
        sent = recv = type_bytes(c->scount, c->stype);
        break;
    case XSPROF_RULE_SCAN:
        sent = recv = type_bytes(c->scount, c->stype);
        break;
    case XSPROF_RULE_EXSCAN: /* nothing comes before rank 0 (its receive buffer stays undefined) */
        sent = type_bytes(c->scount, c->stype);
        recv = me ? sent : 0;
        break;
    case XSPROF_RULE_GATHER:
        sent = !sends ? 0 : inplace ? type_bytes(c->rcount, c->rtype) : type_bytes(c->scount, c->stype);
        recv = root ? type_bytes((int64_t)c->rcount * n, c->rtype) : 0;
        break;
    case XSPROF_RULE_GATHERV:
        sent = !sends                     ? 0
               : inplace && c->rcounts ? type_bytes(c->rcounts[me], c->rtype)
                                       : type_bytes(c->scount, c->stype);
        recv = root ? type_bytes(sum_counts(c->rcounts, n), c->rtype) : 0;
        break;
    case XSPROF_RULE_SCATTER:
        sent = root ? type_bytes((int64_t)c->scount * n, c->stype) : 0;
        recv = !recvs ? 0 : rin ? type_bytes(c->scount, c->stype) : type_bytes(c->rcount, c->rtype);
        break;
    case XSPROF_RULE_SCATTERV:
        sent = root ? type_bytes(sum_counts(c->scounts, n), c->stype) : 0;
        recv = !recvs                     ? 0
               : rin && c->scounts ? type_bytes(c->scounts[me], c->stype)
                                   : type_bytes(c->rcount, c->rtype);
        break;
    case XSPROF_RULE_ALLGATHER:
        sent = inplace ? type_bytes(c->rcount, c->rtype) : type_bytes(c->scount, c->stype);
        recv = type_bytes((int64_t)c->rcount * n, c->rtype);
        break;
    case XSPROF_RULE_ALLGATHERV:
        sent = inplace && c->rcounts ? type_bytes(c->rcounts[me], c->rtype) : type_bytes(c->scount, c->stype);
        recv = type_bytes(sum_counts(c->rcounts, n), c->rtype);
        break;
    case XSPROF_RULE_ALLTOALL:
        recv = type_bytes((int64_t)c->rcount * n, c->rtype);
        sent = inplace ? recv : type_bytes((int64_t)c->scount * n, c->stype);
        break;
    case XSPROF_RULE_ALLTOALLV:
        recv = type_bytes(sum_counts(c->rcounts, n), c->rtype);
        sent = inplace ? recv : type_bytes(sum_counts(c->scounts, n), c->stype);
        break;
    case XSPROF_RULE_ALLTOALLW:
        recv = sum_typed(c->rcounts, c->rtypes, n);
        sent = inplace ? recv : sum_typed(c->scounts, c->stypes, n);
        break;
    /* Reduce_scatter: recvcounts has an entry per process of the local
     * group, whose send buffers hold their sum (intercommunicators too) */
    case XSPROF_RULE_REDSCAT:
        sent = type_bytes(sum_counts(c->rcounts, ce->size), c->stype);
        recv = c->rcounts ? type_bytes(c->rcounts[me], c->stype) : 0;
        break;
    case XSPROF_RULE_REDSCAT_BLOCK:
        sent = type_bytes((int64_t)c->rcount * ce->size, c->stype);
        recv = type_bytes(c->rcount, c->stype);
        break;
    case XSPROF_RULE_NB_ALLGATHER:
    case XSPROF_RULE_NB_ALLTOALL:
        nb = neighbors_of(c->comm);
        sent = nb_bytes(&nb, nb.out, c->scount, c->stype, NULL, NULL);
        recv = nb_bytes(&nb, nb.in, c->rcount, c->rtype, NULL, NULL);
        break;
    case XSPROF_RULE_NB_ALLGATHERV:
        nb = neighbors_of(c->comm);
        sent = nb_bytes(&nb, nb.out, c->scount, c->stype, NULL, NULL);
        recv = nb_bytes(&nb, nb.in, 0, c->rtype, c->rcounts, NULL);
        break;
    case XSPROF_RULE_NB_ALLTOALLV:
        nb = neighbors_of(c->comm);
        sent = nb_bytes(&nb, nb.out, 0, c->stype, c->scounts, NULL);
        recv = nb_bytes(&nb, nb.in, 0, c->rtype, c->rcounts, NULL);
        break;
    case XSPROF_RULE_NB_ALLTOALLW:
        nb = neighbors_of(c->comm);
        sent = c->scounts && c->stypes ? nb_bytes(&nb, nb.out, 0, NULL, c->scounts, c->stypes) : 0;
        recv = c->rcounts && c->rtypes ? nb_bytes(&nb, nb.in, 0, NULL, c->rcounts, c->rtypes) : 0;
        break;
    default:
        break;
    }
    r->bytes_sent = sent;
    r->bytes_recv = recv;
    if (rooted)
        r->root = inter && root ? xsprof_mpi_g.rank : xsprof_comm_world(ce, c->root);
}

/* ---- receive numbers ---------------------------------------------------- */

/* A receive's number, taken under its key's lock (see xsprof_seq_lock). */
static uint64_t recv_seq_next(uint32_t gid, int32_t peer, int32_t tag) {
    int lk = xsprof_seq_lock(gid, peer, tag);
    uint64_t n = xsprof_seq_next(gid, peer, tag, 1);
    xsprof_seq_unlock(lk);
    return n;
}

/* A floating receive's number, once its key is known. */
static uint64_t recv_seq_floating(uint32_t gid, int32_t peer, int32_t tag) {
    int lk = xsprof_seq_lock(gid, peer, tag);
    uint64_t n = xsprof_seq_next_floating(gid, peer, tag);
    xsprof_seq_unlock(lk);
    return n;
}

/* 0, or the number a cancelled receive leaves void (xsprof_seq_release). */
static uint64_t recv_seq_release(const xsprof_req_info *gone) {
    if (!gone->seq || !gone->comm)
        return 0;
    int lk = xsprof_seq_lock(gone->comm->gid, gone->peer, gone->tag);
    uint64_t hole = xsprof_seq_release(gone);
    xsprof_seq_unlock(lk);
    return hole;
}

/* ---- completions ------------------------------------------------------ */

/* One COMPLETION record for a request completed by the call in r_call. */
static void complete(const xsprof_rec_mpi *call, const xsprof_req_info *ri, const MPI_Status *st, unsigned op,
                     int truncated) {
    xsprof_rec_mpi r;
    rec_init(&r, op, call->callsite, call->t_end, call->t_end);
    r.kind = XSPROF_MPI_COMPLETION;
    r.coll = ri->coll;
    r.comm = ri->comm ? ri->comm->gid : XSPROF_COMM_NONE;
    r.request = ri->id;
    r.root = ri->root;
    r.coll_seq = ri->coll_seq;
    r.flags = ri->flags;
    int cancelled = (ri->flags & XSPROF_MPI_F_CANCELLED) != 0; /* seen at MPI_Cancel */
    if (!cancelled && st && st != MPI_STATUS_IGNORE)
        PMPI_Test_cancelled(st, &cancelled);
    if (cancelled)
        r.flags |= XSPROF_MPI_F_CANCELLED;
    if (ri->is_recv) {
        r.flags |= XSPROF_MPI_F_RECV;
        r.peer = ri->peer;
        r.tag = ri->tag;
        r.seq = ri->seq;
        if (cancelled) /* no number, or the one it leaves void */
            r.seq = ri->seq ? recv_seq_release(ri) : ri->hole;
        if (st && st != MPI_STATUS_IGNORE && !cancelled) {
            if (st->MPI_SOURCE != MPI_PROC_NULL && ri->comm) {
                r.peer = xsprof_comm_world(ri->comm, st->MPI_SOURCE);
                r.tag = st->MPI_TAG;
                r.bytes_recv = status_bytes(st);
                if (truncated)
                    r.flags |= XSPROF_MPI_F_TRUNCATED;
                /* wildcard receives get their number when the match is known
                 * (a Sendrecv's receive, no request, was posted just now) */
                if (!r.seq)
                    r.seq = ri->id ? recv_seq_floating(r.comm, r.peer, r.tag) : recv_seq_next(r.comm, r.peer, r.tag);
            }
        }
    } else {
        r.peer = ri->peer;
        r.tag = ri->tag;
        r.seq = ri->seq;
        r.bytes_sent = ri->bytes;
        if (ri->kind == XSPROF_MPI_ICOLL || ri->kind == XSPROF_MPI_IO || ri->kind == XSPROF_MPI_RMA)
            r.bytes_sent = 0;
    }
    if (ri->newcomm && !cancelled && *ri->newcomm != MPI_COMM_NULL)
        xsprof_comm_created(*ri->newcomm, ri->comm, ri->created, ri->op, 0);
    emit(&r);
}

/* dry: only count (the call record, which carries the count, goes first). */
static void completed_one(xsprof_mpi_call *c, const xsprof_rec_mpi *call, MPI_Request snap, const MPI_Status *st,
                          int truncated, uint32_t *count, int dry) {
    if (snap == MPI_REQUEST_NULL)
        return;
    (*count)++;
    xsprof_req_info ri;
    if (!dry && xsprof_req_take(snap, &ri, 0, (uint64_t)(uintptr_t)c))
        complete(call, &ri, st, c->op, truncated);
}

/* A request of a multiple completion that failed with MPI_ERR_IN_STATUS
 * completed when its status says so, or that its message was truncated. */
static int status_done(const MPI_Status *st, int ok, int *truncated) {
    *truncated = !ok && st && is_truncate(st->MPI_ERROR);
    return !st || ok || st->MPI_ERROR == MPI_SUCCESS || *truncated;
}

static uint32_t wait_pass(xsprof_mpi_call *c, int rc, const xsprof_rec_mpi *call, int dry) {
    enum xsprof_mpi_rule rule = (enum xsprof_mpi_rule)xsprof_mpi_ops[c->op].rule;
    const MPI_Status *sts = c->statuses == MPI_STATUSES_IGNORE ? NULL : c->statuses;
    uint32_t count = 0;
    int ok = rc == MPI_SUCCESS;
    int all_ok = ok || rc == MPI_ERR_IN_STATUS;
    int trunc = is_truncate(rc); /* one request, completed with its message truncated */
    switch (rule) {
    case XSPROF_RULE_WAIT:
        if (ok || trunc)
            completed_one(c, call, c->snap[0], c->status, trunc, &count, dry);
        break;
    case XSPROF_RULE_TEST:
        if ((ok || trunc) && c->flag && *c->flag)
            completed_one(c, call, c->snap[0], c->status, trunc, &count, dry);
        break;
    case XSPROF_RULE_WAITALL:
    case XSPROF_RULE_TESTALL:
        if (all_ok && (rule == XSPROF_RULE_WAITALL || (c->flag && *c->flag)))
            for (int i = 0; i < c->nreq; i++) {
                int t = 0;
                if (status_done(sts ? &sts[i] : NULL, ok, &t))
                    completed_one(c, call, c->snap[i], sts ? &sts[i] : NULL, t, &count, dry);
            }
        break;
    case XSPROF_RULE_WAITANY:
    case XSPROF_RULE_TESTANY:
        if ((ok || trunc) && c->index && *c->index != MPI_UNDEFINED && *c->index >= 0 && *c->index < c->nreq &&
            (rule == XSPROF_RULE_WAITANY || (c->flag && *c->flag)))
            completed_one(c, call, c->snap[*c->index], c->status, trunc, &count, dry);
        break;
    case XSPROF_RULE_WAITSOME:
    case XSPROF_RULE_TESTSOME:
        if (all_ok && c->outcount && *c->outcount != MPI_UNDEFINED)
            for (int k = 0; k < *c->outcount; k++) {
                int i = c->indices[k], t = !ok && sts && is_truncate(sts[k].MPI_ERROR);
                if (i >= 0 && i < c->nreq) /* listed: completed, with or without an error */
                    completed_one(c, call, c->snap[i], sts ? &sts[k] : NULL, t, &count, dry);
            }
        break;
    default:
        break;
    }
    return count;
}

/* The call record first (with the number of completed requests), then one
 * COMPLETION per request, all at the call's end time. */
static void post_wait(xsprof_mpi_call *c, int rc, xsprof_rec_mpi *r) {
    enum xsprof_mpi_rule rule = (enum xsprof_mpi_rule)xsprof_mpi_ops[c->op].rule;
    r->count = wait_pass(c, rc, r, 1);
    r->kind = r->count || rule == XSPROF_RULE_WAIT || rule == XSPROF_RULE_WAITALL ? XSPROF_MPI_WAIT : XSPROF_MPI_OTHER;
    emit(r);
    wait_pass(c, rc, r, 0);
    /* requests that did not complete are released for a later call */
    for (int i = 0; i < c->nreq; i++)
        if (c->snap[i] != MPI_REQUEST_NULL)
            xsprof_req_claim(c->snap[i], (uint64_t)(uintptr_t)c, 0);
}

/* ---- pre / post --------------------------------------------------------- */

void xsprof_mpi_pre(xsprof_mpi_call *c) {
    c->saved_errno = errno;
    switch (xsprof_mpi_ops[c->op].wkind) {
    case XSPROF_W_WAIT: {
        /* Completed requests become MPI_REQUEST_NULL: remember them first. */
        MPI_Request *src = c->reqs;
        if (!src) {
            src = c->req;
            c->nreq = 1;
        }
        c->snap = c->s->req_snap;
        if (c->nreq > XSPROF_MPI_INLINE && (c->snap_heap = malloc((size_t)c->nreq * sizeof(MPI_Request))))
            c->snap = c->snap_heap;
        if (c->nreq > XSPROF_MPI_INLINE && !c->snap_heap)
            c->nreq = XSPROF_MPI_INLINE; /* track what fits, the call itself is unaffected */
        /* claim the entries now: once MPI frees a request another thread
         * may get the same handle value for a new one */
        for (int i = 0; i < c->nreq; i++) {
            c->snap[i] = src[i];
            /* an inactive persistent request completes nothing: MPI
             * returns an empty status for it, as for MPI_REQUEST_NULL */
            if (xsprof_req_claim(src[i], 0, (uint64_t)(uintptr_t)c) < 0)
                c->snap[i] = MPI_REQUEST_NULL;
        }
        break;
    }
    case XSPROF_W_REQFREE:
        c->s->req_snap[0] = *c->req;
        break;
    case XSPROF_W_IRECV:
        /* Receives on one key are numbered in the order MPI has them posted
         * (the order they match in, which a cancel's renumbering relies on):
         * with threads, hold the key from before the post until it is
         * numbered and tracked. */
        if (xsprof_mpi_g.thread_level == MPI_THREAD_MULTIPLE && c->src >= 0 && c->tag != MPI_ANY_TAG) {
            xsprof_comm_entry *ce = xsprof_comm_find(c->comm); /* asks MPI nothing: the handle may be bad */
            if (ce)
                c->seq_lock = xsprof_seq_lock(ce->gid, xsprof_comm_world(ce, c->src), c->tag);
        }
        break;
    case XSPROF_W_CANCEL: {
        c->s->req_snap[0] = *c->req;
        /* a numbered receive's key stays locked until post has given its
         * number back, if the cancel works */
        xsprof_req_info ri;
        if (xsprof_req_update(*c->req, NULL, NULL, &ri) && ri.is_recv && ri.active && ri.seq && ri.comm)
            c->seq_lock = xsprof_seq_lock(ri.comm->gid, ri.peer, ri.tag);
        break;
    }
    case XSPROF_W_MRECV:
    case XSPROF_W_IMRECV:
        c->s->req_snap[0] = (MPI_Request)(void *)*c->msg;
        break;
    case XSPROF_W_COMMFREE:
        /* the record names the communicator the call frees: look it up now */
        c->freed = xsprof_comm_find(*c->commp);
        c->comm_key = xsprof_comm_key(*c->commp);
        break;
    case XSPROF_W_WINFREE:
        c->freed = xsprof_win_lookup(*c->winp);
        c->comm_key = (uintptr_t)*c->winp;
        break;
    default:
        break;
    }
    c->t_begin = xsprof_clock_read();
    errno = c->saved_errno;
}

typedef struct cancel_probe {
    MPI_Request req;
    xsprof_req_info gone; /* the receive's entry as it was, when it is cancelled */
    int cancelled;
} cancel_probe;

/* Whether the cancel worked shows in the completion status only (MPI_Test_cancelled),
 * and the receive may already be complete: look without completing it. Runs
 * under the entry's lock, so no Wait of another thread frees the request
 * meanwhile (its claim waits for the lock). */
static void probe_cancelled(xsprof_req_info *ri, void *arg) {
    cancel_probe *p = arg;
    if (!ri->is_recv || !ri->active || !ri->seq)
        return;
    int done = 0;
    MPI_Status st;
    if (PMPI_Request_get_status(p->req, &done, &st) != MPI_SUCCESS || !done ||
        PMPI_Test_cancelled(&st, &p->cancelled) != MPI_SUCCESS || !p->cancelled)
        return;
    p->gone = *ri;
    ri->seq = 0;
    /* its completion says so even without a status (MPI_Request_free) */
    ri->flags |= XSPROF_MPI_F_CANCELLED;
}

/* A cancelled receive's void number, for its completion. */
static void keep_hole(xsprof_req_info *ri, void *arg) { ri->hole = *(const uint64_t *)arg; }

static void mark_started(xsprof_req_info *ri, void *arg) {
    (void)arg;
    ri->active = 1; /* the id stays the one of the *_init call */
    ri->seq = 0;
    ri->hole = 0;
    ri->flags &= (uint16_t)~XSPROF_MPI_F_CANCELLED;
    if (ri->peer == XSPROF_MPI_NONE || !ri->comm)
        return;
    if (ri->is_send)
        ri->seq = xsprof_seq_next(ri->comm->gid, ri->peer, ri->tag, 0);
    else if (ri->is_recv && !(ri->flags & XSPROF_MPI_F_WILDCARD_TAG))
        ri->seq = xsprof_seq_next(ri->comm->gid, ri->peer, ri->tag, 1);
}

/* MPI_Start, and MPI_Startall as the MPI_Start of each of its requests: one
 * row per request, the post of its send or receive with the number this
 * start gave it (the merge keys a send at its post). The call's time is
 * shared among the rows, so it counts once. */
static void post_start(xsprof_mpi_call *c, const xsprof_rec_mpi *call) {
    int all = xsprof_mpi_ops[c->op].wkind == XSPROF_W_STARTALL;
    MPI_Request *reqs = all ? c->reqs : c->req;
    int n = all ? c->nreq : 1;
    if (n <= 0 || !reqs) {
        emit(call);
        return;
    }
    int64_t span = call->t_end - call->t_begin;
    for (int i = 0; i < n; i++) {
        xsprof_rec_mpi r = *call;
        r.t_begin = call->t_begin + span * i / n;
        r.t_end = call->t_begin + span * (i + 1) / n;
        r.flags |= XSPROF_MPI_F_PERSISTENT;
        xsprof_req_info ri;
        int lk = 0;
        if (xsprof_req_update(reqs[i], NULL, NULL, &ri) && ri.is_recv && ri.comm &&
            !(ri.flags & XSPROF_MPI_F_WILDCARD_TAG))
            lk = xsprof_seq_lock(ri.comm->gid, ri.peer, ri.tag);
        int tracked = xsprof_req_update(reqs[i], mark_started, NULL, &ri);
        xsprof_seq_unlock(lk);
        if (tracked) {
            r.kind = ri.is_send ? XSPROF_MPI_ISEND : ri.is_recv ? XSPROF_MPI_IRECV : XSPROF_MPI_OTHER;
            r.comm = ri.comm ? ri.comm->gid : XSPROF_COMM_NONE;
            r.peer = ri.peer;
            r.tag = ri.tag;
            r.seq = ri.seq;
            r.request = ri.id;
            r.bytes_sent = ri.bytes;
        }
        emit(&r);
    }
}

/* MPI_Mrecv/MPI_Imrecv: the message's entry, left by the probe that
 * matched (and numbered) it: its communicator (NULL if unknown) into r,
 * its number into *seq. */
static xsprof_comm_entry *probed_take(xsprof_mpi_call *c, xsprof_rec_mpi *r, uint64_t *seq) {
    xsprof_req_info mi = {0};
    xsprof_comm_entry *ce = xsprof_req_take(c->s->req_snap[0], &mi, 1, 0) ? mi.comm : NULL;
    r->comm = ce ? ce->gid : XSPROF_COMM_NONE;
    *seq = mi.seq;
    return ce;
}

/* Sets the peer/tag/seq fields of a post and of its request entry. */
static void track_post(xsprof_mpi_call *c, xsprof_rec_mpi *r, xsprof_comm_entry *ce, int kind, int persistent) {
    xsprof_req_info ri = {.id = xsprof_req_new_id(), .comm = ce, .op = c->op, .root = r->root, .kind = (uint8_t)kind,
                          .coll = r->coll, .coll_seq = r->coll_seq, .persistent = (uint8_t)persistent,
                          .active = (uint8_t)!persistent};
    ri.peer = r->peer;
    ri.tag = r->tag;
    ri.seq = r->seq;
    ri.bytes = r->bytes_sent;
    ri.is_send = kind == XSPROF_MPI_ISEND;
    ri.is_recv = kind == XSPROF_MPI_IRECV;
    ri.flags = r->flags; /* wildcards travel to the completion */
    if (persistent)
        ri.flags |= XSPROF_MPI_F_PERSISTENT;
    r->request = ri.id;
    r->flags |= ri.flags;
    if (c->req && *c->req != MPI_REQUEST_NULL)
        xsprof_req_insert(*c->req, &ri);
}

void xsprof_mpi_post(xsprof_mpi_call *c, int rc) {
    if (xsprof_mpi_g.test_send_stall_ns && xsprof_mpi_ops[c->op].wkind == XSPROF_W_SEND) {
        /* test hook: every MPI_Send lasts this much longer, as one whose
         * rank was descheduled inside the call does (issue 38's eager sends) */
        int64_t until = c->t_begin + xsprof_mpi_g.test_send_stall_ns;
        while (xsprof_clock_read() < until)
            nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    int64_t t_end = xsprof_clock_read();
    int e = errno;
    xsprof_guard_leave();
    const xsprof_mpi_op *o = &xsprof_mpi_ops[c->op];
    xsprof_rec_mpi r;
    rec_init(&r, c->op, xsprof_mpi_callsite(c->site), c->t_begin, t_end);
    r.coll = o->coll;
    int ok = rc == MPI_SUCCESS;
    /* a receive that truncated its message still received it (is_truncate) */
    int trunc = !ok && (o->wkind == XSPROF_W_RECV || o->wkind == XSPROF_W_MRECV || o->wkind == XSPROF_W_SENDRECV ||
                        o->wkind == XSPROF_W_WAIT) && is_truncate(rc);
    /* A failed call may hold invalid handles: record that it happened, ask
     * MPI nothing about its arguments (MPI_ERR_IN_STATUS: see the WAIT rules). */
    if (!ok && !trunc && !(o->wkind == XSPROF_W_WAIT && rc == MPI_ERR_IN_STATUS)) {
        if (xsprof_mpi_group_on(c->op))
            emit(&r);
        goto out;
    }
    xsprof_comm_entry *ce = c->freed;
    if (c->has & XSPROF_R_COMM)
        ce = xsprof_comm_lookup(c->comm);
    else if (c->has & XSPROF_R_WIN)
        ce = xsprof_win_lookup(c->win);
    if (ce)
        r.comm = ce->gid;
    int persistent = 0;
    switch ((enum xsprof_mpi_wkind)o->wkind) {
    case XSPROF_W_SEND:
    case XSPROF_W_SSEND:
    case XSPROF_W_ISEND:
    case XSPROF_W_PSEND:
        persistent = o->wkind == XSPROF_W_PSEND;
        r.kind = o->wkind == XSPROF_W_SSEND ? XSPROF_MPI_SSEND : o->wkind == XSPROF_W_SEND ? XSPROF_MPI_SEND
                 : persistent ? XSPROF_MPI_OTHER : XSPROF_MPI_ISEND;
        r.peer = xsprof_comm_world(ce, c->peer);
        r.tag = c->tag;
        r.bytes_sent = peer_bytes(c, c->scount, c->stype);
        if (ok && !persistent && r.peer != XSPROF_MPI_NONE)
            r.seq = xsprof_seq_next(r.comm, r.peer, r.tag, 0);
        if (ok && o->wkind != XSPROF_W_SEND && o->wkind != XSPROF_W_SSEND)
            track_post(c, &r, ce, XSPROF_MPI_ISEND, persistent);
        break;
    case XSPROF_W_RECV:
    case XSPROF_W_MRECV:
        r.kind = XSPROF_MPI_RECV;
        if (o->wkind == XSPROF_W_MRECV) {
            ce = probed_take(c, &r, &r.seq);
        } else {
            if (c->src == MPI_ANY_SOURCE)
                r.flags |= XSPROF_MPI_F_WILDCARD_SRC;
            if (c->tag == MPI_ANY_TAG)
                r.flags |= XSPROF_MPI_F_WILDCARD_TAG;
        }
        if ((ok || trunc) && ce && c->status->MPI_SOURCE != MPI_PROC_NULL) {
            r.peer = xsprof_comm_world(ce, c->status->MPI_SOURCE);
            r.tag = c->status->MPI_TAG;
            r.bytes_recv = status_bytes(c->status);
            if (trunc)
                r.flags |= XSPROF_MPI_F_TRUNCATED;
            if (!r.seq)
                r.seq = recv_seq_next(r.comm, r.peer, r.tag);
        }
        break;
    case XSPROF_W_IRECV:
    case XSPROF_W_PRECV:
    case XSPROF_W_IMRECV: {
        persistent = o->wkind == XSPROF_W_PRECV;
        r.kind = persistent ? XSPROF_MPI_OTHER : XSPROF_MPI_IRECV;
        int src = c->src, tag = c->tag;
        uint64_t mseq = 0;
        if (o->wkind == XSPROF_W_IMRECV) {
            ce = probed_take(c, &r, &mseq);
            src = MPI_ANY_SOURCE; /* known at completion */
            tag = MPI_ANY_TAG;
        }
        if (src == MPI_ANY_SOURCE)
            r.flags |= XSPROF_MPI_F_WILDCARD_SRC;
        if (tag == MPI_ANY_TAG)
            r.flags |= XSPROF_MPI_F_WILDCARD_TAG;
        r.peer = src == MPI_ANY_SOURCE || !ce ? XSPROF_MPI_NONE : xsprof_comm_world(ce, src);
        r.tag = tag == MPI_ANY_TAG ? XSPROF_MPI_NONE : tag;
        /* Receives of one (source, tag) match in posting order: number them
         * now, and track the entry before a cancel can renumber the key. */
        int lk = 0;
        if (ok && !persistent && src != MPI_ANY_SOURCE && tag != MPI_ANY_TAG && r.peer != XSPROF_MPI_NONE) {
            if (!c->seq_lock)
                lk = xsprof_seq_lock(r.comm, r.peer, r.tag);
            r.seq = xsprof_seq_next(r.comm, r.peer, r.tag, 1);
        }
        if (mseq)
            r.seq = mseq;
        /* from MPI_PROC_NULL too: the request is real, its completion links to this post */
        if (ok)
            track_post(c, &r, ce, XSPROF_MPI_IRECV, persistent);
        xsprof_seq_unlock(lk);
        break;
    }
    case XSPROF_W_SENDRECV: {
        r.kind = XSPROF_MPI_SENDRECV;
        r.peer = xsprof_comm_world(ce, c->peer);
        r.tag = c->tag;
        r.bytes_sent = peer_bytes(c, c->scount, c->stype);
        if ((ok || trunc) && r.peer != XSPROF_MPI_NONE)
            r.seq = xsprof_seq_next(r.comm, r.peer, r.tag, 0);
        emit(&r);
        if ((ok || trunc) && c->status->MPI_SOURCE != MPI_PROC_NULL) {
            xsprof_req_info ri = {.comm = ce, .is_recv = 1, .peer = XSPROF_MPI_NONE, .tag = XSPROF_MPI_NONE,
                                  .root = XSPROF_MPI_NONE};
            complete(&r, &ri, c->status, c->op, trunc);
        }
        goto out;
    }
    case XSPROF_W_COLL:
    case XSPROF_W_ICOLL:
        r.kind = o->wkind == XSPROF_W_COLL ? XSPROF_MPI_COLL : XSPROF_MPI_ICOLL;
        if (ce) {
            r.coll_seq = atomic_fetch_add_explicit(&ce->coll_seq, 1, memory_order_relaxed) + 1;
            coll_bytes(c, ce, &r);
        }
        if (ok && o->wkind == XSPROF_W_ICOLL)
            track_post(c, &r, ce, XSPROF_MPI_ICOLL, 0);
        if (ok && o->wkind == XSPROF_W_COLL && ce && ce->gid == 0) {
            /* all ranks are in this collective: a periodic clock sample may be due */
            emit(&r);
            xsprof_clock_sync_maybe(r.coll_seq);
            goto out;
        }
        break;
    case XSPROF_W_RMA:
    case XSPROF_W_IO:
        r.kind = o->wkind == XSPROF_W_RMA ? XSPROF_MPI_RMA : XSPROF_MPI_IO;
        if ((c->has & XSPROF_R_PEER) && ce)
            r.peer = xsprof_comm_world(ce, c->peer);
        if (o->rule == XSPROF_RULE_SINGLE) {
            r.bytes_sent = peer_bytes(c, 1, c->stype);
            r.bytes_recv = r.bytes_sent;
        } else {
            r.bytes_sent = (c->has & XSPROF_R_STYPE) ? peer_bytes(c, c->scount, c->stype) : 0;
            r.bytes_recv = (c->has & XSPROF_R_RTYPE) ? peer_bytes(c, c->rcount, c->rtype) : 0;
        }
        if (ok && (c->has & XSPROF_R_REQ))
            track_post(c, &r, ce, r.kind, 0);
        break;
    case XSPROF_W_START:
    case XSPROF_W_STARTALL:
        post_start(c, &r);
        goto out;
    case XSPROF_W_WAIT:
        post_wait(c, rc, &r);
        goto out;
    case XSPROF_W_REQFREE: {
        xsprof_req_info ri;
        if (ok && xsprof_req_take(c->s->req_snap[0], &ri, 1, 0) && ri.active) {
            ri.flags |= XSPROF_MPI_F_FREED;
            complete(&r, &ri, NULL, c->op, 0);
        }
        break;
    }
    case XSPROF_W_CANCEL: {
        /* A receive cancelled already gives its number back now, before the
         * program posts the next receive on its key; else its completion
         * will (complete()). */
        cancel_probe p = {.req = c->s->req_snap[0]};
        if (ok && xsprof_req_update(p.req, probe_cancelled, &p, NULL) && p.cancelled &&
            (p.gone.hole = xsprof_seq_release(&p.gone)))
            xsprof_req_update(p.req, keep_hole, &p.gone.hole, NULL);
        break;
    }
    case XSPROF_W_PROBE:
        if (ok && (!(c->has & XSPROF_R_FLAG) || *c->flag) && ce && c->status->MPI_SOURCE != MPI_PROC_NULL) {
            r.peer = xsprof_comm_world(ce, c->status->MPI_SOURCE);
            r.tag = c->status->MPI_TAG;
            if (c->msg && *c->msg != MPI_MESSAGE_NULL) {
                /* Mrecv/Imrecv have no communicator argument: remember it.
                 * The probe is the match (the message leaves MPI's queue):
                 * it takes the message's number now, before a receive the
                 * program posts later on the same key takes the next one. */
                xsprof_req_info mi = {.comm = ce, .seq = recv_seq_next(r.comm, r.peer, r.tag)};
                xsprof_req_insert((MPI_Request)(void *)*c->msg, &mi);
            }
        }
        break;
    case XSPROF_W_COMMNEW: {
        /* Calls collective over the parent share its creation counter (a
         * member that gets MPI_COMM_NULL counts too); the others derive the
         * id from the member list (create_group, intercomm_create). */
        int members = o->rule == XSPROF_RULE_MEMBERS;
        int64_t idx = -1;
        if (ok && ce && !members)
            idx = atomic_fetch_add_explicit(&ce->created, 1, memory_order_relaxed);
        if (ok && ce && *c->newcomm != MPI_COMM_NULL) {
            int inter = 0;
            PMPI_Comm_test_inter(*c->newcomm, &inter);
            /* the two groups of an intercommunicator have different parents */
            xsprof_comm_created(*c->newcomm, members && inter ? NULL : ce, idx, c->op, members ? c->tag : 0);
        }
        break;
    }
    case XSPROF_W_ICOMMNEW:
        if (ok && ce) {
            xsprof_req_info ri = {.id = xsprof_req_new_id(), .comm = ce, .op = c->op, .kind = XSPROF_MPI_OTHER,
                                  .peer = XSPROF_MPI_NONE, .tag = XSPROF_MPI_NONE, .root = XSPROF_MPI_NONE,
                                  .newcomm = c->newcomm, .active = 1};
            ri.created = atomic_fetch_add_explicit(&ce->created, 1, memory_order_relaxed);
            r.request = ri.id;
            xsprof_req_insert(*c->req, &ri);
        }
        break;
    case XSPROF_W_COMMFREE:
        if (ok)
            xsprof_comm_freed(c->comm_key);
        break;
    case XSPROF_W_WINNEW:
        if (ok)
            xsprof_win_created(*c->newwin, c->comm);
        break;
    case XSPROF_W_WINFREE:
        if (ok)
            xsprof_comm_freed(c->comm_key);
        break;
    default:
        break;
    }
    if (xsprof_mpi_group_on(c->op))
        emit(&r);
out:
    xsprof_seq_unlock(c->seq_lock);
    free(c->own_statuses);
    free(c->snap_heap);
    errno = e;
}
