/* merge/analyze/html.c — report.html: one self-contained page. The data is
 * the report JSON itself (written with '<', '>' and '&' escaped so it cannot
 * close its <script> element), drawn by the page's inline script: its
 * sections (report.txt's, topology and trace size included) are computed
 * once, for report.json. */
#include "an.h"
#include "html_page.h"

void xsm_report_html(const char *json, const char *folded, xsm_buf *b)
{
    xsm_buf_puts(b, xsm_html_head);
    xsm_buf_puts(b, json);
    xsm_buf_puts(b, xsm_html_mid);
    xsm_buf_json_str(b, folded, 1);
    xsm_buf_puts(b, xsm_html_tail);
}
