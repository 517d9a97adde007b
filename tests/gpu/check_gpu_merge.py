"""GPU records of the CUPTI decoding test (gpu.cupti_decode) on the merged
timeline: xsmerge must put every kernel, copy, memset, synchronisation and
API record into trace.json with its duration, and link the kernel to its
launch with a flow arrow. Skipped (77) until xsmerge is
built.

usage: check_gpu_merge.py RUN_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

# name -> duration in ns, as test_cupti_decode.c wrote them
EXPECTED = {
    "_Z5saxpyifPKfPf": 500000,
    "Memcpy HtoD (Pageable -> Device)": 100000,
    "Memcpy DtoH (Device -> Pinned)": 50000,
    "Memcpy DtoD (Device -> Device)": 10000,
    "Memset (Device)": 10000,
    "Sync: stream": 100000,
    "cudaLaunchKernel": 5000,
    "cuLaunchKernel": 10000,
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    run_dir, out = sys.argv[1], sys.argv[2]
    xsmerge = os.environ.get("XSMERGE", "")
    if not xsmerge or not os.access(xsmerge, os.X_OK):
        print("SKIP: xsmerge not built")
        sys.exit(77)
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([xsmerge, run_dir, "-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        fail("xsmerge failed (%d): %s" % (p.returncode, p.stderr))
    with open(os.path.join(out, "trace.json")) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    seen = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") in EXPECTED:
            seen[e["name"]] = e
    missing = sorted(set(EXPECTED) - set(seen))
    if missing:
        fail("GPU records missing from trace.json: %s" % missing)
    for name, ns in EXPECTED.items():
        dur_us = float(seen[name]["dur"])
        if abs(dur_us * 1000 - ns) > 1:
            fail("%s: duration %s us, expected %s ns" % (name, dur_us, ns))
    # The kernel links back to its launch: a flow from the API call's thread
    # ends on the kernel's track.
    kernel = seen["_Z5saxpyifPKfPf"]
    starts = {e.get("id"): e for e in events if e.get("ph") == "s"}
    linked = [e for e in events if e.get("ph") == "f" and e.get("tid") == kernel["tid"] and e.get("id") in starts
              and starts[e["id"]].get("tid") == seen["cudaLaunchKernel"]["tid"]]
    if not linked:
        fail("no flow arrow from cudaLaunchKernel to the kernel in trace.json")
    print("gpu merge: %d GPU records on the merged timeline" % len(EXPECTED))


if __name__ == "__main__":
    main()
