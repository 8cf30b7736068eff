#!/usr/bin/env python3
"""The bare event loop (tests/bench_bare.c): a run's trace (FABSIM_EVENT_TRACE)
replays through the engine alone, every event of the run popped once, and
recording it changes nothing in the run."""
import json
import os
import subprocess
import tempfile
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABSIM = os.environ.get("FABSIM") or os.path.join(SRC, "build", "fabsim")
BARE = os.environ.get("BENCH_BARE") or os.path.join(SRC, "build", "tests", "bench_bare")
WALL = ("wall_s", "events_per_s", "packet_hops_per_s")


def run(scenario, *sets, trace=None):
    env = dict(os.environ)
    env.pop("FABSIM_EVENT_TRACE", None)
    if trace:
        env["FABSIM_EVENT_TRACE"] = trace
    args = [FABSIM, "run", os.path.join(SRC, "scenarios", scenario), "--json"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    d = json.loads(p.stdout)
    for k in WALL:
        d.pop(k, None)
    return d, p.stderr


def bare(path):
    return subprocess.run([BARE, path, "1"], capture_output=True, text=True, timeout=300)


class BareLoop(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.trace = os.path.join(self.dir.name, "events.bin")

    def tearDown(self):
        self.dir.cleanup()

    def check_replay(self, scenario, *sets):
        plain, _ = run(scenario, *sets)
        traced, _ = run(scenario, *sets, trace=self.trace)
        self.assertEqual(plain, traced, "recording changed the run")
        p = bare(self.trace)
        self.assertEqual(p.returncode, 0, p.stderr)
        fields = dict(kv.split("=") for kv in p.stdout.split()[1:])
        self.assertEqual(int(fields["events"]), plain["events"])
        self.assertGreaterEqual(int(fields["pushes"]), plain["events"])
        self.assertGreater(float(fields["ns_per_event"]), 0)
        return fields

    def test_lossy_permutation(self):
        self.check_replay("leaf-spine-permutation-128.yaml", "workload.size=256KiB")

    def test_pfc_incast(self):
        self.check_replay("incast-pfc.yaml")

    def test_collective_on_gpus(self):
        self.check_replay("nvls-allreduce.yaml")

    def test_a_cut_trace_is_refused(self):
        run("incast.yaml", trace=self.trace)
        with open(self.trace, "r+b") as f:
            f.truncate(os.path.getsize(self.trace) - 8)
        p = bare(self.trace)
        self.assertEqual(p.returncode, 1)
        self.assertIn("24-byte records", p.stderr)

    def test_a_trace_out_of_order_is_refused(self):
        run("incast.yaml", trace=self.trace)
        with open(self.trace, "r+b") as f:  # the last push moved to before the loop: its time has gone by
            data = bytearray(f.read())
            data[-24:-16] = bytes(8)
            f.seek(0)
            f.write(data)
        p = bare(self.trace)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("left the run's order", p.stderr)

    def test_a_failed_write_is_said(self):
        d, err = run("incast.yaml", trace="/dev/full")
        self.assertIn("a write failed; the trace is incomplete", err)
        self.assertEqual(d["status"], "ok")

    def test_none_with_fast_forward(self):
        _, err = run("spray-elephant.yaml", "fabric.fast_forward=on", trace=self.trace)
        self.assertIn("not with fabric.fast_forward", err)
        self.assertFalse(os.path.exists(self.trace))


if __name__ == "__main__":
    unittest.main(verbosity=2)
