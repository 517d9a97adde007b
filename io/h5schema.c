/* io/h5schema.c — compound types of the rank-file tables (see h5schema.h). */
#include "io/h5schema.h"

#include <stdio.h>
#include <string.h>

#include "io/format.h"

static const struct {
    const char *path;
    size_t size;
} ds_info[XSPROF_H5_COUNT] = {
    [XSPROF_H5_REGIONS] = {XSPROF_DS_REGIONS, sizeof(xsprof_io_region)},
    [XSPROF_H5_ARGS] = {XSPROF_DS_ARGS, sizeof(xsprof_io_arg)},
    [XSPROF_H5_INSTANTS] = {XSPROF_DS_INSTANTS, sizeof(xsprof_io_instant)},
    [XSPROF_H5_COUNTERS] = {XSPROF_DS_COUNTERS, sizeof(xsprof_io_counter)},
    [XSPROF_H5_MPI] = {XSPROF_DS_MPI, sizeof(xsprof_io_mpi)},
    [XSPROF_H5_GPU] = {XSPROF_DS_GPU, sizeof(xsprof_io_gpu)},
    [XSPROF_H5_MEM] = {XSPROF_DS_MEM, sizeof(xsprof_io_mem)},
    [XSPROF_H5_CLOCK] = {XSPROF_DS_CLOCK, sizeof(xsprof_io_clock)},
    [XSPROF_H5_THREADS] = {XSPROF_DS_THREADS, sizeof(xsprof_io_thread)},
    [XSPROF_H5_COMMS] = {XSPROF_DS_COMMS, sizeof(xsprof_io_comm)},
    [XSPROF_H5_COMM_MEMBERS] = {XSPROF_DS_COMM_MEMBERS, sizeof(int32_t)},
    [XSPROF_H5_TOPOLOGY] = {XSPROF_DS_TOPOLOGY, sizeof(xsprof_io_topo)},
    [XSPROF_H5_META] = {XSPROF_DS_META, sizeof(xsprof_io_meta)},
    [XSPROF_H5_CALLSTACKS] = {XSPROF_DS_CALLSTACKS, sizeof(xsprof_io_callstack)},
    [XSPROF_H5_FRAMES] = {XSPROF_DS_FRAMES, sizeof(uint64_t)},
    [XSPROF_H5_MODULES] = {XSPROF_DS_MODULES, sizeof(xsprof_io_module)},
    [XSPROF_H5_SAMPLES] = {XSPROF_DS_SAMPLES, sizeof(xsprof_io_sample)},
    [XSPROF_H5_ALLOC_STACKS] = {XSPROF_DS_ALLOC_STACKS, sizeof(xsprof_io_alloc_stack)},
    [XSPROF_H5_STRINGS] = {XSPROF_DS_STRINGS, 0}, /* width chosen per file */
};

const char *xsprof_h5_ds_path(enum xsprof_h5_ds ds) { return ds < XSPROF_H5_COUNT ? ds_info[ds].path : "?"; }
size_t xsprof_h5_ds_row_size(enum xsprof_h5_ds ds) { return ds < XSPROF_H5_COUNT ? ds_info[ds].size : 0; }

/* Insert helpers: every H5Tinsert is checked once, at the end, through `ok`. */
#define F(T, m, type) ok &= H5Tinsert(t, #m, HOFFSET(T, m), (type)) >= 0
#define A(T, m, type, n)                                                                 \
    do {                                                                                 \
        hsize_t dim_ = (n);                                                              \
        hid_t a_ = H5Tarray_create2((type), 1, &dim_);                                   \
        ok &= a_ >= 0 && H5Tinsert(t, #m, HOFFSET(T, m), a_) >= 0;                       \
        if (a_ >= 0)                                                                     \
            H5Tclose(a_);                                                                \
    } while (0)

hid_t xsprof_h5_ds_mem_type(enum xsprof_h5_ds ds)
{
    if (ds >= XSPROF_H5_COUNT)
        return -1;
    if (ds == XSPROF_H5_COMM_MEMBERS)
        return H5Tcopy(H5T_NATIVE_INT32);
    if (ds == XSPROF_H5_FRAMES)
        return H5Tcopy(H5T_NATIVE_UINT64);
    if (ds == XSPROF_H5_STRINGS)
        return -1;
    hid_t t = H5Tcreate(H5T_COMPOUND, ds_info[ds].size);
    if (t < 0)
        return -1;
    int ok = 1;
    switch (ds) {
    case XSPROF_H5_REGIONS:
        F(xsprof_io_region, t_begin, H5T_NATIVE_INT64);
        F(xsprof_io_region, t_end, H5T_NATIVE_INT64);
        F(xsprof_io_region, name, H5T_NATIVE_UINT32);
        F(xsprof_io_region, thread, H5T_NATIVE_UINT32);
        F(xsprof_io_region, depth, H5T_NATIVE_UINT16);
        F(xsprof_io_region, category, H5T_NATIVE_UINT16);
        F(xsprof_io_region, nargs, H5T_NATIVE_UINT32);
        F(xsprof_io_region, args, H5T_NATIVE_INT64);
        break;
    case XSPROF_H5_ARGS:
        F(xsprof_io_arg, region, H5T_NATIVE_INT64);
        F(xsprof_io_arg, key, H5T_NATIVE_UINT32);
        F(xsprof_io_arg, kind, H5T_NATIVE_UINT32);
        F(xsprof_io_arg, i, H5T_NATIVE_INT64);
        F(xsprof_io_arg, d, H5T_NATIVE_DOUBLE);
        F(xsprof_io_arg, s, H5T_NATIVE_UINT32);
        F(xsprof_io_arg, ndims, H5T_NATIVE_UINT32);
        A(xsprof_io_arg, dims, H5T_NATIVE_INT64, 8);
        break;
    case XSPROF_H5_INSTANTS:
        F(xsprof_io_instant, t, H5T_NATIVE_INT64);
        F(xsprof_io_instant, name, H5T_NATIVE_UINT32);
        F(xsprof_io_instant, thread, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_COUNTERS:
        F(xsprof_io_counter, t, H5T_NATIVE_INT64);
        F(xsprof_io_counter, value, H5T_NATIVE_DOUBLE);
        F(xsprof_io_counter, name, H5T_NATIVE_UINT32);
        F(xsprof_io_counter, thread, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_MPI:
        F(xsprof_io_mpi, t_begin, H5T_NATIVE_INT64);
        F(xsprof_io_mpi, t_end, H5T_NATIVE_INT64);
        F(xsprof_io_mpi, op, H5T_NATIVE_UINT32);
        F(xsprof_io_mpi, thread, H5T_NATIVE_UINT32);
        F(xsprof_io_mpi, comm, H5T_NATIVE_UINT32);
        F(xsprof_io_mpi, peer, H5T_NATIVE_INT32);
        F(xsprof_io_mpi, tag, H5T_NATIVE_INT32);
        F(xsprof_io_mpi, root, H5T_NATIVE_INT32);
        F(xsprof_io_mpi, bytes_sent, H5T_NATIVE_UINT64);
        F(xsprof_io_mpi, bytes_recv, H5T_NATIVE_UINT64);
        F(xsprof_io_mpi, request, H5T_NATIVE_UINT64);
        F(xsprof_io_mpi, seq, H5T_NATIVE_UINT64);
        F(xsprof_io_mpi, coll_seq, H5T_NATIVE_UINT64);
        F(xsprof_io_mpi, kind, H5T_NATIVE_UINT8);
        F(xsprof_io_mpi, coll, H5T_NATIVE_UINT8);
        F(xsprof_io_mpi, flags, H5T_NATIVE_UINT16);
        F(xsprof_io_mpi, count, H5T_NATIVE_UINT32);
        F(xsprof_io_mpi, callsite, H5T_NATIVE_UINT32);
        F(xsprof_io_mpi, pad, H5T_NATIVE_UINT32); /* a column, not a hole: rows compare byte for byte */
        break;
    case XSPROF_H5_GPU:
        F(xsprof_io_gpu, t_begin, H5T_NATIVE_INT64);
        F(xsprof_io_gpu, t_end, H5T_NATIVE_INT64);
        F(xsprof_io_gpu, name, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, kind, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, device, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, stream, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, correlation, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, context, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, bytes, H5T_NATIVE_UINT64);
        A(xsprof_io_gpu, grid, H5T_NATIVE_UINT32, 3);
        A(xsprof_io_gpu, block, H5T_NATIVE_UINT32, 3);
        F(xsprof_io_gpu, shared_mem, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, registers, H5T_NATIVE_UINT32);
        F(xsprof_io_gpu, thread, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_MEM:
        F(xsprof_io_mem, t, H5T_NATIVE_INT64);
        F(xsprof_io_mem, ptr, H5T_NATIVE_UINT64);
        F(xsprof_io_mem, size, H5T_NATIVE_UINT64);
        F(xsprof_io_mem, thread, H5T_NATIVE_UINT32);
        F(xsprof_io_mem, kind, H5T_NATIVE_UINT16);
        F(xsprof_io_mem, device, H5T_NATIVE_INT16);
        break;
    case XSPROF_H5_CLOCK:
        F(xsprof_io_clock, t_local, H5T_NATIVE_INT64);
        F(xsprof_io_clock, offset_ns, H5T_NATIVE_INT64);
        F(xsprof_io_clock, rtt_ns, H5T_NATIVE_INT64);
        F(xsprof_io_clock, phase, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_THREADS:
        F(xsprof_io_thread, tid, H5T_NATIVE_UINT32);
        F(xsprof_io_thread, os_tid, H5T_NATIVE_INT32);
        F(xsprof_io_thread, name, H5T_NATIVE_UINT32);
        F(xsprof_io_thread, dropped, H5T_NATIVE_UINT64);
        break;
    case XSPROF_H5_COMMS:
        F(xsprof_io_comm, id, H5T_NATIVE_UINT32);
        F(xsprof_io_comm, size, H5T_NATIVE_UINT32);
        F(xsprof_io_comm, name, H5T_NATIVE_UINT32);
        F(xsprof_io_comm, parent, H5T_NATIVE_UINT32);
        F(xsprof_io_comm, members, H5T_NATIVE_UINT64);
        break;
    case XSPROF_H5_TOPOLOGY:
        F(xsprof_io_topo, numa_node, H5T_NATIVE_INT32);
        F(xsprof_io_topo, ncores_host, H5T_NATIVE_INT32);
        F(xsprof_io_topo, cpuset, H5T_NATIVE_UINT32);
        F(xsprof_io_topo, cores, H5T_NATIVE_UINT32);
        F(xsprof_io_topo, gpus, H5T_NATIVE_UINT32);
        F(xsprof_io_topo, host, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_META:
        F(xsprof_io_meta, key, H5T_NATIVE_UINT32);
        F(xsprof_io_meta, value, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_CALLSTACKS:
        F(xsprof_io_callstack, id, H5T_NATIVE_UINT32);
        F(xsprof_io_callstack, depth, H5T_NATIVE_UINT32);
        F(xsprof_io_callstack, frames, H5T_NATIVE_UINT64);
        break;
    case XSPROF_H5_MODULES:
        F(xsprof_io_module, bias, H5T_NATIVE_UINT64);
        F(xsprof_io_module, lo, H5T_NATIVE_UINT64);
        F(xsprof_io_module, hi, H5T_NATIVE_UINT64);
        F(xsprof_io_module, t_load, H5T_NATIVE_INT64);
        F(xsprof_io_module, t_unload, H5T_NATIVE_INT64);
        F(xsprof_io_module, id, H5T_NATIVE_UINT32);
        F(xsprof_io_module, path, H5T_NATIVE_UINT32);
        F(xsprof_io_module, build_id, H5T_NATIVE_UINT32);
        F(xsprof_io_module, pad, H5T_NATIVE_UINT32);
        break;
    case XSPROF_H5_SAMPLES:
        F(xsprof_io_sample, t, H5T_NATIVE_INT64);
        F(xsprof_io_sample, stack, H5T_NATIVE_UINT32);
        F(xsprof_io_sample, os_tid, H5T_NATIVE_INT32);
        break;
    case XSPROF_H5_ALLOC_STACKS:
        F(xsprof_io_alloc_stack, t, H5T_NATIVE_INT64);
        F(xsprof_io_alloc_stack, ptr, H5T_NATIVE_UINT64);
        F(xsprof_io_alloc_stack, stack, H5T_NATIVE_UINT32);
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok) {
        H5Tclose(t);
        return -1;
    }
    return t;
}

hid_t xsprof_h5_string_type(size_t size)
{
    hid_t s = H5Tcopy(H5T_C_S1);
    if (s < 0)
        return -1;
    if (H5Tset_size(s, size ? size : 1) < 0 || H5Tset_strpad(s, H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(s, H5T_CSET_UTF8) < 0) {
        H5Tclose(s);
        return -1;
    }
    return s;
}

static herr_t last_error_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    char **out = data;
    /* Walking upward starts at the innermost (most specific) entry. */
    (void)n;
    if (!*out && e->desc && e->desc[0])
        *out = (char *)e->desc;
    return 0;
}

void xsprof_h5_last_error(char *buf, size_t len)
{
    if (!buf || !len)
        return;
    buf[0] = 0;
    char *desc = NULL;
    if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, last_error_cb, &desc) >= 0 && desc)
        snprintf(buf, len, "%s", desc);
    for (char *p = buf; *p; p++) /* messages are one line */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}
