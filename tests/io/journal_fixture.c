/* tests/io/journal_fixture.c — see journal_fixture.h. Everything is kept in
 * memory and written at once; tests damage the file afterwards. */
#include "journal_fixture.h"
#include "core/record_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JFX_MAX_THREADS 64
#define JFX_STRINGS_CAP (64u << 10)

struct jfx {
    xsprof_journal_header hdr;
    uint32_t chunk_size;
    unsigned char strings[JFX_STRINGS_CAP];
    uint64_t strings_used;
    uint32_t nstrings;
    unsigned char *chunks; /* nchunks * chunk_size */
    uint64_t nchunks, cap;
    int64_t cur[JFX_MAX_THREADS];  /* current chunk index per thread, -1 none */
    uint64_t seq[JFX_MAX_THREADS]; /* next seq per thread */
};

static void *jfx_xalloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "journal_fixture: out of memory\n");
        exit(2);
    }
    return q;
}

jfx *jfx_create(uint32_t chunk_size)
{
    jfx *j = jfx_xalloc(NULL, sizeof *j);
    memset(j, 0, sizeof *j);
    j->chunk_size = chunk_size;
    for (int i = 0; i < JFX_MAX_THREADS; i++)
        j->cur[i] = -1;
    xsprof_journal_header *h = &j->hdr;
    memcpy(h->magic, XSPROF_JOURNAL_MAGIC, 8);
    h->version = XSPROF_JOURNAL_VERSION;
    h->header_size = XSPROF_JOURNAL_HEADER_SIZE;
    h->chunk_size = chunk_size;
    h->state = XSPROF_JOURNAL_RUNNING;
    h->rank = 0;
    h->size = 1;
    h->pid = 4242;
    h->strings_offset = XSPROF_JOURNAL_HEADER_SIZE;
    h->strings_capacity = JFX_STRINGS_CAP;
    h->chunks_offset = XSPROF_JOURNAL_HEADER_SIZE + JFX_STRINGS_CAP;
    snprintf(h->clock_source, sizeof h->clock_source, "CLOCK_MONOTONIC");
    snprintf(h->xsprof_version, sizeof h->xsprof_version, "0.1.0");
    snprintf(h->host, sizeof h->host, "fixture-host");
    return j;
}

xsprof_journal_header *jfx_header(jfx *j) { return &j->hdr; }

uint32_t jfx_string(jfx *j, const char *s)
{
    uint32_t id = j->nstrings++;
    jfx_string_entry(j, id, s);
    return id;
}

void jfx_string_entry(jfx *j, uint32_t id, const char *s)
{
    uint32_t len = (uint32_t)strlen(s);
    uint64_t need = 8 + ((len + 3u) & ~3u);
    if (j->strings_used + need > JFX_STRINGS_CAP) {
        fprintf(stderr, "journal_fixture: string area full\n");
        exit(2);
    }
    unsigned char *p = j->strings + j->strings_used;
    memcpy(p, &id, 4);
    memcpy(p + 4, &len, 4);
    memcpy(p + 8, s, len);
    j->strings_used += need;
    j->hdr.strings_used = j->strings_used;
}

static xsprof_chunk_header *jfx_chunk(jfx *j, int64_t i)
{
    return (xsprof_chunk_header *)(j->chunks + (uint64_t)i * j->chunk_size);
}

void jfx_record(jfx *j, uint32_t tid, void *rec, uint32_t raw_size)
{
    uint32_t size = xsprof_rec_size(raw_size);
    xsprof_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    h.size = (uint16_t)size;
    memcpy(rec, &h, sizeof h);
    if (tid >= JFX_MAX_THREADS || size + sizeof(xsprof_chunk_header) > j->chunk_size) {
        fprintf(stderr, "journal_fixture: bad record (tid %u size %u)\n", tid, size);
        exit(2);
    }
    xsprof_chunk_header *c = j->cur[tid] >= 0 ? jfx_chunk(j, j->cur[tid]) : NULL;
    if (!c || c->used + size > j->chunk_size - sizeof *c) {
        if (c)
            c->state = XSPROF_CHUNK_FULL;
        if (j->nchunks == j->cap) {
            j->cap = j->cap ? j->cap * 2 : 16;
            j->chunks = jfx_xalloc(j->chunks, j->cap * j->chunk_size);
        }
        j->cur[tid] = (int64_t)j->nchunks++;
        c = jfx_chunk(j, j->cur[tid]);
        memset(c, 0, j->chunk_size);
        c->magic = XSPROF_CHUNK_MAGIC;
        c->state = XSPROF_CHUNK_ACTIVE;
        c->tid = tid;
        c->seq = j->seq[tid]++;
        j->hdr.nchunks = j->nchunks;
    }
    unsigned char *dst = (unsigned char *)c + sizeof *c + c->used;
    memset(dst, 0, size);
    memcpy(dst, rec, raw_size);
    c->used += size;
}

void jfx_region(jfx *j, uint32_t tid, uint16_t depth, uint32_t name, uint32_t nargs, int64_t tb, int64_t te)
{
    xsprof_rec_region r;
    memset(&r, 0, sizeof r);
    r.h.type = XSPROF_REC_REGION;
    r.depth = depth;
    r.category = XSPROF_CAT_USER;
    r.name = name;
    r.nargs = nargs;
    r.t_begin = tb;
    r.t_end = te;
    jfx_record(j, tid, &r, sizeof r);
}

void jfx_arg_int(jfx *j, uint32_t tid, uint16_t depth, uint32_t key, int64_t v)
{
    xsprof_rec_arg a;
    memset(&a, 0, sizeof a);
    a.h.type = XSPROF_REC_ARG;
    a.key = key;
    a.kind = XSPROF_ARG_INT;
    a.depth = depth;
    a.v.i = v;
    jfx_record(j, tid, &a, sizeof a);
}

uint64_t jfx_nchunks(const jfx *j) { return j->nchunks; }
uint64_t jfx_chunk_offset(const jfx *j, uint64_t i) { return j->hdr.chunks_offset + i * j->chunk_size; }

int jfx_write(jfx *j, const char *path, unsigned free_chunks)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    unsigned char page[XSPROF_JOURNAL_HEADER_SIZE];
    memset(page, 0, sizeof page);
    memcpy(page, &j->hdr, sizeof j->hdr);
    int ok = fwrite(page, 1, sizeof page, f) == sizeof page;
    ok &= fwrite(j->strings, 1, JFX_STRINGS_CAP, f) == JFX_STRINGS_CAP;
    if (j->nchunks)
        ok &= fwrite(j->chunks, j->chunk_size, j->nchunks, f) == j->nchunks;
    unsigned char *zero = calloc(1, j->chunk_size);
    for (unsigned i = 0; zero && i < free_chunks; i++)
        ok &= fwrite(zero, 1, j->chunk_size, f) == j->chunk_size;
    free(zero);
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

void jfx_free(jfx *j)
{
    if (!j)
        return;
    free(j->chunks);
    free(j);
}

/* ---- a mixed journal (see jfx_write_mixed) ------------------------------ */

/* Pseudo-random but reproducible values (the chunks then compress like
 * real ones: partly). */
static uint64_t jfx_rng = 88172645463325252ull;
static uint64_t jfx_rand(void)
{
    jfx_rng ^= jfx_rng << 13;
    jfx_rng ^= jfx_rng >> 7;
    jfx_rng ^= jfx_rng << 17;
    return jfx_rng;
}

static void jfx_mixed_args(jfx *j, uint32_t tid, uint16_t depth, uint32_t key, long i)
{
    xsprof_rec_arg a;
    memset(&a, 0, sizeof a);
    a.h.type = XSPROF_REC_ARG;
    a.key = key;
    a.depth = depth;
    if (i % 3 == 0) {
        a.kind = XSPROF_ARG_SHAPE;
        a.ndims = 1 + (uint32_t)(i % 8);
        for (uint32_t d = 0; d < a.ndims; d++)
            a.v.dims[d] = (int64_t)(jfx_rand() % 4096);
    } else if (i % 3 == 1) {
        a.kind = XSPROF_ARG_DOUBLE;
        a.v.d = (double)(jfx_rand() % 100000) / 7.0;
    } else {
        a.kind = XSPROF_ARG_INT;
        a.v.i = (int64_t)(jfx_rand() % 1000);
    }
    jfx_record(j, tid, &a, sizeof a);
}

static void jfx_mixed_events(jfx *j, uint32_t tid, long i, int64_t t, const uint32_t *s)
{
    if (i % 3 == 0) {
        xsprof_rec_instant r = {.h.type = XSPROF_REC_INSTANT, .name = s[i % 4], .t = t};
        jfx_record(j, tid, &r, sizeof r);
    }
    if (i % 5 == 0) {
        xsprof_rec_counter r = {.h.type = XSPROF_REC_COUNTER, .name = s[4], .t = t, .value = (double)(i % 977)};
        jfx_record(j, tid, &r, sizeof r);
    }
    if (i % 17 == 0) {
        xsprof_rec_mpi r = {.h.type = XSPROF_REC_MPI, .op = s[5], .t_begin = t, .t_end = t + 900, .comm = 0,
                            .peer = (int32_t)(i % 8), .tag = 7, .root = -1, .bytes_sent = (uint64_t)i * 8,
                            .request = (uint64_t)i, .seq = (uint64_t)i / 17, .kind = XSPROF_MPI_ISEND,
                            .flags = 1, .count = 1};
        /* both encodings the reader takes: the fixed one, and the packed
         * one collectors write (core/record_pack.h) */
        unsigned char pk[XSPROF_MPI_PACKED_MAX] __attribute__((aligned(8)));
        if ((i / 17) & 1)
            jfx_record(j, tid, pk, xsprof_rec_mpi_pack(&r, pk));
        else
            jfx_record(j, tid, &r, sizeof r);
    }
    if (i % 29 == 0) {
        xsprof_rec_gpu r = {.h.type = XSPROF_REC_GPU, .name = s[6], .t_begin = t, .t_end = t + 5000,
                            .kind = XSPROF_GPU_KERNEL, .device = 1, .stream = 3, .correlation = (uint32_t)i,
                            .bytes = 4096, .context = 1, .grid = {64, 2, 1}, .block = {256, 1, 1},
                            .shared_mem = 1024, .registers = 32, .thread = tid};
        jfx_record(j, tid, &r, sizeof r);
    }
    if (i % 7 == 0) {
        xsprof_rec_mem r = {.h.type = XSPROF_REC_MEM, .t = t, .ptr = 0x7f0000000000ull + (uint64_t)i * 64,
                            .size = jfx_rand() % 65536, .kind = 1, .device = -1};
        jfx_record(j, tid, &r, sizeof r);
    }
    if (i % 97 == 0) {
        xsprof_rec_clock r;
        memset(&r, 0, sizeof r);
        r.h.type = XSPROF_REC_CLOCK;
        r.t_local = t;
        r.offset_ns = (int64_t)(jfx_rand() % 2000) - 1000;
        r.rtt_ns = 3000;
        r.phase = (uint32_t)(i % 3);
        jfx_record(j, tid, &r, sizeof r);
    }
}

int jfx_write_mixed(const char *path, long nregions)
{
    jfx_rng = 88172645463325252ull;
    jfx *j = jfx_create(1u << 20);
    uint32_t s[8];
    static const char *names[8] = {"solve", "exchange", "io", "step", "residual", "MPI_Isend", "kernel", "k"};
    for (int i = 0; i < 8; i++)
        s[i] = jfx_string(j, names[i]);
    int64_t t = 1000;
    for (long i = 0; i < nregions; i++) {
        uint32_t tid = (uint32_t)(i % 11 == 0);
        int64_t tb = t;
        t += 50 + (int64_t)(jfx_rand() % 3000);
        if (i % 4 == 0)
            jfx_mixed_args(j, tid, 0, s[7], i);
        jfx_region(j, tid, 0, s[i % 4], i % 4 == 0, tb, t);
        jfx_mixed_events(j, tid, i, t, s);
    }
    int rc = jfx_write(j, path, 0);
    jfx_free(j);
    return rc;
}
