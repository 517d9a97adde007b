"""NVTX capture through LD_PRELOAD alone, or through NVTX_INJECTION64_PATH alone.

Runs nvtx_app (compiled against the NVTX headers only, not linked with
xsprof) with LD_PRELOAD=$XSPROF_LIB (or, with `inject`, with only
NVTX_INJECTION64_PATH naming the library, which NVTX then dlopens) and checks that every range, mark,
domain, category, payload and thread name arrives in the rank file with the
right names, nesting and durations; then, when xsmerge is built, that the
same ranges appear in the merged trace.json.

usage: check_nvtx.py NVTX_APP WORK_DIR [LIBRARY [inject]]   (default $XSPROF_LIB)
Durations are only checked from below: the app sleeps inside each range.
"""
import json
import os
import shutil
import subprocess
import sys

import h5py

MS = 1_000_000
CAT_NVTX = 2
DEPTH_ASYNC = 0xFFFF
BASE = 256  # XSPROF_NVTX_DEPTH_BASE: push/pop depth = BASE + NVTX level
ARG_INT, ARG_DOUBLE, ARG_STRING = 1, 2, 3


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def text(s):
    return s.decode() if isinstance(s, bytes) else str(s)


def load(path):
    with h5py.File(path, "r") as f:
        strings = [text(s) for s in f["/definitions/strings"][()]]
        regions = f["/events/regions"][()]
        args = f["/events/args"][()]
        instants = f["/events/instants"][()]
        threads = f["/definitions/threads"][()]
        meta = {strings[m["key"]]: strings[m["value"]] for m in f["/definitions/metadata"][()]}
    out = {}
    for row, r in enumerate(regions):
        a = {}
        for arg in args:
            if arg["region"] == row:
                key = strings[arg["key"]]
                kind = int(arg["kind"])
                a[key] = (int(arg["i"]) if kind == ARG_INT else float(arg["d"]) if kind == ARG_DOUBLE
                          else strings[arg["s"]])
        name = strings[r["name"]]
        check(name not in out, "region %r recorded twice" % name)
        out[name] = {"t0": int(r["t_begin"]), "t1": int(r["t_end"]), "thread": int(r["thread"]),
                     "depth": int(r["depth"]), "category": int(r["category"]), "args": a}
    marks = {strings[i["name"]]: (int(i["t"]), int(i["thread"])) for i in instants}
    tnames = {int(t["tid"]): strings[t["name"]] for t in threads}
    return out, marks, tnames, meta


def inside(inner, outer):
    return outer["t0"] <= inner["t0"] and inner["t1"] <= outer["t1"]


def check_rank_file(path):
    reg, marks, tnames, meta = load(path)
    expected = ["outer", "middle_\u00e9", "inner_ex", "startend", "cross_thread", "worker_range",
                "registered_name", "domain_inner", "domain_mark", "domain_startend"]
    for name in expected:
        check(name in reg, "NVTX range %r missing; got %s" % (name, sorted(reg)))
        check(reg[name]["category"] == CAT_NVTX, "%r: category %d, expected nvtx (2)" % (name, reg[name]["category"]))
    check(len(reg) == len(expected), "unexpected regions: %s" % sorted(set(reg) - set(expected)))

    main = reg["outer"]["thread"]
    worker = reg["worker_range"]["thread"]
    check(main != worker, "worker range recorded on the main thread")
    check(tnames.get(main) == "nvtx-main", "nvtxNameOsThread(main): thread names %s" % tnames)
    check(tnames.get(worker) == "nvtx-worker", "nvtxNameOsThread(worker): thread names %s" % tnames)

    # push/pop: nesting, depth, durations (the app sleeps 2, 2, 3 ms)
    o, m, i = reg["outer"], reg["middle_\u00e9"], reg["inner_ex"]
    check((o["depth"], m["depth"], i["depth"]) == (BASE, BASE + 1, BASE + 2),
          "push/pop depths %s" % [o["depth"], m["depth"], i["depth"]])
    check(inside(i, m) and inside(m, o), "push/pop ranges do not nest")
    check(i["t1"] - i["t0"] >= 3 * MS, "inner_ex shorter than its 3 ms sleep")
    check(m["t1"] - m["t0"] >= 5 * MS, "middle shorter than 5 ms")
    check(o["t1"] - o["t0"] >= 7 * MS, "outer shorter than 7 ms")
    check(i["args"] == {"category": "io", "payload": 42}, "inner_ex args %s" % i["args"])
    check(o["args"] == {} and m["args"] == {}, "plain pushes carry args")

    # start/end: async spans that keep their own ids, one crossing threads
    s, c = reg["startend"], reg["cross_thread"]
    for r in (s, c, reg["domain_startend"]):
        check(r["depth"] == DEPTH_ASYNC, "start/end range depth %d, expected %d" % (r["depth"], DEPTH_ASYNC))
        check("nvtx_range_id" in r["args"], "start/end range without nvtx_range_id")
        check(r["args"]["start_thread"] == main, "start_thread %s, expected %d" % (r["args"], main))
    ids = {s["args"]["nvtx_range_id"], c["args"]["nvtx_range_id"], reg["domain_startend"]["args"]["nvtx_range_id"]}
    check(len(ids) == 3, "start/end ranges share ids")
    check(s["thread"] == main and s["t1"] - s["t0"] >= 4 * MS, "startend: %s" % s)
    check(c["thread"] == worker, "cross_thread must be recorded where it ended (worker)")
    check(c["t1"] - c["t0"] >= 5 * MS, "cross_thread shorter than the worker's 5 ms sleep")
    w = reg["worker_range"]
    check(w["depth"] == BASE and w["t1"] - w["t0"] >= 2 * MS, "worker_range: %s" % w)

    # domains: registered string, domain category, payload, nested push, mark
    d0, d1, dm, ds = reg["registered_name"], reg["domain_inner"], reg["domain_mark"], reg["domain_startend"]
    check(d0["args"] == {"domain": "mydomain", "category": "dcat"}, "registered_name args %s" % d0["args"])
    check(d1["args"] == {"domain": "mydomain", "payload": 2.5}, "domain_inner args %s" % d1["args"])
    check(dm["args"] == {"domain": "mydomain"}, "domain_mark args %s" % dm["args"])
    check(ds["args"]["domain"] == "mydomain", "domain_startend args %s" % ds["args"])
    check((d0["depth"], d1["depth"], dm["depth"]) == (BASE, BASE + 1, BASE + 2), "domain depths")
    check(inside(d1, d0) and inside(dm, d1), "domain ranges do not nest")
    check(dm["t0"] == dm["t1"], "a domain mark is a zero-length region")
    check(d0["t1"] - d0["t0"] >= 4 * MS and d1["t1"] - d1["t0"] >= 2 * MS, "domain range durations")
    check(ds["t1"] - ds["t0"] >= 2 * MS, "domain_startend shorter than 2 ms")

    # marks: instants on the calling thread, at the right time
    check(set(marks) == {"mark_a", "mark_w"}, "marks %s" % sorted(marks))
    check(i["t0"] <= marks["mark_a"][0] <= i["t1"], "mark_a not inside inner_ex")
    check(marks["mark_a"][1] == main and marks["mark_w"][1] == main, "marks on the wrong thread")
    check(meta.get("nvtx_injection") == "on", "metadata nvtx_injection missing: %s" % meta)
    return reg


def check_merged(run_dir, work):
    xsmerge = os.environ.get("XSMERGE", "")
    if not xsmerge or not os.access(xsmerge, os.X_OK):
        print("xsmerge not built: merged-trace check not run")
        return False
    out = os.path.join(work, "merged")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([xsmerge, run_dir, "-o", out], capture_output=True, text=True)
    check(p.returncode == 0, "xsmerge failed (%d): %s" % (p.returncode, p.stderr))
    with open(os.path.join(out, "trace.json")) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names = {}
    for e in events:
        if e.get("ph") in ("X", "B", "b", "i", "I", "n"):
            names.setdefault(e.get("name"), []).append(e)
    for name in ["outer", "middle_\u00e9", "inner_ex", "startend", "cross_thread", "worker_range",
                 "registered_name", "domain_inner", "domain_startend", "mark_a", "mark_w"]:
        check(name in names, "merged trace.json lacks %r" % name)
    for name in ["outer", "startend", "cross_thread", "registered_name", "domain_inner"]:
        check(any(e.get("cat") == "nvtx" for e in names[name]), "%s: not in category nvtx in trace.json" % name)
    dom = [e for e in names["registered_name"] if e.get("ph") == "X"]
    check(dom and dom[0].get("args", {}).get("domain") == "mydomain", "registered_name: domain lost in trace.json")
    for name, lo in [("outer", 7), ("inner_ex", 3), ("registered_name", 4)]:
        x = [e for e in names[name] if e.get("ph") == "X"]
        if x:
            check(float(x[0]["dur"]) >= lo * 1000, "%s: merged duration %s us < %d ms" % (name, x[0]["dur"], lo))
    return True


def main():
    app, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run_dir = os.path.join(work, "run")
    env = dict(os.environ)
    lib = sys.argv[3] if len(sys.argv) > 3 else env["XSPROF_LIB"]
    env["XSPROF_OUTPUT"] = run_dir
    if sys.argv[4:] == ["inject"]:
        env.pop("LD_PRELOAD", None)
        env["NVTX_INJECTION64_PATH"] = lib
    else:
        env["LD_PRELOAD"] = lib
        env.pop("NVTX_INJECTION64_PATH", None)  # xsprof must set it itself
    p = subprocess.run([app], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "nvtx_app failed (%d): %s" % (p.returncode, p.stderr))
    check("nvtx_app done" in p.stdout, "nvtx_app output changed: %r" % p.stdout)
    reg = check_rank_file(os.path.join(run_dir, "rank-00000.h5"))
    merged = check_merged(run_dir, work)
    print("nvtx: %d ranges checked in the rank file%s" % (len(reg), ", and in trace.json" if merged else ""))


if __name__ == "__main__":
    main()
