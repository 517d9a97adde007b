#!/usr/bin/python3
"""Reading xsmerge's merged.h5 from Python (h5py and numpy only).

    examples/merged_h5.py OUT_DIR [N]

prints, from OUT_DIR/merged.h5 (written by `xsmerge RUN -o OUT_DIR`):
  - per rank: wall time of the measured window, time in MPI and time
    waiting in MPI, by wait-state kind;
  - the N longest wait states (default 10): who waited, in which MPI call
    and region, for which rank, and the message it waited for (from
    /messages: sender, tag, bytes) or the collective's bytes;
  - the critical path: how much of it each rank holds.
Names are ids into /strings; a wait's `mpi_row` is a row of /mpi (for a
Wait or a polling loop, that row is the Wait or the first poll: its own
peer and tag are -1, so the message comes from /messages). The schema is in
merge/README.md ("merged.h5")."""
import os
import sys

import h5py
import numpy as np

NONE = 0xFFFFFFFF


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def dur(ns):
    """ns as '18.5 us', '2.50 ms', '1.20 s'"""
    s = ns * 1e-9
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def message_of(w, msgs, late_sender):
    """The message a point-to-point wait is about: the one the waiting call
    received (Late Sender) or sent (Late Receiver), else, for a polling
    loop whose row is its first poll, the one between the two ranks in
    flight when the wait ended. None for a collective wait."""
    row, waiter, causer = int(w["mpi_row"]), int(w["waiter"]), int(w["causer"])
    if late_sender:
        mine = msgs[msgs["dst"] == waiter]
        hit = mine[(mine["recv_call_row"] == row) | (mine["recv_row"] == row)]
        pair = mine[mine["src"] == causer]
    else:
        mine = msgs[msgs["src"] == waiter]
        hit = mine[(mine["send_row"] == row) | (mine["send_completion_row"] == row)]
        pair = mine[mine["dst"] == causer]
    if not len(hit):
        t = int(w["t_end"])
        hit = pair[(pair["send_begin"] <= t) & (pair["recv_end"] >= t)]
    return hit[0] if len(hit) else None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: " + __doc__.strip().splitlines()[2].strip())
    path = os.path.join(sys.argv[1], "merged.h5")
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    try:
        h = h5py.File(path, "r")
    except OSError as e:
        sys.exit(f"{path}: cannot open: {e.strerror or e}")
    with h:
        if "analysis" not in h:
            sys.exit(f"{path}: no analysis tables (merge without --outputs, or with 'report' among them)")
        strings = [text(s) for s in h["strings"][:]]
        an = h["analysis"]
        ranks, waits, path_ = an["ranks"][:], an["waits"][:], an["critical_path"][:]
        kinds = [text(k) for k in an["waits"].attrs["kind_names"]]
        mpi = h["mpi"]

        def name(i):
            return strings[int(i)] if int(i) != NONE else "-"

        print("rank       wall        MPI    waiting  by kind")
        for r in ranks:
            if not r["present"]:
                continue
            by = {}
            for w in waits[waits["waiter"] == r["rank"]]:
                k = kinds[int(w["kind"])]
                by[k] = by.get(k, 0) + int(w["t_end"]) - int(w["t_begin"])
            detail = ", ".join(f"{k} {dur(ns)}" for k, ns in sorted(by.items(), key=lambda x: -x[1]))
            print(f"{int(r['rank']):4d} {dur(int(r['t_last']) - int(r['t_first'])):>10} {dur(int(r['mpi_ns'])):>10} "
                  f"{dur(int(r['wait_ns'])):>10}  {detail}")

        print(f"\nlongest wait states (of {len(waits)}):")
        order = np.argsort(-(waits["t_end"] - waits["t_begin"]), kind="stable")[:top]
        msgs = h["messages"][:]
        for w in waits[order]:
            kind = kinds[int(w["kind"])]
            causer = f"rank {int(w['causer'])}" if int(w["causer"]) >= 0 else "no single rank"
            if kind.startswith("Late Sender") or kind.startswith("Late Receiver"):
                m = message_of(w, msgs, kind.startswith("Late Sender"))
                what = (f"message {int(m['src'])} -> {int(m['dst'])} tag {int(m['tag'])} bytes {int(m['bytes'])}"
                        if m is not None else "message not in /messages")
            else:
                row = mpi[int(w["mpi_row"])]  # the collective call itself
                what = f"collective bytes {int(row['bytes_sent']) + int(row['bytes_recv'])}"
            print(f"  {dur(int(w['t_end']) - int(w['t_begin']))}  {kind}: rank "
                  f"{int(w['waiter'])} in {name(w['op'])} (region {name(w['region'])}) at "
                  f"{dur(int(w['t_begin']))}, waiting for {causer} (delayed in {name(w['root_region'])}); {what}")

        total = sum(int(p["t_end"]) - int(p["t_begin"]) for p in path_)
        print(f"\ncritical path: {dur(total)} in {len(path_)} pieces")
        for r in sorted({int(p["rank"]) for p in path_}):
            held = sum(int(p["t_end"]) - int(p["t_begin"]) for p in path_ if int(p["rank"]) == r)
            print(f"  rank {r}: {dur(held)} ({100.0 * held / total if total else 0:.0f} %)")


if __name__ == "__main__":
    main()
