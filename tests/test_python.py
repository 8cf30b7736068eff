#!/usr/bin/env python3
"""The Python wrapper of libfabsim (tools/python/fabsim.py) and its planning example.

Run by meson test (env FABSIM_LIB = the built shared library, FABSIM_SRC = the
repository root) or by hand: python3 tests/test_python.py.
"""
import os
import shutil
import sys
import tempfile
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tools", "python"))
import fabsim  # noqa: E402
import plan_buffers  # noqa: E402

WALL = ("wall_s", "events_per_s", "packet_hops_per_s")


def scenario(name):
    return os.path.join(SRC, "scenarios", name)


def without_wall(d):
    return {k: v for k, v in d.items() if k not in WALL}


class TestFabsim(unittest.TestCase):
    def test_version(self):
        self.assertEqual(fabsim.version(), "0.1.0")

    def test_quickstart(self):
        run = fabsim.Scenario.from_file(scenario("quickstart.yaml")).run()
        self.assertEqual(run.status, "ok")
        self.assertTrue(run.ok)
        self.assertEqual(run.exit_status, 0)
        self.assertIsNone(run.failure)
        js = run.json()
        self.assertEqual(js["flows"]["completed"], 32)
        self.assertEqual(js["status"], "ok")
        self.assertEqual(run.number("flows.completed"), 32)
        self.assertEqual(run.number("sim_time_s"), js["sim_time_s"])
        self.assertEqual(run.number("events"), js["events"])
        # a name not in the summary raises, with the closest names; null reads as None
        with self.assertRaisesRegex(fabsim.FabsimError, r"no numeric field 'flows.complted'.*'flows.completed'"):
            run.number("flows.complted")
        with self.assertRaisesRegex(fabsim.FabsimError, "no numeric field 'no_such_field'"):
            run.number("no_such_field")
        with self.assertRaisesRegex(fabsim.FabsimError, "'topology' is not a number"):
            run.number("topology")
        self.assertIsNone(run.number("deadlock"))
        self.assertIsNone(run.number("step.step_time_s"))   # step is null: not a training run
        flows = run.flows()
        self.assertEqual(len(flows), 32)
        self.assertEqual(sum(f["bytes"] for f in flows), js["flows"]["bytes"])
        self.assertAlmostEqual(max(f["end_s"] for f in flows), js["sim_time_s"], delta=1e-15)
        self.assertEqual(run.collectives(), [])

    def test_two_runs_identical(self):
        sc = fabsim.Scenario.from_file(scenario("incast.yaml"))
        a, b = sc.run().json(), sc.run().json()
        self.assertGreater(a["drops"], 0)
        self.assertEqual(without_wall(a), without_wall(b))

    def test_from_string_and_set(self):
        with open(scenario("quickstart.yaml")) as f:
            text = f.read()
        sc = fabsim.Scenario.from_string(text, "mine.yaml")
        sc.set("fabric.topology.spines", 4)
        js = sc.run().json()
        self.assertIn("4 spines", js["topology"])
        self.assertEqual(js["flows"]["completed"], 32)

    def test_errors(self):
        with self.assertRaises(fabsim.FabsimError) as cm:
            fabsim.Scenario.from_string("name: x\nbogus_key: 1\n", "mine.yaml")
        self.assertTrue(str(cm.exception).startswith("mine.yaml:2:1"), str(cm.exception))
        sc = fabsim.Scenario.from_file(scenario("quickstart.yaml"))
        with self.assertRaises(fabsim.FabsimError) as cm:
            sc.set("fabric.switch.no_such_key=1")
        self.assertIn("--set:1:", str(cm.exception))
        self.assertEqual(sc.run().status, "ok")  # still usable
        with self.assertRaises(fabsim.FabsimError):
            fabsim.Scenario.from_file("/nonexistent/x.yaml")

    def test_collective(self):
        run = fabsim.Scenario.from_file(scenario("nvls-allreduce.yaml")).set("workload.size=1MiB").run()
        (c,) = run.collectives()
        self.assertEqual((c["op"], c["algorithm"], c["bytes"], c["ranks"]), ("allreduce", "nvls", 1048576, 8))
        # the accessors give the result's double; the JSON summary writes it with 9 significant digits
        self.assertEqual(c["busbw_GBps"], run.number("collectives.0.busbw_GBps"))
        self.assertEqual(float("%.9g" % c["busbw_GBps"]), run.json()["collectives"][0]["busbw_GBps"])
        self.assertEqual(c["time_s"], run.number("collectives.0.time_s"))
        self.assertEqual(float("%.9g" % c["time_s"]), run.json()["collectives"][0]["time_s"])

    def test_failing_run(self):
        run = fabsim.Scenario.from_file(scenario("pfc-deadlock-ring.yaml")).run()
        self.assertEqual(run.status, "failed")
        self.assertFalse(run.ok)
        self.assertEqual(run.exit_status, 1)
        self.assertIn("deadlock", run.failure)
        self.assertEqual(run.json()["status"], "failed")

    def test_write_hdf5(self):
        run = fabsim.Scenario.from_file(scenario("quickstart.yaml")).run()
        d = tempfile.mkdtemp(prefix="test-python-")
        try:
            path = os.path.join(d, "out.h5")
            run.write_hdf5(path)
            self.assertGreater(os.path.getsize(path), 0)
            with self.assertRaises(fabsim.FabsimError):
                run.write_hdf5(os.path.join(path, "under-a-file.h5"))
        finally:
            shutil.rmtree(d)

    def test_plan_buffers(self):
        out = plan_buffers.main(["--src", SRC], log=lambda *a: None)
        buf = out["buffer"]
        self.assertIsNotNone(buf)
        # 16 x 1 MiB into one port with alpha 1: the queue gets at most half the
        # buffer, so zero drops needs most of 2 x 16 MiB, and 64 MiB is plenty
        self.assertGreater(buf, 16 * 1024 * 1024)
        self.assertLessEqual(buf, 64 * 1024 * 1024)
        # the 5% claim: the found size has no drops, 5% less does
        self.assertEqual(plan_buffers.drops_with_buffer(scenario("incast.yaml"), buf), 0)
        self.assertGreater(plan_buffers.drops_with_buffer(scenario("incast.yaml"), int(buf * 0.95)), 0)
        self.assertIn(out["oversubscription"], (1, 2, 4, 8))
        ratios = [r for r, _ in out["points"]]
        self.assertEqual(ratios, [1, 2, 4, 8])
        # step times of the MoE training step: slower with every halving of the spines
        times = [t for _, t in out["points"]]
        self.assertEqual(times, sorted(times))
        self.assertGreater(times[-1], 2 * times[0])


if __name__ == "__main__":
    unittest.main(verbosity=2)
