/* mpi/topo.c — where this rank runs, from hwloc: host, the cpuset it is
 * bound to, its NUMA node, the cores of that cpuset and the GPUs near it,
 * stored as one XSPROF_REC_TOPO. Without hwloc only the host is known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpi/xsprof_mpi.h"
#include "xsprof_config.h"
#if XSPROF_HAVE_HWLOC
#include <hwloc.h>
#endif

static uint32_t intern(const char *s) {
    xsprof_name_id id = 0;
    xsprof_string_intern(s ? s : "", &id);
    return id;
}

#if XSPROF_HAVE_HWLOC
/* Logical indexes of the cores that intersect `set`, in list syntax. */
static char *cores_of(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
    hwloc_bitmap_t cores = hwloc_bitmap_alloc();
    char *s = NULL;
    if (!cores)
        return NULL;
    hwloc_obj_t c = NULL;
    while ((c = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_CORE, c)))
        if (hwloc_bitmap_intersects(c->cpuset, set))
            hwloc_bitmap_set(cores, c->logical_index);
    hwloc_bitmap_list_asprintf(&s, cores);
    hwloc_bitmap_free(cores);
    return s;
}

/* PCI bus ids of GPU / co-processor OS devices whose locality meets `set`. */
static void gpus_near(hwloc_topology_t topo, hwloc_const_cpuset_t set, char *out, size_t len) {
    out[0] = 0;
    hwloc_obj_t d = NULL;
    while ((d = hwloc_get_next_osdev(topo, d))) {
        if (d->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU && d->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC)
            continue;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, d);
        if (anc && anc->cpuset && !hwloc_bitmap_intersects(anc->cpuset, set))
            continue;
        hwloc_obj_t p = d->parent;
        char id[64];
        if (p && p->type == HWLOC_OBJ_PCI_DEVICE)
            snprintf(id, sizeof id, "%04x:%02x:%02x.%01x", p->attr->pcidev.domain, p->attr->pcidev.bus,
                     p->attr->pcidev.dev, p->attr->pcidev.func);
        else
            snprintf(id, sizeof id, "%s", d->name ? d->name : "?");
        size_t used = strlen(out);
        if (used + strlen(id) + 2 < len)
            snprintf(out + used, len - used, "%s%s", used ? "," : "", id);
    }
}

/* PCI discovery costs hwloc ~50 ms per rank: only pay it when a GPU driver
 * is loaded (NVIDIA, AMD ROCm, DRM). */
static int gpu_driver_present(void) {
    return !access("/proc/driver/nvidia", F_OK) || !access("/dev/kfd", F_OK) || !access("/dev/dri", F_OK);
}
#endif

void xsprof_topo_record(void) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    xsprof_rec_topo r = {.h = {XSPROF_REC_TOPO, sizeof r}, .numa_node = -1, .host = intern(host), .ncores_host = 0};
    r.cpuset = r.cores = r.gpus = intern("");
#if XSPROF_HAVE_HWLOC
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
        if (gpu_driver_present())
            hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        if (hwloc_topology_load(topo) == 0) {
            hwloc_bitmap_t set = hwloc_bitmap_alloc();
            if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
                char *s = NULL, *cores = cores_of(topo, set), gpus[1024];
                hwloc_bitmap_list_asprintf(&s, set);
                r.cpuset = intern(s);
                r.cores = intern(cores);
                free(s);
                free(cores);
                gpus_near(topo, set, gpus, sizeof gpus);
                r.gpus = intern(gpus);
                hwloc_obj_t numa = NULL;
                while ((numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)))
                    if (hwloc_bitmap_intersects(numa->cpuset, set)) {
                        r.numa_node = (int32_t)numa->os_index;
                        break;
                    }
            }
            hwloc_bitmap_free(set);
            r.ncores_host = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        }
        hwloc_topology_destroy(topo);
    }
#endif
    xsprof_buf_append(&r, sizeof r, 1);
}
