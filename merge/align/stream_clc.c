/* merge/align/stream_clc.c — the controlled logical clock of merge/align
 * (Becker et al.), in streaming mode, with the same result.
 *
 * merge/align computes, per rank, a corrected time C for every "group"
 * (distinct time of an MPI call boundary) and maps every event through the
 * piecewise-linear function of the (t, C) points. Here pass 1 (collect
 * mode) has written each rank's constraints to its dep file and set a bit
 * per row whose begin is pinned or carries a record. This pass walks every
 * rank's groups in time order (a rank waits while a group it depends on is
 * not corrected yet: the sender's begin, a collective's entries) and keeps
 * of each rank only what is still open:
 *
 * - a group's C depends only on its predecessor's shift and its
 *   constraints, whose sources are pinned, hence final once processed;
 * - groups after the rank's last pinned group all have that group's shift
 *   (a jump pins): only their times are kept, and a jump turns them into
 *   the linear ramp merge/align writes;
 * - the map is the same through the groups where the shift changes
 *   (between two groups of one shift the interpolation is exact), so only
 *   those knots go to the rank's knot file, read back by every later pass.
 *
 * Memory: per rank one window of rows, the calls still open, the times of
 * the groups since its last pinned group, and records read ahead; globally
 * the corrected begins of sends and collective entries not yet consumed.
 * A cycle of constraints (only from inconsistent input) hands over to the
 * in-memory merge, which breaks it. */
#include "merge/stream/internal.h"
#include "merge/util.h"
#include "core/record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- a u64 -> fixed-size value table (chained, free list) ------------- */

typedef struct xsm_umap {
    unsigned char *v; /* entries: key, next, live, value */
    size_t vsize, esize, n, cap;
    uint32_t *head;
    size_t nb;
    uint32_t free_list;
    size_t live;
} xsm_umap;

#define XSM_UKEY(m, i) (*(uint64_t *)((m)->v + (size_t)(i) * (m)->esize))
#define XSM_UNEXT(m, i) (*(uint32_t *)((m)->v + (size_t)(i) * (m)->esize + 8))
#define XSM_ULIVE(m, i) (*((m)->v + (size_t)(i) * (m)->esize + 12))
#define XSM_UVAL(m, i) ((void *)((m)->v + (size_t)(i) * (m)->esize + 16))

static void xsm_umap_init(xsm_umap *m, size_t vsize)
{
    memset(m, 0, sizeof *m);
    m->vsize = vsize;
    m->esize = 16 + ((vsize + 7) & ~(size_t)7);
    m->free_list = UINT32_MAX;
}

static void xsm_umap_free(xsm_umap *m)
{
    free(m->v);
    free(m->head);
}

static size_t xsm_umap_bucket(const xsm_umap *m, uint64_t k)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & (m->nb - 1);
}

static void *xsm_umap_get(const xsm_umap *m, uint64_t k)
{
    if (!m->nb)
        return NULL;
    for (uint32_t i = m->head[xsm_umap_bucket(m, k)]; i != UINT32_MAX; i = XSM_UNEXT(m, i))
        if (XSM_UKEY(m, i) == k)
            return XSM_UVAL(m, i);
    return NULL;
}

static int xsm_umap_rehash(xsm_umap *m, size_t nb)
{
    uint32_t *head = malloc(nb * sizeof *head);
    if (!head)
        return -1;
    for (size_t b = 0; b < nb; b++)
        head[b] = UINT32_MAX;
    free(m->head);
    m->head = head;
    m->nb = nb;
    for (size_t i = 0; i < m->n; i++) {
        if (!XSM_ULIVE(m, i))
            continue;
        size_t b = xsm_umap_bucket(m, XSM_UKEY(m, i));
        XSM_UNEXT(m, i) = head[b];
        head[b] = (uint32_t)i;
    }
    return 0;
}

/* A new value slot for k (k must not be present); NULL when memory runs out. */
static void *xsm_umap_put(xsm_umap *m, uint64_t k)
{
    if (m->live + 1 > m->nb && xsm_umap_rehash(m, m->nb ? 2 * m->nb : 256))
        return NULL;
    uint32_t i;
    if (m->free_list != UINT32_MAX) {
        i = m->free_list;
        m->free_list = XSM_UNEXT(m, i);
    } else {
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 256;
            if (cap >= UINT32_MAX)
                return NULL;
            unsigned char *v = realloc(m->v, cap * m->esize);
            if (!v)
                return NULL;
            m->v = v;
            m->cap = cap;
        }
        i = (uint32_t)m->n++;
    }
    size_t b = xsm_umap_bucket(m, k);
    XSM_UKEY(m, i) = k;
    XSM_ULIVE(m, i) = 1;
    XSM_UNEXT(m, i) = m->head[b];
    m->head[b] = i;
    m->live++;
    return XSM_UVAL(m, i);
}

static void xsm_umap_del(xsm_umap *m, uint64_t k)
{
    if (!m->nb)
        return;
    for (uint32_t *p = &m->head[xsm_umap_bucket(m, k)]; *p != UINT32_MAX; p = &XSM_UNEXT(m, *p)) {
        if (XSM_UKEY(m, *p) != k)
            continue;
        uint32_t i = *p;
        *p = XSM_UNEXT(m, i);
        XSM_ULIVE(m, i) = 0;
        XSM_UNEXT(m, i) = m->free_list;
        m->free_list = i;
        m->live--;
        return;
    }
}

/* ---- per rank ------------------------------------------------------------ */

typedef struct xsm_cend {
    int64_t t;
    uint32_t row;
} xsm_cend;

typedef struct xsm_cbound {
    uint32_t row;
    uint8_t end;  /* 1: the row's end, 0: its begin */
    uint8_t send; /* begin of a send: its corrected time is published */
} xsm_cbound;

typedef struct xsm_crow { /* what the begin heap keeps of a row */
    int64_t t_end;
    uint8_t send;
} xsm_crow;

typedef struct xsm_crank {
    int32_t r;
    xsm_tab tab;
    uint64_t next;
    xsm_sheap beg;          /* rows in begin order */
    xsm_cend *ends;         /* min-heap of the ends of rows begun */
    size_t nends, capends;
    /* the group being processed */
    int has_group;
    int64_t gt;
    xsm_cbound *gb;
    size_t ngb, capgb;
    /* records read ahead of the group that needs them: row * 2 + end */
    xsm_umap ahead;
    int dep_eof;
    int64_t floor;          /* time of the group formed last: no begin may come before it */
    /* the clock */
    int pinned_seen;        /* a pinned group was processed */
    int64_t tp, Cp;         /* the last one */
    int64_t shift;          /* C - t of the last group processed */
    uint64_t ntent;         /* groups since the last pinned one (or since the start) */
    int64_t first_t, last_t;
    int64_t *tent;          /* their times, after the first pin (a ramp needs each) */
    size_t captent;
    /* knots: the groups where the shift changes */
    FILE *kf;
    int has_prev, prev_written;
    int64_t prev_t, prev_C;
    size_t nknots;
    int64_t corr;
    /* scheduling */
    size_t wait_next;       /* next rank waiting on the same rank */
    int done;
} xsm_crank;

typedef struct xsm_cstate { /* a collective being corrected */
    xsm_ccoll h;
    xsm_cmem *m;
    int64_t *entry;         /* corrected entries */
    unsigned char *has;
    uint32_t published, exits_done;
} xsm_cstate;

typedef struct xsm_cctx {
    xsm_stream *s;
    xsm_crank *k;
    size_t n;
    size_t *heap, nheap;    /* ranks by their group's time */
    size_t *wait_head;      /* per rank: ranks waiting on it */
    xsm_umap pub;           /* (rank, send row) -> corrected begin */
    xsm_umap colls;         /* id -> xsm_cstate */
    int coll_eof;
    int64_t lat;
    char *err;
    size_t errlen;
} xsm_cctx;

static int xsm_oom(xsm_cctx *c)
{
    return xsm_err_set(c->err, c->errlen, "xsmerge: out of memory in clock alignment");
}

/* ---- the rank's groups ---------------------------------------------------- */

static void xsm_ends_push(xsm_crank *k, xsm_cend e)
{
    size_t i = k->nends++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (k->ends[p].t <= e.t)
            break;
        k->ends[i] = k->ends[p];
        i = p;
    }
    k->ends[i] = e;
}

static xsm_cend xsm_ends_pop(xsm_crank *k)
{
    xsm_cend top = k->ends[0], last = k->ends[--k->nends];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        int64_t tm = last.t;
        if (l < k->nends && k->ends[l].t < tm) { m = l; tm = k->ends[l].t; }
        if (l + 1 < k->nends && k->ends[l + 1].t < tm) m = l + 1;
        if (m == i)
            break;
        k->ends[i] = k->ends[m];
        i = m;
    }
    if (k->nends)
        k->ends[i] = last;
    return top;
}

/* Fill the begin heap up to its window (rows in table order, mapped). */
static int xsm_crank_fill(xsm_cctx *c, xsm_crank *k)
{
    xsm_srank *sr = &c->s->r[k->r];
    while (k->next < k->tab.n && k->beg.n <= k->beg.window) {
        uint64_t i = k->next++;
        const xsprof_io_mpi *row = xsm_tab_row(&k->tab, i);
        if (!row)
            return xsm_err_set(c->err, c->errlen, "%s", k->tab.err) ? 2 : 2;
        xsm_skey key = {xsm_align_clock_map(&sr->clk, row->t_begin), 0, 0, 0, i};
        int send = row->kind == XSPROF_MPI_SEND || row->kind == XSPROF_MPI_SSEND || row->kind == XSPROF_MPI_ISEND ||
                   row->kind == XSPROF_MPI_SENDRECV;
        xsm_crow cr = {xsm_align_clock_map(&sr->clk, row->t_end), (uint8_t)(send && xsm_bits_get(sr->pin, i))};
        if (xsm_sheap_late(&k->beg, &key) || key.t < k->floor) {
            c->s->proc_late = 1; /* as pass 1: the merge starts again with the whole window */
            return xsm_err_set(c->err, c->errlen, "MPI calls of rank %d are further out of time order than the window",
                               (int)k->r) ? 2 : 2;
        }
        xsm_sheap_push(&k->beg, &key, &cr);
    }
    return 0;
}

static int xsm_group_add(xsm_crank *k, uint32_t row, int end, int send)
{
    if (xsm_grow((void **)&k->gb, &k->capgb, k->ngb, sizeof *k->gb))
        return -1;
    k->gb[k->ngb++] = (xsm_cbound){row, (uint8_t)end, (uint8_t)send};
    return 0;
}

/* The next group: every boundary at the smallest time left. */
static int xsm_crank_next(xsm_cctx *c, xsm_crank *k)
{
    k->ngb = 0;
    k->has_group = 0;
    int rc = xsm_crank_fill(c, k);
    if (rc)
        return rc;
    if (!k->beg.n && !k->nends)
        return 0;
    int64_t t = k->nends ? k->ends[0].t : INT64_MAX;
    if (k->beg.n && xsm_sheap_top(&k->beg)->t < t)
        t = xsm_sheap_top(&k->beg)->t;
    k->floor = t;
    for (;;) {
        if (k->beg.n && xsm_sheap_top(&k->beg)->t == t) {
            xsm_skey key;
            xsm_crow cr = *(const xsm_crow *)xsm_sheap_pop(&k->beg, &key);
            if (xsm_grow((void **)&k->ends, &k->capends, k->nends, sizeof *k->ends))
                return xsm_oom(c);
            xsm_ends_push(k, (xsm_cend){cr.t_end, (uint32_t)key.row});
            if (xsm_group_add(k, (uint32_t)key.row, 0, cr.send))
                return xsm_oom(c);
            if ((rc = xsm_crank_fill(c, k)))
                return rc;
            continue;
        }
        if (k->nends && k->ends[0].t == t) {
            xsm_cend e = xsm_ends_pop(k);
            if (xsm_group_add(k, e.row, 1, 0))
                return xsm_oom(c);
            continue;
        }
        break;
    }
    k->gt = t;
    k->has_group = 1;
    return 0;
}

/* ---- records -------------------------------------------------------------- */

/* The record of (row, end), read ahead from the rank's dep file as far as
 * needed; NULL (err set) when the file ends without it. */
static const xsm_cdep *xsm_record(xsm_cctx *c, xsm_crank *k, uint32_t row, int end)
{
    uint64_t key = (uint64_t)row * 2 + (uint64_t)end;
    const xsm_cdep *d = xsm_umap_get(&k->ahead, key);
    xsm_srank *sr = &c->s->r[k->r];
    while (!d && !k->dep_eof && sr->dep) {
        xsm_cdep x;
        if (fread(&x, sizeof x, 1, sr->dep) != 1) {
            k->dep_eof = 1;
            break;
        }
        uint64_t xk = (uint64_t)x.row * 2 + (x.kind != XSM_CDEP_ENTRY);
        xsm_cdep *slot = xsm_umap_put(&k->ahead, xk);
        if (!slot) {
            xsm_oom(c);
            return NULL;
        }
        *slot = x;
        if (xk == key)
            d = slot;
    }
    if (!d)
        xsm_err_set(c->err, c->errlen, "xsmerge: %s: a constraint record is missing", sr->dep_path);
    return d;
}

/* The collective `id`, read ahead from the coll file as far as needed. */
static xsm_cstate *xsm_coll_state(xsm_cctx *c, uint64_t id)
{
    xsm_cstate *st = xsm_umap_get(&c->colls, id);
    xsm_stream *s = c->s;
    while (!st && !c->coll_eof && s->coll_file) {
        xsm_cstate x;
        memset(&x, 0, sizeof x);
        if (fread(&x.h, sizeof x.h, 1, s->coll_file) != 1) {
            c->coll_eof = 1;
            break;
        }
        x.m = malloc((x.h.n + 1) * sizeof *x.m);
        x.entry = malloc((x.h.n + 1) * sizeof *x.entry);
        x.has = calloc(x.h.n + 1, 1);
        xsm_cstate *slot = x.m && x.entry && x.has ? xsm_umap_put(&c->colls, x.h.id) : NULL;
        if (!slot || fread(x.m, sizeof *x.m, x.h.n, s->coll_file) != x.h.n) {
            free(x.m);
            free(x.entry);
            free(x.has);
            if (!slot)
                xsm_oom(c);
            else
                xsm_err_set(c->err, c->errlen, "xsmerge: %s: truncated", s->coll_path);
            return NULL;
        }
        *slot = x;
        if (x.h.id == id)
            st = slot;
    }
    if (!st && !c->err[0])
        xsm_err_set(c->err, c->errlen, "xsmerge: %s: collective %llu is missing", s->coll_path, (unsigned long long)id);
    return st;
}

static void xsm_coll_maybe_free(xsm_cctx *c, xsm_cstate *st)
{
    if (st->published < st->h.n || st->exits_done < st->h.nexits)
        return;
    free(st->m);
    free(st->entry);
    free(st->has);
    xsm_umap_del(&c->colls, st->h.id);
}

/* ---- one group ------------------------------------------------------------ */

enum { XSM_G_READY = 0, XSM_G_ERR = 1, XSM_G_FALLBACK = 2, XSM_G_BLOCKED = 3 };

/* The lower bound of the rank's group from its constraints, or BLOCKED
 * with *blocker = the rank that must advance first. */
static int xsm_gather(xsm_cctx *c, xsm_crank *k, int64_t *lower, size_t *blocker)
{
    xsm_srank *sr = &c->s->r[k->r];
    *lower = INT64_MIN;
    for (size_t b = 0; b < k->ngb; b++) {
        const xsm_cbound *x = &k->gb[b];
        if (!x->end || !xsm_bits_get(sr->depe, x->row))
            continue;
        const xsm_cdep *d = xsm_record(c, k, x->row, 1);
        if (!d)
            return XSM_G_ERR;
        if (d->kind == XSM_CDEP_RECV) {
            const int64_t *v = xsm_umap_get(&c->pub, ((uint64_t)(uint32_t)d->src << 32) | d->idx);
            if (!v) {
                *blocker = (size_t)d->src;
                return XSM_G_BLOCKED;
            }
            if (*v + c->lat > *lower)
                *lower = *v + c->lat;
            continue;
        }
        xsm_cstate *st = xsm_coll_state(c, d->coll);
        if (!st)
            return XSM_G_ERR;
        uint32_t i = d->idx;
        for (uint32_t j = 0; j < st->h.n; j++) {
            int need;
            switch (st->h.need) {
            case XSM_CNEED_ROOT: need = j == st->h.root; break;
            case XSM_CNEED_SCAN: need = j != i && st->m[j].pos >= 0 && st->m[j].pos <= st->m[i].pos; break;
            case XSM_CNEED_SENDERS: need = j != i && st->m[j].sends; break;
            default: need = 1;
            }
            if (!need)
                continue;
            if (!st->has[j]) {
                *blocker = (size_t)st->m[j].rank;
                return XSM_G_BLOCKED;
            }
            if (st->entry[j] > *lower)
                *lower = st->entry[j];
        }
    }
    return XSM_G_READY;
}

/* One finished group (t, C) for the knot file: kept when its shift differs
 * from its predecessor's or its successor's (and the first and last). */
static int xsm_knot_put(xsm_cctx *c, xsm_crank *k, int64_t t, int64_t C)
{
    xsm_srank *sr = &c->s->r[k->r];
    if (C - t > k->corr)
        k->corr = C - t;
    int write_prev = 0, write_me = 0;
    if (!k->has_prev) {
        write_me = 1;
    } else if (C - t != k->prev_C - k->prev_t) {
        write_prev = !k->prev_written;
        write_me = 1;
    }
    if (!k->kf && !(k->kf = xsm_stream_tmp(c->s, "knots", k->r, sr->knot_path, sizeof sr->knot_path, c->err,
                                             c->errlen)))
        return 1;
    int64_t p[2] = {k->prev_t, k->prev_C}, me[2] = {t, C};
    if ((write_prev && fwrite(p, sizeof p, 1, k->kf) != 1) || (write_me && fwrite(me, sizeof me, 1, k->kf) != 1))
        return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                           sr->knot_path, strerror(errno));
    k->nknots += (size_t)write_prev + (size_t)write_me;
    k->has_prev = 1;
    k->prev_written = write_me;
    k->prev_t = t;
    k->prev_C = C;
    return 0;
}

/* The groups since the last pin are final: each at its shift, or on the
 * ramp from the last pin to (gt, C) after a jump. */
static int xsm_tent_flush(xsm_cctx *c, xsm_crank *k, int jump, int64_t gt, int64_t C)
{
    if (!k->ntent)
        return 0;
    if (!k->pinned_seen) {
        /* before the first pin every group has one shift: the jump's
         * (merge/align moves the whole prefix) or none */
        int64_t S = jump ? C - gt : k->shift;
        if (xsm_knot_put(c, k, k->first_t, k->first_t + S))
            return 1;
        if (k->ntent > 1 && xsm_knot_put(c, k, k->last_t, k->last_t + S))
            return 1;
        k->ntent = 0;
        return 0;
    }
    __int128 span_c = C - k->Cp, span_t = gt - k->tp;
    for (uint64_t i = 0; i < k->ntent; i++) {
        int64_t ti = k->tent[i];
        int64_t Ci = jump ? k->Cp + (int64_t)(span_c * (ti - k->tp) / span_t) : ti + k->shift;
        if (xsm_knot_put(c, k, ti, Ci))
            return 1;
    }
    k->ntent = 0;
    return 0;
}

static int xsm_tent_add(xsm_cctx *c, xsm_crank *k, int64_t t)
{
    if (!k->ntent)
        k->first_t = t;
    k->last_t = t;
    if (k->pinned_seen) {
        if (xsm_grow((void **)&k->tent, &k->captent, k->ntent, sizeof *k->tent))
            return xsm_oom(c);
        k->tent[k->ntent] = t;
    }
    k->ntent++;
    return 0;
}

/* Correct the group (merge/align's xsm_commit), consume its constraints,
 * publish its pinned begins. */
static int xsm_commit(xsm_cctx *c, xsm_crank *k, int64_t lower)
{
    xsm_srank *sr = &c->s->r[k->r];
    int64_t gt = k->gt, base = gt + k->shift, C = base;
    int jump = lower > base, pinned = jump;
    if (jump)
        C = lower;
    for (size_t b = 0; b < k->ngb && !pinned; b++)
        pinned = !k->gb[b].end && xsm_bits_get(sr->pin, k->gb[b].row);
    if (pinned) {
        if (xsm_tent_flush(c, k, jump, gt, C) || xsm_knot_put(c, k, gt, C))
            return 1;
        k->pinned_seen = 1;
        k->tp = gt;
        k->Cp = C;
    } else if (xsm_tent_add(c, k, gt)) {
        return 1;
    }
    k->shift = C - gt;
    for (size_t b = 0; b < k->ngb; b++) {
        const xsm_cbound *x = &k->gb[b];
        if (x->end) {
            if (!xsm_bits_get(sr->depe, x->row))
                continue;
            uint64_t key = (uint64_t)x->row * 2 + 1;
            const xsm_cdep *d = xsm_umap_get(&k->ahead, key);
            if (d->kind == XSM_CDEP_RECV) {
                xsm_umap_del(&c->pub, ((uint64_t)(uint32_t)d->src << 32) | d->idx);
            } else {
                xsm_cstate *st = xsm_umap_get(&c->colls, d->coll);
                st->exits_done++;
                xsm_coll_maybe_free(c, st);
            }
            xsm_umap_del(&k->ahead, key);
            continue;
        }
        if (x->send) {
            int64_t *v = xsm_umap_put(&c->pub, ((uint64_t)(uint32_t)k->r << 32) | x->row);
            if (!v)
                return xsm_oom(c);
            *v = C;
        }
        if (xsm_bits_get(sr->depb, x->row)) {
            const xsm_cdep *d = xsm_record(c, k, x->row, 0);
            xsm_cstate *st = d ? xsm_coll_state(c, d->coll) : NULL;
            if (!st)
                return 1;
            st->entry[d->idx] = C;
            st->has[d->idx] = 1;
            st->published++;
            xsm_umap_del(&k->ahead, (uint64_t)x->row * 2);
            xsm_coll_maybe_free(c, st);
        }
    }
    return 0;
}

/* The rank has no group left: its last groups keep their shift. */
static int xsm_crank_finish(xsm_cctx *c, xsm_crank *k)
{
    xsm_srank *sr = &c->s->r[k->r];
    k->done = 1;
    if (xsm_tent_flush(c, k, 0, 0, 0))
        return 1;
    if (k->has_prev && !k->prev_written) {
        int64_t p[2] = {k->prev_t, k->prev_C};
        if (fwrite(p, sizeof p, 1, k->kf) != 1)
            return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                               sr->knot_path, strerror(errno));
        k->nknots++;
    }
    if (k->kf && fflush(k->kf) != 0)
        return xsm_err_set(c->err, c->errlen, "xsmerge: %s: write failed: %s", sr->knot_path, strerror(errno ? errno : EIO));
    return 0;
}

/* ---- scheduling: the ready rank with the earliest group first ------------ */

static int xsm_rank_before(const xsm_cctx *c, size_t a, size_t b)
{
    if (c->k[a].gt != c->k[b].gt)
        return c->k[a].gt < c->k[b].gt;
    return a < b;
}

static void xsm_heap_push(xsm_cctx *c, size_t r)
{
    size_t i = c->nheap++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (!xsm_rank_before(c, r, c->heap[p]))
            break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = r;
}

static size_t xsm_heap_pop(xsm_cctx *c)
{
    size_t top = c->heap[0], last = c->heap[--c->nheap], i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        size_t best = last;
        if (l < c->nheap && xsm_rank_before(c, c->heap[l], best)) { m = l; best = c->heap[l]; }
        if (l + 1 < c->nheap && xsm_rank_before(c, c->heap[l + 1], best)) m = l + 1;
        if (m == i)
            break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (c->nheap)
        c->heap[i] = last;
    return top;
}

static int xsm_clc_walk(xsm_cctx *c)
{
    int rc = 0;
    while (!rc && c->nheap) {
        size_t r = xsm_heap_pop(c);
        xsm_crank *k = &c->k[r];
        int64_t lower;
        size_t blocker = 0;
        int g = xsm_gather(c, k, &lower, &blocker);
        if (g == XSM_G_BLOCKED) {
            if (blocker >= c->n || c->k[blocker].done || blocker == r)
                return xsm_err_set(c->err, c->errlen, "the logical clock's constraints form a cycle") ? 2 : 2;
            k->wait_next = c->wait_head[blocker];
            c->wait_head[blocker] = r;
            continue;
        }
        if (g != XSM_G_READY)
            return g;
        if ((rc = xsm_commit(c, k, lower)))
            break;
        /* who waited on this rank looks again */
        for (size_t w = c->wait_head[r]; w != SIZE_MAX;) {
            size_t next = c->k[w].wait_next;
            xsm_heap_push(c, w);
            w = next;
        }
        c->wait_head[r] = SIZE_MAX;
        if ((rc = xsm_crank_next(c, k)))
            break;
        if (k->has_group)
            xsm_heap_push(c, r);
        else
            rc = xsm_crank_finish(c, k);
    }
    for (size_t r = 0; !rc && r < c->n; r++)
        if (c->s->r[r].present && !c->k[r].done)
            rc = xsm_err_set(c->err, c->errlen, "the logical clock's constraints form a cycle") ? 2 : 2;
    return rc;
}

/* Map each rank's knot file for the passes that follow. */
static int xsm_knots_map(xsm_cctx *c)
{
    int64_t max_corr = 0;
    for (size_t r = 0; r < c->n; r++) {
        xsm_crank *k = &c->k[r];
        xsm_srank *sr = &c->s->r[r];
        c->s->run->ranks[r].correction_ns = k->corr;
        if (k->corr > max_corr)
            max_corr = k->corr;
        if (!k->kf || !k->corr)
            continue; /* the identity, as merge/align leaves it */
        sr->knot_bytes = k->nknots * 2 * sizeof(int64_t);
        void *p = mmap(NULL, sr->knot_bytes, PROT_READ, MAP_PRIVATE, fileno(k->kf), 0);
        if (p == MAP_FAILED)
            return xsm_err_set(c->err, c->errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                               sr->knot_path, strerror(errno));
        sr->knots = p;
        sr->nknots = k->nknots;
        sr->clk.knots = sr->knots;
        sr->clk.nknots = sr->nknots;
        sr->clk.kseg = 0;
    }
    c->s->clc_max_correction = max_corr;
    return 0;
}

int xsm_clc_run(xsm_stream *s, char *err, size_t errlen)
{
    size_t n = s->run->nranks;
    xsm_cctx c = {.s = s, .n = n, .lat = s->run->min_latency_ns, .err = err, .errlen = errlen};
    err[0] = 0;
    xsm_umap_init(&c.pub, sizeof(int64_t));
    xsm_umap_init(&c.colls, sizeof(xsm_cstate));
    c.k = calloc(n + 1, sizeof *c.k);
    c.heap = malloc((n + 1) * sizeof *c.heap);
    c.wait_head = malloc((n + 1) * sizeof *c.wait_head);
    int rc = !c.k || !c.heap || !c.wait_head ? xsm_oom(&c) : 0;
    /* decoding overlaps the walk, as in pass 1 */
    xsm_prefetch *pf = !rc && xsm_parallel_threads(0) > 1 ? xsm_prefetch_start() : NULL;
    if (!rc && s->coll_file && fseek(s->coll_file, 0, SEEK_SET) != 0)
        rc = xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)", s->coll_path, strerror(errno));
    for (size_t r = 0; !rc && r < n; r++) {
        xsm_crank *k = &c.k[r];
        xsm_srank *sr = &s->r[r];
        k->r = (int32_t)r;
        c.wait_head[r] = SIZE_MAX;
        xsm_umap_init(&k->ahead, sizeof(xsm_cdep));
        k->floor = INT64_MIN;
        if (!sr->present) {
            k->done = 1;
            continue;
        }
        if (sr->dep && fseek(sr->dep, 0, SEEK_SET) != 0) {
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                             sr->dep_path, strerror(errno));
            break;
        }
        if (xsm_tab_open(&k->tab, sr->rf, &s->run->ranks[r].d, XSPROF_IO_T_MPI) ||
            xsm_tab_prefetch(&k->tab, pf) || xsm_sheap_init(&k->beg, xsm_window_for(s->proc_window, k->tab.n), sizeof(xsm_crow))) {
            rc = xsm_oom(&c);
            break;
        }
        if ((rc = xsm_crank_next(&c, k)))
            break;
        if (k->has_group)
            xsm_heap_push(&c, r);
        else
            k->done = 1; /* no MPI rows: the identity */
    }
    if (!rc)
        rc = xsm_clc_walk(&c);
    if (!rc)
        rc = xsm_knots_map(&c);
    for (size_t r = 0; c.k && r < n; r++) {
        xsm_crank *k = &c.k[r];
        xsm_tab_unprefetch(&k->tab);
        xsm_tab_close(&k->tab);
        xsm_sheap_free(&k->beg);
        free(k->ends);
        free(k->gb);
        free(k->tent);
        xsm_umap_free(&k->ahead);
        if (k->kf)
            fclose(k->kf); /* the mapping stays */
    }
    for (size_t i = 0; i < c.colls.n; i++) { /* collectives still open (an error stopped the walk) */
        if (!XSM_ULIVE(&c.colls, i))
            continue;
        xsm_cstate *st = XSM_UVAL(&c.colls, i);
        free(st->m);
        free(st->entry);
        free(st->has);
    }
    xsm_prefetch_stop(pf);
    xsm_umap_free(&c.pub);
    xsm_umap_free(&c.colls);
    free(c.k);
    free(c.heap);
    free(c.wait_head);
    return rc;
}

void xsm_clc_free(xsm_srank *sr)
{
    if (sr->knots)
        munmap(sr->knots, sr->knot_bytes);
    sr->knots = NULL;
    if (sr->knot_path[0])
        unlink(sr->knot_path);
    xsm_clc_records_free(sr);
}

void xsm_clc_records_free(xsm_srank *sr)
{
    if (sr->dep)
        fclose(sr->dep);
    sr->dep = NULL;
    if (sr->dep_path[0])
        unlink(sr->dep_path);
    sr->dep_path[0] = 0;
    free(sr->pin);
    free(sr->depb);
    free(sr->depe);
    sr->pin = sr->depb = sr->depe = NULL;
}
