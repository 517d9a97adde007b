#!/usr/bin/python3
"""Line coverage per module from a gcovr JSON summary (gcovr --json-summary).
usage: coverage_summary.py SUMMARY_JSON [TARGET_PERCENT MODULE...]
Prints one line per module (core, io, merge, mpi, pmpi_wrappers, gpu) and
writes the figures as `module percent covered total` lines to stdout's end
block for check-all.sh's summary. With TARGET_PERCENT and MODULEs, exits 1
when one of those modules is below the target."""
import json
import sys

MODULES = ["core", "io", "merge", "mpi", "pmpi_wrappers", "gpu"]


def main():
    data = json.load(open(sys.argv[1]))
    target = float(sys.argv[2]) if len(sys.argv) > 2 else None
    gated = sys.argv[3:]
    agg = {m: [0, 0] for m in MODULES}
    for f in data.get("files", []):
        name = f["filename"]
        top = name.split("/", 1)[0]
        if top in agg:
            agg[top][0] += f.get("line_covered", 0)
            agg[top][1] += f.get("line_total", 0)
    below = []
    for m in MODULES:
        cov, tot = agg[m]
        pct = 100.0 * cov / tot if tot else 0.0
        mark = ""
        if target is not None and m in gated:
            mark = "  (target %.0f %%)" % target
            if pct < target:
                below.append(m)
                mark += " BELOW"
        print("coverage %-14s %6.1f %%  %6d / %6d lines%s" % (m + "/", pct, cov, tot, mark))
    if below:
        print("coverage below the %.0f %% target: %s" % (target, ", ".join(below)))
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
