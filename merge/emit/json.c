/* merge/emit/json.c — trace.json, Chrome trace-event format: pid = rank,
 * tid = xsprof thread (GPU streams get their own tids), "X" slices for
 * regions, MPI calls and GPU activity, "s"/"f" flows for messages and GPU
 * launches, "C" counters, "i" instants. Events are written in time order
 * from the k-way iterator; when a part would pass the size limit
 * (XSPROF_MERGE_JSON_PART_MB, default 256) a new part starts, each a
 * complete JSON document (trace-part00.json, ...). A single part is named
 * trace.json.
 *
 * Formatting is most of the work, so it runs on e->threads threads: this
 * thread takes events from the source in batches (copying what an event
 * points to, which is valid only until the next one, and the running
 * memory totals, the only state carried from event to event), the
 * formatters turn whole batches into text, and this thread appends the
 * texts in batch order, choosing where parts end event by event exactly as
 * a single thread would: the bytes do not depend on the thread count. */
#include "merge/emit/emit.h"
#include "merge/emit/memtrack.h"
#include "merge/progress.h"
#include "core/record.h" /* kinds of mpi, gpu and arg rows */

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XSM_GPU_TID_BASE 1000000000u

static const char *const xsm_cat_name[] = {"user", "mpi", "nvtx", "gpu"};

/* Labels made before formatting starts (read-only, so formatter threads
 * share them): every name is quoted once, not at every event. */
typedef struct xsm_jlbl {
    xsm_out *comm;   /* per communicator: its quoted JSON label */
    xsm_out names;   /* every global name quoted, back to back */
    size_t *name_at; /* name g is names.p[name_at[g] .. name_at[g + 1]) */
} xsm_jlbl;

/* What formats events: the output text and the labels. */
typedef struct xsm_jf {
    const xsm_emit *e;
    const xsm_jlbl *lbl;
    xsm_out o;
    int first; /* no object written yet in this piece of text */
} xsm_jf;

/* "comm": "MPI_COMM_WORLD (0)" (or the id of a communicator never
 * defined); labels are made once, before formatting starts. */
static void xsm_j_comm(xsm_jf *j, uint32_t comm)
{
    const xsm_emit *e = j->e;
    size_t k = 0;
    while (k < e->ncomms && e->comm_ids[k] != comm)
        k++;
    if (k == e->ncomms) {
        xsm_out_u64(&j->o, comm);
        return;
    }
    xsm_out_put(&j->o, j->lbl->comm[k].p, j->lbl->comm[k].len);
}

static void xsm_j_labels_free(const xsm_emit *e, xsm_jlbl *l)
{
    for (size_t k = 0; l->comm && k < e->ncomms; k++)
        xsm_out_free(&l->comm[k]);
    free(l->comm);
    xsm_out_free(&l->names);
    free(l->name_at);
}

static int xsm_j_labels(const xsm_emit *e, xsm_jlbl *l)
{
    size_t n = e->names.n;
    if (!(l->comm = calloc(e->ncomms + 1, sizeof *l->comm)) || !(l->name_at = malloc((n + 1) * sizeof *l->name_at)))
        return -1;
    for (size_t k = 0; k < e->ncomms; k++) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s (%u)", e->names.str[e->comm_name[k]], e->comm_ids[k]);
        xsm_out_json_str(&l->comm[k], buf);
        if (l->comm[k].failed)
            return -1;
    }
    for (size_t g = 0; g < n; g++) {
        l->name_at[g] = l->names.len;
        xsm_out_json_str(&l->names, e->names.str[g]);
    }
    l->name_at[n] = l->names.len;
    return l->names.failed ? -1 : 0;
}

static void xsm_j_num(xsm_out *o, double v)
{
    if (!isfinite(v)) {
        xsm_out_puts(o, "null");
        return;
    }
    if (v == (double)(int64_t)v && fabs(v) < 9e15) {
        xsm_out_i64(o, (int64_t)v);
        return;
    }
    xsm_out_printf(o, "%.17g", v);
}

/* A damaged row may end before it begins; JSON durations are never negative. */
static int64_t xsm_j_dur(int64_t b, int64_t e) { return e > b ? e - b : 0; }

/* Objects are separated by ",\n"; what comes before a piece's first
 * object is the part writer's (xsm_jpart_put). */
static void xsm_j_sep(xsm_jf *j)
{
    if (!j->first)
        xsm_out_put(&j->o, ",\n", 2);
    j->first = 0;
}

/* An event's opening: {"ph":"<ph>","name":<q>,"pid":..,"tid":..,"ts":..
 * with q the quoted name (qn bytes). */
static void xsm_j_head_q(xsm_jf *j, char ph, const char *q, size_t qn, int32_t pid, int64_t tid, int64_t ts)
{
    xsm_j_sep(j);
    char open[] = "{\"ph\":\"?\",\"name\":";
    open[7] = ph;
    xsm_out_put(&j->o, open, sizeof open - 1);
    xsm_out_put(&j->o, q, qn);
    xsm_out_puts(&j->o, ",\"pid\":");
    xsm_out_i64(&j->o, pid);
    if (tid >= 0) {
        xsm_out_puts(&j->o, ",\"tid\":");
        xsm_out_i64(&j->o, tid);
    }
    xsm_out_puts(&j->o, ",\"ts\":");
    xsm_out_us(&j->o, ts);
}

/* Rank r's string `local`, quoted beforehand: *n bytes at the result. */
static const char *xsm_j_qname(const xsm_jf *j, int32_t r, uint32_t local, size_t *n)
{
    uint32_t g = xsm_emit_gid(j->e, r, local);
    const size_t *at = j->lbl->name_at;
    *n = at[g + 1] - at[g];
    return j->lbl->names.p + at[g];
}

static void xsm_j_put_name(xsm_jf *j, int32_t r, uint32_t local)
{
    size_t n;
    const char *q = xsm_j_qname(j, r, local, &n);
    xsm_out_put(&j->o, q, n);
}

/* ... named by rank r's string `local` */
static void xsm_j_head(xsm_jf *j, char ph, int32_t r, uint32_t local, int64_t tid, int64_t ts)
{
    size_t n;
    const char *q = xsm_j_qname(j, r, local, &n);
    xsm_j_head_q(j, ph, q, n, r, tid, ts);
}

static void xsm_j_meta(xsm_jf *j)
{
    const xsm_emit *e = j->e;
    const xsm_run *run = e->run;
    char buf[256];
    for (size_t r = 0; r < run->nranks; r++) {
        if (!run->ranks[r].present)
            continue;
        const xsm_erank *er = &e->ranks[r];
        snprintf(buf, sizeof buf, "rank %zu (%s)", r, run->ranks[r].d.host);
        xsm_j_sep(j);
        xsm_out_printf(&j->o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%zu,\"args\":{\"name\":", r);
        xsm_out_json_str(&j->o, buf);
        xsm_out_puts(&j->o, "}}");
        xsm_j_sep(j);
        xsm_out_printf(&j->o, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%zu,\"args\":{\"sort_index\":%zu}}", r, r);
        for (size_t i = 0; i < er->ntids; i++) {
            if (er->tid_names[i] != UINT32_MAX)
                snprintf(buf, sizeof buf, "%s (thread %u)", e->names.str[er->tid_names[i]], er->tids[i]);
            else
                snprintf(buf, sizeof buf, "thread %u", er->tids[i]);
            xsm_j_sep(j);
            xsm_out_printf(&j->o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%u,\"args\":{\"name\":", r,
                           er->tids[i]);
            xsm_out_json_str(&j->o, buf);
            xsm_out_puts(&j->o, "}}");
        }
        for (size_t i = 0; i < er->ngpu; i++) {
            snprintf(buf, sizeof buf, "GPU %u stream %u", er->gpu[i].device, er->gpu[i].stream);
            xsm_j_sep(j);
            xsm_out_printf(&j->o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%zu,\"tid\":%u,\"args\":{\"name\":", r,
                           XSM_GPU_TID_BASE + (unsigned)i);
            xsm_out_json_str(&j->o, buf);
            xsm_out_puts(&j->o, "}}");
            xsm_j_sep(j);
            xsm_out_printf(&j->o,
                           "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%zu,\"tid\":%u,\"args\":{\"sort_index\":%u}}",
                           r, XSM_GPU_TID_BASE + (unsigned)i, XSM_GPU_TID_BASE + (unsigned)i);
        }
    }
}

/* ---- the parts: files written in order by one thread ---------------------- */
typedef struct xsm_jpart {
    const xsm_emit *e;
    const char *dir;
    const xsm_jlbl *lbl;
    xsm_out o;
    FILE *f;
    int part;
    int first;      /* nothing written after the header yet */
    uint64_t limit; /* bytes per part */
    int too_big;    /* e->json_whole and a second part was due: trace.json is left out */
} xsm_jpart;

/* Appends one piece of text holding one or more objects. */
static void xsm_jpart_put(xsm_jpart *p, const char *text, size_t n)
{
    xsm_out_put(&p->o, p->first ? "\n" : ",\n", p->first ? 1 : 2);
    xsm_out_put(&p->o, text, n);
    p->first = 0;
}

/* The first part is named trace.json unless another follows, and no other
 * follows a part that failed: name it so (the user never sees part00). */
static int xsm_jpart_failed(const xsm_jpart *p, char *err, size_t errlen)
{
    if (p->part == 0)
        return xsm_err_set(err, errlen, "xsmerge: %s/trace.json: write failed: %s", p->dir, strerror(errno));
    return xsm_err_set(err, errlen, "xsmerge: %s/trace-part%02d.json: write failed: %s", p->dir, p->part, strerror(errno));
}

static int xsm_jpart_open(xsm_jpart *p, char *err, size_t errlen)
{
    char name[64];
    snprintf(name, sizeof name, "trace-part%02d.json", p->part);
    p->f = xsm_emit_create(p->dir, name, err, errlen);
    if (!p->f)
        return 1;
    xsm_out_init(&p->o, p->f);
    xsm_out_start_writer(&p->o);
    p->first = 1;
    xsm_out_puts(&p->o, "{\"traceEvents\":[");
    xsm_jf m = {p->e, p->lbl, {0}, 1};
    xsm_j_meta(&m);
    if (m.o.failed)
        p->o.failed = 1;
    else if (m.o.len)
        xsm_jpart_put(p, m.o.p, m.o.len);
    xsm_out_free(&m.o);
    return 0;
}

static int xsm_jpart_close(xsm_jpart *p, char *err, size_t errlen)
{
    const xsm_run *run = p->e->run;
    xsm_out_printf(&p->o,
                   "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xsmerge\",\"part\":%d,\"job_id\":", p->part);
    xsm_out_json_str(&p->o, run->job_id);
    xsm_out_printf(&p->o,
                   ",\"t0_ref_ns\":%lld,\"clock_violations_before\":%llu,\"clock_violations_after\":%llu,"
                   "\"max_correction_ns\":%lld}}\n",
                   (long long)run->t0_ref_ns, (unsigned long long)run->clock.violations_before,
                   (unsigned long long)run->clock.violations_after, (long long)run->clock.max_correction_ns);
    int bad = xsm_out_flush(&p->o) != 0 || p->o.failed;
    xsm_out_free(&p->o);
    if (fclose(p->f) != 0)
        bad = 1;
    p->f = NULL;
    return bad ? xsm_jpart_failed(p, err, errlen) : 0;
}

/* Appends one event's text; a new part starts first when this one would
 * pass the limit (with room for the closing lines). */
static int xsm_jpart_event(xsm_jpart *p, const char *text, size_t n, char *err, size_t errlen)
{
    if (!p->first && xsm_out_total(&p->o) + 65536 > p->limit) {
        if (p->e->json_whole) {
            p->too_big = 1;
            return 1;
        }
        if (xsm_jpart_close(p, err, errlen))
            return 1;
        p->part++;
        if (xsm_jpart_open(p, err, errlen))
            return 1;
    }
    xsm_jpart_put(p, text, n);
    return p->o.failed ? xsm_jpart_failed(p, err, errlen) : 0;
}

/* ts bound inside the slice [b, e): catapult and Perfetto look for the
 * slice enclosing a flow point. */
static int64_t xsm_j_inside(int64_t ts, int64_t b, int64_t e)
{
    if (ts > e - 1)
        ts = e - 1;
    return ts < b ? b : ts;
}

/* One flow point of rank `pid` at ts; qcat its category, quoted. */
static void xsm_j_flow(xsm_jf *j, uint64_t id, int out, int64_t ts, int32_t pid, int64_t tid, const char *qcat)
{
    size_t qn = strlen(qcat);
    xsm_j_head_q(j, out ? 's' : 'f', qcat, qn, pid, tid, ts);
    xsm_out_puts(&j->o, ",\"cat\":");
    xsm_out_put(&j->o, qcat, qn);
    xsm_out_puts(&j->o, ",\"id\":");
    xsm_out_u64(&j->o, id);
    xsm_out_puts(&j->o, out ? "}" : ",\"bp\":\"e\"}");
}

static void xsm_j_region(xsm_jf *j, int32_t r, const xsprof_io_region *g, const xsprof_io_arg *args)
{
    xsm_j_head(j, 'X', r, g->name, g->thread, g->t_begin);
    xsm_out_puts(&j->o, ",\"dur\":");
    xsm_out_us(&j->o, xsm_j_dur(g->t_begin, g->t_end));
    xsm_out_puts(&j->o, ",\"cat\":\"");
    xsm_out_puts(&j->o, g->category < 4 ? xsm_cat_name[g->category] : "user");
    xsm_out_puts(&j->o, "\"");
    if (args) {
        xsm_out_puts(&j->o, ",\"args\":{");
        for (uint32_t k = 0; k < g->nargs; k++) {
            const xsprof_io_arg *a = &args[k];
            if (k)
                xsm_out_puts(&j->o, ",");
            xsm_j_put_name(j, r, a->key);
            xsm_out_puts(&j->o, ":");
            switch (a->kind) {
            case XSPROF_ARG_INT: xsm_out_i64(&j->o, a->i); break;
            case XSPROF_ARG_DOUBLE: xsm_j_num(&j->o, a->d); break;
            case XSPROF_ARG_STRING: xsm_j_put_name(j, r, a->s); break;
            case XSPROF_ARG_SHAPE:
                xsm_out_puts(&j->o, "[");
                for (uint32_t q = 0; q < a->ndims && q < XSPROF_ARG_SHAPE_MAX; q++) {
                    if (q)
                        xsm_out_puts(&j->o, ",");
                    xsm_out_i64(&j->o, a->dims[q]);
                }
                xsm_out_puts(&j->o, "]");
                break;
            default: xsm_out_puts(&j->o, "null");
            }
        }
        xsm_out_puts(&j->o, "}");
    }
    xsm_out_puts(&j->o, "}");
}

static void xsm_j_mpi(xsm_jf *j, int32_t r, const xsprof_io_mpi *m, const xsm_evflow *f, size_t nf)
{
    xsm_j_head(j, 'X', r, m->op, m->thread, m->t_begin);
    xsm_out_puts(&j->o, ",\"dur\":");
    xsm_out_us(&j->o, xsm_j_dur(m->t_begin, m->t_end));
    xsm_out_puts(&j->o, ",\"cat\":\"mpi\",\"args\":{");
    int first = 1;
#define XSM_ARG(key)                                   \
    do {                                               \
        xsm_out_puts(&j->o, first ? "\"" key "\":" : ",\"" key "\":"); \
        first = 0;                                     \
    } while (0)
    if (m->peer >= 0) { XSM_ARG("peer"); xsm_out_i64(&j->o, m->peer); }
    if (m->tag != XSPROF_MPI_NONE) { XSM_ARG("tag"); xsm_out_i64(&j->o, m->tag); }
    if (m->root >= 0) { XSM_ARG("root"); xsm_out_i64(&j->o, m->root); }
    if (m->bytes_sent) { XSM_ARG("bytes_sent"); xsm_out_u64(&j->o, m->bytes_sent); }
    if (m->bytes_recv) { XSM_ARG("bytes_recv"); xsm_out_u64(&j->o, m->bytes_recv); }
    if (m->comm != UINT32_MAX) {
        XSM_ARG("comm");
        xsm_j_comm(j, m->comm);
    }
    if (m->count) { XSM_ARG("count"); xsm_out_u64(&j->o, m->count); }
    if (m->coll_seq) { XSM_ARG("coll_seq"); xsm_out_u64(&j->o, m->coll_seq); }
#undef XSM_ARG
    xsm_out_puts(&j->o, "}}");
    for (size_t k = 0; k < nf; k++) {
        int64_t ts = xsm_j_inside(f[k].t, m->t_begin, m->t_end);
        /* ... but a message is never shown received before it was sent: the
         * logical clock may end the receive at the very ns the send began */
        if (!f[k].out && ts < f[k].sent)
            ts = f[k].sent;
        xsm_j_flow(j, f[k].id, f[k].out, ts, r, m->thread, "\"message\"");
    }
}

static void xsm_j_gpu(xsm_jf *j, int32_t r, const xsprof_io_gpu *g, size_t row)
{
    const xsm_emit *e = j->e;
    const xsm_erank *er = &e->ranks[r];
    int api = g->kind == XSPROF_GPU_API;
    int64_t tid = api ? (int64_t)g->thread : (int64_t)(XSM_GPU_TID_BASE + xsm_emit_gpu_index(er, g->device, g->stream));
    xsm_j_head(j, 'X', r, g->name, tid, g->t_begin);
    xsm_out_puts(&j->o, ",\"dur\":");
    xsm_out_us(&j->o, xsm_j_dur(g->t_begin, g->t_end));
    xsm_out_printf(&j->o, ",\"cat\":\"%s\",\"args\":{\"kind\":\"%s\",\"device\":%u,\"stream\":%u,\"correlation\":%u",
                   api ? "cuda" : "gpu", xsm_emit_gpu_kind_name(g->kind), g->device, g->stream, g->correlation);
    if (g->bytes)
        xsm_out_printf(&j->o, ",\"bytes\":%llu", (unsigned long long)g->bytes);
    if (g->kind == XSPROF_GPU_KERNEL)
        xsm_out_printf(&j->o, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared_mem\":%u,\"registers\":%u", g->grid[0],
                       g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2], g->shared_mem, g->registers);
    xsm_out_puts(&j->o, "}}");
    size_t nf;
    const xsm_flow *f = xsm_emit_flows(er->gflows, er->ngflows, row, &nf);
    for (size_t k = 0; k < nf; k++) /* both ends of a launch flow sit at their row's begin */
        xsm_j_flow(j, f[k].id, (int)f[k].out, xsm_j_inside(g->t_begin, g->t_begin, g->t_end), r, tid, "\"launch\"");
}

/* `memtot`: for a memory event, the running total of its rank and device
 * after it. */
static void xsm_j_event(xsm_jf *j, const xsm_ev *ev, double memtot)
{
    switch (ev->kind) {
    case XSM_EV_REGION: xsm_j_region(j, ev->rank, ev->rec, ev->args); break;
    case XSM_EV_MPI: xsm_j_mpi(j, ev->rank, ev->rec, ev->mflows, ev->nmflows); break;
    case XSM_EV_GPU: xsm_j_gpu(j, ev->rank, ev->rec, ev->row); break;
    case XSM_EV_INSTANT: {
        const xsprof_io_instant *in = ev->rec;
        xsm_j_head(j, 'i', ev->rank, in->name, in->thread, in->t);
        xsm_out_puts(&j->o, ",\"s\":\"t\"}");
        break;
    }
    case XSM_EV_COUNTER: {
        const xsprof_io_counter *c = ev->rec;
        xsm_j_head(j, 'C', ev->rank, c->name, -1, c->t);
        xsm_out_puts(&j->o, ",\"args\":{\"value\":");
        xsm_j_num(&j->o, c->value);
        xsm_out_puts(&j->o, "}}");
        break;
    }
    default: {
        const xsprof_io_mem *m = ev->rec;
        char q[64];
        size_t qn;
        if (m->device < 0)
            qn = (size_t)snprintf(q, sizeof q, "\"memory (host)\"");
        else
            qn = (size_t)snprintf(q, sizeof q, "\"memory (GPU %d)\"", (int)m->device);
        xsm_j_head_q(j, 'C', q, qn, ev->rank, -1, m->t);
        xsm_out_puts(&j->o, ",\"args\":{\"bytes\":");
        xsm_j_num(&j->o, memtot);
        xsm_out_puts(&j->o, "}}");
    }
    }
}

static uint64_t xsm_j_limit(void)
{
    const char *s = getenv("XSPROF_MERGE_JSON_PART_BYTES");
    if (s && *s) {
        unsigned long long v = strtoull(s, NULL, 10);
        if (v >= 4096)
            return v;
    }
    return (uint64_t)(xsm_env_num("XSPROF_MERGE_JSON_PART_MB", 256, 1, 0x1p20) * 0x1p20);
}

/* ---- batches: events copied out of the source, formatted on threads ------- */
#define XSM_JB_EVENTS 4096

typedef union xsm_jrec {
    xsprof_io_region region;
    xsprof_io_mpi mpi;
    xsprof_io_gpu gpu;
    xsprof_io_instant instant;
    xsprof_io_counter counter;
    xsprof_io_mem mem;
} xsm_jrec;

typedef struct xsm_jev {
    xsm_ev ev;      /* rec, args and mflows point into the batch once it is full */
    xsm_jrec rec;
    double memtot;  /* memory events: running total after this one */
    size_t aux;     /* first of its args / flows in the batch's arrays */
} xsm_jev;

typedef struct xsm_jbatch {
    xsm_jev *ev;
    size_t n;
    xsprof_io_arg *args; size_t nargs, capargs;
    xsm_evflow *flows; size_t nflows, capflows;
    xsm_out text;   /* the events' objects, ",\n" between events */
    size_t *ends;   /* end of each event's text */
    int done;       /* formatted, not yet appended (which batch to format next is counted) */
} xsm_jbatch;

typedef struct xsm_jpipe {
    const xsm_emit *e;
    const xsm_jlbl *lbl;
    xsm_jbatch *b;
    size_t nb;
    uint64_t filled, formatting; /* batches handed over / taken by a formatter */
    int eof;
    pthread_mutex_t mu;
    pthread_cond_t cv_filled, cv_done;
} xsm_jpipe;

/* a region with an (empty) argument list still shows "args":{} */
static const xsprof_io_arg xsm_jnoargs;

static void xsm_jbatch_format(const xsm_jpipe *p, xsm_jbatch *b)
{
    xsm_jf j = {p->e, p->lbl, b->text, 1};
    j.o.len = 0;
    for (size_t i = 0; i < b->n; i++) {
        xsm_jev *x = &b->ev[i];
        x->ev.rec = &x->rec;
        if (x->ev.kind == XSM_EV_REGION)
            x->ev.args = !x->ev.args ? NULL : x->rec.region.nargs ? b->args + x->aux : &xsm_jnoargs;
        else if (x->ev.kind == XSM_EV_MPI)
            x->ev.mflows = x->ev.nmflows ? b->flows + x->aux : NULL;
        if (i)
            xsm_out_put(&j.o, ",\n", 2);
        j.first = 1;
        xsm_j_event(&j, &x->ev, x->memtot);
        b->ends[i] = j.o.len;
    }
    b->text = j.o;
}

static void *xsm_jpipe_worker(void *arg)
{
    xsm_jpipe *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->formatting == p->filled && !p->eof)
            pthread_cond_wait(&p->cv_filled, &p->mu);
        if (p->formatting == p->filled)
            break;
        xsm_jbatch *b = &p->b[p->formatting++ % p->nb];
        pthread_mutex_unlock(&p->mu);
        xsm_jbatch_format(p, b);
        pthread_mutex_lock(&p->mu);
        b->done = 1;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Copies ev (and what it points to) into b; -1 when memory ran out. */
static int xsm_jbatch_add(xsm_jbatch *b, const xsm_ev *ev, double memtot)
{
    xsm_jev *x = &b->ev[b->n];
    x->ev = *ev;
    x->memtot = memtot;
    x->aux = 0;
    static const size_t recsize[XSM_EV_N] = {sizeof(xsprof_io_region), sizeof(xsprof_io_mpi), sizeof(xsprof_io_gpu),
                                             sizeof(xsprof_io_instant), sizeof(xsprof_io_counter), sizeof(xsprof_io_mem)};
    memcpy(&x->rec, ev->rec, recsize[ev->kind < XSM_EV_N ? ev->kind : XSM_EV_MEM]);
    if (ev->kind == XSM_EV_REGION && ev->args && x->rec.region.nargs) {
        size_t k = x->rec.region.nargs;
        if (xsm_reserve((void **)&b->args, &b->capargs, b->nargs + k, sizeof *b->args))
            return -1;
        memcpy(b->args + b->nargs, ev->args, k * sizeof *ev->args);
        x->aux = b->nargs;
        b->nargs += k;
    } else if (ev->kind == XSM_EV_MPI && ev->nmflows) {
        size_t k = ev->nmflows;
        if (xsm_reserve((void **)&b->flows, &b->capflows, b->nflows + k, sizeof *b->flows))
            return -1;
        memcpy(b->flows + b->nflows, ev->mflows, k * sizeof *ev->mflows);
        x->aux = b->nflows;
        b->nflows += k;
    }
    b->n++;
    return 0;
}

/* Appends batch b's events to the parts. */
static int xsm_jbatch_commit(xsm_jpart *part, const xsm_jbatch *b, char *err, size_t errlen)
{
    if (b->text.failed)
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json");
    if (!b->n)
        return 0;
    /* no part can end inside the batch: one piece (the same bytes) */
    if (!part->first && xsm_out_total(&part->o) + 2 + b->text.len + 65536 <= part->limit) {
        xsm_jpart_put(part, b->text.p, b->text.len);
        return part->o.failed ? xsm_jpart_failed(part, err, errlen) : 0;
    }
    for (size_t i = 0, at = 0; i < b->n; i++) {
        if (xsm_jpart_event(part, b->text.p + at, b->ends[i] - at, err, errlen))
            return 1;
        at = b->ends[i] + 2;
    }
    return 0;
}

/* Waits for the batch of sequence `seq` to be formatted, appends it and
 * frees its slot; when `wait` is 0 returns 1 instead of waiting. */
static int xsm_jpipe_commit(xsm_jpipe *p, xsm_jpart *part, uint64_t seq, int wait, int *rc, char *err, size_t errlen)
{
    xsm_jbatch *b = &p->b[seq % p->nb];
    pthread_mutex_lock(&p->mu);
    while (!b->done) {
        if (!wait) {
            pthread_mutex_unlock(&p->mu);
            return 1;
        }
        pthread_cond_wait(&p->cv_done, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    if (!*rc)
        *rc = xsm_jbatch_commit(part, b, err, errlen);
    b->n = b->nargs = b->nflows = 0;
    b->done = 0;
    return 0;
}

static void xsm_jpipe_free(xsm_jpipe *p)
{
    for (size_t i = 0; p->b && i < p->nb; i++) {
        free(p->b[i].ev);
        free(p->b[i].args);
        free(p->b[i].flows);
        free(p->b[i].ends);
        xsm_out_free(&p->b[i].text);
    }
    free(p->b);
}

/* Bytes a trace.json event takes at least ({"ph":"X","pid":0,"tid":0,
 * "ts":0,"name":"x"} and its separator): a run whose events cannot fit one
 * part is known too big without writing it. */
#define XSM_J_MIN_EVENT_BYTES 40

void xsm_emit_json_left_out(FILE *f)
{
    if (f)
        fprintf(f,
                "xsmerge: note: trace.json left out: it would pass one part of %.0f MB (XSPROF_MERGE_JSON_PART_MB); "
                "trace.pftrace holds the same timeline. `--outputs json` writes it in parts, or merge a part of the "
                "run with --from/--to/--ranks\n",
                xsm_env_num("XSPROF_MERGE_JSON_PART_MB", 256, 1, 0x1p20));
}

int xsm_emit_json(const xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    const xsm_run *run = e->run;
    if (e->json_whole && e->nevents * XSM_J_MIN_EVENT_BYTES > xsm_j_limit())
        return 2;
    size_t nmem = 0, nt = (size_t)xsm_emit_threads(e);
    if (nt > XSM_EMIT_MAX_THREADS)
        nt = XSM_EMIT_MAX_THREADS;
    size_t *memoff = malloc((run->nranks + 1) * sizeof *memoff);
    for (size_t r = 0; memoff && r < run->nranks; r++) {
        memoff[r] = nmem;
        nmem += e->ranks[r].nmemdev;
    }
    double *memtot = calloc(nmem + 1, sizeof *memtot); /* per rank and memory device */
    xsm_memtrack *live = xsm_memtrack_new();           /* what a free releases */
    xsm_jlbl lbl = {0};
    xsm_jpipe p = {.e = e, .lbl = &lbl, .nb = 2 * nt + 2};
    p.b = calloc(p.nb, sizeof *p.b);
    int ok = memoff && memtot && live && p.b && xsm_j_labels(e, &lbl) == 0;
    for (size_t i = 0; ok && i < p.nb; i++) {
        p.b[i].ev = malloc(XSM_JB_EVENTS * sizeof *p.b[i].ev);
        p.b[i].ends = malloc(XSM_JB_EVENTS * sizeof *p.b[i].ends);
        ok = p.b[i].ev && p.b[i].ends;
    }
    const xsm_src_ops *ops = xsm_emit_source_all(e);
    void *src = NULL;
    if (!ok || !(src = ops->open(e, XSM_ALL_RANKS, err, errlen))) {
        free(memoff);
        free(memtot);
        xsm_memtrack_free(live);
        xsm_j_labels_free(e, &lbl);
        xsm_jpipe_free(&p);
        return !ok ? xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json") : 1;
    }
    xsm_jpart part = {.e = e, .dir = dir, .lbl = &lbl, .limit = xsm_j_limit()};
    int rc = xsm_jpart_open(&part, err, errlen);
    /* every part repeats the metadata: keep room for events beside it */
    if (!rc && part.limit < 2 * xsm_out_total(&part.o) + 65536)
        part.limit = 2 * xsm_out_total(&part.o) + 65536;

    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv_filled, NULL);
    pthread_cond_init(&p.cv_done, NULL);
    pthread_t t[XSM_EMIT_MAX_THREADS];
    size_t nstarted = 0;
    while (nstarted < nt && pthread_create(&t[nstarted], NULL, xsm_jpipe_worker, &p) == 0)
        nstarted++;

    xsm_progress_begin("writing trace.json", e->nevents);
    uint64_t n = 0, committed = 0;
    int got = 0;
    xsm_ev ev;
    while (!rc) {
        uint64_t seq = p.filled;
        if (seq >= committed + p.nb && xsm_jpipe_commit(&p, &part, committed++, 1, &rc, err, errlen) == 0)
            continue; /* its slot is free now */
        xsm_jbatch *b = &p.b[seq % p.nb];
        while (b->n < XSM_JB_EVENTS && (got = ops->next(src, &ev)) > 0) {
            double tot = 0;
            if (ev.kind == XSM_EV_MEM) {
                const xsprof_io_mem *m = ev.rec;
                size_t k = memoff[ev.rank] + xsm_emit_memdev_index(&e->ranks[ev.rank], m->device);
                int64_t delta;
                if (xsm_memtrack_apply(live, ev.rank, m, &delta)) {
                    got = -1;
                    break;
                }
                tot = memtot[k] += (double)delta;
                if (m->kind & XSPROF_MEM_F_PAUSED) /* counted, not drawn: outside the recorded window */
                    continue;
            }
            if (xsm_jbatch_add(b, &ev, tot) != 0) {
                got = -1;
                break;
            }
            if (++n % 65536 == 0)
                xsm_progress_step(65536);
        }
        if (b->n) {
            if (nstarted) {
                pthread_mutex_lock(&p.mu);
                p.filled++;
                pthread_cond_signal(&p.cv_filled);
                pthread_mutex_unlock(&p.mu);
            } else { /* no thread could be started: format here */
                xsm_jbatch_format(&p, b);
                b->done = 1;
                p.filled++;
            }
        }
        /* append what is ready, without waiting */
        while (committed < p.filled && xsm_jpipe_commit(&p, &part, committed, 0, &rc, err, errlen) == 0)
            committed++;
        if (got <= 0)
            break;
    }
    pthread_mutex_lock(&p.mu);
    p.eof = 1;
    pthread_cond_broadcast(&p.cv_filled);
    pthread_mutex_unlock(&p.mu);
    while (committed < p.filled)
        xsm_jpipe_commit(&p, &part, committed++, 1, &rc, err, errlen);
    for (size_t k = 0; k < nstarted; k++)
        pthread_join(t[k], NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv_filled);
    pthread_cond_destroy(&p.cv_done);
    xsm_progress_end();

    if (got < 0 && !rc)
        rc = ops->close(src, err, errlen) ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json");
    else if (ops->close(src, err, errlen) && !rc)
        rc = 1;
    if (!rc)
        rc = xsm_jpart_close(&part, err, errlen);
    else if (part.f) {
        xsm_out_free(&part.o);
        fclose(part.f);
    }
    if (part.too_big) { /* what was written of the first part goes */
        char a[8192];
        snprintf(a, sizeof a, "%s/trace-part00.json", dir);
        unlink(a);
        rc = 2;
    }
    free(memoff);
    free(memtot);
    xsm_memtrack_free(live);
    xsm_j_labels_free(e, &lbl);
    xsm_jpipe_free(&p);
    if (!rc && part.part == 0) {
        char a[8192], b[8192];
        snprintf(a, sizeof a, "%s/trace-part00.json", dir);
        snprintf(b, sizeof b, "%s/trace.json", dir);
        if (rename(a, b) != 0)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s", b, strerror(errno));
    }
    return rc;
}
