#!/usr/bin/env python3
"""The house rules of fabsim's layout (README "Where things are"), checked.

- sim/ names no network, GPU, collective or training concept (outside comments);
- the layers point down only: sim/ includes nothing above it, models/ nothing
  from topologies/, workloads/ or tools/, topologies/ and workloads/ nothing
  from each other or from tools/;
- no file of the library over 1,000 lines, no function over 120 lines (the
  CLI commands in tools/*.c are held to the function limit too);
- libfabsim.so exports the documented fabsim_* functions and nothing else.

Run by meson test (env FABSIM_SRC = the repository, FABSIM_LIB = the shared
library) or by hand: FABSIM_LIB=build/libfabsim.so python3 tests/test_house.py.
"""
import glob
import os
import re
import subprocess
import sys
import unittest

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.environ.get("FABSIM_LIB") or os.path.join(SRC, "build", "libfabsim.so")

LAYERS = {  # what each layer may include (besides itself and system headers)
    "sim": set(),
    "models": {"sim"},
    "topologies": {"models", "sim"},
    "workloads": {"sim"},
    "tools/libfabsim": {"sim", "models", "topologies", "workloads"},
}
LIBRARY = ["sim", "models", "topologies", "workloads", "tools/libfabsim"]
NETWORK_WORDS = re.compile(r"\b(pfc|ecn|nvls|nvlink|collective|collectives|allreduce|nic|gpu|gpus|training|busbw|"
                           r"spine|leaf|packet|packets|flow|flows|rank|ranks|nccl|port|ports)\b", re.I)  # (`switch` is C's)


def read(path):
    with open(path) as f:
        return f.read()


def files(layer, exts=(".c", ".h")):
    out = []
    for e in exts:
        out += sorted(glob.glob(os.path.join(SRC, layer, "*" + e)))
    return out


def strip_comments(text):
    """The code without comments and string literals (kept as empty strings)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def functions(text):
    """(name, first line, length in lines) of every function definition: a
    line that opens a top-level brace after a parenthesised parameter list."""
    code = strip_comments(text).split("\n")
    out, depth, start, name = [], 0, None, None
    for i, line in enumerate(code):
        if depth == 0 and "{" in line and start is None:
            head = " ".join(code[max(0, i - 3):i + 1])
            m = re.search(r"(\w+)\s*\([^;{}]*\)\s*(G_GNUC_\w+\s*(\([^)]*\))?\s*)*\{", head)
            if m and not re.search(r"=\s*\{", line) and not re.match(r"\s*(struct|union|enum|typedef)\b", line):
                start, name = i, m.group(1)
        depth += line.count("{") - line.count("}")
        if start is not None and depth == 0:
            out.append((name, start + 1, i - start + 1))
            start = None
    return out


class TestHouse(unittest.TestCase):
    def test_sim_knows_no_networks(self):
        bad = []
        for f in files("sim"):
            for n, line in enumerate(strip_comments(read(f)).split("\n"), 1):
                for m in NETWORK_WORDS.finditer(line):
                    bad.append("%s:%d: %s" % (os.path.relpath(f, SRC), n, m.group(0)))
        self.assertEqual(bad, [], "sim/ names network concepts:\n" + "\n".join(bad))

    def test_layers_point_down(self):
        bad = []
        for layer, allowed in LAYERS.items():
            for f in files(layer):
                for n, line in enumerate(read(f).split("\n"), 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or "/" not in m.group(1):
                        continue
                    target = os.path.dirname(m.group(1))
                    if target != layer and target not in allowed:
                        bad.append("%s:%d includes %s" % (os.path.relpath(f, SRC), n, m.group(1)))
        self.assertEqual(bad, [], "\n".join(bad))

    def test_file_and_function_sizes(self):
        big, long_fns = [], []
        for layer in LIBRARY + ["tools"]:
            for f in files(layer):
                text = read(f)
                rel = os.path.relpath(f, SRC)
                if layer != "tools" and text.count("\n") > 1000:
                    big.append("%s: %d lines" % (rel, text.count("\n")))
                for name, line, length in functions(text):
                    if length > 120:
                        long_fns.append("%s:%d: %s() is %d lines" % (rel, line, name, length))
        self.assertEqual(big, [], "files over 1000 lines:\n" + "\n".join(big))
        self.assertEqual(long_fns, [], "functions over 120 lines:\n" + "\n".join(long_fns))

    def test_function_finder_finds_functions(self):
        text = "static int f(int a) {\n  if (a) {\n    return 1;\n  }\n  return 0;\n}\nstatic const int t[] = {1, 2};\n"
        self.assertEqual(functions(text), [("f", 1, 6)])

    @unittest.skipUnless(os.path.exists(LIB), "no shared library built")
    def test_library_exports_only_the_api(self):
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True, check=True).stdout
        names = sorted({l.split()[-1] for l in out.splitlines() if l.split() and l.split()[-2] in "TDBRV"})
        header = read(os.path.join(SRC, "tools", "libfabsim", "fabsim.h"))
        documented = sorted(set(re.findall(r"\b(fabsim_\w+)\s*\(", header)))
        self.assertEqual([n for n in names if not n.startswith("_")], documented)


if __name__ == "__main__":
    unittest.main(verbosity=2)
