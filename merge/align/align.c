/* merge/align/align.c — see align.h.
 *
 * The logical clock works on "groups": the distinct times of a rank's MPI
 * call boundaries (begin and end of every mpi row). A constraint says that
 * group g of rank r must not be earlier than group h of rank s plus a
 * latency (p2p), or than the latest entry of a collective. Groups are
 * processed in an order consistent with the constraints (each rank in its
 * own time order, waiting for the groups it depends on), which makes the
 * pass linear in the number of groups and constraints. A group's corrected
 * time C is max(its time shifted like its predecessor, its constraints).
 * Every other event is moved by the piecewise-linear map through the
 * groups' (t, C) points, so nesting and order on a rank are kept. */
#include "merge/align/align.h"
#include "merge/util.h"
#include "core/record.h" /* kinds of the mpi rows */

#include <stdlib.h>
#include <string.h>

/* ---- 1. clock-sample interpolation ------------------------------------ */

static int xsm_clock_cmp(const void *a, const void *b)
{
    const xsprof_io_clock *x = a, *y = b;
    if (x->t_local != y->t_local)
        return x->t_local < y->t_local ? -1 : 1;
    return x->rtt_ns < y->rtt_ns ? -1 : x->rtt_ns > y->rtt_ns;
}

/* Apply f to every event time of a rank. */
typedef int64_t (*xsm_time_fn)(void *ctx, int64_t t);

/* always inlined: each caller passes a constant f, which then inlines too,
 * and a constant span: when not NULL, span[0] and span[1] get the first
 * begin and the last end of the new times, in the same pass. */
#define XSM_MAP2(arr, cnt, b, e)                                                 \
    for (size_t i = 0; i < (cnt); i++) {                                         \
        int64_t tb = f(ctx, (arr)[i].b), te = f(ctx, (arr)[i].e);               \
        (arr)[i].b = tb;                                                         \
        (arr)[i].e = te;                                                         \
        if (span) {                                                              \
            t0 = tb < t0 ? tb : t0;                                              \
            t1 = te > t1 ? te : t1;                                              \
        }                                                                        \
    }
#define XSM_MAP1(arr, cnt, t)                                                    \
    for (size_t i = 0; i < (cnt); i++) {                                         \
        int64_t tt = f(ctx, (arr)[i].t);                                         \
        (arr)[i].t = tt;                                                         \
        if (span) {                                                              \
            t0 = tt < t0 ? tt : t0;                                              \
            t1 = tt > t1 ? tt : t1;                                              \
        }                                                                        \
    }
static inline __attribute__((always_inline)) void xsm_rank_map(xsprof_rank_data *d, xsm_time_fn f, void *ctx,
                                                               int64_t *span)
{
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    XSM_MAP2(d->regions, d->nregions, t_begin, t_end)
    XSM_MAP2(d->mpi, d->nmpi, t_begin, t_end)
    XSM_MAP2(d->gpu, d->ngpu, t_begin, t_end)
    XSM_MAP1(d->instants, d->ninstants, t)
    XSM_MAP1(d->counters, d->ncounters, t)
    XSM_MAP1(d->mem, d->nmem, t)
    if (span) {
        span[0] = t0;
        span[1] = t1;
    }
}
#undef XSM_MAP1
#undef XSM_MAP2

static int64_t xsm_clk_fn(void *ctx, int64_t t) { return xsm_align_clock_map(ctx, t); }

double xsm_align_clock_prepare(xsprof_rank_data *d)
{
    /* Sort in place (samples are only read here) and drop samples of
     * the same instant but a worse round trip. */
    double res = 0;
    if (d->nclock > 1)
        qsort(d->clock, d->nclock, sizeof *d->clock, xsm_clock_cmp);
    size_t n = 0;
    for (size_t i = 0; i < d->nclock; i++) {
        if (n && d->clock[n - 1].t_local == d->clock[i].t_local)
            continue;
        d->clock[n++] = d->clock[i];
        double e = (double)d->clock[i].rtt_ns / 2e3;
        if (e > res)
            res = e;
    }
    d->nclock = n;
    return res;
}

static void xsm_rank_span(const xsprof_rank_data *d, int64_t *t0_out, int64_t *t1_out);

/* Collective mode: every process converts the times of the shared tables
 * it owns (the others hold them as xsm_rank.ro), so each pass that moves
 * times waits for all readers before it writes and for all writers after. */
static void xsm_sync_ro(xsm_run *run)
{
    if (run->sync)
        run->sync(run->sync_ctx); /* every process calls it: the same data everywhere */
}

/* Interpolate one rank's times; returns its largest sample error (us).
 * span (NULL or 2 entries): the new first begin and last end. An ro rank's
 * samples are prepared (they are ours) but its times are its owner's to
 * convert: its span is read after xsm_sync_ro. */
static double xsm_interp_one(xsm_run *run, size_t r, int64_t *span)
{
    xsprof_rank_data *d = &run->ranks[r].d;
    double res = 0;
    if (span) {
        span[0] = INT64_MAX;
        span[1] = INT64_MIN;
    }
    if (!run->ranks[r].present)
        return 0;
    res = xsm_align_clock_prepare(d);
    if (run->ranks[r].ro)
        return res;
    xsm_clk c = {d->clock, d->nclock, 0, NULL, 0, 0};
    if (span)
        xsm_rank_map(d, xsm_clk_fn, &c, span);
    else
        xsm_rank_map(d, xsm_clk_fn, &c, NULL);
    return res;
}

typedef struct xsm_interp_ctx {
    xsm_run *run;
    double *res;   /* per rank */
    int64_t *span; /* NULL, or 2 per rank */
} xsm_interp_ctx;

static int xsm_interp_rank(void *ctx, size_t r)
{
    xsm_interp_ctx *c = ctx;
    c->res[r] = xsm_interp_one(c->run, r, c->span ? &c->span[2 * r] : NULL);
    return 0;
}

void xsm_align_interpolate_span(xsm_run *run, int64_t *span)
{
    xsm_interp_ctx c = {run, calloc(run->nranks + 1, sizeof(double)), span};
    double residual = 0;
    if (c.res) /* ranks are independent */
        xsm_parallel_for(run->nranks, xsm_interp_rank, &c);
    for (size_t r = 0; r < run->nranks; r++) {
        /* out of memory: one at a time */
        double e = c.res ? c.res[r] : xsm_interp_one(run, r, span ? &span[2 * r] : NULL);
        if (e > residual)
            residual = e;
    }
    free(c.res);
    run->clock.max_residual_us = residual;
    xsm_sync_ro(run);
    /* ro ranks' spans, now their owners wrote them (with reduce, the
     * owners' spans join in xsm_align_origin_span instead of a pass here) */
    for (size_t r = 0; span && !run->reduce && r < run->nranks; r++)
        if (run->ranks[r].present && run->ranks[r].ro)
            xsm_rank_span(&run->ranks[r].d, &span[2 * r], &span[2 * r + 1]);
}

void xsm_align_interpolate(xsm_run *run) { xsm_align_interpolate_span(run, NULL); }

/* ---- 2. controlled logical clock --------------------------------------- */

enum { XSM_DEP_P2P = 0, XSM_DEP_COLL = 1 };

typedef struct xsm_dep {
    uint32_t group;  /* constrained group on this rank */
    uint32_t kind;
    int32_t rank;    /* P2P: rank of the source group */
    uint32_t src;    /* P2P: source group */
    int64_t lat;
    size_t coll;     /* COLL: index in run->colls */
} xsm_dep;

typedef struct xsm_rstate {
    size_t G;
    int64_t *t, *C;
    unsigned char *pinned;
    uint32_t *gb, *ge; /* mpi row -> group of its begin / end */
    xsm_dep *deps;
    size_t ndeps, cap, di;
    size_t cursor;     /* next group to process */
    size_t last_pin;   /* last pinned group processed, SIZE_MAX if none */
    int64_t lower;     /* constraint value gathered so far for `cursor` */
    size_t waiting_next; /* next rank in the same wait list */
} xsm_rstate;

typedef struct xsm_cstate {
    size_t done;
    int64_t max_entry;
} xsm_cstate;

typedef struct xsm_knot {
    int64_t t;
    size_t key; /* row * 2 + (end ? 1 : 0) */
} xsm_knot;

static int xsm_knot_cmp(const void *a, const void *b)
{
    const xsm_knot *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int xsm_dep_cmp(const void *a, const void *b)
{
    const xsm_dep *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

static int xsm_rstate_build(const xsprof_rank_data *d, xsm_rstate *s)
{
    size_t n = d->nmpi;
    /* Calls of one thread come in order: when begin0 <= end0 <= begin1 ...
     * the boundaries are already in (time, key) order and need no knot
     * array (32 bytes a row) nor sort. */
    int sorted = 1;
    for (size_t i = 0; i < n && sorted; i++)
        sorted = d->mpi[i].t_begin <= d->mpi[i].t_end && (i + 1 == n || d->mpi[i].t_end <= d->mpi[i + 1].t_begin);
    xsm_knot *k = sorted ? NULL : malloc((2 * n + 1) * sizeof *k);
    s->gb = malloc((n + 1) * sizeof *s->gb);
    s->ge = malloc((n + 1) * sizeof *s->ge);
    s->t = malloc((2 * n + 1) * sizeof *s->t);
    s->C = malloc((2 * n + 1) * sizeof *s->C);
    s->pinned = calloc(2 * n + 1, 1);
    if ((!sorted && !k) || !s->gb || !s->ge || !s->t || !s->C || !s->pinned) {
        free(k);
        return -1;
    }
    if (sorted) {
        size_t G = 0;
        for (size_t i = 0; i < n; i++) {
            for (int e = 0; e < 2; e++) {
                int64_t t = e ? d->mpi[i].t_end : d->mpi[i].t_begin;
                if (G == 0 || s->t[G - 1] != t) {
                    s->t[G] = t;
                    s->C[G] = t;
                    G++;
                }
                (e ? s->ge : s->gb)[i] = (uint32_t)(G - 1);
            }
        }
        s->G = G;
        s->last_pin = SIZE_MAX;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        k[2 * i] = (xsm_knot){d->mpi[i].t_begin, 2 * i};
        k[2 * i + 1] = (xsm_knot){d->mpi[i].t_end, 2 * i + 1};
    }
    qsort(k, 2 * n, sizeof *k, xsm_knot_cmp);
    size_t G = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        if (G == 0 || s->t[G - 1] != k[i].t) {
            s->t[G] = k[i].t;
            s->C[G] = k[i].t;
            G++;
        }
        if (k[i].key & 1)
            s->ge[k[i].key / 2] = (uint32_t)(G - 1);
        else
            s->gb[k[i].key / 2] = (uint32_t)(G - 1);
    }
    free(k);
    s->G = G;
    s->last_pin = SIZE_MAX;
    return 0;
}

static int xsm_dep_add(xsm_rstate *s, xsm_dep dep)
{
    if (s->ndeps == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        xsm_dep *p = realloc(s->deps, cap * sizeof *p);
        if (!p)
            return -1;
        s->deps = p;
        s->cap = cap;
    }
    s->deps[s->ndeps++] = dep;
    return 0;
}

/* Where each member of each collective leaves it: the call's end for a
 * blocking collective, the COMPLETION of its request for a nonblocking one
 * (the first completion of that request at or after the post), -1 when
 * unknown. Flat array: member i of collective c at off[c] + i. */
typedef struct xsm_creq {
    uint64_t request;
    int64_t t;
    size_t row;
} xsm_creq;

static int xsm_creq_cmp(const void *a, const void *b)
{
    const xsm_creq *x = a, *y = b;
    if (x->request != y->request) return x->request < y->request ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static int xsm_coll_exits(const xsm_run *run, int64_t **xrow_out, size_t **off_out)
{
    size_t total = 0;
    size_t *off = malloc((run->ncolls + 1) * sizeof *off);
    if (!off)
        return -1;
    for (size_t c = 0; c < run->ncolls; c++) {
        off[c] = total;
        total += run->colls[c].n;
    }
    int64_t *xrow = malloc((total + 1) * sizeof *xrow);
    xsm_creq **req = calloc(run->nranks + 1, sizeof *req);
    size_t *nreq = calloc(run->nranks + 1, sizeof *nreq);
    int rc = xrow && req && nreq ? 0 : -1;
    for (size_t c = 0; !rc && c < run->ncolls; c++) {
        const xsm_collective *k = &run->colls[c];
        for (size_t i = 0; i < k->n; i++) {
            const xsprof_rank_data *d = &run->ranks[k->ranks[i]].d;
            const xsprof_io_mpi *post = &d->mpi[k->rows[i]];
            xrow[off[c] + i] = post->kind == XSPROF_MPI_COLL ? (int64_t)k->rows[i] : -1;
            if (post->kind != XSPROF_MPI_ICOLL || !post->request)
                continue;
            size_t r = (size_t)k->ranks[i];
            if (!req[r]) { /* this rank's completions, once */
                req[r] = malloc((d->nmpi + 1) * sizeof *req[r]);
                if (!req[r]) {
                    rc = -1;
                    break;
                }
                for (size_t j = 0; j < d->nmpi; j++)
                    if (d->mpi[j].kind == XSPROF_MPI_COMPLETION && d->mpi[j].request &&
                        !(d->mpi[j].flags & XSPROF_MPI_F_RECV))
                        req[r][nreq[r]++] = (xsm_creq){d->mpi[j].request, d->mpi[j].t_begin, j};
                if (nreq[r])
                    qsort(req[r], nreq[r], sizeof *req[r], xsm_creq_cmp);
            }
            xsm_creq key = {post->request, post->t_begin, 0};
            size_t lo = 0, hi = nreq[r];
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (xsm_creq_cmp(&req[r][mid], &key) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < nreq[r] && req[r][lo].request == post->request)
                xrow[off[c] + i] = (int64_t)req[r][lo].row;
        }
    }
    for (size_t r = 0; req && r < run->nranks; r++)
        free(req[r]);
    free(req);
    free(nreq);
    if (rc) {
        free(xrow);
        free(off);
        return -1;
    }
    *xrow_out = xrow;
    *off_out = off;
    return 0;
}

/* Position of world rank w in the comm's rank order (for scans), or -1. */
static int64_t xsm_comm_rank(const xsm_run *run, uint32_t comm, int32_t w)
{
    for (size_t r = 0; r < run->nranks; r++) {
        int64_t j = xsm_align_comm_position(&run->ranks[r].d, comm, w);
        if (j != -2)
            return j; /* the first rank that defines comm decides */
    }
    return -1;
}

int64_t xsm_align_comm_position(const xsprof_rank_data *d, uint32_t comm, int32_t w)
{
    for (size_t i = 0; i < d->ncomms; i++) {
        if (d->comms[i].id != comm)
            continue;
        for (uint32_t j = 0; j < d->comms[i].size && d->comms[i].members + j < d->ncomm_members; j++)
            if (d->comm_members[d->comms[i].members + j] == w)
                return j;
        return -1;
    }
    return -2;
}

/* Index of world rank w among the collective's members, or SIZE_MAX. */
static size_t xsm_coll_member(const xsm_collective *c, int32_t w)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->ranks[i] == w)
            return i;
    return SIZE_MAX;
}

static int xsm_deps_build(const xsm_run *run, xsm_rstate *st, int64_t lat, const int64_t *xrow, const size_t *xoff)
{
    for (size_t i = 0; i < run->nmsgs; i++) {
        const xsm_message *m = &run->msgs[i];
        xsm_rstate *src = &st[m->src], *dst = &st[m->dst];
        uint32_t h = src->gb[m->send_row];
        src->pinned[h] = 1;
        if (xsm_dep_add(dst, (xsm_dep){dst->ge[m->recv_row], XSM_DEP_P2P, m->src, h, lat, 0}))
            return -1;
    }
    for (size_t ci = 0; ci < run->ncolls; ci++) {
        const xsm_collective *c = &run->colls[ci];
        size_t root = c->root >= 0 ? xsm_coll_member(c, c->root) : SIZE_MAX;
        for (size_t i = 0; i < c->n; i++) {
            xsm_rstate *s = &st[c->ranks[i]];
            if (xrow[xoff[ci] + i] < 0)
                continue; /* a nonblocking collective whose completion was not recorded */
            if (!xsm_coll_receives(c->coll_kind, &run->ranks[c->ranks[i]].d.mpi[c->rows[i]]))
                continue; /* it takes no data: it may leave before the others come */
            uint32_t exit_g = s->ge[xrow[xoff[ci] + i]];
            switch (c->coll_kind) {
            case XSPROF_COLL_ONE2N:
                if (root == SIZE_MAX || i == root)
                    break;
                st[c->ranks[root]].pinned[st[c->ranks[root]].gb[c->rows[root]]] = 1;
                if (xsm_dep_add(s, (xsm_dep){exit_g, XSM_DEP_P2P, c->ranks[root],
                                             st[c->ranks[root]].gb[c->rows[root]], 0, 0}))
                    return -1;
                break;
            case XSPROF_COLL_SCAN: {
                int64_t me = xsm_comm_rank(run, c->comm, c->ranks[i]);
                for (size_t j = 0; j < c->n && me >= 0; j++) {
                    int64_t other = xsm_comm_rank(run, c->comm, c->ranks[j]);
                    if (j == i || other < 0 || other > me)
                        continue;
                    xsm_rstate *o = &st[c->ranks[j]];
                    o->pinned[o->gb[c->rows[j]]] = 1;
                    if (xsm_dep_add(s, (xsm_dep){exit_g, XSM_DEP_P2P, c->ranks[j], o->gb[c->rows[j]], 0, 0}))
                        return -1;
                }
                break;
            }
            case XSPROF_COLL_N2ONE: /* the root waits for the entries of those that give it data */
                for (size_t j = 0; i == root && j < c->n; j++) {
                    xsm_rstate *o = &st[c->ranks[j]];
                    if (j == i || !xsm_coll_sends(&run->ranks[c->ranks[j]].d.mpi[c->rows[j]]))
                        continue;
                    o->pinned[o->gb[c->rows[j]]] = 1;
                    if (xsm_dep_add(s, (xsm_dep){exit_g, XSM_DEP_P2P, c->ranks[j], o->gb[c->rows[j]], 0, 0}))
                        return -1;
                }
                break;
            default: /* barrier, NxN, unclassified */
                for (size_t j = 0; j < c->n; j++)
                    st[c->ranks[j]].pinned[st[c->ranks[j]].gb[c->rows[j]]] = 1;
                if (xsm_dep_add(s, (xsm_dep){exit_g, XSM_DEP_COLL, -1, 0, 0, ci}))
                    return -1;
            }
        }
    }
    for (size_t r = 0; r < run->nranks; r++)
        if (st[r].ndeps)
            qsort(st[r].deps, st[r].ndeps, sizeof *st[r].deps, xsm_dep_cmp);
    return 0;
}

/* Estimated corrected time of group h on rank s before s processed it. */
static int64_t xsm_estimate(const xsm_rstate *s, size_t h)
{
    if (h < s->cursor)
        return s->C[h];
    int64_t shift = s->cursor ? s->C[s->cursor - 1] - s->t[s->cursor - 1] : 0;
    return s->t[h] + shift;
}

/* Gather the constraints of the next group of rank r. Returns -1 when all
 * are known, else the rank that must advance first. With `force`, unknown
 * sources are estimated instead (only used to break a cycle). */
static int64_t xsm_gather(const xsm_run *run, xsm_rstate *st, xsm_cstate *cs, size_t r, int force)
{
    xsm_rstate *s = &st[r];
    for (; s->di < s->ndeps && s->deps[s->di].group == s->cursor; s->di++) {
        const xsm_dep *d = &s->deps[s->di];
        if (d->kind == XSM_DEP_P2P) {
            xsm_rstate *o = &st[d->rank];
            if (o->cursor <= d->src && !force)
                return d->rank;
            int64_t v = xsm_estimate(o, d->src) + d->lat;
            if (v > s->lower)
                s->lower = v;
            continue;
        }
        const xsm_collective *c = &run->colls[d->coll];
        xsm_cstate *k = &cs[d->coll];
        while (k->done < c->n) {
            xsm_rstate *o = &st[c->ranks[k->done]];
            size_t eg = o->gb[c->rows[k->done]];
            if (o->cursor <= eg)
                break;
            if (o->C[eg] > k->max_entry)
                k->max_entry = o->C[eg];
            k->done++;
        }
        if (k->done < c->n && !force)
            return c->ranks[k->done];
        int64_t v = k->max_entry;
        for (size_t j = k->done; j < c->n; j++) {
            int64_t e = xsm_estimate(&st[c->ranks[j]], st[c->ranks[j]].gb[c->rows[j]]);
            if (e > v)
                v = e;
        }
        if (v > s->lower)
            s->lower = v;
    }
    return -1;
}

/* Fix the corrected time of rank r's next group from the gathered lower bound. */
static void xsm_commit(xsm_rstate *s)
{
    size_t g = s->cursor;
    int64_t shift = g ? s->C[g - 1] - s->t[g - 1] : 0;
    int64_t base = s->t[g] + shift;
    s->C[g] = base;
    if (s->lower > base) {
        int64_t jump = s->lower - base;
        s->C[g] = s->lower;
        if (s->last_pin == SIZE_MAX) {
            /* Nothing earlier is constrained: move the whole prefix, which
             * keeps every earlier interval (a pure offset error). */
            for (size_t i = 0; i < g; i++)
                s->C[i] += jump;
        } else {
            /* Backward amortisation: spread the jump linearly over the
             * groups since the last pinned one, which must stay put. */
            size_t p = s->last_pin;
            __int128 span_c = s->C[g] - s->C[p], span_t = s->t[g] - s->t[p];
            for (size_t i = p + 1; i < g; i++)
                s->C[i] = s->C[p] + (int64_t)(span_c * (s->t[i] - s->t[p]) / span_t);
        }
        s->pinned[g] = 1;
    }
    if (s->pinned[g])
        s->last_pin = g;
    s->cursor++;
    s->lower = INT64_MIN;
}

typedef struct xsm_lc_map {
    const xsm_rstate *s;
    size_t seg;
} xsm_lc_map;

int64_t xsm_align_pl_map(const int64_t *t, const int64_t *C, size_t stride, size_t G, size_t *seg, int64_t x)
{
    if (x < t[0])
        return x + (C[0] - t[0]);
    if (x >= t[(G - 1) * stride])
        return x + (C[(G - 1) * stride] - t[(G - 1) * stride]);
    size_t i = *seg;
    if (i + 2 < G && t[(i + 1) * stride] <= x && x < t[(i + 2) * stride])
        i = ++*seg; /* times mostly move forward: the next segment */
    else if (!(i + 1 < G && t[i * stride] <= x && x < t[(i + 1) * stride])) {
        size_t lo = 0, hi = G - 1;
        while (lo + 1 < hi) {
            size_t mid = (lo + hi) / 2;
            if (t[mid * stride] <= x)
                lo = mid;
            else
                hi = mid;
        }
        i = *seg = lo;
    }
    const int64_t *a = &t[i * stride], *b = &t[(i + 1) * stride], *ca = &C[i * stride], *cb = &C[(i + 1) * stride];
    __int128 num = (__int128)(*cb - *ca) * (x - *a);
    return *ca + (int64_t)(num / (*b - *a));
}

static int64_t xsm_lc_fn(void *ctx, int64_t t)
{
    xsm_lc_map *m = ctx;
    return xsm_align_pl_map(m->s->t, m->s->C, 1, m->s->G, &m->seg, t);
}

void xsm_align_rank_clock(const xsm_run *run, size_t r, xsm_clk *c)
{
    const xsm_rank *k = &run->ranks[r];
    *c = (xsm_clk){k->d.clock, k->d.nclock, 0, k->knots, k->nknots, 0};
}

static int xsm_sample_at_cmp(const void *pa, const void *pb)
{
    const xsm_sample_at *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

size_t xsm_align_samples(const xsm_run *run, size_t r, xsm_sample_at *at)
{
    const xsprof_rank_data *d = &run->ranks[r].d;
    xsm_clk c;
    xsm_align_rank_clock(run, r, &c);
    size_t n = 0;
    for (size_t k = 0; k < d->nsamples; k++) {
        int64_t t = xsm_align_sample_time(run, &c, d->samples[k].t);
        if (!run->win || (t >= run->win_from && t <= run->win_to)) /* as the events outside --from/--to */
            at[n++] = (xsm_sample_at){t, (uint32_t)k};
    }
    qsort(at, n, sizeof *at, xsm_sample_at_cmp);
    return n;
}

/* The map of rank state s kept for xsm_align_rank_clock: only the groups
 * whose shift differs from a neighbour's (and the first and last), the
 * same map exactly (as merge/align/stream_clc.c keeps it); 0, or -1. */
static int xsm_keep_knots(xsm_rank *k, const xsm_rstate *s)
{
    int64_t *v = malloc(2 * s->G * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (size_t g = 0; g < s->G; g++) {
        int64_t sh = s->C[g] - s->t[g];
        if (g == 0 || g + 1 == s->G || sh != s->C[g - 1] - s->t[g - 1] || sh != s->C[g + 1] - s->t[g + 1]) {
            v[2 * n] = s->t[g];
            v[2 * n + 1] = s->C[g];
            n++;
        }
    }
    k->knots = v;
    k->nknots = n;
    k->knots_own = 1;
    return 0;
}

static void xsm_rstates_free(xsm_rstate *st, size_t n)
{
    for (size_t r = 0; r < n && st; r++) {
        free(st[r].t);
        free(st[r].C);
        free(st[r].pinned);
        free(st[r].gb);
        free(st[r].ge);
        free(st[r].deps);
    }
    free(st);
}

int xsm_align_logical_identity(const xsm_run *run)
{
    return run->min_latency_ns == 0 && run->clock.violations_before == 0;
}

int xsm_align_logical(xsm_run *run, int64_t lat, char *err, size_t errlen)
{
    run->clock.violations_before = xsm_align_violations(run);
    run->min_latency_ns = lat;
    if (xsm_align_logical_identity(run)) {
        /* Every constraint already holds: each group keeps its time (no
         * jump, so no shift ever propagates) and the clock is the identity. */
        for (size_t r = 0; r < run->nranks; r++)
            run->ranks[r].correction_ns = 0;
        run->clock.max_correction_ns = 0;
        run->clock.violations_after = 0;
        return 0;
    }
    size_t n = run->nranks;
    int64_t *xrow = NULL;
    size_t *xoff = NULL;
    xsm_rstate *st = calloc(n ? n : 1, sizeof *st);
    xsm_cstate *cs = calloc(run->ncolls ? run->ncolls : 1, sizeof *cs);
    size_t *wait_head = malloc((n ? n : 1) * sizeof *wait_head);
    size_t *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!st || !cs || !wait_head || !stack)
        goto oom;
    for (size_t r = 0; r < n; r++) {
        if (xsm_rstate_build(&run->ranks[r].d, &st[r]))
            goto oom;
        st[r].lower = INT64_MIN;
        wait_head[r] = SIZE_MAX;
    }
    for (size_t c = 0; c < run->ncolls; c++)
        cs[c].max_entry = INT64_MIN;
    if (xsm_coll_exits(run, &xrow, &xoff) || xsm_deps_build(run, st, lat, xrow, xoff))
        goto oom;
    /* Worklist: a rank runs until it needs a group another rank has not
     * processed yet, then waits on that rank's list. */
    size_t nstack = 0, finished = 0;
    for (size_t r = n; r-- > 0;) {
        if (st[r].G == 0)
            finished++; /* no MPI rows: nothing to order */
        else
            stack[nstack++] = r;
    }
    while (finished < n) {
        if (nstack == 0) {
            /* A cycle (only from inconsistent input): force the pending
             * group with the earliest time, then continue. */
            size_t best = SIZE_MAX;
            for (size_t r = 0; r < n; r++)
                if (st[r].cursor < st[r].G && (best == SIZE_MAX || xsm_estimate(&st[r], st[r].cursor) <
                                                                       xsm_estimate(&st[best], st[best].cursor)))
                    best = r;
            xsm_gather(run, st, cs, best, 1);
            xsm_commit(&st[best]);
            if (st[best].cursor == st[best].G)
                finished++;
            for (size_t r = 0; r < n; r++)
                wait_head[r] = SIZE_MAX;
            for (size_t r = 0; r < n; r++)
                if (st[r].cursor < st[r].G)
                    stack[nstack++] = r;
            continue;
        }
        size_t r = stack[--nstack];
        xsm_rstate *s = &st[r];
        size_t before = s->cursor;
        int64_t blocker = -1;
        while (s->cursor < s->G && (blocker = xsm_gather(run, st, cs, r, 0)) < 0)
            xsm_commit(s);
        if (s->cursor == s->G && before < s->G)
            finished++;
        if (s->cursor < s->G) {
            s->waiting_next = wait_head[blocker];
            wait_head[blocker] = r;
        }
        if (s->cursor != before) {
            for (size_t w = wait_head[r]; w != SIZE_MAX;) {
                size_t next = st[w].waiting_next;
                stack[nstack++] = w;
                w = next;
            }
            wait_head[r] = SIZE_MAX;
        }
    }
    int64_t max_corr = 0;
    int knots_lost = 0;
    xsm_sync_ro(run); /* every process has read the times it needed: now they move */
    for (size_t r = 0; r < n; r++) {
        xsm_rstate *s = &st[r];
        int64_t corr = 0;
        for (size_t g = 0; g < s->G; g++)
            if (s->C[g] - s->t[g] > corr)
                corr = s->C[g] - s->t[g];
        run->ranks[r].correction_ns = corr;
        if (corr > max_corr)
            max_corr = corr;
        if (s->G && corr > 0 && !run->ranks[r].ro) { /* an ro rank's owner corrects it */
            xsm_lc_map m = {s, 0};
            xsm_rank_map(&run->ranks[r].d, xsm_lc_fn, &m, NULL);
        }
        if (s->G && corr > 0 && !run->ranks[r].knots && xsm_keep_knots(&run->ranks[r], s))
            knots_lost = 1; /* said after the syncs, which every process reaches */
    }
    run->clock.max_correction_ns = max_corr;
    xsm_sync_ro(run);
    run->clock.violations_after = xsm_align_violations(run);
    if (knots_lost)
        goto oom;
    xsm_rstates_free(st, n);
    free(xrow);
    free(xoff);
    free(cs);
    free(wait_head);
    free(stack);
    return 0;
oom:
    xsm_rstates_free(st, n);
    free(xrow);
    free(xoff);
    free(cs);
    free(wait_head);
    free(stack);
    return xsm_err_set(err, errlen, "xsmerge: out of memory in clock alignment");
}

enum { XSM_VIOL_PARTS = 64 };

typedef struct xsm_viol_ctx {
    const xsm_run *run;
    uint64_t count[XSM_VIOL_PARTS];
} xsm_viol_ctx;


/* Messages received before they were sent, in one 64th of the messages. */
static int xsm_viol_part(void *ctx, size_t part)
{
    xsm_viol_ctx *c = ctx;
    const xsm_run *run = c->run;
    c->count[part] = 0;
    if (!xsm_run_mine(run, part))
        return 0;
    size_t lo = run->nmsgs / XSM_VIOL_PARTS * part, hi = part + 1 == XSM_VIOL_PARTS ? run->nmsgs : lo + run->nmsgs / XSM_VIOL_PARTS;
    uint64_t v = 0;
    for (size_t i = lo; i < hi; i++) {
        const xsm_message *m = &run->msgs[i];
        v += run->ranks[m->dst].d.mpi[m->recv_row].t_end < run->ranks[m->src].d.mpi[m->send_row].t_begin;
    }
    c->count[part] = v;
    return 0;
}

/* This process's count joined with the others' (UINT64_MAX: one ran out
 * of memory). Every process calls it once per count. */
static uint64_t xsm_viol_total(const xsm_run *run, uint64_t v)
{
    if (!run->reduce)
        return v;
    int64_t s[2] = {v == UINT64_MAX ? 0 : (int64_t)v, v == UINT64_MAX};
    run->reduce(run->sync_ctx, s, 2, XSM_REDUCE_SUM);
    return s[1] ? UINT64_MAX : (uint64_t)s[0];
}

uint64_t xsm_align_violations(const xsm_run *run)
{
    xsm_viol_ctx vc = {.run = run};
    xsm_parallel_for(XSM_VIOL_PARTS, xsm_viol_part, &vc);
    uint64_t v = 0;
    for (size_t p = 0; p < XSM_VIOL_PARTS; p++)
        v += vc.count[p];
    int64_t *xrow;
    size_t *xoff;
    if (xsm_coll_exits(run, &xrow, &xoff))
        return xsm_viol_total(run, UINT64_MAX); /* out of memory: cannot claim the clocks agree */
    xsm_coll_point *pt = NULL;
    size_t cap = 0;
    for (size_t ci = 0; ci < run->ncolls && v != UINT64_MAX; ci++) {
        const xsm_collective *c = &run->colls[ci];
        if (!xsm_run_mine(run, ci))
            continue;
        if (c->n > cap) {
            xsm_coll_point *p = realloc(pt, c->n * sizeof *p);
            if (!p) {
                v = UINT64_MAX;
                break;
            }
            pt = p;
            cap = c->n;
        }
        for (size_t i = 0; i < c->n; i++) {
            int64_t x = xrow[xoff[ci] + i];
            const xsprof_io_mpi *row = &run->ranks[c->ranks[i]].d.mpi[c->rows[i]];
            pt[i] = (xsm_coll_point){row->t_begin, x >= 0 ? run->ranks[c->ranks[i]].d.mpi[x].t_end : 0, x >= 0,
                                     c->coll_kind == XSPROF_COLL_SCAN ? xsm_comm_rank(run, c->comm, c->ranks[i]) : -1,
                                     xsm_coll_receives(c->coll_kind, row), xsm_coll_sends(row)};
        }
        v += xsm_align_coll_late(c->coll_kind, pt, c->n, c->root >= 0 ? xsm_coll_member(c, c->root) : SIZE_MAX);
    }
    free(pt);
    free(xrow);
    free(xoff);
    return xsm_viol_total(run, v);
}

uint64_t xsm_align_coll_late(int kind, const xsm_coll_point *m, size_t n, size_t root)
{
    int64_t last_entry = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        if (m[i].entry > last_entry)
            last_entry = m[i].entry;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].has_exit || !m[i].receives)
            continue; /* no completion recorded, or no data taken: no constraint */
        int64_t need;
        switch (kind) {
        case XSPROF_COLL_ONE2N:
            if (root == SIZE_MAX || i == root)
                continue;
            need = m[root].entry;
            break;
        case XSPROF_COLL_SCAN:
            need = INT64_MIN;
            for (size_t j = 0; j < n && m[i].pos >= 0; j++)
                if (m[j].pos >= 0 && m[j].pos <= m[i].pos && m[j].entry > need)
                    need = m[j].entry;
            break;
        case XSPROF_COLL_N2ONE: /* the root, on the entries of those that give it data */
            if (i != root)
                continue;
            need = INT64_MIN;
            for (size_t j = 0; j < n; j++)
                if (j != i && m[j].sends && m[j].entry > need)
                    need = m[j].entry;
            break;
        default:
            need = last_entry;
        }
        v += m[i].exit < need;
    }
    return v;
}

static int64_t xsm_sub_fn(void *ctx, int64_t t) { return t - *(const int64_t *)ctx; }

typedef struct xsm_origin_ctx {
    xsm_run *run;
    int64_t *span; /* per rank: first begin, last end */
    int64_t t0;
} xsm_origin_ctx;

static void xsm_rank_span(const xsprof_rank_data *d, int64_t *t0_out, int64_t *t1_out)
{
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
#define XSM_SPAN(arr, cnt, b, e)                                   \
    for (size_t i = 0; i < (cnt); i++) {                           \
        if ((arr)[i].b < t0) t0 = (arr)[i].b;                      \
        if ((arr)[i].e > t1) t1 = (arr)[i].e;                      \
    }
    XSM_SPAN(d->regions, d->nregions, t_begin, t_end)
    XSM_SPAN(d->mpi, d->nmpi, t_begin, t_end)
    XSM_SPAN(d->gpu, d->ngpu, t_begin, t_end)
    XSM_SPAN(d->instants, d->ninstants, t, t)
    XSM_SPAN(d->counters, d->ncounters, t, t)
    XSM_SPAN(d->mem, d->nmem, t, t)
#undef XSM_SPAN
    *t0_out = t0;
    *t1_out = t1;
}

static int xsm_span_rank(void *ctx, size_t r)
{
    xsm_origin_ctx *c = ctx;
    c->span[2 * r] = INT64_MAX;
    c->span[2 * r + 1] = INT64_MIN;
    if (c->run->ranks[r].present && !(c->run->reduce && c->run->ranks[r].ro)) /* else its owner's */
        xsm_rank_span(&c->run->ranks[r].d, &c->span[2 * r], &c->span[2 * r + 1]);
    return 0;
}

static int xsm_shift_rank(void *ctx, size_t r)
{
    xsm_origin_ctx *c = ctx;
    if (c->run->ranks[r].present && !c->run->ranks[r].ro)
        xsm_rank_map(&c->run->ranks[r].d, xsm_sub_fn, &c->t0, NULL);
    return 0;
}

void xsm_align_origin_span(xsm_run *run, const int64_t *known)
{
    xsm_origin_ctx c = {run, known ? NULL : calloc(2 * run->nranks + 2, sizeof(int64_t)), 0};
    const int64_t *span = known ? known : c.span;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    if (c.span) /* ranks are independent */
        xsm_parallel_for(run->nranks, xsm_span_rank, &c);
    for (size_t r = 0; r < run->nranks; r++) {
        int64_t a = INT64_MAX, b = INT64_MIN;
        if (span) {
            a = span[2 * r];
            b = span[2 * r + 1];
        } else if (run->ranks[r].present && !(run->reduce && run->ranks[r].ro)) { /* out of memory: one at a time */
            xsm_rank_span(&run->ranks[r].d, &a, &b);
        }
        t0 = a < t0 ? a : t0;
        t1 = b > t1 ? b : t1;
    }
    free(c.span);
    if (run->reduce) { /* each process spanned the ranks it owns */
        run->reduce(run->sync_ctx, &t0, 1, XSM_REDUCE_MIN);
        run->reduce(run->sync_ctx, &t1, 1, XSM_REDUCE_MAX);
    }
    if (t0 == INT64_MAX) {
        run->t0_ref_ns = 0;
        run->t_end = 0;
        return;
    }
    run->t0_ref_ns = t0;
    run->t_end = t1 - t0;
    c.t0 = t0;
    xsm_sync_ro(run); /* every process has read the times before the shift */
    xsm_parallel_for(run->nranks, xsm_shift_rank, &c);
    xsm_sync_ro(run);
}

void xsm_align_origin(xsm_run *run) { xsm_align_origin_span(run, NULL); }
