/* merge/analyze/json.c — report.json, schema xsprof-report/1. Top-level keys
 * are exactly those of shared/DESIGN.md; times are seconds, sizes bytes. */
#include <stdlib.h>
#include <string.h>
#include "an.h"
#include "score.h"

#define NUM(b, v) xsm_buf_json_num((b), (double)(v))

static void key(xsm_buf *b, const char *k, int first)
{
    if (!first)
        xsm_buf_puts(b, ",");
    xsm_buf_printf(b, "\"%s\":", k);
}

static void str(xsm_buf *b, const char *s, int html) { xsm_buf_json_str(b, s, html); }

static void rank_or_null(xsm_buf *b, int32_t r)
{
    if (r < 0)
        xsm_buf_puts(b, "null");
    else
        NUM(b, r);
}

static void region_or_null(xsm_buf *b, const xsm_an *a, int32_t nm, int html)
{
    if (nm < 0)
        xsm_buf_puts(b, "null");
    else
        str(b, xsm_an_name(a, nm), html);
}

static void job(const xsm_an *a, xsm_buf *b, int h)
{
    const xsm_run *run = a->run;
    size_t present = 0;
    xsm_buf_puts(b, "{");
    key(b, "ranks", 1);
    NUM(b, a->nranks);
    key(b, "hosts", 0);
    xsm_buf_puts(b, "[");
    int first = 1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!run->ranks[r].present)
            continue;
        present++;
        const char *host = run->ranks[r].d.host;
        int dup = 0;
        for (size_t q = 0; q < r && !dup; q++)
            dup = run->ranks[q].present && strcmp(run->ranks[q].d.host, host) == 0;
        if (dup)
            continue;
        if (!first)
            xsm_buf_puts(b, ",");
        first = 0;
        str(b, host, h);
    }
    xsm_buf_puts(b, "]");
    key(b, "ranks_present", 0);
    NUM(b, present);
    key(b, "duration_s", 0);
    NUM(b, (double)(a->t1 - a->t0) * 1e-9);
    key(b, "command", 0);
    str(b, run->command, h);
    key(b, "job_id", 0);
    str(b, run->job_id, h);
    key(b, "run_dir", 0);
    str(b, run->run_dir, h);
    /* how it was computed (xsmerge --stream: a streamed analysis); the
     * sections it leaves out (none now, the key stays for readers) */
    key(b, "analysis", 0);
    str(b, "streamed", h); /* one engine, however it is fed (merge/README "One analysis") */
    key(b, "not_computed", 0);
    xsm_buf_puts(b, "[]");
    /* waits whose causing call had left the window (wait_states[].sites[].root_cause) */
    key(b, "waits_beyond_window", 0);
    NUM(b, a->beyond_total);
    xsm_buf_puts(b, "}");
}

/* ranks[].memory, present when the rank recorded memory events. */
static void rank_memory(const xsm_an *a, const xsm_memrank *m, xsm_buf *b, int h)
{
    xsm_buf_printf(b, "{\"allocs\":%llu,\"frees\":%llu,\"unknown_frees\":%llu,\"peak_bytes\":%llu,\"peak_s\":",
                   (unsigned long long)m->allocs, (unsigned long long)m->frees, (unsigned long long)m->unknown_frees,
                   (unsigned long long)m->peak_bytes);
    NUM(b, (double)(m->peak_t - a->t0) * 1e-9);
    xsm_buf_printf(b, ",\"leaked_bytes\":%llu,\"leaked_allocations\":%llu,\"held_by_mpi_bytes\":%llu,"
                      "\"leak_candidates\":[",
                   (unsigned long long)m->leaked_bytes, (unsigned long long)m->leaked_allocs,
                   (unsigned long long)m->mpi_held_bytes);
    for (size_t k = 0; k < m->nleaks; k++) {
        const xsm_leak *l = &m->leaks[k];
        xsm_buf_printf(b, "%s{\"ptr\":\"0x%llx\",\"bytes\":%llu,\"device\":%d,\"t_s\":", k ? "," : "",
                       (unsigned long long)l->ptr, (unsigned long long)l->bytes, l->device);
        NUM(b, (double)(l->t - a->t0) * 1e-9);
        xsm_buf_puts(b, ",\"region\":");
        region_or_null(b, a, l->region, h);
        xsm_buf_puts(b, ",\"stack\":["); /* where it was allocated, the allocating call first ([]: not recorded) */
        for (int f = 0; f < l->nframes; f++) {
            if (f)
                xsm_buf_puts(b, ",");
            str(b, xsm_an_name(a, l->frames[f]), h);
        }
        xsm_buf_puts(b, "]}");
    }
    xsm_buf_puts(b, "]}");
}

static void ranks(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "[");
    int first = 1;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rank *k = &a->run->ranks[r];
        const xsm_rankstat *rs = &a->rs[r];
        if (!first)
            xsm_buf_puts(b, ",");
        first = 0;
        double wall = (double)(rs->t_last - rs->t_first) * 1e-9, mpi = (double)rs->mpi_ns * 1e-9;
        xsm_buf_puts(b, "{");
        key(b, "rank", 1);
        NUM(b, r);
        key(b, "present", 0);
        xsm_buf_puts(b, k->present ? "true" : "false");
        key(b, "host", 0);
        str(b, k->present ? k->d.host : "", h);
        key(b, "wall_s", 0);
        NUM(b, wall);
        key(b, "mpi_s", 0);
        NUM(b, mpi);
        key(b, "compute_s", 0);
        NUM(b, wall - mpi > 0 ? wall - mpi : 0);
        key(b, "wait_s", 0);
        NUM(b, (double)rs->wait_ns * 1e-9);
        key(b, "gpu_s", 0);
        NUM(b, (double)rs->gpu_ns * 1e-9);
        key(b, "mpi_share", 0);
        NUM(b, wall > 0 ? mpi / wall : 0);
        key(b, "start_s", 0);
        NUM(b, (double)(rs->t_first - a->t0) * 1e-9);
        key(b, "end_s", 0);
        NUM(b, (double)(rs->t_last - a->t0) * 1e-9);
        key(b, "critical_path_s", 0);
        NUM(b, a->cp_rank_s ? a->cp_rank_s[r] : 0);
        key(b, "outlier", 0);
        xsm_buf_puts(b, rs->outlier ? "true" : "false");
        key(b, "dropped", 0);
        NUM(b, k->present ? k->d.dropped : 0);
        key(b, "truncated", 0);
        xsm_buf_puts(b, k->present && k->d.truncated ? "true" : "false");
        for (size_t i = 0; i < a->nmem; i++)
            if (a->mem[i].rank == (int32_t)r) {
                key(b, "memory", 0);
                rank_memory(a, &a->mem[i], b, h);
            }
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]");
}

static void stat_obj(xsm_buf *b, double mn, double mean, double mx, int32_t mxr, double sum)
{
    xsm_buf_puts(b, "{\"min\":");
    NUM(b, mn);
    xsm_buf_puts(b, ",\"mean\":");
    NUM(b, mean);
    xsm_buf_puts(b, ",\"max\":");
    NUM(b, mx);
    xsm_buf_puts(b, ",\"max_rank\":");
    rank_or_null(b, mxr);
    xsm_buf_puts(b, ",\"sum\":");
    NUM(b, sum);
    xsm_buf_puts(b, "}");
}

static int region_cmp(const void *pa, const void *pb)
{
    const xsm_region *a = *(const xsm_region *const *)pa, *b = *(const xsm_region *const *)pb;
    return a->incl_sum > b->incl_sum ? -1 : a->incl_sum < b->incl_sum ? 1 : 0;
}

static void regions(const xsm_an *a, xsm_buf *b, int h)
{
    const xsm_region **v = malloc((a->nreg + 1) * sizeof *v);
    xsm_buf_puts(b, "[");
    if (!v) {
        b->failed = 1;
        return;
    }
    for (size_t i = 0; i < a->nreg; i++)
        v[i] = &a->reg[i];
    qsort(v, a->nreg, sizeof *v, region_cmp);
    for (size_t i = 0; i < a->nreg; i++) {
        const xsm_region *g = v[i];
        if (i)
            xsm_buf_puts(b, ",");
        xsm_buf_puts(b, "{");
        key(b, "name", 1);
        str(b, xsm_an_name(a, g->name), h);
        key(b, "calls", 0);
        NUM(b, g->calls);
        key(b, "incl_s", 0);
        stat_obj(b, g->incl_min, g->incl_mean, g->incl_max, g->incl_max_rank, g->incl_sum);
        key(b, "excl_s", 0);
        stat_obj(b, g->excl_min, g->excl_mean, g->excl_max, g->excl_max_rank, g->excl_sum);
        key(b, "max_rank", 0);
        rank_or_null(b, g->excl_max_rank);
        key(b, "imbalance", 0);
        NUM(b, g->imbalance);
        key(b, "balanced_saving_s", 0);
        NUM(b, g->saving_s);
        key(b, "outliers", 0);
        NUM(b, g->outliers);
        key(b, "counters", 0); /* XSPROF_COUNTERS: each counter's total and mean per visit, the rates they allow */
        xsm_buf_puts(b, "{");
        int nc = 0;
        for (size_t k = 0; k < a->nctr; k++) {
            const xsm_ctr *c = &a->ctr[k];
            if (c->region != g->name)
                continue;
            key(b, xsm_an_name(a, c->counter), !nc++);
            xsm_buf_puts(b, "{\"total\":");
            NUM(b, c->total);
            xsm_buf_puts(b, ",\"visits\":");
            NUM(b, c->visits);
            xsm_buf_puts(b, ",\"per_visit\":");
            NUM(b, c->visits ? (double)c->total / (double)c->visits : 0.0);
            xsm_buf_puts(b, "}");
        }
        xsm_rate rt[4];
        int nr = xsm_counter_rates(a, g, rt);
        for (int k = 0; k < nr; k++) {
            key(b, rt[k].name, !nc++);
            NUM(b, rt[k].value);
        }
        xsm_buf_puts(b, "}");
        key(b, "per_rank", 0);
        xsm_buf_puts(b, "[");
        int first = 1;
        for (size_t r = 0; r < a->nranks; r++) {
            if (!a->rs[r].present)
                continue;
            if (!first)
                xsm_buf_puts(b, ",");
            first = 0;
            xsm_buf_printf(b, "{\"rank\":%zu,\"calls\":", r);
            NUM(b, g->rcalls[r]);
            xsm_buf_puts(b, ",\"incl_s\":");
            NUM(b, g->incl[r]);
            xsm_buf_puts(b, ",\"excl_s\":");
            NUM(b, g->excl[r]);
            xsm_buf_puts(b, "}");
        }
        xsm_buf_puts(b, "]}");
    }
    xsm_buf_puts(b, "]");
    free(v);
}

static void mpi(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < a->nops; i++) {
        const xsm_mpiop *o = &a->ops[i];
        if (i)
            xsm_buf_puts(b, ",");
        xsm_buf_puts(b, "{");
        key(b, "op", 1);
        str(b, xsm_an_name(a, o->name), h);
        key(b, "calls", 0);
        NUM(b, o->calls);
        key(b, "seconds", 0);
        NUM(b, o->seconds);
        key(b, "bytes", 0);
        NUM(b, o->bytes_sent + o->bytes_recv);
        key(b, "bytes_sent", 0);
        NUM(b, o->bytes_sent);
        key(b, "bytes_recv", 0);
        NUM(b, o->bytes_recv);
        key(b, "per_rank", 0);
        xsm_buf_puts(b, "[");
        int first = 1;
        for (size_t r = 0; r < a->nranks; r++) {
            if (!a->rs[r].present)
                continue;
            if (!first)
                xsm_buf_puts(b, ",");
            first = 0;
            xsm_buf_printf(b, "{\"rank\":%zu,\"calls\":", r);
            NUM(b, o->rcalls[r]);
            xsm_buf_puts(b, ",\"seconds\":");
            NUM(b, o->rseconds[r]);
            xsm_buf_puts(b, ",\"bytes\":");
            NUM(b, o->rbytes[r]);
            xsm_buf_puts(b, "}");
        }
        xsm_buf_puts(b, "]}");
    }
    xsm_buf_puts(b, "]");
}

typedef struct site {
    int32_t region, waiter, causer, op;
    int beyond; /* its root cause lies beyond the window (XSM_ROOT_BEYOND) */
    double s;
    uint64_t n;
} site;

static int site_cmp(const void *pa, const void *pb)
{
    const site *a = pa, *b = pb;
    return a->s > b->s ? -1 : a->s < b->s ? 1 : 0;
}

static int site_key_cmp(const void *pa, const void *pb)
{
    const site *a = pa, *b = pb;
    if (a->region != b->region)
        return a->region < b->region ? -1 : 1;
    if (a->waiter != b->waiter)
        return a->waiter < b->waiter ? -1 : 1;
    if (a->causer != b->causer)
        return a->causer < b->causer ? -1 : 1;
    if (a->beyond != b->beyond)
        return a->beyond < b->beyond ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

#define XSM_SITES_MAX 50

static void wait_states(const xsm_an *a, xsm_buf *b, int h)
{
    site *s = malloc((a->nw + 1) * sizeof *s);
    if (!s) {
        b->failed = 1;
        return;
    }
    xsm_buf_puts(b, "[");
    for (int i = 0; i < XSM_WAIT_NKINDS; i++) {
        int k = xsm_wait_kind_at(i);
        size_t ns = 0;
        for (size_t i = 0; i < a->nw; i++) {
            const xsm_wait *w = &a->w[i];
            if (w->kind == k)
                s[ns++] = (site){w->region, w->waiter, w->causer, w->op, w->root_region == XSM_ROOT_BEYOND,
                                 (double)(w->t_end - w->t_begin) * 1e-9, w->count};
        }
        /* merge instances of the same site */
        qsort(s, ns, sizeof *s, site_key_cmp);
        size_t m = 0;
        for (size_t i = 0; i < ns; i++) {
            if (m && site_key_cmp(&s[m - 1], &s[i]) == 0) {
                s[m - 1].s += s[i].s;
                s[m - 1].n += s[i].n; /* a streamed analysis's sites come with their counts */
            } else {
                s[m++] = s[i];
            }
        }
        ns = m;
        qsort(s, ns, sizeof *s, site_cmp);
        if (i)
            xsm_buf_puts(b, ",");
        xsm_buf_puts(b, "{");
        key(b, "kind", 1);
        str(b, xsm_wait_kind_name(k), h);
        key(b, "seconds", 0);
        NUM(b, a->wait_s[k]);
        key(b, "instances", 0);
        NUM(b, a->wait_n[k]);
        key(b, "beyond_window", 0);
        NUM(b, a->beyond_n[k]);
        key(b, "sites", 0);
        xsm_buf_puts(b, "[");
        for (size_t j = 0; j < ns && j < XSM_SITES_MAX; j++) {
            if (j)
                xsm_buf_puts(b, ",");
            xsm_buf_puts(b, "{");
            key(b, "region", 1);
            region_or_null(b, a, s[j].region, h);
            key(b, "op", 0);
            str(b, xsm_an_name(a, s[j].op), h);
            key(b, "waiting_rank", 0);
            NUM(b, s[j].waiter);
            key(b, "causing_rank", 0);
            rank_or_null(b, s[j].causer);
            key(b, "seconds", 0);
            NUM(b, s[j].s);
            key(b, "instances", 0);
            NUM(b, s[j].n);
            if (s[j].beyond) {
                key(b, "root_cause", 0);
                str(b, "beyond window", h);
            }
            xsm_buf_puts(b, "}");
        }
        xsm_buf_puts(b, "]");
        key(b, "root_causes", 0);
        xsm_buf_puts(b, "[");
        int first = 1;
        for (size_t i = 0, n = 0; i < a->nrc && n < XSM_SITES_MAX; i++) {
            if (a->rc[i].kind != k)
                continue;
            if (!first)
                xsm_buf_puts(b, ",");
            first = 0;
            n++;
            xsm_buf_puts(b, "{");
            key(b, "region", 1);
            region_or_null(b, a, a->rc[i].region, h);
            key(b, "rank", 0);
            NUM(b, a->rc[i].rank);
            key(b, "seconds", 0);
            NUM(b, a->rc[i].seconds);
            xsm_buf_puts(b, "}");
        }
        xsm_buf_puts(b, "]}");
    }
    xsm_buf_puts(b, "]");
    free(s);
}

static void critical_path(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "{");
    key(b, "length_s", 1);
    NUM(b, a->cp_length_s);
    key(b, "end_rank", 0);
    rank_or_null(b, a->cp_end_rank);
    key(b, "segments", 0);
    NUM(b, a->cp_segments);
    key(b, "regions", 0);
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < a->ncp; i++) {
        if (i)
            xsm_buf_puts(b, ",");
        xsm_buf_puts(b, "{");
        key(b, "name", 1);
        str(b, xsm_an_name(a, a->cp[i].name), h);
        key(b, "seconds", 0);
        NUM(b, a->cp[i].seconds);
        key(b, "share", 0);
        NUM(b, a->cp_length_s > 0 ? a->cp[i].seconds / a->cp_length_s : 0);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]");
    key(b, "ranks", 0);
    xsm_buf_puts(b, "[");
    int first = 1;
    for (size_t r = 0; r < a->nranks; r++) {
        if (!a->cp_rank_s || a->cp_rank_s[r] <= 0)
            continue;
        if (!first)
            xsm_buf_puts(b, ",");
        first = 0;
        xsm_buf_printf(b, "{\"rank\":%zu,\"seconds\":", r);
        NUM(b, a->cp_rank_s[r]);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]}");
}

typedef struct pair {
    int32_t s, d;
    uint64_t bytes, msgs;
} pair;

static int pair_cmp(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->msgs > b->msgs ? -1 : a->msgs < b->msgs;
}

#define XSM_PAIRS_MAX 10
/* Dense matrices only up to this many ranks; beyond, the pairs list stays. */
#define XSM_MATRIX_MAX_RANKS 256

static void comm_matrix(const xsm_an *a, xsm_buf *b)
{
    size_t R = a->nranks;
    xsm_buf_puts(b, "{");
    key(b, "ranks", 1);
    NUM(b, R);
    int dense = R <= XSM_MATRIX_MAX_RANKS;
    for (int which = 0; which < 2; which++) {
        key(b, which ? "messages" : "bytes", 0);
        if (!dense) {
            xsm_buf_puts(b, "null");
            continue;
        }
        /* the pairs come by (src, dst): row by row, zero between them */
        xsm_buf_puts(b, "[");
        size_t k = 0;
        for (size_t s = 0; s < R; s++) {
            xsm_buf_puts(b, s ? ",[" : "[");
            for (size_t d = 0; d < R; d++) {
                uint64_t v = 0;
                if (k < a->ncm && (size_t)a->cm[k].src == s && (size_t)a->cm[k].dst == d) {
                    v = which ? a->cm[k].msgs : a->cm[k].bytes;
                    k++;
                }
                xsm_buf_printf(b, d ? ",%llu" : "%llu", (unsigned long long)v);
            }
            xsm_buf_puts(b, "]");
        }
        xsm_buf_puts(b, "]");
    }
    pair top[XSM_PAIRS_MAX + 1];
    size_t nt = 0;
    for (size_t i = 0; i < a->ncm; i++) {
        pair p = {a->cm[i].src, a->cm[i].dst, a->cm[i].bytes, a->cm[i].msgs};
        if (nt < XSM_PAIRS_MAX)
            top[nt++] = p;
        else if (pair_cmp(&p, &top[nt - 1]) < 0)
            top[nt - 1] = p;
        else
            continue;
        qsort(top, nt, sizeof *top, pair_cmp);
    }
    key(b, "heaviest_pairs", 0);
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < nt; i++)
        xsm_buf_printf(b, "%s{\"src\":%d,\"dst\":%d,\"bytes\":%llu,\"messages\":%llu}", i ? "," : "", top[i].s, top[i].d,
                       (unsigned long long)top[i].bytes, (unsigned long long)top[i].msgs);
    xsm_buf_puts(b, "]");
    key(b, "unmatched_sends", 0);
    NUM(b, a->run->unmatched_sends);
    key(b, "unmatched_recvs", 0);
    NUM(b, a->run->unmatched_recvs);
    key(b, "unreceived_sends", 0); /* of unmatched_sends, the ones the application never received (its finding) */
    NUM(b, a->run->unreceived);
    xsm_buf_puts(b, "}");
}

static void gpu(const xsm_an *a, xsm_buf *b)
{
    xsm_buf_puts(b, "{");
    key(b, "present", 1);
    xsm_buf_puts(b, a->gpu_rows ? "true" : "false");
    double ks = 0, ov = 0;
    uint64_t h2d = 0, d2h = 0, d2d = 0, oth = 0, okn = 0;
    for (size_t i = 0; i < a->ngpu; i++) {
        ks += a->gpu[i].kernel_s;
        ov += a->gpu[i].overlap_s;
        okn += a->gpu[i].overlap_kernels;
        h2d += a->gpu[i].htod;
        d2h += a->gpu[i].dtoh;
        d2d += a->gpu[i].dtod;
        oth += a->gpu[i].other_bytes;
    }
    key(b, "kernel_s", 0);
    NUM(b, ks);
    key(b, "memcpy_bytes", 0);
    xsm_buf_printf(b, "{\"htod\":%llu,\"dtoh\":%llu,\"dtod\":%llu,\"other\":%llu}", (unsigned long long)h2d,
                   (unsigned long long)d2h, (unsigned long long)d2d, (unsigned long long)oth);
    key(b, "kernels_overlapping_mpi_waits", 0);
    NUM(b, okn);
    key(b, "overlap_with_mpi_waits_s", 0);
    NUM(b, ov);
    key(b, "devices", 0);
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < a->ngpu; i++) {
        const xsm_gpudev *g = &a->gpu[i];
        xsm_buf_printf(b, "%s{\"rank\":%d,\"device\":%u,\"kernels\":%llu,\"kernel_s\":", i ? "," : "", g->rank, g->device,
                       (unsigned long long)g->kernels);
        NUM(b, g->kernel_s);
        xsm_buf_puts(b, ",\"busy_s\":");
        NUM(b, g->busy_s);
        xsm_buf_puts(b, ",\"idle_share\":");
        NUM(b, g->idle_share);
        xsm_buf_printf(b, ",\"memcpy_bytes\":{\"htod\":%llu,\"dtoh\":%llu,\"dtod\":%llu,\"other\":%llu}",
                       (unsigned long long)g->htod, (unsigned long long)g->dtoh, (unsigned long long)g->dtod,
                       (unsigned long long)g->other_bytes);
        xsm_buf_printf(b, ",\"kernels_overlapping_mpi_waits\":%llu,\"overlap_with_mpi_waits_s\":",
                       (unsigned long long)g->overlap_kernels);
        NUM(b, g->overlap_s);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]}");
}

static void clock_obj(const xsm_an *a, xsm_buf *b)
{
    const xsm_clock_stats *c = &a->run->clock;
    xsm_buf_puts(b, "{");
    key(b, "violations_before", 1);
    NUM(b, c->violations_before);
    key(b, "violations_after", 0);
    NUM(b, c->violations_after);
    key(b, "max_residual_us", 0);
    NUM(b, c->max_residual_us);
    key(b, "max_correction_us", 0);
    NUM(b, (double)c->max_correction_ns * 1e-3);
    xsm_buf_puts(b, "}");
}

/* A call site: where (op, function, file, line, module), and with `all`
 * its calls, time, bytes and wait states. */
/* A name (index) or null. */
static void name_or_null(xsm_buf *b, const xsm_an *a, int32_t nm, int h)
{
    if (nm >= 0)
        str(b, xsm_an_name(a, nm), h);
    else
        xsm_buf_puts(b, "null");
}

/* A place in the code: "file", "line" (null when unknown), "module". */
static void place(xsm_buf *b, const xsm_an *a, int32_t file, int line, int32_t module, int h)
{
    key(b, "file", 0);
    name_or_null(b, a, file, h);
    key(b, "line", 0);
    if (line > 0)
        NUM(b, line);
    else
        xsm_buf_puts(b, "null");
    key(b, "module", 0);
    name_or_null(b, a, module, h);
}

/* {kind: {"seconds", "instances"}} for the kinds with instances. */
static void by_kind(xsm_buf *b, const uint64_t *n, const double *sec)
{
    xsm_buf_puts(b, "{");
    int first = 1;
    for (int i = 0, k; i < XSM_WAIT_NKINDS; i++)
        if (n[k = xsm_wait_kind_at(i)]) {
            key(b, xsm_wait_kind_name(k), first);
            first = 0;
            xsm_buf_puts(b, "{\"seconds\":");
            NUM(b, sec[k]);
            xsm_buf_puts(b, ",\"instances\":");
            NUM(b, n[k]);
            xsm_buf_puts(b, "}");
        }
    xsm_buf_puts(b, "}");
}

static void callsite_obj(const xsm_an *a, const xsm_callsite *c, xsm_buf *b, int h, int all)
{
    xsm_buf_puts(b, "{");
    key(b, "op", 1);
    str(b, xsm_an_name(a, c->op), h);
    key(b, "function", 0);
    str(b, xsm_an_name(a, c->function), h);
    place(b, a, c->file, c->line, c->module, h);
    if (all) {
        key(b, "calls", 0);
        NUM(b, c->calls);
        key(b, "seconds", 0);
        NUM(b, c->mpi_s);
        key(b, "bytes", 0);
        NUM(b, c->bytes);
        key(b, "ranks", 0);
        NUM(b, c->nranks);
        key(b, "wait_seconds", 0);
        NUM(b, c->wait_total_s);
        key(b, "waits", 0); /* by kind, the kinds it has */
        by_kind(b, c->wait_n, c->wait_s);
        key(b, "caused", 0); /* by kind, the waits of other ranks these calls came late for */
        by_kind(b, c->caused_n, c->caused_s);
    }
    xsm_buf_puts(b, "}");
}

/* Where the program calls MPI: the 200 sites with the most time. Empty
 * when the run recorded no call sites. */
static void callsites(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "[");
    for (size_t i = 0; a->css_known && i < a->ncss && i < 200; i++) {
        if (i)
            xsm_buf_puts(b, ",\n");
        callsite_obj(a, &a->css[i], b, h, 1);
    }
    xsm_buf_puts(b, "]");
}

/* Where the CPU time goes: the 100 places of v (n) with the most samples
 * (empty without XSPROF_SAMPLE_HZ), shares of total; seconds null when a
 * sample's weight is not known (CPU-time timers). */
static void samples(const xsm_an *a, const xsm_sample *v, size_t n, uint64_t total, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < n && i < 100; i++) {
        const xsm_sample *s = &v[i];
        xsm_buf_puts(b, i ? ",\n{" : "{");
        key(b, "function", 1);
        str(b, xsm_an_name(a, s->function), h);
        key(b, "inlined", 0); /* the sampled line is in this function, inlined into `function` */
        name_or_null(b, a, s->inlined, h);
        place(b, a, s->file, s->line, s->module, h);
        key(b, "samples", 0);
        NUM(b, s->n);
        key(b, "seconds", 0);
        if (a->smp_timed)
            NUM(b, s->seconds);
        else
            xsm_buf_puts(b, "null");
        key(b, "share", 0);
        NUM(b, total ? (double)s->n / (double)total : 0.0);
        key(b, "ranks", 0);
        NUM(b, s->nranks);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]");
}

static void findings(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "[");
    for (size_t i = 0; i < a->nf; i++) {
        const xsm_finding *f = &a->f[i];
        if (i)
            xsm_buf_puts(b, ",");
        xsm_buf_puts(b, "{");
        key(b, "kind", 1);
        str(b, f->kind, h);
        key(b, "severity", 0);
        str(b, f->severity, h);
        key(b, "seconds_lost", 0);
        NUM(b, f->seconds_lost);
        key(b, "region", 0);
        region_or_null(b, a, f->region, h);
        key(b, "ranks", 0);
        xsm_buf_puts(b, "[");
        for (size_t k = 0; k < f->nranks; k++)
            xsm_buf_printf(b, k ? ",%d" : "%d", f->ranks[k]);
        xsm_buf_puts(b, "]");
        key(b, "message", 0);
        str(b, f->message, h);
        key(b, "recommendation", 0);
        str(b, f->recommendation, h);
        key(b, "where", 0); /* the waiting call site, when the run recorded call sites */
        if (f->where1)
            callsite_obj(a, &a->css[f->where1 - 1], b, h, 0);
        else
            xsm_buf_puts(b, "null");
        key(b, "cause_function", 0); /* what the causing rank ran while they waited (its samples then) */
        if (f->burn1) {
            xsm_buf_puts(b, "{");
            key(b, "function", 1);
            str(b, xsm_an_name(a, f->burn1 - 1), h);
            key(b, "file", 0);
            if (f->burn_file >= 0)
                str(b, xsm_an_name(a, f->burn_file), h);
            else
                xsm_buf_puts(b, "null");
            key(b, "line", 0);
            xsm_buf_printf(b, "%d", f->burn_line);
            key(b, "share", 0);
            xsm_buf_printf(b, "%.4f", f->burn_share);
            xsm_buf_puts(b, "}");
        } else {
            xsm_buf_puts(b, "null");
        }
        key(b, "cause_where", 0); /* the causing call site (on the causing rank) */
        if (f->cause1)
            callsite_obj(a, &a->css[f->cause1 - 1], b, h, 0);
        else
            xsm_buf_puts(b, "null");
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]");
}

/* Hosts in order of their first rank, then every rank with a record. */
static void topology(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "{\"hosts\":[");
    for (size_t i = 0; i < a->nthost; i++) {
        const xsm_topohost *t = &a->thost[i];
        xsm_buf_puts(b, i ? ",{" : "{");
        key(b, "host", 1);
        str(b, t->host, h);
        key(b, "ranks", 0);
        NUM(b, t->ranks);
        key(b, "cores", 0);
        NUM(b, t->ncores);
        key(b, "gpus", 0); /* every GPU of the host with its NUMA node: "bus=node,..." */
        str(b, t->gpu_numa, h);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "],\"ranks\":[");
    for (size_t i = 0; i < a->ntopo; i++) {
        const xsm_toporank *t = &a->topo[i];
        xsm_buf_puts(b, i ? ",{" : "{");
        key(b, "rank", 1);
        NUM(b, t->rank);
        key(b, "host", 0);
        str(b, t->host, h);
        key(b, "cpuset", 0);
        str(b, t->cpuset, h);
        key(b, "cores", 0);
        str(b, t->cores, h);
        key(b, "numa_nodes", 0);
        str(b, t->numa, h);
        key(b, "numa_node", 0);
        NUM(b, t->numa_node);
        key(b, "gpus_near", 0);
        str(b, t->gpus, h);
        key(b, "bound", 0);
        xsm_buf_puts(b, t->bound < 0 ? "null" : t->bound ? "true" : "false");
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]}");
}

static void score(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_score s;
    if (xsm_score_from_an(&s, a, a->score_for) != 0)
        b->failed = 1; /* the report is not written: out of memory */
    else
        xsm_score_json(&s, b, h);
    xsm_score_free(&s);
}

static void drops(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "{");
    key(b, "total", 1);
    NUM(b, a->dropped_total);
    key(b, "truncated_ranks", 0);
    NUM(b, a->truncated);
    key(b, "recovered_ranks", 0);
    NUM(b, a->recovered);
    key(b, "missing_ranks", 0);
    NUM(b, a->missing);
    key(b, "unmatched_sends", 0); /* what the run lost: not the sends the application never received */
    NUM(b, a->run->unmatched_sends - a->run->unreceived);
    key(b, "unmatched_recvs", 0);
    NUM(b, a->run->unmatched_recvs);
    key(b, "incomplete_collectives", 0);
    NUM(b, a->run->incomplete_colls);
    key(b, "per_rank", 0);
    xsm_buf_puts(b, "[");
    int first = 1;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsm_rank *k = &a->run->ranks[r];
        if ((k->present && !k->d.dropped && !k->d.truncated && !k->d.recovered) || k->left_out)
            continue;
        if (!first)
            xsm_buf_puts(b, ",");
        first = 0;
        xsm_buf_printf(b, "{\"rank\":%zu,\"present\":%s,\"dropped\":%llu,\"truncated\":%s,\"recovered\":%s,\"end_state\":", r,
                       k->present ? "true" : "false", (unsigned long long)(k->present ? k->d.dropped : 0),
                       k->present && k->d.truncated ? "true" : "false", k->present && k->d.recovered ? "true" : "false");
        str(b, k->present ? k->d.end_state : "missing", h);
        xsm_buf_puts(b, "}");
    }
    xsm_buf_puts(b, "]}");
}

void xsm_report_json(const xsm_an *a, xsm_buf *b, int h)
{
    xsm_buf_puts(b, "{\"schema\":\"xsprof-report/1\",\"job\":");
    job(a, b, h);
    xsm_buf_puts(b, ",\n\"ranks\":");
    ranks(a, b, h);
    xsm_buf_puts(b, ",\n\"regions\":");
    regions(a, b, h);
    xsm_buf_puts(b, ",\n\"mpi\":");
    mpi(a, b, h);
    xsm_buf_puts(b, ",\n\"wait_states\":");
    wait_states(a, b, h);
    xsm_buf_puts(b, ",\n\"critical_path\":");
    critical_path(a, b, h);
    xsm_buf_puts(b, ",\n\"comm_matrix\":");
    comm_matrix(a, b);
    xsm_buf_puts(b, ",\n\"gpu\":");
    gpu(a, b);
    xsm_buf_puts(b, ",\n\"clock\":");
    clock_obj(a, b);
    xsm_buf_puts(b, ",\n\"callsites\":");
    callsites(a, b, h);
    xsm_buf_puts(b, ",\n\"samples\":");
    samples(a, a->smp, a->nsmp, a->smp_total, b, h);
    /* the samples taken outside every region and MPI call ("(no region)"), shares of those */
    xsm_buf_puts(b, ",\n\"samples_no_region\":");
    samples(a, a->nosmp, a->nnosmp, a->nosmp_total, b, h);
    xsm_buf_puts(b, ",\n\"topology\":");
    topology(a, b, h);
    xsm_buf_puts(b, ",\n\"score\":");
    score(a, b, h);
    xsm_buf_puts(b, ",\n\"findings\":");
    findings(a, b, h);
    xsm_buf_puts(b, ",\n\"drops\":");
    drops(a, b, h);
    xsm_buf_puts(b, "}\n");
}
