"""mpi4py: regions and MPI calls of 2 ranks on one timeline, with xsprof
imported first (no LD_PRELOAD) and under LD_PRELOAD; imported after
mpi4py.MPI, one warning. Also xsprof.load on every table of merged.h5."""
import os

import h5py
import pytest

import xsprof
from conftest import mpirun, run_py


def check_timeline(m):
    r, mpi = m["regions"], m["mpi"]
    assert sorted(set(r["rank"])) == [0, 1]
    for rank in (0, 1):
        names = r[r["rank"] == rank].name_str
        assert (names == "compute").sum() == 3 and (names == "exchange").sum() == 3
    # mpi4py's pickled send/recv/allreduce: MPI_Send, MPI_Mprobe + MPI_Mrecv, MPI_Bcast...
    calls = mpi[mpi.op_str.isin(["MPI_Send", "MPI_Recv", "MPI_Mprobe", "MPI_Mrecv", "MPI_Bcast", "MPI_Allreduce"])]
    assert set(calls[calls["rank"] == 1].op_str) >= {"MPI_Send"}, set(mpi.op_str)
    assert set(calls[calls["rank"] == 0].op_str) & {"MPI_Recv", "MPI_Mrecv"}, set(mpi.op_str)
    assert len(calls) >= 12, set(mpi.op_str)
    ex = r[r.name_str == "exchange"]
    for _, c in calls.iterrows():  # every point-to-point and collective call inside an exchange region
        mine = ex[ex["rank"] == c["rank"]]
        assert ((mine.t_begin <= c.t_begin) & (c.t_end <= mine.t_end)).any(), c
    assert len(m["messages"]) >= 3  # pickled sends: a probe and a receive each
    assert len(m["collectives"]) >= 3


@pytest.mark.parametrize("preload", [False, True])
def test_mpi4py_two_ranks(work, preload):
    run, out = work / "run", work / "merged"
    lib = os.path.join(os.path.dirname(xsprof.library_path), "libxsprof-mpi.so")
    p = mpirun(2, "mpi_app.py", run, preload=lib if preload else None)
    assert p.stdout.count("library ") == 2
    assert ("(already loaded in the process)" in p.stdout) == preload
    assert "not recorded" not in p.stderr
    xsprof.merge(run, out)
    m = xsprof.load(out)
    check_timeline(m)
    if not preload:
        check_every_table(out / "merged.h5", m)


def check_every_table(path, m):
    """xsprof.load gives one DataFrame per dataset of merged.h5, with every row."""
    with h5py.File(path, "r") as f:
        seen = []
        f.visititems(lambda n, o: seen.append((n, o.shape[0])) if isinstance(o, h5py.Dataset) else None)
    assert sorted(m) == sorted(n for n, _ in seen)
    for name, rows in seen:
        assert len(m[name]) == rows, name
    for t in ("regions", "args", "mpi", "gpu", "messages", "collectives", "collective_members", "analysis/waits",
              "analysis/critical_path", "analysis/regions", "analysis/mpi", "ranks", "threads", "comms"):
        assert t in m, t
    assert {"dims_0", "dims_7", "shape", "key_str"} <= set(m["args"].columns)
    assert {"grid_0", "grid_2", "block_0", "block_2"} <= set(m["gpu"].columns)
    assert len(m["analysis/waits"]) >= 1 and len(m["analysis/critical_path"]) >= 1
    assert set(m["analysis/waits"].kind_str) <= {"Late Sender", "Late Sender / Wrong Order", "Late Receiver",
                                                 "Wait at Barrier", "Wait at NxN", "NxN Completion",
                                                 "Late Broadcast", "Early Reduce"}
    assert m["analysis/waits"].op_str.str.startswith("MPI_").all()
    assert m.attrs["schema"] == "xsprof-merged/1" and m.attrs["nranks"] == 2
    assert set(m["ranks"].host) and all(isinstance(h, str) for h in m["ranks"].host)


def test_import_after_mpi4py_warns_once(work):
    run = work / "run"
    p = run_py("late_import.py", run)
    assert p.stderr.count("xsprof was imported after mpi4py.MPI: MPI calls are not recorded") == 1, p.stderr
    assert "late import done" in p.stdout
    with h5py.File(run / "rank-00000.h5", "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else s for s in f["/definitions/strings"][()]]
        assert [strings[r["name"]] for r in f["/events/regions"][()]] == ["after_mpi4py"]
        assert len(f["/events/mpi"]) == 0 if "/events/mpi" in f else True
