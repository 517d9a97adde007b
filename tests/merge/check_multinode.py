"""Collective mode across nodes: `mpirun --host a:K1,b:K2 xsmerge RUN -o OUT`
on a cluster, emulated here by Open MPI's rsh launcher with an agent
(fake_rsh.sh) that starts each "node"'s daemon on this machine. Open MPI
then puts the processes of each host in their own shared-memory
communicator and connects the hosts over TCP, so xsmerge takes its
across-nodes paths: every node loads every rank file, its processes
dividing them and mapping each other's tables (no table crosses nodes),
the analysis runs on process 0, trace.pftrace's places go from node to
node. Every layout (one process a node, two a node, uneven) must
write exactly the serial merge's bytes and summary, for the run kinds of
merge_collective, with and without the helper that starts before MPI_Init,
streamed, and a damaged file must give the serial merge's error (or with
--partial its notes and files)."""
import os
import shutil
import subprocess
import sys

from mergetest import XSMERGE, check, collective_runs, finish, make_run, merge_once, pairs, same_dirs, tmpdir

maker, agent = sys.argv[1], sys.argv[2]
mpiexec = os.environ.get("MPIEXEC") or "mpirun"
base = tmpdir()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", TMPDIR=base)
# host names of this test only, so that two tests never share a node's
# shared-memory directory
tag = str(os.getpid())
hosts_a, hosts_b = "nodeA" + tag, "nodeB" + tag
layouts = (("%s:1,%s:1" % (hosts_a, hosts_b), 2), ("%s:2,%s:2" % (hosts_a, hosts_b), 4),
           ("%s:1,%s:2" % (hosts_a, hosts_b), 3))


def merge_on_nodes(hosts, k, run, out, *extra, more=None):
    """hosts None: all k processes on this one node."""
    nodes = ["--mca", "plm_rsh_agent", agent, "--host", hosts] if hosts else []
    cmd = [mpiexec] + nodes + ["-np", str(k), XSMERGE, run, "-o", out] + list(extra)
    for attempt in range(3):
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, **(more or {})), timeout=240)
        # two daemons on one machine: about one start in 400 fails in Open
        # MPI's own start-up (its PMIx store), before xsmerge runs; again
        if "ORTE was unable to reliably start" not in p.stderr:
            break
        print("note: a daemon of the emulated nodes did not start (attempt %d): %s" % (
            attempt + 1, (p.stderr.strip().splitlines() or [""])[0]))
    return p


def xsmerge_lines(stderr, out):
    # mpirun adds its own lines (exit codes); keep xsmerge's, paths made alike
    return "".join(x for x in stderr.replace(out, "OUT").splitlines(True) if x.startswith("xsmerge"))


# is this an Open MPI whose rsh launcher takes the agent? (another MPI's
# mpiexec has its own way to name hosts: say so rather than pass quietly;
# the probe runs `true`, so that a failing xsmerge is never taken for it)
p = subprocess.run([mpiexec, "--mca", "plm_rsh_agent", agent, "--host", layouts[0][0], "-np", "2", "true"],
                   capture_output=True, text=True, env=env, timeout=120)
if p.returncode != 0:
    print("note: %s cannot start processes on emulated hosts (%s); multi-node collective mode is not tested here"
          % (mpiexec, (p.stderr.strip().splitlines() or ["no message"])[-1]))
    sys.exit(77)

runs = collective_runs(maker, base) + [
        make_run(maker, "unrecv", os.path.join(base, "unrecv"), 3),
        # tables of several 8192-row chunks: with 2 x 2 processes, 1 and 2
        # encode a third of merged.h5's chunks each, 2 on the other node
        make_run(maker, "big", os.path.join(base, "bigh5"), 5, 30000)]

# every layout, and the helper turned off on the layout of two a node;
# each run on one layout of them (diagonally, in every build: the full
# product, 48 merges over two emulated nodes, was 2 of make test's 10
# minutes; what differs by run kind is merge_collective's, which takes the
# product on one node)
for run, (hosts, k, early) in pairs(runs, [l + ("",) for l in layouts] + [layouts[1] + ("0",)], diagonal=True):
    serial = run + "-serial"
    rc, so, se = merge_once(run, serial)
    check(rc == 0, "serial merge of %s (%s)" % (run, se))
    par = "%s-%s-np%d-%s" % (run, hosts.replace(",", "_").replace(":", ""), k, early)
    p = merge_on_nodes(hosts, k, run, par, more={"XSPROF_MERGE_EARLY": early})
    what = "%s on %s, XSPROF_MERGE_EARLY=%r" % (os.path.basename(run), hosts, early)
    check(p.returncode == 0, "merge %s: %s" % (what, p.stderr[-2000:]))
    same_dirs(serial, par, "(%s)" % what)
    check(xsmerge_lines(p.stderr, par) == se.replace(serial, "OUT"), "%s: stderr differs:\n%s\n--- serial:\n%s" % (what, p.stderr, se))
    check(p.stdout == so, "%s: summary differs:\n%s\n--- serial:\n%s" % (what, p.stdout, so))

# the paths taken: the two processes of each node divide the run's files,
# map each other's tables and divide matching, as on one node; the
# helper's loads are used on every node; with one process on a node it
# loads every file itself
p = merge_on_nodes(layouts[1][0], 4, runs[0], runs[0] + "-times", more={"XSPROF_MERGE_TIMES": "1"})
early = p.stderr.count("time load (begun before MPI_Init)")
mapped = p.stderr.count("time read (event tables mapped)")
divided = p.stderr.count("time match (divided)")
check(p.returncode == 0 and early == 4 and mapped == 4 and divided == 4,
      "2 nodes x 2: %d processes loaded early, %d mapped, %d divided matching (want 4 each): %s"
      % (early, mapped, divided, p.stderr[-2000:]))
q = merge_on_nodes(layouts[2][0], 3, runs[0], runs[0] + "-times3", more={"XSPROF_MERGE_TIMES": "1"})
alone = [x for x in q.stderr.splitlines() if x.startswith("xsmerge[0/3]: time read ")]
mapped = q.stderr.count("time read (event tables mapped)")
check(q.returncode == 0 and len(alone) == 1 and "mapped" not in alone[0] and mapped == 2,
      "1 + 2 processes: process 0 alone on its node maps nothing, the other node's two map (%d): %s"
      % (mapped, q.stderr[-2000:]))
# ... and merged.h5's chunks: processes 1 and 2 write no other product
# (across nodes the analysis runs on process 0, trace.json on 3) and help,
# when a node has a core for each of its two processes
helped = p.stderr.count("time merged.h5 (helping)")
want = 2 if (os.cpu_count() or 1) >= 2 else 0
check(helped == want, "2 nodes x 2: %d processes helped with merged.h5, expected %d" % (helped, want))

# a time window (and a rank selection) compacts the tables, so they are not
# mapped on one node either: each process converts and matches its own
# copies, and the counting passes and trace preparation are divided by
# allreduce, on one node as across nodes
windows = ((runs[0], ("--from", "2ms", "--to", "7ms")), (runs[2], ("--from", "50us", "--to", "200us")),
           (runs[0], ("--from", "1ms", "--ranks", "0-1,3")))
for (run, extra), (hosts, k) in pairs(windows, ((None, 2),) + layouts[:2]):
    serial = "%s-serial-window%d" % (run, windows.index((run, extra)))
    rc, so, se = merge_once(run, serial, *extra)
    check(rc == 0, "serial merge %s of %s: %s" % (extra, run, se))
    par = "%s-window-np%d-%s" % (run, k, "nodes" if hosts else "one")
    p = merge_on_nodes(hosts, k, run, par, *extra)
    what = "%s %s on %s" % (os.path.basename(run), " ".join(extra), hosts or "one node")
    check(p.returncode == 0, "merge %s: %s" % (what, p.stderr[-2000:]))
    same_dirs(serial, par, "(%s)" % what)
    check(p.stdout == so and xsmerge_lines(p.stderr, par) == se.replace(serial, "OUT"),
          "%s: summary or notes differ:\n%s%s\n--- serial:\n%s%s" % (what, p.stdout, p.stderr, so, se))
    shutil.rmtree(par, ignore_errors=True)

# streamed across nodes: the files of a streamed serial merge
for run, (hosts, k) in pairs((runs[0], runs[2]), layouts):
    serial = run + "-serial-stream"
    rc, so, se = merge_once(run, serial, "--stream", "-q")
    check(rc == 0, "serial streamed merge of %s: %s" % (run, se))
    par = run + "-stream-np%d" % k
    p = merge_on_nodes(hosts, k, run, par, "--stream", "-q")
    check(p.returncode == 0, "streamed merge on %s: %s" % (hosts, p.stderr[-2000:]))
    same_dirs(serial, par, "(streamed %s on %s)" % (os.path.basename(run), hosts))

# a damaged file (rank 2 of 5): the serial merge's one error line, or with
# --partial its notes and files, whichever node met it
damaged = os.path.join(base, "damaged")
make_run(maker, "big", damaged, 5, 3000)
with open(os.path.join(damaged, "rank-00002.h5"), "r+b") as f:
    f.seek(4096)
    f.write(b"\xff" * 8192)
for extra, (hosts, k) in pairs(((), ("--partial",)), layouts):
    out = damaged + "-serial" + "".join(extra)
    rc, so, se = merge_once(damaged, out, *extra)
    par = "%s-np%d%s" % (damaged, k, "".join(extra))
    p = merge_on_nodes(hosts, k, damaged, par, *extra)
    what = "damaged run %s on %s" % (" ".join(extra), hosts)
    check(p.returncode == rc, "%s: exit %d, serial %d" % (what, p.returncode, rc))
    check(xsmerge_lines(p.stderr, par) == se.replace(out, "OUT"), "%s: stderr differs:\n%s\n--- serial:\n%s" % (what, p.stderr, se))
    if rc == 0:
        same_dirs(out, par, "(%s)" % what)
    else:
        check("rank-00002.h5" in se and not os.path.exists(par), "%s: one error naming the file: %r" % (what, se))

for h in (hosts_a, hosts_b):
    shutil.rmtree(os.path.join(base, "xsprof-fake-node-%s-%d" % (h, os.getuid())), ignore_errors=True)
finish("merge_multinode")
