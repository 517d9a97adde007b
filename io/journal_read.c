/* io/journal_read.c — validating journal parser (see journal_read.h).
 * The file is read with pread, never mapped: a journal truncated under us
 * must give a short read, not SIGBUS. Memory stays bounded: one chunk, the
 * string table, the definitions and one block per event table. */
#include "io/journal_read.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/journal.h"
#include "core/record.h"
#include "core/record_pack.h"

/* A chunk bigger than this is not something core writes: reject the header
 * rather than allocate whatever a damaged file asks for. */
#define JR_MAX_CHUNK (256u << 20)
/* A follower hands its rows on in blocks this small: they stay in the
 * cache between being written here and read by the caller (blocks of a
 * rank file's chunk, 384 KB of regions, made the copy into them 7 % of the
 * live reader). */
#define JR_FOLLOW_ROWS 256
#define JR_FOLLOW_PIECE (64u << 10)
/* jr_walk_chunk's *cut when the walk stopped at a damaged record */
#define JR_DAMAGED SIZE_MAX

static const size_t jr_block_rows[XSPROF_IO_T_COUNT] = {
    [XSPROF_IO_T_REGIONS] = 8192, [XSPROF_IO_T_ARGS] = 2048, [XSPROF_IO_T_INSTANTS] = 16384,
    [XSPROF_IO_T_COUNTERS] = 8192, [XSPROF_IO_T_MPI] = 2048, [XSPROF_IO_T_GPU] = 2048,
    [XSPROF_IO_T_MEM] = 8192, [XSPROF_IO_T_CLOCK] = 1024,
};
static const size_t jr_row_size[XSPROF_IO_T_COUNT] = {
    [XSPROF_IO_T_REGIONS] = sizeof(xsprof_io_region), [XSPROF_IO_T_ARGS] = sizeof(xsprof_io_arg),
    [XSPROF_IO_T_INSTANTS] = sizeof(xsprof_io_instant), [XSPROF_IO_T_COUNTERS] = sizeof(xsprof_io_counter),
    [XSPROF_IO_T_MPI] = sizeof(xsprof_io_mpi), [XSPROF_IO_T_GPU] = sizeof(xsprof_io_gpu),
    [XSPROF_IO_T_MEM] = sizeof(xsprof_io_mem), [XSPROF_IO_T_CLOCK] = sizeof(xsprof_io_clock),
};

size_t xsprof_io_table_block_rows(enum xsprof_io_table t) { return t < XSPROF_IO_T_COUNT ? jr_block_rows[t] : 0; }
size_t xsprof_io_table_row_size(enum xsprof_io_table t) { return t < XSPROF_IO_T_COUNT ? jr_row_size[t] : 0; }

typedef struct jr_chunk {
    uint64_t seq;
    uint64_t index;
    uint64_t used;
    uint32_t tid;
} jr_chunk;

typedef struct jr_ctx {
    const char *path;
    int fd;
    uint64_t file_size;
    xsprof_journal_header hdr;
    xsprof_rank_data *out;
    xsprof_journal_stats *st;
    xsprof_io_rows_fn fn;
    void *user;
    char *err;
    size_t errlen;
    /* event blocks */
    unsigned char *block[XSPROF_IO_T_COUNT];
    size_t nblock[XSPROF_IO_T_COUNT];
    size_t block_cap[XSPROF_IO_T_COUNT]; /* rows per block: the rank file's chunk, or JR_FOLLOW_ROWS */
    uint64_t rows[XSPROF_IO_T_COUNT]; /* rows emitted so far: the next row index */
    uint64_t str_off; /* bytes of the string area read so far (a follower reads on from there) */
    /* pending region args of the thread being walked */
    xsprof_rec_arg *pending;
    size_t npending, cpending;
    /* definition capacities */
    size_t cap_strings, cap_threads, cap_comms, cap_members, cap_topo, cap_meta, cap_stacks, cap_frames, cap_modules, cap_samples,
        cap_alloc_stacks;
    /* per row of out->threads: named by a THREAD record in its own chunks */
    unsigned char *own_name;
    size_t cap_own_name;
    /* a COMM record whose members continue in COMM_MORE records */
    int comm_open;
    uint32_t comm_total, comm_tid;
} jr_ctx;

static xsprof_status jr_fail(jr_ctx *c, xsprof_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static xsprof_status jr_fail(jr_ctx *c, xsprof_status s, const char *fmt, ...)
{
    if (c->err && c->errlen && !c->err[0]) {
        int n = snprintf(c->err, c->errlen, "%s: ", c->path);
        if (n >= 0 && (size_t)n < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return s;
}

/* Grow *p (element size `el`) so that it holds at least `need` elements. */
static int jr_grow(void **p, size_t *cap, size_t need, size_t el)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / el)
        return -1;
    void *q = realloc(*p, n * el);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Read exactly len bytes at off, or fewer when the file ends; -1 on error. */
static ssize_t jr_pread(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static void jr_copy_field(char *dst, size_t dstlen, const char *src, size_t srclen)
{
    size_t n = strnlen(src, srclen);
    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static __attribute__((noinline)) xsprof_status jr_flush(jr_ctx *c, enum xsprof_io_table t)
{
    if (!c->nblock[t])
        return XSPROF_OK;
    xsprof_status s = c->fn(c->user, t, c->block[t], c->nblock[t]);
    c->nblock[t] = 0;
    if (s != XSPROF_OK)
        return jr_fail(c, s, "cannot store %s rows", t == XSPROF_IO_T_REGIONS ? "region" : "event");
    return XSPROF_OK;
}

/* The block's next row of table t, filled by the caller, then jr_commit:
 * a row written field by field in place (a row built on the stack and
 * copied was read back with wider loads than its stores, a store
 * forwarding stall: two thirds of jr_record in the live reader). */
static inline void *jr_slot(jr_ctx *c, enum xsprof_io_table t)
{
    return c->block[t] + c->nblock[t] * jr_row_size[t];
}

static inline __attribute__((always_inline)) xsprof_status jr_commit(jr_ctx *c, enum xsprof_io_table t)
{
    c->rows[t]++;
    if (++c->nblock[t] == c->block_cap[t])
        return jr_flush(c, t);
    return XSPROF_OK;
}

/* Inlined where t is a constant, so that the row's copy is a few moves of
 * known size instead of a call to memmove (6 % of the live reader). */
static inline __attribute__((always_inline)) xsprof_status jr_emit(jr_ctx *c, enum xsprof_io_table t,
                                                                   const void *row)
{
    memcpy(jr_slot(c, t), row, jr_row_size[t]);
    return jr_commit(c, t);
}

/* Row of thread `tid` in the threads table, created on first sight. */
static xsprof_io_thread *jr_thread(jr_ctx *c, uint32_t tid)
{
    xsprof_rank_data *d = c->out;
    for (size_t i = 0; i < d->nthreads; i++)
        if (d->threads[i].tid == tid)
            return &d->threads[i];
    if (jr_grow((void **)&d->threads, &c->cap_threads, d->nthreads + 1, sizeof *d->threads))
        return NULL;
    xsprof_io_thread *t = &d->threads[d->nthreads++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->name = UINT32_MAX; /* no THREAD record: unnamed */
    return t;
}

static const char *jr_string(const jr_ctx *c, uint32_t id)
{
    return id < c->out->nstrings ? c->out->strings[id] : NULL;
}

static xsprof_status jr_read_strings(jr_ctx *c)
{
    const xsprof_journal_header *h = &c->hdr;
    uint64_t avail = h->strings_used < h->strings_capacity ? h->strings_used : h->strings_capacity;
    if (h->strings_used > h->strings_capacity)
        c->st->damaged++;
    if (h->strings_offset >= c->file_size)
        avail = 0;
    else if (avail > c->file_size - h->strings_offset)
        avail = c->file_size - h->strings_offset;
    if (avail <= c->str_off)
        return XSPROF_OK;
    avail -= c->str_off;
    unsigned char *buf = malloc((size_t)avail);
    if (!buf)
        return jr_fail(c, XSPROF_ERR_NOMEM, "cannot allocate %llu bytes for the string table",
                       (unsigned long long)avail);
    ssize_t got = jr_pread(c->fd, buf, (size_t)avail, h->strings_offset + c->str_off);
    if (got < 0) {
        free(buf);
        return jr_fail(c, XSPROF_ERR_IO, "cannot read the string table: %s", strerror(errno));
    }
    xsprof_rank_data *d = c->out;
    size_t off = 0, end = (size_t)got;
    /* Ids are dense but not necessarily in order: names interned while the
     * journal opens are appended both by the interning thread and by the
     * flush of earlier names, so an id may come early or twice. Every entry
     * takes at least 8 bytes, which bounds the ids a valid area can hold. */
    uint64_t max_ids = (c->str_off + (uint64_t)end) / 8;
    while (end - off >= 8) {
        uint32_t id, len;
        memcpy(&id, buf + off, 4);
        memcpy(&len, buf + off + 4, 4);
        if (id >= max_ids || len > end - off - 8) { /* torn or damaged entry */
            c->st->damaged++;
            break;
        }
        if (id >= c->cap_strings) {
            size_t old = c->cap_strings;
            if (jr_grow((void **)&d->strings, &c->cap_strings, (size_t)id + 1, sizeof *d->strings)) {
                free(buf);
                return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading strings");
            }
            memset(d->strings + old, 0, (c->cap_strings - old) * sizeof *d->strings);
        }
        /* new, or a hole a follower had filled with "?" and now reads past */
        int fill = !d->strings[id] || !strcmp(d->strings[id], "?");
        if (fill) {
            char *s = strndup((const char *)buf + off + 8, len);
            if (!s) {
                free(buf);
                return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading strings");
            }
            free(d->strings[id]);
            d->strings[id] = s;
            if (id >= d->nstrings)
                d->nstrings = id + 1;
        } else if (strlen(d->strings[id]) != len || memcmp(d->strings[id], buf + off + 8, len) != 0) {
            c->st->damaged++; /* the same id with another text: keep the first */
        }
        size_t step = 8 + (((size_t)len + 3u) & ~(size_t)3u);
        if (step > end - off) /* its padding runs past the end: nothing follows */
            break;
        off += step;
    }
    c->str_off += off;
    /* An id whose entry never made it (the process died in between) reads
     * as unknown, like any id out of range. */
    for (uint32_t i = 0; i < d->nstrings; i++)
        if (!d->strings[i] && !(d->strings[i] = strdup("?"))) {
            free(buf);
            return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading strings");
        }
    free(buf);
    return XSPROF_OK;
}

static int jr_chunk_cmp(const void *a, const void *b)
{
    const jr_chunk *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* Smallest valid size of a record of each type (0: unknown type). */
static uint32_t jr_min_size(uint16_t type)
{
    switch (type) {
    case XSPROF_REC_REGION: return sizeof(xsprof_rec_region);
    case XSPROF_REC_INSTANT: return sizeof(xsprof_rec_instant);
    case XSPROF_REC_COUNTER: return sizeof(xsprof_rec_counter);
    case XSPROF_REC_MPI: return sizeof(xsprof_rec_mpi);
    case XSPROF_REC_MPI_PACKED: return sizeof(xsprof_rec_mpi_packed) + 8; /* mask, op, duration: 3+ bytes */
    case XSPROF_REC_GPU: return sizeof(xsprof_rec_gpu);
    case XSPROF_REC_CLOCK: return sizeof(xsprof_rec_clock);
    case XSPROF_REC_MEM: return sizeof(xsprof_rec_mem);
    case XSPROF_REC_ARG: return sizeof(xsprof_rec_arg);
    case XSPROF_REC_THREAD: return sizeof(xsprof_rec_thread);
    case XSPROF_REC_COMM: return sizeof(xsprof_rec_comm);
    case XSPROF_REC_META: return sizeof(xsprof_rec_meta);
    case XSPROF_REC_DROP: return sizeof(xsprof_rec_drop);
    case XSPROF_REC_TOPO: return sizeof(xsprof_rec_topo);
    case XSPROF_REC_COMM_MORE: return sizeof(xsprof_rec_comm_more) + sizeof(int32_t);
    case XSPROF_REC_STACK: return sizeof(xsprof_rec_stack) + sizeof(uint64_t);
    case XSPROF_REC_MODULE: return sizeof(xsprof_rec_module);
    case XSPROF_REC_SAMPLE: return sizeof(xsprof_rec_sample);
    case XSPROF_REC_ALLOC_STACK: return sizeof(xsprof_rec_alloc_stack);
    default: return 0;
    }
}

/* A completed region: its args are the pending ARG records of its depth.
 * Pending args deeper than it belong to regions that can no longer complete
 * (their REGION record was dropped): discard them. */
static xsprof_status jr_region(jr_ctx *c, uint32_t tid, const xsprof_rec_region *r)
{
    size_t count = 0, keep = 0;
    for (size_t i = 0; i < c->npending; i++) {
        if (c->pending[i].depth == r->depth)
            count++;
    }
    /* More pending than the region declares: the oldest are orphans of a
     * dropped region at the same depth. */
    size_t skip = count > r->nargs ? count - r->nargs : 0;
    size_t nattached = count - skip;
    int64_t first_arg = nattached ? (int64_t)c->rows[XSPROF_IO_T_ARGS] : -1;
    uint64_t region_row = c->rows[XSPROF_IO_T_REGIONS];
    size_t seen = 0;
    for (size_t i = 0; i < c->npending; i++) {
        const xsprof_rec_arg *a = &c->pending[i];
        if (a->depth < r->depth) {
            c->pending[keep++] = *a;
            continue;
        }
        if (a->depth > r->depth || seen++ < skip) {
            c->st->orphan_args++;
            continue;
        }
        xsprof_io_arg ar;
        memset(&ar, 0, sizeof ar);
        ar.region = (int64_t)region_row;
        ar.key = a->key;
        ar.kind = a->kind;
        switch (a->kind) {
        case XSPROF_ARG_INT: ar.i = a->v.i; break;
        case XSPROF_ARG_DOUBLE: ar.d = a->v.d; break;
        case XSPROF_ARG_STRING: ar.s = a->v.s; break;
        default:
            ar.ndims = a->ndims;
            memcpy(ar.dims, a->v.dims, a->ndims * sizeof(int64_t));
            break;
        }
        xsprof_status s = jr_emit(c, XSPROF_IO_T_ARGS, &ar);
        if (s != XSPROF_OK)
            return s;
    }
    c->npending = keep;
    xsprof_io_region *row = jr_slot(c, XSPROF_IO_T_REGIONS);
    row->t_begin = r->t_begin;
    row->t_end = r->t_end;
    row->name = r->name;
    row->thread = tid;
    row->depth = r->depth;
    row->category = r->category;
    row->nargs = (uint32_t)nattached;
    row->args = first_arg;
    return jr_commit(c, XSPROF_IO_T_REGIONS);
}

/* A module's LOADED and GONE records may be on two threads, which the walk
 * reads one after the other: either may come first. Rows are completed
 * (and those never seen loaded dropped) by jr_modules_finish. */
static xsprof_status jr_module(jr_ctx *c, const xsprof_rec_module *r)
{
    xsprof_rank_data *d = c->out;
    xsprof_io_module *m = NULL;
    for (size_t i = 0; i < d->nmodules && !m; i++)
        if (d->modules[i].id == r->id)
            m = &d->modules[i];
    if (!m) {
        if (jr_grow((void **)&d->modules, &c->cap_modules, d->nmodules + 1, sizeof *d->modules))
            return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading modules");
        m = &d->modules[d->nmodules++];
        *m = (xsprof_io_module){.id = r->id, .lo = 0, .hi = 0, .t_unload = XSPROF_IO_NOT_UNLOADED};
    }
    if (r->event == XSPROF_MODULE_GONE) {
        m->t_unload = r->t;
        return XSPROF_OK;
    }
    m->bias = r->bias;
    m->lo = r->lo;
    m->hi = r->hi;
    m->t_load = r->t;
    m->path = r->path;
    m->build_id = r->build_id;
    return XSPROF_OK;
}

static int jr_id_cmp(uint32_t x, uint32_t y) { return x < y ? -1 : (x > y); }
static int jr_stack_cmp(const void *a, const void *b)
{
    return jr_id_cmp(((const xsprof_io_callstack *)a)->id, ((const xsprof_io_callstack *)b)->id);
}
static int jr_module_cmp(const void *a, const void *b)
{
    return jr_id_cmp(((const xsprof_io_module *)a)->id, ((const xsprof_io_module *)b)->id);
}

/* Call stacks and modules in id order, as the rank file holds them; a
 * module whose LOADED record was lost (damage) cannot be used: dropped,
 * and so is a duplicate id. */
static void jr_defs_finish(xsprof_rank_data *d)
{
    size_t k = 0;
    for (size_t i = 0; i < d->nmodules; i++)
        if (d->modules[i].lo < d->modules[i].hi && d->modules[i].t_unload >= d->modules[i].t_load)
            d->modules[k++] = d->modules[i];
    d->nmodules = k;
    if (d->nmodules > 1) /* the arrays are NULL when empty: qsort takes no NULL */
        qsort(d->modules, d->nmodules, sizeof *d->modules, jr_module_cmp);
    if (d->ncallstacks > 1)
        qsort(d->callstacks, d->ncallstacks, sizeof *d->callstacks, jr_stack_cmp);
    k = 0;
    for (size_t i = 0; i < d->ncallstacks; i++)
        if (!k || d->callstacks[i].id != d->callstacks[k - 1].id)
            d->callstacks[k++] = d->callstacks[i];
    d->ncallstacks = k;
}

/* One record whose header was validated; returns 1 when its content is
 * damaged (the walk stops there), 0 when handled, -1 on failure. Inlined
 * into the walk, its only caller: a call per record was 5 % of the live
 * reader. */
static inline __attribute__((always_inline)) int jr_record(jr_ctx *c, uint32_t tid, const unsigned char *p,
                                                           uint32_t size, xsprof_status *fail)
{
    xsprof_rank_data *d = c->out;
    xsprof_rec_hdr h;
    memcpy(&h, p, sizeof h);
    switch (h.type) {
    case XSPROF_REC_REGION: {
        xsprof_rec_region r;
        memcpy(&r, p, sizeof r);
        *fail = jr_region(c, tid, &r);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_ARG: {
        xsprof_rec_arg a;
        memcpy(&a, p, sizeof a);
        if (a.kind < XSPROF_ARG_INT || a.kind > XSPROF_ARG_SHAPE ||
            (a.kind == XSPROF_ARG_SHAPE && a.ndims > XSPROF_ARG_SHAPE_MAX))
            return 1;
        if (jr_grow((void **)&c->pending, &c->cpending, c->npending + 1, sizeof *c->pending)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory holding region arguments");
            return -1;
        }
        c->pending[c->npending++] = a;
        return 0;
    }
    case XSPROF_REC_INSTANT: {
        xsprof_rec_instant r;
        memcpy(&r, p, sizeof r);
        xsprof_io_instant row = {.t = r.t, .name = r.name, .thread = tid};
        *fail = jr_emit(c, XSPROF_IO_T_INSTANTS, &row);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_COUNTER: {
        xsprof_rec_counter r;
        memcpy(&r, p, sizeof r);
        xsprof_io_counter row = {.t = r.t, .value = r.value, .name = r.name, .thread = tid};
        *fail = jr_emit(c, XSPROF_IO_T_COUNTERS, &row);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_MPI:
    case XSPROF_REC_MPI_PACKED: {
        xsprof_rec_mpi r;
        if (h.type == XSPROF_REC_MPI)
            memcpy(&r, p, sizeof r);
        else if (xsprof_rec_mpi_unpack(p, size, &r))
            return 1;
        xsprof_io_mpi *row = jr_slot(c, XSPROF_IO_T_MPI); /* in place: jr_slot */
        row->t_begin = r.t_begin;
        row->t_end = r.t_end;
        row->op = r.op;
        row->thread = tid;
        row->comm = r.comm;
        row->peer = r.peer;
        row->tag = r.tag;
        row->root = r.root;
        row->bytes_sent = r.bytes_sent;
        row->bytes_recv = r.bytes_recv;
        row->request = r.request;
        row->seq = r.seq;
        row->coll_seq = r.coll_seq;
        row->kind = r.kind;
        row->coll = r.coll;
        row->flags = r.flags;
        row->count = r.count;
        row->callsite = r.callsite;
        row->pad = 0;
        *fail = jr_commit(c, XSPROF_IO_T_MPI);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_GPU: {
        xsprof_rec_gpu r;
        memcpy(&r, p, sizeof r);
        xsprof_io_gpu row = {.t_begin = r.t_begin, .t_end = r.t_end, .name = r.name, .kind = r.kind,
                             .device = r.device, .stream = r.stream, .correlation = r.correlation,
                             .context = r.context, .bytes = r.bytes, .shared_mem = r.shared_mem,
                             .registers = r.registers, .thread = r.thread};
        memcpy(row.grid, r.grid, sizeof row.grid);
        memcpy(row.block, r.block, sizeof row.block);
        *fail = jr_emit(c, XSPROF_IO_T_GPU, &row);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_CLOCK: {
        xsprof_rec_clock r;
        memcpy(&r, p, sizeof r);
        xsprof_io_clock row = {.t_local = r.t_local, .offset_ns = r.offset_ns, .rtt_ns = r.rtt_ns, .phase = r.phase};
        *fail = jr_emit(c, XSPROF_IO_T_CLOCK, &row);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_MEM: {
        xsprof_rec_mem r;
        memcpy(&r, p, sizeof r);
        xsprof_io_mem row = {.t = r.t, .ptr = r.ptr, .size = r.size, .thread = tid, .kind = r.kind,
                             .device = r.device};
        *fail = jr_emit(c, XSPROF_IO_T_MEM, &row);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_THREAD: {
        xsprof_rec_thread r;
        memcpy(&r, p, sizeof r);
        xsprof_io_thread *t = jr_thread(c, r.tid);
        size_t row = t ? (size_t)(t - d->threads) : 0, old = c->cap_own_name;
        if (!t || jr_grow((void **)&c->own_name, &c->cap_own_name, row + 1, 1)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading threads");
            return -1;
        }
        if (c->cap_own_name > old)
            memset(c->own_name + old, 0, c->cap_own_name - old);
        /* Chunks are walked thread by thread, not in time order. A THREAD
         * record in another thread's chunk came through core's pending list
         * (made before the journal opened), so it is older than any in the
         * thread's own chunks: it must not override the name given later
         * (xsprof_thread_name after the default "thread N"). */
        int own = r.tid == tid;
        if (own || !c->own_name[row]) {
            t->os_tid = r.os_tid;
            t->name = r.name;
        }
        if (own)
            c->own_name[row] = 1;
        return 0;
    }
    case XSPROF_REC_DROP: {
        xsprof_rec_drop r;
        memcpy(&r, p, sizeof r);
        xsprof_io_thread *t = jr_thread(c, r.tid);
        if (!t) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading threads");
            return -1;
        }
        if (r.dropped > t->dropped) /* cumulative: the last one is the largest */
            t->dropped = r.dropped;
        return 0;
    }
    case XSPROF_REC_COMM: {
        xsprof_rec_comm r;
        memcpy(&r, p, sizeof r);
        /* The members that fit; the rest follow in COMM_MORE records. */
        uint32_t here = (uint32_t)((size - sizeof r) / sizeof(int32_t));
        if (here > r.size)
            here = r.size;
        if (jr_grow((void **)&d->comms, &c->cap_comms, d->ncomms + 1, sizeof *d->comms) ||
            jr_grow((void **)&d->comm_members, &c->cap_members, d->ncomm_members + here, sizeof(int32_t))) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading communicators");
            return -1;
        }
        xsprof_io_comm row = {.id = r.id, .size = here, .name = r.name, .parent = r.parent,
                              .members = d->ncomm_members};
        if (here)
            memcpy(d->comm_members + d->ncomm_members, p + sizeof r, (size_t)here * sizeof(int32_t));
        d->ncomm_members += here;
        d->comms[d->ncomms++] = row;
        c->comm_open = here < r.size;
        c->comm_total = r.size;
        c->comm_tid = tid;
        return 0;
    }
    case XSPROF_REC_COMM_MORE: {
        xsprof_rec_comm_more r;
        memcpy(&r, p, sizeof r);
        xsprof_io_comm *last = d->ncomms ? &d->comms[d->ncomms - 1] : NULL;
        /* Only the continuation of the communicator just read, in order;
         * anything else (its head lost with a damaged chunk) is ignored and
         * that communicator keeps the members read so far. */
        if (!c->comm_open || !last || last->id != r.id || c->comm_tid != tid || r.first != last->size) {
            c->comm_open = 0;
            return 0;
        }
        uint32_t cnt = (uint32_t)((size - sizeof r) / sizeof(int32_t));
        if (cnt > c->comm_total - last->size)
            cnt = c->comm_total - last->size;
        if (jr_grow((void **)&d->comm_members, &c->cap_members, d->ncomm_members + cnt, sizeof(int32_t))) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading communicators");
            return -1;
        }
        memcpy(d->comm_members + d->ncomm_members, p + sizeof r, (size_t)cnt * sizeof(int32_t));
        d->ncomm_members += cnt;
        last->size += cnt;
        c->comm_open = last->size < c->comm_total;
        return 0;
    }
    case XSPROF_REC_META: {
        xsprof_rec_meta r;
        memcpy(&r, p, sizeof r);
        if (jr_grow((void **)&d->meta, &c->cap_meta, d->nmeta + 1, sizeof *d->meta)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading metadata");
            return -1;
        }
        d->meta[d->nmeta++] = (xsprof_io_meta){.key = r.key, .value = r.value};
        const char *k = jr_string(c, r.key), *v = jr_string(c, r.value);
        if (k && v && !strcmp(k, "command"))
            jr_copy_field(d->command, sizeof d->command, v, strlen(v));
        else if (k && v && !strcmp(k, "mpi_version"))
            jr_copy_field(d->mpi_version, sizeof d->mpi_version, v, strlen(v));
        else if (k && v && !strcmp(k, "end_state"))
            jr_copy_field(c->st->meta_end_state, sizeof c->st->meta_end_state, v, strlen(v));
        return 0;
    }
    case XSPROF_REC_STACK: {
        xsprof_rec_stack r;
        memcpy(&r, p, sizeof r);
        if (!r.id || !r.n || r.n > XSPROF_STACK_MAX || size < sizeof r + r.n * sizeof(uint64_t))
            return 1;
        if (jr_grow((void **)&d->callstacks, &c->cap_stacks, d->ncallstacks + 1, sizeof *d->callstacks) ||
            jr_grow((void **)&d->frames, &c->cap_frames, d->nframes + r.n, sizeof *d->frames)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading call stacks");
            return -1;
        }
        d->callstacks[d->ncallstacks++] = (xsprof_io_callstack){.id = r.id, .depth = r.n, .frames = d->nframes};
        memcpy(d->frames + d->nframes, p + sizeof r, r.n * sizeof(uint64_t));
        d->nframes += r.n;
        return 0;
    }
    case XSPROF_REC_MODULE: {
        xsprof_rec_module r;
        memcpy(&r, p, sizeof r);
        if (!r.id || (r.event != XSPROF_MODULE_LOADED && r.event != XSPROF_MODULE_GONE))
            return 1;
        *fail = jr_module(c, &r);
        return *fail ? -1 : 0;
    }
    case XSPROF_REC_SAMPLE: {
        xsprof_rec_sample r;
        memcpy(&r, p, sizeof r);
        if (jr_grow((void **)&d->samples, &c->cap_samples, d->nsamples + 1, sizeof *d->samples)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading samples");
            return -1;
        }
        d->samples[d->nsamples++] = (xsprof_io_sample){.t = r.t, .stack = r.stack, .os_tid = r.os_tid};
        return 0;
    }
    case XSPROF_REC_ALLOC_STACK: {
        xsprof_rec_alloc_stack r;
        memcpy(&r, p, sizeof r);
        if (jr_grow((void **)&d->alloc_stacks, &c->cap_alloc_stacks, d->nalloc_stacks + 1, sizeof *d->alloc_stacks)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading allocation stacks");
            return -1;
        }
        d->alloc_stacks[d->nalloc_stacks++] = (xsprof_io_alloc_stack){.t = r.t, .ptr = r.ptr, .stack = r.stack};
        return 0;
    }
    case XSPROF_REC_TOPO: {
        xsprof_rec_topo r;
        memcpy(&r, p, sizeof r);
        if (jr_grow((void **)&d->topo, &c->cap_topo, d->ntopo + 1, sizeof *d->topo)) {
            *fail = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading topology");
            return -1;
        }
        d->topo[d->ntopo++] = (xsprof_io_topo){.numa_node = r.numa_node, .ncores_host = r.ncores_host,
                                               .cpuset = r.cpuset, .cores = r.cores, .gpus = r.gpus,
                                               .host = r.host};
        return 0;
    }
    default:
        return 1;
    }
}

/* Walk the committed records of one chunk; stops at the first damage. */
static xsprof_status jr_walk_chunk(jr_ctx *c, uint32_t tid, const unsigned char *p, size_t used, size_t *cut)
{
    size_t off = 0;
    while (used - off >= sizeof(xsprof_rec_hdr)) {
        xsprof_rec_hdr h;
        memcpy(&h, p + off, sizeof h);
        uint32_t min = jr_min_size(h.type);
        if (cut && min && h.size >= min && h.size % 8 == 0 && h.size > used - off)
            break; /* the rest of this record comes with the next piece */
        if (!min || h.size < min || h.size % 8 || h.size > used - off) {
            c->st->damaged++;
            if (cut)
                *cut = JR_DAMAGED;
            return XSPROF_OK;
        }
        xsprof_status fail = XSPROF_OK;
        int r = jr_record(c, tid, p + off, h.size, &fail);
        if (r < 0)
            return fail;
        if (r > 0) {
            c->st->damaged++;
            if (cut)
                *cut = JR_DAMAGED;
            return XSPROF_OK;
        }
        off += h.size;
    }
    if (cut)
        *cut = off;
    else if (off != used) /* a partial header: `used` itself is damaged */
        c->st->damaged++;
    return XSPROF_OK;
}

/* Chunks the file holds: a dead process may leave its last chunk shorter
 * than chunk_size. */
static uint64_t jr_nchunks(const jr_ctx *c)
{
    const xsprof_journal_header *h = &c->hdr;
    if (h->chunks_offset >= c->file_size)
        return 0;
    uint64_t n = (c->file_size - h->chunks_offset) / h->chunk_size;
    if ((c->file_size - h->chunks_offset) % h->chunk_size >= sizeof(xsprof_chunk_header))
        n++;
    return n;
}

static xsprof_status jr_read_chunks(jr_ctx *c)
{
    const xsprof_journal_header *h = &c->hdr;
    uint64_t n = jr_nchunks(c);
    jr_chunk *list = NULL;
    size_t nlist = 0, cap = 0;
    xsprof_status s = XSPROF_OK;
    for (uint64_t i = 0; i < n; i++) {
        xsprof_chunk_header ch;
        uint64_t off = h->chunks_offset + i * h->chunk_size;
        ssize_t got = jr_pread(c->fd, &ch, sizeof ch, off);
        if (got < 0) {
            free(list);
            return jr_fail(c, XSPROF_ERR_IO, "cannot read chunk %llu: %s", (unsigned long long)i, strerror(errno));
        }
        if ((size_t)got < sizeof ch)
            break;
        if (ch.magic != XSPROF_CHUNK_MAGIC) {
            /* Never handed out chunks are zero; anything else is garbage. */
            if (ch.magic != 0 || ch.state != 0 || ch.used != 0)
                c->st->damaged++;
            continue;
        }
        if (ch.state == XSPROF_CHUNK_FREE)
            continue;
        if (ch.state != XSPROF_CHUNK_ACTIVE && ch.state != XSPROF_CHUNK_FULL) {
            c->st->damaged++;
            continue;
        }
        uint64_t room = h->chunk_size - sizeof ch;
        if (ch.used > room) {
            c->st->damaged++;
            ch.used = room;
        }
        if (jr_grow((void **)&list, &cap, nlist + 1, sizeof *list)) {
            free(list);
            return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory indexing chunks");
        }
        list[nlist++] = (jr_chunk){.seq = ch.seq, .index = i, .used = ch.used, .tid = ch.tid};
    }
    if (nlist > 1)
        qsort(list, nlist, sizeof *list, jr_chunk_cmp);

    unsigned char *buf = nlist ? malloc(h->chunk_size) : NULL;
    if (nlist && !buf) {
        free(list);
        return jr_fail(c, XSPROF_ERR_NOMEM, "cannot allocate a %u-byte chunk buffer", h->chunk_size);
    }
    for (size_t i = 0; i < nlist && s == XSPROF_OK; i++) {
        const jr_chunk *k = &list[i];
        int first_of_thread = i == 0 || list[i - 1].tid != k->tid;
        if (first_of_thread) {
            c->st->orphan_args += c->npending; /* regions left open by the previous thread */
            c->npending = 0;
            if (!jr_thread(c, k->tid)) {
                s = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading threads");
                break;
            }
        } else if (list[i - 1].seq == k->seq) {
            c->st->damaged++; /* two chunks claim the same place: keep the first */
            continue;
        } else if (list[i - 1].seq + 1 != k->seq) {
            c->st->damaged++; /* a chunk of this thread is missing */
        }
        uint64_t off = h->chunks_offset + k->index * h->chunk_size + sizeof(xsprof_chunk_header);
        ssize_t got = jr_pread(c->fd, buf, (size_t)k->used, off);
        if (got < 0) {
            s = jr_fail(c, XSPROF_ERR_IO, "cannot read chunk %llu: %s", (unsigned long long)k->index,
                        strerror(errno));
            break;
        }
        if ((uint64_t)got < k->used)
            c->st->damaged++;
        s = jr_walk_chunk(c, k->tid, buf, (size_t)got, NULL);
    }
    c->st->orphan_args += c->npending;
    c->npending = 0;
    free(buf);
    free(list);
    return s;
}

static int jr_thread_cmp(const void *a, const void *b)
{
    const xsprof_io_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : (x->tid > y->tid);
}

static xsprof_status jr_check_header(jr_ctx *c)
{
    const xsprof_journal_header *h = &c->hdr;
    if (memcmp(h->magic, XSPROF_JOURNAL_MAGIC, sizeof h->magic) != 0)
        return jr_fail(c, XSPROF_ERR_FORMAT, "not an xsprof journal (bad magic)");
    if (h->version < XSPROF_JOURNAL_VERSION_OLDEST || h->version > XSPROF_JOURNAL_VERSION)
        return jr_fail(c, XSPROF_ERR_VERSION, "journal version %u, this reader reads versions %u to %u", h->version,
                       XSPROF_JOURNAL_VERSION_OLDEST, XSPROF_JOURNAL_VERSION);
    if (h->header_size < sizeof *h || h->header_size > XSPROF_JOURNAL_HEADER_SIZE)
        return jr_fail(c, XSPROF_ERR_FORMAT, "bad journal header size %u", h->header_size);
    if (h->chunk_size < sizeof(xsprof_chunk_header) + 8 || h->chunk_size % 8 || h->chunk_size > JR_MAX_CHUNK)
        return jr_fail(c, XSPROF_ERR_FORMAT, "bad chunk size %u", h->chunk_size);
    if (h->strings_offset < h->header_size || h->strings_capacity > UINT64_MAX / 2 ||
        h->strings_offset > UINT64_MAX / 2 || h->chunks_offset < h->strings_offset + h->strings_capacity ||
        h->chunks_offset > UINT64_MAX / 2)
        return jr_fail(c, XSPROF_ERR_FORMAT, "overlapping or out-of-range journal areas");
    if (h->state < XSPROF_JOURNAL_RUNNING || h->state > XSPROF_JOURNAL_CLOSED)
        return jr_fail(c, XSPROF_ERR_FORMAT, "bad journal state %u", h->state);
    return XSPROF_OK;
}

/* Whether process pid of this host is gone (or a zombie): 1, else 0. */
static int jr_pid_gone(int64_t pid)
{
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
    size_t n = fread(st, 1, sizeof st - 1, f);
    fclose(f);
    st[n] = 0;
    const char *close_paren = strrchr(st, ')'); /* "pid (comm) S ...": comm may hold anything */
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/* A RUNNING journal whose writer marked it alive within three of its
 * periods (and 2 s for clocks of other nodes) belongs to a running process;
 * one whose heartbeat stopped, to a process killed without a handler. On
 * the writer's own host its pid says so at once (a merge right after a
 * kill). */
static int jr_writer_alive(const xsprof_journal_header *h)
{
    if (h->state != XSPROF_JOURNAL_RUNNING || h->alive_realtime_ns <= 0 || h->alive_period_ns <= 0)
        return 0;
    char host[sizeof h->host + 1] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    if (h->pid > 0 && host[0] && !strncmp(host, h->host, sizeof h->host) && jr_pid_gone(h->pid))
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t age = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - h->alive_realtime_ns;
    int64_t slack = 2000000000;
    /* A heartbeat period beyond an hour is no heartbeat (a damaged header
     * must not overflow the bound below). */
    if (h->alive_period_ns > (int64_t)3600 * 1000000000)
        return 0;
    return age > -slack && age < 3 * h->alive_period_ns + slack;
}

/* Per-thread drop counters and the header total are both cumulative;
 * trust whichever saw more. */
static void jr_dropped(xsprof_rank_data *out)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < out->nthreads; i++)
        sum += out->threads[i].dropped;
    if (sum > out->dropped)
        out->dropped = sum;
}

/* The header's state into the stats, its identity into the rank data. */
static void jr_header_out(jr_ctx *c)
{
    const xsprof_journal_header *h = &c->hdr;
    xsprof_journal_stats *stats = c->st;
    xsprof_rank_data *out = c->out;
    stats->state = h->state;
    stats->writer_alive = jr_writer_alive(h);
    stats->signal = h->signal;
    jr_copy_field(stats->header_end_state, sizeof stats->header_end_state, h->end_state,
                  strnlen(h->end_state, sizeof h->end_state));
    out->rank = h->rank;
    out->size = h->size;
    out->pid = h->pid;
    out->start_realtime_ns = h->start_realtime_ns;
    out->start_clock_ns = h->start_clock_ns;
    out->dropped = h->dropped;
    out->anomalies = h->anomalies;
    jr_copy_field(out->job_id, sizeof out->job_id, h->job_id, sizeof h->job_id);
    jr_copy_field(out->host, sizeof out->host, h->host, sizeof h->host);
    jr_copy_field(out->clock_source, sizeof out->clock_source, h->clock_source, sizeof h->clock_source);
    jr_copy_field(out->xsprof_version, sizeof out->xsprof_version, h->xsprof_version, sizeof h->xsprof_version);
}

xsprof_status xsprof_journal_parse(const char *path, xsprof_rank_data *out, xsprof_journal_stats *stats,
                                   xsprof_io_rows_fn fn, void *user, char *err, size_t errlen)
{
    jr_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path ? path : "(null)";
    c.err = err;
    c.errlen = errlen;
    c.out = out;
    c.st = stats;
    c.fn = fn;
    c.user = user;
    c.fd = -1;
    if (!path || !out || !stats || !fn)
        return jr_fail(&c, XSPROF_ERR_INVALID, "invalid argument to the journal parser");
    memset(stats, 0, sizeof *stats);

    c.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block us */
    if (c.fd < 0)
        return jr_fail(&c, XSPROF_ERR_IO, "cannot open: %s", strerror(errno));
    xsprof_status s = XSPROF_OK;
    struct stat sb;
    if (fstat(c.fd, &sb) != 0) {
        s = jr_fail(&c, XSPROF_ERR_IO, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        s = jr_fail(&c, XSPROF_ERR_FORMAT, "not a regular file");
        goto done;
    }
    c.file_size = (uint64_t)sb.st_size;
    ssize_t got = jr_pread(c.fd, &c.hdr, sizeof c.hdr, 0);
    if (got < 0) {
        s = jr_fail(&c, XSPROF_ERR_IO, "cannot read: %s", strerror(errno));
        goto done;
    }
    if ((size_t)got < sizeof c.hdr) {
        s = jr_fail(&c, XSPROF_ERR_FORMAT, "truncated journal header (%zd bytes)", got);
        goto done;
    }
    if ((s = jr_check_header(&c)) != XSPROF_OK)
        goto done;

    jr_header_out(&c);

    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        c.block_cap[t] = jr_block_rows[t];
        c.block[t] = malloc(jr_block_rows[t] * jr_row_size[t]);
        if (!c.block[t]) {
            s = jr_fail(&c, XSPROF_ERR_NOMEM, "out of memory for row blocks");
            goto done;
        }
    }
    if ((s = jr_read_strings(&c)) != XSPROF_OK || (s = jr_read_chunks(&c)) != XSPROF_OK)
        goto done;
    for (int t = 0; t < XSPROF_IO_T_COUNT && s == XSPROF_OK; t++)
        s = jr_flush(&c, (enum xsprof_io_table)t);
    if (s != XSPROF_OK)
        goto done;
    if (out->nthreads > 1)
        qsort(out->threads, out->nthreads, sizeof *out->threads, jr_thread_cmp);
    jr_defs_finish(out);
    jr_dropped(out);
done:
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        free(c.block[t]);
    free(c.pending);
    free(c.own_name);
    if (c.fd >= 0)
        close(c.fd);
    return s;
}

void xsprof_journal_end_state(const xsprof_journal_stats *st, char *buf, size_t len)
{
    if (!buf || !len)
        return;
    if (st->meta_end_state[0]) {
        snprintf(buf, len, "%s", st->meta_end_state);
        return;
    }
    switch (st->state) {
    case XSPROF_JOURNAL_FINALIZED:
    case XSPROF_JOURNAL_CLOSED:
        snprintf(buf, len, "%s", st->header_end_state[0] ? st->header_end_state : "finalized");
        break;
    case XSPROF_JOURNAL_SIGNALED: {
        const char *abbrev = sigabbrev_np(st->signal);
        if (abbrev)
            snprintf(buf, len, "signal %d (SIG%s)", st->signal, abbrev);
        else
            snprintf(buf, len, "signal %d", st->signal);
        break;
    }
    default: /* RUNNING: alive, or died without a handler */
        snprintf(buf, len, "%s", st->writer_alive ? "running" : "killed (no handler ran)");
        break;
    }
}

/* ---- following a journal while its process runs ------------------------- */

struct xsprof_journal_follow {
    jr_ctx c;
    uint64_t *consumed;  /* per chunk index: record bytes already delivered */
    unsigned char *done; /* per chunk index: FULL and delivered */
    size_t cap;
    uint64_t first_open; /* chunks before it are all done */
    unsigned char *buf;  /* one chunk */
    int header_read;
};

xsprof_status xsprof_journal_follow_open(const char *path, xsprof_journal_follow **out, char *err, size_t errlen)
{
    *out = NULL;
    xsprof_journal_follow *f = calloc(1, sizeof *f);
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", path);
        return XSPROF_ERR_NOMEM;
    }
    f->c.path = strdup(path);
    f->c.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    f->c.err = err;
    f->c.errlen = errlen;
    xsprof_status s = XSPROF_OK;
    if (!f->c.path)
        s = XSPROF_ERR_NOMEM;
    else if (f->c.fd < 0)
        s = jr_fail(&f->c, XSPROF_ERR_IO, "cannot open: %s", strerror(errno));
    for (int t = 0; t < XSPROF_IO_T_COUNT && s == XSPROF_OK; t++) {
        f->c.block_cap[t] = jr_block_rows[t] < JR_FOLLOW_ROWS ? jr_block_rows[t] : JR_FOLLOW_ROWS;
        if (!(f->c.block[t] = malloc(f->c.block_cap[t] * jr_row_size[t])))
            s = XSPROF_ERR_NOMEM;
    }
    if (s != XSPROF_OK) {
        xsprof_journal_follow_close(f);
        return s;
    }
    f->c.err = NULL; /* each poll names its own */
    f->c.errlen = 0;
    *out = f;
    return XSPROF_OK;
}

void xsprof_journal_follow_close(xsprof_journal_follow *f)
{
    if (!f)
        return;
    if (f->c.fd >= 0)
        close(f->c.fd);
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        free(f->c.block[t]);
    free(f->c.pending);
    free(f->c.own_name);
    free((char *)f->c.path);
    free(f->consumed);
    free(f->done);
    free(f->buf);
    free(f);
}

/* The chunks with records not delivered yet, in (thread, seq) order. */
static xsprof_status jf_list(xsprof_journal_follow *f, jr_chunk **list, size_t *nlist)
{
    jr_ctx *c = &f->c;
    const xsprof_journal_header *h = &c->hdr;
    *list = NULL;
    *nlist = 0;
    uint64_t n = jr_nchunks(c);
    if (n > f->cap) {
        size_t cap = f->cap, old = f->cap;
        if (jr_grow((void **)&f->consumed, &cap, (size_t)n, sizeof *f->consumed) ||
            jr_grow((void **)&f->done, &old, cap, 1))
            return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory indexing chunks");
        memset(f->consumed + f->cap, 0, (cap - f->cap) * sizeof *f->consumed);
        memset(f->done + f->cap, 0, cap - f->cap);
        f->cap = cap;
    }
    size_t cap = 0;
    for (uint64_t i = f->first_open; i < n; i++) {
        if (f->done[i]) {
            if (i == f->first_open)
                f->first_open++;
            continue;
        }
        xsprof_chunk_header ch;
        ssize_t got = jr_pread(c->fd, &ch, sizeof ch, h->chunks_offset + i * h->chunk_size);
        if (got < 0)
            return jr_fail(c, XSPROF_ERR_IO, "cannot read chunk %llu: %s", (unsigned long long)i, strerror(errno));
        if ((size_t)got < sizeof ch)
            break;
        if (ch.magic != XSPROF_CHUNK_MAGIC || (ch.state != XSPROF_CHUNK_ACTIVE && ch.state != XSPROF_CHUNK_FULL))
            continue; /* not handed out yet (damage is the full parser's to count) */
        uint64_t room = h->chunk_size - sizeof ch;
        if (ch.used > room)
            ch.used = room;
        if (ch.state == XSPROF_CHUNK_FULL && ch.used == f->consumed[i]) {
            f->done[i] = 1;
            if (i == f->first_open)
                f->first_open++;
            continue;
        }
        if (ch.used <= f->consumed[i])
            continue;
        if (jr_grow((void **)list, &cap, *nlist + 1, sizeof **list))
            return jr_fail(c, XSPROF_ERR_NOMEM, "out of memory indexing chunks");
        (*list)[(*nlist)++] = (jr_chunk){.seq = ch.seq, .index = i, .used = ch.used, .tid = ch.tid};
    }
    if (*nlist > 1)
        qsort(*list, *nlist, sizeof **list, jr_chunk_cmp);
    return XSPROF_OK;
}

xsprof_status xsprof_journal_follow_poll(xsprof_journal_follow *f, xsprof_rank_data *out, xsprof_journal_stats *stats,
                                         xsprof_io_rows_fn fn, void *user, char *err, size_t errlen)
{
    jr_ctx *c = &f->c;
    c->err = err;
    c->errlen = errlen;
    c->out = out;
    c->st = stats;
    c->fn = fn;
    c->user = user;
    if (c->err && c->errlen)
        c->err[0] = 0;
    struct stat sb;
    if (fstat(c->fd, &sb) != 0)
        return jr_fail(c, XSPROF_ERR_IO, "cannot stat: %s", strerror(errno));
    c->file_size = (uint64_t)sb.st_size;
    xsprof_journal_header h;
    ssize_t got = jr_pread(c->fd, &h, sizeof h, 0);
    if (got < 0)
        return jr_fail(c, XSPROF_ERR_IO, "cannot read: %s", strerror(errno));
    if ((size_t)got < sizeof h || memcmp(h.magic, XSPROF_JOURNAL_MAGIC, sizeof h.magic) != 0)
        return XSPROF_ERR_STATE; /* the header is written last: not complete yet */
    if (f->header_read && (h.chunk_size != c->hdr.chunk_size || h.chunks_offset != c->hdr.chunks_offset ||
                           h.strings_offset != c->hdr.strings_offset || h.pid != c->hdr.pid))
        return jr_fail(c, XSPROF_ERR_FORMAT, "the journal was replaced while followed");
    c->hdr = h;
    xsprof_status s = jr_check_header(c);
    if (s != XSPROF_OK)
        return s;
    f->header_read = 1;
    jr_header_out(c);
    if (!f->buf && !(f->buf = malloc(h.chunk_size)))
        return jr_fail(c, XSPROF_ERR_NOMEM, "cannot allocate a %u-byte chunk buffer", h.chunk_size);
    if ((s = jr_read_strings(c)) != XSPROF_OK)
        return s;
    jr_chunk *list;
    size_t nlist;
    if ((s = jf_list(f, &list, &nlist)) != XSPROF_OK)
        return s;
    for (size_t i = 0; i < nlist && s == XSPROF_OK; i++) {
        const jr_chunk *k = &list[i];
        uint64_t from = f->consumed[k->index];
        if (!jr_thread(c, k->tid)) {
            s = jr_fail(c, XSPROF_ERR_NOMEM, "out of memory reading threads");
            break;
        }
        c->npending = 0; /* arguments waiting across two reads are not followed */
        uint64_t off = h.chunks_offset + k->index * h.chunk_size + sizeof(xsprof_chunk_header) + from;
        /* read in pieces that stay in the cache while they are walked (the
         * whole new part at once, ~1 MB a rank at each look, went through
         * memory twice); a record cut by a piece's end begins the next */
        uint64_t total = k->used - from, read = 0;
        size_t have = 0; /* bytes at the front of buf not walked yet */
        while (s == XSPROF_OK && read < total) {
            size_t want = total - read < JR_FOLLOW_PIECE ? (size_t)(total - read) : JR_FOLLOW_PIECE;
            got = jr_pread(c->fd, f->buf + have, want, off + read);
            if (got < 0) {
                s = jr_fail(c, XSPROF_ERR_IO, "cannot read chunk %llu: %s", (unsigned long long)k->index,
                            strerror(errno));
                break;
            }
            read += (uint64_t)got;
            have += (size_t)got;
            int last = read == total || (size_t)got < want; /* all of it, or the file ends here */
            size_t walked = have;
            s = jr_walk_chunk(c, k->tid, f->buf, have, last ? NULL : &walked);
            if (walked == JR_DAMAGED) { /* the rest of the chunk's new bytes are skipped, as when read whole */
                read = total;
                break;
            }
            memmove(f->buf, f->buf + walked, have - walked);
            have -= walked;
            if (last)
                break;
        }
        /* records are committed whole: what `used` counts ends on one */
        f->consumed[k->index] = from + read;
    }
    free(list);
    for (int t = 0; t < XSPROF_IO_T_COUNT && s == XSPROF_OK; t++)
        s = jr_flush(c, (enum xsprof_io_table)t);
    jr_dropped(out);
    return s;
}
