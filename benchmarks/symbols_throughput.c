/* benchmarks/symbols_throughput.c — merge/symbols: unique addresses
 * resolved per second (function, file, line and inlined frames) on a real
 * binary with DWARF (default: xsmerge itself, built -O2 -g), and lookups of
 * addresses already resolved. The addresses are spread evenly over every
 * function of the binary's symbol table, so every compilation unit is hit.
 * usage: symbols_throughput [ADDRESSES [ELF_FILE [REPEATS]]] */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge/symbols/symbols.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const Dwfl_Callbacks cb = {.find_debuginfo = dwfl_standard_find_debuginfo,
                                  .section_address = dwfl_offline_section_address};

/* Up to `want` distinct addresses inside the functions of `path`. */
static uint64_t *addresses(const char *path, size_t want, size_t *n)
{
    Dwfl *d = dwfl_begin(&cb);
    dwfl_report_begin(d);
    Dwfl_Module *m = dwfl_report_elf(d, "bench", path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    int nsym = m ? dwfl_module_getsymtab(m) : -1;
    uint64_t total = 0;
    for (int i = 1; i < nsym; i++) {
        GElf_Sym s;
        if (dwfl_module_getsym(m, i, &s, NULL) && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_size && s.st_value)
            total += s.st_size;
    }
    uint64_t stride = total / want ? total / want : 1;
    uint64_t *v = malloc((want + 1) * sizeof *v);
    *n = 0;
    uint64_t carry = 0;
    for (int i = 1; v && i < nsym && *n < want; i++) {
        GElf_Sym s;
        if (!dwfl_module_getsym(m, i, &s, NULL) || GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_size || !s.st_value)
            continue;
        uint64_t off = carry;
        for (; off < s.st_size && *n < want; off += stride)
            v[(*n)++] = s.st_value + off;
        carry = off - s.st_size;
    }
    dwfl_end(d);
    /* aliases (two symbols of one function) give the same address twice */
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        int dup = 0;
        for (size_t j = i > 64 ? i - 64 : 0; j < i && !dup; j++)
            dup = v[j] == v[i];
        if (!dup)
            v[k++] = v[i];
    }
    *n = k;
    return v;
}

int main(int argc, char **argv)
{
    size_t want = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    const char *path = argc > 2 ? argv[2] : XSMERGE;
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    if (want < 1 || reps < 1 || reps > 99) {
        fprintf(stderr, "usage: symbols_throughput [ADDRESSES [ELF_FILE [REPEATS]]]\n");
        return 2;
    }
    size_t n = 0;
    uint64_t *a = addresses(path, want, &n);
    if (!a || n == 0) {
        fprintf(stderr, "symbols_throughput: no function addresses in %s\n", path);
        return 1;
    }
    double first[99], again[99];
    size_t lines = 0, inl = 0;
    for (int r = 0; r < reps; r++) {
        xsm_symbols *s = xsm_symbols_open();
        int h = xsm_symbols_module(s, path, NULL);
        double t0 = now_s();
        lines = inl = 0;
        for (size_t i = 0; i < n; i++) {
            const xsm_loc *l = xsm_symbols_lookup(s, h, a[i], 0);
            lines += l && l->frames[0].file;
            inl += l && l->nframes > 1;
        }
        double t1 = now_s();
        for (size_t i = 0; i < n; i++)
            xsm_symbols_lookup(s, h, a[i], 0);
        double t2 = now_s();
        if (xsm_symbols_resolved(s) != n) {
            fprintf(stderr, "symbols_throughput: %llu resolved for %zu unique addresses\n",
                    (unsigned long long)xsm_symbols_resolved(s), n);
            return 1;
        }
        first[r] = (double)n / (t1 - t0);
        again[r] = (double)n / (t2 - t1);
        xsm_symbols_close(s);
    }
    qsort(first, (size_t)reps, sizeof *first, cmp_d);
    qsort(again, (size_t)reps, sizeof *again, cmp_d);
    printf("merge/symbols on %s: %zu unique addresses (%zu with file:line, %zu inside inlined code), median of %d\n",
           path, n, lines, inl, reps);
    printf("  first lookup (libdw)   %10.0f addresses/s\n", first[reps / 2]);
    printf("  repeated lookup        %10.0f addresses/s\n", again[reps / 2]);
    free(a);
    return 0;
}
