"""trace.json is valid Chrome trace-event JSON (every event has the keys
its phase needs, X slices have non-negative durations, flows come in s/f
pairs, counters carry numeric args, GPU work sits on its own named track),
and a trace larger than the part size is split into trace-partNN.json
files that are each complete documents and together hold every event."""
import glob
import json
import os
import sys

from mergetest import check, finish, make_run, tmpdir, xsmerge

maker = sys.argv[1]
base = tmpdir()
NEED = {"X": ("name", "pid", "tid", "ts", "dur"), "i": ("name", "pid", "tid", "ts", "s"),
        "C": ("name", "pid", "ts", "args"), "s": ("id", "pid", "tid", "ts", "cat"),
        "f": ("id", "pid", "tid", "ts", "cat", "bp"), "M": ("name", "pid", "args")}


def validate(path):
    doc = json.load(open(path))
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "%s: traceEvents list" % path)
    check(doc.get("displayTimeUnit") == "ns", "%s: displayTimeUnit" % path)
    ev = doc["traceEvents"]
    for e in ev:
        ph = e.get("ph")
        check(ph in NEED, "%s: known phase %r" % (path, ph))
        for k in NEED.get(ph, ()):
            check(k in e, "%s: %s event has %s: %s" % (path, ph, k, e))
        if ph == "X":
            check(e["dur"] >= 0 and e["ts"] >= 0, "non-negative times")
        if ph == "C":
            check(all(isinstance(v, (int, float)) for v in e["args"].values()), "numeric counter")
    return ev


run = make_run(maker, "gpu", os.path.join(base, "gpu"))
out = os.path.join(base, "gpu-out")
rc, so, se = xsmerge(run, "-o", out, "-q")
check(rc == 0, "gpu run merges")
ev = validate(os.path.join(out, "trace.json"))
tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
kernel = [e for e in ev if e["ph"] == "X" and e["name"] == "saxpy"][0]
check(tracks.get((kernel["pid"], kernel["tid"])) == "GPU 0 stream 7", "kernel on its GPU stream track")
check(kernel["args"]["grid"] == [128, 1, 1] and kernel["args"]["block"] == [256, 1, 1], "kernel launch shape")
launch = [e for e in ev if e["ph"] == "X" and e["name"] == "cudaLaunchKernel"][0]
check(tracks.get((launch["pid"], launch["tid"])) == "main (thread 0)", "API call on its CPU thread")
s = [e for e in ev if e["ph"] == "s"]
f = [e for e in ev if e["ph"] == "f"]
check(len(s) == 1 and len(f) == 1 and s[0]["id"] == f[0]["id"], "launch flow")
mem = [e for e in ev if e["ph"] == "C" and e["name"] == "memory (host)"]
check([m["args"]["bytes"] for m in mem] == [4096, 0], "host memory counter %s" % mem)
check(any(e["ph"] == "i" and e["name"] == "checkpoint" for e in ev), "instant")
solve = [e for e in ev if e["ph"] == "X" and e["name"] == "solve"][0]
check(solve["args"] == {"n": 1024}, "region argument")

# splitting: 8 ranks x 3000 events with 200 kB parts
big = make_run(maker, "big", os.path.join(base, "big"), 8, 3000)
whole = os.path.join(base, "big-whole")
rc, so, se = xsmerge(big, "-o", whole, "-q")
check(rc == 0, "big run merges")
one = validate(os.path.join(whole, "trace.json"))
parts_dir = os.path.join(base, "big-parts")
rc, so, se = xsmerge(big, "-o", parts_dir, "-q", "--outputs", "pftrace,json,h5,report",
                     env={"XSPROF_MERGE_JSON_PART_BYTES": "200000"})
check(rc == 0, "split merge")
parts = sorted(glob.glob(os.path.join(parts_dir, "trace-part*.json")))
check(len(parts) > 3, "several parts (%d)" % len(parts))
check(not os.path.exists(os.path.join(parts_dir, "trace.json")), "no trace.json next to parts")
events = []
last_end = -1
for p in parts:
    check(os.path.getsize(p) <= 200000, "%s within the part size" % p)
    ev = validate(p)
    check(sum(1 for e in ev if e["ph"] == "M" and e["name"] == "process_name") == 8, "%s names every rank" % p)
    xs = [e["ts"] for e in ev if e["ph"] == "X"]
    check(min(xs) >= last_end, "parts are consecutive time windows")
    last_end = max(xs)
    events += [e for e in ev if e["ph"] != "M"]
check(len(events) == sum(1 for e in one if e["ph"] != "M"), "parts hold every event")
# the default products hold trace.json only while it fits one part: past
# it, none (no part either), one note, the other products as always. Two
# part sizes: below what the events need at the least (known before
# writing), and below the trace's real size only (found while writing)
nev = sum(1 for e in one if e["ph"] != "M")
for size in (200000, max(nev * 45, os.path.getsize(os.path.join(whole, "trace.json")) // 2)):
    d = os.path.join(base, "big-default-%d" % size)
    rc, so, se = xsmerge(big, "-o", d, env={"XSPROF_MERGE_JSON_PART_BYTES": str(size)})
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(rc == 0 and not [n for n in names if n.endswith(".json") and n.startswith("trace")],
          "default products past one part of %d bytes: no trace.json (%s)" % (size, names))
    check(all(n in names for n in ("trace.pftrace", "merged.h5", "report.json", "report.txt")),
          "the other default products are written (%s)" % names)
    check(se.count("trace.json left out") == 1 and "--outputs json" in se, "one note says how to get it: %r" % se)
# ... and so do they when a big run streams by default (past
# XSPROF_MERGE_STREAM_MB, here 1 KiB): trace.json whole, the in-memory one
# byte for byte, while it fits one part; past it none, the same one note
ring = make_run(maker, "big", os.path.join(base, "ring2"), 2, 30000)
ref = os.path.join(base, "ring2-memory")
rc, so, se = xsmerge(ring, "-o", ref, "-q", env={"XSPROF_MERGE_STREAM_MB": "0"})
check(rc == 0 and os.path.exists(os.path.join(ref, "trace.json")), "ring2 in memory: trace.json (%s)" % se)
for size, whole_json in ((None, True), ("200000", False)):
    d = os.path.join(base, "ring2-stream-%s" % size)
    env = dict({"XSPROF_MERGE_STREAM_MB": "0.001"}, **({"XSPROF_MERGE_JSON_PART_BYTES": size} if size else {}))
    rc, so, se = xsmerge(ring, "-o", d, env=env)
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(rc == 0 and se.count("streaming them") == 1, "ring2 past XSPROF_MERGE_STREAM_MB streams (%d %r)" % (rc, se))
    jsons = [n for n in names if n.endswith(".json") and n.startswith("trace")]
    if whole_json:
        check(jsons == ["trace.json"] and "trace.json left out" not in se and
              open(os.path.join(d, "trace.json"), "rb").read() == open(os.path.join(ref, "trace.json"), "rb").read(),
              "ring2 streamed by default: trace.json whole, the in-memory one (%s)" % names)
    else:
        check(jsons == [] and se.count("trace.json left out") == 1 and "--outputs json" in se,
              "ring2 streamed by default past one part: no trace.json, one note (%s %r)" % (names, se))
    check(all(n in names for n in ("trace.pftrace", "merged.h5", "report.json", "report.txt")),
          "ring2 streamed by default: the other default products (%s)" % names)
# a later merge with fewer parts replaces the old ones
rc, so, se = xsmerge(big, "-o", parts_dir, "-q")
check(rc == 0 and os.path.exists(os.path.join(parts_dir, "trace.json")) and
      not glob.glob(os.path.join(parts_dir, "trace-part*.json")), "stale parts removed on re-merge")
finish("merge_json_split")
