"""tests/merge/check_stream_memory.py — xsmerge --stream's memory does not
grow with the trace: the same ring run at 1x and 4x the events (and the
same with clocks that need the logical clock: bigskew), with and without
the reports (a streamed analysis), peak RSS of each merge (ru_maxrss from wait4, deterministic enough: no clock involved).
The in-memory merge of the same runs must grow (it holds every row), which
shows the measurement can see growth; --stream may grow only by its bit per
MPI row and noise (a fixed 6 MiB allowance: 4x the events adds 0.2 MB of
bits here).

usage: check_stream_memory.py MERGE_MAKE_RUNS"""
import filecmp
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mergetest import XSMERGE, check, finish, make_run, tmpdir  # noqa: E402

# A sanitizer's shadow memory and quarantine are its own peak, not
# xsmerge's; gcov's counters only slow the 24 merges (216 s in CI's coverage
# stage), and the merges' code runs in merge_stream_* there too.
if os.environ.get("XSTEST_INSTRUMENTED"):
    print("merge_stream_memory: skipped: an instrumented build (sanitizer or coverage) measures its own memory "
          "and time, not xsmerge's")
    sys.exit(77)

maker = sys.argv[1]
base = tmpdir()


def peak_mib(args):
    """Run xsmerge, return (exit code, peak RSS in MiB)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XSPROF_MERGE")}
    p = subprocess.Popen([XSMERGE] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.stderr.close()
    return os.waitstatus_to_exitcode(status), ru.ru_maxrss / 1024.0


runs = {}
for kind in ("big", "bigskew"):
    for size, per_rank in (("small", 150000), ("large", 600000)):
        name = "%s-%s" % (kind, size)
        runs[name] = make_run(maker, kind, os.path.join(base, name), 4, per_rank)

peak = {}
for name, run in runs.items():
    for mode, extra in (("stream", ["--stream"]), ("memory", ["--outputs", "pftrace"]),
                        ("stream-report", ["--stream", "--outputs", "pftrace,report"])):
        out = os.path.join(base, "out-%s-%s" % (name, mode))
        rc, mib = peak_mib([run, "-o", out, "-q"] + extra)
        check(rc == 0, "%s %s: exit %d" % (name, mode, rc))
        if mode == "stream-report":
            # its threads' malloc arenas make the peak vary by a few MiB
            # with their timing (28.0 then 30.8 MiB for one run, CI at load
            # 4): the smaller of two runs
            rc, again = peak_mib([run, "-o", out, "-q"] + extra)
            check(rc == 0, "%s %s (again): exit %d" % (name, mode, rc))
            mib = min(mib, again)
        peak[(name, mode)] = mib
    # compared in blocks: the child's peak counts this process's pages at fork
    same = filecmp.cmp(os.path.join(base, "out-%s-stream" % name, "trace.pftrace"),
                       os.path.join(base, "out-%s-memory" % name, "trace.pftrace"), shallow=False)
    check(same, "%s: --stream and in-memory trace.pftrace differ" % name)

print("peak RSS MiB: " + ", ".join("%s %s %.1f" % (k[0], k[1], v) for k, v in sorted(peak.items())))
for kind in ("big", "bigskew"):
    s, l = kind + "-small", kind + "-large"
    grow_mem = peak[(l, "memory")] - peak[(s, "memory")]
    grow_str = peak[(l, "stream")] - peak[(s, "stream")]
    check(grow_mem > 100, "%s: the in-memory merge grows with the run (+%.1f MiB for 4x the events)" % (kind, grow_mem))
    check(grow_str < 6, "%s: --stream does not grow with the run (+%.1f MiB for 4x the events)" % (kind, grow_str))
    check(peak[(l, "stream")] < peak[(l, "memory")] / 4,
          "%s: --stream needs a fraction of the in-memory peak (%.1f vs %.1f MiB)" %
          (kind, peak[(l, "stream")], peak[(l, "memory")]))
    # the reports too: a streamed analysis holds every rank's source at once
    # and the waits in flight, not the rows
    grow_rep = peak[(l, "stream-report")] - peak[(s, "stream-report")]
    check(grow_rep < 6, "%s: --stream with the reports does not grow with the run (+%.1f MiB for 4x the events)" %
          (kind, grow_rep))
    check(peak[(l, "stream-report")] < peak[(l, "memory")] / 4,
          "%s: --stream with the reports needs a fraction of the in-memory trace's peak (%.1f vs %.1f MiB)" %
          (kind, peak[(l, "stream-report")], peak[(l, "memory")]))
# per rank: streaming holds every rank at once, but no open HDF5 file per
# rank (~800 KB each before the rank files were read without HDF5): 256
# ranks against 16 of the same length, the growth per added rank
wide = {}
for nr in (16, 256):
    run = make_run(maker, "big", os.path.join(base, "wide%d" % nr), nr, 300)
    rc, wide[nr] = peak_mib([run, "-o", os.path.join(base, "out-wide%d" % nr), "-q", "--stream"])
    check(rc == 0, "wide%d --stream: exit %d" % (nr, rc))
    rc, wide[(nr, "report")] = peak_mib([run, "-o", os.path.join(base, "out-wide%d-report" % nr), "-q", "--stream",
                                         "--outputs", "pftrace,report"])
    check(rc == 0, "wide%d --stream --outputs pftrace,report: exit %d" % (nr, rc))
per_rank_kib = (wide[256] - wide[16]) * 1024 / 240
print("peak RSS MiB, --stream: 16 ranks %.1f, 256 ranks %.1f (%.0f KiB per added rank)" % (wide[16], wide[256],
                                                                                         per_rank_kib))
check(per_rank_kib < 256, "--stream holds %.0f KiB per rank (16 ranks %.1f MiB, 256 ranks %.1f MiB)" %
      (per_rank_kib, wide[16], wide[256]))
rep_kib = (wide[(256, "report")] - wide[(16, "report")]) * 1024 / 240
print("peak RSS MiB, --stream --outputs pftrace,report: 16 ranks %.1f, 256 ranks %.1f (%.0f KiB per added rank)" %
      (wide[(16, "report")], wide[(256, "report")], rep_kib))
check(rep_kib < 512, "--stream with the reports holds %.0f KiB per rank" % rep_kib)
shutil.rmtree(base, ignore_errors=True)
finish("merge_stream_memory")
