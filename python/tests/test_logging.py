"""xsprof's own messages in Python: forwarded to the logger "xsprof" (a
ctypes callback, also from xsprof's writer thread and at MPI_Finalize in
atexit) with the rank, under mpiexec with 2 ranks; the stderr lines of a C
program when the application configured no logging; a bad
XSPROF_WARN_REGION_MS said in one line, not fatal."""
import re

from conftest import mpirun

ENV = {"XSPROF_WARN_REGION_MS": "env_io=2", "XSPROF_WARN_RSS_MB": "1"}


def counted(lines, name):
    """Instances of region `name` counted over all messages (rate-limited)."""
    n = 0
    for line in lines:
        m = re.search(r"region '%s' took [0-9.]+ ms, above its threshold of [0-9.]+ ms"
                      r"(?: \(and (\d+) more)?" % re.escape(name), line)
        if m:
            n += 1 + int(m.group(1) or 0)
        m = re.search(r"region '%s': (\d+) more instances? above" % re.escape(name), line)
        if m:
            n += int(m.group(1))
    return n


def stderr_lines(p, rank):
    """xsprof's lines on stderr: its start's and, after the interpreter, its finalize's."""
    return [line for line in p.stderr.splitlines() if line.startswith("xsprof[rank %d] " % rank)]


def records(work):
    """The lines log_app.py wrote, both ranks."""
    lines = []
    for rank in (0, 1):
        with open(work / ("py-log-%d.txt" % rank)) as f:
            lines += f.read().splitlines()
    return lines


def test_logging_forward(work):
    env = dict(ENV)
    p = mpirun(2, "log_app.py", work / "run", env=env, args=["logging", work])
    lines = records(work)
    recs = [line.split(" ", 4)[1:] for line in lines if line.startswith("REC ")]
    assert recs, lines
    for rank in (0, 1):
        mine = [r for r in recs if r[2] == str(rank)]
        texts = [r[3] for r in mine]
        late = stderr_lines(p, rank)
        assert all(r[0] == "xsprof" for r in mine)
        assert all(t.startswith("rank %d: " % rank) for t in texts), texts
        # the first message of a name comes while Python runs, the rest maybe at finalize
        assert counted(texts, "py_solve") >= 1 and counted(texts + late, "py_solve") == 3, (texts, late)
        assert counted(texts, "env_io") == 1, texts
        assert counted(texts + late, "py_quick") == 0, texts
        assert all(" warning: " in line for line in late), late  # XSPROF_LOG's default level again
        assert [r[1] for r in mine if "region '" in r[3]] == ["WARNING"] * len([t for t in texts if "region '" in t])
        assert ["rank %d: session stopped" % rank, "rank %d: session started" % rank] == \
            [t for t in texts if "session " in t], texts
        assert any("resident memory" in t and r[1] == "WARNING" for r, t in zip(mine, texts)), texts
    assert len({r[2] for r in recs}) == 2
    assert lines.count("refused: xsprof.region_threshold('', 5): invalid argument") == 2, lines


def test_logging_unconfigured(work):
    p = mpirun(2, "log_app.py", work / "run", env=dict(ENV), args=["plain", work])
    assert not any(line.startswith("REC ") for line in records(work))
    lines = [line for line in p.stderr.splitlines() if line.startswith("xsprof[rank ")]
    for rank in (0, 1):
        mine = [line for line in lines if line.startswith("xsprof[rank %d] " % rank)]
        assert counted(mine, "py_solve") == 3, p.stderr
        assert all(" warning: " in line for line in mine), mine  # info (sessions) only with XSPROF_LOG=info


def test_logging_bad_env(work):
    p = mpirun(2, "log_app.py", work / "run", env={"XSPROF_WARN_REGION_MS": "env_io=fast,py_quick=-1"},
               args=["logging", work])
    line = ("warning: XSPROF_WARN_REGION_MS: 2 items ignored, the first 'env_io=fast' (expected NAME=MS or MS, "
            "MS a number of milliseconds above 0, items separated by commas)")
    assert p.stderr.count(line) == 2, p.stderr
    recs = [line for line in records(work) if line.startswith("REC ")]
    late = stderr_lines(p, 0) + stderr_lines(p, 1)
    assert counted(recs + late, "env_io") == 0 and counted(recs + late, "py_solve") == 6, (recs, late)
