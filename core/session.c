/* core/session.c — the one global state object and its life cycle:
 * UNINIT -> RUNNING (library constructor) -> FINALIZING -> FINALIZED.
 * `collecting` is derived from (state, session on/off, schedule window)
 * under the lock, and is the single flag the hot path reads. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "internal.h"

xsprof_global xsprof_g = {.lock = PTHREAD_MUTEX_INITIALIZER, .size = 1};

static char g_output_dir[PATH_MAX];
static char g_end_state[64] = "finalized";
static int g_summary_at_exit; /* XSPROF_SUMMARY=1 */
static xsprof_finalize_hook g_hooks[8];
static int g_nhooks;
static xsprof_finalize_hook g_start_hooks[8];
static int g_nstart_hooks;
static xsprof_session_hook g_session_hooks[8];
static int g_nsession_hooks;

int xsprof_scope_on_;

void xsprof_collecting_update(void) {
    int on = atomic_load(&xsprof_g.state) == XSPROF_STATE_RUNNING && atomic_load(&xsprof_g.user_on) &&
             atomic_load(&xsprof_g.schedule_on);
    atomic_store(&xsprof_g.collecting, on);
    __atomic_store_n(&xsprof_scope_on_, on, __ATOMIC_RELAXED);
}

static int env_int(const char *a, const char *b, const char *c, const char *d, int dflt) {
    const char *names[] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        const char *v = names[i] ? getenv(names[i]) : NULL;
        if (v && *v)
            return atoi(v);
    }
    return dflt;
}

static void at_exit_finalize(void) {
    if (atomic_load(&xsprof_g.state) == XSPROF_STATE_RUNNING)
        xsprof_finalize();
}

/* A forked child must not write into its parent's journal: the chunk
 * mappings are shared with the parent, so the child's only thread (the one
 * that forked) also forgets its chunk; its next record then takes the slow
 * path, which refuses in this state. */
static void at_fork_child(void) {
    xsprof_names_fork_child();
    xsprof_sample_fork_child();
    atomic_store(&xsprof_g.state, XSPROF_STATE_FAILED);
    atomic_store(&xsprof_g.collecting, 0);
    __atomic_store_n(&xsprof_scope_on_, 0, __ATOMIC_RELAXED);
    xsprof_thread *t = xsprof_tl_.thread;
    if (t) {
        t->chunk = NULL;
        t->cur = t->end = NULL;
    }
}

xsprof_status xsprof_output_default_dir(char *buf, size_t len) {
    const char *env = xsprof_config_get("XSPROF_OUTPUT");
    if (env) {
        if (snprintf(buf, len, "%s", env) >= (int)len)
            return XSPROF_ERR_TOO_LONG;
        return XSPROF_OK;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    const char *job = getenv("SLURM_JOB_ID");
    if (!job)
        job = getenv("OMPI_MCA_ess_base_jobid");
    char jobbuf[32];
    if (!job) {
        snprintf(jobbuf, sizeof jobbuf, "%d", (int)getpid());
        job = jobbuf;
    }
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    if (snprintf(buf, len, "xsprof-%s-%s", stamp, job) >= (int)len)
        return XSPROF_ERR_TOO_LONG;
    return XSPROF_OK;
}

__attribute__((constructor)) void xsprof_core_init(void) {
    int expected = XSPROF_STATE_UNINIT;
    if (xsprof_core_shadowed()) {
        /* Else both copies would claim the rank file, and this one's exit
         * handler would finalize the other a second time. */
        if (!atomic_compare_exchange_strong(&xsprof_g.state, &expected, XSPROF_STATE_FAILED))
            return;
        int saved = errno;
        if (&xsprof_mpi_linked) { /* the program's MPI calls may reach this copy's wrappers */
            xsprof_g.rank = env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", 0);
            xsprof_log_init();
            xsprof_log(XSPROF_LOG_WARN, "libxsprof.so was loaded before libxsprof-mpi.so: MPI calls are not recorded; "
                       "link -lxsprof-mpi alone (it has the whole API) or preload it");
        }
        errno = saved;
        return;
    }
    if (!atomic_compare_exchange_strong(&xsprof_g.state, &expected, XSPROF_STATE_RUNNING))
        return;
    int saved = errno;
    xsprof_g.rank = env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", 0);
    xsprof_g.size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL, 1);
    xsprof_log_init();
    xsprof_config_load();
    xsprof_clock_init(xsprof_g.rank);
    xsprof_start_time_capture();
    if (xsprof_filter_parse(xsprof_config_get("XSPROF_FILTER")))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_FILTER=%s is not a valid filter (comma-separated globs, '-' excludes); "
                   "recording everything", xsprof_config_get("XSPROF_FILTER"));
    xsprof_counters_parse(xsprof_config_get("XSPROF_COUNTERS"));
    xsprof_thresholds_init();
    xsprof_rss_init();
    const char *hz = xsprof_config_get("XSPROF_SAMPLE_HZ"); /* parsed (and warned about) when recording starts */
    xsprof_sample_wanted = hz && strcmp(hz, "0") != 0;
    xsprof_output_default_dir(g_output_dir, sizeof g_output_dir);
    const char *en = xsprof_config_get("XSPROF_ENABLE");
    atomic_store(&xsprof_g.user_on, !(en && (!strcmp(en, "0") || !strcmp(en, "off") || !strcmp(en, "no"))));
    atomic_store(&xsprof_g.schedule_on, 1);
    if (xsprof_schedule_parse(xsprof_config_get("XSPROF_SCHEDULE")))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SCHEDULE=%s is invalid (expected wait=N,warmup=N,active=N,repeat=N); "
                   "no schedule", xsprof_config_get("XSPROF_SCHEDULE"));
    const char *sum = xsprof_config_get("XSPROF_SUMMARY");
    g_summary_at_exit = sum && !strcmp(sum, "1");
    if (g_summary_at_exit && xsprof_summary_enable(1))
        xsprof_log(XSPROF_LOG_WARN, "XSPROF_SUMMARY=1: no memory for the summary table");
    xsprof_signals_install();
    xsprof_start_hook_add(xsprof_modules_check);
    xsprof_start_hook_add(xsprof_sample_start);
    xsprof_finalize_hook_add(xsprof_sample_stop); /* first: its last samples may name new objects */
    xsprof_finalize_hook_add(xsprof_modules_check); /* what was unloaded meanwhile */
    pthread_atfork(xsprof_names_fork_prepare, xsprof_names_fork_parent, at_fork_child);
    atexit(at_exit_finalize);
    xsprof_collecting_update();
    errno = saved;
}

const char *xsprof_run_dir(void) { return g_output_dir; }
int xsprof_identity_rank(void) { return xsprof_g.rank; }
int xsprof_identity_size(void) { return xsprof_g.size; }

xsprof_status xsprof_identity_set(int rank, int size, const char *run_dir) {
    if (rank < 0 || size < 1 || rank >= size)
        return XSPROF_ERR_INVALID;
    pthread_mutex_lock(&xsprof_g.lock);
    xsprof_g.rank = rank;
    xsprof_g.size = size;
    if (run_dir && *run_dir)
        snprintf(g_output_dir, sizeof g_output_dir, "%s", run_dir);
    pthread_mutex_unlock(&xsprof_g.lock);
    return xsprof_journal_relocate(g_output_dir, rank);
}

xsprof_status xsprof_recording_prepare(void) {
    /* XSPROF_MEMORY's rows are kept while the session is paused too (a
     * schedule's wait, a stopped session), but must not open the journal
     * themselves: an allocation may come from inside the dynamic loader,
     * whose lock the writer thread's creation then waits for */
    const char *mem = xsprof_config_get("XSPROF_MEMORY");
    int memory = mem && !strcmp(mem, "1") && atomic_load(&xsprof_g.state) == XSPROF_STATE_RUNNING;
    if (!atomic_load(&xsprof_g.collecting) && !memory)
        return XSPROF_ERR_DISABLED;
    return xsprof_journal_open();
}

xsprof_status xsprof_meta_set(const char *key, const char *value) {
    if (!key || !value)
        return XSPROF_ERR_INVALID;
    xsprof_rec_meta r = {.h = {XSPROF_REC_META, sizeof r}};
    xsprof_status st = xsprof_string_intern(key, &r.key);
    if (!st)
        st = xsprof_string_intern(value, &r.value);
    return st ? st : xsprof_buf_append(&r, sizeof r, 1);
}

void xsprof_end_state_set(const char *state) {
    if (state)
        snprintf(g_end_state, sizeof g_end_state, "%s", state);
}

xsprof_status xsprof_finalize_hook_add(xsprof_finalize_hook fn) {
    if (!fn)
        return XSPROF_ERR_INVALID;
    pthread_mutex_lock(&xsprof_g.lock);
    xsprof_status st = g_nhooks < 8 ? XSPROF_OK : XSPROF_ERR_NOMEM;
    if (!st)
        g_hooks[g_nhooks++] = fn;
    pthread_mutex_unlock(&xsprof_g.lock);
    return st;
}

xsprof_status xsprof_start_hook_add(xsprof_finalize_hook fn) {
    if (!fn)
        return XSPROF_ERR_INVALID;
    pthread_mutex_lock(&xsprof_g.lock);
    xsprof_status st = g_nstart_hooks < 8 ? XSPROF_OK : XSPROF_ERR_NOMEM;
    if (!st)
        g_start_hooks[g_nstart_hooks++] = fn;
    pthread_mutex_unlock(&xsprof_g.lock);
    return st;
}

xsprof_status xsprof_session_hook_add(xsprof_session_hook fn) {
    if (!fn)
        return XSPROF_ERR_INVALID;
    pthread_mutex_lock(&xsprof_g.lock);
    xsprof_status st = g_nsession_hooks < 8 ? XSPROF_OK : XSPROF_ERR_NOMEM;
    if (!st)
        g_session_hooks[g_nsession_hooks++] = fn;
    pthread_mutex_unlock(&xsprof_g.lock);
    return st;
}

void xsprof_start_hooks_run(void) {
    pthread_mutex_lock(&xsprof_g.lock);
    int n = g_nstart_hooks;
    pthread_mutex_unlock(&xsprof_g.lock);
    for (int i = 0; i < n; i++)
        g_start_hooks[i]();
}

void xsprof_anomaly(const char *what) {
    uint64_t n = atomic_fetch_add(&xsprof_g.anomalies, 1);
    if (n < 5)
        xsprof_log(XSPROF_LOG_WARN, "API misuse: %s (counted in the rank file)", what);
}

static xsprof_status session_set(int on) {
    int st = atomic_load(&xsprof_g.state);
    if (st != XSPROF_STATE_RUNNING) {
        if (st >= XSPROF_STATE_FINALIZING)
            xsprof_anomaly("session change after finalize");
        return XSPROF_ERR_STATE;
    }
    pthread_mutex_lock(&xsprof_g.lock);
    int was = atomic_exchange(&xsprof_g.user_on, on);
    xsprof_collecting_update();
    pthread_mutex_unlock(&xsprof_g.lock);
    if (was != on) {
        xsprof_log(XSPROF_LOG_INFO, "session %s", on ? "started" : "stopped");
        pthread_mutex_lock(&xsprof_g.lock);
        int n = g_nsession_hooks;
        pthread_mutex_unlock(&xsprof_g.lock);
        for (int i = 0; i < n; i++)
            g_session_hooks[i](on);
    }
    return XSPROF_OK;
}

xsprof_status xsprof_session_start(void) { return session_set(1); }
xsprof_status xsprof_session_stop(void) { return session_set(0); }
xsprof_status xsprof_session_toggle(void) { return session_set(!atomic_load(&xsprof_g.user_on)); }
int xsprof_session_active(void) { return atomic_load(&xsprof_g.collecting); }

xsprof_status xsprof_finalize(void) {
    int expected = XSPROF_STATE_RUNNING;
    if (!atomic_compare_exchange_strong(&xsprof_g.state, &expected, XSPROF_STATE_FINALIZING)) {
        if (expected != XSPROF_STATE_FAILED)
            xsprof_anomaly("xsprof_finalize called twice");
        return XSPROF_ERR_STATE;
    }
    int saved = errno;
    xsprof_step_region_close();
    xsprof_collecting_update(); /* stops regular records; definitions still go in */
    if (g_summary_at_exit)
        xsprof_summary_write(NULL);
    pthread_mutex_lock(&xsprof_g.lock);
    int n = g_nhooks;
    pthread_mutex_unlock(&xsprof_g.lock);
    for (int i = 0; i < n; i++)
        g_hooks[i]();
    xsprof_schedule_check_at_finalize();
    xsprof_status st = XSPROF_OK;
    if (xsprof_journal_is_open()) {
        xsprof_meta_set("end_state", g_end_state);
        xsprof_thread *self = xsprof_thread_get();
        if (self && self->chunk)
            xsprof_pending_drain(self);
        else if (self)
            xsprof_thread_reserve_slow(self, sizeof(xsprof_rec_hdr) * 2); /* takes a chunk, drains into it */
        atomic_store(&xsprof_g.state, XSPROF_STATE_FINALIZED);
        xsprof_threads_close_all();
        st = xsprof_journal_finish(g_end_state);
    } else
        atomic_store(&xsprof_g.state, XSPROF_STATE_FINALIZED);
    errno = saved;
    return st;
}

/* This copy's own xsprof_finalize, whichever copy the exported name reaches. */
extern __typeof__(xsprof_finalize) xsprof_finalize_own __attribute__((alias("xsprof_finalize"), visibility("hidden")));

int xsprof_core_shadowed(void) {
    /* the exported name's address comes through the GOT: the first copy loaded */
    xsprof_status (*volatile exported)(void) = xsprof_finalize;
    return exported != xsprof_finalize_own;
}

const char *xsprof_status_string(xsprof_status s) {
    switch (s) {
    case XSPROF_OK: return "ok";
    case XSPROF_ERR_INVALID: return "invalid argument";
    case XSPROF_ERR_NOMEM: return "out of memory or budget";
    case XSPROF_ERR_IO: return "file system error";
    case XSPROF_ERR_STATE: return "not valid in the current state";
    case XSPROF_ERR_UNBALANCED: return "unbalanced region begin/end";
    case XSPROF_ERR_TOO_LONG: return "name or value too long";
    case XSPROF_ERR_FULL: return "buffer full, record dropped";
    case XSPROF_ERR_DISABLED: return "collection is off";
    case XSPROF_ERR_UNSUPPORTED: return "not supported on this system";
    case XSPROF_ERR_FORMAT: return "corrupt, truncated or foreign file";
    case XSPROF_ERR_VERSION: return "incompatible format version";
    }
    return "unknown status";
}
