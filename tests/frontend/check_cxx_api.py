"""The rank file of cxx_api (the C++ API): names, nesting after exceptions,
typed arguments and shapes.

usage: check_cxx_api.py APP WORK_DIR [17]   (17: the C++17 build, with string_view)
"""
import collections
import os
import shutil
import subprocess
import sys

import h5py

ARG_INT, ARG_DOUBLE, ARG_STRING, ARG_SHAPE = 1, 2, 3, 4


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    app, work = sys.argv[1], sys.argv[2]
    cxx17 = sys.argv[3:] == ["17"]
    shutil.rmtree(work, ignore_errors=True)
    p = subprocess.run([app], env=dict(os.environ, XSPROF_OUTPUT=work), capture_output=True, text=True)
    if p.returncode != 0 or "cxx_api done" not in p.stdout:
        fail("%s exited %d: %s%s" % (app, p.returncode, p.stdout, p.stderr))
    with h5py.File(os.path.join(work, "rank-00000.h5"), "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else str(s) for s in f["/definitions/strings"][()]]
        regions = f["/events/regions"][()]
        args = f["/events/args"][()]
    rows = [(strings[r["name"]], int(r["depth"])) for r in regions]
    got = collections.Counter(n for n, _ in rows)
    want = {"aten::linear": 1, "one_line_a": 1, "one_line_b": 1, "one_line_c": 1, "one_line_d": 1, "moved": 1,
            "try_block": 2, "macro_in_try": 2, "app::Layer::forward": 6, "layer_body": 6, "after_exceptions": 1}
    if cxx17:
        want["view_name"] = 1
    if dict(got) != want:
        fail("regions %s\n      expected %s" % (dict(sorted(got.items())), dict(sorted(want.items()))))
    depth = {n: d for n, d in rows}
    for n, d in [("after_exceptions", 0), ("try_block", 0), ("macro_in_try", 1), ("one_line_d", 3)]:
        if depth[n] != d:
            fail("%s at depth %d, expected %d (a scope not ended by the exception?)" % (n, depth[n], d))
    deepest = max(d for n, d in rows if n == "layer_body")
    if deepest != 7:
        fail("layer_body deepest at %d, expected 7 (try, macro, 3 x forward + body)" % deepest)

    by_region = collections.defaultdict(dict)
    for a in args:
        k = int(a["kind"])
        v = (int(a["i"]) if k == ARG_INT else float(a["d"]) if k == ARG_DOUBLE else strings[a["s"]]
             if k == ARG_STRING else [int(x) for x in a["dims"][:int(a["ndims"])]])
        by_region[strings[regions[a["region"]]["name"]]][strings[a["key"]]] = v
    want_args = {"batch": 32, "lr": 0.5, "flag": 1, "mode": "train", "weight": [128, 256], "bias": [256],
                 "x": [4, 8, 16]}
    if by_region["aten::linear"] != want_args:
        fail("aten::linear args %s, expected %s" % (by_region["aten::linear"], want_args))
    if cxx17 and by_region["view_name"] != {"view": "and_more"}:
        fail("view_name args %s" % by_region["view_name"])
    print("cxx_api%s: %d regions, arguments and nesting as expected" % (" (C++17)" if cxx17 else "", len(rows)))


if __name__ == "__main__":
    main()
