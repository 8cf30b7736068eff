#!/usr/bin/env python3
"""A run over MPI processes (`mpirun -np N fabsim run`), as a test.

- every shipped scenario (scenarios/*.yaml and scenarios/validation/*.yaml)
  gives the same JSON summary, byte for byte but the wall-clock fields, and
  the same exit status on 1, 2 and 4 processes (mpirun --oversubscribe);
- the scenarios that cannot be split say why on stderr and run in the first
  process alone; exactly those named below do, so a cut that stops working
  fails here;
- the other processes print nothing: one summary on stdout;
- the HDF5 output (queue samples per port and priority, flow rates, link
  bytes, flows, the timeline) is the same, dataset for dataset.

Run by meson test (env FABSIM = the fabsim binary, FABSIM_SRC = the
repository) when Meson found MPI and mpirun is on the PATH; by hand:
python3 tests/test_mpi.py. With FABSIM_MPI_QUICK=1 (the sanitizer build),
a few scenarios on 1 and 2 processes.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABSIM = os.environ.get("FABSIM") or os.path.join(SRC, "build", "fabsim")
WALL = ("wall_s", "events_per_s", "packet_hops_per_s")
MPIRUN = shutil.which("mpirun")
QUICK = os.environ.get("FABSIM_MPI_QUICK") == "1"
QUICK_SET = ("quickstart.yaml", "pfc-deadlock-ring.yaml", "dgx-h100-rails.yaml", "incast-dcqcn.yaml",
             "training-leaf-spine.yaml", "link-failure.yaml")
PROCS = (2,) if QUICK else (2, 4)

# Scenarios run by the first process alone, and why (the stderr line's tail), from how many processes on.
ONE_PART = "1 part that may not be split"
TWO_PARTS = "at most 2 ranks"
SHARP = "SHARP's aggregation trees join switches across any cut"
ALONE = {
    "sharp-dgx-h100.yaml": (SHARP, 2),
    "nvls-allreduce.yaml": (ONE_PART, 2),
    "dgx-a100.yaml": (ONE_PART, 2),
    "dgx-b200.yaml": (ONE_PART, 2),
    "dgx-h100.yaml": (ONE_PART, 2),
    "dgx-h200.yaml": (ONE_PART, 2),
    "gb200-nvl72.yaml": (ONE_PART, 2),
    "gb300-nvl72.yaml": (TWO_PARTS, 4),
    "amd-mi300x.yaml": (TWO_PARTS, 4),
    "mi300x.yaml": (ONE_PART, 2),
    "nccl-tests-dgx-h100.yaml": (TWO_PARTS, 4),
    "a100-roce-16nic.yaml": (TWO_PARTS, 4),
    "aws-p4d.yaml": (TWO_PARTS, 4),
    "b200-roce.yaml": (TWO_PARTS, 4),
    "h200-roce.yaml": (TWO_PARTS, 4),
    "dgx-h100-ib.yaml": (TWO_PARTS, 4),
    "trace-two-stage.yaml": (TWO_PARTS, 4),
}


def scenarios():
    out = sorted(glob.glob(os.path.join(SRC, "scenarios", "*.yaml")))
    out += sorted(p for p in glob.glob(os.path.join(SRC, "scenarios", "validation", "*.yaml"))
                  if not p.endswith("cases.yaml"))
    return [p for p in out if os.path.basename(p) in QUICK_SET] if QUICK else out


def run(path, procs, *more):
    cmd = [FABSIM, "run", path, "--json", *more]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    if procs > 1:
        cmd = [MPIRUN, "--oversubscribe", "-np", str(procs)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    return p


def summary(p, what):
    try:
        d = json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError(f"{what}: no JSON on stdout ({e}); stderr: {p.stderr[-2000:]}")
    for k in WALL:
        d.pop(k, None)
    return d


@unittest.skipUnless(MPIRUN, "mpirun is not on the PATH")
class TestMpi(unittest.TestCase):
    def test_same_results_on_1_2_4_processes(self):
        split = 0
        for path in scenarios():
            name = os.path.basename(path)
            one = run(path, 1)
            want = summary(one, f"{name} on 1 process")
            for procs in PROCS:
                with self.subTest(scenario=name, processes=procs):
                    p = run(path, procs)
                    got = summary(p, f"{name} on {procs} processes")
                    self.assertEqual(p.returncode, one.returncode, p.stderr[-2000:])
                    self.assertEqual(p.stdout.count("\n"), 1, "one summary, from the first process")
                    self.assertEqual(got, want, f"{name}: {procs} processes differ from one")
                    alone = re.search(r"fabsim: %d processes: the first runs it alone: (.*)" % procs, p.stderr)
                    if name in ALONE and procs >= ALONE[name][1]:
                        self.assertTrue(alone and ALONE[name][0] in alone.group(1), p.stderr[-2000:])
                    else:
                        self.assertIsNone(alone, p.stderr[-2000:])
                        split += 1
        self.assertGreaterEqual(split, 5 if QUICK else 16, "the shipped scenarios that can be split run split")

    def test_flows_cross_processes(self):
        """The permutation's flows cross the cut: the first process alone would not have its events."""
        path = os.path.join(SRC, "scenarios", "leaf-spine-permutation-128.yaml")
        one = summary(run(path, 1), "1 process")
        p = run(path, 2)
        self.assertEqual(summary(p, "2 processes"), one)
        self.assertNotIn("runs it alone", p.stderr)

    def test_a_flow_that_gives_up(self):
        """As on threads, the run stops at the end of the window where a flow gave up: the same flow fails
        as with one process, and the JSON is the threads' (which may count more events than one engine's)."""
        path = os.path.join(SRC, "scenarios", "leaf-spine-permutation-128.yaml")
        more = ("--set", "cluster.nic.max_timeouts=1", "--set", "cluster.nic.rto=12us",
                "--set", "fabric.switch.buffer=9KiB")
        one = run(path, 1, *more)
        threads = run(path, 1, "--threads", "2", *more)
        procs = run(path, 2, *more)
        for p in (one, threads, procs):
            self.assertEqual(p.returncode, 1, p.stderr[-2000:])
        want = summary(one, "1 process")
        self.assertIn("made no progress after 1 retransmission timeouts", want["failure"])
        got = summary(procs, "2 processes")
        self.assertEqual(got["failure"], want["failure"])
        self.assertEqual(got, summary(threads, "2 threads"))

    @unittest.skipUnless(shutil.which("h5dump"), "h5dump is not on the PATH")
    def test_same_hdf5(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            names = ("incast-dcqcn.yaml",) if QUICK else ("incast-dcqcn.yaml", "incast-pfc.yaml", "dgx-h100-rails.yaml",
                                                          "training-leaf-spine.yaml")
            for name in names:
                path = os.path.join(SRC, "scenarios", name)
                dumps = {}
                for procs in (1,) + PROCS:
                    h5 = os.path.join(tmp, f"{procs}.h5")
                    p = run(path, procs, "--hdf5", h5)
                    self.assertEqual(p.returncode, 0, p.stderr[-2000:])
                    self.assertNotIn("runs it alone", p.stderr)
                    d = subprocess.run(["h5dump", h5], capture_output=True, text=True).stdout
                    dumps[procs] = d.split("\n", 1)[1]  # past the file's name
                    self.assertIn("queues", dumps[procs])
                with self.subTest(scenario=name):
                    self.assertEqual(dumps[2], dumps[1])
                    if not QUICK:
                        self.assertEqual(dumps[4], dumps[1])

    def test_threads_and_processes_refused(self):
        path = os.path.join(SRC, "scenarios", "quickstart.yaml")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        p = subprocess.run([MPIRUN, "--oversubscribe", "-np", "2", FABSIM, "run", path, "--threads", "2"],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--threads and several MPI ranks", p.stderr)
        self.assertEqual(p.stdout, "")


if __name__ == "__main__":
    unittest.main()
