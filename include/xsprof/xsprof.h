/* xsprof public C API (valid C11 and C++). Include this one header.
 *
 * Error convention: every function returns xsprof_status (XSPROF_OK == 0);
 * xsprof_status_string() names any code. Functions never abort the program:
 * misuse is counted as an anomaly and reported in the rank file. */
#ifndef XSPROF_XSPROF_H
#define XSPROF_XSPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define XSPROF_API __attribute__((visibility("default")))
#else
#define XSPROF_API
#endif

typedef enum xsprof_status {
    XSPROF_OK = 0,
    XSPROF_ERR_INVALID = 1,     /* bad argument (NULL, empty, out of range) */
    XSPROF_ERR_NOMEM = 2,       /* fixed memory budget or malloc exhausted */
    XSPROF_ERR_IO = 3,          /* file system error (errno kept) */
    XSPROF_ERR_STATE = 4,       /* call not valid in the current state */
    XSPROF_ERR_UNBALANCED = 5,  /* region end without begin / wrong nesting */
    XSPROF_ERR_TOO_LONG = 6,    /* name or value longer than the limit */
    XSPROF_ERR_FULL = 7,        /* buffer full, record dropped (policy drop) */
    XSPROF_ERR_DISABLED = 8,    /* collection off: record intentionally skipped */
    XSPROF_ERR_UNSUPPORTED = 9, /* feature not available on this system */
    XSPROF_ERR_FORMAT = 10,     /* corrupt, truncated or foreign input file */
    XSPROF_ERR_VERSION = 11     /* input written by an incompatible version */
} xsprof_status;

XSPROF_API const char *xsprof_status_string(xsprof_status s);

/* ---- names ------------------------------------------------------------ */
/* Interned once per process; the id is valid for the whole run. */
typedef uint32_t xsprof_name_id;
#define XSPROF_NAME_MAX 1023
/* Ids of names that XSPROF_FILTER excludes carry this bit, so the inline
 * check of xsprof_region_begin_id skips them without a call. */
#define XSPROF_NAME_FILTERED_ 0x80000000u
XSPROF_API xsprof_status xsprof_name_intern(const char *name, xsprof_name_id *id);

/* ---- regions ---------------------------------------------------------- */
XSPROF_API xsprof_status xsprof_region_begin(const char *name);
XSPROF_API xsprof_status xsprof_region_begin_id(xsprof_name_id id);
XSPROF_API xsprof_status xsprof_region_end(void);

/* Called from C or C++, the two above go through the inline versions below
 * (the macros): with the session stopped or the name filtered out a pair
 * costs two thread-local increments and no call. The functions stay for
 * dlsym, weak references and other languages, with the same behaviour. */
/* 1 while collection is on (read inline, relaxed). */
XSPROF_API extern int xsprof_scope_on_;
/* Regions of this thread begun without recording (session stopped, name
 * filtered out or refused) since its innermost recorded one. */
XSPROF_API extern __thread uint32_t xsprof_skip_;
/* The out-of-line halves. `skip` is &xsprof_skip_, the library's
 * thread-local state: a program reaches it in one %fs-relative access,
 * where the library (loadable with dlopen, so not initial-exec) would need
 * a TLS descriptor call. */
XSPROF_API xsprof_status xsprof_region_begin_id_(xsprof_name_id id, uint32_t *skip);
XSPROF_API xsprof_status xsprof_region_end_(uint32_t *skip);

static inline xsprof_status xsprof_region_begin_id_inline_(xsprof_name_id id) {
    int on = __atomic_load_n(&xsprof_scope_on_, __ATOMIC_RELAXED);
    if (__builtin_expect(!on || (id & XSPROF_NAME_FILTERED_), 0)) {
        xsprof_skip_++;
        return on ? XSPROF_OK : XSPROF_ERR_DISABLED;
    }
    return xsprof_region_begin_id_(id, &xsprof_skip_);
}

static inline xsprof_status xsprof_region_end_inline_(void) {
    if (__builtin_expect(xsprof_skip_ != 0, 0)) {
        xsprof_skip_--;
        return XSPROF_OK;
    }
    return xsprof_region_end_(&xsprof_skip_);
}

#define xsprof_region_begin_id(id) xsprof_region_begin_id_inline_(id)
#define xsprof_region_end() xsprof_region_end_inline_()

/* Typed key/value arguments attached to the innermost open region. */
XSPROF_API xsprof_status xsprof_region_arg_int(const char *key, int64_t value);
XSPROF_API xsprof_status xsprof_region_arg_double(const char *key, double value);
XSPROF_API xsprof_status xsprof_region_arg_string(const char *key, const char *value);
/* A shape such as [128,256]: up to 8 dimensions. */
XSPROF_API xsprof_status xsprof_region_arg_shape(const char *key, const int64_t *dims, int ndims);

/* ---- instants and counters -------------------------------------------- */
XSPROF_API xsprof_status xsprof_instant(const char *name);
XSPROF_API xsprof_status xsprof_counter_set(const char *name, double value);

/* ---- memory events (device -1 = host) -------------------------------- */
XSPROF_API xsprof_status xsprof_mem_alloc(const void *ptr, uint64_t size, int device);
XSPROF_API xsprof_status xsprof_mem_free(const void *ptr, int device);

/* ---- session ---------------------------------------------------------- */
/* Collection starts at load (XSPROF_ENABLE=1, default). Any thread may call. */
XSPROF_API xsprof_status xsprof_session_start(void);
XSPROF_API xsprof_status xsprof_session_stop(void);
XSPROF_API xsprof_status xsprof_session_toggle(void);
XSPROF_API int xsprof_session_active(void);
/* Write everything recorded so far and close the rank file. Called
 * automatically at exit / MPI_Finalize; later calls are counted anomalies. */
XSPROF_API xsprof_status xsprof_finalize(void);

/* ---- logging ---------------------------------------------------------- */
/* xsprof's own messages (warnings, thresholds below, session start/stop at
 * INFO): one line of text each, without prefix or newline. By default each
 * is written to stderr as "xsprof[rank R] warning: text". */
typedef enum xsprof_log_level {
    XSPROF_LOG_OFF = -1, /* for xsprof_log_level_set: nothing at all */
    XSPROF_LOG_ERROR = 0,
    XSPROF_LOG_WARN = 1,
    XSPROF_LOG_INFO = 2,
    XSPROF_LOG_DEBUG = 3
} xsprof_log_level;
typedef void (*xsprof_log_fn)(xsprof_log_level level, int rank, const char *text, void *user);
/* Send the messages to fn instead of stderr (NULL: stderr again). fn runs
 * on whichever thread logs, xsprof's writer thread included, maybe on
 * several at once; when this returns, the previous handler has finished
 * and is never called again. A message caused from inside fn goes to
 * stderr; calling this from inside fn is XSPROF_ERR_STATE. Messages of the
 * library's start (XSPROF_* variables) come before any handler: stderr. */
XSPROF_API xsprof_status xsprof_log_handler_set(xsprof_log_fn fn, void *user);
/* Pass on messages of this level and the more severe ones (XSPROF_LOG sets
 * the first level, default XSPROF_LOG_WARN). */
XSPROF_API xsprof_status xsprof_log_level_set(xsprof_log_level level);
XSPROF_API xsprof_log_level xsprof_log_level_get(void);

/* ---- region thresholds ------------------------------------------------ */
/* A warning for each instance of a region named `name` that lasts longer
 * than `ms` milliseconds, at most one message per name and second: the
 * next message counts the instances left out meanwhile (finalize reports
 * the rest). `name` "*": every region without a threshold of its own.
 * ms <= 0 removes the threshold. XSPROF_WARN_REGION_MS=solve=200,io=50
 * sets the same at start (a plain number is "*"). */
XSPROF_API xsprof_status xsprof_region_threshold_set(const char *name, double ms);

/* ---- thread naming ---------------------------------------------------- */
XSPROF_API xsprof_status xsprof_thread_name(const char *name);

/* ---- schedule (torch.profiler style) ---------------------------------- */
typedef void (*xsprof_trace_ready_fn)(int cycle, void *user);
XSPROF_API xsprof_status xsprof_schedule_set(int wait, int warmup, int active, int repeat,
                                             xsprof_trace_ready_fn on_trace_ready, void *user);
XSPROF_API xsprof_status xsprof_step(void);

/* The region named ProfilerStep#N spans step N: xsprof_schedule_set (and
 * XSPROF_SCHEDULE) begins ProfilerStep#0 on the calling thread, each
 * xsprof_step() called at that thread's top nesting level ends it and
 * begins the next, finalize or xsprof_schedule_stop() ends the last. */
XSPROF_API xsprof_status xsprof_schedule_stop(void);
/* The run directory this process writes its rank file into ("" before its
 * first record chose it). */
XSPROF_API const char *xsprof_run_dir(void);

/* ---- in-process summary (no xsmerge needed) ---------------------------- */
/* Per region name: calls, inclusive and self time, longest call, summed
 * over this process's threads while enabled (XSPROF_SUMMARY=1 enables it
 * and writes it to stderr at finalize). */
typedef struct xsprof_summary_row {
    const char *name;
    uint64_t calls;
    int64_t total_ns, self_ns, max_ns;
} xsprof_summary_row;
XSPROF_API xsprof_status xsprof_summary_enable(int on);
XSPROF_API xsprof_status xsprof_summary_reset(void);
/* Up to cap rows, longest total first; *n = rows that exist
 * (XSPROF_ERR_FULL when more than cap). */
XSPROF_API xsprof_status xsprof_summary_get(xsprof_summary_row *rows, size_t cap, size_t *n);
/* A table (name, calls, total, self, mean, max) to path, or stderr when NULL. */
XSPROF_API xsprof_status xsprof_summary_write(const char *path);

/* ---- observers -------------------------------------------------------- */
typedef struct xsprof_region_info {
    const char *name;
    xsprof_name_id id;
    int depth;
    uint32_t thread;
    int64_t t_begin; /* ns, local clock */
    int64_t t_end;   /* 0 in the begin callback */
} xsprof_region_info;
typedef void (*xsprof_observer_fn)(const xsprof_region_info *info, void *user);
typedef uint64_t xsprof_observer_handle;
/* sample_rate in (0,1]: fraction of regions reported (geometric skips).
 * thread_local_only: only regions of the calling thread. */
XSPROF_API xsprof_status xsprof_observer_add(xsprof_observer_fn on_begin, xsprof_observer_fn on_end,
                                             void *user, double sample_rate, int thread_local_only,
                                             xsprof_observer_handle *handle);
XSPROF_API xsprof_status xsprof_observer_remove(xsprof_observer_handle handle);

/* ---- clock ------------------------------------------------------------ */
/* The timestamp xsprof records (ns, this process's clock). */
XSPROF_API int64_t xsprof_clock_now(void);
/* The clock behind it right now: "CLOCK_MONOTONIC" (clock_gettime) or "TSC"
 * (rdtsc, same scale; used once its rate is measured, see XSPROF_CLOCK). */
XSPROF_API const char *xsprof_clock_name(void);

/* ---- scope macros: end the region when the C scope is left ----------- */
/* XSPROF_SCOPE(name) records `name` each time the scope is entered, whether
 * it is a literal or computed at run time (op.c_str(), a buffer filled by
 * snprintf):
 *  - a name the compiler sees as constant (__builtin_constant_p: string
 *    literals) is interned once per call site; the site also keeps the
 *    pointer it was interned for, so a site that sees another constant
 *    (XSPROF_SCOPE(n) in an inline function inlined with several literals)
 *    interns that one instead of recording the first;
 *  - any other name is interned (hashed and looked up) at every entry, so a
 *    reused buffer with new contents records the new contents.
 * XSPROF_FUNCTION() records the enclosing function's qualified name
 * (ns::Class::method, ns::outer()::lambda in C++; the plain name in C),
 * interned once per site. Several scopes may share one line. */
typedef struct xsprof_site_ {
    const char *name;  /* the constant the id is for; NULL until filled */
    xsprof_name_id id;
} xsprof_site_;
enum { XSPROF_SITE_DYNAMIC_ = 0, XSPROF_SITE_LITERAL_ = 1, XSPROF_SITE_FUNCTION_ = 2 };
XSPROF_API void xsprof_scope_cleanup_(int *token);
XSPROF_API int xsprof_scope_enter_(xsprof_site_ *site, const char *name, int kind);
/* xsprof_scope_on_ is read inline so a stopped session costs one load and
 * one branch, no call; the cleanup token keeps begin and end paired when
 * the session changes inside the scope. */
static inline int xsprof_scope_begin_(xsprof_site_ *site, const char *name, int kind) {
    if (!__atomic_load_n(&xsprof_scope_on_, __ATOMIC_RELAXED))
        return 0;
    if (__builtin_expect(kind == XSPROF_SITE_DYNAMIC_ || __atomic_load_n(&site->name, __ATOMIC_ACQUIRE) != name, 0))
        return xsprof_scope_enter_(site, name, kind);
    xsprof_region_begin_id_inline_(site->id);
    return 1;
}

/* The scope's end, inline (xsprof_scope_cleanup_ is the same as a function). */
static inline void xsprof_scope_end_(int *token) {
    if (*token)
        xsprof_region_end_inline_();
}

#define XSPROF_CAT2_(a, b) a##b
#define XSPROF_CAT_(a, b) XSPROF_CAT2_(a, b)
#if defined(__GNUC__)
#define XSPROF_SCOPE_AT_(name, kind, n)                                                           \
    static xsprof_site_ XSPROF_CAT_(xsprof_site_, n);                                             \
    int XSPROF_CAT_(xsprof_scope_, n) __attribute__((cleanup(xsprof_scope_end_), unused)) =       \
        xsprof_scope_begin_(&XSPROF_CAT_(xsprof_site_, n), (name), (kind))
#define XSPROF_SCOPE(name)                                                                        \
    XSPROF_SCOPE_AT_(name, __builtin_constant_p(name) ? XSPROF_SITE_LITERAL_ : XSPROF_SITE_DYNAMIC_, __COUNTER__)
#ifdef __cplusplus
#define XSPROF_FUNCTION() XSPROF_SCOPE_AT_(__PRETTY_FUNCTION__, XSPROF_SITE_FUNCTION_, __COUNTER__)
#else
#define XSPROF_FUNCTION() XSPROF_SCOPE_AT_(__func__, XSPROF_SITE_FUNCTION_, __COUNTER__)
#endif
#endif

#ifdef __cplusplus
}
#endif
#endif
