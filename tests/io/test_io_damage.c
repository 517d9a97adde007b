/* Damaged inputs: journals (torn last record, garbage chunks, bad headers,
 * random byte flips) and rank files (truncated, random bytes, wrong version,
 * wrong dataset type, missing dataset, bad row references, symlink target).
 * Each gives the right status and one line naming the file — and nothing on
 * stderr from HDF5. usage: test_io_damage DIR */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hdf5.h>

#include "io/reader.h"
#include "io/writer.h"
#include "io_check.h"
#include "journal_fixture.h"

static char dir[2048];
static char errbuf[1024];

static const char *path_in(const char *name) { return io_check_path(dir, name); }

/* A journal with `nreg` depth-0 regions (each with one int arg) on thread 0
 * and nreg on thread 1, in chunks of 512 bytes. */
static void make_journal(const char *path, int nreg, uint32_t state, int32_t sig, unsigned free_chunks)
{
    unlink(path);
    jfx *j = jfx_create(512);
    uint32_t name = jfx_string(j, "work"), key = jfx_string(j, "n");
    for (int i = 0; i < nreg; i++)
        for (uint32_t t = 0; t < 2; t++) {
            jfx_arg_int(j, t, 0, key, i);
            jfx_region(j, t, 0, name, 1, 1000 + 10 * i, 1005 + 10 * i);
        }
    jfx_header(j)->state = state;
    jfx_header(j)->signal = sig;
    if (jfx_write(j, path, free_chunks))
        CHECK(0, "cannot write %s", path);
    jfx_free(j);
}

/* No HDF5 object may stay open after a library call returns. */
static void check_no_open_ids(const char *what, int round)
{
    ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    CHECK(n == 0, "%s (round %d): %zd HDF5 objects left open", what, round, n);
}

static int one_line_naming(const char *err, const char *path)
{
    return err[0] && strstr(err, path) == err && !strchr(err, '\n');
}

static void file_write_at(const char *path, uint64_t off, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, p, n, (off_t)off) == (ssize_t)n, "cannot patch %s", path);
    if (fd >= 0)
        close(fd);
}

static void test_journal_recovery(void)
{
    const char *jp = path_in("torn.xsj");
    xsprof_rank_data d;

    /* Clean RUNNING journal: every region, marked killed/truncated. */
    make_journal(jp, 50, XSPROF_JOURNAL_RUNNING, 0, 2);
    xsprof_status st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 100 && d.nargs == 100, "clean: %d %zu %s", st, d.nregions, errbuf);
    CHECK(d.truncated == 1 && d.recovered == 1 && !strcmp(d.end_state, "killed (no handler ran)"),
          "clean: truncated %d recovered %d end %s", d.truncated, d.recovered, d.end_state);
    for (size_t i = 0; i < d.nregions; i++)
        if (d.regions[i].nargs != 1 || d.args[d.regions[i].args].i != (int64_t)(i % 50)) {
            CHECK(0, "region %zu lost its arg", i);
            break;
        }
    xsprof_rank_data_free(&d);

    /* The rank finalized but its rank file could not be written (CLOSED):
     * the end state core stored in the header, complete data. */
    make_journal(jp, 50, XSPROF_JOURNAL_CLOSED, 0, 0);
    xsprof_journal_header hdr;
    memset(&hdr, 0, sizeof hdr);
    snprintf(hdr.end_state, sizeof hdr.end_state, "finalized");
    file_write_at(jp, offsetof(xsprof_journal_header, end_state), hdr.end_state, sizeof hdr.end_state);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 100 && !d.truncated && d.recovered && !strcmp(d.end_state, "finalized"),
          "closed: %d %zu truncated %d end %s %s", st, d.nregions, d.truncated, d.end_state, errbuf);
    xsprof_rank_data_free(&d);
    snprintf(hdr.end_state, sizeof hdr.end_state, "exit without MPI_Finalize");
    file_write_at(jp, offsetof(xsprof_journal_header, end_state), hdr.end_state, sizeof hdr.end_state);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.truncated && !strcmp(d.end_state, "exit without MPI_Finalize"),
          "closed without MPI_Finalize: %d truncated %d end %s", st, d.truncated, d.end_state);
    xsprof_rank_data_free(&d);

    /* Torn last record: `used` of the last chunk claims half a record more. */
    jfx *j = jfx_create(512);
    uint32_t name = jfx_string(j, "work");
    for (int i = 0; i < 30; i++)
        jfx_region(j, 0, 0, name, 0, i, i + 1);
    uint64_t last = jfx_nchunks(j) - 1;
    jfx_write(j, jp, 0);
    xsprof_chunk_header ch;
    int fd = open(jp, O_RDWR);
    CHECK(fd >= 0 && pread(fd, &ch, sizeof ch, (off_t)jfx_chunk_offset(j, last)) == sizeof ch, "read chunk");
    xsprof_rec_region half = {.h = {.type = XSPROF_REC_REGION, .size = 32}};
    CHECK(pwrite(fd, &half, 16, (off_t)(jfx_chunk_offset(j, last) + sizeof ch + ch.used)) == 16, "patch");
    ch.used += 16;
    CHECK(pwrite(fd, &ch, sizeof ch, (off_t)jfx_chunk_offset(j, last)) == sizeof ch, "patch used");
    close(fd);
    jfx_free(j);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 30 && d.truncated, "torn: %d %zu %s", st, d.nregions, errbuf);
    xsprof_rank_data_free(&d);

    /* Garbage in a never-used chunk and over the header of a used chunk. */
    make_journal(jp, 50, XSPROF_JOURNAL_SIGNALED, 11, 2);
    j = jfx_create(512);
    uint64_t chunks_off = jfx_header(j)->chunks_offset;
    jfx_free(j);
    struct stat sb;
    stat(jp, &sb);
    unsigned char junk[512];
    srand(7);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rand();
    file_write_at(jp, (uint64_t)sb.st_size - 512, junk, sizeof junk); /* last free chunk */
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 100, "garbage free chunk: %d %zu %s", st, d.nregions, errbuf);
    CHECK(!strcmp(d.end_state, "signal 11 (SIGSEGV)") && d.truncated, "end_state %s", d.end_state);
    xsprof_rank_data_free(&d);
    file_write_at(jp, chunks_off + 512, junk, 64); /* header of chunk 1 */
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions > 80 && d.nregions < 100 && d.truncated,
          "garbage chunk header: %d %zu %s", st, d.nregions, errbuf);
    xsprof_rank_data_free(&d);
    /* A record header claiming an unknown type in the middle of a chunk. */
    xsprof_rec_hdr bad = {.type = 999, .size = 32};
    file_write_at(jp, chunks_off + 2 * 512 + sizeof(xsprof_chunk_header) + 112, &bad, sizeof bad);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions > 70 && d.nregions < 100, "bad record type: %d %zu", st, d.nregions);
    xsprof_rank_data_free(&d);

    /* Journal ending in the middle of a chunk (disk full, copy cut short). */
    make_journal(jp, 50, XSPROF_JOURNAL_RUNNING, 0, 0);
    stat(jp, &sb);
    CHECK(truncate(jp, sb.st_size - 300) == 0, "truncate");
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions > 90 && d.nregions < 100, "short file: %d %zu %s", st, d.nregions, errbuf);
    xsprof_rank_data_free(&d);
}

/* Dropped records leave args without their region or regions without
 * their args: each arg goes to its own region or nowhere. */
static void test_orphan_args(void)
{
    const char *jp = path_in("orphans.xsj");
    unlink(jp);
    jfx *j = jfx_create(1024);
    uint32_t name = jfx_string(j, "r"), key = jfx_string(j, "k");
    jfx_arg_int(j, 0, 1, key, 1);     /* its depth-1 region was dropped */
    jfx_region(j, 0, 1, name, 0, 10, 20);
    jfx_arg_int(j, 0, 0, key, 10);
    jfx_arg_int(j, 0, 1, key, 2);     /* deeper than the region that ends next */
    jfx_region(j, 0, 0, name, 1, 5, 30);
    jfx_arg_int(j, 0, 0, key, 20);    /* one of its two args was dropped */
    jfx_region(j, 0, 0, name, 2, 40, 50);
    jfx_arg_int(j, 0, 0, key, 30);    /* region still open at the crash */
    CHECK(jfx_write(j, jp, 0) == 0, "write");
    jfx_free(j);
    xsprof_rank_data d;
    xsprof_status st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 3 && d.nargs == 2, "orphans: %d %zu regions %zu args %s", st,
          d.nregions, d.nargs, errbuf);
    if (st == XSPROF_OK && d.nregions == 3 && d.nargs == 2) {
        CHECK(d.regions[0].nargs == 0 && d.regions[0].args == -1, "dropped region's arg attached elsewhere");
        CHECK(d.regions[1].nargs == 1 && d.args[d.regions[1].args].i == 10 && d.args[0].region == 1,
              "outer region args");
        CHECK(d.regions[2].nargs == 1 && d.args[d.regions[2].args].i == 20 && d.args[1].region == 2,
              "region with a dropped arg");
    }
    xsprof_rank_data_free(&d);
}

static void test_journal_headers(void)
{
    const char *jp = path_in("hdr.xsj");
    xsprof_rank_data d;
    xsprof_status st = xsprof_journal_load(path_in("absent.xsj"), &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_IO && one_line_naming(errbuf, path_in("absent.xsj")), "absent: %d %s", st, errbuf);

    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    file_write_at(jp, 0, "NOTJRNL", 8);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, jp) && strstr(errbuf, "magic"), "magic: %d %s", st,
          errbuf);

    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    uint32_t v = 99;
    file_write_at(jp, offsetof(xsprof_journal_header, version), &v, 4);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_VERSION && one_line_naming(errbuf, jp), "version: %d %s", st, errbuf);

    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    uint32_t cs = 3;
    file_write_at(jp, offsetof(xsprof_journal_header, chunk_size), &cs, 4);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, jp), "chunk size: %d %s", st, errbuf);

    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    CHECK(truncate(jp, 100) == 0, "truncate");
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, jp), "short header: %d %s", st, errbuf);

    /* A string area cut in the middle of an entry: the complete ones stay. */
    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    uint64_t su = 8 + 4 + 6; /* "work" whole, then 6 bytes of "n"'s entry */
    file_write_at(jp, offsetof(xsprof_journal_header, strings_used), &su, 8);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nstrings == 1 && d.nregions == 10, "torn string: %d %u %s", st, d.nstrings, errbuf);
    xsprof_rank_data_free(&d);

    /* The last entry complete but its padding cut off: kept, and nothing
     * past the end is read (an ASan build of this test catches overreads). */
    make_journal(jp, 5, XSPROF_JOURNAL_RUNNING, 0, 0);
    su = 8 + 4 + 8 + 1;
    file_write_at(jp, offsetof(xsprof_journal_header, strings_used), &su, 8);
    st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nstrings == 2 && !strcmp(d.strings[1], "n"), "unpadded string: %d %u %s", st,
          d.nstrings, errbuf);
    xsprof_rank_data_free(&d);
}

/* String entries out of id order and repeated (names interned while the
 * journal opens are written twice by core): all kept, none "damaged". */
static void test_string_order(void)
{
    const char *jp = path_in("order.xsj"), *hp = path_in("order.h5");
    unlink(jp);
    unlink(hp);
    jfx *j = jfx_create(512);
    jfx_string_entry(j, 2, "gamma");
    jfx_string_entry(j, 0, "alpha");
    jfx_string_entry(j, 1, "beta");
    jfx_string_entry(j, 2, "gamma");
    jfx_string_entry(j, 4, "epsilon"); /* 3 never written: the process died first */
    jfx_region(j, 0, 0, 2, 0, 1, 2);
    CHECK(jfx_write(j, jp, 0) == 0, "write");
    jfx_free(j);
    xsprof_status st = xsprof_journal_convert(jp, hp, "finalized", errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK, "convert: %s", errbuf);
    xsprof_rank_data d;
    st = xsprof_rankfile_load(hp, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nstrings == 5 && !d.truncated, "load: %d %u strings truncated %d %s", st,
          d.nstrings, d.truncated, errbuf);
    if (st == XSPROF_OK && d.nstrings == 5)
        CHECK(!strcmp(d.strings[0], "alpha") && !strcmp(d.strings[1], "beta") && !strcmp(d.strings[2], "gamma") &&
                  !strcmp(d.strings[3], "?") && !strcmp(d.strings[4], "epsilon") &&
                  !strcmp(xsprof_rank_data_string(&d, d.regions[0].name), "gamma"),
              "strings out of order");
    xsprof_rank_data_free(&d);
}

/* Random damage anywhere: the parser may lose data but must not crash, and
 * whatever it returns must be internally consistent. */
static void test_journal_fuzz(void)
{
    const char *clean = path_in("fuzz-clean.xsj"), *jp = path_in("fuzz.xsj"), *hp = path_in("fuzz.h5");
    make_journal(clean, 40, XSPROF_JOURNAL_RUNNING, 0, 1);
    struct stat sb;
    stat(clean, &sb);
    unsigned char *img = malloc((size_t)sb.st_size), *mut = malloc((size_t)sb.st_size);
    int fd = open(clean, O_RDONLY);
    CHECK(fd >= 0 && read(fd, img, (size_t)sb.st_size) == sb.st_size, "read clean");
    close(fd);

    jfx *j = jfx_create(512);
    uint64_t chunks_off = jfx_header(j)->chunks_offset;
    jfx_free(j);
    srand(12345);
    int ok = 0, errs = 0;
    for (int round = 0; round < 300; round++) {
        memcpy(mut, img, (size_t)sb.st_size);
        int flips = 1 + rand() % 16;
        for (int f = 0; f < flips; f++) {
            uint64_t off;
            if (round % 10 == 0) /* sometimes the header or the strings */
                off = (uint64_t)rand() % (sizeof(xsprof_journal_header) + 64);
            else
                off = chunks_off + (uint64_t)rand() % ((uint64_t)sb.st_size - chunks_off);
            mut[off] = (unsigned char)rand();
        }
        fd = open(jp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && write(fd, mut, (size_t)sb.st_size) == sb.st_size, "write fuzz");
        close(fd);
        xsprof_rank_data d;
        xsprof_status st = xsprof_journal_load(jp, &d, errbuf, sizeof errbuf);
        if (st == XSPROF_OK) {
            ok++;
            for (size_t i = 0; i < d.nregions; i++)
                if (d.regions[i].args >= 0 && (uint64_t)d.regions[i].args + d.regions[i].nargs > d.nargs) {
                    CHECK(0, "round %d: region %zu points outside args", round, i);
                    break;
                }
        } else {
            errs++;
            CHECK(one_line_naming(errbuf, jp), "round %d: message %s", round, errbuf);
        }
        xsprof_rank_data_free(&d);
        /* The converter sees the same damage: a file that loads, or an error. */
        unlink(hp);
        st = xsprof_journal_convert(jp, hp, NULL, errbuf, sizeof errbuf);
        if (st == XSPROF_OK) {
            st = xsprof_rankfile_load(hp, &d, errbuf, sizeof errbuf);
            CHECK(st == XSPROF_OK, "round %d: converted file does not load: %s", round, errbuf);
            xsprof_rank_data_free(&d);
        } else
            CHECK(access(hp, F_OK) != 0, "round %d: failed conversion left %s", round, hp);
        check_no_open_ids("fuzzed journal", round);
    }
    printf("fuzz: %d journals loaded, %d rejected\n", ok, errs);
    CHECK(ok > 100, "only %d of 300 lightly damaged journals loaded", ok);
    free(img);
    free(mut);
}

static void copy_file(const char *from, const char *to)
{
    unlink(to);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0644);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        CHECK(write(out, buf, (size_t)n) == n, "copy");
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
}

/* Edit a copy of the good file with HDF5 itself. */
static hid_t h5_open_rw(const char *p)
{
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    CHECK(f >= 0, "H5Fopen %s", p);
    return f;
}

static void test_rankfiles(void)
{
    char jp[4096], good[4096]; /* kept: path_in reuses its buffers */
    snprintf(jp, sizeof jp, "%s", path_in("good.xsj"));
    snprintf(good, sizeof good, "%s", path_in("good.h5"));
    make_journal(jp, 100, XSPROF_JOURNAL_RUNNING, 0, 0);
    unlink(good);
    xsprof_status st = xsprof_journal_convert(jp, good, "finalized", errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK, "convert good: %s", errbuf);
    xsprof_rank_data d;
    st = xsprof_rankfile_load(good, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_OK && d.nregions == 200, "good: %d %s", st, errbuf);
    xsprof_rank_data_free(&d);

    struct stat sb;
    stat(good, &sb);
    const char *p = path_in("cut.h5");
    copy_file(good, p);
    CHECK(truncate(p, sb.st_size / 2) == 0, "truncate");
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p), "truncated h5: %d %s", st, errbuf);

    p = path_in("random.h5");
    unlink(p);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    unsigned char junk[8192];
    srand(99);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)rand();
    CHECK(fd >= 0 && write(fd, junk, sizeof junk) == (ssize_t)sizeof junk, "write junk");
    close(fd);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "not an HDF5 file"),
          "random: %d %s", st, errbuf);

    st = xsprof_rankfile_load(path_in("absent.h5"), &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_IO && one_line_naming(errbuf, path_in("absent.h5")), "absent: %d %s", st, errbuf);

    /* Wrong format version. */
    p = path_in("version.h5");
    copy_file(good, p);
    hid_t f = h5_open_rw(p), a = H5Aopen(f, "format_version", H5P_DEFAULT);
    int32_t v = XSPROF_FORMAT_VERSION + 1;
    H5Awrite(a, H5T_NATIVE_INT32, &v);
    H5Aclose(a);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_VERSION && one_line_naming(errbuf, p) && strstr(errbuf, "version 3"),
          "wrong version: %d %s", st, errbuf);

    /* An HDF5 file of somebody else. */
    p = path_in("foreign.h5");
    unlink(p);
    f = H5Fcreate(p, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "not an xsprof rank file"),
          "foreign: %d %s", st, errbuf);

    /* Missing dataset. */
    p = path_in("missing.h5");
    copy_file(good, p);
    f = h5_open_rw(p);
    H5Ldelete(f, XSPROF_DS_MPI, H5P_DEFAULT);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "missing dataset /events/mpi"),
          "missing: %d %s", st, errbuf);

    /* Dataset with the wrong type: instants as plain int64. */
    p = path_in("wrongtype.h5");
    copy_file(good, p);
    f = h5_open_rw(p);
    H5Ldelete(f, XSPROF_DS_INSTANTS, H5P_DEFAULT);
    hsize_t n = 4;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t ds = H5Dcreate2(f, XSPROF_DS_INSTANTS, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "/events/instants"),
          "wrong type: %d %s", st, errbuf);

    /* Compound with a field of the wrong type (t_end as float). */
    p = path_in("wrongfield.h5");
    copy_file(good, p);
    f = h5_open_rw(p);
    H5Ldelete(f, XSPROF_DS_REGIONS, H5P_DEFAULT);
    hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(xsprof_io_region));
    H5Tinsert(ct, "t_begin", HOFFSET(xsprof_io_region, t_begin), H5T_NATIVE_INT64);
    H5Tinsert(ct, "t_end", HOFFSET(xsprof_io_region, t_end), H5T_NATIVE_DOUBLE);
    H5Tinsert(ct, "name", HOFFSET(xsprof_io_region, name), H5T_NATIVE_UINT32);
    H5Tinsert(ct, "thread", HOFFSET(xsprof_io_region, thread), H5T_NATIVE_UINT32);
    H5Tinsert(ct, "depth", HOFFSET(xsprof_io_region, depth), H5T_NATIVE_UINT16);
    H5Tinsert(ct, "category", HOFFSET(xsprof_io_region, category), H5T_NATIVE_UINT16);
    H5Tinsert(ct, "nargs", HOFFSET(xsprof_io_region, nargs), H5T_NATIVE_UINT32);
    H5Tinsert(ct, "args", HOFFSET(xsprof_io_region, args), H5T_NATIVE_INT64);
    sp = H5Screate_simple(1, &n, NULL);
    ds = H5Dcreate2(f, XSPROF_DS_REGIONS, ct, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(ct);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "t_end"), "wrong field: %d %s",
          st, errbuf);

    /* 2-D dataset where a table belongs. */
    p = path_in("rank2.h5");
    copy_file(good, p);
    f = h5_open_rw(p);
    H5Ldelete(f, XSPROF_DS_COMM_MEMBERS, H5P_DEFAULT);
    hsize_t dims2[2] = {2, 2};
    sp = H5Screate_simple(2, dims2, NULL);
    ds = H5Dcreate2(f, XSPROF_DS_COMM_MEMBERS, H5T_NATIVE_INT32, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "one-dimensional"),
          "rank 2: %d %s", st, errbuf);

    /* A region row pointing past the args table. */
    p = path_in("badref.h5");
    copy_file(good, p);
    f = h5_open_rw(p);
    ds = H5Dopen2(f, XSPROF_DS_REGIONS, H5P_DEFAULT);
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
    H5Tinsert(mt, "args", 0, H5T_NATIVE_INT64);
    hid_t fs = H5Dget_space(ds);
    hsize_t start = 5, one = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL);
    hid_t ms = H5Screate_simple(1, &one, NULL);
    int64_t big = 1000000;
    H5Dwrite(ds, mt, ms, fs, H5P_DEFAULT, &big);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Tclose(mt);
    H5Dclose(ds);
    H5Fclose(f);
    st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_FORMAT && one_line_naming(errbuf, p) && strstr(errbuf, "region row 5"),
          "bad ref: %d %s", st, errbuf);
    CHECK(d.nregions == 0 && d.regions == NULL, "data left after an error");

    /* Corrupt bytes inside the file body: an error or a consistent load. */
    p = path_in("flipped.h5");
    int errors = 0;
    srand(5);
    for (int round = 0; round < 60; round++) {
        copy_file(good, p);
        fd = open(p, O_WRONLY);
        for (int k = 0; k < 8; k++) {
            unsigned char b = (unsigned char)rand();
            CHECK(pwrite(fd, &b, 1, (off_t)((uint64_t)rand() % (uint64_t)sb.st_size)) == 1, "flip");
        }
        close(fd);
        st = xsprof_rankfile_load(p, &d, errbuf, sizeof errbuf);
        if (st != XSPROF_OK) {
            errors++;
            CHECK(one_line_naming(errbuf, p), "flipped: %s", errbuf);
        }
        check_no_open_ids("flipped rank file", round);
        xsprof_rank_data_free(&d);
    }
    printf("flipped rank files: %d of 60 rejected\n", errors);
}

/* A file system that fills up during the conversion (RLIMIT_FSIZE here, so
 * no mount is needed): an error naming the file, no file left behind, and
 * the process still exits cleanly — HDF5's exit handler must find nothing
 * half-closed. The limit moves the failure through data, metadata and the
 * final flush. */
static void test_disk_full(void)
{
    char jp[4096], hp[4096];
    snprintf(jp, sizeof jp, "%s", path_in("full.xsj"));
    snprintf(hp, sizeof hp, "%s", path_in("full.h5"));
    unlink(jp);
    jfx *j = jfx_create(65536);
    uint32_t name = jfx_string(j, "r"), key = jfx_string(j, "k");
    srand(3);
    for (int i = 0; i < 60000; i++) {
        jfx_arg_int(j, 0, 0, key, rand());
        jfx_region(j, 0, 0, name, 1, rand(), rand());
    }
    CHECK(jfx_write(j, jp, 0) == 0, "write %s", jp);
    jfx_free(j);
    /* the limits follow the whole file's size (the compressor sets it):
     * through the data, then within 25 kB, 10 kB and 3 kB of the end */
    unlink(hp);
    struct stat sb;
    CHECK(xsprof_journal_convert(jp, hp, "finalized", errbuf, sizeof errbuf) == XSPROF_OK && stat(hp, &sb) == 0 &&
              sb.st_size > 100000,
          "convert %s without a limit: %s", jp, errbuf);
    long size = (long)sb.st_size;
    const long limits[] = {1024, 4096, 16384, 65536, size / 4, size / 2, 3 * size / 4, size * 9 / 10, size - 25000,
                           size - 10000, size - 3000};
    for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
        unlink(hp);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            /* Only the soft limit: it is lifted again before exit so the
             * exit handlers (HDF5's, gcov's in a coverage build) can write. */
            struct rlimit saved, rl;
            getrlimit(RLIMIT_FSIZE, &saved);
            rl = saved;
            rl.rlim_cur = (rlim_t)limits[k];
            signal(SIGXFSZ, SIG_IGN);
            setrlimit(RLIMIT_FSIZE, &rl);
            xsprof_status st = xsprof_journal_convert(jp, hp, "finalized", errbuf, sizeof errbuf);
            int ok = st == XSPROF_ERR_IO && one_line_naming(errbuf, hp) && strstr(errbuf, "too large") &&
                     access(hp, F_OK) != 0;
            if (!ok)
                fprintf(stderr, "limit %ld: status %d, message %s, file left %d\n", limits[k], st, errbuf,
                        access(hp, F_OK) == 0);
            setrlimit(RLIMIT_FSIZE, &saved);
            exit(ok ? 0 : 3); /* exit(), not _exit(): HDF5's handler runs */
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "file size limit %ld: child status %d", limits[k],
              status);
    }
}

static void test_create_safety(void)
{
    const char *jp = path_in("safe.xsj"), *target = path_in("victim"), *link = path_in("link.h5");
    make_journal(jp, 3, XSPROF_JOURNAL_RUNNING, 0, 0);
    unlink(target);
    unlink(link);
    CHECK(symlink(target, link) == 0, "symlink: %s", strerror(errno));
    xsprof_status st = xsprof_journal_convert(jp, link, "finalized", errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_IO && one_line_naming(errbuf, link), "symlink: %d %s", st, errbuf);
    CHECK(access(target, F_OK) != 0, "the symlink target was created");

    const char *p = path_in("umask.h5");
    unlink(p);
    mode_t old = umask(077);
    st = xsprof_journal_convert(jp, p, "finalized", errbuf, sizeof errbuf);
    umask(old);
    struct stat sb;
    CHECK(st == XSPROF_OK && stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0600, "umask: %d mode %o", st,
          (unsigned)(sb.st_mode & 0777));

    p = path_in("nodir/x.h5");
    st = xsprof_journal_convert(jp, p, "finalized", errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_IO && one_line_naming(errbuf, p), "missing dir: %d %s", st, errbuf);
    p = path_in("fromdamaged.h5");
    unlink(p);
    st = xsprof_journal_convert(path_in("absent.xsj"), p, "finalized", errbuf, sizeof errbuf);
    CHECK(st == XSPROF_ERR_IO && access(p, F_OK) != 0, "absent journal: %d %s", st, errbuf);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0777);
    /* Anything HDF5 prints while the library runs lands here: it must stay
     * empty (the tests' own HDF5 edits run with printing on too). */
    char errlog[4096];
    snprintf(errlog, sizeof errlog, "%s", path_in("stderr.log"));
    fflush(stderr);
    int saved = dup(2), fd = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);

    /* First: its children inherit this process's HDF5 state, and reading
     * the corrupt files below leaves HDF5 with internal leaks of its own
     * (it then complains at exit). */
    test_disk_full();
    test_journal_recovery();
    test_orphan_args();
    test_string_order();
    test_journal_headers();
    test_journal_fuzz();
    test_rankfiles();
    test_create_safety();

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    struct stat sb;
    stat(errlog, &sb);
    if (sb.st_size) {
        char buf[4096];
        fd = open(errlog, O_RDONLY);
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        fprintf(stderr, "stderr was not quiet:\n%s\n", buf);
        io_check_failures++;
    }
    return io_check_result("test_io_damage");
}
