/* tests/reliability/thread_journal.c — the real recording path under
 * concurrency (libxsprof.so: per-thread chunks in the mmap journal, the
 * writer thread, the HDF5 sink at finalize), for ThreadSanitizer (label
 * `threads`) and every other build.
 *
 * usage: thread_journal exact|toggle|names|pending RUN_DIR
 *   exact   6 threads (more than cores) record 20000 regions each with tiny
 *           chunks (set XSPROF_CHUNK_KB=16 XSPROF_BUFFER_MB=1
 *           XSPROF_ON_FULL=block), threads start and exit while others
 *           record; the rank file must hold exactly every region, per
 *           thread, well nested, and count 0 drops.
 *   toggle  the same workers while the main thread stops, starts and
 *           toggles the session, steps a schedule and names threads; the
 *           rank file must hold complete, well-nested regions only, no more
 *           per thread than the thread ended, and dropped records counted
 *           (XSPROF_ON_FULL=drop).
 *   names   a thread names itself before the journal exists (its names wait
 *           in core's pending list, which another thread's first chunk
 *           takes), then again once it records: the rank file must give it
 *           the later name (the reader walks chunks thread by thread, not
 *           in time order; under load `exact` lost a worker's name so).
 *   pending the main thread names itself PENDING_NAMES times before the
 *           journal exists (a pending list of several chunks), then
 *           PENDING_THREADS threads start recording at once: the list must
 *           reach the rank file whole and in order (the last name wins;
 *           core once let a second thread's first chunk take the list's
 *           rest, which the reader could walk before its head).
 * Exit 0 when the checks hold. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xsprof/xsprof.h>

#include "io/reader.h"

#define NTHREADS 6
#define ITERS 20000

static atomic_int stop_flag;
static atomic_long ended[NTHREADS + 1];

static void *worker(void *arg)
{
    long k = (long)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "worker-%ld", k);
    xsprof_thread_name(name);
    long n = 0;
    for (int i = 0; i < ITERS; i++) {
        xsprof_region_begin("tj.outer");
        xsprof_region_arg_int("i", i);
        xsprof_region_begin("tj.inner");
        xsprof_region_end();
        if (xsprof_region_end() == XSPROF_OK)
            n++;
    }
    atomic_store(&ended[k], n);
    return NULL;
}

/* Stops, starts and toggles the session and steps a schedule (every step
 * active) until the workers are done; leaves the session on. */
static void *controller(void *arg)
{
    (void)arg;
    xsprof_schedule_set(0, 0, 1, 0, NULL, NULL);
    for (long i = 0; !atomic_load(&stop_flag); i++) {
        switch (i % 3) {
        case 0: xsprof_session_stop(); break;
        case 1: xsprof_session_start(); break;
        default: xsprof_session_toggle(); break;
        }
        xsprof_step();
    }
    xsprof_session_start();
    return NULL;
}

/* The run's one rank file into d; 0, or 1 (said) when it cannot be read. */
static int load(const char *dir, xsprof_rank_data *d)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/rank-00000.h5", dir);
    memset(d, 0, sizeof *d);
    if (xsprof_rankfile_load(path, d, err, sizeof err) != XSPROF_OK) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    return 0;
}

/* Finalize (the rank file is written) and load it. */
static int finalize_load(const char *dir, xsprof_rank_data *d)
{
    if (xsprof_finalize() != XSPROF_OK) {
        printf("FAIL: xsprof_finalize\n");
        return 1;
    }
    return load(dir, d);
}

static int check(const char *dir, int exact)
{
    xsprof_rank_data d;
    if (load(dir, &d))
        return 1;
    int bad = 0;
    long outer_per_thread[64] = {0}, inner_per_thread[64] = {0};
    for (size_t i = 0; i < d.nregions; i++) {
        const xsprof_io_region *r = &d.regions[i];
        const char *nm = xsprof_rank_data_string(&d, r->name);
        if (r->t_end < r->t_begin || r->thread >= 64) {
            printf("FAIL: region %zu (%s) ends before it begins or has thread %u\n", i, nm, r->thread);
            bad = 1;
            continue;
        }
        if (!strcmp(nm, "tj.outer")) {
            outer_per_thread[r->thread]++;
            if (r->depth != 0 || r->nargs != 1) {
                printf("FAIL: tj.outer at depth %u with %u args\n", r->depth, r->nargs);
                bad = 1;
            }
        } else if (!strcmp(nm, "tj.inner")) {
            inner_per_thread[r->thread]++;
            if (r->depth != 1) {
                printf("FAIL: tj.inner at depth %u\n", r->depth);
                bad = 1;
            }
        }
    }
    /* xsprof thread ids are dense in order of first use; match workers by
     * the thread names they gave themselves. */
    long total = 0, expect = 0;
    for (size_t t = 0; t < d.nthreads; t++) {
        const char *nm = xsprof_rank_data_string(&d, d.threads[t].name);
        long k;
        if (sscanf(nm, "worker-%ld", &k) != 1 || k < 0 || k > NTHREADS)
            continue;
        uint32_t tid = d.threads[t].tid;
        long got = tid < 64 ? outer_per_thread[tid] : -1, want = atomic_load(&ended[k]);
        printf("thread %u (%s): %ld outer regions recorded, %ld ended with XSPROF_OK, %ld inner\n", tid, nm, got,
               want, tid < 64 ? inner_per_thread[tid] : -1);
        total += got;
        expect += want;
        if (exact ? got != want || want != ITERS : got > ITERS) {
            printf("FAIL: %s: %ld recorded, %ld expected\n", nm, got, want);
            bad = 1;
        }
    }
    printf("%ld outer regions recorded, %ld ended, %llu records dropped\n", total, expect,
           (unsigned long long)d.dropped);
    if (exact && (total != (long)(NTHREADS + 1) * ITERS || d.dropped != 0)) {
        printf("FAIL: expected %d regions and no drops\n", (NTHREADS + 1) * ITERS);
        bad = 1;
    }
    xsprof_rank_data_free(&d);
    return bad;
}

/* names: thread 1 names itself while nothing is recorded, thread 2 then
 * opens the journal (its chunk takes the pending names), thread 1 names
 * itself again and records. */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t names_cv = PTHREAD_COND_INITIALIZER;
static int names_step;

static void names_wait(int step)
{
    pthread_mutex_lock(&names_mu);
    while (names_step < step)
        pthread_cond_wait(&names_cv, &names_mu);
    pthread_mutex_unlock(&names_mu);
}

static void names_go(int step)
{
    pthread_mutex_lock(&names_mu);
    names_step = step;
    pthread_cond_broadcast(&names_cv);
    pthread_mutex_unlock(&names_mu);
}

static void *names_early(void *arg)
{
    (void)arg;
    xsprof_thread_name("tj-early");
    names_go(1);
    names_wait(2);
    xsprof_thread_name("tj-late");
    xsprof_region_begin("tj.late");
    xsprof_region_end();
    return NULL;
}

static void *names_opener(void *arg)
{
    (void)arg;
    names_wait(1);
    xsprof_region_begin("tj.opener");
    xsprof_region_end();
    names_go(2);
    return NULL;
}

static int names(const char *dir)
{
    pthread_t a, b;
    pthread_create(&a, NULL, names_early, NULL);
    pthread_create(&b, NULL, names_opener, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    xsprof_rank_data d;
    if (finalize_load(dir, &d))
        return 1;
    int late = 0, early = 0;
    for (size_t t = 0; t < d.nthreads; t++) {
        const char *nm = xsprof_rank_data_string(&d, d.threads[t].name);
        printf("thread %u: %s\n", d.threads[t].tid, nm);
        late += !strcmp(nm, "tj-late");
        early += !strcmp(nm, "tj-early");
    }
    xsprof_rank_data_free(&d);
    if (late != 1 || early != 0) {
        printf("FAIL: the thread named before the journal opened keeps its first name\n");
        return 1;
    }
    printf("OK\n");
    return 0;
}

/* pending: names of 24-byte records, ~70 KiB of list for 16 KiB chunks */
#define PENDING_NAMES 3000
#define PENDING_THREADS 4
static pthread_barrier_t pending_go;

static void *pending_worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&pending_go);
    for (int i = 0; i < 2000; i++) {
        xsprof_region_begin("tj.pending");
        xsprof_region_end();
    }
    return NULL;
}

static int pending(const char *dir)
{
    char nm[64];
    for (int i = 0; i < PENDING_NAMES; i++) {
        snprintf(nm, sizeof nm, "tj-main-%d", i);
        if (xsprof_thread_name(nm) != XSPROF_OK) {
            printf("FAIL: xsprof_thread_name(%s)\n", nm);
            return 1;
        }
    }
    pthread_t th[PENDING_THREADS];
    pthread_barrier_init(&pending_go, NULL, PENDING_THREADS);
    for (int k = 0; k < PENDING_THREADS; k++)
        pthread_create(&th[k], NULL, pending_worker, NULL);
    for (int k = 0; k < PENDING_THREADS; k++)
        pthread_join(th[k], NULL);
    xsprof_rank_data d;
    if (finalize_load(dir, &d))
        return 1;
    const char *main_name = NULL;
    size_t regions = 0;
    for (size_t t = 0; t < d.nthreads; t++)
        if (d.threads[t].tid == 0)
            main_name = xsprof_rank_data_string(&d, d.threads[t].name);
    for (size_t i = 0; i < d.nregions; i++)
        regions += !strcmp(xsprof_rank_data_string(&d, d.regions[i].name), "tj.pending");
    snprintf(nm, sizeof nm, "tj-main-%d", PENDING_NAMES - 1);
    int bad = !main_name || strcmp(main_name, nm) || regions != 2000 * PENDING_THREADS;
    printf("main thread: %s (expected %s); regions %zu of %d\n", main_name ? main_name : "(none)", nm, regions,
           2000 * PENDING_THREADS);
    xsprof_rank_data_free(&d);
    printf("%s\n", bad ? "FAIL: the definitions made before the journal existed were read out of order" : "OK");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "exact") && strcmp(argv[1], "toggle") && strcmp(argv[1], "names") &&
                      strcmp(argv[1], "pending"))) {
        fprintf(stderr, "usage: thread_journal exact|toggle|names|pending RUN_DIR\n");
        return 2;
    }
    if (!strcmp(argv[1], "names"))
        return names(argv[2]);
    if (!strcmp(argv[1], "pending"))
        return pending(argv[2]);
    int exact = !strcmp(argv[1], "exact");
    /* The journal, hence the rank file, only exists once something was
     * recorded. In toggle mode the controller may stop the session before
     * any worker begins a region (it is created last, but under load the
     * scheduler may run it first) and keep it off until all workers are
     * done: then there is no rank file to check. Record one region while
     * no other thread exists, so the rank file is always written. */
    if (!exact) {
        xsprof_status b = xsprof_region_begin("tj.main");
        xsprof_status e = xsprof_region_end();
        if (b != XSPROF_OK || e != XSPROF_OK) {
            printf("FAIL: cannot record before the threads start (%s, %s); a rank file left in %s?\n",
                   xsprof_status_string(b), xsprof_status_string(e), argv[2]);
            return 1;
        }
    }
    pthread_t th[NTHREADS + 1];
    /* Threads 0..NTHREADS-1 start together; thread NTHREADS starts after
     * the first one finished (a thread arriving while others exit). */
    for (long k = 0; k < NTHREADS; k++)
        pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
    pthread_t ctl;
    if (!exact)
        pthread_create(&ctl, NULL, controller, NULL);
    pthread_join(th[0], NULL);
    pthread_create(&th[NTHREADS], NULL, worker, (void *)(intptr_t)NTHREADS);
    for (int k = 1; k <= NTHREADS; k++)
        pthread_join(th[k], NULL);
    atomic_store(&stop_flag, 1);
    if (!exact)
        pthread_join(ctl, NULL);
    if (xsprof_finalize() != XSPROF_OK) {
        printf("FAIL: xsprof_finalize\n");
        return 1;
    }
    int bad = check(argv[2], exact);
    printf("%s\n", bad ? "FAIL" : "OK");
    return bad;
}
