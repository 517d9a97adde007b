#!/usr/bin/python3
"""tests/mpi/check_sampling.py — XSPROF_SAMPLE_HZ end to end: mpi_sample
(-O2 -g, no frame pointers, unmodified, libxsprof-mpi.so preloaded) under
mpiexec; its rank files hold samples whose stacks merge/symbols (through
xsm_samples) resolves to heavy() and light() in their files, about 70 % / 30 %
of the compute, with their callers (step <- main); the thread started after
MPI_Init is sampled too, the forked child is not; xsmerge merges the run; a
rank killed by SIGKILL leaves its samples in its journal.
Then the bad inputs and the fallbacks, each a one-line message:
XSPROF_SAMPLE_HZ=abc (off), =0 (off, silent), =100000 (clamped), perf events
refused (CPU-time timers; by a real seccomp filter and by the test hook), perf
and timers refused (no samples, the run goes on).

With --lang fortran, mpi_sample.f90 and only the first part (heavy and light
at 70 % / 30 % in their file, their callers).

trace.pftrace (decoded with Perfetto's own profiling protos through
python3-protobuf, --proto): every sample is a PerfSample whose callstack
resolves through the sequence's interned frames to heavy or light in their
files (the leaf), on the pid/tid of its rank's thread track (the main
thread's, or the sampled thread's own track for the thread that never called
xsprof), outside the thread's MPI slices (aligned times); --stream writes the
same bytes. callgrind.out (--format callgrind): heavy and light in their files
with their self samples at their loop lines, read by a parser here and by
callgrind_annotate when valgrind is installed. merged.h5: /analysis/frames (heavy's sampled addresses in its file
at its loop, one row per address) and /analysis/modules (every rank's modules).

With --clock DEMO PROTO XSMERGE: the demo (messages) sampled at 2 kHz,
merged with --min-latency 2ms so that the logical clock moves events: the
samples move with them (by at most the largest correction, some by more
than 0), and trace.pftrace and report.json are the same bytes from the
in-memory merge, --stream and two processes under mpiexec.

usage: check_sampling.py [--lang fortran] [--plugin LIB LIB_SRC] [--proto PERFETTO_MIN_PROTO]
                         XSM_SAMPLES XSMERGE PROGRAM HOT_SRC COLD_SRC
(--plugin: the C program also burns CPU in LIB, dlopened and closed during the run)
Environment (set by xsprof_add_test): MPIEXEC, XSPROF_MPI_LIB, XSPROF_BUILD."""
import os
import re
import shutil
import subprocess
import sys

import h5py

import callgrind_out

FAILS = []
RUNS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("check_sampling: FAILED:", what)


def marks(path):
    out = {}
    for no, line in enumerate(open(path), 1):
        m = re.search(r"(?:/\* ([A-Z_]+) \*/|! ([A-Z_]+))\s*$", line)
        if m:
            out[m.group(1) or m.group(2)] = no
    return out


def run(name, np, env, units, program, extra=(), ok=None):
    """ok: whether the program must exit 0 (default: when no extra argument)"""
    ok = not extra if ok is None else ok
    run_dir = os.path.join(os.environ.get("XSPROF_BUILD", "."), "tests", "mpi", "runs", "sampling_" + name)
    shutil.rmtree(run_dir, ignore_errors=True)
    RUNS.append(run_dir)
    cmd = [os.environ.get("MPIEXEC") or "mpiexec", "-np", str(np), "--oversubscribe",
           "-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"], "-x", "XSPROF_OUTPUT=" + run_dir]
    for k, v in env.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    p = subprocess.run(cmd + [program, str(units)] + list(extra), capture_output=True, text=True, timeout=300)
    check((p.returncode == 0) == ok, "%s: the program exits %s (%d): %s"
          % (name, "0" if ok else "by the signal", p.returncode, p.stderr))
    return run_dir, p.stderr


def samples(xsm, run_dir):
    """{rank: {"n": samples, "threads": T, "leaf": {fn: [(where, n)]}, "path": {path: n}}}"""
    files = sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".h5") or f.endswith(".xsj"))
    p = subprocess.run([xsm] + files, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("check_sampling: xsm_samples failed: " + p.stderr)
    out = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "rank":
            out[int(f[1])] = {"n": int(f[3]), "threads": int(f[5]), "leaf": {}, "path": {}}
        elif f[0] == "leaf":
            out[int(f[1])]["leaf"].setdefault(f[2], []).append((f[3], int(f[4])))
        elif f[0] == "path":
            out[int(f[1])]["path"][f[2]] = int(f[3])
    return out


def leaf_n(r, fn):
    return sum(n for _, n in r["leaf"].get(fn, []))


def perfetto_module(proto):
    """perfetto_min.proto and Perfetto's profiling protos beside it, compiled
    for python3-protobuf into a temporary directory."""
    import glob
    import importlib
    import tempfile
    inc = os.path.dirname(os.path.abspath(proto))
    out = tempfile.mkdtemp(prefix="xsprof-pb-")
    RUNS.append(out)
    files = [proto] + sorted(glob.glob(os.path.join(inc, "protos", "**", "*.proto"), recursive=True))
    p = subprocess.run(["protoc", "-I", inc, "--python_out", out] + files, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("check_sampling: protoc: " + p.stderr)
    sys.path.insert(0, out)
    return importlib.import_module(os.path.splitext(os.path.basename(proto))[0] + "_pb2")


def decode_pftrace(pb, path):
    """(samples, threads, procs, mpi): samples as dicts (pid, tid, ts, stack:
    [(function, file, line)] outermost first); threads {(pid, tid): name};
    procs {pid: name}; mpi {(pid, tid): [(begin, end)]} of the MPI slices.
    Checks the sequences' incremental state and interning on the way."""
    tr = pb.Trace()
    with open(path, "rb") as f:
        tr.ParseFromString(f.read())
    seqs, threads, procs, track_of, samples, mpi = {}, {}, {}, {}, [], {}
    bad = []
    for pk in tr.packet:
        seq = pk.trusted_packet_sequence_id
        st = seqs.get(seq)
        if st is None:
            if not pk.sequence_flags & 1:
                bad.append("sequence %d does not start by clearing its incremental state" % seq)
            st = seqs[seq] = {"t": 0, "def": 0, "open": {}, "names": {}, "fn": {}, "src": {}, "frames": {}, "cs": {}}
        if pk.HasField("trace_packet_defaults") and pk.trace_packet_defaults.HasField("track_event_defaults"):
            st["def"] = pk.trace_packet_defaults.track_event_defaults.track_uuid
        for c in pk.clock_snapshot.clocks:
            if c.clock_id == 64:
                st["t"] = c.timestamp
        ts = None
        if pk.HasField("timestamp"):
            if pk.timestamp_clock_id == 6:
                ts = pk.timestamp
            else:
                st["t"] += pk.timestamp
                ts = st["t"]
        if pk.HasField("interned_data"):
            d = pk.interned_data
            for x in d.event_names:
                st["names"][x.iid] = x.name
            for x in d.function_names:
                st["fn"][x.iid] = x.str.decode()
            for x in d.source_paths:
                st["src"][x.iid] = x.str.decode()
            for x in d.frames:
                st["frames"][x.iid] = x
            for x in d.callstacks:
                st["cs"][x.iid] = x
        if pk.HasField("track_descriptor"):
            td = pk.track_descriptor
            if td.HasField("process"):
                procs[td.process.pid] = td.process.process_name
            if td.HasField("thread"):
                threads[(td.thread.pid, td.thread.tid)] = td.thread.thread_name
                track_of[td.uuid] = (td.thread.pid, td.thread.tid)
        if pk.HasField("track_event"):
            te = pk.track_event
            track = te.track_uuid if te.HasField("track_uuid") else st["def"]
            if te.type == 1:
                st["open"].setdefault(track, []).append((ts, st["names"].get(te.name_iid, "")))
            elif te.type == 2 and st["open"].get(track):
                t0, name = st["open"][track].pop()
                if name.startswith("MPI_") and track in track_of:
                    mpi.setdefault(track_of[track], []).append((t0, ts))
        if pk.HasField("perf_sample"):
            ps = pk.perf_sample
            if not pk.sequence_flags & 2:
                bad.append("a PerfSample packet does not say it needs the incremental state")
            cs = st["cs"].get(ps.callstack_iid)
            stack = []
            for fid in (cs.frame_ids if cs else []):
                fr = st["frames"].get(fid)
                if fr is None or fr.function_name_id not in st["fn"] or \
                        (fr.source_path_iid and fr.source_path_iid not in st["src"]):
                    bad.append("frame %d of callstack %d is not interned before its use" % (fid, ps.callstack_iid))
                    break
                stack.append((st["fn"][fr.function_name_id], st["src"].get(fr.source_path_iid, ""), fr.line_number))
            if cs is None:
                bad.append("callstack %d is not interned before its use" % ps.callstack_iid)
            samples.append({"pid": ps.pid, "tid": ps.tid, "ts": ts, "stack": stack})
    check(not bad, "trace.pftrace: samples interned right: %s" % bad[:3])
    return samples, threads, procs, mpi


def check_pftrace(pb, merged, run_dir, hot, cold):
    """The PerfSamples of a merge of the main run (see the docstring)."""
    samples, threads, procs, mpi = decode_pftrace(pb, os.path.join(merged, "trace.pftrace"))
    for rank in (0, 1):
        pid = [p for p, n in procs.items() if n.startswith("rank %d " % rank)]
        check(len(pid) == 1, "trace.pftrace: a process track for rank %d: %s" % (rank, procs))
        if not pid:
            continue
        mine = [s for s in samples if s["pid"] == pid[0]]
        with h5py.File(os.path.join(run_dir, "rank-%05d.h5" % rank), "r") as f:
            nrows = len(f["/events/samples"])
            names = [x.decode() for x in f["/definitions/strings"][:]]
            known = set(int(t["os_tid"]) for t in f["/definitions/threads"][:])
            others = sorted(set(int(x) for x in f["/events/samples"]["os_tid"]) - known)
        check(len(mine) == nrows, "trace.pftrace: rank %d's %d samples are PerfSamples on its pid: %d"
              % (rank, nrows, len(mine)))
        hot_s = [s for s in mine if s["stack"] and s["stack"][-1][0] in ("heavy", "light")]
        check(len(hot_s) >= 200, "trace.pftrace: rank %d: at least 200 samples end in heavy or light: %d"
              % (rank, len(hot_s)))
        for fn, src in (("heavy", hot), ("light", cold)):
            leaf = [s["stack"][-1] for s in hot_s if s["stack"][-1][0] == fn]
            check(leaf and all(os.path.basename(x[1]) == src and x[2] > 0 for x in leaf),
                  "trace.pftrace: rank %d: %s's frames name its file %s and a line: %s" % (rank, fn, src, leaf[:2]))
        check(all([x[0] for x in s["stack"][-3:-1]] == ["main", "step"] for s in hot_s),
              "trace.pftrace: rank %d: heavy and light are called by step, called by main: %s"
              % (rank, [s["stack"][-3:] for s in hot_s][:2]))
        main = [k for k, n in threads.items() if k[0] == pid[0] and n.startswith("main (thread")]
        check(len(main) == 1 and all((s["pid"], s["tid"]) == main[0] for s in hot_s),
              "trace.pftrace: rank %d: heavy's and light's samples sit on the main thread's track %s: %s"
              % (rank, main, sorted(set((s["pid"], s["tid"]) for s in hot_s))))
        burn = [s for s in mine if s["stack"] and s["stack"][-1][0] == "burn" and
                any(x[0] == "thread_work" for x in s["stack"])]
        own = ["sampled thread (tid %d)" % t for t in others]
        check(burn and all(threads.get((s["pid"], s["tid"])) in own for s in burn),
              "trace.pftrace: rank %d: the thread that never called xsprof has a track of its own (%s): %s"
              % (rank, own, sorted(set(threads.get((s["pid"], s["tid"])) for s in burn))))
        if main:
            inside = sum(1 for s in hot_s if any(b <= s["ts"] <= e for b, e in mpi.get(main[0], [])))
            check(mpi.get(main[0]) and inside <= 0.05 * len(hot_s),
                  "trace.pftrace: rank %d: compute samples fall outside the thread's MPI slices (aligned clock): "
                  "%d of %d inside" % (rank, inside, len(hot_s)))


def check_h5(merged, run_dir, hot, hot_line):
    """merged.h5's /analysis/frames and /analysis/modules (merge/README)."""
    with h5py.File(os.path.join(merged, "merged.h5"), "r") as f:
        fr = f["/analysis/frames"][:] if "/analysis/frames" in f else []
        md = f["/analysis/modules"][:] if "/analysis/modules" in f else []
    keys = [(x["module"], int(x["offset"]), int(x["ret"])) for x in fr]
    check(len(fr) and len(keys) == len(set(keys)), "merged.h5 /analysis/frames: one row per resolved address: %d rows"
          % len(fr))
    hv = [x for x in fr if x["function"] == b"heavy" and x["ret"] == 0]
    check(hv and all(os.path.basename(x["file"].decode()) == hot for x in hv) and
          any(x["line"] in (hot_line, hot_line + 1) for x in hv),
          "merged.h5 /analysis/frames: heavy's sampled addresses in %s, its loop at line %d: %s" % (hot, hot_line, hv[:2]))
    for rank in (0, 1):
        with h5py.File(os.path.join(run_dir, "rank-%05d.h5" % rank), "r") as f:
            names = [x.decode() for x in f["/definitions/strings"][:]]
            want = sorted((names[m["path"]], names[m["build_id"]], int(m["lo"]), int(m["hi"]))
                          for m in f["/definitions/modules"][:])
        got = sorted((m["path"].decode(), m["build_id"].decode(), int(m["lo"]), int(m["hi"]))
                     for m in md if m["rank"] == rank)
        check(got and got == want, "merged.h5 /analysis/modules: rank %d's modules (path, build-id, range): %d of %d"
              % (rank, len(got), len(want)))
    mods = set(m["path"] for m in md)
    check(all(x["module"] in mods for x in fr), "merged.h5 /analysis/frames: every frame's module is in /analysis/modules")


def check_callgrind(merged, hot, hot_line, cold, cold_line):
    path = os.path.join(merged, "callgrind.out")
    cg = {k: {ln: c.get("samples", 0) for ln, c in v.items()} for k, v in callgrind_out.self_costs(path).items()} \
        if os.path.exists(path) else {}
    tot = {}
    for fn, src, line in (("heavy", hot, hot_line), ("light", cold, cold_line)):
        places = {k: v for k, v in cg.items() if k[1] == fn}
        tot[fn] = sum(sum(v.values()) for v in places.values())
        files = set(os.path.basename(k[0] or "") for k in places)
        top = max(((n, ln) for v in places.values() for ln, n in v.items()), default=(0, 0))
        check(files == {src} and top[1] in (line, line + 1),
              "callgrind.out: %s in %s with its samples at its loop, line %d: %s" % (fn, src, line, places))
    check(tot["heavy"] + tot["light"] > 0 and abs(100.0 * tot["heavy"] / (tot["heavy"] + tot["light"]) - 70) <= 5,
          "callgrind.out: heavy has 70 %% +- 5 of heavy's and light's samples: %s" % tot)
    annotate = shutil.which("callgrind_annotate")
    if annotate and os.path.exists(path):  # valgrind's own reader finds heavy in its file
        p = subprocess.run([annotate, "--threshold=100", "--auto=no", path], capture_output=True, text=True)
        check(p.returncode == 0 and re.search(r"\b%s:heavy\b" % re.escape(hot), p.stdout),
              "callgrind_annotate lists heavy in %s: %s" % (hot, p.stdout[-800:] + p.stderr))


def sampling_lines(err):
    return [l for l in err.splitlines() if "XSPROF_SAMPLE_HZ" in l]


def clock_case(demo, proto, xsmerge):
    run_dir, err = run("clock", 3, {"XSPROF_SAMPLE_HZ": "2000"}, 30, demo)
    pb = perfetto_module(proto)
    outs = {}
    for name, pre, extra in (("plain", [], []), ("memory", [], ["--min-latency", "2ms"]),
                             ("stream", [], ["--min-latency", "2ms", "--stream"]),
                             ("np2", [os.environ.get("MPIEXEC") or "mpiexec", "-np", "2", "--oversubscribe"],
                              ["--min-latency", "2ms"])):
        out = run_dir + "-" + name
        RUNS.append(out)
        env = dict(os.environ, XSPROF_MERGE_TIMES="1")
        if pre:
            pre = pre + ["-x", "XSPROF_MERGE_TIMES"]
        p = subprocess.run(pre + [xsmerge, run_dir, "-o", out, "--outputs", "pftrace,report"] + extra,
                           capture_output=True, text=True, timeout=300, env=env)
        check(p.returncode == 0, "clock: xsmerge %s: %s" % (name, p.stderr))
        # the report's addresses: resolved by the report alone in one
        # process; under mpiexec each process resolves its share, the
        # shares add up to the same unique addresses, the report finds
        # every one resolved (issue 34: the work is divided)
        got = [(int(m.group(1)), m.group(2)) for m in
               re.finditer(r"time symbols \((\d+) addresses(, this process's share| resolved by the report)\)", p.stderr)]
        alone = [n for n, w in got if w == " resolved by the report"]
        shares = [n for n, w in got if w != " resolved by the report"]
        if name == "memory":
            serial = alone[0] if alone else -1
        elif name == "np2":
            check(len(shares) == 2 and all(n > 0 for n in shares) and sum(shares) == serial and alone == [0],
                  "clock: under mpiexec -np 2 the processes resolve %s addresses, the report %s (alone: %d)"
                  % (shares, alone, serial))
        outs[name] = [open(os.path.join(out, f), "rb").read() if p.returncode == 0 else b""
                      for f in ("trace.pftrace", "report.json")]
    for k, f in enumerate(("trace.pftrace", "report.json (the engine's samples)")):
        check(outs["memory"][k] and outs["memory"][k] == outs["stream"][k] == outs["np2"][k],
              "clock: %s the same bytes in memory, --stream and under mpiexec" % f)
    import json
    corr = json.load(open(run_dir + "-memory/report.json"))["clock"]["max_correction_us"] * 1000
    a = decode_pftrace(pb, os.path.join(run_dir + "-plain", "trace.pftrace"))[0]
    b = decode_pftrace(pb, os.path.join(run_dir + "-memory", "trace.pftrace"))[0]
    shift = [y["ts"] - x["ts"] for x, y in zip(a, b)]
    check(len(a) == len(b) > 0 and corr > 0 and all(0 <= d <= corr + 1 for d in shift) and max(shift) > 0,
          "clock: the logical clock moves the samples by 0 to its largest correction (%.0f ns): %s"
          % (corr, (min(shift), max(shift)) if shift else None))
    finish()


def main():
    args = sys.argv[1:]
    if args[:1] == ["--clock"]:
        clock_case(*args[1:4])
        return
    fortran = args[:2] == ["--lang", "fortran"]
    if fortran:
        args = args[2:]
    plugin = plugin_src = proto = None
    if args[:1] == ["--plugin"]:
        plugin, plugin_src, args = args[1], args[2], args[3:]
    if args[:1] == ["--proto"]:
        proto, args = args[1], args[2:]
    if len(args) != 5:
        sys.exit(__doc__)
    xsm, xsmerge, program, hot_src, cold_src = args
    callers = "<sample<main" if fortran else "<step<main"  # Fortran: step is inlined into the program
    hot_line, cold_line = marks(hot_src)["HEAVY_LOOP"], marks(cold_src)["LIGHT_LOOP"]
    hot, cold = os.path.basename(hot_src), os.path.basename(cold_src)

    env = {"XSPROF_SAMPLE_HZ": "1000"}
    if plugin:
        env["MPI_SAMPLE_PLUGIN"] = plugin
    run_dir, err = run("fortran" if fortran else "main", 2, env, 15, program)
    check(not sampling_lines(err), "no message at a valid rate: %s" % sampling_lines(err))
    res = samples(xsm, run_dir)
    print(res)
    for rank in (0, 1):
        r = res.get(rank)
        if not r:
            check(False, "rank %d has samples" % rank)
            continue
        h, c = leaf_n(r, "heavy"), leaf_n(r, "light")
        share = 100.0 * h / (h + c) if h + c else 0
        check(h + c >= 200, "rank %d: at least 200 samples in heavy and light at 1 kHz: %d" % (rank, h + c))
        check(abs(share - 70) <= 5, "rank %d: heavy has 70 %% +- 5 of heavy + light: %.1f %%" % (rank, share))
        for fn, src, line in (("heavy", hot, hot_line), ("light", cold, cold_line)):
            wheres = sorted(r["leaf"].get(fn, []), key=lambda x: -x[1])
            top = wheres[0][0] if wheres else ""
            m = re.fullmatch(r"(.*):(\d+)", top)
            check(m and os.path.basename(m.group(1)) == src and int(m.group(2)) in (line, line + 1),
                  "rank %d: %s's samples are in its loop, %s:%d: %s" % (rank, fn, src, line, wheres))
        for fn in ("heavy", "light"):
            check(r["path"].get(fn + callers, 0) >= 0.9 * leaf_n(r, fn),
                  "rank %d: %s's samples unwind to %s (no frame pointers): %s" % (rank, fn, callers, r["path"]))
        if fortran:
            continue
        check(r["threads"] >= 2 and r["path"].get("burn<thread_work<start_thread", 0) > 0,
              "rank %d: the thread started after MPI_Init is sampled (burn <- thread_work): %s" % (rank, r["path"]))
        check(not [k for k in r["path"] if "child_work" in k], "rank %d: the forked child is not sampled" % rank)
        if plugin:
            wheres = sorted(r["leaf"].get("plugin_burn", []), key=lambda x: -x[1])
            line = marks(plugin_src)["PLUGIN_LOOP"]
            m = re.fullmatch(r"(.*):(\d+)", wheres[0][0]) if wheres else None
            check(m and os.path.basename(m.group(1)) == os.path.basename(plugin_src) and int(m.group(2)) in (line, line + 1)
                  and sum(n for _, n in wheres) >= 0.6 * leaf_n(r, "heavy") / 7,  # 1/7 of heavy's iterations
                  "rank %d: the library dlopened and closed during the run: its samples resolve to %s:%d: %s"
                  % (rank, os.path.basename(plugin_src), line, wheres))
    if fortran:
        finish()
        return
    with h5py.File(os.path.join(run_dir, "rank-00000.h5"), "r") as f:
        sm = f["/events/samples"][:]
        names = [s.decode() for s in f["/definitions/strings"][:]]
        threads = f["/definitions/threads"][:]
        main_tid = [t["os_tid"] for t in threads if names[t["name"]] == "main"]
        check(main_tid and (sm["os_tid"] == main_tid[0]).sum() > 0.5 * len(sm),
              "most samples are the main thread's (os_tid %s)" % main_tid)
        check(len(sm) and all((sm["stack"] > 0)), "every sample has a call stack")
    p = subprocess.run([xsmerge, run_dir, "-o", run_dir + "-merged", "--format", "callgrind"], capture_output=True,
                       text=True, timeout=300)
    RUNS.append(run_dir + "-merged")
    check(p.returncode == 0, "xsmerge merges a run with samples: %s" % p.stderr)
    check_callgrind(run_dir + "-merged", hot, hot_line, cold, cold_line)
    # the report says where the CPU time went: heavy's loop line first,
    # light's after it, 70 : 30 between them, in seconds (perf clock); the
    # same from --stream (one analysis)
    import json
    rep = json.load(open(os.path.join(run_dir + "-merged", "report.json")))
    sm = rep["samples"]
    row = lambda fn: [s for s in sm if s["function"] == fn]
    h, c = row("heavy"), row("light")
    print("report samples:", sm[:4])
    check(h and os.path.basename(h[0]["file"] or "") == hot and h[0]["line"] in (hot_line, hot_line + 1) and
          h[0]["ranks"] == 2 and h[0]["seconds"] is not None and h[0]["seconds"] > 0,
          "report.json samples: heavy at %s:%d on both ranks, in seconds: %s" % (hot, hot_line, h[:1]))
    hs, cs = sum(s["samples"] for s in h), sum(s["samples"] for s in c)
    check(hs + cs > 0 and abs(100.0 * hs / (hs + cs) - 70) <= 5,
          "report.json samples: heavy 70 %% +- 5 of heavy + light: %d vs %d" % (hs, cs))
    # the sampled stacks as a flame graph: heavy under step under main
    fold = os.path.join(run_dir + "-merged", "flame-samples.folded")
    flines = open(fold).read().splitlines() if os.path.exists(fold) else []
    hv = sum(int(l.rsplit(" ", 1)[1]) for l in flines if re.search(r";main;(.*;)?step;heavy( |;)", l))
    check(os.path.exists(os.path.join(run_dir + "-merged", "flame-samples.svg")) and hv >= 0.9 * hs,
          "flame-samples.folded holds heavy's samples under main;step (%d of %d)" % (hv, hs))
    # the engine placed each sample in the MPI call it fell in: a call is
    # the outer frame of the samples taken inside it (regions the same)
    inmpi = [l for l in flines if ";PMPI_Allreduce;" in l]
    placed = sum(int(l.rsplit(" ", 1)[1]) for l in inmpi if re.match(r"rank \d+;MPI_Allreduce;", l))
    total = sum(int(l.rsplit(" ", 1)[1]) for l in inmpi)
    check(total == 0 or placed >= 0.9 * total,
          "flame-samples.folded: samples inside PMPI_Allreduce under the MPI_Allreduce call frame (%d of %d)" % (placed, total))
    with open(os.path.join(run_dir + "-merged", "report.txt")) as f:
        txt = f.read()
    check("==== Sampled CPU time" in txt and "heavy (" in txt, "report.txt has the sampled CPU time with heavy")
    if proto:
        check_pftrace(perfetto_module(proto), run_dir + "-merged", run_dir, hot, cold)
    check_h5(run_dir + "-merged", run_dir, hot, hot_line)
    p = subprocess.run([xsmerge, run_dir, "-o", run_dir + "-stream", "--stream", "--outputs", "report,pftrace"],
                       capture_output=True, text=True, timeout=300)
    RUNS.append(run_dir + "-stream")
    check(p.returncode == 0 and open(os.path.join(run_dir + "-stream", "report.json")).read() ==
          open(os.path.join(run_dir + "-merged", "report.json")).read(),
          "--stream writes the same report.json (samples included): %s" % p.stderr)
    with open(os.path.join(run_dir + "-stream", "trace.pftrace"), "rb") as a, \
            open(os.path.join(run_dir + "-merged", "trace.pftrace"), "rb") as b:
        check(p.returncode == 0 and a.read() == b.read(), "--stream writes the same trace.pftrace (samples included)")
    # a rank file from before sampling (no /events/samples) still loads: no samples
    old = os.path.join(run_dir, "old.h5")
    shutil.copy(os.path.join(run_dir, "rank-00001.h5"), old)
    with h5py.File(old, "r+") as f:
        del f["/events/samples"]
    p = subprocess.run([xsm, old], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and p.stdout.startswith("rank\t1\tsamples\t0\t"),
          "a rank file without /events/samples loads with no samples: %s %s" % (p.stdout[:80], p.stderr))

    # a rank killed by SIGKILL: its journal keeps the samples drained before
    # the death (all but the last few ms), recovered as xsmerge recovers it
    run_dir, err = run("killed", 1, {"XSPROF_SAMPLE_HZ": "1000"}, 5, program, ["die"])
    files = sorted(os.listdir(run_dir))
    check(files == ["rank-00000.xsj"], "the killed rank leaves its journal only: %s" % files)
    res = samples(xsm, run_dir).get(0, {"n": 0, "leaf": {}, "path": {}})
    h, c = leaf_n(res, "heavy"), leaf_n(res, "light")
    check(h + c >= 60 and res["path"].get("heavy<step<main", 0) > 0,
          "the journal of the killed rank holds resolvable samples: %d in heavy, %d in light" % (h, c))
    p = subprocess.run([xsmerge, run_dir, "-o", run_dir + "-merged"], capture_output=True, text=True, timeout=300)
    RUNS.append(run_dir + "-merged")
    check(p.returncode == 0 and "recovered" in p.stderr + p.stdout, "xsmerge recovers the killed rank: %s" % p.stderr)

    # a real refusal: a seccomp filter (as containers have) makes perf_event_open fail
    run_dir, err = run("seccomp", 1, {"XSPROF_SAMPLE_HZ": "1000"}, 3, program, ["seccomp"], ok=True)
    lines = sampling_lines(err)
    check(len(lines) == 1 and "perf_event_open refused (Permission denied)" in lines[0]
          and "CPU-time timers instead" in lines[0], "seccomp: one line naming the refusal and the fallback: %s" % lines)
    res = samples(xsm, run_dir).get(0, {"n": 0, "leaf": {}, "path": {}})
    check(leaf_n(res, "heavy") > 0 and res["path"].get("heavy<step<main", 0) > 0,
          "seccomp: sampled by the timers, stacks unwound: %s" % res["path"])

    # bad input and fallbacks: one rank, a short run
    cases = [("abc", {"XSPROF_SAMPLE_HZ": "abc"}, "is not a rate", False),
             ("zero", {"XSPROF_SAMPLE_HZ": "0"}, None, False),
             ("clamped", {"XSPROF_SAMPLE_HZ": "100000"}, "sampling at 10000 per second", True),
             ("no_perf", {"XSPROF_SAMPLE_HZ": "1000", "XSPROF_TEST_SAMPLE_REFUSE": "perf"},
              "CPU-time timers instead", True),
             ("refused", {"XSPROF_SAMPLE_HZ": "1000", "XSPROF_TEST_SAMPLE_REFUSE": "all"},
              "the run goes on without samples", False)]
    for name, env, text, want_samples in cases:
        run_dir, err = run(name, 1, env, 3, program)
        lines = sampling_lines(err)
        if text:
            check(len(lines) == 1 and text in lines[0], "%s: one line saying '%s': %s" % (name, text, lines))
        else:
            check(not lines, "%s: no message: %s" % (name, lines))
        res = samples(xsm, run_dir)
        n = res.get(0, {}).get("n", 0)
        check((n > 0) == want_samples, "%s: %s (%d)" % (name, "samples" if want_samples else "no samples", n))
        if want_samples and name == "no_perf":
            check(leaf_n(res[0], "heavy") > 0 and res[0]["path"].get("heavy<step<main", 0) > 0,
                  "timer samples unwind too: %s" % res[0]["path"])
    finish()


def finish():
    if FAILS:
        sys.exit("check_sampling: %d failures (runs kept under %s)" % (len(FAILS), os.path.dirname(RUNS[0])))
    for d in RUNS:
        shutil.rmtree(d, ignore_errors=True)
    print("check_sampling: all checks passed")


if __name__ == "__main__":
    main()
