"""tests/merge/check_threads.py — xsmerge's threads on small runs of every
shape: in memory (decoding threads, two trace.pftrace writers, trace.json
formatting threads, the analysis beside trace.json and merged.h5) and
streamed (read-ahead worker, writer threads, the reports' reading pass
beside trace.json and merged.h5), serial and with helper processes. Built
with -fsanitize=thread (the CI's tsan stage runs the tests labelled
threads), a data race stops xsmerge (halt_on_error) and fails the exit-code
check; in a normal build it checks that every product is written and that
the streamed trace.pftrace is the in-memory one.

usage: check_threads.py MERGE_MAKE_RUNS"""
import filecmp
import json
import os
import shutil
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mergetest import check, finish, make_run, tmpdir, xsmerge  # noqa: E402

maker = sys.argv[1]
base = tmpdir()
runs = {k: make_run(maker, k, os.path.join(base, k)) for k in ("golden", "gpu", "icoll", "mpithreads")}
runs["bigskew"] = make_run(maker, "bigskew", os.path.join(base, "bigskew"), 4, 3000)
runs["wide"] = make_run(maker, "big", os.path.join(base, "wide"), 40, 300)  # helper processes decode (>= 32 files)
ALL = ["trace.pftrace", "trace.json", "merged.h5", "report.json", "report.txt", "report.html", "flame.folded",
       "flame.svg"]
for name, run in sorted(runs.items()):
    outs = {}
    for mode, extra in (("memory", []), ("stream", ["--stream", "--outputs", "pftrace,json,h5,report"])):
        out = os.path.join(base, "out-%s-%s" % (name, mode))
        rc, so, se = xsmerge(run, "-o", out, "-q", *extra, env={"XSPROF_MERGE_READERS": "2"})
        check(rc == 0, "%s %s: exit %d (%s)" % (name, mode, rc, se[-2000:]))
        have = sorted(os.listdir(out)) if os.path.isdir(out) else []
        check(all(f in have for f in ALL), "%s %s: products %s" % (name, mode, have))
        outs[mode] = out
    if name == "mpithreads":  # MPI calls of two threads at once: the rank's MPI time counts them once
        for mode, out in sorted(outs.items()):
            with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
                mpi = h["mpi"][:]
            rep = json.load(open(os.path.join(out, "report.json")))
            for r in rep["ranks"]:
                iv = sorted((int(m["t_begin"]), int(m["t_end"])) for m in mpi if int(m["rank"]) == r["rank"])
                union, cover = 0, None
                for b, e in iv:
                    if cover is None or b >= cover:
                        union, cover = union + e - b, e
                    elif e > cover:
                        union, cover = union + e - cover, e
                check(abs(r["mpi_s"] - union * 1e-9) < 1e-9 and r["mpi_share"] <= 1,
                      "%s rank %d: MPI %s s (share %s), the union of its calls %s s" %
                      (mode, r["rank"], r["mpi_s"], r["mpi_share"], union * 1e-9))
    a, b = (os.path.join(outs[m], "trace.pftrace") for m in ("memory", "stream"))
    check(os.path.exists(a) and os.path.exists(b) and filecmp.cmp(a, b, shallow=False),
          "%s: streamed trace.pftrace is the in-memory one" % name)
shutil.rmtree(base, ignore_errors=True)
finish("merge_threads")
