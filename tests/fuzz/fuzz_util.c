/* tests/fuzz/fuzz_util.c — see fuzz.h. */
#include "fuzz.h"
#include "io/reader.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static char g_path[4096];

static void scratch_remove(void) { unlink(g_path); }

const char *fuzz_scratch_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (!g_path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_path, sizeof g_path, "%s/xsprof-fuzz-%d%s", tmp && *tmp ? tmp : "/tmp", (int)getpid(), suffix);
        atexit(scratch_remove);
    }
    int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(g_path);
        abort();
    }
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            perror(g_path);
            abort();
        }
        off += (size_t)n;
    }
    close(fd);
    return g_path;
}

void fuzz_walk_code(const xsprof_rank_data *d)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < d->nmpi; i++) {
        const xsprof_io_callstack *c = xsprof_rank_data_callstack(d, d->mpi[i].callsite);
        if (!c)
            continue;
        if (c->frames > d->nframes || c->depth > d->nframes - c->frames)
            abort();
        for (uint32_t k = 0; k < c->depth; k++)
            sum += d->frames[c->frames + k];
    }
    for (size_t i = 0; i < d->nsamples; i++) { /* a sample's stack may be missing (damage): looked up */
        const xsprof_io_callstack *c = xsprof_rank_data_callstack(d, d->samples[i].stack);
        if (c && (c->frames > d->nframes || c->depth > d->nframes - c->frames))
            abort();
        sum += c ? d->frames[c->frames] : (uint64_t)d->samples[i].t;
    }
    for (size_t i = 0; i < d->nalloc_stacks; i++) { /* the same: looked up */
        const xsprof_io_callstack *c = xsprof_rank_data_callstack(d, d->alloc_stacks[i].stack);
        if (c && (c->frames > d->nframes || c->depth > d->nframes - c->frames))
            abort();
        sum += c ? d->frames[c->frames] : d->alloc_stacks[i].ptr;
    }
    for (size_t i = 0; i < d->nmodules; i++) {
        sum += strlen(xsprof_rank_data_string(d, d->modules[i].path));
        sum += strlen(xsprof_rank_data_string(d, d->modules[i].build_id));
        if (xsprof_rank_data_module(d, d->modules[i].id) != &d->modules[i])
            abort(); /* ids are unique and in order */
    }
    volatile uint64_t sink = sum; /* keep the reads */
    (void)sink;
}
