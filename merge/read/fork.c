/* merge/read/fork.c — see xsm_read_forked in read.h.
 *
 * Decoding a rank file (HDF5 filters: checksum, inflate, unshuffle) is the
 * largest cost of a serial merge, and the HDF5 library is not thread-safe.
 * So helper processes forked before any file is opened decode a share of
 * the files each and write the loaded entries into an anonymous memory
 * file (memfd): a helper never blocks on the parent, which decodes its own
 * share meanwhile and then reads the helpers' entries back. An entry is
 * exactly what xsm_load_one produced, so the model does not depend on who
 * decoded it. Anything a helper did not deliver is loaded by the parent. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "merge/read/read.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define XSM_FORK_MAX 16
#define XSM_ENTRY_MAGIC 0x78736d656e747279ull /* "xsmentry" */
#define XSM_STR_NULL UINT32_MAX

#define XSM_FORK_ARRAYS(X)                                                                                   \
    X(regions, nregions) X(args, nargs) X(instants, ninstants) X(counters, ncounters) X(mpi, nmpi) X(gpu, ngpu) \
    X(mem, nmem) X(clock, nclock) X(threads, nthreads) X(comms, ncomms) X(comm_members, ncomm_members)        \
    X(topo, ntopo) X(meta, nmeta)

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

static int xsm_read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Entry: magic, index, the xsm_loaded struct (its pointers are meaningless
 * to the reader), every table, then the strings as (u32 length, bytes). */
static int xsm_entry_write(int fd, uint64_t index, const xsm_loaded *l)
{
    uint64_t head[2] = {XSM_ENTRY_MAGIC, index};
    if (xsm_write_all(fd, head, sizeof head) || xsm_write_all(fd, l, sizeof *l))
        return -1;
    const xsprof_rank_data *d = &l->d;
#define X(a, cnt)                                                           \
    if (d->cnt && xsm_write_all(fd, d->a, d->cnt * sizeof *d->a))           \
        return -1;
    XSM_FORK_ARRAYS(X)
#undef X
    for (uint32_t i = 0; i < d->nstrings; i++) {
        uint32_t k = d->strings[i] ? (uint32_t)strlen(d->strings[i]) : XSM_STR_NULL;
        if (xsm_write_all(fd, &k, sizeof k) || (k != XSM_STR_NULL && xsm_write_all(fd, d->strings[i], k)))
            return -1;
    }
    return 0;
}

/* Read one entry into *out (pointers owned by it). Returns its index, or
 * -1 at the end or on damage (out is then empty and safe to free). */
static int64_t xsm_entry_read(int fd, xsm_loaded *out)
{
    uint64_t head[2];
    memset(out, 0, sizeof *out);
    if (xsm_read_all(fd, head, sizeof head) || head[0] != XSM_ENTRY_MAGIC || head[1] > INT64_MAX ||
        xsm_read_all(fd, out, sizeof *out))
        return -1;
    xsprof_rank_data *d = &out->d;
    uint32_t nstrings = d->nstrings;
    d->strings = NULL;
    d->nstrings = 0;
#define X(a, cnt) d->a = NULL;
    XSM_FORK_ARRAYS(X)
#undef X
    int ok = 1;
#define X(a, cnt)                                                                                     \
    if (ok && d->cnt) {                                                                               \
        d->a = malloc(d->cnt * sizeof *d->a);                                                         \
        ok = d->a && xsm_read_all(fd, d->a, d->cnt * sizeof *d->a) == 0;                              \
    }                                                                                                 \
    if (!d->a)                                                                                        \
        d->cnt = 0;
    XSM_FORK_ARRAYS(X)
#undef X
    if (ok && nstrings) {
        d->strings = calloc((size_t)nstrings + 1, sizeof *d->strings);
        ok = d->strings != NULL;
    }
    for (uint32_t i = 0; ok && i < nstrings; i++) {
        uint32_t k;
        ok = xsm_read_all(fd, &k, sizeof k) == 0;
        d->nstrings = i + 1;
        if (!ok || k == XSM_STR_NULL)
            continue;
        ok = (d->strings[i] = malloc((size_t)k + 1)) != NULL && xsm_read_all(fd, d->strings[i], k) == 0;
        if (ok)
            d->strings[i][k] = 0;
    }
    if (!ok) {
        xsprof_rank_data_free(d);
        memset(out, 0, sizeof *out);
        return -1;
    }
    return (int64_t)head[1];
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
            for (size_t i = 0; i < n && !bad; i++) {
                if (l[i].status != 0)
                    continue;
                if (k++ % (size_t)procs != (size_t)h)
                    continue;
                xsm_loaded x = l[i];
                load(&c[i], &x);
                bad = xsm_entry_write(fd[h], i, &x) != 0;
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
        if (lseek(fd[h], 0, SEEK_SET) == 0) {
            /* entries written before a failure are still complete */
            xsm_loaded x;
            int64_t i;
            while ((i = xsm_entry_read(fd[h], &x)) >= 0) {
                if ((size_t)i < n && l[i].status == 0 && !done[i]) {
                    l[i] = x;
                    done[i] = 1;
                    if (step)
                        step();
                } else {
                    xsprof_rank_data_free(&x.d);
                }
            }
        }
        close(fd[h]);
    }
    /* whatever a helper did not deliver */
    for (size_t i = 0; i < n; i++) {
        if (l[i].status != 0 || done[i])
            continue;
        load(&c[i], &l[i]);
        if (step)
            step();
    }
    free(done);
    return 0;
}
