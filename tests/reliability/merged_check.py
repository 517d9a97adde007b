#!/usr/bin/python3
"""Checks xsmerge's output of a faulted run against what the application
completed and what the rank data holds (fault_check's summary):
  - report.json has every rank, present, with `truncated` as in the data;
  - merged.h5 /ranks labels each rank with the same end_state, truncated and
    recovered (from a journal) flags;
  - merged.h5 /regions holds, per rank, exactly the "fault.iter" regions the
    rank data holds (all the application completed, per fault_check);
  - ABORT_RANK given: that rank has exactly one MPI_Abort row in /mpi (the
    wrapper records it before PMPI_Abort ends the job).
usage: merged_check.py SUMMARY_JSON OUT_DIR [ABORT_RANK]"""
import json
import sys

import h5py


def main():
    summary = json.load(open(sys.argv[1]))["ranks"]
    out = sys.argv[2]
    bad = []
    report = json.load(open(out + "/report.json"))
    rj = {r["rank"]: r for r in report.get("ranks", [])}
    with h5py.File(out + "/merged.h5", "r") as f:
        strings = [s.decode() if isinstance(s, bytes) else str(s) for s in f["strings"][:]]
        ranks = {int(r["rank"]): r for r in f["ranks"][:]}
        regions = f["regions"][:]
        if len(sys.argv) > 3:
            who = int(sys.argv[3])
            aborts = [(int(m["rank"]), int(m["t_begin"])) for m in f["mpi"][:] if strings[int(m["op"])] == "MPI_Abort"]
            print(f"MPI_Abort rows (rank, t_begin): {aborts}")
            if [r for r, t in aborts] != [who]:
                bad.append(f"MPI_Abort rows on ranks {[r for r, t in aborts]}, expected one on rank {who}")
        for s in summary:
            r = s["rank"]
            if s["source"] == "none":
                if r in rj and rj[r].get("present"):
                    bad.append(f"rank {r}: no data was written, but report.json shows it present")
                continue
            if r not in rj or not rj[r].get("present"):
                bad.append(f"rank {r}: missing from report.json ranks[]")
            elif bool(rj[r]["truncated"]) != bool(s["truncated"]):
                bad.append(f"rank {r}: report.json truncated={rj[r]['truncated']}, the data says {s['truncated']}")
            if r not in ranks:
                bad.append(f"rank {r}: missing from merged.h5 /ranks")
                continue
            m = ranks[r]
            end_state = m["end_state"].decode()
            if end_state != s["end_state"]:
                bad.append(f"rank {r}: merged.h5 end_state '{end_state}', the data says '{s['end_state']}'")
            if int(m["truncated"]) != int(s["truncated"]):
                bad.append(f"rank {r}: merged.h5 truncated={m['truncated']}, the data says {s['truncated']}")
            if int(m["recovered"]) != int(s["source"] == "journal"):
                bad.append(f"rank {r}: merged.h5 recovered={m['recovered']}, but the data came from {s['source']}")
            n = sum(1 for g in regions if int(g["rank"]) == r and strings[int(g["name"])] == "fault.iter")
            if n != s["recovered"]:
                bad.append(f"rank {r}: merged.h5 has {n} fault.iter regions, the rank data {s['recovered']}"
                           f" (the application completed {s['completed']})")
            print(f"merged rank {r}: {n} fault.iter regions (completed {s['completed']}),"
                  f" end_state '{end_state}', truncated {int(m['truncated'])}, recovered {int(m['recovered'])},"
                  f" dropped {int(m['dropped'])}")
    for b in bad:
        print("FAIL", b)
    print("FAIL: merged output does not match" if bad else "OK: merged output labels and recovers every rank")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
