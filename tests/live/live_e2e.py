#!/usr/bin/python3
"""End-to-end tests of xsmerge --live (merge/live) on real mpirun jobs.

  live_e2e.py job      a 4-rank job of ~20 s watched while it runs: /api/snapshot
                       polled with curl changes as it advances; the page loaded in
                       headless chromium shows the four ranks with MPI % within 5
                       points of the final report; a merge of the running job says
                       "running"; the end of the job is shown with the merge command;
                       an --alert that fires (stderr once, a banner) and one that does not
  live_e2e.py killed   rank 2 SIGKILLs itself mid-run: shown as ended early, and the
                       end of the job is said
  live_e2e.py p2p      a Late Sender (tests/report's planted program) found live as the merge finds it
  live_e2e.py bad      run directory missing / empty / another run's journal, port in
                       use, wrong token (403), path traversal, other methods, many
                       connections at once, bad options

Waits are bounded and say what they waited for; no wall-clock threshold is
asserted. Exit 77: a tool is missing (skip)."""
import atexit
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import urllib.error

SKIP = 77
STARTED = []  # processes to kill when a check fails (fail() exits at once)


@atexit.register
def _cleanup():
    for p in STARTED:
        if p.poll() is None:
            p.kill()


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def env_path(name):
    p = os.environ.get(name)
    if not p or not os.path.exists(p):
        fail(f"{name} is not set or does not exist ({p!r})")
    return p


def wait_for(what, fn, timeout):
    """fn() until it returns something true; fail naming `what` after timeout s."""
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            fail(f"waited {timeout} s for {what}")
        time.sleep(0.3)


def start_job(rundir, secs, rate, extra=()):
    cmd = [env_path("MPIEXEC"), "-np", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1", "-x", "LD_PRELOAD=" + env_path("XSPROF_MPI_LIB"),
           "-x", "XSPROF_OUTPUT=" + rundir, env_path("LIVE_JOB"), str(secs), str(rate)] + list(extra)
    print("+ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    STARTED.append(p)
    return p


class Live:
    """xsmerge --live on a free port; its URL read from its first lines."""

    def __init__(self, rundir, *args):
        self.err = tempfile.TemporaryFile(mode="w+")
        cmd = [env_path("XSMERGE"), "--live", rundir, "--port", "0"] + list(args)
        print("+ " + " ".join(cmd), flush=True)
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.err, text=True)
        STARTED.append(self.p)
        self.url = None
        lines = []

        def read():
            for line in self.p.stdout:
                lines.append(line)
                m = re.search(r"(http://\S+/)\?token=([0-9a-f]+)", line)
                if m:
                    self.base, self.token = m.group(1), m.group(2)
                    self.url = m.group(0)
        threading.Thread(target=read, daemon=True).start()
        wait_for("xsmerge --live to print its URL (got %r)" % lines, lambda: self.url or self.p.poll() is not None, 20)
        if not self.url:
            fail("xsmerge --live exited %s before serving: %s" % (self.p.returncode, self.stderr()))

    def api(self, path="api/snapshot", token=None):
        return self.base + path + "?token=" + (self.token if token is None else token)

    def snapshot(self):
        r = subprocess.run(["curl", "-s", "-f", "--max-time", "5", self.api()], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                fail("xsmerge --live did not stop within 15 s of SIGINT")
        return self.p.returncode


def chromium_dom(url):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    prof = tempfile.mkdtemp(prefix="xsl-chromium-")
    # at the normal priority: under nice 19, beside a full `ctest -j2`, it
    # loaded the page after the job's last 10 s had passed
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--user-data-dir=" + prof,
           "--dump-dom", url]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=90)
    finally:
        shutil.rmtree(prof, ignore_errors=True)
    return r.stdout


def report_mpi_pct(rundir, out):
    r = subprocess.run(["nice", "-n", "19", env_path("XSMERGE"), rundir, "-o", out, "-q", "--outputs", "report"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    if r.returncode != 0:
        fail("xsmerge %s exited %d: %s" % (rundir, r.returncode, r.stdout[-2000:]))
    rep = json.load(open(os.path.join(out, "report.json")))
    return rep, {x["rank"]: 100.0 * x["mpi_s"] / x["wall_s"] for x in rep["ranks"] if x["wall_s"] > 0}


def end_states(obj):
    """Every end_state in a report.json."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "end_state":
                yield v
            else:
                yield from end_states(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from end_states(v)


def job():
    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or not shutil.which("curl"):
        print("SKIP: chromium or curl is not installed (Debian packages chromium, curl)")
        sys.exit(SKIP)
    work = os.path.abspath("job")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rundir = os.path.join(work, "run")
    # started before the job: the directory does not exist yet; one alert that
    # fires (MPI takes ~25 % of each rank) and one that does not
    live = Live(rundir, "--alert", "mpi>10%", "--alert", "region:compute>5s")
    jp = start_job(rundir, 20, 2000)
    try:
        first = wait_for("4 running ranks with events in /api/snapshot",
                         lambda: (lambda s: s if s and len(s["ranks"]) == 4 and all(
                             r["state"] == "running" and r["events"] > 0 and r["wall_s"] > 0.5 for r in s["ranks"])
                             else None)(live.snapshot()), 40)
        if first["schema"] != "xsprof-live/1":
            fail("schema %r" % first["schema"])
        for key in ("rank", "state", "wall_s", "mpi_s", "wait_s", "events", "dropped"):
            if any(key not in r for r in first["ranks"]):
                fail("a rank of the snapshot lacks %r" % key)
        ev0 = sum(r["events"] for r in first["ranks"])
        later = wait_for("the snapshot's events to grow", lambda: (lambda s: s if s and sum(
            r["events"] for r in s["ranks"]) > ev0 else None)(live.snapshot()), 20)
        print("events %d -> %d, regions %s" % (ev0, sum(r["events"] for r in later["ranks"]),
                                               [x["name"] for x in later["regions"]]))
        if not any(x["name"] == "compute" for x in later["regions"]) or not any(
                x["op"] == "MPI_Recv" for x in later["mpi"]):
            fail("the top tables lack compute / MPI_Recv: %s %s" % (later["regions"], later["mpi"]))
        # a merge of the running job (not live) says its ranks run
        running = os.path.join(work, "merged-running")
        rep, _ = report_mpi_pct(rundir, running)
        states = set(end_states(rep))
        print("end states of a merge while running:", states)
        if "running" not in states or any("killed" in s for s in states):
            fail("a merge of the running job labels its ranks %s, not 'running'" % states)
        # the page in headless chromium, while the job runs, late enough that
        # the shares so far are most of the run's (on a shared machine a
        # job's shares drift while other processes take the CPUs)
        mid = wait_for("14 s of every rank in the snapshot", lambda: (lambda s: s if s and all(
            r["wall_s"] > 14 for r in s["ranks"]) else None)(live.snapshot()), 60)
        if not any(w["kind"] == "Wait at Barrier" for w in mid["wait_states"]):
            fail("no Wait at Barrier live (the ranks' unequal steps make them): %s" % mid["wait_states"])
        dom = chromium_dom(live.url)

        page = {}
        for m in re.finditer(r'<tr id="rank-(\d+)"[^>]*data-state="([^"]*)" data-mpi-pct="([\d.]+)"', dom):
            page[int(m.group(1))] = (m.group(2), float(m.group(3)))
        print("chromium page ranks:", page)
        # its snapshot is that of the moment it was served: all 4 running
        if sorted(page) != [0, 1, 2, 3] or any(s != "running" for s, _ in page.values()):
            fail("the page does not show 4 running ranks (was it loaded after the job?): %s" % page)
        for needle in ("compute", "MPI_Recv", "Wait at Barrier", "Chart.js", "<canvas"):
            if needle not in dom:
                fail("the page lacks %r" % needle)
        if jp.wait(timeout=120) != 0:
            fail("the job failed: " + jp.stdout.read()[-2000:])
        final = wait_for("job.state 'ended' in the snapshot",
                         lambda: (lambda s: s if s and s["job"]["state"] == "ended" else None)(live.snapshot()), 30)
        if any(r["state"] != "finished" for r in final["ranks"]):
            fail("ranks at the end: %s" % [r["state"] for r in final["ranks"]])
        if "xsmerge %s -o" % rundir not in final["job"]["merge_command"]:
            fail("the snapshot does not give the merge command: %r" % final["job"]["merge_command"])
        dom = chromium_dom(live.url)
        if "The job has ended" not in dom or "xsmerge " + rundir not in dom:
            fail("the page does not say the job ended with the merge command")
        wait_for("'the job has ended' on stderr", lambda: "the job has ended" in live.stderr(), 10)
        fired = [a["alert"] for a in final["alerts"] if a["fired"]]
        if fired != ["mpi>10%"] or live.stderr().count("alert mpi>10% fired on rank") != 1:
            fail("alerts fired: %s; stderr: %s" % (fired, live.stderr()))
        if "ALERT mpi&gt;10%" not in dom:
            fail("the page shows no banner for the alert that fired")
        rep, mpi = report_mpi_pct(rundir, os.path.join(work, "merged"))
        for r in range(4):
            live_pct = next(x["mpi_pct"] for x in final["ranks"] if x["rank"] == r)
            print("rank %d: MPI %% page (mid-run) %.1f, live at the end %.1f, report %.1f" % (
                r, page[r][1], live_pct, mpi[r]))
            if abs(page[r][1] - mpi[r]) > 5 or abs(live_pct - mpi[r]) > 5:
                fail("rank %d: MPI %% of the live view (page %.1f, end %.1f) is not within 5 points of the report's %.1f"
                     % (r, page[r][1], live_pct, mpi[r]))
        extra = [f for f in os.listdir(rundir) if not re.match(r"rank-\d+\.(h5|xsj)$", f)]
        if extra:
            fail("files in the run directory that the job did not write: %s" % extra)
    finally:
        if jp.poll() is None:
            jp.kill()
        rc = live.stop()
    if rc != 0:
        fail("xsmerge --live exited %s after SIGINT: %s" % (rc, live.stderr()))
    print("PASS")


def killed():
    work = os.path.abspath("killed")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rundir = os.path.join(work, "run")
    jp = start_job(rundir, 30, 1000, ["2", "3"])  # rank 2 SIGKILLs itself after 3 s
    live = Live(rundir)
    # the terminal table beside it: it ends with the job
    tty = subprocess.Popen([env_path("XSMERGE"), "--live", rundir, "--tty"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    STARTED.append(tty)
    try:
        seen = []

        def ended():
            s = live.snapshot()
            if s and len(s["ranks"]) == 4:
                seen.append([(r["state"], r["end_state"]) for r in s["ranks"]])
                if s["job"]["state"] == "ended":
                    return s
            return None
        s = wait_for("the job's end in /api/snapshot", ended, 90)
        print("ranks at the end:", [(r["state"], r["end_state"]) for r in s["ranks"]])
        r2 = s["ranks"][2]
        if r2["state"] != "ended early" or ("killed" not in r2["end_state"] and "SIGKILL" not in r2["end_state"]):
            fail("rank 2 (SIGKILL) at the end: %s %r" % (r2["state"], r2["end_state"]))
        if not any(st[2][0] == "running" for st in seen):
            fail("rank 2 was never seen running: %s" % seen[:3])
        if any(r["state"] == "running" for r in s["ranks"]):
            fail("a rank still runs when the job ended: %s" % s["ranks"])
        wait_for("'the job has ended' on stderr", lambda: "the job has ended" in live.stderr(), 10)
        if "xsmerge " + rundir + " -o" not in live.stderr():
            fail("stderr does not give the merge command: " + live.stderr())
        try:
            out, err = tty.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            fail("xsmerge --live --tty did not exit at the job's end")
        if tty.returncode != 0 or "The job has ended" not in out or "ended early" not in out:
            fail("--tty: exit %s, its last table:\n%s\n%s" % (tty.returncode, out[-1500:], err))
        print(out[out.rfind("xsprof live:"):])
        jp.wait(timeout=60)
    finally:
        for p in (jp, tty):
            if p.poll() is None:
                p.kill()
        rc = live.stop()
    if rc != 0:
        fail("xsmerge --live exited %s after SIGINT" % rc)
    print("PASS")


def p2p():
    """A Late Sender (tests/report's planted program: rank 0 sends 600 ms late
    to rank 1's blocking receive) is found live, as the merge finds it."""
    work = os.path.abspath("p2p")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rundir = os.path.join(work, "run")
    live = Live(rundir)
    cmd = [env_path("MPIEXEC"), "-np", "3", "--oversubscribe", "-x", "LD_PRELOAD=" + env_path("XSPROF_MPI_LIB"),
           "-x", "XSPROF_OUTPUT=" + rundir, env_path("PLANTED"), "late_sender", "600"]
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    if r.returncode != 0:
        fail("the planted job failed: " + r.stdout[-2000:])
    snap = wait_for("job.state 'ended'", lambda: (lambda s: s if s and s["job"]["state"] == "ended" else None)(
        live.snapshot()), 30)
    if live.stop() != 0:
        fail("xsmerge --live exited non-zero: " + live.stderr())
    rep, _ = report_mpi_pct(rundir, os.path.join(work, "merged"))
    got = {w["kind"]: w["seconds"] for w in snap["wait_states"]}
    want = {w["kind"]: w["seconds"] for w in rep["wait_states"]}
    print("Late Sender: live %.4f s, report %.4f s; rank 1 wait_s %.4f" % (
        got.get("Late Sender", 0), want["Late Sender"], snap["ranks"][1]["wait_s"]))
    if want["Late Sender"] < 0.5 or abs(got.get("Late Sender", 0) - want["Late Sender"]) > 0.01 * want["Late Sender"]:
        fail("live Late Sender %s s, the report's %s s" % (got.get("Late Sender"), want["Late Sender"]))
    print("PASS")


def http_status(url, method="GET"):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def raw(port, request):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
        return data


def bad():
    work = os.path.abspath("bad")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    xsm = env_path("XSMERGE")

    def usage(args, needle):
        r = subprocess.run([xsm, "--live"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
        lines = [x for x in r.stderr.splitlines() if x and not x.startswith("Try ")]
        if r.returncode != 1 or len(lines) != 1 or needle not in lines[0]:
            fail("xsmerge --live %s: exit %d, stderr %r (want exit 1 and one line with %r)" % (args, r.returncode,
                                                                                          r.stderr, needle))
    usage([], "missing RUN_DIR")
    usage([work, "--port", "http"], "--port")
    usage([work, "--alert", "cpu>3"], "bad --alert")
    usage([work, "--frobnicate"], "unknown option")
    usage([os.path.join(work, "x"), "--bind", "localhost.invalid"], "not an IPv4 or IPv6 address")
    f = os.path.join(work, "file")
    open(f, "w").close()
    usage([f], "not a directory")
    # a port in use: a clear error, exit 1
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    usage([work, "--port", str(s.getsockname()[1])], "Address already in use")
    s.close()
    # a directory that does not exist yet, then one without journals: it waits and says so
    missing = os.path.join(work, "later")
    live = Live(missing)
    wait_for("the note about the missing directory", lambda: "waiting for the job" in live.stderr(), 10)
    snap = wait_for("a snapshot", live.snapshot, 10)
    if snap["job"]["state"] != "waiting" or snap["ranks"]:
        fail("snapshot of a missing run directory: %s" % snap["job"])
    # wrong token, no token, other methods, unknown paths, traversal attempts
    checks = [(live.api(token="0" * 32), "GET", 403), (live.base + "api/snapshot", "GET", 403),
              (live.api(token=live.token + "0"), "GET", 403), (live.api("api/../../etc/passwd"), "GET", 404),
              (live.api("..%2f..%2fetc%2fpasswd"), "GET", 404), (live.api("rank-00000.xsj"), "GET", 404),
              (live.api(), "POST", 405), (live.api(), "PUT", 405), (live.api(), "DELETE", 405),
              (live.api(""), "GET", 200), (live.api(), "GET", 200)]
    for url, method, want in checks:
        got = http_status(url, method)
        print("%s %s -> %s" % (method, url.replace(live.token, "TOKEN"), got))
        if got != want:
            fail("%s %s: %s, want %s" % (method, url, got, want))
    port = int(re.search(r":(\d+)/", live.base).group(1))
    for req in (b"GET /../../../../etc/passwd?token=" + live.token.encode() + b" HTTP/1.0\r\n\r\n",
                b"GET /%2e%2e/%2e%2e/etc/passwd?token=" + live.token.encode() + b" HTTP/1.0\r\n\r\n"):
        resp = raw(port, req)
        if b"root:" in resp or not re.match(rb"HTTP/1\.[01] 4\d\d", resp):
            fail("traversal %r answered %r" % (req, resp[:200]))
    # an oversized request is refused, the view goes on
    resp = raw(port, b"GET /?token=" + live.token.encode() + b"&x=" + b"a" * 200000 + b" HTTP/1.0\r\n\r\n")
    if not re.match(rb"HTTP/1\.[01] 4\d\d", resp) and resp:
        fail("an oversized request got %r" % resp[:100])
    # many connections at once (more than the limit): the view answers afterwards
    socks = []
    for _ in range(200):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            break
    print("opened %d idle connections" % len(socks))
    for c in socks:
        c.close()
    wait_for("a snapshot after the connection flood", live.snapshot, 20)
    # the directory appears empty, then a journal of another run appears among ours
    os.makedirs(missing)
    jp = start_job(missing, 6, 500)
    wait_for("4 ranks in the snapshot", lambda: (lambda s: s and len(s["ranks"]) == 4)(live.snapshot()), 40)
    src = glob.glob(os.path.join(missing, "rank-*.xsj"))[0]
    with open(src, "rb") as f:
        head = bytearray(f.read(65536))
    # the same layout (core/journal.h): rank 5 of 8 of another job
    head[24:32] = (5).to_bytes(4, "little") + (8).to_bytes(4, "little")  # rank, size
    off = 8 + 4 * 4 + 4 * 2 + 8 * 3 + 4 * 2 + 8 * 7  # job_id
    head[off:off + 64] = b"another-run".ljust(64, b"\0")
    with open(os.path.join(missing, "rank-00005.xsj"), "wb") as f:
        f.write(bytes(head))
    wait_for("the note about another run's journal", lambda: "belongs to another run" in live.stderr(), 15)
    if jp.wait(timeout=90) != 0:
        fail("the job failed: " + jp.stdout.read()[-2000:])
    snap = wait_for("job.state 'ended'", lambda: (lambda s: s if s and s["job"]["state"] == "ended" else None)(
        live.snapshot()), 30)
    if len(snap["ranks"]) != 4:
        fail("another run's journal changed the ranks: %d" % len(snap["ranks"]))
    if live.stop() != 0:
        fail("xsmerge --live exited non-zero: " + live.stderr())
    print("PASS")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    {"job": job, "killed": killed, "bad": bad, "p2p": p2p}.get(mode, lambda: fail("unknown mode %r" % mode))()


if __name__ == "__main__":
    main()
