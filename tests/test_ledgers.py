#!/usr/bin/env python3
"""The model's ledgers at every event, on the small scenarios (a debug_checks
build only: meson -Ddebug_checks=true; .ci/run builds one in build-checks/).

In such a build the engine calls, after every event, the switches' and ports'
checks (models/switch.c fab_switch_check, models/port.c fab_port_check): the
buffer held per (ingress port, priority) adds up to the shared buffer plus
headroom and equals the bytes in the egress queues, the buffer and the
headroom never exceed their sizes, every queue's counts match its list,
credits stay within [0, what they started with]. A broken ledger aborts the
run (SIGTRAP), which fails the case here.

Env: FABSIM (the debug_checks binary), FABSIM_SRC (repository).
"""
import glob
import os
import subprocess
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABSIM = os.environ.get("FABSIM") or os.path.join(SRC, "build-checks", "fabsim")
# small scenarios: every fabric mechanism (lossy, PFC, ECN/DCQCN, credits, NVLink, NVLS, training)
SCENARIOS = sorted(glob.glob(os.path.join(SRC, "tests", "scenarios", "*.yaml"))) + [
    os.path.join(SRC, "scenarios", n) for n in ("quickstart.yaml", "incast-dcqcn.yaml", "pfc-deadlock-ring.yaml")]
SETS = {  # the same fabrics with InfiniBand credits, and an NVLS allreduce on one H100 node
    "credits": ["scenarios/quickstart.yaml", "--set", "fabric.transport=infiniband", "--set", "workload.size=256KiB"],
    "nvls": ["scenarios/validation/dgx-h100.yaml", "--set", "workload.sizes=[1048576]"],
}
FAILS = {"pfc-deadlock-ring.yaml": "PFC deadlock"}  # runs that end failed, on purpose


class Ledgers(unittest.TestCase):
    def run_one(self, args, expect_fail=None):
        p = subprocess.run([FABSIM, "run", "--json"] + args, capture_output=True, text=True, timeout=600,
                           cwd=SRC)
        self.assertGreaterEqual(p.returncode, 0, "%s: killed by signal %d (a ledger broke?)\n%s" %
                                (args[0], -p.returncode, p.stderr[-2000:]))
        if expect_fail:
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(expect_fail, p.stderr)
        else:
            self.assertEqual(p.returncode, 0, "%s: exit %d\n%s" % (args[0], p.returncode, p.stderr[-2000:]))

    def test_scenarios(self):
        for s in SCENARIOS:
            with self.subTest(scenario=os.path.basename(s)):
                self.run_one([s], FAILS.get(os.path.basename(s)))

    def test_credits_and_nvls(self):
        for name, args in SETS.items():
            with self.subTest(case=name):
                self.run_one(args)


if __name__ == "__main__":
    unittest.main()
