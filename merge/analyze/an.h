/* merge/analyze/an.h — internal model of the analysis. xsm_an_compute builds
 * it once from the aligned, matched xsm_run; every report writer (text, json,
 * html, flame, callgrind, baseline) only reads it. Times are int64 ns on the
 * reference clock, as in merge/model.h. Owner: merge analysis. */
#ifndef XSPROF_MERGE_ANALYZE_AN_H
#define XSPROF_MERGE_ANALYZE_AN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "merge/model.h"
#include "merge/util.h"
#include "merge/analyze/analyze.h"
#include "core/record.h"

/* ---- growable text buffer (reports are built in memory, then written atomically) */
/* The report writers build text in memory: merge's output buffer without a
 * file (f == NULL, so `{0}` is a valid empty buffer), kept NUL-terminated so
 * b.p is a C string. A failed allocation sets b.failed for good. */
typedef xsm_out xsm_buf;

void xsm_buf_printf(xsm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xsm_buf_put(xsm_buf *b, const char *s, size_t n);
void xsm_buf_puts(xsm_buf *b, const char *s);
/* JSON string literal with quotes; `html_safe` also escapes '<' so the text
 * can sit inside an HTML <script> element. */
void xsm_buf_json_str(xsm_buf *b, const char *s, int html_safe);
/* Number as JSON (finite; NaN/inf become 0). */
void xsm_buf_json_num(xsm_buf *b, double v);
void xsm_buf_html_str(xsm_buf *b, const char *s);
void xsm_buf_free(xsm_buf *b);

/* Write `len` bytes to dir/name through a temporary file and rename, so a
 * reader never sees a half-written report. 0 ok, -1 (err set). */
int xsm_file_write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err, size_t errlen);

/* "200 ms", "1.25 s", "35.0 us" */
void xsm_fmt_dur(char *out, size_t n, double seconds);
/* "0-2,5" from a sorted list of ranks */
void xsm_fmt_ranks(char *out, size_t n, const int32_t *ranks, size_t nr);

/* ---- interned names (regions and MPI ops share one table) ----------------- */
typedef struct xsm_names {
    char **v;
    size_t n, cap;
    int32_t *slot; /* open addressing: index+1, 0 = empty */
    size_t nslot;
} xsm_names;

int32_t xsm_names_intern(xsm_names *t, const char *s); /* -1 on allocation failure */
int32_t xsm_names_find(const xsm_names *t, const char *s); /* -1 when absent */
void xsm_names_free(xsm_names *t);
struct xsm_an;
/* Name index of rank r's string `id` (interned on first use): -1 on
 * allocation failure. */
int32_t xsm_an_sname(struct xsm_an *a, int32_t r, uint32_t id);

/* ---- wait states (kinds: analyze.h) ------------------------------------------ */
const char *xsm_wait_kind_name(int kind); /* the report.json spelling */
int xsm_wait_kind_at(int i);               /* the kind listed i-th (0 .. XSM_WAIT_NKINDS-1) */

/* ---- delay costs (delay.c): where a wait's time goes ------------------------- */
/* A wait's root causes as shares (summing to 1) of (rank, region), the
 * XSM_DIST_MAX heaviest; region ids are the analysis's own (a->names, or
 * the streamed analysis's names). */
#define XSM_DIST_MAX 4
typedef struct xsm_dent {
    int32_t rank, region;
    double w;
} xsm_dent;
typedef struct xsm_dist {
    uint32_t n;
    xsm_dent e[XSM_DIST_MAX];
} xsm_dist;

/* The last waits a rank suffered, by the call they happened in: when that
 * rank causes a wait later, the part its interval does not explain goes
 * where they went. */
#define XSM_CARRY_KEEP 16
typedef struct xsm_carry {
    uint64_t row;     /* the waiting call (mpi row on the rank that waited) */
    int64_t t_cause;  /* when its causer arrived */
    int64_t ns;
    int kind;
    xsm_dist d;
} xsm_carry;
typedef struct xsm_carries {
    xsm_carry c[XSM_CARRY_KEEP];
    uint32_t n, next;
} xsm_carries;

void xsm_carries_put(xsm_carries *r, uint64_t row, int64_t t_cause, int64_t ns, int kind, const xsm_dist *d);
/* The longest wait of call `row` caused strictly before `before`, NULL none. */
const xsm_carry *xsm_carries_get(const xsm_carries *r, uint64_t row, int64_t before);

typedef int (*xsm_delay_add_fn)(void *ctx, int32_t rank, int32_t region, double seconds);
/* Delay costs of a wait of s seconds caused by rank `causer`: region[i]
 * are the regions where the causer's interval exceeds the waiter's, by
 * dl[i] > 0 ns, in the order they first appear; fallback is the causer's
 * region at its call (used when n is 0); carry[0..ncarry) are the waits
 * that made the causer late (xsm_carries_get), in the causer's time
 * order: what the excesses leave, up to their sum, goes where they went,
 * in proportion to their lengths. Calls add once
 * per (rank, region) share and sets *out (its first entry is the root).
 * 0, or -1 when add failed or memory ran out. */
int xsm_delay_costs(int32_t causer, const int32_t *region, const double *dl, size_t n, int32_t fallback, double s,
                    const xsm_carry *const *carry, size_t ncarry, xsm_dist *out, xsm_delay_add_fn add, void *ctx);

/* Pairwise synchronisation intervals (waits.c, sprofile.c): a Late Sender
 * compares the two ranks since the call in which the waiter received the
 * causer's previous message (the ranks' starts when there was none), when
 * each rank made at most XSM_PAIR_SPAN synchronising calls since (that call
 * included); else since each one's own last synchronising call. A Late
 * Receiver in a blocking send (Send, Ssend, Sendrecv: the receiver it
 * waited for is the one it sends to), or in the Wait or Test that
 * completed an Isend (the receiver of that message), compares the sender
 * and that receiver the same way: since the sender last received from
 * it. A blocking
 * collective both took part in since synchronises them too: the waiter's
 * newest one whose communicator holds the causer, within XSM_PAIR_SPAN of
 * its calls, starts both intervals at the ends of their calls of it (the
 * causer's own intervals when its call is not among its last
 * XSM_PAIR_SPAN). */
#define XSM_PAIR_SPAN 8
static inline int xsm_pair_lr_call(int kind)
{
    return kind == XSPROF_MPI_SEND || kind == XSPROF_MPI_SSEND || kind == XSPROF_MPI_SENDRECV || kind == XSPROF_MPI_WAIT;
}

/* What both analyses (waits.c, sprofile.c) must agree on. A call that can
 * synchronise its rank with another: a Wait or Test only when it completed
 * a request (an unsuccessful MPI_Test in a polling loop does not end an
 * interval). */
static inline int xsm_an_is_sync(const xsprof_io_mpi *m)
{
    int k = m->kind;
    return k == XSPROF_MPI_SEND || k == XSPROF_MPI_SSEND || k == XSPROF_MPI_RECV || k == XSPROF_MPI_SENDRECV ||
           k == XSPROF_MPI_COLL || (k == XSPROF_MPI_WAIT && m->count > 0);
}

/* A rank's MPI time is the union of its calls' intervals: calls of
 * several threads at once count once (their sum passed the wall time).
 * Intervals come in order of begin; *cover is the union's end so far
 * (INT64_MIN at first), *sum its length. */
static inline void xsm_an_cover(int64_t *cover, int64_t *sum, int64_t b, int64_t e)
{
    if (e <= *cover)
        return;
    *sum += e - (b > *cover ? b : *cover);
    *cover = e;
}

/* The length of [b, e] inside run's --from/--to window (xsm_run_clip). */
static inline int64_t xsm_an_clipped(const xsm_run *run, int64_t b, int64_t e)
{
    xsm_run_clip(run, &b, &e);
    return e - b;
}

/* The calls a receive completes in. */
static inline int xsm_an_is_recv_call(int k)
{
    return k == XSPROF_MPI_RECV || k == XSPROF_MPI_SENDRECV || k == XSPROF_MPI_WAIT;
}
/* Does rank d's communicator `comm` hold world rank w (of nworld)? */
int xsm_comm_holds(const xsprof_rank_data *d, uint32_t comm, int32_t w, size_t nworld);

/* The waits of a polling loop (waits.c poll_wait): a receive completed by a
 * Recv, Wait or Test that began after the send did counts the polls before
 * it (xsm_is_poll_op, rows that synchronise nothing) since the last
 * synchronising call, the last XSM_POLL_KEEP of them, up to the send's
 * begin, as a Late Sender; an Isend completed by a Wait or Test that began
 * after its receive was posted counts them up to the post as a Late
 * Receiver. */
#define XSM_POLL_KEEP 1024
/* xsm_is_poll_op (analyze.h): the calls of a polling loop. */

/* A wait's root region (xsm_wait, xsm_swait, xsm_swinst) and root rank
 * (xsm_swinst, merged.h5) when its causing call had left the streamed
 * analysis's look-back window before the wait was found: no cause is
 * named rather than another one (report: "beyond window"). */
#define XSM_ROOT_BEYOND (-2)

typedef struct xsm_wait {
    int kind;
    int32_t waiter, causer; /* world ranks; causer -1 when no single rank causes it */
    size_t row;             /* mpi row of the waiting call on the waiter */
    int32_t op;             /* name index of the waiting call's MPI function */
    int32_t region;         /* name index of the waiter's enclosing region, -1 none */
    int64_t t_begin, t_end; /* the wait itself on the waiter's timeline */
    int64_t t_cause;        /* when the causer arrived (its call's entry) */
    int64_t cause_prev;     /* start of the causer's synchronisation interval */
    int64_t wait_prev;      /* start of the waiter's synchronisation interval */
    int32_t root_region;    /* delay analysis: the region that explains most of it, -1 none, XSM_ROOT_BEYOND */
    uint64_t count;         /* instances: 1, or a site's in a streamed analysis (t_end - t_begin their sum) */
    int32_t root_rank;      /* root_region's rank: the causer, or one that made the causer late (in-memory only) */
} xsm_wait;

/* ---- call tree, per rank ------------------------------------------------------ */
typedef struct xsm_cnode {
    int32_t parent; /* -1 = top */
    int32_t name;   /* name index */
    int is_mpi;
} xsm_cnode;

typedef struct xsm_cstat {
    uint64_t calls;
    int64_t incl, excl;
} xsm_cstat;

typedef struct xsm_rankstat {
    int present;
    int64_t span_first, span_last; /* first and last event of the rank */
    /* the measured window: from MPI_Init's exit to MPI_Finalize's entry when
     * the rank has them, else the span; wall time and MPI share use it */
    int64_t t_first, t_last;
    int64_t mpi_ns, wait_ns, gpu_ns; /* mpi_ns: xsm_an_cover */
    uint32_t main_thread;
    xsm_cstat *cs; size_t ncs; /* per cnode (missing tail = zero) */
    int outlier;               /* 1 when this rank's compute time is > 2 sigma from the others */
    /* the rank's string id -> name index (-2: not looked up yet); slot
     * nstrings stands for every id out of range ("?"). Rows name their
     * region or MPI function by string id: one hash per string, not per row */
    int32_t *sname;
} xsm_rankstat;

typedef struct xsm_region {
    int32_t name;
    uint64_t calls;
    double *incl, *excl; /* per rank, seconds */
    uint64_t *rcalls;    /* per rank */
    double incl_min, incl_mean, incl_max, excl_min, excl_mean, excl_max, incl_sum, excl_sum;
    int32_t incl_max_rank, excl_max_rank;
    double imbalance;    /* (max - mean) / max of exclusive time */
    double saving_s;     /* wall time saved if exclusive time were balanced: max - mean */
    uint64_t outliers;   /* instances > mean + 2 sigma on their rank */
} xsm_region;

/* A counter summed over the visits of a region name on every rank
 * (counters.c; names are name indices). */
typedef struct xsm_ctr {
    int32_t region, counter;
    int64_t total;
    uint64_t visits;
    uint32_t nranks;
    int32_t last_rank;
} xsm_ctr;
/* A rate of counters of one region (counters.c). */
typedef struct xsm_rate {
    const char *name; /* ipc, cache_miss_rate, branch_miss_rate, cpu_share */
    double value;
} xsm_rate;

typedef struct xsm_mpiop {
    int32_t name;
    uint64_t calls;
    double seconds;
    uint64_t bytes_sent, bytes_recv;
    uint64_t *rcalls;
    double *rseconds;
    uint64_t *rbytes;
} xsm_mpiop;

typedef struct xsm_outlier {
    int32_t region, rank;
    int64_t t_begin;
    double seconds, mean_s, sigma_s;
} xsm_outlier;

typedef struct xsm_rootcause {
    int kind;
    int32_t rank, region;
    double seconds;
} xsm_rootcause;

/* One piece of the critical path: [t0, t1) on `rank`. */
typedef struct xsm_cpseg {
    int32_t rank;
    int64_t t0, t1;
} xsm_cpseg;

typedef struct xsm_pathpart {
    int32_t name; /* region or MPI op */
    double seconds;
} xsm_pathpart;

typedef struct xsm_finding {
    char kind[48];
    const char *severity;
    double seconds_lost;  /* rank-seconds: summed over the ranks that lose time */
    int32_t region;       /* name index or -1 */
    int32_t *ranks;       /* causing rank first, then the ranks that lose time */
    size_t nranks;
    char message[2048];
    char recommendation[512];
    int outside;          /* a wait finding whose delay lies outside every region */
    int32_t where1;       /* 1 + the call site (a->css) where most of these waits were, 0 none */
    int32_t cause1;       /* 1 + the call site that caused most of them, 0 none */
    /* 1 + the function the causing rank ran most while they waited (name
     * index), 0 none; its file (-1 unknown), most sampled line, share of
     * the waits' samples (xsm_samples_delay) */
    int32_t burn1, burn_file;
    int burn_line;
    double burn_share;
} xsm_finding;

typedef struct xsm_gpudev {
    int32_t rank;
    uint32_t device;
    uint64_t kernels;
    double kernel_s, busy_s, idle_share;
    uint64_t htod, dtoh, dtod, other_bytes;
    uint64_t overlap_kernels; /* kernels running while the rank waited in MPI */
    double overlap_s;
} xsm_gpudev;

/* Memory events (xsprof_mem_alloc/free, XSPROF_MEMORY=1): per rank. */
#define XSM_LEAK_FRAMES 8
typedef struct xsm_leak {
    uint64_t ptr, bytes;
    int64_t t;        /* allocation time */
    int32_t region;   /* innermost region of the main thread then, -1 none/other thread */
    int16_t device;
    /* where it was allocated (XSPROF_MEMORY_STACK_BYTES): "function
     * (file:line)" name indices, the allocating call first */
    int32_t frames[XSM_LEAK_FRAMES];
    int nframes;
} xsm_leak;

typedef struct xsm_memrank {
    int32_t rank;
    uint64_t allocs, frees, unknown_frees; /* frees of pointers never seen allocated */
    uint64_t peak_bytes;
    int64_t peak_t;
    uint64_t leaked_bytes, leaked_allocs;  /* still allocated at the end: leak candidates */
    uint64_t mpi_held_bytes, mpi_held_allocs; /* still allocated, made inside MPI calls */
    xsm_leak *leaks; size_t nleaks;        /* the largest, at most 10 */
} xsm_memrank;

/* Where the program calls MPI (callsites.c): one row per place in the
 * code (function, file, line; the same code in every rank is one row). */
typedef struct xsm_callsite {
    int32_t op;                     /* name index of the MPI function called there */
    int32_t function, file, module; /* name indices; file, module -1 when unknown */
    int line;                       /* 0 unknown */
    uint64_t calls;
    double mpi_s;                   /* time in the calls made there */
    uint64_t bytes;                 /* sent and received by them */
    uint64_t wait_n[XSM_WAIT_NKINDS];
    double wait_s[XSM_WAIT_NKINDS], wait_total_s; /* wait states in those calls */
    uint64_t caused_n[XSM_WAIT_NKINDS];
    double caused_s[XSM_WAIT_NKINDS];             /* wait states of other ranks caused by those calls */
    uint32_t nranks;                /* ranks that called there */
    int32_t last_rank;
} xsm_callsite;

/* Where the CPU time goes (samples.c): sampled instructions by place in
 * the code, summed over ranks. */
typedef struct xsm_sample {
    int32_t function, file, module; /* name indices; file, module -1 when unknown */
    int32_t inlined;                /* the function inlined into `function` at the line, -1 none */
    int line;
    uint64_t n;                     /* samples */
    double seconds;                 /* n x the period (0 when not known) */
    uint32_t nranks;
    int32_t last_rank;
} xsm_sample;
/* The samples a causing rank took in the delay windows of waits of one
 * kind (samples.c), by each program function on their stacks (function
 * -1: all of them), with its most sampled line, and all the rank's
 * samples in that function. */
typedef struct xsm_dwin {
    int32_t kind, rank, function, file; /* file -1 unknown */
    int line;
    uint64_t n, line_n, all;
} xsm_dwin;
/* One address the analysis resolved (frames.c: call sites, samples, leak
 * stacks): where
 * it is and what is there (the function the code was compiled into, the
 * function inlined deepest at the address, its file and line). */
typedef struct xsm_anframe {
    int32_t module, function, inlined, file; /* name indices; inlined, file -1 none */
    int line;
    int ret;          /* 1: a return address (looked up at offset - 1) */
    uint64_t offset;  /* the ELF address in the module */
} xsm_anframe;

/* The sampled call graph for callgrind.out (samples.c), summed over
 * ranks: samples at a place in the code (cg_self: the sampled line; arcs:
 * the line of the caller that calls callee, with the samples under it).
 * Name indices; file is the module's path where no line information is. */
typedef struct xsm_cgarc {
    int32_t function, file;
    int line;
    int32_t callee, cfile; /* -1: a self cost, not a call */
    uint64_t n;
} xsm_cgarc;

/* Where a rank ran (topology.c), from its file's hwloc record and the
 * topo_* metadata (mpi/topo.c); strings point into the run's. */
typedef struct xsm_toporank {
    int32_t rank;
    const char *host;
    const char *cpuset, *cores; /* list syntax, "" unknown */
    const char *numa;           /* the NUMA nodes its binding meets, "" unknown (older files) */
    int32_t numa_node;          /* the first of them, -1 unknown */
    const char *gpus;           /* GPUs near its binding */
    const char *gpu_numa;       /* every GPU of its host: "bus=node,..." */
    int32_t ncores_host;
    int bound;                  /* 1 bound to part of the machine, 0 not bound, -1 unknown */
    int used_gpu;               /* it ran GPU work */
    uint32_t hostix;            /* its host in xsm_an.thost */
} xsm_toporank;

/* A host of the run (topology.c), in order of its first rank. */
typedef struct xsm_topohost {
    const char *host;
    size_t ranks;
    int32_t ncores;             /* its first rank's ncores_host */
    const char *gpu_numa;       /* its first rank's: every GPU with its NUMA node */
} xsm_topohost;

typedef struct xsm_an {
    const xsm_run *run;
    size_t nranks;
    xsm_names names;
    xsm_cnode *cn; size_t ncn, cncap;
    xsm_rankstat *rs;
    int64_t t0, t1;          /* first and last event of the job */
    xsm_region *reg; size_t nreg;
    xsm_mpiop *ops; size_t nops;
    xsm_wait *w; size_t nw, wcap;
    double wait_s[XSM_WAIT_NKINDS];
    uint64_t wait_n[XSM_WAIT_NKINDS];
    /* of those, the waits whose root cause lies beyond the window (XSM_ROOT_BEYOND) */
    double beyond_s[XSM_WAIT_NKINDS];
    uint64_t beyond_n[XSM_WAIT_NKINDS], beyond_total;
    xsm_rootcause *rc; size_t nrc;
    xsm_outlier *out; size_t nout; /* the largest, by excess */
    uint64_t nout_total;
    /* critical path */
    double cp_length_s;
    int32_t cp_end_rank;
    size_t cp_segments;
    xsm_pathpart *cp; size_t ncp;
    double *cp_rank_s;       /* per rank */
    /* communication */
    /* the pairs that exchanged messages, by (src, dst): sparse, as a run of
     * N ranks has far fewer than N x N of them */
    xsm_cpair *cm; size_t ncm;
    /* gpu */
    xsm_gpudev *gpu; size_t ngpu;
    /* memory */
    xsm_memrank *mem; size_t nmem;
    uint64_t gpu_rows;
    /* health */
    uint64_t dropped_total;
    size_t truncated, recovered, missing;
    xsm_finding *f; size_t nf, fcap;
    double total_rank_s;     /* sum of ranks' wall time: the denominator of severities */
    /* for merged.h5: every wait instance (xsm_swinst) and the path's pieces
     * (xsm_cpseg) in temporary files, and the engine's names as names here */
    FILE *sw_file, *scp_file;
    uint64_t sw_n, scp_n;
    int32_t *sgmap;
    FILE *own_inst, *own_pieces; /* those files when the analysis made them (in memory: mfeed.c), closed with it */
    /* call sites, by MPI time (callsites.c); css_known: some had an address
     * in a known module (the run recorded call sites); css_note: the first
     * note of merge/symbols on what it could not resolve */
    xsm_callsite *css; size_t ncss, csscap;
    xsm_toporank *topo; size_t ntopo; /* present ranks with a topology record, by rank */
    xsm_topohost *thost; size_t nthost;
    size_t window;           /* the engine's look-back, in calls per rank */
    /* sampled CPU time (XSPROF_SAMPLE_HZ), by samples; smp_timed: every
     * rank said what a sample weighs (perf), else shares only */
    xsm_sample *smp; size_t nsmp, smpcap;
    uint64_t smp_total;
    int smp_timed;
    /* the samples taken in no region (the engine placed them), by place */
    xsm_sample *nosmp; size_t nnosmp, nosmpcap;
    uint64_t nosmp_total;
    /* the report's one symbol resolver (xsm_an_symbols): call sites,
     * samples, leak stacks and callgrind places share its cache, so each
     * unique address is resolved once */
    struct xsm_symbols *sym;
    /* per-region counters (XSPROF_COUNTERS), by region and counter */
    xsm_ctr *ctr; size_t nctr, ctrcap;
    /* what causing ranks ran while others waited (xsm_samples_delay) */
    xsm_dwin *dwin; size_t ndwin, dwincap;
    xsm_buf smp_folded; /* the sampled stacks folded ("rank N;main;f;g samples"), rank by rank, sorted */
    /* every address resolved for the call sites and the samples, first
     * seen first (frames.c; merged.h5 /analysis/frames) */
    xsm_anframe *frm; size_t nfrm, frmcap;
    xsm_names frm_keys;
    xsm_cgarc *cga; size_t ncga, cgacap; /* the sampled call graph, first seen first */
    xsm_names cga_keys;
    double score_for;        /* the report's `score` projection (xsm_report_opts.score_for) */
    int css_known;
    char css_note[512];
} xsm_an;

/* ---- streamed analysis (sprofile.c): one accumulator per rank --------------- */
/* Names are the rank's string ids until xsm_an_compute_streamed folds them. */
typedef struct xsm_scnode {
    int32_t parent; /* local node, -1 top */
    uint32_t sid;
    int is_mpi;
    xsm_cstat cs;
} xsm_scnode;

typedef struct xsm_sop {
    uint32_t sid;
    uint64_t calls, bytes_sent, bytes_recv;
    int64_t ns;
} xsm_sop;

/* The longest instances of a region name on a rank: the outlier test of
 * profile.c, run on them once the name's moments are complete. */
#define XSM_STREAM_TOP 16
typedef struct xsm_sinst {
    int64_t t0;
    double s;
} xsm_sinst;

typedef struct xsm_sname {
    uint32_t sid;
    double n, sum, sumsq;
    xsm_sinst top[XSM_STREAM_TOP]; /* shortest first */
    size_t ntop;
} xsm_sname;

/* Waits of one site (kind, causer, MPI function, enclosing region, root
 * cause): the streamed analysis keeps sites, not instances. */
typedef struct xsm_swait {
    int kind;
    int32_t causer;
    uint32_t op;
    int64_t encl; /* string id, -1 none */
    int32_t root; /* the delay analysis's region (xsm_sanalysis_name), -1 none, XSM_ROOT_BEYOND */
    uint64_t n;
    int64_t ns;
} xsm_swait;

/* A rank's MPI calls by call site (io/FORMAT.md, the rank's id; 0
 * unknown): kind -1 counts its calls and their time, a wait kind its
 * waits, XSM_WAIT_NKINDS + a kind the waits it caused (as the causing call). */
typedef struct xsm_scs {
    uint32_t cs, op; /* op: the MPI function's string id */
    int kind;
    uint64_t n;
    int64_t ns;
    uint64_t bytes;  /* sent and received (calls) */
} xsm_scs;

/* A synchronisation interval: exclusive time of its XSM_VMAX largest
 * regions (global names of the streamed analysis). */
#define XSM_VMAX 8
typedef struct xsm_vent {
    int32_t g;
    int64_t ns;
} xsm_vent;
typedef struct xsm_vec {
    uint32_t n;
    xsm_vent e[XSM_VMAX];
} xsm_vec;

/* Root causes of the streamed delay analysis: (kind, causing rank, region). */
typedef struct xsm_srcause {
    int kind;
    int32_t rank;
    int32_t region; /* xsm_sanalysis_name, -1 none */
    double seconds;
} xsm_srcause;

/* GPU activity of one device of a rank (misc.c's gpu_rank, streamed). */
typedef struct xsm_sgpu {
    uint32_t device;
    uint64_t kernels, overlap_kernels;
    int64_t kernel_ns, busy_ns, overlap_ns;
    int64_t cb, ce; /* the union of kernel spans so far: its last piece */
    uint64_t htod, dtoh, dtod, other_bytes;
} xsm_sgpu;

/* Memory events of a rank (memory.c's rank_memory, streamed): the leaks'
 * regions are the rank's string ids (-1 none). */
typedef struct xsm_sleak {
    uint64_t ptr, bytes;
    int64_t t;
    int64_t region;
    int16_t device;
} xsm_sleak;

typedef struct xsm_smem {
    int present; /* the rank had memory events */
    uint64_t allocs, frees, unknown_frees, peak_bytes;
    int64_t peak_t;
    uint64_t leaked_bytes, leaked_allocs, mpi_held_bytes, mpi_held_allocs;
    xsm_sleak leaks[10]; /* the largest (bytes, then time, then address) */
    size_t nleaks;
} xsm_smem;

/* A rank's counter deltas (XSPROF_COUNTERS) summed over the visits of a
 * region name (string ids of the rank). */
typedef struct xsm_sctr {
    uint32_t name, counter;
    int64_t total;
    uint64_t visits;
} xsm_sctr;

typedef struct xsm_anrank_out {
    const xsm_scnode *cn; size_t ncn;      /* parents before children */
    const xsm_sgpu *gpu; size_t ngpu;      /* devices in order of their first row */
    uint64_t gpu_rows;
    int64_t gpu_ns;
    const xsm_smem *mem;
    const xsm_sop *ops; size_t nops;
    const xsm_sname *names; size_t nnames;
    const xsm_swait *w; size_t nw;
    const xsm_scs *cs; size_t ncs;         /* by call site */
    uint32_t main_thread;
    int64_t t_first, t_last, init_end, fin_begin, mpi_ns;
    const struct xsm_ssmp *smp;            /* its samples by region and delay window (NULL: none) */
    const xsm_sctr *ctr; size_t nctr;      /* counter deltas by (region name, counter), string ids */
} xsm_anrank_out;

/* Rank r's accumulator (all zero for an absent rank). */
void xsm_sanalysis_view(const xsm_sanalysis *sa, int32_t r, xsm_anrank_out *o);
/* The streamed analysis's names of root-cause regions; NULL for -1. */
const char *xsm_sanalysis_name(const xsm_sanalysis *sa, int32_t g);
const xsm_srcause *xsm_sanalysis_rootcauses(const xsm_sanalysis *sa, size_t *n);
/* Its look-back window, in calls per rank. */
size_t xsm_sanalysis_window(const xsm_sanalysis *sa);
/* ---- ssamples.c: a rank's CPU samples in the engine (sprofile.c takes
 * them in time order among the rank's events) */
typedef struct xsm_ssmp xsm_ssmp;
/* samples by (key, call stack id): key the call-tree node + 1 of the
 * innermost region or MPI call (0: neither) for the regions', a wait kind
 * for the delay windows' */
typedef struct xsm_ssmpn { uint32_t key, stack; uint64_t n; } xsm_ssmpn;
/* Rank r's samples in time order on the merged timeline (inside
 * --from/--to); NULL when it has none or memory ran out (d->nsamples
 * tells them apart). */
xsm_ssmp *xsm_ssmp_new(const xsm_run *run, int32_t r);
void xsm_ssmp_free(xsm_ssmp *s);
/* The next sample before `before`: 1 with its time, stack and thread
 * (tid, UINT32_MAX a thread xsprof does not know), 0 none. */
int xsm_ssmp_next(xsm_ssmp *s, int64_t before, int64_t *t, uint32_t *stack, uint32_t *tid);
/* One sample in region context ctx. 0, -1 out of memory. */
int xsm_ssmp_ctx(xsm_ssmp *s, uint32_t ctx, uint32_t stack);
/* The samples of [t0, t1) (while another rank waited `kind` for this one). */
int xsm_ssmp_window(xsm_ssmp *s, int kind, int64_t t0, int64_t t1);
const xsm_ssmpn *xsm_ssmp_ctxs(const xsm_ssmp *s, size_t *n);
const xsm_ssmpn *xsm_ssmp_windows(const xsm_ssmp *s, size_t *n);

/* A wait instance of a streamed analysis (sprofile.c), spilled for
 * merged.h5: string ids are the waiter's; root a name of the analysis. */
typedef struct xsm_swinst {
    int32_t kind, waiter, causer, root, root_rank;
    uint32_t op, encl; /* encl UINT32_MAX: none */
    uint64_t row;
    int64_t t_begin, t_end, t_cause;
} xsm_swinst;
FILE *xsm_sanalysis_instances(const xsm_sanalysis *sa, uint64_t *n);
/* The file of the path's pieces and how many (spath.c); NULL: none kept. */
FILE *xsm_spath_pieces(const xsm_spath *p, uint64_t *n);

/* A rank's measured window (between MPI start-up and shutdown when it has
 * them) from its accumulator; a rank without events has an empty one at
 * the start of run's --from/--to window (at 0 without one). */
void xsm_an_window(const xsm_run *run, const xsm_anrank_out *v, int64_t *t_first, int64_t *t_last);
/* xsm_spath_walk with each rank's window and main thread given. */
int xsm_spath_walk_at(xsm_spath *p, const int64_t *first, const int64_t *last, const uint32_t *main_thread);

/* The analysis of run in memory (mfeed.c): 0 ok, -1 on failure (err set).
 * e: the run's prepared trace (xsm_emit_init with every rank), NULL: made here. */
int xsm_an_compute(xsm_an *a, const xsm_run *run, char *err, size_t errlen);
struct xsm_emit;
int xsm_an_compute_emit(xsm_an *a, const xsm_run *run, const struct xsm_emit *e, char *err, size_t errlen);
/* The analysis from the engine's results (analyze.c): the accumulators
 * sa, the critical path walked and split, the communication pairs cm
 * (sorted, taken over). 0, or -1 (err set, a freed). */
int xsm_an_build(xsm_an *a, const xsm_run *run, const xsm_sanalysis *sa, const xsm_spath *path, xsm_cpair *cm,
                 size_t ncm, char *err, size_t errlen);
void xsm_an_free(xsm_an *a);
const char *xsm_an_name(const xsm_an *a, int32_t idx); /* "(no region)" for -1 */

/* "function (file:line)" of call site c (a->css), or "function" alone. */
void xsm_callsite_fmt(const xsm_an *a, const xsm_callsite *c, char *out, size_t n);
/* The call site calling op (name index) with the most waits of `kind`, -1
 * none; caused: the one that caused the most (op -1: any function). */
int32_t xsm_callsite_of_waits(const xsm_an *a, int32_t op, int kind, int caused);

/* the stages of xsm_an_build, in order (each file owns one), from the
 * engine's results */
int xsm_an_profile(xsm_an *a, const xsm_sanalysis *sa); /* profile.c: call trees, regions, MPI ops, outliers */
int xsm_an_waits(xsm_an *a, const xsm_sanalysis *sa);   /* waits.c: wait sites, beyond window, root causes */
int xsm_an_path(xsm_an *a, const xsm_spath *p);         /* spath.c: critical path */
int xsm_an_gpu(xsm_an *a, const xsm_sanalysis *sa);     /* misc.c: GPU devices */
int xsm_an_health(xsm_an *a);                           /* misc.c: health, wall-time denominators */
int xsm_an_memory(xsm_an *a, const xsm_sanalysis *sa);  /* memory.c: high-water marks, leak candidates */
int xsm_an_callsites(xsm_an *a, const xsm_sanalysis *sa); /* callsites.c: MPI time and waits by call site */
int xsm_an_samples(xsm_an *a, const xsm_sanalysis *sa); /* samples.c: sampled CPU time by place in the code */
/* The function causer ran while others waited for it in waits of `kind`
 * (*top; returns 1, 0 when it took no samples then): of the program's
 * functions on nearly every stack of the waits' windows, the one whose
 * samples fell most in them. *total: the windows' samples. */
int xsm_samples_delay(const xsm_an *a, int kind, int32_t causer, const xsm_dwin **top, uint64_t *total);
/* xsm_read_locate, the address noted in a->frm when a module holds it
 * (frames.c): the analysis's one way to resolve an address. NULL as
 * xsm_read_locate; also when the note ran out of memory (*mod set). */
struct xsm_symbols;
/* The report's symbol resolver, opened at its first use with what the
 * processes of a collective merge resolved (run->sym_share_dir); NULL when
 * out of memory. Closed with the model. */
struct xsm_symbols *xsm_an_symbols(xsm_an *a);
const struct xsm_loc *xsm_an_locate(xsm_an *a, struct xsm_symbols *sym, const xsprof_rank_data *d, uint64_t pc, int ret,
                                    const xsprof_io_module **mod);
/* Where the program (the first present rank's first module) defines the
 * function named `name`: its file (a name index) and in *line its first
 * line; -1 when it defines none with line information (frames.c). */
int32_t xsm_an_function_place(xsm_an *a, struct xsm_symbols *sym, const char *name, int *line);
int xsm_an_topology(xsm_an *a);                         /* topology.c: bindings, NUMA nodes, GPUs */
int xsm_an_counters(xsm_an *a, const xsm_sanalysis *sa); /* counters.c: per-region counters */
/* Counter `counter` of region name `region` (NULL: not recorded), and the
 * rates region g's counters allow (out: at most 4; returns how many). */
const xsm_ctr *xsm_counter_of(const xsm_an *a, int32_t region, const char *counter);
int xsm_counter_rates(const xsm_an *a, const xsm_region *g, xsm_rate *out);
int xsm_an_findings(xsm_an *a);                         /* findings.c */
int xsm_topo_findings(xsm_an *a);                       /* topology.c, called by xsm_an_findings */
int xsm_an_finding_add(xsm_an *a, const xsm_finding *f); /* copies f (takes ranks) */


/* ---- writers ---------------------------------------------------------------- */
void xsm_report_json(const xsm_an *a, xsm_buf *b, int html_safe);
void xsm_report_text(const xsm_an *a, xsm_buf *b);
void xsm_report_summary(const xsm_an *a, xsm_buf *b);
/* Folded stacks "rank N;a;b;leaf value_us" sorted, one per line. */
void xsm_flame_folded(const xsm_an *a, xsm_buf *b);
/* SVG flame graph from folded text; `base` (may be NULL) gives a
 * differential graph: widths from `folded`, colour from the change. */
void xsm_flame_svg(const char *folded, const char *base, const char *title, xsm_buf *b);
void xsm_report_html(const char *json, const char *folded, xsm_buf *b);
void xsm_callgrind_write(xsm_an *a, xsm_buf *b);

/* Baseline comparison. Appends regression findings to `a`, writes a section
 * into `b`. Returns 0 nothing passed the threshold, 3 regression, 1 error. */
int xsm_baseline_compare(xsm_an *a, const char *list, double threshold_pct, xsm_buf *b, char *err, size_t errlen);
/* Folded stacks of a baseline dir (its flame.folded, or a run dir analysed
 * now). 0 ok, 1 error. */
int xsm_baseline_folded(const char *dir, xsm_buf *out, char *err, size_t errlen);

#endif
