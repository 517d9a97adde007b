#!/usr/bin/python3
"""Line coverage of a --coverage build straight from gcov's JSON output
(gcc >= 9: gcov --json-format --stdout), written in the shape of gcovr's
--json-summary ({"files": [{filename, line_covered, line_total}]}) so that
coverage_summary.py reads either. check-all.sh uses it when gcovr fails:
gcovr 5.2 (Debian 12) aborts with an AssertionError in merge_function when
two sources share a basename (merge/util.c and merge/analyze/util.c).
A line counts once per source file: covered when any object that compiled
it executed it.
usage: gcov_lines.py BUILD_DIR SOURCE_DIR OUT_JSON [EXCLUDED_TOP_DIR...]"""
import json
import os
import subprocess
import sys
from collections import defaultdict


def main():
    build, src, out = (os.path.abspath(a) for a in sys.argv[1:4])
    excluded = set(sys.argv[4:])
    by_dir = defaultdict(list)
    for root, _, files in os.walk(build):
        for f in files:
            if f.endswith(".gcda"):
                by_dir[root].append(os.path.join(root, f))
    lines = defaultdict(dict)  # source -> line -> covered
    for d, gcdas in sorted(by_dir.items()):
        p = subprocess.run(["gcov", "--json-format", "--stdout", "-o", d] + sorted(gcdas), cwd=d,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for text in p.stdout.splitlines():
            if not text.startswith("{"):
                continue
            j = json.loads(text)
            cwd = j.get("current_working_directory", d)
            for f in j.get("files", []):
                path = os.path.normpath(os.path.join(cwd, f["file"]))
                if not path.startswith(src + os.sep) or path.startswith(build + os.sep):
                    continue
                rel = os.path.relpath(path, src)
                if rel.split(os.sep, 1)[0] in excluded:
                    continue
                seen = lines[rel]
                for ln in f.get("lines", []):
                    n = ln["line_number"]
                    seen[n] = seen.get(n, False) or ln["count"] > 0
    files = [{"filename": rel, "line_total": len(v), "line_covered": sum(1 for c in v.values() if c)}
             for rel, v in sorted(lines.items())]
    json.dump({"files": files}, open(out, "w"), indent=1)
    tot = sum(f["line_total"] for f in files)
    cov = sum(f["line_covered"] for f in files)
    print("gcov: %d source files, %d / %d lines (%.1f %%)" % (len(files), cov, tot, 100.0 * cov / tot if tot else 0))
    return 0 if files else 1


if __name__ == "__main__":
    sys.exit(main())
