/* A profiled program for the io end-to-end tests (links libxsprof.so).
 * Records nested regions with args, prints how many regions it completed,
 * then ends as MODE says:
 *   exit     returns from main (xsprof writes rank-00000.h5 at exit)
 *   sigkill  raises SIGKILL on itself (no handler can run)
 *   segv     writes to an inaccessible page (xsprof's handler marks the journal)
 *   hdf5     THREADS threads each record regions while writing their own
 *            dataset into the program's own HDF5 file (DIR/app.h5), then exit
 *   alive    closes stdout and waits to be killed
 * usage: io_e2e_app MODE N [APP_H5] */
#include <hdf5.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xsprof/xsprof.h"

#define THREADS 4
#define APP_ROWS 64

static long n_iter;
static hid_t app_file = -1;

/* One iteration = 2 completed regions: "inner" (1 string arg) inside
 * "outer" (2 args, one before and one after the inner region). */
static long record(long i)
{
    xsprof_region_begin("outer");
    xsprof_region_arg_int("i", i);
    xsprof_region_begin("inner");
    xsprof_region_arg_string("phase", (i & 1) ? "odd" : "even");
    xsprof_region_end();
    xsprof_region_arg_double("x", (double)i * 0.25);
    xsprof_region_end();
    return 2;
}

static void *worker(void *arg)
{
    long t = (long)arg, done = 0;
    char name[32];
    snprintf(name, sizeof name, "t%ld", t);
    hsize_t dims = APP_ROWS;
    hid_t sp = H5Screate_simple(1, &dims, NULL);
    hid_t ds = H5Dcreate2(app_file, name, H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (long i = 0; i < n_iter; i++) {
        done += record(i);
        /* Many small writes from every thread, interleaved with recording. */
        hsize_t row = (hsize_t)(i % APP_ROWS), one = 1;
        int64_t v = t * 1000000 + (i % APP_ROWS);
        hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &row, NULL, &one, NULL);
        if (H5Dwrite(ds, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v) < 0)
            fprintf(stderr, "io_e2e_app: H5Dwrite failed\n");
        H5Sclose(ms);
        H5Sclose(fs);
    }
    H5Dclose(ds);
    H5Sclose(sp);
    return (void *)done;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE N [APP_H5]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    n_iter = atol(argv[2]);
    long done = 0;
    if (!strcmp(mode, "hdf5")) {
        if (argc < 4)
            return 2;
        app_file = H5Fcreate(argv[3], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++)
            pthread_create(&th[t], NULL, worker, (void *)t);
        for (long t = 0; t < THREADS; t++) {
            void *r;
            pthread_join(th[t], &r);
            done += (long)r;
        }
        H5Fclose(app_file);
    } else {
        for (long i = 0; i < n_iter; i++)
            done += record(i);
    }
    /* A region still open when the program dies is not complete: it must
     * not be recovered. */
    xsprof_region_begin("unfinished");
    printf("completed %ld\n", done);
    fflush(stdout);
    if (!strcmp(mode, "sigkill"))
        raise(SIGKILL);
    if (!strcmp(mode, "alive")) {
        fclose(stdout); /* the test reads to the end, then looks at the journal */
        for (;;)
            pause();
    }
    if (!strcmp(mode, "segv")) {
        /* A real fault, not a NULL store: UBSan would stop a NULL store
         * before it faults, and the test is about the signal. */
        volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            *p = 1;
    }
    xsprof_region_end();
    done++;
    printf("completed %ld\n", done);
    return 0;
}
