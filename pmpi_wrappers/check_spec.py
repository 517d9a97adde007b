#!/usr/bin/env python3
"""pmpi_wrappers/check_spec.py — fail when mpi_prototypes.txt and the installed
mpi.h disagree (a function added, removed or changed its prototype).

Usage: check_spec.py SPEC_FILE STAMP CC [CFLAGS...]
Runs the C preprocessor on <mpi.h> with the given compiler and flags, takes
every MPI_* function declaration and compares name by name. Writes STAMP on
success so the build can depend on the check."""
import re
import subprocess
import sys


def normalize(args):
    args = re.sub(r"\s*,\s*", ", ", args.strip())
    args = re.sub(r"\s*\*\s*", " *", args).replace("* *", "**").replace(" [", "[")
    return args


def from_header(cc):
    src = subprocess.run(cc + ["-E", "-P", "-x", "c", "-"], input="#include <mpi.h>\n",
                         capture_output=True, text=True, check=True).stdout
    # attributes (deprecation notes, visibility) are not part of the prototype
    src = re.sub(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)", "", src)
    src = re.sub(r"\s+", " ", src)
    protos = {}
    for st in src.split(";"):
        st = st.strip().split("}")[-1].strip()
        m = re.fullmatch(r"(?:extern\s+)?((?:const\s+)?\w+\s*\**)\s*\b(MPI_\w+)\s*\((.*)\)", st)
        if m:
            protos[m.group(2)] = "%s %s(%s)" % (m.group(1).strip(), m.group(2), normalize(m.group(3)))
    return protos


def from_spec(path):
    protos = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                m = re.fullmatch(r"(.*?)\b(MPI_\w+)\((.*)\)", line)
                protos[m.group(2)] = "%s %s(%s)" % (m.group(1).strip(), m.group(2), normalize(m.group(3)))
    return protos


def main():
    if len(sys.argv) < 4:
        sys.stderr.write("usage: check_spec.py SPEC_FILE STAMP CC [CFLAGS...]\n")
        return 2
    spec, stamp, cc = sys.argv[1], sys.argv[2], sys.argv[3:]
    header, mine = from_header(cc), from_spec(spec)
    errors = []
    for n in sorted(set(header) - set(mine)):
        errors.append("in mpi.h, missing from the spec: %s" % header[n])
    for n in sorted(set(mine) - set(header)):
        errors.append("in the spec, not in mpi.h: %s" % mine[n])
    for n in sorted(set(mine) & set(header)):
        if mine[n] != header[n]:
            errors.append("prototype differs:\n  spec:  %s\n  mpi.h: %s" % (mine[n], header[n]))
    if errors:
        sys.stderr.write("check_spec: %s disagrees with mpi.h (%d problems):\n%s\n" %
                         (spec, len(errors), "\n".join(errors)))
        return 1
    with open(stamp, "w") as f:
        f.write("%d functions\n" % len(mine))
    print("check_spec: %d MPI functions, spec matches mpi.h" % len(mine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
