/* io/chunk_pool.c — parallel chunk encoding for the writer (see chunk_pool.h).
 *
 * Jobs live in a ring of slots numbered by submission: `written` <=
 * `claimed` <= `submitted`. The submitting thread fills slots and writes
 * finished ones from the oldest; any thread claims the next queued slot and
 * encodes it. A slot belongs to whoever its state names (FREE, DONE and
 * FAILED: the submitter; RUNNING: the claimer), so only the state and the
 * counters need the lock. */
#include "io/chunk_pool.h"
#include "io/h5filter.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef XSPROF_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define CK_MAX_THREADS 8u
#define CK_SLOTS_PER_THREAD 2u

/* ---- codec --------------------------------------------------------------- */

static int ck_piece_add(xsprof_chunk_codec *c, size_t cap, uint32_t mem_off, uint32_t file_off, uint32_t size)
{
    while (size) {
        xsprof_chunk_piece *last = c->npieces ? &c->pieces[c->npieces - 1] : NULL;
        /* Neighbours in both layouts travel as one word. */
        if (last && last->mem_off + last->size == mem_off && last->file_off + last->size == file_off &&
            last->size < 8) {
            uint32_t take = 8 - last->size < size ? 8 - last->size : size;
            last->size += take;
            mem_off += take, file_off += take, size -= take;
            continue;
        }
        if (c->npieces == cap)
            return -1;
        uint32_t take = size < 8 ? size : 8;
        c->pieces[c->npieces++] = (xsprof_chunk_piece){.mem_off = mem_off, .file_off = file_off, .size = take};
        mem_off += take, file_off += take, size -= take;
    }
    return 0;
}

/* Member i of both compounds: same name, same type, and in the file at
 * `file_off` (packed in order). Returns its size, 0 when it differs. */
static size_t ck_member_check(hid_t mem_type, hid_t file_type, unsigned i, size_t file_off)
{
    char *name = H5Tget_member_name(mem_type, i);
    hid_t mt = H5Tget_member_type(mem_type, i), ft = -1;
    size_t size = 0;
    if (name && mt >= 0 && H5Tget_member_index(file_type, name) == (int)i &&
        (ft = H5Tget_member_type(file_type, i)) >= 0 && H5Tequal(mt, ft) > 0 &&
        H5Tget_member_offset(file_type, i) == file_off)
        size = H5Tget_size(mt);
    if (ft >= 0)
        H5Tclose(ft);
    if (mt >= 0)
        H5Tclose(mt);
    H5free_memory(name);
    return size;
}

static xsprof_status ck_codec_layout(xsprof_chunk_codec *c, hid_t mem_type, hid_t file_type)
{
    size_t cap = c->file_size; /* at most one piece per byte */
    if (!(c->pieces = malloc(cap * sizeof *c->pieces)))
        return XSPROF_ERR_NOMEM;
    if (H5Tget_class(mem_type) != H5T_COMPOUND) {
        if (H5Tequal(mem_type, file_type) <= 0 || ck_piece_add(c, cap, 0, 0, (uint32_t)c->file_size))
            return XSPROF_ERR_FORMAT;
        return XSPROF_OK;
    }
    int n = H5Tget_nmembers(mem_type);
    if (H5Tget_class(file_type) != H5T_COMPOUND || n <= 0 || H5Tget_nmembers(file_type) != n)
        return XSPROF_ERR_FORMAT;
    size_t file_off = 0;
    for (unsigned i = 0; i < (unsigned)n; i++) {
        size_t size = ck_member_check(mem_type, file_type, i, file_off);
        size_t mem_off = H5Tget_member_offset(mem_type, i);
        if (!size || mem_off + size > c->row_size ||
            ck_piece_add(c, cap, (uint32_t)mem_off, (uint32_t)file_off, (uint32_t)size))
            return XSPROF_ERR_FORMAT;
        file_off += size;
    }
    return file_off == c->file_size ? XSPROF_OK : XSPROF_ERR_FORMAT;
}

xsprof_status xsprof_chunk_codec_init(xsprof_chunk_codec *c, hid_t mem_type, hid_t file_type, size_t chunk_rows,
                                      int level)
{
    memset(c, 0, sizeof *c);
    c->row_size = H5Tget_size(mem_type);
    c->file_size = H5Tget_size(file_type);
    c->chunk_rows = chunk_rows;
    c->level = level;
    /* zlib takes the chunk as one uInt-sized buffer. */
    if (!c->row_size || !c->file_size || !chunk_rows || c->row_size > UINT32_MAX ||
        chunk_rows > (UINT32_MAX / 2) / c->file_size)
        return XSPROF_ERR_FORMAT;
    xsprof_status s = ck_codec_layout(c, mem_type, file_type);
    if (s != XSPROF_OK)
        xsprof_chunk_codec_free(c);
    return s;
}

void xsprof_chunk_codec_free(xsprof_chunk_codec *c)
{
    free(c->pieces);
    c->pieces = NULL;
    c->npieces = 0;
}

size_t xsprof_chunk_encoded_max(const xsprof_chunk_codec *c)
{
    size_t n = c->chunk_rows * c->file_size, z = (size_t)compressBound((uLong)n);
#ifdef XSPROF_HAVE_LIBDEFLATE
    size_t l = libdeflate_zlib_compress_bound(NULL, n);
    if (l > z)
        z = l;
#endif
    return z + 4;
}

/* ---- encoding ------------------------------------------------------------ */


/* Shuffle one piece of rows [0, n) into its byte planes (HDF5's shuffle:
 * byte b of row i at b * nplane + i); rows [n, nplane) are zero, as in the
 * chunk HDF5 fills before writing a partial one. */
static void ck_shuffle_piece(const xsprof_chunk_codec *c, const xsprof_chunk_piece *pc, const unsigned char *rows,
                             size_t n, unsigned char *planes)
{
    const size_t R = c->row_size, N = c->chunk_rows;
    unsigned char *dst = planes + (size_t)pc->file_off * N;
    /* A whole word can be read when the row holds it: only the bytes of the
     * piece are kept. */
    const int word = pc->mem_off + 8 <= R;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x[8] = {0};
        const unsigned char *src = rows + i * R + pc->mem_off;
        if (word)
            for (int r = 0; r < 8; r++)
                memcpy(&x[r], src + (size_t)r * R, 8);
        else
            for (int r = 0; r < 8; r++)
                memcpy(&x[r], src + (size_t)r * R, pc->size);
        xsprof_h5_transpose8(x);
        for (uint32_t j = 0; j < pc->size; j++)
            memcpy(dst + (size_t)j * N + i, &x[j], 8);
    }
    for (; i < n; i++)
        for (uint32_t j = 0; j < pc->size; j++)
            dst[(size_t)j * N + i] = rows[i * R + pc->mem_off + j];
    for (uint32_t j = 0; j < pc->size && n < N; j++)
        memset(dst + (size_t)j * N + n, 0, N - n);
}

/* Rows packed without shuffling (HDF5 skips the shuffle of 1-byte rows and
 * of 1-row chunks). */
static void ck_pack(const xsprof_chunk_codec *c, const unsigned char *rows, size_t n, unsigned char *out)
{
    memset(out, 0, c->chunk_rows * c->file_size);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < c->npieces; k++)
            memcpy(out + i * c->file_size + c->pieces[k].file_off, rows + i * c->row_size + c->pieces[k].mem_off,
                   c->pieces[k].size);
}

/* HDF5's fletcher32 (H5_checksum_fletcher32): 16-bit big-endian words. */
uint32_t xsprof_h5_fletcher32(const unsigned char *p, size_t len)
{
    size_t n = len / 2;
    uint32_t s1 = 0, s2 = 0;
    while (n) {
        size_t t = n > 360 ? 360 : n;
        n -= t;
        do {
            s1 += (uint32_t)p[0] << 8 | p[1];
            p += 2;
            s2 += s1;
        } while (--t);
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    if (len % 2) {
        s1 += (uint32_t)*p << 8;
        s2 += s1;
        s1 = (s1 & 0xffff) + (s1 >> 16);
        s2 = (s2 & 0xffff) + (s2 >> 16);
    }
    s1 = (s1 & 0xffff) + (s1 >> 16);
    s2 = (s2 & 0xffff) + (s2 >> 16);
    return s2 << 16 | s1;
}

/* Adler-32 (RFC 1950): s1 = 1 + sum of the bytes, s2 = sum of the s1s,
 * both mod 65521, taken every 5552 bytes at most (zlib's NMAX: the largest
 * run whose sums cannot overflow 32 bits). Per 16-byte block k of a run,
 * s2 gains 16 * s1 at the block's start plus sum (16 - i) * byte i; the
 * vector lanes keep the blocks' byte sums, their running total (for the
 * 16 * s1 terms) and the weighted sums apart, folded once per run. */
#define CK_ADLER_BASE 65521u
#define CK_ADLER_NMAX 5552u

uint32_t xsprof_adler32(uint32_t adler, const unsigned char *p, size_t len)
{
    uint64_t s1 = adler & 0xffff, s2 = adler >> 16;
    while (len) {
        size_t run = len < CK_ADLER_NMAX ? len : CK_ADLER_NMAX, blocks = run / 16;
        len -= run;
#ifdef __SSE2__
        if (blocks) {
            const __m128i zero = _mm_setzero_si128();
            const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
            const __m128i w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
            __m128i v_s1 = zero, v_ps = zero, v_w = zero;
            for (size_t k = 0; k < blocks; k++) {
                __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
                v_ps = _mm_add_epi64(v_ps, v_s1); /* the byte sums of the blocks before this one */
                v_s1 = _mm_add_epi64(v_s1, _mm_sad_epu8(b, zero));
                v_w = _mm_add_epi32(v_w, _mm_madd_epi16(_mm_unpacklo_epi8(b, zero), w_lo));
                v_w = _mm_add_epi32(v_w, _mm_madd_epi16(_mm_unpackhi_epi8(b, zero), w_hi));
            }
            uint64_t a[2], c[2];
            uint32_t w[4];
            _mm_storeu_si128((__m128i *)(void *)a, v_s1);
            _mm_storeu_si128((__m128i *)(void *)c, v_ps);
            _mm_storeu_si128((__m128i *)(void *)w, v_w);
            s2 += 16 * blocks * s1 + 16 * (c[0] + c[1]) + (uint64_t)w[0] + w[1] + w[2] + w[3];
            s1 += a[0] + a[1];
            p += 16 * blocks;
            run -= 16 * blocks;
        }
#endif
        for (; run; run--) {
            s1 += *p++;
            s2 += s1;
        }
        s1 %= CK_ADLER_BASE;
        s2 %= CK_ADLER_BASE;
    }
    return (uint32_t)(s2 << 16 | s1);
}

#ifdef XSPROF_HAVE_LIBDEFLATE
/* A zlib stream (2-byte header, raw deflate, big-endian Adler-32), as HDF5's
 * deflate filter inflates it, from libdeflate. The compressor is kept per
 * thread. Returns the length, 0 on failure. */
static size_t ck_libdeflate(const unsigned char *in, size_t len, unsigned char *out, size_t cap, int level,
                            xsprof_chunk_work *w)
{
    if (!w->ldc || w->ldc_level != level) {
        libdeflate_free_compressor(w->ldc);
        w->ldc = libdeflate_alloc_compressor(level);
        w->ldc_level = level;
        if (!w->ldc)
            return 0;
    }
    return libdeflate_zlib_compress(w->ldc, in, len, out, cap);
}
#endif

/* zlib's memory for one chunk: deflate allocates ~270 KB per stream, which
 * malloc would map and unmap (page faults, TLB shootdowns) for every chunk.
 * Served from one block, reset per chunk; beyond it, malloc. */
#define CK_ZMEM_SIZE (320u << 10)

static voidpf ck_zalloc(voidpf opaque, uInt items, uInt size)
{
    xsprof_chunk_work *w = opaque;
    size_t need = ((size_t)items * size + 63u) & ~(size_t)63u;
    if (w->zmem && need <= CK_ZMEM_SIZE - w->zmem_used) {
        voidpf p = w->zmem + w->zmem_used;
        w->zmem_used += need;
        return p;
    }
    return malloc((size_t)items * size);
}

static void ck_zfree(voidpf opaque, voidpf p)
{
    xsprof_chunk_work *w = opaque;
    if (!w->zmem || (unsigned char *)p < w->zmem || (unsigned char *)p >= w->zmem + CK_ZMEM_SIZE)
        free(p);
}

/* What HDF5's deflate filter does (compress2: deflateInit at `level`, one
 * deflate(Z_FINISH)), with zlib's memory from `m`: the same zlib gives the
 * same bytes. zlib's wrapper is written here: its 2-byte header (as
 * deflate writes it for a 32 KiB window, no dictionary, the default
 * strategy) and the big-endian Adler-32 of the input after the raw stream,
 * which zlib would sum byte by byte. Returns the length, 0 on failure. */
static size_t ck_zlib(const unsigned char *in, size_t len, unsigned char *out, size_t cap, int level,
                      xsprof_chunk_work *w)
{
    if (cap < 6)
        return 0;
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = ck_zalloc;
    z.zfree = ck_zfree;
    z.opaque = w;
    if (!w->zmem)
        w->zmem = malloc(CK_ZMEM_SIZE); /* else malloc per allocation */
    w->zmem_used = 0;
    if (deflateInit2(&z, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    unsigned head = (Z_DEFLATED + ((MAX_WBITS - 8) << 4)) << 8 | (unsigned)(level < 2 ? 0 : level < 6 ? 1 : level == 6 ? 2 : 3) << 6;
    head += 31 - head % 31;
    out[0] = (unsigned char)(head >> 8);
    out[1] = (unsigned char)head;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = out + 2;
    z.avail_out = (uInt)(cap - 6);
    int rc = deflate(&z, Z_FINISH);
    size_t n = (size_t)z.total_out + 2;
    deflateEnd(&z);
    if (rc != Z_STREAM_END)
        return 0;
    uint32_t a = xsprof_adler32(1, in, len);
    for (int b = 0; b < 4; b++)
        out[n + (size_t)b] = (unsigned char)(a >> (24 - 8 * b));
    return n + 4;
}

/* Whichever is faster at the level (2 CPUs, side by side): from level 4,
 * where zlib's lazy matching begins, libdeflate (the rank files' level 4:
 * conversion 152 -> 104 ns/event, files 3 % smaller); below it zlib's fast
 * path (merged.h5's level 1: libdeflate's level 1 took 2.6 -> 3.4 s on a
 * 10 M-event run, for a file 30 % smaller). */
static size_t ck_deflate(const unsigned char *in, size_t len, unsigned char *out, size_t cap, int level,
                         xsprof_chunk_work *w)
{
    if (level == Z_DEFAULT_COMPRESSION)
        level = 6;
#ifdef XSPROF_HAVE_LIBDEFLATE
    if (level >= 4 && level <= 12)
        return ck_libdeflate(in, len, out, cap, level, w);
#endif
    return ck_zlib(in, len, out, cap, level, w);
}

static int ck_grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    unsigned char *q = realloc(*buf, need);
    if (!q)
        return -1;
    *buf = q;
    *cap = need;
    return 0;
}

void xsprof_chunk_work_free(xsprof_chunk_work *w)
{
    free(w->planes);
    free(w->zmem);
#ifdef XSPROF_HAVE_LIBDEFLATE
    libdeflate_free_compressor(w->ldc);
#endif
    memset(w, 0, sizeof *w);
}

size_t xsprof_chunk_encode(const xsprof_chunk_codec *c, const void *rows, size_t n, xsprof_chunk_work *w,
                           unsigned char *out)
{
    const size_t bytes = c->chunk_rows * c->file_size;
    if (n > c->chunk_rows || ck_grow(&w->planes, &w->planes_cap, bytes))
        return 0;
    if (c->file_size > 1 && c->chunk_rows > 1)
        for (size_t k = 0; k < c->npieces; k++)
            ck_shuffle_piece(c, &c->pieces[k], rows, n, w->planes);
    else
        ck_pack(c, rows, n, w->planes);
    size_t len = ck_deflate(w->planes, bytes, out, xsprof_chunk_encoded_max(c) - 4, c->level, w);
    if (!len)
        return 0;
    uint32_t sum = xsprof_h5_fletcher32(out, len);
    for (int b = 0; b < 4; b++) /* stored little-endian */
        out[len + (size_t)b] = (unsigned char)(sum >> (8 * b));
    return (size_t)len + 4;
}

/* ---- pool ---------------------------------------------------------------- */

enum ck_state { CK_FREE, CK_QUEUED, CK_RUNNING, CK_DONE, CK_FAILED };

typedef struct ck_job {
    enum ck_state state;
    int table;
    const xsprof_chunk_codec *codec;
    size_t n;
    unsigned char *in, *out;
    size_t in_cap, out_cap, out_len;
} ck_job;

struct xsprof_chunk_pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or stop */
    pthread_cond_t done; /* a job was encoded */
    ck_job *jobs;
    size_t nslots;
    uint64_t written, claimed, submitted;
    int stop;
    xsprof_chunk_write_fn fn;
    void *user;
    xsprof_status failed;
    int failed_table;
    xsprof_chunk_work work_mem; /* the submitter's, when it helps */
    pthread_t *threads;
    unsigned nthreads;
};

/* Encode a claimed job (no lock held). */
static int ck_job_encode(ck_job *j, xsprof_chunk_work *w)
{
    const xsprof_chunk_codec *c = j->codec;
    if (ck_grow(&j->out, &j->out_cap, xsprof_chunk_encoded_max(c)))
        return -1;
    j->out_len = xsprof_chunk_encode(c, j->in, j->n, w, j->out);
    return j->out_len ? 0 : -1;
}

/* With the lock held: claim the next queued job, encode it unlocked, and
 * publish it. 0 when there was none. */
static int ck_claim_run(xsprof_chunk_pool *p, xsprof_chunk_work *w)
{
    /* chunks submitted encoded (xsprof_chunk_pool_submit_encoded) are
     * done already: passed over in their turn */
    while (p->claimed < p->submitted && p->jobs[p->claimed % p->nslots].state != CK_QUEUED)
        p->claimed++;
    if (p->claimed == p->submitted)
        return 0;
    ck_job *j = &p->jobs[p->claimed++ % p->nslots];
    j->state = CK_RUNNING;
    pthread_mutex_unlock(&p->lock);
    int rc = ck_job_encode(j, w);
    pthread_mutex_lock(&p->lock);
    j->state = rc ? CK_FAILED : CK_DONE;
    pthread_cond_signal(&p->done);
    return 1;
}

static void *ck_worker(void *arg)
{
    xsprof_chunk_pool *p = arg;
    xsprof_chunk_work w = {0};
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (!ck_claim_run(p, &w))
            pthread_cond_wait(&p->work, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    xsprof_chunk_work_free(&w);
    return NULL;
}

static xsprof_status ck_fail(xsprof_chunk_pool *p, xsprof_status s, int table)
{
    if (p->failed == XSPROF_OK) {
        p->failed = s;
        p->failed_table = table;
    }
    return p->failed;
}

/* Write the finished jobs at the head of the ring, oldest first. */
static xsprof_status ck_write_ready(xsprof_chunk_pool *p)
{
    while (p->failed == XSPROF_OK && p->written < p->submitted) {
        ck_job *j = &p->jobs[p->written % p->nslots];
        pthread_mutex_lock(&p->lock);
        enum ck_state st = j->state;
        pthread_mutex_unlock(&p->lock);
        if (st != CK_DONE && st != CK_FAILED)
            break;
        if (st == CK_FAILED)
            ck_fail(p, XSPROF_ERR_NOMEM, j->table);
        else if (p->fn(p->user, j->table, j->n, j->out, j->out_len) != XSPROF_OK)
            ck_fail(p, XSPROF_ERR_IO, -1);
        pthread_mutex_lock(&p->lock);
        j->state = CK_FREE;
        p->written++;
        pthread_mutex_unlock(&p->lock);
    }
    return p->failed;
}

/* The oldest job is not finished: encode a queued one meanwhile, or wait. */
static void ck_help_or_wait(xsprof_chunk_pool *p)
{
    ck_job *head = &p->jobs[p->written % p->nslots];
    pthread_mutex_lock(&p->lock);
    if (head->state != CK_DONE && head->state != CK_FAILED && !ck_claim_run(p, &p->work_mem))
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

unsigned xsprof_chunk_pool_threads(void)
{
    cpu_set_t set;
    unsigned n = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = (unsigned)CPU_COUNT(&set);
    const char *v = getenv("XSPROF_WRITER_THREADS");
    if (v && *v) {
        char *end = NULL;
        long want = strtol(v, &end, 10);
        if (end && !*end && want >= 1 && (unsigned long)want < n)
            n = (unsigned)want;
    }
    return n < CK_MAX_THREADS ? n : CK_MAX_THREADS;
}

static void ck_start_threads(xsprof_chunk_pool *p, unsigned want)
{
    /* Signals belong to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned i = 0; i < want; i++) {
        if (pthread_create(&p->threads[p->nthreads], NULL, ck_worker, p) != 0)
            break;
        p->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

xsprof_chunk_pool *xsprof_chunk_pool_create(unsigned nthreads, xsprof_chunk_write_fn fn, void *user)
{
    if (nthreads < 1 || !fn)
        return NULL;
    if (nthreads > CK_MAX_THREADS)
        nthreads = CK_MAX_THREADS;
    xsprof_chunk_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->fn = fn;
    p->user = user;
    p->failed_table = -1;
    p->nslots = (size_t)nthreads * CK_SLOTS_PER_THREAD + 1;
    p->jobs = calloc(p->nslots, sizeof *p->jobs);
    p->threads = calloc(nthreads, sizeof *p->threads);
    if (!p->jobs || !p->threads || pthread_mutex_init(&p->lock, NULL)) {
        free(p->jobs);
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    /* no worker (one CPU, or none could start): the submitting thread
     * encodes every chunk itself when the queue is full or at the end,
     * still cheaper than HDF5's conversion and filters (1.8x the CPU) */
    ck_start_threads(p, nthreads - 1);
    return p;
}

xsprof_status xsprof_chunk_pool_submit(xsprof_chunk_pool *p, int table, const xsprof_chunk_codec *c,
                                       const void *rows, size_t n, int *failed_table)
{
    xsprof_status s = ck_write_ready(p);
    while (s == XSPROF_OK && p->submitted - p->written == p->nslots) {
        ck_help_or_wait(p);
        s = ck_write_ready(p);
    }
    if (s == XSPROF_OK && n > c->chunk_rows)
        s = ck_fail(p, XSPROF_ERR_INVALID, table);
    ck_job *j = &p->jobs[p->submitted % p->nslots];
    if (s == XSPROF_OK && ck_grow(&j->in, &j->in_cap, n * c->row_size))
        s = ck_fail(p, XSPROF_ERR_NOMEM, table);
    if (s != XSPROF_OK) {
        *failed_table = p->failed_table;
        return s;
    }
    memcpy(j->in, rows, n * c->row_size);
    j->table = table;
    j->codec = c;
    j->n = n;
    pthread_mutex_lock(&p->lock);
    j->state = CK_QUEUED;
    p->submitted++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    return XSPROF_OK;
}

xsprof_status xsprof_chunk_pool_submit_encoded(xsprof_chunk_pool *p, int table, size_t n, const void *bytes,
                                               size_t len, int *failed_table)
{
    xsprof_status s = ck_write_ready(p);
    while (s == XSPROF_OK && p->submitted - p->written == p->nslots) {
        ck_help_or_wait(p);
        s = ck_write_ready(p);
    }
    ck_job *j = &p->jobs[p->submitted % p->nslots];
    if (s == XSPROF_OK && ck_grow(&j->out, &j->out_cap, len ? len : 1))
        s = ck_fail(p, XSPROF_ERR_NOMEM, table);
    if (s != XSPROF_OK) {
        *failed_table = p->failed_table;
        return s;
    }
    memcpy(j->out, bytes, len);
    j->out_len = len;
    j->table = table;
    j->codec = NULL;
    j->n = n;
    pthread_mutex_lock(&p->lock);
    j->state = CK_DONE; /* nothing to encode: written in its turn */
    p->submitted++;
    pthread_mutex_unlock(&p->lock);
    return XSPROF_OK;
}

xsprof_status xsprof_chunk_pool_finish(xsprof_chunk_pool *p, int *failed_table)
{
    xsprof_status s = ck_write_ready(p);
    while (s == XSPROF_OK && p->written < p->submitted) {
        ck_help_or_wait(p);
        s = ck_write_ready(p);
    }
    *failed_table = p->failed_table;
    return s;
}

void xsprof_chunk_pool_destroy(xsprof_chunk_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    for (size_t i = 0; i < p->nslots; i++) {
        free(p->jobs[i].in);
        free(p->jobs[i].out);
    }
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    xsprof_chunk_work_free(&p->work_mem);
    free(p->jobs);
    free(p->threads);
    free(p);
}
