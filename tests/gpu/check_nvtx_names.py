"""NVTX names and payloads through the rank file and every merged output.

Runs nvtx_names (NVTX headers only) with LD_PRELOAD=$XSPROF_LIB, then
xsmerge. Every string xsprof stored must be valid UTF-8 (NVTX accepts any
bytes; JSON and Perfetto strings do not), names must round-trip exactly
where they were valid (quotes, backslashes, control characters), bytes that
were not UTF-8 become U+FFFD, a long name is cut between characters, and
unsigned 64-bit payloads keep their value. trace.json and report.json must
load with json.loads; trace.pftrace must decode with protoc without an
invalid-UTF-8 complaint; merged.h5 strings must decode.

usage: check_nvtx_names.py NVTX_NAMES WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "merge", "perfetto_min.proto")
R = "\ufffd"
NAMES = {
    "json \"q\" \\ back\nnl\ttab \x01 ctl </script>",
    "bad utf8 %s%s %s(" % (R, R, R),
    "overlong %s%s surrogate %s%s%s end" % (R, R, R, R, R),
    "wide \u00e9%s\U0001F600%s" % (R, R),
    "registered \"quoted\"",
    "u64_small",
    "i64_min",
}
LONG = "x" + "\u20ac" * 340  # 1021 bytes: the 341st euro would end at byte 1024
MARK = "mark " + R
THREAD = "main %s thread" % R
DOMAIN = "dom" + R
PAYLOADS = {"registered \"quoted\"": "18446744073709551615", "u64_small": 9223372036854775807,
            "i64_min": -9223372036854775808}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def strict(b, where):
    try:
        return b.decode("utf-8") if isinstance(b, bytes) else str(b)
    except UnicodeDecodeError as e:
        fail("%s: string is not UTF-8: %r (%s)" % (where, b, e))


def check_rank_file(path):
    with h5py.File(path, "r") as f:
        strings = [strict(s, path) for s in f["/definitions/strings"][()]]
    for n in NAMES | {LONG, MARK, THREAD, DOMAIN}:
        check(n in strings, "rank file lacks %r" % n[:80])


def load_json(path):
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail("%s does not load: %s" % (path, e))


def check_merged(run_dir, out):
    xsmerge = os.environ["XSMERGE"]
    p = subprocess.run([xsmerge, run_dir, "-o", out], capture_output=True)
    check(p.returncode == 0, "xsmerge failed (%d): %r" % (p.returncode, p.stderr))
    doc = load_json(os.path.join(out, "trace.json"))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    seen = {e.get("name"): e for e in events if e.get("ph") in ("X", "i")}
    for n in NAMES | {LONG, MARK}:
        check(n in seen, "trace.json lacks %r" % n[:80])
    for n, v in PAYLOADS.items():
        args = seen[n].get("args", {})
        check(args.get("payload") == v, "%s: payload %r in trace.json, expected %r" % (n, args.get("payload"), v))
        check(args.get("domain") == DOMAIN, "%s: domain %r in trace.json" % (n, args.get("domain")))
    tnames = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]
    check(any(THREAD in t for t in tnames), "thread name %r not in trace.json: %r" % (THREAD, tnames))
    report = load_json(os.path.join(out, "report.json"))
    rnames = {r["name"] for r in report.get("regions", [])}
    for n in ("bad utf8 %s%s %s(" % (R, R, R), LONG):
        check(n in rnames, "report.json regions lack %r" % n[:80])
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        strings = [strict(s, "merged.h5") for s in f["strings"][()]]
    check(LONG in strings and MARK in strings, "merged.h5 strings lack the long name or the mark")
    if shutil.which("protoc") and os.path.exists(PROTO):
        with open(os.path.join(out, "trace.pftrace"), "rb") as f:
            p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(PROTO), PROTO],
                               stdin=f, capture_output=True)
        check(p.returncode == 0, "protoc cannot decode trace.pftrace: %r" % p.stderr)
        check(b"UTF-8" not in p.stderr, "trace.pftrace holds strings that are not UTF-8: %r" % p.stderr[:300])
        text = p.stdout.decode("utf-8", "replace")
        check("registered \\\"quoted\\\"" in text, "trace.pftrace lacks the registered name")


def main():
    app, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run_dir = os.path.join(work, "run")
    env = dict(os.environ)
    env["LD_PRELOAD"] = env["XSPROF_LIB"]
    env["XSPROF_OUTPUT"] = run_dir
    env["XSPROF_GPU"] = "0"
    env.pop("NVTX_INJECTION64_PATH", None)
    p = subprocess.run([app], env=env, capture_output=True)
    check(p.returncode == 0 and b"nvtx_names done" in p.stdout, "nvtx_names failed (%d): %r" % (p.returncode, p.stderr))
    check_rank_file(os.path.join(run_dir, "rank-00000.h5"))
    check_merged(run_dir, os.path.join(work, "merged"))
    shutil.rmtree(work, ignore_errors=True)
    print("nvtx names: %d names and %d payloads round-trip through the rank file and the merged outputs"
          % (len(NAMES) + 4, len(PAYLOADS)))


if __name__ == "__main__":
    main()
