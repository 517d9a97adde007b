/* merge/analyze/topology.c — where the ranks ran: each rank file's hwloc
 * record (io/format.h xsprof_io_topo) and topo_* metadata (mpi/topo.c)
 * become report.json's `topology` and findings: ranks sharing a hardware
 * thread or a core, unbound ranks, bindings across NUMA nodes, GPUs on
 * another NUMA node than their rank, unequal ranks per node. They read only
 * the rank files' definitions, which every feeding loads the same way. */
#include <stdlib.h>
#include <string.h>
#include "an.h"

/* A cpuset, core or node list ("0-3,8"), as at most XSM_TOPO_RANGES
 * ranges; more are cut (a list hwloc writes for one binding is short). */
#define XSM_TOPO_RANGES 16
typedef struct xsm_tlist {
    size_t n;
    long lo[XSM_TOPO_RANGES], hi[XSM_TOPO_RANGES];
} xsm_tlist;

static void tlist_parse(const char *s, xsm_tlist *l)
{
    l->n = 0;
    while (s && *s && l->n < XSM_TOPO_RANGES) {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s)
            break;
        if (*end == '-') {
            s = end + 1;
            hi = strtol(s, &end, 10);
            if (end == s)
                break;
        }
        if (hi >= lo) {
            l->lo[l->n] = lo;
            l->hi[l->n++] = hi;
        }
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            break;
    }
}

static long tlist_count(const xsm_tlist *l)
{
    long c = 0;
    for (size_t i = 0; i < l->n; i++)
        c += l->hi[i] - l->lo[i] + 1;
    return c;
}

/* The smallest member of both, -1 when they are disjoint. */
static long tlist_common(const xsm_tlist *a, const xsm_tlist *b)
{
    long best = -1;
    for (size_t i = 0; i < a->n; i++)
        for (size_t k = 0; k < b->n; k++) {
            long lo = a->lo[i] > b->lo[k] ? a->lo[i] : b->lo[k], hi = a->hi[i] < b->hi[k] ? a->hi[i] : b->hi[k];
            if (lo <= hi && (best < 0 || lo < best))
                best = lo;
        }
    return best;
}

static const char *meta_of(const xsprof_rank_data *d, const char *key)
{
    for (size_t i = 0; i < d->nmeta; i++)
        if (strcmp(xsprof_rank_data_string(d, d->meta[i].key), key) == 0)
            return xsprof_rank_data_string(d, d->meta[i].value);
    return NULL;
}

static int by_host(const void *pa, const void *pb, void *ctx)
{
    const xsm_toporank *t = ctx, *a = &t[*(const size_t *)pa], *b = &t[*(const size_t *)pb];
    int c = strcmp(a->host, b->host);
    return c ? c : a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int by_first(const void *pa, const void *pb, void *ctx)
{
    const size_t *first = ctx;
    size_t x = first[*(const uint32_t *)pa], y = first[*(const uint32_t *)pb];
    return x < y ? -1 : x > y;
}

/* The hosts, in order of their first rank, and each rank's host index:
 * a sort by host name, not a search per rank (16 384 ranks). */
static int topo_hosts(xsm_an *a)
{
    size_t T = a->ntopo, nh = 0;
    size_t *ix = malloc((T + 1) * sizeof *ix), *first = malloc((T + 1) * sizeof *first);
    uint32_t *order = malloc((T + 1) * sizeof *order), *rank_of = malloc((T + 1) * sizeof *rank_of);
    a->thost = calloc(T + 1, sizeof *a->thost);
    int rc = -1;
    if (!ix || !first || !order || !rank_of || !a->thost)
        goto out;
    for (size_t i = 0; i < T; i++)
        ix[i] = i;
    qsort_r(ix, T, sizeof *ix, by_host, a->topo);
    for (size_t i = 0; i < T; i++) {
        if (!i || strcmp(a->topo[ix[i]].host, a->topo[ix[i - 1]].host) != 0)
            first[nh++] = ix[i]; /* the smallest index of the host: topo is by rank */
        a->topo[ix[i]].hostix = (uint32_t)(nh - 1);
    }
    for (size_t h = 0; h < nh; h++)
        order[h] = (uint32_t)h;
    qsort_r(order, nh, sizeof *order, by_first, first);
    for (size_t h = 0; h < nh; h++)
        rank_of[order[h]] = (uint32_t)h;
    for (size_t i = 0; i < T; i++) {
        xsm_toporank *t = &a->topo[i];
        t->hostix = rank_of[t->hostix];
        xsm_topohost *o = &a->thost[t->hostix];
        if (!o->ranks++)
            *o = (xsm_topohost){.host = t->host, .ranks = 1, .ncores = t->ncores_host, .gpu_numa = t->gpu_numa};
    }
    a->nthost = nh;
    rc = 0;
out:
    free(ix);
    free(first);
    free(order);
    free(rank_of);
    return rc;
}

int xsm_an_topology(xsm_an *a)
{
    const xsm_run *run = a->run;
    a->topo = calloc(a->nranks + 1, sizeof *a->topo);
    if (!a->topo)
        return -1;
    for (size_t r = 0; r < a->nranks; r++) {
        const xsprof_rank_data *d = &run->ranks[r].d;
        if (!run->ranks[r].present || !d->ntopo)
            continue;
        const xsprof_io_topo *t = &d->topo[0];
        xsm_toporank *o = &a->topo[a->ntopo++];
        const char *numa = meta_of(d, "topo_numa_nodes"), *gn = meta_of(d, "topo_gpu_numa");
        *o = (xsm_toporank){.rank = (int32_t)r,
                            .host = d->host,
                            .cpuset = xsprof_rank_data_string(d, t->cpuset),
                            .cores = xsprof_rank_data_string(d, t->cores),
                            .numa = numa ? numa : "",
                            .gpus = xsprof_rank_data_string(d, t->gpus),
                            .gpu_numa = gn ? gn : "",
                            .ncores_host = t->ncores_host,
                            .numa_node = t->numa_node,
                            .bound = -1};
        if (!*o->cpuset) /* no hwloc: the binding is unknown */
            continue;
        const char *machine = meta_of(d, "topo_machine_cpuset");
        xsm_tlist cores;
        tlist_parse(o->cores, &cores);
        if (machine)
            o->bound = strcmp(machine, o->cpuset) != 0;
        else if (t->ncores_host > 0)
            o->bound = tlist_count(&cores) < t->ncores_host;
    }
    for (size_t i = 0; i < a->ngpu; i++) /* a->topo is by rank */
        for (size_t k = 0; k < a->ntopo; k++)
            if (a->topo[k].rank == a->gpu[i].rank && a->gpu[i].kernels + a->gpu[i].htod + a->gpu[i].dtoh)
                a->topo[k].used_gpu = 1;
    return topo_hosts(a);
}

static int add(xsm_an *a, const char *kind, const char *severity, int32_t *ranks, size_t n, const char *msg,
               const char *rec)
{
    xsm_finding f;
    memset(&f, 0, sizeof f);
    snprintf(f.kind, sizeof f.kind, "%s", kind);
    f.severity = severity;
    f.region = -1;
    f.ranks = ranks;
    f.nranks = n;
    snprintf(f.message, sizeof f.message, "%s", msg);
    snprintf(f.recommendation, sizeof f.recommendation, "%s", rec);
    if (xsm_an_finding_add(a, &f) != 0) {
        free(ranks);
        return -1;
    }
    return 0;
}

/* Ranks of one host bound to a common hardware thread (same == 1) or to
 * hardware threads of a common core (same == 0): one finding per host.
 * The lists are parsed once; pairs are only looked for within a host. */
static int shared_findings(xsm_an *a, int same)
{
    size_t T = a->ntopo;
    size_t *ix = malloc((T + 1) * sizeof *ix), *start = calloc(a->nthost + 2, sizeof *start);
    xsm_tlist *pu = malloc((T + 1) * sizeof *pu), *core = malloc((T + 1) * sizeof *core);
    unsigned char *in = calloc(T + 1, 1);
    int32_t *rk = malloc((T + 1) * sizeof *rk);
    int rc = -1;
    if (!ix || !start || !pu || !core || !in || !rk)
        goto out;
    for (size_t i = 0; i < T; i++) { /* ranks grouped by host, in rank order within */
        tlist_parse(a->topo[i].cpuset, &pu[i]);
        tlist_parse(a->topo[i].cores, &core[i]);
        start[a->topo[i].hostix + 1]++;
    }
    for (size_t h = 0; h < a->nthost; h++)
        start[h + 1] += start[h];
    {
        size_t *fill = calloc(a->nthost + 1, sizeof *fill);
        if (!fill)
            goto out;
        for (size_t i = 0; i < T; i++)
            ix[start[a->topo[i].hostix] + fill[a->topo[i].hostix]++] = i;
        free(fill);
    }
    rc = 0;
    for (size_t h = 0; h < a->nthost && !rc; h++) {
        size_t n = 0;
        long what = -1;
        for (size_t p = start[h]; p < start[h + 1]; p++) {
            size_t i = ix[p];
            if (a->topo[i].bound != 1)
                continue;
            for (size_t q = p + 1; q < start[h + 1]; q++) {
                size_t k = ix[q];
                if (a->topo[k].bound != 1)
                    continue;
                long c_pu = tlist_common(&pu[i], &pu[k]), c_core = tlist_common(&core[i], &core[k]);
                if (same ? c_pu >= 0 : c_pu < 0 && c_core >= 0) {
                    if (what < 0)
                        what = same ? c_pu : c_core;
                    in[i] = in[k] = 1;
                }
            }
        }
        for (size_t p = start[h]; p < start[h + 1]; p++)
            if (in[ix[p]])
                rk[n++] = a->topo[ix[p]].rank;
        if (!n)
            continue;
        int32_t *ranks = malloc(n * sizeof *ranks);
        if (!ranks) {
            rc = -1;
            break;
        }
        memcpy(ranks, rk, n * sizeof *ranks);
        const char *host = a->thost[h].host;
        char list[256], msg[1024];
        xsm_fmt_ranks(list, sizeof list, ranks, n);
        if (same) {
            snprintf(msg, sizeof msg,
                     "ranks %s on %s are bound to the same hardware threads (PU %ld among them): they take turns "
                     "on them, each computing at a fraction of its speed",
                     list, host, what);
            rc = add(a, "Shared hardware thread", "high", ranks, n, msg,
                     "give each rank its own core: mpirun --bind-to core with at most one rank per core "
                     "(check --cpu-set and --map-by), or fewer ranks per node");
        } else {
            snprintf(msg, sizeof msg,
                     "ranks %s on %s are bound to different hardware threads of the same core (core %ld among "
                     "them): they share its execution units and caches",
                     list, host, what);
            rc = add(a, "Shared core", "medium", ranks, n, msg,
                     "bind to whole cores (mpirun --bind-to core) unless the code is known to gain from SMT");
        }
    }
out:
    free(ix);
    free(start);
    free(pu);
    free(core);
    free(in);
    free(rk);
    return rc;
}

/* The ranks of topo whose flag(x) holds, in a fresh array (NULL none). */
static int32_t *ranks_where(const xsm_an *a, int (*flag)(const xsm_toporank *), size_t *n)
{
    *n = 0;
    int32_t *v = malloc((a->ntopo + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < a->ntopo; i++)
        if (flag(&a->topo[i]))
            v[(*n)++] = a->topo[i].rank;
    return v;
}

static int is_unbound(const xsm_toporank *x) { return x->bound == 0 && x->ncores_host > 1; }

static int spans_numa(const xsm_toporank *x)
{
    xsm_tlist l;
    tlist_parse(x->numa, &l);
    return x->bound == 1 && tlist_count(&l) > 1;
}

/* It ran GPU work, its host has GPUs whose NUMA nodes are known, and none
 * of them is on a NUMA node of its binding. */
static int gpu_remote(const xsm_toporank *x)
{
    if (!x->used_gpu || !*x->gpu_numa || !*x->numa)
        return 0;
    xsm_tlist mine;
    tlist_parse(x->numa, &mine);
    int known = 0;
    for (const char *p = x->gpu_numa; p && *p;) {
        const char *eq = strchr(p, '=');
        if (!eq)
            break;
        long node = strtol(eq + 1, NULL, 10);
        if (node >= 0) {
            known = 1;
            xsm_tlist one = {.n = 1, .lo = {node}, .hi = {node}};
            if (tlist_common(&mine, &one) >= 0)
                return 0;
        }
        p = strchr(eq, ',');
        p = p ? p + 1 : NULL;
    }
    return known;
}

static int per_node_findings(xsm_an *a)
{
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t h = 0; h < a->nthost; h++) {
        lo = a->thost[h].ranks < lo ? a->thost[h].ranks : lo;
        hi = a->thost[h].ranks > hi ? a->thost[h].ranks : hi;
    }
    if (a->nthost < 2 || lo == hi)
        return 0;
    char msg[2048];
    int used = snprintf(msg, sizeof msg, "the nodes run %zu to %zu ranks:", lo, hi);
    for (size_t h = 0; h < a->nthost && used > 0 && (size_t)used < sizeof msg; h++)
        used += snprintf(msg + used, sizeof msg - (size_t)used, "%s %s %zu", h ? "," : "", a->thost[h].host,
                         a->thost[h].ranks);
    size_t n = 0;
    int32_t *ranks = malloc((a->ntopo + 1) * sizeof *ranks);
    if (!ranks)
        return -1;
    for (size_t i = 0; i < a->ntopo; i++) /* the ranks of the fullest nodes */
        if (a->thost[a->topo[i].hostix].ranks == hi)
            ranks[n++] = a->topo[i].rank;
    return add(a, "Unequal ranks per node", "low", ranks, n, msg,
               "place the same number of ranks on every node (mpirun --map-by ppr:N:node), or give the fuller "
               "nodes less work: their ranks share memory bandwidth and the network link");
}

int xsm_topo_findings(xsm_an *a)
{
    if (!a->ntopo)
        return 0;
    if (shared_findings(a, 1) != 0 || shared_findings(a, 0) != 0)
        return -1;
    static const struct {
        int (*flag)(const xsm_toporank *);
        const char *kind, *severity, *one, *many, *what, *rec;
    } k[] = {
        {is_unbound, "Unbound ranks", "low", "is", "are",
         "not bound to cores (their cpuset is the whole machine): the OS may move them between cores and "
         "NUMA nodes, away from their caches and memory",
         "bind them: mpirun --bind-to core (or --bind-to numa for threaded ranks)"},
        {spans_numa, "Binding spans NUMA nodes", "medium", "is", "are",
         "bound to cores of more than one NUMA node: part of their memory is remote",
         "bind each rank within one NUMA node (mpirun --bind-to numa, or --map-by numa with --bind-to core)"},
        {gpu_remote, "GPU on another NUMA node", "medium", "", "",
         "ran GPU work while no GPU of their node sits on the NUMA node of their cores: every copy crosses the "
         "inter-socket link",
         "bind each rank to the cores next to its GPU (mpirun --map-by numa, or a GPU-aware binding script)"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        size_t n;
        int32_t *ranks = ranks_where(a, k[i].flag, &n);
        if (!ranks)
            return -1;
        if (!n) {
            free(ranks);
            continue;
        }
        char list[256], msg[1024];
        xsm_fmt_ranks(list, sizeof list, ranks, n);
        const char *verb = n == 1 ? k[i].one : k[i].many;
        snprintf(msg, sizeof msg, "rank%s %s %s%s%s", n == 1 ? "" : "s", list, verb, *verb ? " " : "", k[i].what);
        if (add(a, k[i].kind, k[i].severity, ranks, n, msg, k[i].rec) != 0)
            return -1;
    }
    return per_node_findings(a);
}
