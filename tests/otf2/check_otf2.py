#!/usr/bin/python3
"""tests/otf2/check_otf2.py — trace.otf2 end to end: run tests/otf2/otf2_prog
under mpiexec with libxsprof-mpi.so preloaded, merge with
`xsmerge --outputs otf2,h5,report`, and check the archive with the Score-P
tool chain's own readers:

  check_otf2.py full PROG    the 4-rank program: otf2-print reads it without
                             error, its event counts agree with merged.h5, the
                             definitions are what Scalasca needs (location
                             groups = ranks, COMM_LOCATIONS first, MPI regions
                             with source file "MPI", MPI_Init/MPI_Finalize), the
                             events nest per location with every MPI record
                             inside its call, Late Sender and Wait at NxN
                             recomputed from the OTF2 events alone agree with
                             report.json within 1 %; the archive of a
                             collective merge (mpirun -np 2 xsmerge) is the
                             same; a write that fails is one line naming the
                             archive; the streamed merge (--stream, serial and
                             under mpirun -np 2) writes the same archive, which
                             passes the same checks against its own merged.h5
                             and report.json
  check_otf2.py crash PROG   rank 3 sends a message nobody receives and is
                             killed: the archive is valid, the message is left
                             out with a note; in memory and streamed, the same
                             archive
  check_otf2.py gpu MAKE_RUNS  runs of tests/merge/make_runs.c with GPU work
                             on several devices and streams, CUDA API calls and
                             counters (no GPU here): a stream location per
                             device and stream in an accelerator group of its
                             rank, every GPU row an Enter/Leave, every counter
                             row a Metric; streamed, the same archive

Environment (set by xsprof_add_test): XSMERGE, XSPROF_MPI_LIB, MPIEXEC."""
import collections
import json
import os
import resource
import shutil
import subprocess
import sys

import h5py
import otf2


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def env(name):
    v = os.environ.get(name)
    if not v:
        fail(f"{name} is not set")
    return v


def profile(work, prog, *args):
    rundir = os.path.join(work, "run")
    r = run([env("MPIEXEC"), "-np", "4", "--oversubscribe", "-x", "LD_PRELOAD=" + env("XSPROF_MPI_LIB"),
             "-x", "XSPROF_OUTPUT=" + rundir, prog, *args], timeout=120)
    return rundir, r


def merge(rundir, out, *extra, np=0):
    cmd = [env("XSMERGE"), rundir, "-o", out, *extra]
    if np:
        cmd = [env("MPIEXEC"), "-np", str(np), "--oversubscribe"] + cmd
    r = run(cmd, timeout=300)
    print(r.stdout + r.stderr)
    return r


def otf2_print(out, *flags):
    r = run(["otf2-print", *flags, os.path.join(out, "trace.otf2")], timeout=120)
    if r.returncode != 0 or r.stderr.strip():
        fail(f"otf2-print {' '.join(flags)}: exit {r.returncode}: {r.stderr.strip()[:2000]}")
    return r.stdout


def print_counts(text):
    """Events per (record type, location) in otf2-print's listing."""
    c = collections.Counter()
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isupper() and f[0] not in ("EVENT",) and f[1].isdigit():
            c[f[0]] += 1
    return c


def check_defs(out, nranks):
    d = otf2_print(out, "-G")
    lines = [l for l in d.splitlines() if l.strip()]
    if not any(l.startswith("CLOCK_PROPERTIES") and "Ticks per Seconds: 1000000000" in l for l in lines):
        fail("no clock properties with 1e9 ticks per second")
    groups = [l for l in lines if l.startswith("GROUP ")]
    if not groups or "COMM_LOCATIONS" not in groups[0]:
        fail("the COMM_LOCATIONS group is not the first group: " + (groups[0] if groups else "no group"))
    if sum("COMM_LOCATIONS" in g for g in groups) != 1:
        fail("not exactly one COMM_LOCATIONS group")
    if f"{nranks} Members" not in groups[0]:
        fail(f"COMM_LOCATIONS does not list {nranks} locations: {groups[0]}")
    regions = [l for l in lines if l.startswith("REGION ")]
    for need in ("MPI_Init", "MPI_Finalize"):
        if not any(f'Name: "{need}"' in l for l in regions):
            fail(f"no region {need}")
    for l in regions:
        if "Paradigm: MPI" in l and 'File: "MPI"' not in l:
            fail("an MPI region without source file \"MPI\": " + l)
    if not any("Paradigm: USER" in l and '"exchange"' in l for l in regions):
        fail("no user region 'exchange'")
    if not any(l.startswith("SYSTEM_TREE_NODE") and 'Class: "node"' in l for l in lines):
        fail("no system tree node per host")
    with otf2.reader.open(os.path.join(out, "trace.otf2")) as t:
        dd = t.definitions
        lgs = sorted(lg._ref for lg in dd.location_groups)
        if lgs != list(range(nranks)):
            fail(f"location group ids {lgs}, not the ranks")
        comms = {c.name: c for c in dd.comms}
        split = [c for c in dd.comms if c.name == "MPI_Comm_split"]
        if "MPI_COMM_WORLD" not in comms or len(split) != 2:
            fail(f"communicators {[c.name for c in dd.comms]}")
        for c in split:
            if c.parent is None or c.parent.name != "MPI_COMM_WORLD" or len(c.group.members) != nranks // 2:
                fail(f"split communicator {c}")
    print(f"definitions: {len(regions)} regions, {len(groups)} groups; COMM_LOCATIONS first")


def read_events(out):
    """Per location (rank, is MPI location) the events, with nesting checked:
    Enter/Leave balanced, times non-decreasing, MPI records inside an MPI call."""
    evs = collections.defaultdict(list)
    with otf2.reader.open(os.path.join(out, "trace.otf2")) as t:
        for loc, ev in t.events:
            evs[loc].append(ev)
    mpi_records = (otf2.events.MpiSend, otf2.events.MpiIsend, otf2.events.MpiRecv, otf2.events.MpiIrecv,
                   otf2.events.MpiIrecvRequest, otf2.events.MpiIsendComplete, otf2.events.MpiCollectiveBegin,
                   otf2.events.MpiCollectiveEnd)
    for loc, lst in evs.items():
        stack, last = [], 0
        for ev in lst:
            if ev.time < last:
                fail(f"location {loc._ref}: time goes back at {ev}")
            last = ev.time
            if isinstance(ev, otf2.events.Enter):
                stack.append(ev)
            elif isinstance(ev, otf2.events.Leave):
                if not stack or stack[-1].region != ev.region:
                    fail(f"location {loc._ref}: Leave {ev.region.name} does not close the innermost Enter")
                stack.pop()
            elif isinstance(ev, mpi_records):
                if not stack or stack[-1].region.paradigm != otf2.Paradigm.MPI:
                    fail(f"location {loc._ref}: {type(ev).__name__} outside an MPI call")
        if stack:
            fail(f"location {loc._ref}: {len(stack)} regions never left")
    return evs


def calls(evs):
    """Per location the MPI calls: [enter, leave, region name, [records]]."""
    res = {}
    for loc, lst in evs.items():
        out, stack = [], []
        for ev in lst:
            if isinstance(ev, otf2.events.Enter):
                stack.append([ev.time, None, ev.region.name, [], ev.region.paradigm == otf2.Paradigm.MPI])
            elif isinstance(ev, otf2.events.Leave):
                c = stack.pop()
                c[1] = ev.time
                if c[4]:
                    out.append(c)
            else:
                stack[-1][3].append(ev)
        res[loc] = out
    return res


NXN = {otf2.CollectiveOp.ALLREDUCE, otf2.CollectiveOp.ALLGATHER, otf2.CollectiveOp.ALLGATHERV,
       otf2.CollectiveOp.ALLTOALL, otf2.CollectiveOp.ALLTOALLV, otf2.CollectiveOp.ALLTOALLW,
       otf2.CollectiveOp.REDUCE_SCATTER, otf2.CollectiveOp.REDUCE_SCATTER_BLOCK}


def recompute(evs, tps):
    """Late Sender and Wait at NxN (Scalasca's definitions, merge/analyze
    README) from the OTF2 events alone, in seconds."""
    cs = calls(evs)
    rank_of = {loc: loc.group._ref for loc in cs}
    # sends in order per (src, dst, comm, tag), with the Enter of their call
    sends = collections.defaultdict(collections.deque)
    for loc, lst in cs.items():
        for c in lst:
            for ev in c[3]:
                if isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                    dst = ev.communicator.group.members[ev.receiver].group._ref
                    sends[(rank_of[loc], dst, ev.communicator._ref, ev.msg_tag)].append(c[0])
    late = 0
    for loc, lst in cs.items():
        for c in lst:
            waits = []
            for ev in c[3]:
                if isinstance(ev, (otf2.events.MpiRecv, otf2.events.MpiIrecv)):
                    src = ev.communicator.group.members[ev.sender].group._ref
                    q = sends[(src, rank_of[loc], ev.communicator._ref, ev.msg_tag)]
                    if not q:
                        fail(f"a receive on rank {rank_of[loc]} without its send in the trace")
                    e_send = q.popleft()
                    waits.append(max(0, min(e_send, c[1]) - c[0]))
            if waits:
                late += max(waits)  # one Wait completing several messages counts once
    # collective instances: the k-th collective of each member on a comm
    inst = collections.defaultdict(list)
    seen = collections.Counter()
    for loc, lst in cs.items():
        for c in lst:
            for ev in c[3]:
                if isinstance(ev, otf2.events.MpiCollectiveEnd):
                    key = (rank_of[loc], ev.communicator._ref)
                    inst[(ev.communicator._ref, seen[key])].append((c[0], c[1], ev))
                    seen[key] += 1
    nxn = 0
    for members in inst.values():
        if members[0][2].collective_op not in NXN:
            continue
        last = max(m[0] for m in members)
        for e, x, ev in members:
            if ev.size_received:
                nxn += max(0, min(last, x) - e)
    return late / tps, nxn / tps


def check_counts(out, evs):
    c = print_counts(otf2_print(out))
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        mpi = f["mpi"][:]
        nreg = len(f["regions"]) + len(f["gpu"])
        ncounters = len(f["counters"])
        msgs = f["messages"][:]
        colls_h5 = f["collectives"][:]
        comm_size = {int(c["id"]): int(c["size"]) for c in f["comms"][:]}
        strings = [s.decode() if isinstance(s, bytes) else s for s in f["strings"][:]]
    calls_rows = mpi[mpi["kind"] != 10]
    want = {"ENTER": nreg + len(calls_rows), "LEAVE": nreg + len(calls_rows)}
    isend = sum(1 for m in msgs if mpi[m["send_row"]]["kind"] == 4)
    irecv = sum(1 for m in msgs if m["recv_post_row"] >= 0)
    want["MPI_SEND"] = len(msgs) - isend
    want["MPI_ISEND"] = isend
    want["MPI_ISEND_COMPLETE"] = isend
    want["MPI_RECV"] = len(msgs) - irecv
    want["MPI_IRECV"] = irecv
    want["MPI_IRECV_REQUEST"] = irecv
    colls = ("MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Allgather")
    # instances every member of the communicator reached (the others' records are left out)
    ncoll = sum(int(c["n"]) for c in colls_h5 if strings[c["op"]] in colls and c["n"] == comm_size[int(c["comm"])])
    want["MPI_COLLECTIVE_BEGIN"] = want["MPI_COLLECTIVE_END"] = ncoll
    want["METRIC"] = ncounters
    for k, v in want.items():
        if c[k] != v:
            fail(f"otf2-print lists {c[k]} {k} events, merged.h5 says {v}")
    total = sum(len(v) for v in evs.values())
    if total != sum(c.values()):
        fail(f"python3-otf2 read {total} events, otf2-print {sum(c.values())}")
    print("event counts agree with merged.h5: " + ", ".join(f"{k} {v}" for k, v in sorted(want.items())))
    return want


def waits_of(out):
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    w = {x["kind"]: x["seconds"] for x in rep["wait_states"]}
    return w.get("Late Sender", 0) + w.get("Late Sender / Wrong Order", 0), w.get("Wait at NxN", 0)


def archive_bytes(out):
    """The archive's files; the anchor as otf2-print -A lists it without its
    trace identifier, which libotf2 draws at random for every archive."""
    anchor = otf2_print(out, "-A").splitlines()
    res = {"trace.otf2": [l for l in anchor if not l.startswith("Trace identifier")]}
    for name in ("trace.def",):
        res[name] = open(os.path.join(out, name), "rb").read()
    for name in sorted(os.listdir(os.path.join(out, "trace"))):
        res["trace/" + name] = open(os.path.join(out, "trace", name), "rb").read()
    return res


def check_full(out):
    """The definitions, the event counts against merged.h5 and the waits
    recomputed from the events against report.json."""
    check_defs(out, 4)
    evs = read_events(out)
    check_counts(out, evs)
    with otf2.reader.open(os.path.join(out, "trace.otf2")) as t:
        tps = t.definitions.clock_properties.timer_resolution
    ls, nxn = recompute(evs, tps)
    rls, rnxn = waits_of(out)
    print(f"Late Sender: OTF2 {ls:.6f} s, report.json {rls:.6f} s; Wait at NxN: OTF2 {nxn:.6f} s, "
          f"report.json {rnxn:.6f} s")
    if rls < 0.05 or rnxn < 0.03:
        fail("the planted waits are missing from report.json")
    for name, a, b in (("Late Sender", ls, rls), ("Wait at NxN", nxn, rnxn)):
        if abs(a - b) > 0.01 * b:
            fail(f"{name}: {a:.6f} s from the OTF2 events, {b:.6f} s in report.json (more than 1 % apart)")


def streamed(rundir, out, ref, products, np=0):
    """A --stream merge into out: it streamed (no note of an in-memory
    merge), and its archive is ref's, byte for byte, as otf2-print lists it too."""
    r = merge(rundir, out, "--stream", "--outputs", products, np=np)
    if r.returncode != 0:
        fail(f"xsmerge --stream exited {r.returncode}")
    if "in memory" in r.stderr:
        fail("the streamed merge went in memory: " + r.stderr)
    if archive_bytes(out) != archive_bytes(ref) or otf2_print(out) != otf2_print(ref):
        fail(f"the streamed trace.otf2 ({out}) differs from the in-memory one ({ref})")
    print(f"--stream{f' under mpirun -np {np}' if np else ''}: the same archive (definition and event files "
          "byte for byte, the same otf2-print listing)")
    return r


def full(prog):
    work = os.path.abspath("otf2_full")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rundir, r = profile(work, prog)
    if r.returncode != 0:
        fail(f"mpiexec exited {r.returncode}: {r.stdout} {r.stderr}")
    out = os.path.join(work, "out")
    r = merge(rundir, out, "--outputs", "otf2,h5,report", "-q")
    if r.returncode != 0:
        fail(f"xsmerge exited {r.returncode}")
    check_full(out)
    # collective mode: the same archive, byte for byte
    out2 = os.path.join(work, "out-np2")
    r = merge(rundir, out2, "--outputs", "otf2,h5,report", "-q", np=2)
    if r.returncode != 0:
        fail(f"mpirun -np 2 xsmerge exited {r.returncode}")
    if archive_bytes(out) != archive_bytes(out2):
        fail("the collective merge's trace.otf2 differs from the serial one")
    print("collective merge (-np 2): the same archive (definition and event files byte for byte)")
    # a merge without otf2 into the same directory removes the archive
    r = merge(rundir, out2, "--outputs", "h5", "-q")
    if r.returncode != 0 or any(os.path.exists(os.path.join(out2, n)) for n in ("trace.otf2", "trace.def", "trace")):
        fail("a merge without otf2 left the earlier archive in OUT_DIR")
    # a write that fails (a 1 KiB file size limit): one line naming the archive, nothing left
    out4 = os.path.join(work, "out-full")
    lim = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    r = run([env("XSMERGE"), rundir, "-o", out4, "--outputs", "otf2"], preexec_fn=lim, timeout=120)
    # xsmerge's own lines: a coverage build's runtime also fails to write its
    # .gcda counters at exit under that limit and says so (merge_bad_inputs too)
    said = "".join(x for x in r.stderr.splitlines(True) if not x.startswith("libgcov profiling error"))
    if r.returncode != 1 or said != f"xsmerge: {out4}/trace.otf2: File is too large\n" or os.path.exists(out4):
        fail(f"a trace.otf2 past the file size limit: exit {r.returncode}, {said!r}")
    print("a failed write: " + said.strip())
    # streamed: the same archive, and the same checks against the streamed
    # merged.h5 and report.json
    out3 = os.path.join(work, "out-stream")
    streamed(rundir, out3, out, "otf2,h5,report")
    check_full(out3)
    streamed(rundir, os.path.join(work, "out-stream-np2"), out, "otf2,pftrace", np=2)
    print("PASS")


def crash(prog):
    work = os.path.abspath("otf2_crash")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rundir, r = profile(work, prog, "crash")
    if r.returncode == 0:
        fail("the crash run exited 0")
    out = os.path.join(work, "out")
    r = merge(rundir, out, "--outputs", "otf2,h5")
    if r.returncode != 0:
        fail(f"xsmerge exited {r.returncode}")
    if "trace.otf2 leaves out" not in r.stderr:
        fail("no note on the messages left out")
    evs = read_events(out)
    want = check_counts(out, evs)
    for loc, lst in evs.items():
        for ev in lst:
            if isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)) and ev.msg_tag == 99:
                fail("the message nobody received is in the trace")
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        if not any(x["end_state"] != b"finalized" for x in f["ranks"][:]):
            fail("merged.h5 shows no rank that died")
    with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
        bcast = [c for c in f["collectives"][:] if c["n"] == 3]
    if len(bcast) != 1:
        fail(f"merged.h5 has {len(bcast)} incomplete collectives, the program makes one (a Bcast without rank 3)")
    entered = sum(1 for lst in evs.values() for ev in lst
                  if isinstance(ev, otf2.events.Enter) and ev.region.name == "MPI_Bcast")
    if entered != 3 or want["MPI_COLLECTIVE_BEGIN"] != 0:
        fail(f"the incomplete Bcast: {entered} calls, {want['MPI_COLLECTIVE_BEGIN']} collective records")
    print("the Bcast rank 3 never joined: its 3 calls are in the trace, without collective records")
    r = streamed(rundir, os.path.join(work, "out-stream"), out, "otf2,h5")
    if "trace.otf2 leaves out 1 message end(s)" not in r.stderr or "1 incomplete collective" not in r.stderr:
        fail("the streamed merge does not say what trace.otf2 leaves out")
    print("PASS")


def gpu(make_runs):
    for shape in ("gpu", "gpumpi"):
        work = os.path.abspath("otf2_" + shape)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        rundir, out = os.path.join(work, "run"), os.path.join(work, "out")
        r = run([make_runs, shape, rundir])
        if r.returncode != 0:
            fail(f"merge_make_runs {shape}: {r.stderr}")
        if merge(rundir, out, "--outputs", "otf2,h5", "-q").returncode != 0:
            fail(f"{shape}: xsmerge failed")
        evs = read_events(out)
        want = check_counts(out, evs)
        with h5py.File(os.path.join(out, "merged.h5"), "r") as f:
            g = f["gpu"][:]
        streams = {(int(x["rank"]), int(x["device"]), int(x["stream"])) for x in g if x["kind"] != 8}
        with otf2.reader.open(os.path.join(out, "trace.otf2")) as t:
            locs = [l for l in t.definitions.locations if l.type == otf2.LocationType.ACCELERATOR_STREAM]
            for l in locs:
                lg = l.group
                if lg.location_group_type != otf2.LocationGroupType.ACCELERATOR or \
                        lg.creating_location_group is None or lg.creating_location_group._ref != l._ref & 0xffffffff:
                    fail(f"{shape}: stream location {l} is not in an accelerator group its rank created")
        if len(locs) != len(streams):
            fail(f"{shape}: {len(locs)} stream locations, merged.h5 has {len(streams)} GPU streams")
        on_gpu = sum(1 for l, lst in evs.items() if l.type == otf2.LocationType.ACCELERATOR_STREAM
                     for ev in lst if isinstance(ev, otf2.events.Enter))
        if on_gpu != sum(1 for x in g if x["kind"] != 8):
            fail(f"{shape}: {on_gpu} Enters on stream locations for {sum(1 for x in g if x['kind'] != 8)} GPU rows")
        print(f"{shape}: {len(locs)} stream locations, {on_gpu} GPU activities, {want['METRIC']} metrics")
        streamed(rundir, os.path.join(work, "out-stream"), out, "otf2")
    print("PASS")


if __name__ == "__main__":
    modes = {"full": full, "crash": crash, "gpu": gpu}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        fail("usage: check_otf2.py full|crash|gpu PROG")
    modes[sys.argv[1]](sys.argv[2])
