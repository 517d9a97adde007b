"""XSPROF_GPU on a node without a GPU driver.

auto ("when present"): no warning; one info line with the reason under
XSPROF_LOG=info; the program runs normally and its NVTX ranges are still
recorded; 1: one warning naming the CUPTI failure; 0: no GPU message at all. An NVTX_INJECTION64_PATH set by another tool is left
alone. The reason is also stored as run metadata
gpu_disabled_reason. Skipped (77) where a CUDA driver is installed, since
there these runs would legitimately collect.

usage: check_gpu_modes.py APP WORK_DIR
"""
import ctypes
import os
import shutil
import subprocess
import sys

import h5py

WARN = "GPU collection disabled"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def text(s):
    return s.decode() if isinstance(s, bytes) else str(s)


def run(app, work, name, extra):
    run_dir = os.path.join(work, name)
    env = dict(os.environ)
    for k in ("XSPROF_GPU", "XSPROF_CUPTI_LIB", "XSPROF_LOG", "NVTX_INJECTION64_PATH"):
        env.pop(k, None)
    env.update(extra)
    env["LD_PRELOAD"] = env["XSPROF_LIB"]
    env["XSPROF_OUTPUT"] = run_dir
    p = subprocess.run([app], env=env, capture_output=True, text=True)
    check(p.returncode == 0, "%s: program failed (%d): %s" % (name, p.returncode, p.stderr))
    check("nvtx_app done" in p.stdout, "%s: program output changed: %r" % (name, p.stdout))
    path = os.path.join(run_dir, "rank-00000.h5")
    warnings = [line for line in p.stderr.splitlines() if WARN in line and " warning: " in line]
    infos = [line for line in p.stderr.splitlines() if WARN in line and " info: " in line]
    if infos and "XSPROF_LOG" not in extra:
        fail("%s: an info line without XSPROF_LOG=info: %r" % (name, infos))
    if "XSPROF_LOG" in extra:
        warnings += infos
    if not os.path.exists(path):
        # A process that records nothing leaves no file (core writes the
        # journal only once a real record exists).
        check(not os.path.exists(run_dir) or not os.listdir(run_dir), "%s: stray files %s" % (name, run_dir))
        return warnings, None, 0, p.stderr
    with h5py.File(path, "r") as f:
        strings = [text(s) for s in f["/definitions/strings"][()]]
        meta = {strings[m["key"]]: strings[m["value"]] for m in f["/definitions/metadata"][()]}
        nregions = f["/events/regions"].shape[0]
    return warnings, meta, nregions, p.stderr


def main():
    app, work = sys.argv[1], sys.argv[2]
    try:
        ctypes.CDLL("libcuda.so.1")
        print("SKIP: a CUDA driver is installed here; these checks are for nodes without one")
        sys.exit(77)
    except OSError:
        pass
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    # auto means "when present": a node without a driver is no problem
    w, meta, n, err = run(app, work, "auto", {"XSPROF_GPU": "auto"})
    check(not w, "auto without a driver: expected no warning, got:\n%s" % err)
    check("libcuda.so.1" in meta.get("gpu_disabled_reason", ""), "auto: metadata %s" % meta)
    check(n > 0, "auto: NVTX ranges lost when the GPU is off")
    w, meta, n, err = run(app, work, "auto-info", {"XSPROF_GPU": "auto", "XSPROF_LOG": "info"})
    check(len(w) == 1 and " info: " in w[0], "auto, XSPROF_LOG=info: expected one info line, got:\n%s" % err)
    check(w[0].startswith("xsprof[rank 0]"), "auto: info line not rank-prefixed: %r" % w[0])
    check("libcuda.so.1" in w[0], "auto: info line lacks the reason: %r" % w[0])

    w, meta, n, err = run(app, work, "default", {})
    check(not w, "unset XSPROF_GPU (auto): expected no warning, got:\n%s" % err)

    w, meta, n, err = run(app, work, "on", {"XSPROF_GPU": "1"})
    check(len(w) == 1, "XSPROF_GPU=1: expected one warning, got %d:\n%s" % (len(w), err))
    reason = meta.get("gpu_disabled_reason", "")
    check(reason and reason in w[0], "XSPROF_GPU=1: metadata reason %r not the logged one %r" % (reason, w[0]))
    check("cupti" in reason.lower(), "XSPROF_GPU=1: reason does not name CUPTI: %r" % reason)
    check(n > 0, "XSPROF_GPU=1: NVTX ranges lost")

    w, meta, n, err = run(app, work, "badlib", {"XSPROF_GPU": "1", "XSPROF_CUPTI_LIB": "/nonexistent/libcupti.so"})
    check(len(w) == 1 and "XSPROF_CUPTI_LIB=/nonexistent/libcupti.so" in w[0],
          "XSPROF_CUPTI_LIB: warning %r" % w)

    w, meta, n, err = run(app, work, "off", {"XSPROF_GPU": "0"})
    check(not w and "GPU" not in err and "CUPTI" not in err, "XSPROF_GPU=0 must be silent, stderr:\n%s" % err)
    check(meta.get("gpu_disabled_reason") == "XSPROF_GPU=0", "XSPROF_GPU=0: metadata %s" % meta)
    check(n > 0, "XSPROF_GPU=0: NVTX ranges lost")

    w, meta, n, err = run(app, work, "bad", {"XSPROF_GPU": "maybe"})
    check(len(w) == 1 and "XSPROF_GPU=maybe" in w[0], "XSPROF_GPU=maybe: warning %r" % w)
    w, meta, n, err = run(app, work, "othertool", {"XSPROF_GPU": "0", "NVTX_INJECTION64_PATH": "/nonexistent/libtool.so"})
    check(n == 0, "NVTX_INJECTION64_PATH of another tool: xsprof must not take NVTX over (%d regions)" % n)
    check(meta is None, "NVTX_INJECTION64_PATH of another tool: nothing recorded, so no rank file (%s)" % meta)

    # auto in a process that records nothing (a shell or launcher inheriting
    # LD_PRELOAD): silent, and no file.
    w, meta, n, err = run(app, work, "auto-idle", {"XSPROF_GPU": "auto", "NVTX_INJECTION64_PATH": "/nonexistent/libtool.so"})
    check(len(w) == 0 and meta is None, "auto, nothing recorded: expected silence, got %r" % w)

    print("gpu modes: auto, unset, 1, XSPROF_CUPTI_LIB, 0 and an invalid value behave as documented")


if __name__ == "__main__":
    main()
