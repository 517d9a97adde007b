"""Both libraries load with dlopen into a process that was not linked with
them: from C (dlopen_app) and from Python (ctypes.CDLL), each recording
regions into a rank file; and neither carries the STATIC_TLS flag that made
dlopen fail ("cannot allocate memory in static TLS block").

usage: check_dlopen.py DLOPEN_APP WORK_DIR LIBRARY...
"""
import os
import re
import shutil
import subprocess
import sys

import h5py

TLS_MAX = 256  # bytes: what is left is a few pointers and counters


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def check_elf(lib):
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    flags = " ".join(l for l in dyn.splitlines() if "(FLAGS)" in l)
    check("STATIC_TLS" not in flags, "%s carries STATIC_TLS: %s" % (lib, flags.strip()))
    seg = subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True, check=True).stdout
    tls = [l.split() for l in seg.splitlines() if l.strip().startswith("TLS")]
    check(len(tls) == 1, "%s: expected one TLS segment, got %s" % (lib, tls))
    memsz = int(tls[0][5], 16)
    check(memsz <= TLS_MAX, "%s: TLS segment of %d bytes (at most %d)" % (lib, memsz, TLS_MAX))
    return memsz


PY_PROG = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for i in range(3):
    assert lib.xsprof_region_begin(b"py_outer") == 0
    assert lib.xsprof_region_begin(b"py_inner") == 0
    assert lib.xsprof_region_end() == 0
    assert lib.xsprof_region_end() == 0
assert lib.xsprof_finalize() == 0
print("ctypes done")
"""


def regions(run_dir):
    with h5py.File(os.path.join(run_dir, "rank-00000.h5"), "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else str(s) for s in f["/definitions/strings"][()]]
        return sorted((strings[r["name"]], int(r["depth"])) for r in f["/events/regions"][()])


def run(cmd, run_dir, done):
    env = dict(os.environ, XSPROF_OUTPUT=run_dir)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    check(p.returncode == 0, "%s failed (%d): %s%s" % (cmd, p.returncode, p.stdout, p.stderr))
    check(done in p.stdout, "%s: output %r" % (cmd, p.stdout))
    check("static TLS" not in p.stderr, "%s: %s" % (cmd, p.stderr))


def main():
    app, work, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for lib in libs:
        tag = re.sub(r"\W", "_", os.path.basename(lib))
        size = check_elf(lib)
        d = os.path.join(work, tag + "-c")
        run([app, lib], d, "dlopen_app done")
        check(regions(d) == [("dl_inner", 1)] * 3 + [("dl_outer", 0)] * 3, "C: regions %s" % regions(d))
        d = os.path.join(work, tag + "-py")
        run(["/usr/bin/python3", "-c", PY_PROG, lib], d, "ctypes done")
        check(regions(d) == [("py_inner", 1)] * 3 + [("py_outer", 0)] * 3, "ctypes: regions %s" % regions(d))
        print("%s: no STATIC_TLS, %d bytes of TLS; dlopen from C and ctypes recorded 6 regions each"
              % (os.path.basename(lib), size))


if __name__ == "__main__":
    main()
