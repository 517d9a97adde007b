"""Collective mode: `mpirun -np K xsmerge RUN -o OUT` divides the rank files
among K processes and must write exactly the bytes of a serial merge, for
every output file, on a run whose ranks do not divide evenly by K, on
a run with a recovered journal and on one of more rank files than the
exchange sends at once. Each process's files start loading in a helper
before MPI_Init (XSPROF_MERGE_EARLY=0: after it; =1: the helper takes one
file, the process the others) and the processes map each other's event
tables, each converting the times of its own and matching the receives
and writing the messages of its own ranks into memory they share: all
give those bytes, also with the logical clock at work (skew), nonblocking
requests, wildcards and threads, and a damaged file gives the serial
merge's error, or with --partial its notes and files."""
import filecmp
import os
import re
import subprocess
import sys

from mergetest import XSMERGE, check, collective_runs, finish, make_run, merge_once, pairs, same_dirs, tmpdir, xsmerge

maker = sys.argv[1]
mpiexec = os.environ.get("MPIEXEC") or "mpirun"
base = tmpdir()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

runs = collective_runs(maker, base)
# rank 2 of a 5-rank run damaged: process 0's share with two processes
damaged = os.path.join(base, "damaged")
make_run(maker, "big", damaged, 5, 3000)
with open(os.path.join(damaged, "rank-00002.h5"), "r+b") as f:
    f.seek(4096)
    f.write(b"\xff" * 8192)


for run, (k, early) in pairs(runs, ((2, ""), (3, ""), (2, "0"), (2, "1"))):
    serial = run + "-serial"
    rc, so, se = merge_once(run, serial, "-q")
    check(rc == 0, "serial merge of %s (%s)" % (run, se))
    par = "%s-np%d-%s" % (run, k, early)
    p = subprocess.run([mpiexec, "-np", str(k), "--oversubscribe", XSMERGE, run, "-o", par, "-q"],
                       capture_output=True, text=True, env=dict(env, XSPROF_MERGE_EARLY=early), timeout=240)
    check(p.returncode == 0, "mpirun -np %d merge of %s: %s" % (k, run, p.stderr[-2000:]))
    same_dirs(serial, par, "with -np %d, XSPROF_MERGE_EARLY=%s (%s)" % (k, early, run))
# one CPU (a process bound to one core, as mpirun binds two processes):
# merged.h5's chunks are encoded on the writing thread, the same bytes as
# the encoding threads' (the merged tables span more than one chunk)
one = runs[0] + "-onecpu"
p = subprocess.run([XSMERGE, runs[0], "-o", one, "-q"], capture_output=True, text=True,
                   preexec_fn=lambda: os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}), timeout=240)
check(p.returncode == 0 and filecmp.cmp(os.path.join(one, "merged.h5"), os.path.join(runs[0] + "-serial", "merged.h5"),
                                        shallow=False), "merged.h5 written on one CPU differs: %s" % p.stderr[-500:])
# the helper's load is used, the tables mapped and matching divided
# (XSPROF_MERGE_TIMES names the phases), none when turned off, nor the
# mapping and division with a time window;
# the helper starts only for a run that fits the memory budget (the run's
# 86 KB of rank files need ~35 MB by their size, 2.7 MB by their tables:
# 10 MB per process is enough when the tables are counted, 2 MB is not)
for i, (early, extra, limit, loads, maps) in enumerate((("", (), "", 2, 2), ("0", (), "", 0, 0),
                                                          ("", ("--from", "0", "--to", "1s"), "", 2, 0),
                                                          ("", (), "20000000", 2, 2), ("", (), "4000000", 0, 0))):
    p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, runs[0], "-o", runs[0] + "-t%d" % i, *extra],
                       capture_output=True, text=True, env=dict(env, XSPROF_MERGE_EARLY=early, XSPROF_MERGE_TIMES="1",
                                                                XSPROF_MERGE_MEMORY_LIMIT=limit), timeout=240)
    used = p.stderr.count("time load (begun before MPI_Init)")
    mapped = p.stderr.count("time read (event tables mapped)")
    divided = p.stderr.count("time match (divided)")  # where the tables are mapped
    check(p.returncode == 0 and used == loads and mapped == maps and divided == maps,
          "XSPROF_MERGE_EARLY=%r %s limit %r: %d processes loaded early, %d mapped, %d matched divided: %s" % (
              early, extra, limit, used, mapped, divided, p.stderr[-2000:]))
# a damaged file: the serial merge's error line without --partial, its notes
# and bytes with it, whichever of helper and process met the file first
for extra in ((), ("--partial",)):
    out = damaged + "-serial" + "".join(extra)
    rc, so, se = xsmerge(damaged, "-o", out, *extra)
    for early in ("", "0"):
        par = damaged + "-np2-" + early + "".join(extra)
        p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, damaged, "-o", par, *extra],
                           capture_output=True, text=True, env=dict(env, XSPROF_MERGE_EARLY=early), timeout=240)
        what = "damaged run %s, XSPROF_MERGE_EARLY=%s" % (" ".join(extra), early)
        check(p.returncode == rc, "%s: exit %d, serial %d" % (what, p.returncode, rc))
        # mpirun adds its own lines about the exit code
        mine = "".join(x for x in p.stderr.replace(par, "OUT").splitlines(True) if x.startswith("xsmerge"))
        check(mine == se.replace(out, "OUT"), "%s: stderr differs:\n%s\n--- serial:\n%s" % (what, p.stderr, se))
        if rc == 0:
            same_dirs(out, par, "(%s)" % what)
        else:
            check("rank-00002.h5" in se and not os.path.exists(par), "%s: one error naming the file: %r" % (what, se))
# on one node the processes ask Open MPI for its shared-memory pml, ob1
# (the cm pml's network probes cost 0.2 s of MPI_Init here), unless the
# user chose a pml or an mtl, on the command line or in their parameter
# file: then MPI_Init opens what it would (cm too); a file that only
# excludes other pmls (as Debian's own does) chooses nothing
def params_home(name, text):
    home = os.path.join(base, name)
    os.makedirs(os.path.join(home, ".openmpi"))
    with open(os.path.join(home, ".openmpi", "mca-params.conf"), "w") as f:
        f.write("# a user's choice\n" + text)
    return {"HOME": home}
for i, (extra, more, want) in enumerate((((), {}, {"ob1"}), (("--mca", "mtl", "^psm"), {}, None),
                                         (("--mca", "pml", "^ucx"), {}, None),
                                         ((), params_home("home-chooses", "pml = ob1,cm\n"), None),
                                         ((), params_home("home-excludes", "pml=^ucx\nmtl = ^psm\n"), {"ob1"}))):
    p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", *extra, XSMERGE, runs[0], "-o",
                        runs[0] + "-pml%d" % i, "-q", "--outputs", "pftrace"],
                       capture_output=True, text=True, env=dict(env, OMPI_MCA_pml_base_verbose="10", **more),
                       timeout=240)
    tried = set(re.findall(r"components_open: found loaded component (\w+)", p.stderr))
    check(p.returncode == 0, "merge with %s: %s" % (extra, p.stderr[-2000:]))
    if not tried:
        print("note: %s does not name its pml; the transport choice is not tested" % mpiexec)
        break
    check(tried == want if want else "cm" in tried, "pml components opened with %s %s: %s" % (extra, more, sorted(tried)))
# unmatched operations: the same notes as a serial merge (process 0 says
# them; each process matched only the receives of its ranks)
unrecv = make_run(maker, "unrecv", os.path.join(base, "unrecv"), 3)
rc, so, se = xsmerge(unrecv, "-o", unrecv + "-serial")
p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, unrecv, "-o", unrecv + "-np2"],
                   capture_output=True, text=True, env=env, timeout=240)
mine = "".join(x for x in p.stderr.replace(unrecv + "-np2", "OUT").splitlines(True) if x.startswith("xsmerge"))
check(rc == 0 and p.returncode == 0 and "unmatched" in se and mine == se.replace(unrecv + "-serial", "OUT"),
      "unmatched notes under mpirun as serially:\n%s\n--- serial:\n%s" % (p.stderr, se))
same_dirs(unrecv + "-serial", unrecv + "-np2", "(unmatched receives)")
# the analysis runs on another process than merged.h5's on one node (on the
# last of two, on process 1 of three), which adds the analysis tables to the
# file process 0 wrote: the serial merge's files, and its summary once
check(p.stdout == so and so.count("xsprof report") == 1, "summary under mpirun -np 2:\n%s\n--- serial:\n%s" % (p.stdout, so))
p = subprocess.run([mpiexec, "-np", "3", "--oversubscribe", XSMERGE, unrecv, "-o", unrecv + "-np3"],
                   capture_output=True, text=True, env=env, timeout=240)
check(p.returncode == 0 and p.stdout == so, "summary under mpirun -np 3:\n%s" % p.stdout)
same_dirs(unrecv + "-serial", unrecv + "-np3", "(unmatched receives, 3 processes)")
# merged.h5's chunks encoded by the processes that write no other product
# (tables of more than one 8192-row chunk): with 4 processes process 2
# helps the writer, with --outputs h5 every process does, unless the node
# has fewer cores than processes (then none helps); the serial merge's
# bytes, and the helpers say so in their phases
bigh5 = make_run(maker, "big", os.path.join(base, "bigh5"), 5, 30000)
rc, so, se = xsmerge(bigh5, "-o", bigh5 + "-serial", "-q")
check(rc == 0, "serial merge of %s: %s" % (bigh5, se))
cores = os.cpu_count() or 1
for k, outputs, helpers in ((4, None, 1), (2, "h5", 1), (3, "h5,pftrace", 2), (3, None, 0)):
    helpers = helpers if k <= cores else 0
    par = "%s-np%d-%s" % (bigh5, k, outputs)
    extra = ["--outputs", outputs] if outputs else []
    p = subprocess.run([mpiexec, "-np", str(k), "--oversubscribe", XSMERGE, bigh5, "-o", par, "-q", *extra],
                       capture_output=True, text=True, env=dict(env, XSPROF_MERGE_TIMES="1"), timeout=240)
    check(p.returncode == 0, "mpirun -np %d %s: %s" % (k, extra, p.stderr[-2000:]))
    if outputs:  # without the reports' tables in merged.h5: the serial merge of the same products
        ser = bigh5 + "-serial-" + outputs
        if not os.path.isdir(ser):
            xsmerge(bigh5, "-o", ser, "-q", *extra)
        same_dirs(ser, par, "(merged.h5 helped, -np %d %s)" % (k, outputs))
    else:
        same_dirs(bigh5 + "-serial", par, "(merged.h5 helped, -np %d)" % k)
    said = p.stderr.count("time merged.h5 (helping)")
    check(said == helpers, "-np %d %s: %d processes helped with merged.h5, expected %d" % (k, extra, said, helpers))
# a bad input fails the same way collectively: one line, exit 1
bad = os.path.join(base, "bad")
os.makedirs(bad)
with open(os.path.join(bad, "rank-00000.h5"), "wb") as f:
    f.write(b"garbage" * 100)
p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, bad, "-o", bad + "-out", "-q"],
                   capture_output=True, text=True, env=env, timeout=120)
check(p.returncode == 1, "collective bad input exits 1 (%d)" % p.returncode)
check(p.stderr.count("rank-00000.h5: not an HDF5 file") == 1, "one error line: %r" % p.stderr)
# ... and so does a bad command line, which every process parses before MPI starts
p = subprocess.run([mpiexec, "-np", "3", "--oversubscribe", XSMERGE, bad, "-o", bad + "-out", "--bogus"],
                   capture_output=True, text=True, env=env, timeout=120)
check(p.returncode != 0 and p.stderr.count("xsmerge: unknown option: --bogus") == 1,
      "collective bad option: said once (%d %r)" % (p.returncode, p.stderr))
# every node loads every rank file, so the processes must all see the same
# ones: a relative run directory resolved in two working directories (as a
# directory local to each node would be) holding other files is refused
# with one line and nothing written, as is a directory one process cannot
# see (missing there: all end instead of waiting for that one's share)
views = os.path.join(base, "views")
for sub, nranks in (("a", 3), ("b", 2)):
    os.makedirs(os.path.join(views, sub))
    make_run(maker, "big", os.path.join(views, sub, "run"), nranks, 500)
os.makedirs(os.path.join(views, "c"))
said = "do not all see the same rank files"  # process 0's line, which sees its files
for other in ("b", "c"):
    out = os.path.join(views, "out-" + other)
    p = subprocess.run([mpiexec, "--oversubscribe", "-np", "1", "-wdir", os.path.join(views, "a"), XSMERGE, "run",
                        "-o", out, "-q", ":", "-np", "1", "-wdir", os.path.join(views, other), XSMERGE, "run",
                        "-o", out, "-q"], capture_output=True, text=True, env=env, timeout=120)
    lines = [x for x in p.stderr.splitlines() if x.startswith("xsmerge")]
    check(p.returncode == 1 and len(lines) == 1 and said in lines[0] and not os.path.exists(out),
          "processes seeing other rank files (%s): exit 1, one line with %r, no output (%d %r)"
          % (other, said, p.returncode, p.stderr))
# trace.pftrace's places go from process to process while they write: a
# write that fails (a full disk: a 512 KiB tmpfs; a file size limit would
# stop Open MPI's own shared memory first) still ends every process, with
# one line naming the file, and leaves nothing behind
disk = os.path.join(base, "disk")
os.makedirs(disk)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", disk], capture_output=True).returncode != 0:
    print("note: cannot mount a tmpfs here; the full-disk case is not tested")
else:
    try:
        for k in (2, 3):
            out = os.path.join(disk, "np%d" % k)
            p = subprocess.run([mpiexec, "-np", str(k), "--oversubscribe", XSMERGE, runs[0], "-o", out, "-q",
                                "--outputs", "pftrace"], capture_output=True, text=True, env=env, timeout=240)
            said = [l for l in p.stderr.splitlines() if l.startswith("xsmerge:")]
            check(p.returncode == 1 and len(said) == 1 and os.path.join(out, "trace.pftrace") in said[0] and
                  "no space" in said[0].lower(), "-np %d, disk full: exit 1, one line (%d %r)" % (k, p.returncode, said))
            left = os.listdir(out) if os.path.isdir(out) else []
            check(left == [], "-np %d, disk full: nothing left behind: %s" % (k, left))
        # ... also when only process 1 fails: rank 0's segment (~290 KB,
        # written first) fits, rank 1's does not; process 0 then said an
        # empty line, the error was process 1's alone
        ring = make_run(maker, "big", os.path.join(base, "ring5k"), 2, 5000)  # trace.pftrace ~580 KB
        out = os.path.join(disk, "ring")
        p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, ring, "-o", out, "-q", "--outputs",
                            "pftrace"], capture_output=True, text=True, env=env, timeout=240)
        said = [l for l in p.stderr.splitlines() if l.startswith("xsmerge:")]
        check(p.returncode == 1 and len(said) == 1 and os.path.join(out, "trace.pftrace") in said[0] and
              "no space" in said[0].lower() and not p.stderr.startswith("\n"),
              "-np 2, disk full in process 1's segment: exit 1, one line naming the file (%d %r)" % (p.returncode,
                                                                                                   p.stderr[:300]))
        check(not os.path.isdir(out) or os.listdir(out) == [], "-np 2, disk full in process 1's segment: nothing left")
        # streamed, trace.json (process 1's) fails after trace.pftrace fit
        # (1.6 MB free: 0.6 MB of trace.pftrace, 1.9 MB of trace.json);
        # process 0 said an empty line there too
        subprocess.run(["mount", "-o", "remount,size=1600k", disk], check=True)
        p = subprocess.run([mpiexec, "-np", "2", "--oversubscribe", XSMERGE, ring, "-o", out, "-q", "--stream",
                            "--outputs", "pftrace,json"], capture_output=True, text=True, env=env, timeout=240)
        said = [l for l in p.stderr.splitlines() if l.startswith("xsmerge:")]
        check(p.returncode == 1 and len(said) == 1 and os.path.join(out, "trace") in said[0] and
              "no space" in said[0].lower() and not p.stderr.startswith("\n"),
              "-np 2 --stream, disk full in process 1's trace.json: exit 1, one line naming the file (%d %r)" % (
                  p.returncode, p.stderr[:300]))
        check(not os.path.isdir(out) or os.listdir(out) == [], "-np 2 --stream, trace.json on a full disk: nothing left")
        subprocess.run(["mount", "-o", "remount,size=512k", disk], check=True)
        # merged.h5 fails while helpers send it chunks: they are received
        # all the same (nobody waits forever), one line names the file
        bigdisk = make_run(maker, "big", os.path.join(base, "bigdisk"), 5, 80000)  # merged.h5 ~0.9 MB
        for k in (2, 3):
            out = os.path.join(disk, "h5np%d" % k)
            p = subprocess.run([mpiexec, "-np", str(k), "--oversubscribe", XSMERGE, bigdisk, "-o", out, "-q",
                                "--outputs", "h5"], capture_output=True, text=True, env=env, timeout=240)
            said = [l for l in p.stderr.splitlines() if l.startswith("xsmerge:")]
            check(p.returncode == 1 and len(said) == 1 and os.path.join(out, "merged.h5") in said[0],
                  "-np %d, merged.h5 on a full disk: exit 1, one line (%d %r)" % (k, p.returncode, said))
            left = os.listdir(out) if os.path.isdir(out) else []
            check(left == [], "-np %d, merged.h5 on a full disk: nothing left behind: %s" % (k, left))
    finally:
        subprocess.run(["umount", disk])
finish("merge_collective")
