/* merge/analyze/sfeed.c — the reports of xsmerge --stream: every present
 * rank's region, MPI, GPU and memory rows read once more through the
 * writers' event source (times final, messages matched, each receive's end
 * with its sender), fed to the analysis (merge/analyze/feed.c, as in
 * memory) with the waits and Wrong Order verdicts the MPI pass found; then
 * the reports, and merged.h5's analysis tables from the spilled wait
 * instances. Owner: merge. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "merge/stream/internal.h"
#include "merge/analyze/feed.h"
#include "merge/progress.h"
#include "core/record.h"

/* The ranks' waits files (xsm_cwait_rec, in order of p on the reference
 * clock), read one record at a time; times from t0 as the rows are. */
typedef struct xsm_rep_waits {
    const xsm_stream *s;
    FILE **f;
    uint64_t *left;
} xsm_rep_waits;

static int xsm_rep_wait_next(void *ctx, int32_t r, xsm_cwait_rec *w, char *err, size_t errlen)
{
    xsm_rep_waits *x = ctx;
    const xsm_srank *sr = &x->s->r[r];
    if (!x->left[r])
        return 0;
    if (!x->f[r] && !(x->f[r] = xsm_stream_fopen(x->s, sr->cwait_path, "rb")))
        return xsm_err_set(err, errlen, "xsmerge: %s: cannot read (a temporary file of the merge)", sr->cwait_path) ? -1
                                                                                                                    : -1;
    if (fread(w, sizeof *w, 1, x->f[r]) != 1)
        return xsm_err_set(err, errlen, "xsmerge: %s: cannot read (a temporary file of the merge)", sr->cwait_path) ? -1
                                                                                                                    : -1;
    x->left[r]--;
    w->p -= x->s->t0;
    if (w->poll)
        w->ns -= x->s->t0; /* the receive's post */
    return 1;
}

/* The analysis reads every rank at once on one thread, and decoding the
 * chunks was a sixth of it: a thread reads each table's next chunk ahead
 * (read/stream_tab.c) while the chunks read ahead stay under 64 MiB (one more
 * chunk per table and rank). NULL: none. */
static xsm_prefetch *xsm_rep_prefetch(const xsm_stream *s)
{
    static const int tables[] = {XSPROF_IO_T_REGIONS, XSPROF_IO_T_MPI, XSPROF_IO_T_GPU, XSPROF_IO_T_MEM};
    uint64_t bytes = 0;
    for (size_t r = 0; r < s->run->nranks; r++) {
        xsprof_rankfile *rf = s->r[r].present ? s->r[r].rf : NULL;
        if (!rf)
            continue;
        for (size_t k = 0; k < sizeof tables / sizeof *tables; k++)
            if (xsprof_rankfile_table_rows(rf, (enum xsprof_io_table)tables[k]))
                bytes += (uint64_t)xsprof_rankfile_table_chunk(rf, (enum xsprof_io_table)tables[k]) *
                         xsprof_io_table_row_size((enum xsprof_io_table)tables[k]);
    }
    return bytes && bytes <= ((uint64_t)64 << 20) ? xsm_prefetch_start() : NULL;
}

/* The tables read ahead: for the reading pass when its chunks fit, for
 * the critical path's second read whatever the ranks. */
static void xsm_rep_phase(void *ctx, int phase)
{
    xsm_stream *s = ctx;
    if (phase == XSM_FEED_START) {
        s->an_pf = xsm_rep_prefetch(s);
    } else if (phase == XSM_FEED_PATH) {
        if (!s->an_pf)
            s->an_pf = xsm_prefetch_start();
    } else {
        xsm_prefetch_stop(s->an_pf);
        s->an_pf = NULL;
    }
}

/* Every rank's rows into a new streamed analysis (*out) and its critical
 * path (p) through the one feeding loop (merge/analyze/feed.c); alone: no
 * writer runs beside it. 0, or 1 with err set. Touches no state of the
 * merge but the sources it opens: it may run beside the writers' passes. */
static int xsm_rep_read(xsm_stream *s, xsm_spath *p, FILE *inst, int alone, xsm_sanalysis **out, char *err,
                        size_t errlen)
{
    size_t n = s->run->nranks;
    unsigned char *has_gpu = calloc(n + 1, 1);
    xsm_rep_waits w = {s, calloc(n + 1, sizeof *w.f), calloc(n + 1, sizeof *w.left)};
    int rc = 1;
    if (!has_gpu || !w.f || !w.left) {
        xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
        goto out;
    }
    for (size_t r = 0; r < n; r++) { /* a journal's rows are in memory */
        const xsm_rank *k = &s->run->ranks[r];
        has_gpu[r] = k->present && (k->rf ? xsprof_rankfile_table_rows(k->rf, XSPROF_IO_T_GPU) > 0 : k->d.ngpu > 0);
        w.left[r] = s->r[r].present ? s->r[r].ncwait : 0;
    }
    /* memory bounded by the ranks: a window of 16 calls each, unless the
     * merge asked for the in-memory one (a big run streamed by default) */
    xsm_feed f = {s->run, s->e, &xsm_ssrc_an_ops, &xsm_ssrc_frames_ops, has_gpu,
                  xsm_analysis_window(s->an_window ? s->an_window : 16),
                  xsm_rep_wait_next, &w, xsm_rep_phase, s, s->tmpdir, s->path_path};
    rc = xsm_feed_run(&f, p, inst, alone, out, err, errlen);
out:
    for (size_t r = 0; w.f && r < n; r++)
        if (w.f[r])
            fclose(w.f[r]);
    free(w.f);
    free(w.left);
    free(has_gpu);
    return rc;
}

/* merged.h5's /mpi row of rank r's MPI row: after the rows of the ranks
 * before it, renumbered inside --from/--to as the writer does (-1 cut). */
typedef struct xsm_rep_rows {
    xsm_stream *s;
    int64_t *off;
} xsm_rep_rows;

static int64_t xsm_rep_h5row(void *ctx, int32_t r, uint64_t row)
{
    const xsm_rep_rows *x = ctx;
    const xsm_srank *sr = &x->s->r[r];
    if (sr->kmpi) {
        if (!xsm_bits_get(sr->kmpi, row))
            return -1;
        row = xsm_bits_rank(sr->kmpi, sr->kmpi_before, row);
    }
    return x->off[r] + (int64_t)row;
}

struct xsm_stream_an {
    xsm_stream *s;
    xsm_sanalysis *sa;
    xsm_spath *path;
    FILE *path_f;      /* its spill file (unlinked) */
    FILE *inst_f, *pieces_f; /* with merged.h5: every wait instance, the path's pieces (unlinked) */
    pthread_t t;
    int started, alone, rc;
    char err[4096];
};

static void *xsm_rep_thread(void *p)
{
    xsm_stream_an *j = p;
    j->rc = xsm_rep_read(j->s, j->path, j->inst_f, j->alone, &j->sa, j->err, sizeof j->err);
    return NULL;
}

int xsm_stream_report_start(xsm_stream *s, int concurrent, xsm_stream_an **out, char *err, size_t errlen)
{
    xsm_stream_an *j = calloc(1, sizeof *j);
    if (!j)
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    j->s = s;
    if (!(j->path_f = xsm_stream_tmp(s, "path", -1, s->path_path, sizeof s->path_path, err, errlen))) {
        free(j);
        return 1;
    }
    unlink(s->path_path); /* gone with the merge, however it ends */
    if (s->h5) { /* merged.h5's /analysis/waits and critical_path, read back at the end */
        char p1[4096], p2[4096];
        j->inst_f = xsm_stream_tmp(s, "waits", -1, p1, sizeof p1, err, errlen);
        j->pieces_f = j->inst_f ? xsm_stream_tmp(s, "cpath", -1, p2, sizeof p2, err, errlen) : NULL;
        if (j->inst_f)
            unlink(p1);
        if (j->pieces_f)
            unlink(p2);
    }
    int tmp_failed = s->h5 && !j->pieces_f; /* err says which file */
    if (tmp_failed || !(j->path = xsm_spath_new(s->run, fileno(j->path_f)))) {
        if (j->inst_f)
            fclose(j->inst_f);
        fclose(j->path_f);
        free(j);
        return tmp_failed ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing the reports");
    }
    xsm_spath_set_pieces(j->path, j->pieces_f);
    if (concurrent && pthread_create(&j->t, NULL, xsm_rep_thread, j) == 0) {
        j->started = 1;
    } else {
        j->alone = 1;
        xsm_rep_thread(j);
    }
    *out = j;
    return 0;
}

int xsm_stream_report_finish(xsm_stream_an *j, const xsm_report_opts *ro, const char *dir, int write, char *err,
                             size_t errlen)
{
    if (j->started)
        pthread_join(j->t, NULL);
    int rc = j->rc;
    if (rc)
        xsm_err_set(err, errlen, "%s", j->err);
    xsm_progress_mark("stream-analysis");
    if (!rc && write) {
        xsm_cpair *cm;
        size_t ncm;
        xsm_cpairs_take(&j->s->cm, &cm, &ncm);
        struct xsm_an *kept = NULL;
        xsm_report_opts o = ro ? *ro : (xsm_report_opts){0};
        o.keep = j->inst_f ? &kept : NULL;
        rc = xsm_analyze_streamed(j->s->run, j->sa, j->path, cm, ncm, dir, &o, err, errlen);
        xsm_progress_mark("reports");
        if ((rc == 0 || rc == 3) && kept) { /* merged.h5 is complete: its analysis tables */
            char path[8300];
            snprintf(path, sizeof path, "%s/merged.h5", dir);
            xsm_rep_rows x = {j->s, calloc(j->s->run->nranks + 1, sizeof *x.off)};
            for (size_t r = 0; x.off && r < j->s->run->nranks; r++)
                x.off[r + 1] = x.off[r] + (j->s->r[r].present ? (int64_t)xsm_h5src_rows(j->s, (int32_t)r, XSPROF_IO_T_MPI) : 0);
            if (!x.off)
                rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing the analysis tables");
            else if (xsm_analyze_h5_rows(kept, path, xsm_rep_h5row, &x, err, errlen))
                rc = 1;
            free(x.off);
            xsm_progress_mark("analysis tables");
        }
        xsm_analyze_free(kept);
    }
    xsm_sanalysis_free(j->sa);
    xsm_spath_free(j->path);
    fclose(j->path_f);
    if (j->inst_f)
        fclose(j->inst_f);
    if (j->pieces_f)
        fclose(j->pieces_f);
    free(j);
    return rc;
}
