/* merge/analyze/flame.c — folded stacks ("rank N;region;sub-region;MPI_X us")
 * from the call trees, and SVG flame graphs drawn from folded text, plain or
 * differential (widths from the new run, colour from the change). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"

static int str_cmp(const void *pa, const void *pb) { return strcmp(*(char *const *)pa, *(char *const *)pb); }

void xsm_flame_folded(const xsm_an *a, xsm_buf *b)
{
    /* path of every call-tree node, built once */
    char **path = calloc(a->ncn + 1, sizeof *path);
    if (!path) {
        b->failed = 1;
        return;
    }
    for (size_t c = 0; c < a->ncn; c++) { /* parents are created before children */
        const char *nm = xsm_an_name(a, a->cn[c].name);
        const char *pp = a->cn[c].parent >= 0 ? path[a->cn[c].parent] : NULL;
        size_t n = (pp ? strlen(pp) + 1 : 0) + strlen(nm) + 1;
        path[c] = malloc(n);
        if (!path[c]) {
            b->failed = 1;
            goto out;
        }
        snprintf(path[c], n, "%s%s%s", pp ? pp : "", pp ? ";" : "", nm);
        /* ';' separates frames and ' ' the value: keep them out of names */
        for (char *q = path[c] + (pp ? strlen(pp) + 1 : 0); *q; q++)
            if (*q == ';' || *q == ' ' || *q == '\n')
                *q = '_';
    }
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rankstat *rs = &a->rs[r];
        if (!rs->present)
            continue;
        size_t n = 0;
        char **lines = malloc((rs->ncs + 1) * sizeof *lines);
        if (!lines) {
            b->failed = 1;
            goto out;
        }
        for (size_t c = 0; c < rs->ncs && c < a->ncn; c++) {
            long long us = llround((double)rs->cs[c].excl * 1e-3);
            if (us <= 0)
                continue;
            size_t len = strlen(path[c]) + 48;
            lines[n] = malloc(len);
            if (!lines[n])
                break;
            snprintf(lines[n], len, "rank %zu;%s %lld\n", r, path[c], us);
            n++;
        }
        qsort(lines, n, sizeof *lines, str_cmp);
        for (size_t i = 0; i < n; i++) {
            xsm_buf_puts(b, lines[i]);
            free(lines[i]);
        }
        free(lines);
    }
out:
    for (size_t c = 0; c < a->ncn; c++)
        free(path[c]);
    free(path);
}

/* ---- flame graph drawing ---------------------------------------------------------- */
typedef struct fnode {
    char *name;
    double cur, base;
    struct fnode *child, *next;
} fnode;

static fnode *fnode_child(fnode *p, const char *name, size_t len)
{
    for (fnode *c = p->child; c; c = c->next)
        if (strlen(c->name) == len && memcmp(c->name, name, len) == 0)
            return c;
    fnode *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->name = strndup(name, len);
    if (!c->name) {
        free(c);
        return NULL;
    }
    c->next = p->child;
    p->child = c;
    return c;
}

static void fnode_free(fnode *n)
{
    while (n) {
        fnode *nx = n->next;
        fnode_free(n->child);
        free(n->name);
        free(n);
        n = nx;
    }
}

/* add every "a;b;c value" line of `text` to the tree (which = 0 cur, 1 base) */
static int tree_add(fnode *root, const char *text, int which)
{
    for (const char *l = text; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t len = eol ? (size_t)(eol - l) : strlen(l);
        const char *sp = NULL;
        for (size_t i = len; i-- > 0;)
            if (l[i] == ' ') {
                sp = l + i;
                break;
            }
        if (sp) {
            double v = strtod(sp + 1, NULL);
            fnode *n = root;
            if (which)
                n->base += v;
            else
                n->cur += v;
            for (const char *f = l; f < sp;) {
                const char *semi = memchr(f, ';', (size_t)(sp - f));
                size_t fl = semi ? (size_t)(semi - f) : (size_t)(sp - f);
                n = fnode_child(n, f, fl);
                if (!n)
                    return -1;
                if (which)
                    n->base += v;
                else
                    n->cur += v;
                f += fl + (semi ? 1 : 0);
            }
        }
        l = eol ? eol + 1 : NULL;
    }
    return 0;
}

static int fnode_depth(const fnode *n)
{
    int d = 0;
    for (const fnode *c = n->child; c; c = c->next) {
        int x = fnode_depth(c);
        if (x > d)
            d = x;
    }
    return d + 1;
}

static int fnode_cmp(const void *pa, const void *pb)
{
    return strcmp((*(fnode *const *)pa)->name, (*(fnode *const *)pb)->name);
}

/* children in name order, so the same stacks land in the same place in two graphs */
static void fnode_sort(fnode *n)
{
    size_t k = 0;
    for (fnode *c = n->child; c; c = c->next)
        k++;
    if (k > 1) {
        fnode **v = malloc(k * sizeof *v);
        if (v) {
            size_t i = 0;
            for (fnode *c = n->child; c; c = c->next)
                v[i++] = c;
            qsort(v, k, sizeof *v, fnode_cmp);
            for (i = 0; i + 1 < k; i++)
                v[i]->next = v[i + 1];
            v[k - 1]->next = NULL;
            n->child = v[0];
            free(v);
        }
    }
    for (fnode *c = n->child; c; c = c->next)
        fnode_sort(c);
}

#define FW 1200.0
#define FH 17
#define FPAD 10.0

static void color_of(const fnode *n, int diff, char *out, size_t len)
{
    if (diff) {
        double d = n->cur - n->base, m = n->cur > n->base ? n->cur : n->base;
        double rel = m > 0 ? d / m : 0; /* -1 .. 1 */
        double in = fabs(rel) * 2.5;      /* a 20 % change is already strong */
        int k = (int)(220 - 190 * (in > 1 ? 1 : in));
        if (!n->base && n->cur)
            snprintf(out, len, "rgb(220,40,40)"); /* new in this run */
        else if (fabs(rel) < 0.01)
            snprintf(out, len, "rgb(232,232,226)");
        else if (rel > 0)
            snprintf(out, len, "rgb(255,%d,%d)", k, k);
        else
            snprintf(out, len, "rgb(%d,%d,255)", k, k);
        return;
    }
    unsigned h = 5381;
    for (const char *p = n->name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    if (strncmp(n->name, "MPI_", 4) == 0)
        snprintf(out, len, "rgb(%u,%u,%u)", 60 + h % 40, 140 + h % 60, 200 + h % 50);
    else if (strncmp(n->name, "rank ", 5) == 0)
        snprintf(out, len, "rgb(190,190,%u)", 170 + h % 30);
    else
        snprintf(out, len, "rgb(%u,%u,%u)", 205 + h % 50, 80 + h % 130, 40 + h % 50);
}

static void draw(const fnode *n, double x, int level, int maxd, double scale, double total, int diff, xsm_buf *b)
{
    double w = n->cur * scale;
    if (w < 0.3)
        return;
    double y = FPAD + 30 + (double)(maxd - 1 - level) * FH;
    char col[48];
    color_of(n, diff, col, sizeof col);
    xsm_buf_puts(b, "<g class=\"f\"><title>");
    xsm_buf_html_str(b, n->name);
    xsm_buf_printf(b, " (%.3f ms, %.2f%%", n->cur * 1e-3, total > 0 ? 100.0 * n->cur / total : 0.0);
    if (diff)
        xsm_buf_printf(b, "; baseline %.3f ms, %+.1f%%", n->base * 1e-3, n->base > 0 ? 100.0 * (n->cur - n->base) / n->base : 100.0);
    xsm_buf_printf(b, ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>", x, y, w, FH - 1, col);
    int chars = (int)(w / 7.0);
    if (chars >= 3) {
        size_t nl = strlen(n->name);
        xsm_buf_printf(b, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FH - 5);
        if ((int)nl <= chars) {
            xsm_buf_html_str(b, n->name);
        } else {
            char *t = strndup(n->name, (size_t)(chars - 2));
            xsm_buf_html_str(b, t ? t : "");
            xsm_buf_puts(b, "..");
            free(t);
        }
        xsm_buf_puts(b, "</text>");
    }
    xsm_buf_puts(b, "</g>\n");
    double cx = x;
    for (const fnode *c = n->child; c; c = c->next) {
        draw(c, cx, level + 1, maxd, scale, total, diff, b);
        cx += c->cur * scale;
    }
}

void xsm_flame_svg(const char *folded, const char *base, const char *title, xsm_buf *b)
{
    fnode root = {0};
    root.name = "all";
    if (tree_add(&root, folded, 0) != 0 || (base && tree_add(&root, base, 1) != 0)) {
        b->failed = 1;
        fnode_free(root.child);
        return;
    }
    fnode_sort(&root);
    int maxd = fnode_depth(&root);
    double height = FPAD * 2 + 30 + maxd * FH;
    xsm_buf_printf(b,
                   "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                   "viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n"
                   "<style>text{font:12px Verdana,sans-serif;fill:#000;pointer-events:none}.f:hover rect{stroke:#000;stroke-width:0.5}</style>\n"
                   "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
                   "<text x=\"%.0f\" y=\"24\" style=\"font-size:16px\" text-anchor=\"middle\">",
                   FW + 2 * FPAD, height, FW + 2 * FPAD, height, (FW + 2 * FPAD) / 2);
    xsm_buf_html_str(b, title);
    xsm_buf_puts(b, "</text>\n");
    if (root.cur > 0)
        draw(&root, FPAD, 0, maxd, FW / root.cur, root.cur, base != NULL, b);
    else
        xsm_buf_printf(b, "<text x=\"%.0f\" y=\"60\">no region or MPI time recorded</text>\n", FPAD);
    xsm_buf_puts(b, "</svg>\n");
    fnode_free(root.child);
}
