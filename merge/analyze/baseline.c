/* merge/analyze/baseline.c — `--baseline` regression check and the baseline
 * side of `--diff`. A baseline is an xsmerge output directory (its
 * report.json / flame.folded are read), a report.json file, or a run
 * directory (loaded through the merge pipeline and analysed the same way as
 * the current run). `--baseline` takes several (repeated, or a comma list):
 * earlier runs of the same job, whose spread is the noise of the machine.
 *
 * Compared: mean exclusive time per region (MPI calls inside excluded, so
 * waiting for other ranks does not count as the region getting slower) and
 * compute time (wall - MPI) per rank, each against the median of the
 * baselines. A metric regressed when it is slower than that median by more
 * than the threshold AND by more than the baselines' spread (max - min), so
 * run-to-run noise the baselines already show is not taken for a
 * regression. Only what holds at least 1 % of the baseline's mean rank time
 * is compared, so tiny regions whose relative noise is large cannot trip CI. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "an.h"
#include "merge/pipeline.h"

static char *file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    xsm_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        xsm_buf_put(&b, chunk, n);
    int bad = ferror(f) || b.failed;
    fclose(f);
    if (bad) {
        xsm_buf_free(&b);
        return NULL;
    }
    if (!b.p)
        xsm_buf_put(&b, "", 0);
    if (len)
        *len = b.len;
    return b.p;
}

static int is_file(const char *dir, const char *name)
{
    char p[4600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- a small JSON reader: enough for our own report.json ----------------------- */
enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jv {
    int t;
    double num;
    char *str;        /* J_STR value; for members of an object: the key is in `key` */
    char *key;
    struct jv *kids;  /* arrays and objects */
    size_t nkids;
} jv;

typedef struct jp {
    const char *s;
    int depth;
} jp;

static void jv_free(jv *v)
{
    for (size_t i = 0; i < v->nkids; i++)
        jv_free(&v->kids[i]);
    free(v->kids);
    free(v->str);
    free(v->key);
}

static void ws(jp *p)
{
    while (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t')
        p->s++;
}

static char *jstring(jp *p)
{
    if (*p->s != '"')
        return NULL;
    p->s++;
    xsm_buf b = {0};
    while (*p->s && *p->s != '"') {
        if (*p->s == '\\') {
            p->s++;
            char c = *p->s;
            if (!c)
                break;
            if (c == 'u') { /* our writer only escapes ASCII this way */
                unsigned v = 0;
                for (int i = 1; i <= 4 && p->s[i]; i++) {
                    char h = p->s[i];
                    v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
                }
                char ch = (char)(v < 128 ? v : '?');
                xsm_buf_put(&b, &ch, 1);
                p->s += 5;
                continue;
            }
            char ch = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
            xsm_buf_put(&b, &ch, 1);
            p->s++;
            continue;
        }
        xsm_buf_put(&b, p->s, 1);
        p->s++;
    }
    if (*p->s != '"' || b.failed) {
        xsm_buf_free(&b);
        return NULL;
    }
    p->s++;
    if (!b.p)
        xsm_buf_put(&b, "", 0);
    return b.p;
}

static int jparse(jp *p, jv *v)
{
    memset(v, 0, sizeof *v);
    if (++p->depth > 64)
        return -1;
    ws(p);
    int rc = -1;
    if (*p->s == '{' || *p->s == '[') {
        int obj = *p->s == '{';
        char close = obj ? '}' : ']';
        v->t = obj ? J_OBJ : J_ARR;
        p->s++;
        ws(p);
        size_t cap = 0;
        if (*p->s == close) {
            p->s++;
            rc = 0;
            goto done;
        }
        for (;;) {
            char *k = NULL;
            ws(p);
            if (obj) {
                k = jstring(p);
                ws(p);
                if (!k || *p->s != ':') {
                    free(k);
                    goto done;
                }
                p->s++;
            }
            if (v->nkids == cap) {
                cap = cap ? cap * 2 : 8;
                jv *nk = realloc(v->kids, cap * sizeof *nk);
                if (!nk) {
                    free(k);
                    goto done;
                }
                v->kids = nk;
            }
            jv *c = &v->kids[v->nkids];
            if (jparse(p, c) != 0) {
                jv_free(c);
                free(k);
                goto done;
            }
            c->key = k;
            v->nkids++;
            ws(p);
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == close) {
                p->s++;
                rc = 0;
            }
            goto done;
        }
    } else if (*p->s == '"') {
        v->t = J_STR;
        v->str = jstring(p);
        rc = v->str ? 0 : -1;
    } else if (strncmp(p->s, "true", 4) == 0 || strncmp(p->s, "false", 5) == 0) {
        v->t = J_BOOL;
        v->num = *p->s == 't';
        p->s += *p->s == 't' ? 4 : 5;
        rc = 0;
    } else if (strncmp(p->s, "null", 4) == 0) {
        v->t = J_NULL;
        p->s += 4;
        rc = 0;
    } else {
        char *end;
        errno = 0;
        v->t = J_NUM;
        v->num = strtod(p->s, &end);
        if (end != p->s && errno == 0) {
            p->s = end;
            rc = 0;
        }
    }
done:
    p->depth--;
    return rc;
}

static const jv *jget(const jv *o, const char *k)
{
    if (!o || o->t != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->nkids; i++)
        if (o->kids[i].key && strcmp(o->kids[i].key, k) == 0)
            return &o->kids[i];
    return NULL;
}

static double jnum(const jv *v) { return v && (v->t == J_NUM || v->t == J_BOOL) ? v->num : NAN; }

/* ---- the metrics compared ------------------------------------------------------------ */
typedef struct metric {
    char *name;   /* region name, or NULL for a rank */
    int32_t rank; /* for rank metrics */
    double value; /* seconds */
} metric;

typedef struct metrics {
    metric *v;
    size_t n;
    double mean_rank_s; /* mean wall time of a rank: what "enough time" is relative to */
    size_t nranks;
} metrics;

static void metrics_free(metrics *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].name);
    free(m->v);
    memset(m, 0, sizeof *m);
}

static int metrics_from_an(const xsm_an *a, metrics *m)
{
    m->v = calloc(a->nreg + a->nranks + 1, sizeof *m->v);
    if (!m->v)
        return -1;
    size_t present = 0;
    double wall = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        present++;
        double w = (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9;
        wall += w;
        m->v[m->n++] = (metric){NULL, (int32_t)r, w - (double)a->rs[r].mpi_ns * 1e-9};
    }
    for (size_t i = 0; i < a->nreg; i++) {
        char *nm = strdup(xsm_an_name(a, a->reg[i].name));
        if (!nm)
            return -1;
        m->v[m->n++] = (metric){nm, -1, a->reg[i].excl_mean};
    }
    m->nranks = present;
    m->mean_rank_s = present ? wall / (double)present : 0;
    return 0;
}

static int metrics_from_json(const char *path, metrics *m, char *err, size_t errlen)
{
    char *text = file_read(path, NULL);
    if (!text) {
        snprintf(err, errlen, "xsmerge: baseline %s: cannot read: %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    jv root;
    jp p = {text, 0};
    int rc = -1;
    if (jparse(&p, &root) != 0 || root.t != J_OBJ) {
        snprintf(err, errlen, "xsmerge: baseline %s: not a valid report (JSON syntax)", path);
        jv_free(&root);
        free(text);
        return -1;
    }
    const jv *schema = jget(&root, "schema"), *regs = jget(&root, "regions"), *ranks = jget(&root, "ranks");
    if (!schema || schema->t != J_STR || strcmp(schema->str, "xsprof-report/1") != 0 || !regs || regs->t != J_ARR || !ranks ||
        ranks->t != J_ARR) {
        snprintf(err, errlen, "xsmerge: baseline %s: not an xsprof-report/1 file (schema, regions or ranks missing)",
                 path);
        goto out;
    }
    m->v = calloc(regs->nkids + ranks->nkids + 1, sizeof *m->v);
    if (!m->v) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    double wall = 0;
    for (size_t i = 0; i < ranks->nkids; i++) {
        const jv *r = &ranks->kids[i];
        const jv *pres = jget(r, "present");
        if (pres && pres->t == J_BOOL && !pres->num)
            continue;
        double rk = jnum(jget(r, "rank")), w = jnum(jget(r, "wall_s")), c = jnum(jget(r, "compute_s"));
        if (isnan(rk) || isnan(w) || isnan(c))
            continue;
        wall += w;
        m->nranks++;
        m->v[m->n++] = (metric){NULL, (int32_t)rk, c};
    }
    for (size_t i = 0; i < regs->nkids; i++) {
        const jv *g = &regs->kids[i], *nm = jget(g, "name");
        double mean = jnum(jget(jget(g, "excl_s"), "mean"));
        if (!nm || nm->t != J_STR || isnan(mean))
            continue;
        char *s = strdup(nm->str);
        if (!s) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto out;
        }
        m->v[m->n++] = (metric){s, -1, mean};
    }
    m->mean_rank_s = m->nranks ? wall / (double)m->nranks : 0;
    rc = 0;
out:
    jv_free(&root);
    free(text);
    return rc;
}

/* Analyse a run directory through the pipeline. */
static int an_from_run_dir(const char *dir, xsm_run *run, xsm_an *a, char *err, size_t errlen)
{
    xsm_load_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.quiet = 1;
    memset(run, 0, sizeof *run);
    if (xsm_run_load(dir, &lo, run, err, errlen) != 0)
        return -1;
    if (xsm_an_compute(a, run, err, errlen) != 0) {
        xsm_run_free(run);
        return -1;
    }
    return 0;
}

static int metrics_load(const char *dir, metrics *m, char *err, size_t errlen)
{
    char p[4600];
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISREG(st.st_mode)) /* a report.json itself */
        return metrics_from_json(dir, m, err, errlen);
    snprintf(p, sizeof p, "%s/report.json", dir);
    if (is_file(dir, "report.json"))
        return metrics_from_json(p, m, err, errlen);
    xsm_run run;
    xsm_an a;
    if (an_from_run_dir(dir, &run, &a, err, errlen) != 0)
        return -1;
    int rc = metrics_from_an(&a, m);
    if (rc != 0)
        snprintf(err, errlen, "%s: out of memory", dir);
    xsm_an_free(&a);
    xsm_run_free(&run);
    return rc;
}

int xsm_baseline_folded(const char *dir, xsm_buf *out, char *err, size_t errlen)
{
    char p[4600];
    snprintf(p, sizeof p, "%s/flame.folded", dir);
    if (is_file(dir, "flame.folded")) {
        size_t n;
        char *t = file_read(p, &n);
        if (!t) {
            snprintf(err, errlen, "xsmerge: %s: cannot read: %s", p, strerror(errno ? errno : EIO));
            return 1;
        }
        xsm_buf_put(out, t, n);
        free(t);
        return out->failed ? 1 : 0;
    }
    xsm_run run;
    xsm_an a;
    if (an_from_run_dir(dir, &run, &a, err, errlen) != 0)
        return 1;
    xsm_flame_folded(&a, out);
    xsm_an_free(&a);
    xsm_run_free(&run);
    return out->failed ? 1 : 0;
}

static const metric *metric_find(const metrics *m, const char *name, int32_t rank)
{
    for (size_t i = 0; i < m->n; i++) {
        if (name && m->v[i].name && strcmp(m->v[i].name, name) == 0)
            return &m->v[i];
        if (!name && !m->v[i].name && m->v[i].rank == rank)
            return &m->v[i];
    }
    return NULL;
}

/* What is compared must hold at least this share of the baseline's mean rank time. */
#define XSM_BASELINE_MIN_SHARE 0.01
#define XSM_BASELINE_MAX 64

static int dbl_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Splits the comma list `list` into paths (in `store`); their number, or -1. */
static int baseline_paths(const char *list, char *store, size_t len, const char **path, int max)
{
    if (snprintf(store, len, "%s", list) >= (int)len)
        return -1;
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(store, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        path[n++] = tok;
    }
    return n;
}

int xsm_baseline_compare(xsm_an *a, const char *list, double thr, xsm_buf *b, char *err, size_t errlen)
{
    metrics old[XSM_BASELINE_MAX], cur = {0};
    const char *path[XSM_BASELINE_MAX];
    char store[16384];
    int nb = baseline_paths(list, store, sizeof store, path, XSM_BASELINE_MAX), loaded = 0, rc = 1;
    if (nb < 1) {
        snprintf(err, errlen, "xsmerge: --baseline: expected 1 to %d earlier runs, got '%.200s'", XSM_BASELINE_MAX,
                 list);
        return 1;
    }
    for (; loaded < nb; loaded++) {
        memset(&old[loaded], 0, sizeof old[loaded]);
        if (metrics_load(path[loaded], &old[loaded], err, errlen) != 0)
            goto out;
    }
    if (metrics_from_an(a, &cur) != 0) {
        snprintf(err, errlen, "baseline comparison: out of memory");
        goto out;
    }
    if (nb == 1)
        xsm_buf_printf(b, "\n==== Regression check against %s (threshold %.1f%%) ====\n", path[0], thr);
    else
        xsm_buf_printf(b, "\n==== Regression check against the median of %d baselines (threshold %.1f%%, and beyond "
                       "their own spread) ====\n", nb, thr);
    for (int k = 0; nb > 1 && k < nb; k++)
        xsm_buf_printf(b, "  baseline %d: %s\n", k + 1, path[k]);
    size_t compared = 0, slower = 0, noise = 0;
    double floor_s = XSM_BASELINE_MIN_SHARE * old[0].mean_rank_s;
    for (size_t i = 0; i < cur.n; i++) {
        const metric *c = &cur.v[i];
        double v[XSM_BASELINE_MAX];
        int nv = 0;
        for (int k = 0; k < nb; k++) {
            const metric *o = metric_find(&old[k], c->name, c->rank);
            if (o)
                v[nv++] = o->value;
        }
        if (!nv)
            continue;
        qsort(v, (size_t)nv, sizeof *v, dbl_cmp);
        double ref = nv % 2 ? v[nv / 2] : 0.5 * (v[nv / 2 - 1] + v[nv / 2]);
        if (ref < floor_s || ref <= 0)
            continue;
        compared++;
        double pct = 100.0 * (c->value - ref) / ref, spread = 100.0 * (v[nv - 1] - v[0]) / ref;
        char d1[32], d2[32], what[512], base[96];
        xsm_fmt_dur(d1, sizeof d1, c->value);
        xsm_fmt_dur(d2, sizeof d2, ref);
        if (c->name)
            snprintf(what, sizeof what, "region `%s` (mean exclusive time per rank)", c->name);
        else
            snprintf(what, sizeof what, "rank %d compute time", c->rank);
        if (pct <= thr)
            continue;
        if (nv > 1)
            snprintf(base, sizeof base, "the baselines' median (%d runs, spread %.1f%%)", nv, spread);
        else
            snprintf(base, sizeof base, "the baseline");
        if (pct <= spread) { /* slower, but no more than the baselines differ among themselves */
            noise++;
            xsm_buf_printf(b, "  within noise %s: %s vs %s in %s (%+.1f%%)\n", what, d1, d2, base, pct);
            continue;
        }
        slower++;
        xsm_buf_printf(b, "  SLOWER %s: %s vs %s in %s (%+.1f%%)\n", what, d1, d2, base, pct);
        xsm_finding f;
        memset(&f, 0, sizeof f);
        size_t nr = c->name ? cur.nranks : 1;
        f.ranks = malloc((nr + 1) * sizeof *f.ranks);
        if (!f.ranks) {
            snprintf(err, errlen, "baseline comparison: out of memory");
            goto out;
        }
        if (c->name) {
            for (size_t r = 0; r < a->nranks; r++)
                if (a->rs[r].present)
                    f.ranks[f.nranks++] = (int32_t)r;
        } else {
            f.ranks[f.nranks++] = c->rank;
        }
        snprintf(f.kind, sizeof f.kind, "Regression");
        f.seconds_lost = (c->value - ref) * (double)(c->name ? cur.nranks : 1);
        f.severity = pct >= 2 * thr ? "high" : "medium";
        f.region = c->name ? xsm_names_find(&a->names, c->name) : -1;
        snprintf(f.message, sizeof f.message, "%s takes %s against %s in %s (%+.1f%%, threshold %.1f%%)", what, d1, d2,
                 base, pct, thr);
        snprintf(f.recommendation, sizeof f.recommendation,
                 "compare the two runs' flame graphs (xsmerge RUN --diff %s) to see which calls grew", path[0]);
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            snprintf(err, errlen, "baseline comparison: out of memory");
            goto out;
        }
    }
    if (nb > 1)
        xsm_buf_printf(b, "  %zu region/rank times compared, %zu slower by more than %.1f%% and the baselines' "
                       "spread, %zu slower only within it: %s\n", compared, slower, thr, noise,
                       slower ? "REGRESSION" : "ok");
    else
        xsm_buf_printf(b, "  %zu region/rank times compared, %zu slower by more than %.1f%%: %s\n", compared, slower,
                       thr, slower ? "REGRESSION" : "ok");
    rc = slower ? 3 : 0;
out:
    for (int k = 0; k <= loaded && k < nb; k++) /* the one that failed to load too: zeroed or partial */
        metrics_free(&old[k]);
    metrics_free(&cur);
    return rc;
}
