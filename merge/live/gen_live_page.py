#!/usr/bin/python3
"""Generate live_page.c (the page of xsmerge --live) from live_page.html at
build time, with Chart.js embedded where @CHARTJS@ stands (no network: the
page is one self-contained file), in two parts split at @SNAPSHOT@, where
the server puts the snapshot of the moment it serves the page. The C literal is made by
merge/analyze/gen_html_page.py's literal(), as for report.html.
  gen_live_page.py OUT.c [CHART_JS]   (no CHART_JS: the page draws tables only)"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "analyze"))
from gen_html_page import literal  # noqa: E402


def main():
    out = sys.argv[1]
    page = open(os.path.join(HERE, "live_page.html"), encoding="utf-8").read()
    js = ""
    if len(sys.argv) > 2 and sys.argv[2]:
        js = open(sys.argv[2], encoding="utf-8").read().replace("</script", "<\\/script")
    page = page.replace("@CHARTJS@", js)
    head, tail = page.split("@SNAPSHOT@")
    text = ("/* live_page.c — GENERATED at build time by merge/live/gen_live_page.py from\n"
            " * live_page.html" + (" and " + os.path.basename(sys.argv[2]) if js else "") + ". */\n"
            "#include <stddef.h>\n\n"
            "const char xsm_live_page_head[] =\n" + literal(head) + ";\n"
            "const size_t xsm_live_page_head_len = sizeof xsm_live_page_head - 1;\n"
            "const char xsm_live_page_tail[] =\n" + literal(tail) + ";\n"
            "const size_t xsm_live_page_tail_len = sizeof xsm_live_page_tail - 1;\n")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(out + ".tmp", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
