/* merge/read/select.c — --from/--to: keep the events that overlap the
 * window, after alignment (times are ns since the job's first event), and
 * note the window in the run for the report (xsm_run_clip). */
#include "merge/read/read.h"
#include "merge/util.h"

#include <stdlib.h>

#define XSM_KEEP(b, e) ((e) >= from && (b) <= to)

/* Compact arr in place to the rows that overlap; sizes unchanged on OOM. */
#define XSM_COMPACT(arr, cnt, b, e)                   \
    do {                                              \
        size_t k_ = 0;                                \
        for (size_t i_ = 0; i_ < (cnt); i_++)         \
            if (XSM_KEEP((arr)[i_].b, (arr)[i_].e))   \
                (arr)[k_++] = (arr)[i_];              \
        (cnt) = k_;                                   \
    } while (0)

int xsm_select_window(xsm_run *run, int64_t from, int64_t to, char *err, size_t errlen)
{
    int64_t **remap = calloc(run->nranks ? run->nranks : 1, sizeof *remap);
    if (!remap)
        return xsm_err_set(err, errlen, "xsmerge: out of memory");
    int rc = 0;
    for (size_t r = 0; r < run->nranks; r++) {
        xsprof_rank_data *d = &run->ranks[r].d;
        if (!run->ranks[r].present)
            continue;
        /* regions: args point at region rows, so renumber them too */
        int64_t *reg = malloc((d->nregions + 1) * sizeof *reg);
        remap[r] = malloc((d->nmpi + 1) * sizeof *remap[r]);
        if (!reg || !remap[r]) {
            free(reg);
            rc = xsm_err_set(err, errlen, "xsmerge: out of memory");
            goto out;
        }
        size_t k = 0, nregions = d->nregions;
        for (size_t i = 0; i < d->nregions; i++) {
            if (XSM_KEEP(d->regions[i].t_begin, d->regions[i].t_end)) {
                reg[i] = (int64_t)k;
                d->regions[k++] = d->regions[i];
            } else {
                reg[i] = -1;
            }
        }
        d->nregions = k;
        for (size_t i = 0; i < d->nargs; i++)
            if (d->args[i].region >= 0 && (size_t)d->args[i].region < nregions)
                d->args[i].region = reg[d->args[i].region];
        free(reg);
        k = 0;
        for (size_t i = 0; i < d->nmpi; i++) {
            if (XSM_KEEP(d->mpi[i].t_begin, d->mpi[i].t_end)) {
                remap[r][i] = (int64_t)k;
                d->mpi[k++] = d->mpi[i];
            } else {
                remap[r][i] = -1;
            }
        }
        d->nmpi = k;
        XSM_COMPACT(d->gpu, d->ngpu, t_begin, t_end);
        XSM_COMPACT(d->instants, d->ninstants, t, t);
        XSM_COMPACT(d->counters, d->ncounters, t, t);
        XSM_COMPACT(d->mem, d->nmem, t, t);
    }
    size_t k = 0;
    for (size_t i = 0; i < run->nmsgs; i++) {
        xsm_message m = run->msgs[i];
        int64_t s = remap[m.src][m.send_row], v = remap[m.dst][m.recv_row], c = remap[m.dst][m.recv_call_row];
        if (s < 0 || v < 0)
            continue;
        m.send_row = (size_t)s;
        m.recv_row = (size_t)v;
        m.recv_call_row = c >= 0 ? (size_t)c : (size_t)v;
        m.recv_post_row = m.recv_post_row >= 0 ? remap[m.dst][m.recv_post_row] : -1;
        m.send_completion_row = m.send_completion_row >= 0 ? remap[m.src][m.send_completion_row] : -1;
        run->msgs[k++] = m;
    }
    run->nmsgs = k;
    k = 0;
    for (size_t i = 0; i < run->ncolls; i++) {
        xsm_collective c = run->colls[i];
        size_t n = 0;
        for (size_t j = 0; j < c.n; j++) {
            int64_t row = remap[c.ranks[j]][c.rows[j]];
            if (row < 0)
                continue;
            c.ranks[n] = c.ranks[j];
            c.rows[n] = (size_t)row;
            n++;
        }
        c.n = n;
        if (n == 0) {
            free(c.ranks);
            free(c.rows);
            continue;
        }
        run->colls[k++] = c;
    }
    run->ncolls = k;
    /* the report's duration is the window's, not the whole run's from the
     * window's first event */
    xsm_run_window_set(run, from, to);
out:
    for (size_t r = 0; r < run->nranks; r++)
        free(remap[r]);
    free(remap);
    return rc;
}

/* ns as "19 us", "1.5 ms": the largest unit that keeps it at 1 or more */
static void xsm_fmt_ns(char *buf, size_t n, int64_t ns)
{
    static const char *const unit[] = {"ns", "us", "ms", "s"};
    double v = (double)ns;
    int u = 0;
    while (u < 3 && v >= 1000) {
        v /= 1000;
        u++;
    }
    (void)xsm_err_set(buf, n, "%.6g %s", v, unit[u]);
}

int xsm_window_check(const xsm_run *run, int64_t from_ns, char *err, size_t errlen)
{
    if (from_ns <= run->t_end)
        return 0;
    char a[64], b[64];
    xsm_fmt_ns(a, sizeof a, from_ns);
    xsm_fmt_ns(b, sizeof b, run->t_end);
    return xsm_err_set(err, errlen,
                       "xsmerge: %s: --from %s is after the run's last event (%s from its first); the window holds "
                       "nothing",
                       run->run_dir, a, b);
}
