/* merge/read/chunks.c — see xsm_chunks_read in read.h.
 *
 * H5Dread runs a table's filter pipeline (fletcher32, inflate, unshuffle)
 * one chunk at a time on one thread and copies each chunk out of its cache.
 * Here the HDF5 calls only fetch the raw chunks (HDF5 is not thread-safe,
 * but that part is cheap); checksum, inflate and unshuffle run in threads
 * and write straight into the table. Only the pipeline the writer makes is
 * decoded here (shuffle, deflate, fletcher32 in any subset and order, the
 * file type equal to the memory type, every chunk stored and unfiltered
 * nowhere); anything else, and any chunk that does not decode, is left to
 * H5Dread, which then gives the same bytes or the same error as before.
 * xsm_chunks_rows decodes row ranges the same way on the calling thread.
 * Inflating is most of a streaming merge's time: libdeflate (one call per
 * chunk, the output size known) does it about twice as fast as zlib, which
 * is the fallback when the build did not find it. */
#include "merge/read/read.h"
#include "merge/util.h"
#include "io/h5filter.h"

#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef XSPROF_HAVE_LIBDEFLATE
#include <libdeflate.h>
#else
#include <zlib.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define XSM_CK_MAX_FILTERS 4
#define XSM_CK_MAX_THREADS 8

enum { XSM_CK_SHUFFLE, XSM_CK_DEFLATE, XSM_CK_FLETCHER };

typedef struct xsm_ck_plan {
    int filter[XSM_CK_MAX_FILTERS]; /* in write order */
    int nfilters;
    int fletcher;       /* the pipeline checks a fletcher32 sum */
    size_t row;         /* bytes per row */
    uint64_t rows;      /* rows in the table */
    uint64_t chunk;     /* rows per chunk */
    size_t nchunks;
    unsigned char *raw; /* raw chunks back to back */
    size_t *at;         /* nchunks + 1 offsets into raw */
    unsigned char *out; /* the table */
    atomic_size_t next; /* next chunk to decode */
    atomic_int failed;
} xsm_ck_plan;

static int xsm_ck_threads = 1;

void xsm_chunks_set_threads(int n) { xsm_ck_threads = n < 1 ? 1 : n > XSM_CK_MAX_THREADS ? XSM_CK_MAX_THREADS : n; }

/* The stored sum is little-endian; HDF5 also accepts it byte-reversed
 * (files of HDF5 <= 1.6.2). Returns the payload length, or 0 if bad. */
static size_t xsm_ck_fletcher_check(const unsigned char *p, size_t len)
{
    if (len < 4)
        return 0;
    size_t n = len - 4;
    uint32_t want = xsprof_h5_fletcher32(p, n);
    uint32_t got = (uint32_t)p[n] | (uint32_t)p[n + 1] << 8 | (uint32_t)p[n + 2] << 16 | (uint32_t)p[n + 3] << 24;
    uint32_t rev = (want & 0xff) << 24 | (want & 0xff00) << 8 | (want >> 8 & 0xff00) | want >> 24;
    return got == want || got == rev ? n : 0;
}

/* One thread's inflater. */
typedef struct xsm_ck_zs {
#ifdef XSPROF_HAVE_LIBDEFLATE
    struct libdeflate_decompressor *d;
#else
    z_stream z;
#endif
} xsm_ck_zs;

static int xsm_ck_zs_init(xsm_ck_zs *zs)
{
#ifdef XSPROF_HAVE_LIBDEFLATE
    return (zs->d = libdeflate_alloc_decompressor()) ? 0 : -1;
#else
    memset(&zs->z, 0, sizeof zs->z);
    return inflateInit2(&zs->z, 15) == Z_OK ? 0 : -1;
#endif
}

static void xsm_ck_zs_end(xsm_ck_zs *zs)
{
#ifdef XSPROF_HAVE_LIBDEFLATE
    if (zs->d)
        libdeflate_free_decompressor(zs->d);
    zs->d = NULL;
#else
    inflateEnd(&zs->z);
#endif
}

/* Inflate exactly `want` bytes. With a fletcher32 sum over the compressed
 * bytes the stream's own adler32 is redundant: raw inflate skips it. */
static int xsm_ck_inflate(xsm_ck_zs *zs, int raw, const unsigned char *in, size_t n, unsigned char *out, size_t want)
{
    if (raw) {
        /* zlib header: deflate method, no preset dictionary, valid check bits */
        if (n < 2 || (in[0] & 0x0f) != 8 || (in[1] & 0x20) || ((unsigned)in[0] << 8 | in[1]) % 31)
            return -1;
        in += 2;
        n -= 2;
    }
#ifdef XSPROF_HAVE_LIBDEFLATE
    /* NULL actual size: anything but exactly `want` bytes is an error */
    enum libdeflate_result r = raw ? libdeflate_deflate_decompress(zs->d, in, n, out, want, NULL)
                                   : libdeflate_zlib_decompress(zs->d, in, n, out, want, NULL);
    return r == LIBDEFLATE_SUCCESS ? 0 : -1;
#else
    z_stream *z = &zs->z;
    if (inflateReset2(z, raw ? -15 : 15) != Z_OK)
        return -1;
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)n;
    z->next_out = out;
    z->avail_out = (uInt)want;
    int rc = inflate(z, Z_FINISH);
    return rc == Z_STREAM_END && z->avail_out == 0 ? 0 : -1;
#endif
}

/* Undo HDF5's shuffle of `nelem` elements of `size` bytes (byte j of
 * element i sits at j * nelem + i), writing elements [from, to) to out. */
static void xsm_ck_unshuffle(unsigned char *out, const unsigned char *in, size_t size, size_t nelem, size_t from,
                             size_t to)
{
    size_t i = from;
#ifdef __SSE2__
    /* 16 elements x 8 bytes at a time: three rounds of byte, 16-bit and
     * 32-bit interleaves turn 8 planes of 16 bytes into 16 rows of 8
     * (a fifth of the scalar transpose's work; decoding is most of a
     * streaming merge's time) */
    if (size % 8 == 0) {
        for (; i + 16 <= to; i += 16) {
            unsigned char *o = out + (i - from) * size;
            for (size_t j = 0; j < size; j += 8) {
                __m128i a[8], b[8], c[8];
                for (int r = 0; r < 8; r++)
                    a[r] = _mm_loadu_si128((const __m128i *)(const void *)(in + (j + (size_t)r) * nelem + i));
                for (int r = 0; r < 8; r += 2) {
                    b[r] = _mm_unpacklo_epi8(a[r], a[r + 1]);     /* elements 0-7, planes r, r+1 */
                    b[r + 1] = _mm_unpackhi_epi8(a[r], a[r + 1]); /* elements 8-15 */
                }
                for (int h = 0; h < 2; h++) { /* planes 0-3 then 4-7 */
                    c[4 * h] = _mm_unpacklo_epi16(b[4 * h], b[4 * h + 2]);         /* elements 0-3 */
                    c[4 * h + 1] = _mm_unpackhi_epi16(b[4 * h], b[4 * h + 2]);     /* 4-7 */
                    c[4 * h + 2] = _mm_unpacklo_epi16(b[4 * h + 1], b[4 * h + 3]); /* 8-11 */
                    c[4 * h + 3] = _mm_unpackhi_epi16(b[4 * h + 1], b[4 * h + 3]); /* 12-15 */
                }
                for (int q = 0; q < 4; q++) { /* elements 4q .. 4q+3 */
                    __m128i lo = _mm_unpacklo_epi32(c[q], c[4 + q]), hi = _mm_unpackhi_epi32(c[q], c[4 + q]);
                    unsigned char *e = o + (size_t)(4 * q) * size + j;
                    _mm_storel_epi64((__m128i *)(void *)e, lo);
                    _mm_storel_epi64((__m128i *)(void *)(e + size), _mm_unpackhi_epi64(lo, lo));
                    _mm_storel_epi64((__m128i *)(void *)(e + 2 * size), hi);
                    _mm_storel_epi64((__m128i *)(void *)(e + 3 * size), _mm_unpackhi_epi64(hi, hi));
                }
            }
        }
    }
#endif
    if (size % 8 == 0) {
        for (; i + 8 <= to; i += 8)
            for (size_t j = 0; j < size; j += 8) {
                uint64_t x[8];
                for (int r = 0; r < 8; r++)
                    memcpy(&x[r], in + (j + (size_t)r) * nelem + i, 8);
                xsprof_h5_transpose8(x);
                for (int e = 0; e < 8; e++)
                    memcpy(out + (i - from + (size_t)e) * size + j, &x[e], 8);
            }
    }
    for (; i < to; i++)
        for (size_t j = 0; j < size; j++)
            out[(i - from) * size + j] = in[j * nelem + i];
}

/* Decode the raw chunk in[0, n) and write its rows [from, to) to dst:
 * filters undone in reverse write order, tmp holds a whole chunk. */
static int xsm_ck_decode_rows(const xsm_ck_plan *p, const unsigned char *in, size_t n, xsm_ck_zs *z,
                              unsigned char *tmp, size_t from, size_t to, unsigned char *dst)
{
    size_t full = (size_t)p->chunk * p->row;
    int shuffled = 0;
    for (int f = p->nfilters - 1; f >= 0; f--) {
        switch (p->filter[f]) {
        case XSM_CK_FLETCHER:
            if (!(n = xsm_ck_fletcher_check(in, n)))
                return -1;
            break;
        case XSM_CK_DEFLATE:
            if (in == tmp || xsm_ck_inflate(z, p->fletcher, in, n, tmp, full))
                return -1;
            in = tmp;
            n = full;
            break;
        case XSM_CK_SHUFFLE:
            if (shuffled++ || n != full || f != 0)
                return -1;
            if (p->row > 1 && p->chunk > 1)
                xsm_ck_unshuffle(dst, in, p->row, (size_t)p->chunk, from, to);
            else
                memcpy(dst, in + from * p->row, (to - from) * p->row);
            return 0;
        }
    }
    if (n != full)
        return -1;
    memcpy(dst, in + from * p->row, (to - from) * p->row);
    return 0;
}

/* Decode chunk k of the fetched table into its place in the table. */
static int xsm_ck_decode(xsm_ck_plan *p, size_t k, xsm_ck_zs *z, unsigned char *tmp)
{
    uint64_t first = (uint64_t)k * p->chunk;
    size_t keep = (size_t)(p->rows - first < p->chunk ? p->rows - first : p->chunk);
    return xsm_ck_decode_rows(p, p->raw + p->at[k], p->at[k + 1] - p->at[k], z, tmp, 0, keep,
                              p->out + (size_t)first * p->row);
}

static void *xsm_ck_worker(void *arg)
{
    xsm_ck_plan *p = arg;
    xsm_ck_zs z;
    unsigned char *tmp = malloc((size_t)p->chunk * p->row);
    if (!tmp || xsm_ck_zs_init(&z)) {
        atomic_store(&p->failed, 1);
        free(tmp);
        return NULL;
    }
    for (;;) {
        size_t k = atomic_fetch_add(&p->next, 1);
        if (k >= p->nchunks || atomic_load(&p->failed))
            break;
        if (xsm_ck_decode(p, k, &z, tmp))
            atomic_store(&p->failed, 1);
    }
    xsm_ck_zs_end(&z);
    free(tmp);
    return NULL;
}

/* The pipeline of ds when it is one this file decodes, else -1. */
static int xsm_ck_filters(hid_t dcpl, xsm_ck_plan *p)
{
    hsize_t dim = 0;
    if (H5Pget_layout(dcpl) != H5D_CHUNKED || H5Pget_chunk(dcpl, 1, &dim) != 1 || dim == 0)
        return -1;
    p->chunk = dim;
    int nf = H5Pget_nfilters(dcpl);
    if (nf < 0 || nf > XSM_CK_MAX_FILTERS)
        return -1;
    for (int f = 0; f < nf; f++) {
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        char name[64];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)f, &flags, &ncd, cd, sizeof name, name, NULL);
        if (id == H5Z_FILTER_SHUFFLE && ncd >= 1 && cd[0] == p->row)
            p->filter[f] = XSM_CK_SHUFFLE;
        else if (id == H5Z_FILTER_DEFLATE)
            p->filter[f] = XSM_CK_DEFLATE;
        else if (id == H5Z_FILTER_FLETCHER32 && f == nf - 1)
            p->filter[f] = XSM_CK_FLETCHER, p->fletcher = 1;
        else
            return -1;
    }
    p->nfilters = nf;
    return 0;
}

/* Fetch every raw chunk (HDF5 calls: this thread only). */
static int xsm_ck_fetch(hid_t ds, xsm_ck_plan *p)
{
    size_t total = 0;
    if (!(p->at = malloc((p->nchunks + 1) * sizeof *p->at)))
        return -1;
    for (size_t k = 0; k < p->nchunks; k++) {
        hsize_t off = (hsize_t)k * p->chunk, size = 0;
        if (H5Dget_chunk_storage_size(ds, &off, &size) < 0 || size == 0 || size > ((size_t)1 << 31))
            return -1;
        p->at[k] = total;
        total += (size_t)size;
    }
    p->at[p->nchunks] = total;
    if (!(p->raw = malloc(total ? total : 1)))
        return -1;
    for (size_t k = 0; k < p->nchunks; k++) {
        hsize_t off = (hsize_t)k * p->chunk;
        uint32_t mask = 1;
        if (H5Dread_chunk(ds, H5P_DEFAULT, &off, &mask, p->raw + p->at[k]) < 0 || mask != 0)
            return -1;
    }
    return 0;
}

static int xsm_ck_run(xsm_ck_plan *p)
{
    size_t nt = (size_t)xsm_ck_threads;
    if (nt > p->nchunks / 2)
        nt = p->nchunks / 2 ? p->nchunks / 2 : 1;
    pthread_t t[XSM_CK_MAX_THREADS];
    size_t started = 0;
    for (size_t i = 1; i < nt; i++, started++)
        if (pthread_create(&t[started], NULL, xsm_ck_worker, p) != 0)
            break;
    xsm_ck_worker(p);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    return atomic_load(&p->failed) ? -1 : 0;
}

/* The plan of ds when this file decodes it: the file type is mem_type,
 * rows are row_size bytes, the pipeline is one xsm_ck_filters knows. */
static int xsm_ck_plan_init(hid_t ds, hid_t mem_type, size_t row_size, xsm_ck_plan *p)
{
    hid_t ft = H5Dget_type(ds), dcpl = H5Dget_create_plist(ds);
    memset(p, 0, sizeof *p);
    p->row = row_size;
    int rc = ft >= 0 && dcpl >= 0 && H5Tequal(ft, mem_type) > 0 && H5Tget_size(ft) == row_size &&
                     xsm_ck_filters(dcpl, p) == 0 && p->chunk <= (SIZE_MAX >> 8) / row_size
                 ? 0
                 : -1;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (ft >= 0)
        H5Tclose(ft);
    return rc;
}

int xsm_chunks_read(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t rows, void *buf)
{
    hid_t ds = (hid_t)dataset;
    xsm_ck_plan p;
    int rc = -1;
    if (xsm_ck_plan_init(ds, (hid_t)mem_type, row_size, &p) == 0) {
        p.rows = rows;
        p.out = buf;
        p.nchunks = (size_t)((rows + p.chunk - 1) / p.chunk);
        rc = xsm_ck_fetch(ds, &p) == 0 ? xsm_ck_run(&p) : -1;
    }
    free(p.raw);
    free(p.at);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* Per-thread scratch of xsm_chunks_rows, kept between calls (a streaming
 * merge reads a file a chunk at a time) and freed when its thread ends. */
typedef struct xsm_ck_scratch {
    xsm_ck_zs z;
    unsigned char *raw, *tmp;
    size_t raw_cap, tmp_cap;
} xsm_ck_scratch;

static _Thread_local xsm_ck_scratch *xsm_ck_mine;
static pthread_key_t xsm_ck_key;
static pthread_once_t xsm_ck_key_once = PTHREAD_ONCE_INIT;
static int xsm_ck_key_ok;

static void xsm_ck_scratch_free(void *arg)
{
    xsm_ck_scratch *s = arg;
    xsm_ck_zs_end(&s->z);
    free(s->raw);
    free(s->tmp);
    free(s);
}

static void xsm_ck_key_init(void) { xsm_ck_key_ok = pthread_key_create(&xsm_ck_key, xsm_ck_scratch_free) == 0; }

static xsm_ck_scratch *xsm_ck_scratch_get(void)
{
    if (xsm_ck_mine)
        return xsm_ck_mine;
    pthread_once(&xsm_ck_key_once, xsm_ck_key_init);
    xsm_ck_scratch *s = xsm_ck_key_ok ? calloc(1, sizeof *s) : NULL;
    if (s && xsm_ck_zs_init(&s->z)) {
        free(s);
        return NULL;
    }
    if (s && pthread_setspecific(xsm_ck_key, s) != 0) {
        xsm_ck_scratch_free(s);
        return NULL;
    }
    return xsm_ck_mine = s;
}

static int xsm_ck_grow(unsigned char **buf, size_t *cap, size_t want)
{
    if (want <= *cap)
        return 0;
    unsigned char *p = realloc(*buf, want);
    if (!p)
        return -1;
    *buf = p;
    *cap = want;
    return 0;
}

/* Rows [first, first + n) of a table chunk by chunk on this thread:
 * `fetch` puts chunk k's stored bytes into s->raw (growing it) and their
 * length into *size, 0 or -1; each is then decoded outside HDF5. */
static int xsm_ck_rows(const xsm_ck_plan *p, xsm_ck_scratch *s, uint64_t first, uint64_t n, unsigned char *out,
                       int (*fetch)(void *ctx, uint64_t k, xsm_ck_scratch *s, size_t *size), void *ctx)
{
    uint64_t end = first + n;
    for (uint64_t k = first / p->chunk; k * p->chunk < end; k++) {
        uint64_t off = k * p->chunk, from = first > off ? first - off : 0, to = end - off < p->chunk ? end - off : p->chunk;
        size_t size = 0;
        if (fetch(ctx, k, s, &size) ||
            xsm_ck_decode_rows(p, s->raw, size, &s->z, s->tmp, (size_t)from, (size_t)to, out))
            return -1;
        out += (size_t)(to - from) * p->row;
    }
    return 0;
}

typedef struct xsm_ck_h5 {
    hid_t ds;
    uint64_t chunk;
} xsm_ck_h5;

/* Chunk k through HDF5 (this thread holds its lock meanwhile). */
static int xsm_ck_fetch_h5(void *ctx, uint64_t k, xsm_ck_scratch *s, size_t *size)
{
    const xsm_ck_h5 *h = ctx;
    hsize_t off = k * h->chunk, stored = 0;
    uint32_t mask = 1;
    if (H5Dget_chunk_storage_size(h->ds, &off, &stored) < 0 || stored == 0 || stored > ((size_t)1 << 31) ||
        xsm_ck_grow(&s->raw, &s->raw_cap, (size_t)stored) || H5Dread_chunk(h->ds, H5P_DEFAULT, &off, &mask, s->raw) < 0 ||
        mask != 0)
        return -1;
    *size = (size_t)stored;
    return 0;
}

int xsm_chunks_rows(int64_t dataset, int64_t mem_type, size_t row_size, uint64_t first, uint64_t n, void *buf)
{
    hid_t ds = (hid_t)dataset, sp = H5Dget_space(ds);
    hsize_t dim = 0;
    int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 && H5Sget_simple_extent_dims(sp, &dim, NULL) == 1;
    if (sp >= 0)
        H5Sclose(sp);
    xsm_ck_plan p;
    xsm_ck_scratch *s = NULL;
    if (!ok || !n || first > dim || n > dim - first || xsm_ck_plan_init(ds, (hid_t)mem_type, row_size, &p) != 0 ||
        !(s = xsm_ck_scratch_get()) || xsm_ck_grow(&s->tmp, &s->tmp_cap, (size_t)p.chunk * p.row)) {
        H5Eclear2(H5E_DEFAULT);
        return -1;
    }
    xsm_ck_h5 h = {ds, p.chunk};
    int rc = xsm_ck_rows(&p, s, first, n, buf, xsm_ck_fetch_h5, &h);
    H5Eclear2(H5E_DEFAULT);
    return rc;
}

/* ---- streamed tables of a closed file (io/reader.h raw reader) ----------- */


void *xsm_chunks_raw_plan(int64_t dataset, int64_t mem_type, size_t row_size)
{
    xsm_ck_plan p, *copy = NULL;
    if (xsm_ck_plan_init((hid_t)dataset, (hid_t)mem_type, row_size, &p) == 0 && (copy = malloc(sizeof *copy)))
        *copy = p; /* only the pipeline and shapes: no buffers yet */
    H5Eclear2(H5E_DEFAULT);
    return copy;
}

void xsm_chunks_raw_free(void *plan) { free(plan); }

typedef struct xsm_ck_raw {
    const xsprof_raw_table *t;
    int fd;
} xsm_ck_raw;

/* Chunk k by its offset in the file. */
static int xsm_ck_fetch_raw(void *ctx, uint64_t k, xsm_ck_scratch *s, size_t *size)
{
    const xsm_ck_raw *r = ctx;
    *size = r->t->size[k];
    return xsm_ck_grow(&s->raw, &s->raw_cap, *size) || xsm_pread_full(r->fd, s->raw, *size, (off_t)r->t->addr[k]) ? -1 : 0;
}

/* Rows [first, first + n): each chunk read by offset from the file, decoded
 * as xsm_chunks_rows does, without HDF5 (so from any thread). */
int xsm_chunks_raw_rows(const xsprof_raw_table *t, uint64_t first, uint64_t n, void *buf)
{
    const xsm_ck_plan *p = t->plan;
    xsm_ck_scratch *s = xsm_ck_scratch_get();
    if (!p || !n || first > t->rows || n > t->rows - first || p->chunk != t->chunk_rows || !s ||
        xsm_ck_grow(&s->tmp, &s->tmp_cap, (size_t)p->chunk * p->row))
        return -1;
    xsm_ck_raw r = {t, open(t->path, O_RDONLY | O_CLOEXEC)};
    if (r.fd < 0)
        return -1;
    int rc = xsm_ck_rows(p, s, first, n, buf, xsm_ck_fetch_raw, &r);
    close(r.fd);
    return rc;
}
