#!/usr/bin/python3
"""benchmarks/full_node.py — issue 39's full-node case, side by side.

Two ranks bound one per core busy-poll a ping-pong (xsprof-bench-mpi-pingpong)
in short blocks (201 x 300 round trips: the writer's work rarely lands in a
timed block) and long ones (3 x 300000: it lands in every block), for each
build given, alternating builds round by round. Prints the added cost per MPI
call (medians and ranges over the rounds), its long/short ratio (the goal:
within 2x), and the scheduler's view of the long blocks: CPU of the ranks'
other threads (xsprof's writer, MPI's idle ones) and the main thread's time
runnable but off its core.

  benchmarks/full_node.py [--rounds N] [--out DIR]... BUILD_DIR [BUILD_DIR...]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

LENGTHS = {"short": ["201", "300"], "long": ["3", "300000"]}


def run(build, length, out):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = ["mpiexec", "-np", "2", "--bind-to", "core", "-x", "LD_PRELOAD=%s/lib/libxsprof-mpi.so" % build,
           "-x", "XSPROF_OUTPUT=%s" % out, "%s/bin/xsprof-bench-mpi-pingpong" % build] + LENGTHS[length]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    shutil.rmtree(out, ignore_errors=True)
    m = re.search(r"added per MPI call\s+([-0-9.]+) ns", p.stdout)
    if p.returncode or not m:
        sys.exit("full_node.py: %s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    other = [float(x) for x in re.findall(r"other threads ran ([0-9.]+) ms", p.stdout)]
    wait = [float(x) for x in re.findall(r"runnable but waiting ([0-9.]+) ms", p.stdout)]
    return float(m.group(1)), other, wait


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", action="append", help="run directory parent (default /tmp and /dev/shm)")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    outs = a.out or ["/tmp", "/dev/shm"]
    res = {}
    for r in range(a.rounds):
        for fs in outs:
            for length in LENGTHS:
                for b in a.builds:
                    added, other, wait = run(b, length, os.path.join(fs, "xsprof-full-node.%d" % os.getpid()))
                    k = (fs, b, length)
                    res.setdefault(k, ([], [], []))
                    res[k][0].append(added)
                    res[k][1].extend(other)
                    res[k][2].extend(wait)
                    print("round %d %s %s %s: %.1f ns/call" % (r + 1, fs, b, length, added), flush=True)
    print("\n| output | build | short: added per call | long: added per call | long / short "
          "| other threads (long) | main waiting (long) |\n| --- | --- | --- | --- | --- | --- | --- |")
    for fs in outs:
        for b in a.builds:
            s, l = res[(fs, b, "short")][0], res[(fs, b, "long")]
            ms, ml = statistics.median(s), statistics.median(l[0])
            print("| %s | %s | %.1f ns [%.0f-%.0f] | %.1f ns [%.0f-%.0f] | %.2f | %.0f ms | %.0f ms |" %
                  (fs, b, ms, min(s), max(s), ml, min(l[0]), max(l[0]), ml / ms if ms > 0 else float("nan"),
                   statistics.median(l[1]), statistics.median(l[2])))


if __name__ == "__main__":
    main()
