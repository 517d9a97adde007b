/* merge/read/fork.c — see xsm_read_forked and xsm_early_fork in read.h.
 *
 * Decoding a rank file (HDF5 filters: checksum, inflate, unshuffle) is the
 * largest cost of a serial merge, and the HDF5 library is not thread-safe.
 * So helper processes forked before any file is opened decode a share of
 * the files each and write the loaded entries into an anonymous memory
 * file (memfd): a helper never blocks on the parent, which decodes its own
 * share meanwhile and then maps the helpers' files. An entry is exactly
 * what xsm_load_one produced, so the model does not depend on who decoded
 * it. Anything a helper did not deliver is loaded by the parent.
 *
 * The tables are not copied back: each starts 64-byte aligned in the
 * memory file, and the parent's entries point into its mapping (a copy
 * cost a page fault and a memcpy per 4 KiB, about what decoding did). Such
 * entries are released with xsm_read_release, which leaves the mapped
 * tables to the mapping; the mapping goes when its last entry does. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "merge/read/read.h"
#include "merge/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define XSM_FORK_MAX 16
#define XSM_ENTRY_MAGIC 0x78736d656e747279ull /* "xsmentry" */
#define XSM_STR_NULL UINT32_MAX
#define XSM_ENTRY_ALIGN 64


static int xsm_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int xsm_write_at(int fd, uint64_t *off, const void *p, size_t n)
{
    if (xsm_write_all(fd, p, n))
        return -1;
    *off += n;
    return 0;
}

/* Zeros up to the next multiple of XSM_ENTRY_ALIGN. */
static int xsm_write_pad(int fd, uint64_t *off)
{
    static const unsigned char zero[XSM_ENTRY_ALIGN];
    size_t k = (size_t)((XSM_ENTRY_ALIGN - *off % XSM_ENTRY_ALIGN) % XSM_ENTRY_ALIGN);
    return k ? xsm_write_at(fd, off, zero, k) : 0;
}

/* Entry, at an aligned offset: magic, index, the xsm_loaded struct (its
 * pointers are meaningless to the reader), every table aligned, then the
 * strings as (u32 length, bytes). *off is the file's length so far. */
static int xsm_entry_write(int fd, uint64_t *off, uint64_t index, const xsm_loaded *l)
{
    uint64_t head[2] = {XSM_ENTRY_MAGIC, index};
    if (xsm_write_pad(fd, off) || xsm_write_at(fd, off, head, sizeof head) || xsm_write_at(fd, off, l, sizeof *l))
        return -1;
    const xsprof_rank_data *d = &l->d;
#define X(a, cnt, ev)                                                                                       \
    if (d->cnt && (xsm_write_pad(fd, off) || xsm_write_at(fd, off, d->a, d->cnt * sizeof *d->a)))      \
        return -1;
    XSM_RANK_TABLES(X)
#undef X
    for (uint32_t i = 0; i < d->nstrings; i++) {
        uint32_t k = d->strings[i] ? (uint32_t)strlen(d->strings[i]) : XSM_STR_NULL;
        if (xsm_write_at(fd, off, &k, sizeof k) || (k != XSM_STR_NULL && xsm_write_at(fd, off, d->strings[i], k)))
            return -1;
    }
    return 0;
}

/* ---- the parent's side: mapped memory files -------------------------- */

/* A memory file as mapped here: a helper's (fd: our descriptor of it,
 * kept so that other processes can open it), or another merging process's
 * (read-only; pid and its descriptor number name it). `users` entries
 * point into it. */
typedef struct xsm_map {
    unsigned char *base;
    size_t len;
    size_t users;
    int fd;        /* ours, or -1 */
    int64_t pid;   /* a peer's: its process and descriptor number; else 0 */
    int peer_fd;
} xsm_map;

#define XSM_MAPS_MAX (2 * XSM_FORK_MAX)
static xsm_map xsm_maps[XSM_MAPS_MAX];
static pthread_mutex_t xsm_maps_mu = PTHREAD_MUTEX_INITIALIZER;

/* Register a mapping (the caller holds the lock); NULL when full. */
static xsm_map *xsm_map_add_locked(xsm_map m)
{
    for (size_t i = 0; i < XSM_MAPS_MAX; i++)
        if (!xsm_maps[i].base) {
            xsm_maps[i] = m;
            return &xsm_maps[i];
        }
    return NULL;
}

/* Map fd (its whole length, pages mapped in one call rather than faulted
 * one by one) and register it, keeping a descriptor of it; NULL when empty
 * or not possible. */
static xsm_map *xsm_map_fd(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0)
        return NULL;
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, (size_t)st.st_size, MADV_POPULATE_WRITE); /* older kernels: faults instead */
    pthread_mutex_lock(&xsm_maps_mu);
    xsm_map *m = xsm_map_add_locked((xsm_map){p, (size_t)st.st_size, 0, dup(fd), 0, -1});
    pthread_mutex_unlock(&xsm_maps_mu);
    if (!m)
        munmap(p, (size_t)st.st_size);
    return m;
}

/* Drop a mapping no entry uses (the caller holds the lock). */
static void xsm_map_drop_locked(xsm_map *m)
{
    if (m->base && m->users == 0) {
        munmap(m->base, m->len);
        if (m->fd >= 0)
            close(m->fd);
        *m = (xsm_map){NULL, 0, 0, -1, 0, -1};
    }
}

static void xsm_map_done(xsm_map *m)
{
    pthread_mutex_lock(&xsm_maps_mu);
    xsm_map_drop_locked(m);
    pthread_mutex_unlock(&xsm_maps_mu);
}

int xsm_read_map_of(const void *p, int *fd, uint64_t *off, uint64_t *len)
{
    int found = 0;
    pthread_mutex_lock(&xsm_maps_mu);
    for (size_t i = 0; i < XSM_MAPS_MAX && !found; i++) {
        const xsm_map *m = &xsm_maps[i];
        if (m->base && m->fd >= 0 && (const unsigned char *)p >= m->base && (const unsigned char *)p < m->base + m->len) {
            *fd = m->fd;
            *off = (uint64_t)((const unsigned char *)p - m->base);
            *len = m->len;
            found = 1;
        }
    }
    pthread_mutex_unlock(&xsm_maps_mu);
    return found;
}

void *xsm_read_open_peer(int64_t pid, int fd, uint64_t len, int writable)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%lld/fd/%d", (long long)pid, fd);
    int f = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (f < 0)
        return NULL;
    struct stat st;
    /* read-only: a stray write to another process's rows faults at once */
    void *p = fstat(f, &st) == 0 && (uint64_t)st.st_size == len && len > 0
                  ? mmap(NULL, (size_t)len, writable ? PROT_READ | PROT_WRITE : PROT_READ,
                         writable ? MAP_SHARED : MAP_SHARED | MAP_POPULATE, f, 0)
                  : MAP_FAILED;
    close(f);
    return p == MAP_FAILED ? NULL : p;
}

const void *xsm_read_map_peer(int64_t pid, int fd, uint64_t len)
{
    const void *base = NULL;
    pthread_mutex_lock(&xsm_maps_mu);
    for (size_t i = 0; i < XSM_MAPS_MAX && !base; i++)
        if (xsm_maps[i].base && xsm_maps[i].pid == pid && xsm_maps[i].peer_fd == fd && xsm_maps[i].len == len)
            base = xsm_maps[i].base;
    pthread_mutex_unlock(&xsm_maps_mu);
    if (base)
        return base;
    void *p = xsm_read_open_peer(pid, fd, len, 0);
    if (!p)
        return NULL;
    pthread_mutex_lock(&xsm_maps_mu);
    xsm_map *m = xsm_map_add_locked((xsm_map){p, (size_t)len, 0, -1, pid, fd});
    pthread_mutex_unlock(&xsm_maps_mu);
    if (!m) {
        munmap(p, (size_t)len);
        return NULL;
    }
    return p;
}

void xsm_read_map_hold(const void *base)
{
    pthread_mutex_lock(&xsm_maps_mu);
    for (size_t i = 0; i < XSM_MAPS_MAX; i++)
        if (xsm_maps[i].base == base)
            xsm_maps[i].users++;
    pthread_mutex_unlock(&xsm_maps_mu);
}

void xsm_read_map_sweep(void)
{
    pthread_mutex_lock(&xsm_maps_mu);
    for (size_t i = 0; i < XSM_MAPS_MAX; i++)
        xsm_map_drop_locked(&xsm_maps[i]);
    pthread_mutex_unlock(&xsm_maps_mu);
}

void xsm_read_release(xsprof_rank_data *d)
{
    pthread_mutex_lock(&xsm_maps_mu);
    for (size_t i = 0; i < XSM_MAPS_MAX; i++) {
        xsm_map *m = &xsm_maps[i];
        int used = 0;
        if (!m->base)
            continue;
#define X(a, cnt, ev)                                                                                             \
    if (d->a && (const unsigned char *)d->a >= m->base && (const unsigned char *)d->a < m->base + m->len) { \
        d->a = NULL;                                                                                          \
        used = 1;                                                                                             \
    }
        XSM_RANK_TABLES(X)
#undef X
        if (used && m->users > 0 && --m->users == 0)
            xsm_map_drop_locked(m);
    }
    pthread_mutex_unlock(&xsm_maps_mu);
    xsprof_rank_data_free(d);
}

/* The entry at *off of mapping m into *out: its tables point into the
 * mapping, its strings are copied (the reader frees them one by one).
 * Returns its index, or -1 at the end or on damage (out is then empty and
 * safe to free). */
static int64_t xsm_entry_map(xsm_map *m, size_t *off, xsm_loaded *out)
{
    uint64_t head[2];
    size_t at = (*off + XSM_ENTRY_ALIGN - 1) / XSM_ENTRY_ALIGN * XSM_ENTRY_ALIGN;
    memset(out, 0, sizeof *out);
    if (at > m->len || m->len - at < sizeof head + sizeof *out)
        return -1;
    memcpy(head, m->base + at, sizeof head);
    if (head[0] != XSM_ENTRY_MAGIC || head[1] > INT64_MAX)
        return -1;
    memcpy(out, m->base + at + sizeof head, sizeof *out);
    at += sizeof head + sizeof *out;
    xsprof_rank_data *d = &out->d;
    uint32_t nstrings = d->nstrings;
    d->strings = NULL;
    d->nstrings = 0;
    out->rf = NULL;
#define X(a, cnt, ev) d->a = NULL;
    XSM_RANK_TABLES(X)
#undef X
    int ok = 1, mapped = 0;
#define X(a, cnt, ev)                                                                    \
    if (ok && d->cnt) {                                                              \
        at = (at + XSM_ENTRY_ALIGN - 1) / XSM_ENTRY_ALIGN * XSM_ENTRY_ALIGN;         \
        ok = at <= m->len && d->cnt <= (m->len - at) / sizeof *d->a;                 \
        if (ok) {                                                                    \
            d->a = (void *)(m->base + at);                                           \
            at += d->cnt * sizeof *d->a;                                             \
            mapped = 1;                                                              \
        }                                                                            \
    }                                                                                \
    if (!d->a)                                                                       \
        d->cnt = 0;
    XSM_RANK_TABLES(X)
#undef X
    if (mapped) {
        pthread_mutex_lock(&xsm_maps_mu);
        m->users++;
        pthread_mutex_unlock(&xsm_maps_mu);
    }
    if (ok && nstrings) {
        d->strings = calloc((size_t)nstrings + 1, sizeof *d->strings);
        ok = d->strings != NULL;
    }
    for (uint32_t i = 0; ok && i < nstrings; i++) {
        uint32_t k;
        ok = m->len - at >= sizeof k;
        if (!ok)
            break;
        memcpy(&k, m->base + at, sizeof k);
        at += sizeof k;
        d->nstrings = i + 1;
        if (k == XSM_STR_NULL)
            continue;
        ok = m->len - at >= k && (d->strings[i] = malloc((size_t)k + 1)) != NULL;
        if (ok) {
            memcpy(d->strings[i], m->base + at, k);
            d->strings[i][k] = 0;
            at += k;
        }
    }
    if (!ok) {
        xsm_read_release(d);
        memset(out, 0, sizeof *out);
        return -1;
    }
    *off = at;
    return (int64_t)head[1];
}

/* Every complete entry in fd for l[i] still to be done: taken, marked done
 * and stepped. Entries written before a helper failed are complete. */
static void xsm_entries_take(int fd, xsm_loaded *l, size_t n, unsigned char *done, void (*step)(void))
{
    xsm_map *m = xsm_map_fd(fd);
    if (!m)
        return;
    size_t off = 0;
    xsm_loaded x;
    int64_t i;
    while ((i = xsm_entry_map(m, &off, &x)) >= 0) {
        if ((size_t)i < n && l[i].status == 0 && !done[i]) {
            l[i] = x;
            done[i] = 1;
            if (step)
                step();
        } else {
            xsm_read_release(&x.d);
        }
    }
    xsm_map_done(m); /* unmapped now if no entry kept a table in it */
}

/* Load here what no helper delivered (a file a helper could not read is
 * read again here, so its error is this process's, as serially). */
static void xsm_load_rest(const xsm_candidate *c, xsm_loaded *l, size_t n, const unsigned char *done,
                          void (*load)(const xsm_candidate *, xsm_loaded *), void (*step)(void))
{
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0 || done[i])
            continue;
        load(&c[i], &l[i]);
        if (step)
            step();
    }
}

int xsm_read_forked(const xsm_candidate *c, xsm_loaded *l, size_t n, int procs,
                    void (*load)(const xsm_candidate *, xsm_loaded *), void (*step)(void))
{
    size_t todo = 0;
    for (size_t i = 0; i < n; i++)
        todo += l[i].status == 0;
    if (procs > XSM_FORK_MAX)
        procs = XSM_FORK_MAX;
    if ((size_t)procs > todo)
        procs = (int)todo;
    if (procs < 2)
        return -1;
    int fd[XSM_FORK_MAX];
    pid_t pid[XSM_FORK_MAX];
    int helpers = 0;
    fflush(NULL); /* nothing buffered may be written twice */
    for (int h = 1; h < procs; h++) {
        fd[h] = memfd_create("xsmerge-read", MFD_CLOEXEC);
        if (fd[h] < 0)
            break;
        pid[h] = fork();
        if (pid[h] < 0) {
            close(fd[h]);
            break;
        }
        if (pid[h] == 0) {
            /* helper h: entries k % procs == h of the work list */
            int bad = 0;
            size_t k = 0;
            uint64_t off = 0;
            for (size_t i = 0; i < n && !bad; i++) {
                if (l[i].status != 0)
                    continue;
                if (k++ % (size_t)procs != (size_t)h)
                    continue;
                xsm_loaded x = l[i];
                load(&c[i], &x);
                bad = xsm_entry_write(fd[h], &off, i, &x) != 0;
                xsprof_rank_data_free(&x.d);
            }
            _exit(bad ? 1 : 0); /* no exit handlers: they belong to the parent */
        }
        helpers = h;
    }
    if (helpers == 0)
        return -1;
    /* the parent's share: k % procs == 0, plus the shares of helpers that
     * could not be started */
    unsigned char *done = calloc(n + 1, 1);
    if (!done) {
        for (int h = 1; h <= helpers; h++) {
            kill(pid[h], SIGKILL);
            waitpid(pid[h], NULL, 0);
            close(fd[h]);
        }
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0)
            continue;
        size_t who = k++ % (size_t)procs;
        if (who != 0 && who <= (size_t)helpers)
            continue;
        load(&c[i], &l[i]);
        done[i] = 1;
        if (step)
            step();
    }
    for (int h = 1; h <= helpers; h++) {
        int st = 0;
        while (waitpid(pid[h], &st, 0) < 0 && errno == EINTR)
            ;
        xsm_entries_take(fd[h], l, n, done, step);
        close(fd[h]);
    }
    xsm_load_rest(c, l, n, done, load, step);
    free(done);
    return 0;
}

/* ---- the process's own loads, decoded into a memory file --------------- */

/* After MPI_Init the process loads what its helper has not reached. Loaded
 * into the heap, those tables went to the other processes of the node by
 * MPI (a copy into fresh pages there: 0.13 CPU-s a process for the 5 M-event
 * ring's two files each); decoded into a memory file of this process they
 * are mapped there like the helper's. The io reader allocates the tables
 * here (xsprof_rankfile_set_table_alloc) while these loads run: one bump
 * region of a sparse memory file, cut to what was used at the end. */
static struct {
    unsigned char *base;
    size_t cap, used;
} xsm_arena;
static pthread_mutex_t xsm_arena_mu = PTHREAD_MUTEX_INITIALIZER;

static int xsm_arena_has(const void *p)
{
    return xsm_arena.base && (const unsigned char *)p >= xsm_arena.base &&
           (const unsigned char *)p < xsm_arena.base + xsm_arena.cap;
}

static void *xsm_arena_alloc(size_t bytes)
{
    void *p = NULL;
    pthread_mutex_lock(&xsm_arena_mu);
    size_t at = (xsm_arena.used + XSM_ENTRY_ALIGN - 1) / XSM_ENTRY_ALIGN * XSM_ENTRY_ALIGN;
    if (at <= xsm_arena.cap && bytes <= xsm_arena.cap - at) {
        p = xsm_arena.base + at;
        xsm_arena.used = at + bytes;
    }
    pthread_mutex_unlock(&xsm_arena_mu);
    return p ? p : malloc(bytes); /* full: the heap, and that entry is sent */
}

/* A table of the arena stays until its mapping goes (a failed load leaves
 * a hole); any other is the heap's. */
static void xsm_arena_release(void *p)
{
    if (!xsm_arena_has(p))
        free(p);
}

/* The arena of cap bytes, registered as a mapping of ours; NULL (loads go
 * to the heap) when it cannot be made. */
static xsm_map *xsm_arena_begin(uint64_t cap)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (cap < (uint64_t)pg || cap > SIZE_MAX / 2)
        return NULL;
    int fd = memfd_create("xsmerge-own", MFD_CLOEXEC);
    void *p = fd >= 0 && ftruncate(fd, (off_t)cap) == 0
                  ? mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    xsm_map *m = NULL;
    if (p != MAP_FAILED) {
        pthread_mutex_lock(&xsm_maps_mu);
        m = xsm_map_add_locked((xsm_map){p, (size_t)cap, 0, fd, 0, -1});
        pthread_mutex_unlock(&xsm_maps_mu);
        if (!m)
            munmap(p, (size_t)cap);
    }
    if (!m) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    xsm_arena.base = p;
    xsm_arena.cap = (size_t)cap;
    xsm_arena.used = 0;
    xsprof_rankfile_set_table_alloc(xsm_arena_alloc, xsm_arena_release);
    return m;
}

/* The loads are done: the file is cut to the pages used (other processes
 * map it whole), and every entry done[] with a table in it holds it. */
static void xsm_arena_end(xsm_map *m, xsm_loaded *l, size_t n, const unsigned char *done)
{
    if (!m)
        return;
    xsprof_rankfile_set_table_alloc(xsm_malloc_big, free);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (xsm_arena.used + pg - 1) / pg * pg;
    xsm_arena.base = NULL;
    pthread_mutex_lock(&xsm_maps_mu);
    if (len && ftruncate(m->fd, (off_t)len) == 0) {
        munmap(m->base + len, m->len - len);
        m->len = len;
    } else if (len) { /* not cut: kept for our entries, not mapped elsewhere */
        close(m->fd);
        m->fd = -1;
    }
    for (size_t i = 0; i < n && len; i++) {
        const xsprof_rank_data *d = &l[i].d;
        int used = 0;
#define X(a, cnt, ev) used |= d->a && (const unsigned char *)d->a >= m->base && (const unsigned char *)d->a < m->base + m->len;
        XSM_RANK_TABLES(X)
#undef X
        m->users += done[i] && used;
    }
    xsm_map_drop_locked(m); /* when no entry uses it */
    pthread_mutex_unlock(&xsm_maps_mu);
}

/* ---- loading while MPI starts ------------------------------------------ */

struct xsm_early {
    xsm_candidate *c;    /* the candidates the helper works on (owned) */
    unsigned char *want; /* the entries it loads */
    size_t n;
    int rank, size;      /* the division it assumed */
    atomic_uchar *claim; /* shared with the helper: 1 once one of us took entry i */
    int fd;
    pid_t pid;
    uint64_t budget;     /* bytes the loads may take (the own arena's size) */
};

xsm_early *xsm_early_fork(xsm_candidate *c, unsigned char *want, size_t n, int rank, int size, size_t max,
                          uint64_t budget, void (*load)(const xsm_candidate *, xsm_loaded *))
{
    xsm_early *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    *e = (xsm_early){.n = n, .rank = rank, .size = size, .fd = -1, .pid = -1, .budget = budget};
    /* shared, so that the parent can take what the helper has not begun */
    void *cl = mmap(NULL, n + 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (cl != MAP_FAILED)
        e->claim = cl;
    if (!e->claim || (e->fd = memfd_create("xsmerge-early", MFD_CLOEXEC)) < 0) {
        xsm_early_cancel(e);
        return NULL;
    }
    pid_t parent = getpid();
    fflush(NULL); /* nothing buffered may be written twice */
    e->pid = fork();
    if (e->pid == 0) {
        /* the helper dies with its parent (an aborted job kills only the
         * processes the launcher started) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        int bad = 0;
        uint64_t off = 0;
        size_t taken = 0;
        for (size_t i = 0; i < n && !bad && taken < max; i++) {
            if (!want[i] || atomic_exchange(&e->claim[i], 1))
                continue;
            taken++;
            xsm_loaded x;
            memset(&x, 0, sizeof x);
            load(&c[i], &x);
            /* an unreadable file is left to the parent, which says so */
            bad = x.status == 0 && xsm_entry_write(e->fd, &off, i, &x) != 0;
            xsprof_rank_data_free(&x.d);
        }
        _exit(bad ? 1 : 0); /* no exit handlers: they belong to the parent */
    }
    if (e->pid < 0) {
        xsm_early_cancel(e);
        return NULL;
    }
    e->c = c;
    e->want = want;
    return e;
}

int xsm_early_fits(const xsm_early *e, const xsm_candidate *c, const xsm_loaded *l, size_t n, int rank, int size)
{
    if (!e || e->n != n || e->rank != rank || e->size != size)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((l[i].status == 0) != (e->want[i] != 0) || c[i].rank != e->c[i].rank || strcmp(c[i].h5, e->c[i].h5) ||
            strcmp(c[i].xsj, e->c[i].xsj))
            return 0;
    return 1;
}

int xsm_early_finish(xsm_early *e, xsm_loaded *l, size_t n, void (*load)(const xsm_candidate *, xsm_loaded *),
                     void (*step)(void))
{
    unsigned char *done = calloc(n + 1, 1);
    if (!done)
        return -1;
    /* from the end while the helper works from the start, straight into a
     * memory file of ours that the other processes map like the helper's */
    xsm_map *own = xsm_arena_begin(e->budget);
    for (size_t i = n; i-- > 0;) {
        if (l[i].status != 0 || atomic_exchange(&e->claim[i], 1))
            continue;
        load(&e->c[i], &l[i]);
        done[i] = 1;
        if (step)
            step();
    }
    xsm_arena_end(own, l, n, done);
    while (waitpid(e->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    e->pid = -1;
    xsm_entries_take(e->fd, l, n, done, step);
    xsm_load_rest(e->c, l, n, done, load, step);
    free(done);
    xsm_early_cancel(e);
    return 0;
}

void xsm_early_cancel(xsm_early *e)
{
    if (!e)
        return;
    if (e->pid > 0) {
        kill(e->pid, SIGKILL);
        while (waitpid(e->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (e->fd >= 0)
        close(e->fd);
    if (e->claim)
        munmap((void *)e->claim, e->n + 1);
    free(e->c);
    free(e->want);
    free(e);
}
