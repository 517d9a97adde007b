"""Python front end overhead: `with xsprof.record_function(name)` beside two
time.perf_counter_ns() calls (the cheapest timing a Python user writes),
measured in alternating blocks in one process; medians. Never asserted.

usage: PYTHONPATH=build/python XSPROF_OUTPUT=/dev/shm/b /usr/bin/python3 benchmarks/python_record_function.py [BLOCKS]
"""
import statistics
import sys
import time

import xsprof

N = 20000  # iterations per block


def floor():
    pc = time.perf_counter_ns
    t0 = pc()
    for _ in range(N):
        pc()
        pc()
    return (pc() - t0) / N


def region(rf):
    pc = time.perf_counter_ns
    t0 = pc()
    for _ in range(N):
        with rf:
            pass
    return (pc() - t0) / N


def region_new(name):
    pc = time.perf_counter_ns
    t0 = pc()
    for _ in range(N):
        with xsprof.record_function(name):
            pass
    return (pc() - t0) / N


def main():
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 31
    rf = xsprof.record_function("bench")
    f, r, n, off = [], [], [], []
    with xsprof.profile():
        for _ in range(blocks):
            f.append(floor())
            r.append(region(rf))
            n.append(region_new("bench"))
    with xsprof.profile(schedule=xsprof.schedule(wait=10**9, active=1)):  # recording off
        for _ in range(blocks):
            off.append(region(rf))
    fm, rm, nm, om = (statistics.median(x) for x in (f, r, n, off))
    print("library                                   : %s" % xsprof.library_path)
    print("two time.perf_counter_ns() calls          : %7.1f ns" % fm)
    print("with rf: (record_function object reused)  : %7.1f ns  = %.2fx the two clock calls" % (rm, rm / fm))
    print("with xsprof.record_function(name):        : %7.1f ns  = %.2fx" % (nm, nm / fm))
    print("with rf:, recording off (schedule waits)  : %7.1f ns  = %.2fx" % (om, om / fm))


if __name__ == "__main__":
    main()
