/* merge/analyze/score.c — trace-size scoring (score.h). */
#include "merge/analyze/score.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "merge/read/read.h"

/* The filter rule (README "Sizing a trace before a big run"): names whose
 * visits last at most TINY_S on average and hold at least MIN_SHARE of the
 * region rows, most rows per second of time first, while the time they
 * hold stays within MAX_LOST of the ranks' time; at most MAX_NAMES. */
#define XSM_SCORE_TINY_S 10e-6
#define XSM_SCORE_MIN_SHARE 0.01
#define XSM_SCORE_MAX_LOST 0.05
#define XSM_SCORE_MAX_NAMES 16

static const char *const table_name[XSPROF_STORED_COUNT] = {"regions", "args", "instants", "counters", "mpi",
                                                            "gpu",     "memory", "clock",  "samples"};

int xsm_score_add(xsm_score *s, const char *name, uint64_t visits, double seconds, double bytes)
{
    int32_t nm = xsm_names_intern(&s->names, name);
    if (nm < 0)
        return -1;
    if ((size_t)nm >= s->nbyname) {
        size_t n = s->nbyname ? s->nbyname * 2 : 64;
        while (n <= (size_t)nm)
            n *= 2;
        int32_t *g = realloc(s->byname, n * sizeof *g);
        if (!g)
            return -1;
        memset(g + s->nbyname, 0, (n - s->nbyname) * sizeof *g);
        s->byname = g;
        s->nbyname = n;
    }
    if (!s->byname[nm]) {
        if (s->nrow == s->cap) {
            size_t c = s->cap ? s->cap * 2 : 64;
            xsm_score_row *g = realloc(s->row, c * sizeof *g);
            if (!g)
                return -1;
            s->row = g;
            s->cap = c;
        }
        s->row[s->nrow] = (xsm_score_row){.name = nm};
        s->byname[nm] = (int32_t)++s->nrow;
    }
    xsm_score_row *r = &s->row[s->byname[nm] - 1];
    r->visits += visits;
    r->seconds += seconds;
    r->bytes += bytes;
    return 0;
}

void xsm_score_free(xsm_score *s)
{
    xsm_names_free(&s->names);
    free(s->row);
    free(s->byname);
    memset(s, 0, sizeof *s);
}

double xsm_score_for_parse(const char *s)
{
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0) || !isfinite(v) || isspace((unsigned char)*s))
        return 0;
    if (strcmp(end, "x") == 0)
        return v;
    static const struct {
        const char *u;
        double s;
    } units[] = {{"h", 3600}, {"m", 60}, {"min", 60}, {"s", 1}, {"", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].u) == 0)
            return -v * units[i].s;
    return 0;
}

/* The factor a --score-for value stands for in a run of duration_s. */
static double factor_of(double f, double duration_s)
{
    if (f > 0)
        return f;
    if (f < 0 && duration_s > 0)
        return -f / duration_s;
    return 10;
}

static int row_cmp(const void *pa, const void *pb, void *ctx)
{
    const xsm_score_row *a = pa, *b = pb;
    const xsm_score *s = ctx;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(s->names.v[a->name], s->names.v[b->name]);
}

/* Candidates of the filter: most visits per second of time first. */
static int cand_cmp(const void *pa, const void *pb, void *ctx)
{
    const xsm_score *s = ctx;
    const xsm_score_row *a = &s->row[*(const size_t *)pa], *b = &s->row[*(const size_t *)pb];
    double ra = (double)a->visits / (a->seconds > 1e-12 ? a->seconds : 1e-12);
    double rb = (double)b->visits / (b->seconds > 1e-12 ? b->seconds : 1e-12);
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return strcmp(s->names.v[a->name], s->names.v[b->name]);
}

/* A name XSPROF_FILTER can exclude exactly (core/filter.c: comma-separated
 * fnmatch globs, a leading '-' or '+' is the sign): glob characters are
 * escaped, a comma cannot be. Appends "-name" to out; 0, -1 when it cannot. */
static int filter_append(char *out, size_t n, const char *name)
{
    char pat[600];
    size_t k = 0;
    if (!*name || strchr(name, ','))
        return -1;
    for (const char *p = name; *p; p++) {
        if (k + 3 >= sizeof pat)
            return -1;
        if (strchr("*?[]\\", *p))
            pat[k++] = '\\';
        pat[k++] = *p;
    }
    pat[k] = 0;
    size_t used = strlen(out);
    if (used + k + 3 >= n)
        return -1;
    snprintf(out + used, n - used, "%s-%s", used ? "," : "", pat);
    return 0;
}

void xsm_score_finish(xsm_score *s)
{
    s->total_visits = 0;
    s->total_region_bytes = 0;
    for (size_t i = 0; i < s->nrow; i++) {
        s->total_visits += s->row[i].visits;
        s->total_region_bytes += s->row[i].bytes;
    }
    s->total_bytes = 0;
    for (int t = 0; t < XSPROF_STORED_COUNT; t++)
        s->total_bytes += (double)s->table_bytes[t];
    if (s->nrow > 1)
        qsort_r(s->row, s->nrow, sizeof *s->row, row_cmp, s);
    for (size_t i = 0; i < s->nrow; i++)
        s->byname[s->row[i].name] = (int32_t)(i + 1);
    size_t *c = s->nrow ? malloc(s->nrow * sizeof *c) : NULL, nc = 0;
    s->filter[0] = 0;
    s->f_visits = 0;
    s->f_bytes = s->f_seconds = 0;
    if (!c)
        return;
    for (size_t i = 0; i < s->nrow; i++) {
        const xsm_score_row *r = &s->row[i];
        if (r->visits && r->seconds / (double)r->visits <= XSM_SCORE_TINY_S &&
            (double)r->visits >= XSM_SCORE_MIN_SHARE * (double)s->total_visits)
            c[nc++] = i;
    }
    if (nc > 1)
        qsort_r(c, nc, sizeof *c, cand_cmp, s);
    for (size_t k = 0, taken = 0; k < nc && taken < XSM_SCORE_MAX_NAMES; k++) {
        xsm_score_row *r = &s->row[c[k]];
        if (s->rank_s > 0 && s->f_seconds + r->seconds > XSM_SCORE_MAX_LOST * s->rank_s)
            break;
        if (filter_append(s->filter, sizeof s->filter, s->names.v[r->name]) != 0)
            continue;
        r->suggested = 1;
        taken++;
        s->f_visits += r->visits;
        s->f_bytes += r->bytes;
        s->f_seconds += r->seconds;
    }
    free(c);
}

/* ---- from the analysis ----------------------------------------------------- */

/* Bytes on disk per regions-table row of a rank: its stored bytes over its
 * rows; a journal (nothing stored) counts the row as io/format.h has it. */
static double row_bytes(const xsprof_rank_data *d)
{
    uint64_t n = d->stored_rows[XSPROF_IO_T_REGIONS];
    return n ? (double)d->stored_bytes[XSPROF_IO_T_REGIONS] / (double)n : (double)sizeof(xsprof_io_region);
}

int xsm_score_from_an(xsm_score *s, const xsm_an *a, double f)
{
    memset(s, 0, sizeof *s);
    const xsm_run *run = a->run;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!run->ranks[r].present)
            continue;
        s->nranks++;
        for (int t = 0; t < XSPROF_STORED_COUNT; t++) {
            s->table_rows[t] += run->ranks[r].d.stored_rows[t];
            s->table_bytes[t] += run->ranks[r].d.stored_bytes[t];
        }
    }
    for (size_t i = 0; i < a->nreg; i++) {
        const xsm_region *g = &a->reg[i];
        double bytes = 0;
        for (size_t r = 0; r < a->nranks; r++)
            if (g->rcalls[r])
                bytes += (double)g->rcalls[r] * row_bytes(&run->ranks[r].d);
        if (xsm_score_add(s, xsm_an_name(a, g->name), g->calls, g->incl_sum, bytes) != 0)
            return -1;
    }
    s->rank_s = a->total_rank_s;
    /* the longest measured window (MPI_Init's exit to MPI_Finalize's
     * entry): what --score takes from a rank's first and last clock samples */
    for (size_t r = 0; r < a->nranks; r++)
        if (run->ranks[r].present && (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9 > s->duration_s)
            s->duration_s = (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9;
    s->factor = factor_of(f, s->duration_s);
    xsm_score_finish(s);
    return 0;
}

/* ---- from the rank files ----------------------------------------------------- */

/* One rank: the regions table read in chunks (or a journal's loaded rows),
 * names counted by the rank's string ids, then added. */
static int score_rank(xsm_score *s, const xsprof_rank_data *d, xsprof_rankfile *rf, char *err, size_t errlen)
{
    uint32_t ns = d->nstrings + 1;
    uint64_t *vis = calloc(ns, sizeof *vis);
    int64_t *tns = calloc(ns, sizeof *tns);
    int rc = 1;
    uint64_t rows = rf ? xsprof_rankfile_table_rows(rf, XSPROF_IO_T_REGIONS) : d->nregions;
    size_t chunk = rf ? xsprof_rankfile_table_chunk(rf, XSPROF_IO_T_REGIONS) : 1;
    size_t step = chunk * (((size_t)1 << 16) / chunk + 1);
    xsprof_io_region *buf = rf ? malloc(step * sizeof *buf) : NULL;
    int64_t first = INT64_MAX, last = INT64_MIN;
    if (!vis || !tns || (rf && !buf)) {
        snprintf(err, errlen, "xsmerge: out of memory");
        goto out;
    }
    for (uint64_t at = 0; at < rows;) {
        size_t n = rows - at < step ? (size_t)(rows - at) : step;
        const xsprof_io_region *g = d->regions + at;
        if (rf) {
            if (xsprof_rankfile_read(rf, XSPROF_IO_T_REGIONS, at, n, buf, err, errlen) != XSPROF_OK)
                goto out;
            g = buf;
        }
        for (size_t i = 0; i < n; i++) {
            if (g[i].t_begin < first)
                first = g[i].t_begin;
            if (g[i].t_end > last)
                last = g[i].t_end;
            if (g[i].category == XSPROF_CAT_MPI) /* MPI calls: the mpi table, XSPROF_MPI filters them */
                continue;
            uint32_t k = g[i].name < d->nstrings ? g[i].name : d->nstrings;
            vis[k]++;
            tns[k] += g[i].t_end > g[i].t_begin ? g[i].t_end - g[i].t_begin : 0;
        }
        at += n;
    }
    double per = row_bytes(d);
    for (uint32_t k = 0; k < ns; k++)
        if (vis[k] && xsm_score_add(s, xsprof_rank_data_string(d, k), vis[k], (double)tns[k] * 1e-9,
                                    (double)vis[k] * per) != 0) {
            snprintf(err, errlen, "xsmerge: out of memory");
            goto out;
        }
    /* the rank's time: from its first to its last clock sample (MPI_Init's
     * and MPI_Finalize's), else the span of its regions */
    if (d->nclock >= 2 && d->clock[d->nclock - 1].t_local > d->clock[0].t_local) {
        first = d->clock[0].t_local;
        last = d->clock[d->nclock - 1].t_local;
    }
    if (last > first) {
        s->rank_s += (double)(last - first) * 1e-9;
        if ((double)(last - first) * 1e-9 > s->duration_s)
            s->duration_s = (double)(last - first) * 1e-9;
    }
    rc = 0;
out:
    free(vis);
    free(tns);
    free(buf);
    return rc;
}

int xsm_score_files(xsm_score *s, const char *run_dir, double f, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    xsm_candidate *c = NULL;
    size_t n = 0;
    if (xsm_read_scan(run_dir, &c, &n, err, errlen) != 0)
        return 1;
    int rc = 0;
    /* the regions' chunks decoded by merge/read (as a streamed merge reads them) */
    xsprof_rankfile_set_rows_reader(xsm_chunks_rows);
    /* every event table but the clock samples stays in the file: sized, not read */
    unsigned stream = ((1u << XSPROF_IO_T_COUNT) - 1) & ~(1u << XSPROF_IO_T_CLOCK);
    for (size_t i = 0; i < n && !rc; i++) {
        xsprof_rank_data d;
        xsprof_rankfile *rf = NULL;
        char e[1024] = "";
        xsprof_status st = c[i].h5[0] ? xsprof_rankfile_open(c[i].h5, stream, &d, &rf, e, sizeof e)
                                      : xsprof_journal_load(c[i].xsj, &d, e, sizeof e);
        if (st != XSPROF_OK) {
            snprintf(err, errlen, "xsmerge: %s", e[0] ? e : "cannot read a rank file");
            rc = 1;
            break;
        }
        s->nranks++;
        for (int t = 0; t < XSPROF_STORED_COUNT; t++) {
            s->table_rows[t] += d.stored_rows[t];
            s->table_bytes[t] += d.stored_bytes[t];
        }
        rc = score_rank(s, &d, rf, err, errlen);
        xsprof_rankfile_close(rf);
        xsprof_rank_data_free(&d);
    }
    free(c);
    if (rc)
        return 1;
    s->factor = factor_of(f, s->duration_s);
    xsm_score_finish(s);
    return 0;
}

/* ---- writers ------------------------------------------------------------------ */

#define XSM_SCORE_JSON_MAX 50

void xsm_score_json(const xsm_score *s, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "{\"factor\":");
    xsm_buf_json_num(b, s->factor);
    xsm_buf_puts(b, ",\"duration_s\":");
    xsm_buf_json_num(b, s->duration_s);
    xsm_buf_puts(b, ",\"rank_s\":");
    xsm_buf_json_num(b, s->rank_s);
    xsm_buf_puts(b, ",\"bytes\":");
    xsm_buf_json_num(b, s->total_bytes);
    xsm_buf_puts(b, ",\"projected_bytes\":");
    xsm_buf_json_num(b, s->total_bytes * s->factor);
    xsm_buf_puts(b, ",\"tables\":[");
    for (int t = 0; t < XSPROF_STORED_COUNT; t++)
        xsm_buf_printf(b, "%s{\"table\":\"%s\",\"rows\":%llu,\"bytes\":%llu}", t ? "," : "", table_name[t],
                       (unsigned long long)s->table_rows[t], (unsigned long long)s->table_bytes[t]);
    xsm_buf_puts(b, "],\"regions\":[");
    for (size_t i = 0; i < s->nrow && i < XSM_SCORE_JSON_MAX; i++) {
        const xsm_score_row *r = &s->row[i];
        xsm_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        xsm_buf_json_str(b, s->names.v[r->name], h);
        xsm_buf_printf(b, ",\"visits\":%llu,\"events\":%llu,\"bytes\":", (unsigned long long)r->visits,
                       (unsigned long long)r->visits);
        xsm_buf_json_num(b, round(r->bytes));
        xsm_buf_puts(b, ",\"time_per_visit_s\":");
        xsm_buf_json_num(b, r->visits ? r->seconds / (double)r->visits : 0);
        xsm_buf_puts(b, ",\"time_share\":");
        xsm_buf_json_num(b, s->rank_s > 0 ? r->seconds / s->rank_s : 0);
        xsm_buf_puts(b, ",\"projected_bytes\":");
        xsm_buf_json_num(b, round(r->bytes * s->factor));
        xsm_buf_printf(b, ",\"suggested\":%s}", r->suggested ? "true" : "false");
    }
    xsm_buf_printf(b, "],\"regions_total\":%zu,\"filter\":", s->nrow);
    if (!s->filter[0]) {
        xsm_buf_puts(b, "null}");
        return;
    }
    xsm_buf_puts(b, "{\"spec\":");
    xsm_buf_json_str(b, s->filter, h);
    xsm_buf_printf(b, ",\"events\":%llu,\"events_share\":", (unsigned long long)s->f_visits);
    xsm_buf_json_num(b, s->total_visits ? (double)s->f_visits / (double)s->total_visits : 0);
    xsm_buf_puts(b, ",\"bytes\":");
    xsm_buf_json_num(b, round(s->f_bytes));
    xsm_buf_puts(b, ",\"projected_bytes\":");
    xsm_buf_json_num(b, round(s->f_bytes * s->factor));
    xsm_buf_puts(b, ",\"seconds\":");
    xsm_buf_json_num(b, s->f_seconds);
    xsm_buf_puts(b, ",\"time_share\":");
    xsm_buf_json_num(b, s->rank_s > 0 ? s->f_seconds / s->rank_s : 0);
    xsm_buf_puts(b, "}}");
}

/* Durations below a microsecond in ns: the regions a filter is for. */
static void fmt_visit(char *out, size_t n, double s)
{
    if (s < 1e-6)
        snprintf(out, n, "%.0f ns", s * 1e9);
    else
        xsm_fmt_dur(out, n, s);
}

static void fmt_size(char *out, size_t n, double b)
{
    if (b >= 1e9)
        snprintf(out, n, "%.2f GB", b * 1e-9);
    else if (b >= 1e6)
        snprintf(out, n, "%.2f MB", b * 1e-6);
    else if (b >= 1e3)
        snprintf(out, n, "%.1f kB", b * 1e-3);
    else
        snprintf(out, n, "%.0f B", b);
}

void xsm_score_text(const xsm_score *s, xsm_buf *b, size_t max)
{
    char t1[32], t2[32], d[32];
    fmt_size(t1, sizeof t1, s->total_bytes);
    fmt_size(t2, sizeof t2, s->total_bytes * s->factor);
    xsm_fmt_dur(d, sizeof d, s->duration_s);
    xsm_buf_printf(b, "%zu rank%s, %s long; event tables %s on disk, %s for a run %.3gx as long\n", s->nranks,
                   s->nranks == 1 ? "" : "s", d, t1, t2, s->factor);
    xsm_buf_puts(b, "  table          rows        bytes\n");
    for (int t = 0; t < XSPROF_STORED_COUNT; t++) {
        if (!s->table_rows[t])
            continue;
        fmt_size(t1, sizeof t1, (double)s->table_bytes[t]);
        xsm_buf_printf(b, "  %-9s %10llu %12s\n", table_name[t], (unsigned long long)s->table_rows[t], t1);
    }
    xsm_buf_printf(b, "\n  %-3s %12s %12s %11s %11s %7s %12s  %s\n", "flt", "visits", "events", "bytes", "time/visit",
                   "time%", "bytes Nx", "region");
    for (size_t i = 0; i < s->nrow && i < max; i++) {
        const xsm_score_row *r = &s->row[i];
        fmt_size(t1, sizeof t1, r->bytes);
        fmt_size(t2, sizeof t2, r->bytes * s->factor);
        fmt_visit(d, sizeof d, r->visits ? r->seconds / (double)r->visits : 0);
        xsm_buf_printf(b, "  %-3s %12llu %12llu %11s %11s %6.2f%% %12s  %s\n", r->suggested ? "-" : "",
                       (unsigned long long)r->visits, (unsigned long long)r->visits, t1, d,
                       s->rank_s > 0 ? 100.0 * r->seconds / s->rank_s : 0.0, t2, s->names.v[r->name]);
    }
    if (s->nrow > max)
        xsm_buf_printf(b, "  (%zu more region names)\n", s->nrow - max);
    if (!s->filter[0]) {
        xsm_buf_printf(b, "\nno filter suggested: no region name holds %.0f%% of the visits at %.0f us or less a visit\n",
                       100 * XSM_SCORE_MIN_SHARE, XSM_SCORE_TINY_S * 1e6);
        return;
    }
    fmt_size(t1, sizeof t1, s->f_bytes);
    fmt_size(t2, sizeof t2, s->f_bytes * s->factor);
    xsm_fmt_dur(d, sizeof d, s->f_seconds);
    xsm_buf_printf(b,
                   "\nsuggested: XSPROF_FILTER='%s'\n  removes %llu of %llu region events (%.1f%%), %s on disk (%s for "
                   "a run %.3gx as long); those regions held %s, %.2f%% of the ranks' time\n",
                   s->filter, (unsigned long long)s->f_visits, (unsigned long long)s->total_visits,
                   s->total_visits ? 100.0 * (double)s->f_visits / (double)s->total_visits : 0.0, t1, t2, s->factor, d,
                   s->rank_s > 0 ? 100.0 * s->f_seconds / s->rank_s : 0.0);
}
