/* io/h5fd_guard.c — see h5fd_guard.h. A minimal POSIX driver in the manner
 * of HDF5's sec2 (pread/pwrite at absolute offsets), plus the failure
 * latch. */
#include "io/h5fd_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fd_info {
    int fd;
    xsprof_h5fd_state *st;
} fd_info;

typedef struct fd_file {
    H5FD_t pub; /* first: HDF5 sees this */
    int fd;
    haddr_t eoa, eof;
    dev_t dev;
    ino_t ino;
    xsprof_h5fd_state *st;
} fd_file;

#define FD_MAXADDR (((haddr_t)1 << (8 * sizeof(off_t) - 1)) - 1)

static H5FD_t *fd_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr)
{
    (void)name;
    const fd_info *info = H5Pget_driver_info(fapl);
    if (!info || info->fd < 0 || maxaddr == 0 || maxaddr > FD_MAXADDR)
        return NULL;
    int fd = fcntl(info->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (((flags & H5F_ACC_TRUNC) && ftruncate(fd, 0) != 0) || fstat(fd, &sb) != 0) {
        close(fd);
        return NULL;
    }
    fd_file *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return NULL;
    }
    f->fd = fd;
    f->eof = (haddr_t)sb.st_size;
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    f->st = info->st;
    return &f->pub;
}

static herr_t fd_close(H5FD_t *file)
{
    fd_file *f = (fd_file *)file;
    close(f->fd);
    free(f);
    return 0;
}

static int fd_cmp(const H5FD_t *a, const H5FD_t *b)
{
    const fd_file *x = (const fd_file *)a, *y = (const fd_file *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return 0;
}

static herr_t fd_query(const H5FD_t *file, unsigned long *flags)
{
    (void)file;
    /* The same optimisations as sec2 (metadata aggregation, sieving). */
    *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
             H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

static haddr_t fd_get_eoa(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const fd_file *)file)->eoa;
}

static herr_t fd_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr)
{
    (void)type;
    ((fd_file *)file)->eoa = addr;
    return 0;
}

static haddr_t fd_get_eof(const H5FD_t *file, H5FD_mem_t type)
{
    (void)type;
    return ((const fd_file *)file)->eof;
}

static herr_t fd_get_handle(H5FD_t *file, hid_t fapl, void **handle)
{
    (void)fapl;
    *handle = &((fd_file *)file)->fd;
    return 0;
}

static herr_t fd_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf)
{
    (void)type;
    (void)dxpl;
    fd_file *f = (fd_file *)file;
    if (addr > FD_MAXADDR || size > FD_MAXADDR - addr)
        return -1;
    unsigned char *p = buf;
    while (size > 0) {
        ssize_t n = pread(f->fd, p, size, (off_t)addr);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) { /* past the end of the file: zeros, as sec2 */
            memset(p, 0, size);
            break;
        }
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    return 0;
}

static herr_t fd_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf)
{
    (void)type;
    (void)dxpl;
    fd_file *f = (fd_file *)file;
    if (addr > FD_MAXADDR || size > FD_MAXADDR - addr)
        return -1;
    haddr_t end = addr + size;
    const unsigned char *p = buf;
    /* After a failure the file is lost anyway: accept everything so that
     * HDF5 reaches a clean close; the writer reports the latched error. */
    while (size > 0 && !f->st->error) {
        ssize_t n = pwrite(f->fd, p, size, (off_t)addr);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            f->st->error = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        addr += (haddr_t)n;
        size -= (size_t)n;
    }
    if (end > f->eof)
        f->eof = end;
    return 0;
}

static herr_t fd_flush(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
    (void)file;
    (void)dxpl;
    (void)closing;
    return 0;
}

static herr_t fd_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing)
{
    (void)dxpl;
    (void)closing;
    fd_file *f = (fd_file *)file;
    if (f->eoa != f->eof) {
        if (!f->st->error && ftruncate(f->fd, (off_t)f->eoa) != 0)
            f->st->error = errno;
        f->eof = f->eoa;
    }
    return 0;
}

static herr_t fd_lock(H5FD_t *file, hbool_t rw)
{
    /* The file is new and ours alone (exclusive create). */
    (void)file;
    (void)rw;
    return 0;
}

static herr_t fd_unlock(H5FD_t *file)
{
    (void)file;
    return 0;
}

static const H5FD_class_t fd_class = {
    .name = "xsprof_guard",
    .maxaddr = FD_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .fapl_size = sizeof(fd_info),
    .open = fd_open,
    .close = fd_close,
    .cmp = fd_cmp,
    .query = fd_query,
    .get_eoa = fd_get_eoa,
    .set_eoa = fd_set_eoa,
    .get_eof = fd_get_eof,
    .get_handle = fd_get_handle,
    .read = fd_read,
    .write = fd_write,
    .flush = fd_flush,
    .truncate = fd_truncate,
    .lock = fd_lock,
    .unlock = fd_unlock,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

/* Registered once per HDF5 library lifetime: an application calling
 * H5close() invalidates the id, and it is registered again. */
static pthread_mutex_t fd_lock_id = PTHREAD_MUTEX_INITIALIZER;
static hid_t fd_id = -1;

hid_t xsprof_h5fd_fapl(int fd, xsprof_h5fd_state *st)
{
    pthread_mutex_lock(&fd_lock_id);
    if (fd_id < 0 || H5Iis_valid(fd_id) <= 0)
        fd_id = H5FDregister(&fd_class);
    hid_t id = fd_id;
    pthread_mutex_unlock(&fd_lock_id);
    if (id < 0)
        return -1;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    fd_info info = {.fd = fd, .st = st};
    if (fapl < 0 || H5Pset_driver(fapl, id, &info) < 0) {
        if (fapl >= 0)
            H5Pclose(fapl);
        return -1;
    }
    return fapl;
}
