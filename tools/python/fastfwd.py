#!/usr/bin/env python3
"""How far the steady-state fast-forward (fabric.fast_forward) is from packet level.

Runs every scenarios/*.yaml as shipped, then the long-flow variants below
(the same scenarios with flows long enough to reach a steady state), each
twice with `fabsim run --json`: fabric.fast_forward off, then on, and prints
per run the relative error of the sim time, the flows' FCT p50 and p99, the
collectives' summed time, the packet hops and ECN marks, the share of
simulated time jumped over, and both wall times.

    python3 tools/python/fastfwd.py [--fabsim build/fabsim] [--src .] [--tolerance 0.02]

`tools/bench` runs it with FASTFWD=1. README ("Fast-forward") shows its table.
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trains import err, run as run_json  # noqa: E402  (the same run and error as the trains' table)

# Flows long enough to settle: (scenario, overrides)
LONG = [
    ("tests/data/segment-one-flow.yaml", ["workload.flows=[{src: 0, dst: 1, size: 100MB}]"]),
    ("scenarios/quickstart.yaml", ["workload.size=64MiB"]),
    ("scenarios/incast.yaml", ["workload.size=50MB"]),
    ("scenarios/incast-pfc.yaml", ["workload.size=50MB"]),
    ("scenarios/incast-dcqcn.yaml", ["workload.size=50MB"]),
    ("scenarios/leaf-spine-permutation-128.yaml", ["workload.size=50MB"]),
    ("scenarios/leaf-spine-permutation-1024.yaml", ["workload.size=16MiB"]),
]


def run(fabsim, scenario, sets):
    return run_json(fabsim, scenario, [x for v in sets for x in ("--set", v)])


def metrics(js):
    colls = js.get("collectives") or []
    f = js["flows"]
    return {"sim": js["sim_time_s"], "p50": f["fct_p50_s"], "p99": f["fct_p99_s"],
            "coll": sum(c["time_s"] or 0 for c in colls) if colls else None,
            "hops": js["packet_hops"], "ecn": js["ecn_marks"], "events": js["events"], "wall": js["wall_s"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabsim", default="build/fabsim")
    ap.add_argument("--src", default=".")
    ap.add_argument("--tolerance", default=None, help="fabric.fast_forward_tolerance (default: the scenario's)")
    a = ap.parse_args()
    cases = [(os.path.relpath(sc, a.src), []) for sc in sorted(glob.glob(os.path.join(a.src, "scenarios", "*.yaml")))]
    cases += LONG
    print("| run | jumped | sim time | FCT p50 | FCT p99 | collectives | packet hops | ECN marks | events | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for rel, sets in cases:
        sc = os.path.join(a.src, rel)
        name = os.path.basename(rel)[:-5] + ("".join(" " + s for s in sets) if sets else "")
        on = sets + ["fabric.fast_forward=on"] + (["fabric.fast_forward_tolerance=" + a.tolerance] if a.tolerance else [])
        pk, why = run(a.fabsim, sc, sets + ["fabric.fast_forward=off"])
        ff, why2 = run(a.fabsim, sc, on) if pk else (None, None)
        if not pk or not ff:
            print("| %s | not run: %s | | | | | | | | |" % (name, why or why2))
            bad += 1
            continue
        if pk["status"] != "ok":  # a run meant to fail (a deadlock): compare what it gives
            name += " (%s)" % pk["failure"].split(":")[0]
        x, y = metrics(pk), metrics(ff)
        skipped = (ff.get("fast_forward") or {}).get("skipped_fraction") or 0
        print("| %s | %.1f %% | %s | %s | %s | %s | %s | %s | %.1fx fewer | %.2f -> %.2f |" % (
            name, 100 * skipped, err(x["sim"], y["sim"]), err(x["p50"], y["p50"]), err(x["p99"], y["p99"]),
            err(x["coll"], y["coll"]), err(x["hops"], y["hops"]), err(x["ecn"], y["ecn"]),
            x["events"] / max(y["events"], 1), x["wall"], y["wall"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
