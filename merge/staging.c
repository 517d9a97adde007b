/* merge/staging.c — see staging.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall, getdents64 */
#endif
#include "merge/staging.h"
#include "merge/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XSM_STAGING_PREFIX ".xsmerge-tmp-"

int64_t xsm_staging_host(void)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (int64_t)(h >> 1); /* positive: printed as 16 hex digits */
}

void xsm_staging_path(char *buf, size_t n, const char *out_dir, int64_t pid, int64_t host)
{
    (void)xsm_err_set(buf, n, "%s/" XSM_STAGING_PREFIX "%lld-%016llx", out_dir, (long long)pid,
                      (unsigned long long)host);
}

void xsm_staging_rm(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        xsm_path(path, sizeof path, dir, e->d_name);
        if (unlink(path) != 0 && errno == EISDIR)
            xsm_staging_rm(path); /* trace.otf2's event files are in OUT/trace/ */
    }
    closedir(d);
    rmdir(dir);
}

void xsm_staging_sweep(const char *out_dir, FILE *notes)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return;
    unsigned long long me = (unsigned long long)xsm_staging_host();
    struct dirent *e;
    char path[8192];
    while ((e = readdir(d)) != NULL) {
        long long pid;
        unsigned long long host;
        int used = 0;
        if (strncmp(e->d_name, XSM_STAGING_PREFIX, strlen(XSM_STAGING_PREFIX)) != 0 ||
            sscanf(e->d_name + strlen(XSM_STAGING_PREFIX), "%lld-%16llx%n", &pid, &host, &used) != 2 ||
            e->d_name[strlen(XSM_STAGING_PREFIX) + (size_t)used] != 0 || host != me || pid <= 0)
            continue; /* not ours to judge: another host's, or not a staging directory */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its merge may still run */
        xsm_path(path, sizeof path, out_dir, e->d_name);
        xsm_staging_rm(path);
        if (notes)
            fprintf(notes, "xsmerge: note: removed %s, left by an interrupted merge\n", path);
    }
    closedir(d);
}

static int xsm_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return xsm_err_set(err, errlen, "xsmerge: %s: cannot create output directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return xsm_err_set(err, errlen, "xsmerge: %s: cannot create output directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return xsm_err_set(err, errlen, "xsmerge: %s: not a directory", buf);
    return 0;
}

int xsm_staging_make(const char *out_dir, const char *staging, int *made, FILE *notes, char *err, size_t errlen)
{
    struct stat st;
    *made = stat(out_dir, &st) != 0;
    int rc = xsm_mkdir_p(out_dir, err, errlen);
    if (!rc)
        xsm_staging_sweep(out_dir, notes);
    /* named by OUT_DIR: the staging directory is none of the user's */
    if (!rc && mkdir(staging, 0777) != 0)
        rc = xsm_err_set(err, errlen, "xsmerge: %s: cannot write into the output directory: %s", out_dir,
                         strerror(errno));
    if (rc && *made)
        rmdir(out_dir);
    return rc;
}

/* The guarded path, read by the handler: set before the guard is on. */
static char xsm_guarded[8192];
static volatile sig_atomic_t xsm_guard_on;

/* Async-signal-safe removal (no opendir/malloc): getdents64 on the
 * directory, unlinkat each entry, rmdir; again while a writing thread
 * adds files meanwhile. */
static void xsm_staging_rm_now(const char *dir)
{
    struct ent64 {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[];
    };
    for (int pass = 0; pass < 8; pass++) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return;
        char buf[4096] __attribute__((aligned(8)));
        long got;
        while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long at = 0; at < got;) {
                const struct ent64 *e = (const struct ent64 *)(const void *)(buf + at);
                if (!(e->name[0] == '.' && (!e->name[1] || (e->name[1] == '.' && !e->name[2]))))
                    unlinkat(fd, e->name, 0);
                at += e->reclen;
            }
        }
        close(fd);
        if (rmdir(dir) == 0 || errno != ENOTEMPTY)
            return;
    }
}

static void xsm_staging_on_signal(int sig)
{
    if (xsm_guard_on) {
        xsm_guard_on = 0;
        xsm_staging_rm_now(xsm_guarded);
    }
    signal(sig, SIG_DFL);
    raise(sig); /* die of it, as without the guard (the exit status says so) */
}

void xsm_staging_guard(const char *staging)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    xsm_guard_on = 0;
    if (!staging)
        return;
    (void)xsm_err_set(xsm_guarded, sizeof xsm_guarded, "%s", staging);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = xsm_staging_on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal the caller ignored (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
    xsm_guard_on = 1;
}
