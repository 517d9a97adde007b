/* tests/io/journal_fixture.c — see journal_fixture.h. Everything is kept in
 * memory and written at once; tests damage the file afterwards. */
#include "journal_fixture.h"

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
