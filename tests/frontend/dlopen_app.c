/* tests/frontend/dlopen_app.c — a program that knows xsprof only by the
 * path it is given: dlopen, dlsym, a few regions, finalize. Before the
 * libraries lost their STATIC_TLS flag this failed with "cannot allocate
 * memory in static TLS block". check_dlopen.py checks the rank file.
 *
 * usage: dlopen_app LIBRARY */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*begin_fn)(const char *);
typedef int (*end_fn)(void);
typedef int (*finalize_fn)(void);

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_app LIBRARY\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen_app: %s\n", dlerror());
        return 1;
    }
    begin_fn begin = (begin_fn)dlsym(h, "xsprof_region_begin");
    end_fn end = (end_fn)dlsym(h, "xsprof_region_end");
    finalize_fn fin = (finalize_fn)dlsym(h, "xsprof_finalize");
    if (!begin || !end || !fin) {
        fprintf(stderr, "dlopen_app: missing symbol: %s\n", dlerror());
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        if (begin("dl_outer") || begin("dl_inner") || end() || end()) {
            fprintf(stderr, "dlopen_app: a region call failed\n");
            return 1;
        }
    }
    if (fin()) {
        fprintf(stderr, "dlopen_app: xsprof_finalize failed\n");
        return 1;
    }
    printf("dlopen_app done\n");
    return 0;
}
