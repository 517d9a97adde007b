/* merge/emit/json.c — trace.json, Chrome trace-event format: pid = rank,
 * tid = xsprof thread (GPU streams get their own tids), "X" slices for
 * regions, MPI calls and GPU activity, "s"/"f" flows for messages and GPU
 * launches, "C" counters, "i" instants. Events are written in time order
 * straight from the k-way iterator; when a part would pass the size limit
 * (XSPROF_MERGE_JSON_PART_MB, default 256) a new part starts, each a
 * complete JSON document (trace-part00.json, ...). A single part is named
 * trace.json. */
#include "merge/emit/emit.h"
#include "merge/progress.h"
#include "core/record.h" /* kinds of mpi, gpu and arg rows */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XSM_GPU_TID_BASE 1000000000u

static const char *const xsm_cat_name[] = {"user", "mpi", "nvtx", "gpu"};

typedef struct xsm_json {
    const xsm_emit *e;
    const char *dir;
    xsm_out o;
    FILE *f;
    int part;
    int first;       /* no event written yet in this part */
    uint64_t limit;  /* bytes per part */
    double *memtot;  /* running memory totals, per rank and memory device */
    size_t *memoff;
    xsm_out *comm_lbl; /* per communicator: its JSON label, made once */
} xsm_json;

/* "comm": "MPI_COMM_WORLD (0)" (or the id of a communicator never
 * defined); the quoted label is formatted once per communicator. */
static void xsm_j_comm(xsm_json *j, uint32_t comm)
{
    const xsm_emit *e = j->e;
    size_t k = 0;
    while (k < e->ncomms && e->comm_ids[k] != comm)
        k++;
    if (k == e->ncomms) {
        xsm_out_u64(&j->o, comm);
        return;
    }
    xsm_out *l = &j->comm_lbl[k];
    if (!l->p) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s (%u)", e->names.str[e->comm_name[k]], comm);
        xsm_out_json_str(l, buf);
    }
    if (l->failed)
        j->o.failed = 1;
    else
        xsm_out_put(&j->o, l->p, l->len);
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

static void xsm_j_sep(xsm_json *j)
{
    xsm_out_puts(&j->o, j->first ? "\n" : ",\n");
    j->first = 0;
}

static void xsm_j_head(xsm_json *j, const char *ph, const char *name, int32_t pid, int64_t tid, int64_t ts)
{
    xsm_j_sep(j);
    xsm_out_puts(&j->o, "{\"ph\":\"");
    xsm_out_puts(&j->o, ph);
    xsm_out_puts(&j->o, "\",\"name\":");
    xsm_out_json_str(&j->o, name);
    xsm_out_puts(&j->o, ",\"pid\":");
    xsm_out_i64(&j->o, pid);
    if (tid >= 0) {
        xsm_out_puts(&j->o, ",\"tid\":");
        xsm_out_i64(&j->o, tid);
    }
    xsm_out_puts(&j->o, ",\"ts\":");
    xsm_out_us(&j->o, ts);
}

static void xsm_j_meta(xsm_json *j)
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

static int xsm_j_open(xsm_json *j, char *err, size_t errlen)
{
    char name[64];
    snprintf(name, sizeof name, "trace-part%02d.json", j->part);
    j->f = xsm_emit_create(j->dir, name, err, errlen);
    if (!j->f)
        return 1;
    xsm_out_init(&j->o, j->f);
    xsm_out_start_writer(&j->o);
    j->first = 1;
    xsm_out_puts(&j->o, "{\"traceEvents\":[");
    xsm_j_meta(j);
    return 0;
}

static int xsm_j_close(xsm_json *j, char *err, size_t errlen)
{
    const xsm_run *run = j->e->run;
    xsm_out_printf(&j->o,
                   "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"xsmerge\",\"part\":%d,\"job_id\":", j->part);
    xsm_out_json_str(&j->o, run->job_id);
    xsm_out_printf(&j->o,
                   ",\"t0_ref_ns\":%lld,\"clock_violations_before\":%llu,\"clock_violations_after\":%llu,"
                   "\"max_correction_ns\":%lld}}\n",
                   (long long)run->t0_ref_ns, (unsigned long long)run->clock.violations_before,
                   (unsigned long long)run->clock.violations_after, (long long)run->clock.max_correction_ns);
    int bad = xsm_out_flush(&j->o) != 0 || j->o.failed;
    xsm_out_free(&j->o);
    if (fclose(j->f) != 0)
        bad = 1;
    j->f = NULL;
    if (bad)
        return xsm_err_set(err, errlen, "xsmerge: %s/trace-part%02d.json: write failed: %s", j->dir, j->part, strerror(errno));
    return 0;
}

/* ts bound inside the slice [b, e): catapult and Perfetto look for the
 * slice enclosing a flow point. */
static int64_t xsm_j_inside(int64_t ts, int64_t b, int64_t e)
{
    if (ts > e - 1)
        ts = e - 1;
    return ts < b ? b : ts;
}

/* One flow point of rank `pid` at ts. */
static void xsm_j_flow(xsm_json *j, uint64_t id, int out, int64_t ts, int32_t pid, int64_t tid, const char *cat)
{
    xsm_j_head(j, out ? "s" : "f", cat, pid, tid, ts);
    xsm_out_puts(&j->o, ",\"cat\":");
    xsm_out_json_str(&j->o, cat);
    xsm_out_puts(&j->o, ",\"id\":");
    xsm_out_u64(&j->o, id);
    xsm_out_puts(&j->o, out ? "}" : ",\"bp\":\"e\"}");
}

static void xsm_j_region(xsm_json *j, int32_t r, const xsprof_io_region *g, const xsprof_io_arg *args)
{
    const xsm_emit *e = j->e;
    xsm_j_head(j, "X", xsm_emit_str(e, r, g->name), r, g->thread, g->t_begin);
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
            xsm_out_json_str(&j->o, xsm_emit_str(e, r, a->key));
            xsm_out_puts(&j->o, ":");
            switch (a->kind) {
            case XSPROF_ARG_INT: xsm_out_i64(&j->o, a->i); break;
            case XSPROF_ARG_DOUBLE: xsm_j_num(&j->o, a->d); break;
            case XSPROF_ARG_STRING: xsm_out_json_str(&j->o, xsm_emit_str(e, r, a->s)); break;
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

static void xsm_j_mpi(xsm_json *j, int32_t r, const xsprof_io_mpi *m, const xsm_evflow *f, size_t nf)
{
    const xsm_emit *e = j->e;
    xsm_j_head(j, "X", xsm_emit_str(e, r, m->op), r, m->thread, m->t_begin);
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
        xsm_j_flow(j, f[k].id, f[k].out, ts, r, m->thread, "message");
    }
}

static void xsm_j_gpu(xsm_json *j, int32_t r, const xsprof_io_gpu *g, size_t row)
{
    const xsm_emit *e = j->e;
    const xsm_erank *er = &e->ranks[r];
    int api = g->kind == XSPROF_GPU_API;
    int64_t tid = api ? (int64_t)g->thread : (int64_t)(XSM_GPU_TID_BASE + xsm_emit_gpu_index(er, g->device, g->stream));
    xsm_j_head(j, "X", xsm_emit_str(e, r, g->name), r, tid, g->t_begin);
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
        xsm_j_flow(j, f[k].id, (int)f[k].out, xsm_j_inside(g->t_begin, g->t_begin, g->t_end), r, tid, "launch");
}

static void xsm_j_event(xsm_json *j, const xsm_ev *ev)
{
    const xsm_emit *e = j->e;
    switch (ev->kind) {
    case XSM_EV_REGION: xsm_j_region(j, ev->rank, ev->rec, ev->args); break;
    case XSM_EV_MPI: xsm_j_mpi(j, ev->rank, ev->rec, ev->mflows, ev->nmflows); break;
    case XSM_EV_GPU: xsm_j_gpu(j, ev->rank, ev->rec, ev->row); break;
    case XSM_EV_INSTANT: {
        const xsprof_io_instant *in = ev->rec;
        xsm_j_head(j, "i", xsm_emit_str(e, ev->rank, in->name), ev->rank, in->thread, in->t);
        xsm_out_puts(&j->o, ",\"s\":\"t\"}");
        break;
    }
    case XSM_EV_COUNTER: {
        const xsprof_io_counter *c = ev->rec;
        xsm_j_head(j, "C", xsm_emit_str(e, ev->rank, c->name), ev->rank, -1, c->t);
        xsm_out_puts(&j->o, ",\"args\":{\"value\":");
        xsm_j_num(&j->o, c->value);
        xsm_out_puts(&j->o, "}}");
        break;
    }
    default: {
        const xsprof_io_mem *m = ev->rec;
        size_t k = j->memoff[ev->rank] + xsm_emit_memdev_index(&e->ranks[ev->rank], m->device);
        j->memtot[k] += m->kind == XSPROF_MEM_FREE ? -(double)m->size : (double)m->size;
        char name[64];
        if (m->device < 0)
            snprintf(name, sizeof name, "memory (host)");
        else
            snprintf(name, sizeof name, "memory (GPU %d)", (int)m->device);
        xsm_j_head(j, "C", name, ev->rank, -1, m->t);
        xsm_out_puts(&j->o, ",\"args\":{\"bytes\":");
        xsm_j_num(&j->o, j->memtot[k]);
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
    s = getenv("XSPROF_MERGE_JSON_PART_MB");
    unsigned long long mb = s && *s ? strtoull(s, NULL, 10) : 0;
    return (mb ? mb : 256ull) << 20;
}

int xsm_emit_json(const xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    xsm_json j = {.e = e, .dir = dir, .limit = xsm_j_limit()};
    const xsm_run *run = e->run;
    size_t nmem = 0;
    j.memoff = malloc((run->nranks + 1) * sizeof *j.memoff);
    for (size_t r = 0; j.memoff && r < run->nranks; r++) {
        j.memoff[r] = nmem;
        nmem += e->ranks[r].nmemdev;
    }
    j.memtot = calloc(nmem + 1, sizeof *j.memtot);
        j.comm_lbl = calloc(e->ncomms + 1, sizeof *j.comm_lbl);
    const xsm_src_ops *ops = xsm_emit_source_all(e);
    void *src = NULL;
    if (!j.memoff || !j.memtot || !j.comm_lbl || !(src = ops->open(e, XSM_ALL_RANKS, err, errlen))) {
        free(j.memoff);
        free(j.memtot);
        free(j.comm_lbl);
        return src || err[0] ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json");
    }
    int rc = xsm_j_open(&j, err, errlen);
    /* every part repeats the metadata: keep room for events beside it */
    if (!rc && j.limit < 2 * xsm_out_total(&j.o) + 65536)
        j.limit = 2 * xsm_out_total(&j.o) + 65536;
    xsm_ev ev;
    xsm_progress_begin("writing trace.json", e->nevents);
    uint64_t n = 0;
    int got = 0;
    while (!rc && (got = ops->next(src, &ev)) > 0) {
        /* room for the closing lines: start the next part before passing the limit */
        if (!j.first && xsm_out_total(&j.o) + 65536 > j.limit) {
            if ((rc = xsm_j_close(&j, err, errlen)) != 0)
                break;
            j.part++;
            if ((rc = xsm_j_open(&j, err, errlen)) != 0)
                break;
        }
        xsm_j_event(&j, &ev);
        if (j.o.failed)
            rc = xsm_err_set(err, errlen, "xsmerge: %s/trace-part%02d.json: write failed: %s", dir, j.part, strerror(errno));
        if (++n % 65536 == 0)
            xsm_progress_step(65536);
    }
    xsm_progress_end();
    if (got < 0 && !rc)
        rc = ops->close(src, err, errlen) ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.json");
    else if (ops->close(src, err, errlen) && !rc)
        rc = 1;
    if (!rc)
        rc = xsm_j_close(&j, err, errlen);
    else if (j.f) {
        xsm_out_free(&j.o);
        fclose(j.f);
    }
    free(j.memoff);
    free(j.memtot);
    for (size_t k = 0; k < e->ncomms; k++)
        xsm_out_free(&j.comm_lbl[k]);
    free(j.comm_lbl);
    if (!rc && j.part == 0) {
        char a[8192], b[8192];
        snprintf(a, sizeof a, "%s/trace-part00.json", dir);
        snprintf(b, sizeof b, "%s/trace.json", dir);
        if (rename(a, b) != 0)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s", b, strerror(errno));
    }
    return rc;
}
