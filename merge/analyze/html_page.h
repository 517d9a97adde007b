/* merge/analyze/html_page.h — the fixed parts of report.html; the report
 * JSON goes between head and mid, the folded stacks (a JSON string) between
 * mid and tail. */
#ifndef XSPROF_MERGE_ANALYZE_HTML_PAGE_H
#define XSPROF_MERGE_ANALYZE_HTML_PAGE_H

extern const char xsm_html_head[];
extern const char xsm_html_mid[];
extern const char xsm_html_tail[];

#endif
