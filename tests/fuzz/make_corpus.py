#!/usr/bin/env python3
"""Refresh the copied part of the fuzz seed corpus (tests/fuzz/corpus/).

corpus/scenario/   scenarios/*.yaml     as scenarios-NAME.yaml
                   tests/scenarios/*.yaml  as tests-NAME.yaml
                   tests/bad/*.yaml     as bad-NAME.yaml (bad inputs are good seeds)
corpus/nccltests/  tests/data/*.log     as NAME.log (and hand-*.log, written by hand)
corpus/set/        written by hand (a scenario name, then KEY=VALUE lines);
                   not touched here
corpus/trace/      written by hand (text traces) and by make_chakra_seed.py
                   (a Chakra file); not touched here

The copies are kept in the tree so that the corpus is what the unit tests
replay (tests/fuzz/meson.build) even where the sources change; rerun this
after adding a scenario or a bad input. A copy whose source is gone is
removed (in the prefixed groups only). Prints what changed; when anything
did, touches tests/fuzz/meson.build so that the builds configure again and
replay the new list.

The inputs the unit tests replay are listed here too (meson reads the list
at configure time, having no glob): every file of corpus/TARGET/ and of
regress/TARGET/ as "TARGET<TAB>KIND<TAB>PATH" (PATH relative to tests/fuzz/).
Regression inputs named resource-* (well-formed but enormous scenarios,
waiting for a load-time resource estimate), and the oom-* and timeout-*
inputs tools/fuzz saves before anyone has looked at them, are listed with
the kind "resource" (replayed only on request: in the gcc build nothing
bounds their memory); the others "corpus" or "regress". An oom or timeout
input that turns out to be a bug on a small input (a loop that never ends)
is renamed hang-* or crash-* and so joins the unit tests.

usage: make_corpus.py                  refresh the copies
       make_corpus.py --list           print "TARGET<TAB>KIND<TAB>PATH" per input
       make_corpus.py --check-listed LINE...
                                       exit 1 if the inputs on disk are not the
                                       LINEs given (meson test fuzz_inputs: the
                                       build was configured before an input was
                                       added; reconfigure)
"""
import filecmp
import glob
import os
import shutil
import sys

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(SRC, "tests", "fuzz", "corpus")
COPIES = [  # (corpus dir, prefix, source glob)
    ("scenario", "scenarios-", "scenarios/*.yaml"),
    ("scenario", "tests-", "tests/scenarios/*.yaml"),
    ("scenario", "bad-", "tests/bad/*.yaml"),
    ("nccltests", "", "tests/data/*.log"),
]


TARGETS = ["scenario", "set", "nccltests", "trace"]
RESOURCE = ("resource-", "oom-", "timeout-")


def listing():
    """The inputs the unit tests replay, as --list prints them."""
    out = []
    for target in TARGETS:
        for kind in ("corpus", "regress"):
            d = os.path.join(SRC, "tests", "fuzz", kind, target)
            for path in sorted(glob.glob(os.path.join(d, "*"))):
                if os.path.isfile(path):
                    name = os.path.basename(path)
                    k = "resource" if kind == "regress" and name.startswith(RESOURCE) else kind
                    out.append("%s\t%s\t%s/%s/%s" % (target, k, kind, target, name))
    return out


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(listing()))
        return 0
    if sys.argv[1:2] == ["--check-listed"]:
        now, then = set(listing()), set(sys.argv[2:])
        for line in sorted(now - then):
            print("not replayed by this build: %s" % line.replace("\t", " "))
        for line in sorted(then - now):
            print("replayed but gone: %s" % line.replace("\t", " "))
        if now != then:
            print("the fuzz inputs changed since meson configured this build: meson setup --reconfigure BUILD")
            return 1
        print("%d fuzz inputs, all replayed" % len(now))
        return 0
    if sys.argv[1:]:
        sys.exit(__doc__)
    changed = 0
    for target, prefix, pattern in COPIES:
        out_dir = os.path.join(CORPUS, target)
        os.makedirs(out_dir, exist_ok=True)
        sources = sorted(glob.glob(os.path.join(SRC, pattern)))
        wanted = set()
        for src in sources:
            name = prefix + os.path.basename(src)
            wanted.add(name)
            dst = os.path.join(out_dir, name)
            if not os.path.exists(dst) or not filecmp.cmp(src, dst, shallow=False):
                shutil.copyfile(src, dst)
                print("copied %s -> %s" % (os.path.relpath(src, SRC), os.path.relpath(dst, SRC)))
                changed += 1
        ext = os.path.splitext(pattern)[1]
        for old in sorted(glob.glob(os.path.join(out_dir, prefix + "*" + ext))):
            if prefix and os.path.basename(old) not in wanted:  # (unprefixed: a seed may be written by hand)
                os.remove(old)
                print("removed %s (its source is gone)" % os.path.relpath(old, SRC))
                changed += 1
    if changed:  # meson lists the inputs when it configures: make the builds configure again
        os.utime(os.path.join(SRC, "tests", "fuzz", "meson.build"))
    print("make_corpus.py: %d change%s" % (changed, "" if changed == 1 else "s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
