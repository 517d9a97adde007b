/* merge/analyze/h5.c — the analysis tables of merged.h5 (group /analysis),
 * added to the finished file by the process that ran the analysis, so that
 * Python users find the wait states, the critical path and the per-rank
 * profile beside the events they refer to. Names are ids into /strings (the
 * file's one string table), MPI rows are rows of /mpi. Tables are chunked
 * and compressed (shuffle, deflate 1) like the event tables; object time
 * stamps stay off so the same run gives the same bytes. Owner: merge
 * analysis. */
#include <errno.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include "analyze.h"
#include "an.h"
#include "merge/align/align.h"
#include "merge/emit/emit.h"
#include "merge/emit/h5ds.h"

typedef struct { int32_t rank, present, outlier; int64_t t_first, t_last, mpi_ns, wait_ns, gpu_ns; double critical_path_s; } xsm_ah_rank;
typedef struct { uint32_t name; int32_t rank; uint64_t calls; double incl_s, excl_s; } xsm_ah_region;
typedef struct { uint32_t op; int32_t rank; uint64_t calls; double seconds; uint64_t bytes; } xsm_ah_op;
typedef struct { int32_t kind, waiter, causer; uint32_t op, region, root_region; int64_t mpi_row, t_begin, t_end, t_cause; int32_t root_rank; } xsm_ah_wait;
typedef struct { int32_t rank; int64_t t_begin, t_end; } xsm_ah_seg;
typedef struct { int32_t src, dst; uint64_t messages, bytes; } xsm_ah_pair;
/* (the places in the code are strings of their own: names the symbols
 * gave, not in /strings) */
typedef struct { const char *op, *function, *file; int32_t line; const char *module; uint64_t calls; double seconds;
                 uint64_t bytes; uint32_t ranks; double wait_s, caused_s; } xsm_ah_site;
typedef struct { const char *function, *inlined, *file; int32_t line; const char *module; uint64_t samples; double seconds;
                 uint32_t ranks; } xsm_ah_smp;

typedef struct { const char *module; uint64_t offset; int32_t ret; const char *function, *inlined, *file; int32_t line; } xsm_ah_frame;
typedef struct { int32_t rank; const char *path, *build_id; uint64_t lo, hi, bias; int64_t t_load, t_unload; } xsm_ah_mod;

enum { AH_RANK, AH_REGION, AH_OP, AH_WAIT, AH_SEG, AH_PAIR, AH_SITE, AH_SMP, AH_FRAME, AH_MOD };

#define F(T, m, type) ok &= H5Tinsert(t, #m, HOFFSET(T, m), (type)) >= 0

static hid_t xsm_ah_type(int which)
{
    static hid_t vs = -1; /* a variable-length UTF-8 string (tables are written by one thread) */
    if (vs < 0 && (vs = H5Tcopy(H5T_C_S1)) >= 0 && (H5Tset_size(vs, H5T_VARIABLE) < 0 || H5Tset_cset(vs, H5T_CSET_UTF8) < 0)) {
        H5Tclose(vs);
        vs = -1;
    }
    if (which >= AH_SITE && vs < 0)
        return -1;
    static const size_t size[] = {sizeof(xsm_ah_rank), sizeof(xsm_ah_region), sizeof(xsm_ah_op),
                                  sizeof(xsm_ah_wait), sizeof(xsm_ah_seg),    sizeof(xsm_ah_pair),
                                  sizeof(xsm_ah_site), sizeof(xsm_ah_smp),    sizeof(xsm_ah_frame),
                                  sizeof(xsm_ah_mod)};
    hid_t t = H5Tcreate(H5T_COMPOUND, size[which]);
    if (t < 0)
        return -1;
    int ok = 1;
    switch (which) {
    case AH_RANK:
        F(xsm_ah_rank, rank, H5T_NATIVE_INT32); F(xsm_ah_rank, present, H5T_NATIVE_INT32);
        F(xsm_ah_rank, outlier, H5T_NATIVE_INT32); F(xsm_ah_rank, t_first, H5T_NATIVE_INT64);
        F(xsm_ah_rank, t_last, H5T_NATIVE_INT64); F(xsm_ah_rank, mpi_ns, H5T_NATIVE_INT64);
        F(xsm_ah_rank, wait_ns, H5T_NATIVE_INT64); F(xsm_ah_rank, gpu_ns, H5T_NATIVE_INT64);
        F(xsm_ah_rank, critical_path_s, H5T_NATIVE_DOUBLE);
        break;
    case AH_REGION:
        F(xsm_ah_region, name, H5T_NATIVE_UINT32); F(xsm_ah_region, rank, H5T_NATIVE_INT32);
        F(xsm_ah_region, calls, H5T_NATIVE_UINT64); F(xsm_ah_region, incl_s, H5T_NATIVE_DOUBLE);
        F(xsm_ah_region, excl_s, H5T_NATIVE_DOUBLE);
        break;
    case AH_OP:
        F(xsm_ah_op, op, H5T_NATIVE_UINT32); F(xsm_ah_op, rank, H5T_NATIVE_INT32);
        F(xsm_ah_op, calls, H5T_NATIVE_UINT64); F(xsm_ah_op, seconds, H5T_NATIVE_DOUBLE);
        F(xsm_ah_op, bytes, H5T_NATIVE_UINT64);
        break;
    case AH_WAIT:
        F(xsm_ah_wait, kind, H5T_NATIVE_INT32); F(xsm_ah_wait, waiter, H5T_NATIVE_INT32);
        F(xsm_ah_wait, causer, H5T_NATIVE_INT32); F(xsm_ah_wait, op, H5T_NATIVE_UINT32);
        F(xsm_ah_wait, region, H5T_NATIVE_UINT32); F(xsm_ah_wait, root_region, H5T_NATIVE_UINT32);
        F(xsm_ah_wait, mpi_row, H5T_NATIVE_INT64); F(xsm_ah_wait, t_begin, H5T_NATIVE_INT64);
        F(xsm_ah_wait, t_end, H5T_NATIVE_INT64); F(xsm_ah_wait, t_cause, H5T_NATIVE_INT64);
        F(xsm_ah_wait, root_rank, H5T_NATIVE_INT32);
        break;
    case AH_SEG:
        F(xsm_ah_seg, rank, H5T_NATIVE_INT32); F(xsm_ah_seg, t_begin, H5T_NATIVE_INT64);
        F(xsm_ah_seg, t_end, H5T_NATIVE_INT64);
        break;
    case AH_SITE:
        F(xsm_ah_site, op, vs); F(xsm_ah_site, function, vs);
        F(xsm_ah_site, file, vs); F(xsm_ah_site, line, H5T_NATIVE_INT32);
        F(xsm_ah_site, module, vs); F(xsm_ah_site, calls, H5T_NATIVE_UINT64);
        F(xsm_ah_site, seconds, H5T_NATIVE_DOUBLE); F(xsm_ah_site, bytes, H5T_NATIVE_UINT64);
        F(xsm_ah_site, ranks, H5T_NATIVE_UINT32); F(xsm_ah_site, wait_s, H5T_NATIVE_DOUBLE);
        F(xsm_ah_site, caused_s, H5T_NATIVE_DOUBLE);
        break;
    case AH_SMP:
        F(xsm_ah_smp, function, vs); F(xsm_ah_smp, inlined, vs);
        F(xsm_ah_smp, file, vs); F(xsm_ah_smp, line, H5T_NATIVE_INT32);
        F(xsm_ah_smp, module, vs); F(xsm_ah_smp, samples, H5T_NATIVE_UINT64);
        F(xsm_ah_smp, seconds, H5T_NATIVE_DOUBLE); F(xsm_ah_smp, ranks, H5T_NATIVE_UINT32);
        break;
    case AH_FRAME:
        F(xsm_ah_frame, module, vs); F(xsm_ah_frame, offset, H5T_NATIVE_UINT64);
        F(xsm_ah_frame, ret, H5T_NATIVE_INT32); F(xsm_ah_frame, function, vs);
        F(xsm_ah_frame, inlined, vs); F(xsm_ah_frame, file, vs); F(xsm_ah_frame, line, H5T_NATIVE_INT32);
        break;
    case AH_MOD:
        F(xsm_ah_mod, rank, H5T_NATIVE_INT32); F(xsm_ah_mod, path, vs); F(xsm_ah_mod, build_id, vs);
        F(xsm_ah_mod, lo, H5T_NATIVE_UINT64); F(xsm_ah_mod, hi, H5T_NATIVE_UINT64);
        F(xsm_ah_mod, bias, H5T_NATIVE_UINT64); F(xsm_ah_mod, t_load, H5T_NATIVE_INT64);
        F(xsm_ah_mod, t_unload, H5T_NATIVE_INT64);
        break;
    default:
        F(xsm_ah_pair, src, H5T_NATIVE_INT32); F(xsm_ah_pair, dst, H5T_NATIVE_INT32);
        F(xsm_ah_pair, messages, H5T_NATIVE_UINT64); F(xsm_ah_pair, bytes, H5T_NATIVE_UINT64);
    }
    if (!ok) {
        H5Tclose(t);
        return -1;
    }
    return t;
}
#undef F

/* Rows [i0, i0 + n) of a table into `rows`: 0, or -1. */
typedef int (*xsm_ah_fill)(void *ctx, void *rows, size_t i0, size_t n);

enum { XSM_AH_BATCH = XSM_H5_CHUNK }; /* rows per fill: a chunk */

/* One table of n rows under `g`, filled a batch at a time and written as
 * every table of merged.h5 is (emit/h5ds.h: packed, compressed on the
 * CPUs this process may use; NetPIPE's 3.6 M wait instances took 1.5 s on
 * one thread through H5Dwrite). */
static int xsm_ah_table_fill(hid_t g, const char *name, int which, size_t n, xsm_ah_fill fill, void *ctx)
{
    hid_t t = xsm_ah_type(which);
    xsm_h5ds d; /* takes t, even when it fails */
    int ok = xsm_h5ds_create(g, name, t, n, xsm_emit_h5_level(), (int)xsprof_chunk_pool_threads(), &d) == 0;
    void *buf = ok && n ? malloc((n < XSM_AH_BATCH ? n : XSM_AH_BATCH) * H5Tget_size(t)) : NULL;
    ok = ok && (!n || buf != NULL);
    for (size_t i0 = 0; ok && i0 < n; i0 += XSM_AH_BATCH) {
        size_t cnt = n - i0 < XSM_AH_BATCH ? n - i0 : XSM_AH_BATCH;
        ok = fill(ctx, buf, i0, cnt) == 0 && xsm_h5ds_append(&d, buf, cnt) == 0;
    }
    free(buf);
    return xsm_h5ds_close(&d) == 0 && ok ? 0 : -1;
}

typedef struct xsm_ah_arr {
    const void *rows;
    size_t size;
} xsm_ah_arr;

static int xsm_ah_fill_arr(void *ctx, void *rows, size_t i0, size_t n)
{
    const xsm_ah_arr *x = ctx;
    memcpy(rows, (const char *)x->rows + i0 * x->size, n * x->size);
    return 0;
}

/* One table of the n rows in memory at `rows`. */
static int xsm_ah_table(hid_t g, const char *name, int which, const void *rows, size_t n, size_t size)
{
    xsm_ah_arr x = {rows, size};
    return xsm_ah_table_fill(g, name, which, n, xsm_ah_fill_arr, &x);
}

/* The file's /strings as a name -> id map (every region and MPI function
 * the analysis names is there: both come from the same rank files). */
static int xsm_ah_strings(hid_t file, xsm_names *ids, uint32_t **of, size_t *n)
{
    hid_t ds = H5Dopen2(file, "strings", H5P_DEFAULT);
    hid_t sp = ds >= 0 ? H5Dget_space(ds) : -1;
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hssize_t cnt = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    char **v = cnt >= 0 ? calloc((size_t)cnt + 1, sizeof *v) : NULL;
    int rc = -1;
    if (v && (cnt == 0 || H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0)) {
        rc = 0;
        *n = (size_t)cnt;
        *of = malloc(((size_t)cnt + 1) * sizeof **of);
        if (!*of)
            rc = -1;
        /* xsm_names gives ids in first-seen order: keep each its /strings id */
        for (size_t i = 0; !rc && i < (size_t)cnt; i++) {
            size_t before = ids->n;
            int32_t k = xsm_names_intern(ids, v[i] ? v[i] : "");
            if (k < 0)
                rc = -1;
            else if (ids->n > before)
                (*of)[k] = (uint32_t)i;
        }
        if (cnt)
            H5Dvlen_reclaim(t, sp, H5P_DEFAULT, v);
    }
    free(v);
    H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (ds >= 0)
        H5Dclose(ds);
    return rc;
}

/* /strings id of analysis name `nm` (UINT32_MAX: none). */
/* A name of the analysis as a string, "" for none. */
static const char *xsm_ah_str_or_empty(const xsm_an *a, int32_t nm)
{
    return nm >= 0 && (size_t)nm < a->names.n ? a->names.v[nm] : "";
}

static uint32_t xsm_ah_sid(const xsm_an *a, const xsm_names *ids, const uint32_t *of, int32_t nm)
{
    if (nm < 0 || (size_t)nm >= a->names.n)
        return UINT32_MAX;
    int32_t k = xsm_names_find(ids, a->names.v[nm]);
    return k < 0 ? UINT32_MAX : of[k];
}

/* /strings id of a string (UINT32_MAX: none). */
static uint32_t xsm_ah_str(const xsm_names *ids, const uint32_t *of, const char *s)
{
    int32_t k = s ? xsm_names_find(ids, s) : -1;
    return k < 0 ? UINT32_MAX : of[k];
}

/* The analysis's wait instances, read back from its file. */
typedef struct xsm_ah_swaits {
    const xsm_an *a;
    const xsm_names *ids;
    const uint32_t *of;
    xsm_h5_rowfn rowfn;
    void *rowctx;
    xsm_swinst *buf;
} xsm_ah_swaits;

static int xsm_ah_fill_swaits(void *ctx, void *rows, size_t i0, size_t n)
{
    xsm_ah_swaits *x = ctx;
    const xsm_an *a = x->a;
    if ((i0 == 0 && (fflush(a->sw_file) != 0 || fseek(a->sw_file, 0, SEEK_SET) != 0)) ||
        fread(x->buf, sizeof *x->buf, n, a->sw_file) != n)
        return -1;
    xsm_ah_wait *w = rows;
    for (size_t i = 0; i < n; i++) {
        const xsm_swinst *s = &x->buf[i];
        const xsprof_rank_data *d = &a->run->ranks[s->waiter].d;
        const char *root = s->root >= 0 ? a->names.v[a->sgmap[s->root]] : NULL;
        w[i] = (xsm_ah_wait){s->kind, s->waiter, s->causer, xsm_ah_str(x->ids, x->of, xsprof_rank_data_string(d, s->op)),
                             s->encl == UINT32_MAX ? UINT32_MAX : xsm_ah_str(x->ids, x->of, xsprof_rank_data_string(d, s->encl)),
                             xsm_ah_str(x->ids, x->of, root), x->rowfn(x->rowctx, s->waiter, s->row), s->t_begin, s->t_end,
                             s->t_cause, s->root_rank};
    }
    return 0;
}

/* The analysis's critical path, read back from its file. */
static int xsm_ah_fill_scp(void *ctx, void *rows, size_t i0, size_t n)
{
    const xsm_an *a = ctx;
    xsm_ah_seg *sg = rows;
    if (i0 == 0 && (fflush(a->scp_file) != 0 || fseek(a->scp_file, 0, SEEK_SET) != 0))
        return -1;
    for (size_t i = 0; i < n; i++) {
        xsm_cpseg c;
        if (fread(&c, sizeof c, 1, a->scp_file) != 1)
            return -1;
        sg[i] = (xsm_ah_seg){c.rank, c.t0, c.t1};
    }
    return 0;
}

static int xsm_ah_write(const xsm_an *a, hid_t g, const xsm_names *ids, const uint32_t *of, xsm_h5_rowfn rowfn,
                        void *rowctx)
{
    size_t R = a->nranks;
    int bad = 0;
    /* ranks */
    xsm_ah_rank *rk = calloc(R + 1, sizeof *rk);
    if (!rk)
        return -1;
    for (size_t r = 0; r < R; r++) {
        const xsm_rankstat *s = &a->rs[r];
        rk[r] = (xsm_ah_rank){(int32_t)r, s->present, s->outlier, s->t_first, s->t_last, s->mpi_ns, s->wait_ns,
                              s->gpu_ns, a->cp_rank_s ? a->cp_rank_s[r] : 0};
    }
    bad |= xsm_ah_table(g, "ranks", AH_RANK, rk, R, sizeof *rk);
    free(rk);
    /* regions and MPI functions, one row per (name, rank) that ran it */
    size_t n = 0;
    xsm_ah_region *rg = malloc((a->nreg * R + 1) * sizeof *rg);
    for (size_t i = 0; rg && i < a->nreg; i++)
        for (size_t r = 0; r < R; r++)
            if (a->rs[r].present && a->reg[i].rcalls[r])
                rg[n++] = (xsm_ah_region){xsm_ah_sid(a, ids, of, a->reg[i].name), (int32_t)r, a->reg[i].rcalls[r],
                                          a->reg[i].incl[r], a->reg[i].excl[r]};
    bad |= !rg || xsm_ah_table(g, "regions", AH_REGION, rg, n, sizeof *rg);
    free(rg);
    n = 0;
    xsm_ah_op *op = malloc((a->nops * R + 1) * sizeof *op);
    for (size_t i = 0; op && i < a->nops; i++)
        for (size_t r = 0; r < R; r++)
            if (a->rs[r].present && (a->ops[i].rcalls[r] || a->ops[i].rbytes[r]))
                op[n++] = (xsm_ah_op){xsm_ah_sid(a, ids, of, a->ops[i].name), (int32_t)r, a->ops[i].rcalls[r],
                                      a->ops[i].rseconds[r], a->ops[i].rbytes[r]};
    bad |= !op || xsm_ah_table(g, "mpi", AH_OP, op, n, sizeof *op);
    free(op);
    /* wait states: every instance (the engine's file), its call as a row of
     * /mpi; the critical path's pieces from its end */
    xsm_ah_swaits x = {a, ids, of, rowfn, rowctx, malloc(XSM_AH_BATCH * sizeof(xsm_swinst))};
    bad |= !x.buf || !rowfn || (a->sw_n && !a->sw_file) ||
           xsm_ah_table_fill(g, "waits", AH_WAIT, a->sw_file ? a->sw_n : 0, xsm_ah_fill_swaits, &x);
    free(x.buf);
    bad |= (a->scp_n && !a->scp_file) ||
           xsm_ah_table_fill(g, "critical_path", AH_SEG, a->scp_file ? a->scp_n : 0, xsm_ah_fill_scp, (void *)a);
    /* communication matrix, the pairs that exchanged messages */
    xsm_ah_pair *pr = malloc((a->ncm + 1) * sizeof *pr);
    for (size_t i = 0; pr && i < a->ncm; i++)
        pr[i] = (xsm_ah_pair){a->cm[i].src, a->cm[i].dst, a->cm[i].msgs, a->cm[i].bytes};
    bad |= !pr || xsm_ah_table(g, "comm_matrix", AH_PAIR, pr, a->ncm, sizeof *pr);
    free(pr);
    /* where in the code: every call site, every sampled place ("" unknown) */
    xsm_ah_site *cs = malloc((a->ncss + 1) * sizeof *cs);
    for (size_t i = 0; cs && i < a->ncss; i++) {
        const xsm_callsite *c = &a->css[i];
        double caused = 0;
        for (int k = 0; k < XSM_WAIT_NKINDS; k++)
            caused += c->caused_s[k];
        cs[i] = (xsm_ah_site){xsm_ah_str_or_empty(a, c->op), xsm_ah_str_or_empty(a, c->function),
                              xsm_ah_str_or_empty(a, c->file), c->line, xsm_ah_str_or_empty(a, c->module), c->calls, c->mpi_s,
                              c->bytes, c->nranks, c->wait_total_s, caused};
    }
    bad |= !cs || xsm_ah_table(g, "callsites", AH_SITE, cs, a->css_known ? a->ncss : 0, sizeof *cs);
    free(cs);
    xsm_ah_smp *sp = malloc((a->nsmp + 1) * sizeof *sp);
    for (size_t i = 0; sp && i < a->nsmp; i++) {
        const xsm_sample *x = &a->smp[i];
        sp[i] = (xsm_ah_smp){xsm_ah_str_or_empty(a, x->function), xsm_ah_str_or_empty(a, x->inlined),
                             xsm_ah_str_or_empty(a, x->file), x->line, xsm_ah_str_or_empty(a, x->module), x->n,
                             a->smp_timed ? x->seconds : 0, x->nranks};
    }
    bad |= !sp || xsm_ah_table(g, "samples", AH_SMP, sp, a->nsmp, sizeof *sp);
    free(sp);
    /* the addresses behind them, and every rank's modules */
    xsm_ah_frame *fr = malloc((a->nfrm + 1) * sizeof *fr);
    for (size_t i = 0; fr && i < a->nfrm; i++) {
        const xsm_anframe *f = &a->frm[i];
        fr[i] = (xsm_ah_frame){xsm_ah_str_or_empty(a, f->module), f->offset, f->ret, xsm_ah_str_or_empty(a, f->function),
                               xsm_ah_str_or_empty(a, f->inlined), xsm_ah_str_or_empty(a, f->file), f->line};
    }
    bad |= !fr || xsm_ah_table(g, "frames", AH_FRAME, fr, a->nfrm, sizeof *fr);
    free(fr);
    size_t nm = 0;
    for (size_t r = 0; r < R; r++)
        nm += a->rs[r].present ? a->run->ranks[r].d.nmodules : 0;
    xsm_ah_mod *md = malloc((nm + 1) * sizeof *md);
    n = 0;
    for (size_t r = 0; md && r < R; r++) {
        const xsprof_rank_data *d = &a->run->ranks[r].d;
        if (!a->rs[r].present)
            continue;
        xsm_clk c;
        xsm_align_rank_clock(a->run, r, &c);
        for (size_t i = 0; i < d->nmodules; i++) {
            const xsprof_io_module *m = &d->modules[i];
            /* load and unload on the merged clock; "to the end" stays INT64_MAX */
            int64_t tl = xsm_align_sample_time(a->run, &c, m->t_load);
            int64_t tu = m->t_unload == INT64_MAX ? INT64_MAX : xsm_align_sample_time(a->run, &c, m->t_unload);
            md[n++] = (xsm_ah_mod){(int32_t)r, xsprof_rank_data_string(d, m->path),
                                   xsprof_rank_data_string(d, m->build_id), m->lo, m->hi, m->bias, tl, tu};
        }
    }
    bad |= !md || xsm_ah_table(g, "modules", AH_MOD, md, n, sizeof *md);
    free(md);
    return bad ? -1 : 0;
}

/* The wait kinds' names, in kind order, as an attribute of /analysis/waits. */
static int xsm_ah_kinds(hid_t g)
{
    const char *v[XSM_WAIT_NKINDS];
    for (int k = 0; k < XSM_WAIT_NKINDS; k++)
        v[k] = xsm_wait_kind_name(k);
    hsize_t n = XSM_WAIT_NKINDS;
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate_simple(1, &n, NULL), ds = H5Dopen2(g, "waits", H5P_DEFAULT), at = -1;
    int ok = t >= 0 && sp >= 0 && ds >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
             (at = H5Acreate2(ds, "kind_names", t, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 && H5Awrite(at, t, v) >= 0;
    if (at >= 0 && H5Aclose(at) < 0)
        ok = 0;
    if (ds >= 0)
        H5Dclose(ds);
    if (sp >= 0)
        H5Sclose(sp);
    if (t >= 0)
        H5Tclose(t);
    return ok ? 0 : -1;
}

/* merged.h5's /mpi rows of the model: every rank's rows after those of
 * the ranks before it. */
static int64_t xsm_ah_model_row(void *ctx, int32_t rank, uint64_t row)
{
    return ((const int64_t *)ctx)[rank] + (int64_t)row;
}

int xsm_analyze_h5(const struct xsm_an *a, const char *path, char *err, size_t errlen)
{
    const xsm_run *run = a->run;
    int64_t *off = calloc(run->nranks + 1, sizeof *off);
    if (!off) {
        snprintf(err, errlen, "xsmerge: %s: out of memory writing the analysis tables", path);
        return 1;
    }
    for (size_t r = 0; r < run->nranks; r++)
        off[r + 1] = off[r] + (int64_t)(run->ranks[r].present ? run->ranks[r].d.nmpi : 0);
    int rc = xsm_analyze_h5_rows(a, path, xsm_ah_model_row, off, err, errlen);
    free(off);
    return rc;
}

int xsm_analyze_h5_rows(const struct xsm_an *a, const char *path, xsm_h5_rowfn rowfn, void *rowctx, char *err,
                        size_t errlen)
{
    xsm_names ids = {0};
    uint32_t *of = NULL;
    size_t nstr = 0;
    int bad = 1;
    hid_t file = -1, gcpl = -1, g = -1;
    errno = 0;
    H5E_BEGIN_TRY
    {
        file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
        gcpl = H5Pcreate(H5P_GROUP_CREATE);
        if (file >= 0 && gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0 &&
            xsm_ah_strings(file, &ids, &of, &nstr) == 0 &&
            (g = H5Gcreate2(file, "analysis", H5P_DEFAULT, gcpl, H5P_DEFAULT)) >= 0)
            bad = xsm_ah_write(a, g, &ids, of, rowfn, rowctx) != 0 || xsm_ah_kinds(g) != 0;
        if (g >= 0 && H5Gclose(g) < 0)
            bad = 1;
        if (gcpl >= 0)
            H5Pclose(gcpl);
        if (file >= 0 && H5Fclose(file) < 0)
            bad = 1;
    }
    H5E_END_TRY;
    xsm_names_free(&ids);
    free(of);
    if (bad && errno) /* the system's reason, when a write failed (a full disk) */
        snprintf(err, errlen, "xsmerge: %s: cannot write the analysis tables: %s", path, strerror(errno));
    else if (bad)
        snprintf(err, errlen, "xsmerge: %s: cannot write the analysis tables", path);
    return bad ? 1 : 0;
}
