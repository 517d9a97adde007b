/* merge/emit/stream_h5src.c — merged.h5 in streaming mode: emit/h5.c writes
 * the same file from this reader instead of the model (xsm_h5src_ops).
 *
 * Event tables are read again a chunk at a time, in file order, their times
 * mapped as every other pass maps them (interpolation, the logical clock's
 * knots, t = 0). Messages: pass 1 spilled each matched message when its two
 * ends met; once every message id is known (the sent bits) they are placed
 * by id into one file, which the writer then reads in id order. Isend
 * completions are spilled apart (a send often completes before its receive
 * is seen) and written into their message's field. Collectives are kept by
 * pass 1 (members' rows and times) and sorted by (comm, seq) as
 * merge/match orders them. */
#include "merge/stream/internal.h"
#include "merge/pipeline.h"
#include "merge/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { XSM_PLACE_RUN = 256 }; /* messages written in one pwrite when their ids follow each other */

typedef struct xsm_place_buf { /* per sending rank: a run of consecutive ids */
    uint64_t first;
    size_t n;
    xsm_h5_msgrec *rec;
} xsm_place_buf;

static int xsm_place_flush(int fd, xsm_place_buf *b)
{
    size_t len = b->n * sizeof *b->rec;
    off_t at = (off_t)(b->first * sizeof *b->rec);
    const char *p = (const char *)b->rec;
    while (len) {
        ssize_t w = pwrite(fd, p, len, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
        at += w;
    }
    b->n = 0;
    return 0;
}

int xsm_h5msgs_place(xsm_stream *s, char *err, size_t errlen)
{
    size_t n = s->run->nranks;
    char name[64];
    snprintf(name, sizeof name, "stream-h5final-%d.bin", s->proc);
    xsm_path(s->h5msgs_path, sizeof s->h5msgs_path, s->tmpdir, name);
    if (fflush(s->msg_spill) != 0 || fflush(s->scompl) != 0 || fseek(s->msg_spill, 0, SEEK_SET) != 0 ||
        fseek(s->scompl, 0, SEEK_SET) != 0)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                           s->msg_path, strerror(errno));
    if ((s->h5msgs_fd = open(s->h5msgs_path, O_RDWR | O_CREAT | O_TRUNC, 0600)) < 0)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                           s->h5msgs_path, strerror(errno));
    xsm_place_buf *b = calloc(n + 1, sizeof *b);
    xsm_h5_msgrec *in = malloc(1024 * sizeof *in);
    int rc = !b || !in ? xsm_err_set(err, errlen, "xsmerge: out of memory writing merged.h5") : 0;
    uint64_t seen = 0;
    size_t got;
    while (!rc && (got = fread(in, sizeof *in, 1024, s->msg_spill)) > 0) {
        for (size_t i = 0; i < got && !rc; i++) {
            const xsm_h5_msgrec *x = &in[i];
            xsm_place_buf *p = &b[x->m.src];
            uint64_t id = xsm_stream_msg_index(&s->r[x->m.src], x->m.send_row);
            if (!p->rec && !(p->rec = malloc(XSM_PLACE_RUN * sizeof *p->rec))) {
                rc = xsm_err_set(err, errlen, "xsmerge: out of memory writing merged.h5");
                break;
            }
            if (p->n && (id != p->first + p->n || p->n == XSM_PLACE_RUN) && xsm_place_flush(s->h5msgs_fd, p)) {
                rc = xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                                 s->h5msgs_path, strerror(errno));
                break; /* the run stays full: no room for this one */
            }
            if (!p->n)
                p->first = id;
            p->rec[p->n++] = *x;
            seen++;
        }
    }
    for (size_t r = 0; b && r < n && !rc; r++)
        if (b[r].n && xsm_place_flush(s->h5msgs_fd, &b[r]))
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                             s->h5msgs_path, strerror(errno));
    if (!rc && (ferror(s->msg_spill) || seen != s->nmsgs))
        rc = xsm_err_set(err, errlen, "xsmerge: %s: %llu messages spilled, %llu matched", s->msg_path,
                         (unsigned long long)seen, (unsigned long long)s->nmsgs);
    /* the Isend completions of matched sends, in pass 1's order: the last one wins */
    uint32_t sc[3];
    while (!rc && fread(sc, sizeof sc, 1, s->scompl) == 1) {
        if (sc[0] >= n || !s->r[sc[0]].sent || !xsm_bits_get(s->r[sc[0]].sent, sc[1]))
            continue;
        int64_t row = sc[2];
        off_t at = (off_t)(xsm_stream_msg_index(&s->r[sc[0]], sc[1]) * sizeof(xsm_h5_msgrec) +
                           offsetof(xsm_h5_msgrec, m.send_completion_row));
        if (pwrite(s->h5msgs_fd, &row, sizeof row, at) != (ssize_t)sizeof row)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)",
                             s->h5msgs_path, strerror(errno));
    }
    for (size_t r = 0; b && r < n; r++)
        free(b[r].rec);
    free(b);
    free(in);
    return rc;
}

int xsm_h5coll_cmp(const void *a, const void *b)
{
    const xsm_collective *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return x->coll_seq < y->coll_seq ? -1 : x->coll_seq > y->coll_seq;
}

void xsm_h5colls_final(xsm_stream *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->nh5colls; i++) {
        xsm_collective c = s->h5colls[i];
        size_t n = 0;
        for (size_t j = 0; j < c.n; j++) {
            const xsm_srank *sr = &s->r[c.ranks[j]];
            if (sr->kmpi && !xsm_bits_get(sr->kmpi, c.rows[j]))
                continue; /* outside --from/--to */
            c.ranks[n] = c.ranks[j];
            c.rows[n] = sr->kmpi ? xsm_bits_rank(sr->kmpi, sr->kmpi_before, c.rows[j]) : c.rows[j];
            c.tb[n] = c.tb[j] - s->t0;
            c.te[n] = c.te[j] - s->t0;
            n++;
        }
        c.n = n;
        if (!n) {
            xsm_collective_free(&c);
            continue;
        }
        s->h5colls[k++] = c;
    }
    s->nh5colls = k;
}

uint64_t xsm_h5src_rows(void *ctx, int32_t r, int table)
{
    xsm_stream *s = ctx;
    const xsm_rank *rk = &s->run->ranks[r];
    if (s->win && table != XSPROF_IO_T_ARGS) /* rows inside --from/--to, as read/select.c leaves them */
        return s->r[r].kept_rows[table];
    if (rk->rf)
        return xsprof_rankfile_table_rows(rk->rf, table);
    switch (table) { /* a journal's rows are in memory */
    case XSPROF_IO_T_REGIONS: return rk->d.nregions;
    case XSPROF_IO_T_ARGS: return rk->d.nargs;
    case XSPROF_IO_T_MPI: return rk->d.nmpi;
    case XSPROF_IO_T_GPU: return rk->d.ngpu;
    case XSPROF_IO_T_INSTANTS: return rk->d.ninstants;
    case XSPROF_IO_T_COUNTERS: return rk->d.ncounters;
    default: return rk->d.nmem;
    }
}

static int xsm_h5src_read(void *ctx, int32_t r, int table, uint64_t i, size_t n, void *buf, char *err, size_t errlen)
{
    xsm_stream *s = ctx;
    if (s->h5tab_rank != r || s->h5tab_table != table) {
        xsm_tab_close(&s->h5tab);
        memset(&s->h5tab, 0, sizeof s->h5tab);
        s->h5tab_rank = -1;
        if (xsm_tab_open(&s->h5tab, s->run->ranks[r].rf, &s->run->ranks[r].d, table))
            return xsm_err_set(err, errlen, "xsmerge: out of memory writing merged.h5") ? -1 : -1;
        s->h5tab_rank = r;
        s->h5tab_table = table;
        s->h5clk = s->r[r].clk; /* interpolation and knots, its own segment caches */
        s->h5clk.seg = s->h5clk.kseg = 0;
        s->h5tab_pos = s->h5tab_out = 0;
    }
    if (i != s->h5tab_out) /* emit/h5.c reads each table once, in order */
        return xsm_err_set(err, errlen, "xsmerge: merged.h5 rows asked for out of order") ? -1 : -1;
    const xsm_srank *sr = &s->r[r];
    int kind = xsm_table_kind(table);
    unsigned char *out = buf;
    for (size_t k = 0; k < n;) {
        const void *row = xsm_tab_row(&s->h5tab, s->h5tab_pos);
        if (!row)
            return xsm_err_set(err, errlen, "%s", s->h5tab.err) ? -1 : -1;
        s->h5tab_pos++;
        memcpy(out, row, s->h5tab.size);
        if (kind < 0) {
            /* arguments carry no time; with --from/--to their region is renumbered */
            xsprof_io_arg *a = (xsprof_io_arg *)out;
            if (sr->kreg && a->region >= 0 && (uint64_t)a->region < sr->kreg_rows)
                a->region = xsm_bits_get(sr->kreg, (uint64_t)a->region)
                                ? (int64_t)xsm_bits_rank(sr->kreg, sr->kreg_before, (uint64_t)a->region)
                                : -1;
        } else {
            xsm_skey key;
            xsm_row_key(kind, out, &s->h5clk, s->h5tab_pos - 1, &key);
            if (!xsm_stream_keep(s, key.t, key.te)) /* te: the end, or t for a point */
                continue; /* outside --from/--to */
            xsm_row_shift(kind, out, s->t0);
        }
        k++;
        out += s->h5tab.size;
    }
    s->h5tab_out += n;
    return 0;
}

static int xsm_h5src_msgs(void *ctx, uint64_t i, size_t n, xsm_h5_msgrec *out, char *err, size_t errlen)
{
    xsm_stream *s = ctx;
    int got = xsm_pread_full(s->h5msgs_fd, out, n * sizeof *out, (off_t)(i * sizeof *out));
    if (got)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s (a temporary file of the merge)", s->h5msgs_path,
                           got < 0 ? strerror(errno) : "short read")
                   ? -1 : -1;
    for (size_t k = 0; k < n; k++) {
        out[k].send_begin -= s->t0;
        out[k].send_end -= s->t0;
        out[k].recv_end -= s->t0;
        if (!s->win)
            continue;
        /* --from/--to: rows renumbered as read/select.c does (both ends are kept) */
        xsm_message *m = &out[k].m;
        const xsm_srank *ss = &s->r[m->src], *sd = &s->r[m->dst];
        int call_kept = xsm_bits_get(sd->kmpi, m->recv_call_row);
        m->send_row = xsm_bits_rank(ss->kmpi, ss->kmpi_before, m->send_row);
        m->recv_row = xsm_bits_rank(sd->kmpi, sd->kmpi_before, m->recv_row);
        m->recv_call_row = call_kept ? xsm_bits_rank(sd->kmpi, sd->kmpi_before, m->recv_call_row) : m->recv_row;
        if (m->recv_post_row >= 0)
            m->recv_post_row = xsm_bits_get(sd->kmpi, (uint64_t)m->recv_post_row)
                                   ? (int64_t)xsm_bits_rank(sd->kmpi, sd->kmpi_before, (uint64_t)m->recv_post_row)
                                   : -1;
        if (m->send_completion_row >= 0)
            m->send_completion_row =
                xsm_bits_get(ss->kmpi, (uint64_t)m->send_completion_row)
                    ? (int64_t)xsm_bits_rank(ss->kmpi, ss->kmpi_before, (uint64_t)m->send_completion_row)
                    : -1;
    }
    return 0;
}

const xsm_h5src_ops xsm_h5src = {xsm_h5src_rows, xsm_h5src_read, xsm_h5src_msgs};

void xsm_h5_cleanup(xsm_stream *s)
{
    if (s->msg_spill)
        fclose(s->msg_spill);
    if (s->scompl)
        fclose(s->scompl);
    if (s->h5msgs_fd >= 0)
        close(s->h5msgs_fd);
    s->msg_spill = s->scompl = NULL;
    s->h5msgs_fd = -1;
    if (s->msg_path[0])
        unlink(s->msg_path);
    if (s->scompl_path[0])
        unlink(s->scompl_path);
    if (s->h5msgs_path[0])
        unlink(s->h5msgs_path);
    xsm_tab_close(&s->h5tab);
    for (size_t i = 0; i < s->nh5colls; i++)
        xsm_collective_free(&s->h5colls[i]);
    free(s->h5colls);
    s->h5colls = NULL;
    s->nh5colls = 0;
}
