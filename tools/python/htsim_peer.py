#!/usr/bin/env python3
"""The htsim peer of tools/bench: the same leaf-spine permutation in htsim's RoCE.

Builds htsim from a source checkout the user points at (Broadcom/csg-htsim,
its sim/ directory), never committed: the sources are copied to OUT/src, two
counters are added there (a packet hop each time a packet enters a pipe with
a delay, that is a link: a switch's internal zero-delay pipes are not links;
and an event each time the event list runs one; printed at exit), and
`make` builds datacenter/htsim_roce. Then runs, per size, the fabric of
tools/bench's leaf-spine permutation (128 hosts: 16 leaves x 8, 8 spines;
1024: 64 x 16, 16 spines; 100 Gb/s, 1 us links, 0 ns switches, MTU 4000)
with every host sending one 4 MiB flow to a seeded random derangement
partner, all at t = 0, ECMP at the hosts over 64 path entropies, htsim's
default lossless (PFC) input queues. htsim's RoCE source draws path choices
from a clock-seeded generator, so each size runs REPEAT times and the
median by wall time is reported. Prints one line per size:

    htsim size=N sim_time_s=.. elapsed_s=.. link_hops=.. events=.. rss_mb=.. flows_done=..

    python3 tools/python/htsim_peer.py --htsim-dir CHECKOUT --out DIR [--repeat 3] SIZE...
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time

COUNTERS_PIPE = '''
#include <cstdio>
/* fabsim tools/bench: packet hops per link (pipes with a delay) and events */
unsigned long long fabsim_bench_link_hops = 0, fabsim_bench_events = 0;
static struct FabsimBenchReport {
    ~FabsimBenchReport() {
        fprintf(stderr, "fabsim_bench link_hops=%llu events=%llu\\n", fabsim_bench_link_hops, fabsim_bench_events);
    }
} fabsim_bench_report;
'''


def build(src, out):
    dst = os.path.join(out, "src")
    exe = os.path.join(dst, "datacenter", "htsim_roce")
    stamp = os.path.join(out, "built-from")
    if os.path.exists(exe) and os.path.exists(stamp) and open(stamp).read() == src:
        return exe
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    pipe = os.path.join(dst, "pipe.cpp")
    text = open(pipe).read()
    head, sep, rest = text.partition('#include "pipe.h"\n')
    if not sep or "Pipe::receivePacket(Packet& pkt)\n{" not in rest:
        sys.exit("htsim_peer: %s does not look like csg-htsim's pipe.cpp" % pipe)
    rest = rest.replace("Pipe::receivePacket(Packet& pkt)\n{",
                        "Pipe::receivePacket(Packet& pkt)\n{\n    if (_delay > 0) fabsim_bench_link_hops++;", 1)
    open(pipe, "w").write(head + sep + COUNTERS_PIPE + rest)
    ev = os.path.join(dst, "eventlist.cpp")
    text = open(ev).read()
    if "    nextsource->doNextEvent();" not in text:
        sys.exit("htsim_peer: %s does not look like csg-htsim's eventlist.cpp" % ev)
    text = text.replace("    nextsource->doNextEvent();",
                        "    { extern unsigned long long fabsim_bench_events; fabsim_bench_events++; }\n"
                        "    nextsource->doNextEvent();", 1)
    open(ev, "w").write(text)
    log = os.path.join(out, "make.log")
    with open(log, "w") as f:
        if subprocess.run(["make", "-j%d" % (os.cpu_count() or 1)], cwd=dst, stdout=f, stderr=subprocess.STDOUT).returncode:
            sys.exit("htsim_peer: make failed; see %s" % log)
    if not os.path.exists(exe):
        sys.exit("htsim_peer: no %s after make; see %s" % (exe, log))
    open(stamp, "w").write(src)
    return exe


def shape(n):
    hpl, spines = (8, 8) if n <= 512 else (16, 16)
    if n % hpl:
        sys.exit("htsim_peer: size %d is not a multiple of %d hosts per leaf" % (n, hpl))
    return hpl, n // hpl, spines


def inputs(out, n):
    hpl, leaves, spines = shape(n)
    topo = os.path.join(out, "leaf-spine-%d.topo" % n)
    with open(topo, "w") as f:
        f.write("Nodes %d\nTiers 2\nPodsize %d\n\n" % (n, n))
        f.write("Tier 0\nDownlink_speed_Gbps 100\nRadix_Down %d\nRadix_Up %d\nDownlink_Latency_ns 1000\n"
                "Switch_Latency_ns 0\n\n" % (hpl, spines))
        f.write("Tier 1\nDownlink_speed_Gbps 100\nRadix_Down %d\nDownlink_Latency_ns 1000\nSwitch_Latency_ns 0\n"
                % leaves)
    rng = random.Random(1)
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(p[i] != i for i in range(n)):
            break
    cm = os.path.join(out, "permutation-%d.cm" % n)
    with open(cm, "w") as f:
        f.write("Nodes %d\nConnections %d\n" % (n, n))
        for i in range(n):
            f.write("%d->%d start 0 size 4194304\n" % (i, p[i]))
    return topo, cm


def run_once(exe, out, n, topo, cm, r):
    log = os.path.join(out, "htsim-%d.r%d" % (n, r))
    args = ["/usr/bin/time", "-v", exe, "-topo", topo, "-tm", cm, "-nodes", str(n), "-strat", "ecmp_host",
            "-paths", "64", "-linkspeed", "100000", "-mtu", "4000", "-end", "1000000", "-q", "100", "-o", os.devnull]
    t0 = time.monotonic()
    with open(log + ".out", "w") as o, open(log + ".err", "w") as e:
        rc = subprocess.run(args, cwd=out, stdout=o, stderr=e).returncode
    wall = time.monotonic() - t0
    text, err = open(log + ".out").read(), open(log + ".err").read()
    m = re.search(r"fabsim_bench link_hops=(\d+) events=(\d+)", err)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    ends = [float(x) for x in re.findall(r" finished at ([0-9.e+-]+)", text)]
    if rc or not m:
        return None
    return {"elapsed": wall, "hops": int(m.group(1)), "events": int(m.group(2)),
            "rss": int(rss.group(1)) / 1024 if rss else float("nan"), "done": len(ends),
            "sim": max(ends) / 1e6 if ends else float("nan")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--htsim-dir", required=True, help="a csg-htsim checkout (or its sim/ directory)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("sizes", nargs="+", type=int)
    a = ap.parse_args()
    src = os.path.abspath(a.htsim_dir)
    if os.path.isdir(os.path.join(src, "sim")):
        src = os.path.join(src, "sim")
    if not os.path.exists(os.path.join(src, "datacenter", "main_roce.cpp")):
        sys.exit("htsim_peer: %s has no datacenter/main_roce.cpp (a csg-htsim checkout?)" % src)
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    exe = build(src, out)
    failed = 0
    for n in a.sizes:
        topo, cm = inputs(out, n)
        runs = [x for x in (run_once(exe, out, n, topo, cm, r) for r in range(1, a.repeat + 1)) if x]
        if not runs:
            print("htsim size=%d FAILED (see %s/htsim-%d.r*)" % (n, out, n))
            failed = 1
            continue
        runs.sort(key=lambda x: x["elapsed"])
        m = runs[len(runs) // 2]
        print("htsim size=%d sim_time_s=%.9g elapsed_s=%.3f link_hops=%d events=%d rss_mb=%.0f flows_done=%d/%d runs=%d"
              % (n, m["sim"], m["elapsed"], m["hops"], m["events"], m["rss"], m["done"], n, len(runs)))
        sys.stdout.flush()
    return failed


if __name__ == "__main__":
    sys.exit(main())
