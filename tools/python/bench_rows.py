#!/usr/bin/env python3
"""Workload rows of tools/bench: whole scenarios at packet level and in trains.

For each scenario (a path, or a name under scenarios/ or scenarios/bench/), runs `fabsim run
--json` under /usr/bin/time -v: packet by packet, then with
fabric.segment = PACKETS x its mtu (trains), and where it has NVLS, in trains
with cluster.nvlink.nvls_segment = NVLS_SEGMENT too; prints one row per run:
what it measures (a training job's step time, else the collectives' summed
time, else the sim time), the wall time of the simulation loop, events/s and
packet-hops/s, the peak RSS, and for trains the error against packet level.
A run that fails or is refused prints why.

    python3 tools/python/bench_rows.py [--fabsim build/fabsim] [--src .] [--packets 16]
                                       [--nvls-segment 262144] SCENARIO...

`WORKLOADS="..." tools/bench` runs it. README ("Performance") shows its rows.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def measured(js):
    step = js.get("step")
    if step and step.get("step_time_s"):
        return "step", step["step_time_s"]
    colls = js.get("collectives") or []
    if colls and all(c.get("time_s") for c in colls):
        return "collectives", sum(c["time_s"] for c in colls)
    return "sim", js["sim_time_s"]


def run(fabsim, scenario, extra):
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name, fabsim, "run", scenario, "--json",
                            "--no-progress"] + extra, capture_output=True, text=True)
        t = tf.read()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t)
    if not p.stdout.strip():
        why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, why
    js = json.loads(p.stdout)
    js["_rss_mb"] = int(rss.group(1)) / 1024 if rss else float("nan")
    js["_exit"] = p.returncode
    return js, None


def explain_of(fabsim, scenario):
    """The network's mtu (None: not found) and whether NVLS runs, from `validate --explain`."""
    p = subprocess.run([fabsim, "validate", scenario, "--explain"], capture_output=True, text=True)
    m = re.search(r"mtu (\d+) B payload", p.stdout)
    return (int(m.group(1)) if m else None), bool(re.search(r"^nvls +on:", p.stdout, re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabsim", default="build/fabsim")
    ap.add_argument("--src", default=".")
    ap.add_argument("--packets", type=int, default=16)
    ap.add_argument("--nvls-segment", type=int, default=262144)
    ap.add_argument("scenarios", nargs="+")
    a = ap.parse_args()
    fmt = "%-28s %-11s %-12s %12s %9s %11s %11s %8s  %s"
    print(fmt % ("scenario", "mode", "measures", "value_s", "wall_s", "events/s", "hops/s", "RSS_MB", "error"))
    failed = 0
    for sc in a.scenarios:
        path = sc
        for d in ("scenarios", os.path.join("scenarios", "bench")):
            if not os.path.exists(path) and os.path.exists(os.path.join(a.src, d, sc + ".yaml")):
                path = os.path.join(a.src, d, sc + ".yaml")
        name = os.path.basename(path)[:-5]
        mtu, nvls = explain_of(a.fabsim, path)
        base = None
        trains = ["--set", "fabric.segment=%d" % (a.packets * (mtu or 0))]
        modes = [("packets", []), ("trains", trains)]
        if nvls:
            modes.append(("trains+nvls", trains + ["--set", "cluster.nvlink.nvls_segment=%d" % a.nvls_segment]))
        for mode, extra in modes:
            if mode != "packets" and not mtu:
                print(fmt % (name, mode, "-", "-", "-", "-", "-", "-", "cannot read the mtu"))
                failed = 1
                continue
            js, why = run(a.fabsim, path, extra)
            if not js:
                print(fmt % (name, mode, "-", "-", "-", "-", "-", "-", "refused or failed: " + why))
                failed = 1
                continue
            what, v = measured(js)
            wall = js["wall_s"]
            err = ""
            if mode == "packets":
                base = v
            elif base:
                err = "%+.2f %% against packets" % (100 * (v / base - 1))
            if js["_exit"]:
                err = (err + "; " if err else "") + "exit %d" % js["_exit"]
            print(fmt % (name, mode, what, "%.6g" % v, "%.2f" % wall, "%.3g" % (js["events"] / wall if wall else 0),
                         "%.3g" % (js["packet_hops"] / wall if wall else 0), "%.0f" % js["_rss_mb"], err))
            sys.stdout.flush()
    return failed


if __name__ == "__main__":
    sys.exit(main())
