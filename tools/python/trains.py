#!/usr/bin/env python3
"""How far trains (fabric.segment) are from packet level on the shipped scenarios.

Runs every scenarios/*.yaml twice with `fabsim run --json`: packet by packet,
then with fabric.segment = PACKETS x the scenario's mtu (read from `fabsim
validate --explain`), and prints per scenario the relative error of the sim
time, the flows' FCT p99 and the collectives' summed time, the events saved
and both wall times. A scenario that refuses trains (an xoff or a buffer
below one train) says why.

    python3 tools/python/trains.py [--fabsim build/fabsim] [--src .] [--packets 16]

`tools/bench` runs it with TRAINS=1. README ("Trains") shows its table.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_rows import mtu_of  # noqa: E402  (the scenario's mtu, from validate --explain)


def run(fabsim, scenario, extra):
    p = subprocess.run([fabsim, "run", scenario, "--json"] + extra, capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    return json.loads(p.stdout), None


def metrics(js):
    colls = js.get("collectives") or []
    return {"sim": js["sim_time_s"], "p99": js["flows"]["fct_p99_s"],
            "coll": sum(c["time_s"] or 0 for c in colls) if colls else None,
            "events": js["events"], "wall": js["wall_s"]}


def err(a, b):
    if a is None or b is None or a == 0:
        return ""
    return "%+.2f %%" % (100 * (b / a - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabsim", default="build/fabsim")
    ap.add_argument("--src", default=".")
    ap.add_argument("--packets", type=int, default=16, help="packets per train (default 16)")
    a = ap.parse_args()
    print("| scenario | sim time | FCT p99 | collectives | events | wall s |")
    print("|---|---|---|---|---|---|")
    bad = 0
    for sc in sorted(glob.glob(os.path.join(a.src, "scenarios", "*.yaml"))):
        name = os.path.basename(sc)[:-5]
        mtu = mtu_of(a.fabsim, sc)
        if not mtu:
            print("| %s | cannot read its mtu | | | | |" % name)
            bad += 1
            continue
        pk, why = run(a.fabsim, sc, [])
        tr, why2 = run(a.fabsim, sc, ["--set", "fabric.segment=%d" % (a.packets * mtu)]) if pk else (None, None)
        if not pk or not tr:
            print("| %s | refused: %s | | | | |" % (name, why or why2))
            continue
        x, y = metrics(pk), metrics(tr)
        print("| %s | %s | %s | %s | %.1fx fewer | %.2f -> %.2f |" % (
            name, err(x["sim"], y["sim"]), err(x["p99"], y["p99"]), err(x["coll"], y["coll"]),
            x["events"] / max(y["events"], 1), x["wall"], y["wall"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
