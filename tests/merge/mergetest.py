"""tests/merge/mergetest.py — helpers shared by the merge test scripts:
make a run with merge_make_runs, run xsmerge, report failures."""
import atexit
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


def make_run(maker, kind, path, *args):
    subprocess.run([maker, kind, path] + [str(a) for a in args], check=True)
    return path


def xsmerge(*args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([XSMERGE] + [str(a) for a in args], capture_output=True, text=True, env=e)
    return p.returncode, p.stdout, p.stderr


def finish(name):
    if failures:
        print("%s: %d failure(s)" % (name, len(failures)), file=sys.stderr)
        sys.exit(1)
    print("%s: ok" % name)
