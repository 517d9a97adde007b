/* merge/main.c — the xsmerge command: options, the stages (read -> align ->
 * match in xsm_run_load_par, then emit and the analysis), and the output
 * directory discipline: every product is written into a staging directory
 * inside OUT_DIR and renamed into place only when all of them succeeded, so
 * a failed merge never leaves output that looks complete. */
#include "merge/analyze/analyze.h"
#include "merge/analyze/score.h"
#include "merge/emit/emit.h"
#include "merge/live/live.h"
#include "merge/par.h"
#include "merge/progress.h"
#include "merge/staging.h"
#include "merge/read/read.h"
#include "merge/stream/stream.h"
#include "merge/util.h"
#include "xsprof_config.h"

#include <dirent.h>
#include <hdf5.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char xsm_usage[] =
    "usage: xsmerge RUN_DIR -o OUT_DIR [options]\n"
    "       xsmerge --score RUN_DIR [--score-for 10x|DURATION]\n"
    "       xsmerge --live RUN_DIR [--port N] [--tty] ...  (watch a running job;\n"
    "                             xsmerge --live --help)\n"
    "\n"
    "Merges the per-rank files of an xsprof run (RUN_DIR/rank-NNNNN.h5, and the\n"
    "journals rank-NNNNN.xsj of ranks that died) into one aligned timeline and\n"
    "its analysis. Writes into OUT_DIR: trace.pftrace (Perfetto), trace.json\n"
    "(Chrome trace events; by default only while it fits one part, with\n"
    "--outputs json split into trace-partNN.json when larger),\n"
    "merged.h5, report.txt, report.json, report.html, flame.folded, flame.svg.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR      output directory (created if needed; required);\n"
    "                        products of an earlier merge not written again\n"
    "                        are removed from it\n"
    "  --partial             merge the readable ranks when some are missing,\n"
    "                        damaged or from another run (default: exit 1)\n"
    "  --from T, --to T      keep only events overlapping [T_from, T_to], times\n"
    "                        since the job's first event: 2.5s, 300ms, 40us, 100ns\n"
    "                        (a bare number is seconds); the report counts only\n"
    "                        the time inside the window\n"
    "  --ranks LIST          merge only these ranks, e.g. 0-7,12\n"
    "  --min-latency T       smallest send-begin to receive-end latency the clock\n"
    "                        correction enforces (default 0, at most 1s)\n"
    "  --baseline DIR        compare with a previous run (run or output dir, or a\n"
    "                        report.json); repeat it (or DIR,DIR) for several runs:\n"
    "                        their median is the reference and their spread the\n"
    "                        noise; exit 3 when a metric regressed beyond both\n"
    "                        --threshold and that spread\n"
    "  --threshold P%        regression threshold in percent (default 5%)\n"
    "  --diff DIR            also write a differential flame graph against DIR\n"
    "  --format callgrind    also write callgrind.out (for KCachegrind)\n"
    "  --outputs LIST        write only these products: any of pftrace, json,\n"
    "                        h5, report (default: all), and otf2 (trace.otf2,\n"
    "                        an OTF2 archive for Vampir and Scalasca; only when\n"
    "                        asked for)\n"
    "  --stream              write trace.pftrace (the products of --outputs\n"
    "                        with it), reading the rank files chunk by chunk:\n"
    "                        memory does not grow with the trace (the same trace\n"
    "                        files as without --stream, also with --from/--to\n"
    "                        and under mpirun, and with the logical clock;\n"
    "                        the reports from a streamed analysis); chosen by\n"
    "                        itself, with a note, when the run would not fit in\n"
    "                        half the available memory\n"
    "                        (XSPROF_MERGE_MEMORY_LIMIT bytes), or when its\n"
    "                        merge in memory would pass XSPROF_MERGE_STREAM_MB\n"
    "                        (1024; then with the in-memory analysis window:\n"
    "                        the same files)\n"
    "  --score               size the run instead of merging it: per region name\n"
    "                        its visits, bytes on disk, time per visit and share,\n"
    "                        the size of a longer run and a suggested\n"
    "                        XSPROF_FILTER; reads only the regions tables,\n"
    "                        writes nothing (report.json has the same `score`)\n"
    "  --score-for N         the longer run: 10x, or a duration (2h, 30m, 600s);\n"
    "                        default 10x\n"
    "  -q, --quiet           no progress bar, notes or summary\n"
    "  -h, --help            this text\n"
    "  --version             print the version\n"
    "\n"
    "collective mode: `mpirun -np K xsmerge RUN_DIR -o OUT_DIR` divides the rank\n"
    "files among K processes; the output is identical to a serial merge.\n"
    "\n"
    "environment: the XSPROF_* variables are listed in one table in README.md.\n"
    "xsmerge itself reads XSPROF_MERGE_JSON_PART_MB (trace.json part size,\n"
    "default 256), XSPROF_MERGE_H5_DEFLATE (merged.h5's deflate level 1-9,\n"
    "default 1; 0 stores its tables uncompressed), XSPROF_MERGE_UI_MB (size of\n"
    "trace.pftrace above which a note says how to open it, default 512),\n"
    "XSPROF_MERGE_THP=0 (no transparent huge pages for its big arrays) and\n"
    "XSPROF_MERGE_TIMES=1 (print the time of each phase).\n"
    "\n"
    "exit codes: 0 ok, 1 bad input or failure, 3 regression found (--baseline).\n";

enum { XSM_OUT_JSON = 1, XSM_OUT_PFTRACE = 2, XSM_OUT_H5 = 4, XSM_OUT_REPORT = 8, XSM_OUT_ALL = 15, XSM_OUT_OTF2 = 16 };

typedef struct xsm_opts {
    const char *run_dir, *out_dir;
    int outputs; /* XSM_OUT_* */
    int outputs_given;
    int stream;  /* --stream (1): bounded memory, trace.pftrace, trace.json and/or merged.h5; chosen by
                    xsm_stream_auto: XSM_STREAM_BUDGET or XSM_STREAM_BIG */
    int score;   /* --score: size the run, write nothing */
    xsm_load_opts load;
    xsm_report_opts report;
} xsm_opts;

/* "2.5s", "300ms", "40us", "100ns", bare seconds -> ns; -1 when malformed. */
static int64_t xsm_parse_time(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || !isfinite(v))
        return -1;
    double mul = 1e9;
    if (strcmp(end, "ns") == 0) mul = 1;
    else if (strcmp(end, "us") == 0) mul = 1e3;
    else if (strcmp(end, "ms") == 0) mul = 1e6;
    else if (strcmp(end, "s") == 0 || *end == 0) mul = 1e9;
    else return -1;
    double ns = v * mul;
    return ns > 9e18 ? -1 : (int64_t)ns;
}

/* --score: the run sized from its rank files, printed; nothing written. */
static int xsm_score_main(const char *run_dir, double score_for)
{
    xsm_score s;
    char err[16384] = "";
    if (xsm_score_files(&s, run_dir, score_for, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        xsm_score_free(&s);
        return 1;
    }
    xsm_buf b = {0};
    xsm_buf_printf(&b, "xsprof score of %s: ", run_dir);
    xsm_score_text(&s, &b, 30);
    int ok = !b.failed && b.p && fputs(b.p, stdout) >= 0 && fflush(stdout) == 0;
    xsm_buf_free(&b);
    xsm_score_free(&s);
    if (!ok)
        fprintf(stderr, "xsmerge: --score: cannot print the table\n");
    return ok ? 0 : 1;
}

/* Under mpirun every process parses the same command line: the first says it. */
/* The exit code of a usage error: 1 where it is said (serially, or process
 * 0 under mpirun), 0 on the other processes: the first process to exit
 * non-zero makes mpirun kill the others, process 0 possibly before it
 * said the error (merge_collective's "said once" under ASan, whose start
 * is slow); the job's status is 1 all the same. */
static int xsm_usage_rc(void) { return xsm_par_env_rank() <= 0 ? 1 : 0; }

static int xsm_bad_usage(const char *msg, const char *arg)
{
    if (xsm_par_env_rank() <= 0)
        fprintf(stderr, "xsmerge: %s%s%s\nTry 'xsmerge --help'.\n", msg, arg ? ": " : "", arg ? arg : "");
    return xsm_usage_rc();
}

/* Returns -1 to continue, else the exit code. */
static int xsm_parse_args(int argc, char **argv, xsm_opts *o)
{
    memset(o, 0, sizeof *o);
    o->report.threshold_pct = 5.0;
    o->outputs = XSM_OUT_ALL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define XSM_NEED_VAL()                                          \
    do {                                                        \
        if (!val)                                               \
            return xsm_bad_usage("option needs a value", a);    \
        i++;                                                    \
    } while (0)
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(xsm_usage, stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("xsmerge %s\n", XSPROF_VERSION_STRING);
            return 0;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            XSM_NEED_VAL();
            o->out_dir = val;
        } else if (strcmp(a, "--partial") == 0) {
            o->load.partial = 1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o->load.quiet = 1;
            o->report.quiet = 1;
        } else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0 || strcmp(a, "--min-latency") == 0) {
            XSM_NEED_VAL();
            int64_t t = xsm_parse_time(val);
            if (t < 0)
                return xsm_bad_usage("invalid time (use e.g. 2.5s, 300ms, 40us, 100ns)", val);
            /* a bare number is seconds: "5" meant 5 us, and every message
             * of a chain adds it (past 2^63 ns the times overflow) */
            if (a[2] == 'm' && t > 1000000000)
                return xsm_bad_usage("--min-latency must be at most 1s (a bare number is seconds)", val);
            if (a[2] == 't' && t == 0) /* 0 would read as "no limit" */
                return xsm_bad_usage("--to must be after the job's first event (the window counts from it, t = 0)",
                                     val);
            if (a[2] == 'f')
                o->load.from_ns = t;
            else if (a[2] == 't')
                o->load.to_ns = t;
            else
                o->load.min_latency_ns = t;
        } else if (strcmp(a, "--outputs") == 0) {
            XSM_NEED_VAL();
            o->outputs = 0;
            o->outputs_given = 1;
            /* the whole list, however long (a copy into 256 bytes dropped
             * what followed); empty entries (a,,b, a trailing comma) name
             * nothing */
            for (const char *tok = val; *tok; tok += strcspn(tok, ","), tok += *tok == ',') {
                size_t n = strcspn(tok, ",");
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(n < 255 ? n : 255), tok);
                if (n == 0) continue;
                else if (strcmp(name, "json") == 0) o->outputs |= XSM_OUT_JSON;
                else if (strcmp(name, "pftrace") == 0) o->outputs |= XSM_OUT_PFTRACE;
                else if (strcmp(name, "h5") == 0) o->outputs |= XSM_OUT_H5;
                else if (strcmp(name, "report") == 0) o->outputs |= XSM_OUT_REPORT;
                else if (strcmp(name, "otf2") == 0 && !XSPROF_HAVE_OTF2)
                    return xsm_bad_usage("otf2 is unavailable: this xsmerge was built without libotf2 (Debian: "
                                         "libotf2-trace-dev; install it and rebuild)", NULL);
                else if (strcmp(name, "otf2") == 0) o->outputs |= XSM_OUT_OTF2;
                else return xsm_bad_usage("unknown product in --outputs (known: pftrace, json, h5, report, otf2)", name);
            }
            if (!o->outputs)
                return xsm_bad_usage("--outputs names no product", val);
        } else if (strcmp(a, "--score") == 0) {
            o->score = 1;
        } else if (strcmp(a, "--score-for") == 0) {
            XSM_NEED_VAL();
            if ((o->report.score_for = xsm_score_for_parse(val)) == 0) {
                if (xsm_par_env_rank() <= 0) /* one line: the value is the whole problem */
                    fprintf(stderr, "xsmerge: --score-for: expected a factor or a duration (10x, 2h, 30m, 600s): %s\n",
                            val);
                return xsm_usage_rc();
            }
        } else if (strcmp(a, "--stream") == 0) {
            o->stream = 1;
        } else if (strcmp(a, "--ranks") == 0) {
            XSM_NEED_VAL();
            o->load.ranks = val;
        } else if (strcmp(a, "--baseline") == 0) {
            XSM_NEED_VAL();
            /* repeated: one comma list (analyze/baseline.c splits it) */
            static char list[16384];
            size_t used = strlen(list);
            if (snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "", val) >= (int)(sizeof list - used))
                return xsm_bad_usage("--baseline: too many or too long paths", val);
            o->report.baseline_dir = list;
        } else if (strcmp(a, "--threshold") == 0) {
            XSM_NEED_VAL();
            char *end;
            double p = strtod(val, &end);
            if (end == val || (*end && strcmp(end, "%") != 0) || !(p >= 0))
                return xsm_bad_usage("invalid threshold (use e.g. 5%)", val);
            o->report.threshold_pct = p;
        } else if (strcmp(a, "--diff") == 0) {
            XSM_NEED_VAL();
            o->report.diff_dir = val;
        } else if (strcmp(a, "--format") == 0) {
            XSM_NEED_VAL();
            if (strcmp(val, "callgrind") != 0)
                return xsm_bad_usage("unknown --format (known: callgrind)", val);
            o->report.callgrind = 1;
        } else if (a[0] == '-' && a[1]) {
            return xsm_bad_usage("unknown option", a);
        } else if (!o->run_dir) {
            o->run_dir = a;
        } else {
            return xsm_bad_usage("more than one RUN_DIR given", a);
        }
#undef XSM_NEED_VAL
    }
    if (!o->run_dir)
        return xsm_bad_usage("missing RUN_DIR", NULL);
    if (o->score)
        return -1; /* nothing is written: no OUT_DIR */
    if (!o->out_dir)
        return xsm_bad_usage("missing -o OUT_DIR", NULL);
    if (o->load.to_ns && o->load.to_ns < o->load.from_ns)
        return xsm_bad_usage("--to is before --from", NULL);
    /* the reports stream only when asked to: a streamed analysis leaves out
     * what needs the whole timeline */
    int streamable = !(o->outputs & ~(XSM_OUT_PFTRACE | XSM_OUT_JSON | XSM_OUT_H5 | XSM_OUT_OTF2));
    if (o->stream && !o->outputs_given)
        o->outputs = XSM_OUT_PFTRACE;
    /* they compare or extend the report: without it they would do nothing */
    if ((o->report.baseline_dir || o->report.diff_dir || o->report.callgrind) && !(o->outputs & XSM_OUT_REPORT))
        return xsm_bad_usage(o->report.baseline_dir ? "--baseline needs the report: add report to --outputs"
                             : o->report.diff_dir   ? "--diff needs the report: add report to --outputs"
                                                    : "--format callgrind needs the report: add report to --outputs",
                             NULL);
    const char *env = getenv("XSPROF_MERGE_STREAM");
    if (env && strcmp(env, "1") == 0 && streamable)
        o->stream = 1;
    return -1;
}

/* Products are written into the staging directory, which is gone when the
 * error is read: name the file where it was going (OUT/trace.json). */
static void xsm_err_unstage(char *err, size_t errlen, const char *staging, const char *out)
{
    size_t n = strlen(staging);
    char *at = strstr(err, staging);
    if (!at || at[n] != '/')
        return;
    char tail[8192];
    snprintf(tail, sizeof tail, "%s", at + n);
    snprintf(at, errlen - (size_t)(at - err), "%s%s", out, tail);
}

/* A file a merge writes into OUT_DIR (the products and trace.json's parts). */
static int xsm_is_product(const char *name)
{
    static const char *const names[] = {"trace.pftrace", "trace.json",   "merged.h5",     "report.txt",
                                        "report.json",   "report.html",  "flame.folded",  "flame.svg",
                                        "flame-diff.svg", "callgrind.out", "trace.otf2",   "trace.def",
                                        "flame-samples.folded", "flame-samples.svg"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return strncmp(name, "trace-part", 10) == 0 && strlen(name) > 15 && strcmp(name + strlen(name) - 5, ".json") == 0;
}

/* Move every file of staging into out; drop the products of an earlier
 * merge that this one does not replace (a part count may have shrunk,
 * --outputs or --format may ask for less): a merged.h5 or report of
 * another run beside the new trace would pass for this merge's. */
static int xsm_publish(const char *staging, const char *out, char *err, size_t errlen)
{
    char a[8192], b[8192];
    DIR *d = opendir(out);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!xsm_is_product(e->d_name))
                continue;
            xsm_path(a, sizeof a, staging, e->d_name);
            if (access(a, F_OK) != 0) {
                xsm_path(b, sizeof b, out, e->d_name);
                unlink(b);
                if (strcmp(e->d_name, "trace.otf2") == 0) { /* the archive's event files */
                    xsm_path(b, sizeof b, out, "trace");
                    xsm_staging_rm(b);
                }
            }
        }
        closedir(d);
    }
    d = opendir(staging);
    if (!d)
        return xsm_err_set(err, errlen, "xsmerge: %s: %s", staging, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        xsm_path(a, sizeof a, staging, e->d_name);
        xsm_path(b, sizeof b, out, e->d_name);
        if (strcmp(e->d_name, "trace") == 0) /* an earlier trace.otf2's event files */
            xsm_staging_rm(b);
        if (rename(a, b) != 0 && !rc)
            rc = xsm_err_set(err, errlen, "xsmerge: %s: %s", b, strerror(errno));
    }
    closedir(d);
    rmdir(staging);
    return rc;
}

enum { XSM_TASK_JSON, XSM_TASK_PFTRACE, XSM_TASK_H5, XSM_TASK_OTF2, XSM_TASK_N };

/* Which process writes which product: merged.h5 on process 0, trace.json
 * and trace.otf2 (both iterate every rank in time order) on the last. */
static int xsm_task_owner(int task, int size)
{
    return task == XSM_TASK_JSON || task == XSM_TASK_OTF2 ? size - 1 : 0;
}

/* Which process runs the analysis (the reports, the summary on stdout, and
 * merged.h5's analysis tables, added once the file is complete). Across
 * nodes process 0, which wrote merged.h5: no process opens a file another
 * node wrote, whatever the file system. On one node another process: with
 * two, trace.json's (done long before merged.h5: under mpirun each process
 * is bound to one core, and process 0 took merged.h5 and the analysis on
 * it, 2.4 + 1 s, while the other wrote trace.json in 0.8 s and waited); with
 * three or more, process 1, which writes neither. */
static int xsm_report_owner(const xsm_par *par)
{
    if (par->size < 2 || par->local != par->size)
        return 0;
    return par->size >= 3 ? 1 : par->size - 1;
}

/* on: keep freed memory for reuse. Loading, matching and trace preparation
 * allocate and free hundreds of MB, and giving it back to the kernel only
 * to fault it in again page by page cost a tenth of the run; one arena, so
 * that threads reuse what the others freed. off (glibc's mmap for large
 * blocks): the writers and the analysis allocate large arrays of their own,
 * and heap fragmentation would then raise the peak; but up to 64 MiB free
 * at the top of the heap stay: HDF5 allocates and frees chunk buffers
 * there, and with a 128 KiB threshold every free gave the pages back and
 * every allocation faulted them in again (merged.h5 under mpirun 1.5 ->
 * 3.0 s once the message table moved out of the heap, see match.c). */
static void xsm_malloc_reuse(int on)
{
    mallopt(M_MMAP_MAX, on ? 0 : 65536);
    mallopt(M_TRIM_THRESHOLD, on ? INT_MAX : 64 << 20);
    if (on)
        mallopt(M_ARENA_MAX, 1);
}

/* Bytes of memory the in-memory merge may take: XSPROF_MERGE_MEMORY_LIMIT,
 * else half of what the kernel says is available (0: unknown). */
static uint64_t xsm_memory_budget(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)xsm_env_num("XSPROF_MERGE_MEMORY_LIMIT", (double)kb * 1024 / 2, 0, 0x1p62);
}

/* A browser gives the Perfetto UI about 2 GB, and its trace processor
 * takes 2-4x the file's size (perfetto.dev/docs/visualization/large-traces):
 * past XSPROF_MERGE_UI_MB (default 512) say how to open the trace. */
static void xsm_note_large_trace(const char *out_dir, FILE *notes)
{
    char path[8300];
    struct stat st;
    double mb = xsm_env_num("XSPROF_MERGE_UI_MB", 512, 0, 0x1p30);
    snprintf(path, sizeof path, "%s/trace.pftrace", out_dir);
    if (!notes || stat(path, &st) != 0 || (double)st.st_size <= mb * (1 << 20))
        return;
    double size = (double)st.st_size;
    fprintf(notes,
            "xsmerge: note: %s is %.*f %s, likely more than the Perfetto UI can load in a browser (about 2 GB of "
            "memory, 2-4x the file): open it with `trace_processor --httpd %s` and https://ui.perfetto.dev "
            "(https://perfetto.dev/docs/visualization/large-traces), or merge a part with --from/--to/--ranks\n",
            path, size < 1e9 ? 0 : 1, size < 1e9 ? size / 1e6 : size / 1e9, size < 1e9 ? "MB" : "GB", path);
}

/* Bytes of trace.pftrace that may wait in memory for their place in the
 * file, then in a spill file copied into place (emit/place.h). Not in the
 * estimate below: the budget is half of the memory available, and serially
 * only part of a rank's bytes wait (35-65 MiB for the 5 M-event ring). */
#define XSM_PF_HOLD ((uint64_t)512 << 20)

/* A run whose model passes XSPROF_MERGE_STREAM_MB streams even when it fits
 * the budget: there the streamed merge writes the same products (the
 * in-memory analysis window, XSM_MEMORY_WINDOW) in about the same time and a
 * few tens of MiB (NetPIPE, 9.8 M events: 1.7 GiB in memory, 53 MiB
 * streamed; benchmarks/README "The default merge of a big run"). 0: never
 * for its size alone. */
static uint64_t xsm_stream_above(void)
{
    return (uint64_t)(xsm_env_num("XSPROF_MERGE_STREAM_MB", 1024, 0, 0x1p40) * (1 << 20));
}

/* What the model may take before the run streams: the budget, or less. */
static uint64_t xsm_stream_limit(uint64_t budget)
{
    uint64_t above = xsm_stream_above();
    return above && above < budget ? above : budget;
}

/* 0: in memory; XSM_STREAM_BUDGET: stream, the model would not fit the
 * budget (the bounded window); XSM_STREAM_BIG: stream, the run is big
 * (xsm_stream_above; the in-memory window). */
enum { XSM_STREAM_BUDGET = 1, XSM_STREAM_BIG = 2 };

/* When the model of the run would not fit the memory budget, or pass
 * xsm_stream_limit, stream instead (with a note). The model
 * holds every row as io/format.h lays it out plus, per event, about 45
 * bytes of matching and trace preparation (order, messages, flows) and 100
 * with the report's analysis (measured on a ring of sends and receives,
 * 5 M events: 113 and 178 bytes per event; merge/README "Memory bound").
 * Rank files compress 1-4 bytes per event, so their size only tells when a
 * run surely fits; beyond that the tables' lengths are read from the files. */
static int xsm_stream_estimate(const xsm_opts *o, uint64_t budget, int procs, FILE *notes)
{
    xsm_candidate *c = NULL;
    size_t n = 0;
    char err[256];
    if (xsm_read_scan(o->run_dir, &c, &n, err, sizeof err))
        return 0; /* the merge reports it */
    uint64_t limit = xsm_stream_limit(budget);
    uint64_t rows = 0, need = limit ? xsm_read_need(c, n, limit, (o->outputs & XSM_OUT_REPORT) ? 100 : 45, &rows) : 0;
    free(c);
    if (need <= limit)
        return 0;
    /* streaming holds up to ~0.5 MB per rank file (chunks and windows of
     * every rank at once; merge/README "Memory bound"): for many ranks of
     * few events that is more than the model */
    uint64_t sneed = (uint64_t)n * (1u << 19);
    int better = sneed < need;
    if (need <= budget) { /* only big: no note when streaming would not gain */
        if (better && notes)
            fprintf(notes, "xsmerge: note: merging %.0f events in memory would take about %.1f GiB: streaming them "
                    "(the same files in bounded memory; XSPROF_MERGE_STREAM_MB=0 merges in memory)\n",
                    (double)rows, (double)need / (1u << 30));
        return better ? XSM_STREAM_BIG : 0;
    }
    if (notes)
        fprintf(notes, "xsmerge: note: merging %.0f events in memory would take about %.1f GiB (budget %.1f GiB%s): %s\n",
                (double)rows, (double)need / (1u << 30), (double)budget / (1u << 30),
                procs > 1 ? " per process" : "",
                !better ? "trying anyway; streaming its rank files would take more" : "streaming");
    return better ? XSM_STREAM_BUDGET : 0;
}

/* Under mpirun every process holds the whole model (par.h; its event
 * tables once for all the node's, which this share does not count), so the
 * processes of a node share its budget, the least share decides, and
 * process 0 decides for all (one note, one choice). */
static int xsm_stream_auto(const xsm_opts *o, const xsm_par *par, FILE *notes)
{
    if (o->stream)
        return 0;
    uint64_t budget = xsm_par_min_u64(par, xsm_memory_budget() / (uint64_t)par->local);
    int on = par->rank == 0 ? xsm_stream_estimate(o, budget, par->size, notes) : 0;
    return (int)xsm_par_bcast_i64(par, on);
}

/* Set when streaming gave up on a rank file it could not read chunk by
 * chunk: said once the in-memory merge read it (if it fails it says why). */
static int xsm_stream_fell_back;

/* --stream: returns the exit code, or -1 to merge in memory (a note says
 * why). */
static int xsm_stream_main(const xsm_opts *o, const xsm_par *par, FILE *notes, char *err, size_t errlen)
{
    /* as the in-memory flow: one staging directory named by process 0 */
    int lead = par->rank == 0, first = 0, rc = 0;
    char staging[8192];
    int64_t pid = xsm_par_bcast_i64(par, (int64_t)getpid());
    xsm_staging_path(staging, sizeof staging, o->out_dir, pid, xsm_par_bcast_i64(par, xsm_staging_host()));
    int made = 0;
    if (lead)
        rc = xsm_staging_make(o->out_dir, staging, &made, notes, err, errlen);
    if (xsm_par_agree(par, rc, 1, &first)) {
        if (lead)
            fprintf(stderr, "%s\n", err);
        return 1;
    }
    xsm_staging_guard(staging);
    xsm_stream_summary sum = {0};
    int what = (o->outputs & XSM_OUT_PFTRACE ? XSM_STREAM_PFTRACE : 0) | (o->outputs & XSM_OUT_JSON ? XSM_STREAM_JSON : 0) |
               (o->outputs & XSM_OUT_H5 ? XSM_STREAM_H5 : 0) | (o->outputs & XSM_OUT_REPORT ? XSM_STREAM_REPORT : 0) |
               (o->outputs & XSM_OUT_OTF2 ? XSM_STREAM_OTF2 : 0) |
               (o->outputs & XSM_OUT_JSON && !o->outputs_given ? XSM_STREAM_JSON_WHOLE : 0);
    xsm_report_opts ro = o->report;
    ro.summary = o->report.quiet ? NULL : stdout;
    ro.keep = NULL;
    if (o->stream == XSM_STREAM_BIG) /* the products of the in-memory merge */
        ro.window = XSM_MEMORY_WINDOW;
    int mine = xsm_stream_merge(o->run_dir, &o->load, staging, notes, xsm_cpu_share(par->local), what,
                                par->share ? par : NULL, &ro, &sum, err, errlen);
    rc = xsm_par_agree(par, mine, 1, &first); /* the same everywhere */
    if (rc == 2) {
        xsm_par_barrier(par);
        xsm_staging_guard(NULL);
        if (lead) {
            xsm_staging_rm(staging);
            if (made)
                rmdir(o->out_dir); /* the in-memory merge makes it again once it may write */
            /* a reader's error is said again by the in-memory merge: not
             * twice, and the note only if that merge gets through */
            if (notes && (strncmp(err, "xsmerge: ", 9) == 0 || !err[0]))
                xsm_stream_fell_back = 1;
            else if (notes)
                fprintf(notes, "xsmerge: note: streaming: %s; merging in memory\n", err);
        }
        xsm_par_barrier(par); /* the in-memory merge makes the staging directory again */
        err[0] = 0;
        return -1;
    }
    if (rc == 1 && mine == 1 && par->rank == first) {
        xsm_err_unstage(err, errlen, staging, o->out_dir);
        fprintf(stderr, "%s\n", err);
    }
    xsm_par_barrier(par);
    xsm_staging_guard(NULL);
    if (!lead)
        return rc;
    if (rc == 0 && xsm_publish(staging, o->out_dir, err, errlen)) {
        fprintf(stderr, "%s\n", err);
        rc = 1;
    }
    if (rc) {
        xsm_staging_rm(staging);
        if (made)
            rmdir(o->out_dir); /* only when empty: nothing of the user's goes */
        return 1;
    }
    if (notes)
        fprintf(stderr, "xsmerge: %zu ranks, %llu messages, %llu collectives; clock violations %llu -> %llu; wrote %s\n",
                sum.nranks, (unsigned long long)sum.nmsgs, (unsigned long long)sum.ncolls,
                (unsigned long long)sum.violations_before, (unsigned long long)sum.violations_after, o->out_dir);
    xsm_note_large_trace(o->out_dir, notes);
    return sum.report_rc;
}

/* trace.otf2 from the model (under mpirun by the process that writes it;
 * notes NULL: -q). */
static int xsm_otf2_main(xsm_emit *e, const char *dir, FILE *notes, char *err, size_t errlen)
{
#if XSPROF_HAVE_OTF2
    if (xsm_emit_marks(e))
        return xsm_err_set(err, errlen, "xsmerge: out of memory writing trace.otf2");
    return xsm_emit_otf2(e, xsm_emit_source_calls(), dir, notes, err, errlen);
#else
    (void)e, (void)dir, (void)notes;
    return xsm_err_set(err, errlen, "xsmerge: otf2 is unavailable: built without libotf2");
#endif
}

/* The analysis only reads the run, as the trace writers do, so it runs on
 * its own thread beside them (trace.pftrace, trace.json, merged.h5), which
 * then take a core fewer (xsm_emit_threads). Its one-screen summary is
 * held until the writers finish so that it never cuts through their
 * progress bar. */
typedef struct xsm_an_job {
    const xsm_run *run;
    const char *dir;
    xsm_report_opts opts;
    char *summary;
    size_t summary_len;
    int rc, started;
    pthread_t t;
    struct xsm_an *an; /* kept for merged.h5's analysis tables */
    int *beside;       /* xsm_emit.an_beside: set while it runs (NULL: none) */
    char err[4096];
} xsm_an_job;

static void *xsm_an_job_run(void *p)
{
    xsm_an_job *j = p;
    j->rc = xsm_analyze_run(j->run, j->dir, &j->opts, j->err, sizeof j->err);
    if (j->beside)
        __atomic_store_n(j->beside, 0, __ATOMIC_RELAXED);
    if (j->rc != 0 && j->rc != 3 && !j->err[0])
        xsm_err_set(j->err, sizeof j->err, "xsmerge: analysis failed");
    return NULL;
}

/* Starts the analysis (on a thread when `concurrent` and one can be made,
 * else now, on this one); `keep`: hold its results for merged.h5; *beside
 * (when not NULL) is 1 while it runs. */
static void xsm_an_job_start(xsm_an_job *j, const xsm_run *run, const char *dir, const xsm_report_opts *opts,
                             int concurrent, int keep, int *beside)
{
    memset(j, 0, sizeof *j);
    j->beside = beside;
    if (beside)
        __atomic_store_n(beside, 1, __ATOMIC_RELAXED);
    j->run = run;
    j->dir = dir;
    j->opts = *opts;
    j->opts.keep = keep ? &j->an : NULL;
    j->opts.summary = NULL;
    if (!opts->quiet)
        j->opts.summary = open_memstream(&j->summary, &j->summary_len);
    /* a baseline given as a run directory is merged by the analysis, with
     * the progress bar and the reader's threads of a merge: not beside the
     * writers */
    if (opts->baseline_dir || opts->diff_dir)
        concurrent = 0;
    if (concurrent && pthread_create(&j->t, NULL, xsm_an_job_run, j) == 0) {
        j->started = 1;
        return;
    }
    xsm_an_job_run(j);
}

/* Waits for the analysis, prints its summary (when `print`: not after a
 * writer failed); returns its code (err set). */
static int xsm_an_job_end(xsm_an_job *j, int print, char *err, size_t errlen)
{
    if (j->started)
        pthread_join(j->t, NULL);
    xsm_progress_mark("analysis");
    if (j->opts.summary) {
        fclose(j->opts.summary);
        if (print && j->summary_len)
            fwrite(j->summary, 1, j->summary_len, stdout);
        fflush(stdout);
    }
    free(j->summary);
    if (j->rc != 0 && j->rc != 3)
        snprintf(err, errlen, "%s", j->err);
    return j->rc;
}

int main(int argc, char **argv)
{
    /* Every HDF5 file is closed explicitly before exit. HDF5's own exit
     * hook would only add a second stderr line ("infinite loop closing
     * library") after an error on a damaged input it could not close. */
    H5dont_atexit();
    /* past a file size limit (ulimit -f) a write fails with EFBIG and the
     * merge says which file, as for a full disk, instead of dying of the
     * signal (a launcher like mpirun resets what the shell set) */
    signal(SIGXFSZ, SIG_IGN);
    xsm_malloc_reuse(1);
    for (int i = 1; i < argc; i++) /* the live view has options of its own (merge/live) */
        if (strcmp(argv[i], "--live") == 0)
            return xsm_live_main(argc, argv);
    xsm_opts o;
    int rc = xsm_parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    char err[16384] = ""; /* room for a message naming paths of PATH_MAX */
    if (o.score) /* under mpirun the first process alone: one table, not one per process */
        return xsm_par_env_rank() > 0 ? 0 : xsm_score_main(o.run_dir, o.report.score_for);
    /* collective mode: this process's rank files load while MPI starts
     * (XSPROF_MERGE_EARLY=0: after; =N: at most N of them) */
    int prank, plocal; /* on this node, which loads every file */
    const char *early = getenv("XSPROF_MERGE_EARLY");
    long early_max = early && *early ? strtol(early, NULL, 10) : LONG_MAX;
    if (!o.stream && early_max > 0 && xsm_par_place(&prank, &plocal)) {
        /* not for a run xsm_stream_auto will stream */
        o.load.early = xsm_read_early_start(o.run_dir, &o.load, prank, plocal, xsm_cpu_share(plocal),
                                            xsm_stream_limit(xsm_memory_budget() / (uint64_t)plocal),
                                            (size_t)early_max);
    }
    xsm_par par;
    if (xsm_par_start(&argc, &argv, &par, err, sizeof err)) {
        xsm_early_cancel(o.load.early);
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    /* under a launcher MPI is initialised: no helper processes then (a
     * baseline run loaded by the analysis would otherwise fork) */
    xsm_read_allow_fork(par.share == NULL);
    int lead = par.rank == 0;
    xsm_progress_enable(lead && !o.load.quiet && isatty(2));
    xsm_progress_process(par.rank, par.size);
    FILE *notes = lead && !o.load.quiet ? stderr : NULL;

    int why = xsm_stream_auto(&o, &par, notes);
    if (why)
        o.stream = why;
    if (o.stream) {
        xsm_early_cancel(o.load.early);
        o.load.early = NULL;
        rc = xsm_stream_main(&o, &par, notes, err, sizeof err);
        if (rc >= 0) {
            xsm_par_end(&par);
            return rc;
        }
    }
    xsm_run run;
    /* processes on one node map each other's event tables, each converting
     * the times of its own; a time window compacts tables in every process */
    par.map_ok = !(o.load.from_ns > 0 || o.load.to_ns > 0);
    rc = xsm_run_load_par(o.run_dir, &o.load, par.share ? &par : NULL, notes, &run, err, sizeof err);
    o.load.early = NULL; /* the load used or cancelled it */
    /* threads start from here on: a baseline run loaded later is read here */
    xsm_read_allow_fork(0);
    /* every process validated the same data, so the errors agree; but a
     * node may fail alone (out of memory sharing its tables): all end, and
     * the first that failed speaks */
    int first;
    if (xsm_par_agree(&par, rc, 1, &first)) {
        if (par.rank == first)
            fprintf(stderr, "%s\n", err);
        if (!rc)
            xsm_run_free(&run);
        xsm_par_end(&par);
        return 1;
    }

    char staging[8192];
    int64_t pid = xsm_par_bcast_i64(&par, (int64_t)getpid());
    xsm_staging_path(staging, sizeof staging, o.out_dir, pid, xsm_par_bcast_i64(&par, xsm_staging_host()));
    int made = 0;
    if (lead)
        rc = xsm_staging_make(o.out_dir, staging, &made, notes, err, sizeof err);
    if (xsm_par_agree(&par, rc, 1, &first)) {
        if (lead)
            fprintf(stderr, "%s\n", err);
        xsm_run_free(&run);
        xsm_par_end(&par);
        return 1;
    }
    xsm_staging_guard(staging);

    /* Which ranks this process iterates: all for trace.json and trace.otf2,
     * else its share of the trace.pftrace segments (merged.h5 reads rows
     * directly). */
    unsigned char *order = NULL;
    int all_ranks = ((o.outputs & XSM_OUT_JSON) && xsm_task_owner(XSM_TASK_JSON, par.size) == par.rank) ||
                    ((o.outputs & XSM_OUT_OTF2) && xsm_task_owner(XSM_TASK_OTF2, par.size) == par.rank);
    if (!(o.outputs & (XSM_OUT_JSON | XSM_OUT_PFTRACE | XSM_OUT_OTF2))) {
        order = calloc(run.nranks + 1, 1); /* merged.h5 and the report need no time order */
    } else if (par.size > 1 && !all_ranks) {
        order = calloc(run.nranks + 1, 1);
        for (size_t r = (size_t)par.rank; order && (o.outputs & XSM_OUT_PFTRACE) && r < run.nranks; r += (size_t)par.size)
            order[r] = 1; /* as xsm_par_pftrace divides */
    }
    xsm_emit e;
    memset(&e, 0, sizeof e);
    /* the report works on the run itself: no trace preparation for it alone */
    int emit_all = 0; /* prepared for every rank: the analysis reads its orders and flows too */
    if (o.outputs & (XSM_OUT_JSON | XSM_OUT_PFTRACE | XSM_OUT_H5 | XSM_OUT_OTF2)) {
        rc = xsm_emit_init(&e, &run, order, err, sizeof err);
        emit_all = !rc && !order;
    }
    e.threads = xsm_cpu_share(par.local);
    e.hold = XSM_PF_HOLD;
    xsm_malloc_reuse(0);
    free(order);
    xsm_progress_mark("emit-init");
    /* trace.pftrace is written by all processes together (collective call,
     * so first and on every process, once all could prepare); the other
     * products by one each */
    /* the report's addresses: each process resolves those of its share of
     * the ranks, the report's process then finds them resolved (issue 34) */
    int share = !rc && par.size > 1 && (o.outputs & XSM_OUT_REPORT);
    if (share) {
        uint64_t n = 0;
        rc = xsm_an_symbols_share(&run, par.rank, par.size, staging, &n, err, sizeof err) ? 1 : 0;
        run.sym_share_dir = staging;
        run.sym_share_parts = par.size;
        char phase[96];
        snprintf(phase, sizeof phase, "symbols (%llu addresses, this process's share)", (unsigned long long)n);
        xsm_progress_mark(phase);
    }
    /* every process has shared its addresses (a collective call) before
     * the analysis reads them */
    int ready = xsm_par_agree(&par, rc, 1, &first) == 0;
    static const int task_flag[XSM_TASK_N] = {XSM_OUT_JSON, 0, XSM_OUT_H5, XSM_OUT_OTF2};
    xsm_an_job an;
    int an_on = !rc && par.rank == xsm_report_owner(&par) && (o.outputs & XSM_OUT_REPORT);
    if (an_on) {
        int mine = 0;
        for (int t = 0; t < XSM_TASK_N; t++)
            mine |= xsm_task_owner(t, par.size) == par.rank && (o.outputs & task_flag[t]);
        xsm_report_opts ro = o.report;
        ro.emit = emit_all ? &e : NULL;
        xsm_an_job_start(&an, &run, staging, &ro, mine, (o.outputs & XSM_OUT_H5) != 0, &e.an_beside);
    }
    if (ready && (o.outputs & XSM_OUT_PFTRACE)) {
        int prc = xsm_par_pftrace(&par, &e, staging, err, sizeof err);
        if (!rc)
            rc = prc;
        xsm_progress_mark("pftrace");
    }
    /* the other products go one to a process and end at different times:
     * merged.h5's encoders may use the cores of the node (within this
     * process's affinity) that the others leave (5 M-event ring, all
     * products, 2 processes: 3.72 -> 3.45 s, median of 3) */
    if (par.size > 1)
        e.threads = xsm_cpu_share(1);
    /* merged.h5's chunks are encoded by the processes that write no other
     * product too (all products: with 4 or more processes; a cluster's
     * merge has many idle ones), so that the writer mostly stores them;
     * not where the node has fewer cores than processes: the helper then
     * takes a core from the other products and the writer waits for it
     * (5 M-event ring, all products, `mpirun -np 4` on 2 cores: 3.99 ->
     * 4.34 s, median of 5) */
    xsm_h5_share h5sh;
    int h5help = 0;
    if (ready && par.size > 1 && (o.outputs & XSM_OUT_H5)) {
        int other = ((o.outputs & XSM_OUT_JSON) && xsm_task_owner(XSM_TASK_JSON, par.size) == par.rank) ||
                    ((o.outputs & XSM_OUT_REPORT) && xsm_report_owner(&par) == par.rank);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int crowded = cpus > 0 && par.local > cpus;
        if (xsm_par_h5_share(&par, rc, !other && !crowded, xsm_emit_h5_level(), &h5sh)) {
            e.h5share = &h5sh;
            h5help = h5sh.me > 0;
        }
    }
    if (h5help) {
        e.threads = xsm_cpu_share(par.local); /* the node's other helpers encode too */
        rc = xsm_emit_h5_help(&e) ? xsm_err_set(err, sizeof err, "xsmerge: out of memory writing merged.h5") : 0;
        xsm_progress_mark("merged.h5 (helping)");
    }
    for (int t = 0; !rc && t < XSM_TASK_N; t++) {
        if (xsm_task_owner(t, par.size) != par.rank || !(o.outputs & task_flag[t]))
            continue;
        if (t == XSM_TASK_JSON) {
            e.json_whole = !o.outputs_given;
            rc = xsm_emit_json(&e, staging, err, sizeof err);
            if (rc == 2) { /* the default products: trace.json only while it fits one part */
                rc = 0;
                xsm_emit_json_left_out(o.load.quiet ? NULL : stderr);
            }
        } else if (t == XSM_TASK_OTF2)
            rc = xsm_otf2_main(&e, staging, o.load.quiet ? NULL : stderr, err, sizeof err);
        else
            rc = xsm_emit_h5(&e, staging, err, sizeof err);
        static const char *const task_name[XSM_TASK_N] = {"trace.json", "pftrace", "merged.h5", "trace.otf2"};
        xsm_progress_mark(task_name[t]);
    }
    if (e.h5share && !h5help)
        h5sh.done(h5sh.ctx); /* the writer's buffers (a helper's went with its part) */
    if (an_on) {
        char aerr[4096];
        int arc = xsm_an_job_end(&an, !rc, aerr, sizeof aerr);
        if (!rc) { /* a writer's error first: the analysis ran beside it */
            rc = arc;
            if (arc != 0 && arc != 3)
                snprintf(err, sizeof err, "%s", aerr);
        }
    }
    xsm_emit_free(&e); /* after the analysis, which may read it; safe after a failed init too */
    int all = xsm_par_agree(&par, rc, 1, &first);
    /* merged.h5 is complete on every process now: the process that ran the
     * analysis adds its tables (all agree on the outcome again) */
    if (all != 1 && (o.outputs & XSM_OUT_REPORT) && (o.outputs & XSM_OUT_H5)) {
        char path[8300];
        snprintf(path, sizeof path, "%s/merged.h5", staging);
        int hrc = an_on && an.an ? xsm_analyze_h5(an.an, path, err, sizeof err) : 0;
        if (xsm_par_agree(&par, hrc, 1, &first) == 1)
            all = rc = 1;
        xsm_progress_mark("analysis tables");
    }
    if (an_on)
        xsm_analyze_free(an.an);
    if (share) /* read by the analysis, which has ended: not a product */
        xsm_an_symbols_unshare(staging, par.rank);
    if (all == 1) {
        if (rc == 1 && par.rank == first) {
            xsm_err_unstage(err, sizeof err, staging, o.out_dir);
            fprintf(stderr, "%s\n", err);
        }
        xsm_par_barrier(&par);
        xsm_staging_guard(NULL);
        if (lead) {
            xsm_staging_rm(staging);
            if (made)
                rmdir(o.out_dir); /* only when empty: nothing of the user's goes */
        }
        xsm_run_free(&run);
        xsm_par_end(&par);
        return 1;
    }
    xsm_par_barrier(&par);
    xsm_staging_guard(NULL);
    if (lead) {
        if (xsm_publish(staging, o.out_dir, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            xsm_staging_rm(staging);
            all = 1;
        } else if (!o.load.quiet) {
            if (xsm_stream_fell_back)
                fprintf(stderr, "xsmerge: note: streaming: a rank file cannot be read chunk by chunk; merged in memory\n");
            fprintf(stderr, "xsmerge: %zu ranks, %zu messages, %zu collectives; clock violations %llu -> %llu; wrote %s\n",
                    run.nranks, run.nmsgs, run.ncolls, (unsigned long long)run.clock.violations_before,
                    (unsigned long long)run.clock.violations_after, o.out_dir);
            xsm_note_large_trace(o.out_dir, notes);
        }
    }
    xsm_run_free(&run);
    xsm_par_end(&par);
    return all;
}
