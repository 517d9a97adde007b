/* Sanitizer builds only (XSPROF_SANITIZE with address: CMakeLists.txt links
 * this into libxsprof-mpi.so and xsmerge, and exports dlclose from both).
 *
 * Open MPI 4.1 and its PMIx unload their plugins (mca_*.so) in
 * MPI_Finalize, hwloc its own (hwloc_*.so) when a topology is freed.
 * LeakSanitizer's check at exit then meets return addresses of the leaks
 * Open MPI leaves in no module: it re-reads /proc/self/maps
 * for each such frame (4 s of every 4.5 s mpirun of an ASan xsmerge, 70 %
 * of the ASan suite's MPI tests: mpi_coll_edge 33 -> 10 s) and cannot
 * match them to tests/ci/lsan.supp's `mca_` entry (the libhwloc entry
 * matches only once a frame is in a known module). Open MPI 5 has
 * mca_base_component_disable_dlclose for this; 4.1 has no such parameter.
 * So the plugins stay loaded, as they would there; any other dlclose
 * closes. A process that loads these objects first in the lookup order
 * (preloaded collector, xsmerge's own symbol) is the one that sees this. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <string.h>

__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static int (*real)(void *);
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
        const char *base = strrchr(map->l_name, '/');
        base = base ? base + 1 : map->l_name;
        if (!strncmp(base, "mca_", 4) || !strncmp(base, "pmix_mca_", 9) || !strncmp(base, "hwloc_", 6))
            return 0;
    }
    int (*f)(void *) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    return f ? f(handle) : -1;
}
