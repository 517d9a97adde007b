/* merge/emit/emit.h — stage 5 of xsmerge: the timeline products
 * (trace.json, trace.pftrace, merged.h5, trace.otf2) written from an aligned, matched
 * xsm_run. Owner: merge.
 *
 * xsm_emit_init prepares what all writers share: a global string table
 * (same text = same id on every rank), per rank and table the rows sorted
 * by begin time, the tracks (threads, GPU streams, counters) and the flow
 * endpoints. xsm_iter then merges the (rank, table) streams with a k-way
 * heap, so writers see one time-ordered event stream and write as they go:
 * beyond the model, memory is O(rows) for the sort indices (4 bytes a row)
 * plus O(open slices) for the Perfetto end heap and fixed output buffers. */
#ifndef XSPROF_MERGE_EMIT_H
#define XSPROF_MERGE_EMIT_H

#include <stddef.h>
#include <stdint.h>
#include "merge/model.h"
#include "merge/util.h"

enum xsm_ev_kind { XSM_EV_REGION = 0, XSM_EV_MPI, XSM_EV_GPU, XSM_EV_INSTANT, XSM_EV_COUNTER, XSM_EV_MEM, XSM_EV_N };

/* One end of a message flow on an MPI row, as trace.pftrace draws it. */
typedef struct xsm_evflow {
    uint64_t id;  /* message index + 1 */
    int64_t t;    /* where it touches the row: the send's begin, the receive's completion */
    int out;      /* 1: starts here (send); 0: ends here */
    int64_t sent; /* the send's begin (trace.json's; a per-rank in-memory source leaves a receive's INT64_MIN) */
    int32_t peer; /* the other end's rank: the receiver of a start, the sender of an end (-1 unknown) */
    uint64_t peer_row; /* the other end's mpi row (UINT64_MAX unknown) */
    /* trace.otf2's, filled for a receive's end by its source (xsm_emit_source_calls):
     * the message's comm, tag and bytes (the send's) and, when the receive
     * was posted by an Irecv row, posted 1 and that request */
    uint32_t comm;
    int32_t tag;
    uint64_t bytes;
    uint64_t request;
    int posted;
} xsm_evflow;

typedef struct xsm_ev {
    int64_t t;
    int32_t rank;
    int kind; /* enum xsm_ev_kind */
    size_t row;
    /* Filled by event sources for trace.pftrace (xsm_src_ops), not by
     * xsm_iter_next: the row itself (times final), a region's arguments
     * (NULL if none) and an MPI row's message flow ends (starts first, then
     * ends in id order). Valid until the next event. */
    const void *rec;
    const xsprof_io_arg *args;
    const xsm_evflow *mflows;
    size_t nmflows;
} xsm_ev;

/* One flow endpoint on an mpi or gpu row (16 bytes: two per message;
 * where it touches the row is xsm_emit_flow_time). */
typedef struct xsm_flow {
    uint32_t row;
    uint32_t out; /* 1: starts here (send, launch); 0: ends here */
    uint64_t id;  /* messages: index + 1; GPU launches: bit 62 | rank << 32 | correlation */
} xsm_flow;

typedef struct xsm_gstream {
    uint32_t device, stream;
} xsm_gstream;

/* Rows a message or collective of trace.otf2 touches beyond its flow ends:
 * the Irecv posts of messages it writes; the sends whose receive shows in
 * no call (left out, with their receive); the collective calls whose
 * instance every member of the communicator reached (the others get no
 * collective records). */
enum xsm_mark { XSM_MARK_RECV_POST = 0, XSM_MARK_SEND_HIDDEN, XSM_MARK_COLL_WHOLE, XSM_MARK_N };

typedef struct xsm_erank {
    uint32_t *gname;          /* local string id -> global id */
    uint32_t *order[XSM_EV_N]; /* rows sorted by begin time (MPI: COMPLETION rows left out) */
    size_t norder[XSM_EV_N];
    uint32_t *tids; size_t ntids;          /* threads, sorted */
    uint32_t *tid_names;                   /* global name id per thread, UINT32_MAX if none */
    xsm_gstream *gpu; size_t ngpu;         /* GPU (device, stream) tracks, sorted */
    uint32_t *counters; size_t ncounters;  /* global name ids of counter tracks, sorted */
    int16_t *memdev; size_t nmemdev;       /* devices with memory rows (-1 host), sorted */
    xsm_flow *mflows; size_t nmflows;      /* on mpi rows, sorted by row */
    xsm_flow *gflows; size_t ngflows;      /* on gpu rows, sorted by row */
    uint32_t *xos; size_t nxos;            /* kernel tids of the sampled threads the thread table
                                              lacks (they never called xsprof), sorted: thread
                                              tracks of their own, after the rank's other tracks */
    uint64_t track_base;                   /* first dense track number of this rank (from 1) */
    /* trace.otf2's (xsm_emit_marks, or the streamed merge's pass 1): the
     * thread of the rank's first MPI call (UINT32_MAX none), and bit sets
     * over its MPI rows, NULL when none is set (enum xsm_mark) */
    uint32_t mpi_thread;
    uint64_t *mark[XSM_MARK_N];
} xsm_erank;

/* Set bit `row` of a bit set over `rows` rows, made on its first bit; -1
 * out of memory. */
int xsm_mark_set(uint64_t **set, uint64_t rows, uint64_t row);
static inline int xsm_mark_get(const xsm_erank *er, int mark, size_t row)
{
    const uint64_t *b = er->mark[mark];
    return b && (b[row >> 6] >> (row & 63)) & 1;
}

/* Argument names the writers use, interned once (debug annotations). */
enum xsm_key { XSM_KEY_PEER = 0, XSM_KEY_TAG, XSM_KEY_ROOT, XSM_KEY_BYTES_SENT, XSM_KEY_BYTES_RECV, XSM_KEY_COMM,
               XSM_KEY_COUNT, XSM_KEY_COLL_SEQ, XSM_KEY_KIND, XSM_KEY_DEVICE, XSM_KEY_STREAM, XSM_KEY_CORRELATION,
               XSM_KEY_BYTES, XSM_KEY_GRID, XSM_KEY_BLOCK, XSM_KEY_RECV, XSM_KEY_N };

typedef struct xsm_emit xsm_emit;

/* Where trace.pftrace's per-rank writer takes one rank's events from: the
 * in-memory iterator (xsm_emit.src NULL) or xsmerge's streaming mode
 * (merge/stream/), which reads the rank files chunk by chunk. `next` gives
 * the rank's events in the order xsm_iter would, with the xsm_ev fields
 * for trace.pftrace filled in. */
typedef struct xsm_src_ops {
    void *(*open)(const xsm_emit *e, size_t rank, char *err, size_t errlen); /* NULL: failed, err set */
    int (*next)(void *src, xsm_ev *ev); /* 1 got one, 0 done, -1 failed */
    int (*close)(void *src, char *err, size_t errlen); /* 0, or 1 with err set when next failed */
} xsm_src_ops;

/* Where merged.h5 takes the event tables and messages from in streaming
 * mode (xsm_emit.h5src; NULL: the model). Times are final (aligned, t = 0
 * at the job's first event). */
typedef struct xsm_h5_msgrec {
    xsm_message m;
    int64_t send_begin, send_end, recv_end;
} xsm_h5_msgrec;
typedef struct xsm_h5src_ops {
    uint64_t (*rows)(void *ctx, int32_t rank, int table); /* rows of an event table (enum xsprof_io_table) */
    /* rows [i, i + n) of it in file order, io layout; 0, or -1 with err set */
    int (*read)(void *ctx, int32_t rank, int table, uint64_t i, size_t n, void *buf, char *err, size_t errlen);
    /* messages [i, i + n) in id order; 0, or -1 with err set */
    int (*msgs)(void *ctx, uint64_t i, size_t n, xsm_h5_msgrec *out, char *err, size_t errlen);
} xsm_h5src_ops;

/* open's rank for a source over all ranks (xsm_emit_source_all) */
#define XSM_ALL_RANKS SIZE_MAX

/* Collective mode: the chunks of merged.h5's event tables are encoded by
 * several processes, the helpers (NULL in xsm_emit: the writer alone).
 * Chunk c of a table is encoded by helper c % n; helper 0 is the writer,
 * which receives the others' chunks in that order and stores them all.
 * Every helper walks the same tables with the same deflate level, so
 * the division is the same everywhere and the file's bytes are the serial
 * merge's. */
typedef struct xsm_h5_share {
    int n, me;  /* helpers; this process's index (0: the writer) */
    int level;  /* merged.h5's deflate level, process 0's */
    /* helper -> writer: one chunk's bytes; len 0 says the helper failed */
    int (*send)(void *ctx, const void *bytes, size_t len);
    /* writer: the next chunk of helper h into buf (cap bytes); its length,
     * 0 when that helper failed, (size_t)-1 when it does not fit */
    size_t (*recv)(void *ctx, int h, void *buf, size_t cap);
    /* at the end, in every process given the share: a helper waits until
     * its chunks are received; the buffers go */
    void (*done)(void *ctx);
    void *ctx;
} xsm_h5_share;

struct xsm_emit {
    const xsm_run *run;
    uint32_t key[XSM_KEY_N]; /* global name ids of enum xsm_key */
    xsm_strtab names;
    xsm_erank *ranks;
    uint64_t nevents; /* events of all ranks (what a full iteration yields) */
    uint32_t *comm_name; /* global name id per comm id seen (index = position in comm_ids) */
    uint32_t *comm_ids; size_t ncomms;
    int threads; /* writers may use this many threads (set after init; 0 = 1) */
    /* atomic: the analysis runs beside the writers (set before it starts,
     * cleared when it ends): they take a thread fewer meanwhile, since that
     * one thread is the merge's longest path (xsm_emit_threads) */
    int an_beside;
    uint64_t hold; /* bytes of trace.pftrace that may wait in memory for their place (0: in files) */
    const xsm_src_ops *src; /* trace.pftrace's event source; NULL: the model (xsm_iter) */
    void *src_ctx;          /* for src */
    const xsm_h5src_ops *h5src; /* merged.h5's rows; NULL: the model */
    void *h5src_ctx;
    uint64_t h5src_nmsgs;
    const xsm_h5_share *h5share; /* merged.h5's chunks encoded by several processes (model only) */
    int json_whole; /* trace.json only if it fits one part (the default products): else xsm_emit_json
                       writes nothing and returns 2 */
};

/* The threads a writer may start now: e->threads, one fewer while the
 * analysis runs beside (at least 1). On 2 cores, sharing both with the
 * writers the analysis of NetPIPE's 9.8 M events went on alone for 2.7 s
 * after merged.h5; a writer that starts after it ended takes them all. */
static inline int xsm_emit_threads(const struct xsm_emit *e)
{
    int n = e->threads > 1 ? e->threads : 1;
    return n > 1 && __atomic_load_n(&e->an_beside, __ATOMIC_RELAXED) ? n - 1 : n;
}

#define XSM_EMIT_MAX_THREADS 8

/* The source of one rank's events (open with the rank), and of all
 * ranks' events in xsm_iter's order (open with XSM_ALL_RANKS). */
const xsm_src_ops *xsm_emit_source(const xsm_emit *e);
const xsm_src_ops *xsm_emit_source_all(const xsm_emit *e);

/* The analysis's event source over the model (regions, MPI rows with
 * COMPLETIONs, GPU, memory; a receive's flow end with its send's begin),
 * and the model's per-rank source, neither needing more of xsm_emit than
 * xsm_emit_init_local prepares. */
const xsm_src_ops *xsm_emit_source_analysis(void);
const xsm_src_ops *xsm_emit_source_model(void);
/* trace.otf2's source over the model: every event of one rank with its
 * COMPLETION rows among them (as the analysis's), and each receive's flow
 * end with its message (xsm_evflow's comm ... posted). */
const xsm_src_ops *xsm_emit_source_calls(void);
/* trace.otf2's marks (xsm_erank.mpi_thread, .mark) of every rank whose
 * events are ordered here, from the model's messages and collectives. */
int xsm_emit_marks(xsm_emit *e);

/* `order` (NULL = all) marks the ranks whose events will be iterated: only
 * they get sorted row orders and message flows (collective mode prepares
 * just its share). Names, tracks and GPU flows are always built for every
 * rank, so ids agree between processes. */
int xsm_emit_init(xsm_emit *e, const xsm_run *run, const unsigned char *order, char *err, size_t errlen);
/* Every rank's orders and flows on this process alone (collective mode's
 * counts are not exchanged): the analysis's (xsm_emit_source_analysis). */
int xsm_emit_init_local(xsm_emit *e, const xsm_run *run, char *err, size_t errlen);
/* A GPU row's correlation id, for pairing launches with their activity. */
typedef struct xsm_corr {
    uint32_t corr, row;
    int api;
} xsm_corr;
/* Flows of rank r's GPU launches (c is sorted here): a start on the API
 * row and an end on the first activity of each correlation id, into out
 * (room for n), sorted by row; returns their number. */
size_t xsm_emit_gpu_flows(int32_t r, xsm_corr *c, size_t n, xsm_flow *out);
/* Streaming mode: rank r's tracks from what its scan found (threads of
 * rows, GPU streams, counter names as the rank's string ids, memory
 * devices, GPU flows — taken over), joined with the thread table. */
int xsm_emit_set_tracks(xsm_emit *e, int32_t r, const uint32_t *tids, size_t ntids, const xsm_gstream *gpu, size_t ngpu,
                        const uint32_t *counter_names, size_t ncounters, const int16_t *memdev, size_t nmemdev,
                        xsm_flow *gflows, size_t ngflows);
/* Number the tracks again (track_base of every rank) after a caller
 * changed the ranks' track sets (streaming mode fills them from its scan). */
void xsm_emit_number_tracks(xsm_emit *e);
void xsm_emit_free(xsm_emit *e);

/* Lookups used by the writers. */
size_t xsm_emit_tid_index(const xsm_erank *er, uint32_t tid);
size_t xsm_emit_gpu_index(const xsm_erank *er, uint32_t device, uint32_t stream);
size_t xsm_emit_counter_index(const xsm_erank *er, uint32_t gname);
size_t xsm_emit_memdev_index(const xsm_erank *er, int16_t device);
/* The thread of a sample of rank r taken on kernel thread os_tid: i <
 * er->ntids, thread tids[i]; else the sampled thread er->xos[i - ntids]. */
size_t xsm_emit_sample_thread(const xsm_emit *e, int32_t r, int32_t os_tid);
/* Where flow f (on an mpi row of rank, or a gpu row when gpu) touches its
 * row: a send or launch at the row's begin, the end of a launch at its
 * activity's begin, the end of a message at its receive's completion. */
int64_t xsm_emit_flow_time(const xsm_emit *e, int32_t rank, int gpu, const xsm_flow *f);
/* Flow endpoints of a row: *n entries from the returned pointer. */
const xsm_flow *xsm_emit_flows(const xsm_flow *f, size_t nf, size_t row, size_t *n);
/* The same, trying *cur (the end of the previous lookup) before a search:
 * writers mostly ask for increasing rows. *cur starts at 0. */
const xsm_flow *xsm_emit_flows_at(const xsm_flow *f, size_t nf, size_t row, size_t *cur, size_t *n);
/* "kernel", "memcpy HtoD", ... for enum xsprof_gpu_kind. */
const char *xsm_emit_gpu_kind_name(uint32_t kind);
/* Global name of a communicator ("MPI_COMM_WORLD"), or NULL. */
const char *xsm_emit_comm_name(const xsm_emit *e, uint32_t comm);
static inline const char *xsm_emit_str(const xsm_emit *e, int32_t rank, uint32_t local)
{
    const xsprof_rank_data *d = &e->run->ranks[rank].d;
    return local < d->nstrings ? e->names.str[e->ranks[rank].gname[local]] : "?";
}
static inline uint32_t xsm_emit_gid(const xsm_emit *e, int32_t rank, uint32_t local)
{
    const xsprof_rank_data *d = &e->run->ranks[rank].d;
    return local < d->nstrings ? e->ranks[rank].gname[local] : e->ranks[rank].gname[d->nstrings];
}

/* k-way merge of all (rank, table) streams by (time, rank, table). */
typedef struct xsm_iter {
    const xsm_emit *e;
    /* one stream per (rank, table): where its order is, and its rows, so
     * that taking an event touches the heap and this record only (the rank
     * structs are cold lines once ranks are many) */
    struct xsm_iter_stream {
        const uint32_t *cur, *end; /* the rest of the table's order */
        const unsigned char *rows;
        size_t size;               /* bytes per row */
    } *st;
    struct xsm_iter_node { int64_t t; int32_t rank; int kind; struct xsm_iter_stream *s; } *heap;
    size_t n;
} xsm_iter;

/* rank < 0: all ranks; else only that rank's streams. */
int xsm_iter_init(xsm_iter *it, const xsm_emit *e, int64_t rank);
int xsm_iter_next(xsm_iter *it, xsm_ev *ev); /* 1 = got one, 0 = done */
void xsm_iter_free(xsm_iter *it);

/* Writers: each writes its file(s) into dir. Return 0, or 1 with err set. */
int xsm_emit_json(const xsm_emit *e, const char *dir, char *err, size_t errlen);
/* The note that says trace.json was left out (xsm_emit_json returned 2),
 * to f (NULL: none). */
void xsm_emit_json_left_out(FILE *f);
int xsm_emit_pftrace(const xsm_emit *e, const char *dir, char *err, size_t errlen);
/* One rank's self-contained packet sequence of trace.pftrace (the file is
 * these segments in rank order), appended to f; *bytes gets its size;
 * messages name dir/trace.pftrace. *sym: the writer's symbols for the
 * samples' call stacks (opened when NULL; the writer closes them). */
struct xsm_symbols;
int xsm_emit_pftrace_rank(const xsm_emit *e, size_t rank, FILE *f, const char *dir, uint64_t *bytes,
                          struct xsm_symbols **sym, char *err, size_t errlen);
struct xsm_place;
/* The writers of the segments of ranks lo, lo + step, ... (n of them) into
 * the blocks of pl (block k: rank lo + k * step), taken in order by up to
 * e->threads threads (one of them the caller's, in the join, when
 * caller_works; else the caller is free until the join: collective mode
 * passes the blocks' places between processes meanwhile). NULL: out of
 * memory. The join waits for them: 0, or 1 with err set (pl's write
 * errors are pl's). */
typedef struct xsm_pf_writers xsm_pf_writers;
xsm_pf_writers *xsm_emit_pftrace_start(const xsm_emit *e, const char *dir, size_t lo, size_t step, size_t n,
                                       struct xsm_place *pl, int caller_works);
int xsm_emit_pftrace_join(xsm_pf_writers *w, char *err, size_t errlen);
/* The segments of ranks [lo, hi) written at offset `at` of fd by those
 * writers (a segment's bytes wait, in up to e->hold bytes of memory then
 * in a file in dir, until the one before it is done: emit/place.h).
 * *bytes gets their size. */
int xsm_emit_pftrace_span(const xsm_emit *e, const char *dir, size_t lo, size_t hi, int fd, uint64_t at,
                          uint64_t *bytes, char *err, size_t errlen);
int xsm_emit_h5(const xsm_emit *e, const char *dir, char *err, size_t errlen);
/* A helper's part of merged.h5 (e->h5share, me > 0): encodes its chunks
 * of every event table and sends them to the writer; 0, or 1 (out of
 * memory: the writer is told and says so). */
int xsm_emit_h5_help(const xsm_emit *e);
/* merged.h5's deflate level: XSPROF_MERGE_H5_DEFLATE, 0-9, default 1. */
int xsm_emit_h5_level(void);

/* dir/trace.otf2 (with trace.def and trace/): the OTF2 archive, each
 * rank's events from `src` (xsm_emit_source_calls over the model, or the
 * streamed merge's), with the ranks' marks set. Only in builds with
 * libotf2 (XSPROF_HAVE_OTF2). Notes (NULL: none) get one line on the
 * message ends and collective records it leaves out. */
int xsm_emit_otf2(const xsm_emit *e, const xsm_src_ops *src, const char *dir, FILE *notes, char *err, size_t errlen);

/* Create dir/name for writing, exclusively and without following links. */
FILE *xsm_emit_create(const char *dir, const char *name, char *err, size_t errlen);

#endif
