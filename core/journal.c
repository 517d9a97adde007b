/* core/journal.c — the per-rank journal file (layout in journal.h).
 * Recording threads only pop pre-mapped spare chunks and push full ones;
 * the writer thread does every system call (fallocate, mmap, munmap,
 * writeback), so recording never blocks on I/O. Memory stays within the
 * budget because a full chunk is unmapped once the sink has seen it; the
 * kernel keeps its pages in the file, which is what survives a crash. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "internal.h"
#include "sink.h"
#include "xsprof_config.h"

#define STRINGS_CAPACITY (4u << 20)
#define MAX_CHUNKS 65536
#define SPARE_MAX 16

typedef struct journal {
    int fd;
    _Atomic int open;
    char dir[PATH_MAX];
    char path[PATH_MAX];
    char failed_dir[PATH_MAX]; /* where opening failed (said once): not tried again */
    xsprof_journal_header *hdr; /* header + string area mapping */
    size_t hdr_map_len;
    uint32_t chunk_size;
    uint32_t budget;            /* chunks that may be mapped at once */
    uint32_t spare_target;
    uint32_t mapped;            /* guarded by lock */
    /* oldest first: chunks are handed out in file order, so everything
     * before the first spare is records (the periodic writeback's range) */
    struct {
        xsprof_chunk_header *c;
        uint64_t idx;
    } spare[SPARE_MAX];
    uint32_t nspare;
    xsprof_chunk_header **full; /* queue for the writer, capacity budget */
    uint32_t nfull;
    int enospc;                 /* stop growing after a write error */
    int stop;
    _Atomic uint64_t spare_gen;
    int block_on_full;
    double flush_s;
    pthread_t writer;
    int writer_started;
    pthread_mutex_t lock;
    pthread_cond_t wake_writer;
    pthread_cond_t wake_waiters;
    xsprof_sink sink;
    int sink_set;
} journal;

static journal g_j = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER,
                      .wake_writer = PTHREAD_COND_INITIALIZER, .wake_waiters = PTHREAD_COND_INITIALIZER};

int xsprof_journal_is_open(void) { return g_j.open; }
uint32_t xsprof_journal_chunk_bytes(void) { return g_j.chunk_size; }
uint64_t xsprof_journal_spare_gen(void) { return atomic_load_explicit(&g_j.spare_gen, memory_order_acquire); }

xsprof_status xsprof_sink_set(const xsprof_sink *sink) {
    pthread_mutex_lock(&g_j.lock);
    xsprof_status st = XSPROF_OK;
    if (g_j.open)
        st = XSPROF_ERR_STATE;
    else if (sink) {
        g_j.sink = *sink;
        g_j.sink_set = 1;
    } else
        g_j.sink_set = 0;
    pthread_mutex_unlock(&g_j.lock);
    return st;
}

static const xsprof_sink *journal_sink(void) {
    if (g_j.sink_set)
        return &g_j.sink;
    return xsprof_sink_default ? xsprof_sink_default() : NULL;
}

/* mkdir -p with the user's umask; refuses to traverse a symlink as the last
 * component only through O_NOFOLLOW on the file itself (see journal_open). */
static int mkdir_p(const char *dir) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0777) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0777) && errno != EEXIST)
        return -1;
    return 0;
}

/* Rank file names; directories longer than PATH_MAX - 32 were refused by
 * journal_open, so these never truncate. */
static int journal_paths(const char *dir, int rank, char *jpath, char *h5path) {
    int n = 0;
    if (jpath)
        n = snprintf(jpath, PATH_MAX, "%s/rank-%05d.xsj", dir, rank);
    if (h5path)
        n = snprintf(h5path, PATH_MAX, "%s/rank-%05d.h5", dir, rank);
    return n >= PATH_MAX ? -1 : 0;
}

static void *writer_main(void *arg);

/* Map one more chunk at the end of the file; called with the lock held by
 * the writer (or by journal_open before the writer exists). */
/* The writer's heartbeat: a reader that finds a RUNNING journal with a
 * recent one knows the rank is still running, not killed; on any host,
 * whatever its own pid space (io/journal_read.c). */
static void journal_alive_mark(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_store_explicit((_Atomic int64_t *)&g_j.hdr->alive_realtime_ns,
                          (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, memory_order_relaxed);
}

static xsprof_chunk_header *chunk_grow(uint64_t *idx_out) {
    xsprof_journal_header *h = g_j.hdr;
    uint64_t idx = atomic_load_explicit((_Atomic uint64_t *)&h->nchunks, memory_order_relaxed);
    if (idx >= MAX_CHUNKS * 64ull)
        return NULL;
    off_t off = (off_t)(h->chunks_offset + idx * g_j.chunk_size);
    /* Real allocation, not a sparse hole: a full disk must be an error
     * here, never a SIGBUS in a recording thread. */
    int rc = posix_fallocate(g_j.fd, off, g_j.chunk_size);
    if (rc) {
        if (!g_j.enospc)
            xsprof_log(XSPROF_LOG_WARN, "journal %s cannot grow (%s); further records are dropped and counted",
                       g_j.path, strerror(rc));
        g_j.enospc = 1;
        return NULL;
    }
    /* No MAP_POPULATE: on a file mapping it only prefaults for reading; the
     * first write to each page still faults (dirty tracking). */
    void *m = mmap(NULL, g_j.chunk_size, PROT_READ | PROT_WRITE, MAP_SHARED, g_j.fd, off);
    if (m == MAP_FAILED) {
        if (!g_j.enospc)
            xsprof_log(XSPROF_LOG_WARN, "cannot map journal chunk (%s); further records are dropped", strerror(errno));
        g_j.enospc = 1;
        return NULL;
    }
    xsprof_chunk_header *c = m;
    memset(c, 0, sizeof *c);
    c->magic = XSPROF_CHUNK_MAGIC;
    atomic_store_explicit((_Atomic uint64_t *)&h->nchunks, idx + 1, memory_order_release);
    g_j.mapped++;
    *idx_out = idx;
    return c;
}

/* Take the first-write fault of every page now, on the writer thread: a
 * shared file mapping faults once per page on its first write (dirty
 * tracking), ~3 us each here, which would otherwise land in a recording
 * thread every 4 KiB of records. */
static void chunk_prefault(xsprof_chunk_header *c) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
    /* One call maps every page writable: no fault per page (on kernels
     * before 5.14 it fails with EINVAL and we touch each page instead). */
    if (madvise(c, g_j.chunk_size, MADV_POPULATE_WRITE) == 0)
        return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    for (size_t off = (size_t)page; off < g_j.chunk_size; off += (size_t)page)
        ((volatile char *)c)[off] = 0;
}

/* Lock held; up to `want` spares. `writer`: the writer thread, which
 * prefaults outside the lock so recording threads can take other spares
 * meanwhile (journal_open keeps the lock: nobody may see a half-open
 * journal). */
static void spares_refill(int writer, uint32_t want) {
    while (!g_j.enospc && g_j.nspare < want && g_j.mapped < g_j.budget) {
        uint64_t idx;
        xsprof_chunk_header *c = chunk_grow(&idx);
        if (!c)
            break;
        if (writer)
            pthread_mutex_unlock(&g_j.lock);
        chunk_prefault(c);
        if (writer)
            pthread_mutex_lock(&g_j.lock);
        g_j.spare[g_j.nspare].c = c;
        g_j.spare[g_j.nspare++].idx = idx;
    }
    atomic_fetch_add_explicit(&g_j.spare_gen, 1, memory_order_release);
    pthread_cond_broadcast(&g_j.wake_waiters);
}

xsprof_status xsprof_journal_open(void) {
    pthread_mutex_lock(&g_j.lock);
    if (g_j.open) {
        pthread_mutex_unlock(&g_j.lock);
        return XSPROF_OK;
    }
    xsprof_status st = XSPROF_ERR_IO;
    const char *dir = xsprof_run_dir();
    if (!*dir) {
        pthread_mutex_unlock(&g_j.lock);
        return XSPROF_ERR_STATE;
    }
    if (g_j.failed_dir[0] && !strcmp(dir, g_j.failed_dir)) {
        pthread_mutex_unlock(&g_j.lock);
        return XSPROF_ERR_IO;
    }
    snprintf(g_j.dir, sizeof g_j.dir, "%s", dir);
    char h5[PATH_MAX];
    if (journal_paths(g_j.dir, xsprof_g.rank, g_j.path, NULL) || journal_paths(g_j.dir, xsprof_g.rank, NULL, h5)) {
        xsprof_log(XSPROF_LOG_WARN, "run directory name too long: %s; profiling is off for this rank", g_j.dir);
        goto out;
    }
    if (mkdir_p(g_j.dir)) {
        xsprof_log(XSPROF_LOG_WARN, "cannot create run directory %s (%s); profiling is off for this rank", g_j.dir,
                   strerror(errno));
        goto out;
    }
    if (access(h5, F_OK) == 0) {
        xsprof_log(XSPROF_LOG_WARN, "%s already exists; set XSPROF_OUTPUT to a new directory. Profiling is off", h5);
        goto out;
    }
    int fd = open(g_j.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        xsprof_log(XSPROF_LOG_WARN, "cannot create journal %s (%s); profiling is off for this rank", g_j.path,
                   strerror(errno));
        goto out;
    }
    g_j.fd = fd;
    g_j.hdr_map_len = XSPROF_JOURNAL_HEADER_SIZE + STRINGS_CAPACITY;
    int rc = posix_fallocate(fd, 0, (off_t)g_j.hdr_map_len);
    void *m = rc ? MAP_FAILED : mmap(NULL, g_j.hdr_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        xsprof_log(XSPROF_LOG_WARN, "cannot size journal %s (%s); profiling is off for this rank", g_j.path,
                   strerror(rc ? rc : errno));
        close(fd);
        unlink(g_j.path);
        g_j.fd = -1;
        goto out;
    }
    xsprof_journal_header *h = m;
    memset(h, 0, sizeof *h);
    h->version = XSPROF_JOURNAL_VERSION;
    h->header_size = XSPROF_JOURNAL_HEADER_SIZE;
    uint64_t chunk_kb = (uint64_t)xsprof_config_int("XSPROF_CHUNK_KB", 1024);
    if (chunk_kb < 16 || chunk_kb > 65536)
        chunk_kb = 1024;
    g_j.chunk_size = (uint32_t)(chunk_kb << 10);
    uint64_t budget_mb = (uint64_t)xsprof_config_int("XSPROF_BUFFER_MB", 64);
    if (budget_mb < 1)
        budget_mb = 1;
    uint64_t b = (budget_mb << 20) / g_j.chunk_size;
    g_j.budget = (uint32_t)(b < 2 ? 2 : b > MAX_CHUNKS ? MAX_CHUNKS : b);
    g_j.spare_target = g_j.budget / 2 < 2 ? 2 : g_j.budget / 2 > SPARE_MAX ? SPARE_MAX : g_j.budget / 2;
    g_j.full = calloc(g_j.budget, sizeof *g_j.full);
    const char *pol = xsprof_config_get("XSPROF_ON_FULL");
    g_j.block_on_full = pol && !strcmp(pol, "block");
    g_j.flush_s = (double)xsprof_config_int("XSPROF_FLUSH_S", 1);
    if (g_j.flush_s <= 0)
        g_j.flush_s = 1;
    h->chunk_size = g_j.chunk_size;
    h->rank = xsprof_g.rank;
    h->size = xsprof_g.size;
    h->pid = getpid();
    /* The process's start, not the journal's: the journal opens at the
     * first real record, maybe seconds later (after MPI_Init). */
    xsprof_start_time_get(&h->start_realtime_ns, &h->start_clock_ns);
    h->strings_offset = XSPROF_JOURNAL_HEADER_SIZE;
    h->strings_capacity = STRINGS_CAPACITY;
    h->chunks_offset = g_j.hdr_map_len;
    const char *job = getenv("OMPI_MCA_ess_base_jobid");
    if (!job)
        job = getenv("PMIX_NAMESPACE");
    if (!job)
        job = getenv("SLURM_JOB_ID");
    snprintf(h->job_id, sizeof h->job_id, "%s", job ? job : "");
    gethostname(h->host, sizeof h->host - 1);
    snprintf(h->clock_source, sizeof h->clock_source, "%s", xsprof_clock_source());
    snprintf(h->xsprof_version, sizeof h->xsprof_version, "%s", XSPROF_VERSION_STRING);
    atomic_store_explicit((_Atomic uint32_t *)&h->state, XSPROF_JOURNAL_RUNNING, memory_order_relaxed);
    h->alive_period_ns = (int64_t)(g_j.flush_s * 1e9); /* the writer's longest sleep */
    g_j.hdr = h;
    journal_alive_mark();
    memcpy(h->magic, XSPROF_JOURNAL_MAGIC, 8); /* last: a reader sees a complete header or none */
    /* two spares now, the writer makes the rest: prefaulting all 16 MiB
     * here took 20-40 ms of the thread that happened to record first */
    spares_refill(0, g_j.spare_target < 2 ? g_j.spare_target : 2);
    if (pthread_create(&g_j.writer, NULL, writer_main, NULL) == 0)
        g_j.writer_started = 1;
    else
        xsprof_log(XSPROF_LOG_WARN, "cannot start the writer thread; records beyond the first chunks are dropped");
    g_j.open = 1;
    st = XSPROF_OK;
    /* tests: a slow file system's journal setup, which must land inside
     * MPI_Init's record (tests/mpi mpi_setup_in_init) */
    int64_t delay_ms = xsprof_config_int("XSPROF_TEST_JOURNAL_DELAY_MS", 0);
    if (delay_ms > 0)
        nanosleep(&(struct timespec){delay_ms / 1000, delay_ms % 1000 * 1000000}, NULL);
out:
    if (st != XSPROF_OK) /* the warning said profiling is off: keep it so */
        snprintf(g_j.failed_dir, sizeof g_j.failed_dir, "%s", dir);
    pthread_mutex_unlock(&g_j.lock);
    if (st == XSPROF_OK) {
        xsprof_names_flush_to_journal();
        if (xsprof_g.rank == 0)
            xsprof_log(XSPROF_LOG_INFO, "writing profile to %s", g_j.dir);
        xsprof_start_hooks_run();
    }
    return st;
}

xsprof_status xsprof_journal_string_add(uint32_t id, const char *s, uint32_t len) {
    xsprof_journal_header *h = g_j.hdr;
    uint64_t used = atomic_load_explicit((_Atomic uint64_t *)&h->strings_used, memory_order_relaxed);
    uint64_t need = 8 + (((uint64_t)len + 3) & ~3ull);
    if (used + need > h->strings_capacity) {
        xsprof_anomaly("journal string area full");
        return XSPROF_ERR_NOMEM;
    }
    char *p = (char *)h + h->strings_offset + used;
    memcpy(p, &id, 4);
    memcpy(p + 4, &len, 4);
    memcpy(p + 8, s, len);
    atomic_store_explicit((_Atomic uint64_t *)&h->strings_used, used + need, memory_order_release);
    return XSPROF_OK;
}

xsprof_chunk_header *xsprof_journal_chunk_take(int block) {
    if (!g_j.open && xsprof_journal_open() != XSPROF_OK)
        return NULL;
    pthread_mutex_lock(&g_j.lock);
    while (!g_j.nspare && block && g_j.block_on_full && !g_j.stop && !g_j.enospc && g_j.writer_started &&
           g_j.mapped >= g_j.budget) {
        pthread_cond_signal(&g_j.wake_writer);
        pthread_cond_wait(&g_j.wake_waiters, &g_j.lock);
    }
    xsprof_chunk_header *c = NULL;
    if (g_j.nspare) {
        c = g_j.spare[0].c;
        memmove(&g_j.spare[0], &g_j.spare[1], --g_j.nspare * sizeof g_j.spare[0]);
    }
    /* The writer is starved of CPU (more busy threads than cores) but the
     * budget has room: map the chunk here rather than drop records. */
    uint64_t idx;
    if (!c && g_j.mapped < g_j.budget && !g_j.enospc)
        c = chunk_grow(&idx);
    if (g_j.nspare < g_j.spare_target / 2 + 1)
        pthread_cond_signal(&g_j.wake_writer);
    pthread_mutex_unlock(&g_j.lock);
    return c;
}

void xsprof_journal_chunk_full(xsprof_chunk_header *c) {
    atomic_store_explicit((_Atomic uint32_t *)&c->state, XSPROF_CHUNK_FULL, memory_order_release);
    const xsprof_sink *sink = journal_sink();
    if (!sink || !sink->chunk_full) {
        /* Nothing to show the chunk to: release it now, so memory is back
         * in the budget even when the writer cannot run. */
        munmap(c, g_j.chunk_size);
        pthread_mutex_lock(&g_j.lock);
        g_j.mapped--;
        pthread_cond_signal(&g_j.wake_writer);
        pthread_mutex_unlock(&g_j.lock);
        return;
    }
    pthread_mutex_lock(&g_j.lock);
    if (g_j.nfull < g_j.budget)
        g_j.full[g_j.nfull++] = c;
    pthread_cond_signal(&g_j.wake_writer);
    pthread_mutex_unlock(&g_j.lock);
}

void xsprof_journal_count_drops(uint64_t n) {
    if (g_j.hdr)
        atomic_fetch_add_explicit((_Atomic uint64_t *)&g_j.hdr->dropped, n, memory_order_relaxed);
}

/* Hand full chunks to the sink and unmap them. Lock held on entry/exit. */
static void full_drain(void) {
    const xsprof_sink *sink = journal_sink();
    while (g_j.nfull) {
        xsprof_chunk_header *c = g_j.full[--g_j.nfull];
        pthread_mutex_unlock(&g_j.lock);
        if (sink && sink->chunk_full)
            sink->chunk_full(sink->self, c, (const char *)c + sizeof *c,
                             atomic_load_explicit((_Atomic uint64_t *)&c->used, memory_order_acquire));
        munmap(c, g_j.chunk_size);
        pthread_mutex_lock(&g_j.lock);
        g_j.mapped--;
    }
}

static void *writer_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals belong to the application's threads */
    pthread_mutex_lock(&g_j.lock);
    struct timespec last;
    clock_gettime(CLOCK_MONOTONIC, &last);
    while (!g_j.stop) {
        pthread_mutex_unlock(&g_j.lock);
        xsprof_clock_calibrate();
        xsprof_rss_check(0); /* unlocked: the warning may reach the application's handler */
        pthread_mutex_lock(&g_j.lock);
        full_drain();
        spares_refill(1, g_j.spare_target);
        struct timespec now, dl;
        clock_gettime(CLOCK_MONOTONIC, &now);
        journal_alive_mark();
        if ((double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) * 1e-9 >= g_j.flush_s) {
            /* Periodic flush: start writeback (without waiting for it, so
             * spares keep coming) so data also survives a node crash. Not
             * the spares: their zeros would be written now and again once
             * filled, and cleaning their pages makes the recording threads
             * fault on them again. */
            off_t end = g_j.nspare ? (off_t)(g_j.hdr->chunks_offset + g_j.spare[0].idx * g_j.chunk_size) : 0;
            pthread_mutex_unlock(&g_j.lock);
            sync_file_range(g_j.fd, 0, end, SYNC_FILE_RANGE_WRITE);
            pthread_mutex_lock(&g_j.lock);
            last = now;
        }
        if (g_j.stop || g_j.nfull || (g_j.nspare < g_j.spare_target && g_j.mapped < g_j.budget && !g_j.enospc))
            continue;
        clock_gettime(CLOCK_REALTIME, &dl);
        int64_t ns = dl.tv_nsec + (int64_t)(g_j.flush_s * 1e9);
        dl.tv_sec += ns / 1000000000;
        dl.tv_nsec = ns % 1000000000;
        pthread_cond_timedwait(&g_j.wake_writer, &g_j.lock, &dl);
    }
    full_drain();
    pthread_mutex_unlock(&g_j.lock);
    return NULL;
}

void xsprof_journal_mark_signal(int sig) {
    xsprof_journal_header *h = g_j.hdr;
    if (!h)
        return;
    h->signal = sig;
    atomic_store_explicit((_Atomic uint32_t *)&h->state, XSPROF_JOURNAL_SIGNALED, memory_order_release);
}

/* Rename the journal into the agreed run directory / rank (identity_set). */

xsprof_status xsprof_journal_relocate(const char *dir, int rank) {
    pthread_mutex_lock(&g_j.lock);
    xsprof_status st = XSPROF_OK;
    if (g_j.open) {
        char np[PATH_MAX];
        if (journal_paths(dir, rank, np, NULL))
            st = XSPROF_ERR_TOO_LONG;
        else if (strcmp(np, g_j.path)) {
            if (mkdir_p(dir) || rename(g_j.path, np)) {
                xsprof_log(XSPROF_LOG_WARN, "cannot move journal %s to %s (%s)", g_j.path, np, strerror(errno));
                st = XSPROF_ERR_IO;
            } else {
                rmdir(g_j.dir); /* only succeeds when we left it empty */
                snprintf(g_j.path, sizeof g_j.path, "%s", np);
                snprintf(g_j.dir, sizeof g_j.dir, "%s", dir);
                g_j.hdr->rank = rank;
            }
        }
        g_j.hdr->size = xsprof_g.size;
    }
    pthread_mutex_unlock(&g_j.lock);
    return st;
}

/* Rank 0 says what finalize is doing when it takes long: a heavily traced
 * rank's conversion takes seconds after the application's last output,
 * which looked like a hang (issue 39). A thread waits out the deadline (2 s;
 * XSPROF_TEST_FINALIZE_NOTE_MS for tests) and, unless finish is done by
 * then, logs one line; it ends when finish does. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int done;
    int64_t ms;
    double mb; /* the journal's size */
    pthread_t th;
} g_note = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void note_say(void) {
    xsprof_log(XSPROF_LOG_WARN,
               "finalize: writing the rank files from the journals (rank 0's: %.0f MB), %.1f s so far; the job ends "
               "when every rank has written its own",
               g_note.mb, (double)g_note.ms / 1000.0);
}

static void *note_main(void *arg) {
    (void)arg;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += g_note.ms / 1000;
    dl.tv_nsec += g_note.ms % 1000 * 1000000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&g_note.lock);
    int rc = 0;
    while (!g_note.done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g_note.cv, &g_note.lock, &dl);
    int late = !g_note.done;
    pthread_mutex_unlock(&g_note.lock);
    if (late)
        note_say();
    return NULL;
}

/* 1 when a note thread was started (note_stop joins it). */
static int note_start(void) {
    if (xsprof_g.rank != 0)
        return 0;
    g_note.ms = xsprof_config_int("XSPROF_TEST_FINALIZE_NOTE_MS", 2000);
    struct stat sb;
    g_note.mb = fstat(g_j.fd, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
    g_note.done = 0;
    if (g_note.ms <= 0) { /* tests: at once, deterministically */
        note_say();
        return 0;
    }
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
        pthread_cond_init(&g_note.cv, &ca))
        return 0;
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals never land on it */
    int ok = pthread_create(&g_note.th, NULL, note_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok) {
        pthread_cond_destroy(&g_note.cv);
        return 0;
    }
    return 1;
}

static void note_stop(int started) {
    if (!started)
        return;
    pthread_mutex_lock(&g_note.lock);
    g_note.done = 1;
    pthread_cond_signal(&g_note.cv);
    pthread_mutex_unlock(&g_note.lock);
    pthread_join(g_note.th, NULL);
    pthread_cond_destroy(&g_note.cv);
}

static xsprof_status journal_finish(const char *end_state);

xsprof_status xsprof_journal_finish(const char *end_state) {
    if (!g_j.open)
        return XSPROF_OK;
    int note = note_start();
    xsprof_status st = journal_finish(end_state);
    note_stop(note);
    return st;
}

static xsprof_status journal_finish(const char *end_state) {
    pthread_mutex_lock(&g_j.lock);
    g_j.stop = 1;
    pthread_cond_broadcast(&g_j.wake_writer);
    pthread_cond_broadcast(&g_j.wake_waiters);
    pthread_mutex_unlock(&g_j.lock);
    if (g_j.writer_started)
        pthread_join(g_j.writer, NULL);
    pthread_mutex_lock(&g_j.lock);
    full_drain();
    xsprof_journal_header *h = g_j.hdr;
    h->anomalies = atomic_load(&xsprof_g.anomalies);
    /* In the header too: the META record may have been dropped (full disk). */
    snprintf(h->end_state, sizeof h->end_state, "%s", end_state);
    h->size = xsprof_g.size;
    char h5[PATH_MAX];
    int bad = journal_paths(g_j.dir, h->rank, NULL, h5);
    pthread_mutex_unlock(&g_j.lock);
    if (bad)
        return XSPROF_ERR_TOO_LONG;
    const xsprof_sink *sink = journal_sink();
    xsprof_status st = XSPROF_OK;
    if (sink && sink->finish) {
        st = sink->finish(sink->self, g_j.path, h5);
        if (st == XSPROF_OK) {
            atomic_store_explicit((_Atomic uint32_t *)&h->state, XSPROF_JOURNAL_FINALIZED, memory_order_release);
            unlink(g_j.path);
        } else {
            atomic_store_explicit((_Atomic uint32_t *)&h->state, XSPROF_JOURNAL_CLOSED, memory_order_release);
            xsprof_log(XSPROF_LOG_WARN, "could not write %s (%s); the journal %s keeps the data for xsmerge", h5,
                       xsprof_status_string(st), g_j.path);
        }
    }
    return st;
}
