"""The names scopes record, in the rank file: dynamic names each time,
literal names per site, qualified XSPROF_FUNCTION() names.

usage: check_names.py c|cxx APP WORK_DIR
"""
import collections
import os
import shutil
import subprocess
import sys

import h5py

EXPECTED = {
    "c": {"aten::add": 2, "aten::mul": 2, "aten::conv2d": 2, "inline_a": 2, "inline_b": 2,
          "c_function": 2, "literal_outer": 3, "literal_inner": 3},
    "cxx": {"net::Encoder::Encoder": 1, "net::Encoder::forward": 2, "net::Decoder::forward": 2,
            "net::Encoder::operator<": 2, "net::outer()::lambda": 2, "net::repeat": 4,
            "aten::add": 2, "aten::mul": 2, "aten::conv2d": 2},
}


def main():
    kind, app, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    env = dict(os.environ, XSPROF_OUTPUT=work)
    p = subprocess.run([app], env=env, capture_output=True, text=True)
    if p.returncode != 0 or "done" not in p.stdout:
        print("FAIL: %s exited %d: %s%s" % (app, p.returncode, p.stdout, p.stderr))
        sys.exit(1)
    with h5py.File(os.path.join(work, "rank-00000.h5"), "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else str(s) for s in f["/definitions/strings"][()]]
        got = collections.Counter(strings[r["name"]] for r in f["/events/regions"][()])
    if dict(got) != EXPECTED[kind]:
        print("FAIL: regions recorded %s\n      expected         %s" % (dict(sorted(got.items())),
                                                                      dict(sorted(EXPECTED[kind].items()))))
        sys.exit(1)
    print("%s: %d region names, %d regions as expected" % (kind, len(got), sum(got.values())))


if __name__ == "__main__":
    main()
