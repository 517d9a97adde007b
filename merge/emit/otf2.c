/* merge/emit/otf2.c — trace.otf2: the aligned, matched run as an OTF2
 * archive written through libotf2, for the Score-P tool chain (Vampir,
 * Scalasca). Built only when CMake finds libotf2 (XSPROF_HAVE_OTF2).
 *
 * What those analysers need, and how it is met here:
 * - a location group (process) per rank whose id is the rank, a CPU thread
 *   location per xsprof thread; the rank's MPI thread (the one that began
 *   its first MPI call) is location `rank`, the others (k << 32) | rank;
 * - a COMM_LOCATIONS group (the ranks' MPI locations in rank order) before
 *   the communicators' groups, whose members are then world ranks;
 * - Enter/Leave properly nested per location, every MPI record inside the
 *   Enter/Leave of its call. Each rank's events come from a source in
 *   begin order (the model's or the streamed merge's: the same events), so
 *   a location's Leaves are written lazily, when a later event on it
 *   begins after them (a per-location stack of open calls);
 * - only messages whose both ends are in the trace (analysers wait for
 *   every message they see): unmatched ones are left out, and so are the
 *   collective records of instances that lack members (a crashed rank).
 * A call's message records come with its event: a send's start flow (the
 * row says to whom), a receive's end flow (with its message), an Irecv
 * post's mark (xsm_erank.mark); an Isend's completion record goes into the
 * call open on its thread when its COMPLETION row comes. Regions and
 * metrics are numbered as events first use them (the definitions are
 * written last). Memory: per open location its stack and the records of
 * its open calls, per rank its Isends not completed yet.
 * GPU work goes on ACCELERATOR_STREAM locations (one per device and
 * stream, in an ACCELERATOR location group per rank that the rank's
 * process created), CUDA API calls on their CPU thread, counters as
 * asynchronous metrics on their thread. */
#include "merge/emit/emit.h"
#include "core/record.h" /* kinds of mpi and gpu rows */

#include <otf2/otf2.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* What a call writes besides its Enter/Leave: at its Enter or before its Leave. */
enum { XSM_AT_SEND, XSM_AT_ISEND, XSM_AT_IRECV_REQ, XSM_AT_RECV, XSM_AT_IRECV, XSM_AT_ISEND_DONE };

typedef struct xsm_orec { /* a record written before its call's Leave */
    int64_t t;
    uint32_t what;   /* XSM_AT_RECV, XSM_AT_IRECV, XSM_AT_ISEND_DONE */
    uint32_t frame;  /* its call's place in the location's stack */
    uint64_t id;     /* the message (order among records of one time) */
    int32_t peer;    /* the sender's world rank */
    uint32_t comm;   /* xsprof's id */
    int32_t tag;
    uint64_t bytes, request;
} xsm_orec;

typedef struct xsm_ocomm {
    uint32_t id;                /* xsprof's global communicator id */
    int32_t rank; size_t def;   /* the rank file and row of its definition */
    int32_t *world; uint32_t n; /* members: world ranks in comm rank order */
    int32_t *sorted;            /* (world, comm rank) pairs sorted by world */
} xsm_ocomm;

typedef struct xsm_oreg {
    uint32_t name; /* global name id (its string id); UINT32_MAX: MPI_Init/MPI_Finalize, not in the run */
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
} xsm_oreg;

typedef struct xsm_frame {
    int64_t end;   /* kept inside its parent */
    int64_t t_end; /* as recorded (the call holding a completion) */
    uint32_t region;
    int coll;      /* a complete collective: its records, with these */
    OTF2_CollectiveOp op;
    uint32_t comm, root;
    uint64_t sent, received;
} xsm_frame;

typedef struct xsm_oloc {
    OTF2_EvtWriter *w;
    uint64_t id;
    int64_t last;
    uint64_t nev; /* events written, once its writer is closed */
    xsm_frame *st;
    size_t n, cap;
    size_t lastmpi; /* 1 + the stack place of the latest MPI call entered, 0: left */
    xsm_orec *rec;  /* records of its open calls */
    size_t nrec, caprec;
} xsm_oloc;

typedef struct xsm_oisend { /* an Isend written, until its completion */
    uint64_t request;         /* the key */
    uint64_t id;
} xsm_oisend;

typedef struct xsm_otf2 {
    const xsm_emit *e;
    const xsm_run *run;
    OTF2_Archive *ar;
    OTF2_ErrorCode rc;       /* first libotf2 error */
    int oom;
    uint64_t offset;         /* OTF2 time = offset + ns since t = 0 */
    uint64_t tmin, tmax;     /* first and last time written (clock properties) */
    uint32_t nstr;           /* strings written so far (ids 0..nstr-1) */
    uint32_t *mpi_region;    /* per global name id: region id + 1, 0 none */
    uint32_t *user_region;
    uint32_t *gpu_region;
    uint32_t *metric;        /* per global name id: metric class id + 1, 0 none */
    uint32_t *metric_name;   /* per metric class: its global name id */
    uint32_t nmetrics;
    xsm_oreg *regs; uint32_t nregions;
    xsm_ocomm *comms; size_t ncomms;
    size_t *loc_base;            /* per rank: its first location's index */
    size_t *main_tid;            /* per rank: index of its MPI thread in tids */
    size_t *ncpu;                /* per rank: its CPU thread locations (GPU streams follow) */
    xsm_oloc *locs; size_t nlocs;
    xsm_ktab isends;             /* the rank's xsm_oisend by request */
    uint64_t left_out;           /* matched messages whose receive shows in no call */
} xsm_otf2;

/* libotf2 prints its errors to stderr itself; xsmerge says one line,
 * with the first error libotf2 met (a failed write's "File too large",
 * where the calls that fail after it only say the archive is damaged). */
static OTF2_ErrorCode xsm_otf2_quiet(void *u, const char *file, uint64_t line, const char *fn, OTF2_ErrorCode code,
                                     const char *fmt, va_list va)
{
    (void)file, (void)line, (void)fn, (void)fmt, (void)va;
    OTF2_ErrorCode *first = u;
    if (*first == OTF2_SUCCESS)
        *first = code;
    return code;
}

static void xsm_otf2_chk(xsm_otf2 *x, OTF2_ErrorCode rc)
{
    if (rc != OTF2_SUCCESS && x->rc == OTF2_SUCCESS)
        x->rc = rc;
}

static OTF2_FlushType xsm_otf2_preflush(void *u, OTF2_FileType ft, OTF2_LocationRef loc, void *cb, bool final)
{
    (void)u, (void)ft, (void)loc, (void)cb, (void)final;
    return OTF2_FLUSH;
}

static const OTF2_FlushCallbacks xsm_otf2_flush = {xsm_otf2_preflush, NULL};

/* OTF2 time of t; every time written passes here, so that the clock
 * properties span them all (a --from/--to window keeps rows that overlap
 * it, beyond its ends). */
static uint64_t xsm_otf2_ts(xsm_otf2 *x, int64_t t)
{
    uint64_t ts = x->offset + (uint64_t)(t > 0 ? t : 0);
    if (ts < x->tmin)
        x->tmin = ts;
    if (ts > x->tmax)
        x->tmax = ts;
    return ts;
}

/* A string definition appended after the global names (whose ids are
 * their OTF2 ids). */
static uint32_t xsm_otf2_str(xsm_otf2 *x, OTF2_GlobalDefWriter *g, const char *s)
{
    xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteString(g, x->nstr, s));
    return x->nstr++;
}

/* ---- communicators ------------------------------------------------------ */

static int xsm_pair_cmp(const void *a, const void *b)
{
    const int32_t *p = a, *q = b;
    return (p[0] > q[0]) - (p[0] < q[0]);
}

static int xsm_ocomm_cmp(const void *a, const void *b)
{
    const xsm_ocomm *p = a, *q = b;
    return (p->id > q->id) - (p->id < q->id);
}

/* Every communicator any rank defines, once, by xsprof id. */
static int xsm_otf2_comms(xsm_otf2 *x)
{
    const xsm_run *run = x->run;
    size_t cap = 0;
    for (size_t r = 0; r < run->nranks; r++)
        cap += run->ranks[r].present ? run->ranks[r].d.ncomms : 0;
    x->comms = calloc(cap + 1, sizeof *x->comms);
    if (!x->comms)
        return -1;
    for (size_t r = 0; r < run->nranks; r++) {
        const xsprof_rank_data *d = &run->ranks[r].d;
        for (size_t i = 0; run->ranks[r].present && i < d->ncomms; i++) {
            size_t k = 0;
            while (k < x->ncomms && x->comms[k].id != d->comms[i].id)
                k++;
            if (k < x->ncomms || d->comms[i].members + d->comms[i].size > d->ncomm_members)
                continue;
            xsm_ocomm *c = &x->comms[x->ncomms++];
            c->id = d->comms[i].id;
            c->rank = (int32_t)r;
            c->def = i;
            c->n = d->comms[i].size;
            c->world = malloc((c->n + 1) * sizeof *c->world);
            c->sorted = malloc((2 * (size_t)c->n + 1) * sizeof *c->sorted);
            if (!c->world || !c->sorted)
                return -1;
            for (uint32_t j = 0; j < c->n; j++) {
                c->world[j] = d->comm_members[d->comms[i].members + j];
                c->sorted[2 * j] = c->world[j];
                c->sorted[2 * j + 1] = (int32_t)j;
            }
            qsort(c->sorted, c->n, 2 * sizeof *c->sorted, xsm_pair_cmp);
        }
    }
    qsort(x->comms, x->ncomms, sizeof *x->comms, xsm_ocomm_cmp);
    return 0;
}

/* Index of xsprof communicator `id` (its OTF2 id), or ncomms. */
static size_t xsm_otf2_comm(const xsm_otf2 *x, uint32_t id)
{
    xsm_ocomm key = {.id = id};
    const xsm_ocomm *c = x->ncomms ? bsearch(&key, x->comms, x->ncomms, sizeof *x->comms, xsm_ocomm_cmp) : NULL;
    return c ? (size_t)(c - x->comms) : x->ncomms;
}

/* World rank -> rank in communicator c (OTF2 names peers so); UINT32_MAX
 * when not a member. */
static uint32_t xsm_otf2_comm_rank(const xsm_otf2 *x, size_t c, int32_t world)
{
    if (c >= x->ncomms || world < 0)
        return OTF2_UNDEFINED_UINT32;
    const xsm_ocomm *m = &x->comms[c];
    int32_t key[2] = {world, 0};
    const int32_t *p = bsearch(key, m->sorted, m->n, 2 * sizeof *m->sorted, xsm_pair_cmp);
    return p ? (uint32_t)p[1] : OTF2_UNDEFINED_UINT32;
}

/* ---- regions -------------------------------------------------------------- */

static OTF2_CollectiveOp xsm_otf2_coll_op(const char *name, int *ok)
{
    static const struct { const char *name; OTF2_CollectiveOp op; } t[] = {
        {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},     {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
        {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},       {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
        {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},     {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
        {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER}, {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
        {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},   {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
        {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW}, {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
        {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},       {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
        {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},           {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
        {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].name) == 0) {
            *ok = 1;
            return t[i].op;
        }
    *ok = 0;
    return OTF2_COLLECTIVE_OP_BARRIER;
}

/* The region role Score-P gives an MPI function of this kind. */
static OTF2_RegionRole xsm_otf2_role(const xsprof_io_mpi *m)
{
    switch (m->kind) {
    case XSPROF_MPI_SEND: case XSPROF_MPI_SSEND: case XSPROF_MPI_RECV: case XSPROF_MPI_ISEND: case XSPROF_MPI_IRECV:
    case XSPROF_MPI_SENDRECV: case XSPROF_MPI_WAIT:
        return OTF2_REGION_ROLE_POINT2POINT;
    case XSPROF_MPI_COLL: case XSPROF_MPI_ICOLL:
        switch (m->coll) {
        case XSPROF_COLL_BARRIER: return OTF2_REGION_ROLE_BARRIER;
        case XSPROF_COLL_NXN: return OTF2_REGION_ROLE_COLL_ALL2ALL;
        case XSPROF_COLL_ONE2N: return OTF2_REGION_ROLE_COLL_ONE2ALL;
        case XSPROF_COLL_N2ONE: return OTF2_REGION_ROLE_COLL_ALL2ONE;
        default: return OTF2_REGION_ROLE_COLL_OTHER;
        }
    case XSPROF_MPI_RMA: return OTF2_REGION_ROLE_RMA;
    case XSPROF_MPI_IO: return OTF2_REGION_ROLE_FILE_IO;
    default: return OTF2_REGION_ROLE_FUNCTION;
    }
}

/* Region definitions, written with the definitions. */
static int xsm_otf2_region_add(xsm_otf2 *x, uint32_t gid, OTF2_RegionRole role, OTF2_Paradigm par)
{
    if ((x->nregions & (x->nregions - 1)) == 0 && x->nregions >= 2) {
        xsm_oreg *p = realloc(x->regs, 2 * (size_t)x->nregions * sizeof *p);
        if (!p)
            return -1;
        x->regs = p;
    }
    x->regs[x->nregions++] = (xsm_oreg){gid, role, par};
    return 0;
}

static OTF2_RegionRole xsm_otf2_gpu_role(uint32_t kind)
{
    return kind >= XSPROF_GPU_MEMCPY_HTOD && kind <= XSPROF_GPU_MEMSET ? OTF2_REGION_ROLE_DATA_TRANSFER
                                                                        : OTF2_REGION_ROLE_FUNCTION;
}

/* The region of name gid among ids (x->mpi_region, user_region or
 * gpu_region), numbered at its first use; MPI_Init and MPI_Finalize are
 * always 0 and 1 (Scalasca looks for them, in the run or not). */
static uint32_t xsm_otf2_region(xsm_otf2 *x, uint32_t *ids, uint32_t gid, OTF2_RegionRole role, OTF2_Paradigm par)
{
    if (ids[gid])
        return ids[gid] - 1;
    const char *name = x->e->names.str[gid];
    int fixed = par != OTF2_PARADIGM_MPI ? -1 : strcmp(name, "MPI_Init") == 0 ? 0 : strcmp(name, "MPI_Finalize") == 0 ? 1 : -1;
    if (fixed >= 0)
        x->regs[fixed].name = gid;
    else if (xsm_otf2_region_add(x, gid, role, par))
        x->oom = 1;
    ids[gid] = fixed >= 0 ? (uint32_t)fixed + 1 : x->nregions;
    return ids[gid] - 1;
}

/* The metric class of counter name gid, numbered at its first use. */
static uint32_t xsm_otf2_metric(xsm_otf2 *x, uint32_t gid)
{
    if (!x->metric[gid]) {
        x->metric_name[x->nmetrics++] = gid;
        x->metric[gid] = x->nmetrics;
    }
    return x->metric[gid] - 1;
}

static void xsm_otf2_regions_write(xsm_otf2 *x, OTF2_GlobalDefWriter *g)
{
    uint32_t mpi_file = xsm_otf2_str(x, g, "MPI"), none = xsm_otf2_str(x, g, "");
    static const char *const fixed[] = {"MPI_Init", "MPI_Finalize"};
    for (uint32_t i = 0; i < x->nregions; i++) {
        const xsm_oreg *q = &x->regs[i];
        uint32_t name = q->name != UINT32_MAX ? q->name : xsm_otf2_str(x, g, fixed[i]);
        int mpi = q->paradigm == OTF2_PARADIGM_MPI;
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteRegion(g, i, name, name, none, q->role, q->paradigm,
                                                         OTF2_REGION_FLAG_NONE, mpi ? mpi_file : none, 0, 0));
    }
}

/* ---- events ---------------------------------------------------------------- */

static uint64_t xsm_otf2_loc_id(size_t k, int32_t rank)
{
    return (uint64_t)k << 32 | (uint32_t)rank;
}

/* Location index of thread index ti of rank r: the MPI thread is the
 * rank's first location (also for a thread the rank does not list). */
static size_t xsm_otf2_loc(const xsm_otf2 *x, int32_t r, size_t ti)
{
    size_t m = x->main_tid[r];
    if (ti >= x->ncpu[r])
        ti = m;
    return x->loc_base[r] + (ti == m ? 0 : ti < m ? ti + 1 : ti);
}

/* A receive or an Isend's completion (a send's records are written at its Enter). */
static void xsm_otf2_rec_write(xsm_otf2 *x, xsm_oloc *L, const xsm_orec *a, uint64_t ts)
{
    size_t c = xsm_otf2_comm(x, a->comm);
    if (a->what == XSM_AT_ISEND_DONE)
        xsm_otf2_chk(x, OTF2_EvtWriter_MpiIsendComplete(L->w, NULL, ts, a->request));
    else if (a->what == XSM_AT_IRECV)
        xsm_otf2_chk(x, OTF2_EvtWriter_MpiIrecv(L->w, NULL, ts, xsm_otf2_comm_rank(x, c, a->peer), (OTF2_CommRef)c,
                                                (uint32_t)a->tag, a->bytes, a->request));
    else
        xsm_otf2_chk(x, OTF2_EvtWriter_MpiRecv(L->w, NULL, ts, xsm_otf2_comm_rank(x, c, a->peer), (OTF2_CommRef)c,
                                               (uint32_t)a->tag, a->bytes));
}

static int xsm_orec_cmp(const void *a, const void *b)
{
    const xsm_orec *p = a, *q = b;
    if (p->t != q->t) return p->t < q->t ? -1 : 1;
    if (p->what != q->what) return p->what < q->what ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static void xsm_otf2_rec_add(xsm_otf2 *x, xsm_oloc *L, const xsm_orec *a)
{
    if (xsm_grow((void **)&L->rec, &L->caprec, L->nrec, sizeof *L->rec))
        x->oom = 1;
    else
        L->rec[L->nrec++] = *a;
}

/* Leave the innermost open call of L, with what it completed before. */
static void xsm_otf2_leave(xsm_otf2 *x, xsm_oloc *L)
{
    size_t at = --L->n;
    const xsm_frame *f = &L->st[at];
    if (L->lastmpi == at + 1)
        L->lastmpi = 0;
    /* its records to the end (those of the calls inside it left with them) */
    size_t k = 0;
    for (size_t i = 0; i < L->nrec; i++)
        if (L->rec[i].frame != at) {
            xsm_orec t = L->rec[k];
            L->rec[k++] = L->rec[i];
            L->rec[i] = t;
        }
    if (L->nrec - k > 1)
        qsort(L->rec + k, L->nrec - k, sizeof *L->rec, xsm_orec_cmp);
    for (size_t i = k; i < L->nrec; i++) {
        int64_t t = L->rec[i].t < L->last ? L->last : L->rec[i].t > f->end ? f->end : L->rec[i].t;
        L->last = t;
        xsm_otf2_rec_write(x, L, &L->rec[i], xsm_otf2_ts(x, t));
    }
    L->nrec = k;
    if (f->coll)
        xsm_otf2_chk(x, OTF2_EvtWriter_MpiCollectiveEnd(L->w, NULL, xsm_otf2_ts(x, f->end), f->op, (OTF2_CommRef)f->comm,
                                                        f->root, f->sent, f->received));
    if (f->end > L->last)
        L->last = f->end;
    xsm_otf2_chk(x, OTF2_EvtWriter_Leave(L->w, NULL, xsm_otf2_ts(x, L->last), f->region));
}

/* Enter a region or call at t on L, after leaving what ended before: its
 * frame (filled in by the caller), NULL out of memory. */
static xsm_frame *xsm_otf2_enter(xsm_otf2 *x, xsm_oloc *L, int64_t t, int64_t end, uint32_t region)
{
    while (L->n && L->st[L->n - 1].end <= t)
        xsm_otf2_leave(x, L);
    int64_t t_end = end;
    if (L->n && end > L->st[L->n - 1].end)
        end = L->st[L->n - 1].end; /* kept nested: an overlap ends with its parent */
    if (xsm_grow((void **)&L->st, &L->cap, L->n, sizeof *L->st)) {
        x->oom = 1;
        return NULL;
    }
    if (t < L->last)
        t = L->last;
    if (end < t)
        end = t;
    L->last = t;
    xsm_frame *f = &L->st[L->n++];
    *f = (xsm_frame){.end = end, .t_end = t_end, .region = region};
    xsm_otf2_chk(x, OTF2_EvtWriter_Enter(L->w, NULL, xsm_otf2_ts(x, t), region));
    return f;
}

/* An MPI call: its Enter, the records written there (sends, an Irecv's
 * request, a collective's begin) and those it writes before its Leave
 * (the receives it shows). */
static void xsm_otf2_call(xsm_otf2 *x, int32_t r, const xsm_ev *ev)
{
    const xsm_emit *e = x->e;
    const xsm_erank *er = &e->ranks[r];
    const xsprof_io_mpi *m = ev->rec;
    xsm_oloc *L = &x->locs[xsm_otf2_loc(x, r, xsm_emit_tid_index(er, m->thread))];
    uint32_t gid = xsm_emit_gid(e, r, m->op);
    xsm_frame *f = xsm_otf2_enter(x, L, m->t_begin, m->t_end,
                                  xsm_otf2_region(x, x->mpi_region, gid, xsm_otf2_role(m), OTF2_PARADIGM_MPI));
    if (!f)
        return;
    size_t at = L->n - 1;
    L->lastmpi = L->n;
    uint64_t ts = xsm_otf2_ts(x, L->last);
    int isend = m->kind == XSPROF_MPI_ISEND, sent = 0;
    size_t c = xsm_otf2_comm(x, m->comm);
    for (size_t k = 0; k < ev->nmflows; k++) {
        const xsm_evflow *fl = &ev->mflows[k];
        if (fl->out) {
            if (xsm_mark_get(er, XSM_MARK_SEND_HIDDEN, ev->row)) {
                x->left_out++;
                continue;
            }
            uint32_t to = xsm_otf2_comm_rank(x, c, m->peer);
            sent = 1;
            if (!isend) {
                xsm_otf2_chk(x, OTF2_EvtWriter_MpiSend(L->w, NULL, ts, to, (OTF2_CommRef)c, (uint32_t)m->tag,
                                                       m->bytes_sent));
                continue;
            }
            xsm_otf2_chk(x, OTF2_EvtWriter_MpiIsend(L->w, NULL, ts, to, (OTF2_CommRef)c, (uint32_t)m->tag,
                                                    m->bytes_sent, m->request));
            xsm_oisend *p = xsm_ktab_get(&x->isends, m->request);
            if (!p)
                x->oom = 1;
            else
                p->id = fl->id;
            continue;
        }
        /* a receive: at its completion, or (posted by no Irecv) at the call's end */
        xsm_orec a = {fl->posted ? fl->t : m->t_end, fl->posted ? XSM_AT_IRECV : XSM_AT_RECV, (uint32_t)at, fl->id,
                      fl->peer, fl->comm, fl->tag, fl->bytes, fl->request};
        xsm_otf2_rec_add(x, L, &a);
    }
    /* a request posted again: its earlier Isend was completed or never will be */
    if (m->request && !sent && (isend || m->kind == XSPROF_MPI_IRECV || m->kind == XSPROF_MPI_ICOLL)) {
        xsm_oisend *p = xsm_ktab_find(&x->isends, m->request);
        if (p)
            xsm_ktab_del(&x->isends, p);
    }
    if (m->kind == XSPROF_MPI_IRECV && xsm_mark_get(er, XSM_MARK_RECV_POST, ev->row))
        xsm_otf2_chk(x, OTF2_EvtWriter_MpiIrecvRequest(L->w, NULL, ts, m->request));
    int ok = 0;
    if (m->kind == XSPROF_MPI_COLL && xsm_mark_get(er, XSM_MARK_COLL_WHOLE, ev->row))
        f->op = xsm_otf2_coll_op(xsm_emit_str(e, r, m->op), &ok);
    if (!ok)
        return;
    f->coll = 1;
    f->comm = (uint32_t)c;
    f->root = m->coll == XSPROF_COLL_ONE2N || m->coll == XSPROF_COLL_N2ONE ? xsm_otf2_comm_rank(x, c, m->root)
                                                                           : OTF2_UNDEFINED_UINT32;
    f->sent = m->bytes_sent;
    f->received = m->bytes_recv;
    xsm_otf2_chk(x, OTF2_EvtWriter_MpiCollectiveBegin(L->w, NULL, ts));
}

/* A COMPLETION row: an Isend the trace has completes in the call of its
 * thread that holds it (the latest begun, not ended before it). */
static void xsm_otf2_completion(xsm_otf2 *x, int32_t r, const xsprof_io_mpi *m)
{
    if (m->flags & XSPROF_MPI_F_RECV)
        return;
    xsm_oisend *p = xsm_ktab_find(&x->isends, m->request);
    if (!p)
        return;
    uint64_t id = p->id;
    xsm_ktab_del(&x->isends, p);
    xsm_oloc *L = &x->locs[xsm_otf2_loc(x, r, xsm_emit_tid_index(&x->e->ranks[r], m->thread))];
    if (!L->lastmpi || L->st[L->lastmpi - 1].t_end < m->t_begin)
        return;
    xsm_orec a = {m->t_end, XSM_AT_ISEND_DONE, (uint32_t)(L->lastmpi - 1), id, -1, 0, 0, 0, m->request};
    xsm_otf2_rec_add(x, L, &a);
}

/* Rank r's events from the source, in begin order: only its locations'
 * writers are open meanwhile, since libotf2 holds a chunk of events in
 * memory per open writer. */
static int xsm_otf2_rank(xsm_otf2 *x, const xsm_src_ops *src, size_t r, char *err, size_t errlen)
{
    const xsm_emit *e = x->e;
    const xsm_erank *er = &e->ranks[r];
    size_t lo = x->loc_base[r], hi = r + 1 < x->run->nranks ? x->loc_base[r + 1] : x->nlocs;
    for (size_t i = lo; i < hi && x->rc == OTF2_SUCCESS; i++)
        if (!(x->locs[i].w = OTF2_Archive_GetEvtWriter(x->ar, x->locs[i].id)))
            xsm_otf2_chk(x, OTF2_ERROR_MEM_FAULT);
    void *s = x->rc == OTF2_SUCCESS && x->run->ranks[r].present ? src->open(e, r, err, errlen) : NULL;
    if (x->rc == OTF2_SUCCESS && x->run->ranks[r].present && !s)
        return 1;
    xsm_ev ev;
    int got = 0;
    while (s && !x->oom && x->rc == OTF2_SUCCESS && (got = src->next(s, &ev)) > 0) {
        int32_t rk = (int32_t)r;
        if (ev.kind == XSM_EV_REGION) {
            const xsprof_io_region *g = ev.rec;
            uint32_t reg = xsm_otf2_region(x, x->user_region, xsm_emit_gid(e, rk, g->name), OTF2_REGION_ROLE_FUNCTION,
                                           OTF2_PARADIGM_USER);
            xsm_otf2_enter(x, &x->locs[xsm_otf2_loc(x, rk, xsm_emit_tid_index(er, g->thread))], g->t_begin, g->t_end,
                           reg);
        } else if (ev.kind == XSM_EV_MPI) {
            const xsprof_io_mpi *m = ev.rec;
            if (m->kind == XSPROF_MPI_COMPLETION)
                xsm_otf2_completion(x, rk, m);
            else
                xsm_otf2_call(x, rk, &ev);
        } else if (ev.kind == XSM_EV_GPU) {
            const xsprof_io_gpu *g = ev.rec;
            uint32_t reg = xsm_otf2_region(x, x->gpu_region, xsm_emit_gid(e, rk, g->name), xsm_otf2_gpu_role(g->kind),
                                           OTF2_PARADIGM_CUDA);
            size_t li = g->kind == XSPROF_GPU_API ? xsm_otf2_loc(x, rk, xsm_emit_tid_index(er, g->thread))
                                                  : x->loc_base[rk] + x->ncpu[rk] +
                                                        xsm_emit_gpu_index(er, g->device, g->stream);
            xsm_otf2_enter(x, &x->locs[li], g->t_begin, g->t_end, reg);
        } else if (ev.kind == XSM_EV_COUNTER) {
            const xsprof_io_counter *c = ev.rec;
            xsm_oloc *L = &x->locs[xsm_otf2_loc(x, rk, xsm_emit_tid_index(er, c->thread))];
            while (L->n && L->st[L->n - 1].end <= c->t)
                xsm_otf2_leave(x, L);
            if (c->t > L->last)
                L->last = c->t;
            OTF2_Type type = OTF2_TYPE_DOUBLE;
            OTF2_MetricValue v = {.floating_point = c->value};
            xsm_otf2_chk(x, OTF2_EvtWriter_Metric(L->w, NULL, xsm_otf2_ts(x, L->last),
                                                  xsm_otf2_metric(x, xsm_emit_gid(e, rk, c->name)), 1, &type, &v));
        }
    }
    int failed = s && (src->close(s, err, errlen) || got < 0);
    if (failed && !err[0])
        xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.otf2");
    xsm_ktab_free(&x->isends);
    for (size_t i = lo; i < hi; i++) {
        xsm_oloc *L = &x->locs[i];
        while (L->n && x->rc == OTF2_SUCCESS && !failed)
            xsm_otf2_leave(x, L);
        if (L->w) {
            xsm_otf2_chk(x, OTF2_EvtWriter_GetNumberOfEvents(L->w, &L->nev));
            xsm_otf2_chk(x, OTF2_Archive_CloseEvtWriter(x->ar, L->w));
            L->w = NULL;
        }
        free(L->st);
        free(L->rec);
        L->st = NULL;
        L->rec = NULL;
        L->n = L->cap = L->nrec = L->caprec = 0;
    }
    if (failed)
        return 1;
    return x->oom ? xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.otf2") : 0;
}

/* ---- definitions ------------------------------------------------------------ */

static void xsm_otf2_defs(xsm_otf2 *x, OTF2_GlobalDefWriter *g)
{
    const xsm_run *run = x->run;
    const xsm_emit *e = x->e;
    uint64_t first = x->tmin <= x->tmax ? x->tmin : x->offset;
    xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, first,
                                                              (x->tmin <= x->tmax ? x->tmax - first : 0) + 1,
                                                              OTF2_UNDEFINED_TIMESTAMP));
    for (uint32_t i = 0; i < e->names.n; i++)
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteString(g, i, e->names.str[i]));
    x->nstr = e->names.n;
    /* system tree: the machine, one node per host */
    uint32_t node_class = xsm_otf2_str(x, g, "node");
    xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, xsm_otf2_str(x, g, "xsprof run"),
                                                             xsm_otf2_str(x, g, "machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE));
    uint32_t *node = calloc(run->nranks + 1, sizeof *node);
    if (!node) {
        x->oom = 1;
        return;
    }
    uint32_t nnodes = 1;
    for (size_t r = 0; r < run->nranks; r++) {
        const char *host = run->ranks[r].d.host[0] ? run->ranks[r].d.host : "unknown host";
        size_t q = 0;
        while (q < r && strcmp(run->ranks[q].d.host[0] ? run->ranks[q].d.host : "unknown host", host) != 0)
            q++;
        if (q < r) {
            node[r] = node[q];
            continue;
        }
        node[r] = nnodes++;
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(g, node[r], xsm_otf2_str(x, g, host), node_class, 0));
    }
    char buf[96];
    for (size_t r = 0; r < run->nranks; r++) {
        snprintf(buf, sizeof buf, "rank %zu", r);
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)r, xsm_otf2_str(x, g, buf),
                                                                OTF2_LOCATION_GROUP_TYPE_PROCESS, node[r],
                                                                OTF2_UNDEFINED_LOCATION_GROUP));
    }
    for (size_t r = 0; r < run->nranks; r++) {
        if (!run->ranks[r].present || !e->ranks[r].ngpu)
            continue;
        snprintf(buf, sizeof buf, "rank %zu GPU", r);
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteLocationGroup(g, (OTF2_LocationGroupRef)(run->nranks + r),
                                                                xsm_otf2_str(x, g, buf),
                                                                OTF2_LOCATION_GROUP_TYPE_ACCELERATOR, node[r],
                                                                (OTF2_LocationGroupRef)r));
    }
    free(node);
    for (size_t r = 0; r < run->nranks; r++) {
        const xsm_erank *er = &e->ranks[r];
        size_t n = x->ncpu[r];
        for (size_t j = 0; run->ranks[r].present && j < er->ngpu; j++) {
            const xsm_oloc *L = &x->locs[x->loc_base[r] + n + j];
            snprintf(buf, sizeof buf, "GPU %u stream %u", er->gpu[j].device, er->gpu[j].stream);
            xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteLocation(g, L->id, xsm_otf2_str(x, g, buf),
                                                               OTF2_LOCATION_TYPE_ACCELERATOR_STREAM, L->nev,
                                                               (OTF2_LocationGroupRef)(run->nranks + r)));
        }
        for (size_t ti = 0; ti < n; ti++) {
            const xsm_oloc *L = &x->locs[xsm_otf2_loc(x, (int32_t)r, ti)];
            uint32_t name;
            if (ti < er->ntids && er->tid_names && er->tid_names[ti] != UINT32_MAX) {
                name = er->tid_names[ti];
            } else {
                snprintf(buf, sizeof buf, "rank %zu thread %u", r, ti < er->ntids ? er->tids[ti] : 0);
                name = xsm_otf2_str(x, g, buf);
            }
            xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteLocation(g, L->id, name, OTF2_LOCATION_TYPE_CPU_THREAD, L->nev,
                                                               (OTF2_LocationGroupRef)r));
        }
    }
    xsm_otf2_regions_write(x, g);
    for (uint32_t i = 0; i < x->nmetrics; i++) {
        uint32_t none = xsm_otf2_str(x, g, "");
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteMetricMember(g, i, x->metric_name[i], none, OTF2_METRIC_TYPE_OTHER,
                                                               OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_DOUBLE,
                                                               OTF2_BASE_DECIMAL, 0, none));
        OTF2_MetricMemberRef mm = i;
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteMetricClass(g, i, 1, &mm, OTF2_METRIC_ASYNCHRONOUS,
                                                              OTF2_RECORDER_KIND_ABSTRACT));
    }
    /* COMM_LOCATIONS first: the communicators' groups index into it */
    uint64_t *mem = malloc((run->nranks + 1) * sizeof *mem);
    if (!mem) {
        x->oom = 1;
        return;
    }
    for (size_t r = 0; r < run->nranks; r++)
        mem[r] = xsm_otf2_loc_id(0, (int32_t)r);
    uint32_t none = xsm_otf2_str(x, g, "");
    xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteGroup(g, 0, none, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                                    OTF2_GROUP_FLAG_NONE, (uint32_t)run->nranks, mem));
    free(mem);
    for (size_t c = 0; c < x->ncomms; c++) {
        const xsm_ocomm *k = &x->comms[c];
        uint64_t *gm = malloc(((size_t)k->n + 1) * sizeof *gm);
        if (!gm) {
            x->oom = 1;
            return;
        }
        for (uint32_t j = 0; j < k->n; j++)
            gm[j] = (uint64_t)k->world[j];
        xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteGroup(g, (OTF2_GroupRef)(c + 1), none, OTF2_GROUP_TYPE_COMM_GROUP,
                                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, k->n, gm));
        free(gm);
    }
    /* a parent before its children: readers (python3-otf2, otf2-print)
     * reject a parent defined later (MPI_Comm_split's comm of a comm made
     * after it was numbered); a chain that loops back ends undefined */
    unsigned char *st = calloc(x->ncomms + 1, 1); /* 1 on the chain being written, 2 written */
    size_t *chain = malloc((x->ncomms + 1) * sizeof *chain);
    if (!st || !chain) {
        free(st);
        free(chain);
        x->oom = 1;
        return;
    }
    for (size_t c0 = 0; c0 < x->ncomms; c0++) {
        size_t n = 0;
        for (size_t c = c0; c < x->ncomms && !st[c];) {
            st[c] = 1;
            chain[n++] = c;
            const xsm_ocomm *k = &x->comms[c];
            c = xsm_otf2_comm(x, run->ranks[k->rank].d.comms[k->def].parent);
        }
        while (n--) {
            size_t c = chain[n];
            const xsm_ocomm *k = &x->comms[c];
            const xsprof_io_comm *def = &run->ranks[k->rank].d.comms[k->def];
            size_t parent = xsm_otf2_comm(x, def->parent);
            xsm_otf2_chk(x, OTF2_GlobalDefWriter_WriteComm(g, (OTF2_CommRef)c, xsm_emit_gid(e, k->rank, def->name),
                                                           (OTF2_GroupRef)(c + 1),
                                                           parent < x->ncomms && st[parent] == 2 ? (OTF2_CommRef)parent
                                                                                                 : OTF2_UNDEFINED_COMM,
                                                           OTF2_COMM_FLAG_NONE));
            st[c] = 2;
        }
    }
    free(st);
    free(chain);
}

/* ---- the archive ---------------------------------------------------------- */

static int xsm_otf2_prepare(xsm_otf2 *x)
{
    const xsm_run *run = x->run;
    const xsm_emit *e = x->e;
    size_t n = run->nranks + 1;
    x->mpi_region = calloc(e->names.n + 1, sizeof *x->mpi_region);
    x->user_region = calloc(e->names.n + 1, sizeof *x->user_region);
    x->gpu_region = calloc(e->names.n + 1, sizeof *x->gpu_region);
    x->metric = calloc(e->names.n + 1, sizeof *x->metric);
    x->metric_name = calloc(e->names.n + 1, sizeof *x->metric_name);
    x->ncpu = calloc(n, sizeof *x->ncpu);
    x->loc_base = calloc(n, sizeof *x->loc_base);
    x->main_tid = calloc(n, sizeof *x->main_tid);
    x->regs = malloc(2 * sizeof *x->regs);
    if (!x->mpi_region || !x->user_region || !x->gpu_region || !x->metric || !x->metric_name || !x->ncpu ||
        !x->loc_base || !x->main_tid || !x->regs)
        return -1;
    x->regs[0] = (xsm_oreg){UINT32_MAX, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI}; /* MPI_Init */
    x->regs[1] = (xsm_oreg){UINT32_MAX, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI}; /* MPI_Finalize */
    x->nregions = 2;
    x->isends.size = sizeof(xsm_oisend);
    for (size_t r = 0; r < run->nranks; r++) {
        const xsm_erank *er = &e->ranks[r];
        x->loc_base[r] = x->nlocs;
        x->ncpu[r] = run->ranks[r].present && er->ntids ? er->ntids : 1;
        x->nlocs += x->ncpu[r] + (run->ranks[r].present ? er->ngpu : 0);
        if (er->mpi_thread != UINT32_MAX)
            x->main_tid[r] = xsm_emit_tid_index(er, er->mpi_thread);
    }
    x->locs = calloc(x->nlocs + 1, sizeof *x->locs);
    if (!x->locs)
        return -1;
    for (size_t r = 0; r < run->nranks; r++)
        for (size_t k = 0; k < (r + 1 < run->nranks ? x->loc_base[r + 1] : x->nlocs) - x->loc_base[r]; k++)
            x->locs[x->loc_base[r] + k].id = xsm_otf2_loc_id(k, (int32_t)r);
    if (xsm_otf2_comms(x))
        return -1;
    x->offset = run->t0_ref_ns > 0 ? (uint64_t)run->t0_ref_ns : 0;
    x->tmin = UINT64_MAX;
    return 0;
}

static void xsm_otf2_free(xsm_otf2 *x)
{
    for (size_t c = 0; x->comms && c < x->ncomms; c++) {
        free(x->comms[c].world);
        free(x->comms[c].sorted);
    }
    free(x->comms);
    for (size_t i = 0; x->locs && i < x->nlocs; i++) {
        free(x->locs[i].st);
        free(x->locs[i].rec);
    }
    free(x->locs);
    xsm_ktab_free(&x->isends);
    free(x->loc_base);
    free(x->main_tid);
    free(x->mpi_region);
    free(x->user_region);
    free(x->gpu_region);
    free(x->metric);
    free(x->metric_name);
    free(x->ncpu);
    free(x->regs);
}

int xsm_emit_otf2(const xsm_emit *e, const xsm_src_ops *src, const char *dir, FILE *notes, char *err, size_t errlen)
{
    xsm_otf2 x;
    memset(&x, 0, sizeof x);
    x.e = e;
    x.run = e->run;
    int rc = 0;
    if (xsm_otf2_prepare(&x)) {
        xsm_otf2_free(&x);
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.otf2");
    }
    OTF2_ErrorCode first = OTF2_SUCCESS;
    OTF2_ErrorCallback before = OTF2_Error_RegisterCallback(xsm_otf2_quiet, &first);
    x.ar = OTF2_Archive_Open(dir, "trace", OTF2_FILEMODE_WRITE, OTF2_CHUNK_SIZE_EVENTS_DEFAULT,
                             OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!x.ar) {
        OTF2_Error_RegisterCallback(before, NULL);
        xsm_otf2_free(&x);
        return xsm_err_set(err, errlen, "xsmerge: %s/trace.otf2: cannot create the archive: %s", dir,
                           OTF2_Error_GetDescription(first));
    }
    xsm_otf2_chk(&x, OTF2_Archive_SetFlushCallbacks(x.ar, &xsm_otf2_flush, NULL));
    xsm_otf2_chk(&x, OTF2_Archive_SetSerialCollectiveCallbacks(x.ar));
    xsm_otf2_chk(&x, OTF2_Archive_SetCreator(x.ar, "xsmerge"));
    xsm_otf2_chk(&x, OTF2_Archive_OpenEvtFiles(x.ar));
    if (errlen)
        err[0] = 0;
    for (size_t r = 0; r < x.run->nranks && x.rc == OTF2_SUCCESS && !rc; r++)
        rc = xsm_otf2_rank(&x, src, r, err, errlen);
    for (size_t i = 0; i < x.nlocs; i++)
        if (x.locs[i].w) /* after a failure */
            OTF2_Archive_CloseEvtWriter(x.ar, x.locs[i].w);
    xsm_otf2_chk(&x, OTF2_Archive_CloseEvtFiles(x.ar));
    /* the local definition files: empty, every id is global */
    xsm_otf2_chk(&x, OTF2_Archive_OpenDefFiles(x.ar));
    for (size_t i = 0; i < x.nlocs && x.rc == OTF2_SUCCESS; i++) {
        OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(x.ar, x.locs[i].id);
        xsm_otf2_chk(&x, dw ? OTF2_Archive_CloseDefWriter(x.ar, dw) : OTF2_ERROR_MEM_FAULT);
    }
    xsm_otf2_chk(&x, OTF2_Archive_CloseDefFiles(x.ar));
    OTF2_GlobalDefWriter *g = x.rc == OTF2_SUCCESS && !rc ? OTF2_Archive_GetGlobalDefWriter(x.ar) : NULL;
    if (g)
        xsm_otf2_defs(&x, g);
    if (x.oom && !rc)
        rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.otf2");
    xsm_otf2_chk(&x, OTF2_Archive_Close(x.ar));
    if (x.rc != OTF2_SUCCESS && !rc)
        rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.otf2: %s", dir,
                         OTF2_Error_GetDescription(first != OTF2_SUCCESS ? first : x.rc));
    OTF2_Error_RegisterCallback(before, NULL);
    /* analysers wait for every message and member they see: a message
     * left out has two ends */
    const xsm_run *run = x.run;
    uint64_t out = 2 * x.left_out + run->unmatched_sends + run->unmatched_recvs;
    if (!rc && notes && (out || run->incomplete_colls))
        fprintf(notes, "xsmerge: note: trace.otf2 leaves out %llu message end(s) without their other end and the "
                "collective records of %zu incomplete collective(s) (a rank that died, a message never received): "
                "analysers wait for every message and member they see\n", (unsigned long long)out,
                run->incomplete_colls);
    xsm_otf2_free(&x);
    return rc;
}
