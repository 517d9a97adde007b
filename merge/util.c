/* merge/util.c — see util.h. */
#include "merge/util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int xsm_err_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* Below this an array fits in a few huge pages at most: not worth a call. */
#define XSM_HUGE_MIN ((size_t)4 << 20)

/* XSPROF_MERGE_THP=0 turns the hint off (where compaction stalls the
 * faults instead): read once, whichever thread asks first. */
static int xsm_thp_on(void)
{
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *env = getenv("XSPROF_MERGE_THP");
        v = !(env && strcmp(env, "0") == 0);
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

void xsm_mem_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!p || bytes < XSM_HUGE_MIN || !xsm_thp_on())
        return;
    /* whole pages, so that a mapping of malloc's own is advised whole and
     * stays one area (its realloc moves it with mremap) */
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(pg - 1), b = ((uintptr_t)p + bytes + pg - 1) & ~(pg - 1);
    (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* only a hint */
#else
    (void)p;
    (void)bytes;
#endif
}

void *xsm_malloc_big(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    xsm_mem_huge(p, bytes);
    return p;
}

void *xsm_zalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = xsm_malloc_big(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

int xsm_reserve(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    xsm_mem_huge(q, c * size);
    *p = q;
    *cap = c;
    return 0;
}

void xsm_out_init(xsm_out *b, FILE *f)
{
    memset(b, 0, sizeof *b);
    b->f = f;
    b->flush_at = 1u << 20;
}

/* The writer: one buffer in flight at a time, swapped with the caller's. */
struct xsm_outw {
    pthread_t t;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    FILE *f;
    char *p;      /* the buffer being written, then the spare */
    size_t len, cap;
    int busy, quit, failed, err; /* err: errno of the failed write */
};

static void *xsm_outw_run(void *arg)
{
    struct xsm_outw *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->busy && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->busy)
            break;
        size_t n = w->len;
        pthread_mutex_unlock(&w->mu);
        int bad = fwrite(w->p, 1, n, w->f) != n, e = errno;
        pthread_mutex_lock(&w->mu);
        if (bad && !w->failed) {
            w->failed = 1;
            w->err = e;
        }
        w->busy = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int xsm_out_start_writer(xsm_out *b)
{
    if (!b->f)
        return -1;
    b->async = 1;
    return 0;
}

/* The thread itself, at the first full buffer: a file that never fills
 * one (thousands of small trace.json parts) costs no thread. */
static int xsm_outw_start(xsm_out *b)
{
    struct xsm_outw *w = calloc(1, sizeof *w);
    if (!b->f || !w)
        goto fail;
    w->f = b->f;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    if (pthread_create(&w->t, NULL, xsm_outw_run, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    b->w = w;
    return 0;
fail:
    free(w);
    return -1;
}

/* Wait until the writer is idle; its error becomes b's. Called with w->mu held. */
static void xsm_outw_idle(xsm_out *b)
{
    struct xsm_outw *w = b->w;
    while (w->busy)
        pthread_cond_wait(&w->cv, &w->mu);
    if (w->failed) {
        b->failed = 1;
        errno = w->err; /* for the caller's message */
    }
}

/* Hand b's pending bytes to the writer and take its spare buffer. */
static int xsm_outw_hand(xsm_out *b)
{
    struct xsm_outw *w = b->w;
    pthread_mutex_lock(&w->mu);
    xsm_outw_idle(b);
    if (!b->failed && b->len) {
        char *p = w->p;
        size_t cap = w->cap;
        w->p = b->p;
        w->cap = b->cap;
        w->len = b->len;
        w->busy = 1;
        pthread_cond_broadcast(&w->cv);
        b->p = p;
        b->cap = cap;
        b->written += b->len;
        b->len = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return b->failed ? -1 : 0;
}

void xsm_out_free(xsm_out *b)
{
    struct xsm_outw *w = b->w;
    if (w) {
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->t, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w->p);
        free(w);
        b->w = NULL;
    }
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int xsm_out_flush(xsm_out *b)
{
    if (!b->f || b->failed)
        return b->failed ? -1 : 0;
    if (b->w) {
        if (xsm_outw_hand(b))
            return -1;
        pthread_mutex_lock(&b->w->mu);
        xsm_outw_idle(b);
        pthread_mutex_unlock(&b->w->mu);
        return b->failed ? -1 : 0;
    }
    if (b->len && fwrite(b->p, 1, b->len, b->f) != b->len) {
        b->failed = 1;
        return -1;
    }
    b->written += b->len;
    b->len = 0;
    return 0;
}

int xsm_out_reserve(xsm_out *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->f && b->len >= b->flush_at) {
        if (b->async && !b->w && xsm_outw_start(b))
            b->async = 0; /* no thread: inline writes, the same bytes */
        if (b->w ? xsm_outw_hand(b) : xsm_out_flush(b))
            return -1;
    }
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void xsm_out_put_slow(xsm_out *b, const void *data, size_t n)
{
    if (xsm_out_reserve(b, n))
        return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

void xsm_out_printf(xsm_out *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || xsm_out_reserve(b, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

size_t xsm_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n)
        return 0;
    /* the second byte's range excludes overlong forms, surrogates and
     * values past U+10FFFF */
    unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Bytes at u[i] taken as one piece: a valid sequence inside n, else 0
 * (one byte replaced). */
static size_t xsm_utf8_piece(const unsigned char *u, size_t i, size_t n)
{
    size_t k = u[i] < 0x80 ? 1 : xsm_utf8_len(u + i);
    return k && i + k <= n ? k : 0;
}

size_t xsm_out_utf8_char(xsm_out *b, const unsigned char *p)
{
    size_t k = xsm_utf8_len(p);
    xsm_out_put(b, k ? (const char *)p : "\xef\xbf\xbd", k ? k : 3);
    return k ? k : 1;
}

size_t xsm_utf8_fixed_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        size_t k = xsm_utf8_piece(u, i, n);
        out += k ? k : 3;
        i += k ? k : 1;
    }
    return out;
}

void xsm_out_utf8_fixed(xsm_out *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = xsm_utf8_piece(u, i, n);
        xsm_out_put(b, k ? s + i : "\xef\xbf\xbd", k ? k : 3);
        i += k ? k : 1;
    }
}

void xsm_out_json_str(xsm_out *b, const char *s) { xsm_out_json_esc(b, s, 0); }

void xsm_out_json_esc(xsm_out *b, const char *s, int html_safe)
{
    static const char hex[] = "0123456789abcdef";
    s = s ? s : "";
    size_t n = strlen(s);
    if (xsm_out_reserve(b, n * 6 + 2))
        return;
    char *o = b->p + b->len;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': *o++ = '\\'; *o++ = '"'; break;
        case '\\': *o++ = '\\'; *o++ = '\\'; break;
        case '\n': *o++ = '\\'; *o++ = 'n'; break;
        case '\t': *o++ = '\\'; *o++ = 't'; break;
        case '\r': *o++ = '\\'; *o++ = 'r'; break;
        default:
            if (*c < 0x20 || *c == 0x7f || (html_safe && (*c == '<' || *c == '>' || *c == '&'))) {
                *o++ = '\\'; *o++ = 'u'; *o++ = '0'; *o++ = '0';
                *o++ = hex[*c >> 4]; *o++ = hex[*c & 15];
            } else if (*c < 0x80) {
                *o++ = (char)*c;
            } else {
                size_t k = xsm_utf8_len(c);
                if (!k) { /* not UTF-8: U+FFFD, 3 bytes for 1 (room: 6 a byte) */
                    *o++ = (char)0xef; *o++ = (char)0xbf; *o++ = (char)0xbd;
                } else {
                    memcpy(o, c, k);
                    o += k;
                    c += k - 1;
                }
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
}

/* Hand-rolled integer formatting, two digits a step: printf dominates the
 * JSON writer's time. */
static const char xsm_digits2[201] =
    "0001020304050607080910111213141516171819"
    "2021222324252627282930313233343536373839"
    "4041424344454647484950515253545556575859"
    "6061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static int xsm_ndigits(uint64_t v)
{
    int n = 1;
    for (;;) {
        if (v < 10) return n;
        if (v < 100) return n + 1;
        if (v < 1000) return n + 2;
        if (v < 10000) return n + 3;
        v /= 10000;
        n += 4;
    }
}

/* The n digits of v, ending at `end`. */
static void xsm_digits(char *end, uint64_t v)
{
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--end = xsm_digits2[d + 1];
        *--end = xsm_digits2[d];
    }
    if (v >= 10) {
        unsigned d = (unsigned)v * 2;
        *--end = xsm_digits2[d + 1];
        *--end = xsm_digits2[d];
    } else {
        *--end = (char)('0' + v);
    }
}

/* Straight into the buffer when it has room (the common case). */
void xsm_out_u64(xsm_out *b, uint64_t v)
{
    size_t n = (size_t)xsm_ndigits(v);
    char *o = xsm_out_room(b, n);
    if (o) {
        xsm_digits(o + n, v);
        b->len += n;
        return;
    }
    char tmp[24];
    xsm_digits(tmp + n, v);
    xsm_out_put(b, tmp, n);
}

void xsm_out_i64(xsm_out *b, int64_t v)
{
    if (v < 0) {
        xsm_out_put(b, "-", 1);
        xsm_out_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        xsm_out_u64(b, (uint64_t)v);
    }
}

void xsm_out_us(xsm_out *b, int64_t ns)
{
    if (ns < 0) {
        xsm_out_put(b, "-", 1);
        ns = -ns;
    }
    uint64_t us = (uint64_t)ns / 1000u;
    unsigned frac = (unsigned)((uint64_t)ns % 1000u);
    size_t n = (size_t)xsm_ndigits(us);
    char tmp[32], *o = xsm_out_room(b, n + 4), *w = o ? o : tmp;
    xsm_digits(w + n, us);
    w[n] = '.';
    w[n + 1] = (char)('0' + frac / 100);
    w[n + 2] = xsm_digits2[(frac % 100) * 2];
    w[n + 3] = xsm_digits2[(frac % 100) * 2 + 1];
    if (o)
        b->len += n + 4;
    else
        xsm_out_put(b, tmp, n + 4);
}

static uint64_t xsm_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void xsm_strtab_init(xsm_strtab *t) { memset(t, 0, sizeof *t); }

void xsm_strtab_free(xsm_strtab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->str[i]);
    free(t->str);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int xsm_strtab_rehash(xsm_strtab *t, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        size_t i = (size_t)xsm_hash(t->str[id]) & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

uint32_t xsm_strtab_intern(xsm_strtab *t, const char *s)
{
    if ((t->n + 1) * 2 > t->nslots && xsm_strtab_rehash(t, t->nslots ? t->nslots * 2 : 256))
        return UINT32_MAX;
    size_t i = (size_t)xsm_hash(s) & (t->nslots - 1);
    while (t->slots[i]) {
        uint32_t id = t->slots[i] - 1;
        if (strcmp(t->str[id], s) == 0)
            return id;
        i = (i + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        char **str = realloc(t->str, cap * sizeof *str);
        if (!str)
            return UINT32_MAX;
        t->str = str;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return UINT32_MAX;
    t->str[t->n] = copy;
    t->slots[i] = t->n + 1;
    return t->n++;
}

int xsm_rankset_parse(const char *spec, size_t n, unsigned char **mask, long *top, char *err, size_t errlen)
{
    unsigned char *m = calloc(n ? n : 1, 1);
    if (!m)
        return xsm_err_set(err, errlen, "out of memory");
    const char *p = spec;
    if (top)
        *top = -1;
    if (!*p)
        goto bad;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10);
        if (end == p || errno || a < 0)
            goto bad;
        long b = a;
        p = end;
        if (*p == '-') {
            p++;
            b = strtol(p, &end, 10);
            if (end == p || errno || b < a)
                goto bad;
            p = end;
        }
        for (long r = a; r <= b && (size_t)r < n; r++)
            m[r] = 1;
        if (top && b > *top)
            *top = b;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    *mask = m;
    return 0;
bad:
    free(m);
    return xsm_err_set(err, errlen, "xsmerge: --ranks '%s': expected a list like 0-7,12", spec);
}

double xsm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void xsm_path(char *buf, size_t n, const char *dir, const char *name) { (void)xsm_err_set(buf, n, "%s/%s", dir, name); }

int xsm_copy_range(int fd_in, int64_t in_off, int fd_out, int64_t out_off, uint64_t len)
{
    off_t in = (off_t)in_off, out = (off_t)out_off;
    while (len) {
        ssize_t k = copy_file_range(fd_in, &in, fd_out, &out, len, 0);
        if (k <= 0) {
            /* not supported across these files: plain reads and writes */
            char buf[1 << 16];
            ssize_t r = pread(fd_in, buf, len < sizeof buf ? len : sizeof buf, in);
            if (r <= 0 || pwrite(fd_out, buf, (size_t)r, out) != r) {
                if (r == 0)
                    errno = EIO;
                return -1;
            }
            k = r;
            in += r;
            out += r;
        }
        len -= (uint64_t)k;
    }
    return 0;
}

int xsm_pread_full(int fd, void *buf, size_t n, off_t at)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t k = pread(fd, p, n, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -1 : 1;
        p += k;
        at += k;
        n -= (size_t)k;
    }
    return 0;
}

static uint64_t xsm_ktab_key_at(const unsigned char *v, size_t size, size_t i)
{
    uint64_t k;
    memcpy(&k, v + i * size, sizeof k);
    return k;
}

static uint64_t xsm_ktab_key(const xsm_ktab *t, size_t i) { return xsm_ktab_key_at(t->v, t->size, i); }

/* Fibonacci hashing: the product's top bits, which every key bit reaches.
 * Keys are (rank + 1) << 32 | row: bits 24-31 of the product (the slot
 * before) ignore the rank, so the same row of every rank took one slot and
 * deletions walked long clusters (an 8-rank ring: 5 % of its analysis). */
static size_t xsm_ktab_slot(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9e3779b97f4a7c15ull >> (64 - __builtin_ctzll((unsigned long long)cap)));
}

void *xsm_ktab_find(const xsm_ktab *t, uint64_t key)
{
    if (!t->cap)
        return NULL;
    for (size_t h = xsm_ktab_slot(key, t->cap);; h = (h + 1) & (t->cap - 1)) {
        uint64_t k = xsm_ktab_key(t, h);
        if (k == key)
            return t->v + h * t->size;
        if (!k)
            return NULL;
    }
}

void *xsm_ktab_get(xsm_ktab *t, uint64_t key)
{
    if ((t->n + 1) * 2 > t->cap) { /* at most half full */
        size_t cap = t->cap ? 2 * t->cap : 256;
        unsigned char *v = calloc(cap + 1, t->size); /* + the spare entry xsm_ktab_del moves through */
        if (!v)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            uint64_t k = xsm_ktab_key(t, i);
            if (!k)
                continue;
            size_t h = xsm_ktab_slot(k, cap);
            while (xsm_ktab_key_at(v, t->size, h))
                h = (h + 1) & (cap - 1);
            memcpy(v + h * t->size, t->v + i * t->size, t->size);
        }
        free(t->v);
        t->v = v;
        t->cap = cap;
    }
    size_t h = xsm_ktab_slot(key, t->cap);
    uint64_t k;
    while ((k = xsm_ktab_key(t, h)) && k != key)
        h = (h + 1) & (t->cap - 1);
    unsigned char *e = t->v + h * t->size;
    if (!k) {
        memset(e, 0, t->size);
        memcpy(e, &key, sizeof key);
        t->n++;
    }
    return e;
}

void xsm_ktab_del(xsm_ktab *t, void *e)
{
    size_t h = (size_t)((unsigned char *)e - t->v) / t->size;
    memset(e, 0, sizeof(uint64_t));
    t->n--;
    unsigned char *tmp = t->v + t->cap * t->size; /* one spare entry past the slots */
    for (size_t j = (h + 1) & (t->cap - 1); xsm_ktab_key(t, j); j = (j + 1) & (t->cap - 1)) {
        memcpy(tmp, t->v + j * t->size, t->size);
        memset(t->v + j * t->size, 0, sizeof(uint64_t));
        uint64_t k;
        memcpy(&k, tmp, sizeof k);
        size_t s = xsm_ktab_slot(k, t->cap);
        while (xsm_ktab_key(t, s))
            s = (s + 1) & (t->cap - 1);
        memcpy(t->v + s * t->size, tmp, t->size);
    }
}

void xsm_ktab_free(xsm_ktab *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

static void xsm_bheap_swap(unsigned char *a, unsigned char *b, size_t size)
{
    unsigned char t[64]; /* elements here are small; larger ones swap in pieces */
    while (size) {
        size_t k = size < sizeof t ? size : sizeof t;
        memcpy(t, a, k);
        memcpy(a, b, k);
        memcpy(b, t, k);
        a += k;
        b += k;
        size -= k;
    }
}

void xsm_bheap_push(void *base, size_t *n, size_t size, const void *x, int (*less)(const void *, const void *))
{
    unsigned char *h = base;
    size_t i = (*n)++;
    memcpy(h + i * size, x, size);
    while (i > 0 && less(h + i * size, h + (i - 1) / 2 * size)) {
        xsm_bheap_swap(h + i * size, h + (i - 1) / 2 * size, size);
        i = (i - 1) / 2;
    }
}

void xsm_bheap_pop(void *base, size_t *n, size_t size, void *out, int (*less)(const void *, const void *))
{
    unsigned char *h = base;
    memcpy(out, h, size);
    if (--*n)
        memcpy(h, h + *n * size, size);
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < *n && less(h + l * size, h + m * size))
            m = l;
        if (l + 1 < *n && less(h + (l + 1) * size, h + m * size))
            m = l + 1;
        if (m == i)
            return;
        xsm_bheap_swap(h + i * size, h + m * size, size);
        i = m;
    }
}

int xsm_pwrite_full(int fd, const void *buf, size_t n, off_t at)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t k = pwrite(fd, p, n, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        at += k;
        n -= (size_t)k;
    }
    return 0;
}

int xsm_cpu_share(int local)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long t = cpus < 1 ? 1 : cpus / (local < 1 ? 1 : local);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < t)
        t = CPU_COUNT(&set);
    return t < 1 ? 1 : t > 8 ? 8 : (int)t;
}

static int xsm_par_threads = 1;

int xsm_parallel_threads(int n)
{
    if (n > 0)
        xsm_par_threads = n > 8 ? 8 : n;
    return xsm_par_threads;
}

typedef struct xsm_pfor {
    size_t n;
    atomic_size_t next;
    atomic_int failed;
    int (*fn)(void *, size_t);
    void *ctx;
} xsm_pfor;

static void *xsm_pfor_run(void *arg)
{
    xsm_pfor *p = arg;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        if (p->fn(p->ctx, i))
            atomic_store(&p->failed, 1);
    return NULL;
}

int xsm_parallel_for(size_t n, int (*fn)(void *ctx, size_t i), void *ctx)
{
    xsm_pfor p = {.n = n, .fn = fn, .ctx = ctx};
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, 0);
    pthread_t t[8];
    size_t nt = (size_t)xsm_par_threads < n ? (size_t)xsm_par_threads : n, started = 0;
    for (size_t k = 1; k < nt; k++)
        if (pthread_create(&t[started], NULL, xsm_pfor_run, &p) == 0)
            started++;
    xsm_pfor_run(&p); /* with no thread started, this one does everything */
    for (size_t k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    return atomic_load(&p.failed) ? -1 : 0;
}

int xsm_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double xsm_env_num(const char *name, double dflt, double lo, double hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end != v && !*end && x >= lo && x <= hi) /* NaN fails the range */
        return x;
    /* "1e30" was read as 1 and "0.5" as 0 by strtoull: a typo must not
     * change the output silently; said once per variable (some are read
     * twice) */
    static const char *said[8];
    size_t k = 0;
    while (k < 8 && said[k] && strcmp(said[k], name))
        k++;
    if (k < 8 && said[k])
        return dflt;
    if (k < 8)
        said[k] = name;
    fprintf(stderr, "xsmerge: warning: %s=%s is not a number from %.15g to %.15g; using %.15g\n", name, v, lo, hi,
            dflt);
    return dflt;
}
