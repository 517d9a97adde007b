/* merge/analyze/analyze.c — xsm_analyze_run: compute the analysis once, then
 * write every report from it (each file atomically). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analyze.h"
#include "an.h"
#include "merge/progress.h"
#include "merge/symbols/symbols.h"

const char *xsm_an_name(const xsm_an *a, int32_t idx)
{
    if (idx < 0 || (size_t)idx >= a->names.n)
        return "(no region)";
    return a->names.v[idx];
}

int32_t xsm_an_sname(xsm_an *a, int32_t r, uint32_t id)
{
    xsm_rankstat *rs = &a->rs[r];
    const xsprof_rank_data *d = &a->run->ranks[r].d;
    if (!rs->sname) {
        rs->sname = malloc(((size_t)d->nstrings + 1) * sizeof *rs->sname);
        if (!rs->sname)
            return -1;
        for (uint32_t k = 0; k <= d->nstrings; k++)
            rs->sname[k] = -2;
    }
    uint32_t k = id < d->nstrings ? id : d->nstrings;
    if (rs->sname[k] == -2) {
        int32_t nm = xsm_names_intern(&a->names, xsprof_rank_data_string(d, id));
        if (nm < 0)
            return -1;
        rs->sname[k] = nm;
    }
    return rs->sname[k];
}

int xsm_an_build(xsm_an *a, const xsm_run *run, const xsm_sanalysis *sa, const xsm_spath *path, xsm_cpair *cm,
                        size_t ncm, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->run = run;
    a->nranks = run->nranks;
    a->t0 = INT64_MAX;
    a->t1 = INT64_MIN;
    a->cp_end_rank = -1;
    a->cm = cm;
    a->ncm = ncm;
    a->rs = calloc(run->nranks + 1, sizeof *a->rs);
    if (!a->rs)
        goto nomem;
    for (size_t r = 0; r < run->nranks; r++)
        a->rs[r].present = run->ranks[r].present;
    a->window = xsm_sanalysis_window(sa);
    if (xsm_an_profile(a, sa) != 0)
        goto nomem;
    if (a->t0 > a->t1)
        a->t0 = a->t1 = 0;
    if (run->t_end > a->t1)
        a->t1 = run->t_end;
    if (run->win) { /* --from/--to: the window, as far as the run goes (t_end is at most its end) */
        a->t0 = run->win_from;
        a->t1 = run->t_end > a->t0 ? run->t_end : a->t0;
    }
    { /* what merged.h5's tables read back (xsm_analyze_h5) */
        a->sw_file = xsm_sanalysis_instances(sa, &a->sw_n);
        a->scp_file = xsm_spath_pieces(path, &a->scp_n);
        size_t ng = 0;
        while (xsm_sanalysis_name(sa, (int32_t)ng))
            ng++;
        if (!(a->sgmap = malloc((ng + 1) * sizeof *a->sgmap)))
            goto nomem;
        for (size_t g = 0; g < ng; g++)
            if ((a->sgmap[g] = xsm_names_intern(&a->names, xsm_sanalysis_name(sa, (int32_t)g))) < 0)
                goto nomem;
    }
    int bad = xsm_an_waits(a, sa) != 0 || xsm_an_path(a, path) != 0 || xsm_an_gpu(a, sa) != 0 ||
              xsm_an_health(a) != 0 || xsm_an_memory(a, sa) != 0 || xsm_an_callsites(a, sa) != 0 ||
              xsm_an_samples(a, sa) != 0 || xsm_an_topology(a) != 0 || xsm_an_counters(a, sa) != 0;
    if (bad || xsm_an_findings(a) != 0)
        goto nomem;
    if (a->sym) { /* what the report looked up itself (the rest came from a collective merge's processes) */
        char phase[96];
        snprintf(phase, sizeof phase, "symbols (%llu addresses resolved by the report)",
                 (unsigned long long)xsm_symbols_resolved(a->sym));
        xsm_progress_mark(phase);
    }
    return 0;
nomem:
    snprintf(err, errlen, "analysis of %s: out of memory", run->run_dir);
    xsm_an_free(a);
    return -1;
}

void xsm_an_free(xsm_an *a)
{
    if (a->rs)
        for (size_t r = 0; r < a->nranks; r++) {
            free(a->rs[r].cs);
            free(a->rs[r].sname);
        }
    free(a->rs);
    for (size_t i = 0; i < a->nmem; i++)
        free(a->mem[i].leaks);
    free(a->mem);
    for (size_t i = 0; i < a->nreg; i++) {
        free(a->reg[i].incl);
        free(a->reg[i].excl);
        free(a->reg[i].rcalls);
    }
    free(a->reg);
    for (size_t i = 0; i < a->nops; i++) {
        free(a->ops[i].rcalls);
        free(a->ops[i].rseconds);
        free(a->ops[i].rbytes);
    }
    free(a->ops);
    for (size_t i = 0; i < a->nf; i++)
        free(a->f[i].ranks);
    free(a->f);
    free(a->cn);
    free(a->w);
    free(a->rc);
    free(a->out);
    free(a->cp);
    free(a->cp_rank_s);
    free(a->sgmap);
    free(a->cm);
    free(a->gpu);
    free(a->css);
    free(a->smp);
    free(a->nosmp);
    xsm_symbols_close(a->sym);
    free(a->ctr);
    free(a->dwin);
    free(a->frm);
    xsm_names_free(&a->frm_keys);
    free(a->cga);
    xsm_names_free(&a->cga_keys);
    xsm_buf_free(&a->smp_folded);
    free(a->topo);
    free(a->thost);
    if (a->own_inst)
        fclose(a->own_inst);
    if (a->own_pieces)
        fclose(a->own_pieces);
    xsm_names_free(&a->names);
    memset(a, 0, sizeof *a);
}

static int finding_cmp(const void *pa, const void *pb)
{
    const xsm_finding *a = pa, *b = pb;
    return a->seconds_lost > b->seconds_lost ? -1 : a->seconds_lost < b->seconds_lost ? 1 : strcmp(a->kind, b->kind);
}

static int write_buf(const char *dir, const char *name, xsm_buf *b, char *err, size_t errlen)
{
    if (b->failed) {
        snprintf(err, errlen, "%s/%s: out of memory while building it", dir, name);
        return -1;
    }
    return xsm_file_write_atomic(dir, name, b->p ? b->p : "", b->len, err, errlen);
}

static int xsm_analyze_write(xsm_an *a, const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen);

int xsm_analyze_run(const xsm_run *run, const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen)
{
    xsm_an a;
    if (xsm_an_compute_emit(&a, run, opts ? opts->emit : NULL, err, errlen) != 0)
        return 1;
    return xsm_analyze_write(&a, out_dir, opts, err, errlen);
}

int xsm_analyze_streamed(const xsm_run *run, const xsm_sanalysis *sa, const xsm_spath *path, xsm_cpair *cm, size_t ncm,
                         const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen)
{
    xsm_an a;
    if (xsm_an_build(&a, run, sa, path, cm, ncm, err, errlen) != 0)
        return 1;
    return xsm_analyze_write(&a, out_dir, opts, err, errlen);
}

/* Every report from the analysis `a` (freed here, or handed to opts->keep). */
static int xsm_analyze_write(xsm_an *ap, const char *out_dir, const xsm_report_opts *opts, char *err, size_t errlen)
{
    xsm_an a = *ap;
    const xsm_run *run = a.run;
    a.score_for = opts ? opts->score_for : 0;
    xsm_buf json = {0}, html_json = {0}, txt = {0}, folded = {0}, svg = {0}, html = {0}, reg = {0}, tmp = {0};
    int rc = 1, regression = 0;
    if (opts && opts->baseline_dir) {
        int b = xsm_baseline_compare(&a, opts->baseline_dir, opts->threshold_pct > 0 ? opts->threshold_pct : 5.0, &reg, err,
                                     errlen);
        if (b == 1)
            goto out;
        regression = b == 3;
        if (a.nf > 1)
            qsort(a.f, a.nf, sizeof *a.f, finding_cmp);
    }
    xsm_report_json(&a, &json, 0);
    if (write_buf(out_dir, "report.json", &json, err, errlen) != 0)
        goto out;
    xsm_report_text(&a, &txt);
    if (reg.len)
        xsm_buf_put(&txt, reg.p, reg.len);
    if (write_buf(out_dir, "report.txt", &txt, err, errlen) != 0)
        goto out;
    xsm_flame_folded(&a, &folded);
    if (write_buf(out_dir, "flame.folded", &folded, err, errlen) != 0)
        goto out;
    xsm_flame_svg(folded.p ? folded.p : "", NULL, "xsprof flame graph (exclusive time, all ranks)", &svg);
    if (write_buf(out_dir, "flame.svg", &svg, err, errlen) != 0)
        goto out;
    if (a.smp_folded.len) { /* XSPROF_SAMPLE_HZ: where the CPU time went, by sampled stack */
        xsm_buf ssvg = {0};
        xsm_flame_svg(a.smp_folded.p, NULL, "xsprof sampled CPU time (call stacks, samples, all ranks)", &ssvg);
        int w = write_buf(out_dir, "flame-samples.folded", &a.smp_folded, err, errlen) ||
                write_buf(out_dir, "flame-samples.svg", &ssvg, err, errlen);
        xsm_buf_free(&ssvg);
        if (w)
            goto out;
    }
    if (opts && opts->diff_dir) {
        if (xsm_baseline_folded(opts->diff_dir, &tmp, err, errlen) != 0)
            goto out;
        xsm_buf dsvg = {0};
        xsm_flame_svg(folded.p ? folded.p : "", tmp.p ? tmp.p : "", "xsprof differential flame graph (red: slower than baseline, blue: faster)",
                      &dsvg);
        int w = write_buf(out_dir, "flame-diff.svg", &dsvg, err, errlen);
        xsm_buf_free(&dsvg);
        if (w != 0)
            goto out;
    }
    if (opts && opts->callgrind) {
        xsm_buf cg = {0};
        xsm_callgrind_write(&a, &cg);
        int w = write_buf(out_dir, "callgrind.out", &cg, err, errlen);
        xsm_buf_free(&cg);
        if (w != 0)
            goto out;
    }
    xsm_report_json(&a, &html_json, 1);
    xsm_report_html(html_json.p ? html_json.p : "{}", folded.p ? folded.p : "", &html);
    if (write_buf(out_dir, "report.html", &html, err, errlen) != 0)
        goto out;
    if (opts && opts->summary && !opts->quiet) {
        xsm_buf s = {0};
        xsm_report_summary(&a, &s);
        if (reg.len)
            xsm_buf_put(&s, reg.p, reg.len);
        if (s.p)
            fputs(s.p, opts->summary);
        fflush(opts->summary);
        xsm_buf_free(&s);
    }
    rc = regression ? 3 : 0;
out:
    xsm_buf_free(&json);
    xsm_buf_free(&html_json);
    xsm_buf_free(&txt);
    xsm_buf_free(&folded);
    xsm_buf_free(&svg);
    xsm_buf_free(&html);
    xsm_buf_free(&reg);
    xsm_buf_free(&tmp);
    if ((rc == 0 || rc == 3) && opts && opts->keep) {
        if ((*opts->keep = malloc(sizeof a)) != NULL) {
            **opts->keep = a; /* the caller frees it (xsm_analyze_free) */
            return rc;
        }
        snprintf(err, errlen, "analysis of %s: out of memory", run->run_dir);
        rc = 1; /* merged.h5 would lack its analysis tables */
    }
    xsm_an_free(&a);
    return rc;
}

void xsm_analyze_free(struct xsm_an *a)
{
    if (a)
        xsm_an_free(a);
    free(a);
}
