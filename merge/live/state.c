/* merge/live/state.c — the followed job: one journal follower per rank
 * (io/journal_read.c), the rows each look brings fed to the analysis engine
 * (merge/analyze/sprofile.c, through xsm_sanalysis_rank_sync and the same
 * entry points as feed.c), blocking collectives matched as their members
 * come so that their waits (collwait.c's rules) reach the engine before
 * their calls, and the per-second series the page draws. Owner: merge live
 * view. Reads RUN_DIR only; never writes there. */
#include "merge/live/live.h"
#include "merge/align/align.h"
#include "merge/emit/emit.h"
#include "io/journal_read.h"
#include "core/journal.h"
#include "core/record.h"

#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rows of a rank are fed in order of begin. A row is written at its end:
 * an enclosing region comes after the regions it holds (it is put before
 * them as it comes: an insertion from the back, which only passes over its
 * own descendants still held), and another thread's rows may come a little
 * later. The engine sees a rank's rows HOLD_NS behind its newest end. */
#define HOLD_NS 100000000LL
/* A collective whose members do not all come within this many looks (a
 * rank that never starts, or died) is fed without its waits. */
#define COLL_PATIENCE 10
/* A blocking receive waits this long (its rank's time) for its send's row
 * before it is fed without it (the sender died or has not started). */
#define SEND_PATIENCE_NS 5000000000LL
/* Looks a journal's heartbeat may miss before its rank counts as ended. */
#define DEAD_LOOKS 3

/* Held rows, per table (each comes in blocks of its own), fed in order of
 * begin. An MPI row carries its row index (the engine's key for waits).
 * Rows come at their end: most begin after the rows before them and are
 * appended; one that begins earlier (an enclosing region, after all it
 * encloses) goes to the table's short list of late rows, kept in order of
 * begin, and feeding merges the two. Inserting it among the held rows
 * moved all it encloses, 10 % of the reader (a step region around 2500). */
enum { QR, QM, QE, QG, NQ };
typedef struct lqueue { /* a ring: rows held are [v0, n), row i at i mod cap (a power of two) */
    unsigned char *v;
    size_t v0, n, cap;
} lqueue;
typedef struct lmpi {
    xsprof_io_mpi m;
    uint64_t row;
} lmpi;
static const size_t q_size[NQ] = {sizeof(xsprof_io_region), sizeof(lmpi), sizeof(xsprof_io_mem),
                                  sizeof(xsprof_io_gpu)};
/* A row's begin: every table's row starts with its int64 begin time
 * (xsprof_io_mem's t). */
static int64_t q_tb(const void *row)
{
    int64_t t;
    memcpy(&t, row, sizeof t);
    return t;
}

typedef struct lrank {
    xsprof_journal_follow *f;
    xsprof_journal_stats st;
    char path[4400];
    int followed;   /* a journal is followed */
    int ended;      /* finished or ended early: its rows are all read */
    int fresh;      /* not ended at the start of this look: gets a point */
    int dead_looks;
    int64_t offset; /* clock: reference = local + offset (its first sync) */
    int have_offset;
    lqueue q[NQ];    /* held rows of each table: in order of arrival, their begins never go back */
    lqueue late[NQ]; /* and those that began before the last of q, in order of begin */
    int64_t max_end;
    uint64_t mpi_rows;
    uint64_t events, events_prev;
    int64_t prev_wall, prev_mpi, prev_wait, prev_gpu;
    uint32_t tcount[XSM_LIVE_THREADS]; /* events of each shown thread in this look */
} lrank;

typedef struct lmember {
    int32_t rank;
    int64_t b, e;
    uint64_t row;
    uint32_t op;
    int receives, sends;
} lmember;

typedef struct linst { /* first 8 bytes: the xsm_ktab key */
    uint64_t key;
    int kind;
    int32_t root;
    size_t expected;
    unsigned looks;
    lmember *m;
    size_t n, cap;
} linst;

typedef struct lsend { /* first 8 bytes: the xsm_ktab key (p2p_key) */
    uint64_t key;
    int64_t tb;
    uint64_t row;
    unsigned looks;
} lsend;

struct xsm_live {
    char run_dir[4096];
    xsm_run run;
    xsm_sanalysis *sa;
    lrank *rk;
    xsm_lrank_view *views;
    xsm_live_view v;
    xsm_ktab colls;
    xsm_ktab sends; /* point-to-point sends not received yet (lsend) */
    struct timespec t0;
    char note[512];
    int noted_empty;
    char **foreign; /* journals of another run, said once each */
    size_t nforeign;
};

/* The next line for stderr (vsnprintf: names of any length are cut, not refused). */
static void note(xsm_live *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(xsm_live *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->note, sizeof l->note, fmt, ap);
    va_end(ap);
}

static double now_s(const xsm_live *l)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)(ts.tv_sec - l->t0.tv_sec) + (double)(ts.tv_nsec - l->t0.tv_nsec) * 1e-9;
}

xsm_live *xsm_live_new(const char *run_dir, xsm_alert *alerts, size_t nalerts)
{
    xsm_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    snprintf(l->run_dir, sizeof l->run_dir, "%s", run_dir);
    snprintf(l->run.run_dir, sizeof l->run.run_dir, "%s", run_dir);
    l->colls.size = sizeof(linst);
    l->sends.size = sizeof(lsend);
    clock_gettime(CLOCK_MONOTONIC, &l->t0);
    l->v.run_dir = l->run_dir;
    l->v.alerts = alerts;
    l->v.nalerts = nalerts;
    return l;
}

void xsm_live_free(xsm_live *l)
{
    if (!l)
        return;
    for (size_t r = 0; r < l->run.nranks; r++) {
        xsprof_journal_follow_close(l->rk[r].f);
        for (int q = 0; q < NQ; q++) {
            free(l->rk[r].q[q].v);
            free(l->rk[r].late[q].v);
        }
        xsprof_rank_data_free(&l->run.ranks[r].d);
    }
    for (size_t i = 0; i < l->colls.cap; i++) {
        linst *c = (linst *)(l->colls.v + i * l->colls.size);
        if (c->key)
            free(c->m);
    }
    xsm_ktab_free(&l->colls);
    xsm_ktab_free(&l->sends);
    for (size_t i = 0; i < l->nforeign; i++)
        free(l->foreign[i]);
    free(l->foreign);
    xsm_sanalysis_free(l->sa);
    free(l->run.ranks);
    free(l->rk);
    free(l->views);
    free(l);
}

const char *xsm_live_note(xsm_live *l)
{
    static char said[sizeof l->note];
    snprintf(said, sizeof said, "%s", l->note);
    l->note[0] = 0;
    return said;
}

int xsm_live_ended(const xsm_live *l) { return l->v.ended; }
const xsm_live_view *xsm_live_get(const xsm_live *l) { return &l->v; }

/* The job is sized by its first journal. */
static int live_size(xsm_live *l, const xsprof_journal_header *h, char *err, size_t errlen)
{
    int32_t n = h->size;
    if (n <= 0 || n > (1 << 20))
        return xsm_err_set(err, errlen, "xsmerge: --live: %s: bad number of ranks %d", l->run_dir, n);
    l->run.ranks = calloc((size_t)n, sizeof *l->run.ranks);
    l->rk = calloc((size_t)n, sizeof *l->rk);
    l->views = calloc((size_t)n, sizeof *l->views);
    if (!l->run.ranks || !l->rk || !l->views)
        return xsm_err_set(err, errlen, "xsmerge: --live: out of memory");
    l->run.nranks = (size_t)n;
    snprintf(l->run.job_id, sizeof l->run.job_id, "%.*s", (int)sizeof h->job_id, h->job_id);
    snprintf(l->v.job_id, sizeof l->v.job_id, "%s", l->run.job_id);
    l->v.size = n;
    l->v.ranks = l->views;
    l->v.run = &l->run;
    for (int32_t r = 0; r < n; r++) {
        l->views[r].rank = r;
        l->views[r].state = "waiting";
    }
    /* ranks become present as their journals come (xsm_sanalysis_rank_sync) */
    if (!(l->sa = xsm_sanalysis_new(&l->run, NULL, xsm_analysis_window(256))))
        return xsm_err_set(err, errlen, "xsmerge: --live: out of memory");
    l->v.sa = l->sa;
    return 0;
}

/* ---- collectives ----------------------------------------------------------- */
static uint64_t coll_key(uint32_t comm, uint64_t seq) { return ((uint64_t)comm << 40 | (seq & ((1ULL << 40) - 1))) + 1; }

static size_t comm_size(const xsprof_rank_data *d, uint32_t comm)
{
    for (size_t i = 0; i < d->ncomms; i++)
        if (d->comms[i].id == comm)
            return d->comms[i].size;
    return 0;
}

static int member_cmp(const void *a, const void *b)
{
    const lmember *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

typedef struct cw_ctx {
    xsm_live *l;
    const linst *c;
} cw_ctx;

static int cw_put(void *ctx, const xsm_cwmember *w, int kind, const xsm_cwmember *cause, int64_t tb, int64_t te)
{
    cw_ctx *x = ctx;
    const lmember *m = &x->c->m[w->id];
    uint64_t crow = cause ? x->c->m[cause->id].row : 0;
    return xsm_sanalysis_wait(x->l->sa, m->rank, m->row, m->op, kind, cause ? cause->rank : -1, crow, te - tb);
}

/* An instance all of whose members came: its waits to the engine (before
 * their calls, which are still held), then it is gone. */
static int coll_close(xsm_live *l, linst *c)
{
    qsort(c->m, c->n, sizeof *c->m, member_cmp);
    xsm_cwmember *v = malloc((c->n + 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t k = 0; k < c->n; k++)
        v[k] = (xsm_cwmember){c->m[k].rank, c->m[k].b, 1, c->m[k].b, c->m[k].e, c->m[k].receives, c->m[k].sends,
                              c->kind == XSPROF_COLL_SCAN ? xsm_align_comm_position(&l->run.ranks[c->m[k].rank].d,
                                                                                    (uint32_t)((c->key - 1) >> 40), c->m[k].rank)
                                                          : -1,
                              k};
    cw_ctx cx = {l, c};
    int rc = xsm_coll_waits_find(c->kind, c->root, v, c->n, cw_put, &cx);
    free(v);
    free(c->m);
    xsm_ktab_del(&l->colls, c);
    return rc;
}

static int coll_add(xsm_live *l, int32_t r, const xsprof_io_mpi *m, int64_t b, int64_t e, uint64_t row)
{
    linst *c = xsm_ktab_get(&l->colls, coll_key(m->comm, m->coll_seq));
    if (!c)
        return -1;
    if (!c->cap) {
        c->kind = m->coll;
        c->root = m->root;
        c->expected = comm_size(&l->run.ranks[r].d, m->comm);
    }
    if (xsm_grow((void **)&c->m, &c->cap, c->n, sizeof *c->m))
        return -1;
    c->m[c->n++] = (lmember){r, b, e, row, m->op, xsm_coll_receives(m->coll, m), xsm_coll_sends(m)};
    if (c->root < 0 && m->root >= 0)
        c->root = m->root;
    return c->expected && c->n >= c->expected ? coll_close(l, c) : 0;
}

/* Instances still waiting for members: one look older; those past their
 * patience are dropped (their calls are fed without waits). */
static void coll_age(xsm_live *l)
{
    for (size_t i = 0; i < l->colls.cap; i++) {
        linst *c = (linst *)(l->colls.v + i * l->colls.size);
        if (c->key && ++c->looks > COLL_PATIENCE) {
            free(c->m);
            xsm_ktab_del(&l->colls, c);
            i--; /* the slot may hold an entry moved back */
        }
    }
}

/* ---- point-to-point messages ------------------------------------------------ */
/* A message: the n-th of (communicator, source, destination, tag), as both
 * ends count it (MPI does not overtake). 0 is the table's free mark. */
static uint64_t p2p_key(uint32_t comm, int32_t src, int32_t dst, int32_t tag, uint64_t seq)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    const uint64_t v[5] = {comm, (uint32_t)src, (uint32_t)dst, (uint32_t)tag, seq};
    for (int i = 0; i < 5; i++) {
        h ^= v[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ? h : 1;
}

static int is_send(const xsprof_io_mpi *m)
{
    return (m->kind == XSPROF_MPI_SEND || m->kind == XSPROF_MPI_SSEND || m->kind == XSPROF_MPI_ISEND ||
            m->kind == XSPROF_MPI_SENDRECV) && m->peer >= 0;
}

/* A blocking receive whose sender is known: its wait is a Late Sender when
 * the send began after it (the engine decides, as for every merge). */
static int is_recv(const xsprof_io_mpi *m) { return m->kind == XSPROF_MPI_RECV && m->peer >= 0 && m->tag >= 0; }

/* Sends whose receive never came live (nonblocking receives are left to
 * the full merge) are forgotten after COLL_PATIENCE looks. */
static void sends_age(xsm_live *l)
{
    for (size_t i = 0; i < l->sends.cap; i++) {
        lsend *e = (lsend *)(l->sends.v + i * l->sends.size);
        if (e->key && ++e->looks > COLL_PATIENCE) {
            xsm_ktab_del(&l->sends, e);
            i--; /* the slot may hold an entry moved back */
        }
    }
}

/* ---- rows ------------------------------------------------------------------ */
typedef struct rows_ctx {
    xsm_live *l;
    int32_t r;
    int failed;
} rows_ctx;

static void thread_count(lrank *k, xsm_lrank_view *v, uint32_t tid)
{
    for (size_t i = 0; i < v->nth; i++)
        if (v->th[i].tid == tid) {
            k->tcount[i]++;
            return;
        }
    if (v->nth < XSM_LIVE_THREADS) {
        memset(&v->th[v->nth], 0, sizeof v->th[v->nth]);
        v->th[v->nth].tid = tid;
        k->tcount[v->nth++] = 1;
    }
}

/* Row i of queue u (rows of `sz` bytes). */
static inline unsigned char *lq_at(const lqueue *u, size_t i, size_t sz) { return u->v + (i & (u->cap - 1)) * sz; }

/* A full queue twice as large. A ring, so that fed rows leave and held
 * ones stay without a move: moving the held rows (100 ms of them) to the
 * front whenever the room ran out was 3 % of the reader. It grows in place
 * (realloc: a big block's pages are moved, not copied); the rows that had
 * wrapped to the front go after the old end. */
static __attribute__((noinline)) int lq_grow(lqueue *u, size_t sz)
{
    size_t old = u->cap, first = old ? u->v0 & (old - 1) : 0, held = u->n - u->v0;
    /* from 4096 rows; a busy rank's queue reaches megabytes, which
     * xsm_reserve asks huge pages for */
    if (xsm_reserve((void **)&u->v, &u->cap, old ? 2 * old : 4096, sz))
        return -1;
    if (first + held > old)
        memcpy(u->v + old * sz, u->v, (first + held - old) * sz);
    u->v0 = first;
    u->n = first + held;
    return 0;
}

/* Room for one more row of `sz` bytes at the end of queue u. */
static inline unsigned char *lq_room(lqueue *u, size_t sz)
{
    if (u->n - u->v0 == u->cap && lq_grow(u, sz))
        return NULL;
    return lq_at(u, u->n++, sz);
}

/* Hold a row of table q that begins at tb (its clock offset added): a
 * copy appended, or among the late rows when it began before the last
 * held one or no later than the last late one; the copy, whose times the
 * caller then sets, from its own row: a copy read back right after it was
 * stored (a row copied, changed and copied again, or changed in place)
 * stalls on the store, a third of on_rows. NULL out of memory. Rows of one
 * begin are fed in their order of arrival: a late row's tie with a held
 * row is one that came after it (feed takes the held row first). Inlined
 * where q is a constant: the row's copy (rsz bytes, an MPI row's without
 * its index) is then of a known size, not a call to memmove. */
static inline __attribute__((always_inline)) void *hold(lrank *k, int q, const void *row, size_t rsz, int64_t tb)
{
    size_t sz = q_size[q];
    lqueue *u = &k->q[q], *w = &k->late[q];
    if ((u->n == u->v0 || q_tb(lq_at(u, u->n - 1, sz)) <= tb) && (w->n == w->v0 || q_tb(lq_at(w, w->n - 1, sz)) < tb)) {
        unsigned char *p = lq_room(u, sz);
        if (p)
            memcpy(p, row, rsz);
        return p;
    }
    if (!lq_room(w, sz))
        return NULL;
    size_t j = w->n - 1; /* the late rows are few: later ones move up one by one */
    for (; j > w->v0 && q_tb(lq_at(w, j - 1, sz)) > tb; j--)
        memcpy(lq_at(w, j, sz), lq_at(w, j - 1, sz), sz);
    unsigned char *p = lq_at(w, j, sz);
    memcpy(p, row, rsz);
    return p;
}

/* Hold a row of table q that spans [begin, end), its first two fields
 * (regions, MPI calls, GPU activity), both moved by the rank's clock
 * offset into *tb and *te, and stored into the copy from there (hold):
 * the copy, NULL out of memory. */
_Static_assert(offsetof(xsprof_io_region, t_begin) == 0 && offsetof(xsprof_io_region, t_end) == 8 &&
                   offsetof(xsprof_io_mpi, t_begin) == 0 && offsetof(xsprof_io_mpi, t_end) == 8 &&
                   offsetof(xsprof_io_gpu, t_begin) == 0 && offsetof(xsprof_io_gpu, t_end) == 8,
               "hold_span: a span's row begins with its begin and end");
static inline __attribute__((always_inline)) void *hold_span(lrank *k, int q, const void *src, size_t rsz, int64_t *tb,
                                                             int64_t *te)
{
    int64_t t[2];
    memcpy(t, src, sizeof t);
    *tb = t[0] + k->offset;
    *te = t[1] + k->offset;
    unsigned char *p = hold(k, q, src, rsz, *tb);
    if (p) {
        memcpy(p, tb, sizeof *tb);
        memcpy(p + sizeof *tb, te, sizeof *te);
    }
    return p;
}

/* The next held row of table q to feed and where it is (its queue), NULL
 * none: the held rows' and the late rows' merged by begin (held first on a
 * tie, see hold). */
static inline const unsigned char *lq_next(lrank *k, int q, lqueue **from)
{
    lqueue *u = &k->q[q], *w = &k->late[q];
    const unsigned char *a = u->n > u->v0 ? lq_at(u, u->v0, q_size[q]) : NULL;
    const unsigned char *b = w->n > w->v0 ? lq_at(w, w->v0, q_size[q]) : NULL;
    if (b && (!a || q_tb(b) < q_tb(a))) {
        *from = w;
        return b;
    }
    *from = u;
    return a;
}

static xsprof_status on_rows(void *user, enum xsprof_io_table t, const void *rows, size_t n)
{
    rows_ctx *x = user;
    lrank *k = &x->l->rk[x->r];
    xsm_lrank_view *v = &x->l->views[x->r];
    for (size_t i = 0; i < n; i++) {
        int64_t te;
        uint32_t tid;
        int rc = 0;
        switch (t) {
        case XSPROF_IO_T_CLOCK: {
            const xsprof_io_clock *c = (const xsprof_io_clock *)rows + i;
            if (!k->have_offset) {
                k->offset = c->offset_ns;
                k->have_offset = 1;
            }
            continue;
        }
        case XSPROF_IO_T_REGIONS: {
            const xsprof_io_region *src = (const xsprof_io_region *)rows + i;
            int64_t tb;
            rc = hold_span(k, QR, src, sizeof *src, &tb, &te) ? 0 : -1;
            tid = src->thread;
            break;
        }
        case XSPROF_IO_T_MPI: { /* an lmpi: the row, then its index */
            const xsprof_io_mpi *src = (const xsprof_io_mpi *)rows + i;
            int64_t tb;
            lmpi *w = hold_span(k, QM, src, sizeof *src, &tb, &te);
            if (!w) {
                rc = -1;
                break;
            }
            uint64_t row = k->mpi_rows++;
            tid = src->thread;
            w->row = row;
            if (src->kind == XSPROF_MPI_COLL && src->coll != XSPROF_COLL_NONE) {
                rc = coll_add(x->l, x->r, src, tb, te, row);
            } else if (is_send(src)) { /* its receive's Late Sender needs it */
                lsend *e = xsm_ktab_get(&x->l->sends, p2p_key(src->comm, x->r, src->peer, src->tag, src->seq));
                if (e)
                    e->tb = tb, e->row = row;
                rc = e ? 0 : -1;
            }
            break;
        }
        case XSPROF_IO_T_MEM: {
            const xsprof_io_mem *src = (const xsprof_io_mem *)rows + i;
            te = src->t + k->offset, tid = src->thread;
            xsprof_io_mem *e = hold(k, QE, src, sizeof *src, te);
            if (!e) {
                rc = -1;
                break;
            }
            e->t = te;
            break;
        }
        case XSPROF_IO_T_GPU: {
            int64_t tb;
            rc = hold_span(k, QG, (const xsprof_io_gpu *)rows + i, sizeof(xsprof_io_gpu), &tb, &te) ? 0 : -1;
            tid = UINT32_MAX;
            break;
        }
        default: /* instants, counters, arguments: counted, not shown */
            k->events++;
            continue;
        }
        if (rc) {
            x->failed = 1;
            return XSPROF_ERR_NOMEM;
        }
        k->events++;
        if (tid != UINT32_MAX)
            thread_count(k, v, tid);
        if (te > k->max_end)
            k->max_end = te;
    }
    return XSPROF_OK;
}

/* What feed() may pass on. A rank's rows are read one rank after another,
 * so a rank seen ended may still wait for a send or a collective's member
 * that a running rank had not committed when it was read (under load the
 * Late Sender of a 3-rank job was lost that way): an ended rank keeps
 * those rows until the peer's come or the job ends. */
enum {
    FEED_DUE,   /* running: rows begun HOLD_NS before its newest end */
    FEED_ENDED, /* ended: every row but those waiting for a running rank */
    FEED_ALL    /* the job ended: every row, whatever it waits for */
};

static int running(const xsm_live *l, int32_t r)
{
    return r >= 0 && (size_t)r < l->run.nranks && l->rk[r].followed && !l->rk[r].ended;
}

/* Feed rank r's held rows that `mode` lets pass, merged by begin: how many
 * passed, -1 out of memory. */
static int feed(xsm_live *l, int32_t r, int mode)
{
    lrank *k = &l->rk[r];
    const unsigned char *head[NQ];
    lqueue *from[NQ];
    int any = 0;
    for (int t = 0; t < NQ; t++)
        any |= (head[t] = lq_next(k, t, &from[t])) != NULL;
    if (!any)
        return 0;
    int fed = 0;
    if (xsm_sanalysis_rank_sync(l->sa, r, 1))
        return -1;
    int64_t due = mode == FEED_DUE ? k->max_end - HOLD_NS : INT64_MAX;
    for (;;) { /* the tables merged by begin */
        int q = -1;
        int64_t best = due;
        for (int t = 0; t < NQ; t++) {
            if (!head[t])
                continue;
            int64_t tb = q_tb(head[t]);
            if (tb < best || (q < 0 && tb == best))
                q = t, best = tb;
        }
        if (q < 0)
            break;
        if (q == QR) { /* the regions up to the next row of another table (a tie: the lower table first) */
            int64_t lim = due;
            for (int t = QR + 1; t < NQ; t++)
                if (head[t] && q_tb(head[t]) <= lim)
                    lim = q_tb(head[t]);
            do {
                if (xsm_sanalysis_region(l->sa, r, (const xsprof_io_region *)(const void *)head[QR], NULL))
                    return -1;
                fed++;
                from[QR]->v0++;
                head[QR] = lq_next(k, QR, &from[QR]);
            } while (head[QR] && q_tb(head[QR]) <= lim);
            continue;
        }
        const void *w = head[q];
        int rc = 0;
        switch (q) {
        case QR: rc = xsm_sanalysis_region(l->sa, r, w, NULL); break;
        case QE: rc = xsm_sanalysis_mem(l->sa, r, w); break;
        case QG: rc = xsm_sanalysis_gpu(l->sa, r, w); break;
        default: {
            const lmpi *m = w;
            if (mode != FEED_ALL && m->m.kind == XSPROF_MPI_COLL && m->m.coll != XSPROF_COLL_NONE &&
                xsm_ktab_find(&l->colls, coll_key(m->m.comm, m->m.coll_seq)))
                goto held; /* its waits are not known yet (or aged out: coll_age) */
            if (is_recv(&m->m)) { /* its sender's send, for a Late Sender */
                lsend *e = xsm_ktab_find(&l->sends, p2p_key(m->m.comm, m->m.peer, r, m->m.tag, m->m.seq));
                if (!e && ((mode == FEED_DUE && k->max_end - m->m.t_end < SEND_PATIENCE_NS) ||
                           (mode == FEED_ENDED && running(l, m->m.peer))))
                    goto held; /* the sender's rows have not come yet */
                if (e) {
                    xsm_evflow fl;
                    memset(&fl, 0, sizeof fl);
                    fl.id = 1;
                    fl.t = m->m.t_end;
                    fl.sent = e->tb;
                    fl.peer = m->m.peer;
                    fl.peer_row = e->row;
                    fl.comm = m->m.comm;
                    fl.tag = m->m.tag;
                    xsm_ktab_del(&l->sends, e);
                    rc = xsm_sanalysis_mpi(l->sa, r, &m->m, m->row, &fl, 1);
                    break;
                }
            }
            rc = xsm_sanalysis_mpi(l->sa, r, &m->m, m->row, NULL, 0);
            break;
        }
        }
        if (rc)
            return -1;
        fed++;
        from[q]->v0++;
        head[q] = lq_next(k, q, &from[q]);
    }
held:
    /* the rows still held stay where they are (rings); an empty queue
     * starts again from its first row */
    for (int t = 0; t < NQ; t++) {
        if (k->q[t].v0 == k->q[t].n)
            k->q[t].v0 = k->q[t].n = 0;
        if (k->late[t].v0 == k->late[t].n)
            k->late[t].v0 = k->late[t].n = 0;
    }
    return fed;
}

/* ---- the run directory ----------------------------------------------------- */
static int said_foreign(xsm_live *l, const char *name)
{
    for (size_t i = 0; i < l->nforeign; i++)
        if (!strcmp(l->foreign[i], name))
            return 1;
    char **v = realloc(l->foreign, (l->nforeign + 1) * sizeof *v);
    if (!v)
        return 1;
    l->foreign = v;
    if ((v[l->nforeign] = strdup(name)))
        l->nforeign++;
    return 0;
}

/* Journals not followed yet: the first sizes the job; one of another job
 * (its id or size differ) is ignored with a note. */
static int scan(xsm_live *l, char *err, size_t errlen)
{
    DIR *d = opendir(l->run_dir);
    if (!d) {
        if (!l->noted_empty)
            note(l, "xsmerge: --live: %s: %s; waiting for the job to create it", l->run_dir,
                     strerror(errno));
        l->noted_empty = 1;
        return 0;
    }
    struct dirent *e;
    int found = 0, files = 0;
    while ((e = readdir(d))) {
        unsigned rank;
        char tail[8];
        if (sscanf(e->d_name, "rank-%u.%7s", &rank, tail) != 2)
            continue;
        if (!strcmp(tail, "h5")) { /* the rank finished before it was followed: the merge has it */
            files++;
            if (l->run.nranks && rank < l->run.nranks && !l->rk[rank].followed) {
                l->rk[rank].followed = l->rk[rank].ended = 1;
                l->views[rank].state = "finished";
                snprintf(l->views[rank].end_state, sizeof l->views[rank].end_state, "finished before it was followed");
            }
            continue;
        }
        if (strcmp(tail, "xsj") != 0)
            continue;
        found = 1;
        if (l->run.nranks && rank < l->run.nranks && l->rk[rank].followed)
            continue;
        char path[4400];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", l->run_dir, e->d_name) >= sizeof path)
            continue;
        xsprof_journal_header h;
        FILE *fp = fopen(path, "rb");
        size_t got = fp ? fread(&h, 1, sizeof h, fp) : 0;
        if (fp)
            fclose(fp);
        if (got < sizeof h || memcmp(h.magic, XSPROF_JOURNAL_MAGIC, sizeof h.magic) != 0 || h.rank != (int32_t)rank)
            continue; /* not written yet */
        if (!l->run.nranks && live_size(l, &h, err, errlen)) {
            closedir(d);
            return -1;
        }
        if (h.size != (int32_t)l->run.nranks || strncmp(h.job_id, l->run.job_id, sizeof h.job_id) != 0 ||
            rank >= l->run.nranks) {
            if (!said_foreign(l, e->d_name))
                note(l,
                         "xsmerge: --live: %s belongs to another run (job '%.64s' of %d ranks, not '%s' of %zu); ignored",
                         path, h.job_id, h.size, l->run.job_id, l->run.nranks);
            continue;
        }
        lrank *k = &l->rk[rank];
        char ferr[512] = "";
        if (xsprof_journal_follow_open(path, &k->f, ferr, sizeof ferr) != XSPROF_OK) {
            note(l, "xsmerge: --live: %s", ferr);
            continue;
        }
        memcpy(k->path, path, sizeof k->path);
        k->followed = 1;
        l->run.ranks[rank].present = 1;
        l->views[rank].state = "running";
        if (xsm_sanalysis_rank_sync(l->sa, (int32_t)rank, 1)) { /* its accumulator, for waits found before its rows */
            closedir(d);
            return xsm_err_set(err, errlen, "xsmerge: --live: out of memory");
        }
    }
    closedir(d);
    if (!found && !l->run.nranks && files) { /* every rank wrote its rank file: nothing to follow */
        if (!l->v.ended)
            note(l, "xsmerge: --live: %s holds rank files only: the job ended before the view started", l->run_dir);
        l->v.ended = 1;
        return 0;
    }
    if (!found && !l->run.nranks && !l->noted_empty) {
        note(l, "xsmerge: --live: no journal in %s yet (rank-NNNNN.xsj); waiting for the job",
                 l->run_dir);
        l->noted_empty = 1;
    }
    return 0;
}

/* ---- one look ---------------------------------------------------------------- */
static void rank_state(xsm_live *l, int32_t r)
{
    lrank *k = &l->rk[r];
    xsm_lrank_view *v = &l->views[r];
    const xsprof_rank_data *d = &l->run.ranks[r].d;
    snprintf(v->host, sizeof v->host, "%s", d->host);
    v->dropped = d->dropped;
    v->events = k->events;
    if (k->st.state == XSPROF_JOURNAL_FINALIZED || k->st.state == XSPROF_JOURNAL_CLOSED) {
        v->state = "finished";
        k->ended = 1;
    } else if (k->st.state == XSPROF_JOURNAL_SIGNALED) {
        v->state = "ended early";
        k->ended = 1;
    } else if (!k->st.writer_alive && ++k->dead_looks >= DEAD_LOOKS) {
        v->state = "ended early";
        k->ended = 1;
    } else {
        if (k->st.writer_alive)
            k->dead_looks = 0;
        v->state = "running";
    }
    if (k->ended)
        xsprof_journal_end_state(&k->st, v->end_state, sizeof v->end_state);
    else
        snprintf(v->end_state, sizeof v->end_state, "running");
}

/* The rank's sums from the engine; its wall and wait time in *wall, *wait. */
static void rank_sums(xsm_live *l, int32_t r, xsm_anrank_out *o, int64_t *wall, int64_t *wait)
{
    xsm_lrank_view *v = &l->views[r];
    xsm_sanalysis_view(l->sa, r, o);
    int64_t f, last;
    xsm_an_window(&l->run, o, &f, &last);
    *wait = 0;
    for (size_t i = 0; i < o->nw; i++)
        *wait += o->w[i].ns;
    *wall = last - f;
    v->wall_s = (double)*wall * 1e-9;
    v->mpi_s = (double)o->mpi_ns * 1e-9;
    v->wait_s = (double)*wait * 1e-9;
    v->gpu_s = (double)o->gpu_ns * 1e-9;
    v->has_mem = o->mem && o->mem->present;
}

/* The rank's sums, and a point of its series. */
static void rank_point(xsm_live *l, int32_t r, double t)
{
    lrank *k = &l->rk[r];
    xsm_lrank_view *v = &l->views[r];
    xsm_anrank_out o;
    int64_t wall, wait;
    rank_sums(l, r, &o, &wall, &wait);
    int64_t dw = wall - k->prev_wall;
    xsm_lpoint *p = &v->series[v->head];
    p->t = t;
    p->mpi_pct = dw > 0 ? (float)(100.0 * (double)(o.mpi_ns - k->prev_mpi) / (double)dw) : 0;
    p->wait_pct = dw > 0 ? (float)(100.0 * (double)(wait - k->prev_wait) / (double)dw) : 0;
    p->gpu_pct = dw > 0 ? (float)(100.0 * (double)(o.gpu_ns - k->prev_gpu) / (double)dw) : 0;
    p->eps = (double)(k->events - k->events_prev);
    p->mem_bytes = v->has_mem ? (double)o.mem->peak_bytes : 0;
    v->head = (v->head + 1) % XSM_LIVE_SERIES;
    if (v->npoints < XSM_LIVE_SERIES)
        v->npoints++;
    k->prev_wall = wall, k->prev_mpi = o.mpi_ns, k->prev_wait = wait, k->prev_gpu = o.gpu_ns;
    k->events_prev = k->events;
    for (size_t i = 0; i < v->nth; i++) {
        memmove(v->th[i].act, v->th[i].act + 1, (XSM_LIVE_TACT - 1) * sizeof v->th[i].act[0]);
        v->th[i].act[XSM_LIVE_TACT - 1] = k->tcount[i];
        k->tcount[i] = 0;
    }
}

/* The mean seconds per call of region `name` on rank r so far, -1 none. */
static double region_mean(const xsm_live *l, int32_t r, const char *name)
{
    xsm_anrank_out o;
    xsm_sanalysis_view(l->sa, r, &o);
    const xsprof_rank_data *d = &l->run.ranks[r].d;
    for (size_t i = 0; i < o.nnames; i++)
        if (o.names[i].n > 0 && !strcmp(xsprof_rank_data_string(d, o.names[i].sid), name))
            return o.names[i].sum / o.names[i].n;
    return -1;
}

static void alerts_check(xsm_live *l)
{
    for (size_t i = 0; i < l->v.nalerts; i++) {
        xsm_alert *a = &l->v.alerts[i];
        for (int32_t r = 0; r < (int32_t)l->run.nranks && !a->fired; r++) {
            const xsm_lrank_view *v = &l->views[r];
            double val = -1;
            if (!l->rk[r].followed)
                continue;
            if (a->what == XSM_ALERT_WAIT || a->what == XSM_ALERT_MPI)
                val = v->wall_s > 0 ? 100.0 * (a->what == XSM_ALERT_WAIT ? v->wait_s : v->mpi_s) / v->wall_s : -1;
            else if (a->what == XSM_ALERT_REGION)
                val = region_mean(l, r, a->region);
            else if (v->has_mem && v->npoints)
                val = v->series[(v->head + XSM_LIVE_SERIES - 1) % XSM_LIVE_SERIES].mem_bytes;
            if (val > a->limit) {
                a->fired = 1;
                a->rank = r;
                a->value = val;
                fprintf(stderr, "xsmerge: --live: alert %s fired on rank %d (%.4g)\n", a->text, r, val);
            }
        }
    }
}

int xsm_live_read(xsm_live *l, char *err, size_t errlen)
{
    for (int32_t r = 0; r < (int32_t)l->run.nranks; r++) {
        lrank *k = &l->rk[r];
        if (!k->f || k->ended)
            continue;
        rows_ctx x = {l, r, 0};
        char perr[1024] = "";
        xsprof_status s =
            xsprof_journal_follow_poll(k->f, &l->run.ranks[r].d, &k->st, on_rows, &x, perr, sizeof perr);
        if (x.failed)
            return xsm_err_set(err, errlen, "xsmerge: --live: out of memory following %s", k->path);
        l->run.ranks[r].d.nsamples = 0; /* not shown live: their table must not grow with the run */
        if (s != XSPROF_OK && s != XSPROF_ERR_STATE) {
            note(l, "xsmerge: --live: %s; rank %d is no longer followed", perr, r);
            k->st.state = XSPROF_JOURNAL_SIGNALED; /* shown as ended early */
        }
        if (feed(l, r, FEED_DUE) < 0)
            return xsm_err_set(err, errlen, "xsmerge: --live: out of memory in the analysis of rank %d", r);
    }
    return 0;
}

int xsm_live_tick(xsm_live *l, char *err, size_t errlen)
{
    if (scan(l, err, errlen))
        return -1;
    double t = now_s(l);
    l->v.since_s = t;
    if (!l->run.nranks)
        return 0; /* nothing followed yet (or the job ended before: scan said so) */
    if (xsm_live_read(l, err, errlen))
        return -1;
    coll_age(l);
    sends_age(l);
    /* every rank's state first: an ended rank's rows wait only for ranks
     * still running (feed) */
    size_t nrunning = 0; /* ranks not ended (or not followed yet) */
    for (int32_t r = 0; r < (int32_t)l->run.nranks; r++) {
        lrank *k = &l->rk[r];
        k->fresh = k->followed && !k->ended;
        if (k->fresh && k->f)
            rank_state(l, r);
        nrunning += !k->followed || !k->ended;
    }
    for (int32_t r = 0; r < (int32_t)l->run.nranks; r++) {
        lrank *k = &l->rk[r];
        int fed = k->ended ? feed(l, r, nrunning ? FEED_ENDED : FEED_ALL) : 0;
        if (fed < 0)
            return xsm_err_set(err, errlen, "xsmerge: --live: out of memory in the analysis of rank %d", r);
        if (k->fresh) {
            rank_point(l, r, t);
        } else if (fed) { /* rows that waited for a running rank: the sums, no point */
            xsm_anrank_out o;
            int64_t wall, wait;
            rank_sums(l, r, &o, &wall, &wait);
        }
    }
    int ended = !nrunning;
    alerts_check(l);
    l->v.ended = ended;
    return 0;
}
