#!/usr/bin/python3
"""Generate html_page.c from report_page.html (the page of report.html).

The page is edited as HTML; the C file holds it as three string constants
split at @DATA@ (the report JSON) and @FOLDED@ (the folded stacks).
  gen_html_page.py           rewrite html_page.c
  gen_html_page.py --check   exit 1 when html_page.c is stale (a test runs this)"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def literal(text):
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        esc = line.replace("\\", "\\\\").replace('"', '\\"')
        if "??" in esc:  # C trigraphs
            esc = esc.replace("??", '?""?')
        out.append('    "' + esc + ('\\n"' if i + 1 < len(lines) else '"'))
    return "\n".join(out)


def generate():
    page = open(os.path.join(HERE, "report_page.html"), encoding="utf-8").read()
    head, rest = page.split("@DATA@")
    mid, tail = rest.split("@FOLDED@")
    return ("/* merge/analyze/html_page.c — GENERATED from report_page.html by\n"
            " * gen_html_page.py: edit the HTML and rerun the script. The page draws\n"
            " * report.html from the embedded report JSON and folded stacks; no network:\n"
            " * inline script and style only, a CSP forbids anything else. */\n"
            '#include "html_page.h"\n\n'
            "const char xsm_html_head[] =\n" + literal(head) + ";\n\n"
            "const char xsm_html_mid[] =\n" + literal(mid) + ";\n\n"
            "const char xsm_html_tail[] =\n" + literal(tail) + ";\n")


def main():
    target = os.path.join(HERE, "html_page.c")
    text = generate()
    if "--check" in sys.argv[1:]:
        if open(target, encoding="utf-8").read() != text:
            print("html_page.c is stale: run merge/analyze/gen_html_page.py")
            return 1
        print("html_page.c matches report_page.html")
        return 0
    with open(target, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
