"""Bad inputs to xsmerge: each gives exit code 1 and one stderr line that
names the offending path and the problem, never a crash, and leaves no
output that could pass for a complete merge."""
import os
import shutil
import sys

import h5py
import numpy as np
from mergetest import check, finish, make_run, tmpdir, xsmerge

maker = sys.argv[1]
base = tmpdir()
golden = make_run(maker, "golden", os.path.join(base, "golden"))
foreign = make_run(maker, "foreign", os.path.join(base, "foreign"))


def variant(name, edit):
    d = os.path.join(base, name)
    shutil.copytree(golden, d)
    edit(d)
    return d


def truncate(d):
    p = os.path.join(d, "rank-00001.h5")
    size = os.path.getsize(p)
    with open(p, "r+b") as f:
        f.truncate(size // 2)


def random_bytes(d):
    with open(os.path.join(d, "rank-00001.h5"), "wb") as f:
        f.write(np.random.default_rng(7).bytes(20000))


def duplicate(d):
    shutil.copy(os.path.join(d, "rank-00000.h5"), os.path.join(d, "rank-00001.h5"))


def wrong_version(d):
    with h5py.File(os.path.join(d, "rank-00001.h5"), "r+") as h:
        h.attrs.modify("format_version", np.int32(99))


def wrong_type(d):
    with h5py.File(os.path.join(d, "rank-00001.h5"), "r+") as h:
        del h["events/mpi"]
        h.create_dataset("events/mpi", data=np.arange(10, dtype=np.int32))


def late_start(d):
    with h5py.File(os.path.join(d, "rank-00001.h5"), "r+") as h:
        h.attrs.modify("start_realtime_ns", np.int64(h.attrs["start_realtime_ns"] + 3600 * 10**9))


def bad_checksum(d):
    """one byte changed inside a compressed data chunk of /events/regions:
    the chunk fails its Fletcher32 checksum"""
    p = os.path.join(d, "rank-00001.h5")
    with h5py.File(p, "r") as h:
        ds = h["events/regions"]
        check(ds.fletcher32, "rank files checksum their chunks")
        info = ds.id.get_chunk_info(0)
    with open(p, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))


def bad_journal(d):
    os.remove(os.path.join(d, "rank-00001.h5"))
    with open(os.path.join(d, "rank-00001.xsj"), "wb") as f:
        f.write(b"XSPJRNL\x01" + b"\xff" * 100)


notafile = os.path.join(base, "plain.txt")
with open(notafile, "w") as f:
    f.write("hello\n")
empty = os.path.join(base, "empty")
os.mkdir(empty)

# (name, run, the path the error names, what it says, whether it offers
# --partial: every problem --partial can skip)
cases = [
    ("missing directory", os.path.join(base, "nope"), os.path.join(base, "nope"), "No such file", False),
    ("empty directory", empty, empty, "no rank files", False),
    ("non-HDF5 file", notafile, notafile, "", False),
    ("truncated file", variant("trunc", truncate), "rank-00001.h5", "", True),
    ("random bytes", variant("random", random_bytes), "rank-00001.h5", "HDF5", True),
    ("bad chunk checksum", variant("checksum", bad_checksum), "rank-00001.h5", "/events/regions", True),
    ("file from another run", foreign, "rank-00002.h5", "another run", True),
    ("same job id, started an hour later", variant("late", late_start), "rank-00001.h5", "another run", True),
    ("two files claim one rank", variant("dup", duplicate), "rank-00001.h5", "claims rank 0", True),
    ("wrong format version", variant("version", wrong_version), "rank-00001.h5", "version", True),
    ("dataset of wrong type", variant("dtype", wrong_type), "rank-00001.h5", "mpi", True),
    ("damaged journal", variant("journal", bad_journal), "rank-00001.xsj", "", True),
]
for name, run, expect_path, expect_text, skippable in cases:
    out = os.path.join(base, "out-" + name.replace(" ", "_"))
    rc, so, se = xsmerge(run, "-o", out, "-q")
    lines = se.strip().splitlines()
    check(rc == 1, "%s: exit 1 (got %d)" % (name, rc))
    check(len(lines) == 1, "%s: one error line (got %r)" % (name, se))
    check(expect_path in se, "%s: error names %s: %r" % (name, expect_path, se))
    check(expect_text.lower() in se.lower(), "%s: error says %r: %r" % (name, expect_text, se))
    check(("--partial" in se) == skippable, "%s: %s --partial: %r" % (name, "offers" if skippable else "no", se))
    if name == "bad chunk checksum":
        check("checksum" in se.lower(), "%s: error names the checksum failure: %r" % (name, se))
    products = os.listdir(out) if os.path.isdir(out) else []
    check(products == [], "%s: no output left (%s)" % (name, products))

# damaged bytes anywhere in a rank file (raw data is not checksummed, so
# random values can reach the merge): exit 0 or 1, never a crash, one line
import random
rng = random.Random(2026)
for it in range(25):
    d = os.path.join(base, "flip%d" % it)
    shutil.copytree(golden, d)
    f = os.path.join(d, "rank-%05d.h5" % rng.randrange(3))
    data = bytearray(open(f, "rb").read())
    for _ in range(rng.randint(1, 40)):
        i = rng.randrange(len(data) // 3 if rng.random() < 0.8 else 0, len(data))
        data[i] = rng.randrange(256)
    open(f, "wb").write(data)
    rc, so, se = xsmerge(d, "-o", d + "-out", "-q", "--outputs", "pftrace,json,h5")
    check(rc in (0, 1), "flipped bytes %d: exit 0 or 1 (got %d: %s)" % (it, rc, se[-500:]))
    check(rc == 0 or len(se.strip().splitlines()) == 1, "flipped bytes %d: one error line (%r)" % (it, se))

# --partial merges what is valid and says what it skipped
rc, so, se = xsmerge(os.path.join(base, "random"), "-o", os.path.join(base, "partial"), "--partial")
check(rc == 0, "--partial with a damaged rank exits 0 (%s)" % se)
check("rank-00001.h5" in se and "skipped" in se, "--partial names the skipped file")
check("note: xsmerge:" not in se, "--partial's note says 'xsmerge:' once: %r" % se)
check(os.path.exists(os.path.join(base, "partial", "trace.pftrace")), "--partial writes the trace")
rc, so, se = xsmerge(foreign, "-o", os.path.join(base, "partial2"), "--partial", "-q")
check(rc == 0, "--partial drops the foreign file")

# an output that cannot be written (the file size limit, as a full disk
# would): exit 1, one line naming the product and the system's reason, and
# nothing left behind (no product, no staging directory). Each product, in
# memory and streaming; the trace.json writer writes from a thread.
import resource
import signal
import subprocess
from mergetest import XSMERGE
ring = make_run(maker, "big", os.path.join(base, "ring"), 2, 30000)


def own_lines(stderr):
    """xsmerge's stderr, without a coverage build's own complaints: its
    runtime writes its counters (.gcda) at exit, past a small file size
    limit too."""
    return "".join(x for x in stderr.splitlines(True) if not x.startswith("libgcov profiling error"))


def small_files(kib):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib << 10, kib << 10))
    return limit


# merged.h5's tables are compressed (160 KB here): 64 KiB stops it while
# its chunks are stored (encoding threads, H5Dwrite_chunk). Uncompressed
# (XSPROF_MERGE_H5_DEFLATE=0, 6 MB) it is written through HDF5's own
# writes: 1 MiB stops that path. Streaming merged.h5 spills its messages
# first (1.8 MB here): 3 MiB lets the spill through and stops the
# uncompressed merged.h5; at 1 MiB the spill itself fails, said as a
# temporary file of the merge.
raw = {"XSPROF_MERGE_H5_DEFLATE": "0"}
# (trace.json's first part, which becomes trace.json when no other follows,
# was said as trace-part00.json: a file the user never gets)
for outs, extra, name, kib, env in (("pftrace", (), "trace.pftrace", 1024, {}), ("json", (), "trace.json", 1024, {}),
                                    ("h5", (), "merged.h5", 64, {}), ("h5", (), "merged.h5", 1024, raw),
                                    ("pftrace", ("--stream",), "trace.pftrace", 1024, {}),
                                    ("json", ("--stream",), "trace.json", 1024, {}),
                                    ("h5", ("--stream",), "merged.h5", 3072, raw),
                                    ("h5", ("--stream",), "a temporary file of the merge", 1024, {})):
    out = os.path.join(base, "full-%s%s-%d%s" % (outs, "-stream" if extra else "", kib, "-raw" if env else ""))
    p = subprocess.run([XSMERGE, ring, "-o", out, "-q", "--outputs", outs] + list(extra), capture_output=True,
                       text=True, preexec_fn=small_files(kib), env=dict(os.environ, **env))
    what = "--outputs %s %s over a file size limit of %d KiB%s" % (outs, " ".join(extra), kib,
                                                                  " (uncompressed)" if env else "")
    lines = own_lines(p.stderr).strip().splitlines()
    named = os.path.join(out, name) if name[0] != "a" else name
    check(p.returncode == 1, "%s: exit 1 (got %d: %s)" % (what, p.returncode, p.stderr[-300:]))
    check(len(lines) == 1 and named in p.stderr and "too large" in p.stderr.lower(),
          "%s: one line naming %s and the reason: %r" % (what, named, p.stderr))
    left = os.listdir(out) if os.path.isdir(out) else []
    check(left == [], "%s: nothing left behind: %s" % (what, left))

# xsmerge's size variables: "1e30" was read as 1 (trace.json of this 5 MB run
# in 1 MB parts), "0.5" as 0 and 2^64 + x wrapped, silently; now a number out
# of range or not a number gets one warning naming the variable, and its
# default (XSPROF_MERGE_UI_MB is read for a note, which -q leaves out)
for name, value in (("XSPROF_MERGE_JSON_PART_MB", "1e30"), ("XSPROF_MERGE_JSON_PART_MB", "0.5"),
                    ("XSPROF_MERGE_JSON_PART_MB", "99999999999999999999"), ("XSPROF_MERGE_JSON_PART_MB", "64MB"),
                    ("XSPROF_MERGE_UI_MB", "lots"), ("XSPROF_MERGE_MEMORY_LIMIT", "-1")):
    out = os.path.join(base, "env-%s-%s" % (name, value))
    quiet = ["-q"] if name != "XSPROF_MERGE_UI_MB" else []
    p = subprocess.run([XSMERGE, ring, "-o", out, "--outputs", "json,pftrace"] + quiet, capture_output=True, text=True,
                       env=dict(os.environ, **{name: value}))
    warned = [x for x in own_lines(p.stderr).splitlines() if x.startswith("xsmerge: warning: ")]
    check(p.returncode == 0 and len(warned) == 1 and warned[0].startswith("xsmerge: warning: %s=%s is not a number "
                                                                            "from" % (name, value)),
          "%s=%s: exit 0 and one warning (%d %r)" % (name, value, p.returncode, p.stderr))
    check(sorted(os.listdir(out)) == ["trace.json", "trace.pftrace"] if os.path.isdir(out) else False,
          "%s=%s: the default's products %s" % (name, value, os.listdir(out) if os.path.isdir(out) else None))

# the reports over a file size limit (report.json, 7 KB, is written
# first): one line naming the product, not the hidden temporary file it was
# written to ('OUT/.report.json.PID.tmp: write failed', without 'xsmerge:')
for extra in ((), ("--stream",)):
    out = os.path.join(base, "full-report%s" % "".join(extra))
    p = subprocess.run([XSMERGE, golden, "-o", out, "-q", "--outputs", "report"] + list(extra), capture_output=True,
                       text=True, preexec_fn=small_files(4))
    err = own_lines(p.stderr)
    check(p.returncode == 1 and err.count("\n") == 1 and
          err.startswith("xsmerge: %s: write failed: " % os.path.join(out, "report.json")) and
          "too large" in err.lower(), "the reports %s over a file size limit: one line naming report.json (%d %r)"
          % (extra, p.returncode, p.stderr))
    check(not os.path.isdir(out) or os.listdir(out) == [], "the reports over a file size limit: nothing left behind")

# a disk that fills up (not a per-file limit) while a streamed merged.h5
# places its spilled messages (the spill fit, the placed copy does not;
# until session 21 the placing wrote past its buffer there and aborted),
# and at every other point around it: one line, exit 1, nothing left
disk = os.path.join(base, "disk")
os.makedirs(disk)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk], capture_output=True).returncode != 0:
    print("note: cannot mount a tmpfs here; the streamed merged.h5 on a full disk is not tested")
else:
    try:
        run4 = make_run(maker, "big", os.path.join(base, "ring4"), 4, 2000)
        for free in range(300, 650, 50):
            out = os.path.join(disk, "o")
            with open(os.path.join(disk, "fill"), "wb") as f:
                f.write(b"\0" * ((4096 - free) << 10))
            p = subprocess.run([XSMERGE, run4, "-o", out, "-q", "--stream", "--outputs", "h5"], capture_output=True,
                               text=True)
            lines = p.stderr.strip().splitlines()
            left = os.listdir(out) if os.path.isdir(out) else []
            check(p.returncode in (0, 1) and (p.returncode == 0 or (len(lines) == 1 and "No space left" in lines[0])) and
                  (left == [] if p.returncode else left == ["merged.h5"]),
                  "--stream --outputs h5 with %d KiB free: exit 0, or 1 with one line and nothing left (%d %r %s)"
                  % (free, p.returncode, p.stderr[-500:], left))
            shutil.rmtree(out, ignore_errors=True)
            os.unlink(os.path.join(disk, "fill"))
    finally:
        subprocess.run(["umount", disk])

# the analysis tables are added to the finished merged.h5: a disk that
# fills up then is said as such, and nothing is left either
probe = os.path.join(base, "probe-h5")
p = subprocess.run([XSMERGE, ring, "-o", probe, "-q", "--outputs", "h5"], capture_output=True, text=True)
kib = os.path.getsize(os.path.join(probe, "merged.h5")) // 1024 + 2
out = os.path.join(base, "full-analysis")
p = subprocess.run([XSMERGE, ring, "-o", out, "-q", "--outputs", "h5,report"], capture_output=True, text=True,
                   preexec_fn=small_files(kib))
check(p.returncode == 1 and len(own_lines(p.stderr).strip().splitlines()) == 1 and
      os.path.join(out, "merged.h5") + ": cannot write the analysis tables" in p.stderr and "too large" in p.stderr.lower(),
      "analysis tables over a file size limit of %d KiB: one line, exit 1 (%d %r)" % (kib, p.returncode, p.stderr))
check(not os.path.isdir(out) or os.listdir(out) == [], "analysis tables: nothing left behind")

# an interrupted merge (Ctrl-C, a job's time limit, a closed terminal)
# leaves no staging directory with its partial products; one killed
# outright (SIGKILL) leaves its own, which the next merge into that
# directory removes, with a note
import glob
import time
longer = make_run(maker, "big", os.path.join(base, "longer"), 8, 200000)


def interrupt(out, sig, extra=()):
    p = subprocess.Popen([XSMERGE, longer, "-o", out, "-q"] + list(extra), stderr=subprocess.PIPE, text=True)
    while not glob.glob(os.path.join(out, ".xsmerge-tmp-*")) and p.poll() is None:
        time.sleep(0.002)
    time.sleep(0.05)
    p.send_signal(sig)
    err = p.communicate()[1]
    return p.returncode, err, sorted(os.listdir(out)) if os.path.isdir(out) else []


for sig, extra in ((signal.SIGINT, ()), (signal.SIGTERM, ()), (signal.SIGHUP, ()),
                   (signal.SIGTERM, ("--stream", "--outputs", "pftrace,json,h5"))):
    out = os.path.join(base, "interrupted-%d%s" % (sig, "-stream" if extra else ""))
    rc, err, left = interrupt(out, sig, extra)
    if rc == 0:
        print("note: the merge ended before %s reached it; not checked" % sig.name)
        continue
    check(rc == -sig and left == [], "%s %s: dies of it (%d) and leaves nothing: %s %r" % (sig.name, extra, rc, left, err))
out = os.path.join(base, "killed")
rc, err, left = interrupt(out, signal.SIGKILL)
if rc == -signal.SIGKILL:
    check(len(left) == 1 and left[0].startswith(".xsmerge-tmp-"), "SIGKILL leaves its staging directory: %s" % left)
    rc, so, se = xsmerge(golden, "-o", out, "--outputs", "pftrace")
    check(rc == 0 and "removed %s, left by an interrupted merge" % os.path.join(out, left[0]) in se and
          os.listdir(out) == ["trace.pftrace"], "the next merge sweeps it, with a note: %r %s" % (se, os.listdir(out)))

# an OUT_DIR holding an earlier merge's products: afterwards it holds this
# merge's alone (beside the user's own files). Before, only stale trace
# JSON went: another run's merged.h5 and reports stayed beside the new
# trace.pftrace, and a callgrind.out or flame-diff.svg beside a new report
journal = make_run(maker, "journal", os.path.join(base, "journal"))
reused = os.path.join(base, "reused")
rc, so, se = xsmerge(golden, "-o", reused, "-q", "--format", "callgrind", "--diff", golden)
full = sorted(os.listdir(reused))
check(rc == 0 and "callgrind.out" in full and "flame-diff.svg" in full, "full merge with extras: %s %r" % (full, se))
with open(os.path.join(reused, "notes.txt"), "w") as f:
    f.write("the user's\n")
for args, want in ((["--outputs", "pftrace"], ["notes.txt", "trace.pftrace"]),
                   ([], sorted(set(full) - {"callgrind.out", "flame-diff.svg"}) + ["notes.txt"]),
                   (["--outputs", "h5,json", "--stream"], ["merged.h5", "notes.txt", "trace.json"])):
    rc, so, se = xsmerge(journal, "-o", reused, "-q", *args)
    got = sorted(os.listdir(reused))
    check(rc == 0 and got == sorted(want), "merge %s into a used OUT_DIR: only its products stay: %s (%r)" % (
        args, got, se))
# ... also under mpirun
if shutil.which("mpirun"):
    rc, so, se = xsmerge(golden, "-o", reused, "-q")
    p = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", XSMERGE, journal, "-o", reused, "-q", "--outputs",
                        "pftrace,h5"], capture_output=True, text=True,
                       env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    got = sorted(os.listdir(reused))
    check(p.returncode == 0 and got == ["merged.h5", "notes.txt", "trace.pftrace"],
          "mpirun -np 2 into a used OUT_DIR: %s (%r)" % (got, p.stderr[-500:]))

# an OUT_DIR that cannot be written (a read-only file system; as root a
# mode of 555 would not stop the merge): one line naming OUT_DIR, not the
# hidden staging directory the user never asked for
rodir = os.path.join(base, "readonly")
os.makedirs(rodir)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", rodir], capture_output=True).returncode:
    print("note: cannot mount a tmpfs here; a read-only OUT_DIR is not tested")
else:
    try:
        for extra in ((), ("--stream",)):
            rc, so, se = xsmerge(golden, "-o", rodir, "-q", *extra)
            check(rc == 1 and se.count("\n") == 1 and se.startswith("xsmerge: %s: " % rodir) and
                  ".xsmerge-tmp" not in se and "Read-only file system" in se,
                  "read-only OUT_DIR %s: one line naming it and why (%d %r)" % (extra, rc, se))
    finally:
        subprocess.run(["umount", rodir])

badbase = os.path.join(base, "badbase")
os.makedirs(badbase)
with open(os.path.join(badbase, "report.json"), "w") as f:
    f.write("{")

# bad options
# (--to 0 would read as no limit; --baseline, --diff and --format add to
# the report and did nothing, exit 0, when it was not written)
for args, said in ((["--from", "soon"], "invalid time"), (["--ranks", "a-b"], "expected a list"),
                   (["--ranks", ""], "expected a list"), (["--bogus"], "unknown option"), ([], "missing"),
                   (["--to", "0"], "--to must be after"), (["--from", "2ms", "--to", "0ns"], "--to must be after"),
                   # seconds, not us: 5 s per message stretched the run to
                   # days; 1e8 s pushed the times past 2^63 ns, which
                   # wrapped and saturated into a trace that looked fine
                   (["--min-latency", "5"], "--min-latency must be at most 1s"),
                   (["--min-latency", "1e8"], "--min-latency must be at most 1s"),
                   (["--baseline", golden, "--stream"], "--baseline needs the report"),
                   (["--baseline", golden, "--outputs", "pftrace,h5"], "--baseline needs the report"),
                   (["--diff", golden, "--outputs", "json"], "--diff needs the report"),
                   # past 255 characters the list was cut and the rest ignored
                   (["--outputs", "pftrace," * 40 + "bogus"], "unknown product in --outputs"),
                   # a baseline whose report.json is damaged: said without
                   # 'xsmerge:' (and that it is the baseline's) before
                   (["--baseline", badbase], "baseline %s: not a valid report" % os.path.join(badbase, "report.json")),
                   (["--format", "callgrind", "--stream", "--outputs", "pftrace"], "--format callgrind needs")):
    rc, so, se = xsmerge(golden, "-o", os.path.join(base, "o"), *args) if args else xsmerge(golden)
    check(rc == 1 and se.startswith("xsmerge: ") and said in se.splitlines()[0] and not os.path.exists(os.path.join(base, "o")),
          "bad usage %s: exit 1, says %r, writes nothing (%d %r)" % (args, said, rc, se))
# a window that starts after the run's last event (golden ends at 19 us; 1ms
# meant 1 us?) selects nothing, as a --ranks naming no rank file does: it
# wrote an empty trace, exit 0, without a word. The same line in memory,
# streamed and under mpirun, and nothing written
said = "xsmerge: %s: --from 1 ms is after the run's last event (19 us from its first); the window holds nothing" % golden
mpienv = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
for pre, extra in (([], ()), ([], ("--stream",)), ([], ("--stream", "--outputs", "pftrace,json,h5,report")),
                   (["mpirun", "-np", "2", "--oversubscribe"], ()), (["mpirun", "-np", "2", "--oversubscribe"], ("--stream",))):
    if pre and not shutil.which("mpirun"):
        continue
    out = os.path.join(base, "late-window")
    p = subprocess.run(pre + [XSMERGE, golden, "-o", out, "--from", "1ms", *extra], capture_output=True, text=True,
                       env=mpienv)
    mine = [l for l in p.stderr.splitlines() if l.startswith("xsmerge")]
    check(p.returncode == 1 and mine == [said] and (pre or p.stderr.count("\n") == 1) and not os.path.exists(out),
          "%s --from past the end %s: exit 1, one line (%d %r)" % (" ".join(pre), extra, p.returncode, p.stderr[-600:]))
rc, so, se = xsmerge(golden, "-o", os.path.join(base, "end-window"), "-q", "--from", "19us", "--outputs", "pftrace")
check(rc == 0, "--from at the last event still merges it (%r)" % se)

rc, so, se = xsmerge("--help")
check(rc == 0 and "--partial" in so and "XSPROF_" in so and "exit codes" in so, "--help documents options")
finish("merge_bad_inputs")
