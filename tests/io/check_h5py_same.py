"""Reads two rank files of the same journal with h5py, as a user would: the
threaded writer's file must hold what HDF5's own path wrote (every dataset,
its dtype, chunking and filters, every attribute).
usage: check_h5py_same.py SERIAL_FILE THREADED_FILE"""
import sys

import h5py
import numpy as np

failures = []


def datasets(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return out


with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    if sorted(a.attrs.keys()) != sorted(b.attrs.keys()):
        failures.append("attribute names")
    for k in a.attrs:
        if k in b.attrs and not np.array_equal(a.attrs[k], b.attrs[k]):
            failures.append("attribute " + k)
    da, db = datasets(a), datasets(b)
    if sorted(da) != sorted(db):
        failures.append("dataset names")
    chunks = 0
    for name in sorted(set(da) & set(db)):
        x, y = da[name], db[name]
        if (x.dtype, x.chunks, x.compression, x.compression_opts, x.shuffle, x.fletcher32) != (
                y.dtype, y.chunks, y.compression, y.compression_opts, y.shuffle, y.fletcher32):
            failures.append(name + ": dtype or storage")
        elif not np.array_equal(x[()], y[()]):
            failures.append(name + ": rows")
        chunks += -(-x.shape[0] // x.chunks[0]) if x.chunks and x.shape[0] else 0
    if chunks < 40:
        failures.append("only %d chunks" % chunks)

if failures:
    print("check_h5py_same: " + "; ".join(failures))
    sys.exit(1)
print("check_h5py_same: %d datasets, %d chunks: same content" % (len(da), chunks))
