#!/usr/bin/env python3
"""fabsim's public validation suite: simulated against measured.

Runs every case of scenarios/validation/cases.yaml (a scenario, the op and
size of one nccl-tests row, and what a public source measured), then prints
one line per case and a summary. Bandwidth cases must come within 10 %,
latency cases within 25 % or 3 us. Calibration cases (a model parameter was
fitted to them) are shown but not counted; cases marked `expect: outside`
are shown with their reason.

Usage: validate.py [--fabsim PATH] [--cases PATH] [--jobs N] [--only ID,...]
                   [--check] [--json]
Exit status: 0 when every counted case is inside its tolerance and every
`expect: outside` case is still outside (with --check), 1 otherwise, 2 on
bad input.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BW_TOL = 0.10
LAT_TOL, LAT_ABS_US = 0.25, 3.0
KEYS = {"id", "scenario", "op", "size", "metric", "measured", "source", "hardware", "set", "role", "expect", "why",
        "forced"}


def bad(msg):
    """Bad input: a message naming the file and the case, exit status 2."""
    print(f"validate: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list) or not cases:
        bad(f"{path}: expected a map with a list `cases`")
    seen = set()
    for c in cases:
        for k in ("id", "scenario", "op", "size", "metric", "measured", "source", "hardware"):
            if k not in c:
                bad(f"{path}: case {c.get('id', '?')}: missing `{k}`")
        if c["metric"] not in ("busbw", "time"):
            bad(f"{path}: case {c['id']}: metric is busbw or time, not {c['metric']}")
        if c["id"] in seen:
            bad(f"{path}: case {c['id']} twice")
        if c.get("expect", "inside") not in ("inside", "outside") or (c.get("expect") == "outside" and not c.get("why")):
            bad(f"{path}: case {c['id']}: expect is inside, or outside with a `why`")
        unknown = set(c) - KEYS
        if unknown:
            bad(f"{path}: case {c['id']}: unknown key {sorted(unknown)[0]}")
        if "forced" in c and not any(x.startswith("workload.algorithm=") for x in c.get("set", [])):
            bad(f"{path}: case {c['id']}: `forced` explains a workload.algorithm in `set`")
        seen.add(c["id"])
    return cases


def run(fabsim, folder, c):
    cmd = [fabsim, "run", os.path.join(folder, c["scenario"]), "--json", "--no-progress",
           "--set", f"workload.op={c['op']}", "--set", f"workload.sizes=[{c['size']}]"]
    for s in c.get("set", []):
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-400:]}"}
    j = json.loads(p.stdout)
    colls = [x for x in j["collectives"] if x.get("tag") in (None, "nccl-tests")]
    if not colls:
        return {"error": "no collective in the run"}
    x = colls[-1]
    return {"time_us": x["time_s"] * 1e6, "busbw": x["busbw_GBps"], "algorithm": x["algorithm"],
            "protocol": x["protocol"], "channels": x.get("channels"), "wall_s": j["wall_s"]}


def judge(c, r):
    if "error" in r:
        return dict(r, status="ERROR", sim=None, err=None)
    sim = r["busbw"] if c["metric"] == "busbw" else r["time_us"]
    meas = float(c["measured"])
    err = (sim - meas) / meas
    inside = abs(err) <= BW_TOL if c["metric"] == "busbw" else (abs(err) <= LAT_TOL or abs(sim - meas) <= LAT_ABS_US)
    role = c.get("role", "validation")
    expect = c.get("expect", "inside")
    if role == "calibration":
        status = "calib"
    elif expect == "outside":
        status = "known" if not inside else "NOW-INSIDE"
    else:
        status = "ok" if inside else "OUT"
    return dict(r, sim=sim, err=err, inside=inside, status=status)


def size_str(b):
    for unit, v in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= v and b % v == 0:
            return f"{b // v} {unit}"
    return f"{b} B"


def table(cases, results, bw, lat, mae, mae_all, bad):
    """The console table, line by line, as `tools/validate` prints it."""
    out = [f"{'case':<22} {'op':<15} {'size':>9} {'metric':<10} {'measured':>9} {'fabsim':>9} {'error':>8}  "
           f"{'status':<7} {'algorithm':<20} hardware (source)"]
    for c, r in zip(cases, results):
        unit = "GB/s" if c["metric"] == "busbw" else "us"
        sim = f"{r['sim']:.2f}" if r.get("sim") is not None else "-"
        err = f"{100 * r['err']:+.1f}%" if r.get("err") is not None else "-"
        algo = f"{r['algorithm']}/{r['protocol']}" if "algorithm" in r else r.get("error", "")[:60]
        out.append(f"{c['id']:<22} {c['op']:<15} {size_str(c['size']):>9} {c['metric'] + ' ' + unit:<10} "
                   f"{float(c['measured']):>9.2f} {sim:>9} {err:>8}  {r['status']:<7} {algo:<20} "
                   f"{c['hardware']} ({c['source']})")
    nbw_in = sum(1 for _, r in bw if r["inside"])
    nlat_in = sum(1 for _, r in lat if r["inside"])
    ncal = sum(1 for r in results if r["status"] == "calib")
    nknown = sum(1 for r in results if r["status"] == "known")
    out.append(f"bandwidth: {nbw_in} of {len(bw)} within 10%, mean |error| {100 * mae:.1f}% (limit 5%); "
               f"latency: {nlat_in} of {len(lat)} within 25% or 3 us; {ncal} calibration, {nknown} known misses")
    out.append(f"all {len(every_bw(cases, results))} bandwidth cases, known misses included: mean |error| "
               f"{100 * mae_all:.1f}%")
    if bad:
        out.append("failed: " + ", ".join(bad))
    return out


def every_bw(cases, results):
    return [r for c, r in zip(cases, results) if c["metric"] == "busbw" and r.get("err") is not None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabsim", default=os.path.join(ROOT, "build", "fabsim"))
    ap.add_argument("--cases", default=os.path.join(ROOT, "scenarios", "validation", "cases.yaml"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--table", default="", help="also write the console table to this file")
    a = ap.parse_args()
    cases = load(a.cases)
    if a.only:
        want = set(a.only.split(","))
        cases = [c for c in cases if c["id"] in want]
    folder = os.path.dirname(os.path.abspath(a.cases))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(lambda c: judge(c, run(a.fabsim, folder, c)), cases))
    bw = [(c, r) for c, r in zip(cases, results) if c["metric"] == "busbw" and r["status"] in ("ok", "OUT")]
    lat = [(c, r) for c, r in zip(cases, results) if c["metric"] == "time" and r["status"] in ("ok", "OUT")]
    mae = sum(abs(r["err"]) for _, r in bw) / len(bw) if bw else 0.0
    every = every_bw(cases, results)
    mae_all = sum(abs(r["err"]) for r in every) / len(every) if every else 0.0
    bad = [c["id"] for c, r in zip(cases, results) if r["status"] in ("OUT", "ERROR", "NOW-INSIDE")]
    if mae > 0.05:
        bad.append("bandwidth mean absolute error above 5%")
    lines = table(cases, results, bw, lat, mae, mae_all, bad)
    if a.table:  # the console table to a file as well (tests/test_validation.py compares README's with it)
        with open(a.table, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    if a.json:
        out = [dict(id=c["id"], measured=c["measured"], metric=c["metric"], **{k: v for k, v in r.items()})
               for c, r in zip(cases, results)]
        print(json.dumps({"cases": out, "bandwidth_mae": mae, "bandwidth_mae_all": mae_all, "failed": bad}, indent=1))
    else:
        print("\n".join(lines))
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
