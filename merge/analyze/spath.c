/* merge/analyze/spath.c — the critical path of a streamed analysis
 * (xsmerge --stream) by path.c's rules, without the timeline in memory:
 *
 * 1. every wait with a causing rank comes here as (its end, causer) and is
 *    spilled to its waiter's runs: a small heap per rank puts them in time
 *    order (they come in the order of their calls' begins, nearly sorted by
 *    end; one that comes later than the heap can reorder starts a new run);
 * 2. the walk starts at the rank that finishes last and goes back in time,
 *    reading each rank's runs from their end: at a wait's end it moves to
 *    the causing rank (path.c shows the path arrives there at that moment);
 *    its pieces are spilled per rank, in decreasing time;
 * 3. each rank with pieces has its main thread's regions and MPI calls fed
 *    once more, in begin order (xsm_spath_region/mpi), and its pieces are
 *    split over the innermost open frame's name.
 *
 * The spill file holds blocks of SP_BLK records, each with the offset of its
 * run's previous block, so a run is read backward keeping one block; memory
 * is a heap and a block per rank with waits, and a block per run the walk
 * visits, not the trace. A block is one record-sized header and up to
 * SP_BLK records, written in one call and read in one (NetPIPE's streamed
 * merge: 183 000 calls of 1 KB with 128-record blocks, header and records
 * apart; 20 000 now). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "an.h"
#include "core/record.h"

#define SP_BLK 511  /* records per block in the file (with its header: 8 KiB) */
#define SP_HEAP 128 /* waits a rank puts back in order */

typedef struct sp_rec {
    int64_t k, v; /* a wait: its end, the causer; a piece: its end, its begin */
} sp_rec;

typedef struct sp_hdr {
    int64_t prev; /* the run's previous block, -1 none */
    uint32_t n, pad;
} sp_hdr;
_Static_assert(sizeof(sp_hdr) == sizeof(sp_rec), "a block's header takes its first record's place");
#define SP_BLK_BYTES ((SP_BLK + 1) * sizeof(sp_rec))

/* A run read from its end: one block at a time. */
typedef struct sp_reader {
    int64_t next;  /* block to read when buf is used up, -1 none */
    sp_rec *buf;   /* a block: its header, then SP_BLK records */
    uint32_t n;    /* records of buf not yet taken: buf[1..n] */
} sp_reader;

/* One rank's records in the file: runs of blocks. */
typedef struct sp_list {
    int64_t *last; /* each closed run's last block */
    size_t nruns, capruns;
    sp_rec *blk;   /* the open run's block being filled */
    uint32_t nblk;
    int64_t prev;  /* the open run's last written block, -1 none */
    int open;
    sp_rec *heap;  /* waits only: SP_HEAP, min-heap */
    size_t nheap;
    sp_rec out;    /* the last record the open run took */
    int has_out;
    sp_reader *rd; /* the walk's readers, one per run */
} sp_list;

struct xsm_spath {
    const xsm_run *run;
    int fd;
    int64_t end; /* file size */
    sp_list *w;  /* per rank: waits */
    sp_list *p;  /* per rank: the path's pieces */
    int failed;
    int io_errno;       /* the spill file's error (0: none, or out of memory) */
    /* the walk */
    int walked;
    int32_t end_rank;
    int64_t length_ns;
    size_t segments;
    int64_t *rank_ns;
    /* accounting: the rank fed now */
    int32_t cur;
    uint32_t main_thread;
    int32_t *gid;       /* the rank's string id -> names, -2 not looked up */
    sp_reader prd;      /* its pieces, ascending */
    sp_rec piece;
    int has_piece;
    struct {
        int64_t end;
        int32_t g;
    } *st;
    size_t sp, capst;
    int64_t cursor;
    int64_t *name_ns;   /* per name: path time in it */
    size_t cap_name;
    int64_t covered_ns; /* path time inside some frame */
    uint32_t *main_of;  /* per rank: its main thread (set by the walk) */
    xsm_names names;
    FILE *pieces;       /* not NULL: every piece (xsm_cpseg), from the path's end */
};

static int rec_less(const sp_rec *a, const sp_rec *b) { return a->k != b->k ? a->k < b->k : a->v < b->v; }

xsm_spath *xsm_spath_new(const xsm_run *run, int fd)
{
    xsm_spath *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->run = run;
    p->fd = fd;
    p->cur = -1;
    p->end_rank = -1;
    size_t n = run->nranks + 1;
    p->w = calloc(n, sizeof *p->w);
    p->p = calloc(n, sizeof *p->p);
    p->rank_ns = calloc(n, sizeof *p->rank_ns);
    p->main_of = calloc(n, sizeof *p->main_of);
    if (!p->w || !p->p || !p->rank_ns || !p->main_of) {
        xsm_spath_free(p);
        return NULL;
    }
    return p;
}

static void list_free(sp_list *l)
{
    for (size_t i = 0; l->rd && i < l->nruns; i++)
        free(l->rd[i].buf);
    free(l->rd);
    free(l->last);
    free(l->blk);
    free(l->heap);
}

void xsm_spath_free(xsm_spath *p)
{
    if (!p)
        return;
    for (size_t r = 0; r < p->run->nranks; r++) {
        if (p->w)
            list_free(&p->w[r]);
        if (p->p)
            list_free(&p->p[r]);
    }
    free(p->w);
    free(p->p);
    free(p->rank_ns);
    free(p->main_of);
    free(p->gid);
    free(p->prd.buf);
    free(p->st);
    free(p->name_ns);
    xsm_names_free(&p->names);
    free(p);
}

/* ---- the spill file ------------------------------------------------------------ */

/* The open run's block to the end of the file. */
static int list_flush(xsm_spath *p, sp_list *l)
{
    if (!l->nblk)
        return 0;
    sp_hdr h = {l->prev, l->nblk, 0};
    memcpy(&l->blk[0], &h, sizeof h);
    size_t bytes = (1 + (size_t)l->nblk) * sizeof *l->blk;
    if (xsm_pwrite_full(p->fd, l->blk, bytes, (off_t)p->end)) {
        p->io_errno = errno ? errno : EIO;
        return -1;
    }
    l->prev = p->end;
    p->end += (int64_t)bytes;
    l->nblk = 0;
    return 0;
}

/* The next record of the open run (opened when none is). */
static int list_put(xsm_spath *p, sp_list *l, const sp_rec *x)
{
    if (!l->blk && !(l->blk = malloc(SP_BLK_BYTES)))
        return -1;
    if (!l->open) {
        l->open = 1;
        l->prev = -1;
        l->has_out = 0;
    }
    l->blk[1 + l->nblk++] = *x;
    l->out = *x;
    l->has_out = 1;
    return l->nblk == SP_BLK ? list_flush(p, l) : 0;
}

static int list_close(xsm_spath *p, sp_list *l)
{
    if (!l->open)
        return 0;
    if (list_flush(p, l) || xsm_grow((void **)&l->last, &l->capruns, l->nruns, sizeof *l->last))
        return -1;
    l->last[l->nruns++] = l->prev;
    l->open = 0;
    l->has_out = 0;
    free(l->blk); /* a rank's runs are closed once, at the walk (or a break) */
    l->blk = NULL;
    return 0;
}

/* ---- the waits' heaps -------------------------------------------------------- */

static int rec_lessv(const void *a, const void *b) { return rec_less(a, b); }

static sp_rec heap_pop(sp_rec *h, size_t *n)
{
    sp_rec top;
    xsm_bheap_pop(h, n, sizeof *h, &top, rec_lessv);
    return top;
}

/* Everything the heap holds into the open run, which closes. */
static int heap_drain(xsm_spath *p, sp_list *l)
{
    while (l->nheap) {
        sp_rec x = heap_pop(l->heap, &l->nheap);
        if (list_put(p, l, &x))
            return -1;
    }
    return list_close(p, l);
}

int xsm_spath_wait(xsm_spath *p, int32_t waiter, int64_t t_end, int32_t causer)
{
    if (p->failed || p->walked || waiter < 0 || (size_t)waiter >= p->run->nranks)
        return p->failed ? -1 : 0;
    sp_list *l = &p->w[waiter];
    sp_rec x = {t_end, causer};
    if (!l->heap && !(l->heap = malloc(SP_HEAP * sizeof *l->heap)))
        return p->failed = -1;
    if (l->has_out && rec_less(&x, &l->out) && heap_drain(p, l)) /* too late for this run */
        return p->failed = -1;
    xsm_bheap_push(l->heap, &l->nheap, sizeof *l->heap, &x, rec_lessv);
    if (l->nheap == SP_HEAP) {
        sp_rec y = heap_pop(l->heap, &l->nheap);
        if (list_put(p, l, &y))
            return p->failed = -1;
    }
    return 0;
}

/* ---- reading runs backward ----------------------------------------------------- */

/* The block at `off` into buf (SP_BLK_BYTES): one pread of the largest
 * block, as much of it as the file holds; its header into *h. 0, or -1 (a
 * short block: the file was cut under us). */
static int blk_read(int fd, sp_rec *buf, off_t off, sp_hdr *h)
{
    size_t have = 0, need = sizeof *h;
    while (have < need) {
        ssize_t got = pread(fd, (char *)buf + have, SP_BLK_BYTES - have, off + (off_t)have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (!got)
                errno = EIO;
            return -1;
        }
        have += (size_t)got;
        if (have >= sizeof *h) {
            memcpy(h, buf, sizeof *h);
            if (h->n > SP_BLK) {
                errno = EIO;
                return -1;
            }
            need = (1 + (size_t)h->n) * sizeof *buf;
        }
    }
    return 0;
}

/* The reader's next record (the run's latest not yet taken) into *x: 1, 0
 * at the run's start, -1 read error. */
static int rd_peek(xsm_spath *p, sp_reader *d, sp_rec *x)
{
    while (!d->n) {
        if (d->next < 0)
            return 0;
        sp_hdr h;
        if (blk_read(p->fd, d->buf, (off_t)d->next, &h)) {
            p->io_errno = errno ? errno : EIO; /* short: the file was cut under us */
            return -1;
        }
        d->n = h.n;
        d->next = h.prev;
    }
    *x = d->buf[d->n];
    return 1;
}

static int rd_open(sp_reader *d, int64_t last)
{
    if (!d->buf && !(d->buf = malloc(SP_BLK_BYTES)))
        return -1;
    d->next = last;
    d->n = 0;
    return 0;
}

/* The latest wait of rank r ending at or before t (each is taken once; the
 * walk's times only decrease, so skipped ones are never due again): 1 with
 * *w, 0 none, -1 failure. */
static int wait_before(xsm_spath *p, int32_t r, int64_t t, sp_rec *w)
{
    sp_list *l = &p->w[r];
    if (!l->nruns)
        return 0;
    if (!l->rd) {
        if (!(l->rd = calloc(l->nruns, sizeof *l->rd)))
            return -1;
        for (size_t i = 0; i < l->nruns; i++)
            if (rd_open(&l->rd[i], l->last[i]))
                return -1;
    }
    int best = -1;
    sp_rec bx = {0, 0};
    for (size_t i = 0; i < l->nruns; i++) {
        sp_rec x;
        int got;
        while ((got = rd_peek(p, &l->rd[i], &x)) == 1 && x.k > t)
            l->rd[i].n--;
        if (got < 0)
            return -1;
        if (got && (best < 0 || rec_less(&bx, &x))) {
            best = (int)i;
            bx = x;
        }
    }
    if (best < 0)
        return 0;
    l->rd[best].n--;
    *w = bx;
    return 1;
}

/* ---- the walk ------------------------------------------------------------------ */

int xsm_spath_walk(xsm_spath *p, const xsm_sanalysis *sa)
{
    size_t R = p->run->nranks;
    int64_t *first = malloc((R + 1) * sizeof *first), *last = malloc((R + 1) * sizeof *last);
    uint32_t *main = malloc((R + 1) * sizeof *main);
    int rc = -1;
    if (first && last && main) {
        for (size_t r = 0; r < R; r++) {
            xsm_anrank_out v;
            xsm_sanalysis_view(sa, (int32_t)r, &v);
            xsm_an_window(p->run, &v, &first[r], &last[r]);
            main[r] = v.main_thread;
        }
        rc = xsm_spath_walk_at(p, first, last, main);
    }
    free(first);
    free(last);
    free(main);
    if (rc)
        p->failed = -1;
    return rc;
}

int xsm_spath_walk_at(xsm_spath *p, const int64_t *first, const int64_t *last, const uint32_t *main_thread)
{
    if (p->failed)
        return -1;
    size_t R = p->run->nranks;
    for (size_t r = 0; r < R; r++) {
        sp_list *l = &p->w[r];
        if (heap_drain(p, l))
            return p->failed = -1;
        free(l->heap);
        l->heap = NULL;
        p->main_of[r] = main_thread[r];
    }
    p->walked = 1;
    int32_t r = -1;
    for (size_t q = 0; q < R; q++) /* as path.c: the first rank that ends last */
        if (p->run->ranks[q].present && (r < 0 || last[q] > last[r]))
            r = (int32_t)q;
    p->end_rank = r;
    int64_t t = r >= 0 ? last[r] : 0;
    while (r >= 0) {
        sp_rec w;
        int got = wait_before(p, r, t, &w);
        if (got < 0)
            goto fail;
        int64_t from = got ? w.k : first[r];
        if (from > t)
            from = t;
        sp_rec piece = {t, from};
        xsm_cpseg seg = {r, from, t};
        if (list_put(p, &p->p[r], &piece))
            goto fail;
        if (p->pieces && fwrite(&seg, sizeof seg, 1, p->pieces) != 1) {
            p->io_errno = errno ? errno : EIO;
            goto fail;
        }
        p->rank_ns[r] += t - from;
        p->length_ns += t - from;
        p->segments++;
        if (!got)
            break;
        t = from;
        r = (int32_t)w.v;
    }
    for (size_t q = 0; q < R; q++) {
        if (list_close(p, &p->p[q]))
            goto fail;
        sp_list *l = &p->w[q]; /* the waits are done with */
        for (size_t i = 0; l->rd && i < l->nruns; i++)
            free(l->rd[i].buf);
        free(l->rd);
        l->rd = NULL;
    }
    return 0;
fail:
    return p->failed = -1;
}

/* ---- splitting the pieces over names ------------------------------------------- */

int xsm_spath_rank_begin(xsm_spath *p, int32_t r)
{
    if (p->failed || !p->walked || r < 0 || (size_t)r >= p->run->nranks || !p->p[r].nruns)
        return p->failed ? -1 : 0;
    const xsprof_rank_data *d = &p->run->ranks[r].d;
    free(p->gid);
    if (!(p->gid = malloc(((size_t)d->nstrings + 1) * sizeof *p->gid)) || rd_open(&p->prd, p->p[r].last[0]))
        return p->failed = -1;
    for (size_t k = 0; k <= d->nstrings; k++)
        p->gid[k] = -2;
    p->cur = r;
    p->main_thread = p->main_of[r];
    p->sp = 0;
    p->cursor = INT64_MIN;
    int got = rd_peek(p, &p->prd, &p->piece);
    if (got < 0)
        return p->failed = -1;
    p->has_piece = got;
    return 1;
}

/* [s0, s1) of the main thread belongs to name g: its overlap with the
 * pieces (both come in increasing time). */
static int span_add(xsm_spath *p, int64_t s0, int64_t s1, int32_t g)
{
    if (s1 <= s0)
        return 0;
    size_t old = p->cap_name;
    if (xsm_reserve((void **)&p->name_ns, &p->cap_name, (size_t)g + 1, sizeof *p->name_ns))
        return -1;
    memset(p->name_ns + old, 0, (p->cap_name - old) * sizeof *p->name_ns);
    while (p->has_piece) {
        const sp_rec *c = &p->piece; /* v: begin, k: end */
        if (c->v >= s1)
            break;
        int64_t b = c->v > s0 ? c->v : s0, e = c->k < s1 ? c->k : s1;
        if (e > b) {
            p->name_ns[g] += e - b;
            p->covered_ns += e - b;
        }
        if (c->k > s1)
            break;
        p->prd.n--;
        int got = rd_peek(p, &p->prd, &p->piece);
        if (got < 0)
            return -1;
        p->has_piece = got;
    }
    return 0;
}

/* Close the frames ending at or before t0 (all: INT64_MAX). */
static int frames_close(xsm_spath *p, int64_t t0)
{
    while (p->sp && t0 >= p->st[p->sp - 1].end) {
        int64_t end = p->st[p->sp - 1].end;
        if (span_add(p, p->cursor, end, p->st[p->sp - 1].g))
            return -1;
        if (end > p->cursor)
            p->cursor = end;
        p->sp--;
    }
    return 0;
}

/* A frame of the main thread, in begin order (as profile.c's sweep). */
static int frame(xsm_spath *p, int64_t t0, int64_t t1, uint32_t sid)
{
    const xsprof_rank_data *d = &p->run->ranks[p->cur].d;
    uint32_t k = sid < d->nstrings ? sid : d->nstrings;
    if (p->gid[k] == -2)
        p->gid[k] = xsm_names_intern(&p->names, xsprof_rank_data_string(d, sid));
    int32_t g = p->gid[k];
    xsm_run_clip(p->run, &t0, &t1); /* inside --from/--to, as profile.c's timeline */
    if (g < 0 || frames_close(p, t0))
        return p->failed = -1;
    int64_t end = t1 < t0 ? t0 : t1;
    if (p->sp && end > p->st[p->sp - 1].end) /* clip partial overlaps to the parent */
        end = p->st[p->sp - 1].end;
    if (p->sp && span_add(p, p->cursor, t0, p->st[p->sp - 1].g))
        return p->failed = -1;
    if (t0 > p->cursor)
        p->cursor = t0;
    if (xsm_grow((void **)&p->st, &p->capst, p->sp, sizeof *p->st))
        return p->failed = -1;
    p->st[p->sp].end = end;
    p->st[p->sp++].g = g;
    return 0;
}

int xsm_spath_region(xsm_spath *p, int32_t r, const xsprof_io_region *g)
{
    if (p->failed || r != p->cur)
        return p->failed ? -1 : 0;
    if (g->category == XSPROF_CAT_MPI || g->thread != p->main_thread) /* MPI calls come from the mpi table */
        return 0;
    return frame(p, g->t_begin, g->t_end, g->name);
}

int xsm_spath_mpi(xsm_spath *p, int32_t r, const xsprof_io_mpi *m)
{
    if (p->failed || r != p->cur)
        return p->failed ? -1 : 0;
    if (m->kind == XSPROF_MPI_COMPLETION || m->thread != p->main_thread)
        return 0;
    return frame(p, m->t_begin, m->t_end, m->op);
}

int xsm_spath_rank_end(xsm_spath *p, int32_t r)
{
    if (p->failed || r != p->cur)
        return p->failed ? -1 : 0;
    if (frames_close(p, INT64_MAX))
        return p->failed = -1;
    p->cur = -1;
    return 0;
}

int xsm_spath_errno(const xsm_spath *p)
{
    return p->io_errno;
}

void xsm_spath_set_pieces(xsm_spath *p, FILE *f)
{
    p->pieces = f;
}

FILE *xsm_spath_pieces(const xsm_spath *p, uint64_t *n)
{
    *n = p->pieces && p->walked ? p->segments : 0;
    return p->pieces;
}

/* The path's time by name, longest first (per_name[nn]: outside every
 * region). */
static int part_cmp(const void *pa, const void *pb)
{
    const xsm_pathpart *a = pa, *b = pb;
    return a->seconds > b->seconds ? -1 : a->seconds < b->seconds ? 1 : 0;
}

static int path_parts(xsm_an *a, const double *per_name, size_t nn)
{
    size_t np = 0;
    for (size_t i = 0; i <= nn; i++)
        if (per_name[i] > 0)
            np++;
    a->cp = calloc(np + 1, sizeof *a->cp);
    if (!a->cp)
        return -1;
    for (size_t i = 0; i <= nn; i++)
        if (per_name[i] > 0)
            a->cp[a->ncp++] = (xsm_pathpart){i == nn ? -1 : (int32_t)i, per_name[i]};
    qsort(a->cp, a->ncp, sizeof *a->cp, part_cmp);
    return 0;
}

/* ---- into the analysis ------------------------------------------------------- */

int xsm_an_path(xsm_an *a, const xsm_spath *p)
{
    size_t R = a->nranks;
    if (!(a->cp_rank_s = calloc(R + 1, sizeof *a->cp_rank_s)))
        return -1;
    if (!p->walked || p->end_rank < 0)
        return 0;
    a->cp_end_rank = p->end_rank;
    a->cp_segments = p->segments;
    a->cp_length_s = (double)p->length_ns * 1e-9;
    for (size_t r = 0; r < R; r++)
        a->cp_rank_s[r] = (double)p->rank_ns[r] * 1e-9;
    /* path time by name in the analysis's names, the last slot outside every frame */
    size_t n = p->names.n;
    int32_t *idx = malloc((n + 1) * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t g = 0; g < n; g++)
        if ((idx[g] = xsm_names_intern(&a->names, p->names.v[g])) < 0) {
            free(idx);
            return -1;
        }
    size_t nn = a->names.n;
    double *per_name = calloc(nn + 1, sizeof *per_name);
    if (!per_name) {
        free(idx);
        return -1;
    }
    for (size_t g = 0; g < n && g < p->cap_name; g++)
        per_name[idx[g]] += (double)p->name_ns[g] * 1e-9;
    per_name[nn] = (double)(p->length_ns - p->covered_ns) * 1e-9;
    free(idx);
    int rc = path_parts(a, per_name, nn);
    free(per_name);
    return rc;
}
