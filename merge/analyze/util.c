/* merge/analyze/util.c — text buffers, name table, atomic file writes and
 * number formatting shared by the report writers. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "an.h"

int xsm_comm_holds(const xsprof_rank_data *d, uint32_t comm, int32_t w, size_t nworld)
{
    for (size_t i = 0; i < d->ncomms; i++) {
        if (d->comms[i].id != comm)
            continue;
        if (d->comms[i].size == nworld) /* distinct members: every rank (the world, a dup of it) */
            return 1;
        for (uint32_t j = 0; j < d->comms[i].size && d->comms[i].members + j < d->ncomm_members; j++)
            if (d->comm_members[d->comms[i].members + j] == w)
                return 1;
        return 0;
    }
    return 0;
}

int xsm_is_poll_op(const char *name)
{
    static const char *const polls[] = {"MPI_Test", "MPI_Testany", "MPI_Testsome", "MPI_Testall", "MPI_Iprobe",
                                        "MPI_Improbe"};
    for (size_t k = 0; name && k < sizeof polls / sizeof *polls; k++)
        if (!strcmp(name, polls[k]))
            return 1;
    return 0;
}

void xsm_buf_put(xsm_buf *b, const char *s, size_t n)
{
    if (xsm_out_reserve(b, n + 1) != 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void xsm_buf_puts(xsm_buf *b, const char *s) { xsm_buf_put(b, s, strlen(s)); }

void xsm_buf_printf(xsm_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        xsm_buf_put(b, small, (size_t)n);
        return;
    }
    if (xsm_out_reserve(b, (size_t)n + 1) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void xsm_buf_json_str(xsm_buf *b, const char *s, int html_safe) { xsm_out_json_esc(b, s, html_safe); }

void xsm_buf_json_num(xsm_buf *b, double v)
{
    if (!isfinite(v))
        v = 0;
    if (v == floor(v) && fabs(v) < 9e15)
        xsm_buf_printf(b, "%.0f", v);
    else
        xsm_buf_printf(b, "%.9g", v);
}

void xsm_buf_html_str(xsm_buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '<': xsm_buf_puts(b, "&lt;"); break;
        case '>': xsm_buf_puts(b, "&gt;"); break;
        case '&': xsm_buf_puts(b, "&amp;"); break;
        case '"': xsm_buf_puts(b, "&quot;"); break;
        default: {
            /* flame.svg is XML: no control characters but tab and line
             * ends, only UTF-8; anything else becomes U+FFFD */
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
                xsm_buf_puts(b, "\xef\xbf\xbd");
            else
                p += xsm_out_utf8_char(b, p) - 1;
        }
        }
    }
}

void xsm_buf_free(xsm_buf *b)
{
    xsm_out_free(b);
    memset(b, 0, sizeof *b);
}

/* Errors name dst: the temporary file is gone when they are read. */
int xsm_file_write_atomic(const char *dir, const char *name, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[4600], dst[4600];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, name, (long)getpid());
    unlink(tmp); /* a leftover of a killed earlier run with our pid */
    /* exclusive create, no symlink following: never write through a planted link */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "xsmerge: %s: cannot create: %s", dst, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "xsmerge: %s: write failed: %s", dst, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        snprintf(err, errlen, "xsmerge: %s: write failed: %s", dst, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, dst) != 0) {
        snprintf(err, errlen, "xsmerge: %s: rename failed: %s", dst, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void xsm_fmt_dur(char *out, size_t n, double s)
{
    double a = fabs(s);
    if (s == 0)
        snprintf(out, n, "0");
    else if (a >= 100)
        snprintf(out, n, "%.0f s", s);
    else if (a >= 1)
        snprintf(out, n, "%.2f s", s);
    else if (a >= 1e-3)
        snprintf(out, n, "%.*f ms", a >= 0.1 ? 0 : 1, s * 1e3);
    else
        snprintf(out, n, "%.1f us", s * 1e6);
}

void xsm_fmt_ranks(char *out, size_t n, const int32_t *r, size_t nr)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < nr && used + 24 < n;) {
        size_t j = i;
        while (j + 1 < nr && r[j + 1] == r[j] + 1)
            j++;
        int w;
        if (j == i)
            w = snprintf(out + used, n - used, "%s%d", used ? "," : "", r[i]);
        else
            w = snprintf(out + used, n - used, "%s%d-%d", used ? "," : "", r[i], r[j]);
        if (w < 0)
            break;
        used += (size_t)w;
        i = j + 1;
    }
}

/* ---- names --------------------------------------------------------------- */
static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int32_t xsm_names_find(const xsm_names *t, const char *s)
{
    if (!t->nslot)
        return -1;
    for (size_t i = name_hash(s) & (t->nslot - 1);; i = (i + 1) & (t->nslot - 1)) {
        int32_t v = t->slot[i];
        if (!v)
            return -1;
        if (strcmp(t->v[v - 1], s) == 0)
            return v - 1;
    }
}

int32_t xsm_names_intern(xsm_names *t, const char *s)
{
    int32_t f = xsm_names_find(t, s);
    if (f >= 0)
        return f;
    if ((t->n + 1) * 2 > t->nslot) { /* keep the table at most half full */
        size_t ns = t->nslot ? t->nslot * 2 : 256;
        int32_t *slot = calloc(ns, sizeof *slot);
        if (!slot)
            return -1;
        for (size_t k = 0; k < t->n; k++) {
            size_t i = name_hash(t->v[k]) & (ns - 1);
            while (slot[i])
                i = (i + 1) & (ns - 1);
            slot[i] = (int32_t)k + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->nslot = ns;
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 128;
        char **v = realloc(t->v, nc * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = nc;
    }
    char *copy = strdup(s);
    if (!copy)
        return -1;
    t->v[t->n] = copy;
    size_t i = name_hash(s) & (t->nslot - 1);
    while (t->slot[i])
        i = (i + 1) & (t->nslot - 1);
    t->slot[i] = (int32_t)t->n + 1;
    return (int32_t)t->n++;
}

void xsm_names_free(xsm_names *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    free(t->slot);
    memset(t, 0, sizeof *t);
}
