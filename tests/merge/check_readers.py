"""A serial merge decodes the rank files with helper processes when
XSPROF_MERGE_READERS asks, and by itself when there are many small rank
files (at least 32, 64 KiB or less on average). Whoever decoded a file, the
output must be the same bytes, and notes and errors the same lines, as
with a single process: on runs with a recovered journal, skewed clocks,
GPU rows, more helpers than files, and a damaged file with --partial."""
import filecmp
import os
import shutil
import sys

from mergetest import check, finish, make_run, tmpdir, xsmerge

maker = sys.argv[1]
base = tmpdir()
runs = [make_run(maker, "big", os.path.join(base, "big"), 5, 3000),
        make_run(maker, "journal", os.path.join(base, "journal")),
        make_run(maker, "skew", os.path.join(base, "skew")),
        make_run(maker, "gpu", os.path.join(base, "gpu")),
        make_run(maker, "golden", os.path.join(base, "golden")),
        make_run(maker, "big", os.path.join(base, "many"), 40, 300)]
# a damaged file among good ones: an error without --partial, a note with it
damaged = os.path.join(base, "damaged")
shutil.copytree(runs[0], damaged)
with open(os.path.join(damaged, "rank-00002.h5"), "r+b") as f:
    f.seek(4096)
    f.write(b"\xff" * 8192)

cases = [(r, ()) for r in runs] + [(damaged, ()), (damaged, ("--partial",))]
for i, (run, extra) in enumerate(cases):
    outs = {}
    for n in ("1", "2", "3", "8", "default"):
        out = os.path.join(base, "out%d-%s" % (i, n))
        rc, so, se = xsmerge(run, "-o", out, *extra, env={"XSPROF_MERGE_READERS": n} if n != "default" else None)
        outs[n] = (rc, so, se.replace(out, "OUT"), out)
    rc1, so1, se1, out1 = outs["1"]
    for n, (rc, so, se, out) in outs.items():
        what = "%s %s with %s readers" % (os.path.basename(run), " ".join(extra), n)
        check(rc == rc1, "%s: exit %d, one reader %d" % (what, rc, rc1))
        check(se == se1, "%s: stderr differs:\n%s\n--- one reader:\n%s" % (what, se, se1))
        check(so == so1, "%s: stdout differs" % what)
        if rc1 != 0:
            continue
        files = sorted(os.listdir(out1))
        check(files == sorted(os.listdir(out)), "%s: files %s vs %s" % (what, sorted(os.listdir(out)), files))
        for f in files:
            same = os.path.exists(os.path.join(out, f)) and filecmp.cmp(os.path.join(out1, f), os.path.join(out, f),
                                                                      shallow=False)
            check(same, "%s: %s differs" % (what, f))
# who decides by itself: 40 files of a few KB are decoded by helpers, 5
# files of 3000 events each are not (XSPROF_MERGE_TIMES names the phase)
for run, helpers in ((runs[5], True), (runs[0], False)):
    rc, so, se = xsmerge(run, "-o", os.path.join(base, "t-" + os.path.basename(run)), env={"XSPROF_MERGE_TIMES": "1"})
    check(rc == 0 and ("time decode (helper processes)" in se) == helpers,
          "%s: helper processes %s by default: %r" % (os.path.basename(run), "used" if helpers else "not used", se))
rc, so, se = xsmerge(damaged, "-o", os.path.join(base, "x"), env={"XSPROF_MERGE_READERS": "2"})
check(rc == 1 and "rank-00002.h5" in se, "the damaged run fails without --partial, naming the file: %r" % se)
shutil.rmtree(base, ignore_errors=True)
finish("merge_readers")
