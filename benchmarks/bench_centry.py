"""The state derivative called from C against the engine's own call, side by side in one run.

A C harness (compiled here with the system's C compiler, ``cc -O2``) times loops of calls in
C of

* ``flexdyn_state_derivative`` (:mod:`flexdyn.engine.ccall`, from
  ``Engine(model).c_state_derivative()``), the C entry inside a Python process;
* ``<name>_state_derivative`` of the model exported by :func:`flexdyn.export.export_c`, the
  library without Python.

Beside them:

* the engine's own compiled call, :func:`flexdyn.engine.kernels.derivative_articulated`, in a
  compiled (numba) loop — the same work without the C entry's wrapping of the pointers;
* ``fd.rhs(model)(t, x, tau)``, the call from Python (the short way: one compiled call).

The targets: each C call within 10 % of the engine's own call.

Run ``python benchmarks/bench_centry.py`` (``--quick``: fewer calls).  Without a C compiler it
says so and stops.
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from flexdyn_bench.timing import per_call

import flexdyn as fd
from flexdyn.engine import Engine, kernels
from flexdyn.export import export_c

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import steel_chain  # noqa: E402

HARNESS = r"""
#include <stdint.h>
#include <time.h>
typedef int64_t (*derivative_t)(const int64_t *, const double *, int64_t, const double *,
                                const double *, const double *, double *);
double time_calls(void *address, const int64_t *ib, const double *fb, int64_t method,
                  const double *x, const double *tau, const double *fext, double *xdot,
                  int64_t n, int64_t *status) {
    derivative_t f = (derivative_t)address;
    struct timespec a, b;
    int64_t s = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int64_t i = 0; i < n; ++i) s = f(ib, fb, method, x, tau, fext, xdot);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *status = s;
    return ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) / n;
}
typedef int (*exported_t)(double, const double *, const double *, double *);
double time_exported(void *address, const double *x, const double *tau, double *xdot,
                     int64_t n, int64_t *status) {
    exported_t f = (exported_t)address;
    struct timespec a, b;
    int s = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int64_t i = 0; i < n; ++i) s = f(0.0, x, tau, xdot);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *status = s;
    return ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) / n;
}
"""


def build_harness(folder: Path) -> ctypes.CDLL | None:
    """The harness as a shared library, or None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    source, library = folder / "harness.c", folder / "harness.so"
    source.write_text(HARNESS)
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", str(source), "-o", str(library)],
                   check=True)
    lib = ctypes.CDLL(str(library))
    lib.time_calls.restype = ctypes.c_double
    lib.time_calls.argtypes = [ctypes.c_void_p, *[ctypes.c_void_p] * 7, ctypes.c_int64,
                               ctypes.POINTER(ctypes.c_int64)]
    lib.time_exported.restype = ctypes.c_double
    lib.time_exported.argtypes = [ctypes.c_void_p, *[ctypes.c_void_p] * 3, ctypes.c_int64,
                                  ctypes.POINTER(ctypes.c_int64)]
    return lib


@numba.njit(cache=True)
def engine_loop(ib, fb, st, x, tau, fext, xdot, n):
    """``n`` calls of the engine's compiled state derivative (``st``: its stages,
    :meth:`flexdyn.engine.Engine.stage_buffers`); the last status."""
    s = 0
    for _ in range(n):
        s = kernels.derivative_articulated(ib, fb, st, x, tau, fext, xdot)
    return s


def measure(name: str, model: fd.Model, lib: ctypes.CDLL, n: int, rng,
            folder: Path) -> tuple[float, float]:
    """Print and return C / engine and exported / engine for one model."""
    engine = Engine(model)
    entry, buffers = engine.c_state_derivative(), engine.stage_buffers("articulated")
    exported = ctypes.CDLL(str(export_c(model, folder / name.split()[0], name="plant").library))
    address = ctypes.cast(exported.plant_state_derivative, ctypes.c_void_p).value
    q = model.neutral_configuration() + 0.1 * rng.standard_normal(model.nq)
    q = model.normalize_configuration(q)
    x = np.concatenate([q, 0.1 * rng.standard_normal(model.nu)])
    tau = 0.1 * rng.standard_normal(model.nu)
    fext = np.zeros((model.n_bodies, 6))
    xdot_c, xdot_e = np.empty_like(x), np.empty_like(x)
    status = ctypes.c_int64()
    pointers = [a.ctypes.data for a in (entry.ib, entry.fb)]
    data = [a.ctypes.data for a in (x, tau, fext, xdot_c)]

    def in_c(count: int) -> float:
        return lib.time_calls(entry.address, *pointers, 0, *data, count, ctypes.byref(status))

    def in_engine(count: int) -> float:
        t0 = time.perf_counter()
        engine_loop(*buffers, x, tau, fext, xdot_e, count)
        return (time.perf_counter() - t0) / count

    def in_export(count: int) -> float:
        return lib.time_exported(address, *data[:2], xdot_x.ctypes.data, count,
                                 ctypes.byref(exported_status))

    xdot_x, exported_status = np.empty_like(x), ctypes.c_int64()
    in_c(10)
    in_engine(10)
    in_export(10)
    t_c = min(in_c(n) for _ in range(5))
    t_e = min(in_engine(n) for _ in range(5))
    t_x = min(in_export(n) for _ in range(5))
    assert status.value == -1 and np.array_equal(xdot_c, xdot_e), "C and engine disagree"
    assert exported_status.value == 0, "the exported library failed"
    assert np.allclose(xdot_x, xdot_e, rtol=1e-12, atol=1e-12 * np.abs(xdot_e).max()), (
        "the exported library and the engine disagree")
    f = fd.rhs(model)
    t_py = per_call(lambda: f(0.0, x, tau))
    print(f"{name:<28} engine (compiled loop) {t_e * 1e6:7.2f} µs   C entry {t_c * 1e6:7.2f} µs"
          f" ({t_c / t_e:5.3f})   exported library {t_x * 1e6:7.2f} µs ({t_x / t_e:5.3f})   "
          f"fd.rhs from Python {t_py * 1e6:7.2f} µs", flush=True)
    return t_c / t_e, t_x / t_e


def main(argv: list[str] | None = None) -> list[tuple[float, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        lib = build_harness(Path(folder))
        if lib is None:
            print("no C compiler (cc, gcc or clang) found: nothing measured")
            return []
        rng = np.random.default_rng(0)
        n = 2000 if args.quick else 20000
        cases = [("steel 5-beam chain (25 dof)", steel_chain()),
                 ("two-link arm (6 dof)", fd.models.two_link_arm(n_modes=2))]
        print("state derivative per call, timed in C, against the engine's own compiled call "
              "(ratio in parentheses; target: within 10 %)")
        return [measure(name, model, lib, n, rng, Path(folder)) for name, model in cases]


if __name__ == "__main__":
    main()
