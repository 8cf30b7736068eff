#!/usr/bin/env python3
"""The libFuzzer dictionary of scenario YAML (tests/fuzz/scenario.dict),
generated from the schema tables, and the unit test that keeps it complete.

What it collects, from the C sources of sim/, models/, topologies/,
workloads/ and tools/libfabsim/:
- keys: the name of every schema row, FAB_CFG_KEY("name", FAB_CFG_...) or a
  local shorthand for it (K("name", FAB_CFG_...), TK(...));
- enum values: every string of each array a row names with `.choices =`;
- words read by hand: the word a size_or(..., "word") row accepts (xoff:
  dynamic, headroom: auto), the root's `include`, and `all`, `auto` where a
  node is compared with them (ranks: all, microbatches: auto);
- units: the unit tables and boolean words of sim/cfg_value.c, training's
  FLOP/s units;
- YAML punctuation and a few edge values, listed below.

usage: make_dict.py            write tests/fuzz/scenario.dict
       make_dict.py --check    exit 1 naming every key, enum value or word
                               the dictionary lacks (meson test fuzz_dict)
"""
import glob
import os
import re
import sys

SRC = os.environ.get("FABSIM_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DICT = os.path.join(SRC, "tests", "fuzz", "scenario.dict")
LAYERS = ["sim", "models", "topologies", "workloads", "tools/libfabsim"]

ROW = re.compile(r'\b(?:FAB_CFG_KEY|[A-Z]*K)\(\s*"([^"]+)"\s*,\s*FAB_CFG_[A-Z]+')
CHOICES = re.compile(r"\.choices\s*=\s*(\w+)")
ARRAY = re.compile(r"const\s+char\s*\*\s*const\s+(\w+)\s*\[[^\]]*\]\s*=\s*\{(.*?)\}", re.S)
INITIALIZER = re.compile(r"\[\w*\]\s*=\s*\{(.*?)\};", re.S)
ALIAS = re.compile(r"^\s*#\s*define\s+(\w+)\s+(\w+)\s*$", re.M)
STRING = re.compile(r'"((?:\\.|[^"\\])*)"')
BY_HAND = [re.compile(r'size_or\([^;]*?,\s*"(\w+)"'),                     # xoff: dynamic, headroom/credits: auto
           re.compile(r'g_str_equal\([^;]*?,\s*"(\w+)"\)'),               # ranks: all, microbatches: auto
           re.compile(r'map_find\([^;]*?,\s*"(\w+)"\)'),                  # include
           re.compile(r'strcmp\(\s*\w+->name\s*,\s*"(\w+)"\)')]           # include (the merge)
# YAML and value shapes the schema does not spell: punctuation, nulls, the
# booleans fab_parse_bool takes, numbers at the edges of the value parsers.
EXTRA = [": ", "\n", "\n  ", "\n    ", "- ", "{", "}", "[", "]", ", ", "#", "'", "\"", "~", "null", "include",
         "true", "false", "yes", "no", "on", "off", "%", ":", ".", "=", "-1", "0", "1", "2:1", "1.5", "0.3ps",
         "18446744073709551615", "18446744073709551616", "4294967296", "65536", "1e18", "nan", "inf",
         "&a ", "*a", "!!str ", "---", "...", "? "]


def sources():
    for layer in LAYERS:
        yield from sorted(glob.glob(os.path.join(SRC, layer, "*.c")) + glob.glob(os.path.join(SRC, layer, "*.h")))


def c_strings(text):
    """The string literals of C text, their escapes decoded (a byte per char)."""
    esc = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
    return [re.sub(r"\\x([0-9a-fA-F]{2})|\\(.)", lambda m: chr(int(m.group(1), 16)) if m.group(1)
                   else esc.get(m.group(2), m.group(2)), s) for s in STRING.findall(text)]


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def collect():
    """(keys, enum values, other words), each a sorted list."""
    texts = {p: strip_comments(open(p).read()) for p in sources()}
    arrays, aliases, keys, wanted, words = {}, {}, set(), set(), set()
    for path, text in texts.items():
        for name, body in ARRAY.findall(text):
            arrays.setdefault(name, []).extend(c_strings(body))
        aliases.update(ALIAS.findall(text))
        for m in ROW.finditer(text):  # a row is one line; its choices are on it
            keys.add(m.group(1))
            wanted.update(CHOICES.findall(text[m.end():text.find("\n", m.end())]))
        for rx in BY_HAND:
            words.update(rx.findall(text))
        if path.endswith(os.path.join("sim", "cfg_value.c")):  # the unit tables, the booleans
            for body in INITIALIZER.findall(text):
                words.update(c_strings(body))
    for name, body in arrays.items():
        if name == "units":
            words.update(body)
    values = set()
    for name in wanted:
        name = aliases.get(name, name)
        if name not in arrays:
            sys.exit("make_dict.py: .choices = %s: array not found in %s" % (name, ", ".join(LAYERS)))
        values.update(arrays[name])
    return sorted(keys), sorted(values), sorted(words - keys - values)


def quote(s):
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        else:
            out.append("\\x%02x" % ord(c))
    return '"' + "".join(out) + '"'


def unquote(s):
    return re.sub(r"\\x([0-9a-fA-F]{2})|\\(.)", lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), s)


def render(keys, values, words):
    lines = ["# libFuzzer dictionary for fuzz_scenario and fuzz_set: generated by tests/fuzz/make_dict.py",
             "# from the schema tables; do not edit (rerun the script). meson test fuzz_dict checks it.", "",
             "# keys (%d)" % len(keys)]
    lines += ["key_%s=%s" % (re.sub(r"\W", "_", k), quote(k)) for k in keys]
    lines += ["", "# enum values (%d)" % len(values)]
    lines += ["value_%s=%s" % (re.sub(r"\W", "_", v), quote(v)) for v in values]
    extra = [w for w in words if w not in keys and w not in values]
    lines += ["", "# words read by hand, units"] + [quote(w) for w in extra]
    lines += ["", "# YAML shapes and edge values"] + [quote(w) for w in EXTRA if w not in set(keys) | set(values)
                                                     | set(extra)]
    return "\n".join(lines) + "\n"


def entries(text):
    """The values of a dictionary file, unescaped."""
    out = set()
    for line in text.split("\n"):
        m = re.match(r'^\s*(?:\w+\s*=\s*)?"(.*)"\s*$', line)
        if m:
            out.add(unquote(m.group(1)))
    return out


def main():
    keys, values, words = collect()
    if len(keys) < 50 or len(values) < 30:  # a pattern that stopped matching would pass the check
        sys.exit("make_dict.py: found only %d keys and %d enum values: has the schema macro changed?"
                 % (len(keys), len(values)))
    if sys.argv[1:] == ["--check"]:
        have = entries(open(DICT).read())
        missing = [("key", k) for k in keys if k not in have] + [("enum value", v) for v in values if v not in have]
        missing += [("word", w) for w in words if w not in have]
        for kind, w in missing:
            print("%s: %s %s missing" % (os.path.relpath(DICT, SRC), kind, quote(w)))
        if missing:
            print("regenerate it: python3 tests/fuzz/make_dict.py")
            return 1
        print("%s: %d keys, %d enum values, %d words: complete" % (os.path.relpath(DICT, SRC), len(keys),
                                                                   len(values), len(words)))
        return 0
    if sys.argv[1:]:
        sys.exit(__doc__)
    with open(DICT, "w") as f:
        f.write(render(keys, values, words))
    print("wrote %s: %d keys, %d enum values, %d words" % (os.path.relpath(DICT, SRC), len(keys), len(values),
                                                           len(words)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
