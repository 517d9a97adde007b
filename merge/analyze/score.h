/* merge/analyze/score.h — trace-size scoring (xsmerge --score, report.json
 * `score`): per region name its visits, bytes on disk, time per visit and
 * share of the time, the size of a run N times longer, and the XSPROF_FILTER
 * that removes the most events for the least time (the rule: README.md,
 * "Sizing a trace before a big run"). One table, filled either from the
 * rank files' regions tables (xsm_score_files, nothing else read) or from
 * the analysis's region table (xsm_score_from_an, both feedings alike).
 * Owner: merge analysis. */
#ifndef XSPROF_MERGE_ANALYZE_SCORE_H
#define XSPROF_MERGE_ANALYZE_SCORE_H

#include <stddef.h>
#include <stdint.h>
#include "merge/analyze/an.h"

typedef struct xsm_score_row {
    int32_t name;          /* in names */
    uint64_t visits;       /* region rows: xsprof writes one per visit, at its end */
    double seconds;        /* inclusive time summed over the visits */
    double bytes;          /* the name's share of its ranks' regions tables on disk */
    int suggested;         /* in the suggested filter */
} xsm_score_row;

typedef struct xsm_score {
    xsm_names names;
    xsm_score_row *row; size_t nrow, cap;
    int32_t *byname;       /* name index -> row + 1 (0 none) */
    size_t nbyname;
    uint64_t table_rows[XSPROF_STORED_COUNT];   /* the rank files' event tables and samples */
    uint64_t table_bytes[XSPROF_STORED_COUNT];
    double rank_s;         /* summed over ranks: the denominator of shares */
    double duration_s;     /* the run's length */
    double factor;         /* projection: a run `factor` times as long */
    size_t nranks;
    /* the suggestion (xsm_score_finish) */
    char filter[1024];     /* "" none */
    uint64_t f_visits;
    double f_bytes, f_seconds;
    uint64_t total_visits;
    double total_region_bytes, total_bytes;
} xsm_score;

/* Add visits of a region name (bytes: their estimated share on disk). 0,
 * -1 out of memory. */
int xsm_score_add(xsm_score *s, const char *name, uint64_t visits, double seconds, double bytes);
/* Sort the rows (bytes, then name), pick the filter. */
void xsm_score_finish(xsm_score *s);
void xsm_score_free(xsm_score *s);

/* From the analysis: its regions (visits and inclusive time over the ranks
 * it saw), each rank's bytes per regions-table row, its ranks' wall time;
 * factor as xsm_score_factor. 0, -1 out of memory. */
int xsm_score_from_an(xsm_score *s, const xsm_an *a, double factor_or_neg_s);
/* From the rank files of run_dir alone: their regions tables are read,
 * the other tables only sized. 0, or 1 with err set (one line). */
int xsm_score_files(xsm_score *s, const char *run_dir, double factor_or_neg_s, char *err, size_t errlen);

/* --score-for: "10x" -> 10, a duration ("2h", "30m", "600s", "1.5e9ns") ->
 * minus its seconds (the factor then depends on the run's length). 0 when
 * malformed. */
double xsm_score_for_parse(const char *s);

void xsm_score_json(const xsm_score *s, xsm_buf *b, int html_safe);
/* The table (at most `max` names) and the suggestion, for the terminal. */
void xsm_score_text(const xsm_score *s, xsm_buf *b, size_t max);

#endif
