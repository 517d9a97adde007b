/* merge/analyze/findings.c — turn the analysis into ranked, actionable
 * findings. Wait states are grouped by (kind, causing rank, root-cause
 * region); imbalance, outlier and slow-rank findings are only added when no
 * wait-state finding already explains the same region on the same rank, so
 * one problem is reported once. Imbalance is only judged for regions every
 * rank runs. seconds_lost is in rank-seconds: the time
 * summed over every rank that loses it. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "an.h"

/* A finding's text, cut at its buffer's size: a message is bounded, and a
 * long name may shorten it (gcc's -Wformat-truncation would refuse the
 * plain snprintf of the parts' worst case, which is the point). */
static void msg_set(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void msg_set(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

int xsm_an_finding_add(xsm_an *a, const xsm_finding *f)
{
    if (a->nf == a->fcap) {
        size_t nc = a->fcap ? a->fcap * 2 : 32;
        xsm_finding *v = realloc(a->f, nc * sizeof *v);
        if (!v)
            return -1;
        a->f = v;
        a->fcap = nc;
    }
    a->f[a->nf++] = *f;
    return 0;
}

static const char *severity_of(const xsm_an *a, double s)
{
    double share = a->total_rank_s > 0 ? s / a->total_rank_s : 0;
    return share >= 0.10 ? "high" : share >= 0.02 ? "medium" : "low";
}

typedef struct tally {
    int32_t key;
    double s;
} tally;

static void tally_add(tally *t, size_t *n, size_t cap, int32_t key, double s)
{
    for (size_t i = 0; i < *n; i++)
        if (t[i].key == key) {
            t[i].s += s;
            return;
        }
    if (*n < cap)
        t[(*n)++] = (tally){key, s};
}

static int32_t tally_top(const tally *t, size_t n)
{
    int32_t k = -1;
    double best = -1;
    for (size_t i = 0; i < n; i++)
        if (t[i].s > best) {
            best = t[i].s;
            k = t[i].key;
        }
    return k;
}

static const xsm_an *sort_an; /* qsort has no context: set for the duration of one sort */

/* one finding per (kind, root-cause region): the causing rank may vary
 * from instance to instance (noise decides who arrives last) */
static int wait_group_cmp(const void *pa, const void *pb)
{
    const xsm_wait *a = &sort_an->w[*(const size_t *)pa], *b = &sort_an->w[*(const size_t *)pb];
    if (a->kind != b->kind)
        return a->kind - b->kind;
    if (a->root_region != b->root_region)
        return a->root_region < b->root_region ? -1 : 1;
    return 0;
}

static const xsm_region *region_of(const xsm_an *a, int32_t name)
{
    for (size_t i = 0; i < a->nreg; i++)
        if (a->reg[i].name == name)
            return &a->reg[i];
    return NULL;
}

static const char *recommend(int kind)
{
    switch (kind) {
    case XSM_WAIT_LATE_SENDER: return "send earlier on the causing rank (reduce or move the work before the send), or post the receive with MPI_Irecv and compute while the message is in flight";
    case XSM_WAIT_WRONG_ORDER: return "receive messages in the order they are sent, or use MPI_ANY_SOURCE / MPI_Waitany to take whichever arrives first";
    case XSM_WAIT_LATE_RECEIVER: return "post the receive earlier (MPI_Irecv before the work), or replace the synchronous/rendezvous send by MPI_Isend and complete it later";
    case XSM_WAIT_BARRIER: return "balance the work before the barrier, or remove the barrier if the algorithm does not need it";
    case XSM_WAIT_NXN: return "balance the work before the collective across ranks";
    case XSM_WAIT_NXN_COMPLETION: return "this is the collective's own cost: use fewer, larger collectives or a nonblocking one (MPI_Iallreduce) overlapped with work";
    case XSM_WAIT_LATE_BCAST: return "let the root reach the broadcast earlier: move or split the work it does before it";
    case XSM_WAIT_EARLY_REDUCE: return "give the root work to do before the reduction (or use MPI_Ireduce), and balance the work of the late contributors";
    case XSM_WAIT_BARRIER_COMPLETION: return "this is the barrier's own cost: remove barriers the algorithm does not need";
    case XSM_WAIT_EARLY_SCAN: return "balance the work before the scan across ranks, or use MPI_Iscan and compute while the lower ranks catch up";
    case XSM_WAIT_LS_POLL: return "the polls before the message came were spent waiting: send earlier on the causing rank, or do useful work between the polls";
    case XSM_WAIT_LR_POLL: return "the polls before the receive was posted were spent waiting: post the receive earlier on the causing rank, or do useful work between the polls";
    }
    return "";
}

/* Is (rank, region) already the root cause of a wait finding? */
static int explained(const xsm_an *a, size_t nwait_findings, int32_t rank, int32_t region)
{
    for (size_t i = 0; i < nwait_findings; i++) {
        const xsm_finding *f = &a->f[i];
        if (f->region == region && (rank < 0 || (f->nranks && f->ranks[0] == rank)))
            return 1;
    }
    return 0;
}

/* "ranks 1-3 wait 63 ms to 66 ms each, rank 0 56 us (191 ms in total)":
 * per[r] the seconds rank r waited (0: it did not). */
static void wait_range_say(char *out, size_t n, const double *per, size_t R, const char *tot)
{
    double mx = 0;
    for (size_t r = 0; r < R; r++)
        mx = per[r] > mx ? per[r] : mx;
    int32_t *big = malloc((R + 1) * sizeof *big), *small = malloc((R + 1) * sizeof *small);
    if (!big || !small) {
        snprintf(out, n, "ranks wait %s in total", tot);
        free(big);
        free(small);
        return;
    }
    size_t nb = 0, ns = 0;
    double lo = mx, smx = 0;
    for (size_t r = 0; r < R; r++) {
        if (per[r] <= 0)
            continue;
        if (per[r] >= 0.1 * mx) {
            big[nb++] = (int32_t)r;
            lo = per[r] < lo ? per[r] : lo;
        } else {
            small[ns++] = (int32_t)r;
            smx = per[r] > smx ? per[r] : smx;
        }
    }
    char br[256], sr[256], dlo[32], dhi[32], dsm[32], span[96];
    xsm_fmt_ranks(br, sizeof br, big, nb);
    xsm_fmt_ranks(sr, sizeof sr, small, ns);
    xsm_fmt_dur(dlo, sizeof dlo, lo);
    xsm_fmt_dur(dhi, sizeof dhi, mx);
    xsm_fmt_dur(dsm, sizeof dsm, smx);
    if (nb > 1 && strcmp(dlo, dhi))
        snprintf(span, sizeof span, "%s to %s each", dlo, dhi);
    else
        snprintf(span, sizeof span, nb > 1 ? "%s each" : "%s", dhi);
    if (!ns)
        snprintf(out, n, "%s %s wait %s (%s in total)", nb > 1 ? "ranks" : "rank", br, span, tot);
    else
        snprintf(out, n, "%s %s %s %s, %s %s %s%s (%s in total)", nb > 1 ? "ranks" : "rank", br,
                 nb > 1 ? "wait" : "waits", span, ns > 1 ? "ranks" : "rank", sr, ns > 1 ? "at most " : "", dsm, tot);
    free(big);
    free(small);
}

static int wait_findings(xsm_an *a)
{
    size_t R = a->nranks;
    size_t *idx = malloc((a->nw + 1) * sizeof *idx);
    double *per = calloc(R + 1, sizeof *per), *cper = calloc(R + 1, sizeof *cper);
    int rc = -1;
    if (!idx || !per || !cper)
        goto out;
    for (size_t i = 0; i < a->nw; i++)
        idx[i] = i;
    sort_an = a;
    if (a->nw > 1)
        qsort(idx, a->nw, sizeof *idx, wait_group_cmp);
    for (size_t g = 0; g < a->nw;) {
        size_t e = g;
        while (e < a->nw && wait_group_cmp(&idx[g], &idx[e]) == 0)
            e++;
        const xsm_wait *w0 = &a->w[idx[g]];
        double total = 0;
        tally ops[16], regs[16];
        size_t nops = 0, nregs = 0;
        for (size_t k = g; k < e; k++) {
            const xsm_wait *w = &a->w[idx[k]];
            double s = (double)(w->t_end - w->t_begin) * 1e-9;
            total += s;
            per[w->waiter] += s;
            if (w->causer >= 0)
                cper[w->causer] += s;
            tally_add(ops, &nops, 16, w->op, s);
            tally_add(regs, &nregs, 16, w->region, s);
        }
        int32_t causer = -1;
        size_t ncausers = 0, nwaiters = 0;
        for (size_t r = 0; r < R; r++) {
            nwaiters += per[r] > 0;
            if (cper[r] > 0) {
                ncausers++;
                if (causer < 0 || cper[r] > cper[causer])
                    causer = (int32_t)r;
            }
        }
        /* the rank the root region is on: with propagation (delay.c) it may
         * be another than the ones waited for, which only passed the delay on */
        int32_t rootr = -1;
        double rbest = 0;
        for (size_t i = 0; causer >= 0 && i < a->nrc; i++)
            if (a->rc[i].kind == w0->kind && a->rc[i].region == w0->root_region && a->rc[i].seconds > rbest) {
                rbest = a->rc[i].seconds;
                rootr = a->rc[i].rank;
            }
        int passed_on = rootr >= 0 && (rootr != causer || ncausers > 1) && cper[rootr] < cper[causer];
        xsm_finding f;
        memset(&f, 0, sizeof f);
        f.ranks = malloc((R + 1) * sizeof *f.ranks);
        int32_t *waiters = malloc((nwaiters + 1) * sizeof *waiters);
        if (!f.ranks || !waiters) {
            free(f.ranks);
            free(waiters);
            goto out;
        }
        /* the rank where the delay starts first (the root region's when the
         * delay was passed on, else the causing rank), then every other
         * rank involved */
        int32_t first = passed_on ? rootr : causer;
        if (first >= 0)
            f.ranks[f.nranks++] = first;
        size_t nw = 0;
        for (size_t r = 0; r < R; r++) {
            if (per[r] > 0)
                waiters[nw++] = (int32_t)r;
            if ((per[r] > 0 || cper[r] > 0) && (int32_t)r != first)
                f.ranks[f.nranks++] = (int32_t)r;
        }
        char wr[256], tot[32], opn[256];
        xsm_fmt_ranks(wr, sizeof wr, waiters, nw);
        free(waiters);
        xsm_fmt_dur(tot, sizeof tot, total);
        snprintf(opn, sizeof opn, "%s", xsm_an_name(a, tally_top(ops, nops)));
        int32_t wreg = tally_top(regs, nregs);
        snprintf(f.kind, sizeof f.kind, "%s", xsm_wait_kind_name(w0->kind));
        f.seconds_lost = total;
        f.severity = severity_of(a, total);
        f.region = w0->root_region >= 0 ? w0->root_region : wreg;
        /* who loses time, and how much: the range, not a mean over ranks
         * that waited very differently (a Bcast's root 56 us, the others
         * 63-66 ms); ranks that waited under a tenth of the most are named
         * apart */
        char who[768];
        if (nw == 1)
            snprintf(who, sizeof who, "rank %s waits %s", wr, tot);
        else
            wait_range_say(who, sizeof who, per, R, tot);
        char where[1024], site[640] = "";
        f.where1 = xsm_callsite_of_waits(a, tally_top(ops, nops), w0->kind, 0) + 1;
        f.cause1 = causer >= 0 ? xsm_callsite_of_waits(a, -1, w0->kind, 1) + 1 : 0;
        if (f.where1) { /* where in the code: the call site with most of these waits */
            char loc[600];
            xsm_callsite_fmt(a, &a->css[f.where1 - 1], loc, sizeof loc);
            snprintf(site, sizeof site, " at %s", loc);
        }
        if (wreg >= 0)
            snprintf(where, sizeof where, "in %s%s (in `%s`)", opn, site, xsm_an_name(a, wreg));
        else
            snprintf(where, sizeof where, "in %s%s", opn, site);
        const xsm_region *rg = w0->root_region >= 0 ? region_of(a, w0->root_region) : NULL;
        const char *rname = xsm_an_name(a, w0->root_region);
        char cause[512] = "";
        if (w0->root_region == XSM_ROOT_BEYOND && causer >= 0) {
            snprintf(cause, sizeof cause, "the cause lies on rank %d further back than the analysis looks "
                     "(beyond window: raise XSPROF_MERGE_ANALYSIS_WINDOW, 256 calls in memory, 16 with --stream); ",
                     causer);
        } else if (passed_on) {
            char d[32];
            xsm_fmt_dur(d, sizeof d, rbest);
            if (ncausers > 1)
                snprintf(cause, sizeof cause,
                         "the delay starts in `%s` on rank %d (%s of these waits) and reaches them through the %zu ranks "
                         "they wait for (rank %d most); ",
                         rname, rootr, d, ncausers, causer);
            else
                snprintf(cause, sizeof cause,
                         "rank %d is late because of `%s` on rank %d (%s of these waits), passed on through earlier "
                         "waits; ",
                         causer, rname, rootr, d);
        } else if (causer >= 0 && ncausers > 1) {
            char d[32];
            xsm_fmt_dur(d, sizeof d, cper[causer]);
            snprintf(cause, sizeof cause, "the rank waited for varies between %zu ranks, held up in `%s` (rank %d most: %s of the waits); ",
                     ncausers, rname, causer, d);
        } else if (causer >= 0 && rg) {
            double mine = rg->excl[causer], diff = mine - rg->excl_mean;
            size_t runs = 0, present = 0;
            for (size_t r = 0; r < R; r++) {
                present += a->rs[r].present;
                runs += a->rs[r].present && rg->rcalls[r] > 0;
            }
            char d[32];
            if (runs == present && diff > 0.05 * mine) { /* every rank runs it: compare with the mean */
                xsm_fmt_dur(d, sizeof d, diff);
                snprintf(cause, sizeof cause, "rank %d spends %s (%.0f%%) longer in `%s` than the mean; ", causer, d,
                         100.0 * diff / mine, rname);
            } else if (mine > 0) { /* a role of the causing rank, or a difference of this instance only */
                xsm_fmt_dur(d, sizeof d, mine);
                snprintf(cause, sizeof cause, "rank %d is held up by `%s` (%s there in all); ", causer, rname, d);
            }
        }
        const char *kn = xsm_wait_kind_name(w0->kind);
        char delayed[320] = ""; /* none without a delay analysis (a streamed one) */
        if (w0->root_region >= 0)
            snprintf(delayed, sizeof delayed, ", delayed in `%s`", rname);
        if (causer < 0)
            msg_set(f.message, sizeof f.message, "%s %s after the first rank already left (%s)", who, where, kn);
        else if (cause[0])
            msg_set(f.message, sizeof f.message, "%s%s %s for it (%s)", cause, who, where, kn);
        else if (w0->kind == XSM_WAIT_EARLY_REDUCE)
            msg_set(f.message, sizeof f.message, "root %s %s for the last contributor, rank %d%s (%s)", who, where, causer,
                    delayed, kn);
        else
            msg_set(f.message, sizeof f.message, "%s %s for rank %d%s (%s)", who, where, causer, delayed, kn);
        f.burn_file = -1;
        const xsm_dwin *burn;
        uint64_t wsamples = 0;
        if (causer >= 0 && xsm_samples_delay(a, w0->kind, causer, &burn, &wsamples)) {
            /* what the causing rank ran while they waited: its samples then */
            f.burn1 = burn->function + 1;
            f.burn_file = burn->file;
            f.burn_line = burn->line;
            f.burn_share = wsamples ? (double)burn->n / (double)wsamples : 0;
            char at[600] = "";
            if (burn->file >= 0)
                snprintf(at, sizeof at, " (%s:%d)", xsm_an_name(a, burn->file), burn->line);
            size_t used = strlen(f.message);
            snprintf(f.message + used, sizeof f.message - used,
                     "; while they waited, rank %d ran %s%s in %.0f%% of its samples then", causer,
                     xsm_an_name(a, burn->function), at, 100.0 * f.burn_share);
        }
        if (f.cause1) { /* where the causing rank's late call is */
            char loc[600];
            const xsm_callsite *cc = &a->css[f.cause1 - 1];
            xsm_callsite_fmt(a, cc, loc, sizeof loc);
            size_t used = strlen(f.message);
            snprintf(f.message + used, sizeof f.message - used, "; the late call is %s at %s", xsm_an_name(a, cc->op), loc);
        }
        if (w0->kind == XSM_WAIT_WRONG_ORDER) {
            size_t used = strlen(f.message);
            snprintf(f.message + used, sizeof f.message - used, "; a message sent before the awaited one was received after it");
        }
        if (causer >= 0 && w0->root_region >= 0 &&
            (w0->kind == XSM_WAIT_NXN || w0->kind == XSM_WAIT_BARRIER || w0->kind == XSM_WAIT_EARLY_SCAN))
            snprintf(f.recommendation, sizeof f.recommendation, "rebalance `%s` across ranks; %s", rname, recommend(w0->kind));
        else
            snprintf(f.recommendation, sizeof f.recommendation, "%s", recommend(w0->kind));
        f.outside = causer >= 0 && w0->root_region == -1; /* e.g. a program profiled by LD_PRELOAD alone */
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            goto out;
        }
        for (size_t k = g; k < e; k++) {
            const xsm_wait *w = &a->w[idx[k]];
            per[w->waiter] = 0;
            if (w->causer >= 0)
                cper[w->causer] = 0;
        }
        g = e;
    }
    rc = 0;
out:
    free(idx);
    free(per);
    free(cper);
    return rc;
}

static int imbalance_findings(xsm_an *a, size_t nwf)
{
    size_t R = a->nranks, npresent = 0;
    for (size_t r = 0; r < R; r++)
        npresent += a->rs[r].present;
    if (npresent < 2)
        return 0;
    for (size_t i = 0; i < a->nreg; i++) {
        const xsm_region *g = &a->reg[i];
        if (g->excl_max <= 0 || g->imbalance < 0.05 || explained(a, nwf, g->excl_max_rank, g->name))
            continue;
        /* a region only some ranks run is a role (MPMD), not an imbalance;
         * if others wait for it, its wait states report it */
        size_t runs = 0;
        for (size_t r = 0; r < R; r++)
            runs += a->rs[r].present && g->rcalls[r] > 0;
        if (runs < npresent)
            continue;
        double lost = 0; /* what the other ranks idle while the slowest one works */
        for (size_t r = 0; r < R; r++)
            if (a->rs[r].present)
                lost += g->excl_max - g->excl[r];
        xsm_finding f;
        memset(&f, 0, sizeof f);
        f.ranks = malloc((npresent + 1) * sizeof *f.ranks);
        if (!f.ranks)
            return -1;
        f.ranks[f.nranks++] = g->excl_max_rank;
        for (size_t r = 0; r < R; r++)
            if (a->rs[r].present && (int32_t)r != g->excl_max_rank)
                f.ranks[f.nranks++] = (int32_t)r;
        snprintf(f.kind, sizeof f.kind, "Load imbalance");
        f.seconds_lost = lost;
        f.severity = severity_of(a, lost);
        f.region = g->name;
        char d[32], sv[32];
        xsm_fmt_dur(d, sizeof d, g->excl_max - g->excl_mean);
        xsm_fmt_dur(sv, sizeof sv, g->saving_s);
        snprintf(f.message, sizeof f.message,
                 "rank %d spends %s (%.0f%%) longer in `%s` than the mean; balanced, the job would finish up to %s sooner",
                 g->excl_max_rank, d, 100.0 * g->imbalance, xsm_an_name(a, g->name), sv);
        snprintf(f.recommendation, sizeof f.recommendation, "rebalance `%s` across ranks (distribute its work by cost, not by count)",
                 xsm_an_name(a, g->name));
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            return -1;
        }
    }
    return 0;
}

/* An outlier instance that contains a slower sub-region instance which is
 * an outlier itself is explained by it: report the innermost one only. */
static int outlier_inherited(const xsm_an *a, size_t i)
{
    const xsm_outlier *o = &a->out[i];
    double end = (double)o->t_begin + o->seconds * 1e9, ex = o->seconds - o->mean_s;
    for (size_t j = 0; j < a->nout; j++) {
        const xsm_outlier *c = &a->out[j];
        if (j == i || c->rank != o->rank || c->region == o->region)
            continue;
        double cend = (double)c->t_begin + c->seconds * 1e9;
        if (c->t_begin >= o->t_begin && cend <= end && c->seconds < o->seconds && c->seconds - c->mean_s >= 0.5 * ex)
            return 1;
    }
    return 0;
}

static int outlier_findings(xsm_an *a, size_t nwf)
{
    unsigned char *skip = calloc(a->nout + 1, 1);
    int32_t *ranks = malloc((a->nranks + 1) * sizeof *ranks);
    if (!skip || !ranks) {
        free(skip);
        free(ranks);
        return -1;
    }
    /* inherited, or on a rank a wait finding already explains there */
    for (size_t i = 0; i < a->nout; i++)
        skip[i] = (unsigned char)(outlier_inherited(a, i) || explained(a, nwf, a->out[i].rank, a->out[i].region));
    /* one finding per region, every rank with outliers in it named (one
     * cause seen on several ranks is one finding, issue 38) */
    int rc = 0;
    for (size_t i = 0; i < a->nout && !rc; i++) {
        const xsm_outlier *o = &a->out[i];
        int seen = skip[i];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !skip[j] && a->out[j].region == o->region;
        if (seen)
            continue;
        double excess = 0, worst = 0, worst_mean = o->mean_s;
        int32_t worst_rank = o->rank;
        size_t n = 0, nr = 0;
        for (size_t j = i; j < a->nout; j++) {
            const xsm_outlier *x = &a->out[j];
            if (skip[j] || x->region != o->region)
                continue;
            excess += x->seconds - x->mean_s;
            if (x->seconds > worst) {
                worst = x->seconds;
                worst_rank = x->rank;
                worst_mean = x->mean_s;
            }
            n++;
            size_t k = 0;
            while (k < nr && ranks[k] != x->rank)
                k++;
            if (k == nr)
                ranks[nr++] = x->rank;
        }
        for (size_t p = 1; p < nr; p++) /* rank order */
            for (size_t q = p; q > 0 && ranks[q - 1] > ranks[q]; q--) {
                int32_t t = ranks[q];
                ranks[q] = ranks[q - 1];
                ranks[q - 1] = t;
            }
        xsm_finding f;
        memset(&f, 0, sizeof f);
        if (!(f.ranks = malloc(nr * sizeof *f.ranks))) {
            rc = -1;
            break;
        }
        memcpy(f.ranks, ranks, nr * sizeof *ranks);
        f.nranks = nr;
        snprintf(f.kind, sizeof f.kind, "Outlier");
        f.seconds_lost = excess;
        f.severity = severity_of(a, excess);
        f.region = o->region;
        char w[32], m[32], who[256];
        xsm_fmt_dur(w, sizeof w, worst);
        xsm_fmt_dur(m, sizeof m, worst_mean);
        xsm_fmt_ranks(who, sizeof who, ranks, nr);
        if (nr == 1)
            msg_set(f.message, sizeof f.message,
                    "%zu instance%s of `%s` on rank %s took up to %s against a mean of %s (more than mean + 2 sigma)", n,
                    n == 1 ? "" : "s", xsm_an_name(a, o->region), who, w, m);
        else
            msg_set(f.message, sizeof f.message,
                    "%zu instances of `%s` on ranks %s took longer than their rank's mean + 2 sigma, up to %s on rank %d "
                    "(mean there %s)",
                    n, xsm_an_name(a, o->region), who, w, worst_rank, m);
        snprintf(f.recommendation, sizeof f.recommendation,
                 "look at what differs in the slow instances of `%s` (input size, interference from other processes, paging, I/O)",
                 xsm_an_name(a, o->region));
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            rc = -1;
        }
    }
    free(skip);
    free(ranks);
    return rc;
}

static int slow_rank_findings(xsm_an *a, size_t nwf)
{
    size_t R = a->nranks;
    for (size_t r = 0; r < R; r++) {
        if (!a->rs[r].present || !a->rs[r].outlier)
            continue;
        int causer = 0;
        for (size_t i = 0; i < nwf && !causer; i++)
            causer = a->f[i].nranks && a->f[i].ranks[0] == (int32_t)r;
        if (causer) /* its extra time already shows as the waits it causes */
            continue;
        double sum = 0, n = 0;
        for (size_t q = 0; q < R; q++)
            if (q != r && a->rs[q].present) {
                sum += (double)(a->rs[q].t_last - a->rs[q].t_first - a->rs[q].mpi_ns) * 1e-9;
                n++;
            }
        double mine = (double)(a->rs[r].t_last - a->rs[r].t_first - a->rs[r].mpi_ns) * 1e-9, mean = n ? sum / n : 0;
        if (mine <= mean)
            continue;
        xsm_finding f;
        memset(&f, 0, sizeof f);
        f.ranks = malloc(sizeof *f.ranks);
        if (!f.ranks)
            return -1;
        f.ranks[f.nranks++] = (int32_t)r;
        snprintf(f.kind, sizeof f.kind, "Slow rank");
        f.seconds_lost = mine - mean;
        f.severity = severity_of(a, f.seconds_lost);
        f.region = -1;
        char m1[32], m2[32];
        xsm_fmt_dur(m1, sizeof m1, mine);
        xsm_fmt_dur(m2, sizeof m2, mean);
        snprintf(f.message, sizeof f.message, "rank %zu computes %s against %s on the other ranks (more than 2 sigma away)", r, m1, m2);
        snprintf(f.recommendation, sizeof f.recommendation, "check the placement and the share of work of rank %zu (node, binding, data size)", r);
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            return -1;
        }
    }
    return 0;
}

static int finding_cmp(const void *pa, const void *pb)
{
    const xsm_finding *a = pa, *b = pb;
    return a->seconds_lost > b->seconds_lost ? -1 : a->seconds_lost < b->seconds_lost ? 1 : strcmp(a->kind, b->kind);
}

#define XSM_FINDINGS_MAX 40

static void fmt_bytes(char *out, size_t n, uint64_t b)
{
    if (b >= (1ull << 30))
        snprintf(out, n, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(out, n, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024)
        snprintf(out, n, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(out, n, "%llu bytes", (unsigned long long)b);
}

/* Leak candidates cost no time, so they follow the time-ranked findings. */
static int memory_findings(xsm_an *a)
{
    for (size_t i = 0; i < a->nmem; i++) {
        const xsm_memrank *m = &a->mem[i];
        if (!m->leaked_allocs)
            continue;
        xsm_finding f;
        memset(&f, 0, sizeof f);
        snprintf(f.kind, sizeof f.kind, "Memory leak candidates");
        f.severity = "low";
        f.region = m->nleaks ? m->leaks[0].region : -1;
        f.ranks = malloc(sizeof *f.ranks);
        if (!f.ranks)
            return -1;
        f.ranks[f.nranks++] = m->rank;
        char tot[32], big[32];
        fmt_bytes(tot, sizeof tot, m->leaked_bytes);
        fmt_bytes(big, sizeof big, m->nleaks ? m->leaks[0].bytes : 0);
        snprintf(f.message, sizeof f.message,
                 "rank %d never freed %llu allocation%s (%s) by the end of the run; the largest, %s, was allocated in `%s`",
                 m->rank, (unsigned long long)m->leaked_allocs, m->leaked_allocs == 1 ? "" : "s", tot, big,
                 xsm_an_name(a, f.region));
        snprintf(f.recommendation, sizeof f.recommendation,
                 "free these buffers before exit, or confirm they are meant to live until the end");
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            return -1;
        }
    }
    return 0;
}

/* Messages the application sent and never received (match/unrecv.c): no
 * time measured, after the time-ranked findings; one per sending rank. */
static int unreceived_findings(xsm_an *a)
{
    for (size_t r = 0; a->run->unrecv && r < a->nranks; r++) {
        const xsm_unrecv *u = &a->run->unrecv[r];
        if (!u->msgs)
            continue;
        xsm_finding f;
        memset(&f, 0, sizeof f);
        snprintf(f.kind, sizeof f.kind, "Messages never received");
        f.severity = "low";
        f.region = -1;
        if (!(f.ranks = malloc(sizeof *f.ranks)))
            return -1;
        f.ranks[f.nranks++] = (int32_t)r;
        char to[96];
        if (u->self == u->msgs)
            snprintf(to, sizeof to, "to itself");
        else if (u->dst_min == u->dst_max)
            snprintf(to, sizeof to, "to rank %lld", (long long)u->dst_min);
        else
            snprintf(to, sizeof to, "to ranks %lld-%lld%s", (long long)u->dst_min, (long long)u->dst_max,
                     u->self ? " (itself among them)" : "");
        msg_set(f.message, sizeof f.message,
                "rank %zu sent %lld message%s %s that no receive ever matched, though %s ran to its end with every "
                "record: the application never received them (this is not data the profiler lost)",
                r, (long long)u->msgs, u->msgs == 1 ? "" : "s", to, u->self == u->msgs ? "it" : "the receiver");
        snprintf(f.recommendation, sizeof f.recommendation,
                 "receive them, or cancel and free their requests, before MPI_Finalize: each holds MPI resources "
                 "until then, and a program that relies on them being delivered has a bug");
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            return -1;
        }
    }
    return 0;
}

/* Polling: time in loops of MPI_Test, Testany, ... and MPI_Iprobe. Only the
 * polls made before the awaited message was sent are wait states (Late
 * Sender, waits.c poll_wait): a program that polls (hpcc's RandomAccess: 14
 * s of its 19 rank-seconds in 4.3 M MPI_Testany calls) spends the rest
 * polling for messages already on their way, shown here. */
static int polling_findings(xsm_an *a)
{
    size_t R = a->nranks;
    double *per = calloc(R + 1, sizeof *per), total = 0;
    uint64_t calls = 0;
    const xsm_mpiop *top = NULL;
    if (!per)
        return -1;
    for (size_t i = 0; i < a->nops; i++) {
        const xsm_mpiop *o = &a->ops[i];
        if (!xsm_is_poll_op(xsm_an_name(a, o->name)))
            continue;
        total += o->seconds;
        calls += o->calls;
        for (size_t r = 0; r < R; r++)
            per[r] += o->rseconds ? o->rseconds[r] : 0;
        if (!top || o->seconds > top->seconds)
            top = o;
    }
    int rc = 0;
    /* a loop, not a few checks: thousands of calls and a twentieth of the run */
    if (top && calls >= 1000 && a->total_rank_s > 0 && total >= 0.05 * a->total_rank_s) {
        xsm_finding f;
        memset(&f, 0, sizeof f);
        int32_t *w = malloc((R + 1) * sizeof *w);
        f.ranks = malloc((R + 1) * sizeof *f.ranks);
        if (!w || !f.ranks) {
            free(w);
            free(f.ranks);
            free(per);
            return -1;
        }
        size_t nw = 0;
        for (size_t r = 0; r < R; r++)
            if (per[r] > 0)
                w[nw++] = (int32_t)r;
        for (size_t r = 0; r < nw; r++) /* the most polling first */
            f.ranks[f.nranks++] = w[r];
        for (size_t i = 1; i < f.nranks; i++)
            for (size_t k = i; k > 0 && per[f.ranks[k - 1]] < per[f.ranks[k]]; k--) {
                int32_t t = f.ranks[k];
                f.ranks[k] = f.ranks[k - 1];
                f.ranks[k - 1] = t;
            }
        char rk[256], d[32], c[32];
        xsm_fmt_ranks(rk, sizeof rk, w, nw);
        free(w);
        xsm_fmt_dur(d, sizeof d, total);
        if (calls >= 1000000)
            snprintf(c, sizeof c, "%.1f M", (double)calls * 1e-6);
        else
            snprintf(c, sizeof c, "%llu", (unsigned long long)calls);
        snprintf(f.kind, sizeof f.kind, "Polling");
        f.seconds_lost = total;
        f.severity = severity_of(a, total);
        f.region = -1;
        snprintf(f.message, sizeof f.message,
                 "ranks %s spend %s (%.0f%% of their time) in %s calls of MPI_Test*/MPI_Iprobe, most in %s (the "
                 "polls made before the awaited message was sent count as Late Sender too)",
                 rk, d, 100.0 * total / a->total_rank_s, c, xsm_an_name(a, top->name));
        snprintf(f.recommendation, sizeof f.recommendation,
                 "when there is nothing else to do, block in MPI_Wait*/MPI_Probe instead of polling; otherwise do "
                 "useful work between the tests (each test runs MPI's progress engine)");
        if (xsm_an_finding_add(a, &f) != 0) {
            free(f.ranks);
            rc = -1;
        }
    }
    free(per);
    return rc;
}

int xsm_an_findings(xsm_an *a)
{
    if (wait_findings(a) != 0)
        return -1;
    size_t nwf = a->nf;
    if (imbalance_findings(a, nwf) != 0 || outlier_findings(a, nwf) != 0 || slow_rank_findings(a, nwf) != 0 ||
        polling_findings(a) != 0)
        return -1;
    if (a->nf > 1)
        qsort(a->f, a->nf, sizeof *a->f, finding_cmp);
    /* keep what matters: at least 0.1 % of the job's rank-time, at most XSM_FINDINGS_MAX */
    size_t keep = 0;
    for (size_t i = 0; i < a->nf; i++) {
        int ok = keep < XSM_FINDINGS_MAX && a->f[i].seconds_lost > 0 &&
                 (a->total_rank_s <= 0 || a->f[i].seconds_lost >= 1e-3 * a->total_rank_s);
        if (ok)
            a->f[keep++] = a->f[i];
        else
            free(a->f[i].ranks);
    }
    a->nf = keep;
    /* said once, with the largest such finding */
    for (size_t i = 0; i < a->nf; i++)
        if (a->f[i].outside) {
            size_t used = strlen(a->f[i].recommendation);
            snprintf(a->f[i].recommendation + used, sizeof a->f[i].recommendation - used,
                     "; the delay is in code outside every region: mark regions (XSPROF_FUNCTION, XSPROF_SCOPE or "
                     "NVTX ranges) to see which");
            break;
        }
    if (memory_findings(a) != 0 || unreceived_findings(a) != 0)
        return -1;
    return xsm_topo_findings(a);
}
