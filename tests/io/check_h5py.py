"""Reads the round-trip rank file (tests/io/test_io_roundtrip.c) with h5py,
as a user would, and checks its content against what the fixture recorded.
usage: check_h5py.py RANK_FILE"""
import sys

import h5py
import numpy as np

path = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


with h5py.File(path, "r") as f:
    a = f.attrs

    def s(name):
        v = a[name]
        return v.decode() if isinstance(v, bytes) else str(v)

    check(s("format") == "xsprof-rank", "format attribute")
    check(int(a["format_version"]) == 2, "format_version")
    check(int(a["rank"]) == 3 and int(a["size"]) == 8, "rank/size")
    check(int(a["pid"]) == 123456789, "pid")
    check(s("host") == "node-a" and s("job_id") == "job-77", "host/job_id")
    check(s("command") == "./app --size 10 'quoted arg'", "command: " + s("command"))
    check(s("clock_units") == "ns" and s("clock_source") == "CLOCK_MONOTONIC_RAW", "clock")
    check(s("mpi_version") == "Open MPI v4.1.4", "mpi_version")
    check(s("end_state") == "finalized", "end_state")
    check(int(a["truncated"]) == 0 and int(a["recovered"]) == 0, "truncated/recovered")
    check(int(a["dropped"]) == 7 and int(a["anomalies"]) == 2, "dropped/anomalies")
    check(int(a["start_realtime_ns"]) == 1763700000123456789, "start_realtime_ns")

    strings = [x.decode("utf-8") for x in f["/definitions/strings"][:]]
    check(len(strings) == 23 and strings[0] == "main", "strings table")
    check(strings[22] == "custom value \u00e9", "utf-8 string")

    regions = f["/events/regions"][:]
    args = f["/events/args"][:]
    check(regions.dtype.names == ("t_begin", "t_end", "name", "thread", "depth", "category", "nargs", "args"),
          "region fields %s" % (regions.dtype.names,))
    check(len(regions) == 1600 and len(args) == 2000, "%d regions %d args" % (len(regions), len(args)))
    for t in (0, 1):
        r = regions[regions["thread"] == t]
        check(len(r) == 800, "thread %d rows" % t)
        # Completion order: t_end never goes back within a thread.
        check(bool(np.all(np.diff(r["t_end"]) >= 0)), "thread %d completion order" % t)
        check(bool(np.all(r["t_end"] >= r["t_begin"])), "thread %d durations" % t)
    names = {strings[n] for n in regions["name"]}
    check(names == {"solve", "step"}, "region names %s" % names)
    with_args = np.nonzero(regions["nargs"])[0]
    check(bool(np.all(args["region"][regions["args"][with_args]] == with_args)), "args point back to regions")
    outer = regions[regions["depth"] == 0]
    check(len(outer) == 400 and bool(np.all(outer["nargs"] == 2)), "outer regions carry 2 args")
    first = args[outer["args"][0]]
    check(strings[first["key"]] == "iters" and first["i"] == 0, "first outer arg")

    mpi = f["/events/mpi"][:]
    check(len(mpi) == 1 and strings[mpi["op"][0]] == "MPI_Send" and mpi["peer"][0] == 2
          and mpi["bytes_sent"][0] == 1 << 40, "mpi row")
    gpu = f["/events/gpu"][:]
    check(len(gpu) == 1 and list(gpu["grid"][0]) == [10, 20, 30], "gpu row")
    comms = f["/definitions/comms"][:]
    members = f["/definitions/comm_members"][:]
    check(len(comms) == 1 and list(members[comms["members"][0]:comms["members"][0] + comms["size"][0]]) == [0, 2, 1],
          "comm members")
    threads = f["/definitions/threads"][:]
    check(list(threads["dropped"]) == [0, 7], "per-thread drops")
    meta = {strings[k]: strings[v] for k, v in f["/definitions/metadata"][:]}
    check(meta.get("custom_key") == "custom value \u00e9", "metadata")
    check(len(f["/clock/samples"]) == 2 and len(f["/events/memory"]) == 2 and len(f["/events/counters"]) == 1
          and len(f["/events/instants"]) == 1 and len(f["/definitions/topology"]) == 1, "small tables")

for x in failures:
    print("check_h5py: FAILED:", x)
print("check_h5py: %s" % ("all checks passed" if not failures else "%d failures" % len(failures)))
sys.exit(1 if failures else 0)
