/* merge/live/live.h — xsmerge --live: the journals of a running job followed
 * read-only (io/journal_read.c's follower), their new rows fed to the one
 * analysis engine (merge/analyze/sprofile.c) once a second, and the state
 * served as a dashboard and /api/snapshot (http.c) or drawn in the terminal
 * (tty.c). Owner: merge live view. README.md in this folder. */
#ifndef XSPROF_MERGE_LIVE_H
#define XSPROF_MERGE_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include "merge/analyze/an.h"

/* xsmerge --live RUN_DIR [...]: argv[0] is "xsmerge"; the exit code. */
int xsm_live_main(int argc, char **argv);

/* ---- alerts (alert.c): thresholds from the command line ----------------- */
enum { XSM_ALERT_WAIT, XSM_ALERT_MPI, XSM_ALERT_REGION, XSM_ALERT_RSS };
typedef struct xsm_alert {
    char text[128];   /* as given: "wait>50%" */
    int what;         /* XSM_ALERT_* */
    char region[96];  /* XSM_ALERT_REGION: its name */
    double limit;     /* percent, seconds (a region's mean time per call) or bytes */
    int fired;
    int32_t rank;     /* where it first fired */
    double value;
} xsm_alert;
/* Parse "wait>50%", "mpi>30%", "region:solve>200ms", "rss>8GB": 0, or -1. */
int xsm_alert_parse(const char *s, xsm_alert *a);

/* ---- the followed job (state.c) ------------------------------------------ */
typedef struct xsm_live xsm_live;
/* A view of RUN_DIR (nothing read yet); NULL: out of memory. */
xsm_live *xsm_live_new(const char *run_dir, xsm_alert *alerts, size_t nalerts);
void xsm_live_free(xsm_live *l);
/* One look: new journals, the rows committed since the last look, the
 * ranks' states, the alerts. 0, or -1 with err set (the view stops). */
int xsm_live_tick(xsm_live *l, char *err, size_t errlen);
/* Between looks: only the rows committed since, fed (reading in small
 * steps keeps the view from taking a CPU from the ranks in long bursts).
 * 0, or -1 with err set. */
int xsm_live_read(xsm_live *l, char *err, size_t errlen);
/* The job ended: every rank of the job finished or ended early. */
int xsm_live_ended(const xsm_live *l);
/* A line for stderr about the run directory (no journal yet, another
 * run's journal ignored), "" when nothing new; cleared by the call. */
const char *xsm_live_note(xsm_live *l);
/* The snapshot, schema xsprof-live/1 (json.c). */
void xsm_live_json(const xsm_live *l, xsm_buf *b);
/* The terminal table (tty.c). */
void xsm_live_text(const xsm_live *l, xsm_buf *b);

/* ---- the view as the writers read it (state.c fills it every tick) ------ */
#define XSM_LIVE_SERIES 300 /* one point a second: the last five minutes */
#define XSM_LIVE_THREADS 8  /* threads shown per rank */
#define XSM_LIVE_TACT 10    /* seconds of thread activity */
typedef struct xsm_lpoint {
    double t;                    /* seconds since the view started */
    float mpi_pct, wait_pct, gpu_pct; /* of the rank's time in the last second */
    double eps;                  /* events per second */
    double mem_bytes;            /* memory high-water mark so far (XSPROF_MEMORY) */
} xsm_lpoint;
typedef struct xsm_lthread {
    uint32_t tid;
    uint32_t act[XSM_LIVE_TACT]; /* events per second, newest last */
} xsm_lthread;
typedef struct xsm_lrank_view {
    int32_t rank;
    const char *state;       /* "waiting", "running", "finished", "ended early" */
    char end_state[64];      /* the journal's word ("signal 9 (SIGKILL)") */
    char host[64];
    double wall_s, mpi_s, wait_s, gpu_s;
    uint64_t events, dropped;
    int has_mem;
    xsm_lpoint series[XSM_LIVE_SERIES]; /* a ring: npoints, newest at (head - 1) */
    size_t npoints, head;
    xsm_lthread th[XSM_LIVE_THREADS];
    size_t nth;
} xsm_lrank_view;

/* The public parts of the state for json.c and tty.c. */
typedef struct xsm_live_view {
    const char *run_dir;
    char job_id[64];
    int32_t size;            /* ranks of the job, 0 before the first journal */
    double since_s;          /* seconds since the view started */
    int ended;
    xsm_lrank_view *ranks;   /* size entries */
    const xsm_sanalysis *sa; /* the engine: call trees, MPI operations, waits */
    const xsm_run *run;
    xsm_alert *alerts;
    size_t nalerts;
} xsm_live_view;
const xsm_live_view *xsm_live_get(const xsm_live *l);
/* The first n rows of the regions, MPI and wait-state tables, one line
 * each, for the terminal (json.c: the snapshot's sums). */
void xsm_live_top_text(const xsm_live_view *lv, xsm_buf *b, size_t n);
/* "xsmerge RUN_DIR -o RUN_DIR-merged": the full merge, said at the end. */
void xsm_live_merge_cmd(const xsm_live_view *lv, xsm_buf *b);

#endif
