#!/usr/bin/python3
"""xsmerge --live beside a running job (benchmarks/README.md, "Live view").

Runs the 4-rank job of live_overhead.c (fixed work, ~1 M events/s over all
ranks) ROUNDS times without and with the live view attached, alternating;
with it, a client fetches /api/snapshot once a second as a page would.
Prints the job's own time (between two Barriers) median per mode and their
ratio, and the live reader's CPU time (its rusage, os.wait4) per second of
the job and per event; and the same while it follows the job, from the CPU
time in /proc and the events its snapshots count (its start and the first
second, when its buffers grow, left out). LIVE_NICE=N runs the view under nice -n N,
JOB_YIELD=1 the job with mpi_yield_when_idle (experiments); JOB_CPUS=LIST and
LIVE_CPUS=LIST (taskset -c) place the job's ranks and the view on CPUs of
their own: a node with a core left for the viewer. BASE_XSMERGE=PATH adds a
third mode each round, the view of another build (the commit before), for
the reader's cost side by side. usage: live_overhead.py [ROUNDS [STEPS REGIONS SPIN]]
Environment: MPIEXEC, XSPROF_MPI_LIB, XSMERGE, BENCH_JOB (bench-live sets them)."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import json
import sys
import threading
import time
import urllib.request


def job(rundir, steps, regions, spin):
    pin = ["taskset", "-c", os.environ["JOB_CPUS"]] if os.environ.get("JOB_CPUS") else []
    cmd = pin + [os.environ["MPIEXEC"], "-np", "4", "--oversubscribe"] + (["--bind-to", "none"] if pin else []) + (
        ["--mca", "mpi_yield_when_idle", "1"] if os.environ.get("JOB_YIELD") else []) + ["-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"],
           "-x", "XSPROF_OUTPUT=" + rundir, os.environ["BENCH_JOB"], str(steps), str(regions), str(spin)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"elapsed ([\d.]+) events_per_s (\d+)", r.stdout)
    if r.returncode or not m:
        sys.exit("the job failed: " + r.stdout[-2000:])
    return float(m.group(1)), float(m.group(2))


def attached(rundir, steps, regions, spin, xsmerge):
    nice = ["nice", "-n", os.environ["LIVE_NICE"]] if os.environ.get("LIVE_NICE") else []
    if os.environ.get("LIVE_CPUS"):
        nice = ["taskset", "-c", os.environ["LIVE_CPUS"]] + nice
    live = subprocess.Popen(nice + [xsmerge, "--live", rundir, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    url = re.search(r"(http://\S+/)\?token=(\w+)", live.stdout.readline() + live.stdout.readline())
    stop = threading.Event()
    seen = []  # (when, the ranks' longest span shown) while the job runs
    follow = []  # (when, the view's CPU so far, events it has read) at each snapshot while the job runs
    tick = os.sysconf("SC_CLK_TCK")

    def view_cpu():  # utime + stime of the view so far, as its rusage counts them at the end
        with open("/proc/%d/stat" % live.pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / tick

    def client():  # a page: one snapshot a second
        while not stop.wait(1.0):
            try:
                snap = json.loads(urllib.request.urlopen(url.group(1) + "api/snapshot?token=" + url.group(2),
                                                         timeout=5).read())
                if snap["job"]["state"] != "ended":
                    seen.append((time.monotonic(), max([r["wall_s"] or 0 for r in snap["ranks"]] or [0])))
                    follow.append((time.monotonic(), view_cpu(), sum(r["events"] or 0 for r in snap["ranks"])))
            except (OSError, ValueError, KeyError, TypeError):
                pass
    t = threading.Thread(target=client)
    t.start()
    t0 = time.monotonic()
    res = job(rundir, steps, regions, spin)
    time.sleep(2.5)  # the view reads the rest of the journals
    wall = time.monotonic() - t0
    stop.set()
    t.join()
    live.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(live.pid, 0)
    live.returncode = status
    # how far the view fell behind the job: at each snapshot, the time
    # passed less the job time shown, against the snapshot where that was
    # least (the view caught up); the largest over the job
    off = [t - w for t, w in seen if w > 0]
    lag = max(off) - min(off) if len(off) > 1 else None
    # the reader's steady cost: from its second snapshot of the job (past its
    # start and the first second's growth of its buffers) to its last
    steady = None
    if len(follow) > 2 and follow[-1][2] > follow[1][2]:
        (ta, ca, ea), (tb, cb, eb) = follow[1], follow[-1]
        steady = (100.0 * (cb - ca) / (tb - ta), 1e9 * (cb - ca) / (eb - ea))
    return res, (ru.ru_utime + ru.ru_stime), wall, lag, steady


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    steps, regions, spin = (int(x) for x in (sys.argv[2:5] if len(sys.argv) > 4 else (600, 2500, 1200000)))
    base = "/dev/shm/xsprof-bench-live" if os.path.isdir("/dev/shm") else "/tmp/xsprof-bench-live"
    plain, live, cpu, rate, nsev = [], [], [], [], []
    base_cpu, base_nsev, lags, steady, base_steady = [], [], [], [], []
    modes = ["plain", "live"] + (["base"] if os.environ.get("BASE_XSMERGE") else [])
    for i in range(rounds):
        for mode in modes[i % len(modes):] + modes[:i % len(modes)]:
            rundir = os.path.join(base, "%s-%d" % (mode, i))
            shutil.rmtree(rundir, ignore_errors=True)
            if mode == "plain":
                (t, eps) = job(rundir, steps, regions, spin)
                plain.append(t)
            else:
                (t, eps), c, wall, lag, st = attached(rundir, steps, regions, spin,
                                                      os.environ["XSMERGE" if mode == "live" else "BASE_XSMERGE"])
                if mode == "live":
                    live.append(t)
                    if lag is not None:
                        lags.append(lag)
                if st is not None:
                    (steady if mode == "live" else base_steady).append(st)
                (cpu if mode == "live" else base_cpu).append(100.0 * c / t)
                (nsev if mode == "live" else base_nsev).append(1e9 * c / (eps * t))
                print("  live reader: %.3f s CPU over a %.2f s job (%.2f s attached), behind the job by %s" % (
                    c, t, wall, "%.2f s" % lag if lag is not None else "?"), flush=True)
            rate.append(eps)
            print("round %d %-5s job %.3f s, %.0f events/s" % (i, mode, t, eps), flush=True)
            shutil.rmtree(rundir, ignore_errors=True)
    mp, ml = statistics.median(plain), statistics.median(live)
    print("job run time, median of %d: without the view %.3f s, with it %.3f s: %+.2f %%" % (
        rounds, mp, ml, 100.0 * (ml / mp - 1)))
    print("events recorded per second (all ranks), median: %.0f" % statistics.median(rate))
    if lags:
        print("the view's largest lag behind the job while it ran (its snapshots), median: %.2f s" %
              statistics.median(lags))
    print("live reader CPU per second of the job, median: %.2f %% of one core (range %.2f-%.2f)" % (
        statistics.median(cpu), min(cpu), max(cpu)))
    print("live reader CPU per event recorded, median: %.0f ns (at 1 M events/s: %.1f %% of one core)" % (
        statistics.median(nsev), statistics.median(nsev) / 10.0))
    if steady:
        print("the same while it follows the job (from its second snapshot to its last), median: %.2f %% of one core, "
              "%.0f ns per event" % (statistics.median(s[0] for s in steady), statistics.median(s[1] for s in steady)))
    if base_nsev:
        print("the base build's reader, side by side: %.2f %% of one core per second of the job, %.0f ns per event "
              "(this build / base: %.2f)" % (statistics.median(base_cpu), statistics.median(base_nsev),
                                             statistics.median(nsev) / statistics.median(base_nsev)))
    if steady and base_steady:
        b = statistics.median(s[1] for s in base_steady)
        print("the base build's reader while it follows the job: %.2f %% of one core, %.0f ns per event "
              "(this build / base: %.2f)" % (statistics.median(s[0] for s in base_steady), b,
                                             statistics.median(s[1] for s in steady) / b))


if __name__ == "__main__":
    main()
