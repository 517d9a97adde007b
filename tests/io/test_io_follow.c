/* tests/io/test_io_follow.c — following a journal (xsmerge --live) delivers
 * the rows parsing it whole delivers: in one poll (read in pieces that cut
 * records), and in polls between which its chunks grow (each chunk's
 * `used` moved on record by record). Region arguments are left out of the
 * comparison: the follower does not carry them from one chunk, or poll, to
 * the next (journal_read.h), and the live view does not show them. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/journal_read.h"
#include "io_check.h"
#include "journal_fixture.h"

typedef struct rows {
    unsigned char *v[XSPROF_IO_T_COUNT];
    size_t n[XSPROF_IO_T_COUNT];   /* bytes */
    size_t cap[XSPROF_IO_T_COUNT]; /* bytes allocated */
} rows;

/* Bytes of a row of table t that hold data: the rest is the struct's tail
 * padding (clock and GPU rows), whose bytes the reader leaves undefined. */
static size_t row_data(enum xsprof_io_table t)
{
    switch (t) {
    case XSPROF_IO_T_CLOCK: return offsetof(xsprof_io_clock, phase) + sizeof(uint32_t);
    case XSPROF_IO_T_GPU: return offsetof(xsprof_io_gpu, thread) + sizeof(uint32_t);
    default: return xsprof_io_table_row_size(t);
    }
}

static xsprof_status take(void *user, enum xsprof_io_table t, const void *p, size_t n)
{
    rows *r = user;
    size_t sz = xsprof_io_table_row_size(t), b = n * sz, data = row_data(t);
    unsigned char *v = r->v[t];
    if (r->n[t] + b + 1 > r->cap[t]) { /* doubling: a copy per block was quadratic (minutes under ASan) */
        size_t cap = r->cap[t] ? 2 * r->cap[t] : 4096;
        while (cap < r->n[t] + b + 1)
            cap *= 2;
        if (!(v = realloc(r->v[t], cap)))
            return XSPROF_ERR_NOMEM;
        r->cap[t] = cap;
    }
    memcpy(v + r->n[t], p, b);
    for (size_t i = 0; data < sz && i < n; i++) /* compared byte for byte: padding zeroed */
        memset(v + r->n[t] + i * sz + data, 0, sz - data);
    r->v[t] = v;
    r->n[t] += b;
    return XSPROF_OK;
}

static void rows_free(rows *r)
{
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        free(r->v[t]);
}

/* Table t's rows in a canonical order (polls interleave the threads'
 * rows, a whole parse takes the threads one after the other), regions
 * without their arguments' columns (arguments split across two polls are
 * not delivered: journal_read.h). */
static size_t row_size;
static int row_cmp(const void *x, const void *y) { return memcmp(x, y, row_size); }
static void canon(rows *r, int t)
{
    row_size = xsprof_io_table_row_size((enum xsprof_io_table)t);
    size_t n = r->n[t] / row_size;
    if (t == XSPROF_IO_T_REGIONS)
        for (size_t i = 0; i < n; i++) {
            xsprof_io_region *g = (xsprof_io_region *)(void *)r->v[t] + i;
            g->nargs = 0;
            g->args = 0;
        }
    qsort(r->v[t], n, row_size, row_cmp);
}

/* The chunks' headers and, per chunk, its record boundaries. */
typedef struct chunkmap {
    uint64_t off;   /* file offset of the chunk */
    uint64_t used;  /* its committed bytes in the finished file */
    uint32_t state; /* and its state there */
    uint64_t *ends; /* record ends, in bytes after the header */
    size_t nends;
} chunkmap;

static size_t map_chunks(const unsigned char *file, size_t len, chunkmap **out)
{
    xsprof_journal_header h;
    memcpy(&h, file, sizeof h);
    size_t n = 0;
    chunkmap *m = NULL;
    for (uint64_t off = h.chunks_offset; off + h.chunk_size <= len; off += h.chunk_size) {
        xsprof_chunk_header c;
        memcpy(&c, file + off, sizeof c);
        if (c.magic != XSPROF_CHUNK_MAGIC)
            continue;
        m = realloc(m, (n + 1) * sizeof *m);
        chunkmap *k = &m[n++];
        *k = (chunkmap){off, c.used, c.state, NULL, 0};
        /* counted first, then one array: a realloc per record was
         * quadratic (minutes under ASan) */
        for (int fill = 0; fill < 2; fill++) {
            if (fill && !(k->ends = malloc((k->nends + 1) * sizeof *k->ends)))
                break;
            k->nends = 0;
            for (uint64_t p = 0; p < c.used;) {
                xsprof_rec_hdr r;
                memcpy(&r, file + off + sizeof c + p, sizeof r);
                p += r.size;
                if (fill)
                    k->ends[k->nends] = p;
                k->nends++;
            }
        }
    }
    *out = m;
    return n;
}

/* Chunk k as its writer leaves it with `used` bytes committed: still
 * ACTIVE until it has all of them. */
static void set_used(int fd, const chunkmap *k, uint64_t used)
{
    xsprof_chunk_header c;
    CHECK(pread(fd, &c, sizeof c, (off_t)k->off) == (ssize_t)sizeof c, "chunk header");
    c.used = used;
    c.state = used == k->used ? k->state : XSPROF_CHUNK_ACTIVE;
    CHECK(pwrite(fd, &c, sizeof c, (off_t)k->off) == (ssize_t)sizeof c, "chunk header");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    const char *whole = io_check_path(dir, "follow-whole.xsj"), *grow = io_check_path(dir, "follow-grow.xsj");
    CHECK(jfx_write_mixed(whole, 150000) == 0, "fixture");

    /* parsed whole */
    rows a = {0};
    xsprof_rank_data d;
    memset(&d, 0, sizeof d);
    xsprof_journal_stats st;
    memset(&st, 0, sizeof st);
    char err[512];
    CHECK(xsprof_journal_parse(whole, &d, &st, take, &a, err, sizeof err) == XSPROF_OK, "parse: %s", err);
    xsprof_rank_data_free(&d);
    CHECK(a.n[XSPROF_IO_T_REGIONS] && a.n[XSPROF_IO_T_MPI] && a.n[XSPROF_IO_T_ARGS], "the fixture has rows");

    /* followed: one poll takes it all, in the same order */
    rows b = {0};
    xsprof_journal_follow *f = NULL;
    memset(&d, 0, sizeof d);
    memset(&st, 0, sizeof st);
    CHECK(xsprof_journal_follow_open(whole, &f, err, sizeof err) == XSPROF_OK, "follow: %s", err);
    CHECK(f && xsprof_journal_follow_poll(f, &d, &st, take, &b, err, sizeof err) == XSPROF_OK, "poll: %s", err);
    CHECK(f && xsprof_journal_follow_poll(f, &d, &st, take, &b, err, sizeof err) == XSPROF_OK, "poll: %s", err);
    CHECK(st.damaged == 0, "damaged %llu", (unsigned long long)st.damaged);
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        if (t != XSPROF_IO_T_REGIONS && t != XSPROF_IO_T_ARGS)
            CHECK(a.n[t] == b.n[t] && (!a.n[t] || memcmp(a.v[t], b.v[t], a.n[t]) == 0), "table %d: %zu vs %zu bytes",
                  t, a.n[t], b.n[t]);
    canon(&a, XSPROF_IO_T_REGIONS);
    canon(&b, XSPROF_IO_T_REGIONS);
    CHECK(a.n[0] == b.n[0] && (!a.n[0] || memcmp(a.v[0], b.v[0], a.n[0]) == 0), "regions: %zu vs %zu bytes", a.n[0],
          b.n[0]);
    xsprof_journal_follow_close(f);
    xsprof_rank_data_free(&d);

    /* followed while it grows: every chunk shown up to 0, 1/7, ... 7/7 of
     * its records, one poll at each step */
    FILE *in = fopen(whole, "rb");
    fseek(in, 0, SEEK_END);
    size_t len = (size_t)ftell(in);
    unsigned char *file = malloc(len);
    rewind(in);
    CHECK(fread(file, 1, len, in) == len, "read the fixture");
    fclose(in);
    chunkmap *m;
    size_t nm = map_chunks(file, len, &m);
    CHECK(nm >= 2, "the fixture has %zu chunks", nm);
    int fd = open(grow, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, file, len) == (ssize_t)len, "write %s", grow);
    for (size_t i = 0; i < nm; i++)
        set_used(fd, &m[i], 0);
    rows c = {0};
    memset(&d, 0, sizeof d);
    memset(&st, 0, sizeof st);
    CHECK(xsprof_journal_follow_open(grow, &f, err, sizeof err) == XSPROF_OK, "follow: %s", err);
    for (int step = 0; f && step <= 7; step++) {
        for (size_t i = 0; i < nm; i++)
            set_used(fd, &m[i], step == 7 ? m[i].used : m[i].nends ? m[i].ends[m[i].nends * (size_t)step / 7] : 0);
        CHECK(xsprof_journal_follow_poll(f, &d, &st, take, &c, err, sizeof err) == XSPROF_OK, "poll %d: %s", step, err);
    }
    CHECK(st.damaged == 0, "damaged %llu", (unsigned long long)st.damaged);
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        if (t == XSPROF_IO_T_ARGS)
            continue;
        canon(&a, t);
        canon(&c, t);
        CHECK(a.n[t] == c.n[t] && (!a.n[t] || memcmp(a.v[t], c.v[t], a.n[t]) == 0),
              "growing, table %d: %zu vs %zu bytes", t, a.n[t], c.n[t]);
    }
    xsprof_journal_follow_close(f);
    xsprof_rank_data_free(&d);
    close(fd);
    for (size_t i = 0; i < nm; i++)
        free(m[i].ends);
    free(m);
    free(file);
    rows_free(&a);
    rows_free(&b);
    rows_free(&c);
    unlink(whole);
    unlink(grow);
    return io_check_result("test_io_follow");
}
