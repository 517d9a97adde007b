"""Streaming merge: `xsmerge RUN -o OUT --stream` reads the rank files chunk
by chunk and must write exactly the trace.pftrace of the in-memory merge
`xsmerge RUN -o OUT --outputs pftrace` with the same options, on every kind
of run merge_make_runs makes, with the default reorder window and with
tiny ones (XSPROF_MERGE_STREAM_WINDOW=1 and 3: rows that arrive too late
are kept aside as outliers). Also checked: same exit code, same stderr
except the one "merging in memory" note that says streaming handed over
to the in-memory merge; that note never appears for runs that stream
(ring, golden, GPU, empty) and always where streaming cannot give the same
bytes (MPI calls further out of order than the window, a cycle in the
logical clock's constraints); runs that need the
logical clock (clock violations after interpolation, also of a nonblocking
collective and of thousands of messages and collectives, --min-latency)
stream with one clock pass; --from/--to streams too
(rows and messages cut as in memory, the same summary line); MPI calls out
of order by more than the MPI pass's first window (4096 / 64 rows) make it
start again with the whole window; under mpirun it streams too; --stream
with another product is a usage
error (exit 1, like every usage error); bad inputs (truncated file, random bytes, a file
of another run, a damaged chunk of the MPI table) give the same one error
line, exit 1 and no output; XSPROF_MERGE_STREAM=1 acts like --stream when
only trace.pftrace, trace.json and/or merged.h5 are asked for; trace.json and merged.h5 stream too. Exits 77 (skipped) when `xsmerge --help`
does not mention --stream."""
import filecmp
import os
import resource
import shutil
import signal
import subprocess
import sys

import h5py
import numpy as np
from mergetest import XSMERGE, check, finish, make_run, pairs, tmpdir, xsmerge

# the reference runs must merge in memory, whatever the caller's environment
for v in ("XSPROF_MERGE_STREAM", "XSPROF_MERGE_STREAM_WINDOW", "XSPROF_MERGE_TIMES"):
    os.environ.pop(v, None)
NOTE = "merging in memory"



def same_table(x, y):
    """Two tables alike byte for byte (rows of strings, which numpy holds as
    objects, compared by value: their bytes would be pointers)."""
    return x.tolist() == y.tolist() if x.dtype.hasobject else x.tobytes() == y.tobytes()

def is_note(line):
    """The note that streaming gave up: said before the in-memory merge, or
    (a rank file it could not read chunk by chunk) after that merge got through."""
    return NOTE in line or line.endswith("; merged in memory")

WINDOWS = (None, "1", "3")  # None: the default window (4096 rows)

rc, so, se = xsmerge("--help")
if "--stream" not in so + se:
    print("merge_stream: SKIP: %s --help does not mention --stream (streaming merge not built)" % XSMERGE)
    sys.exit(77)

maker = sys.argv[1]
base = tmpdir()
R = {}
for kind in ("golden", "journal", "foreign", "skew", "latelr", "unrecv", "gpu", "gpumpi", "empty", "deep", "icoll",
             "icoll_late", "zerocoll", "mpithreads", "mpithreads_far", "chain", "halo", "halocoll", "outside", "waitall_tie", "pollwo",
             "overlap", "pollwait", "pollsend", "isendlr", "icollpoll", "window", "farcause", "polllr", "selfpoll", "farpoll"):
    R[kind] = make_run(maker, kind, os.path.join(base, kind))
R["ring"] = make_run(maker, "big", os.path.join(base, "ring"), 4, 3000)
R["ring1"] = make_run(maker, "big", os.path.join(base, "ring1"), 1, 3000)
# 4 ranks whose model (rows plus 100 bytes each, ~1.6 MB) is below what
# streaming 4 rank files takes (2 MiB): "ring" was, until its MPI rows grew
# by a call-site id (format 2: 12 000 rows over 2 MiB)
R["tinyring"] = make_run(maker, "big", os.path.join(base, "tinyring"), 4, 2000)
R["bigring"] = make_run(maker, "big", os.path.join(base, "bigring"), 6, 60000)
# 70 000 Late Senders behind a send never received: more checks wait than
# Wrong Order keeps (65 536), half of them resolve
R["unrecv_many"] = make_run(maker, "unrecv", os.path.join(base, "unrecv_many"), 70000)
# clocks off by errors the samples miss: tens of thousands of violations and
# collectives for the logical clock
R["bigskew"] = make_run(maker, "bigskew", os.path.join(base, "bigskew"), 6, 30000)


def derived(name, src, edit):
    d = os.path.join(base, name)
    shutil.copytree(src, d)
    edit(d)
    R[name] = d
    return d


def truncate(d):
    p = os.path.join(d, "rank-00001.h5")
    with open(p, "r+b") as f:
        f.truncate(os.path.getsize(p) // 2)


def random_bytes(d):
    with open(os.path.join(d, "rank-00001.h5"), "wb") as f:
        f.write(np.random.default_rng(7).bytes(20000))


def missing(d):
    os.remove(os.path.join(d, "rank-00001.h5"))


def smashed(d):  # as check_readers.py: bytes overwritten past the superblock
    with open(os.path.join(d, "rank-00002.h5"), "r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * 8192)


def damaged_mpi_chunk(d):
    """Flip bytes inside one stored chunk of rank 1's MPI table (not the
    first one, so a streaming reader has already written rows when it meets
    it): its fletcher32 no longer matches, which the in-memory reader
    rejects too."""
    p = os.path.join(d, "rank-00001.h5")
    with h5py.File(p, "r") as h:
        ds = h["events/mpi"]
        n = ds.id.get_num_chunks()
        assert n >= 3, "the damaged-chunk run needs several MPI chunks (%d)" % n
        info = ds.id.get_chunk_info(n * 2 // 3)
    with open(p, "r+b") as f:
        f.seek(info.byte_offset + info.size // 2)
        b = bytearray(f.read(16))
        f.seek(info.byte_offset + info.size // 2)
        f.write(bytes(x ^ 0x5A for x in b))


derived("trunc", R["golden"], truncate)
derived("random", R["golden"], random_bytes)
derived("missing", R["golden"], missing)
derived("smashed", R["ring"], smashed)
R["chunkrun"] = make_run(maker, "big", os.path.join(base, "chunkrun"), 2, 30000)
derived("chunk", R["chunkrun"], damaged_mpi_chunk)

# (run, options, expectation): "stream" = must stream with every window,
# "stream-default" = must stream with the default window, "memory" = must
# say it merges in memory, None = either, only the same result counts
CASES = [
    ("golden", (), "stream"), ("golden", ("--ranks", "0,2"), "stream"), ("golden", ("--ranks", "1"), "stream"),
    ("golden", ("--partial",), "stream"),
    # --from/--to: rows outside are cut, messages with an end outside too,
    # a flow whose receive's call is outside ends nowhere (as in memory)
    ("golden", ("--from", "2.5us", "--to", "6us"), "stream"), ("golden", ("--to", "3us"), "stream"),
    ("golden", ("--from", "0.1us"), "stream"), ("golden", ("--from", "18us"), "stream"),
    ("golden", ("--from", "2.5us", "--to", "6us", "--ranks", "0,2"), "stream"),
    ("deep", ("--from", "10us", "--to", "400us"), None), ("gpu", ("--from", "1us", "--to", "3us"), "stream-default"),
    ("icoll", ("--from", "1.2us", "--to", "3.45us"), "stream"),
    ("mpithreads", ("--from", "10us", "--to", "20us"), "stream-default"),
    # the logical clock streams too (collect pass, knots, corrected passes)
    ("golden", ("--min-latency", "100ns"), "stream"), ("golden", ("--min-latency", "5us"), "stream"),
    ("golden", ("--min-latency", "3us", "--from", "2us", "--to", "9us"), "stream"),
    ("journal", (), None), ("journal", ("--ranks", "0,1"), None),
    ("foreign", (), None), ("foreign", ("--partial",), None),
    ("skew", (), "stream"), ("skew", ("--min-latency", "2us"), "stream"), ("skew", ("--ranks", "1"), "stream"),
    ("skew", ("--from", "10us", "--to", "60us"), "stream"),
    ("bigskew", (), "stream"), ("bigskew", ("--min-latency", "700ns"), "stream"),
    ("bigskew", ("--from", "100us", "--to", "3ms"), "stream"), ("bigskew", ("--ranks", "1-4"), "stream"),
    ("bigskew", ("--min-latency", "3us", "--ranks", "0,2,4"), "stream"),
    ("gpu", (), "stream-default"), ("empty", (), "stream-default"),
    ("deep", (), None), ("deep", ("--ranks", "1"), None),
    # a nonblocking collective streams (its exit is its request's completion:
    # taken as the post's own end, rank 0 would leave before rank 1 entered
    # and the run would hand over to memory); posted after another member
    # completed it, only the logical clock can order it (and does, streamed)
    ("icoll", (), "stream"), ("icoll_late", (), "stream"), ("icoll", ("--min-latency", "1us"), "stream"),
    # a zero-length Barrier waits for its own entry in one group: a cycle
    # the streamed clock hands to memory (which forces it)
    ("zerocoll", (), "memory"),
    # MPI calls out of begin-time order by 300 rows stream after a second
    # MPI pass with the whole window (see below); by 5000, beyond it, not
    ("mpithreads", (), "stream-default"), ("mpithreads_far", (), "memory"),
    ("ring", (), "stream"), ("ring", ("--ranks", "1-2"), "stream"), ("ring", ("--ranks", "0,3"), "stream"),
    ("ring", ("--from", "1ms", "--to", "5ms"), "stream"), ("bigring", ("--from", "3ms", "--to", "4ms"), "stream"),
    ("ring1", (), "stream"), ("bigring", (), "stream"),
    ("missing", (), None), ("missing", ("--partial",), None),
    ("smashed", (), None), ("smashed", ("--partial",), None),
    ("trunc", (), None), ("random", (), None), ("chunk", (), None), ("chunk", ("--partial",), None),
    ("random", ("--partial",), None),
]
ERRORS = {"foreign": "another run", "trunc": "rank-00001.h5", "random": "rank-00001.h5",
          "missing": "rank 1 missing", "smashed": "rank-00002.h5", "chunk": "rank-00001.h5"}


def mpirun_env():
    """(mpiexec, environment for it as root) or (None, None) without MPIEXEC."""
    mpiexec = os.environ.get("MPIEXEC")
    if not mpiexec or not os.path.exists(mpiexec):
        return None, None
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    for k in ("XSPROF_MERGE_STREAM", "XSPROF_MERGE_STREAM_WINDOW", "XSPROF_MERGE_TIMES"):
        env.pop(k, None)
    return mpiexec, env


def first_diff(a, b):
    """Offset of the first differing byte of files a and b, None if equal."""
    off = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                n = min(len(x), len(y))
                i = next((k for k in range(n) if x[k] != y[k]), n)
                return off + i
            if not x:
                return None
            off += len(x)


def lines(se, out):
    return [l for l in se.replace(out, "OUT").splitlines()]


def outputs(out):
    return sorted(os.listdir(out)) if os.path.isdir(out) else []


n_out = [0]


def merge(run, *args, env=None):
    n_out[0] += 1
    out = os.path.join(base, "out%03d" % n_out[0])
    rc, so, se = xsmerge(R[run], "-o", out, *args, env=env)
    return rc, so, lines(se, out), out


def merge_at(run, nofile, *args, env=None):
    """merge() of a run directory, with RLIMIT_NOFILE (soft, hard) set first."""
    n_out[0] += 1
    out = os.path.join(base, "out%03d" % n_out[0])
    pre = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile)) if nofile else None
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([XSMERGE, run, "-o", out] + list(args), capture_output=True, text=True, preexec_fn=pre, env=e)
    return p.returncode, p.stdout, lines(p.stderr, out), out


def compare(what, ref, got, expect, check=check):
    """ref, got: (rc, stdout, stderr lines, out). expect as in CASES."""
    rc0, so0, se0, out0 = ref
    rc, so, se, out = got
    note = [l for l in se if is_note(l)]
    check(rc == rc0, "%s: exit %d, in memory %d (%s)" % (what, rc, rc0, se[-3:]))
    check(len(note) <= 1, "%s: at most one %r line: %s" % (what, NOTE, note))
    if expect == "stream":
        check(not note, "%s: must stream, but: %s" % (what, note))
    elif expect == "memory":
        check(len(note) == 1, "%s: must say %r (stderr %s)" % (what, NOTE, se))
    check([l for l in se if not is_note(l)] == se0, "%s: stderr differs:\n%s\n--- in memory:\n%s" %
          (what, "\n".join(se), "\n".join(se0)))
    check(so == so0, "%s: stdout differs" % what)
    check(outputs(out) == outputs(out0), "%s: files %s, in memory %s" % (what, outputs(out), outputs(out0)))
    if rc0 != 0:
        check(len(se0) == 1, "%s: the in-memory error is one line: %s" % (what, se0))
        check(outputs(out) == [], "%s: no output left after an error: %s" % (what, outputs(out)))
        return
    for name in outputs(out0):  # trace.pftrace, trace.json or its parts
        a, b = os.path.join(out0, name), os.path.join(out, name)
        if os.path.exists(b):
            d = first_diff(a, b)
            check(d is None, "%s: %s differs from the in-memory one at byte %s (sizes %d, %d)" %
                  (what, name, d, os.path.getsize(a), os.path.getsize(b)))


def part_cases():
    """Every kind of run and option set against the in-memory merge."""
    checked_comparator = False
    refs = {}
    for (run, opts, expect), w in pairs(CASES, WINDOWS):
        if (run, opts) not in refs:
            ref = refs[(run, opts)] = merge(run, "--outputs", "pftrace", *opts)
            if run in ERRORS:
                check(ref[0] != 0 or "--partial" in opts, "%s %s: the in-memory merge fails" % (run, opts))
                if ref[0]:
                    check(ERRORS[run] in "\n".join(ref[2]), "%s: error says %r: %s" % (run, ERRORS[run], ref[2]))
            elif ref[0] != 0:
                check(False, "%s %s: the in-memory merge fails: %s" % (run, opts, ref[2]))
        ref = refs[(run, opts)]
        env = {"XSPROF_MERGE_STREAM_WINDOW": w} if w else None
        got = merge(run, "--stream", *opts, env=env)
        what = "%s %s --stream%s" % (run, " ".join(opts), " window " + w if w else "")
        compare(what, ref, got, "stream" if expect == "stream-default" and not w else
                None if expect == "stream-default" else expect)
        # the comparison must be able to fail: one changed byte, a missing tail
        if not checked_comparator and got[0] == 0 and os.path.getsize(os.path.join(got[3], "trace.pftrace")) > 100:
            checked_comparator = True
            t = os.path.join(got[3], "trace.pftrace")
            bad = os.path.join(base, "corrupt.pftrace")
            shutil.copy(t, bad)
            size = os.path.getsize(bad)
            with open(bad, "r+b") as f:
                f.seek(size // 2)
                c = f.read(1)
                f.seek(size // 2)
                f.write(bytes([c[0] ^ 1]))
            check(first_diff(t, bad) == size // 2, "comparator finds one changed byte at %d" % (size // 2))
            with open(bad, "r+b") as f:
                f.seek(size // 2)
                f.write(c)
                f.truncate(size - 1)
            check(first_diff(t, bad) == size - 1, "comparator finds a missing last byte")
            seen = []
            compare("self-check", ref, (got[0], got[1], got[2] + ["xsmerge: note: x"], got[3]), expect,
                    check=lambda cond, msg: cond or seen.append(msg))
            ok = len(seen) == 1 and seen[0].startswith("self-check: stderr differs")
            check(ok, "a changed stderr makes the comparison fail")
    check(checked_comparator, "the comparator was checked on a streamed trace")


def part_rest():
    """trace.json, bad inputs, the memory budget, usage, environment, mpirun."""
    # with -q a bad input is exactly the in-memory merge's one error line
    for run in sorted(ERRORS):
        ref = merge(run, "--outputs", "pftrace", "-q")
        got = merge(run, "--stream", "-q")
        check(got[0] == 1 and got[2] == ref[2] and len(got[2]) == 1,
              "%s --stream -q: exit 1 and the in-memory error line (%d %s vs %s)" % (run, got[0], got[2], ref[2]))
        check(outputs(got[3]) == [], "%s --stream -q: no output left (%s)" % (run, outputs(got[3])))

    # trace.json streams too (a third pass: all ranks' events merged in time
    # order), whole and split into parts, with the default window and window 1
    # (parts of a few events make thousands of files for bigring: 8 MB ones, ~12)
    # (each run with each configuration; diagonally in instrumented builds)
    refs = {}
    for run, (outs, parts, w) in pairs(("golden", "journal", "gpu", "deep", "icoll", "ring", "bigring", "skew", "chunk"),
                                       [(o, p, w) for o, p in (("pftrace,json", False), ("json", True)) for w in ("", "1")]):
        env = {"XSPROF_MERGE_JSON_PART_BYTES": "8000000" if run == "bigring" else "60000"} if parts else None
        if (run, outs, parts) not in refs:
            refs[(run, outs, parts)] = merge(run, "--outputs", outs, env=env)
        e = dict(env or {}, **({"XSPROF_MERGE_STREAM_WINDOW": w} if w else {}))
        compare("%s --outputs %s%s --stream%s" % (run, outs, " (parts)" if env else "", " window " + w if w else ""),
                refs[(run, outs, parts)], merge(run, "--outputs", outs, "--stream", env=e or None),
                "stream" if run in ("golden", "ring", "bigring", "icoll", "skew") else None)
    # merged.h5 streams too (event tables read again in file order, messages
    # placed by id, collectives kept by pass 1): the same bytes, alone and
    # with the other products, also with --from/--to (rows cut and renumbered
    # as read/select.c does); a damaged chunk gives the in-memory error
    for run, (outs, w) in pairs(("golden", "journal", "gpu", "deep", "icoll", "icoll_late", "mpithreads", "ring", "bigring",
                                 "skew", "bigskew", "chunk"), [(o, w) for o in ("h5", "pftrace,json,h5") for w in ("", "1")]):
        if (run, outs) not in refs:
            refs[(run, outs)] = merge(run, "--outputs", outs)
        e = {"XSPROF_MERGE_STREAM_WINDOW": w} if w else None
        compare("%s --outputs %s --stream%s" % (run, outs, " window " + w if w else ""), refs[(run, outs)],
                merge(run, "--outputs", outs, "--stream", env=e),
                None if run == "chunk" or (run == "mpithreads" and w) else "stream")
    for run, opts, expect in (("ring", ("--ranks", "1-2"), "stream"), ("bigskew", ("--min-latency", "1us"), "stream"),
                              ("golden", ("--from", "2us"), "stream"), ("ring", ("--from", "1ms", "--to", "5ms"), "stream"),
                              ("golden", ("--from", "2.5us", "--to", "6us", "--ranks", "0,2"), "stream"),
                              ("deep", ("--from", "10us", "--to", "400us"), "stream"),
                              ("icoll", ("--from", "1.2us", "--to", "3.45us"), "stream"),
                              ("bigskew", ("--from", "1ms", "--to", "1.2ms", "--min-latency", "1us"), "stream")):
        ref = merge(run, "--outputs", "h5", *opts)
        compare("%s --outputs h5 --stream %s" % (run, " ".join(opts)), ref,
                merge(run, "--outputs", "h5", "--stream", *opts), expect)
    ref = merge("bigring", "--outputs", "json", env={"XSPROF_MERGE_JSON_PART_BYTES": "8000000"})
    n = len([f for f in outputs(ref[3]) if f.startswith("trace-part")])
    check(3 < n < 100, "bigring's trace.json is split into a few parts (%d)" % n)

    # a run whose model would not fit the memory budget streams by itself when
    # it can (same files), and says so when it cannot
    ML = {"XSPROF_MERGE_MEMORY_LIMIT": "1000"}
    for outs in ("pftrace", "pftrace,json"):
        ref = merge("bigring", "--outputs", outs)
        got = merge("bigring", "--outputs", outs, env=ML)
        check(any("would take about" in l and l.endswith(": streaming") for l in got[2]),
              "memory limit, --outputs %s: the note says it streams: %s" % (outs, got[2]))
        compare("memory limit --outputs %s" % outs, ref, (got[0], got[1], [l for l in got[2] if "would take" not in l],
                got[3]), "stream")
    # the estimate counts the rows of the rank files' event tables (their
    # compressed size says little: bigring's files hold ~1 byte per event):
    # the note names them, and a budget of the rows' own bytes streams,
    # where 40x the files' size (the estimate before) would have fitted it
    rows = rowbytes = fbytes = 0
    for f in sorted(os.listdir(R["bigring"])):
        if f.endswith(".h5"):
            fbytes += os.path.getsize(os.path.join(R["bigring"], f))
            with h5py.File(os.path.join(R["bigring"], f), "r") as h:
                for t in h["events"].values():
                    rows += t.shape[0]
                    rowbytes += t.shape[0] * t.dtype.itemsize
    check(fbytes * 40 < rowbytes, "bigring's files (%d bytes) x 40 below its rows' %d bytes" % (fbytes, rowbytes))
    got = merge("bigring", "--outputs", "pftrace", env={"XSPROF_MERGE_MEMORY_LIMIT": str(rowbytes)})
    check(rows > 0 and any(("merging %d events in memory" % rows) in l and l.endswith(": streaming") for l in got[2]),
          "memory limit of bigring's row bytes: the note counts its %d rows and it streams: %s" % (rows, got[2]))
    # streaming keeps every rank file open, and a spill file and the logical
    # clock's per rank: with a soft limit on open files below the run's needs
    # it raises it to the hard limit and streams; with a hard limit too low
    # it says so and merges in memory (same files), also for a run that needs
    # the logical clock, whose third file per rank came late before
    sk = make_run(maker, "bigskew", os.path.join(base, "sk40"), 40, 600)
    for lim in (110, 140):
        got = merge_at(sk, (lim, lim), "--stream", "--outputs", "pftrace")
        check(got[0] == 0 and any("open files allowed (ulimit -n); merging in memory" in l for l in got[2]),
              "bigskew, 40 rank files, ulimit -n %d: merged in memory with the note: %s" % (lim, got[2]))
    # the rank files themselves are closed once loaded (read without HDF5):
    # two descriptors per rank are enough
    ref = merge_at(sk, None, "--outputs", "pftrace")
    got = merge_at(sk, (150, 150), "--stream", "--outputs", "pftrace")
    check(got[0] == 0 and not [l for l in got[2] if "merging in memory" in l] and
          filecmp.cmp(os.path.join(ref[3], "trace.pftrace"), os.path.join(got[3], "trace.pftrace"), shallow=False),
          "bigskew, 40 rank files, ulimit -n 150: streams, the same trace.pftrace: %s" % got[2])
    many = make_run(maker, "big", os.path.join(base, "many"), 40, 300)
    # ... which costs ~1.5 MB per rank file: 40 ranks of 300 events over the
    # budget stay in memory, where they take less
    got = merge_at(many, None, "--outputs", "pftrace", env=ML)
    check(got[0] == 0 and any(l.endswith("trying anyway; streaming its rank files would take more") for l in got[2]),
          "40 small ranks over the budget: merged in memory, with the reason: %s" % got[2])
    ref = merge_at(many, None, "--outputs", "pftrace")
    for soft, hard, streams in ((80, 4096, True), (80, 80, False)):
        got = merge_at(many, (soft, hard), "--stream", "--outputs", "pftrace")
        note = [l for l in got[2] if "open files allowed" in l or "merging in memory" in l]
        check(got[0] == 0 and bool(note) != streams and (streams or "40 rank files, 80 open files allowed (ulimit -n); "
                                                         "merging in memory" in note[0]),
              "40 rank files, ulimit -n %d (hard %d): %s: %s" % (soft, hard, "streams" if streams else
                                                                "merges in memory with a note", got[2]))
        check(filecmp.cmp(os.path.join(ref[3], "trace.pftrace"), os.path.join(got[3], "trace.pftrace"), shallow=False),
              "40 rank files, ulimit -n %d (hard %d): the same trace.pftrace as in memory" % (soft, hard))
    got = merge("tinyring", env=ML)
    check(got[0] == 0 and any("would take about" in l and "streaming its rank files would take more" in l
                              for l in got[2]), "memory limit, all products, 4 tiny ranks: merged in memory with a hint: %s"
          % got[2])
    got = merge("ring", "--outputs", "pftrace")
    check(not [l for l in got[2] if "would take" in l], "no memory note without a limit on a small run: %s" % got[2])

    # --stream writes the reports too when asked (part_report checks them)
    for outs in ("report", "pftrace,h5,report", "json,report"):
        rc, so, se, out = merge("golden", "--stream", "--outputs", outs, "-q")
        want = sorted(set(["flame.folded", "flame.svg", "report.html", "report.json", "report.txt"] +
                          (["trace.pftrace"] if "pftrace" in outs else []) + (["merged.h5"] if "h5" in outs else []) +
                          (["trace.json"] if "json" in outs else [])))
        check(rc == 0 and outputs(out) == want, "--stream --outputs %s: exit 0 and %s (%d %s %s)" % (outs, want, rc,
                                                                                                   outputs(out), se))
    rc, so, se, out = merge("golden", "--stream", "--outputs", "pftrace", "-q")
    check(rc == 0 and outputs(out) == ["trace.pftrace"], "--stream --outputs pftrace writes trace.pftrace (%d %s)" %
          (rc, se))

    # XSPROF_MERGE_STREAM=1: --stream when only trace.pftrace and/or trace.json
    # are asked for (mpithreads_far proves it took the streaming path: it
    # hands over to memory)
    S1 = {"XSPROF_MERGE_STREAM": "1"}
    for run, expect in (("golden", "stream"), ("ring", "stream"), ("skew", "stream"), ("mpithreads_far", "memory")):
        ref = merge(run, "--outputs", "pftrace")
        compare("XSPROF_MERGE_STREAM=1 %s --outputs pftrace" % run, ref, merge(run, "--outputs", "pftrace", env=S1),
                expect)
        ref = merge(run, "--outputs", "json")
        compare("XSPROF_MERGE_STREAM=1 %s --outputs json" % run, ref, merge(run, "--outputs", "json", env=S1), expect)
    # ... and changes nothing when other products are asked for
    for run in ("golden", "ring"):
        ref = merge(run)
        got = merge(run, env=S1)
        compare("XSPROF_MERGE_STREAM=1 %s (all products)" % run, ref, got, "stream")
        for f in outputs(ref[3]):
            d = first_diff(os.path.join(ref[3], f), os.path.join(got[3], f)) if f in outputs(got[3]) else "missing"
            check(d is None, "XSPROF_MERGE_STREAM=1 %s (all products): %s differs at %s" % (run, f, d))

    # The MPI pass first orders calls with a window of 4096 / 64 rows; calls
    # further out of order make it start again with the whole window: twice
    # for mpithreads (300 rows), once for a ring (in order)
    # for mpithreads (300 rows), once for a ring (in order); a violation makes
    # it start again with the logical clock (one clock pass, then the MPI pass)
    for run, tries, clock in (("mpithreads", 2, 0), ("ring", 1, 0), ("skew", 2, 1), ("bigskew", 2, 1)):
        got = merge(run, "--stream", "-q", env={"XSPROF_MERGE_TIMES": "1"})
        n = len([l for l in got[2] if "time stream-match" in l])
        nc = len([l for l in got[2] if "time stream-clock" in l])
        check(got[0] == 0 and n == tries and nc == clock, "%s --stream: %d MPI pass(es), %d clock pass(es), expected %d, %d: %s" %
              (run, n, nc, tries, clock, got[2]))

    # XSPROF_MERGE_TIMES=1 still works and changes no byte
    ref = merge("bigring", "--outputs", "pftrace", "-q")
    got = merge("bigring", "--stream", "-q", env={"XSPROF_MERGE_TIMES": "1"})
    check(got[0] == 0 and any("peak" in l for l in got[2]), "XSPROF_MERGE_TIMES=1 --stream prints phases: %s" % got[2])
    check(not [l for l in got[2] if is_note(l)], "bigring with XSPROF_MERGE_TIMES streams")
    check(first_diff(os.path.join(ref[3], "trace.pftrace"), os.path.join(got[3], "trace.pftrace")) is None,
          "XSPROF_MERGE_TIMES=1 --stream: same trace.pftrace")

    # a trace.pftrace past XSPROF_MERGE_UI_MB gets one note on how to open it
    # (merged in memory and streamed); below it, or with -q, none
    for extra in ((), ("--stream",)):
        for mb, quiet, said in (("0.01", False, True), (None, False, False), ("0.01", True, False)):
            got = merge("ring", "--outputs", "pftrace", *(extra + (("-q",) if quiet else ())),
                        env={"XSPROF_MERGE_UI_MB": mb} if mb else None)
            big = [l for l in got[2] if "trace_processor --httpd" in l]
            want = "OUT/trace.pftrace"  # lines() names the output directory OUT
            check(got[0] == 0 and len(big) == (1 if said else 0) and
                  (not said or big[0].startswith("xsmerge: note: %s is " % want) and "large-traces" in big[0]),
                  "ring %s, XSPROF_MERGE_UI_MB %s%s: %s the note: %s" %
                  (" ".join(extra), mb, " -q" if quiet else "", "one" if said else "no", got[2]))

    # under mpirun, --stream streams too: every process reads every file in
    # pass 1, trace.pftrace is divided among the processes, the last one
    # writes trace.json, process 0 merged.h5; the files are the serial ones
    mpiexec, env = mpirun_env()
    if mpiexec:
        for run, np_, expect, extra in (("ring", 2, "stream", ()), ("golden", 3, "stream", ()), ("skew", 2, "stream", ()),
                                        ("bigskew", 3, "stream", ("--min-latency", "1us")),
                                        ("mpithreads_far", 2, "memory", ()),
                                        ("ring", 2, "stream", ("--from", "1ms", "--to", "5ms"))):
            # merged.h5 too where it streams with the others (process 0 writes it)
            outs = "pftrace,json,h5" if run in ("bigskew", "golden") else "pftrace,json"
            ref = merge(run, "--outputs", outs, *extra)
            out = os.path.join(base, "mpirun-out-%s-%d%s" % (run, np_, "-window" if extra else ""))
            # not -q: the note is what is checked (-q silences notes)
            p = subprocess.run([mpiexec, "-np", str(np_), "--oversubscribe", XSMERGE, R[run], "-o", out, "--stream",
                                "--outputs", outs] + list(extra), capture_output=True, text=True, env=env,
                               timeout=120)
            what = "mpirun -np %d %s --stream %s" % (np_, run, " ".join(extra))
            check(p.returncode == 0, "%s: exit 0 (%s)" % (what, p.stderr[-1000:]))
            said = any(is_note(l) for l in p.stderr.splitlines())
            check(said if expect == "memory" else not said, "%s: %s %r: %s" % (what, "says" if expect == "memory" else
                  "streams, no", NOTE, p.stderr[-1000:]))
            check(outputs(out) == outputs(ref[3]), "%s: files %s, serial %s" % (what, outputs(out), outputs(ref[3])))
            for f in outputs(ref[3]):
                d = first_diff(os.path.join(ref[3], f), os.path.join(out, f)) if f in outputs(out) else "missing"
                check(d is None, "%s: %s differs from the serial one at %s" % (what, f, d))
        out = os.path.join(base, "mpirun-bad")
        p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, R["trunc"], "-o", out, "--stream"],
                           capture_output=True, text=True, env=env, timeout=120)
        check(p.returncode != 0 and "rank-00001.h5" in p.stderr and outputs(out) == [],
              "mpirun --stream on a truncated file: the error, no output (%d %s)" % (p.returncode, p.stderr[-500:]))
        # the memory budget holds under mpirun too (it was not looked at: every
        # process loaded the whole model): process 0 decides for all, with each
        # process's share of its node's budget, and says so once
        ref = merge("bigring", "--outputs", "pftrace")
        out = os.path.join(base, "mpirun-budget")
        p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, R["bigring"], "-o", out, "--outputs",
                            "pftrace"], capture_output=True, text=True, env=dict(env, XSPROF_MERGE_MEMORY_LIMIT="1000"),
                           timeout=300)
        said = [l for l in p.stderr.splitlines() if "would take about" in l]
        check(p.returncode == 0 and len(said) == 1 and said[0].endswith("GiB per process): streaming"),
              "mpirun -np 2, memory limit: one note, it streams (%d %s)" % (p.returncode, p.stderr[-1000:]))
        d = first_diff(os.path.join(ref[3], "trace.pftrace"), os.path.join(out, "trace.pftrace"))
        check(d is None, "mpirun -np 2, memory limit: trace.pftrace differs from the serial one at %s" % d)
    else:
        print("merge_stream: no MPIEXEC, mpirun case not run")

def report_of(out):
    import json
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


# the kinds of wait a report counts (a streamed analysis as the in-memory one)
SAME_WAITS = ("Late Sender", "Late Sender / Wrong Order", "Late Sender (polling)", "Late Receiver",
              "Late Receiver (polling)", "Wait at Barrier", "Barrier Completion", "Wait at NxN", "NxN Completion",
              "Late Broadcast", "Early Reduce", "Early Scan")


def near(x, y):
    """Seconds alike up to the last of the 9 digits report.json prints (a
    streamed analysis sums nanoseconds, the in-memory one seconds)."""
    return abs(x - y) <= 2e-9 + 2e-8 * abs(y)


def same_path(a, b):
    """Two report.json critical paths alike: the same pieces, so the same
    seconds up to the last of the 9 digits report.json prints (one sums
    nanoseconds, the other seconds)."""
    parts = lambda v: sorted((x.get("name", x.get("rank")), x["seconds"]) for x in v)
    same = lambda p, q: len(p) == len(q) and all(i[0] == j[0] and near(i[1], j[1]) for i, j in zip(p, q))
    return (a["end_rank"], a["segments"]) == (b["end_rank"], b["segments"]) and near(a["length_s"], b["length_s"]) and \
        same(parts(a["regions"]), parts(b["regions"])) and same(parts(a["ranks"]), parts(b["ranks"]))


def analysis_tables(out):
    """merged.h5's /analysis tables, rows sorted (the critical path in its
    order), seconds to the nanosecond."""
    with h5py.File(os.path.join(out, "merged.h5"), "r") as h:
        if "analysis" not in h:
            return None
        t = {}
        for k in h["analysis"]:
            rows = [tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in h["analysis"][k][()].tolist()]
            t[k] = rows if k == "critical_path" else sorted(rows)
        t["kinds"] = list(h["analysis/waits"].attrs["kind_names"])
        return t


def part_report():
    """The reports of --stream (a streamed analysis) against the in-memory ones."""
    # the golden run's planted waits, exactly (what the in-memory report says)
    rc, so, se, out = merge("golden", "--stream", "--outputs", "report", "-q")
    rep = report_of(out)
    ws = {w["kind"]: w for w in rep["wait_states"]}
    check(rc == 0 and rep["job"]["analysis"] == "streamed" and rep["job"]["not_computed"] == [],
          "golden --stream: a streamed analysis that says what it leaves out (%s)" % rep["job"])
    sites = lambda k: sorted((x["waiting_rank"], x["causing_rank"], x["op"], x["region"], round(x["seconds"] * 1e9))
                             for x in ws[k]["sites"])
    check(sites("Wait at NxN") == [(0, 1, "MPI_Allreduce", "main", 1000), (2, 1, "MPI_Allreduce", "main", 1500)],
          "golden --stream: Wait at NxN 1.0 + 1.5 us on ranks 0, 2 for rank 1 (%s)" % sites("Wait at NxN"))
    check(sites("Late Sender") == [(0, 2, "MPI_Recv", "main", 1000)], "golden --stream: Late Sender 1 us (%s)" %
          sites("Late Sender"))
    check(sites("Late Broadcast") == [(2, 0, "MPI_Bcast", "main", 500)], "golden --stream: Late Broadcast 0.5 us (%s)" %
          sites("Late Broadcast"))
    rcs = {(w["kind"], r["rank"], r["region"]) for w in rep["wait_states"] for r in w["root_causes"]}
    check(sites("Late Receiver") == [(0, 2, "MPI_Send", "main", 100)], "golden --stream: Late Receiver 0.1 us (%s)" %
          sites("Late Receiver"))
    # the Late Receiver: rank 2 posts its receive 0.1 us late for no excess
    # of its own, having waited 0.5 us for rank 0 in the Bcast before
    check(rcs == {("Late Sender", 2, "main"), ("Wait at NxN", 1, "main"), ("Late Broadcast", 0, "main"),
                  ("Late Receiver", 0, "main")}, "golden --stream: root causes %s" % rcs)
    with open(os.path.join(out, "report.txt")) as f:
        txt = f.read()
    check("==== Critical path ====\nlength 18.5 us in 4 segments, ends on rank 0\n" in txt,
          "golden --stream: report.txt has the golden run's critical path")

    # every kind of run and option set: the regions, MPI operations,
    # communication, clock, GPU activity (kernels overlapping waits too:
    # gpumpi) and call trees are the in-memory ones; so are the waits of
    # every kind, their root causes and the critical path (latelr: a Late
    # Receiver found after its call's next calls still meets its call's Late
    # Sender, and the longer one counts; unrecv: a send never received is
    # no message in flight for Wrong Order; farcause: a Sendrecv's Late
    # Sender, held until the waiter's next call, keeps its cause although
    # the causer made 20 calls since its Send; polllr: a polling loop's
    # Late Receiver, the sender's polls before the receive was posted)
    cases = [("golden", ()), ("golden", ("--ranks", "0,2")), ("golden", ("--from", "2.5us", "--to", "6us")),
             ("golden", ("--min-latency", "5us")), ("ring", ()), ("ring", ("--from", "1ms", "--to", "5ms")),
             ("skew", ()), ("latelr", ()), ("unrecv", ()), ("unrecv_many", ()), ("bigskew", ()),
             ("bigskew", ("--ranks", "1-4")), ("gpu", ()), ("gpumpi", ()), ("deep", ()), ("icoll", ()),
             ("icoll_late", ()), ("mpithreads", ()), ("journal", ()), ("empty", ()), ("bigring", ()),
             ("chain", ()), ("halo", ()), ("halocoll", ()), ("outside", ()), ("waitall_tie", ()), ("pollwo", ()), ("overlap", ()), ("pollwait", ()), ("pollsend", ()), ("isendlr", ()),
             ("icollpoll", ()), ("farcause", ()), ("polllr", ()), ("selfpoll", ()), ("window", ("--from", "4us", "--to", "14us")), ("window", ("--from", "4us")), ("window", ("--to", "5.2us"))]
    nstreamed = nsegs = nwo = nwaits = 0
    # an instrumented build (5-20x slower) checks the reports alone on every
    # fourth case: the same feeder code, a quarter of its merges
    every = 4 if os.environ.get("XSTEST_INSTRUMENTED") else 1
    for i, (run, opts) in enumerate(cases):
        what = "%s %s --stream --outputs pftrace,json,h5,report" % (run, " ".join(opts))
        ref = merge(run, "--outputs", "h5,report", "-q", *opts)
        got = merge(run, "--stream", "--outputs", "pftrace,json,h5,report", "-q", *opts, env={"XSPROF_MERGE_TIMES": "1"})
        check(got[0] == ref[0] == 0, "%s: exit %d, in memory %d (%s)" % (what, got[0], ref[0], got[2][-3:]))
        if got[0] or ref[0]:
            continue
        a, b = report_of(ref[3]), report_of(got[3])
        # the reports alone: the analysis reads through its feeder thread
        # (beside merged.h5's writer it reads the sources itself)
        if i % every == 0:
            alone = merge(run, "--stream", "--outputs", "report", "-q", *opts)
            check(alone[0] == 0 and open(os.path.join(alone[3], "report.json")).read() ==
                  open(os.path.join(got[3], "report.json")).read(),
                  "%s: report.json of --outputs report alone differs (exit %d)" % (what, alone[0]))
        streamed = any(" time stream-analysis " in l for l in got[2])  # not merged in memory instead
        check(streamed or run in ("deep", "mpithreads", "journal"), "%s: streamed (%s)" % (what, b["job"]["analysis"]))
        for k in ("regions", "mpi", "comm_matrix", "clock", "drops", "gpu"):
            check(a[k] == b[k], "%s: %s differs from the in-memory report:\n%s\n%s" % (what, k, a[k], b[k]))
        for ra, rb in zip(a["ranks"], b["ranks"]):
            for k in ("wall_s", "mpi_s", "compute_s", "gpu_s"):
                check(ra[k] == rb[k], "%s: rank %s %s %s, in memory %s" % (what, ra["rank"], k, rb[k], ra[k]))
        with open(os.path.join(ref[3], "flame.folded")) as fa, open(os.path.join(got[3], "flame.folded")) as fb:
            check(fa.read() == fb.read(), "%s: flame.folded differs from the in-memory one" % what)
        # report.json and report.txt byte for byte: one engine, fed from the
        # model or from the rank files (merge/README.md, "One analysis")
        for f in ("report.json", "report.txt"):
            with open(os.path.join(ref[3], f)) as fa, open(os.path.join(got[3], f)) as fb:
                check(fa.read() == fb.read(), "%s: %s differs from the in-memory one" % (what, f))
        if not streamed:
            continue
        nstreamed += 1
        wa = {w["kind"]: w for w in a["wait_states"]}
        wb = {w["kind"]: w for w in b["wait_states"]}
        for k in SAME_WAITS:
            check(wa[k]["instances"] == wb[k]["instances"] and near(wb[k]["seconds"], wa[k]["seconds"]),
                  "%s: %s %s, in memory %s" % (what, k, (wb[k]["instances"], wb[k]["seconds"]),
                                               (wa[k]["instances"], wa[k]["seconds"])))
            # (a rank's time outside every region, region null, sorts first)
            key = lambda r: (r["rank"], r["region"] is not None, r["region"] or "", round(r["seconds"], 9))
            rca = sorted(key(r) for r in wa[k]["root_causes"])
            rcb = sorted(key(r) for r in wb[k]["root_causes"])
            check(rca == rcb, "%s: %s root causes %s, in memory %s" % (what, k, rcb, rca))
        if run == "latelr":
            # both waits of the call count: the Late Sender whole (1.2 us),
            # the Late Receiver (1.5 us) past it, 0.3 us: no more than the call waited
            check((wb["Late Receiver"]["instances"], wb["Late Sender"]["instances"]) == (1, 1) and
                  near(wb["Late Sender"]["seconds"], 1.2e-6) and near(wb["Late Receiver"]["seconds"], 0.3e-6),
                  "%s: the Waitall's Late Sender 1.2 us and its Late Receiver beyond it, 0.3 us (%s)" % (what, wb))
        if run in ("unrecv", "unrecv_many"):
            n = 1 if run == "unrecv" else 70000
            check((wb["Late Sender"]["instances"], wb["Late Sender / Wrong Order"]["instances"]) == (n, n),
                  "%s: %d Late Senders, %d Wrong Order (%s)" % (what, n, n, wb))
        nwo += wb["Late Sender / Wrong Order"]["instances"]
        ca, cb = a["critical_path"], b["critical_path"]
        # merged.h5's analysis tables: the same rows (waits: every instance)
        ta, tb = (analysis_tables(x[3]) for x in (ref, got))
        check(ta is not None and tb is not None, "%s: merged.h5 has /analysis (%s, %s)" % (what, ta is not None, tb is not None))
        for k in sorted(ta or {}):
            check(ta[k] == (tb or {}).get(k), "%s: merged.h5 /analysis/%s differs from the in-memory one:\n%s\n%s" %
                  (what, k, (tb or {}).get(k, [])[:8], ta[k][:8]))
        nwaits += len((tb or {}).get("waits", []))
        # every table byte for byte, rows in the same order: one engine
        with h5py.File(os.path.join(ref[3], "merged.h5"), "r") as ha, h5py.File(os.path.join(got[3], "merged.h5"), "r") as hb:
            check(sorted(ha["analysis"]) == sorted(hb["analysis"]), "%s: merged.h5 /analysis tables %s, in memory %s" %
                  (what, sorted(hb["analysis"]), sorted(ha["analysis"])))
            for k in sorted(ha["analysis"]):
                check(same_table(ha["analysis"][k][()], hb["analysis"][k][()]),
                      "%s: merged.h5 /analysis/%s is not byte for byte the in-memory one" % (what, k))
        # the same waits: the same critical path, piece by piece
        check(same_path(ca, cb), "%s: critical path %s, in memory %s" % (what, cb, ca))
        nsegs += ca["segments"]
    # a wait whose causing call left the streamed window before the wait
    # was found: "beyond window", counted, never another cause (the
    # finding used to blame code outside every region)
    ref = merge("farpoll", "--outputs", "report", "-q")
    got = merge("farpoll", "--stream", "--outputs", "report", "-q")
    a, b = report_of(ref[3]), report_of(got[3])
    ls = lambda r: [w for w in r["wait_states"] if w["kind"] == "Late Sender (polling)"][0]
    check(ref[0] == got[0] == 0 and a["job"]["waits_beyond_window"] == 0 and ls(a)["beyond_window"] == 0 and
          [(x["rank"], x["region"]) for x in ls(a)["root_causes"]] == [(1, "slow")],
          "farpoll in memory: the Late Sender's cause is `slow` on rank 1 (%s)" % ls(a))
    check(b["job"]["waits_beyond_window"] == 1 and ls(b)["beyond_window"] == 1 and ls(b)["root_causes"] == [] and
          [x.get("root_cause") for x in ls(b)["sites"]] == ["beyond window"] and
          near(ls(b)["seconds"], ls(a)["seconds"]) and not any("outside every region" in f["recommendation"] for f in b["findings"]),
          "farpoll --stream: one Late Sender, its root cause beyond window, no other (%s)" % ls(b))
    with open(os.path.join(got[3], "report.txt")) as f:
        txt = f.read()
    check("Root cause beyond window: 1 waits" in txt and "outside every region" not in txt,
          "farpoll --stream: report.txt counts the wait beyond window and blames no code outside regions")

    # one engine: the same window gives the same bytes, whichever way it
    # is fed (the model: 256 calls a rank; the rank files: 16)
    for win, a_env, b_env in (("16", {"XSPROF_MERGE_ANALYSIS_WINDOW": "16"}, None),
                              ("256", None, {"XSPROF_MERGE_ANALYSIS_WINDOW": "256"})):
        ra = merge("farpoll", "--outputs", "report,h5", "-q", env=a_env)
        rb = merge("farpoll", "--stream", "--outputs", "report,h5", "-q", env=b_env)
        for f in ("report.json", "report.txt"):
            check(ra[0] == rb[0] == 0 and open(os.path.join(ra[3], f)).read() == open(os.path.join(rb[3], f)).read(),
                  "farpoll, a window of %s calls in memory and streamed: the same %s" % (win, f))
        with h5py.File(os.path.join(ra[3], "merged.h5"), "r") as ha, h5py.File(os.path.join(rb[3], "merged.h5"), "r") as hb:
            for k in ("ranks", "regions", "mpi", "waits", "critical_path", "comm_matrix"):
                check(same_table(ha["analysis"][k][()], hb["analysis"][k][()]),
                      "farpoll, a window of %s calls: merged.h5 /analysis/%s byte for byte" % (win, k))
        check(report_of(ra[3])["job"]["waits_beyond_window"] == (1 if win == "16" else 0),
              "farpoll, a window of %s calls: %s wait beyond it" % (win, "one" if win == "16" else "no"))
    # a big run streams by default (past XSPROF_MERGE_STREAM_MB, here 1 MiB)
    # with the in-memory window: every default product the in-memory
    # merge's bytes (XSPROF_MERGE_STREAM_MB=0), farpoll's wait with its cause
    R["farpoll_long"] = make_run(maker, "farpoll", os.path.join(base, "farpoll_long"), 20000)
    ref = merge("farpoll_long", env={"XSPROF_MERGE_STREAM_MB": "0"})
    got = merge("farpoll_long", env={"XSPROF_MERGE_STREAM_MB": "1", "XSPROF_MERGE_TIMES": "1"})
    said = [l for l in got[2] if "would take about" in l]
    check(ref[0] == got[0] == 0 and not [l for l in ref[2] if "would take about" in l] and len(said) == 1 and
          said[0].endswith("streaming them (the same files in bounded memory; XSPROF_MERGE_STREAM_MB=0 merges in "
                           "memory)"), "farpoll_long past XSPROF_MERGE_STREAM_MB: one note, it streams: %s" % got[2])
    a, b = report_of(ref[3]), report_of(got[3])
    # (16 calls, --stream's window, would leave its cause beyond it)
    check(any(" time stream-analysis " in l for l in got[2]) and
          a["job"]["waits_beyond_window"] == b["job"]["waits_beyond_window"] == 0,
          "farpoll_long: the streamed analysis (XSPROF_MERGE_TIMES) with no wait beyond its window (%s, %s)" %
          (b["job"]["waits_beyond_window"], got[2]))
    check(outputs(got[3]) == outputs(ref[3]) and "trace.json" in outputs(got[3]),
          "farpoll_long: the in-memory merge's files, trace.json too: %s, %s" % (outputs(got[3]), outputs(ref[3])))
    for f in outputs(ref[3]):
        d = first_diff(os.path.join(ref[3], f), os.path.join(got[3], f)) if f in outputs(got[3]) else "missing"
        check(d is None, "farpoll_long streamed by default: %s differs from the in-memory one at %s" % (f, d))
    check(got[1] == ref[1], "farpoll_long streamed by default: the same summary on stdout")

    got = merge("farpoll", "--outputs", "report", "-q", env={"XSPROF_MERGE_ANALYSIS_WINDOW": "a lot"})
    check(got[0] == 0 and any("XSPROF_MERGE_ANALYSIS_WINDOW" in l for l in got[2]) and
          report_of(got[3])["job"]["waits_beyond_window"] == 0,
          "XSPROF_MERGE_ANALYSIS_WINDOW='a lot': one warning, the default window (%s)" % got[2])

    # the checks behind the send never received end once 100 later Late
    # Senders came (Scalasca's bound: no Wrong Order past it, by
    # definition), so none is given up and none is said to be (they were
    # 65 536 a rank, with a note, before the bound)
    rc, so, se, out = merge("unrecv_many", "--stream", "--outputs", "report")
    gave_up = [l for l in se if "Wrong Order checks waited behind messages never received" in l]
    check(rc == 0 and not gave_up, "unrecv_many --stream: no Wrong Order check given up (%s)" % se[-4:])
    print("merge_stream_report: %d of %d run and option sets streamed and compared (%d critical path pieces alike, "
          "%d Wrong Order waits, %d wait rows in merged.h5)" % (nstreamed, len(cases), nsegs, nwo, nwaits))
    check(nstreamed == len(cases), "every case streams (%d of %d)" % (nstreamed, len(cases)))

    # a run that does not fit the memory budget streams every product, the
    # reports as a streamed analysis, with one note that says so
    rc, so, se, out = merge("bigring", env={"XSPROF_MERGE_MEMORY_LIMIT": "1000"})
    note = [l for l in se if "would take about" in l]
    check(rc == 0 and len(note) == 1 and "streaming" in note[0] and "without" not in note[0] and
          report_of(out)["job"]["analysis"] == "streamed" and
          all(f in outputs(out) for f in ("trace.pftrace", "merged.h5", "report.json", "report.html", "flame.svg")),
          "bigring over the memory budget: every product streamed (%d %s %s)" % (rc, note, outputs(out)))

    # bad inputs: the in-memory merge's one error line, exit 1, no output
    for run in sorted(ERRORS):
        ref = merge(run, "--outputs", "report", "-q")
        got = merge(run, "--stream", "--outputs", "pftrace,report", "-q")
        check(got[0] == 1 and got[2] == ref[2] and len(got[2]) == 1 and outputs(got[3]) == [],
              "%s --stream --outputs pftrace,report -q: exit 1, the in-memory error line, no output (%d %s vs %s, %s)" %
              (run, got[0], got[2], ref[2], outputs(got[3])))
    # a report that cannot be written (file size limit): one line, exit 1, no output
    def small(kib):
        def f():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (kib << 10, kib << 10))
        return f
    out = os.path.join(base, "report-too-large")
    p = subprocess.run([XSMERGE, R["bigskew"], "-o", out, "-q", "--stream", "--outputs", "report"], capture_output=True,
                       text=True, preexec_fn=small(24))
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1 and len(lines) == 1 and "too large" in p.stderr.lower() and outputs(out) == [],
          "--stream --outputs report over a 24 KiB file size limit: one line, exit 1, no output (%d %r %s)" %
          (p.returncode, p.stderr, outputs(out)))

    # under mpirun, process 0 writes the reports: the serial streamed ones
    mpiexec, env = mpirun_env()
    if mpiexec:
        for run, np_ in (("skew", 2), ("golden", 3)):
            ref = merge(run, "--stream", "--outputs", "pftrace,h5,report", "-q")
            out = os.path.join(base, "mpirun-report-%s-%d" % (run, np_))
            p = subprocess.run([mpiexec, "-np", str(np_), "--oversubscribe", XSMERGE, R[run], "-o", out, "--stream",
                                "--outputs", "pftrace,h5,report", "-q"], capture_output=True, text=True, env=env, timeout=120)
            what = "mpirun -np %d %s --stream --outputs pftrace,h5,report" % (np_, run)
            check(p.returncode == 0 and outputs(out) == outputs(ref[3]), "%s: exit 0, files %s (%s)" %
                  (what, outputs(out), p.stderr[-500:]))
            for f in ("report.json", "report.txt", "flame.folded", "trace.pftrace"):
                a, b = os.path.join(ref[3], f), os.path.join(out, f)
                d = first_diff(a, b) if os.path.exists(b) else "missing"
                if f == "report.json" and d is not None:  # the run_dir is the same, the rest must be
                    d = None if report_of(ref[3]) == report_of(out) else d
                check(d is None, "%s: %s differs from the serial one at %s" % (what, f, d))
            ta = analysis_tables(ref[3])
            tb = analysis_tables(out) if os.path.exists(os.path.join(out, "merged.h5")) else None
            check(ta is not None and ta == tb, "%s: merged.h5 /analysis differs from the serial one" % what)
    else:
        print("merge_stream: no MPIEXEC, mpirun report case not run")


# three CTest tests (merge_stream_cases, merge_stream_rest,
# merge_stream_report) run the parts side by side; no argument runs all
PART = sys.argv[2] if len(sys.argv) > 2 else "all"
if PART in ("all", "cases"):
    part_cases()
if PART in ("all", "rest"):
    part_rest()
if PART in ("all", "report"):
    part_report()
shutil.rmtree(base, ignore_errors=True)
finish("merge_stream" if PART == "all" else "merge_stream_" + PART)
