/* io/reader.c — rank files and journal recovery into xsprof_rank_data.
 * Nothing in a file is trusted: every attribute and dataset is checked for
 * class, member names and types and rank before it is read, and row
 * references between tables are checked after, so consumers can index
 * without further checks. HDF5 errors never print: each failure becomes one
 * line in `err` naming the file and the problem. */
#include "io/reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hdf5.h>

#include "core/record.h"
#include "io/h5schema.h"
#include "io/journal_read.h"

typedef struct rd_ctx {
    const char *path;
    char *err;
    size_t errlen;
    hid_t file;
    uint64_t file_size;
    xsprof_rank_data *d; /* where the event tables' sizes on disk go (rd_tab_open) */
} rd_ctx;

static xsprof_status rd_fail(rd_ctx *r, xsprof_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static xsprof_status rd_fail(rd_ctx *r, xsprof_status s, const char *fmt, ...)
{
    if (!r->err || !r->errlen || r->err[0])
        return s;
    int n = snprintf(r->err, r->errlen, "%s: ", r->path);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *p = r->err; *p; p++) /* one line, whatever the path holds */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return s;
}

static void *(*rd_alloc)(size_t bytes) = malloc;
static void (*rd_release)(void *p) = free;

void xsprof_rankfile_set_table_alloc(void *(*alloc)(size_t bytes), void (*release)(void *p))
{
    rd_alloc = alloc && release ? alloc : malloc;
    rd_release = alloc && release ? release : free;
}

void xsprof_rank_data_free(xsprof_rank_data *d)
{
    if (!d)
        return;
    if (d->strings)
        for (uint32_t i = 0; i < d->nstrings; i++)
            free(d->strings[i]);
    free(d->strings);
    rd_release(d->regions);
    rd_release(d->args);
    rd_release(d->instants);
    rd_release(d->counters);
    rd_release(d->mpi);
    rd_release(d->gpu);
    rd_release(d->mem);
    rd_release(d->clock);
    rd_release(d->threads);
    rd_release(d->comms);
    rd_release(d->comm_members);
    rd_release(d->topo);
    rd_release(d->meta);
    rd_release(d->callstacks);
    rd_release(d->frames);
    rd_release(d->modules);
    rd_release(d->samples);
    rd_release(d->alloc_stacks);
    memset(d, 0, sizeof *d);
}

const char *xsprof_rank_data_string(const xsprof_rank_data *d, uint32_t id)
{
    if (!d || id >= d->nstrings || !d->strings || !d->strings[id])
        return "?";
    return d->strings[id];
}

static xsprof_table_read_fn rd_table_reader;

_Static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t travels as int64_t");

void xsprof_rankfile_set_table_reader(xsprof_table_read_fn fn) { rd_table_reader = fn; }

/* ---- attributes ---------------------------------------------------------- */

static int rd_type_matches(hid_t got, hid_t want);

static xsprof_status rd_attr_open(rd_ctx *r, const char *name, H5T_class_t want, hid_t *a, hid_t *t)
{
    *a = *t = -1;
    htri_t exists = H5Aexists(r->file, name);
    if (exists <= 0)
        return rd_fail(r, XSPROF_ERR_FORMAT, "missing attribute %s", name);
    hid_t sp = -1;
    xsprof_status s = XSPROF_OK;
    if ((*a = H5Aopen(r->file, name, H5P_DEFAULT)) < 0 || (*t = H5Aget_type(*a)) < 0 ||
        (sp = H5Aget_space(*a)) < 0)
        s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot open attribute %s", name);
    else if (H5Tget_class(*t) != want || H5Sget_simple_extent_type(sp) != H5S_SCALAR)
        s = rd_fail(r, XSPROF_ERR_FORMAT, "attribute %s has the wrong type", name);
    if (sp >= 0)
        H5Sclose(sp);
    if (s != XSPROF_OK) {
        if (*t >= 0)
            H5Tclose(*t);
        if (*a >= 0)
            H5Aclose(*a);
        *a = *t = -1;
    }
    return s;
}

/* An integer attribute converted to `mem` (HDF5 checks the range). */
static xsprof_status rd_attr_int(rd_ctx *r, const char *name, hid_t mem, void *value)
{
    hid_t a, t;
    xsprof_status s = rd_attr_open(r, name, H5T_INTEGER, &a, &t);
    if (s != XSPROF_OK)
        return s;
    if (!rd_type_matches(t, mem))
        s = rd_fail(r, XSPROF_ERR_FORMAT, "attribute %s has the wrong type", name);
    else if (H5Aread(a, mem, value) < 0)
        s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot read attribute %s", name);
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

/* A fixed-length string attribute, cut to `len`. Variable-length strings
 * are refused (see xsprof_h5_string_type). */
static xsprof_status rd_attr_str(rd_ctx *r, const char *name, char *buf, size_t len)
{
    hid_t a, t, mem = -1;
    buf[0] = 0;
    xsprof_status s = rd_attr_open(r, name, H5T_STRING, &a, &t);
    if (s != XSPROF_OK)
        return s;
    size_t n = H5Tget_size(t);
    char *v = NULL;
    if (H5Tis_variable_str(t) != 0 || n == 0 || n > (1u << 20))
        s = rd_fail(r, XSPROF_ERR_FORMAT, "attribute %s is not a fixed-length string", name);
    else if (!(v = calloc(1, n + 1)))
        s = rd_fail(r, XSPROF_ERR_NOMEM, "out of memory reading attribute %s", name);
    else if ((mem = xsprof_h5_string_type(n)) < 0 || H5Aread(a, mem, v) < 0)
        s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot read attribute %s", name);
    else
        snprintf(buf, len, "%s", v);
    free(v);
    if (mem >= 0)
        H5Tclose(mem);
    H5Tclose(t);
    H5Aclose(a);
    return s;
}

static xsprof_status rd_attributes(rd_ctx *r, xsprof_rank_data *d)
{
    char format[64];
    xsprof_status s = rd_attr_str(r, "format", format, sizeof format);
    if (s != XSPROF_OK) {
        if (r->err && r->errlen)
            r->err[0] = 0;
        return rd_fail(r, XSPROF_ERR_FORMAT, "not an xsprof rank file (no format attribute)");
    }
    if (strcmp(format, XSPROF_FORMAT_NAME) != 0)
        return rd_fail(r, XSPROF_ERR_FORMAT, "not an xsprof rank file (format \"%s\")", format);
    int32_t version = 0, truncated = 0, recovered = 0;
    if ((s = rd_attr_int(r, "format_version", H5T_NATIVE_INT32, &version)))
        return s;
    if (version != XSPROF_FORMAT_VERSION)
        return rd_fail(r, XSPROF_ERR_VERSION, "format version %d, this reader reads version %d", (int)version,
                       XSPROF_FORMAT_VERSION);
    d->format_version = version;
    if ((s = rd_attr_int(r, "rank", H5T_NATIVE_INT32, &d->rank)) ||
        (s = rd_attr_int(r, "size", H5T_NATIVE_INT32, &d->size)) ||
        (s = rd_attr_int(r, "pid", H5T_NATIVE_INT64, &d->pid)) ||
        (s = rd_attr_int(r, "start_realtime_ns", H5T_NATIVE_INT64, &d->start_realtime_ns)) ||
        (s = rd_attr_int(r, "start_clock_ns", H5T_NATIVE_INT64, &d->start_clock_ns)) ||
        (s = rd_attr_int(r, "dropped", H5T_NATIVE_UINT64, &d->dropped)) ||
        (s = rd_attr_int(r, "anomalies", H5T_NATIVE_UINT64, &d->anomalies)) ||
        (s = rd_attr_int(r, "truncated", H5T_NATIVE_INT32, &truncated)) ||
        (s = rd_attr_int(r, "recovered", H5T_NATIVE_INT32, &recovered)) ||
        (s = rd_attr_str(r, "host", d->host, sizeof d->host)) ||
        (s = rd_attr_str(r, "job_id", d->job_id, sizeof d->job_id)) ||
        (s = rd_attr_str(r, "command", d->command, sizeof d->command)) ||
        (s = rd_attr_str(r, "clock_source", d->clock_source, sizeof d->clock_source)) ||
        (s = rd_attr_str(r, "xsprof_version", d->xsprof_version, sizeof d->xsprof_version)) ||
        (s = rd_attr_str(r, "mpi_version", d->mpi_version, sizeof d->mpi_version)) ||
        (s = rd_attr_str(r, "end_state", d->end_state, sizeof d->end_state)))
        return s;
    char units[16];
    if ((s = rd_attr_str(r, "clock_units", units, sizeof units)))
        return s;
    if (strcmp(units, "ns") != 0)
        return rd_fail(r, XSPROF_ERR_FORMAT, "clock_units \"%s\", expected \"ns\"", units);
    d->truncated = truncated != 0;
    d->recovered = recovered != 0;
    return XSPROF_OK;
}

/* ---- datasets ------------------------------------------------------------ */

/* Same class, size and sign (arrays: same dims and base) as the expected
 * member type. Byte order may differ (HDF5 converts it), but precision,
 * bit offset and float layout must be the plain ones: HDF5's converters
 * trust those fields and a damaged value makes them write out of bounds. */
static int rd_type_matches(hid_t got, hid_t want)
{
    H5T_class_t c = H5Tget_class(want);
    if (H5Tget_class(got) != c || H5Tget_size(got) != H5Tget_size(want))
        return 0;
    switch (c) {
    case H5T_INTEGER:
    case H5T_FLOAT: {
        H5T_order_t o = H5Tget_order(got);
        if ((o != H5T_ORDER_LE && o != H5T_ORDER_BE) || H5Tget_precision(got) != H5Tget_precision(want) ||
            H5Tget_offset(got) != 0)
            return 0;
        if (c == H5T_INTEGER)
            return H5Tget_sign(got) == H5Tget_sign(want);
        size_t g[5], w[5];
        if (H5Tget_fields(got, &g[0], &g[1], &g[2], &g[3], &g[4]) < 0 ||
            H5Tget_fields(want, &w[0], &w[1], &w[2], &w[3], &w[4]) < 0)
            return 0;
        return !memcmp(g, w, sizeof g) && H5Tget_ebias(got) == H5Tget_ebias(want);
    }
    case H5T_ARRAY: {
        hsize_t dg[4], dw[4];
        if (H5Tget_array_ndims(got) != 1 || H5Tget_array_ndims(want) != 1 || H5Tget_array_dims2(got, dg) != 1 ||
            H5Tget_array_dims2(want, dw) != 1 || dg[0] != dw[0])
            return 0;
        hid_t bg = H5Tget_super(got), bw = H5Tget_super(want);
        int ok = bg >= 0 && bw >= 0 && rd_type_matches(bg, bw);
        if (bg >= 0)
            H5Tclose(bg);
        if (bw >= 0)
            H5Tclose(bw);
        return ok;
    }
    default:
        return 0;
    }
}

static int rd_compound_matches(hid_t got, hid_t want, char *why, size_t whylen)
{
    int n = H5Tget_nmembers(want);
    if (H5Tget_class(got) != H5T_COMPOUND) {
        snprintf(why, whylen, "is not a compound table");
        return 0;
    }
    if (H5Tget_nmembers(got) != n) {
        snprintf(why, whylen, "has %d fields, expected %d", H5Tget_nmembers(got), n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        char *gn = H5Tget_member_name(got, (unsigned)i), *wn = H5Tget_member_name(want, (unsigned)i);
        hid_t gt = H5Tget_member_type(got, (unsigned)i), wt = H5Tget_member_type(want, (unsigned)i);
        int ok = gn && wn && strcmp(gn, wn) == 0;
        if (!ok)
            snprintf(why, whylen, "field %d is \"%s\", expected \"%s\"", i, gn ? gn : "?", wn ? wn : "?");
        else if (gt < 0 || wt < 0 || !rd_type_matches(gt, wt) ||
                 H5Tget_member_offset(got, (unsigned)i) + H5Tget_size(gt) > H5Tget_size(got)) {
            snprintf(why, whylen, "field %s has the wrong type", wn);
            ok = 0;
        }
        if (gn)
            H5free_memory(gn);
        if (wn)
            H5free_memory(wn);
        if (gt >= 0)
            H5Tclose(gt);
        if (wt >= 0)
            H5Tclose(wt);
        if (!ok)
            return 0;
    }
    return 1;
}

/* The strings table, read in blocks: its rows are as wide as the longest
 * string, so reading it whole could take far more memory than the strings.
 * One allocation per string, so that rank data is freed the same way
 * whatever its source (journal or file). */
static xsprof_status rd_strings(rd_ctx *r, hid_t ds, hid_t mem, hsize_t dim, size_t width, char ***out)
{
    const hsize_t block = 1024;
    char **own = calloc((size_t)dim, sizeof *own);
    char *buf = malloc((size_t)block * width);
    hid_t fs = H5Dget_space(ds);
    xsprof_status s = XSPROF_OK;
    if (!own || !buf || fs < 0)
        s = rd_fail(r, XSPROF_ERR_NOMEM, "out of memory reading %s", XSPROF_DS_STRINGS);
    for (hsize_t at = 0; s == XSPROF_OK && at < dim; at += block) {
        hsize_t n = dim - at < block ? dim - at : block;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        if (ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &n, NULL) < 0 ||
            H5Dread(ds, mem, ms, fs, H5P_DEFAULT, buf) < 0) {
            char h5[256];
            xsprof_h5_last_error(h5, sizeof h5);
            s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot read dataset %s (HDF5: %s)", XSPROF_DS_STRINGS,
                        h5[0] ? h5 : "error");
        }
        if (ms >= 0)
            H5Sclose(ms);
        for (hsize_t i = 0; s == XSPROF_OK && i < n; i++)
            if (!(own[at + i] = strndup(buf + i * width, width)))
                s = rd_fail(r, XSPROF_ERR_NOMEM, "out of memory reading %s", XSPROF_DS_STRINGS);
    }
    free(buf);
    if (fs >= 0)
        H5Sclose(fs);
    if (s != XSPROF_OK && own) {
        for (hsize_t i = 0; i < dim; i++)
            free(own[i]);
        free(own);
        own = NULL;
    }
    *out = own;
    return s;
}

/* One table, opened and checked: type, rank and a plausible row count. */
typedef struct rd_tab {
    hid_t ds, mem;
    size_t row;
    hsize_t dim;
} rd_tab;

static void rd_tab_close(rd_tab *t)
{
    if (t->mem >= 0)
        H5Tclose(t->mem);
    if (t->ds >= 0)
        H5Dclose(t->ds);
    t->ds = t->mem = -1;
}

static xsprof_status rd_tab_open(rd_ctx *r, enum xsprof_h5_ds which, rd_tab *t)
{
    const char *name = xsprof_h5_ds_path(which);
    t->ds = t->mem = -1;
    t->row = xsprof_h5_ds_row_size(which);
    t->dim = 0;
    htri_t exists = H5Lexists(r->file, name, H5P_DEFAULT) > 0 ? H5Oexists_by_name(r->file, name, H5P_DEFAULT) : 0;
    if (exists <= 0)
        return rd_fail(r, XSPROF_ERR_FORMAT, "missing dataset %s", name);
    hid_t ft = -1, sp = -1;
    xsprof_status s = XSPROF_OK;
    char why[256] = "";
    if ((t->ds = H5Dopen2(r->file, name, H5P_DEFAULT)) < 0 || (ft = H5Dget_type(t->ds)) < 0 ||
        (sp = H5Dget_space(t->ds)) < 0) {
        s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot open dataset %s", name);
        goto out;
    }
    if (which == XSPROF_H5_STRINGS) {
        /* Fixed-length strings of the width the file declares. */
        t->row = H5Tget_size(ft);
        if (H5Tget_class(ft) != H5T_STRING || H5Tis_variable_str(ft) != 0 || t->row == 0 || t->row > (1u << 20)) {
            s = rd_fail(r, XSPROF_ERR_FORMAT, "dataset %s is not a table of fixed-length strings", name);
            goto out;
        }
        t->mem = xsprof_h5_string_type(t->row);
    } else
        t->mem = xsprof_h5_ds_mem_type(which);
    if (t->mem < 0) {
        s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot open dataset %s", name);
        goto out;
    }
    if (H5Sget_simple_extent_ndims(sp) != 1) {
        s = rd_fail(r, XSPROF_ERR_FORMAT, "dataset %s is not one-dimensional", name);
        goto out;
    }
    int ok = 1;
    if (which == XSPROF_H5_STRINGS)
        ok = 1;
    else if (which == XSPROF_H5_COMM_MEMBERS || which == XSPROF_H5_FRAMES)
        ok = rd_type_matches(ft, t->mem);
    else
        ok = rd_compound_matches(ft, t->mem, why, sizeof why);
    if (!ok) {
        s = rd_fail(r, XSPROF_ERR_FORMAT, "dataset %s %s", name, why[0] ? why : "has the wrong type");
        goto out;
    }
    H5Sget_simple_extent_dims(sp, &t->dim, NULL);
    int slot = (int)which < XSPROF_IO_T_COUNT ? (int)which : which == XSPROF_H5_SAMPLES ? XSPROF_STORED_SAMPLES : -1;
    if (r->d && slot >= 0) {
        r->d->stored_rows[slot] = (uint64_t)t->dim;
        r->d->stored_bytes[slot] = (uint64_t)H5Dget_storage_size(t->ds); /* 0 also on error */
    }
    /* A damaged header may claim any number of rows, and HDF5 fills absent
     * chunks with zeros: refuse sizes that no compression could explain. */
    if (t->dim > SIZE_MAX / t->row || (uint64_t)t->dim * t->row > r->file_size * 4096u + (64u << 20))
        s = rd_fail(r, XSPROF_ERR_FORMAT, "dataset %s claims %llu rows, more than the file can hold", name,
                    (unsigned long long)t->dim);
out:
    if (sp >= 0)
        H5Sclose(sp);
    if (ft >= 0)
        H5Tclose(ft);
    if (s != XSPROF_OK)
        rd_tab_close(t);
    return s;
}

/* Transfer properties for reading `rows` rows of `row` bytes: HDF5
 * converts a compound type through two buffers of 1 MiB by default, which
 * it allocates and zeroes on every H5Dread; a small table needs its own
 * size. H5P_DEFAULT when the list cannot be made. */
static hid_t rd_dxpl(hsize_t rows, size_t row)
{
    size_t bytes = rows < ((size_t)1 << 20) / (row ? row : 1) ? (size_t)rows * row : (size_t)1 << 20;
    hid_t p = H5Pcreate(H5P_DATASET_XFER);
    if (p >= 0 && H5Pset_buffer(p, bytes < 4096 ? 4096 : bytes, NULL, NULL) < 0) {
        H5Pclose(p);
        p = -1;
    }
    if (p < 0)
        H5Eclear2(H5E_DEFAULT);
    return p < 0 ? H5P_DEFAULT : p;
}

/* Read a whole 1-D table into a fresh array (*rows, *n). */
static xsprof_status rd_table(rd_ctx *r, enum xsprof_h5_ds which, void **rows, size_t *n)
{
    const char *name = xsprof_h5_ds_path(which);
    *rows = NULL;
    *n = 0;
    rd_tab t;
    xsprof_status s = rd_tab_open(r, which, &t);
    if (s != XSPROF_OK || !t.dim)
        goto out;
    if (which == XSPROF_H5_STRINGS) {
        char **own = NULL;
        if ((s = rd_strings(r, t.ds, t.mem, t.dim, t.row, &own)) == XSPROF_OK) {
            *rows = own;
            *n = (size_t)t.dim;
        }
        goto out;
    }
    void *buf = rd_alloc((size_t)t.dim * t.row);
    if (!buf) {
        s = rd_fail(r, XSPROF_ERR_NOMEM, "cannot allocate %llu rows for %s", (unsigned long long)t.dim, name);
        goto out;
    }
    if (!rd_table_reader || rd_table_reader(t.ds, t.mem, t.row, t.dim, buf) != 0) {
        /* H5Dread leaves the padding of a row (xsprof_io_gpu's last 4
         * bytes) as it finds it: the same rows must be the same bytes */
        memset(buf, 0, (size_t)t.dim * t.row);
        hid_t dxpl = rd_dxpl(t.dim, t.row);
        herr_t e = H5Dread(t.ds, t.mem, H5S_ALL, H5S_ALL, dxpl, buf);
        char h5[256];
        if (e < 0) /* before the next HDF5 call clears the error stack */
            xsprof_h5_last_error(h5, sizeof h5);
        if (dxpl != H5P_DEFAULT)
            H5Pclose(dxpl);
        if (e < 0) {
            rd_release(buf);
            s = rd_fail(r, XSPROF_ERR_FORMAT, "cannot read dataset %s (HDF5: %s)", name, h5[0] ? h5 : "error");
            goto out;
        }
    }
    *rows = buf;
    *n = (size_t)t.dim;
out:
    rd_tab_close(&t);
    return s;
}

/* Row references between tables, checked once so consumers can index.
 * nregions and nargs count streamed rows too: only loaded rows are checked
 * here, streamed ones are the caller's. */
static xsprof_status rd_check_refs(rd_ctx *r, const xsprof_rank_data *d, uint64_t nregions, uint64_t nargs)
{
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *g = &d->regions[i];
        if (g->args < 0 ? g->nargs != 0 : (uint64_t)g->args > nargs || g->nargs > nargs - (uint64_t)g->args)
            return rd_fail(r, XSPROF_ERR_FORMAT, "region row %zu refers to args outside %s", i, XSPROF_DS_ARGS);
    }
    for (size_t i = 0; i < d->nargs; i++)
        if (d->args[i].region < 0 || (uint64_t)d->args[i].region >= nregions ||
            d->args[i].ndims > XSPROF_ARG_SHAPE_MAX)
            return rd_fail(r, XSPROF_ERR_FORMAT, "arg row %zu is inconsistent (region %lld, %u dims)", i,
                           (long long)d->args[i].region, d->args[i].ndims);
    for (size_t i = 0; i < d->ncomms; i++)
        if (d->comms[i].members > d->ncomm_members || d->comms[i].size > d->ncomm_members - d->comms[i].members)
            return rd_fail(r, XSPROF_ERR_FORMAT, "comm row %zu refers to members outside %s", i,
                           XSPROF_DS_COMM_MEMBERS);
    for (size_t i = 0; i < d->ncallstacks; i++) {
        const xsprof_io_callstack *c = &d->callstacks[i];
        if (!c->id || (i && c->id <= d->callstacks[i - 1].id) || !c->depth || c->depth > XSPROF_IO_STACK_MAX ||
            c->frames > d->nframes || c->depth > d->nframes - c->frames)
            return rd_fail(r, XSPROF_ERR_FORMAT, "call stack row %zu is inconsistent (id %u, depth %u, frames at %llu of %zu)",
                           i, c->id, c->depth, (unsigned long long)c->frames, d->nframes);
    }
    for (size_t i = 0; i < d->nmodules; i++) {
        const xsprof_io_module *m = &d->modules[i];
        if (!m->id || (i && m->id <= d->modules[i - 1].id) || m->lo >= m->hi || m->t_unload < m->t_load)
            return rd_fail(r, XSPROF_ERR_FORMAT, "module row %zu is inconsistent (id %u, addresses %#llx-%#llx)", i, m->id,
                           (unsigned long long)m->lo, (unsigned long long)m->hi);
    }
    if (d->nstrings > UINT32_MAX)
        return rd_fail(r, XSPROF_ERR_FORMAT, "too many strings");
    return XSPROF_OK;
}

/* Row of `id` in a table sorted by its uint32 id at byte `at` of each row. */
static const void *rd_find_id(const void *rows, size_t n, size_t size, size_t at, uint32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *row = (const char *)rows + mid * size;
        uint32_t v;
        memcpy(&v, row + at, sizeof v);
        if (v == id)
            return row;
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const xsprof_io_callstack *xsprof_rank_data_callstack(const xsprof_rank_data *d, uint32_t id)
{
    return rd_find_id(d->callstacks, d->ncallstacks, sizeof *d->callstacks, offsetof(xsprof_io_callstack, id), id);
}

const xsprof_io_module *xsprof_rank_data_module(const xsprof_rank_data *d, uint32_t id)
{
    return rd_find_id(d->modules, d->nmodules, sizeof *d->modules, offsetof(xsprof_io_module, id), id);
}

_Static_assert((int)XSPROF_H5_REGIONS == (int)XSPROF_IO_T_REGIONS && (int)XSPROF_H5_ARGS == (int)XSPROF_IO_T_ARGS &&
                   (int)XSPROF_H5_MPI == (int)XSPROF_IO_T_MPI && (int)XSPROF_H5_CLOCK == (int)XSPROF_IO_T_CLOCK &&
                   (int)XSPROF_H5_THREADS == (int)XSPROF_IO_T_COUNT,
               "the event tables are the first datasets, in enum xsprof_io_table order");

/* Every table in dataset order; the event tables whose bits are in
 * `stream` are only opened and checked, into tabs[t] (else left closed). */
static xsprof_status rd_load(rd_ctx *r, xsprof_rank_data *d, unsigned stream, rd_tab *tabs)
{
    void **rows[XSPROF_H5_STRINGS] = {
        (void **)&d->regions, (void **)&d->args,  (void **)&d->instants, (void **)&d->counters,
        (void **)&d->mpi,     (void **)&d->gpu,   (void **)&d->mem,      (void **)&d->clock,
        (void **)&d->threads, (void **)&d->comms, (void **)&d->comm_members, (void **)&d->topo,
        (void **)&d->meta,    (void **)&d->callstacks, (void **)&d->frames, (void **)&d->modules,
        (void **)&d->samples, (void **)&d->alloc_stacks};
    size_t *n[XSPROF_H5_STRINGS] = {&d->nregions, &d->nargs,  &d->ninstants,     &d->ncounters, &d->nmpi,
                                    &d->ngpu,     &d->nmem,   &d->nclock,        &d->nthreads,  &d->ncomms,
                                    &d->ncomm_members, &d->ntopo, &d->nmeta, &d->ncallstacks, &d->nframes,
                                    &d->nmodules, &d->nsamples, &d->nalloc_stacks};
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        tabs[t] = (rd_tab){.ds = -1, .mem = -1};
    _Static_assert(XSPROF_IO_T_COUNT == XSPROF_STORED_SAMPLES, "stored_rows: the event tables, then samples");
    r->d = d;
    xsprof_status s = rd_attributes(r, d);
    for (int i = 0; s == XSPROF_OK && i < XSPROF_H5_STRINGS; i++) {
        if ((i == XSPROF_H5_SAMPLES || i == XSPROF_H5_ALLOC_STACKS) &&
            H5Lexists(r->file, xsprof_h5_ds_path((enum xsprof_h5_ds)i), H5P_DEFAULT) <= 0) {
            H5Eclear2(H5E_DEFAULT); /* a file from before sampling or allocation stacks: none */
            continue;
        }
        s = i < XSPROF_IO_T_COUNT && (stream >> i & 1u) ? rd_tab_open(r, (enum xsprof_h5_ds)i, &tabs[i])
                                                         : rd_table(r, (enum xsprof_h5_ds)i, rows[i], n[i]);
    }
    size_t nstrings = 0;
    if (s == XSPROF_OK)
        s = rd_table(r, XSPROF_H5_STRINGS, (void **)&d->strings, &nstrings);
    if (s != XSPROF_OK)
        return s;
    if (nstrings > UINT32_MAX)
        return rd_fail(r, XSPROF_ERR_FORMAT, "too many strings");
    d->nstrings = (uint32_t)nstrings;
    return rd_check_refs(r, d, d->nregions + tabs[XSPROF_IO_T_REGIONS].dim, d->nargs + tabs[XSPROF_IO_T_ARGS].dim);
}

/* HDF5 never prints: its messages end up in err. The error stack and its
 * printing function are per thread (thread-safe HDF5). */
typedef struct rd_quiet {
    H5E_auto2_t fn;
    void *data;
} rd_quiet;

static rd_quiet rd_quiet_begin(void)
{
    rd_quiet q = {NULL, NULL};
    H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    H5Eclear2(H5E_DEFAULT);
    return q;
}

static void rd_quiet_end(rd_quiet q)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, q.fn, q.data);
}

struct xsprof_rankfile {
    char *path;
    hid_t file;
    unsigned stream;
    rd_tab tab[XSPROF_IO_T_COUNT];
    size_t chunk[XSPROF_IO_T_COUNT];
    int detached;                        /* file closed: raw[] says where chunks are */
    xsprof_raw_table raw[XSPROF_IO_T_COUNT];
};

static xsprof_raw_prepare_fn rd_raw_prepare;
static xsprof_raw_read_fn rd_raw_read;
/* HDF5 1.10 finds a chunk's address by walking the chunk index from its
 * start (H5Dget_chunk_info_by_coord), so locating n chunks costs n^2/2
 * index steps (~0.5 us each): 4070 chunks took 2.6 s per table. Reading a
 * chunk by its coordinates (H5Dread_chunk) looks it up directly, so a
 * table of more chunks stays attached and is read that way. */
static size_t rd_detach_max_chunks = 512; /* <= ~70 ms to locate a table; above, ~800 KB to keep open */

void xsprof_rankfile_set_detach_limit(size_t max_chunks) { rd_detach_max_chunks = max_chunks; }
static void (*rd_raw_free)(void *);

void xsprof_rankfile_set_raw_reader(xsprof_raw_prepare_fn prepare, xsprof_raw_read_fn read, void (*free_plan)(void *))
{
    rd_raw_prepare = prepare;
    rd_raw_read = read;
    rd_raw_free = free_plan;
}

int xsprof_rankfile_detached(const xsprof_rankfile *rf) { return rf && rf->detached; }

static void rd_raw_clear(xsprof_rankfile *f)
{
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
        if (f->raw[t].plan && rd_raw_free)
            rd_raw_free(f->raw[t].plan);
        free((void *)f->raw[t].addr);
        free((void *)f->raw[t].size);
        memset(&f->raw[t], 0, sizeof f->raw[t]);
    }
}

/* Where every stored chunk of f's streamed tables is, each with a plan to
 * decode it; then the datasets and the file are closed. Any table that
 * cannot be read so (its pipeline, a chunk not stored or filtered
 * otherwise) leaves the file open, as before. */
static void rd_detach(xsprof_rankfile *f)
{
    if (!rd_raw_prepare || !rd_raw_read)
        return;
    int ok = 1;
    for (int t = 0; t < XSPROF_IO_T_COUNT && ok; t++) {
        if (!(f->stream >> t & 1u) || f->tab[t].ds < 0 || !f->tab[t].dim)
            continue; /* nothing to read */
        xsprof_raw_table *r = &f->raw[t];
        r->path = f->path;
        r->rows = (uint64_t)f->tab[t].dim;
        r->chunk_rows = f->chunk[t] ? f->chunk[t] : 1;
        uint64_t n = (r->rows + r->chunk_rows - 1) / r->chunk_rows;
        if (n > rd_detach_max_chunks) {
            ok = 0;
            break;
        }
        r->addr = malloc((n + 1) * sizeof *r->addr);
        r->size = malloc((n + 1) * sizeof *r->size);
        ok = r->addr && r->size && (r->plan = rd_raw_prepare(f->tab[t].ds, f->tab[t].mem, f->tab[t].row)) != NULL;
        for (uint64_t k = 0; ok && k < n; k++) {
            hsize_t off = k * r->chunk_rows, size = 0;
            haddr_t addr = HADDR_UNDEF;
            unsigned mask = 1;
            ok = H5Dget_chunk_info_by_coord(f->tab[t].ds, &off, &mask, &addr, &size) >= 0 && mask == 0 &&
                 addr != HADDR_UNDEF && size > 0 && size <= UINT32_MAX;
            if (ok) {
                ((uint64_t *)r->addr)[k] = (uint64_t)addr;
                ((uint32_t *)r->size)[k] = (uint32_t)size;
            }
        }
    }
    if (!ok) {
        rd_raw_clear(f);
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        if (f->stream >> t & 1u)
            rd_tab_close(&f->tab[t]); /* dim stays */
    H5Fclose(f->file);
    f->file = -1;
    f->detached = 1;
}

static xsprof_rows_read_fn rd_rows_reader;

void xsprof_rankfile_set_rows_reader(xsprof_rows_read_fn fn) { rd_rows_reader = fn; }

/* Rows per stored chunk; a table that is not chunked is read in the
 * writer's blocks. */
static size_t rd_chunk_rows(hid_t ds, enum xsprof_io_table t)
{
    hid_t dcpl = H5Dget_create_plist(ds);
    hsize_t dim = 0;
    int chunked = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 1, &dim) == 1 && dim >= 1 &&
                  dim <= SIZE_MAX;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return chunked ? (size_t)dim : xsprof_io_table_block_rows(t);
}

static void rd_rankfile_free(xsprof_rankfile *f)
{
    if (!f)
        return;
    for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
        rd_tab_close(&f->tab[t]);
    if (f->file >= 0)
        H5Fclose(f->file);
    rd_raw_clear(f);
    free(f->path);
    free(f);
}

/* xsprof_rankfile_load when rf is NULL (stream must then be 0), else
 * xsprof_rankfile_open. */
static xsprof_status rd_open(const char *path, unsigned stream, xsprof_rank_data *out, xsprof_rankfile **rf, char *err,
                             size_t errlen)
{
    rd_ctx r = {.path = path ? path : "(null)", .err = err, .errlen = errlen, .file = -1};
    if (err && errlen)
        err[0] = 0;
    if (rf)
        *rf = NULL;
    if (!out)
        return rd_fail(&r, XSPROF_ERR_INVALID, "no output given");
    memset(out, 0, sizeof *out);
    if (!path)
        return rd_fail(&r, XSPROF_ERR_INVALID, "no path given");
    if (stream >> XSPROF_IO_T_COUNT)
        return rd_fail(&r, XSPROF_ERR_INVALID, "stream mask 0x%x names no event table", stream);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rd_fail(&r, XSPROF_ERR_IO, "cannot open: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return rd_fail(&r, XSPROF_ERR_FORMAT, "not a regular file");
    r.file_size = (uint64_t)sb.st_size;
    xsprof_rankfile *f = NULL;
    if (rf && (!(f = calloc(1, sizeof *f)) || !(f->path = strdup(path)))) {
        free(f);
        return rd_fail(&r, XSPROF_ERR_NOMEM, "out of memory");
    }

    rd_quiet q = rd_quiet_begin();
    rd_tab tabs[XSPROF_IO_T_COUNT];
    xsprof_status s = XSPROF_OK;
    if (H5Fis_hdf5(path) <= 0) {
        s = rd_fail(&r, XSPROF_ERR_FORMAT, "not an HDF5 file");
    } else {
        r.file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (r.file < 0) {
            char h5[256];
            xsprof_h5_last_error(h5, sizeof h5);
            s = rd_fail(&r, XSPROF_ERR_FORMAT, "damaged HDF5 file (HDF5: %s)", h5[0] ? h5 : "cannot open");
        } else {
            s = rd_load(&r, out, stream, tabs);
            if (s == XSPROF_OK && f) {
                f->file = r.file;
                f->stream = stream;
                for (int t = 0; t < XSPROF_IO_T_COUNT; t++) {
                    f->tab[t] = tabs[t];
                    f->chunk[t] = tabs[t].ds >= 0 ? rd_chunk_rows(tabs[t].ds, (enum xsprof_io_table)t) : 1;
                }
                r.file = -1;
                rd_detach(f);
            }
            for (int t = 0; t < XSPROF_IO_T_COUNT && r.file >= 0; t++)
                rd_tab_close(&tabs[t]);
            if (r.file >= 0)
                H5Fclose(r.file);
        }
    }
    if (s != XSPROF_OK && f) {
        f->file = -1;
        for (int t = 0; t < XSPROF_IO_T_COUNT; t++)
            f->tab[t] = (rd_tab){.ds = -1, .mem = -1};
        rd_rankfile_free(f);
        f = NULL;
    }
    rd_quiet_end(q);
    if (s != XSPROF_OK) {
        xsprof_rank_data_free(out);
        return s;
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    if (rf)
        *rf = f;
    return XSPROF_OK;
}

xsprof_status xsprof_rankfile_load(const char *path, xsprof_rank_data *out, char *err, size_t errlen)
{
    return rd_open(path, 0, out, NULL, err, errlen);
}

xsprof_status xsprof_rankfile_open(const char *path, unsigned stream, xsprof_rank_data *out, xsprof_rankfile **rf,
                                   char *err, size_t errlen)
{
    if (!rf) {
        rd_ctx r = {.path = path ? path : "(null)", .err = err, .errlen = errlen, .file = -1};
        if (err && errlen)
            err[0] = 0;
        if (out)
            memset(out, 0, sizeof *out);
        return rd_fail(&r, XSPROF_ERR_INVALID, "no handle given");
    }
    return rd_open(path, stream, out, rf, err, errlen);
}

static int rd_streamed(const xsprof_rankfile *rf, enum xsprof_io_table t)
{
    return rf && (unsigned)t < XSPROF_IO_T_COUNT && (rf->stream >> t & 1u);
}

uint64_t xsprof_rankfile_table_rows(const xsprof_rankfile *rf, enum xsprof_io_table t)
{
    return rd_streamed(rf, t) ? (uint64_t)rf->tab[t].dim : 0;
}

size_t xsprof_rankfile_table_chunk(const xsprof_rankfile *rf, enum xsprof_io_table t)
{
    return rd_streamed(rf, t) ? rf->chunk[t] : 1;
}

xsprof_status xsprof_rankfile_read(xsprof_rankfile *rf, enum xsprof_io_table t, uint64_t first, size_t n, void *buf,
                                   char *err, size_t errlen)
{
    rd_ctx r = {.path = rf ? rf->path : "(null)", .err = err, .errlen = errlen, .file = rf ? rf->file : -1};
    if (err && errlen)
        err[0] = 0;
    if (!rd_streamed(rf, t))
        return rd_fail(&r, XSPROF_ERR_INVALID, "event table %d is not streamed", (int)t);
    const rd_tab *tab = &rf->tab[t];
    const char *name = xsprof_h5_ds_path((enum xsprof_h5_ds)t);
    if (first > tab->dim || n > tab->dim - first)
        return rd_fail(&r, XSPROF_ERR_FORMAT, "cannot read %zu rows from row %llu of dataset %s: it has %llu rows", n,
                       (unsigned long long)first, name, (unsigned long long)tab->dim);
    if (!n)
        return XSPROF_OK;
    if (!buf)
        return rd_fail(&r, XSPROF_ERR_INVALID, "no buffer given for dataset %s", name);
    if (rf->detached) /* no HDF5 call: safe beside other threads' reads */
        return rd_raw_read(&rf->raw[t], first, n, buf) == 0
                   ? XSPROF_OK
                   : rd_fail(&r, XSPROF_ERR_FORMAT, "cannot read %zu rows from row %llu of dataset %s: damaged chunk", n,
                             (unsigned long long)first, name);
    rd_quiet q = rd_quiet_begin();
    xsprof_status s = XSPROF_OK;
    if (!rd_rows_reader || rd_rows_reader(tab->ds, tab->mem, tab->row, first, n, buf) != 0) {
        hsize_t off = first, count = n;
        memset(buf, 0, n * tab->row); /* padding, as in rd_table */
        hid_t fs = H5Dget_space(tab->ds), ms = H5Screate_simple(1, &count, NULL);
        if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &count, NULL) < 0 ||
            H5Dread(tab->ds, tab->mem, ms, fs, H5P_DEFAULT, buf) < 0) {
            char h5[256];
            xsprof_h5_last_error(h5, sizeof h5);
            s = rd_fail(&r, XSPROF_ERR_FORMAT, "cannot read %zu rows from row %llu of dataset %s (HDF5: %s)", n,
                        (unsigned long long)first, name, h5[0] ? h5 : "error");
        }
        if (ms >= 0)
            H5Sclose(ms);
        if (fs >= 0)
            H5Sclose(fs);
    }
    rd_quiet_end(q);
    return s;
}

void xsprof_rankfile_close(xsprof_rankfile *rf)
{
    if (!rf)
        return;
    rd_quiet q = rd_quiet_begin();
    rd_rankfile_free(rf);
    rd_quiet_end(q);
}

/* ---- journal recovery ---------------------------------------------------- */

typedef struct jl_ctx {
    xsprof_rank_data *d;
    size_t cap[XSPROF_IO_T_COUNT];
} jl_ctx;

static xsprof_status jl_rows(void *user, enum xsprof_io_table t, const void *rows, size_t n)
{
    jl_ctx *c = user;
    xsprof_rank_data *d = c->d;
    void **arr;
    size_t *len;
    switch (t) {
    case XSPROF_IO_T_REGIONS: arr = (void **)&d->regions; len = &d->nregions; break;
    case XSPROF_IO_T_ARGS: arr = (void **)&d->args; len = &d->nargs; break;
    case XSPROF_IO_T_INSTANTS: arr = (void **)&d->instants; len = &d->ninstants; break;
    case XSPROF_IO_T_COUNTERS: arr = (void **)&d->counters; len = &d->ncounters; break;
    case XSPROF_IO_T_MPI: arr = (void **)&d->mpi; len = &d->nmpi; break;
    case XSPROF_IO_T_GPU: arr = (void **)&d->gpu; len = &d->ngpu; break;
    case XSPROF_IO_T_MEM: arr = (void **)&d->mem; len = &d->nmem; break;
    case XSPROF_IO_T_CLOCK: arr = (void **)&d->clock; len = &d->nclock; break;
    default: return XSPROF_ERR_INVALID;
    }
    size_t row = xsprof_io_table_row_size(t);
    if (*len + n > c->cap[t]) {
        size_t cap = c->cap[t] ? c->cap[t] : 1024;
        while (cap < *len + n)
            cap *= 2;
        if (cap > SIZE_MAX / row)
            return XSPROF_ERR_NOMEM;
        void *p = realloc(*arr, cap * row);
        if (!p)
            return XSPROF_ERR_NOMEM;
        *arr = p;
        c->cap[t] = cap;
    }
    memcpy((char *)*arr + *len * row, rows, n * row);
    *len += n;
    return XSPROF_OK;
}

xsprof_status xsprof_journal_load(const char *path, xsprof_rank_data *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out) {
        if (err && errlen)
            snprintf(err, errlen, "%s: no output given", path ? path : "(null)");
        return XSPROF_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    jl_ctx c = {.d = out};
    xsprof_journal_stats st;
    xsprof_status s = xsprof_journal_parse(path, out, &st, jl_rows, &c, err, errlen);
    if (s != XSPROF_OK) {
        xsprof_rank_data_free(out);
        return s;
    }
    snprintf(out->path, sizeof out->path, "%s", path);
    out->format_version = XSPROF_FORMAT_VERSION;
    xsprof_journal_end_state(&st, out->end_state, sizeof out->end_state);
    out->recovered = 1;
    out->truncated = strcmp(out->end_state, "finalized") != 0 || st.damaged > 0;
    return XSPROF_OK;
}
