#!/usr/bin/env python3
"""fabsim-replay on this machine: real processes (mpirun --oversubscribe) over
libfabric's tcp and shm providers on loopback, no RDMA hardware.

- allreduce (ring and tree), allgather, all-to-all and send-recv each on tcp
  with 2 processes and on shm with 4, a flows workload on 2, tagged sends and
  RMA writes each on both providers: every byte checked at its receiver
  (exit 0), the JSON in fabsim's schema with the simulator's flow count,
  bytes and collectives, each collective's time inside the pass;
- an nccl-tests workload: the log fabsim-replay writes is read by
  `fabsim compare` against the same scenario (its ranks counted), and so is
  its JSON summary, to the same times; `fabsim plot` draws its HDF5;
- a process that sends a wrong byte: its receiver names the flow, the peer and
  the byte, exit 1;
- a process that hangs: the others end within the timeout, naming the peer
  they wait for; a process that dies: the job ends at once, naming it;
- refusals, exit 2, nothing written: the wrong number of processes, an NVLS
  scenario, an unknown provider, a bad option; the verbs backend (when built:
  FABSIM_REPLAY_VERBS=1) on a machine with no RDMA device.

Run by meson test (env FABSIM = the fabsim binary, FABSIM_REPLAY = fabsim-replay,
FABSIM_SRC = the repository) when Meson found MPI and libfabric. With
FABSIM_REPLAY_QUICK=1 (sanitizer builds): the tcp provider and 2 processes only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABSIM = os.environ.get("FABSIM") or os.path.join(SRC, "build", "fabsim")
REPLAY = os.environ.get("FABSIM_REPLAY") or os.path.join(SRC, "build", "fabsim-replay")
MPIRUN = shutil.which("mpirun")
VERBS = os.environ.get("FABSIM_REPLAY_VERBS") == "1" and not os.path.isdir("/sys/class/infiniband")
QUICK = os.environ.get("FABSIM_REPLAY_QUICK") == "1"
PROVIDERS = ("tcp",) if QUICK else ("tcp", "shm")
PROCS = (2,) if QUICK else (2, 4)
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")

FABRIC = """seed: 1
cluster: {{nodes: {n}}}
fabric:
  topology: {{kind: leaf-spine, hosts_per_leaf: 2, spines: 1}}
  link: {{bandwidth: 100Gbps, latency: 1us}}
"""
WORKLOADS = {
    "allreduce-ring": "{kind: collective, op: allreduce, size: 1MiB, algorithm: ring}",
    "allreduce-tree": "{kind: collective, op: allreduce, size: 1MiB, algorithm: tree}",
    "allgather": "{kind: collective, op: allgather, size: 256KiB}",
    "all-to-all": "{kind: collective, op: all-to-all, size: 256KiB}",
    "send-recv": "{kind: collective, op: send-recv, size: 256KiB}",
    "flows": "{kind: flows, flows: [{src: 0, dst: 1, size: 100000}, {src: 1, dst: 0, size: 3, start: 20us}]}",
}


def run(args, procs, env=None, timeout=120):
    cmd = [MPIRUN, "--oversubscribe", "-np", str(procs), REPLAY] + args
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(ENV, **(env or {})))
    return p, time.monotonic() - t0


@unittest.skipUnless(MPIRUN and os.path.exists(REPLAY), "needs mpirun and fabsim-replay (MPI and libfabric)")
class Replay(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fabsim-replay-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def scenario(self, name, n, workload):
        path = os.path.join(self.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write("name: %s\n" % name + FABRIC.format(n=n) + "workload: %s\n" % workload)
        return path

    def cases(self):
        """(workload, processes, provider, rma): every op on both providers and both process counts, tagged sends
        and RMA writes each on both providers (under the sanitizers: tcp, 2 processes)."""
        out = []
        for wl in WORKLOADS:
            out.append((wl, 2, "tcp", False))
            if wl != "flows":
                out.append((wl, 4, "shm", False))
        out += [("allreduce-ring", 2, "tcp", True), ("allreduce-ring", 4, "shm", True),
                ("all-to-all", 4, "tcp", True), ("all-to-all", 2, "shm", True)]
        return [c for c in out if not QUICK or (c[1] in PROCS and c[2] in PROVIDERS)]

    def test_workloads_move_checked_bytes(self):
        for wl, procs, prov, rma in self.cases():
            with self.subTest(workload=wl, procs=procs, provider=prov, rma=rma):
                scen = self.scenario("%s-%d" % (wl, procs), procs, WORKLOADS[wl])
                out = os.path.join(self.dir, "out.json")
                p, _ = run([scen, "--provider", prov, "--iters", "2", "--timeout", "20", "--json", out]
                           + (["--rma"] if rma else []), procs)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out) as f:
                    d = json.load(f)
                sim = json.loads(subprocess.run([FABSIM, "run", scen, "--json"], capture_output=True, text=True,
                                                check=True).stdout)
                # the same DAG: as many flows and bytes, the same collectives
                self.assertEqual(d["flows"]["count"], sim["flows"]["count"])
                self.assertEqual(d["flows"]["bytes"], sim["flows"]["bytes"])
                self.assertEqual(d["flows"]["completed"], d["flows"]["count"])
                self.assertEqual([(c["op"], c["bytes"], c["algorithm"]) for c in d["collectives"]],
                                 [(c["op"], c["bytes"], c["algorithm"]) for c in sim["collectives"]])
                for c in d["collectives"]:
                    self.assertGreater(c["time_s"], 0)
                    self.assertLessEqual(c["end_s"], d["sim_time_s"] + 1e-12)
                text, _ = run([scen, "--provider", prov, "--iters", "1", "--warmup", "0"] + (["--rma"] if rma else []),
                              procs) if wl == "allreduce-ring" else (None, None)
                if text:  # the report names the transport and what was checked
                    self.assertIn("over libfabric '%s" % prov, text.stdout)
                    self.assertIn("every byte checked", text.stdout)

    def test_nccl_tests_log_reads_in_compare(self):
        scen = self.scenario("nt", 2, "{kind: nccl-tests, op: allreduce, min: 1KiB, max: 256KiB, factor: 16, "
                                      "iters: 2, algorithm: ring}")
        log, js, h5 = (os.path.join(self.dir, "nt" + ext) for ext in (".log", ".json", ".h5"))
        p, _ = run([scen, "--provider", PROVIDERS[0], "--log", log, "--json", js, "--hdf5", h5], 2)
        self.assertEqual(p.returncode, 0, p.stderr)
        # the JSON reads in compare as the log does, to the same measured times
        cj = subprocess.run([FABSIM, "compare", scen, js, "--json"], capture_output=True, text=True)
        cl = subprocess.run([FABSIM, "compare", scen, log, "--json"], capture_output=True, text=True)
        self.assertEqual(cj.returncode, 0, cj.stderr)
        rows = lambda out: [(r["bytes"], r["measured"]["time_us"]) for r in json.loads(out)["sizes"]]
        self.assertEqual([b for b, _ in rows(cj.stdout)], [1024, 16384, 262144])
        self.assertEqual([b for b, _ in rows(cl.stdout)], [1024, 16384, 262144])
        for (_, tj), (_, tl) in zip(rows(cj.stdout), rows(cl.stdout)):
            # the log prints 7 characters: 2 decimals below 10 ms, 1 below 100 ms (a loaded machine gets there)
            self.assertLessEqual(abs(tj - tl), 0.0051 if tl < 1e4 else 0.051 if tl < 1e5 else 0.51, (tj, tl))
        # and fabsim plot draws its HDF5: bus bandwidth by size, the timeline
        pl = subprocess.run([FABSIM, "plot", h5, "--out", os.path.join(self.dir, "plots")], capture_output=True,
                            text=True)
        if shutil.which("gnuplot"):
            self.assertEqual(pl.returncode, 0, pl.stderr)
            for f in ("busbw.png", "timeline.png"):
                self.assertTrue(os.path.exists(os.path.join(self.dir, "plots", f)), f)
        with open(log) as f:
            text = f.read()
        self.assertIn("all_reduce_perf (replayed by fabsim-replay", text)
        self.assertEqual(text.count("#  Rank "), 2)
        c = subprocess.run([FABSIM, "compare", scen, log], capture_output=True, text=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("measured   2 ranks", c.stdout)
        for size in ("1024", "16384", "262144"):
            self.assertRegex(c.stdout, r"\n +%s +[0-9.]+ " % size)

    def test_probe(self):
        # 2 GPUs per node over 2 nodes: a pair NVLink joins (0 -> 1) and a pair across the network (0 -> 2)
        if QUICK:
            scen, procs, classes = self.scenario("p", 2, WORKLOADS["allreduce-ring"]), 2, ["net"]
        else:
            scen = os.path.join(self.dir, "g.yaml")
            with open(scen, "w") as f:
                f.write("cluster: {node: dgx-h100, nodes: 2, gpus_per_node: 2}\nfabric: {topology: {kind: "
                        "rail-optimized}}\nworkload: {kind: collective, op: allreduce, size: 1MiB, algorithm: ring}\n")
            procs, classes = 4, ["nvlink", "net"]
        p, _ = run([scen, "--probe", "--provider", PROVIDERS[0], "--probe-max", "40000", "--iters", "3", "--json", "-"],
                   procs)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)["probe"]["rows"]
        self.assertEqual([r["class"] for r in rows], [c for c in classes for _ in range(7)])
        for c in classes:
            mine = [r for r in rows if r["class"] == c]
            self.assertEqual([r["bytes"] for r in mine], [8 * 4 ** k for k in range(7)])  # 8 B .. 32 KiB by 4x
            self.assertEqual(mine[0]["from"], 0)
            self.assertEqual(mine[0]["to"], 1 if c == "nvlink" else 2 if not QUICK else 1)
            for r in mine:
                self.assertGreater(r["latency_us"], 0)
                self.assertGreater(r["bandwidth_GBps"], 0)
                self.assertEqual(r["window"], 64)
            self.assertGreater(mine[-1]["bandwidth_GBps"], 10 * mine[0]["bandwidth_GBps"])  # 4096x the bytes

    def test_wrong_byte_fails(self):
        scen = self.scenario("ar", 2, WORKLOADS["allreduce-ring"])
        out = os.path.join(self.dir, "x.json")
        p, _ = run([scen, "--provider", PROVIDERS[0], "--json", out], 2, env={"FABSIM_REPLAY_CORRUPT": "0"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"process 1 \(endpoint 1\), pass 0: flow op \d+ \(\d+ B from process 0, "
                                   r"endpoint 0\): byte \d+ is not what was sent")
        self.assertFalse(os.path.exists(out))

    def test_hung_peer_times_out(self):
        scen = self.scenario("ar", 2, WORKLOADS["allreduce-ring"])
        p, dt = run([scen, "--provider", PROVIDERS[0], "--timeout", "2"], 2, env={"FABSIM_REPLAY_STALL": "0"})
        self.assertNotEqual(p.returncode, 0)
        self.assertRegex(p.stderr, r"process 1 \(endpoint 1\), pass 0: timed out after 2\.0 s without progress: "
                                   r"flow op \d+ \(\d+ B from process 0, endpoint 0\) has not arrived")
        self.assertLess(dt, 30)

    def test_dead_peer_is_named(self):
        # mpirun ends a job as soon as one of its processes dies, and may kill the survivor before it speaks; with
        # --enable-recovery it lets it run: the survivor sees its send fail, names the peer and exits 1 by itself
        # (each process's status written beside it: mpirun's own is 0 under recovery)
        scen = self.scenario("ar", 2, WORKLOADS["allreduce-ring"])
        wrap = os.path.join(self.dir, "wrap.sh")
        with open(wrap, "w") as f:
            f.write('#!/bin/sh\n"$@"\necho $? > "%s/rc.$OMPI_COMM_WORLD_RANK"\n' % self.dir)
        os.chmod(wrap, 0o755)
        cmd = [MPIRUN, "--oversubscribe", "--enable-recovery", "-np", "2", wrap, REPLAY, scen, "--provider", "tcp",
               "--timeout", "5"]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env=dict(ENV, FABSIM_REPLAY_KILL="1"))
        self.assertLess(time.monotonic() - t0, 30)
        # it sees the connection fail or times out waiting: either way it names process 1
        # (a failed transfer says "process 1 (endpoint 1)", a timeout "from process 1, endpoint 1")
        self.assertRegex(p.stderr, r"process 0 \(endpoint 0\), pass 0: .*process 1(, | \()endpoint 1")
        with open(os.path.join(self.dir, "rc.0")) as f:
            self.assertEqual(f.read().strip(), "1")
        with open(os.path.join(self.dir, "rc.1")) as f:
            self.assertEqual(f.read().strip(), "137")  # killed (128 + SIGKILL)

    def test_refusals(self):
        scen = self.scenario("ar", 4, WORKLOADS["allreduce-ring"])
        out = os.path.join(self.dir, "r.json")
        cases = [
            ([scen, "--json", out], 3, "the workload runs on 4 endpoints: start 4 processes (mpirun -np 4), not 3"),
            ([scen, "--provider", "nosuch", "--json", out], 4, "no provider 'nosuch' offers reliable tagged"),
            ([os.path.join(SRC, "scenarios", "nvls-allreduce.yaml"), "--json", out], 8, "is an NVLS"),
            ([scen, "--iters", "0", "--json", out], 2, "--iters 0: expected a positive count"),
            ([scen, "--set", "workload.sise=1", "--json", out], 2, "workload.sise"),
            ([scen, "--backend", "psm", "--json", out], 4, "--backend psm: expected ofi or verbs"),
            ([scen, "--log", out], 4, "--log writes nccl-tests tables, and the workload has no nccl-tests"),
            ([scen, "--probe", "--hdf5", out], 4, "--log and --hdf5 are for the workload"),
        ]
        if VERBS:  # built with ibverbs, on a machine with no RDMA device (CI): said, exit 2
            cases.append(([scen, "--backend", "verbs", "--json", out], 4, "no RDMA device found"))
        for args, procs, msg in cases:
            with self.subTest(msg=msg):
                p, _ = run(args, procs)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)
                self.assertEqual(p.stderr.count("fabsim-replay:"), 1, p.stderr)  # the first process speaks
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)
