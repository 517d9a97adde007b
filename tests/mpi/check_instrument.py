#!/usr/bin/python3
"""tests/mpi/check_instrument.py — -finstrument-functions regions end to end:
mpi_instrument.c, compiled with -finstrument-functions, runs under mpiexec
(libxsprof-mpi.so preloaded, or linked: --linked) with XSPROF_FILTER=-skipme;
xsmerge names each region after its function (captured as fn@0x<address>,
named from the binary at merge time), and merged.h5 holds per rank the
counts and nesting mpi_instrument.c's comment promises; callgrind.out puts
each function region in mpi_instrument.c where its function begins.

usage: check_instrument.py [--linked] XSMERGE PROGRAM
Environment (set by xsprof_add_test): MPIEXEC, XSPROF_MPI_LIB, XSPROF_BUILD."""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

import h5py

import callgrind_out

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("check_instrument: FAILED:", what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--linked", action="store_true")
    ap.add_argument("xsmerge")
    ap.add_argument("program")
    a = ap.parse_args()
    name = "instrument_" + ("linked" if a.linked else "preload")
    base = os.path.join(os.environ.get("XSPROF_BUILD", "."), "tests", "mpi", "runs", name)
    run_dir, out_dir = base, base + "-merged"
    for d in (run_dir, out_dir):
        shutil.rmtree(d, ignore_errors=True)
    cmd = [os.environ.get("MPIEXEC") or "mpiexec", "-np", "2", "--oversubscribe",
           "-x", "XSPROF_OUTPUT=" + run_dir, "-x", "XSPROF_FILTER=-skipme"]
    if not a.linked:
        cmd += ["-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"]]
    p = subprocess.run(cmd + [a.program], capture_output=True, text=True, timeout=300)
    print(p.stderr, end="")
    if p.returncode != 0:
        sys.exit("check_instrument: the program failed (%d)" % p.returncode)
    deep = [l for l in p.stderr.splitlines() if "nested deeper" in l]
    check(len(deep) == 2, "one note per rank about the 300-deep recursion: %s" % deep)
    check("API misuse" not in p.stderr, "deep recursion is not reported as API misuse")
    p = subprocess.run([a.xsmerge, run_dir, "-o", out_dir, "--outputs", "h5,report", "--format", "callgrind"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("check_instrument: xsmerge failed (%d): %s" % (p.returncode, p.stderr))
    with h5py.File(os.path.join(out_dir, "merged.h5"), "r") as f:
        names = [s.decode() if isinstance(s, bytes) else s for s in f["strings"][:]]
        regs = f["regions"][:]
    check(not [n for n in names if n.startswith("fn@0x")], "every function region is named: %s"
          % [n for n in names if n.startswith("fn@0x")][:5])
    for rank in (0, 1):
        r = sorted((x for x in regs if x["rank"] == rank), key=lambda x: (x["t_begin"], x["depth"]))
        count = collections.Counter(names[x["name"]] for x in r)
        want = {"work": 10, "leaf": 30, "rec": 20, "deep": 255, "inner_of_skipped": 5, "after": 1}
        for fn, n in want.items():
            check(count.get(fn, 0) == n, "rank %d: %d regions %s, found %d" % (rank, n, fn, count.get(fn, 0)))
        check(count.get("skipme", 0) == 0, "rank %d: skipme filtered out" % rank)
        works = [x for x in r if names[x["name"]] == "work"]
        leaves = [x for x in r if names[x["name"]] == "leaf"]
        inside = all(any(w["t_begin"] <= l["t_begin"] and l["t_end"] <= w["t_end"] and l["depth"] == w["depth"] + 1
                         for w in works) for l in leaves)
        check(inside, "rank %d: every leaf nests one level inside a work" % rank)
        recs = [x for x in r if names[x["name"]] == "rec"]
        d0 = min(x["depth"] for x in recs) if recs else 0
        check(collections.Counter(x["depth"] - d0 for x in recs) == {k: 4 for k in range(5)},
              "rank %d: rec nests 5 levels, 4 times" % rank)
        deeps = sorted(x["depth"] for x in r if names[x["name"]] == "deep")
        check(deeps == list(range(deeps[0], deeps[0] + 255)) if deeps else False,
              "rank %d: deep recorded on 255 consecutive levels (the region stack's 256 with main)" % rank)
        aft = [x for x in r if names[x["name"]] == "after"]
        check(aft and works and aft[0]["depth"] == works[0]["depth"],
              "rank %d: after the deep chain unwound, nesting is back where it was" % rank)
        skipped = [x for x in r if names[x["name"]] == "inner_of_skipped"]
        check(skipped and works and skipped[0]["depth"] == works[0]["depth"] + 1,
              "rank %d: the filtered function keeps its level: its callee is one deeper" % rank)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_instrument.c")
    starts = {}  # function -> the line its definition starts on
    for no, line in enumerate(open(src), 1):
        m = re.match(r"(?:__attribute__\(\(\w+\)\) )?(?:static )?\w+ (\w+)\(", line)
        if m:
            starts.setdefault(m.group(1), no)
    cg = callgrind_out.self_costs(os.path.join(out_dir, "callgrind.out"))
    for fn in ("work", "leaf", "rec", "deep"):
        places = [(os.path.basename(fl or ""), min(lines)) for (fl, f), lines in cg.items() if f == fn]
        check(places and all(p[0] == "mpi_instrument.c" and starts.get(fn, -9) <= p[1] <= starts.get(fn, -9) + 2
                             for p in places),
              "callgrind.out: the function region %s in mpi_instrument.c where it begins (line %s): %s"
              % (fn, starts.get(fn), places))
    with open(os.path.join(out_dir, "report.txt")) as rep:
        text = rep.read()
    check("`deep`" in text or " deep " in text, "the report names function regions")
    if FAILS:
        sys.exit("check_instrument: %d failures (runs kept in %s)" % (len(FAILS), base))
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    print("check_instrument: all checks passed")


if __name__ == "__main__":
    main()
