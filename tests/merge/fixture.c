/* tests/merge/fixture.c — see fixture.h. Chunks are streamed to the file as
 * they fill, so large benchmark runs need no more than one chunk per thread
 * in memory. */
#include "fixture.h"
#include "io/writer.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XSF_CHUNK (1u << 20)
#define XSF_STRINGS (4u << 20)
#define XSF_MAX_THREADS 64

typedef struct xsf_chunk {
    int used_any;
    uint64_t seq;
    uint64_t used;
    unsigned char buf[XSF_CHUNK];
} xsf_chunk;

struct xsf {
    int fd;
    char path[4096];
    char h5[4096];
    xsprof_journal_header h;
    char *strings;
    size_t strings_used;
    uint32_t nstr;
    char **str;
    xsf_chunk *chunk[XSF_MAX_THREADS];
    uint32_t pending_args[XSF_MAX_THREADS]; /* ARG records waiting for their region */
    uint64_t nchunks;
};

xsf *xsf_create(const char *dir, int32_t rank, int32_t size, const char *job_id, int64_t start_realtime_ns,
                const char *host)
{
    xsf *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    snprintf(f->path, sizeof f->path, "%s/rank-%05d.xsj", dir, (int)rank);
    snprintf(f->h5, sizeof f->h5, "%s/rank-%05d.h5", dir, (int)rank);
    f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    f->strings = calloc(1, XSF_STRINGS);
    if (f->fd < 0 || !f->strings) {
        free(f->strings);
        free(f);
        return NULL;
    }
    xsprof_journal_header *h = &f->h;
    memcpy(h->magic, XSPROF_JOURNAL_MAGIC, 8);
    h->version = XSPROF_JOURNAL_VERSION;
    h->header_size = sizeof *h;
    h->chunk_size = XSF_CHUNK;
    h->state = XSPROF_JOURNAL_RUNNING;
    h->rank = rank;
    h->size = size;
    h->pid = 1000 + rank;
    h->start_realtime_ns = start_realtime_ns;
    h->start_clock_ns = 0;
    h->strings_offset = XSPROF_JOURNAL_HEADER_SIZE;
    h->strings_capacity = XSF_STRINGS;
    h->chunks_offset = XSPROF_JOURNAL_HEADER_SIZE + XSF_STRINGS;
    snprintf(h->job_id, sizeof h->job_id, "%s", job_id ? job_id : "");
    snprintf(h->host, sizeof h->host, "%s", host ? host : "node0");
    snprintf(h->clock_source, sizeof h->clock_source, "CLOCK_MONOTONIC");
    snprintf(h->xsprof_version, sizeof h->xsprof_version, "test");
    xsf_meta(f, "command", "./fixture_app");
    return f;
}

uint32_t xsf_str(xsf *f, const char *s)
{
    for (uint32_t i = 0; i < f->nstr; i++)
        if (strcmp(f->str[i], s) == 0)
            return i;
    char **n = realloc(f->str, (f->nstr + 1) * sizeof *n);
    if (!n)
        abort(); /* test fixture: fail loudly */
    f->str = n;
    f->str[f->nstr] = strdup(s);
    uint32_t len = (uint32_t)strlen(s);
    uint32_t id = f->nstr;
    memcpy(f->strings + f->strings_used, &id, 4);
    memcpy(f->strings + f->strings_used + 4, &len, 4);
    memcpy(f->strings + f->strings_used + 8, s, len);
    f->strings_used += (8 + len + 3) & ~(size_t)3;
    return f->nstr++;
}

static void xsf_flush_chunk(xsf *f, uint32_t tid)
{
    xsf_chunk *c = f->chunk[tid];
    xsprof_chunk_header ch = {XSPROF_CHUNK_MAGIC, XSPROF_CHUNK_FULL, tid, 0, c->seq, c->used, {0}};
    off_t off = (off_t)(f->h.chunks_offset + f->nchunks * XSF_CHUNK);
    memcpy(c->buf, &ch, sizeof ch);
    if (pwrite(f->fd, c->buf, XSF_CHUNK, off) != (ssize_t)XSF_CHUNK)
        abort();
    f->nchunks++;
    c->seq++;
    c->used = 0;
    memset(c->buf, 0, XSF_CHUNK);
}

static void xsf_append(xsf *f, uint32_t tid, const void *rec, size_t size)
{
    if (tid >= XSF_MAX_THREADS)
        abort();
    if (!f->chunk[tid] && !(f->chunk[tid] = calloc(1, sizeof(xsf_chunk))))
        abort();
    xsf_chunk *c = f->chunk[tid];
    if (sizeof(xsprof_chunk_header) + c->used + size > XSF_CHUNK)
        xsf_flush_chunk(f, tid);
    memcpy(c->buf + sizeof(xsprof_chunk_header) + c->used, rec, size);
    c->used += size;
    c->used_any = 1;
}

#define XSF_REC(r, T, type_)                                        \
    do {                                                            \
        (r).h.type = (type_);                                       \
        (r).h.size = xsprof_rec_size(sizeof(T));                    \
    } while (0)

void xsf_thread(xsf *f, uint32_t tid, const char *name)
{
    xsprof_rec_thread r = {0};
    XSF_REC(r, xsprof_rec_thread, XSPROF_REC_THREAD);
    r.tid = tid;
    r.os_tid = 5000 + (int32_t)tid;
    r.name = xsf_str(f, name);
    xsf_append(f, tid, &r, r.h.size);
}

void xsf_comm(xsf *f, uint32_t id, const char *name, uint32_t parent, uint32_t n, const int32_t *members)
{
    /* as core/buffer.c writes it: the members that fit the COMM record, the
     * rest in COMM_MORE records right after */
    unsigned char buf[XSPROF_REC_MAX] = {0};
    uint32_t k = n < XSPROF_COMM_HEAD_MAX ? n : (uint32_t)XSPROF_COMM_HEAD_MAX;
    xsprof_rec_comm r = {0};
    r.h.type = XSPROF_REC_COMM;
    r.h.size = xsprof_rec_size((uint32_t)(sizeof r + k * sizeof(int32_t)));
    r.id = id;
    r.size = n;
    r.name = xsf_str(f, name);
    r.parent = parent;
    memcpy(buf, &r, sizeof r);
    memcpy(buf + sizeof r, members, k * sizeof(int32_t));
    xsf_append(f, 0, buf, r.h.size);
    for (uint32_t first = k; first < n; first += (uint32_t)XSPROF_COMM_MORE_MAX) {
        uint32_t cnt = n - first < XSPROF_COMM_MORE_MAX ? n - first : (uint32_t)XSPROF_COMM_MORE_MAX;
        xsprof_rec_comm_more m = {0};
        memset(buf, 0, sizeof buf);
        m.h.type = XSPROF_REC_COMM_MORE;
        m.h.size = xsprof_rec_size((uint32_t)(sizeof m + cnt * sizeof(int32_t)));
        m.id = id;
        m.first = first;
        memcpy(buf, &m, sizeof m);
        memcpy(buf + sizeof m, members + first, cnt * sizeof(int32_t));
        xsf_append(f, 0, buf, m.h.size);
    }
}

void xsf_meta(xsf *f, const char *key, const char *value)
{
    unsigned char buf[16] = {0};
    xsprof_rec_meta r = {0};
    r.h.type = XSPROF_REC_META;
    r.h.size = 16;
    r.key = xsf_str(f, key);
    r.value = xsf_str(f, value);
    memcpy(buf, &r, sizeof r);
    xsf_append(f, 0, buf, 16);
}

void xsf_clock(xsf *f, uint32_t phase, int64_t t_local, int64_t offset_ns, int64_t rtt_ns)
{
    xsprof_rec_clock r = {0};
    XSF_REC(r, xsprof_rec_clock, XSPROF_REC_CLOCK);
    r.phase = phase;
    r.t_local = t_local;
    r.offset_ns = offset_ns;
    r.rtt_ns = rtt_ns;
    xsf_append(f, 0, &r, r.h.size);
}

void xsf_region(xsf *f, uint32_t tid, const char *name, uint16_t depth, int64_t b, int64_t e)
{
    xsprof_rec_region r = {0};
    XSF_REC(r, xsprof_rec_region, XSPROF_REC_REGION);
    r.depth = depth;
    r.name = xsf_str(f, name);
    r.nargs = f->pending_args[tid % XSF_MAX_THREADS];
    f->pending_args[tid % XSF_MAX_THREADS] = 0;
    r.t_begin = b;
    r.t_end = e;
    xsf_append(f, tid, &r, r.h.size);
}

void xsf_region_arg_int(xsf *f, uint32_t tid, const char *key, uint16_t depth, int64_t v)
{
    xsprof_rec_arg r;
    memset(&r, 0, sizeof r);
    XSF_REC(r, xsprof_rec_arg, XSPROF_REC_ARG);
    r.key = xsf_str(f, key);
    r.kind = XSPROF_ARG_INT;
    r.depth = depth;
    r.v.i = v;
    xsf_append(f, tid, &r, r.h.size);
    f->pending_args[tid % XSF_MAX_THREADS]++;
}

void xsf_instant(xsf *f, uint32_t tid, const char *name, int64_t t)
{
    xsprof_rec_instant r = {0};
    XSF_REC(r, xsprof_rec_instant, XSPROF_REC_INSTANT);
    r.name = xsf_str(f, name);
    r.t = t;
    xsf_append(f, tid, &r, r.h.size);
}

void xsf_counter(xsf *f, uint32_t tid, const char *name, int64_t t, double v)
{
    xsprof_rec_counter r = {0};
    XSF_REC(r, xsprof_rec_counter, XSPROF_REC_COUNTER);
    r.name = xsf_str(f, name);
    r.t = t;
    r.value = v;
    xsf_append(f, tid, &r, r.h.size);
}

void xsf_mpi(xsf *f, uint32_t tid, const char *op, xsprof_rec_mpi m)
{
    XSF_REC(m, xsprof_rec_mpi, XSPROF_REC_MPI);
    m.op = xsf_str(f, op);
    xsf_append(f, tid, &m, m.h.size);
}

void xsf_gpu(xsf *f, uint32_t tid, const char *name, xsprof_rec_gpu g)
{
    XSF_REC(g, xsprof_rec_gpu, XSPROF_REC_GPU);
    g.name = xsf_str(f, name);
    xsf_append(f, tid, &g, g.h.size);
}

void xsf_mem(xsf *f, uint32_t tid, uint16_t kind, int16_t device, int64_t t, uint64_t ptr, uint64_t size)
{
    xsprof_rec_mem r = {0};
    XSF_REC(r, xsprof_rec_mem, XSPROF_REC_MEM);
    r.kind = kind;
    r.device = device;
    r.t = t;
    r.ptr = ptr;
    r.size = size;
    xsf_append(f, tid, &r, r.h.size);
}

int xsf_close(xsf *f, uint32_t state, int to_h5)
{
    for (uint32_t t = 0; t < XSF_MAX_THREADS; t++) {
        if (f->chunk[t] && f->chunk[t]->used_any && f->chunk[t]->used)
            xsf_flush_chunk(f, t);
        free(f->chunk[t]);
    }
    f->h.state = state;
    f->h.strings_used = f->strings_used;
    f->h.nchunks = f->nchunks;
    unsigned char hdr[XSPROF_JOURNAL_HEADER_SIZE] = {0};
    memcpy(hdr, &f->h, sizeof f->h);
    int bad = pwrite(f->fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr ||
              pwrite(f->fd, f->strings, XSF_STRINGS, XSPROF_JOURNAL_HEADER_SIZE) != (ssize_t)XSF_STRINGS;
    close(f->fd);
    if (!bad && to_h5) {
        char err[1024];
        unlink(f->h5);
        if (xsprof_journal_convert(f->path, f->h5, "finalized", err, sizeof err) != XSPROF_OK) {
            fprintf(stderr, "fixture: %s\n", err);
            bad = 1;
        } else {
            unlink(f->path);
        }
    }
    for (uint32_t i = 0; i < f->nstr; i++)
        free(f->str[i]);
    free(f->str);
    free(f->strings);
    free(f);
    return bad ? -1 : 0;
}
