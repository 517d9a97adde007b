"""After the run: xsmerge from Python, and merged.h5 into pandas."""
import os
import subprocess

from . import _paths


def merge(run_dir, out_dir, **options):
    """Run xsmerge RUN_DIR -o OUT_DIR; options are its long options
    (outputs="pftrace,json" -> --outputs pftrace,json; stream=True -> --stream).
    Returns out_dir; raises RuntimeError with xsmerge's message on failure."""
    cmd = [os.path.join(_paths.BINDIR, "xsmerge"), os.fspath(run_dir), "-o", os.fspath(out_dir)]
    for k, v in options.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            cmd.append(flag)
        elif v is not False and v is not None:
            cmd += [flag, str(v)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode not in (0, 3):  # 3: a regression found against --baseline, outputs written
        raise RuntimeError("xsmerge failed (exit %d): %s" % (p.returncode, p.stderr.strip() or p.stdout.strip()))
    return out_dir


# Columns holding ids into /strings: a column <name>_str beside each gives the text.
_STRING_COLUMNS = {"name", "key", "op", "region", "root_region"}
_NOT_STRING_IDS = {"args": {"region"}}  # args.region is a row of regions


def _frame(ds, strings):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import pandas as pd  # pylint: disable=import-outside-toplevel
    a = ds[()]
    table = ds.name.rsplit("/", 1)[-1]
    if a.dtype.names is None:  # a plain array: one column
        if a.dtype.kind == "O" or a.dtype.kind == "S":
            a = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in a]
        return pd.DataFrame({table: a})
    cols = {}
    for f in a.dtype.names:
        v = a[f]
        if v.ndim > 1:  # a fixed-size array per row (args.dims, gpu.grid): one column per element
            for j in range(v.shape[1]):
                cols["%s_%d" % (f, j)] = v[:, j]
        elif v.dtype.kind == "S":
            cols[f] = [x.decode("utf-8", "replace").rstrip("\0") for x in v]
        else:
            cols[f] = v
            if (f in _STRING_COLUMNS and f not in _NOT_STRING_IDS.get(table, ()) and v.dtype.kind == "u"
                    and strings is not None):
                cols[f + "_str"] = [strings[i] if i < len(strings) else None for i in v]
    if "kind_names" in ds.attrs and "kind" in cols:  # analysis/waits
        kinds = [k.decode() if isinstance(k, bytes) else str(k) for k in ds.attrs["kind_names"]]
        cols["kind_str"] = [kinds[k] if 0 <= k < len(kinds) else None for k in a["kind"]]
    if table == "args" and "s" in cols and strings is not None:
        cols["s_str"] = [strings[i] if k == 3 else None for i, k in zip(a["s"], a["kind"])]
        nd = a["ndims"]
        cols["shape"] = [tuple(int(x) for x in d[:n]) if k == 4 else None
                         for d, n, k in zip(a["dims"], nd, a["kind"])]
    return pd.DataFrame(cols, index=np.arange(len(a)))


class Merged(dict):
    """merged.h5 as pandas: one DataFrame per table, keyed by its path in the
    file ("regions", "mpi", "messages", "analysis/waits", ...); the file's
    root attributes in .attrs. Arrays per row are flattened to one column per
    element (args.dims_0..7, gpu.grid_0..2, and args.shape as a tuple); string
    ids (name, key, op, region in the analysis tables) get a <column>_str, a
    wait's kind its kind_str."""

    def __init__(self, tables, attrs):
        super().__init__(tables)
        self.attrs = attrs

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def load(out_dir):
    """Every table of OUT_DIR/merged.h5 (or the file itself) as a pandas DataFrame."""
    import h5py  # pylint: disable=import-outside-toplevel
    path = os.fspath(out_dir)
    if os.path.isdir(path):
        path = os.path.join(path, "merged.h5")
    tables = {}
    with h5py.File(path, "r") as f:
        raw = f["strings"][()] if "strings" in f else None
        strings = None if raw is None else [s.decode("utf-8", "replace") if isinstance(s, bytes) else str(s)
                                            for s in raw]

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                tables[name] = _frame(obj, strings)
        f.visititems(visit)
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    return Merged(tables, attrs)
