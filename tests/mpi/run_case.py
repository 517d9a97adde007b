#!/usr/bin/python3
"""tests/mpi/run_case.py — run one MPI test case: the program under mpiexec
without xsprof, then with it (LD_PRELOAD, or linked), compare the outputs
(they must be identical, line order aside since ranks interleave), then
check the rank files with check_trace.py.

usage: run_case.py --name N --np P --mode M [--preload] [--no-plain]
                   [--env K=V ...] [--check=ARG ...] [--merge [--matched] [--messages K]]
                   -- PROGRAM ARGS...
Environment (set by xsprof_add_test): MPIEXEC, XSPROF_MPI_LIB, XSPROF_BUILD."""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--mode", default="generic")
    ap.add_argument("--preload", action="store_true")
    ap.add_argument("--no-plain", action="store_true")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--merge", action="store_true", help="also merge with xsmerge: zero clock violations")
    ap.add_argument("--matched", action="store_true",
                    help="with --merge: the merged trace matches every send with its receive and every "
                         "nonblocking receive with its completion")
    ap.add_argument("--messages", type=int, metavar="K", help="with --merge: --matched, and exactly K messages")
    ap.add_argument("--stream-same", action="store_true",
                    help="with --merge: merge again with --stream; the same messages and collectives tables")
    ap.add_argument("--check", action="append", default=[], help="argument for check_trace.py")
    ap.add_argument("--merged-check", action="store_true",
                    help="with --merge: also check the mode's expectations of the merged trace (check_trace.py --merged)")
    ap.add_argument("--nodes", metavar="AGENT",
                    help="run on two emulated nodes of np/2 ranks each: Open MPI's rsh launcher with this agent "
                         "(tests/merge/fake_rsh.sh) starts each host's daemon here")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    mpiexec = os.environ.get("MPIEXEC") or "mpiexec"
    run_dir = os.path.join(os.environ.get("XSPROF_BUILD", "."), "tests", "mpi", "runs", a.name)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(os.path.dirname(run_dir), exist_ok=True)
    base = [mpiexec, "-np", str(a.np), "--oversubscribe"]
    if a.nodes:
        # the emulated nodes' session and shared-memory directories go
        # under a directory of this test's, removed at the end
        tmp = tempfile.mkdtemp(prefix="xsprof-nodes-")
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        os.environ["TMPDIR"] = tmp
        half = a.np // 2
        hosts = "nodeA%d:%d,nodeB%d:%d" % (os.getpid(), half, os.getpid(), a.np - half)
        base += ["--mca", "plm_rsh_agent", a.nodes, "--host", hosts]

    def run(extra):
        for attempt in range(3):
            p = subprocess.run(base + extra + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=240)
            # emulated nodes: a daemon may fail in Open MPI's own start-up
            # (tests/merge/fake_rsh.sh), before the program runs; again
            if not a.nodes or "ORTE was unable to reliably start" not in p.stderr:
                break
            print("note: a daemon of the emulated nodes did not start (attempt %d)" % (attempt + 1))
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            print("FAIL: %s exited with %d" % (" ".join(base + extra + cmd), p.returncode))
            sys.exit(1)
        # ranks write concurrently through mpiexec: lines of two ranks may
        # interleave, so compare the per-rank statements, whatever their order
        return sorted(x.strip() for x in re.split(r"(?=rank \d+[: ])", p.stdout) if x.strip())

    plain = None if a.no_plain else run([])
    extra = ["-x", "XSPROF_OUTPUT=" + run_dir]
    if a.preload:
        extra += ["-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"]]
    for kv in a.env:
        extra += ["-x", kv]
    profiled = run(extra)
    if plain is not None:
        if plain != profiled:
            print("FAIL: output differs with xsprof\n--- plain\n%s\n--- with xsprof\n%s" %
                  ("\n".join(plain), "\n".join(profiled)))
            return 1
        print("program output identical with and without xsprof (%d lines)" % len(plain))
    check = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_trace.py"),
             run_dir, str(a.np), a.mode] + a.check
    rc = subprocess.run(check).returncode
    if rc or not a.merge:
        return rc
    # The merged trace (xsmerge, owned by merge/) must agree: no message
    # received before it was sent once the stored offsets are applied.
    out = run_dir + "-merged"
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([os.environ["XSMERGE"], run_dir, "-o", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(p.stdout.strip())
    if p.returncode != 0:
        print("FAIL: xsmerge exited with %d" % p.returncode)
        return 1
    if check_job_id(run_dir, out):
        return 1
    with open(os.path.join(out, "report.json")) as f:
        clock = json.load(f)["clock"]
    print("merged trace: clock violations before %d, after %d, max residual %.3f us" %
          (clock["violations_before"], clock["violations_after"], clock["max_residual_us"]))
    if clock["violations_after"] != 0:
        print("FAIL: messages received before they were sent in the merged trace")
        return 1
    if a.matched or a.messages is not None:
        with open(os.path.join(out, "report.json")) as f:
            drops = json.load(f)["drops"]
        with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
            nmsg = len(f["messages"])
        # unmatched_recvs also counts nonblocking receives posted but never completed
        print("merged trace: %d messages, %d unmatched sends, %d unmatched receives" %
              (nmsg, drops["unmatched_sends"], drops["unmatched_recvs"]))
        if drops["unmatched_sends"] or drops["unmatched_recvs"]:
            print("FAIL: unmatched messages in the merged trace")
            return 1
        if a.messages is not None and nmsg != a.messages:
            print("FAIL: expected %d messages" % a.messages)
            return 1
    # every merged message pairs a receive with its own send: the bytes the
    # receive got (its status) are the bytes sent
    # (merged.h5's message rows index its mpi table of all ranks)
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        msgs = f["messages"][:]
        got = f["mpi"]["bytes_recv"]
    bad = [(int(m["src"]), int(m["dst"]), int(m["tag"]), int(m["bytes"]), int(got[m["recv_row"]]))
           for m in msgs if got[m["recv_row"]] != m["bytes"]]
    if bad:
        print("FAIL: %d merged messages pair a receive with another send (src, dst, tag, sent, received): %s" %
              (len(bad), bad[:8]))
        return 1
    print("merged trace: every receive's byte count is its send's (%d messages)" % len(msgs))
    if a.merged_check:
        rc = subprocess.run(check[:5] + ["--merged", out]).returncode
        if rc:
            return rc
    if a.stream_same:
        sout = run_dir + "-streamed"
        shutil.rmtree(sout, ignore_errors=True)
        p = subprocess.run([os.environ["XSMERGE"], run_dir, "-o", sout, "--stream", "--outputs", "pftrace,h5"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(p.stdout.strip())
        if p.returncode != 0:
            print("FAIL: xsmerge --stream exited with %d" % p.returncode)
            return 1
        with h5py.File(os.path.join(sout, "merged.h5"), "r") as f:
            smsgs = f["messages"][:]
            scolls = f["collectives"][:].tolist(), f["collective_members"][:].tolist()
        with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
            colls = f["collectives"][:].tolist(), f["collective_members"][:].tolist()
        if check_job_id(run_dir, sout):
            return 1
        if smsgs.tolist() != msgs.tolist():
            print("FAIL: the streamed merge pairs messages differently")
            return 1
        if scolls != colls:
            print("FAIL: the streamed merge makes other collective instances (roots, members, times)")
            return 1
        print("streamed merge: the same %d messages and %d collectives" % (len(smsgs), len(colls[0])))
    return 0


def check_job_id(run_dir, out):
    """The launcher's job id of the rank files is the merged products' too
    (report.json, merged.h5, trace.json when written): 1 when not."""
    ids = set()
    for name in os.listdir(run_dir):
        if name.endswith(".h5"):
            with h5py.File(os.path.join(run_dir, name), "r") as f:
                v = f.attrs["job_id"]
                ids.add(v.decode() if isinstance(v, bytes) else str(v))
    if len(ids) != 1 or not next(iter(ids)):
        print("FAIL: the rank files do not name one job id: %s" % sorted(ids))
        return 1
    want = ids.pop()
    got = {}
    path = os.path.join(out, "report.json")
    if os.path.exists(path):
        with open(path) as f:
            got["report.json job.job_id"] = json.load(f)["job"]["job_id"]
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        v = f.attrs["job_id"]
        got["merged.h5 job_id"] = v.decode() if isinstance(v, bytes) else str(v)
    path = os.path.join(out, "trace.json")
    if os.path.exists(path):
        with open(path) as f:
            got["trace.json otherData.job_id"] = json.load(f)["otherData"]["job_id"]
    bad = {k: v for k, v in got.items() if v != want}
    if bad:
        print("FAIL: %s: job id %r, the rank files say %r" % (out, bad, want))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
