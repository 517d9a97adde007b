/* merge/util.h — small helpers shared by the xsmerge stages: one-line error
 * messages, a growable output buffer that flushes to a FILE, a string table
 * that interns names across ranks, and a comma-list rank-set parser.
 * Owner: merge. */
#ifndef XSPROF_MERGE_UTIL_H
#define XSPROF_MERGE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* snprintf into err (never NULL-terminated garbage); returns 1 so that
 * callers can write `return xsm_err_set(...)` for the "bad input" code. */
int xsm_err_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A zeroed array of n elements, zeroed by writing: calloc leaves fresh heap
 * pages untouched, so a table read before it is written (hash slots,
 * counters) maps the zero page and every page faults again on its first
 * write, with a TLB flush to the other threads. NULL on overflow or OOM. */
void *xsm_zalloc(size_t n, size_t size);

/* Big arrays are asked for transparent huge pages before their first write
 * (madvise MADV_HUGEPAGE; the kernel's default here is "madvise"): one fault
 * per 2 MiB instead of 512, which on a 10 M-event run was a third of the
 * merge's CPU (page faults of a paravirtualised VM). xsm_mem_huge advises
 * [p, p + bytes) when it is big enough to hold huge pages; xsm_malloc_big
 * is malloc followed by it. Both do nothing where THP does not exist, and
 * with XSPROF_MERGE_THP=0. */
void xsm_mem_huge(void *p, size_t bytes);
void *xsm_malloc_big(size_t bytes);

/* Growable arrays: make room for `need` elements of `size` bytes in *p
 * (doubling *cap, from 16); 0, or -1 when memory ran out (*p unchanged). */
int xsm_reserve(void **p, size_t *cap, size_t need, size_t size);
/* Room for element n (one more than n elements). */
static inline int xsm_grow(void **p, size_t *cap, size_t n, size_t size) { return xsm_reserve(p, cap, n + 1, size); }

/* Read exactly n bytes at offset `at` (retrying short reads and EINTR):
 * 0, -1 on an error (errno says which), 1 when the file ends first. */
int xsm_pread_full(int fd, void *buf, size_t n, off_t at);
/* Open addressing (linear probing) over entries of `size` bytes whose first
 * 8 bytes are a uint64_t key, 0 marking a free slot. Pointers into it are
 * valid until the next get. */
typedef struct xsm_ktab {
    unsigned char *v;
    size_t n, cap, size;
} xsm_ktab;
/* The entry of key (!= 0): NULL when absent. */
void *xsm_ktab_find(const xsm_ktab *t, uint64_t key);
/* The entry of key, a zeroed one with the key when new; NULL: out of memory. */
void *xsm_ktab_get(xsm_ktab *t, uint64_t key);
/* Remove entry e (the rest of its cluster is put back). */
void xsm_ktab_del(xsm_ktab *t, void *e);
void xsm_ktab_free(xsm_ktab *t);
/* A binary min-heap of n elements of `size` bytes at base (room for one
 * more on push), ordered by less(a, b). Pop copies the least to *out. */
void xsm_bheap_push(void *base, size_t *n, size_t size, const void *x, int (*less)(const void *, const void *));
void xsm_bheap_pop(void *base, size_t *n, size_t size, void *out, int (*less)(const void *, const void *));
/* Write exactly n bytes at offset `at`: 0, or -1 (errno says why). */
int xsm_pwrite_full(int fd, const void *buf, size_t n, off_t at);

/* Growable byte buffer. When `f` is set, the buffer is written out each time
 * it passes `flush_at` bytes, so memory stays bounded while streaming. */
struct xsm_outw;
typedef struct xsm_out {
    char *p;
    size_t len, cap;
    FILE *f;
    size_t flush_at;
    uint64_t written; /* bytes already handed to f */
    int failed;       /* allocation or write error seen (sticky) */
    int async;          /* xsm_out_start_writer was called */
    struct xsm_outw *w; /* its thread, once started, else NULL */
} xsm_out;

void xsm_out_init(xsm_out *b, FILE *f);
/* Frees the buffer; with a writer thread, stops it first (flush before:
 * bytes not flushed are dropped). */
void xsm_out_free(xsm_out *b);
/* Write full buffers to f on a thread of their own, so that the kernel's
 * copy into the page cache (a quarter of trace.json's time) runs beside
 * the formatting; the bytes are the same. The thread starts with the first
 * full buffer (none for a file smaller than flush_at); xsm_out_flush then
 * also waits for it and reports its errors. Without a thread (none could
 * be started) b writes inline as before. Returns 0, or -1 without a file. */
int xsm_out_start_writer(xsm_out *b);
int xsm_out_reserve(xsm_out *b, size_t extra);
void xsm_out_put_slow(xsm_out *b, const void *data, size_t n);
/* Where n more bytes go when they fit with no flush due (the caller then
 * adds n to len), else NULL: write them with xsm_out_put. */
static inline char *xsm_out_room(xsm_out *b, size_t n)
{
    return b->len + n <= b->cap && (!b->f || b->len < b->flush_at) ? b->p + b->len : NULL;
}
/* Append n bytes; the common case (room left, no flush due) is inline. */
static inline void xsm_out_put(xsm_out *b, const void *data, size_t n)
{
    char *o = xsm_out_room(b, n);
    if (o) {
        memcpy(o, data, n);
        b->len += n;
        return;
    }
    xsm_out_put_slow(b, data, n);
}
void xsm_out_printf(xsm_out *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* JSON string literal with escaping, including the quotes; bytes that
 * start no valid UTF-8 sequence become U+FFFD (JSON must be UTF-8). */
void xsm_out_json_str(xsm_out *b, const char *s);
/* The same (s NULL: ""); html_safe also escapes < > & so that the literal
 * can sit inside an HTML <script>. */
void xsm_out_json_esc(xsm_out *b, const char *s, int html_safe);
/* Length (1-4) of the valid UTF-8 sequence at p, 0 when the bytes there
 * start none (RFC 3629: no overlong form, surrogate or value past
 * U+10FFFF); a NUL byte never continues a sequence. */
size_t xsm_utf8_len(const unsigned char *p);
/* s (n bytes) with every byte that starts no valid UTF-8 sequence
 * replaced by U+FFFD (3 bytes): its length, and the bytes themselves.
 * Names come from the programs (NVTX, regions, hosts) in any encoding. */
size_t xsm_utf8_fixed_len(const char *s, size_t n);
/* Puts the character at p (NUL-terminated): its valid UTF-8 sequence, or
 * U+FFFD for a byte that starts none. Returns the bytes of p it took. */
size_t xsm_out_utf8_char(xsm_out *b, const unsigned char *p);
void xsm_out_utf8_fixed(xsm_out *b, const char *s, size_t n);
/* Non-negative ns as microseconds with 3 decimals ("12.345"). */
void xsm_out_us(xsm_out *b, int64_t ns);
void xsm_out_i64(xsm_out *b, int64_t v);
void xsm_out_u64(xsm_out *b, uint64_t v);
/* Write pending bytes to f. Returns 0 ok, -1 on error. */
int xsm_out_flush(xsm_out *b);
static inline uint64_t xsm_out_total(const xsm_out *b) { return b->written + b->len; }

static inline void xsm_out_puts(xsm_out *b, const char *s) { xsm_out_put(b, s, strlen(s)); }

/* Interns strings: equal text gets the same dense id, in first-seen order. */
typedef struct xsm_strtab {
    char **str;      /* str[id] (owned copies) */
    uint32_t n, cap;
    uint32_t *slots; /* open addressing: id + 1, 0 = empty */
    size_t nslots;
} xsm_strtab;

void xsm_strtab_init(xsm_strtab *t);
void xsm_strtab_free(xsm_strtab *t);
/* Returns the id, or UINT32_MAX when memory ran out. */
uint32_t xsm_strtab_intern(xsm_strtab *t, const char *s);

/* Rank set "0-7,12": returns 0 and a malloc'd mask of `n` flags (and in
 * *top, unless NULL, the largest rank named, which may be >= n), or 1 with
 * err set for a malformed or empty list. */
int xsm_rankset_parse(const char *spec, size_t n, unsigned char **mask, long *top, char *err, size_t errlen);

/* dir + "/" + name into buf (truncated to n, always terminated). */
void xsm_path(char *buf, size_t n, const char *dir, const char *name);

/* Copy len bytes at in_off of fd_in to out_off of fd_out (copy_file_range,
 * else reads and writes). Returns 0, or -1 with errno set. */
int xsm_copy_range(int fd_in, int64_t in_off, int fd_out, int64_t out_off, uint64_t len);

/* Threads one of `local` merging processes on this node may use, 1 to 8:
 * the node's online CPUs shared among them, and no more than the CPUs
 * this process may run on (a launcher that binds processes to cores has
 * shared them out already). */
int xsm_cpu_share(int local);

/* fn(ctx, i) for every i in [0, n), on up to xsm_parallel_threads(0)
 * threads (indices handed out one at a time; calls must touch disjoint
 * data). Returns 0, or -1 when fn returned nonzero for some i (all i are
 * still run). */
int xsm_parallel_for(size_t n, int (*fn)(void *ctx, size_t i), void *ctx);
/* Set (n > 0) and return the threads of xsm_parallel_for (default 1). */
int xsm_parallel_threads(int n);

/* Monotonic seconds, for the progress bar only (never for output). */
double xsm_now(void);

/* A number from environment variable `name` (decimal, all of it) in
 * [lo, hi]; unset or empty: dflt; anything else: dflt, with a warning on
 * stderr. */
double xsm_env_num(const char *name, double dflt, double lo, double hi);

/* qsort comparator of uint64_t values, ascending. */
int xsm_u64_cmp(const void *a, const void *b);

#endif
