/* merge/stream/internal.h — the parts of xsmerge's streaming mode (see
 * stream.h): table cursors, reorder queues, the streaming match, kept by the streamed
 * halves of read/, align/, match/, analyze/ and emit/ (stream_*.c, sfeed.c)
 * and stream.c, which drives them. Owner:
 * merge. Nothing here is used by the in-memory merge. */
#ifndef XSPROF_MERGE_STREAM_INTERNAL_H
#define XSPROF_MERGE_STREAM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "io/reader.h"
#include "merge/align/align.h"
#include "merge/emit/emit.h"
#include "merge/analyze/analyze.h"

/* ---- read/stream_tab.c: rows of one table, a chunk at a time ----------------------- */

/* Rows of one event table of one rank: read from its rank file a chunk at
 * a time (two for the arguments), or straight from memory (a rank
 * recovered from its journal is loaded whole). */
typedef struct xsm_prefetch xsm_prefetch;

typedef struct xsm_tab {
    xsprof_rankfile *rf;       /* NULL: rows in mem */
    int table;                 /* enum xsprof_io_table */
    const char *path;          /* for errors */
    size_t size;               /* bytes per row */
    uint64_t n;                /* rows */
    size_t chunk;              /* rows per read */
    const unsigned char *mem;
    unsigned char *buf[2];
    uint64_t first[2];
    size_t cnt[2];
    int victim;                /* slot the next load replaces */
    int two;                   /* keeps two chunks (the arguments); else one: rows read in order */
    char err[1024];            /* set when a read failed */
    /* read-ahead (xsm_tab_prefetch): the chunk after the last one loaded is
     * decoded by the worker into pbuf; state under the worker's lock */
    xsm_prefetch *pf;
    unsigned char *pbuf;
    uint64_t pfirst;
    size_t pcnt;
    int pstate;                /* 0 none, 1 queued or being read, 2 ready, 3 failed */
    struct xsm_tab *pnext;     /* worker queue */
} xsm_tab;

/* One worker thread that decodes chunks ahead for the tables given to it,
 * so that decoding overlaps the single-threaded MPI pass. NULL when no
 * thread could be started (tables then read inline, the same bytes). */
xsm_prefetch *xsm_prefetch_start(void);
void xsm_prefetch_stop(xsm_prefetch *p);
/* Read tab's chunks ahead on p (p may be NULL: no read-ahead); before
 * xsm_tab_close, xsm_tab_unprefetch waits for a read in flight. */
int xsm_tab_prefetch(xsm_tab *tab, xsm_prefetch *p);
void xsm_tab_unprefetch(xsm_tab *tab);

/* Rows of table t of a rank: from rf when it streams t, else from d. */
int xsm_tab_open(xsm_tab *tab, xsprof_rankfile *rf, const xsprof_rank_data *d, int t);
void xsm_tab_close(xsm_tab *tab);
/* Row i (i < tab->n), valid until the next call (the second next for the
 * arguments); NULL when the read failed (tab->err says why). */
const void *xsm_tab_row(xsm_tab *tab, uint64_t i);

/* ---- read/stream_sortq.c: rows in time order with a bounded window ------------------ */

/* Sort key of an event row: the order xsm_emit_init sorts each table by
 * (begin, thread, depth, longer first, row); thread and depth are 0 except
 * for regions, and tl = te for points. Times are on the reference clock. */
typedef struct xsm_skey {
    int64_t t, te;
    uint32_t thread;
    uint32_t depth;
    uint64_t row;
} xsm_skey;

static inline int xsm_skey_less(const xsm_skey *a, const xsm_skey *b)
{
    if (a->t != b->t) return a->t < b->t;
    if (a->thread != b->thread) return a->thread < b->thread;
    if (a->depth != b->depth) return a->depth < b->depth;
    if (a->te != b->te) return a->te > b->te;
    return a->row < b->row;
}

/* Rows arrive in table order and leave in key order through a heap of at
 * most `window` rows. A row whose key is below one already released is an
 * "outlier" (a region that ends long after it began: main, a loop around
 * everything): the detector lists them in pass 1 with their rows, and in
 * pass 2 the same heap, fed without them, gives the same releases, merged
 * with the sorted outliers into the full order. */
typedef struct xsm_sheap {
    /* Most rows arrive in order: those not below the last one queued go to
     * a FIFO (O(1)), the others to a heap; the smaller of the two fronts
     * is released, which is what one heap over all of them would release. */
    xsm_skey *key, *fkey;
    uint32_t *slot, *fslot; /* position -> slot of the row copy (NULL: keys only) */
    size_t hn, fhead, fn;   /* heap size; FIFO start and size (ring of window + 1) */
    unsigned char *rows;    /* slots of `size` bytes */
    uint32_t *free_slots;
    size_t nfree;
    uint32_t held;          /* slot of the last released row (UINT32_MAX: none) */
    size_t n, window, size; /* n = hn + fn */
    xsm_skey last;          /* last released key */
    int released;
} xsm_sheap;

int xsm_sheap_init(xsm_sheap *h, size_t window, size_t size);
/* The window for a table of `rows` rows: no more than it has. A heap that
 * holds a whole table releases nothing before its end, as any larger one,
 * so the order and the outliers are the same; and a run of many ranks with
 * short tables does not pay a full window per table and rank. */
static inline size_t xsm_window_for(size_t window, uint64_t rows)
{
    return rows < window ? (rows ? (size_t)rows : 1) : window;
}
void xsm_sheap_free(xsm_sheap *h);
/* 1 when a row with key k arrives too late for the heap (an outlier). */
static inline int xsm_sheap_late(const xsm_sheap *h, const xsm_skey *k)
{
    return h->released && xsm_skey_less(k, &h->last);
}
/* Push a row (its copy when the heap keeps rows); 1 when it is now over
 * its window and must release. */
int xsm_sheap_push(xsm_sheap *h, const xsm_skey *k, const void *row);
/* The key the next pop releases (h->n > 0). */
static inline const xsm_skey *xsm_sheap_top(const xsm_sheap *h)
{
    if (!h->fn)
        return &h->key[0];
    const xsm_skey *f = &h->fkey[h->fhead];
    return h->hn && xsm_skey_less(&h->key[0], f) ? &h->key[0] : f;
}
/* Release the smallest: its key, and its row copy (valid until the next pop). */
const void *xsm_sheap_pop(xsm_sheap *h, xsm_skey *k);

/* Per block of 64 rows of a table, the least time of the rows that go
 * through its reorder heap (outliers left out; MPI completions in, which
 * the analysis reads aside in time order); after xsm_smin_finish, the
 * least of that block and all after it. A reader whose heap's least row
 * begins before smin[next row >> XSM_SMIN_SHIFT] can release it without
 * reading further: the heap then holds the rows out of order plus up to
 * a block, not a whole window, and stays in cache. 8 B per 64 rows. */
#define XSM_SMIN_SHIFT 6
int64_t *xsm_smin_new(uint64_t rows); /* every block INT64_MAX; NULL: out of memory */
static inline void xsm_smin_note(int64_t *smin, uint64_t row, int64_t t)
{
    if (t < smin[row >> XSM_SMIN_SHIFT])
        smin[row >> XSM_SMIN_SHIFT] = t;
}
void xsm_smin_finish(int64_t *smin, uint64_t rows);

/* Outliers of one table: (key, row copy) in key order. */
typedef struct xsm_outl {
    xsm_skey *key;
    unsigned char *rows;
    size_t n, cap, size;
    uint64_t *by_row; /* their rows ascending (pass 2 skips them) */
} xsm_outl;

int xsm_outl_add(xsm_outl *o, const xsm_skey *k, const void *row);
int xsm_outl_finish(xsm_outl *o); /* sort; 0 or -1 (memory) */
void xsm_outl_free(xsm_outl *o);

/* ---- match/stream_match.c: pass 1 over the MPI tables of all ranks -------------------- */

/* One end of a message for its receiving rank, written to a spill file in
 * the order pass 1 made them (production time `p` never decreases). */
typedef struct xsm_spill {
    int64_t p;         /* reference time pass 1 had reached (<= the call's end) */
    int64_t t;         /* the receive's completion (reference clock) */
    int64_t sent;      /* the send's begin (trace.json never draws a receive before it) */
    uint32_t call_row; /* the call that shows the receive */
    uint32_t send_row; /* on src */
    int32_t src;
    /* trace.otf2's (xsm_evflow): the message, the receive's Irecv */
    uint32_t comm;
    int32_t tag;
    uint32_t posted;
    uint64_t bytes, request;
} xsm_spill;


/* merged.h5's rows of table t of rank r (emit/stream_h5src.c): those inside --from/--to. */
uint64_t xsm_h5src_rows(void *ctx, int32_t r, int table);

/* What pass 1 learns of one rank. */
typedef struct xsm_srank {
    int present;
    xsprof_rankfile *rf;
    xsm_clk clk;
    int64_t span[2];              /* first begin, last end (reference clock) */
    uint64_t rows;                /* events (for dividing ranks among threads) */
    uint64_t nev;                 /* events the writers will see */
    /* track sets */
    uint32_t *tids; size_t ntids, captids;
    xsm_gstream *gpu; size_t ngpu;
    uint32_t *counter_names; size_t ncounters; /* local string ids */
    int16_t *memdev; size_t nmemdev;
    xsm_flow *gflows; size_t ngflows;
    xsm_outl out[XSM_EV_N];       /* outliers per event table */
    int64_t *smin[XSM_EV_N];      /* per table: its rows' least times ahead (xsm_smin_new) */
    /* messages */
    uint64_t *sent;               /* bit per mpi row: a send that found its receive */
    uint64_t *sent_before;        /* per 64 rows: matched sends before them */
    uint64_t nmatched, msg_base;  /* its matched sends, messages of lower ranks */
    char spill_path[4096];
    uint64_t nspill;
    /* the reports: this rank's collective waits (xsm_cwait_rec), in the
     * order pass 1 found them */
    char cwait_path[4096];
    uint64_t ncwait;
    /* the logical clock (align/stream_clc.c), when the run needs it */
    uint64_t *pin;                /* bit per mpi row: its begin is a point another rank depends on */
    uint64_t *depb, *depe;        /* bit per mpi row: a constraint record for its begin / end */
    FILE *dep;                    /* those records (xsm_cdep), in the order pass 1 made them */
    char dep_path[4096];
    int64_t *knots;               /* (t, C) pairs mapped from knot_path */
    size_t nknots, knot_bytes;
    char knot_path[4096];
    /* merged.h5 with --from/--to: rows kept per table, and which MPI and
     * region rows (read/select.c renumbers what points at them) */
    uint64_t kept_rows[XSPROF_IO_T_COUNT];
    uint64_t *kmpi, *kmpi_before, *kreg, *kreg_before;
    uint64_t kreg_rows;
    /* trace.otf2 (xsm_erank's, handed over once pass 1 is done): the
     * thread of the first MPI call in the writers' order (its key), and
     * the marks over the MPI table's mpi_rows rows */
    uint32_t mpi_thread;
    xsm_skey mpi_first;
    uint64_t *mark[XSM_MARK_N];
    uint64_t mpi_rows;
} xsm_srank;

/* Bit sets over a table's rows with a count per 64 rows before them: the
 * rank of a set bit is its row's index among the set ones. */
static inline void xsm_bits_set(uint64_t *bits, uint64_t row)
{
    bits[row >> 6] |= 1ull << (row & 63);
}
static inline int xsm_bits_get(const uint64_t *bits, uint64_t row)
{
    return (bits[row >> 6] >> (row & 63)) & 1;
}
static inline uint64_t xsm_bits_rank(const uint64_t *bits, const uint64_t *before, uint64_t row)
{
    return before[row >> 6] + (uint64_t)__builtin_popcountll(bits[row >> 6] & ((1ull << (row & 63)) - 1));
}
static inline void xsm_bits_prefix(const uint64_t *bits, uint64_t *before, uint64_t rows)
{
    uint64_t acc = 0;
    for (uint64_t w = 0; w <= rows / 64; w++) {
        before[w] = acc;
        acc += (uint64_t)__builtin_popcountll(bits[w]);
    }
}

/* ---- align/stream_clc.c: the controlled logical clock of merge/align, streamed -------- */

struct xsm_stream;

/* What a row's boundary takes part in, written by pass 1 in collect mode
 * to the rank's dep file. RECV and EXIT constrain the row's end, ENTRY
 * gives its begin to a collective. */
enum { XSM_CDEP_RECV = 1, XSM_CDEP_EXIT = 2, XSM_CDEP_ENTRY = 3 };
typedef struct xsm_cdep {
    uint32_t row;
    uint32_t kind;   /* XSM_CDEP_* */
    int32_t src;     /* RECV: the sending rank */
    uint32_t idx;    /* RECV: the send's row; EXIT, ENTRY: member index */
    uint64_t coll;   /* EXIT, ENTRY: collective id (order of the coll file) */
} xsm_cdep;

/* One collective in the coll file: this head, then n members. `need` says
 * whose entries an exit waits for: XSM_CNEED_ALL, _ROOT, _SCAN, _SENDERS
 * (the members that give the root data, xsm_cmem.sends). */
enum { XSM_CNEED_ALL = 0, XSM_CNEED_ROOT = 1, XSM_CNEED_SCAN = 2, XSM_CNEED_SENDERS = 3 };
typedef struct xsm_ccoll {
    uint64_t id;
    uint32_t n, nexits;
    uint32_t root;   /* member index, UINT32_MAX none */
    uint32_t need;
} xsm_ccoll;
typedef struct xsm_cmem {
    int32_t rank;
    uint32_t sends;  /* merge/align xsm_coll_sends */
    int64_t pos;     /* position in the communicator (scans), -1 unknown */
} xsm_cmem;

/* The logical clock over pass 1's records (collect mode): each rank's
 * knots into its knot file, mapped into sr->clk. Returns 0, 1 (err set) or
 * 2 (needs the in-memory merge: err says why). */
int xsm_clc_run(struct xsm_stream *s, char *err, size_t errlen);
void xsm_clc_free(xsm_srank *sr);
/* The constraint records and bits only (done once the knots exist). */
void xsm_clc_records_free(xsm_srank *sr);

typedef struct xsm_stream xsm_stream;

/* Pass 1 over every present rank's MPI table at once, in time order:
 * match, count violations, fill sent bits and spill files, and the MPI
 * table's outliers, span and threads. Returns 0; 1 with err set on bad
 * input or failure; 2 when the run needs the in-memory merge (why in err). */
int xsm_smatch_run(xsm_stream *s, char *err, size_t errlen);

/* Messages index of the matched send at `row` of rank r (0-based). */
uint64_t xsm_stream_msg_index(const xsm_srank *sr, uint64_t row);

/* ---- stream.c ---------------------------------------------------------- */

struct xsm_stream {
    xsm_run *run;
    xsm_srank *r;
    size_t window;
    /* The MPI pass orders each rank's calls by begin time through a heap of
     * proc_window rows. Rows held a whole window leave the cache (4096
     * rows of 8 ranks: pass 1 took 1.2 s instead of 0.8 s for 5 M events),
     * so the first try uses window / 64; proc_late says a row came later
     * than that and the merge is tried again with the full window. */
    size_t proc_window;
    int proc_late;
    /* --from/--to: only rows that overlap [from, to] (reference clock,
     * t0 added) reach the writers, and only messages with both ends kept,
     * as merge/read/select.c cuts the in-memory model; everything else
     * (matching, clock checks, t = 0, the end) still sees every row */
    int win;
    int64_t from, to;
    const char *tmpdir;           /* spill files */
    FILE *notes;
    xsm_emit *e;
    int64_t t0;
    uint64_t nmsgs, ncolls;   /* for the summary line */
    int proc;                 /* this process in collective mode (spill file names) */
    xsm_prefetch *an_pf;      /* the reports' reading pass: its tables read ahead (analyze/sfeed.c) */
    /* the logical clock: pass 1 runs once in collect mode (constraint
     * records, no checks, nothing for the writers), align/stream_clc.c turns them into
     * knots, and every later pass sees corrected times */
    int collect, clc;
    int need_clc;             /* pass 1 found a violation (or --min-latency): try again with the clock */
    FILE *coll_file;
    char coll_path[4096];
    uint64_t coll_ids;
    uint64_t clc_violations;  /* before, counted in collect mode */
    int64_t clc_max_correction;
    /* merged.h5: pass 1 spills each matched message (xsm_h5_msgrec, in the
     * order it met) and each Isend completion (rank, send row, row), and
     * keeps the collectives; h5msgs places the messages by id */
    int h5;
    FILE *msg_spill, *scompl;
    char msg_path[4096], scompl_path[4096], h5msgs_path[4096];
    char path_path[4096]; /* the reports' critical path spill (unlinked once open) */
    int h5msgs_fd;
    xsm_collective *h5colls;
    size_t nh5colls, caph5colls;
    /* merged.h5's row reader (one table of one rank at a time) */
    xsm_tab h5tab;
    int h5tab_rank, h5tab_table;
    xsm_clk h5clk;
    uint64_t h5tab_pos, h5tab_out; /* with --from/--to: next source row, kept rows given */
    /* the reports: pass 1 counts the matched messages of each pair of
     * ranks; analyze/sfeed.c reads every rank again into the analysis */
    int report;
    struct xsm_iobufs *iob;   /* the temporary files' stdio buffers (xsm_stream_fopen) */
    size_t an_window; /* the analysis's look-back (xsm_report_opts.window; 0: 16) */
    xsm_cpairs cm;
    int otf2; /* trace.otf2: pass 1 marks rows (xsm_srank.mark) */
};

/* The event source of the writers (stream.c): a rank's rows in time order,
 * times final, with their message flow ends. */
extern const xsm_src_ops xsm_ssrc_ops;
/* The same for the analysis (analyze/sfeed.c): region, MPI, GPU and memory rows,
 * the completions too (in time order with the calls), no arguments. */
extern const xsm_src_ops xsm_ssrc_an_ops;
/* For the critical path's second read (analyze/sfeed.c): region and MPI rows
 * only, no completions, no flows. */
extern const xsm_src_ops xsm_ssrc_frames_ops;
/* For trace.otf2: every row but the arguments, the completions too, with
 * the flow ends. */
extern const xsm_src_ops xsm_ssrc_calls_ops;

/* ---- analyze/sfeed.c: report.txt/json/html, flame graphs --------------------------- */

/* The streamed analysis (merge/analyze/analyze.h) of every present rank,
 * read again through xsm_ssrc_an_ops, all ranks merged in time order: on a
 * thread of its own beside the writers' passes when `concurrent` (it reads
 * only the sources it opens), else now. 0, or 1 with err set. */
typedef struct xsm_stream_an xsm_stream_an;
int xsm_stream_report_start(xsm_stream *s, int concurrent, xsm_stream_an **j, char *err, size_t errlen);
/* Waits for it and, when `write`, writes its reports into dir (frees j).
 * Returns 0, 1 with err set, 3 when the baseline found a regression. */
int xsm_stream_report_finish(xsm_stream_an *j, const xsm_report_opts *ro, const char *dir, int write, char *err,
                             size_t errlen);

/* 1 when a row of mapped times [b, e] is inside the --from/--to window
 * (always without one). */
static inline int xsm_stream_keep(const struct xsm_stream *s, int64_t b, int64_t e)
{
    return !s->win || (e >= s->from && b <= s->to);
}

int xsm_tid_set_add(xsm_srank *sr, uint32_t tid);
/* A temporary file of the merge in the staging directory,
 * stream-WHAT-PROC[-RANK].bin (rank < 0: without), opened to be written and
 * read back (xsm_stream_fopen); its path into `path`; NULL with err set. */
FILE *xsm_stream_tmp(const xsm_stream *s, const char *what, int rank, char *path, size_t pathlen, char *err,
                     size_t errlen);
/* fopen with a stdio buffer of s->iob->size bytes, freed when the merge
 * ends (after every file is closed). setvbuf without a buffer of one's own
 * keeps glibc's, st_blksize: 4 KiB on tmpfs, where a 10 M-event merge's
 * spill files took 290 000 write and 120 000 read calls. */
FILE *xsm_stream_fopen(const xsm_stream *s, const char *path, const char *mode);
/* XSM_EV_* kind of an io event table, -1 for the arguments */
int xsm_table_kind(int table);
/* Map a row's times (kind XSM_EV_*) through clk in place; its sort key. */
void xsm_row_key(int kind, void *row, xsm_clk *clk, uint64_t i, xsm_skey *k);
/* Shift a mapped row's times by -t0 in place. */
void xsm_row_shift(int kind, void *row, int64_t t0);

/* ---- emit/stream_h5src.c: merged.h5 from the streaming passes ------------------------ */

/* After pass 1 (ids known): the spilled messages placed by id, the Isend
 * completions filled in. 0, or 1 with err set. */
int xsm_h5msgs_place(struct xsm_stream *s, char *err, size_t errlen);
/* merge/match's order of collectives: (comm, seq) */
int xsm_h5coll_cmp(const void *a, const void *b);
/* The kept collectives' times from t = 0; with --from/--to only members
 * whose row is kept, renumbered, and no collective left without one. */
void xsm_h5colls_final(struct xsm_stream *s);
extern const xsm_h5src_ops xsm_h5src;
void xsm_h5_cleanup(struct xsm_stream *s);
void xsm_srank_span(xsm_srank *sr, int64_t tb, int64_t te);

#endif
