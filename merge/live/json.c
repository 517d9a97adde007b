/* merge/live/json.c — the snapshot, schema xsprof-live/1 (README.md in this
 * folder): the job, each rank's sums and series, and the tables summed
 * over ranks from the engine's accumulators (call trees, MPI operations,
 * waits), as profile.c reads them for report.json; the same tables' first
 * rows for --tty. Owner: merge live view. */
#include "merge/live/live.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOP 20
#define FLAME_MAX 4000 /* nodes of the flame graph (the heaviest paths are met first anyway) */

typedef struct agg {
    uint64_t calls, n;
    double incl, excl, s, bytes;
    int32_t last; /* the last rank counted (+1): ranks are summed in order */
    int nranks;
} agg;

typedef struct tab {
    xsm_names names;
    agg *v;
    size_t n, cap; /* n: entries zeroed so far */
} tab;

static agg *tab_get(tab *t, const char *name)
{
    int32_t i = xsm_names_intern(&t->names, name);
    if (i < 0 || xsm_reserve((void **)&t->v, &t->cap, (size_t)i + 1, sizeof *t->v))
        return NULL;
    for (; t->n <= (size_t)i; t->n++)
        memset(&t->v[t->n], 0, sizeof t->v[t->n]);
    return &t->v[i];
}

static void agg_rank(agg *a, int32_t r)
{
    if (a->last != r + 1) {
        a->last = r + 1;
        a->nranks++;
    }
}

static const tab *sort_tab;
static int sort_by_s(const void *x, const void *y)
{
    double a = sort_tab->v[*(const size_t *)x].s, b = sort_tab->v[*(const size_t *)y].s;
    return a > b ? -1 : a < b;
}

static size_t *tab_order(tab *t)
{
    size_t *o = malloc((t->names.n + 1) * sizeof *o);
    if (!o)
        return NULL;
    for (size_t i = 0; i < t->names.n; i++)
        o[i] = i;
    sort_tab = t;
    qsort(o, t->names.n, sizeof *o, sort_by_s);
    return o;
}

/* ,"key":number */
static void kv_num(xsm_buf *b, const char *key, double v)
{
    xsm_buf_printf(b, ",\"%s\":", key);
    xsm_buf_json_num(b, v);
}

/* A column of a table's rows: an agg member, a count or seconds. */
typedef struct col {
    const char *key;
    size_t off;
    int integer;
} col;

/* ,"key":[{"namekey": name, columns..., "ranks": n}, ...] by seconds, at most max rows. */
static void tab_json(xsm_buf *b, const char *key, const char *namekey, tab *t, size_t max, const col *cols, size_t ncols)
{
    size_t *ord = tab_order(t);
    xsm_buf_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; ord && i < t->names.n && i < max; i++) {
        const agg *a = &t->v[ord[i]];
        xsm_buf_printf(b, "%s{\"%s\":", i ? "," : "", namekey);
        xsm_buf_json_str(b, t->names.v[ord[i]], 1);
        for (size_t c = 0; c < ncols; c++) {
            const char *p = (const char *)a + cols[c].off;
            if (cols[c].integer)
                xsm_buf_printf(b, ",\"%s\":%llu", cols[c].key, (unsigned long long)*(const uint64_t *)(const void *)p);
            else
                kv_num(b, cols[c].key, *(const double *)(const void *)p);
        }
        xsm_buf_printf(b, ",\"ranks\":%d}", a->nranks);
    }
    xsm_buf_puts(b, "]");
    free(ord);
}

static void tab_free(tab *t)
{
    xsm_names_free(&t->names);
    free(t->v);
}

/* ---- the flame graph: every rank's call tree, one tree by name path ---- */
typedef struct fnode {
    int32_t parent, name; /* name: index in the names */
    int is_mpi;
    double incl;
} fnode;

typedef struct flame {
    xsm_names names;
    fnode *v;
    size_t n, cap;
} flame;

static int32_t flame_node(flame *f, int32_t parent, const char *name, int is_mpi)
{
    int32_t nm = xsm_names_intern(&f->names, name);
    if (nm < 0)
        return -1;
    for (size_t i = 0; i < f->n; i++) /* small: bounded by FLAME_MAX */
        if (f->v[i].parent == parent && f->v[i].name == nm && f->v[i].is_mpi == is_mpi)
            return (int32_t)i;
    if (f->n >= FLAME_MAX || xsm_grow((void **)&f->v, &f->cap, f->n, sizeof *f->v))
        return -1;
    f->v[f->n] = (fnode){parent, nm, is_mpi, 0};
    return (int32_t)f->n++;
}

static void flame_json(const flame *f, xsm_buf *b, int32_t parent, int depth)
{
    int first = 1;
    for (size_t i = 0; i < f->n; i++) {
        if (f->v[i].parent != parent)
            continue;
        xsm_buf_puts(b, first ? "" : ",");
        first = 0;
        xsm_buf_puts(b, "{\"name\":");
        xsm_buf_json_str(b, f->names.v[f->v[i].name], 1);
        xsm_buf_printf(b, ",\"mpi\":%d,\"value\":", f->v[i].is_mpi);
        xsm_buf_json_num(b, f->v[i].incl);
        xsm_buf_puts(b, ",\"children\":[");
        if (depth < 32)
            flame_json(f, b, (int32_t)i, depth + 1);
        xsm_buf_puts(b, "]}");
    }
}

static void series_json(xsm_buf *b, const xsm_lrank_view *v)
{
    static const char *const keys[] = {"t", "mpi", "wait", "gpu", "eps", "mem"};
    xsm_buf_puts(b, ",\"series\":{");
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        xsm_buf_printf(b, "%s\"%s\":[", k ? "," : "", keys[k]);
        for (size_t i = 0; i < v->npoints; i++) {
            const xsm_lpoint *p = &v->series[(v->head + XSM_LIVE_SERIES - v->npoints + i) % XSM_LIVE_SERIES];
            double x = k == 0 ? p->t : k == 1 ? p->mpi_pct : k == 2 ? p->wait_pct : k == 3 ? p->gpu_pct
                     : k == 4 ? p->eps : p->mem_bytes;
            if (i)
                xsm_buf_puts(b, ",");
            xsm_buf_json_num(b, x);
        }
        xsm_buf_puts(b, "]");
    }
    xsm_buf_puts(b, "}");
}

static void ranks_json(const xsm_live_view *lv, xsm_buf *b)
{
    xsm_buf_puts(b, ",\"ranks\":[");
    for (int32_t r = 0; r < lv->size; r++) {
        const xsm_lrank_view *v = &lv->ranks[r];
        xsm_buf_printf(b, "%s{\"rank\":%d,\"state\":", r ? "," : "", r);
        xsm_buf_json_str(b, v->state, 1);
        xsm_buf_puts(b, ",\"end_state\":");
        xsm_buf_json_str(b, v->end_state[0] ? v->end_state : v->state, 1);
        xsm_buf_puts(b, ",\"host\":");
        xsm_buf_json_str(b, v->host, 1);
        kv_num(b, "wall_s", v->wall_s);
        kv_num(b, "mpi_s", v->mpi_s);
        kv_num(b, "wait_s", v->wait_s);
        kv_num(b, "gpu_s", v->gpu_s);
        kv_num(b, "mpi_pct", v->wall_s > 0 ? 100.0 * v->mpi_s / v->wall_s : 0);
        kv_num(b, "wait_pct", v->wall_s > 0 ? 100.0 * v->wait_s / v->wall_s : 0);
        xsm_buf_printf(b, ",\"events\":%llu,\"dropped\":%llu,\"events_per_s\":", (unsigned long long)v->events,
                       (unsigned long long)v->dropped);
        xsm_buf_json_num(b, v->npoints ? v->series[(v->head + XSM_LIVE_SERIES - 1) % XSM_LIVE_SERIES].eps : 0);
        xsm_buf_printf(b, ",\"memory\":%s", v->has_mem ? "true" : "false");
        series_json(b, v);
        xsm_buf_puts(b, ",\"threads\":[");
        for (size_t i = 0; i < v->nth; i++) {
            xsm_buf_printf(b, "%s{\"thread\":%u,\"events_per_s\":[", i ? "," : "", v->th[i].tid);
            for (size_t k = 0; k < XSM_LIVE_TACT; k++)
                xsm_buf_printf(b, "%s%u", k ? "," : "", v->th[i].act[k]);
            xsm_buf_puts(b, "]}");
        }
        xsm_buf_puts(b, "]}");
    }
    xsm_buf_puts(b, "]");
}

/* Regions, MPI operations and waits summed over ranks; the flame graph. */
/* The tables summed over ranks and the flame graph, from the engine. */
typedef struct sums {
    tab reg, ops, waits;
    flame fl;
} sums;

static void sums_build(const xsm_live_view *lv, sums *t)
{
    memset(t, 0, sizeof *t);
    int32_t *map = NULL;
    size_t mapcap = 0;
    for (int32_t r = 0; lv->sa && r < lv->size; r++) {
        xsm_anrank_out o;
        xsm_sanalysis_view(lv->sa, r, &o);
        const xsprof_rank_data *d = &lv->run->ranks[r].d;
        if (xsm_reserve((void **)&map, &mapcap, o.ncn + 1, sizeof *map))
            break;
        for (size_t c = 0; c < o.ncn; c++) { /* parents come before children */
            const xsm_scnode *n = &o.cn[c];
            const char *name = xsprof_rank_data_string(d, n->sid);
            int32_t parent = n->parent >= 0 ? map[n->parent] : -1;
            map[c] = n->parent >= 0 && parent < 0 ? -1 : flame_node(&t->fl, parent, name, n->is_mpi);
            if (map[c] >= 0)
                t->fl.v[map[c]].incl += (double)n->cs.incl * 1e-9;
            if (n->is_mpi)
                continue;
            agg *a = tab_get(&t->reg, name);
            if (!a)
                continue;
            a->calls += n->cs.calls;
            a->incl += (double)n->cs.incl * 1e-9;
            a->excl += (double)n->cs.excl * 1e-9;
            a->s = a->excl;
            agg_rank(a, r);
        }
        for (size_t i = 0; i < o.nops; i++) {
            agg *a = tab_get(&t->ops, xsprof_rank_data_string(d, o.ops[i].sid));
            if (!a)
                continue;
            a->calls += o.ops[i].calls;
            a->s += (double)o.ops[i].ns * 1e-9;
            a->bytes += (double)(o.ops[i].bytes_sent + o.ops[i].bytes_recv);
            agg_rank(a, r);
        }
        for (size_t i = 0; i < o.nw; i++) {
            agg *a = tab_get(&t->waits, xsm_wait_kind_name(o.w[i].kind));
            if (!a)
                continue;
            a->n += o.w[i].n;
            a->s += (double)o.w[i].ns * 1e-9;
            agg_rank(a, r);
        }
    }
    free(map);
}

static void sums_free(sums *t)
{
    tab_free(&t->reg);
    tab_free(&t->ops);
    tab_free(&t->waits);
    xsm_names_free(&t->fl.names);
    free(t->fl.v);
}

static void tables_json(const xsm_live_view *lv, xsm_buf *b)
{
    sums t;
    sums_build(lv, &t);
    static const col reg_cols[] = {{"calls", offsetof(agg, calls), 1}, {"incl_s", offsetof(agg, incl), 0},
                                   {"excl_s", offsetof(agg, excl), 0}};
    static const col op_cols[] = {{"calls", offsetof(agg, calls), 1}, {"seconds", offsetof(agg, s), 0},
                                  {"bytes", offsetof(agg, bytes), 0}};
    static const col wait_cols[] = {{"seconds", offsetof(agg, s), 0}, {"instances", offsetof(agg, n), 1}};
    tab_json(b, "regions", "name", &t.reg, TOP, reg_cols, 3);
    tab_json(b, "mpi", "op", &t.ops, TOP, op_cols, 3);
    tab_json(b, "wait_states", "kind", &t.waits, SIZE_MAX, wait_cols, 2);
    xsm_buf_puts(b, ",\"flame\":[");
    flame_json(&t.fl, b, -1, 0);
    xsm_buf_puts(b, "]");
    sums_free(&t);
}

/* One line of a table for --tty: its first n rows by seconds. */
static void tab_text(xsm_buf *b, const char *title, tab *t, size_t n)
{
    size_t *ord = tab_order(t);
    xsm_buf_printf(b, "%-13s", title);
    for (size_t i = 0; ord && i < t->names.n && i < n; i++) {
        char d[32];
        xsm_fmt_dur(d, sizeof d, t->v[ord[i]].s);
        xsm_buf_printf(b, "%s%.40s %s", i ? ", " : "", t->names.v[ord[i]], d);
    }
    xsm_buf_puts(b, ord && t->names.n ? "\n" : "-\n");
    free(ord);
}

void xsm_live_top_text(const xsm_live_view *lv, xsm_buf *b, size_t n)
{
    sums t;
    sums_build(lv, &t);
    tab_text(b, "regions", &t.reg, n);
    tab_text(b, "MPI", &t.ops, n);
    tab_text(b, "wait states", &t.waits, n);
    sums_free(&t);
}

void xsm_live_json(const xsm_live *l, xsm_buf *b)
{
    const xsm_live_view *lv = xsm_live_get(l);
    xsm_buf_puts(b, "{\"schema\":\"xsprof-live/1\",\"job\":{\"run_dir\":");
    xsm_buf_json_str(b, lv->run_dir, 1);
    xsm_buf_puts(b, ",\"job_id\":");
    xsm_buf_json_str(b, lv->job_id, 1);
    xsm_buf_printf(b, ",\"ranks\":%d,\"state\":\"%s\",\"since_s\":", lv->size,
                   lv->ended ? "ended" : lv->size ? "running" : "waiting");
    xsm_buf_json_num(b, lv->since_s);
    xsm_buf_puts(b, ",\"merge_command\":");
    xsm_buf b2 = {0};
    xsm_live_merge_cmd(lv, &b2);
    xsm_buf_json_str(b, b2.p ? b2.p : "", 1);
    xsm_buf_free(&b2);
    xsm_buf_puts(b, "}");
    ranks_json(lv, b);
    tables_json(lv, b);
    xsm_buf_puts(b, ",\"alerts\":[");
    for (size_t i = 0; i < lv->nalerts; i++) {
        const xsm_alert *a = &lv->alerts[i];
        xsm_buf_printf(b, "%s{\"alert\":", i ? "," : "");
        xsm_buf_json_str(b, a->text, 1);
        xsm_buf_printf(b, ",\"fired\":%s,\"rank\":%d,\"value\":", a->fired ? "true" : "false", a->rank);
        xsm_buf_json_num(b, a->value);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]}\n");
}
