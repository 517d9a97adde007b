/* tests/merge/test_symbols.c — merge/symbols on this very binary (built
 * -O2 -g): a function's address gives its name, file and line; a return
 * address inside an inlined function gives the inlined frame and the line
 * in its caller; each unique address is resolved once; a stripped copy of
 * the binary (argv[1], made by the test's CMake rule with objcopy) gives
 * module+offset and one note, as do a missing file and a changed one. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <elfutils/libdwfl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "merge/symbols/symbols.h"

static int g_fail;
#define CHECK(c, ...)                                                                                            \
    do {                                                                                                         \
        if (!(c)) {                                                                                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                 \
            fprintf(stderr, __VA_ARGS__);                                                                        \
            fputc('\n', stderr);                                                                                 \
            g_fail = 1;                                                                                          \
        }                                                                                                        \
    } while (0)

/* What the collector records: a return address, with the program's load
 * bias taken off (io/FORMAT.md /definitions/modules). */
static uint64_t g_bias;
static char g_build_id[64];

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    g_bias = info->dlpi_addr; /* the first object is the program */
    return 1;
}

/* The build-id of a file, as the collector records it (hex). */
static void build_id_of(const char *path, char *out, size_t len)
{
    static const Dwfl_Callbacks cb = {.find_debuginfo = dwfl_standard_find_debuginfo,
                                      .section_address = dwfl_offline_section_address};
    out[0] = 0;
    Dwfl *d = dwfl_begin(&cb);
    dwfl_report_begin(d);
    Dwfl_Module *m = dwfl_report_elf(d, "self", path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    const unsigned char *bits = NULL;
    GElf_Addr at;
    int n = m ? dwfl_module_build_id(m, &bits, &at) : 0;
    for (int i = 0; i < n && (size_t)(2 * i + 2) < len; i++)
        snprintf(out + 2 * i, 3, "%02x", bits[i]);
    dwfl_end(d);
}

static __attribute__((noinline)) void *where(void)
{
    void *r = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return r;
}

static inline __attribute__((always_inline)) void *inlined_helper(void)
{
    return where(); /* LINE_INNER */
}

static __attribute__((noinline)) void *caller_of_inline(void)
{
    void *p = inlined_helper(); /* LINE_OUTER */
    __asm__ volatile("" ::: "memory");
    return p;
}

static __attribute__((noinline)) int plain_function(int x)
{
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}

/* Line of the comment marking a line of this source (found through its
 * path in the DWARF): the checks need no line numbers kept in step. */
static int marker_line(const char *file, const char *mark)
{
    FILE *f = file ? fopen(file, "r") : NULL;
    char buf[512], want[64];
    snprintf(want, sizeof want, "/* %s */", mark);
    int no = 0, found = 0;
    while (f && !found && fgets(buf, sizeof buf, f))
        if (++no && strstr(buf, want))
            found = no;
    if (f)
        fclose(f);
    return found;
}

static void note_count(void *user, const char *note)
{
    ++*(int *)user;
    printf("note: %s\n", note);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: merge_test_symbols STRIPPED_COPY\n");
        return 2;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0, "readlink /proc/self/exe");
    self[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(self_cb, NULL);
    build_id_of(self, g_build_id, sizeof g_build_id);
    CHECK(strlen(g_build_id) == 40, "this binary has a build-id");

    xsm_symbols *s = xsm_symbols_open();
    CHECK(s != NULL, "open");
    int me = xsm_symbols_module(s, self, g_build_id);
    CHECK(me >= 0 && xsm_symbols_module(s, self, g_build_id) == me, "one handle per file and build-id");

    /* a function's own address (not a return address) */
    uint64_t fa = (uint64_t)(uintptr_t)&plain_function - g_bias;
    const xsm_loc *l = xsm_symbols_lookup(s, me, fa, 0);
    CHECK(l && l->symbolized && !strcmp(l->frames[l->nframes - 1].function, "plain_function"),
          "plain_function: %s", l ? l->frames[l->nframes - 1].function : "NULL");
    CHECK(l && l->frames[0].file && strstr(l->frames[0].file, "test_symbols.c"), "file of plain_function");
    CHECK(plain_function(1) == 4, "plain_function runs");

    /* a return address inside an inlined function */
    uint64_t ra = (uint64_t)(uintptr_t)caller_of_inline() - g_bias;
    l = xsm_symbols_lookup(s, me, ra, 1);
    CHECK(l && l->nframes == 2, "inlined call: %d frames", l ? l->nframes : -1);
    if (l && l->nframes == 2) {
        int inner = marker_line(l->frames[0].file, "LINE_INNER"), outer = marker_line(l->frames[0].file, "LINE_OUTER");
        CHECK(inner > 0 && outer > 0, "the markers are found in %s", l->frames[0].file);
        CHECK(!strcmp(l->frames[0].function, "inlined_helper") && l->frames[0].line == inner,
              "innermost frame %s:%d, want line %d", l->frames[0].function, l->frames[0].line, inner);
        CHECK(!strcmp(l->frames[1].function, "caller_of_inline") && l->frames[1].line == outer,
              "caller frame %s:%d, want line %d", l->frames[1].function, l->frames[1].line, outer);
        CHECK(l->frames[1].file && strstr(l->frames[1].file, "test_symbols.c"), "file of the caller frame");
    }
    for (int i = 0; i < 3; i++)
        CHECK(xsm_symbols_lookup(s, me, ra, 1) == l, "a repeated address is the cached answer");
    CHECK(xsm_symbols_resolved(s) == 2, "each unique address resolved once: %llu",
          (unsigned long long)xsm_symbols_resolved(s));
    int notes = 0;
    CHECK(xsm_symbols_notes(s, note_count, &notes) == 0 && notes == 0, "no note for a binary with debug info");

    /* the stripped copy: module+offset and one note */
    int st = xsm_symbols_module(s, argv[1], g_build_id);
    l = xsm_symbols_lookup(s, st, ra, 1);
    char want[128];
    const char *base = strrchr(argv[1], '/');
    snprintf(want, sizeof want, "%s+0x%llx", base ? base + 1 : argv[1], (unsigned long long)ra);
    CHECK(l && !l->symbolized && l->nframes == 1 && !strcmp(l->frames[0].function, want) && !l->frames[0].file,
          "stripped: %s, want %s", l ? l->frames[0].function : "NULL", want);
    xsm_symbols_lookup(s, st, fa, 0);
    notes = 0;
    CHECK(xsm_symbols_notes(s, note_count, &notes) == 1 && notes == 1, "one note for the stripped copy: %d", notes);

    /* a file that is gone, and one that changed since the run */
    int gone = xsm_symbols_module(s, "/nonexistent/libgone.so", "00112233445566778899");
    l = xsm_symbols_lookup(s, gone, 0x1a2b, 1);
    CHECK(l && !l->symbolized && !strcmp(l->frames[0].function, "libgone.so+0x1a2b"), "missing file: %s",
          l ? l->frames[0].function : "NULL");
    int changed = xsm_symbols_module(s, self, "0badbadbadbadbadbadbadbadbadbadbadbadbad");
    l = xsm_symbols_lookup(s, changed, fa, 0);
    CHECK(l && !l->symbolized, "a changed file is not read as the recorded one");
    notes = 0;
    CHECK(xsm_symbols_notes(s, note_count, &notes) == 3, "three notes: %d", notes);
    CHECK(xsm_symbols_lookup(s, 99, 1, 0) == NULL, "a bad handle gives NULL");

    /* a cache saved by one process and loaded by another (mpirun -np K
     * xsmerge): the same answers and notes, nothing resolved again */
    FILE *f = tmpfile();
    CHECK(f && xsm_symbols_save(s, f) == 0, "save");
    long len = f ? ftell(f) : 0;
    rewind(f);
    xsm_symbols *t = xsm_symbols_open();
    CHECK(t && xsm_symbols_load(t, f) == 0, "load");
    int tme = xsm_symbols_module(t, self, g_build_id);
    const xsm_loc *a = xsm_symbols_lookup(s, me, ra, 1), *b = xsm_symbols_lookup(t, tme, ra, 1);
    CHECK(a && b && a->nframes == b->nframes && !strcmp(a->frames[0].function, b->frames[0].function) &&
              a->frames[0].line == b->frames[0].line && !strcmp(a->frames[1].file, b->frames[1].file),
          "a loaded address gives the saved answer");
    b = xsm_symbols_lookup(t, xsm_symbols_module(t, argv[1], g_build_id), ra, 1);
    CHECK(b && !b->symbolized && !strcmp(b->frames[0].function, want), "a loaded stripped address: %s",
          b ? b->frames[0].function : "NULL");
    notes = 0;
    CHECK(xsm_symbols_resolved(t) == 0 && xsm_symbols_notes(t, note_count, &notes) == 3,
          "nothing resolved again (%llu), the notes carried over (%d)", (unsigned long long)xsm_symbols_resolved(t), notes);
    xsm_symbols_close(t);
    /* a damaged (cut) file: refused, what was read kept, nothing broken */
    for (long cut = 0; f && cut < len; cut += len / 7 + 1) {
        char *buf = malloc((size_t)len);
        rewind(f);
        CHECK(buf && fread(buf, 1, (size_t)len, f) == (size_t)len, "read back");
        FILE *g = buf ? fmemopen(buf, (size_t)cut, "rb") : NULL;
        xsm_symbols *u = xsm_symbols_open();
        CHECK(g && u && xsm_symbols_load(u, g) == -1, "a file cut at %ld of %ld bytes is refused", cut, len);
        xsm_symbols_close(u);
        if (g)
            fclose(g);
        free(buf);
    }
    if (f)
        fclose(f);
    xsm_symbols_close(s);
    if (!g_fail)
        printf("merge/symbols: all checks passed\n");
    return g_fail;
}
