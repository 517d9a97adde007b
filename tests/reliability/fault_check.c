/* tests/reliability/fault_check.c — checks what xsprof left in a run
 * directory after a fault, through the io reader (the library xsmerge uses):
 * for every rank, rank-NNNNN.h5 or else the journal rank-NNNNN.xsj must hold
 * exactly the "fault.iter" regions the application completed (its progress
 * file), and the rank must be labelled as the test expects.
 *
 * usage: fault_check RUN_DIR PROGRESS_DIR SUMMARY_JSON SPEC0 SPEC1 ...
 * SPECr for rank r:
 *   f            finished normally: a rank file, not truncated, "finalized"
 *   t[:a|b|...]  ended early: truncated, end state not "finalized" and, when
 *                given, containing one of the substrings a, b, ...
 *   d[:a|b|...]  full disk: records may have been dropped, so
 *                recovered <= completed <= recovered + dropped; the label,
 *                when alternatives are given, contains one of them; a rank
 *                without any data passes (its journal could not be
 *                created: the script checks it warned)
 *   none         no data expected (profiling was off for this rank)
 * Writes SUMMARY_JSON ({"ranks": [{rank, completed, recovered, dropped,
 * truncated, end_state, source}]}) for merged_check.py. Exit 0 when every
 * rank is as expected, 1 otherwise (each problem on one line). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/reader.h"

static int read_progress(const char *dir, int rank)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d", dir, rank);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = -1;
    if (fscanf(f, "%d", &n) != 1)
        n = -1;
    fclose(f);
    return n;
}

static int label_ok(const char *label, const char *alts)
{
    if (!alts || !*alts)
        return 1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", alts);
    for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
        if (strstr(label, tok))
            return 1;
    return 0;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: fault_check RUN_DIR PROGRESS_DIR SUMMARY_JSON SPEC0 [SPEC1...]\n");
        return 2;
    }
    const char *run = argv[1], *prog = argv[2];
    int nranks = argc - 4, bad = 0;
    FILE *js = fopen(argv[3], "w");
    if (!js) {
        perror(argv[3]);
        return 2;
    }
    fprintf(js, "{\"ranks\": [");
    for (int r = 0; r < nranks; r++) {
        char spec[512];
        snprintf(spec, sizeof spec, "%s", argv[4 + r]);
        char *alts = strchr(spec, ':');
        if (alts)
            *alts++ = 0;
        int completed = read_progress(prog, r);
        char h5[4096], xsj[4096], err[1024] = "";
        snprintf(h5, sizeof h5, "%s/rank-%05d.h5", run, r);
        snprintf(xsj, sizeof xsj, "%s/rank-%05d.xsj", run, r);
        int have_h5 = access(h5, F_OK) == 0, have_xsj = access(xsj, F_OK) == 0;
        const char *source = have_h5 ? "rankfile" : have_xsj ? "journal" : "none";
        xsprof_rank_data d;
        memset(&d, 0, sizeof d);
        xsprof_status st = XSPROF_ERR_IO;
        if (have_h5)
            st = xsprof_rankfile_load(h5, &d, err, sizeof err);
        /* As xsmerge does: a rank file that does not load (a conversion
         * killed half-way) falls back to the journal, which the writer only
         * deletes after a complete conversion. */
        if (st != XSPROF_OK && have_xsj) {
            if (have_h5)
                printf("note rank %d: %s does not load (%s); using the journal\n", r, h5, err);
            xsprof_rank_data_free(&d);
            memset(&d, 0, sizeof d);
            err[0] = 0;
            source = "journal";
            have_h5 = 0;
            st = xsprof_journal_load(xsj, &d, err, sizeof err);
        }
        long recovered = -1;
        if (st == XSPROF_OK) {
            recovered = 0;
            for (size_t i = 0; i < d.nregions; i++)
                recovered += !strcmp(xsprof_rank_data_string(&d, d.regions[i].name), "fault.iter");
        }
        printf("rank %d: completed %d, recovered %ld from %s, dropped %llu, truncated %d, end state \"%s\"%s%s\n", r,
               completed, recovered, source, (unsigned long long)d.dropped, d.truncated, d.end_state,
               err[0] ? ", error: " : "", err);
        if (completed < 0) {
            printf("FAIL rank %d: no progress file in %s (the application did not start?)\n", r, prog);
            bad = 1;
        }
        if (!strcmp(spec, "none")) {
            if (have_h5 || have_xsj) {
                printf("FAIL rank %d: expected no data, found %s\n", r, have_h5 ? h5 : xsj);
                bad = 1;
            }
        } else if (!strcmp(spec, "d") && !have_h5 && !have_xsj) {
            printf("rank %d: no data (journal never created)\n", r);
        } else if (st != XSPROF_OK) {
            printf("FAIL rank %d: no readable data (%s)\n", r, err[0] ? err : "neither rank file nor journal");
            bad = 1;
        } else {
            if (!strcmp(spec, "d")) {
                if (recovered > completed || recovered + (long)d.dropped < completed) {
                    printf("FAIL rank %d: %ld regions recovered + %llu dropped do not account for the %d completed\n",
                           r, recovered, (unsigned long long)d.dropped, completed);
                    bad = 1;
                }
            } else if (recovered != completed) {
                printf("FAIL rank %d: %ld regions recovered, the application completed %d\n", r, recovered, completed);
                bad = 1;
            }
            if (!strcmp(spec, "f")) {
                if (d.truncated || strcmp(d.end_state, "finalized") || !have_h5) {
                    printf("FAIL rank %d: expected a finished rank file (finalized), got %s, truncated %d, \"%s\"\n", r,
                           source, d.truncated, d.end_state);
                    bad = 1;
                }
            } else if (!strcmp(spec, "d")) {
                if (!label_ok(d.end_state, alts)) {
                    printf("FAIL rank %d: expected a label containing %s, got \"%s\"\n", r, alts, d.end_state);
                    bad = 1;
                }
            } else if (!strcmp(spec, "t")) {
                if (!d.truncated || !d.end_state[0] || !strcmp(d.end_state, "finalized") ||
                    !label_ok(d.end_state, alts)) {
                    printf("FAIL rank %d: expected an early end labelled %s, got truncated %d, \"%s\"\n", r,
                           alts ? alts : "(any)", d.truncated, d.end_state);
                    bad = 1;
                }
            } else {
                printf("FAIL: unknown spec %s\n", spec);
                bad = 1;
            }
        }
        fprintf(js, "%s{\"rank\": %d, \"completed\": %d, \"recovered\": %ld, \"dropped\": %llu, \"truncated\": %d, "
                    "\"source\": \"%s\", \"end_state\": ",
                r ? ", " : "", r, completed, recovered, (unsigned long long)d.dropped, d.truncated, source);
        json_str(js, d.end_state);
        fputc('}', js);
        xsprof_rank_data_free(&d);
    }
    fprintf(js, "]}\n");
    fclose(js);
    printf("%s\n", bad ? "FAIL: recovered data does not match the application's progress" : "OK: every rank as expected");
    return bad;
}
