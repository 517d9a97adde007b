"""trace.pftrace decodes with protoc against perfetto_min.proto (Perfetto's
published field numbers) and holds: a process track per rank named
"rank N (host)", thread tracks, GPU stream and counter tracks, interned
names for every event, balanced slices per track, and one flow per matched
message (flow_ids on the send, terminating_flow_ids on the receive)."""
import json
import os
import re
import subprocess
import sys

from mergetest import check, finish, make_run, tmpdir, xsmerge

maker, proto = sys.argv[1], sys.argv[2]
base = tmpdir()


def decode(path):
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto), proto],
                           stdin=f, capture_output=True, text=True)
    check(p.returncode == 0, "protoc decodes %s: %s" % (path, p.stderr))
    return p.stdout


def packets(text):
    """Split the text format into top-level packet blocks."""
    out, cur, depth = [], [], 0
    for line in text.splitlines():
        if depth == 0 and line.startswith("packet {"):
            cur, depth = [], 1
            continue
        depth += line.count("{") - line.count("}")
        if depth == 0:
            out.append("\n".join(cur))
        else:
            cur.append(line)
    return out


def field(block, name):
    """Values of `name`; a leading-space prefix in name pins the nesting depth."""
    if name.startswith(" "):
        return re.findall(r"^%s: (.*)$" % name, block, re.M)
    return re.findall(r"^\s*%s: (.*)$" % name, block, re.M)


def times(pk):
    """Absolute time of every packet (None without one): each sequence's
    defaults put its timestamps on clock 64, incremental from the clock
    snapshot's value; an explicit timestamp_clock_id 6 (BOOTTIME) is absolute
    and leaves clock 64 alone. Also checks that every sequence sets that up
    before its first timed packet."""
    out, last, delta = [], {}, {}
    for p in pk:
        seq = int(field(p, "  trusted_packet_sequence_id")[0])
        if field(p, "    timestamp_clock_id"):
            delta[seq] = field(p, "    timestamp_clock_id")[0] == "64"
        m = re.search(r"clocks \{\s*clock_id: 64\s*timestamp: (\d+)\s*is_incremental: true", p)
        if m:
            last[seq] = int(m.group(1))
        ts = field(p, "  timestamp")
        if not ts:
            out.append(None)
            continue
        if field(p, "  timestamp_clock_id") == ["6"]:
            out.append(int(ts[0]))
            continue
        check(delta.get(seq) and seq in last, "sequence %d: clock 64 set up before its first timed packet" % seq)
        last[seq] = last.get(seq, 0) + int(ts[0])
        out.append(last[seq])
    return out


def slices(pk, ts, iids):
    """(pid, name, begin ns, end ns) of every slice: begins and ends paired per
    track (a track_uuid left out is the sequence's default); iids: the
    interned event names."""
    default, pid_of, stack, out = {}, {}, {}, []
    for p, t in zip(pk, ts):
        seq = int(field(p, "  trusted_packet_sequence_id")[0])
        d = field(p, "      track_uuid")
        if "trace_packet_defaults" in p and d:
            default[seq] = int(d[0])
        if "track_descriptor" in p:
            uuid = int(field(p, "    uuid")[0])
            pid = field(p, "      pid")
            parent = field(p, "    parent_uuid")
            pid_of[uuid] = int(pid[0]) if pid else pid_of.get(int(parent[0])) if parent else None
        if not re.search(r"^  track_event \{", p, re.M):
            continue
        tr = field(p, "    track_uuid")
        track = int(tr[0]) if tr else default.get(seq)
        kind = field(p, "    type")[0]
        if kind == "TYPE_SLICE_BEGIN":
            stack.setdefault(track, []).append((iids[int(field(p, "    name_iid")[0])], t))
        elif kind == "TYPE_SLICE_END":
            check(stack.get(track), "track %s: an end without a begin" % track)
            name, b = stack[track].pop()
            out.append((pid_of.get(track), name, b, t))
    check(not any(stack.values()), "every slice ends")
    return sorted(out)


for kind in ("golden", "gpu", "backrecv"):
    run = make_run(maker, kind, os.path.join(base, kind))
    out = os.path.join(base, kind + "-out")
    rc, so, se = xsmerge(run, "-o", out, "-q")
    check(rc == 0, "%s merges" % kind)
    text = decode(os.path.join(out, "trace.pftrace"))
    pk = packets(text)
    check(len(pk) > 10, "%s: packets decoded (%d)" % (kind, len(pk)))
    check("sequence_flags: 1" in pk[0], "first packet clears incremental state")
    # one sequence per rank, each clearing its incremental state first
    seqs = [int(field(p, "trusted_packet_sequence_id")[0]) for p in pk]
    firsts = [seqs[i] for i, p in enumerate(pk) if "sequence_flags: 1" in p]
    check(sorted(firsts) == sorted(set(seqs)), "%s: every sequence starts cleared" % kind)
    cats = {}
    for p in pk:
        for m in re.finditer(r"event_categories \{\s*iid: (\d+)\s*name: \"([^\"]*)\"", p):
            cats[int(m.group(1))] = m.group(2)
    used_cats = {int(c) for p in pk for c in field(p, "    category_iids")}
    check(used_cats and used_cats <= set(cats), "%s: categories interned (%s)" % (kind, cats))
    names = [n.strip('"') for p in pk if "track_descriptor" in p for n in field(p, "name")]
    iids = {}
    for p in pk:
        for m in re.finditer(r"event_names \{\s*iid: (\d+)\s*name: \"([^\"]*)\"", p):
            iids[int(m.group(1))] = m.group(2)
    used = [int(i) for p in pk if "track_event" in p for i in field(p, "    name_iid")]
    check(all(i in iids for i in used), "%s: every event name is interned before use" % kind)
    begins = sum(p.count("TYPE_SLICE_BEGIN") for p in pk)
    ends = sum(p.count("TYPE_SLICE_END") for p in pk)
    check(begins == ends and begins > 0, "%s: slices balanced (%d/%d)" % (kind, begins, ends))
    # the same slices at the same times as trace.json (pid = rank + 1 there)
    ts = times(pk)
    with open(os.path.join(out, "trace.json")) as f:
        js = json.load(f)["traceEvents"]
    want = sorted((e["pid"] + 1, e["name"], round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                  for e in js if e["ph"] == "X")
    got = slices(pk, ts, iids)
    check(got == want and len(got) >= 5, "%s: %d slices, trace.json's %d, differ at %s" %
          (kind, len(got), len(want), next((a, b) for a, b in zip(got + [None], want + [None]) if a != b)
          if got != want else None))
    flows = [int(x) for p in pk for x in field(p, "    flow_ids")]
    term = [int(x) for p in pk for x in field(p, "    terminating_flow_ids")]
    if kind == "golden":
        for r, host in ((0, "node0"), (1, "node1"), (2, "node0")):
            check("rank %d (%s)" % (r, host) in names, "process track rank %d (%s)" % (r, host))
        check(names.count("main (thread 0)") == 3, "a thread track per rank")
        check(sorted(flows) == [1, 2, 3] and sorted(term) == [1, 2, 3], "flows 1..3 start and end (%s %s)" % (flows, term))
        # each flow starts (in time) before it ends
        t_of = {}
        for p, t in zip(pk, ts):
            for x in field(p, "    flow_ids"):
                t_of.setdefault(int(x), [None, None])[0] = t
            for x in field(p, "    terminating_flow_ids"):
                t_of.setdefault(int(x), [None, None])[1] = t
        check(all(a <= b for a, b in t_of.values()), "flows go forward in time %s" % t_of)
        check("MPI_Allreduce" in iids.values() and "MPI_Bcast" in iids.values(), "MPI names interned")
        check(re.search(r'debug_annotation_string_values \{\s*iid: \d+\s*str: "split\(0\) \(1\)"', text) is not None,
              "communicator annotation interned")
        check("string_value_iid:" in text, "communicator annotation refers to it")
        check(re.search(r"name_iid: (\d+)\s*int_value: 7", text) is not None, "tag annotation")
    elif kind == "backrecv":
        # the Recv ends (300 local, 250 merged) before it begins (350): its
        # "recv" instant comes after the slice's begin in the file, so it
        # carries an absolute BOOTTIME timestamp and the deltas go on
        term_t = [t for p, t in zip(pk, ts) if field(p, "    terminating_flow_ids")]
        check("timestamp_clock_id: 6" in text and term_t == [250] and flows == [1],
              "backrecv: the early terminus is absolute, at 250 (%s)" % term_t)
    else:
        check("GPU 0 stream 7" in names, "GPU stream track")
        check("cycles" in names and "memory (host)" in names and "memory (GPU 0)" in names, "counter tracks")
        check(len(flows) == 1 and flows == term, "launch -> kernel flow")
        check("double_counter_value: 2500000" in text, "counter value")
        # the host memory counter rises by the allocation and falls back at
        # its free, which (as the recorder writes frees) carries no size
        host = [int(field(p, "    uuid")[0]) for p in pk if "track_descriptor" in p and '"memory (host)"' in p]
        vals = [float(field(p, "    double_counter_value")[0]) for p in pk
                if host and field(p, "    track_uuid") == [str(host[0])] and field(p, "    double_counter_value")]
        check(vals == [4096.0, 0.0], "memory (host) counter values %s" % vals)
        check("worker (thread 1)" in names, "second thread named")

# names in no valid encoding (merge_make_runs badnames): every product
# parses, a valid name is kept whole, each bad byte is one U+FFFD
run = make_run(maker, "badnames", os.path.join(base, "badnames"))
out = os.path.join(base, "out-badnames")
rc, so, se = xsmerge(run, "-o", out, "-q")
check(rc == 0, "badnames merges (%s)" % se)
with open(os.path.join(out, "trace.pftrace"), "rb") as f:
    p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", os.path.dirname(proto), proto],
                       stdin=f, capture_output=True)
check(p.returncode == 0 and b"UTF-8" not in p.stderr, "badnames: trace.pftrace's strings are UTF-8 (%s)" % p.stderr[-300:])
want = {"caf\ufffd latin1", "cut \ufffd\ufffd", "surrogate \ufffd\ufffd\ufffd", "ctl \x01\x1f <&\">",
        "ok \u00e9\u20ac\U0001f600"}
for prod in ("trace.json", "report.json"):
    try:
        raw = open(os.path.join(out, prod), "rb").read()
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, "badnames: %s does not load: %s" % (prod, e))
        continue
    if prod == "trace.json":
        got = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
        check(got == want, "badnames: trace.json names %r" % sorted(got))
        threads = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
        check("w\ufffd\ufffdorker (thread 1)" in threads, "badnames: thread name %r" % sorted(threads))
    else:
        text = raw.decode("utf-8")
        check(all(json.dumps(w, ensure_ascii=False)[1:-1] in text for w in want), "badnames: report.json names")
try:
    import xml.etree.ElementTree as ET
    ET.parse(os.path.join(out, "flame.svg"))
except Exception as e:  # noqa: BLE001 (any parse error is the finding)
    check(False, "badnames: flame.svg is not XML: %s" % e)
finish("merge_perfetto")
