/* merge/match/stream_match.c — pass 1 of the streaming mode over the MPI tables
 * of all ranks (see internal.h).
 *
 * Each rank's MPI rows go through a reorder heap into begin-time order
 * (calls before completions at the same time), the order in which
 * merge/match pairs requests and finds the call holding each completion;
 * a k-way merge over the ranks then processes all rows in one time order,
 * so a message's send and receive meet within the time the message was in
 * flight and the table of unmatched ends stays small. Keys are the same as
 * merge/match's (comm, world src, dst, tag, seq), so the pairs are too.
 * The receiving rank's flow ends go to a spill file, the sending rank's to
 * a bit per row; message ids (index in (src, send row) order) come from
 * those bits once every rank is done. Collectives are collected to count
 * clock violations: a violation (or --min-latency) sends the merge back to
 * start with the logical clock (clc.c), for which this pass first runs in
 * collect mode: no checks, nothing for the writers, the constraints
 * written per rank instead. With merged.h5 asked for, matched messages and
 * Isend completions are spilled and collectives kept for it (h5src.c);
 * with trace.otf2, rows are marked for it (xsm_srank.mark). */
#include "merge/stream/internal.h"
#include "merge/match/match.h"
#include "merge/util.h"
#include "merge/analyze/analyze.h"
#include "core/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- unmatched message ends ------------------------------------------- */

typedef struct xsm_pkey {
    uint32_t comm;
    int32_t src, dst, tag;
    uint64_t seq;
} xsm_pkey;

typedef struct xsm_pend_end {
    xsm_pkey k;
    int recv;          /* 1: a receive waiting for its send */
    uint32_t row;      /* send row, or the receive's key row */
    uint32_t call_row; /* receive: the call that shows it */
    int64_t t;         /* send: begin; receive: completion */
    int64_t call_end;  /* receive: end of that call */
    uint32_t next;     /* chain, UINT32_MAX = end */
    uint8_t kept;      /* the row is inside --from/--to (xsm_stream_keep) */
    uint8_t call_kept; /* receive: its call is */
    /* for merged.h5: send: its end and bytes; receive: its Irecv row or -1 */
    int64_t send_end;
    uint64_t bytes;
    int64_t post;
    /* for the reports' Late Receiver: send: its kind and name; receive:
     * when it was posted (its Irecv's, call's or own begin) and that row */
    uint8_t skind;
    uint32_t op;
    int64_t post_t;
    uint32_t post_row;
    int64_t call_begin; /* receive: begin of its call (Wrong Order) */
    uint32_t thread;    /* receive: the thread that received it (Wrong Order) */
    /* trace.otf2: receive: its request, its Irecv row inside --from/--to */
    uint64_t request;
    uint8_t post_kept;
} xsm_pend_end;

typedef struct xsm_ptab {
    xsm_pend_end *e;
    size_t n, cap;
    uint32_t *head; /* buckets */
    size_t nb;
    uint32_t free_list;
} xsm_ptab;

static uint64_t xsm_pkey_hash(const xsm_pkey *k) { return xsm_match_key_hash(k->comm, k->src, k->dst, k->tag, k->seq); }

static int xsm_pkey_eq(const xsm_pkey *a, const xsm_pkey *b)
{
    return a->comm == b->comm && a->src == b->src && a->dst == b->dst && a->tag == b->tag && a->seq == b->seq;
}

static int xsm_ptab_grow(xsm_ptab *t)
{
    size_t nb = t->nb ? 2 * t->nb : 1024;
    uint32_t *head = malloc(nb * sizeof *head);
    if (!head)
        return -1;
    for (size_t i = 0; i < nb; i++)
        head[i] = UINT32_MAX;
    /* rehash the live entries (free ones are marked by recv == -1) */
    for (size_t i = 0; i < t->n; i++) {
        if (t->e[i].recv < 0)
            continue;
        size_t b = xsm_pkey_hash(&t->e[i].k) & (nb - 1);
        t->e[i].next = head[b];
        head[b] = (uint32_t)i;
    }
    free(t->head);
    t->head = head;
    t->nb = nb;
    return 0;
}

/* The pending end of the other side with key k, unlinked; NULL if none.
 * *dup is set when an end of the same side is already waiting. */
static int xsm_ptab_take(xsm_ptab *t, const xsm_pkey *k, int recv, xsm_pend_end *out, int *dup)
{
    *dup = 0;
    if (!t->nb)
        return 0;
    size_t b = xsm_pkey_hash(k) & (t->nb - 1);
    for (uint32_t *p = &t->head[b]; *p != UINT32_MAX; p = &t->e[*p].next) {
        xsm_pend_end *e = &t->e[*p];
        if (!xsm_pkey_eq(&e->k, k))
            continue;
        if (e->recv == recv) {
            *dup = 1;
            return 0;
        }
        uint32_t i = *p;
        *out = *e;
        *p = e->next;
        e->recv = -1;
        e->next = t->free_list;
        t->free_list = i;
        return 1;
    }
    return 0;
}

static int xsm_ptab_put(xsm_ptab *t, const xsm_pend_end *x)
{
    uint32_t i;
    if (t->free_list != UINT32_MAX) {
        i = t->free_list;
        t->free_list = t->e[i].next;
    } else {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 1024;
            if (cap >= UINT32_MAX)
                return -1;
            xsm_pend_end *e = realloc(t->e, cap * sizeof *e);
            if (!e)
                return -1;
            t->e = e;
            t->cap = cap;
        }
        i = (uint32_t)t->n++;
        t->e[i].recv = -1; /* not linked yet: the rehash must skip it */
        if (t->n > t->nb / 2 && xsm_ptab_grow(t)) {
            t->n--;
            return -1;
        }
    }
    size_t b = xsm_pkey_hash(&x->k) & (t->nb - 1);
    t->e[i] = *x;
    t->e[i].next = t->head[b];
    t->head[b] = i;
    return 0;
}

/* ---- collectives (for the violation count) ------------------------------ */

typedef struct xsm_cmember {
    int32_t rank;
    uint32_t row;
    int64_t entry, exit;
    int kind;
    int32_t root;
    int has_exit; /* 0: a nonblocking collective whose completion is not seen (yet) */
    uint32_t exit_row; /* the row whose end is the exit */
    uint32_t op;       /* for merged.h5: the row's name and end */
    int64_t row_end;
    /* the reports: the call that completed a nonblocking member (its Wait) */
    int has_call;
    uint32_t call_row, call_op;
    int64_t call_b, call_e;
    int receives; /* xsm_coll_receives */
    int sends;    /* xsm_coll_sends */
} xsm_cmember;

typedef struct xsm_cinst {
    uint32_t comm;
    uint64_t seq;
    xsm_cmember *m;
    size_t n, cap;
    size_t waiting; /* members still waiting for their completion */
    int live;
    int kept;       /* a member's row is inside --from/--to (counted) */
} xsm_cinst;

/* ---- per rank ----------------------------------------------------------- */

typedef struct xsm_thr_state {
    uint32_t tid;
    int64_t last_call, sendrecv_open; /* rows, -1 none */
    int64_t last_begin, last_end, sendrecv_begin, sendrecv_end;
    uint32_t last_comm, sendrecv_comm;
    uint32_t last_op;
} xsm_thr_state;

typedef struct xsm_req_state {
    uint64_t request; /* 0: empty slot */
    uint32_t row, comm;
    int counted, completed;
    int icoll;        /* a nonblocking collective waits for this request's completion */
    int kind;         /* of the post */
    int floating;     /* a receive numbered at its completion (numt) */
    uint32_t icomm;
    uint64_t iseq;
    int64_t it;       /* its post's begin */
    int kept;         /* its post is inside --from/--to */
} xsm_req_state;

typedef struct xsm_mrank {
    int32_t r;
    xsm_tab tab;
    uint64_t next;        /* next row to read */
    xsm_sheap proc;       /* begin-time order, rows kept */
    xsm_sheap emit;       /* the writers' order, keys only (outlier detector) */
    xsprof_io_mpi head;   /* the row processed next */
    xsm_skey head_key;
    int has_head;
    xsm_thr_state *thr;
    size_t nthr, capthr;
    xsm_req_state *req;   /* open addressing by request */
    size_t nreq, capreq;
    uint64_t open_posts;
    FILE *spill;
    FILE *cwait;          /* the reports' waits (xsm_cwait_rec), in time order */
    struct xsm_cwq *wq;   /* waits not written yet, a heap by (p, seq) */
    size_t nwq, capwq;
    uint64_t wseq;
    int64_t wlast;        /* p of the last record written */
    int64_t *numt;     /* XSM_NUMT latest posts numbered, by key hash, from the first floating post */
} xsm_mrank;

/* merge/match deals the numbers of a key with floating receives (posted
 * without a known key, numbered by the collector at completion) out again
 * in posting order, which needs every receive of the rank at hand. A
 * stream sees a receive's key when it completes and must pair it then, so
 * it only notices when that would change a number: a floating receive
 * completing after a receive of its key (or of one sharing its hash slot)
 * that was posted later got its number. The merge then goes in memory.
 * numt keeps, per slot, the latest post of a receive numbered so far. */
#define XSM_NUMT 1024

static size_t xsm_numt_slot(uint32_t comm, int32_t src, int32_t tag)
{
    return (size_t)(xsm_match_key_hash(comm, src, 0, tag, 0) % XSM_NUMT);
}

/* A receive of (comm, src, tag) posted at t was numbered (no-op before a floating post). */
static void xsm_numt_note(xsm_mrank *m, uint32_t comm, int32_t src, int32_t tag, int64_t t)
{
    if (m->numt && src >= 0) {
        int64_t *e = &m->numt[xsm_numt_slot(comm, src, tag)];
        *e = t > *e ? t : *e;
    }
}

/* A wait on its way to the waits file. */
typedef struct xsm_cwq {
    xsm_cwait_rec w;
    uint64_t seq; /* put order, for equal times */
} xsm_cwq;

/* How many waits a rank holds back to write them in time order: a Late
 * Receiver is found when its receive completes, often after the waiting
 * call's rank passed later calls and their waits; one held back this long
 * is delivered with its call, so it meets the call's other waits (one
 * point-to-point wait counts per call). */
#define XSM_CWQ_HOLD 128

/* One Isend's half of a Late Receiver, keyed by (rank, send row): what the
 * match said (has_post 1; -1: the message is cut by --from/--to) and the
 * call that completed the Isend, whichever comes first; gone once both
 * came (an Isend never matched keeps its entry). */
typedef struct xsm_isl {
    uint64_t key;      /* 0: free */
    int has_post, has_call;
    int32_t dst;
    int eager;         /* the message went eagerly (xsm_eager_send) */
    uint32_t post_row, call_row, call_op;
    int64_t post_t, cb, ce;
} xsm_isl;

typedef struct xsm_mctx {
    xsm_stream *s;
    xsm_mrank *m;         /* per rank (present ones used) */
    size_t *heap, nheap;  /* ranks by head key */
    xsm_ptab pend;
    xsm_cinst *coll;      /* open collectives, linear probing by (comm, seq) */
    size_t ncoll_live, capcoll;
    uint64_t ncolls, incomplete, violations;
    int collect_failed;   /* collect mode: a record could not be written (err set) */
    int64_t now;          /* the time of the row being processed */
    /* the reports' Late Receiver of an Isend: the receive's post (from the
     * match) meets the call that completed the Isend, in either order */
    xsm_ktab isl;         /* of xsm_isl */
    xsm_wo *wo;           /* the reports' Wrong Order (worder.c) */
    xsm_eager *eager;     /* the reports' eager sends (no Late Receiver) */
    uint64_t late_waits;  /* waits that came after XSM_CWQ_HOLD later ones of their rank */
    int done;             /* all rows processed: the collectives still open are closed */
    uint32_t *comm_ids;   /* communicators the present ranks define */
    uint32_t *comm_present; /* present ranks defining each */
    int32_t *comm_owner;  /* first present rank defining each (its member list) */
    size_t ncomm_ids;
    char *err;
    size_t errlen;
} xsm_mctx;

static int xsm_is_send(const xsprof_io_mpi *m)
{
    return (m->kind == XSPROF_MPI_SEND || m->kind == XSPROF_MPI_SSEND || m->kind == XSPROF_MPI_ISEND ||
            m->kind == XSPROF_MPI_SENDRECV) && m->peer >= 0;
}

static int xsm_is_req(const xsprof_io_mpi *m)
{
    return m->request && (m->kind == XSPROF_MPI_ISEND || m->kind == XSPROF_MPI_IRECV ||
                          m->kind == XSPROF_MPI_ICOLL || m->kind == XSPROF_MPI_COMPLETION);
}

static int xsm_present(const xsm_mctx *c, int32_t r)
{
    return r >= 0 && (size_t)r < c->s->run->nranks && c->s->r[r].present;
}

static xsm_thr_state *xsm_thr_get(xsm_mrank *m, uint32_t tid)
{
    for (size_t i = 0; i < m->nthr; i++)
        if (m->thr[i].tid == tid)
            return &m->thr[i];
    if (m->nthr == m->capthr) {
        size_t cap = m->capthr ? 2 * m->capthr : 8;
        xsm_thr_state *p = realloc(m->thr, cap * sizeof *p);
        if (!p)
            return NULL;
        m->thr = p;
        m->capthr = cap;
    }
    m->thr[m->nthr] = (xsm_thr_state){.tid = tid, .last_call = -1, .sendrecv_open = -1};
    return &m->thr[m->nthr++];
}

static xsm_req_state *xsm_req_slot(xsm_mrank *m, uint64_t request, int create)
{
    if (m->nreq * 2 >= m->capreq) {
        if (!create)
            goto find;
        size_t cap = m->capreq ? 2 * m->capreq : 64;
        xsm_req_state *p = calloc(cap, sizeof *p);
        if (!p)
            return NULL;
        for (size_t i = 0; i < m->capreq; i++) {
            if (!m->req[i].request)
                continue;
            size_t h = (m->req[i].request * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
            while (p[h].request)
                h = (h + 1) & (cap - 1);
            p[h] = m->req[i];
        }
        free(m->req);
        m->req = p;
        m->capreq = cap;
    }
find:
    if (!m->capreq)
        return NULL;
    size_t h = (request * 0x9e3779b97f4a7c15ull >> 20) & (m->capreq - 1);
    while (m->req[h].request && m->req[h].request != request)
        h = (h + 1) & (m->capreq - 1);
    if (!m->req[h].request) {
        if (!create)
            return NULL;
        m->req[h].request = request;
        m->nreq++;
    }
    return &m->req[h];
}

static size_t xsm_comm_index(const xsm_mctx *c, uint32_t comm)
{
    for (size_t i = 0; i < c->ncomm_ids; i++)
        if (c->comm_ids[i] == comm)
            return i;
    return SIZE_MAX;
}

/* Position of world rank w in the comm's member list (as merge/align's
 * scan constraint reads it), or -1. */
static int64_t xsm_comm_rank_of(const xsm_mctx *c, uint32_t comm, int32_t w)
{
    size_t k = xsm_comm_index(c, comm);
    if (k == SIZE_MAX)
        return -1;
    int64_t j = xsm_align_comm_position(&c->s->run->ranks[c->comm_owner[k]].d, comm, w);
    return j < 0 ? -1 : j;
}

static int xsm_cmember_cmp(const void *a, const void *b)
{
    const xsm_cmember *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* The root an instance's members name, as merge/match takes it: the
 * first (by rank) that names one (an intercommunicator's MPI_PROC_NULL
 * members name none). Members sorted by rank. */
static int32_t xsm_cinst_root(const xsm_cinst *ci)
{
    for (size_t i = 0; i < ci->n; i++)
        if (ci->m[i].root >= 0)
            return ci->m[i].root;
    return XSPROF_MPI_NONE;
}

/* Violations of one collective, as merge/align counts them. */
static uint64_t xsm_coll_violations(const xsm_mctx *c, xsm_cinst *ci)
{
    qsort(ci->m, ci->n, sizeof *ci->m, xsm_cmember_cmp);
    int kind = ci->m[0].kind;
    int32_t root_rank = xsm_cinst_root(ci);
    size_t root = SIZE_MAX;
    xsm_coll_point *pt = malloc(ci->n * sizeof *pt);
    if (!pt)
        return UINT64_MAX; /* cannot claim the clocks agree */
    for (size_t i = 0; i < ci->n; i++) {
        const xsm_cmember *x = &ci->m[i];
        pt[i] = (xsm_coll_point){x->entry, x->exit, x->has_exit,
                                 kind == XSPROF_COLL_SCAN ? xsm_comm_rank_of(c, ci->comm, x->rank) : -1, x->receives,
                                 x->sends};
        if (root_rank >= 0 && x->rank == root_rank && root == SIZE_MAX)
            root = i;
    }
    uint64_t v = xsm_align_coll_late(kind, pt, ci->n, root);
    free(pt);
    return v;
}

static int xsm_coll_collect(xsm_mctx *c, xsm_cinst *ci);

/* merged.h5's collectives: the instance as merge/match makes it (members
 * by rank, the first member's name, kind and root), kept with its members'
 * times; sorted by (comm, seq) once pass 1 is done. */
static int xsm_coll_keep(xsm_mctx *c, xsm_cinst *ci)
{
    xsm_stream *s = c->s;
    if (xsm_grow((void **)&s->h5colls, &s->caph5colls, s->nh5colls, sizeof *s->h5colls))
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    xsm_collective *k = &s->h5colls[s->nh5colls];
    memset(k, 0, sizeof *k);
    k->ranks = malloc(ci->n * sizeof *k->ranks);
    k->rows = malloc(ci->n * sizeof *k->rows);
    k->tb = malloc(ci->n * sizeof *k->tb);
    k->te = malloc(ci->n * sizeof *k->te);
    s->nh5colls++; /* freed with the others, filled or not */
    if (!k->ranks || !k->rows || !k->tb || !k->te)
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    k->comm = ci->comm;
    k->coll_seq = ci->seq;
    k->op = ci->m[0].op;
    k->coll_kind = ci->m[0].kind;
    k->root = xsm_cinst_root(ci);
    k->n = ci->n;
    for (size_t i = 0; i < ci->n; i++) {
        k->ranks[i] = ci->m[i].rank;
        k->rows[i] = ci->m[i].row;
        k->tb[i] = ci->m[i].entry;
        k->te[i] = ci->m[i].row_end;
    }
    return 0;
}

static int xsm_cwq_less(const void *a, const void *b)
{
    const xsm_cwq *x = a, *y = b;
    return x->w.p != y->w.p ? x->w.p < y->w.p : x->seq < y->seq;
}

/* The earliest wait rank r holds back, to its file. */
static int xsm_cwq_write(xsm_mctx *c, int32_t rank)
{
    xsm_mrank *m = &c->m[rank];
    xsm_srank *sr = &c->s->r[rank];
    xsm_cwq q;
    xsm_bheap_pop(m->wq, &m->nwq, sizeof q, &q, xsm_cwq_less);
    if (!m->cwait &&
        !(m->cwait = xsm_stream_tmp(c->s, "cwait", rank, sr->cwait_path, sizeof sr->cwait_path, c->err, c->errlen)))
        return 1;
    if (q.w.p < m->wlast) { /* came later than the hold: delivered now, on its own */
        q.w.p = m->wlast;
        c->late_waits++;
    }
    m->wlast = q.w.p;
    if (fwrite(&q.w, sizeof q.w, 1, m->cwait) != 1)
        return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)", sr->cwait_path,
                           strerror(errno));
    sr->ncwait++;
    return 0;
}

/* A wait of `kind` in call `row` (named op) of `rank`, caused by call
 * causer_row of `causer` (-1: none), for that rank's waits file: the
 * reports read it at the first call that ends at or after p. */
static int xsm_wait_put_rec(xsm_mctx *c, int64_t p, int32_t rank, const xsm_cwait_rec *w)
{
    xsm_mrank *m = &c->m[rank];
    if (m->nwq == XSM_CWQ_HOLD && xsm_cwq_write(c, rank))
        return 1;
    if (xsm_grow((void **)&m->wq, &m->capwq, m->nwq, sizeof *m->wq))
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    xsm_cwq q = {*w, m->wseq++};
    q.w.p = p;
    xsm_bheap_push(m->wq, &m->nwq, sizeof q, &q, xsm_cwq_less);
    return 0;
}

static int xsm_wait_put_at(xsm_mctx *c, int64_t p, int32_t rank, uint32_t row, uint32_t op, int kind, int32_t causer,
                           uint32_t causer_row, int64_t ns)
{
    xsm_cwait_rec w = {p, ns, row, op, kind, causer, causer_row, 0};
    return xsm_wait_put_rec(c, p, rank, &w);
}

/* A Wrong Order verdict (worder.c) for the reports: at the receive's
 * completion, before the receiving call ends. */
static int xsm_wo_verdict(void *ctx, int32_t dst, int64_t t, uint32_t call_row, int32_t src, uint32_t send_row)
{
    return xsm_wait_put_at(ctx, t, dst, call_row, 0, XSM_WAIT_WRONG_ORDER, src, send_row, 0);
}

/* Wrong Order's events due before `now`: 0, or 1 with the error set. */
static int xsm_wo_run(xsm_mctx *c, int64_t now)
{
    int rc = xsm_wo_due(c->wo, now, xsm_wo_verdict, c);
    return rc < 0 ? xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages") : rc;
}

/* A collective's wait (xsm_coll_waits_find) for the reports: a member's
 * id is its index in the instance. */
typedef struct xsm_cw_ctx {
    xsm_mctx *c;
    const xsm_cinst *ci;
} xsm_cw_ctx;

static int xsm_coll_wait_put(void *ctx, const xsm_cwmember *w, int kind, const xsm_cwmember *cause, int64_t tb,
                             int64_t te)
{
    xsm_cw_ctx *x = ctx;
    const xsm_cmember *m = &x->ci->m[w->id];
    uint32_t crow = cause ? x->ci->m[cause->id].row : 0;
    /* due at its call's end, as the in-memory feeding has it (mfeed.c) */
    return xsm_wait_put_at(x->c, m->call_e, m->rank, m->call_row, m->call_op, kind, cause ? cause->rank : -1, crow, te - tb)
               ? -1
               : 0;
}

/* The waits of one closed collective for the reports (collwait.c) over its
 * members inside --from/--to (members sorted by rank): a member arrives
 * when it enters (posts); it waits in its call, the collective's own row
 * or, for a nonblocking one, the call that completed its request.
 * Collectives left open at the end (a member missing) are not counted. */
static int xsm_coll_waits(xsm_mctx *c, xsm_cinst *ci)
{
    if (c->done)
        return 0;
    xsm_cwmember *v = malloc((ci->n + 1) * sizeof *v);
    if (!v)
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    size_t n = 0;
    for (size_t k = 0; k < ci->n; k++) {
        const xsm_cmember *x = &ci->m[k];
        if (xsm_stream_keep(c->s, x->entry, x->row_end))
            v[n++] = (xsm_cwmember){x->rank, x->entry, x->has_call, x->call_b, x->call_e, x->receives, x->sends,
                                    x->kind == XSPROF_COLL_SCAN ? xsm_comm_rank_of(c, ci->comm, x->rank) : -1, k};
    }
    xsm_cw_ctx cx = {c, ci};
    int rc = xsm_coll_waits_find(ci->m[0].kind, xsm_cinst_root(ci), v, n, xsm_coll_wait_put, &cx);
    free(v);
    return rc ? 1 : 0;
}

/* trace.otf2's collective records: for instances every member of the
 * communicator reached (inside --from/--to), as the in-memory merge's
 * xsm_emit_marks marks them. */
static int xsm_coll_whole(xsm_mctx *c, const xsm_cinst *ci)
{
    size_t k = xsm_comm_index(c, ci->comm);
    if (k == SIZE_MAX)
        return 0;
    const xsprof_rank_data *d = &c->s->run->ranks[c->comm_owner[k]].d;
    size_t i = 0;
    while (i < d->ncomms && d->comms[i].id != ci->comm)
        i++;
    if (i == d->ncomms || ci->n != d->comms[i].size)
        return 0;
    for (size_t j = 0; j < ci->n; j++)
        if (!xsm_stream_keep(c->s, ci->m[j].entry, ci->m[j].row_end))
            return 0;
    for (size_t j = 0; j < ci->n; j++) {
        xsm_srank *sr = &c->s->r[ci->m[j].rank];
        if (xsm_mark_set(&sr->mark[XSM_MARK_COLL_WHOLE], sr->mpi_rows, ci->m[j].row))
            return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    }
    return 0;
}

static void xsm_coll_close(xsm_mctx *c, xsm_cinst *ci)
{
    c->violations += xsm_coll_violations(c, ci);
    if (c->s->otf2 && !c->s->collect && ci->n && xsm_coll_whole(c, ci))
        c->collect_failed = 1;
    if (c->s->report && !c->s->collect && ci->n && xsm_coll_waits(c, ci))
        c->collect_failed = 1;
    if (c->s->collect && ci->n && xsm_coll_collect(c, ci))
        c->collect_failed = 1;
    if (c->s->h5 && !c->s->collect && ci->n && xsm_coll_keep(c, ci))
        c->collect_failed = 1;
    size_t k = xsm_comm_index(c, ci->comm);
    if (k != SIZE_MAX && c->comm_present[k] > ci->n)
        c->incomplete++;
    free(ci->m);
    ci->m = NULL;
    ci->n = ci->cap = 0;
    ci->live = 0;
    c->ncoll_live--;
}

static uint64_t xsm_coll_hash(uint32_t comm, uint64_t seq)
{
    return ((uint64_t)comm * 0x9e3779b97f4a7c15ull) ^ (seq * 0xff51afd7ed558ccdull);
}

static xsm_cinst *xsm_coll_get(xsm_mctx *c, uint32_t comm, uint64_t seq)
{
    if ((c->ncoll_live + 1) * 2 > c->capcoll) {
        size_t cap = c->capcoll ? 2 * c->capcoll : 64;
        xsm_cinst *p = calloc(cap, sizeof *p);
        if (!p)
            return NULL;
        for (size_t i = 0; i < c->capcoll; i++) {
            if (!c->coll[i].live)
                continue;
            size_t h = xsm_coll_hash(c->coll[i].comm, c->coll[i].seq) & (cap - 1);
            while (p[h].live)
                h = (h + 1) & (cap - 1);
            p[h] = c->coll[i];
        }
        free(c->coll);
        c->coll = p;
        c->capcoll = cap;
    }
    size_t h = xsm_coll_hash(comm, seq) & (c->capcoll - 1);
    while (c->coll[h].live && !(c->coll[h].comm == comm && c->coll[h].seq == seq))
        h = (h + 1) & (c->capcoll - 1);
    if (!c->coll[h].live) {
        c->coll[h] = (xsm_cinst){comm, seq, NULL, 0, 0, 0, 1, 0};
        c->ncoll_live++;
    }
    return &c->coll[h];
}

/* Removing from a linear-probing table: re-insert the rest of the cluster. */
static void xsm_coll_remove(xsm_mctx *c, xsm_cinst *ci)
{
    size_t h = (size_t)(ci - c->coll);
    xsm_coll_close(c, ci);
    for (size_t j = (h + 1) & (c->capcoll - 1); c->coll[j].live; j = (j + 1) & (c->capcoll - 1)) {
        xsm_cinst x = c->coll[j];
        c->coll[j].live = 0;
        size_t k = xsm_coll_hash(x.comm, x.seq) & (c->capcoll - 1);
        while (c->coll[k].live)
            k = (k + 1) & (c->capcoll - 1);
        c->coll[k] = x;
    }
}

/* The open instance (comm, seq), or NULL. */
static xsm_cinst *xsm_coll_find(xsm_mctx *c, uint32_t comm, uint64_t seq)
{
    if (!c->capcoll)
        return NULL;
    size_t h = xsm_coll_hash(comm, seq) & (c->capcoll - 1);
    while (c->coll[h].live && !(c->coll[h].comm == comm && c->coll[h].seq == seq))
        h = (h + 1) & (c->capcoll - 1);
    return c->coll[h].live ? &c->coll[h] : NULL;
}

static void xsm_coll_maybe_close(xsm_mctx *c, xsm_cinst *ci)
{
    size_t k = xsm_comm_index(c, ci->comm);
    if (k != SIZE_MAX && ci->n >= c->comm_present[k] && !ci->waiting)
        xsm_coll_remove(c, ci);
}

/* Returns 0, -1 (memory) or 2 (a rank entered one instance twice). */
static int xsm_coll_add(xsm_mctx *c, int32_t r, uint32_t row, const xsprof_io_mpi *m)
{
    xsm_cinst *ci = xsm_coll_get(c, m->comm, m->coll_seq);
    if (!ci)
        return -1;
    for (size_t i = 0; i < ci->n; i++)
        if (ci->m[i].rank == r)
            return 2; /* merge/match keeps the first row: not worth replaying here */
    if (ci->n == ci->cap) {
        size_t cap = ci->cap ? 2 * ci->cap : 4;
        xsm_cmember *p = realloc(ci->m, cap * sizeof *p);
        if (!p)
            return -1;
        ci->m = p;
        ci->cap = cap;
    }
    int blocking = m->kind == XSPROF_MPI_COLL;
    /* a nonblocking collective leaves at its request's completion (none
     * without a request: no constraint, as merge/align) */
    ci->m[ci->n++] = (xsm_cmember){r,         row,       m->t_begin, m->t_end, m->coll, m->root, blocking, row, m->op,
                                   m->t_end,  blocking,  row,        m->op,    m->t_begin, m->t_end,
                                   xsm_coll_receives(m->coll, m), xsm_coll_sends(m)};
    /* the summary counts collectives as merge/read/select.c leaves them */
    if (!ci->kept && xsm_stream_keep(c->s, m->t_begin, m->t_end)) {
        ci->kept = 1;
        c->ncolls++;
    }
    ci->waiting += !blocking && m->request;
    xsm_coll_maybe_close(c, ci);
    return 0;
}

/* A completion of `request` on rank r: the exit of the nonblocking
 * collective posted with it (the first completion at or after the post),
 * made inside the call `th` last began when it holds the completion. */
static void xsm_coll_exit(xsm_mctx *c, int32_t r, xsm_req_state *q, const xsprof_io_mpi *m, uint32_t row,
                          const xsm_thr_state *th)
{
    if (!q->icoll || m->t_begin < q->it)
        return;
    q->icoll = 0;
    xsm_cinst *ci = xsm_coll_find(c, q->icomm, q->iseq);
    for (size_t i = 0; ci && i < ci->n; i++) {
        if (ci->m[i].rank != r || ci->m[i].has_exit)
            continue;
        ci->m[i].exit = m->t_end;
        ci->m[i].exit_row = row;
        ci->m[i].has_exit = 1;
        if (th && th->last_call >= 0 && th->last_end >= m->t_begin) {
            ci->m[i].has_call = 1;
            ci->m[i].call_row = (uint32_t)th->last_call;
            ci->m[i].call_op = th->last_op;
            ci->m[i].call_b = th->last_begin;
            ci->m[i].call_e = th->last_end;
        }
        ci->waiting--;
        xsm_coll_maybe_close(c, ci);
        return;
    }
}

/* ---- processing one row -------------------------------------------------- */

/* Collect mode: a constraint record for rank r's dep file (and its bit). */
static int xsm_cdep_put(xsm_mctx *c, int32_t r, const xsm_cdep *x)
{
    xsm_srank *sr = &c->s->r[r];
    if (!sr->dep && !(sr->dep = xsm_stream_tmp(c->s, "cdep", r, sr->dep_path, sizeof sr->dep_path, c->err, c->errlen)))
        return 1;
    xsm_bits_set(x->kind == XSM_CDEP_ENTRY ? sr->depb : sr->depe, x->row);
    if (fwrite(x, sizeof *x, 1, sr->dep) != 1)
        return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                           sr->dep_path, strerror(errno));
    return 0;
}

/* Collect mode: one closed collective's constraints as merge/align's
 * xsm_deps_build makes them (members sorted by rank): who waits for whose
 * entries, whose entries are pinned; the instance goes to the coll file. */
static int xsm_coll_collect(xsm_mctx *c, xsm_cinst *ci)
{
    xsm_stream *s = c->s;
    int kind = ci->m[0].kind;
    uint32_t root = UINT32_MAX;
    int32_t root_rank = xsm_cinst_root(ci);
    for (size_t i = 0; i < ci->n && root_rank >= 0; i++)
        if (ci->m[i].rank == root_rank) {
            root = (uint32_t)i;
            break;
        }
    uint32_t need = kind == XSPROF_COLL_ONE2N   ? XSM_CNEED_ROOT
                    : kind == XSPROF_COLL_SCAN  ? XSM_CNEED_SCAN
                    : kind == XSPROF_COLL_N2ONE ? XSM_CNEED_SENDERS
                                                : XSM_CNEED_ALL;
    xsm_ccoll h = {s->coll_ids++, (uint32_t)ci->n, 0, root, need};
    xsm_cmem *mem = malloc(ci->n * sizeof *mem);
    unsigned char *waits = calloc(ci->n, 1);
    if (!mem || !waits) {
        free(mem);
        free(waits);
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    }
    for (size_t i = 0; i < ci->n; i++)
        mem[i] = (xsm_cmem){ci->m[i].rank, (uint32_t)ci->m[i].sends,
                            kind == XSPROF_COLL_SCAN ? xsm_comm_rank_of(c, ci->comm, ci->m[i].rank) : -1};
    for (size_t i = 0; i < ci->n; i++) {
        if (!ci->m[i].has_exit || !ci->m[i].receives)
            continue;
        switch (kind) {
        case XSPROF_COLL_ONE2N:
            if (root == UINT32_MAX || i == root)
                break;
            waits[i] = 1;
            xsm_bits_set(s->r[ci->m[root].rank].sent, ci->m[root].row);
            break;
        case XSPROF_COLL_SCAN:
            for (size_t j = 0; j < ci->n && mem[i].pos >= 0; j++) {
                if (j == i || mem[j].pos < 0 || mem[j].pos > mem[i].pos)
                    continue;
                waits[i] = 1;
                xsm_bits_set(s->r[ci->m[j].rank].sent, ci->m[j].row);
            }
            break;
        case XSPROF_COLL_N2ONE: /* the root waits for those that give it data */
            for (size_t j = 0; i == root && j < ci->n; j++) {
                if (j == i || !ci->m[j].sends)
                    continue;
                waits[i] = 1;
                xsm_bits_set(s->r[ci->m[j].rank].sent, ci->m[j].row);
            }
            break;
        default:
            waits[i] = 1;
            for (size_t j = 0; j < ci->n; j++)
                xsm_bits_set(s->r[ci->m[j].rank].sent, ci->m[j].row);
        }
        h.nexits += waits[i];
    }
    int rc = 0;
    if (!s->coll_file && !(s->coll_file = xsm_stream_tmp(s, "ccoll", -1, s->coll_path, sizeof s->coll_path, c->err,
                                                         c->errlen)))
        rc = 1;
    if (!rc && (fwrite(&h, sizeof h, 1, s->coll_file) != 1 || fwrite(mem, sizeof *mem, ci->n, s->coll_file) != ci->n))
        rc = xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                         s->coll_path, strerror(errno));
    for (size_t i = 0; i < ci->n && !rc; i++) {
        xsm_cdep en = {ci->m[i].row, XSM_CDEP_ENTRY, 0, (uint32_t)i, h.id};
        xsm_cdep ex = {ci->m[i].exit_row, XSM_CDEP_EXIT, 0, (uint32_t)i, h.id};
        rc = xsm_cdep_put(c, ci->m[i].rank, &en) || (waits[i] && xsm_cdep_put(c, ci->m[i].rank, &ex));
    }
    free(mem);
    free(waits);
    return rc;
}

static void xsm_sent_set(xsm_srank *sr, uint32_t row)
{
    xsm_bits_set(sr->sent, row);
    sr->nmatched++;
}

static int xsm_spill_put(xsm_mctx *c, int32_t dst, const xsm_spill *x)
{
    xsm_mrank *m = &c->m[dst];
    xsm_srank *sr = &c->s->r[dst];
    if (!m->spill &&
        !(m->spill = xsm_stream_tmp(c->s, "spill", dst, sr->spill_path, sizeof sr->spill_path, c->err, c->errlen)))
        return 1;
    if (fwrite(x, sizeof *x, 1, m->spill) != 1)
        return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                           sr->spill_path, strerror(errno));
    sr->nspill++;
    return 0;
}

/* The entry of (rank, send row), made when absent; NULL out of memory. */
static xsm_isl *xsm_isl_get(xsm_mctx *c, int32_t r, uint32_t row)
{
    return xsm_ktab_get(&c->isl, (uint64_t)(uint32_t)(r + 1) << 32 | row);
}

static void xsm_isl_del(xsm_mctx *c, xsm_isl *e) { xsm_ktab_del(&c->isl, e); }

/* Both halves known: the call that completed the Isend waited for the
 * receive's post when it was still blocked then (waits.c); when it began
 * after the post, the polls before it did, which the analysis has (a
 * polling loop's Late Receiver: the post's time goes with it). */
static int xsm_isl_done(xsm_mctx *c, xsm_isl *e)
{
    int32_t src = (int32_t)(e->key >> 32) - 1;
    int64_t until = xsm_lr_until(0, e->eager, e->cb, e->ce, e->post_t);
    int rc = 0, pair = xsm_is_p2p_wait_pair(src, e->dst);
    if (pair && until != XSM_LR_NONE && until != XSM_LR_POLL) {
        rc = xsm_wait_put_at(c, e->ce, src, e->call_row, e->call_op, XSM_WAIT_LATE_RECEIVER, e->dst, e->post_row,
                             until - e->cb);
    } else if (pair && until == XSM_LR_POLL) {
        xsm_cwait_rec w = {e->ce, e->post_t, e->call_row, e->call_op, XSM_WAIT_LATE_RECEIVER, e->dst, e->post_row, 1};
        rc = xsm_wait_put_rec(c, e->ce, src, &w);
    }
    xsm_isl_del(c, e);
    return rc;
}

/* The send snd meets the receive q at time `now`. */
static int xsm_meet(xsm_mctx *c, int64_t now, const xsm_pend_end *snd, const xsm_pend_end *q)
{
    int32_t src = snd->k.src, dst = q->k.dst;
    uint32_t send_row = snd->row;
    int64_t send_t = snd->t;
    if (c->s->collect) { /* the logical clock's constraint, whatever the times */
        c->violations += q->t < send_t;
        xsm_bits_set(c->s->r[src].sent, send_row);
        xsm_cdep x = {q->row, XSM_CDEP_RECV, src, send_row, 0};
        return xsm_cdep_put(c, dst, &x) ? 1 : 0;
    }
    if (q->t < send_t) { /* the logical clock would move times */
        c->s->need_clc = 1;
        return xsm_err_set(c->err, c->errlen, "clock violations after interpolation need the logical clock") ? 2 : 2;
    }
    if (c->s->report && snd->skind == XSPROF_MPI_ISEND) { /* its Late Receiver's half (xsm_isl_done) */
        xsm_isl *e = xsm_isl_get(c, src, send_row);
        if (!e)
            return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
        int cut = !snd->kept || !q->kept;
        e->has_post = cut ? -1 : 1; /* a cut message: the entry goes when its completion comes */
        e->dst = dst;
        e->eager = xsm_eager_send(c->eager, src, dst, snd->bytes, snd->op);
        e->post_t = q->post_t;
        e->post_row = q->post_row;
        if (e->has_call && cut)
            xsm_isl_del(c, e);
        else if (e->has_call && xsm_isl_done(c, e))
            return 1;
    }
    if (c->wo && (!snd->kept || !q->kept)) {
        if (snd->kept)
            xsm_wo_cut(c->wo, dst, src, send_row);
    } else if (c->wo && xsm_wo_recv(c->wo, dst, src, send_row, send_t, q->t,
                                    q->call_row != UINT32_MAX && q->call_kept ? q->call_begin : q->t,
                                    q->call_kept ? q->call_row : UINT32_MAX, q->thread)) {
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    }
    if (!snd->kept || !q->kept)
        return 0; /* an end outside --from/--to: the message is cut, as in memory */
    xsm_sent_set(&c->s->r[src], send_row);
    if (c->s->report && xsm_cpairs_add(&c->s->cm, src, dst, snd->bytes))
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory");
    /* Late Receiver (waits.c) of a blocking send: it waited until the
     * receive was posted; a buffered send that returned before did not */
    if (c->s->report && xsm_is_p2p_wait_pair(src, dst) && (snd->skind == XSPROF_MPI_SEND || snd->skind == XSPROF_MPI_SSEND ||
                         snd->skind == XSPROF_MPI_SENDRECV)) {
        int64_t until = xsm_lr_until(snd->skind == XSPROF_MPI_SSEND, xsm_eager_send(c->eager, src, dst, snd->bytes, snd->op), send_t,
                                     snd->send_end, q->post_t);
        if (until != XSM_LR_NONE && until != XSM_LR_POLL &&
            xsm_wait_put_at(c, snd->send_end, src, send_row, snd->op, XSM_WAIT_LATE_RECEIVER, dst, q->post_row,
                            until - send_t))
            return 1;
    }

    if (c->s->h5) { /* merged.h5's row, placed by its id once pass 1 is done */
        xsm_h5_msgrec x;
        memset(&x, 0, sizeof x);
        x.m = (xsm_message){src, dst, q->k.comm, q->k.tag, snd->bytes, send_row, q->row, q->post, -1,
                            q->call_row == UINT32_MAX ? q->row : q->call_row};
        x.send_begin = send_t;
        x.send_end = snd->send_end;
        x.recv_end = q->t;
        if (fwrite(&x, sizeof x, 1, c->s->msg_spill) != 1)
            return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                               c->s->msg_path, strerror(errno));
    }
    /* a completion no call holds, or whose call is outside --from/--to (in
     * memory its flow then ends on the completion row): the writers never
     * draw it, trace.otf2 leaves out its send too */
    int posted = q->post >= 0 && q->post_kept;
    if (q->call_row == UINT32_MAX || !q->call_kept)
        return c->s->otf2 && xsm_mark_set(&c->s->r[src].mark[XSM_MARK_SEND_HIDDEN], c->s->r[src].mpi_rows, send_row)
                   ? xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages")
                   : 0;
    if (c->s->otf2 && posted &&
        xsm_mark_set(&c->s->r[dst].mark[XSM_MARK_RECV_POST], c->s->r[dst].mpi_rows, (uint64_t)q->post))
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    if (now > q->call_end) {
        /* the writers read a rank's spill only up to a call's end */
        return xsm_err_set(c->err, c->errlen, "a receive on rank %d was matched after its call ended",
                           (int)dst) ? 2 : 2;
    }
    xsm_spill x = {now,      q->t,      send_t,          q->call_row, send_row,  src, q->k.comm,
                   q->k.tag, (uint32_t)posted, snd->bytes, posted ? q->request : 0};
    return xsm_spill_put(c, dst, &x) ? 1 : 0;
}

static int xsm_process(xsm_mctx *c, xsm_mrank *m, const xsprof_io_mpi *row, uint32_t i, int64_t now)
{
    int32_t r = m->r;
    c->now = now;
    if (c->wo && xsm_wo_run(c, now))
        return 1;
    int64_t po = -1, po_t = 0;
    int po_irecv = 0, po_isend = 0, po_float = 0, po_kept = 0;
    uint32_t po_comm = UINT32_MAX;
    if (xsm_is_req(row)) {
        if (row->kind != XSPROF_MPI_COMPLETION) {
            xsm_req_state *q = xsm_req_slot(m, row->request, 1);
            if (!q)
                return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
            if (row->kind == XSPROF_MPI_ICOLL && row->coll_seq) {
                if (q->icoll) /* reposted before it completed: merge/align would pair both with one completion */
                    return xsm_err_set(c->err, c->errlen, "rank %d reuses a request of an open nonblocking collective",
                                       (int)r) ? 2 : 2;
                q->icoll = 1;
                q->icomm = row->comm;
                q->iseq = row->coll_seq;
            }
            q->it = row->t_begin;
            q->kept = xsm_stream_keep(c->s, row->t_begin, row->t_end);
            /* an earlier post of this request never completed stays counted open */
            q->row = i;
            q->kind = row->kind;
            q->comm = row->comm;
            q->completed = 0;
            q->counted = row->kind == XSPROF_MPI_IRECV && !(row->flags & (XSPROF_MPI_F_CANCELLED | XSPROF_MPI_F_FREED));
            q->floating = row->kind == XSPROF_MPI_IRECV && !row->seq;
            if (q->floating && !m->numt) {
                m->numt = malloc(XSM_NUMT * sizeof *m->numt);
                if (!m->numt)
                    return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
                for (size_t k = 0; k < XSM_NUMT; k++)
                    m->numt[k] = INT64_MIN;
            }
            if (row->kind == XSPROF_MPI_IRECV && row->seq)
                xsm_numt_note(m, row->comm, row->peer, row->tag, row->t_begin);
            m->open_posts += (uint64_t)q->counted;
        } else {
            xsm_req_state *q = xsm_req_slot(m, row->request, 0);
            if (q && !(row->flags & XSPROF_MPI_F_RECV))
                xsm_coll_exit(c, r, q, row, i, xsm_thr_get(m, row->thread));
            if (q && q->kind == XSPROF_MPI_ISEND && c->s->h5 && !c->s->collect) {
                /* merged.h5's send_completion_row (the last completion wins, as in match/) */
                uint32_t sc[3] = {(uint32_t)r, q->row, i};
                if (fwrite(sc, sizeof sc, 1, c->s->scompl) != 1)
                    return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                                       c->s->scompl_path, strerror(errno));
            }
            if (q) {
                po = q->row;
                po_t = q->it;
                po_isend = q->kind == XSPROF_MPI_ISEND;
                po_irecv = q->kind == XSPROF_MPI_IRECV;
                po_float = q->floating;
                po_kept = q->kept;
                po_comm = q->comm;
                if (!q->completed) {
                    q->completed = 1;
                    m->open_posts -= (uint64_t)q->counted;
                }
            }
        }
    }
    xsm_thr_state *th = xsm_thr_get(m, row->thread);
    if (!th)
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    int64_t ca = -1, ca_begin = 0, ca_end = 0;
    uint32_t ca_comm = UINT32_MAX;
    if (row->kind != XSPROF_MPI_COMPLETION) {
        th->last_call = i;
        th->last_begin = row->t_begin;
        th->last_end = row->t_end;
        th->last_comm = row->comm;
        th->last_op = row->op;
        th->sendrecv_open = row->kind == XSPROF_MPI_SENDRECV ? (int64_t)i : -1;
        th->sendrecv_begin = row->t_begin;
        th->sendrecv_end = row->t_end;
        th->sendrecv_comm = row->comm;
    } else {
        if (th->last_call >= 0 && th->last_end >= row->t_begin) {
            ca = th->last_call;
            ca_begin = th->last_begin;
            ca_end = th->last_end;
            ca_comm = th->last_comm;
        }
        if (c->s->report && !c->s->collect && po >= 0 && po_isend && ca >= 0) { /* an Isend completed in call ca */
            xsm_isl *e = xsm_isl_get(c, r, (uint32_t)po);
            if (!e)
                return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
            e->has_call = 1;
            e->call_row = (uint32_t)ca;
            e->call_op = th->last_op;
            e->cb = ca_begin;
            e->ce = ca_end;
            if (e->has_post < 0)
                xsm_isl_del(c, e);
            else if (e->has_post && xsm_isl_done(c, e))
                return 1;
        }
        if ((row->flags & XSPROF_MPI_F_RECV) && po < 0 && th->sendrecv_open >= 0) {
            ca = th->sendrecv_open; /* the receive half of a Sendrecv */
            ca_begin = th->sendrecv_begin;
            ca_end = th->sendrecv_end;
            ca_comm = th->sendrecv_comm;
            th->sendrecv_open = -1;
        }
    }
    int kept = xsm_stream_keep(c->s, row->t_begin, row->t_end);
    if ((row->kind == XSPROF_MPI_COLL || row->kind == XSPROF_MPI_ICOLL) && row->coll_seq) {
        int cr = xsm_coll_add(c, r, i, row);
        if (cr == 2)
            return xsm_err_set(c->err, c->errlen, "rank %d enters one collective twice", (int)r) ? 2 : 2;
        if (cr)
            return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    }
    if (xsm_is_send(row)) {
        if (!xsm_present(c, row->peer))
            return 0; /* its receiver was not loaded: not an anomaly */
        if (c->wo && kept && xsm_wo_send(c->wo, row->peer, row->t_begin, r, i))
            return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
        xsm_pend_end me = {{row->comm, r, row->peer, row->tag, row->seq}, 0, i, UINT32_MAX, row->t_begin, 0, 0,
                           (uint8_t)kept, 0, row->t_end, row->bytes_sent, -1, row->kind, row->op, 0, 0, 0, 0, 0, 0};
        xsm_pend_end q;
        int dup;
        if (xsm_ptab_take(&c->pend, &me.k, 0, &q, &dup))
            return xsm_meet(c, now, &me, &q);
        if (dup)
            return xsm_err_set(c->err, c->errlen, "rank %d sends two messages with one key", (int)r) ? 2 : 2;
        return xsm_ptab_put(&c->pend, &me) ? xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages") : 0;
    }
    int recv = row->kind == XSPROF_MPI_RECV ||
               (row->kind == XSPROF_MPI_COMPLETION && (row->flags & XSPROF_MPI_F_RECV) &&
                !(row->flags & XSPROF_MPI_F_CANCELLED));
    /* a cancelled receive that left its number void: the numbers above it
     * close up (merge/match xsm_recv_order_fix), which needs every receive */
    if (row->kind == XSPROF_MPI_COMPLETION && (row->flags & XSPROF_MPI_F_CANCELLED) &&
        (row->flags & XSPROF_MPI_F_RECV) && row->seq)
        return xsm_err_set(c->err, c->errlen,
                           "rank %d cancelled a receive after a receive posted before it with MPI_ANY_SOURCE or "
                           "MPI_ANY_TAG took a higher number of its key", (int)r) ? 2 : 2;
    if (!recv || row->peer < 0 || !xsm_present(c, row->peer))
        return 0;
    uint32_t comm = row->comm;
    if (comm == UINT32_MAX && po >= 0)
        comm = po_comm;
    else if (comm == UINT32_MAX && ca >= 0)
        comm = ca_comm;
    if (m->numt && row->seq) {
        if (po_float && m->numt[xsm_numt_slot(comm, row->peer, row->tag)] > po_t)
            return xsm_err_set(c->err, c->errlen,
                               "rank %d completed a receive posted with MPI_ANY_SOURCE or MPI_ANY_TAG after a receive "
                               "posted later on its key", (int)r) ? 2 : 2;
        /* (a receive numbered at its post was noted then, unless an
         * Imrecv's, whose post had no key: a floating receive completed
         * before it misses it) */
        xsm_numt_note(m, comm, row->peer, row->tag, po >= 0 && po_irecv ? po_t : row->t_begin);
    }
    uint32_t call = i;
    int64_t call_end = row->t_end;
    int call_kept = kept;
    if (row->kind != XSPROF_MPI_RECV) {
        if (ca >= 0) {
            call = (uint32_t)ca;
            call_end = ca_end;
            call_kept = xsm_stream_keep(c->s, ca_begin, ca_end);
        } else {
            call = UINT32_MAX; /* shown nowhere: the writers skip completion rows */
        }
    }
    /* posted: its Irecv, else the call it completed in, else itself (waits.c's e_post) */
    int64_t post_t = po >= 0 && po_irecv ? po_t : row->kind != XSPROF_MPI_RECV && ca >= 0 ? ca_begin : row->t_begin;
    uint32_t post_row = po >= 0 && po_irecv ? (uint32_t)po : row->kind != XSPROF_MPI_RECV && ca >= 0 ? (uint32_t)ca : i;
    int64_t call_begin = row->kind == XSPROF_MPI_RECV ? row->t_begin : ca_begin;
    xsm_pend_end me = {{comm, row->peer, r, row->tag, row->seq}, 1, i, call, row->t_end, call_end, 0,
                       (uint8_t)kept, (uint8_t)call_kept, 0, 0, po >= 0 && po_irecv ? po : -1, 0, 0, post_t, post_row,
                       call_begin, row->thread, row->request, (uint8_t)po_kept};
    xsm_pend_end q;
    int dup;
    if (xsm_ptab_take(&c->pend, &me.k, 1, &q, &dup))
        return xsm_meet(c, now, &q, &me);
    if (dup)
        return xsm_err_set(c->err, c->errlen, "rank %d receives two messages with one key", (int)r) ? 2 : 2;
    return xsm_ptab_put(&c->pend, &me) ? xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages") : 0;
}

/* ---- reading a rank's rows ---------------------------------------------- */

/* The writers' view of one mapped MPI row: span, threads, outliers. */
static int xsm_writer_rows(xsm_mctx *c, xsm_mrank *m, const xsprof_io_mpi *row, uint64_t i)
{
    xsm_srank *sr = &c->s->r[m->r];
    xsm_srank_span(sr, row->t_begin, row->t_end);
    /* what the writers see: rows inside --from/--to only */
    int kept = xsm_stream_keep(c->s, row->t_begin, row->t_end);
    if (kept && sr->kmpi) { /* merged.h5 keeps completions too, as read/select.c */
        xsm_bits_set(sr->kmpi, i);
        sr->kept_rows[XSPROF_IO_T_MPI]++;
    }
    if (kept && xsm_tid_set_add(sr, row->thread))
        return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
    if (kept && row->kind == XSPROF_MPI_COMPLETION)
        xsm_smin_note(sr->smin[XSM_EV_MPI], i, row->t_begin);
    if (kept && row->kind != XSPROF_MPI_COMPLETION) {
        sr->nev++;
        xsm_skey k = {row->t_begin, row->t_end, 0, 0, i};
        if (sr->mpi_thread == UINT32_MAX || xsm_skey_less(&k, &sr->mpi_first)) {
            sr->mpi_first = k;
            sr->mpi_thread = row->thread;
        }
        if (xsm_sheap_late(&m->emit, &k)) {
            if (xsm_outl_add(&sr->out[XSM_EV_MPI], &k, row))
                return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory while matching messages");
            return 0;
        }
        xsm_smin_note(sr->smin[XSM_EV_MPI], i, k.t);
        if (xsm_sheap_push(&m->emit, &k, NULL)) {
            xsm_skey gone;
            xsm_sheap_pop(&m->emit, &gone);
        }
    }
    return 0;
}

/* Read rows until the begin-time heap must release one (or the table
 * ends), then take the released row as the rank's head. Returns 0, 1
 * (error) or 2 (needs the in-memory merge). */
static int xsm_advance(xsm_mctx *c, xsm_mrank *m)
{
    xsm_srank *sr = &c->s->r[m->r];
    while (m->next < m->tab.n && m->proc.n <= m->proc.window) {
        uint64_t i = m->next++;
        const xsprof_io_mpi *src = xsm_tab_row(&m->tab, i);
        if (!src) /* damage: the in-memory merge words it (and --partial skips the rank) */
            return xsm_err_set(c->err, c->errlen, "%s", m->tab.err) ? 2 : 2;
        if (i >= UINT32_MAX)
            return xsm_err_set(c->err, c->errlen, "xsmerge: %s: too many MPI rows",
                               sr->present ? c->s->run->ranks[m->r].d.path : "");
        xsprof_io_mpi row = *src;
        row.t_begin = xsm_align_clock_map(&sr->clk, row.t_begin);
        row.t_end = xsm_align_clock_map(&sr->clk, row.t_end);
        /* collect mode: the streamed logical clock takes each call's begin
         * before its end, and the writers' bookkeeping waits for the
         * corrected times */
        if (c->s->collect && row.t_end < row.t_begin)
            return xsm_err_set(c->err, c->errlen, "an MPI call of rank %d ends before it begins", (int)m->r) ? 2 : 2;
        if (!c->s->collect && xsm_writer_rows(c, m, &row, i))
            return 1;
        /* calls before completions at the same time, as merge/match walks */
        xsm_skey pk = {row.t_begin, 0, 0, row.kind == XSPROF_MPI_COMPLETION, i};
        if (xsm_sheap_late(&m->proc, &pk)) {
            c->s->proc_late = 1;
            return xsm_err_set(c->err, c->errlen, "MPI calls of rank %d are further out of time order than the window",
                               (int)m->r) ? 2 : 2;
        }
        xsm_sheap_push(&m->proc, &pk, &row);
    }
    m->has_head = 0;
    if (m->proc.n) {
        const xsprof_io_mpi *h = xsm_sheap_pop(&m->proc, &m->head_key);
        m->head = *h;
        m->has_head = 1;
    }
    return 0;
}

static int xsm_rank_less(const xsm_mctx *c, size_t a, size_t b)
{
    const xsm_skey *x = &c->m[a].head_key, *y = &c->m[b].head_key;
    if (xsm_skey_less(x, y)) return 1;
    if (xsm_skey_less(y, x)) return 0;
    return a < b;
}

static void xsm_rank_sift(xsm_mctx *c, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, k = i;
        if (l < c->nheap && xsm_rank_less(c, c->heap[l], c->heap[k])) k = l;
        if (l + 1 < c->nheap && xsm_rank_less(c, c->heap[l + 1], c->heap[k])) k = l + 1;
        if (k == i)
            return;
        size_t t = c->heap[i];
        c->heap[i] = c->heap[k];
        c->heap[k] = t;
        i = k;
    }
}

/* ---- notes --------------------------------------------------------------- */

static int xsm_pend_cmp(const void *a, const void *b)
{
    const xsm_pend_end *x = a, *y = b;
    int32_t rx = x->recv ? x->k.dst : x->k.src, ry = y->recv ? y->k.dst : y->k.src;
    if (x->recv != y->recv) return x->recv - y->recv;
    if (rx != ry) return rx < ry ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static int xsm_notes(xsm_mctx *c, uint64_t open_posts)
{
    xsm_run *run = c->s->run;
    size_t n = 0;
    for (size_t i = 0; i < c->pend.n; i++)
        if (c->pend.e[i].recv >= 0)
            c->pend.e[n++] = c->pend.e[i]; /* compact: the table is done */
    if (n)
        qsort(c->pend.e, n, sizeof *c->pend.e, xsm_pend_cmp);
    size_t listed[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        const xsm_pend_end *e = &c->pend.e[i];
        if (e->recv)
            run->unmatched_recvs++;
        else
            run->unmatched_sends++;
        if (!e->recv && xsm_unrecv_add(run, (int32_t)e->k.src, (int32_t)e->k.dst))
            return -1;
        if (!c->s->notes || listed[e->recv]++ >= 5)
            continue;
        fprintf(c->s->notes, "xsmerge: note: unmatched %s: rank %d -> %d, comm %u, tag %d, seq %llu (row %zu on rank %d)\n",
                e->recv ? "receive" : "send", (int)e->k.src, (int)e->k.dst, e->k.comm, (int)e->k.tag,
                (unsigned long long)e->k.seq, (size_t)e->row, (int)(e->recv ? e->k.dst : e->k.src));
    }
    run->unmatched_recvs += open_posts;
    if (c->s->notes && open_posts)
        fprintf(c->s->notes, "xsmerge: note: %llu nonblocking receives were posted but never completed\n",
                (unsigned long long)open_posts);
    run->incomplete_colls = c->incomplete;
    if (c->s->notes && (run->unmatched_sends || run->unmatched_recvs || run->incomplete_colls))
        fprintf(c->s->notes, "xsmerge: note: %zu unmatched sends, %zu unmatched receives, %zu incomplete collectives\n",
                run->unmatched_sends, run->unmatched_recvs, run->incomplete_colls);
    /* where the streamed analysis may differ from the in-memory one (merge/README) */
    if (c->s->notes && c->late_waits)
        fprintf(c->s->notes,
                "xsmerge: note: the streamed analysis found %llu waits long after their call; each counts on its own\n",
                (unsigned long long)c->late_waits);
    uint64_t dropped = c->wo ? xsm_wo_dropped(c->wo) : 0;
    if (c->s->notes && dropped)
        fprintf(c->s->notes,
                "xsmerge: note: %llu Wrong Order checks waited behind messages never received and were given up "
                "(those waits count as Late Sender)\n",
                (unsigned long long)dropped);
    return 0;
}

/* ---- driver --------------------------------------------------------------- */

static int xsm_comms_index(xsm_mctx *c)
{
    xsm_run *run = c->s->run;
    size_t cap = 0;
    for (size_t r = 0; r < run->nranks; r++)
        if (c->s->r[r].present)
            cap += run->ranks[r].d.ncomms;
    c->comm_ids = malloc((cap + 1) * sizeof *c->comm_ids);
    c->comm_present = calloc(cap + 1, sizeof *c->comm_present);
    c->comm_owner = malloc((cap + 1) * sizeof *c->comm_owner);
    if (!c->comm_ids || !c->comm_present || !c->comm_owner)
        return -1;
    for (size_t r = 0; r < run->nranks; r++) {
        if (!c->s->r[r].present)
            continue;
        const xsprof_rank_data *d = &run->ranks[r].d;
        for (size_t i = 0; i < d->ncomms; i++) {
            size_t k = xsm_comm_index(c, d->comms[i].id);
            int seen = 0; /* a rank defining it twice counts once */
            for (size_t j = 0; j < i; j++)
                seen |= d->comms[j].id == d->comms[i].id;
            if (k == SIZE_MAX) {
                k = c->ncomm_ids++;
                c->comm_ids[k] = d->comms[i].id;
                c->comm_owner[k] = (int32_t)r;
            }
            if (!seen)
                c->comm_present[k]++;
        }
    }
    return 0;
}

uint64_t xsm_stream_msg_index(const xsm_srank *sr, uint64_t row)
{
    return sr->msg_base + xsm_bits_rank(sr->sent, sr->sent_before, row);
}

int xsm_smatch_run(xsm_stream *s, char *err, size_t errlen)
{
    xsm_run *run = s->run;
    size_t n = run->nranks;
    xsm_mctx c = {.s = s, .err = err, .errlen = errlen};
    c.pend.free_list = UINT32_MAX;
    c.isl.size = sizeof(xsm_isl);
    c.m = calloc(n + 1, sizeof *c.m);
    c.heap = malloc((n + 1) * sizeof *c.heap);
    int rc = !c.m || !c.heap || xsm_comms_index(&c) ||
                     (s->report && !s->collect && (!(c.wo = xsm_wo_new(n)) || !(c.eager = xsm_eager_new(s->run))))
                 ? xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages")
                 : 0;
    if (!rc && s->h5 && !s->collect &&
        (!(s->msg_spill = xsm_stream_tmp(s, "h5msgs", -1, s->msg_path, sizeof s->msg_path, err, errlen)) ||
         !(s->scompl = xsm_stream_tmp(s, "h5compl", -1, s->scompl_path, sizeof s->scompl_path, err, errlen))))
        rc = 1;
    /* decoding overlaps matching: this pass is one thread otherwise */
    xsm_prefetch *pf = xsm_parallel_threads(0) > 1 ? xsm_prefetch_start() : NULL;
    for (size_t r = 0; !rc && r < n; r++) {
        xsm_srank *sr = &s->r[r];
        xsm_mrank *m = &c.m[r];
        m->r = (int32_t)r;
        if (!sr->present)
            continue;
        if (xsm_tab_open(&m->tab, sr->rf, &run->ranks[r].d, XSPROF_IO_T_MPI) || xsm_tab_prefetch(&m->tab, pf) ||
            xsm_sheap_init(&m->proc, xsm_window_for(s->proc_window, m->tab.n), sizeof(xsprof_io_mpi)) ||
            xsm_sheap_init(&m->emit, xsm_window_for(s->window, m->tab.n), 0) ||
            !(sr->sent = calloc(m->tab.n / 64 + 2, sizeof *sr->sent)) ||
            (!s->collect && !(sr->smin[XSM_EV_MPI] = xsm_smin_new(m->tab.n))) ||
            !(sr->sent_before = calloc(m->tab.n / 64 + 2, sizeof *sr->sent_before)) ||
            (s->collect && (!(sr->depb = calloc(m->tab.n / 64 + 2, sizeof *sr->depb)) ||
                            !(sr->depe = calloc(m->tab.n / 64 + 2, sizeof *sr->depe)))) ||
            (s->h5 && s->win && !s->collect && (!(sr->kmpi = calloc(m->tab.n / 64 + 2, sizeof *sr->kmpi)) ||
                                               !(sr->kmpi_before = calloc(m->tab.n / 64 + 2, sizeof *sr->kmpi_before))))) {
            rc = xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages");
            break;
        }
        sr->out[XSM_EV_MPI].size = sizeof(xsprof_io_mpi);
        sr->mpi_rows = m->tab.n;
        sr->mpi_thread = UINT32_MAX;
        if ((rc = xsm_advance(&c, m)))
            break;
        if (m->has_head)
            c.heap[c.nheap++] = r;
    }
    for (size_t i = c.nheap / 2 + 1; !rc && i-- > 0;)
        xsm_rank_sift(&c, i);
    while (!rc && c.nheap) {
        xsm_mrank *m = &c.m[c.heap[0]];
        xsprof_io_mpi row = m->head;
        uint32_t i = (uint32_t)m->head_key.row;
        if ((rc = xsm_process(&c, m, &row, i, m->head_key.t)) || (rc = c.collect_failed))
            break;
        if ((rc = xsm_advance(&c, m)))
            break;
        if (!m->has_head)
            c.heap[0] = c.heap[--c.nheap];
        xsm_rank_sift(&c, 0);
    }
    if (!rc && c.wo) /* the verdicts still due, before the waits files close */
        rc = xsm_wo_run(&c, INT64_MAX);
    uint64_t open_posts = 0, base = 0;
    for (size_t r = 0; r < n; r++) {
        xsm_mrank *m = &c.m[r];
        xsm_srank *sr = &s->r[r];
        while (!rc && m->nwq) /* the waits held back */
            rc = xsm_cwq_write(&c, (int32_t)r);
        free(m->wq);
        open_posts += m->open_posts;
        if (m->spill && !rc && (fflush(m->spill) != 0 || ferror(m->spill)))
            rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", sr->spill_path, strerror(errno ? errno : EIO));
        if (m->spill)
            fclose(m->spill);
        if (m->cwait && !rc && (fflush(m->cwait) != 0 || ferror(m->cwait)))
            rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", sr->cwait_path, strerror(errno ? errno : EIO));
        if (m->cwait)
            fclose(m->cwait);
        xsm_tab_unprefetch(&m->tab);
        xsm_tab_close(&m->tab);
        xsm_sheap_free(&m->proc);
        xsm_sheap_free(&m->emit);
        free(m->thr);
        free(m->req);
        free(m->numt);
        if (sr->present && !rc) {
            sr->msg_base = base;
            base += sr->nmatched;
            xsm_bits_prefix(sr->sent, sr->sent_before, m->tab.n);
            if (sr->smin[XSM_EV_MPI])
                xsm_smin_finish(sr->smin[XSM_EV_MPI], m->tab.n);
            if (sr->kmpi)
                xsm_bits_prefix(sr->kmpi, sr->kmpi_before, m->tab.n);
            if (xsm_outl_finish(&sr->out[XSM_EV_MPI]))
                rc = xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages");
        }
    }
    c.done = 1;
    if (!rc) {
        for (size_t i = 0; i < c.capcoll; i++)
            if (c.coll[i].live)
                xsm_coll_close(&c, &c.coll[i]);
        rc = c.collect_failed;
        run->ncolls = 0;
        run->clock.violations_before = c.violations;
    }
    if (!rc && s->collect) {
        s->clc_violations = c.violations;
        for (size_t r = 0; r < n && !rc; r++)
            if (s->r[r].dep && fflush(s->r[r].dep) != 0)
                rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", s->r[r].dep_path, strerror(errno ? errno : EIO));
        if (!rc && s->coll_file && fflush(s->coll_file) != 0)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", s->coll_path, strerror(errno ? errno : EIO));
    } else if (!rc && s->clc) {
        /* times corrected by the logical clock: none may be left */
        run->clock.violations_before = s->clc_violations;
        run->clock.violations_after = c.violations;
        run->clock.max_correction_ns = s->clc_max_correction;
        if (c.violations)
            rc = xsm_err_set(err, errlen, "%llu clock violations left after the logical clock",
                             (unsigned long long)c.violations) ? 2 : 2;
    } else if (!rc && (c.violations || run->min_latency_ns)) {
        s->need_clc = 1;
        rc = xsm_err_set(err, errlen, "%llu clock violations after interpolation need the logical clock",
                         (unsigned long long)c.violations) ? 2 : 2;
    }
    if (!rc && !s->collect) {
        run->nmsgs = 0;
        if (xsm_notes(&c, open_posts))
            rc = xsm_err_set(err, errlen, "xsmerge: out of memory while matching messages");
        s->nmsgs = base;
        s->ncolls = c.ncolls;
    }
    xsm_prefetch_stop(pf);
    for (size_t i = 0; i < c.capcoll; i++)
        free(c.coll[i].m);
    free(c.coll);
    xsm_ktab_free(&c.isl);
    xsm_wo_free(c.wo);
    xsm_eager_free(c.eager);
    free(c.pend.e);
    free(c.pend.head);
    free(c.m);
    free(c.heap);
    free(c.comm_ids);
    free(c.comm_present);
    free(c.comm_owner);
    return rc;
}
