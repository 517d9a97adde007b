"""tests/merge/mergetest.py — helpers shared by the merge test scripts:
make a run with merge_make_runs, run xsmerge, report failures."""
import atexit
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

XSMERGE = os.environ.get("XSMERGE") or os.path.join(os.environ.get("XSPROF_BUILD", "build"), "bin", "xsmerge")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


_dirs = []


def tmpdir():
    d = tempfile.mkdtemp(prefix="xsmerge-test-")
    _dirs.append(d)
    return d


@atexit.register
def _cleanup():
    # a passing test leaves nothing behind (each `make test` made ~160 MB
    # of runs and outputs); a failing one keeps them to look at
    if failures or os.environ.get("XSPROF_KEEP_TEST_DIRS"):
        for d in _dirs:
            print("kept:", d, file=sys.stderr)
        return
    for d in _dirs:
        shutil.rmtree(d, ignore_errors=True)


def pairs(runs, configs, diagonal=False):
    """Each run with each configuration; in an instrumented build
    (XSTEST_INSTRUMENTED: sanitizers or coverage, 5-20x slower) the
    product walked diagonally instead, run i with configuration i mod n and
    every configuration at least once: the same code under the sanitizers,
    the same lines for coverage, a fraction of the mpiruns (the two
    collective tests did not finish in 900 s each under ASan in CI).
    diagonal=True walks it diagonally in every build."""
    if not diagonal and not os.environ.get("XSTEST_INSTRUMENTED"):
        return [(r, c) for r in runs for c in configs]
    n = max(len(runs), len(configs))
    return [(runs[i % len(runs)], configs[i % len(configs)]) for i in range(n)]


_merged = {}


def merge_once(run, out, *args):
    """xsmerge RUN -o OUT ARGS..., run once per OUT: (rc, stdout, stderr),
    the same on later calls (the serial reference of several pairs())."""
    if out not in _merged:
        _merged[out] = xsmerge(run, "-o", out, *args)
    return _merged[out]


def make_run(maker, kind, path, *args):
    subprocess.run([maker, kind, path] + [str(a) for a in args], check=True)
    return path


def xsmerge(*args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([XSMERGE] + [str(a) for a in args], capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def collective_runs(maker, base):
    """The runs both collective-mode tests merge serially and under mpirun."""
    j = os.path.join
    return [make_run(maker, "big", j(base, "big"), 5, 3000),
            make_run(maker, "journal", j(base, "journal")),
            make_run(maker, "skew", j(base, "skew")),
            # more rank files than one window of the exchange (64) broadcasts at once
            make_run(maker, "big", j(base, "many"), 70, 200),
            # matching divided among the processes: nonblocking requests and
            # wildcards, nonblocking collectives, MPI from several threads
            make_run(maker, "golden", j(base, "golden")),
            make_run(maker, "icoll", j(base, "icoll")),
            make_run(maker, "mpithreads", j(base, "mpithreads")),
            # receives numbered at completion dealt out again in posting order
            make_run(maker, "wildorder", j(base, "wildorder")),
            # trace preparation divided: GPU streams, counters and memory
            # tracks counted by their owners; halos over a split communicator
            make_run(maker, "gpumpi", j(base, "gpumpi")),
            make_run(maker, "halocoll", j(base, "halocoll"))]


def same_dirs(serial, par, what):
    """Every file of the serial merge's output, byte for byte, and no other."""
    files = sorted(os.listdir(serial))
    got = sorted(os.listdir(par)) if os.path.isdir(par) else None
    check(files == got, "same files %s: %s vs %s" % (what, files, got))
    for f in files:
        same = os.path.exists(os.path.join(par, f)) and filecmp.cmp(os.path.join(serial, f), os.path.join(par, f),
                                                                   shallow=False)
        check(same, "%s identical %s" % (f, what))


def finish(name):
    if failures:
        print("%s: %d failure(s)" % (name, len(failures)), file=sys.stderr)
        sys.exit(1)
    print("%s: ok" % name)
