"""tests/mpi/callgrind_out.py — reads a callgrind.out as the tests need it
(valgrind's Callgrind Format Specification, the parts xsmerge writes: name
compression of files and functions, positions: line, a calls= line whose
next cost line is the call's inclusive cost)."""
import re


def self_costs(path):
    """{(file, function): {line: {event: self cost}}}"""
    names, cur, out, events, after_call = {"fl": {}, "fn": {}}, {}, {}, [], False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            m = re.match(r"(c?f[lie]|c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind = "fn" if m.group(1).endswith("fn") else "fl"
                if m.group(3) is not None:
                    names[kind][m.group(2)] = m.group(3)
                cur[m.group(1)] = names[kind].get(m.group(2))
                continue
            if line.startswith("calls="):
                after_call = True
                continue
            m = re.match(r"(\d+)((?: \d+)*)$", line)
            if m:
                if not after_call:
                    place = out.setdefault((cur.get("fl"), cur.get("fn")), {}).setdefault(int(m.group(1)), {})
                    for e, v in zip(events, m.group(2).split()):
                        place[e] = place.get(e, 0) + int(v)
                after_call = False
    return out
