#!/usr/bin/python3
"""tests/unit/check_sample_threads.py — sample_threads.c at XSPROF_SAMPLE_HZ=1000
without MPI: samples of the main thread, of a thread started later and of one
still running at exit, resolved (xsm_samples) to their functions; none while
the session was stopped; the exit path writes the rank file.

usage: check_sample_threads.py XSM_SAMPLES PROGRAM DIR"""
import os
import shutil
import subprocess
import sys


def main():
    xsm, program, run_dir = sys.argv[1:4]
    shutil.rmtree(run_dir, ignore_errors=True)
    env = dict(os.environ, XSPROF_OUTPUT=run_dir, XSPROF_SAMPLE_HZ="1000")
    p = subprocess.run([program], env=env, capture_output=True, text=True, timeout=120)
    fails = []
    if p.returncode != 0 or "done" not in p.stdout:
        fails.append("the program exits 0 (%d): %s" % (p.returncode, p.stderr))
    if p.stderr.strip():
        fails.append("no message at a valid rate: %s" % p.stderr)
    h5 = os.path.join(run_dir, "rank-00000.h5")
    if not os.path.exists(h5):
        sys.exit("check_sample_threads: no rank file: %s" % os.listdir(run_dir) if os.path.isdir(run_dir) else run_dir)
    out = subprocess.run([xsm, h5], capture_output=True, text=True, timeout=120).stdout
    print(out, end="")
    leaf, threads = {}, 0
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "rank":
            threads = int(f[5])
        elif f[0] == "leaf":
            leaf[f[2]] = leaf.get(f[2], 0) + int(f[4])
    for fn, least in (("burn_main", 100), ("burn_thread", 60)):
        if leaf.get(fn, 0) < least:
            fails.append("at least %d samples in %s: %d" % (least, fn, leaf.get(fn, 0)))
    if leaf.get("burn_stopped", 0):
        fails.append("no sample while the session was stopped: %d in burn_stopped" % leaf["burn_stopped"])
    if threads < 2:
        fails.append("samples of the main thread and the later one: %d threads" % threads)
    for f in fails:
        print("check_sample_threads: FAILED:", f)
    if fails:
        sys.exit("check_sample_threads: %d failures (run kept in %s)" % (len(fails), run_dir))
    shutil.rmtree(run_dir, ignore_errors=True)
    print("check_sample_threads: all checks passed")


if __name__ == "__main__":
    main()
