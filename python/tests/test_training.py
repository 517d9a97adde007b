"""The training loop (train_loop.py) through xsprof: schedule, steps,
record_function, shapes, exceptions and threads, checked in the merged
output through xsprof.merge and xsprof.load."""
import json

import xsprof
from conftest import run_py


def test_training_loop(work):
    run, out = work / "run", work / "merged"
    p = run_py("train_loop.py", run)
    summary = json.loads(p.stdout.split("SUMMARY ", 1)[1].splitlines()[0])
    ready = json.loads(p.stdout.split("READY ", 1)[1].splitlines()[0])

    # on_trace_ready: once per active window (wait 1 + warmup 1 + active 3, twice), with the run dir
    assert [(c, d) for c, d, _ in ready] == [(0, str(run)), (1, str(run))]
    assert [s for _, _, s in ready] == [5, 10]

    # key_averages: the 6 active steps (2..4, 7..9), in process, without xsmerge
    assert summary["train_step"] == 6 and summary["forward"] == 6 and summary["optimizer"] == 6
    assert summary["aten::add"] == summary["aten::mul"] == summary["aten::relu"] == 6
    assert summary["ProfilerStep#2"] == 1 and "ProfilerStep#0" not in summary
    assert "Self (us)" in p.stdout and "train_step" in p.stdout

    xsprof.merge(run, out, outputs="json,h5")
    m = xsprof.load(out)
    r = m["regions"]
    names = r["name_str"]
    steps = sorted(n for n in set(names) if n.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#%d" % i for i in (2, 3, 4, 7, 8, 9)], steps
    for n in ("train_step", "forward", "optimizer", "aten::linear", "aten::add", "aten::mul", "aten::relu"):
        assert (names == n).sum() == 6, (n, (names == n).sum())

    # nesting: every train_step inside a ProfilerStep, forward inside train_step; the
    # optimizer region that raised ended (it is recorded, inside its train_step)
    main = r[names.str.startswith("ProfilerStep#")]
    ts = r[names == "train_step"]
    for _, row in ts.iterrows():
        assert ((main.t_begin <= row.t_begin) & (row.t_end <= main.t_end)).any()
    opt = r[names == "optimizer"]
    assert (opt.depth == ts.depth.iloc[0] + 1).all()
    assert (r[names == "forward"].depth == ts.depth.iloc[0] + 1).all()

    # the data-loader thread has its own named track
    th = m["threads"]
    loader_tid = th[th.name_str == "data-loader"].tid
    assert len(loader_tid) == 1
    lb = r[names == "load_batch"]
    assert len(lb) >= 1 and (lb.thread == loader_tid.iloc[0]).all()
    assert not (ts.thread == loader_tid.iloc[0]).any()

    # arguments: a shape from .shape, an int, a float
    a = m["args"]
    lin = a[a.region.isin(r.index[names == "aten::linear"])]
    got = {k: (s if s is not None else i if kind == 1 else d)
           for k, kind, s, i, d in zip(lin.key_str, lin.kind, lin["shape"], lin.i, lin.d)}
    assert got == {"input": (32, 128), "bias": 1, "scale": 0.5}
    assert (a.dims_0[a.kind == 4] == 32).all() and (a.dims_1[a.kind == 4] == 128).all()

    # marks and counters
    inst = m["instants"]
    assert (inst.name_str == "skipped_update").sum() == 6
    assert (m["counters"].name_str == "loss").sum() == 6
