/* mpi/topo.c — where this rank runs, from hwloc: host, the cpuset it is
 * bound to, its NUMA node, the cores of that cpuset and the GPUs near it,
 * stored as one XSPROF_REC_TOPO. What the record has no field for goes to
 * run metadata (io/FORMAT.md): topo_machine_cpuset (every PU hwloc sees:
 * a rank bound to all of them is unbound), topo_numa_nodes (every NUMA node
 * the binding meets; the record keeps the first) and topo_gpu_numa (every
 * GPU of the host with its NUMA node, near the binding or not), which
 * xsmerge's topology findings read. Without hwloc only the host is known. */
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

/* "bus=node,..." for every GPU / co-processor of the host: the NUMA node
 * of its first non-I/O ancestor, -1 when hwloc cannot tell. */
static void gpus_numa(hwloc_topology_t topo, char *out, size_t len) {
    out[0] = 0;
    hwloc_obj_t d = NULL;
    while ((d = hwloc_get_next_osdev(topo, d))) {
        if (d->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU && d->attr->osdev.type != HWLOC_OBJ_OSDEV_COPROC)
            continue;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, d), p = d->parent;
        int node = -1;
        hwloc_obj_t numa = NULL;
        while (anc && anc->cpuset && (numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)))
            if (hwloc_bitmap_intersects(numa->cpuset, anc->cpuset)) {
                node = (int)numa->os_index;
                break;
            }
        char id[96];
        if (p && p->type == HWLOC_OBJ_PCI_DEVICE)
            snprintf(id, sizeof id, "%04x:%02x:%02x.%01x=%d", p->attr->pcidev.domain, p->attr->pcidev.bus,
                     p->attr->pcidev.dev, p->attr->pcidev.func, node);
        else
            snprintf(id, sizeof id, "%s=%d", d->name ? d->name : "?", node);
        size_t used = strlen(out);
        if (used + strlen(id) + 2 < len)
            snprintf(out + used, len - used, "%s%s", used ? "," : "", id);
    }
}

/* The NUMA nodes (OS indexes) that `set` meets, in list syntax. */
static char *numa_of(hwloc_topology_t topo, hwloc_const_cpuset_t set) {
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    char *s = NULL;
    if (!nodes)
        return NULL;
    hwloc_obj_t n = NULL;
    while ((n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)))
        if (n->cpuset && hwloc_bitmap_intersects(n->cpuset, set))
            hwloc_bitmap_set(nodes, n->os_index);
    hwloc_bitmap_list_asprintf(&s, nodes);
    hwloc_bitmap_free(nodes);
    return s;
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
                char *nodes = numa_of(topo, set), *all = NULL;
                if (nodes)
                    xsprof_meta_set("topo_numa_nodes", nodes);
                free(nodes);
                hwloc_const_cpuset_t whole = hwloc_topology_get_topology_cpuset(topo);
                if (whole && hwloc_bitmap_list_asprintf(&all, whole) >= 0 && all)
                    xsprof_meta_set("topo_machine_cpuset", all);
                free(all);
                gpus_numa(topo, gpus, sizeof gpus);
                xsprof_meta_set("topo_gpu_numa", gpus);
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
