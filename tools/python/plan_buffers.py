#!/usr/bin/env python3
"""Capacity planning with libfabsim: two questions answered by many small runs.

1. The smallest shared switch buffer with zero drops for a 16:1 incast
   (scenarios/incast.yaml): double from 64 KiB until the drops stop (at most
   64 MiB), then bisect to 5% precision.
2. The largest leaf oversubscription (1:1, 2:1, 4:1, 8:1: spines 8, 4, 2, 1 for
   8 hosts per leaf) that keeps a training step (scenarios/training-leaf-spine.yaml:
   a mixture-of-experts model whose all-to-alls cross the spines) within 5% of
   its 1:1 step time.

    python3 tools/python/plan_buffers.py [--src REPO_ROOT]

Needs build/libfabsim.so (ninja -C build) or FABSIM_LIB.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabsim  # noqa: E402

KiB, MiB = 1024, 1024 * 1024


def fmt_bytes(n):
    if n >= MiB:
        return "%.2f MiB" % (n / MiB)
    return "%.1f KiB" % (n / KiB)


def drops_with_buffer(path, buffer):
    """Drops of the scenario at `path` with a shared switch buffer of `buffer` bytes."""
    # overrides accumulate on a Scenario, so each point loads its own
    with fabsim.Scenario.from_file(path) as s:
        s.set("fabric.switch.buffer", str(int(buffer)))
        with s.run() as run:
            if not run.ok:
                raise fabsim.FabsimError("run failed at buffer %d: %s" % (buffer, run.failure))
            return int(run.number("drops"))


def smallest_buffer(path, lo=64 * KiB, hi=64 * MiB, precision=0.05, log=print):
    """The smallest buffer (bytes) in [lo, hi] with zero drops, to `precision`;
    None if even `hi` drops. Returns (buffer, runs)."""
    runs = 0
    b, ok = lo, None
    last_bad = None
    while b <= hi:  # doubling
        d = drops_with_buffer(path, b)
        runs += 1
        log("  buffer %-12s drops %d" % (fmt_bytes(b), d))
        if d == 0:
            ok = b
            break
        last_bad = b
        b *= 2
    if ok is None:
        return None, runs
    if last_bad is None:
        return ok, runs
    bad = last_bad
    while (ok - bad) > precision * ok:  # bisect: bad drops, ok does not
        mid = (bad + ok) // 2
        d = drops_with_buffer(path, mid)
        runs += 1
        log("  buffer %-12s drops %d" % (fmt_bytes(mid), d))
        if d == 0:
            ok = mid
        else:
            bad = mid
    return ok, runs


def largest_oversubscription(path, tolerance=0.05, log=print):
    """[(ratio, step_time_s)] for spines 8, 4, 2, 1, and the largest ratio within tolerance of 1:1.
    The step time is the training step's (JSON step.step_time_s), or the run's
    sim time for a scenario that is not training."""
    points = []
    base = None
    best = None
    for spines in (8, 4, 2, 1):
        ratio = 8 // spines
        with fabsim.Scenario.from_file(path) as s:
            s.set("fabric.topology.hosts_per_leaf", "8")
            s.set("fabric.topology.spines", str(spines))
            with s.run() as run:
                if not run.ok:
                    raise fabsim.FabsimError("run failed at %d:1: %s" % (ratio, run.failure))
                t = run.number("step.step_time_s")
                if t != t:  # NaN: not a training scenario
                    t = run.number("sim_time_s")
        if base is None:
            base = t
        slow = t / base - 1
        within = slow <= tolerance
        log("  %d:1 (%d spines)  step time %9.3f us  %+6.1f%%  %s" % (ratio, spines, t * 1e6, slow * 100,
                                                                    "ok" if within else "too slow"))
        points.append((ratio, t))
        if within:
            best = ratio
    return best, points


def main(argv=None, log=print):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.environ.get("FABSIM_SRC", fabsim._ROOT), help="fabsim repository root")
    ap.add_argument("--incast", help="incast scenario (default scenarios/incast.yaml)")
    ap.add_argument("--training", help="training scenario (default scenarios/training-leaf-spine.yaml)")
    a = ap.parse_args(argv)
    incast = a.incast or os.path.join(a.src, "scenarios", "incast.yaml")
    perm = a.training or os.path.join(a.src, "scenarios", "training-leaf-spine.yaml")

    log("libfabsim %s" % fabsim.version())
    log("smallest zero-drop switch buffer for %s:" % os.path.basename(incast))
    buf, runs = smallest_buffer(incast, log=log)
    if buf is None:
        log("=> drops even at 64 MiB")
    else:
        log("=> %s (%d bytes) is enough, within 5%% (%d runs)" % (fmt_bytes(buf), buf, runs))
    log("largest oversubscription within 5%% of 1:1 for %s:" % os.path.basename(perm))
    ratio, points = largest_oversubscription(perm, log=log)
    log("=> %d:1" % ratio)
    return {"buffer": buf, "buffer_runs": runs, "oversubscription": ratio, "points": points}


if __name__ == "__main__":
    main()
