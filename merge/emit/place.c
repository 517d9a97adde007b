/* merge/emit/place.c — see place.h. Owner: merge/emit. */
#include "merge/emit/place.h"

#include "merge/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Memory that waits comes in chunks this large and is used again once
 * written: fresh memory costs a page fault and a cleared page per 4 KB, and
 * two writers in step hold about one rank's bytes at a time. (Asking for
 * huge pages, MADV_HUGEPAGE, gave no measurable gain, and the kernel may
 * stall to compact memory for them.) */
#define XSM_PLACE_CHUNK ((size_t)4 << 20)

/* Bytes [pos, pos + len) of a block, waiting: in memory, or at `soff` of
 * the spill file when mem is NULL; `at` is their place once known. */
typedef struct xsm_pchunk {
    struct xsm_pchunk *next;
    uint64_t pos, soff, at;
    size_t len;
    char *mem;
} xsm_pchunk;

typedef struct xsm_pblock {
    struct xsm_place *pl;
    FILE *f;
    uint64_t pos;            /* bytes written to the block so far (its writer's) */
    int64_t base;            /* offset of its first byte in the file, -1 unknown */
    int finished;
    xsm_pchunk *head, *tail; /* waiting for the base, in order */
    xsm_pchunk *cur;         /* memory chunk being filled (its writer's) */
} xsm_pblock;

struct xsm_place {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    int chain;                   /* block k starts where k-1 ends */
    size_t n, nfinished, placed; /* chained: blocks [0, placed) have their base */
    uint64_t hold, mem;          /* memory that may wait, memory taken (in use or spare) */
    int err;                     /* first errno of a failed write */
    int writing;                 /* a thread writes to fd (xsm_place_drain) */
    xsm_pchunk *ready, *ready_tail; /* waiting chunks whose place is known */
    xsm_pchunk *spare;              /* written memory chunks, for reuse */
    int sfd;                        /* the spill file, -1 none yet */
    uint64_t slen;
    char spath[4096];
    char dir[4096];
    size_t tag;
    xsm_pblock *b;
};

/* Under the lock. */
static void xsm_place_fail(xsm_place *pl, int e)
{
    if (!pl->err)
        pl->err = e ? e : EIO;
}

static void xsm_pchunk_append(xsm_pchunk **head, xsm_pchunk **tail, xsm_pchunk *c)
{
    c->next = NULL;
    if (*tail)
        (*tail)->next = c;
    else
        *head = c;
    *tail = c;
}

static void xsm_place_ready(xsm_place *pl, xsm_pchunk *c) { xsm_pchunk_append(&pl->ready, &pl->ready_tail, c); }

/* Under the lock: c joins b's waiting bytes, or the ready list when b's
 * place is known. */
static void xsm_place_queue(xsm_pblock *b, xsm_pchunk *c)
{
    xsm_place *pl = b->pl;
    if (b->base >= 0) {
        c->at = (uint64_t)b->base + c->pos;
        xsm_place_ready(pl, c);
        pthread_cond_broadcast(&pl->cv);
        return;
    }
    xsm_pchunk_append(&b->head, &b->tail, c);
}

/* Under the lock: block b gets its place; its waiting bytes become ready. */
static void xsm_place_base(xsm_place *pl, xsm_pblock *b, int64_t base)
{
    xsm_pchunk *c = b->head, *nx;
    b->base = base;
    b->head = b->tail = NULL;
    for (; c; c = nx) {
        nx = c->next;
        xsm_place_queue(b, c); /* placed now: to the ready list */
    }
    pthread_cond_broadcast(&pl->cv);
}

/* Under the lock: blocks whose predecessor is finished get their place
 * (chained blocks only: the others get theirs from xsm_place_set_base). */
static void xsm_place_propagate(xsm_place *pl)
{
    while (pl->chain && pl->placed < pl->n) {
        xsm_pblock *b = &pl->b[pl->placed];
        if (pl->placed > 0) {
            const xsm_pblock *p = b - 1;
            if (!p->finished)
                break;
            xsm_place_base(pl, b, p->base + (int64_t)p->pos);
        } else if (b->base < 0)
            break;
        else
            xsm_place_base(pl, b, b->base);
        pl->placed++;
    }
    pthread_cond_broadcast(&pl->cv);
}

/* The writer (pl->writing) writes ready chunks until none is left. Takes
 * and returns with the lock held. */
static void xsm_place_write_ready(xsm_place *pl)
{
    xsm_pchunk *c;
    while ((c = pl->ready)) {
        if (!(pl->ready = c->next))
            pl->ready_tail = NULL;
        int fd = pl->fd, sfd = pl->sfd;
        pthread_mutex_unlock(&pl->mu);
        int rc = c->mem ? xsm_pwrite_full(fd, c->mem, c->len, (off_t)c->at)
                        : xsm_copy_range(sfd, (int64_t)c->soff, fd, (int64_t)c->at, c->len);
        int e = errno;
        pthread_mutex_lock(&pl->mu);
        if (rc)
            xsm_place_fail(pl, e);
        if (c->mem) { /* spare for the next bytes that wait */
            c->next = pl->spare;
            pl->spare = c;
        } else
            free(c);
    }
}

/* Write ready chunks until none is left, one writer at a time: a second
 * write to the same file waits for the first inside the kernel (the
 * inode's lock, spun on: 4 % of a serial merge's CPU on tmpfs), so while
 * one writes, the others queue and the writer takes their chunks too.
 * With `wait`, also wait for the blocks still being written and write
 * theirs, until all are finished. Takes and returns with the lock held. */
static void xsm_place_drain(xsm_place *pl, int wait)
{
    for (;;) {
        if (pl->ready && !pl->writing) {
            pl->writing = 1;
            xsm_place_write_ready(pl);
            pl->writing = 0;
            pthread_cond_broadcast(&pl->cv);
            continue;
        }
        if (!wait || (!pl->ready && pl->nfinished == pl->n))
            return;
        pthread_cond_wait(&pl->cv, &pl->mu);
    }
}

/* Under the lock: a memory chunk for b's next bytes (a spare one, or a
 * new one within the hold), or NULL. */
static xsm_pchunk *xsm_place_chunk(xsm_place *pl)
{
    xsm_pchunk *c = pl->spare;
    if (c) {
        pl->spare = c->next;
        c->next = NULL;
        return c;
    }
    if (pl->mem + XSM_PLACE_CHUNK > pl->hold || !(c = calloc(1, sizeof *c)))
        return NULL;
    if (!(c->mem = malloc(XSM_PLACE_CHUNK))) {
        free(c);
        return NULL;
    }
    pl->mem += XSM_PLACE_CHUNK;
    return c;
}

/* Bytes that find no memory go to the spill file, copied into place
 * later (a second write, as all of them were before). */
static int xsm_place_spill(xsm_pblock *b, const char *buf, size_t n)
{
    xsm_place *pl = b->pl;
    pthread_mutex_lock(&pl->mu);
    if (pl->sfd < 0) {
        char name[96];
        snprintf(name, sizeof name, ".trace.pftrace.%zu", pl->tag);
        xsm_path(pl->spath, sizeof pl->spath, pl->dir, name);
        pl->sfd = open(pl->spath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (pl->sfd < 0)
            pl->spath[0] = 0;
    }
    int sfd = pl->sfd;
    uint64_t soff = pl->slen;
    xsm_pchunk *c = sfd >= 0 ? calloc(1, sizeof *c) : NULL;
    if (c)
        pl->slen += n;
    pthread_mutex_unlock(&pl->mu);
    if (!c || xsm_pwrite_full(sfd, buf, n, (off_t)soff)) {
        free(c);
        return -1;
    }
    *c = (xsm_pchunk){.pos = b->pos, .soff = soff, .len = n};
    b->pos += n;
    pthread_mutex_lock(&pl->mu);
    xsm_place_queue(b, c);
    pthread_mutex_unlock(&pl->mu);
    return 0;
}

/* A write of the stream failed (errno says why): kept for the caller's
 * message, and 0 bytes written for the stream. Not -1: fopencookie(3) says
 * a write function must not return a negative value, and glibc takes -1
 * for SIZE_MAX bytes written, then copies on from past the end of the
 * caller's buffer (a crash under mpirun on a full disk, seen in session 13
 * when that buffer ended at the top of the heap). */
static ssize_t xsm_place_w_failed(xsm_place *pl)
{
    int e = errno;
    pthread_mutex_lock(&pl->mu);
    xsm_place_fail(pl, e);
    pthread_mutex_unlock(&pl->mu);
    errno = e;
    return 0;
}

/* Block b is placed: its bytes go straight to their place, or when
 * another thread is writing, a copy of them joins the ready chunks (its
 * writer takes them): a copy costs less than waiting in the kernel. */
static ssize_t xsm_place_w_placed(xsm_pblock *b, const char *buf, size_t n)
{
    xsm_place *pl = b->pl;
    pthread_mutex_lock(&pl->mu);
    if (b->cur) {
        xsm_place_queue(b, b->cur);
        b->cur = NULL;
    }
    xsm_pchunk *c = pl->writing && n <= XSM_PLACE_CHUNK ? xsm_place_chunk(pl) : NULL;
    if (c) {
        pthread_mutex_unlock(&pl->mu);
        memcpy(c->mem, buf, n);
        *c = (xsm_pchunk){.pos = b->pos, .len = n, .mem = c->mem};
        b->pos += n;
        pthread_mutex_lock(&pl->mu);
        xsm_place_queue(b, c);
        xsm_place_drain(pl, 0); /* the writer may have finished meanwhile */
        pthread_mutex_unlock(&pl->mu);
        return (ssize_t)n;
    }
    while (pl->writing)
        pthread_cond_wait(&pl->cv, &pl->mu);
    pl->writing = 1;
    xsm_place_write_ready(pl); /* what waited (mostly this block's) first: its memory is reused */
    int fd = pl->fd;
    int64_t at = b->base + (int64_t)b->pos;
    pthread_mutex_unlock(&pl->mu);
    int rc = xsm_pwrite_full(fd, buf, n, (off_t)at), e = errno;
    pthread_mutex_lock(&pl->mu);
    xsm_place_write_ready(pl); /* copies queued while this wrote */
    pl->writing = 0;
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    if (rc) {
        errno = e;
        return xsm_place_w_failed(pl);
    }
    b->pos += n;
    return (ssize_t)n;
}

static ssize_t xsm_place_w(void *cookie, const char *buf, size_t n)
{
    xsm_pblock *b = cookie;
    xsm_place *pl = b->pl;
    pthread_mutex_lock(&pl->mu);
    int64_t base = b->base;
    pthread_mutex_unlock(&pl->mu);
    if (base >= 0)
        return xsm_place_w_placed(b, buf, n);
    for (size_t done = 0; done < n;) {
        if (!b->cur) {
            pthread_mutex_lock(&pl->mu);
            xsm_pchunk *c = xsm_place_chunk(pl);
            pthread_mutex_unlock(&pl->mu);
            if (!c) {
                return xsm_place_spill(b, buf + done, n - done) ? xsm_place_w_failed(pl) : (ssize_t)n;
            }
            c->pos = b->pos;
            c->len = 0;
            b->cur = c;
        }
        xsm_pchunk *c = b->cur;
        size_t k = n - done < XSM_PLACE_CHUNK - c->len ? n - done : XSM_PLACE_CHUNK - c->len;
        memcpy(c->mem + c->len, buf + done, k);
        c->len += k;
        b->pos += k;
        done += k;
        if (c->len == XSM_PLACE_CHUNK) {
            pthread_mutex_lock(&pl->mu);
            xsm_place_queue(b, c);
            pthread_mutex_unlock(&pl->mu);
            b->cur = NULL;
        }
    }
    return (ssize_t)n;
}

xsm_place *xsm_place_new(int fd, int64_t at, size_t n, int chain, uint64_t hold, const char *dir, size_t tag)
{
    xsm_place *pl = calloc(1, sizeof *pl);
    if (!pl || !(pl->b = calloc(n ? n : 1, sizeof *pl->b))) {
        free(pl);
        return NULL;
    }
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv, NULL);
    pl->fd = fd;
    pl->n = n;
    pl->chain = chain;
    pl->hold = hold;
    pl->tag = tag;
    pl->sfd = -1;
    snprintf(pl->dir, sizeof pl->dir, "%s", dir);
    for (size_t k = 0; k < n; k++)
        pl->b[k] = (xsm_pblock){.pl = pl, .base = k == 0 && at >= 0 ? at : -1};
    pthread_mutex_lock(&pl->mu);
    xsm_place_propagate(pl);
    pthread_mutex_unlock(&pl->mu);
    return pl;
}

FILE *xsm_place_file(xsm_place *pl, size_t k)
{
    xsm_pblock *b = &pl->b[k];
    if (!b->f) {
        b->f = fopencookie(b, "w", (cookie_io_functions_t){.write = xsm_place_w});
        if (b->f)
            setvbuf(b->f, NULL, _IONBF, 0); /* the writers hand over 1 MB at a time */
    }
    return b->f;
}

void xsm_place_finish(xsm_place *pl, size_t k)
{
    xsm_pblock *b = &pl->b[k];
    if (b->f) {
        fclose(b->f); /* unbuffered: nothing left to write */
        b->f = NULL;
    }
    pthread_mutex_lock(&pl->mu);
    if (b->cur) {
        xsm_place_queue(b, b->cur);
        b->cur = NULL;
    }
    b->finished = 1;
    pl->nfinished++;
    xsm_place_propagate(pl);
    pthread_mutex_unlock(&pl->mu);
}

void xsm_place_help(xsm_place *pl, int wait)
{
    pthread_mutex_lock(&pl->mu);
    xsm_place_drain(pl, wait);
    pthread_mutex_unlock(&pl->mu);
}

void xsm_place_set_base(xsm_place *pl, size_t k, uint64_t at)
{
    pthread_mutex_lock(&pl->mu);
    if (pl->b[k].base < 0)
        xsm_place_base(pl, &pl->b[k], (int64_t)at);
    xsm_place_propagate(pl); /* chained: the blocks after it */
    pthread_mutex_unlock(&pl->mu);
}

int xsm_place_end(xsm_place *pl, size_t k, uint64_t *end)
{
    pthread_mutex_lock(&pl->mu);
    const xsm_pblock *b = &pl->b[k];
    int known = b->finished && b->base >= 0;
    if (known)
        *end = (uint64_t)b->base + b->pos;
    pthread_mutex_unlock(&pl->mu);
    return known;
}

static void *xsm_place_run(void *arg)
{
    xsm_place_help(arg, 1);
    return NULL;
}

void xsm_place_write(xsm_place *pl, int threads)
{
    pthread_t t[8];
    int started = 0;
    for (int i = 1; i < threads && started < 8; i++)
        if (pthread_create(&t[started], NULL, xsm_place_run, pl) == 0)
            started++;
    xsm_place_help(pl, 1);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

uint64_t xsm_place_size(const xsm_place *pl)
{
    uint64_t n = 0;
    for (size_t k = 0; k < pl->n; k++)
        n += pl->b[k].pos;
    return n;
}

int xsm_place_error(const xsm_place *pl) { return pl->err; }

static void xsm_place_free_list(xsm_pchunk *c)
{
    for (xsm_pchunk *nx; c; c = nx) {
        nx = c->next;
        free(c->mem);
        free(c);
    }
}

void xsm_place_free(xsm_place *pl)
{
    if (!pl)
        return;
    for (size_t k = 0; k < pl->n; k++) {
        xsm_pblock *b = &pl->b[k];
        if (b->f)
            fclose(b->f);
        if (b->cur)
            xsm_place_free_list(b->cur);
        xsm_place_free_list(b->head);
    }
    xsm_place_free_list(pl->ready);
    xsm_place_free_list(pl->spare);
    if (pl->sfd >= 0)
        close(pl->sfd);
    if (pl->spath[0])
        unlink(pl->spath);
    pthread_cond_destroy(&pl->cv);
    pthread_mutex_destroy(&pl->mu);
    free(pl->b);
    free(pl);
}
