"""Shared by the Python tests: where the build is, a fresh work directory."""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def work(tmp_path):
    return tmp_path


def run_py(script, run_dir, *args, env=None, check=True):
    """Run a script of this folder with Debian's python3 and XSPROF_OUTPUT=run_dir."""
    e = dict(os.environ, XSPROF_OUTPUT=str(run_dir), XSPROF_GPU="0")
    e.update(env or {})
    p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, script), *map(str, args)], env=e,
                       capture_output=True, text=True, check=False)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (script, p.returncode, p.stdout, p.stderr))
    return p


def mpirun(np_, script, run_dir, preload=None, env=None, args=()):
    e = dict(os.environ, XSPROF_GPU="0")
    e.update(env or {})
    cmd = [os.environ.get("MPIEXEC", "mpiexec"), "-n", str(np_), "--oversubscribe", "-x", "XSPROF_GPU",
           "-x", "XSPROF_OUTPUT=%s" % run_dir, "-x", "PYTHONPATH"]
    if preload:
        cmd += ["-x", "LD_PRELOAD=%s" % preload]
    cmd += ["/usr/bin/python3", os.path.join(HERE, script), *args]
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise AssertionError("mpiexec %s failed (%d):\n%s\n%s" % (script, p.returncode, p.stdout, p.stderr))
    return p


__all__ = ["run_py", "mpirun", "shutil", "sys"]
