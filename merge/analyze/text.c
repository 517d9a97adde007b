/* merge/analyze/text.c — report.txt: a one-screen summary (also printed to
 * the terminal) followed by detailed sections. Profiler-health problems come
 * first because they change how far the numbers can be trusted. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "score.h"

static double rank_wall(const xsm_an *a, size_t r) { return (double)(a->rs[r].t_last - a->rs[r].t_first) * 1e-9; }

static void health(const xsm_an *a, xsm_buf *b)
{
    const xsm_clock_stats *c = &a->run->clock;
    /* a clock correction matters when it could move a finding by 1 % or is
     * above a millisecond, whatever the findings */
    double corr = (double)c->max_correction_ns * 1e-9;
    int clock_bad = c->violations_after > 0 || corr >= 1e-3 || (a->nf && corr >= 0.01 * a->f[0].seconds_lost);
    /* the application's own unreceived messages are its finding, not the
     * profiler's health (match/unrecv.c) */
    size_t lost_sends = a->run->unmatched_sends - a->run->unreceived;
    int any = a->dropped_total || a->truncated || a->missing || a->recovered || clock_bad || lost_sends ||
              a->run->unmatched_recvs || a->run->incomplete_colls;
    if (!any)
        return;
    xsm_buf_puts(b, "PROFILER HEALTH (read the numbers below with this in mind)\n");
    if (a->dropped_total)
        xsm_buf_printf(b, "  ! %llu records were dropped (buffers full): times and wait states are lower bounds\n",
                       (unsigned long long)a->dropped_total);
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rank *k = &a->run->ranks[r];
        if (!k->present && !k->left_out)
            xsm_buf_printf(b, "  ! rank %zu is missing: its time is not in any table\n", r);
        else if (k->d.truncated || k->d.recovered)
            xsm_buf_printf(b, "  ! rank %zu ended early (%s)%s: its timeline stops at %.3f s\n", r,
                           k->d.end_state[0] ? k->d.end_state : "truncated", k->d.recovered ? ", recovered from its journal" : "",
                           (double)(a->rs[r].span_last - a->t0) * 1e-9);
        else if (k->d.dropped)
            xsm_buf_printf(b, "  ! rank %zu dropped %llu records\n", r, (unsigned long long)k->d.dropped);
    }
    if (clock_bad)
        xsm_buf_printf(b, "  ! clocks: %llu ordering violations after offset alignment, %llu after correction; largest correction %.1f us, sample error up to %.1f us\n",
                       (unsigned long long)c->violations_before, (unsigned long long)c->violations_after,
                       (double)c->max_correction_ns * 1e-3, c->max_residual_us);
    if (lost_sends || a->run->unmatched_recvs)
        xsm_buf_printf(b, "  ! %zu sends and %zu receives could not be matched (their wait states are not counted)\n",
                       lost_sends, a->run->unmatched_recvs);
    if (a->run->incomplete_colls)
        xsm_buf_printf(b, "  ! %zu collectives were not seen on every member\n", a->run->incomplete_colls);
    xsm_buf_puts(b, "\n");
}

/* report.txt and report.html show the first 7 findings; report.json has all */
#define XSM_FINDINGS_SHOWN 7

static void findings(const xsm_an *a, xsm_buf *b, size_t max)
{
    if (!a->nf) {
        xsm_buf_puts(b, "No significant problem found: no wait state, imbalance or outlier above 0.1% of the run.\n");
        return;
    }
    xsm_buf_puts(b, "Top findings (time lost, summed over the ranks that lose it):\n");
    for (size_t i = 0; i < a->nf && i < max; i++) {
        const xsm_finding *f = &a->f[i];
        char d[48];
        xsm_fmt_dur(d, sizeof d, f->seconds_lost);
        if (f->seconds_lost <= 0) /* leak candidates, topology: what they cost is not measured */
            snprintf(d, sizeof d, "time lost not measured");
        else
            strncat(d, " lost", sizeof d - strlen(d) - 1);
        xsm_buf_printf(b, "%2zu. [%s] %s, %s\n    %s\n    -> %s\n", i + 1, f->severity, f->kind, d, f->message,
                       f->recommendation);
    }
    if (a->nf > max)
        xsm_buf_printf(b, "  ... %zu more finding%s in report.json (findings)\n", a->nf - max, a->nf - max == 1 ? "" : "s");
}

static void rank_table(const xsm_an *a, xsm_buf *b, size_t max)
{
    xsm_buf_puts(b, "rank  host              wall    compute        MPI    wait(in MPI)     GPU   MPI%\n");
    size_t shown = 0, present = 0, outliers = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->rs[r].present)
            continue;
        if (present++ >= max)
            continue;
        shown++;
        outliers += a->rs[r].outlier != 0;
        char w[32], c[32], m[32], wt[32], g[32];
        double wall = rank_wall(a, r), mpi = (double)a->rs[r].mpi_ns * 1e-9;
        xsm_fmt_dur(w, sizeof w, wall);
        xsm_fmt_dur(c, sizeof c, wall - mpi);
        xsm_fmt_dur(m, sizeof m, mpi);
        xsm_fmt_dur(wt, sizeof wt, (double)a->rs[r].wait_ns * 1e-9);
        xsm_fmt_dur(g, sizeof g, (double)a->rs[r].gpu_ns * 1e-9);
        xsm_buf_printf(b, "%4zu  %-16.16s %9s %10s %10s %15s %7s %5.1f%s\n", r, a->run->ranks[r].d.host, w, c, m, wt,
                       g, wall > 0 ? 100.0 * mpi / wall : 0.0, a->rs[r].outlier ? "  outlier" : "");
    }
    /* ranks that are missing or that --ranks left out are in no table */
    if (shown < present)
        xsm_buf_printf(b, "  ... %zu more ranks in report.json\n", present - shown);
    if (outliers) /* profile.c's test, said where the word is seen */
        xsm_buf_puts(b, "  outlier: compute time (wall - MPI) more than 2 standard deviations (at least 1% of their "
                        "mean) from the other ranks' mean\n");
}

void xsm_report_summary(const xsm_an *a, xsm_buf *b)
{
    size_t hosts = 0;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->run->ranks[r].present)
            continue;
        int dup = 0;
        for (size_t q = 0; q < r && !dup; q++)
            dup = a->run->ranks[q].present && strcmp(a->run->ranks[q].d.host, a->run->ranks[r].d.host) == 0;
        hosts += !dup;
    }
    char d[32];
    xsm_fmt_dur(d, sizeof d, (double)(a->t1 - a->t0) * 1e-9);
    size_t left_out = 0;
    for (size_t r = 0; r < a->nranks; r++)
        left_out += a->run->ranks[r].left_out != 0;
    if (left_out)
        xsm_buf_printf(b, "xsprof report: %zu of %zu ranks (--ranks) on %zu host%s, %s", a->nranks - left_out, a->nranks,
                       hosts, hosts == 1 ? "" : "s", d);
    else
        xsm_buf_printf(b, "xsprof report: %zu ranks on %zu host%s, %s", a->nranks, hosts, hosts == 1 ? "" : "s", d);
    if (a->run->command[0])
        xsm_buf_printf(b, ", command: %.200s", a->run->command);
    xsm_buf_puts(b, "\n\n");
    health(a, b);
    findings(a, b, 5);
    xsm_buf_puts(b, "\n");
    rank_table(a, b, 8);
    int anyw = 0;
    for (int k = 0; k < XSM_WAIT_NKINDS; k++)
        anyw |= a->wait_n[k] > 0;
    if (anyw) {
        xsm_buf_puts(b, "\nWait states:");
        for (int i = 0, k; i < XSM_WAIT_NKINDS; i++)
            if (a->wait_n[k = xsm_wait_kind_at(i)]) {
                xsm_fmt_dur(d, sizeof d, a->wait_s[k]);
                xsm_buf_printf(b, "  %s %s;", xsm_wait_kind_name(k), d);
            }
        xsm_buf_puts(b, "\n");
    }
    if (a->ncp) {
        xsm_fmt_dur(d, sizeof d, a->cp_length_s);
        xsm_buf_printf(b, "Critical path: %s, mostly in", d);
        for (size_t i = 0; i < a->ncp && i < 3; i++)
            xsm_buf_printf(b, "%s `%s` %.0f%%", i ? "," : "", xsm_an_name(a, a->cp[i].name),
                           a->cp_length_s > 0 ? 100.0 * a->cp[i].seconds / a->cp_length_s : 0.0);
        xsm_buf_puts(b, "\n");
    }
    xsm_buf_puts(b, "Details: report.txt, report.html (open in a browser), report.json, flame.svg\n");
}

static int reg_cmp(const void *pa, const void *pb)
{
    const xsm_region *a = *(const xsm_region *const *)pa, *b = *(const xsm_region *const *)pb;
    return a->excl_sum > b->excl_sum ? -1 : a->excl_sum < b->excl_sum ? 1 : 0;
}

static int op_cmp(const void *pa, const void *pb)
{
    const xsm_mpiop *a = *(const xsm_mpiop *const *)pa, *b = *(const xsm_mpiop *const *)pb;
    return a->seconds > b->seconds ? -1 : a->seconds < b->seconds ? 1 : 0;
}

typedef struct pair {
    size_t s, d;
    uint64_t bytes, msgs;
} pair;

static int pair_cmp(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->msgs > b->msgs ? -1 : a->msgs < b->msgs;
}

/* The 12 places of v (n) with the most samples, shares of total. */
static void sample_rows(const xsm_an *a, const xsm_sample *v, size_t n, uint64_t total, xsm_buf *b)
{
    char d1[32] = "";
    xsm_buf_puts(b, "  share       time  where\n");
    for (size_t i = 0; i < n && i < 12; i++) {
        const xsm_sample *s = &v[i];
        char loc[600];
        if (s->file >= 0 && s->line > 0)
            snprintf(loc, sizeof loc, "%s (%s:%d)", xsm_an_name(a, s->function), xsm_an_name(a, s->file), s->line);
        else
            snprintf(loc, sizeof loc, "%s", xsm_an_name(a, s->function));
        if (a->smp_timed)
            xsm_fmt_dur(d1, sizeof d1, s->seconds);
        xsm_buf_printf(b, "%6.1f%% %10s  %s\n", total ? 100.0 * (double)s->n / (double)total : 0.0,
                       a->smp_timed ? d1 : "-", loc);
    }
}

void xsm_report_text(const xsm_an *a, xsm_buf *b)
{
    xsm_report_summary(a, b);
    char d1[32], d2[32], d3[32], d4[32];
    xsm_buf_puts(b, "\n==== Findings ====\n");
    findings(a, b, XSM_FINDINGS_SHOWN);
    xsm_buf_puts(b, "\n==== Ranks ====\n");
    rank_table(a, b, a->nranks);

    xsm_buf_puts(b, "\n==== Regions (exclusive time: MPI calls inside are not counted) ====\n");
    xsm_buf_puts(b, "region                          calls    excl mean     excl max  max rank  imbalance   saving    incl mean\n");
    const xsm_region **rv = malloc((a->nreg + 1) * sizeof *rv);
    if (rv) {
        for (size_t i = 0; i < a->nreg; i++)
            rv[i] = &a->reg[i];
        qsort(rv, a->nreg, sizeof *rv, reg_cmp);
        for (size_t i = 0; i < a->nreg && i < 40; i++) {
            const xsm_region *g = rv[i];
            xsm_fmt_dur(d1, sizeof d1, g->excl_mean);
            xsm_fmt_dur(d2, sizeof d2, g->excl_max);
            xsm_fmt_dur(d3, sizeof d3, g->saving_s);
            xsm_fmt_dur(d4, sizeof d4, g->incl_mean);
            xsm_buf_printf(b, "%-30.30s %6llu %12s %12s %9d %9.0f%% %9s %12s\n", xsm_an_name(a, g->name),
                           (unsigned long long)g->calls, d1, d2, g->excl_max_rank, 100.0 * g->imbalance, d3, d4);
        }
        if (a->nctr) { /* XSPROF_COUNTERS, in the same order */
            xsm_buf_puts(b, "\n==== Counters per region (XSPROF_COUNTERS: deltas over each visit, summed) ====\n");
            xsm_buf_puts(b, "region                         counter                     total        per visit\n");
            for (size_t i = 0; i < a->nreg && i < 40; i++) {
                const xsm_region *g = rv[i];
                for (size_t k = 0; k < a->nctr; k++) {
                    const xsm_ctr *c = &a->ctr[k];
                    if (c->region == g->name)
                        xsm_buf_printf(b, "%-30.30s %-18.18s %16lld %16.1f\n", xsm_an_name(a, g->name),
                                       xsm_an_name(a, c->counter), (long long)c->total,
                                       c->visits ? (double)c->total / (double)c->visits : 0.0);
                }
                xsm_rate rt[4];
                int nr = xsm_counter_rates(a, g, rt);
                for (int k = 0; k < nr; k++)
                    xsm_buf_printf(b, "%-30.30s %-18.18s %16.3f\n", xsm_an_name(a, g->name), rt[k].name, rt[k].value);
            }
        }
        free(rv);
    }

    xsm_buf_puts(b, "\n==== MPI operations ====\n");
    xsm_buf_puts(b, "operation                  calls       time          bytes\n");
    const xsm_mpiop **ov = malloc((a->nops + 1) * sizeof *ov);
    if (ov) {
        for (size_t i = 0; i < a->nops; i++)
            ov[i] = &a->ops[i];
        qsort(ov, a->nops, sizeof *ov, op_cmp);
        for (size_t i = 0; i < a->nops; i++) {
            xsm_fmt_dur(d1, sizeof d1, ov[i]->seconds);
            xsm_buf_printf(b, "%-24.24s %8llu %10s %14llu\n", xsm_an_name(a, ov[i]->name), (unsigned long long)ov[i]->calls, d1,
                           (unsigned long long)(ov[i]->bytes_sent + ov[i]->bytes_recv));
        }
        free(ov);
    }

    if (a->css_known) {
        xsm_buf_puts(b, "\n==== MPI call sites (where the program calls MPI, by time) ====\n");
        xsm_buf_puts(b, "operation                  calls       time       waits  where\n");
        for (size_t i = 0; i < a->ncss && i < 12; i++) {
            const xsm_callsite *c = &a->css[i];
            char loc[600];
            xsm_callsite_fmt(a, c, loc, sizeof loc);
            xsm_fmt_dur(d1, sizeof d1, c->mpi_s);
            char d2[32];
            xsm_fmt_dur(d2, sizeof d2, c->wait_total_s);
            xsm_buf_printf(b, "%-24.24s %8llu %10s %10s  %s\n", xsm_an_name(a, c->op), (unsigned long long)c->calls, d1,
                           c->wait_total_s > 0 ? d2 : "-", loc);
        }
        if (a->css_note[0])
            xsm_buf_printf(b, "note: %s\n", a->css_note);
    }

    if (a->nsmp) {
        xsm_buf_printf(b, "\n==== Sampled CPU time (XSPROF_SAMPLE_HZ: %llu samples, where the program was) ====\n",
                       (unsigned long long)a->smp_total);
        sample_rows(a, a->smp, a->nsmp, a->smp_total, b);
    }
    if (a->nnosmp) {
        xsm_buf_printf(b, "\n==== (no region): %llu samples outside every region and MPI call (%.0f%%), where ====\n",
                       (unsigned long long)a->nosmp_total,
                       a->smp_total ? 100.0 * (double)a->nosmp_total / (double)a->smp_total : 0.0);
        sample_rows(a, a->nosmp, a->nnosmp, a->nosmp_total, b);
    }

    xsm_buf_puts(b, "\n==== Wait states ====\n");
    for (int i = 0; i < XSM_WAIT_NKINDS; i++) {
        int k = xsm_wait_kind_at(i);
        xsm_fmt_dur(d1, sizeof d1, a->wait_s[k]);
        xsm_buf_printf(b, "%-28s %10s  (%llu instances)\n", xsm_wait_kind_name(k), d1, (unsigned long long)a->wait_n[k]);
    }
    if (a->beyond_total) {
        xsm_buf_printf(b, "\nRoot cause beyond window: %llu waits, whose causing call had left the analysis's look-back\n"
                          "window (the causer's last %zu MPI calls, XSPROF_MERGE_ANALYSIS_WINDOW) when they were found; no cause is\n"
                          "named for them:\n",
                       (unsigned long long)a->beyond_total, a->window);
        for (int i = 0, k; i < XSM_WAIT_NKINDS; i++)
            if (a->beyond_n[k = xsm_wait_kind_at(i)]) {
                xsm_fmt_dur(d1, sizeof d1, a->beyond_s[k]);
                xsm_buf_printf(b, "  %-26s %10s  (%llu instances)\n", xsm_wait_kind_name(k), d1, (unsigned long long)a->beyond_n[k]);
            }
    }
    if (a->nrc) {
        xsm_buf_puts(b, "\nRoot causes (delay analysis: the region whose extra time explains the waits, on the rank where the delay started):\n");
        for (size_t i = 0; i < a->nrc && i < 15; i++) {
            xsm_fmt_dur(d1, sizeof d1, a->rc[i].seconds);
            xsm_buf_printf(b, "  %10s  `%s` on rank %d  -> %s\n", d1, xsm_an_name(a, a->rc[i].region), a->rc[i].rank,
                           xsm_wait_kind_name(a->rc[i].kind));
        }
    }

    xsm_buf_puts(b, "\n==== Critical path ====\n");
    xsm_fmt_dur(d1, sizeof d1, a->cp_length_s);
    xsm_buf_printf(b, "length %s in %zu segments, ends on rank %d\n", d1, a->cp_segments, a->cp_end_rank);
    for (size_t i = 0; i < a->ncp && i < 15; i++) {
        xsm_fmt_dur(d1, sizeof d1, a->cp[i].seconds);
        xsm_buf_printf(b, "  %-30.30s %10s %5.1f%%\n", xsm_an_name(a, a->cp[i].name), d1,
                       a->cp_length_s > 0 ? 100.0 * a->cp[i].seconds / a->cp_length_s : 0.0);
    }

    xsm_buf_puts(b, "\n==== Communication (heaviest pairs) ====\n");
    size_t np = a->ncm;
    pair *pv = malloc((np + 1) * sizeof *pv);
    if (pv) {
        for (size_t i = 0; i < np; i++)
            pv[i] = (pair){(size_t)a->cm[i].src, (size_t)a->cm[i].dst, a->cm[i].bytes, a->cm[i].msgs};
        qsort(pv, np, sizeof *pv, pair_cmp);
        for (size_t i = 0; i < np && i < 10; i++)
            xsm_buf_printf(b, "  %zu -> %zu  %llu bytes in %llu messages\n", pv[i].s, pv[i].d, (unsigned long long)pv[i].bytes,
                           (unsigned long long)pv[i].msgs);
        if (!np)
            xsm_buf_puts(b, "  no point-to-point messages\n");
        free(pv);
    }

    if (a->nout) {
        xsm_buf_printf(b, "\n==== Outliers (%llu region instances > mean + 2 sigma on their rank) ====\n",
                       (unsigned long long)a->nout_total);
        for (size_t i = 0; i < a->nout && i < 10; i++) {
            const xsm_outlier *o = &a->out[i];
            xsm_fmt_dur(d1, sizeof d1, o->seconds);
            xsm_fmt_dur(d2, sizeof d2, o->mean_s);
            xsm_buf_printf(b, "  `%s` on rank %d at %.3f s: %s (mean %s)\n", xsm_an_name(a, o->region), o->rank,
                           (double)(o->t_begin - a->t0) * 1e-9, d1, d2);
        }
    }

    if (a->nmem) {
        xsm_buf_puts(b, "\n==== Memory (xsprof_mem_alloc/free, XSPROF_MEMORY=1) ====\n");
        for (size_t i = 0; i < a->nmem; i++) {
            const xsm_memrank *m = &a->mem[i];
            xsm_buf_printf(b, "  rank %d: %llu allocations, %llu frees, high-water mark %llu bytes at %.3f s, "
                              "%llu never freed (%llu bytes) outside MPI, %llu bytes kept by MPI calls\n",
                           m->rank, (unsigned long long)m->allocs, (unsigned long long)m->frees,
                           (unsigned long long)m->peak_bytes, (double)(m->peak_t - a->t0) * 1e-9,
                           (unsigned long long)m->leaked_allocs, (unsigned long long)m->leaked_bytes,
                           (unsigned long long)m->mpi_held_bytes);
            for (size_t k = 0; k < m->nleaks; k++) {
                const xsm_leak *l = &m->leaks[k];
                xsm_buf_printf(b, "      leak candidate %llu bytes at 0x%llx, allocated at %.3f s in `%s`\n",
                               (unsigned long long)l->bytes, (unsigned long long)l->ptr, (double)(l->t - a->t0) * 1e-9,
                               xsm_an_name(a, l->region));
                for (int f = 0; f < l->nframes; f++) /* where (XSPROF_MEMORY_STACK_BYTES) */
                    xsm_buf_printf(b, "        %s %s\n", f ? "from" : "by", xsm_an_name(a, l->frames[f]));
            }
        }
    }

    if (a->gpu_rows) {
        xsm_buf_puts(b, "\n==== GPU ====\n");
        for (size_t i = 0; i < a->ngpu; i++) {
            const xsm_gpudev *g = &a->gpu[i];
            xsm_fmt_dur(d1, sizeof d1, g->kernel_s);
            xsm_fmt_dur(d2, sizeof d2, g->overlap_s);
            xsm_buf_printf(b, "  rank %d device %u: %llu kernels, %s kernel time, idle %.0f%%, copies HtoD %llu DtoH %llu DtoD %llu bytes, %llu kernels overlap MPI waits (%s)\n",
                           g->rank, g->device, (unsigned long long)g->kernels, d1, 100.0 * g->idle_share,
                           (unsigned long long)g->htod, (unsigned long long)g->dtoh, (unsigned long long)g->dtod,
                           (unsigned long long)g->overlap_kernels, d2);
        }
    }

    if (a->ntopo) {
        xsm_buf_puts(b, "\n==== Topology (hwloc, where each rank ran) ====\n");
        for (size_t i = 0; i < a->ntopo && i < 32; i++) {
            const xsm_toporank *t = &a->topo[i];
            xsm_buf_printf(b, "  rank %d on %s: %s, PUs %s, cores %s of %d, NUMA %s%s%s\n", t->rank, t->host,
                           t->bound < 0 ? "binding unknown" : t->bound ? "bound" : "not bound",
                           *t->cpuset ? t->cpuset : "?", *t->cores ? t->cores : "?", t->ncores_host,
                           *t->numa ? t->numa : "?", *t->gpus ? ", GPUs near " : "", t->gpus);
        }
        if (a->ntopo > 32)
            xsm_buf_printf(b, "  (%zu more ranks in report.json)\n", a->ntopo - 32);
    }
    {
        xsm_score sc;
        if (xsm_score_from_an(&sc, a, a->score_for) != 0) {
            b->failed = 1;
        } else {
            xsm_buf_puts(b, "\n==== Trace size (xsmerge --score) ====\n");
            xsm_score_text(&sc, b, 10);
        }
        xsm_score_free(&sc);
    }

    const xsm_clock_stats *c = &a->run->clock;
    xsm_buf_printf(b, "\n==== Clock ====\nviolations before correction %llu, after %llu; largest correction %.1f us; sample error up to %.1f us\n",
                   (unsigned long long)c->violations_before, (unsigned long long)c->violations_after,
                   (double)c->max_correction_ns * 1e-3, c->max_residual_us);
}
