#!/usr/bin/python3
"""xsprof's messages through the application's handler, under mpirun (3 ranks).

Runs log_app three times:
  good   XSPROF_WARN_REGION_MS=solve=20,io=5,quick=60000 XSPROF_WARN_RSS_MB=150:
         every instance above its threshold is counted exactly once (in its own
         message, in a later message's "and N more", or at finalize), messages
         of one name are at least a second apart, none for regions below or
         without a threshold; a memory warning; session stop/start at info;
         every message reached the handler with the rank, none went to stderr;
  bad    XSPROF_WARN_REGION_MS=solve=abc,io=5 XSPROF_WARN_RSS_MB=lots: one line
         per rank and variable on stderr, the valid item still applies;
  plain  XSPROF_WARN_REGION_MS=25: a plain number is every region's threshold;
  taken  the rank files exist: the refusal, said while xsprof holds its journal
         lock, reaches the handler, which records a region (it deadlocked before).

usage: check_log.py LOG_APP WORK_DIR
"""
import collections
import os
import re
import shutil
import subprocess
import sys

NP = 3
ERROR, WARN, INFO = 0, 1, 2
TOOK = re.compile(r"^region '([^']+)' took ([0-9.]+) ms, above its threshold of ([0-9.]+) ms"
                  r"(?: \(and (\d+) more instances? above it since the last message, the longest ([0-9.]+) ms\))?$")
REST = re.compile(r"^region '([^']+)': (\d+) more instances? above its threshold of ([0-9.]+) ms since the last "
                  r"message, the longest ([0-9.]+) ms$")
RSS = re.compile(r"^resident memory (\d+) MiB, above XSPROF_WARN_RSS_MB=150$")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(app, work, name, env_vars, taken=False):
    out = os.path.join(work, name)
    os.makedirs(out)
    if taken:  # every rank's file exists already: the journal is refused with its lock held
        os.makedirs(os.path.join(out, "run"))
        for rank in range(NP):
            open(os.path.join(out, "run", "rank-%05d.h5" % rank), "w").close()
    env = dict(os.environ)
    for k in ("XSPROF_WARN_REGION_MS", "XSPROF_WARN_RSS_MB", "XSPROF_LOG"):
        env.pop(k, None)
    env_vars = dict(env_vars, XSPROF_OUTPUT=os.path.join(out, "run"), XSPROF_GPU="0")
    cmd = [os.environ.get("MPIEXEC", "mpiexec"), "-np", str(NP), "--oversubscribe"]
    for k, v in env_vars.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd += [app, out]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("%s: %s did not end in 120 s (a deadlock in a handler that records?)" % (name, " ".join(cmd)))
    if p.returncode != 0:
        fail("%s: %s exited with %d\n%s\n%s" % (name, " ".join(cmd), p.returncode, p.stdout, p.stderr))
    check(p.stdout.count("log_app done") == NP, "%s: output %r" % (name, p.stdout))
    logs = []
    for rank in range(NP):
        msgs, extra = [], {}
        with open(os.path.join(out, "log-%d.txt" % rank)) as f:
            for line in f:
                line = line.rstrip("\n")
                m = re.match(r"^(-?\d+) (-?\d+) (.*)$", line)
                if m:
                    level, r, text = int(m.group(1)), int(m.group(2)), m.group(3)
                    check(r == rank, "%s rank %d: message with rank %d: %r" % (name, rank, r, line))
                    check(level in (ERROR, WARN, INFO), "%s rank %d: level %d (info set)" % (name, rank, level))
                    msgs.append((level, text))
                else:
                    k, _, v = line.partition(" ")
                    extra[k] = v
        check(extra.get("set_inside") == "4", "%s rank %d: xsprof_log_handler_set inside the handler returned %s, "
              "expected 4 (XSPROF_ERR_STATE)" % (name, rank, extra.get("set_inside")))
        logs.append((msgs, float(extra["io_loop_s"])))
    return logs, p.stderr


def thresholds(name, rank, msgs):
    """Per region name: instances counted, and how many per-occurrence messages."""
    counted, messages = collections.Counter(), collections.Counter()
    for level, text in msgs:
        m, r = TOOK.match(text), REST.match(text)
        if m:
            check(level == WARN, "%s rank %d: threshold message at level %d" % (name, rank, level))
            check(float(m.group(2)) > float(m.group(3)), "%s rank %d: %r is not above its threshold" % (name, rank, text))
            counted[m.group(1)] += 1 + int(m.group(4) or 0)
            messages[m.group(1)] += 1
        elif r:
            counted[r.group(1)] += int(r.group(2))
        elif "region '" in text:
            fail("%s rank %d: unexpected region message %r" % (name, rank, text))
    return counted, messages


def stderr_xsprof(err):
    return [line for line in err.splitlines() if line.startswith("xsprof[")]


def main():
    app, work = sys.argv[1:3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    logs, err = run(app, work, "good", {"XSPROF_WARN_REGION_MS": "solve=20,io=5,quick=60000",
                                        "XSPROF_WARN_RSS_MB": "150"})
    check(not stderr_xsprof(err), "good: messages on stderr, not through the handler:\n%s" % err)
    for rank, (msgs, io_s) in enumerate(logs):
        counted, messages = thresholds("good", rank, msgs)
        check(counted == {"solve": 5, "io": 20, "api_set": 1},
              "good rank %d: instances counted %s, expected solve 5, io 20, api_set 1" % (rank, dict(counted)))
        # one message per name and second at most: the 20 io regions took io_s seconds
        check(1 <= messages["io"] <= 1 + int(io_s), "good rank %d: %d io messages in %.3f s" %
              (rank, messages["io"], io_s))
        rss = [int(RSS.match(t).group(1)) for lv, t in msgs if RSS.match(t) and lv == WARN]
        check(rss and all(mb > 150 for mb in rss), "good rank %d: no memory warning: %s" % (rank, msgs))
        sessions = [t for lv, t in msgs if t.startswith("session ") and lv == INFO]
        check(sessions == ["session stopped", "session started"], "good rank %d: session messages %s" %
              (rank, sessions))

    logs, err = run(app, work, "bad", {"XSPROF_WARN_REGION_MS": "solve=abc,io=5", "XSPROF_WARN_RSS_MB": "lots"})
    lines = stderr_xsprof(err)
    want = ["XSPROF_WARN_REGION_MS: 'solve=abc' ignored (expected NAME=MS or MS, MS a number of milliseconds above "
            "0, items separated by commas)",
            "XSPROF_WARN_RSS_MB=lots ignored (expected a whole number of MiB above 0); no memory warnings"]
    for w in want:
        check(sum(line.endswith("warning: " + w) for line in lines) == NP,
              "bad: expected %d lines %r on stderr, got:\n%s" % (NP, w, err))
    check(len(lines) == 2 * NP, "bad: other xsprof lines on stderr:\n%s" % err)
    for rank, (msgs, _) in enumerate(logs):
        counted, _ = thresholds("bad", rank, msgs)
        check(counted == {"io": 20, "api_set": 1}, "bad rank %d: instances counted %s" % (rank, dict(counted)))
        check(not any(RSS.match(t) for _, t in msgs), "bad rank %d: memory warning without a valid limit" % rank)

    logs, err = run(app, work, "plain", {"XSPROF_WARN_REGION_MS": "25"})
    check(not stderr_xsprof(err), "plain: messages on stderr:\n%s" % err)
    for rank, (msgs, _) in enumerate(logs):
        counted, _ = thresholds("plain", rank, msgs)
        check(counted == {"solve": 5, "api_set": 1}, "plain rank %d: instances counted %s" % (rank, dict(counted)))
    logs, err = run(app, work, "taken", {}, taken=True)
    check(not stderr_xsprof(err), "taken: messages on stderr:\n%s" % err)
    for rank, (msgs, _) in enumerate(logs):
        want = "run/rank-%05d.h5 already exists; set XSPROF_OUTPUT to a new directory. Profiling is off" % rank
        check(any(lv == WARN and t.endswith(want) for lv, t in msgs), "taken rank %d: no %r in %s" % (rank, want, msgs))
    print("log: thresholds counted exactly and rate-limited, memory and session messages, through the handler on %d "
          "ranks; bad values said in one line each" % NP)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
