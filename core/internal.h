/* core/internal.h — state shared between core's own modules (not other
 * folders: they use collector.h). Owner: core. */
#ifndef XSPROF_CORE_INTERNAL_H
#define XSPROF_CORE_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include "collector.h"
#include "journal.h"

#define XSPROF_MAX_DEPTH 256
#define XSPROF_MAX_OBSERVERS 16

/* One open region on a thread's stack. */
typedef struct xsprof_frame {
    int64_t t_begin;
    uint32_t name;
    uint32_t nargs;
    uint32_t sampled;  /* bit i: observer i saw the begin */
    uint32_t saved_skip; /* xsprof_skip_ when this region began */
    uint32_t pdepth;     /* nesting depth in the program, skipped regions included */
    int64_t child_ns;    /* summary: time in recorded child regions */
    int64_t counters[8]; /* perf counter values at begin */
} xsprof_frame;

/* Per-thread state, reached through xsprof_tl_.thread. */
typedef struct xsprof_thread {
    uint32_t tid;
    int32_t os_tid;
    int busy;                 /* re-entry guard */
    uint32_t depth;
    char *cur;                /* next free byte in the chunk */
    char *end;                /* end of the chunk */
    xsprof_chunk_header *chunk;
    uint64_t chunk_seq;
    uint64_t dropped;         /* records this thread lost (cumulative) */
    uint64_t drops_published; /* part of `dropped` already added to the journal header */
    uint64_t drop_gen;        /* spare generation when we last failed to get a chunk */
    uint64_t rng;
    int64_t obs_skip[XSPROF_MAX_OBSERVERS];
    int perf_fd[8];
    int perf_open;            /* 0 not tried, 1 open, -1 unavailable */
    int perf_leader[2];       /* counters.c: software and hardware group leaders, -1 none */
    int8_t perf_slot[8];      /* a counter's place in its group's read, -1: read alone */
    struct xsprof_thread *next;
    void *pending;            /* buffer.c: definition reserved before the journal existed */
    xsprof_frame stack[XSPROF_MAX_DEPTH];
} xsprof_thread;

/* The one global state object. Life cycle: UNINIT -> RUNNING -> FINALIZED. */
enum { XSPROF_STATE_UNINIT = 0, XSPROF_STATE_RUNNING = 1, XSPROF_STATE_FINALIZING = 2, XSPROF_STATE_FINALIZED = 3,
       XSPROF_STATE_FAILED = 4 };

typedef struct xsprof_global {
    _Atomic int collecting;   /* the one branch on the hot path */
    _Atomic int state;
    _Atomic int user_on;      /* session start/stop */
    _Atomic int schedule_on;  /* schedule window */
    _Atomic int nobservers;
    pthread_mutex_t lock;     /* identity, journal creation, thread list, session changes */
    xsprof_thread *threads;
    _Atomic uint32_t next_tid;
    int rank, size;
    _Atomic uint64_t anomalies;
} xsprof_global;

XSPROF_HIDDEN extern xsprof_global xsprof_g;
/* The library's thread-local state: one small variable (so dlopen works),
 * the public xsprof_skip_ an alias of its first member (region.c). */
typedef struct xsprof_tl {
    uint32_t skip;          /* xsprof_skip_ */
    xsprof_thread *thread;  /* NULL until the thread's first record */
} xsprof_tl;
_Static_assert(offsetof(xsprof_tl, skip) == 0, "xsprof_skip_ is the address of xsprof_tl_");
XSPROF_HIDDEN extern __thread xsprof_tl xsprof_tl_;

/* session.c */
XSPROF_HIDDEN void xsprof_core_init(void);
XSPROF_HIDDEN void xsprof_collecting_update(void);
XSPROF_HIDDEN void xsprof_start_hooks_run(void);

/* thread.c */
XSPROF_HIDDEN xsprof_thread *xsprof_thread_get(void);
XSPROF_HIDDEN void *xsprof_thread_reserve_slow(xsprof_thread *t, uint32_t size);
XSPROF_HIDDEN int xsprof_thread_chunk_next(xsprof_thread *t);
XSPROF_HIDDEN void xsprof_threads_close_all(void);

/* buffer.c: definitions recorded before the journal existed, moved into
 * t's chunks (taking more as they fill) */
XSPROF_HIDDEN void xsprof_pending_drain(xsprof_thread *t);

/* journal.c */
XSPROF_HIDDEN xsprof_status xsprof_journal_open(void);
XSPROF_HIDDEN xsprof_chunk_header *xsprof_journal_chunk_take(int block);
XSPROF_HIDDEN void xsprof_journal_chunk_full(xsprof_chunk_header *c);
XSPROF_HIDDEN uint64_t xsprof_journal_spare_gen(void);
XSPROF_HIDDEN xsprof_status xsprof_journal_string_add(uint32_t id, const char *s, uint32_t len);
XSPROF_HIDDEN xsprof_status xsprof_journal_finish(const char *end_state);
XSPROF_HIDDEN xsprof_status xsprof_journal_relocate(const char *dir, int rank);
XSPROF_HIDDEN void xsprof_journal_mark_signal(int sig);
XSPROF_HIDDEN int xsprof_journal_is_open(void);
XSPROF_HIDDEN uint32_t xsprof_journal_chunk_bytes(void);
XSPROF_HIDDEN void xsprof_journal_count_drops(uint64_t n);

/* intern.c */
typedef struct xsprof_name_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    uint8_t filtered;   /* 1: regions of this name are not recorded */
    /* threshold.c: this name's own threshold (0: none, "*" applies), the
     * time of its last warning and the instances left out since */
    _Atomic int64_t threshold_ns;
    _Atomic int64_t warn_last;
    _Atomic int64_t left_max_ns;
    _Atomic uint32_t left_out;
    char str[];
} xsprof_name_entry;
/* Names by id, read inline on the region path (no call per region). */
#define XSPROF_NAMES_MAX (1u << 16)
XSPROF_HIDDEN extern _Atomic(xsprof_name_entry *) xsprof_names_by_id[XSPROF_NAMES_MAX];
static inline const xsprof_name_entry *xsprof_name_entry_get(uint32_t id) {
    return id < XSPROF_NAMES_MAX ? atomic_load_explicit(&xsprof_names_by_id[id], memory_order_acquire) : NULL;
}
XSPROF_HIDDEN uint32_t xsprof_name_count(void);
XSPROF_HIDDEN xsprof_status xsprof_names_flush_to_journal(void);
XSPROF_HIDDEN void xsprof_names_fork_prepare(void);
XSPROF_HIDDEN void xsprof_names_fork_parent(void);
XSPROF_HIDDEN void xsprof_names_fork_child(void);

/* funcname.c: the qualified name XSPROF_FUNCTION() records, from the
 * compiler's pretty name (out always terminated; returns its length) */
XSPROF_HIDDEN size_t xsprof_funcname_compact(const char *pretty, char *out, size_t cap);

/* filter.c */
XSPROF_HIDDEN xsprof_status xsprof_filter_parse(const char *spec);
XSPROF_HIDDEN int xsprof_filter_active(void); /* XSPROF_FILTER has patterns */
XSPROF_HIDDEN int xsprof_filter_excludes(const char *name);

/* observer.c */
XSPROF_HIDDEN uint32_t xsprof_observers_begin(xsprof_thread *t, const char *name, uint32_t id, int depth, int64_t t0);
XSPROF_HIDDEN void xsprof_observers_end(xsprof_thread *t, uint32_t sampled, const char *name, uint32_t id, int depth,
                                        int64_t t0, int64_t t1);

/* counters.c */
XSPROF_HIDDEN xsprof_status xsprof_counters_parse(const char *spec);
/* Sampling (sample.c, XSPROF_SAMPLE_HZ): started when the journal is
 * created, stopped at finalize (its last samples still written), dropped
 * in a forked child. */
#define XSPROF_SAMPLE_HZ_MAX 10000
/* Names of -finstrument-functions regions (instrument.c): this prefix and
 * the function's address in hex, named by xsmerge. The filter is decided
 * per address there, never on such a string. */
#define XSPROF_FN_NAME_PREFIX "fn@0x"
XSPROF_HIDDEN long xsprof_sample_hz_parse(const char *spec);
XSPROF_HIDDEN extern _Atomic int xsprof_sample_wanted; /* XSPROF_SAMPLE_HZ is set and not 0, no journal yet */
XSPROF_HIDDEN void xsprof_sample_start(void);
XSPROF_HIDDEN void xsprof_sample_stop(void);
XSPROF_HIDDEN void xsprof_sample_fork_child(void);
/* 1 while XSPROF_COUNTERS selected counters; read inline on the region path */
XSPROF_HIDDEN extern _Atomic int xsprof_counters_on;
static inline int xsprof_counters_active(void) { return atomic_load_explicit(&xsprof_counters_on, memory_order_relaxed); }
XSPROF_HIDDEN void xsprof_counters_read(xsprof_thread *t, int64_t *out);
XSPROF_HIDDEN void xsprof_counters_emit(xsprof_thread *t, const int64_t *begin, uint16_t depth);
XSPROF_HIDDEN void xsprof_counters_thread_close(xsprof_thread *t);

/* threshold.c: 1 while any region threshold exists; read inline at
 * region end, where it is the only cost of thresholds not in use */
XSPROF_HIDDEN extern _Atomic int xsprof_thresholds_on;
static inline int xsprof_thresholds_active(void) {
    return atomic_load_explicit(&xsprof_thresholds_on, memory_order_relaxed);
}
/* A region of `name` ended at `now` after `dur` ns: warn when above its threshold. */
XSPROF_HIDDEN void xsprof_threshold_check(uint32_t name, int64_t dur, int64_t now);
/* XSPROF_WARN_REGION_MS ("MS" or "NAME=MS,..."): applies the valid items;
 * XSPROF_ERR_INVALID when some were not, *nbad of them, the first in bad. */
XSPROF_HIDDEN xsprof_status xsprof_thresholds_parse(const char *spec, char *bad, size_t badlen, int *nbad);
XSPROF_HIDDEN void xsprof_thresholds_init(void);

/* rss.c: XSPROF_WARN_RSS_MB. check: from the writer thread (at most once a
 * second whatever the calls) and, forced, at finalize. */
XSPROF_HIDDEN void xsprof_rss_init(void);
XSPROF_HIDDEN void xsprof_rss_check(int force);

/* schedule.c */
XSPROF_HIDDEN xsprof_status xsprof_schedule_parse(const char *spec);
XSPROF_HIDDEN void xsprof_schedule_check_at_finalize(void);

/* summary.c */
XSPROF_HIDDEN extern _Atomic int xsprof_summary_on;
XSPROF_HIDDEN void xsprof_summary_add(uint32_t name, int64_t dur, int64_t self);

/* schedule.c: the open ProfilerStep#N region, ended at finalize */
XSPROF_HIDDEN void xsprof_step_region_close(void);

/* signal.c */
XSPROF_HIDDEN void xsprof_signals_install(void);

/* config.c */
XSPROF_HIDDEN void xsprof_config_load(void);
XSPROF_HIDDEN int64_t xsprof_config_int(const char *name, int64_t dflt);
XSPROF_HIDDEN xsprof_status xsprof_size_parse(const char *s, uint64_t *out);

/* log.c */
XSPROF_HIDDEN void xsprof_log_init(void);
/* 1 while this thread runs the application's log handler. xsprof logs
 * with some of its locks held (the journal's, the name table's), and a
 * handler may record: the paths that take those locks (a new chunk, a new
 * name) refuse it then, rather than wait for the lock this thread holds. */
XSPROF_HIDDEN int xsprof_log_in_handler(void);

/* clock.c */
XSPROF_HIDDEN void xsprof_clock_init(int rank);
/* Process start (library constructor): the journal header's start times. */
XSPROF_HIDDEN void xsprof_start_time_capture(void);
XSPROF_HIDDEN void xsprof_start_time_get(int64_t *realtime_ns, int64_t *clock_ns);

#endif
