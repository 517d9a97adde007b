/* merge/emit/pftrace.c — trace.pftrace, a Perfetto protobuf Trace (a
 * stream of TracePacket) written with the encoder in pb.h.
 *
 * Layout: one packet sequence per rank (trusted_packet_sequence_id rank +
 * 1) whose first packet clears incremental state and sets the sequence's
 * defaults: timestamps on clock 64, incremental (each packet's timestamp is
 * its distance from the previous one's, 1-3 bytes instead of 4-8; a clock
 * snapshot ties it to BOOTTIME, the trace clock, at 0), and the rank's
 * first thread as the track of events that name none (most of them). A
 * packet earlier than the previous one (never in time order, kept for
 * damaged rows) carries an absolute BOOTTIME timestamp, which leaves the
 * incremental clock alone. Then TrackDescriptors for every rank
 * (process "rank N (host)", pid N+1 because Perfetto reserves pid 0), thread,
 * GPU (device, stream), counter and memory track; then TrackEvents in time
 * order: SLICE_BEGIN/SLICE_END for regions, MPI calls and GPU activity,
 * INSTANT, COUNTER. Event and annotation names are interned (InternedData
 * sent with the first packet that uses them). Messages: the send slice
 * carries flow_ids, and an instant "recv" at the receive's completion on
 * the receiving thread carries terminating_flow_ids (a flow must begin
 * before it ends in time order, which the receive call's begin need not).
 * CPU samples (XSPROF_SAMPLE_HZ) are PerfSample packets in time order
 * among the events, with the pid and tid of their thread's track and
 * interned callstacks (pfsamples.c); threads only the samples name get a
 * thread track of their own. PerfSample rather than
 * StreamingProfilePacket: it names its pid and tid in every sample (one
 * sequence here holds all of a rank's threads, a StreamingProfilePacket
 * belongs to its sequence's one thread) and takes the packet's own
 * timestamp on the sequence clock (StreamingProfilePacket: microsecond
 * deltas from a ThreadDescriptor); Perfetto's UI shows PerfSamples as the
 * thread's and the process's CPU samples with their flame graph.
 *
 * Field numbers are Perfetto's published ones (protos/perfetto/trace/...);
 * tests/merge/perfetto_min.proto lists the subset used here. */
#include "merge/emit/emit.h"
#include "merge/emit/pb.h"
#include "merge/emit/memtrack.h"
#include "merge/emit/place.h"
#include "merge/emit/pfsamples.h"
#include "merge/symbols/symbols.h"
#include "merge/progress.h"
#include "core/record.h" /* kinds of mpi, gpu and arg rows */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    /* Trace / TracePacket */
    PB_TRACE_PACKET = 1,
    PB_PKT_TIMESTAMP = 8,
    PB_PKT_SEQ_ID = 10,
    PB_PKT_TRACK_EVENT = 11,
    PB_PKT_INTERNED = 12,
    PB_PKT_SEQ_FLAGS = 13,
    PB_PKT_CLOCK_SNAPSHOT = 6,
    PB_PKT_TS_CLOCK = 58,
    PB_PKT_DEFAULTS = 59,
    PB_PKT_TRACK_DESC = 60,
    PB_PKT_PERF_SAMPLE = 66,
    /* PerfSample (profiling/profile_packet.proto) */
    PB_PS_PID = 2,
    PB_PS_TID = 3,
    PB_PS_CALLSTACK = 4,
    PB_PS_CPU_MODE = 5,
    PS_MODE_USER = 2,
    /* TracePacketDefaults, TrackEventDefaults, ClockSnapshot(.Clock) */
    PB_DEF_TS_CLOCK = 58,
    PB_DEF_TRACK_EVENT = 11,
    PB_TED_TRACK = 11,
    PB_CS_CLOCK = 1,
    PB_CLK_ID = 1,
    PB_CLK_TS = 2,
    PB_CLK_INCREMENTAL = 3,
    PF_CLOCK_BOOTTIME = 6,
    PF_CLOCK_DELTA = 64, /* first sequence-scoped clock id */
    SEQ_CLEARED = 1,
    SEQ_NEEDS = 2,
    /* TrackDescriptor */
    PB_TD_UUID = 1,
    PB_TD_NAME = 2,
    PB_TD_PROCESS = 3,
    PB_TD_THREAD = 4,
    PB_TD_PARENT = 5,
    PB_TD_COUNTER = 8,
    PB_PD_PID = 1,
    PB_PD_NAME = 6,
    PB_THD_PID = 1,
    PB_THD_TID = 2,
    PB_THD_NAME = 5,
    /* TrackEvent */
    PB_TE_ANNOT = 4,
    PB_TE_TYPE = 9,
    PB_TE_NAME_IID = 10,
    PB_TE_TRACK = 11,
    PB_TE_CATEGORY_IIDS = 3,
    PB_TE_DCOUNTER = 44,
    PB_TE_FLOW = 47,
    PB_TE_TFLOW = 48,
    TE_BEGIN = 1,
    TE_END = 2,
    TE_INSTANT = 3,
    TE_COUNTER = 4,
    /* DebugAnnotation */
    PB_DA_NAME_IID = 1,
    PB_DA_UINT = 3,
    PB_DA_INT = 4,
    PB_DA_DOUBLE = 5,
    PB_DA_STRING = 6,
    PB_DA_ARRAY = 12,
    PB_DA_STRING_IID = 17,
    /* InternedData */
    PB_ID_CATEGORIES = 1,
    PB_ID_EVENT_NAMES = 2,
    PB_ID_ANNOT_STRINGS = 29,
    PB_ID_ANNOT_NAMES = 3,
    PB_IN_IID = 1,
    PB_IN_NAME = 2
};

enum { XSM_CAT_USER = 0, XSM_CAT_MPI, XSM_CAT_NVTX, XSM_CAT_GPU, XSM_CAT_CUDA, XSM_CAT_N };
static const char *const xsm_cat_names[XSM_CAT_N] = {"user", "mpi", "nvtx", "gpu", "cuda"};

/* Dense track numbers (small varints): the rank's process track, then its
 * threads, GPU streams, counters and memory devices. */
static uint64_t xsm_uuid_proc(const xsm_erank *er) { return er->track_base; }
static uint64_t xsm_uuid_thread(const xsm_erank *er, size_t i) { return er->track_base + 1 + i; }
static uint64_t xsm_uuid_gpu(const xsm_erank *er, size_t i) { return er->track_base + 1 + er->ntids + i; }
static uint64_t xsm_uuid_counter(const xsm_erank *er, size_t i)
{
    return er->track_base + 1 + er->ntids + er->ngpu + i;
}
static uint64_t xsm_uuid_mem(const xsm_erank *er, size_t i)
{
    return er->track_base + 1 + er->ntids + er->ngpu + er->ncounters + i;
}
/* thread track i of xsm_emit_sample_thread: a thread, or a sampled one */
static uint64_t xsm_uuid_sampled(const xsm_erank *er, size_t i)
{
    return i < er->ntids ? xsm_uuid_thread(er, i)
                         : er->track_base + 1 + er->ntids + er->ngpu + er->ncounters + er->nmemdev + (i - er->ntids);
}
/* A thread track's tid: synthetic and unique in the trace (Perfetto keys
 * threads by tid), from its track number. */
static int64_t xsm_pf_tid(uint64_t uuid) { return (int64_t)uuid + 999999; }

/* A slice end or a flow terminus waiting for its time. */
typedef struct xsm_pend {
    int64_t t;
    uint64_t seq;   /* later-begun slices end first at equal times */
    uint64_t track;
    uint64_t flow;  /* 0: slice end; else a terminus instant for this flow */
} xsm_pend;

typedef struct xsm_pf {
    const xsm_emit *e;
    xsm_out o;        /* the file */
    FILE *file;       /* o's file; o.f is NULL while a packet is open */
    size_t pkt_at;    /* content start of the open packet */
    uint32_t seq_id;  /* trusted_packet_sequence_id: rank + 1 */
    unsigned char *sent_name, *sent_key, *sent_comm; /* interned already on this sequence */
    unsigned char sent_cat[XSM_CAT_N];
    uint32_t new_names[64], new_keys[64], new_comms[8];
    int nnew_names, nnew_keys, nnew_comms, new_cat;
    xsm_pend *heap;
    size_t nheap, capheap;
    uint64_t seq;
    int64_t last_t;     /* the incremental clock's value: the last packet's time */
    uint64_t def_track; /* the sequence's default track (0: none) */
    uint32_t recv_name; /* global id of "recv" */
    double *memtot; /* running memory totals of the rank, per device */
    xsm_memtrack *live; /* its live allocations: what a free releases */
} xsm_pf;

static int xsm_pend_less(const xsm_pend *a, const xsm_pend *b)
{
    if (a->t != b->t) return a->t < b->t;
    if ((a->flow != 0) != (b->flow != 0)) return a->flow == 0; /* ends before termini */
    return a->seq > b->seq;
}

/* Push and pop move a hole instead of swapping, and push takes the fields
 * rather than a struct: a 32-byte struct built on the stack and copied
 * into the heap stalled on store forwarding (half the cycles of the
 * push, 3 % of a serial merge). */
static int xsm_pend_push(xsm_pf *pf, int64_t t, uint64_t track, uint64_t flow)
{
    if (pf->nheap == pf->capheap) {
        size_t cap = pf->capheap ? pf->capheap * 2 : 1024;
        xsm_pend *h = realloc(pf->heap, cap * sizeof *h);
        if (!h)
            return -1;
        pf->heap = h;
        pf->capheap = cap;
    }
    xsm_pend p = {t, pf->seq++, track, flow};
    size_t i = pf->nheap++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!xsm_pend_less(&p, &pf->heap[up]))
            break;
        pf->heap[i] = pf->heap[up];
        i = up;
    }
    pf->heap[i] = p;
    return 0;
}

/* Remove the top (read it before). */
static void xsm_pend_pop(xsm_pf *pf)
{
    size_t n = --pf->nheap;
    if (n == 0)
        return;
    const xsm_pend *last = &pf->heap[n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= n)
            break;
        if (l + 1 < n && xsm_pend_less(&pf->heap[l + 1], &pf->heap[l]))
            m = l + 1;
        if (!xsm_pend_less(&pf->heap[m], last))
            break;
        pf->heap[i] = pf->heap[m];
        i = m;
    }
    pf->heap[i] = *last;
}

/* Packets are encoded straight into the file buffer as Trace.packet
 * fields; the buffer is written out only between packets. */
static xsm_out *xsm_pf_packet_begin(xsm_pf *pf)
{
    pf->o.f = NULL;
    pf->pkt_at = xsm_pb_begin(&pf->o, PB_TRACE_PACKET);
    return &pf->o;
}

static void xsm_pf_flush_packet(xsm_pf *pf)
{
    xsm_pb_end(&pf->o, pf->pkt_at);
    pf->o.f = pf->file;
    if (pf->o.len >= pf->o.flush_at)
        xsm_out_flush(&pf->o);
}

static void xsm_pf_use_name(xsm_pf *pf, uint32_t id)
{
    if (!pf->sent_name[id] && pf->nnew_names < 64) {
        pf->sent_name[id] = 1;
        pf->new_names[pf->nnew_names++] = id;
    }
}

static void xsm_pf_use_key(xsm_pf *pf, uint32_t id)
{
    if (!pf->sent_key[id] && pf->nnew_keys < 64) {
        pf->sent_key[id] = 1;
        pf->new_keys[pf->nnew_keys++] = id;
    }
}

static void xsm_pf_use_cat(xsm_pf *pf, int cat)
{
    if (!pf->sent_cat[cat]) {
        pf->sent_cat[cat] = 1;
        pf->new_cat = cat + 1;
    }
}

/* Communicator labels ("MPI_COMM_WORLD (0)") as interned annotation strings. */
static int xsm_pf_use_comm(xsm_pf *pf, uint32_t comm)
{
    const xsm_emit *e = pf->e;
    for (size_t k = 0; k < e->ncomms; k++) {
        if (e->comm_ids[k] != comm)
            continue;
        if (!pf->sent_comm[k] && pf->nnew_comms < 8) {
            pf->sent_comm[k] = 1;
            pf->new_comms[pf->nnew_comms++] = (uint32_t)k;
        }
        return pf->sent_comm[k] ? (int)k : -1;
    }
    return -1;
}

/* Start a packet at time t on the sequence that needs its incremental state. */
static xsm_out *xsm_pf_timed_begin(xsm_pf *pf, int64_t t)
{
    xsm_out *p = xsm_pf_packet_begin(pf);
    uint8_t *w = xsm_pb_room(p, 40);
    if (w) {
        if (t >= pf->last_t) {
            w = xsm_pb_w_uint(w, PB_PKT_TIMESTAMP, (uint64_t)(t - pf->last_t));
            pf->last_t = t;
        } else {
            w = xsm_pb_w_uint(w, PB_PKT_TIMESTAMP, (uint64_t)t);
            w = xsm_pb_w_uint(w, PB_PKT_TS_CLOCK, PF_CLOCK_BOOTTIME);
        }
        w = xsm_pb_w_uint(w, PB_PKT_SEQ_ID, pf->seq_id);
        w = xsm_pb_w_uint(w, PB_PKT_SEQ_FLAGS, SEQ_NEEDS);
        xsm_pb_commit(p, w);
    }
    return p;
}

/* Start an event packet: timestamp, sequence, interned data for new names. */
static size_t xsm_pf_event_begin(xsm_pf *pf, int64_t t)
{
    xsm_out *p = xsm_pf_timed_begin(pf, t);
    if (pf->nnew_names || pf->nnew_keys || pf->nnew_comms || pf->new_cat) {
        size_t id = xsm_pb_begin(p, PB_PKT_INTERNED);
        if (pf->new_cat) {
            size_t m = xsm_pb_begin(p, PB_ID_CATEGORIES);
            xsm_pb_uint(p, PB_IN_IID, (uint64_t)pf->new_cat);
            xsm_pb_str(p, PB_IN_NAME, xsm_cat_names[pf->new_cat - 1]);
            xsm_pb_end(p, m);
        }
        for (int i = 0; i < pf->nnew_comms; i++) {
            char buf[512];
            uint32_t k = pf->new_comms[i];
            snprintf(buf, sizeof buf, "%s (%u)", pf->e->names.str[pf->e->comm_name[k]], pf->e->comm_ids[k]);
            size_t m = xsm_pb_begin(p, PB_ID_ANNOT_STRINGS);
            xsm_pb_uint(p, PB_IN_IID, k + 1u);
            xsm_pb_str(p, PB_IN_NAME, buf); /* InternedString.str */
            xsm_pb_end(p, m);
        }
        for (int i = 0; i < pf->nnew_names; i++) {
            size_t m = xsm_pb_begin(p, PB_ID_EVENT_NAMES);
            xsm_pb_uint(p, PB_IN_IID, pf->new_names[i] + 1u);
            xsm_pb_str(p, PB_IN_NAME, pf->e->names.str[pf->new_names[i]]);
            xsm_pb_end(p, m);
        }
        for (int i = 0; i < pf->nnew_keys; i++) {
            size_t m = xsm_pb_begin(p, PB_ID_ANNOT_NAMES);
            xsm_pb_uint(p, PB_IN_IID, pf->new_keys[i] + 1u);
            xsm_pb_str(p, PB_IN_NAME, pf->e->names.str[pf->new_keys[i]]);
            xsm_pb_end(p, m);
        }
        xsm_pb_end(p, id);
        pf->nnew_names = pf->nnew_keys = pf->nnew_comms = pf->new_cat = 0;
    }
    return xsm_pb_begin(p, PB_PKT_TRACK_EVENT);
}

static void xsm_pf_event_end(xsm_pf *pf, size_t te)
{
    xsm_pb_end(&pf->o, te);
    xsm_pf_flush_packet(pf);
}

/* Debug annotations: the key must have been passed to xsm_pf_use_key
 * before xsm_pf_event_begin. */
/* A DebugAnnotation of a name and one varint value: at most 21 bytes, so
 * its length is known to take one byte (the bytes xsm_pb_begin/end give). */
static void xsm_pf_annot_v(xsm_out *p, uint32_t key, uint32_t field, uint64_t v)
{
    uint8_t *w = xsm_pb_room(p, 24);
    if (!w)
        return;
    uint8_t *len = w + 1;
    w[0] = (uint8_t)(PB_TE_ANNOT << 3 | XSM_PB_LEN);
    w = xsm_pb_w_uint(w + 2, PB_DA_NAME_IID, key + 1u);
    w = xsm_pb_w_uint(w, field, v);
    *len = (uint8_t)(w - len - 1);
    xsm_pb_commit(p, w);
}

static void xsm_pf_annot_u(xsm_out *p, uint32_t key, uint64_t v) { xsm_pf_annot_v(p, key, PB_DA_UINT, v); }

/* int64 fields: two's complement as a 64-bit varint */
static void xsm_pf_annot_i(xsm_out *p, uint32_t key, int64_t v) { xsm_pf_annot_v(p, key, PB_DA_INT, (uint64_t)v); }

static void xsm_pf_annot_s(xsm_out *p, uint32_t key, const char *s)
{
    size_t a = xsm_pb_begin(p, PB_TE_ANNOT);
    xsm_pb_uint(p, PB_DA_NAME_IID, key + 1u);
    xsm_pb_str(p, PB_DA_STRING, s);
    xsm_pb_end(p, a);
}

static void xsm_pf_descriptors(xsm_pf *pf, size_t r)
{
    const xsm_emit *e = pf->e;
    const xsm_run *run = e->run;
    const xsm_erank *er = &e->ranks[r];
    xsm_out *p = &pf->o;
    char buf[512];
    /* the defaults go with the clearing packet: clearing drops them */
    pf->def_track = er->ntids ? xsm_uuid_thread(er, 0) : 0;
    xsm_pf_packet_begin(pf);
    xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
    xsm_pb_uint(p, PB_PKT_SEQ_FLAGS, SEQ_CLEARED);
    size_t df = xsm_pb_begin(p, PB_PKT_DEFAULTS);
    xsm_pb_uint(p, PB_DEF_TS_CLOCK, PF_CLOCK_DELTA);
    if (pf->def_track) {
        size_t ted = xsm_pb_begin(p, PB_DEF_TRACK_EVENT);
        xsm_pb_uint(p, PB_TED_TRACK, pf->def_track);
        xsm_pb_end(p, ted);
    }
    xsm_pb_end(p, df);
    xsm_pf_flush_packet(pf);
    xsm_pf_packet_begin(pf);
    xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
    size_t cs = xsm_pb_begin(p, PB_PKT_CLOCK_SNAPSHOT);
    for (int k = 0; k < 2; k++) {
        size_t c = xsm_pb_begin(p, PB_CS_CLOCK);
        xsm_pb_uint(p, PB_CLK_ID, k ? PF_CLOCK_BOOTTIME : PF_CLOCK_DELTA);
        xsm_pb_uint(p, PB_CLK_TS, 0);
        if (!k)
            xsm_pb_uint(p, PB_CLK_INCREMENTAL, 1);
        xsm_pb_end(p, c);
    }
    xsm_pb_end(p, cs);
    xsm_pf_flush_packet(pf);
    pf->last_t = 0;
    snprintf(buf, sizeof buf, "rank %zu (%s)", r, run->ranks[r].d.host);
    xsm_pf_packet_begin(pf);
    xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
    size_t td = xsm_pb_begin(p, PB_PKT_TRACK_DESC);
    xsm_pb_uint(p, PB_TD_UUID, xsm_uuid_proc(er));
    xsm_pb_str(p, PB_TD_NAME, buf);
    size_t pd = xsm_pb_begin(p, PB_TD_PROCESS);
    xsm_pb_int(p, PB_PD_PID, (int64_t)r + 1);
    xsm_pb_str(p, PB_PD_NAME, buf);
    xsm_pb_end(p, pd);
    xsm_pb_end(p, td);
    xsm_pf_flush_packet(pf);
    for (size_t i = 0; i < er->ntids; i++) {
        if (er->tid_names[i] != UINT32_MAX)
            snprintf(buf, sizeof buf, "%s (thread %u)", e->names.str[er->tid_names[i]], er->tids[i]);
        else
            snprintf(buf, sizeof buf, "thread %u", er->tids[i]);
        xsm_pf_packet_begin(pf);
        xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
        td = xsm_pb_begin(p, PB_PKT_TRACK_DESC);
        xsm_pb_uint(p, PB_TD_UUID, xsm_uuid_thread(er, i));
        xsm_pb_uint(p, PB_TD_PARENT, xsm_uuid_proc(er));
        xsm_pb_str(p, PB_TD_NAME, buf);
        size_t th = xsm_pb_begin(p, PB_TD_THREAD);
        xsm_pb_int(p, PB_THD_PID, (int64_t)r + 1);
        xsm_pb_int(p, PB_THD_TID, xsm_pf_tid(xsm_uuid_thread(er, i)));
        xsm_pb_str(p, PB_THD_NAME, buf);
        xsm_pb_end(p, th);
        xsm_pb_end(p, td);
        xsm_pf_flush_packet(pf);
    }
    for (size_t i = 0; i < er->ngpu; i++) {
        snprintf(buf, sizeof buf, "GPU %u stream %u", er->gpu[i].device, er->gpu[i].stream);
        xsm_pf_packet_begin(pf);
        xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
        td = xsm_pb_begin(p, PB_PKT_TRACK_DESC);
        xsm_pb_uint(p, PB_TD_UUID, xsm_uuid_gpu(er, i));
        xsm_pb_uint(p, PB_TD_PARENT, xsm_uuid_proc(er));
        xsm_pb_str(p, PB_TD_NAME, buf);
        xsm_pb_end(p, td);
        xsm_pf_flush_packet(pf);
    }
    for (size_t i = 0; i < er->ncounters + er->nmemdev; i++) {
        if (i < er->ncounters)
            snprintf(buf, sizeof buf, "%s", e->names.str[er->counters[i]]);
        else if (er->memdev[i - er->ncounters] < 0)
            snprintf(buf, sizeof buf, "memory (host)");
        else
            snprintf(buf, sizeof buf, "memory (GPU %d)", (int)er->memdev[i - er->ncounters]);
        xsm_pf_packet_begin(pf);
        xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
        td = xsm_pb_begin(p, PB_PKT_TRACK_DESC);
        xsm_pb_uint(p, PB_TD_UUID, i < er->ncounters ? xsm_uuid_counter(er, i) : xsm_uuid_mem(er, i - er->ncounters));
        xsm_pb_uint(p, PB_TD_PARENT, xsm_uuid_proc(er));
        xsm_pb_str(p, PB_TD_NAME, buf);
        size_t cd = xsm_pb_begin(p, PB_TD_COUNTER);
        xsm_pb_end(p, cd);
        xsm_pb_end(p, td);
        xsm_pf_flush_packet(pf);
    }
    for (size_t i = er->ntids; i < er->ntids + er->nxos; i++) {
        snprintf(buf, sizeof buf, "sampled thread (tid %u)", er->xos[i - er->ntids]);
        uint64_t uuid = xsm_uuid_sampled(er, i);
        xsm_pf_packet_begin(pf);
        xsm_pb_uint(p, PB_PKT_SEQ_ID, pf->seq_id);
        td = xsm_pb_begin(p, PB_PKT_TRACK_DESC);
        xsm_pb_uint(p, PB_TD_UUID, uuid);
        xsm_pb_uint(p, PB_TD_PARENT, xsm_uuid_proc(er));
        xsm_pb_str(p, PB_TD_NAME, buf);
        size_t th = xsm_pb_begin(p, PB_TD_THREAD);
        xsm_pb_int(p, PB_THD_PID, (int64_t)r + 1);
        xsm_pb_int(p, PB_THD_TID, xsm_pf_tid(uuid));
        xsm_pb_str(p, PB_THD_NAME, buf);
        xsm_pb_end(p, th);
        xsm_pb_end(p, td);
        xsm_pf_flush_packet(pf);
    }
}

/* The next CPU sample as a PerfSample packet on its thread's track, its
 * callstack interned in the same packet when new. 0, or -1. */
static int xsm_pf_sample(xsm_pf *pf, xsm_pfs *smp, size_t r)
{
    const xsm_erank *er = &pf->e->ranks[r];
    int64_t t = xsm_pfs_time(smp);
    size_t thread;
    uint64_t cs;
    int fresh = xsm_pfs_take(smp, &thread, &cs);
    xsm_out *p = xsm_pf_timed_begin(pf, t);
    if (fresh) {
        size_t id = xsm_pb_begin(p, PB_PKT_INTERNED);
        if (xsm_pfs_intern(smp, p))
            return -1;
        xsm_pb_end(p, id);
    }
    size_t ps = xsm_pb_begin(p, PB_PKT_PERF_SAMPLE);
    xsm_pb_uint(p, PB_PS_PID, (uint64_t)r + 1);
    xsm_pb_uint(p, PB_PS_TID, (uint64_t)xsm_pf_tid(xsm_uuid_sampled(er, thread)));
    if (cs)
        xsm_pb_uint(p, PB_PS_CALLSTACK, cs);
    xsm_pb_uint(p, PB_PS_CPU_MODE, PS_MODE_USER);
    xsm_pb_end(p, ps);
    xsm_pf_flush_packet(pf);
    return 0;
}

/* An event's track: left out when it is the sequence's default. */
static uint8_t *xsm_pf_w_track(const xsm_pf *pf, uint8_t *w, uint64_t track)
{
    return track == pf->def_track ? w : xsm_pb_w_uint(w, PB_TE_TRACK, track);
}

/* Emit pending ends/termini due before an event at time t (all if t is INT64_MAX). */
static void xsm_pf_drain(xsm_pf *pf, int64_t t, int inclusive_termini)
{
    while (pf->nheap) {
        const xsm_pend *top = &pf->heap[0];
        int due = top->t < t || (top->t == t && (top->flow == 0 || inclusive_termini));
        if (!due)
            break;
        int64_t pt = top->t;
        uint64_t track = top->track, flow = top->flow;
        xsm_pend_pop(pf);
        if (flow)
            xsm_pf_use_name(pf, pf->recv_name);
        size_t te = xsm_pf_event_begin(pf, pt);
        if (flow) {
            uint8_t *w = xsm_pb_room(&pf->o, 48);
            if (w) {
                w = xsm_pb_w_uint(w, PB_TE_TYPE, TE_INSTANT);
                w = xsm_pf_w_track(pf, w, track);
                w = xsm_pb_w_uint(w, PB_TE_NAME_IID, pf->recv_name + 1u);
                xsm_pb_commit(&pf->o, xsm_pb_w_fixed64(w, PB_TE_TFLOW, flow));
            }
        } else {
            uint8_t *w = xsm_pb_room(&pf->o, 16);
            if (w) {
                w = xsm_pb_w_uint(w, PB_TE_TYPE, TE_END);
                xsm_pb_commit(&pf->o, xsm_pf_w_track(pf, w, track));
            }
        }
        xsm_pf_event_end(pf, te);
    }
}

static int xsm_pf_slice(xsm_pf *pf, uint64_t track, int64_t t_end, size_t *te_out, int64_t t, uint32_t name, int cat)
{
    xsm_pf_use_name(pf, name);
    xsm_pf_use_cat(pf, cat);
    size_t te = xsm_pf_event_begin(pf, t);
    uint8_t *w = xsm_pb_room(&pf->o, 40);
    if (w) {
        w = xsm_pb_w_uint(w, PB_TE_TYPE, TE_BEGIN);
        w = xsm_pf_w_track(pf, w, track);
        w = xsm_pb_w_uint(w, PB_TE_NAME_IID, name + 1u);
        xsm_pb_commit(&pf->o, xsm_pb_w_uint(w, PB_TE_CATEGORY_IIDS, (uint64_t)cat + 1u));
    }
    *te_out = te;
    /* a damaged row may end before it begins: never end a slice before its begin */
    return xsm_pend_push(pf, t_end > t ? t_end : t, track, 0);
}

static int xsm_pf_event(xsm_pf *pf, const xsm_ev *ev)
{
    const xsm_emit *e = pf->e;
    int32_t r = ev->rank;
    const xsm_erank *er = &e->ranks[r];
    xsm_out *p = &pf->o;
    size_t te;
    switch (ev->kind) {
    case XSM_EV_REGION: {
        const xsprof_io_region *g = ev->rec;
        const xsprof_io_arg *args = ev->args;
        for (uint32_t k = 0; args && k < g->nargs; k++)
            xsm_pf_use_key(pf, xsm_emit_gid(e, r, args[k].key));
        if (xsm_pf_slice(pf, xsm_uuid_thread(er, xsm_emit_tid_index(er, g->thread)), g->t_end, &te, g->t_begin,
                         xsm_emit_gid(e, r, g->name), g->category < 4 ? (int)g->category : XSM_CAT_USER))
            return -1;
        for (uint32_t k = 0; args && k < g->nargs; k++) {
            const xsprof_io_arg *a = &args[k];
            uint32_t key = xsm_emit_gid(e, r, a->key);
            if (!pf->sent_key[key])
                continue; /* more new names than one packet interns: skip, never refer to an unknown iid */
            if (a->kind == XSPROF_ARG_INT) {
                xsm_pf_annot_i(p, key, a->i);
            } else if (a->kind == XSPROF_ARG_DOUBLE) {
                size_t an = xsm_pb_begin(p, PB_TE_ANNOT);
                xsm_pb_uint(p, PB_DA_NAME_IID, key + 1u);
                xsm_pb_double(p, PB_DA_DOUBLE, a->d);
                xsm_pb_end(p, an);
            } else if (a->kind == XSPROF_ARG_STRING) {
                xsm_pf_annot_s(p, key, xsm_emit_str(e, r, a->s));
            } else if (a->kind == XSPROF_ARG_SHAPE) {
                size_t an = xsm_pb_begin(p, PB_TE_ANNOT);
                xsm_pb_uint(p, PB_DA_NAME_IID, key + 1u);
                for (uint32_t q = 0; q < a->ndims && q < XSPROF_ARG_SHAPE_MAX; q++) {
                    size_t el = xsm_pb_begin(p, PB_DA_ARRAY);
                    xsm_pb_int(p, PB_DA_INT, a->dims[q]);
                    xsm_pb_end(p, el);
                }
                xsm_pb_end(p, an);
            }
        }
        xsm_pf_event_end(pf, te);
        return 0;
    }
    case XSM_EV_MPI: {
        const xsprof_io_mpi *m = ev->rec;
        uint64_t track = xsm_uuid_thread(er, xsm_emit_tid_index(er, m->thread));
        int comm_k = m->comm != UINT32_MAX ? xsm_pf_use_comm(pf, m->comm) : -1;
        if (m->peer >= 0) xsm_pf_use_key(pf, e->key[XSM_KEY_PEER]);
        if (m->tag != XSPROF_MPI_NONE) xsm_pf_use_key(pf, e->key[XSM_KEY_TAG]);
        if (m->root >= 0) xsm_pf_use_key(pf, e->key[XSM_KEY_ROOT]);
        if (m->bytes_sent) xsm_pf_use_key(pf, e->key[XSM_KEY_BYTES_SENT]);
        if (m->bytes_recv) xsm_pf_use_key(pf, e->key[XSM_KEY_BYTES_RECV]);
        if (m->comm != UINT32_MAX) xsm_pf_use_key(pf, e->key[XSM_KEY_COMM]);
        if (m->coll_seq) xsm_pf_use_key(pf, e->key[XSM_KEY_COLL_SEQ]);
        if (m->count) xsm_pf_use_key(pf, e->key[XSM_KEY_COUNT]);
        if (xsm_pf_slice(pf, track, m->t_end, &te, m->t_begin, xsm_emit_gid(e, r, m->op), XSM_CAT_MPI))
            return -1;
        if (m->peer >= 0) xsm_pf_annot_i(p, e->key[XSM_KEY_PEER], m->peer);
        if (m->tag != XSPROF_MPI_NONE) xsm_pf_annot_i(p, e->key[XSM_KEY_TAG], m->tag);
        if (m->root >= 0) xsm_pf_annot_i(p, e->key[XSM_KEY_ROOT], m->root);
        if (m->bytes_sent) xsm_pf_annot_u(p, e->key[XSM_KEY_BYTES_SENT], m->bytes_sent);
        if (m->bytes_recv) xsm_pf_annot_u(p, e->key[XSM_KEY_BYTES_RECV], m->bytes_recv);
        if (comm_k >= 0) {
            xsm_pf_annot_v(p, e->key[XSM_KEY_COMM], PB_DA_STRING_IID, (uint64_t)comm_k + 1u);
        } else if (m->comm != UINT32_MAX) {
            xsm_pf_annot_u(p, e->key[XSM_KEY_COMM], m->comm); /* communicator never defined: its id */
        }
        if (m->coll_seq) xsm_pf_annot_u(p, e->key[XSM_KEY_COLL_SEQ], m->coll_seq);
        if (m->count) xsm_pf_annot_u(p, e->key[XSM_KEY_COUNT], m->count);
        const xsm_evflow *f = ev->mflows;
        for (size_t k = 0; k < ev->nmflows; k++) {
            uint8_t *w;
            if (f[k].out && (w = xsm_pb_room(p, 16)))
                xsm_pb_commit(p, xsm_pb_w_fixed64(w, PB_TE_FLOW, f[k].id));
            else if (f[k].out)
                continue; /* out of memory: o.failed reports it */
            else if (xsm_pend_push(pf, f[k].t, track, f[k].id))
                return -1;
        }
        xsm_pf_event_end(pf, te);
        return 0;
    }
    case XSM_EV_GPU: {
        const xsprof_io_gpu *g = ev->rec;
        int api = g->kind == XSPROF_GPU_API;
        uint64_t track = api ? xsm_uuid_thread(er, xsm_emit_tid_index(er, g->thread))
                             : xsm_uuid_gpu(er, xsm_emit_gpu_index(er, g->device, g->stream));
        int kernel = g->kind == XSPROF_GPU_KERNEL;
        xsm_pf_use_key(pf, e->key[XSM_KEY_KIND]);
        if (kernel) {
            xsm_pf_use_key(pf, e->key[XSM_KEY_GRID]);
            xsm_pf_use_key(pf, e->key[XSM_KEY_BLOCK]);
        }
        xsm_pf_use_key(pf, e->key[XSM_KEY_DEVICE]);
        xsm_pf_use_key(pf, e->key[XSM_KEY_STREAM]);
        xsm_pf_use_key(pf, e->key[XSM_KEY_CORRELATION]);
        if (g->bytes) xsm_pf_use_key(pf, e->key[XSM_KEY_BYTES]);
        if (xsm_pf_slice(pf, track, g->t_end, &te, g->t_begin, xsm_emit_gid(e, r, g->name), api ? XSM_CAT_CUDA : XSM_CAT_GPU))
            return -1;
        xsm_pf_annot_s(p, e->key[XSM_KEY_KIND], xsm_emit_gpu_kind_name(g->kind));
        for (int q = 0; kernel && q < 2; q++) {
            const uint32_t *v = q ? g->block : g->grid;
            size_t an = xsm_pb_begin(p, PB_TE_ANNOT);
            xsm_pb_uint(p, PB_DA_NAME_IID, e->key[q ? XSM_KEY_BLOCK : XSM_KEY_GRID] + 1u);
            for (int c = 0; c < 3; c++) {
                size_t el = xsm_pb_begin(p, PB_DA_ARRAY);
                xsm_pb_uint(p, PB_DA_UINT, v[c]);
                xsm_pb_end(p, el);
            }
            xsm_pb_end(p, an);
        }
        xsm_pf_annot_u(p, e->key[XSM_KEY_DEVICE], g->device);
        xsm_pf_annot_u(p, e->key[XSM_KEY_STREAM], g->stream);
        xsm_pf_annot_u(p, e->key[XSM_KEY_CORRELATION], g->correlation);
        if (g->bytes) xsm_pf_annot_u(p, e->key[XSM_KEY_BYTES], g->bytes);
        size_t nf;
        const xsm_flow *f = xsm_emit_flows(er->gflows, er->ngflows, ev->row, &nf);
        for (size_t k = 0; k < nf; k++)
            xsm_pb_fixed64(p, f[k].out ? PB_TE_FLOW : PB_TE_TFLOW, f[k].id);
        xsm_pf_event_end(pf, te);
        return 0;
    }
    case XSM_EV_INSTANT: {
        const xsprof_io_instant *in = ev->rec;
        uint32_t name = xsm_emit_gid(e, r, in->name);
        xsm_pf_use_name(pf, name);
        te = xsm_pf_event_begin(pf, in->t);
        uint8_t *w = xsm_pb_room(p, 16);
        if (w)
            xsm_pb_commit(p, xsm_pf_w_track(pf, xsm_pb_w_uint(w, PB_TE_TYPE, TE_INSTANT),
                                            xsm_uuid_thread(er, xsm_emit_tid_index(er, in->thread))));
        xsm_pb_uint(p, PB_TE_NAME_IID, name + 1u);
        xsm_pf_event_end(pf, te);
        return 0;
    }
    case XSM_EV_COUNTER: {
        const xsprof_io_counter *c = ev->rec;
        te = xsm_pf_event_begin(pf, c->t);
        xsm_pb_uint(p, PB_TE_TYPE, TE_COUNTER);
        xsm_pb_uint(p, PB_TE_TRACK, xsm_uuid_counter(er, xsm_emit_counter_index(er, xsm_emit_gid(e, r, c->name))));
        xsm_pb_double(p, PB_TE_DCOUNTER, c->value);
        xsm_pf_event_end(pf, te);
        return 0;
    }
    default: {
        const xsprof_io_mem *m = ev->rec;
        size_t i = xsm_emit_memdev_index(er, m->device);
        double *tot = &pf->memtot[i];
        int64_t delta;
        if (xsm_memtrack_apply(pf->live, r, m, &delta))
            return -1;
        *tot += (double)delta;
        if (m->kind & XSPROF_MEM_F_PAUSED) /* counted, not drawn: outside the recorded window */
            return 0;
        te = xsm_pf_event_begin(pf, m->t);
        xsm_pb_uint(p, PB_TE_TYPE, TE_COUNTER);
        xsm_pb_uint(p, PB_TE_TRACK, xsm_uuid_mem(er, i));
        xsm_pb_double(p, PB_TE_DCOUNTER, *tot);
        xsm_pf_event_end(pf, te);
        return 0;
    }
    }
}

/* The samples before time t (all: INT64_MAX), each after the slice ends
 * due before it. 0, or -1. */
static int xsm_pf_samples_until(xsm_pf *pf, xsm_pfs *smp, size_t r, int64_t t)
{
    for (int64_t ts; (ts = xsm_pfs_time(smp)) < t || (t == INT64_MAX && ts != INT64_MAX);) {
        xsm_pf_drain(pf, ts, 0);
        if (xsm_pf_sample(pf, smp, r) || pf->o.failed)
            return -1;
    }
    return 0;
}

int xsm_emit_pftrace_rank(const xsm_emit *e, size_t r, FILE *f, const char *dir, uint64_t *bytes, xsm_symbols **sym,
                          char *err, size_t errlen)
{
    xsm_pf pf = {.e = e, .seq_id = (uint32_t)r + 1};
    xsm_out_init(&pf.o, f);
    pf.file = f;
    const xsm_erank *er = &e->ranks[r];
    pf.memtot = calloc(er->nmemdev + 1, sizeof *pf.memtot);
    pf.sent_name = calloc(e->names.n + 2, 1);
    pf.sent_key = calloc(e->names.n + 2, 1);
    pf.sent_comm = calloc(e->ncomms + 1, 1);
    pf.live = xsm_memtrack_new();
    pf.recv_name = e->key[XSM_KEY_RECV]; /* name of the flow-terminus instants */
    xsm_pfs *smp = xsm_pfs_open(e, r, sym);
    const xsm_src_ops *ops = xsm_emit_source(e);
    void *src = NULL;
    int rc = 0;
    *bytes = 0;
    if (!pf.memtot || !pf.sent_name || !pf.sent_key || !pf.sent_comm || !pf.live || !smp)
        rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
    else if (!(src = ops->open(e, r, err, errlen)))
        rc = 1;
    if (!rc) {
        xsm_pf_descriptors(&pf, r);
        xsm_ev ev;
        uint64_t n = 0;
        int got;
        while ((got = ops->next(src, &ev)) > 0) {
            if (xsm_pf_samples_until(&pf, smp, r, ev.t)) {
                rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.pftrace: write failed: %s", dir,
                                 errno ? strerror(errno) : "out of memory");
                break;
            }
            xsm_pf_drain(&pf, ev.t, 0);
            if (xsm_pf_event(&pf, &ev) || pf.o.failed) {
                rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.pftrace: write failed: %s", dir,
                                 errno ? strerror(errno) : "out of memory");
                break;
            }
            if (++n % 65536 == 0)
                xsm_progress_step(65536);
        }
        xsm_progress_step(n % 65536);
        if (got < 0 && !rc)
            rc = ops->close(src, err, errlen) ? 1 : xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
        else if (ops->close(src, err, errlen) && !rc)
            rc = 1;
        src = NULL;
        if (!rc && xsm_pf_samples_until(&pf, smp, r, INT64_MAX))
            rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.pftrace: write failed: %s", dir,
                             errno ? strerror(errno) : "out of memory");
        if (!rc)
            xsm_pf_drain(&pf, INT64_MAX, 1);
    }
    if (!rc && (xsm_out_flush(&pf.o) || pf.o.failed))
        rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.pftrace: write failed: %s", dir, strerror(errno));
    *bytes = pf.o.written;
    xsm_out_free(&pf.o);
    free(pf.heap);
    free(pf.memtot);
    free(pf.sent_name);
    free(pf.sent_key);
    free(pf.sent_comm);
    xsm_memtrack_free(pf.live);
    xsm_pfs_close(smp);
    return rc;
}

/* A span's writers: each takes the next rank, in order, so that the
 * rank before the one it encodes is mostly finished by then and few of
 * its bytes wait for their place (emit/place.h). */
struct xsm_pf_writers {
    const xsm_emit *e;
    const char *dir; /* for messages */
    size_t lo, step, n;
    size_t next;     /* the next block to take (atomic) */
    int failed;      /* atomic: a writer failed, the others stop */
    xsm_place *pl;
    pthread_mutex_t mu;
    int rc;
    char err[1024];
    pthread_t t[XSM_EMIT_MAX_THREADS];
    size_t started;
    int caller_works;
};

static void *xsm_pf_writers_run(void *arg)
{
    xsm_pf_writers *s = arg;
    char err[1024];
    xsm_symbols *sym = NULL; /* this thread's, for all its ranks' samples */
    for (;;) {
        size_t k = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED);
        if (k >= s->n)
            break;
        size_t r = s->lo + k * s->step;
        int rc = 0;
        FILE *f = NULL;
        if (s->e->run->ranks[r].present && !__atomic_load_n(&s->failed, __ATOMIC_RELAXED)) {
            uint64_t n;
            if (!(f = xsm_place_file(s->pl, k)))
                rc = xsm_err_set(err, sizeof err, "xsmerge: %s/trace.pftrace: %s", s->dir, strerror(errno));
            else if (!(rc = xsm_emit_pftrace_rank(s->e, r, f, s->dir, &n, &sym, err, sizeof err)) && fflush(f) != 0)
                rc = xsm_err_set(err, sizeof err, "xsmerge: %s/trace.pftrace: write failed: %s", s->dir,
                                 strerror(errno));
        }
        xsm_place_finish(s->pl, k); /* also after a failure: the others wait for every block */
        if (rc) {
            __atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
            pthread_mutex_lock(&s->mu);
            if (!s->rc) {
                s->rc = rc;
                snprintf(s->err, sizeof s->err, "%s", err);
            }
            pthread_mutex_unlock(&s->mu);
        }
        xsm_place_help(s->pl, 0); /* the bytes its finish placed */
    }
    xsm_place_help(s->pl, 1); /* none left to take: write what still waits and is placed */
    xsm_symbols_close(sym);
    return NULL;
}

xsm_pf_writers *xsm_emit_pftrace_start(const xsm_emit *e, const char *dir, size_t lo, size_t step, size_t n,
                                       xsm_place *pl, int caller_works)
{
    xsm_pf_writers *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    *s = (xsm_pf_writers){.e = e, .dir = dir, .lo = lo, .step = step ? step : 1, .n = n, .pl = pl,
                          .caller_works = caller_works};
    pthread_mutex_init(&s->mu, NULL);
    size_t nt = (size_t)xsm_emit_threads(e);
    if (nt > XSM_EMIT_MAX_THREADS)
        nt = XSM_EMIT_MAX_THREADS;
    if (nt > n)
        nt = n ? n : 1;
    if (caller_works)
        nt--;
    while (s->started < nt && pthread_create(&s->t[s->started], NULL, xsm_pf_writers_run, s) == 0)
        s->started++;
    if (!s->started && !caller_works)
        xsm_pf_writers_run(s); /* no thread: the work is done here, all of it waiting for its place */
    return s;
}

int xsm_emit_pftrace_join(xsm_pf_writers *s, char *err, size_t errlen)
{
    if (s->caller_works)
        xsm_pf_writers_run(s);
    for (size_t k = 0; k < s->started; k++)
        pthread_join(s->t[k], NULL);
    pthread_mutex_destroy(&s->mu);
    int rc = s->rc ? xsm_err_set(err, errlen, "%s", s->err) : 0;
    free(s);
    return rc;
}

int xsm_emit_pftrace_span(const xsm_emit *e, const char *dir, size_t lo, size_t hi, int fd, uint64_t at,
                          uint64_t *bytes, char *err, size_t errlen)
{
    *bytes = 0;
    xsm_place *pl = xsm_place_new(fd, (int64_t)at, hi - lo, 1, e->hold, dir, lo);
    xsm_pf_writers *w = pl ? xsm_emit_pftrace_start(e, dir, lo, 1, hi - lo, pl, 1) : NULL;
    if (!w) {
        xsm_place_free(pl);
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.pftrace");
    }
    int rc = xsm_emit_pftrace_join(w, err, errlen);
    if (!rc && xsm_place_error(pl))
        rc = xsm_err_set(err, errlen, "xsmerge: %s/trace.pftrace: write failed: %s", dir,
                         strerror(xsm_place_error(pl)));
    *bytes = xsm_place_size(pl);
    xsm_place_free(pl);
    return rc;
}

int xsm_emit_pftrace(const xsm_emit *e, const char *dir, char *err, size_t errlen)
{
    char path[8192];
    xsm_path(path, sizeof path, dir, "trace.pftrace");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s", path, strerror(errno));
    xsm_progress_begin("writing trace.pftrace", e->nevents);
    uint64_t bytes;
    int rc = xsm_emit_pftrace_span(e, dir, 0, e->run->nranks, fd, 0, &bytes, err, errlen);
    xsm_progress_end();
    if (close(fd) != 0 && !rc)
        rc = xsm_err_set(err, errlen, "xsmerge: %s: write failed: %s", path, strerror(errno));
    return rc;
}
