#!/usr/bin/python3
"""XSPROF_NVTX_EMIT and XSPROF_CUDA_PROFILER_API under mpirun (3 ranks).

Runs nvtx_emit_app three times:
  A  XSPROF_NVTX_EMIT=1 XSPROF_CUDA_PROFILER_API=1, NVTX_INJECTION64_PATH and
     LD_PRELOAD naming nvtx_recorder.so (an NVTX tool, and the CUDA runtime's
     cudaProfilerStart/Stop): per rank and thread, the ranges the tool
     received in the domain "xsprof" are the rank file's regions — the same
     names, nesting depths and counts, in the same order — and nothing else;
     the session's stop and start reached it as cudaProfilerStop/Start at
     their place among the ranges;
  B  XSPROF_NVTX_EMIT=1 with no injection path: xsprof names itself, so its
     own NVTX capture receives the emitted ranges and must drop them: the
     same regions as A, no NVTX region, no anomaly; XSPROF_CUDA_PROFILER_API=1
     without CUDA in the process: one info line per rank for two changes;
  C  XSPROF_NVTX_EMIT=maybe: one clear line per rank, nothing emitted.

usage: check_nvtx_emit.py APP RECORDER_LIB WORK_DIR
"""
import collections
import os
import shutil
import subprocess
import sys

import h5py

NP = 3
CAT_USER, CAT_NVTX = 0, 2


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def text(s):
    return s.decode() if isinstance(s, bytes) else str(s)


def mpirun(app, work, name, env_vars, drop=()):
    run_dir = os.path.join(work, name)
    nvtx_dir = os.path.join(work, name + "-nvtx")
    os.makedirs(nvtx_dir)
    env = dict(os.environ)
    for k in ("NVTX_INJECTION64_PATH", "LD_PRELOAD", "XSPROF_NVTX_EMIT", "XSPROF_CUDA_PROFILER_API") + tuple(drop):
        env.pop(k, None)
    env_vars = dict(env_vars, XSPROF_OUTPUT=run_dir, NVTX_RECORD_DIR=nvtx_dir, XSPROF_GPU="0")
    cmd = [os.environ.get("MPIEXEC", "mpiexec"), "-np", str(NP), "--oversubscribe"]
    for k, v in env_vars.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd.append(app)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        fail("%s: %s exited with %d\n%s\n%s" % (name, " ".join(cmd), p.returncode, p.stdout, p.stderr))
    check(p.stdout.count("nvtx_emit_app done") == NP, "%s: program output %r" % (name, p.stdout))
    return run_dir, nvtx_dir, p.stderr


def rank_regions(path):
    """Per OS thread id: [(name, depth)] of the user regions in begin order;
    the count of NVTX regions; the metadata; the anomalies."""
    with h5py.File(path, "r") as f:
        strings = [text(s) for s in f["/definitions/strings"][()]]
        regions = f["/events/regions"][()]
        os_tid = {int(t["tid"]): int(t["os_tid"]) for t in f["/definitions/threads"][()]}
        meta = {strings[m["key"]]: strings[m["value"]] for m in f["/definitions/metadata"][()]}
        anomalies = int(f.attrs["anomalies"])
    per = collections.defaultdict(list)
    nvtx = 0
    for r in regions:
        if int(r["category"]) == CAT_NVTX:
            nvtx += 1
        elif int(r["category"]) == CAT_USER:
            per[os_tid[int(r["thread"])]].append((int(r["t_begin"]), int(r["depth"]), strings[r["name"]]))
    return {t: [(n, d) for _, d, n in sorted(v)] for t, v in per.items()}, nvtx, meta, anomalies


def tool_ranges(path):
    """Per OS thread id: [(name, depth)] pushed in the domain xsprof, each
    popped; the profiler calls with the number of pushes before each."""
    stacks = collections.defaultdict(list)
    ranges = collections.defaultdict(list)
    profiler = []
    with open(path) as f:
        for line in f:
            tid, _, rest = line.rstrip("\n").partition(" ")
            tid = int(tid)
            word, _, rest = rest.partition(" ")
            if word == "init":
                continue
            if word in ("cudaProfilerStart", "cudaProfilerStop"):
                profiler.append((word, tid, [r[0] for r in ranges[tid]], list(stacks[tid])))
                continue
            domain, _, name = rest.partition(" ")
            check(domain == "xsprof", "%s: %s in domain %r (only 'xsprof' expected): %r" % (path, word, domain, line))
            if word == "push":
                ranges[tid].append((name, len(stacks[tid])))
                stacks[tid].append(name)
            elif word == "pop":
                check(stacks[tid], "%s: pop without push on thread %d" % (path, tid))
                stacks[tid].pop()
            else:
                fail("%s: unexpected %r" % (path, line))
    for tid, s in stacks.items():
        check(not s, "%s: thread %d left ranges open: %s" % (path, tid, s))
    return dict(ranges), profiler


def expected_counts(rank):
    c = {"setup": 1, "iteration": 3, "exchange": 3, "worker": 1, "worker_inner": 2, "span_stop": 1,
         "compute": 7}
    if rank == 1:
        c.update(rank1_only=1, rank1_deeper=1, compute=8)
    return c


def check_regions(name, rank, regions):
    counts = collections.Counter(n for seq in regions.values() for n, _ in seq)
    check(counts == expected_counts(rank), "%s rank %d: regions %s, expected %s" %
          (name, rank, dict(counts), expected_counts(rank)))
    check(len(regions) == 2, "%s rank %d: regions on %d threads, expected 2" % (name, rank, len(regions)))


def run_a(app, rec, work):
    run_dir, nvtx_dir, _ = mpirun(app, work, "a", {"XSPROF_NVTX_EMIT": "1", "XSPROF_CUDA_PROFILER_API": "1",
                                                   "NVTX_INJECTION64_PATH": rec, "LD_PRELOAD": rec})
    total = 0
    for rank in range(NP):
        regions, nvtx, meta, anomalies = rank_regions(os.path.join(run_dir, "rank-%05d.h5" % rank))
        check_regions("A", rank, regions)
        check(nvtx == 0, "A rank %d: %d NVTX regions (the tool, not xsprof, is injected)" % (rank, nvtx))
        check(meta.get("nvtx_emit") == "on", "A rank %d: metadata nvtx_emit %r" % (rank, meta.get("nvtx_emit")))
        check(anomalies == 0, "A rank %d: %d anomalies" % (rank, anomalies))
        ranges, profiler = tool_ranges(os.path.join(nvtx_dir, "nvtx-%d.txt" % rank))
        check(set(ranges) == set(regions), "A rank %d: the tool saw threads %s, the rank file %s" %
              (rank, sorted(ranges), sorted(regions)))
        for tid in regions:
            check(ranges[tid] == regions[tid], "A rank %d thread %d: the tool received\n  %s\nthe rank file has\n  %s"
                  % (rank, tid, ranges[tid], regions[tid]))
            total += len(regions[tid])
        # the stop came inside span_stop, before what followed the start
        check([p[0] for p in profiler] == ["cudaProfilerStop", "cudaProfilerStart"],
              "A rank %d: profiler calls %s" % (rank, [p[0] for p in profiler]))
        main_tid = profiler[0][1]
        for word, tid, pushed, open_ranges in profiler:
            check(tid == main_tid, "A rank %d: %s on another thread" % (rank, word))
            check(pushed[-1] == "span_stop" and open_ranges == ["span_stop"],
                  "A rank %d: %s after %s with %s open (expected inside span_stop)" % (rank, word, pushed[-3:],
                                                                                       open_ranges))
    return total


def run_b(app, work, reference):
    run_dir, nvtx_dir, err = mpirun(app, work, "b", {"XSPROF_NVTX_EMIT": "1", "XSPROF_CUDA_PROFILER_API": "1",
                                                     "XSPROF_LOG": "info"})
    line = "info: XSPROF_CUDA_PROFILER_API=1: no CUDA runtime or driver in the process; session stop not passed on"
    check(err.count(line) == NP and err.count("CUDA_PROFILER") == NP,
          "B: expected %d lines %r on stderr, got:\n%s" % (NP, line, err))
    for rank in range(NP):
        regions, nvtx, meta, anomalies = rank_regions(os.path.join(run_dir, "rank-%05d.h5" % rank))
        check_regions("B", rank, regions)
        check(meta.get("nvtx_injection") == "on",
              "B rank %d: xsprof's NVTX capture was not loaded (nvtx_injection %r): the test proves nothing"
              % (rank, meta.get("nvtx_injection")))
        check(nvtx == 0, "B rank %d: %d NVTX regions: xsprof recorded its own emitted ranges again" % (rank, nvtx))
        check(anomalies == 0, "B rank %d: %d anomalies" % (rank, anomalies))
        check(sorted(regions.values()) == sorted(reference[rank].values()), "B rank %d: regions differ from A" % rank)
    check(not os.listdir(nvtx_dir), "B: the recording tool was loaded")


def run_c(app, rec, work):
    run_dir, nvtx_dir, err = mpirun(app, work, "c", {"XSPROF_NVTX_EMIT": "maybe", "NVTX_INJECTION64_PATH": rec,
                                                     "LD_PRELOAD": rec})
    line = "XSPROF_NVTX_EMIT=maybe ignored (expected 1 or 0); off"
    check(err.count(line) == NP, "C: expected %d lines %r on stderr, got:\n%s" % (NP, line, err))
    for rank in range(NP):
        regions, _, meta, _ = rank_regions(os.path.join(run_dir, "rank-%05d.h5" % rank))
        check_regions("C", rank, regions)
        check("nvtx_emit" not in meta, "C rank %d: nvtx_emit metadata set" % rank)
    check(not os.listdir(nvtx_dir), "C: ranges or profiler calls reached the tool: %s" % os.listdir(nvtx_dir))


def main():
    app, rec, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    total = run_a(app, rec, work)
    reference = {r: rank_regions(os.path.join(work, "a", "rank-%05d.h5" % r))[0] for r in range(NP)}
    run_b(app, work, reference)
    run_c(app, rec, work)
    print("nvtx emit: %d ranges on %d ranks received as recorded; no double regions with xsprof injected; "
          "bad value refused" % (total, NP))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
