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

/* qsort has no context argument in C11: sort indices with a small merge sort */
typedef struct xsm_busy {
    int64_t b, e;
} xsm_busy;

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

int xsm_an_profile(xsm_an *a, const xsm_sanalysis *sa)
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
