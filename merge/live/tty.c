/* merge/live/tty.c — --tty: the snapshot as a table redrawn in the terminal
 * (a login node without a browser or tunnel). Owner: merge live view. */
#include "merge/live/live.h"

#include <stdio.h>

void xsm_live_merge_cmd(const xsm_live_view *lv, xsm_buf *b)
{
    xsm_buf_printf(b, "xsmerge %s -o %s-merged", lv->run_dir, lv->run_dir);
}

void xsm_live_text(const xsm_live *l, xsm_buf *b)
{
    const xsm_live_view *lv = xsm_live_get(l);
    xsm_buf_printf(b, "xsprof live: %s  job %s  %d ranks  %.0f s  %s\n\n", lv->run_dir, lv->job_id[0] ? lv->job_id : "-",
                   lv->size, lv->since_s, lv->ended ? "JOB ENDED" : lv->size ? "running" : "waiting for journals");
    xsm_buf_printf(b, "%5s  %-36s %9s %7s %7s %7s %12s %10s %9s\n", "rank", "state", "wall", "MPI%", "wait%", "GPU%",
                   "events", "events/s", "dropped");
    for (int32_t r = 0; r < lv->size; r++) {
        const xsm_lrank_view *v = &lv->ranks[r];
        char st[64];
        if (v->state[0] == 'e')
            snprintf(st, sizeof st, "ended early (%.36s)", v->end_state);
        else
            snprintf(st, sizeof st, "%s", v->state);
        double w = v->wall_s > 0 ? v->wall_s : 1;
        double eps = v->npoints ? v->series[(v->head + XSM_LIVE_SERIES - 1) % XSM_LIVE_SERIES].eps : 0;
        xsm_buf_printf(b, "%5d  %-36s %8.1fs %6.1f%% %6.1f%% %6.1f%% %12llu %10.0f %9llu\n", r, st, v->wall_s,
                       100 * v->mpi_s / w, 100 * v->wait_s / w, 100 * v->gpu_s / w, (unsigned long long)v->events, eps,
                       (unsigned long long)v->dropped);
    }
    xsm_buf_puts(b, "\n");
    xsm_live_top_text(lv, b, 5);
    for (size_t i = 0; i < lv->nalerts; i++)
        if (lv->alerts[i].fired)
            xsm_buf_printf(b, "\nALERT %s on rank %d (%.4g)", lv->alerts[i].text, lv->alerts[i].rank,
                           lv->alerts[i].value);
    if (lv->ended) {
        xsm_buf_puts(b, "\n\nThe job has ended. The full merge: ");
        xsm_live_merge_cmd(lv, b);
    }
    xsm_buf_puts(b, "\n");
}
