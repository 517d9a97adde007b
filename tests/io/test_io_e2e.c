/* End to end through libxsprof.so: runs io_e2e_app (see io_e2e_app.c) with
 * XSPROF_OUTPUT set, reads how many regions it completed from its stdout,
 * then checks the rank file (normal exit) or the journal it left (SIGKILL,
 * SIGSEGV): exactly those regions, with their args, and the right end state;
 * alive: the journal of a process still running reads as "running", and as
 * "killed (no handler ran)" once its heartbeat stops after a SIGKILL.
 * usage: test_io_e2e APP BASE_DIR MODE N */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/reader.h"
#include "io/writer.h"
#include "io_check.h"

static void clean_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[8192];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
        rmdir(dir);
    }
}

static pid_t g_alive_pid = -1; /* mode alive: the app, left running */

/* Run the app; returns its wait status and the last "completed N" (mode
 * alive: 0, the app left running in g_alive_pid). */
static int run_app(const char *app, const char *dir, const char *mode, const char *n, const char *app_h5,
                   long *completed)
{
    int fds[2];
    if (pipe(fds))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("XSPROF_OUTPUT", dir, 1);
        /* Exact counts: a busy machine must slow the app, not drop records. */
        setenv("XSPROF_ON_FULL", "block", 1);
        if (!strcmp(mode, "segv")) {
            /* Under ASan the fault must end in the signal, as it does for a
             * user's program, not in ASan's SEGV report and exit status 1. */
            const char *o = getenv("ASAN_OPTIONS");
            char opts[2048];
            snprintf(opts, sizeof opts, "%s%shandle_segv=0", o ? o : "", o && *o ? ":" : "");
            setenv("ASAN_OPTIONS", opts, 1);
        }
        execl(app, app, mode, n, app_h5, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fds[0]);
    *completed = -1;
    for (char *p = strstr(buf, "completed "); p; p = strstr(p + 1, "completed "))
        *completed = atol(p + 10);
    if (!strcmp(mode, "alive")) {
        g_alive_pid = pid;
        return 0;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

/* Every region of the app, with its args in order. */
static void check_regions(const char *what, const xsprof_rank_data *d, long completed, int finished)
{
    CHECK((long)d->nregions == completed, "%s: %zu regions, the app completed %ld", what, d->nregions, completed);
    size_t outer = 0, inner = 0, unfinished = 0, bad = 0;
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *g = &d->regions[i];
        const char *name = xsprof_rank_data_string(d, g->name);
        if (!strcmp(name, "outer")) {
            outer++;
            const xsprof_io_arg *a = &d->args[g->args];
            bad += g->depth != 0 || g->nargs != 2 || strcmp(xsprof_rank_data_string(d, a[0].key), "i") ||
                   a[0].kind != 1 || strcmp(xsprof_rank_data_string(d, a[1].key), "x") || a[1].kind != 2 ||
                   a[1].d != (double)a[0].i * 0.25 || a[0].region != (int64_t)i;
        } else if (!strcmp(name, "inner")) {
            inner++;
            const xsprof_io_arg *a = &d->args[g->args];
            bad += g->depth != 1 || g->nargs != 1 || a->kind != 3 ||
                   strcmp(xsprof_rank_data_string(d, a->s), (i / 2) % 2 ? "odd" : "even") != 0;
        } else if (!strcmp(name, "unfinished"))
            unfinished++;
        else
            bad++;
        bad += g->t_end < g->t_begin;
    }
    CHECK(bad == 0, "%s: %zu regions with wrong depth, args or times", what, bad);
    CHECK(outer == inner && unfinished == (size_t)finished, "%s: outer %zu inner %zu unfinished %zu", what, outer,
          inner, unfinished);
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* The app's own file: every thread's dataset holds what it wrote. */
static void check_app_file(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0, "the application's file %s does not open", path);
    if (f < 0)
        return;
    for (int t = 0; t < 4; t++) {
        char name[16];
        int64_t v[64];
        snprintf(name, sizeof name, "t%d", t);
        hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
        CHECK(ds >= 0 && H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0, "read %s", name);
        int bad = 0;
        for (int i = 0; i < 64; i++)
            bad += v[i] != (int64_t)t * 1000000 + i;
        CHECK(bad == 0, "dataset %s of the application's file has %d wrong values", name, bad);
        if (ds >= 0)
            H5Dclose(ds);
    }
    H5Fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s APP BASE_DIR MODE N\n", argv[0]);
        return 2;
    }
    const char *app = argv[1], *mode = argv[3];
    char dir[4096], h5[4200], xsj[4200], app_h5[4200], err[1024];
    mkdir(argv[2], 0777);
    snprintf(dir, sizeof dir, "%s/%s", argv[2], mode);
    clean_dir(dir);
    mkdir(dir, 0777);
    snprintf(h5, sizeof h5, "%s/rank-00000.h5", dir);
    snprintf(xsj, sizeof xsj, "%s/rank-00000.xsj", dir);
    snprintf(app_h5, sizeof app_h5, "%s/app.h5", dir);
    long completed = -1;
    int st = run_app(app, dir, mode, argv[4], app_h5, &completed);
    CHECK(completed > 0, "the app reported no completed regions");
    xsprof_rank_data d;
    xsprof_status s;

    if (!strcmp(mode, "exit") || !strcmp(mode, "hdf5")) {
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "app status %d", st);
        CHECK(exists(h5) && !exists(xsj), "after a normal exit: rank file %d, journal %d", exists(h5), exists(xsj));
        s = xsprof_rankfile_load(h5, &d, err, sizeof err);
        CHECK(s == XSPROF_OK, "load: %s", err);
        if (s == XSPROF_OK) {
            check_regions(mode, &d, completed, 1);
            CHECK(!d.truncated && !d.recovered && !strcmp(d.end_state, "finalized") && d.dropped == 0,
                  "truncated %d recovered %d end_state %s dropped %llu", d.truncated, d.recovered, d.end_state,
                  (unsigned long long)d.dropped);
            CHECK(d.size == 1 && d.rank == 0 && d.pid > 0 && d.host[0] && d.clock_source[0] && d.xsprof_version[0],
                  "identity: rank %d size %d pid %lld host %s", d.rank, d.size, (long long)d.pid, d.host);
            if (!strcmp(mode, "hdf5"))
                CHECK(d.nthreads >= 5, "%zu threads in the rank file", d.nthreads);
        }
        xsprof_rank_data_free(&d);
        if (!strcmp(mode, "hdf5"))
            check_app_file(app_h5);
    } else if (!strcmp(mode, "alive")) {
        s = xsprof_journal_load(xsj, &d, err, sizeof err);
        CHECK(s == XSPROF_OK, "journal_load while running: %s", err);
        if (s == XSPROF_OK) {
            check_regions(mode, &d, completed, 0);
            CHECK(!strcmp(d.end_state, "running"), "a running process's journal: end_state %s", d.end_state);
        }
        xsprof_rank_data_free(&d);
        kill(g_alive_pid, SIGKILL);
        waitpid(g_alive_pid, &st, 0);
        /* the heartbeat's age passes three periods (1 s each) and 2 s of
         * slack: killed; a bound of 60 s ends the loop, not the test's logic */
        char state[1100] = "";
        for (int i = 0; i < 120; i++) {
            s = xsprof_journal_load(xsj, &d, err, sizeof err);
            snprintf(state, sizeof state, "%s", s == XSPROF_OK ? d.end_state : err);
            xsprof_rank_data_free(&d);
            if (s != XSPROF_OK || strcmp(state, "running"))
                break;
            usleep(500000);
        }
        CHECK(!strcmp(state, "killed (no handler ran)"), "after SIGKILL the journal reads %s", state);
    } else {
        int sig = !strcmp(mode, "sigkill") ? SIGKILL : SIGSEGV;
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig, "app status %d, expected death by signal %d", st, sig);
        CHECK(!exists(h5) && exists(xsj), "after a crash: rank file %d, journal %d", exists(h5), exists(xsj));
        const char *want = sig == SIGKILL ? "killed (no handler ran)" : "signal 11 (SIGSEGV)";
        s = xsprof_journal_load(xsj, &d, err, sizeof err);
        CHECK(s == XSPROF_OK, "journal_load: %s", err);
        if (s == XSPROF_OK) {
            check_regions(mode, &d, completed, 0);
            CHECK(d.truncated && d.recovered && !strcmp(d.end_state, want) && d.dropped == 0,
                  "truncated %d recovered %d end_state %s dropped %llu", d.truncated, d.recovered, d.end_state,
                  (unsigned long long)d.dropped);
        }
        xsprof_rank_data_free(&d);
        /* Offline conversion of the left journal gives the same regions. */
        s = xsprof_journal_convert(xsj, h5, NULL, err, sizeof err);
        CHECK(s == XSPROF_OK, "offline convert: %s", err);
        s = xsprof_rankfile_load(h5, &d, err, sizeof err);
        CHECK(s == XSPROF_OK, "load converted: %s", err);
        if (s == XSPROF_OK) {
            check_regions("converted", &d, completed, 0);
            CHECK(d.truncated && d.recovered && !strcmp(d.end_state, want), "converted: end_state %s", d.end_state);
        }
        xsprof_rank_data_free(&d);
    }
    printf("mode %s: %ld regions completed\n", mode, completed);
    return io_check_result("test_io_e2e");
}
