"""steps_c: ProfilerStep#N regions of a scheduled loop in the rank file,
and the in-process summary (xsprof_summary_write, XSPROF_SUMMARY=1).

usage: check_steps.py APP WORK_DIR
"""
import collections
import os
import shutil
import subprocess
import sys

import h5py


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def table(text):
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 6 and f[1].isdigit():
            rows[f[0]] = (int(f[1]), float(f[2]), float(f[3]))
    return rows


def main():
    app, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run, summary = os.path.join(work, "run"), os.path.join(work, "summary.txt")
    p = subprocess.run([app, summary], env=dict(os.environ, XSPROF_OUTPUT=run, XSPROF_SUMMARY="1"),
                       capture_output=True, text=True)
    if p.returncode != 0 or "steps_c done" not in p.stdout:
        fail("steps_c exited %d: %s%s" % (p.returncode, p.stdout, p.stderr))
    if "trace ready: cycle 0 in %s" % run not in p.stdout:
        fail("on_trace_ready: %r" % p.stdout)
    with h5py.File(os.path.join(run, "rank-00000.h5"), "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else str(s) for s in f["/definitions/strings"][()]]
        rows = [(strings[r["name"]], int(r["depth"]), int(r["t_begin"]), int(r["t_end"]))
                for r in f["/events/regions"][()]]
    got = collections.Counter(n for n, *_ in rows)
    want = {"ProfilerStep#2": 1, "ProfilerStep#3": 1, "train_step": 2, "forward": 2}
    if dict(got) != want:
        fail("regions %s, expected %s (steps 2 and 3 are the active ones)" % (dict(got), want))
    steps = {n: (b, e) for n, d, b, e in rows if n.startswith("ProfilerStep")}
    for n, d, b, e in rows:
        if n == "train_step" and not any(sb <= b and e <= se for sb, se in steps.values()):
            fail("train_step not inside a ProfilerStep region")
        if n.startswith("ProfilerStep") and d != 0:
            fail("%s at depth %d" % (n, d))
    mine, at_exit = table(open(summary).read()), table(p.stderr)
    for t, what in ((mine, "xsprof_summary_write"), (at_exit, "XSPROF_SUMMARY=1")):
        if set(t) != set(want) or any(t[n][0] != want[n] for n in want):
            fail("%s table %s" % (what, t))
        c, total, self_ms = t["train_step"]
        if not (0 < self_ms < total and total >= 2 * 0.4):
            fail("%s: train_step total %.3f self %.3f ms (2 x 400 us, 300 of them in forward)" % (what, total,
                                                                                                    self_ms))
    print("steps: ProfilerStep#2/#3 hold the active steps; summary tables agree with the rank file")


if __name__ == "__main__":
    main()
