#!/usr/bin/python3
"""tests/mpi/check_callsites.py — MPI call sites end to end: an unmodified
program (-O2 -g, no frame pointers) under mpiexec with libxsprof-mpi.so
preloaded; its rank files hold one call site per calling line, which
merge/symbols (through xsm_callsites) resolves to the marked file:line.

usage: check_callsites.py --lang c|fortran --source SRC [--plugin LIB --plugin-source SRC]
                          XSM_CALLSITES PROGRAM
Environment (set by xsprof_add_test): MPIEXEC, XSPROF_MPI_LIB, XSPROF_BUILD."""
import argparse
import os
import re
import shutil
import subprocess
import sys

import h5py

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("check_callsites: FAILED:", what)


def marks(path):
    """marker -> line number of the comment '/* NAME */' or '! NAME'"""
    out = {}
    for no, line in enumerate(open(path), 1):
        m = re.search(r"(?:/\*|!) ([A-Z_]+)(?: \*/)?\s*$", line)
        if m:
            out[m.group(1)] = no
    return out


def run(name, prog_args, env_extra):
    mpiexec = os.environ.get("MPIEXEC") or "mpiexec"
    run_dir = os.path.join(os.environ.get("XSPROF_BUILD", "."), "tests", "mpi", "runs", name)
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [mpiexec, "-np", "2", "--oversubscribe", "-x", "LD_PRELOAD=" + os.environ["XSPROF_MPI_LIB"],
           "-x", "XSPROF_OUTPUT=" + run_dir]
    for k, v in env_extra.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    p = subprocess.run(cmd + prog_args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("check_callsites: %s failed (%d): %s" % (" ".join(prog_args), p.returncode, p.stderr))
    return run_dir


def sites(xsm, run_dir):
    """[(rank, op, calls, [(function, file, line) per stack frame])] and the notes. Call sites
    are addresses: a line may hold several (a loop the compiler unrolled calls from each
    copy); as in mpiP's table, those of one line are one row here."""
    files = sorted(os.path.join(run_dir, f) for f in os.listdir(run_dir) if f.endswith(".h5"))
    p = subprocess.run([xsm] + files, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit("check_callsites: xsm_callsites failed: " + p.stderr)
    rows, notes = [], []
    for line in p.stdout.splitlines():
        if line.startswith("note: "):
            notes.append(line)
            continue
        rank, op, calls, stack = line.split("\t")
        frames = []
        for fr in stack.split(" <- "):
            inner = fr.split(" < ")[0]
            m = re.fullmatch(r"(.*)@(.*):(\d+)", inner)
            frames.append((m.group(1), os.path.basename(m.group(2)), int(m.group(3))) if m else (inner, None, 0))
        rows.append((int(rank), op, int(calls), frames))
    print(p.stdout, end="")
    merged = {}
    for rank, op, calls, frames in rows:
        key = (rank, op, tuple(frames))
        merged[key] = merged.get(key, 0) + calls
    return [(k[0], k[1], c, list(k[2])) for k, c in merged.items()], notes


def find(rows, rank, op, src, line):
    return [r for r in rows if r[0] == rank and r[1] == op and r[3][0][1] == src and r[3][0][2] == line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lang", choices=["c", "fortran"], required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--plugin")
    ap.add_argument("--plugin-source")
    ap.add_argument("xsm")
    ap.add_argument("program")
    a = ap.parse_args()
    mk = marks(a.source)
    src = os.path.basename(a.source)
    args = [a.program] + ([a.plugin] if a.plugin else [])
    run_dir = run("callsites_" + a.lang, args, {})
    rows, notes = sites(a.xsm, run_dir)
    sends = [r for r in rows if r[0] == 0 and r[1] == "MPI_Send"]
    a_rows, b_rows = find(rows, 0, "MPI_Send", src, mk["SEND_A"]), find(rows, 0, "MPI_Send", src, mk["SEND_B"])
    check(len(a_rows) == 1 and len(b_rows) == 1, "one call site per MPI_Send line (%s:%d, %s:%d): %s"
          % (src, mk["SEND_A"], src, mk["SEND_B"], sends))
    want_a = 3 if a.lang == "c" else 2
    check(a_rows and a_rows[0][2] == want_a, "the loop's %d sends are one call site" % want_a)
    check(b_rows and b_rows[0][2] == 1, "SEND_B is called once")
    init = [r for r in rows if r[0] == 0 and r[1].startswith("MPI_Init")]
    check(init and init[0][3][0][1] == src, "MPI_Init's call site is in %s: %s" % (src, init))
    recv = [r for r in rows if r[0] == 1 and r[1] == "MPI_Recv"]
    check(len(recv) == 1 and recv[0][3][0][1] == src, "rank 1's receives: one call site in %s: %s" % (src, recv))
    if a.lang == "fortran":
        check(a_rows and a_rows[0][3][0][0] == "callsites", "the Fortran caller is the program, not the binding")
    if a.lang == "c":
        check(a_rows and a_rows[0][3][0][0] == "main", "SEND_A is in main")
        helper = find(rows, 0, "MPI_Send", src, mk["SEND_HELPER"])
        check(len(helper) == 1 and helper[0][3][0][0] == "send_from_helper", "the helper's send: %s" % helper)
        psrc = os.path.basename(a.plugin_source)
        plug = find(rows, 0, "MPI_Send", psrc, marks(a.plugin_source)["SEND_PLUGIN"])
        check(len(plug) == 1 and plug[0][3][0][0] == "plugin_send",
              "the send from the library dlopened and closed during the run resolves: %s" % sends)
        check(len(sends) == 4, "four MPI_Send call sites on rank 0: %d" % len(sends))
        with h5py.File(os.path.join(run_dir, "rank-00000.h5"), "r") as f:
            names = [s.decode() for s in f["/definitions/strings"][:]]
            mods = f["/definitions/modules"][:]
            plugin = [m for m in mods if names[m["path"]].endswith(os.path.basename(a.plugin))]
            check(len(plugin) == 1 and plugin[0]["t_unload"] < 2**63 - 1 and plugin[0]["t_load"] < plugin[0]["t_unload"],
                  "the plugin is listed, loaded then unloaded: %s" % plugin)
            exe = [m for m in mods if names[m["path"]] == os.path.realpath(a.program)]
            check(len(exe) == 1 and len(names[exe[0]["build_id"]]) == 40, "the program is listed with its build-id")
        # depth 2: the helper's send continues in main, at the helper's call
        run_dir = run("callsites_c_depth2", args, {"XSPROF_CALLSITE_DEPTH": "2"})
        rows, notes = sites(a.xsm, run_dir)
        helper = find(rows, 0, "MPI_Send", src, mk["SEND_HELPER"])
        check(len(helper) == 1 and len(helper[0][3]) == 2 and helper[0][3][1][:3] == ("main", src, mk["CALL_HELPER"]),
              "depth 2: send_from_helper <- main at %s:%d: %s" % (src, mk["CALL_HELPER"], helper))
    if FAILS:
        sys.exit("check_callsites: %d failures" % len(FAILS))
    print("check_callsites: %s: all checks passed" % a.lang)


if __name__ == "__main__":
    main()
