/* merge/emit/pfsamples.c — a rank's CPU samples for trace.pftrace
 * (pfsamples.h). Field numbers are Perfetto's published ones
 * (protos/perfetto/trace/interned_data/interned_data.proto,
 * protos/perfetto/trace/profiling/profile_common.proto). */
#include "merge/emit/pfsamples.h"
#include "merge/emit/pb.h"
#include "merge/align/align.h"
#include "merge/read/read.h"
#include "merge/symbols/symbols.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    /* InternedData */
    PB_ID_FUNCTION_NAMES = 5,
    PB_ID_FRAMES = 6,
    PB_ID_CALLSTACKS = 7,
    PB_ID_BUILD_IDS = 16,
    PB_ID_MAPPING_PATHS = 17,
    PB_ID_SOURCE_PATHS = 18,
    PB_ID_MAPPINGS = 19,
    /* InternedString */
    PB_IS_IID = 1,
    PB_IS_STR = 2,
    /* Mapping */
    PB_MAP_IID = 1,
    PB_MAP_BUILD_ID = 2,
    PB_MAP_START = 4,
    PB_MAP_END = 5,
    PB_MAP_PATH_IDS = 7,
    /* Frame */
    PB_FR_IID = 1,
    PB_FR_FUNCTION = 2,
    PB_FR_MAPPING = 3,
    PB_FR_REL_PC = 4,
    PB_FR_SOURCE = 5,
    PB_FR_LINE = 6,
    /* Callstack */
    PB_CS_IID = 1,
    PB_CS_FRAMES = 2
};

/* One resolved address: its frames are iids first .. first + n - 1, the
 * outermost function of its inlined chain first. */
typedef struct xsm_pfs_addr {
    uint64_t key; /* (address << 1 | ret) + 1 */
    uint64_t first;
    uint32_t n;
} xsm_pfs_addr;

struct xsm_pfs {
    const xsm_emit *e;
    int32_t r;
    const xsprof_rank_data *d;
    xsm_sample_at *ord;       /* the samples in time order */
    size_t n, next;
    size_t cur;               /* callstack row of the sample just taken */
    unsigned char *cs_sent;   /* per callstack row: interned on the sequence */
    unsigned char *mod_sent;  /* per module row: its Mapping is */
    xsm_ktab addrs;           /* xsm_pfs_addr */
    xsm_strtab funcs, files;  /* iid = id + 1; the first *_sent are on the sequence */
    uint32_t funcs_sent, files_sent;
    uint64_t nframes;         /* frame iids given */
    uint64_t *ids;            /* the callstack being interned: its frame iids */
    size_t nids, capids;
    xsm_symbols **sym;        /* the writer's */
};

xsm_pfs *xsm_pfs_open(const xsm_emit *e, size_t r, xsm_symbols **sym)
{
    const xsm_run *run = e->run;
    const xsprof_rank_data *d = &run->ranks[r].d;
    xsm_pfs *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->e = e;
    s->r = (int32_t)r;
    s->d = d;
    s->sym = sym;
    s->addrs.size = sizeof(xsm_pfs_addr);
    xsm_strtab_init(&s->funcs);
    xsm_strtab_init(&s->files);
    s->ord = malloc((d->nsamples + 1) * sizeof *s->ord);
    s->cs_sent = calloc(d->ncallstacks + 1, 1);
    s->mod_sent = calloc(d->nmodules + 1, 1);
    if (!s->ord || !s->cs_sent || !s->mod_sent || d->nsamples > UINT32_MAX) {
        xsm_pfs_close(s);
        return NULL;
    }
    s->n = xsm_align_samples(run, r, s->ord);
    return s;
}

void xsm_pfs_close(xsm_pfs *s)
{
    if (!s)
        return;
    free(s->ord);
    free(s->cs_sent);
    free(s->mod_sent);
    free(s->ids);
    xsm_ktab_free(&s->addrs);
    xsm_strtab_free(&s->funcs);
    xsm_strtab_free(&s->files);
    free(s);
}

int64_t xsm_pfs_time(const xsm_pfs *s) { return s->next < s->n ? s->ord[s->next].t : INT64_MAX; }

int xsm_pfs_take(xsm_pfs *s, size_t *thread, uint64_t *callstack)
{
    const xsprof_io_sample *x = &s->d->samples[s->ord[s->next++].i];
    const xsprof_io_callstack *st = x->stack ? xsprof_rank_data_callstack(s->d, x->stack) : NULL;
    *thread = xsm_emit_sample_thread(s->e, s->r, x->os_tid);
    *callstack = 0;
    if (!st || !st->depth || st->frames + st->depth > s->d->nframes)
        return 0; /* unknown: a sample without a stack */
    s->cur = (size_t)(st - s->d->callstacks);
    *callstack = s->cur + 1;
    return !s->cs_sent[s->cur];
}

/* An InternedString entry. */
static void xsm_pfs_string(xsm_out *o, uint32_t field, uint64_t iid, const void *str, size_t n)
{
    size_t m = xsm_pb_begin(o, field);
    xsm_pb_uint(o, PB_IS_IID, iid);
    xsm_pb_bytes(o, PB_IS_STR, str, n);
    xsm_pb_end(o, m);
}

/* The iid of a string of tab, writing its entry when it is new there. */
static uint64_t xsm_pfs_name(xsm_out *o, uint32_t field, xsm_strtab *tab, uint32_t *sent, const char *str)
{
    uint32_t id = xsm_strtab_intern(tab, str);
    if (id == UINT32_MAX)
        return 0;
    if (id >= *sent) { /* ids are dense in first-seen order: the new one is the next */
        xsm_pfs_string(o, field, (uint64_t)id + 1, str, strlen(str));
        *sent = id + 1;
    }
    return (uint64_t)id + 1;
}

/* Module row mi as a Mapping (iid mi + 1, its path and build-id interned
 * under the same iid): its process addresses; frames give ELF addresses
 * (rel_pc), which is what its symbols use. */
static void xsm_pfs_mapping(xsm_pfs *s, xsm_out *o, size_t mi)
{
    const xsprof_io_module *m = &s->d->modules[mi];
    const char *path = xsprof_rank_data_string(s->d, m->path), *hex = xsprof_rank_data_string(s->d, m->build_id);
    uint64_t iid = mi + 1;
    xsm_pfs_string(o, PB_ID_MAPPING_PATHS, iid, path, strlen(path));
    unsigned char raw[64];
    size_t nraw = 0;
    for (; hex[2 * nraw] && hex[2 * nraw + 1] && nraw < sizeof raw; nraw++) {
        unsigned v;
        if (sscanf(hex + 2 * nraw, "%2x", &v) != 1)
            break;
        raw[nraw] = (unsigned char)v;
    }
    if (nraw) /* Perfetto takes build-ids as their bytes */
        xsm_pfs_string(o, PB_ID_BUILD_IDS, iid, raw, nraw);
    size_t mp = xsm_pb_begin(o, PB_ID_MAPPINGS);
    xsm_pb_uint(o, PB_MAP_IID, iid);
    if (nraw)
        xsm_pb_uint(o, PB_MAP_BUILD_ID, iid);
    xsm_pb_uint(o, PB_MAP_START, m->lo);
    xsm_pb_uint(o, PB_MAP_END, m->hi);
    xsm_pb_uint(o, PB_MAP_PATH_IDS, iid);
    xsm_pb_end(o, mp);
    s->mod_sent[mi] = 1;
}

/* Process address a (ret: a return address) as frames, written when new;
 * *first and *n get their iids. 0, or -1 out of memory. */
static int xsm_pfs_frames(xsm_pfs *s, xsm_out *o, uint64_t a, int ret, uint64_t *first, uint32_t *n)
{
    uint64_t key = ((a << 1) | (uint64_t)ret) + 1;
    const xsm_pfs_addr *x = xsm_ktab_find(&s->addrs, key);
    if (x) {
        *first = x->first;
        *n = x->n;
        return 0;
    }
    if (!*s->sym && !(*s->sym = xsm_symbols_open()))
        return -1;
    const xsprof_io_module *m;
    const xsm_loc *loc = xsm_read_locate(*s->sym, s->d, a, ret, &m);
    if (m && !loc)
        return -1;
    size_t mi = m ? (size_t)(m - s->d->modules) : 0;
    if (m && !s->mod_sent[mi])
        xsm_pfs_mapping(s, o, mi);
    char hex[32];
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)a);
    int nf = loc ? loc->nframes : 1;
    *first = s->nframes + 1;
    *n = (uint32_t)nf;
    for (int j = nf - 1; j >= 0; j--) { /* outermost first, as callstacks list them */
        const xsm_frame *f = loc ? &loc->frames[j] : NULL;
        uint64_t fn = xsm_pfs_name(o, PB_ID_FUNCTION_NAMES, &s->funcs, &s->funcs_sent, f ? f->function : hex);
        uint64_t fl = f && f->file ? xsm_pfs_name(o, PB_ID_SOURCE_PATHS, &s->files, &s->files_sent, f->file) : 0;
        if (!fn || (f && f->file && !fl))
            return -1;
        size_t fr = xsm_pb_begin(o, PB_ID_FRAMES);
        xsm_pb_uint(o, PB_FR_IID, ++s->nframes);
        xsm_pb_uint(o, PB_FR_FUNCTION, fn);
        if (m) {
            xsm_pb_uint(o, PB_FR_MAPPING, mi + 1);
            xsm_pb_uint(o, PB_FR_REL_PC, a - m->bias);
        }
        if (fl)
            xsm_pb_uint(o, PB_FR_SOURCE, fl);
        if (f && f->line > 0)
            xsm_pb_uint(o, PB_FR_LINE, (uint64_t)f->line);
        xsm_pb_end(o, fr);
    }
    xsm_pfs_addr *nx = xsm_ktab_get(&s->addrs, key);
    if (!nx)
        return -1;
    nx->first = *first;
    nx->n = *n;
    return 0;
}

int xsm_pfs_intern(xsm_pfs *s, xsm_out *o)
{
    const xsprof_io_callstack *st = &s->d->callstacks[s->cur];
    s->nids = 0;
    for (uint32_t f = st->depth; f-- > 0;) { /* Perfetto lists the outermost frame first */
        uint64_t first;
        uint32_t n;
        if (xsm_pfs_frames(s, o, s->d->frames[st->frames + f], f > 0, &first, &n) ||
            xsm_reserve((void **)&s->ids, &s->capids, s->nids + n, sizeof *s->ids))
            return -1;
        for (uint32_t k = 0; k < n; k++)
            s->ids[s->nids++] = first + k;
    }
    size_t cs = xsm_pb_begin(o, PB_ID_CALLSTACKS);
    xsm_pb_uint(o, PB_CS_IID, s->cur + 1);
    for (size_t k = 0; k < s->nids; k++)
        xsm_pb_uint(o, PB_CS_FRAMES, s->ids[k]); /* not packed: proto2's repeated uint64 */
    xsm_pb_end(o, cs);
    s->cs_sent[s->cur] = 1;
    return 0;
}
