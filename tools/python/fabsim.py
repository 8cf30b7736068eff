"""fabsim from Python: a ctypes wrapper around libfabsim (tools/libfabsim/fabsim.h).

Standard library only. The shared library is found from the environment
variable FABSIM_LIB, else build/libfabsim.so under the repository root (two
levels above this file).

    import fabsim
    sc = fabsim.Scenario.from_file("scenarios/incast.yaml")
    sc.set("fabric.switch.buffer", "8MiB")      # or sc.set("fabric.switch.buffer=8MiB")
    run = sc.run()
    print(run.status, run.number("drops"), run.json()["flows"]["fct_p99_s"])   # ok 0.0 ...

Every error (bad input, unknown key, HDF5 write) raises FabsimError with the
library's message ("file:line:col: key: message", as the CLI prints).
"""
import ctypes
import difflib
import json as _json
import math
import os

__all__ = ["FabsimError", "Scenario", "Run", "library", "version"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FabsimError(Exception):
    """An error reported by libfabsim (its message is the exception's text)."""


_lib = None


def library():
    """The loaded libfabsim (ctypes.CDLL), loaded on first use."""
    global _lib
    if _lib is not None:
        return _lib
    path = os.environ.get("FABSIM_LIB") or os.path.join(_ROOT, "build", "libfabsim.so")
    if not os.path.exists(path):
        raise FabsimError("libfabsim not found at %s (build it with ninja -C build, or set FABSIM_LIB)" % path)
    lib = ctypes.CDLL(path)
    c_char_pp = ctypes.POINTER(ctypes.c_char_p)
    err_p = ctypes.POINTER(ctypes.c_void_p)
    vp, u32p, u64p, dblp = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64), \
        ctypes.POINTER(ctypes.c_double)
    sigs = {
        "fabsim_version": (ctypes.c_char_p, []),
        "fabsim_load_file": (vp, [ctypes.c_char_p, err_p]),
        "fabsim_load_string": (vp, [ctypes.c_char_p, ctypes.c_char_p, err_p]),
        "fabsim_set": (ctypes.c_int, [vp, ctypes.c_char_p, err_p]),
        "fabsim_scenario_free": (None, [vp]),
        "fabsim_run": (vp, [vp, err_p]),
        "fabsim_run_status": (ctypes.c_int, [vp]),
        "fabsim_run_failure": (ctypes.c_char_p, [vp]),
        "fabsim_run_number": (ctypes.c_double, [vp, ctypes.c_char_p]),
        "fabsim_run_json": (vp, [vp]),
        "fabsim_run_flows": (ctypes.c_size_t, [vp]),
        "fabsim_run_flow": (ctypes.c_int, [vp, ctypes.c_size_t, u32p, u32p, u64p, dblp, dblp]),
        "fabsim_run_collectives": (ctypes.c_size_t, [vp]),
        "fabsim_run_collective": (ctypes.c_int, [vp, ctypes.c_size_t, c_char_pp, c_char_pp, u64p, u32p,
                                                 dblp, dblp]),
        "fabsim_run_write_hdf5": (ctypes.c_int, [vp, ctypes.c_char_p, err_p]),
        "fabsim_run_free": (None, [vp]),
        "fabsim_free": (None, [vp]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def version():
    """The library version, e.g. "0.1.0"."""
    return library().fabsim_version().decode()


def _enc(s):
    if isinstance(s, bytes):
        return s
    if isinstance(s, (str, os.PathLike)):
        return os.fsencode(s)
    return str(s).encode()


def _take_string(p):
    """Copy a malloc'ed C string and free it."""
    lib = library()
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        lib.fabsim_free(p)


def _raise(err, what):
    msg = _take_string(err.value) if err.value else what + " failed"
    raise FabsimError(msg)


class Scenario:
    """A loaded scenario plus its overrides. Create with from_file / from_string."""

    def __init__(self, handle):
        self._lib = library()
        self._h = handle

    @classmethod
    def from_file(cls, path):
        lib, err = library(), ctypes.c_void_p()
        h = lib.fabsim_load_file(_enc(path), ctypes.byref(err))
        if not h:
            _raise(err, "load")
        return cls(h)

    @classmethod
    def from_string(cls, yaml, name="<string>"):
        lib, err = library(), ctypes.c_void_p()
        h = lib.fabsim_load_string(_enc(yaml), _enc(name), ctypes.byref(err))
        if not h:
            _raise(err, "load")
        return cls(h)

    def set(self, key, value=None):
        """Override a key: set("a.b=V") or set("a.b", V). Raises FabsimError if invalid
        (the scenario stays as it was). Returns self, so calls chain."""
        assignment = key if value is None else "%s=%s" % (key, value)
        err = ctypes.c_void_p()
        if not self._lib.fabsim_set(self._handle(), _enc(assignment), ctypes.byref(err)):
            _raise(err, "set")
        return self

    def run(self):
        """Simulate; a Run (check run.status: 1 = the simulation failed)."""
        err = ctypes.c_void_p()
        h = self._lib.fabsim_run(self._handle(), ctypes.byref(err))
        if not h:
            _raise(err, "run")
        return Run(h)

    def _handle(self):
        if not self._h:
            raise FabsimError("scenario is closed")
        return self._h

    def close(self):
        if self._h:
            self._lib.fabsim_scenario_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _dotted(node, prefix=""):
    """The dotted names of a JSON summary's numbers and nulls ("flows.fct_p99_s", "collectives.0.time_s")."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _dotted(v, prefix + k + ".")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _dotted(v, prefix + str(i) + ".")
    elif node is None or (isinstance(node, (int, float)) and not isinstance(node, bool)):
        yield prefix[:-1]


class Run:
    """The results of one simulation."""

    def __init__(self, handle):
        self._lib = library()
        self._h = handle
        self._js = None

    def _handle(self):
        if not self._h:
            raise FabsimError("run is closed")
        return self._h

    @property
    def status(self):
        """"ok", or "failed" when the simulation ran but failed (see failure): the JSON's status."""
        return "ok" if self.exit_status == 0 else "failed"

    @property
    def ok(self):
        """True when the run succeeded (status "ok")."""
        return self.exit_status == 0

    @property
    def exit_status(self):
        """What `fabsim run` would exit with: 0 success, 1 the simulation failed."""
        return self._lib.fabsim_run_status(self._handle())

    @property
    def failure(self):
        """Why the run failed, or None."""
        f = self._lib.fabsim_run_failure(self._handle())
        return f.decode("utf-8", "replace") if f else None

    def number(self, field):
        """A numeric summary field by dotted name ("sim_time_s", "flows.fct_p99_s",
        "collectives.0.busbw_GBps"); None where the summary holds null (a collective that
        did not complete, "step.step_time_s" of a run that is not training). A name that is not in the summary, or not a number there, raises
        FabsimError (with the closest names), so that a typo is never read as "no value"."""
        v = self._lib.fabsim_run_number(self._handle(), _enc(field))
        if not math.isnan(v):
            return v
        node = self._json_cached()
        for part in field.split(".") if field else [""]:
            if node is None:          # under a null ("step" of a run that is not training): no value
                return None
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                names = sorted(_dotted(self._json_cached()))
                near = difflib.get_close_matches(field, names, n=3)
                hint = "; did you mean %s?" % " or ".join(repr(n) for n in near) if near else ""
                raise FabsimError("no numeric field %r in the run's summary%s" % (field, hint))
        if node is None:
            return None
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            return float(node)
        raise FabsimError("field %r is not a number (it is %s)" % (field, type(node).__name__))

    def _json_cached(self):
        if self._js is None:
            self._js = self.json()
        return self._js

    def json_text(self):
        """The JSON summary line, as the CLI's --json prints it."""
        return _take_string(self._lib.fabsim_run_json(self._handle()))

    def json(self):
        """The JSON summary as a dict."""
        return _json.loads(self.json_text())

    def flows(self):
        """Per-flow results: a list of dicts src, dst, bytes, start_s, end_s (None if unfinished)."""
        h, out = self._handle(), []
        src, dst, nb = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint64()
        start, end = ctypes.c_double(), ctypes.c_double()
        for i in range(self._lib.fabsim_run_flows(h)):
            if not self._lib.fabsim_run_flow(h, i, ctypes.byref(src), ctypes.byref(dst), ctypes.byref(nb),
                                             ctypes.byref(start), ctypes.byref(end)):
                break
            out.append({"src": src.value, "dst": dst.value, "bytes": nb.value, "start_s": start.value,
                        "end_s": None if math.isnan(end.value) else end.value})
        return out

    def collectives(self):
        """Per-collective results: a list of dicts op, algorithm, bytes, ranks, time_s, busbw_GBps
        (time and busbw None if it did not complete)."""
        h, out = self._handle(), []
        op, alg = ctypes.c_char_p(), ctypes.c_char_p()
        nb, ranks, t, bw = ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_double(), ctypes.c_double()
        for i in range(self._lib.fabsim_run_collectives(h)):
            if not self._lib.fabsim_run_collective(h, i, ctypes.byref(op), ctypes.byref(alg), ctypes.byref(nb),
                                                   ctypes.byref(ranks), ctypes.byref(t), ctypes.byref(bw)):
                break
            out.append({"op": op.value.decode(), "algorithm": alg.value.decode(), "bytes": nb.value,
                        "ranks": ranks.value, "time_s": None if math.isnan(t.value) else t.value,
                        "busbw_GBps": None if math.isnan(bw.value) else bw.value})
        return out

    def write_hdf5(self, path):
        """Write the HDF5 results file; raises FabsimError on failure."""
        err = ctypes.c_void_p()
        if not self._lib.fabsim_run_write_hdf5(self._handle(), _enc(path), ctypes.byref(err)):
            _raise(err, "write_hdf5")

    def close(self):
        if self._h:
            self._lib.fabsim_run_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
