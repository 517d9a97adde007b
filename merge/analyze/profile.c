/* merge/analyze/profile.c — per-rank call trees built from regions and MPI
 * calls (MPI calls are leaves, so a region's exclusive time excludes MPI),
 * the main thread's flattened timeline, region and MPI tables, outliers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "core/record.h"

typedef struct ival {
    int64_t t0, t1;
    uint32_t thread;
    int32_t name;
    int is_mpi;
    uint16_t depth;
    size_t row; /* mpi row when is_mpi */
} ival;

static int ival_cmp(const void *pa, const void *pb)
{
    const ival *a = pa, *b = pb;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    if (a->t1 != b->t1) /* the longer one encloses the other */
        return a->t1 > b->t1 ? -1 : 1;
    if (a->is_mpi != b->is_mpi) /* a region with the same span as an MPI call encloses it */
        return a->is_mpi - b->is_mpi;
    return (int)a->depth - (int)b->depth;
}

static int ival_sorted(const ival *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (ival_cmp(&v[i - 1], &v[i]) > 0)
            return 0;
    return 1;
}

/* Sort iv[0, n) whose parts [0, k) (regions) and [k, n) (MPI calls) each
 * come in order when one thread recorded them: a stable merge of the two
 * runs then gives what a stable sort gives, in linear time. Otherwise the
 * (stable, merge) qsort of glibc. Returns -1 when memory ran out. */
static int ival_sort(ival *iv, size_t k, size_t n)
{
    if (!ival_sorted(iv, k) || !ival_sorted(iv + k, n - k)) {
        qsort(iv, n, sizeof *iv, ival_cmp);
        return 0;
    }
    if (k == 0 || k == n || ival_cmp(&iv[k - 1], &iv[k]) <= 0)
        return 0;
    ival *a = malloc(k * sizeof *a); /* the left run; the merge fills iv from the front */
    if (!a)
        return -1;
    memcpy(a, iv, k * sizeof *a);
    size_t i = 0, j = k, o = 0;
    while (i < k && j < n)
        iv[o++] = ival_cmp(&a[i], &iv[j]) <= 0 ? a[i++] : iv[j++];
    while (i < k)
        iv[o++] = a[i++];
    free(a);
    return 0;
}

/* ---- call-tree node table: (parent, name, is_mpi) -> id ------------------- */
typedef struct cn_map {
    int32_t *slot;
    size_t nslot;
} cn_map;

static uint64_t cn_key_hash(int32_t parent, int32_t name, int is_mpi)
{
    uint64_t h = ((uint64_t)(uint32_t)parent << 32) ^ (uint64_t)(uint32_t)name ^ ((uint64_t)is_mpi << 63);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int32_t cn_get(xsm_an *a, cn_map *m, int32_t parent, int32_t name, int is_mpi)
{
    if (m->nslot) {
        for (size_t i = cn_key_hash(parent, name, is_mpi) & (m->nslot - 1);; i = (i + 1) & (m->nslot - 1)) {
            int32_t v = m->slot[i];
            if (!v)
                break;
            const xsm_cnode *c = &a->cn[v - 1];
            if (c->parent == parent && c->name == name && c->is_mpi == is_mpi)
                return v - 1;
        }
    }
    if ((a->ncn + 1) * 2 > m->nslot) {
        size_t ns = m->nslot ? m->nslot * 2 : 1024;
        int32_t *slot = calloc(ns, sizeof *slot);
        if (!slot)
            return -1;
        for (size_t k = 0; k < a->ncn; k++) {
            size_t i = cn_key_hash(a->cn[k].parent, a->cn[k].name, a->cn[k].is_mpi) & (ns - 1);
            while (slot[i])
                i = (i + 1) & (ns - 1);
            slot[i] = (int32_t)k + 1;
        }
        free(m->slot);
        m->slot = slot;
        m->nslot = ns;
    }
    if (a->ncn == a->cncap) {
        size_t nc = a->cncap ? a->cncap * 2 : 256;
        xsm_cnode *cn = realloc(a->cn, nc * sizeof *cn);
        if (!cn)
            return -1;
        a->cn = cn;
        a->cncap = nc;
    }
    a->cn[a->ncn] = (xsm_cnode){parent, name, is_mpi};
    size_t i = cn_key_hash(parent, name, is_mpi) & (m->nslot - 1);
    while (m->slot[i])
        i = (i + 1) & (m->nslot - 1);
    m->slot[i] = (int32_t)a->ncn + 1;
    return (int32_t)a->ncn++;
}

/* ---- per-rank growable arrays ---------------------------------------------- */
static int cs_fit(xsm_rankstat *rs, size_t n)
{
    if (n <= rs->ncs)
        return 0;
    size_t nc = rs->ncs ? rs->ncs : 64;
    while (nc < n)
        nc *= 2;
    xsm_cstat *cs = realloc(rs->cs, nc * sizeof *cs);
    if (!cs)
        return -1;
    memset(cs + rs->ncs, 0, (nc - rs->ncs) * sizeof *cs);
    rs->cs = cs;
    rs->ncs = nc;
    return 0;
}

typedef struct segvec {
    xsm_seg *v;
    size_t n, cap;
} segvec;

static int seg_add(segvec *s, int64_t t0, int64_t t1, int32_t cnode)
{
    if (t1 <= t0)
        return 0;
    if (s->n && s->v[s->n - 1].cnode == cnode && s->v[s->n - 1].t1 == t0) {
        s->v[s->n - 1].t1 = t1;
        return 0;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        xsm_seg *v = realloc(s->v, nc * sizeof *v);
        if (!v)
            return -1;
        s->v = v;
        s->cap = nc;
    }
    s->v[s->n++] = (xsm_seg){t0, t1, cnode};
    return 0;
}

/* per-name instance moments on the current rank, for the outlier test */
typedef struct moments {
    double n, sum, sumsq;
} moments;

typedef struct inst {
    int32_t name;
    int64_t t0;
    double s;
} inst;

static int outlier_cmp(const void *pa, const void *pb)
{
    const xsm_outlier *a = pa, *b = pb;
    double ea = a->seconds - a->mean_s, eb = b->seconds - b->mean_s;
    return ea > eb ? -1 : ea < eb ? 1 : 0;
}

#define XSM_OUTLIERS_KEPT 64

static int outliers_collect(xsm_an *a, int32_t rank, const inst *in, size_t nin, moments *mo, uint64_t *per_name)
{
    for (size_t i = 0; i < nin; i++) {
        const moments *m = &mo[in[i].name];
        if (m->n < 3) /* fewer than two other instances say nothing */
            continue;
        /* leave-one-out: with itself in the sample a single slow instance
         * among n can never pass 2 sigma when n < 6 */
        double x = in[i].s, n1 = m->n - 1;
        double mean = (m->sum - x) / n1;
        double var = (m->sumsq - x * x) / n1 - mean * mean;
        double sd = var > 0 ? sqrt(var) : 0;
        if (sd < 0.05 * mean) /* identical instances: ask for at least 10 % more than their mean */
            sd = 0.05 * mean;
        if (sd <= 0 || x <= mean + 2 * sd)
            continue;
        per_name[in[i].name]++;
        a->nout_total++;
        xsm_outlier o = {in[i].name, rank, in[i].t0, in[i].s, mean, sd};
        if (a->nout < XSM_OUTLIERS_KEPT) {
            a->out[a->nout++] = o;
        } else if (o.seconds - o.mean_s > a->out[a->nout - 1].seconds - a->out[a->nout - 1].mean_s) {
            a->out[a->nout - 1] = o;
        } else {
            continue;
        }
        qsort(a->out, a->nout, sizeof *a->out, outlier_cmp);
    }
    return 0;
}

static int call_row_cmp_ctx_sort(const xsprof_io_mpi *m, size_t x, size_t y)
{
    if (m[x].thread != m[y].thread)
        return m[x].thread < m[y].thread ? -1 : 1;
    if (m[x].t_begin != m[y].t_begin)
        return m[x].t_begin < m[y].t_begin ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* qsort has no context argument in C11: sort indices with a small merge sort */
typedef struct xsm_busy {
    int64_t b, e;
} xsm_busy;

static int busy_cmp(const void *x, const void *y)
{
    const xsm_busy *p = x, *q = y;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* The length of the union of v's intervals, as the streamed analysis sums
 * it (rows in order of begin). Sorts v when threads interleave. */
static int64_t mpi_union(xsm_busy *v, size_t n)
{
    size_t i = 1;
    while (i < n && v[i - 1].b <= v[i].b)
        i++;
    if (i < n)
        qsort(v, n, sizeof *v, busy_cmp);
    int64_t cover = INT64_MIN, sum = 0;
    for (i = 0; i < n; i++)
        xsm_an_cover(&cover, &sum, v[i].b, v[i].e);
    return sum;
}

static void sort_rows(const xsprof_io_mpi *m, size_t *v, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_rows(m, v, tmp, h);
    sort_rows(m, v + h, tmp, n - h);
    if (call_row_cmp_ctx_sort(m, v[h - 1], v[h]) <= 0)
        return; /* halves already in order (rows recorded in time order): nothing to merge */
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = call_row_cmp_ctx_sort(m, v[i], v[j]) <= 0 ? v[i++] : v[j++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

size_t xsm_an_calls_bound(const xsprof_rank_data *d, const xsm_rankstat *rs, uint32_t thread, int64_t t, int upper)
{
    size_t lo = 0, hi = rs->ncalls_sorted;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const xsprof_io_mpi *m = &d->mpi[rs->calls_sorted[mid]];
        if (m->thread < thread || (m->thread == thread && (upper ? m->t_begin <= t : m->t_begin < t)))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Row of the blocking call on `thread` that contains time t, -1 if none. */
static int64_t call_at(const xsprof_rank_data *d, const xsm_rankstat *rs, uint32_t thread, int64_t t)
{
    size_t lo = xsm_an_calls_bound(d, rs, thread, t, 1); /* first entry > (thread, t) */
    /* the latest call starting at or before t on this thread that is still open at t */
    for (size_t k = lo; k-- > 0;) {
        const xsprof_io_mpi *m = &d->mpi[rs->calls_sorted[k]];
        if (m->thread != thread)
            break;
        if (m->t_end >= t)
            return (int64_t)rs->calls_sorted[k];
        if (lo - k > 4) /* calls do not nest: a few steps back suffice */
            break;
    }
    return -1;
}

static int rank_profile(xsm_an *a, cn_map *map, int32_t r, moments *mo, uint64_t *outl)
{
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    xsm_rankstat *rs = &a->rs[r];
    size_t n = 0;
    ival *iv = malloc((d->nregions + d->nmpi + 1) * sizeof *iv);
    rs->encl = malloc((d->nmpi + 1) * sizeof *rs->encl);
    rs->call = malloc((d->nmpi + 1) * sizeof *rs->call);
    rs->opname = malloc((d->nmpi + 1) * sizeof *rs->opname);
    rs->calls_sorted = malloc((d->nmpi + 1) * sizeof *rs->calls_sorted);
    size_t *tmp = malloc((d->nmpi + 1) * sizeof *tmp);
    inst *in = malloc((d->nregions + 1) * sizeof *in);
    signed char *opcls = malloc((size_t)d->nstrings + 1); /* per string id: -1 unknown, 0 other, 1 init, 2 finalize */
    xsm_busy *busy = malloc((d->nmpi + 1) * sizeof *busy); /* the calls counted in MPI time */
    size_t nbusy = 0;
    if (!iv || !rs->encl || !rs->call || !rs->opname || !rs->calls_sorted || !tmp || !in || !opcls || !busy) {
        free(iv);
        free(tmp);
        free(in);
        free(opcls);
        free(busy);
        return -1;
    }
    memset(opcls, -1, (size_t)d->nstrings + 1);
    size_t nin = 0;
    int rc = -1;
    rs->t_first = INT64_MAX;
    rs->t_last = INT64_MIN;
    int64_t init_end = INT64_MIN, fin_begin = INT64_MAX;
    /* the main thread: the one that began the first MPI call, else the
     * first region (as a streamed analysis, which sees them in time order) */
    int have_main = 0, have_reg = 0;
    int64_t main_t = 0, reg_t = 0;
    uint32_t reg_thread = 0;
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *g = &d->regions[i];
        int64_t b = g->t_begin, e = g->t_end; /* inside --from/--to */
        xsm_run_clip(a->run, &b, &e);
        if (b < rs->t_first)
            rs->t_first = b;
        if (e > rs->t_last)
            rs->t_last = e;
        if (g->category == XSPROF_CAT_MPI) /* MPI calls come from the mpi table */
            continue;
        if (!have_reg || g->t_begin < reg_t) {
            have_reg = 1;
            reg_t = g->t_begin;
            reg_thread = g->thread;
        }
        int32_t nm = xsm_an_sname(a, r, g->name);
        if (nm < 0)
            goto out;
        iv[n++] = (ival){b, e < b ? b : e, g->thread, nm, 0, g->depth, 0};
    }
    size_t nreg = n; /* iv[0, nreg): regions, then the MPI calls */
    for (size_t i = 0; i < d->nmpi; i++) {
        const xsprof_io_mpi *m = &d->mpi[i];
        rs->encl[i] = -1;
        rs->call[i] = -1;
        rs->opname[i] = -1;
        int64_t b = m->t_begin, e = m->t_end; /* inside --from/--to */
        xsm_run_clip(a->run, &b, &e);
        if (b < rs->t_first)
            rs->t_first = b;
        if (e > rs->t_last)
            rs->t_last = e;
        if (m->kind == XSPROF_MPI_COMPLETION)
            continue;
        if (!have_main || m->t_begin < main_t) {
            rs->main_thread = m->thread;
            main_t = m->t_begin;
            have_main = 1;
        }
        int32_t nm = xsm_an_sname(a, r, m->op);
        if (nm < 0)
            goto out;
        rs->opname[i] = nm;
        iv[n++] = (ival){b, e < b ? b : e, m->thread, nm, 1, 0, i};
        rs->calls_sorted[rs->ncalls_sorted++] = i;
        rs->call[i] = (int64_t)i;
        /* MPI start-up and shutdown bound the measured window (as in mpiP):
         * their cost is the launcher's, not the application's */
        signed char *cls = &opcls[m->op < d->nstrings ? m->op : d->nstrings];
        if (*cls < 0) {
            const char *opn = a->names.v[nm];
            *cls = strcmp(opn, "MPI_Init") == 0 || strcmp(opn, "MPI_Init_thread") == 0 ? 1 : strcmp(opn, "MPI_Finalize") == 0 ? 2 : 0;
        }
        if (*cls == 1) {
            if (e > init_end)
                init_end = e;
        } else if (*cls == 2) {
            if (b < fin_begin)
                fin_begin = b;
        } else {
            busy[nbusy++] = (xsm_busy){b, e};
        }
    }
    rs->mpi_ns = mpi_union(busy, nbusy);
    if (!have_main && have_reg)
        rs->main_thread = reg_thread;
    if (rs->t_first > rs->t_last) /* no event: an empty window where the report's starts */
        rs->t_first = rs->t_last = a->run->win ? a->run->win_from : 0;
    rs->span_first = rs->t_first;
    rs->span_last = rs->t_last;
    if (init_end > rs->t_first && init_end <= rs->t_last)
        rs->t_first = init_end;
    if (fin_begin < rs->t_last && fin_begin >= rs->t_first)
        rs->t_last = fin_begin;
    sort_rows(d->mpi, rs->calls_sorted, tmp, rs->ncalls_sorted);
    for (size_t i = 0; i < d->nmpi; i++)
        if (d->mpi[i].kind == XSPROF_MPI_COMPLETION)
            rs->call[i] = call_at(d, rs, d->mpi[i].thread, d->mpi[i].t_begin);
    if (ival_sort(iv, nreg, n))
        goto out;

    /* sweep each thread with a stack of open intervals */
    typedef struct frame {
        size_t iv;
        int32_t cnode;
        int64_t child, end;
    } frame;
    frame *st = malloc((n + 1) * sizeof *st);
    /* at most two segments per interval: room for all at once, so no
     * doubling copies them (pages not written are never touched) */
    segvec sv = {malloc((2 * n + 1) * sizeof *sv.v), 0, 2 * n + 1};
    if (!st || !sv.v) {
        free(st);
        free(sv.v);
        goto out;
    }
    size_t sp = 0;
    int64_t cursor = 0;
    for (size_t i = 0; i <= n; i++) {
        /* close frames that end before the next interval starts (or all at a thread change / end) */
        while (sp > 0) {
            frame *f = &st[sp - 1];
            int close = i == n || iv[i].thread != iv[f->iv].thread || iv[i].t0 >= f->end;
            if (!close)
                break;
            const ival *v = &iv[f->iv];
            int64_t dur = f->end - v->t0;
            xsm_cstat *c = &rs->cs[f->cnode];
            c->calls++;
            c->incl += dur;
            c->excl += dur - f->child;
            if (v->thread == rs->main_thread && seg_add(&sv, cursor, f->end, f->cnode) != 0)
                goto out_st;
            cursor = f->end;
            if (!v->is_mpi) {
                double s = (double)dur * 1e-9;
                mo[v->name].n += 1;
                mo[v->name].sum += s;
                mo[v->name].sumsq += s * s;
                in[nin++] = (inst){v->name, v->t0, s};
            }
            sp--;
            if (sp > 0)
                st[sp - 1].child += dur;
        }
        if (i == n)
            break;
        const ival *v = &iv[i];
        int32_t parent = sp ? st[sp - 1].cnode : -1;
        int64_t end = v->t1;
        if (sp && end > st[sp - 1].end) /* clip partial overlaps to the parent */
            end = st[sp - 1].end;
        int32_t cnode = cn_get(a, map, parent, v->name, v->is_mpi);
        if (cnode < 0 || cs_fit(rs, a->ncn) != 0)
            goto out_st;
        if (v->thread == rs->main_thread && sp && seg_add(&sv, cursor, v->t0, st[sp - 1].cnode) != 0)
            goto out_st;
        cursor = v->t0;
        if (v->is_mpi) {
            int32_t encl = -1;
            for (size_t k = sp; k-- > 0;)
                if (!iv[st[k].iv].is_mpi) {
                    encl = iv[st[k].iv].name;
                    break;
                }
            rs->encl[v->row] = encl;
        }
        st[sp++] = (frame){i, cnode, 0, end};
    }
    for (size_t i = 0; i < d->nmpi; i++) /* completions inherit their call's region */
        if (d->mpi[i].kind == XSPROF_MPI_COMPLETION && rs->call[i] >= 0)
            rs->encl[i] = rs->encl[rs->call[i]];
    xsm_seg *fit = realloc(sv.v, (sv.n + 1) * sizeof *sv.v); /* in place: the rest is free again */
    rs->seg = fit ? fit : sv.v;
    rs->nseg = sv.n;
    sv.v = NULL;
    outliers_collect(a, r, in, nin, mo, outl);
    rc = 0;
out_st:
    free(sv.v);
    free(st);
out:
    free(iv);
    free(tmp);
    free(in);
    free(opcls);
    free(busy);
    return rc;
}

/* Is some ancestor of cnode c a region of the same name (recursion)? */
static int cn_recursive(const xsm_an *a, int32_t c)
{
    for (int32_t p = a->cn[c].parent; p >= 0; p = a->cn[p].parent)
        if (a->cn[p].name == a->cn[c].name && a->cn[p].is_mpi == a->cn[c].is_mpi)
            return 1;
    return 0;
}

static void stats3(const double *v, const xsm_an *a, double *mn, double *mean, double *mx, int32_t *mxr, double *sum)
{
    double lo = INFINITY, hi = -INFINITY, s = 0;
    size_t cnt = 0;
    *mxr = -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        cnt++;
        s += v[r];
        if (v[r] < lo)
            lo = v[r];
        if (v[r] > hi) {
            hi = v[r];
            *mxr = (int32_t)r;
        }
    }
    *mn = cnt ? lo : 0;
    *mx = cnt ? hi : 0;
    *mean = cnt ? s / (double)cnt : 0;
    *sum = s;
}

static int build_tables(xsm_an *a, const uint64_t *outl)
{
    size_t nn = a->names.n, R = a->nranks;
    int32_t *reg_of = malloc((nn + 1) * sizeof *reg_of);
    int *rec = malloc((a->ncn + 1) * sizeof *rec);
    if (!reg_of || !rec) {
        free(reg_of);
        free(rec);
        return -1;
    }
    for (size_t i = 0; i < nn; i++)
        reg_of[i] = -1;
    for (size_t c = 0; c < a->ncn; c++)
        rec[c] = cn_recursive(a, (int32_t)c);
    int rc = -1;
    a->reg = calloc(nn + 1, sizeof *a->reg);
    a->ops = calloc(nn + 1, sizeof *a->ops);
    if (!a->reg || !a->ops)
        goto out;
    for (size_t c = 0; c < a->ncn; c++) {
        if (a->cn[c].is_mpi)
            continue;
        int32_t nm = a->cn[c].name;
        if (reg_of[nm] < 0) {
            xsm_region *g = &a->reg[a->nreg];
            g->name = nm;
            g->incl = calloc(R, sizeof(double));
            g->excl = calloc(R, sizeof(double));
            g->rcalls = calloc(R, sizeof(uint64_t));
            if (!g->incl || !g->excl || !g->rcalls)
                goto out;
            reg_of[nm] = (int32_t)a->nreg++;
        }
        xsm_region *g = &a->reg[reg_of[nm]];
        for (size_t r = 0; r < R; r++) {
            const xsm_rankstat *rs = &a->rs[r];
            if (c >= rs->ncs || !rs->present)
                continue;
            const xsm_cstat *cs = &rs->cs[c];
            g->rcalls[r] += cs->calls;
            g->calls += cs->calls;
            g->excl[r] += (double)cs->excl * 1e-9;
            if (!rec[c])
                g->incl[r] += (double)cs->incl * 1e-9;
        }
    }
    for (size_t i = 0; i < a->nreg; i++) {
        xsm_region *g = &a->reg[i];
        stats3(g->incl, a, &g->incl_min, &g->incl_mean, &g->incl_max, &g->incl_max_rank, &g->incl_sum);
        stats3(g->excl, a, &g->excl_min, &g->excl_mean, &g->excl_max, &g->excl_max_rank, &g->excl_sum);
        g->imbalance = g->excl_max > 0 ? (g->excl_max - g->excl_mean) / g->excl_max : 0;
        g->saving_s = g->excl_max - g->excl_mean;
        g->outliers = outl[g->name];
    }
    rc = 0;
out:
    free(reg_of);
    free(rec);
    return rc;
}

/* Name -> index into a->ops, widened as the name table grows. */
typedef struct opindex {
    int32_t *of;
    size_t n;
} opindex;

/* The MPI operation named nm, made on first use; NULL when memory ran out. */
static xsm_mpiop *op_get(xsm_an *a, opindex *ix, int32_t nm)
{
    if ((size_t)nm >= ix->n) {
        size_t nn = a->names.n;
        int32_t *g2 = realloc(ix->of, (nn + 1) * sizeof *g2);
        if (!g2)
            return NULL;
        ix->of = g2;
        for (size_t k = ix->n; k < nn; k++)
            g2[k] = -1;
        ix->n = nn;
        xsm_mpiop *o2 = realloc(a->ops, (nn + 1) * sizeof *a->ops);
        if (!o2)
            return NULL;
        a->ops = o2;
    }
    if (ix->of[nm] < 0) {
        size_t R = a->nranks;
        xsm_mpiop *o = &a->ops[a->nops];
        memset(o, 0, sizeof *o);
        o->name = nm;
        o->rcalls = calloc(R, sizeof(uint64_t));
        o->rseconds = calloc(R, sizeof(double));
        o->rbytes = calloc(R, sizeof(uint64_t));
        if (!o->rcalls || !o->rseconds || !o->rbytes) {
            free(o->rcalls);
            free(o->rseconds);
            free(o->rbytes);
            return NULL;
        }
        ix->of[nm] = (int32_t)a->nops++;
    }
    return &a->ops[ix->of[nm]];
}

static void op_add(xsm_mpiop *o, size_t r, uint64_t calls, double s, uint64_t bs, uint64_t br)
{
    o->calls += calls;
    o->rcalls[r] += calls;
    o->seconds += s;
    o->rseconds[r] += s;
    o->bytes_sent += bs;
    o->bytes_recv += br;
    o->rbytes[r] += bs + br;
}

/* The MPI operations by name: the same order however they were met (rows,
 * or the streamed analysis's time order). -1 when memory ran out. */
typedef struct named_op {
    const char *name;
    xsm_mpiop op;
} named_op;

static int named_op_cmp(const void *pa, const void *pb)
{
    return strcmp(((const named_op *)pa)->name, ((const named_op *)pb)->name);
}

static int ops_sort(xsm_an *a)
{
    named_op *v = malloc((a->nops + 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < a->nops; i++)
        v[i] = (named_op){xsm_an_name(a, a->ops[i].name), a->ops[i]};
    qsort(v, a->nops, sizeof *v, named_op_cmp);
    for (size_t i = 0; i < a->nops; i++)
        a->ops[i] = v[i].op;
    free(v);
    return 0;
}

/* MPI operations straight from the rows (bytes of a receive are known at
 * its completion). A rank's time per operation is summed in nanoseconds
 * and made seconds once, as the streamed analysis does (ops_from_acc):
 * the same doubles in merged.h5's /analysis/mpi. */
static int ops_from_rows(xsm_an *a)
{
    opindex ix = {0};
    int64_t *ns = NULL; /* per operation (index into a->ops), this rank */
    size_t capns = 0;
    int rc = -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        if (capns)
            memset(ns, 0, capns * sizeof *ns);
        for (size_t i = 0; i < d->nmpi; i++) {
            const xsprof_io_mpi *m = &d->mpi[i];
            int32_t nm = xsm_an_sname(a, (int32_t)r, m->op); /* new when seen only in completion rows */
            xsm_mpiop *o = nm < 0 ? NULL : op_get(a, &ix, nm);
            if (!o)
                goto out;
            size_t k = (size_t)(o - a->ops);
            if (k >= capns) {
                size_t old = capns;
                if (xsm_reserve((void **)&ns, &capns, k + 1, sizeof *ns))
                    goto out;
                memset(ns + old, 0, (capns - old) * sizeof *ns);
            }
            if (m->kind == XSPROF_MPI_COMPLETION) {
                op_add(o, r, 0, 0, 0, (m->flags & XSPROF_MPI_F_RECV) ? m->bytes_recv : 0);
            } else { /* a post only knows the buffer size; time inside --from/--to */
                op_add(o, r, 1, 0, m->bytes_sent, m->kind != XSPROF_MPI_IRECV ? m->bytes_recv : 0);
                ns[k] += xsm_an_clipped(a->run, m->t_begin, m->t_end);
            }
        }
        for (size_t k = 0; k < a->nops && k < capns; k++)
            op_add(&a->ops[k], r, 0, (double)ns[k] * 1e-9, 0, 0);
    }
    rc = 0;
out:
    free(ns);
    free(ix.of);
    return rc;
}

/* Ranks whose compute time is more than 2 sigma away from the other ranks'. */
static void rank_outliers(xsm_an *a)
{
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        double n = 0, s = 0, ss = 0;
        for (size_t q = 0; q < a->nranks; q++) {
            if (q == r || !a->rs[q].present)
                continue;
            double c = (double)(a->rs[q].t_last - a->rs[q].t_first - a->rs[q].mpi_ns) * 1e-9;
            n++;
            s += c;
            ss += c * c;
        }
        if (n < 2)
            continue;
        double mean = s / n, var = ss / n - mean * mean, sd = var > 0 ? sqrt(var) : 0;
        /* identical peers have sigma 0: require at least 1 % of their mean */
        if (sd < 0.01 * mean)
            sd = 0.01 * mean;
        double mine = (double)(a->rs[r].t_last - a->rs[r].t_first - a->rs[r].mpi_ns) * 1e-9;
        a->rs[r].outlier = sd > 0 && fabs(mine - mean) > 2 * sd;
    }
}

/* The job's first and last event so far, with rank r's. */
static void job_span(xsm_an *a, size_t r)
{
    if (a->rs[r].span_first < a->t0)
        a->t0 = a->rs[r].span_first;
    if (a->rs[r].span_last > a->t1)
        a->t1 = a->rs[r].span_last;
}

int xsm_an_profile(xsm_an *a)
{
    cn_map map = {0};
    moments *mo = NULL;
    uint64_t *outl = NULL;
    int rc = -1;
    a->out = calloc(XSM_OUTLIERS_KEPT, sizeof *a->out);
    if (!a->out)
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        /* names can only grow by this rank's regions and ops */
        size_t need = a->names.n + d->nregions + d->nmpi + 1;
        moments *m2 = calloc(need, sizeof *m2);
        uint64_t *o2 = realloc(outl, need * sizeof *o2);
        if (!m2 || !o2) {
            free(m2);
            if (o2)
                outl = o2;
            goto out;
        }
        outl = o2;
        free(mo); /* moments are per rank */
        mo = m2;
        for (size_t k = a->names.n; k < need; k++)
            outl[k] = 0;
        if (rank_profile(a, &map, (int32_t)r, mo, outl) != 0)
            goto out;
        job_span(a, r);
    }
    if (!outl && !(outl = calloc(a->names.n + 1, sizeof *outl)))
        goto out;
    if (build_tables(a, outl) != 0 || ops_from_rows(a) != 0 || ops_sort(a) != 0)
        goto out;
    rank_outliers(a);
    rc = 0;
out:
    free(map.slot);
    free(mo);
    free(outl);
    return rc;
}

size_t xsm_an_seg_after(const xsm_rankstat *rs, int64_t t0)
{
    size_t lo = 0, hi = rs->nseg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->seg[mid].t1 <= t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void xsm_an_window_excl(const xsm_an *a, int32_t r, int64_t t0, int64_t t1, double *acc)
{
    const xsm_rankstat *rs = &a->rs[r];
    for (size_t i = xsm_an_seg_after(rs, t0); i < rs->nseg && rs->seg[i].t0 < t1; i++) {
        const xsm_seg *s = &rs->seg[i];
        if (a->cn[s->cnode].is_mpi)
            continue;
        int64_t b = s->t0 > t0 ? s->t0 : t0, e = s->t1 < t1 ? s->t1 : t1;
        if (e > b)
            acc[a->cn[s->cnode].name] += (double)(e - b) * 1e-9;
    }
}

/* MPI operations from the streamed accumulators. */
static int ops_from_acc(xsm_an *a, const xsm_sanalysis *sa)
{
    opindex ix = {0};
    int rc = -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        for (size_t i = 0; i < v.nops; i++) {
            const xsm_sop *s = &v.ops[i];
            int32_t nm = xsm_an_sname(a, (int32_t)r, s->sid);
            xsm_mpiop *o = nm < 0 ? NULL : op_get(a, &ix, nm);
            if (!o)
                goto out;
            op_add(o, r, s->calls, (double)s->ns * 1e-9, s->bytes_sent, s->bytes_recv);
        }
    }
    rc = 0;
out:
    free(ix.of);
    return rc;
}

/* At least n zeroed counts in *v. */
static int counts_fit(uint64_t **v, size_t *cap, size_t n)
{
    size_t old = *cap;
    if (n <= old)
        return 0;
    if (xsm_reserve((void **)v, cap, n, sizeof **v))
        return -1;
    memset(*v + old, 0, (*cap - old) * sizeof **v);
    return 0;
}

void xsm_an_window(const xsm_run *run, const xsm_anrank_out *v, int64_t *t_first, int64_t *t_last)
{
    int64_t f = v->t_first, l = v->t_last;
    if (f > l)
        f = l = run->win ? run->win_from : 0;
    if (v->init_end > f && v->init_end <= l)
        f = v->init_end;
    if (v->fin_begin < l && v->fin_begin >= f)
        l = v->fin_begin;
    *t_first = f;
    *t_last = l;
}

/* One rank's accumulator into the model: window, call tree (local nodes
 * come parents first, so a parent is mapped before its children), and the
 * outlier test on its longest instances with the moments of all of them. */
static int rank_fold(xsm_an *a, cn_map *map, int32_t r, const xsm_anrank_out *v, uint64_t **outl, size_t *noutl)
{
    xsm_rankstat *rs = &a->rs[r];
    rs->span_first = v->t_first;
    rs->span_last = v->t_last;
    if (rs->span_first > rs->span_last)
        rs->span_first = rs->span_last = a->run->win ? a->run->win_from : 0;
    xsm_an_window(a->run, v, &rs->t_first, &rs->t_last);
    rs->mpi_ns = v->mpi_ns;
    rs->main_thread = v->main_thread;
    int32_t *cmap = malloc((v->ncn + 1) * sizeof *cmap);
    inst *in = malloc((v->nnames * XSM_STREAM_TOP + 1) * sizeof *in);
    moments *mo = NULL;
    int rc = -1;
    if (!cmap || !in)
        goto out;
    for (size_t c = 0; c < v->ncn; c++) {
        const xsm_scnode *sc = &v->cn[c];
        int32_t nm = xsm_an_sname(a, r, sc->sid);
        int32_t g = nm < 0 ? -1 : cn_get(a, map, sc->parent >= 0 ? cmap[sc->parent] : -1, nm, sc->is_mpi);
        if (g < 0 || cs_fit(rs, a->ncn) != 0)
            goto out;
        rs->cs[g].calls += sc->cs.calls;
        rs->cs[g].incl += sc->cs.incl;
        rs->cs[g].excl += sc->cs.excl;
        cmap[c] = g;
    }
    size_t need = a->names.n + v->nnames + 1, nin = 0; /* names grow by this rank's at most */
    mo = calloc(need, sizeof *mo);
    if (!mo || counts_fit(outl, noutl, need))
        goto out;
    for (size_t i = 0; i < v->nnames; i++) {
        const xsm_sname *sn = &v->names[i];
        int32_t nm = xsm_an_sname(a, r, sn->sid);
        if (nm < 0)
            goto out;
        mo[nm] = (moments){sn->n, sn->sum, sn->sumsq};
        for (size_t k = 0; k < sn->ntop; k++)
            in[nin++] = (inst){nm, sn->top[k].t0, sn->top[k].s};
    }
    outliers_collect(a, r, in, nin, mo, *outl);
    rc = 0;
out:
    free(cmap);
    free(in);
    free(mo);
    return rc;
}

int xsm_an_profile_streamed(xsm_an *a, const xsm_sanalysis *sa)
{
    cn_map map = {0};
    uint64_t *outl = NULL;
    size_t noutl = 0;
    int rc = -1;
    a->out = calloc(XSM_OUTLIERS_KEPT, sizeof *a->out);
    if (!a->out)
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        xsm_anrank_out v;
        xsm_sanalysis_view(sa, (int32_t)r, &v);
        if (rank_fold(a, &map, (int32_t)r, &v, &outl, &noutl) != 0)
            goto out;
        job_span(a, r);
    }
    if (counts_fit(&outl, &noutl, a->names.n + 1))
        goto out;
    if (build_tables(a, outl) != 0 || ops_from_acc(a, sa) != 0 || ops_sort(a) != 0)
        goto out;
    rank_outliers(a);
    rc = 0;
out:
    free(map.slot);
    free(outl);
    return rc;
}
