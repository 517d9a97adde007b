/* merge/emit/place.c — see place.h. Owner: merge/emit. */
#include "merge/emit/place.h"

#include "merge/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Memory that waits comes in chunks this large, aligned for huge pages:
 * 146 MB held in 4 KB pages took 37 000 page faults. */
#define XSM_PLACE_CHUNK ((size_t)8 << 20)
#define XSM_PLACE_ALIGN ((size_t)2 << 20)

/* Bytes [pos, pos + len) of a block, waiting: in memory, or at `soff` of
 * the block's spill file when mem is NULL. */
typedef struct xsm_pchunk {
    struct xsm_pchunk *next;
    uint64_t pos, soff;
    size_t len;
    char *mem;
} xsm_pchunk;

typedef struct xsm_pblock {
    struct xsm_place *pl;
    size_t k;
    FILE *f;
    uint64_t pos;        /* bytes written to the block so far (its writer's) */
    int64_t base;        /* offset of its first byte in the file, -1 unknown */
    int finished;
    xsm_pchunk *head, *tail; /* waiting, in order */
    char *cur;           /* chunk being filled (its writer's) */
    uint64_t cur_pos;
    size_t cur_len;
    int sfd;             /* spill file, -1 none yet */
    uint64_t slen;       /* bytes in it */
    char spath[4096];
} xsm_pblock;

struct xsm_place {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    size_t n;
    uint64_t hold, mem; /* memory that may wait, memory waiting */
    int err;            /* first errno of a failed write */
    char dir[4096];
    size_t tag;
    xsm_pblock *b;
};

static void xsm_place_fail(xsm_place *pl, int e)
{
    pthread_mutex_lock(&pl->mu);
    if (!pl->err)
        pl->err = e ? e : EIO;
    pthread_mutex_unlock(&pl->mu);
}

/* Under the lock: blocks whose predecessor is finished and placed are
 * placed now. */
static void xsm_place_propagate(xsm_place *pl)
{
    for (size_t j = 1; j < pl->n; j++)
        if (pl->b[j].base < 0 && pl->b[j - 1].base >= 0 && pl->b[j - 1].finished)
            pl->b[j].base = pl->b[j - 1].base + (int64_t)pl->b[j - 1].pos;
    pthread_cond_broadcast(&pl->cv);
}

/* Under the lock: append c to b's waiting list. */
static void xsm_place_queue(xsm_pblock *b, xsm_pchunk *c)
{
    c->next = NULL;
    if (b->tail)
        b->tail->next = c;
    else
        b->head = c;
    b->tail = c;
    pthread_cond_broadcast(&b->pl->cv); /* its place may be known: a helper takes it */
}

/* Under the lock: b's chunk being filled joins its waiting list. */
static int xsm_place_queue_cur(xsm_pblock *b)
{
    if (!b->cur)
        return 0;
    xsm_pchunk *c = malloc(sizeof *c);
    if (!c)
        return -1;
    *c = (xsm_pchunk){.pos = b->cur_pos, .len = b->cur_len, .mem = b->cur};
    xsm_place_queue(b, c);
    b->cur = NULL;
    b->cur_len = 0;
    return 0;
}

/* Bytes that find no memory go to the block's spill file, copied into
 * place later (a second write, as all of them were before). */
static int xsm_place_spill(xsm_pblock *b, const char *buf, size_t n)
{
    xsm_place *pl = b->pl;
    if (b->sfd < 0) {
        char name[96];
        snprintf(name, sizeof name, ".trace.pftrace.%zu.%zu", pl->tag, b->k);
        xsm_path(b->spath, sizeof b->spath, pl->dir, name);
        b->sfd = open(b->spath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (b->sfd < 0) {
            b->spath[0] = 0;
            return -1;
        }
    }
    if (xsm_pwrite_full(b->sfd, buf, n, (off_t)b->slen))
        return -1;
    pthread_mutex_lock(&pl->mu);
    xsm_pchunk *t = b->tail;
    int rc = 0;
    if (t && !t->mem && t->pos + t->len == b->pos && t->soff + t->len == b->slen && t->len + n <= XSM_PLACE_CHUNK)
        t->len += n; /* the spill run goes on, in pieces that helpers share */
    else {
        xsm_pchunk *c = malloc(sizeof *c);
        if (c) {
            *c = (xsm_pchunk){.pos = b->pos, .soff = b->slen, .len = n};
            xsm_place_queue(b, c);
        } else
            rc = -1;
    }
    pthread_mutex_unlock(&pl->mu);
    if (!rc) {
        b->slen += n;
        b->pos += n;
    }
    return rc;
}

static ssize_t xsm_place_w(void *cookie, const char *buf, size_t n)
{
    xsm_pblock *b = cookie;
    xsm_place *pl = b->pl;
    pthread_mutex_lock(&pl->mu);
    int64_t base = b->base;
    int bad = base >= 0 && xsm_place_queue_cur(b);
    int fd = pl->fd;
    pthread_mutex_unlock(&pl->mu);
    if (bad) {
        errno = ENOMEM;
        return -1;
    }
    if (base >= 0) { /* placed: straight there */
        if (xsm_pwrite_full(fd, buf, n, (off_t)(base + (int64_t)b->pos))) {
            xsm_place_fail(pl, errno);
            return -1;
        }
        b->pos += n;
        return (ssize_t)n;
    }
    size_t done = 0;
    while (done < n) {
        if (!b->cur) {
            pthread_mutex_lock(&pl->mu);
            int room = pl->mem + XSM_PLACE_CHUNK <= pl->hold;
            if (room)
                pl->mem += XSM_PLACE_CHUNK;
            pthread_mutex_unlock(&pl->mu);
            void *p = NULL;
            if (room && posix_memalign(&p, XSM_PLACE_ALIGN, XSM_PLACE_CHUNK) != 0)
                p = NULL;
            if (!p) {
                if (room) {
                    pthread_mutex_lock(&pl->mu);
                    pl->mem -= XSM_PLACE_CHUNK;
                    pthread_mutex_unlock(&pl->mu);
                }
                if (xsm_place_spill(b, buf + done, n - done)) {
                    xsm_place_fail(pl, errno);
                    return -1;
                }
                return (ssize_t)n;
            }
#ifdef MADV_HUGEPAGE
            madvise(p, XSM_PLACE_CHUNK, MADV_HUGEPAGE); /* a hint: no huge pages is fine */
#endif
            b->cur = p;
            b->cur_pos = b->pos;
            b->cur_len = 0;
        }
        size_t k = n - done < XSM_PLACE_CHUNK - b->cur_len ? n - done : XSM_PLACE_CHUNK - b->cur_len;
        memcpy(b->cur + b->cur_len, buf + done, k);
        b->cur_len += k;
        b->pos += k;
        done += k;
        if (b->cur_len == XSM_PLACE_CHUNK) {
            pthread_mutex_lock(&pl->mu);
            bad = xsm_place_queue_cur(b);
            pthread_mutex_unlock(&pl->mu);
            if (bad) {
                errno = ENOMEM;
                return -1;
            }
        }
    }
    return (ssize_t)n;
}

xsm_place *xsm_place_new(int fd, int64_t at, size_t n, uint64_t hold, const char *dir, size_t tag)
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
    pl->hold = hold;
    pl->tag = tag;
    snprintf(pl->dir, sizeof pl->dir, "%s", dir);
    for (size_t k = 0; k < n; k++)
        pl->b[k] = (xsm_pblock){.pl = pl, .k = k, .base = k == 0 && at >= 0 ? at : -1, .sfd = -1};
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
    pthread_mutex_lock(&pl->mu);
    if (xsm_place_queue_cur(b) && !pl->err)
        pl->err = ENOMEM;
    b->finished = 1;
    xsm_place_propagate(pl);
    pthread_mutex_unlock(&pl->mu);
}

/* Under the lock: a waiting chunk whose place is known, or NULL. */
static xsm_pchunk *xsm_place_take(xsm_place *pl, xsm_pblock **of)
{
    for (size_t k = 0; k < pl->n; k++) {
        xsm_pblock *b = &pl->b[k];
        if (b->base >= 0 && b->head) {
            xsm_pchunk *c = b->head;
            if (!(b->head = c->next))
                b->tail = NULL;
            *of = b;
            return c;
        }
    }
    return NULL;
}

void xsm_place_help(xsm_place *pl)
{
    pthread_mutex_lock(&pl->mu);
    for (;;) {
        xsm_pblock *b;
        xsm_pchunk *c = xsm_place_take(pl, &b);
        if (c) {
            off_t at = (off_t)(b->base + (int64_t)c->pos);
            int fd = pl->fd, sfd = b->sfd;
            pthread_mutex_unlock(&pl->mu);
            int rc = c->mem ? xsm_pwrite_full(fd, c->mem, c->len, at) : xsm_copy_range(sfd, (int64_t)c->soff, fd, at, c->len);
            int e = errno, inmem = c->mem != NULL;
            free(c->mem);
            free(c);
            pthread_mutex_lock(&pl->mu);
            if (inmem)
                pl->mem -= XSM_PLACE_CHUNK;
            if (rc && !pl->err)
                pl->err = e ? e : EIO;
            continue;
        }
        size_t k = 0;
        while (k < pl->n && pl->b[k].finished)
            k++;
        if (k == pl->n)
            break;
        pthread_cond_wait(&pl->cv, &pl->mu);
    }
    pthread_mutex_unlock(&pl->mu);
}

void xsm_place_set(xsm_place *pl, int fd, uint64_t at)
{
    pthread_mutex_lock(&pl->mu);
    pl->fd = fd;
    if (pl->n && pl->b[0].base < 0)
        pl->b[0].base = (int64_t)at;
    xsm_place_propagate(pl);
    pthread_mutex_unlock(&pl->mu);
}

static void *xsm_place_run(void *arg)
{
    xsm_place_help(arg);
    return NULL;
}

void xsm_place_write(xsm_place *pl, int threads)
{
    pthread_t t[8];
    int started = 0;
    for (int i = 1; i < threads && started < 8; i++)
        if (pthread_create(&t[started], NULL, xsm_place_run, pl) == 0)
            started++;
    xsm_place_help(pl);
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

void xsm_place_free(xsm_place *pl)
{
    if (!pl)
        return;
    for (size_t k = 0; k < pl->n; k++) {
        xsm_pblock *b = &pl->b[k];
        if (b->f)
            fclose(b->f);
        free(b->cur);
        for (xsm_pchunk *c = b->head, *nx; c; c = nx) {
            nx = c->next;
            free(c->mem);
            free(c);
        }
        if (b->sfd >= 0)
            close(b->sfd);
        if (b->spath[0])
            unlink(b->spath);
    }
    pthread_cond_destroy(&pl->cv);
    pthread_mutex_destroy(&pl->mu);
    free(pl->b);
    free(pl);
}
