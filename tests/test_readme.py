#!/usr/bin/env python3
"""README's console examples reproduce as printed.

Every ```console block of README.md is a session: a line starting with "$ "
is a command (a line ending in a backslash continues it), the lines up to
the next command are what it prints, stdout and stderr together in the
order a terminal shows them (stdout line-buffered). Each block
runs in a fresh scratch directory that holds links to the repository's
scenarios/, tests/ and tools/ and to the build directory as build/, so the
commands read as a user types them at the repository's root and whatever
they write stays out of the tree. `tools/run` stands for `build/fabsim run`
and `tools/validate` for `python3 tools/python/validate.py --fabsim
build/fabsim` (both would otherwise install packages and build first),
except the one bare `$ tools/validate`, the validation suite's table,
which tests/test_validation.py compares with the run it makes anyway (the
suite takes minutes; run once).

How printed lines are matched, line by line:
- a line "..." stands for any number of lines (none included);
- a line ending in "..." matches a line that starts with what precedes it;
- the wall-clock parts of the report's engine line ("in 0.005 s (24.05 M
  events/s, 10.33 M hops/s)") are not compared: the counts before them are;
- trailing spaces are ignored.
A command's exit status is not checked (the bad-input examples exit 2);
its output is. FABSIM is the fabsim binary, FABSIM_SRC the repository root.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("FABSIM_SRC", ".")
FABSIM = os.path.abspath(os.environ.get("FABSIM", os.path.join(SRC, "build", "fabsim")))
README = os.path.join(SRC, "README.md")

WALL = re.compile(r" in [0-9.]+ s \([0-9.]+ M events/s, [0-9.]+ M hops/s\)")


def blocks(text):
    """[(first line number, [lines])] of the ```console blocks."""
    out, cur, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if cur is None and line.strip() == "```console":
            cur, start = [], n + 1
        elif cur is not None and line.strip().startswith("```"):
            out.append((start, cur))
            cur = None
        elif cur is not None:
            cur.append(line)
    return out


def session(lines):
    """[(command, [expected lines])]."""
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise AssertionError("a console block must start with a command: %r" % lines[i])
        cmd = lines[i][2:]
        while cmd.endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + " " + lines[i].strip()
        i += 1
        exp = []
        while i < len(lines) and not lines[i].startswith("$ "):
            exp.append(lines[i])
            i += 1
        out.append((cmd, exp))
    return out


def norm(line):
    return WALL.sub(" in S s (R)", line.rstrip())


def matches(exp, got):
    """Does `got` (lines) match the pattern `exp` (lines, with "...")?"""
    exp = [norm(x) for x in exp]
    got = [norm(x) for x in got]

    def at(i, j):
        if i == len(exp):
            return j == len(got)
        if exp[i].strip() == "...":
            return any(at(i + 1, k) for k in range(j, len(got) + 1))
        if j == len(got):
            return False
        e = exp[i]
        ok = got[j].startswith(e[:-3]) if e.endswith("...") else got[j] == e
        return ok and at(i + 1, j + 1)

    return at(0, 0)


def command(cmd):
    cmd = re.sub(r"^tools/run\b", "build/fabsim run", cmd)
    cmd = re.sub(r"^tools/validate\b", "python3 tools/python/validate.py --fabsim build/fabsim", cmd)
    return cmd


class TestReadmeExamples(unittest.TestCase):
    def test_console_examples_reproduce(self):
        with open(README, encoding="utf-8") as f:
            text = f.read()
        found = blocks(text)
        self.assertGreaterEqual(len(found), 8, "README's console examples")
        for start, lines in found:
            work = tempfile.mkdtemp(prefix="fabsim-readme-")
            try:
                for d in ("scenarios", "tests", "tools"):
                    os.symlink(os.path.abspath(os.path.join(SRC, d)), os.path.join(work, d))
                os.symlink(os.path.dirname(FABSIM), os.path.join(work, "build"))
                env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
                for cmd, exp in session(lines):
                    if cmd.strip() == "tools/validate":
                        continue  # the validation suite's table: test_validation.py compares it with its own run
                    # stdout line-buffered and merged with stderr, in the order a terminal shows them;
                    p = subprocess.run(["stdbuf", "-oL", "-eL", "bash", "-c", command(cmd)], cwd=work, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
                    got = p.stdout.splitlines()
                    with self.subTest(line=start, command=cmd):
                        self.assertTrue(matches(exp, got), "README.md:%d: $ %s\nexpected:\n%s\nprinted:\n%s" % (
                            start, cmd, "\n".join(exp), "\n".join(got)))
            finally:
                shutil.rmtree(work)

    def test_the_matcher(self):
        self.assertTrue(matches(["a", "...", "d"], ["a", "b", "c", "d"]))
        self.assertTrue(matches(["a", "...", "b"], ["a", "b"]))
        self.assertFalse(matches(["a", "b"], ["a", "b", "c"]))
        self.assertTrue(matches(["{\"x\": 1, ..."], ["{\"x\": 1, \"y\": 2}"]))
        self.assertFalse(matches(["{\"x\": 2, ..."], ["{\"x\": 1, \"y\": 2}"]))
        self.assertTrue(matches(["  engine      5 events, 2 packet hops in 0.005 s (24.05 M events/s, 10.33 M hops/s)"],
                                ["  engine      5 events, 2 packet hops in 0.1 s (1.00 M events/s, 2.00 M hops/s)"]))
        self.assertFalse(matches(["  engine      5 events, 2 packet hops in 0.005 s (24.05 M events/s, 1 M hops/s)"],
                                 ["  engine      6 events, 2 packet hops in 0.1 s (1.00 M events/s, 2.00 M hops/s)"]))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
