#!/usr/bin/python3
"""tests/e2e/e2e_hpcc.py — a real MPI application end to end: the HPC
Challenge suite (Debian's hpcc: HPL, PTRANS, RandomAccess with its
MPI_ANY_SOURCE/ANY_TAG receives completed by MPI_Test loops, FFT, ...),
4 ranks under mpiexec with LD_PRELOAD, on a small problem. Then:
  * hpcc itself reports its checks passed under xsprof;
  * the merge matches every message and every one pairs a receive with its
    own send (the bytes its status gave are the bytes sent), the clock
    condition holds after alignment, the wildcard receives are there;
  * --stream pairs the same messages and writes the same trace.pftrace,
    report.json, report.txt and merged.h5 /analysis (one analysis engine);
  * collective mode (mpiexec -np 2 xsmerge) writes the same files.
Environment (xsprof_add_test): MPIEXEC, XSPROF_MPI_LIB, XSMERGE."""
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

HPCC = shutil.which("hpcc") or "/usr/bin/hpcc"
# /usr/share/doc/hpcc/examples/_hpccinf.txt with N 500 (HPL), 2 x 2 grid
HPCCINF = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
500          Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
"""

failures = []



def same_table(x, y):
    """Two tables alike byte for byte (rows of strings, which numpy holds as
    objects, compared by value: their bytes would be pointers)."""
    return x.tolist() == y.tolist() if x.dtype.hasobject else x.tobytes() == y.tobytes()

def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def run(cmd, cwd, what, env=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, env=env)
    if p.returncode != 0:
        print(p.stdout[-4000:])
        print("FAIL: %s exited with %d" % (what, p.returncode))
        sys.exit(1)
    return p.stdout


def pairs(out):
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        msgs = f["messages"][:]
        mpi = f["mpi"]
        got = mpi["bytes_recv"]
        wild = int(((mpi["flags"] & 3) != 0).sum())
    return msgs, got, wild


def main():
    if not os.path.exists(HPCC):
        print("FAIL: hpcc is not installed (make deps installs the Debian package hpcc)")
        return 1
    work = tempfile.mkdtemp(prefix="xsprof-hpcc-")
    try:
        with open(os.path.join(work, "hpccinf.txt"), "w") as f:
            f.write(HPCCINF)
        mpiexec = os.environ.get("MPIEXEC") or "mpiexec"
        rundir = os.path.join(work, "run")
        run([mpiexec, "-np", "4", "--oversubscribe", "-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"],
             "-x", "XSPROF_OUTPUT=" + rundir, HPCC], work, "hpcc under xsprof")
        with open(os.path.join(work, "hpccoutf.txt")) as f:
            res = f.read()
        check("End of HPC Challenge tests." in res and "(passed)" in res and "(failed)" not in res and
              "0 tests completed and failed residual checks" in res, "hpcc ran to its end and its checks passed")

        xsmerge = os.environ["XSMERGE"]
        mem = os.path.join(work, "mem")
        run([xsmerge, rundir, "-o", mem, "--quiet"], work, "xsmerge")
        rep = json.load(open(os.path.join(mem, "report.json")))
        check(rep["clock"]["violations_after"] == 0, "no message received before it was sent after alignment")
        d = rep["drops"]
        check(d["unmatched_sends"] == 0 and d["unmatched_recvs"] == 0 and d["incomplete_collectives"] == 0,
              "every message and collective matched: %s" % d)
        msgs, got, wild = pairs(mem)
        bad = [(int(m["src"]), int(m["dst"]), int(m["tag"]), int(m["bytes"]), int(got[m["recv_row"]]))
               for m in msgs if got[m["recv_row"]] != m["bytes"]]
        check(len(msgs) > 1000 and not bad, "%d messages, each receive got its send's bytes (wrong: %s)" %
              (len(msgs), bad[:5]))
        check(wild > 1000, "%d MPI rows of receives posted with MPI_ANY_SOURCE/ANY_TAG" % wild)

        # the same look-back window as in memory (256 calls): the same bytes
        # (one engine); with --stream's own (16) a wait whose cause lies
        # between the two windows back has its root cause "beyond window"
        streamed = os.path.join(work, "streamed")
        said = run([xsmerge, rundir, "-o", streamed, "--stream", "--outputs", "pftrace,json,h5,report"], work,
                   "xsmerge --stream", env=dict(os.environ, XSPROF_MERGE_ANALYSIS_WINDOW="256"))
        smsgs, _, _ = pairs(streamed)
        check(smsgs.tolist() == msgs.tolist(), "--stream pairs the same messages")
        check(filecmp.cmp(os.path.join(mem, "trace.pftrace"), os.path.join(streamed, "trace.pftrace"), shallow=False),
              "--stream writes the same trace.pftrace")
        # one analysis engine, fed from the model or from the rank files
        print("--stream %s" % ("fell back to memory" if "merging in memory" in said else "streamed"))
        for name in ("report.json", "report.txt"):
            check(filecmp.cmp(os.path.join(mem, name), os.path.join(streamed, name), shallow=False),
                  "--stream writes the same %s" % name)
        with h5py.File(os.path.join(mem, "merged.h5"), "r") as a, h5py.File(os.path.join(streamed, "merged.h5"), "r") as b:
            check(sorted(a["analysis"]) == sorted(b["analysis"]) and
                  all(same_table(a["analysis"][k][()], b["analysis"][k][()]) for k in a["analysis"]),
                  "--stream writes the same merged.h5 /analysis tables (%d wait rows)" % a["analysis/waits"].shape[0])

        # with --stream's own window: every wait the same, kind by kind; only
        # root causes may differ (beyond its window)
        small = os.path.join(work, "streamed-16")
        run([xsmerge, rundir, "-o", small, "--stream", "--outputs", "report"], work, "xsmerge --stream (window 16)")
        ws = lambda d: [(w["kind"], w["instances"], w["seconds"]) for w in json.load(open(os.path.join(d, "report.json")))["wait_states"]]
        check(ws(small) == ws(mem), "--stream with its own window finds the same waits, kind by kind")

        coll = os.path.join(work, "collective")
        run([mpiexec, "-np", "2", "--oversubscribe", xsmerge, rundir, "-o", coll, "--quiet"], work,
            "mpiexec -np 2 xsmerge")
        for name in sorted(os.listdir(mem)):
            check(os.path.exists(os.path.join(coll, name)) and
                  filecmp.cmp(os.path.join(mem, name), os.path.join(coll, name), shallow=False),
                  "collective mode writes the same %s" % name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("e2e.hpcc: %d failure(s)" % len(failures))
        return 1
    print("e2e.hpcc: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
